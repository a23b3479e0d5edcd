"""Devices after X10: a kind (CPU/GPU/TPU), an ordinal and a backend (EAGER/XLA).

`Device.default` is the eager device on the first accelerator, else the CPU;
`Device.default_xla` the same with the XLA (lazy) backend. The *current* default device,
which creation functions use when no device is given, is taken from the innermost
`device_scope(...)` block, else from the environment variable X10ARRAY_DEFAULT_DEVICE
(`eager`, `xla`, or `kind:ordinal:backend` such as `cpu:0:xla`), else `Device.default`.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, overload

from . import settings


class DeviceKind(enum.Enum):
    """The hardware of a device: `CPU`, `GPU` or `TPU`."""

    CPU = "cpu"
    GPU = "gpu"
    TPU = "tpu"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__
    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python function, paid at each `_IMPLS[device.backend]` of `bind`)
    __hash__ = object.__hash__


class Backend(enum.Enum):
    """How a device runs operations: `EAGER` (one at a time, NumPy kernels) or `XLA` (lazy: recorded graphs)."""

    EAGER = "eager"
    XLA = "xla"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__
    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python function, paid at each `_IMPLS[device.backend]` of `bind`)
    __hash__ = object.__hash__


@functools.cache  # bounded by construction: one entry per DeviceKind
def jax_devices(kind: DeviceKind) -> tuple[Any, ...]:
    """The jax devices of one kind on this machine (empty when there are none)."""
    import jax

    try:
        return tuple(jax.devices(kind.value))
    except RuntimeError:
        return ()


# jax's accelerator plugins and what makes it look for one (xla_bridge's discovery): where none
# is installed or asked for, jax's only devices are CPUs, and the default device is known
# without importing jax (~0.5-1 s: the first eager operation of a CPU-only session needs none)
_PLUGIN_MODULES = ("jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm_plugin", "libtpu")


@functools.cache  # bounded by construction: one entry
def accelerators_possible() -> bool:
    """Whether jax could have a GPU or TPU here: an accelerator plugin installed (a package of
    _PLUGIN_MODULES, a `jax_rocm*` one, an entry point of the `jax_plugins` group), TPU_LIBRARY_PATH
    set, or jax already imported (then asking it is cheap). JAX_PLATFORMS naming only `cpu`:
    none."""
    import importlib.util
    from importlib.metadata import entry_points

    platforms = os.environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms and {p.strip() for p in platforms.split(",")} <= {"cpu"}:
        return False
    if "jax" in sys.modules or os.environ.get("TPU_LIBRARY_PATH"):
        return True
    if any(importlib.util.find_spec(m) is not None for m in _PLUGIN_MODULES):
        return True
    if any(_rocm_plugin(p) for p in sys.path):
        return True
    return bool(entry_points(group="jax_plugins"))


def _rocm_plugin(folder: str) -> bool:
    try:
        return any(n.startswith("jax_rocm") for n in os.listdir(folder or "."))
    except OSError:
        return False


class _DefaultDescriptor:
    """`Device.default` / `Device.default_xla`: resolved on first use, then cached (one
    class attribute each: bounded by construction)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "_cached_" + name

    def __get__(self, obj: object, owner: type[Device]) -> Device:
        cached = owner.__dict__.get(self.name)
        if cached is None:
            kinds = (DeviceKind.GPU, DeviceKind.TPU) if accelerators_possible() else ()
            kind = next((k for k in kinds if jax_devices(k)), DeviceKind.CPU)
            cached = owner(kind, 0, self.backend)
            setattr(owner, self.name, cached)
        return cached


