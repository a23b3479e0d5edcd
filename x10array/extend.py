"""The public extension API: what code building on x10array may use beyond the standard.

`nn`, `optim`, `autodiff`, `datasets` and `examples` import x10array's public namespace and
this module only (a test checks it); so may any user's library.

A new primitive, defined once, with its facets side by side (docs/extending.md walks through
one):

    def softplus_vjp(xp, g, ans, x):
        return (g / (1.0 + xp.exp(-x)),)

    @extend.primitive("mylib.softplus", vjp=softplus_vjp)
    def softplus(k, x):
        return k.logaddexp(x, k.zeros((), dtype=x.dtype))

`softplus` is now a public function: `softplus(x)` checks that `x` is an x10array array
(every operand on one device), then binds the primitive, which runs the kernel with NumPy on
an eager CPU, with `jax.numpy` op by op on eager XLA kernels, and records it on a lazy device
(interpreted with the NumPy kernel while the graph is cold, compiled with the jax one once it
pays). Under `x10array.autodiff.grad` it is differentiated by its VJP rule.

The parts of a definition:

- `kernel(k, *operands, **params)`: the computation, written against the kernel namespace
  `k`: NumPy's API (`k.exp`, `k.where`, `k.tensordot`, ...) on NumPy or jax.numpy, with
  `k.is_jax` to branch where the two differ, `k.lax` (jax.lax, or None), `k.errstate` (a
  no-op under jax). Its signature declares the function's: positional parameters after `k`
  are the array operands, keyword-only parameters the static parameters (hashable Python
  values: ints, floats, strings, tuples, dtypes), which key the compile caches.
- `lowering(k, ...)`: the XLA form where it should differ from the kernel (same signature).
- `shape(*avals, **params)`: the result's shape and dtype from the operands' (`avals` have
  `.shape` and a NumPy `.dtype`); return `ShapeDtype(shape, dtype)` (a tuple of them with
  `multiple_results`). Optional: without it the lazy backend derives them by abstract
  evaluation of the lowering. With it, every kernel result is checked against it.
- `vjp(xp, g, ans, *operands, **params)`: the vector-Jacobian product, written with `xp`
  (the namespace of the operands, so it runs on every device and under nested `grad`):
  `g` is the cotangent of the result `ans`; return a tuple with one cotangent per operand
  (an array of the operand's shape and dtype, or None). With `vjp_needs=True` it also gets
  `needs=`, a tuple of bools telling which operands' cotangents are wanted.
- `fallback(xp, *operands, **params)`: optional, the same function composed from the
  standard's functions, for the arrays of other Array API libraries (array-api-strict, ...).

Pytrees (`tree_flatten`, `tree_unflatten`, `tree_map`, `tree_leaves_with_paths`): the one walk
of nested dicts, lists, tuples, None and objects with `tree_flatten()` / `tree_unflatten(aux,
children)` that autodiff, nn, optim, checkpoint and `x10array.compile` share (`_core/pytree.py`).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._api.creation import resolve_device as _resolve_device
from ._api.operators import OPERATORS as _OPERATORS
from ._core import dispatch as _dispatch
from ._core import settings as settings
from ._core.array import Array as _Array
from ._core.devices import Device as _Device
from ._core.dtypes import KINDS as _KINDS
from ._core.dtypes import DType as _DType
from ._core.primitive import OP_TABLE as _OP_TABLE
from ._core.primitive import Primitive as _Primitive
from ._core.primitive import ShapeDtype as ShapeDtype
from ._core.primitive import bind as _bind
from ._core.pytree import tree_flatten as tree_flatten
from ._core.pytree import tree_leaves_with_paths as tree_leaves_with_paths
from ._core.pytree import tree_map as tree_map
from ._core.pytree import tree_unflatten as tree_unflatten
from ._core.validation import common_device as _common_device

# `settings` is a module of its own: `import x10array.extend.settings` finds it here, as
# `from x10array.extend import settings` does (extend is a module, not a package)
sys.modules[__name__ + ".settings"] = settings

__all__ = [
    "settings",
    "primitive",
    "Definition",
    "definition",
    "ShapeDtype",
    "register_tracer",
    "resolve_device",
    "operator_table",
    "tree_flatten",
    "tree_unflatten",
    "tree_map",
    "tree_leaves_with_paths",
]


def operator_table() -> tuple[tuple[str, str, bool, bool], ...]:
    """The array object's binary operators: (operator, the standard function it calls, has a
    reflected form, has an in-place form), e.g. ("add", "add", True, True) for `__add__`."""
    return tuple((op, fn.__name__, reflected, inplace) for op, fn, reflected, inplace in _OPERATORS)


def resolve_device(device: Any, fname: str) -> _Device:
    """The device a `device=` argument names: a `Device`, a device string ('eager', 'xla',
    'cpu:0:xla', ...), or None for the current default device. A bad one is a ValueError
    naming `fname`."""
    return _resolve_device(device, fname)


# -- tracers -------------------------------------------------------------------------------------


def register_tracer(
    tracer_type: type, root_namespace: Callable[[Any], Any], *, apply: Callable[..., Any] | None = None
) -> None:
    """Register the tracer type of an autodiff system.

    x10array's public functions given a `tracer_type` forward the whole call to the same
    function of the tracer's own namespace (`tracer.namespace`) when `root_namespace(tracer)`
    is x10array (the array library whose arrays the tracer traces). Extension functions
    (`primitive`) given one call `apply(tracer, definition, operands, params)`, which runs
    `definition.function` on the traced values and records `definition.vjp`."""
    if not isinstance(tracer_type, type):
        raise TypeError(f"register_tracer: tracer_type must be a class, got {type(tracer_type).__name__}")
    if not callable(root_namespace):
        raise TypeError(f"register_tracer: root_namespace must be callable, got {type(root_namespace).__name__}")
    if apply is not None and not callable(apply):
        raise TypeError(f"register_tracer: apply must be callable, got {type(apply).__name__}")
    _dispatch.register_tracer(tracer_type, root_namespace, apply)  # (the one tracer registry)


# -- primitives ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Definition:
    """An extension primitive, as `primitive` defined it (see the module's docstring).

    `operands` are the names of the array operands (from the kernel's signature), `params`
    the names of the static parameters (None: any, the kernel takes `**params`), `required`
    those without a default, `defaults` the others' defaults (filled into every call, so the
    kernel, the rules and the compile caches all see them); `function` is the public function."""

    name: str
    kernel: Callable[..., Any]
    lowering: Callable[..., Any] | None
    shape: Callable[..., Any] | None
    vjp: Callable[..., Any] | None
    vjp_needs: bool
    fallback: Callable[..., Any] | None
    multiple_results: bool
    elementwise: bool
    category: str | tuple[str, ...] | None
    operands: tuple[str, ...]
    variadic: bool
    params: frozenset[str] | None
    required: frozenset[str]
    defaults: Mapping[str, Any]
    function: Callable[..., Any] = field(init=False, repr=False)
    primitive: _Primitive = field(init=False, repr=False)

    def operand_name(self, i: int) -> str:
        return self.operands[i] if i < len(self.operands) else f"operand {i}"

    def __repr__(self) -> str:
        return f"<x10array.extend primitive {self.name}>"


_DEFINITIONS: dict[str, Definition] = {}
_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def definition(name: str) -> Definition:
    """The definition of the extension primitive `name`; ValueError if there is none."""
    found = _DEFINITIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"definition: no extension primitive is named {name!r}")
    return found


def primitive(
    name: str,
    kernel: Callable[..., Any] | None = None,
    *,
    lowering: Callable[..., Any] | None = None,
    shape: Callable[..., Any] | None = None,
    vjp: Callable[..., Any] | None = None,
    vjp_needs: bool = False,
    fallback: Callable[..., Any] | None = None,
    multiple_results: bool = False,
    elementwise: bool = False,
    category: str | tuple[str, ...] | None = None,
) -> Any:
    """Define the primitive `name` and return its public function (see the module docstring).

    `primitive(name, kernel, ...)` or, as a decorator over the kernel,
    `@primitive(name, ...)`. Options:

    - `multiple_results`: the kernel returns a tuple of arrays; so does the function. Its VJP
      rule then gets `g` as a tuple, one cotangent per result (zeros for a floating-point
      result that does not reach the differentiated output, None for an integer one), and
      is called once per result that receives a cotangent.
    - `elementwise`: the result has the operands' broadcast shape and a dtype that depends on
      their dtypes only (the lazy backend then derives it once per dtype combination).
    - `category`: the dtype kind(s) every operand must have, as `isdtype` names them
      ("real floating", "numeric", ...): a TypeError naming the function otherwise.

    A name defined before (by x10array or an earlier call) is a ValueError."""
    _check_name(name)
    options = _check_options(name, lowering, shape, vjp, vjp_needs, fallback, multiple_results, elementwise, category)
    if kernel is None:

        def define(kernel: Callable[..., Any]) -> Any:
            return _define(name, kernel, options)

        return define
    return _define(name, kernel, options)


def _check_name(name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"primitive: name must be a str such as 'mylib.softplus', got {type(name).__name__}")
    if not _NAME.fullmatch(name):
        raise ValueError(f"primitive: name must be dotted identifiers such as 'mylib.softplus', got {name!r}")
    if name in _DEFINITIONS:
        raise ValueError(f"primitive: {name!r} is already defined")
    if name in _OP_TABLE:
        raise ValueError(f"primitive: {name!r} is the name of one of x10array's own primitives; choose another")


def _check_options(
    name: str,
    lowering: Any,
    shape: Any,
    vjp: Any,
    vjp_needs: Any,
    fallback: Any,
    multiple_results: Any,
    elementwise: Any,
    category: Any,
) -> dict[str, Any]:
    for arg, value in (("lowering", lowering), ("shape", shape), ("vjp", vjp), ("fallback", fallback)):
        if value is not None and not callable(value):
            raise TypeError(f"primitive: {name}'s {arg} must be a function or None, got {type(value).__name__}")
    for arg, value in (
        ("vjp_needs", vjp_needs),
        ("multiple_results", multiple_results),
        ("elementwise", elementwise),
    ):
        if not isinstance(value, bool):
            raise TypeError(f"primitive: {name}'s {arg} must be a bool, got {type(value).__name__}")
    if vjp_needs and vjp is None:
        raise ValueError(f"primitive: {name} has vjp_needs=True but no vjp rule")
    if elementwise and multiple_results:
        raise ValueError(f"primitive: {name}: an elementwise primitive has one result")
    kinds = (category,) if isinstance(category, str) else category
    if category is not None and not (
        isinstance(kinds, tuple) and kinds and all(isinstance(k, str) and k in _KINDS for k in kinds)
    ):
        raise ValueError(
            f"primitive: {name}'s category must be a dtype kind or a tuple of them ({', '.join(map(repr, _KINDS))}),"
            f" got {category!r}"
        )
    return {
        "lowering": lowering,
        "shape": shape,
        "vjp": vjp,
        "vjp_needs": vjp_needs,
        "fallback": fallback,
        "multiple_results": multiple_results,
        "elementwise": elementwise,
        "category": category,
    }


def _signature(
    name: str, kernel: Callable[..., Any]
) -> tuple[tuple[str, ...], bool, frozenset[str] | None, dict[str, Any]]:
    """(operand names, variadic, parameter names or None for any, {parameter: default}) from
    the kernel's signature `kernel(k, *operands, **params)`."""
    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError):
        raise TypeError(f"primitive: {name}'s kernel has no signature to read its operands from") from None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = list(sig.parameters.values())
    if not parameters or parameters[0].kind not in positional:
        raise TypeError(
            f"primitive: {name}'s kernel must take the kernel namespace first: kernel(k, *operands, **params)"
        )
    operands: list[str] = []
    variadic = False
    params: dict[str, Any] = {}
    any_params = False
    for p in parameters[1:]:
        if p.kind in positional:
            if p.default is not p.empty:
                raise TypeError(
                    f"primitive: {name}'s kernel gives operand {p.name!r} a default; operands are arrays, always"
                    " passed: make it a keyword-only parameter (after `*`) if it is a static parameter"
                )
            operands.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            variadic = True
        elif p.kind is p.KEYWORD_ONLY:
            params[p.name] = p.default
        else:
            any_params = True
    if not operands and not variadic:
        raise TypeError(f"primitive: {name}'s kernel takes no array operand; kernel(k, x, ...) takes one")
    return tuple(operands), variadic, None if any_params else frozenset(params), params


