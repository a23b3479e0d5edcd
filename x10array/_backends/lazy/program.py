"""Stage 7, the program: the one builder from a traced graph to a program, and what a
program is (`Program`): its key, its cost estimate, its place in the program cache, the tier
decision, its interpreted run, its jitted function (one device or a mesh), its lowering for
`x10array.debug`, and which inputs it may donate.

Every `GraphKey` is built here (`key_for`), and every program (`build`): the barrier's,
cached by key in an LRU (X10ARRAY_CACHE_SIZE), x10array.compile's (capture.py, its scalars
packed: a program of its own, kept by its `Captured`) and the one `inspect.lower` shows.
The tier decision (`Program.interprets`) asks tiering.py (ski rental on a fixed cost model,
never measured time) whether this run is interpreted or compiled. Both tiers
run a graph through the one step walker, `trace.replay`: the interpreter with NumPy's
kernels (interpreter.NumpySteps), the jitted function with jax's (`XlaSteps`).
"""

from __future__ import annotations

import collections
import functools
import math
import struct
import time
import weakref
from collections.abc import Callable, Sequence
from operator import eq, gt, itemgetter
from sys import getrefcount
from typing import Any

import numpy as np

from ..._core import metrics as _metrics
from ..._core import settings
from ..._core.devices import Device
from ..._core.kernels import (
    ROUNDED_VALUES,
    ROUNDING_GUARD,
    SELECT_WRITE,
    jax_namespace,
)
from ..._core.lru import Entry, tick
from ..._core.metrics import COUNTERS
from ..._core.policies import COLUMN_READS, MATRIX_PRODUCTS, SLICE_BOXES
from ..._core.primitive import Primitive
from ..._core.user_code import user_location
from ..._core.xla_options import compiler_options
from ..._core.xla_options import kind_of as xla_kind_of
from .graph import Call, Node
from .interpreter import Schedule, interpret
from .placement import placement_of
from .runtime import RUNTIME
from .shapes import ShapeDtype
from .tiering import (
    COST,
    FEEDBACK_RUNS,
    NEVER,
    OP_BY_OP_LIMIT,
    compile_pays,
    estimated_interpret_cost,
    reduced_axes,
    several_processes,
)
from .trace import (
    GraphKey,
    Ref,
    Slot,
    Traced,
    follow,
    follow_specs,
    follower,
    outside_references,
    replay,
    rerun_leaves,
    walk,
)

ONE = np.float64(1.0)  # the runtime 1.0 of a barrier's program (see Program)


