"""Per-device capabilities (x10array/_core/capabilities.py), run on the CPU: under
X10ARRAY_CPU_PROFILE=tpu the CPU devices declare a TPU's capabilities, so every TPU rule
(default dtypes, no float64/complex128, DLPack through the host, unsupported functions) is
tested on a machine without one. The matmul precision setting is checked in the lowering."""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
import x10array.debug as xdebug
from x10array._core import settings

DEVICES = ["cpu:0:eager", "cpu:0:xla"]


@pytest.fixture
def tpu_profile():
    with settings.override(X10ARRAY_CPU_PROFILE="tpu"):
        yield


@pytest.mark.parametrize("device", DEVICES)
def test_tpu_profile_default_dtypes_of_creation_functions(tpu_profile, device):
    made = {
        "asarray(float)": xp.asarray(1.5, device=device),
        "asarray(list of floats)": xp.asarray([1.0, 2.0], device=device),
        "zeros": xp.zeros(2, device=device),
        "ones": xp.ones(2, device=device),
        "empty": xp.empty(2, device=device),
        "full(float)": xp.full(2, 0.5, device=device),
        "arange(float)": xp.arange(0.0, 1.0, 0.25, device=device),
        "linspace": xp.linspace(0, 1, 3, device=device),
        "eye": xp.eye(2, device=device),
        "fftfreq": xp.fft.fftfreq(4, device=device),
    }
    for name, x in made.items():
        assert x.dtype == xp.float32, name
    assert xp.asarray(3, device=device).dtype == xp.int32
    assert xp.arange(3, device=device).dtype == xp.int32
    assert xp.full(2, 7, device=device).dtype == xp.int32
    assert xp.asarray(1j, device=device).dtype == xp.complex64
    assert xp.linspace(0, 1j, 3, device=device).dtype == xp.complex64
    assert xp.full(2, True, device=device).dtype == xp.bool


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_profile_keeps_the_cpu_defaults(device):
    assert settings.get("X10ARRAY_CPU_PROFILE") == "cpu"
    assert xp.asarray(1.5, device=device).dtype == xp.float64
    assert xp.arange(3, device=device).dtype == xp.int64
    assert xp.zeros(2, device=device).dtype == xp.float64
    info = xp.__array_namespace_info__()
    assert info.default_dtypes(device=xp.Device("cpu"))["real floating"] == xp.float64
    assert "float64" in info.dtypes(device=xp.Device("cpu"))


@pytest.mark.parametrize("profile", ["cpu", "tpu"])
def test_inspection_tells_what_the_device_does(profile):
    """default_dtypes() agrees with what creation functions make, and dtypes() lists exactly
    the dtypes an array can be made in on that device."""
    info = xp.__array_namespace_info__()
    with settings.override(X10ARRAY_CPU_PROFILE=profile):
        for device in (xp.Device("cpu"), xp.Device("cpu", 0, "xla")):
            defaults = info.default_dtypes(device=device)
            assert defaults["real floating"] == xp.asarray(0.0, device=device).dtype
            assert defaults["complex floating"] == xp.asarray(0j, device=device).dtype
            assert defaults["integral"] == xp.asarray(0, device=device).dtype
            assert defaults["indexing"] == xp.argmax(xp.asarray([1, 3, 2], device=device)).dtype
            held = info.dtypes(device=device)
            for name in ("bool", "int8", "int32", "int64", "uint64", "float32", "float64", "complex64", "complex128"):
                dtype = getattr(xp, name)
                if name in held:
                    assert xp.zeros(1, dtype=dtype, device=device).dtype == dtype
                else:
                    with pytest.raises(ValueError, match=f"zeros: {name} is not supported"):
                        xp.zeros(1, dtype=dtype, device=device)
            assert set(info.dtypes(device=device, kind="real floating")) <= set(held)
        assert info.default_dtypes() == info.default_dtypes(device=xp.__array_namespace_info__().default_device())
    if profile == "tpu":
        assert sorted(held) == sorted(n for n in info.dtypes(device=device) if n not in ("float64", "complex128"))
        assert "float64" not in held and "complex128" not in held and "int64" in held


