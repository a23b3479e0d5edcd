"""The lazy XLA backend: recording, materialization, barrier, compile cache, metrics."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _util import NUMPY_DLPACK_WRITES

import x10array as xp
from x10array._backends import lazy as _lazy
from x10array._backends.lazy import graph as _graph
from x10array._backends.lazy import interpreter as _interpreter
from x10array._backends.lazy import lowering as _lowering
from x10array._backends.lazy import program as _program
from x10array._backends.lazy import runtime as _runtime
from x10array._backends.lazy import tiering as _tiering
from x10array._backends.lazy import trace as _trace
from x10array._core import kernels as _kernels
from x10array._core import lru as _lru
from x10array._core import settings
from x10array._core import xla_numerics as _xla_numerics

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")


def delta(before: Any) -> Any:
    return xp.metrics() - before


def test_recording_is_lazy_and_shapes_are_known():
    x = xp.asarray([1.0, 2.0, 3.0], device=LAZY)
    before = xp.metrics()
    y = xp.exp(x) * 2.0 + x
    assert isinstance(y._data, _lazy.Node) and y._data.value is None
    assert y.shape == (3,) and y.dtype == xp.float64 and y.device == LAZY
    assert delta(before).ops_recorded == 3
    assert delta(before).execute_count + delta(before).interpreted_graphs == 0
    np.testing.assert_allclose(np.asarray(y), np.exp([1.0, 2.0, 3.0]) * 2 + [1.0, 2.0, 3.0])
    assert y._data.value is not None and y._data.call is None  # materialized, graph dropped


def test_validation_errors_are_raised_at_the_call():
    x = xp.asarray([1, 2, 3], device=LAZY)
    before = xp.metrics()
    with pytest.raises(TypeError, match="exp"):
        xp.exp(x)
    with pytest.raises(TypeError, match="add"):
        x + xp.asarray([1, 2, 3], dtype=xp.uint64, device=LAZY)  # no promotion of int64 with uint64
    assert delta(before).ops_recorded == 0


def step_program(w, g, lr):
    return w - lr * g


@pytest.fixture
def compile_when_repeated(override_settings):
    """Compile a graph at its second sighting, without waiting for the compile to pay."""
    override_settings(X10ARRAY_COMPILE_PAYBACK=0.0)


def test_barrier_per_step_compiles_once_over_50_steps(compile_when_repeated):
    w = xp.ones((64, 64), device=LAZY)
    g = xp.full((64, 64), 0.5, device=LAZY)
    xp.lazy_barrier()
    before = xp.metrics()
    for step in range(50):
        w = step_program(w, g, 0.01 * (step + 1))  # a changing Python scalar
        xp.lazy_barrier()
    d = delta(before)
    assert d.compile_count == 1
    assert d.execute_count + d.interpreted_graphs == 50
    expected = 1.0 - 0.5 * 0.01 * sum(range(1, 51))
    np.testing.assert_allclose(np.asarray(w), np.full((64, 64), expected))


def test_small_graphs_that_repeat_stay_op_by_op():
    x = xp.asarray(np.arange(5.0), device=LAZY)
    before = xp.metrics()
    for step in range(5):
        np.asarray(xp.tan(x) + step)  # two operations on five elements: a compile cannot pay
    d = delta(before)
    assert d.compile_count == 0 and d.interpreted_graphs == 5


def test_a_graph_compiles_once_interpreting_it_has_paid(monkeypatch, override_settings):
    """Ski rental on estimates: interpreted until the estimated saving of its interpreted runs
    (what interpreting costs more than a compiled run, less a compiled run's fixed cost)
    reaches COMPILE_PAYBACK times the estimated compile cost, then compiled, at a run known in
    advance; a cheap graph stays interpreted."""
    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 0.04)
    override_settings(X10ARRAY_COMPILE_PAYBACK=0.5)
    # none from other tests
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    a = xp.asarray(np.random.default_rng(0).standard_normal((300, 300)), device=LAZY)
    cheap = xp.asarray(np.arange(3.0), device=LAZY)

    def program_of(ops: int) -> Any:
        return next((p for p in _program.RUNTIME.programs.values() if len(p.calls) == ops), None)

    tiers = []
    for step in range(200):
        before = xp.metrics()
        float(xp.sum(xp.tanh(a @ a + step) * 2.0))
        tiers.append("compiled" if delta(before).compile_count else "interpreted")
        float(xp.sum(cheap * step + 1.0))  # microseconds: does not pay 20 ms in 200 runs
        if tiers[-1] == "compiled":
            break
    program = program_of(5)
    # what interpreting costs more per run: each operation's dispatch, and a pass over the
    # result of each arithmetic one (matmul, add, tanh, multiply: 300 x 300; sum: one
    # element), with one call of NumPy's inner loop for each elementwise one and the sum (of
    # contiguous operands of one shape); not the matmul's 300**3 multiply-adds, which the
    # compiled program does as well
    cost = _tiering.COST
    assert program.interpret_cost == pytest.approx(
        5 * cost.PER_OP + cost.PER_ELEMENT * (4 * 300 * 300 + 1) + 4 * cost.PER_LOOP
    )
    # less the fixed cost of a compiled run whose value is read at once (float()): one leaf, one output
    per_run = program.interpret_cost - cost.run_seconds(2, True)
    assert cost.run_seconds(2, True) > cost.run_seconds(2, False) >= 0
    assert program.saving(True) == pytest.approx(per_run)
    runs = math.ceil(0.02 / per_run - 1e-9)  # interpreted runs until 0.5 * 40 ms is paid
    assert 10 < runs < 200
    assert tiers == ["interpreted"] * runs + ["compiled"]
    assert program.interpreted == pytest.approx(runs * per_run)
    assert program_of(3).compiled is None and program_of(3).interpreted == 0.0


def test_a_small_graph_read_at_once_stays_interpreted(monkeypatch, override_settings):
    """A compiled run has a fixed cost the interpreter does not (the jitted call, its
    arguments and, for a value read at once, the wait for XLA's runtime to finish it), so a
    graph of a few operations on small arrays whose value is read at once (scikit-learn's
    L-BFGS loss and gradient) never pays for its compile and stays interpreted however often it
    is seen, while the same graph run at a barrier (nobody waits) compiles, and so does a chain
    of elementwise operations over many elements read at once."""
    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 0.01)  # pays after 5 ms
    override_settings(X10ARRAY_COMPILE_PAYBACK=0.5)
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    rng = np.random.default_rng(0)
    v = xp.asarray(rng.standard_normal(2000), device=LAZY)
    big = xp.asarray(rng.standard_normal(200_000), device=LAZY)

    def small(x: Any, step: int) -> Any:  # 14 operations on 2000 elements
        y = x * (1.0 + 1e-3 * step)
        for _ in range(4):
            y = xp.exp(-y) + 0.5
        return xp.sum(y)

    before = xp.metrics()
    for step in range(300):
        s = small(v, step)
        float(s) if step % 2 else np.asarray(s)  # (a read: materialize; NumPy's: host_buffer's barrier)
    d = delta(before)
    assert d.compile_count == 0 and d.interpreted_graphs == 300
    (program,) = [p for p in _program.RUNTIME.programs.values() if len(p.calls) == 14]
    assert program.interpret_cost > 0 and program.saving(True) == 0.0 and program.interpreted == 0.0

    before = xp.metrics()
    for step in range(300):
        s = small(v, step)
        xp.lazy_barrier()  # (asynchronous: nobody waits for the value)
        if delta(before).compile_count:
            break
    assert delta(before).compile_count == 1 and step < 100
    float(s)

    before = xp.metrics()
    for step in range(300):
        float(small(big, step))  # the same 14 operations on 200,000 elements
        if delta(before).compile_count:
            break
    assert delta(before).compile_count == 1 and step < 10


def test_the_compile_estimate_grows_with_the_graph_and_its_fused_chains(monkeypatch, override_settings):
    """The compile estimate (calibrated by benchmarks/bench_tiers.py, see _CostModel): grows
    with the number of operations; an unbroken chain of elementwise operations, one fusion
    for XLA, costs more than the same operations cut into short chains by matmuls; and its
    constants are of the measured order of magnitude (a fixed ~0.1 s, under a millisecond per
    operation)."""
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    override_settings(X10ARRAY_REPEAT_CUT=False)  # (each chain one graph of n operations, not cut where it repeats)
    cost = _tiering.COST
    assert 0.01 < cost.COMPILE_FIXED < 1.0 and 1e-4 < cost.COMPILE_PER_OP < 1e-2 and cost.COMPILE_PER_FUSED > 0
    a = xp.asarray(np.ones((4, 4)), device=LAZY)

    def estimate(n: int, cut_every: int | None) -> float:
        _program.RUNTIME.programs.clear()
        x = a
        for i in range(1, n + 1):
            x = x @ a if cut_every and i % cut_every == 0 else x + 1.0
        with _tiering.compile_threshold(None):
            np.asarray(x)
        return next(p.compile_cost for p in _program.RUNTIME.programs.values() if len(p.calls) == n)

    chains = [estimate(n, None) for n in (10, 100, 1000)]
    assert chains[0] < chains[1] < chains[2]
    assert chains[2] - cost.COMPILE_FIXED > 10 * (chains[1] - cost.COMPILE_FIXED)  # the fusion: superlinear
    cut = [estimate(n, 8) for n in (100, 1000)]
    assert cut[0] < cut[1] < chains[2]
    assert cut[1] == pytest.approx(cost.COMPILE_FIXED + 1000 * cost.COMPILE_PER_OP, rel=0.1)  # about linear


def test_the_compile_estimate_charges_writes_apart(monkeypatch, override_settings):
    """A write (an `in_place` operation) is charged COMPILE_PER_WRITE on top of an operation's
    cost: XLA's compile of a run of writes into one array is ~10-30 ms a write, so a graph of
    hundreds of them (scikit-learn's GaussianMixture EM step) is not compiled on a short
    estimate. The same number of operations without writes is estimated far lower."""
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    override_settings(X10ARRAY_REPEAT_CUT=False)  # (one graph of every write)
    cost = _tiering.COST
    assert cost.COMPILE_PER_WRITE > 10 * cost.COMPILE_PER_OP

    def estimate(write: bool, n: int) -> tuple[float, int]:
        _program.RUNTIME.programs.clear()
        c = xp.asarray(np.zeros((8, 8)), device=LAZY)
        for i in range(n):
            if write:
                c[i % 8, i % 8] += 1.0
            else:
                c = c + 1.0
        with _tiering.compile_threshold(None):
            np.asarray(c)
        (p,) = [p for p in _program.RUNTIME.programs.values() if len(p.calls) >= n]
        return p.compile_cost, sum(1 for prim, _ in p.calls if prim.in_place)

    written, writes = estimate(True, 100)
    plain, none = estimate(False, 100)
    assert writes == 100 and none == 0
    assert written > plain + 90 * cost.COMPILE_PER_WRITE


@pytest.mark.slow  # a clock against the estimate: run on an idle machine (`-m slow`), not in the default run
def test_the_compile_estimate_stays_within_a_factor_of_measured_compiles(monkeypatch, override_settings):
    """The compile estimate against the compile it estimates, on graphs never seen (a heat
    stencil without a barrier, 5 and 40 steps; an unbroken chain of 3 and of 200 additions;
    100 one-element writes; k-means' distances and labels, 8 operations): estimate over
    measured between 0.05 and 5. Load only slows the measured compile (bench_tiers.py measures
    0.4-1.6 idle; 0.19-0.29 on the 2-core machine shared by four sessions, 2026-12-03), so the
    lower bound is loose; the upper one catches an estimate as far above as issue 26's former
    5 ms per operation (12x). Not a speed test: a ratio of two costs of the same compile."""
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    override_settings(X10ARRAY_REPEAT_CUT=False)  # (each loop one graph, not cut where it repeats)
    rng = np.random.default_rng(0)

    def stencil(u: Any, steps: int) -> Any:
        for _ in range(steps):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
            u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap
        return u

    def chain(u: Any, n: int) -> Any:
        for i in range(n):
            u = u + float(i)
        return u

    def writes(u: Any, n: int) -> Any:
        for i in range(n):
            u[i % 29, i % 31] += 1.0
        return u

    def kmeans(u: Any, k: int) -> Any:  # bench_dayone's distances and labels: a small graph
        d = xp.sum((u[:, None, :] - u[:k][None, :, :]) ** 2, axis=2)
        return xp.argmin(d, axis=1) == 0

    ratios = {}
    for name, fn, n in (
        ("warm-up", stencil, 1),
        ("stencil", stencil, 5),
        ("stencil", stencil, 40),
        ("chain", chain, 3),
        ("chain", chain, 200),
        ("writes", writes, 100),
        ("kmeans", kmeans, 5),
    ):
        _program.RUNTIME.programs.clear()
        u = xp.asarray(rng.random((29, 31)), device=LAZY)  # (a shape of its own: no cached program)
        before = xp.metrics()
        with _tiering.compile_threshold(1):
            np.asarray(fn(u, n))
        measured = delta(before).compile_seconds
        (program,) = [p for p in _program.RUNTIME.programs.values() if p.compiled is not None]
        ratios[f"{name} {len(program.calls)} ops"] = program.compile_cost / measured
    del ratios["warm-up 14 ops"]  # (the process's first compile also probes the CPU's subnormals)
    assert all(0.05 < r < 5 for r in ratios.values()), ratios


def test_an_elementwise_result_both_tiers_store_is_not_credited(monkeypatch):
    """A graph's elementwise result is stored by both tiers, so a compile saves nothing on
    it: `(x + 1.0) * 2.0` is credited its addition's pass, not its product's. So `x += 1.0;
    float(x[0])` over a large x, whose compiled program only adds a jitted call and a wait,
    stays interpreted however often it runs (it compiled at its 17th sighting, into a program
    ~1.4x slower, when the result was credited), with eager's bits."""
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)  # (passes run whole: not blocked)
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    n = 1_000_000
    host = np.random.default_rng(12).standard_normal(n)
    x = xp.asarray(host, device=LAZY)
    np.asarray((x + 1.0) * 2.0)
    (program,) = _program.RUNTIME.programs.values()
    step, add, mul = _tiering.COST.step_seconds, _compile_prim("add"), _compile_prim("multiply")
    assert program.interpret_cost == pytest.approx(step(add, n, 1) + step(mul, 0, 1))
    before = xp.metrics()
    eager = xp.asarray(host, device=EAGER)
    for _ in range(100):
        x += 1.0
        eager += 1.0
        assert float(x[0]) == float(eager[0])
    d = delta(before)
    assert d.compile_count == d.disk_cache_loads == d.cache_hits == 0 and d.interpreted_graphs == 100
    assert np.asarray(x).tobytes() == np.asarray(eager).tobytes()


def test_work_both_tiers_do_alike_does_not_pay_for_a_compile(monkeypatch):
    """A compile is credited with what it saves (dispatch, passes over arithmetic results),
    not with the multiply-adds of a matmul (the same GEMM in both tiers) nor with one-element
    writes into a large buffer (in place in both tiers): a graph of those stays interpreted
    at sightings where a graph of as many elementwise passes over as many elements compiles.
    (Passes run whole: a chain the interpreter runs in blocks is credited per block instead,
    tests/test_interpreter_blocks.py.)"""
    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 0.02)  # pays after 10 ms
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    rng = np.random.default_rng(0)
    deep = xp.asarray(rng.standard_normal((64, 4096)), device=LAZY)
    deep_t = xp.asarray(rng.standard_normal((4096, 64)), device=LAZY)
    shallow = xp.asarray(rng.standard_normal((64, 2)), device=LAZY)
    shallow_t = xp.asarray(rng.standard_normal((2, 64)), device=LAZY)
    np.asarray(deep @ deep_t + 1.0)  # (two operations: one is run without a program)
    np.asarray(shallow @ shallow_t + 1.0)
    costs = sorted(p.interpret_cost for p in _program.RUNTIME.programs.values())
    # the same result size, 2048 times the multiply-adds: the same estimate
    step = _tiering.COST.step_seconds
    assert len(costs) == 2 and costs[0] == costs[1]
    # (the sum is the graph's result, which both tiers store: not credited)
    add = _compile_prim("add")
    assert costs[0] == pytest.approx(step(_compile_prim("matmul"), 64 * 64) + step(add, 0, 1))

    def writes(a: Any) -> Any:
        a = a * 1.0
        for i in range(40):
            a[i, i] = float(i)  # one-element writes into a 64 x 4096 buffer
        return a

    def passes(a: Any) -> Any:
        for i in range(41):
            a = a + float(i)  # as many operations, each a pass over 64 x 4096 elements
        return a

    tiers: dict[str, list[int]] = {"writes": [], "passes": []}
    for _ in range(4):
        for name, fn in (("writes", writes), ("passes", passes)):
            before = xp.metrics()
            np.asarray(fn(deep))
            tiers[name].append(delta(before).compile_count)
    assert tiers["passes"] == [0, 1, 0, 0]  # 22 ms a run: compiled at its second sighting
    assert tiers["writes"] == [0, 0, 0, 0]  # one pass, then 40 writes: under 1 ms a run
    program = next(p for p in _program.RUNTIME.programs.values() if len(p.calls) == 41 and p.calls[1][0].in_place)
    cost = _tiering.COST  # (one multiply, its one inner loop; the writes move data)
    assert program.interpret_cost == pytest.approx(41 * cost.PER_OP + cost.PER_ELEMENT * 64 * 4096 + cost.PER_LOOP)


def _compile_prim(name: str) -> Any:
    from x10array._core.primitive import OP_TABLE

    return OP_TABLE[name]


def test_numpy_inner_loops_are_counted_from_shapes():
    """_tiering.inner_loops: how often NumPy calls its inner loop for an interpreted step,
    the longest run of trailing axes every operand takes alike walked as one loop."""
    rng = np.random.default_rng(0)

    def loops(a: Any) -> int:
        return _tiering.inner_loops(a._data.call)

    def lazy(*shape: int) -> Any:
        return xp.asarray(rng.standard_normal(shape), device=LAZY)

    X, C, v = lazy(5000, 4), lazy(5, 4), lazy(4)
    assert loops(X * X) == 1 and loops(X + 1.0) == 1  # one shape, or a scalar: one loop
    Xi, Ci = xp.astype(X, xp.int64), xp.astype(C, xp.int64)
    assert loops(Xi[:, None, :] - Ci[None, :, :]) == 5000 * 5  # broadcast along the middle axis
    assert loops(Xi * xp.astype(v, xp.int64)) == 5000  # a row broadcast down the rows: a loop per row
    assert loops(lazy(100, 4) * v) == 100
    # (float arithmetic of enough elements whose loop would be short takes kernels._broadcast_route)
    for a, b in [(X[:, None, :], C[None, :, :]), (X, v)]:
        plan = _kernels.broadcast_route(a.shape, b.shape)
        numpy_own = _kernels.numpy_loops([a.shape, b.shape])
        assert plan is not None and loops(a - b) == _kernels.route_loops(plan) < numpy_own // 3
    col, row = lazy(300, 1), lazy(1, 200)
    assert loops(col * row) == 300  # an outer product: a loop of 200 per row
    assert loops(xp.prod(X, axis=-1)) == 5000 and loops(xp.sum(X, axis=0)) == 5000  # 4 per loop either way
    # (a float sum or mean over a short last axis adds its columns as whole arrays: kernels.short_axis_sum)
    assert loops(xp.sum(X, axis=-1)) == 4 and loops(xp.mean(X, axis=-1)) == 4
    assert loops(xp.sum(xp.astype(X, xp.int64), axis=-1)) == 5000
    assert loops(xp.sum(X)) == 1 and loops(xp.sum(lazy(3, 4, 5), axis=(1, 2))) == 3
    assert loops(xp.argmin(lazy(700, 5), axis=1)) == 700 and loops(xp.argmin(X)) == 1
    assert loops(X[:, 0]) == 0 and loops(X @ C.T) == 0  # data movement, BLAS: no NumPy ufunc loop


def test_short_trailing_axes_are_credited_their_numpy_loops(monkeypatch):
    """What a compile saves counts NumPy's inner-loop calls (_CostModel.PER_LOOP): k-means'
    distances over (5000, 5, 4), `argmin(sum((X[:, None] - C) ** 2, axis=2), axis=1)`, is
    credited its differences' loops by the broadcast route (kernels.route_loops), the square's
    one, the sum's 4 (it adds 4 columns: kernels.short_axis_sum) and argmin's 5,000 (one of 5
    a row); the same passes over long rows only their 5,002."""
    rng = np.random.default_rng(1)
    X = xp.asarray(rng.standard_normal((5000, 4)), device=LAZY)
    C = xp.asarray(rng.standard_normal((5, 4)), device=LAZY)
    flat = xp.asarray(rng.standard_normal((5000, 5 * 4)), device=LAZY)

    def credits(per_loop: float) -> list[float]:
        monkeypatch.setattr(_tiering.COST, "PER_LOOP", per_loop)
        monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
        with _tiering.compile_threshold(None):
            np.asarray(xp.argmin(xp.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=2), axis=1))
            np.asarray(xp.argmin(xp.sum(flat**2, axis=1), axis=0))  # as many elements in long rows
        return [p.interpret_cost for p in _program.RUNTIME.programs.values()]

    per_loop = _tiering.COST.PER_LOOP
    assert 1e-9 < per_loop < 1e-7
    with_loops, without = credits(per_loop), credits(0.0)
    # over long rows, the sum a loop of 20 a row, the square and argmin one each
    differences = _kernels.route_loops(_kernels.broadcast_route((5000, 1, 4), (1, 5, 4)))
    assert differences < 25_000 // 3  # (NumPy's own: a loop of 4 elements each)
    expected = [(differences + 1 + 4 + 5_000) * per_loop, 5_002 * per_loop]
    assert [a - b for a, b in zip(with_loops, without)] == pytest.approx(expected)


def test_library_calls_do_not_pay_for_a_compile(monkeypatch):
    """An SVD runs the same LAPACK routine compiled or not: it is not rent."""
    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 0.002)
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    a = xp.asarray(np.random.default_rng(0).standard_normal((300, 200)), device=LAZY)
    for _ in range(4):
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        xp.lazy_barrier()
    (program,) = _program.RUNTIME.programs.values()
    assert program.compiled is None and program.seen == 4
    assert program.interpreted == 0.0


