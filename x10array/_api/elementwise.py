"""Elementwise functions (the standard's "Element-wise Functions" chapter).

Each function is made by `_unary` or `_binary` from: its name, the dtype category it accepts,
and its kernel. The factory creates the primitive (kernel + lowering, one record) and the
public function (validation, Python scalars, promotion, device check), and nothing else.
Kernels take the kernel namespace `k` first, so NumPy and jax.numpy share them; where NumPy
(or XLA) departs from the standard's special cases, a small named kernel next to the line
says how.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

from .._core.array import Array
from .._core.dtypes import CATEGORIES
from .._core.kernels import NUMPY, numpy_on_flushed
from .._core.policies import (
    INTERPRETER_BLOCKS,
    INTERPRETER_BLOCKS_UNCAST,
    INTERPRETER_UFUNCS,
    NUMPY_QUIET,
    XLA_HOST_KERNELS,
)
from .._core.primitive import WRITE_LOCK, Primitive, bind, same_as_first
from .._core.validation import (
    OperandTypeError,
    binary_operands,
    broadcast_shapes,
    common_device,
    not_an_array,
    wrong_dtype,
)
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
            raise TypeError(not_an_array(name, "x", x))
        if x._dtype not in allowed:
            raise TypeError(wrong_dtype(name, "x", category, x._dtype))
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

    def reflected(self: Array, other: Any, /) -> Any:
        """The reflected method (`other op self`, `4.0 * u`): a Python float or int with a
        floating-point array inline, as `function` tests it; else `function(other, self)`'s
        general path, NotImplemented for an operand it cannot take."""
        t1 = type(other)
        if (t1 is float or t1 is int) and self._dtype in inexact:
            return bind(prim, self._device, other, self)
        try:
            return general(other, self)
        except OperandTypeError:
            return NotImplemented

    function.__name__ = function.__qualname__ = operator.__name__ = reflected.__name__ = name
    function.__doc__ = doc or f"{name}, elementwise with broadcasting; accepts {category} dtypes and Python scalars."
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    function.operator = operator  # type: ignore[attr-defined]  # (operators.install takes it as the method)
    function.reflected = reflected  # type: ignore[attr-defined]  # (and this as the reflected one)
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
    rewrites (1 + x) - 1 to x, which the corrections below must not see. An optimization
    barrier (not a reduce-precision step: XLA's float64 emulation on a TPU has none)."""
    if not k.is_jax:
        return x
    return k.lax.optimization_barrier(x)


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
        if k.tiered:  # (the parts as the arithmetic reads them: the rules' tests too)
            a, b = k.rounded(a), k.rounded(b)
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
    """The parts of `x` as the arithmetic reads them (`k.rounded`: flushed where XLA flushes)."""
    x = k.asarray(x, dtype=dtype)
    return k.rounded(k.real(x)), k.rounded(k.imag(x))


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
    if not k.is_jax:
        return _numpy_complex_product(k, a, b, dtype)
    return _complex(k, *_complex_product(k, *_parts(k, a, dtype), *_parts(k, b, dtype)))


# The interpreter's forms of _complex_product and _complex_quotient: the same IEEE steps, so
# the same bits, in fewer NumPy passes (the parts read in place, the two branches of Smith's
# algorithm as one with its operands selected, the result written into one complex buffer):
# _complex_quotient's 12 divisions and 30-odd temporaries made an interpreted complex divide
# ~15x NumPy's.


def _within(k: Any, x: Any, e: int, upper: bool) -> bool:
    """Whether every nonzero part of complex `x` is at least 2**-e in magnitude (and, with
    `upper`, every finite one at most 2**e): then no step of a product (e of half the exponent
    range) or quotient (a quarter) is subnormal, and storing each step flushes nothing."""
    m = k.abs(x.reshape(-1).view(x.real.dtype)) if x.flags.c_contiguous else k.abs(k.concatenate([x.real, x.imag]))
    if m.size == 0:
        return True
    if upper and not m.max() <= 2.0**e and ((m > 2.0**e) & k.isfinite(m)).any():
        return False
    bits = m.view(f"u{m.itemsize}")
    k.subtract(bits, 1, out=bits, casting="unsafe")  # (zero wraps around to the largest)
    return bool(bits.min() >= k.asarray(2.0**-e, m.dtype).view(bits.dtype) - 1)


