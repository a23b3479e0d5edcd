"""The lazy XLA backend: record, then compile and run whole graphs (the X10 backend).

Life of a lazy array (the `_data` of an `Array` on an XLA device is always a `Node`):

- *pending*: `node.call` is the recipe (a primitive, its parameters, its input nodes and
  Python scalars); `node.value` is None. Recording is cheap: output shapes and dtypes come from
  a cache keyed by (primitive, parameters, input shapes/dtypes), filled by abstract evaluation
  of the primitive's lowering.
- *materialized*: `node.value` holds a device buffer (a jax array) and `node.call` is dropped,
  so the graph behind it can be freed. Later graphs that use the node read it as an input.

Materialization happens when a value is needed (`_host`, which `bool()`, `float()`,
printing, `__array__`, `__dlpack__` and device copies go through) or at `lazy_barrier()`.
A graph is keyed by its structure (primitives, parameters, wiring, input shapes and dtypes,
the device); Python scalars are inputs, not constants, so changing one does not recompile.
The first time a structure is seen it is *interpreted* (each primitive through the eager
kernels). From its `X10ARRAY_COMPILE_THRESHOLD`-th sighting on (default 2; 1 compiles every
graph at once) it is compiled with XLA as soon as compiling has paid for itself: when the
estimated cost of interpreting it so far reaches `X10ARRAY_COMPILE_PAYBACK` (default 0.5) times
the estimated cost of its compile (ski rental: rent until renting has cost a share of buying).
Both are estimates from the graph's operations and sizes by a fixed cost model (_CostModel),
never measured time, so a script takes the same tiers at the same points on every run and gives
the same numbers. So a training step, whose interpretation costs milliseconds, compiles within
its first steps, while a cheap graph that a scikit-learn fit runs a dozen times does not spend
more on compiling than the fit takes. The tiers agree within the bounds that
docs/eager-and-lazy.md states (the interpreter reproduces XLA's flushing of subnormals, see
_flush). Compiled programs live in an LRU cache.

Operations whose output shape depends on values (`dynamic_shape` primitives) materialize their
inputs, run eagerly and continue lazily from the result (a counted graph break).

Faults lose nothing: a run that raises (a kernel, a failed compile, out of memory, Ctrl-C)
leaves its targets pending, with their graphs and input buffers, and `lazy_barrier` keeps them
registered, so a read or the next barrier computes them again (see _run_and_adopt, which
also keeps donation safe). Out of memory is one MemoryError on both tiers (_out_of_memory).

A gather or scatter by an index array whose values are pending carries a bounds check (see
`Check`): a flag computed in the same run, after which every value that depends on an
out-of-bounds index stays unadopted and raises IndexError when read; the others are adopted.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
import re
import signal as _signal
import sys
import threading
import time
import warnings
import weakref
from typing import Any

import numpy as np

from ..._core import metrics as _metrics
from ..._core import settings
from ..._core.array import Array
from ..._core.backend import register
from ..._core.devices import Backend, Device, DeviceKind
from ..._core.dtypes import FROM_NUMPY, DType
from ..._core.kernels import NUMPY, ROUNDING_GUARD, jax_namespace, jax_operand
from ..._core.lru import LRU, release_jax_traces, tick
from ..._core.metrics import COUNTERS, LOCK
from ..._core.policies import COST_LIBRARY, GRAPH_REWRITES
from ..._core.primitive import Primitive, params_key

__all__ = ["barrier", "from_host", "materialize"]


COMPILE_THRESHOLD = settings.get("X10ARRAY_COMPILE_THRESHOLD")
COMPILE_PAYBACK = settings.get("X10ARRAY_COMPILE_PAYBACK")
CACHE_SIZE = settings.get("X10ARRAY_CACHE_SIZE")
GRAPH_LIMIT = settings.get("X10ARRAY_GRAPH_LIMIT")
DONATE = settings.get("X10ARRAY_DONATE")
NEVER = 2**62  # a compile threshold no graph reaches: see compile_threshold


@contextlib.contextmanager
def compile_threshold(n: int | None) -> Any:
    """Choose the tier inside a `with` block (for tests and fuzzers; not thread-safe): `n=1`
    compiles every graph at its first sighting (as X10ARRAY_COMPILE_THRESHOLD=1 does), another
    `n` is the threshold of the cost rule (see _compile_pays), and `None` interprets every
    graph, even one compiled before. The previous setting comes back on exit."""
    global COMPILE_THRESHOLD
    if n is not None and (type(n) is not int or n < 1):
        raise ValueError(f"compile_threshold: expected None or a positive int, got {n!r}")
    old = COMPILE_THRESHOLD
    COMPILE_THRESHOLD = NEVER if n is None else n
    try:
        yield
    finally:
        COMPILE_THRESHOLD = old


# Bounds of the shape/dtype caches (entries; see _lru): a recorded operation's key is
# (primitive, parameters, input shapes/dtypes), so a run meeting ever-new shapes adds entries.
SHAPE_CACHE_SIZE = settings.get("X10ARRAY_SHAPE_CACHE_SIZE")
DTYPE_CACHE_SIZE = settings.get("X10ARRAY_DTYPE_CACHE_SIZE")


class Call:
    """One recorded primitive application (may have several outputs)."""

    __slots__ = ("prim", "params", "key_params", "inputs", "device", "outputs", "__weakref__")

    def __init__(self, prim: Primitive, params: dict[str, Any], key_params: tuple, inputs: tuple, device: Device):
        self.prim = prim
        self.params = params
        self.key_params = key_params
        self.inputs = inputs  # Nodes and Python scalars (or None)
        self.device = device
        self.outputs: tuple[weakref.ref[Node], ...] = ()  # of a multiple-results call only


class Node:
    """One lazy value: pending (`call` set) or materialized (`value` set)."""

    __slots__ = (
        "call", "index", "shape", "dtype", "value", "size", "exported", "owner", "clean", "checks", "__weakref__",
    )  # fmt: skip

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
        self.owner: Any = None  # weak reference to the array made with this node
        self.clean = False  # its value is known to hold no subnormal (see _flush)
        # the bounds checks of the index arrays it was computed from (pending ones: see Check)
        self.checks = checks


class Check:
    """A bounds check of an index array whose values were pending when a gather or scatter
    was recorded (`x[i]`, `take(x, i)`, `z[i] = v`, ...). `flag` is a pending node computed
    beside the graph (`_indexing.INDEX_BOUNDS`: whether an entry is out of bounds, and the
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


def guard(out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
    """Make the pending `out` (a gather or scatter by an index array whose values are
    pending) carry the bounds check that `flag` computes (see Check)."""
    check = Check(flag._data, fname, axis, size, _user_line())
    node = out._data
    node.checks = (check,) if node.checks is None else node.checks + (check,)
    if node.value is not None:  # (computed at once: the graph outgrew X10ARRAY_GRAPH_LIMIT)
        _materialize_nodes([check.flag], out._device)
        check.settle(check.flag.value)
        if check.error:
            raise IndexError(check.error)
        node.checks = None


# (primitive, parameters, input avals) -> output avals; when it evicts (a batch at a time),
# jax's own traces of those shapes go too (see _lru.release_jax_traces)
_avals = LRU("lazy shapes", SHAPE_CACHE_SIZE, batch=SHAPE_CACHE_SIZE // 8, on_evict=lambda _: release_jax_traces())
_avals_entries = _avals.entries
# live pending arrays, per device, for the barrier
_live: dict[Device, list[weakref.ref[Array]]] = collections.defaultdict(list)
_PRUNE_AT = [4096]

# Threads (docs/eager-and-lazy.md, "Threads"): the lazy backend's lock, one for all lazy
# devices, reentrant. Held while a graph is traced, run and its results stored
# (_materialize_nodes: so the caches of compiled programs, the compile-cost model and a
# program's counts are only touched under it), while a barrier takes a live list or a live
# list is pruned, and while a recording reads the graph beyond its own operands (a fold
# reading producers, counting a graph's size). Recording otherwise takes no lock: under the
# GIL it makes new nodes and appends to a live list, each atomic, and a node it reads turns
# from pending to materialized at most once (`value` set before `call` is dropped), which it
# sees either way. Holding the lock while a graph runs keeps the donation of its inputs,
# decided by reference counts, from racing with a recording taking a new reference to one.
_LOCK = LOCK  # (metrics() snapshots take it too: counters change under it)


def _locked(fn: Any) -> Any:
    """`fn`, run holding the lazy backend's lock."""

    def locked(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return fn(*args, **kwargs)

    locked.__name__ = locked.__qualname__ = fn.__name__
    locked.__doc__ = fn.__doc__
    locked.__wrapped__ = fn  # type: ignore[attr-defined]
    return locked


def _out_avals(prim: Primitive, params: dict[str, Any], key: tuple, inputs: tuple) -> tuple:
    entry = _avals_entries.get(key)  # _avals.get inlined: one lookup per recorded operation
    if entry is not None:
        entry[1] = tick()
        return entry[0]
    if prim.elementwise:
        # shape: the broadcast of the operands'; dtype: derived once per dtype combination
        dtype_key = (prim, key[1], tuple(i.dtype if type(i) is Node else type(i) for i in inputs))
        dtype = _elementwise_dtypes.get(dtype_key)
        if dtype is None:
            dtype = _elementwise_dtypes.put(dtype_key, _elementwise_dtype(prim, params, inputs))
        shape = np.broadcast_shapes(*(i.shape for i in inputs if type(i) is Node))
        found = ((tuple(shape), dtype),)
    else:
        found = _abstract(prim, params, inputs)
    return _avals.put(key, found)


def _elementwise_dtype(prim: Primitive, params: dict[str, Any], inputs: tuple) -> Any:
    """The result dtype of an elementwise primitive: its NumPy kernel on 0-d operands (tens
    of microseconds, where jax's abstract evaluation takes about a millisecond, the bulk of a
    cold graph's recording). The eager device's dtypes come from the same kernel, and the op
    table's tests check that the XLA lowering agrees; jax decides if NumPy cannot."""
    zero_d = tuple(np.zeros((), i.dtype) if type(i) is Node else i for i in inputs)
    try:
        with np.errstate(all="ignore"):
            out = prim.kernel(NUMPY, *zero_d, **params)
        return np.asarray(out).dtype
    except Exception:
        return _abstract(prim, params, tuple(_ZeroD(i.dtype) if type(i) is Node else i for i in inputs))[0][1]


class _ZeroD:
    """A 0-d stand-in of a given dtype, for deriving an elementwise primitive's dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, dtype: Any):
        self.shape = ()
        self.dtype = dtype


_elementwise_dtypes = LRU("lazy elementwise dtypes", DTYPE_CACHE_SIZE)


def _abstract(prim: Primitive, params: dict[str, Any], inputs: tuple) -> tuple:
    """Output (shape, dtype)s by abstract evaluation of the lowering (jax.eval_shape)."""
    import jax

    k = jax_namespace()
    specs = [jax.ShapeDtypeStruct(i.shape, i.dtype) if type(i) in (Node, _ZeroD) else i for i in inputs]
    with jax.enable_x64(True):
        if prim.rule is not None:
            out = prim.rule(*specs, **params)
        else:
            out = jax.eval_shape(lambda *a: prim.lowering(k, *a, **params), *specs)
    outs = out if prim.multiple_results else (out,)
    return tuple((tuple(o.shape), np.dtype(o.dtype)) for o in outs)


class LazyBackend:
    """What `bind` calls for XLA devices: record a node (or break the graph)."""

    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if prim.dynamic_shape:
            return _graph_break(prim, device, operands, params)
        inputs = tuple([o._data if type(o) is Array else jax_operand(o) for o in operands])
        if prim in GRAPH_REWRITES.rules:
            with _LOCK:  # it may take the producers' operands: not while a graph runs (see _LOCK)
                producers = [
                    (c.prim, c.params, c.inputs) if type(i) is Node and (c := i.call) is not None else None
                    for i in inputs
                ]
                folded = GRAPH_REWRITES.rules[prim](inputs, producers, params)
            if folded is not None:
                inputs, params = folded
        key_params = params_key(params)
        key = (prim, key_params, tuple([(i.shape, i.dtype) if type(i) is Node else type(i) for i in inputs]))
        avals = _out_avals(prim, params, key, inputs)
        size = 1
        checks = None
        for i in inputs:
            if type(i) is Node and i.call is not None:
                size += i.size
                if i.checks is not None:
                    checks = i.checks if checks is None else _merge_checks(checks, i.checks)
        call = Call(prim, params, key_params, inputs, device)
        if size > GRAPH_LIMIT:
            # The sum counts a value used twice twice (it doubles with each reuse, as in
            # an EM or optimizer loop, or writes through a view): count the distinct
            # operations before judging, but not at every operation (a count walks the
            # graph): until GRAPH_LIMIT / 10 more operations are recorded, assume the limit
            # (so a graph that outgrows it is caught at most that many operations late).
            since = COUNTERS.ops_recorded - _last_count[0]  # negative after reset_metrics()
            if not 0 <= since < max(1, GRAPH_LIMIT // 10):
                _last_count[0] = COUNTERS.ops_recorded
                with _LOCK:  # the walk reads other nodes' calls
                    size = _graph_size(call, GRAPH_LIMIT + 1)
            else:
                size = GRAPH_LIMIT
        COUNTERS.ops_recorded += 1
        last = _last_live[0]
        live = last[1] if last[0] is device else _live_list(device)
        if len(live) > _PRUNE_AT[0]:
            _prune(live)
        outs = []
        for index, (shape, dtype) in enumerate(avals):
            node = Node(call, index, shape, dtype, None, size, checks)
            arr = Array._new(node, FROM_NUMPY[dtype], device)
            node.owner = ref = _ref(arr)
            live.append(ref)
            outs.append(arr)
        if prim.multiple_results:
            call.outputs = tuple(_ref(a._data) for a in outs)
        if size > GRAPH_LIMIT:
            COUNTERS.guard_materializations += 1
            level, filename, lineno = _user_location()
            warnings.warn(
                f"x10array: a pending lazy graph grew past {GRAPH_LIMIT} operations (recorded at "
                f"{filename}:{lineno}) and was run now; call x10array.lazy_barrier() once per step "
                "(or raise X10ARRAY_GRAPH_LIMIT)",
                RuntimeWarning,
                stacklevel=level,
            )
            _materialize_nodes([a._data for a in outs], device)
        return tuple(outs) if prim.multiple_results else outs[0]

    def adopt(self, target: Array) -> None:
        """`target` was rebound to a pending value (`x += 1`, `x[i] = v`): it is that value's
        owner now, so the barrier computes it and graphs that use it keep it."""
        node = target._data
        if node.value is None:
            node.owner = ref = _ref(target)
            last = _last_live[0]
            live = last[1] if last[0] is target._device else _live_list(target._device)
            live.append(ref)

    def place(self, host: np.ndarray, dtype: DType, device: Device, *, shared: bool) -> Array:
        return from_host(host, dtype, device, owned=not shared)

    def read(self, x: Array) -> np.ndarray:
        data = materialize(x)
        if type(data) is np.ndarray:  # a value kept in host memory: seen read-only, like a
            view = data.view()  # device buffer's host view, so it cannot be written through
            view.flags.writeable = False
            return view
        return np.asarray(data)

    def buffer(self, x: Array) -> Any:
        return materialize(x)

    def known(self, x: Array) -> np.ndarray | None:
        value = x._data.value
        return None if value is None else np.asarray(value)

    def guard(self, out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
        guard(out, flag, fname, axis, size)

    def barrier(self, devices: list[Device] | None, wait: bool) -> None:
        barrier(list(_live) if devices is None else devices, wait)


_ref = weakref.ref
_last_count: list[int] = [-(2**62)]  # COUNTERS.ops_recorded at the last exact graph count
# [(device, its live list)]: most ops go to the last device (one tuple: threads read it whole)
_last_live: list[tuple[Any, Any]] = [(None, None)]


def _live_list(device: Device) -> list[weakref.ref[Array]]:
    live = _live.get(device)
    if live is None:
        with _LOCK:  # two threads must not each make a list for a new device
            live = _live[device]
    _last_live[0] = (device, live)
    return live


def _graph_size(call: Call, cap: int, seen: set[int] | None = None) -> int:
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


@_locked
def _prune(live: list[weakref.ref[Array]]) -> None:
    """Forget dead or materialized arrays (the list only grows between barriers). Other
    threads may append meanwhile: only the part read is replaced (one atomic slice
    assignment), so their appends are kept."""
    n = len(live)
    live[:n] = [r for r in live[:n] if (a := r()) is not None and a._data.value is None]
    _PRUNE_AT[0] = max(4096, 2 * len(live))


def _graph_break(prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """A primitive whose result shape depends on values (`unique`, `nonzero`): run it now
    with its NumPy kernel on the computed operands, and place the results on `device`."""
    COUNTERS.graph_breaks += 1
    bufs = [np.asarray(materialize(o)) if type(o) is Array else o for o in operands]
    if prim.in_place:
        bufs[0] = np.array(bufs[0])  # a writable copy
    with np.errstate(all="ignore"):
        out = prim.kernel(NUMPY, *bufs, **params)
    outs = [np.asarray(o) for o in (out if prim.multiple_results else (out,))]
    placed = tuple(from_host(o, FROM_NUMPY[o.dtype], device, owned=True) for o in outs)
    return placed if prim.multiple_results else placed[0]


def _leaf(buffer: Any, dtype: Any) -> Node:
    return Node(None, 0, tuple(buffer.shape), np.dtype(dtype), buffer, 0)


def from_host(host: np.ndarray, dtype: DType, device: Device, owned: bool = False) -> Array:
    """Place a host array on a lazy device (materialized at once: a transfer, not a graph).

    On the CPU the host buffer is the device's memory, as for the interpreter's results: it
    is kept as it is (copied unless `owned`: nobody else may write it), and placed with jax
    only when a compiled program reads it (see _materialize_nodes)."""
    COUNTERS.transfers_to_device += 1
    if device.kind is DeviceKind.CPU:
        return Array._new(_leaf(_owned(host if owned else host.copy(), host.dtype), host.dtype), dtype, device)
    import jax

    with jax.enable_x64(True):
        buf = jax.device_put(host, device.jax_device)
    return Array._new(_leaf(buf, host.dtype), dtype, device)


def materialize(x: Array) -> Any:
    """The device buffer of a lazy array, computing its pending graph if needed."""
    node = x._data
    if node.value is None:
        _materialize_nodes([node], x._device)
    COUNTERS.transfers_to_host += 1
    node.exported = True
    return node.value


def barrier(devices: list[Device], wait: bool) -> None:
    """Materialize every live pending array on `devices` in one program per device, so work
    they share is computed once (the seed's `LazyTensorBarrier()`); block until done if
    `wait`."""
    COUNTERS.barriers += 1
    for device in devices:
        if not device.is_lazy:
            continue
        live = _live.get(device)
        if not live:
            continue
        with _LOCK:
            # What other threads record meanwhile is appended after the part taken, and kept
            # for the next barrier (each slice operation is atomic).
            taken = live[:]
            del live[: len(taken)]
            try:
                nodes = _pending_nodes(taken)
                if nodes:
                    _materialize_nodes(nodes, device)
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


# -- running a graph --------------------------------------------------------------------------


class _Program:
    """A graph's structure: what to run, independent of the values."""

    __slots__ = ("calls", "outputs", "n_leaves", "seen", "interpret_cost", "interpreted", "compiled", "key")

    def __init__(self, calls: list, outputs: list, n_leaves: int, key: tuple, interpret_cost: float = 0.0):
        self.calls = calls  # [(prim, params, input refs)]
        self.outputs = outputs  # [(call index, output index)]
        self.n_leaves = n_leaves
        self.seen = 0
        self.interpret_cost = interpret_cost  # estimated seconds of one interpreted run (COST)
        self.interpreted = 0.0  # the estimated cost of its interpreted runs so far
        self.compiled: Any = None
        self.key = key


def _evicted_programs(evicted: list[tuple[tuple, _Program]]) -> None:
    """A program left the cache: its executable goes with it (the program holds the only
    reference), and so does what jax kept from tracing and lowering it."""
    if any(program.compiled is not None for _, program in evicted):
        release_jax_traces()


# graph key -> program (LRU, X10ARRAY_CACHE_SIZE)
_programs = LRU("lazy programs", CACHE_SIZE, on_evict=_evicted_programs)


def _trace(targets: list[Node], device: Device) -> tuple[tuple, list, list, list, list]:
    """Walk the pending graph behind `targets`: its structural key, the calls in topological
    order, the leaf buffers and scalars it reads, and where the targets are.

    Pending values inside the graph that an array still holds join `targets` (in place): they
    are computed anyway, and kept, so that reading them later does not compute them again
    (`y = f(x)` then `float(y[0])`, `float(y[1])`, ... runs `f` once). So do the held
    outputs of a multiple-results call in the graph (`u, s, vh = svd(x)` then `float(s[0])`
    computes `u` and `vh` too, instead of the SVD again later)."""
    target_ids = {id(n) for n in targets}
    order: list[Call] = []
    call_ids: dict[int, int] = {}
    leaves: list[Any] = []
    leaf_ids: dict[int, int] = {}
    leaf_uses: list[int] = []
    scalars: list[Any] = []
    described: list[tuple] = []

    def ref(i: Any) -> tuple:
        if type(i) is Node:
            if i.value is not None:
                lid = leaf_ids.get(id(i))
                if lid is None:
                    lid = leaf_ids[id(i)] = len(leaves)
                    leaves.append(i)
                    leaf_uses.append(0)
                leaf_uses[lid] += 1
                return ("l", lid)
            _join_if_held(i, target_ids, targets)
            return ("c", call_ids[id(i.call)], i.index)
        if i is None:
            return ("none",)
        scalars.append(i)
        return ("s", len(scalars) - 1, type(i))

    # iterative post-order DFS over calls
    stack: list[tuple[Call, bool]] = [(n.call, False) for n in reversed(targets) if n.value is None]
    while stack:
        call, expanded = stack.pop()
        if id(call) in call_ids:
            continue
        if expanded:
            refs = tuple(ref(i) for i in call.inputs)
            call_ids[id(call)] = len(order)
            order.append(call)
            described.append((call.prim, call.key_params, refs))
            for sibling_ref in call.outputs:
                _join_if_held(sibling_ref(), target_ids, targets)
            continue
        stack.append((call, True))
        for i in call.inputs:
            if type(i) is Node and i.value is None and id(i.call) not in call_ids:
                stack.append((i.call, False))
    i = call = None  # the loop variables must not hold a reference during the count below
    _join_shared_with_pending(order, target_ids, targets)
    outputs = [(call_ids[id(n.call)], n.index) for n in targets if n.value is None]
    leaf_avals = tuple((n.shape, n.dtype) for n in leaves)
    key = (device, tuple(described), tuple(outputs), leaf_avals)
    return key, order, leaves, leaf_uses, scalars, outputs


def _pending_uses(calls: list[Call]) -> dict[int, list]:
    """id(pending node) -> [node, how many times the calls read it]. (The loop variables die
    with this frame: callers compare reference counts with these uses.)"""
    uses: dict[int, list] = {}
    for c in calls:
        for n in c.inputs:
            if type(n) is Node and n.value is None:
                entry = uses.get(id(n))
                if entry is None:
                    uses[id(n)] = [n, 1]
                else:
                    entry[1] += 1
    return uses


def _join_shared_with_pending(order: list[Call], target_ids: set[int], targets: list[Node]) -> None:
    """Make the pending values of the graph that pending work outside it also reads (a value
    `b = f(a)` holds, when the graph computes `a` for another target) outputs too: the later
    graph then reads them instead of computing them again. Found by reference count: more
    references than the graph's own uses."""
    uses = _pending_uses(order)
    for key, entry in uses.items():
        # references: the graph's uses, `entry`, and getrefcount's argument
        if key not in target_ids and sys.getrefcount(entry[0]) > entry[1] + 2:
            target_ids.add(key)
            targets.append(entry[0])


def _join_if_held(node: Node | None, target_ids: set[int], targets: list[Node]) -> None:
    """Make a pending node that an array still holds one of the graph's outputs."""
    if node is None or node.value is not None or id(node) in target_ids:
        return
    owner = node.owner() if node.owner is not None else None
    if owner is not None and owner._data is node:
        target_ids.add(id(node))
        targets.append(node)


def _rerun_leaves(calls: list[Call], targets: list[Node]) -> set[int]:
    """ids of the leaves that a later graph may read again: those behind an intermediate value
    of this graph that is still held outside it (by an array, or by a pending call that is not
    part of this run), since that value stays pending and will be recomputed from them."""
    uses = _pending_uses(calls)
    target_ids = {id(n) for n in targets}
    known = collections.Counter(id(t.call) for t in targets)  # output nodes of each call we know
    held: set[int] = set()  # calls with an output still held outside this graph
    for key, entry in uses.items():
        if key not in target_ids:
            known[id(entry[0].call)] += 1
            # references: the graph's uses, `entry`, and getrefcount's argument
            if sys.getrefcount(entry[0]) > entry[1] + 2:
                held.add(id(entry[0].call))
    for c in calls:
        # references: `calls`, `c`, getrefcount's argument and the `call` of each live output node
        if sys.getrefcount(c) > known[id(c)] + 3:
            held.add(id(c))
    c = None
    rerun: set[int] = set()
    for c in reversed(calls):  # consumers before producers
        if id(c) in held:
            for n in c.inputs:
                if type(n) is Node:
                    if n.value is None:
                        held.add(id(n.call))
                    else:
                        rerun.add(id(n))
    return rerun


def _donatable(leaves: list[Node], leaf_uses: list[int], targets: list[Node], calls: list[Call]) -> tuple[bool, ...]:
    """Which input buffers nobody can see after this run (overwritten weights, say), and that
    an output of the same shape and dtype could reuse: XLA may write the outputs into them."""
    slots = collections.Counter((n.shape, n.dtype) for n in targets)  # outputs a buffer could become
    mask = []
    rerun: set[int] | None = None
    for i in range(len(leaves)):
        node = leaves[i]
        # references: the graph's uses, `leaves`, `node`, and getrefcount's argument
        private = sys.getrefcount(node) == leaf_uses[i] + 3
        aval = (node.shape, node.dtype)
        donate = private and not node.exported and slots[aval] > 0
        if donate:
            if rerun is None:
                rerun = _rerun_leaves(calls, targets)
            donate = id(node) not in rerun
        if donate:
            slots[aval] -= 1
        mask.append(donate)
        del node
    return tuple(mask)


@_locked
def _materialize_nodes(targets: list[Node], device: Device) -> None:
    targets = [n for n in dict.fromkeys(targets) if n.value is None]
    if not targets:
        return
    try:
        if len(targets) == 1 and _run_single(targets[0], device):
            return
        _run_graph(targets, device)
    except MemoryError as error:  # NumPy's, from the interpreter (or ours: kept)
        if str(error).startswith("x10array:"):
            raise
        raise _out_of_memory(error, targets, device) from None
    except RuntimeError as error:  # jax's JaxRuntimeError, from a compiled run
        if not str(error).startswith("RESOURCE_EXHAUSTED"):
            raise
        raise _out_of_memory(error, targets, device) from None


def _run_graph(targets: list[Node], device: Device) -> None:
    """Compute the pending graph behind `targets` (interpreted or compiled, see the module's
    docstring) and hand its outputs over with _run_and_adopt. IndexError when one of them
    depends on an index array found out of bounds (see Check): the others are computed."""
    requested = None
    if any(n.checks for n in targets):
        requested, targets = targets, _bounds_targets(targets)
    key, calls, leaves, leaf_uses, scalars, outputs = _trace(targets, device)
    donate = _donatable(leaves, leaf_uses, targets, calls) if DONATE else (False,) * len(leaves)
    key = key + (donate,)
    program = _programs.get(key)
    if program is None:
        program = _programs.put(
            key,
            _Program([(c.prim, c.params) for c in calls], outputs, len(leaves), key, _interpret_cost(calls, targets)),
        )
    program.seen += 1
    leaf_values = [n.value for n in leaves]
    if COMPILE_THRESHOLD >= NEVER or (
        program.compiled is None
        and (program.seen < COMPILE_THRESHOLD or (COMPILE_THRESHOLD > 1 and not _compile_pays(program)))
    ):
        # cold, or not yet worth a compile: run it op by op
        _run_and_adopt(targets, False, _interpret, calls, key, leaves, leaf_values, scalars, targets, device)
        program.interpreted += program.interpret_cost  # what a compile could have saved
        COUNTERS.interpreted_graphs += 1
        if requested is not None:
            _raise_failed(requested)
        return
    first = program.compiled is None
    # (kept in the cache only once it has run: a compile that fails is tried again next time)
    compiled = _jitted_program(program, key, donate) if first else program.compiled
    import jax

    for i, node in enumerate(leaves):
        if type(node.value) is np.ndarray:  # an interpreted value: placed once, then reused
            with jax.enable_x64(True):
                node.value = leaf_values[i] = jax.device_put(node.value, device.jax_device)
    donated = [v for v, d in zip(leaf_values, donate) if d]
    kept = [v for v, d in zip(leaf_values, donate) if not d]
    start = time.perf_counter()
    with jax.enable_x64(True), jax.default_device(device.jax_device):
        if first:
            with warnings.catch_warnings():
                # XLA may decline a donation (no output to alias): memory, not correctness
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
                if donated:
                    _check_memory(compiled, donated, kept, scalars, len(calls), device)
                _run_and_adopt(targets, bool(donated), compiled, donated, kept, scalars, first=True)
        else:
            _run_and_adopt(targets, bool(donated), compiled, donated, kept, scalars)
    elapsed = time.perf_counter() - start
    program.compiled = compiled
    if first:  # the first call compiles (and runs once)
        COUNTERS.compile_seconds += elapsed
        COUNTERS.compile_count += 1
        if _metrics.log_compiles():
            _log_compile(program, key)
    else:
        COUNTERS.cache_hits += 1
        COUNTERS.execute_seconds += elapsed
    COUNTERS.donated_buffers += len(donated)
    COUNTERS.execute_count += 1
    if requested is not None:
        _raise_failed(requested)


def _bounds_targets(requested: list[Node]) -> list[Node]:
    """The targets of a run whose requested targets carry bounds checks (see Check): those
    not known to fail, plus the flags of the checks still unknown. IndexError when none is
    left to run."""
    targets: list[Node] = []
    flags: dict[int, Node] = {}
    for n in requested:
        for c in n.checks or ():
            if c.error is None and c.flag.value is not None:  # (computed by an earlier run)
                c.settle(c.flag.value)
        if _known_error(n):
            continue
        targets.append(n)
        for c in n.checks or ():
            if c.error is None:
                flags[id(c.flag)] = c.flag
    if not targets:
        _raise_failed(requested)
    return targets + list(flags.values())


def _raise_failed(requested: list[Node]) -> None:
    """IndexError for the requested targets that depend on an index out of bounds, if any."""
    failed = [e for n in requested if n.value is None and (e := _known_error(n))]
    if failed:
        raise IndexError(failed[0] if len(failed) == 1 else f"{failed[0]} (and {len(failed) - 1} more)")


def _adopt_checked(targets: list[Node], results: tuple) -> None:
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
    Python code (a test checks this). A program's first run (`first`) goes through jax's
    Python code after the run, so there Ctrl-C is deferred until the hand-over is done (by
    swapping the SIGINT handler, only when it is Python's default one and in the main
    thread, where signals are handled: a system call each way, too slow for every run).
    Without donation an interrupted hand-over leaves some targets materialized and the others
    pending, which is as good: every value is still there."""
    if not donating:
        _adopt(targets, run(*args))
        return
    deferred = first and _main_thread() and _signal.getsignal(_SIGINT) is _default_int_handler
    if deferred:
        received: list[Any] = []
        _signal.signal(_SIGINT, lambda signum, frame: received.append(frame))
    out: list = []
    try:
        out.extend(map(run, *zip(args)))  # run(*args), its result stored by C code
        _adopt(targets, out[0])
    except BaseException:
        if out:
            _adopt(targets, out[0])  # the run finished: hand its outputs over, then raise
        raise
    finally:
        if deferred:
            _signal.signal(_SIGINT, _default_int_handler)
            if received:
                raise KeyboardInterrupt


def _adopt(targets: list[Node], results: tuple) -> None:
    """Give pending nodes their values (see _run_and_adopt; _adopt_checked when some carry
    bounds checks)."""
    for node in targets:
        if node.checks:
            _adopt_checked(targets, results)
            return
    for node, value in zip(targets, results):
        node.value = value
        node.call = None  # drop the graph: its inputs can be freed


_SIGINT = _signal.SIGINT
_default_int_handler = _signal.default_int_handler
_MAIN_THREAD = threading.main_thread().ident


def _main_thread() -> bool:
    return threading.get_ident() == _MAIN_THREAD


def _check_memory(compiled: Any, donated: list, kept: list, scalars: list, n_ops: int, device: Device) -> None:
    """Before a program's first run with donated inputs: refuse (MemoryError) a program whose
    outputs and temporaries need more memory than the device has. XLA would fail to
    allocate them only after it has taken the donated buffers (jax deletes them), and the
    values in them would be lost; refused now, nothing has been run or donated. (The
    compile is jax's: the run that follows reuses it.)"""
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
    n_ops = sum(_graph_size(n.call, 1 << 62, seen) for n in targets if n.call is not None)
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


def _compile_pays(program: _Program) -> bool:
    """Ski rental: compile once interpreting the graph has cost COMPILE_PAYBACK times what
    its compile is expected to. Both costs are estimates from the graph alone (COST), never
    measured time: the same program takes the same tier at the same run, every time it is
    run, so its numbers do not depend on the machine's load."""
    return program.interpreted >= COMPILE_PAYBACK * COST.compile_seconds(len(program.calls))


class _CostModel:
    """The fixed cost model of the tier decision, in estimated seconds (calibrated once on a
    2-core x86-64 machine, XLA CPU from jax 0.10, NumPy 2.4; the constants only have to be
    right within a factor of a few, since the ski-rental rule stays within a small factor of
    the best choice whatever the error).

    - compiling an n-operation graph: COMPILE_FIXED + n * COMPILE_PER_OP (XLA's CPU compiles
      of jax 0.10 measured 3-10 ms per recorded operation, more for the functions whose
      accurate lowering is a formula of several operations, and about 100 ms for the
      smallest graph (tracing, lowering, XLA's passes), where 20 ms + 3.5 ms per operation
      was assumed before);
    - interpreting one operation: PER_OP (the interpreter's Python dispatch, ~7-10 us) plus
      PER_ELEMENT for each element of its largest operand or result (NumPy's loop, the copy
      into an owned buffer and the subnormal scan: ~1-3 ns for float64 arithmetic), or
      PER_FLOP for each multiply-add of a matmul, tensordot or convolution (~0.2 ns: a
      float32 GEMM of LeNet's sizes, im2col included). `COST_LIBRARY` primitives (an SVD, a solve, an FFT) cost nothing
      here: a compiled program calls the same routine, so compiling would not save it.
    """

    COMPILE_FIXED = 0.1
    COMPILE_PER_OP = 0.005
    PER_OP = 1e-5
    PER_ELEMENT = 2e-9
    PER_FLOP = 2e-10

    def compile_seconds(self, n_ops: int) -> float:
        return self.COMPILE_FIXED + n_ops * self.COMPILE_PER_OP


COST = _CostModel()


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _interpret_cost(calls: list[Call], targets: list[Node]) -> float:
    """The estimated seconds of one interpreted run of the graph `calls` (topological order)
    that computes `targets`, from its operations and their sizes (see _CostModel)."""
    out_elements: dict[int, int] = {}
    for n in targets:
        if n.call is not None:
            out_elements[id(n.call)] = max(out_elements.get(id(n.call), 0), _elements(n.shape))
    for c in calls:
        for n in c.inputs:
            if type(n) is Node and n.call is not None:
                out_elements[id(n.call)] = max(out_elements.get(id(n.call), 0), _elements(n.shape))
    total = 0.0
    for c in calls:
        if c.prim in COST_LIBRARY.members:
            continue
        operands = [n for n in c.inputs if type(n) is Node]
        sizes = [_elements(n.shape) for n in operands]
        out = out_elements.get(id(c), 0)
        name = c.prim.name
        flops = 0
        if name == "matmul" and len(operands) == 2 and operands[0].shape:
            flops = out * operands[0].shape[-1]
        elif name == "nn.conv2d" and len(operands) == 2 and operands[1].shape[-1]:
            flops = out * sizes[1] // operands[1].shape[-1]  # HWIO filter: kh kw c per output
        elif name == "nn.conv2d_vjp" and len(operands) == 3 and operands[1].shape[-1]:
            flops = 2 * sizes[2] * sizes[1] // operands[1].shape[-1]  # both cotangents
        elif name == "tensordot" and len(sizes) == 2:
            # a contraction: sqrt(|a| |b| |out|) is m n k for an (m, k) by (k, n) product
            flops = int((sizes[0] * sizes[1] * max(out, 1)) ** 0.5)
        total += COST.PER_OP + COST.PER_ELEMENT * max([out, *sizes]) + COST.PER_FLOP * flops
    return total


def _numpy_step(
    prim: Primitive,
    args: list[Any],
    params: dict[str, Any],
    flush: bool,
    args_clean: bool = False,
    first_is_private: bool = False,
) -> Any:
    """One primitive through its NumPy kernel, as the interpreter runs it: on a copy of an
    operand it writes into (unless `first_is_private`: a buffer nothing else will read), and
    with XLA's numerics in arithmetic when `flush` (see _flush; `args_clean`: the caller has
    flushed the operands already)."""
    if prim.in_place and not first_is_private:
        args[0] = np.array(args[0])  # a writable copy (of a NumPy scalar too: x[0] of a 1-D x)
    if not flush or prim.moves_data:
        return prim.kernel(NUMPY, *args, **params)
    out = prim.kernel(NUMPY, *(args if args_clean else [_flush(a) for a in args]), **params)
    return tuple(_flush(o) for o in out) if prim.multiple_results else _flush(out)


def _owned(value: Any, dtype: Any) -> np.ndarray:
    """A host buffer as a node's value: the recorded dtype (the lowering's is the contract),
    in memory of its own (never a view of another value), and read-only: node values are
    immutable, and an export (DLPack, `__array__`) must not write into them."""
    value = np.asarray(value)
    if value.dtype != dtype:
        value = value.astype(dtype)
    elif value.base is not None:
        value = value.copy()
    value.flags.writeable = False
    return value


def _run_single(node: Node, device: Device) -> bool:
    """The common small case, `float(x[i])` say: one primitive whose inputs are all computed,
    on the CPU. It would be run op by op anyway; skip keying and caching a graph for it."""
    call = node.call
    prim = call.prim
    if COMPILE_THRESHOLD <= 1 or prim.multiple_results or device.kind is not DeviceKind.CPU or node.checks:
        return False
    args = []
    for i in call.inputs:
        if type(i) is Node:
            if i.value is None:
                return False
            args.append(np.asarray(i.value))
        else:
            args.append(i)
    if not _FLUSHES:
        _probe_flush()
    with np.errstate(all="ignore"):
        value = _numpy_step(prim, args, call.params, _FLUSHES[0])
    _adopt([node], (_owned(value, node.dtype),))
    COUNTERS.interpreted_graphs += 1
    return True


def _probe_flush() -> None:
    import jax

    with jax.enable_x64(True):
        tiny = np.finfo(np.float32).tiny
        _FLUSHES.append(float(jax.jit(lambda a, b: a * b)(np.float32(tiny), np.float32(0.25))) == 0.0)


def _flush(value: Any) -> Any:
    """Subnormal floats to (signed) zero, as XLA's CPU arithmetic does (flush-to-zero and
    denormals-are-zero): the interpreter applies it to the operands and results of every
    arithmetic step, and a compiled graph does the same (see _replay), so both tiers treat
    subnormals alike (docs/eager-and-lazy.md, "What the tiers guarantee")."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc" or value.size == 0:
        return value
    parts = (value.real, value.imag) if value.dtype.kind == "c" else (value,)
    tiny = np.finfo(parts[0].dtype).tiny
    if not any(_has_subnormal(p, tiny) for p in parts):
        return value
    value = value.copy()
    for p in (value.real, value.imag) if value.dtype.kind == "c" else (value,):
        p[(np.abs(p) < tiny) & (p != 0)] = 0.0 * np.sign(p[(np.abs(p) < tiny) & (p != 0)])
    return value


def _owner(a: np.ndarray) -> int:
    """id of the array that owns the memory a NumPy view shows."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return id(a)


def _flush_leaf(node: Node, value: Any) -> Any:
    if node.clean:
        return value
    out = _flush(value)
    node.clean = out is value
    return out


def _has_subnormal(part: np.ndarray, tiny: Any) -> bool:
    """Whether a real array holds a subnormal. Two passes (abs, min) in the common case that
    no magnitude is below `tiny`; zeros and subnormals (and NaN minima) take a closer look."""
    magnitude = np.abs(part)
    if magnitude.min() >= tiny:
        return False
    return bool(magnitude[magnitude < tiny].any())


_PRODUCTS = frozenset({"multiply", "square"})
_SUMS = frozenset({"add", "subtract"})


def _replay(
    k: Any,
    described: tuple,
    leaf_values: list,
    scalars: list,
    outputs: list,
    params_of: list,
    flush: bool = False,
    leaves: list[Node] | None = None,
) -> tuple:
    values: list[list] = []
    # With XLA's numerics (`flush`), on both tiers: an arithmetic step reads subnormal operands
    # as zeros and its subnormal results are flushed to zeros (signs kept), so they are clean
    # operands; scalars and the outputs of data movement (which keeps subnormals, as XLA does)
    # are flushed where arithmetic first reads them, and leaves (`leaves`: their nodes) once
    # in their life: a weight matrix read by every step is not scanned at every step.
    # Interpreting, `_flush` does it. Compiled, XLA's CPU arithmetic flushes by itself, but
    # not where a lowering passes an operand's bits through (abs, negation, copysign, a
    # select) or tests them (atan2, pow): the operands and results of those
    # (`prim.passes_bits`) go through `k.rounded`, a multiplication by a runtime 1.0 (see
    # _kernels._rounded), which flushes. So do the products (multiply,
    # square) that an addition reads, which XLA would otherwise fuse into one multiply-add.
    # Only those: a multiplication after every operation doubled the time of a compiled
    # LeNet step (it splits XLA's fusions).
    clean: set[int] = set()
    feeds_sum: set[int] = set()  # compiled: the products that an addition reads
    if k.is_jax:
        for prim, _, refs in described:
            if prim.name in _SUMS:
                feeds_sum.update(r[1] for r in refs if r[0] == "c" and described[r[1]][0].name in _PRODUCTS)
    flushed: dict[tuple, Any] = {}
    # Interpreting, an intermediate value is dropped after its last use (a long graph of
    # writes holds one buffer at a time, not one per step), and a write (`in_place`) into an
    # intermediate at its last use writes into that buffer instead of a copy, as XLA would.
    interpreting = not k.is_jax
    last_use: dict[tuple, int] = {}
    if interpreting:
        for index, (_, _, refs) in enumerate(described):
            for r in refs:
                if r[0] == "c":
                    last_use[(r[1], r[2])] = index
    keep = set(outputs)
    passed_through: set[int] = set()  # ids of buffers a kernel returned as they came in
    viewers: dict[int, int] = {}  # id(buffer) -> live slots holding a NumPy view of it
    viewed: dict[tuple, int] = {}  # slot -> id(buffer) it views
    for index, ((prim, _, refs), params) in enumerate(zip(described, params_of)):
        arithmetic = flush and not prim.moves_data
        args = []
        for r in refs:
            tag = r[0]
            if tag == "l":
                value = leaf_values[r[1]]
            elif tag == "c":
                value = values[r[1]][r[2]]
                if r[1] in clean:
                    args.append(value)
                    continue
            elif tag == "s":
                value = scalars[r[1]]
            else:
                args.append(None)
                continue
            if arithmetic and not k.is_jax:
                found = flushed.get(r)
                if found is None:
                    if tag == "l" and leaves is not None:
                        found = _flush_leaf(leaves[r[1]], value)
                    else:
                        found = _flush(value)
                    flushed[r] = found
                value = found
            args.append(value)
        if k.is_jax:
            if flush and prim.passes_bits:
                args = [k.rounded(a) if r[0] in "lc" else a for a, r in zip(args, refs)]
            out = prim.lowering(k, *args, **params)
            outs = list(out) if prim.multiple_results else [out]
            if (flush and prim.passes_bits) or index in feeds_sum:
                outs = [k.rounded(o) for o in outs]
            values.append(outs)
            continue
        private = False
        if prim.in_place and refs[0][0] == "c":
            slot = (refs[0][1], refs[0][2])
            first = args[0]
            private = (
                last_use[slot] == index
                and slot not in keep
                and refs.count(refs[0]) == 1
                and type(first) is np.ndarray
                and first.base is None
                and first.flags.writeable
                and id(first) not in passed_through
                and not viewers.get(id(first))  # no live view would see the write
            )
            first = None
        if prim in COST_LIBRARY.members:
            out = _numpy_step(prim, args, params, flush, args_clean=True)
            clean.add(index)  # library calls are arithmetic
        else:
            out = _numpy_step(prim, args, params, flush, args_clean=True, first_is_private=private)
            if arithmetic:
                clean.add(index)
        outs = list(out) if prim.multiple_results else [out]
        if not prim.in_place:  # (a write returns the buffer it wrote: a copy, or a private one)
            for o in outs:
                if any(o is a for a in args):
                    passed_through.add(id(o))
        for i, o in enumerate(outs):
            if type(o) is np.ndarray and o.base is not None:
                owner = _owner(o)
                viewed[(index, i)] = owner
                viewers[owner] = viewers.get(owner, 0) + 1
        values.append(outs)
        for r in refs:  # drop what no later step reads
            slot = (r[1], r[2]) if r[0] == "c" else None
            if slot is not None and last_use[slot] == index and slot not in keep:
                values[r[1]][r[2]] = None
                flushed.pop(r, None)
                owner = viewed.pop(slot, None)
                if owner is not None:
                    viewers[owner] -= 1
        args = outs = out = None
    return tuple(values[c][i] for c, i in outputs)


# Whether XLA flushes subnormals on this machine's CPU (jax sets flush-to-zero for its work).
_FLUSHES: list[bool] = []


def _flushes() -> bool:
    if not _FLUSHES:
        _probe_flush()
    return _FLUSHES[0]


def _interpret(
    calls: list[Call],
    key: tuple,
    leaves: list[Node],
    leaf_values: list,
    scalars: list,
    targets: list[Node],
    device: Device,
) -> tuple:
    """Run a graph primitive by primitive through the eager NumPy kernels (cold graphs)."""
    import jax

    if not _FLUSHES:
        _probe_flush()

    host_leaves = [np.asarray(v) for v in leaf_values]
    with np.errstate(all="ignore"):
        out = _replay(
            NUMPY,
            key[1],
            host_leaves,
            scalars,
            key[2],
            [c.params for c in calls],
            flush=_FLUSHES[0],
            leaves=leaves,
        )
    results = []
    on_cpu = device.kind is DeviceKind.CPU
    with jax.enable_x64(True):
        for node, value in zip(targets, out):
            value = _owned(value, node.dtype)
            # On the CPU a host buffer is the device's memory: keep it until a compiled program
            # reads it (then it is placed once, see _materialize_nodes).
            results.append(value if on_cpu else jax.device_put(value, device.jax_device))
    return tuple(results)


def _jitted_program(program: _Program, key: tuple, donate: tuple) -> Any:
    """The graph as a jitted function of (donated leaves, kept leaves, scalars); jax compiles
    it at its first call and dispatches later calls through its fast path. A function of its
    own per program: the program holds the only reference to it, so evicting the program
    frees its executable (and _evicted_programs what jax's tracing caches kept)."""
    import jax

    k = jax_namespace()
    described = key[1]
    outputs = program.outputs
    params_of = [p for _, p in program.calls]

    flush = _flushes()  # (probed outside the trace)

    def replay(one: Any, donated: list, kept: list, scalars: list) -> tuple:
        donated_it, kept_it = iter(donated), iter(kept)
        leaf_values = [next(donated_it) if d else next(kept_it) for d in donate]
        token = ROUNDING_GUARD.set(one)  # see _kernels._rounded
        try:
            return _replay(k, described, leaf_values, scalars, outputs, params_of, flush=flush)
        finally:
            ROUNDING_GUARD.reset(token)

    jitted = jax.jit(replay, donate_argnums=(1,) if any(donate) else ())
    # (a partial, not a lambda: a cached run must not enter Python code, see _run_and_adopt)
    return functools.partial(jitted, _ONE)


_ONE = np.float64(1.0)


def _log_compile(program: _Program, key: tuple) -> None:
    print(f"x10array: compiling ({_compile_reason(key, program)}) at {_user_frame()}", flush=True)


def _compile_reason(key: tuple, program: _Program) -> str:
    """Why a graph was not in the cache: new, or which shape, dtype or parameter changed."""
    ops = [c[0] for c in key[1]]
    for other, cached in reversed(_programs.items()):  # most recently used first
        # the program itself is cached under an equal key (not always the same tuple): skip it
        if cached is program or cached.compiled is None or [c[0] for c in other[1]] != ops:
            continue
        if other[3] != key[3]:
            return f"input shapes/dtypes changed: {_avals_text(other[3])} -> {_avals_text(key[3])}"
        for (prim, old, _), (_, new, _) in zip(other[1], key[1]):
            if old != new:
                return f"shapes/dtypes or parameters of {prim.name} changed: {dict(old)} -> {dict(new)}"
        return "same graph, other donation or outputs"
    return f"new graph of {len(ops)} operations"


def _avals_text(avals: tuple) -> str:
    return "[" + ", ".join(f"{dtype}{list(shape)}" for shape, dtype in avals) + "]"


def _user_line() -> str:
    """The file:line of the innermost frame outside x10array (cheap: reads no source). Code
    that x10array generates (the wrappers of `_dispatch`) runs in globals without a module
    name: it counts as x10array's."""
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR) or "__name__" not in frame.f_globals
    ):
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _user_frame() -> str:
    _, filename, lineno = _user_location()
    return f"{filename}:{lineno}"


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep  # x10array/


def _user_location() -> tuple[int, str, int]:
    """The innermost frame of the caller's stack outside x10array: (its `stacklevel` for
    `warnings.warn` called by the function that calls this one, its file, its line)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    if frame is None:
        return 1, "<unknown>", 0
    return level, frame.f_code.co_filename, frame.f_lineno


register(Backend.XLA, LazyBackend())