def test_the_tier_decision_does_not_read_the_clock(monkeypatch):
    """The same program compiles at the same run whatever the clocks say: run a loop twice, the
    second time with every clock jumping by random amounts, and compare the compiles. (Only
    the feedback reads the clock, to go back to interpreting: see the next test.)"""
    import time

    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 0.02)  # pays within 40 runs

    def tiers() -> list[int]:
        monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
        w = xp.asarray(np.random.default_rng(1).standard_normal((256, 256)), device=LAZY)
        out = []
        for _ in range(40):
            before = xp.metrics()
            w = w - 0.01 * xp.tanh(w @ w)
            xp.lazy_barrier()
            out.append(delta(before).compile_count)
        return out

    first = tiers()
    assert first.count(1) == 1 and first[0] == 0  # compiled once, after interpreting
    rng = np.random.default_rng(2)
    for name in ("perf_counter", "monotonic", "time", "process_time"):
        monkeypatch.setattr(time, name, lambda: float(rng.uniform(0, 1e6)))
    assert tiers() == first


@pytest.mark.parametrize("compiled_seconds", [10.0, 0.0])
def test_a_compiled_program_slower_than_interpreting_goes_back_to_interpreting(
    monkeypatch, override_settings, capsys, compiled_seconds
):
    """The feedback (Program.ran_compiled), with the compiled runs' times injected: after
    FEEDBACK_RUNS compiled runs slower than the fastest interpreted run, the program is
    interpreted again for good, the log says why, and the values keep their bits; compiled
    runs faster than interpreting stay compiled."""
    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 1e-4)  # pays at once
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    ran_compiled = _program.Program.ran_compiled
    monkeypatch.setattr(_program.Program, "ran_compiled", lambda self, seconds: ran_compiled(self, compiled_seconds))
    override_settings(X10ARRAY_LOG_COMPILES=True, X10ARRAY_TIER_FEEDBACK=True)
    # (512 x 512: a saving per run above the fixed cost of a compiled run read at once, _CostModel.run_seconds)
    w = xp.asarray(np.random.default_rng(3).standard_normal((512, 512)), device=LAZY)
    tiers, values = [], []
    for _ in range(10):
        before = xp.metrics()
        values.append(np.asarray(xp.sqrt(xp.abs(w)) * 0.5 + w * w))
        d = delta(before)
        tiers.append("i" if d.interpreted_graphs else "c")
    n = _tiering.FEEDBACK_RUNS
    log = capsys.readouterr().out
    if compiled_seconds:
        assert tiers == ["i"] + ["c"] * (1 + n) + ["i"] * (8 - n)  # (compiled at its second sighting)
        assert "interpreting again a graph of 5 operations: its compiled runs took 1e+04 ms at best" in log
    else:
        assert tiers == ["i"] + ["c"] * 9
        assert "interpreting again" not in log
    for v in values:  # (the tiers round within the contract: XLA may fuse a multiply-add)
        np.testing.assert_array_max_ulp(v, values[0], maxulp=2)


