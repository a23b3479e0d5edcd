"""x10array beside jax, in one run, on the default jax platform (a TPU, a GPU or the CPU), float32.

Every row runs x10array on its default eager device (`Device.default`) and on its default lazy
device (`Device.default_xla`), and jax's own counterparts, in one process:

- heat stencil 256x256, 100 steps, a `lazy_barrier()` per step; jax.jit: its step called per
  step and waited for (`block_until_ready`) each step; jax.numpy: op by op, no jit (`.at[].set`);
  a second row: the same jax.jit step not waited for (the lazy column is the row above's);
- Monte-Carlo reductions over 1e6 points, `count_nonzero(x**2 + y**2 <= 1)` and
  `mean(exp(-x**2))`, read with `float()`;
- k-means with boolean masks (`X[labels == k].mean(axis=0)`), 5,000 points, 10 iterations
  (jax.jit: an iteration jitted, the masked means as sums under `where`, which jit can trace);
- least squares with `x10array.autodiff.value_and_grad` and `x10array.optim.Adam`, 150 steps,
  a barrier per step (jax: `jax.value_and_grad` and Adam by hand, a step per call);
- eager cost per operation: `add` and `exp` of 100 float32 elements (us per call; the calls in
  a row, the last result waited for);
- the MNIST demo (LeNet-5, `x10array.examples.mnist.train`, its steps under `x10array.compile`)
  against the same loop hand-written with `jax.jit` (benchmarks/bench_mnist.py's): the first
  epoch of the process (compiles included, or loads from the persistent caches) and the median
  of the later ones. x10array's eager epochs only with `--mnist-eager` (slow on an accelerator).

The first four workloads are benchmarks/bench_dayone.py's, written once against a namespace.
Rounds: every (row, mode) once per round, the rounds interleaved, the first a warm-up (compiles,
caches) left out; each cell is the median over the other rounds, each ratio the median of the
per-round ratios. The MNIST rows come last: epoch 0 is the "first epoch" row, the median of
epochs 1 to `--rounds - 1` the "steady" row (x10array's epochs all in one `train` call, as the
demo runs them, then jax's).

Compile caches: x10array's persistent cache (`X10ARRAY_COMPILE_CACHE_DIR`, by default
`~/.cache/x10array/xla`) and jax's (`--jax-cache-dir`, else `JAX_COMPILATION_CACHE_DIR`, else
`~/.cache/x10array/jax-bench`, every program cached) are both on, so a second run loads
LeNet's programs from the disk instead of compiling them (on a TPU v5e ~80 s each side); its
first-epoch row then measures the loads. `--cold` puts both in fresh temporary directories.

MNIST files are read from `--data-dir` (never downloaded); with `--quick` and no `--data-dir`,
a small synthetic MNIST (random digits, 512 training and 256 test images).

Run:  python benchmarks/bench_accelerator.py --quick            (the CPU, seconds)
      python benchmarks/bench_accelerator.py --data-dir DIR --epochs-steps 100 [--json out.json]
      [--rounds 5] [--only stencil,montecarlo,kmeans,lstsq,eager_ops,mnist] [--cold] [--mnist-eager]
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("eager", "lazy", "jit", "jnp")
HEAD = {"eager": "x10array eager", "lazy": "x10array lazy", "jit": "jax.jit", "jnp": "jax.numpy"}
GROUPS = {
    "stencil": ("stencil", "stencil_async"),
    "montecarlo": ("montecarlo",),
    "kmeans": ("kmeans",),
    "lstsq": ("lstsq_adam",),
    "eager_ops": ("eager_add", "eager_exp"),
    "mnist": ("mnist_first", "mnist_steady"),
}
ROWS = tuple(row for rows in GROUPS.values() for row in rows)
TITLES = {
    "stencil": "heat stencil, barrier per step (jax.jit step waited for per step)",
    "stencil_async": "the same, jax.jit step not waited for (lazy: the row above)",
    "montecarlo": "Monte-Carlo count_nonzero, mean(exp), float()",
    "kmeans": "k-means with boolean masks",
    "lstsq_adam": "least squares, value_and_grad + optim.Adam, barrier per step",
    "eager_add": "add, 100 float32 elements, per call",
    "eager_exp": "exp, 100 float32 elements, per call",
    "mnist_first": "MNIST LeNet-5, first epoch (compiles or cache loads)",
    "mnist_steady": "MNIST LeNet-5, steady epoch (median)",
}
UNITS = {"eager_add": "us", "eager_exp": "us", "mnist_first": "s", "mnist_steady": "s"}
RATIOS = (("lazy", "eager"), ("lazy", "jit"), ("eager", "jnp"))


class Sizes:
    """bench_dayone's sizes, the least-squares fit at 150 steps; the eager calls; MNIST's."""

    def __init__(self, quick: bool) -> None:
        from bench_dayone import Sizes as DayOne

        day = DayOne(quick)
        self.grid, self.steps, self.points, self.kmeans = day.grid, day.steps, day.points, day.kmeans
        self.lstsq = day.lstsq if quick else (*day.lstsq[:2], 150)
        self.calls = 200 if quick else 2_000  # eager calls per timing
        self.synthetic = (512, 256)  # training, test images of the synthetic MNIST


# -- jax's counterparts -----------------------------------------------------------------------


def jax_forms(jax: Any, jnp: Any, name: str, d: dict[str, Any], s: Sizes) -> dict[str, Callable[[], Any]]:
    """`{"jit": fn, "jnp": fn}` for one workload: `fn()` runs it once and reads its result."""
    from bench_dayone import kmeans, lstsq_loss, montecarlo

    if name.startswith("stencil"):

        def step(u: Any) -> Any:
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
            return u.at[1:-1, 1:-1].set(u[1:-1, 1:-1] + 0.1 * lap)

        jitted = jax.jit(step)

        def run(one: Callable[[Any], Any], wait: bool) -> float:
            u = jnp.asarray(d["u"])
            for _ in range(s.steps):
                u = one(u)
                if wait:
                    u.block_until_ready()
            return float(jnp.sum(u))

        if name == "stencil_async":
            return {"jit": lambda: run(jitted, False)}
        return {"jit": lambda: run(jitted, True), "jnp": lambda: run(step, False)}
    if name == "montecarlo":
        pts = jnp.asarray(d["pts"])
        inside = jax.jit(lambda p: jnp.count_nonzero(p[:, 0] ** 2 + p[:, 1] ** 2 <= 1.0))
        gauss = jax.jit(lambda p: jnp.mean(jnp.exp(-(p[:, 0] ** 2))))
        return {
            "jit": lambda: (4.0 * float(inside(pts)) / pts.shape[0], float(gauss(pts))),
            "jnp": lambda: montecarlo(jnp, pts),
        }
    if name == "kmeans":
        X = jnp.asarray(d["X"])
        _, _, k, iterations = s.kmeans

        @jax.jit
        def iteration(X: Any, centers: Any) -> Any:
            labels = jnp.argmin(jnp.sum((X[:, None, :] - centers[None, :, :]) ** 2, axis=2), axis=1)
            member = labels[:, None] == jnp.arange(k)[None, :]  # (n, k)
            sums = jnp.sum(jnp.where(member[:, :, None], X[:, None, :], 0.0), axis=0)
            return sums / jnp.sum(member, axis=0)[:, None]

        def run_jit() -> float:
            centers = X[:k]
            for _ in range(iterations):
                centers = iteration(X, centers)
            return float(jnp.sum(centers))

        return {"jit": run_jit, "jnp": lambda: kmeans(jnp, X, k, iterations)}
    if name == "lstsq_adam":
        X, y = jnp.asarray(d["X"]), jnp.asarray(d["y"])
        grad = jax.value_and_grad(lambda w: lstsq_loss(jnp, w, X, y))

        def adam(w: Any, m: Any, v: Any, t: Any) -> Any:  # optim.Adam(learning_rate=0.05)'s update
            _, g = grad(w)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * (g * g)
            w = w - 0.05 * ((m / (1 - 0.9**t)) / (jnp.sqrt(v / (1 - 0.999**t)) + 1e-8))
            return w, m, v

        def fit(step: Callable[..., Any]) -> float:
            w = m = v = jnp.zeros(X.shape[1], dtype=X.dtype)
            for t in range(1, s.lstsq[2] + 1):
                w, m, v = step(w, m, v, jnp.asarray(t, dtype=X.dtype))
            return float(lstsq_loss(jnp, w, X, y))

        jitted = jax.jit(adam)
        return {"jit": lambda: fit(jitted), "jnp": lambda: fit(adam)}
    raise ValueError(name)


def eager_ops(jnp: Any, xp: Any, calls: int) -> dict[str, dict[str, Callable[[], float]]]:
    """Seconds per call of `add` and `exp` on 100 float32 elements, x10array eager and
    jax.numpy: `calls` calls in a row, the last one's result waited for."""
    a = np.linspace(0.0, 1.0, 100, dtype=np.float32)
    b = np.linspace(1.0, 2.0, 100, dtype=np.float32)
    xa, xb = xp.asarray(a, device=xp.Device.default), xp.asarray(b, device=xp.Device.default)
    ja, jb = jnp.asarray(a), jnp.asarray(b)

    def per_call(op: Callable[[], Any], wait: Callable[[Any], Any]) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                r = op()
            wait(r)
            return (time.perf_counter() - start) / calls

        return run

    x10_wait, jax_wait = np.asarray, lambda r: r.block_until_ready()
    return {
        "eager_add": {
            "eager": per_call(lambda: xp.add(xa, xb), x10_wait),
            "jnp": per_call(lambda: jnp.add(ja, jb), jax_wait),
        },
        "eager_exp": {
            "eager": per_call(lambda: xp.exp(xa), x10_wait),
            "jnp": per_call(lambda: jnp.exp(ja), jax_wait),
        },
    }


