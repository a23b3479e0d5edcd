"""Kernel namespaces: the `k` every primitive's kernel is written against.

`NUMPY` wraps NumPy (the eager CPU backend); `jax_namespace()` wraps `jax.numpy` and `lax`
(used inside `jax.jit`, op by op on eager accelerators and as the lowering of lazy graphs).
Both expose the NumPy API under the same names, `k.linalg`, `k.fft`, and a handful of
helpers where the two libraries differ; `k.is_jax` lets a kernel branch where it must.
"""

from __future__ import annotations

import contextvars
import functools
import math
import types
from typing import Any

import numpy as np

from .xla_numerics import flush_subnormals


def _numpy_index_update(x: np.ndarray, index: Any, value: Any) -> np.ndarray:
    # The eager executor hands over a buffer this array owns alone (copy on write).
    x[index] = value
    return x


class NumpyNamespace(types.SimpleNamespace):
    """NumPy's API as a kernel namespace (`NUMPY`, and the interpreter's variants of it,
    made from its `vars`). NumPy's submodules that NumPy itself imports only when first asked
    (`fft`, `ma`, `testing`, `f2py`, `polynomial`, ...) are looked up when a kernel first asks
    too: reading them all when the namespace was made cost ~100 ms of `import x10array`."""

    def __getattr__(self, name: str) -> Any:  # (a name not set yet: never the hot path)
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(np, name)
        setattr(self, name, value)
        return value


# NumPy's sum over one short last axis (2 to 7 elements: 3-D coordinates, k-means' squared
# differences `sum((X[:, None, :] - C) ** 2, axis=2)`) calls its inner loop once per row, a few
# elements each: several times slower than adding the axis's columns as whole arrays.
# Both give the same bits: for such an axis NumPy adds the elements in order, starting from
# +0.0 (its reduction either starts from the identity and adds row by row, or calls its
# pairwise sum, which is a plain in-order loop below 8 elements, on the row and adds that to
# the identity; the two agree, signed zeros included, whatever the layout). `_numpy_sum` and
# `_numpy_mean` take the column route for exactly that case (real float32 or float64, any
# number of rows, no dtype, out or initial; of more than two axes only C-contiguous, whose
# result has the layout NumPy gives it: a later reduction of it adds in the order its memory
# layout sets) and hand anything else to NumPy;
# tests/test_numerics.py compares them with NumPy's bits on the NumPy and CPU it runs on
# (complex sums pair their parts otherwise, and are left to NumPy). Compiled programs add the
# same columns in the same order (`_short_axis_reduction`), so for these sums and means the
# eager device, the interpreter and XLA give the same bits (tests/test_tiers.py).
_SHORT_AXIS_DTYPES = frozenset([np.dtype(np.float32), np.dtype(np.float64)])
_SHORT_AXIS_MAX = 7  # (from 8 elements on NumPy's pairwise sum unrolls into 8 partial sums)


def short_axis_sum(shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether a sum or mean over the last axis of an array of `shape` and `dtype` adds that
    axis's columns in order (`_numpy_sum` and `_short_axis_reduction`; the lazy tier's cost
    model counts its loops: tiering.inner_loops)."""
    return len(shape) >= 1 and dtype in _SHORT_AXIS_DTYPES and 2 <= shape[-1] <= _SHORT_AXIS_MAX


def _short_axis_call(shape: tuple[int, ...], a_dtype: Any, axis: Any, dtype: Any, out: Any, kw: dict[str, Any]) -> bool:
    """Whether a sum or mean called so, of an array of `shape` and `a_dtype`, adds its last
    axis's columns (short_axis_sum): over that axis alone, with no dtype, out, initial or
    where. Both routes ask it, the NumPy kernels' and the compiled programs', so that the two
    take the same calls."""
    last = len(shape) - 1
    return (
        dtype is None
        and out is None
        and not kw
        and (axis == -1 or axis == last or axis == (-1,) or axis == (last,))
        and short_axis_sum(shape, a_dtype)
    )


def _columns_route(a: Any, axis: Any, dtype: Any, out: Any, kw: dict[str, Any]) -> bool:
    """Whether numpy.sum or numpy.mean called so is one `_columns_sum` computes: an ndarray
    that _short_axis_call takes, of at most two axes or C-contiguous (the route's result is
    C-contiguous, where NumPy's keeps an operand's other layout)."""
    return (
        type(a) is np.ndarray
        and _short_axis_call(a.shape, a.dtype, axis, dtype, out, kw)
        and (a.ndim <= 2 or a.flags.c_contiguous)
    )


def _numpy_sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.sum, with the same bits; see _SHORT_AXIS_DTYPES."""
    if _columns_route(a, axis, dtype, out, kw):
        result = _columns_sum(a, keepdims)[0]
        return result if result.ndim else result[()]  # (a NumPy scalar for a 1-D array, as numpy.sum)
    return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)


