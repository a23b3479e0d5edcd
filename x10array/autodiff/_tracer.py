"""Reverse-mode autodiff over any Array API namespace.

`grad(f)(params)` boxes each array leaf of `params` in a `Tracer`. A tracer behaves like an
array of the standard; its `__array_namespace__()` is a `DiffNamespace` that wraps the
arrays' own namespace (x10array eager, x10array lazy, array-api-strict, ...). Each function
of that namespace runs the underlying function on the unboxed values and, when an input was
traced, records the rule that maps the output's cotangent to the inputs'. `backward` then
walks the records in reverse order of creation (micrograd's topological walk), applying the
rules, which are written once per standard function with `xp` (see `_rules.py`).

Primitives defined with `x10array.extend.primitive` carry their own VJP rule: given a
tracer, their function hands the call to `_apply_extension` (registered with
`extend.register_tracer`), which records the definition's rule, checking what it returns.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

from .. import extend

__all__ = ["Tracer", "DiffNamespace", "backward", "RULES", "NONDIFFERENTIABLE", "defvjp"]

# name of a standard function -> rule(xp, g, ans, *args, **kwargs) -> grads per positional arg
RULES: dict[str, Callable[..., Any]] = {}
# functions whose outputs carry no gradient (comparisons, argmax, shapes, creation, ...)
NONDIFFERENTIABLE: set[str] = set()

_counter = itertools.count()
_FLOATING = ("real floating", "complex floating")


def defvjp(name: str, *, needs: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the vector-Jacobian rule of the standard function `name`.

    With `needs=True` the rule also receives `needs=`, a tuple telling for each positional
    argument whether its cotangent is wanted, to skip expensive ones (conv2d's input grad
    for the images, say)."""
    if not isinstance(name, str):
        raise TypeError(f"defvjp: name must be the str name of a function, got {type(name).__name__}")
    if not isinstance(needs, bool):
        raise TypeError(f"defvjp: needs must be a bool, got {type(needs).__name__}")

    def register(rule: Callable[..., Any]) -> Callable[..., Any]:
        if name in RULES:
            raise ValueError(f"autodiff: two gradient rules for {name}")
        rule.wants_needs = needs  # type: ignore[attr-defined]  # an attribute on a function object
        RULES[name] = rule
        return rule

    return register


class Record:
    """How a traced value was made: its parents and the rule to send cotangents to them."""

    __slots__ = ("order", "parents", "backward")

    def __init__(self, parents: list[tuple[Tracer, tuple[int, ...]]], backward: Callable[[Any], Any]):
        self.order = next(_counter)
        self.parents = parents  # (tracer, path into the rule's result)
        self.backward = backward


