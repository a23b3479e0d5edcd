"""Stage 7c, the program: the one builder from a traced graph to a program, and what a
program is (`Program`): its key, its cost estimate, its place in the program cache, the tier
decision, its interpreted run, its jitted function (one device or a mesh), which inputs it
may donate, and the count and log of its compiled runs.

Every `GraphKey` is built here (`key_for`), every donation mask decided (`donation`), and
every program built (`build`): the barrier's (plans.py), cached by key in an LRU
(X10ARRAY_CACHE_SIZE), x10array.compile's (capture.py, its scalars packed: a program of its
own, kept by its `Captured`) and the one `inspect.lower` shows. The tier decision
(`Program.interprets`) asks tiering.py (ski rental on a fixed cost model, never measured
time) whether this run is interpreted or compiled. Both tiers run a graph through the one
step walker, `trace.replay`: the interpreter with NumPy's kernels (interpreter.NumpySteps),
the jitted function with jax's (lowering.py).
"""

from __future__ import annotations

import collections
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._core import metrics as _metrics
from ..._core import settings
from ..._core.devices import Device
from ..._core.metrics import COUNTERS
from ..._core.policies import COLUMN_READS, MATRIX_PRODUCTS
from ..._core.user_code import user_location
from ..._core.xla_options import compiler_options
from ..._core.xla_options import kind_of as xla_kind_of
from .graph import Call, Node
from .interpreter import Schedule, interpret
from .lowering import PackedScalars, graph_function
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
    Traced,
    outside_references,
    rerun_leaves,
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
        self.plan_tries = 0  # the barrier's plans of it that could not be kept (see plans.barrier_program)
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
        """The graph as a jitted function (lowering.graph_function) of (donated leaves, kept
        leaves, scalars); jax
        compiles it at its first call and dispatches later calls through its fast path. A
        function of its own per program: the program holds the only reference to it, so
        evicting the program frees its executable (and runtime._evicted_programs what jax's
        tracing caches kept). Its shardings are the placement's (placement.OnMesh.jit: the inputs'
        from `leaf_values`, the pinned outputs' from the key)."""
        key = self.key
        placement = placement_of(key.device)
        function = graph_function(key, [p for _, p in self.calls], self.unpack)
        jitted = placement.jit(function, key, leaf_values, self.xla_options())
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


def _pack_scalars(program: Program) -> None:
    """Make a barrier's program take its Python floats and ints packed (PackedScalars), if it
    reads enough of them."""
    packing = PackedScalars.of(program.key.ops)
    if packing is not None:
        program.unpack, program.packing = packing.unpack, packing


def donation(traced: Traced, targets: list[Node], rebound: set[int] | None = None) -> tuple[bool, ...]:
    """Which leaves of `traced` a run may donate (XLA may write the outputs into their
    buffers), each taking the slot of an output of its shape and dtype (`targets`), none
    without X10ARRAY_DONATE. A barrier's (`rebound` None): the input buffers nobody can see
    after this run (overwritten weights, say: trace.outside_references) and that no later
    graph reads again (trace.rerun_leaves). x10array.compile's: the leaves in `rebound`, the
    previous values of arguments rebound in place (its replay checks at each call that
    nothing else sees them)."""
    return donation_facts(traced, targets, rebound)[0]


def donation_facts(
    traced: Traced, targets: list[Node], rebound: set[int] | None = None
) -> tuple[tuple[bool, ...], tuple[bool, ...] | None, set[int] | None]:
    """`donation`, and what a barrier's depended on (for its plans.Plan): per leaf whether it was
    private (nothing outside the graph sees it, never exported; None without X10ARRAY_DONATE
    or for a capture), and the rerun leaves if they were asked for (None if not)."""
    leaves = traced.leaves
    if not settings.get("X10ARRAY_DONATE"):
        return (False,) * len(leaves), None, None
    if rebound is not None:
        return claim_slots(leaves, targets, [i in rebound for i in range(len(leaves))], None)[0], None, None
    leaf_uses = traced.leaf_uses
    # known references: the graph's uses and `leaves`
    privates = tuple(
        [outside_references(leaves[i], leaf_uses[i] + 1) == 0 and not leaves[i].exported for i in range(len(leaves))]
    )
    mask, rerun = claim_slots(leaves, targets, privates, lambda: rerun_leaves(traced.calls, targets))
    return mask, privates, rerun


def claim_slots(
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