def _swapped(k: Any, mask: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(where(m, a, b), where(m, b, a)) bit for bit, `mask` all ones where m: by exclusive or
    (NumPy's where is slow on a random mask: 4 ms a million elements, a branch each)."""
    ua, ub = k.ascontiguousarray(a).view(mask.dtype), k.ascontiguousarray(b).view(mask.dtype)
    flip = (ua ^ ub) & mask
    return (ub ^ flip).view(a.dtype), (ua ^ flip).view(a.dtype)


@functools.cache
def _numpy_loop_is_textbook(op: str, dtype: Any) -> bool:
    """Whether NumPy's own complex multiply (divide) loop computes, on this machine, exactly
    the steps of _complex_product (_complex_quotient) where no step is subnormal: probed once
    per process on 4,099 values of wide magnitudes, contiguous, strided and in short runs (a
    loop that fuses multiply-adds, as NumPy's AVX-512 multiply does, differs at about a
    fifth of them). Where it does, the interpreter runs NumPy's loop (one pass); else the
    steps written out."""
    import numpy as np

    rng = np.random.default_rng(22)
    n = 4099
    e = 25 if dtype == np.complex128 else 12
    parts = [np.ldexp(rng.uniform(-1, 1, n), rng.integers(-e, e, n)) for _ in range(4)]
    parts[0][:7] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]
    parts[3][3:12] = [0.0, -0.0, np.inf, np.nan, 0.0, 2.0, -0.0, 0.0, 1.0]
    x = (parts[0] + 1j * 0).astype(dtype)
    x.imag = parts[1]
    y = (parts[2] + 1j * 0).astype(dtype)
    y.imag = parts[3]
    k = types.SimpleNamespace(**vars(np))
    k.rounded = lambda v: v
    explicit = _numpy_complex_product if op == "multiply" else _numpy_complex_quotient
    with np.errstate(all="ignore"):
        for xs, ys in ((x, y), (x[1::2], y[::2][:-1]), (x[:5], y[:5]), (x[:17], y[-17:]), (x[3], y[3:40])):
            got = np.asarray(getattr(np, op)(xs, ys))
            want = np.asarray(explicit(k, xs, ys, np.dtype(dtype), probing=True))
            for g, w in ((got.real, want.real), (got.imag, want.imag)):
                if not ((g.view(f"u{g.itemsize}") == w.view(f"u{w.itemsize}")) | (np.isnan(g) & np.isnan(w))).all():
                    return False
    return True


def _numpy_complex_product(k: Any, x: Any, y: Any, dtype: Any, probing: bool = False) -> Any:
    x, y = k.asarray(x, dtype=dtype), k.asarray(y, dtype=dtype)
    if (
        not probing
        and _numpy_loop_is_textbook("multiply", dtype.type)
        and _within(k, x, 510 if dtype == k.complex128 else 62, False)
        and _within(k, y, 510 if dtype == k.complex128 else 62, False)
    ):
        return k.multiply(x, y)
    if probing:
        a, b, c, d = x.real, x.imag, y.real, y.imag
        out = k.empty(k.broadcast_shapes(x.shape, y.shape), dtype)
        out.real, out.imag = a * c - b * d, a * d + b * c
        return out
    # (the steps on the parts as they are: as many NumPy passes as _complex_product, and no
    # faster in another arrangement on a loaded machine, where fresh buffers' page faults weigh)
    return _complex(k, *_complex_product(k, *_parts(k, x, dtype), *_parts(k, y, dtype)))


def _numpy_complex_quotient(k: Any, x: Any, y: Any, dtype: Any, probing: bool = False) -> Any:
    x, y = k.asarray(x, dtype=dtype), k.asarray(y, dtype=dtype)
    e = 250 if dtype == k.complex128 else 30
    safe = probing or (_within(k, x, e, True) and _within(k, y, e, True))
    if safe and not probing and _numpy_loop_is_textbook("divide", dtype.type):
        return k.divide(x, y)
    r = k.rounded if not safe else (lambda v: v)
    shape = k.broadcast_shapes(x.shape, y.shape)
    x, y = k.broadcast_to(x, shape), k.broadcast_to(y, shape)
    a, b, c, d = r(x.real), r(x.imag), r(y.real), r(y.imag)
    first = k.abs(c) >= k.abs(d)
    mask = k.negative(first.astype(f"u{c.itemsize}"))  # (all ones where first)
    den, num = _swapped(k, mask, c, d)  # rat = d / c, or c / d
    rat = r(num / den)
    scl = r(1.0 / r(den + r(num * rat)))
    p, q = _swapped(k, mask, a, b)
    u = r(rat * q)  # b rat, or a rat
    t = r(rat * p)  # a rat, or b rat
    out = k.empty(shape, dtype)
    re = r(p + u) * scl  # (a + b rat) scl, or (a rat + b) scl
    s1, s2 = _swapped(k, mask, q, t)
    im = r(s1 - s2) * scl  # (b - a rat) scl, or (b rat - a) scl
    zero = (c == 0) & (d == 0)
    if zero.any():
        z = k.abs(c)
        re, im = k.where(zero, a / z, re), k.where(zero, b / z, im)
    out.real, out.imag = re, im
    return out


multiply = _binary("multiply", "numeric", _multiply)


def _divide(k: Any, a: Any, b: Any) -> Any:
    # Integer operands, which the standard leaves to the implementation, divide as float64
    # (NumPy's and jax's choice; scikit-learn's metrics rely on it). Both must be integers:
    # under jax a Python scalar arrives as a weakly typed integer beside a float array.
    if _integral_operand(a) and _integral_operand(b):
        a = k.asarray(a, dtype=k.float64)
        b = k.asarray(b, dtype=k.float64)
    dtype = _tiered_complex(k, a, b)
    if dtype is not None and not k.is_jax:
        return _numpy_complex_quotient(k, a, b, dtype)
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


def _flush_read(k: Any, x: Any) -> Any:
    """A real floating-point operand of a compiled lowering with its subnormals as zeros of
    their signs, explicitly: XLA's arithmetic reads them so (the subnormal rule), but its
    atan2 and pow lowerings test an operand's bits too, and gave NaN for atan2(tiny/2, tiny/2)
    and 1.6e-162 for pow(5e-324, 0.5). (A comparison under the CPU's denormals-are-zero mode
    reads the subnormal as zero; the product by 0 keeps its sign.)"""
    if not k.is_jax or not hasattr(x, "dtype") or x.dtype.kind != "f":
        return x
    return k.where(k.abs(x) < k.finfo(x.dtype).tiny, x * 0.0, x)


def _atan2(k: Any, a: Any, b: Any) -> Any:
    return k.arctan2(_flush_read(k, a), _flush_read(k, b))


def _pow(k: Any, a: Any, b: Any) -> Any:
    # Integers to negative powers (unspecified by the standard; NumPy raises): the truncated
    # value, 1 for a base of 1, +-1 for a base of -1, 0 otherwise.
    if not _is_integer(k, a, b):
        dtype = _tiered_complex(k, a, b)
        return _real_power(k, _flush_read(k, a), _flush_read(k, b)) if dtype is None else _complex_power(k, a, b, dtype)
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


def _real_power(k: Any, a: Any, b: Any) -> Any:
    out = k.power(a, b)
    if k.is_jax or k.size(b) != 1 or k.asarray(b).dtype.kind != "f" or k.asarray(b).ravel()[0] != 0.5:
        return out
    # NumPy computes a power whose exponent is one value 0.5 as a square root: -0 for -0 and
    # NaN for -inf, where the standard's pow (and XLA's) gives +0 and +inf.
    return k.where(a == 0, k.abs(out), k.where(a == -k.inf, k.abs(a), out))


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
# program raises to with a generic `power` (several times slower for the Monte-Carlo
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


def _is_product_power(x: Any, n: Any) -> bool:
    """Whether `x ** n` is recorded as products: a Python int `n` of _SMALL_POWERS."""
    return type(n) is int and type(x) is Array and n in _SMALL_POWERS and x._dtype.kind in _PRODUCT_KINDS


def pow(x1: Any, x2: Any, /) -> Array:  # noqa: A001 - the standard's name
    if _is_product_power(x1, x2):
        return _product_power(x1, x2)
    return _pow_general(x1, x2)


def _pow_operator(self: Array, other: Any, /) -> Any:
    if _is_product_power(self, other):
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
    return _complex(k, *_complex_reciprocal(k, *_parts(k, x, dtype)))


def _complex_reciprocal(k: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """1 / (a + bj) as NumPy's loop computes it (no literal zero part: XLA folds x + 0 into x)."""
    r = k.rounded
    first = k.abs(b) <= k.abs(a)  # (False where a part is NaN: NumPy's second branch)
    rat1 = r(b / a)
    d1 = r(a + r(b * rat1))
    rat2 = r(a / b)
    d2 = r(r(a * rat2) + b)
    re = k.where(first, r(1.0 / d1), r(rat2 / d2))
    im = k.where(first, r(r(-rat1) / d1), r(-1.0 / d2))
    return re, im


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
atan2 = _binary("atan2", "real floating-point", _atan2, passes_bits=True)

# -- complex logarithms, powers and inverse functions on the lazy tiers ------------------------
#
# NumPy's complex loops (C99's clog, cpow, casin, catanh, ...) and XLA's expansions of the
# same functions are other algorithms: the lazy tiers differed at special parts (log1p(tiny +
# 0j): 0j interpreted, tiny compiled; asin(1 + tiny j); pow(0j, inf + inf j)) and by far more
# than rounding near the branch cuts. On a lazy tier (`k.tiered`) each is written out here
# once, from IEEE operations alone (+, -, *, /, sqrt, comparisons and selections), each step
# through `k.rounded` (stored rounded, never fused into a multiply-add, flushed where XLA
# flushes): a logarithm and an arctangent of their own (fdlibm's algorithms: `_ieee_log`,
# `_ieee_atan2`), the complex logarithm from them, and asin, acos, asinh, acosh by Hull,
# Fairgrieve and Tang's algorithm (NumPy's casin is the same one), atanh and atan by Kahan's
# formulas. Every step being one correctly rounded operation, the interpreter and the compiled
# program give the same bits. complex64 computes in float64 and rounds each part once at the
# end. exp and expm1 take the same kind of steps (an exponential, sine and cosine of x10array's
# own: `_ieee_cexp`, `_expm1_tiered`); pow is exp(w log z), the standard's definition, from
# them, with NumPy's repeated squaring for integral real exponents below 100. Eager NumPy keeps
# its own loops.

_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
_LG = (
    6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
    1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01,
)  # fmt: skip
# atan at 0.5, 1, 1.5 and infinity, in two parts
_ATAN_HI = (
    4.63647609000806093515e-01, 7.85398163397448278999e-01, 9.82793723247329054082e-01, 1.57079632679489655800e00,
)  # fmt: skip
_ATAN_LO = (
    2.26987774529616870924e-17, 3.06161699786838301793e-17, 1.39033110312309984516e-17, 6.12323399573676603587e-17,
)  # fmt: skip
_AT = (
    3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01,
    -1.11111104054623557880e-01, 9.09088713343650656196e-02, -7.69187620504482999495e-02,
    6.66107313738753120669e-02, -5.83357013379057348645e-02, 4.97687799461593236017e-02,
    -3.65315727442169155270e-02, 1.62858201153657823623e-02,
)  # fmt: skip
_PI_LO = 1.2246467991473531772e-16
_LN2 = math.log(2.0)


def _horner(k: Any, w: Any, coefficients: tuple[float, ...]) -> Any:
    """c0 + w (c1 + w (c2 + ...)), each step stored."""
    r = k.rounded
    out = k.full_like(w, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = r(c + r(w * out))
    return out


def _ieee_log(k: Any, x: Any) -> Any:
    """log(x) of float64 `x` from IEEE steps (fdlibm's e_log.c), within 1 ulp: the same bits on
    every tier. x = 2**e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), s = f / (2 + f),
    log(1 + f) = f - f**2/2 + s (f**2/2 + R(s**2))."""
    r = k.rounded
    ok = k.isfinite(x) & (x > 0)
    m, e = _split(k, k.where(ok, x, k.ones_like(x)))
    f = r(m - 1.0)
    s = r(f / r(2.0 + f))
    z = r(s * s)
    w = r(z * z)
    t1 = r(w * _horner(k, w, _LG[1::2]))
    t2 = r(z * _horner(k, w, _LG[0::2]))
    big_r = r(t2 + t1)
    hfsq = r(r(0.5 * f) * f)
    out = r(r(e * _LN2_HI) - r(r(hfsq - r(r(s * r(hfsq + big_r)) + r(e * _LN2_LO))) - f))
    out = k.where(x == 0, -_INF, k.where(k.isposinf(x), _INF, out))
    return k.where((x < 0) | k.isnan(x), _NAN, out)


def _ieee_log1p(k: Any, t: Any) -> Any:
    """log(1 + t), float64: log(u) - ((u - 1) - t) / u with u = 1 + t rounded (the rounding of
    u corrected to first order; `_log1p64`'s formula on `_ieee_log`)."""
    r = k.rounded
    u = r(1.0 + t)
    d = r(u - 1.0)
    lu = _ieee_log(k, u)
    out = k.where(d == 0, t, r(lu - r(r(d - t) / u)))
    return k.where(k.isposinf(t) | (u == 0) | (t < -1), lu, out)


def _ieee_atan(k: Any, x: Any) -> Any:
    """atan(x) of float64 x >= 0 (+inf included) from IEEE steps (fdlibm's s_atan.c)."""
    r = k.rounded
    ones = k.ones_like(x)
    t0 = r(r(r(2.0 * x) - 1.0) / r(2.0 + x))
    t1 = r(r(x - 1.0) / r(x + 1.0))
    t2 = r(r(x - 1.5) / r(1.0 + r(1.5 * x)))
    t3 = r(-1.0 / k.where(x == 0, ones, x))
    below = [x < 7 / 16, x < 11 / 16, x < 19 / 16, x < 39 / 16]
    t = k.where(below[0], x, k.where(below[1], t0, k.where(below[2], t1, k.where(below[3], t2, t3))))
    hi = k.where(below[1], _ATAN_HI[0], k.where(below[2], _ATAN_HI[1], k.where(below[3], _ATAN_HI[2], _ATAN_HI[3])))
    lo = k.where(below[1], _ATAN_LO[0], k.where(below[2], _ATAN_LO[1], k.where(below[3], _ATAN_LO[2], _ATAN_LO[3])))
    z = r(t * t)
    w = r(z * z)
    s1 = r(z * _horner(k, w, _AT[0::2]))
    s2 = r(w * _horner(k, w, _AT[1::2]))
    ps = r(t * r(s1 + s2))
    return k.where(below[0], r(t - ps), r(hi - r(r(ps - lo) - t)))


def _ieee_atan2(k: Any, y: Any, x: Any) -> Any:
    """atan2(y, x), float64, from IEEE steps (fdlibm's e_atan2.c) where both are finite and
    nonzero; the real atan2 of the tier elsewhere (zeros, infinities and NaN: the standard's
    special cases, the same bits on both tiers)."""
    r = k.rounded
    regular = k.isfinite(x) & k.isfinite(y) & (x != 0) & (y != 0)
    ones = k.ones_like(x)
    ax, ay = k.where(regular, k.abs(x), ones), k.where(regular, k.abs(y), ones)
    z = _ieee_atan(k, r(ay / ax))  # (a quotient past the largest float: inf, pi/2)
    z = k.where(x < 0, r(_PI - r(z - _PI_LO)), z)
    z = k.where(y < 0, -z, z)
    return k.where(regular, z, _tier_real(k, "atan2", y, x))


def _tier_real(k: Any, name: str, *args: Any) -> Any:
    """The real function `name` as its primitive computes it on this tier (NumPy's kernel
    interpreted, its lowering compiled), stored."""
    prim = globals()[name].primitive
    return k.rounded((prim.lowering if k.is_jax else prim.kernel)(k, *args))


def _wide_parts(k: Any, x: Any) -> tuple[Any, Any]:
    """The parts of complex `x`, flushed as XLA's arithmetic reads them, in float64."""
    r = k.rounded
    return r(k.real(x)).astype(k.float64), r(k.imag(x)).astype(k.float64)


def _narrow(k: Any, re: Any, im: Any, dtype: Any) -> Any:
    """The complex number of float64 parts, each rounded once to `dtype`'s parts (and flushed)."""
    part = k.float32 if dtype == k.complex64 else k.float64
    r = k.rounded
    return _complex(k, r(re.astype(part)), r(im.astype(part)))


def _square_exactly(k: Any, a: Any) -> tuple[Any, Any]:
    """(p, e) with p = a * a rounded and p + e = a * a exactly (Dekker; |a| < 2**500)."""
    r = k.rounded
    c = r(134217729.0 * a)
    ah = r(c - r(c - a))
    al = r(a - ah)
    p = r(a * a)
    return p, r(r(r(r(ah * ah) - p) + r(2.0 * r(ah * al))) + r(al * al))


def _sum_exactly(k: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(s, e) with s = a + b rounded and s + e = a + b exactly (Knuth's two-sum)."""
    r = k.rounded
    s = r(a + b)
    bb = r(s - a)
    return s, r(r(a - r(s - bb)) + r(b - bb))


def _log_parts(k: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(log |z|, arg z) of z = a + bj, float64 parts, from IEEE steps. |z| = m sqrt(1 + s**2)
    with m the larger magnitude and s = n / m (no overflow, no hypot: hypot differs between the
    tiers); within [1/2, 2] log |z| = log1p((m - 1)(m + 1) + n**2) / 2 (m - 1 exact) keeps a
    result near zero accurate."""
    r = k.rounded
    aa, ab = k.abs(a), k.abs(b)
    m, n = k.maximum(aa, ab), k.minimum(aa, ab)
    finite = k.isfinite(m) & (m > 0)
    m = k.where(finite, m, k.ones_like(m))
    n = k.where(finite, n, k.zeros_like(n))
    near = (m >= 0.5) & (m <= 2.0)
    # |z|**2 - 1 = (m**2 - 1) + n**2 from exact squares (Dekker's products: m**2 = mh + ml)
    mh, ml = _square_exactly(k, m)
    nh, nl = _square_exactly(k, n)
    hi, lo0 = _sum_exactly(k, mh, k.full_like(mh, -1.0))
    hi, lo1 = _sum_exactly(k, hi, nh)
    q = r(hi + r(r(lo0 + lo1) + r(ml + nl)))
    s = r(n / m)
    re = k.where(near, r(0.5 * _ieee_log1p(k, q)), r(_ieee_log(k, m) + r(0.5 * _ieee_log1p(k, r(s * s)))))
    special = k.where(k.isinf(aa) | k.isinf(ab), _INF, k.where(k.isnan(aa) | k.isnan(ab), _NAN, -_INF))
    return k.where(finite, re, special), _ieee_atan2(k, b, a)


def _log_upper(name: str, scale: float | None = None) -> Kernel:
    """The kernel of `name` (log, log2, log10) of the upper half-plane: on a lazy tier, the
    complex logarithm times `scale` (1 / log(2), 1 / log(10))."""

    def run(k: Any, x: Any) -> Any:
        if not k.tiered or x.dtype.kind != "c":
            return getattr(k, name)(x)
        with k.errstate(all="ignore"):
            re, im = _log_parts(k, *_wide_parts(k, x))
            if scale is not None:
                re, im = k.rounded(re * scale), k.rounded(im * scale)
            return _narrow(k, re, im, x.dtype)

    return run


def _log1p_upper(k: Any, x: Any) -> Any:
    if not k.tiered or x.dtype.kind != "c":
        return k.log1p(x)
    r = k.rounded
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, x)
        u = r(1.0 + a)
        # |z| < 1/2: log |1 + z| = log1p(a (2 + a) + b**2) / 2, accurate for a small z
        small = k.maximum(k.abs(a), k.abs(b)) < 0.5
        re_small = r(0.5 * _ieee_log1p(k, r(r(a * r(2.0 + a)) + r(b * b))))
        re, im = _log_parts(k, u, b)
        return _narrow(k, k.where(small, re_small, re), im, x.dtype)


def _atanh_upper(k: Any, x: Any) -> Any:
    """atanh of a + bj with a, b >= 0 (the odd half-plane): Kahan's log1p(4a / ((1 - a)**2 +
    b**2)) / 4 + atan2(2b, (1 - a)(1 + a) - b**2) / 2 j; past |z| = 2**28, 1/z + pi/2 j to the
    last bit (the formula's squares would overflow)."""
    if not k.tiered or x.dtype.kind != "c":
        return k.arctanh(x)
    r = k.rounded
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, x)
        one_a = r(1.0 - a)
        d = r(r(one_a * one_a) + r(b * b))
        t = r(r(4.0 * a) / d)
        re = r(0.25 * _ieee_log1p(k, t))
        # z at 1 (d zero, or so small that t overflows): log(4a) / 4 - log |1 - z| / 2
        far = r(r(0.25 * _ieee_log(k, r(4.0 * a))) - r(0.5 * _log_parts(k, one_a, b)[0]))
        re = k.where(k.isfinite(t) | k.isnan(t), re, far)
        im = r(0.5 * _ieee_atan2(k, r(2.0 * b), r(r(one_a * r(1.0 + a)) - r(b * b))))
        m, n = k.maximum(a, b), k.minimum(a, b)
        big = m > 2.0**28
        mm = k.where(big & k.isfinite(m), m, k.ones_like(m))
        s1 = r(1.0 + r(r(n / mm) * r(n / mm)))
        re = k.where(big, r(r(r(a / mm) / mm) / s1), re)
        im = k.where(big, r(_PI / 2 - r(r(r(b / mm) / mm) / s1)), im)
        inf = k.isinf(a) | k.isinf(b)
        return _narrow(k, k.where(inf, 0.0, re), k.where(inf, _PI / 2, im), x.dtype)


_EPS = 2.0**-52
_SAFE_MIN = 4 * math.sqrt(2.0**-1022)
_SAFE_MAX = math.sqrt(1.7976931348623157e308) / 8


def _asin_parts(k: Any, x: Any, y: Any) -> tuple[Any, Any, Any]:
    """(P, R, Q) with asin(x + yj) = P + Qj and acos(x + yj) = R - Qj, for float64 x, y >= 0:
    Hull, Fairgrieve and Tang's algorithm ("Implementing the complex arcsine and arccosine
    functions using exception handling", 1997; as Boost's), from IEEE steps."""
    r = k.rounded
    sqrt = k.sqrt
    xp1, xm1 = r(x + 1.0), r(x - 1.0)
    yy = r(y * y)
    rr = r(sqrt(r(r(xp1 * xp1) + yy)))
    ss = r(sqrt(r(r(xm1 * xm1) + yy)))
    big_a = r(0.5 * r(rr + ss))
    big_b = r(x / big_a)
    apx = r(big_a + x)
    le1 = x <= 1.0
    y_over = r(yy / r(rr + xp1))
    u = k.where(le1, r(r(0.5 * apx) * r(y_over + r(ss - xm1))), r(0.5 * r(r(apx / r(rr + xp1)) + r(apx / r(ss + xm1)))))
    den = k.where(le1, r(sqrt(u)), r(y * r(sqrt(u))))
    root_b = r(sqrt(r(r(1.0 - big_b) * r(1.0 + big_b))))  # asin(B) = atan2(B, sqrt(1 - B**2)), acos
    low_b = big_b <= 0.6417
    p = k.where(low_b, _ieee_atan2(k, big_b, root_b), _ieee_atan2(k, x, den))
    rc = k.where(low_b, _ieee_atan2(k, root_b, big_b), _ieee_atan2(k, den, x))
    am1 = k.where(x < 1.0, r(0.5 * r(y_over + r(yy / r(ss - xm1)))), r(0.5 * r(y_over + r(ss + xm1))))
    q = k.where(
        big_a <= 1.5,
        _ieee_log1p(k, r(am1 + r(sqrt(r(am1 * r(big_a + 1.0)))))),
        _ieee_log(k, r(big_a + r(sqrt(r(r(big_a * big_a) - 1.0))))),
    )
    main = (x < _SAFE_MAX) & (x > _SAFE_MIN) & (y < _SAFE_MAX) & (y > _SAFE_MIN)
    # the extremes: y tiny against |x - 1|; y tiny at x = 1; y huge; x > 1; x tiny
    c1 = y <= r(_EPS * k.abs(xm1))
    c2 = y <= _SAFE_MIN
    c3 = r(r(_EPS * y) - 1.0) >= x
    c4 = x > 1.0
    root_x = r(sqrt(r(xp1 * r(1.0 - x))))
    p1 = k.where(x < 1.0, _ieee_atan2(k, x, root_x), _PI / 2)
    rc1 = k.where(y == 0, 0.0, k.where(x > 1e8, r(y / x), r(y / r(sqrt(r(xp1 * xm1))))))  # (y / sqrt(x**2 - 1))
    rc1 = k.where(x < 1.0, _ieee_atan2(k, root_x, x), rc1)
    q1 = k.where(
        x < 1.0,
        r(y / root_x),
        k.where(
            r(1.7976931348623157e308 / xp1) > xm1,
            _ieee_log1p(k, r(xm1 + r(sqrt(r(xp1 * xm1))))),
            r(_LN2 + _ieee_log(k, x)),
        ),
    )
    sy = r(sqrt(y))
    xoy = r(x / y)
    log_y = r(_LN2 + _ieee_log(k, y))
    q4 = r(log_y + r(0.5 * _ieee_log1p(k, r(xoy * xoy))))
    a5 = r(sqrt(r(1.0 + yy)))
    p5 = r(x / a5)
    q5 = r(0.5 * _ieee_log1p(k, r(r(2.0 * y) * r(y + a5))))
    pick = [main, c1, c2, c3, c4]
    p = _select(k, pick, [p, p1, r(_PI / 2 - sy), xoy, _ieee_atan2(k, x, y)], p5)
    rc = _select(k, pick, [rc, rc1, sy, r(_PI / 2 - xoy), _ieee_atan2(k, y, x)], r(_PI / 2 - p5))
    q = _select(k, pick, [q, q1, sy, log_y, q4], q5)
    # infinite parts (the other one NaN: NaN)
    inf_x, inf_y = k.isinf(x), k.isinf(y)
    inf = inf_x | inf_y
    nan = k.isnan(x) | k.isnan(y)
    p_inf = k.where(inf_x & inf_y, _PI / 4, k.where(inf_x, _PI / 2, 0.0))
    rc_inf = k.where(inf_x & inf_y, _PI / 4, k.where(inf_x, 0.0, _PI / 2))
    p = k.where(inf, k.where(nan, _NAN, p_inf), p)
    rc = k.where(inf, k.where(nan, _NAN, rc_inf), rc)
    return p, rc, k.where(inf, _INF, q)


def _select(k: Any, conditions: list[Any], values: list[Any], otherwise: Any) -> Any:
    """The value of the first condition that holds, else `otherwise`."""
    out = otherwise
    for condition, value in zip(conditions[::-1], values[::-1]):
        out = k.where(condition, value, out)
    return out


def _asinh_upper(k: Any, x: Any) -> Any:
    # asinh(a + bj) = Q + Pj where asin(b + aj) = P + Qj (a, b >= 0: the odd half-plane)
    if not k.tiered or x.dtype.kind != "c":
        return k.arcsinh(x)
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, x)
        p, _, q = _asin_parts(k, b, a)
        return _narrow(k, q, p, x.dtype)


def _acos_parts(k: Any, x: Any) -> tuple[Any, Any]:
    """(R, Q): acos(a + bj) = R - Qj for b >= 0 and any a (acos(-z) = pi - acos(z))."""
    a, b = _wide_parts(k, x)
    _, rc, q = _asin_parts(k, k.abs(a), b)
    return k.where(k.signbit(a) & ~k.isnan(a), k.rounded(_PI - rc), rc), q


def _acos_upper(k: Any, x: Any) -> Any:
    if not k.tiered or x.dtype.kind != "c":
        return k.arccos(x)
    with k.errstate(all="ignore"):
        rc, q = _acos_parts(k, x)
        return _narrow(k, rc, -q, x.dtype)


def _acosh_upper(k: Any, x: Any) -> Any:
    # acosh(z) = Q + Rj where acos(z) = R - Qj (b >= 0)
    if not k.tiered or x.dtype.kind != "c":
        return k.arccosh(x)
    with k.errstate(all="ignore"):
        rc, q = _acos_parts(k, x)
        return _narrow(k, q, rc, x.dtype)


_EXP_P = (1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
          -1.65339022054652515390e-06, 4.13813679705723846039e-08)  # fmt: skip
_SIN_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
          2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)  # fmt: skip
_COS_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
          -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)  # fmt: skip
# pi/2 in three parts of 33 bits and their tails (fdlibm's e_rem_pio2.c)
_PIO2 = ((1.57079632673412561417e00, 6.07710050650619224932e-11), (6.07710050630396597660e-11,
         2.02226624879595063154e-21), (2.02226624871116645580e-21, 8.47842766036889956997e-32))  # fmt: skip


def _ieee_exp(k: Any, x: Any) -> Any:
    """exp(x) of float64 `x` from IEEE steps (fdlibm's e_exp.c): x = n log(2) + t, exp(t) from
    a rational approximation, times 2**n (in two exact factors)."""
    r = k.rounded
    ok = k.isfinite(x) & (k.abs(x) < 746.0)
    x0 = k.where(ok, x, k.zeros_like(x))
    n = k.trunc(r(r(x0 * (1 / _LN2)) + k.where(x0 < 0, -0.5, 0.5)))
    hi = r(x0 - r(n * _LN2_HI))
    lo = r(n * _LN2_LO)
    t = r(hi - lo)
    tt = r(t * t)
    c = r(t - r(tt * _horner(k, tt, _EXP_P)))
    y = r(1.0 - r(r(lo - r(r(t * c) / r(2.0 - c))) - hi))
    half = k.trunc(n * 0.5)
    ones = k.ones_like(x)
    out = r(r(y * k.ldexp(ones, half.astype(k.int32))) * k.ldexp(ones, (n - half).astype(k.int32)))
    return k.where(ok, out, k.where(k.isnan(x), _NAN, k.where(x > 0, _INF, 0.0)))


def _ieee_sincos(k: Any, x: Any) -> tuple[Any, Any]:
    """(sin(x), cos(x)) of float64 `x` from IEEE steps: fdlibm's reduction modulo pi/2 (three
    parts of pi/2: exact for |x| < 2**20 pi/2) and FreeBSD's k_sin.c, k_cos.c polynomials; past
    2**20 pi/2 each tier's own sin and cos (a few ulp apart)."""
    r = k.rounded
    ax = k.abs(x)
    ok = ax < 1.6e6
    t = k.where(ok, ax, k.zeros_like(ax))
    fn = k.floor(r(r(t * (2 / _PI)) + 0.5))
    w = k.zeros_like(t)
    rem = t
    for i, (part, tail) in enumerate(_PIO2):
        if i == 0:
            rem = r(t - r(fn * part))
            w = r(fn * tail)
        else:
            prev = rem
            w = r(fn * part)
            rem = r(prev - w)
            w = r(r(fn * tail) - r(r(prev - rem) - w))
    y0 = r(rem - w)
    y1 = r(r(rem - y0) - w)
    z = r(y0 * y0)
    zw = r(z * z)
    s = _SIN_S
    sr = r(r(s[1] + r(z * r(s[2] + r(z * s[3])))) + r(r(z * zw) * r(s[4] + r(z * s[5]))))
    v = r(z * y0)
    sin = r(y0 - r(r(r(z * r(r(0.5 * y1) - r(v * sr))) - y1) - r(v * s[0])))
    c = _COS_C
    cr = r(r(z * r(c[0] + r(z * r(c[1] + r(z * c[2]))))) + r(r(zw * zw) * r(c[3] + r(z * r(c[4] + r(z * c[5]))))))
    hz = r(0.5 * z)
    one_hz = r(1.0 - hz)
    cos = r(one_hz + r(r(r(1.0 - one_hz) - hz) + r(r(z * cr) - r(y0 * y1))))
    quadrant = r(fn - r(4.0 * k.floor(r(fn * 0.25))))
    sin_t = k.where(quadrant == 0, sin, k.where(quadrant == 1, cos, k.where(quadrant == 2, -sin, -cos)))
    cos_t = k.where(quadrant == 0, cos, k.where(quadrant == 1, -sin, k.where(quadrant == 2, -cos, sin)))
    sin_t = k.where(k.signbit(x), -sin_t, sin_t)
    sin_t = k.where(ok, sin_t, _tier_real(k, "sin", x))
    return k.where(x == 0, x, sin_t), k.where(ok, cos_t, _tier_real(k, "cos", x))


def _ieee_cexp(k: Any, re: Any, im: Any) -> tuple[Any, Any]:
    """exp(re + im j), float64 parts, from `_ieee_exp` and `_ieee_sincos`, with the standard's
    special cases (those of the exp primitive's kernel: exp(+-inf + inf j), NaN, im = 0), and
    exp(re / 2)**2 scaling where exp(re) alone overflows but the parts do not."""
    r = k.rounded
    s, c = _ieee_sincos(k, im)
    e = _ieee_exp(k, re)
    half = _ieee_exp(k, r(0.5 * re))
    big = re > 709.0
    out_re = k.where(big, r(r(half * c) * half), r(e * c))
    out_im = k.where(big, r(r(half * s) * half), r(e * s))
    out_im = k.where(im == 0, im, out_im)  # (not inf * 0)
    out_re = k.where(k.isposinf(re) & ~k.isfinite(im), _INF, out_re)
    out_im = k.where(k.isposinf(re) & ~k.isfinite(im), _NAN, out_im)
    low = k.isneginf(re) & ~k.isfinite(im)
    out_re, out_im = k.where(low, 0.0, out_re), k.where(low, 0.0, out_im)
    nan_zero = k.isnan(re) & (im == 0)
    return k.where(nan_zero, _NAN, out_re), k.where(nan_zero, im, out_im)


def _complex_power(k: Any, x: Any, y: Any, dtype: Any) -> Any:
    """x ** y = exp(y log x) on the lazy tiers; y == 0 gives 1 + 0j (x ** 0 is 1 for every x,
    as for real operands and in NumPy)."""
    r = k.rounded
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, k.asarray(x, dtype=dtype))
        c, d = _wide_parts(k, k.asarray(y, dtype=dtype))
        re, im = _ieee_cexp(k, *_complex_product(k, c, d, *_log_parts(k, a, b)))
        # an integral real exponent below 100 in magnitude: by repeated squaring, as NumPy's
        # loop computes it (a reciprocal for a negative one); exactly x for 1
        n = k.where((d == 0) & (k.abs(c) < 100.0) & (k.trunc(c) == c), c, k.zeros_like(c))
        # (no product with a literal 1 + 0j: XLA's simplifier folds 1 * x and x + 0 into x)
        bits = k.abs(n)
        odd = r(bits - r(2.0 * k.floor(r(bits * 0.5)))) == 1.0
        pr, pi = k.where(odd, a, 1.0), k.where(odd, b, 0.0)
        sq_re, sq_im = a, b
        for _ in range(6):
            bits = k.floor(r(bits * 0.5))
            odd = r(bits - r(2.0 * k.floor(r(bits * 0.5)))) == 1.0
            sq_re, sq_im = _complex_product(k, sq_re, sq_im, sq_re, sq_im)
            nr, ni = _complex_product(k, pr, pi, sq_re, sq_im)
            pr, pi = k.where(odd, nr, pr), k.where(odd, ni, pi)
        ir, ii = _complex_reciprocal(k, pr, pi)
        pr, pi = k.where(n < 0, ir, pr), k.where(n < 0, ii, pi)
        pr, pi = k.where(n == 1, a, pr), k.where(n == 1, b, pi)
        integral = n != 0
        re, im = k.where(integral, pr, re), k.where(integral, pi, im)
        zero = (a == 0) & (b == 0) & (c > 0)  # 0 ** w = 0 for Re w > 0 (NumPy's)
        re, im = k.where(zero, 0.0, re), k.where(zero, 0.0, im)
        one = (c == 0) & (d == 0)
        re, im = k.where(one, 1.0, re), k.where(one, 0.0, im)
        return _narrow(k, r(re), r(im), dtype)


