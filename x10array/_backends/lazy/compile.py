"""Stage 5, compiling: the program cache, the tier decision and its cost model, the XLA
program of a graph, and the compile log.

Each graph structure (trace.GraphKey) has a `_Program` in an LRU cache (X10ARRAY_CACHE_SIZE):
its sightings, the estimated cost of interpreting it (what a compile would save on one run),
and once compiled its executable. The tier decision (`_interprets`) is ski rental on estimates
from a fixed cost model (_CostModel), never measured time: interpret until that has cost
X10ARRAY_COMPILE_PAYBACK times an estimated compile, from the X10ARRAY_COMPILE_THRESHOLD-th
sighting on.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np

from ..._core import metrics as _metrics
from ..._core import settings
from ..._core.kernels import ROUNDING_GUARD, jax_namespace, xla_flushes, xla_lets_subnormals_through
from ..._core.lru import LRU, release_jax_traces
from ..._core.metrics import COUNTERS
from ..._core.policies import COST_LIBRARY
from ..._core.primitive import Primitive
from ..._core.xla_options import compiler_options
from .graph import Call, Node, _user_location
from .interpreter import keeps_bits
from .shapes import ShapeDtype
from .trace import GraphKey, Op, Ref, Slot, Traced

NEVER = 2**62  # a compile threshold no graph reaches: see compile_threshold


def compile_threshold(n: int | None) -> contextlib.AbstractContextManager[None]:
    """Choose the tier inside a `with` block (for tests and fuzzers; process-wide, not per
    thread): `n=1` compiles every graph at its first sighting (as X10ARRAY_COMPILE_THRESHOLD=1
    does), another `n` is the threshold of the cost rule (see _compile_pays), and `None`
    interprets every graph, even one compiled before. It overrides X10ARRAY_COMPILE_THRESHOLD
    (`settings.override`; None is NEVER): the previous setting comes back on exit."""
    if n is not None and (type(n) is not int or n < 1):
        raise ValueError(f"compile_threshold: expected None or a positive int, got {n!r}")
    return settings.override(X10ARRAY_COMPILE_THRESHOLD=NEVER if n is None else n)


class _Program:
    """A graph's structure: what to run, independent of the values."""

    __slots__ = (
        "calls", "outputs", "n_leaves", "seen", "interpret_cost", "interpreted", "compiled", "key", "operand_dtypes",
    )  # fmt: skip

    def __init__(
        self,
        calls: list[Call],
        outputs: tuple[Slot, ...],
        n_leaves: int,
        key: GraphKey,
        interpret_cost: float = 0.0,
    ):
        self.calls = [(c.prim, c.params) for c in calls]  # [(prim, params)]
        # per call, its operands' dtypes (a Python scalar: its type), for the subnormal probe
        # of its elementwise operations (see _flushed_steps)
        self.operand_dtypes = [tuple(i.dtype if type(i) is Node else type(i) for i in c.inputs) for c in calls]
        self.outputs = outputs  # ((call index, output index), ...)
        self.n_leaves = n_leaves
        self.seen = 0
        self.interpret_cost = interpret_cost  # estimated seconds a compile saves per run (COST)
        self.interpreted = 0.0  # the estimated cost of its interpreted runs so far
        self.compiled: Any = None
        self.key = key


def _evicted_programs(evicted: list[tuple[GraphKey, _Program]]) -> None:
    """A program left the cache: its executable goes with it (the program holds the only
    reference), and so does what jax kept from tracing and lowering it."""
    if any(program.compiled is not None for _, program in evicted):
        release_jax_traces()


# graph key -> program (LRU, bounded by X10ARRAY_CACHE_SIZE, read at each insertion)
_programs = LRU("lazy programs", functools.partial(settings.get, "X10ARRAY_CACHE_SIZE"), on_evict=_evicted_programs)


def _program_for(key: GraphKey, traced: Traced, targets: list[Node]) -> _Program:
    """The program of graphs of structure `key` (made at its first sighting), this sighting
    counted."""
    program = _programs.get(key)
    if program is None:
        calls = traced.calls
        cost = _interpret_cost(calls, targets)
        program = _programs.put(key, _Program(calls, traced.outputs, len(traced.leaves), key, cost))
    program.seen += 1
    return program