class Device:
    """A place where arrays live and the backend that runs their operations.

    Hashable and comparable; two devices are equal when kind, ordinal and backend are.
    """

    __slots__ = ("kind", "ordinal", "backend", "_hash", "_cmp")
    kind: DeviceKind
    ordinal: int
    backend: Backend
    _hash: int
    _cmp: tuple[Any, ...]  # what equality and order compare

    default = _DefaultDescriptor(Backend.EAGER)
    default_xla = _DefaultDescriptor(Backend.XLA)
    # The mesh of a mesh device (`_core/mesh.MeshDevice`, whose slot shadows this), else None:
    # `device.mesh is None` is how the layers tell a single device from a mesh.
    mesh: Any = None

    def __init__(self, kind: DeviceKind | str, ordinal: int = 0, backend: Backend | str = Backend.EAGER):
        try:
            kind = kind if isinstance(kind, DeviceKind) else DeviceKind(str(kind).lower())
        except ValueError:
            raise ValueError(f"Device: unknown kind {kind!r}; expected one of CPU, GPU, TPU") from None
        try:
            backend = backend if isinstance(backend, Backend) else Backend(str(backend).lower())
        except ValueError:
            raise ValueError(f"Device: unknown backend {backend!r}; expected EAGER or XLA") from None
        if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0:
            raise ValueError(f"Device: ordinal must be a non-negative int, got {ordinal!r}")
        # (where jax can only have CPUs, the first exists: no need to start jax to know it)
        first_cpu = kind is DeviceKind.CPU and ordinal == 0 and not accelerators_possible()
        available = 1 if first_cpu else len(jax_devices(kind))
        if ordinal >= available:
            raise ValueError(
                f"Device: there is no {kind.name} device with ordinal {ordinal} on this machine ({available} available)"
            )
        self._fields(kind, ordinal, backend)

    def _fields(self, kind: DeviceKind, ordinal: int, backend: Backend, *more: Any) -> None:
        """Set the immutable fields, and what equality, order and hashing read: `_cmp` (with
        `more`, a subclass's own identity: a mesh's key) and its hash, each made once."""
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "ordinal", ordinal)
        object.__setattr__(self, "backend", backend)
        cmp = (kind.value, ordinal, backend.value, *more)
        object.__setattr__(self, "_cmp", cmp)
        object.__setattr__(self, "_hash", hash(cmp))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Device is immutable")

    # (a device equal to another is often not the same object, `Device("cpu", 0, "xla")` made
    # by the user against the runtime's own: every dict lookup keyed by device compares them,
    # several per graph run, so the comparison reads one precomputed tuple)
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Device):
            return NotImplemented
        return self._cmp == other._cmp

    def __lt__(self, other: Device) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self._cmp < other._cmp

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Device(kind={self.kind!r}, ordinal={self.ordinal}, backend={self.backend!r})"

    def __reduce__(self) -> tuple[type, tuple[DeviceKind, int, Backend]]:
        return (Device, (self.kind, self.ordinal, self.backend))

    @property
    def is_lazy(self) -> bool:
        return self.backend is Backend.XLA

    @property
    def jax_device(self) -> Any:
        return jax_devices(self.kind)[self.ordinal]


def all_devices() -> tuple[Device, ...]:
    """Every device of this machine, eager and XLA, CPU first."""
    out = []
    for kind in DeviceKind:
        for i in range(len(jax_devices(kind))):
            for backend in Backend:
                out.append(Device(kind, i, backend))
    return tuple(out)


def parse_device(text: str, where: str | None = None) -> Device:
    """`eager`, `xla`, or `kind:ordinal:backend` (e.g. `cpu:0:xla`).

    `where` starts the error message (a function's name, or the environment variable)."""
    where = where or f"device {text!r}"
    spec = text.strip().lower()
    if spec == "eager":
        return Device.default
    if spec == "xla":
        return Device.default_xla
    parts = spec.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        raise ValueError(
            f"{where}: unknown device string; expected 'eager', 'xla' or 'kind:ordinal:backend' such as 'cpu:0:xla'"
        )
    try:
        return Device(parts[0], int(parts[1]), parts[2])
    except ValueError as e:
        raise ValueError(f"{where}: {str(e).removeprefix('Device: ')}") from None


@overload
def as_device(device: Device | str, fname: str, *, none: Device | None = None) -> Device: ...
@overload
def as_device(device: Any, fname: str, *, none: Device | None = None) -> Device | None: ...
def as_device(device: Any, fname: str, *, none: Device | None = None) -> Device | None:
    """A `device=` argument: a Device, a device string (as X10ARRAY_DEFAULT_DEVICE takes:
    'eager', 'xla', 'cpu:0:xla', ...), or None (returns `none`)."""
    if device is None:
        return none
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        return parse_device(device, f"{fname}: device {device!r}")
    raise ValueError(
        f"{fname}: device must be an x10array.Device or a device string such as 'eager', 'xla' or 'cpu:0:xla',"
        f" got {device!r}"
    )


class _Scope(threading.local):
    def __init__(self) -> None:
        self.stack: list[Device] = []


_scope = _Scope()
# (the setting's text, its device): one entry, replaced when the setting changes (bounded by
# construction; a changed setting is parsed once again, which is cheap).
_env_default: tuple[str, Device] | None = None


def current_device() -> Device:
    """The device that creation functions use when none is given."""
    global _env_default
    stack = _scope.stack
    if stack:
        return stack[-1]
    spec = settings.get("X10ARRAY_DEFAULT_DEVICE")
    cached = _env_default
    if cached is not None and cached[0] == spec:
        return cached[1]
    device = parse_device(spec, f"X10ARRAY_DEFAULT_DEVICE={spec!r}") if spec else Device.default
    _env_default = (spec, device)
    return device


