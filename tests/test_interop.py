"""Interoperability: NumPy (`__array__`), DLPack (`__dlpack__`, `from_dlpack`) with NumPy,
JAX and PyTorch (optional), and array-api-compat's helpers, on the eager and the lazy device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _util import DTYPE_NAMES, NUMPY_DLPACK_WRITES

import x10array as xp

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = pytest.mark.parametrize("device", [EAGER, LAZY], ids=["eager", "lazy"])


def sample(dtype: str, shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    values = np.arange(n) - (0 if dtype.startswith("uint") else n // 2)
    if dtype.startswith("complex"):
        return (values + 0.5j * values[::-1]).astype(dtype).reshape(shape)
    return values.astype(dtype).reshape(shape)


def pending(a: np.ndarray, device: xp.Device) -> xp.Array:
    """An array whose value is computed (on the lazy device: still a graph)."""
    x = xp.reshape(xp.asarray(a, device=device), (-1,))
    return xp.reshape(xp.flip(xp.flip(x)), a.shape)


# -- NumPy: __array__ -------------------------------------------------------------------------


@DEVICES
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_numpy_asarray_values_and_dtype(device: xp.Device, dtype: str) -> None:
    for shape in [(2, 3), (), (0, 4)]:
        a = sample(dtype, shape) if shape != (0, 4) else np.zeros(shape, dtype=dtype)
        got = np.asarray(pending(a, device))
        assert got.dtype == np.dtype(dtype) and got.shape == a.shape
        np.testing.assert_array_equal(got, a)


@DEVICES
def test_numpy_asarray_of_a_view_and_a_lazy_result(device: xp.Device) -> None:
    a = sample("float64", (4, 5))
    x = xp.asarray(a, device=device)
    np.testing.assert_array_equal(np.asarray(x[::2, 1:]), a[::2, 1:])
    np.testing.assert_array_equal(np.asarray(xp.matrix_transpose(x)), a.T)
    np.testing.assert_array_equal(np.asarray(x * 2.0 + 1.0), a * 2.0 + 1.0)


@DEVICES
def test_array_copy_true_is_independent(device: xp.Device) -> None:
    x = pending(sample("float64"), device)
    first = np.asarray(x, copy=True)
    first[0, 0] = 99.0
    assert float(x[0, 0]) == -3.0
    assert first.flags.writeable


def test_array_copy_none_shares_eager_buffer_with_value_semantics() -> None:
    a = sample("float64")
    x = xp.asarray(a, device=EAGER, copy=True)
    seen = np.asarray(x)
    assert np.asarray(x) is seen or np.shares_memory(np.asarray(x), seen)  # zero-copy
    x[0, 0] = 42.0  # the exported buffer is shared: x copies before writing
    assert seen[0, 0] == -3.0 and float(x[0, 0]) == 42.0


@pytest.mark.parametrize("tier", [None, 1], ids=["interpreted", "compiled"])
def test_writes_into_numpy_asarray_of_a_lazy_array_reach_it(tier: Any) -> None:
    """numpy.asarray(lazy) is the lazy array's value, as numpy.asarray(eager) is (issue 24, 8:
    SciPy's ndimage wrote its results into it and they were lost): work pending before it
    is computed first and keeps the values it was recorded on; work recorded later sees the
    writes, interpreted or compiled; x's own later write copies first."""
    from x10array._backends import lazy as _lazy

    with _lazy.compile_threshold(tier):
        x = pending(sample("float64"), LAZY)
        before = x * 2.0  # pending when the buffer is handed out
        got = np.asarray(x)
        assert got.flags.writeable
        got[0, 0] = 7.0
        np.testing.assert_array_equal(np.asarray(before), sample("float64") * 2.0)
        assert float(x[0, 0]) == 7.0
        for _ in range(3):  # the same graph again: cached, compiled at its first sighting with tier 1
            np.testing.assert_array_equal(np.asarray(x + 1.0)[0], [8.0, -1.0, 0.0])
            got[0, 1] += 1.0
            got[0, 1] -= 1.0
        got[0, 2] = 5.0
        np.testing.assert_array_equal(np.asarray(xp.sum(x, axis=1)), [7.0 - 2.0 + 5.0, 3.0])
        x[1, 0] = -9.0  # x's own write: a new value; the NumPy array keeps what it holds
        assert got[1, 0] == 0.0 and float(x[1, 0]) == -9.0
        mine = np.asarray(x, copy=True)  # a copy of one's own
        mine[0, 0] = 1.0
        assert float(x[0, 0]) == 7.0


