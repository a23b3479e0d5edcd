"""Two costs below a day-one program's figures: NumPy's broadcast arithmetic
against the NUMPY kernels' route, and jax's CPU dispatch of a compiled program.

1. `route`: `numpy.subtract` against `kernels.NUMPY.subtract` (the eager device's and the lazy
   interpreter's kernel) on operands that broadcast into a short inner loop (`P - c` of (n, 3)
   and (3,), k-means' `X[:, None, :] - C[None]`), and on small ones that take no route (the
   kernel's call alone); the two results are checked equal.
2. `dispatch`: small programs under plain `jax.jit` (`x + 1` of 20 elements, `X @ w` of
   2000 x 20, a least-squares step with Adam, k-means' distances and labels, a 256 x 256
   stencil step with its slice write), each waited for, and dispatched alone (a busy gap
   between calls, its result waited for at the end), with jax's asynchronous CPU dispatch
   (its default) and with every program run inline (`jax_cpu_enable_async_dispatch=False`,
   which must be set before jax starts its CPU backend: each mode runs in a process of its
   own). docs/eager-and-lazy.md ("jax's CPU dispatch") says what to make of it.

    python benchmarks/bench_dispatch.py [--only route,dispatch] [--quick]

Each line reads `label  microseconds` (labels without digits, so that benchmarks/ab.py can
compare checkouts). Nothing is asserted: the figures are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import timeit
from typing import Any

import numpy as np

# (label, operand shapes at full size, at --quick)
ROUTE_CASES = [
    ("coordinates minus a point", ((100_000, 3), (3,)), ((6_000, 3), (3,))),
    ("rows of eight minus a row", ((50_000, 8), (8,)), ((3_000, 8), (8,))),
    ("k-means differences", ((5_000, 1, 4), (1, 5, 4)), ((1_000, 1, 4), (1, 5, 4))),
    ("pairwise differences", ((1_000, 1, 3), (1, 1_000, 3)), ((100, 1, 3), (1, 100, 3))),
    ("small broadcast, no route", ((20, 20), (20,)), ((20, 20), (20,))),
    ("one shape, no route", ((20,), (20,)), ((20,), (20,))),
]


def best_us(fn: Any, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def route(quick: bool) -> None:
    from x10array._core import kernels

    rng = np.random.default_rng(0)
    for label, full, small in ROUTE_CASES:
        a_shape, b_shape = small if quick else full
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        assert np.array_equal(np.subtract(a, b), kernels.NUMPY.subtract(a, b)), label
        number = max(3, int(2e6 // max(np.broadcast(a, b).size, 10)))  # (about 2e6 results a repeat)
        repeat = 2 if quick else 9
        theirs = best_us(lambda a=a, b=b: np.subtract(a, b), number, repeat)
        ours = best_us(lambda a=a, b=b: kernels.NUMPY.subtract(a, b), number, repeat)
        print(f"route {label}, numpy.subtract us  {theirs:.2f}")
        print(f"route {label}, NUMPY.subtract us  {ours:.2f}")
        print(f"route {label}, NUMPY / numpy  {ours / theirs:.3f}")


def _programs(jax: Any, jnp: Any, quick: bool) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    rng = np.random.default_rng(0)
    n = 200 if quick else 2000
    X, y = jnp.asarray(rng.standard_normal((n, 20))), jnp.asarray(rng.standard_normal(n))
    w = jnp.zeros(20)

    def adam(w: Any, m: Any, v: Any, t: Any) -> Any:
        r = X @ w - y
        g = (2.0 / n) * jax.lax.dot_general(X, r, (((0,), (0,)), ((), ())))
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        return jnp.mean(r * r), w - 0.05 * (m / (1 - 0.9**t)) / (jnp.sqrt(v / (1 - 0.999**t)) + 1e-8), m, v

    K = jnp.asarray(rng.standard_normal((500 if quick else 5000, 4)))
    C = jnp.asarray(rng.standard_normal((5, 4)))
    side = 32 if quick else 256
    U = jnp.asarray(rng.random((side, side)))

    def stencil(u: Any) -> Any:
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        return u.at[1:-1, 1:-1].add(0.1 * lap)

    return {
        "add one to twenty elements": (lambda a: a + 1.0, (jnp.ones(20),)),
        "matrix times vector": (lambda X, w: X @ w, (X, w)),
        "least squares and Adam step": (adam, (w, w, w, jnp.asarray(1.0))),
        "k-means distances and labels": (
            lambda K, C: jnp.argmin(jnp.sum((K[:, None, :] - C[None]) ** 2, axis=2), axis=1),
            (K, C),
        ),
        "stencil step": (stencil, (U,)),
    }


def dispatch_worker(asynchronous: bool, quick: bool) -> None:
    import jax

    try:
        jax.config.update("jax_cpu_enable_async_dispatch", asynchronous)
    except (AttributeError, KeyError, ValueError):  # (a jax without the setting)
        print(json.dumps(None))
        return
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    out: dict[str, float] = {}
    repeat, number = (2, 20) if quick else (5, 300)
    for label, (fn, args) in _programs(jax, jnp, quick).items():
        f = jax.jit(fn)
        jax.block_until_ready(f(*args))
        out[f"{label} waited"] = best_us(lambda f=f, args=args: jax.block_until_ready(f(*args)), number, repeat)
        gaps = []
        result = None
        for _ in range(number):
            end = time.perf_counter() + 3e-4  # (a busy gap: the call before has finished)
            while time.perf_counter() < end:
                pass
            start = time.perf_counter()
            result = f(*args)
            gaps.append(time.perf_counter() - start)
        jax.block_until_ready(result)
        out[f"{label} dispatched"] = float(np.median(gaps)) * 1e6
    print(json.dumps(out))


def dispatch(quick: bool) -> None:
    results = {}
    for mode, flag in (("asynchronous", "1"), ("inline", "0")):
        cmd = [sys.executable, os.path.abspath(__file__), "--dispatch-worker", flag] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        if results[mode] is None:
            print("dispatch: this jax has no jax_cpu_enable_async_dispatch setting", file=sys.stderr)
            return
    for label in results["asynchronous"]:
        for mode in results:
            print(f"dispatch {label}, {mode} us  {results[mode][label]:.2f}")
        ratio = results["inline"][label] / results["asynchronous"][label]
        print(f"dispatch {label}, inline / asynchronous  {ratio:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="route,dispatch")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke run)")
    ap.add_argument("--dispatch-worker", choices=["0", "1"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dispatch_worker is not None:
        dispatch_worker(args.dispatch_worker == "1", args.quick)
        return 0
    parts = args.only.split(",")
    if "route" in parts:
        route(args.quick)
    if "dispatch" in parts:
        dispatch(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
