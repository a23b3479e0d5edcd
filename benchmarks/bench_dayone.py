"""Day-one programs written the NumPy way, on NumPy, eager x10array, lazy x10array and jax.jit.

Issue 26: the same array code, ported by `import x10array as xp` and nothing else, should run
faster on the lazy device than on the eager one. Each workload below is written once against a
namespace `ns` and run, unchanged, on

- NumPy (`ns = numpy`; the workloads that need autodiff get their gradient by hand there),
- x10array on the eager CPU device,
- x10array on the lazy XLA device, "as written" (whatever the tiers decide),
- the same computation written by hand under `jax.jit`, where one exists.

Workloads: a 2-D heat stencil (256 x 256, 100 steps) with a `lazy_barrier()` per step and
without; the Monte-Carlo reductions `count_nonzero(x**2 + y**2 <= 1)` and `mean(exp(-x**2))`
over 1e6 points, read with `float()`; a least-squares fit with `value_and_grad` and
`optim.Adam`, a barrier per step; k-means with boolean masks (`X[labels == k].mean(axis=0)`);
scikit-learn PCA + LogisticRegression + Ridge fits (one BLAS thread); a 3-layer MLP trained with
`optim.Adam` under `x10array.compile`. Beside them, not "as written" and so not in the median:
the least-squares fit with its step a function under `x10array.compile` (the one-line change
that the docs advise for a training loop).

Every (workload, mode) runs once per round, the rounds interleaved (a change of load affects
all modes alike), the first round discarded as warm-up (compiles, caches); the table reports
the median over the other rounds and the median of the per-round ratios.

Before and after in one run: `--baseline /path/to/other/checkout` runs the same workloads on
that checkout's x10array too. Each side is its own worker process (PYTHONPATH set to its
checkout), kept alive for the whole run, and the rounds alternate between the sides.

Run: python benchmarks/bench_dayone.py [--rounds 7] [--baseline PATH] [--only stencil,mc]
     [--mmap-threshold 67108864]  (glibc's allocator in one fixed state: see --help)
     python benchmarks/bench_dayone.py --quick      (a smoke run: small sizes, 2 rounds)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("numpy", "eager", "lazy", "jax")
WORKLOADS = (
    "stencil_barrier", "stencil", "montecarlo", "lstsq_adam", "lstsq_compile", "kmeans", "sklearn", "mlp_compile",
)  # fmt: skip
# rows that are not "as written": the one-decorator form of a workload above, left out of the median
NOT_AS_WRITTEN = frozenset({"lstsq_compile"})
TITLES = {
    "stencil_barrier": "heat stencil 256x256, 100 steps, barrier per step",
    "stencil": "the same, no barrier",
    "montecarlo": "Monte-Carlo count_nonzero(x**2+y**2<=1), mean(exp(-x**2)), float()",
    "lstsq_adam": "least squares, value_and_grad + optim.Adam, barrier per step",
    "lstsq_compile": "the same fit, its step under x10array.compile (not in the median)",
    "kmeans": "k-means with boolean masks",
    "sklearn": "scikit-learn PCA + LogisticRegression + Ridge fits",
    "mlp_compile": "3-layer MLP, optim.Adam, under x10array.compile",
}
COUNTERS = (
    "compile_count",
    "cache_hits",
    "interpreted_graphs",
    "graph_breaks",
    "captured_replays",
    "capture_fallbacks",
)


# -- sizes ----------------------------------------------------------------------------------


class Sizes:
    def __init__(self, quick: bool) -> None:
        self.grid, self.steps = (32, 5) if quick else (256, 100)
        self.points = 10_000 if quick else 1_000_000
        self.lstsq = (200, 8, 5) if quick else (2_000, 20, 100)  # rows, features, steps
        self.kmeans = (300, 3, 4, 3) if quick else (5_000, 4, 5, 10)  # rows, features, k, iterations
        self.sklearn = (200, 10) if quick else (2_000, 50)
        self.mlp = (32, 16, 32, 5) if quick else (256, 64, 128, 50)  # batch, features, hidden, steps


# -- the workloads, written once against `ns` -------------------------------------------------


def stencil(ns: Any, u: Any, steps: int, barrier: Callable[[], None] | None) -> float:
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap
        if barrier is not None:
            barrier()
    return float(ns.sum(u))


def montecarlo(ns: Any, pts: Any) -> tuple[float, float]:
    x, y = pts[:, 0], pts[:, 1]
    inside = float(ns.count_nonzero(x**2 + y**2 <= 1.0))
    gauss = float(ns.mean(ns.exp(-(x**2))))
    return 4.0 * inside / pts.shape[0], gauss


def kmeans(ns: Any, X: Any, k: int, iterations: int) -> float:
    centers = X[:k]
    for _ in range(iterations):
        d = ns.sum((X[:, None, :] - centers[None, :, :]) ** 2, axis=2)
        labels = ns.argmin(d, axis=1)
        centers = ns.stack([ns.mean(X[labels == j], axis=0) for j in range(k)])
    return float(ns.sum(centers))


def lstsq_loss(ns: Any, w: Any, X: Any, y: Any) -> Any:
    r = X @ w - y
    return ns.mean(r**2)


# -- the modes ----------------------------------------------------------------------------------


class Runner:
    """Builds and times each workload in one mode of one process."""

    def __init__(self, quick: bool, float_dtype: str = "float64", devices: tuple[Any, Any] | None = None) -> None:
        """`float_dtype`: the dtype of every floating-point input; `devices`: x10array's (eager,
        lazy) devices (default: the CPU's); bench_accelerator.py passes float32 and the default ones."""
        import numpy as np

        self.np = np
        self.sizes = Sizes(quick)
        self.float_dtype = float_dtype
        self.devices = devices
        self.rng = np.random.default_rng(0)
        self._cache: dict[tuple[str, str], Callable[[], Any] | None] = {}

    # data, made once per workload (the same for every mode)
    def data(self, name: str) -> dict[str, Any]:
        d = self._data(name)
        return {k: v.astype(self.float_dtype) if v.dtype == self.np.float64 else v for k, v in d.items()}

    def _data(self, name: str) -> dict[str, Any]:
        np, s = self.np, self.sizes
        rng = np.random.default_rng(WORKLOADS.index("lstsq_adam" if name == "lstsq_compile" else name))
        if name.startswith("stencil"):
            u = np.zeros((s.grid, s.grid))
            u[s.grid // 4 : s.grid // 2, s.grid // 4 : s.grid // 2] = 1.0
            return {"u": u}
        if name == "montecarlo":
            return {"pts": rng.random((s.points, 2))}
        if name.startswith("lstsq"):
            n, f, _ = s.lstsq
            X = rng.standard_normal((n, f))
            return {"X": X, "y": X @ rng.standard_normal(f) + 0.1 * rng.standard_normal(n)}
        if name == "kmeans":
            n, f, k, _ = s.kmeans
            centers = rng.standard_normal((k, f)) * 5
            return {"X": centers[rng.integers(0, k, n)] + rng.standard_normal((n, f))}
        if name == "sklearn":
            n, f = s.sklearn
            X = rng.standard_normal((n, f))
            return {"X": X, "y": (X @ rng.standard_normal(f) > 0).astype(np.float64), "t": X @ rng.standard_normal(f)}
        if name == "mlp_compile":
            b, f, _, _ = s.mlp
            X = rng.standard_normal((b, f)).astype(np.float32)
            return {"X": X, "t": np.eye(10, dtype=np.float32)[rng.integers(0, 10, b)]}
        raise ValueError(name)

    def make(self, name: str, mode: str) -> Callable[[], Any] | None:
        """A function running the workload once (None where the mode has no form of it)."""
        key = (name, mode)
        if key not in self._cache:
            self._cache[key] = getattr(self, f"_{mode}")(name, self.data(name))
        return self._cache[key]

    # NumPy
    def _numpy(self, name: str, d: dict[str, Any]) -> Callable[[], Any] | None:
        np, s = self.np, self.sizes
        if name.startswith("stencil"):
            return lambda: stencil(np, d["u"].copy(), s.steps, None)
        if name == "montecarlo":
            return lambda: montecarlo(np, d["pts"])
        if name == "kmeans":
            _, _, k, it = s.kmeans
            return lambda: kmeans(np, d["X"], k, it)
        if name.startswith("lstsq"):
            X, y = d["X"], d["y"]
            steps = s.lstsq[2]

            def fit() -> float:  # the gradient by hand, Adam as optim.Adam computes it
                w, m, v = np.zeros(X.shape[1]), np.zeros(X.shape[1]), np.zeros(X.shape[1])
                for t in range(1, steps + 1):
                    r = X @ w - y
                    g = (2.0 / X.shape[0]) * (X.T @ r)
                    m = 0.9 * m + 0.1 * g
                    v = 0.999 * v + 0.001 * (g * g)
                    w = w - 0.05 * ((m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8))
                return float(np.mean((X @ w - y) ** 2))

            return fit
        if name == "sklearn":
            return lambda: sklearn_fits(None, d)
        return None

    # x10array, eager or lazy
    def _x10(self, name: str, d: dict[str, Any], lazy: bool) -> Callable[[], Any] | None:
        import x10array as xp

        dev = self.devices[lazy] if self.devices else xp.Device("cpu", 0, "xla" if lazy else "eager")
        s = self.sizes
        if name.startswith("stencil"):
            barrier = xp.lazy_barrier if name == "stencil_barrier" else None
            return lambda: stencil(xp, xp.asarray(d["u"], device=dev, copy=True), s.steps, barrier)
        if name == "montecarlo":
            pts = xp.asarray(d["pts"], device=dev)
            return lambda: montecarlo(xp, pts)
        if name == "kmeans":
            _, _, k, it = s.kmeans
            X = xp.asarray(d["X"], device=dev)
            return lambda: kmeans(xp, X, k, it)
        if name == "lstsq_adam":
            from x10array.autodiff import value_and_grad
            from x10array.optim import Adam

            X, y = xp.asarray(d["X"], device=dev), xp.asarray(d["y"], device=dev)
            grad = value_and_grad(lambda w: lstsq_loss(xp, w, X, y))
            steps = s.lstsq[2]

            def fit() -> float:
                opt = Adam(learning_rate=0.05)
                w = xp.zeros(X.shape[1], dtype=getattr(xp, self.float_dtype), device=dev)
                state = opt.init(w)
                for _ in range(steps):
                    _, g = grad(w)
                    w, state = opt.update(w, g, state)
                    xp.lazy_barrier()
                return float(lstsq_loss(xp, w, X, y))

            return fit
        if name == "lstsq_compile":  # the same fit, the step a function under x10array.compile
            from x10array.autodiff import value_and_grad
            from x10array.optim import Adam

            X, y = xp.asarray(d["X"], device=dev), xp.asarray(d["y"], device=dev)
            grad_of = value_and_grad(lambda w, X, y: lstsq_loss(xp, w, X, y))
            opt = Adam(learning_rate=0.05)
            steps = s.lstsq[2]

            @xp.compile
            def adam_step(w: Any, state: Any, X: Any, y: Any) -> Any:
                _, g = grad_of(w, X, y)
                return opt.update(w, g, state)

            def fit_compiled() -> float:
                w = xp.zeros(X.shape[1], dtype=getattr(xp, self.float_dtype), device=dev)
                state = opt.init(w)
                for _ in range(steps):
                    w, state = adam_step(w, state, X, y)
                return float(lstsq_loss(xp, w, X, y))

            return fit_compiled
        if name == "sklearn":
            return lambda: sklearn_fits(dev, d)
        if name == "mlp_compile":
            from x10array import nn
            from x10array.autodiff import value_and_grad
            from x10array.optim import Adam

            b, f, h, steps = s.mlp
            X, t = xp.asarray(d["X"], device=dev), xp.asarray(d["t"], device=dev)
            opt = Adam(learning_rate=1e-3)

            def loss(model: Any, X: Any, t: Any) -> Any:
                logits = model(X)
                return -xp.mean(xp.sum(t * nn.functional.log_softmax(logits, axis=-1), axis=-1))

            grad = value_and_grad(loss)

            @xp.compile
            def step(model: Any, state: Any, X: Any, t: Any) -> Any:
                value, g = grad(model, X, t)
                model, state = opt.update(model, g, state)
                return model, state, value

            def train() -> float:
                model = nn.Sequential(
                    nn.Dense(f, h, "relu", seed=1, device=dev),
                    nn.Dense(h, h, "relu", seed=2, device=dev),
                    nn.Dense(h, 10, seed=3, device=dev),
                )
                state = opt.init(model)
                value = None
                for _ in range(steps):
                    model, state, value = step(model, state, X, t)
                return float(value)

            return train
        return None

    def _eager(self, name: str, d: dict[str, Any]) -> Callable[[], Any] | None:
        return self._x10(name, d, lazy=False)

    def _lazy(self, name: str, d: dict[str, Any]) -> Callable[[], Any] | None:
        return self._x10(name, d, lazy=True)

    # hand-written jax.jit
    def _jax(self, name: str, d: dict[str, Any]) -> Callable[[], Any] | None:
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            fn = self._jax_form(jax, jnp, name, d)
        if fn is None:
            return None

        def run() -> Any:
            with jax.enable_x64(True):
                return fn()

        return run

    def _jax_form(self, jax: Any, jnp: Any, name: str, d: dict[str, Any]) -> Callable[[], Any] | None:
        s = self.sizes
        if name.startswith("stencil"):

            @jax.jit
            def one(u: Any) -> Any:
                lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
                return u.at[1:-1, 1:-1].set(u[1:-1, 1:-1] + 0.1 * lap)

            if name == "stencil_barrier":  # one jitted step per step, like the barrier's program

                def run() -> float:
                    u = jnp.asarray(d["u"])
                    for _ in range(s.steps):
                        u = one(u)
                    return float(jnp.sum(u))

                return run
            whole = jax.jit(lambda u: jnp.sum(jax.lax.fori_loop(0, s.steps, lambda _, v: one(v), u)))
            return lambda: float(whole(jnp.asarray(d["u"])))
        if name == "montecarlo":
            pts = jnp.asarray(d["pts"])
            inside = jax.jit(lambda p: jnp.count_nonzero(p[:, 0] ** 2 + p[:, 1] ** 2 <= 1.0))
            gauss = jax.jit(lambda p: jnp.mean(jnp.exp(-(p[:, 0] ** 2))))
            return lambda: (4.0 * float(inside(pts)) / pts.shape[0], float(gauss(pts)))
        if name.startswith("lstsq"):
            X, y = jnp.asarray(d["X"]), jnp.asarray(d["y"])
            grad = jax.value_and_grad(lambda w: jnp.mean((X @ w - y) ** 2))

            @jax.jit
            def step(w: Any, m: Any, v: Any, t: Any) -> Any:
                _, g = grad(w)
                m = 0.9 * m + 0.1 * g
                v = 0.999 * v + 0.001 * (g * g)
                w = w - 0.05 * ((m / (1 - 0.9**t)) / (jnp.sqrt(v / (1 - 0.999**t)) + 1e-8))
                return w, m, v

            def fit() -> float:
                w = m = v = jnp.zeros(X.shape[1])
                for t in range(1, s.lstsq[2] + 1):
                    w, m, v = step(w, m, v, jnp.float64(t))
                return float(jnp.mean((X @ w - y) ** 2))

            return fit
        if name == "mlp_compile":
            return jax_mlp(jax, jnp, d, s)
        return None


def sklearn_fits(dev: Any, d: dict[str, Any]) -> float:
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression, Ridge

    X, y, t = d["X"], d["y"], d["t"]
    if dev is None:
        PCA(n_components=10, svd_solver="full").fit(X)
        LogisticRegression(max_iter=100).fit(X, y)
        return float(Ridge(alpha=1.0, solver="svd").fit(X, t).coef_[0])
    import x10array as xp

    with sklearn.config_context(array_api_dispatch=True):
        Xd, yd, td = (xp.asarray(a, device=dev) for a in (X, y, t))
        PCA(n_components=10, svd_solver="full").fit(Xd)
        LogisticRegression(max_iter=100).fit(Xd, yd)
        return float(Ridge(alpha=1.0, solver="svd").fit(Xd, td).coef_[0])


def jax_mlp(jax: Any, jnp: Any, d: dict[str, Any], s: Sizes) -> Callable[[], float]:
    """The MLP and Adam by hand under jax.jit (glorot-uniform weights, as nn.Dense)."""
    import numpy as np

    b, f, h, steps = s.mlp
    X, t = jnp.asarray(d["X"]), jnp.asarray(d["t"])

    def init() -> list[Any]:
        rng = np.random.default_rng(1)
        params = []
        for fan_in, fan_out in ((f, h), (h, h), (h, 10)):
            lim = (6.0 / (fan_in + fan_out)) ** 0.5
            params += [jnp.asarray(rng.uniform(-lim, lim, (fan_in, fan_out)).astype(np.float32))]
            params += [jnp.zeros(fan_out, jnp.float32)]
        return params

    def loss(p: list[Any]) -> Any:
        a = jax.nn.relu(X @ p[0] + p[1])
        a = jax.nn.relu(a @ p[2] + p[3])
        logits = a @ p[4] + p[5]
        return -jnp.mean(jnp.sum(t * jax.nn.log_softmax(logits, axis=-1), axis=-1))

    grad = jax.value_and_grad(loss)

    @jax.jit
    def step(p: list[Any], m: list[Any], v: list[Any], k: Any) -> Any:
        value, g = grad(p)
        c1, c2 = 1 - 0.9**k, 1 - 0.999**k
        m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
        v = [0.999 * a + 0.001 * (b * b) for a, b in zip(v, g)]
        p = [w - 1e-3 * ((a / c1) / (jnp.sqrt(b / c2) + 1e-8)) for w, a, b in zip(p, m, v)]
        return p, m, v, value

    def train() -> float:
        p = init()
        m = [jnp.zeros_like(a) for a in p]
        v = [jnp.zeros_like(a) for a in p]
        value = None
        for k in range(1, steps + 1):
            p, m, v, value = step(p, m, v, jnp.float32(k))
        return float(value)

    return train


# -- one side: a worker process -----------------------------------------------------------------


def worker(args: argparse.Namespace) -> int:
    """Reads a line per round from stdin, answers it with one JSON line of seconds per
    (workload, mode) and the lazy counters of the round."""
    import warnings

    warnings.filterwarnings("ignore", message=".*lbfgs failed to converge.*")
    warnings.filterwarnings("ignore", category=UserWarning)
    import x10array as xp

    runner = Runner(args.quick)
    names = selected(args.only)
    for line in sys.stdin:
        if not line.strip():
            break
        result: dict[str, Any] = {
            "x10array": os.path.dirname(os.path.dirname(xp.__file__)),
            "times": {},
            "counters": {},
        }
        for name in names:
            for mode in MODES:
                fn = runner.make(name, mode)
                if fn is None:
                    continue
                before = xp.metrics()
                start = time.perf_counter()
                fn()
                if mode == "lazy":
                    xp.lazy_barrier(wait=True)
                elapsed = time.perf_counter() - start
                result["times"][f"{name}/{mode}"] = elapsed
                if mode == "lazy":
                    m = xp.metrics() - before
                    result["counters"][name] = {c: getattr(m, c) for c in COUNTERS}
        print(json.dumps(result), flush=True)
    return 0


def selected(only: str) -> list[str]:
    names = [n for n in WORKLOADS if not only or n in only.split(",")]
    unknown = set(only.split(",")) - set(WORKLOADS) if only else set()
    if unknown:
        raise SystemExit(f"bench_dayone: unknown workloads {sorted(unknown)}; known: {', '.join(WORKLOADS)}")
    return names


# -- the parent: start the sides, alternate the rounds, print the table ---------------------------


def start_side(checkout: str, args: argparse.Namespace) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=checkout, OPENBLAS_NUM_THREADS="1", SCIPY_ARRAY_API="1")
    env.setdefault("OMP_NUM_THREADS", "1")
    if args.mmap_threshold:  # (glibc's, read at the worker's start: fixed, not adjusted as it frees)
        env["MALLOC_MMAP_THRESHOLD_"] = env["MALLOC_TRIM_THRESHOLD_"] = str(args.mmap_threshold)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--only", args.only]
    if args.quick:
        cmd.append("--quick")
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def ask(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("round\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"bench_dayone: a worker died (exit {proc.wait()})")
    return json.loads(line)


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median seconds per (workload, mode) and median per-round ratios, warm-up round dropped."""
    kept = rounds[1:] if len(rounds) > 1 else rounds
    keys = kept[0]["times"].keys()
    med = {k: statistics.median(r["times"][k] for r in kept) for k in keys}

    def ratio(a: str, b: str) -> float | None:
        if a not in kept[0]["times"] or b not in kept[0]["times"]:
            return None
        return statistics.median(r["times"][a] / r["times"][b] for r in kept)

    return {
        "median": med,
        "ratio": ratio,
        "counters": kept[-1]["counters"],
        "x10array": kept[-1]["x10array"],
        "rounds": kept,
    }


def fmt(v: float | None, unit: str = "ms") -> str:
    if v is None:
        return ""
    return f"{v * 1e3:.1f}" if unit == "ms" else f"{v:.2f}"


def table(sides: dict[str, dict[str, Any]], names: list[str]) -> str:
    label = list(sides)
    head = ["workload", "numpy ms", "eager ms", "jax.jit ms"]
    for s in label:
        tag = f" ({s})" if s else ""
        head += [f"lazy ms{tag}", f"lazy/eager{tag}", f"lazy/jit{tag}"]
    if len(label) == 2:
        head.append("lazy after/before (paired)")
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    main = sides[label[-1]]
    lazy_over_eager: dict[str, list[float]] = {s: [] for s in label}
    for name in names:
        m = main["median"]
        row = [TITLES[name], fmt(m.get(f"{name}/numpy")), fmt(m.get(f"{name}/eager")), fmt(m.get(f"{name}/jax"))]
        for s in label:
            r = sides[s]["ratio"]
            le = r(f"{name}/lazy", f"{name}/eager")
            if le is not None and name not in NOT_AS_WRITTEN:
                lazy_over_eager[s].append(le)
            row += [
                fmt(sides[s]["median"].get(f"{name}/lazy")),
                fmt(le, "x"),
                fmt(r(f"{name}/lazy", f"{name}/jax"), "x"),
            ]
        if len(label) == 2:  # paired: the two sides' runs of one round are next to each other in time
            before, after = sides[label[0]]["rounds"], sides[label[1]]["rounds"]
            k = f"{name}/lazy"
            row.append(f"{statistics.median(a['times'][k] / b['times'][k] for a, b in zip(after, before)):.2f}")
        lines.append("| " + " | ".join(row) + " |")
    for s in label:
        if lazy_over_eager[s]:
            tag = f" ({s})" if s else ""
            lines.append(f"\nmedian lazy/eager over the workloads{tag}: {statistics.median(lazy_over_eager[s]):.2f}x")
    for s in label:
        lines.append(f"\nlazy counters{f' ({s})' if s else ''}, last round: " + "; ".join(
            f"{n}: " + ", ".join(f"{c.replace('_count', 's')}={v}" for c, v in sides[s]["counters"][n].items() if v)
            for n in names if n in sides[s]["counters"]
        ))  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per side, the first one a warm-up")
    parser.add_argument("--quick", action="store_true", help="small sizes and 2 rounds: a smoke run")
    parser.add_argument("--baseline", default="", help="another checkout, measured in the same run (before)")
    parser.add_argument("--only", default="", help=f"comma-separated workloads of {','.join(WORKLOADS)}")
    parser.add_argument(
        "--mmap-threshold",
        type=int,
        default=0,
        help="bytes: fix glibc's mmap and trim thresholds in the workers (e.g. 67108864), so that "
        "large temporaries reuse the heap instead of fresh pages; by default glibc adjusts them "
        "as a process frees, and which state a worker is in moves the eager and NumPy columns of "
        "large-array workloads up to 2x (benchmarks/README.md). No effect outside glibc",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    names = selected(args.only)
    rounds = 2 if args.quick else max(args.rounds, 2)
    here = os.path.dirname(HERE)
    checkouts = {"after": here}
    if args.baseline:
        checkouts = {"before": os.path.abspath(args.baseline), "after": here}
    procs = {s: start_side(c, args) for s, c in checkouts.items()}
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in procs}
    start = time.perf_counter()
    try:
        for i in range(rounds):
            order = list(procs.items())
            for s, proc in order if i % 2 == 0 else order[::-1]:  # alternate the sides, and who goes first
                results[s].append(ask(proc))
            print(f"round {i + 1}/{rounds} done ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    finally:
        for proc in procs.values():
            if proc.stdin:
                proc.stdin.close()
            proc.wait()
    sides = {s: summarize(r) for s, r in results.items()}
    if len(sides) == 1:
        sides = {"": sides["after"]}
    for s, v in sides.items():
        print(f"{s or 'this checkout'}: x10array from {v['x10array']}")
    fixed = f"; glibc's mmap threshold fixed at {args.mmap_threshold} bytes" if args.mmap_threshold else ""
    print(f"{rounds} rounds (the first a warm-up), medians; OPENBLAS_NUM_THREADS=1{fixed}")
    print(table(sides, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