def test_numpy_asarray_of_a_lazy_result_held_alone_is_its_buffer_not_a_copy() -> None:
    """numpy.asarray of a computed lazy result that nothing else holds hands the host the
    interpreter's own buffer, as the eager device hands out its own (a copy of 10^6 float64
    cost more than computing them: `numpy.asarray(a + 1.0)` was 20x eager). A value something
    else holds (here a reference kept from outside; in practice a view of it that is alive,
    another node's value) is copied instead: the holder's read-only buffer never becomes
    writable, and the host's writes do not reach it."""
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=LAZY)
    y = x * 2.0
    xp.lazy_barrier()
    address = y._data.value.__array_interface__["data"][0]  # (no reference kept)
    got = np.asarray(y)
    assert got.__array_interface__["data"][0] == address and got.flags.writeable
    got[0, 0] = 5.0
    assert float(y[0, 0]) == 5.0 and float(x[0, 0]) == 0.0
    np.testing.assert_array_equal(np.asarray(y + 1.0)[0], [6.0, 3.0, 5.0, 7.0])

    z = x + 1.0
    xp.lazy_barrier()
    held = z._data.value  # another holder of z's value
    mine = np.asarray(z)
    assert not np.shares_memory(mine, held) and not held.flags.writeable and mine.flags.writeable
    mine[0, 0] = -1.0
    assert held[0, 0] == 1.0 and float(z[0, 0]) == -1.0


def test_subnormals_written_through_numpy_asarray_reach_both_tiers() -> None:
    """A subnormal written into numpy.asarray(x) (or into a view's buffer) after x was read is
    what a later graph reads: as it is when interpreted (NumPy's numerics), as it is or as a
    zero of its sign when compiled (the subnormal rule of docs/numerics.md)."""
    from x10array._backends import lazy as _lazy

    for tier in (None, 1):  # every graph interpreted, then every graph compiled
        with _lazy.compile_threshold(tier):
            x = pending(np.linspace(1.0, 2.0, 6).reshape(2, 3), LAZY)
            row = x[1, ...]
            buffer, row_buffer = np.asarray(x), np.asarray(row)
            assert float(xp.sum(x * 2.0)) > 0 and float(xp.sum(row * 2.0)) > 0
            buffer[0, 1] = 5e-324
            row_buffer[2] = -1e-310
            for got, host in ((np.asarray(x * 1e300), buffer), (np.asarray(row * 1e300), row_buffer)):
                kept = host * 1e300
                flushed = np.where(np.abs(host) < np.finfo(np.float64).tiny, host * 0.0, host) * 1e300
                assert np.array_equal(got, kept) or (tier == 1 and np.array_equal(got, flushed)), (tier, got)
                assert got[np.abs(host) < 1e-300].any() or tier == 1  # (the interpreter read the write)


