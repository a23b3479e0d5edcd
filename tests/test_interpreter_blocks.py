"""The interpreter strip-mines a chain of elementwise steps (policies.INTERPRETER_BLOCKS: exactly
rounded arithmetic, comparisons, and exp on operands of its float dtype) whose intermediates
nothing else reads, possibly ending in count_nonzero over every axis
(policies.INTERPRETER_BLOCK_COUNTS) or in a 1-D float mean (policies.INTERPRETER_BLOCK_SUMS, its
blocks NumPy's pairwise tree's nodes): block by block, the dead intermediates in block buffers,
the live results into full buffers, the count summed per block, the mean's nodes added as the
tree adds them (interpreter.BlockedRun, NumpySteps._blocked). The same bits as the step-by-step
interpreter and as eager: for sizes that are no multiple of the block, strided, broadcast and
view operands, Python scalars, NaN, infinities, -0.0 and subnormals (flushed as XLA's arithmetic
flushes them, the CPU mode or the scan as the step-by-step run would)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _numerics import same_bits
from _util import forget_programs

import x10array as xp
from x10array._backends.lazy import interpreter as _interpreter
from x10array._backends.lazy import program as _program
from x10array._backends.lazy import tiering as _tiering
from x10array._core import policies, settings
from x10array._core.primitive import OP_TABLE

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0)
BLOCK = 1000  # elements a block in these tests: sizes below are no multiple of it


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(_interpreter, "_BLOCK_ELEMENTS", BLOCK)
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 12)
    with _tiering.compile_threshold(None):
        yield


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Record the members of each run computed in blocks."""
    ran: list[tuple[int, ...]] = []
    real = _interpreter.NumpySteps._run_blocks

    def spy(self: Any, run: Any, *args: Any) -> Any:
        ran.append(run.members)
        return real(self, run, *args)

    monkeypatch.setattr(_interpreter.NumpySteps, "_run_blocks", spy)
    return ran


def _both(
    monkeypatch: pytest.MonkeyPatch, fn: Callable[..., list[Any]], *host: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """fn's results on the lazy device, blocked and step by step, and how many runs were blocked."""
    forget_programs()
    ran = _spy(monkeypatch)
    blocked = [np.asarray(v) for v in fn(*[xp.asarray(h, device=LAZY) for h in host])]
    n = len(ran)
    forget_programs()
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
    plain = [np.asarray(v) for v in fn(*[xp.asarray(h, device=LAZY) for h in host])]
    assert len(ran) == n
    forget_programs()
    return blocked, plain, n


def _eager(fn: Callable[..., list[Any]], *host: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(v) for v in fn(*[xp.asarray(h, device=EAGER) for h in host])]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(same_bits(a.reshape(-1), b.reshape(-1)).all())


def _all_same(blocked: list[Any], plain: list[Any], eager: list[Any] | None = None) -> bool:
    """Each blocked result has the step-by-step run's bits (and eager's, where given)."""
    refs = plain if eager is None else eager
    return all([_same(g, w) and _same(g, r) for g, w, r in zip(blocked, plain, refs, strict=True)])


def _specials(n: int, dtype: Any, rng: np.random.Generator, subnormals: bool) -> np.ndarray:
    x = rng.standard_normal(n) * 3
    big = 1e300 if np.dtype(dtype).itemsize == 8 else 1e38
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, big, -big]
    if subnormals:
        special += [5e-324, -5e-324, 1e-310, -2e-310] if np.dtype(dtype).itemsize == 8 else [1e-40, -1e-40, 1e-45]
    idx = rng.choice(n, size=len(special) * 20, replace=False)
    x[idx] = np.resize(special, idx.size)
    return x.astype(dtype)


def montecarlo(pts: Any) -> list[Any]:
    x, y = pts[:, 0], pts[:, 1]
    return [xp.count_nonzero(x**2 + y**2 <= 1.0), xp.mean(xp.exp(-(x**2)))]


