"""A plan per graph structure (issue 26): a barrier whose pending graph has a structure seen
before follows the plan (plans.Plan) instead of walking the graph, and decides exactly what
the walk would: the same key, outputs, leaves, scalars and donation (X10ARRAY_PLAN_CHECK, on
in every test here, walks each planned graph too and raises on a difference), hence the same
values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array._backends.lazy import graph as _graph
from x10array._backends.lazy import plans as _plans
from x10array._backends.lazy import runtime as _runtime
from x10array._backends.lazy import tiering as _tiering
from x10array._backends.lazy.trace import outside_references

LAZY = xp.Device("cpu", 0, "xla")
TIERS = {"interpreted": None, "compiled": 1}


@pytest.fixture(autouse=True)
def _checked(override_settings: Any, monkeypatch: Any) -> None:
    override_settings(X10ARRAY_PLAN_CHECK=True)
    _runtime.RUNTIME.plans.clear()  # (no plan of another test's graphs)
    # every plan follows by its generated function from its first hit on, and each time it
    # does, trace.follow is asked too: the two give the same calls, leaves, scalars, pending
    # values and shape flag (or both None) on every graph of these tests
    monkeypatch.setattr(_plans, "FOLLOWER_AFTER", 1)
    real = _plans.Plan.followed

    def compared(plan: Any, targets: list[Any]) -> Any:
        got = real(plan, targets)
        if plan.generated is not None:
            want = _plans.follow(plan.steps, plan.heads, len(plan.leaf_uses), plan.n_scalars, len(plan.slots), targets)
            assert (got is None) == (want is None), "trace.follower and trace.follow disagree on a match"
            if got is not None:
                for a, b in zip(got[:4], want[:4]):
                    assert len(a) == len(b) and all(x is y for x, y in zip(a, b)), "trace.follower gathered otherwise"
                assert got[4] == want[4]
            del want  # (the caller counts references to what it gathered)
        return got

    monkeypatch.setattr(_plans.Plan, "followed", compared)
    # and the facts, read in C from sys.getrefcount (plans._facts), are those that
    # trace.outside_references reads one value at a time
    real_facts = _plans._facts

    def facts(plan: Any, calls: Any, leaves: Any, internal: Any, with_calls: bool, *args: Any) -> Any:
        got = real_facts(plan, calls, leaves, internal, with_calls, *args)
        assert got == _facts_one_by_one(plan, calls, leaves, internal, with_calls, *args)
        return got

    monkeypatch.setattr(_plans, "_facts", facts)


def _facts_one_by_one(
    plan: Any,
    calls: list[Any],
    leaves: list[Any],
    internal: list[Any],
    with_calls: bool,
    extra: int = 0,
    in_targets: Any = (),
) -> Any:
    """plans._facts, each reference count read by trace.outside_references."""
    joined = []
    for k in range(len(internal)):
        if not plan.head_slot[k] and outside_references(internal[k], plan.slot_uses[k] + 1 + (k in in_targets)) > 0:
            array = internal[k].owner() if internal[k].owner is not None else None
            joined.append((k, array is not None and array._data is internal[k]))
            array = None
    private = None
    if plan.donate_on:
        private = tuple(
            [
                outside_references(leaves[i], plan.leaf_uses[i] + 1 + extra) == 0 and not leaves[i].exported
                for i in range(len(leaves))
            ]
        )
    free = with_calls and all([outside_references(calls[j], 2 + extra) == 0 for j in range(len(calls))])
    return joined, private, free


@pytest.fixture(params=list(TIERS))
def tier(request: pytest.FixtureRequest) -> Any:
    with _tiering.compile_threshold(TIERS[request.param]):
        yield request.param


def hits(before: Any) -> int:
    return (xp.metrics() - before).plan_hits


def descend(w: Any, g: Any, lr: float) -> Any:
    return w - lr * (g * g + 0.5 * w)


def fit(steps: int, plans: bool) -> np.ndarray:
    w = xp.ones((16, 8), device=LAZY) * 1.0
    g = xp.asarray(np.linspace(-1.0, 1.0, 128).reshape(16, 8), device=LAZY)
    for step in range(steps):
        w = descend(w, g, 0.1 / (1 + step))
        if not plans:
            _runtime.RUNTIME.plans.clear()
        xp.lazy_barrier()
    return np.asarray(w)


def test_a_repeated_step_hits_its_plan_and_computes_the_same_bits(tier: str) -> None:
    fit(3, True)  # (the step's first sightings on this tier: a plan from the second on)
    before = xp.metrics()
    planned = fit(6, True)
    assert hits(before) >= 5  # every barrier of the loop but the first (the weights made) follows the plan
    before = xp.metrics()
    walked = fit(6, False)
    assert hits(before) <= 1  # (the read after the loop)
    assert planned.tobytes() == walked.tobytes()


def step(w: Any, x: Any) -> Any:
    return xp.sum(w * 2.0 + x, axis=0)


def test_another_structure_dtype_or_shape_misses() -> None:
    def run(w: Any, x: Any, fn: Any = step) -> int:
        before = xp.metrics()
        out = fn(w, x)
        xp.lazy_barrier()
        assert out._data.value is not None
        return hits(before)

    w, x = xp.ones((4, 3), device=LAZY), xp.ones((4, 3), device=LAZY)
    xp.lazy_barrier()
    run(w, x)
    run(w, x)  # (a plan from the second sighting on)
    assert run(w, x) == 1  # the same structure
    assert run(w, x, lambda w, x: xp.sum(w * 2.0 - x, axis=0)) == 0  # another primitive
    assert run(w, x, lambda w, x: xp.sum(w * 2.0 + x, axis=1)[:3]) == 0  # other parameters
    assert run(w, xp.ones((1, 3), device=LAZY)) == 0  # a leaf broadcast: another structure
    w5, x5 = xp.ones((5, 3), device=LAZY), xp.ones((5, 3), device=LAZY)
    xp.lazy_barrier()
    assert run(w5, x5) == 1  # leaves of other shapes (the output's is the same): the plan, another key
    assert run(w, xp.ones((4, 3), dtype=xp.float32, device=LAZY)) == 0  # another dtype of a leaf
    assert run(w, 2) == 0  # a Python int where a leaf was
    assert run(w, x) == 1  # the first structure's plan is still there


def test_one_leaf_read_twice_is_not_two_leaves(tier: str) -> None:
    """`x * y` and `x * x` have equal primitives, shapes and dtypes: the plan of one must not
    run the other (the plan's distinct leaves must be distinct arrays)."""
    x = xp.asarray(np.arange(6.0), device=LAZY)
    y = xp.asarray(np.arange(6.0) + 10.0, device=LAZY)
    xp.lazy_barrier()
    for _ in range(3):
        z = x * y + 1.0
        xp.lazy_barrier()
    np.testing.assert_array_equal(np.asarray(z), np.arange(6.0) * (np.arange(6.0) + 10.0) + 1.0)
    before = xp.metrics()
    z = x * x + 1.0
    xp.lazy_barrier()
    assert hits(before) == 0
    np.testing.assert_array_equal(np.asarray(z), np.arange(6.0) ** 2 + 1.0)


def test_a_value_computed_once_and_read_twice_is_not_computed_twice() -> None:
    """`t = exp(x); t + t` and `exp(x) + exp(x)`: one call read twice against two calls."""
    x = xp.asarray(np.linspace(0.0, 1.0, 5), device=LAZY)
    for _ in range(3):
        t = xp.exp(x)
        z = t + t
        del t
        xp.lazy_barrier()
    before = xp.metrics()
    z = xp.exp(x) + xp.exp(x)
    xp.lazy_barrier()
    assert hits(before) == 0
    np.testing.assert_array_equal(np.asarray(z), 2 * np.exp(np.linspace(0.0, 1.0, 5)))


def test_a_changed_python_float_is_an_input_of_the_plan(tier: str) -> None:
    x = xp.ones(4, device=LAZY)
    xp.lazy_barrier()
    outs = []
    before = xp.metrics()
    for k in range(5):
        z = x * (0.5 + k) + 1.0
        xp.lazy_barrier()
        outs.append(np.asarray(z))
    assert hits(before) >= 3
    np.testing.assert_array_equal(np.stack(outs), np.array([[1.5 + k] * 4 for k in range(5)]))


def test_a_plan_hit_reads_the_new_value_of_a_rebound_input(tier: str) -> None:
    """A loop that rebinds an input at every step (new data, `b = asarray(row)`) follows the
    step's plan with the new buffer as the leaf: each step computes with its own data, and the
    weights carried (and donated, compiled) from step to step stay right."""
    rows = np.random.default_rng(7).standard_normal((8, 5))
    w = xp.zeros(5, device=LAZY) * 1.0
    xp.lazy_barrier()
    expected = np.zeros(5)
    before = xp.metrics()
    for row in rows:
        b = xp.asarray(row, device=LAZY)  # rebound: another leaf buffer at every step
        w = w * 0.5 + b * b
        xp.lazy_barrier()
        expected = expected * 0.5 + row * row
        np.testing.assert_array_equal(np.asarray(b), row)  # (the input, read, is untouched)
    assert hits(before) >= 5
    np.testing.assert_allclose(np.asarray(w), expected, rtol=1e-14, atol=0)


def test_a_compiled_run_leaves_the_threads_jax_settings_as_they_were() -> None:
    """A compiled run enters jax's enable_x64 and default_device contexts, made once per device
    and entered again at every run (runtime.Runtime.scope): after the runs the thread's jax
    setting is what it was, inside a user's context or not; a scope in use is never handed out
    again (a program run while another runs, from a signal handler, takes another)."""
    import jax

    with _tiering.compile_threshold(1):
        w = xp.ones(4, device=LAZY) * 1.0
        for outside in (False, True, False):
            with jax.enable_x64(outside):
                for _ in range(4):
                    w = w * 0.5 + 1.0
                    xp.lazy_barrier()
                assert jax.config.jax_enable_x64 is outside
        np.testing.assert_array_equal(np.asarray(w), np.full(4, 2.0 - 2.0**-12))
    free, first = _runtime.RUNTIME.scope(LAZY)
    _, second = _runtime.RUNTIME.scope(LAZY)  # (the first one not given back: in use)
    assert first[0] is not second[0] and first[1] is not second[1]
    free += [second, first]
    _, again = _runtime.RUNTIME.scope(LAZY)
    assert again is first
    free.append(again)


def read_loss(w: Any, hold: bool) -> tuple[float, Any]:
    """A read of `loss`: the graph behind it holds `t`, which the walk makes an output when
    an array still holds it (so it is not computed again) and leaves inside otherwise."""
    t = w * 2.0
    loss = xp.sum(t + 1.0)
    if not hold:
        del t
    value = float(loss)
    return value, (t if hold else None)


@pytest.mark.parametrize("first", [False, True])
def test_a_held_intermediate_is_kept_whatever_the_plan_saw(first: bool, tier: str) -> None:
    w = xp.asarray(np.arange(4.0), device=LAZY)
    for _ in range(3):  # the plan is made with `t` held (first) or dropped
        read_loss(w, first)
    before = xp.metrics()
    value, t = read_loss(w, not first)
    assert value == float(np.sum(np.arange(4.0) * 2.0 + 1.0))
    if not first:  # `t` was held this time: computed with the read, kept
        assert t._data.value is not None
        np.testing.assert_array_equal(np.asarray(t), np.arange(4.0) * 2.0)
    read_loss(w, not first)  # again: a plan of this case now
    value, t = read_loss(w, not first)
    assert hits(before) >= 1
    assert (t is None) == first


def update(w: Any, g: Any) -> Any:
    return w - 0.5 * g


@pytest.mark.parametrize("held_first", [False, True])
def test_a_held_input_is_never_donated_whatever_the_plan_saw(held_first: bool, override_settings: Any) -> None:
    """The old weights `w` are donated to the update's program when nothing else holds them;
    a user's variable holding them stops that at once, with a plan made when they were not
    held (and the other way round: donation comes back once they are dropped)."""
    g = xp.ones((32, 32), device=LAZY)
    w = xp.zeros((32, 32), device=LAZY) * 1.0
    xp.lazy_barrier()
    with _tiering.compile_threshold(1):
        for _ in range(3):  # the plan: made with the old weights held (held_first) or not
            old = w
            w = update(w, g)
            if not held_first:
                del old
            xp.lazy_barrier()
        expected = np.asarray(w).copy()  # (an exported buffer is never donated: a copy from here on)
        w = w * 1.0
        xp.lazy_barrier()
        for repeat in range(3):  # the other case: the plan's facts differ (walked), then a plan of its own
            before = xp.metrics()
            old = w
            w = update(w, g)
            if held_first:
                del old  # not held now: donated
            xp.lazy_barrier()
            d = xp.metrics() - before
            if repeat != 1:  # (the second: a hit if an earlier test had compiled this key)
                assert d.plan_hits == (repeat == 2)
            if held_first:
                assert d.donated_buffers == 1
            else:
                assert d.donated_buffers == 0
                np.testing.assert_array_equal(np.asarray(old), expected)  # readable, unchanged
                del old
            expected = expected - 0.5
            np.testing.assert_array_equal(np.asarray(w), expected)
            w = w * 1.0  # (not exported)
            xp.lazy_barrier()


def test_a_plan_whose_program_left_the_cache_walks_again() -> None:
    x = xp.ones(3, device=LAZY)
    xp.lazy_barrier()
    for _ in range(3):
        a = x * 2.0 + 1.0
        xp.lazy_barrier()
    _runtime.RUNTIME.programs.clear()  # (the plan stays)
    before = xp.metrics()
    a = x * 2.0 + 1.0
    xp.lazy_barrier()
    assert hits(before) == 0
    np.testing.assert_array_equal(np.asarray(a), [3.0, 3.0, 3.0])
    a = x * 2.0 + 1.0
    xp.lazy_barrier()
    assert hits(before) == 1  # (a plan of the new program)


@pytest.mark.parametrize("how", ["pop", "evict", "replace"])
def test_a_plan_does_not_run_a_program_the_cache_no_longer_holds(how: str, monkeypatch: Any) -> None:
    """A plan keeps its program's cache entry (Plan.entry, weakly: a program popped or evicted
    is freed, the plan does not keep it) and uses it while the cache's `changes` are the same:
    a program popped, evicted, or a cache replaced meanwhile makes the plan look again (and
    walk, the program gone), never run the entry it kept."""
    from x10array._core import lru as _lru

    x = xp.ones(3, device=LAZY)
    xp.lazy_barrier()
    for _ in range(3):
        a = x * 2.0 + 1.0
        xp.lazy_barrier()
    programs = _runtime.RUNTIME.programs
    (key,) = [k for k, p in programs.items() if p.key.leaf_avals == (((3,), np.dtype(np.float64)),)][-1:]
    if how == "pop":
        programs.pop(key)
    elif how == "evict":  # (the plan's program the least recently used: evicted by a bound of 1)
        small = _lru.LRU("test programs", 1, register=False, weak_entries=True)
        small.put(key, programs[key])
        monkeypatch.setattr(_runtime.RUNTIME, "programs", small)
        a = x * 2.0 + 1.0
        xp.lazy_barrier()  # (the plan looks its program up in the new cache, and keeps it)
        small.put("another key", None)  # evicts it
    else:
        monkeypatch.setattr(
            _runtime.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False, weak_entries=True)
        )
    if how != "replace":  # (the plan's reference is weak: the program left with its entry)
        kept = [p for _, plans in _runtime.RUNTIME.plans.items() for p in plans if p.key == key]
        assert kept and all(p.entry() is None for p in kept)
    before = xp.metrics()
    a = x * 2.0 + 1.0
    xp.lazy_barrier()
    assert hits(before) == 0
    np.testing.assert_array_equal(np.asarray(a), [3.0, 3.0, 3.0])