@pytest.mark.parametrize("kernels_", ["numpy", "xla"])
def test_writes_into_numpy_asarray_of_an_eager_array_reach_it(kernels_: str) -> None:
    """The eager device shares its buffer: a write through numpy.asarray(x) is a write to x,
    with NumPy or XLA kernels (an XLA buffer is brought into a NumPy buffer that x keeps)."""
    old = xp.set_cpu_kernels(kernels_)
    try:
        out = xp.zeros((2, 3)) * 1.0  # computed by the kernels (a jax buffer with XLA's)
        host = np.asarray(out)
        assert host.flags.writeable
        host[...] = np.arange(6.0).reshape(2, 3)  # what ndimage's C code does
        np.testing.assert_array_equal(np.asarray(out), np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal(np.asarray(out + 1.0), np.arange(6.0).reshape(2, 3) + 1.0)
        out[0, 0] = -1.0  # x's own write copies first: the NumPy array keeps its values
        assert host[0, 0] == 0.0 and float(out[0, 0]) == -1.0
    finally:
        xp.set_cpu_kernels(old)


@DEVICES
def test_scipy_ndimage_output_argument(device: xp.Device) -> None:
    """The issue's case: ndimage writes into np.asarray(output); the result arrives on both
    devices (it stayed zeros on the lazy one)."""
    ndimage = pytest.importorskip("scipy.ndimage")
    a = np.arange(12.0).reshape(3, 4)
    out = xp.zeros((3, 4), device=device)
    ndimage.uniform_filter(a, size=2, output=np.asarray(out))
    np.testing.assert_allclose(np.asarray(out), ndimage.uniform_filter(a, size=2))
    np.testing.assert_allclose(np.asarray(out * 2.0), ndimage.uniform_filter(a, size=2) * 2.0)


@DEVICES
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_pickle_round_trip_keeps_device_kind_and_bits(device: xp.Device, dtype: str) -> None:
    import copy
    import pickle

    a = sample(dtype, (3, 2))
    if dtype.startswith(("float", "complex")):
        a.reshape(-1)[:3] = np.array([np.nan, -0.0, np.inf]).astype(dtype)
    for x in (pending(a, device), xp.asarray(a, device=device)[1:, ::-1], xp.asarray(a)):
        for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
            assert y.device == x.device and y.dtype == x.dtype and y.shape == x.shape
            assert y._committed == x._committed
            assert np.asarray(y).tobytes() == np.asarray(x).tobytes()
            if y is not x:
                y[...] = a[0, 0]  # an array of its own: x keeps its value
    pickled = pickle.dumps(pending(a, device))
    assert np.asarray(pickle.loads(pickled)).tobytes() == a.tobytes()


def test_pickle_in_another_process() -> None:
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    data = pickle.dumps([xp.asarray([1.5, -0.0], device=EAGER), xp.asarray([3, 4], device=LAZY) * 2])
    code = (
        "import pickle, sys, numpy as np; e, l = pickle.loads(sys.stdin.buffer.read());"
        " print(e.device.backend.name, l.device.backend.name, np.asarray(e).tolist(), np.asarray(l).tolist())"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert out.stdout.decode().split() == ["EAGER", "XLA", "[1.5,", "-0.0]", "[6,", "8]"]


@DEVICES
def test_array_copy_false_never_copies(device: xp.Device) -> None:
    x = pending(sample("float32"), device)
    view = np.asarray(x, copy=False)
    np.testing.assert_array_equal(view, sample("float32"))
    if device.is_lazy:
        assert not view.flags.writeable  # a view of the device buffer
    assert np.shares_memory(view, np.asarray(x, copy=False))
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(x, dtype=np.float64, copy=False)


@DEVICES
def test_array_dtype_argument(device: xp.Device) -> None:
    x = pending(sample("int32"), device)
    got = np.asarray(x, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, sample("int32").astype(np.float64))


@DEVICES
def test_numpy_functions_convert_and_operators_refuse(device: xp.Device) -> None:
    a = sample("float64")
    x = pending(a, device)
    # NumPy functions go through __array__ (no __array_function__ override)
    np.testing.assert_array_equal(np.concatenate([x, x]), np.concatenate([a, a]))
    assert np.mean(x) == np.mean(a)
    assert not np.may_share_memory(x, np.zeros(3))
    # mixing in operators is refused (as array-api-strict): no silent conversion
    with pytest.raises(TypeError):
        a + x
    with pytest.raises(TypeError):
        x + a


@DEVICES
def test_python_scalars_from_0d(device: xp.Device) -> None:
    x = pending(sample("float64"), device)
    assert float(xp.sum(x)) == float(np.sum(sample("float64")))
    assert bool(xp.any(x > 1.0)) is True
    assert int(xp.argmax(xp.reshape(x, (-1,)))) == 5
    assert x.shape[0] == len(x) == 2


# -- DLPack -----------------------------------------------------------------------------------


@DEVICES
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_dlpack_to_numpy(device: xp.Device, dtype: str) -> None:
    a = sample(dtype)
    got = np.from_dlpack(pending(a, device))
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, a)


@DEVICES
def test_dlpack_device_and_keywords(device: xp.Device) -> None:
    x = pending(sample("float64"), device)
    kind, ordinal = x.__dlpack_device__()
    assert (int(kind), ordinal) == (1, 0)  # kDLCPU
    for kwargs in [{}, {"max_version": (1, 0)}, {"max_version": (0, 8)}, {"dl_device": (1, 0)}, {"copy": True},
                   {"copy": None, "max_version": (1, 2)}]:  # fmt: skip
        assert x.__dlpack__(**kwargs) is not None
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0), max_version=(1, 0))  # no CUDA here
    with pytest.raises(ValueError):
        x.__dlpack__(copy="yes")
    with pytest.raises(TypeError):
        x.__dlpack__(max_version=1)
    with pytest.raises(ValueError):
        x.__dlpack__(stream=1)