@pytest.mark.parametrize("n", [4321, 1000, 999, 1001, 4003, 20_000])
def test_the_monte_carlo_graphs_give_eagers_bits(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Strided column views of a leaf, squares, a sum, a comparison with a Python float, the
    count, blocked; then square, negative, exp and the float mean, blocked along NumPy's
    pairwise tree."""
    pts = np.random.default_rng(n).random((n, 2)) * 1.2
    blocked, plain, ran = _both(monkeypatch, lambda p: [float(v) for v in montecarlo(p)], pts)
    assert ran == 2  # (the count's run; the mean's, ending in the mean where NumPy sums pairwise)
    eager = [float(v) for v in montecarlo(xp.asarray(pts, device=EAGER))]
    x, y = pts[:, 0], pts[:, 1]
    assert blocked == plain == eager == [float(np.count_nonzero(x**2 + y**2 <= 1.0)), float(np.mean(np.exp(-(x**2))))]


CHAINS: dict[str, Callable[..., list[Any]]] = {
    # (a, b of one shape; the results each test reads)
    "arithmetic": lambda a, b: [((a * b) + (a - b)) * 0.5 - (-b)],
    "live middle": lambda a, b: [(s := a + b), s * s - a, xp.count_nonzero((s * 2.0) > b)],
    "comparisons": lambda a, b: [(a < b), (a == b), (a != a), xp.count_nonzero((a * a) >= (b - 1.0))],
    "scalars": lambda a, b: [(a + 2) * 3.5 - True, xp.count_nonzero(a * 0.0 == 0.0)],
    "broadcast": lambda a, b: [
        ((a * b[:1]) + b) * 0.5,
        ((a - xp.asarray(2.0, dtype=a.dtype, device=a.device)) * a) + 1.0,
    ],
    "views": lambda a, b: [((a[:-1:2] * b[1::2]) + a[2::2]) * 2.0, xp.count_nonzero(a[3:] * b[:-3] < 0.0)],
    # (exp's results normal in float32, where eager keeps subnormals that the lazy device flushes)
    "exp": lambda a, b: [
        xp.exp(((a * b) * 0.1) - 1.0) * 0.5,
        xp.count_nonzero(xp.exp(-(a * a) * 0.1) > b),
        xp.exp(a) + (b - a),
    ],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(4321,), (4003,), (1203, 7)])
def test_chains_give_the_bits_of_the_step_by_step_run_and_of_eager(
    name: str, dtype: Any, shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    n = int(np.prod(shape))
    a = _specials(n, dtype, rng, subnormals=False).reshape(shape)
    b = _specials(n, dtype, rng, subnormals=False).reshape(shape)
    fn = CHAINS[name]
    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran >= 1
    assert _all_same(blocked, plain, _eager(fn, a, b)), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_subnormals_are_flushed_as_the_step_by_step_run_flushes_them(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subnormal operands (leaves, a strided view) and results: the blocked run flushes them
    as XLA's arithmetic does, bit for bit as the step-by-step interpreter (-0.0 kept)."""
    rng = np.random.default_rng(3)
    a = _specials(6001, dtype, rng, subnormals=True)
    b = _specials(6001, dtype, rng, subnormals=True)
    tiny = float(np.finfo(dtype).tiny)

    def fn(u: Any, v: Any) -> list[Any]:
        return [
            ((u + v) - u) + v,
            xp.count_nonzero((u * v) != 0.0),
            ((u[:-1:2] * 0.5) + v[1::2]) * 3.0,
            ((v * tiny) * 4.0) - v,
        ]

    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran >= 1
    assert _all_same(blocked, plain)


def test_a_subnormal_python_scalar_runs_blocked_with_numpys_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python float subnormal in float32: the interpreter keeps subnormals (NumPy's
    numerics), so the run is blocked like any other, with the bits of the run step by step."""
    a = np.random.default_rng(4).standard_normal(5003).astype(np.float32)

    def fn(u: Any) -> list[Any]:
        return [((u * 1e-40) + u) * 2.0]

    blocked, plain, ran = _both(monkeypatch, fn, a)
    assert ran >= 1 and _same(blocked[0], plain[0])


def test_integers_and_booleans(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, 5001).astype(np.int32)
    b = rng.integers(-100, 100, 5001).astype(np.int32)

    def fn(u: Any, v: Any) -> list[Any]:
        return [(u * v) - (u + 3), xp.count_nonzero((u * u) > v), ((u < v) == (v > 0))]

    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran >= 1
    assert _all_same(blocked, plain, _eager(fn, a, b))


def test_small_or_broadcasting_runs_keep_todays_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below _BLOCK_BYTES, or where an operand broadcasts along the first axis (a column
    against a row), a run is not blocked, and its program's later runs run its steps where
    they are (BlockedRun.unblocked)."""
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 16)
    ran = _spy(monkeypatch)
    forget_programs()
    for _ in range(3):
        u = xp.asarray(np.arange(1000.0), device=LAZY)
        np.testing.assert_array_equal(np.asarray(((u * 2.0) + 1.0) * 3.0), (np.arange(1000.0) * 2.0 + 1.0) * 3.0)
        col = xp.asarray(np.arange(3000.0).reshape(3000, 1), device=LAZY)
        row = xp.asarray(np.arange(4.0).reshape(1, 4), device=LAZY)
        want = (np.arange(3000.0)[:, None] * np.arange(4.0) + 1.0) * 3.0
        np.testing.assert_array_equal(np.asarray(((col * row) + 1.0) * 3.0), want)
    assert ran == []
    runs = [p.schedule.blocks for p in _program.RUNTIME.programs.values() if p.schedule is not None]
    assert runs and all(r is not None and all(run.unblocked is not None for run in r.values()) for r in runs)
    forget_programs()


def _schedule(fn: Callable[[], Any]) -> Any:
    forget_programs()
    fn()
    (program,) = [p for p in _program.RUNTIME.programs.values() if p.schedule is not None]
    forget_programs()
    return program


