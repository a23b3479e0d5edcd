"""Elementwise functions (the standard's "Element-wise Functions" chapter).

Each function is made by `_unary` or `_binary` from: its name, the dtype category it accepts,
and its kernel. The factory creates the primitive (kernel + lowering, one record) and the
public function (validation, Python scalars, promotion, device check), and nothing else.
Kernels take the kernel namespace `k` first, so NumPy and jax.numpy share them; where NumPy
(or XLA) departs from the standard's special cases, a small named kernel next to the line
says how.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.array import Array
from .._core.dtypes import CATEGORIES
from .._core.kernels import numpy_on_flushed
from .._core.policies import NUMPY_QUIET, XLA_HOST_KERNELS
from .._core.primitive import WRITE_LOCK, Primitive, bind, same_as_first
from .._core.validation import OperandTypeError, binary_operands, broadcast_shapes, common_device
from .indexing import Alias, Transform, index_view

__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos", "cosh",
    "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal",
    "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10",
    "log1p", "log2", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow",
    "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin", "sinh", "sqrt",
    "square", "subtract", "tan", "tanh", "trunc",
]  # fmt: skip

Kernel = Callable[..., Any]


def _elementwise_primitive(
    name: str, kernel: Kernel, quiet: bool, lowering: Kernel | None, passes_bits: bool
) -> Primitive:
    """The primitive of an elementwise function, with its NumPy warning policy beside it."""
    prim = Primitive(name, kernel, elementwise=True, lowering=lowering, passes_bits=passes_bits)
    if quiet:
        NUMPY_QUIET.add(prim)
    return prim


def _unary(
    name: str,
    category: str,
    kernel: Kernel,
    *,
    quiet: bool = True,
    doc: str = "",
    lowering: Kernel | None = None,
    passes_bits: bool = False,
) -> Callable[[Array], Array]:
    prim = _elementwise_primitive(name, kernel, quiet, lowering, passes_bits)
    allowed = CATEGORIES[category]

    def function(x: Array, /) -> Array:
        if type(x) is not Array:
            raise TypeError(f"{name}: x must be an x10array array, got {type(x).__name__}")
        if x._dtype not in allowed:
            raise TypeError(f"{name}: x must have a {category} dtype, got {x._dtype.name}")
        return bind(prim, x._device, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"{name}, elementwise; accepts {category} dtypes."
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


def _binary(
    name: str,
    category: str,
    kernel: Kernel,
    *,
    quiet: bool = True,
    doc: str = "",
    lowering: Kernel | None = None,
    passes_bits: bool = False,
) -> Callable[[Any, Any], Array]:
    prim = _elementwise_primitive(name, kernel, quiet, lowering, passes_bits)
    allowed = CATEGORIES[category]
    # the dtypes that a Python float or int meets unchanged (no cast, no bounds to check)
    inexact = frozenset(d for d in allowed if d.kind in ("real", "complex"))

    def general(x1: Any, x2: Any) -> Array:
        a, b, _, device = binary_operands(name, x1, x2, category)
        if type(a) is Array and type(b) is Array and a.shape != b.shape:
            broadcast_shapes(a.shape, b.shape, fname=name)
        return bind(prim, device, a, b)

    # `function` and its operator form (`x1 + x2`) test the common cases inline, so recording
    # one on the lazy device pays no call but `bind`'s (~1 us an operation): two arrays of one
    # dtype and shape on one device, or a floating-point array and a Python float or int.
    # Everything else goes through `general`, which validates and promotes.
    def function(x1: Any, x2: Any, /) -> Array:
        if type(x1) is Array:
            t2 = type(x2)
            if t2 is Array:
                if (
                    x1._dtype is x2._dtype
                    and x1._device is x2._device
                    and x1._dtype in allowed
                    and x1._data.shape == x2._data.shape
                ):
                    return bind(prim, x1._device, x1, x2)
            elif (t2 is float or t2 is int) and x1._dtype in inexact:
                return bind(prim, x1._device, x1, x2)
        elif type(x2) is Array and (type(x1) is float or type(x1) is int) and x2._dtype in inexact:
            return bind(prim, x2._device, x1, x2)
        return general(x1, x2)

    def operator(self: Array, other: Any, /) -> Any:
        """`function` as the Array method: NotImplemented for an operand it cannot take, so
        Python tries the other operand's reflected method. (The same inline tests.)"""
        t2 = type(other)
        if t2 is Array:
            if (
                self._dtype is other._dtype
                and self._device is other._device
                and self._dtype in allowed
                and self._data.shape == other._data.shape
            ):
                return bind(prim, self._device, self, other)
        elif (t2 is float or t2 is int) and self._dtype in inexact:
            return bind(prim, self._device, self, other)
        try:
            return general(self, other)
        except OperandTypeError:
            return NotImplemented

    function.__name__ = function.__qualname__ = operator.__name__ = name
    function.__doc__ = doc or f"{name}, elementwise with broadcasting; accepts {category} dtypes and Python scalars."
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    function.operator = operator  # type: ignore[attr-defined]  # (operators.install takes it as the method)
    return function


# -- helpers shared by the fixed-up kernels ----------------------------------------------------


def _complex(k: Any, re: Any, im: Any) -> Any:
    """re + im*1j without the arithmetic (inf * 1j would make the real part NaN)."""
    if k.is_jax:
        return k.lax.complex(re, im)
    out = k.empty(k.broadcast_shapes(re.shape, im.shape), dtype=k.promote_types(re.dtype, k.complex64))
    out.real = re
    out.imag = im
    return out


def _is_integer(k: Any, a: Any, b: Any) -> bool:
    return k.result_type(a, b).kind in "iu"


# -- accurate XLA lowerings -------------------------------------------------------------------
#
# Where XLA's own formula for a real function is less accurate than NumPy's (more than 4 ULP
# from it at normal inputs, see docs/eager-and-lazy.md and tests/_numerics.py), or loses a
# normal result to a subnormal intermediate (XLA's CPU arithmetic flushes them to zero), the
# lowering computes it another way; the NumPy kernel stays as it is. `_real_lowering` routes
# real floating-point operands to the accurate form and everything else to the kernel.


def _real_lowering(kernel: Kernel, real: Kernel) -> Kernel:
    def lowering(k: Any, *args: Any) -> Any:
        dtypes = [a.dtype for a in args if hasattr(a, "dtype")]
        if dtypes and all(d.kind == "f" for d in dtypes):
            return real(k, *args)
        return kernel(k, *args)

    return lowering


