"""Stage 4, the interpreter: run a graph step by step (the cold tier).

A graph seen for the first time, or one whose compile has not paid yet (program.py), runs
here, where its values live:

- on a CPU (`interpret`), each primitive through its NumPy kernel (`_core.kernels.NUMPY`),
  the one the eager device runs, with XLA's treatment of subnormals (see _flush), so both
  tiers agree within the bounds that docs/numerics.md states. `run_single` is the common
  one-operation case, run without tracing a graph;
- on an accelerator (`run_on_device`), each primitive through its own jitted program on the
  device (`_core.op_programs`, the eager device's), so nothing goes through the host.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._core import interrupts, settings
from ..._core.convert import ASTYPE
from ..._core.devices import Device, DeviceKind, jax_putter
from ..._core.kernels import NUMPY, NumpyNamespace, jax_operand
from ..._core.op_programs import jitted
from ..._core.policies import (
    COST_LIBRARY,
    INTERPRETER_BLOCK_COUNTS,
    INTERPRETER_BLOCK_SUMS,
    INTERPRETER_BLOCKS,
    INTERPRETER_BLOCKS_UNCAST,
    INTERPRETER_UFUNCS,
)
from ..._core.primitive import Primitive, params_key
from ..._core.xla_numerics import flush_subnormals, xla_flushes
from .graph import Node
from .trace import Op, Ref, Slot, Traced, drops_after, last_uses, leaf_last_uses, outside_references, replay


def interpret(
    traced: Traced,
    targets: list[Node],
    device: Device,
    schedule: Schedule | None = None,
    donate: tuple[bool, ...] | None = None,
) -> tuple[Any, ...]:
    """Run the graph `traced` primitive by primitive through the NumPy kernels (cold graphs):
    the values of `targets`, owned (see as_node_value) and on `device`. `schedule`: what the
    run needs of the graph's key, kept by its program across runs (see Schedule). `donate`:
    the leaves the run may consume (the key's donation mask, program.donation: nothing outside
    the graph sees them): a write that is the last use of such a leaf writes into its buffer
    where nothing else holds that buffer (`x[i] = x[i - 1] + 1` then a read of `x`, at every
    step of a loop: a copy of `x` each time otherwise), as the compiled tier's donation does;
    what it overwrites is kept until the run's outputs are made, and written back if it fails
    (so the caller hands them over as a donating run's, executor._run_and_adopt)."""
    own = None
    if donate is not None and True in donate and schedule is not None and schedule.written_leaves:
        leaves = traced.leaves
        written = schedule.written_leaves.values()
        # (a leaf handed to the host, `host`, or exported is never written: whoever holds it sees it)
        own = frozenset(
            [j for j in written if donate[j] and not (leaves[j].host or leaves[j].exported) and held_alone(leaves[j])]
        )
        del leaves
    host_leaves = [np.asarray(n.value) for n in traced.leaves]
    undo = _Undo(own) if own else None
    try:
        with np.errstate(all="ignore"):
            out = _replay(
                traced.ops,
                host_leaves,
                traced.scalars,
                traced.outputs,
                [c.params for c in traced.calls],
                leaves=traced.leaves,
                schedule=schedule,
                undo=undo,
            )
        results = []
        for node, value in zip(targets, out):
            results.append(as_node_value(value, node.dtype))
    except BaseException:
        if undo is not None:  # (every leaf written in place as it was: a later run starts again from it)
            undo.restore()
        raise
    # On the CPU a host buffer is the device's memory: keep it until a compiled program reads
    # it (then it is placed once, see executor.run_compiled).
    if device.kind is not DeviceKind.CPU:
        import jax

        with jax.enable_x64(True):
            results = [jax.device_put(value, device.jax_device) for value in results]
    return tuple(results)


def run_on_device(traced: Traced, targets: list[Node], device: Device) -> tuple[Any, ...]:
    """Run the graph `traced` op by op on `device` (an accelerator's cold graphs): each
    primitive through its jitted program (`_core.op_programs`, shared with the eager device,
    so a primitive on shapes seen before compiles nothing), its operands and results device
    buffers: the values of `targets`. Nothing is donated: the leaves stay as they were, so a
    failed run loses nothing."""
    import jax

    put = jax_putter(device.jax_device)
    leaf_values = [put(v) if type(v) is np.ndarray else v for v in (n.value for n in traced.leaves)]

    def step(index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any], params: dict[str, Any]) -> Any:
        out = jitted(prim, params_key(params), tuple(params.items()))(*map(jax_operand, args))
        return list(out) if prim.multiple_results else [out]

    with jax.enable_x64(True), jax.default_device(device.jax_device):
        return replay(traced.ops, [c.params for c in traced.calls], leaf_values, traced.scalars, traced.outputs, step)


def run_single(node: Node, device: Device) -> np.ndarray | None:
    """The common small case, `float(x[i])` say: one primitive whose inputs are all computed,
    on the CPU. It would be run op by op anyway; skip keying and caching a graph for it. Its
    value, or None when `node` is not such a case."""
    call = node.call
    if call is None:
        return None
    prim = call.prim
    if prim.multiple_results or device.kind is not DeviceKind.CPU or node.checks:
        return None
    inputs = call.inputs
    for i in inputs:  # (all of them before reading any: a read of a compiled program's value
        if type(i) is Node and i.value is None:  # waits for it, and a pending one ends here)
            return None
    args: list[Any] = [np.asarray(i.value) if type(i) is Node else i for i in inputs]
    params = call.params
    with np.errstate(all="ignore"):
        value = _numpy_step(prim, args, params)
    return as_node_value(value, node.dtype)


def run_now(prim: Primitive, args: list[Any], params: dict[str, Any], dtype: Any) -> np.ndarray:
    """`prim` on computed host operands (NumPy arrays and Python scalars), run as the
    interpreter runs it: its value as a node's (executor._scalar_now)."""
    token = _ERRSTATE.set(_IGNORE_ALL)  # (np.errstate(all="ignore"), without building one per call)
    try:
        value = _numpy_step(prim, args, params)
    finally:
        _ERRSTATE.reset(token)
    return as_node_value(value, dtype)


try:  # NumPy's own error-state variable, as the eager backend sets it
    # Private names, absent from NumPy's stubs (hence the ignore); the ImportError branch covers their absence.
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRSTATE  # type: ignore[attr-defined]
    from numpy._core._ufunc_config import _make_extobj  # type: ignore[attr-defined]

    _IGNORE_ALL = _make_extobj(all="ignore")