def test_the_feedback_times_a_compiled_run_with_the_leaves_it_places(monkeypatch, override_settings):
    """Program.ran_compiled compares a compiled run with the interpreted runs, which read their
    leaves where they are: so the compiled run's time includes placing its NumPy leaves on the
    device (a view such as `pts[:, 0]`, a new leaf at each read, is placed at every run). A
    fake clock that only moves while a leaf is placed: the feedback sees that time."""
    import time

    from x10array._backends.lazy import executor as _executor

    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 1e-4)  # pays at once
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    override_settings(X10ARRAY_TIER_FEEDBACK=True)
    clock = [0.0]
    jax_put = _executor.jax_put  # (how a compiled run places a NumPy leaf)

    def placing(*args: Any, **kwargs: Any) -> Any:
        clock[0] += 100.0
        return jax_put(*args, **kwargs)

    seen: list[float] = []
    ran_compiled = _program.Program.ran_compiled
    monkeypatch.setattr(_program.Program, "ran_compiled", lambda self, s: (seen.append(s), ran_compiled(self, s)))
    rng = np.random.default_rng(4)
    for i in range(6):
        leaf = xp.asarray(rng.standard_normal((256, 256)), device=LAZY)  # a NumPy leaf, new at each run
        if i == 2:  # (the program compiled: from now on, only placing moves the clock)
            monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
            monkeypatch.setattr(_executor, "jax_put", placing)
        np.asarray(xp.sqrt(xp.abs(leaf)) * 0.5 + leaf * leaf)
    assert seen and all(s >= 100.0 for s in seen)


