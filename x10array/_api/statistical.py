"""Statistical functions (the standard's chapter of that name).

Reductions share one shape: validate `x`, turn `axis` into a tuple of non-negative axes and
`keepdims` into a bool, then bind one primitive with `axes=` and `keepdims=` as parameters.
`reduction_axes` (also used by the searching and utility chapters) does the validation and
`reduction` builds the plain `f(x, /, *, axis=None, keepdims=False)` functions.

Dtype rules of the standard that NumPy does not follow by itself live in the public layer
(`_accumulation_dtype`: integer sums and products widen to the default integer of the same
signedness; floating-point inputs keep their dtype) and are handed to the kernels as DType
parameters. mean, var and std take floating-point input only (as array-api-strict does).
Empty reductions are resolved statically from shapes (mean, var and std of an
empty set are NaN; max and min of one raise ValueError), never by NumPy warnings.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.array import Array
from .._core.capabilities import capabilities, check_dtype_on
from .._core.dtypes import CATEGORIES, DType, check_dtype, int64, uint32, uint64
from .._core.kernels import NUMPY
from .._core.policies import INTERPRETER_BLOCK_SUMS, NUMPY_QUIET
from .._core.primitive import Aval, Primitive, bind
from .._core.validation import check_array, normalize_axes, normalize_axis

__all__ = [
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
]  # fmt: skip


# -- shared validation ------------------------------------------------------------------------


def check_bool(value: Any, fname: str, arg: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{fname}: {arg} must be a bool, got {type(value).__name__}")
    return value


def reduction_axes(fname: str, x: Array, axis: Any, keepdims: Any, *, nonempty: bool = False) -> tuple[int, ...]:
    """The axes a reduction runs over, as a sorted tuple of non-negative ints.

    `nonempty`: the reduction has no identity (max, min, argmax, argmin), so reducing over a
    zero-size extent is a ValueError.
    """
    check_bool(keepdims, fname, "keepdims")
    axes = tuple(sorted(normalize_axes(axis, x.ndim, fname)))
    if nonempty and axes and reduced_size(x.shape, axes) == 0:
        raise ValueError(
            f"{fname}: cannot reduce over a zero-size extent (shape {x.shape}, axes {axes}); the"
            " reduction has no identity"
        )
    return axes


def reduced_size(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _nan_of(dtype: Any) -> Any:
    nan = float("nan")
    return complex(nan, nan) if dtype.kind == "c" else nan


def cast(x: Any, dtype: Any) -> Any:
    """`x` as numpy dtype `dtype`, without a copy where it already is (NumPy and jax)."""
    return x if x.dtype == dtype else x.astype(dtype)


# -- plain reductions: f(x, /, *, axis=None, keepdims=False) ----------------------------------


def _reduction_rule(kernel: Callable[..., Any]) -> Callable[..., Aval]:
    """Shape from the axes; dtype from the NumPy kernel on a one-element stand-in (a lazy
    device records a reduction in microseconds instead of a jax abstract evaluation)."""

    def rule(x: Any, *, axes: tuple[int, ...], keepdims: bool, **params: Any) -> Aval:
        with np.errstate(all="ignore"):
            out = kernel(NUMPY, np.zeros((1,) * len(x.shape), dtype=x.dtype), axes=axes, keepdims=keepdims, **params)
        return Aval(reduced_shape(tuple(x.shape), axes, keepdims), np.asarray(out).dtype)

    return rule


def reduction(
    name: str, category: str, kernel: Callable[..., Any], *, nonempty: bool = False, doc: str = ""
) -> Callable[..., Array]:
    prim = Primitive(name, kernel, rule=_reduction_rule(kernel))
    NUMPY_QUIET.add(prim)

    def function(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
        check_array(x, name, "x", category)
        axes = reduction_axes(name, x, axis, keepdims, nonempty=nonempty)
        return bind(prim, x._device, x, axes=axes, keepdims=keepdims)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"{name} over `axis` (all axes by default); accepts {category} dtypes."
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


def _mean_kernel(k: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    if axes and reduced_size(x.shape, axes) == 0:  # the mean of nothing is NaN
        return k.full(reduced_shape(x.shape, axes, keepdims), _nan_of(x.dtype), dtype=x.dtype)
    return cast(k.mean(x, axis=axes, keepdims=keepdims), x.dtype)


def _signed_zero(k: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool, *, negative: bool) -> Any:
    """`out`, a min (`negative`) or max of `x`, where it is zero: -0 for a min if any zero
    reduced is -0, +0 for a max if any is +0, as `minimum` and `maximum` order zeros. The
    standard leaves the choice open; NumPy's reduction loops and XLA's pick a zero by its
    position (and XLA's vectorized loops otherwise than its small ones), so without this
    the tiers gave different zeros. NumPy looks only when a result is zero."""
    if x.dtype.kind != "f" or (not k.is_jax and not k.any(out == 0)):
        return out
    sign = k.signbit(x) if negative else ~k.signbit(x)
    found = k.any((x == 0) & sign, axis=axes, keepdims=keepdims)
    zero = k.where(found, -0.0 if negative else 0.0, 0.0 if negative else -0.0).astype(x.dtype)
    return k.where(out == 0, zero, out)


def _max_kernel(k: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    return _signed_zero(k, x, k.max(x, axis=axes, keepdims=keepdims), axes, keepdims, negative=False)


def _min_kernel(k: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    return _signed_zero(k, x, k.min(x, axis=axes, keepdims=keepdims), axes, keepdims, negative=True)


max = reduction(  # noqa: A001 - the standard's name
    "max", "real numeric", _max_kernel,
    nonempty=True, doc="Maximum over `axis`; NaN propagates; of zeros, +0 if any; ValueError over a zero-size extent.",
)  # fmt: skip
min = reduction(  # noqa: A001
    "min", "real numeric", _min_kernel,
    nonempty=True, doc="Minimum over `axis`; NaN propagates; of zeros, -0 if any; ValueError over a zero-size extent.",
)  # fmt: skip
mean = reduction(
    "mean", "floating-point", _mean_kernel, doc="Arithmetic mean over `axis`; NaN for an empty set.",
)  # fmt: skip

_PAIRWISE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # (summed without a cast buffer)


def _mean_blocks(params: dict[str, Any], shape: tuple[int, ...], dtype: Any) -> Callable[[Any], Any] | None:
    """mean of a 1-D float32 or float64 operand, summed block by block along NumPy's pairwise
    tree (policies.INTERPRETER_BLOCK_SUMS): `finish(total)` is what NumPy's mean (and so the
    kernel) makes of the sum, the sum as a scalar of the operand's dtype over the count as an
    intp (NumPy's `_methods._mean`). tests/test_interpreter_blocks.py checks it against the
    kernel."""
    if len(shape) != 1 or params["keepdims"] or shape[0] == 0 or np.dtype(dtype) not in _PAIRWISE_FLOATS:
        return None
    count = np.intp(shape[0])

    def finish(total: Any) -> Any:
        total = dtype.type(total)
        return total.dtype.type(total / count)

    return finish


INTERPRETER_BLOCK_SUMS.register(mean.primitive, _mean_blocks)  # type: ignore[attr-defined]


# -- variance and standard deviation ----------------------------------------------------------


def _moment_kernel(k: Any, x: Any, *, axes: tuple[int, ...], correction: float, keepdims: bool, root: bool) -> Any:
    if reduced_size(x.shape, axes) - correction <= 0:  # the standard's special case: NaN
        return k.full(reduced_shape(x.shape, axes, keepdims), _nan_of(x.dtype), dtype=x.dtype)
    out = k.var(x, axis=axes, ddof=correction, keepdims=keepdims)
    return cast(k.sqrt(out) if root else out, x.dtype)


_MOMENT = Primitive("var_std", _moment_kernel)
NUMPY_QUIET.add(_MOMENT)


def _moment(fname: str, x: Array, axis: Any, correction: Any, keepdims: Any, root: bool) -> Array:
    check_array(x, fname, "x", "real floating-point")
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{fname}: correction must be an int or a float, got {type(correction).__name__}")
    correction = float(correction)
    if not math.isfinite(correction):
        raise ValueError(f"{fname}: correction must be finite, got {correction}")
    axes = reduction_axes(fname, x, axis, keepdims)
    return bind(_MOMENT, x._device, x, axes=axes, correction=correction, keepdims=keepdims, root=root)


def var(
    x: Array, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False
) -> Array:
    """Variance over `axis` with divisor M - correction (NaN where that is <= 0)."""
    return _moment("var", x, axis, correction, keepdims, root=False)


def std(
    x: Array, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False
) -> Array:
    """Standard deviation over `axis` with divisor M - correction (NaN where that is <= 0)."""
    return _moment("std", x, axis, correction, keepdims, root=True)


# -- sums and products (with the standard's accumulation dtype) -------------------------------


def _accumulation_dtype(fname: str, x: Array, dtype: Any) -> DType:
    """The result dtype of sum/prod/cumulative_*: `dtype`, or the standard's default."""
    if dtype is None:
        kind = x._dtype.kind
        if kind not in ("signed", "unsigned"):
            return x._dtype
        # the device's default integer (its unsigned twin for unsigned input), or x's own if wider
        wide = capabilities(x._device).default_int
        if kind == "unsigned":
            wide = uint64 if wide is int64 else uint32
        return wide if wide.bits >= x._dtype.bits else x._dtype
    dtype = check_dtype_on(x._device, check_dtype(dtype, fname), fname)
    if dtype not in CATEGORIES["numeric"]:
        raise TypeError(f"{fname}: dtype must be a numeric dtype, got {dtype.name}")
    if x._dtype.kind == "complex" and dtype.kind != "complex":
        raise TypeError(
            f"{fname}: cannot accumulate a {x._dtype.name} array in {dtype.name} (it would drop the imaginary part)"
        )
    return dtype


def _accumulation(name: str, kernel: Callable[..., Any], empty: str) -> Callable[..., Array]:
    def reduce_kernel(k: Any, x: Any, *, axes: tuple[int, ...], dtype: DType, keepdims: bool) -> Any:
        return cast(kernel(k)(cast(x, dtype.np), axis=axes, keepdims=keepdims), dtype.np)

    prim = Primitive(
        name,
        reduce_kernel,
        rule=lambda x, *, axes, dtype, keepdims: Aval(reduced_shape(tuple(x.shape), axes, keepdims), dtype.np),
    )
    NUMPY_QUIET.add(prim)

    def function(
        x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None, keepdims: bool = False
    ) -> Array:
        check_array(x, name, "x", "numeric")
        out_dtype = _accumulation_dtype(name, x, dtype)
        axes = reduction_axes(name, x, axis, keepdims)
        return bind(prim, x._device, x, axes=axes, dtype=out_dtype, keepdims=keepdims)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"{name.capitalize()} over `axis`; integers widen to int64/uint64 unless `dtype` says otherwise;"
        f" {empty} when empty."
    )
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


