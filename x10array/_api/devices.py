"""Controls of the devices' backends: running pending work, choosing eager CPU kernels."""

from __future__ import annotations

from typing import Any

from .._core import settings
from .._core.backend import impl, registered
from .._core.devices import Device, as_device

__all__ = ["lazy_barrier", "set_cpu_kernels"]


def lazy_barrier(devices: Any = None, wait: bool = False) -> None:
    """Materialize every live pending array on `devices` (default: all lazy devices) in one
    compiled program per device, so work they share is computed once (Swift for
    TensorFlow's `LazyTensorBarrier()`). Asynchronous unless `wait=True`.

    On a lazy device operations are recorded, not run; a barrier cuts the recorded graph and
    runs it, interpreted while the graph is cold and compiled once compiling pays, the program
    then reused by every step of the same structure. Place one where a step ends (after the
    optimizer's update, after each evaluation batch): without it a loop records one endless
    graph. It returns once the work is queued, so Python records the next step while XLA runs
    this one; `wait=True` blocks until it is done. `devices`: a device, a list of them, or None
    for every lazy device. Reading a value (`float(x)`) also materializes what it needs::

        import x10array as xp

        lazy = xp.Device.default_xla
        before = xp.metrics()
        w = xp.ones((3,), device=lazy)
        for step in range(5):
            w = w - 0.1 * xp.sin(w)      # recorded
            xp.lazy_barrier()            # one graph per step, the same each time
        print((xp.metrics() - before).barriers)   # 5

    The guide: :doc:`/eager-and-lazy`; what makes a step slow: :doc:`/troubleshooting`. The
    other lazy tools: `compile`, `metrics`, `transfer_guard`.
    """
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