class Program:
    """A graph's structure, what to run independent of the values: its key, its steps, its
    counters (sightings, the estimated cost of interpreting it) and, once compiled, its
    jitted function (`compiled`). Made by `build` only.

    `unpack` and `one`: how the jitted function takes its scalars, for x10array.compile's
    programs (see capture.ScalarPlan; `one`: the runtime 1.0 of the complex formulas' steps,
    _core.kernels._rounded, placed on the device once); a barrier's takes its Python floats
    and ints packed into a float64 and an int64 array per call (`packing`, a PackedScalars;
    None: none to pack), its other scalars as they are, and a 1.0 placed on the device at its
    first compiled run (`function`; a NumPy 1.0 until then: ONE)."""

    __slots__ = (
        "calls", "outputs", "n_leaves", "seen", "interpret_cost", "compile_cost", "interpreted", "compiled", "key",
        "kind", "unpack", "one", "agreed", "interpret_best", "compiled_runs", "compiled_best",
        "demoted", "packing", "plan_tries", "schedule", "run_costs", "keeps", "spin_misses",
    )  # fmt: skip

    def __init__(self, calls: list[Call], key: GraphKey, interpret_cost: float, unpack: Any, one: Any):
        self.calls = [(c.prim, c.params) for c in calls]  # [(prim, params)]
        self.kind = _options_kind(calls)  # which XLA options it compiles with (_core.xla_options)
        self.outputs = key.outputs  # ((call index, output index), ...)
        self.n_leaves = len(key.leaf_avals)
        self.seen = 0
        self.interpret_cost = interpret_cost  # estimated seconds interpreting costs more per run (COST)
        self.compile_cost = COST.compile_seconds(calls)  # its estimated compile (COST)
        # the fixed cost of one compiled run (COST.run_seconds), at a barrier and read at once
        args = self.n_leaves + len(self.outputs)
        self.run_costs = (COST.run_seconds(args, False), COST.run_seconds(args, True))
        self.interpreted = 0.0  # what a compile would have saved on its interpreted runs so far (`saving`)
        self.compiled: Any = None
        self.key = key
        self.keeps = tuple([not d for d in key.donate])  # per leaf, whether a run keeps it (not donated)
        self.unpack = unpack
        self.packing: PackedScalars | None = None  # how a barrier's run packs its scalars for `unpack`
        self.one = one
        self.agreed = False  # checked against the other processes' (see `agree`)
        # the feedback (see ran_compiled): measured seconds, the fastest interpreted and
        # compiled runs, and whether the compiled program lost
        self.interpret_best = math.inf
        self.compiled_runs = 0
        self.compiled_best = math.inf
        self.demoted = False
        self.plan_tries = 0  # the barrier's plans of it that could not be kept (see barrier_program)
        self.schedule: Any = None  # what its interpreted runs need of its key (interpreter.Schedule)
        self.spin_misses = 0  # reads of its results that spun in vain (executor.await_read)

    def agree(self) -> None:
        """Before its first run (or anything placed for it across processes): on a mesh of
        several processes, check once that every process builds this same program
        (placement.OnMesh.agree); nothing to do on one device."""
        if not self.agreed:
            placement_of(self.key.device).agree(self.key)
            self.agreed = True

    # -- the tiers --

    def interprets(self) -> bool:
        """The tier decision on a CPU: whether this run is interpreted on the host (a cold graph,
        or one whose compile has not paid yet, see compile_pays), else compiled (or run
        compiled). A device whose cold graphs are not interpreted on the host (an accelerator, a
        mesh: placement.interprets_cold_graphs) never interprets (see runs_op_by_op).
        A graph of more than X10ARRAY_COMPILE_LIMIT operations is always interpreted (the
        compile refusal: XLA's compile memory grows with the graph, gigabytes for ten thousand
        operations; a rule of the graph alone, so a script gives the same bits on every run)."""
        if not placement_of(self.key.device).interprets:
            return False
        threshold = settings.get("X10ARRAY_COMPILE_THRESHOLD")
        return (
            threshold >= NEVER
            or len(self.calls) > settings.get("X10ARRAY_COMPILE_LIMIT")
            or (self.demoted and threshold > 1)
            or (self.compiled is None and (self.seen < threshold or (threshold > 1 and not compile_pays(self))))
        )

    def runs_op_by_op(self) -> bool:
        """The tier decision on an accelerator (placement.op_by_op): whether this run goes op by
        op on the device (interpreter.run_on_device), else compiled. A structure runs op by op
        until its X10ARRAY_COMPILE_THRESHOLD-th sighting (by default its second: a structure
        seen again is a loop's, which its compiled program then serves), every time under
        compile_threshold(None), and never when it has more than OP_BY_OP_LIMIT operations (a
        model's step, compiled at once: op by op it would compile a program per operation
        anyway, tiering.py). No ski rental: an accelerator's dispatch of one operation costs
        about what a compiled program's call does, so a loop gains from its second run on."""
        if not placement_of(self.key.device).op_by_op:
            return False
        threshold = settings.get("X10ARRAY_COMPILE_THRESHOLD")
        return threshold >= NEVER or (
            self.compiled is None and self.seen < threshold and len(self.calls) <= OP_BY_OP_LIMIT
        )

    def interpret(self, traced: Traced, targets: list[Node], device: Device, read: bool = True) -> tuple[Any, ...]:
        """The interpreted run (the cold tier): the values of `targets`, counted as what a
        compile could have saved (and timed, for the feedback: see ran_compiled). `read`: the
        caller waits for the values (a read, a barrier with wait=True), which a compiled run
        would have made it wait for (see _CostModel.run_seconds)."""
        start = time.perf_counter()
        schedule = self.schedule
        if schedule is None:
            schedule = self.schedule = Schedule(self.key.ops, traced.outputs)
        out = interpret(traced, targets, device, schedule, self.key.donate)
        self.interpret_best = min(self.interpret_best, time.perf_counter() - start)
        if schedule.recost:  # (a run it credited as blocked was not: credited whole from now on)
            schedule.recost = False
            self.interpret_cost = estimated_interpret_cost(traced.calls, targets, schedule.blocks, log=False)
        self.interpreted += self.saving(read, COST.place_seconds(traced.leaves))
        return out

    def saving(self, read: bool, placed: float = 0.0) -> float:
        """What compiling this graph is estimated to save on one run (never less than 0): what
        interpreting it costs more than running it compiled (`interpret_cost`) less the fixed
        cost of a compiled run (`run_costs`), which a run whose values are `read` at once pays
        more of, and less `placed`, what that run would spend placing its leaves
        (_CostModel.place_seconds)."""
        return max(0.0, self.interpret_cost - self.run_costs[read] - placed)

    # -- the feedback --

    def measures(self) -> bool:
        """Whether this compiled run is one of the FEEDBACK_RUNS that the feedback times to its
        end (the caller waits for its outputs: a compiled run is otherwise asynchronous)."""
        return (
            self.compiled_runs < FEEDBACK_RUNS
            and not self.demoted
            and self.compiled is not None
            and self.interpret_best < math.inf
            and settings.get("X10ARRAY_TIER_FEEDBACK")
        )

    def ran_compiled(self, seconds: float) -> None:
        """The feedback: a compiled run (not the first, which compiled) took `seconds`, from
        before it placed its NumPy leaves (executor.run_compiled: an interpreted run reads them
        where they are, and a view leaf is placed again at every compiled run). After
        FEEDBACK_RUNS of them, a program whose fastest compiled run was slower than its fastest
        interpreted run goes back to interpreting for good (`demoted`), and
        X10ARRAY_LOG_COMPILES says why. Where the tiers give the same bits (elementwise
        arithmetic, comparisons, casts, data movement, integer work), a decision from the clock
        changes speed, never values; but every process of a multi-process run must run the same
        programs (see `agree`), so there and where the cost rule is off
        (X10ARRAY_COMPILE_THRESHOLD=1) the deterministic rule alone decides. Opt-in
        (X10ARRAY_TIER_FEEDBACK=1): where the tiers differ in the last bits (real tanh, exp,
        expm1, float32 sin and log at some values; every floating-point sum, which each tier
        adds in its own order: docs/eager-and-lazy.md "What the tiers guarantee"), a result's
        last bits would depend on the clock, which the default keeps out."""
        if self.demoted or self.interpret_best == math.inf or self.compiled_runs >= FEEDBACK_RUNS:
            return
        self.compiled_runs += 1
        self.compiled_best = min(self.compiled_best, seconds)
        if (
            self.compiled_runs == FEEDBACK_RUNS
            and self.compiled_best > self.interpret_best
            and settings.get("X10ARRAY_COMPILE_THRESHOLD") > 1
            and settings.get("X10ARRAY_TIER_FEEDBACK")
            and not several_processes()
        ):
            self.demoted = True
            if _metrics.log_compiles():
                _, filename, lineno = user_location()
                print(
                    f"x10array: interpreting again a graph of {len(self.calls)} operations: its compiled runs took"
                    f" {1e3 * self.compiled_best:.3g} ms at best, its interpreted runs {1e3 * self.interpret_best:.3g}"
                    f" ms, at {filename}:{lineno}",
                    flush=True,
                )

    def function(self, leaf_values: list[Any]) -> Any:
        """The graph as a jitted function of (donated leaves, kept leaves, scalars); jax
        compiles it at its first call and dispatches later calls through its fast path. A
        function of its own per program: the program holds the only reference to it, so
        evicting the program frees its executable (and runtime._evicted_programs what jax's
        tracing caches kept). Its shardings are the placement's (placement.OnMesh.jit: the inputs'
        from `leaf_values`, the pinned outputs' from the key)."""
        key = self.key
        placement = placement_of(key.device)
        jitted = placement.jit(self._graph_function(), key, leaf_values, self.xla_options())
        if self.one is ONE:  # (a barrier's: placed once, where a NumPy 1.0 was converted at every call)
            import jax

            with jax.enable_x64(True):
                self.one = jax.device_put(ONE, placement.constants_target())
        # (a partial, not a lambda: a cached run must not enter Python code, see executor.run_and_adopt)
        return functools.partial(jitted, self.one)

    def xla_options(self) -> dict[str, Any] | None:
        """The XLA options it compiles with: its kind's on its device's platform (_core.xla_options)."""
        return compiler_options(self.key.device.kind.value, self.kind)

    def lower(self, leaf_values: list[Any], scalars: list[Any]) -> Any:
        """The jitted function lowered on the leaves' shapes and dtypes (a jax `Lowered`, for
        x10array.debug: nothing is read or run): exactly the program a run compiles, on a
        mesh its SPMD program."""
        import jax

        jitted = self.function(leaf_values)
        donated = [jax.ShapeDtypeStruct(a[0], a[1]) for a, d in zip(self.key.leaf_avals, self.key.donate) if d]
        kept = [jax.ShapeDtypeStruct(a[0], a[1]) for a, d in zip(self.key.leaf_avals, self.key.donate) if not d]
        args: Any = scalars if self.packing is None else self.packing.pack(scalars)
        with jax.enable_x64(True), jax.default_device(self.key.device.jax_device):
            return jitted.func.lower(*jitted.args, donated, kept, args)

    def _graph_function(self) -> Any:
        """The graph as a function of (one, donated leaves, kept leaves, scalars) for jax to
        trace: the leaves back in the graph's order, the scalars unpacked (`unpack`), its
        steps replayed (trace.replay with XlaSteps) with `one` as the runtime 1.0 of the
        complex formulas' steps (_core.kernels._rounded)."""
        k = jax_namespace()
        key = self.key
        ops, outputs, donate, unpack = key.ops, self.outputs, key.donate, self.unpack
        params_of = [p for _, p in self.calls]
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

    def callable(self, leaf_values: list[Any]) -> Any:
        """What a compiled run calls: `compiled_function`'s (on a mesh of several processes,
        every Nth run's program compared across them first, placement.OnMesh.checked_runs)."""
        return compiled_function(self, leaf_values)


