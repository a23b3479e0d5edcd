"""The op table and the one choke point every primitive passes through.

A `Primitive` is one record: its name, its kernel (written against a kernel namespace `k`,
so the same code runs with NumPy on the eager CPU and with `jax.numpy` under `jax.jit` for
XLA), an optional `lowering` where XLA wants something other than the kernel, and an
optional shape/dtype rule. Where the rule is omitted it is derived from the kernel by
abstract evaluation (`jax.eval_shape`), cached by input shapes and dtypes.

`bind(prim, device, *operands, **params)` is the choke point: the public layer has already
validated, promoted and checked devices; `bind` alone looks at the device's backend and hands
the call to that backend (`backend.BackendImpl.run`; eager: run now; XLA: record lazily).

Operands are `Array`s or Python scalars (a scalar operand already has the dtype the standard
gives it: the public layer has checked it). Parameters are hashable Python values (ints,
tuples, strings, DTypes), so a (primitive, parameters) pair can key a cache.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from .array import Array
from .backend import _IMPLS
from .devices import Device

__all__ = ["Primitive", "bind", "params_key", "OP_TABLE"]

OP_TABLE: dict[str, Primitive] = {}


class Primitive:
    """One primitive: kernel, lowering and shape/dtype rule side by side.

    kernel(k, *buffers, **params) -> buffer | tuple[buffer, ...]
        `k` is the kernel namespace (see `_core.kernels`): NumPy-like, with `k.is_jax` telling
        which. Buffers are NumPy arrays or jax arrays; scalars arrive as Python scalars.
    lowering(k, *buffers, **params)
        The XLA form when it differs from the kernel; defaults to the kernel.
    rule(*avals, **params) -> aval | tuple[aval, ...]
        Shape and dtype of the result from those of the operands (avals have `.shape` and
        `.dtype`); None means "derive from the lowering by abstract evaluation".
    dynamic_shape
        The output shape depends on the values (unique, nonzero, boolean masks): a lazy
        backend must materialize the inputs before running it.
    multiple_results
        The kernel returns a tuple of buffers.
    in_place
        The NumPy kernel writes into its first operand (`__setitem__`); the eager executor
        hands it a buffer that nobody else can see (copy on write).
    moves_data
        The primitive only moves or selects values (indexing, reshapes, copies, fills): XLA
        keeps subnormal floats through it, so the lazy interpreter does too.
    elementwise
        The result has the broadcast shape of the operands, and a dtype that depends on their
        dtypes only: the shape/dtype rule is then derived once per dtype combination rather
        than once per shape.
    passes_bits
        The lowering may return an operand's bits unchanged through a select or a bit
        operation (abs, negation, copysign, `where`): XLA's flush-to-zero does not apply
        there, so a compiled lazy graph flushes its result (see `_backends/lazy/lowering.XlaSteps`).
    selects
        The result's values are operand values chosen by a condition or an order (`where`,
        `sort`): they keep their bits, subnormals included, on every tier (the interpreter
        neither flushes the operands nor the result); an order is that of the values as the
        arithmetic reads them (`k.rounded`: subnormals as zeros where XLA flushes).

    What a backend chooses to do about an op (silence NumPy's warnings, leave it out of a cost
    model, rewrite it while recording) is not a fact about the op: it is registered beside the
    primitive in that backend's registry (see `policies`).
    """

    __slots__ = (
        "name", "kernel", "lowering", "rule", "dynamic_shape", "multiple_results", "in_place", "elementwise",
        "moves_data", "passes_bits", "selects",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        kernel: Callable[..., Any],
        *,
        lowering: Callable[..., Any] | None = None,
        rule: Callable[..., Any] | None = None,
        dynamic_shape: bool = False,
        multiple_results: bool = False,
        in_place: bool = False,
        elementwise: bool = False,
        moves_data: bool = False,
        passes_bits: bool = False,
        selects: bool = False,
    ) -> None:
        if name in OP_TABLE:
            raise ValueError(f"primitive {name!r} is defined twice")
        self.name = name
        self.kernel = kernel
        self.lowering = lowering if lowering is not None else kernel
        self.rule = rule
        self.dynamic_shape = dynamic_shape
        self.multiple_results = multiple_results
        self.in_place = in_place
        self.elementwise = elementwise
        self.moves_data = moves_data
        self.passes_bits = passes_bits
        self.selects = selects
        OP_TABLE[name] = self

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


class ShapeDtype(NamedTuple):
    """What a shape/dtype `rule` returns: a result's shape and NumPy dtype."""

    shape: tuple[int, ...]
    dtype: Any


Aval = ShapeDtype  # (the library's own name: an abstract value; public as x10array.extend.ShapeDtype)


def same_as_first(x: Any, *operands: Any, **params: Any) -> Any:
    """The rule of a primitive whose result has its first operand's shape and dtype."""
    return x


