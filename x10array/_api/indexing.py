"""`Array.__getitem__` and `Array.__setitem__`: validation, then one primitive each.

An index is normalized to a hashable description so that the (primitive, parameters) pair
can key compiled programs:

- ("s", start, stop, step): a slice, canonical for the axis (Python's clamping applied,
  so an equal selection always gives an equal description);
- ("n",): None, a new axis of size 1;
- ("a", position): an operand, `operands[position]`: a Python int (already checked and made
  non-negative) or an integer array (2024.12 integer-array indexing);
- ("m", position): a boolean mask operand (the sole index; the result shape depends on the
  values: the `GETITEM_MASK` primitive, run on concrete values);
- ("z", m): a boolean mask over the first `m` axes that selects nothing (a mask with a
  zero-sized dimension, or the Python bool False): the result is empty, shape (0, *rest).
- ("e",): an ellipsis that spans no axis but stands between integers and index arrays:
  kept, since it still parts them (their axes then come first, as in NumPy).

Ellipsis is expanded into whole-axis slices and missing trailing indices are filled with
whole-axis slices (as NumPy does), so a description indexes every axis explicitly.

Basic indexing (ints, slices, None, Ellipsis; not an int for every axis) makes a view:
`Alias` records which array and index it came from, and a write to either side is replayed
on the other (a setitem on the base, a getitem for each view), so mutation behaves as in
NumPy in both modes. Integer-array and mask indexing, and an integer for every axis, make
copies (as in NumPy).

Integer indices travel as operands rather than parameters: `x[i]` in a loop is then one
compiled program on XLA, not one per `i`. Out-of-range integers are an IndexError here, in
the public layer. Integer index arrays are checked against the axis size here when their
values are computed (eager devices, lazy arrays already materialized); a lazy index still
pending is not read for the check: `guard` records a bounds flag beside the graph, and the
result raises IndexError when read if the flag is set (see the lazy backend's `Check`). Never a clamp,
never a dropped write.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.array import Array
from .._core.backend import impl as backend_impl
from .._core.convert import cast, transfer
from .._core.devices import Device
from .._core.dtypes import INTEGER, KIND_RANK, DType, promote
from .._core.kernels import NUMPY, SELECT_WRITE
from .._core.policies import COLUMN_READS, NUMPY_QUIET, SLICE_BOXES
from .._core.primitive import WRITE_LOCK, Aval, Primitive, assign, atomic_write, bind, rebind, same_as_first
from .._core.validation import ScalarOverflowError, broadcast_shapes, check_scalar, common_device, normalize_scalar

__all__ = ["normalize_index", "getitem", "setitem", "check_writable", "function_view", "index_view"]

_INT64_MAX = 2**63 - 1


# -- kernels ------------------------------------------------------------------------------


def _rebuild(desc: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for comp in desc:
        tag = comp[0]
        if tag == "s":
            out.append(slice(comp[1], comp[2], comp[3]))
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        else:  # "a", "m"
            out.append(operands[comp[1]])
    return tuple(out)


def _getitem_kernel(k: Any, x: Any, *operands: Any, index: tuple[Any, ...]) -> Any:
    if index and index[0][0] == "z":
        return k.zeros((0,) + x.shape[index[0][1] :], dtype=x.dtype)
    if k.is_jax:
        operands = _wide(k, x.shape, index, operands)
        forward = _forward(index, x.shape)
        if forward is not None:  # negative steps: see _forward
            first, rest, axes = forward
            return _reverse(k, x[_rebuild(first, ())], axes)[_rebuild(rest, operands)]
        return x[_rebuild(index, operands)]
    try:
        return x[_rebuild(index, operands)]
    except IndexError:  # out of bounds, in a lazy graph: see _within
        return x[_rebuild(index, _within(x, index, operands))]


def _setitem_kernel(k: Any, x: Any, value: Any, *operands: Any, index: tuple[Any, ...]) -> Any:
    value = k.asarray(value, dtype=x.dtype)
    if k.is_jax:
        return _jax_setitem(k, x, value, _wide(k, x.shape, index, operands), index)
    try:
        return k.index_update(x, _rebuild(index, operands), value)
    except IndexError:  # out of bounds, in a lazy graph: see _within
        return k.index_update(x, _rebuild(index, _within(x, index, operands)), value)


# XLA's lowering of indexing avoids two patterns (jax 0.10 / XLA, CPU): the algebraic
# simplifier turns a scatter that overwrites a whole array into a `map`, and
# AlgebraicSimplifier::HandleReverse then aborts the process on reverse(map)
# ("F hlo_instruction.cc:1615] Invalid binary instruction opcode map"). Plain jax reaches it:
#
#     def f(y, five):
#         r = jnp.zeros(5).at[...].set(five)    # a scatter over everything
#         return y.at[::-1].set(r).at[0].set(1.0)    # (or jax.lax.rev(r, (0,)))
#     jax.jit(f)(jnp.arange(5.0), 5.0)          # SIGABRT while compiling
#
# x10array reached it from `r = y[::-1]; r[...] = 5.0; y[0] = 1.0` and from `y[...] = v`
# then `flip(y)`. So a write that covers the whole array is a broadcast, not a scatter, and
# a negative step is never an XLA `reverse`: indexing selects the same positions in
# ascending order and reverses them with a gather (see _forward, _reverse).
# tests/test_view_writes.py holds the regression tests (compiled, in subprocesses).


def _jax_setitem(k: Any, x: Any, value: Any, operands: tuple[Any, ...], index: tuple[Any, ...]) -> Any:
    if _covers(index, x.shape):
        shape = tuple(1 if c[0] == "n" else c[2] for c in index)
        return k.broadcast_to(value, shape).reshape(x.shape)
    if SELECT_WRITE.get() and _static_box(index, x.shape):
        return _select_write(k, x, value, index)
    forward = _forward(index, x.shape)
    if forward is None:
        return k.index_update(x, _rebuild(index, operands), value)
    # x[first] holds the positions in ascending order; reversed, it is the view the
    # negative steps describe, and `rest` indexes it with positive steps only.
    first, rest, axes = forward
    part = _reverse(k, x[_rebuild(first, ())], axes)
    part = _jax_setitem(k, part, value, operands, rest)
    return _jax_setitem(k, x, _reverse(k, part, axes), (), first)


def _select_write(k: Any, x: Any, value: Any, index: tuple[Any, ...]) -> Any:
    """`x[index] = value` for an index of static slices and new axes alone (_static_box), as
    XLA's select of the whole array: `value` padded out to x's shape (lax.pad, a step's gaps
    as interior padding) where a mask of the box's positions holds, `x` elsewhere; a negative
    step names the same positions as a positive one, with the value reversed along that axis.
    The same bits as a scatter (data movement: every element is one of the two operands'
    elements); a compiled lazy graph takes it where the value reads x at other positions (the
    lazy program builder's select_writes), which XLA's scatter cannot update in place (a heat
    stencil step `u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap` with `lap` fused runs several
    times faster so in jax.jit)."""
    lax = k.lax
    view = tuple(1 if c[0] == "n" else len(_positions(c)) for c in index)
    box = [c for c in index if c[0] == "s"]  # (one per axis of x, in order: _static_box)
    sizes = tuple(len(_positions(c)) for c in box)
    if 0 in sizes:  # (nothing written)
        return x
    value = k.broadcast_to(value, view)
    value = _reverse(k, value, tuple(i for i, c in enumerate(index) if c[0] == "s" and c[3] < 0))
    padding = []
    mask = None
    for axis, (c, n) in enumerate(zip(box, sizes)):
        positions = _positions(c)
        start, last, step = min(positions[0], positions[-1]), max(positions[0], positions[-1]), abs(c[3])
        padding.append((start, x.shape[axis] - 1 - last, step - 1))
        if n == x.shape[axis]:  # (the whole axis)
            continue
        i = lax.broadcasted_iota(k.int32, x.shape, axis)
        inside = (i >= start) & (i <= last)
        if step > 1:
            inside = inside & ((i - start) % step == 0)
        mask = inside if mask is None else mask & inside
    padded = lax.pad(value.reshape(sizes), k.zeros((), x.dtype), padding)
    return padded if mask is None else lax.select(mask, padded, x)


def _static_box(index: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """Whether `index` is static slices (of either sign of step) and new axes alone, one slice
    per axis of an array of `shape`: a box of positions that `_select_write` can write."""
    axes = 0
    for c in index:
        if c[0] == "n":
            continue
        if c[0] != "s":
            return False
        axes += 1
    return axes == len(shape)


def _box_elements(params: dict[str, Any], shape: tuple[int, ...]) -> int | None:
    """policies.SLICE_BOXES: the number of elements of an array of `shape` that `x[index]`
    names, where the index is slices with positive steps and new axes alone (a box of static
    positions); None for any other index (an integer or index array: an operand, whose value
    a compiled program reads at run time; a negative step)."""
    count = 1
    axis = 0
    for c in params["index"]:
        if c[0] == "n":
            continue
        if c[0] != "s" or c[3] <= 0:
            return None
        count *= len(range(c[1], c[2], c[3]))
        axis += 1
    return count if axis == len(shape) else None


def _wide(k: Any, shape: tuple[int, ...], index: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """The operands with each index array whose dtype cannot hold its axis's size widened to
    int64: jax makes the size a constant of the index's dtype (an int8 index on an axis of 300
    would fail in jax, not in NumPy)."""
    out = None
    for i, axis in _index_arrays(index):
        o = operands[i]
        dtype = getattr(o, "dtype", None)
        if dtype is not None and np.iinfo(dtype).max < shape[axis]:
            out = list(operands) if out is None else out
            out[i] = o.astype(k.int64)
    return operands if out is None else tuple(out)


def _index_arrays(index: tuple[Any, ...]) -> Any:
    """(operand position, axis) of each index array in a parsed index (None entries take no
    axis of the indexed array)."""
    axis = 0
    for c in index:
        if c[0] == "n" or c[0] == "e":
            continue
        if c[0] == "a":
            yield c[1], axis
        axis += 1


def _covers(index: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """Whether `index` (no integers) selects every element of an array of `shape` in order."""
    axis = 0
    for c in index:
        if c[0] == "n":
            continue
        if c[0] != "s" or c[1] != 0 or c[3] != 1 or c[2] != shape[axis]:
            return False
        axis += 1
    return axis == len(shape)


def _forward(
    index: tuple[Any, ...], shape: tuple[int, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...]] | None:
    """For an index with negative-step slices: (first, rest, axes) such that x[index] is
    reverse(x[first], axes)[rest], where `first` slices those axes with the same positions in
    ascending order (and leaves the others whole) and `rest` has positive steps only. None
    when every step is positive."""
    if not any(c[0] == "s" and c[3] < 0 for c in index):
        return None
    first = [("s", 0, n, 1) for n in shape]
    rest: list[Any] = []
    axes = []
    axis = 0
    for c in index:
        if c[0] == "n" or c[0] == "e":
            rest.append(c)
            continue
        if c[0] == "s" and c[3] < 0:
            r = _positions(c)[::-1]
            first[axis] = _slice_desc(r)
            axes.append(axis)
            rest.append(("s", 0, len(r), 1))
        else:
            rest.append(c)
        axis += 1
    return tuple(first), tuple(rest), tuple(axes)


def _reverse(k: Any, a: Any, axes: tuple[int, ...]) -> Any:
    """`a` reversed along `axes` by a gather (never an XLA reverse: see above)."""
    for axis in axes:
        n = a.shape[axis]
        a = k.take(a, k.arange(n - 1, -1, -1), axis=axis, mode="clip")
    return a


def _within(x: Any, index: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """The operands with each index array clipped into its axis. Out-of-bounds index arrays
    reach a kernel only in a lazy graph (values unknown when recorded), where a bounds check
    recorded beside it makes every array that depends on the result raise (see guard); the
    interpreter computes a placeholder meanwhile, as a compiled program does, rather than
    failing half-way through a graph."""
    out = list(operands)
    for i, axis in _index_arrays(index):
        o = operands[i]
        n = x.shape[axis]
        if isinstance(o, np.ndarray) and n > 0:
            out[i] = np.clip(o.astype(np.intp), -n, n - 1)
    return tuple(out)


def _setitem_mask_kernel(k: Any, x: Any, value: Any, mask: Any) -> Any:
    value = k.asarray(value, dtype=x.dtype)
    if not k.is_jax:
        return k.index_update(x, mask, value)
    # XLA has no dynamic shapes: scatter the selected rows with a running count instead.
    m = mask.ndim
    rest = x.shape[m:]
    p = math.prod(mask.shape)
    flat_x = x.reshape((p,) + rest)
    flat_mask = mask.reshape((p,))
    if value.ndim == len(rest) + 1 and value.shape[0] != 1:  # one row per selected element
        if value.shape[0] == 0:
            return x
        rows = k.broadcast_to(value, (value.shape[0],) + rest)
        position = k.clip(k.cumsum(flat_mask.astype(k.int64)) - 1, 0, value.shape[0] - 1)
        rows = rows[position]
    else:  # one row for all of them
        if value.ndim == len(rest) + 1:
            value = value[0]
        rows = k.broadcast_to(value, rest)[None]
    out = k.where(flat_mask.reshape((p,) + (1,) * len(rest)), rows, flat_x)
    return out.reshape(x.shape)


def _getitem_rule(x: Any, *operands: Any, index: tuple[Any, ...]) -> Any:
    """Shape and dtype of x[index], from NumPy indexing a zero-strided stand-in: microseconds,
    where abstract evaluation through jax takes milliseconds per new shape."""
    stand_in = np.broadcast_to(np.zeros((), dtype=x.dtype), x.shape)
    ops = [np.zeros(o.shape, dtype=o.dtype) if hasattr(o, "shape") else o for o in operands]
    try:
        return _getitem_kernel(NUMPY, stand_in, *ops, index=index)
    except IndexError:  # an empty axis indexed by (zero) integer arrays: let jax decide
        import jax

        from .._core.kernels import jax_namespace

        k = jax_namespace()
        return jax.eval_shape(lambda *a: _getitem_kernel(k, *a, index=index), x, *operands)


def _bounds_kernel(k: Any, indices: Any, *, size: int) -> Any:
    """[1 if an entry of `indices` is outside [-size, size) else 0, the first such entry] (in
    the indices' dtype): the flag of a lazy bounds check (see the lazy backend's `Check`)."""
    flat = indices.reshape(-1)
    if flat.shape[0] == 0:
        return k.zeros(2, dtype=indices.dtype)
    info = np.iinfo(indices.dtype)
    bad = flat >= size if size <= info.max else k.zeros(flat.shape, dtype=bool)
    if -size >= info.min:
        bad = bad | (flat < -size)
    return k.stack([k.any(bad).astype(indices.dtype), flat[k.argmax(bad)]])


INDEX_BOUNDS = Primitive("index_bounds", _bounds_kernel, rule=lambda i, *, size: Aval((2,), i.dtype))
GETITEM = Primitive("getitem", _getitem_kernel, rule=_getitem_rule, moves_data=True)
GETITEM_MASK = Primitive("getitem_mask", _getitem_kernel, dynamic_shape=True, moves_data=True)
SETITEM = Primitive("setitem", _setitem_kernel, rule=same_as_first, in_place=True, moves_data=True)
SETITEM_MASK = Primitive("setitem_mask", _setitem_mask_kernel, rule=same_as_first, in_place=True, moves_data=True)
NUMPY_QUIET.add(SETITEM, SETITEM_MASK)


def _reads_column(params: dict[str, Any], shape: tuple[int, ...]) -> bool:
    """policies.COLUMN_READS: whether `x[index]` keeps one element of x's last axis, of more
    than one: an integer (or an index array) there, `p[:, 0]`, or a slice of one element,
    `p[:, 0:1]`. (The description indexes every axis, so its last entry that takes an axis, a
    slice or an operand, is the last axis's.)"""
    if not shape or shape[-1] <= 1:
        return False
    for entry in reversed(params["index"]):
        if entry[0] in ("n", "e"):  # (no axis of x)
            continue
        if entry[0] == "s":  # (its stop is None where a negative step runs to the axis' start)
            return len(range(shape[-1])[slice(entry[1], entry[2], entry[3])]) == 1
        return entry[0] == "a"
    return False


COLUMN_READS.register(GETITEM, _reads_column)
SLICE_BOXES.register(GETITEM, _box_elements)
SLICE_BOXES.register(SETITEM, _box_elements)


# -- the public layer -------------------------------------------------------------------------


def _concrete(a: Array) -> np.ndarray | None:
    """The host value of `a` when it is computed already (nothing is run), else None."""
    return backend_impl(a._device).known(a)


def _canonical_slice(s: slice, n: int, fname: str) -> tuple[Any, ...]:
    parts = []
    for name in ("start", "stop", "step"):
        v = getattr(s, name)
        if v is not None:
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"{fname}: slice {name} must be an int or None, got {type(v).__name__}") from None
        parts.append(v)
    if parts[2] == 0:
        raise ValueError(f"{fname}: slice step cannot be zero")
    return _slice_desc(range(*slice(*parts).indices(n)))


