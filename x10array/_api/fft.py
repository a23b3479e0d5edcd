"""The `fft` extension of the standard.

Each transform is one primitive over `k.fft.<name>` (NumPy's pocketfft or XLA's FFT) with
every size and axis spelled out by the public layer, so the kernel never guesses: 1-D
transforms get `n` and a non-negative `axis`, n-D transforms explicit `s` and `axes`.
Results are cast to the dtype the standard gives (complex64 in, complex64 out; float32 in,
complex64 out), which NumPy and jax do not always keep on their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._core.array import Array
from .._core.capabilities import capabilities, check_dtype_on
from .._core.dtypes import COMPLEX_OF, REAL_OF, DType, check_dtype
from .._core.policies import COST_LIBRARY, NUMPY_QUIET
from .._core.primitive import Primitive, bind
from .._core.validation import (
    check_array,
    check_category,
    check_int,
    check_result_size,
    normalize_axes,
    normalize_axis,
    normalize_scalar,
)
from .creation import resolve_device

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]  # fmt: skip

_NORMS = ("backward", "ortho", "forward")


def _check_norm(norm: Any, fname: str) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _check_size(value: Any, fname: str, arg: str) -> int:
    size = check_int(value, fname, arg)
    if size < 1:
        raise ValueError(f"{fname}: {arg} must be a positive number of points, got {size}")
    return size


# -- 1-D transforms ---------------------------------------------------------------------------


class _Kind(NamedTuple):
    """What a family of transforms accepts and gives."""

    category: str  # of the input
    out_dtype: Callable[[DType], DType]
    default_n: Callable[[int], int]  # output points along the (last) axis, from the input's M
    complex_to_complex: bool


_C2C = _Kind("complex floating-point", lambda d: d, lambda m: m, True)
_R2C = _Kind("real floating-point", lambda d: COMPLEX_OF[d], lambda m: m, False)
_C2R = _Kind("complex floating-point", lambda d: REAL_OF[d], lambda m: 2 * (m - 1), False)


def _fft_kernel(name: str) -> Callable[..., Any]:
    def kernel(k: Any, x: Any, *, n: int, axis: int, norm: str, dtype: DType) -> Any:
        return k.asarray(getattr(k.fft, name)(x, n=n, axis=axis, norm=norm), dtype=dtype.np)

    kernel.__name__ = f"_{name}_kernel"
    return kernel


def _transform_1d(name: str, kind: _Kind, doc: str) -> Any:
    category, out_dtype, default_n, _ = kind
    prim = Primitive(f"fft.{name}", _fft_kernel(name))
    NUMPY_QUIET.add(prim)
    COST_LIBRARY.add(prim)

    def function(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
        check_array(x, name, "x", category)
        if x.ndim == 0:
            raise ValueError(f"{name}: x must have at least one dimension")
        axis = normalize_axis(axis, x.ndim, name)
        size = _check_size(default_n(x.shape[axis]) if n is None else n, name, "n")
        check_result_size(x.shape[:axis] + (size,) + x.shape[axis + 1 :], COMPLEX_OF.get(x._dtype, x._dtype), name)
        norm = _check_norm(norm, name)
        return bind(prim, x._device, x, n=size, axis=axis, norm=norm, dtype=out_dtype(x._dtype))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


fft = _transform_1d("fft", _C2C, "One-dimensional discrete Fourier transform of complex input.")
ifft = _transform_1d("ifft", _C2C, "One-dimensional inverse discrete Fourier transform of complex input.")
rfft = _transform_1d("rfft", _R2C, "One-dimensional DFT of real input: the n//2 + 1 non-negative frequencies.")
irfft = _transform_1d("irfft", _C2R, "Inverse of rfft: n real points (default 2*(M-1)) from the half spectrum.")
hfft = _transform_1d("hfft", _C2R, "DFT of a Hermitian-symmetric signal given by its first half: n real points.")
ihfft = _transform_1d("ihfft", _R2C, "Inverse of hfft: the n//2 + 1 first points of the spectrum of real input.")


# -- n-D transforms ---------------------------------------------------------------------------


def _fftn_kernel(name: str) -> Callable[..., Any]:
    def kernel(k: Any, x: Any, *, s: tuple[int, ...], axes: tuple[int, ...], norm: str, dtype: DType) -> Any:
        if not axes:  # transform over no axis: the input, as the output dtype
            return k.asarray(x, dtype=dtype.np)
        return k.asarray(getattr(k.fft, name)(x, s=s, axes=axes, norm=norm), dtype=dtype.np)

    kernel.__name__ = f"_{name}_kernel"
    return kernel


def _transform_nd(name: str, kind: _Kind, doc: str) -> Any:
    """`kind`'s default-size rule applies to the last transformed axis; the others keep M."""
    category, out_dtype, default_last, complex_to_complex = kind
    prim = Primitive(f"fft.{name}", _fftn_kernel(name))
    NUMPY_QUIET.add(prim)
    COST_LIBRARY.add(prim)

    def function(
        x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str = "backward"
    ) -> Array:
        check_array(x, name, "x", category)
        if axes is None:
            if s is not None:
                raise ValueError(f"{name}: s was given without axes; the standard requires both")
            axes_ = tuple(range(x.ndim))
        else:
            if not isinstance(axes, Sequence) or isinstance(axes, str):
                raise TypeError(f"{name}: axes must be a sequence of ints, got {type(axes).__name__}")
            axes_ = normalize_axes(tuple(axes), x.ndim, name, "axes")
        if not complex_to_complex and not axes_:
            raise ValueError(f"{name}: needs at least one axis to transform")
        if s is None:
            sizes = [x.shape[a] for a in axes_]
            if sizes:
                sizes[-1] = default_last(sizes[-1])
        else:
            if not isinstance(s, Sequence) or isinstance(s, str):
                raise TypeError(f"{name}: s must be a sequence of ints, got {type(s).__name__}")
            if len(s) != len(axes_):
                raise ValueError(
                    f"{name}: s and axes must have the same length, got {tuple(s)} and {tuple(axes or ())}"
                )
            sizes = [check_int(v, name, "s") for v in s]
            last = len(sizes) - 1
            for i, (v, a) in enumerate(zip(sizes, axes_)):
                if v == -1:
                    sizes[i] = default_last(x.shape[a]) if i == last else x.shape[a]
        sizes_ = tuple(_check_size(v, name, "s") for v in sizes)
        shape = list(x.shape)
        for a, v in zip(axes_, sizes_):
            shape[a] = v
        check_result_size(tuple(shape), COMPLEX_OF.get(x._dtype, x._dtype), name)
        norm = _check_norm(norm, name)
        return bind(prim, x._device, x, s=sizes_, axes=axes_, norm=norm, dtype=out_dtype(x._dtype))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.primitive = prim  # type: ignore[attr-defined]  # an attribute on a function (tests/_numerics.py reads it)
    return function


