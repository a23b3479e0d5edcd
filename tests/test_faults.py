"""Faults on the lazy device: a barrier or a read that fails (an exception, KeyboardInterrupt,
out of memory) loses nothing. Pending arrays stay pending (and registered for the next
barrier), materialized arrays keep their values, and a donated buffer is consumed only by a
run whose outputs were handed over. Faults are injected by replacing internal functions of
`x10array._backends.lazy` at each stage of a barrier, on both tiers."""

from __future__ import annotations

import signal
import sys
import warnings

import numpy as np
import pytest

import x10array as xp
from x10array._backends import lazy as _lazy
from x10array._backends.lazy import executor as _executor
from x10array._backends.lazy import interpreter as _interpreter
from x10array._backends.lazy import plans as _plans
from x10array._backends.lazy import program as _program
from x10array._core import lru as _lru
from x10array._core import metrics as _metrics

LAZY = xp.Device("cpu", 0, "xla")


class Injected(Exception):
    pass


@pytest.fixture(params=["interpreted", "compiled"])
def tier(request, monkeypatch, override_settings):
    """Run every graph interpreted (the default for a new graph), or compile every graph at
    its first sighting (the tier where inputs are donated)."""
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1 if request.param == "compiled" else 1_000_000)
    monkeypatch.setattr(
        _program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False)
    )  # compile here, not earlier
    return request.param


def _pending_bad_index(x):
    """`x[[7]]` of a length-5 `x`, through an index that is still pending (so the error cannot
    be raised at the call: it comes at the barrier or at the read, raw from NumPy's kernel or
    from a checked index)."""
    return x[xp.asarray(np.array([3]), device=LAZY) + 4]


@pytest.fixture
def interpreted():
    """Every graph interpreted (an unchecked compiled gather clamps instead of raising)."""
    with _lazy.compile_threshold(None):
        yield


def test_a_failed_barrier_keeps_the_other_pending_arrays(interpreted):
    """Issue 13, 3: the live list was cleared before the graph ran, so `good` was stranded."""
    x = xp.asarray(np.arange(5.0), device=LAZY)
    good = x + 1.0
    bad = _pending_bad_index(x)
    with pytest.raises(IndexError):
        xp.lazy_barrier()
        np.asarray(bad)
    with pytest.raises(IndexError):  # the failing array raises again on read
        np.asarray(bad)
    del bad
    xp.lazy_barrier()
    assert good._data.value is not None  # the next barrier ran it
    np.testing.assert_array_equal(np.asarray(good), np.arange(5.0) + 1.0)
    np.testing.assert_array_equal(np.asarray(x), np.arange(5.0))


def test_a_kept_exception_does_not_keep_the_failing_array_registered(interpreted):
    """The traceback of a failed barrier holds the barrier's frame: it must not hold the failing
    array too, or that array, deleted by the user, stays alive and fails every later barrier."""
    x = xp.asarray(np.arange(5.0), device=LAZY)
    good = x * 2.0
    bad = _pending_bad_index(x)
    kept = []
    try:
        xp.lazy_barrier()
        np.asarray(bad)
    except IndexError as e:
        kept.append(e)
    assert kept
    del bad
    xp.lazy_barrier()
    np.testing.assert_array_equal(np.asarray(good), np.arange(5.0) * 2.0)


def _step_state():
    """A materialized weight `w` about to be overwritten (its buffer is donated in a compiled
    run), a materialized `m`, and after `step()` two pending arrays."""
    w = xp.asarray(np.arange(64.0).reshape(8, 8), device=LAZY) * 1.0
    g = xp.ones((8, 8), device=LAZY)
    m = g * 3.0
    xp.lazy_barrier()
    return {"w": w, "g": g, "m": m}


def _step(state):
    state["w"] = state["w"] - 0.5 * state["g"]  # the old `w` is read by nothing else: donated
    state["other"] = state["m"] + 1.0


def _assert_intact(state):
    """Every array is readable and right, and a barrier computes the pending ones."""
    xp.lazy_barrier()
    for name in ("w", "other"):
        assert state[name]._data.value is not None, f"{name} is still pending after a barrier"
    np.testing.assert_array_equal(np.asarray(state["w"]), np.arange(64.0).reshape(8, 8) - 0.5)
    np.testing.assert_array_equal(np.asarray(state["other"]), np.full((8, 8), 4.0))
    np.testing.assert_array_equal(np.asarray(state["m"]), np.full((8, 8), 3.0))
    np.testing.assert_array_equal(np.asarray(state["g"]), np.ones((8, 8)))


