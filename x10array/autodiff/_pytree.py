"""Pytrees: nested dicts, lists and tuples of arrays, and objects that flatten themselves.

An object takes part by defining `tree_flatten(self) -> (children, aux)` and the classmethod
`tree_unflatten(cls, aux, children)` (x10array.nn.Module does). Anything else is a leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]


def tree_flatten(tree: Any) -> tuple[list[Any], Any]:
    """The leaves of a pytree (dicts, lists, tuples, None, `tree_flatten` objects) and its structure."""
    leaves: list[Any] = []
    treedef = _flatten(tree, leaves)
    return leaves, treedef


def _flatten(tree: Any, leaves: list[Any]) -> Any:
    if tree is None:
        return ("none",)
    if type(tree) is dict:
        keys = list(tree)
        return ("dict", keys, [_flatten(tree[k], leaves) for k in keys])
    if type(tree) in (list, tuple):
        return (type(tree).__name__, [_flatten(t, leaves) for t in tree])
    if hasattr(tree, "tree_flatten") and hasattr(type(tree), "tree_unflatten"):
        children, aux = tree.tree_flatten()
        return ("object", type(tree), aux, [_flatten(c, leaves) for c in children])
    leaves.append(tree)
    return ("leaf",)


def tree_unflatten(treedef: Any, leaves: list[Any]) -> Any:
    """The pytree of structure `treedef` (from `tree_flatten`) with `leaves` in its places."""
    count = _count(treedef)
    leaves = list(leaves)
    if len(leaves) != count:
        raise ValueError(f"tree_unflatten: the tree has {count} leaves, got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


_TAGS = ("leaf", "none", "dict", "list", "tuple", "object")


def _count(treedef: Any) -> int:
    """The number of leaves of a treedef (TypeError for anything tree_flatten does not return)."""
    if not isinstance(treedef, tuple) or not treedef or treedef[0] not in _TAGS:
        raise TypeError(f"tree_unflatten: treedef must be what tree_flatten returned, got {type(treedef).__name__}")
    tag = treedef[0]
    if tag == "leaf":
        return 1
    if tag == "none":
        return 0
    return sum(_count(d) for d in treedef[-1])


def _unflatten(treedef: Any, it: Any) -> Any:
    tag = treedef[0]
    if tag == "leaf":
        return next(it)
    if tag == "none":
        return None
    if tag == "dict":
        return {k: _unflatten(d, it) for k, d in zip(treedef[1], treedef[2])}
    if tag in ("list", "tuple"):
        items = [_unflatten(d, it) for d in treedef[1]]
        return items if tag == "list" else tuple(items)
    _, cls, aux, children = treedef
    return cls.tree_unflatten(aux, [_unflatten(d, it) for d in children])


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """A pytree of `fn` applied to each leaf of `tree` (and the leaves at the same places of `rest`)."""
    if not callable(fn):
        raise TypeError(f"tree_map: fn must be a function, got {type(fn).__name__}")
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    for i, other in enumerate(others, 1):
        if len(other) != len(leaves):
            raise ValueError(f"tree_map: tree {i} has {len(other)} leaves, the first tree {len(leaves)}")
    return tree_unflatten(treedef, [fn(leaf, *(o[i] for o in others)) for i, leaf in enumerate(leaves)])
