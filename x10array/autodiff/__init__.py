"""Reverse-mode automatic differentiation on any Array API namespace.

    from x10array.autodiff import grad, value_and_grad, vjp

    loss, grads = value_and_grad(loss_fn)(params, batch)

`params` may be an array or a pytree of arrays (dicts, lists, tuples, and objects that
implement `tree_flatten()` / `tree_unflatten(aux, children)` such as `x10array.nn.Module`).
The function is written against the standard (`xp = array_namespace(x)` or
`x.__array_namespace__()`), so the same code differentiates on x10array eager, x10array lazy
and array-api-strict. Gradient rules: `x10array.autodiff._rules`, one per standard function;
primitives defined with `x10array.extend.primitive` bring their own (its `vjp=`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..extend import tree_flatten, tree_map, tree_unflatten
from . import _rules  # noqa: F401  (registers the rules)
from ._tracer import RULES, DiffNamespace, Tracer, backward, defvjp

__all__ = ["grad", "value_and_grad", "vjp", "defvjp", "tree_flatten", "tree_unflatten", "tree_map", "RULES"]


def _namespace(leaves: list[Any], fname: str) -> Any:
    if not leaves:
        raise ValueError(f"{fname}: the differentiated argument holds no arrays")
    for leaf in leaves:
        if not hasattr(leaf, "__array_namespace__"):
            raise TypeError(f"{fname}: can only differentiate with respect to arrays, got {type(leaf).__name__}")
    xp = leaves[0].__array_namespace__()
    for leaf in leaves:
        if not xp.isdtype(leaf.dtype, "real floating"):
            raise TypeError(
                f"{fname}: can only differentiate with respect to real floating-point arrays, got {leaf.dtype}"
            )
    return xp


def _box(args: tuple[Any, ...], argnums: tuple[int, ...], fname: str) -> tuple[list[Any], list[Any], Any]:
    """Box the differentiated arguments' arrays as live tracers, and every other array argument
    as a constant tracer, so that a namespace taken from any argument differentiates."""
    new_args = list(args)
    tracers_per_arg = []
    xp = None
    for i in argnums:
        if i >= len(args):
            raise ValueError(f"{fname}: argnums {i} but only {len(args)} positional arguments were given")
        leaves, treedef = tree_flatten(args[i])
        xp = _namespace(leaves, fname)
        ns = DiffNamespace.of(xp)
        tracers = [Tracer(leaf, None, ns) for leaf in leaves]
        tracers_per_arg.append((tracers, treedef))
        new_args[i] = tree_unflatten(treedef, tracers)
    ns = DiffNamespace.of(xp)
    for i, arg in enumerate(args):
        if i not in argnums:
            new_args[i] = tree_map(lambda a: Tracer(a, None, ns, live=False) if _same_namespace(a, xp) else a, arg)
    return new_args, tracers_per_arg, xp


def _check_grad_args(fname: str, f: Any, argnums: Any, has_aux: Any) -> tuple[bool, tuple[int, ...]]:
    """(one argnum?, the argnums) after checking the arguments of grad / value_and_grad."""
    if not callable(f):
        raise TypeError(f"{fname}: f must be a function, got {type(f).__name__}")
    if not isinstance(has_aux, bool):
        raise TypeError(f"{fname}: has_aux must be a bool, got {type(has_aux).__name__}")
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    nums = (argnums,) if single else tuple(argnums) if isinstance(argnums, (tuple, list)) else argnums
    if not isinstance(nums, tuple) or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"{fname}: argnums must be an int or a tuple of ints, got {argnums!r}")
    if not nums or any(i < 0 for i in nums) or len(set(nums)) != len(nums):
        raise ValueError(f"{fname}: argnums must be distinct non-negative positions, got {argnums!r}")
    return single, nums


def _same_namespace(a: Any, xp: Any) -> bool:
    return hasattr(a, "__array_namespace__") and type(a) is not Tracer and a.__array_namespace__() is xp


def _unbox_output(out: Any) -> Any:
    return out.value if type(out) is Tracer else out


def value_and_grad(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """`f`'s value and its gradient with respect to argument(s) `argnums`.

    `f` must return a 0-d real floating-point array (or `(value, aux)` with `has_aux`).
    """
    single, nums = _check_grad_args("value_and_grad", f, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        new_args, boxed, xp = _box(args, nums, "grad")
        result = f(*new_args, **kwargs)
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError("grad: with has_aux=True the function must return (value, aux)")
            out, aux = result
            aux = tree_map(_unbox_output, aux)
        else:
            out = result
        value = _unbox_output(out)
        if not hasattr(value, "__array_namespace__") or value.ndim != 0:
            raise TypeError(f"grad: the function must return a 0-d array, got {getattr(value, 'shape', type(value))}")
        if not xp.isdtype(value.dtype, "real floating"):
            raise TypeError(f"grad: the function must return a real floating-point value, got {value.dtype}")
        live = type(out) is Tracer and out.live
        grads = backward(out, xp.ones((), dtype=value.dtype, device=value.device)) if live else {}
        results = []
        for tracers, treedef in boxed:
            leaves = [grads.get(id(t)) for t in tracers]
            leaves = [xp.zeros_like(t.value) if g is None else g for t, g in zip(tracers, leaves)]
            results.append(tree_unflatten(treedef, leaves))
        g_out = results[0] if single else tuple(results)
        return ((value, aux), g_out) if has_aux else (value, g_out)

    return wrapped


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of the scalar function `f` with respect to argument(s) `argnums`."""
    _check_grad_args("grad", f, argnums, has_aux)
    vg = value_and_grad(f, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def vjp(f: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """`(f(*primals), vjp_fn)`; `vjp_fn(cotangent)` returns one cotangent per primal."""
    if not callable(f):
        raise TypeError(f"vjp: f must be a function, got {type(f).__name__}")
    new_args, boxed, xp = _box(primals, tuple(range(len(primals))), "vjp")
    out = f(*new_args)
    value = _unbox_output(out)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        if not hasattr(cotangent, "__array_namespace__"):
            raise TypeError(f"vjp: the cotangent must be an array, got {type(cotangent).__name__}")
        if cotangent.shape != value.shape:
            raise ValueError(f"vjp: the cotangent must have the output's shape {value.shape}, got {cotangent.shape}")
        grads = backward(out, cotangent) if type(out) is Tracer and out.live else {}
        results = []
        for tracers, treedef in boxed:
            leaves = [grads.get(id(t)) for t in tracers]
            leaves = [xp.zeros_like(t.value) if g is None else g for t, g in zip(tracers, leaves)]
            results.append(tree_unflatten(treedef, leaves))
        return tuple(results)

    return value, vjp_fn
