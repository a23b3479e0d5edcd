"""`Array.__getitem__` and `Array.__setitem__`: validation, then one primitive each.

An index is normalized to a hashable description (ints, slices as (start, stop, step),
None, Ellipsis, and placeholders for array components that travel as operands), so that the
(primitive, parameters) pair can key compiled programs.
"""

from __future__ import annotations

from typing import Any

from ._array_object import Array
from ._ops import Primitive, bind

# Description components: ("i", int) | ("s", start, stop, step) | ("n",) | ("e",) | ("a", position)


def _rebuild(desc: tuple[Any, ...], arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for comp in desc:
        tag = comp[0]
        if tag == "i":
            out.append(comp[1])
        elif tag == "s":
            out.append(slice(comp[1], comp[2], comp[3]))
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        else:
            out.append(arrays[comp[1]])
    return tuple(out)


def _getitem_kernel(k: Any, x: Any, *arrays: Any, index: tuple[Any, ...]) -> Any:
    return x[_rebuild(index, arrays)]


def _setitem_kernel(k: Any, x: Any, value: Any, *arrays: Any, index: tuple[Any, ...]) -> Any:
    return k.index_update(x, _rebuild(index, arrays), value)


GETITEM = Primitive("getitem", _getitem_kernel)
GETITEM_MASK = Primitive("getitem_mask", _getitem_kernel, dynamic_shape=True)
SETITEM = Primitive("setitem", _setitem_kernel, in_place=True)
SETITEM_MASK = Primitive("setitem_mask", _setitem_kernel, in_place=True)


def normalize_index(x: Array, key: Any, fname: str) -> tuple[tuple[Any, ...], tuple[Array, ...], bool]:
    """(description, array operands, has a boolean mask). Raises IndexError/TypeError."""
    raise NotImplementedError


def getitem(x: Array, key: Any) -> Array:
    desc, arrays, has_mask = normalize_index(x, key, "__getitem__")
    return bind(GETITEM_MASK if has_mask else GETITEM, x._device, x, *arrays, index=desc)


def setitem(x: Array, key: Any, value: Any) -> None:
    raise NotImplementedError