def test_the_runs_a_schedule_plans() -> None:
    """Runs are planned from the key alone: joined by the values members pass each other; a
    member read outside before the run's end breaks it; outputs and values read after it are
    live; the values a run reads from outside live to its end."""
    host = np.random.default_rng(6).standard_normal(3000)

    def graph() -> None:
        a = xp.asarray(host, device=LAZY)
        t = (a * a + 1.0) <= 2.0  # a run of multiply, add, less_equal, count
        xp.lazy_barrier()
        del t

    def mc() -> None:
        pts = xp.asarray(np.stack([host, host], axis=1), device=LAZY)
        x, y = pts[:, 0], pts[:, 1]
        float(xp.count_nonzero(x**2 + y**2 <= 1.0))

    program = _schedule(mc)
    ops = program.key.ops
    names = [p.name for p, _, _ in ops]
    blocks = program.schedule.blocks
    (run,) = set(blocks.values())
    assert [names[m] for m in run.members] == ["multiply", "multiply", "add", "less_equal", "count_nonzero"]
    assert run.live == {run.end} and run.counts == {run.end}
    y = next(i for i, (p, _, refs) in enumerate(ops) if p.name == "getitem" and i > run.members[0])
    assert program.schedule.last_use[(y, 0)] == run.end  # (deferred: y lives to the run's end)

    program = _schedule(graph)
    (run,) = set(program.schedule.blocks.values())
    assert [p.name for p, _, _ in (program.key.ops[m] for m in run.members)] == ["multiply", "add", "less_equal"]
    assert run.live == {run.end}


def test_a_value_read_outside_before_the_end_breaks_the_run() -> None:
    ops = (
        (OP_TABLE["multiply"], (), (("l", 0), ("l", 0))),
        (OP_TABLE["sum"], (("axes", (0,)),), (("c", 0, 0),)),  # reads the product before the run ends
        (OP_TABLE["add"], (), (("c", 0, 0), ("c", 1, 0))),
        (OP_TABLE["negative"], (), (("c", 2, 0),)),
        (OP_TABLE["subtract"], (), (("c", 3, 0), ("l", 0))),
    )
    last_use = {(0, 0): 2, (1, 0): 2, (2, 0): 3, (3, 0): 4}
    runs = _interpreter.blocked_runs(ops, last_use, {(4, 0)})  # type: ignore[arg-type]
    assert runs is not None and set(runs) == {2, 3, 4}  # (not the product)
    assert last_use[(1, 0)] == 4 and last_use[(0, 0)] == 4
    one_dead = ops[:4]  # (add and negative: one value no other step reads, nothing to save)
    assert _interpreter.blocked_runs(one_dead, {(0, 0): 2, (1, 0): 2, (2, 0): 3}, {(3, 0)}) is None  # type: ignore[arg-type]
    count_read = (
        (OP_TABLE["less"], (), (("l", 0), ("l", 1))),
        (OP_TABLE["count_nonzero"], (("axes", (0,)), ("keepdims", False)), (("c", 0, 0),)),
        (OP_TABLE["add"], (), (("c", 0, 0), ("c", 1, 0))),  # reads the comparison and its count
    )
    # (the count, read inside, leaves; then the comparison is read outside before the end)
    assert _interpreter.blocked_runs(count_read, {(0, 0): 2, (1, 0): 2}, {(2, 0)}) is None  # type: ignore[arg-type]
    count_after = (
        (OP_TABLE["multiply"], (), (("l", 0), ("l", 1))),
        (OP_TABLE["less"], (), (("c", 0, 0), ("l", 1))),
        (OP_TABLE["count_nonzero"], (("axes", (0,)), ("keepdims", False)), (("c", 1, 0),)),
        (OP_TABLE["add"], (), (("l", 0), ("c", 2, 0))),
    )
    runs = _interpreter.blocked_runs(count_after, {(0, 0): 1, (1, 0): 2, (2, 0): 3}, {(3, 0)})  # type: ignore[arg-type]
    assert runs is not None and set(runs) == {0, 1, 2} and runs[2].live == {2}  # (a count read after its run)


def test_the_policies_name_ufunc_steps_and_exact_counts() -> None:
    """Every INTERPRETER_BLOCKS primitive is an INTERPRETER_UFUNCS one (run as its ufunc);
    exp only uncast; no float reduction is an elementwise member; a count's rule gives its
    kernel's result."""
    assert all(p in policies.INTERPRETER_UFUNCS for p in policies.INTERPRETER_BLOCKS)
    assert all(p in policies.INTERPRETER_BLOCKS for p in policies.INTERPRETER_BLOCKS_UNCAST)
    names = {p.name for p in policies.INTERPRETER_BLOCKS}
    assert {p.name for p in policies.INTERPRETER_BLOCKS_UNCAST} == {"exp"}
    assert not names & {"sum", "mean", "prod"}
    assert {p.name for p in policies.INTERPRETER_BLOCK_COUNTS} == {"count_nonzero"}
    assert {p.name for p in policies.INTERPRETER_BLOCK_SUMS} == {"mean"}
    prim = OP_TABLE["count_nonzero"]
    rule = policies.INTERPRETER_BLOCK_COUNTS.get(prim)
    assert rule is not None and rule({"axes": (0,), "keepdims": True}, 1) is None
    assert rule({"axes": (0,), "keepdims": False}, 2) is None
    count, finish = rule({"axes": (0, 1), "keepdims": False}, 2)
    x = np.random.default_rng(8).random((50, 3)) > 0.5
    want = prim.kernel(_interpreter._NUMPY_TIERED, x, axes=(0, 1), keepdims=False)
    got = finish(sum(count(x[i : i + 7]) for i in range(0, 50, 7)))
    assert type(got) is type(want) and got == want