def test_dlpack_zero_copy_with_numpy_on_eager() -> None:
    a = sample("float64")
    x = xp.from_dlpack(a)
    assert x.device == xp.Device.default or x.device.kind is xp.DeviceKind.CPU
    back = np.from_dlpack(x)
    assert np.shares_memory(back, a)  # numpy -> x10array -> numpy without a copy
    assert not np.shares_memory(np.from_dlpack(x, copy=True), a)
    assert not np.shares_memory(np.asarray(xp.from_dlpack(a, copy=True)), a)
    # value semantics across the shared buffer: writes copy first
    x[0, 0] = 100.0
    assert a[0, 0] == -3.0 and back[0, 0] == -3.0


@DEVICES
def test_dlpack_copy_keyword_to_numpy(device: xp.Device) -> None:
    x = pending(sample("float64"), device)
    copied = np.from_dlpack(x, copy=True)
    # NumPy before 2.2.5 marks every DLPack import read-only, copies included
    if tuple(int(p) for p in np.__version__.split(".")[:3]) >= (2, 2, 5):
        assert copied.flags.writeable
        copied[0, 0] = 5.0
        assert float(x[0, 0]) == -3.0
    else:
        assert not np.shares_memory(copied, np.asarray(x))
    shared = np.from_dlpack(x, copy=False)
    np.testing.assert_array_equal(shared, sample("float64"))


@DEVICES
def test_from_dlpack_onto_a_device(device: xp.Device) -> None:
    a = sample("float32")
    x = xp.from_dlpack(a, device=device)
    assert x.device == device and x.dtype == xp.float32
    np.testing.assert_array_equal(np.asarray(x), a)
    other = LAZY if device == EAGER else EAGER
    y = xp.from_dlpack(x, device=other)
    assert y.device == other
    np.testing.assert_array_equal(np.asarray(y), a)
    z = xp.from_dlpack(x, device=device, copy=True)
    assert z.device == device
    with pytest.raises((ValueError, BufferError)):
        xp.from_dlpack(x, device=other, copy=False)


@DEVICES
@pytest.mark.parametrize("tier", [None, 1], ids=["interpreted", "compiled"])
def test_writes_through_dlpack_exports_and_imports(device: xp.Device, tier: Any) -> None:
    """DLPack exchanges with NumPy share memory as numpy.asarray does, on both devices and
    tiers (docs/interop.md, "Writes through DLPack"): a write into np.from_dlpack(x), of an array
    or of a view, reaches x and its views; a write into a NumPy array imported with
    from_dlpack (copy None or False) is seen by the next read and operation; copy=True is
    independent; x10array's own writes copy first; read-only NumPy views export read-only."""
    from x10array._backends import lazy as _lazy

    with _lazy.compile_threshold(tier):
        x = pending(sample("float64"), device)
        row = x[1, ...]
        exported = np.from_dlpack(x)
        assert np.shares_memory(exported, np.from_dlpack(row))  # a view's export: NumPy's view of the base's
        if NUMPY_DLPACK_WRITES:  # (NumPy 2.1 imports read-only, its own arrays too)
            assert exported.flags.writeable
            exported[0, 0] = 7.0
            np.from_dlpack(row)[2] = -4.0
        else:
            assert not exported.flags.writeable
            x[0, 0], x[1, 2] = 7.0, -4.0
        assert float(x[0, 0]) == 7.0
        assert float(x[1, 2]) == -4.0 and float(row[2]) == -4.0
        for _ in range(3):  # the same graph again: compiled at its first sighting with tier 1
            np.testing.assert_array_equal(np.asarray(x + 1.0, copy=True)[:, 0], [8.0, 1.0])
        with pytest.raises(ValueError):  # read-only, as NumPy's broadcast_to
            np.from_dlpack(xp.broadcast_to(x[0, 0], (2, 2)))[0, 0] = 1.0
        independent = np.from_dlpack(x, copy=True)
        assert not np.shares_memory(independent, np.from_dlpack(x))
        if NUMPY_DLPACK_WRITES:
            independent[0, 0] = 0.5
        assert float(x[0, 0]) == 7.0

        for copy in (None, False):
            a = sample("float64")
            y = xp.from_dlpack(a, device=device, copy=copy)
            assert y.device == device
            a[0, 0] = 42.0  # the producer writes after the import: y is a's memory
            assert float(y[0, 0]) == 42.0
            for step in range(3):
                a[1, 1] = float(step)
                np.testing.assert_array_equal(np.asarray(y * 2.0, copy=True)[1], [0.0, 2.0 * step, 4.0])
            assert a.flags.writeable  # (operations never take the producer's buffer over)
            y[0, 1] = -1.0  # y's own write: a new value, the producer's memory unchanged
            assert a[0, 1] == -2.0 and float(y[0, 1]) == -1.0
        a = sample("float64")
        y = xp.from_dlpack(a, device=device, copy=True)
        a[0, 0] = 42.0
        assert float(y[0, 0]) == -3.0


