"""The inspection API: `__array_namespace_info__()`."""

from __future__ import annotations

from typing import Any

from .._core import dtypes as _dtypes
from .._core.capabilities import capabilities
from .._core.devices import Device, all_devices, as_device, current_device
from .._core.dtypes import DType

__all__ = ["__array_namespace_info__"]


class Info:
    """What this namespace can do, and on which devices."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Device:
        return current_device()

    def default_dtypes(self, *, device: Device | None = None) -> dict[str, DType]:
        """The default dtypes of `device` (None: the current default device): float64,
        complex128 and int64 on CPUs and GPUs; float32, complex64 and int32 on TPUs."""
        return capabilities(_check_device(device, "default_dtypes")).default_dtypes()

    def dtypes(self, *, device: Device | None = None, kind: Any = None) -> dict[str, DType]:
        """The dtypes `device` (None: the current default device) holds, of `kind`: all the
        standard's on CPUs and GPUs; on TPUs all but float64 and complex128."""
        held = capabilities(_check_device(device, "dtypes")).dtypes
        if kind is None:
            members: tuple[DType, ...] = held
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            chosen: set[DType] = set()
            for k in kinds:
                if isinstance(k, DType):
                    chosen.add(k)
                elif k in _dtypes.KINDS:
                    chosen.update(_dtypes.KINDS[k])
                else:
                    raise ValueError(f"dtypes: unknown kind {k!r}")
            members = tuple(d for d in held if d in chosen)
        return {d.name: d for d in members}

    def devices(self) -> tuple[Device, ...]:
        """Every device x10array can place arrays on: a tuple, as the 2025.12 standard says
        (2024.12 said a list; SciPy 1.17's test fixture still writes `devices() + [None]`:
        docs/scipy-devices.md)."""
        return tuple(all_devices())


def _check_device(device: Any, fname: str) -> Device:
    return as_device(device, fname, none=current_device())


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The standard's inspection object: the namespace's capabilities, devices and dtypes."""
    return _INFO
