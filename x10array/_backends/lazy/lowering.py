"""Stage 7b, lowering, the compiled tier: how a graph becomes one jax function
(`graph_function`), which the program (program.py) jits and compiles once it pays (tiering.py).

It owns the function's steps (`XlaSteps`: each primitive's lowering on jax's kernels,
replayed by the one step walker, trace.replay, as the interpreter replays NumPy's), the slice
writes it lowers as a select of the whole array (`select_writes`), and how it takes its
Python scalars (`PackedScalars`: a barrier's floats and ints packed into one array each;
`unpacked`, the one unpacking of a barrier's and of x10array.compile's programs). Nothing here
reads a lazy value, runs or caches a program: the function is made from the graph's key and
its calls' parameters alone, so a key compiles to one program whoever builds it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np

from ..._core.kernels import (
    ROUNDED_VALUES,
    ROUNDING_GUARD,
    SELECT_WRITE,
    jax_namespace,
)
from ..._core.policies import SLICE_BOXES
from ..._core.primitive import Primitive
from .trace import GraphKey, Ref, Slot, replay


def graph_function(key: GraphKey, params_of: list[dict[str, Any]], unpack: Any) -> Any:
    """The graph of `key` as a function of (one, donated leaves, kept leaves, scalars) for jax
    to trace: the leaves back in the graph's order, the scalars unpacked (`unpack`, the
    program's: None when they come as they are), its steps (each call's parameters
    `params_of`) replayed (trace.replay with XlaSteps) with `one` as the runtime 1.0 of the
    complex formulas' steps (_core.kernels._rounded)."""
    k = jax_namespace()
    ops, outputs, donate = key.ops, key.outputs, key.donate
    steps = XlaSteps(k, ops, outputs)

    def replay_graph(one: Any, donated: list[Any], kept: list[Any], scalars: Any) -> tuple[Any, ...]:
        donated_it, kept_it = iter(donated), iter(kept)
        leaf_values = [next(donated_it) if d else next(kept_it) for d in donate]
        if unpack is not None:
            scalars = unpack(scalars)
        token = ROUNDING_GUARD.set(one)  # see _core.kernels._rounded
        done = ROUNDED_VALUES.set({})
        try:
            return replay(ops, params_of, leaf_values, scalars, outputs, steps.step)
        finally:
            ROUNDED_VALUES.reset(done)
            ROUNDING_GUARD.reset(token)

    replay_graph.__name__ = replay_graph.__qualname__ = "replay"  # (jax names the program after it)
    return replay_graph


# -- the steps ----------------------------------------------------------------------------------


class XlaSteps:
    """The compiled tier's steps for trace.replay: each primitive's lowering on jax's kernel
    namespace `k`, as jax.jit traces them into one program, with XLA's own numerics (its
    rounding, its fusions, its flush of subnormals: the contract of docs/numerics.md). A
    slice write that select_writes finds, over at least half of the array it writes or into an
    array the program computes (_selects_now), is lowered with SELECT_WRITE set: as a select of
    the whole array (_api/indexing's `_select_write`), a speed choice or, for a computed array,
    what keeps XLA from writing in place into a buffer the value still reads."""

    __slots__ = ("k", "select_writes")

    def __init__(self, k: Any, ops: tuple[Any, ...], outputs: tuple[Slot, ...]):
        self.k = k
        self.select_writes = select_writes(ops, outputs)

    def step(self, index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any], params: dict[str, Any]) -> Any:
        k = self.k
        if index in self.select_writes and _selects_now(prim, params, refs[0], args[0]):
            token = SELECT_WRITE.set(True)
            try:
                out = prim.lowering(k, *args, **params)
            finally:
                SELECT_WRITE.reset(token)
        else:
            out = prim.lowering(k, *args, **params)
        return list(out) if prim.multiple_results else [out]


# The most steps select_writes walks back from one write's value (then it keeps the scatter):
# a bound on the trace's work for a graph of many writes on long chains.
_CONE_LIMIT = 4096


_SLICE_BOXES = SLICE_BOXES.rules  # (the live dict)
# The least share of the array a select write covers: a select passes over the whole array,
# where XLA's scatter of a value that does not read the array updates it in place, so a write
# of a few rows into a large array stays a scatter.
SELECT_WRITE_SHARE = 0.5