sum = _accumulation("sum", lambda k: k.sum, "0")  # noqa: A001 - the standard's name
prod = _accumulation("prod", lambda k: k.prod, "1")


# -- cumulative sums and products -------------------------------------------------------------


def _cumulative_kernel(k: Any, x: Any, *, op: str, axis: int, dtype: DType, include_initial: bool) -> Any:
    x = cast(x, dtype.np)
    out = k.cumsum(x, axis=axis) if op == "sum" else k.cumprod(x, axis=axis)
    if include_initial:
        shape = x.shape[:axis] + (1,) + x.shape[axis + 1 :]
        initial = k.zeros(shape, dtype=dtype.np) if op == "sum" else k.ones(shape, dtype=dtype.np)
        out = k.concatenate([initial, out], axis=axis)
    return cast(out, dtype.np)


_CUMULATIVE = Primitive("cumulative", _cumulative_kernel)
NUMPY_QUIET.add(_CUMULATIVE)


def _cumulative(op: str, x: Array, axis: Any, dtype: Any, include_initial: Any) -> Array:
    fname = f"cumulative_{op}"
    check_array(x, fname, "x", "numeric")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fname}: axis is required for an array with {x.ndim} dimensions")
        axis = 0
    axis = normalize_axis(axis, x.ndim, fname)
    out_dtype = _accumulation_dtype(fname, x, dtype)
    check_bool(include_initial, fname, "include_initial")
    return bind(_CUMULATIVE, x._device, x, op=op, axis=axis, dtype=out_dtype, include_initial=include_initial)


def cumulative_sum(
    x: Array, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False
) -> Array:
    """Cumulative sum along `axis` (optional for 1-D input); `include_initial` prepends 0."""
    return _cumulative("sum", x, axis, dtype, include_initial)


def cumulative_prod(
    x: Array, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False
) -> Array:
    """Cumulative product along `axis` (optional for 1-D input); `include_initial` prepends 1."""
    return _cumulative("prod", x, axis, dtype, include_initial)
