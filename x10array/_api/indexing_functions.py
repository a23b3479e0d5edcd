"""Indexing functions (the standard's chapter of that name): `take` and `take_along_axis`.

Negative indices count from the end of the axis. The standard leaves out-of-bounds indices
unspecified; here they raise IndexError on every device: at the call when the index values
are computed, else (a lazy device, indices still pending) when the result or anything
computed from it is read (see `_indexing.check_bounds` and `_backends/lazy/graph.Check`). Kernels turn
negative indices into positive ones, so NumPy and jax agree, and clip out-of-bounds ones (a
lazy graph computes a placeholder that its bounds check then refuses to hand out).
"""

from __future__ import annotations

from typing import Any

from .._core.array import Array
from .._core.primitive import Primitive, bind
from .._core.validation import broadcast_shapes as _broadcast_shapes
from .._core.validation import check_array, common_device, normalize_axis
from .indexing import check_bounds, guard

__all__ = ["take", "take_along_axis"]


def _positive(k: Any, indices: Any, n: int) -> Any:
    idx = indices.astype(k.int64)
    return k.where(idx < 0, idx + n, idx)


def _take_kernel(k: Any, x: Any, indices: Any, *, axis: int) -> Any:
    return k.take(x, _positive(k, indices, x.shape[axis]), axis=axis, mode="clip")


def _take_along_axis_kernel(k: Any, x: Any, indices: Any, *, axis: int) -> Any:
    idx = _positive(k, indices, x.shape[axis])
    if k.is_jax:
        return k.take_along_axis(x, idx, axis=axis, mode="clip")
    try:
        return k.take_along_axis(x, idx, axis=axis)
    except IndexError:  # out of bounds, in a lazy graph (see the module's docstring)
        return k.take_along_axis(x, k.clip(idx, 0, x.shape[axis] - 1), axis=axis)


_TAKE = Primitive("take", _take_kernel, moves_data=True)
_TAKE_ALONG_AXIS = Primitive("take_along_axis", _take_along_axis_kernel, moves_data=True)


def _check_indices(indices: Array, fname: str) -> None:
    check_array(indices, fname, "indices", "integer")


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """Select the elements at the 1-D `indices` along `axis` (optional for 1-D `x`)."""
    check_array(x, "take")
    _check_indices(indices, "take")
    if x.ndim == 0:
        raise ValueError("take: x must have at least one dimension")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be one-dimensional, got shape {indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required when x has more than one dimension (shape {x.shape})")
        axis = 0
    axis = normalize_axis(axis, x.ndim, "take")
    device, (x, indices) = common_device((x, indices), "take")
    pending = check_bounds(indices, x.shape[axis], axis, "take")
    out = bind(_TAKE, device, x, indices, axis=axis)
    if pending:
        guard(out, [(indices, axis, x.shape[axis])], "take")
    return out


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """Pick, for each 1-D slice along `axis`, the elements at the matching slice of `indices`."""
    check_array(x, "take_along_axis")
    _check_indices(indices, "take_along_axis")
    if x.ndim == 0:
        raise ValueError("take_along_axis: x must have at least one dimension")
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: indices must have as many dimensions as x ({x.ndim}), got shape {indices.shape}"
        )
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    others = [s[:axis] + s[axis + 1 :] for s in (x.shape, indices.shape)]
    _broadcast_shapes(*others, fname="take_along_axis")
    device, (x, indices) = common_device((x, indices), "take_along_axis")
    pending = check_bounds(indices, x.shape[axis], axis, "take_along_axis")
    out = bind(_TAKE_ALONG_AXIS, device, x, indices, axis=axis)
    if pending:
        guard(out, [(indices, axis, x.shape[axis])], "take_along_axis")
    return out