def _define(name: str, kernel: Any, options: dict[str, Any]) -> Any:
    if not callable(kernel):
        raise TypeError(f"primitive: {name}'s kernel must be a function, got {type(kernel).__name__}")
    _check_name(name)  # (again: a decorator may be applied later)
    operands, variadic, params, declared = _signature(name, kernel)
    required = frozenset(p for p, default in declared.items() if default is inspect.Parameter.empty)
    defaults = {p: default for p, default in declared.items() if default is not inspect.Parameter.empty}
    if options["vjp_needs"] and params is not None and "needs" in params:
        raise ValueError(f"primitive: {name} has vjp_needs=True, so its kernel cannot take a parameter 'needs'")
    d = Definition(
        name,
        kernel,
        operands=operands,
        variadic=variadic,
        params=params,
        required=required,
        defaults=defaults,
        **options,
    )
    user_rule = options["shape"]
    run, lowering = kernel, options["lowering"]
    if user_rule is not None:  # every result is checked against the rule
        run = _checked(d, kernel)
        lowering = _checked(d, lowering if lowering is not None else kernel)
    prim = _Primitive(
        name,
        run,
        lowering=lowering,
        rule=None if user_rule is None else _rule(d),
        multiple_results=options["multiple_results"],
        elementwise=options["elementwise"],
    )
    object.__setattr__(d, "primitive", prim)
    object.__setattr__(d, "function", _function(d, declared))
    _DEFINITIONS[name] = d
    return d.function