@pytest.mark.parametrize("device", DEVICES)
def test_tpu_profile_refuses_float64_with_the_function_and_the_reason(tpu_profile, device):
    x = xp.ones(3, device=device)
    cases = {
        "asarray": lambda: xp.asarray(np.zeros(2), device=device),
        "asarray ": lambda: xp.asarray([1.0], dtype=xp.float64, device=device),
        "full": lambda: xp.full(2, 1.0, dtype=xp.complex128, device=device),
        "arange": lambda: xp.arange(3, dtype=xp.float64, device=device),
        "linspace": lambda: xp.linspace(0, 1, 3, dtype=xp.float64, device=device),
        "astype": lambda: xp.astype(x, xp.float64),
        "sum": lambda: xp.sum(x, dtype=xp.float64),
        "from_dlpack": lambda: xp.from_dlpack(np.zeros(2), device=device),
        "fftfreq": lambda: xp.fft.fftfreq(4, dtype=xp.float64, device=device),
    }
    for fname, make in cases.items():
        with pytest.raises(
            ValueError, match=rf"^{fname.strip()}: (float64|complex128) is not supported on TPU"
        ) as info:
            make()
        assert "X10ARRAY_CPU_PROFILE=tpu" in str(info.value) and "float32" in str(info.value)


def test_astype_to_a_device_that_holds_the_dtype_moves_first(tpu_profile):
    """astype(x, dtype, device=...) on a device that lacks `dtype` for one that holds it: moved,
    then cast (no float64 on the device that lacks it)."""
    x = xp.asarray([1, 2], device="cpu:0:xla")
    with pytest.raises(ValueError, match="astype: float64 is not supported"):
        xp.astype(x, xp.float64, device="cpu:0:eager")


@pytest.mark.parametrize("device", DEVICES)
def test_tpu_profile_python_scalars_promote_to_the_device_defaults(tpu_profile, device):
    ints = xp.asarray([1, 2], dtype=xp.int32, device=device)
    assert (ints + 1.5).dtype == xp.float32
    assert (ints * 1j).dtype == xp.complex64
    assert (xp.asarray([1.0], device=device) + 2).dtype == xp.float32
    with settings.override(X10ARRAY_CPU_PROFILE="cpu"):
        assert (xp.asarray([1, 2], dtype=xp.int32, device=device) + 1.5).dtype == xp.float64


@pytest.mark.parametrize("device", DEVICES)
def test_tpu_profile_accumulates_integers_in_the_default_integer(tpu_profile, device):
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int8, device=device)).dtype == xp.int32
    assert xp.sum(xp.asarray([1, 2], dtype=xp.uint8, device=device)).dtype == xp.uint32
    assert xp.prod(xp.asarray([1, 2], dtype=xp.int64, device=device)).dtype == xp.int64
    assert xp.cumulative_sum(xp.asarray([1, 2], dtype=xp.uint64, device=device)).dtype == xp.uint64
    with settings.override(X10ARRAY_CPU_PROFILE="cpu"):
        assert xp.sum(xp.asarray([1, 2], dtype=xp.int8, device=device)).dtype == xp.int64


def test_tpu_profile_refuses_what_xla_has_no_tpu_kernel_for(tpu_profile):
    a = xp.asarray([[2.0, 1.0], [0.0, 3.0]], device="cpu:0:eager")
    for fn in (xp.linalg.eig, xp.linalg.eigvals):
        with pytest.raises(ValueError, match=rf"^{fn.__name__}: not available on CPU:0:EAGER.*eigh"):
            fn(a)
    assert xp.linalg.eigvalsh(a + a.mT).dtype == xp.float32  # the symmetric one runs


@pytest.mark.parametrize("device", DEVICES)
def test_tpu_profile_dlpack_exports_host_copies(tpu_profile, device):
    x = xp.asarray([1.0, 2.0, 3.0], device=device)
    assert x.__dlpack_device__() == (1, 0)
    host = np.from_dlpack(x)
    np.testing.assert_array_equal(host, [1.0, 2.0, 3.0])
    host[0] = 99.0  # a copy: x is unchanged
    assert float(x[0]) == 1.0
    assert x.__dlpack__(dl_device=(1, 0), copy=True) is not None
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    back = xp.from_dlpack(x, device=device)
    assert back.device == x.device and bool(xp.all(back == x))
    with settings.override(X10ARRAY_CPU_PROFILE="cpu"):
        y = xp.asarray([1.0, 2.0], device="cpu:0:eager")
        np.from_dlpack(y)[0] = 5.0  # a CPU's export is zero-copy
        assert float(y[0]) == 5.0


