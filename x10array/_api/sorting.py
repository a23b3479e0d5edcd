"""Sorting functions (the standard's chapter of that name).

One primitive, parameterized by what it returns (values or indices), the axis and the order.
Sorts are always stable (a stable sort satisfies `stable=False` too). A descending sort that
keeps equal elements in their original order is an ascending stable sort of the reversed
axis, reversed again, with indices mapped back (i -> n - 1 - i).
"""

from __future__ import annotations

from typing import Any

from .._core.array import Array
from .._core.dtypes import DEFAULT_INDEX
from .._core.primitive import Primitive, bind
from .._core.validation import check_array, normalize_axis
from .statistical import cast, check_bool

__all__ = ["argsort", "sort"]


def _sort_kernel(k: Any, x: Any, *, axis: int, descending: bool, indices: bool) -> Any:
    # The order is that of the values as the arithmetic reads them (`k.rounded`: on a lazy
    # device where XLA flushes, subnormals order as zeros, ties kept stable), the values moved
    # keep their bits: the same on both lazy tiers whatever the CPU's comparisons do with
    # subnormals. (`keys is x` elsewhere: the plain sort.)
    keys = k.rounded(x)
    if not descending:
        if indices:
            return cast(k.argsort(keys, axis=axis, stable=True), DEFAULT_INDEX.np)
        if keys is x:
            return k.sort(x, axis=axis, stable=True)
        return _sorted_by(k, keys, x, axis)
    if not indices:  # reversing the stably sorted axis
        return k.flip(k.sort(x, axis=axis, stable=True) if keys is x else _sorted_by(k, keys, x, axis), axis=axis)
    order = k.flip(k.argsort(k.flip(keys, axis=axis), axis=axis, stable=True), axis=axis)
    return cast(x.shape[axis] - 1 - order, DEFAULT_INDEX.np)


def _sorted_by(k: Any, keys: Any, x: Any, axis: int) -> Any:
    """`x` along `axis` in the stable order of `keys` (its values flushed)."""
    if k.is_jax:
        return k.lax.sort((keys, x), dimension=axis % x.ndim, is_stable=True, num_keys=1)[1]
    return k.take_along_axis(x, k.argsort(keys, axis=axis, stable=True), axis=axis)


_SORT = Primitive("sort", _sort_kernel, selects=True)


def _sort(fname: str, x: Array, axis: Any, descending: Any, stable: Any, indices: bool) -> Array:
    check_array(x, fname, "x", "real numeric")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension (got a 0-d array)")
    axis = normalize_axis(axis, x.ndim, fname)
    check_bool(descending, fname, "descending")
    check_bool(stable, fname, "stable")
    return bind(_SORT, x._device, x, axis=axis, descending=descending, indices=indices)


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """Indices that sort `x` along `axis` (stable: equal elements keep their order)."""
    return _sort("argsort", x, axis, descending, stable, indices=True)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """A copy of `x` sorted along `axis` (NaNs last when ascending, first when descending)."""
    return _sort("sort", x, axis, descending, stable, indices=False)
