"""Data type functions (the standard's chapter of that name).

`astype` binds the one primitive here (`_core.convert.ASTYPE`: a cast runs on the device,
eagerly or lazily); the rest
answer questions about dtypes from the tables of `_core.dtypes` and never touch a value.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.array import Array
from .._core.capabilities import capabilities, check_dtype_on
from .._core.convert import ASTYPE
from .._core.devices import Device, as_device
from .._core.dtypes import COMPLEX_OF, INTEGER, KINDS, REAL_OF, DType, as_dtype, check_dtype, promote
from .._core.primitive import bind
from .._core.validation import check_array, check_scalar

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


# -- astype ------------------------------------------------------------------------------------

# The primitive is `_core.convert.ASTYPE` (defined there: validation casts operands with it too).


def astype(x: Array, dtype: DType, /, *, copy: bool = True, device: Device | None = None) -> Array:
    """Cast `x` to `dtype`; `copy=False` returns `x` itself when the dtype is already `dtype`.

    Complex to a real-valued dtype is refused (the standard: take real() or imag() first);
    complex to bool is defined (0 + 0j is False).
    """
    check_array(x, "astype")
    dtype = check_dtype(dtype, "astype")
    if not isinstance(copy, builtins.bool):
        raise TypeError(f"astype: copy must be a bool, got {type(copy).__name__}")
    device = as_device(device, "astype")
    if x._dtype.kind == "complex" and dtype.kind in ("signed", "unsigned", "real"):
        raise TypeError(
            f"astype: the standard does not permit casting {x._dtype.name} to {dtype.name}; take real() or imag() first"
        )
    if device is not None and device != x._device:
        from .creation import to_device

        check_dtype_on(device, dtype, "astype")
        if not capabilities(x._device).holds(dtype):  # (to a device that holds it: move, then cast)
            return astype(to_device(x, device), dtype, copy=False)
        return to_device(x if dtype is x._dtype else bind(ASTYPE, x._device, x, dtype=dtype), device)
    check_dtype_on(x._device, dtype, "astype")
    if dtype is x._dtype and not copy:
        return x
    return bind(ASTYPE, x._device, x, dtype=dtype)


# -- questions about dtypes ---------------------------------------------------------------------


def _dtype_of(value: Any, fname: str, arg: str) -> DType:
    if type(value) is Array:
        return value._dtype
    found = as_dtype(value)
    if found is not None:
        return found
    raise TypeError(f"{fname}: {arg} must be an x10array dtype or array, got {value!r}")


def can_cast(from_: DType | Array, to: DType, /) -> builtins.bool:
    """Whether the standard's promotion rules can turn `from_` into `to` (no cross-kind casts:
    the mixed-kind rule of `dtypes.promote` is a choice about operands, not a safe cast)."""
    source = _dtype_of(from_, "can_cast", "from_")
    to = check_dtype(to, "can_cast", "to")
    try:
        return promote(source, to, "can_cast", strict=True) is to
    except TypeError:
        return False


@dataclass(frozen=True, eq=False)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a real floating-point dtype, as Python floats."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True, eq=False)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: DType


def _finfo(dtype: DType) -> finfo_object:
    fi = np.finfo(dtype.np)
    return finfo_object(fi.bits, float(fi.eps), float(fi.max), float(fi.min), float(fi.smallest_normal), dtype)


def _iinfo(dtype: DType) -> iinfo_object:
    ii = np.iinfo(dtype.np)
    return iinfo_object(ii.bits, int(ii.max), int(ii.min), dtype)


_FINFO = {d: _finfo(d) for d in KINDS["real floating"]}
_IINFO = {d: _iinfo(d) for d in INTEGER}


def finfo(type: DType | Array, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Limits of a floating-point dtype; for a complex dtype, those of its components."""
    dtype = _dtype_of(type, "finfo", "type")
    dtype = REAL_OF.get(dtype, dtype)
    if dtype not in _FINFO:
        raise TypeError(f"finfo: {dtype.name} is not a floating-point dtype")
    return _FINFO[dtype]


def iinfo(type: DType | Array, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """Limits of an integer dtype."""
    dtype = _dtype_of(type, "iinfo", "type")
    if dtype not in _IINFO:
        raise TypeError(f"iinfo: {dtype.name} is not an integer dtype")
    return _IINFO[dtype]


# isdtype's answers for a DType and a kind made of kind names and DTypes (the exact types
# only: a NumPy dtype or a str subclass may compare equal to them and takes the checks below):
# autodiff and optim ask the same few questions at every operation.
_ISDTYPE: dict[tuple[DType, Any], builtins.bool] = {}


def _plain_kind(kind: Any) -> builtins.bool:
    k = type(kind)
    if k is str or k is DType:
        return True
    return k is tuple and all(type(part) is str or type(part) is DType for part in kind)


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> builtins.bool:
    """Whether `dtype` is `kind` (a dtype), of `kind` (a kind name), or of any in a tuple."""
    if type(dtype) is DType and _plain_kind(kind):
        found = _ISDTYPE.get((dtype, kind))
        if found is None:
            found = _isdtype(dtype, kind)  # (a bad kind raises: never stored)
            if len(_ISDTYPE) >= 1024:  # (distinct tuples of kinds are few in any program)
                _ISDTYPE.clear()
            _ISDTYPE[(dtype, kind)] = found
        return found
    return _isdtype(dtype, kind)


def _isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> builtins.bool:
    dtype = check_dtype(dtype, "isdtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    found = False
    for k in kinds:
        as_kind = as_dtype(k)
        if as_kind is not None:
            found = found or as_kind is dtype
        elif isinstance(k, str):
            if k not in KINDS:
                raise ValueError(f"isdtype: unknown kind {k!r}; choose one of {', '.join(map(repr, KINDS))}")
            found = found or dtype in KINDS[k]
        else:
            raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of them, got {k!r}")
    return found


def result_type(*arrays_and_dtypes: Array | DType | builtins.bool | int | float | complex) -> DType:
    """The standard's promotion of arrays, dtypes and Python scalars (at least one non-scalar)."""
    dtypes: list[DType] = []
    scalars: list[Any] = []
    for a in arrays_and_dtypes:
        if type(a) is Array:
            dtypes.append(a._dtype)
        elif (d := as_dtype(a)) is not None:
            dtypes.append(d)
        elif isinstance(a, (builtins.bool, int, float, complex)):
            scalars.append(a)
        else:
            raise TypeError(f"result_type: arguments must be arrays, dtypes or Python scalars, got {a!r}")
    if not dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    result = dtypes[0]
    for d in dtypes[1:]:
        result = promote(result, d, "result_type")
    for s in scalars:
        result = _scalar_result(s, result)
    return result


def _scalar_result(scalar: Any, dtype: DType) -> DType:
    """A Python scalar meeting `dtype`, by the standard's scalar rules: the dtype wins, except
    that a complex scalar makes a real floating-point dtype complex of the same precision."""
    if isinstance(scalar, complex) and dtype.kind == "real":
        return COMPLEX_OF[dtype]
    if isinstance(scalar, int) and not isinstance(scalar, builtins.bool) and dtype.kind in ("signed", "unsigned"):
        return dtype  # a Python int's range matters for values, not for result_type
    check_scalar(scalar, dtype, "result_type")
    return dtype
