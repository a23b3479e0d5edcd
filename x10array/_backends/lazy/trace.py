"""Stage 3, the trace: walk the pending graph behind a barrier's targets, key it by its
structure (`GraphKey`), and decide which input buffers the run may donate.

What a graph keeps and what it may consume is decided by reference counts (`outside_references`):
a pending value that something outside the graph still holds becomes an output too (so it is
not computed again later), and an input buffer is donated only if nothing outside can see it.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from ..._core.devices import Device
from ..._core.primitive import Primitive
from .graph import Call, Node
from .shapes import ShapeDtype

# The parts of a GraphKey (see there), named for annotations:
Ref = tuple[Any, ...]  # an input ref: ("l", leaf), ("c", call, output), ("s", scalar, its type) or ("none",)
Op = tuple[Primitive, tuple[Any, ...], tuple[Ref, ...]]  # (primitive, key parameters, input refs)
Slot = tuple[int, int]  # (call, output): where a step's value is


class GraphKey(NamedTuple):
    """A graph's structure, the key of the program cache (program.py, which builds every
    key: `program.key_for`): graphs with equal keys
    run the same program, on other values (leaf buffers and Python scalars are its inputs, so
    changing a scalar does not recompile). A tuple underneath: hashing and comparing it cost
    what a plain tuple's do (C code, once per barrier); the fields have names for readers.

    - `device`: where it runs;
    - `ops`: per call, in topological order, `(primitive, key parameters, input refs)`, an
      input ref being `("l", leaf)`, `("c", call, output)` (the output of an earlier call),
      `("s", scalar, its type)` or `("none",)`;
    - `outputs`: `(call, output)` of each target, in order;
    - `leaf_avals`: `(shape, dtype)` of each leaf (a materialized input);
    - `donate`: per leaf, whether the run may reuse its buffer (see program.donation);
    - `shardings`: on a mesh device only (else empty), (the canonical layout of each leaf,
      the pinned layout or None of each output, the partitioner): see spmd.key_shardings."""

    device: Device
    ops: tuple[Op, ...]
    outputs: tuple[Slot, ...]
    leaf_avals: tuple[ShapeDtype, ...]
    donate: tuple[bool, ...]
    shardings: tuple[Any, ...] = ()


class Traced(NamedTuple):
    """What `walk` found: the key's parts (`ops`, `outputs`, `leaf_avals`: see GraphKey), the
    calls in topological order, the leaves, how many times the graph reads each, and the
    Python scalars it reads (numbered by the "s" refs)."""

    ops: tuple[Op, ...]
    outputs: tuple[Slot, ...]
    leaf_avals: tuple[ShapeDtype, ...]
    calls: list[Call]
    leaves: list[Node]
    leaf_uses: list[int]
    scalars: list[Any]


def outside_references(obj: Any, known: int) -> int:
    """How many references to `obj` exist besides the `known` ones its caller counts (the
    graph's own uses of it, the caller's lists and variables holding it): above 0, something
    outside the graph being run holds it (an array, a pending call of another graph, a user's
    variable). The lazy backend's one reading of reference counts: a held pending value joins
    the graph's outputs (_join_shared_with_pending), the inputs behind it stay for its rerun
    (rerun_leaves), and only a buffer nobody else holds is donated (program.donation). This call's
    own references (its parameter, getrefcount's argument) are not counted. Callers hold the
    lazy lock (runtime.RUNTIME.lock), so no recording takes a reference meanwhile."""
    return sys.getrefcount(obj) - known - _OWN_REFERENCES


# `obj` and getrefcount's argument: a call moves its arguments into the callee's frame (a test,
# test_lazy.test_outside_references_counts_what_the_caller_does_not, checks it)
_OWN_REFERENCES = 2


def walk(targets: list[Node], device: Device) -> Traced:
    """Walk the pending graph behind `targets`: its structure, the calls in topological
    order, the leaf buffers and scalars it reads, and where the targets are.

    Pending values inside the graph that an array still holds join `targets` (in place): they
    are computed anyway, and kept, so that reading them later does not compute them again
    (`y = f(x)` then `float(y[0])`, `float(y[1])`, ... runs `f` once). So do the held
    outputs of a multiple-results call in the graph (`u, s, vh = svd(x)` then `float(s[0])`
    computes `u` and `vh` too, instead of the SVD again later), and the pending operands of a
    target's `origin` (a transpose's: graph.Node.origin), which it keeps once computed."""
    target_ids = {id(n) for n in targets}
    for n in list(targets):  # a computed transpose keeps its operand for a later rewrite (graph.Node.origin)
        origin = getattr(n, "origin", None)
        if origin is not None and n.value is None:
            for i in origin[2]:
                if type(i) is Node and i.value is None and id(i) not in target_ids:
                    target_ids.add(id(i))
                    targets.append(i)
    order: list[Call] = []
    call_ids: dict[int, int] = {}
    leaves: list[Any] = []
    leaf_ids: dict[int, int] = {}
    leaf_uses: list[int] = []
    scalars: list[Any] = []
    ops: list[Op] = []

    def ref(i: Any) -> Ref:
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

    # iterative post-order DFS over calls (a pending node's `call` is set: the tests of it are for the type checker)
    stack: list[tuple[Call, bool]] = [
        (n.call, False) for n in reversed(targets) if n.value is None and n.call is not None
    ]
    call: Call | None
    while stack:
        call, expanded = stack.pop()
        if id(call) in call_ids:
            continue
        if expanded:
            refs = tuple(ref(i) for i in call.inputs)
            call_ids[id(call)] = len(order)
            order.append(call)
            ops.append((call.prim, call.key_params, refs))
            for sibling_ref in call.outputs:
                _join_if_held(sibling_ref(), target_ids, targets)
            continue
        stack.append((call, True))
        # (first operand's history first: popped last-in first-out, the order a program wrote
        # them, so that `v = x[k]; v[i] = a` then `x[k] = v` uses `v` last at its next write,
        # which the interpreter can then make in place)
        for i in reversed(call.inputs):
            if type(i) is Node and i.value is None and i.call is not None and id(i.call) not in call_ids:
                stack.append((i.call, False))
    i = call = None  # the loop variables must not hold a reference during the count below
    _join_shared_with_pending(order, target_ids, targets)
    outputs = tuple([(call_ids[id(n.call)], n.index) for n in targets if n.value is None])
    leaf_avals = tuple([(n.shape, n.dtype) for n in leaves])
    return Traced(tuple(ops), outputs, leaf_avals, order, leaves, leaf_uses, scalars)


def _pending_uses(calls: list[Call]) -> dict[int, list[Any]]:
    """id(pending node) -> [node, how many times the calls read it]. (The loop variables die
    with this frame: callers compare reference counts with these uses.)"""
    uses: dict[int, list[Any]] = {}
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
        # known references: the graph's uses and `entry`
        if key not in target_ids and outside_references(entry[0], entry[1] + 1) > 0:
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


def rerun_leaves(calls: list[Call], targets: list[Node]) -> set[int]:
    """ids of the leaves that a later graph may read again: those behind an intermediate value
    of this graph that is still held outside it (by an array, or by a pending call that is not
    part of this run), since that value stays pending and will be recomputed from them."""
    uses = _pending_uses(calls)
    target_ids = {id(n) for n in targets}
    known = collections.Counter(id(t.call) for t in targets)  # output nodes of each call we know
    held: set[int] = set()  # calls with an output still held outside this graph
    c: Call | None
    for key, entry in uses.items():
        if key not in target_ids:
            known[id(entry[0].call)] += 1
            # known references: the graph's uses and `entry`
            if outside_references(entry[0], entry[1] + 1) > 0:
                held.add(id(entry[0].call))
    for c in calls:
        # known references: `calls`, `c` and the `call` of each live output node
        if outside_references(c, known[id(c)] + 2) > 0:
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


# -- the step walker ----------------------------------------------------------------------------


def last_uses(ops: tuple[Op, ...]) -> dict[Slot, int]:
    """(call, output) -> the index of the last step that reads it."""
    last_use: dict[Slot, int] = {}
    for index, (_, _, refs) in enumerate(ops):
        for r in refs:
            if r[0] == "c":
                last_use[(r[1], r[2])] = index
    return last_use


def leaf_last_uses(ops: tuple[Op, ...]) -> dict[int, int]:
    """leaf -> the index of the last step that reads it (last_uses of the leaves)."""
    last_use: dict[int, int] = {}
    for index, (_, _, refs) in enumerate(ops):
        for r in refs:
            if r[0] == "l":
                last_use[r[1]] = index
    return last_use


def drops_after(ops: tuple[Op, ...], last_use: dict[Slot, int], keep: set[Slot]) -> list[tuple[tuple[Ref, Slot], ...]]:
    """Per step of `ops`, the values (ref, slot) that no later step reads and that are not
    outputs (`keep`): what `replay` drops after it. A function of the key alone, so a caller
    that runs one program many times (the interpreter's Schedule) makes it once."""
    drops = []
    for index, (_, _, refs) in enumerate(ops):
        found: dict[Slot, Ref] = {}
        for r in refs:
            if r[0] == "c":
                slot = (r[1], r[2])
                if last_use[slot] == index and slot not in keep:
                    found.setdefault(slot, r)
        drops.append(tuple([(r, slot) for slot, r in found.items()]))
    return drops


def replay(
    ops: tuple[Op, ...],
    params_of: list[dict[str, Any]],
    leaf_values: list[Any],
    scalars: list[Any],
    outputs: tuple[Slot, ...],
    step: Any,
    dropped: Any = None,
    drops: list[tuple[tuple[Ref, Slot], ...]] | None = None,
) -> tuple[Any, ...]:
    """The one walk that runs a graph's steps (`ops` as in GraphKey, their parameters
    `params_of`) on `leaf_values` and `scalars`: the values of `outputs`. Both tiers use it,
    each with its own `step(index, prim, refs, args, params)` -> the step's outputs (a list):
    the interpreter's runs NumPy kernels (interpreter.NumpySteps), the compiled tier's calls
    the lowerings on jax's kernel namespace while jax.jit traces them (lowering.XlaSteps).

    An intermediate value is dropped after its last use (`drops`, from `drops_after`: made
    once per program by a caller that runs it many times, else here), unless it is an output, so a long
    graph of writes holds one buffer at a time, not one per step; `dropped(ref, slot)` is told
    of each drop (the interpreter forgets what it knew of it)."""
    if drops is None:
        drops = drops_after(ops, last_uses(ops), set(outputs))
    values: list[list[Any]] = []
    for index, ((prim, _, refs), params) in enumerate(zip(ops, params_of)):
        args = []
        for r in refs:
            tag = r[0]
            if tag == "c":
                args.append(values[r[1]][r[2]])
            elif tag == "l":
                args.append(leaf_values[r[1]])
            elif tag == "s":
                args.append(scalars[r[1]])
            else:
                args.append(None)
        values.append(step(index, prim, refs, args, params))
        del args
        for r, (c, i) in drops[index]:  # drop what no later step reads
            values[c][i] = None
            if dropped is not None:
                dropped(r, (c, i))
    return tuple([values[c][i] for c, i in outputs])


# -- following a plan (plans.Plan) ------------------------------------------------------------

# A plan's step (plans.Plan.steps), per call in reverse topological order: (call index,
# primitive, key parameters, input specs), an input spec being one of
FOLLOW_PENDING = 0  # (0, producer call, output, slot): the output of an earlier call of the graph
FOLLOW_LEAF = 1  # (1, leaf, shape, dtype): a materialized input
FOLLOW_SCALAR = 2  # (2, scalar, type): a Python scalar
FOLLOW_NONE = 3  # (3,): None


def follow_specs(ops: tuple[Op, ...], leaf_avals: tuple[ShapeDtype, ...]) -> tuple[list[Any], list[Slot]]:
    """The steps `follow` takes for a graph whose key has `ops` and `leaf_avals`, and the
    slots (call, output) its pending inputs are numbered by (the slot numbers in the specs)."""
    slots: dict[Slot, int] = {}
    steps = []
    for j, (prim, key_params, refs) in enumerate(ops):
        specs: list[tuple[Any, ...]] = []
        for r in refs:
            tag = r[0]
            if tag == "c":
                slot = slots.setdefault((r[1], r[2]), len(slots))
                specs.append((FOLLOW_PENDING, r[1], r[2], slot))
            elif tag == "l":
                specs.append((FOLLOW_LEAF, r[1], *leaf_avals[r[1]]))
            elif tag == "s":
                specs.append((FOLLOW_SCALAR, r[1], r[2]))
            else:
                specs.append((FOLLOW_NONE,))
        steps.append((j, prim, key_params, tuple(specs)))
    steps.reverse()  # consumers before producers: a call is found through the first that reads it
    return steps, list(slots)


def follow(
    steps: list[Any], heads: tuple[Slot, ...], n_leaves: int, n_scalars: int, n_slots: int, targets: list[Node]
) -> tuple[list[Call], list[Node], list[Any], list[Node], bool] | None:
    """Follow a plan (plans.Plan) from `targets`: the graph's calls in the plan's (topological)
    order, its leaves, its Python scalars, the pending values it reads (by slot) and whether a
    leaf's shape differs from the plan's, if the
    pending graph behind `targets` is the plan's, else None. It is the plan's when every call
    has the plan's primitive and key parameters and inputs of the plan's kinds (pending values
    of the plan's producers, leaves of the plan's dtypes, scalars of the plan's types), and
    distinct calls and leaves of the plan are distinct objects: then the graph is the plan's
    up to the identity and shapes of its leaves and the values of its scalars, and `walk`
    would find the plan's ops, in the same order (the walk depends on nothing else but the
    reference counts that plans._planned checks; leaves of other shapes, k-means'
    `X[labels == j]`, make another key, which plans._planned builds). `targets` are the walk's targets before it
    joins held values (`heads`: where each is, (call, output))."""
    calls: list[Any] = [None] * (len(steps))
    internal: list[Any] = [None] * n_slots
    for t, (j, _) in zip(targets, heads):
        c = calls[j]
        if c is None:
            calls[j] = t.call
        elif c is not t.call:
            return None
    leaves: list[Any] = [None] * n_leaves
    scalars: list[Any] = [None] * n_scalars
    reshaped = False
    for j, prim, key_params, specs in steps:
        c = calls[j]
        if c is None or c.prim is not prim or c.key_params != key_params or len(c.inputs) != len(specs):
            return None
        for i, s in zip(c.inputs, specs):
            code = s[0]
            if code == FOLLOW_PENDING:
                # (a plan's calls have one output each, the primitives checked say so: one
                # node per call, output 0, so the call's identity is the node's)
                if type(i) is not Node or i.value is not None:
                    return None
                p = calls[s[1]]
                if p is None:
                    calls[s[1]] = i.call
                    internal[s[3]] = i
                elif p is not i.call:
                    return None
            elif code == FOLLOW_LEAF:
                if type(i) is not Node or i.value is None:
                    return None
                leaf = leaves[s[1]]
                if leaf is None:
                    if i.dtype != s[3]:
                        return None
                    if i.shape != s[2]:  # (another key: plans._planned builds it)
                        reshaped = True
                    leaves[s[1]] = i
                elif leaf is not i:
                    return None
            elif code == FOLLOW_SCALAR:
                if type(i) is not s[2]:
                    return None
                scalars[s[1]] = i
            elif i is not None:
                return None
    i = c = leaf = p = None  # (no reference may stay behind: the caller counts them)
    if len(set(map(id, calls))) != len(calls) or len(set(map(id, leaves))) != n_leaves:
        return None  # (two of the plan's calls or leaves are one here: another graph)
    return calls, leaves, scalars, internal, reshaped


def follower(
    steps: list[Any], heads: tuple[Slot, ...], n_leaves: int, n_scalars: int, n_slots: int
) -> Callable[[list[Node]], tuple[list[Call], list[Node], list[Any], list[Node], bool] | None]:
    """`follow` of a plan's steps, as a function of the targets of its own: straight-line
    Python generated once per plan (a repeated step's barrier follows its plan every time), the
    checks of `follow` unrolled with the plan's primitives, parameters, dtypes, shapes and
    types as constants and the calls, leaves and pending values in local variables, so that
    following costs no loop over the specs, no tuple indexing and no dispatch on a spec's kind.
    Same result as `follow(steps, heads, n_leaves, n_scalars, n_slots, targets)` for every
    graph (tests/test_plans.py compares them), about a third of its time on the Adam fit's
    plan. (Its distinctness check makes a set of the calls and leaves themselves: graph.Call
    and graph.Node hash by identity.)"""
    consts: dict[str, Any] = {"Node": Node}
    lines = ["def follow(targets):", f"    if len(targets) != {len(heads)}:", "        return None"]

    def const(value: Any) -> str:
        name = f"k{len(consts)}"
        consts[name] = value
        return name

    assigned: set[int] = set()  # the calls found so far (in the order `follow` finds them)
    leaves: set[int] = set()
    for t, (j, _) in enumerate(heads):
        if j in assigned:
            lines += [f"    if targets[{t}].call is not c{j}:", "        return None"]
        else:
            assigned.add(j)
            lines.append(f"    c{j} = targets[{t}].call")
    lines.append("    reshaped = False")
    scalars: set[int] = set()
    slots: set[int] = set()
    for j, prim, key_params, specs in steps:
        if j not in assigned:  # (no consumer or target found it: `follow` returns None here)
            lines.append("    return None")
            break
        c = f"c{j}"
        lines += [
            f"    if {c} is None or {c}.prim is not {const(prim)} or {c}.key_params != {const(key_params)}:",
            "        return None",
            f"    ins = {c}.inputs",
            f"    if len(ins) != {len(specs)}:",
            "        return None",
        ]
        for k, s in enumerate(specs):
            i = f"ins[{k}]"
            code = s[0]
            if code == FOLLOW_PENDING:
                if s[1] in assigned:
                    lines += [
                        f"    i = {i}",
                        f"    if type(i) is not Node or i.value is not None or i.call is not c{s[1]}:",
                        "        return None",
                    ]
                else:
                    assigned.add(s[1])
                    slots.add(s[3])
                    lines += [
                        f"    i = {i}",
                        "    if type(i) is not Node or i.value is not None:",
                        "        return None",
                        f"    c{s[1]} = i.call",
                        f"    n{s[3]} = i",
                    ]
            elif code == FOLLOW_LEAF:
                if s[1] in leaves:
                    lines += [f"    if {i} is not l{s[1]}:", "        return None"]
                else:
                    leaves.add(s[1])
                    dtype, shape = const(s[3]), const(s[2])
                    lines += [
                        f"    i = {i}",
                        "    if type(i) is not Node or i.value is None:",
                        "        return None",
                        f"    if i.dtype is not {dtype} and i.dtype != {dtype}:",
                        "        return None",
                        f"    if i.shape != {shape}:",
                        "        reshaped = True",
                        f"    l{s[1]} = i",
                    ]
            elif code == FOLLOW_SCALAR:
                scalars.add(s[1])
                lines += [f"    s{s[1]} = {i}", f"    if type(s{s[1]}) is not {const(s[2])}:", "        return None"]
            else:
                lines += [f"    if {i} is not None:", "        return None"]
    else:
        calls = ", ".join([f"c{j}" for j in range(len(steps))])
        leaf_list = ", ".join([f"l{i}" if i in leaves else "None" for i in range(n_leaves)])
        lines += [
            f"    calls = [{calls}]",
            f"    if len(set(calls)) != {len(steps)}:",
            "        return None",
            f"    leaves = [{leaf_list}]",
            f"    if len(set(leaves)) != {n_leaves}:",
            "        return None  # (two of the plan's calls or leaves are one here: another graph)",
            "    return calls, leaves, [{}], [{}], reshaped".format(
                ", ".join([f"s{i}" if i in scalars else "None" for i in range(n_scalars)]),
                ", ".join([f"n{k}" if k in slots else "None" for k in range(n_slots)]),
            ),
        ]
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines) + "\n", "<x10array plan>", "exec"), consts, namespace)
    return namespace["follow"]