class _Index:
    """A validated index: its description, operands, and what kind of selection it is."""

    __slots__ = ("desc", "operands", "mask", "empty_mask_ndim", "int_arrays", "ellipsis", "pending")

    def __init__(self) -> None:
        self.ellipsis = False
        self.desc: tuple[Any, ...] = ()
        self.operands: tuple[Any, ...] = ()
        self.mask: Array | None = None  # a boolean mask array that selects something
        self.empty_mask_ndim: int | None = None  # a mask that selects nothing, over m axes
        self.int_arrays: list[tuple[Array, int]] = []
        self.pending: list[tuple[Array, int, int]] | None = None  # (index array, axis, size): see guard


def _as_index_array(x: Array, item: np.ndarray, fname: str) -> Array:
    if item.dtype.kind not in "biu":
        raise TypeError(f"{fname}: index arrays must have an integer or boolean dtype, got NumPy {item.dtype}")
    from .creation import asarray

    return asarray(item, device=x._device)


def _check_mask(x: Array, mask: Array, n_items: int, fname: str) -> _Index:
    if n_items != 1:
        raise IndexError(f"{fname}: a 0-d boolean index (a Python bool or a 0-d mask) must be the sole index")
    if mask.ndim > x.ndim:
        raise IndexError(
            f"{fname}: a boolean index of {mask.ndim} dimensions is too many for an array of {x.ndim} dimensions"
        )
    for axis, (ks, xs) in enumerate(zip(mask.shape, x.shape)):
        if ks not in (xs, 0):
            raise IndexError(
                f"{fname}: the boolean index has size {ks} along axis {axis}, but the array"
                f" has size {xs} (shapes {mask.shape} and {x.shape})"
            )
    idx = _Index()
    if mask.size == 0:
        idx.empty_mask_ndim = mask.ndim
        idx.desc = (("z", mask.ndim),)
    else:
        idx.mask = mask
        idx.desc = (("m", 0),)
        idx.operands = (mask,)
    return idx


