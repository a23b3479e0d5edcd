"""Linear algebra functions of the main namespace (matmul, matrix_transpose, tensordot, vecdot)."""

from __future__ import annotations

from ._array_object import Array
from ._helpers import binary_operands, check_array
from ._ops import Primitive, bind

__all__ = ["matmul", "matrix_transpose"]

_MATMUL = Primitive("matmul", lambda k, a, b: k.matmul(a, b))
_MATRIX_TRANSPOSE = Primitive("matrix_transpose", lambda k, x: k.swapaxes(x, -1, -2))


def matmul(x1: Array, x2: Array, /) -> Array:
    a, b, _, device = binary_operands("matmul", x1, x2, "numeric")
    if type(a) is not Array or type(b) is not Array:
        raise TypeError("matmul: both operands must be arrays")
    return bind(_MATMUL, device, a, b)


def matrix_transpose(x: Array, /) -> Array:
    check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {x.shape}")
    return bind(_MATRIX_TRANSPOSE, x._device, x)