def _in_float64(real64: Kernel) -> Kernel:
    """float32 through the float64 form (rounded once at the end: within 1 ULP), float64 as is."""

    def run(k: Any, *args: Any) -> Any:
        dtype = k.result_type(*args)
        if dtype == k.float32:
            return real64(k, *(k.asarray(a, dtype=k.float64) for a in args)).astype(k.float32)
        return real64(k, *args)

    return run


def _stored(k: Any, x: Any) -> Any:
    """`x` as a rounded value XLA may not reassociate through: its algebraic simplifier
    rewrites (1 + x) - 1 to x, which the corrections below must not see."""
    if not k.is_jax:
        return x
    info = k.finfo(x.dtype)
    return k.lax.reduce_precision(x, exponent_bits=info.nexp, mantissa_bits=info.nmant)


def _pow2(k: Any, like: Any, e: int) -> Any:
    return k.asarray(2.0**e, dtype=like.dtype)


def _big_abs(k: Any, x: Any) -> Any:
    """|x| past which exp(-2|x|) is below half an ULP of 1 (cosh, sinh and tanh simplify)."""
    return 9.0 if x.dtype == k.float32 else 19.5


def _cosh64(k: Any, x: Any) -> Any:
    # Large |x|: exp(|x|/2)**2 / 2 (exp(|x| - log 2) would round its argument: 500 ULP at 700)
    ax = k.abs(x)
    half = k.exp(ax * 0.5)
    e = k.exp(ax)
    return k.where(ax > _big_abs(k, x), (0.5 * half) * half, 0.5 * (e + 1.0 / e))


def _sinh64(k: Any, x: Any) -> Any:
    ax = k.abs(x)
    half = k.exp(ax * 0.5)
    em = k.expm1(ax)
    small = 0.5 * (em + em / (em + 1.0))  # no cancellation below 1
    e = em + 1.0
    mid = 0.5 * (e - 1.0 / e)
    out = k.where(ax > _big_abs(k, x), (0.5 * half) * half, k.where(ax < 1.0, small, mid))
    return k.where(ax == 0, x, k.copysign(out, x))


def _tanh64(k: Any, x: Any) -> Any:
    ax = k.abs(x)
    t = k.expm1(2.0 * ax)
    out = k.where(ax < 0.55, t / (t + 2.0), 1.0 - 2.0 / (t + 2.0))
    out = k.where(ax > _big_abs(k, x), k.ones_like(ax), out)
    return k.where(ax == 0, x, k.copysign(out, x))  # NaN stays NaN through the arithmetic


def _log1p64(k: Any, x: Any) -> Any:
    # log(u) - ((u - 1) - x) / u with u = 1 + x: the rounding of u corrected to first order
    u = _stored(k, 1.0 + x)
    d = u - 1.0
    out = k.log(u) - (d - x) / u
    out = k.where(d == 0, x, out)
    return k.where(k.isposinf(x) | (u == 0), k.log(u), out)


def _atanh64(k: Any, x: Any) -> Any:
    # atanh(|x|) = log1p(2|x| / (1 - |x|)) / 2: 1 - |x| is exact where it matters (|x| >= 0.5)
    ax = k.abs(x)
    out = 0.5 * _log1p64(k, 2.0 * ax / (1.0 - ax))
    return k.where(ax == 0, x, k.copysign(out, x))


def _asin_real(k: Any, x: Any) -> Any:
    # XLA's 2 atan2(x, 1 + sqrt(1 - x*x)) halves a tiny x into a flushed subnormal (asin(tiny)
    # was 0); atan2(x, sqrt((1 - x)(1 + x))) keeps it.
    return k.arctan2(x, k.sqrt((1.0 - x) * (1.0 + x)))


def _scaled_pair(k: Any, a: Any, b: Any) -> tuple[Any, Any, Any]:
    """(a, b) scaled by a power of two when |b| is so small that a remainder modulo b could be
    subnormal (XLA flushes it, and floor_divide's and remainder's corrections go wrong), and
    the scale: the quotient is unchanged and the remainder scales back exactly. (A remainder
    first reduces a large |a| modulo b * 2**e, which keeps a mod b.)"""
    e = 60 if a.dtype == k.float32 else 500
    scale = (k.abs(b) < _pow2(k, b, -e)) & (k.abs(a) < _pow2(k, a, e))
    up = k.where(scale, _pow2(k, a, e), k.ones_like(a))
    return a * up, b * up, scale


def _floor_divide_real(k: Any, a: Any, b: Any) -> Any:
    a, b = k.asarray(a), k.asarray(b)
    dtype = k.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    sa, sb, _ = _scaled_pair(k, a, b)
    return _floor_divide(k, sa, sb)


def _remainder_real(k: Any, a: Any, b: Any) -> Any:
    a, b = k.asarray(a), k.asarray(b)
    dtype = k.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    e = 60 if dtype == k.float32 else 500
    big = (k.abs(b) < _pow2(k, b, -e)) & ~(k.abs(a) < _pow2(k, a, e)) & k.isfinite(a)
    a = k.where(big, k.fmod(a, b * _pow2(k, b, e)), a)  # now |a| < |b| 2**e < 1
    sa, sb, scaled = _scaled_pair(k, a, b)
    out = _remainder(k, sa, sb)
    return k.where(scaled, out * _pow2(k, out, -e), out)


