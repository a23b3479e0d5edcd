"""The two conversions the public layer applies to operands before it binds a primitive.

- `cast(x, dtype)`: the `astype` primitive (defined here, once; `_api.data_types.astype` binds
  it too), which `validation.binary_operands` applies to the operand of the lower kind under
  the mixed-kind promotion rule (`dtypes.promote`), so kernels always see operands of one
  kind and NumPy, XLA and the lazy interpreter give the same result dtype.
- `transfer(x, device)`: a copy of `x` on another device, bit for bit (`to_device`'s copy),
  which `validation.common_device` applies to uncommitted arrays meeting committed ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import Array
from .backend import impl
from .devices import Device, DeviceKind
from .dtypes import DType
from .kernels import NUMPY
from .policies import NUMPY_QUIET, XLA_HOST_KERNELS
from .primitive import Primitive, bind
from .xla_numerics import flush_subnormals

__all__ = ["ASTYPE", "cast", "transfer"]


def _astype_kernel(k: Any, x: Any, *, dtype: DType) -> Any:
    """`x` as `dtype`. A float to an integer follows one rule on every device and tier, XLA's
    (the standard leaves out-of-range casts unspecified; docs/promotion.md): truncation toward
    zero, saturating at the integer type's ends, NaN to 0 (NumPy's own cast is undefined there:
    it wraps, or gives INT_MIN on x86)."""
    target = dtype.np
    if x.dtype.kind != "f" or target.kind not in "iu":
        return x.astype(target)
    return saturating_cast(k, x, target)


def saturating_cast(k: Any, x: Any, target: np.dtype) -> Any:
    """A real float `x` to the integer type `target`, truncated, saturated, NaN to 0, written
    with the kernel namespace `k` (the same operations on NumPy and jax)."""
    info = np.iinfo(target)
    with k.errstate(all="ignore"):  # (2**63 overflows float16 to inf: fine, a bound of none)
        # the range's ends are 0 or -2**(bits-1) and 2**(bits-1) or 2**bits: exact in a float
        top = k.asarray(2.0 ** (info.bits - (target.kind == "i")), dtype=x.dtype)
        bottom = k.asarray(float(info.min), dtype=x.dtype)
        high = x >= top
        low = x < bottom
        out = k.where(high | low | k.isnan(x), k.zeros((), x.dtype), x).astype(target)
        out = k.where(low, target.type(info.min), out)
        return k.asarray(k.where(high, target.type(info.max), out), dtype=target)


# NaN and infinity cast to an integer are implementation-defined (the standard says so): quiet.
ASTYPE = Primitive("astype", _astype_kernel, elementwise=True)
NUMPY_QUIET.add(ASTYPE)


def _astype_like_xla(flush: bool, x: np.ndarray, *, dtype: DType) -> np.ndarray | None:
    """ASTYPE with the bits of XLA's CPU convert, in NumPy (policies.XLA_HOST_KERNELS): a cast
    on the eager CPU's XLA kernels then compiles nothing, where XLA would compile a program
    for each dtype pair and size (tens of milliseconds each, the bulk of a first call).

    Where XLA departs from NumPy's `astype` (tests/test_eager_xla.py compares every dtype pair
    on special values with the XLA program):
    - with `flush` (XLA flushes subnormals on this CPU), a subnormal operand of a conversion
      (to another float type, an integer or bool: float32 to float32 or complex64 keeps every
      bit) reads as a signed zero (so it casts to False, and to a zero of a wider float type) and a subnormal result
      is flushed to one (float64 to float32);
    - a float to an integer saturates: NaN gives 0, values below the type's range its minimum,
      above it its maximum (NumPy leaves these undefined: INT_MIN on x86); others truncate."""
    source = x.dtype
    target = dtype.np
    if source.kind == "c" and target.kind not in "cb":
        return None  # (the public layer refuses it; the XLA program decides if it comes)
    if source.kind in "fc" and target.kind in "fc" and x.real.dtype == np.zeros((), target).real.dtype:
        # the same float type (or its complex): XLA converts no float, so keeps every bit
        return np.asarray(x.astype(target))
    if flush and source.kind in "fc":
        x = flush_subnormals(x)
    if source.kind == "f" and target.kind in "iu":
        return np.asarray(saturating_cast(NUMPY, x, target))
    with np.errstate(all="ignore"):  # (float64 beyond float32's range: inf, as in XLA)
        out = np.asarray(x.astype(target))
    return flush_subnormals(out) if flush and target.kind in "fc" else out


XLA_HOST_KERNELS.register(ASTYPE, _astype_like_xla)


def cast(x: Array, dtype: DType) -> Array:
    """`x` as `dtype` (itself when it has that dtype already)."""
    return x if x._dtype is dtype else bind(ASTYPE, x._device, x, dtype=dtype)


def transfer(x: Array, device: Device) -> Array:
    """A copy of `x` on `device` (another device than x's), bit for bit."""
    host = x._host()
    if device.kind is DeviceKind.CPU:
        # The new array gets memory of its own. Sharing x's host buffer (copy-on-write
        # between the two arrays) is not enough: that buffer may be visible outside x10array
        # (a NumPy array given to `asarray` with copy=None, an `__array__` export), and a
        # write through such a handle would reach the copy too.
        return impl(device).place(np.array(host, copy=True), x._dtype, device, shared=False)
    x._shared = True
    return impl(device).place(host, x._dtype, device, shared=True)