def test_the_feedback_is_off_where_every_graph_compiles(monkeypatch, override_settings):
    """With X10ARRAY_COMPILE_THRESHOLD=1 (every graph compiled at once), with
    X10ARRAY_TIER_FEEDBACK=0 and in a multi-process run, the feedback never sends a program
    back to interpreting."""
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    w = xp.asarray(np.arange(6.0), device=LAZY)
    np.asarray(xp.sin(w) + 3.0)  # interpreted once
    (program,) = _program.RUNTIME.programs.values()
    assert program.interpret_best < math.inf
    program.compiled = object()  # (as if compiled)
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_TIER_FEEDBACK=True)
    for _ in range(_tiering.FEEDBACK_RUNS):
        program.ran_compiled(10.0)
    assert not program.demoted and not program.interprets()
    override_settings(X10ARRAY_COMPILE_THRESHOLD=2, X10ARRAY_TIER_FEEDBACK=False)
    program.compiled_runs = 0
    for _ in range(_tiering.FEEDBACK_RUNS):
        program.ran_compiled(10.0)
    assert not program.demoted
    override_settings(X10ARRAY_TIER_FEEDBACK=True)
    program.compiled_runs = 0
    monkeypatch.setattr(_program, "several_processes", lambda: True)
    for _ in range(_tiering.FEEDBACK_RUNS):
        program.ran_compiled(10.0)
    assert not program.demoted


def test_compile_threshold_one_compiles_at_once(override_settings):
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    x = xp.asarray(np.arange(7.0), device=LAZY)
    before = xp.metrics()
    y = xp.sin(x) + 7.25  # a structure no other test records
    np.asarray(y)
    d = delta(before)
    assert d.compile_count == 1 and d.interpreted_graphs == 0


def test_cold_graph_is_interpreted_not_compiled():
    x = xp.asarray(np.arange(5.0), device=LAZY)
    before = xp.metrics()
    y = xp.cos(x) * 3.5 - 1.0
    np.testing.assert_allclose(np.asarray(y), np.cos(np.arange(5.0)) * 3.5 - 1.0)
    d = delta(before)
    assert d.interpreted_graphs == 1 and d.compile_count == 0


def test_barrier_computes_shared_work_once_in_one_program():
    x = xp.asarray(np.arange(6.0), device=LAZY)
    shared = xp.exp(x)
    a = shared + 1.0
    b = shared * 2.0
    before = xp.metrics()
    xp.lazy_barrier(wait=True)
    d = delta(before)
    assert d.execute_count + d.interpreted_graphs == 1
    assert a._data.value is not None and b._data.value is not None
    np.testing.assert_allclose(np.asarray(a), np.exp(np.arange(6.0)) + 1)


def test_mutation_rebinds_and_keeps_old_values():
    x = xp.asarray([1.0, 2.0, 3.0], device=LAZY)
    y = x + 0.0
    alias = x
    x[0] = 10.0
    x += 1.0
    assert alias is x
    np.testing.assert_array_equal(np.asarray(x), [11.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0, 3.0])


def test_barrier_computes_an_array_rebound_by_mutation():
    """`w -= g` rebinds a materialized array to a pending value: the barrier must run it."""
    w = xp.asarray([1.0, 2.0, 3.0], device=LAZY)
    w -= 2.0
    w[0] = 5.0
    xp.lazy_barrier(wait=True)
    assert w._data.value is not None
    np.testing.assert_array_equal(np.asarray(w), [5.0, 0.0, 1.0])


def test_a_value_rebound_by_mutation_is_computed_once():
    """A pending value that an in-place operator rebound is still held by the array: a graph
    that uses it keeps it, so a second read does not compute it again."""
    x = xp.asarray(np.arange(6.0), device=LAZY)
    g = xp.exp(x)
    g /= 2.0
    float(xp.sum(g))
    assert g._data.value is not None  # computed with the sum, kept
    np.testing.assert_allclose(np.asarray(g), np.exp(np.arange(6.0)) / 2.0)


def test_held_outputs_of_a_multiple_results_call_are_kept():
    """`u, s, vh = svd(x)`, then reading s runs the SVD once for all three (not again for u)."""
    a = np.random.default_rng(0).standard_normal((6, 4))
    x = xp.asarray(a, device=LAZY)
    u, s, vh = xp.linalg.svd(x - 1.0, full_matrices=False)
    float(s[0])
    assert u._data.value is not None and vh._data.value is not None
    before = xp.metrics()
    rebuilt = np.asarray(u) * np.asarray(s) @ np.asarray(vh)
    assert delta(before).ops_recorded == 0
    np.testing.assert_allclose(rebuilt, a - 1.0, atol=1e-12)


def test_a_value_that_other_pending_work_reads_is_computed_once():
    """`a` feeds the graph being run and a pending `b` outside it: `a` is kept, so computing
    `b` later does not compute `a` again (GaussianMixture's view writes made this 30x)."""
    x = xp.asarray(np.arange(4.0), device=LAZY)
    a = xp.exp(x)
    b = a + 1.0  # pending, reads a
    t = a * 2.0
    del a
    float(xp.sum(t))
    (a_node,) = [i for i in b._data.call.inputs if isinstance(i, _lazy.Node)]
    assert a_node.value is not None  # computed with t, kept for b
    np.testing.assert_allclose(np.asarray(b), np.exp(np.arange(4.0)) + 1.0)


def test_outside_references_counts_what_the_caller_does_not():
    """The reference-count rule (trace.outside_references) discounts its own references, so
    a caller counts only its own: here the list and the variable, then one more holder.
    (Counted outside the asserts: pytest's rewritten asserts keep their operands.)"""
    counts = []
    for _ in range(20):  # (the interpreter specializes a call after a few runs: both kinds)
        node = _lazy.Node(None, 0, (), np.dtype("float64"), 0.0, 0)
        holders = [node]
        alone = _trace.outside_references(node, 2), _trace.outside_references(holders[0], 2)
        extra = node
        held = _trace.outside_references(node, 2)
        del extra
        counts.append((alone, held))
    assert counts == [((0, 0), 1)] * 20


def test_graph_size_is_not_recounted_at_every_operation(monkeypatch, override_settings):
    """Reuse makes the summed size bound double at each step; an exact count walks the graph,
    so it runs at most once per GRAPH_LIMIT / 10 operations."""
    override_settings(X10ARRAY_GRAPH_LIMIT=1000)
    counts = []
    real = _graph.graph_size
    monkeypatch.setattr(_graph, "graph_size", lambda call, cap: counts.append(1) or real(call, cap))
    x = xp.zeros((4, 4), device=LAZY)
    before = xp.metrics()
    for i in range(300):  # each write through a view reads the base and writes it back
        row = x[i % 4, :]
        row[i % 3] = float(i)
    recorded = delta(before).ops_recorded
    assert recorded > 600
    assert 1 <= len(counts) <= recorded // 100 + 1  # not one per operation
    expected = np.zeros((4, 4))
    for i in range(300):
        expected[i % 4, i % 3] = float(i)
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_graph_size_guard_still_fires_after_reset_metrics(override_settings):
    override_settings(X10ARRAY_GRAPH_LIMIT=200)
    x = xp.ones(3, device=LAZY)
    t = x
    for _ in range(1000):
        t = t * 1.0
        if _ % 150 == 0:
            xp.lazy_barrier()
    xp.lazy_barrier()
    xp.reset_metrics()  # the counters restart from 0
    t = x
    with pytest.warns(RuntimeWarning, match="lazy_barrier"):
        for _ in range(400):
            t = t + t * 0.5  # the summed size bound doubles at every step


def test_a_long_graph_of_writes_holds_one_buffer():
    """Interpreting, an intermediate is dropped after its last use and a write into it at its
    last use is done in place: 300 row updates of a 300 x 1000 array stay near its size."""
    X = xp.asarray(np.zeros((300, 1000)), device=LAZY)
    peak = []
    real = _interpreter._numpy_step

    def step(prim, args, *rest, **kw):
        out = real(prim, args, *rest, **kw)
        if prim.name == "setitem":
            peak.append(kw.get("first_is_private", False))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_interpreter, "_numpy_step", step)
        for i in range(300):
            X[i, :] += 1.0
        np.testing.assert_array_equal(np.asarray(X), np.ones((300, 1000)))
    # all but the first in place; the first, into the leaf, takes the leaf's own buffer where nothing
    # else holds it (interpreter._Undo, not through _numpy_step): then all 300
    assert (len(peak), sum(peak)) in ((300, 299), (300, 300), (299, 299))


def test_writes_through_a_view_are_made_in_place(override_settings):
    """scikit-learn's `_add_to_diagonal` on a view of a stack of matrices: `v = c[k]` then
    `v[i, i] = a` in a loop, each write replayed on `c`. Interpreting, each write goes into
    the view's buffer in place (only the first copies it out of `c`), and `c` is written in
    place too: the view's history comes before the base's in the graph's order."""
    override_settings(X10ARRAY_REPEAT_CUT=False)  # (one graph: a cut, as a barrier, would make the next write copy)
    c = xp.asarray(np.zeros((3, 8, 8)), device=LAZY) + 0.0
    private: dict[tuple[int, ...], list[bool]] = {}
    real = _interpreter._numpy_step

    def step(prim, args, *rest, **kw):
        if prim.name == "setitem":
            private.setdefault(np.shape(args[0]), []).append(kw.get("first_is_private", False))
        return real(prim, args, *rest, **kw)

    with pytest.MonkeyPatch.context() as mp, _lazy.compile_threshold(None):
        mp.setattr(_interpreter, "_numpy_step", step)
        for k in range(3):
            v = c[k, :, :]
            for i in range(8):
                v[i, i] = float(k * 10 + i)
        del v
        out = np.asarray(c)
    expected = np.zeros((3, 8, 8))
    for k in range(3):
        expected[k][np.diag_indices(8)] = k * 10 + np.arange(8)
    np.testing.assert_array_equal(out, expected)
    assert len(private[(8, 8)]) == 24 and private[(8, 8)].count(False) == 3  # one copy per view
    assert len(private[(3, 8, 8)]) == 24 and all(private[(3, 8, 8)])