def _is_full(kind: str, item: Any) -> bool:
    """An index item that keeps its axes whole: `:` or `...`."""
    return kind == "e" or (kind == "s" and item == slice(None))


def _parse(x: Array, key: Any, fname: str) -> _Index:
    """The validated `_Index` of `x[key]`: classify the items, then either a sole index (a
    boolean mask, True or False) or a description built one axis at a time."""
    items = key if type(key) is tuple else (key,)
    kinds, consumed, n_ellipsis, sole = _classify(x, items, fname)
    if sole:
        if not _combined_mask(kinds):
            return _sole_index(x, kinds, len(items), fname)
        if consumed > x.ndim:
            raise IndexError(f"{fname}: too many indices: {consumed} given for an array of {x.ndim} dimensions")
        kinds = _masks_as_indices(x, kinds, x.ndim - consumed, fname)
    if consumed > x.ndim:
        raise IndexError(f"{fname}: too many indices: {consumed} given for an array of {x.ndim} dimensions")
    if not n_ellipsis:
        kinds.append(("e", None))
    idx = _describe(x, kinds, x.ndim - consumed, fname)
    idx.ellipsis = n_ellipsis > 0
    return idx


def _classify(x: Array, items: tuple[Any, ...], fname: str) -> tuple[list[tuple[str, Any]], int, int, bool]:
    """Each index item as (kind, value), NumPy arrays and scalars converted: "n" None, "e"
    ellipsis, "s" slice, "b" a Python or NumPy bool, "m" a boolean array, "A" an integer
    array, "i" an integer. Also the number of axes the items consume, the number of
    ellipses, and whether a "b" or "m" item is present (it must be the sole index)."""
    kinds: list[tuple[str, Any]] = []
    consumed = 0
    n_ellipsis = 0
    sole = False
    for item in items:
        if item is None:
            kinds.append(("n", None))
        elif item is Ellipsis:
            n_ellipsis += 1
            if n_ellipsis > 1:
                raise IndexError(f"{fname}: an index can only have a single ellipsis ('...')")
            kinds.append(("e", None))
        elif isinstance(item, slice):
            kinds.append(("s", item))
            consumed += 1
        elif isinstance(item, (bool, np.bool_)):
            kinds.append(("b", bool(item)))
            sole = True
        elif type(item) is Array or isinstance(item, np.ndarray):
            a = _as_index_array(x, item, fname) if isinstance(item, np.ndarray) else item
            if a._dtype.kind == "bool":
                kinds.append(("m", a))
                consumed += a.ndim
                sole = True
            elif a._dtype in INTEGER:
                kinds.append(("A", a))
                consumed += 1
            else:
                raise TypeError(f"{fname}: index arrays must have an integer or boolean dtype, got {a._dtype.name}")
        elif isinstance(item, (float, complex, np.floating, np.complexfloating)):
            raise TypeError(
                f"{fname}: indices must be integers, slices, ..., None or arrays, not {type(item).__name__}"
            )
        else:
            try:
                value = operator.index(item)
            except TypeError:
                raise TypeError(
                    f"{fname}: indices must be integers, slices, ..., None, or integer or boolean"
                    f" arrays, not {type(item).__name__}"
                ) from None
            kinds.append(("i", value))
            consumed += 1
    return kinds, consumed, n_ellipsis, sole


