"""Boolean masks combined with other indices, as NumPy defines them (issue 24, 7).

The standard (2025.12) only requires a boolean array as the sole index; NumPy, JAX and PyTorch
also accept it among other indices (`x[..., mask]`, `x[mask, 0]`, `x[0, mask]`,
`x[mask, :, None]`, two masks), reading each mask as the integer arrays of its `nonzero()`,
and SciPy's ndimage relies on it. Random keys are drawn and applied to NumPy and to x10array on
the eager and the lazy device, for reading and for writing (a scalar and an array of the
selection's shape); where NumPy raises IndexError, x10array does too.
"""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp

DEVICES = {"eager": lambda: xp.Device.default, "lazy": lambda: xp.Device.default_xla}


def _random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    """Items covering the axes of `shape` in order (a mask spans one or two of them), at least
    one mask, with an ellipsis, None and integer arrays now and then."""
    items: list = []
    axis = 0
    has_mask = False
    while axis < len(shape):
        r = rng.random()
        if r < 0.35 or (not has_mask and axis == len(shape) - 1):
            span = 2 if axis + 2 <= len(shape) and rng.random() < 0.3 else 1
            items.append(rng.random(shape[axis : axis + span]) < 0.5)
            has_mask = True
            axis += span
        elif r < 0.5:
            items.append(int(rng.integers(-shape[axis], shape[axis])))
            axis += 1
        elif r < 0.6:
            items.append(rng.integers(-shape[axis], shape[axis], size=int(rng.integers(1, 3))))
            axis += 1
        elif r < 0.8:
            items.append(slice(None, None, [None, 2, -1][int(rng.integers(0, 3))]))
            axis += 1
        else:
            items.append(slice(int(rng.integers(0, shape[axis])), None))
            axis += 1
        if rng.random() < 0.15:
            items.append(None)
    if rng.random() < 0.3:  # drop some trailing items behind an ellipsis
        cut = int(rng.integers(0, len(items) + 1))
        if not any(isinstance(i, np.ndarray) and i.dtype == bool for i in items[:cut]):
            items.insert(0, Ellipsis)
            items = [Ellipsis] + items[cut:] if any(isinstance(i, np.ndarray) for i in items[cut:]) else items
            items = [i for n, i in enumerate(items) if i is not Ellipsis or n == 0]
    if rng.random() < 0.1 and items:  # a shape mismatch: NumPy's IndexError
        for n, i in enumerate(items):
            if isinstance(i, np.ndarray) and i.dtype == bool and i.ndim == 1:
                items[n] = np.concatenate([i, [True]])
                break
    return tuple(items)


def _to_x10(key: tuple, device) -> tuple:
    return tuple(xp.asarray(i, device=device) if isinstance(i, np.ndarray) else i for i in key)


def _check(seed: int, device) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 4))))
    a = rng.integers(-9, 10, size=shape).astype(np.float64)
    x = xp.asarray(a, copy=True, device=device)
    key = _random_key(rng, shape)
    xkey = _to_x10(key, device)
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(IndexError, match="^__getitem__: "):
            x[xkey]
        with pytest.raises(IndexError, match="^__setitem__: "):
            x[xkey] = 1.0
        return
    got = x[xkey]
    assert got.shape == expected.shape, key
    np.testing.assert_array_equal(np.asarray(got), expected, err_msg=str(key))
    # writes: a scalar, then an array of the selection's shape (duplicate positions from
    # integer arrays get the same value from both, so the result is defined)
    b = a.copy()
    b[key] = -100.0
    x[xkey] = -100.0
    np.testing.assert_array_equal(np.asarray(x), b, err_msg=str(key))
    value = np.full(expected.shape, 55.0)
    b[key] = value
    x[xkey] = xp.asarray(value, device=device)
    np.testing.assert_array_equal(np.asarray(x), b, err_msg=str(key))
    # a read through a mask is a copy (as NumPy's advanced indexing)
    got[...] = 0.0
    np.testing.assert_array_equal(np.asarray(x), b)


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("seed", range(60))
def test_random_mask_keys_match_numpy(seed, device):
    _check(seed, DEVICES[device]())


CASES = [
    (..., np.array([True, False, True, True])),
    (np.array([False, True]), 0),
    (0, np.array([True, False, True])),
    (np.array([False, True]), slice(None), None),
    (slice(None), np.arange(12).reshape(3, 4) % 3 == 0),
    (np.array([True, True]), np.array([True, False, True])),
    (None, np.array([False, True]), ..., 1),
    (np.array([True, False]), ..., np.array([True, False, True, True])),
    (np.array([True, False]), np.array([0, 2])),
]


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_issues_forms(case, device):
    """`x[..., mask]`, `x[mask, 0]`, `x[0, mask]`, `x[mask, :, None]`, a 2-D mask after a
    slice, two masks, ... on a (2, 3, 4) array."""
    key = CASES[case]
    d = DEVICES[device]()
    a = np.arange(24.0).reshape(2, 3, 4)
    x = xp.asarray(a, copy=True, device=d)
    xkey = _to_x10(key, d)
    np.testing.assert_array_equal(np.asarray(x[xkey]), a[key])
    a[key] += 0.5
    x[xkey] += 0.5
    np.testing.assert_array_equal(np.asarray(x), a)


ZERO_D_CASES = [
    (..., True),
    (True, np.array([0, 1])),
    (0, True),
    (slice(None), False),
    (np.array([1, 0]), True),
    (True, slice(None), np.array([0, 2])),
    (None, True, 1),
    (True, True, ...),
    (np.True_, 0),
    ("mask", 0),
    (False, np.array([True, False])),
]


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("case", range(len(ZERO_D_CASES)))
def test_zero_dimensional_booleans_among_other_indices(case, device):
    """NumPy reads a 0-d boolean beside other indices as a new axis of length 1 indexed by
    `[0]` (True) or `[]` (False), joining the index arrays' broadcast (SciPy's ndimage
    `vectorized_filter` writes `input[..., True]`); read and written, on a (2, 3, 4) array."""
    key = ZERO_D_CASES[case]
    d = DEVICES[device]()
    key = tuple(np.asarray(True) if isinstance(k, str) else k for k in key)
    a = np.arange(24.0).reshape(2, 3, 4)
    x = xp.asarray(a, copy=True, device=d)
    xkey = _to_x10(key, d)
    np.testing.assert_array_equal(np.asarray(x[xkey]), a[key])
    a[key] = -1.0
    x[xkey] = -1.0
    np.testing.assert_array_equal(np.asarray(x), a)
