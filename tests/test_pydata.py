"""x10array in the PyData stack (docs/pydata.md): dtypes NumPy can read, cubed with x10array
chunks (`x10array.cubed`), xarray over x10array arrays.

The default run is cheap: dtype checks, small cubed computations in a subprocess per device
(cubed picks its chunk namespace from the environment at import), xarray in process. Marked
slow: cubed's own `cubed/tests/test_array_api.py` on x10array chunks against its run on NumPy
chunks, and the out-of-core reduction and matmul on cubed's processes executor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import x10array as xp

ROOT = Path(__file__).resolve().parent.parent
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = [pytest.param(None, id="eager"), pytest.param(LAZY, id="lazy")]

# --- dtypes ---------------------------------------------------------------------------------

ALL = [xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64]
ALL += [xp.float32, xp.float64, xp.complex64, xp.complex128]


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_numpy_reads_our_dtypes(dtype):
    assert np.dtype(dtype) == np.dtype(dtype.name)
    assert np.zeros(2, dtype=dtype).dtype == np.dtype(dtype.name)
    # both protocols: NumPy >= 2.4's __numpy_dtype__, and .dtype for older NumPy and JAX's habit
    assert dtype.__numpy_dtype__ is dtype.dtype
    assert np.dtype(dtype.name) == dtype and dtype == np.dtype(dtype.name)
    assert hash(dtype) == hash(np.dtype(dtype.name))  # equal objects hash equal
    assert {dtype, np.dtype(dtype.name)} == {dtype}
    # NumPy dtype objects are taken as dtype= and mean ours
    assert xp.zeros(2, dtype=np.dtype(dtype.name)).dtype is dtype
    assert xp.astype(xp.zeros(2), np.dtype(dtype.name)).dtype is dtype


def test_dtypes_compare_among_themselves_by_identity():
    for a in ALL:
        for b in ALL:
            assert (a == b) is (a is b)
            assert (a != b) is (a is not b)
    assert len(set(ALL)) == len(ALL)
    assert xp.result_type(np.dtype("int8"), xp.uint8) is xp.int16
    assert xp.isdtype(np.dtype("float32"), "real floating")
    assert xp.isdtype(xp.float32, np.dtype("float32"))
    assert xp.finfo(np.dtype("float32")).bits == 32


@pytest.mark.parametrize(
    "bad", [np.float64, "float64", float, np.dtype(">f8"), np.dtype("float16"), np.dtype("U3")], ids=repr
)
def test_other_dtype_likes_are_refused(bad):
    with pytest.raises(TypeError, match=r"^zeros: dtype must be an x10array dtype"):
        xp.zeros(2, dtype=bad)


def test_scalar_types_and_strings_are_not_equal():
    assert xp.float64 != np.float64 and xp.float64 != "float64"
    assert xp.float64 != np.dtype("float32")


# --- cubed ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [xp.float32, xp.int8, xp.complex128, xp.bool], ids=lambda d: d.name)
def test_arrays_pickle_by_value_onto_their_device(device, dtype):
    # cubed's executors ship a plan's constants (a scalar operand made an array) to workers
    import pickle

    x = xp.reshape(xp.asarray([1, 0, 3, 4], dtype=dtype, device=device), (2, 2))  # pending on the lazy device
    y = pickle.loads(pickle.dumps(x))
    assert y.device == x.device and y.dtype is dtype and y.shape == (2, 2)
    assert np.asarray(y).tobytes() == np.asarray(x).tobytes()
    y[0, 0] = y[0, 1]  # a new array: writing it leaves the original alone
    assert bool(x[0, 0] != x[0, 1])


_CUBED_SCRIPT = textwrap.dedent(
    """
    import json, sys, tempfile, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import cubed, cubed.array_api as cxp
    import x10array as xp, x10array.cubed as xc
    spec = cubed.Spec(tempfile.mkdtemp(), allowed_mem=2_000_000)
    rng = np.random.default_rng(0)
    an = rng.random((120, 90))
    an[3, 4] = np.nan
    a = cxp.asarray(an, chunks=(40, 30), spec=spec)
    clean = cxp.asarray(np.nan_to_num(an), chunks=(40, 30), spec=spec)
    out = {}
    def put(name, got, want):
        got_np = np.asarray(got)
        out[name] = [type(got).__module__, bool(np.allclose(got_np, want, equal_nan=True))]
    put("sum", cxp.sum(clean * 2.0, axis=0).compute(), (np.nan_to_num(an) * 2).sum(0))
    put("nansum", cubed.nansum(a).compute(), np.nansum(an))
    put("nanmean", cubed.nanmean(a, axis=1).compute(), np.nanmean(an, axis=1))
    put("std", cxp.std(clean, axis=0).compute(), np.nan_to_num(an).std(0))
    put("matmul", cxp.matmul(clean, cxp.permute_dims(clean, (1, 0))).compute(), np.nan_to_num(an) @ np.nan_to_num(an).T)
    before = xp.metrics()
    planned = cxp.sum(cxp.sin(clean) * 2.0 + clean, axis=0)
    with xp.transfer_guard("disallow"):  # the chunk functions read nothing; the task's read is explicit
        got = planned.compute(compile_function=xc.compile_function)
    put("compiled", got, (np.sin(np.nan_to_num(an)) * 2 + np.nan_to_num(an)).sum(0))
    after = xp.metrics()
    out["compiles"] = after.compile_count - before.compile_count
    out["replays"] = after.captured_replays - before.captured_replays
    # a chunk function that reads a value (random chunks: their block id) runs uncompiled, right
    r = cubed.random.random((60, 60), chunks=(20, 20), spec=spec)
    rn = np.asarray(r.compute())
    put("random-compiled", cxp.sum(r + 1.0).compute(compile_function=xc.compile_function), (rn + 1.0).sum())
    print("RESULT" + json.dumps(out))
    """
)


def _run(script: str, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("device", ["eager", "xla"])
def test_cubed_with_x10array_chunks(device):
    pytest.importorskip("cubed")
    proc = _run(_CUBED_SCRIPT, {"CUBED_BACKEND_ARRAY_API_MODULE": "x10array.cubed", "X10ARRAY_DEFAULT_DEVICE": device})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    out = json.loads(line[len("RESULT") :])
    for name in ("sum", "nansum", "nanmean", "std", "matmul", "compiled", "random-compiled"):
        module, equal = out[name]
        assert equal, name
        assert module.startswith("x10array"), (name, module)  # cubed's results are x10array arrays
    if device == "xla":
        # 3x3 chunks of (40, 30): the fused sin/add/partial-sum task compiled once per chunk
        # signature, replayed for the rest
        assert out["compiles"] >= 1 and out["replays"] >= 4, out
    else:
        assert out["compiles"] == 0 and out["replays"] == 0, out


def test_cubed_namespace_extras():
    xc = pytest.importorskip("x10array.cubed")
    x = xp.asarray([1.0, xp.nan, 2.0])
    assert float(xc.nansum(x)) == 3.0
    assert int(xc.sum(xp.isnan(x))) == 1
    assert xc.mean(xp.asarray([1, 2]), dtype=np.dtype("float32")).dtype is xp.float32
    assert float(xc.take(xp.asarray([[1.0, 2.0]]), 1, axis=1)[0]) == 2.0
    assert xc.__array_namespace_info__().default_dtypes(device="cpu")["real floating"] is xp.float64
    assert xc.linalg is xp.linalg and xc.asarray is xp.asarray
    with pytest.raises(TypeError, match="^nansum: "):
        xc.nansum(np.ones(2))
    # the extras live there, not in the main namespace
    assert not hasattr(xp, "nansum")


# --- xarray ---------------------------------------------------------------------------------


@pytest.fixture
def xr():
    mod = pytest.importorskip("xarray")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield mod


def _data(device):
    values = np.arange(24.0).reshape(4, 6)
    values[1, 2] = 7.5
    return values, xp.asarray(values, device=device)


def _same(result, expected, device):
    data = result.data
    assert type(data) is xp.Array, type(data)
    assert data.device == (device or xp.Device.default)
    np.testing.assert_allclose(np.asarray(data), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_xarray_keeps_x10array_arrays(xr, device):
    values, a = _data(device)
    da = xr.DataArray(a, dims=("x", "y"), coords={"x": np.arange(4)})
    _same(da + 1, values + 1, device)
    _same(da * da, values * values, device)
    _same(abs(-da), values, device)
    _same(da.sel(x=2), values[2], device)
    _same(da.isel(y=slice(1, 3)), values[:, 1:3], device)
    _same(da.T, values.T, device)
    _same(xr.concat([da, da], dim="x"), np.concatenate([values, values]), device)
    _same(da.sum("x"), values.sum(0), device)
    # reductions without skipna: xarray calls the namespace's function
    _same(da.mean("x", skipna=False), values.mean(0), device)
    _same(da.max(skipna=False), values.max(), device)
    _same(da.min("y", skipna=False), values.min(1), device)
    _same(da.prod("y", skipna=False), values.prod(1), device)
    _same(da.argmax("x", skipna=False), values.argmax(0), device)
    _same(xr.where(da > 3, da, -da), np.where(values > 3, values, -values), device)
    _same(da.where(da > 3, xp.zeros_like(a)), np.where(values > 3, values, 0), device)
    _same(da.roll(y=1), np.roll(values, 1, axis=1), device)
    _same(da.diff("y"), np.diff(values, axis=1), device)
    ds = xr.Dataset({"a": da, "b": da * 2})
    _same(ds.mean(skipna=False)["b"], (values * 2).mean(), device)
    _same(ds.isel(x=0)["a"], values[0], device)


# What xarray 2026.9.0 does not do for array-API arrays other than NumPy's: each fails the same
# way with array-api-strict (docs/pydata.md has the reproductions). strict: a newer xarray that
# fixes one turns it into a pass that CI reports.
XARRAY_GAPS = {
    "mean": (lambda da: da.mean(), "skipna=None on floats goes to nanops, which calls xp.nanmean or NumPy's"),
    "std": (lambda da: da.std(skipna=False), "xarray passes NumPy's ddof= to xp.std (the standard's: correction=)"),
    "where-nan": (lambda da: da.where(da > 3), "dtypes.maybe_promote wants isinstance(dtype, np.dtype)"),
    "where-scalar": (lambda da: da.where(da > 3, 0.0), "passes 'float32' strings to xp.result_type"),
    "rolling": (lambda da: da.rolling(y=3).mean(), "passes 'int8' strings to xp.result_type, then calls xp.pad"),
    "count": (lambda da: da.count(), "xp.sum of a boolean array (the standard's sum takes numeric dtypes)"),
}


@pytest.mark.parametrize("name", list(XARRAY_GAPS))
def test_xarray_gaps(xr, name):
    fn, reason = XARRAY_GAPS[name]
    _, a = _data(None)
    da = xr.DataArray(a, dims=("x", "y"))
    try:
        out = fn(da)
    except (TypeError, AttributeError):
        return  # the gap, as documented
    if type(out.data) is not xp.Array:
        return  # the gap: a NumPy result
    pytest.fail(f"xarray now does {name} on x10array arrays ({reason}): update docs/pydata.md")


# --- the slow checks ------------------------------------------------------------------------

CUBED_TESTS = "cubed/tests/test_array_api.py"
# with NumPy chunks too: they read gs://cubed-unittest (network, and the obstore package)
CUBED_EXPECTED_FAILURES = {"test_matmul_cloud"}


def _cubed_failures(env: dict[str, str], tmp_path: Path, label: str) -> set[str]:
    import cubed

    path = Path(cubed.__file__).parent / "tests" / "test_array_api.py"
    report = tmp_path / f"{label}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(path), "-q", "-p", "no:cacheprovider", "--tb=no", "--json-report",
         f"--json-report-file={report}", "-k", "not processes",
         "-W", "ignore::DeprecationWarning"],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env}, cwd=tmp_path, capture_output=True, text=True,
        timeout=3000,
    )  # fmt: skip
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    tests = json.loads(report.read_text())["tests"]
    assert len(tests) > 250, len(tests)
    return {t["nodeid"].split("::")[1].split("[")[0] for t in tests if t["outcome"] in ("failed", "error")}


@pytest.fixture(scope="module")
def numpy_failures(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    pytest.importorskip("cubed")
    env = {"CUBED_BACKEND_ARRAY_API_MODULE": "array_api_compat.numpy"}
    return _cubed_failures(env, tmp_path_factory.mktemp("cubed-numpy"), "numpy")


@pytest.mark.slow
@pytest.mark.parametrize("device", ["eager", "xla"])
def test_cubed_array_api_module(device, tmp_path, numpy_failures):
    ours = _cubed_failures(
        {"CUBED_BACKEND_ARRAY_API_MODULE": "x10array.cubed", "X10ARRAY_DEFAULT_DEVICE": device}, tmp_path, device
    )
    assert numpy_failures <= CUBED_EXPECTED_FAILURES, numpy_failures
    assert ours <= numpy_failures | CUBED_EXPECTED_FAILURES, ours - numpy_failures


_OUT_OF_CORE = textwrap.dedent(
    """
    import json, sys, tempfile, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import cubed, cubed.array_api as cxp
    from cubed.runtime.create import create_executor
    from cubed.runtime.pipeline import visit_nodes
    from cubed.runtime.types import Callback
    import x10array as xp, x10array.cubed as xc

    class Peaks(Callback):  # cubed's HistoryCallback, without pandas and rich
        def on_compute_start(self, event):
            self.projected = {n: d["primitive_op"].projected_mem for n, d in visit_nodes(event.dag)}
            self.tasks = []
        def on_task_end(self, event):
            if event.peak_measured_mem_end is not None:
                self.tasks.append((event.name, event.peak_measured_mem_start, event.peak_measured_mem_end))

    def run(path, spec, executor):  # the sum and the matmul of the array stored at `path`
        a = cubed.from_zarr(path, spec=spec)
        s = cxp.sum(a * 2.0, axis=0)
        g = cxp.matmul(cxp.permute_dims(a, (1, 0)), a)
        peaks = Peaks()
        out = cubed.compute(s, g, executor=executor, callbacks=[peaks], compile_function=xc.compile_function)
        return out, peaks

    def main():
        budget = int(sys.argv[1])                       # memory for data, per worker
        executor = create_executor("processes", dict(max_workers=2))
        work = tempfile.mkdtemp()
        loose = cubed.Spec(work, allowed_mem="1GB")
        cols = 64
        rows = 8 * budget // (8 * cols) + 64 * 16       # float64: more than 8x the data budget
        rows -= rows % 64
        for name, shape in (("a", (rows, cols)), ("tiny", (64 * 64, cols))):
            a = cubed.random.random(shape, chunks=(shape[0] // 64, cols), spec=loose)
            cubed.to_zarr(a, f"{work}/{name}.zarr", executor=executor)
        # The worker's baseline, as cubed.measure_reserved_mem measures it (the peak RSS of a
        # worker running a computation on almost no data) but on the same computation over a
        # tiny array (64 chunks of 32 KB): Python, NumPy, x10array and, on the lazy device, jax
        # and XLA compiling programs of the same structure. With 10% wiggle room, rounded up to
        # 10 MB, as cubed's own test_mem_utilization. The client holds no data while workers
        # start: a spawned worker's peak RSS starts at its parent's RSS (Linux keeps the
        # high-water mark across exec), which would hide its own.
        _, warm = run(f"{work}/tiny.zarr", loose, executor)
        reserved = max(end for _, _, end in warm.tasks) * 1.1
        reserved = -(-int(reserved) // 10_000_000) * 10_000_000
        spec = cubed.Spec(work, allowed_mem=reserved + budget, reserved_mem=reserved)
        (s_out, g_out), peaks = run(f"{work}/a.zarr", spec, executor)
        import zarr
        an = np.asarray(zarr.open_array(work + "/a.zarr", mode="r")[...])
        print("RESULT" + json.dumps({
            "nbytes": an.nbytes, "reserved": reserved, "allowed": spec.allowed_mem,
            "sum": bool(np.allclose(np.asarray(s_out), (an * 2).sum(0))),
            "matmul": bool(np.allclose(np.asarray(g_out), an.T @ an)),
            "types": [type(s_out).__module__, type(g_out).__module__],
            "tasks": [(peaks.projected[n], start, end) for n, start, end in peaks.tasks],
        }))

    if __name__ == "__main__":
        main()
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["eager", "xla"])
def test_out_of_core_reduction_and_matmul(device, tmp_path):
    pytest.importorskip("cubed")
    script = tmp_path / "ooc.py"
    script.write_text(_OUT_OF_CORE)
    budget = 20_000_000
    proc = subprocess.run(
        [sys.executable, str(script), str(budget)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUBED_BACKEND_ARRAY_API_MODULE": "x10array.cubed",
             "X10ARRAY_DEFAULT_DEVICE": device, "X10ARRAY_COMPILE_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True, text=True, timeout=1800, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    out = json.loads(line[len("RESULT") :])
    assert out["nbytes"] >= 8 * budget
    assert out["sum"] and out["matmul"]
    assert all(t.startswith("x10array") for t in out["types"])
    # cubed's bounds, as its own test_mem_utilization checks them (a worker's peak RSS at each
    # task's end, against the baseline measured in the same run, see the script): no task's peak
    # grew by more than its op's projected memory (which counts reserved_mem: a task may be the
    # first to need a module or a compiled program), and no worker's peak passes the baseline plus
    # 3x the data budget while the array is over 8x that budget. Not 1x: glibc keeps freed chunks
    # for reuse, so a worker's peak creeps past its largest task (NumPy chunks on this plan the same
    # way: 69 MB baseline, 104 MB peak, reserved_mem 80 MB), and the lazy device's compiles add
    # tens of MB now and then (2-core development machine: eager 104-110 MB against 140; lazy
    # 251-300 MB against 340). A chunk function that keeps its inputs reaches 329 MB eager, 528 lazy.
    assert len(out["tasks"]) >= 32
    for projected, start, end in out["tasks"]:
        assert projected <= out["allowed"]
        assert end <= out["reserved"] + 3 * budget, (out["reserved"], end)
        assert end - start <= projected, (projected, start, end)