def _combined_mask(kinds: list[tuple[str, Any]]) -> bool:
    """Whether the key holds boolean arrays of one or more dimensions together with other
    indices (`x[..., mask]`, `x[mask, 0]`, two masks), and no Python bool or 0-d mask: NumPy
    reads each such mask as the integer arrays of its `nonzero()`. A sole mask, or a leading
    one followed by whole slices only (`x[mask, :]`), has a path of its own."""
    masks = [i for i, (kind, item) in enumerate(kinds) if kind == "m"]
    if any(kind == "b" or (kind == "m" and item.ndim == 0) for kind, item in kinds):
        return False  # (a 0-d boolean must be the sole index: _sole_index says so)
    if masks == [0] and all(_is_full(k, i) for k, i in kinds[1:]):
        return False
    return bool(masks)


def _masks_as_indices(x: Array, kinds: list[tuple[str, Any]], fill: int, fname: str) -> list[tuple[str, Any]]:
    """`kinds` with each boolean array replaced by the integer arrays of its `nonzero()`, as
    NumPy defines a mask among other indices (IndexError where its shape does not match the
    axes it covers). On a lazy device the mask's values are read (a graph break, as a sole
    mask's)."""
    from .searching import nonzero

    out: list[tuple[str, Any]] = []
    axis = 0
    for kind, item in kinds:
        if kind == "m":
            mask = common_device((x, item), fname, fixed=x)[1][1]
            covered = x.shape[axis : axis + mask.ndim]
            if mask.shape != covered:
                raise IndexError(
                    f"{fname}: a boolean index of shape {mask.shape} does not match the axes"
                    f" {axis}..{axis + mask.ndim - 1} of shape {covered} it indexes (array shape {x.shape})"
                )
            out.extend(("A", i) for i in nonzero(mask))
            axis += mask.ndim
            continue
        out.append((kind, item))
        if kind == "e":
            axis += fill
        elif kind != "n":
            axis += 1
    return out


def _sole_index(x: Array, kinds: list[tuple[str, Any]], n_items: int, fname: str) -> _Index:
    """The `_Index` of a key holding a boolean mask ("m") or a bool ("b"): IndexError unless
    it is the sole index (the first such item decides)."""
    for position, (kind, item) in enumerate(kinds):
        if kind == "m":
            item = common_device((x, item), fname, fixed=x)[1][1]
            # `x[mask, :]` / `x[mask, ...]` (trailing full slices) mean `x[mask]`: NumPy's
            # reading, which scikit-learn uses; other combinations stay out of scope.
            sole = 1 if position == 0 and all(_is_full(k, i) for k, i in kinds[1:]) else n_items
            return _check_mask(x, item, sole, fname)
        if kind == "b":
            if n_items != 1:
                raise IndexError(f"{fname}: a 0-d boolean index (a Python bool or a 0-d mask) must be the sole index")
            idx = _Index()
            if item:
                idx.desc = (("n",),) + tuple(("s", 0, n, 1) for n in x.shape)
            else:
                idx.empty_mask_ndim = 0
                idx.desc = (("z", 0),)
            return idx
    raise AssertionError("_sole_index: no boolean item")  # pragma: no cover - _classify said there was one


def _describe(x: Array, kinds: list[tuple[str, Any]], fill: int, fname: str) -> _Index:
    """The description of an index of None, slices, integers and integer arrays (`kinds`,
    with one ellipsis standing for `fill` full axes), one axis at a time; integers are
    bounds-checked now, integer arrays when their values are known (else `pending`)."""
    idx = _Index()
    desc: list[Any] = []
    operands: list[Any] = []
    axis = 0
    for position, (kind, item) in enumerate(kinds):
        if kind == "n":
            desc.append(("n",))
        elif kind == "e":
            desc.extend(("s", 0, x.shape[a], 1) for a in range(axis, axis + fill))
            axis += fill
            if not fill and position + 1 < len(kinds) and _parts(kinds, position):  # (last: parts nothing)
                desc.append(("e",))
        elif kind == "s":
            desc.append(_canonical_slice(item, x.shape[axis], fname))
            axis += 1
        elif kind == "i":
            n = x.shape[axis]
            if not -n <= item < n:
                raise IndexError(f"{fname}: index {item} is out of bounds for axis {axis} with size {n}")
            desc.append(("a", len(operands)))
            operands.append(item % n)
            axis += 1
        else:  # "A": an integer array
            item = common_device((x, item), fname, fixed=x)[1][1]
            idx.int_arrays.append((item, axis))
            if check_bounds(item, x.shape[axis], axis, fname):
                if idx.pending is None:
                    idx.pending = []
                idx.pending.append((item, axis, x.shape[axis]))
            desc.append(("a", len(operands)))
            operands.append(item)
            axis += 1
    if idx.int_arrays:
        try:
            broadcast_shapes(*(a.shape for a, _ in idx.int_arrays))
        except ValueError:
            shapes = ", ".join(str(a.shape) for a, _ in idx.int_arrays)
            raise IndexError(f"{fname}: index arrays of shapes {shapes} cannot be broadcast together") from None
    idx.desc = tuple(desc)
    idx.operands = tuple(operands)
    return idx


def _parts(kinds: list[tuple[str, Any]], position: int) -> bool:
    """Whether the ellipsis at `position` stands between integers or index arrays (one of
    them an array). Even when it spans no axis, it then parts them: NumPy (and jax) put
    their broadcast axes first rather than where they stand, so the description keeps it."""
    before = {kind for kind, _ in kinds[:position]}
    after = {kind for kind, _ in kinds[position + 1 :]}
    advanced = {"i", "A"}
    return bool(before & advanced) and bool(after & advanced) and "A" in before | after


def check_bounds(a: Array, n: int, axis: int, fname: str) -> bool:
    """IndexError now if the index array `a` is known to hold an entry outside [-n, n): its
    values are computed (eager devices, lazy arrays already materialized), or the axis is
    empty. True when the values are pending: the caller then guards its result (`guard`)."""
    if n == 0 and a.size:
        raise IndexError(f"{fname}: an index array with entries is out of bounds for axis {axis} with size 0")
    host = _concrete(a)
    if host is None:
        return True
    if host.size:
        lo, hi = host.min(), host.max()
        if lo < -n or hi >= n:
            bad = (host >= n) if host.dtype.kind == "u" else ((host < -n) | (host >= n))
            first = host.reshape(-1)[int(np.argmax(bad.reshape(-1)))]
            raise IndexError(f"{fname}: index {first} is out of bounds for axis {axis} with size {n}")
    return False


def guard(out: Array, pending: list[tuple[Array, int, int]] | None, fname: str) -> None:
    """Make the lazy result of a gather or scatter by index arrays whose values are pending
    raise IndexError (naming `fname` and the user's line) when read, if one holds an entry
    out of bounds: a flag computed beside it is checked after the run (see the lazy backend's `Check`)."""
    if pending:
        for a, axis, n in pending:
            backend_impl(out._device).guard(out, bind(INDEX_BOUNDS, a._device, a, size=n), fname, axis, n)


def normalize_index(x: Array, key: Any, fname: str) -> tuple[tuple[Any, ...], tuple[Any, ...], bool]:
    """(description, operands, has a boolean mask). Raises IndexError/TypeError/ValueError."""
    idx = _parse(x, key, fname)
    return idx.desc, idx.operands, idx.mask is not None


