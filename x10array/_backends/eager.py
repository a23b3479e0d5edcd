"""The eager backend: each primitive runs at once.

Two executors serve eager devices:

- `NumpyExecutor` runs the kernel with the NumPy namespace: the CPU's default;
- `XlaEagerExecutor` runs the same kernel with `jax.numpy` under `jax.jit`, op by op, one
  compiled program per (primitive, parameters) (_core/op_programs.py, whose programs a lazy
  device's cold graphs on an accelerator share): accelerators always, the CPU when
  `X10ARRAY_EAGER_CPU_KERNELS=xla` (or `set_cpu_kernels("xla")`). On the CPU it avoids a
  compile per new shape where the bits allow: data movement and `XLA_HOST_KERNELS` functions
  (casts) run on host views, elementwise primitives in size buckets (see below).

jax is asked for 64-bit types only inside our own calls (`jax.enable_x64(True)` is a
thread-local context), so a user's own jax code keeps its defaults.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core.array import Array
from .._core.backend import register
from .._core.devices import Backend, Device, DeviceKind, jax_put, jax_putter, jax_scope
from .._core.dtypes import FROM_NUMPY, DType
from .._core.kernels import NUMPY, jax_operand
from .._core.lru import LRU, tick
from .._core.op_programs import jitted
from .._core.policies import NUMPY_QUIET, XLA_HOST_KERNELS
from .._core.primitive import Primitive, params_key
from .._core.settings import get as get_setting
from .._core.xla_numerics import xla_flushes

_ndarray = np.ndarray
_QUIET = NUMPY_QUIET.members  # (the set itself: registrations after this import are seen)
_HOST_KERNELS = XLA_HOST_KERNELS.rules  # (the dict itself, likewise)


def _wrap_numpy(out: Any, device: Device, operands: tuple[Any, ...]) -> Array:
    if type(out) is not _ndarray:
        out = np.asarray(out)
    shared = out.base is not None
    if shared:  # a view: whoever it views must copy before writing
        for o in operands:
            if type(o) is Array:
                o._shared = True
    return Array._new(out, FROM_NUMPY[out.dtype], device, shared)


try:  # NumPy's own error-state variable: `np.errstate` without building one per call
    # Private names, absent from NumPy's stubs (hence the ignore); the ImportError branch covers their absence.
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj  # type: ignore[attr-defined]

    _IGNORE_ALL = _make_extobj(all="ignore")

    def _run_quiet(prim: Primitive, bufs: list[Any], params: dict[str, Any]) -> Any:
        token = _extobj_contextvar.set(_IGNORE_ALL)
        try:
            return prim.kernel(NUMPY, *bufs, **params)
        finally:
            _extobj_contextvar.reset(token)

except ImportError:  # pragma: no cover - another NumPy layout

    def _run_quiet(prim: Primitive, bufs: list[Any], params: dict[str, Any]) -> Any:
        with np.errstate(all="ignore"):
            return prim.kernel(NUMPY, *bufs, **params)


class NumpyExecutor:
    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        bufs = [
            (o._data if type(o._data) is _ndarray else _numpy_buffer(o)) if type(o) is Array else o for o in operands
        ]
        if prim.in_place and operands[0]._shared:
            bufs[0] = bufs[0].copy()
        out = _run_quiet(prim, bufs, params) if prim in _QUIET else prim.kernel(NUMPY, *bufs, **params)
        if prim.multiple_results:
            return tuple(_wrap_numpy(o, device, operands) for o in out)
        return _wrap_numpy(out, device, operands)


def _numpy_buffer(a: Array) -> np.ndarray:
    data = a._data
    if type(data) is _ndarray:
        return data
    host = np.array(data)  # a jax buffer from the XLA kernels: bring it to the host
    if a._data is data:  # (unless another thread wrote the array meanwhile)
        a._data = host
    return host


class XlaEagerExecutor:
    """Op by op through XLA: one jitted program per (primitive, parameters)."""

    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if prim.dynamic_shape or (prim.moves_data and device.kind is _CPU):
            return _on_host(prim, device, operands, params)
        if device.kind is _CPU and prim in _HOST_KERNELS:
            out = _like_xla_on_host(prim, device, operands, params)
            if out is not None:
                return out
        key = params_key(params)
        fn = jitted(prim, key, tuple(params.items()))
        if prim.elementwise and device.kind is _CPU:
            out = _bucketed(prim, key, fn, device, operands)
            if out is not None:
                return out
        bufs = [o._data if type(o) is Array else jax_operand(o, device) for o in operands]
        free, scope = jax_scope(device)  # (jax's two contexts, made once per device)
        try:
            with scope[0], scope[1]:
                out = fn(*bufs)
        finally:
            free.append(scope)
        if prim.multiple_results:
            return tuple(Array._new(o, FROM_NUMPY[o.dtype], device) for o in out)
        return Array._new(out, FROM_NUMPY[out.dtype], device)


def _on_host(prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """Run `prim` with its NumPy kernel on host views of the operands and place the results
    on `device`, without compiling anything. Two cases:

    - `dynamic_shape` primitives (output shapes depend on values): XLA cannot compile them;
    - on the CPU, `moves_data` primitives (reshapes, indexing, concatenation, `full`, ...):
      they move values without computing on them, so NumPy gives the bits XLA would, and the
      CPU device's buffers are host memory already. XLA would compile a program for every new
      shape and index (tens of milliseconds each); this costs a copy.

    The operands' buffers are not changed (a view of a jax buffer is read-only: an in-place
    kernel writes into a copy, as XLA's scatter makes a new buffer)."""
    bufs = [np.asarray(o._data) if type(o) is Array else o for o in operands]
    if prim.in_place:
        bufs[0] = bufs[0].copy()
    out = _run_quiet(prim, bufs, params) if prim in _QUIET else prim.kernel(NUMPY, *bufs, **params)
    if prim.multiple_results:
        return tuple(_placed(o, device) for o in out)
    return _placed(out, device)