def test_the_check_raises_when_a_plan_differs_from_the_walk(monkeypatch: Any) -> None:
    x = xp.ones(3, device=LAZY)
    for _ in range(3):
        a = x * 2.0 + 1.0
        xp.lazy_barrier()
    real = _plans._planned

    def wrong(head: Any, targets: Any, device: Any) -> Any:
        found = real(head, targets, device)
        if found is None:
            return None
        traced, program = found
        return traced._replace(leaves=list(reversed(traced.leaves)) + [x._data]), program

    monkeypatch.setattr(_plans, "_planned", wrong)
    a = x * 2.0 + 1.0
    with pytest.raises(RuntimeError, match="X10ARRAY_PLAN_CHECK: the plan's leaves differ"):
        xp.lazy_barrier()
    monkeypatch.undo()
    np.testing.assert_array_equal(np.asarray(a), [3.0, 3.0, 3.0])  # (the failed barrier lost nothing)


def test_a_head_whose_plans_keep_missing_stops_following_them_for_a_while(monkeypatch: Any) -> None:
    """More structures under one head than it keeps plans for, in a cycle (k-means' graph
    breaks): every barrier followed and missed each plan and kept a new one. Once the head kept
    2 * PLANS_PER_HEAD plans with fewer than half as many hits, its barriers walk without
    following for RETRY_AFTER barriers, then try again; the values are the walk's throughout."""
    follows = []
    real = _plans.follow
    monkeypatch.setattr(_plans, "follow", lambda *a, **k: follows.append(1) or real(*a, **k))
    monkeypatch.setattr(_plans, "RETRY_AFTER", 20)
    w = xp.ones((4, 3), device=LAZY)
    x = xp.asarray(np.arange(12.0).reshape(4, 3), device=LAZY)
    xp.lazy_barrier()
    n = _plans.PLANS_PER_HEAD + 2  # structures with one head (a sum of shape (3,)): j additions

    def cycle() -> None:
        for j in range(1, n + 1):
            y = w
            for _ in range(j):
                y = y + x
            out = xp.sum(y, axis=0)
            xp.lazy_barrier()
            assert np.array_equal(np.asarray(out), np.sum(1.0 + j * np.arange(12.0).reshape(4, 3), axis=0))

    for _ in range(4):
        cycle()
    follows.clear()
    cycle()
    assert not follows  # (thrashing: walked, nothing followed)
    for _ in range(4):
        cycle()
    assert follows  # RETRY_AFTER (20) barriers later, the head plans again


