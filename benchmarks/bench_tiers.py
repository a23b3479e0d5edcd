"""The tier decision's compile estimate against measured compile times.

The lazy device interprets a graph until interpreting it has cost X10ARRAY_COMPILE_PAYBACK
times its estimated compile (tiering._CostModel.compile_seconds, from the graph's operations
and its chains of elementwise operations). This benchmark builds graphs of 50-3000 recorded
operations (by default; `--sizes 3,10,20` for small ones) of these kinds,

- `elementwise`: a chain of float64 arithmetic on a 64 x 64 array (x * c + d, ...);
- `mixed`: the same with a reduction and a 64 x 64 matmul every 8 operations;
- `transcendental`: exp, log1p, tanh and sqrt in the chain (lowerings of several XLA ops);
- `stencil`: bench_dayone's heat stencil without a barrier (slices and a slice write per step),
- `kmeans` (not in the default kinds; one graph of 7 operations whatever the size): bench_dayone's
  k-means distances and labels, `argmin(sum((X[:, None] - C) ** 2, axis=2), axis=1)`,

compiles each at its first sighting (compile_threshold(1)), a structure never seen before,
and reports the measured first run (trace, lowering, XLA's compile, one run: what
`metrics().compile_seconds` counts) against the estimate, their ratio, and the measured time
per operation. Nothing is asserted here: tests/test_lazy.py checks the properties of the model
that cannot flake, and a slow test (`-m slow`) the estimate against measured compiles.

`--runs` measures instead the fixed cost of a compiled run that an interpreted run does not
have (_CostModel.run_seconds): graphs of 1-32 additions of 16-element leaves, and a 2000 x 50
logistic loss and gradient (scikit-learn's L-BFGS graphs), each run interpreted and compiled,
its value read at once (`numpy.asarray`) or left to an asynchronous `lazy_barrier()`; wall
time, medians of interleaved repeats; then jax alone: a jitted call of 1-64 arguments, and the
logistic step dispatched against waited for.

`--credits` measures the saving side of the decision (_CostModel.step_seconds and
blocked_step_seconds, Program.saving): graphs of bench_dayone's kinds (an elementwise chain,
contiguous and on a strided column view inside the graph, its sum, Monte-Carlo's
`mean(exp(-(x * x)))`, `mean(-(x * x))`; over short trailing axes, `sum(x * x, axis=-1)` of
(n/4, 4) and k-means' distances `argmin(sum((X[:, None] - C) ** 2, axis=2), axis=1)` of (n/4, 4)
and (5, 4), contiguous only), of 65,536 and 10^6 float64 elements, read at once,
each run interpreted and compiled on a device-resident leaf (wall time, medians of
two blocks of runs a tier, alternated), against the saving that the model credits an interpreted run of it
(`Program.saving(read=True)`); est/meas above 1 is a graph credited more than a compile saves.

Run: python benchmarks/bench_tiers.py [--sizes 50,200,800,3000] [--kinds elementwise,mixed]
     python benchmarks/bench_tiers.py --sizes 3,10,20,50 --kinds elementwise,mixed,stencil,kmeans  (small graphs)
     python benchmarks/bench_tiers.py --runs
     python benchmarks/bench_tiers.py --credits [--repeat 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any


def build(xp: object, kind: str, n_target: int, salt: int) -> object:
    """A graph of about `n_target` recorded operations (`salt` makes its structure new)."""
    import numpy as np

    dev = xp.Device("cpu", 0, "xla")  # type: ignore[attr-defined]
    rng = np.random.default_rng(salt)
    x = xp.asarray(rng.random((64, 64)) + 0.5, device=dev)  # type: ignore[attr-defined]
    w = xp.asarray(rng.random((64, 64)) / 64, device=dev)  # type: ignore[attr-defined]
    ops = 0
    i = 0
    if kind == "kmeans":  # bench_dayone's k-means distances and labels (and their sum: 7 operations)
        X = xp.asarray(rng.standard_normal((5000, 4)), device=dev)  # type: ignore[attr-defined]
        C = xp.asarray(rng.standard_normal((3 + salt % 5, 4)), device=dev)  # type: ignore[attr-defined]
        d = xp.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=2)  # type: ignore[attr-defined]
        return xp.argmin(d, axis=1)  # type: ignore[attr-defined]
    if kind == "stencil":  # bench_dayone's heat stencil without a barrier: slices, a slice write
        u = xp.asarray(np.pad(rng.random((62, 62)), 1), device=dev)  # type: ignore[attr-defined]
        while ops < n_target:
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
            u[1:-1, 1:-1] = u[1:-1, 1:-1] + (0.1 + 1e-3 * (salt % 7)) * lap
            ops += 14
        return u
    while ops < n_target:
        i += 1
        if kind == "mixed" and i % 4 == 0:
            x = x @ w + xp.mean(x, axis=0)  # type: ignore[attr-defined]
            ops += 3
        elif kind == "transcendental" and i % 2 == 0:
            f = (xp.exp, xp.log1p, xp.tanh, xp.sqrt)[i // 2 % 4]  # type: ignore[attr-defined]
            x = f(x * 0.5) + 0.25
            ops += 3
        else:
            x = x * (1.0 + 1e-3 * ((i + salt) % 7)) + 0.125
            ops += 2
    return x


def measure(kind: str, n: int, salt: int) -> tuple[int, float, float]:
    """(operations in the program, measured first-run seconds, estimated compile seconds)."""
    import x10array as xp
    from x10array._backends.lazy.runtime import RUNTIME
    from x10array._backends.lazy.tiering import compile_threshold
    from x10array.extend import settings

    # (REPEAT_CUT off: a stencil of a few steps is one graph, not cut where it repeats)
    with compile_threshold(1), settings.override(X10ARRAY_REPEAT_CUT=False):
        x = build(xp, kind, n, salt)
        before = xp.metrics()
        float(xp.sum(x))
        m = xp.metrics() - before
    assert m.compile_count == 1, m
    program = max((p for p in RUNTIME.programs.values() if p.compiled is not None), key=lambda p: len(p.calls))
    RUNTIME.programs.clear()
    return len(program.calls), m.compile_seconds, program.compile_cost


def measure_runs(reps: int = 200) -> None:
    """The fixed cost of a compiled run (see the module docstring, --runs)."""
    import time

    import numpy as np

    import x10array as xp
    from x10array._backends.lazy.tiering import compile_threshold

    dev = xp.Device("cpu", 0, "xla")
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.standard_normal((2000, 50)), device=dev)  # type: ignore[attr-defined]
    w = xp.asarray(rng.standard_normal(50), device=dev)  # type: ignore[attr-defined]
    y = xp.asarray(rng.random(2000), device=dev)  # type: ignore[attr-defined]

    def logistic() -> Any:
        z = X @ w
        p = 1.0 / (1.0 + xp.exp(-z))  # type: ignore[attr-defined]
        return xp.sum(xp.log1p(xp.exp(-z)) * y) / 2000.0, X.T @ (p - y)  # type: ignore[attr-defined]

    def adds(n: int) -> Any:
        xs = [xp.asarray(rng.random(16), device=dev) for _ in range(n)]  # type: ignore[attr-defined]

        def f() -> Any:
            s = xs[0] * 2.0
            for a in xs[1:]:
                s = s + a
            return (s,)

        return f

    def timed(fn: Any, read: bool, threshold: int | None) -> float:
        times = []
        with compile_threshold(threshold):
            for i in range(reps + 3):
                start = time.perf_counter()
                outs = fn()
                if read:
                    for o in outs:
                        np.asarray(o)
                else:
                    xp.lazy_barrier()  # type: ignore[attr-defined]
                if i >= 3:
                    times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6

    print(f"{'graph':<22} {'how':<8} {'interpreted us':>15} {'compiled us':>12} {'compiled - interpreted':>23}")
    graphs = [("1 op, 1 leaf", adds(1)), ("8 ops, 8 leaves", adds(8)), ("32 ops, 32 leaves", adds(32)),
              ("logistic 2000x50", lambda: logistic())]  # fmt: skip
    for name, fn in graphs:
        for read in (True, False):
            pairs = [(timed(fn, read, None), timed(fn, read, 1)) for _ in range(2)]
            i, c = min(p[0] for p in pairs), min(p[1] for p in pairs)
            print(f"{name:<22} {'read' if read else 'barrier':<8} {i:>15.1f} {c:>12.1f} {c - i:>23.1f}")
            sys.stdout.flush()

    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        print(f"\njax alone: {'arguments':>9} {'dispatched us':>14} {'waited us':>10}")
        for n in (1, 4, 16, 64):
            args = [jax.device_put(np.ones(4)) for _ in range(n)]
            f = jax.jit(lambda *a: sum(a[1:], a[0]) * 2.0)
            print(f"{'':<10} {n:>10} {_jax_call(f, args, False):>14.1f} {_jax_call(f, args, True):>10.1f}")
        Xj, wj, yj = (jax.device_put(np.asarray(a)) for a in (X, w, y))

        @jax.jit
        def step(X: Any, w: Any, y: Any) -> Any:
            z = X @ w
            return X.T @ (1.0 / (1.0 + jnp.exp(-z)) - y), jnp.sum(jnp.log1p(jnp.exp(-z)) * y)

        a = [Xj, wj, yj]
        print(f"{'logistic 2000x50':>21} {_jax_call(step, a, False):>14.1f} {_jax_call(step, a, True):>10.1f}")


# name: (the graph of `a`, its number of arithmetic results of a's size, whether it is run on a
# strided column too)
CREDIT_KINDS = {
    "chain8": (lambda xp, a: ((((a * a + 1) * 0.5 - a) * a + 2) * 0.3 - a) * a, 8, True),
    "sum(chain5)": (lambda xp, a: xp.sum(((a * a + 1) * 0.5 - a) * a), 5, True),
    "mean(exp(-x*x))": (lambda xp, a: xp.mean(xp.exp(-(a * a))), 3, True),
    "mean(-x*x)": (lambda xp, a: xp.mean(-(a * a)), 2, True),
    # over short trailing axes (contiguous only: NumPy's inner loop of 4 elements, _CostModel.PER_LOOP)
    "sum(x*x,-1) n,4": (lambda xp, a: xp.sum(xp.reshape(a * a, (-1, 4)), axis=-1), 2, False),
    "k-means dist": (
        lambda xp, a: xp.argmin(
            xp.sum((xp.reshape(a, (-1, 1, 4)) - xp.reshape(a[:20], (1, 5, 4))) ** 2, axis=2), axis=1
        ),
        10,
        False,
    ),
}


def measure_credits(reps: int) -> None:
    """Measured against credited saving of a run read at once (see the module docstring, --credits)."""
    import time

    import numpy as np

    import x10array as xp
    from x10array._backends.lazy.runtime import RUNTIME
    from x10array._backends.lazy.tiering import compile_threshold

    dev = xp.Device("cpu", 0, "xla")
    print(f"{'graph':<16} {'elements':>9} {'layout':<8} {'interp ms':>10} {'compiled ms':>12} {'saving ms':>10}"
          f" {'credited ms':>12} {'est/meas':>9} {'ns/elt':>7}")  # fmt: skip
    for n in (65536, 1_000_000):
        for strided in (False, True):
            rng = np.random.default_rng(0)
            base = xp.asarray(rng.random((n, 2)) if strided else rng.random(n), device=dev)  # type: ignore[attr-defined]
            xp.lazy_barrier(wait=True)  # type: ignore[attr-defined]  # (device-resident: nothing placed per run)
            for name, (f, results, on_columns) in CREDIT_KINDS.items():
                if strided and not on_columns:
                    continue
                known = set(map(id, RUNTIME.programs.values()))

                def run(f: Any = f, a: Any = base, strided: bool = strided) -> None:
                    r = f(xp, a[:, 0] if strided else a)
                    float(r if r.ndim == 0 else r[0])

                times: dict[bool, list[float]] = {True: [], False: []}
                # (two blocks of runs a tier, alternated)
                for block in range(4):
                    interpreted = block % 2 == 0
                    with compile_threshold(2**62 if interpreted else 1):
                        for i in range(reps // 2 + 2):
                            start = time.perf_counter()
                            run()
                            if i >= 2:  # (the first two of a block not counted)
                                times[interpreted].append(time.perf_counter() - start)
                new = [p for p in RUNTIME.programs.values() if id(p) not in known and p.seen]
                credited = max(p.saving(True) for p in new)
                ti, tc = statistics.median(times[True]), statistics.median(times[False])
                saving = ti - tc
                ratio = f"{credited / saving:9.2f}" if saving > 0 else f"{'(<0)':>9}"
                print(
                    f"{name:<16} {n:>9} {'strided' if strided else 'contig':<8} {1e3 * ti:>10.3f} {1e3 * tc:>12.3f}"
                    f" {1e3 * saving:>10.3f} {1e3 * credited:>12.3f} {ratio} {1e9 * saving / (n * results):>7.2f}"
                )
                sys.stdout.flush()


def _jax_call(f: Any, args: list[Any], wait: bool, reps: int = 400) -> float:
    import time

    import numpy as np

    f(*args)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        out = f(*args)
        if wait:
            for o in out if isinstance(out, tuple) else (out,):
                np.asarray(o)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,200,800,3000")
    ap.add_argument("--kinds", default="elementwise,mixed,transcendental,stencil")
    ap.add_argument("--repeat", type=int, default=2, help="graphs per (kind, size): the median is reported")
    ap.add_argument("--runs", action="store_true", help="the fixed cost of a compiled run, not compiles")
    ap.add_argument("--credits", action="store_true", help="credited against measured saving (--repeat: runs)")
    args = ap.parse_args()
    os.environ["X10ARRAY_COMPILE_CACHE_DIR"] = "0"  # (measure compiles, not disk loads)
    if args.runs:
        measure_runs()
        return 0
    if args.credits:
        measure_credits(max(args.repeat, 5))
        return 0
    import x10array as xp

    xp.asarray(1.0, device=xp.Device("cpu", 0, "xla")) + 1  # (jax's start-up, the probes)
    measure("elementwise", 20, 0)
    print(f"{'kind':<15} {'ops':>6} {'measured s':>11} {'estimate s':>11} {'est/meas':>9} {'ms/op':>7}")
    salt = 1
    ratios = []
    for kind in args.kinds.split(","):
        for size in [int(s) for s in args.sizes.split(",")]:
            runs = []
            for _ in range(args.repeat):
                salt += 1
                runs.append(measure(kind, size, salt))
            n_ops = runs[0][0]
            took = statistics.median(r[1] for r in runs)
            estimate = runs[0][2]
            ratios.append(estimate / took)
            per_op = 1e3 * took / n_ops
            print(f"{kind:<15} {n_ops:>6} {took:>11.3f} {estimate:>11.3f} {estimate / took:>9.2f} {per_op:>7.3f}")
            sys.stdout.flush()
    print(f"\nestimate/measured: median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
