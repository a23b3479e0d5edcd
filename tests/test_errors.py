"""Error paths: bad input raises TypeError / ValueError / IndexError naming the function.

The public layer validates everything before a primitive runs, so no raw NumPy or jax error
should reach the user: every case checks the exception type and that the message starts with
the name of the function (for Python's own argument errors, "name() got ...").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import x10array as xp

CPU0 = xp.Device("cpu", 0)
CPU1 = xp.Device("cpu", 1)


def f64(*shape: int, device: xp.Device = CPU0) -> xp.Array:
    return xp.asarray(np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape) / 7, device=device)


def i32(*shape: int, device: xp.Device = CPU0) -> xp.Array:
    return xp.asarray(np.arange(np.prod(shape, dtype=int), dtype=np.int32).reshape(shape), device=device)


def b(*shape: int) -> xp.Array:
    return xp.asarray(np.arange(np.prod(shape, dtype=int)).reshape(shape) % 2 == 0)


def c128(*shape: int) -> xp.Array:
    return xp.astype(f64(*shape), xp.complex128)


# (id, expected exception(s), function name that the message must start with, call)
Case = tuple[str, Any, str, Callable[[], Any]]
CASES: list[Case] = []


def case(id: str, exc: Any, fname: str, fn: Callable[[], Any]) -> None:
    CASES.append((id, exc, fname, fn))


AXIS_ERRORS = (IndexError, ValueError)

# -- wrong dtype category ----------------------------------------------------------------------
for _name in ("exp", "log", "sin", "sqrt", "tanh", "reciprocal"):
    case(f"{_name}-int", TypeError, _name, lambda n=_name: getattr(xp, n)(i32(3)))
for _name in ("ceil", "floor", "trunc", "signbit"):
    case(f"{_name}-complex", TypeError, _name, lambda n=_name: getattr(xp, n)(c128(3)))
for _name in ("abs", "negative", "sign", "square"):
    case(f"{_name}-bool", TypeError, _name, lambda n=_name: getattr(xp, n)(b(3)))
case("logical_not-int", TypeError, "logical_not", lambda: xp.logical_not(i32(3)))
case("bitwise_invert-float", TypeError, "bitwise_invert", lambda: xp.bitwise_invert(f64(3)))
case("signbit-int", TypeError, "signbit", lambda: xp.signbit(i32(3)))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    case(f"{_name}-float", TypeError, _name, lambda n=_name: getattr(xp, n)(f64(3), f64(3)))
for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    case(f"{_name}-bool", TypeError, _name, lambda n=_name: getattr(xp, n)(b(3), b(3)))
for _name in ("logical_and", "logical_or", "logical_xor"):
    case(f"{_name}-int", TypeError, _name, lambda n=_name: getattr(xp, n)(i32(3), i32(3)))
for _name in ("less", "greater", "maximum", "minimum", "floor_divide", "remainder"):
    case(f"{_name}-complex", TypeError, _name, lambda n=_name: getattr(xp, n)(c128(3), c128(3)))
for _name in ("atan2", "hypot", "copysign", "nextafter", "logaddexp"):
    case(f"{_name}-int", TypeError, _name, lambda n=_name: getattr(xp, n)(i32(3), i32(3)))
case("add-bool", TypeError, "add", lambda: xp.add(b(3), b(3)))
case("divide-bool", TypeError, "divide", lambda: xp.divide(b(3), b(3)))
case("clip-complex", TypeError, "clip", lambda: xp.clip(c128(3), 0.0, 1.0))
for _name in ("sum", "prod", "cumulative_sum", "cumulative_prod"):
    case(f"{_name}-bool", TypeError, _name, lambda n=_name: getattr(xp, n)(b(3)))
for _name in ("mean", "std", "var"):
    case(f"{_name}-int", TypeError, _name, lambda n=_name: getattr(xp, n)(i32(3)))
for _name in ("max", "min", "argmax", "argmin", "sort", "argsort"):
    case(f"{_name}-complex", TypeError, _name, lambda n=_name: getattr(xp, n)(c128(3)))
case("searchsorted-complex", TypeError, "searchsorted", lambda: xp.searchsorted(c128(3), c128(2)))
case("take-float-indices", TypeError, "take", lambda: xp.take(f64(4), f64(2)))
case("take_along_axis-float-indices", TypeError, "take_along_axis", lambda: xp.take_along_axis(f64(4), f64(2)))
case("repeat-float-repeats", TypeError, "repeat", lambda: xp.repeat(f64(3), f64(3)))
case("where-int-condition", TypeError, "where", lambda: xp.where(i32(3), f64(3), f64(3)))
case("matmul-bool", TypeError, "matmul", lambda: xp.matmul(b(2, 2), b(2, 2)))
for _name in ("inv", "det", "cholesky", "eigh", "eigvalsh", "qr", "svd", "svdvals", "slogdet", "pinv"):
    case(f"linalg.{_name}-int", TypeError, _name, lambda n=_name: getattr(xp.linalg, n)(i32(3, 3)))
case("linalg.solve-int", TypeError, "solve", lambda: xp.linalg.solve(i32(3, 3), i32(3)))
case("linalg.vector_norm-int", TypeError, "vector_norm", lambda: xp.linalg.vector_norm(i32(3)))
case("linalg.matrix_norm-int", TypeError, "matrix_norm", lambda: xp.linalg.matrix_norm(i32(3, 3)))
case("linalg.cross-bool", TypeError, "cross", lambda: xp.linalg.cross(b(3), b(3)))
for _name in ("fft", "ifft", "fftn", "ifftn", "hfft", "irfft", "irfftn"):
    case(f"fft.{_name}-real", TypeError, _name, lambda n=_name: getattr(xp.fft, n)(f64(4)))
for _name in ("rfft", "rfftn", "ihfft"):
    case(f"fft.{_name}-complex", TypeError, _name, lambda n=_name: getattr(xp.fft, n)(c128(4)))
case("fft.fftshift-bool", TypeError, "fftshift", lambda: xp.fft.fftshift(b(4)))

# -- not an array / not a dtype ----------------------------------------------------------------
case("exp-list", TypeError, "exp", lambda: xp.exp([1.0, 2.0]))
case("exp-numpy", TypeError, "exp", lambda: xp.exp(np.ones(3)))
case("sum-list", TypeError, "sum", lambda: xp.sum([1, 2]))
case("add-two-scalars", TypeError, "add", lambda: xp.add(1, 2))
case("add-string", TypeError, "add", lambda: xp.add(f64(3), "1"))
case("reshape-list", TypeError, "reshape", lambda: xp.reshape([1, 2], (2,)))
case("astype-string-dtype", TypeError, "astype", lambda: xp.astype(f64(3), "float32"))
case("astype-numpy-dtype", TypeError, "astype", lambda: xp.astype(f64(3), np.float32))
case("zeros-numpy-dtype", TypeError, "zeros", lambda: xp.zeros(3, dtype=np.float64))
case("asarray-numpy-dtype", TypeError, "asarray", lambda: xp.asarray([1], dtype=np.int64))
case("full-string-fill", TypeError, "full", lambda: xp.full(3, "a"))
case("iinfo-float", (TypeError, ValueError), "iinfo", lambda: xp.iinfo(xp.float64))
case("finfo-int", (TypeError, ValueError), "finfo", lambda: xp.finfo(xp.int32))
case("isdtype-unknown-kind", ValueError, "isdtype", lambda: xp.isdtype(xp.int8, "whole numbers"))
case("isdtype-not-dtype", TypeError, "isdtype", lambda: xp.isdtype("int8", "integral"))
case("stack-not-sequence", TypeError, "stack", lambda: xp.stack(f64(3)))
case("concat-not-sequence", TypeError, "concat", lambda: xp.concat(f64(3)))
case("Array-constructor", TypeError, "x10array.Array", lambda: xp.Array(np.ones(3)))

# -- bad axis ----------------------------------------------------------------------------------
for _name in ("sum", "prod", "max", "min", "mean", "std", "var", "all", "any", "count_nonzero"):
    case(f"{_name}-axis-out-of-range", AXIS_ERRORS, _name, lambda n=_name: getattr(xp, n)(f64(2, 3), axis=2))
    case(f"{_name}-axis-negative", AXIS_ERRORS, _name, lambda n=_name: getattr(xp, n)(f64(2, 3), axis=-3))
    case(f"{_name}-axis-repeated", ValueError, _name, lambda n=_name: getattr(xp, n)(f64(2, 3), axis=(0, -2)))
for _name in ("argmax", "argmin", "cumulative_sum", "cumulative_prod", "sort", "argsort", "diff", "unstack"):
    case(f"{_name}-axis", AXIS_ERRORS, _name, lambda n=_name: getattr(xp, n)(f64(2, 3), axis=5))
case("cumulative_sum-no-axis-2d", ValueError, "cumulative_sum", lambda: xp.cumulative_sum(f64(2, 3)))
case("sum-axis-float", TypeError, "sum", lambda: xp.sum(f64(3), axis=0.0))
case("concat-axis", AXIS_ERRORS, "concat", lambda: xp.concat([f64(2), f64(2)], axis=1))
case("stack-axis", AXIS_ERRORS, "stack", lambda: xp.stack([f64(2), f64(2)], axis=3))
case("expand_dims-axis", AXIS_ERRORS, "expand_dims", lambda: xp.expand_dims(f64(2), axis=3))
case("squeeze-not-one", ValueError, "squeeze", lambda: xp.squeeze(f64(2, 3), axis=0))
case("squeeze-axis", AXIS_ERRORS, "squeeze", lambda: xp.squeeze(f64(1, 3), axis=2))
case("flip-axis", AXIS_ERRORS, "flip", lambda: xp.flip(f64(2, 3), axis=2))
case("roll-axis", AXIS_ERRORS, "roll", lambda: xp.roll(f64(2, 3), 1, axis=2))
case("roll-shift-axis-length", ValueError, "roll", lambda: xp.roll(f64(2, 3), (1, 2), axis=0))
case("moveaxis-axis", AXIS_ERRORS, "moveaxis", lambda: xp.moveaxis(f64(2, 3), 0, 2))
case("permute_dims-not-permutation", ValueError, "permute_dims", lambda: xp.permute_dims(f64(2, 3), (0, 0)))
case("permute_dims-axis", AXIS_ERRORS, "permute_dims", lambda: xp.permute_dims(f64(2, 3), (0, 2)))
case("take-axis", AXIS_ERRORS, "take", lambda: xp.take(f64(2, 3), xp.asarray([0]), axis=2))
case("take-no-axis-2d", ValueError, "take", lambda: xp.take(f64(2, 3), xp.asarray([0])))
case("take_along_axis-axis", AXIS_ERRORS, "take_along_axis", lambda: xp.take_along_axis(f64(2, 3), i32(2, 1), axis=2))
case("repeat-axis", AXIS_ERRORS, "repeat", lambda: xp.repeat(f64(2, 3), 2, axis=2))
case("vecdot-axis", AXIS_ERRORS, "vecdot", lambda: xp.vecdot(f64(2, 3), f64(2, 3), axis=2))
case("linalg.vector_norm-axis", AXIS_ERRORS, "vector_norm", lambda: xp.linalg.vector_norm(f64(2, 3), axis=2))
case("linalg.cross-axis", AXIS_ERRORS, "cross", lambda: xp.linalg.cross(f64(2, 3), f64(2, 3), axis=-3))
case("fft.fft-axis", AXIS_ERRORS, "fft", lambda: xp.fft.fft(c128(2, 3), axis=2))
case("fft.fftn-axes", AXIS_ERRORS, "fftn", lambda: xp.fft.fftn(c128(2, 3), axes=(0, 2)))
case("fft.fftshift-axes", AXIS_ERRORS, "fftshift", lambda: xp.fft.fftshift(f64(2, 3), axes=2))
case("matrix_transpose-1d", ValueError, "matrix_transpose", lambda: xp.matrix_transpose(f64(3)))
case("linalg.diagonal-1d", ValueError, "diagonal", lambda: xp.linalg.diagonal(f64(3)))
case("T-3d", ValueError, "Array.T", lambda: f64(2, 2, 2).T)

# -- shape mismatch ----------------------------------------------------------------------------
for _name in ("add", "multiply", "equal", "maximum", "atan2", "logaddexp"):
    case(f"{_name}-broadcast", ValueError, _name, lambda n=_name: getattr(xp, n)(f64(2, 3), f64(4)))
case("operator-broadcast", ValueError, "add", lambda: f64(2, 3) + f64(2))
case("where-broadcast", ValueError, "where", lambda: xp.where(b(3), f64(2), f64(3)))
case("clip-broadcast", ValueError, "clip", lambda: xp.clip(f64(3), f64(2), None))
case("broadcast_to", ValueError, "broadcast_to", lambda: xp.broadcast_to(f64(3), (2, 4)))
case("broadcast_to-fewer-dims", ValueError, "broadcast_to", lambda: xp.broadcast_to(f64(2, 3), (3,)))
case("broadcast_arrays", ValueError, "broadcast_arrays", lambda: xp.broadcast_arrays(f64(3), f64(4)))
case("broadcast_shapes", ValueError, "broadcast_shapes", lambda: xp.broadcast_shapes((2, 3), (4,)))
case("concat-shapes", ValueError, "concat", lambda: xp.concat([f64(2, 3), f64(2, 4)]))
case("concat-ndim", ValueError, "concat", lambda: xp.concat([f64(2, 3), f64(3)]))
case("concat-empty", ValueError, "concat", lambda: xp.concat([]))
case("stack-shapes", ValueError, "stack", lambda: xp.stack([f64(2), f64(3)]))
case("reshape-size", ValueError, "reshape", lambda: xp.reshape(f64(2, 3), (4, 2)))
case("reshape-two-minus-one", ValueError, "reshape", lambda: xp.reshape(f64(2, 3), (-1, -1)))
case("reshape-negative", ValueError, "reshape", lambda: xp.reshape(f64(2, 3), (-2, -3)))
case("repeat-length", ValueError, "repeat", lambda: xp.repeat(f64(3), xp.asarray([1, 2]), axis=0))
case("repeat-negative", ValueError, "repeat", lambda: xp.repeat(f64(3), -1))
case("tile-negative", ValueError, "tile", lambda: xp.tile(f64(3), (-1,)))
case("matmul-inner", ValueError, "matmul", lambda: xp.matmul(f64(2, 3), f64(2, 3)))
case("matmul-0d", ValueError, "matmul", lambda: xp.matmul(f64(3), xp.asarray(2.0)))
case("matmul-operator", ValueError, "matmul", lambda: f64(2, 3) @ f64(4, 2))
case("matmul-batch", ValueError, "matmul", lambda: xp.matmul(f64(2, 2, 3), f64(3, 3, 2)))
case("tensordot-axes", ValueError, "tensordot", lambda: xp.tensordot(f64(2, 3), f64(2, 3), axes=1))
case("tensordot-negative-axes", ValueError, "tensordot", lambda: xp.tensordot(f64(2, 3), f64(3, 2), axes=-1))
case("vecdot-size", ValueError, "vecdot", lambda: xp.vecdot(f64(2, 3), f64(2, 4)))
case("take_along_axis-ndim", ValueError, "take_along_axis", lambda: xp.take_along_axis(f64(2, 3), i32(3), axis=0))
case("searchsorted-2d", ValueError, "searchsorted", lambda: xp.searchsorted(f64(2, 3), f64(2)))
case("meshgrid-2d", ValueError, "meshgrid", lambda: xp.meshgrid(f64(2, 2), f64(3)))
case("meshgrid-indexing", ValueError, "meshgrid", lambda: xp.meshgrid(f64(2), f64(3), indexing="xx"))
case("linalg.inv-not-square", ValueError, "inv", lambda: xp.linalg.inv(f64(2, 3)))
case("linalg.det-1d", ValueError, "det", lambda: xp.linalg.det(f64(3)))
case("linalg.solve-shapes", ValueError, "solve", lambda: xp.linalg.solve(f64(3, 3), f64(4)))
case("linalg.cross-not-3", ValueError, "cross", lambda: xp.linalg.cross(f64(4), f64(4)))
case("linalg.outer-2d", ValueError, "outer", lambda: xp.linalg.outer(f64(2, 2), f64(2)))
case("linalg.matrix_power-not-square", ValueError, "matrix_power", lambda: xp.linalg.matrix_power(f64(2, 3), 2))
case("linalg.qr-mode", ValueError, "qr", lambda: xp.linalg.qr(f64(3, 3), mode="economic"))
case("linalg.matrix_norm-ord", ValueError, "matrix_norm", lambda: xp.linalg.matrix_norm(f64(3, 3), ord=3))
case("linalg.vector_norm-ord", (ValueError, TypeError), "vector_norm", lambda: xp.linalg.vector_norm(f64(3), ord="fro"))
case("fft.fft-n-zero", ValueError, "fft", lambda: xp.fft.fft(c128(4), n=0))
case("fft.fft-norm", ValueError, "fft", lambda: xp.fft.fft(c128(4), norm="both"))
case("fft.fftn-s-axes", ValueError, "fftn", lambda: xp.fft.fftn(c128(2, 3), s=(2, 3, 4), axes=(0, 1)))
case("fft.fftfreq-n", ValueError, "fftfreq", lambda: xp.fft.fftfreq(0))
case("fft.fftfreq-dtype", (ValueError, TypeError), "fftfreq", lambda: xp.fft.fftfreq(4, dtype=xp.int64))

# -- creation arguments ------------------------------------------------------------------------
case("zeros-negative", ValueError, "zeros", lambda: xp.zeros((2, -1)))
case("ones-float-shape", TypeError, "ones", lambda: xp.ones((2.0, 3)))
case("empty-bool-shape", TypeError, "empty", lambda: xp.empty((True,)))
case("full-negative", ValueError, "full", lambda: xp.full(-3, 1.0))
case("eye-negative", ValueError, "eye", lambda: xp.eye(-1))
case("eye-float", TypeError, "eye", lambda: xp.eye(2.5))
case("linspace-num", ValueError, "linspace", lambda: xp.linspace(0, 1, -1))
case("linspace-bool-dtype", (TypeError, ValueError), "linspace", lambda: xp.linspace(0, 1, 3, dtype=xp.bool))
case("arange-step-zero", ValueError, "arange", lambda: xp.arange(0, 5, 0))
case("arange-complex", TypeError, "arange", lambda: xp.arange(1j))
case("asarray-ragged", ValueError, "asarray", lambda: xp.asarray([[1, 2], [3]]))
case("asarray-object", TypeError, "asarray", lambda: xp.asarray(object()))
case("asarray-int-overflow", (OverflowError, ValueError), "asarray", lambda: xp.asarray(2**70))
case("asarray-copy-false", ValueError, "asarray", lambda: xp.asarray([1, 2], copy=False))
case("asarray-copy-false-dtype", ValueError, "asarray", lambda: xp.asarray(f64(3), dtype=xp.float32, copy=False))
case("asarray-copy-false-device", ValueError, "asarray", lambda: xp.asarray(f64(3), device=CPU1, copy=False))
case("asarray-device-string", ValueError, "asarray", lambda: xp.asarray([1], device="cpu"))
case("zeros-device-jax", ValueError, "zeros", lambda: xp.zeros(2, device=CPU0.jax_device))
case("full-int-overflow", (OverflowError, ValueError), "full", lambda: xp.full(3, 300, dtype=xp.int8))
case("tril-1d", ValueError, "tril", lambda: xp.tril(f64(3)))
case("triu-1d", ValueError, "triu", lambda: xp.triu(f64(3)))
case("to_device-stream", ValueError, "to_device", lambda: f64(3).to_device(CPU1, stream=1))
case("to_device-string", ValueError, "to_device", lambda: f64(3).to_device("cpu"))
case("device_scope-unknown-string", ValueError, "device_scope", lambda: xp.device_scope("cpu").__enter__())
case("device_scope-int", TypeError, "device_scope", lambda: xp.device_scope(0).__enter__())
case("Device-kind", ValueError, "Device", lambda: xp.Device("npu"))
case("Device-backend", ValueError, "Device", lambda: xp.Device("cpu", 0, "lazy"))
case("Device-ordinal-negative", ValueError, "Device", lambda: xp.Device("cpu", -1))
case("Device-ordinal-bool", ValueError, "Device", lambda: xp.Device("cpu", True))
case("Device-ordinal-missing", ValueError, "Device", lambda: xp.Device("cpu", 64))
case("set_cpu_kernels", ValueError, "set_cpu_kernels", lambda: xp.set_cpu_kernels("cuda"))
case("__array_namespace__-version", ValueError, "__array_namespace__",
     lambda: f64(1).__array_namespace__(api_version="2020.10"))  # fmt: skip
case("info.dtypes-kind", ValueError, "dtypes", lambda: xp.__array_namespace_info__().dtypes(kind="floating"))
case("info.dtypes-device", ValueError, "dtypes", lambda: xp.__array_namespace_info__().dtypes(device="cpu"))

# -- device mismatch ---------------------------------------------------------------------------
for _name in ("add", "multiply", "equal", "logaddexp", "maximum", "matmul", "vecdot", "searchsorted"):
    case(f"{_name}-devices", ValueError, _name, lambda n=_name: getattr(xp, n)(f64(3), f64(3, device=CPU1)))
case("operator-devices", ValueError, "add", lambda: f64(3) + f64(3, device=CPU1))
case("inplace-devices", ValueError, "add", lambda: _iadd(f64(3), f64(3, device=CPU1)))
case("concat-devices", ValueError, "concat", lambda: xp.concat([f64(3), f64(3, device=CPU1)]))
case("stack-devices", ValueError, "stack", lambda: xp.stack([f64(3), f64(3, device=CPU1)]))
case("where-devices", ValueError, "where", lambda: xp.where(b(3), f64(3), f64(3, device=CPU1)))
case("clip-devices", ValueError, "clip", lambda: xp.clip(f64(3), f64(3, device=CPU1)))
case("take-devices", ValueError, "take", lambda: xp.take(f64(3), xp.asarray([0], device=CPU1)))
case("take_along_axis-devices", ValueError, "take_along_axis",
     lambda: xp.take_along_axis(f64(3), xp.asarray([0], device=CPU1), axis=0))  # fmt: skip
case("isin-devices", ValueError, "isin", lambda: xp.isin(i32(3), i32(3, device=CPU1)))
case("meshgrid-devices", ValueError, "meshgrid", lambda: xp.meshgrid(f64(3), f64(3, device=CPU1)))
case("tensordot-devices", ValueError, "tensordot", lambda: xp.tensordot(f64(3), f64(3, device=CPU1), axes=1))
case("diff-devices", ValueError, "diff", lambda: xp.diff(f64(3), prepend=f64(1, device=CPU1)))
case("repeat-devices", ValueError, "repeat", lambda: xp.repeat(f64(3), xp.asarray([1, 1, 1], device=CPU1)))
case("getitem-devices", (ValueError, IndexError), "__getitem__", lambda: f64(3)[xp.asarray([0], device=CPU1)])
case("setitem-devices", ValueError, "__setitem__", lambda: f64(3).__setitem__(0, f64(device=CPU1)))
case("linalg.solve-devices", ValueError, "solve", lambda: xp.linalg.solve(f64(2, 2), f64(2, device=CPU1)))
case("linalg.cross-devices", ValueError, "cross", lambda: xp.linalg.cross(f64(3), f64(3, device=CPU1)))
case("linalg.outer-devices", ValueError, "outer", lambda: xp.linalg.outer(f64(3), f64(3, device=CPU1)))


def _iadd(x: xp.Array, y: xp.Array) -> xp.Array:
    x += y
    return x


# -- indexing ----------------------------------------------------------------------------------
case("getitem-out-of-range", IndexError, "__getitem__", lambda: f64(5)[5])
case("getitem-negative-out-of-range", IndexError, "__getitem__", lambda: f64(5)[-6])
case("getitem-second-axis", IndexError, "__getitem__", lambda: f64(2, 3)[0, 3])
case("getitem-too-many", IndexError, "__getitem__", lambda: f64(2, 3)[0, 0, 0])
case("getitem-two-ellipses", IndexError, "__getitem__", lambda: f64(2, 3)[..., 0, ...])
case("getitem-0d-int", IndexError, "__getitem__", lambda: xp.asarray(1.0)[0])
case("getitem-float", (IndexError, TypeError), "__getitem__", lambda: f64(5)[1.0])
case("getitem-string", (IndexError, TypeError), "__getitem__", lambda: f64(5)["a"])
case("getitem-list", (IndexError, TypeError), "__getitem__", lambda: f64(5)[[0, 1]])
case("getitem-int-array-out-of-range", IndexError, "__getitem__", lambda: f64(5)[xp.asarray([0, 7])])
case("getitem-float-array", (IndexError, TypeError), "__getitem__", lambda: f64(5)[f64(2)])
case("getitem-mask-shape", IndexError, "__getitem__", lambda: f64(2, 3)[b(3)])
case("setitem-out-of-range", IndexError, "__setitem__", lambda: f64(5).__setitem__(5, 1.0))
case("setitem-float-index", (IndexError, TypeError), "__setitem__", lambda: f64(5).__setitem__(1.5, 1.0))
case("setitem-shape", ValueError, "__setitem__", lambda: f64(2, 3).__setitem__(0, f64(2)))
case("setitem-nan-into-int", ValueError, "__setitem__", lambda: i32(3).__setitem__(0, float("nan")))
case("setitem-complex-array-into-float", TypeError, "__setitem__", lambda: f64(3).__setitem__(0, xp.asarray(1j)))
case("setitem-complex-into-float", TypeError, "__setitem__", lambda: f64(3).__setitem__(0, 1j))
case("setitem-int-overflow", (OverflowError, ValueError), "__setitem__",
     lambda: xp.asarray([1, 2], dtype=xp.int8).__setitem__(0, 300))  # fmt: skip
case("setitem-string", TypeError, "__setitem__", lambda: f64(3).__setitem__(0, "x"))

# -- Python scalars and 0-d conversions --------------------------------------------------------
case("float-of-2-elements", TypeError, "__float__", lambda: float(f64(2)))
case("int-of-1d", TypeError, "__int__", lambda: int(f64(1)))
case("int-of-nan", ValueError, "__int__", lambda: int(xp.asarray(float("nan"))))
case("int-of-inf", OverflowError, "__int__", lambda: int(xp.asarray(float("inf"))))
case("float-of-complex", TypeError, "__float__", lambda: float(xp.asarray(1j)))
case("index-of-float", TypeError, "__index__", lambda: [0, 1][xp.asarray(1.0)])
case("len-of-0d", TypeError, "len", lambda: len(xp.asarray(1.0)))
case("iter-of-0d", TypeError, "iteration", lambda: iter(xp.asarray(1.0)))

# -- unknown keyword / positional-only used as keyword -----------------------------------------
case("sum-axes", TypeError, "sum", lambda: xp.sum(f64(3), axes=0))
case("sum-out", TypeError, "sum", lambda: xp.sum(f64(3), out=None))
case("asarray-order", TypeError, "asarray", lambda: xp.asarray([1], order="C"))
case("zeros_like-order", TypeError, "zeros_like", lambda: xp.zeros_like(f64(3), order="C"))
case("reshape-order", TypeError, "reshape", lambda: xp.reshape(f64(4), (2, 2), order="F"))
case("sort-kind", TypeError, "sort", lambda: xp.sort(f64(3), kind="quicksort"))
case("add-keywords", TypeError, "add", lambda: xp.add(x1=f64(3), x2=f64(3)))
case("exp-keyword", TypeError, "exp", lambda: xp.exp(x=f64(3)))
case("sum-axis-positional", TypeError, "sum", lambda: xp.sum(f64(3), 0))
case("concat-axis-positional", TypeError, "concat", lambda: xp.concat([f64(3)], 0))
case("linalg.inv-keyword", TypeError, "inv", lambda: xp.linalg.inv(x=f64(2, 2)))
case("fft.fft-positional-n", TypeError, "fft", lambda: xp.fft.fft(c128(4), 4))
case("to_device-keyword-device", TypeError, "to_device", lambda: f64(3).to_device(device=CPU1))

# -- mixed-kind type promotion (undefined by the standard) -------------------------------------
# x10array promotes mixed kinds (the floating operand's dtype wins: tests/test_promotion.py);
# with X10ARRAY_STRICT_PROMOTION=1 each of these is the TypeError that array-api-strict raises.
STRICT_CASES: list[Case] = []


def strict_case(id: str, exc: Any, fname: str, fn: Callable[[], Any]) -> None:
    STRICT_CASES.append((id, exc, fname, fn))


for _name in ("add", "subtract", "multiply", "equal", "maximum", "pow"):
    strict_case(f"{_name}-int-float", TypeError, _name,
         lambda n=_name: getattr(xp, n)(i32(3), f64(3)))  # fmt: skip
case("add-uint64-int64", TypeError, "add",
     lambda: xp.add(xp.asarray([1], dtype=xp.uint64), xp.asarray([1], dtype=xp.int64)))  # fmt: skip
strict_case("add-bool-int", TypeError, "add", lambda: xp.add(b(3), i32(3)))
strict_case("equal-bool-float", TypeError, "equal", lambda: xp.equal(b(3), f64(3)))
strict_case("add-int-complex", TypeError, "add", lambda: xp.add(i32(3), c128(3)))
strict_case("operator-int-float", TypeError, "add", lambda: i32(3) + f64(3))
strict_case("add-int-array-float-scalar", TypeError, "add", lambda: xp.add(i32(3), 1.5))
strict_case("add-bool-array-int-scalar", TypeError, "add", lambda: xp.add(b(3), 1))
strict_case("add-int-array-complex-scalar", TypeError, "add", lambda: xp.add(xp.asarray([1, 2, 3]), 1j))
case("add-int8-scalar-overflow", (OverflowError, ValueError), "add",
     lambda: xp.add(xp.asarray([1], dtype=xp.int8), 200))  # fmt: skip
strict_case("concat-int-float", TypeError, "concat", lambda: xp.concat([i32(2), f64(2)]))
strict_case("stack-int-float", TypeError, "stack", lambda: xp.stack([i32(2), f64(2)]))
strict_case("where-int-float", TypeError, "where", lambda: xp.where(b(2), i32(2), f64(2)))
strict_case("result_type-int-float", TypeError, "result_type", lambda: xp.result_type(xp.int8, xp.float32))
case("result_type-nothing", ValueError, "result_type", lambda: xp.result_type())
strict_case("matmul-int-float", TypeError, "matmul", lambda: xp.matmul(i32(2, 2), f64(2, 2)))
strict_case("vecdot-int-float", TypeError, "vecdot", lambda: xp.vecdot(i32(2), f64(2)))
strict_case("tensordot-int-float", TypeError, "tensordot", lambda: xp.tensordot(i32(2), f64(2), axes=1))
case("astype-complex-to-real", TypeError, "astype", lambda: xp.astype(c128(2), xp.float64))
strict_case("searchsorted-int-float", TypeError, "searchsorted", lambda: xp.searchsorted(i32(3), f64(2)))
# clip's result has x's dtype (the standard), so a bound of a higher kind is refused in every mode
case("clip-mixed", TypeError, "clip", lambda: xp.clip(i32(3), f64(3)))


@pytest.mark.parametrize(("exc", "fname", "fn"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error(exc: Any, fname: str, fn: Callable[[], Any]) -> None:
    with pytest.raises(exc) as info:
        fn()
    message = str(info.value)
    # The message names the function first: "sum: ...", "linalg.inv: ...", "sum() got ...".
    pattern = rf"^(in-place )?([\w.]+\.)?{re.escape(fname)}\b"
    assert re.match(pattern, message), f"the message should start with {fname!r}: {message!r}"
    assert not type(info.value).__module__.startswith(("numpy", "jax", "jaxlib")), type(info.value)


@pytest.mark.parametrize(("exc", "fname", "fn"), [c[1:] for c in STRICT_CASES], ids=[c[0] for c in STRICT_CASES])
def test_strict_promotion_error(exc: Any, fname: str, fn: Callable[[], Any], override_settings: Any) -> None:
    override_settings(X10ARRAY_STRICT_PROMOTION=True)
    test_error(exc, fname, fn)


@pytest.mark.parametrize(("exc", "fname", "fn"), [c[1:] for c in CASES if "devices" in c[0]][:6])
def test_device_errors_under_xla_kernels(exc: Any, fname: str, fn: Callable[[], Any], xla_kernels: None) -> None:
    with pytest.raises(exc, match=re.escape(fname)):
        fn()


def test_failed_operation_leaves_operands_alone() -> None:
    x = i32(3)
    before = np.asarray(x).copy()
    with pytest.raises(TypeError):
        x += f64(3)  # int32 + float64 is float64, which x cannot hold: x keeps its dtype and value
    assert x.dtype == xp.int32
    np.testing.assert_array_equal(np.asarray(x), before)


def test_python_operators_return_notimplemented_for_foreign_types() -> None:
    x = f64(3)
    assert x.__add__("a") is NotImplemented
    assert x.__radd__(object()) is NotImplemented
    assert x.__eq__("a") is NotImplemented
    with pytest.raises(TypeError):
        x + np.ones(3)  # no silent mixing with NumPy arrays
    with pytest.raises(TypeError):
        np.ones(3) + x


# -- what the dtype messages say about what they got (issue 28) ------------------------------------

DTYPE_TAKERS: list[tuple[str, Callable[[Any], Any]]] = [
    ("isdtype", lambda d: xp.isdtype(d, "integral")),
    ("astype", lambda d: xp.astype(f64(2), d)),
    ("zeros", lambda d: xp.zeros((2,), dtype=d)),
    ("full", lambda d: xp.full((2,), 1, dtype=d)),
    ("arange", lambda d: xp.arange(3, dtype=d)),
    ("linspace", lambda d: xp.linspace(0, 1, 3, dtype=d)),
    ("asarray", lambda d: xp.asarray([1.0], dtype=d)),
    ("sum", lambda d: xp.sum(f64(2), dtype=d)),
    ("finfo", lambda d: xp.finfo(d)),
    ("iinfo", lambda d: xp.iinfo(d)),
    ("can_cast", lambda d: xp.can_cast(d, xp.float64)),
    ("result_type", lambda d: xp.result_type(d, xp.float64)),
]


@pytest.mark.parametrize("fname, call", DTYPE_TAKERS, ids=[n for n, _ in DTYPE_TAKERS])
@pytest.mark.parametrize("given", [np.float64, np.int32, float, "float64", f64], ids=["np.float64", "np.int32",
                                                                                  "float", "str", "array"])  # fmt: skip
def test_a_dtype_message_says_what_it_got(fname: str, call: Callable[[Any], Any], given: Any) -> None:
    """`xp.isdtype(np.float64, "integral")` said "got an array (type)": NumPy's scalar types have
    an `__array_namespace__`, and a type was taken for an array (a user meets it through
    scikit-learn). Every function that takes a dtype, given a type, a string or an array where
    the dtype goes, names itself and shows the type or string as it is; an array is called one."""
    value = f64(2) if given is f64 else given
    if fname in ("finfo", "iinfo", "can_cast", "result_type") and given is f64:
        return  # an array is what these take in the dtype's place
    with pytest.raises(TypeError) as info:
        call(value)
    message = str(info.value)
    assert message.startswith(f"{fname}:") or message.startswith(f"{fname}("), message
    if isinstance(value, type | str):
        assert "an array" not in message and repr(value) in message, message
    else:
        assert "got an array (Array)" in message, message