def test_the_cost_model_credits_a_blocked_step_per_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile saves a blocked run's dispatch per block and its stored results' passes, not
    a pass per step (its intermediates stay in the cache, as in XLA's fusion): 41 additions
    over 64 x 4096 elements are credited ~3 ms a run, not ~22, so they compile later; a
    compiled run would place a view leaf again at each run (_CostModel.place_seconds)."""
    monkeypatch.setattr(_interpreter, "_BLOCK_ELEMENTS", 1 << 15)
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 16)
    cost = _tiering.COST
    deep = np.random.default_rng(9).standard_normal((64, 4096))

    def passes(a: Any) -> Any:
        for i in range(41):
            a = a + float(i)
        return a

    forget_programs()
    np.asarray(passes(xp.asarray(deep, device=LAZY)))
    (program,) = [p for p in _program.RUNTIME.programs.values() if len(p.calls) == 41]
    n = 64 * 4096
    blocks = _interpreter.block_count(n)
    assert blocks == 8
    # (each step one inner loop: contiguous operands of one shape; the last step's result, the
    # graph's, is stored by both tiers)
    want = 41 * cost.blocked_step_seconds(blocks, n, 0, 1)
    assert program.interpret_cost == pytest.approx(want)
    assert want < 41 * cost.step_seconds(OP_TABLE["add"], n) / 5
    forget_programs()
    pts = np.random.default_rng(10).random((5000, 2))
    leaf = xp.asarray(pts, device=LAZY)
    col = leaf[:, 0]
    float(xp.sum(col))  # (a kept view of the leaf's memory: interpreter._kept_view)
    node = col._data
    assert type(node.value) is np.ndarray and node.value.base is not None
    assert cost.place_seconds([node]) == pytest.approx(5000 * cost.PLACE_STRIDED_PER_ELEMENT)
    assert cost.place_seconds([leaf._data]) == 0.0  # (a buffer of its own: placed once)
    forget_programs()


def test_a_run_found_not_blocked_is_credited_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost model credits a run as blocked from the key (its size); a run its first
    interpreted run finds not blocked (a transposed operand: a live result must take NumPy's
    layout) is credited whole from then on (Schedule.recost)."""
    monkeypatch.setattr(_interpreter, "_BLOCK_ELEMENTS", 1 << 15)
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 16)
    cost = _tiering.COST
    forget_programs()
    ran = _spy(monkeypatch)
    host = np.random.default_rng(11).standard_normal((300, 100))
    a = xp.asarray(host, device=LAZY)
    out = np.asarray(((xp.permute_dims(a, (1, 0)) * 2.0) + 1.0) * 3.0)
    assert out.tobytes() == (((host.T * 2.0) + 1.0) * 3.0).tobytes() and ran == []
    (program,) = [p for p in _program.RUNTIME.programs.values() if p.schedule is not None and p.schedule.blocks]
    n = 300 * 100
    # (the last product, the graph's result, is stored by both tiers and not scanned here)
    step = cost.step_seconds
    whole = step(OP_TABLE["permute_dims"], n) + 2 * step(OP_TABLE["add"], n, 1) + step(OP_TABLE["multiply"], 0, 1)
    assert program.interpret_cost == pytest.approx(whole)
    assert not program.schedule.recost
    forget_programs()


def _tree_sum(a: np.ndarray, limit: int) -> Any:
    bounds: list[tuple[int, int]] = []
    _interpreter._pairwise_blocks(0, a.shape[0], limit, bounds)
    assert bounds[0][0] == 0 and bounds[-1][1] == a.shape[0]
    assert all(e0 == s1 for (_, e0), (s1, _) in zip(bounds, bounds[1:]))
    sums = [np.add.reduce(a[s:e]) for s, e in bounds]
    return _interpreter._pairwise_total(a.shape[0], limit, iter(sums))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_pairwise_blocks_sum_as_numpy_sums_the_whole_array(dtype: Any) -> None:
    """NumPy's add.reduce of a contiguous float array is one pairwise sum (halves rounded down
    to a multiple of 8, runs of 128 or fewer summed in 8 lanes): the blocks' sums added along
    that tree give its bits, whatever the block limit (a node of the tree) and the data
    (values of every magnitude, whose sum rounds at every step; zeros of both signs; NaN,
    infinities). Where this NumPy sums otherwise (2.1: 8192-element chunks one after another),
    numpy_sums_pairwise() says so and no mean is blocked (the next tests but one)."""
    if not _interpreter.numpy_sums_pairwise():
        pytest.skip(f"NumPy {np.__version__} sums in chunks: the blocked mean is off")
    rng = np.random.default_rng(12)
    for n in [300, 1000, 4321, 32_769, 100_003, 262_144 + 11]:
        wild = (rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)).astype(dtype)
        signed = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
        for a in (wild, -np.zeros(n, dtype), signed, _specials(n, dtype, rng, subnormals=True)):
            with np.errstate(invalid="ignore"):
                want = np.add.reduce(a)
                sums = [_tree_sum(a, limit) for limit in (100, 128, 1000, 1 << 15)]
            for limit, got in zip((100, 128, 1000, 1 << 15), sums):
                assert type(got) is type(want) and _same(np.asarray(got), np.asarray(want)), (n, limit)