def _like_xla_on_host(prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """`prim` through its NumPy function that gives the bits of its XLA program (see
    policies.XLA_HOST_KERNELS), on host views of the operands, the result placed on the CPU
    device: no program to compile for a new shape or dtype. None where the function declines,
    or the result is large (XLA's program, compiled once for it, is faster there)."""
    for o in operands:
        if type(o) is Array and math.prod(o._data.shape) > _BUCKET_MAX:
            return None
    bufs = [np.asarray(o._data) if type(o) is Array else o for o in operands]
    with np.errstate(all="ignore"):  # (XLA warns of nothing: NaN compared, say)
        out = _HOST_KERNELS[prim](xla_flushes(), *bufs, **params)
    if out is None:
        return None
    return _placed(out, device)


def _placed(host: Any, device: Device) -> Array:
    host = np.asarray(host)
    return Array._new(to_device_buffer(host, device), FROM_NUMPY[host.dtype], device)


# -- elementwise primitives on new shapes: one program per size bucket -------------------------
#
# An elementwise primitive computes each element from the same elements of its operands, so
# on the CPU a call on a new shape can run the program of a flat bucket instead: its array
# operands (all of one shape: no broadcasting) flattened into zero-padded buffers of the next
# power of two on the host, the result cut back to its shape. One compiled program then serves
# every shape of up to that many elements, where XLA would compile one per shape (tens of
# milliseconds each). XLA computes each element by the same code whatever the length (a test,
# tests/test_eager_xla.py, checks the bits against the exact program for every elementwise
# primitive). The bucket costs copies, so a shape seen `_EXACT_AFTER` times gets its own
# program, compiled then, as before. Single elements (0-d arrays included) are not bucketed:
# XLA computes those by other code (`atan` of one float32 differs by an ulp from the
# vectorized loop's).

_EXACT_AFTER = 16  # sightings of a (primitive, parameters, shape, dtypes) before its exact program
_BUCKET_MAX = 1 << 16  # larger results always get their exact program: the copies would cost more
# (an LRU bounded by construction, 8,192 shapes evicted 1,024 at a time: no setting, since the
# entries are counters, not programs)
_SIGHTINGS = LRU("eager elementwise shapes", 8192, batch=1024)


def _bucketed(prim: Primitive, key: tuple[Any, ...], fn: Any, device: Device, operands: tuple[Any, ...]) -> Any:
    """The result of an elementwise primitive through its bucket's program (see above), or
    None where the exact program runs: a shape seen often, a large or multiple result."""
    shapes = []
    sig: list[Any] = [prim, key]
    for o in operands:
        if type(o) is Array:
            shape = o._data.shape
            shapes.append(shape)
            sig.append(shape)
            sig.append(o._dtype)
        else:
            sig.append(type(o))
    entry = _SIGHTINGS.entries.get(k := tuple(sig))
    if entry is None:
        seen = _SIGHTINGS.put(k, 1)
    else:
        entry[1] = tick()
        seen = entry[0] = entry[0] + 1
    if seen > _EXACT_AFTER:
        return None
    shape = shapes[0]
    for other in shapes:
        if other != shape:  # broadcasting: XLA rewrites some of it (a division by a broadcast
            return None  # value), so the exact program's bits could differ from the bucket's
    n = math.prod(shape)
    if n <= 1 or n > _BUCKET_MAX or prim.multiple_results:
        return None  # (XLA computes a single element by other code: bits would differ)
    size = 8 if n <= 8 else 1 << (n - 1).bit_length()
    if size == n and len(shape) == 1:
        return None  # the exact program is the bucket's
    put = jax_putter(device.jax_device)
    bufs = []
    for o in operands:
        if type(o) is Array:
            host = np.asarray(o._data)
            flat = np.zeros(size, host.dtype)
            flat[:n] = host.reshape(-1)
            bufs.append(put(flat))
        else:
            bufs.append(jax_operand(o, device))
    import jax

    with jax.enable_x64(True), jax.default_device(device.jax_device):
        out = fn(*bufs)
    host_out = np.asarray(out)[:n].reshape(shape)
    return Array._new(put(host_out), FROM_NUMPY[host_out.dtype], device)


def to_device_buffer(host: Any, device: Device) -> Any:
    """Place a host value on `device` as the eager executor for it expects."""
    if executor_for(device) is NUMPY_EXECUTOR:
        return np.asarray(host)
    return jax_put(np.asarray(host), device.jax_device)


NUMPY_EXECUTOR = NumpyExecutor()
_numpy_run = NUMPY_EXECUTOR.run
XLA_EAGER_EXECUTOR = XlaEagerExecutor()

_KERNELS = "X10ARRAY_EAGER_CPU_KERNELS"


def executor_for(device: Device) -> Any:
    """The executor of an eager device, the one decision of NumPy or XLA kernels: NumPy on the
    CPU under X10ARRAY_EAGER_CPU_KERNELS=numpy (the default), else XLA."""
    if device.kind is _CPU and get_setting(_KERNELS) == "numpy":
        return NUMPY_EXECUTOR
    return XLA_EAGER_EXECUTOR


class EagerBackend:
    """The `BackendImpl` of eager devices: every value is computed already."""

    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        # executor_for's decision, written out: calling it here made an eager `add` on 100
        # elements 5% slower (benchmarks/bench_overhead.py's operation)
        if device.kind is _CPU and get_setting(_KERNELS) == "numpy":
            return _numpy_run(prim, device, operands, params)
        return XLA_EAGER_EXECUTOR.run(prim, device, operands, params)

    def adopt(self, target: Array) -> None:
        """Nothing to track: an eager value is computed already."""

    def place(self, host: np.ndarray, dtype: DType, device: Device, *, shared: bool, layout: Any = None) -> Array:
        buf = to_device_buffer(host, device)
        return Array._new(buf, dtype, device, shared=shared and buf is host)

    def read(self, x: Array) -> np.ndarray:
        data = x._data
        return data if type(data) is _ndarray else np.asarray(data)

    def item(self, x: Array) -> Any:
        data = x._data
        return data.item() if type(data) is _ndarray else np.asarray(data).item()

    def host_buffer(self, x: Array) -> np.ndarray | None:
        if x._device.kind is not _CPU:
            return None
        data = x._data
        if type(data) is _ndarray and data.flags.writeable:
            return data
        # a buffer of the XLA kernels (or an imported read-only one), read-only from the host:
        # x keeps a NumPy copy of it instead (the kernels take either), which the caller may write
        host = np.array(data, copy=True)
        if x._data is data:  # (unless another thread wrote the array meanwhile)
            x._data = host
        return host

    @property
    def views_share_host(self) -> bool:
        """With NumPy kernels a view's buffer is a NumPy view of its base's already; with XLA
        kernels a view's value is a jax buffer of its own, so once the base's buffer is handed
        out, its views hold NumPy views of it (`Alias.share_host`), as on the lazy device."""
        return get_setting(_KERNELS) != "numpy"

    def host_value(self, x: Array) -> np.ndarray | None:
        data = x._data
        return data if type(data) is _ndarray and data.flags.writeable and x._device.kind is _CPU else None

    def share_host(self, x: Array, buffer: np.ndarray) -> bool:
        if x._device.kind is not _CPU:
            return False
        x._data = buffer  # (the kernels take NumPy buffers too)
        x._shared = True  # (a write in place would reach the base behind x10array's back)
        return True

    def layout(self, x: Array) -> Any:
        return ()  # one device: nothing is split

    def relayout(self, x: Array, layout: Any) -> Array:
        raise ValueError(f"to_device: {x.device!r} is not a mesh; only arrays on a mesh have layouts")

    def buffer(self, x: Array) -> Any:
        return x._data

    def known(self, x: Array) -> np.ndarray | None:
        return self.read(x)

    def index_now(self, x: Array, prim: Primitive, operands: tuple[int, ...], params: dict[str, Any]) -> Array | None:
        return None  # (bind runs the index at once)

    def compute_for_reads(self, x: Array) -> None:
        pass  # (nothing pends)

    def guard(self, out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
        """Eager index values are checked at the call (see `_api.indexing`): nothing pends."""

    def barrier(self, devices: list[Device] | None, wait: bool) -> None:
        """Nothing pends on an eager device; with `wait`, nothing is in flight either (jax's
        dispatch is asynchronous, but every read waits for its value)."""


_CPU = DeviceKind.CPU

register(Backend.EAGER, EagerBackend())
