"""Gradient rules: one per standard function, written with `xp` (any conforming namespace).

A rule is `rule(xp, g, ans, *args, **kwargs)`: `g` is the cotangent of the output `ans`,
`args`/`kwargs` the call's own (unboxed) arguments; it returns one entry per positional
argument: a cotangent of that argument's shape, None where there is none (scalars, indices,
integer arrays), or a list for a sequence of arrays (concat, stack). A rule registered with
`defvjp(name, needs=True)` also gets `needs=`, which operands are traced: the elementwise
binary rules and matmul's compute no cotangent for the others (`X @ w - y` differentiated in
`w` computes none of X's or y's), so a lazy graph records none of that work.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ._tracer import NONDIFFERENTIABLE, Tracer, defvjp


def _is_array(x: Any) -> bool:
    return hasattr(x, "__array_namespace__")


def unbroadcast(xp: Any, g: Any, x: Any) -> Any:
    """Undo broadcasting: sum `g` down to the shape of operand `x` (None for a scalar)."""
    if not _is_array(x):
        return None
    return _sum_to(xp, g, x.shape)


def _sum_to(xp: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """`g` summed down to `shape` (the broadcasting of an operand of that shape undone)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape) if d == 1 and g.shape[i + lead] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    if lead:
        g = xp.reshape(g, shape)
    return g


def _unary(name: str, derivative: Any) -> None:
    """Elementwise f(x): cotangent g * f'(x); `derivative(xp, ans, x)`."""

    def rule(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
        return (g * derivative(xp, ans, x),)

    defvjp(name)(rule)


_unary("negative", lambda xp, ans, x: -1.0)
_unary("positive", lambda xp, ans, x: 1.0)
# for a complex x: the derivative of |x| is conj(x) / |x| in jax's convention
_unary("abs", lambda xp, ans, x: xp.conj(xp.sign(x)) if xp.isdtype(x.dtype, "complex floating") else xp.sign(x))
_unary("exp", lambda xp, ans, x: ans)
_unary("expm1", lambda xp, ans, x: ans + 1.0)
_unary("log", lambda xp, ans, x: 1.0 / x)
_unary("log1p", lambda xp, ans, x: 1.0 / (x + 1.0))
_unary("log2", lambda xp, ans, x: 1.0 / (x * math.log(2.0)))
_unary("log10", lambda xp, ans, x: 1.0 / (x * math.log(10.0)))
_unary("sqrt", lambda xp, ans, x: 0.5 / ans)
_unary("square", lambda xp, ans, x: 2.0 * x)
_unary("reciprocal", lambda xp, ans, x: -(ans * ans))
_unary("sin", lambda xp, ans, x: xp.cos(x))
_unary("cos", lambda xp, ans, x: -xp.sin(x))
_unary("tan", lambda xp, ans, x: 1.0 + ans * ans)
_unary("asin", lambda xp, ans, x: 1.0 / xp.sqrt(1.0 - x * x))
_unary("acos", lambda xp, ans, x: -1.0 / xp.sqrt(1.0 - x * x))
_unary("atan", lambda xp, ans, x: 1.0 / (1.0 + x * x))
_unary("sinh", lambda xp, ans, x: xp.cosh(x))
_unary("cosh", lambda xp, ans, x: xp.sinh(x))
_unary("tanh", lambda xp, ans, x: 1.0 - ans * ans)
_unary("asinh", lambda xp, ans, x: 1.0 / xp.sqrt(x * x + 1.0))
_unary("acosh", lambda xp, ans, x: 1.0 / xp.sqrt(x * x - 1.0))
_unary("atanh", lambda xp, ans, x: 1.0 / (1.0 - x * x))


def _binary(name: str, d1: Any, d2: Any) -> None:
    """Elementwise f(x1, x2) with broadcasting; `d1`, `d2`: partial derivatives (xp, ans, x1, x2)."""

    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, needs: tuple[bool, ...] = (True, True)) -> tuple[Any, Any]:
        # (an operand that is not traced, `X @ w - y`'s y, gets no cotangent: none computed)
        g1 = unbroadcast(xp, g * d1(xp, ans, x1, x2), x1) if needs[0] and _is_array(x1) else None
        g2 = unbroadcast(xp, g * d2(xp, ans, x1, x2), x2) if needs[1] and _is_array(x2) else None
        return g1, g2

    defvjp(name, needs=True)(rule)


