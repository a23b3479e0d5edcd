"""The fast path of basic indexing (`_api.indexing._basic`: keys of Python ints, slices of
Python ints, ..., None, cached by shape and key structure) agrees with the general path
(`_parse`) and with NumPy: the same description and operands, the same values, the same
writes, the same errors, on the eager and the lazy device, on a first call (the entry made)
and on a repeated one (the entry reused)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array._api import indexing

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = [pytest.param(EAGER, id="eager"), pytest.param(LAZY, id="lazy")]
SHAPES = [(), (0,), (5,), (4, 0), (3, 4), (2, 3, 4)]
BOUNDS = [None, 0, 1, 2, -1, -2, 7, -7, 100, -100]
STEPS = [None, 1, 2, 3, -1, -2, -3, 50]


def _keys(shape: tuple[int, ...], count: int, seed: int) -> list[Any]:
    """Basic keys for `shape`: slices (negative steps, out-of-range bounds), ints (some
    out of range), Ellipsis, None, as tuples or alone; some have too many indices."""
    rng = random.Random(seed)
    keys: list[Any] = [(), Ellipsis, None, (Ellipsis, None), (None, Ellipsis, None)]
    for _ in range(count):
        items: list[Any] = []
        for _ in range(rng.randint(0, len(shape) + 1)):
            r = rng.random()
            if r < 0.5:
                items.append(slice(rng.choice(BOUNDS), rng.choice(BOUNDS), rng.choice(STEPS)))
            elif r < 0.75:
                items.append(rng.randint(-6, 6))
            elif r < 0.85:
                items.append(None)
            else:
                items.append(Ellipsis)
        keys.append(items[0] if len(items) == 1 and rng.random() < 0.5 else tuple(items))
    return keys


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except (IndexError, TypeError, ValueError) as e:
        return type(e).__name__, str(e)


CASES = [(shape, key) for i, shape in enumerate(SHAPES) for key in _keys(shape, 40, i)]


@pytest.mark.parametrize("device", DEVICES)
def test_fast_path_agrees_with_the_general_path(device: xp.Device) -> None:
    for shape, key in CASES:
        x = xp.reshape(xp.arange(int(np.prod(shape)), dtype=xp.float64, device=device), shape)
        general = _outcome(indexing._parse, x, key, "__getitem__")
        for _ in range(2):  # the entry made, then reused
            fast = _outcome(indexing._basic, x, key, "__getitem__")
            if general[0] != "ok":
                # the general path's error, or None (an int out of range, its structure's
                # entry made before: the caller then takes the general path)
                assert fast == general or (fast == ("ok", None) and "out of bounds" in general[1]), (shape, key)
                continue
            assert fast[0] == "ok", (shape, key)
            if fast[1] is None:  # an int out of range: the general path says so
                continue
            entry, operands = fast[1]
            assert (entry.desc, operands) == (general[1].desc, general[1].operands), (shape, key)


@pytest.mark.parametrize("device", DEVICES)
def test_fast_path_reads_and_writes_as_numpy(device: xp.Device) -> None:
    for shape, key in CASES:
        base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        expected = _outcome(lambda b, k: b[k].copy(), base, key)
        for _ in range(2):
            x = xp.asarray(base, device=device)
            got = _outcome(lambda a, k: np.asarray(a[k]), x, key)
            if expected[0] != "ok":
                assert got[0] == expected[0], (shape, key, got)
                continue
            assert got[0] == "ok", (shape, key, got)
            assert got[1].shape == expected[1].shape and np.array_equal(got[1], expected[1]), (shape, key)
            # a write of a scalar, then of an array of the selection's shape
            ref = base.copy()
            ref[key] = -1.0
            x[key] = -1.0
            np.testing.assert_array_equal(np.asarray(x), ref, err_msg=str((shape, key)))
            value = np.arange(expected[1].size, dtype=np.float64).reshape(expected[1].shape) + 100
            ref[key] = value
            x[key] = xp.asarray(value, device=device)
            np.testing.assert_array_equal(np.asarray(x), ref, err_msg=str((shape, key)))


@pytest.mark.parametrize("device", DEVICES)
def test_fast_path_errors_name_the_function(device: xp.Device) -> None:
    """A bad key gives the general path's error on a first and a repeated call: an int out
    of range (its entry cached by an in-range call), too many indices, a zero step."""
    x = xp.reshape(xp.arange(12, dtype=xp.float64, device=device), (3, 4))
    x[1, 2]  # the entry of (int, int) on (3, 4)
    bad = [((3, 0), IndexError), ((0, -5), IndexError), ((0, 0, 0), IndexError), (slice(0, 2, 0), ValueError)]
    for key, error in bad:
        for _ in range(2):
            with pytest.raises(error) as fast:
                x[key]
            general_key = tuple(np.int64(k) if type(k) is int else k for k in key) if type(key) is tuple else key
            with pytest.raises(error) as general:
                x[general_key]  # (NumPy ints: the general path)
            assert str(fast.value) == str(general.value) and "__getitem__" in str(fast.value)
            with pytest.raises(error, match="__setitem__"):
                x[key] = 1.0


@pytest.mark.parametrize("device", DEVICES)
def test_fast_path_views_see_writes(device: xp.Device) -> None:
    """A view made through the fast path is registered: writes reach it both ways."""
    for _ in range(2):
        x = xp.zeros((4, 5), dtype=xp.float64, device=device)
        v = x[1:-1, ::-2]
        x[2, :] = 7.0
        assert np.asarray(v)[1].tolist() == [7.0, 7.0, 7.0]
        v[0, 0] = 3.0
        assert float(x[1, 4]) == 3.0
        r = x[1]  # a row: a view
        r[...] = 9.0
        assert np.asarray(x)[1].tolist() == [9.0] * 5


def test_cache_stays_bounded() -> None:
    x = xp.arange(10, dtype=xp.float64)
    for a, b in itertools.product(range(-70, 0), range(70)):
        x[a:b]
    assert len(indexing._BASIC) <= indexing._BASIC_LIMIT