def compiled_function(program: Program, leaf_values: list[Any]) -> Any:
    """The function a program's first compiled run makes and later runs call (a module
    function, so that a test can replace it to inject a fault)."""
    run = program.function(leaf_values)
    return placement_of(program.key.device).checked_runs(run, program.key)


_COLUMN_READS = COLUMN_READS.rules  # (the live dict)


def _options_kind(calls: list[Call]) -> Any:
    """The kind of the program of `calls` for its XLA options (_core.xla_options.kind_of):
    from the shape and axes of each reduction (an operation with a `keepdims` parameter),
    whether it reduces elementwise work on a column (its operand is an elementwise
    operation's result that depends, through elementwise operations only, on a column read,
    policies.COLUMN_READS: `mean(exp(-(p[:, 0] ** 2)))`), and whether one of its operations is
    a matrix product (policies.MATRIX_PRODUCTS). Speed only: every kind gives the bits the
    tiers promise (tests/test_tiers.py)."""
    reductions = []
    columns: set[int] = set()  # id() of the calls whose result is a column, or elementwise work on one
    for c in calls:
        prim = c.prim
        if prim in MATRIX_PRODUCTS.members:
            return xla_kind_of([], True)
        params = c.params
        if prim.elementwise:
            if any(type(i) is Node and id(i.call) in columns for i in c.inputs):
                columns.add(id(c))
            continue
        if not c.inputs or type(x := c.inputs[0]) is not Node:
            continue
        if (rule := _COLUMN_READS.get(prim)) is not None and rule(params, x.shape):
            columns.add(id(c))
        elif (axes := reduced_axes(c)) is not None:
            of_column = x.call is not None and x.call.prim.elementwise and id(x.call) in columns
            reductions.append((x.shape, axes, of_column))
    return xla_kind_of(reductions, False)