@pytest.mark.parametrize("order", ["write-first", "read-first"])
def test_a_write_in_place_never_shows_through_a_numpy_view(order):
    """The interpreter writes into an intermediate buffer only when no later step reads it,
    directly or through a NumPy view (reshape's result views its input's memory)."""
    base = xp.asarray(np.arange(6.0), device=LAZY)
    X = base + 0.0
    # reshape's primitive, bound directly: a new value (not an x10array view, as the public
    # reshape's result is), a NumPy view inside the interpreter
    from x10array._api.manipulation import _RESHAPE
    from x10array._core.primitive import bind

    g = bind(_RESHAPE, LAZY, X, shape=(2, 3), copy=False)
    X[0] = 100.0
    z = g * 2.0
    targets = [X, z] if order == "write-first" else [z, X]
    for t in targets:
        np.asarray(t)
    np.testing.assert_array_equal(np.asarray(z), np.arange(6.0).reshape(2, 3) * 2.0)
    np.testing.assert_array_equal(np.asarray(X), [100.0, 1.0, 2.0, 3.0, 4.0, 5.0])


def test_arithmetic_writes_into_a_dying_intermediate_with_the_same_values():
    """Interpreting, an add, subtract or multiply of real floats whose operand is an
    intermediate at its last use writes its result into that operand's buffer (`out=`, no new
    allocation of a large result): k-means' `(X - c) ** 2`, recorded as `d * d`. Not into a leaf, an output,
    a value a later step reads, a broadcast operand, or one of another dtype; the values are the
    eager device's, bit for bit."""
    rng = np.random.default_rng(3)
    Xn, cn = rng.standard_normal((2000, 1, 4)), rng.standard_normal((1, 5, 4))  # (320 KB results)
    into: list[tuple[str, bool]] = []
    real = _interpreter._numpy_step

    def step(prim, args, *rest, **kw):
        out = real(prim, args, *rest, **kw)
        if prim.name in ("subtract", "multiply", "add") and "into" in kw:  # (a step, not a probe)
            given = kw["into"]
            into.append((prim.name, given is not None and out is given and any(given is a for a in args)))
        return out

    def run(dev, n):
        X, c = xp.asarray(Xn, device=dev), xp.asarray(cn, device=dev)
        d = X - c
        s = d * d  # (d dies here: written in place)
        del d
        t = s + 1.0  # (s dies here: in place, unless it is an output)
        u = t * 2.0  # (t is read again below: a new buffer)
        w = u - t
        del t, u
        f = xp.astype(c, xp.float32)[0] * xp.astype(c, xp.float32)[0]  # (a view's product: a new buffer)
        out = [xp.sum(w, axis=2), s if n else w, f]
        del s, w
        xp.lazy_barrier()  # (one graph)
        return [np.asarray(o) for o in out]

    with pytest.MonkeyPatch.context() as mp, _lazy.compile_threshold(None):
        mp.setattr(_interpreter, "_numpy_step", step)
        got = run(LAZY, 0)
        seen, into[:] = list(into), []
        kept = run(LAZY, 1)  # s an output too: never written into
    assert sorted(seen) == sorted([("subtract", False), ("multiply", True), ("add", True), ("multiply", False),
                                   ("subtract", True), ("multiply", False)])  # fmt: skip
    assert sorted(into) == sorted([("subtract", False), ("multiply", True), ("add", False), ("multiply", False),
                                   ("subtract", True), ("multiply", False)])  # fmt: skip
    for a, b in zip(got + kept, run(EAGER, 0) + run(EAGER, 1)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_lazy_buffers_are_exported_read_only_or_as_the_value():
    """A lazy value is immutable: a NumPy view of it without a copy (`__array__(copy=False)`,
    DLPack with copy=False) cannot write into it (pending graphs may still read it). A DLPack
    export with copy=None is numpy.asarray's buffer (docs/interop.md, "Writes through DLPack"):
    pending work is computed first and keeps its values, a write reaches the array."""
    x = xp.asarray([1.0, 2.0, 3.0], device=LAZY)
    y = x + 1.0
    for exported in (np.asarray(x, copy=False), np.from_dlpack(x, copy=False), np.from_dlpack(y, copy=False)):
        with pytest.raises(ValueError, match="read-only"):
            exported[0] = 99.0
    np.testing.assert_array_equal(np.asarray(x + 0.0), [1.0, 2.0, 3.0])
    z = x * 2.0  # pending when x's buffer is handed out
    shared = np.from_dlpack(x)
    if not NUMPY_DLPACK_WRITES:  # (NumPy 2.1 imports read-only, its own arrays too)
        assert not shared.flags.writeable
        shared = np.asarray(x)  # numpy.asarray's buffer: the same rule
    shared[0] = 99.0
    np.testing.assert_array_equal(np.asarray(z), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(np.asarray(x + 0.0), [99.0, 2.0, 3.0])


def test_compile_threshold_forces_the_tier_within_a_block():
    """The internal switch the differential fuzzer runs both tiers with: 1 compiles a graph at
    its first sighting, None interprets it (even once compiled), and the setting comes back
    after the block, after an exception too."""
    before_setting = settings.get("X10ARRAY_COMPILE_THRESHOLD")
    x = xp.asarray(np.arange(5.0), device=LAZY)
    for threshold, compiles, interpreted in ((1, 1, 0), (None, 0, 3)):
        with _lazy.compile_threshold(threshold):
            before = xp.metrics()
            for _ in range(3):  # the same structure three times: compiled once, or never
                np.asarray(xp.sin(x) * 3.25 + x)
            assert delta(before).compile_count == compiles
            assert delta(before).interpreted_graphs == interpreted
    with pytest.raises(RuntimeError, match="inside"), _lazy.compile_threshold(1):
        assert settings.get("X10ARRAY_COMPILE_THRESHOLD") == 1
        raise RuntimeError("inside")
    assert settings.get("X10ARRAY_COMPILE_THRESHOLD") == before_setting
    with pytest.raises(ValueError, match="compile_threshold"), _lazy.compile_threshold(0):
        pass


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int64"])
def test_matmul_absorbs_a_transpose(dtype):
    """x.T @ y and x @ y.T record one matmul of the stored matrix (XLA's CPU code would copy
    the transpose), with the values of the eager device."""
    rng = np.random.default_rng(1)
    arrays = [(rng.standard_normal(s) * 8).astype(dtype) for s in [(9, 4), (9,), (9, 3), (5, 4)]]
    X, v, M, N = (xp.asarray(a, device=LAZY) for a in arrays)
    Xe, ve, Me, Ne = (xp.asarray(a, device=EAGER) for a in arrays)
    products = [X.T @ v, xp.matrix_transpose(X) @ M, X @ N.T, N @ X.T, X.T @ X, v @ X]
    expected = [Xe.T @ ve, xp.matrix_transpose(Xe) @ Me, Xe @ Ne.T, Ne @ Xe.T, Xe.T @ Xe, ve @ Xe]
    # The rounding of a product depends on the GEMM (the CPU's BLAS kernel, XLA's): compare
    # within the classic bound |error| <= n * eps * (|A| @ |B|), n = 9 terms, doubled for the two
    # sides; an entry whose terms cancel has no relative accuracy to compare.
    A, V, Mh, Nh = (np.abs(a.astype(np.complex128)) for a in arrays)
    magnitudes = [A.T @ V, A.T @ Mh, A @ Nh.T, Nh @ A.T, A.T @ A, V @ A]
    eps = float(np.finfo(dtype).eps) if np.dtype(dtype).kind in "fc" else 0.0  # integers: exact
    for p in products[:5]:
        assert p._data.call.prim.name == "matmul" and any(p._data.call.params["transposed"])
        assert all(i.call is None for i in p._data.call.inputs)  # the leaves themselves
    for threshold in (1, 2):  # compiled, then interpreted
        with settings.override(X10ARRAY_COMPILE_THRESHOLD=threshold):
            fresh = [X.T @ v, xp.matrix_transpose(X) @ M, X @ N.T, N @ X.T, X.T @ X, v @ X]
            xp.lazy_barrier()
            for got, want, magnitude in zip(fresh, expected, magnitudes):
                assert got.dtype == want.dtype and got.shape == want.shape
                error = np.abs(np.asarray(got).astype(np.complex128) - np.asarray(want).astype(np.complex128))
                assert np.all(error <= 2 * 9 * eps * magnitude), (np.asarray(got), np.asarray(want))


def test_mutation_is_exact_in_both_modes():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((5, 4))
    results = []
    for device in (EAGER, LAZY):
        x = xp.asarray(data, device=device)
        x[1:3, ::2] = -0.0
        x[xp.asarray([0, 4], device=device)] = 7.5
        x *= 3.0
        results.append(np.asarray(x))
    assert results[0].tobytes() == results[1].tobytes()


def test_data_dependent_shapes_break_the_graph():
    x = xp.asarray([3, 1, 3, 2, 1], device=LAZY)
    before = xp.metrics()
    u = xp.unique_values(x * 2)
    assert u.device == LAZY and isinstance(u._data, _lazy.Node)
    np.testing.assert_array_equal(np.asarray(u + 1), [3, 5, 7])
    assert delta(before).graph_breaks == 1


def test_graph_size_guard_warns_and_materializes(override_settings):
    override_settings(X10ARRAY_GRAPH_LIMIT=50)
    x = xp.ones(3, device=LAZY)
    with pytest.warns(RuntimeWarning, match="lazy_barrier"):
        for _ in range(60):
            x = x + 1.0
    assert xp.metrics().guard_materializations >= 1
    np.testing.assert_array_equal(np.asarray(x), [61.0, 61.0, 61.0])


def test_overwritten_weights_are_donated(compile_when_repeated):
    w = xp.ones((64, 64), device=LAZY) * 1.0
    g = xp.ones((64, 64), device=LAZY)
    xp.lazy_barrier()
    before = xp.metrics()
    for _ in range(5):
        w = w - 0.5 * g
        xp.lazy_barrier()
    assert delta(before).donated_buffers >= 3
    np.testing.assert_array_equal(np.asarray(w), np.full((64, 64), -1.5))


def test_exported_buffers_are_never_donated():
    w = xp.ones(8, device=LAZY) * 2.0
    host = np.asarray(w)  # may share memory with the device buffer
    for _ in range(3):
        w = w - 1.0
        xp.lazy_barrier()
    np.testing.assert_array_equal(host, np.full(8, 2.0))


def test_devices_do_not_mix_and_copies_are_exact():
    devices = xp.__array_namespace_info__().devices()
    lazy = [d for d in devices if d.backend == xp.Backend.XLA]
    if len(lazy) < 2:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=4")
    a = xp.asarray([1.0, -0.0, math.inf], device=lazy[0])
    b = xp.asarray([1.0, 2.0, 3.0], device=lazy[1])
    with pytest.raises(ValueError, match="different devices"):
        a + b
    moved = (a * 1.0).to_device(lazy[1])
    assert moved.device == lazy[1]
    back = moved.to_device(EAGER)
    assert np.asarray(back).tobytes() == np.array([1.0, -0.0, math.inf]).tobytes()


def test_metrics_report_returns_the_table_and_prints_only_when_asked(capsys):
    text = xp.metrics_report()
    assert capsys.readouterr().out == ""  # not printed: an interactive session shows it once
    assert repr(text) == str(text)  # the repr is the table itself, readable
    assert xp.metrics_report(file=sys.stdout) == text
    out = capsys.readouterr().out
    for name in (
        "compile_count",
        "cache_hits",
        "interpreted_graphs",
        "execute_count",
        "compile_seconds",
        "execute_seconds",
        "ops_recorded",
        "graph_breaks",
        "transfers_to_host",
        "transfers_to_device",
    ):
        assert name in out and name in text


def test_log_compiles_names_the_reason_and_the_user_line(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import x10array as xp\n"
        "d = xp.Device('cpu', 0, 'xla')\n"
        "for n in (3, 3, 5, 5):\n"
        "    x = xp.ones(n, device=d)\n"
        "    y = float(xp.sum(x * 2.0))  # forces materialization\n"
    )
    env = {"X10ARRAY_LOG_COMPILES": "1", "X10ARRAY_COMPILE_THRESHOLD": "1", "PATH": ""}
    import os

    env = {**os.environ, **env}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("x10array: compiling")]
    assert len(lines) == 2
    assert "new graph" in lines[0] and "prog.py:5" in lines[0]
    assert "changed" in lines[1] and "(5,)" in lines[1]


def test_log_compiles_calls_the_first_compile_of_an_interpreted_graph_new(tmp_path):
    """A graph interpreted first and compiled later is still a new graph at its first compile."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import x10array as xp\n"
        "d = xp.Device('cpu', 0, 'xla')\n"
        "for _ in range(30):\n"
        "    x = xp.ones(4, device=d)\n"
        "    y = float(xp.sum(x * 2.0))\n"
    )
    env = {**__import__("os").environ, "X10ARRAY_LOG_COMPILES": "1", "X10ARRAY_COMPILE_THRESHOLD": "2"}
    env["X10ARRAY_COMPILE_PAYBACK"] = "0"
    env["PYTHONPATH"] = str(Path(xp.__file__).parents[1])  # this checkout's x10array, not an installed one
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("x10array: compiling")]
    assert len(lines) == 1, out
    assert re.search(r"new graph of \d+ operations", lines[0]), lines[0]


def test_default_device_from_environment_is_lazy():
    code = "import x10array as xp; x = xp.ones(2); print(x.device, type(x._data).__name__)"
    env = {**__import__("os").environ, "X10ARRAY_DEFAULT_DEVICE": "xla"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "Device(kind=CPU, ordinal=0, backend=XLA) Node"


def test_no_warnings_from_a_plain_lazy_program():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = xp.asarray(np.linspace(-1, 1, 11), device=LAZY)
        y = xp.sqrt(x)  # NaN for negatives, silently as the standard says
        assert np.isnan(np.asarray(y)[0])


def test_the_subnormal_scan_finds_exactly_the_subnormals():
    """xla_numerics.has_subnormal and its three ways (the bits, the magnitudes, a few values as
    Python floats; small arrays, large ones scanned in pieces, strided views, 0-d) against the
    definition, 0 < |x| < tiny,
    on arrays salted with zeros, NaN, infinities, the smallest normal and subnormal numbers of
    each real dtype."""
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64):
        info = np.finfo(dtype)
        tiny = info.tiny
        below = np.nextafter(dtype(tiny), dtype(0))
        specials = np.array(
            [0.0, -0.0, tiny, -tiny, below, -below, info.smallest_subnormal, np.inf, -np.inf, np.nan, info.max],
            dtype=dtype,
        )
        for n in (1, 7, _xla_numerics._SMALL, _xla_numerics._SMALL + 1, 1000, 5 * _xla_numerics._SCAN_CHUNK + 3):
            for _ in range(12):
                a = rng.standard_normal(n).astype(dtype)
                if rng.random() < 0.5:
                    a[rng.integers(0, n, n // 3 + 1)] = 0.0
                salt = rng.integers(0, 3)
                a[rng.integers(0, n, salt)] = rng.choice(specials, salt)
                for view in (a, a[::2], a[:1].reshape(())):
                    magnitude = np.abs(view)
                    expected = bool(((magnitude < tiny) & (magnitude > 0)).any())
                    assert _xla_numerics.has_subnormal(view, tiny) == expected, (dtype, n, view)
                    # both ways of the scan, whichever the first element picks
                    assert _xla_numerics._magnitudes_hold_subnormal(view, tiny) == expected, (dtype, n)
                    assert _xla_numerics._small_holds_subnormal(view, float(tiny)) == expected, (dtype, n)
                    if view.ndim:
                        found = _xla_numerics._TINY_BITS[np.dtype(dtype)]
                        assert _xla_numerics._bits_hold_subnormal(view, found, None) == expected, (dtype, n)


def _scalar_step(ns: Any, x: Any, lr: float, shift: float) -> Any:
    # float32 operands with Python floats (weakly typed: the result stays float32) and Python
    # ints: a packing that lost the weak type or the order would show
    return (x * lr + shift) * 2 - x / (lr + 1.0) + (x > shift) * 3 + 0.5 * x - 0.25


def test_barrier_program_takes_its_python_floats_packed(override_settings):
    """A compiled barrier program gets its Python floats in one packed array and its ints in another
    (lowering.PackedScalars), its other scalars as they are: same values (and dtype) as eager, and a new learning rate
    (or -0.0, inf, nan) compiles nothing."""
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    host = np.linspace(-2.0, 2.0, 9, dtype=np.float32)
    x = xp.asarray(host, device=LAZY)
    e = xp.asarray(host, device=EAGER)
    before = xp.metrics()
    for i, (lr, shift) in enumerate([(0.1, 0.25), (0.3, -0.0), (math.inf, 1.5), (0.7, math.nan), (1e-300, 0.5)]):
        y = _scalar_step(xp, x, lr, shift)
        xp.lazy_barrier()
        want = np.asarray(_scalar_step(xp, e, lr, shift))
        got = np.asarray(y)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        if i == 0:
            programs = [p for _, p in _runtime.RUNTIME.programs.items() if p.packing is not None and p.compiled]
            assert programs, "the compiled barrier program packs its floats"
    assert delta(before).compile_count == 1


def _signed_step(ns: Any, x: Any, a: float, b: float) -> Any:
    # x * a + b (five floats: packed): with a and b zeros the sign bits of the results say which
    # zeros were read (2.0 * -0.0 + -0.0 is -0.0, 2.0 * 0.0 + -0.0 is 0.0)
    return ((x * a + b) * 1.0 + b) * 1.0


def test_packed_scalars_repeated_are_placed_once_and_a_change_of_bits_is_read(override_settings):
    """A barrier loop's packed scalars run from arrays placed on the device
    (PackedScalars.placed_pack), reused while their bits repeat: same bits as eager at every
    step, and a change of any bit of a scalar, -0.0 after 0.0 included (equal as numbers), is
    read at once, never the placed value; a NaN repeated is still a hit. The jitted program is
    traced and compiled once: jax keys its calls by whether an argument is committed, so
    passing NumPy arrays at some runs and placed ones at others would compile it twice."""
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    host = np.array([2.0, 3.0, -1.5, 0.0], dtype=np.float64)
    x = xp.asarray(host, device=LAZY)
    e = xp.asarray(host, device=EAGER)
    runs = (
        [(0.5, 0.25)] * 3
        + [(0.0, -0.0)] * 2
        + [(-0.0, -0.0), (-0.0, 0.0), (math.nan, 1.0), (math.nan, 1.0), (0.5, 0.25)]
    )
    placed = []
    for a, b in runs:
        y = _signed_step(xp, x, a, b)
        xp.lazy_barrier()
        got, want = np.asarray(y), np.asarray(_signed_step(xp, e, a, b))
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64), err_msg=f"a={a!r}, b={b!r}")
        (program,) = [
            p
            for _, p in _runtime.RUNTIME.programs.items()
            if p.packing is not None and p.compiled and p.key.leaf_avals == (((4,), np.dtype(np.float64)),)
        ]
        assert all(type(v) is not np.ndarray for v in program.packing.placed)
        placed.append(program.packing.placed)
    # the placed arrays are the last run's while the bits repeat, new ones at every change
    reused = [now is before for before, now in zip(placed, placed[1:])]
    assert reused == [True, True, False, True, False, False, False, True, False]
    assert program.compiled.func._cache_size() == 1


def test_packed_scalars_placed_on_the_device_compile_nothing_more(override_settings):
    """A barrier program whose packed scalars repeat runs from arrays placed on the device from
    its second run on (PackedScalars.placed_pack): placed uncommitted, as jax places the NumPy
    arrays of the first run, so jax does not compile the program a second time (committed
    arrays made it: XLA compiles counted by jax's own compile event), and a change of the
    scalars afterwards compiles nothing either."""
    import jax.monitoring
    from jax._src.dispatch import BACKEND_COMPILE_EVENT

    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    compiles: list[str] = []

    def listen(event: str, duration: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE_EVENT:
            compiles.append(event)

    host = np.array([2.0, 3.0, -1.5, 0.0], dtype=np.float64)
    x = xp.asarray(host, device=LAZY)
    e = xp.asarray(host, device=EAGER)
    y = _signed_step(xp, x, 0.5, 0.25)  # (its first run: the program compiled)
    xp.lazy_barrier(wait=True)
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for a, b in [(0.5, 0.25)] * 3 + [(0.75, -0.0)] * 2:
            y = _signed_step(xp, x, a, b)
            xp.lazy_barrier(wait=True)
            want = np.asarray(_signed_step(xp, e, a, b))
            np.testing.assert_array_equal(np.asarray(y).view(np.uint64), want.view(np.uint64))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    (program,) = [
        p
        for _, p in _runtime.RUNTIME.programs.items()
        if p.packing is not None and p.compiled and p.key.leaf_avals == (((4,), np.dtype(np.float64)),)
    ]
    assert program.packing.placed is not None  # (the last runs ran from placed arrays)
    assert compiles == []


def test_placed_pack_tells_repeats_by_bits_and_an_int_past_int64_raises_as_numpy_does():
    """PackedScalars.placed_pack reads its scalars' bits without making the arrays (`struct`):
    the first sighting places `pack`'s arrays, a repeat of the same bits gives the placed ones
    again without placing, -0.0 after 0.0 is a change (placed anew); an int beyond int64 raises
    NumPy's OverflowError, as `pack` does (not struct's error)."""
    ops = ((None, (), (*[("s", i, float) for i in range(4)], ("s", 4, int), ("s", 5, int), ("s", 6, bool))),)
    packing = _lowering.PackedScalars.of(ops)
    assert packing is not None and len(packing.groups) == 2
    placed: list[list[np.ndarray]] = []

    def place(arrays: list[np.ndarray]) -> list[np.ndarray]:
        placed.append([a.copy() for a in arrays])
        return placed[-1]

    scalars = [0.5, 0.0, math.nan, 1e-300, 7, -(2**63), True]
    results = []
    for _ in range(3):
        packed, others = packing.placed_pack(list(scalars), place)
        assert others == [True]
        results.append(packed)
    assert len(placed) == 1 and results[0] is results[1] is results[2] is placed[0]
    assert [a.dtype for a in placed[0]] == [np.float64, np.int64]
    for got, want in zip(placed[0], packing.pack(scalars)[0]):
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    packed, _ = packing.placed_pack([0.5, -0.0, math.nan, 1e-300, 7, -(2**63), True], place)
    assert len(placed) == 2 and packed is placed[1] and math.copysign(1.0, packed[0][1]) == -1.0
    with pytest.raises(OverflowError):
        packing.placed_pack([0.5, 0.0, 1.0, 2.0, 2**63, 1, True], place)


def test_placed_pack_reuses_equal_values_and_tells_the_sign_of_a_zero_by_its_bits():
    """PackedScalars.placed_pack tells a repeat by the values first: equal floats (other objects)
    give the placed arrays again, a changed one places anew, and a zero after the other zero
    (equal values, other bits) is a change too."""
    packing = _lowering.PackedScalars.of(((None, (), tuple(("s", i, float) for i in range(4))),))
    assert packing is not None
    placed: list[list[np.ndarray]] = []

    def place(arrays: list[np.ndarray]) -> list[np.ndarray]:
        placed.append([a.copy() for a in arrays])
        return placed[-1]

    first, _ = packing.placed_pack([0.5, 1.5, 2.5, 3.5], place)
    again, _ = packing.placed_pack([0.5, 1.5, 2.5, float("3.5")], place)
    assert len(placed) == 1 and again is first
    changed, _ = packing.placed_pack([0.5, 1.5, 2.5, 4.5], place)
    assert len(placed) == 2 and changed[0].tolist() == [0.5, 1.5, 2.5, 4.5]
    packing.placed_pack([0.5, 1.5, 2.5, 0.0], place)
    negative, _ = packing.placed_pack([0.5, 1.5, 2.5, -0.0], place)
    assert len(placed) == 4 and math.copysign(1.0, negative[0][3]) == -1.0


def test_packed_scalars_pack_only_exact_floats_and_ints():
    """Only Python floats and ints are packed, floats from PACK_FROM of them on, ints from
    PACK_INTS_FROM: a bool, a complex number or a NumPy scalar (a float subclass, its own dtype)
    goes as it is, in the graph's order."""
    n = _lowering.PACK_FROM
    first = (None, (), (("s", 0, float), ("s", 1, int), ("s", 2, bool)))
    ops = (first, (None, (), (("s", 3, np.float32), *[("s", 4 + i, float) for i in range(n - 1)])))
    packing = _lowering.PackedScalars.of(ops)
    assert packing is not None and packing.groups == [[0, *range(4, n + 3)]] and packing.others == [1, 2, 3]
    packed, others = packing.pack([0.5, 7, True, np.float32(1.5), -0.0, *[float(i) for i in range(n - 2)]])
    assert packed[0].dtype == np.float64 and packed[0].tolist()[:2] == [0.5, -0.0]
    assert math.copysign(1.0, packed[0][1]) == -1.0
    assert others == [7, True, np.float32(1.5)] and type(others[1]) is bool
    # fewer floats than PACK_FROM and ints than PACK_INTS_FROM: passed as they are
    assert _lowering.PackedScalars.of(((None, (), (("s", 0, int), ("s", 1, float))),)) is None
    # ints from PACK_INTS_FROM on: one int64 array (bools stay out of it)
    ints = [("s", i, int) for i in range(_lowering.PACK_INTS_FROM)]
    packing = _lowering.PackedScalars.of(((None, (), (("s", len(ints), bool), *ints, ("s", len(ints) + 1, float))),))
    assert packing is not None and packing.kinds == [(np.dtype(np.int64), True)]
    k = _lowering.PACK_INTS_FROM
    packed, others = packing.pack([*range(-1, k - 1), False, 2.5])
    assert packed[0].dtype == np.int64 and packed[0].tolist() == list(range(-1, k - 1)) and others == [False, 2.5]


def test_a_graph_past_the_compile_limit_is_interpreted(override_settings):
    """The compile refusal (X10ARRAY_COMPILE_LIMIT): a graph of more operations than the limit
    is interpreted even where every graph is compiled (XLA's compile memory grows with the
    graph: SciPy's permutation_test recorded 14,437 operations and took gigabytes), and gives
    the compiled tier's values within the rounding of its steps (the same graph under a
    higher limit)."""
    values = np.linspace(-1.0, 1.0, 7)

    def chain() -> Any:
        x = xp.asarray(values, device=LAZY)
        for k in range(40):
            x = xp.sin(x) * 1.25 + float(k)
        return x

    override_settings(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_COMPILE_LIMIT=50)
    before = xp.metrics()
    refused = np.asarray(chain(), copy=True)
    assert delta(before).compile_count == 0 and delta(before).interpreted_graphs == 1
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_COMPILE_LIMIT=10_000)
    before = xp.metrics()
    compiled = np.asarray(chain(), copy=True)
    assert delta(before).interpreted_graphs == 0
    np.testing.assert_allclose(refused, compiled, rtol=1e-13)


