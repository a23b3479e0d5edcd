"""Where a day-one program's lazy-only host time goes: a profile, not
a benchmark.

For each workload of bench_dayone.py named (default: k-means and scikit-learn), in one process:

1. interleaved runs on the eager device, the lazy device, and the lazy device with the
   interpreter's subnormal scans switched off (`interpreter.xla_flushes` patched to False
   for those runs only: a diagnostic that changes the numerics, never a setting), timed in
   this thread's CPU time (`time.thread_time`), which a loaded machine disturbs far less than
   the wall clock: the medians, and their ratios to eager;
2. the lazy runs again with each stage wrapped in a thread-CPU timer: recording (the
   backend's `run`, graph breaks included), the graph breaks, `materialize_nodes` (every
   read, barrier and break), `barrier_program` (walk or plan, donation, key), the one-op
   `run_single` path, a compiled graph's run (`run_compiled`: a graph whose sightings across
   the runs paid for its compile), the interpreter's step walk (`_replay`), its kernels (`_numpy_step`)
   and the subnormal scans (`flush_subnormals` as the interpreter calls it). Stages nest
   (a break materializes, which replays, which runs kernels): each row is inclusive.

Run: python benchmarks/profile_dayone.py [--fits 25] [--only kmeans,sklearn] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import time
import warnings
from typing import Any

os.environ.setdefault("SCIPY_ARRAY_API", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_dayone  # noqa: E402

warnings.filterwarnings("ignore", message=".*lbfgs failed to converge.*")
warnings.filterwarnings("ignore", category=UserWarning)


class Stages:
    """Thread-CPU timers wrapped around named functions, put back by `restore`."""

    def __init__(self) -> None:
        self.spent: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.patched: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        inner = getattr(owner, attr)
        spent, calls = self.spent, self.calls

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - start
                calls[label] += 1

        self.patched.append((owner, attr, inner))
        setattr(owner, attr, wrapper)

    def restore(self) -> None:
        for owner, attr, inner in reversed(self.patched):
            setattr(owner, attr, inner)


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fits", type=int, default=25, help="timed runs per mode (after 3 warm-ups)")
    parser.add_argument("--only", default="kmeans,sklearn", help="workloads of bench_dayone.py")
    parser.add_argument("--quick", action="store_true", help="bench_dayone's small sizes: a smoke run")
    args = parser.parse_args()

    import x10array as xp
    from x10array._backends.lazy import executor, interpreter

    flushes = interpreter.xla_flushes
    runner = bench_dayone.Runner(args.quick)
    backend = next(o for o in gc.get_objects() if type(o) is executor.LazyBackend)
    recorder = backend.recorder
    for name in args.only.split(","):
        eager, lazy = runner.make(name, "eager"), runner.make(name, "lazy")
        assert eager is not None and lazy is not None, name
        runs = {"eager": eager, "lazy": lazy, "lazy, no subnormal scans": lazy}
        times: dict[str, list[float]] = {k: [] for k in runs}
        try:
            for i in range(3 + args.fits):
                for mode, fn in runs.items():
                    interpreter.xla_flushes = (lambda: False) if mode.endswith("scans") else flushes
                    start = time.thread_time()
                    fn()
                    if i >= 3:
                        times[mode].append(time.thread_time() - start)
        finally:
            interpreter.xla_flushes = flushes
        base = median(times["eager"])
        print(f"\n{bench_dayone.TITLES.get(name, name)}: {args.fits} runs each, thread CPU time, medians")
        print("| mode | ms | / eager |\n|---|---:|---:|")
        for mode, ts in times.items():
            print(f"| {mode} | {median(ts) * 1e3:.2f} | {median(ts) / base:.2f} |")

        stages = Stages()
        timed = stages.wrap
        timed(executor, "materialize_nodes", "materialize_nodes (reads, barriers, breaks)")
        timed(recorder, "graph_break", "graph breaks (their reads and kernels included)")
        timed(backend, "run", "recording (graph breaks included)")
        recorder.run_now = executor.materialize_nodes
        timed(executor, "barrier_program", "barrier_program (walk or plan, donation, key)")
        timed(executor, "run_single", "run_single (one-op graphs)")
        timed(executor, "run_compiled", "run_compiled (a compiled graph's run)")
        timed(interpreter, "_replay", "interpreter step walk (_replay)")
        timed(interpreter, "_numpy_step", "interpreter kernels (_numpy_step, its result scans included)")
        timed(interpreter, "flush_subnormals", "subnormal scans (operands and results)")
        try:
            start = time.thread_time()
            for _ in range(args.fits):
                lazy()
            total = time.thread_time() - start
        finally:
            stages.restore()
            recorder.run_now = executor.materialize_nodes
        print(f"\nlazy, per run (the stages timed, {total / args.fits * 1e3:.2f} ms a run in all):")
        print("| stage (inclusive) | calls a run | ms a run | us a call |\n|---|---:|---:|---:|")
        for label, seconds in stages.spent.items():
            n, per_run = stages.calls[label], seconds / args.fits
            print(f"| {label} | {n / args.fits:.0f} | {per_run * 1e3:.2f} | {seconds / n * 1e6:.1f} |")
        m0 = xp.metrics()
        lazy()
        m = xp.metrics() - m0
        print(
            f"counters a run: interpreted_graphs={m.interpreted_graphs}, graph_breaks={m.graph_breaks},"
            f" plan_hits={m.plan_hits}, compile_count={m.compile_count}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
