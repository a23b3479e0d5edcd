"""Helpers shared by the tests: comparing results with NumPy / array-api-strict."""

from __future__ import annotations

from typing import Any

import numpy as np

import x10array as xp

DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip

# (rtol, atol) per NumPy dtype kind/size for comparing floating-point results of two
# implementations that may round differently (e.g. NumPy vs XLA transcendental kernels).
TOLERANCE = {
    np.dtype("float32"): (2e-5, 1e-6),
    np.dtype("complex64"): (2e-5, 1e-6),
    np.dtype("float64"): (1e-11, 1e-13),
    np.dtype("complex128"): (1e-11, 1e-13),
}


def host(x: Any) -> np.ndarray:
    """A NumPy copy of an array of any namespace (x10array, array-api-strict, NumPy)."""
    if hasattr(x, "_array") and not isinstance(x, np.ndarray):  # array-api-strict
        return np.array(x._array, copy=True)
    return np.array(x, copy=True)


def dtype_name(x: Any) -> str:
    d = x.dtype
    return getattr(d, "name", None) or str(d).rsplit(".", 1)[-1]


def assert_values(actual: np.ndarray, expected: np.ndarray, *, scale: float = 1.0, what: str = "") -> None:
    """Equal shapes; equal values (floats within tolerance, NaN where NaN, same inf signs)."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind in "fc" and expected.dtype.kind in "fc":
        rtol, atol = TOLERANCE.get(expected.dtype, (1e-11, 1e-13))
        np.testing.assert_allclose(actual, expected, rtol=rtol * scale, atol=atol * scale, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what, strict=False)


def assert_bitwise_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()


def to_x10(a: np.ndarray, device: Any = None) -> xp.Array:
    return xp.asarray(a, device=device)