# -- building programs --------------------------------------------------------------------------


def key_for(traced: Traced, targets: list[Node], device: Device, donate: tuple[bool, ...]) -> GraphKey:
    """The key of the graph `traced` whose outputs are `targets` (the first
    len(targets) of its outputs), donating `donate`: the one place a GraphKey is made. On a
    mesh the inputs' and pinned outputs' layouts are part of it (spmd.key_shardings)."""
    outputs = traced.outputs if len(targets) == len(traced.outputs) else traced.outputs[: len(targets)]
    shardings = placement_of(device).key_shardings(traced, targets)
    return GraphKey(device, traced.ops, outputs, traced.leaf_avals, donate, shardings)


def build(
    traced: Traced,
    targets: list[Node],
    device: Device,
    donate: tuple[bool, ...],
    *,
    cached: bool = True,
    unpack: Any = None,
    one: Any = ONE,
) -> Program:
    """The program of the graph `traced` computing `targets`: with `cached`, the program
    cache's entry for its key (made at its first sighting), this sighting counted; else a
    program of its own (x10array.compile's, with its `unpack`/`one`; debug's)."""
    key = key_for(traced, targets, device, donate)
    if not cached:
        program = Program(traced.calls, key, 0.0, unpack, one)
        if unpack is None:  # (debug's: the barrier's program)
            _pack_scalars(program)
        return program
    programs = RUNTIME.programs
    program = programs.get(key)
    if program is None:
        # (its interpreted runs' schedule, made now: the cost reads its blocked runs)
        schedule = Schedule(traced.ops, traced.outputs)
        cost = estimated_interpret_cost(traced.calls, targets, schedule.blocks)
        program = programs.put(key, Program(traced.calls, key, cost, None, ONE))
        program.schedule = schedule
        _pack_scalars(program)
    program.seen += 1
    return program


# -- plans: a barrier's graph structure seen before ---------------------------------------------


class Plan:
    """What a barrier decided for a graph structure, reused when the same structure comes back
    (a repeated step): the barrier then follows the plan from its targets (trace.follow: the
    graph's calls, leaves and Python scalars, each checked against the plan's), checks the
    runtime facts the decisions depended on (`_facts`), and runs the plan's program, skipping
    the walk (trace.walk), the donation analysis (`donation`) and the key building (`key_for`).

    The facts, read from reference counts (trace.outside_references) as the walk and donation
    read them: which pending values inside the graph something outside it holds, and whether
    an array owns each (the walk makes them outputs, the owned ones first: `joined`); per leaf,
    whether it is private, i.e. nothing outside sees it and it was never exported (donation);
    and, where donation asked for the rerun leaves, that no call of the graph is held from
    outside (then rerun_leaves is empty, as it was: `calls_free`). Equal facts on an equal
    structure give the walk's key, outputs and donation exactly; other facts fall back to the
    walk. A plan is kept only where its own check of the facts reproduced the walk's decisions
    (`remember`), on one device (a mesh key holds layouts), for graphs of one-output calls
    whose targets keep no pending operand (a transpose's origin), and no rerun leaf: others
    take the walk every time."""

    __slots__ = (
        "key", "steps", "heads", "n_scalars", "slots", "slot_uses", "head_slot", "joined", "joined_order",
        "leaf_uses", "private", "calls_free", "donate_on", "hits", "generated", "inner", "inner_known", "leaf_known",
        "entry", "changes", "inner_of", "inner_total",
    )  # fmt: skip

    def __init__(self, key: GraphKey, traced: Traced, n_heads: int):
        self.key = key
        self.steps, self.slots = follow_specs(key.ops, key.leaf_avals)
        self.heads = key.outputs[:n_heads]  # where the barrier's targets are
        self.n_scalars = len(traced.scalars)
        uses: collections.Counter[Slot] = collections.Counter()
        for _, _, refs in key.ops:
            uses.update([(r[1], r[2]) for r in refs if r[0] == "c"])
        self.slot_uses = [uses[s] for s in self.slots]  # how many times the graph reads each pending value
        heads = set(self.heads)
        self.head_slot = [s in heads for s in self.slots]
        self.joined: list[tuple[int, bool]] = []  # the facts: (slot, owned by an array) of each held value
        self.joined_order: list[int] = []  # the slots the walk joined to the targets, in its order
        self.leaf_uses = traced.leaf_uses
        self.private: tuple[bool, ...] | None = None  # the facts: per leaf, private (donation)
        self.calls_free = False  # the facts: no call held from outside (checked where donation asked)
        self.donate_on = settings.get("X10ARRAY_DONATE")
        self.hits = 0  # barriers that followed it
        # for _facts: the slots of no target, and the references to each value known to _facts
        # (the graph's uses, `internal`, the list it maps, map's own), and to each leaf (the
        # graph's uses, `leaves`, map's own)
        self.inner = [k for k in range(len(self.slots)) if not self.head_slot[k]]
        self.inner_known = [self.slot_uses[k] + 2 + _MAP_OWN for k in self.inner]  # (+ the list mapped)
        self.inner_total = sum(self.inner_known)
        self.inner_of = _members(self.inner)  # (the values of those slots, as a tuple: one C call)
        # its program's entry in the program cache (a weak reference: a plan never keeps a
        # program the cache dropped), valid while the cache's `changes` are these (an entry of
        # the cache's own, which no insertion or removal since has touched): a repeated step's
        # hit refreshes its last use without hashing the key (~2-4 us, the Adam fit's 32 operations)
        self.entry: Any = _NO_ENTRY
        self.changes = -1
        self.leaf_known = [u + 1 + _MAP_OWN for u in self.leaf_uses]
        # `follow` generated for these steps (trace.follower), from FOLLOWER_AFTER hits on
        self.generated: Any = None

    def followed(self, targets: list[Node]) -> tuple[list[Call], list[Node], list[Any], list[Node], bool] | None:
        """trace.follow of this plan from `targets`: by the plan's generated follower once it
        has one (see FOLLOWER_AFTER), else by `follow` itself."""
        if self.generated is not None:
            return self.generated(targets)
        return follow(self.steps, self.heads, len(self.leaf_uses), self.n_scalars, len(self.slots), targets)

    def hit(self) -> None:
        """A barrier followed this plan: from its FOLLOWER_AFTER-th time on, it follows by a
        function generated for its steps (trace.follower), if it has FOLLOWER_STEPS or fewer."""
        self.hits += 1
        if self.generated is None and self.hits >= FOLLOWER_AFTER and len(self.steps) <= FOLLOWER_STEPS:
            self.generated = follower(self.steps, self.heads, len(self.leaf_uses), self.n_scalars, len(self.slots))


