"""Devices: naming, equality and order, defaults, the environment variable, `device_scope`,
bit-for-bit copies between devices, and the XLA op-by-op eager kernels."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import threading

import jax
import numpy as np
import pytest
from _util import assert_bitwise_equal, assert_values

import x10array as xp
from x10array._core.devices import parse_device

CPU0 = xp.Device("cpu", 0)
CPU1 = xp.Device("cpu", 1)


def _has_accelerator() -> bool:
    for kind in ("gpu", "tpu"):
        try:
            if jax.devices(kind):
                return True
        except RuntimeError:
            pass
    return False


# -- naming, equality, order -------------------------------------------------------------------


def test_repr_and_str() -> None:
    assert repr(CPU0) == "Device(kind=CPU, ordinal=0, backend=EAGER)"
    assert str(CPU0) == "Device(kind=CPU, ordinal=0, backend=EAGER)"
    assert repr(xp.Device("cpu", 3, "xla")) == "Device(kind=CPU, ordinal=3, backend=XLA)"


def test_printing(capsys: pytest.CaptureFixture[str]) -> None:
    print(CPU0)
    assert capsys.readouterr().out == "Device(kind=CPU, ordinal=0, backend=EAGER)\n"


def test_constructor_spellings_are_equal() -> None:
    same = [
        xp.Device("cpu", 0),
        xp.Device("CPU"),
        xp.Device(xp.DeviceKind.CPU, 0, xp.Backend.EAGER),
        xp.Device("cpu", 0, "eager"),
        xp.Device("Cpu", 0, "EAGER"),
    ]
    for d in same:
        assert d == CPU0 and hash(d) == hash(CPU0)
        assert d.kind is xp.DeviceKind.CPU and d.ordinal == 0 and d.backend is xp.Backend.EAGER
    assert len(set(same)) == 1


def test_inequality() -> None:
    devices = [xp.Device("cpu", i, b) for i in range(4) for b in ("eager", "xla")]
    assert len(set(devices)) == 8
    for a in devices:
        for b in devices:
            assert (a == b) == (a is b or (a.ordinal, a.backend) == (b.ordinal, b.backend))
            assert (a != b) == (not (a == b))
    assert CPU0 != "cpu" and CPU0 != 0 and CPU0 is not None
    assert {CPU0: "a", CPU1: "b"}[xp.Device("cpu", 1)] == "b"


def test_ordering_is_total_and_consistent() -> None:
    devices = [xp.Device("cpu", i, b) for i in (3, 1, 0, 2) for b in ("xla", "eager")]
    ordered = sorted(devices)
    assert ordered[0] == CPU0
    for a, b in zip(ordered, ordered[1:]):
        assert a < b and not b < a and a != b
    assert sorted(reversed(ordered)) == ordered
    assert [d.ordinal for d in ordered] == sorted(d.ordinal for d in ordered)
    with pytest.raises(TypeError):
        CPU0 < "cpu"  # noqa: B015


def test_immutable_and_picklable() -> None:
    with pytest.raises(AttributeError):
        CPU0.ordinal = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(CPU1)) == CPU1
    assert pickle.loads(pickle.dumps(xp.Device.default_xla)) == xp.Device.default_xla


def test_kinds_and_backends_print_by_name() -> None:
    assert repr(xp.DeviceKind.CPU) == "CPU" and str(xp.Backend.XLA) == "XLA"
    assert {k.name for k in xp.DeviceKind} >= {"CPU", "GPU", "TPU"}
    assert {b.name for b in xp.Backend} == {"EAGER", "XLA"}


def test_missing_devices_are_rejected() -> None:
    n = len(jax.devices("cpu"))
    assert n >= 2, "conftest forces several host devices"
    with pytest.raises(ValueError, match="Device"):
        xp.Device("cpu", n)
    if not _has_accelerator():
        with pytest.raises(ValueError, match="GPU"):
            xp.Device("gpu", 0)


# -- defaults ----------------------------------------------------------------------------------


def test_default_devices() -> None:
    default, default_xla = xp.Device.default, xp.Device.default_xla
    assert default.backend is xp.Backend.EAGER and not default.is_lazy
    assert default_xla.backend is xp.Backend.XLA and default_xla.is_lazy
    assert (default.kind, default.ordinal) == (default_xla.kind, default_xla.ordinal) and default.ordinal == 0
    if _has_accelerator():
        assert default.kind in (xp.DeviceKind.GPU, xp.DeviceKind.TPU)
    else:
        assert default.kind is xp.DeviceKind.CPU
    assert xp.Device.default is default  # cached


def test_info_devices() -> None:
    info = xp.__array_namespace_info__()
    devices = info.devices()
    for i in range(4):
        assert xp.Device("cpu", i) in devices and xp.Device("cpu", i, "xla") in devices
    assert len(set(devices)) == len(devices)
    assert info.default_device() in devices


def test_creation_uses_the_default_device() -> None:
    if "X10ARRAY_DEFAULT_DEVICE" in os.environ:
        pytest.skip("X10ARRAY_DEFAULT_DEVICE is set for this run")
    assert xp.zeros(3).device == xp.Device.default
    assert xp.__array_namespace_info__().default_device() == xp.Device.default


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("eager", xp.Device.default),
        ("xla", xp.Device.default_xla),
        (" XLA ", xp.Device.default_xla),
        ("cpu:1:eager", xp.Device("cpu", 1)),
        ("CPU:2:XLA", xp.Device("cpu", 2, "xla")),
        ("cpu:0:xla", xp.Device("cpu", 0, "xla")),
    ],
)
def test_parse_device(text: str, expected: xp.Device) -> None:
    assert parse_device(text) == expected


@pytest.mark.parametrize(
    "text", ["", "cpu", "cpu:0", "cpu:x:eager", "cpu:0:lazy", "npu:0:eager", "cpu:-1:eager", "cpu:99:eager"]
)
def test_parse_device_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_device(text)


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True, text=True, timeout=120
    )


def test_environment_variable_sets_the_default_device() -> None:
    result = _run(
        """
        import x10array as xp
        print(xp.zeros(3).device)
        print(xp.__array_namespace_info__().default_device())
        with xp.device_scope(xp.Device("cpu", 1)):
            print(xp.ones(2).device)
        print(xp.asarray([1.0]).device)
        """,
        X10ARRAY_DEFAULT_DEVICE="cpu:2:eager",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Device(kind=CPU, ordinal=2, backend=EAGER)",
        "Device(kind=CPU, ordinal=2, backend=EAGER)",
        "Device(kind=CPU, ordinal=1, backend=EAGER)",
        "Device(kind=CPU, ordinal=2, backend=EAGER)",
    ]


def test_a_cpu_only_session_computes_eagerly_without_starting_jax() -> None:
    # importing jax and starting its backends took ~1 s before the first eager operation (the
    # default device asked jax for accelerators); where none can exist it needs no jax at all
    code = """
        import sys
        import x10array as xp
        from x10array._core.devices import accelerators_possible
        # (nor NumPy's submodules that NumPy imports on first use: ~100 ms of import)
        print([m for m in ("numpy.f2py", "numpy.testing", "numpy.ma", "numpy.polynomial") if m in sys.modules])
        a = xp.asarray([[1.0, 2.0], [3.0, 4.5]])
        b = xp.linalg.matmul(a, xp.ones((2, 2))) + xp.sum(a)
        print(float(b[1, 1]), repr(a.device), xp.Device("cpu", 0) == a.device, accelerators_possible())
        print("jax" in sys.modules)
        xp.Device("cpu", 1, "xla")  # (a device jax must count: now it starts)
        print("jax" in sys.modules)
    """
    result = _run(code, JAX_PLATFORMS="cpu")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[]",
        "18.0 Device(kind=CPU, ordinal=0, backend=EAGER) True False",
        "False",
        "True",
    ], result.stdout
    # with jax imported first, asking it is cheap: it decides, as before
    result = _run(
        "import jax, x10array as xp\nfrom x10array._core.devices import accelerators_possible\n"
        "print(accelerators_possible(), xp.Device.default.kind.name)",
        JAX_PLATFORMS="",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "True" and result.stdout.split()[1] == xp.Device.default.kind.name


def test_environment_variable_rejects_garbage() -> None:
    result = _run("import x10array as xp; xp.zeros(3)", X10ARRAY_DEFAULT_DEVICE="cpu-zero")
    assert result.returncode != 0
    assert "X10ARRAY_DEFAULT_DEVICE" in result.stderr and "ValueError" in result.stderr


# -- device_scope ------------------------------------------------------------------------------


def test_device_scope_nests_and_restores() -> None:
    outer = xp.__array_namespace_info__().default_device()
    with xp.device_scope(CPU1) as d:
        assert d == CPU1
        assert xp.zeros(2).device == CPU1
        assert xp.asarray([1, 2]).device == CPU1
        assert xp.__array_namespace_info__().default_device() == CPU1
        with xp.device_scope(xp.Device("cpu", 2)):
            assert xp.arange(3).device == xp.Device("cpu", 2)
            assert xp.zeros(1, device=CPU0).device == CPU0  # an explicit device wins
        assert xp.eye(2).device == CPU1
    assert xp.__array_namespace_info__().default_device() == outer


def test_device_scope_restores_after_an_exception() -> None:
    outer = xp.__array_namespace_info__().default_device()
    with pytest.raises(RuntimeError):
        with xp.device_scope(CPU1):
            raise RuntimeError("boom")
    assert xp.__array_namespace_info__().default_device() == outer


def test_device_scope_is_thread_local() -> None:
    outer = xp.__array_namespace_info__().default_device()
    seen: list[xp.Device] = []
    with xp.device_scope(CPU1):
        t = threading.Thread(target=lambda: seen.append(xp.zeros(1).device))
        t.start()
        t.join()
    assert seen == [outer]


def test_operations_stay_on_the_operands_device() -> None:
    x = xp.asarray([1.0, 2.0], device=CPU1)
    for y in (x + 1.0, xp.exp(x), xp.sum(x), x[0], xp.reshape(x, (2, 1)), xp.zeros_like(x), xp.astype(x, xp.float32)):
        assert y.device == CPU1


# -- copies between devices, bit for bit -------------------------------------------------------


def _bit_patterns(name: str) -> np.ndarray:
    """Values whose bits a lossy copy would change: NaN payloads, -0.0, subnormals, extremes."""
    dtype = np.dtype(name)
    if dtype.kind == "b":
        return np.array([True, False, True, True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 0, 1, info.max // 3], dtype=dtype)
    if dtype.kind == "f":
        bits = {4: np.uint32, 8: np.uint64}[dtype.itemsize]
        nbits = dtype.itemsize * 8
        exp_all_ones = ((1 << (nbits - (23 if nbits == 32 else 52) - 1)) - 1) << (23 if nbits == 32 else 52)
        sign = 1 << (nbits - 1)
        patterns = [
            exp_all_ones | 1,  # signalling-NaN payload
            exp_all_ones | 0x12345,  # NaN payload
            sign | exp_all_ones | 0x2A,  # negative NaN with payload
            sign,  # -0.0
            1,  # smallest subnormal
            sign | 3,  # negative subnormal
            exp_all_ones,  # inf
        ]
        special = np.array(patterns, dtype=bits).view(dtype)
        finite = np.array([np.finfo(dtype).max, -np.finfo(dtype).tiny, 1 / 3], dtype=dtype)
        return np.concatenate([special, finite])
    real = _bit_patterns("float32" if dtype.itemsize == 8 else "float64")
    out = np.empty(real.shape, dtype=dtype)
    out.real = real
    out.imag = real[::-1]
    return out


DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_to_device_copies_bit_for_bit(name: str, kernels: str) -> None:
    host = _bit_patterns(name)
    x = xp.asarray(host, device=CPU0)
    assert_bitwise_equal(np.asarray(x), host)  # import is exact
    y = x.to_device(CPU1)
    assert y.device == CPU1 and y.dtype == x.dtype and y.shape == x.shape
    assert_bitwise_equal(np.asarray(y), host)
    back = y.to_device(CPU0)
    assert back.device == CPU0
    assert_bitwise_equal(np.asarray(back), host)
    assert_bitwise_equal(np.asarray(x), host)  # the source is untouched


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_asarray_device_copy_bit_for_bit(name: str, kernels: str) -> None:
    host = _bit_patterns(name)
    x = xp.asarray(host, device=CPU0)
    y = xp.asarray(x, device=CPU1, copy=True)
    assert y.device == CPU1
    assert_bitwise_equal(np.asarray(y), host)
    z = xp.asarray(x, copy=True)  # same device, a real copy
    assert z.device == CPU0
    assert_bitwise_equal(np.asarray(z), host)
    x[0] = x[1]  # mutating the source does not reach the copies
    assert_bitwise_equal(np.asarray(y), host)
    assert_bitwise_equal(np.asarray(z), host)


def test_to_device_same_device_and_copy_independence() -> None:
    x = xp.asarray([1.0, 2.0, 3.0], device=CPU0)
    assert x.to_device(CPU0).device == CPU0
    y = x.to_device(CPU1)
    y[0] = 100.0
    assert float(x[0]) == 1.0
    x[1] = -5.0
    assert float(y[1]) == 2.0


def test_to_device_eager_to_xla_and_back() -> None:
    host = _bit_patterns("float64")
    lazy = xp.asarray(host, device=CPU0).to_device(xp.Device("cpu", 1, "xla"))
    assert lazy.device.is_lazy
    assert_bitwise_equal(np.asarray(lazy), host)
    assert_bitwise_equal(np.asarray(lazy.to_device(CPU0)), host)


# -- XLA op-by-op eager kernels vs NumPy kernels -----------------------------------------------


def _sample(x: xp.Array, m: xp.Array, v: xp.Array, c: xp.Array) -> dict[str, xp.Array | tuple[xp.Array, ...]]:
    y = xp.asarray(x, copy=True)
    y[1, 1:3] = -1.0
    return {
        "add": x + m,
        "multiply-scalar": x * 2.5,
        "exp": xp.exp(x),
        "sin": xp.sin(x),
        "sqrt": xp.sqrt(xp.abs(x)),
        "divide": x / m,
        "sum": xp.sum(x, axis=0),
        "mean": xp.mean(x),
        "std": xp.std(x, axis=1, correction=1),
        "max": xp.max(x, axis=1, keepdims=True),
        "cumulative_sum": xp.cumulative_sum(x, axis=1),
        "matmul": x @ xp.matrix_transpose(m),
        "reshape": xp.reshape(x, (6, 2)),
        "permute_dims": xp.permute_dims(x, (1, 0)),
        "concat": xp.concat([x, m], axis=0),
        "where": xp.where(x > 0, x, m),
        "getitem": x[1:, ::2],
        "setitem": y,
        "sort": xp.sort(x, axis=1),
        "argsort": xp.argsort(v, stable=True),
        "argmax": xp.argmax(x, axis=0),
        "unique_values": xp.unique_values(v),
        "nonzero": xp.nonzero(x > 0),
        "mask": x[x > 0],
        "inv": xp.linalg.inv(x[:, :3] + 4 * xp.eye(3)),
        "fft": xp.fft.fft(c),
        "astype": xp.astype(x * 10, xp.int32),
        "bitwise": xp.bitwise_xor(xp.astype(v, xp.int64), 5),
        "isnan": xp.isnan(x / 0.0),
        "all-complex": xp.all(xp.asarray([1j, 2j, 1 + 0j])),  # purely imaginary values are true
        "any-complex": xp.any(xp.asarray([0j, 1j])),
    }


def test_xla_kernels_match_numpy_kernels() -> None:
    rng = np.random.default_rng(7)
    hosts = (rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.integers(0, 5, size=9).astype(float),
             rng.normal(size=8) + 1j * rng.normal(size=8))  # fmt: skip
    expected = _sample(*(xp.asarray(h) for h in hosts))
    old = xp.set_cpu_kernels("xla")
    try:
        assert old == "numpy"
        got = _sample(*(xp.asarray(h) for h in hosts))
        assert type(got["add"]._data) is not np.ndarray, "the XLA kernels did not run"
    finally:
        assert xp.set_cpu_kernels(old) == "xla"
    assert got.keys() == expected.keys()
    for name, want in expected.items():
        pairs = zip(got[name], want) if isinstance(want, tuple) else [(got[name], want)]
        for g, w in pairs:
            assert g.dtype == w.dtype, name
            assert g.device == w.device, name
            assert_values(np.asarray(g), np.asarray(w), scale=10, what=name)


def test_mixing_kernels_across_a_switch(xla_kernels: None) -> None:
    x = xp.asarray([1.0, 2.0, 3.0])  # made by XLA kernels
    xp.set_cpu_kernels("numpy")
    y = x + 1.0  # consumed by NumPy kernels
    xp.set_cpu_kernels("xla")
    z = y * 2.0
    np.testing.assert_array_equal(np.asarray(z), [4.0, 6.0, 8.0])


@pytest.mark.parametrize(
    "host",
    [
        np.arange(6, dtype=np.float64).reshape(2, 3),
        np.arange(12, dtype=np.int32)[::3],  # a strided view
        np.array(True),
        np.array([1 + 2j, -0.0], dtype=np.complex64),
        np.array([-0.0, np.nan, np.inf], dtype=np.float32),
        np.zeros((0, 4), dtype=np.uint8),
    ],
    ids=["float64", "strided-int32", "bool-0d", "complex64", "float32-specials", "empty-uint8"],
)
def test_jax_put_makes_the_array_jax_device_put_makes(host: np.ndarray) -> None:
    """`jax_put` (jax's C++ transfer, called directly) gives the array jax.device_put gives:
    same bits, dtype, shape, device and committed flag, and a jitted program called with one
    and then the other traces and compiles once."""
    from x10array._core.devices import jax_put

    device = jax.devices("cpu")[0]
    with jax.enable_x64(True):
        want = jax.device_put(host, device)
    got = jax_put(host, device)
    assert got.dtype == want.dtype == host.dtype and got.shape == want.shape == host.shape
    assert got.devices() == want.devices() == {device} and got.committed and want.committed
    assert_bitwise_equal(np.asarray(got), host)
    with jax.enable_x64(True):
        program = jax.jit(lambda x: x)
        program(want)
        program(got)
        assert program._cache_size() == 1
