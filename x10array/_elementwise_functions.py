"""Elementwise functions (the standard's "Element-wise Functions" chapter).

Each function is made by `_unary` or `_binary` from: its name, the dtype category it accepts,
and its kernel. The factory creates the primitive (kernel + lowering, one record) and the
public function (validation, Python scalars, promotion, device check), and nothing else.
Kernels take the kernel namespace `k` first, so NumPy and jax.numpy share them; where NumPy
departs from the standard's special cases the kernel says how, next to the plain case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._array_object import Array
from ._dtypes import CATEGORIES
from ._helpers import binary_operands
from ._ops import Primitive, bind

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


def _unary(name: str, category: str, kernel: Kernel, *, quiet: bool = True, doc: str = "") -> Callable[[Array], Array]:
    prim = Primitive(name, kernel, quiet=quiet)
    allowed = CATEGORIES[category]

    def function(x: Array, /) -> Array:
        if type(x) is not Array:
            raise TypeError(f"{name}: x must be an x10array array, got {type(x).__name__}")
        if x._dtype not in allowed:
            raise TypeError(f"{name}: x must have a {category} dtype, got {x._dtype.name}")
        return bind(prim, x._device, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"{name}, elementwise; accepts {category} dtypes."
    function.primitive = prim  # type: ignore[attr-defined]
    return function


def _binary(name: str, category: str, kernel: Kernel, *, quiet: bool = True, doc: str = "") -> Callable[[Any, Any], Array]:
    prim = Primitive(name, kernel, quiet=quiet)

    def function(x1: Any, x2: Any, /) -> Array:
        a, b, _, device = binary_operands(name, x1, x2, category)
        return bind(prim, device, a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"{name}, elementwise with broadcasting; accepts {category} dtypes and Python scalars."
    function.primitive = prim  # type: ignore[attr-defined]
    return function


# -- arithmetic ------------------------------------------------------------------------------

add = _binary("add", "numeric", lambda k, a, b: k.add(a, b))
subtract = _binary("subtract", "numeric", lambda k, a, b: k.subtract(a, b))
multiply = _binary("multiply", "numeric", lambda k, a, b: k.multiply(a, b))
divide = _binary("divide", "floating-point", lambda k, a, b: k.divide(a, b))
floor_divide = _binary("floor_divide", "real numeric", lambda k, a, b: k.floor_divide(a, b))
remainder = _binary("remainder", "real numeric", lambda k, a, b: k.remainder(a, b))
pow = _binary("pow", "numeric", lambda k, a, b: k.power(a, b))  # noqa: A001 - the standard's name
negative = _unary("negative", "numeric", lambda k, x: k.negative(x))
positive = _unary("positive", "numeric", lambda k, x: k.positive(x))
abs = _unary("abs", "numeric", lambda k, x: k.abs(x))  # noqa: A001
square = _unary("square", "numeric", lambda k, x: k.square(x))
sqrt = _unary("sqrt", "floating-point", lambda k, x: k.sqrt(x))
reciprocal = _unary("reciprocal", "floating-point", lambda k, x: k.reciprocal(x))
sign = _unary("sign", "numeric", lambda k, x: k.sign(x))
maximum = _binary("maximum", "real numeric", lambda k, a, b: k.maximum(a, b))
minimum = _binary("minimum", "real numeric", lambda k, a, b: k.minimum(a, b))
hypot = _binary("hypot", "real floating-point", lambda k, a, b: k.hypot(a, b))
copysign = _binary("copysign", "real floating-point", lambda k, a, b: k.copysign(a, b))
nextafter = _binary("nextafter", "real floating-point", lambda k, a, b: k.nextafter(a, b))
logaddexp = _binary("logaddexp", "real floating-point", lambda k, a, b: k.logaddexp(a, b))
atan2 = _binary("atan2", "real floating-point", lambda k, a, b: k.arctan2(a, b))

# -- exponentials, logarithms, trigonometry --------------------------------------------------

exp = _unary("exp", "floating-point", lambda k, x: k.exp(x))
expm1 = _unary("expm1", "floating-point", lambda k, x: k.expm1(x))
log = _unary("log", "floating-point", lambda k, x: k.log(x))
log1p = _unary("log1p", "floating-point", lambda k, x: k.log1p(x))
log2 = _unary("log2", "floating-point", lambda k, x: k.log2(x))
log10 = _unary("log10", "floating-point", lambda k, x: k.log10(x))
sin = _unary("sin", "floating-point", lambda k, x: k.sin(x))
cos = _unary("cos", "floating-point", lambda k, x: k.cos(x))
tan = _unary("tan", "floating-point", lambda k, x: k.tan(x))
asin = _unary("asin", "floating-point", lambda k, x: k.arcsin(x))
acos = _unary("acos", "floating-point", lambda k, x: k.arccos(x))
atan = _unary("atan", "floating-point", lambda k, x: k.arctan(x))
sinh = _unary("sinh", "floating-point", lambda k, x: k.sinh(x))
cosh = _unary("cosh", "floating-point", lambda k, x: k.cosh(x))
tanh = _unary("tanh", "floating-point", lambda k, x: k.tanh(x))
asinh = _unary("asinh", "floating-point", lambda k, x: k.arcsinh(x))
acosh = _unary("acosh", "floating-point", lambda k, x: k.arccosh(x))
atanh = _unary("atanh", "floating-point", lambda k, x: k.arctanh(x))

# -- rounding ---------------------------------------------------------------------------------

ceil = _unary("ceil", "real numeric", lambda k, x: k.ceil(x))
floor = _unary("floor", "real numeric", lambda k, x: k.floor(x))
trunc = _unary("trunc", "real numeric", lambda k, x: k.trunc(x))
round = _unary("round", "numeric", lambda k, x: k.round(x))  # noqa: A001

# -- complex ----------------------------------------------------------------------------------

conj = _unary("conj", "numeric", lambda k, x: k.conj(x))
real = _unary("real", "numeric", lambda k, x: k.real(x))
imag = _unary("imag", "numeric", lambda k, x: k.imag(x))

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
    out = x
    if lo is not None:
        out = k.where(out < lo, k.asarray(lo, dtype=x.dtype), out)
    if hi is not None:
        out = k.where(out > hi, k.asarray(hi, dtype=x.dtype), out)
    if x.dtype.kind == "f":  # NaN in x or in a bound propagates
        if lo is not None:
            out = k.where(k.isnan(lo), lo, out) if not isinstance(lo, (int, float)) else out
        if hi is not None:
            out = k.where(k.isnan(hi), hi, out) if not isinstance(hi, (int, float)) else out
    return k.asarray(out, dtype=x.dtype)


_CLIP = Primitive("clip", _clip_kernel, quiet=True)


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002 - the standard's names
    """Clamp each element of `x` to [min, max]; bounds are arrays or Python scalars."""
    if type(x) is not Array:
        raise TypeError(f"clip: x must be an x10array array, got {type(x).__name__}")
    if x._dtype not in CATEGORIES["real numeric"]:
        raise TypeError(f"clip: x must have a real numeric dtype, got {x._dtype.name}")
    bounds = []
    for arg, bound in (("min", min), ("max", max)):
        if bound is not None:
            _, bound, dtype, _ = binary_operands("clip", x, bound, "real numeric")
            if type(bound) is Array and bound._dtype.kind != x._dtype.kind:
                raise TypeError(f"clip: {arg} has dtype {bound._dtype.name}, of another kind than x ({x._dtype.name})")
        bounds.append(bound)
    return bind(_CLIP, x._device, x, *bounds)