def test_the_mean_rule_gives_the_kernels_result() -> None:
    """INTERPRETER_BLOCK_SUMS' rule for mean: its finish of the pairwise sum is the kernel's
    result, for float32 and float64; not for keepdims, N-D, empty or other dtypes."""
    prim = OP_TABLE["mean"]
    rule = policies.INTERPRETER_BLOCK_SUMS.get(prim)
    assert rule is not None
    rng = np.random.default_rng(13)
    for dtype in (np.float64, np.float32):
        for n in (1, 7, 1000, 99_991):
            x = (rng.standard_normal(n) * 1e3).astype(dtype)
            finish = rule({"axes": (0,), "keepdims": False}, (n,), np.dtype(dtype))
            assert finish is not None
            want = prim.kernel(_interpreter._NUMPY_TIERED, x, axes=(0,), keepdims=False)
            got = finish(np.add.reduce(x))
            assert type(got) is type(want) and _same(np.asarray(got), np.asarray(want))
    f64 = np.dtype(np.float64)
    assert rule({"axes": (0,), "keepdims": True}, (10,), f64) is None
    assert rule({"axes": (0, 1), "keepdims": False}, (10, 3), f64) is None
    assert rule({"axes": (0,), "keepdims": False}, (0,), f64) is None
    assert rule({"axes": (0,), "keepdims": False}, (10,), np.dtype(np.float16)) is None


MEANS: dict[str, Callable[..., list[Any]]] = {
    "gauss": lambda a, b: [xp.mean(xp.exp(-(a * a)))],
    "arithmetic": lambda a, b: [xp.mean(((a * b) - a) * 0.5)],
    "live middle": lambda a, b: [(s := a * b - 1.0), xp.mean(xp.exp(s * 0.25) - b)],
    "views": lambda a, b: [xp.mean((a[1:-1:2] * b[:-2:2]) + a[2::2] * 3.0)],
}