def _interprets(program: _Program) -> bool:
    """The tier decision: whether this run of `program` is interpreted (a cold graph, or one
    whose compile has not paid yet), else compiled (or run compiled)."""
    threshold = settings.get("X10ARRAY_COMPILE_THRESHOLD")
    return threshold >= NEVER or (
        program.compiled is None and (program.seen < threshold or (threshold > 1 and not _compile_pays(program)))
    )


def _compile_pays(program: _Program) -> bool:
    """Ski rental: compile once interpreting the graph has cost X10ARRAY_COMPILE_PAYBACK times
    what its compile is expected to. Both costs are estimates from the graph alone (COST),
    never measured time: the same program takes the same tier at the same run, every time it
    is run, so its numbers do not depend on the machine's load."""
    payback = settings.get("X10ARRAY_COMPILE_PAYBACK")
    return program.interpreted >= payback * COST.compile_seconds(len(program.calls))


class _CostModel:
    """The fixed cost model of the tier decision, in estimated seconds (calibrated once on a
    2-core x86-64 machine, XLA CPU from jax 0.10, NumPy 2.4; the constants only have to be
    right within a factor of a few, since the ski-rental rule stays within a small factor of
    the best choice whatever the error).

    - compiling an n-operation graph: COMPILE_FIXED + n * COMPILE_PER_OP (XLA's CPU compiles
      of jax 0.10 measured 3-10 ms per recorded operation, more for the functions whose
      accurate lowering is a formula of several operations, and about 100 ms for the
      smallest graph (tracing, lowering, XLA's passes));
    - what interpreting one operation costs *more than* running it compiled, i.e. what a
      compile saves (never the work both tiers do alike):
      - PER_OP for every operation: the interpreter's Python dispatch (~7-10 us);
      - PER_ELEMENT for each element of the result of an arithmetic operation (an
        elementwise function, a reduction, a matmul, tensordot or convolution): the pass that
        stores it to memory where XLA fuses it into its consumer, and the subnormal scan the
        interpreter runs on it (~1-4 ns for float64: the saving of a compiled chain of
        elementwise operations on 10^6 elements measured 4.5 ns per element and operation, a
        10,000 x 100 by 100 x 100 matmul 1.3 ns per result element).
      Not counted, because a compiled program spends the same on it: the multiply-adds of a
      matmul, tensordot or convolution (the same GEMM, ~7.6 ms `jax.jit` against 7.0 ms NumPy
      for a float64 10,000 x 100 by 100 x 100 product); data movement (`moves_data`: views and
      copies that XLA makes as well) and writes (`in_place`: both tiers write into a private
      buffer and copy a shared one); and `COST_LIBRARY` primitives (an SVD, a solve, an FFT),
      which a compiled program calls as the same routine.

    A graph that is mostly one-element writes or matmuls of large operands is therefore
    credited little per run and stays interpreted (scikit-learn's GaussianMixture EM step,
    1,675 operations, would compile in ~17 s of CPU for a program no faster than the
    interpreter), while a training step of elementwise work over large activations pays back
    its compile within tens of steps.
    """

    COMPILE_FIXED = 0.1
    COMPILE_PER_OP = 0.005
    PER_OP = 1e-5
    PER_ELEMENT = 2e-9

    def compile_seconds(self, n_ops: int) -> float:
        return self.COMPILE_FIXED + n_ops * self.COMPILE_PER_OP

    def step_seconds(self, prim: Primitive, result_elements: int) -> float:
        """What a compile saves on one interpreted run of an operation of `prim` whose largest
        result has `result_elements` elements (see the class docstring)."""
        if prim in COST_LIBRARY.members:
            return 0.0
        if prim.moves_data or prim.in_place:
            return self.PER_OP
        return self.PER_OP + self.PER_ELEMENT * result_elements