# -- MNIST ------------------------------------------------------------------------------------


def synthetic_mnist(directory: str, train: int, test: int) -> None:
    """Random digits as MNIST's four IDX files (gzipped), for a quick run without the data."""
    rng = np.random.default_rng(0)
    parts = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (train, 28, 28)),
        "train-labels-idx1-ubyte.gz": rng.integers(0, 10, train),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (test, 28, 28)),
        "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, test),
    }
    for name, a in parts.items():
        header = struct.pack(">HBB", 0, 0x08, a.ndim) + struct.pack(f">{a.ndim}I", *a.shape)
        with gzip.open(os.path.join(directory, name), "wb") as f:
            f.write(header + a.astype(np.uint8).tobytes())


def mnist_rows(args: argparse.Namespace, data_dir: str, epochs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Seconds per epoch of each side (`{mode: [epoch 0, epoch 1, ...]}`) and what else the run
    says (accuracies, x10array's compile counters)."""
    from bench_mnist import BATCH, LR, MOMENTUM, jax_epoch, jax_steps

    import x10array as xp
    from x10array.datasets import MNIST
    from x10array.examples.mnist import train

    host = xp.Device("cpu", 0, "eager")
    x10_data = MNIST(BATCH, data_dir, device=host, seed=0, download=False)
    jax_data = MNIST(BATCH, data_dir, xp=np, seed=0, download=False)  # the same batches, as NumPy arrays
    seconds: dict[str, list[float]] = {}
    notes: dict[str, Any] = {"accuracy": {}}
    devices = {"lazy": xp.Device.default_xla}
    if args.mnist_eager:
        devices["eager"] = xp.Device.default
    for mode, device in devices.items():  # (x10array first: it pays the process's one-time costs)
        before = xp.metrics()
        history = train(
            device, epochs=epochs, batch_size=BATCH, data_dir=None, learning_rate=LR, momentum=MOMENTUM,
            log=lambda *_: None, data=x10_data, max_batches=args.epochs_steps,
        )  # fmt: skip
        seconds[mode] = [h["seconds"] for h in history]
        notes["accuracy"][mode] = history[-1]["test_accuracy"]
        if mode == "lazy":
            m = xp.metrics() - before
            notes["lazy"] = {
                "compiles": m.compile_count, "compile_seconds": m.compile_seconds,
                "disk_cache_loads": m.disk_cache_loads, "captured_replays": m.captured_replays,
            }  # fmt: skip
        print(f"  mnist x10array {mode}: epochs {', '.join(f'{t:.2f}' for t in seconds[mode])} s", file=sys.stderr)
    steps = jax_steps()
    runs = [jax_epoch(steps, jax_data, args.epochs_steps) for _ in range(epochs)]
    seconds["jit"] = [r["seconds"] for r in runs]
    notes["accuracy"]["jit"] = runs[-1]["test_accuracy"]
    print(f"  mnist jax.jit: epochs {', '.join(f'{t:.2f}' for t in seconds['jit'])} s", file=sys.stderr)
    return seconds, notes


# -- the run ------------------------------------------------------------------------------------


def setup_caches(args: argparse.Namespace) -> dict[str, str]:
    """Point x10array's and jax's persistent compile caches (before either compiles)."""
    if args.cold:
        top = tempfile.mkdtemp(prefix="x10-bench-accel-")
        atexit.register(shutil.rmtree, top, ignore_errors=True)
        os.environ["X10ARRAY_COMPILE_CACHE_DIR"] = os.path.join(top, "x10array")
        jax_dir = os.path.join(top, "jax")
    else:
        default = os.path.join(os.path.expanduser("~"), ".cache", "x10array", "jax-bench")
        jax_dir = args.jax_cache_dir or os.environ.get("JAX_COMPILATION_CACHE_DIR") or default
    import jax

    jax.config.update("jax_compilation_cache_dir", jax_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    from x10array._core import compile_cache

    return {"x10array": compile_cache.root() or "off", "jax": jax_dir}


def selected(only: str) -> list[str]:
    groups = [g for g in only.split(",") if g] if only else list(GROUPS)
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        raise SystemExit(f"bench_accelerator: unknown rows {unknown}; known: {', '.join(GROUPS)}")
    return [row for g in GROUPS if g in groups for row in GROUPS[g]]


def measure(args: argparse.Namespace, rows: list[str]) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    """Seconds per round of every (row, mode): `{row: {mode: [round 0, round 1, ...]}}`."""
    import jax
    import jax.numpy as jnp
    from bench_dayone import Runner

    import x10array as xp

    sizes = Sizes(args.quick)
    runner = Runner(args.quick, float_dtype="float32", devices=(xp.Device.default, xp.Device.default_xla))
    runner.sizes.lstsq = sizes.lstsq
    dayone = {"stencil": "stencil_barrier", "montecarlo": "montecarlo", "kmeans": "kmeans", "lstsq_adam": "lstsq_adam"}
    fns: dict[str, dict[str, Callable[[], Any]]] = {}
    for row in rows:
        if row in dayone or row == "stencil_async":
            data = runner.data(dayone.get(row, "stencil_barrier"))
            fns[row] = jax_forms(jax, jnp, row, data, sizes)
        if row in dayone:
            for mode in ("eager", "lazy"):
                fn = runner.make(dayone[row], mode)
                assert fn is not None
                fns[row][mode] = fn
    if "eager_add" in rows:
        fns.update(eager_ops(jnp, xp, sizes.calls))
    times: dict[str, dict[str, list[float]]] = {row: {m: [] for m in MODES if m in fns[row]} for row in fns}
    rounds = 2 if args.quick else max(args.rounds, 2)
    start = time.perf_counter()
    for i in range(rounds):
        for row, modes in fns.items():
            for mode in MODES:
                if mode not in modes:
                    continue
                began = time.perf_counter()
                result = modes[mode]()
                if mode == "lazy":
                    xp.lazy_barrier(wait=True)
                took = time.perf_counter() - began
                # (the eager calls time themselves, per call)
                times[row][mode].append(result if row.startswith("eager_") else took)
        print(f"round {i + 1}/{rounds} done ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    if "stencil_async" in times and "stencil" in times:
        times["stencil_async"]["lazy"] = times["stencil"]["lazy"]
    notes: dict[str, Any] = {"rounds": rounds}
    if "mnist_first" in rows:
        with tempfile.TemporaryDirectory(prefix="x10-bench-mnist-") as tmp:
            data_dir = args.data_dir
            if data_dir is None:  # (--quick: main refuses a full run without the files)
                synthetic_mnist(tmp, *sizes.synthetic)
                data_dir = tmp
            notes["mnist_data"] = "synthetic" if data_dir == tmp else data_dir
            epochs, mnist_notes = mnist_rows(args, data_dir, rounds)
        notes["mnist"] = mnist_notes
        times["mnist_first"] = {m: t[:1] for m, t in epochs.items()}
        times["mnist_steady"] = {m: t[1:] for m, t in epochs.items()}
    return times, notes


def summarize(times: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, Any]]:
    """Per row: the median of each mode (the warm-up round left out, except for the first
    epoch, a row of one) and the median per-round ratios."""
    out: dict[str, dict[str, Any]] = {}
    for row, modes in times.items():
        kept = {m: (t if row.startswith("mnist") or len(t) < 2 else t[1:]) for m, t in modes.items()}
        ratios = {}
        for a, b in RATIOS:
            if a in kept and b in kept:
                ratios[f"{a}/{b}"] = statistics.median(x / y for x, y in zip(kept[a], kept[b]))
        out[row] = {
            "title": TITLES[row],
            "unit": UNITS.get(row, "ms"),
            "median_seconds": {m: statistics.median(t) for m, t in kept.items()},
            "ratios": ratios,
            "seconds": kept,
        }
    return out


def fmt_time(seconds: float | None, unit: str) -> str:
    if seconds is None:
        return ""
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    value = seconds * scale
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(summary: dict[str, dict[str, Any]]) -> str:
    head = ["row", "unit", *(HEAD[m] for m in MODES), "lazy/eager", "lazy/jax.jit", "eager/jax.numpy"]
    lines = ["| " + " | ".join(head) + " |", "|---|---" + "|---:" * (len(head) - 2) + "|"]
    for r in summary.values():
        med = r["median_seconds"]
        cells = [r["title"], r["unit"], *(fmt_time(med.get(m), r["unit"]) for m in MODES)]
        cells += [f"{r['ratios'][f'{a}/{b}']:.2f}" if f"{a}/{b}" in r["ratios"] else "" for a, b in RATIOS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def environment(caches: dict[str, str]) -> dict[str, Any]:
    import jax
    import jaxlib

    import x10array as xp
    from x10array._core import settings

    device = jax.devices()[0]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": jax.default_backend(),
        "device_kind": device.device_kind,
        "devices": f"{xp.Device.default} / {xp.Device.default_xla}",
        "eager_cpu_kernels": settings.get("X10ARRAY_EAGER_CPU_KERNELS"),  # (the CPU's eager device: numpy or xla)
        "x10array_commit": commit,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "host_cpus": os.cpu_count(),
        "caches": caches,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and 2 rounds: a smoke run (seconds on a CPU)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the first a warm-up); MNIST epochs per side")
    parser.add_argument("--only", default="", help=f"comma-separated rows of {','.join(GROUPS)}")
    parser.add_argument("--data-dir", default=None, help="the MNIST files (never downloaded)")
    parser.add_argument(
        "--epochs-steps", type=int, default=None, help="at most N training and N test batches an MNIST epoch"
    )
    parser.add_argument("--mnist-eager", action="store_true", help="x10array's eager MNIST epochs too (slow)")
    parser.add_argument("--cold", action="store_true", help="both compile caches in fresh temporary directories")
    parser.add_argument("--jax-cache-dir", default=None, help="jax's persistent compile cache (see above)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the figures there too")
    args = parser.parse_args()
    if args.epochs_steps is None and args.quick:
        args.epochs_steps = 4
    if args.epochs_steps is not None and args.epochs_steps < 1:
        parser.error("--epochs-steps must be at least 1")
    rows = selected(args.only)
    if "mnist_first" in rows and args.data_dir is None and not args.quick:
        parser.error("the MNIST rows need --data-dir (never downloaded), or --quick, or --only without mnist")
    sys.path.insert(0, HERE)
    caches = setup_caches(args)
    env = environment(caches)
    times, notes = measure(args, rows)
    summary = summarize(times)
    bad = [(row, m, t) for row, r in summary.items() for m, t in r["median_seconds"].items() if not t > 0]
    print(
        f"x10array beside jax, {env['date']}: jax {env['jax']}, platform {env['platform']} "
        f"({env['device_kind']}), x10array {env['devices']} at {env['x10array_commit'] or '?'}, float32"
        + (f", eager CPU kernels {env['eager_cpu_kernels']}" if env["platform"] == "cpu" else "")
    )
    print(
        f"{notes['rounds']} rounds (the first a warm-up), medians; compile caches: x10array {caches['x10array']}, "
        f"jax {caches['jax']}{' (fresh)' if args.cold else ''}"
    )
    print(table(summary))
    if "mnist" in notes:
        m = notes["mnist"]
        acc = ", ".join(f"{HEAD[k]} {100 * v:.1f}%" for k, v in m["accuracy"].items())
        lazy = m.get("lazy", {})
        print(
            f"\nMNIST ({notes['mnist_data']}, epochs of at most {args.epochs_steps or 'all'} batches): "
            f"test accuracy {acc}; x10array lazy: {lazy.get('compiles')} compiles "
            f"and {lazy.get('disk_cache_loads')} programs loaded from the disk"
            f" in {lazy.get('compile_seconds', 0):.1f} s"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "notes": notes, "rows": summary}, f, indent=1, default=str)
    if bad or any(not math.isfinite(v) for r in summary.values() for v in r["ratios"].values()):
        print(f"bench_accelerator: a time is not positive: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
