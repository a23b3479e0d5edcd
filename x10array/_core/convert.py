"""The two conversions the public layer applies to operands before it binds a primitive.

- `cast(x, dtype)`: the `astype` primitive (defined here, once; `_api.data_types.astype` binds
  it too), which `validation.binary_operands` applies to the operand of the lower kind under
  the mixed-kind promotion rule (`dtypes.promote`), so kernels always see operands of one
  kind and NumPy, XLA and the lazy interpreter give the same result dtype.
- `transfer(x, device)`: a copy of `x` on another device, bit for bit (`to_device`'s copy),
  which `validation.common_device` applies to uncommitted arrays meeting committed ones.
"""

from __future__ import annotations

import numpy as np

from .array import Array
from .backend import impl
from .devices import Device, DeviceKind
from .dtypes import DType
from .policies import NUMPY_QUIET
from .primitive import Primitive, bind

__all__ = ["ASTYPE", "cast", "transfer"]

# NaN and infinity cast to an integer are implementation-defined (the standard says so): quiet.
ASTYPE = Primitive("astype", lambda k, x, *, dtype: x.astype(dtype.np), elementwise=True)
NUMPY_QUIET.add(ASTYPE)


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
