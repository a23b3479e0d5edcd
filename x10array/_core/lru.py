"""One size-limited cache with least-recently-used eviction, shared by every cache of x10array.

The caches (see `caches()`): the lazy device's compiled programs, its shape/dtype caches, and
the eager XLA executor's jitted programs. Each has a bound, so a long run that keeps meeting
new shapes (a scikit-learn fit on ever-new data, a varying batch size) does not grow. A bound
is a number, or a function read at each insertion (the cache's setting: `settings.override`
then resizes the cache; a smaller bound takes effect at the next insertion).

A lookup is on the hot path of recording (one per recorded operation), so a hit costs one
dict lookup and one store: each entry is `[value, last use]`, the last use a tick of a global
clock, and nothing is reordered. When an insertion takes a cache past its bound, the least
recently used entries are dropped in one pass (`batch` of them: 1 for the program cache, an
eighth of the bound for the shape caches, where one sort then serves many insertions).

Why hand-written, not functools.lru_cache or cachetools: lru_cache bounds a function's memo,
not a cache that callers fill and look up apart, and its bound is fixed at decoration, where
these follow a setting; cachetools' LRUCache reorders an ordered dict at every hit, on the
recording's hot path, and neither lists its caches for `caches()` (bench_soak and
tests/test_caches.py check every bound). The whole of it is this module's few dozen lines.

Every other memo of x10array is bounded by construction, so it needs no LRU and no setting:
`devices.jax_devices` (one entry per device kind), `kernels.jax_namespace` and the lazy
`xla_numerics.xla_flushes` (no arguments: one entry), `current_device`'s parsed
`X10ARRAY_DEFAULT_DEVICE` (one entry), `Device.default` / `default_xla` (one each), the lazy
executor's device memory sizes and the lazy placements (one per device), `mesh.spec_of`'s
canonical specs (it stops adding at 1,024). The eager elementwise sightings and the mesh
relayouts are LRUs with fixed bounds (8,192 shapes; 64 layouts). Tables that grow only when something is
defined (`OP_TABLE`, the policy registries, gradient rules, tracer types, settings) are not
caches: a run meeting new shapes or values does not add to them.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Iterator
from typing import Any

# The clock of last uses (C-level: no lock needed for distinct, increasing ticks).
tick: Callable[[], int] = itertools.count().__next__

_registry: weakref.WeakValueDictionary[str, LRU] = weakref.WeakValueDictionary()


class Entry(list):  # type: ignore[type-arg]
    """A cache entry, `[value, last use]`: a list that can be referred to weakly (a lazy plan
    keeps its program's entry so, plans._planned: it never keeps an evicted program alive)."""

    __slots__ = ("__weakref__",)


class LRU:
    """A mapping of at most `maxsize` entries; past it, the least recently used are evicted.

    `maxsize` is a number or a function giving the bound (read at each insertion); `batch`,
    how many entries an eviction pass drops, a number or a function of the bound.
    `get` and `put` count as uses. `on_evict([(key, value), ...])` is called after each
    eviction pass with what it evicted.
    `entries` is the underlying dict of `key -> [value, last use]`, for hot paths that inline
    `get` (look up, then store `tick()` into the entry's second slot). `changes` is the tick of
    its last insertion or removal (`put`, `pop`, `clear`, evictions; not writes to `entries`
    itself; the clock is global, so no other cache has the same): a caller that kept an entry
    may use it without a lookup while `changes` is the same (the lazy barrier's plans keep
    their program's, weakly: plans._planned; `weak_entries` makes its entries `Entry`s,
    which can be referred to weakly)."""

    __slots__ = (
        "name", "_maxsize", "_batch", "entries", "evictions", "on_evict", "changes", "weak_entries", "__weakref__",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        maxsize: int | Callable[[], int],
        batch: int | Callable[[int], int] = 1,
        on_evict: Callable[[list[tuple[Any, Any]]], None] | None = None,
        register: bool = True,
        weak_entries: bool = False,
    ):
        if not callable(maxsize) and maxsize < 1:
            raise ValueError(f"{name}: the cache bound must be at least 1, got {maxsize}")
        self.name = name
        self._maxsize = maxsize
        self._batch = batch
        self.entries: dict[Any, list[Any]] = {}
        self.evictions = 0
        self.changes = tick()
        self.weak_entries = weak_entries  # entries are `Entry`s (else plain lists: faster to index)
        self.on_evict = on_evict
        if register:
            _registry[name] = self

    @property
    def maxsize(self) -> int:
        """The bound now."""
        bound = self._maxsize
        return bound() if callable(bound) else bound

    @property
    def batch(self) -> int:
        """How many entries an eviction pass drops, at the bound now (1 to the bound)."""
        maxsize = self.maxsize
        batch = self._batch
        return max(1, min(batch(maxsize) if callable(batch) else batch, maxsize))

    def get(self, key: Any, default: Any = None) -> Any:
        entry = self.entries.get(key)
        if entry is None:
            return default
        entry[1] = tick()
        return entry[0]

    def put(self, key: Any, value: Any) -> Any:
        """Store `value` (the most recently used entry now); returns it."""
        self.entries[key] = Entry((value, tick())) if self.weak_entries else [value, tick()]
        self.changes = tick()
        if len(self.entries) > self.maxsize:
            self._evict()
        return value

    def _evict(self) -> None:
        excess = len(self.entries) - self.maxsize + self.batch - 1
        if excess <= 0:
            return
        entries = self.entries
        snapshot = list(entries.items())  # (one C-level copy: other threads may insert meanwhile)
        if excess == 1:
            oldest = [min(snapshot, key=_last_use)]
        else:
            oldest = sorted(snapshot, key=_last_use)[:excess]
        evicted = [(key, entry[0]) for key, entry in oldest if entries.pop(key, None) is not None]
        self.changes = tick()
        self.evictions += len(evicted)  # (another thread may have dropped some)
        if self.on_evict is not None and evicted:
            self.on_evict(evicted)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: Any) -> bool:
        return key in self.entries

    def __getitem__(self, key: Any) -> Any:
        return self.entries[key][0]

    def pop(self, key: Any, default: Any = None) -> Any:
        entry = self.entries.pop(key, None)
        self.changes = tick()
        return default if entry is None else entry[0]

    def clear(self) -> None:
        self.entries.clear()
        self.changes = tick()

    def items(self) -> list[tuple[Any, Any]]:
        """(key, value) pairs, least recently used first."""
        return [(k, e[0]) for k, e in sorted(list(self.entries.items()), key=_last_use)]

    def keys(self) -> list[Any]:
        return [k for k, _ in self.items()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __repr__(self) -> str:
        return f"<LRU {self.name}: {len(self.entries)}/{self.maxsize}, {self.evictions} evicted>"


def _last_use(item: tuple[Any, list[Any]]) -> int:
    return item[1][1]


def caches() -> dict[str, tuple[int, int]]:
    """Every live cache of x10array: name -> (entries, bound)."""
    return {name: (len(c), c.maxsize) for name, c in sorted(_registry.items())}


def release_jax_traces() -> None:
    """Drop what jax's tracing caches hold: jaxprs, lowerings and abstract evaluations, keyed
    on shapes and on jax.numpy's own jitted functions (which live forever), that jax keeps
    after tracing one of our programs or shape rules. Bounded by jax (2,048-4,096 entries per
    cache, dozens of caches), they otherwise grow by tens of kilobytes per compile of a new
    shape, hundreds of megabytes in all. Refilled on demand; compiled executables are not
    touched (ours are held by our programs, a user's `jax.jit` functions keep theirs)."""
    try:
        from jax._src import util
    except ImportError:  # pragma: no cover - another jax layout: leave jax's bounds to it
        return
    clear = getattr(util, "clear_all_caches", None)
    if clear is not None:
        clear()
