"""Pytrees: nested dicts, lists and tuples, None, and objects that flatten themselves.

The one walk of nested containers for every layer (autodiff's and nn's parameters, optim's
updates, checkpoint's keyed leaves, `x10array.compile`'s arguments and results); the layers
above the namespace reach it through `x10array.extend`. An object takes part by defining
`tree_flatten(self) -> (children, aux)` and the classmethod `tree_unflatten(cls, aux,
children)` (x10array.nn.Module does). Anything else is a leaf, a Python scalar as much as an
array; None is an empty subtree (no leaf).

The treedef is one encoding, nested tuples, hashable (an object's `aux` is compared and hashed
by its value, or its repr where it is not hashable) so that it can key a cache:

- a leaf is `0`; None is `None`;
- a dict is `("dict", keys, children)` (keys in the dict's order), a list or tuple
  `("list" | "tuple", children)`;
- an object is `("object", cls, Aux(aux), children)`.

Only exact dicts, lists and tuples are containers: a subclass (a named tuple, an OrderedDict)
is a leaf, as it always was for autodiff and capture.

Why hand-written, not `jax.tree_util` (or optree): the layers above the namespace (autodiff,
nn, optim, checkpoint) run on any conforming namespace and import no jax (tests/test_layers.py
checks it; an eager CPU session never starts jax), so their tree walk cannot be jax's. The
treedef is also part of x10array's contracts: a plain hashable tuple that keys
`x10array.compile`'s captures, with checkpoint's key paths and the leaf rule above (None
empty, subclasses leaves), which jax's registry would make differ by container type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves_with_paths", "Aux", "is_node", "hashable"]


class Aux:
    """An object node's `aux`, kept as it is for `tree_unflatten` and compared by value."""

    __slots__ = ("value", "_key")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._key = hashable(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aux) and type(self._key) is type(other._key) and bool(self._key == other._key)

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Aux({self.value!r})"


def hashable(value: Any) -> Any:
    """`value` where it is hashable, else its repr (what an `aux` is compared by)."""
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def is_node(tree: Any) -> bool:
    """Whether `tree` is an object node (defines `tree_flatten` and the classmethod `tree_unflatten`)."""
    return hasattr(tree, "tree_flatten") and hasattr(type(tree), "tree_unflatten")


def tree_flatten(tree: Any) -> tuple[list[Any], Any]:
    """The leaves of a pytree (dicts, lists, tuples, None, `tree_flatten` objects) and its structure."""
    leaves: list[Any] = []
    treedef = _flatten(tree, leaves)
    return leaves, treedef


def _flatten(tree: Any, leaves: list[Any]) -> Any:
    if tree is None:
        return None
    kind = type(tree)
    if kind is dict:
        keys = tuple(tree)
        return ("dict", keys, tuple(_flatten(tree[k], leaves) for k in keys))
    if kind is list or kind is tuple:
        return (kind.__name__, tuple(_flatten(t, leaves) for t in tree))
    if is_node(tree):
        children, aux = tree.tree_flatten()
        return ("object", kind, Aux(aux), tuple(_flatten(c, leaves) for c in children))
    leaves.append(tree)
    return 0


def tree_leaves_with_paths(
    tree: Any,
    names: Callable[[Any, Any, list[Any]], Any] | None = None,
    on_key: Callable[[tuple[Any, ...], Any], None] | None = None,
) -> tuple[list[tuple[tuple[Any, ...], Any]], Any]:
    """[(path, leaf)] in `tree_flatten`'s order, and the treedef, from one walk. A path is the
    tuple of keys from the root: a dict's key, a list's or tuple's index, an object's child
    index, or the name `names(obj, aux, children)` gives (a sequence with one name per child,
    or None for the indices). `on_key(path, key)` is called with each dict key (and the dict's
    path) before its value is walked, empty or not: to reject a key by raising."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    treedef = _walk(tree, (), out, names, on_key)
    return out, treedef


def _walk(tree: Any, path: tuple[Any, ...], out: list[Any], names: Any, on_key: Any) -> Any:
    if tree is None:
        return None
    kind = type(tree)
    if kind is dict:
        keys = tuple(tree)
        children = []
        for k in keys:
            if on_key is not None:
                on_key(path, k)
            children.append(_walk(tree[k], (*path, k), out, names, on_key))
        return ("dict", keys, tuple(children))
    if kind is list or kind is tuple:
        return (kind.__name__, tuple(_walk(t, (*path, i), out, names, on_key) for i, t in enumerate(tree)))
    if is_node(tree):
        children, aux = tree.tree_flatten()
        children = list(children)
        given = names(tree, aux, children) if names is not None else None
        labels = list(given) if given is not None and len(given) == len(children) else range(len(children))
        walked = tuple(_walk(c, (*path, n), out, names, on_key) for n, c in zip(labels, children))
        return ("object", kind, Aux(aux), walked)
    out.append((path, tree))
    return 0


_TAGS = ("dict", "list", "tuple", "object")


def count(treedef: Any) -> int:
    """The number of leaves of a treedef (TypeError for anything tree_flatten does not return)."""
    if treedef is None:
        return 0
    if type(treedef) is int and treedef == 0:
        return 1
    if not isinstance(treedef, tuple) or not treedef or treedef[0] not in _TAGS:
        raise TypeError(f"tree_unflatten: treedef must be what tree_flatten returned, got {type(treedef).__name__}")
    return sum(count(d) for d in treedef[-1])


def tree_unflatten(treedef: Any, leaves: Any) -> Any:
    """The pytree of structure `treedef` (from `tree_flatten`) with `leaves` in its places."""
    n = count(treedef)
    leaves = list(leaves)
    if len(leaves) != n:
        raise ValueError(f"tree_unflatten: the tree has {n} leaves, got {len(leaves)}")
    return unflatten(treedef, iter(leaves))


def unflatten(treedef: Any, it: Iterator[Any]) -> Any:
    """`tree_unflatten` without the checks, taking leaves from the iterator `it` (the hot path
    of a replay, whose treedef is its own)."""
    if treedef is None:
        return None
    if treedef == 0:
        return next(it)
    tag = treedef[0]
    if tag == "dict":
        return {k: unflatten(d, it) for k, d in zip(treedef[1], treedef[2])}
    if tag == "list":
        return [unflatten(d, it) for d in treedef[1]]
    if tag == "tuple":
        return tuple([unflatten(d, it) for d in treedef[1]])
    _, cls, aux, children = treedef
    return cls.tree_unflatten(aux.value, [unflatten(d, it) for d in children])


def unflattener(treedef: Any) -> Callable[[Iterator[Any]], Any]:
    """`unflatten` of one treedef as a function of the iterator: its tags read once, here (a
    captured step builds the same output tree at every replay)."""
    if treedef is None:
        return _none
    if treedef == 0:
        return next
    tag = treedef[0]
    if tag == "dict":
        keys, parts = treedef[1], tuple(unflattener(d) for d in treedef[2])
        return lambda it: {k: part(it) for k, part in zip(keys, parts)}
    if tag == "list" or tag == "tuple":
        parts = tuple(unflattener(d) for d in treedef[1])
        if tag == "list":
            return lambda it: [part(it) for part in parts]
        return lambda it: tuple([part(it) for part in parts])
    _, cls, aux, children = treedef
    make, value, parts = cls.tree_unflatten, aux.value, tuple(unflattener(d) for d in children)
    return lambda it: make(value, [part(it) for part in parts])


def _none(it: Iterator[Any]) -> None:
    return None


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