def _raising(*args, **kwargs):
    raise Injected("injected fault")


def _interrupt():
    signal.raise_signal(signal.SIGINT)  # as Ctrl-C would: the handler runs at the next bytecode


def _needs_default_sigint():
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT has a custom handler in this process")


STAGES = ["before trace", "after trace", "in a kernel", "converting outputs", "in compile", "after the compiled run"]


@pytest.mark.parametrize("stage", STAGES)
def test_an_exception_at_any_stage_of_a_barrier_loses_nothing(stage, tier, monkeypatch):
    if stage in ("in compile", "after the compiled run") and tier == "interpreted":
        pytest.skip("a compiled-tier stage")
    if stage in ("in a kernel", "converting outputs") and tier == "compiled":
        pytest.skip("an interpreted-tier stage")
    state = _step_state()
    _step(state)
    with monkeypatch.context() as patch:
        if stage == "before trace":  # (the walk of a new structure, or the plan of one seen before)
            patch.setattr(_plans, "walk", _raising)
            patch.setattr(_plans, "follow", _raising)
        elif stage == "after trace":  # (the donation analysis, or the plan's check of its facts)
            patch.setattr(_plans, "donation_facts", _raising)
            patch.setattr(_plans, "_facts", _raising)
        elif stage == "in a kernel":
            real_step = _interpreter._numpy_step

            def step(prim, *args, **kwargs):
                if prim.name == "subtract":
                    raise Injected("a kernel raised")
                return real_step(prim, *args, **kwargs)

            patch.setattr(_interpreter, "_numpy_step", step)
        elif stage == "converting outputs":
            real_owned, calls = _interpreter.as_node_value, []

            def owned(value, dtype):
                calls.append(1)
                if len(calls) == 2:  # after the first output was converted
                    raise Injected("converting an output failed")
                return real_owned(value, dtype)

            patch.setattr(_interpreter, "as_node_value", owned)
        elif stage == "in compile":
            import jax

            def program(program, leaf_values):
                def fails(donated, kept, scalars):
                    raise Injected("XLA compile failed")

                return jax.jit(fails, donate_argnums=(0,) if any(program.key.donate) else ())

            patch.setattr(_program, "compiled_function", program)
        elif stage == "after the compiled run":
            patch.setattr(_metrics, "log_compiles", _raising)  # after the run, on a compile
        with pytest.raises(Injected):
            xp.lazy_barrier()
    if stage == "after the compiled run":  # the outputs were handed over before the fault
        assert state["w"]._data.value is not None
    else:
        assert state["w"]._data.value is None and state["other"]._data.value is None
    _assert_intact(state)


@pytest.mark.parametrize("stage", ["in the run", "during the hand-over"])
def test_keyboard_interrupt_during_a_barrier_loses_nothing(stage, tier, monkeypatch):
    """Ctrl-C while a compiled program runs with donated inputs used to lose them: Python
    raised KeyboardInterrupt as the run returned, before its outputs were handed over."""
    _needs_default_sigint()
    state = _step_state()
    old_w = state["w"]._data.value  # the buffer a compiled run is given to reuse
    _step(state)
    with monkeypatch.context() as patch:
        if stage == "in the run":
            if tier == "compiled":
                real_program = _program.compiled_function

                def program(program, leaf_values):
                    jitted = real_program(program, leaf_values)

                    def run(*args):
                        out = jitted(*args)
                        _interrupt()
                        return out

                    return run

                patch.setattr(_program, "compiled_function", program)
            else:
                real_step = _interpreter._numpy_step

                def step(prim, *args, **kwargs):
                    if prim.name == "subtract":
                        _interrupt()
                    return real_step(prim, *args, **kwargs)

                patch.setattr(_interpreter, "_numpy_step", step)
        else:
            real_adopt = _executor._adopt

            def adopt(targets, results):
                _interrupt()
                real_adopt(targets, results)

            patch.setattr(_executor, "_adopt", adopt)
        with pytest.raises(KeyboardInterrupt):
            xp.lazy_barrier()
    if tier == "compiled":
        # donated inputs were consumed: the outputs had to be handed over despite Ctrl-C
        assert old_w.is_deleted()
        assert state["w"]._data.value is not None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    _assert_intact(state)


def _warm_step_program(override_settings):
    """A state whose step program is compiled and cached (the runs that follow are jax's C++
    fast path), and the state stepped once more, pending."""
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    state = _step_state()
    for _ in range(2):
        _step(state)
        xp.lazy_barrier()
    state["w"] = xp.asarray(np.arange(64.0).reshape(8, 8), device=LAZY) * 1.0
    xp.lazy_barrier()
    old_w = state["w"]._data.value  # the buffer the next run is given to reuse
    _step(state)
    return state, old_w


