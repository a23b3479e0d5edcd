"""Manipulation functions (the standard's "Manipulation Functions" chapter)."""

from __future__ import annotations



from ._array_object import Array
from ._helpers import broadcast_shapes as _broadcast_shapes
from ._helpers import check_array, check_shape, normalize_axis
from ._ops import Primitive, bind

__all__ = ["broadcast_to", "permute_dims", "reshape"]

_BROADCAST_TO = Primitive("broadcast_to", lambda k, x, *, shape: k.broadcast_to(x, shape))
_PERMUTE_DIMS = Primitive("permute_dims", lambda k, x, *, axes: k.transpose(x, axes))
_RESHAPE = Primitive("reshape", lambda k, x, *, shape: k.reshape(x, shape))


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    check_array(x, "broadcast_to")
    shape = check_shape(shape, "broadcast_to")
    if _broadcast_shapes(x.shape, shape, fname="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return bind(_BROADCAST_TO, x._device, x, shape=shape)


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    check_array(x, "permute_dims")
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"permute_dims: axes must be a tuple of ints, got {type(axes).__name__}")
    norm = tuple(normalize_axis(a, x.ndim, "permute_dims", "axes") for a in axes)
    if sorted(norm) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {axes} is not a permutation of the {x.ndim} dimensions")
    return bind(_PERMUTE_DIMS, x._device, x, axes=norm)


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    check_array(x, "reshape")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"reshape: shape must be a tuple of ints, got {type(shape).__name__}")
    shape = tuple(int(s) for s in shape)
    return bind(_RESHAPE, x._device, x, shape=shape)



