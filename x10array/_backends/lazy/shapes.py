"""Stage 1, shape/dtype inference: the output shapes and dtypes of a recorded operation.

Recording must know them at once (an array's shape and dtype are public), without running
anything. They come from a cache keyed by (primitive, parameters, input shapes/dtypes), filled
on a miss by abstract evaluation of the primitive's lowering (`_abstract`), or, for an
elementwise primitive, by broadcasting its operands' shapes and running its NumPy kernel on
0-d operands for the dtype (`_elementwise_dtype`, cached by dtypes alone).

This stage knows abstract values only: an operand is described by its *aval*, `(shape,
dtype)` for an array and the operand's Python type for a scalar (or None), as in the
recording's key. Both caches are LRUs bounded by settings (X10ARRAY_SHAPE_CACHE_SIZE,
X10ARRAY_DTYPE_CACHE_SIZE), read at each insertion, so `settings.override` resizes them.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..._core import settings
from ..._core.kernels import NUMPY, jax_namespace
from ..._core.lru import LRU, release_jax_traces, tick
from ..._core.primitive import Primitive

ShapeDtype = tuple[tuple[int, ...], np.dtype[Any]]  # an array's aval: (shape, dtype)


def _shape_cache_batch(bound: int) -> int:
    """Evict an eighth of the shape cache at a time: one sort serves many insertions."""
    return bound // 8


# Both caches are bounded because a recorded operation's key holds its input shapes/dtypes:
# a run meeting ever-new shapes (a fit on new data each time) adds entries.
# (primitive, parameters, input avals) -> output avals; when it evicts (a batch at a time),
# jax's own traces of those shapes go too (see _core.lru.release_jax_traces)
_avals = LRU(
    "lazy shapes",
    functools.partial(settings.get, "X10ARRAY_SHAPE_CACHE_SIZE"),
    batch=_shape_cache_batch,
    on_evict=lambda _: release_jax_traces(),
)
avals_entries = _avals.entries
# (primitive, parameters, input dtypes or scalar types) -> the result dtype
_elementwise_dtypes = LRU("lazy elementwise dtypes", functools.partial(settings.get, "X10ARRAY_DTYPE_CACHE_SIZE"))


def flat_key(prim: Primitive, key_params: tuple[Any, ...], in_avals: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shape cache's key of `prim` on operands of avals `in_avals`: flat, `(prim,
    key_params, shape, dtype, ..., scalar type, ...)` (an array's shape is a tuple, a scalar's
    type is not, so it reads back unambiguously), which recording builds with one tuple."""
    flat: list[Any] = [prim, key_params]
    for a in in_avals:
        if type(a) is tuple:
            flat += a
        else:
            flat.append(a)
    return tuple(flat)


def out_avals(
    prim: Primitive,
    params: dict[str, Any],
    key_params: tuple[Any, ...],
    in_avals: tuple[Any, ...],
    inputs: tuple[Any, ...],
) -> tuple[ShapeDtype, ...]:
    """The ((shape, dtype), ...) of each output of `prim` applied to `inputs` (their avals:
    `in_avals`; `key_params`: `params` as a hashable key)."""
    key = flat_key(prim, key_params, in_avals)
    entry = avals_entries.get(key)  # (graph.Recorder.run inlines this lookup)
    if entry is not None:
        entry[1] = tick()
        return entry[0]
    return out_avals_miss(prim, params, key_params, in_avals, inputs, key)


def out_avals_miss(
    prim: Primitive,
    params: dict[str, Any],
    key_params: tuple[Any, ...],
    in_avals: tuple[Any, ...],
    inputs: tuple[Any, ...],
    key: tuple[Any, ...],
) -> tuple[ShapeDtype, ...]:
    """`out_avals` on a miss of the shape cache (`key`: `flat_key`): derive and cache them."""
    if prim.elementwise:
        # shape: the broadcast of the operands'; dtype: derived once per dtype combination
        dtype_key = (prim, key_params, tuple(a[1] if type(a) is tuple else a for a in in_avals))
        dtype = _elementwise_dtypes.get(dtype_key)
        if dtype is None:
            dtype = _elementwise_dtypes.put(dtype_key, _elementwise_dtype(prim, params, in_avals, inputs))
        shape = np.broadcast_shapes(*(a[0] for a in in_avals if type(a) is tuple))
        found: tuple[ShapeDtype, ...] = ((tuple(shape), dtype),)
    else:
        found = _abstract(prim, params, in_avals, inputs)
    return _avals.put(key, found)


def _elementwise_dtype(
    prim: Primitive, params: dict[str, Any], in_avals: tuple[Any, ...], inputs: tuple[Any, ...]
) -> Any:
    """The result dtype of an elementwise primitive: its NumPy kernel on 0-d operands (tens
    of microseconds, where jax's abstract evaluation takes about a millisecond, the bulk of a
    cold graph's recording). The eager device's dtypes come from the same kernel, and the op
    table's tests check that the XLA lowering agrees; jax decides if NumPy cannot."""
    zero_d = tuple(np.zeros((), a[1]) if type(a) is tuple else i for a, i in zip(in_avals, inputs))
    try:
        with np.errstate(all="ignore"):
            out = prim.kernel(NUMPY, *zero_d, **params)
        return np.asarray(out).dtype
    except Exception:
        scalar_avals = tuple(((), a[1]) if type(a) is tuple else a for a in in_avals)
        return _abstract(prim, params, scalar_avals, inputs)[0][1]


def _abstract(
    prim: Primitive, params: dict[str, Any], in_avals: tuple[Any, ...], inputs: tuple[Any, ...]
) -> tuple[ShapeDtype, ...]:
    """Output (shape, dtype)s by abstract evaluation of the lowering (jax.eval_shape)."""
    import jax

    k = jax_namespace()
    specs = [jax.ShapeDtypeStruct(*a) if type(a) is tuple else i for a, i in zip(in_avals, inputs)]
    with jax.enable_x64(True):
        if prim.rule is not None:
            out = prim.rule(*specs, **params)
        else:
            out = jax.eval_shape(lambda *a: prim.lowering(k, *a, **params), *specs)
    outs = out if prim.multiple_results else (out,)
    return tuple((tuple(o.shape), np.dtype(o.dtype)) for o in outs)