fftn = _transform_nd("fftn", _C2C, "n-dimensional discrete Fourier transform of complex input.")
ifftn = _transform_nd("ifftn", _C2C, "n-dimensional inverse discrete Fourier transform of complex input.")
rfftn = _transform_nd("rfftn", _R2C, "n-dimensional DFT of real input (half spectrum along the last axis).")
irfftn = _transform_nd("irfftn", _C2R, "Inverse of rfftn: real output of sizes s (last default 2*(M-1)).")


# -- sample frequencies -----------------------------------------------------------------------


def _freq_kernel(k: Any, d: Any, *, n: int, real: bool, dtype: DType) -> Any:
    # The frequencies in float64 (exact integers over n*d), then cast to the requested dtype.
    if real:
        ints = k.arange(n // 2 + 1, dtype=np.float64)
    else:
        ints = k.concatenate([k.arange((n - 1) // 2 + 1, dtype=np.float64), k.arange(-(n // 2), 0, dtype=np.float64)])
    return k.asarray(ints / (n * d), dtype=dtype.np)


_FREQ = Primitive("fft.fftfreq", _freq_kernel)
NUMPY_QUIET.add(_FREQ)


def _frequencies(fname: str, n: Any, d: Any, dtype: Any, device: Any, real: bool) -> Array:
    n = _check_size(n, fname, "n")
    value = normalize_scalar(d)
    if value is None or isinstance(value, (bool, complex)):
        raise TypeError(f"{fname}: d must be a real number, got {type(d).__name__}")
    if not math.isfinite(value) or value == 0:
        raise ValueError(f"{fname}: d (the sample spacing) must be a finite non-zero number, got {value}")
    where = resolve_device(device, fname)
    if dtype is None:
        dtype = capabilities(where).default_float
    else:
        dtype = check_dtype_on(where, check_dtype(dtype, fname), fname)
        check_category(dtype, fname, "real floating-point", "dtype")
    check_result_size((n // 2 + 1 if real else n,), dtype, fname)
    return bind(_FREQ, where, float(value), n=n, real=real, dtype=dtype)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None, device: Any = None) -> Array:
    """Sample frequencies of an n-point DFT: [0, 1, ..., -(n//2), ..., -1] / (d*n)."""
    return _frequencies("fftfreq", n, d, dtype, device, real=False)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None, device: Any = None) -> Array:
    """Sample frequencies of rfft: [0, 1, ..., n//2] / (d*n)."""
    return _frequencies("rfftfreq", n, d, dtype, device, real=True)


# -- shifts -------------------------------------------------------------------------------------


def _roll_kernel(k: Any, x: Any, *, shifts: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    return k.roll(x, shifts, axis=axes) if axes else x


_ROLL = Primitive("fft.shift", _roll_kernel, moves_data=True)


def _shift(fname: str, x: Any, axes: Any, inverse: bool) -> Array:
    check_array(x, fname, "x", "floating-point")
    if axes is None:
        axes_ = tuple(range(x.ndim))
    elif isinstance(axes, Sequence) and not isinstance(axes, str):
        axes_ = tuple(normalize_axis(a, x.ndim, fname, "axes") for a in axes)
    else:
        axes_ = (normalize_axis(axes, x.ndim, fname, "axes"),)
    shifts = tuple(-(x.shape[a] // 2) if inverse else x.shape[a] // 2 for a in axes_)
    return bind(_ROLL, x._device, x, shifts=shifts, axes=axes_)


def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Move the zero-frequency term to the centre (roll each axis by half its length)."""
    return _shift("fftshift", x, axes, inverse=False)


def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Inverse of fftshift (differs from it by one sample along odd-length axes)."""
    return _shift("ifftshift", x, axes, inverse=True)


def __dir__() -> list[str]:
    """Only the public names (the helpers this module imports are not part of its API)."""
    return sorted(__all__)