def _dots(text: str) -> list[str]:
    return [line for line in text.splitlines() if "dot_general" in line]


@pytest.mark.parametrize("setting", ["highest", "high", "default"])
def test_matmul_precision_setting_reaches_the_lowering(setting):
    a = xp.ones((4, 4), dtype=xp.float32, device="cpu:0:xla")
    with settings.override(X10ARRAY_MATMUL_PRECISION=setting):
        products = [a @ a, xp.tensordot(a, a, axes=1), xp.vecdot(a, a), xp.linalg.matmul(a, a.mT)]
        texts = [xdebug.stablehlo(p) for p in products]
        wide = xdebug.stablehlo(xp.astype(a, xp.float64) @ xp.astype(a, xp.float64))
        np.testing.assert_array_equal(np.asarray(products[0]), np.full((4, 4), 4.0, np.float32))
    want = f"precision = [{setting.upper()}, {setting.upper()}]"
    for text in texts:
        assert _dots(text) and all(want in line for line in _dots(text)), text
    assert all("precision = [HIGHEST, HIGHEST]" in line for line in _dots(wide))  # float64: never reduced


def test_matmul_precision_programs_are_kept_apart():
    """A product recorded under one precision and again under another is a different graph:
    the second does not reuse the first's program."""
    a = xp.ones((3, 3), dtype=xp.float32, device="cpu:0:xla")
    with settings.override(X10ARRAY_MATMUL_PRECISION="default"):
        first = xdebug.graph_text(a @ a)
    second = xdebug.graph_text(a @ a)
    assert first != second and "default" in first


def _complex_operations(device):
    """Operations that take a Python complex (a fill value, a binary operand) on `device`."""
    z = xp.asarray([1 + 1j, 2 - 1j], dtype=xp.complex64, device=device)
    f = xp.asarray([1.0, 2.0], dtype=xp.float32, device=device)
    return [
        xp.full((3,), 1.5 + 2j, dtype=xp.complex64, device=device),
        xp.full_like(z, 2.0),
        f * (1 + 2j),
        z + (0.1 + 0.2j),
        xp.where(f > 1.0, z, 3j),
    ]


def test_tpu_profile_no_complex128_value_enters_a_program(tpu_profile, monkeypatch):
    """XLA's TPU compiler aborts the process converting a complex128 value (a Python complex
    as jax passes it) to anything: on a device without complex128 no program takes one,
    op by op (the eager device, a lazy cold graph) or compiled."""
    from x10array._core import op_programs

    make = op_programs.make_jitted
    seen = []

    def checked(prim, kwargs):
        fn = make(prim, kwargs)

        def run(*args):
            kinds = [np.dtype(a.dtype) if hasattr(a, "dtype") else type(a) for a in args]
            seen.extend(kinds)
            assert complex not in kinds and np.dtype(np.complex128) not in kinds, (prim.name, kinds)
            return fn(*args)

        return run

    monkeypatch.setattr(op_programs, "_JITTED", op_programs.LRU("test programs", 64, register=False))
    monkeypatch.setattr(op_programs, "make_jitted", checked)
    old = xp.set_cpu_kernels("xla")
    try:
        eager = _complex_operations("cpu:0:eager")
        lazy = _complex_operations("cpu:0:xla")  # cold: op by op
        for a, b in zip(eager, lazy):
            assert a.dtype == b.dtype == xp.complex64
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    finally:
        xp.set_cpu_kernels(old)
    assert np.dtype(np.complex64) in seen  # (the scalars did reach the programs, as complex64)
    for x in _complex_operations("cpu:0:xla"):  # the compiled tier's program of the same graphs
        text = xdebug.stablehlo(x) if x._data.value is None else ""
        assert "complex<f64>" not in text


def test_cpu_keeps_python_complex_scalars_weak(monkeypatch):
    """On a CPU (complex128 held) a Python complex stays a Python complex: complex128 results."""
    z = xp.asarray([1.0], dtype=xp.float64, device="cpu:0:xla") * (1 + 2j)
    assert z.dtype == xp.complex128
