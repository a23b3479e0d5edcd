"""`x10array.compile(fn)`: record a step once per signature, then replay its compiled program.

After MLX's `mx.compile` and tinygrad's `TinyJit`. The first call of `step = compile(fn)`
with a given signature runs `fn` under the lazy recorder as usual and keeps the graph from its
argument arrays to its outputs (and to the new values of arguments it rebinds, such as
parameters updated in place); later calls with the same signature run that graph's compiled
XLA program directly: `fn` is not executed, nothing is recorded or keyed. The lazy half is in
`_backends/lazy/capture.py`.

The signature: the tree structure of the arguments (dicts, lists, tuples, None, and objects
with `tree_flatten` / `tree_unflatten`, such as `nn.Module`), each array's shape, dtype and
device, each Python int's and bool's value, and every other leaf itself (hashable: it is part
of the key). Python floats and complexes are runtime inputs: a new learning rate does not
record again. They are told from the body's constants by position, not identity: the
recording passes new, equal objects (`_fresh`; below an object, where that cannot be done, a
float is part of the key by its bits). How the argument arrays share data (one array twice,
views of one array) is part of the key too (`_aliasing`).

What cannot be captured (a value read inside `fn`, whether or not it was computed already: a
replay would reuse the Python number read at the recording; a data-dependent shape; an index
array, whose bounds check would hold for the recording's values only; an array other than an
argument or an output written) is found at the recording: that signature then runs `fn`
normally every time, after one warning naming the reason and the line, counted in
`metrics().capture_fallbacks`. `X10ARRAY_CAPTURE_CHECK_EVERY=N` records again every Nth call
of a signature and raises if the graph differs from the captured one.

On an eager device `fn` simply runs. On a mesh (`x10array.distributed`) the captured program
is the SPMD program of the step, and the signature also holds each argument's canonical layout
(the mesh's identity is in its device): an argument laid out differently records again. The
outputs keep the layouts the program chose, and an argument rebound in place keeps its own
(pinned at the recording, as in any mesh run). A multi-process run checks that every process
captured the same program, as for every new program on a mesh (spmd.agree).
"""

from __future__ import annotations

import functools
import struct
import warnings
from collections.abc import Callable
from typing import Any

from ._api.indexing import GETITEM, Alias
from ._backends.lazy import capture as _lazy_capture
from ._core import settings
from ._core.array import Array
from ._core.lru import LRU
from ._core.metrics import COUNTERS
from ._core.primitive import WRITE_LOCK, bind
from ._core.pytree import hashable as _hashable
from ._core.pytree import is_node as _is_node
from ._core.pytree import tree_flatten as _tree_flatten
from ._core.pytree import unflattener as _unflattener

__all__ = ["compile"]


def _signature(tree: Any, leaves: list[Any], key: list[Any], fixed: bool = False) -> None:
    """`x10array._core.pytree`'s walk fused with a call's signature: the leaves in the same
    order as `tree_flatten`'s, and instead of a
    treedef, the structure as a flat list of tokens in pre-order, each saying how many children
    follow (so the list is one structure's alone), with each array's (shape, dtype's name) in
    its place. One pass, no nested tuples: the replay's first step. (Each array's device is not
    in its token: a call is captured only when all its arrays are on one device, which the
    caller adds to the key once. The dtype is there by name, one per dtype: a str hashes in C,
    with its hash kept, where a DType's `__hash__` is a Python call at every lookup.)

    Below an object (`fixed`), a Python float or complex is no leaf but its value, bit for
    bit, in the key: the recording cannot tell it from an equal constant of the function's
    body (see `_fresh`), so it is a constant of the program, and a new value records again."""
    kind = type(tree)
    if kind is Array:
        leaves.append(tree)
        key.append((tree._data.shape, tree._dtype.name))
    elif tree is None:
        key.append(None)
    elif kind is dict:
        key.append(tuple(tree))
        for v in tree.values():
            _signature(v, leaves, key, fixed)
    elif kind is list or kind is tuple:
        key.append((kind, len(tree)))
        for v in tree:
            if type(v) is Array:  # (the Array case inline: lists of parameters, of moments)
                leaves.append(v)
                key.append((v._data.shape, v._dtype.name))
            else:
                _signature(v, leaves, key, fixed)
    elif _is_node(tree):
        children, aux = tree.tree_flatten()
        key.append((kind, _hashable(aux), len(children)))
        for c in children:
            _signature(c, leaves, key, True)
    elif fixed and (kind is float or kind is complex):
        key.append((kind, _bits(tree)))
    else:
        leaves.append(tree)
        key.append(1)


_DOUBLE = struct.Struct("<d")