def _key_arrays(key: Any) -> list[Array]:
    if type(key) is Array:
        return [key]
    if type(key) is tuple:
        return [k for k in key if type(k) is Array]
    return []


def _meet(x: Array, key: Any, value: Any, fname: str) -> tuple[Array, Any, Any]:
    """x, the index arrays of `key` and an array `value` on one device (docs/devices.md): an
    uncommitted index or value joins x's device, or x joins theirs where x is uncommitted and
    they are committed. Read (`value` None), x is copied; written, an eager x without views
    moves in place (a lazy x, or one with views, cannot: ValueError)."""
    arrays = _key_arrays(key)
    if type(value) is Array:
        arrays.append(value)
    device = x._device
    if all(a._device is device or a._device == device for a in arrays):
        return x, key, value
    if value is not None and not x._committed and x._alias is None and not device.is_lazy:
        committed = {a._device for a in arrays if a._committed}
        if len(committed) == 1 and device not in committed:
            assign_device(x, committed.pop())
    _, (x2, *moved) = common_device([x, *arrays], fname, fixed=x if value is not None else None)
    if type(value) is Array:
        value = moved.pop()
    if type(key) is Array:
        key = moved[0]
    elif type(key) is tuple:
        key = tuple(moved.pop(0) if type(k) is Array else k for k in key)
    return x2, key, value


def assign_device(x: Array, device: Device) -> None:
    """Move the uncommitted eager array `x` (without views) itself to `device`, its value
    copied there: written with a committed array of that device (`x[...] = v`, `x += v`), it
    follows it as an uncommitted operand would (docs/devices.md)."""
    moved = transfer(x, device)
    x._device = device
    assign(x, moved)


def _zero_d_bools_combined(x: Array, key: Any, fname: str) -> tuple[Array, Any] | None:
    """NumPy's reading of a 0-d boolean (a Python bool or a 0-d mask) among other indices
    (`x[..., True]`, `x[0, False]`, `x[True, [0, 1]]`): a new axis of length 1 at its place,
    indexed by the integer array `[0]` (True) or `[]` (False), which joins the other index
    arrays' broadcast. Returns (the view of `x` with those axes, the key over it), or None
    when the key has no such item beside others (a sole 0-d boolean has its own path). The
    view is writable, so `x[..., True] = v` writes into `x`. A 0-d mask's value is read (a
    graph break on a lazy device, as a mask's)."""
    if type(key) is not tuple or len(key) < 2:
        return None

    def bool_array(item: Any) -> bool:
        if isinstance(item, np.ndarray):
            return item.dtype == np.bool_
        return type(item) is Array and item._dtype.kind == "bool"

    def zero_d_bool(item: Any) -> bool:
        return isinstance(item, (bool, np.bool_)) or (bool_array(item) and item.ndim == 0)

    def axes(item: Any) -> int:  # how many of the array's axes an item other than ... indexes
        return 0 if item is None else item.ndim if bool_array(item) else 1

    if not any(zero_d_bool(item) for item in key):
        return None
    consumed = sum(axes(item) for item in key if item is not Ellipsis and not zero_d_bool(item))
    if consumed > x.ndim:
        raise IndexError(f"{fname}: too many indices: {consumed} given for an array of {x.ndim} dimensions")
    fill = x.ndim - consumed
    positions: list[int] = []
    new_key: list[Any] = []
    axis = 0
    for item in key:
        if zero_d_bool(item):
            positions.append(axis)
            new_key.append(np.arange(1) if bool(item) else np.arange(0))
            axis += 1
        else:
            new_key.append(item)
            axis += fill if item is Ellipsis else axes(item)
    from .manipulation import expand_dims

    view = expand_dims(x, axis=tuple(positions))
    return view, tuple(new_key)


# -- the fast path: basic keys seen before --------------------------------------------------
# A key made only of Python ints, slices of Python ints (or None), Ellipsis and None (the
# stencil's `u[1:-1, 2:]`, a loop's `x[i]`) is validated and described by `_parse` once per
# (shape, key structure); the entry is reused while both repeat. The structure holds the
# slices' bounds (the description is canonical for them and the shape) but not the ints'
# values: those become operands, checked against their axis at every call. Anything else (a
# NumPy integer, a bool, an array, an int out of range, a bad slice) takes the general path,
# so results and error messages are those of `_parse`.


class _Basic:
    """What `_parse` made of a basic key for one shape: its description, which key items
    are ints (position in the key, the axis's size), whether the result is a view, and the
    selection's shape (for `__setitem__`'s value)."""

    __slots__ = ("desc", "ints", "view", "ellipsis", "selection")

    def __init__(self, idx: _Index, ints: tuple[tuple[int, int], ...], selection: tuple[int, ...]) -> None:
        self.desc = idx.desc
        self.ints = ints
        self.view = _is_view(idx)
        self.ellipsis = idx.ellipsis
        self.selection = selection


_BASIC: dict[tuple[Any, ...], _Basic] = {}
_BASIC_LIMIT = 4096  # entries; the table is emptied when full (a program uses a few dozen)
_INT_MARK = ("i",)  # an int's place in a structure (never equal to a slice's bounds)


def _structure(key: Any) -> tuple[Any, ...] | None:
    """The cache-key form of a basic key (see above), or None where it is not one."""
    items = key if type(key) is tuple else (key,)
    out: list[Any] = []
    for item in items:
        kind = type(item)
        if kind is slice:
            start, stop, step = item.start, item.stop, item.step
            if (
                (start is None or type(start) is int)
                and (stop is None or type(stop) is int)
                and (step is None or (type(step) is int and step != 0))
            ):
                out.append((start, stop, step))
            else:
                return None
        elif kind is int:
            out.append(_INT_MARK)
        elif item is None or item is Ellipsis:
            out.append(item)
        else:
            return None
    return tuple(out)


def _basic(x: Array, key: Any, fname: str) -> tuple[_Basic, tuple[int, ...]] | None:
    """(the entry, the int operands) of the basic `key` on `x`, or None: not a basic key,
    or an int out of range (the general path then raises as it always does)."""
    structure = _structure(key)
    if structure is None:
        return None
    shape = x._data.shape
    entry = _BASIC.get((shape, structure))
    if entry is None:
        idx = _parse(x, key, fname)  # (a bad key raises here, as on the general path)
        items = key if type(key) is tuple else (key,)
        axis_of = _int_axes(items, len(shape))
        ints = tuple((position, shape[axis_of[position]]) for position in range(len(items)) if position in axis_of)
        selection = _selection_shape(x, idx)
        assert selection is not None  # (basic indexing: the shape depends on the key only)
        entry = _Basic(idx, ints, selection)
        if len(_BASIC) >= _BASIC_LIMIT:
            _BASIC.clear()
        _BASIC[(shape, structure)] = entry
    if not entry.ints:
        return entry, ()
    items = key if type(key) is tuple else (key,)
    operands = []
    for position, n in entry.ints:
        i = items[position]
        if not -n <= i < n:
            return None
        operands.append(i % n)
    return entry, tuple(operands)


def _int_axes(items: tuple[Any, ...], ndim: int) -> dict[int, int]:
    """{position of an int in the basic key `items`: the axis it indexes}."""
    n_axes = sum(1 for item in items if item is not None and item is not Ellipsis)
    out: dict[int, int] = {}
    axis = 0
    for position, item in enumerate(items):
        if item is Ellipsis:
            axis += ndim - n_axes
        elif item is not None:
            if type(item) is int:
                out[position] = axis
            axis += 1
    return out


