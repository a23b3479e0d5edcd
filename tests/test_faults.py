"""Faults on the lazy device: a barrier or a read that fails (an exception, KeyboardInterrupt,
out of memory) loses nothing. Pending arrays stay pending (and registered for the next
barrier), materialized arrays keep their values, and a donated buffer is consumed only by a
run whose outputs were handed over. Faults are injected by replacing internal functions of
`x10array._lazy` at each stage of a barrier, on both tiers."""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp

LAZY = xp.Device("cpu", 0, "xla")


def test_a_failed_barrier_keeps_the_other_pending_arrays():
    """Issue 13, 3: the live list was cleared before the graph ran, so `good` was stranded.
    (The bad index raises IndexError: today from NumPy, at the barrier; with a checked index,
    at the barrier or at the read.)"""
    x = xp.asarray(np.arange(5.0), device=LAZY)
    good = x + 1.0
    bad = x[xp.asarray(np.array([7]), device=LAZY)]
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