def select_and_mean(X: Any, k: int, iterations: int, plans: bool) -> np.ndarray:
    """k-means' pattern: each iteration's graph reads the previous one's selections
    `X[labels == j]`, leaves whose shapes change from iteration to iteration."""
    centers = X[:k]
    for _ in range(iterations):
        d = xp.sum((X[:, None, :] - centers[None, :, :]) ** 2, axis=2)
        labels = xp.argmin(d, axis=1)
        means = []
        for j in range(k):
            if not plans:
                _runtime.RUNTIME.plans.clear()
            means.append(xp.mean(X[labels == j], axis=0))
        centers = xp.stack(means)
    return np.asarray(centers)


def test_a_plan_follows_its_structure_on_leaves_of_other_shapes(tier: str) -> None:
    """The graph of each iteration has the structure of the previous one on leaves of other
    shapes (the selections): it follows the plan, under the key of its own shapes (the walk's:
    X10ARRAY_PLAN_CHECK), and computes the walk's bits."""
    rng = np.random.default_rng(7)
    X = xp.asarray(np.concatenate([rng.standard_normal((40, 2)) + 4 * c for c in range(3)]), device=LAZY)
    select_and_mean(X, 3, 4, True)  # (the graphs' first sightings: plans from the second on)
    before = xp.metrics()
    planned = select_and_mean(X, 3, 6, True)
    assert hits(before) >= 4
    before = xp.metrics()
    walked = select_and_mean(X, 3, 6, False)
    assert hits(before) == 0
    assert planned.tobytes() == walked.tobytes()