# -- exponentials, logarithms, trigonometry --------------------------------------------------


def _exp_upper(k: Any, x: Any) -> Any:
    # On a lazy tier from IEEE steps (_ieee_cexp): the same bits on both tiers
    if not k.tiered or x.dtype.kind != "c":
        return k.exp(x)
    with k.errstate(all="ignore"):
        return _narrow(k, *_ieee_cexp(k, *_wide_parts(k, x)), x.dtype)


_exp = _half_plane(
    _exp_upper,
    (
        (lambda k, a, b: k.isposinf(a) & ~k.isfinite(b), _INF, _NAN),
        (lambda k, a, b: k.isneginf(a) & ~k.isfinite(b), 0.0, 0.0),
        (lambda k, a, b: ~k.isnan(a) & (b == 0), None, 0.0),
        (_nan_zero, _NAN, 0.0),
    ),
)
# float32 through float64: XLA's float32 exp is 5 ULP off near the overflow (88.7)
exp = _unary("exp", "floating-point", _exp, lowering=_real_lowering(_exp, _in_float64(lambda k, x: k.exp(x))))


def _one_ufunc(*pairs: tuple[Any, Any], blocks: bool = False, uncast: bool = False) -> None:
    """Register each (function, ufunc) in policies.INTERPRETER_UFUNCS: its kernel is that one
    NumPy ufunc on real, integer and boolean operands (_multiply and _exp spell out complex
    ones only), so the interpreter may write it into a dead operand; with `blocks`, in
    policies.INTERPRETER_BLOCKS too: each element from the operands' elements at its position
    alone, whatever the layout or a block's start (exactly rounded arithmetic, comparisons),
    so the interpreter may strip-mine chains of them; with `uncast` (exp, whose NumPy loop
    depends on the output's layout), only on operands of the result's float dtype, in blocks
    of at least 8 elements (policies.INTERPRETER_BLOCKS_UNCAST)."""
    for fn, ufunc in pairs:
        # (NumPy's ufunc itself, where NUMPY's kernel wraps it: kernels._broadcast_route)
        INTERPRETER_UFUNCS.register(fn.primitive, getattr(ufunc, "__wrapped__", ufunc))
        if blocks or uncast:
            INTERPRETER_BLOCKS.add(fn.primitive)
        if uncast:
            INTERPRETER_BLOCKS_UNCAST.add(fn.primitive)