def getitem(x: Array, key: Any, /) -> Array:
    fast = _basic(x, key, "__getitem__")
    if fast is not None:
        entry, operands = fast
        if operands and x._device.is_lazy:  # `x[i]`: from x's value if computed (index_now)
            index_now = backend_impl(x._device).index_now
            params = {"index": entry.desc}
            if not entry.view:
                out = index_now(x, GETITEM, operands, params)
                if out is not None:
                    out._committed = x._committed
                    return out
            else:
                with WRITE_LOCK:  # indexed and registered between writes
                    out = index_now(x, GETITEM, operands, params)
                    if out is not None:
                        out._committed = x._committed
                        Alias.register(x, out, entry.desc, operands)
                        return out
        if entry.view:
            with WRITE_LOCK:  # indexed and registered between writes (see _core.primitive.WRITE_LOCK)
                out = bind(GETITEM, x._device, x, *operands, index=entry.desc)
                Alias.register(x, out, entry.desc, operands)
            return out
        return bind(GETITEM, x._device, x, *operands, index=entry.desc)
    combined = _zero_d_bools_combined(x, key, "__getitem__")
    if combined is not None:
        return getitem(*combined)
    if type(key) is Array or type(key) is tuple:
        x, key, _ = _meet(x, key, None, "__getitem__")
    idx = _parse(x, key, "__getitem__")
    if idx.mask is not None:
        return bind(GETITEM_MASK, x._device, x, *idx.operands, index=idx.desc)
    if _is_view(idx):
        with WRITE_LOCK:  # indexed and registered between writes (see _core.primitive.WRITE_LOCK)
            out = bind(GETITEM, x._device, x, *idx.operands, index=idx.desc)
            Alias.register(x, out, idx.desc, idx.operands)
        return out
    out = bind(GETITEM, x._device, x, *idx.operands, index=idx.desc)
    if idx.pending is not None:
        guard(out, idx.pending, "__getitem__")
    return out


def _is_view(idx: _Index) -> bool:
    """NumPy's rule: basic indexing gives a view unless an integer picks every axis (and no
    Ellipsis is written), which gives a scalar; index arrays give copies."""
    if idx.int_arrays:
        return False
    if idx.ellipsis:
        return True
    for component in idx.desc:
        tag = component[0]
        if tag == "s" or tag == "n":
            return True
    return False


def _is_its_own_view(x: Array, value: Array, idx: _Index) -> bool:
    alias = value._alias
    if alias is None or alias.base is None or idx.mask is not None or idx.int_arrays:
        return False
    root, desc, operands = _root_index(x, idx.desc, idx.operands)
    return alias.base is root and alias.index == desc and alias.operands == operands  # (ints here)