@pytest.mark.parametrize("held", [False, True])
def test_donation_on_leaves_of_other_shapes_is_the_walks(held: bool) -> None:
    """A plan followed on leaves of other shapes decides donation by the walk's own slot rule
    (program.claim_slots): a private leaf `c` whose shape differed from the output's while the
    plan was made takes the output's slot once it has the output's shape, and is donated into
    it; unless a call of the graph is held from outside (`held`): `c` is then a rerun leaf,
    which the walk keeps and the plan cannot see, so that barrier walks. X10ARRAY_PLAN_CHECK
    checks the key, donation mask included, against the walk's at every followed barrier."""
    a = xp.asarray(np.arange(6.0), device=LAZY) * 1.0  # (held here: never private)
    xp.lazy_barrier()

    with _tiering.compile_threshold(1):
        for m in (4, 4, 5, 6):  # the plan made on (4,) (no leaf has the output's shape), then followed
            c = xp.asarray(np.arange(float(m)), device=LAZY) * 1.0
            xp.lazy_barrier()  # (c computed: a leaf, private once dropped)
            before = xp.metrics()
            t = xp.sum(c)
            keep = t._data.call if held else None  # (a call of the graph held from outside)
            out = a * 2.0 + t
            del c, t
            xp.lazy_barrier()
            d = xp.metrics() - before
            np.testing.assert_array_equal(np.asarray(out), np.arange(6.0) * 2.0 + m * (m - 1) / 2)
            del keep
            if m == 5:  # (a leaf of another shape, no slot: the plan)
                assert d.plan_hits == 1 and d.donated_buffers == 0
    assert d.plan_hits == (not held)  # (m = 6: held, the walk decides)
    assert d.donated_buffers == (not held)