def select_writes(ops: tuple[Any, ...], outputs: tuple[Slot, ...]) -> frozenset[int]:
    """The slice writes of a graph (policies.SLICE_BOXES, `in_place`: `u[1:-1, 1:-1] = v`) whose
    value XLA computes in the write's own loop from the array written at other positions than
    those written (_reads_elsewhere), with no program output between (`outputs`: a value the
    program returns is stored first, and the write reads it from memory). XLA's scatter cannot
    write such a value in place (it reads what the write overwrites): on the CPU it copies the
    array and scatters into the copy, slower than one select of the whole array. A heat stencil
    step with its laplacian fused (`lap` dead at the barrier: the step in a function, or
    `del lap`) runs in little more than half the time as a select; with `lap` kept, an output,
    the select is slower, so it stays a scatter there; on a TPU the lowerings run alike. A
    write whose value is computed without reading the array (`x[:3] = 0`), or reads it only at
    the positions written and only through elementwise steps (`x[1:-1] *= 0.999`), stays a
    scatter, which XLA updates in place. XlaSteps decides which of the writes found are selects
    (_selects_now)."""
    stored = {c for c, _ in outputs}
    found = set()
    for index, (prim, key_params, refs) in enumerate(ops):
        if prim not in _SLICE_BOXES or not prim.in_place or len(refs) < 2:
            continue
        target, value = refs[0], refs[1]
        if value == target:
            found.add(index)
            continue
        if value[0] != "c" or value[1] in stored:
            continue
        if _reads_elsewhere(ops, target, key_params, value[1], stored):
            found.add(index)
    return frozenset(found)


def _reads_elsewhere(ops: tuple[Any, ...], target: Ref, key_params: Any, value: int, stored: set[int]) -> bool:
    """Whether step `value` of `ops` (not stored) reads `target` other than at the positions
    a write with `key_params` writes: some step of its cone (up to the stored steps) reads
    `target` other than as that box (a slice read with the write's key parameters), or
    something other than an elementwise step reads such a box (a reversal of it, a sum over
    it, a gather from it: element i of the value then depends on other elements than i). A
    cone of more than _CONE_LIMIT steps counts as read elsewhere."""
    cone = {value}
    stack = [value]
    while stack:
        for r in ops[stack.pop()][2]:
            if r[0] == "c" and r[1] not in cone and r[1] not in stored:
                if len(cone) >= _CONE_LIMIT:
                    return True
                cone.add(r[1])
                stack.append(r[1])
    depends: set[int] = set()  # the steps of the cone computed from the box read at its positions
    for j in sorted(cone):  # (a step reads only earlier steps)
        step_prim, step_params, step_refs = ops[j]
        box_read = step_prim in _SLICE_BOXES and not step_prim.in_place and step_params == key_params
        for r in step_refs:
            if r == target:
                if not box_read:
                    return True
                depends.add(j)
            elif r[0] == "c" and r[1] in depends:
                if not step_prim.elementwise:
                    return True
                depends.add(j)
    return False


def _selects_now(prim: Primitive, params: dict[str, Any], target_ref: Ref, target: Any) -> bool:
    """Whether the write `prim` (one of select_writes) of `target`, a traced array, is lowered
    as a select: where it covers at least SELECT_WRITE_SHARE of it in a box of static slices,
    and wherever `target` is computed in the program rather than one of its inputs
    (`target_ref` not a leaf). There XLA may update the array in place while the value still
    reads it, and lose elements: jaxlib 0.10.2 on the CPU does so where the array's producer
    has another shape than the array (a gather, a reshape: `u = u[p] * 2.0; u[1:4] = u[0:3]`),
    in plain jax.jit as well. A select reads the array, writes a new one, and gives NumPy's
    values whatever XLA fuses. The write lowers as a scatter where its index is not a box of
    static slices (_api/indexing's `_jax_setitem`)."""
    if target_ref[0] != "l":
        return True
    covered = _SLICE_BOXES[prim](params, tuple(target.shape))
    return covered is not None and covered >= SELECT_WRITE_SHARE * math.prod(target.shape)


# -- the scalars -------------------------------------------------------------------------------


def unpacked(where: list[tuple[Any, ...]], kinds: list[tuple[Any, bool]], packed: Any, args: Any) -> list[Any]:
    """Inside a program's trace: the graph's scalars, in order, from arrays of scalars packed
    by kind (`packed`, one per (dtype, weak type) of `kinds`) and scalars passed as they are
    (`args`); per scalar, `where` says which: ("c", kind, index) a packed one, taken apart as
    the same weakly typed value it was (still a runtime input, never a constant of the
    program), ("a", index, None) one of `args`, ("k", value, None) the value itself. The one
    unpacking of x10array.compile's programs (capture.ScalarPlan) and the barrier's
    (PackedScalars)."""
    from jax._src.lax.lax import _convert_element_type

    out = []
    for tag, a, b in where:
        if tag == "a":
            out.append(args[a])
        elif tag == "c":
            dtype, weak = kinds[a]
            out.append(_convert_element_type(packed[a][b], dtype, weak_type=weak))
        else:
            out.append(a)
    return out


_FLOAT64 = np.dtype(np.float64)
_INT64 = np.dtype(np.int64)
# Packing pays from this many floats on (a jitted call's cost against the floats' count)
PACK_FROM = 4
# and from this many ints (measured alike)
PACK_INTS_FROM = 2


