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