class Tracer:
    """An array that records how it was computed, for `grad`."""

    __slots__ = ("value", "record", "namespace", "live")
    __array_ufunc__ = None
    __hash__ = None  # type: ignore[assignment]  # unhashable, as the arrays it stands for; object's is a method

    def __init__(self, value: Any, record: Record | None, namespace: DiffNamespace, live: bool = True):
        self.value = value
        self.record = record
        self.namespace = namespace
        # live: depends on a differentiated input. A constant tracer (live=False) only keeps
        # the differentiating namespace sticky for values computed from non-differentiated
        # arguments, and never receives a cotangent.
        self.live = live

    def __array_namespace__(self, /, *, api_version: str | None = None) -> DiffNamespace:
        return self.namespace

    @property
    def dtype(self) -> Any:
        return self.value.dtype

    @property
    def device(self) -> Any:
        return self.value.device

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def ndim(self) -> int:
        return self.value.ndim

    @property
    def size(self) -> int | None:
        return self.value.size

    @property
    def T(self) -> Tracer:
        return self.namespace.permute_dims(self, (1, 0))

    @property
    def mT(self) -> Tracer:
        return self.namespace.matrix_transpose(self)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        return self.namespace._call("to_device", lambda v, d: v.to_device(d), (self, device), {})

    def __getitem__(self, key: Any) -> Tracer:
        return self.namespace._call("__getitem__", operator.getitem, (self, _unbox(key)), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("autodiff: in-place assignment to a traced array is not differentiable; build a new array")

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __complex__(self) -> complex:
        return complex(self.value)

    def __index__(self) -> int:
        return operator.index(self.value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self.value, dtype=dtype)

    def __repr__(self) -> str:
        return f"Tracer({self.value!r})"

    def __abs__(self) -> Tracer:
        return self.namespace.abs(self)

    def __neg__(self) -> Tracer:
        return self.namespace.negative(self)

    def __pos__(self) -> Tracer:
        return self.namespace.positive(self)


def _operator(name: str, reflected: bool) -> Callable[[Tracer, Any], Any]:
    def method(self: Tracer, other: Any) -> Any:
        fn = getattr(self.namespace, name)
        return fn(other, self) if reflected else fn(self, other)

    return method


# The array object's operator table: each operator maps to the standard function it calls.
for _op, _fname, _reflected, _ in extend.operator_table():
    setattr(Tracer, f"__{_op}__", _operator(_fname, False))
    if _reflected:
        setattr(Tracer, f"__r{_op}__", _operator(_fname, True))
del _op, _fname, _reflected


def _root_namespace(tracer: Tracer) -> Any:
    """The namespace of the arrays `tracer` traces, under any nesting of DiffNamespaces."""
    root = tracer.namespace
    while isinstance(root, DiffNamespace):
        root = root.base
    return root


def _apply_extension(
    tracer: Tracer, definition: extend.Definition, operands: tuple[Any, ...], params: dict[str, Any]
) -> Any:
    """Run an extension function (x10array.extend.primitive) on arguments holding tracers,
    recording its VJP rule."""
    return tracer.namespace._call(definition.name, definition.function, operands, params, definition)


extend.register_tracer(Tracer, _root_namespace, apply=_apply_extension)


def _unbox(obj: Any) -> Any:
    if type(obj) is Tracer:
        return obj.value
    if type(obj) in (list, tuple):
        return type(obj)(_unbox(o) for o in obj)
    return obj


class DiffNamespace:
    """A namespace whose functions record gradients, wrapping a conforming namespace `base`."""

    _instances: dict[int, DiffNamespace] = {}

    def __init__(self, base: Any, prefix: str = "", root: Any = None):
        self._base = base
        self._prefix = prefix
        self._root = base if root is None else root  # the namespace the rules compute with

    @classmethod
    def of(cls, base: Any) -> DiffNamespace:
        ns = cls._instances.get(id(base))
        if ns is None or ns._base is not base:
            ns = cls._instances[id(base)] = cls(base)
        return ns

    @property
    def base(self) -> Any:
        return self._base

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__array_namespace_info__":
            raise AttributeError(name)
        target = getattr(self._base, name)
        if name in ("linalg", "fft") and not self._prefix:  # (fft.fft is a function)
            sub = DiffNamespace(target, prefix=f"{name}.", root=self._root)
            self.__dict__[name] = sub
            return sub
        if not callable(target) or isinstance(target, type) or name.startswith("_"):
            return target  # dtypes, constants, classes, info
        full = self._prefix + name

        def function(*args: Any, **kwargs: Any) -> Any:
            return self._call(full, target, args, kwargs)

        function.__name__ = name
        self.__dict__[name] = function
        return function

    def _call(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        definition: extend.Definition | None = None,
    ) -> Any:
        """`fn(*args, **kwargs)` on the unboxed values, recording the rule of `name` (the VJP
        rule of `definition` for an extension primitive) when a live tracer is among `args`."""
        # (the tracers among `args`, one level into lists and tuples, and the unboxed
        # arguments in one pass: this runs once per operation of a differentiated function)
        tracers: list[tuple[Tracer, tuple[int, ...]]] = []
        raw: list[Any] = []
        for i, a in enumerate(args):
            t = type(a)
            if t is Tracer:
                tracers.append((a, (i,)))
                raw.append(a.value)
            elif t is list or t is tuple:
                tracers.extend((b, (i, j)) for j, b in enumerate(a) if type(b) is Tracer)
                raw.append(_unbox(a))
            else:
                raw.append(a)
        raw_args = tuple(raw)
        raw_kwargs = {k: _unbox(v) for k, v in kwargs.items()} if kwargs else {}
        out = fn(*raw_args, **raw_kwargs)
        if not tracers:
            return out
        tracers = [(t, path) for t, path in tracers if t.live]
        if definition is not None and tracers:
            return _record_extension(definition, self._root, out, tracers, raw_args, raw_kwargs)
        if not tracers or name in NONDIFFERENTIABLE:
            return _constant(out, self._root)
        rule = RULES.get(name)
        if rule is None:
            raise TypeError(
                f"autodiff: {name} has no gradient rule, so it cannot be differentiated;"
                " compute it outside the differentiated function or on non-traced values"
            )
        for key, value in kwargs.items():
            if any(type(v) is Tracer and v.live for v in (value if type(value) in (list, tuple) else (value,))):
                raise TypeError(
                    f"autodiff: {name} is not differentiable with respect to its keyword argument {key};"
                    " pass a non-traced value"
                )
        xp = self._root
        tracers = [(t, path) for t, path in tracers if _floating(xp, t.value.dtype)]
        if type(out) in (tuple, list) or (isinstance(out, tuple) and hasattr(out, "_fields")):
            return _record_results(out, tracers, rule, xp, raw_args, raw_kwargs)
        if not tracers or not _floating(xp, out.dtype):
            return _constant(out, xp)  # integer results carry no gradient

        if getattr(rule, "wants_needs", False):
            live = {path[0] for _, path in tracers}
            raw_kwargs["needs"] = tuple(i in live for i in range(len(raw_args)))

        def backward(g: Any) -> Any:
            return rule(xp, g, out, *raw_args, **raw_kwargs)

        return Tracer(out, Record(tracers, backward), DiffNamespace.of(xp))


# (whether a dtype is floating, by the ids of namespace and dtype: asked twice per recorded
# operation, and a dtype's own hash may be Python code; each entry holds both objects, so
# that their ids are not reused while it is kept)
_FLOATING_DTYPES: dict[tuple[int, int], tuple[Any, Any, bool]] = {}


def _floating(xp: Any, dtype: Any) -> bool:
    entry = _FLOATING_DTYPES.get((id(xp), id(dtype)))
    if entry is not None:
        return entry[2]
    found = bool(xp.isdtype(dtype, _FLOATING))
    if len(_FLOATING_DTYPES) >= 256:
        _FLOATING_DTYPES.clear()
    _FLOATING_DTYPES[(id(xp), id(dtype))] = (xp, dtype, found)
    return found


def _record_results(
    out: Any,
    tracers: list[tuple[Tracer, tuple[int, ...]]],
    rule: Callable[..., Any],
    xp: Any,
    raw_args: tuple[Any, ...],
    raw_kwargs: dict[str, Any],
) -> Any:
    """The traced results of a function with several (unstack, broadcast_arrays, linalg.eigh,
    ...): each result's record calls the rule with the cotangents of all of them, zeros for
    the others (None for integer ones), as a sequence of the same type."""
    outs = list(out)
    floating = [hasattr(o, "dtype") and xp.isdtype(o.dtype, _FLOATING) for o in outs]
    if not tracers or not any(floating):
        return _constant(out, xp)
    ns = DiffNamespace.of(xp)

    def result(i: int) -> Any:
        if not floating[i]:
            return _constant(outs[i], xp)

        def backward(g: Any) -> Any:
            gs = [g if j == i else xp.zeros_like(o) if floating[j] else None for j, o in enumerate(outs)]
            return rule(xp, type(out)(*gs) if hasattr(out, "_fields") else type(out)(gs), out, *raw_args, **raw_kwargs)

        return Tracer(outs[i], Record(tracers, backward), ns)

    results = [result(i) for i in range(len(outs))]
    return type(out)(*results) if hasattr(out, "_fields") else type(out)(results)


def _is_integral(xp: Any, value: Any) -> bool:
    return not xp.isdtype(value.dtype, ("real floating", "complex floating"))


def _constant(out: Any, xp: Any) -> Any:
    ns = DiffNamespace.of(xp)
    if isinstance(out, tuple):
        return tuple(_constant(o, xp) for o in out)
    if hasattr(out, "__array_namespace__"):
        return Tracer(out, None, ns, live=False)
    return out


def backward(output: Tracer, seed: Any) -> dict[int, Any]:
    """Cotangents of every traced value that `output` depends on, by id of the Tracer."""
    grads: dict[int, Any] = {id(output): seed}
    # collect the graph
    order: list[Tracer] = []
    seen: set[int] = set()
    stack = [output]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        order.append(t)
        if t.record is not None:
            for parent, _ in t.record.parents:
                stack.append(parent)
    order.sort(key=lambda t: -1 if t.record is None else t.record.order, reverse=True)
    for t in order:
        rec = t.record
        g = grads.get(id(t))
        if rec is None or g is None:
            continue
        parent_grads = rec.backward(g)
        for parent, path in rec.parents:
            pg = parent_grads[path[0]]
            if len(path) > 1 and pg is not None:
                pg = pg[path[1]]
            if pg is None:
                continue
            prev = grads.get(id(parent))
            grads[id(parent)] = pg if prev is None else prev + pg
    return grads


# -- extension primitives (x10array.extend.primitive) --------------------------------------------


def _record_extension(
    definition: extend.Definition,
    xp: Any,
    out: Any,
    tracers: list[tuple[Tracer, tuple[int, ...]]],
    raw_args: tuple[Any, ...],
    raw_kwargs: dict[str, Any],
) -> Any:
    """The traced result of an extension primitive: its VJP rule maps the result's cotangent
    to the operands', checked (one per operand, each of its operand's shape and dtype)."""
    rule = definition.vjp
    if rule is None:
        raise TypeError(
            f"autodiff: {definition.name} has no VJP rule, so it cannot be differentiated; define it with"
            " x10array.extend.primitive(..., vjp=rule), or compute it on non-traced values"
        )
    tracers = [(t, path) for t, path in tracers if xp.isdtype(t.value.dtype, _FLOATING)]
    outs = out if definition.multiple_results else (out,)
    floating = [xp.isdtype(o.dtype, _FLOATING) for o in outs]
    if not tracers or not any(floating):
        return _constant(out, xp)  # integer results carry no gradient
    if definition.vjp_needs:
        live = {path[0] for _, path in tracers}
        raw_kwargs["needs"] = tuple(i in live for i in range(len(raw_args)))

    def cotangents(g: Any) -> Any:
        return _checked_cotangents(definition, rule(xp, g, out, *raw_args, **raw_kwargs), raw_args)

    ns = DiffNamespace.of(xp)
    if not definition.multiple_results:
        return Tracer(out, Record(tracers, cotangents), ns)

    def result(i: int) -> Any:
        if not floating[i]:
            return _constant(outs[i], xp)

        def backward(g: Any) -> Any:  # the rule gets every result's cotangent; only result i has one
            gs = tuple(g if j == i else xp.zeros_like(o) if floating[j] else None for j, o in enumerate(outs))
            return cotangents(gs)

        return Tracer(outs[i], Record(tracers, backward), ns)

    return tuple(result(i) for i in range(len(outs)))


def _checked_cotangents(definition: extend.Definition, grads: Any, operands: tuple[Any, ...]) -> Any:
    name = definition.name
    if type(grads) not in (tuple, list):
        raise TypeError(
            f"{name}: its VJP rule must return a tuple with one cotangent (or None) per operand,"
            f" got {type(grads).__name__}"
        )
    if len(grads) != len(operands):
        raise ValueError(
            f"{name}: its VJP rule returned {len(grads)} cotangents for {len(operands)}"
            f" operand{'s' if len(operands) != 1 else ''}"
        )
    for i, (g, x) in enumerate(zip(grads, operands)):
        if g is None:
            continue
        if not hasattr(g, "__array_namespace__"):
            raise TypeError(
                f"{name}: its VJP rule's cotangent for {definition.operand_name(i)} must be an array or None,"
                f" got {type(g).__name__}"
            )
        if g.shape != x.shape or g.dtype != x.dtype:
            raise ValueError(
                f"{name}: its VJP rule's cotangent for {definition.operand_name(i)} has shape {g.shape} and dtype"
                f" {g.dtype}; the operand has shape {x.shape} and dtype {x.dtype}"
            )
    return grads
