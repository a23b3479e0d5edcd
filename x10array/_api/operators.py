"""The operator table: the `Array` methods that are functions of the standard's chapters.

`_core.array.Array` holds a value, a dtype and a device, and depends on `_core` alone; its
indexing, arithmetic and comparison operators, `T`/`mT`, `to_device` and DLPack methods are
functions defined here in `_api`, installed on the class by `install()` when the namespace
is assembled. A binary operator whose other operand is not an array or a Python scalar
returns NotImplemented, so Python can try the other operand's reflected method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.array import Array
from .._core.devices import Device
from .._core.primitive import atomic_write, rebind
from .._core.validation import OperandTypeError
from . import creation, elementwise, indexing, interchange, linear_algebra, manipulation

__all__ = ["OPERATORS", "install"]

# (operator, function, has a reflected form, has an in-place form)
OPERATORS: tuple[tuple[str, Callable[..., Array], bool, bool], ...] = (
    ("add", elementwise.add, True, True),
    ("sub", elementwise.subtract, True, True),
    ("mul", elementwise.multiply, True, True),
    ("truediv", elementwise.divide, True, True),
    ("floordiv", elementwise.floor_divide, True, True),
    ("mod", elementwise.remainder, True, True),
    ("pow", elementwise.pow, True, True),
    ("matmul", linear_algebra.matmul, True, True),
    ("and", elementwise.bitwise_and, True, True),
    ("or", elementwise.bitwise_or, True, True),
    ("xor", elementwise.bitwise_xor, True, True),
    ("lshift", elementwise.bitwise_left_shift, True, True),
    ("rshift", elementwise.bitwise_right_shift, True, True),
    ("eq", elementwise.equal, False, False),
    ("ne", elementwise.not_equal, False, False),
    ("lt", elementwise.less, False, False),
    ("le", elementwise.less_equal, False, False),
    ("gt", elementwise.greater, False, False),
    ("ge", elementwise.greater_equal, False, False),
)

# (method, function of the array alone)
UNARY: tuple[tuple[str, Callable[[Array], Array]], ...] = (
    ("abs", elementwise.abs),
    ("neg", elementwise.negative),
    ("pos", elementwise.positive),
    ("invert", elementwise.bitwise_invert),
)


def _forward(fn: Callable[..., Array]) -> Callable[..., Any]:
    own = getattr(fn, "operator", None)
    if own is not None:  # the function made its method itself (elementwise: the hot path inline)
        return own

    def method(self: Array, other: Any, /) -> Any:
        try:
            return fn(self, other)
        except OperandTypeError:
            return NotImplemented

    method.__name__ = fn.__name__
    return method


def _reflected(fn: Callable[..., Array]) -> Callable[..., Any]:
    own = getattr(fn, "reflected", None)
    if own is not None:  # elementwise's, with the Python-scalar case inline
        return own

    def method(self: Array, other: Any, /) -> Any:
        try:
            return fn(other, self)
        except OperandTypeError:
            return NotImplemented

    return method


def _inplace(fn: Callable[..., Array]) -> Callable[..., Array]:
    @atomic_write  # read, compute and rebind with no other write between
    def method(self: Array, other: Any, /) -> Array:
        indexing.check_writable(self, f"in-place {fn.__name__}")
        result = fn(self, other)
        if result._device != self._device:  # `other` is committed to another device
            if self._committed or self._alias is not None or self._device.is_lazy:
                raise ValueError(
                    f"in-place {fn.__name__}: the result is on {result._device!r}, not on the array's device"
                    f" {self._device!r}; this array cannot move (it was placed explicitly, has views or is"
                    " lazy): copy the operand with to_device()"
                )
            indexing.assign_device(self, result._device)  # an uncommitted eager array follows, as in x[...] = v
        if result._dtype is not self._dtype:
            raise TypeError(
                f"in-place {fn.__name__}: the result dtype {result._dtype.name} differs from the"
                f" array's dtype {self._dtype.name}"
            )
        if result.shape != self.shape:
            raise ValueError(
                f"in-place {fn.__name__}: the result shape {result.shape} differs from the array's shape {self.shape}"
            )
        rebind(self, result)
        return self

    return method


def T(self: Array) -> Array:
    if self.ndim != 2:
        raise ValueError(f"Array.T: only for 2-D arrays (got {self.ndim}-D); use permute_dims or mT")
    return manipulation.permute_dims(self, (1, 0))


def mT(self: Array) -> Array:
    if self.ndim < 2:
        raise ValueError(f"Array.mT: needs at least 2 dimensions, got {self.ndim}")
    return linear_algebra.matrix_transpose(self)


def to_device(self: Array, device: Device, /, *, stream: Any = None) -> Array:
    return creation.to_device(self, device, stream=stream)


def __dlpack__(
    self: Array,
    /,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[Any, int] | None = None,
    copy: bool | None = None,
) -> Any:
    return interchange.dlpack_export(self, stream, max_version, dl_device, copy)


def __dlpack_device__(self: Array) -> tuple[Any, int]:
    return interchange.dlpack_device(self)


def install() -> None:
    """Put the operator table's methods on `Array` (once, when the namespace is assembled)."""
    methods: dict[str, Any] = {
        "T": property(T),
        "mT": property(mT),
        "to_device": to_device,
        "__dlpack__": __dlpack__,
        "__dlpack_device__": __dlpack_device__,
        "__getitem__": indexing.getitem,  # functions of (array, ...): installed as they are
        "__setitem__": indexing.setitem,
    }
    for name, unary in UNARY:
        methods[f"__{name}__"] = unary
    for name, fn, has_reflected, has_inplace in OPERATORS:
        methods[f"__{name}__"] = _forward(fn)
        if has_reflected:
            methods[f"__r{name}__"] = _reflected(fn)
        if has_inplace:
            methods[f"__i{name}__"] = _inplace(fn)
    for name, method in methods.items():
        setattr(Array, name, method)
