"""Controls of the devices' backends: running pending work, choosing eager CPU kernels."""

from __future__ import annotations

from typing import Any

from .._core import settings
from .._core.backend import impl, registered
from .._core.devices import Device, as_device

__all__ = ["lazy_barrier", "set_cpu_kernels"]


def lazy_barrier(devices: Any = None, wait: bool = False) -> None:
    """Materialize every live pending array on `devices` (default: all lazy devices) in one
    compiled program per device, so work they share is computed once (the seed's
    `LazyTensorBarrier()`). Asynchronous unless `wait=True`."""
    if not isinstance(wait, bool):
        raise TypeError(f"lazy_barrier: wait must be a bool, got {type(wait).__name__}")
    if devices is None:
        for backend in registered():
            backend.barrier(None, wait)
        return
    if isinstance(devices, (Device, str)):
        chosen = [as_device(devices, "lazy_barrier")]
    elif isinstance(devices, (list, tuple, set, frozenset)):
        chosen = [_barrier_device(d) for d in devices]
    else:
        raise TypeError(
            "lazy_barrier: devices must be None, a Device, a device string or a sequence of them,"
            f" got {type(devices).__name__}"
        )
    for backend in registered():
        backend.barrier([d for d in chosen if impl(d) is backend], wait)


def _barrier_device(d: Any) -> Device:
    if not isinstance(d, (Device, str)):
        raise TypeError(f"lazy_barrier: devices must be x10array Devices or device strings, got {d!r}")
    return as_device(d, "lazy_barrier")


def set_cpu_kernels(kind: str) -> str:
    """Choose the eager CPU kernels: 'numpy' (default) or 'xla' (op by op). Returns the old
    choice. (The setting X10ARRAY_EAGER_CPU_KERNELS, changed for the whole process.)"""
    if kind not in ("numpy", "xla"):
        raise ValueError(f"set_cpu_kernels: expected 'numpy' or 'xla', got {kind!r}")
    old = settings.get("X10ARRAY_EAGER_CPU_KERNELS")
    settings.set("X10ARRAY_EAGER_CPU_KERNELS", kind)
    return old
