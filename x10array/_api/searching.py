"""Searching functions (the standard's chapter of that name).

argmax/argmin and count_nonzero are reductions (axes validated by `reduction_axes`, the result
cast to the default index dtype); nonzero has a data-dependent shape and runs on the host;
searchsorted and where take Python scalars under the standard's scalar rules
(`binary_operands`), and their kernels cast scalars to the promoted dtype explicitly so NumPy
and jax agree.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._core.array import Array
from .._core.dtypes import DEFAULT_INDEX, DType
from .._core.kernels import numpy_on_flushed
from .._core.policies import INTERPRETER_BLOCK_COUNTS, XLA_HOST_KERNELS
from .._core.primitive import Primitive, bind
from .._core.validation import binary_operands, broadcast_shapes, check_array, common_device
from .indexing import check_bounds, guard
from .statistical import cast, reduction_axes

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]

_INDEX = DEFAULT_INDEX.np


# -- argmax, argmin ---------------------------------------------------------------------------


def _arg_reduction(name: str, kernel: Any) -> Any:
    prim = Primitive(name, lambda k, x, *, axis, keepdims: cast(kernel(k)(x, axis=axis, keepdims=keepdims), _INDEX))

    def function(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
        check_array(x, name, "x", "real numeric")
        if axis is not None and isinstance(axis, (tuple, list)):
            raise TypeError(f"{name}: axis must be None or an int, got {type(axis).__name__}")
        axes = reduction_axes(name, x, axis, keepdims, nonempty=True)
        return bind(prim, x._device, x, axis=None if axis is None else axes[0], keepdims=keepdims)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"Index of the first {name[3:]}imum of `x` (flattened when `axis` is None), in the default index dtype."
    )
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


argmax = _arg_reduction("argmax", lambda k: k.argmax)
argmin = _arg_reduction("argmin", lambda k: k.argmin)


# -- count_nonzero, nonzero -------------------------------------------------------------------


def _count_nonzero(k: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    if not k.is_jax and len(axes) == x.ndim:
        # over every axis, NumPy's count (the same integer, exact): it reads a boolean array
        # as bytes, ~18x faster than summing `x != 0` (Monte-Carlo's count of 1e6 points)
        n = k.count_nonzero(x)
        return k.full((1,) * x.ndim, n, dtype=_INDEX) if keepdims else _INDEX.type(n)
    return cast(k.sum(x != 0, axis=axes, keepdims=keepdims, dtype=_INDEX), _INDEX)


_COUNT_NONZERO = Primitive("count_nonzero", _count_nonzero)


def _count_blocks(params: dict[str, Any], ndim: int) -> Any:
    """count_nonzero over every axis, counted block by block (policies.INTERPRETER_BLOCK_COUNTS):
    NumPy's count of each block, the total as the kernel returns it (exact integers)."""
    if len(params["axes"]) != ndim or params["keepdims"]:
        return None
    return np.count_nonzero, _INDEX.type


INTERPRETER_BLOCK_COUNTS.register(_COUNT_NONZERO, _count_blocks)


def count_nonzero(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Number of non-zero elements over `axis` (True for booleans; either component for complex)."""
    check_array(x, "count_nonzero")
    axes = reduction_axes("count_nonzero", x, axis, keepdims)
    return bind(_COUNT_NONZERO, x._device, x, axes=axes, keepdims=keepdims)


_NONZERO = Primitive(
    "nonzero",
    lambda k, x: tuple(cast(i, _INDEX) for i in k.nonzero(x)),
    dynamic_shape=True,
    multiple_results=True,
)


def nonzero(x: Array, /) -> tuple[Array, ...]:
    """Indices of the non-zero elements, one 1-D array per dimension, in row-major order."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dimension (got a 0-d array)")
    return tuple(bind(_NONZERO, x._device, x))


# -- searchsorted -----------------------------------------------------------------------------


def _searchsorted_kernel(k: Any, x1: Any, x2: Any, sorter: Any, *, side: str, dtype: DType) -> Any:
    if sorter is not None:  # negative entries count from the end; mode="clip": see take's kernel
        sorter = sorter.astype(k.int64)
        x1 = k.take(x1, k.where(sorter < 0, sorter + x1.shape[0], sorter), mode="clip")
    x1 = cast(x1, dtype.np)
    x2 = k.asarray(x2, dtype=dtype.np)
    return cast(k.searchsorted(x1, x2, side=side), _INDEX)


_SEARCHSORTED = Primitive("searchsorted", _searchsorted_kernel)


def searchsorted(
    x1: Array,
    x2: Array | int | float,
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: Array | None = None,
) -> Array:
    """Indices where the elements of `x2` would be inserted into the sorted 1-D `x1`."""
    check_array(x1, "searchsorted", "x1", "real numeric")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got {x1.ndim} dimensions")
    if isinstance(x2, bool):
        raise TypeError("searchsorted: x2 must be a real-valued array or a Python int or float, got bool")
    x1, x2, dtype, device = binary_operands("searchsorted", x1, x2, "real numeric")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        check_array(sorter, "searchsorted", "sorter", "integer")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter has shape {sorter.shape}, x1 has shape {x1.shape}")
        x1, sorter = common_device((x1, sorter), "searchsorted", fixed=x1)[1]
        pending = check_bounds(sorter, x1.shape[0], 0, "searchsorted")
        out = bind(_SEARCHSORTED, device, x1, x2, sorter, side=side, dtype=dtype)
        if pending:
            guard(out, [(sorter, 0, x1.shape[0])], "searchsorted")
        return out
    return bind(_SEARCHSORTED, device, x1, x2, sorter, side=side, dtype=dtype)


# -- where ------------------------------------------------------------------------------------


def _where_kernel(k: Any, condition: Any, x1: Any, x2: Any, *, dtype: DType) -> Any:
    return k.where(condition, k.asarray(x1, dtype=dtype.np), k.asarray(x2, dtype=dtype.np))


_WHERE = Primitive("where", _where_kernel, elementwise=True, selects=True)
XLA_HOST_KERNELS.register(_WHERE, numpy_on_flushed(_WHERE, reads=False))  # (a select passes bits on)


Scalar = bool | int | float | complex


def where(condition: Array, x1: Array | Scalar, x2: Array | Scalar, /) -> Array:
    """Elements of `x1` where `condition` is True, else of `x2` (broadcast; Python scalars allowed)."""
    check_array(condition, "where", "condition", "boolean")
    x1, x2, dtype, device = binary_operands("where", x1, x2, "any")
    shapes = [condition.shape] + [a.shape for a in (x1, x2) if type(a) is Array]
    broadcast_shapes(*shapes, fname="where")
    device, (condition, *moved) = common_device([condition] + [a for a in (x1, x2) if type(a) is Array], "where")
    if type(x1) is Array:
        x1 = moved.pop(0)
    if type(x2) is Array:
        x2 = moved.pop(0)
    return bind(_WHERE, device, condition, x1, x2, dtype=dtype)