def test_a_view_of_a_computed_value_is_kept_as_a_view_not_copied():
    """An interpreted graph's output that is a view of another node's value (read-only
    memory: `pts[:, 0]` of a leaf) becomes its node's value as it is, immutable like its owner;
    only a view of less than half of that memory is copied (it would pin the whole). The
    values, the writes through views and a reduction's bits are those of the eager device."""
    host = np.random.default_rng(3).random((1000, 2))
    pts = xp.asarray(host, device=LAZY)
    x, y = pts[:, 0], pts[:, 1]
    small = pts[:5, 0]
    total = xp.sum(x * x + y)
    float(total)  # (x, y and small are alive: the graph returns them too)
    owner = np.asarray(pts._data.value)
    kept = np.asarray(x._data.value)
    assert np.shares_memory(kept, owner) and not kept.flags.writeable
    assert np.shares_memory(np.asarray(y._data.value), owner)
    assert not np.shares_memory(np.asarray(small._data.value), owner)
    np.testing.assert_array_equal(kept, host[:, 0])
    e = xp.asarray(host, device=EAGER)
    assert float(xp.sum(x)) == float(xp.sum(e[:, 0]))  # (the summation walks the same layout)
    copied = xp.asarray(x, copy=True)
    pts[0, 0] = 5.0  # a write through the base: its views see it, a copy does not
    assert float(x[0]) == 5.0 and float(copied[0]) == host[0, 0]
    assert np.asarray(kept)[0] == host[0, 0]  # (the kept memory is never written)
    x[1] = 7.0
    assert float(pts[1, 0]) == 7.0


