"""Stage 7a, tiering: when a lazy graph is interpreted and when it is compiled, and the fixed
cost model that decides it.

The decision is ski rental on estimates (`compile_pays`): a graph structure is interpreted
(interpreter.py) until the savings a compile would have made on its interpreted runs reach
X10ARRAY_COMPILE_PAYBACK times its estimated compile, from the X10ARRAY_COMPILE_THRESHOLD-th
sighting on. Both sides are estimates from the graph alone (`COST`, `estimated_interpret_cost`,
`inner_loops`), never a clock, so the same program takes the same tier at the same run on
every run (docs/numerics.md, determinism). `compile_threshold` forces a tier for tests.
Where a graph may be interpreted at all is the placement's rule (placement.py: only a CPU's
cold graphs); the program (program.py) asks this module at each run (`Program.interprets`).

On an accelerator a cold graph runs op by op on the device (interpreter.run_on_device) and a
structure compiles at its X10ARRAY_COMPILE_THRESHOLD-th sighting, without the cost model
(`Program.runs_op_by_op`), or at once past OP_BY_OP_LIMIT operations.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..._core import metrics as _metrics
from ..._core import settings
from ..._core.kernels import SHORT_AXIS_REDUCTIONS, elementwise_loops, loop_count, short_axis_sum
from ..._core.policies import COST_LIBRARY
from ..._core.primitive import Primitive
from ..._core.user_code import user_location
from .graph import Call, Node
from .interpreter import block_count

NEVER = 2**62  # a compile threshold no graph reaches: see compile_threshold


def compile_threshold(n: int | None) -> contextlib.AbstractContextManager[None]:
    """Choose the tier inside a `with` block (for tests and fuzzers; process-wide, not per
    thread): `n=1` compiles every graph at its first sighting (as X10ARRAY_COMPILE_THRESHOLD=1
    does), another `n` is the threshold of the cost rule (see compile_pays), and `None`
    interprets every graph, even one compiled before. It overrides X10ARRAY_COMPILE_THRESHOLD
    (`settings.override`; None is NEVER): the previous setting comes back on exit."""
    if n is not None and (type(n) is not int or n < 1):
        raise ValueError(f"compile_threshold: expected None or a positive int, got {n!r}")
    return settings.override(X10ARRAY_COMPILE_THRESHOLD=NEVER if n is None else n)


# The most operations of a graph that an accelerator runs op by op at its first sighting; a
# larger one (a model's training step: hundreds of operations) compiles at once, since op by op
# it would compile a program per operation and shape for the device anyway, and its loop
# compiles it at the next step. A rule of the graph alone, like the compile limit.
OP_BY_OP_LIMIT = 64

FEEDBACK_RUNS = 3  # compiled runs timed to their end, after the compiling one (see ran_compiled)


def several_processes() -> bool:
    """Whether this is one process of a multi-process jax run (see Program.ran_compiled)."""
    import jax

    return bool(jax.process_count() > 1 or settings.get("X10ARRAY_NUM_PROCESSES") > 1)


def compile_pays(program: Any) -> bool:
    """Ski rental: compile once the savings a compile would have made on the graph's
    interpreted runs (Program.saving: of a run read at once, less a compiled run's fixed cost)
    have reached X10ARRAY_COMPILE_PAYBACK times what its compile is expected to cost. Both
    costs are estimates from the graph alone (COST), never measured time: the same program
    takes the same tier at the same run, every time it is run, so its numbers do not depend
    on the machine's load."""
    payback = settings.get("X10ARRAY_COMPILE_PAYBACK")
    return program.interpreted >= payback * program.compile_cost


class _CostModel:
    """The fixed cost model of the tier decision, in estimated seconds. The constants are
    calibrated on a 2-core x86-64 CPU (XLA CPU from jax 0.10, NumPy 2.4) by
    benchmarks/bench_tiers.py, whose section of benchmarks/README.md holds the measurements;
    they only have to be right within a factor of a few, since the ski-rental rule stays within
    a small factor of the best choice whatever the error. Estimates come from the graph alone,
    never from measured time, so a program takes the same tier at the same run on every machine.

    - compiling a graph of n operations: COMPILE_FIXED + n * COMPILE_PER_OP + COMPILE_PER_WRITE
      * its writes (`in_place` operations: XLA's buffer analysis of an updated array costs far
      more than another operation) + COMPILE_PER_FUSED * the sum over its elementwise
      operations of their depth in a chain of elementwise operations (XLA fuses such a chain
      into one loop, and its compile of the fusion grows with the chain's square);
    - what interpreting an operation costs *more than* running it compiled, i.e. what a compile
      saves (never the work both tiers do alike): PER_OP for every operation (the interpreter's
      Python dispatch); PER_ELEMENT for each element of an arithmetic result (the pass that
      stores it where XLA fuses it into its consumer, and the interpreter's subnormal scan; not
      for a returned result the interpreter does not scan, which both tiers store alike);
      PER_LOOP for each call of NumPy's inner loop (`inner_loops`: an operation over short
      trailing axes calls its loop once per few elements, where XLA's fused loop does not);
      for a run the interpreter strip-mines in blocks (interpreter.BlockedRun), PER_BLOCK per
      block + PER_BLOCKED_ELEMENT per element of the run + PER_ELEMENT per stored element;
    - what a compiled run costs that an interpreted run does not, where its values are read at
      once (a read, an export, a barrier with wait=True): RUN_FIXED for the jitted call,
      RUN_PER_ARG per leaf and output, RUN_WAIT for the wait on XLA's runtime thread. The
      saving credited to an interpreted run is what interpreting costs more less this, never
      below 0 (`Program.saving`), so a small graph read at once never pays for its compile. At
      a barrier nobody waits for nothing is charged.

    Not counted, because a compiled program spends the same on it: the multiply-adds of a
    matmul, tensordot or convolution (the same GEMM), data movement (`moves_data`), writes
    (`in_place`), and `COST_LIBRARY` primitives (an SVD, a solve, an FFT: the same routine).
    So a graph that is mostly one-element writes or large matmuls, or a small one read at once,
    is credited little per run and stays interpreted (scikit-learn's GaussianMixture EM step,
    its L-BFGS graphs), while a training step of elementwise work over large activations pays
    back its compile within tens of steps.
    """

    COMPILE_FIXED = 0.05
    COMPILE_PER_OP = 7e-4
    COMPILE_PER_FUSED = 7.5e-6
    COMPILE_PER_WRITE = 1e-2
    PER_OP = 1e-5
    PER_ELEMENT = 2e-9
    PER_BLOCK = 3e-6
    PER_BLOCKED_ELEMENT = 1e-10
    PER_LOOP = 8e-9
    PLACE_PER_ELEMENT = 8e-10
    PLACE_STRIDED_PER_ELEMENT = 2e-9
    RUN_FIXED = 3e-5
    RUN_PER_ARG = 1e-6
    RUN_WAIT = 3e-4

    def compile_seconds(self, calls: list[Call]) -> float:
        """The estimated compile of the graph `calls` (topological order; see above)."""
        depth: dict[int, int] = {}  # id(call) -> its depth in an elementwise chain
        fused = writes = 0
        for c in calls:
            if c.prim.elementwise:
                d = 1 + max([depth.get(id(n.call), 0) for n in c.inputs if type(n) is Node], default=0)
                depth[id(c)] = d
                fused += d
            elif c.prim.in_place:
                writes += 1
        return (
            self.COMPILE_FIXED
            + len(calls) * self.COMPILE_PER_OP
            + writes * self.COMPILE_PER_WRITE
            + fused * self.COMPILE_PER_FUSED
        )

    def blocked_step_seconds(self, blocks: int, elements: int, stored_elements: int, loops: int = 0) -> float:
        """What a compile saves on one interpreted run of an operation that the interpreter runs
        in `blocks` blocks (interpreter.BlockedRun) over `elements` elements, storing
        `stored_elements` of them to memory (a live result; 0 for an intermediate that stays in
        the cache, or a count), calling NumPy's inner loop `loops` times in all (inner_loops:
        blocks of whole rows call it as often as the whole array does)."""
        return (
            self.PER_OP
            + blocks * self.PER_BLOCK
            + self.PER_BLOCKED_ELEMENT * elements
            + self.PER_ELEMENT * stored_elements
            + self.PER_LOOP * loops
        )

    def run_seconds(self, args: int, read: bool) -> float:
        """The fixed cost of one compiled run of a program of `args` leaves and outputs that an
        interpreted run does not have, where its values are `read` at once; nothing at a
        barrier nobody waits for (see the class docstring)."""
        return self.RUN_FIXED + args * self.RUN_PER_ARG + self.RUN_WAIT if read else 0.0

    def place_seconds(self, leaves: list[Node]) -> float:
        """What a compiled run of a graph of `leaves` spends placing those that an interpreted
        run reads where they are and that will not stay placed: the NumPy views among them
        (interpreter._kept_view: `pts[:, 0]` of a leaf, a new node at each read, so placed at
        each run; a buffer of its own is placed once and reused, executor.run_compiled).
        PLACE_PER_ELEMENT a contiguous element, PLACE_STRIDED_PER_ELEMENT a strided one
        (jax.device_put of a strided column costs about 2.5 times a contiguous array's)."""
        total = 0.0
        for n in leaves:
            v = n.value
            if type(v) is np.ndarray and v.base is not None:
                total += v.size * (self.PLACE_PER_ELEMENT if v.flags.c_contiguous else self.PLACE_STRIDED_PER_ELEMENT)
        return total

    def step_seconds(self, prim: Primitive, result_elements: int, loops: int = 0) -> float:
        """What a compile saves on one interpreted run of an operation of `prim` whose largest
        result has `result_elements` elements and that calls NumPy's inner loop `loops` times
        (inner_loops; see the class docstring)."""
        if prim in COST_LIBRARY.members:
            return 0.0
        if prim.moves_data or prim.in_place:
            return self.PER_OP
        return self.PER_OP + self.PER_ELEMENT * result_elements + self.PER_LOOP * loops


COST = _CostModel()


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def inner_loops(call: Call) -> int:
    """How many times NumPy's inner loop runs when the interpreter runs `call`, from shapes
    alone (operands taken as C-contiguous, as the interpreter's values mostly are): 0 for an
    operation that is neither an elementwise function nor a reduction (a reduction: an
    operation with a `keepdims` parameter; a matrix product runs in BLAS). NumPy walks as one
    loop the longest run of trailing axes (of length above 1) that every operand takes alike:
    of an elementwise function, broadcast along all of them or along none
    (`X[:, None, :] - C[None]` of (5000, 1, 4) and (1, 5, 4): the last axis alone, 25,000
    loops of 4); of a reduction, axes all reduced or all kept (`prod(x, axis=-1)` of (n, 4): n
    loops of 4; `sum(x, axis=0)`: n loops over the 4 kept; over every axis: one), except a float
    sum or mean over a short last axis, whose columns the kernel adds as whole arrays
    (kernels.short_axis_sum: 4 loops of n). An arg reduction (`argmin(x, axis=1)`: a single
    `axis` parameter) loops once per result element."""
    if call.prim.elementwise:
        operands = [(n.shape, n.dtype) for n in call.inputs if type(n) is Node]
        if not operands:
            return 0
        # (an add, subtract, multiply or divide of two arrays may take kernels._broadcast_route)
        return elementwise_loops(call.prim.name, operands)
    if (axes := reduced_axes(call)) is None:
        return 0
    out = call.inputs[0].shape
    ndim = len(out)
    if len(axes) == ndim:
        return 1
    short = call.prim.name in SHORT_AXIS_REDUCTIONS and axes == (ndim - 1,)
    if short and short_axis_sum(out, call.inputs[0].dtype):
        return out[-1]  # (its columns added as whole arrays, a loop each: kernels._numpy_sum)
    if "axes" not in call.params:  # an arg reduction: a loop per result element
        return _elements(out) // out[axes[0]] if out[axes[0]] else 0
    return loop_count(out, [tuple(1 if j in axes else 2 for j in range(ndim))])  # (a reduced axis marked as broadcast)


def estimated_interpret_cost(
    calls: list[Call], targets: list[Node], blocks: dict[int, Any] | None = None, log: bool = True
) -> float:
    """What a compile is estimated to save on one run of the graph `calls` (topological
    order) that computes `targets`: the sum of COST.step_seconds over its operations, from
    their primitives and result sizes (see _CostModel), COST.blocked_step_seconds for those the
    interpreter runs in blocks (`blocks`: its Schedule's, interpreter.BlockedRun by step, but
    those an interpreted run found not blocked, `unblocked`; interpreter.block_count). (A
    call's result size is that of its largest output the graph reads or returns; an output
    nobody reads is not stored. An elementwise output the graph returns is stored by both tiers
    alike: its elements are not credited.) X10ARRAY_LOG_COMPILES says when blocks lower it (`log`)."""
    out_elements: dict[int, int] = {}
    alike: set[int] = set()  # the elementwise calls whose results both tiers store
    for n in targets:
        if (c := n.call) is not None:
            out_elements[id(c)] = max(out_elements.get(id(c), 0), _elements(n.shape))
            if c.prim.elementwise:
                alike.add(id(c))
    for c in calls:
        for n in c.inputs:
            if type(n) is Node and n.call is not None:
                out_elements[id(n.call)] = max(out_elements.get(id(n.call), 0), _elements(n.shape))
    step = COST.step_seconds
    loops = [inner_loops(c) for c in calls]
    credited = [0 if id(c) in alike else out_elements.get(id(c), 0) for c in calls]
    whole = [step(c.prim, e, n) for c, e, n in zip(calls, credited, loops)]
    if blocks is None:
        return sum(whole)
    costs = list(whole)
    sizes: dict[int, int] = {}  # id(run) -> its results' elements
    for j, run in blocks.items():
        if j not in run.counts:
            sizes[id(run)] = max(sizes.get(id(run), 0), out_elements.get(id(calls[j]), 0))
    for j, run in blocks.items():
        size = sizes[id(run)]
        count = block_count(size) if run.unblocked is None else 0
        if count:  # (a dead intermediate stays in the cache, as in XLA's fusion: not stored)
            stored = credited[j] if j in run.live and j not in run.counts else 0
            costs[j] = COST.blocked_step_seconds(count, size, stored, loops[j])
    total = sum(costs)
    if log and total < sum(whole) and _metrics.log_compiles():
        _, filename, lineno = user_location()
        steps = sum([c != w for c, w in zip(costs, whole)])
        print(
            f"x10array: a graph of {len(calls)} operations runs {steps} of them in blocks when interpreted: a compile"
            f" is estimated to save {1e3 * total:.3g} ms a run (run whole: {1e3 * sum(whole):.3g} ms), at"
            f" {filename}:{lineno}",
            flush=True,
        )
    return total


def reduced_axes(call: Call) -> tuple[int, ...] | None:
    """The axes `call` reduces, non-negative, if it is a reduction (an operation with a
    `keepdims` parameter, on an array: `axes`, or an arg reduction's single `axis`; None for
    every axis); else None."""
    params = call.params
    if "keepdims" not in params or not call.inputs or type(x := call.inputs[0]) is not Node:
        return None
    ndim = len(x.shape)
    axes = params.get("axes", params.get("axis"))
    if axes is None:
        return tuple(range(ndim))
    if type(axes) is int:
        axes = (axes,)
    return tuple(a % ndim for a in axes)
