"""What each kind of device can do, in one table: its default dtypes, the dtypes it holds,
how DLPack names it, and the operations its XLA backend has no kernel for.

The standard lets a library support a different subset of dtypes per device and have
different default dtypes per device (`__array_namespace_info__().dtypes(device=...)` and
`.default_dtypes(device=...)` report them). Every rule that depends on the kind of device
reads `capabilities(device)`: creation functions without a dtype, the refusal of a dtype a
device does not hold, DLPack export, and the refusal of an operation a device lacks.

**TPUs.** The defaults are float32, complex64 and int32, as in JAX. Index results
(argmax, argsort, nonzero, searchsorted, unique's indices) stay int64 as on every device:
XLA's 64-bit integers are exact on TPUs, and arrays of more than 2**31 elements fit in a
TPU's memory. A TPU has no float64 units: XLA emulates float64 with pairs of float32, which
keeps about 46 bits of the significand on additions and logarithms and float32's exponent
range (1e300 becomes infinity, 1e-300 zero), has no LU decomposition (solve, inv, det,
slogdet) and no FFT in float64, and aborts the process when converting float64 to
complex128. That is not IEEE float64, so float64 and complex128 are refused on TPUs with a
ValueError naming the function (use float32, or a CPU device for float64 work). int64 and
uint64 are exact there (XLA emulates them with 32-bit integers) and stay available.

**Testing without a TPU.** The setting X10ARRAY_CPU_PROFILE=tpu makes the CPU devices declare
a TPU's capabilities (their arrays still live in host memory), so every TPU rule runs in
tests on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import dtypes as _dtypes
from . import settings
from .devices import DeviceKind
from .dtypes import DType

if TYPE_CHECKING:
    from .devices import Device

__all__ = ["Capabilities", "CAPABILITIES", "capabilities", "check_dtype_on", "check_supported"]


@dataclass(frozen=True)
class Capabilities:
    """What one kind of device can do (see the module's docstring).

    `dlpack_device_type` is the DLPack device type of its memory (kDLCPU = 1, kDLCUDA = 2),
    or None where DLPack has none (TPUs): an export is then always a copy to the host.
    `missing` says, in words, why the standard's dtypes absent from `dtypes` are absent.
    `unsupported` maps a function's name to why the device cannot run it.
    `cold_graphs` says where the lazy device runs a graph it has not compiled (a cold graph):
    "host", with NumPy's kernels on the host, where the host's memory is the device's (a CPU);
    "device", op by op on the device through each primitive's own program (an accelerator,
    whose values then never leave it; lazy/interpreter.run_on_device)."""

    name: str
    default_float: DType
    default_complex: DType
    default_int: DType
    default_index: DType
    dtypes: tuple[DType, ...]
    missing: str = ""
    dlpack_device_type: int | None = 1
    unsupported: tuple[tuple[str, str], ...] = ()
    cold_graphs: str = "device"

    def holds(self, dtype: DType) -> bool:
        return dtype in self.dtypes

    def default_dtypes(self) -> dict[str, DType]:
        """`__array_namespace_info__().default_dtypes()`'s dictionary."""
        return {
            "real floating": self.default_float,
            "complex floating": self.default_complex,
            "integral": self.default_int,
            "indexing": self.default_index,
        }

    def default_for(self, kind: type) -> DType:
        """The default dtype for a Python scalar type (bool, int, float, complex)."""
        if kind is bool:
            return _dtypes.bool
        if kind is int:
            return self.default_int
        if kind is complex:
            return self.default_complex
        return self.default_float


_FULL_WIDTH = dict(
    default_float=_dtypes.float64,
    default_complex=_dtypes.complex128,
    default_int=_dtypes.int64,
    default_index=_dtypes.int64,
    dtypes=_dtypes.ALL_DTYPES,
)

_NO_EIG = "XLA has no eigendecomposition of general (non-symmetric) matrices on TPUs; use eigh for symmetric ones"

CAPABILITIES: dict[DeviceKind, Capabilities] = {
    DeviceKind.CPU: Capabilities("CPU", cold_graphs="host", **_FULL_WIDTH),  # type: ignore[arg-type]
    DeviceKind.GPU: Capabilities("GPU", dlpack_device_type=2, **_FULL_WIDTH),  # type: ignore[arg-type]
    DeviceKind.TPU: Capabilities(
        "TPU",
        default_float=_dtypes.float32,
        default_complex=_dtypes.complex64,
        default_int=_dtypes.int32,
        default_index=_dtypes.int64,
        dtypes=tuple(d for d in _dtypes.ALL_DTYPES if d not in (_dtypes.float64, _dtypes.complex128)),
        missing=(
            "a TPU has no float64: XLA emulates it with float32's exponent range (1e300 becomes inf) and"
            " without LU decompositions or FFTs; use float32, or a CPU device for float64 work"
        ),
        dlpack_device_type=None,
        unsupported=(("eig", _NO_EIG), ("eigvals", _NO_EIG)),
    ),
}


def capabilities(device: Device) -> Capabilities:
    """The capabilities of `device`'s kind (a CPU's are a TPU's under X10ARRAY_CPU_PROFILE=tpu)."""
    kind = device.kind
    if kind is DeviceKind.CPU:
        try:
            profile = settings.cached["X10ARRAY_CPU_PROFILE"]
        except KeyError:
            profile = settings.get("X10ARRAY_CPU_PROFILE")
        if profile == "tpu":
            kind = DeviceKind.TPU
    return CAPABILITIES[kind]


def _name(device: Device) -> str:
    name = f"{device.kind.name}:{device.ordinal}:{device.backend.name}"
    if device.kind is DeviceKind.CPU and capabilities(device) is not CAPABILITIES[DeviceKind.CPU]:
        name += ", a CPU declaring a TPU's capabilities (X10ARRAY_CPU_PROFILE=tpu)"
    return name


def check_dtype_on(device: Device, dtype: DType, fname: str) -> DType:
    """`dtype`, if `device` holds it; else a ValueError naming `fname`, the device and why."""
    caps = capabilities(device)
    if dtype not in caps.dtypes:
        raise ValueError(
            f"{fname}: {dtype.name} is not supported on {caps.name} devices ({_name(device)}): {caps.missing}"
        )
    return dtype


def check_supported(device: Device, fname: str) -> None:
    """ValueError where `device` cannot run the function `fname` (the table's `unsupported`)."""
    for name, why in capabilities(device).unsupported:
        if name == fname:
            raise ValueError(f"{fname}: not available on {_name(device)}: {why}")