def _logaddexp_real(k: Any, a: Any, b: Any) -> Any:
    # max + log1p(exp(-|a - b|)): where exp(-|a - b|) is subnormal (XLA flushes it) and the
    # maximum is small enough for it to count, add it scaled by 2**K instead.
    a, b = k.asarray(a), k.asarray(b)
    dtype = k.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    out = k.logaddexp(a, b)
    hi = k.maximum(a, b)
    d = hi - k.minimum(a, b)
    e, limit = (64, 87.0) if dtype == k.float32 else (128, 708.0)
    half = k.exp(-0.5 * d) * _pow2(k, hi, e // 2)  # exp(-d) * 2**e = half**2
    small = (d > limit) & (k.abs(hi) < 1.0) & k.isfinite(d)
    fixed = (hi * _pow2(k, hi, e) + half * half) * _pow2(k, hi, -e)
    return k.where(small, fixed, out)


# -- complex special values -------------------------------------------------------------------
#
# At complex special values (zeros, infinities, NaN) NumPy (C99) and XLA each depart from the
# standard, in different places. So each complex function is computed on the upper half-plane
# b >= +0 (and a >= +0 for odd and even functions), where the standard lists its special
# cases; a table of rules pins those; the symmetries f(conj z) = conj f(z) and f(-z) = -f(z)
# (odd) or f(z) (even) give the rest. sin, cos, tan, asin and atan are, as the standard
# defines them, -i f(iz) of sinh, cosh, tanh, asinh, atanh. Real inputs take the plain kernel.

_PI = math.pi
_NAN = math.nan
_INF = math.inf
Rule = tuple[Callable[[Any, Any, Any], Any], float | None, float | None]


def _half_plane(kernel: Kernel, rules: tuple[Rule, ...] = (), parity: str | None = None) -> Kernel:
    def run(k: Any, x: Any) -> Any:
        if x.dtype.kind != "c":
            return kernel(k, x)
        a, b = k.real(x), k.imag(x)
        flip_b = k.signbit(b) & ~k.isnan(b)
        b = k.where(flip_b, -b, b)
        flip_a = k.signbit(a) & ~k.isnan(a) if parity else k.zeros_like(flip_b)
        a = k.where(flip_a, -a, a)
        out = kernel(k, _complex(k, a, b))
        re, im = k.real(out), k.imag(out)
        for condition, re_value, im_value in rules:
            mask = condition(k, a, b)
            if re_value is not None:
                re = k.where(mask, re_value, re)
            if im_value is not None:
                im = k.where(mask, im_value, im)
        if parity == "odd":
            re = k.where(flip_a, -re, re)
            im = k.where(flip_a, -im, im)
        im = k.where(flip_a ^ flip_b, -im, im)
        return _complex(k, re, im)

    return run


def _rotated(real_kernel: Kernel, complex_kernel: Kernel, *, turn_back: bool = True) -> Kernel:
    """f(z) = -i g(iz) (or g(iz) without turning back) for complex z; the plain kernel for real."""

    def run(k: Any, x: Any) -> Any:
        if x.dtype.kind != "c":
            return real_kernel(k, x)
        out = complex_kernel(k, _complex(k, -k.imag(x), k.real(x)))
        return _complex(k, k.imag(out), -k.real(out)) if turn_back else out

    return run


# Conditions on the reduced (a, b); each rule's result replaces the kernel's where it holds.
def _zero_nan(k: Any, a: Any, b: Any) -> Any:
    return (a == 0) & k.isnan(b)


def _nonzero_finite_nan(k: Any, a: Any, b: Any) -> Any:
    return k.isfinite(a) & (a != 0) & k.isnan(b)


def _nonzero_finite_nonfinite(k: Any, a: Any, b: Any) -> Any:
    return k.isfinite(a) & (a != 0) & ~k.isfinite(b)


def _zero_nonfinite(k: Any, a: Any, b: Any) -> Any:
    return (a == 0) & ~k.isfinite(b)


def _inf_nan(k: Any, a: Any, b: Any) -> Any:
    return k.isinf(a) & k.isnan(b)


def _inf_nonfinite(k: Any, a: Any, b: Any) -> Any:
    return k.isinf(a) & ~k.isfinite(b)


def _nan_zero(k: Any, a: Any, b: Any) -> Any:
    return k.isnan(a) & (b == 0)


def _nan_finite(k: Any, a: Any, b: Any) -> Any:
    return k.isnan(a) & k.isfinite(b)


def _nan_nonzero_finite(k: Any, a: Any, b: Any) -> Any:
    return k.isnan(a) & k.isfinite(b) & (b != 0)


def _nan_inf(k: Any, a: Any, b: Any) -> Any:
    return k.isnan(a) & k.isinf(b)


def _any_inf(k: Any, a: Any, b: Any) -> Any:
    return k.isinf(a) | k.isinf(b)


# -- arithmetic ------------------------------------------------------------------------------

add = _binary("add", "numeric", lambda k, a, b: k.add(a, b))
subtract = _binary("subtract", "numeric", lambda k, a, b: k.subtract(a, b))


# -- complex arithmetic on the lazy tiers ------------------------------------------------------
#
# NumPy's complex loops and XLA's expansion of a complex multiply or divide take different
# real steps (XLA's divide another algorithm, its multiply fused multiply-adds) and meet
# subnormal and special parts differently: 600 to 4,400 of the special products and
# quotients of tests/_numerics.py differed between the lazy tiers. On a lazy tier
# (`k.tiered`) both are written out here from real steps, NumPy's own formulas (the
# textbook product, Smith's quotient as NumPy's loop computes it), each step through
# `k.rounded`: stored rounded, not fused, and flushed where XLA flushes, so the interpreter
# and the compiled program take the same IEEE steps on every CPU. Eager NumPy keeps its loops.


def _tiered_complex(k: Any, *operands: Any) -> Any:
    """The complex dtype of `operands` when the kernel must spell the operation out (a lazy
    tier, a complex result), else None."""
    if not k.tiered:
        return None
    dtype = k.result_type(*operands)
    return dtype if dtype.kind == "c" else None


def _parts(k: Any, x: Any, dtype: Any) -> tuple[Any, Any]:
    x = k.asarray(x, dtype=dtype)
    return k.real(x), k.imag(x)


def _complex_product(k: Any, a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    r = k.rounded
    return r(r(a * c) - r(b * d)), r(r(a * d) + r(b * c))


def _complex_quotient(k: Any, a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    """(a + bj) / (c + dj) as NumPy's loop divides: Smith's algorithm, the larger part of the
    divisor first; by zero, each part divided by +0."""
    r = k.rounded
    first = k.abs(c) >= k.abs(d)  # (False where a part is NaN: NumPy's second branch)
    zero = (c == 0) & (d == 0)
    # first branch: rat = d / c, scl = 1 / (c + d rat), ((a + b rat) scl, (b - a rat) scl)
    c1 = k.where(zero | ~first, k.ones_like(c), c)
    rat1 = r(d / c1)
    scl1 = r(1.0 / r(c + r(d * rat1)))
    re1, im1 = r(r(a + r(b * rat1)) * scl1), r(r(b - r(a * rat1)) * scl1)
    # second branch: rat = c / d, scl = 1 / (d + c rat), ((a rat + b) scl, (b rat - a) scl)
    d2 = k.where(first, k.ones_like(d), d)
    rat2 = r(c / d2)
    scl2 = r(1.0 / r(d + r(c * rat2)))
    re2, im2 = r(r(r(a * rat2) + b) * scl2), r(r(r(b * rat2) - a) * scl2)
    z = k.abs(c)
    re0, im0 = r(a / z), r(b / z)
    re = k.where(first, k.where(zero, re0, re1), re2)
    im = k.where(first, k.where(zero, im0, im1), im2)
    return re, im


def _multiply(k: Any, a: Any, b: Any) -> Any:
    dtype = _tiered_complex(k, a, b)
    if dtype is None:
        return k.multiply(a, b)
    return _complex(k, *_complex_product(k, *_parts(k, a, dtype), *_parts(k, b, dtype)))


multiply = _binary("multiply", "numeric", _multiply)


def _divide(k: Any, a: Any, b: Any) -> Any:
    # Integer operands, which the standard leaves to the implementation, divide as float64
    # (NumPy's and jax's choice; scikit-learn's metrics rely on it). Both must be integers:
    # under jax a Python scalar arrives as a weakly typed integer beside a float array.
    if _integral_operand(a) and _integral_operand(b):
        a = k.asarray(a, dtype=k.float64)
        b = k.asarray(b, dtype=k.float64)
    dtype = _tiered_complex(k, a, b)
    if dtype is not None:
        return _complex(k, *_complex_quotient(k, *_parts(k, a, dtype), *_parts(k, b, dtype)))
    return k.divide(a, b)


def _integral_operand(v: Any) -> bool:
    return isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "iu")


divide = _binary("divide", "numeric", _divide)


def _floor_divide(k: Any, a: Any, b: Any) -> Any:
    # The standard wants floor(a / b) where an operand is infinite; NumPy follows Python
    # (inf // 2 is NaN, 1 // -inf is -1). A zero quotient keeps the sign of a / b (XLA's
    # does not).
    if _is_integer(k, a, b):
        return k.floor_divide(a, b)
    quotient = k.divide(a, b)
    out = k.where(k.isinf(a) | k.isinf(b), k.floor(quotient), k.floor_divide(a, b))
    return k.where(out == 0, k.copysign(out, quotient), out)


def _floor_divide_lowering(k: Any, a: Any, b: Any) -> Any:
    if _is_integer(k, a, b):  # by zero: 0, as NumPy (XLA's is -1 or all ones)
        a, b = k.asarray(a), k.asarray(b)
        zero = b == 0
        return k.where(zero, k.zeros((), k.result_type(a, b)), k.floor_divide(a, k.where(zero, k.ones_like(b), b)))
    return _floor_divide_real(k, a, b)


floor_divide = _binary("floor_divide", "real numeric", _floor_divide, lowering=_floor_divide_lowering)


def _remainder(k: Any, a: Any, b: Any) -> Any:
    # A zero remainder has the sign of the divisor, as in Python (XLA keeps the dividend's).
    out = k.remainder(a, b)
    if _is_integer(k, a, b):
        return out
    return k.where(out == 0, k.copysign(out, b), out)


remainder = _binary("remainder", "real numeric", _remainder, lowering=_real_lowering(_remainder, _remainder_real))


def _pow(k: Any, a: Any, b: Any) -> Any:
    # Integers to negative powers (unspecified by the standard; NumPy raises): the truncated
    # value, 1 for a base of 1, +-1 for a base of -1, 0 otherwise.
    if not _is_integer(k, a, b):
        return k.power(a, b)
    dtype = k.result_type(a, b)
    a = k.asarray(a, dtype=dtype)
    b = k.asarray(b, dtype=dtype)
    negative = b < 0
    plain = _int_power(k, a, k.where(negative, k.zeros_like(b), b))
    if dtype.kind == "u":
        return plain
    one = k.ones_like(a)
    odd = (b % 2) != 0
    inverse = k.where(a == 1, one, k.where(a == -1, k.where(odd, -one, one), k.zeros_like(a)))
    return k.where(negative, inverse, plain)


def _int_power(k: Any, a: Any, b: Any) -> Any:
    """a ** b for b >= 0 by repeated squaring, wrapping around on overflow as NumPy does
    (jax.numpy's integer power differs from NumPy's where the result overflows)."""
    if not k.is_jax:
        return k.power(a, b)
    one = k.ones_like(a)

    def step(_: Any, carry: tuple[Any, ...]) -> tuple[Any, ...]:
        acc, base, e = carry
        acc = k.where((e & 1) == 1, acc * base, acc)
        return acc, base * base, e >> 1

    out, _, _ = k.lax.fori_loop(
        0, a.dtype.itemsize * 8, step, (k.broadcast_to(one, k.broadcast_shapes(a.shape, b.shape)), a, b)
    )
    return out


_pow_general = _binary("pow", "numeric", _pow, passes_bits=True)

# `x ** n` for a Python int n of 2 to 4 and a real floating-point or integer array: products,
# the same on every device and tier (`x ** 2` is `x * x`, `x ** 3` is `(x * x) * x`, `x ** 4`
# is `(x * x) * (x * x)`), as jax lowers a static integer exponent. The exponent picks the
# computation, so it is part of the graph (of its key), not a runtime input that a compiled
# program raises to with a generic `power` (issue 26: 80 ms against 10 ms for the Monte-Carlo
# reductions over 1e6 points). Bits: each product rounded (x * x is the correctly rounded
# square, as pow's; n = 3, 4 within 1.5 ulp of the exact power), the special values of the
# standard's pow (zeros and their signs, infinities, NaN) alike, and integers wrap as pow's do.
_SMALL_POWERS = (2, 3, 4)
_PRODUCT_KINDS = frozenset(("real", "signed", "unsigned"))
_MULTIPLY = multiply.primitive  # type: ignore[attr-defined]


def _product_power(x: Array, n: int) -> Array:
    square = bind(_MULTIPLY, x._device, x, x)
    if n == 2:
        return square
    return bind(_MULTIPLY, x._device, square, x if n == 3 else square)


def pow(x1: Any, x2: Any, /) -> Array:  # noqa: A001 - the standard's name
    if type(x2) is int and type(x1) is Array and x2 in _SMALL_POWERS and x1._dtype.kind in _PRODUCT_KINDS:
        return _product_power(x1, x2)
    return _pow_general(x1, x2)


def _pow_operator(self: Array, other: Any, /) -> Any:
    if type(other) is int and other in _SMALL_POWERS and self._dtype.kind in _PRODUCT_KINDS:
        return _product_power(self, other)
    return _pow_general.operator(self, other)  # type: ignore[attr-defined]


pow.__doc__ = _pow_general.__doc__
pow.primitive = _pow_general.primitive  # type: ignore[attr-defined]
pow.operator = _pow_operator  # type: ignore[attr-defined]
_pow_operator.__name__ = "pow"
negative = _unary("negative", "numeric", lambda k, x: k.negative(x), passes_bits=True)
positive = _unary("positive", "numeric", lambda k, x: k.positive(x), passes_bits=True)


def _abs(k: Any, x: Any) -> Any:
    # Complex: an infinite part gives +infinity even when the other part is NaN.
    if x.dtype.kind != "c":
        return k.abs(x)
    return k.where(k.isinf(k.real(x)) | k.isinf(k.imag(x)), _INF, k.abs(x))


abs = _unary("abs", "numeric", _abs, passes_bits=True)  # noqa: A001


def _square(k: Any, x: Any) -> Any:
    dtype = _tiered_complex(k, x)
    if dtype is None:
        return k.square(x)
    a, b = _parts(k, x, dtype)
    return _complex(k, *_complex_product(k, a, b, a, b))


square = _unary("square", "numeric", _square)
sqrt = _unary(
    "sqrt",
    "floating-point",
    _half_plane(
        lambda k, x: k.sqrt(x),
        (
            (lambda k, a, b: k.isnan(a), _NAN, _NAN),
            (lambda k, a, b: k.isneginf(a) & k.isnan(b), _NAN, _INF),
            (lambda k, a, b: k.isposinf(a) & k.isnan(b), _INF, _NAN),
            (lambda k, a, b: k.isinf(b), _INF, _INF),
        ),
    ),
)


def _reciprocal(k: Any, x: Any) -> Any:
    dtype = _tiered_complex(k, x)
    if dtype is None:
        return k.reciprocal(x)
    # as NumPy's loop computes 1 / (a + bj) (no literal zero part: XLA folds x + 0 into x)
    r = k.rounded
    a, b = _parts(k, x, dtype)
    first = k.abs(b) <= k.abs(a)  # (False where a part is NaN: NumPy's second branch)
    rat1 = r(b / a)
    d1 = r(a + r(b * rat1))
    rat2 = r(a / b)
    d2 = r(r(a * rat2) + b)
    re = k.where(first, r(1.0 / d1), r(rat2 / d2))
    im = k.where(first, r(r(-rat1) / d1), r(-1.0 / d2))
    return _complex(k, re, im)


reciprocal = _unary("reciprocal", "floating-point", _reciprocal)


def _sign(k: Any, x: Any) -> Any:
    # The sign of a zero is +0 (+0 + 0j), whatever the zero's own sign (XLA keeps it).
    if x.dtype.kind == "c":
        # x/|x| of the scaled x/max(|re|, |im|): |x| of 3e38+3e38j overflows in complex64
        # (NumPy then gives 0+1j or nan+infj). Infinite and NaN parts are not scaled.
        re, im = k.real(x), k.imag(x)
        m = k.maximum(k.abs(re), k.abs(im))
        m = k.where(k.isfinite(m) & (m > 0), m, k.ones_like(m))
        re, im = re / m, im / m
        # An infinite part (none NaN): the direction of the infinities, +-1 per infinite
        # part, a signed zero per finite one (NumPy's answer for infj; XLA's is NaN). A NaN
        # part: NaN + NaN j on every tier.
        inf = (k.isinf(re) | k.isinf(im)) & ~(k.isnan(re) | k.isnan(im))
        re = k.where(inf, k.where(k.isinf(re), k.sign(re), re * 0.0), re)
        im = k.where(inf, k.where(k.isinf(im), k.sign(im), im * 0.0), im)
        nan = k.isnan(re) | k.isnan(im)
        re, im = k.where(nan, _NAN, re), k.where(nan, _NAN, im)
        x = _complex(k, re, im)
    out = k.sign(x)
    if x.dtype.kind in "fc":
        out = k.where(x == 0, k.zeros_like(out), out)
    return out


sign = _unary("sign", "numeric", _sign)


def _maximum(k: Any, a: Any, b: Any) -> Any:
    # Of two zeros: +0 unless both are -0 (their sum), on every kernel (NumPy's SIMD loops
    # and XLA pick either operand).
    out = k.maximum(a, b)
    if k.result_type(a, b).kind != "f":
        return out
    return k.where((a == 0) & (b == 0), a + b, out)


def _minimum(k: Any, a: Any, b: Any) -> Any:
    # Of two zeros: -0 unless both are +0.
    out = k.minimum(a, b)
    if k.result_type(a, b).kind != "f":
        return out
    return k.where((a == 0) & (b == 0), -(-a - b), out)


maximum = _binary("maximum", "real numeric", _maximum)
minimum = _binary("minimum", "real numeric", _minimum)
hypot = _binary("hypot", "real floating-point", lambda k, a, b: k.hypot(a, b))
copysign = _binary("copysign", "real floating-point", lambda k, a, b: k.copysign(a, b), passes_bits=True)
nextafter = _binary("nextafter", "real floating-point", lambda k, a, b: k.nextafter(a, b), passes_bits=True)
logaddexp = _binary(
    "logaddexp", "real floating-point", lambda k, a, b: k.logaddexp(a, b), lowering=_in_float64(_logaddexp_real)
)
atan2 = _binary("atan2", "real floating-point", lambda k, a, b: k.arctan2(a, b), passes_bits=True)

# -- exponentials, logarithms, trigonometry --------------------------------------------------

_exp = _half_plane(
    lambda k, x: k.exp(x),
    (
        (lambda k, a, b: k.isposinf(a) & ~k.isfinite(b), _INF, _NAN),
        (lambda k, a, b: k.isneginf(a) & ~k.isfinite(b), 0.0, 0.0),
        (lambda k, a, b: ~k.isnan(a) & (b == 0), None, 0.0),
        (_nan_zero, _NAN, 0.0),
    ),
)
# float32 through float64: XLA's float32 exp is 5 ULP off near the overflow (88.7)
exp = _unary("exp", "floating-point", _exp, lowering=_real_lowering(_exp, _in_float64(lambda k, x: k.exp(x))))


def _expm1(k: Any, x: Any) -> Any:
    # Complex: exp(a) * cis(b) - 1 written so that small a and b keep their precision, with
    # the standard's special cases at infinities and NaN (NumPy's complex expm1 misses them).
    if x.dtype.kind != "c":
        return k.expm1(x)
    a, b = k.real(x), k.imag(x)
    half = k.sin(b / 2)
    re = k.expm1(a) * k.cos(b) - 2 * half * half
    im = k.where(b == 0, b, k.exp(a) * k.sin(b))
    re = k.where((a == 0) & (b == 0), k.zeros_like(a), re)
    finite_b = k.isfinite(b)
    low = k.isneginf(a)  # +0 * cis(b) - 1, and -1 + 0j where b is infinite or NaN
    re = k.where(low, -1.0, re)
    im = k.where(low, k.zeros_like(a) * k.sin(k.where(finite_b, b, k.zeros_like(b))), im)
    high = k.isposinf(a) & ~finite_b  # infinity + NaN j
    re = k.where(high, _INF, re)
    im = k.where(high, _NAN, im)
    return _complex(k, re, im)


expm1 = _unary(
    "expm1",
    "floating-point",
    _expm1,
    lowering=_real_lowering(_expm1, _in_float64(lambda k, x: k.expm1(x))),
    passes_bits=True,
)
_LOG_RULES: tuple[Rule, ...] = ((_any_inf, _INF, None),)
log = _unary("log", "floating-point", _half_plane(lambda k, x: k.log(x), _LOG_RULES))
_log1p = _half_plane(lambda k, x: k.log1p(x), _LOG_RULES)
log1p = _unary(
    "log1p", "floating-point", _log1p, lowering=_real_lowering(_log1p, _in_float64(_log1p64)), passes_bits=True
)
_log2 = _half_plane(lambda k, x: k.log2(x), _LOG_RULES)


def _split(k: Any, x: Any) -> tuple[Any, Any]:
    """(m, e) with x = m 2**e, m in [sqrt(1/2), sqrt(2)) and e an integer of x's dtype, for
    positive normal x (elsewhere m carries the special case to log: 0, inf, NaN or < 0)."""
    m, e = k.frexp(x)
    low = m < math.sqrt(0.5)
    return k.where(low, m * 2.0, m), (e - low).astype(x.dtype)


def _flushed_zero_log(k: Any, x: Any, out: Any) -> Any:
    """-inf at zeros and at the subnormals that XLA reads as zeros (jax's frexp gives them no
    exponent)."""
    return k.where(k.abs(x) < k.finfo(x.dtype).tiny, -math.inf, out)


def _log2_real(k: Any, x: Any) -> Any:
    # jax's log2 is log(x) / log(2), which is not exact at powers of two (log2(8) was
    # 2.9999999999999996, so floor(log2(8)) was 2 on the compiled tier) and differed from
    # NumPy's at 24% of the integers below 200,000. log2(x) = e + log(m) / log(2) is exact at
    # powers of two (m = 1) and NumPy's at all but 0.5% of those integers.
    m, e = _split(k, x)
    return _flushed_zero_log(k, x, e + k.log(m) / math.log(2.0))


# log10(2) in two parts (fdlibm's): e * _LOG10_2_HI is exact for every exponent e of a float64
_LOG10_2_HI = float.fromhex("0x1.34413509f6000p-2")
_LOG10_2_LO = float.fromhex("0x1.9fef311f12b36p-42")


def _log10_real(k: Any, x: Any) -> Any:
    # jax's log10 is log(x) * (1 / log(10)): 1e15 gave 14.999999999999998 and 0.1
    # -0.9999999999999999 (floor(log10(x)) off by one on the compiled tier), and it differed
    # from NumPy's at 25% of the integers below 200,000. e log10(2) + log(m) / log(10), with
    # log10(2) in two parts, is exact at the powers of ten and NumPy's at all but 1.5% of
    # those integers; within [1/2, 2] (no exponent to add) log(x) / log(10) as before.
    m, e = _split(k, x)
    out = e * _LOG10_2_HI + (e * _LOG10_2_LO + k.log(m) * math.log10(math.e))
    out = k.where((x >= 0.5) & (x <= 2.0), k.log(x) * math.log10(math.e), out)
    return _flushed_zero_log(k, x, out)


_log10 = _half_plane(lambda k, x: k.log10(x), _LOG_RULES)
log2 = _unary("log2", "floating-point", _log2, lowering=_real_lowering(_log2, _in_float64(_log2_real)))
log10 = _unary("log10", "floating-point", _log10, lowering=_real_lowering(_log10, _in_float64(_log10_real)))


def _hyperbolic_parts(k: Any, a: Any, b: Any) -> tuple[Any, Any, Any, Any]:
    """sinh(a), cosh(a), sin(b), cos(b) of real parts as the real primitives compute them on
    this tier (NumPy's kernels interpreted; the float64 forms when compiled), each stored."""
    r = k.rounded
    if k.is_jax:
        sh, ch = _in_float64(_sinh64)(k, a), _in_float64(_cosh64)(k, a)
    else:
        sh, ch = k.sinh(a), k.cosh(a)
    return r(sh), r(ch), r(k.sin(b)), r(k.cos(b))


def _sinh_upper(k: Any, x: Any) -> Any:
    # On the lazy tiers from real steps: sinh(a) cos(b) + cosh(a) sin(b) j (NumPy's csinh and
    # XLA's expansion differ at tiny and large parts: 0j against tiny j for sinh(tiny j)).
    if not k.tiered or x.dtype.kind != "c":  # (_half_plane's kernel of real arguments too)
        return k.sinh(x)
    a, b = k.real(x), k.imag(x)
    sh, ch, sb, cb = _hyperbolic_parts(k, a, b)
    r = k.rounded
    re, im = _large_hyperbolic(k, a, cb, sb, r(sh * cb), r(ch * sb))
    return _complex(k, re, k.where(b == 0, b, im))  # (not inf * 0 at b = 0)


def _cosh_upper(k: Any, x: Any) -> Any:
    # cosh(a) cos(b) + sinh(a) sin(b) j on the lazy tiers, as _sinh_upper
    if not k.tiered or x.dtype.kind != "c":  # (_half_plane's kernel of real arguments too)
        return k.cosh(x)
    a, b = k.real(x), k.imag(x)
    sh, ch, sb, cb = _hyperbolic_parts(k, a, b)
    r = k.rounded
    re, im = _large_hyperbolic(k, a, cb, sb, r(ch * cb), r(sh * sb))
    return _complex(k, re, k.where(b == 0, b, im))


def _large_hyperbolic(k: Any, a: Any, cb: Any, sb: Any, re: Any, im: Any) -> tuple[Any, Any]:
    """Where a (>= 0) is large, sinh(a) = cosh(a) = exp(a) / 2 to the last bit, and the parts
    are (exp(a/2) / 2) cos(b) exp(a/2) and the same with sin(b): finite where cosh(a) alone
    would overflow but the product does not (NumPy's csinh and ccosh scale so too)."""
    r = k.rounded
    big = a > _big_abs(k, a)
    wide = k.float64 if a.dtype == k.float32 else a.dtype  # (float32 parts: rounded once, at the end)
    a, cb, sb = (v.astype(wide) for v in (a, cb, sb))
    half = r(k.exp(r(a * 0.5)))
    scaled = r(0.5 * half)
    big_re, big_im = (r(r(r(scaled * t) * half).astype(re.dtype)) for t in (cb, sb))
    return k.where(big, big_re, re), k.where(big, big_im, im)


_sinh = _half_plane(
    _sinh_upper,
    (
        (_zero_nonfinite, 0.0, _NAN),
        (_nonzero_finite_nonfinite, _NAN, _NAN),
        (_inf_nonfinite, _INF, _NAN),
        (_nan_zero, _NAN, 0.0),
    ),
    "odd",
)
_cosh = _half_plane(
    _cosh_upper,
    (
        (_zero_nonfinite, _NAN, 0.0),
        (_nonzero_finite_nonfinite, _NAN, _NAN),
        (_inf_nonfinite, _INF, _NAN),
        (_nan_zero, _NAN, 0.0),
    ),
    "even",
)
# tanh(+inf + bj) is 1 + 0j for every b (C99 puts the sign of sin(2b) on the zero).
_tanh = _half_plane(
    lambda k, x: k.tanh(x),
    (
        (_zero_nonfinite, 0.0, _NAN),
        (_nonzero_finite_nonfinite, _NAN, _NAN),
        (lambda k, a, b: k.isinf(a), 1.0, 0.0),
        (_nan_zero, _NAN, 0.0),
    ),
    "odd",
)
_asinh = _half_plane(
    lambda k, x: k.arcsinh(x),
    (
        (lambda k, a, b: k.isfinite(a) & k.isnan(b), _NAN, _NAN),
        (_nan_zero, _NAN, 0.0),
        (_nan_nonzero_finite, _NAN, _NAN),
        (_nan_inf, _INF, _NAN),
    ),
    "odd",
)
_atanh = _half_plane(
    lambda k, x: k.arctanh(x),
    (
        (_zero_nan, 0.0, _NAN),
        (_nonzero_finite_nan, _NAN, _NAN),
        (_inf_nan, 0.0, _NAN),
        (_nan_finite, _NAN, _NAN),
        (_nan_inf, 0.0, _PI / 2),
        (lambda k, a, b: k.isnan(a) & k.isnan(b), _NAN, _NAN),
    ),
    "odd",
)
_acos = _half_plane(
    lambda k, x: k.arccos(x),
    (
        (_zero_nan, _PI / 2, _NAN),
        (_nonzero_finite_nan, _NAN, _NAN),
        (_inf_nan, _NAN, -_INF),
        (_nan_finite, _NAN, _NAN),
        (_nan_inf, _NAN, -_INF),
    ),
)
_acosh = _half_plane(
    lambda k, x: k.arccosh(x),
    (
        (_zero_nan, _NAN, _PI / 2),
        (_nonzero_finite_nan, _NAN, _NAN),
        (_inf_nan, _INF, _NAN),
        (_nan_finite, _NAN, _NAN),
        (_nan_inf, _INF, _NAN),
    ),
)

sinh = _unary("sinh", "floating-point", _sinh, lowering=_real_lowering(_sinh, _in_float64(_sinh64)), passes_bits=True)
cosh = _unary("cosh", "floating-point", _cosh, lowering=_real_lowering(_cosh, _in_float64(_cosh64)))
tanh = _unary("tanh", "floating-point", _tanh, lowering=_real_lowering(_tanh, _in_float64(_tanh64)), passes_bits=True)
asinh = _unary("asinh", "floating-point", _asinh)
acosh = _unary("acosh", "floating-point", _acosh)
atanh = _unary(
    "atanh", "floating-point", _atanh, lowering=_real_lowering(_atanh, _in_float64(_atanh64)), passes_bits=True
)
sin = _unary("sin", "floating-point", _rotated(lambda k, x: k.sin(x), _sinh), passes_bits=True)
cos = _unary("cos", "floating-point", _rotated(lambda k, x: k.cos(x), _cosh, turn_back=False))
tan = _unary("tan", "floating-point", _rotated(lambda k, x: k.tan(x), _tanh), passes_bits=True)
_asin = _rotated(lambda k, x: k.arcsin(x), _asinh)
asin = _unary("asin", "floating-point", _asin, lowering=_real_lowering(_asin, _asin_real), passes_bits=True)
acos = _unary("acos", "floating-point", _acos)
atan = _unary("atan", "floating-point", _rotated(lambda k, x: k.arctan(x), _atanh), passes_bits=True)

# -- rounding ---------------------------------------------------------------------------------

ceil = _unary("ceil", "real numeric", lambda k, x: k.ceil(x))
floor = _unary("floor", "real numeric", lambda k, x: k.floor(x))
trunc = _unary("trunc", "real numeric", lambda k, x: k.trunc(x))
round = _unary("round", "numeric", lambda k, x: k.round(x))  # noqa: A001

# -- complex ----------------------------------------------------------------------------------

conj = _unary("conj", "numeric", lambda k, x: k.conj(x), passes_bits=True)
_real = _unary("real", "numeric", lambda k, x: k.real(x), passes_bits=True)
_imag = _unary("imag", "numeric", lambda k, x: k.imag(x), passes_bits=True)


def _with_part_kernel(k: Any, z: Any, v: Any, *, part: str) -> Any:
    """`z` with its real (or imaginary) parts replaced by `v`'s, bit for bit."""
    if k.is_jax:
        re, im = (v, k.imag(z)) if part == "real" else (k.real(z), v)
        return k.lax.complex(re, im)
    out = z.copy()
    setattr(out, part, v)
    return out


_WITH_PART = Primitive("with_part", _with_part_kernel, rule=same_as_first, moves_data=True)


def _part(name: str, value: Callable[[Array], Array], doc: str) -> Callable[[Array], Array]:
    """`real` / `imag` returning views, as NumPy's: of a complex array, a writable view of its
    parts (a write stores them back, `_WITH_PART`); `real` of a real array views it whole; `imag`
    of a real array is read-only zeros (NumPy's too)."""

    def function(x: Array, /) -> Array:
        with WRITE_LOCK:  # computed and registered between writes
            out = value(x)
            if x._dtype.kind == "complex":
                transform = Transform(
                    name,
                    value,
                    lambda b, v: bind(_WITH_PART, b._device, b, v, part=name),
                    lambda st: st,  # (the same element strides, in a stand-in's units)
                )
            elif name == "real":
                return index_view(x, out, tuple(("s", 0, n, 1) for n in x.shape), ())
            else:
                transform = Transform(name, value, None, lambda st: st)
            Alias.register_function(x, out, transform)
        return out

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.primitive = value.primitive  # type: ignore[attr-defined]  # (tests/_numerics.py reads it)
    return function


real = _part("real", _real, "The real parts, elementwise (a view of `x`, as NumPy's); accepts numeric dtypes.")
imag = _part(
    "imag", _imag, "The imaginary parts, elementwise (a view of a complex `x`, as NumPy's); accepts numeric dtypes."
)

# -- classification ---------------------------------------------------------------------------

isfinite = _unary("isfinite", "numeric", lambda k, x: k.isfinite(x), quiet=False)
isinf = _unary("isinf", "numeric", lambda k, x: k.isinf(x), quiet=False)
isnan = _unary("isnan", "numeric", lambda k, x: k.isnan(x), quiet=False)
signbit = _unary("signbit", "real floating-point", lambda k, x: k.signbit(x), quiet=False)

# -- comparison -------------------------------------------------------------------------------

equal = _binary("equal", "any", lambda k, a, b: k.equal(a, b))
not_equal = _binary("not_equal", "any", lambda k, a, b: k.not_equal(a, b))
less = _binary("less", "real numeric", lambda k, a, b: k.less(a, b))
less_equal = _binary("less_equal", "real numeric", lambda k, a, b: k.less_equal(a, b))
greater = _binary("greater", "real numeric", lambda k, a, b: k.greater(a, b))
greater_equal = _binary("greater_equal", "real numeric", lambda k, a, b: k.greater_equal(a, b))

# -- logical and bitwise ----------------------------------------------------------------------

logical_and = _binary("logical_and", "boolean", lambda k, a, b: k.logical_and(a, b), quiet=False)
logical_or = _binary("logical_or", "boolean", lambda k, a, b: k.logical_or(a, b), quiet=False)
logical_xor = _binary("logical_xor", "boolean", lambda k, a, b: k.logical_xor(a, b), quiet=False)
logical_not = _unary("logical_not", "boolean", lambda k, x: k.logical_not(x), quiet=False)
bitwise_and = _binary("bitwise_and", "integer or boolean", lambda k, a, b: k.bitwise_and(a, b), quiet=False)
bitwise_or = _binary("bitwise_or", "integer or boolean", lambda k, a, b: k.bitwise_or(a, b), quiet=False)
bitwise_xor = _binary("bitwise_xor", "integer or boolean", lambda k, a, b: k.bitwise_xor(a, b), quiet=False)
bitwise_invert = _unary("bitwise_invert", "integer or boolean", lambda k, x: k.invert(x), quiet=False)
bitwise_left_shift = _binary("bitwise_left_shift", "integer", lambda k, a, b: k.left_shift(a, b), quiet=False)
bitwise_right_shift = _binary("bitwise_right_shift", "integer", lambda k, a, b: k.right_shift(a, b), quiet=False)


# -- clip (three operands, optional bounds) ---------------------------------------------------


def _clip_kernel(k: Any, x: Any, lo: Any, hi: Any) -> Any:
    # maximum(minimum(x, hi), lo) in x's dtype and the broadcast shape; a NaN in x or in a
    # bound gives NaN (comparisons with NaN are false, so each step tests for it).
    out = x
    if lo is not None:
        out = k.where((out < lo) | (lo != lo), lo, out)
    if hi is not None:
        out = k.where((out > hi) | (hi != hi), hi, out)
    if out is x:  # no bounds: a new array all the same (the input's buffer may be written later)
        return k.array(x, copy=True)
    return k.asarray(out, dtype=x.dtype)


_CLIP = Primitive("clip", _clip_kernel, elementwise=True, passes_bits=True)
NUMPY_QUIET.add(_CLIP)


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002 - the standard's names
    """Clamp each element of `x` to [min, max]; bounds are arrays or Python scalars."""
    if type(x) is not Array:
        raise TypeError(f"clip: x must be an x10array array, got {type(x).__name__}")
    if x._dtype not in CATEGORIES["real numeric"]:
        raise TypeError(f"clip: x must have a real numeric dtype, got {x._dtype.name}")
    bounds = []
    for arg, bound in (("min", min), ("max", max)):
        if bound is not None:
            bound = binary_operands("clip", x, bound, "real numeric")[1]
            if type(bound) is Array and bound._dtype.kind != x._dtype.kind:
                raise TypeError(f"clip: {arg} has dtype {bound._dtype.name}, of another kind than x ({x._dtype.name})")
        bounds.append(bound)
    broadcast_shapes(*(b.shape for b in (x, *bounds) if type(b) is Array), fname="clip")
    device, (x, *moved) = common_device([x] + [b for b in bounds if type(b) is Array], "clip")
    bounds = [moved.pop(0) if type(b) is Array else b for b in bounds]
    return bind(_CLIP, device, x, *bounds)


# On the eager CPU's XLA kernels these run in NumPy on host views (no compile per new shape and
# dtype): XLA's programs give the bits of their NumPy kernels on flushed operands
# (policies.XLA_HOST_KERNELS; tests/test_eager_xla.py compares them).
for _fn in (
    equal, not_equal, less, less_equal, greater, greater_equal, isfinite, isinf, isnan, signbit,
    logical_and, logical_or, logical_xor, logical_not, bitwise_and, bitwise_or, bitwise_xor, bitwise_invert,
):  # fmt: skip
    XLA_HOST_KERNELS.register(_fn.primitive, numpy_on_flushed(_fn.primitive))  # type: ignore[union-attr]
for _fn in (real, imag):  # (their XLA programs pass the parts' bits on: no flush)
    XLA_HOST_KERNELS.register(_fn.primitive, numpy_on_flushed(_fn.primitive, reads=False))  # type: ignore[attr-defined]
