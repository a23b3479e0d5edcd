"""Stage 8, the executor: run pending graphs and hand their values to their nodes.

`materialize_nodes` is the one entry (a read, a barrier, the size guard, a graph break):
under the lazy lock it takes the graph behind its targets and its program (plans.py: a
plan's, else walked by trace.py and built by program.py), runs it cold (interpreter.py: on
the host, or op by op on an accelerator) or compiled, and gives each target its value
(`_run_and_adopt`, where a failed run loses nothing). Out of memory is one MemoryError on
every tier (`_out_of_memory`). `LazyBackend` is the backend object registered for XLA
devices: recording from graph.Recorder, the rest of the protocol here.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
import time
import types
import warnings
import weakref
from itertools import compress
from operator import attrgetter
from typing import Any

import numpy as np

from ..._core import compile_cache, interrupts, settings
from ..._core.array import Array
from ..._core.devices import Device, DeviceKind, jax_put
from ..._core.dtypes import FROM_NUMPY, DType
from ..._core.interrupts import deferred_signals
from ..._core.kernels import NUMPY
from ..._core.metrics import COUNTERS
from ..._core.primitive import Primitive
from ..._core.transfers import note
from ..._core.user_code import user_line
from .graph import ELEMENT, VALUE_SIZED, Check, Node, Recorder, forget_repeats, graph_size, prune
from .interpreter import as_node_value, cores, held_alone, run_now, run_on_device, run_single
from .placement import placement_of
from .plans import barrier_program
from .program import Program, count_compiled_run
from .runtime import RUNTIME
from .tiering import FEEDBACK_RUNS
from .trace import Traced

# The most elements `x[i]` of a computed `x` may hold to be taken at once from x's value
# (LazyBackend.index_now): an element, a row of a table; a larger piece stays an operation of
# the graph that reads it, where a compiled program reads it in place.
INDEX_NOW_ELEMENTS = 1024


class LazyBackend:
    """What `bind` and the public layer call for XLA devices (`_core.backend.BackendImpl`):
    recording (`run`, `adopt`: its graph.Recorder's own methods, bound once, so that a
    recorded operation costs no call more), and the rest of the protocol here."""

    run: Any
    adopt: Any

    def __init__(self) -> None:
        self.recorder = Recorder(materialize_nodes, _graph_break, _layout_keeper, _cut, _scalar_now)
        self.run = self.recorder.run
        self.adopt = self.recorder.adopt

    def place(self, host: np.ndarray, dtype: DType, device: Device, *, shared: bool, layout: Any = None) -> Array:
        return from_host(host, dtype, device, owned=not shared, layout=layout)

    def layout(self, x: Array) -> Any:
        return placement_of(x._device).layout(x._data)

    def read(self, x: Array) -> np.ndarray:
        data = materialize(x)
        placement_of(x._device).check_readable(data)
        if type(data) is np.ndarray:  # a value kept in host memory: seen read-only, like a
            view = data.view()  # device buffer's host view, so it cannot be written through
            view.flags.writeable = False
            return view
        return np.asarray(data)

    def item(self, x: Array) -> Any:
        data = materialize(x)
        placement_of(x._device).check_readable(data)
        return data.item() if type(data) is np.ndarray else np.asarray(data).item()

    def host_buffer(self, x: Array) -> np.ndarray | None:
        """On the CPU: every pending array of the device is computed first (so that no pending
        work reads `x`'s value when a write through the buffer lands), then `x`'s value becomes
        a NumPy buffer of its own (`Node.host`: never replaced by a device copy, donated or
        written in place), handed out. Work recorded later reads it when it runs."""
        device = x._device
        if not placement_of(device).host_buffers:
            return None
        note("read")
        _noted_read()
        try:
            barrier([device], False, read=True)  # (x's value is read at once: see materialize_nodes)
        except IndexError:
            pass  # another array's index was out of bounds: the barrier computed the others, and
            # the bad ones raise at their own reads (x's own failure raises below)
        node = x._data
        if node.value is None:  # (a value whose bounds check failed: raises)
            materialize_nodes([node], device)
        with RUNTIME.lock:  # (no graph is traced while the value changes home)
            COUNTERS.transfers_to_host += 1
            node.exported = True
            if not node.host:
                if held_alone(node):  # (a buffer of its own that nothing else holds: handed over as it is)
                    node.value.flags.writeable = True
                else:  # (shared: another node's value too, a view of it held, a device buffer)
                    node.value = np.array(node.value, copy=True)
                node.host = True
            return node.value

    views_share_host = True  # a view's host buffer is a NumPy view of its base's (Alias.share_host)

    def host_value(self, x: Array) -> np.ndarray | None:
        """`x`'s value if it is a buffer the host may write (host_buffer, share_host), else None."""
        node = x._data
        return node.value if node.host else None

    def share_host(self, x: Array, buffer: np.ndarray) -> bool:
        """`x` (on the CPU) holds `buffer` from now on, a host buffer NumPy may write: NumPy's
        view of its base's host buffer (Alias.share_host) or a DLPack producer's memory
        (from_dlpack), so a write through NumPy is seen by x's next read and operation. Not
        inside a recording of x10array.compile (x stays a recorded operation there)."""
        if RUNTIME.watching[0] is not None and RUNTIME.watched() is not None:
            return False
        with RUNTIME.lock:
            node = leaf(buffer, buffer.dtype)
            node.exported = node.host = True  # (never donated, copied when a program reads it)
            node.owner = weakref.ref(x)
            x._data = node
        return True

    def buffer(self, x: Array) -> Any:
        placement_of(x._device).check_exportable()
        return materialize(x)

    def relayout(self, x: Array, layout: Any) -> Array:
        node = x._data
        if node.value is None:
            materialize_nodes([node], x._device)
        moved = placement_of(x._device).relayout(node.value, layout)
        return owned_array(leaf(moved, node.dtype), x.dtype, x._device)

    def known(self, x: Array) -> np.ndarray | None:
        value = x._data.value
        if value is not None and RUNTIME.watching[0] is not None and (watch := RUNTIME.watched()) is not None:
            # inside a recording of x10array.compile: the public layer checks this call's
            # values on the host (an index array's bounds, a mask's count against the value's
            # rows), which would not hold for a replay's arguments (the program would clamp);
            # capture.end decides (an index made inside the function, `arange`, is the same
            # at every call)
            watch.checked.append((x._data, f"{user_line()}, a host check of an index array's or a mask's values"))
        if value is not None and not placement_of(x._device).readable_here(value):
            return None
        return None if value is None else np.asarray(value)

    def index_now(self, x: Array, prim: Primitive, operands: tuple[int, ...], params: dict[str, Any]) -> Array | None:
        """`x[i]` from `x`'s computed value on a device whose values the host reads where they
        are (the CPU): a NumPy index and a copy, a new computed array, where recording it and
        running it at its read would run a graph for one element (`float(x[i])` in a loop,
        iteration). Only for a result of at most INDEX_NOW_ELEMENTS elements (a column of a
        large matrix, `X[:, 0]`, stays an operation of the graphs that read it), and not while
        x10array.compile records (the index must be part of the recording: a replay's `x` is
        another)."""
        source = x._data
        value = source.value
        if value is None or RUNTIME.watching[0] is not None or not placement_of(x._device).interprets:
            return None
        out = prim.kernel(NUMPY, np.asarray(value), *operands, **params)
        if type(out) is np.ndarray and out.size > INDEX_NOW_ELEMENTS:
            return None
        # (as the interpreter keeps a result: a copy, or a view of a read-only value it spans half of)
        node = leaf(as_node_value(out, source.dtype), source.dtype)
        COUNTERS.ops_recorded += 1  # (an operation of the program all the same: counted as recorded)
        if not node.shape:
            node.seq = ELEMENT  # (operations on it and other 0-d values run at once: _scalar_now)
        elif source.seq == VALUE_SIZED and (kept := source.sizes.intersection(node.shape)):
            node.seq = VALUE_SIZED  # (a piece of a value-made length keeps it: graph.VALUE_SIZED)
            node.sizes = kept
        return owned_array(node, x._dtype, x._device)

    def compute_for_reads(self, x: Array) -> None:
        """Iteration (`for v in x`, `max(x)`, `list(x)`): a pending `x` is computed now, in one
        graph, and its rows are then taken from its value (index_now), not recorded one by
        one and each run at its read. Not while x10array.compile records, nor where index_now
        would not serve the rows."""
        node = x._data
        if node.value is None and RUNTIME.watching[0] is None and placement_of(x._device).interprets:
            materialize_nodes([node], x._device)
            _settled(x._device)

    def guard(self, out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
        guard(out, flag, fname, axis, size)

    def barrier(self, devices: list[Device] | None, wait: bool) -> None:
        if devices is None:  # (the devices that record, and those a replay runs on)
            in_flight = RUNTIME.in_flight
            devices = [*RUNTIME.live] if not in_flight else list(dict.fromkeys([*RUNTIME.live, *in_flight]))
        barrier(devices, wait)


def _layout_keeper(device: Device) -> Any:
    """What keeps the layout of an array of `device` rebound in place (graph.Recorder.adopt,
    asked once per device switch): on a mesh, the previous value's layout; on a single device
    nothing (None: the write costs no call). The device's placement decides."""
    return placement_of(device).layout_keeper()


def from_host(host: np.ndarray, dtype: DType, device: Device, owned: bool = False, layout: Any = None) -> Array:
    """Place a host array on a lazy device (materialized at once: a transfer, not a graph).

    On the CPU the host buffer is the device's memory, as for the interpreter's results: it
    is kept as it is (copied unless `owned`: nobody else may write it), and placed with jax
    only when a compiled program reads it (see run_compiled). On a mesh it is placed in
    `layout` (a canonical partition spec; None: replicated) at once (placement.OnMesh)."""
    COUNTERS.transfers_to_device += 1
    return owned_array(leaf(placement_of(device).place(host, owned, layout), host.dtype), dtype, device)


def owned_array(node: Node, dtype: DType, device: Device) -> Array:
    """A new array holding the materialized `node`, recorded as its owner (so that
    x10array.compile can tell when the array no longer holds it, see capture.Captured.stale)."""
    arr = Array._new(node, dtype, device)
    node.owner = weakref.ref(arr)
    return arr


def from_global(buffer: Any, device: Device) -> Array:
    """A computed jax array laid out on `device`'s mesh (a global array that every process
    made its part of: distributed.from_process_local) as an array on the mesh."""
    COUNTERS.transfers_to_device += 1
    dtype = np.dtype(buffer.dtype)
    return owned_array(leaf(buffer, dtype), FROM_NUMPY[dtype], device)


def leaf(buffer: Any, dtype: Any) -> Node:
    return Node(None, 0, tuple(buffer.shape), np.dtype(dtype), buffer, 0)


def materialize(x: Array) -> Any:
    """The device buffer of a lazy array, computing its pending graph if needed: the host
    read of `read` and `buffer`, counted at its call site and checked by the transfer guard
    first (`_core.transfers.note`)."""
    note("read")
    _noted_read()
    return _computed(x)


def _noted_read() -> None:
    """A host read inside a function x10array.compile records (capture.py): noted in the
    watch whether or not the value is computed already. The value reaches Python (`int(n)`,
    `bool(x > 0)`, `numpy.asarray(x)`), so what the function does next may depend on it, and a
    replay would reuse it: the recording is not kept (capture.end). A pending value is noted
    again by materialize_nodes (the same line)."""
    if RUNTIME.watching[0] is not None and (watch := RUNTIME.watched()) is not None:
        watch.reads.append(user_line())


def _computed(x: Array) -> Any:
    """The device buffer of a lazy array, computing its pending graph if needed."""
    node = x._data
    if node.value is None:
        materialize_nodes([node], x._device)
        _settled(x._device)
    COUNTERS.transfers_to_host += 1
    node.exported = True
    return node.value


def _settled(device: Device) -> None:
    """A read ran a graph of `device`: if it left nothing pending there (a loop whose step ends
    in reads, `float(loss)`, rather than a barrier), the repeat detector starts again, as after
    a user's barrier (graph.forget_repeats): the next graph starts here whatever the detector
    saw, so a cut it would place by a period counted across the reads falls at another point of
    each step, and the graphs between reads and cuts change structure from step to step
    (the Monte-Carlo loop: 11 operations a step in two reads, cut every 33, compiled rounds
    alternating fast and slow). The live list is pruned on the way (graph.prune: dead
    and computed arrays dropped), under the lock, which a barrier takes the list under;
    another thread's pending arrays keep the detector as it is, and one that records
    meanwhile (its array not yet in the list) only loses a cut, which changes no value."""
    live = RUNTIME.live.get(device)
    if live is None:
        return
    if live:  # (an empty list needs no prune: read without the lock, as a recording appends)
        with RUNTIME.lock:
            prune(live)
            if live:
                return
    forget_repeats(device)


def barrier(devices: list[Device], wait: bool, read: bool | None = None) -> None:
    """Materialize every live pending array on `devices` in one program per device, so work
    they share is computed once (Swift for TensorFlow's `LazyTensorBarrier()`); block until
    done if `wait`. `read` (default: `wait`): a value it computes is read at once (host_buffer), for
    the tier decision (materialize_nodes)."""
    COUNTERS.barriers += 1
    for device in devices:
        if not device.is_lazy:
            continue
        forget_repeats(device)  # (a step's end: the recording starts again, see graph._Repeats)
        _barrier_one(device, wait, wait if read is None else read)


def _cut(device: Device) -> None:
    """A recording cut where it repeats (graph._Repeats): `device`'s pending arrays run as a
    barrier of it runs them, counted as `repeat_cuts`, not as a barrier."""
    COUNTERS.repeat_cuts += 1
    _barrier_one(device, False)


def _barrier_one(device: Device, wait: bool, read: bool = False) -> None:
    """The barrier of one lazy device (see barrier)."""
    if wait and device in RUNTIME.in_flight:
        for value in RUNTIME.in_flight.pop(device, ()):
            if not value.is_deleted():  # (donated to a later replay, which the device runs after it)
                value.block_until_ready()
    live = RUNTIME.live.get(device)
    if not live:
        return
    with RUNTIME.lock:
        # What other threads record meanwhile is appended after the part taken, and kept
        # for the next barrier (each slice operation is atomic).
        taken = live[:]
        del live[: len(taken)]
        try:
            nodes = _pending_nodes(taken)
            if nodes:
                materialize_nodes(nodes, device, read=read)
        except BaseException:
            live[:0] = taken  # a failed run keeps every array registered: the next barrier retries
            raise
        del taken
    if wait:
        for n in nodes:
            if hasattr(n.value, "block_until_ready"):  # host (interpreted) values are ready
                n.value.block_until_ready()


def _pending_nodes(live: list[weakref.ref[Array]]) -> list[Node]:
    """The nodes of the pending arrays in a live list. (A function of its own: no array may
    stay in the barrier's frame, which the traceback of a failed run keeps alive, and with it
    the array, registered and failing every later barrier.)"""
    return [a._data for r in live if (a := r()) is not None and a._data.value is None]


def guard(out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
    """Make the pending `out` (a gather or scatter by an index array whose values are
    pending) carry the bounds check that `flag` computes (see graph.Check)."""
    flag_node = flag._data
    check = Check(flag_node, fname, axis, size, user_line())
    node = out._data
    node.checks = (check,) if node.checks is None else node.checks + (check,)
    if node.value is not None:  # (computed at once: the graph outgrew X10ARRAY_GRAPH_LIMIT)
        materialize_nodes([flag_node], out._device)
        check.settle(flag_node.value)
        if check.error:
            raise IndexError(check.error)
        node.checks = None


def _scalar_now(
    prim: Primitive, device: Device, inputs: tuple[Any, ...], params: dict[str, Any], avals: Any
) -> Array | None:
    """A primitive on 0-d computed values, one an element (graph.ELEMENT), run now with
    its NumPy kernel as the interpreter would run it at its read (interpreter.run_single): a new
    computed array. None, to record it, where the device compiles every graph (not interpreted:
    an accelerator, a mesh, X10ARRAY_COMPILE_THRESHOLD=1), for a primitive that writes in place
    or has several results, and while x10array.compile records (the operation is part of the
    function: a replay's operands are others)."""
    if (
        prim.in_place
        or prim.multiple_results
        or RUNTIME.watching[0] is not None
        or not placement_of(device).interprets
        or settings.get("X10ARRAY_COMPILE_THRESHOLD") <= 1
    ):
        return None
    ((_, dtype),) = avals
    node = leaf(run_now(prim, [i.value if type(i) is Node else i for i in inputs], params, dtype), dtype)
    node.seq = ELEMENT
    COUNTERS.ops_recorded += 1  # (as index_now)
    return owned_array(node, FROM_NUMPY[dtype], device)


def _graph_break(prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """A primitive whose result shape depends on values (`unique`, `nonzero`): run it now
    with its NumPy kernel on the computed operands, and place the results on `device`."""
    note("graph break", prim.name)  # (the guard may refuse it: nothing is counted or run then)
    COUNTERS.graph_breaks += 1
    if RUNTIME.watching[0] is not None and (watch := RUNTIME.watched()) is not None:
        watch.breaks.append(f"{prim.name} at {user_line()}")
    placement = placement_of(device)
    placement.check_graph_break(prim, lambda: [_computed(o) for o in operands if type(o) is Array])
    bufs = [np.asarray(_computed(o)) if type(o) is Array else o for o in operands]
    if prim.in_place:
        bufs[0] = np.array(bufs[0])  # a writable copy
    if prim.moves_data:  # (no arithmetic, no floating-point error to silence: k-means' X[labels == j])
        out = prim.kernel(NUMPY, *bufs, **params)
    else:
        with np.errstate(all="ignore"):
            out = prim.kernel(NUMPY, *bufs, **params)
    outs = [np.asarray(o) for o in (out if prim.multiple_results else (out,))]
    placed = tuple(from_host(o, FROM_NUMPY[o.dtype], device, owned=True) for o in outs)
    if placement.interprets:
        # the lengths that came from values: those no operand has (see graph.VALUE_SIZED)
        known = {d for o in operands if type(o) is Array for d in o.shape}
        for a in placed:
            if sizes := frozenset(a.shape).difference(known):
                a._data.seq = VALUE_SIZED
                a._data.sizes = sizes
    return placed if prim.multiple_results else placed[0]


# -- running a graph ----------------------------------------------------------------------------


@RUNTIME.locked
def materialize_nodes(targets: list[Node], device: Device, read: bool = True) -> None:
    """Compute the pending `targets`; `read`: the caller waits for their values at once (a
    read; a barrier passes its `wait`), which the tier decision charges a compiled run
    (tiering._CostModel.run_seconds)."""
    if len(targets) == 1:  # (a read's, a graph break's: nothing to deduplicate)
        if targets[0].value is not None:
            return
    else:
        targets = [n for n in dict.fromkeys(targets) if n.value is None]
        if not targets:
            return
    interrupts.import_jax()  # (the first run imports it: with Ctrl-C held, see interrupts)
    if (watch := RUNTIME.watching[0]) is not None:  # x10array.compile is recording (capture.py)
        if watch.thread == threading.get_ident():
            watch.reads.append(user_line())  # a value needed inside the function
        else:  # another thread's barrier or read: it may compute nodes of the recording
            watch.foreign.update(targets)
    try:
        if len(targets) == 1 and placement_of(device).interprets and settings.get("X10ARRAY_COMPILE_THRESHOLD") > 1:
            value = run_single(targets[0], device)
            if value is not None:
                _adopt(targets, (value,))
                COUNTERS.interpreted_graphs += 1
                return
        _run_graph(targets, device, read)
    except MemoryError as error:  # NumPy's, from the interpreter (or ours: kept)
        if str(error).startswith("x10array:"):
            raise
        raise _out_of_memory(error, targets, device) from None
    except RuntimeError as error:  # jax's JaxRuntimeError, from a compiled run
        if not str(error).startswith("RESOURCE_EXHAUSTED"):
            raise
        raise _out_of_memory(error, targets, device) from None


def _run_graph(targets: list[Node], device: Device, read: bool = True) -> None:
    """Compute the pending graph behind `targets` (interpreted or compiled, see the package's
    docstring) and hand its outputs over with _run_and_adopt. IndexError when one of them
    depends on an index array found out of bounds (see graph.Check): the others are computed."""
    requested = None
    if any(map(_checks_of, targets)):
        requested, targets = targets, _bounds_targets(targets)
    # (a structure seen before is run from its plan; bounds-checked targets are always walked)
    traced, program = barrier_program(targets, device, plans=requested is None)
    if program.interprets():  # cold, or not yet worth a compile: run it op by op
        # (handed over as a donating run's: a write may have taken a leaf's buffer, interpreter.interpret)
        _run_and_adopt(targets, any(program.key.donate), program.interpret, traced, targets, device, read)
        COUNTERS.interpreted_graphs += 1
    elif program.runs_op_by_op():  # an accelerator's cold graph: op by op on the device, nothing donated
        _run_and_adopt(targets, False, run_on_device, traced, targets, device)
        COUNTERS.interpreted_graphs += 1
    else:
        first = program.compiled is None  # (its compile dominates: no poll, and no miss counted)
        run_compiled(program, traced, targets, device)
        if read and not first:
            await_read(program, targets[0].value)
    if requested is not None:
        _raise_failed(requested)


# A read of a compiled run's result waits for XLA's CPU runtime, which runs the program on a
# worker thread and wakes the reader when it is done. Waking a thread that sleeps costs tens of
# microseconds, as much as a small program runs (the logistic loss and gradient of 2000 x 50 in
# jax alone, called and read, takes about half the time when the reader first polls).
# So a read polls for up to READ_SPIN seconds before it sleeps,
# for a program whose reads mostly finished within it: one whose results missed it
# SPIN_MISSES times more than they were caught sleeps at once from then on (its runs take
# longer; a poll would only take a core from them). Not on a single core, where the poll would
# hold up the very thread it waits for.
READ_SPIN = 1e-4 if cores() > 1 else 0.0
SPIN_MISSES = 4


def await_read(program: Program, value: Any) -> None:
    """Before a read of `value`, a result of `program`'s compiled run just dispatched: poll it
    for up to READ_SPIN seconds (see above); the caller's read then finds it ready, or sleeps."""
    misses = program.spin_misses
    spin = READ_SPIN
    if not spin or misses >= SPIN_MISSES or (is_ready := getattr(value, "is_ready", None)) is None or is_ready():
        return
    clock = time.perf_counter
    end = clock() + spin
    while not is_ready():
        if clock() > end:
            program.spin_misses = misses + 1
            return
    if misses:
        program.spin_misses = misses - 1


def run_compiled(
    program: Program,
    traced: Traced,
    targets: list[Node],
    device: Device,
    *,
    copy_donated: bool = False,
    scalars: Any = None,
) -> None:
    """Run the graph compiled (its first compiled run compiles it) and hand its outputs over.
    x10array.compile's first run (capture.end) passes `copy_donated` (the program consumes
    copies: the recording's values stay as they were, the caller may hold them) and its
    program's `scalars` (see capture.ScalarPlan); a barrier's are the graph's own."""
    key = program.key
    compiled = program.compiled
    first = compiled is None
    leaf_values = [n.value for n in traced.leaves]
    # (kept in the cache only once it has run: a compile that fails is tried again next time)
    if first:
        program.agree()  # (a mesh: every process must be building this same program)
        compiled = program.callable(leaf_values)
    # (timed from here: a compiled run's placing of its leaves is part of what it costs against
    # an interpreted run, which reads them where they are; a NumPy view leaf, `pts[:, 0]`, is
    # placed again at every run, see _CostModel.place_seconds; Program.ran_compiled compares it)
    start = time.perf_counter()
    if _ndarray in map(type, leaf_values):  # (a repeated step's leaves are all placed: one C-level pass)
        _place_leaves(traced.leaves, leaf_values, device)
    donated = list(compress(leaf_values, key.donate))
    kept = list(compress(leaf_values, program.keeps))
    del leaf_values
    if copy_donated:
        import jax

        with jax.enable_x64(True):
            donated = [v.copy() for v in donated]
    placement = placement_of(device)
    if scalars is None:  # a barrier's: its floats and ints packed (lowering.PackedScalars)
        packing = program.packing
        scalars = traced.scalars if packing is None else packing.placed_pack(traced.scalars, placement.place_scalars)
    loaded = False
    if first:
        import jax

        with jax.enable_x64(True), jax.default_device(device.jax_device):
            counts = compile_cache.thread_counts()
            with warnings.catch_warnings(), compile_cache.scope():
                # XLA may decline a donation (no output to alias): memory, not correctness
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
                if donated:
                    _check_memory(compiled, donated, kept, scalars, len(traced.calls), device)
                _run_and_adopt(targets, bool(donated), compiled, donated, kept, scalars, first=True)
            loads, writes = compile_cache.thread_counts()
            loaded = loads > counts[0] and writes == counts[1]  # served from the disk, not compiled
        program.compiled = compiled
    else:
        free, (x64, on_device) = RUNTIME.scope(device)
        try:
            with x64, on_device:
                _run_and_adopt(targets, bool(donated), compiled, donated, kept, scalars)
        finally:
            free.append((x64, on_device))
        if program.compiled_runs < FEEDBACK_RUNS and program.measures():
            # (the feedback times a few runs to their end: Program.ran_compiled)
            for n in targets:
                if hasattr(n.value, "block_until_ready"):
                    n.value.block_until_ready()
    elapsed = time.perf_counter() - start
    placement.launched(targets)  # (a CPU mesh bounds the programs in flight)
    count_compiled_run(program, key, first, elapsed, len(donated), loaded)


def _place_leaves(leaves: list[Node], leaf_values: list[Any], device: Device) -> None:
    """Before a compiled run: its leaves' interpreted (NumPy) values placed on the device, in
    `leaf_values`; a node's own value is replaced by the placed one (placed once, then reused),
    unless the host may write its buffer (host_buffer: a copy, placed at each run)."""
    import jax

    with jax.enable_x64(True):
        for i, node in enumerate(leaves):
            if type(node.value) is np.ndarray:
                if node.host:
                    leaf_values[i] = jax_put(node.value.copy(), device.jax_device)
                else:
                    node.value = leaf_values[i] = jax_put(node.value, device.jax_device)


def _run_and_adopt(targets: list[Node], donating: bool, run: Any, *args: Any, first: bool = False) -> None:
    """Run a graph, `run(*args)` (the outputs of `targets`, in order), and give each target
    its value: the one place where pending nodes become materialized, and its invariant is
    that *a failed run loses nothing*. A node drops its graph only when it receives its
    value, so if `run` raises (a compile error, a kernel, out of memory, an interrupt) every
    target stays pending and can be computed again: its graph and its input buffers are
    untouched (jax raises before it donates when a trace or a compile fails; an allocation
    that cannot succeed is refused before the run by _check_memory).

    Donation is the exception: a compiled run that donates its inputs consumes them, and its
    outputs are then the only copy of those values, so once it has run they must reach their
    nodes whatever happens, a KeyboardInterrupt included (Python raises it at the first check
    after a call returns, which would drop the call's result). So, when `donating`, the
    run's result is stored by C code (`out.extend(map(...))`: no check between the return
    and the store), and if anything interrupts the hand-over it is completed before the
    exception goes on. That covers a cached program, which jax runs in C++ without entering
    Python code (a test checks this). A program's first run (`first`), and a run through a
    Python function of ours (a mesh run checked across processes), go through Python code
    after the run, so there every Python signal handler (Ctrl-C's, a custom one, a SIGALRM
    timeout that raises) is deferred until the hand-over is done (`deferred_signals`: in the
    main thread, where Python runs them; a system call per handler each way, too slow for
    every run). Without donation an interrupted hand-over leaves some targets
    materialized and the others pending, which is as good: every value is still there."""
    if not donating:
        _adopt(targets, run(*args))
        return
    # (a Python function: a mesh run checked across processes, spmd.checked_runs)
    deferred = deferred_signals() if first or type(run) is _FunctionType else None
    out: list[tuple[Any, ...]] = []
    try:
        out.extend(map(run, *zip(args)))  # run(*args), its result stored by C code
        _adopt(targets, out[0])
    except BaseException:
        if out:
            _adopt(targets, out[0])  # the run finished: hand its outputs over, then raise
        raise
    finally:
        if deferred is not None:
            deferred.close()


def _adopt(targets: list[Node], results: tuple[Any, ...]) -> None:
    """Give pending nodes their values (see _run_and_adopt; _adopt_checked when some carry
    bounds checks)."""
    for node in targets:
        if node.checks:
            _adopt_checked(targets, results)
            return
    for node, value in zip(targets, results):
        node.value = value
        node.call = None  # drop the graph: its inputs can be freed


_FunctionType = types.FunctionType
_ndarray = np.ndarray
_checks_of = attrgetter("checks")


# -- bounds checks (see graph.Check) ------------------------------------------------------------


def _bounds_targets(requested: list[Node]) -> list[Node]:
    """The targets of a run whose requested targets carry bounds checks (see graph.Check):
    those not known to fail, plus the flags of the checks still unknown. IndexError when none
    is left to run."""
    targets: list[Node] = []
    flags: dict[int, Node] = {}
    for n in requested:
        for c in n.checks or ():
            if c.error is None and c.flag is not None and c.flag.value is not None:  # (computed by an earlier run)
                c.settle(c.flag.value)
        if _known_error(n):
            continue
        targets.append(n)
        for c in n.checks or ():
            if c.error is None and c.flag is not None:  # (the flag is set while the error is unknown)
                flags[id(c.flag)] = c.flag
    if not targets:
        _raise_failed(requested)
    return targets + list(flags.values())


def _raise_failed(requested: list[Node]) -> None:
    """IndexError for the requested targets that depend on an index out of bounds, if any."""
    failed = [e for n in requested if n.value is None and (e := _known_error(n))]
    if failed:
        raise IndexError(failed[0] if len(failed) == 1 else f"{failed[0]} (and {len(failed) - 1} more)")


def _adopt_checked(targets: list[Node], results: tuple[Any, ...]) -> None:
    """_adopt for a run with bounds checks: settle the checks whose flags it computed, then
    give a value only to the targets whose indices were in bounds (the others stay pending,
    and raise whenever they are read)."""
    flags = {id(c.flag): c for n in targets for c in n.checks or () if c.error is None}
    for node, value in zip(targets, results):
        check = flags.get(id(node))
        if check is not None:
            check.settle(value)
    for node, value in zip(targets, results):
        if node.checks:
            if _known_error(node) or any(c.error is None for c in node.checks):  # (None: cannot happen)
                continue
            node.checks = None
        node.value = value
        node.call = None


def _known_error(node: Node) -> str:
    """The message of a failed bounds check that `node` depends on, or ""."""
    for c in node.checks or ():
        if c.error:
            return c.error
    return ""


# -- out of memory ------------------------------------------------------------------------------


def _check_memory(
    compiled: Any, donated: list[Any], kept: list[Any], scalars: list[Any], n_ops: int, device: Device
) -> None:
    """Before a program's first run with donated inputs: refuse (MemoryError) a program whose
    outputs and temporaries need more memory than the device has. XLA would fail to
    allocate them only after it has taken the donated buffers (jax deletes them), and the
    values in them would be lost; refused now, nothing has been run or donated. (The
    compile is jax's: the run that follows reuses it.)"""
    fn: Any  # a jax.jit function (its `lower` is jax's AOT API)
    fn, lead = (compiled.func, compiled.args) if isinstance(compiled, functools.partial) else (compiled, ())
    try:
        stats = fn.lower(*lead, donated, kept, scalars).compile().memory_analysis()
    except MemoryError:
        raise
    except Exception:  # no analysis on this backend: let the run decide
        return
    if stats is None:
        return
    needed = stats.output_size_in_bytes + stats.temp_size_in_bytes - stats.alias_size_in_bytes
    if needed > _device_memory(device):
        raise MemoryError(_oom_text(needed, n_ops, device))


def _device_memory(device: Device) -> int:
    """The most memory a device can give a program: an accelerator's limit, or the host's
    memory and swap."""
    found = _DEVICE_MEMORY.get(device)
    if found is None:
        found = 0
        if device.kind is not DeviceKind.CPU:
            try:
                found = int((device.jax_device.memory_stats() or {}).get("bytes_limit", 0))
            except Exception:
                found = 0
        if not found:
            found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            try:
                with open("/proc/meminfo") as f:
                    for line in f:
                        if line.startswith("SwapTotal:"):
                            found += int(line.split()[1]) * 1024
            except OSError:
                pass
        _DEVICE_MEMORY[device] = found
    return found


_DEVICE_MEMORY: dict[Device, int] = {}


def _out_of_memory(error: BaseException, targets: list[Node], device: Device) -> MemoryError:
    """One MemoryError for both tiers (NumPy's from the interpreter, XLA's RESOURCE_EXHAUSTED
    status from a compiled run), with the size asked for and the graph's size."""
    asked = None
    shape, dtype = getattr(error, "shape", None), getattr(error, "dtype", None)
    if shape is not None and dtype is not None:  # NumPy's _ArrayMemoryError
        asked = math.prod(shape) * np.dtype(dtype).itemsize
    else:
        found = re.search(r"allocat\w* (\d+) bytes", str(error))
        if found:
            asked = int(found.group(1))
    seen: set[int] = set()
    n_ops = sum(graph_size(n.call, 1 << 62, seen) for n in targets if n.call is not None)
    return MemoryError(_oom_text(asked, n_ops, device))


def _oom_text(asked: int | None, n_ops: int, device: Device) -> str:
    size = "memory" if asked is None else f"{asked:,} bytes ({_human_bytes(asked)})"
    return (
        f"x10array: out of memory running a lazy graph of {n_ops} operations on "
        f"{device.kind.name.lower()}:{device.ordinal}:xla: "
        f"could not allocate {size}; the pending arrays are kept (delete what you do not need, "
        "or compute in smaller pieces)"
    )


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} EiB"