@contextlib.contextmanager
def device_scope(device: Device | str) -> Iterator[Device]:
    """Make `device` (a Device or a device string such as 'xla') the default device for the
    enclosed block (thread-local: other threads, those the block starts included, keep their
    own default)."""
    if not isinstance(device, (Device, str)):
        raise TypeError(f"device_scope: expected an x10array.Device or a device string such as 'xla', got {device!r}")
    if isinstance(device, str):
        device = parse_device(device, f"device_scope: device {device!r}")
    stack = _scope.stack
    depth = len(stack)
    stack.append(device)
    try:
        yield device
    finally:
        if _scope.stack is stack:
            stack.pop()
        else:
            # Left in another thread (a generator holding the block, resumed there): popping
            # this thread's stack would change its default device. End the scope where it
            # began, and say so.
            if len(stack) > depth and stack[depth] is device:
                del stack[depth]
            raise RuntimeError(
                "device_scope: the block was entered in one thread and left in another (a"
                " generator resumed in another thread?); a device scope is per thread: enter"
                " and leave it in the same thread, or pass device= explicitly"
            )


# -- placing host arrays on a jax device ------------------------------------------------------


# per device, the free scopes of its jax calls (see jax_scope)
_SCOPES: dict[Any, list[tuple[Any, Any]]] = {}


def jax_scope(device: Any) -> tuple[list[tuple[Any, Any]], tuple[Any, Any]]:
    """What a call of a jitted program on `device` enters (the eager device's per-primitive
    programs, a lazy compiled run): jax's contexts `enable_x64(True)` and `default_device(its
    jax device)`, both part of jax's key of a jitted call. Made once and entered again at
    every call (making them costs more than entering them), taken from the device's free list
    and given back after the call (`free.append(scope)`): a context is never entered twice at
    once (a signal handler that runs a program meanwhile takes another), as its exit restores
    what its entry saw. Returns (the free list, the scope taken)."""
    free = _SCOPES.get(device)
    if free is None:
        free = _SCOPES.setdefault(device, [])
    try:
        return free, free.pop()  # (atomic: two threads never take the same one)
    except IndexError:
        pass
    import jax

    return free, (jax.enable_x64(True), jax.default_device(device.jax_device))


def jax_put(host: Any, jax_device: Any) -> Any:
    """`jax.device_put(host, jax_device)` of a NumPy array, with 64-bit types, through jax's
    C++ transfer where it is there (`jax_putter`): the same committed array, the same copy."""
    return jax_putter(jax_device)(host)


def jax_putter(jax_device: Any) -> Any:
    """The function placing a NumPy array on `jax_device` (`jax_put`), made once per device.
    `jax.device_put` spends ~100 Python calls per array, several times the transfer of a small array; its last
    step for a NumPy array is one call of jax's C++ `batched_device_put` with the array's shape
    and dtype, a single-device sharding and `committed=True`, which this calls directly
    (several times cheaper), so the array is the one jax.device_put makes (a jitted program takes either
    without tracing again). Falls back to jax.device_put where jax's private names changed,
    and for dtypes the C++ transfer does not take as they are (bfloat16, float0)."""
    put = _PUTTERS.get(jax_device)
    if put is None:
        put = _PUTTERS[jax_device] = _putter(jax_device)
    return put


def _putter(jax_device: Any) -> Any:
    import jax
    import numpy as np

    def slow(host: Any) -> Any:
        with jax.enable_x64(True):
            return jax.device_put(host, jax_device)

    try:  # jax's private names (jax 0.10): any change of them falls back to jax.device_put
        from jax._src.core import ShapedArray
        from jax._src.lib import xla_client  # type: ignore[attr-defined]

        batched_device_put = xla_client.batched_device_put
        sharding = jax.sharding.SingleDeviceSharding(jax_device)
        devices = [jax_device]

        def fast(host: Any) -> Any:
            if host.dtype.kind not in _PLAIN_KINDS:
                return slow(host)
            aval = ShapedArray(host.shape, host.dtype)
            return batched_device_put(aval, sharding, [host], devices, True, enable_x64=True)

        probe = np.arange(3, dtype=np.int64)
        if not np.array_equal(np.asarray(fast(probe)), probe):  # pragma: no cover - a changed jax
            return slow
        return fast
    except Exception:  # pragma: no cover - a changed jax
        return slow


_PLAIN_KINDS = frozenset("biufc")  # dtypes the C++ transfer takes as they are
# (one entry per jax device: bounded by the machine)
_PUTTERS: dict[Any, Any] = {}