_one_ufunc(
    (add, NUMPY.add), (subtract, NUMPY.subtract), (multiply, NUMPY.multiply), (negative, NUMPY.negative), blocks=True
)
_one_ufunc((exp, NUMPY.exp), uncast=True)


def _expm1(k: Any, x: Any) -> Any:
    # Complex: exp(a) * cis(b) - 1 written so that small a and b keep their precision, with
    # the standard's special cases at infinities and NaN (NumPy's complex expm1 misses them).
    if x.dtype.kind != "c":
        return k.expm1(x)
    if k.tiered:
        return _expm1_tiered(k, x)
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


def _ieee_expm1(k: Any, a: Any) -> tuple[Any, Any]:
    """(exp(a), expm1(a)) of float64 `a` from IEEE steps: Kahan's (u - 1) a / log(u) with
    u = exp(a) below |a| = 1/2, u - 1 above (it loses nothing there; (u - 1) a overflows)."""
    r = k.rounded
    u = _ieee_exp(k, a)
    um1 = r(u - 1.0)
    em = r(r(um1 * a) / _ieee_log(k, u))
    em = k.where(u == 1.0, a, k.where(um1 == -1.0, -1.0, em))
    return u, k.where(k.abs(a) < 0.5, em, um1)


def _tanh_upper(k: Any, x: Any) -> Any:
    """tanh of a + bj (a, b >= 0) on a lazy tier, from IEEE steps: Kahan's formula (as NumPy's
    ctanh, FreeBSD's): t = tan(b), beta = 1 + t**2, s = sinh(a), rho = sqrt(1 + s**2),
    (beta rho s + t j) / (1 + beta s**2); past a = 22, 1 + 4 sin(b) cos(b) exp(-2a) j."""
    if not k.tiered or x.dtype.kind != "c":
        return k.tanh(x)
    r = k.rounded
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, x)
        small = ~(a >= 22.0)  # (NaN: the formula, NaN)
        a_s = k.where(small, a, k.zeros_like(a))
        _, em = _ieee_expm1(k, a_s)
        sh = r(0.5 * r(em + r(em / r(em + 1.0))))  # sinh(a) = (e - 1/e) / 2, no cancellation
        sb, cb = _ieee_sincos(k, b)
        t = r(sb / cb)
        beta = r(1.0 + r(t * t))
        rho = r(k.sqrt(r(1.0 + r(sh * sh))))
        denom = r(1.0 + r(r(beta * sh) * sh))
        re = r(r(r(beta * rho) * sh) / denom)
        im = r(t / denom)
        e = _ieee_exp(k, -a)
        big_im = r(r(r(r(4.0 * sb) * cb) * e) * e)
        re = k.where(small, re, 1.0)
        im = k.where(small, im, big_im)
        return _narrow(k, re, k.where(b == 0, b, im), x.dtype)


