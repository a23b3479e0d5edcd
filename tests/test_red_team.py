"""Reproductions a red team found, each a test on every tier where it applies: the eager
device, the lazy device as written (a cold graph, interpreted), the lazy device with every
graph compiled, and under `x10array.compile` (recorded once, then replayed).

- A write whose value reads the array it writes gives NumPy's values, however XLA fuses the
  write (a compiled program must not update the array in place while the value still reads it).
- Ctrl-C during a large interpreted run, or during the first lazy read (which imports jax),
  leaves the lazy device usable: nothing hangs, and pending arrays are still computed.
- A replay of `x10array.compile` returns what the recording call returned: the argument
  itself, or a view of it that writes reach it through.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _util import forget_programs

import x10array as xp

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0)
TIERS = ("eager", "interpreted", "compiled", "captured")
ROOT = Path(__file__).resolve().parents[1]


def _on_tier(tier, fn, *arrays, override_settings):
    """fn(*arrays) (NumPy arrays, copied onto the tier's device) on `tier`, as a NumPy array;
    under `captured`, the result of the third call (two replays of the recording)."""
    if tier == "eager":
        return np.asarray(fn(*[xp.asarray(a.copy(), device=EAGER) for a in arrays]))
    forget_programs()
    before = xp.metrics()
    if tier == "interpreted":
        got = np.asarray(fn(*[xp.asarray(a.copy(), device=LAZY) for a in arrays]))
        after = xp.metrics()
        assert after.interpreted_graphs > before.interpreted_graphs and after.compile_count == before.compile_count
        return got
    if tier == "compiled":
        override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
        got = np.asarray(fn(*[xp.asarray(a.copy(), device=LAZY) for a in arrays]))
        assert xp.metrics().compile_count > before.compile_count
        return got
    step = xp.compile(fn)
    for _ in range(3):
        got = np.asarray(step(*[xp.asarray(a.copy(), device=LAZY) for a in arrays]))
    assert xp.metrics().captured_replays >= before.captured_replays + 2
    return got


# -- a write whose value reads the array it writes -------------------------------------------


def _reversed_then_head_reversed(u):
    u = u[::-1] * 2.0
    u[:3] = u[2::-1]
    return u


def _written_reversed_then_head_reversed(u):
    u[::-1] = u * 2.0
    u[2::-1] = u[:3] + 0.0
    return u


PERMUTATION = np.random.default_rng(0).permutation(100)  # (a NumPy index: a constant of the graph)


def _gathered_then_shifted(u):
    u = u[PERMUTATION] * 2.0
    u[1:4] = u[0:3]
    return u


def _gathered_then_head_flipped(u):
    u = u[PERMUTATION] * 2.0
    u[0:3] = u.__array_namespace__().flip(u[0:3])
    return u


def _gathered_then_head_summed(u):
    u = u[PERMUTATION] * 2.0
    u[0:3] = u[0:3] - u.__array_namespace__().sum(u[0:3])
    return u


SELF_WRITES = {
    "reversed, then its head reversed": (_reversed_then_head_reversed, 100),
    "written reversed, then its head": (_written_reversed_then_head_reversed, 6),
    "gathered, then shifted": (_gathered_then_shifted, 100),
    "gathered, then its head flipped": (_gathered_then_head_flipped, 100),
    "gathered, then its head minus its sum": (_gathered_then_head_summed, 100),
}


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("case", list(SELF_WRITES))
def test_a_write_whose_value_reads_the_array_gives_numpys_values(case, tier, override_settings):
    fn, n = SELF_WRITES[case]
    x = np.arange(n, dtype=np.float64)
    want = fn(x.copy())
    got = _on_tier(tier, fn, x, override_settings=override_settings)
    np.testing.assert_array_equal(got, want)


def test_a_loop_of_self_writes_stays_right_once_the_cost_model_compiles_it():
    """With default settings the loop runs interpreted first, then compiled (once the cost
    model finds it hot, about a hundred iterations in): its values must not change there."""
    forget_programs()
    want = np.arange(2**17, dtype=np.float64)
    u = xp.asarray(want, device=LAZY)
    before = xp.metrics().compile_count
    for _ in range(150):
        want = want[::-1] * 2.0
        want[:3] = want[2::-1]
        u = u[::-1] * 2.0
        u[:3] = u[2::-1]
        xp.lazy_barrier()
    assert xp.metrics().compile_count > before  # (the loop did reach the compiled tier)
    np.testing.assert_array_equal(np.asarray(u), want)


# -- Ctrl-C ----------------------------------------------------------------------------------


def _run_script(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh Python with this checkout first on the path; a hang fails the test
    (subprocess.TimeoutExpired) rather than hanging the run."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    environ.update(X10ARRAY_COMPILE_CACHE_DIR="0", **env)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=environ, capture_output=True, text=True, timeout=60
    )


def _check(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), (
        f"exit status {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    )


def test_ctrl_c_while_the_interpreter_waits_for_its_threads_leaves_it_usable():
    """A large interpreted run (an exp over 2**20 elements) runs on two threads; Ctrl-C lands
    right after the wait for the other thread (slowed down) took its future's lock (set off
    from a profile hook, so that it lands there every time): the read raises KeyboardInterrupt,
    and the array and the next large run are still computed (no lock left held, no worker
    blocked)."""
    _check(
        _run_script(
            """
            import _thread, sys, threading, time, numpy as np
            import x10array as xp
            from x10array._backends.lazy import interpreter
            base = np.linspace(0, 1, 1 << 20)
            x = xp.asarray(base, device=xp.Device("cpu", 0, "xla"))
            threaded = []
            run_threaded = interpreter._run_block_steps_threaded
            def counted(*args):
                threaded.append(1)
                return run_threaded(*args)
            interpreter._run_block_steps_threaded = counted
            run_blocks = interpreter._run_block_steps
            def slow_worker(*args):  # (the other thread still runs when this one waits for it)
                if threading.current_thread() is not threading.main_thread():
                    time.sleep(0.2)
                return run_blocks(*args)
            interpreter._run_block_steps = slow_worker
            np.asarray(xp.exp(x * 2.0) + 1.0)  # (jax imported, the pool made)
            assert threaded, "the run did not take the threads"
            fired = []
            def profile(frame, event, arg):
                if not fired and event == "c_return" and frame.f_code.co_name == "__enter__" \\
                        and "concurrent" in frame.f_code.co_filename:
                    fired.append(1)
                    _thread.interrupt_main()
            y = xp.exp(x * 3.0) + 1.0
            sys.setprofile(profile)
            try:
                np.asarray(y)
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
            sys.setprofile(None)
            assert fired and interrupted, (fired, interrupted)
            assert xp.metrics().compile_count == 0
            np.testing.assert_allclose(np.asarray(y), np.exp(base * 3.0) + 1.0)
            np.testing.assert_allclose(np.asarray(xp.exp(x * 0.5) + 2.0), np.exp(base * 0.5) + 2.0)
            print("ok")
            """,
            X10ARRAY_COMPILE_THRESHOLD="1000000",
            X10ARRAY_INTERPRETER_THREADS="2",
        )
    )


@pytest.mark.parametrize("tier", ["interpreted", "compiled", "captured"])
def test_ctrl_c_while_the_first_read_imports_jax_loses_nothing(tier):
    """The first lazy read imports jax; Ctrl-C lands early in that import (set off from a
    profile hook at the 100th call into jax's code): the read raises KeyboardInterrupt, and
    the pending array, and later work, are still computed."""
    _check(
        _run_script(
            """
            import _thread, sys, numpy as np
            import x10array as xp
            TIER = sys.argv[1] if len(sys.argv) > 1 else None
            x = xp.asarray(np.arange(5.0), device=xp.Device("cpu", 0, "xla"))
            def f(x):
                return x * 2.0
            step = xp.compile(f)
            assert "jax" not in sys.modules, "jax was imported before the first read"
            calls = [0]
            def profile(frame, event, arg):
                if event == "call" and "jax" in frame.f_code.co_filename:
                    calls[0] += 1
                    if calls[0] == 100:
                        _thread.interrupt_main()
            sys.setprofile(profile)
            try:
                y = step(x) if TIER == "captured" else f(x)
                got = np.asarray(y)
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
            sys.setprofile(None)
            assert calls[0] >= 100 and interrupted, (calls, interrupted)
            if TIER != "captured":
                np.testing.assert_array_equal(np.asarray(y), np.arange(5.0) * 2.0)
            for _ in range(3):
                np.testing.assert_array_equal(np.asarray(step(x)), np.arange(5.0) * 2.0)
            np.testing.assert_array_equal(np.asarray(xp.exp(x * 0.0)), np.ones(5))
            print("ok")
            """.replace("sys.argv[1] if len(sys.argv) > 1 else None", repr(tier)),
            X10ARRAY_COMPILE_THRESHOLD="1" if tier == "compiled" else "2",
        )
    )


# -- x10array.compile: what a replay returns -------------------------------------------------


def _returns_the_argument(a):
    a += 1.0
    return a


def _returns_a_slice_of_it(a):
    a += 1.0
    return a[0:2]


def _returns_a_row_of_a_reshape_of_it(a):
    a += 1.0
    return a.__array_namespace__().reshape(a, (2, 2))[1]


RETURNED = {
    "the argument": _returns_the_argument,
    "a slice of it": _returns_a_slice_of_it,
    "a row of a reshape of it": _returns_a_row_of_a_reshape_of_it,
}


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("case", list(RETURNED))
def test_writes_through_a_returned_argument_or_view_reach_the_argument(case, tier, override_settings):
    """A step updates its argument in place and returns it (or a view of it); a write through
    the result reaches the argument at every call, as NumPy's does: on the recording call and
    on the replays of x10array.compile too (the argument itself returned, or a view of it)."""
    fn = RETURNED[case]
    want = np.zeros(4)
    if tier == "compiled":
        override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    forget_programs()
    before = xp.metrics().captured_replays
    a = xp.asarray(want.copy(), device=EAGER if tier == "eager" else LAZY)
    step = xp.compile(fn) if tier in ("eager", "captured") else fn
    for i in range(4):
        expected = fn(want)
        expected[0] = 100.0 - i
        got = step(a)
        got[0] = 100.0 - i
        assert (got is a) == (expected is want), f"call {i}"
        np.testing.assert_array_equal(np.asarray(a), want, err_msg=f"call {i}")
        np.testing.assert_array_equal(np.asarray(got), expected, err_msg=f"call {i}")
    if tier == "captured":
        assert xp.metrics().captured_replays == before + 3
