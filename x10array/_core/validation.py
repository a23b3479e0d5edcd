"""Validation shared by the public layer: arrays, dtype categories, devices, axes, scalars.

Every public function validates here, before anything is run or recorded, and raises
TypeError / ValueError / IndexError naming the function and the problem.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import settings
from .array import Array
from .capabilities import capabilities
from .convert import cast, transfer
from .devices import Device
from .dtypes import CATEGORIES, COMPLEX_OF, KIND_RANK, DType, promote

_SCALAR_TYPES = (bool, int, float, complex)
_INT_BOUNDS = {
    name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
}


class OperandTypeError(TypeError):
    """An operand of an unsupported Python type: operators answer NotImplemented."""


class ScalarOverflowError(OverflowError, ValueError):
    """A Python int that the array's integer dtype cannot hold."""


def not_an_array(fname: str, arg: str, x: Any) -> str:
    """The message for an operand that is not an x10array array, with the way to make one."""
    return f"{fname}: {arg} must be an x10array array, got {type(x).__name__} (use xp.asarray to make one)"


# the dtype a message names to convert to, and the dtype kinds it converts from exactly
_CONVERT_TO = {
    "floating-point": ("float64", ("bool", "signed", "unsigned")),
    "real floating-point": ("float64", ("bool", "signed", "unsigned")),
    "complex floating-point": ("complex128", ("bool", "signed", "unsigned", "real")),
    "integer": ("int64", ("bool",)),
    "numeric": ("int64", ("bool",)),
    "real numeric": ("int64", ("bool",)),
}


def wrong_dtype(fname: str, arg: str, category: str, dtype: DType) -> str:
    """The message for an operand whose dtype is not of `category`, naming the conversion that
    makes it one where there is one (an integer or boolean array to a float one, ...)."""
    dtypes = "dtypes" if arg == "inputs" else "dtype"
    message = f"{fname}: {arg} must have {'' if arg == 'inputs' else 'a '}{category} {dtypes}, got {dtype.name}"
    target, kinds = _CONVERT_TO.get(category, ("", ()))
    if dtype.kind in kinds:
        if arg == "inputs":
            message += f"; convert them with xp.astype(x, xp.{target})"
        else:
            message += f"; convert it with xp.astype({arg if arg.isidentifier() else 'x'}, xp.{target})"
    return message


def check_array(x: Any, fname: str, arg: str = "x", category: str = "any") -> Array:
    if type(x) is not Array:
        raise TypeError(not_an_array(fname, arg, x))
    if category != "any" and x._dtype not in CATEGORIES[category]:
        raise TypeError(wrong_dtype(fname, arg, category, x._dtype))
    return x


def check_category(dtype: DType, fname: str, category: str, what: str = "input") -> None:
    if dtype not in CATEGORIES[category]:
        raise TypeError(wrong_dtype(fname, what, category, dtype))


def common_device(
    arrays: Sequence[Array], fname: str, *, fixed: Array | None = None
) -> tuple[Device, tuple[Array, ...]]:
    """The device where `arrays` meet, and the arrays placed there: the device check of every
    function that takes several arrays (docs/devices.md).

    Arrays on one device stay there (the common case: no flag is read). Otherwise JAX's rule
    of committed arrays decides: an array created without an explicit device, and a result
    computed from such arrays only, is *uncommitted* and is copied to the device of the
    committed arrays it meets. Two committed arrays on different devices raise ValueError
    (no implicit copies between places the user chose), and so do uncommitted arrays on
    different devices when no committed array says where to meet. `fixed` is an array that
    cannot move (the target of a write): it counts as committed.
    """
    device = arrays[0]._device
    for a in arrays:
        if a._device is not device and a._device != device:
            return _meet(arrays, fname, fixed)
    return device, arrays if type(arrays) is tuple else tuple(arrays)


def _meet(arrays: Sequence[Array], fname: str, fixed: Array | None) -> tuple[Device, tuple[Array, ...]]:
    committed: list[Device] = []
    for a in arrays:
        if (a._committed or a is fixed) and a._device not in committed:
            committed.append(a._device)
    if len(committed) != 1:
        if committed:
            first, second = committed[:2]
            why = "arrays placed explicitly (committed), or written to, are on different devices"
        else:
            first = arrays[0]._device
            second = next(a._device for a in arrays if a._device != first)
            why = "none of them was placed explicitly (uncommitted), so none says where they meet"
        if first.mesh is not None or second.mesh is not None:
            raise ValueError(
                f"{fname}: arrays are on different devices ({first!r} and {second!r}): an array on a"
                " mesh combines only with arrays on the same mesh (or arrays created without a device,"
                " which are replicated there); place the other one there with"
                " x10array.distributed.shard() or replicate() (or to_device(x, sharding))"
            )
        raise ValueError(
            f"{fname}: arrays are on different devices ({first!r} and {second!r}): {why};"
            " copy them explicitly with to_device()"
        )
    device = committed[0]  # on a mesh, an uncommitted array is placed replicated (as in JAX)
    moved = []
    for a in arrays:
        if a._device != device:
            a = transfer(a, device)
            a._committed = False  # a copy of an uncommitted array, made to meet the others
        moved.append(a)
    return device, tuple(moved)