def _expm1_tiered(k: Any, x: Any) -> Any:
    """_expm1 of complex `x` on a lazy tier, from IEEE steps (the same bits on both tiers):
    expm1(a) by Kahan's (u - 1) a / log(u) with u = exp(a) for |a| < 1/2, and x10array's exp,
    sin and cos."""
    r = k.rounded
    with k.errstate(all="ignore"):
        a, b = _wide_parts(k, x)
        u, em = _ieee_expm1(k, a)
        finite_b = k.isfinite(b)
        sb, cb = _ieee_sincos(k, b)
        half, _ = _ieee_sincos(k, r(0.5 * b))
        re = r(r(em * cb) - r(2.0 * r(half * half)))
        im = k.where(b == 0, b, r(u * sb))
        re = k.where((a == 0) & (b == 0), k.zeros_like(a), re)
        low = k.isneginf(a)  # +0 * cis(b) - 1, and -1 + 0j where b is infinite or NaN
        re = k.where(low, -1.0, re)
        im = k.where(low, r(k.zeros_like(a) * _ieee_sincos(k, k.where(finite_b, b, k.zeros_like(b)))[0]), im)
        high = k.isposinf(a) & ~finite_b  # infinity + NaN j
        re = k.where(high, _INF, re)
        im = k.where(high, _NAN, im)
        return _narrow(k, re, im, x.dtype)


