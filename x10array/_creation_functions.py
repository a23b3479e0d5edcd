"""Creation functions (the standard's "Creation Functions" chapter) and device copies."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _dtypes
from ._array_object import Array
from ._device import Device, current_device
from ._dtypes import FROM_NUMPY, DType, check_dtype
from ._helpers import check_array, check_int, check_shape, same_device
from ._ops import Primitive, bind

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]  # fmt: skip


def resolve_device(device: Any, fname: str) -> Device:
    if device is None:
        return current_device()
    if isinstance(device, Device):
        return device
    raise ValueError(f"{fname}: device must be an x10array.Device, got {device!r}")


def from_host(host: np.ndarray, device: Device, *, shared: bool) -> Array:
    """Place a NumPy array on `device` (a transfer, not a primitive: no graph to record)."""
    dtype = FROM_NUMPY.get(host.dtype)
    if dtype is None:
        raise TypeError(f"x10array has no dtype for NumPy's {host.dtype}")
    if device.is_lazy:
        from . import _lazy

        return _lazy.from_host(host, dtype, device)
    from ._eager import to_device_buffer

    buf = to_device_buffer(host, device)
    return Array._new(buf, dtype, device, shared=shared and buf is host)


def to_device(x: Array, device: Device, /, *, stream: Any = None) -> Array:
    """Copy `x` to `device`, bit for bit (the seed's `Tensor(copying:to:)`)."""
    check_array(x, "to_device")
    if stream is not None:
        raise ValueError("to_device: streams are not supported; pass stream=None")
    device = resolve_device(device, "to_device")
    if device == x._device:
        return x
    host = x._host()
    x._shared = True
    return from_host(host, device, shared=True)


def _python_dtype(obj: Any) -> DType | None:
    """The standard's default dtype for a Python scalar or nested sequence of them."""
    kinds = set()

    def walk(o: Any) -> None:
        if isinstance(o, (list, tuple)):
            for item in o:
                walk(item)
        elif isinstance(o, bool):
            kinds.add(bool)
        elif isinstance(o, int):
            kinds.add(int)
        elif isinstance(o, float):
            kinds.add(float)
        elif isinstance(o, complex):
            kinds.add(complex)
        else:
            kinds.add(object)

    walk(obj)
    if object in kinds:
        return None
    if complex in kinds:
        return _dtypes.DEFAULT_COMPLEX
    if float in kinds:
        return _dtypes.DEFAULT_FLOAT
    if int in kinds:
        return _dtypes.DEFAULT_INT
    if bool in kinds:
        return _dtypes.bool
    return _dtypes.DEFAULT_FLOAT  # an empty sequence


def asarray(
    obj: Any,
    /,
    *,
    dtype: DType | None = None,
    device: Device | None = None,
    copy: bool | None = None,
) -> Array:
    """Convert `obj` (an array, a Python scalar or nested sequence, a NumPy array, any
    object with `__dlpack__` or the buffer protocol) to an x10array array."""
    if dtype is not None:
        dtype = check_dtype(dtype, "asarray")
    if copy not in (None, True, False):
        raise ValueError(f"asarray: copy must be True, False or None, got {copy!r}")
    if type(obj) is Array:
        target = obj._device if device is None else resolve_device(device, "asarray")
        moved = target != obj._device
        cast = dtype is not None and dtype is not obj._dtype
        if copy is False and (moved or cast):
            raise ValueError("asarray: copy=False, but a copy is needed (another device or dtype)")
        out = obj
        if cast:
            from ._data_type_functions import astype

            out = astype(out, dtype)
        elif copy and not moved:
            out = bind(_COPY, out._device, out)
        if moved:
            out = to_device(out, target)
        return out
    device = resolve_device(device, "asarray")
    if isinstance(obj, (bool, int, float, complex, list, tuple)) and not isinstance(obj, np.generic):
        inferred = _python_dtype(obj)
        if inferred is not None:
            target = dtype or inferred
            if isinstance(obj, int) and not isinstance(obj, bool) and target.kind in ("signed", "unsigned"):
                info = np.iinfo(target.np)
                if not info.min <= obj <= info.max:
                    raise OverflowError(f"asarray: the Python int {obj} does not fit in {target.name}")
            if copy is False:
                raise ValueError("asarray: copy=False is impossible for Python scalars and sequences")
            try:
                host = np.array(obj, dtype=target.np)
            except (ValueError, OverflowError, TypeError) as e:
                raise type(e)(f"asarray: {e}") from None
            return from_host(host, device, shared=False)
    try:
        if hasattr(obj, "__array__") or isinstance(obj, np.generic) or hasattr(obj, "__array_interface__"):
            host = np.asarray(obj)
        elif hasattr(obj, "__dlpack__"):
            host = np.from_dlpack(obj)
        else:
            host = np.asarray(memoryview(obj)) if _has_buffer(obj) else np.asarray(obj)
    except (TypeError, ValueError) as e:
        raise TypeError(f"asarray: cannot convert {type(obj).__name__} to an array: {e}") from None
    if host.dtype not in FROM_NUMPY:
        raise TypeError(f"asarray: the dtype {host.dtype} is not one of the standard's dtypes")
    if dtype is not None and host.dtype != dtype.np:
        if copy is False:
            raise ValueError("asarray: copy=False, but the dtype must change")
        host = host.astype(dtype.np)
        owned = True
    elif copy:
        host = host.copy()
        owned = True
    else:
        owned = False
    return from_host(host, device, shared=not owned)


def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


_COPY = Primitive("copy", lambda k, x: k.array(x, copy=True))


def from_dlpack(x: Any, /, *, device: Device | None = None, copy: bool | None = None) -> Array:
    """Import an array from any object that implements the DLPack protocol."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
    if type(x) is Array:
        return asarray(x, device=device, copy=copy)
    target = resolve_device(device, "from_dlpack")
    try:
        host = np.from_dlpack(x, copy=copy)
    except BufferError as e:
        raise BufferError(f"from_dlpack: {e}") from None
    if host.dtype not in FROM_NUMPY:
        raise TypeError(f"from_dlpack: the dtype {host.dtype} is not one of the standard's dtypes")
    return from_host(host, target, shared=not copy)


# -- filled arrays ----------------------------------------------------------------------------

_FULL = Primitive("full", lambda k, *, shape, value, dtype: k.full(shape, value, dtype=dtype.np))
_EMPTY = Primitive("empty", lambda k, *, shape, dtype: k.zeros(shape, dtype=dtype.np))


def _default_dtype_for(value: Any) -> DType:
    if isinstance(value, bool):
        return _dtypes.bool
    if isinstance(value, int):
        return _dtypes.DEFAULT_INT
    if isinstance(value, float):
        return _dtypes.DEFAULT_FLOAT
    if isinstance(value, complex):
        return _dtypes.DEFAULT_COMPLEX
    raise TypeError(f"full: fill_value must be a Python bool, int, float or complex, got {type(value).__name__}")


def _fill_value(value: Any, dtype: DType, fname: str) -> Any:
    from ._helpers import check_scalar, normalize_scalar

    scalar = normalize_scalar(value)
    if scalar is None:
        raise TypeError(f"{fname}: fill_value must be a Python scalar, got {type(value).__name__}")
    if isinstance(scalar, int) and not isinstance(scalar, bool) and dtype.kind in ("real", "complex"):
        return float(scalar) if dtype.kind == "real" else complex(scalar)
    if isinstance(scalar, float) and dtype.kind == "complex":
        return complex(scalar)
    return check_scalar(scalar, dtype, fname)


def full(shape: Any, fill_value: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    shape = check_shape(shape, "full")
    dtype = check_dtype(dtype, "full") if dtype is not None else _default_dtype_for(normalize(fill_value))
    value = _fill_value(fill_value, dtype, "full")
    return bind(_FULL, resolve_device(device, "full"), shape=shape, value=value, dtype=dtype)


def normalize(value: Any) -> Any:
    from ._helpers import normalize_scalar

    scalar = normalize_scalar(value)
    return value if scalar is None else scalar


def zeros(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    shape = check_shape(shape, "zeros")
    dtype = check_dtype(dtype, "zeros") if dtype is not None else _dtypes.DEFAULT_FLOAT
    return bind(_FULL, resolve_device(device, "zeros"), shape=shape, value=dtype.np.type(0).item(), dtype=dtype)


def ones(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    shape = check_shape(shape, "ones")
    dtype = check_dtype(dtype, "ones") if dtype is not None else _dtypes.DEFAULT_FLOAT
    return bind(_FULL, resolve_device(device, "ones"), shape=shape, value=dtype.np.type(1).item(), dtype=dtype)


def empty(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    shape = check_shape(shape, "empty")
    dtype = check_dtype(dtype, "empty") if dtype is not None else _dtypes.DEFAULT_FLOAT
    return bind(_EMPTY, resolve_device(device, "empty"), shape=shape, dtype=dtype)


def _like(x: Array, dtype: Any, device: Any, fname: str) -> tuple[DType, Device]:
    check_array(x, fname)
    dtype = check_dtype(dtype, fname) if dtype is not None else x._dtype
    device = x._device if device is None else resolve_device(device, fname)
    return dtype, device


def zeros_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dtype, device = _like(x, dtype, device, "zeros_like")
    return zeros(x.shape, dtype=dtype, device=device)


def ones_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dtype, device = _like(x, dtype, device, "ones_like")
    return ones(x.shape, dtype=dtype, device=device)


def empty_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dtype, device = _like(x, dtype, device, "empty_like")
    return empty(x.shape, dtype=dtype, device=device)


def full_like(x: Array, /, fill_value: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dtype, device = _like(x, dtype, device, "full_like")
    return full(x.shape, fill_value, dtype=dtype, device=device)


# -- ranges and grids -------------------------------------------------------------------------

_ARANGE = Primitive(
    "arange",
    lambda k, *, start, step, num, dtype: (k.arange(num) * step + start).astype(dtype.np)
    if dtype.kind not in ("real", "complex")
    else k.asarray(start + step * k.arange(num, dtype=dtype.np), dtype=dtype.np),
)


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: DType | None = None,
    device: Device | None = None,
) -> Array:
    for arg, v in (("start", start), ("stop", stop), ("step", step)):
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            v2 = normalize(v)
            if not isinstance(v2, (int, float)) or isinstance(v2, bool):
                raise TypeError(f"arange: {arg} must be an int or float, got {type(v).__name__}")
    start, stop, step = normalize(start), normalize(stop), normalize(step)
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_float = any(isinstance(v, float) for v in (start, stop, step))
    if dtype is None:
        dtype = _dtypes.DEFAULT_FLOAT if is_float else _dtypes.DEFAULT_INT
    dtype = check_dtype(dtype, "arange")
    if dtype.kind == "bool" or (is_float and dtype.kind in ("signed", "unsigned")):
        raise TypeError(f"arange: dtype {dtype.name} cannot hold the range")
    num = max(0, math.ceil((stop - start) / step))
    return bind(_ARANGE, resolve_device(device, "arange"), start=start, step=step, num=num, dtype=dtype)


def _linspace_kernel(k: Any, *, start: Any, stop: Any, num: int, endpoint: bool, dtype: DType) -> Any:
    return k.linspace(start, stop, num, endpoint=endpoint, dtype=dtype.np)


_LINSPACE = Primitive("linspace", _linspace_kernel)


def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: DType | None = None,
    device: Device | None = None,
    endpoint: bool = True,
) -> Array:
    num = check_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    start, stop = normalize(start), normalize(stop)
    for arg, v in (("start", start), ("stop", stop)):
        if not isinstance(v, (int, float, complex)) or isinstance(v, bool):
            raise TypeError(f"linspace: {arg} must be a Python number, got {type(v).__name__}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    if dtype is None:
        dtype = _dtypes.DEFAULT_COMPLEX if is_complex else _dtypes.DEFAULT_FLOAT
    dtype = check_dtype(dtype, "linspace")
    if dtype.kind not in ("real", "complex") or (is_complex and dtype.kind != "complex"):
        raise TypeError(f"linspace: dtype must be floating-point (complex for complex bounds), got {dtype.name}")
    return bind(
        _LINSPACE, resolve_device(device, "linspace"), start=start, stop=stop, num=num, endpoint=bool(endpoint), dtype=dtype
    )


_EYE = Primitive("eye", lambda k, *, n, m, diag, dtype: k.eye(n, m, k=diag, dtype=dtype.np))


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: DType | None = None,
    device: Device | None = None,
) -> Array:
    n = check_int(n_rows, "eye", "n_rows")
    m = n if n_cols is None else check_int(n_cols, "eye", "n_cols")
    if n < 0 or m < 0:
        raise ValueError(f"eye: n_rows and n_cols must be non-negative, got {n}, {m}")
    diag = check_int(k, "eye", "k")
    dtype = check_dtype(dtype, "eye") if dtype is not None else _dtypes.DEFAULT_FLOAT
    return bind(_EYE, resolve_device(device, "eye"), n=n, m=m, diag=diag, dtype=dtype)


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...]:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if not arrays:
        return ()
    for i, a in enumerate(arrays):
        check_array(a, "meshgrid", f"arrays[{i}]", "numeric")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays must be 1-D, arrays[{i}] has shape {a.shape}")
    if len({a._dtype for a in arrays}) != 1:
        raise TypeError("meshgrid: all arrays must have the same dtype")
    same_device(arrays, "meshgrid")
    from ._manipulation_functions import broadcast_to, reshape

    n = len(arrays)
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n > 1 and i < 2:
            axis = 1 - i
        view = [1] * n
        view[axis] = a.shape[0]
        out.append(broadcast_to(reshape(a, tuple(view)), tuple(shape)))
    return tuple(out)


_TRIL = Primitive("tril", lambda k, x, *, diag: k.tril(x, k=diag))
_TRIU = Primitive("triu", lambda k, x, *, diag: k.triu(x, k=diag))


def tril(x: Array, /, *, k: int = 0) -> Array:
    check_array(x, "tril")
    if x.ndim < 2:
        raise ValueError(f"tril: x must have at least 2 dimensions, got shape {x.shape}")
    return bind(_TRIL, x._device, x, diag=check_int(k, "tril", "k"))


def triu(x: Array, /, *, k: int = 0) -> Array:
    check_array(x, "triu")
    if x.ndim < 2:
        raise ValueError(f"triu: x must have at least 2 dimensions, got shape {x.shape}")
    return bind(_TRIU, x._device, x, diag=check_int(k, "triu", "k"))
