"""Set functions (the standard's chapter of that name).

The four `unique_*` functions share one host primitive (their output shapes depend on the
values) whose parameters say which of indices / inverse / counts to return; each function
wraps the result in the namedtuple the standard names. Uniqueness is value equality: every
NaN (and every complex value with a NaN component) is its own element, signed zeros are one.
`isin` is elementwise and runs on any backend.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._core.array import Array
from .._core.dtypes import DEFAULT_INDEX, DType
from .._core.primitive import Primitive, bind
from .._core.validation import binary_operands, check_array
from .statistical import check_bool

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique_kernel(k: Any, x: Any, *, indices: bool, inverse: bool, counts: bool) -> tuple[Any, ...]:
    # Host only (dynamic shape). equal_nan=False: NaN != NaN, so each NaN is its own value.
    values, first, inv, cnt = np.unique(
        x.reshape(-1), return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    index = DEFAULT_INDEX.np
    out = [values]
    if indices:
        out.append(first.astype(index))
    if inverse:
        out.append(inv.reshape(x.shape).astype(index))
    if counts:
        out.append(cnt.astype(index))
    return tuple(out)


_UNIQUE = Primitive("unique", _unique_kernel, dynamic_shape=True, multiple_results=True)


def _unique(
    fname: str, x: Array, *, indices: bool = False, inverse: bool = False, counts: bool = False
) -> tuple[Array, ...]:
    check_array(x, fname)
    return bind(_UNIQUE, x._device, x, indices=indices, inverse=inverse, counts=counts)


def unique_all(x: Array, /) -> UniqueAllResult:
    """Unique values of flattened `x`, their first indices, the inverse indices (shape of x), counts."""
    return UniqueAllResult(*_unique("unique_all", x, indices=True, inverse=True, counts=True))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Unique values of flattened `x` and how often each occurs."""
    return UniqueCountsResult(*_unique("unique_counts", x, counts=True))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Unique values of flattened `x` and the indices into them that rebuild `x` (shape of x)."""
    return UniqueInverseResult(*_unique("unique_inverse", x, inverse=True))


def unique_values(x: Array, /) -> Array:
    """Unique values of flattened `x`, as a 1-D array."""
    return _unique("unique_values", x)[0]


def _isin_kernel(k: Any, x1: Any, x2: Any, *, dtype: DType, invert: bool) -> Any:
    return k.isin(k.asarray(x1, dtype=dtype.np), k.asarray(x2, dtype=dtype.np), invert=invert)


_ISIN = Primitive("isin", _isin_kernel)


def isin(x1: Array | int, x2: Array | int, /, *, invert: bool = False) -> Array:
    """For each element of `x1`, whether it equals some element of `x2` (negated with `invert`).

    The result has the shape of `x1` (0-d for a scalar `x1`) and dtype bool.
    """
    x1, x2, dtype, device = binary_operands("isin", x1, x2, "any")
    check_bool(invert, "isin", "invert")
    return bind(_ISIN, device, x1, x2, dtype=dtype, invert=invert)
