"""cubed with NumPy chunks, x10array eager chunks and lazy chunks (compiled per task), same run.

    python benchmarks/bench_cubed.py                    # the table (a few minutes)
    python benchmarks/bench_cubed.py --allowed-mb 10    # smaller (the array is 8x allowed_mem)

The out-of-core workloads of tests/test_pydata.py, `sum(a * 2.0, axis=0)` and `a.T @ a`, and an
elementwise map, `sin(a) * 2.0 + a` stored to Zarr (its tasks get their chunks as arguments,
so the lazy runs compile them; cubed streams a reduction's and a contraction's chunks to their
tasks as iterators, which run recorded and interpreted: docs/pydata.md), over a
(rows, 64) float64 array of more than 8x `allowed_mem`, stored in Zarr, on cubed's processes
executor (2 workers, fresh worker processes for each computation). Each configuration runs in
its own client process (cubed reads its chunk namespace at import):

- `numpy`: `CUBED_BACKEND_ARRAY_API_MODULE=array_api_compat.numpy`, the baseline;
- `eager`: `x10array.cubed`, chunks on the eager CPU;
- `lazy`: `x10array.cubed` with `X10ARRAY_DEFAULT_DEVICE=xla` and
  `compute(compile_function=x10array.cubed.compile_function)`, run twice on one fresh
  persistent compile cache directory: `lazy cold` (empty: the workers compile) and `lazy warm`
  (fresh workers again, loading the programs the first run stored).

Per configuration: the best wall time of each workload (of `--repeat` runs; the first run of a
lazy configuration is its cold one), the largest peak RSS of a worker at a task's end (cubed's
`peak_measured_mem_end`: Python, the libraries and the task), and for the lazy runs the
compiles, disk-cache loads and compile seconds per worker task that compiled, counted in the
workers (`_cubed_worker.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CLIENT = r"""
import json, os, sys, tempfile, time, warnings
warnings.simplefilter("ignore")
import numpy as np
import cubed, cubed.array_api as cxp
from cubed.runtime.create import create_executor
from cubed.runtime.pipeline import visit_nodes
from cubed.runtime.types import Callback

class Peaks(Callback):
    def on_compute_start(self, event):
        self.peak = 0
    def on_task_end(self, event):
        if event.peak_measured_mem_end is not None:
            self.peak = max(self.peak, event.peak_measured_mem_end)

def main():
    allowed, repeat, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    compiled = sys.argv[4] == "1"
    executor = create_executor("processes", dict(max_workers=2))
    spec = cubed.Spec(tempfile.mkdtemp(), allowed_mem=allowed, reserved_mem=0)
    a = cubed.from_zarr(store, spec=spec)
    kwargs = {}
    if compiled:
        import _cubed_worker
        kwargs["compile_function"] = _cubed_worker.timed_compile_function
    out = {}
    out_dir = tempfile.mkdtemp()
    workloads = (
        ("map", lambda: cxp.sin(a) * 2.0 + a),
        ("sum", lambda: cxp.sum(a * 2.0, axis=0)),
        ("matmul", lambda: cxp.matmul(cxp.permute_dims(a, (1, 0)), a)),
    )
    for name, make in workloads:
        times, peak = [], 0
        for i in range(repeat):
            peaks = Peaks()
            start = time.perf_counter()
            if name == "map":  # the result is as big as the input: to Zarr
                cubed.to_zarr(make(), f"{out_dir}/{i}.zarr", executor=executor, callbacks=[peaks], **kwargs)
            else:
                make().compute(executor=executor, callbacks=[peaks], **kwargs)
            times.append(time.perf_counter() - start)
            peak = max(peak, peaks.peak)
        out[name] = {"seconds": min(times), "first": times[0], "peak_mb": peak / 1e6}
    print("RESULT" + json.dumps(out))

if __name__ == "__main__":
    main()
