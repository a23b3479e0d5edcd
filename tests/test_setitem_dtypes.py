"""Which values `x[key] = value` stores, by dtype (issue 24, 6).

The standard (2025.12, `array.__setitem__`) promotes `value` to `x`'s dtype and leaves every
other combination implementation-defined; mixing a Python float with an integer array is
implementation-defined too. x10array stores, cast as `astype` casts: values that promote to
the array's dtype, values of the same kind (float64 into float32, int64 into int8, as NumPy,
JAX and PyTorch), real floating-point values into integer arrays (NumPy's truncation:
array-api-extra's `at(x, i).set(1.1)` / `.min(1.1)` and SciPy rely on it); it refuses complex
into real and numbers into bool (TypeError), and NaN, infinity or an out-of-range Python float
into integers (ValueError / OverflowError), rather than storing a garbage number.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import x10array as xp

NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
]  # fmt: skip
RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
DEVICES = {"eager": lambda: xp.Device.default, "lazy": lambda: xp.Device.default_xla}


def _stored(target: str, value: str) -> bool:
    t, v = RANK[np.dtype(target).kind], RANK[np.dtype(value).kind]
    return v <= t or (v == 2 and t == 1)


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("target,value", list(itertools.product(NAMES, NAMES)))
def test_array_values_of_every_dtype(target, value, device):
    d = DEVICES[device]()
    source = np.asarray([0, 1, 3, 7, 100], dtype=value)
    x = xp.zeros((2, 5), dtype=getattr(xp, target), device=d)
    v = xp.asarray(source, device=d)
    if not _stored(target, value):
        with pytest.raises(TypeError, match="^__setitem__: a value of dtype"):
            x[1, :] = v
        assert not np.asarray(x).any()  # nothing written
        return
    x[1, :] = v
    x[0, 1:3] = v[3:]  # a slice of a value, too
    expected = np.zeros((2, 5), dtype=target)
    expected[1, :] = np.asarray(xp.astype(v, getattr(xp, target)))
    expected[0, 1:3] = expected[1, 3:]
    got = np.asarray(x)
    assert got.dtype == np.dtype(target)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_python_floats_into_integer_arrays_truncate(device):
    d = DEVICES[device]()
    x = xp.asarray([2, 4, 6, 8], dtype=xp.int16, device=d)
    x[0] = 1.9
    x[1:3] = -2.7
    x[xp.asarray([False, False, False, True], device=d)] = 0.5
    assert np.asarray(x).tolist() == [1, -2, -2, 0]
    assert x.dtype == xp.int16
    for bad, error in [(float("nan"), ValueError), (float("inf"), ValueError), (1e10, OverflowError)]:
        with pytest.raises(error, match="^__setitem__: "):
            x[0] = bad
    u = xp.asarray([5, 5], dtype=xp.uint8, device=d)
    with pytest.raises(OverflowError, match="^__setitem__: the Python float -1.5 does not fit in uint8"):
        u[0] = -1.5
    u[0] = -0.5  # truncated to 0, as NumPy
    assert np.asarray(u).tolist() == [0, 5]


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_other_python_scalars_follow_the_standard(device):
    """The standard's scalar rules (a bool into bool arrays, an int in range into integer
    and floating arrays, a complex into complex arrays)."""
    d = DEVICES[device]()
    b = xp.zeros(2, dtype=xp.bool, device=d)
    f = xp.zeros(2, dtype=xp.float32, device=d)
    i = xp.zeros(2, dtype=xp.int8, device=d)
    for x, value in [(b, 1), (b, 1.0), (i, True), (f, 1j), (i, 1j)]:
        with pytest.raises(TypeError, match="^__setitem__: "):
            x[0] = value
    with pytest.raises(OverflowError, match="^__setitem__: "):
        i[0] = 128
    f[0] = 3
    i[1] = -128
    assert np.asarray(f).tolist() == [3.0, 0.0] and np.asarray(i).tolist() == [0, -128]


def test_array_api_extra_at_with_an_incompatible_dtype():
    """array-api-extra's test_incompatible_dtype: `at(x, i).set/min/max(1.1)` on an integer
    array keeps its dtype (its 12 failures on x10array before)."""
    xpx = pytest.importorskip("array_api_extra")
    x = xp.asarray([2, 4])
    for idx in (slice(None), xp.asarray([True, False])):
        assert np.asarray(xpx.at(x, idx).set(1.1, copy=True)).tolist() in ([1, 1], [1, 4])
        z = xpx.at(x, idx).min(1.1, copy=True)
        assert z.dtype == x.dtype and np.asarray(z)[0] == 1
        z = xpx.at(x, idx).max(1.1, copy=True)
        assert z.dtype == x.dtype and np.asarray(z).tolist() == [2, 4]