COST = _CostModel()


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _interpret_cost(calls: list[Call], targets: list[Node]) -> float:
    """What a compile is estimated to save on one run of the graph `calls` (topological
    order) that computes `targets`: the sum of COST.step_seconds over its operations, from
    their primitives and result sizes (see _CostModel). (A call's result size is that of its
    largest output the graph reads or returns; an output nobody reads is not stored.)"""
    out_elements: dict[int, int] = {}
    for n in targets:
        if n.call is not None:
            out_elements[id(n.call)] = max(out_elements.get(id(n.call), 0), _elements(n.shape))
    for c in calls:
        for n in c.inputs:
            if type(n) is Node and n.call is not None:
                out_elements[id(n.call)] = max(out_elements.get(id(n.call), 0), _elements(n.shape))
    step = COST.step_seconds
    return sum([step(c.prim, out_elements.get(id(c), 0)) for c in calls])


# -- the XLA program of a graph -----------------------------------------------------------------


def _jitted_program(
    program: _Program, key: GraphKey, donate: tuple[bool, ...], unpack: Any = None, one: Any = None
) -> Any:
    """The graph as a jitted function of (donated leaves, kept leaves, scalars); jax compiles
    it at its first call and dispatches later calls through its fast path. A function of its
    own per program: the program holds the only reference to it, so evicting the program
    frees its executable (and _evicted_programs what jax's tracing caches kept). With
    `unpack`, the scalars argument is whatever x10array.compile passes, and `unpack(scalars)`
    inside the trace makes the graph's scalars of it (see capture.ScalarPlan); `one` is the
    runtime 1.0 of the rounding (_core.kernels._rounded) to bind, a NumPy scalar by default
    (capture passes one placed on the device once)."""
    import jax

    replay = _graph_function(program, key, donate, unpack)
    options = compiler_options(key.device.kind.value)
    jitted = jax.jit(replay, donate_argnums=(1,) if any(donate) else (), compiler_options=options)
    # (a partial, not a lambda: a cached run must not enter Python code, see executor._run_and_adopt)
    return functools.partial(jitted, _ONE if one is None else one)


def _graph_function(program: _Program, key: GraphKey, donate: tuple[bool, ...], unpack: Any = None) -> Any:
    """The graph as a function of (one, donated leaves, kept leaves, scalars) for jax to trace
    (`_jitted_program`, and spmd.jitted_program on a mesh): the leaves back in the graph's
    order, the scalars unpacked (`unpack`), its steps replayed with `one` as the rounding's
    runtime 1.0 (see _replay_compiled)."""
    k = jax_namespace()
    ops = key.ops
    outputs = program.outputs
    params_of = [p for _, p in program.calls]
    flush = xla_flushes()  # (probed outside the trace)
    flushed_steps = _flushed_steps(program) if flush else frozenset()

    def replay(one: Any, donated: list[Any], kept: list[Any], scalars: Any) -> tuple[Any, ...]:
        donated_it, kept_it = iter(donated), iter(kept)
        leaf_values = [next(donated_it) if d else next(kept_it) for d in donate]
        if unpack is not None:
            scalars = unpack(scalars)
        token = ROUNDING_GUARD.set(one)  # see _core.kernels._rounded
        try:
            return _replay_compiled(k, ops, leaf_values, scalars, outputs, params_of, flush, flushed_steps)
        finally:
            ROUNDING_GUARD.reset(token)

    return replay


_ONE = np.float64(1.0)
_PRODUCTS = frozenset({"multiply", "square"})
_SUMS = frozenset({"add", "subtract"})


