"""Stage 7d, plans: a barrier that follows a structure seen before. A plan (`Plan`) is what a
barrier decided for a graph structure, reused when the same structure comes back (a repeated
step).

`barrier_program` is the barrier's one way to its traced graph and program: a plan of this
head that the graph and the runtime facts its decisions depended on fit (`_planned`), else the
walk (trace.walk), donation (program.donation) and the program's build (program.build), a plan
kept of it for next time (`_remember`). A plan gives exactly the walk's key, outputs and
donation, or is not used: X10ARRAY_PLAN_CHECK walks too and compares. The plans live in the
runtime's plan cache (runtime.RUNTIME.plans), by head.
"""

from __future__ import annotations

import collections
import weakref
from operator import eq, gt
from sys import getrefcount
from typing import Any

from ..._core import settings
from ..._core.devices import Device
from ..._core.lru import Entry, tick
from ..._core.metrics import COUNTERS
from .graph import Call, Node
from .lowering import items_at
from .placement import placement_of
from .program import Program, build, claim_slots, donation, donation_facts, key_for
from .runtime import RUNTIME
from .trace import (
    GraphKey,
    Slot,
    Traced,
    follow,
    follow_specs,
    follower,
    outside_references,
    walk,
)


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
        self.inner_of = items_at(self.inner)  # (the values of those slots, as a tuple: one C call)
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
    mask, private, rerun = donation_facts(traced, targets)
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
        # donation's own slot rule (program.claim_slots) over the outputs the walk would have (the
        # targets, then the joined values). Where a private leaf takes a slot, the rule asks for
        # the rerun leaves: none when no call is held from outside (read then, unless the plan's
        # facts read it already), else the walk decides.
        outputs = targets + [internal[k] for k in plan.joined_order]
        mask, asked = claim_slots(leaves, outputs, private or (False,) * len(leaves), set)
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