@pytest.mark.parametrize("name", sorted(MEANS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [4321, 4003, 20_000, 65_537])
def test_a_run_ending_in_a_mean_gives_the_bits_of_the_step_by_step_run_and_of_eager(
    name: str, dtype: Any, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain ending in a mean over a 1-D result runs in blocks along NumPy's pairwise tree:
    the same mean, bit for bit, as the step-by-step run's and eager's (NaN, infinities and
    signed zeros among the values)."""
    rng = np.random.default_rng(n)
    a = _specials(n, dtype, rng, subnormals=False)
    b = _specials(n, dtype, rng, subnormals=False)
    if name == "gauss":  # (a finite mean too: the specials' NaN makes most of them NaN)
        a = np.where(np.isfinite(a), a, 0.5).astype(dtype)
    fn = MEANS[name]
    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran >= 1 or not _interpreter.numpy_sums_pairwise()
    assert _all_same(blocked, plain, _eager(fn, a, b)), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_mean_of_subnormal_and_cancelling_values_is_flushed_as_step_by_step(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subnormal operands and partial sums that cancel to below tiny: the blocked mean sums
    outside the CPU's flush-to-zero mode, as the step-by-step run sums, and flushes its
    result as that run does."""
    rng = np.random.default_rng(14)
    tiny = float(np.finfo(dtype).tiny)
    a = _specials(6001, dtype, rng, subnormals=True)
    b = (rng.choice([1.5, -1.0, 1.25, -1.75], 6001) * tiny).astype(dtype)

    def fn(u: Any, v: Any) -> list[Any]:
        return [xp.mean((v * 1.0) + (v * 0.0)), xp.mean(((u + v) - u) * 2.0), xp.mean((v * 3.0) - (v * 2.0))]

    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran >= 1 or not _interpreter.numpy_sums_pairwise()
    assert _all_same(blocked, plain)


def test_a_numpy_that_sums_in_chunks_gets_no_blocked_mean(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where numpy_sums_pairwise() is False (NumPy 2.1 sums 8192-element chunks one after
    another, so the pairwise tree's block sums would round otherwise), no blocked run ends in
    a mean: Monte-Carlo's mean over 65,537 points keeps eager's bits and no blocks' sums are
    added; where it is True (on a NumPy that sums pairwise), they are, with the same bits."""
    real = _interpreter._pairwise_total
    added: list[int] = []

    def spy(*args: Any) -> Any:
        added.append(1)
        return real(*args)

    pts = np.random.default_rng(18).random((65_537, 2)) * 1.2
    eager = [float(v) for v in montecarlo(xp.asarray(pts, device=EAGER))]
    for pairwise in [False] + ([True] if _interpreter.numpy_sums_pairwise() else []):
        with monkeypatch.context() as m:
            m.setattr(_interpreter, "_pairwise_total", spy)
            m.setattr(_interpreter, "numpy_sums_pairwise", lambda pairwise=pairwise: pairwise)
            added.clear()
            blocked, plain, ran = _both(m, lambda p: [float(v) for v in montecarlo(p)], pts)
        assert blocked == plain == eager
        assert ran >= 1 and bool(added) == pairwise, pairwise


def test_a_mean_over_an_n_d_result_is_not_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mean over several axes (or keepdims, or a float16 result) is not one pairwise sum of
    a 1-D operand: the run is not blocked, and its program's later runs run its steps where
    they are; the same bits."""
    a = np.random.default_rng(15).standard_normal((700, 9))

    def fn(u: Any) -> list[Any]:
        return [xp.mean(xp.exp(-(u * u)) * 2.0), xp.mean(xp.exp(-(u[:, 0] * u[:, 0])) * 2.0, keepdims=True)]

    blocked, plain, ran = _both(monkeypatch, fn, a)
    # (where this NumPy sums in chunks no mean is a member, and each chain before one runs
    # blocked alone)
    assert ran == (0 if _interpreter.numpy_sums_pairwise() else 2)
    assert _all_same(blocked, plain, _eager(fn, a))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_product_of_a_value_by_itself_runs_as_numpys_square(dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`x * x` in a blocked run is NumPy's square of x (one correctly rounded product: the same
    bits, a faster loop over a strided view), subnormals, NaN and infinities among the values;
    `x * y` stays a multiply."""
    calls: list[int] = []

    def square(a: Any, out: Any) -> Any:
        calls.append(a.shape[0])
        return np.square(a, out=out)

    monkeypatch.setattr(_interpreter, "_SQUARE", square)
    rng = np.random.default_rng(16)
    pts = np.stack([_specials(5003, dtype, rng, subnormals=True), _specials(5003, dtype, rng, subnormals=True)], 1)

    def fn(p: Any) -> list[Any]:
        x, y = p[:, 0], p[:, 1]
        return [xp.count_nonzero((x * x) + (y * x) <= 1.0), ((x * x) - (y * 0.5)) * 2.0]

    blocked, plain, ran = _both(monkeypatch, fn, pts)
    assert ran == 2 and calls == [1000, 1000, 1000, 1000, 1003] * 2  # (a square a block and run; the tail of 3 joined)
    assert _all_same(blocked, plain)


def test_exp_of_a_broadcast_operand_is_not_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """exp blocks only on operands of the run's shape (policies.INTERPRETER_BLOCKS_UNCAST): a
    row broadcast into the blocks would be short rows of input near each block's output, a
    loop the whole array may not take; that run keeps the step-by-step path."""
    rng = np.random.default_rng(17)
    a = rng.standard_normal((1203, 7))
    b = rng.standard_normal((5, 7))

    def fn(u: Any, v: Any) -> list[Any]:
        return [((u * 2.0) + xp.exp(v[:1])) * 3.0]

    blocked, plain, ran = _both(monkeypatch, fn, a, b)
    assert ran == 0
    assert _all_same(blocked, plain, _eager(fn, a, b))


def _cubature_case(seed: int) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """scipy.integrate's cubature in small: a (3001, 4) matrix and two (4,) vectors, and a
    boolean selection of the matrix's shape."""
    rng = np.random.default_rng(seed)
    host = (rng.standard_normal((3001, 4)), rng.standard_normal(4), rng.standard_normal(4))
    return host, rng.random((3001, 4)) < 0.5


def _cubature_arrays(host: tuple[np.ndarray, ...], device: Any) -> tuple[Any, Any, Any]:
    m, a, b = (xp.asarray(h, device=device) for h in host)
    return xp.astype(m, xp.float64), a, b  # (a copy: the chain's first step reads a computed value)


def test_a_step_of_broadcast_operands_alone_is_not_a_block_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's member that reads no other member and whose operands all broadcast into the
    run's shape (`b - a` of two vectors beside a chain over a matrix, scipy.integrate's
    cubature; `a * 0.5`) has a result of their smaller shape: the run is then not blocked. A
    blocked run wrote such a member into a buffer of the run's shape: a `(4,)` value became
    `(n, 4)` (found by SciPy's own cubature tests on the lazy device). The graph runs at a
    boolean selection of its chain's result, as there (a read by `numpy.asarray` first would
    run it otherwise)."""
    host, keep = _cubature_case(7)

    def fn(device: Any) -> list[np.ndarray]:
        m, a, b = _cubature_arrays(host, device)
        lengths = b - a
        half = a * 0.5
        out = [(m + 1.0) * (lengths * 0.5) + a, m * half - b, lengths, half]
        selected = out[0][xp.asarray(keep, device=device)]
        return [np.asarray(v) for v in [*out, selected]]

    forget_programs()
    ran = _spy(monkeypatch)
    got = fn(LAZY)
    assert len(ran) == 0  # (not blocked: one member's result is smaller than the run's)
    want = fn(EAGER)
    assert [v.shape for v in got] == [(3001, 4), (3001, 4), (4,), (4,), (int(keep.sum()),)]
    assert all([_same(g, w) for g, w in zip(got, want, strict=True)])
    forget_programs()


def test_a_dead_step_of_broadcast_operands_alone_stays_in_the_blocked_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same member read only inside the run (not held, not an output) is computed into
    each block buffer, broadcast as its reader would broadcast it: the run stays blocked, with
    the bits of eager and of the step-by-step run."""
    host, keep = _cubature_case(8)

    def fn(device: Any) -> list[np.ndarray]:
        m, a, b = _cubature_arrays(host, device)
        out = (m + 1.0) * ((b - a) * 0.5) + a
        selected = out[xp.asarray(keep, device=device)]
        return [np.asarray(out), np.asarray(selected)]

    forget_programs()
    ran = _spy(monkeypatch)
    got = fn(LAZY)
    assert len(ran) == 1
    forget_programs()
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
    plain = fn(LAZY)
    assert len(ran) == 1
    want = fn(EAGER)
    assert all([_same(g, w) and _same(g, p) for g, w, p in zip(got, want, plain, strict=True)])
    forget_programs()


def test_a_live_step_computed_from_a_dead_smaller_one_is_not_a_block_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`half = (b - a) * 0.5`: the difference is dead (read only inside the run) and reads no
    other member, but `half`, which reads it, is held: its result has the vectors' shape too,
    which a full buffer of the run's shape would not hold, so the run is not blocked (it once
    was, and `half` came back `(n, 4)`)."""
    host, keep = _cubature_case(9)

    def fn(device: Any) -> list[np.ndarray]:
        m, a, b = _cubature_arrays(host, device)
        half = (b - a) * 0.5
        out = (m + 1.0) * half + a
        selected = out[xp.asarray(keep, device=device)]
        return [np.asarray(v) for v in (out, half, selected)]

    forget_programs()
    ran = _spy(monkeypatch)
    got = fn(LAZY)
    assert len(ran) == 0
    want = fn(EAGER)
    assert [v.shape for v in got] == [(3001, 4), (4,), (int(keep.sum()),)]
    assert all([_same(g, w) for g, w in zip(got, want, strict=True)])
    forget_programs()


# -- a blocked run's blocks shared among threads (X10ARRAY_INTERPRETER_THREADS) ----------------


def _threaded_cases() -> list[tuple[str, Callable[..., list[Any]], tuple[np.ndarray, ...]]]:
    """Runs with an exp (shared out) over 40,003 elements, 13 shared blocks."""
    rng = np.random.default_rng(21)
    n = 40_003
    a64 = _specials(n, np.float64, rng, subnormals=True)
    b64 = _specials(n, np.float64, rng, subnormals=True)
    a32 = rng.standard_normal(n).astype(np.float32)
    b32 = rng.standard_normal(n).astype(np.float32)
    tiny = float(np.finfo(np.float64).tiny)
    pts = rng.random((n, 2)) * 1.2
    finite = np.where(np.isfinite(a64), a64, 0.5)
    cancelling = rng.choice([1.5, -1.0, 1.25, -1.75], n) * tiny
    return [
        ("monte carlo", montecarlo, (pts,)),
        ("exp chains, float64", CHAINS["exp"], (finite, b64)),
        ("exp chains, float32", CHAINS["exp"], (a32, b32)),
        (
            "subnormals",
            lambda u, v: [(xp.exp(u * 0.01) * (v * 0.5)) + v, xp.count_nonzero(xp.exp(u * 0.01) * (v * 0.25) != 0.0)],
            (finite, b64),
        ),
        ("gauss mean", MEANS["gauss"], (finite, b64)),
        ("live middle mean", MEANS["live middle"], (finite, b64)),
        (
            "cancelling mean",
            lambda u, v: [xp.mean(xp.exp(u * 0.0) * v * 3.0 - (v * 2.0))],
            (finite, cancelling),
        ),
        (
            "2-D",
            lambda u, v: [xp.exp((u * v) * 0.1) * 0.5, xp.count_nonzero(xp.exp(u) > v)],
            (finite[:40_000].reshape(8000, 5), b64[:40_000].reshape(8000, 5)),
        ),
    ]


def _run_lazy(fn: Callable[..., list[Any]], host: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    forget_programs()
    got = [np.asarray(v) for v in fn(*[xp.asarray(h, device=LAZY) for h in host])]
    forget_programs()
    return got


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_blocks_shared_among_threads_give_the_bits_of_one_thread(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks of a blocked run shared among threads, each with block buffers of its own,
    the CPU's flush-to-zero mode set in its own floating-point environment, its counts and a
    mean's per-block sums combined in block order: the same bits as on one thread (and as the
    step-by-step run), for counts, live results, float32, subnormal operands and results,
    means of values whose partial sums cancel to subnormals, and 2-D results. Each run is seen
    to be shared in that many parts, not all on this thread."""
    seen: list[list[int]] = []  # (per shared run: the thread of each share)
    real = _interpreter._run_block_steps_threaded

    def spy(*args: Any) -> Any:
        idents: list[int] = []
        inner = _interpreter._run_block_steps

        def noting(*a: Any) -> Any:
            idents.append(threading.get_ident())
            return inner(*a)

        monkeypatch.setattr(_interpreter, "_run_block_steps", noting)
        try:
            return real(*args)
        finally:
            monkeypatch.setattr(_interpreter, "_run_block_steps", inner)
            seen.append(idents)

    monkeypatch.setattr(_interpreter, "_run_block_steps_threaded", spy)
    monkeypatch.setattr(_interpreter, "_THREAD_BLOCK_ELEMENTS", 3 * BLOCK)
    pairwise = _interpreter.numpy_sums_pairwise()
    for name, fn, host in _threaded_cases():
        ran = _spy(monkeypatch)
        with settings.override(X10ARRAY_INTERPRETER_THREADS=1):
            one = _run_lazy(fn, host)
        assert ran or not pairwise, name  # (blocked; a run ending in a mean only where NumPy sums pairwise)
        assert not seen, name  # (on this thread alone)
        with settings.override(X10ARRAY_INTERPRETER_THREADS=threads):
            many = _run_lazy(fn, host)
        assert seen or not pairwise, name  # (a run of the second pass shared out)
        assert all(len(s) == threads and set(s) != {threading.get_ident()} for s in seen), (name, seen)
        assert _all_same(many, one), name
        seen.clear()
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
    for name, fn, host in _threaded_cases()[:3]:  # (and the step-by-step run's bits)
        with settings.override(X10ARRAY_INTERPRETER_THREADS=threads):
            many = _run_lazy(fn, host)
        monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 12)
        with settings.override(X10ARRAY_INTERPRETER_THREADS=threads):
            blocked = _run_lazy(fn, host)
        monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
        assert _all_same(blocked, many), name


def test_only_runs_with_an_exp_over_enough_elements_are_shared_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread per _THREAD_BLOCK_ELEMENTS elements at most; X10ARRAY_INTERPRETER_THREADS=0 is
    the cores this process may use, at most _AUTO_THREADS; a run of memory-bound steps alone
    (Monte-Carlo's count: squares, an addition, a comparison) stays on the calling thread
    whatever the setting."""
    per = _interpreter._THREAD_BLOCK_ELEMENTS
    with settings.override(X10ARRAY_INTERPRETER_THREADS=4):
        got = [_interpreter.block_workers(n) for n in (0, per - 1, per, 2 * per + 1, 4 * per, 100 * per)]
        assert got == [1, 1, 1, 2, 4, 4]
    with settings.override(X10ARRAY_INTERPRETER_THREADS=0):
        assert _interpreter.block_workers(per * 100) == _interpreter._auto_threads()
    assert 1 <= _interpreter._auto_threads() <= _interpreter._AUTO_THREADS
    monkeypatch.setattr(_interpreter, "_THREAD_BLOCK_ELEMENTS", 3 * BLOCK)
    shared: list[int] = []
    real = _interpreter._run_block_steps_threaded
    monkeypatch.setattr(_interpreter, "_run_block_steps_threaded", lambda *a: (shared.append(1), real(*a))[1])
    ran = _spy(monkeypatch)
    pts = np.random.default_rng(23).random((40_003, 2))
    with settings.override(X10ARRAY_INTERPRETER_THREADS=4):
        count = int(_run_lazy(lambda p: [xp.count_nonzero(p[:, 0] ** 2 + p[:, 1] ** 2 <= 1.0)], (pts,))[0])
        assert len(ran) == 1 and not shared
        mean = float(_run_lazy(lambda p: [xp.mean(xp.exp(-(p[:, 0] ** 2)))], (pts,))[0])
        if _interpreter.numpy_sums_pairwise():  # (else a run ending in a mean is not blocked)
            assert len(ran) == 2 and shared == [1]
        before = len(shared)
        exps = int(_run_lazy(lambda p: [xp.count_nonzero(xp.exp(p[:, 0] * 0.5) * 2.0 > 2.5)], (pts,))[0])
        assert len(shared) == before + 1
    assert exps == np.count_nonzero(np.exp(pts[:, 0] * 0.5) * 2.0 > 2.5)
    assert [count, mean] == [float(v) for v in montecarlo(xp.asarray(pts, device=EAGER))]


def test_a_share_that_fails_raises_once_every_thread_is_done_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A share of the blocks that raises on a pool thread (here: a MemoryError, which the read
    reports as x10array's out-of-memory error) raises at the read once every other share has
    finished (no thread writes into the run's buffers after
    it), and the graph stays pending: read again, it gives the right values."""
    real = _interpreter._run_block_steps
    main = threading.get_ident()
    running: list[int] = []
    finished: list[int] = []

    def failing(bounds: Any, *args: Any) -> Any:
        running.append(1)
        try:
            if threading.get_ident() != main:
                raise MemoryError("a share failed")
            return real(bounds, *args)
        finally:
            finished.append(1)

    pts = np.random.default_rng(22).random((20_000, 2)) * 1.2
    lazy = xp.asarray(pts, device=LAZY)
    forget_programs()
    monkeypatch.setattr(_interpreter, "_THREAD_BLOCK_ELEMENTS", 3 * BLOCK)
    count = xp.count_nonzero(xp.exp(lazy[:, 0] * 0.5) * 2.0 > 2.5)
    monkeypatch.setattr(_interpreter, "_run_block_steps", failing)
    with settings.override(X10ARRAY_INTERPRETER_THREADS=3):
        with pytest.raises(MemoryError, match="out of memory running a lazy graph"):
            int(count)
        assert len(running) == len(finished) == 3
        monkeypatch.setattr(_interpreter, "_run_block_steps", real)
        assert int(count) == np.count_nonzero(np.exp(pts[:, 0] * 0.5) * 2.0 > 2.5)
    forget_programs()


def test_threads_run_under_the_callers_errstate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Overflow, 0 * inf and inf - inf in blocks on pool threads warn no more than on the
    calling thread (the interpreter's errstate, a context variable, goes with each share)."""
    import warnings

    a = np.full(40_003, 800.0)
    a[::7] = np.inf
    monkeypatch.setattr(_interpreter, "_THREAD_BLOCK_ELEMENTS", 3 * BLOCK)
    shared: list[int] = []
    real = _interpreter._run_block_steps_threaded
    monkeypatch.setattr(_interpreter, "_run_block_steps_threaded", lambda *a: (shared.append(1), real(*a))[1])
    with settings.override(X10ARRAY_INTERPRETER_THREADS=3), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run_lazy(lambda u: [xp.exp(u * 2.0) * 0.0 - u, xp.count_nonzero(xp.exp(u) - u > 0.0)], (a,))
    with np.errstate(all="ignore"):
        want = [np.exp(a * 2.0) * 0.0 - a, np.count_nonzero(np.exp(a) - a > 0.0)]
    assert shared and _same(got[0], want[0]) and int(got[1]) == want[1]
