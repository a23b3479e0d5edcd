"""A loop without a barrier (issue 26, "No barrier needed"): a lazy recording that repeats is
cut at a fixed phase of its period and run there as `lazy_barrier()` would (graph._Repeats),
so every later cut runs a graph of the same structure: the barrier's plans and compiled
programs apply as with a barrier per step. A cut is a barrier, so it changes no value: the
values equal the uncut recording's and the eager device's, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array._backends.lazy import runtime as _runtime
from x10array._backends.lazy import tiering as _tiering

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0)
TIERS = {"interpreted": None, "compiled": 1}


@pytest.fixture(autouse=True)
def _checked(override_settings: Any) -> None:
    override_settings(X10ARRAY_PLAN_CHECK=True)  # (a planned graph is walked too: raises on a difference)
    _runtime.RUNTIME.plans.clear()
    xp.lazy_barrier()  # (nothing pending from another test: the detector starts here)


@pytest.fixture(params=list(TIERS))
def tier(request: pytest.FixtureRequest) -> Any:
    with _tiering.compile_threshold(TIERS[request.param]):
        yield request.param


def _agree(*arrays: np.ndarray) -> None:
    """The same values up to the rounding the tiers may differ by (a compiled program may fuse
    a multiply-add: an ulp a step, which the stencil's averaging does not amplify)."""
    for other in arrays[1:]:
        assert other.dtype == arrays[0].dtype and other.shape == arrays[0].shape
        np.testing.assert_allclose(other, arrays[0], rtol=1e-13, atol=1e-15)


def field(device: xp.Device, n: int = 24) -> Any:
    rng = np.random.default_rng(0)
    return xp.asarray(rng.random((n, n)), device=device)


def stencil(u: Any, steps: int, barrier: bool = False, held: list[Any] | None = None) -> Any:
    """The day-one heat stencil (benchmarks/bench_dayone.py), written the NumPy way."""
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap
        if held is not None:
            held.append(lap)  # a temporary kept past its step
        if barrier:
            xp.lazy_barrier()
    return u


def test_a_loop_without_a_barrier_is_cut_and_reuses_its_plan(tier: str) -> None:
    before = xp.metrics()
    u = stencil(field(LAZY), 40)
    d = xp.metrics() - before
    cut = np.asarray(u)
    assert d.repeat_cuts >= 5  # (cut every few steps, from the second step's end on)
    assert d.barriers == 0  # a cut is counted as a cut, not as a user's barrier
    assert d.plan_hits >= d.repeat_cuts - 3  # the cuts after the first few follow one plan
    if tier == "compiled":
        assert d.cache_hits >= d.repeat_cuts - 3  # ... and run one compiled program
    barriered = np.asarray(stencil(field(LAZY), 40, barrier=True))
    eager = np.asarray(stencil(field(EAGER), 40))
    _agree(cut, barriered, eager)


def test_the_cut_values_equal_the_uncut_recording(override_settings: Any) -> None:
    cut = np.asarray(stencil(field(LAZY), 30))
    override_settings(X10ARRAY_REPEAT_CUT=False)
    before = xp.metrics()
    uncut = np.asarray(stencil(field(LAZY), 30))
    assert (xp.metrics() - before).repeat_cuts == 0  # the setting off: one graph, read at the end
    _agree(cut, uncut)


def test_a_barrier_per_step_is_never_cut() -> None:
    before = xp.metrics()
    stencil(field(LAZY), 20, barrier=True)
    d = xp.metrics() - before
    assert d.repeat_cuts == 0 and d.barriers == 20


def test_a_barrier_of_an_equal_device_object_restarts_the_detector() -> None:
    """`Device("cpu", 0, "xla")` made again is equal, not the same object: a barrier of it is
    the recording device's barrier, and no cut follows (the full run failed on this when an
    earlier test had made the default device's object anew)."""
    other = xp.Device("cpu", 0, "xla")
    assert other == LAZY and other is not LAZY
    u = field(LAZY)
    before = xp.metrics()
    for _ in range(20):
        stencil(u, 1)
        xp.lazy_barrier(other)
    assert (xp.metrics() - before).repeat_cuts == 0


def test_a_recording_that_does_not_repeat_is_never_cut() -> None:
    x = field(LAZY, 8)
    before = xp.metrics()
    acc = x
    for k in range(1, 60):  # every step of another shape: no two steps alike
        acc = xp.sum(acc[: 8 - k % 7, :] * 1.5, axis=0, keepdims=True) + x[: 8 - k % 7, :][:1] if k % 2 else acc + 1.0
        acc = xp.reshape(acc, (-1,))[: (k % 5) + 1]
        acc = xp.concat([acc, xp.zeros((k,), device=LAZY)])
        acc = xp.broadcast_to(acc[:1], (8, 8))
    value = np.asarray(acc)
    assert (xp.metrics() - before).repeat_cuts == 0
    assert value.shape == (8, 8)


def test_a_loop_with_a_held_temporary_gives_the_right_values() -> None:
    held: list[Any] = []
    before = xp.metrics()
    cut = np.asarray(stencil(field(LAZY), 30, held=held))
    assert (xp.metrics() - before).repeat_cuts > 0
    held_eager: list[Any] = []
    eager = np.asarray(stencil(field(EAGER), 30, held=held_eager))
    _agree(cut, eager)
    for a, b in zip(held, held_eager, strict=True):  # every temporary kept, computed or not
        _agree(np.asarray(a), np.asarray(b))


def test_a_short_period_is_cut_every_few_periods_and_a_shorter_one_never() -> None:
    x = xp.ones((5,), device=LAZY)
    before = xp.metrics()
    for _ in range(200):
        x = (x * 0.5 + 1.0) * 0.25 - 0.5  # (4 operations a step: the shortest period cut)
    got = np.asarray(x)
    d = xp.metrics() - before
    assert 800 // 32 - 4 <= d.repeat_cuts <= 1 + 800 // 32  # one cut per 8 periods (_MIN_CUT: 32 operations)
    want = np.ones(5)
    for _ in range(200):
        want = (want * 0.5 + 1.0) * 0.25 - 0.5
    _agree(got, want)
    before = xp.metrics()
    for _ in range(200):
        x = x * 0.5 + 1.0  # (2 operations a step: not cut)
    np.asarray(x)
    assert (xp.metrics() - before).repeat_cuts == 0


def test_a_large_in_place_write_is_cut_at_every_period(tier: str) -> None:
    """A period that writes a value of at least graph._WRITE_EVERY_PERIOD elements through an
    index is cut after every write (XLA's program for several periods of it copies out the
    slices each write reads): one graph per step, the barrier loop's; a smaller one is cut
    every few periods (test above)."""
    from x10array._backends.lazy import graph as _graph

    n = 184  # (the value written, 182 x 182 = 33,124 elements: just past the bound)
    assert (n - 2) ** 2 >= _graph._WRITE_EVERY_PERIOD > (n - 3) ** 2
    before = xp.metrics()
    cut = np.asarray(stencil(field(LAZY, n), 12))
    d = xp.metrics() - before
    assert 12 - 4 <= d.repeat_cuts <= 12  # (from the third step's end on, one cut a step)
    assert d.plan_hits >= d.repeat_cuts - 3
    small = xp.metrics()
    stencil(field(LAZY, 24), 12)
    assert (xp.metrics() - small).repeat_cuts <= 12 // 3  # (a small array: every 3 steps)
    eager = np.asarray(stencil(field(EAGER, n), 12))
    barriered = np.asarray(stencil(field(LAZY, n), 12, barrier=True))
    _agree(cut, eager, barriered)


def test_a_small_write_into_a_large_array_is_cut_every_few_periods() -> None:
    """The value written decides, not the array written into: `x[0] = v` copies nothing out,
    and a cut at every period would be a barrier every 4 operations."""
    from x10array._backends.lazy import graph as _graph

    x = xp.zeros((2 * _graph._WRITE_EVERY_PERIOD,), device=LAZY)
    before = xp.metrics()
    for _ in range(100):
        x[0] = x[0] * 0.5 + 1.0  # (4 operations a step)
    got = np.asarray(x)
    assert 0 < (xp.metrics() - before).repeat_cuts <= 1 + 400 // 32
    want = np.zeros(2 * _graph._WRITE_EVERY_PERIOD)
    for _ in range(100):
        want[0] = want[0] * 0.5 + 1.0
    _agree(got, want)


def test_a_large_loop_without_an_in_place_write_is_cut_every_few_periods() -> None:
    """Only an in-place write makes a period cut each time: a large functional step (`x = f(x)`,
    which XLA fuses across periods) keeps the _MIN_CUT spacing."""
    from x10array._backends.lazy import graph as _graph

    x = xp.ones((2 * _graph._WRITE_EVERY_PERIOD,), device=LAZY)
    before = xp.metrics()
    for _ in range(100):
        x = (x * 0.5 + 1.0) * 0.25 - 0.5  # (4 operations a step)
        x += 1.0  # (a rebinding, not an indexed write)
    got = np.asarray(x)
    d = xp.metrics() - before
    assert 0 < d.repeat_cuts <= 1 + 500 // 32
    want = np.ones(2 * _graph._WRITE_EVERY_PERIOD)
    for _ in range(100):
        want = (want * 0.5 + 1.0) * 0.25 - 0.5
        want += 1.0
    _agree(got, want)


def heat(u: Any) -> Any:
    for _ in range(12):  # (a repeating recording inside the captured function)
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        inner = xp.concat([u[1:-1, :1], u[1:-1, 1:-1] + 0.1 * lap, u[1:-1, -1:]], axis=1)
        u = xp.concat([u[:1], inner, u[-1:]])
    return u


def test_a_loop_under_compile_is_not_cut() -> None:
    run = xp.compile(heat)
    before = xp.metrics()
    outs = [np.asarray(run(field(LAZY))) for _ in range(4)]
    d = xp.metrics() - before
    assert d.repeat_cuts == 0
    assert d.capture_fallbacks == 0 and d.captured_replays >= 2
    want = np.asarray(heat(field(EAGER)))
    for out in outs:
        _agree(out, want)


def test_a_cut_logs_once(override_settings: Any, capsys: pytest.CaptureFixture[str]) -> None:
    override_settings(X10ARRAY_LOG_COMPILES=True)
    np.asarray(stencil(field(LAZY), 30))
    logged = [line for line in capsys.readouterr().out.splitlines() if "without a barrier repeats" in line]
    assert len(logged) == 1 and "X10ARRAY_REPEAT_CUT=0" in logged[0]


def adam_fit(device: xp.Device, steps: int, barrier: bool) -> np.ndarray:
    """value_and_grad + optim.Adam, written without a barrier (bench_dayone's least squares)."""
    from x10array.autodiff import value_and_grad
    from x10array.optim import Adam

    rng = np.random.default_rng(1)
    X = xp.asarray(rng.standard_normal((50, 4)), device=device)
    y = xp.asarray(rng.standard_normal(50), device=device)
    grad = value_and_grad(lambda w: xp.mean((X @ w - y) ** 2))
    opt = Adam(learning_rate=0.05)
    w = xp.zeros(4, dtype=xp.float64, device=device)
    state = opt.init(w)
    for _ in range(steps):
        _, g = grad(w)
        w, state = opt.update(w, g, state)
        if barrier:
            xp.lazy_barrier()
    return np.asarray(w)


def test_an_autodiff_and_optimizer_loop_without_a_barrier_is_cut_with_the_same_bits(override_settings: Any) -> None:
    before = xp.metrics()
    cut = adam_fit(LAZY, 30, barrier=False)
    assert (xp.metrics() - before).repeat_cuts > 0
    barriered = adam_fit(LAZY, 30, barrier=True)
    override_settings(X10ARRAY_REPEAT_CUT=False)
    uncut = adam_fit(LAZY, 30, barrier=False)
    _agree(cut, barriered, uncut)
    np.testing.assert_allclose(cut, adam_fit(EAGER, 30, barrier=False), rtol=1e-12)


def test_a_repeat_confirmed_as_another_thread_restarts_the_detector():
    """The detector is written without the lock (graph._Repeats): another thread's barrier may
    restart it (period 0) between the recorder's read of the period and the confirmation. The
    confirmation used the period read again: ZeroDivisionError inside `half += 1` of
    tests/test_threads.py's barrier-while-recording test, on main at 7cc0104 in CI. It uses
    the period that was matched."""
    from x10array._backends.lazy import graph as _graph

    rep = _graph._Repeats()
    rep.restart(None)  # (the other thread's barrier)
    rep.confirmed(1000, 11)
    assert rep.every % 11 == 0 and rep.every >= _graph._MIN_CUT and rep.cut_at == 1001


def monte_carlo(pts: Any) -> tuple[float, float]:
    """bench_dayone's Monte-Carlo step: 11 operations that end in two reads, no barrier."""
    x, y = pts[:, 0], pts[:, 1]
    inside = float(xp.count_nonzero(x**2 + y**2 <= 1.0))
    gauss = float(xp.mean(xp.exp(-(x**2))))
    return inside, gauss


def test_a_loop_whose_steps_end_in_reads_is_not_cut(tier: str) -> None:
    """A read that leaves nothing pending on the device starts the detection again, as a
    barrier does: the loop's graphs are the reads' own, the same two every step. (Counted
    across the reads, the recording repeated every 11 operations and was cut every 33, at
    another point of each step: graphs of changing structure.)"""
    rng = np.random.default_rng(0)
    host = rng.random((1000, 2))
    pts = xp.asarray(host, device=LAZY)
    before = xp.metrics()
    got = [monte_carlo(pts) for _ in range(12)]
    d = xp.metrics() - before
    assert d.repeat_cuts == 0
    assert d.plan_hits >= 2 * 12 - 4  # two graphs a step, each the same structure every step
    assert all(g == got[0] for g in got)  # (one tier every step: the same bits)
    want = monte_carlo(xp.asarray(host, device=EAGER))
    assert got[0][0] == want[0]
    assert got[0][1] == pytest.approx(want[1], rel=1e-12)  # (a compiled sum rounds in XLA's order)


def test_a_read_that_leaves_work_pending_keeps_the_detection() -> None:
    """Only a read after which nothing is pending on the device restarts the detector: a
    pending array held elsewhere (another thread's recording) keeps it."""
    from x10array._backends.lazy import graph as _graph

    x = field(LAZY, 8)
    held = x * 2.0  # pending, held
    y = x + 1.0
    float(xp.sum(y))
    assert _graph._REPEATS.fps  # the recording so far is kept
    assert held._data.value is None
    del held
    float(xp.sum(x * 3.0))
    assert not _graph._REPEATS.fps  # nothing pending: restarted, as by a barrier