expm1 = _unary(
    "expm1",
    "floating-point",
    _expm1,
    lowering=_real_lowering(_expm1, _in_float64(lambda k, x: k.expm1(x))),
    passes_bits=True,
)
_LOG_RULES: tuple[Rule, ...] = ((_any_inf, _INF, None),)
log = _unary("log", "floating-point", _half_plane(_log_upper("log"), _LOG_RULES))
_log1p = _half_plane(_log1p_upper, _LOG_RULES)
log1p = _unary(
    "log1p", "floating-point", _log1p, lowering=_real_lowering(_log1p, _in_float64(_log1p64)), passes_bits=True
)
_log2 = _half_plane(_log_upper("log2", 1 / math.log(2.0)), _LOG_RULES)


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


_log10 = _half_plane(_log_upper("log10", 1 / math.log(10.0)), _LOG_RULES)
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
    _tanh_upper,
    (
        (_zero_nonfinite, 0.0, _NAN),
        (_nonzero_finite_nonfinite, _NAN, _NAN),
        (lambda k, a, b: k.isinf(a), 1.0, 0.0),
        (_nan_zero, _NAN, 0.0),
    ),
    "odd",
)
_asinh = _half_plane(
    _asinh_upper,
    (
        (lambda k, a, b: k.isfinite(a) & k.isnan(b), _NAN, _NAN),
        (_nan_zero, _NAN, 0.0),
        (_nan_nonzero_finite, _NAN, _NAN),
        (_nan_inf, _INF, _NAN),
    ),
    "odd",
)
_atanh = _half_plane(
    _atanh_upper,
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
    _acos_upper,
    (
        (_zero_nan, _PI / 2, _NAN),
        (_nonzero_finite_nan, _NAN, _NAN),
        (_inf_nan, _NAN, -_INF),
        (_nan_finite, _NAN, _NAN),
        (_nan_inf, _NAN, -_INF),
    ),
)
_acosh = _half_plane(
    _acosh_upper,
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
        raise TypeError(not_an_array("clip", "x", x))
    if x._dtype not in CATEGORIES["real numeric"]:
        raise TypeError(wrong_dtype("clip", "x", "real numeric", x._dtype))
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
# the comparisons are one NumPy ufunc each too, exact whatever the layout
_one_ufunc(
    (equal, NUMPY.equal), (not_equal, NUMPY.not_equal), (less, NUMPY.less), (less_equal, NUMPY.less_equal),
    (greater, NUMPY.greater), (greater_equal, NUMPY.greater_equal), blocks=True,
)  # fmt: skip