def _NO_ENTRY() -> None:  # (a Plan's `entry` before its first hit: a dead weak reference)
    return None


# the hits after which a plan follows by a generated function (trace.follower), and the most
# steps it is generated for: generating costs Python's compiler far more per step (and more than
# linearly in steps) than a generated follow saves a step at each hit, so it pays after a
# few hundred hits: a plan hit this often is a repeated step's, hit many times more
FOLLOWER_AFTER = 128
FOLLOWER_STEPS = 256
PLAN_TRIES = 3  # plans of a program that could not be kept before the barrier stops trying
PLANS_PER_HEAD = 4  # plans kept per head (the barrier's targets' primitives and shapes), last hit or kept first
RETRY_AFTER = 256  # barriers of a thrashing head (_Plans.thrashing) that walk before it plans again


class _Plans(list):  # type: ignore[type-arg]  # (of Plan)
    """The plans of one head, the last hit or kept first (the one a repeated step follows is
    tried first; the one left out when a new plan is kept is the least recently used), with the
    head's record: plans kept and plans hit.
    A head whose graphs differ from barrier to barrier more than PLANS_PER_HEAD plans cover
    (k-means' graph breaks did, before a plan followed leaves of other shapes) would follow and
    miss every plan and keep a new one each time; once it kept 2 * PLANS_PER_HEAD plans and
    hit with fewer than half as many, it walks without following or keeping plans for
    RETRY_AFTER barriers, then starts its record again."""

    __slots__ = ("kept", "hits", "skipped")

    def __init__(self, plan: Plan):
        super().__init__([plan])
        self.kept, self.hits, self.skipped = 1, 0, 0

    def thrashing(self) -> bool:
        if self.kept < 2 * PLANS_PER_HEAD or self.hits * 2 >= self.kept:
            return False
        self.skipped += 1
        if self.skipped >= RETRY_AFTER:
            self.kept, self.hits, self.skipped = 0, 0, 0
        return True


def _head(targets: list[Node], device: Device) -> tuple[Any, ...]:
    """The plan cache's key of a barrier's targets: the device, their primitives and shapes
    (what `follow` then checks is the rest of the graph)."""
    return (device, tuple([n.call.prim for n in targets]), tuple([n.shape for n in targets]))  # type: ignore[union-attr]


def barrier_program(targets: list[Node], device: Device, plans: bool = True) -> tuple[Traced, Program]:
    """The traced graph behind `targets` (which the walk extends in place by the held values
    it makes outputs) and its program, as a barrier runs it: from a plan when the graph's
    structure and the facts its decisions depended on were seen before (Plan), else walked
    (trace.walk), its donation decided and its program built (a plan kept for next time).
    X10ARRAY_PLAN_CHECK walks a planned graph too and raises if anything differs. Without
    `plans` (the executor's bounds-checked targets), or on a mesh (see Plan), it walks."""
    if not plans or not placement_of(device).plans:
        traced = walk(targets, device)
        return traced, build(traced, targets, device, donation(traced, targets))
    head = _head(targets, device)
    check = _walked(targets, device) if settings.get("X10ARRAY_PLAN_CHECK") else None
    found = _planned(head, targets, device)
    if found is not None:
        if check is not None:
            _check_plan(check, found, targets)
        return found
    n_heads = len(targets)
    traced = walk(targets, device)
    mask, private, rerun = _donation(traced, targets)
    program = build(traced, targets, device, mask)
    # a plan from the key's second sighting on (a graph seen once, a read of a new value, costs
    # no plan), until PLAN_TRIES of them could not be kept (a graph that cannot have one)
    if program.seen > 1 and program.plan_tries < PLAN_TRIES:
        if not _remember(head, traced, targets, n_heads, program, private, rerun):
            program.plan_tries += 1
    return traced, program