def test_a_cached_donating_run_enters_no_python_code(monkeypatch, override_settings):
    """What makes the hand-over after a cached run safe from Ctrl-C without a signal handler
    (see _run_and_adopt): from the moment jax takes the donated buffers to the moment the
    result is stored, no Python bytecode runs, so no KeyboardInterrupt can be raised."""
    state, _ = _warm_step_program(override_settings)
    entered: list[str] = []
    real = _executor._run_and_adopt

    def watched(targets, donating, run, *args, **kwargs):
        assert donating and not kwargs.get("first")

        def profiled(*a):
            sys.setprofile(lambda frame, event, arg: entered.append(frame.f_code.co_name) if event == "call" else None)
            try:
                return run(*a)
            finally:
                sys.setprofile(None)

        real(targets, donating, profiled, *args, **kwargs)

    monkeypatch.setattr(_executor, "_run_and_adopt", watched)
    xp.lazy_barrier()
    assert entered == []
    _assert_intact(state)


def test_keyboard_interrupt_in_the_hand_over_of_a_cached_run_loses_nothing(monkeypatch, override_settings):
    _needs_default_sigint()
    state, old_w = _warm_step_program(override_settings)
    real_adopt, interrupted = _executor._adopt, []

    def adopt(targets, results):
        if not interrupted:
            interrupted.append(1)
            _interrupt()  # raised here, after the run, before any target has its value
        real_adopt(targets, results)

    monkeypatch.setattr(_executor, "_adopt", adopt)
    with pytest.raises(KeyboardInterrupt):
        xp.lazy_barrier()
    assert interrupted
    assert old_w.is_deleted()  # the inputs were consumed: the outputs had to be kept
    _assert_intact(state)


def test_a_failed_compile_is_tried_again(monkeypatch, override_settings):
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    monkeypatch.setattr(_program.RUNTIME, "programs", _lru.LRU("test programs", 256, register=False))
    state = _step_state()
    _step(state)
    with monkeypatch.context() as patch:
        real_program = _program.compiled_function
        failures = []

        def program(program, leaf_values):
            if not failures:
                failures.append(1)
                raise Injected("compile failed")
            return real_program(program, leaf_values)

        patch.setattr(_program, "compiled_function", program)
        with pytest.raises(Injected):
            xp.lazy_barrier()
        before = xp.metrics()
        _assert_intact(state)
        assert (xp.metrics() - before).compile_count >= 1  # compiled, not a cached failure


# 2**58 float64 elements: 2 EiB, more than any machine's address space, so the allocation
# fails at once without touching memory (NumPy's malloc, XLA's allocator, or the check that a
# compiled program with donated inputs fits before it runs); it can never make a machine swap.
HUGE = (2**29, 2**29)
HUGE_BYTES = r"2,305,843,009,213,69\d,\d{3} bytes \(2\.0 EiB\)"


def test_out_of_memory_is_a_memory_error_on_both_tiers_and_loses_nothing(tier):
    state = _step_state()
    _step(state)
    huge = xp.zeros(HUGE, device=LAZY) + 1.0
    with pytest.raises(MemoryError, match=f"out of memory running a lazy graph of [0-9]+ operations.*{HUGE_BYTES}"):
        xp.lazy_barrier()
    assert huge._data.value is None
    with pytest.raises(MemoryError, match=HUGE_BYTES):  # pending still: raises again on read
        np.asarray(huge)
    del huge
    _assert_intact(state)


def test_out_of_memory_at_a_read_is_the_same_memory_error_on_both_tiers(tier):
    x = xp.zeros(HUGE, device=LAZY)
    with pytest.raises(MemoryError, match=f"lazy graph of [0-9]+ operations.*{HUGE_BYTES}"):
        float(x[0, 0])


def test_the_graph_size_warning_names_the_users_line(override_settings):
    override_settings(X10ARRAY_GRAPH_LIMIT=50)
    x = xp.ones(3, device=LAZY)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(60):
            x = x + 1.0
        line = sys._getframe().f_lineno - 1
    guard = [w for w in caught if "grew past" in str(w.message)]
    assert guard, "the graph-size guard did not warn"
    assert guard[0].filename == __file__ and guard[0].lineno == line
    assert f"recorded at {__file__}:{line}" in str(guard[0].message)
    np.testing.assert_array_equal(np.asarray(x), [61.0, 61.0, 61.0])
