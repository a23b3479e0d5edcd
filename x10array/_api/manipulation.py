"""Manipulation functions (the standard's "Manipulation Functions" chapter).

Each operation is one primitive whose parameters are resolved by the public function: axes
are normalized to non-negative ints, `-1` in a shape is replaced by its size, shifts are
reduced modulo the axis length, and the result dtype of `concat`/`stack` is computed here.
Kernels therefore only see static, canonical parameters and run unchanged with NumPy and
`jax.numpy`.

Views: as in NumPy, `permute_dims`, `moveaxis`, `reshape` (where NumPy's is a view),
`expand_dims`, `squeeze`, `flip` and `unstack` return views of their input (a write to either
side shows in the other, replayed by `indexing.Alias`, on every device); `broadcast_to` (and
`broadcast_arrays` where it broadcasts) return read-only views, whose writes raise ValueError
as NumPy's do. `reshape(copy=True)` and the other functions return new values.
"""

from __future__ import annotations

import functools
import math
from typing import Any, cast

import numpy as np

from .._core.array import Array
from .._core.dtypes import CATEGORIES, DType, promote
from .._core.primitive import WRITE_LOCK, Aval, Primitive, bind
from .._core.validation import broadcast_shapes as _broadcast_shapes
from .._core.validation import (
    check_array,
    check_int,
    check_result_size,
    check_shape,
    common_device,
    normalize_axes,
    normalize_axis,
)
from .indexing import Transform, _slice_desc, function_view, index_view, reshape_is_view

__all__ = [
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
]  # fmt: skip


def _cast(k: Any, x: Any, dtype: DType) -> Any:
    return x if x.dtype == dtype.np else x.astype(dtype.np)


def _reshape_kernel(k: Any, x: Any, *, shape: tuple[int, ...], copy: bool) -> Any:
    out = k.reshape(x, shape)
    return k.array(out, copy=True) if copy else out


def _concat_kernel(k: Any, *arrays: Any, axis: int | None, dtype: DType) -> Any:
    if axis is None:
        return k.concatenate([k.reshape(_cast(k, a, dtype), (-1,)) for a in arrays])
    return k.concatenate([_cast(k, a, dtype) for a in arrays], axis=axis)


def _roll_kernel(k: Any, x: Any, *, shift: int | tuple[int, ...], axis: tuple[int, ...] | None) -> Any:
    if axis == ():
        return k.array(x, copy=True)
    return k.roll(x, shift, axis=axis)


def _repeat_array_kernel(k: Any, x: Any, repeats: Any, *, axis: int | None) -> Any:
    return k.repeat(x, repeats.astype(k.int64), axis=axis)


def _unstack_kernel(k: Any, x: Any, *, axis: int) -> tuple[Any, ...]:
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))


_BROADCAST_TO = Primitive("broadcast_to", lambda k, x, *, shape: k.broadcast_to(x, shape), moves_data=True)
_CONCAT = Primitive("concat", _concat_kernel, moves_data=True)
_EXPAND_DIMS = Primitive("expand_dims", lambda k, x, *, axis: k.expand_dims(x, axis), moves_data=True)
_FLIP = Primitive("flip", lambda k, x, *, axis: k.flip(x, axis=axis), moves_data=True)
_MOVEAXIS = Primitive(
    "moveaxis", lambda k, x, *, source, destination: k.moveaxis(x, source, destination), moves_data=True
)
_PERMUTE_DIMS = Primitive(
    "permute_dims",
    lambda k, x, *, axes: k.transpose(x, axes),
    rule=lambda x, *, axes: Aval(tuple(x.shape[a] for a in axes), x.dtype),
    moves_data=True,
)
_REPEAT = Primitive("repeat", lambda k, x, *, repeats, axis: k.repeat(x, repeats, axis=axis), moves_data=True)
_REPEAT_ARRAY = Primitive("repeat_array", _repeat_array_kernel, dynamic_shape=True, moves_data=True)
_RESHAPE = Primitive("reshape", _reshape_kernel, rule=lambda x, *, shape, copy: Aval(shape, x.dtype), moves_data=True)
_ROLL = Primitive("roll", _roll_kernel, moves_data=True)
_SQUEEZE = Primitive("squeeze", lambda k, x, *, axis: k.squeeze(x, axis=axis), moves_data=True)
_STACK = Primitive(
    "stack", lambda k, *arrays, axis, dtype: k.stack([_cast(k, a, dtype) for a in arrays], axis=axis), moves_data=True
)
_TILE = Primitive("tile", lambda k, x, *, repetitions: k.tile(x, repetitions), moves_data=True)
_UNSTACK = Primitive("unstack", _unstack_kernel, multiple_results=True, moves_data=True)