def primitive(name: str, **options: Any) -> Callable[[Callable[..., Any]], Primitive]:
    """Decorator form: `@primitive("add")` over the kernel function."""

    def make(kernel: Callable[..., Any]) -> Primitive:
        return Primitive(name, kernel, **options)

    return make


_TAGGED_BOOLS = {True: (bool, "True"), False: (bool, "False")}

# Nested tuples already found exact, by identity: {id(t): t}. Holding `t` keeps its id from
# being reused, and a tuple of ints, strings and None cannot change, so a hit is exact as the
# walk would find it. It serves a description made once and passed at every call (the basic
# index cache of `_api.indexing` hands the same `index` tuple to every `x[1:-1, 1:-1]`), which
# the walk would re-tag each time: a fifth of recording a slice on the lazy device. Bounded:
# emptied when full.
_EXACT: dict[int, tuple[Any, ...]] = {}
_EXACT_LIMIT = 1024


def _tag(value: Any) -> Any:
    """A cache-key form of a parameter value in which equal keys mean identical values:
    -0.0 and 0.0, True and 1, and NaN and NaN compare equal as Python values, not here.
    A value that is already exact (ints, strings, None, tuples of them, nested: shapes, axes,
    index descriptions with their open slice ends) is returned as it is, not rebuilt."""
    kind = type(value)
    if kind is tuple:
        nested = False
        for v in value:
            k = type(v)
            if k is tuple:
                if not nested:
                    if _EXACT.get(id(value)) is value:
                        return value  # (seen before: exact)
                    nested = True
                if _tag(v) is not v:
                    return tuple([_tag(v) for v in value])  # something inside needs a tag
            elif k is not int and k is not str and v is not None:
                return tuple([_tag(v) for v in value])  # something inside needs a tag
        if nested:  # (a flat tuple is walked as fast as it is looked up)
            if len(_EXACT) >= _EXACT_LIMIT:
                _EXACT.clear()
            _EXACT[id(value)] = value
        return value  # ints, strings and None only (shapes, axes, index descriptions): already exact
    if kind is bool:
        return _TAGGED_BOOLS[value]
    if kind is float or kind is complex:
        return (kind, repr(value))
    return value


def params_key(params: dict[str, Any]) -> tuple[Any, ...]:
    """The hashable key of a primitive's parameters, for caches of compiled programs."""
    if not params:
        return ()
    if len(params) == 1:
        for name, value in params.items():
            return ((name, _tag(value)),)
    return tuple(sorted([(name, _tag(value)) for name, value in params.items()]))


# Threads (docs/eager-and-lazy.md, "Threads"): every write (`__setitem__`, an in-place
# operator, with its replay on views and bases) holds this lock from reading the array to
# rebinding it, and so does making a view (indexing and registering it), so a write is atomic:
# threads writing one array (disjoint parts of it, or `+=`) lose nothing, and a view made
# while another thread writes its base is reached by that write or made after it. Reentrant
# (a write's replay writes the base); taken before the lazy backend's lock, never after it.
WRITE_LOCK = threading.RLock()


def atomic_write(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, run holding WRITE_LOCK."""

    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with WRITE_LOCK:
            return fn(*args, **kwargs)

    return locked


def assign(target: Any, source: Any) -> None:
    """Make the array `target` hold the value of `source`; its device's backend may need to
    know who holds the new value."""
    same = target._data is source._data  # a write in place (into a buffer nobody else saw)
    target._data = source._data
    # Another thread may have handed the buffer out (`__array__`, a NumPy view) while it was
    # written in place: it stays marked, so the next write copies.
    target._shared = source._shared or (same and target._shared)
    # written with (a value computed from) a committed array, an uncommitted array is derived
    # from it: committed from then on (docs/devices.md)
    target._committed = target._committed or source._committed
    _IMPLS[target._device.backend].adopt(target)


def rebind(target: Any, source: Any) -> None:
    """Mutation (setitem, in-place operators): `target` holds the value of `source` now, and
    so do its views and the array it is a view of (see `_api.indexing.Alias`)."""
    assign(target, source)
    if target._alias is not None:
        target._alias.written(target)


def bind(prim: Primitive, device: Device, *operands: Any, **params: Any) -> Any:
    """Run or record `prim` on `device`. The only place that decides eager or lazy.

    A result is committed to its device (docs/devices.md) when an operand is, or when no
    operand is an array (a creation function marks its result itself); computed from
    uncommitted arrays only, it is uncommitted too."""
    out = _IMPLS[device.backend].run(prim, device, operands, params)
    uncommitted = False
    for o in operands:
        if o.__class__ is Array:
            if o._committed:
                return out
            uncommitted = True
    if uncommitted:
        if out.__class__ is Array:
            out._committed = False
        else:
            for a in out:
                a._committed = False
    return out
