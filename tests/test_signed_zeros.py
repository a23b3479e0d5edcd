"""The differential fuzzer's signed-zero findings on the tiers that run x10array's XLA
lowerings (eager XLA kernels, lazy compiled): the zero that min and max return, and
floor_divide's signed zeros and their min and max. The same checks as test_numerics.py runs
on the NumPy-kernel tiers, kept apart because they are ~12 s of XLA compiles on a 2-core
machine whose results NumPy's kernel dispatch does not produce (test_numerics.py is run under
NumPy's other dispatch at every stop, within 30 s); `.ci/run` runs this file under that
dispatch and with XLA capped at AVX2, as it runs test_numerics.py.
"""

from __future__ import annotations

import pytest
from test_numerics import XLA_TIERS, check_floor_divide_signed_zeros_and_their_min, check_min_and_max_order_signed_zeros


@pytest.mark.parametrize("tier", XLA_TIERS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_min_and_max_order_signed_zeros(tier, dtype):
    check_min_and_max_order_signed_zeros(tier, dtype)


@pytest.mark.parametrize("tier", XLA_TIERS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_signed_zeros_and_their_min(tier, dtype):
    check_floor_divide_signed_zeros_and_their_min(tier, dtype)