def _root_index(x: Array, desc: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """(array, description, operands) that select `x[desc]` from the array that owns the
    data: `x` itself, or, for a view, its base with the two indices composed."""
    alias = x._alias
    if alias is not None and alias.base is not None and alias.transform is None:
        composed = _compose(alias.index, alias.operands, desc, operands)
        if composed is not None:
            return (alias.base, *composed)
    return (x, desc, operands)


def _slice_desc(r: range) -> tuple[Any, ...]:
    """The canonical ("s", start, stop, step) of the positions in `r` (see _canonical_slice)."""
    m = len(r)
    if m == 0:
        return ("s", 0, 0, 1)
    if m == 1:
        return ("s", r[0], r[0] + 1, 1)
    last = r[-1]
    if r.step > 0:
        return ("s", r[0], last + 1, r.step)
    return ("s", r[0], last - 1 if last > 0 else None, r.step)


def _positions(component: tuple[Any, ...]) -> range:
    _, start, stop, step = component
    return range(start, -1 if stop is None else stop, step)


def _compose(
    desc1: tuple[Any, ...], ops1: tuple[Any, ...], desc2: tuple[Any, ...], ops2: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The basic index equal to indexing with desc1 and then desc2 (NumPy's view of a view
    points at the owner of the data), or None where there is none (an empty slice of a new
    axis)."""
    out: list[Any] = []
    ops: list[Any] = []
    j = 0

    def new_axes() -> None:
        nonlocal j
        while j < len(desc2) and desc2[j][0] == "n":
            out.append(("n",))
            j += 1

    for c1 in desc1:
        if c1[0] == "a":  # an x axis picked by an integer: no axis of the first view
            out.append(("a", len(ops)))
            ops.append(ops1[c1[1]])
            continue
        new_axes()
        c2 = desc2[j]
        j += 1
        if c1[0] == "s":
            r1 = _positions(c1)
            if c2[0] == "s":
                out.append(_slice_desc(r1[slice(c2[1], c2[2], c2[3])]))
            else:
                out.append(("a", len(ops)))
                ops.append(r1[ops2[c2[1]]])
        elif c2[0] == "s":  # a new axis of size 1, sliced: kept (size 1) or emptied
            if len(range(1)[slice(c2[1], c2[2], c2[3])]) == 0:
                return None
            out.append(("n",))
        # else: a new axis picked by an integer (0): gone
    new_axes()
    return tuple(out), tuple(ops)


class Transform:
    """How a function's view is computed from the array it views: `forward(base)` is the
    view's value, `backward(base, value)` the base's value once the view holds `value`
    (None: a read-only view, as NumPy makes broadcast_to's and diagonal's), and
    `layout(stand_in)` what NumPy's function does to the strides of a stand-in of the base
    (see `layout`: reshape is a view only where NumPy's is)."""

    __slots__ = ("name", "forward", "backward", "layout")

    def __init__(
        self,
        name: str,
        forward: Callable[[Array], Array],
        backward: Callable[[Array, Array], Array] | None,
        layout: Callable[[np.ndarray], np.ndarray],
    ) -> None:
        self.name = name
        self.forward = forward
        self.backward = backward
        self.layout = layout


class Alias:
    """An array's part in views: the array it views (`base`, at `index` with `operands`,
    or through a function's `transform`, or None) and weak references to the arrays that
    view it.

    After a write to an array (`_core.primitive.rebind`), `written` refreshes its live views (and
    theirs) by indexing it again (or applying the view's function again), and stores its new
    value into its base, whose other views are refreshed in turn. On the lazy device these are
    recorded operations like any other."""

    __slots__ = ("base", "index", "operands", "transform", "views", "prune_at")

    def __init__(
        self,
        base: Array | None,
        index: tuple[Any, ...] | None,
        operands: tuple[Any, ...],
        transform: Transform | None = None,
    ):
        self.base = base  # a strong reference, as a NumPy view has to its base
        self.index = index
        self.operands = operands
        self.transform = transform
        self.views: list[weakref.ref[Array]] = []
        self.prune_at = 16

    @staticmethod
    def register(base: Array, view: Array, index: tuple[Any, ...], operands: tuple[Any, ...]) -> None:
        """`view` is `base[index]` (with `operands`). The caller holds WRITE_LOCK from making
        `view` to this call (a write between the two would miss the view), so this does not
        take it again (a second, reentrant, acquisition at every slice on the hot path)."""
        base, index, operands = _root_index(base, index, operands)
        Alias._add(base, view)
        view._alias = Alias(base, index, operands)
        _share_new_view(base, view)

    @staticmethod
    def register_function(base: Array, view: Array, transform: Transform) -> None:
        """`view` is `transform.forward(base)` and sees `base`'s writes (and `base` its). The
        caller holds WRITE_LOCK, as for `register`."""
        Alias._add(base, view)
        view._alias = Alias(base, None, (), transform)
        _share_new_view(base, view)

    # -- host buffers (numpy.asarray) on a device whose views hold values of their own ----------
    # On the lazy device a view's value is its own, refreshed when x10array writes its base,
    # not when NumPy writes a buffer `numpy.asarray` handed out. So once an array's host buffer
    # is handed out (`Array.__array__`, the backend's host_buffer), every live view of it, and
    # every view made of it later, holds a NumPy view of that buffer instead (the backend's
    # share_host): a write through NumPy into any of them is seen by the next read of all, as
    # NumPy's views share memory. Until x10array writes one of them: then the write is
    # replayed as always and the handed-out buffers are no longer the arrays' values (as on
    # the eager device, where an array copies a buffer it handed out before writing it).

    def host_buffer(self, view: Array) -> np.ndarray | None:
        """`numpy.asarray(view)` of a view (this its alias): the host buffer of the array that
        owns the data is handed out, which makes `view`'s value a NumPy view of it; that is
        returned where NumPy's view is writable. None (the caller hands out a read-only buffer)
        where NumPy's view is read-only (broadcast_to, diagonal, ...) or there is no host buffer
        (an accelerator's memory, a mesh)."""
        root = view
        while root._alias is not None and root._alias.base is not None:
            root = root._alias.base
        root.__array__()  # (the root's buffer, and its views': see share_host)
        value = backend_impl(view._device).host_value(view)
        return value if value is not None and value.flags.writeable else None

    @atomic_write
    def share_host(self, target: Array, buffer: np.ndarray) -> None:
        """`buffer`, a host buffer NumPy may write, is `target`'s value (this its alias): every
        live view of `target`, and theirs, is made a NumPy view of it."""
        impl = backend_impl(target._device)
        if impl.host_value(target) is not buffer:
            return  # (another thread wrote target since: its views follow its new value)
        for view in self._live_views():
            part = impl.host_value(view)  # (a NumPy view of the buffer already)
            if part is None and (part := _share(impl, view, buffer)) is None:
                continue
            if view._alias.views:
                view._alias.share_host(view, part)

    def read_only(self) -> bool:
        """Whether the view (this its alias) is read-only: made by a function whose NumPy
        view is (broadcast_to, diagonal, ...), or a view of such a view."""
        alias: Alias | None = self
        while alias is not None and alias.base is not None:
            if alias.transform is not None and alias.transform.backward is None:
                return True
            alias = alias.base._alias
        return False

    def numpy_view(self, parent: np.ndarray) -> np.ndarray | None:
        """NumPy's view (this alias's index or function) of `parent`, NumPy's equivalent of
        the base; None where NumPy's is not a view of it."""
        try:
            transform = self.transform
            if transform is None:
                assert self.index is not None
                if any(c[0] not in "sne" and not (c[0] == "a" and isinstance(self.operands[c[1]], int))
                       for c in self.index):  # fmt: skip
                    return None
                out = parent[_rebuild(self.index, self.operands)]
            elif transform.name in ("real", "imag"):
                if parent.dtype.kind != "c":
                    return None  # (imag of a real array: read-only zeros, sharing nothing)
                out = getattr(parent, transform.name)
            else:
                out = transform.layout(parent)
        except (TypeError, ValueError, IndexError):
            return None
        return out if np.may_share_memory(out, parent) else None

    @staticmethod
    def _add(base: Array, view: Array) -> None:
        alias = base._alias
        if alias is None:
            alias = base._alias = Alias(None, None, ())
        if len(alias.views) >= alias.prune_at:
            alias.views = [r for r in alias.views if r() is not None]
            alias.prune_at = max(16, 2 * len(alias.views))
        alias.views.append(weakref.ref(view))

    def _live_views(self) -> list[Array]:
        live = [v for r in self.views if (v := r()) is not None]
        if len(live) < len(self.views):
            self.views = [weakref.ref(v) for v in live]
        return live

    def written(self, target: Array, skip: Array | None = None) -> None:
        """`target` (whose alias this is) holds a new value; `skip` has it already."""
        for view in self._live_views():
            if view is not skip:
                view._alias.refresh(view)
        base = self.base
        if base is not None:
            transform = self.transform
            if transform is None:
                value = bind(SETITEM, base._device, base, target, *self.operands, index=self.index)
            else:
                assert transform.backward is not None, "Alias.written: a read-only view was written"
                value = transform.backward(base, target)
            assign(base, value)
            base._alias.written(base, skip=target)

    def refresh(self, view: Array) -> None:
        """Index the base again: `view` sees the base's new value (and so do its views)."""
        base = self.base
        assert base is not None, "Alias.refresh: only a view's alias has a base"
        if self.transform is None:
            assign(view, bind(GETITEM, base._device, base, *self.operands, index=self.index))
        else:
            assign(view, self.transform.forward(base))
        for inner in self._live_views():
            inner._alias.refresh(inner)


def _share(impl: Any, view: Array, buffer: np.ndarray) -> np.ndarray | None:
    """Make `view`'s value NumPy's view of `buffer`, its base's host buffer (the part it is)."""
    part = view._alias.numpy_view(buffer)
    if part is None or part.shape != view.shape or part.dtype != view._dtype.np:
        return None
    return part if impl.share_host(view, part) else None


def _share_new_view(base: Array, view: Array) -> None:
    """A view just made of `base`: a NumPy view of `base`'s host buffer if `base` holds one
    (see Alias.share_host)."""
    impl = backend_impl(view._device)
    if impl.views_share_host and (buffer := impl.host_value(base)) is not None:
        _share(impl, view, buffer)


def check_writable(x: Array, fname: str) -> None:
    """ValueError if `x` is a read-only view (of broadcast_to, diagonal, ...), or a view of
    one: NumPy refuses those writes too, and a write could not be stored back."""
    alias = x._alias
    while alias is not None and alias.base is not None:
        transform = alias.transform
        if transform is not None and transform.backward is None:
            raise ValueError(
                f"{fname}: the array is a read-only view (the result of {transform.name}, as in NumPy);"
                " write into a copy instead (asarray(x, copy=True))"
            )
        alias = alias.base._alias


_BYTE = np.zeros(1, dtype=np.uint8)


def layout(x: Array) -> np.ndarray:
    """A stand-in with the strides NumPy's equivalent of `x` would have (one byte per
    element, no memory: never read): an array that views nothing is C-contiguous, a view has
    what NumPy's indexing or function made of its base's. Tells where NumPy's reshape is a
    view (`reshape_is_view`)."""
    alias = x._alias
    if alias is None or alias.base is None:
        shape = x.shape
        strides = []
        step = 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        return np.lib.stride_tricks.as_strided(_BYTE, shape=shape, strides=tuple(reversed(strides)))
    parent = layout(alias.base)
    if alias.transform is None:
        return parent[_rebuild(alias.index, alias.operands)]
    return alias.transform.layout(parent)


def reshape_is_view(x: Array, shape: tuple[int, ...]) -> bool:
    """Whether NumPy's reshape of (NumPy's equivalent of) `x` to `shape` is a view."""
    alias = x._alias
    if alias is None or alias.base is None:
        return True  # C-contiguous
    try:
        np.reshape(layout(x), shape, copy=False)
    except ValueError:
        return False
    return True


def function_view(x: Array, prim: Primitive, transform: Transform, **params: Any) -> Array:
    """`bind(prim, x._device, x, **params)`, registered as a view of `x` through `transform`
    (made and registered between writes, as getitem's views)."""
    with WRITE_LOCK:
        out = bind(prim, x._device, x, **params)
        Alias.register_function(x, out, transform)
    return out


def index_view(x: Array, out: Array, desc: tuple[Any, ...], operands: tuple[Any, ...]) -> Array:
    """Register `out` (a function's result equal to `x[desc]`, a basic index) as that view
    of `x`: expand_dims, squeeze, flip, unstack are basic indexing in NumPy. The caller
    holds WRITE_LOCK from computing `out` to this call."""
    Alias.register(x, out, desc, operands)
    return out


def _selection_shape(x: Array, idx: _Index) -> tuple[int, ...] | None:
    """The shape of `x[key]` (None when it depends on values we may not read)."""
    if idx.empty_mask_ndim is not None:
        return (0,) + x.shape[idx.empty_mask_ndim :]
    if idx.mask is not None:
        host = _concrete(idx.mask)
        if host is None:
            return None
        return (int(np.count_nonzero(host)),) + x.shape[idx.mask.ndim :]
    # Index a stand-in of the same shape (a zero-strided view) with stand-in operands.
    dummy = np.broadcast_to(np.zeros((), dtype=bool), x.shape)
    stand_ins = tuple(np.zeros(o.shape, dtype=np.intp) if type(o) is Array else o for o in idx.operands)
    try:
        return np.shape(dummy[_rebuild(idx.desc, stand_ins)])
    except IndexError:  # an index array with elements, on an axis of size 0
        raise IndexError(f"__setitem__: an index array is out of bounds for an axis of size 0 in {x.shape}") from None


def _check_mask_value(shape: tuple[int, ...], rest: tuple[int, ...], fname: str) -> None:
    inner = shape[1:] if len(shape) == len(rest) + 1 else shape
    try:
        ok = len(inner) <= len(rest) and broadcast_shapes(rest, inner) == rest
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{fname}: a value of shape {shape} cannot be broadcast to the selection (n, *{rest})")


def _check_value(x: Array, value: Any, target: tuple[int, ...] | None, fname: str, mask_ndim: int = 0) -> Any:
    if type(value) is Array:
        if value._dtype is x._dtype and value._device is x._device and value._data.shape == target:
            return value  # (the common case, `u[1:-1, 1:-1] = v`: nothing to check, move or cast)
        _check_value_dtype(x._dtype, value._dtype, fname)
        value = common_device((x, value), fname, fixed=x)[1][1]
        if value._dtype is not x._dtype:  # an integer into a floating-point array, float64 into float32, ...
            value = cast(value, x._dtype)
        if target is not None:
            try:
                ok = value.shape == target or broadcast_shapes(target, value.shape) == target
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"{fname}: a value of shape {value.shape} cannot be broadcast to the selection's shape {target}"
                )
        else:  # a mask whose count we may not read: (count, *rest)
            _check_mask_value(value.shape, x.shape[mask_ndim:], fname)
        return value
    scalar = normalize_scalar(value)
    if scalar is None:
        raise TypeError(f"{fname}: the value must be an x10array array or a Python scalar, got {type(value).__name__}")
    kind = x._dtype.kind
    if type(scalar) is float and kind in ("signed", "unsigned"):
        scalar = _float_into_integers(scalar, x._dtype, fname)
    scalar = check_scalar(scalar, x._dtype, fname)
    try:
        if kind == "real" and not isinstance(scalar, float):
            scalar = float(scalar)
        elif kind == "complex" and not isinstance(scalar, complex):
            scalar = complex(scalar)
    except OverflowError:
        raise ScalarOverflowError(f"{fname}: the Python int {scalar} is too large for {x._dtype.name}") from None
    if kind == "unsigned" and scalar > _INT64_MAX:
        scalar = x._dtype.np.type(scalar)  # beyond int64: keep the exact value as a uint64
    return scalar


def _check_value_dtype(target: DType, dtype: DType, fname: str) -> None:
    """TypeError unless a value of `dtype` may be stored into an array of dtype `target`.

    The standard (2025.12, `__setitem__`) promotes the value to the array's dtype and leaves
    the rest implementation-defined. x10array stores, cast as `astype` casts: a value that
    promotes to `target`; one of the same kind (float64 into float32, int64 into int8, as
    NumPy, JAX and PyTorch do); a real floating-point value into an integer array (NumPy's
    truncation; SciPy and array-api-extra's `at(x, i).min(1.1)` rely on it). It refuses what
    would drop information of another kind: complex into real, numbers into bool."""
    if dtype is target:
        return
    a, b = KIND_RANK[target.kind], KIND_RANK[dtype.kind]
    if a == b:
        return
    if b > a and not (dtype.kind == "real" and target.kind in ("signed", "unsigned")):
        raise TypeError(
            f"{fname}: a value of dtype {dtype.name} cannot be stored in an array of dtype"
            f" {target.name} (it would drop its {'imaginary parts' if dtype.kind == 'complex' else 'values'})"
        )
    promote(target, dtype, fname)  # (TypeError under X10ARRAY_STRICT_PROMOTION)


def _float_into_integers(value: float, dtype: DType, fname: str) -> int:
    """A Python float stored into an integer array: truncated towards zero, as NumPy (the
    standard leaves mixing a float and an integer array implementation-defined); NaN, infinity
    or a value out of range is an error, never a wrapped number."""
    if value != value or value in (math.inf, -math.inf):
        raise ValueError(f"{fname}: cannot store {value} in an array of dtype {dtype.name}")
    truncated = int(value)
    info = np.iinfo(dtype.np)
    if not info.min <= truncated <= info.max:
        raise ScalarOverflowError(f"{fname}: the Python float {value} does not fit in {dtype.name}")
    return truncated


@atomic_write
def setitem(x: Array, key: Any, value: Any, /) -> None:
    fname = "__setitem__"
    check_writable(x, fname)
    fast = _basic(x, key, fname)
    if fast is not None:
        entry, operands = fast
        if type(value) is Array:
            if value._device is not x._device and value._device != x._device:
                _, _, value = _meet(x, key, value, fname)
            alias = value._alias
            if alias is not None and alias.base is not None:
                idx = _Index()
                idx.desc, idx.operands = entry.desc, operands
                if _is_its_own_view(x, value, idx):
                    return  # (see below)
        value = _check_value(x, value, entry.selection, fname)
        rebind(x, bind(SETITEM, x._device, x, value, *operands, index=entry.desc))
        return
    combined = _zero_d_bools_combined(x, key, fname)
    if combined is not None:
        view, key = combined
        setitem(view, key, value)
        return
    if type(key) is Array or type(key) is tuple or type(value) is Array:
        _, key, value = _meet(x, key, value, fname)
    idx = _parse(x, key, fname)
    if type(value) is Array and _is_its_own_view(x, value, idx):
        # `x[k] op= y` runs `v = x[k]; v op= y` (which writes through the view) and then
        # `x[k] = v`: a view already equals what it views, so the store has nothing to do.
        return
    mask_ndim = idx.mask.ndim if idx.mask is not None else 0
    value = _check_value(x, value, _selection_shape(x, idx), fname, mask_ndim)
    if idx.empty_mask_ndim is not None:
        return  # selects nothing
    if idx.mask is not None:
        result = bind(SETITEM_MASK, x._device, x, value, idx.mask)
    else:
        result = bind(SETITEM, x._device, x, value, *idx.operands, index=idx.desc)
        if idx.pending is not None:
            guard(result, idx.pending, fname)
    rebind(x, result)