# -- values whose shape came from values (graph.VALUE_SIZED) -------------------------------------


def kmeans(X: Any, k: int, iterations: int, on_each: Any = None) -> Any:
    """k-means written the NumPy way (benchmarks/bench_dayone.py): the centers are means of
    boolean selections, whose row counts change at every iteration."""
    centers = X[:k]
    for _ in range(iterations):
        d = xp.sum((X[:, None, :] - centers[None, :, :]) ** 2, axis=2)
        labels = xp.argmin(d, axis=1)
        centers = xp.stack([xp.mean(X[labels == j], axis=0) for j in range(k)])
        if on_each is not None:
            on_each()
    return centers


def test_a_mean_of_a_boolean_selection_runs_at_once_so_the_next_graph_repeats() -> None:
    """`mean(X[labels == j], axis=0)` has a fixed shape, but its operand's row count came from
    values: computed at once, it joins the next iteration's graph as a leaf of a fixed shape,
    so that graph is one program at every iteration (recorded, it would be a new program at
    each iteration, on operands of new shapes: never seen twice, never compiled). The values
    are eager's, bit for bit (the same NumPy kernels)."""
    rng = np.random.default_rng(3)
    Xn = rng.standard_normal((400, 3))
    want = np.asarray(kmeans(xp.asarray(Xn), 4, 10))
    X = xp.asarray(Xn, device=LAZY)
    kmeans(X, 4, 2)  # (the graphs' first sightings)
    programs = _runtime.RUNTIME.programs
    made = len(programs)
    hits_per_iteration = []
    got = kmeans(X, 4, 10, lambda: hits_per_iteration.append(xp.metrics().plan_hits))
    assert len(programs) == made  # no program made: every graph of the loop is one seen before
    # and the distance graph of every iteration planned (the first's centers are X[:k])
    assert np.diff(hits_per_iteration)[1:].min() >= 1
    assert np.asarray(got).tobytes() == want.tobytes()