# -- validation helpers -----------------------------------------------------------------------


def _int_or_tuple(value: Any, fname: str, arg: str) -> tuple[int, ...]:
    """An int or a tuple/list of ints, as a tuple (not yet normalized). An axis may not be a
    list: the standard's axes are ints or tuples."""
    if isinstance(value, list) and arg == "axis":
        raise TypeError(f"{fname}: axis must be an int or a tuple of ints, got list")
    if isinstance(value, (tuple, list)):
        return tuple(check_int(v, fname, arg) for v in value)
    return (check_int(value, fname, arg),)


def _array_sequence(arrays: Any, fname: str) -> tuple[tuple[Array, ...], DType]:
    """A non-empty tuple/list of arrays on one device: (arrays, promoted dtype)."""
    if not isinstance(arrays, (tuple, list)):
        raise TypeError(f"{fname}: arrays must be a tuple or list of arrays, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{fname}: needs at least one array")
    arrays = tuple(check_array(a, fname, f"arrays[{i}]") for i, a in enumerate(arrays))
    arrays = tuple(common_device(arrays, fname)[1])
    dtype = functools.reduce(lambda a, b: promote(a, b, fname), (a._dtype for a in arrays))
    return arrays, dtype


# -- broadcasting -----------------------------------------------------------------------------