def _numpy_mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.mean, with the same bits: over a short last axis (see _SHORT_AXIS_DTYPES) its sum
    by `_columns_sum`, then what NumPy's `_methods._mean` does with the sum: a true division,
    in place, by the count as an intp."""
    if _columns_route(a, axis, dtype, out, kw):
        result, total = _columns_sum(a, keepdims)
        np.true_divide(total, np.intp(a.shape[-1]), out=total, casting="unsafe")
        return result if result.ndim else result[()]
    return np.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)


def _columns_sum(a: np.ndarray, keepdims: bool) -> tuple[np.ndarray, np.ndarray]:
    """The sum over the last axis of `a` (short_axis_sum), its columns added in order: the
    result (an array of its own, of length 1 along that axis if `keepdims`) and the same
    memory without that axis."""
    result = np.empty(a.shape[:-1] + ((1,) if keepdims else ()), a.dtype)
    total = result[..., 0] if keepdims else result
    np.add(a[..., 0], 0.0, out=total)  # (+0.0 first, as NumPy's reduction: -0.0 + -0.0 sums to +0.0)
    for j in range(1, a.shape[-1]):
        np.add(total, a[..., j], out=total)
    return result, total


# NUMPY's reductions that take the short-axis route, by name (the lazy cost model reads the names:
# tiering.inner_loops)
_SHORT_AXIS_KERNELS = {"sum": _numpy_sum, "mean": _numpy_mean}
SHORT_AXIS_REDUCTIONS = frozenset(_SHORT_AXIS_KERNELS)


# NumPy's elementwise arithmetic where broadcasting leaves it a short inner loop: NumPy walks as
# one loop only the trailing axes that both operands take alike (broadcast along all of them or
# along none), so `P - c` of (100000, 3) and (3,), or k-means' `X[:, None, :] - C[None]` of
# (5000, 1, 4) and (1, 5, 4), call the loop once per 3 or 4 elements: about ten times slower
# than the same operation on operands of one shape (benchmarks/bench_dispatch.py).
# An add, subtract, multiply or divide rounds each element
# alone, whatever the loop that computes it, so the same elements in another loop are the same
# bits: `_broadcast_route` computes the result in row blocks where the operand broadcast along
# the first axis (`c`, `C[None]`), tiled to a row of about _TILE_ELEMENTS, meets the other one
# (expanded along its own broadcast axes by numpy.repeat, a copy in whole chunks: `X[:, None, :]`
# to (block, 5, 4)) in one long loop per block. It is taken for real float32 or float64
# operands of one dtype, C-contiguous, of at least _ROUTE_ELEMENTS results, whose loop would be
# shorter than _SHORT_LOOP, and where the operand to tile is broadcast along the first axis
# alone (`broadcast_route`); anything else goes to NumPy as it is. tests/test_numerics.py
# compares the route with NumPy's bit for bit.
_ROUTE_DTYPES = _SHORT_AXIS_DTYPES
_SHORT_LOOP = 16  # (NumPy's loop of at least this many elements: its call's cost is amortized)
_ROUTE_ELEMENTS = 16384  # (fewer results: the route's own Python and tile cost about what NumPy's loops do)
_TILE_ELEMENTS = 1024  # (the tiled operand's row: the long loop's length, at least)
_SMALL_OPERANDS = 1024  # (operands of fewer elements in all: NumPy's loop, unplanned)
_BLOCK_ELEMENTS = 1 << 15  # (a block's results where the other operand is expanded: it stays in the cache)
_PLANS: dict[tuple[tuple[int, ...], tuple[int, ...]], Any] = {}  # (shapes) -> broadcast_route's plan
_PLANS_BOUND = 512


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """The result shape of operands of `shapes` (taken to broadcast), and their shapes padded
    with leading 1s to its length."""
    ndim = max([len(s) for s in shapes])
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    return tuple(max([s[j] for s in padded]) for j in range(ndim)), padded


def numpy_loops(shapes: list[tuple[int, ...]]) -> int:
    """How many times NumPy's inner loop runs for an elementwise function of C-contiguous
    operands of `shapes` (see loop_count)."""
    return loop_count(*_broadcast(shapes))


def loop_count(out: tuple[int, ...], padded: list[tuple[int, ...]]) -> int:
    """How many times NumPy's inner loop runs over a result of shape `out` from C-contiguous
    operands of `padded` shapes (as many axes as `out`; a length 1 where the operand is
    broadcast, or a reduction reduces): NumPy walks as one loop the longest run of trailing
    axes (of length above 1) that every operand takes alike, broadcast along all of them or
    along none."""
    size = math.prod(out)
    if size == 0:
        return 0
    extent = 1
    pattern = None
    for j in range(len(out) - 1, -1, -1):
        if out[j] == 1:
            continue
        here = tuple(s[j] == 1 for s in padded)  # which operands are broadcast along axis j
        if pattern is None:
            pattern = here
        elif here != pattern:
            break
        extent *= out[j]
    return size // extent


def elementwise_loops(name: str, operands: list[tuple[tuple[int, ...], Any]]) -> int:
    """The inner loops NUMPY's kernel `name` runs on arrays of these (shape, dtype): by the
    broadcast route where it takes it (route_loops), else NumPy's (numpy_loops). For the lazy
    cost model (tiering.inner_loops)."""
    if name in BROADCAST_ROUTED and len(operands) == 2:
        (a, a_dtype), (b, b_dtype) = operands
        if a_dtype == b_dtype and a_dtype in _ROUTE_DTYPES and a != b and (plan := broadcast_route(a, b)) is not None:
            return route_loops(plan)
    return numpy_loops([shape for shape, _ in operands])


def broadcast_route(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Any:
    """The plan by which `_broadcast_route` computes an add, subtract, multiply or divide of
    C-contiguous operands of these shapes (of one float dtype), or None where NumPy's own loop
    is kept (see _SHORT_LOOP): (result shape, whether `a` is the operand tiled, the axes (after
    the first) along which the other is repeated and by how much, the tiled row's repeats,
    rows a block). Cached by the shapes."""
    key = (a_shape, b_shape)
    plan = _PLANS.get(key, False)
    if plan is not False:
        return plan
    plan = _plan_route(a_shape, b_shape)
    if len(_PLANS) >= _PLANS_BOUND:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def route_loops(plan: Any) -> int:
    """The loops `_broadcast_route` runs by `plan`, counted as NumPy's inner loops for the lazy
    cost model (tiering.inner_loops): one per tiled row and per block, and a quarter of one per
    chunk that numpy.repeat copies (a copied chunk costs about a fifth of a ufunc's loop call)."""
    shape, _, repeats, m, rows = plan
    n = shape[0]
    chunks = n * math.prod([count for _, count in repeats]) if repeats else 0
    return -(-n // m) + -(-n // rows) + chunks // 4


def _plan_route(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Any:
    out, padded = _broadcast([a_shape, b_shape])
    if any(x != y and x != 1 and y != 1 for x, y in zip(*padded)):
        return None  # (shapes that do not broadcast: NumPy's error)
    ndim = len(out)
    loops = loop_count(out, padded)
    size = math.prod(out)
    if (
        size < _ROUTE_ELEMENTS
        or size // max(loops, 1) >= _SHORT_LOOP
        or out[0] == 1
        or math.prod(a_shape) + math.prod(b_shape) < _SMALL_OPERANDS  # (the kernel's fast path: NumPy's)
    ):
        return None
    for tiled in (0, 1):  # the operand tiled: broadcast along the first axis, and along no other
        t, x = padded[tiled], padded[1 - tiled]
        if t[0] != 1 or x[0] != out[0] or any(t[j] != out[j] for j in range(1, ndim)):
            continue
        repeats = tuple((j, out[j]) for j in range(1, ndim) if x[j] == 1 and out[j] > 1)
        row = size // out[0]
        m = max(1, _TILE_ELEMENTS // row)
        rows = max(m, (_BLOCK_ELEMENTS // row) // m * m) if repeats else out[0]
        return out, tiled == 0, repeats, m, rows
    return None


def _broadcast_route(ufunc: Any, a: np.ndarray, b: np.ndarray, plan: Any) -> np.ndarray:
    """`ufunc(a, b)` by `plan` (broadcast_route): the same elements, each computed alone as
    NumPy computes it, in long loops."""
    shape, a_tiled, repeats, m, rows = plan
    tiled, x = (a, b) if a_tiled else (b, a)  # (x has every axis: its first is the result's)
    n, row = shape[0], math.prod(shape[1:])
    out = np.empty(shape, a.dtype)
    flat = out.reshape(n, row)
    tile = np.tile(tiled.reshape(row), m)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        block = x[start:stop]
        for axis, count in repeats:
            block = np.repeat(block, count, axis=axis)
        block = block.reshape(stop - start, row)
        whole = (stop - start) // m * m
        if whole:
            xs, into = block[:whole].reshape(-1, m * row), flat[start : start + whole].reshape(-1, m * row)
            if a_tiled:
                ufunc(tile, xs, out=into)
            else:
                ufunc(xs, tile, out=into)
        if whole < stop - start:  # (the last rows: one loop, against the tile's first rows)
            rest, rest_into = block[whole:].reshape(-1), flat[start + whole : stop].reshape(-1)
            if a_tiled:
                ufunc(tile[: rest.size], rest, out=rest_into)
            else:
                ufunc(rest, tile[: rest.size], out=rest_into)
    return out


def _routed(ufunc: Any) -> Any:
    """`ufunc` as NUMPY's kernel: through _broadcast_route where broadcast_route plans it."""

    def kernel(a: Any, b: Any, /, **kw: Any) -> Any:
        # (the common case first, a call's cost only: operands of one shape, a Python scalar)
        if type(b) is not _ndarray or type(a) is not _ndarray or a.shape == b.shape or kw:
            return ufunc(a, b, **kw) if kw else ufunc(a, b)
        if (
            a.size + b.size < _SMALL_OPERANDS  # (small operands: NumPy's, without the plan's lookup)
            or a.dtype is not b.dtype
            or a.dtype not in _ROUTE_DTYPES
            or not (a.flags.c_contiguous and b.flags.c_contiguous)
            or (plan := broadcast_route(a.shape, b.shape)) is None
        ):
            return ufunc(a, b)
        return _broadcast_route(ufunc, a, b, plan)

    kernel.__name__ = kernel.__qualname__ = ufunc.__name__
    kernel.__doc__ = f"numpy.{ufunc.__name__}, with the same bits; see kernels._broadcast_route."
    kernel.__wrapped__ = ufunc  # type: ignore[attr-defined]  # (the ufunc itself, as functools.wraps sets it)
    return kernel


_ndarray = np.ndarray
# NUMPY's elementwise kernels that take the broadcast route, by name
_BROADCAST_KERNELS = {name: _routed(getattr(np, name)) for name in ("add", "subtract", "multiply", "divide")}
_BROADCAST_KERNELS["true_divide"] = _BROADCAST_KERNELS["divide"]  # (one ufunc, NumPy's two names)
BROADCAST_ROUTED = frozenset(_BROADCAST_KERNELS)

NUMPY = NumpyNamespace(**{k: np.__dict__[k] for k in dir(np) if not k.startswith("__") and k in np.__dict__})
for _name, _kernel in {**_SHORT_AXIS_KERNELS, **_BROADCAST_KERNELS}.items():
    setattr(NUMPY, _name, _kernel)
NUMPY.is_jax = False
NUMPY.index_update = _numpy_index_update
NUMPY.lax = None
NUMPY.rounded = lambda x: x
# Whether the kernel runs on a lazy tier (the interpreter's NumPy namespaces, jax's): there a
# complex multiply, divide, square or reciprocal is written out from real steps, each through
# `rounded`, so both tiers take the same steps with the same subnormal flushing (NumPy's own
# complex loops and XLA's expansion differ at special values); eager NumPy keeps its loops.
NUMPY.tiered = False

# A traced 1.0 that XLA cannot see through, set while a lazy graph is traced for compiling
# (see `_rounded`, the steps of the complex formulas, and _backends/lazy/lowering.graph_function).
ROUNDING_GUARD: contextvars.ContextVar[Any] = contextvars.ContextVar("rounding_guard", default=None)
# The values `_rounded` made while that graph is traced (id -> value, the value held so that its
# id is not reused): a value already multiplied by the runtime 1.0 is stored, and a second
# product (a quotient's, then its step's) would be one more multiplication per element for
# nothing. Set beside ROUNDING_GUARD.
ROUNDED_VALUES: contextvars.ContextVar[dict[int, Any] | None] = contextvars.ContextVar("rounded_values", default=None)
# Set (True) while that graph's tracing lowers a write of a box of static slices that XLA should
# compute as a select of the whole array rather than a scatter into it (_api/indexing's
# `_select_write`; the compiled tier decides which: _backends/lazy/lowering.select_writes).
SELECT_WRITE: contextvars.ContextVar[bool] = contextvars.ContextVar("select_write", default=False)


def _rounded(x: Any) -> Any:
    """`x` as a step of x10array's own complex formulas (`k.rounded`, _api/elementwise) must
    store it in a compiled lazy graph: rounded to its dtype, not fused into a later addition,
    and flushed where XLA flushes.

    Only those formulas use it: they pin the special values of the complex functions (NaN,
    infinities, signed zeros of each part) that jax's own complex lowerings get wrong, and they
    keep them only when each step is rounded and flushed as written. XLA's CPU compiler
    contracts a multiplication and an addition that reads it into one fused multiply-add,
    which turns an intermediate overflow into a finite value ((inf + max j) * (max - inf j):
    inf - inf j instead of inf + NaN j), and its algebraic simplifier rewrites quotients
    ((a / b) / c as a / (b * c): 1 / (tiny j) NaN - 8.5e37 j). A product with a runtime 1.0
    (an input of the compiled program, which XLA cannot fold) is a step neither can look
    through. Real arithmetic carries no such step (XLA's own rounding, within the contract's
    bounds). Outside a compiled lazy graph (eager XLA kernels: one operation per program) `x`
    is returned as it is."""
    guard = ROUNDING_GUARD.get()
    if guard is None or not hasattr(x, "dtype") or x.dtype.kind not in "fc":
        return x
    done = ROUNDED_VALUES.get()
    if done is not None and id(x) in done:
        return x
    if x.dtype.kind == "c":
        import jax

        g = guard.astype(x.real.dtype)
        out = jax.lax.complex(x.real * g, x.imag * g)
    else:
        out = x * guard.astype(x.dtype)
    if done is not None:
        done[id(out)] = out
    return out


_INT64_MAX = 2**63 - 1


def jax_operand(value: Any, device: Any = None) -> Any:
    """An operand as jax may take it on `device`: a Python int beyond int64 (next to a uint64
    array) would overflow jax's scalar conversion, so it travels as a NumPy uint64. On a device
    that holds no complex128 (a TPU: `narrow_complex`), a Python complex travels as a NumPy
    complex64: jax would pass it as a complex128, and XLA's TPU compiler aborts the process
    converting a complex128 value to anything (a complex64 result takes the scalar rounded to
    complex64 either way, so values and result dtypes are the same)."""
    kind = type(value)
    if kind is int and value > _INT64_MAX:
        return np.uint64(value)
    if kind is complex and device is not None and narrow_complex(device):
        return np.complex64(value)
    return value


def narrow_complex(device: Any) -> bool:
    """Whether a Python complex operand travels as a complex64 on `device` (see jax_operand)."""
    from .capabilities import capabilities
    from .dtypes import complex128

    return not capabilities(device).holds(complex128)


@functools.cache  # no arguments: one entry
def jax_namespace() -> types.SimpleNamespace:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def index_update(x: Any, index: Any, value: Any) -> Any:
        return x.at[index].set(value)

    ns = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("__")})
    ns.is_jax = True
    ns.index_update = index_update
    ns.lax = lax
    ns.jax = jax
    ns.rounded = _rounded
    ns.tiered = True
    # jaxlib 0.10.2's CPU reductions drop NaN from max and min over large arrays (the
    # vectorized loop, from about 4096 elements: jax.jit(jnp.max) of such an array with a NaN
    # gives its largest number); the standard and NumPy propagate it.
    ns.max = ns.amax = functools.partial(_nan_propagating, jnp.max, jnp)
    ns.min = ns.amin = functools.partial(_nan_propagating, jnp.min, jnp)
    # jax.numpy has no errstate; kernels may use `with k.errstate(...)` on both.
    ns.errstate = lambda **kw: _NULL
    ns.sum = functools.partial(_short_axis_reduction, jnp, lax, False)
    ns.mean = functools.partial(_short_axis_reduction, jnp, lax, True)
    return ns


def _short_axis_reduction(jnp: Any, lax: Any, mean: bool, a: Any, axis: Any = None, dtype: Any = None,
                          out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # fmt: skip
    """jnp.sum (jnp.mean if `mean`), except over a short last axis (short_axis_sum: 2 to 7
    elements of a float32 or float64 array): its columns added in order, from +0.0, as NumPy
    adds them (`_columns_sum`, the interpreter's and the eager device's route), then for a
    mean divided by the count. XLA runs the additions as one elementwise loop, where its CPU
    reduction over a short last axis is slow (bench_lazy.py's `narrow` figures; on a TPU both
    forms run alike)."""
    shape = jnp.shape(a)
    if not _short_axis_call(shape, np.dtype(a.dtype), axis, dtype, out, kw):
        reduce = jnp.mean if mean else jnp.sum
        return reduce(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)
    total = a[..., 0] + a[..., 1]
    for j in range(2, shape[-1]):
        total = total + a[..., j]
    # NumPy starts from +0.0: a row of -0.0 sums to +0.0 (XLA folds an addition of a constant
    # zero, so the sign is set at the end: a partial sum from +0.0 is never -0.0, and it equals
    # this one otherwise)
    total = jnp.where(total == 0, jnp.zeros((), total.dtype), total)
    if mean:
        total = total / jnp.asarray(shape[-1], total.dtype)
    return total[..., None] if keepdims else total


def _nan_propagating(reduce: Any, jnp: Any, x: Any, axis: Any = None, *args: Any, keepdims: bool = False,
                     **kwargs: Any) -> Any:  # fmt: skip
    """jnp.max / jnp.min with NaN in the reduced extent giving NaN, whatever the size."""
    out = reduce(x, axis, *args, keepdims=keepdims, **kwargs)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return out
    return jnp.where(jnp.any(jnp.isnan(x), axis=axis, keepdims=keepdims), jnp.nan, out).astype(out.dtype)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL = _Null()


_F32_TINY = float(np.finfo(np.float32).tiny)


def numpy_on_flushed(prim: Any, *, reads: bool = True) -> Any:
    """The XLA_HOST_KERNELS function (policies) of a primitive whose XLA program gives the bits
    of its NumPy kernel on operands read as XLA reads them, subnormals as signed zeros where
    XLA flushes (`flush`): comparisons, classification, logical and bitwise operations, all
    and any, whose results are booleans or integers (no result to flush). With `reads=False`,
    a primitive that only passes its operands' bits on (a select, a complex number's parts):
    operands unflushed. None (XLA runs it) for a Python float operand that a float32 array
    would read as a subnormal."""
    kernel = prim.kernel

    def host(flush: bool, *buffers: Any, **params: Any) -> Any:
        if flush:
            for b in buffers:
                if type(b) in (float, complex) and b != 0 and abs(b) < _F32_TINY:
                    return None
            if reads:
                buffers = tuple(flush_subnormals(b) for b in buffers)
        return kernel(NUMPY, *buffers, **params)

    host.__name__ = f"{prim.name}_on_flushed"
    return host