def _bits(value: float | complex) -> tuple[bytes, ...]:
    """A float's or a complex number's bits (-0.0 is not 0.0, each NaN equals itself)."""
    if type(value) is complex:
        return (_DOUBLE.pack(value.real), _DOUBLE.pack(value.imag))
    return (_DOUBLE.pack(value),)


def _copy(value: float | complex) -> float | complex:
    """A new object equal to `value`, bit for bit."""
    if type(value) is complex:
        return complex(_DOUBLE.unpack(_DOUBLE.pack(value.real))[0], _DOUBLE.unpack(_DOUBLE.pack(value.imag))[0])
    return _DOUBLE.unpack(_DOUBLE.pack(value))[0]


def _fresh(tree: Any, undo: list[tuple[Any, Any, Any, Any]]) -> Any:
    """`tree` with each Python float and complex leaf (outside objects: see `_signature`)
    replaced by a new, equal object, for the recording: the recorder tells a scalar argument
    from a constant of the function's body by identity, and CPython makes equal constants of
    one module one object (`f(x, 0.5)` and a literal `0.5` in `f`). Tuples are rebuilt; lists
    and dicts are the caller's own (the function may mutate them): written in place, each
    write noted in `undo` to be taken back after the recording (`_restore`)."""
    kind = type(tree)
    if kind is float or kind is complex:
        return _copy(tree)
    if kind is tuple:
        items = tuple([_fresh(t, undo) for t in tree])
        return tree if all(a is b for a, b in zip(items, tree)) else items
    if kind is list:
        for i, t in enumerate(tree):
            new = _fresh(t, undo)
            if new is not t:
                tree[i] = new
                undo.append((tree, i, t, new))
    elif kind is dict:
        for k, t in tree.items():
            new = _fresh(t, undo)
            if new is not t:
                tree[k] = new
                undo.append((tree, k, t, new))
    return tree


def _restore(undo: list[tuple[Any, Any, Any, Any]]) -> None:
    """Put the caller's scalars back where `_fresh` wrote copies (unless the function wrote
    something else there meanwhile)."""
    for container, k, old, new in reversed(undo):
        try:
            if container[k] is new:
                container[k] = old
        except (IndexError, KeyError):  # (the function removed it)
            pass


def _root(a: Array) -> tuple[Array, tuple[Any, ...]]:
    """The array that owns `a`'s data (`a` itself unless it is a view) and the indices that
    select `a` from it (see _api.indexing.Alias)."""
    path = []
    alias = a._alias
    while alias is not None and alias.base is not None:
        path.append((_hashable(alias.index), _hashable(alias.operands)))
        a = alias.base
        alias = a._alias
    return a, tuple(path)


def _aliasing(arrays: list[Array]) -> tuple[Any, ...] | None:
    """How the argument arrays share data, for the signature (None when they do not): per
    array, the first argument holding the same value (the same array passed twice, or two
    arrays sharing one node), the first argument with the same owner of the data (views of
    one array, or an array and its view), and the view's indices. A program recorded for
    distinct arrays would read and write them as distinct, and one recorded for aliased ones
    would read one for both."""
    same: dict[int, int] = {}
    owners: dict[int, int] = {}
    tokens = []
    shared = False
    for i, a in enumerate(arrays):
        j = same.setdefault(id(a._data), i)
        root, path = _root(a) if a._alias is not None else (a, ())
        k = owners.setdefault(id(root), i)
        shared = shared or j != i or k != i
        tokens.append((j, k, path))
    return tuple(tokens) if shared else None


# captured signatures with fewer replays than captures after which a compiled function stops
# capturing new signatures (each capture compiles at once: a signature that changes at every call
# would compile at every call)
_STORM = 16


class _Entry:
    __slots__ = ("captured", "fallback", "calls", "out_tree", "links")

    def __init__(self) -> None:
        self.captured: Any = None
        self.fallback: str | None = None
        self.calls = 0
        self.out_tree: Any = None  # the output tree's _unflattener: what a replay builds its result with
        self.links: list[tuple[int, int, list[Alias]]] = []  # (see _links)


