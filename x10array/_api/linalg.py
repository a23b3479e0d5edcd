"""The `linalg` extension of the standard (2025.12).

Every function validates its input (dtype category, rank, square matrices, broadcasting,
keyword values) and then binds one primitive whose kernel is written against the kernel
namespace `k` (NumPy or jax.numpy). Kernels cast their results to the dtype the standard
gives (NumPy returns real eigenvalues for real input where `eig` must be complex, etc.).

Value-dependent failures (a singular matrix for `inv`/`solve`, a matrix that is not positive
definite for `cholesky`, an SVD or eigensolver that does not converge) give NaN results on
every backend, matrix by matrix: that is what XLA does, and a lazy graph cannot raise. NumPy
raises `LinAlgError` instead, so `_lapack` catches it and redoes the stack one matrix at a
time.

`matmul`, `matrix_transpose`, `tensordot` and `vecdot` are the main namespace's functions.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._core.array import Array
from .._core.capabilities import check_supported
from .._core.dtypes import DEFAULT_INT, REAL_OF, DType
from .._core.policies import COST_LIBRARY, MATRIX_PRODUCTS, NUMPY_QUIET
from .._core.primitive import Primitive, bind
from .._core.validation import (
    binary_operands,
    broadcast_shapes,
    check_array,
    check_category,
    check_int,
    common_device,
    normalize_axes,
    normalize_scalar,
)
from .indexing import Transform, function_view
from .linear_algebra import matmul, matrix_transpose, precise, tensordot, vecdot
from .statistical import _accumulation_dtype, check_bool

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
    "vector_norm",
]  # fmt: skip


# -- result types (the standard's field names) ------------------------------------------------


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


# -- kernel helpers ---------------------------------------------------------------------------


def _real_dtype(dtype: Any) -> Any:
    """float32 for complex64/float32, float64 for complex128/float64 (NumPy or jax dtypes)."""
    return np.finfo(dtype).dtype


def _complex_dtype(dtype: Any) -> Any:
    return np.result_type(dtype, np.complex64)


def _lapack(k: Any, name: str, *stacks: Any, **kw: Any) -> Any:
    """`k.linalg.<name>(*stacks, **kw)`, NaN for the matrices NumPy refuses (see module doc);
    under jax at full float32 precision (see `precise`).

    The stacks share their batch dimensions (all but the last two)."""
    fn = getattr(k.linalg, name)
    if k.is_jax:
        with precise(k):
            return fn(*stacks, **kw)
    try:
        return fn(*stacks, **kw)
    except np.linalg.LinAlgError:
        pass
    batch = stacks[0].shape[:-2]
    results: list[tuple[Any, ...] | None] = []
    for idx in np.ndindex(*batch):
        try:
            results.append(_as_tuple(fn(*(s[idx] for s in stacks), **kw)))
        except np.linalg.LinAlgError:
            results.append(None)
    # Shapes of one matrix's results from identity matrices (always accepted); dtypes from all
    # results (NumPy's eig is real or complex depending on the values).
    template = fn(*(np.eye(*s.shape[-2:], dtype=s.dtype) for s in stacks), **kw)
    single = not isinstance(template, tuple)
    outs = [
        np.full(batch + t.shape, np.nan, dtype=np.result_type(t, *(r[i] for r in results if r is not None)))
        for i, t in enumerate(_as_tuple(template))
    ]
    for idx, one in zip(np.ndindex(*batch), results):
        if one is not None:
            for out, value in zip(outs, one):
                out[idx] = value
    return outs[0] if single else tuple(outs)


def _as_tuple(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, tuple) else (result,)


def _svdvals(k: Any, x: Any) -> Any:
    return _lapack(k, "svd", x, compute_uv=False)


# -- validation helpers -----------------------------------------------------------------------


def _matrices(x: Any, fname: str, *, square: bool = False, category: str = "floating-point", arg: str = "x") -> Array:
    check_array(x, fname, arg, category)
    if x.ndim < 2:
        raise ValueError(
            f"{fname}: {arg} must be a matrix or a stack of matrices (2 or more dimensions), got shape {x.shape}"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fname}: {arg} must hold square matrices, got shape {x.shape}")
    return x


def _clamp_offset(offset: Any, shape: tuple[int, ...], fname: str) -> int:
    """An offset beyond the matrix selects an empty diagonal: clamp it (fewer compiled programs)."""
    offset = check_int(offset, fname, "offset")
    rows, cols = shape[-2:]
    return max(min(offset, cols), -rows)


def _rtol(x: Array, rtol: Any, fname: str) -> Any:
    """The `rtol` operand: an array (real floating, broadcast against the stack) or a float."""
    if rtol is None:
        return float(max(x.shape[-2:]) * np.finfo(REAL_OF.get(x._dtype, x._dtype).np).eps)
    if type(rtol) is Array:
        check_category(rtol._dtype, fname, "real floating-point", "rtol")
        rtol = common_device((x, rtol), fname, fixed=x)[1][1]
        broadcast_shapes(x.shape[:-2], rtol.shape, fname=fname)
        return rtol
    value = normalize_scalar(rtol)
    if value is None or isinstance(value, (bool, complex)):
        raise TypeError(
            f"{fname}: rtol must be a float, a real floating-point array or None, got {type(rtol).__name__}"
        )
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{fname}: rtol must be a finite number >= 0, got {value}")
    return float(value)


# -- decompositions and solvers ---------------------------------------------------------------


def _cholesky_kernel(k: Any, x: Any, *, upper: bool) -> Any:
    return k.asarray(_lapack(k, "cholesky", x, upper=upper), dtype=x.dtype)


def _eig_kernel(k: Any, x: Any) -> Any:
    w, v = _lapack(k, "eig", x)
    c = _complex_dtype(x.dtype)
    return k.asarray(w, dtype=c), k.asarray(v, dtype=c)


def _eigh_kernel(k: Any, x: Any) -> Any:
    w, v = _lapack(k, "eigh", x)
    return k.asarray(w, dtype=_real_dtype(x.dtype)), k.asarray(v, dtype=x.dtype)


def _qr_kernel(k: Any, x: Any, *, mode: str) -> Any:
    q, r = _lapack(k, "qr", x, mode=mode)
    return k.asarray(q, dtype=x.dtype), k.asarray(r, dtype=x.dtype)


def _slogdet_kernel(k: Any, x: Any) -> Any:
    sign, logabsdet = _lapack(k, "slogdet", x)
    return k.asarray(sign, dtype=x.dtype), k.asarray(logabsdet, dtype=_real_dtype(x.dtype))


def _svd_kernel(k: Any, x: Any, *, full_matrices: bool) -> Any:
    u, s, vh = _lapack(k, "svd", x, full_matrices=full_matrices)
    return k.asarray(u, dtype=x.dtype), k.asarray(s, dtype=_real_dtype(x.dtype)), k.asarray(vh, dtype=x.dtype)


def _solve_kernel(k: Any, a: Any, b: Any, *, dtype: DType, vector: bool) -> Any:
    a = k.asarray(a, dtype=dtype.np)
    b = k.asarray(b, dtype=dtype.np)
    if vector:  # x2 of shape (M,): one right-hand side for every matrix of the stack
        b = b[:, None]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = k.broadcast_to(a, batch + a.shape[-2:])
    b = k.broadcast_to(b, batch + b.shape[-2:])
    out = _lapack(k, "solve", a, b)
    return k.asarray(out[..., 0] if vector else out, dtype=dtype.np)


def _matrix_power_kernel(k: Any, x: Any, *, n: int) -> Any:
    if n < 0:
        x = _lapack(k, "inv", x)
        n = -n
    with precise(k):
        return k.asarray(k.linalg.matrix_power(x, n), dtype=x.dtype)


def _pinv_kernel(k: Any, x: Any, rtol: Any) -> Any:
    rows, cols = x.shape[-2:]
    rtol = k.asarray(rtol)
    batch = np.broadcast_shapes(x.shape[:-2], rtol.shape)
    if min(rows, cols) == 0:
        return k.zeros(batch + (cols, rows), dtype=x.dtype)
    u, s, vh = _lapack(k, "svd", x, full_matrices=False)
    cutoff = rtol[..., None] * k.max(s, axis=-1, keepdims=True)
    s_inv = k.where(s > cutoff, 1 / s, 0).astype(s.dtype)
    with precise(k):
        out = k.matmul(k.conj(k.swapaxes(vh, -1, -2)) * s_inv[..., None, :], k.conj(k.swapaxes(u, -1, -2)))
    return k.asarray(k.broadcast_to(out, batch + (cols, rows)), dtype=x.dtype)


def _matrix_rank_kernel(k: Any, x: Any, rtol: Any) -> Any:
    s = _svdvals(k, x)
    tol = k.max(s, axis=-1, keepdims=True, initial=0) * k.asarray(rtol)[..., None]
    return k.asarray(k.sum(s > tol, axis=-1), dtype=DEFAULT_INT.np)


_CHOLESKY = Primitive("linalg.cholesky", _cholesky_kernel)
_DET = Primitive("linalg.det", lambda k, x: k.asarray(_lapack(k, "det", x), dtype=x.dtype))
_EIG = Primitive("linalg.eig", _eig_kernel, multiple_results=True)
_EIGVALS = Primitive(
    "linalg.eigvals",
    lambda k, x: k.asarray(_lapack(k, "eigvals", x), dtype=_complex_dtype(x.dtype)),
)
_EIGH = Primitive("linalg.eigh", _eigh_kernel, multiple_results=True)
_EIGVALSH = Primitive(
    "linalg.eigvalsh",
    lambda k, x: k.asarray(_lapack(k, "eigvalsh", x), dtype=_real_dtype(x.dtype)),
)
_INV = Primitive("linalg.inv", lambda k, x: k.asarray(_lapack(k, "inv", x), dtype=x.dtype))
_MATRIX_POWER = Primitive("linalg.matrix_power", _matrix_power_kernel)
_MATRIX_RANK = Primitive("linalg.matrix_rank", _matrix_rank_kernel)
_PINV = Primitive("linalg.pinv", _pinv_kernel)
MATRIX_PRODUCTS.add(_MATRIX_POWER, _PINV)
_QR = Primitive("linalg.qr", _qr_kernel, multiple_results=True)
_SLOGDET = Primitive("linalg.slogdet", _slogdet_kernel, multiple_results=True)
_SOLVE = Primitive("linalg.solve", _solve_kernel)
_SVD = Primitive("linalg.svd", _svd_kernel, multiple_results=True)
_SVDVALS = Primitive("linalg.svdvals", lambda k, x: k.asarray(_svdvals(k, x), dtype=_real_dtype(x.dtype)))
_LIBRARY = (
    _CHOLESKY, _DET, _EIG, _EIGVALS, _EIGH, _EIGVALSH, _INV, _MATRIX_POWER, _MATRIX_RANK, _PINV, _QR, _SLOGDET, _SOLVE,
    _SVD, _SVDVALS,
)  # fmt: skip
NUMPY_QUIET.add(*_LIBRARY)
COST_LIBRARY.add(*_LIBRARY)


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """Cholesky factor L (x = L L^H) or, with upper=True, U = L^H (x = U^H U)."""
    _matrices(x, "cholesky", square=True)
    return bind(_CHOLESKY, x._device, x, upper=check_bool(upper, "cholesky", "upper"))


def det(x: Array, /) -> Array:
    """Determinant of each square matrix."""
    _matrices(x, "det", square=True)
    return bind(_DET, x._device, x)


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (complex results)."""
    _matrices(x, "eig", square=True)
    check_supported(x._device, "eig")
    return EigResult(*bind(_EIG, x._device, x))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues of general square matrices (complex, of the precision of x)."""
    _matrices(x, "eigvals", square=True)
    check_supported(x._device, "eigvals")
    return bind(_EIGVALS, x._device, x)


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (real, ascending) and eigenvectors of Hermitian/symmetric matrices."""
    _matrices(x, "eigh", square=True)
    return EighResult(*bind(_EIGH, x._device, x))


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (real) of Hermitian/symmetric matrices."""
    _matrices(x, "eigvalsh", square=True)
    return bind(_EIGVALSH, x._device, x)


def inv(x: Array, /) -> Array:
    """Inverse of each square matrix."""
    _matrices(x, "inv", square=True)
    return bind(_INV, x._device, x)


def matrix_power(x: Array, n: int, /) -> Array:
    """x raised to the integer power n (identity for 0, powers of the inverse below 0)."""
    _matrices(x, "matrix_power", square=True)
    return bind(_MATRIX_POWER, x._device, x, n=check_int(n, "matrix_power", "n"))


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Number of singular values above rtol * the largest one (default int dtype)."""
    _matrices(x, "matrix_rank")
    return bind(_MATRIX_RANK, x._device, x, _rtol(x, rtol, "matrix_rank"))


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverse, from the SVD; shape (..., N, M)."""
    _matrices(x, "pinv")
    return bind(_PINV, x._device, x, _rtol(x, rtol, "pinv"))


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition; mode 'reduced' (K = min(M, N) columns of Q) or 'complete'."""
    _matrices(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*bind(_QR, x._device, x, mode=mode))


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and log of the absolute value of the determinant."""
    _matrices(x, "slogdet", square=True)
    return SlogdetResult(*bind(_SLOGDET, x._device, x))


def solve(x1: Array, x2: Array, /) -> Array:
    """Solve x1 @ X = x2. x2 of shape (M,) is one vector for every matrix; otherwise (..., M, K)."""
    check_array(x1, "solve", "x1", "floating-point")
    check_array(x2, "solve", "x2", "floating-point")
    x1, x2, dtype, device = binary_operands("solve", x1, x2, "floating-point")
    _matrices(x1, "solve", square=True, arg="x1")
    m = x1.shape[-1]
    if x2.ndim == 0:
        raise ValueError("solve: x2 must have at least one dimension")
    vector = x2.ndim == 1
    rows = x2.shape[0] if vector else x2.shape[-2]
    if rows != m:
        raise ValueError(f"solve: x2 of shape {x2.shape} does not fit x1 of shape {x1.shape} ({rows} != {m})")
    if not vector:
        broadcast_shapes(x1.shape[:-2], x2.shape[:-2], fname="solve")
    return bind(_SOLVE, device, x1, x2, dtype=dtype, vector=vector)


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition x = U diag(S) Vh, singular values descending."""
    _matrices(x, "svd")
    return SVDResult(*bind(_SVD, x._device, x, full_matrices=check_bool(full_matrices, "svd", "full_matrices")))


