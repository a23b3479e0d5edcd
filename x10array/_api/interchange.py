"""DLPack export of arrays (`__dlpack__`, `__dlpack_device__`) and the device mapping that
`from_dlpack` uses to import.

The value is exported from where it lives: a NumPy buffer (the eager CPU with NumPy kernels)
through NumPy's exporter, a jax buffer (XLA kernels, accelerators) through jax's, so an
export is zero-copy when the consumer allows it. A zero-copy export marks the array
`_shared`: the consumer sees the buffer, so a later write to the array copies first (value
semantics). A lazy (pending) value is materialized first.

DLPack has no device type for TPUs (nor has jax: its TPU arrays raise BufferError from
`__dlpack_device__`). An array on a TPU (or on a CPU that declares a TPU's capabilities,
X10ARRAY_CPU_PROFILE=tpu) exports through the host: `__dlpack_device__()` is
(kDLCPU, 0), the device of the capsule it exports, and `__dlpack__()` hands out a host copy of
the value; `copy=False` raises BufferError, as the standard asks where a copy is needed.
"""

from __future__ import annotations

import enum
import sys
from typing import Any

import numpy as np

from .._core.array import Array
from .._core.backend import impl as backend_impl
from .._core.capabilities import capabilities
from .._core.devices import Device, DeviceKind, current_device, jax_devices