def _walked(targets: list[Node], device: Device) -> tuple[Any, ...]:
    """The walk's result for `targets` (left as they are), as ids and the key (X10ARRAY_PLAN_CHECK)."""
    walked = list(targets)
    traced = walk(walked, device)
    key = key_for(traced, walked, device, donation(traced, walked))
    return key, [id(n) for n in walked], [id(n) for n in traced.leaves], [id(c) for c in traced.calls], traced.scalars


def _check_plan(check: tuple[Any, ...], found: tuple[Traced, Program], targets: list[Node]) -> None:
    key, walked, leaves, calls, scalars = check
    traced, program = found
    differs = [
        what
        for what, same in (
            ("key", program.key == key),
            ("targets", [id(n) for n in targets] == walked),
            ("leaves", [id(n) for n in traced.leaves] == leaves),
            ("calls", [id(c) for c in traced.calls] == calls),
            ("scalars", len(scalars) == len(traced.scalars) and all(a is b for a, b in zip(scalars, traced.scalars))),
        )
        if not same
    ]
    if differs:
        raise RuntimeError(f"x10array: X10ARRAY_PLAN_CHECK: the plan's {', '.join(differs)} differ from the walk's")


def _planned(head: tuple[Any, ...], targets: list[Node], device: Device) -> tuple[Traced, Program] | None:
    """A plan's traced graph and program for `targets` (joined in place as the walk would),
    or None if no plan of this head fits the graph and its facts, or its program left the cache."""
    plans = RUNTIME.plans.get(head)
    if plans is None or plans.thrashing():
        return None
    for plan in plans:
        got = plan.followed(targets)
        if got is not None:
            break
    else:
        return None
    calls, leaves, scalars, internal, reshaped = got  # (reshaped: leaves of other shapes, another key)
    del got
    if plan.donate_on != settings.get("X10ARRAY_DONATE"):
        return None
    key = plan.key
    joined, private, calls_free = _facts(plan, calls, leaves, internal, plan.calls_free)
    if joined != plan.joined or private != plan.private or (plan.calls_free and not calls_free):
        return None
    if not reshaped:
        programs = RUNTIME.programs
        entry = plan.entry() if plan.changes == programs.changes else None  # (the one found last time)
        if entry is None:
            entry = programs.entries.get(key)
            if entry is None:  # (evicted: built again by the walk's path)
                return None
            # (an LRU without weak_entries, a test's: looked up at every hit)
            plan.entry = weakref.ref(entry) if type(entry) is Entry else _NO_ENTRY
            plan.changes = programs.changes
        entry[1] = tick()  # (a use: LRU.get's)
        program = entry[0]
        targets.extend([internal[k] for k in plan.joined_order])
        program.seen += 1
    else:
        # the plan's structure on leaves of other shapes (k-means' selections `X[labels == j]`):
        # the walk's key with these shapes, and donation's decision for them from the facts, by
        # donation's own slot rule (_claim_slots) over the outputs the walk would have (the
        # targets, then the joined values). Where a private leaf takes a slot, the rule asks for
        # the rerun leaves: none when no call is held from outside (read then, unless the plan's
        # facts read it already), else the walk decides.
        outputs = targets + [internal[k] for k in plan.joined_order]
        mask, asked = _claim_slots(leaves, outputs, private or (False,) * len(leaves), set)
        del outputs
        if asked is not None and not (calls_free or _calls_free(calls, 0)):
            return None
        targets.extend([internal[k] for k in plan.joined_order])
        leaf_avals = tuple([(n.shape, n.dtype) for n in leaves])
        traced = Traced(key.ops, key.outputs, leaf_avals, calls, leaves, plan.leaf_uses, scalars)
        program = build(traced, targets, device, mask)
    plans.hits += 1
    plan.hit()
    COUNTERS.plan_hits += 1
    if plans[0] is not plan:  # (the plan hit is followed first next time: a step's graph after
        plans.remove(plan)  # its first, whose own plan was kept later, costs no failed follow)
        plans.insert(0, plan)
    return Traced(key.ops, program.key.outputs, program.key.leaf_avals, calls, leaves, plan.leaf_uses, scalars), program


def _facts(
    plan: Plan,
    calls: list[Call],
    leaves: list[Node],
    internal: list[Node],
    with_calls: bool,
    extra: int = 0,
    in_targets: frozenset[int] = frozenset(),
) -> tuple[list[tuple[int, bool]], tuple[bool, ...] | None, bool]:
    """The runtime facts (see Plan) of the graph `trace.follow` found (`calls`, `leaves`, the
    pending values it reads, `internal`, by slot): the held values (slot, owned by an array),
    each leaf's privacy (None without donation) and, `with_calls`, whether no call is held
    from outside. `extra`: references to each call and leaf beyond the graph's and these
    lists (remember's: the walk's lists); `in_targets`: the slots whose value a target list
    holds too (the ones the walk joined)."""
    slot_uses = plan.slot_uses
    joined = []
    # The common case first, in C (sys.getrefcount mapped over the values, `_MAP_OWN` being map's
    # own references): no pending value held from outside, i.e. the counts add up to the plan's
    # known references (each count is at least its known ones, so the sum is theirs only if
    # every count is); where one is, the loop below finds which, reading the counts as
    # outside_references does.
    inner = plan.inner  # (the slots of no target: internal[k] is the value the graph reads)
    if not in_targets:
        held = sum(map(getrefcount, plan.inner_of(internal))) != plan.inner_total
    else:
        known = [n + (k in in_targets) for k, n in zip(inner, plan.inner_known)]
        held = True in map(gt, map(getrefcount, plan.inner_of(internal)), known)
    if held:
        for k in inner:
            # known references: the graph's uses, `internal` (and the walk's targets)
            if outside_references(internal[k], slot_uses[k] + 1 + (k in in_targets)) > 0:
                owner = internal[k].owner
                array = owner() if owner is not None else None
                joined.append((k, array is not None and array._data is internal[k]))
                array = None
    private = None
    if plan.donate_on:
        # known references: the graph's uses and `leaves` (and the walk's)
        alone = map(
            eq, map(getrefcount, leaves), plan.leaf_known if not extra else [u + extra for u in plan.leaf_known]
        )
        private = tuple([a and not n.exported for a, n in zip(alone, leaves)])
    return joined, private, with_calls and _calls_free(calls, extra)