@DEVICES
@pytest.mark.parametrize("copy", [None, False])
def test_from_dlpack_of_numpy_allocates_no_copy(device: xp.Device, copy: bool | None) -> None:
    """Importing a writable NumPy array (copy None or False) makes its memory the array's value
    on both devices: nothing of the buffer's size is allocated on the way in (the lazy import
    once placed a copy, then dropped it for the producer's buffer), and the array's export is
    the producer's memory. Measured with tracemalloc, which NumPy reports its buffers to."""
    import tracemalloc

    a = np.arange(1 << 18, dtype=np.float64)  # 2 MiB
    tracemalloc.start()
    try:
        y = xp.from_dlpack(a, device=device, copy=copy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < a.nbytes // 4, peak
    assert np.shares_memory(np.from_dlpack(y), a)
    a[7] = -1.0
    assert float(y[7]) == -1.0


@DEVICES
def test_numpy_ufuncs_convert_and_operators_refuse(device: xp.Device) -> None:
    """docs/interop.md's ufunc rule: a NumPy ufunc called by name reads the array (a pending
    lazy value computed) and returns a NumPy array, as with array-api-strict (SciPy's
    `np.abs(zpk[1])`); NumPy's operators, in place too, stay a TypeError; an Array as a
    ufunc's `out=` is refused, so no result is written where it could be lost."""
    x = pending(sample("float64"), device)
    got = np.abs(x)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, np.abs(sample("float64")))
    np.testing.assert_array_equal(np.maximum(x, 0.0), np.maximum(sample("float64"), 0.0))
    b = np.ones((2, 3))
    for mix in (lambda: b + x, lambda: b * x, lambda: b < x, lambda: x - b):
        with pytest.raises(TypeError, match="do not mix"):
            mix()
    with pytest.raises(TypeError, match="do not mix"):
        b += x
    np.testing.assert_array_equal(b, np.ones((2, 3)))
    with pytest.raises(TypeError):
        np.negative(b, out=x)
    np.testing.assert_array_equal(np.asarray(x), sample("float64"))


def test_from_dlpack_refuses_non_producers() -> None:
    with pytest.raises(AttributeError):
        xp.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="from_dlpack"):
        xp.from_dlpack(np.ones(2, dtype=np.float16))  # not a standard dtype


@DEVICES
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "int64", "float32", "float64", "complex64", "complex128"])
def test_dlpack_round_trip_with_jax(device: xp.Device, dtype: str) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a = sample(dtype)
    with jax.enable_x64(True):
        j = jnp.from_dlpack(pending(a, device))
        assert j.dtype == a.dtype
        np.testing.assert_array_equal(np.asarray(j), a)
        back = xp.from_dlpack(j, device=device)
        assert back.device == device and back.dtype.name == dtype
        np.testing.assert_array_equal(np.asarray(back), a)