def normalize_scalar(value: Any) -> Any:
    """Python scalars pass through; NumPy scalars become Python scalars; else None."""
    if isinstance(value, _SCALAR_TYPES):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    return None


def check_scalar(value: Any, dtype: DType, fname: str, complex_promotes: bool = False) -> Any:
    """A Python scalar combined with an array of `dtype`, per the standard's scalar rules.

    With `complex_promotes` (operators and elementwise functions) a Python complex may meet a
    real floating-point array: the result is the complex type of the array's precision."""
    kind = dtype.kind
    if isinstance(value, bool):
        if kind == "bool":
            return value
        raise TypeError(f"{fname}: a Python bool can only be combined with a boolean array, not {dtype.name}")
    if isinstance(value, int):
        if kind == "bool":
            raise TypeError(f"{fname}: a Python int cannot be combined with a boolean array")
        if kind in ("signed", "unsigned"):
            lo, hi = _INT_BOUNDS[dtype.name]
            if not lo <= value <= hi:
                raise ScalarOverflowError(f"{fname}: the Python int {value} does not fit in {dtype.name}")
        return value
    if isinstance(value, float):
        if kind in ("real", "complex"):
            return value
        raise TypeError(f"{fname}: a Python float can only be combined with a floating-point array, not {dtype.name}")
    if isinstance(value, complex):
        if kind == "complex" or (complex_promotes and kind == "real"):
            return value
        raise TypeError(f"{fname}: a Python complex can only be combined with a complex array, not {dtype.name}")
    raise OperandTypeError(f"{fname}: unsupported operand type {type(value).__name__}")


def binary_operands(fname: str, x1: Any, x2: Any, category: str) -> tuple[Any, Any, DType, Device]:
    """Validate two operands (arrays or Python scalars): returns (x1, x2, result dtype, device).

    The returned operands are ready for a kernel: an uncommitted array is on the other's
    device (`common_device`), and under the mixed-kind rule (`dtypes.promote`) the operand of
    the lower kind is cast to the result dtype, so every kernel sees operands of one kind."""
    allowed = CATEGORIES[category]
    if type(x1) is Array:
        if type(x2) is Array:
            d1 = x1._dtype
            d2 = x2._dtype
            mixed = KIND_RANK[d1.kind] != KIND_RANK[d2.kind] and not settings.get("X10ARRAY_STRICT_PROMOTION")
            # mixed kinds: the operands are first cast to the result dtype, which is what
            # the function must accept (`mask * weights`, a bool array times a float one)
            dtype = promote(d1, d2, fname) if mixed else d1
            if d1 not in allowed or d2 not in allowed:
                if not mixed or dtype not in allowed:
                    bad = d1 if d1 not in allowed else d2
                    raise TypeError(wrong_dtype(fname, "inputs", category, bad))
            device = x1._device
            if x2._device is not device and x2._device != device:
                device, (x1, x2) = common_device((x1, x2), fname)
            if mixed:
                return cast(x1, dtype), cast(x2, dtype), dtype, device
            return x1, x2, d1 if d1 is d2 else promote(d1, d2, fname), device
        scalar = normalize_scalar(x2)
        if scalar is None:
            if isinstance(x2, np.ndarray):
                raise TypeError(numpy_mixing(fname, x1))
            raise OperandTypeError(f"{fname}: x2 must be an array or a Python scalar, got {type(x2).__name__}")
        scalar, dtype = _with_scalar(fname, x1._dtype, scalar, allowed, category, x1._device)
        return cast(x1, dtype) if _cast_needed(x1._dtype, dtype) else x1, scalar, dtype, x1._device
    if type(x2) is Array:
        scalar = normalize_scalar(x1)
        if scalar is None:
            if isinstance(x1, np.ndarray):
                raise TypeError(numpy_mixing(fname, x2))
            raise OperandTypeError(f"{fname}: x1 must be an array or a Python scalar, got {type(x1).__name__}")
        scalar, dtype = _with_scalar(fname, x2._dtype, scalar, allowed, category, x2._device)
        return scalar, cast(x2, dtype) if _cast_needed(x2._dtype, dtype) else x2, dtype, x2._device
    raise OperandTypeError(
        f"{fname}: at least one argument must be an x10array array, got {type(x1).__name__} and {type(x2).__name__}"
    )


def _cast_needed(dtype: DType, result: DType) -> bool:
    """An array of `dtype` meets a Python scalar of a higher kind: it is cast to `result`
    (a real array meeting a complex scalar is not: the standard's rule, kernels handle it)."""
    return dtype is not result and KIND_RANK[dtype.kind] < 2


def numpy_mixing(fname: str, x: Array) -> str:
    """The message for a NumPy array met with an x10array array (an operator in either order)."""
    return (
        f"{fname}: NumPy arrays and x10array arrays do not mix implicitly; convert the NumPy array"
        f" with xp.asarray(a, device={_device_text(x._device)}) (or the x10array array with np.asarray(x))"
    )


