"""Stage 2, the graph: its nodes (Call, Node, Check) and their recording.

`Recorder.run` is what `bind` calls for an operation on a lazy device: it records a `Call`
and one pending `Node` per output (shapes and dtypes from the `shapes` stage), wraps each in
an `Array`, and registers the array in its device's *live list* (weak references), which the
barrier walks. A graph that grows past X10ARRAY_GRAPH_LIMIT operations is run at once, with a
warning (the size guard). Nothing here runs a graph: `Recorder` is given what does (`run_now`,
`graph_break`) by the backend that has it (executor.LazyBackend).
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import Any

import numpy as np

from ..._core import settings
from ..._core.array import Array
from ..._core.devices import Device
from ..._core.dtypes import FROM_NUMPY
from ..._core.kernels import _INT64_MAX, jax_operand
from ..._core.lru import tick
from ..._core.metrics import COUNTERS
from ..._core.policies import GRAPH_REWRITES
from ..._core.primitive import Primitive, params_key
from ..._core.user_code import user_line, user_location
from . import shapes
from .runtime import RUNTIME


class Call:
    """One recorded primitive application (may have several outputs)."""

    __slots__ = ("prim", "params", "key_params", "inputs", "device", "outputs", "where", "__weakref__")

    def __init__(
        self,
        prim: Primitive,
        params: dict[str, Any],
        key_params: tuple[Any, ...],
        inputs: tuple[Any, ...],
        device: Device,
    ):
        self.prim = prim
        self.params = params
        self.key_params = key_params
        self.inputs = inputs  # Nodes and Python scalars (or None)
        self.device = device
        self.outputs: tuple[weakref.ref[Node], ...] = ()  # of a multiple-results call only
        self.where: str | None = None  # the user's file:line that recorded it (X10ARRAY_RECORD_SOURCE)


class Node:
    """One lazy value: pending (`call` set) or materialized (`value` set)."""

    __slots__ = (
        "call", "index", "shape", "dtype", "value", "size", "exported", "host", "owner", "checks",
        "seq", "layout", "origin", "sizes", "__weakref__",
    )  # fmt: skip
    layout: Any
    origin: Any
    sizes: frozenset[int]
    # `sizes`: set only on a computed value whose `seq` is VALUE_SIZED (see there): the lengths
    # of its shape that came from values.
    # `origin`: set only on the results of a primitive a graph rewrite reads (GRAPH_REWRITES.reads,
    # a transpose): (primitive, params, inputs) of the call that made it, kept once the node is
    # computed, so that a rewrite applies whatever another thread's barrier did (see _fold).
    # Its inputs count as held (trace._join_if_held): computed with it, never recomputed.
    # `layout`: set only on a mesh device, on the pending value of an array rebound in place:
    # the layout its output is pinned to (spmd.inherit_layout). Left unset elsewhere (read
    # with getattr), so recording on one device stores nothing more.

    def __init__(
        self,
        call: Call | None,
        index: int,
        shape: tuple[int, ...],
        dtype: Any,
        value: Any,
        size: int,
        checks: tuple[Check, ...] | None = None,
    ):
        self.call = call
        self.index = index
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.size = size  # an upper bound on the pending graph behind this node
        self.exported = False  # its buffer was handed to the host: never donate it
        self.host = False  # its value is a NumPy buffer the host may write (LazyBackend.host_buffer)
        self.owner: Any = None  # weak reference to the array made with this node
        # the bounds checks of the index arrays it was computed from (pending ones: see Check)
        self.checks = checks
        self.seq = _NO_SEQ  # the recording number of the operation that made it (see _Repeats)


class Check:
    """A bounds check of an index array whose values were pending when a gather or scatter
    was recorded (`x[i]`, `take(x, i)`, `z[i] = v`, ...). `flag` is a pending node computed
    beside the graph (`_api.indexing.INDEX_BOUNDS`: whether an entry is out of bounds, and the
    first such); every value computed from the gather or scatter carries the check in its
    `checks`, so it is computed whenever they are, and a value whose check fails is never
    adopted: reading it raises IndexError naming the function and the user's line that
    recorded it, again at every read, while values that do not depend on it are unaffected.
    `error`: None while unknown, "" when the indices are in bounds, else the message."""

    __slots__ = ("flag", "fname", "axis", "size", "where", "error")

    def __init__(self, flag: Node, fname: str, axis: int, size: int, where: str):
        self.flag: Node | None = flag
        self.fname = fname
        self.axis = axis
        self.size = size
        self.where = where
        self.error: str | None = None

    def settle(self, value: Any) -> None:
        bad, first = (int(v) for v in np.asarray(value))
        self.error = (
            f"{self.fname}: index {first} is out of bounds for axis {self.axis} with size {self.size}"
            f" (recorded at {self.where}; found when the graph ran)"
            if bad
            else ""
        )
        self.flag = None


def _merge_checks(a: tuple[Check, ...], b: tuple[Check, ...]) -> tuple[Check, ...]:
    if a is b:
        return a
    return tuple(dict.fromkeys(a + b))


_NO_SEQ = -(2**62)  # the `seq` of a node no recording made (a host value): always far
# The `seq` of a computed value whose shape has lengths that came from values (a graph break's
# result, `X[labels == j]`, and what is computed from it alone and still has such a length:
# Node.sizes), where the device interprets. An operation whose operands are all computed and one
# of them such a value runs at once (Recorder._run_sized): what it computes no longer depends on
# those lengths (`mean(X[labels == j], axis=0)`), so it joins later graphs as a value of a fixed
# shape instead of an operation on a shape that changes at every run, whose graphs would never
# be seen twice (no plan, never compiled). Always far, as _NO_SEQ.
VALUE_SIZED = _NO_SEQ + 1
# The `seq` of an *element*: a 0-d value taken at once from a computed array's value (`x[i]`,
# `for v in x`: executor.LazyBackend.index_now), or computed at once from elements. An
# operation whose operands are all computed 0-d values, one of them an element, runs at once
# too (Recorder.scalar_now: `v > m` of Python's `max(x)`, `s + v` of `sum(x)`): Python code
# walking an array's elements costs NumPy calls, not a recorded graph run at each read. Other
# 0-d values (an optimizer's step counter) are recorded as any operation. Always far, as _NO_SEQ.
ELEMENT = _NO_SEQ + 2
_NEAR = 128  # an input recorded at most this many operations back is described by its distance
_MIN_PERIOD = 4  # the shortest period cut
_MAX_PERIOD = 4096  # the longest period looked for
_MIN_CUT = 32  # the fewest operations between two cuts (a short period is cut every few periods)
# A period that writes through an index (`u[1:-1, 1:-1] = v`: an in-place primitive) a value
# of at least this many elements is cut at every period: XLA's CPU program for several
# periods of such a write copies out each slice the next write reads (the write is done in
# place, so it may not read what it overwrites), which costs more device time than a cut's
# host work (bench_dayone's stencil, 256 x 256: slower than the loop with a barrier per step
# when cut every 3 steps, at its speed cut every step; 160 x 160 still gains from 3 steps a cut,
# 192 x 192 loses).
_WRITE_EVERY_PERIOD = 2**15


class _Repeats:
    """The repeat detector of a graph recorded without a barrier (docs/eager-and-lazy.md, "A
    loop without a barrier"). Recorder.run keeps a structural fingerprint per operation in
    `fps`, an int: the identity of its output avals, the shape cache's entry for its key (one
    object per primitive, parameters and input shapes, dtypes and scalar types, while cached),
    xor each input's distance back in the recording order (0 for one farther than _NEAR or made
    by no recording) in 8 bits from bit 48 on (object ids are below 2**47): no tuple built or
    hashed (hashing the key itself made recording a third slower). `seen`: fingerprint -> the
    number (`seq`) of the operation last seen with it. A fingerprint that two structures share
    (an id reused after an eviction) can only move a cut, never change a value. The candidate period is the distance to
    the last operation with the same fingerprint; each operation whose fingerprint equals the
    one `period` operations back extends `matched`, any other resets it (an O(1) check per
    operation). Once the last period's operations repeat the period before them (`matched` = 1
    period: 2 copies; waiting for a third left one more step of the loop in the first graph,
    which is interpreted, and made the day-one stencil measurably slower than its barrier loop)
    the recording is cut at a fixed phase of the period, and again every
    `every` operations (a whole number of periods, at least _MIN_CUT operations, so a short
    step does not pay a barrier's host work each time; one period where it writes a large
    array in place, see _WRITE_EVERY_PERIOD) while it keeps repeating (`cut_at`:
    the number of the operation before which the next cut runs, -1 while none is due). Where
    a cut happens is chosen outside the hot path (Recorder._cut). Written without the lock: a
    race between threads only moves a cut, and a cut is a barrier, which changes no value.

    - `device`: the device whose recording is watched (an operation on another one restarts it);
    - `adopted`: `seq` at the last rebinding (`x[i] = v`, `x += 1`: Recorder.adopt), where a
      cut leaves the fewest temporaries pending;
    - `phased`: whether `cut_at` is the phase chosen (or the first operation after the period
      was confirmed, the phase still to choose);
    - `logged`: the (period, file:line) pairs logged (X10ARRAY_LOG_COMPILES), once each."""

    __slots__ = ("device", "seq", "fps", "seen", "period", "matched", "cut_at", "every", "adopted", "phased", "logged")

    def __init__(self) -> None:
        self.device: Device | None = None
        self.seq = 0
        self.fps: list[int] = []
        self.seen: dict[int, int] = {}
        self.period = 0
        self.matched = 0
        self.cut_at = -1
        self.every = 0
        self.adopted = _NO_SEQ
        self.phased = False
        self.logged: set[tuple[int, str]] = set()

    def restart(self, device: Device | None) -> None:
        """Forget the recording so far (a barrier of the device, or an operation on another)."""
        self.device = device
        self.fps = []
        self.seen = {}
        self.period = self.matched = 0
        self.cut_at = -1
        self.phased = False

    def candidate(self, fp: int, seq: int) -> None:
        """The operation `seq` (fingerprint `fp`) broke the repeat, or none was found yet: the
        distance to the last operation like it is the next candidate period."""
        self.cut_at = -1
        self.phased = False
        self.matched = 0
        last = self.seen.get(fp)
        fps = self.fps
        if last is None:
            self.period = 0
        else:
            p = seq - last  # (a shorter period than _MIN_PERIOD, `x = x + 1` in a loop, is not cut)
            self.period = p if _MIN_PERIOD <= p <= _MAX_PERIOD and p <= len(fps) else 0
            if self.period and fps[-self.period] == fp:
                self.matched = 1

    def trim(self) -> None:
        """Keep the fingerprints a period can reach back to (every 8192 operations)."""
        fps = self.fps
        if len(fps) > 2 * _MAX_PERIOD:
            del fps[:-_MAX_PERIOD]
        if len(self.seen) > 4 * _MAX_PERIOD:
            self.seen = {}

    def confirmed(self, seq: int, p: int) -> None:
        """The last period's operations (`p` of them: the period the caller read, which
        another thread's restart may have set to 0 meanwhile) repeat the period before: a cut
        is due from the next one on (its phase chosen there: Recorder._cut), unless cuts are
        off, or the recording cannot be cut (x10array.compile records, a mesh device: see
        _cuttable)."""
        if not settings.get("X10ARRAY_REPEAT_CUT"):
            self.matched = -(2**62)  # (not again for this repeat)
            return
        self.period = p
        self.every = p * -(-_MIN_CUT // p)
        self.cut_at = seq + 1
        self.phased = False


_REPEATS = _Repeats()


_LOCK = RUNTIME.lock  # (the lazy backend's lock: see runtime.py, "Threads")
_live = RUNTIME.live  # (bound once for the hot path)
_WATCHING = RUNTIME.watching


class _RecorderState:
    """The recorder's mutable state, in one place. Written without the lock unless said (see
    _LOCK): each write replaces one attribute, atomically under the GIL.

    - `prune_at`: the length past which a recording prunes its live list (written by prune,
      under the lock);
    - `last_count`: COUNTERS.ops_recorded at the last exact count of a graph's size (see
      _counted_size; two threads racing at worst both count);
    - `last_live`: (device, its live list, its layout keeper or None) of the last recording:
      most operations go to the last device (one tuple, replaced whole: threads read it whole)."""

    __slots__ = ("prune_at", "last_count", "last_live")

    def __init__(self) -> None:
        self.prune_at = 4096
        self.last_count = -(2**62)
        self.last_live: tuple[Device | None, list[weakref.ref[Array]], Any] = (None, [], None)


_STATE = _RecorderState()


_ref = weakref.ref
_new = object.__new__
_SETTINGS = settings.cached  # (the settings read so far: Recorder.run reads two there)
_RECORD_SOURCE = "X10ARRAY_RECORD_SOURCE"
_GRAPH_LIMIT = "X10ARRAY_GRAPH_LIMIT"
_REWRITES = GRAPH_REWRITES.rules  # (the live dict: bound once for the hot path)
_REWRITE_SOURCES = GRAPH_REWRITES.reads  # (the live set, likewise)


class Recorder:
    """The recording half of the lazy backend: `run` and `adopt` of the backend protocol
    (`_core.backend.BackendImpl`), which executor.LazyBackend has. What recording needs of
    the later stages it is given: `run_now(nodes, device)` computes pending nodes at once
    (the size guard), `graph_break(prim, device, operands, params)` runs a primitive whose
    result shape depends on values, `layout_keeper(device)` is what keeps the layout of an
    array of `device` rebound in place (`keep(node)`, or None where values have no layout: the
    device's placement decides; asked once per device switch, with its live list), and
    `cut(device)` runs every pending array of `device` as a barrier would, for a recording
    cut where it repeats (_Repeats)."""

    __slots__ = ("run_now", "graph_break", "layout_keeper", "cut", "scalar_now")

    def __init__(
        self, run_now: Any, graph_break: Any, layout_keeper: Any, cut: Any = None, scalar_now: Any = None
    ) -> None:
        self.run_now = run_now
        self.graph_break = graph_break
        self.layout_keeper = layout_keeper
        self.cut = cut
        self.scalar_now = scalar_now

    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Record `prim` on `operands` (pending `Array`s and Python scalars): its outputs.

        The hot path of the lazy device (once per operation, ~1 us): written out inline, with
        no Python call on the way for the common case (one or two array operands, a cached
        shape, one output) but the objects it makes."""
        if prim.dynamic_shape:
            return self.graph_break(prim, device, operands, params)
        rep = _REPEATS
        if rep.device is not device:
            rep.restart(device)
        seq = rep.seq = rep.seq + 1
        if seq == rep.cut_at:  # (a cut is due before this operation: _Repeats)
            self._cut(device, seq)
        key_params = params_key(params) if params else ()
        # the operands' nodes, and the shape cache's key (shapes.flat_key) built in one tuple
        n = len(operands)
        key: tuple[Any, ...] | None = None
        if n == 2:
            a, b = operands
            if type(a) is Array:
                i0 = a._data
                if type(b) is Array:
                    i1 = b._data
                    inputs: tuple[Any, ...] = (i0, i1)
                    key = (prim, key_params, i0.shape, i0.dtype, i1.shape, i1.dtype)
                elif type(b) is float:
                    inputs = (i0, b)
                    key = (prim, key_params, i0.shape, i0.dtype, float)
                elif type(b) is int and b <= _INT64_MAX:  # (a larger one: see jax_operand)
                    inputs = (i0, b)
                    key = (prim, key_params, i0.shape, i0.dtype, int)
            elif type(a) is float and type(b) is Array:
                i1 = b._data
                inputs = (a, i1)
                key = (prim, key_params, float, i1.shape, i1.dtype)
        elif n == 1 and type(a := operands[0]) is Array:
            i0 = a._data
            inputs = (i0,)
            key = (prim, key_params, i0.shape, i0.dtype)
        if key is None:
            inputs = tuple([o._data if type(o) is Array else jax_operand(o, device) for o in operands])
        if prim in _REWRITES and _rewrite_may_apply(inputs):
            folded = _fold(prim, inputs, params)
            if folded is not None:
                inputs, params = folded
                key_params = params_key(params) if params else ()
                key = None
        if key is None:
            in_avals = tuple([(i.shape, i.dtype) if type(i) is Node else type(i) for i in inputs])
            avals = shapes.out_avals(prim, params, key_params, in_avals, inputs)
        else:
            entry = shapes.avals_entries.get(key)  # (shapes.out_avals, inlined)
            if entry is not None:
                entry[1] = tick()
                avals = entry[0]
            else:
                in_avals = tuple([(i.shape, i.dtype) if type(i) is Node else type(i) for i in inputs])
                avals = shapes.out_avals_miss(prim, params, key_params, in_avals, inputs, key)
        # (a 0-d result of computed 0-d operands only, `v > m` of max(x) over a computed x: run
        # at once, see _computed_scalars; one tuple's truth tested on the hot path otherwise)
        if not avals[0][0] and _computed_scalars(inputs) and self.scalar_now is not None:
            out = self.scalar_now(prim, device, inputs, params, avals)
            if out is not None:
                return out
        size = 1
        checks = None
        far = seq - _NEAR
        fp = id(avals)  # the fingerprint (see _Repeats), an int: no tuple to build and hash
        shift = 48
        sized = False
        for i in inputs:
            if type(i) is Node:
                if i.seq > far:
                    fp ^= (seq - i.seq) << shift
                shift += 8
                if i.call is not None:
                    size += i.size
                    if i.checks is not None:
                        checks = i.checks if checks is None else _merge_checks(checks, i.checks)
                elif i.seq == VALUE_SIZED:
                    sized = True
        p = rep.period
        seen = rep.seen
        if p:
            try:  # (IndexError: another thread's recording restarted the detector meanwhile)
                repeats = rep.fps[-p] == fp
            except IndexError:
                repeats = False
            if repeats:
                rep.matched += 1
                if rep.matched == p:
                    rep.confirmed(seq, p)
            else:
                rep.candidate(fp, seq)
        elif (seen_at := seen.get(fp)) is not None and seq - seen_at >= _MIN_PERIOD:  # (no call otherwise)
            rep.candidate(fp, seq)
        seen[fp] = seq
        rep.fps.append(fp)
        if not seq & 8191:  # (the detector's memory bounded, whatever is recorded)
            rep.trim()
        call = _new(Call)  # (Call's fields, set here: no __init__ call on the hot path)
        call.prim = prim
        call.params = params
        call.key_params = key_params
        call.inputs = inputs
        call.device = device
        call.outputs = ()
        try:  # (settings.get, inlined: a dict lookup once the setting was read)
            where = _SETTINGS[_RECORD_SOURCE]
        except KeyError:
            where = settings.get(_RECORD_SOURCE)
        # (for x10array.debug: off by default, ~1 us)
        call.where = user_line() if where else None
        try:
            limit = _SETTINGS[_GRAPH_LIMIT]
        except KeyError:
            limit = settings.get(_GRAPH_LIMIT)
        if size > limit:
            size = _counted_size(call, limit)
        COUNTERS.ops_recorded += 1
        last = _STATE.last_live
        live = last[1] if last[0] is device else _live_list(device, self.layout_keeper)[1]
        if len(live) > _STATE.prune_at:
            prune(live)
        if not prim.multiple_results:
            ((shape, dtype),) = avals
            node = _new(Node)  # (Node.__init__, inlined)
            node.call = call
            node.index = 0
            node.shape = shape
            node.dtype = dtype
            node.value = None
            node.size = size
            node.exported = False
            node.host = False
            node.checks = checks
            node.seq = seq
            if prim in _REWRITE_SOURCES:
                node.origin = (prim, params, inputs)
            arr = _new(Array)  # (Array._new, inlined)
            arr._data = node
            arr._dtype = FROM_NUMPY[dtype]
            arr._device = device
            arr._shared = False
            arr._alias = None
            arr._committed = True
            node.owner = ref = _ref(arr)
            live.append(ref)
            if size > limit:
                self._outgrown([arr], device, limit)
            elif sized and size == 1:  # (every operand computed, one of them VALUE_SIZED)
                self._run_sized([node], inputs, device)
            return arr
        outs = []
        for index, (shape, dtype) in enumerate(avals):
            node = Node(call, index, shape, dtype, None, size, checks)
            node.seq = seq
            arr = Array._new(node, FROM_NUMPY[dtype], device)
            node.owner = ref = _ref(arr)
            live.append(ref)
            outs.append(arr)
        call.outputs = tuple(_ref(a._data) for a in outs)
        if size > limit:
            self._outgrown(outs, device, limit)
        elif sized and size == 1:
            self._run_sized([a._data for a in outs], inputs, device)
        return tuple(outs)

    def adopt(self, target: Array) -> None:
        """`target` was rebound to a pending value (`x += 1`, `x[i] = v`): it is that value's
        owner now, so the barrier computes it and graphs that use it keep it."""
        node = target._data
        if _WATCHING[0] is not None and (watch := RUNTIME.watched()) is not None:
            watch.rebound.append((_ref(target), user_line()))
        _REPEATS.adopted = _REPEATS.seq
        if node.value is None:
            node.owner = ref = _ref(target)
            last = _STATE.last_live
            if last[0] is not target._device:
                last = _live_list(target._device, self.layout_keeper)
            last[1].append(ref)
            if last[2] is not None:  # (a mesh: the placement keeps the layout)
                last[2](node)

    def _cut(self, device: Device, seq: int) -> None:
        """A cut is due before the operation `seq` (_Repeats.cut_at): the first time, choose its
        phase (the cut moves to the operation after the period's last rebinding, if one was
        seen in the last period: there a step's temporaries are dead, Python names rebound);
        then run the device's pending arrays as `lazy_barrier()` would here, unless the
        recording cannot be cut now (_cuttable). Later cuts come every `every` operations,
        each graph of the same structure, so the barrier's plans and compiled programs apply."""
        rep = _REPEATS
        p = rep.period
        if not rep.phased:
            rep.phased = True
            if _writes_large_in_place(device, seq, p):
                rep.every = p  # (cut at every period: see _WRITE_EVERY_PERIOD)
            adopted = rep.adopted
            if seq - p <= adopted < seq - 1:  # (a rebinding in the last period, not by the last op)
                rep.cut_at = adopted + 1 + p
                return
        rep.cut_at = seq + rep.every
        if not _cuttable(device, self.layout_keeper):
            rep.cut_at = -1
            rep.matched = -(2**62)  # (not again for this repeat)
            return
        if settings.get("X10ARRAY_LOG_COMPILES"):
            where = user_line()
            if (p, where) not in rep.logged:
                rep.logged.add((p, where))
                print(
                    f"x10array: a lazy graph recorded without a barrier repeats every {p} operations:"
                    f" cut every {rep.every} operations as lazy_barrier() would, first at {where}"
                    " (X10ARRAY_REPEAT_CUT=0 turns this off)",
                    flush=True,
                )
        try:
            self.cut(device)
        except Exception:  # (a value that failed stays pending and raises at its read, as after
            rep.cut_at = -1  # a barrier; cutting stops for this repeat)
            rep.matched = -(2**62)

    def _run_sized(self, nodes: list[Node], inputs: tuple[Any, ...], device: Device) -> None:
        """Run the operation of `nodes` (its outputs), whose operands are all computed and one
        of them VALUE_SIZED, at once; an output is VALUE_SIZED in turn if its shape keeps one of
        their value-made lengths (a length equal to one by chance only makes the next operation
        run at once too)."""
        self.run_now(nodes, device)
        sizes = frozenset().union(*[i.sizes for i in inputs if type(i) is Node and i.seq == VALUE_SIZED])
        for node in nodes:
            if node.value is not None and (kept := sizes.intersection(node.shape)):
                node.seq = VALUE_SIZED
                node.sizes = kept

    def _outgrown(self, outs: list[Array], device: Device, limit: int) -> None:
        """The size guard: the graph behind `outs` has more than `limit` operations: run it now."""
        COUNTERS.guard_materializations += 1
        level, filename, lineno = user_location()
        warnings.warn(
            f"x10array: a pending lazy graph grew past {limit} operations (recorded at "
            f"{filename}:{lineno}) and was run now; call x10array.lazy_barrier() once per step "
            "(or raise X10ARRAY_GRAPH_LIMIT)",
            RuntimeWarning,
            stacklevel=level,
        )
        self.run_now([a._data for a in outs], device)


def _computed_scalars(inputs: tuple[Any, ...]) -> bool:
    """Whether an operation's operands are 0-d values computed in host memory (and Python
    scalars), one of them an ELEMENT: such an operation (`v > m` of Python's `max(x)`, `s + v`
    of `sum(x)`) costs a few NumPy calls, far less than recording it and then running it as a
    graph at its read, so the backend runs it at once (`Recorder.scalar_now`: except where it
    compiles every graph, or while x10array.compile records)."""
    found = False
    for i in inputs:
        if type(i) is Node:
            if i.shape or type(i.value) is not np.ndarray:
                return False
            if i.seq == ELEMENT:
                found = True
    return found


def _writes_large_in_place(device: Device, seq: int, p: int) -> bool:
    """Whether the period before the operation `seq` (`p` operations) wrote in place (an
    `in_place` primitive: `x[i] = v`) a value of at least _WRITE_EVERY_PERIOD elements (the
    value's size, not the array's: `x[0] = v` into a large `x` copies out nothing, and a cut
    every period would be a barrier every few operations),
    read off the last entries of the device's live list (a rebound array is appended there,
    by Recorder.adopt, and stays alive while its Python name holds it). Once per repeat, off
    the hot path; read without the lock (a slice of the list is one atomic read), so another
    thread's recording at worst changes how often a cut comes, never a value."""
    live = _live.get(device)
    if not live:
        return False
    first = seq - p
    for ref in live[-(2 * p + 8) :]:  # (the period's arrays, their rebindings and a few others)
        a = ref()
        if a is None:
            continue
        node = a._data
        call = node.call
        if call is not None and node.seq >= first and call.prim.in_place:
            value = call.inputs[1]  # (the value written: x, value, index operands...)
            if type(value) is Node and math.prod(value.shape) >= _WRITE_EVERY_PERIOD:
                return True
    return False


def _cuttable(device: Device, layout_keeper: Any) -> bool:
    """Whether a recording on `device` may be cut here: not while x10array.compile records (a
    cut would be a barrier inside the captured function: capture.py), not from inside a run
    (the lock held by this thread), and not on a mesh (every process would have to cut at the
    same operation; a layout keeper is a mesh's)."""
    if _WATCHING[0] is not None or layout_keeper(device) is not None:
        return False
    return not _LOCK._is_owned()  # type: ignore[attr-defined]  # (RLock's: held by this thread)


def forget_repeats(device: Device) -> None:
    """A barrier of `device` ran (a user's, not a cut): the repeat detector starts again.
    (Compared by equality: `Device("cpu", 0, "xla")` made twice gives two equal objects, and
    the barrier's may not be the recording's.)"""
    if _REPEATS.device is device or _REPEATS.device == device:
        _REPEATS.restart(device)


def _rewrite_may_apply(inputs: tuple[Any, ...]) -> bool:
    """Whether an operand was made by a primitive that a graph rewrite reads (it then has an
    `origin`, set at its recording and kept once computed): a rule reads nothing else, so
    without one no rewrite applies, and _fold's lock and producer list are skipped (a matmul
    of an untransposed operand, the common case: ~8 of its ~10 us recorded)."""
    for i in inputs:
        if type(i) is Node and getattr(i, "origin", None) is not None:
            return True
    return False


def _fold(
    prim: Primitive, inputs: tuple[Any, ...], params: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """`prim`'s rewrite (GRAPH_REWRITES) of its operands given their producers (matmul
    absorbing a transpose): new (inputs, params), or None. A producer the rules read is the
    node's `origin`, pending or computed, so the rewrite does not depend on whether another
    thread's barrier ran it meanwhile; others are seen while pending only."""
    with _LOCK:  # it may take the producers' operands: not while a graph runs (see _LOCK)
        producers = [
            (
                getattr(i, "origin", None) or ((c.prim, c.params, c.inputs) if (c := i.call) is not None else None)
                if type(i) is Node
                else None
            )
            for i in inputs
        ]
        return _REWRITES[prim](inputs, producers, params)


def _counted_size(call: Call, limit: int) -> int:
    """The size of the graph behind `call`, whose summed bound is past `limit`.

    The sum counts a value used twice twice (it doubles with each reuse, as in an EM or
    optimizer loop, or writes through a view): count the distinct operations before judging,
    but not at every operation (a count walks the graph): until `limit` / 10 more operations
    are recorded, assume the limit (so a graph that outgrows it is caught at most that many
    operations late)."""
    since = COUNTERS.ops_recorded - _STATE.last_count  # negative after reset_metrics()
    if not 0 <= since < max(1, limit // 10):
        _STATE.last_count = COUNTERS.ops_recorded
        with _LOCK:  # the walk reads other nodes' calls
            return graph_size(call, limit + 1)
    return limit


def _live_list(device: Device, layout_keeper: Any) -> tuple[Any, list[weakref.ref[Array]], Any]:
    """`_STATE.last_live` made `device`'s: (device, its live list, its layout keeper)."""
    live = _live.get(device)
    if live is None:
        with _LOCK:  # two threads must not each make a list for a new device
            live = _live[device]
    last = _STATE.last_live = (device, live, layout_keeper(device))
    return last


def graph_size(call: Call, cap: int, seen: set[int] | None = None) -> int:
    """The number of distinct pending operations behind `call` (itself included), counted up
    to `cap` (those not already in `seen`, which is updated, when given)."""
    if seen is None:
        seen = set()
    if id(call) in seen:
        return 0
    before = len(seen)
    seen.add(id(call))
    stack = [call]
    while stack and len(seen) - before < cap:
        for i in stack.pop().inputs:
            if type(i) is Node and i.call is not None and id(i.call) not in seen:
                seen.add(id(i.call))
                stack.append(i.call)
    return len(seen) - before


@RUNTIME.locked
def prune(live: list[weakref.ref[Array]]) -> None:
    """Forget dead or materialized arrays (the list only grows between barriers). Other
    threads may append meanwhile: only the part read is replaced (one atomic slice
    assignment), so their appends are kept."""
    n = len(live)
    live[:n] = [r for r in live[:n] if (a := r()) is not None and a._data.value is None]
    _STATE.prune_at = max(4096, 2 * len(live))