# -- shape rules ---------------------------------------------------------------------------------


def _np_dtype(d: Definition, dtype: Any) -> np.dtype:
    if isinstance(dtype, _DType):
        return dtype.np
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{d.name}: its shape rule gave the dtype {dtype!r}, which is no dtype") from None


def _avals(d: Definition, out: Any) -> Any:
    """The shape rule's result `out` as ShapeDtype(s) with NumPy dtypes."""

    def one(o: Any) -> ShapeDtype:
        if not (hasattr(o, "shape") and hasattr(o, "dtype")):
            raise TypeError(
                f"{d.name}: its shape rule must return ShapeDtype(shape, dtype) (anything with .shape and .dtype)"
                f"{', a tuple of them' if d.multiple_results else ''}, got {type(o).__name__}"
            )
        return ShapeDtype(tuple(int(s) for s in o.shape), _np_dtype(d, o.dtype))

    if d.multiple_results:
        if not isinstance(out, (tuple, list)):
            raise TypeError(f"{d.name}: its shape rule must return a tuple of ShapeDtype, got {type(out).__name__}")
        return tuple(one(o) for o in out)
    return one(out)


def _rule(d: Definition) -> Callable[..., Any]:
    user_rule = d.shape
    assert user_rule is not None

    def rule(*avals: Any, **params: Any) -> Any:
        return _avals(d, user_rule(*avals, **params))

    return rule