def svdvals(x: Array, /) -> Array:
    """Singular values, descending, of the precision of x (real)."""
    _matrices(x, "svdvals")
    return bind(_SVDVALS, x._device, x)


# -- norms --------------------------------------------------------------------------------------


def _matrix_norm_kernel(k: Any, x: Any, *, ord: Any, keepdims: bool) -> Any:
    real = _real_dtype(x.dtype)
    if ord == "fro":
        a = k.abs(x)
        out = k.sqrt(k.sum(a * a, axis=(-2, -1)))
    elif ord == "nuc":
        out = k.sum(_svdvals(k, x), axis=-1)
    elif ord in (2, -2):
        s = _svdvals(k, x)
        out = k.max(s, axis=-1, initial=0) if ord == 2 else k.min(s, axis=-1, initial=math.inf)
    else:  # 1, -1: column sums; inf, -inf: row sums
        sums = k.sum(k.abs(x), axis=-2 if ord in (1, -1) else -1)
        out = k.max(sums, axis=-1, initial=0) if ord > 0 else k.min(sums, axis=-1, initial=math.inf)
    if keepdims:
        out = out[..., None, None]
    return k.asarray(out, dtype=real)


def _vector_norm_kernel(k: Any, x: Any, p: Any, *, axes: tuple[int, ...], keepdims: bool, mode: str) -> Any:
    a = k.abs(x)
    real = _real_dtype(x.dtype)
    if mode == "max":
        out = k.max(a, axis=axes, keepdims=keepdims, initial=0)
    elif mode == "min":
        out = k.min(a, axis=axes, keepdims=keepdims, initial=math.inf)
    elif mode == "count":
        out = k.sum(a != 0, axis=axes, keepdims=keepdims)
    elif mode == "sum":
        out = k.sum(a, axis=axes, keepdims=keepdims)
    elif mode == "euclid":
        out = k.sqrt(k.sum(a * a, axis=axes, keepdims=keepdims))
    else:
        out = k.sum(a**p, axis=axes, keepdims=keepdims) ** (1 / p)
    return k.asarray(out, dtype=real)