def test_what_keeps_a_value_made_length_runs_at_once_and_what_drops_it_stops_that() -> None:
    X = xp.asarray(np.arange(24.0).reshape(8, 3), device=LAZY)
    mask = xp.asarray(np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=bool), device=LAZY)
    rows = X[mask]  # (4, 3): 4 came from the mask's values
    scaled = rows * 2.0  # still 4 rows: computed at once
    column = scaled[:, 1]  # (4,)
    assert scaled._data.value is not None and column._data.value is not None
    total = xp.sum(column)  # () : computed at once, and no longer sized
    assert total._data.value is not None
    later = total + 1.0  # an operation on a value of a fixed shape: recorded
    assert later._data.value is None
    kept = xp.mean(X, axis=0)  # nothing value-made: recorded as usual
    assert kept._data.value is None
    selected = np.arange(24.0).reshape(8, 3)[np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=bool)]
    assert float(later) == float(np.sum(selected[:, 1] * 2.0)) + 1.0
    # a pending operand: the operation is recorded (and computed with the graph)
    pending = X[:4] * 1.0
    mixed = rows + pending
    assert mixed._data.value is None
    np.testing.assert_array_equal(np.asarray(mixed), selected + np.arange(12.0).reshape(4, 3))


def test_an_operation_of_several_results_on_a_selection_runs_at_once_too() -> None:
    """`svd` of a boolean selection (its rows came from values) has results of fixed shapes
    and of the selection's row count: all computed at once, and only the latter stays
    VALUE_SIZED (an operation on it runs at once too); the values are eager's."""
    rng = np.random.default_rng(5)
    Xn = rng.standard_normal((40, 3))
    keep = rng.random(40) < 0.5
    want = np.linalg.svd(Xn[keep], full_matrices=False)
    X = xp.asarray(Xn, device=LAZY)
    u, s, vt = xp.linalg.svd(X[xp.asarray(keep, device=LAZY)], full_matrices=False)
    assert all(a._data.value is not None for a in (u, s, vt))
    assert u._data.seq == _graph.VALUE_SIZED and s._data.seq != _graph.VALUE_SIZED
    np.testing.assert_allclose(np.asarray(s), want[1], rtol=1e-12)
    assert (xp.sum(u * u, axis=1))._data.value is not None  # (from u alone: at once)
    later = s * 2.0  # (s has a fixed shape: recorded)
    assert later._data.value is None
