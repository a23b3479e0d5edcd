"""The interpreter's own cost per step on the day-one graphs: a
profile, not a benchmark.

Runs bench_dayone's workloads (default: k-means and scikit-learn) a few times on the lazy
device, keeps the first graph of each structure that the interpreter runs (`program.interpret`
spied), then for each kept graph of 4 steps or more times `interpret()` again from a fresh
`Schedule`, as a program's repeated interpreted run does, for each interpreter.py given (the
modules loaded side by side into this process, called alternately in blocks of 10 runs:
paired, interleaved; the first is the reference of the ratio), and in the same blocks the
graph's NumPy kernels alone on the same operands (the `kernels` column: what no interpreter
can save; the last column is the first version's time beyond them, per step).

Run: python benchmarks/profile_interp.py [--runs 60] [--only kmeans,sklearn] [--quick]
         [x10array/_backends/lazy/interpreter.py /tmp/before/x10array/_backends/lazy/interpreter.py ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import warnings
from typing import Any

os.environ.setdefault("SCIPY_ARRAY_API", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_dayone  # noqa: E402
import numpy as np  # noqa: E402

warnings.filterwarnings("ignore")


def load(path: str, i: int) -> Any:
    """interpreter.py at `path` as a module of the lazy package (its relative imports resolve
    to this process's x10array)."""
    spec = importlib.util.spec_from_file_location(f"x10array._backends.lazy._interpreter_{i}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="blocks of 10 interpreted runs per version")
    parser.add_argument("--only", default="kmeans,sklearn", help="workloads of bench_dayone.py")
    parser.add_argument("--quick", action="store_true", help="bench_dayone's small sizes: a smoke run")
    parser.add_argument("files", nargs="*", help="interpreter.py files (default: this checkout's)")
    args = parser.parse_args()

    from x10array._backends.lazy import interpreter, program
    from x10array._core.kernels import NUMPY

    captured: dict[tuple[str, ...], tuple[Any, ...]] = {}
    real = program.interpret

    def spy(traced: Any, targets: Any, device: Any, schedule: Any = None, donate: Any = None) -> Any:
        captured.setdefault(tuple([p.name for p, _, _ in traced.ops]), (traced, targets, device))
        return real(traced, targets, device, schedule, donate)

    runner = bench_dayone.Runner(args.quick)
    program.interpret = spy  # type: ignore[assignment]
    try:
        for name in args.only.split(","):
            fn = runner.make(name, "lazy")
            assert fn is not None, name
            for _ in range(3):
                fn()
    finally:
        program.interpret = real  # type: ignore[assignment]

    versions = [load(f, i) for i, f in enumerate(args.files)] if args.files else [interpreter]
    print("interpret() of each captured graph again, us (medians); kernels: the NumPy kernels alone")
    heads = " | ".join([f"v{i}" for i in range(len(versions))] + [f"v{i}/v0" for i in range(1, len(versions))])
    print(f"| steps | {heads} | kernels | v0 us a step beyond kernels | graph |")
    for names, (traced, targets, device) in sorted(captured.items(), key=lambda kv: -len(kv[0])):
        if len(names) < 4:
            continue
        schedules = [v.Schedule(traced.ops, traced.outputs) for v in versions]
        kernels = _kernels_alone(traced, NUMPY, interpreter)
        times: list[list[float]] = [[] for _ in range(len(versions) + 1)]
        for _ in range(args.runs):  # (the kernels alone in the same blocks: a LAPACK call moves with the load)
            for k, v in enumerate(versions):
                start = time.perf_counter()
                for _ in range(10):
                    v.interpret(traced, targets, device, schedules[k])
                times[k].append((time.perf_counter() - start) / 10)
            with np.errstate(all="ignore"):
                start = time.perf_counter()
                for _ in range(10):
                    kernels()
                times[-1].append((time.perf_counter() - start) / 10)
        us = [statistics.median(t) * 1e6 for t in times]
        cells = [f"{u:.1f}" for u in us[:-1]] + [f"{u / us[0]:.3f}" for u in us[1:-1]]
        beyond = (us[0] - us[-1]) / len(names)
        print(f"| {len(names)} | {' | '.join(cells)} | {us[-1]:.1f} | {beyond:.2f} | {' '.join(names)[:60]} |")
    return 0


def _kernels_alone(traced: Any, numpy: Any, interpreter: Any) -> Any:
    """A function that calls the graph's NumPy kernels one after another on the operands a
    plain replay gives them (no flushing, no bookkeeping; a write into a copy, as the
    interpreter's first write)."""
    calls: list[tuple[Any, list[Any], dict[str, Any]]] = []

    def step(index: int, prim: Any, refs: Any, args: list[Any], params: dict[str, Any]) -> list[Any]:
        calls.append((prim, list(args), params))
        out = prim.kernel(numpy, *args, **params)
        return list(out) if prim.multiple_results else [out]

    params_of = [c.params for c in traced.calls]
    leaves = [np.asarray(n.value) for n in traced.leaves]
    with np.errstate(all="ignore"):
        interpreter.replay(traced.ops, params_of, leaves, traced.scalars, traced.outputs, step)

    def run() -> None:
        for prim, given, params in calls:
            operands = list(given)
            if prim.in_place:
                operands[0] = np.array(operands[0])
            prim.kernel(numpy, *operands, **params)

    return run


if __name__ == "__main__":
    sys.exit(main())