class PackedScalars:
    """How a barrier's compiled program takes its Python scalars: the floats (type `float`
    exactly, as the key's "s" refs say; PACK_FROM of them or more) in one float64 array made
    at each call, the ints (type `int` exactly; PACK_INTS_FROM or more: the Adam fit's mean
    divisor, the 2 of `x**2`'s derivative, the step count) in one int64 array, the others
    (bools, complex numbers, NumPy scalars, fewer floats or ints) as they are. jax converts each
    Python scalar argument on its own (an Adam step's 24 floats took most of its call's time,
    one packed array a fraction of it). Inside the program each is unpacked as the weakly typed float64 or
    int64 it was (`unpacked`, as x10array.compile's), so promotions and bits are those of the
    unpacked program. (An int beyond int64 would raise OverflowError at the call, packed or
    not, as jax's own conversion does; none reaches a program as an int: the public layer makes
    such a scalar the array's dtype first, `uint64_array + 2**63` and `float_array + 2**63`
    checked on both tiers.)"""

    __slots__ = ("where", "kinds", "groups", "others", "last", "placed", "bits", "values")

    def __init__(self, types: list[type]):
        self.kinds: list[tuple[Any, bool]] = []  # per packed array: (dtype, weak type)
        self.groups: list[list[int]] = []  # per packed array: the indices of its scalars
        for exact, kind, least in ((float, (_FLOAT64, True), PACK_FROM), (int, (_INT64, True), PACK_INTS_FROM)):
            members = [i for i, t in enumerate(types) if t is exact]
            if len(members) >= least:
                self.kinds.append(kind)
                self.groups.append(members)
        packed = {i: (g, k) for g, members in enumerate(self.groups) for k, i in enumerate(members)}
        self.where: list[tuple[Any, ...]] = []
        self.others: list[int] = []  # the indices of the scalars passed as they are
        self.last: tuple[bytes, ...] | None = None  # the last run's packed arrays, their bytes (placed_pack)
        self.placed: list[Any] | None = None  # ... placed on the device
        self.values: list[Any] | None = None  # ... the scalars they were packed from (a copy)
        # per packed array, its bytes from the scalars at once (placed_pack): its members taken
        # (itemgetter) and packed by `struct` in the array's native layout, so a repeat is told
        # without making the NumPy arrays (~1 us against ~3-6 for the arrays and their bytes)
        self.bits = [
            (struct.Struct(f"={len(g)}{'d' if k[0] == _FLOAT64 else 'q'}").pack, items_at(g))
            for g, k in zip(self.groups, self.kinds)
        ]
        for i in range(len(types)):
            if i in packed:
                self.where.append(("c", *packed[i]))
            else:
                self.where.append(("a", len(self.others), None))
                self.others.append(i)

    @classmethod
    def of(cls, ops: tuple[Any, ...]) -> PackedScalars | None:
        """The packing of a graph's scalars (its "s" refs, numbered in order), or None when it
        reads fewer than PACK_FROM Python floats and fewer than PACK_INTS_FROM Python ints."""
        types: dict[int, type] = {r[1]: r[2] for _, _, refs in ops for r in refs if r[0] == "s"}
        listed = [types[i] for i in range(len(types))]
        if listed.count(float) < PACK_FROM and listed.count(int) < PACK_INTS_FROM:
            return None
        return cls(listed)

    def pack(self, scalars: list[Any]) -> tuple[list[Any], list[Any]]:
        """A call's argument for the scalars: ([each group, packed], [the others])."""
        return (
            [np.array([scalars[i] for i in g], dtype=k[0]) for g, k in zip(self.groups, self.kinds)],
            [scalars[i] for i in self.others],
        )

    def placed_pack(self, scalars: list[Any], place: Any) -> tuple[list[Any], list[Any]]:
        """`pack`'s argument for a barrier's run, its packed arrays placed on the device
        (`place(arrays)`, jax's C++ transfer: ~4 us an array): the last run's placed arrays
        again when their bytes are the same (a loop's learning rate, its coefficients), else
        the new ones placed. Placed at every run, never NumPy arrays: jax copies a NumPy argument
        at every call (an asynchronously run program waits for the copy, ~12 us an array), and
        keys its call cache by whether an argument is committed, so a NumPy argument where a
        placed array was passed before traces and compiles the program a second time.
        (A repeat is told first by the values: scalars equal to the last run's, none of them
        zero, have its bits, as equal floats differ in their bits only as 0.0 and -0.0; a NaN
        or a zero is told by the bits.)"""
        others = [scalars[i] for i in self.others] if self.others else []
        placed = self.placed
        if placed is not None and scalars == self.values and 0.0 not in scalars:  # (types: the program's)
            return placed, others
        try:  # (bits: 0.0 and -0.0 differ, a NaN equals itself)
            seen = tuple([pack(*members(scalars)) for pack, members in self.bits])
        except struct.error:  # an int beyond int64: NumPy's OverflowError, from `pack`
            return self.pack(scalars)
        if seen != self.last or self.placed is None:
            self.last, self.placed = seen, place(self.pack(scalars)[0])
        self.values = list(scalars)
        return self.placed, others

    def unpack(self, packed_args: Any) -> list[Any]:
        packed, args = packed_args
        return unpacked(self.where, self.kinds, packed, args)


def items_at(indices: list[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The items of a list at `indices`, as a tuple (operator.itemgetter, which gives one item
    alone for one index and takes no empty list)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if indices:
        (i,) = indices
        return lambda items: (items[i],)
    return lambda items: ()
