"""A compiled slice write whose value reads the written array at other positions is a select of
the whole array, not a scatter (_backends/lazy/lowering.select_writes, _api/indexing's
`_select_write`): which writes take it, and that it writes the bits NumPy's setitem writes for
every box of static slices, whatever the dtype and the values."""

from __future__ import annotations

import numpy as np
import pytest
from _util import forget_programs

import x10array as xp
import x10array.debug as dbg
from x10array._backends import lazy as _lazy
from x10array._backends.lazy import lowering as _compiled_tier
from x10array._core.policies import SLICE_BOXES

LAZY = xp.Device("cpu", 0, "xla")


def _lowering(arrays) -> str:
    text = dbg.stablehlo(arrays)
    has_select, has_scatter = "stablehlo.select" in text, "scatter" in text or "dynamic_update_slice" in text
    assert has_select != has_scatter, text  # (one write: one of the two)
    return "select" if has_select else "scatter"


def _laplacian(u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]


def test_a_write_of_neighbours_fused_into_it_is_a_select_and_other_writes_stay_scatters():
    u0 = np.zeros((64, 64))
    u0[16:32, 16:32] = 1.0

    def heat_step(u):  # (the step in a function: its laplacian is dead at the barrier, so fused)
        lap = _laplacian(u)
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap

    u = xp.asarray(u0, device=LAZY)
    heat_step(u)
    assert _lowering(u) == "select"

    u = xp.asarray(u0, device=LAZY)
    lap = _laplacian(u)  # (kept: an output, stored before the write reads it)
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap
    assert _lowering([u, lap]) == "scatter"

    u = xp.asarray(u0, device=LAZY)
    u[1:] = u[:-1] * 2.0  # (a shifted copy of most of the array)
    assert _lowering(u) == "select"

    u = xp.asarray(u0, device=LAZY)
    u[1:-1, 1:-1] = u[1:-1, 1:-1] * 0.999  # (read only where written: in place)
    assert _lowering(u) == "scatter"

    u = xp.asarray(u0, device=LAZY)
    u[:3] = u[3:6] + 1.0  # (a few rows of the array: less than half of it)
    assert _lowering(u) == "scatter"

    u = xp.asarray(u0, device=LAZY)
    u[1:-1] = 2.0  # (the value does not read the array)
    assert _lowering(u) == "scatter"

    u = xp.asarray(u0, device=LAZY)
    n = xp.asarray(np.zeros(()), device=LAZY) + 1.0
    # (Python computes the value first, then the index, whose read runs the device's pending
    # graph, the value's with it: the write reads a computed value, as `x[1:] = 2.0` does)
    u[int(np.asarray(n)) :, :] = u[:-1, :] * 2.0
    assert _lowering(u) == "scatter"


# (index, value shape) pairs over x of shape (7, 9), (4, 5, 6) or (11,): steps, new axes,
# broadcast values, a box of nothing
CASES = [
    ((7, 9), (slice(1, -1), slice(1, -1)), (5, 7)),
    ((7, 9), (slice(None, None, 2), slice(1, 8, 3)), (4, 3)),
    ((7, 9), (slice(2, 5),), (9,)),
    ((7, 9), (slice(None), slice(3, 4)), ()),
    ((7, 9), (None, slice(1, 3), slice(None, None, 4)), (1, 2, 3)),
    ((7, 9), (slice(3, 3),), (0, 9)),
    ((7, 9), (slice(0, 7), slice(1, 9)), (7, 8)),
    ((4, 5, 6), (slice(1, 3), slice(None, None, 2), slice(2, None)), (2, 3, 4)),
    ((4, 5, 6), (Ellipsis, slice(1, 5, 2)), (5, 2)),
    ((11,), (slice(2, 9, 2),), (4,)),
    ((11,), (slice(None, None, -1),), (11,)),
    ((11,), (slice(2, None, -1),), (3,)),
    ((7, 9), (slice(5, 0, -2), slice(1, -1)), (3, 7)),
    ((4, 5, 6), (slice(None), None, slice(4, 0, -3), slice(None, None, -1)), (4, 1, 2, 6)),
]


def _values(shape, dtype, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int32":
        return rng.integers(-(2**31), 2**31 - 1, shape, dtype=np.int32)
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    if flat.size >= 4:
        real = np.finfo(dtype).tiny if "float" in dtype else np.finfo(np.float32).tiny
        flat[:4] = [np.nan, -0.0, real / 4, -np.inf]  # (kept bit for bit: a NaN's payload too)
    return x


@pytest.fixture
def every_box_a_select(monkeypatch):
    """Every compiled write of a box of static slices (of either sign of step) lowered as a
    select, whatever its value."""
    forget_programs()
    writes = SLICE_BOXES.rules

    def every(ops, outputs):
        return frozenset(i for i, (prim, _, _) in enumerate(ops) if prim in writes and prim.in_place)

    monkeypatch.setattr(_compiled_tier, "select_writes", every)
    monkeypatch.setattr(_compiled_tier, "_selects_now", lambda *args: True)
    yield
    forget_programs()


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex64", "int32", "bool"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_select_write_writes_numpys_bits(case, dtype, every_box_a_select):
    shape, index, value_shape = CASES[case]
    rng = np.random.default_rng(case)
    x, v = _values(shape, dtype, rng), _values(value_shape, dtype, rng)
    want = x.copy()
    want[index] = v
    a = xp.asarray(x, device=LAZY)
    with _lazy.compile_threshold(1):
        a[index] = xp.asarray(v, device=LAZY)
        if 0 < want[index].size < want.size:  # (a write of everything is the value alone)
            assert _lowering(a) == "select"
        got = np.asarray(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), f"{index} of {shape} {dtype}: {got} vs {want}"