class Compiled:
    """What `x10array.compile(fn)` returns: call it as you would call `fn`."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        # (per function, bounded like the program cache; not in lru.caches(), which names one cache each)
        self._entries = LRU("captured signatures", lambda: settings.get("X10ARRAY_CACHE_SIZE"), register=False)
        self._captures = 0  # signatures captured (each one compiled at once)
        self._replays = 0
        self._storm: str | None = None  # set once too many signatures were captured for their replays
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<x10array.compile of {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves: list[Any] = []
        tokens: list[Any] = []
        _signature(args, leaves, tokens)
        if kwargs:
            _signature(kwargs, leaves, tokens)
        arrays: list[Array] = []
        scalars: list[Any] = []
        sig: list[Any] = []
        device = None
        views = False
        for leaf in leaves:
            kind = type(leaf)
            if kind is Array:
                d = leaf._device
                if device is None:
                    device = d
                elif d is not device and d != device:
                    return self.fn(*args, **kwargs)  # several devices: not captured
                arrays.append(leaf)
                alias = leaf._alias
                if alias is not None and alias.base is not None:
                    # a view (an array whose views were taken has an `_alias` too, with no base:
                    # alone it shares data with no other argument, and any view of it that is
                    # passed beside it is seen here; the MLP step's X took `_aliasing` at every call)
                    views = True
            elif kind is float or kind is complex:
                scalars.append(leaf)
                sig.append(kind)
            else:
                try:
                    hash(leaf)
                except TypeError:
                    raise TypeError(
                        f"compile: an argument of {self!r} is neither an array, a Python scalar nor hashable:"
                        f" {kind.__name__} (a static argument is part of the signature)"
                    ) from None
                sig.append((kind, leaf))
        if device is None or not device.is_lazy or _lazy_capture.recording():
            # eager, or inside another compiled function: run it
            return self.fn(*args, **kwargs)
        if views or len({id(a._data) for a in arrays}) < len(arrays):  # (arrays that may share data: rare)
            aliasing = _aliasing(arrays)
            if aliasing is not None:
                sig.append(aliasing)
        sig.append(device)  # (all the arrays' device: not in their tokens)
        if device.mesh is not None:  # the program was compiled for its inputs' layouts (the mesh is in `device`)
            sig.append(_lazy_capture.layouts(arrays, device))
        key = (tuple(tokens), tuple(sig), len(kwargs))
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries.put(key, _Entry())
        entry.calls += 1
        if entry.fallback is not None:
            return self.fn(*args, **kwargs)
        captured = entry.captured
        if captured is not None and not captured.stale():
            every = settings.get("X10ARRAY_CAPTURE_CHECK_EVERY")
            if every and entry.calls % every == 0:
                return self._check(entry, args, kwargs, arrays, device)
            self._replays += 1
            outs = captured.replay(arrays, scalars)
            for k, i, chain in entry.links:  # (the arguments returned, or views of them)
                outs[k] = _view_of(arrays[i], chain)
            return entry.out_tree(iter(outs))
        if self._storm is not None:  # a new signature at (nearly) every call: not worth a compile each
            return self.fn(*args, **kwargs)
        return self._record(entry, args, kwargs, arrays, device)

    def _record_once(self, args: Any, kwargs: Any, arrays: list[Array], device: Any) -> Any:
        """Run `fn` under a watch: (its result, Captured or the reason it cannot be, out treedef)."""
        # (the scalar arguments as new objects, told apart from the body's constants: see _fresh)
        undo: list[Any] = []
        args, kwargs = _fresh(args, undo), {k: _fresh(v, undo) for k, v in kwargs.items()}
        try:
            fresh: list[Any] = []
            _signature(args, fresh, [])
            if kwargs:
                _signature(kwargs, fresh, [])
            scalars = [s for s in fresh if type(s) is float or type(s) is complex]
            watch = _lazy_capture.begin(arrays, device)
            if watch is None:  # another thread records: run it uncaptured
                return self.fn(*args, **kwargs), None, None
            nodes = [a._data for a in arrays]
            try:
                result = self.fn(*args, **kwargs)
            except BaseException:
                _lazy_capture.stop(watch)
                raise
        finally:
            _restore(undo)
        out_leaves, out_treedef = _tree_flatten(result)
        captured = _lazy_capture.end(watch, device, arrays, nodes, scalars, out_leaves)
        return result, captured, out_treedef

    def _record(self, entry: _Entry, args: Any, kwargs: Any, arrays: list[Array], device: Any) -> Any:
        result, captured, out_treedef = self._record_once(args, kwargs, arrays, device)
        if captured is None:
            return result
        if isinstance(captured, _lazy_capture.Retry):  # (the values are right: the next call records again)
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            warnings.warn(
                f"x10array.compile: {name} was not captured at this call: {captured.reason}; it records again"
                " at the next call",
                RuntimeWarning,
                stacklevel=3,
            )
            return result
        if isinstance(captured, str):
            entry.fallback = captured
            COUNTERS.capture_fallbacks += 1
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            warnings.warn(
                f"x10array.compile: {name} cannot be captured: {captured}; it runs uncaptured"
                " (recorded at each call) for this signature",
                RuntimeWarning,
                stacklevel=3,
            )
            return result
        entry.captured = captured
        entry.out_tree = _unflattener(out_treedef)
        entry.links = _links(_tree_flatten(result)[0], arrays)
        self._captures += 1
        if self._captures >= _STORM and self._replays < self._captures:
            self._storm = (
                f"{self._captures} signatures captured for {self._replays} replays (an int or str argument, or a"
                " shape, that changes at every call?)"
            )
            COUNTERS.capture_fallbacks += 1
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            warnings.warn(
                f"x10array.compile: {name}: {self._storm}; new signatures now run uncaptured (recorded at each"
                " call, compiled only once that pays); pass a changing number as a Python float or an array",
                RuntimeWarning,
                stacklevel=3,
            )
        return result

    def _check(self, entry: _Entry, args: Any, kwargs: Any, arrays: list[Array], device: Any) -> Any:
        """The debug check: record again and compare with the captured graph."""
        result, captured, _ = self._record_once(args, kwargs, arrays, device)
        if captured is None or isinstance(captured, _lazy_capture.Retry):  # (nothing to compare)
            return result
        if isinstance(captured, str) or captured.key != entry.captured.key:
            why = captured if isinstance(captured, str) else "the recorded graph differs from the captured one"
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            raise RuntimeError(
                f"x10array.compile: {name} recorded again (X10ARRAY_CAPTURE_CHECK_EVERY) does not match its capture:"
                f" {why}; the replayed program would not be what the function computes now"
            )
        return result


def _links(outputs: list[Any], arrays: list[Array]) -> list[tuple[int, int, list[Alias]]]:
    """The outputs of a recorded call that are its argument arrays, or views of them (through
    index and function views, none indexed by an array): (output position, argument position,
    the aliases from the output up to the argument). A replay returns the argument itself, or
    a view made again the same way, so that writes through its results reach what they reach
    on the recording call (and on an eager device), rather than a detached copy."""
    position = {id(a): i for i, a in enumerate(arrays)}
    links = []
    for k, o in enumerate(outputs):
        if type(o) is not Array:
            continue
        chain: list[Alias] = []
        v = o
        while id(v) not in position:
            alias = v._alias
            if alias is None or alias.base is None or any(type(x) is Array for x in alias.operands):
                break
            chain.append(alias)
            v = alias.base
        else:
            links.append((k, position[id(v)], chain))
    return links


def _view_of(base: Array, chain: list[Alias]) -> Array:
    """`base` viewed as `chain` (from the view down to the array it views: see _links) says."""
    for alias in reversed(chain):
        with WRITE_LOCK:  # (made and registered between writes, as getitem's views)
            if alias.transform is None:
                assert alias.index is not None
                view = bind(GETITEM, base._device, base, *alias.operands, index=alias.index)
                Alias.register(base, view, alias.index, alias.operands)
            else:
                view = alias.transform.forward(base)
                Alias.register_function(base, view, alias.transform)
        base = view
    return base


def compile(fn: Callable[..., Any]) -> Compiled:  # noqa: A001  (x10array.compile, as mx.compile)
    """Record `fn` once per signature and replay its compiled program on later calls.

    The first call with a given signature (the arguments' tree structure, each array's shape,
    dtype and device, each Python int's and bool's value) runs `fn` under the lazy recorder and
    keeps the graph from the argument arrays to the outputs, including the new values of
    arguments it rebinds (parameters updated in place). Later calls with that signature run the
    graph's compiled XLA program directly: `fn` is not executed, nothing is recorded or keyed,
    and `metrics().captured_replays` counts them. Python floats are runtime inputs (a new
    learning rate does not record again). What cannot be captured (a value read inside `fn`, a
    data-dependent shape) is found at the recording: that signature then runs `fn` as usual,
    after one warning (`metrics().capture_fallbacks`). On an eager device `fn` simply runs.
    Usable as a decorator::

        import x10array as xp

        lazy = xp.Device.default_xla

        @xp.compile
        def step(w, x):
            return w - 0.1 * xp.tanh(x @ w)

        w = xp.ones((4, 4), device=lazy)
        for _ in range(3):
            w = step(w, xp.ones((4, 4), device=lazy))   # recorded once, then replayed
        xp.lazy_barrier()
        print(xp.metrics().captured_replays)              # 2

    The guide: :doc:`/eager-and-lazy` ("Capturing a step"); in the MNIST demo,
    :doc:`/tutorial-mnist`. The other lazy tools: `lazy_barrier`, `metrics`, `transfer_guard`.
    """
    if not callable(fn):
        raise TypeError(f"compile: fn must be callable, got {type(fn).__name__}")
    return Compiled(fn)