def _checked(d: Definition, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`kernel`, checking each result against the shape rule (what a lazy device recorded)."""
    rule = _rule(d)

    def checked(k: Any, *bufs: Any, **params: Any) -> Any:
        out = kernel(k, *bufs, **params)
        expected = rule(*bufs, **params)
        got = out if d.multiple_results else (out,)
        want = expected if d.multiple_results else (expected,)
        got_avals: list[Any] = [type(got).__name__]
        if isinstance(got, (tuple, list)) and len(got) == len(want):
            got_avals = [(tuple(np.shape(o)), _dtype_of(o)) for o in got]
            if got_avals == [(w.shape, w.dtype) for w in want]:
                return out
        raise ValueError(
            f"{d.name}: the {'lowering' if k.is_jax else 'kernel'} returned {_describe(got_avals)} where the shape"
            f" rule says {_describe([(w.shape, w.dtype) for w in want])}"
        )

    return checked


def _dtype_of(value: Any) -> np.dtype:
    dtype = getattr(value, "dtype", None)  # (a jax tracer cannot become a NumPy array)
    return np.result_type(value) if dtype is None else np.dtype(dtype)


def _describe(avals: list[Any]) -> str:
    return ", ".join(f"{a[1]}{list(a[0])}" if isinstance(a, tuple) else str(a) for a in avals)


# -- the public function -------------------------------------------------------------------------


def _function(d: Definition, declared: Mapping[str, Any]) -> Callable[..., Any]:
    """The public function of `d`: validates, then binds (or forwards, or falls back)."""
    prim = d.primitive
    n = len(d.operands)
    variadic = d.variadic
    required = d.required
    defaults = d.defaults
    kinds = (d.category,) if isinstance(d.category, str) else d.category
    allowed = None if kinds is None else frozenset(t for kind in kinds for t in _KINDS[kind])
    name = d.name

    def function(*operands: Any, **params: Any) -> Any:
        if len(operands) != n and not (variadic and len(operands) >= max(n, 1)):
            _arity_error(d, len(operands))
        for x in operands:
            if type(x) is not _Array:
                return _call_other(d, operands, params)
        if defaults:
            params = {**defaults, **params}
        if params or required:
            _check_params(d, params)
        device = operands[0]._device
        for x in operands:
            if x._device is not device and x._device != device:
                device, operands = _common_device(operands, name)
                break
        for i, x in enumerate(operands):
            if allowed is not None and x._dtype not in allowed:
                raise TypeError(
                    f"{name}: {d.operand_name(i)} must have a {_kinds_text(kinds)} dtype, got {x._dtype.name}"
                )
        return _bind(prim, device, *operands, **params)

    short = name.rpartition(".")[2]
    function.__name__ = function.__qualname__ = short
    function.__module__ = getattr(d.kernel, "__module__", __name__)
    function.__doc__ = d.kernel.__doc__
    P = inspect.Parameter
    signature = [P(o, P.POSITIONAL_ONLY) for o in d.operands]
    if variadic:
        signature.append(P("operands", P.VAR_POSITIONAL))
    signature += [P(p, P.KEYWORD_ONLY, default=default) for p, default in declared.items()]
    if d.params is None:
        signature.append(P("params", P.VAR_KEYWORD))
    function.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]  # read by inspect.signature
    function.definition = d  # type: ignore[attr-defined]  # an attribute on a function object
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function object
    return function


def _kinds_text(kinds: tuple[str, ...] | None) -> str:
    return " or ".join(kinds or ())


def _arity_error(d: Definition, got: int) -> None:
    if d.variadic:
        wanted = f"at least {max(len(d.operands), 1)} array operand{'s' if max(len(d.operands), 1) > 1 else ''}"
    else:
        wanted = f"{len(d.operands)} array operand{'s' if len(d.operands) > 1 else ''} ({', '.join(d.operands)})"
    raise TypeError(f"{d.name}: takes {wanted}, got {got}")


def _check_params(d: Definition, params: dict[str, Any]) -> None:
    name = d.name
    if d.params is not None and not params.keys() <= d.params:
        unknown = sorted(params.keys() - d.params)[0]
        known = ", ".join(sorted(d.params)) or "none"
        raise TypeError(f"{name}: unexpected parameter {unknown!r} (its parameters: {known})")
    if not d.required <= params.keys():
        raise TypeError(f"{name}: missing parameter {sorted(d.required - params.keys())[0]!r}")
    try:
        hash(tuple(params.values()))
    except TypeError:
        for key, value in params.items():
            if hasattr(value, "__array_namespace__"):
                raise TypeError(
                    f"{name}: parameter {key!r} is an array; parameters are static Python values, arrays are"
                    " passed as operands"
                ) from None
            try:
                hash(value)
            except TypeError:
                raise TypeError(
                    f"{name}: parameter {key!r} must be a hashable Python value (a tuple, not a list), got"
                    f" {type(value).__name__}"
                ) from None
        raise


def _call_other(d: Definition, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """A call whose operands are not all x10array arrays: forward tracers to their autodiff
    system, run the fallback on another library's arrays, or refuse."""
    name = d.name
    if d.defaults:
        params = {**d.defaults, **params}
    tracer = _dispatch.find_tracer(operands, {})
    if tracer is not None:
        apply = _dispatch.apply_of(tracer)
        if apply is None:
            raise TypeError(
                f"{name}: got a {type(tracer).__name__}, the tracer of an autodiff system that registered no way"
                " to run extension functions (register_tracer(..., apply=...))"
            )
        return apply(tracer, d, operands, params)  # (which calls the function on the values: checked there)
    for i, x in enumerate(operands):
        if type(x) is not _Array and (d.fallback is None or not hasattr(x, "__array_namespace__")):
            what = "an x10array array" if d.fallback is None else "an array"
            raise TypeError(f"{name}: {d.operand_name(i)} must be {what}, got {_type_name(x)}")
    assert d.fallback is not None
    xp = operands[0].__array_namespace__()
    for i, x in enumerate(operands):
        if x.__array_namespace__() is not xp:
            raise TypeError(
                f"{name}: {d.operand_name(i)} is an array of another library than {d.operand_name(0)}'s;"
                " convert one of them"
            )
        if d.category is not None and not xp.isdtype(x.dtype, d.category):
            raise TypeError(f"{name}: {d.operand_name(i)} must have a {_kinds_text(_as_kinds(d))} dtype, got {x.dtype}")
    _check_params(d, params)
    return d.fallback(xp, *operands, **params)


def _type_name(x: Any) -> str:
    """`x`'s type, with its library when it is not Python's own: 'list', 'array_api_strict.Array'."""
    kind = type(x)
    library = kind.__module__.partition(".")[0]
    return kind.__name__ if library == "builtins" else f"{library}.{kind.__name__}"


def _as_kinds(d: Definition) -> tuple[str, ...] | None:
    return (d.category,) if isinstance(d.category, str) else d.category