def _replay_compiled(
    k: Any,
    ops: tuple[Op, ...],
    leaf_values: list[Any],
    scalars: list[Any],
    outputs: tuple[Slot, ...],
    params_of: list[dict[str, Any]],
    flush: bool,
    flushed_steps: frozenset[int] = frozenset(),
) -> tuple[Any, ...]:
    """The steps of a graph (`ops` as in trace.GraphKey) through their lowerings, `k` being
    jax's kernel namespace, as jax.jit traces them into one program: the values of `outputs`.

    With XLA's numerics (`flush`), as the interpreter (interpreter._replay): XLA's CPU
    arithmetic flushes subnormals by itself, but not where a lowering passes an operand's bits
    through (abs, negation, copysign, a select) or tests them (atan2, pow): the operands and
    results of those (`prim.passes_bits`) go through `k.rounded`, a multiplication by a
    runtime 1.0 (see _core.kernels._rounded), which flushes. So do the products (multiply,
    square) that an addition reads, which XLA would otherwise fuse into one multiply-add.
    And so do the `flushed_steps`: the elementwise operations whose lowering lets a subnormal
    through on this CPU, as measured here (_flushed_steps). Only those: a multiplication after
    every operation doubled the time of a compiled LeNet step (it splits XLA's fusions)."""
    feeds_sum: set[int] = set()  # the products that an addition reads
    for prim, _, refs in ops:
        if prim.name in _SUMS:
            feeds_sum.update(r[1] for r in refs if r[0] == "c" and ops[r[1]][0].name in _PRODUCTS)
    values: list[list[Any]] = []
    for index, ((prim, _, refs), params) in enumerate(zip(ops, params_of)):
        args = [_operand(r, values, leaf_values, scalars) for r in refs]
        rounds = flush and (prim.passes_bits or index in flushed_steps)
        if rounds:
            args = [k.rounded(a) if r[0] in "lc" else a for a, r in zip(args, refs)]
        out = prim.lowering(k, *args, **params)
        outs = list(out) if prim.multiple_results else [out]
        if rounds or index in feeds_sum:
            outs = [k.rounded(o) for o in outs]
        values.append(outs)
    return tuple(values[c][i] for c, i in outputs)


def _flushed_steps(program: _Program) -> frozenset[int]:
    """The steps of `program` that must flush their operands and result themselves: its
    elementwise operations with floating-point operands whose lowering lets a subnormal through
    on this machine's CPU (`_core.kernels.xla_lets_subnormals_through`, probed once per
    primitive, parameters and dtypes), those that flush in the interpreter (not the ones that
    keep bits there, `keeps_bits`) and do not flush already (`passes_bits`)."""
    steps, entries = [], []
    for index, ((prim, params), dtypes) in enumerate(zip(program.calls, program.operand_dtypes)):
        if not prim.elementwise or prim.passes_bits or prim.moves_data or keeps_bits(prim, params, dtypes):
            continue
        arrays = [d for d in dtypes if isinstance(d, np.dtype)]
        floating = [d for d in arrays if d.kind in "fc"]
        if not floating or type(None) in dtypes:
            continue
        # a Python scalar operand is probed as an array of the first floating-point operand's dtype
        probe = tuple(d if isinstance(d, np.dtype) else floating[0] for d in dtypes)
        steps.append(index)
        entries.append((prim, tuple(sorted(params.items())), probe))
    if not entries:
        return frozenset()
    through = xla_lets_subnormals_through(entries)
    return frozenset(i for i, t in zip(steps, through) if t)


def _operand(ref: Ref, values: list[list[Any]], leaf_values: list[Any], scalars: list[Any]) -> Any:
    """The value an input ref (see trace.GraphKey) names."""
    tag = ref[0]
    if tag == "l":
        return leaf_values[ref[1]]
    if tag == "c":
        return values[ref[1]][ref[2]]
    if tag == "s":
        return scalars[ref[1]]
    return None


# -- counting and logging compiled runs ---------------------------------------------------------


def _count_compiled_run(
    program: _Program, key: GraphKey, first: bool, elapsed: float, donated: int, loaded: bool = False
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
    COUNTERS.donated_buffers += donated
    COUNTERS.execute_count += 1


def _log_compile(program: _Program, key: GraphKey, loaded: bool = False) -> None:
    _, filename, lineno = _user_location()
    what = "loaded from the disk cache" if loaded else "compiling"
    print(f"x10array: {what} ({_compile_reason(key, program)}) at {filename}:{lineno}", flush=True)


def _compile_reason(key: GraphKey, program: _Program) -> str:
    """Why a graph was not in the cache: new, or which shape, dtype or parameter changed."""
    prims = [op[0] for op in key.ops]
    for other, cached in reversed(_programs.items()):  # most recently used first
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
