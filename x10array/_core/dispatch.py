"""x10array's public functions accept the autodiff tracers of x10array arrays.

Inside `grad`, the arrays a differentiated function sees are `Tracer`s; the portable way to
compute with them is their own namespace (`xp = x.__array_namespace__()`), which records the
gradient. So that the JAX habit `import x10array as xp; xp.mean(loss_terms)` differentiates
too, each public function is wrapped once, at import, by `accept_tracers`: the call runs
unchanged (one frame more, nothing checked on the way in); only when it raises `TypeError`
(a tracer is not an x10array `Array`, so validation refuses it) does the wrapper look for a
tracer among the arguments and, when it finds one of x10array arrays, forward the whole call
to the same function of the tracer's namespace. A tracer of another library's arrays (say
array-api-strict's) gets a `TypeError` that says which namespace to call instead.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# Public callables that are not array functions: nothing to differentiate, left unwrapped.
NOT_ARRAY_FUNCTIONS = frozenset(
    {"lazy_barrier", "metrics", "metrics_report", "reset_metrics", "set_cpu_kernels", "device_scope", "transfer_guard"}
)


# The tracer registry, the one record of the autodiff systems x10array knows (x10array.autodiff
# registers its own through `x10array.extend.register_tracer`): tracer type -> the function
# giving a tracer's root namespace (the array library whose arrays it traces) ...
_TRACERS: dict[type, Callable[[Any], Any]] = {}
# ... and, for the systems that gave one, how they run an extension function on arguments
# holding their tracers: apply(tracer, definition, operands, params) (see x10array.extend)
_APPLY: dict[type, Callable[..., Any]] = {}


def register_tracer(
    tracer_type: type, root_namespace: Callable[[Any], Any], apply: Callable[..., Any] | None = None
) -> None:
    """Make public functions forward calls holding a `tracer_type` to the tracer's own
    namespace (`tracer.namespace`) when `root_namespace(tracer)` is x10array; and extension
    functions call `apply`, when given."""
    _TRACERS[tracer_type] = root_namespace
    if apply is not None:
        _APPLY[tracer_type] = apply


def find_tracer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The first registered tracer among a call's arguments (or in a list or tuple of them),
    or None."""
    return _find_tracer(args, kwargs)


def apply_of(tracer: Any) -> Callable[..., Any] | None:
    """How the autodiff system of `tracer` runs an extension function (None: it gave no way)."""
    return _APPLY.get(type(tracer))


def _find_tracer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not _TRACERS:  # no autodiff system imported: there are no tracers
        return None
    tracers = _TRACERS
    for a in (*args, *kwargs.values()):
        if type(a) in tracers:
            return a
        if type(a) in (list, tuple):
            for b in a:
                if type(b) in tracers:
                    return b
    return None


def is_tracer(obj: Any) -> bool:
    return type(obj) in _TRACERS


def _forward(name: str, tracer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    root = _TRACERS[type(tracer)](tracer)
    if root is not sys.modules[__name__.partition(".")[0]]:  # not x10array's namespace
        library = getattr(root, "__name__", type(root).__name__)
        raise TypeError(
            f"{name}: got an autodiff tracer of {library} arrays, which x10array's functions cannot take;"
            f" call the arrays' own namespace instead: xp = x.__array_namespace__(); xp.{name}(...)"
        )
    target: Any = tracer.namespace
    for part in name.split("."):
        target = getattr(target, part)
    return target(*args, **kwargs)


_TEMPLATE = """
def {name}({params}):
    try:
        return _fn({call})
    except TypeError:
        tracer = _find_tracer({args}, {kwargs})
        if tracer is None:
            raise
    return _forward(_name, tracer, {args}, {kwargs})
"""


def accept_tracers(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`fn` (the public function `name`, e.g. "mean" or "linalg.norm") forwarding calls that
    hold an autodiff tracer of x10array arrays to the tracer's namespace.

    The wrapper has `fn`'s own parameters (no `*args, **kwargs` packing on the way in: an
    eager call pays one plain Python call more, tens of nanoseconds)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    namespace: dict[str, Any] = {"_fn": fn, "_name": name, "_find_tracer": _find_tracer, "_forward": _forward}
    if sig is None:
        params, call, args, kwargs = "*args, **kwargs", "*args, **kwargs", "args", "kwargs"
    else:
        params_list, call_list, pos, kw = [], [], [], []
        slash = star = False
        for i, p in enumerate(sig.parameters.values()):
            if p.kind is p.POSITIONAL_ONLY:
                slash = True
            elif slash:
                params_list.append("/")
                slash = False
            if p.kind is p.KEYWORD_ONLY and not star:
                params_list.append("*")
                star = True
            text = p.name
            if p.kind is p.VAR_POSITIONAL:
                text, star = "*" + p.name, True
            elif p.kind is p.VAR_KEYWORD:
                text = "**" + p.name
            if p.default is not p.empty:
                namespace[f"_d{i}"] = p.default
                text += f"=_d{i}"
            params_list.append(text)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                call_list.append(p.name)
                pos.append(p.name)
            elif p.kind is p.VAR_POSITIONAL:
                call_list.append("*" + p.name)
                pos.append("*" + p.name)
            elif p.kind is p.KEYWORD_ONLY:
                call_list.append(f"{p.name}={p.name}")
                kw.append(f"{p.name!r}: {p.name}")
            else:
                call_list.append("**" + p.name)
                kw.append("**" + p.name)
        if slash:
            params_list.append("/")
        params, call = ", ".join(params_list), ", ".join(call_list)
        args = "(" + "".join(f"{a}, " for a in pos) + ")"
        kwargs = "{" + ", ".join(kw) + "}"
    short = name.rpartition(".")[2]
    exec(_TEMPLATE.format(name=short, params=params, call=call, args=args, kwargs=kwargs), namespace)
    public = functools.update_wrapper(namespace[short], fn)
    del public.__wrapped__  # the signature is the wrapper's own (the same as fn's)
    public.accepts_tracers = True  # type: ignore[attr-defined]  # an attribute on a function: a marker
    return public


def wrap_namespace(module: ModuleType, names: list[str], prefix: str, done: dict[int, Any]) -> None:
    """Replace each public function `names` of `module` by its tracer-accepting form (one
    wrapper per function object: `x10array.matmul is x10array.linalg.matmul` stays true)."""
    for name in names:
        fn = getattr(module, name)
        if isinstance(fn, type) or not callable(fn) or name in NOT_ARRAY_FUNCTIONS or name.startswith("_"):
            continue
        wrapped = done.get(id(fn))
        if wrapped is None:
            wrapped = done[id(fn)] = accept_tracers(fn, prefix + name)
        setattr(module, name, wrapped)