def _calls_free(calls: list[Call], extra: int) -> bool:
    """Whether nothing outside a followed graph holds one of its `calls` (see _facts)."""
    # known references: the call's one output node and `calls` (and the walk's: `extra`); each
    # count is at least that, so the counts add up to it only if none is more (as in _facts)
    return sum(map(getrefcount, calls)) == len(calls) * (2 + extra + _MAP_OWN)


# the references that map(sys.getrefcount, a_list) counts beyond the list's: the item it holds
# while it calls (checked against outside_references by tests/test_plans.py)
_MAP_OWN = next(map(getrefcount, [object()])) - 1


def _remember(
    head: tuple[Any, ...],
    traced: Traced,
    targets: list[Node],
    n_heads: int,
    program: Program,
    private: tuple[bool, ...] | None,
    rerun: set[int] | None,
) -> bool:
    """Keep a plan of the graph just walked (`targets`: the barrier's `n_heads`, then those
    the walk joined) if it can have one (see Plan) and its facts, counted as a later barrier
    counts them, reproduce the walk's and donation's decisions; whether it was kept."""
    key = program.key
    plans = RUNTIME.plans.get(head)
    if plans is not None and plans.skipped:  # (a thrashing head: see _Plans)
        return True
    if rerun or key.shardings or any([c.prim.multiple_results for c in traced.calls]):
        return False
    for n in targets[:n_heads]:  # (a transpose keeps its pending operands: the walk adds them to the targets)
        origin = getattr(n, "origin", None)
        if origin is not None and any([type(i) is Node and i.value is None for i in origin[2]]):
            return False
    plan = Plan(key, traced, n_heads)
    got = plan.followed(targets[:n_heads])
    if got is None:
        return False
    calls, leaves, _, internal, _ = got
    del got
    if any([a is not b for a, b in zip(calls, traced.calls)]) or any(
        [a is not b for a, b in zip(leaves, traced.leaves)]
    ):
        return False
    call_index = {id(c): j for j, c in enumerate(calls)}
    slot_index = {s: k for k, s in enumerate(plan.slots)}
    order = [slot_index.get((call_index[id(n.call)], n.index), -1) for n in targets[n_heads:]]
    if -1 in order:  # (a joined value that the graph does not read: a sibling)
        return False
    owned = [(a := n.owner() if n.owner is not None else None) is not None and a._data is n for n in targets[n_heads:]]
    walk_joined = sorted(zip(order, owned))
    joined, mine, free = _facts(plan, calls, leaves, internal, True, 1, frozenset(order))
    if joined != walk_joined or mine != private or (rerun is not None and not free):
        return False  # (facts that a later barrier could not read as the walk did: no plan)
    plan.joined, plan.joined_order, plan.private, plan.calls_free = joined, order, private, rerun is not None
    if plans is None:
        RUNTIME.plans.put(head, _Plans(plan))
    else:
        plans.insert(0, plan)
        del plans[PLANS_PER_HEAD:]
        plans.kept += 1
    return True


def _pack_scalars(program: Program) -> None:
    """Make a barrier's program take its Python floats and ints packed (PackedScalars), if it
    reads enough of them."""
    packing = PackedScalars.of(program.key.ops)
    if packing is not None:
        program.unpack, program.packing = packing.unpack, packing


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
            (struct.Struct(f"={len(g)}{'d' if k[0] == _FLOAT64 else 'q'}").pack, _members(g))
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


