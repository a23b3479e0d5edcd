"""Linear algebra functions of the main namespace (matmul, matrix_transpose, tensordot, vecdot).

The `linalg` extension re-exports these four (the same function objects). Products run at
full precision on every backend by default: XLA would otherwise be free to use
reduced-precision passes (TF32 on GPUs, one bfloat16 pass on TPUs: about three correct
digits) for float32 products. X10ARRAY_MATMUL_PRECISION=high or default trades that for
speed in matmul, tensordot and vecdot (the `precision` parameter of their primitives, so
programs of either precision are cached apart); linalg's decompositions always run at full
precision.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core import settings
from .._core.array import Array
from .._core.dtypes import CATEGORIES, complex64, float32
from .._core.policies import GRAPH_REWRITES, MATRIX_PRODUCTS
from .._core.primitive import Aval, Primitive, bind
from .._core.validation import (
    OperandTypeError,
    binary_operands,
    broadcast_shapes,
    check_array,
    check_int,
    normalize_axis,
)
from .indexing import Transform, function_view
from .manipulation import _PERMUTE_DIMS

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def precise(k: Any, precision: str = "highest") -> Any:
    """Context for kernels that multiply matrices: under jax, XLA's `precision` for float32
    products (full float32 by default); nothing for NumPy."""
    return k.jax.default_matmul_precision(precision) if k.is_jax else contextlib.nullcontext()


def matmul_precision() -> str:
    """The precision of matmul, tensordot and vecdot: the X10ARRAY_MATMUL_PRECISION setting."""
    return settings.get("X10ARRAY_MATMUL_PRECISION")


def _matmul_kernel(
    k: Any,
    a: Any,
    b: Any,
    *,
    dtype: Any,
    transposed: tuple[bool, bool] = (False, False),
    precision: str = "highest",
) -> Any:
    # `transposed` (set by `_fold_transposes` only): operand i holds the 2-D transpose of the
    # matrix to multiply. Under jax the product contracts the stored axes (a dot_general): a
    # transpose feeding a dot is a copy in XLA's CPU code, 2-3x the product's time for X.T @ v.
    a, b = k.asarray(a, dtype=dtype.np), k.asarray(b, dtype=dtype.np)
    with precise(k, precision):
        if not k.is_jax or transposed == (False, False):
            return k.matmul(a.T if transposed[0] else a, b.T if transposed[1] else b)
        contract_a = 0 if transposed[0] else a.ndim - 1
        contract_b = 1 if transposed[1] else 0
        return k.lax.dot_general(a, b, (((contract_a,), (contract_b,)), ((), ())))


def _fold_transposes(operands: Sequence[Any], producers: list[Any], params: dict[str, Any]) -> Any:
    """matmul(x.T, y) and matmul(x, y.T) of matrices and vectors (no stack dimensions):
    multiply the stored matrix, transposed in the product (see `_matmul_kernel`)."""
    for producer in producers:  # (the common case first: no transpose feeds the product)
        if producer is not None and (producer[0] is _MATRIX_TRANSPOSE or producer[0] is _PERMUTE_DIMS):
            break
    else:
        return None
    if any(len(o.shape) > 2 for o in operands):
        return None
    transposed = list(params.get("transposed", (False, False)))
    operands = list(operands)
    for i, producer in enumerate(producers):
        if producer is None or transposed[i] or len(operands[i].shape) != 2:
            continue
        prim, p, inputs = producer
        if prim is _MATRIX_TRANSPOSE or (prim is _PERMUTE_DIMS and p["axes"] == (1, 0)):
            operands[i] = inputs[0]
            transposed[i] = True
    if transposed == list(params.get("transposed", (False, False))):
        return None
    return tuple(operands), {**params, "transposed": tuple(transposed)}


def _tensordot_kernel(
    k: Any, a: Any, b: Any, *, axes: tuple[tuple[int, ...], tuple[int, ...]], dtype: Any, precision: str = "highest"
) -> Any:
    with precise(k, precision):
        return k.asarray(
            k.tensordot(k.asarray(a, dtype=dtype.np), k.asarray(b, dtype=dtype.np), axes=axes), dtype=dtype.np
        )


def _vecdot_kernel(k: Any, a: Any, b: Any, *, axis: int, dtype: Any, precision: str = "highest") -> Any:
    # `axis` is negative and the public layer has checked that the two sizes along it agree;
    # the other axes broadcast. conj(a) . b as a batch of (1, n) @ (n, 1) products.
    a = k.moveaxis(k.asarray(a, dtype=dtype.np), axis, -1)
    b = k.moveaxis(k.asarray(b, dtype=dtype.np), axis, -1)
    if dtype.kind == "complex":
        a = k.conj(a)
    with precise(k, precision):
        return k.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]


def _matmul_rule(
    a: Any, b: Any, *, dtype: Any, transposed: tuple[bool, bool] = (False, False), precision: str = "highest"
) -> Aval:
    sa = tuple(a.shape[::-1]) if transposed[0] else tuple(a.shape)
    sb = tuple(b.shape[::-1]) if transposed[1] else tuple(b.shape)
    if len(sa) == 1 and len(sb) == 1:
        shape: tuple[int, ...] = ()
    elif len(sa) == 1:
        shape = sb[:-2] + sb[-1:]
    elif len(sb) == 1:
        shape = sa[:-1]
    else:
        shape = broadcast_shapes(sa[:-2], sb[:-2], fname="matmul") + (sa[-2], sb[-1])
    return Aval(shape, dtype.np)


_MATMUL = Primitive("matmul", _matmul_kernel, rule=_matmul_rule)
_MATRIX_TRANSPOSE = Primitive("matrix_transpose", lambda k, x: k.swapaxes(x, -1, -2), moves_data=True)
GRAPH_REWRITES.register(_MATMUL, _fold_transposes, reads=(_MATRIX_TRANSPOSE, _PERMUTE_DIMS))
_TENSORDOT = Primitive("tensordot", _tensordot_kernel)
_NUMERIC = CATEGORIES["numeric"]
_VECDOT = Primitive("vecdot", _vecdot_kernel)
_REDUCIBLE = (float32, complex64)  # the dtypes whose products XLA may run at reduced precision
MATRIX_PRODUCTS.add(_MATMUL, _TENSORDOT, _VECDOT)


def _precision(dtype: Any) -> dict[str, str]:
    """The `precision` parameter of a product: none at the default, full precision (so a
    graph's key and every program are as they were), else the setting's value; only float32
    and complex64 products have a choice (integers are exact, float64 is never reduced)."""
    precision = matmul_precision()
    if precision == "highest" or dtype not in _REDUCIBLE:
        return {}
    return {"precision": precision}


def _two_arrays(fname: str, x1: Any, x2: Any) -> tuple[Array, Array, Any, Any]:
    """Two numeric arrays (no Python scalars): (x1, x2, result dtype, device)."""
    if type(x1) is not Array or type(x2) is not Array:
        bad = x1 if type(x1) is not Array else x2
        raise OperandTypeError(f"{fname}: both operands must be x10array arrays, got {type(bad).__name__}")
    a, b, dtype, device = binary_operands(fname, x1, x2, "numeric")
    return a, b, dtype, device


def matmul(x1: Array, x2: Array, /) -> Array:
    """Matrix product with the standard's 1-D promotion and broadcasting of stack dimensions."""
    if (  # the common case (two numeric arrays of one dtype on one device): nothing to promote
        type(x1) is Array
        and type(x2) is Array
        and x1._dtype is x2._dtype
        and x1._device is x2._device
        and x1._dtype in _NUMERIC
    ):
        a, b, dtype, device = x1, x2, x1._dtype, x1._device
    else:
        a, b, dtype, device = _two_arrays("matmul", x1, x2)
    s1, s2 = a.shape, b.shape
    if not s1 or not s2:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes {s1} and {s2}")
    inner1 = s1[-1]
    inner2 = s2[0] if len(s2) == 1 else s2[-2]
    if inner1 != inner2:
        raise ValueError(f"matmul: shapes {s1} and {s2} are not aligned: {inner1} (dim -1 of x1) != {inner2}")
    if len(s1) > 2 or len(s2) > 2:
        broadcast_shapes(s1[:-2], s2[:-2], fname="matmul")
    return bind(_MATMUL, device, a, b, dtype=dtype, **_precision(dtype))


def matrix_transpose(x: Array, /) -> Array:
    """Transpose the last two axes."""
    check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {x.shape}")
    return function_view(x, _MATRIX_TRANSPOSE, _SWAP_LAST)  # a view, as NumPy's


_SWAP_LAST = Transform(
    "matrix_transpose",
    lambda b: bind(_MATRIX_TRANSPOSE, b._device, b),
    lambda b, v: bind(_MATRIX_TRANSPOSE, v._device, v),
    lambda st: np.swapaxes(st, -1, -2),
)


def _contracted_axes(axes: Any, ndim: int, fname: str, which: str) -> tuple[int, ...]:
    if not isinstance(axes, Sequence) or isinstance(axes, str):
        axes = (check_int(axes, fname, f"the axes of {which}"),)  # one axis, as NumPy allows
    out = [normalize_axis(axis, ndim, fname, f"{which} axis") for axis in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: repeated axis in the axes of {which}: {tuple(axes)}")
    return tuple(out)


def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Contract the given axes of x1 with those of x2 (the last/first `axes` ones for an int)."""
    a, b, dtype, device = _two_arrays("tensordot", x1, x2)
    if isinstance(axes, Sequence) and not isinstance(axes, str):
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
        ax1 = _contracted_axes(axes[0], a.ndim, "tensordot", "x1")
        ax2 = _contracted_axes(axes[1], b.ndim, "tensordot", "x2")
        if len(ax1) != len(ax2):
            raise ValueError(f"tensordot: x1 and x2 need as many contracted axes, got {axes!r}")
    else:
        try:
            n = operator.index(axes) if not isinstance(axes, bool) else None
        except TypeError:
            n = None
        if n is None:
            raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got {type(axes).__name__}")
        if n < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {n}")
        if n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: cannot contract {n} axes of arrays with shapes {a.shape} and {b.shape}")
        ax1 = tuple(range(a.ndim - n, a.ndim))
        ax2 = tuple(range(n))
    for i, j in zip(ax1, ax2):
        if a.shape[i] != b.shape[j]:
            raise ValueError(
                f"tensordot: contracted axes have different sizes: axis {i} of x1 ({a.shape[i]})"
                f" and axis {j} of x2 ({b.shape[j]})"
            )
    return bind(_TENSORDOT, device, a, b, axes=(ax1, ax2), dtype=dtype, **_precision(dtype))


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Dot product sum(conj(x1) * x2) along `axis` (negative), broadcasting the other axes."""
    a, b, dtype, device = _two_arrays("vecdot", x1, x2)
    axis = check_int(axis, "vecdot", "axis")
    n = min(a.ndim, b.ndim)
    if not -n <= axis <= -1:
        raise ValueError(
            f"vecdot: axis must be a negative int in [-{n}, -1] for shapes {a.shape} and {b.shape}, got {axis}"
        )
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: x1 and x2 differ in size along axis {axis} ({a.shape[axis]} and {b.shape[axis]})")
    rest1 = a.shape[:axis] + a.shape[axis:][1:]
    rest2 = b.shape[:axis] + b.shape[axis:][1:]
    broadcast_shapes(rest1, rest2, fname="vecdot")
    return bind(_VECDOT, device, a, b, axis=axis, dtype=dtype, **_precision(dtype))
