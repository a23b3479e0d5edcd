"""The inspection API: `__array_namespace_info__()`."""

from __future__ import annotations

from typing import Any

from .._core import dtypes as _dtypes
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
        _check_device(device, "default_dtypes")
        return {
            "real floating": _dtypes.DEFAULT_FLOAT,
            "complex floating": _dtypes.DEFAULT_COMPLEX,
            "integral": _dtypes.DEFAULT_INT,
            "indexing": _dtypes.DEFAULT_INDEX,
        }

    def dtypes(self, *, device: Device | None = None, kind: Any = None) -> dict[str, DType]:
        _check_device(device, "dtypes")
        if kind is None:
            members: tuple[DType, ...] = _dtypes.ALL_DTYPES
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
            members = tuple(d for d in _dtypes.ALL_DTYPES if d in chosen)
        return {d.name: d for d in members}

    def devices(self) -> tuple[Device, ...]:
        """Every device x10array can place arrays on: a tuple, as the 2025.12 standard says
        (2024.12 said a list; SciPy 1.17's test fixture still writes `devices() + [None]`:
        docs/scipy-devices.md)."""
        return tuple(all_devices())


def _check_device(device: Any, fname: str) -> None:
    as_device(device, fname)


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The standard's inspection object: the namespace's capabilities, devices and dtypes."""
    return _INFO
