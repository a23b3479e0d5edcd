"""Indexing: `__getitem__` / `__setitem__` give NumPy's results, the same with the NumPy and
the XLA (jax) eager CPU kernels, for every index kind of the standard (ints, slices, ...,
None, integer arrays, boolean masks) and the NumPy semantics we allow beyond it (integer
arrays mixed with slices, NumPy index arrays, missing trailing indices).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import x10array as xp

BASE = np.arange(60, dtype=np.float64).reshape(3, 4, 5)


class Arr:
    """An index array in a test key: a NumPy array for the reference, x10array for us."""

    def __init__(self, values: Any, dtype: Any = None) -> None:
        self.values = np.asarray(values, dtype=dtype)


def ia(*values: int, dtype: str = "int64") -> Arr:
    return Arr(values, dtype)


def to_key(key: Any, as_numpy: bool) -> Any:
    def one(k: Any) -> Any:
        if isinstance(k, Arr):
            return k.values if as_numpy else xp.asarray(k.values)
        return k

    return tuple(one(k) for k in key) if type(key) is tuple else one(key)


GET_KEYS = {
    "int": 1,
    "negative-int": -1,
    "ints": (2, -1, 0),
    "slice": slice(1, None),
    "clamped-slice": (slice(-100, 100), slice(2, 99), slice(None)),
    "negative-step": (slice(None, None, -1), slice(3, 0, -2), slice(-1, -100, -3)),
    "empty-slice": (slice(2, 1), 0, slice(None)),
    "ellipsis": (Ellipsis, 1),
    "ellipsis-middle": (0, Ellipsis, 2),
    "ellipsis-empty": (0, 1, Ellipsis, 2),
    "none": (None, 0, None, slice(None), 1, None),
    "implicit-trailing": (1,),
    "empty-tuple": (),
    "int-arrays": (ia(0, 2, 1), ia(1, 1, 3), ia(0, 4, -1)),
    "int-arrays-broadcast": (ia(0, 2), 1, ia(4)),
    "int-arrays-2d": (ia(0, 2), ia(3, 0), slice(1, 3)),
    "int-array-and-slice": (slice(None), ia(3, 0, 3), slice(None, None, 2)),
    "separated-int-arrays": (ia(0, 2), slice(1, 3), ia(4, 0)),
    "0d-int-array": (Arr(np.asarray(2)), slice(None), 1),
    "uint8-index": (ia(2, 0, dtype="uint8"), 0, 0),
    "uint64-index": (ia(1, dtype="uint64"), ia(3, dtype="uint64"), 0),
    "mask-full": Arr((BASE % 3) == 0),
    "mask-leading": Arr(np.array([True, False, True])),
    "mask-2d": Arr(BASE[..., 0] > 22),
    "mask-all-false": Arr(np.zeros((3, 4), dtype=bool)),
    "mask-zero-dim": Arr(np.zeros((0, 4), dtype=bool)),
    "mask-0d-true": Arr(np.asarray(True)),
    "mask-0d-false": Arr(np.asarray(False)),
    "python-true": True,
    "python-false": False,
}


def numpy_getitem(key: Any) -> np.ndarray:
    k = to_key(key, as_numpy=True)
    if isinstance(k, np.ndarray) and k.dtype == bool and k.size == 0:
        return np.zeros((0,) + BASE.shape[k.ndim :])  # the standard: empty, not an error
    return np.asarray(BASE[k])


@pytest.mark.parametrize("name", list(GET_KEYS))
def test_getitem_matches_numpy(name: str, kernels: str) -> None:
    key = GET_KEYS[name]
    x = xp.asarray(BASE)
    out = x[to_key(key, as_numpy=False)]
    expected = numpy_getitem(key)
    assert out.dtype == xp.float64
    assert out.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_numpy_index_arrays(kernels: str) -> None:
    x = xp.asarray(BASE)
    out = x[np.array([2, 0]), np.array([1, 1]), 0]
    np.testing.assert_array_equal(np.asarray(out), BASE[[2, 0], [1, 1], 0])
    out = x[BASE > 30.5]
    np.testing.assert_array_equal(np.asarray(out), BASE[BASE > 30.5])


SET_CASES = {
    "int": (1, 7.0),
    "element": ((2, -1, 0), -3.5),
    "slice-broadcast-row": ((slice(1, 3), Ellipsis), np.arange(5.0)),
    "negative-step": ((slice(None, None, -2), 0, slice(None)), np.array([[1.0], [2.0]])),
    "none": ((None, 0, 1, slice(None)), np.arange(5.0)),
    "int-arrays": ((ia(0, 2), ia(1, 3), 4), np.array([10.0, 20.0])),
    "int-array-scalar": ((ia(0, -1), slice(None), 0), 9.0),
    "int-array-rows": ((ia(2, 0), slice(1, 3), slice(None)), np.full((2, 2, 5), -1.0)),
    "mask-scalar": (Arr(BASE > 40), 0.0),
    "mask-rows": (Arr(np.array([True, False, True])), np.arange(20.0).reshape(4, 5)),
    "mask-per-element": (Arr(BASE[..., 0] > 22), np.arange(7.0)[:, None] * np.ones(5)),
    "mask-per-element-1": (Arr(BASE[..., 0] == 25), np.arange(5.0)[None]),
    "mask-0d": (Arr(np.asarray(True)), 1.5),
    "mask-all-false": (Arr(np.zeros((3, 4), dtype=bool)), 3.0),
    "mask-zero-dim": (Arr(np.zeros((0,), dtype=bool)), 3.0),
    "python-true": (True, 2.0),
    "python-false": (False, 2.0),
}


@pytest.mark.parametrize("name", list(SET_CASES))
def test_setitem_matches_numpy(name: str, kernels: str) -> None:
    key, value = SET_CASES[name]
    x = xp.asarray(BASE.copy())
    before = xp.asarray(x, copy=True)  # an earlier result keeps the old values
    view = x[...]  # a view sees the write, as in NumPy
    nkey = to_key(key, as_numpy=True)
    expected = BASE.copy()
    if not (isinstance(nkey, np.ndarray) and nkey.size == 0):
        expected[nkey] = value
    x[to_key(key, as_numpy=False)] = xp.asarray(value) if isinstance(value, np.ndarray) else value
    assert x.dtype == xp.float64 and x.shape == BASE.shape
    np.testing.assert_array_equal(np.asarray(x), expected)
    np.testing.assert_array_equal(np.asarray(before), BASE)
    np.testing.assert_array_equal(np.asarray(view), expected)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "complex64"])
def test_setitem_dtypes(dtype: str, kernels: str) -> None:
    x = xp.zeros((4,), dtype=getattr(xp, dtype))
    scalar = {"bool": True, "uint64": 2**64 - 1, "int8": -128, "complex64": 1 - 2j}.get(dtype, 0.5)
    x[1] = scalar
    x[xp.asarray([3])] = scalar
    expected = np.zeros(4, dtype=dtype)
    expected[[1, 3]] = scalar
    np.testing.assert_array_equal(np.asarray(x), expected)
    assert x.dtype == getattr(xp, dtype)


def test_setitem_promotes_value_dtype(kernels: str) -> None:
    x = xp.zeros((3,), dtype=xp.float64)
    x[:] = xp.asarray([1, 2, 3], dtype=xp.float32)
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])
    # beyond promotion, a value of the same kind or a real one into integers is cast, as
    # astype (tests/test_setitem_dtypes.py); complex into real is refused
    y = xp.zeros((3,), dtype=xp.float32)
    y[:] = xp.asarray([1.0, 2.0, 3.0])
    assert y.dtype == xp.float32 and np.asarray(y).tolist() == [1.0, 2.0, 3.0]
    z = xp.zeros((3,), dtype=xp.int64)
    z[0] = xp.asarray(-1.5)
    assert np.asarray(z).tolist() == [-1, 0, 0]
    with pytest.raises(TypeError, match="__setitem__"):
        x[0] = xp.asarray(1j)


ERRORS = [
    (IndexError, lambda x: x[3]),
    (IndexError, lambda x: x[0, 4]),
    (IndexError, lambda x: x[0, 0, 0, 0]),
    (IndexError, lambda x: x[..., 0, ...]),
    (IndexError, lambda x: x[xp.asarray([0, 3])]),
    (IndexError, lambda x: x[xp.asarray([0, 1]), xp.asarray([0, 1, 2])]),
    (IndexError, lambda x: x[xp.asarray([True, False])]),
    (IndexError, lambda x: x[xp.asarray([True, False]), 0]),  # (masks among other indices: tests/test_mask_indexing.py)
    (IndexError, lambda x: x[None, xp.asarray([True, False, True, False])]),
    (IndexError, lambda x: x[True, 0, 0, 0, 0]),  # (x[True, 0] is NumPy's new axis: tests/test_mask_indexing.py)
    (IndexError, lambda x: x[xp.zeros((3, 4, 5, 1), dtype=xp.bool)]),
    (TypeError, lambda x: x[1.0]),
    (TypeError, lambda x: x[[0, 1]]),
    (TypeError, lambda x: x[xp.asarray([0.0])]),
    (TypeError, lambda x: x[np.array([0.5])]),
    (TypeError, lambda x: x[0:1.5]),
    (ValueError, lambda x: x[::0]),
    (ValueError, lambda x: x.__setitem__(0, xp.zeros((5, 4)))),
    (ValueError, lambda x: x.__setitem__((slice(None), 0), xp.zeros((1, 3, 5)))),
    (TypeError, lambda x: x.__setitem__(0, "a")),
    (TypeError, lambda x: x.__setitem__(0, 1j)),
    (IndexError, lambda x: x.__setitem__(xp.asarray([5]), 1.0)),
    (ValueError, lambda x: x.__setitem__(xp.asarray(BASE > 3), xp.zeros((2,)))),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i: int) -> None:
    exc, fn = ERRORS[i]
    with pytest.raises(exc, match="__(get|set)item__"):
        fn(xp.asarray(BASE))


def test_device_mismatch(cpu0: xp.Device, cpu1: xp.Device) -> None:
    x = xp.asarray(BASE, device=cpu0)
    with pytest.raises(ValueError, match="__getitem__"):
        x[xp.asarray([0], device=cpu1), 0, 0]
    with pytest.raises(ValueError, match="__setitem__"):
        x[0, 0, 0] = xp.asarray(1.0, device=cpu1)


def test_iteration_yields_0d_arrays(kernels: str) -> None:
    items = list(xp.asarray([1, 2, 3]))
    assert [i.shape for i in items] == [(), (), ()]
    assert [int(i) for i in items] == [1, 2, 3]
    rows = list(xp.asarray(BASE))
    assert [r.shape for r in rows] == [(4, 5)] * 3


def test_0d_integer_array_as_python_index() -> None:
    assert [10, 20, 30][xp.asarray(2)] == 30
    x = xp.asarray(BASE)
    assert float(x[xp.asarray(1), 2, xp.asarray(3, dtype=xp.uint8)]) == BASE[1, 2, 3]


# -- DLPack ---------------------------------------------------------------------------------


def test_dlpack_round_trip(kernels: str) -> None:
    x = xp.asarray(BASE)
    assert tuple(map(int, x.__dlpack_device__())) == (1, 0)
    n = np.from_dlpack(x)
    np.testing.assert_array_equal(n, BASE)
    y = xp.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(y), BASE)
    x[0, 0, 0] = -1.0  # the exported values are not changed by a later write
    assert n[0, 0, 0] == 0.0 and float(y[0, 0, 0]) == 0.0
    z = xp.from_dlpack(BASE)
    np.testing.assert_array_equal(np.asarray(z), BASE)
    assert z.device == xp.Device("cpu", 0)


def test_dlpack_zero_copy_numpy() -> None:
    x = xp.asarray(BASE.copy())
    n = np.from_dlpack(x)
    assert np.shares_memory(n, x._data)
    assert not np.shares_memory(np.from_dlpack(x, copy=True), x._data)
    a = BASE.copy()
    y = xp.from_dlpack(a)
    assert np.shares_memory(y._data, a)
    y[0, 0, 0] = 5.0  # copy on write: the producer's memory is not written
    assert a[0, 0, 0] == 0.0


def test_dlpack_errors() -> None:
    x = xp.asarray(BASE)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError):
        x.__dlpack__(stream=1)
    for version in [(0, 0), (0, 8), (1, 0), (2, 0)]:
        x.__dlpack__(max_version=version)
    with pytest.raises(AttributeError):
        xp.from_dlpack([1, 2])