_MATRIX_NORM = Primitive("linalg.matrix_norm", _matrix_norm_kernel)
_VECTOR_NORM = Primitive("linalg.vector_norm", _vector_norm_kernel)
NUMPY_QUIET.add(_MATRIX_NORM, _VECTOR_NORM)

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)
_VECTOR_MODES = {math.inf: "max", -math.inf: "min", 0: "count", 1: "sum", 2: "euclid"}


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: int | float | str | None = "fro") -> Array:
    """Matrix norms: 'fro', 'nuc', 1, 2, inf and their negative (minimum) variants."""
    _matrices(x, "matrix_norm")
    if ord is None:
        ord = "fro"
    if isinstance(ord, bool) or not (isinstance(ord, str) or normalize_scalar(ord) is not None):
        raise TypeError(f"matrix_norm: ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"matrix_norm: ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    ord = ord if isinstance(ord, str) else float(ord)
    return bind(_MATRIX_NORM, x._device, x, ord=ord, keepdims=check_bool(keepdims, "matrix_norm", "keepdims"))


def vector_norm(
    x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, ord: int | float = 2
) -> Array:
    """Vector p-norms over `axis` (all axes for None): ord inf/-inf (`max/min |x|`), 0 (count
    of non-zeros), and any other real p as `(sum |x|^p)^(1/p)`."""
    check_array(x, "vector_norm", "x", "floating-point")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    p = normalize_scalar(ord)
    if isinstance(ord, bool) or p is None or isinstance(p, complex):
        raise TypeError(f"vector_norm: ord must be an int or a float, got {type(ord).__name__}")
    if p != p:
        raise ValueError("vector_norm: ord must not be NaN")
    mode = _VECTOR_MODES.get(p, "power")
    keepdims = check_bool(keepdims, "vector_norm", "keepdims")
    return bind(_VECTOR_NORM, x._device, x, float(p), axes=tuple(sorted(axes)), keepdims=keepdims, mode=mode)


# -- products, diagonals, traces ------------------------------------------------------------


def _cross_kernel(k: Any, a: Any, b: Any, *, axis: int, dtype: DType) -> Any:
    return k.cross(k.asarray(a, dtype=dtype.np), k.asarray(b, dtype=dtype.np), axis=axis)


def _trace_kernel(k: Any, x: Any, *, offset: int, dtype: DType) -> Any:
    x = k.asarray(x, dtype=dtype.np)
    return k.asarray(k.trace(x, offset=offset, axis1=-2, axis2=-1), dtype=dtype.np)


_CROSS = Primitive("linalg.cross", _cross_kernel)
_DIAGONAL = Primitive(
    "linalg.diagonal", lambda k, x, *, offset: k.diagonal(x, offset=offset, axis1=-2, axis2=-1), moves_data=True
)
_OUTER = Primitive(
    "linalg.outer", lambda k, a, b, *, dtype: k.outer(k.asarray(a, dtype=dtype.np), k.asarray(b, dtype=dtype.np))
)
_TRACE = Primitive("linalg.trace", _trace_kernel)


def _array_pair(fname: str, x1: Any, x2: Any) -> tuple[Array, Array, DType, Any]:
    check_array(x1, fname, "x1")
    check_array(x2, fname, "x2")
    return binary_operands(fname, x1, x2, "numeric")  # numeric after promotion: bool with float is float


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Cross product of 3-element vectors along `axis` (negative); other axes broadcast."""
    x1, x2, dtype, device = _array_pair("cross", x1, x2)
    axis = check_int(axis, "cross", "axis")
    n = min(x1.ndim, x2.ndim)
    if not -n <= axis <= -1:
        raise ValueError(
            f"cross: axis must be a negative int in [-{n}, -1] for shapes {x1.shape} and {x2.shape}, got {axis}"
        )
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: x1 and x2 must have size 3 along axis {axis}, got shapes {x1.shape} and {x2.shape}")
    broadcast_shapes(x1.shape, x2.shape, fname="cross")
    return bind(_CROSS, device, x1, x2, axis=axis, dtype=dtype)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal at `offset` of each matrix (last axis of the result)."""
    _matrices(x, "diagonal", category="any")
    offset = _clamp_offset(offset, x.shape, "diagonal")
    transform = Transform(  # a read-only view, as NumPy's
        "diagonal",
        lambda b: bind(_DIAGONAL, b._device, b, offset=offset),
        None,
        lambda st: np.diagonal(st, offset=offset, axis1=-2, axis2=-1),
    )
    return function_view(x, _DIAGONAL, transform, offset=offset)


def outer(x1: Array, x2: Array, /) -> Array:
    """Outer product of two 1-D arrays."""
    x1, x2, dtype, device = _array_pair("outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-D, got shapes {x1.shape} and {x2.shape}")
    return bind(_OUTER, device, x1, x2, dtype=dtype)


def trace(x: Array, /, *, offset: int = 0, dtype: DType | None = None) -> Array:
    """Sum of the diagonal at `offset` of each matrix, accumulated in `dtype`."""
    _matrices(x, "trace", category="numeric")
    offset = _clamp_offset(offset, x.shape, "trace")
    return bind(_TRACE, x._device, x, offset=offset, dtype=_accumulation_dtype("trace", x, dtype))


def __dir__() -> list[str]:
    """Only the public names (the helpers this module imports are not part of its API)."""
    return sorted(__all__)