def _members(indices: list[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The items of a list at `indices`, as a tuple (operator.itemgetter, which gives one item
    alone for one index and takes no empty list)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if indices:
        (i,) = indices
        return lambda items: (items[i],)
    return lambda items: ()


def donation(traced: Traced, targets: list[Node], rebound: set[int] | None = None) -> tuple[bool, ...]:
    """Which leaves of `traced` a run may donate (XLA may write the outputs into their
    buffers), each taking the slot of an output of its shape and dtype (`targets`), none
    without X10ARRAY_DONATE. A barrier's (`rebound` None): the input buffers nobody can see
    after this run (overwritten weights, say: trace.outside_references) and that no later
    graph reads again (trace.rerun_leaves). x10array.compile's: the leaves in `rebound`, the
    previous values of arguments rebound in place (its replay checks at each call that
    nothing else sees them)."""
    return _donation(traced, targets, rebound)[0]


def _donation(
    traced: Traced, targets: list[Node], rebound: set[int] | None = None
) -> tuple[tuple[bool, ...], tuple[bool, ...] | None, set[int] | None]:
    """`donation`, and what a barrier's depended on (for its Plan): per leaf whether it was
    private (nothing outside the graph sees it, never exported; None without X10ARRAY_DONATE
    or for a capture), and the rerun leaves if they were asked for (None if not)."""
    leaves = traced.leaves
    if not settings.get("X10ARRAY_DONATE"):
        return (False,) * len(leaves), None, None
    if rebound is not None:
        return _claim_slots(leaves, targets, [i in rebound for i in range(len(leaves))], None)[0], None, None
    leaf_uses = traced.leaf_uses
    # known references: the graph's uses and `leaves`
    privates = tuple(
        [outside_references(leaves[i], leaf_uses[i] + 1) == 0 and not leaves[i].exported for i in range(len(leaves))]
    )
    mask, rerun = _claim_slots(leaves, targets, privates, lambda: rerun_leaves(traced.calls, targets))
    return mask, privates, rerun


def _claim_slots(
    leaves: list[Node], outputs: list[Node], wanted: Sequence[bool], rerun: Callable[[], set[int]] | None
) -> tuple[tuple[bool, ...], set[int] | None]:
    """Donation's one slot rule (a barrier's, a capture's, a plan's on leaves of other
    shapes): in leaf order, each `wanted` leaf takes an output of its shape and dtype (of
    `outputs`) that no earlier leaf took, and is donated into it. With `rerun` (a barrier's),
    a leaf that a later graph may read again is not donated and takes no slot: `rerun()` gives
    those leaves' ids, asked once, at the first leaf that would take a slot (trace.rerun_leaves
    walks the graph's calls). The mask, and the rerun leaves if they were asked for (else None)."""
    slots = collections.Counter([(n.shape, n.dtype) for n in outputs])  # outputs a buffer could become
    mask = []
    asked: set[int] | None = None
    for i in range(len(leaves)):
        donate = False
        if wanted[i]:
            aval = (leaves[i].shape, leaves[i].dtype)
            if slots[aval] > 0:
                if rerun is not None and asked is None:
                    asked = rerun()
                donate = asked is None or id(leaves[i]) not in asked
                if donate:
                    slots[aval] -= 1
        mask.append(donate)
    return tuple(mask), asked


# -- the compiled tier's steps ---------------------------------------------------------------


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


# -- counting and logging compiled runs ---------------------------------------------------------


def count_compiled_run(
    program: Program, key: GraphKey, first: bool, elapsed: float, donated: int, loaded: bool = False
) -> None:
    """Count a compiled run of `program` that took `elapsed` seconds and donated `donated`
    buffers; its `first` run compiled it, or `loaded` it from the persistent compile cache
    (logged when X10ARRAY_LOG_COMPILES is set)."""
    if first:  # the first call compiles or loads (and runs once)
        COUNTERS.compile_seconds += elapsed
        if loaded:
            COUNTERS.disk_cache_loads += 1
        else:
            COUNTERS.compile_count += 1
        if _metrics.log_compiles():
            _log_compile(program, key, loaded)
    else:
        COUNTERS.cache_hits += 1
        COUNTERS.execute_seconds += elapsed
        program.ran_compiled(elapsed)
    COUNTERS.donated_buffers += donated
    COUNTERS.execute_count += 1


def _log_compile(program: Program, key: GraphKey, loaded: bool = False) -> None:
    _, filename, lineno = user_location()
    what = "loaded from the disk cache" if loaded else "compiling"
    options = program.xla_options() if program.kind is not None else None
    chosen = f"; {program.kind}: XLA options {options}" if options else ""
    print(f"x10array: {what} ({_compile_reason(key, program)}{chosen}) at {filename}:{lineno}", flush=True)


def _compile_reason(key: GraphKey, program: Program) -> str:
    """Why a graph was not in the cache: new, or which shape, dtype or parameter changed."""
    prims = [op[0] for op in key.ops]
    for other, cached in reversed(RUNTIME.programs.items()):  # most recently used first
        # the program itself is cached under an equal key (not always the same tuple): skip it
        if cached is program or cached.compiled is None or [op[0] for op in other.ops] != prims:
            continue
        if other.leaf_avals != key.leaf_avals:
            return f"input shapes/dtypes changed: {_avals_text(other.leaf_avals)} -> {_avals_text(key.leaf_avals)}"
        if other.shardings != key.shardings and other.shardings and key.shardings:
            return _shardings_text(other.shardings, key.shardings)
        for (prim, old, _), (_, new, _) in zip(other.ops, key.ops):
            if old != new:
                return f"shapes/dtypes or parameters of {prim.name} changed: {dict(old)} -> {dict(new)}"
        return "same graph, other donation or outputs"
    return f"new graph of {len(prims)} operations"


def _avals_text(avals: tuple[ShapeDtype, ...]) -> str:
    return "[" + ", ".join(f"{dtype}{list(shape)}" for shape, dtype in avals) + "]"


def _shardings_text(old: tuple[Any, ...], new: tuple[Any, ...]) -> str:
    """Which input or pinned output layout of a mesh graph changed (see spmd.key_shardings)."""
    for what, before, after in (("input", old[0], new[0]), ("pinned output", old[1], new[1])):
        for i, (a, b) in enumerate(zip(before, after)):
            if a != b:
                return f"sharding of {what} {i}: {_spec_text(a)} -> {_spec_text(b)}"
    return f"partitioner changed: {old[2]} -> {new[2]}" if old[2:] != new[2:] else "shardings changed"


def _spec_text(spec: Any) -> str:
    return "unpinned" if spec is None else "P(" + ", ".join(repr(e) for e in spec) + ")"