def _device_text(device: Device) -> str:
    return f"'{device.kind.value}:{device.ordinal}:{device.backend.value}'"


def _with_scalar(
    fname: str, dtype: DType, scalar: Any, allowed: frozenset[DType], category: str, device: Device
) -> tuple[Any, DType]:
    """The checked scalar and the result dtype of an array of `dtype` (on `device`) with a
    Python scalar."""
    mixed = _mixed_scalar(scalar, dtype, device)
    if mixed is not None and mixed[1] in allowed:
        scalar, dtype = mixed
    elif dtype not in allowed:
        raise TypeError(wrong_dtype(fname, "inputs", category, dtype))
    elif mixed is not None:
        raise TypeError(
            f"{fname}: a Python {type(scalar).__name__} makes the input {mixed[1].name}, not a {category} dtype"
        )
    scalar = check_scalar(scalar, dtype, fname, complex_promotes=True)
    if type(scalar) is complex and dtype.kind == "real":
        dtype = COMPLEX_OF[dtype]
        if dtype not in allowed:
            raise TypeError(f"{fname}: a Python complex makes the input {dtype.name}, not a {category} dtype")
    return scalar, dtype


# The mixed-kind rule for Python scalars: a scalar of a higher kind than the array's makes the
# result the device's default dtype of its kind (as NumPy and JAX do): the kind's rank here.
_SCALAR_KINDS: dict[type, int] = {bool: 0, int: 1, float: 2, complex: 3}


def _mixed_scalar(scalar: Any, dtype: DType, device: Device) -> tuple[Any, DType] | None:
    """(the scalar as a Python value of the result's kind, the result dtype) where a Python
    scalar and an array of `dtype` are of different kinds and the mixed-kind rule applies;
    None where the standard's scalar rules apply (or X10ARRAY_STRICT_PROMOTION is set)."""
    rank = KIND_RANK[dtype.kind]
    scalar_rank = _SCALAR_KINDS.get(type(scalar))
    if scalar_rank is None:
        return None
    if scalar_rank == rank or (scalar_rank == 1 and rank >= 2) or (scalar_rank == 3 and rank == 2):
        return None  # the standard's own rules: an int with a float array, a complex with a real one
    if settings.get("X10ARRAY_STRICT_PROMOTION"):
        return None  # check_scalar refuses it
    if scalar_rank < rank:  # a bool with a numeric array: the array's dtype, the value converted
        return (1 if scalar else 0) if rank == 1 else float(scalar) if rank == 2 else complex(scalar), dtype
    return scalar, capabilities(device).default_for(type(scalar))


def normalize_axis(axis: Any, ndim: int, fname: str, arg: str = "axis") -> int:
    if type(axis) is bool:
        raise TypeError(f"{fname}: {arg} must be an int, got bool")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fname}: {arg} must be an int, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise IndexError(f"{fname}: {arg} {axis} is out of range for an array with {ndim} dimensions")
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, fname: str, arg: str = "axis") -> tuple[int, ...]:
    """None -> all axes; int or tuple of ints -> sorted-as-given non-negative tuple, no repeats.
    A list is refused, as the standard's `int | tuple[int, ...]` axes require."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = tuple(normalize_axis(a, ndim, fname, arg) for a in axis)
    elif isinstance(axis, list):
        raise TypeError(f"{fname}: {arg} must be an int or a tuple of ints, got list")
    else:
        axes = (normalize_axis(axis, ndim, fname, arg),)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fname}: repeated axis in {arg}={axis!r}")
    return axes


def check_int(value: Any, fname: str, arg: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{fname}: {arg} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{fname}: {arg} must be an int, got {type(value).__name__}") from None


def check_shape(shape: Any, fname: str, arg: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{fname}: {arg} must be a tuple of ints, got {type(shape).__name__}")
    out = tuple(check_int(s, fname, arg) for s in shape)
    if any(s < 0 for s in out):
        raise ValueError(f"{fname}: {arg} {out} has a negative dimension")
    return out


_MAX_BYTES = 2**63 - 1  # NumPy and XLA index memory with signed 64-bit integers


def check_result_size(shape: tuple[int, ...], dtype: DType, fname: str) -> None:
    """ValueError when a result of `shape` and `dtype` could not exist in memory at all (before
    NumPy or XLA is asked: they raise their own errors, lazily only at the read)."""
    count = 1
    for d in shape:
        count *= d
    if count * dtype.np.itemsize > _MAX_BYTES:
        raise ValueError(
            f"{fname}: the result would have shape {shape} ({count} elements of {dtype.name}),"
            " more than an array can hold"
        )


def broadcast_shapes(*shapes: tuple[int, ...], fname: str = "broadcast_shapes") -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
            else:
                raise ValueError(f"{fname}: shapes {', '.join(map(str, shapes))} cannot be broadcast together")
    return tuple(out)