@DEVICES
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int64", "float32", "float64", "complex128"])
def test_dlpack_round_trip_with_torch(device: xp.Device, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    a = sample(dtype)
    t = torch.from_dlpack(pending(a, device))
    np.testing.assert_array_equal(t.numpy(), a)
    back = xp.from_dlpack(t, device=device)
    assert back.device == device and back.dtype.name == dtype
    np.testing.assert_array_equal(np.asarray(back), a)
    if device == EAGER:  # CPU memory is shared both ways where nothing forbids it
        x = xp.asarray(a, device=EAGER)
        assert np.shares_memory(torch.from_dlpack(x).numpy(), np.asarray(x))


# -- array-api-compat ---------------------------------------------------------------------


@DEVICES
def test_array_api_compat_helpers(device: xp.Device) -> None:
    compat = pytest.importorskip("array_api_compat")
    x = pending(sample("float64", (3, 4)), device)
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x, 1.0, None) is xp
    assert compat.is_array_api_obj(x)
    assert compat.device(x) == device
    assert compat.size(x) == 12
    assert compat.size(x[:0]) == 0
    assert compat.is_writeable_array(x)
    for target in (EAGER, LAZY, xp.Device("cpu", 1, "eager")):
        moved = compat.to_device(x, target)
        assert moved.device == target
        np.testing.assert_array_equal(np.asarray(moved), sample("float64", (3, 4)))
    assert not compat.is_numpy_array(x) and not compat.is_jax_array(x)


def test_array_api_compat_is_lazy_array_eager() -> None:
    compat = pytest.importorskip("array_api_compat")
    assert compat.is_lazy_array(xp.asarray([1.0, 2.0], device=EAGER)) is False


@pytest.mark.xfail(
    strict=True,
    reason="array-api-compat classes an unknown library's array as lazy only when bool() raises (or its shape "
    "has None); x10array's lazy arrays materialize on bool(), as scikit-learn needs, so it answers False "
    "(see docs/interop.md)",
)
def test_array_api_compat_is_lazy_array_lazy() -> None:
    compat = pytest.importorskip("array_api_compat")
    assert compat.is_lazy_array(pending(sample("float64"), LAZY)) is True


# -- the lazy backend when consumers read values in turn ----------------------------------


def test_values_read_one_by_one_keep_shared_inputs() -> None:
    """Reading one lazy value (float) must not donate an input that another pending value,
    read later (here through DLPack), still needs. (Found with scikit-learn's lbfgs loop.)"""
    for _ in range(3):  # the third round runs compiled programs, where donation happens
        w = xp.asarray(2.0, device=LAZY)
        a = w * 3.0  # stays pending, behind `a`
        s = a + 1.0
        del w  # the input is now referenced by the graph only
        assert float(s) == 7.0
        assert np.from_dlpack(a).item() == 6.0


def _consume(x: Any) -> np.ndarray:
    return np.asarray(x)


def test_every_value_read_materializes_once() -> None:
    x = pending(sample("float64"), LAZY)
    before = xp.metrics()
    _consume(x)
    _consume(x)
    np.from_dlpack(x)
    assert (xp.metrics() - before).execute_count + (xp.metrics() - before).interpreted_graphs == 1


def test_a_pre_1_0_zero_copy_export_of_a_kept_view_of_a_lazy_value():
    """A lazy value may be a view of another node's read-only memory (the interpreter keeps
    `pts[:, 0]` as such, interpreter._kept_view). `__dlpack__(copy=False)` without a
    `max_version` (a consumer that cannot be told "read-only") exports it as it exports a value
    of its own memory: the buffer itself, no BufferError (array-api-tests' test_dunder_dlpack
    on the lazy device found it), and the memory is read-only again afterwards."""
    host = np.arange(8.0).reshape(4, 2)
    pts = xp.asarray(host, device=LAZY)
    x = pts[:, 0]
    float(xp.sum(x * 2.0))  # (x is alive: computed as a view of pts's value)
    value = np.asarray(x._data.value)
    assert value.base is not None
    capsule = x.__dlpack__(copy=False)
    assert type(capsule).__name__ == "PyCapsule"
    assert not value.flags.writeable and not np.asarray(pts._data.value).flags.writeable
    np.testing.assert_array_equal(np.from_dlpack(x), host[:, 0])