__all__ = ["DLDeviceType", "dlpack_device", "dlpack_export", "device_from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The DLPack device types named by the standard (`__dlpack_device__`)."""

    CPU = 1
    CUDA = 2
    CPU_PINNED = 3
    OPENCL = 4
    VULKAN = 7
    METAL = 8
    VPI = 9
    ROCM = 10
    CUDA_MANAGED = 13
    ONE_API = 14


def _jax_buffer(data: Any) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(data, jax.Array) and not isinstance(data, jax.core.Tracer)


def _value(x: Array) -> Any:
    """The computed buffer of `x` (NumPy or jax), computing a pending value."""
    data = backend_impl(x._device).buffer(x)
    if type(data) is np.ndarray or _jax_buffer(data):
        return data
    return x._host()


def _device_pair(x: Array) -> tuple[DLDeviceType, int]:
    """(type, id) of where the value lives, from the device alone (no materialization)."""
    device = x._device
    if device.kind is DeviceKind.CPU:
        return DLDeviceType.CPU, 0
    if device.kind is DeviceKind.GPU:
        jd = device.jax_device
        version = getattr(getattr(jd, "client", None), "platform_version", "") or ""
        kind = DLDeviceType.ROCM if "rocm" in version.lower() else DLDeviceType.CUDA
        hw = getattr(jd, "local_hardware_id", None)
        return kind, int(hw if hw is not None else device.ordinal)
    raise BufferError(f"__dlpack_device__: DLPack has no device type for {device.kind.name} devices")


def _via_host(x: Array) -> bool:
    """Whether `x`'s device has no DLPack device type: its exports are host copies."""
    return capabilities(x._device).dlpack_device_type is None


def dlpack_device(x: Array) -> tuple[DLDeviceType, int]:
    if _via_host(x):
        return DLDeviceType.CPU, 0
    data = x._data
    if type(data) is np.ndarray:
        return DLDeviceType.CPU, 0
    if _jax_buffer(data):
        kind, ordinal = data.__dlpack_device__()
        return DLDeviceType(int(kind)), int(ordinal)
    return _device_pair(x)


def _device_type(value: Any) -> int:
    if isinstance(value, enum.Enum):
        value = value.value
    return int(value)


def dlpack_export(x: Array, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    """`x.__dlpack__(...)`: a DLPack capsule of x's value, zero-copy unless `copy` or the
    device asks for one (a zero-copy export marks `x` shared)."""
    if copy not in (None, True, False):
        raise ValueError(f"__dlpack__: copy must be True, False or None, got {copy!r}")
    if max_version is not None and (
        not isinstance(max_version, tuple) or len(max_version) != 2 or not all(isinstance(v, int) for v in max_version)
    ):
        raise TypeError(f"__dlpack__: max_version must be a (major, minor) tuple of ints, got {max_version!r}")
    here = dlpack_device(x)
    if _via_host(x):
        if copy is False:
            raise BufferError(
                f"__dlpack__: an array on {x._device!r} is exported as a copy in host memory (DLPack has no"
                " device type for TPUs), but copy=False"
            )
        _export_to_host(here, dl_device, stream, True)
        return _capsule(np.array(x._host(), copy=True), stream, max_version, True)[0]
    to_host = _export_to_host(here, dl_device, stream, copy)
    device = x._device
    if copy is None and not to_host and device.is_lazy and device.kind is DeviceKind.CPU and device.mesh is None:
        # as numpy.asarray(x): the host buffer that is x's value (a write through the consumer
        # reaches x and its views; read-only where NumPy's view is), as an eager array exports
        data = x.__array__()
    else:
        data = _value(x)
    if to_host:
        data, copy = x._host(), True
    elif copy and type(data) is not np.ndarray and here[0] == DLDeviceType.CPU:
        # A copy of a CPU device buffer is made by NumPy's exporter from a host view: it
        # is then an ordinary writable host array (jax would hand out a legacy capsule
        # that consumers must treat as read-only).
        data = x._host()
    capsule, copy = _capsule(data, stream, max_version, copy)
    if not copy:
        x._shared = True
    return capsule


def _export_to_host(here: tuple[DLDeviceType, int], dl_device: Any, stream: Any, copy: Any) -> bool:
    """Whether the export asked for by `dl_device` (None: where the value is, `here`) is a
    copy to the host; BufferError if it is to any other device, or `copy=False` forbids it."""
    if dl_device is not None:
        try:
            target = (_device_type(dl_device[0]), int(dl_device[1]))
        except (TypeError, ValueError, IndexError):
            raise TypeError(
                f"__dlpack__: dl_device must be a (device type, device id) tuple, got {dl_device!r}"
            ) from None
    else:
        target = (int(here[0]), here[1])
    to_host = target != (int(here[0]), here[1])
    if to_host and target != (DLDeviceType.CPU, 0):
        raise BufferError(f"__dlpack__: cannot export an array on {here} to the DLPack device {target}")
    if to_host and copy is False:
        raise BufferError(f"__dlpack__: exporting to the CPU from {here} needs a copy, but copy=False")
    if target[0] == DLDeviceType.CPU and stream is not None:
        raise ValueError(f"__dlpack__: the CPU has no streams; stream must be None, got {stream!r}")
    return to_host


def _capsule(data: Any, stream: Any, max_version: Any, copy: bool | None) -> tuple[Any, bool | None]:
    """The capsule of the buffer `data` (NumPy or jax) from its own exporter, and whether it
    is a copy (None: the exporter chose, without one)."""
    kwargs: dict[str, Any] = {"stream": stream}
    if max_version is not None and (type(data) is np.ndarray or tuple(max_version) >= (1, 0)):
        # (jax refuses pre-1.0 versions it could serve: leave it to make its legacy capsule)
        kwargs["max_version"] = max_version
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return data.__dlpack__(**kwargs), copy
    except BufferError:
        # NumPy cannot signal a read-only buffer (a lazy value: immutable) to a pre-1.0
        # consumer. By default export a copy; with copy=False, the buffer itself, as jax
        # does for its buffers: that protocol has no read-only flag, and the consumer asked
        # for no copy.
        if type(data) is not np.ndarray or copy is True:
            raise
        if copy is None:
            kwargs["copy"] = True
            return data.__dlpack__(**kwargs), True
        # (a view of read-only memory, as the interpreter keeps a column of a leaf: its owner
        # is made writable for the export too, NumPy refusing a writable view of a read-only base)
        chain = [data]
        while isinstance(chain[-1].base, np.ndarray):
            chain.append(chain[-1].base)
        if chain[-1].base is not None or any(a.flags.writeable for a in chain):
            raise  # (memory NumPy does not own, or a writable view's read-only result: not ours to flip)
        try:
            for a in reversed(chain):
                a.flags.writeable = True  # (ValueError for a view NumPy keeps read-only: broadcast_to's)
            return data.__dlpack__(**kwargs), copy
        except ValueError:
            raise BufferError(
                "__dlpack__: this read-only buffer cannot be exported to a pre-1.0 DLPack consumer without a copy"
            ) from None
        finally:
            for a in chain:
                a.flags.writeable = False


def device_from_dlpack(obj: Any, fname: str) -> Device:
    """The x10array device for the memory of a DLPack producer (the current backend)."""
    try:
        kind, ordinal = obj.__dlpack_device__()
        kind, ordinal = _device_type(kind), int(ordinal)
    except AttributeError:
        return current_device()
    backend = current_device().backend
    if kind in (DLDeviceType.CPU, DLDeviceType.CPU_PINNED, DLDeviceType.CUDA_MANAGED):
        return Device(DeviceKind.CPU, 0, backend)  # memory the host can read
    if kind in (DLDeviceType.CUDA, DLDeviceType.ROCM):
        for i, jd in enumerate(jax_devices(DeviceKind.GPU)):
            if getattr(jd, "local_hardware_id", i) == ordinal:
                return Device(DeviceKind.GPU, i, backend)
    raise BufferError(f"{fname}: x10array has no device for DLPack device ({kind}, {ordinal})")
