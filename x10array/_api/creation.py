"""Creation functions (the standard's "Creation Functions" chapter) and device copies."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from .._core import dtypes as _dtypes
from .._core.array import Array
from .._core.backend import impl as backend_impl
from .._core.capabilities import capabilities, check_dtype_on
from .._core.convert import transfer
from .._core.devices import Device, DeviceKind, as_device, current_device
from .._core.dispatch import is_tracer
from .._core.dtypes import FROM_NUMPY, DType, check_dtype
from .._core.kernels import NUMPY
from .._core.mesh import NamedSharding
from .._core.policies import NUMPY_QUIET
from .._core.primitive import Aval, Primitive, bind, same_as_first
from .._core.validation import (
    check_array,
    check_int,
    check_result_size,
    check_scalar,
    check_shape,
    common_device,
    normalize_scalar,
)

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]  # fmt: skip


def resolve_device(device: Any, fname: str) -> Device:
    """A `device=` argument (Device, device string or None for the current default)."""
    if device is None:
        return current_device()
    if type(device) is Device:
        return device
    return as_device(device, fname)


def placed(out: Array, device: Any) -> Array:
    """`out`, just created: uncommitted when no device was given (`device=None`), so that it
    moves to the committed arrays it meets (docs/devices.md); committed otherwise."""
    if device is None:
        out._committed = False
    return out


def _like_placed(out: Array, x: Array, device: Any) -> Array:
    """The result of a `*_like` function: derived from `x`, so committed as `x` is, unless a
    device was given."""
    out._committed = device is not None or x._committed
    return out


def from_host(
    host: np.ndarray, device: Device, *, shared: bool, layout: NamedSharding | None = None, fname: str = "asarray"
) -> Array:
    """Place a NumPy array on `device` (a transfer, not a primitive: no graph to record), in
    `layout` on a mesh (checked here: ValueError naming `fname`)."""
    dtype = FROM_NUMPY.get(host.dtype)
    if dtype is None:
        raise TypeError(f"x10array has no dtype for NumPy's {host.dtype}")
    check_dtype_on(device, dtype, fname)
    if layout is not None:
        layout.check(host.shape, fname)
        return backend_impl(device).place(host, dtype, device, shared=shared, layout=layout.spec)
    return backend_impl(device).place(host, dtype, device, shared=shared)


def _layout(device: Any) -> tuple[Any, NamedSharding | None]:
    """A `device=` argument that may be a NamedSharding: (the device, the layout or None)."""
    if type(device) is NamedSharding:
        return device.device, device
    return device, None


def to_device(x: Array, device: Device | NamedSharding, /, *, stream: Any = None) -> Array:
    """Copy `x` to `device`, bit for bit (Swift for TensorFlow's `Tensor(copying:to:)`); a
    NamedSharding places it on the sharding's mesh in that layout. The result is committed to `device`
    (docs/devices.md)."""
    check_array(x, "to_device")
    if stream is not None:
        raise ValueError("to_device: streams are not supported; pass stream=None")
    device, layout = _layout(device)
    device = resolve_device(device, "to_device")
    check_dtype_on(device, x._dtype, "to_device")
    if layout is not None:
        layout.check(x.shape, "to_device")
        if device == x._device:
            impl = backend_impl(device)
            return x if impl.layout(x) == layout.spec else impl.relayout(x, layout.spec)
        return from_host(np.asarray(x._host()), device, shared=True, layout=layout, fname="to_device")
    if device == x._device:
        x._committed = True  # an explicit placement, even where nothing moves
        return x
    return transfer(x, device)


def _python_dtype(obj: Any, device: Device) -> DType | None:
    """`device`'s default dtype for a Python scalar or nested sequence of them."""
    kinds: set[type] = set()

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
    caps = capabilities(device)
    for kind in (complex, float, int, bool):
        if kind in kinds:
            return caps.default_for(kind)
    return caps.default_float  # an empty sequence


def asarray(
    obj: Any,
    /,
    *,
    dtype: DType | None = None,
    device: Device | NamedSharding | None = None,
    copy: bool | None = None,
) -> Array:
    """Convert `obj` (an array, a Python scalar or nested sequence, a NumPy array, any
    object with `__dlpack__` or the buffer protocol) to an x10array array."""
    if dtype is not None:
        dtype = check_dtype(dtype, "asarray")
    if copy not in (None, True, False):
        raise ValueError(f"asarray: copy must be True, False or None, got {copy!r}")
    if type(obj) is Array:
        if device is None and dtype is None and not copy:
            return obj  # the common case: nothing to do
        return _asarray_array(obj, dtype, device, copy)
    given = device
    device, layout = _layout(device)
    device = resolve_device(device, "asarray")
    if is_tracer(obj):  # not through __array__: that would drop the gradient silently
        raise TypeError("asarray: x is an autodiff tracer; use its namespace's asarray")
    if isinstance(obj, (bool, int, float, complex, list, tuple)) and not isinstance(obj, np.generic):
        out = _asarray_python(obj, dtype, device, copy, layout)
        if out is not None:
            return placed(out, given)
    host, owned = _host_in_dtype(_host_array(obj), dtype, copy)
    return placed(from_host(host, device, shared=not owned, layout=layout), given)


def _asarray_array(obj: Array, dtype: DType | None, device: Any, copy: bool | None) -> Array:
    """`asarray` of an x10array array: itself, or a copy cast to `dtype` and moved to `device`."""
    device, layout = _layout(device)
    target = obj._device if device is None else resolve_device(device, "asarray")
    moved = target != obj._device or (layout is not None and backend_impl(target).layout(obj) != layout.spec)
    if device is not None and not moved and not obj._committed:
        obj._committed = True  # an explicit placement, as to_device's
    cast = dtype is not None and dtype is not obj._dtype
    if copy is False and (moved or cast):
        raise ValueError("asarray: copy=False, but a copy is needed (another device or dtype)")
    out = obj
    if cast and dtype is not None:
        from .data_types import astype

        out = astype(out, dtype)
    elif copy and not moved:
        out = bind(_COPY, out._device, out)
    if moved:
        out = to_device(out, target if layout is None else layout)
    return out


def _asarray_python(
    obj: Any, dtype: DType | None, device: Device, copy: bool | None, layout: NamedSharding | None = None
) -> Array | None:
    """`asarray` of a Python scalar or nested sequence of them, in the standard's default
    dtype for it unless `dtype` is given; None when the sequence holds other objects (NumPy
    arrays, say): NumPy converts those."""
    inferred = _python_dtype(obj, device)
    if inferred is None:
        return None
    target = dtype or inferred
    if isinstance(obj, int) and not isinstance(obj, bool) and target.kind in ("signed", "unsigned"):
        info = np.iinfo(target.np)
        if not info.min <= obj <= info.max:
            raise OverflowError(f"asarray: the Python int {obj} does not fit in {target.name}")
    if copy is False:
        raise ValueError("asarray: copy=False is impossible for Python scalars and sequences")
    try:
        with np.errstate(over="ignore"):  # floats beyond float32's range become inf
            host = np.array(obj, dtype=target.np)
    except (ValueError, OverflowError, TypeError) as e:
        raise type(e)(f"asarray: {e}") from None
    return from_host(host, device, shared=False, layout=layout)


def _host_array(obj: Any) -> np.ndarray:
    """Any other object as a NumPy array (without a copy where NumPy can avoid one), through
    `__array__`, `__array_interface__`, `__dlpack__` or the buffer protocol, in that order."""
    try:
        if hasattr(obj, "__array__") or isinstance(obj, np.generic) or hasattr(obj, "__array_interface__"):
            host = np.asarray(obj)
        elif hasattr(obj, "__dlpack__"):
            host = np.from_dlpack(obj)
        else:
            host = np.asarray(memoryview(obj)) if _has_buffer(obj) else np.asarray(obj)
    except (TypeError, ValueError) as e:
        raise TypeError(f"asarray: cannot convert {type(obj).__name__} to an array: {e}") from None
    if host.dtype.kind == "O":
        raise TypeError(
            f"asarray: cannot convert {type(obj).__name__} to an array of numbers; pass an array, a Python"
            " scalar or a nested sequence of them"
        )
    return host


def _host_in_dtype(host: np.ndarray, dtype: DType | None, copy: bool | None) -> tuple[np.ndarray, bool]:
    """`host` cast to `dtype` (or copied when `copy`), and whether the result is a buffer of
    its own (else it is the caller's: the array made from it is marked shared)."""
    if host.dtype not in FROM_NUMPY and (dtype is None or host.dtype.kind not in "biufc"):
        raise TypeError(f"asarray: the dtype {host.dtype} is not one of the standard's dtypes")
    if dtype is not None and host.dtype != dtype.np:
        if copy is False:
            raise ValueError("asarray: copy=False, but the dtype must change")
        with np.errstate(over="ignore", invalid="ignore"):
            return host.astype(dtype.np), True
    if copy:
        return host.copy(), True
    return host, False


def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


class NotDLPackError(TypeError, AttributeError):
    """from_dlpack of an object without `__dlpack__`: a TypeError (bad input), and the
    AttributeError that the standard names for it."""


_COPY = Primitive("copy", lambda k, x: k.array(x, copy=True), rule=same_as_first, moves_data=True)


def from_dlpack(x: Any, /, *, device: Device | None = None, copy: bool | None = None) -> Array:
    """Import an array from any object that implements the DLPack protocol.

    Zero-copy where the memory can be shared (the result is then marked `_shared`, so a
    write to it copies first); a copy when `copy=True` or another device is asked for.
    """
    if copy not in (None, True, False):
        raise ValueError(f"from_dlpack: copy must be True, False or None, got {copy!r}")
    target = None if device is None else resolve_device(device, "from_dlpack")
    if type(x) is Array:
        if target is not None and target != x._device:
            if copy is False:
                raise ValueError(f"from_dlpack: moving the array to {target!r} needs a copy, but copy=False")
            return to_device(x, target)
        if copy:
            return bind(_COPY, x._device, x)
        x._shared = True
        return Array._new(x._data, x._dtype, x._device, shared=True)
    if not hasattr(x, "__dlpack__"):
        raise NotDLPackError(
            f"from_dlpack: {type(x).__name__} does not implement __dlpack__; pass an array of a DLPack-capable"
            " library (NumPy, jax, PyTorch, ...), or use asarray for Python scalars and sequences"
        )
    from .interchange import device_from_dlpack

    source = device_from_dlpack(x, "from_dlpack")
    target = source if target is None else target
    if source.kind is not target.kind or source.ordinal != target.ordinal:
        if copy is False:
            raise ValueError(f"from_dlpack: moving the data to {target!r} needs a copy, but copy=False")
        copy = True
    if target.kind is not DeviceKind.CPU and source.kind is target.kind and not target.is_lazy:
        import jax

        buf = jax.dlpack.from_dlpack(x, copy=copy)
        if buf.dtype not in FROM_NUMPY:
            raise TypeError(f"from_dlpack: the dtype {buf.dtype} is not one of the standard's dtypes")
        check_dtype_on(target, FROM_NUMPY[buf.dtype], "from_dlpack")
        return placed(Array._new(buf, FROM_NUMPY[buf.dtype], target), device)
    host_device: Literal["cpu"] | None = "cpu" if source.kind is not DeviceKind.CPU else None
    try:
        host = np.from_dlpack(x, device=host_device, copy=copy)
    except (RuntimeError, BufferError, TypeError) as e:
        if "dtype" not in str(e).lower():
            raise
        name = str(getattr(x, "dtype", "its dtype")).removeprefix("torch.")
        raise TypeError(
            f"from_dlpack: {name} is not one of x10array's dtypes; convert it to one first"
            " (e.g. a bfloat16 tensor with tensor.float() or tensor.to(torch.float32))"
        ) from None
    if host.dtype not in FROM_NUMPY:
        raise TypeError(f"from_dlpack: the dtype {host.dtype} is not one of the standard's dtypes")
    check_dtype_on(target, FROM_NUMPY[host.dtype], "from_dlpack")
    if not copy and not host.flags.writeable and type(x) is np.ndarray and x.flags.writeable:
        host = x  # (NumPy before 2.2 imports every capsule read-only, a writable ndarray's too)
    if (
        not copy
        and target.is_lazy
        and target.kind is DeviceKind.CPU
        and target.mesh is None
        and (copy is False or host.flags.writeable)
    ):
        # The producer's memory is the array's value, as on the eager CPU: a write into it (a
        # NumPy array written after the import) is seen by the next read and operation, run
        # interpreted or compiled (the backend's host buffer: never donated or written in place).
        # With copy=None only where the producer may write it; a read-only buffer is copied.
        # share_host gives the new array its value (no placement first: that would copy the
        # buffer only to drop the copy); where it cannot (inside a recording of
        # x10array.compile), the array is placed as a copy.
        out = Array._new(None, FROM_NUMPY[host.dtype], target, shared=True)
        if backend_impl(target).share_host(out, host):
            return placed(out, device)
    out = from_host(host, target, shared=not copy, fname="from_dlpack")
    return placed(out, device)


# -- filled arrays ----------------------------------------------------------------------------


def _as(k: Any, value: Any, dtype: DType) -> Any:
    """A scalar operand (an int already in two's complement, see `_operand`) as `dtype`."""
    return k.asarray(value).astype(dtype.np)


def _operand(value: Any, dtype: DType) -> Any:
    """A Python scalar to travel as an operand (traced, so one compiled program serves every
    value): uint64 values beyond int64 go as their two's complement, and `_as` wraps back."""
    if dtype is _dtypes.uint64 and value >= 2**63:
        return value - 2**64
    return value


# The fill value is an operand, not a parameter: no compilation per value.
_FULL = Primitive(
    "full",
    lambda k, value, *, shape, dtype: k.full(shape, _as(k, value, dtype), dtype=dtype.np),
    rule=lambda value, *, shape, dtype: Aval(shape, dtype.np),
    moves_data=True,
)
_EMPTY = Primitive("empty", lambda k, *, shape, dtype: k.zeros(shape, dtype=dtype.np), moves_data=True)


def _default_dtype_for(value: Any, device: Device, fname: str) -> DType:
    """`device`'s default dtype for a fill value given without a dtype."""
    for kind in (bool, int, float, complex):
        if isinstance(value, kind):
            return capabilities(device).default_for(kind)
    raise TypeError(f"{fname}: fill_value must be a Python bool, int, float or complex, got {type(value).__name__}")


def _fill_value(value: Any, dtype: DType, fname: str) -> Any:
    """`value` as a Python scalar of `dtype`'s kind, rounded to `dtype` (floats beyond the
    range of a single-precision dtype become infinities, as a cast would make them)."""
    scalar = normalize_scalar(value)
    if scalar is None:
        raise TypeError(f"{fname}: fill_value must be a Python scalar, got {type(value).__name__}")
    if dtype.kind in ("real", "complex") and not isinstance(scalar, bool):
        if isinstance(scalar, complex) and dtype.kind == "real":
            return check_scalar(scalar, dtype, fname)  # raises TypeError
        convert = float if dtype.kind == "real" else complex
        try:
            scalar = convert(scalar)
        except OverflowError:
            raise OverflowError(f"{fname}: fill_value {value} is too large for {dtype.name}") from None
        with np.errstate(over="ignore"):
            return convert(dtype.np.type(scalar))
    return check_scalar(scalar, dtype, fname)


def normalize(value: Any) -> Any:
    """NumPy scalars as Python scalars; anything else unchanged."""
    scalar = normalize_scalar(value)
    return value if scalar is None else scalar


_KIND_RANK = {"bool": 0, "signed": 1, "unsigned": 1, "real": 2, "complex": 3}


def _full_from_array(shape: tuple[int, ...], fill: Array, dtype: Any, device: Any, fname: str) -> Array:
    """`full` with a 0-D array as the fill value (as NumPy, JAX and PyTorch take one, and SciPy
    passes one): its dtype by default, cast as `astype` would to a dtype of the same or a
    higher kind; on its device unless `device` says otherwise. The value stays an operand: on
    the lazy device nothing is computed."""
    if fill.ndim != 0:
        raise ValueError(f"{fname}: fill_value must be a Python scalar or a 0-D array, got shape {fill.shape}")
    dtype = fill._dtype if dtype is None else check_dtype(dtype, fname)
    if _KIND_RANK[fill._dtype.kind] > _KIND_RANK[dtype.kind]:
        raise TypeError(f"{fname}: a {fill._dtype.name} fill_value cannot fill a {dtype.name} array")
    where = fill._device if device is None else resolve_device(device, fname)
    if where != fill._device:
        fill = transfer(fill, where)
    check_result_size(shape, dtype, fname)
    out = bind(_FULL, where, fill, shape=shape, dtype=dtype)
    out._committed = device is not None or fill._committed
    return out


def _full(shape: Any, fill_value: Any, dtype: Any, device: Any, fname: str) -> Array:
    shape = check_shape(shape, fname)
    if fill_value.__class__ is Array:
        return _full_from_array(shape, fill_value, dtype, device, fname)
    where = resolve_device(device, fname)
    if dtype is None:
        dtype = _default_dtype_for(normalize(fill_value), where, fname)
    dtype = check_dtype_on(where, check_dtype(dtype, fname), fname)
    value = _fill_value(fill_value, dtype, fname)
    check_result_size(shape, dtype, fname)
    return placed(bind(_FULL, where, _operand(value, dtype), shape=shape, dtype=dtype), device)


def _constant(shape: Any, value: int, dtype: Any, device: Any, fname: str) -> Array:
    """zeros / ones: `value` converted to the dtype (float by default)."""
    shape = check_shape(shape, fname)
    where = resolve_device(device, fname)
    dtype = _dtype_on(where, dtype, fname)
    check_result_size(shape, dtype, fname)
    out = bind(_FULL, where, dtype.np.type(value).item(), shape=shape, dtype=dtype)
    return placed(out, device)


def _empty(shape: Any, dtype: Any, device: Any, fname: str) -> Array:
    shape = check_shape(shape, fname)
    where = resolve_device(device, fname)
    dtype = _dtype_on(where, dtype, fname)
    check_result_size(shape, dtype, fname)
    return placed(bind(_EMPTY, where, shape=shape, dtype=dtype), device)


def _dtype_on(device: Device, dtype: Any, fname: str) -> DType:
    """A creation function's `dtype=` on `device`: the device's default float for None;
    ValueError for a dtype the device does not hold."""
    if dtype is None:
        return capabilities(device).default_float
    return check_dtype_on(device, check_dtype(dtype, fname), fname)


def full(shape: Any, fill_value: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of `shape` filled with `fill_value`."""
    return _full(shape, fill_value, dtype, device, "full")


def zeros(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of `shape` filled with zeros."""
    return _constant(shape, 0, dtype, device, "zeros")


def ones(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of `shape` filled with ones."""
    return _constant(shape, 1, dtype, device, "ones")


def empty(shape: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Uninitialized per the standard; here zero-filled (XLA has no uninitialized buffers)."""
    return _empty(shape, dtype, device, "empty")


def _like(x: Array, dtype: Any, device: Any, fname: str) -> tuple[tuple[int, ...], DType, Device]:
    check_array(x, fname)
    dtype = x._dtype if dtype is None else check_dtype(dtype, fname)
    device = x._device if device is None else resolve_device(device, fname)
    return x.shape, dtype, device


def zeros_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of zeros with the shape of `x` (and its dtype and device unless given)."""
    shape, dtype, where = _like(x, dtype, device, "zeros_like")
    return _like_placed(_constant(shape, 0, dtype, where, "zeros_like"), x, device)


def ones_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of ones with the shape of `x` (and its dtype and device unless given)."""
    shape, dtype, where = _like(x, dtype, device, "ones_like")
    return _like_placed(_constant(shape, 1, dtype, where, "ones_like"), x, device)


def empty_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array with the shape of `x` (and its dtype and device unless given), its values unset."""
    shape, dtype, where = _like(x, dtype, device, "empty_like")
    return _like_placed(_empty(shape, dtype, where, "empty_like"), x, device)


def full_like(x: Array, /, fill_value: Any, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """A new array of `fill_value` with the shape of `x` (and its dtype and device unless given)."""
    shape, dtype, where = _like(x, dtype, device, "full_like")
    return _like_placed(_full(shape, fill_value, dtype, where, "full_like"), x, device)


def _scalar_arg(value: Any, fname: str, arg: str) -> Any:
    """A 0-D array given where the standard's signature says Python scalar (arange's bounds,
    which decide the length): its value, read on the host; anything else unchanged."""
    if value.__class__ is Array:
        if value.ndim != 0:
            raise ValueError(f"{fname}: {arg} must be a Python scalar or a 0-D array, got shape {value.shape}")
        return value._host().item()
    return value


# -- ranges and grids -------------------------------------------------------------------------


def _arange_kernel(k: Any, start: int | float, step: int | float, *, num: int, dtype: DType) -> Any:
    if dtype.kind in ("signed", "unsigned"):
        # Exact integer arithmetic modulo 2**bits: start and step arrive wrapped into the
        # dtype's range, and every true element fits, so the wrapped result is exact.
        i = k.arange(num, dtype=k.int64).astype(dtype.np)
        return i * _as(k, step, dtype) + _as(k, start, dtype)
    return (start + step * k.arange(num, dtype=k.float64)).astype(dtype.np)


_ARANGE = Primitive("arange", _arange_kernel)
NUMPY_QUIET.add(_ARANGE)


def _real_arg(value: Any, fname: str, arg: str) -> int | float:
    scalar = normalize(value)
    if not isinstance(scalar, (int, float)) or isinstance(scalar, bool):
        raise TypeError(f"{fname}: {arg} must be an int or float, got {type(value).__name__}")
    if isinstance(scalar, float) and not math.isfinite(scalar):
        raise ValueError(f"{fname}: {arg} must be finite, got {scalar}")
    return scalar


def _wrap_int(value: int, dtype: DType) -> int:
    """`value` modulo 2**bits, as a value of `dtype` (two's complement for signed)."""
    lo, hi = (int(v) for v in (np.iinfo(dtype.np).min, np.iinfo(dtype.np).max))
    return (value - lo) % (hi - lo + 1) + lo


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: DType | None = None,
    device: Device | None = None,
) -> Array:
    """Evenly spaced values in [start, stop): ceil((stop - start) / step) elements.

    A 0-D array bound is read on the host (the length depends on it). A complex dtype holds
    the real values (as NumPy and array-api-strict give)."""
    start, stop, step = (_scalar_arg(v, "arange", a) for v, a in ((start, "start"), (stop, "stop"), (step, "step")))
    start = _real_arg(start, "arange", "start")
    stop = None if stop is None else _real_arg(stop, "arange", "stop")
    step = _real_arg(step, "arange", "step")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_float = any(isinstance(v, float) for v in (start, stop, step))
    where = resolve_device(device, "arange")
    if dtype is None:
        dtype = capabilities(where).default_for(float if is_float else int)
    dtype = check_dtype_on(where, check_dtype(dtype, "arange"), "arange")
    if dtype.kind not in ("signed", "unsigned", "real", "complex"):
        raise TypeError(f"arange: dtype must be a numeric dtype, got {dtype.name}")
    if is_float and dtype.kind not in ("real", "complex"):
        raise TypeError(f"arange: float arguments need a floating-point dtype, got {dtype.name}")
    if is_float:
        num = max(0, math.ceil((stop - start) / step))
    else:
        num = max(0, -int((start - stop) // step))  # exact ceiling division (of ints)
    if dtype.kind in ("signed", "unsigned") and num:
        info = np.iinfo(dtype.np)
        last = start + (num - 1) * step
        if not (info.min <= start <= info.max and info.min <= last <= info.max):
            raise OverflowError(f"arange: the values from {start} to {last} do not fit in {dtype.name}")
        start, step = _wrap_int(int(start), dtype), _wrap_int(int(step), dtype)
    else:
        try:
            start, step = float(start), float(step)
        except OverflowError:
            raise OverflowError(f"arange: start {start} or step {step} is too large for {dtype.name}") from None
    check_result_size((num,), dtype, "arange")
    start, step = _operand(start, dtype), _operand(step, dtype)
    return placed(bind(_ARANGE, where, start, step, num=num, dtype=dtype), device)


def _linspace_kernel(k: Any, *, start: Any, stop: Any, num: int, endpoint: bool, dtype: DType) -> Any:
    # The values depend on the parameters alone. Under jax they are computed on the host by
    # the NumPy form and embedded as a constant: XLA contracts `start + step * i` into fused
    # multiply-adds differently from one program to the next, and the standard asks that
    # linspace(a, b, n, endpoint=False) equal linspace(a, b, n + 1)[:-1] exactly.
    if k.is_jax:
        with np.errstate(all="ignore"):
            return k.asarray(_linspace_kernel(NUMPY, start=start, stop=stop, num=num, endpoint=endpoint, dtype=dtype))
    wide = np.complex128 if dtype.kind == "complex" else np.float64
    div = max(num - 1 if endpoint else num, 1)
    out = start + ((stop - start) / div) * np.arange(num, dtype=wide)
    if endpoint and num > 1:
        out[-1] = stop
    if dtype.kind in ("signed", "unsigned"):
        out = np.floor(out)  # as NumPy 2: integer linspace rounds toward -inf
    return out.astype(dtype.np)


def _linspace_operands_kernel(k: Any, start: Any, stop: Any, *, num: int, endpoint: bool, dtype: DType) -> Any:
    # The bounds are 0-D arrays (operands): the same formula as _linspace_kernel's, traced.
    wide = k.complex128 if dtype.kind == "complex" else k.float64
    start, stop = k.asarray(start).astype(wide), k.asarray(stop).astype(wide)
    div = max(num - 1 if endpoint else num, 1)
    out = start + k.rounded(((stop - start) / div) * k.arange(num, dtype=wide))
    if endpoint and num > 1:
        out = k.where(k.arange(num) == num - 1, stop, out)
    if dtype.kind in ("signed", "unsigned"):
        out = k.floor(out.real)
    return out.astype(dtype.np)


_LINSPACE = Primitive("linspace", _linspace_kernel)
NUMPY_QUIET.add(_LINSPACE)
_LINSPACE_OPERANDS = Primitive("linspace_operands", _linspace_operands_kernel)
NUMPY_QUIET.add(_LINSPACE_OPERANDS)


def linspace(
    start: int | float | complex | Array,
    stop: int | float | complex | Array,
    /,
    num: int,
    *,
    dtype: DType | None = None,
    device: Device | None = None,
    endpoint: bool = True,
) -> Array:
    """`num` evenly spaced numbers from `start` to `stop` (`stop` included unless `endpoint=False`)."""
    num = check_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if not isinstance(endpoint, bool):
        raise TypeError(f"linspace: endpoint must be a bool, got {type(endpoint).__name__}")
    if start.__class__ is Array or stop.__class__ is Array:
        return _linspace_arrays(start, stop, num, dtype, device, endpoint)
    start, stop = normalize(start), normalize(stop)
    for arg, v in (("start", start), ("stop", stop)):
        if not isinstance(v, (int, float, complex)) or isinstance(v, bool):
            raise TypeError(f"linspace: {arg} must be a Python number, got {type(v).__name__}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    where = resolve_device(device, "linspace")
    dtype = _linspace_dtype(dtype, is_complex, where)
    if dtype.kind in ("signed", "unsigned"):
        info = np.iinfo(dtype.np)
        for v in (start, stop):
            if isinstance(v, complex) or not info.min <= v <= info.max:
                raise OverflowError(f"linspace: the values from {start} to {stop} do not fit in {dtype.name}")
    convert: Callable[[Any], complex] = complex if dtype.kind == "complex" else float
    try:
        start, stop = convert(start), convert(stop)
    except OverflowError:
        raise OverflowError(f"linspace: start {start} or stop {stop} is too large for {dtype.name}") from None
    check_result_size((num,), dtype, "linspace")
    out = bind(_LINSPACE, where, start=start, stop=stop, num=num, endpoint=bool(endpoint), dtype=dtype)
    return placed(out, device)


def _linspace_dtype(dtype: Any, is_complex: bool, device: Device) -> DType:
    """linspace's dtype: `device`'s default floating-point dtype by default; an integer dtype
    is accepted as NumPy and array-api-strict accept it (values rounded toward -inf); complex
    bounds need complex."""
    if dtype is None:
        return capabilities(device).default_for(complex if is_complex else float)
    dtype = check_dtype_on(device, check_dtype(dtype, "linspace"), "linspace")
    if dtype.kind == "bool" or (is_complex and dtype.kind != "complex"):
        raise TypeError(f"linspace: dtype must be numeric (complex for complex bounds), got {dtype.name}")
    return dtype


def _linspace_arrays(start: Any, stop: Any, num: int, dtype: Any, device: Any, endpoint: bool) -> Array:
    """linspace with 0-D arrays as bounds (array-api-strict and NumPy take them): the bounds
    stay operands, so on the lazy device nothing is computed; on their device unless `device`
    says otherwise."""
    arrays = [v for v in (start, stop) if v.__class__ is Array]
    for arg, v in (("start", start), ("stop", stop)):
        if v.__class__ is Array:
            if v.ndim != 0 or v._dtype.kind == "bool":
                raise TypeError(f"linspace: {arg} must be a Python number or a numeric 0-D array")
        elif not isinstance(normalize(v), (int, float, complex)) or isinstance(normalize(v), bool):
            raise TypeError(f"linspace: {arg} must be a Python number, got {type(v).__name__}")
    is_complex = any(v._dtype.kind == "complex" if v.__class__ is Array else isinstance(normalize(v), complex)
                     for v in (start, stop))  # fmt: skip
    if dtype is None:
        floats = [v._dtype for v in arrays if v._dtype.kind in ("real", "complex")]
        dtype = floats[0] if floats else None
        if len(floats) == 2:
            dtype = _dtypes.promote(floats[0], floats[1], "linspace")
    where = arrays[0]._device if device is None else resolve_device(device, "linspace")
    if dtype is not None and is_complex and dtype.kind != "complex":
        dtype = capabilities(where).default_complex
    dtype = _linspace_dtype(dtype, is_complex, where)
    ops = [transfer(v, where) if v.__class__ is Array and v._device != where else v for v in (start, stop)]
    ops = [normalize(v) if v.__class__ is not Array else v for v in ops]
    check_result_size((num,), dtype, "linspace")
    out = bind(_LINSPACE_OPERANDS, where, *ops, num=num, endpoint=bool(endpoint), dtype=dtype)
    out._committed = device is not None or any(v._committed for v in arrays)
    return out


_EYE = Primitive("eye", lambda k, *, n, m, diag, dtype: k.eye(n, m, k=diag, dtype=dtype.np), moves_data=True)


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: DType | None = None,
    device: Device | None = None,
) -> Array:
    """A two-dimensional array with ones on the `k`-th diagonal and zeros elsewhere."""
    n = check_int(n_rows, "eye", "n_rows")
    m = n if n_cols is None else check_int(n_cols, "eye", "n_cols")
    if n < 0 or m < 0:
        raise ValueError(f"eye: n_rows and n_cols must be non-negative, got {n}, {m}")
    diag = min(max(check_int(k, "eye", "k"), -n), m)  # beyond the matrix: no diagonal either way
    where = resolve_device(device, "eye")
    dtype = _dtype_on(where, dtype, "eye")
    check_result_size((n, m), dtype, "eye")
    return placed(bind(_EYE, where, n=n, m=m, diag=diag, dtype=dtype), device)


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...]:
    """Coordinate matrices from coordinate vectors (`indexing="xy"`: Cartesian, `"ij"`: matrix)."""
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
    arrays = common_device(arrays, "meshgrid")[1]
    from .manipulation import broadcast_to, reshape

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


_TRIL = Primitive("tril", lambda k, x, *, diag: k.tril(x, k=diag), moves_data=True)
_TRIU = Primitive("triu", lambda k, x, *, diag: k.triu(x, k=diag), moves_data=True)


def _triangle(prim: Primitive, x: Array, k: Any, fname: str) -> Array:
    check_array(x, fname)
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions, got shape {x.shape}")
    n, m = x.shape[-2:]
    diag = min(max(check_int(k, fname, "k"), -n), m)  # diagonals beyond the matrix act alike
    return bind(prim, x._device, x, diag=diag)


def tril(x: Array, /, *, k: int = 0) -> Array:
    """The lower triangle of the matrices in `x` (on and below diagonal `k`); zeros above."""
    return _triangle(_TRIL, x, k, "tril")


def triu(x: Array, /, *, k: int = 0) -> Array:
    """The upper triangle of the matrices in `x` (on and above diagonal `k`); zeros below."""
    return _triangle(_TRIU, x, k, "triu")