def test_a_matmul_of_untransposed_operands_skips_the_rewrite(monkeypatch):
    """The rewrite (matmul absorbing a transpose) reads only operands made by a transpose
    (they carry an `origin`): a product of other operands never calls it (its lock and
    producer list were most of a recorded matmul's time)."""
    calls = []
    real = _graph._fold
    monkeypatch.setattr(_graph, "_fold", lambda *a: calls.append(a[0].name) or real(*a))
    dev = xp.Device("cpu", 0, "xla")
    a = xp.reshape(xp.arange(6.0, device=dev), (2, 3))
    b = xp.ones((3, 2), device=dev) * 2.0
    plain = a @ b
    assert calls == []
    folded = xp.matrix_transpose(b) @ xp.matrix_transpose(a)
    assert calls == ["matmul"] and any(folded._data.call.params["transposed"])
    assert np.array_equal(np.asarray(folded), np.asarray(plain).T)


def test_each_compiled_program_is_compiled_by_jax_once(override_settings):
    """jax keys a jitted function's calls by its arguments' avals and whether each is committed,
    so an argument passed as a NumPy array at one run and as a placed array at another (an
    interpreted leaf, a packed scalar) would make jax trace and compile the same program again,
    unseen by x10array's counters. Typical loops (a stencil with a barrier per step, an Adam
    fit, reads of new NumPy leaves, scalars that change and repeat), every graph compiled:
    each program's jitted function holds one entry."""
    from x10array.autodiff import value_and_grad
    from x10array.optim import Adam

    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    before = {id(p) for _, p in _runtime.RUNTIME.programs.items()}
    rng = np.random.default_rng(7)
    u = xp.asarray(rng.standard_normal((16, 16)), device=LAZY)
    for step in range(6):  # slices, slice writes, floats that repeat and change
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + (0.1 if step % 3 else 0.2) * lap
        xp.lazy_barrier()
    X = xp.asarray(rng.standard_normal((40, 5)), device=LAZY)
    y = xp.asarray(rng.standard_normal(40), device=LAZY)
    grad = value_and_grad(lambda w: xp.mean((X @ w - y) ** 2))
    opt = Adam(learning_rate=0.05)
    w = xp.zeros(5, dtype=xp.float64, device=LAZY)
    state = opt.init(w)
    for _ in range(6):
        _, g = grad(w)
        w, state = opt.update(w, g, state)
        xp.lazy_barrier()
    for _ in range(4):  # an interpreted value read by a compiled program, new at each run
        leaf = xp.asarray(rng.standard_normal(64), device=LAZY)
        float(xp.sum(xp.sqrt(xp.abs(leaf)) * 0.5 + 1.5 * leaf - 2.5))
    programs = [p for _, p in _runtime.RUNTIME.programs.items() if id(p) not in before and p.compiled is not None]
    assert len(programs) >= 3
    for p in programs:
        assert p.compiled.func._cache_size() == 1, p.key.ops[:3]