def broadcast_shapes(*shapes: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """The broadcast of `shapes`. A dimension of unknown size (None) is propagated: the
    result is unknown wherever any input is (the known sizes must still be compatible)."""
    checked = []
    for i, shape in enumerate(shapes):
        if not isinstance(shape, (tuple, list)):
            raise TypeError(f"broadcast_shapes: shapes[{i}] must be a tuple, got {type(shape).__name__}")
        dims = tuple(None if d is None else check_int(d, "broadcast_shapes", f"shapes[{i}]") for d in shape)
        if any(d is not None and d < 0 for d in dims):
            raise ValueError(f"broadcast_shapes: shapes[{i}] {dims} has a negative dimension")
        checked.append(dims)
    if all(None not in s for s in checked):
        return _broadcast_shapes(*cast(list[tuple[int, ...]], checked), fname="broadcast_shapes")
    ndim = max(len(s) for s in checked)
    padded = [(1,) * (ndim - len(s)) + s for s in checked]
    known = [tuple(1 if d is None else d for d in s) for s in padded]
    out: list[int | None] = list(_broadcast_shapes(*known, fname="broadcast_shapes"))  # checks the known sizes
    for i in range(ndim):
        if any(s[i] is None for s in padded):
            out[i] = None
    return tuple(out)


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    """Broadcast `x` to `shape` (a read-only view on the NumPy path)."""
    check_array(x, "broadcast_to")
    shape = check_shape(shape, "broadcast_to")
    if len(shape) < x.ndim or _broadcast_shapes(x.shape, shape, fname="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    check_result_size(shape, x._dtype, "broadcast_to")
    return _broadcast_view(x, shape, "broadcast_to")


def _broadcast_view(x: Array, shape: tuple[int, ...], fname: str) -> Array:
    """`x` broadcast to `shape`: a read-only view (NumPy's is, for broadcast_arrays in the future)."""
    transform = Transform(
        fname,
        lambda b: bind(_BROADCAST_TO, b._device, b, shape=shape),
        None,
        lambda st: np.broadcast_to(st, shape),
    )
    return function_view(x, _BROADCAST_TO, transform, shape=shape)


def broadcast_arrays(*arrays: Array) -> tuple[Array, ...]:
    """Broadcast `arrays` against each other; each keeps its dtype."""
    for i, a in enumerate(arrays):
        check_array(a, "broadcast_arrays", f"arrays[{i}]")
    if arrays:
        arrays = tuple(common_device(arrays, "broadcast_arrays")[1])
    shape = _broadcast_shapes(*(a.shape for a in arrays), fname="broadcast_arrays")
    return tuple(a if a.shape == shape else _broadcast_view(a, shape, "broadcast_arrays") for a in arrays)


# -- joining and splitting --------------------------------------------------------------------


def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    """Join `arrays` along `axis` (None: flattened first), with type promotion across all."""
    arrays, dtype = _array_sequence(arrays, "concat")
    if axis is not None:
        first = arrays[0].shape
        axis = normalize_axis(axis, len(first), "concat")
        for i, a in enumerate(arrays[1:], 1):
            if a.ndim != len(first) or any(d != e for j, (d, e) in enumerate(zip(a.shape, first)) if j != axis):
                raise ValueError(
                    f"concat: arrays[{i}] has shape {a.shape}, which does not match {first} outside axis {axis}"
                )
    return bind(_CONCAT, arrays[0]._device, *arrays, axis=axis, dtype=dtype)


def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0) -> Array:
    """Join same-shape `arrays` along a new axis `axis`, with type promotion across all."""
    arrays, dtype = _array_sequence(arrays, "stack")
    shape = arrays[0].shape
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != shape:
            raise ValueError(f"stack: all arrays must have the same shape; arrays[{i}] has {a.shape}, not {shape}")
    axis = normalize_axis(axis, len(shape) + 1, "stack")
    return bind(_STACK, arrays[0]._device, *arrays, axis=axis, dtype=dtype)


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Split `x` along `axis` into a tuple of arrays with that axis removed."""
    check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, "unstack")
    if x.shape[axis] == 0:
        return ()
    if x.ndim == 1:  # NumPy's are scalars (x[i]): copies
        return bind(_UNSTACK, x._device, x, axis=axis)
    with WRITE_LOCK:  # views of x, as NumPy's (x[:, ..., i]): computed and registered between writes
        outs = bind(_UNSTACK, x._device, x, axis=axis)
        for i, out in enumerate(outs):
            index_view(x, out, _whole(x.shape[:axis]) + (("a", 0),) + _whole(x.shape[axis + 1 :]), (i,))
    return outs


def _whole(shape: tuple[int, ...]) -> tuple[tuple[Any, ...], ...]:
    """The description of whole-axis slices over `shape` (see `indexing`)."""
    return tuple(("s", 0, n, 1) for n in shape)


# -- shapes and axes --------------------------------------------------------------------------


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    """`x` with a new shape (one -1 is inferred); copy=True gives a buffer of its own."""
    check_array(x, "reshape")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"reshape: shape must be a tuple of ints, got {type(shape).__name__}")
    if copy not in (None, True, False):
        raise ValueError(f"reshape: copy must be True, False or None, got {copy!r}")
    if type(shape) is tuple:  # the common case: a tuple of non-negative ints, as many elements
        for d in shape:
            if type(d) is not int or d < 0:
                break
        else:
            if math.prod(shape) == x.size:
                return _reshape(x, shape, copy)
    dims = tuple(check_int(d, "reshape", "shape") for d in shape)
    if any(d < -1 for d in dims):
        raise ValueError(f"reshape: shape {dims} has a negative dimension")
    unknown = dims.count(-1)
    if unknown > 1:
        raise ValueError(f"reshape: shape {dims} may contain -1 only once")
    known = math.prod(d for d in dims if d != -1)
    size = x.size
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape an array of size {size} into shape {dims}")
        dims = tuple(size // known if d == -1 else d for d in dims)
    elif known != size:
        raise ValueError(f"reshape: cannot reshape an array of size {size} into shape {dims}")
    return _reshape(x, dims, copy)


def _reshape(x: Array, shape: tuple[int, ...], copy: bool | None) -> Array:
    """A view of `x` where NumPy's reshape is one (copy not True), else a new value
    (ValueError for copy=False, as in NumPy and the standard)."""
    if copy or not reshape_is_view(x, shape):
        if copy is False:
            raise ValueError(
                f"reshape: copy=False, but a reshape of this array to {shape} needs a copy"
                " (it is a view whose elements are not in the order the new shape reads them, as in NumPy)"
            )
        return bind(_RESHAPE, x._device, x, shape=shape, copy=bool(copy))
    old = x.shape
    transform = Transform(
        "reshape",
        lambda b: bind(_RESHAPE, b._device, b, shape=shape, copy=False),
        lambda b, v: bind(_RESHAPE, v._device, v, shape=old, copy=False),
        lambda st: np.reshape(st, shape, copy=False),
    )
    return function_view(x, _RESHAPE, transform, shape=shape, copy=False)


def expand_dims(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """Insert size-1 axes at `axis` (positions in the result, in [-M, M), M = x.ndim + len(axis))."""
    check_array(x, "expand_dims")
    axes = _int_or_tuple(axis, "expand_dims", "axis")
    ndim = x.ndim + len(axes)
    axes = tuple(sorted(normalize_axes(axes, ndim, "expand_dims")))
    shape = iter(x.shape)
    desc = tuple(("n",) if a in axes else ("s", 0, next(shape), 1) for a in range(ndim))
    with WRITE_LOCK:  # a view (x[..., None, ...]), as NumPy's
        return index_view(x, bind(_EXPAND_DIMS, x._device, x, axis=axes), desc, ())


def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """Remove the size-1 axes `axis`; ValueError for an axis whose size is not 1."""
    check_array(x, "squeeze")
    axes = normalize_axes(_int_or_tuple(axis, "squeeze", "axis"), x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]} (shape {x.shape})")
    desc = tuple(("a", 0) if a in axes else ("s", 0, n, 1) for a, n in enumerate(x.shape))
    with WRITE_LOCK:  # a view (x[0, ...] on the squeezed axes), as NumPy's
        return index_view(x, bind(_SQUEEZE, x._device, x, axis=tuple(sorted(axes))), desc, (0,))


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    """Permute the axes of `x` (negative axes count from the end)."""
    check_array(x, "permute_dims")
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"permute_dims: axes must be a tuple of ints, got {type(axes).__name__}")
    norm = tuple(normalize_axis(a, x.ndim, "permute_dims", "axes") for a in axes)
    if sorted(norm) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {tuple(axes)} is not a permutation of the {x.ndim} dimensions")
    return permuted(x, norm, "permute_dims")


def permuted(x: Array, axes: tuple[int, ...], fname: str) -> Array:
    """`x` with its axes permuted to `axes`: a view, as NumPy's transposes are."""
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    transform = Transform(
        fname,
        lambda b: bind(_PERMUTE_DIMS, b._device, b, axes=axes),
        lambda b, v: bind(_PERMUTE_DIMS, v._device, v, axes=inverse),
        lambda st: st.transpose(axes),
    )
    return function_view(x, _PERMUTE_DIMS, transform, axes=axes)


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> Array:
    """Move the axes `source` to the positions `destination`; the others keep their order."""
    check_array(x, "moveaxis")
    src = normalize_axes(_int_or_tuple(source, "moveaxis", "source"), x.ndim, "moveaxis", "source")
    dst = normalize_axes(_int_or_tuple(destination, "moveaxis", "destination"), x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} differ in length")
    transform = Transform(
        "moveaxis",
        lambda b: bind(_MOVEAXIS, b._device, b, source=src, destination=dst),
        lambda b, v: bind(_MOVEAXIS, v._device, v, source=dst, destination=src),
        lambda st: np.moveaxis(st, src, dst),
    )
    return function_view(x, _MOVEAXIS, transform, source=src, destination=dst)


def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """Reverse the order of elements along `axis` (None: every axis)."""
    check_array(x, "flip")
    axes = tuple(sorted(normalize_axes(axis, x.ndim, "flip")))
    desc = tuple(_slice_desc(range(n - 1, -1, -1)) if a in axes else ("s", 0, n, 1) for a, n in enumerate(x.shape))
    with WRITE_LOCK:  # a view (x[::-1] on those axes), as NumPy's
        return index_view(x, bind(_FLIP, x._device, x, axis=axes), desc, ())


def roll(x: Array, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Array:
    """Shift elements cyclically along `axis` (None: of the flattened array, shape kept)."""
    check_array(x, "roll")
    shifts = _int_or_tuple(shift, "roll", "shift")
    if axis is None:
        if isinstance(shift, (tuple, list)):
            raise ValueError("roll: a tuple shift needs a tuple axis of the same length")
        size = x.size
        return bind(_ROLL, x._device, x, shift=shifts[0] % size if size else 0, axis=None)
    axes = tuple(normalize_axis(a, x.ndim, "roll") for a in _int_or_tuple(axis, "roll", "axis"))
    if isinstance(shift, (tuple, list)):
        if not isinstance(axis, (tuple, list)) or len(shifts) != len(axes):
            raise ValueError(f"roll: shift {tuple(shift)} and axis {axis!r} must be tuples of the same length")
    else:
        shifts = shifts * len(axes)
    total: dict[int, int] = {}
    for a, s in zip(axes, shifts):
        total[a] = total.get(a, 0) + s
    canonical = {a: s % x.shape[a] for a, s in total.items() if x.shape[a]}
    return bind(_ROLL, x._device, x, shift=tuple(canonical.values()), axis=tuple(canonical))


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    """Repeat `x` `repetitions[i]` times along axis i (shorter of shape/repetitions padded with 1s)."""
    check_array(x, "tile")
    if not isinstance(repetitions, (tuple, list)):
        raise TypeError(f"tile: repetitions must be a tuple of ints, got {type(repetitions).__name__}")
    reps = tuple(check_int(r, "tile", "repetitions") for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions {reps} must be non-negative")
    ndim = max(x.ndim, len(reps))
    padded = (1,) * (ndim - x.ndim) + x.shape
    check_result_size(tuple(d * r for d, r in zip(padded, (1,) * (ndim - len(reps)) + reps)), x._dtype, "tile")
    return bind(_TILE, x._device, x, repetitions=reps)


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Repeat elements along `axis` (None: of the flattened array).

    An array `repeats` makes the output shape depend on its values: on a lazy device this
    materializes `repeats` (a device synchronization)."""
    check_array(x, "repeat")
    if axis is None:
        length = x.size
    else:
        if x.ndim == 0:
            raise ValueError("repeat: x is 0-dimensional; use axis=None")
        axis = normalize_axis(axis, x.ndim, "repeat")
        length = x.shape[axis]
    if type(repeats) is Array:
        if repeats._dtype not in CATEGORIES["integer"]:
            raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats._dtype.name}")
        if repeats.ndim != 1 or repeats.shape[0] not in (1, length):
            raise ValueError(f"repeat: repeats must have shape (1,) or ({length},), got {repeats.shape}")
        x, repeats = common_device((x, repeats), "repeat")[1]
        host = repeats._host()
        if host.size and host.min() < 0:
            raise ValueError("repeat: repeats must be non-negative")
        return bind(_REPEAT_ARRAY, x._device, x, repeats, axis=axis)
    count = check_int(repeats, "repeat", "repeats")
    if count < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {count}")
    shape = (x.size * count,) if axis is None else x.shape[:axis] + (length * count,) + x.shape[axis + 1 :]
    check_result_size(shape, x._dtype, "repeat")
    return bind(_REPEAT, x._device, x, repeats=count, axis=axis)