def _pow_d2(xp: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if _is_array(x1) and xp.isdtype(x1.dtype, "complex floating"):  # holomorphic: x1^x2 log(x1)
        return ans * xp.log(x1)
    safe = xp.where(x1 > 0, x1, 1.0) if _is_array(x1) else (x1 if x1 > 0 else 1.0)
    return xp.where(x1 > 0, ans * xp.log(safe), 0.0) if _is_array(x1) else ans * math.log(safe)


def _pow_d1(xp: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if not _is_array(x1):
        return 0.0
    if type(x2) in (int, float) and x2 == 2:  # (x ** 2: 2 * x, as 2 * pow(x, 1.0) is, one operation less)
        return x2 * x1
    return x2 * xp.pow(x1, x2 - 1.0)


_binary("add", lambda xp, ans, a, b: 1.0, lambda xp, ans, a, b: 1.0)
_binary("subtract", lambda xp, ans, a, b: 1.0, lambda xp, ans, a, b: -1.0)
_binary("multiply", lambda xp, ans, a, b: b, lambda xp, ans, a, b: a)
_binary("divide", lambda xp, ans, a, b: 1.0 / b, lambda xp, ans, a, b: -ans / b)
_binary("pow", _pow_d1, _pow_d2)
_binary(
    "maximum", lambda xp, ans, a, b: xp.astype(a >= b, ans.dtype), lambda xp, ans, a, b: xp.astype(a < b, ans.dtype)
)
_binary(
    "minimum", lambda xp, ans, a, b: xp.astype(a <= b, ans.dtype), lambda xp, ans, a, b: xp.astype(a > b, ans.dtype)
)
_binary("atan2", lambda xp, ans, a, b: b / (a * a + b * b), lambda xp, ans, a, b: -a / (a * a + b * b))
_binary("hypot", lambda xp, ans, a, b: a / ans, lambda xp, ans, a, b: b / ans)
_binary("logaddexp", lambda xp, ans, a, b: xp.exp(a - ans), lambda xp, ans, a, b: xp.exp(b - ans))
_binary("copysign", lambda xp, ans, a, b: xp.sign(a) * xp.sign(ans), lambda xp, ans, a, b: 0.0)


@defvjp("where")
def _where(xp: Any, g: Any, ans: Any, condition: Any, x1: Any, x2: Any) -> tuple[Any, Any, Any]:
    # (zeros as a Python 0.0, not an array of them: the same values and dtype, one operation
    # less, and a compiled lazy graph lowers such a select without its min/max guard)
    g1 = unbroadcast(xp, xp.where(condition, g, 0.0), x1) if _is_array(x1) else None
    g2 = unbroadcast(xp, xp.where(condition, 0.0, g), x2) if _is_array(x2) else None
    return None, g1, g2


@defvjp("clip")
def _clip(xp: Any, g: Any, ans: Any, x: Any, min: Any = None, max: Any = None) -> tuple[Any, ...]:  # noqa: A002
    inside = ans == x
    return (xp.where(inside, g, 0.0), None, None)  # (a Python 0.0, as where's own rule)


@defvjp("astype")
def _astype(xp: Any, g: Any, ans: Any, x: Any, dtype: Any, **kwargs: Any) -> tuple[Any, None]:
    return _like(xp, g, x), None


@defvjp("asarray")
def _asarray(xp: Any, g: Any, ans: Any, x: Any, **kwargs: Any) -> tuple[Any]:
    return (xp.astype(g, x.dtype) if _is_array(x) else None,)


@defvjp("from_dlpack")
def _from_dlpack(xp: Any, g: Any, ans: Any, x: Any, /, **kwargs: Any) -> tuple[Any]:
    return (g if g.device == x.device else g.to_device(x.device),)


@defvjp("to_device")
def _to_device(xp: Any, g: Any, ans: Any, x: Any, device: Any, /) -> tuple[Any, None]:
    return (g if g.device == x.device else g.to_device(x.device)), None


# -- linear algebra -----------------------------------------------------------------------------


def _matmul_rule(xp: Any, g: Any, ans: Any, a: Any, b: Any, needs: tuple[bool, ...] = (True, True)) -> tuple[Any, Any]:
    # the cotangent of the 2-D (batched) product: 1-D operands gained an axis of size 1
    a_shape = a.shape if a.ndim > 1 else (1, a.shape[0])
    b_shape = b.shape if b.ndim > 1 else (b.shape[0], 1)
    batch = xp.broadcast_shapes(a_shape[:-2], b_shape[:-2]) if len(a_shape) > 2 or len(b_shape) > 2 else ()
    g2 = _reshaped(xp, g, tuple(batch) + (a_shape[-2], b_shape[-1]))
    ga = gb = None  # (only the traced operands' cotangents: `X @ w` computes no X-sized one)
    if needs[0]:
        b2 = b if b.ndim > 1 else _reshaped(xp, b, b_shape)
        ga = _reshaped(xp, _sum_to(xp, xp.matmul(g2, xp.matrix_transpose(b2)), a_shape), a.shape)
    if needs[1]:
        a2 = a if a.ndim > 1 else _reshaped(xp, a, a_shape)
        gb = _reshaped(xp, _sum_to(xp, xp.matmul(xp.matrix_transpose(a2), g2), b_shape), b.shape)
    return ga, gb


def _reshaped(xp: Any, x: Any, shape: tuple[int, ...]) -> Any:
    """`x` in `shape`: itself when it has it, else a reshaped copy, no view. A view of a
    cotangent would keep its base alive (a lazy barrier computes both) and costs the view's
    bookkeeping; the copy is of a vector-sized operand or result of a matmul."""
    return x if tuple(x.shape) == tuple(shape) else xp.reshape(x, shape, copy=True)


defvjp("matmul", needs=True)(_matmul_rule)
defvjp("linalg.matmul", needs=True)(_matmul_rule)


def _tensordot_rule(xp: Any, g: Any, ans: Any, a: Any, b: Any, /, *, axes: Any = 2) -> tuple[Any, Any]:
    if isinstance(axes, int):
        a_axes = list(range(a.ndim - axes, a.ndim))
        b_axes = list(range(axes))
    else:
        a_axes = [ax % a.ndim for ax in axes[0]]
        b_axes = [ax % b.ndim for ax in axes[1]]
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    na = len(a_free)
    # g has axes a_free + b_free
    g_b_free = list(range(na, g.ndim))
    g_a_free = list(range(na))
    ga = xp.tensordot(g, b, axes=(g_b_free, b_free))  # axes: a_free + b_axes(order of b_axes as in b)
    b_contract_order = [i for i in range(b.ndim) if i in b_axes]
    ga_axes_now = a_free + [a_axes[b_axes.index(i)] for i in b_contract_order]
    ga = xp.permute_dims(ga, tuple(ga_axes_now.index(i) for i in range(a.ndim)))
    gb = xp.tensordot(a, g, axes=(a_free, g_a_free))  # axes: a contracted (order of a) + b_free
    a_contract_order = [i for i in range(a.ndim) if i in a_axes]
    gb_axes_now = [b_axes[a_axes.index(i)] for i in a_contract_order] + b_free
    gb = xp.permute_dims(gb, tuple(gb_axes_now.index(i) for i in range(b.ndim)))
    return ga, gb


defvjp("tensordot")(_tensordot_rule)
defvjp("linalg.tensordot")(_tensordot_rule)


def _vecdot_rule(xp: Any, g: Any, ans: Any, a: Any, b: Any, /, *, axis: int = -1) -> tuple[Any, Any]:
    # vecdot(a, b) = sum(conj(a) * b): jax's convention, conj is its own transpose
    ge = xp.expand_dims(g, axis=axis if axis < 0 else axis)
    ga = unbroadcast(xp, xp.conj(ge * b), a)
    gb = unbroadcast(xp, ge * xp.conj(a), b)
    return _like(xp, ga, a), _like(xp, gb, b)


defvjp("vecdot")(_vecdot_rule)
defvjp("linalg.vecdot")(_vecdot_rule)


@defvjp("linalg.solve")
def _solve(xp: Any, g: Any, ans: Any, a: Any, b: Any) -> tuple[Any, Any]:
    vector = b.ndim == 1
    gb = xp.linalg.solve(xp.matrix_transpose(a), g)
    ans2 = xp.expand_dims(ans, axis=-1) if vector else ans
    gb2 = xp.expand_dims(gb, axis=-1) if vector else gb
    ga = -xp.matmul(gb2, xp.matrix_transpose(ans2))
    return unbroadcast(xp, ga, a), unbroadcast(xp, gb, b)


@defvjp("linalg.inv")
def _inv(xp: Any, g: Any, ans: Any, a: Any) -> tuple[Any]:
    t = xp.matrix_transpose(ans)
    return (-xp.matmul(xp.matmul(t, g), t),)


@defvjp("linalg.det")
def _det(xp: Any, g: Any, ans: Any, a: Any) -> tuple[Any]:
    inv_t = xp.matrix_transpose(xp.linalg.inv(a))
    return (xp.expand_dims(xp.expand_dims(g * ans, axis=-1), axis=-1) * inv_t,)


@defvjp("linalg.cholesky")
def _cholesky(xp: Any, g: Any, ans: Any, a: Any, /, *, upper: bool = False) -> tuple[Any]:
    L = xp.matrix_transpose(ans) if upper else ans
    gL = xp.matrix_transpose(g) if upper else g
    # Murray (2016): Phi(L^T gL), then S = L^{-T} Phi L^{-1}, symmetrized
    P = xp.matmul(xp.matrix_transpose(L), gL)
    n = L.shape[-1]
    mask = xp.tril(xp.ones((n, n), dtype=L.dtype, device=L.device)) - 0.5 * xp.eye(n, dtype=L.dtype, device=L.device)
    P = P * mask
    Linv = xp.linalg.inv(L)
    S = xp.matmul(xp.matmul(xp.matrix_transpose(Linv), P), Linv)
    return (0.5 * (S + xp.matrix_transpose(S)),)


# -- reductions -------------------------------------------------------------------------------


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a % ndim for a in axis)


def _expand_to(xp: Any, g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """A reduction's cotangent broadcast back to the input's shape."""
    if not keepdims and g.ndim:  # (a 0-d g, every axis reduced, broadcasts as it is)
        for a in sorted(_axes(axis, x.ndim)):
            g = xp.expand_dims(g, axis=a)
    return xp.broadcast_to(g, x.shape)


@defvjp("sum")
def _sum(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
) -> tuple[Any]:
    return (xp.astype(_expand_to(xp, g, x, axis, keepdims), x.dtype),)


@defvjp("mean")
def _mean(xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> tuple[Any]:
    n = math.prod(x.shape[a] for a in _axes(axis, x.ndim))
    return (_expand_to(xp, g, x, axis, keepdims) / n,)


@defvjp("prod")
def _prod(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
) -> tuple[Any]:
    full = _expand_to(xp, ans, x, axis, keepdims)
    return (xp.astype(_expand_to(xp, g, x, axis, keepdims) * full / x, x.dtype),)


def _extremum(xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> tuple[Any]:
    hit = xp.astype(x == _expand_to(xp, ans, x, axis, keepdims), x.dtype)
    count = _expand_to(xp, xp.sum(hit, axis=axis, keepdims=True), x, axis, True)
    return (_expand_to(xp, g, x, axis, keepdims) * hit / count,)


defvjp("max")(_extremum)
defvjp("min")(_extremum)


@defvjp("var")
def _var(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False
) -> tuple[Any]:
    n = math.prod(x.shape[a] for a in _axes(axis, x.ndim))
    centered = x - xp.mean(x, axis=axis, keepdims=True)
    return (_expand_to(xp, g, x, axis, keepdims) * 2.0 * centered / (n - correction),)


@defvjp("std")
def _std(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False
) -> tuple[Any]:
    (gv,) = _var(xp, g / (2.0 * ans), ans * ans, x, axis=axis, correction=correction, keepdims=keepdims)
    return (gv,)


def _without_initial(xp: Any, g: Any, ax: int) -> Any:
    """The cotangent of a cumulative function's `include_initial=True` result without its
    first entry along `ax` (the initial value, which no input reaches)."""
    return xp.take(g, xp.arange(1, g.shape[ax], device=g.device), axis=ax)


@defvjp("cumulative_sum")
def _cumsum(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> tuple[Any]:
    ax = 0 if axis is None else axis % x.ndim
    if include_initial:
        g = _without_initial(xp, g, ax)
    rev = xp.flip(xp.cumulative_sum(xp.flip(g, axis=ax), axis=ax), axis=ax)
    return (rev,)


@defvjp("linalg.vector_norm")
def _vector_norm(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2
) -> tuple[Any]:  # noqa: A002
    if ord != 2:
        raise TypeError(f"autodiff: linalg.vector_norm is differentiable for ord=2 only, not {ord!r}")
    full_ans = _expand_to(xp, ans, x, axis, keepdims)
    safe = xp.where(full_ans == 0, xp.ones_like(full_ans), full_ans)
    return (_expand_to(xp, g, x, axis, keepdims) * _conj_if_complex(xp, x) / safe,)


def _conj_if_complex(xp: Any, x: Any) -> Any:
    return xp.conj(x) if xp.isdtype(x.dtype, "complex floating") else x


@defvjp("linalg.matrix_norm")
def _matrix_norm(xp: Any, g: Any, ans: Any, x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> tuple[Any]:  # noqa: A002
    if ord != "fro":
        raise TypeError(f"autodiff: linalg.matrix_norm is differentiable for ord='fro' only, not {ord!r}")
    full_ans = _expand_to(xp, ans, x, (-2, -1), keepdims)
    safe = xp.where(full_ans == 0, xp.ones_like(full_ans), full_ans)
    return (_expand_to(xp, g, x, (-2, -1), keepdims) * _conj_if_complex(xp, x) / safe,)


# -- manipulation -----------------------------------------------------------------------------


@defvjp("reshape")
def _reshape(xp: Any, g: Any, ans: Any, x: Any, /, shape: Any, **kwargs: Any) -> tuple[Any, None]:
    return xp.reshape(g, x.shape), None


@defvjp("permute_dims")
def _permute_dims(xp: Any, g: Any, ans: Any, x: Any, /, axes: Any) -> tuple[Any, None]:
    axes = [a % x.ndim for a in axes]
    inverse = tuple(axes.index(i) for i in range(x.ndim))
    return xp.permute_dims(g, inverse), None


@defvjp("matrix_transpose")
def _matrix_transpose(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    return (xp.matrix_transpose(g),)


defvjp("linalg.matrix_transpose")(_matrix_transpose)


@defvjp("moveaxis")
def _moveaxis(xp: Any, g: Any, ans: Any, x: Any, source: Any, destination: Any, /) -> tuple[Any, None, None]:
    return xp.moveaxis(g, destination, source), None, None


@defvjp("broadcast_to")
def _broadcast_to(xp: Any, g: Any, ans: Any, x: Any, /, shape: Any) -> tuple[Any, None]:
    return unbroadcast(xp, g, x), None


@defvjp("squeeze")
def _squeeze(xp: Any, g: Any, ans: Any, x: Any, /, axis: Any) -> tuple[Any, None]:
    return xp.reshape(g, x.shape), None


@defvjp("expand_dims")
def _expand_dims(xp: Any, g: Any, ans: Any, x: Any, /, axis: Any = 0) -> tuple[Any, None]:
    return xp.reshape(g, x.shape), None


@defvjp("flip")
def _flip(xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None) -> tuple[Any]:
    return (xp.flip(g, axis=axis),)


@defvjp("roll")
def _roll(xp: Any, g: Any, ans: Any, x: Any, /, shift: Any, *, axis: Any = None) -> tuple[Any, None]:
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return xp.roll(g, back, axis=axis), None


@defvjp("concat")
def _concat(xp: Any, g: Any, ans: Any, arrays: Any, /, *, axis: Any = 0) -> tuple[list[Any]]:
    if axis is None:
        g = xp.reshape(g, (-1,))
        ax = 0
        sizes = [math.prod(a.shape) for a in arrays]
    else:
        ax = axis % ans.ndim
        sizes = [a.shape[ax] for a in arrays]
    out, start = [], 0
    for a, n in zip(arrays, sizes):
        piece = xp.take(g, xp.arange(start, start + n, device=g.device), axis=ax)
        out.append(xp.reshape(piece, a.shape))
        start += n
    return (out,)


@defvjp("stack")
def _stack(xp: Any, g: Any, ans: Any, arrays: Any, /, *, axis: int = 0) -> tuple[list[Any]]:
    return (list(xp.unstack(g, axis=axis)),)


@defvjp("tile")
def _tile(xp: Any, g: Any, ans: Any, x: Any, repetitions: Any, /) -> tuple[Any, None]:
    reps = (1,) * (ans.ndim - len(repetitions)) + tuple(repetitions)
    shape = (1,) * (ans.ndim - x.ndim) + tuple(x.shape)
    split = []
    for r, d in zip(reps, shape):
        split += [r, d]
    g = xp.reshape(g, tuple(split))
    g = xp.sum(g, axis=tuple(range(0, 2 * ans.ndim, 2)))
    return xp.reshape(g, x.shape), None


@defvjp("repeat")
def _repeat(xp: Any, g: Any, ans: Any, x: Any, repeats: Any, /, *, axis: Any = None) -> tuple[Any, None]:
    if not isinstance(repeats, int):
        raise TypeError("autodiff: repeat is differentiable for an int number of repeats only")
    if axis is None:
        return xp.reshape(xp.sum(xp.reshape(g, (-1, repeats)), axis=1), x.shape), None
    ax = axis % x.ndim
    shape = x.shape[:ax] + (x.shape[ax], repeats) + x.shape[ax + 1 :]
    return xp.sum(xp.reshape(g, shape), axis=ax + 1), None


# -- indexing ---------------------------------------------------------------------------------


def _scatter_add(xp: Any, g: Any, indices: Any, n: int, axis: int) -> Any:
    """Sum the slices of `g` along `axis` into `n` slots given by 1-D integer `indices`
    (repeats add up), by a one-hot matrix product: standard functions only."""
    onehot = xp.astype(xp.expand_dims(indices, axis=1) == xp.arange(n, device=g.device), g.dtype)  # (m, n)
    moved = xp.moveaxis(g, axis, -1)  # (..., m)
    return xp.moveaxis(xp.matmul(moved, onehot), -1, axis)


def _positions(xp: Any, indices: Any, n: int, device: Any) -> Any:
    """`indices` with negative entries counted from the end of an axis of size `n`, by a `take`
    from arange(n): an out-of-bounds entry raises as the forward gather does (at once, or when
    a lazy value computed from it is read) rather than dropping its cotangent silently."""
    flat = xp.take(xp.arange(n, device=device), xp.reshape(indices, (-1,)))
    return xp.reshape(flat, indices.shape)


@defvjp("take")
def _take(xp: Any, g: Any, ans: Any, x: Any, indices: Any, /, *, axis: Any = None) -> tuple[Any, None]:
    ax = 0 if axis is None else axis % x.ndim
    return _scatter_add(xp, g, _positions(xp, indices, x.shape[ax], g.device), x.shape[ax], ax), None


@defvjp("take_along_axis")
def _take_along_axis(xp: Any, g: Any, ans: Any, x: Any, indices: Any, /, *, axis: int = -1) -> tuple[Any, None]:
    ax = axis % x.ndim
    n = x.shape[ax]
    idx = _positions(xp, indices, n, g.device)
    onehot = xp.astype(xp.expand_dims(idx, axis=-1) == xp.arange(n, device=g.device), g.dtype)  # idx shape + (n,)
    contrib = xp.sum(xp.expand_dims(g, axis=-1) * onehot, axis=ax)  # drops axis ax; last axis n
    return xp.moveaxis(contrib, -1, ax), None


def _traced(g: Any) -> bool:
    """Whether the cotangent is itself traced (a gradient of a gradient is being taken)."""
    return type(g) is Tracer


def _basic_scatter(xp: Any, g: Any, x: Any, keys: tuple[Any, ...]) -> Any:
    """The transpose of basic indexing (ints, slices, an ellipsis; no new axes) without
    assigning into an array: each indexed axis is scattered by a one-hot product, which a
    traced cotangent can go through."""
    given = sum(1 for k in keys if k is not Ellipsis)
    if Ellipsis in keys:
        i = keys.index(Ellipsis)
        keys = keys[:i] + (slice(None),) * (x.ndim - given) + keys[i + 1 :]
    else:
        keys = keys + (slice(None),) * (x.ndim - len(keys))
    for d, k in enumerate(keys):
        if not isinstance(k, slice):
            g = xp.expand_dims(g, axis=d)
    for d, k in enumerate(keys):
        if k == slice(None):
            continue
        n = x.shape[d]
        positions = list(range(n))[k] if isinstance(k, slice) else [operator.index(k) % n]
        indices = xp.asarray(positions, dtype=xp.int64, device=g.device)
        g = _scatter_add(xp, g, indices, n, d)
    return g


@defvjp("__getitem__")
def _getitem(xp: Any, g: Any, ans: Any, x: Any, key: Any) -> tuple[Any, None]:
    keys = key if isinstance(key, tuple) else (key,)
    arrays = [k for k in keys if _is_array(k)]
    if not arrays:
        if any(k is None for k in keys):  # new axes: setitem takes none; drop them from g
            keys = tuple(k for k in keys if k is not None)
            g = xp.reshape(g, x[keys].shape)
        if _traced(g):  # a gradient of a gradient: no assignment into traced arrays
            return _basic_scatter(xp, g, x, keys), None
        out = xp.zeros_like(x)
        out[keys] = g
        return out, None
    if len(keys) == 1 and xp.isdtype(arrays[0].dtype, "bool"):
        mask = arrays[0]
        if _traced(g):
            lead = math.prod(mask.shape)
            where_true = xp.nonzero(xp.reshape(mask, (-1,)))[0]
            flat = _scatter_add(xp, g, where_true, lead, 0)
            return xp.reshape(flat, x.shape), None
        out = xp.zeros_like(x)
        out[mask] = g
        return out, None
    rest_is_full = all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in keys[1:])
    if _is_array(keys[0]) and rest_is_full and xp.isdtype(keys[0].dtype, "integral") and keys[0].ndim == 1:
        return _scatter_add(xp, g, _positions(xp, keys[0], x.shape[0], g.device), x.shape[0], 0), None
    raise TypeError(
        "autodiff: __getitem__ is differentiable for basic indices, one boolean mask or one 1-D integer array"
    )


def _real_only(xp: Any, x: Any, name: str) -> None:
    if xp.isdtype(x.dtype, "complex floating"):
        raise TypeError(f"autodiff: {name} is differentiable for real floating-point matrices only, not {x.dtype}")


def _diag_embed(xp: Any, d: Any) -> Any:
    """(..., k) -> (..., k, k) with `d` on the diagonal."""
    k = d.shape[-1]
    return d[..., None, :] * xp.eye(k, dtype=d.dtype, device=d.device)


def _inverse_gaps(xp: Any, values: Any) -> Any:
    """F[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it."""
    k = values.shape[-1]
    gaps = values[..., None, :] - values[..., :, None]
    on = xp.eye(k, dtype=xp.bool, device=values.device)
    return xp.where(on, 0.0, 1.0 / xp.where(on, 1.0, gaps))


@defvjp("linalg.slogdet")
def _slogdet(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    _real_only(xp, x, "linalg.slogdet")
    g_logabsdet = g[1]  # the sign is piecewise constant
    return (g_logabsdet[..., None, None] * xp.matrix_transpose(xp.linalg.inv(x)),)


@defvjp("linalg.eigh")
def _eigh(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    # jax's eigh JVP transposed: dw = diag(V^T dA V), dV = V (F o V^T dA V), F = 1/(w_j - w_i);
    # the input is taken as symmetrized, (A + A^T) / 2, as jax.numpy.linalg.eigh does
    _real_only(xp, x, "linalg.eigh")
    w, v = ans[0], ans[1]
    gw, gv = g[0], g[1]
    vt = xp.matrix_transpose(v)
    inner = _inverse_gaps(xp, w) * xp.matmul(vt, gv) + _diag_embed(xp, gw)
    c = xp.matmul(xp.matmul(v, inner), vt)
    return (0.5 * (c + xp.matrix_transpose(c)),)


@defvjp("linalg.eigvals")
def _eigvals(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    # jax's eig JVP for the eigenvalues, dw = diag(V^-1 dA V), transposed: V^-T diag(g) V^T
    # (distinct eigenvalues; a real matrix gets the real part)
    v = xp.linalg.eig(x)[1]
    left = xp.matrix_transpose(xp.linalg.inv(v)) * g[..., None, :]
    return (_like(xp, xp.matmul(left, xp.matrix_transpose(v)), x),)


@defvjp("linalg.eigvalsh")
def _eigvalsh(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    _real_only(xp, x, "linalg.eigvalsh")
    v = xp.linalg.eigh(x)[1]
    return (xp.matmul(v * g[..., None, :], xp.matrix_transpose(v)),)


@defvjp("linalg.svdvals")
def _svdvals(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    _real_only(xp, x, "linalg.svdvals")
    u, _, vh = xp.linalg.svd(x, full_matrices=False)
    return (xp.matmul(u * g[..., None, :], vh),)


@defvjp("linalg.svd")
def _svd(xp: Any, g: Any, ans: Any, x: Any, /, *, full_matrices: bool = True) -> tuple[Any]:
    # Townsend (2016), "Differentiating the singular value decomposition", the thin SVD:
    # A_bar = U [F o (U^T U_bar - U_bar^T U) S + diag(S_bar) + S F o (V^T V_bar - V_bar^T V)] V^T
    #         + (I - U U^T) U_bar S^-1 V^T + U S^-1 V_bar^T (I - V V^T),  F = 1/(s_j^2 - s_i^2)
    _real_only(xp, x, "linalg.svd")
    m, n = x.shape[-2], x.shape[-1]
    if full_matrices and m != n:
        raise TypeError("autodiff: linalg.svd is differentiable with full_matrices=False (or a square matrix) only")
    u, s, vh = ans[0], ans[1], ans[2]
    gu, gs, gvh = g[0], g[1], g[2]
    ut, v, gv = xp.matrix_transpose(u), xp.matrix_transpose(vh), xp.matrix_transpose(gvh)
    f = _inverse_gaps(xp, s * s)
    j = f * (xp.matmul(ut, gu) - xp.matmul(xp.matrix_transpose(gu), u))
    k = f * (xp.matmul(vh, gv) - xp.matmul(gvh, v))
    core = j * s[..., None, :] + _diag_embed(xp, gs) + s[..., :, None] * k
    out = xp.matmul(xp.matmul(u, core), vh)
    if m > n or not full_matrices:  # the parts of U outside its columns' span
        gu_s = gu / s[..., None, :]
        out = out + xp.matmul(gu_s - xp.matmul(u, xp.matmul(ut, gu_s)), vh)
    if n > m or not full_matrices:
        gvh_s = gvh / s[..., :, None]
        out = out + xp.matmul(u, gvh_s - xp.matmul(xp.matmul(gvh_s, v), vh))
    return (out,)


def _times_inverse_transpose(xp: Any, y: Any, r: Any) -> Any:
    """y @ inv(r)^T, by a solve: (r^-1 y^T)^T."""
    return xp.matrix_transpose(xp.linalg.solve(r, xp.matrix_transpose(y)))


@defvjp("linalg.qr")
def _qr(xp: Any, g: Any, ans: Any, x: Any, /, *, mode: str = "reduced") -> tuple[Any]:
    # TensorFlow's QrGrad (m >= n): with M = tril(Q^T Q_bar - Q_bar^T Q + R R_bar^T - R_bar R^T),
    # A_bar = Q (R_bar + M R^-T) + (Q_bar - Q Q^T Q_bar) R^-T
    _real_only(xp, x, "linalg.qr")
    m, n = x.shape[-2], x.shape[-1]
    if m < n or (mode == "complete" and m != n):
        raise TypeError("autodiff: linalg.qr is differentiable for m >= n rows and columns, mode='reduced', only")
    q, r = ans[0], ans[1]
    gq, gr = g[0], g[1]
    qt = xp.matrix_transpose(q)
    qdq = xp.matmul(qt, gq)
    rdr = xp.matmul(r, xp.matrix_transpose(gr))
    lower = xp.tril(qdq - xp.matrix_transpose(qdq) + rdr - xp.matrix_transpose(rdr))
    grad_a = xp.matmul(q, gr + _times_inverse_transpose(xp, lower, r))
    grad_b = _times_inverse_transpose(xp, gq - xp.matmul(q, qdq), r)
    return (grad_a + grad_b,)


@defvjp("linalg.pinv")
def _pinv(xp: Any, g: Any, ans: Any, x: Any, /, *, rtol: Any = None) -> tuple[Any]:
    # jax's pinv JVP (constant rank) transposed:
    # A_bar = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)
    _real_only(xp, x, "linalg.pinv")
    p = ans
    pt, gt = xp.matrix_transpose(p), xp.matrix_transpose(g)
    m, n = x.shape[-2], x.shape[-1]
    eye_m = xp.eye(m, dtype=x.dtype, device=x.device)
    eye_n = xp.eye(n, dtype=x.dtype, device=x.device)
    out = -xp.matmul(xp.matmul(pt, g), pt)
    out = out + xp.matmul(xp.matmul(eye_m - xp.matmul(x, p), gt), xp.matmul(p, pt))
    out = out + xp.matmul(xp.matmul(pt, p), xp.matmul(gt, eye_n - xp.matmul(p, x)))
    return (out,)


# -- fft ------------------------------------------------------------------------------------------


def _fit(xp: Any, g: Any, axis: int, length: int) -> Any:
    """`g` cut or zero-padded along `axis` to `length` (the transpose of an fft's `n`/`s`)."""
    have = g.shape[axis]
    if have == length:
        return g
    if have > length:
        return g[tuple(slice(None) for _ in range(axis)) + (slice(0, length), Ellipsis)]
    shape = list(g.shape)
    shape[axis] = length - have
    return xp.concat([g, xp.zeros(tuple(shape), dtype=g.dtype, device=g.device)], axis=axis)


def _fit_all(xp: Any, g: Any, x: Any, axes: Any) -> Any:
    for a in axes:
        g = _fit(xp, g, a, x.shape[a])
    return _like(xp, g, x)


def _fft_axes(x: Any, s: Any, axes: Any) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    return tuple(a % x.ndim for a in axes)


_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _irfft_scale(norm: str, size: int) -> float:
    return {"backward": 1.0 / size, "ortho": 1.0 / math.sqrt(size), "forward": 1.0}[norm]


def _irfft_transpose(xp: Any, g: Any, axis: int, size: int, norm: str) -> Any:
    """jax's irfft transpose: conj(mask * rfft(g)) scaled, mask = [1, 2, ..., 2, (1)]."""
    r = xp.fft.rfft(g, axis=axis)
    half = r.shape[axis]
    weights = [1.0] + [2.0] * (half - 2 + size % 2) + [1.0] * (1 - size % 2)
    shape = [1] * r.ndim
    shape[axis] = half
    mask = xp.reshape(xp.asarray(weights[:half], dtype=g.dtype, device=g.device), tuple(shape))
    return xp.conj(r * (mask * _irfft_scale(norm, size)))


def _fft_rule(name: str) -> None:
    """fft / ifft: the DFT matrix is symmetric, so the transpose is the function itself."""

    def rule(xp: Any, g: Any, ans: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
        ax = axis % x.ndim
        return (_fit_all(xp, getattr(xp.fft, name)(g, axis=ax, norm=norm), x, (ax,)),)

    defvjp(f"fft.{name}")(rule)


_fft_rule("fft")
_fft_rule("ifft")


def _fftn_rule(name: str) -> None:
    def rule(xp: Any, g: Any, ans: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
        ax = _fft_axes(x, s, axes)
        return (_fit_all(xp, getattr(xp.fft, name)(g, axes=ax, norm=norm), x, ax),)

    defvjp(f"fft.{name}")(rule)


_fftn_rule("fftn")
_fftn_rule("ifftn")


@defvjp("fft.rfft")
def _rfft(xp: Any, g: Any, ans: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    size = x.shape[ax] if n is None else n
    return (_fit_all(xp, xp.fft.fft(g, n=size, axis=ax, norm=norm), x, (ax,)),)


@defvjp("fft.rfftn")
def _rfftn(xp: Any, g: Any, ans: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    ax = _fft_axes(x, s, axes)
    sizes = [x.shape[a] for a in ax] if s is None else list(s)
    return (_fit_all(xp, xp.fft.fftn(g, s=sizes, axes=ax, norm=norm), x, ax),)


@defvjp("fft.irfft")
def _irfft(xp: Any, g: Any, ans: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    size = ans.shape[ax]
    return (_fit_all(xp, _irfft_transpose(xp, g, ax, size, norm), x, (ax,)),)


@defvjp("fft.irfftn")
def _irfftn(xp: Any, g: Any, ans: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    ax = _fft_axes(x, s, axes)
    total = math.prod(ans.shape[a] for a in ax)
    h = _irfft_transpose(xp, g, ax[-1], ans.shape[ax[-1]], "forward")  # unscaled
    if len(ax) > 1:  # the inverse DFT on the other axes, unscaled: symmetric
        h = xp.fft.ifftn(h, axes=ax[:-1], norm="forward")
    return (_fit_all(xp, h * _irfft_scale(norm, total), x, ax),)


@defvjp("fft.hfft")
def _hfft(xp: Any, g: Any, ans: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    # hfft(x) = irfft(conj(x)) with the norm swapped
    ax = axis % x.ndim
    return (_fit_all(xp, xp.conj(_irfft_transpose(xp, g, ax, ans.shape[ax], _SWAPPED[norm])), x, (ax,)),)


@defvjp("fft.ihfft")
def _ihfft(xp: Any, g: Any, ans: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    # ihfft(x) = conj(rfft(x)) with the norm swapped
    ax = axis % x.ndim
    size = x.shape[ax] if n is None else n
    return (_fit_all(xp, xp.fft.fft(xp.conj(g), n=size, axis=ax, norm=_SWAPPED[norm]), x, (ax,)),)


@defvjp("fft.fftshift")
def _fftshift(xp: Any, g: Any, ans: Any, x: Any, /, *, axes: Any = None) -> tuple[Any]:
    return (xp.fft.ifftshift(g, axes=axes),)


@defvjp("fft.ifftshift")
def _ifftshift(xp: Any, g: Any, ans: Any, x: Any, /, *, axes: Any = None) -> tuple[Any]:
    return (xp.fft.fftshift(g, axes=axes),)


NONDIFFERENTIABLE.update(
    {
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan", "isinf",
        "isfinite", "signbit", "sign", "floor", "ceil", "trunc", "round", "floor_divide",
        "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
        "bitwise_xor", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
        "argmax", "argmin", "argsort", "nonzero", "count_nonzero", "searchsorted", "isin",
        "unique_all", "unique_counts", "unique_inverse", "unique_values", "all", "any",
        "zeros_like", "ones_like", "empty_like", "full_like", "result_type", "can_cast",
        "isdtype", "finfo", "iinfo", "broadcast_shapes",
        "arange", "zeros", "ones", "empty", "eye", "linspace", "nextafter", "linalg.matrix_rank",
        "fft.fftfreq", "fft.rfftfreq",
    }
)  # fmt: skip


# -- more of the standard: triangles, diagonals, complex parts, sorting, differences -----------


def _like(xp: Any, g: Any, x: Any) -> Any:
    """Cotangent `g` for an operand `x`: the real part when `x` is real and `g` complex (the
    transpose of the embedding of the reals in the complex numbers), cast to `x`'s dtype."""
    if xp.isdtype(g.dtype, "complex floating") and not xp.isdtype(x.dtype, "complex floating"):
        g = xp.real(g)
    return g if g.dtype == x.dtype else xp.astype(g, x.dtype)


@defvjp("tril")
def _tril(xp: Any, g: Any, ans: Any, x: Any, /, *, k: int = 0) -> tuple[Any]:
    return (xp.tril(g, k=k),)


@defvjp("triu")
def _triu(xp: Any, g: Any, ans: Any, x: Any, /, *, k: int = 0) -> tuple[Any]:
    return (xp.triu(g, k=k),)


@defvjp("real")
def _real(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    return (_like(xp, g, x),)


@defvjp("imag")
def _imag(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    if not xp.isdtype(x.dtype, "complex floating"):
        return (xp.zeros_like(x),)
    # jax's convention: the transpose of imag is t -> -i t
    zero = xp.zeros_like(g)
    return (xp.astype(zero, x.dtype) - xp.astype(g, x.dtype) * xp.asarray(1j, dtype=x.dtype, device=g.device),)


@defvjp("conj")
def _conj(xp: Any, g: Any, ans: Any, x: Any) -> tuple[Any]:
    return (xp.conj(g) if xp.isdtype(x.dtype, "complex floating") else _like(xp, g, x),)


_binary("remainder", lambda xp, ans, a, b: 1.0, lambda xp, ans, a, b: -xp.floor_divide(a, b))


@defvjp("sort")
def _sort(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> tuple[Any]:
    # the permutation the sort applied (ties broken stably, as any tie order gives equal values);
    # its inverse routes each cotangent back to the element it came from
    order = xp.argsort(x, axis=axis, descending=descending, stable=True)
    inverse = xp.argsort(order, axis=axis, stable=True)
    return (xp.take_along_axis(g, inverse, axis=axis),)


def _shift_back(xp: Any, g: Any, axis: int) -> Any:
    """The transpose of one first difference along `axis` (out[i] = y[i+1] - y[i])."""
    shape = list(g.shape)
    shape[axis] = 1
    zero = xp.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    return xp.concat([zero, g], axis=axis) - xp.concat([g, zero], axis=axis)


@defvjp("diff")
def _diff(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None
) -> tuple[Any]:
    ax = axis % x.ndim
    for _ in range(n):
        g = _shift_back(xp, g, ax)
    start = prepend.shape[ax] if _is_array(prepend) and prepend.ndim == x.ndim else (1 if prepend is not None else 0)
    index = tuple(slice(None) for _ in range(ax)) + (slice(start, start + x.shape[ax]), Ellipsis)
    return (_like(xp, g[index], x),)


@defvjp("cumulative_prod")
def _cumprod(
    xp: Any, g: Any, ans: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> tuple[Any]:
    # exact at zeros (no division): d out[i] / d x[j] = prod_{k <= i, k != j} x[k] for i >= j,
    # the cumulative product of x with x[j] replaced by one, for every j (O(n^2) memory)
    ax = 0 if axis is None else axis % x.ndim
    if include_initial:
        g = _without_initial(xp, g, ax)
    n = x.shape[ax]
    xm = xp.moveaxis(x, ax, -1)
    gm = xp.moveaxis(g, ax, -1)
    one_at_j = xp.eye(n, dtype=xp.bool, device=x.device)  # [j, k]
    partial = xp.cumulative_prod(xp.where(one_at_j, xp.ones_like(xm[..., None, :]), xm[..., None, :]), axis=-1)
    later = xp.triu(xp.ones((n, n), dtype=x.dtype, device=x.device))  # [j, i]: i >= j
    gx = xp.sum(xp.astype(gm[..., None, :], x.dtype) * partial * later, axis=-1)
    return (xp.moveaxis(gx, -1, ax),)


@defvjp("unstack")
def _unstack(xp: Any, g: Any, ans: Any, x: Any, /, *, axis: int = 0) -> tuple[Any]:
    return (xp.stack(list(g), axis=axis),)


@defvjp("broadcast_arrays")
def _broadcast_arrays(xp: Any, g: Any, ans: Any, *arrays: Any) -> tuple[Any, ...]:
    return tuple(unbroadcast(xp, gi, a) if _is_array(a) else None for gi, a in zip(g, arrays))


@defvjp("meshgrid")
def _meshgrid(xp: Any, g: Any, ans: Any, *arrays: Any, indexing: str = "xy") -> tuple[Any, ...]:
    out = []
    for i, gi in enumerate(g):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and len(arrays) > 1 else i
        others = tuple(d for d in range(gi.ndim) if d != axis)
        out.append(xp.sum(gi, axis=others) if others else gi)
    return tuple(out)


# -- more of linalg -------------------------------------------------------------------------------


@defvjp("linalg.diagonal")
def _diagonal(xp: Any, g: Any, ans: Any, x: Any, /, *, offset: int = 0) -> tuple[Any]:
    m, n = x.shape[-2], x.shape[-1]
    d = g.shape[-1]
    on_diagonal = xp.eye(m, n, k=offset, dtype=g.dtype, device=g.device)
    if offset >= 0:  # element i sits at row i
        rows = xp.matmul(g, xp.eye(d, m, dtype=g.dtype, device=g.device))
        return (on_diagonal * rows[..., :, None],)
    cols = xp.matmul(g, xp.eye(d, n, dtype=g.dtype, device=g.device))  # element i sits at column i
    return (on_diagonal * cols[..., None, :],)


@defvjp("linalg.trace")
def _trace(xp: Any, g: Any, ans: Any, x: Any, /, *, offset: int = 0, dtype: Any = None) -> tuple[Any]:
    on_diagonal = xp.eye(x.shape[-2], x.shape[-1], k=offset, dtype=x.dtype, device=x.device)
    return (_like(xp, g[..., None, None], x) * on_diagonal,)


@defvjp("linalg.outer")
def _outer(xp: Any, g: Any, ans: Any, a: Any, b: Any, /) -> tuple[Any, Any]:
    return _like(xp, xp.matmul(g, b), a), _like(xp, xp.matmul(a, g), b)


@defvjp("linalg.cross")
def _cross(xp: Any, g: Any, ans: Any, a: Any, b: Any, /, *, axis: int = -1) -> tuple[Any, Any]:
    # <g, a x b> = <a, b x g> = <b, g x a>
    ga = xp.linalg.cross(xp.broadcast_to(b, g.shape), g, axis=axis)
    gb = xp.linalg.cross(g, xp.broadcast_to(a, g.shape), axis=axis)
    return unbroadcast(xp, ga, a), unbroadcast(xp, gb, b)


def _power_cotangent(xp: Any, g: Any, a: Any, k: int) -> Any:
    """The cotangent of `a` for a^k, k >= 1: sum_j (a^T)^j g (a^T)^(k-1-j)."""
    at = xp.matrix_transpose(a)
    powers = [None, at]
    for _ in range(2, k):
        powers.append(xp.matmul(powers[-1], at))
    total = None
    for j in range(k):
        left = g if j == 0 else xp.matmul(powers[j], g)
        term = left if j == k - 1 else xp.matmul(left, powers[k - 1 - j])
        total = term if total is None else total + term
    return total


@defvjp("linalg.matrix_power")
def _matrix_power(xp: Any, g: Any, ans: Any, x: Any, n: int, /) -> tuple[Any, None]:
    if n == 0:
        return xp.zeros_like(x), None
    if n > 0:
        return _power_cotangent(xp, g, x, n), None
    inv = xp.linalg.inv(x)
    ginv = _power_cotangent(xp, g, inv, -n)
    t = xp.matrix_transpose(inv)
    return -xp.matmul(xp.matmul(t, ginv), t), None