def test_a_barrier_does_not_wait_for_the_program_still_computing_its_input(monkeypatch):
    """A loop step `u[1:-1] = u[1:-1] + 1.0` leaves one pending write whose input `u` is the
    previous compiled program's output, which may still be computing (jax dispatches
    asynchronously). The barrier tried it as a single operation (interpreter.run_single),
    which read that input on the host (a wait for the program) before finding the other input
    pending: every barrier waited for the step before, and a loop without a barrier at every
    cut (the heat stencil: 389 us a barrier, 111 us without the wait)."""
    import jax

    host_reads: list[Any] = []

    class Spy:  # the interpreter's numpy, noting each compiled value it reads on the host
        def __getattr__(self, name: str) -> Any:
            return getattr(np, name)

        def asarray(self, x: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(x, jax.Array):
                host_reads.append(x.shape)
            return np.asarray(x, *args, **kwargs)

    monkeypatch.setattr(_tiering.COST, "compile_seconds", lambda calls: 1e-4)  # pays at once
    u = xp.asarray(np.arange(4096.0), device=LAZY, copy=True)
    for _ in range(4):  # compiled by the cost rule (a threshold of 1 never tries a single operation)
        u[1:-1] = u[1:-1] + 1.0
        xp.lazy_barrier()
    assert type(u._data.value) is not np.ndarray  # the compiled program's output, from here on
    before = xp.metrics().cache_hits
    with monkeypatch.context() as patch:
        patch.setattr(_interpreter, "np", Spy())
        for _ in range(3):
            u[1:-1] = u[1:-1] + 1.0
            xp.lazy_barrier()
    assert xp.metrics().cache_hits - before == 3
    assert host_reads == []
    expected = np.arange(4096.0)
    expected[1:-1] += 7.0
    assert np.array_equal(np.asarray(u), expected)


def test_a_read_of_a_compiled_result_polls_it_briefly_where_that_pays(monkeypatch, override_settings):
    """A read of a compiled run's result polls it for up to READ_SPIN seconds before it sleeps
    in jax (a sleeping reader's wake-up costs about as much as a small program runs); a barrier
    nobody waits for does not poll. A program whose reads keep missing the window stops
    polling: its runs are longer, and a poll would take a core from them."""
    from x10array._backends.lazy import executor as _executor

    polled: list[tuple[Any, Any]] = []
    real = _executor.await_read

    def spy(program: Any, value: Any) -> None:
        polled.append((program, value))
        real(program, value)

    monkeypatch.setattr(_executor, "await_read", spy)
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)  # every graph compiled at once
    a = xp.asarray(np.arange(1000.0), device=LAZY)
    kept = []
    for _ in range(3):
        kept.append(xp.sum(a * 2.0 + 1.0))
        xp.lazy_barrier()
    assert xp.metrics().compile_count >= 1 and polled == []  # barriers nobody waits for
    for _ in range(2):  # the first run compiles (no poll), the second polls
        assert float(xp.sum(a * 2.0 - 1.0)) == 1000.0 * 999.0 - 1000.0
    assert len(polled) == 1  # the compiled read polled its result
    program, value = polled[0]
    assert hasattr(value, "is_ready") and value.is_ready()

    class Ready:  # a result found ready at the first poll
        def is_ready(self) -> bool:
            return True

    class Late:  # a result that is never ready within the window
        calls = 0

        def is_ready(self) -> bool:
            Late.calls += 1
            return False

    monkeypatch.setattr(_executor, "READ_SPIN", 1e-9)
    program.spin_misses = 0  # (the real read above may have missed its window on a busy host)
    for k in range(1, _executor.SPIN_MISSES + 1):
        real(program, Late())
        assert program.spin_misses == k
    calls = Late.calls
    real(program, Late())  # no longer polled
    assert Late.calls == calls and program.spin_misses == _executor.SPIN_MISSES
    program.spin_misses = 0
    monkeypatch.setattr(_executor, "READ_SPIN", 1.0)
    turns = iter([False, False, True])  # ready at the third poll: caught within the window

    class Soon:
        def is_ready(self) -> bool:
            return next(turns)

    program.spin_misses = 2
    real(program, Soon())  # a catch takes one miss back
    assert program.spin_misses == 1
    real(program, Ready())  # ready already: nothing to learn
    assert program.spin_misses == 1
    monkeypatch.setattr(_executor, "READ_SPIN", 0.0)  # a single core: no poll
    calls = Late.calls
    real(program, Late())
    assert Late.calls == calls and program.spin_misses == 1