except ImportError:  # pragma: no cover - another NumPy layout

    def run_now(prim: Primitive, args: list[Any], params: dict[str, Any], dtype: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return as_node_value(_numpy_step(prim, args, params), dtype)


def held_alone(node: Node) -> bool:
    """Whether `node`'s value is a NumPy buffer that owns its memory and that nothing but the
    node holds: no other node's value is the same array, no view of it is alive anywhere, no
    device buffer aliases it (each would hold a reference; the node's, `value`'s and
    getrefcount's argument are the only ones). Such a buffer may be handed over instead of
    copied: to the host (executor's host_buffer) or to a write (interpret)."""
    value = node.value
    if type(value) is not np.ndarray or value.base is not None or not value.flags.owndata:
        return False
    del value
    return outside_references(node.value, 1) == 0  # (known: the node's own reference)


def _replay(
    ops: tuple[Op, ...],
    leaf_values: list[Any],
    scalars: list[Any],
    outputs: tuple[Slot, ...],
    params_of: list[dict[str, Any]],
    leaves: list[Node],
    schedule: Schedule | None = None,
    undo: _Undo | None = None,
) -> tuple[Any, ...]:
    """Run the steps of a graph (`ops` as in trace.GraphKey, their parameters `params_of`) on
    `leaf_values` and `scalars`: the values of `outputs` (trace.replay, the walk both tiers
    share, with the NumPy steps of `NumpySteps`). `schedule`: the graph's (see Schedule), else one
    made for this run. `undo`: where the writes into leaves' buffers keep what they overwrite
    (interpret)."""
    if schedule is None or schedule.outputs != outputs:
        schedule = Schedule(ops, outputs)
    steps = NumpySteps(leaves, schedule.last_use, schedule.keep, ops, schedule)
    steps.undo = undo
    out = replay(ops, params_of, leaf_values, scalars, outputs, steps.step, steps.dropped, schedule.drops)
    return out


class Schedule:
    """What an interpreted run needs that depends only on the graph's key (its `ops` and
    `outputs`), made at a program's first interpreted run and kept by it (program.Program), so
    a graph run again is not analysed again: each value's last use, the outputs, what
    trace.replay drops after each step (`drops`), the blocked runs (`blocks`: step -> its
    BlockedRun, see there; a value a run reads from outside it lives to the run's end; `recost`:
    one was found not blocked since the program's cost read them), and per
    step what NumpySteps.step decides from the key alone (`statics`: whether it is arithmetic
    and a library call; see NumpySteps._statics). The lazy lock serializes the runs that share it."""

    __slots__ = ("outputs", "last_use", "keep", "blocks", "drops", "statics", "recost", "written_leaves")

    def __init__(self, ops: tuple[Op, ...], outputs: tuple[Slot, ...]):
        self.outputs = outputs
        self.last_use = last_uses(ops)
        # step -> leaf, for a write (`in_place`, moving data) into a leaf that it reads once and
        # that no later step reads: the leaf's buffer may be written in place if it is donated
        # and nothing else holds it (interpret, NumpySteps._takes_leaf), the values it
        # overwrites kept aside until the run ends (_Undo), so that a run that fails after it
        # leaves the leaf as it was and can be run again
        last = leaf_last_uses(ops)
        self.written_leaves = {
            index: refs[0][1]
            for index, (prim, _, refs) in enumerate(ops)
            if prim.in_place
            and prim.moves_data
            and refs
            and refs[0][0] == "l"
            and last[refs[0][1]] == index
            and refs.count(refs[0]) == 1
        }
        self.keep = set(outputs)
        self.blocks = blocked_runs(ops, self.last_use, self.keep)
        self.drops = drops_after(ops, self.last_use, self.keep)
        self.statics: dict[int, tuple[bool, bool]] = {}
        self.recost = False  # a run found not blocked at a run: the cost model's credit is stale


class BlockedRun:
    """A run of a graph's steps that the interpreter may strip-mine (as numexpr does): steps of
    INTERPRETER_BLOCKS (elementwise, each element from the operands' elements at its position
    alone) joined by the values they pass one another, possibly ending in counts of
    INTERPRETER_BLOCK_COUNTS or float sums of INTERPRETER_BLOCK_SUMS (`counts`, both: the
    run's reductions, each reading one member), whose intermediates nothing outside the run reads (`live`: the
    members whose values are outputs or read after the run, written to full buffers). Run
    block by block (NumpySteps._blocked), the dead intermediates live in block-sized buffers
    that stay in the cache and are reused across blocks, instead of streaming a full buffer
    through memory at each step. A member's step is deferred to the run's last step (`end`),
    when every value it reads from outside is computed (Schedule keeps those alive until
    then); a run that cannot be blocked at that run (small or broadcast operands, a subnormal
    scalar, numerics the blocks do not keep) runs its steps one by one there instead, as
    before. Made from the graph's key alone (blocked_runs), once per program."""

    __slots__ = ("members", "member_set", "end", "live", "counts", "unblocked")

    def __init__(self, members: tuple[int, ...], live: frozenset[int], counts: frozenset[int]):
        self.members = members
        self.member_set = frozenset(members)
        self.end = members[-1]
        self.live = live
        self.counts = counts
        # the leaves' (shape, dtype) for which its shapes and dtypes are not blocked (too small,
        # broadcast): its steps then run where they are, not deferred (NumpySteps._run_step)
        self.unblocked: Any = None


def block_count(elements: int) -> int:
    """How many blocks a blocked run of results of `elements` elements takes (about: a run of
    N-D results takes whole rows a block), 0 where it is not blocked: below _BLOCK_BYTES of
    float64, a chain whose buffers stay in the cache anyway. (The cost model reads it too:
    tiering.estimated_interpret_cost.)"""
    if 8 * elements < _BLOCK_BYTES:
        return 0
    return -(-elements // _BLOCK_ELEMENTS)


# -- a blocked run's blocks on several threads --------------------------------------------------
#
# A blocked run's blocks are independent: each block reads its operands' rows and writes its
# rows of the live results, its intermediates live in block buffers, and its counts and float
# sums are per-block values combined afterwards in block order. So the blocks may be shared out
# among threads (NumPy's ufunc loops release the GIL), as XLA's CPU runtime shares a large
# fused loop out among its threads, with the same bits whatever the thread count or timing:
# every element goes through the same loop, a count adds exact integers, and a float sum's
# per-block sums are combined in the order of NumPy's pairwise tree (_pairwise_total, whatever
# the block size) as on one thread. Each thread has its own block buffers and runs in a copy
# of the caller's context (NumPy's errstate is a context variable).
#
# Only a run with an exp (INTERPRETER_BLOCKS_UNCAST), whose loop is compute-bound, is shared
# out, in larger blocks: every ufunc call of a block takes and gives back the GIL, and threads
# waiting on each other's hand-offs cost more than a memory-bound step saves: Monte-Carlo's
# count runs slower on 2-8 threads than on one, its mean of exp(-x**2) about twice as fast on 4
# threads in blocks of 128K elements (smaller blocks lose to the hand-offs).


def block_workers(elements: int) -> int:
    """How many threads run a blocked run with an exp over results of `elements` elements:
    X10ARRAY_INTERPRETER_THREADS (0: the cores this process may use, at most _AUTO_THREADS),
    and no more than one per _THREAD_BLOCK_ELEMENTS elements."""
    threads = settings.get("X10ARRAY_INTERPRETER_THREADS") or _auto_threads()
    return max(1, min(threads, elements // _THREAD_BLOCK_ELEMENTS))


@functools.cache  # (no arguments: one entry)
def cores() -> int:
    """The cores this process may run on (its affinity where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


def _auto_threads() -> int:
    return max(1, min(cores(), _AUTO_THREADS))


_AUTO_THREADS = 4
_THREAD_BLOCK_ELEMENTS = 1 << 17  # (a shared run's blocks)


def _run_block_steps(
    bounds: list[tuple[int, int]],
    steps: list[tuple[Any, list[tuple[Any, Any]], tuple[Any, Any]]],
    scratch: list[np.ndarray],
    rows: int,
    totals: list[Any],
    sums: list[list[Any]],
) -> None:
    """Run a blocked run's `steps` (NumpySteps._run_blocks) over the blocks `bounds` (row
    ranges, in order) on this thread, with `scratch` as its block buffers (`rows` rows each):
    counts added into `totals`, each float sum's per-block sums appended
    to `sums` in block order."""
    for s, e in bounds:
        blocks = scratch if e - s == rows else [b[: e - s] for b in scratch]
        for fn, srcs, (okind, o) in steps:
            operands = [v[s:e] if kind is _SLICE else (blocks[v] if kind is _SCRATCH else v) for kind, v in srcs]
            if okind is _COUNT:
                totals[o] += fn(operands[0])
            elif okind is _SUM:
                sums[o].append(np.add.reduce(operands[0]))
            else:
                fn(*operands, out=o[s:e] if okind is _SLICE else blocks[o])


def _run_block_steps_threaded(
    bounds: list[tuple[int, int]],
    steps: list[tuple[Any, list[tuple[Any, Any]], tuple[Any, Any]]],
    scratch: list[np.ndarray],
    rows: int,
    workers: int,
    totals: list[Any],
    sums: list[list[Any]],
) -> None:
    """_run_block_steps on `workers` threads: this one and workers - 1 of the pool, each on a
    contiguous share of the blocks, with buffers of its own; their counts and sums are then
    combined in block order. Returns once every share has finished (also when one raised: no
    thread writes into this run's buffers afterwards); the first error raises, and a Ctrl-C
    meanwhile raises KeyboardInterrupt then (interrupts.held)."""
    share, extra = divmod(len(bounds), workers)
    shares, start = [], 0
    for w in range(workers):
        end = start + share + (w < extra)
        shares.append(bounds[start:end])
        start = end
    context = contextvars.copy_context()  # (each thread runs in a copy: errstate, overrides)

    def run_share(part: list[tuple[int, int]]) -> tuple[list[Any], list[list[Any]]]:
        own_totals: list[Any] = [0] * len(totals)
        own_sums: list[list[Any]] = [[] for _ in sums]
        buffers = [np.empty_like(b) for b in scratch]
        _run_block_steps(part, steps, buffers, rows, own_totals, own_sums)
        return own_totals, own_sums

    # Ctrl-C is held until every share has finished (then raised): one landing while the
    # pool's or a future's lock is held here would leave it held, a worker blocked on it for
    # good, and the next threaded run waiting on that worker.
    with interrupts.held():
        pool = _block_pool(workers - 1)
        futures = [pool.submit(context.copy().run, run_share, part) for part in shares[1:]]
        try:
            _run_block_steps(shares[0], steps, scratch, rows, totals, sums)
        finally:
            concurrent.futures.wait(futures)
    for future in futures:
        part_totals, part_sums = future.result()
        for j, t in enumerate(part_totals):
            totals[j] += t
        for j, s in enumerate(part_sums):
            sums[j].extend(s)


_POOL: list[Any] = [None, 0]  # the pool's executor and its size (made at first use, per process)
_POOL_LOCK = threading.Lock()


def _block_pool(size: int) -> concurrent.futures.ThreadPoolExecutor:
    """The interpreter's thread pool, of at least `size` threads (made again, larger, when a
    run asks for more; a forked child makes its own)."""
    with _POOL_LOCK:
        pool, have = _POOL
        if pool is None or have < size:
            if pool is not None:
                pool.shutdown(wait=False)
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=size, thread_name_prefix="x10array-blocks")
            _POOL[:] = [pool, size]
        return pool


def _forget_pool() -> None:  # (in a forked child: the parent's threads are not there)
    _POOL[:] = [None, 0]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def blocked_runs(ops: tuple[Op, ...], last_use: dict[Slot, int], keep: set[Slot]) -> dict[int, BlockedRun] | None:
    """The graph's BlockedRuns, by member step (None where there is none), and `last_use`
    moved to each run's end for the values it reads from outside it. A run: the steps of
    INTERPRETER_BLOCKS (no key parameters) and INTERPRETER_BLOCK_COUNTS or _SUMS joined by an elementwise
    member's value that another reads, kept when it has _RUN_DEAD values that nothing outside
    reads (the passes over memory it saves), no count read inside
    it, and nothing outside reading a member's value before the run's end (its step is
    deferred there)."""
    n = len(ops)
    kind = [0] * n  # 1: elementwise member, 2: a count
    for i, (prim, key_params, _) in enumerate(ops):
        if prim in _BLOCKS and not key_params:
            kind[i] = 1
        elif prim in _BLOCK_COUNTS or (prim in _BLOCK_SUMS and numpy_sums_pairwise()):
            kind[i] = 2
    if sum(kind) < 2:
        return None
    readers: dict[int, list[int]] = {}
    for i, (_, _, refs) in enumerate(ops):
        for r in refs:
            if r[0] == "c":
                readers.setdefault(r[1], []).append(i)
    for _ in range(_RUN_PASSES):  # (a member that breaks its run leaves it; the rest are joined again)
        runs, broken = _joined_runs(ops, kind, readers, keep)
        if not broken:
            break
        for m in broken:
            kind[m] = 0
    else:
        return None
    for run in set(runs.values()):
        inside = run.member_set
        for m in run.members:
            for r in ops[m][2]:
                if r[0] == "c" and r[1] not in inside:  # (read at the end: alive until then)
                    slot = (r[1], r[2])
                    last_use[slot] = max(last_use[slot], run.end)
    return runs or None


def _joined_runs(
    ops: tuple[Op, ...], kind: list[int], readers: dict[int, list[int]], keep: set[Slot]
) -> tuple[dict[int, BlockedRun], list[int]]:
    """blocked_runs' one pass: the steps of `kind` (1: elementwise, 2: a count; 0: none) joined
    by the elementwise values they read, the runs kept, and the members that break theirs (a
    value read outside before the run's end, a count read inside)."""
    n = len(ops)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (_, _, refs) in enumerate(ops):
        if kind[i]:
            for r in refs:
                if r[0] == "c" and kind[r[1]] == 1:
                    a, b = find(i), find(r[1])
                    if a != b:
                        parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if kind[i]:
            groups.setdefault(find(i), []).append(i)
    runs: dict[int, BlockedRun] = {}
    broken: list[int] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        end, inside = members[-1], set(members)
        live, counts, bad = set(), set(), []
        for m in members:
            read = readers.get(m, ())
            outside = [r for r in read if r not in inside]
            if any(r < end for r in outside) or (kind[m] == 2 and len(outside) != len(read)):
                bad.append(m)
            if outside or (m, 0) in keep:
                live.add(m)
            if kind[m] == 2:
                counts.add(m)
        if bad:
            broken.extend(bad)
        elif len(members) - len(live) >= _RUN_DEAD:  # (passes over memory it saves)
            run = BlockedRun(tuple(members), frozenset(live), frozenset(counts))
            for m in members:
                runs[m] = run
    return runs, broken


class NumpySteps:
    """The interpreter's steps for trace.replay: each primitive through its NumPy kernel.

    NumPy's numerics, as the eager device's: subnormals are kept (the compiled tier, XLA,
    may flush them: the subnormal rule of docs/numerics.md).

    A write (`in_place`) into an intermediate at its last use writes into that buffer instead
    of a copy, as XLA would (see _Buffers)."""

    __slots__ = (
        "leaves", "last_use", "keep", "buffers", "ops", "statics", "runs", "deferred", "avals", "schedule",
        "undo",
    )  # fmt: skip

    def __init__(
        self,
        leaves: list[Node],
        last_use: dict[Slot, int],
        keep: set[Slot],
        ops: tuple[Op, ...] | None = None,
        schedule: Schedule | None = None,
    ):
        self.leaves = leaves
        self.last_use = last_use
        self.keep = keep
        self.buffers = _Buffers()
        self.ops = ops
        # the blocked runs (Schedule.blocks) and their members' deferred steps: step -> (its
        # operands, its parameters, the list replay holds its value in)
        self.runs = schedule.blocks if schedule is not None and ops is not None else None
        self.deferred: dict[int, tuple[list[Any], dict[str, Any], list[Any]]] = {}
        self.avals: Any = None  # the leaves' (shape, dtype), once a blocked run asks (_avals)
        self.schedule = schedule
        self.undo: _Undo | None = None  # the leaves whose buffers their last write may take (interpret)
        # per step, what it decides from the graph's key alone (_statics): the schedule's, kept
        # across runs
        self.statics: dict[int, tuple[bool, bool]] = {} if schedule is None else schedule.statics

    def _statics(
        self, index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any], params: dict[str, Any]
    ) -> tuple[bool, bool]:
        """What step `index` decides from the graph's key alone (the operands' dtypes, the
        scalars' types, the primitive and its parameters), the same at every run of the graph:
        whether it is arithmetic (not data movement, a selection or a cast that keeps bits)
        and whether it is a library call."""
        arithmetic = _arithmetic(prim, params, args[0] if prim is ASTYPE and refs[0][0] in "lc" else None)
        return arithmetic, prim in _LIBRARY

    def step(self, index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any], params: dict[str, Any]) -> Any:
        runs = self.runs
        if runs is not None:
            run = runs.get(index)
            if run is not None and (run.unblocked is None or run.unblocked != self._avals()):
                return self._run_step(run, index, args, params)
        return self._step(index, prim, refs, args, params)

    def _avals(self) -> tuple[tuple[tuple[int, ...], Any], ...]:
        avals = self.avals
        if avals is None:
            avals = self.avals = tuple([(n.shape, n.dtype) for n in self.leaves])
        return avals

    def _run_step(self, run: BlockedRun, index: int, args: list[Any], params: dict[str, Any]) -> list[Any]:
        """Step `index` of the blocked run `run`: deferred (its value, later, in the list
        returned now, which trace.replay holds), or at the run's end every member's, blocked
        (_blocked) or else one by one as `_step` runs them."""
        holder: list[Any] = [None]
        self.deferred[index] = (args, params, holder)
        if index != run.end:
            return holder
        deferred = self.deferred
        stash = {m: deferred.pop(m) for m in run.members}
        values = self._blocked(run, stash)
        if values is None:  # (one by one, in order: each member's operands are computed by now)
            values = {}
            members = run.member_set
            ops = self.ops
            for m in run.members:
                given, step_params, _ = stash[m]
                prim, _, refs = ops[m]  # type: ignore[index]
                given = [values[r[1]] if r[0] == "c" and r[1] in members else a for r, a in zip(refs, given)]
                values[m] = self._step(m, prim, refs, given, step_params)[0]
                for r in refs:  # (an intermediate read here for the last time: not kept)
                    if r[0] == "c" and r[1] in members and r[1] not in run.live and self.last_use[(r[1], 0)] == m:
                        values[r[1]] = None
        for m in run.live:
            stash[m][2][0] = values[m]
        return holder

    def _blocked(
        self, run: BlockedRun, stash: dict[int, tuple[list[Any], dict[str, Any], list[Any]]]
    ) -> dict[int, Any] | None:
        """The values of `run`'s live members, the run computed block by block (BlockedRun),
        or None where it may not be at this run: every member's result of one shape (an
        operand of that shape, sliced by blocks along the first axis, strided in one axis or C
        contiguous so that a live result's C layout is the one NumPy would give it; a Python
        scalar or an array that broadcasts along that axis, passed whole), of at least
        _BLOCK_BYTES / 8 elements (block_count). Each element then goes through the
        same ufunc loops as the whole array would, so the same bits; a count adds exact
        integers."""
        ops, members = self.ops, run.member_set
        if ops is None:
            return None
        shape: tuple[int, ...] | None = None
        dtypes: dict[int, Any] = {}
        # each elementwise member's own result shape (its operands' broadcast), which may be
        # smaller than the run's: `b - a` of two (4,) vectors beside a (50625, 4) chain
        # (scipy.integrate's cubature), and what is computed from it alone
        natural: dict[int, tuple[int, ...]] = {}
        plan: list[tuple[int, Any, list[tuple[Any, ...]], Any]] = []  # (member, ufunc or count, sources, finish)
        for m in run.members:
            args, params, _ = stash[m]
            prim, _, refs = ops[m]
            if m in run.counts:
                (r,) = refs
                if r[0] != "c" or r[1] not in members or shape is None:
                    return None
                if natural[r[1]] != shape:  # (a smaller value broadcast into each block: counted again)
                    return self._unblocked(run)
                counter = _BLOCK_COUNTS.get(prim)
                if counter is not None:
                    rule = counter(params, len(shape))
                    if rule is None:
                        return None
                    plan.append((m, rule[0], [(_SCRATCH, r[1])], rule[1]))
                    continue
                finish = _BLOCK_SUMS[prim](params, shape, dtypes[r[1]])
                if finish is None:  # (not one pairwise sum of a 1-D float32 or float64: whole)
                    return self._unblocked(run)
                plan.append((m, _PAIRWISE, [(_SCRATCH, r[1])], finish))
                continue
            kinds: list[Any] = []
            probe: list[Any] = []
            sources: list[tuple[Any, ...]] = []
            arrays: list[tuple[int, np.ndarray]] = []
            for k, (r, a) in enumerate(zip(refs, args)):
                if r[0] == "c" and r[1] in members:
                    kinds.append(dtypes[r[1]])
                    probe.append(np.empty(0, dtypes[r[1]]))
                    sources.append((_SCRATCH, r[1]))
                elif type(a) is np.ndarray:
                    if a.dtype.kind not in _INTO_KINDS:
                        return None
                    kinds.append(a.dtype)
                    probe.append(a)
                    arrays.append((k, a))
                    sources.append((_WHOLE, a))  # (the operand, sliced below if of the run's shape)
                elif type(a) in _SCALAR_TYPES:
                    kinds.append(type(a))
                    probe.append(a)
                    sources.append((_WHOLE, a))
                else:
                    return None
            ufunc: Any = _UFUNCS.get(prim)
            if ufunc is None:
                return None
            if shape is None:
                try:
                    shape = np.broadcast_shapes(*[a.shape for _, a in arrays])
                except ValueError:
                    return None
                n = 1
                for d in shape:
                    n *= d
                if not shape or not block_count(n):
                    return self._unblocked(run)
            ndim = len(shape)
            for _, a in arrays:
                if a.shape == shape:
                    if ndim > 1 and not a.flags.c_contiguous:  # (the whole array's result would take its layout)
                        return self._unblocked(run)
                elif not (a.ndim < ndim or a.shape[0] == 1) or np.broadcast_shapes(a.shape, shape) != shape:
                    return self._unblocked(run)
            natural[m] = np.broadcast_shapes(
                *[natural[r[1]] for r in refs if r[0] == "c" and r[1] in members], *[a.shape for _, a in arrays]
            )
            if natural[m] != shape and m in run.live:
                # a live member of a smaller shape: a full buffer of the run's shape would not
                # hold it (a dead one is computed into each block buffer, broadcast, as its
                # readers would broadcast it): run whole
                return self._unblocked(run)
            try:
                resolved = ufunc.resolve_dtypes((*kinds, None))[-1]
            except (TypeError, ValueError):
                return self._unblocked(run)
            if prim in _UNCAST and (
                resolved not in _UNCAST_DTYPES
                or any([k != resolved for k in kinds])
                or any([a.shape != shape for _, a in arrays])
            ):  # (a cast buffer, or a broadcast operand's short rows near the output, could take
                # another loop: run whole)
                return self._unblocked(run)
            dtypes[m] = resolved
            for k, (kind, a) in enumerate(sources):
                if kind is _WHOLE and type(a) is np.ndarray and a.shape == shape:
                    sources[k] = (_SLICE, a)
            if ufunc is _MULTIPLY and resolved.kind == "f" and refs[0] == refs[1] and refs[0][0] in "lc":
                # (x * x: one correctly rounded product, as NumPy's square makes it, whose loop
                # reads a strided operand ~2x faster: Monte-Carlo's squares of the column views)
                ufunc, sources = _SQUARE, sources[:1]
            plan.append((m, ufunc, sources, None))
        assert shape is not None
        return self._run_blocks(run, shape, dtypes, plan)

    def _unblocked(self, run: BlockedRun) -> dict[int, Any] | None:
        """`run` is not blocked at its graph's shapes and dtypes (the key's: the leaves' and
        the scalars' types), whatever the values: its later runs of them run its steps where
        they are (NumpySteps.step), as if it were no run, and the cost model credits it so
        (Schedule.recost). None: _blocked's "not blocked"."""
        run.unblocked = self._avals()
        if self.schedule is not None:
            self.schedule.recost = True
        return None

    def _run_blocks(
        self,
        run: BlockedRun,
        shape: tuple[int, ...],
        dtypes: dict[int, Any],
        plan: list[tuple[int, Any, list[tuple[Any, ...]], Any]],
    ) -> dict[int, Any]:
        """Run `plan` (from _blocked) block by block: live results into full buffers, the
        others into block buffers (one reused by a later member that reads it for the last
        time), counts summed, float sums (`_PAIRWISE`) added as NumPy's pairwise sum of the
        whole array adds them: the blocks are then its tree's nodes (_pairwise_blocks). No
        block has fewer than _MIN_BLOCK elements (a short tail joins the block before it:
        policies.INTERPRETER_BLOCKS_UNCAST)."""
        row = 1
        for d in shape[1:]:
            row *= d
        n0 = shape[0]
        ops = self.ops
        assert ops is not None
        workers, block = 1, _BLOCK_ELEMENTS
        if any([ops[m][0] in _UNCAST for m, _, _, _ in plan]):  # (an exp: shared out, see block_workers)
            workers = block_workers(n0 * row)
            if workers > 1:
                block = _THREAD_BLOCK_ELEMENTS
        rows = max(1, block // row)
        bounds: list[tuple[int, int]] = []
        if any([fn is _PAIRWISE for _, fn, _, _ in plan]):  # (1-D, _BLOCK_SUMS' rule)
            _pairwise_blocks(0, n0, block, bounds)
        else:
            bounds = [(s, min(s + rows, n0)) for s in range(0, n0, rows)]
            if len(bounds) > 1 and (bounds[-1][1] - bounds[-1][0]) * row < _MIN_BLOCK:
                bounds[-2:] = [(bounds[-2][0], n0)]
        rows = max([e - s for s, e in bounds])
        last_use, live = self.last_use, run.live
        full: dict[int, np.ndarray] = {m: np.empty(shape, dtypes[m]) for m in live if m not in run.counts}
        scratch: list[np.ndarray] = []
        where: dict[int, int] = {}  # member -> its block buffer
        free: list[int] = []
        steps: list[tuple[Any, list[tuple[Any, Any]], tuple[Any, Any]]] = []
        counted: list[int] = []
        for m, fn, sources, finish in plan:
            srcs: list[tuple[Any, Any]] = []
            for kind, a in sources:
                if kind is _SCRATCH:
                    srcs.append((_SLICE, full[a]) if a in full else (_SCRATCH, where[a]))
                else:
                    srcs.append((kind, a))
            for kind, a in sources:  # (a block buffer read here for the last time: free)
                if kind is _SCRATCH and a not in full and last_use[(a, 0)] == m and where[a] not in free:
                    free.append(where[a])
            if finish is not None:
                steps.append((fn, srcs, (_SUM if fn is _PAIRWISE else _COUNT, len(counted))))
                counted.append(m)
                continue
            if m in full:
                out: tuple[Any, Any] = (_SLICE, full[m])
            else:
                k = next((k for k in free if scratch[k].dtype == dtypes[m]), None)
                if k is None:
                    k = len(scratch)
                    scratch.append(np.empty((rows, *shape[1:]), dtypes[m]))
                else:
                    free.remove(k)
                where[m] = k
                out = (_SCRATCH, k)
            steps.append((fn, srcs, out))
        totals: list[Any] = [0] * len(counted)
        sums: list[list[Any]] = [[] for _ in counted]  # (a float sum's nodes, in the tree's order)
        if workers == 1:
            _run_block_steps(bounds, steps, scratch, rows, totals, sums)
        else:
            _run_block_steps_threaded(bounds, steps, scratch, rows, workers, totals, sums)
        values: dict[int, Any] = dict(full)
        finishes = {m: finish for m, _, _, finish in plan if finish is not None}
        for j, m in enumerate(counted):
            if sums[j]:
                value = finishes[m](_pairwise_total(n0, block, iter(sums[j])))
                values[m] = value
            else:
                values[m] = finishes[m](totals[j])
        return values

    def _step(self, index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any], params: dict[str, Any]) -> Any:
        known = self.statics.get(index)
        if known is None:
            known = self.statics[index] = self._statics(index, prim, refs, args, params)
        arithmetic, library = known
        in_place = prim.in_place
        private = (
            in_place
            and not library
            and refs[0][0] == "c"
            and self.buffers.writable(args[0], (refs[0][1], refs[0][2]), index, refs, self.last_use, self.keep)
        )
        if in_place and not private and self.undo is not None and refs[0][0] == "l" and refs[0][1] in self.undo.own:
            if self._takes_leaf(index, refs[0][1], args[0]):  # (a write moves data: no flushing, see Schedule)
                return [prim.kernel(self.undo, *args, **params)]
        into = None
        if arithmetic and prim in _UFUNCS and not params:  # (_into's own first test, without its call:
            for a in args:  # ~0.3 us a step, 5-7% of an L-BFGS graph of 16 KB vectors)
                if type(a) is np.ndarray:
                    if a.nbytes >= _INTO_BYTES:
                        into = self._into(index, prim, refs, args)
                    break
        out = _numpy_step(prim, args, params, first_is_private=private, into=into)
        outs = list(out) if prim.multiple_results else [out]
        if not in_place and into is None:  # (a write returns the buffer it wrote: a copy,
            # or a private one; a result written into a dead operand is that buffer's only holder)
            for o in outs:
                for a in args:
                    if o is a:
                        self.buffers.passed_through.add(id(o))
                        break
        for i, o in enumerate(outs):
            if type(o) is np.ndarray and o.base is not None:
                self.buffers.view(index, i, o)
        return outs

    def _takes_leaf(self, index: int, leaf: int, first: Any) -> bool:
        """Whether the write of step `index` may go into `first`, the buffer of `leaf`, one the
        run may take (interpret): the write is the leaf's last use (Schedule.written_leaves; an
        earlier write of the same leaf is not), no view of it made by an earlier step is
        alive, and no kernel passed it through as another step's result. Made writable."""
        buffers = self.buffers
        if (
            self.schedule is None
            or self.schedule.written_leaves.get(index) != leaf
            or type(first) is not np.ndarray
            or buffers.viewers.get(id(first))
            or id(first) in buffers.passed_through
        ):
            return False
        first.flags.writeable = True  # (a node's value is read-only; this one is nobody else's now)
        return True

    def _into(self, index: int, prim: Primitive, refs: tuple[Ref, ...], args: list[Any]) -> np.ndarray | None:
        """An operand buffer that step `index`, one NumPy ufunc (INTERPRETER_UFUNCS), may write
        its result into, or None: an intermediate of the graph at its last use, not an output,
        writable and of its own (as _Buffers.writable asks of a write in place; read twice by
        the step is fine: each element is read before it is written), of the result's shape
        and dtype (ufunc.resolve_dtypes on the operands' dtypes, a Python
        scalar's type for a scalar): the same loop runs on the same operands, so the same bits
        (NumPy computes an elementwise ufunc whose output is one of its same-layout operands
        element by element), without a new buffer (a fresh 8 MB buffer's page faults are a
        third of a 1e6-element add)."""
        found = None
        dtypes: list[Any] = []
        shape: tuple[int, ...] | None = None
        buffers, last_use, keep = self.buffers, self.last_use, self.keep
        for r, a in zip(refs, args):
            if type(a) is np.ndarray:
                if a.dtype.kind not in _INTO_KINDS or a.nbytes < _INTO_BYTES:
                    return None  # (a result as small as an operand: a fresh buffer is cheap)
                dtypes.append(a.dtype)
                if shape is None:
                    shape = a.shape
                elif a.shape != shape:
                    return None  # (a broadcast: the result may be larger than an operand)
                if (
                    found is None
                    and r[0] == "c"
                    and last_use[slot := (r[1], r[2])] == index
                    and slot not in keep
                    and a.base is None
                    and a.flags.writeable
                    and a.flags.c_contiguous
                    and id(a) not in buffers.passed_through
                    and not buffers.viewers.get(id(a))
                    and self.ops is not None
                    and not self.ops[r[1]][0].multiple_results  # (such a kernel may return one buffer twice)
                ):
                    found = a
            elif type(a) in _SCALAR_TYPES:
                dtypes.append(type(a))
            else:
                return None
        if found is None:
            return None
        try:
            resolved = _UFUNCS[prim].resolve_dtypes((*dtypes, None))  # type: ignore[attr-defined]  # (a ufunc)
        except (TypeError, ValueError):
            return None
        return found if resolved[-1] == found.dtype else None

    def dropped(self, ref: Ref, slot: Slot) -> None:
        if self.buffers.viewed:
            self.buffers.dropped(slot)


_LIBRARY = COST_LIBRARY.members  # (the live set: bound once for the hot path)
_UFUNCS = INTERPRETER_UFUNCS.rules  # (the live dict, likewise)
_INTO_KINDS = frozenset("biuf")  # (operand dtypes an INTERPRETER_UFUNCS rule holds for)
_SCALAR_TYPES = (float, int, bool)
_BLOCKS = INTERPRETER_BLOCKS.members  # (the live set and dict, likewise)
_BLOCK_COUNTS = INTERPRETER_BLOCK_COUNTS.rules
_BLOCK_SUMS = INTERPRETER_BLOCK_SUMS.rules
# A blocked run's operand or result: sliced by blocks, passed whole, a block buffer; a count's
# total; a float sum's nodes
_SLICE, _WHOLE, _SCRATCH, _COUNT, _SUM = "slice", "whole", "scratch", "count", "sum"
_PAIRWISE = "pairwise"  # (a blocked run's float sum: policies.INTERPRETER_BLOCK_SUMS)
_MULTIPLY, _SQUARE = np.multiply, np.square
_UNCAST = INTERPRETER_BLOCKS_UNCAST.members
_UNCAST_DTYPES = frozenset([np.dtype(np.float32), np.dtype(np.float64)])
# No block of fewer elements than this (a short tail joins the block before it): each block's
# output is then at least 64 bytes of float64 away from an input in another buffer, as
# NumPy's exp needs for its SIMD loop (policies.INTERPRETER_BLOCKS_UNCAST)
_MIN_BLOCK = 8
# NumPy's pairwise_sum (PW_BLOCKSIZE) does not split a run of this many elements or fewer
_PAIRWISE_LEAF = 128

# A blocked run (BlockedRun) only where its results have this many bytes of float64 or more
# (block_count; below, its buffers stay in the cache anyway), in blocks of this many elements:
# a block's few buffers
# (~32K float64 each) stay in L2 while the run's chain goes over them (Monte-Carlo's count,
# 1e6 points: blocks of 16-32K elements run it in well under half a whole-array chain's time)
_BLOCK_BYTES = 1 << 16
_BLOCK_ELEMENTS = 1 << 15
_RUN_PASSES = 8  # blocked_runs' passes at most (each drops the members that broke a run)
# A run only with this many intermediates nothing outside reads (the passes over memory it
# saves): with one, the step-by-step run writes the second step into the first's buffer
# anyway (NumpySteps._into) and blocks gain nothing where the operands are not in the cache:
# in bench_dayone's rounds Monte-Carlo's mean graph (square, negation live for exp) ran slower
# blocked than step by step, where its count graph (4 dead intermediates) ran faster.
_RUN_DEAD = 2

# An in-place ufunc step (NumpySteps._into) only for results of this many bytes or more: below,
# a fresh buffer comes from the allocator's free lists, and looking for a dead operand costs more
# than it saves (k-means' 800 KB `(X - c) ** 2` allocated anew each iteration was ~3,600
# page faults a fit when the C library had handed the last one back to the system).
_INTO_BYTES = 1 << 16


class _Undo:
    """The kernel namespace of a write into a leaf's own buffer (interpret): NumPy's, but its
    `index_update` keeps the values it overwrites, which `restore` writes back, last first,
    if the run fails (so that the leaf is as it was, and the graph can run again). `own`: the
    leaves whose buffers writes may take."""

    def __init__(self, own: frozenset[int] = frozenset()) -> None:
        self.own = own
        self.kept: list[tuple[np.ndarray, Any, np.ndarray]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(NUMPY, name)

    def index_update(self, x: np.ndarray, index: Any, value: Any) -> np.ndarray:
        self.kept.append((x, index, np.array(x[index], copy=True)))
        x[index] = value
        return x

    def restore(self) -> None:
        for x, index, before in reversed(self.kept):
            x[index] = before
            x.flags.writeable = False  # (a node's value again)
        self.kept.clear()


class _Buffers:
    """What the interpreter knows of its intermediate buffers, to decide whether a write may
    go into one in place (see _Buffers.writable). NumpySteps fills `passed_through` itself
    and calls `view` and `dropped` only where views exist."""

    __slots__ = ("passed_through", "viewers", "viewed")

    def __init__(self) -> None:
        self.passed_through: set[int] = set()  # ids of buffers a kernel returned as they came in
        self.viewers: dict[int, int] = {}  # id(buffer) -> live slots holding a NumPy view of it
        self.viewed: dict[Slot, int] = {}  # slot -> id(buffer) it views

    def writable(
        self, first: Any, slot: Slot, index: int, refs: tuple[Ref, ...], last_use: dict[Slot, int], keep: set[Slot]
    ) -> bool:
        """Whether step `index` may write in place into `first`, its first operand (the value
        in `slot`): no later step reads it (nor an output), the step reads it once, and it is
        a writable buffer of its own that no other value shares."""
        return (
            last_use[slot] == index
            and slot not in keep
            and refs.count(refs[0]) == 1
            and type(first) is np.ndarray
            and first.base is None
            and first.flags.writeable
            and id(first) not in self.passed_through
            and not self.viewers.get(id(first))  # no live view would see the write
        )

    def view(self, index: int, i: int, o: np.ndarray) -> None:
        """Output `i` of step `index` is `o`, a NumPy view of another buffer."""
        owner = _owner(o)
        self.viewed[(index, i)] = owner
        self.viewers[owner] = self.viewers.get(owner, 0) + 1

    def dropped(self, slot: Slot) -> None:
        """The value in `slot` was dropped (its views with it)."""
        owner = self.viewed.pop(slot, None)
        if owner is not None:
            self.viewers[owner] -= 1


def _pairwise_blocks(start: int, n: int, limit: int, out: list[tuple[int, int]]) -> None:
    """The blocks of `n` elements from `start` as NumPy's pairwise sum (`pairwise_sum` in
    its loops_utils) splits them, halves rounded down to a multiple of 8, down to nodes of at
    most `limit` elements (or _PAIRWISE_LEAF, which it does not split), appended to `out`:
    `add.reduce` of each is that node's sum in the whole array's."""
    if n <= limit or n <= _PAIRWISE_LEAF:
        out.append((start, start + n))
        return
    half = n // 2
    half -= half % 8
    _pairwise_blocks(start, half, limit, out)
    _pairwise_blocks(start + half, n - half, limit, out)


def _pairwise_total(n: int, limit: int, sums: Iterator[Any]) -> Any:
    """The sum of the nodes `sums` (their `add.reduce`, in _pairwise_blocks' order) added as
    NumPy's pairwise sum of the whole array adds them: left half plus right half, in the
    nodes' dtype (NumPy scalars)."""
    if n <= limit or n <= _PAIRWISE_LEAF:
        return next(sums)
    half = n // 2
    half -= half % 8
    left = _pairwise_total(half, limit, sums)
    return left + _pairwise_total(n - half, limit, sums)


@functools.cache  # (one answer per process: the NumPy it imported)
def numpy_sums_pairwise() -> bool:
    """Whether this NumPy's `add.reduce` of a whole contiguous 1-D float32 or float64 array is
    one pairwise sum, the tree that _pairwise_blocks and _pairwise_total follow (so a blocked
    run may end in a float mean: policies.INTERPRETER_BLOCK_SUMS). NumPy 2.4's is; 2.1's sums
    buffer-sized chunks (8192 elements) one after another, so there the blocks' sums would
    round otherwise and a mean is never blocked. Checked once, on random values of lengths
    past both the chunk and the block, in both dtypes: where the orders differ, such sums
    differ in their last bits (tests/test_interpreter_blocks.py checks the verdict)."""
    rng = np.random.default_rng(2026)
    for dtype in (np.float32, np.float64):
        for n in (3 * _BLOCK_ELEMENTS + 9, 5 * _BLOCK_ELEMENTS + 8195):
            a = rng.standard_normal(n).astype(dtype)
            bounds: list[tuple[int, int]] = []
            _pairwise_blocks(0, n, _BLOCK_ELEMENTS, bounds)
            sums = iter([np.add.reduce(a[s:e]) for s, e in bounds])
            if _pairwise_total(n, _BLOCK_ELEMENTS, sums) != np.add.reduce(a):
                return False
    return True


def _owner(a: np.ndarray) -> int:
    """id of the array that owns the memory a NumPy view shows."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return id(a)


def _numpy_step(
    prim: Primitive,
    args: list[Any],
    params: dict[str, Any],
    first_is_private: bool = False,
    into: np.ndarray | None = None,
) -> Any:
    """One primitive through its NumPy kernel, as the interpreter runs it: on a copy of an
    operand it writes into (unless `first_is_private`: a buffer nothing else will read);
    `into`: for a primitive of INTERPRETER_UFUNCS, the buffer its ufunc writes its result
    into, see NumpySteps._into."""
    if prim.in_place and not first_is_private:
        args[0] = np.array(args[0])  # a writable copy (of a NumPy scalar too: x[0] of a 1-D x)
    if prim.moves_data:
        return prim.kernel(NUMPY, *args, **params)
    return prim.kernel(_NUMPY_TIERED, *args, **params) if into is None else _UFUNCS[prim](*args, out=into)


def keeps_bits(prim: Primitive, params: dict[str, Any], dtypes: tuple[Any, ...]) -> bool:
    """Whether `prim` on operands of `dtypes` keeps its operands' bits, subnormals included, on
    both lazy tiers (the interpreter does not flush it): data movement (`moves_data`), a
    selection (`selects`), and a cast to the same floating-point type or its complex (XLA
    converts no float there, so keeps every bit)."""
    if prim.moves_data or prim.selects:
        return True
    if prim is not ASTYPE or not dtypes or not isinstance(dtypes[0], np.dtype) or dtypes[0].kind not in "fc":
        return False
    target = params["dtype"].np
    return target.kind in "fc" and np.zeros((), dtypes[0]).real.dtype == np.zeros((), target).real.dtype


def as_node_value(value: Any, dtype: Any) -> np.ndarray:
    """A host buffer as a node's value: the recorded dtype (the lowering's is the contract),
    in memory of its own (never a view of another value), and read-only: node values are
    immutable, and an export (DLPack, `__array__`) must not write into them. A view is copied
    in its own axis order (`order="K"`: a moved axis stays strided as in the view), so that a
    later interpreted reduction walks memory as NumPy does on the eager device's view: NumPy's
    summation order follows the layout (pairwise along the innermost axis in memory), and the
    same code must not round differently on the two devices (SciPy's `moment` of several
    orders against one by one)."""
    value = np.asarray(value)
    if value.dtype != dtype:
        value = value.astype(dtype, order="K")
    elif value.base is not None and not _kept_view(value):
        value = value.copy(order="K")
    value.flags.writeable = False
    return value


def _kept_view(view: np.ndarray) -> bool:
    """Whether a view may be a node's value as it is: it shows memory nobody writes (the
    read-only buffer of another node's value: `pts[:, 0]` of a leaf), so it is immutable too,
    and it shows at least half of that buffer, so it pins no much larger one (a small slice of
    a large array is copied, as before). Its layout is the eager device's view's, so a later
    reduction walks it as NumPy walks that view. (Monte-Carlo's `pts[:, 0]` and `pts[:, 1]`,
    1e6 points each, would be two copies per read.)"""
    owner = view
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner.flags.writeable or owner.base is not None:  # (memory of another kind: a buffer, mmap)
        return False
    if any(stride == 0 and n > 1 for stride, n in zip(view.strides, view.shape)):
        return False  # (a broadcast: NumPy keeps it read-only for good, and it may be exported writable)
    return 2 * view.nbytes >= owner.nbytes


def _arithmetic(prim: Primitive, params: dict[str, Any], first: Any) -> bool:
    """Whether a step computes new values (may write into a dying operand, NumpySteps._into):
    not a data movement, not a `selects` primitive, not a cast that keeps bits (`first`: a
    cast's operand array; None for any other step, or a cast of a Python scalar, arithmetic)."""
    if prim.moves_data or prim.selects:
        return False
    return not (prim is ASTYPE and first is not None and keeps_bits(prim, params, (np.asarray(first).dtype,)))


def _stored_as_xla_stores(value: Any) -> Any:
    """A step of x10array's complex formulas as a compiled program stores it: with its
    subnormals flushed where XLA flushes them (`k.rounded`, see _core.kernels._rounded). Only
    those formulas use it: an intermediate that XLA flushes changes their special values
    (infj / (3.4e38j) is NaN + NaN j when 1 / 3.4e38 is flushed, inf + NaN j when it is not),
    so both tiers take the same steps there; real arithmetic keeps NumPy's numerics."""
    return flush_subnormals(value) if xla_flushes() else value


# The NumPy kernel namespace of the lazy tiers' steps (`tiered`: the complex formulas written out
# from real steps, as the compiled tier computes them, see _core.kernels: NUMPY.tiered)
_NUMPY_TIERED = NumpyNamespace(**vars(NUMPY))
_NUMPY_TIERED.tiered = True
_NUMPY_TIERED.rounded = _stored_as_xla_stores
