"""The array object.

An `Array` is a dtype, a device and a value. The value (`_data`) depends on the backend:

- on an eager device it is a buffer: a NumPy `ndarray` on the CPU (NumPy kernels) or a jax
  array (XLA op by op);
- on a lazy XLA device it is either *pending* (a graph node: the recipe, not yet run) or
  *materialized* (a device buffer). Reading a value (`bool()`, `float()`, printing,
  `__array__`, `__dlpack__`, iteration, a copy to another device) or a barrier turns pending
  into materialized, after which the array drops its graph.

Mutation (`__setitem__`, in-place operators) rebinds the array to a new value; arrays that
were computed from the old value keep it, except views: the result of basic indexing (`x[1:3]`,
`x[0, :]`, `x[..., None]`), or of a function NumPy returns views from (`permute_dims`,
`reshape`, ...), and the array it views see each other's writes, as in NumPy,
array-api-strict and PyTorch, in every mode (`_api.indexing.Alias`: the write is replayed, not
shared memory). On the NumPy path a buffer that might be seen elsewhere (a NumPy view, an
imported NumPy array, an export) is copied before it is written (`_shared`), so writes are
done in place only when nobody can see them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from .backend import _IMPLS
from .devices import Device, DeviceKind
from .dtypes import DType

__all__ = ["Array"]


class Array:
    """An n-dimensional array of the Array API standard, on an x10array `Device`.

    Create arrays with the creation functions (`asarray`, `zeros`, ...), not this class.
    """

    __slots__ = ("_data", "_dtype", "_device", "_shared", "_alias", "_committed", "__weakref__")

    # NumPy's operators defer to an Array's (the priority, with no `__array_ufunc__`), whose
    # reflected forms refuse NumPy operands: `np_array + x` and `np_array += x` are a TypeError.
    # NumPy's functions and ufuncs called by name (`np.abs(x)`, `np.concatenate`, ...) convert
    # an Array through `__array__` (a read: a pending lazy value is computed) and return NumPy
    # arrays, as with array-api-strict; NumPy refuses an Array as a ufunc's `out=` (TypeError),
    # so no NumPy result is written into one, where a lazy device could lose it. docs/interop.md.
    __array_priority__ = 1000.0
    __hash__ = None  # type: ignore[assignment]  # unhashable (mutable), as the standard's arrays; object's is a method

    _data: Any
    _dtype: DType
    _device: Device
    _shared: bool
    _alias: Any  # None, or how the array takes part in views (see _api.indexing.Alias)
    # False for an array created without an explicit device and for results computed from
    # such arrays only: it moves to the device of the committed arrays it meets
    # (`validation.common_device`, docs/devices.md). `bind` sets it on results.
    _committed: bool

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("x10array.Array cannot be constructed directly: use x10array.asarray()")

    @classmethod
    def _new(cls, data: Any, dtype: DType, device: Device, shared: bool = False) -> Array:
        self = object.__new__(cls)
        self._data = data
        self._dtype = dtype
        self._device = device
        self._shared = shared
        self._alias = None
        self._committed = True
        return self

    # -- attributes ----------------------------------------------------------------------

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._data.shape:
            n *= d
        return n

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self._data.shape[0]

    # -- namespace, devices, interchange -------------------------------------------------

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in _SUPPORTED_VERSIONS:
            raise ValueError(
                f"__array_namespace__: api_version {api_version!r} is not supported;"
                f" choose one of {', '.join(_SUPPORTED_VERSIONS)}"
            )
        return sys.modules[__name__.partition(".")[0]]  # the namespace (x10array), imported already

    def _host(self) -> np.ndarray:
        """The value as a NumPy array (materializing and copying to the host as needed).

        The result may share memory with this array: callers that hand it out mark the
        array `_shared`.
        """
        return _IMPLS[self._device.backend].read(self)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The value as a NumPy array (`numpy.asarray(x)`); a lazy value is computed first.

        What a write into the result does is part of the contract (docs/interop.md): the
        result is writable exactly where a write into it reaches `x`, so a write is never
        silently lost. `copy=None` returns, on the CPU, a NumPy buffer that is `x`'s value
        (the backend's `host_buffer`: SciPy's ndimage writes its results into
        `numpy.asarray(output)`; of a view, a NumPy view of its base's buffer, read-only
        where NumPy's view is), and on an accelerator a read-only copy. `copy=True` returns
        an independent writable copy. `copy=False` never copies: the NumPy buffer of an eager
        array, or a read-only view of a device buffer or of a lazy value on the CPU;
        ValueError where the value is not in host memory or a dtype conversion is asked for.
        """
        if copy is False and self._device.kind is not DeviceKind.CPU:
            raise ValueError("__array__(copy=False): this array's value is not in host memory")
        if dtype is not None and np.dtype(dtype) != self._dtype.np:
            if copy is False:
                raise ValueError("__array__(copy=False) cannot change the dtype")
            return self._host().astype(dtype)  # a new array, as NumPy's
        if copy:
            return self._host().copy()
        if copy is None:
            impl = _IMPLS[self._device.backend]
            alias = self._alias
            if alias is not None and alias.base is not None and impl.views_share_host:
                # a view (lazy device): a NumPy view of its base's buffer, so that a write into
                # it reaches the base and every view of it (`_api.indexing.Alias.host_buffer`);
                # a read-only one where NumPy's view is read-only or there is no host buffer
                buffer = alias.host_buffer(self)
            elif alias is not None and alias.base is not None and alias.read_only():
                buffer = None  # (broadcast_to, diagonal: read-only, as NumPy's)
            else:
                buffer = impl.host_buffer(self)
                if buffer is not None and alias is not None and impl.views_share_host:
                    alias.share_host(self, buffer)  # its views become NumPy views of the buffer
            if buffer is not None:
                self._shared = True  # (x copies before its own next write)
                return buffer
        host = self._host()
        if host.flags.writeable:
            if copy is False:  # an eager NumPy buffer
                self._shared = True
                return host
            host = host.view()  # a copy from an accelerator: a write into it would be lost
            host.flags.writeable = False
        return host

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling (and `copy.copy` / `copy.deepcopy`): the value's bits, the device and
        whether the array is committed to it; unpickled onto the same device kind (a lazy value
        is computed first). A view unpickles as an array of its own, as NumPy's do."""
        if self._device.mesh is not None:
            raise TypeError(
                f"__reduce__: an array on a mesh ({self._device!r}) is held in pieces and cannot be"
                " pickled; gather it first (x10array.distributed.gather) or save a checkpoint"
            )
        return (_unpickle, (np.array(self._host(), copy=True), self._device, self._committed))

    # -- Python scalars ------------------------------------------------------------------

    def _scalar(self, fname: str) -> Any:
        if self._data.shape:
            raise TypeError(f"{fname}: only 0-d arrays convert to Python scalars (shape {self.shape})")
        return _IMPLS[self._device.backend].item(self)

    def __bool__(self) -> bool:
        return bool(self._scalar("__bool__"))

    def __int__(self) -> int:
        if self._dtype.kind == "complex":
            raise TypeError("__int__: cannot convert a complex array to int")
        value = self._scalar("__int__")
        if self._dtype.kind == "real":
            if value != value:
                raise ValueError("__int__: cannot convert NaN to int")
            if value in (float("inf"), float("-inf")):
                raise OverflowError("__int__: cannot convert infinity to int")
        return int(value)

    def __float__(self) -> float:
        if self._dtype.kind == "complex":
            raise TypeError("__float__: cannot convert a complex array to float; use real() or abs()")
        return float(self._scalar("__float__"))

    def __complex__(self) -> complex:
        return complex(self._scalar("__complex__"))

    def __index__(self) -> int:
        if self._dtype.kind not in ("signed", "unsigned"):
            # (Python asks for __index__ where a sequence meets an array: `"ab" * x` and
            # `[0] * x` are sequence repetitions, `seq[x]` an index; say so, not only "index")
            raise TypeError(
                f"__index__: a {self._dtype.name} array is not a Python integer (an index, a slice bound, or "
                f"the repeat count of a sequence times an array such as 'ab' * x: use an integer 0-D array)"
            )
        return int(self._scalar("__index__"))

    # -- indexing ------------------------------------------------------------------------

    def __iter__(self) -> Any:
        # The standard defines iteration for 1-D arrays (0-d arrays, in order); as NumPy,
        # an n-D array iterates over its first axis and a 0-d array cannot be iterated.
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if self._device.is_lazy:
            return self._rows(self.shape[0])
        return (self[i, ...] for i in range(self.shape[0]))

    def _rows(self, n: int) -> Any:
        # On a lazy device a pending array is computed once, at the first row, and its rows
        # are then taken from its value rather than each recorded and run at its read (the
        # backend's compute_for_reads and index_now). A write to the array meanwhile makes it
        # pending again: the rows after it are recorded, so they see the write.
        _IMPLS[self._device.backend].compute_for_reads(self)
        for i in range(n):
            yield self[i, ...]

    # -- printing ------------------------------------------------------------------------

    def __repr__(self) -> str:
        body = np.array2string(self._host(), separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self._dtype.name}, device={self._device!r})"

    def __str__(self) -> str:
        return str(self._host())

    def __format__(self, spec: str) -> str:
        # As NumPy: a 0-D array formats as its Python scalar (f"{x:.3f}"); any other array
        # takes only the empty format (str(x)).
        if self.ndim == 0:
            return format(self._host().item(), spec)
        if spec:
            raise TypeError(f"__format__: the format {spec!r} needs a 0-D array, got shape {self.shape}")
        return str(self)

    # -- installed by the public layer -------------------------------------------------
    # Indexing, operators, `T`/`mT`, `to_device` and DLPack are functions of the standard's
    # chapters (`x10array._api`): `_api.operators` installs them on this class from its
    # operator table, so this module depends on `_core` alone. Their signatures, for type
    # checkers:
    if TYPE_CHECKING:

        @property
        def T(self) -> Array: ...
        @property
        def mT(self) -> Array: ...
        def to_device(self, device: Device, /, *, stream: Any = None) -> Array: ...
        def __dlpack__(
            self,
            /,
            *,
            stream: Any = None,
            max_version: tuple[int, int] | None = None,
            dl_device: tuple[Any, int] | None = None,
            copy: bool | None = None,
        ) -> Any: ...
        def __dlpack_device__(self) -> tuple[Any, int]: ...
        def __getitem__(self, key: Any, /) -> Array: ...
        def __setitem__(self, key: Any, value: Any, /) -> None: ...
        def __abs__(self) -> Array: ...
        def __neg__(self) -> Array: ...
        def __pos__(self) -> Array: ...
        def __invert__(self) -> Array: ...
        def __add__(self, other: Any, /) -> Array: ...
        def __radd__(self, other: Any, /) -> Array: ...
        def __iadd__(self, other: Any, /) -> Array: ...
        def __sub__(self, other: Any, /) -> Array: ...
        def __rsub__(self, other: Any, /) -> Array: ...
        def __isub__(self, other: Any, /) -> Array: ...
        def __mul__(self, other: Any, /) -> Array: ...
        def __rmul__(self, other: Any, /) -> Array: ...
        def __imul__(self, other: Any, /) -> Array: ...
        def __truediv__(self, other: Any, /) -> Array: ...
        def __rtruediv__(self, other: Any, /) -> Array: ...
        def __itruediv__(self, other: Any, /) -> Array: ...
        def __floordiv__(self, other: Any, /) -> Array: ...
        def __rfloordiv__(self, other: Any, /) -> Array: ...
        def __ifloordiv__(self, other: Any, /) -> Array: ...
        def __mod__(self, other: Any, /) -> Array: ...
        def __rmod__(self, other: Any, /) -> Array: ...
        def __imod__(self, other: Any, /) -> Array: ...
        def __pow__(self, other: Any, /) -> Array: ...
        def __rpow__(self, other: Any, /) -> Array: ...
        def __ipow__(self, other: Any, /) -> Array: ...
        def __matmul__(self, other: Any, /) -> Array: ...
        def __rmatmul__(self, other: Any, /) -> Array: ...
        def __imatmul__(self, other: Any, /) -> Array: ...
        def __and__(self, other: Any, /) -> Array: ...
        def __rand__(self, other: Any, /) -> Array: ...
        def __iand__(self, other: Any, /) -> Array: ...
        def __or__(self, other: Any, /) -> Array: ...
        def __ror__(self, other: Any, /) -> Array: ...
        def __ior__(self, other: Any, /) -> Array: ...
        def __xor__(self, other: Any, /) -> Array: ...
        def __rxor__(self, other: Any, /) -> Array: ...
        def __ixor__(self, other: Any, /) -> Array: ...
        def __lshift__(self, other: Any, /) -> Array: ...
        def __rlshift__(self, other: Any, /) -> Array: ...
        def __ilshift__(self, other: Any, /) -> Array: ...
        def __rshift__(self, other: Any, /) -> Array: ...
        def __rrshift__(self, other: Any, /) -> Array: ...
        def __irshift__(self, other: Any, /) -> Array: ...
        def __eq__(self, other: Any, /) -> Array: ...  # type: ignore[override]  # elementwise: an Array, not a bool
        def __ne__(self, other: Any, /) -> Array: ...  # type: ignore[override]  # elementwise: an Array, not a bool
        def __lt__(self, other: Any, /) -> Array: ...
        def __le__(self, other: Any, /) -> Array: ...
        def __gt__(self, other: Any, /) -> Array: ...
        def __ge__(self, other: Any, /) -> Array: ...


def _unpickle(host: np.ndarray, device: Device, committed: bool) -> Array:
    """The array that `Array.__reduce__` described: `host` placed on `device`."""
    from .dtypes import FROM_NUMPY

    out: Array = _IMPLS[device.backend].place(host, FROM_NUMPY[host.dtype], device, shared=False)
    out._committed = committed
    return out


_SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")