"""


def _make_store(allowed: int, work: Path) -> tuple[str, int]:
    import numpy as np
    import zarr

    cols = 64
    rows = 8 * allowed // (8 * cols) + 64 * 16
    rows -= rows % 64
    store = str(work / "a.zarr")
    z = zarr.create_array(store, shape=(rows, cols), chunks=(rows // 64, cols), dtype="float64")
    rng = np.random.default_rng(0)
    step = rows // 64
    for i in range(0, rows, step):
        z[i : i + step] = rng.random((step, cols))
    return store, rows * cols * 8


def _run(config: str, allowed: int, repeat: int, store: str, cache: Path, log_dir: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]), "X10ARRAY_BENCH_LOG": str(log_dir)}
    env["CUBED_BACKEND_ARRAY_API_MODULE"] = "array_api_compat.numpy" if config == "numpy" else "x10array.cubed"
    env["X10ARRAY_COMPILE_CACHE_DIR"] = str(cache)
    if config.startswith("lazy"):
        env["X10ARRAY_DEFAULT_DEVICE"] = "xla"
    script = log_dir / "client.py"
    script.write_text(CLIENT)
    compiled = "1" if config.startswith("lazy") else "0"
    args = [sys.executable, str(script), str(allowed), str(repeat), store, compiled]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"bench_cubed: {config} failed:\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    out = json.loads(line[len("RESULT") :])
    compiles = [json.loads(ln) for f in log_dir.glob("worker-*.jsonl") for ln in f.read_text().splitlines()]
    out["tasks_compiling"] = sum(1 for c in compiles if c["compiles"])
    out["compiles"] = sum(c["compiles"] for c in compiles)
    out["disk_loads"] = sum(c["disk_loads"] for c in compiles)
    out["compile_s"] = sum(c["compile_s"] for c in compiles)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allowed-mb", type=float, default=20.0, help="cubed's allowed_mem (the array is 8x it)")
    parser.add_argument("--repeat", type=int, default=2)
    opts = parser.parse_args()
    allowed = int(opts.allowed_mb * 1e6)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store, nbytes = _make_store(allowed, work)
        cache = work / "xla-cache"
        cache.mkdir()
        rows = []
        for config in ("numpy", "eager", "lazy cold", "lazy warm"):
            log_dir = work / config.replace(" ", "-")
            log_dir.mkdir()
            # the cold run: a fresh cache directory, one run (its workers compile)
            repeat = 1 if config == "lazy cold" else opts.repeat
            rows.append((config, _run(config, allowed, repeat, store, cache, log_dir)))
    print(f"array {nbytes / 1e6:.0f} MB, allowed_mem {allowed / 1e6:.0f} MB, processes executor, 2 workers")
    print(f"{'config':<10} {'map s':>7} {'sum s':>7} {'matmul s':>9} {'peak MB':>8} {'tasks compiling':>16}"
          f" {'compiles':>9} {'disk loads':>11} {'compile s/task':>15}")  # fmt: skip
    base = dict(rows)["numpy"]
    for config, r in rows:
        per_task = r["compile_s"] / r["tasks_compiling"] if r["tasks_compiling"] else 0.0
        peak = max(r[w]["peak_mb"] for w in ("map", "sum", "matmul"))
        print(
            f"{config:<10} {r['map']['seconds']:>7.2f} {r['sum']['seconds']:>7.2f} {r['matmul']['seconds']:>9.2f}"
            f" {peak:>8.0f}"
            f" {r['tasks_compiling']:>16} {r['compiles']:>9} {r['disk_loads']:>11} {per_task:>15.3f}"
        )
    for config, r in rows[1:]:
        print(
            f"{config}: map {r['map']['seconds'] / base['map']['seconds']:.2f}x NumPy chunks,"
            f" sum {r['sum']['seconds'] / base['sum']['seconds']:.2f}x,"
            f" matmul {r['matmul']['seconds'] / base['matmul']['seconds']:.2f}x"
        )


if __name__ == "__main__":
    main()
