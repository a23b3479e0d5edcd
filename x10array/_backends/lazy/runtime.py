"""Stage 0, the runtime: the lazy backend's state, in one object (`RUNTIME`).

Every stage reads and changes the backend's state through it, so what is shared is named in
one place:

- `lock`: the lazy backend's lock (see Threads below);
- `live`: per device, the live pending arrays (weak references), which the barrier walks;
- `watching`: the capture watch, the `Watch` of the function x10array.compile is recording
  (one slot: read on the materialize and rebind paths), and `watched()`, this thread's;
- `in_flight`: per device, the results of its last replayed captured program;
- `programs`: the program cache (program.py's entries, bounded by X10ARRAY_CACHE_SIZE);
- `plans`: the plan cache (plans.Plan: a barrier's decisions per graph structure, by the
  barrier's targets' primitives and shapes; bounded by X10ARRAY_CACHE_SIZE);
- `scope(device)`: jax's contexts a compiled run enters, made once per device (devices.jax_scope).

Threads (docs/eager-and-lazy.md, "Threads"): the lock is one for all lazy devices, reentrant.
It is held while a graph is traced, run and its results stored (executor.materialize_nodes:
so the program cache, the compile-cost model and a program's counts are only touched under
it), while a barrier takes a live list or a live list is pruned, and while a recording reads
the graph beyond its own operands (a fold reading producers, counting a graph's size).
Recording otherwise takes no lock: under the GIL it makes new nodes and appends to a live
list, each atomic, and a node it reads turns from pending to materialized at most once
(`value` set before `call` is dropped), which it sees either way. Holding the lock while a
graph runs keeps the donation of its inputs, decided by reference counts, from racing with a
recording taking a new reference to one. `metrics()` snapshots take it too (it is the lock
the counters change under: `_core.metrics.count_under`), so that they see counters agree.
"""

from __future__ import annotations

import collections
import functools
import threading
import weakref
from typing import Any

from ..._core import metrics, settings
from ..._core.array import Array
from ..._core.devices import Device, jax_scope
from ..._core.lru import LRU, release_jax_traces


class Watch:
    """What happened while `x10array.compile` recorded a function (see capture.py): the lines
    that read a value or ran a graph (`reads`), met a data-dependent shape (`breaks`), and the
    arrays rebound (`rebound`, weak references). One at a time, for the recording thread.
    `checked`: the computed index arrays host-checked meanwhile (see below).
    `foreign`: the nodes that graphs run by other threads meanwhile computed (a barrier, a
    read; weak references): if one of them is part of the recording, its recipe is gone and
    the capture would hold its value as a constant (capture.end then records again at the
    next call)."""

    __slots__ = ("thread", "reads", "breaks", "rebound", "foreign", "checked")

    def __init__(self, thread: int):
        self.thread = thread
        self.reads: list[str] = []
        # the computed index arrays and masks whose values the public layer checked on the host
        # (bounds, a mask's count), with the line: capture.end keeps the recording only if each
        # was made inside it (the same value at every call), not an argument or outside state
        self.checked: list[tuple[Any, str]] = []
        self.breaks: list[str] = []
        self.rebound: list[tuple[weakref.ref[Array], str]] = []
        self.foreign: weakref.WeakSet[Any] = weakref.WeakSet()


def _evicted_programs(evicted: list[tuple[Any, Any]]) -> None:
    """A program left the cache: its executable goes with it (the program holds the only
    reference), and so does what jax kept from tracing and lowering it."""
    if any(program.compiled is not None for _, program in evicted):
        release_jax_traces()


class Runtime:
    """The lazy backend's state (see the module docstring). One instance, `RUNTIME`."""

    __slots__ = ("lock", "live", "watching", "in_flight", "programs", "plans")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        # live pending arrays, per device, for the barrier
        self.live: collections.defaultdict[Device, list[weakref.ref[Array]]] = collections.defaultdict(list)
        # the active Watch, or None (one slot: read on the materialize and rebind paths)
        self.watching: list[Watch | None] = [None]
        # per device, the results of its last replayed captured program (x10array.compile),
        # which may still be computing: a barrier that waits waits for them too (a device runs
        # its programs in order)
        self.in_flight: dict[Device, tuple[Any, ...]] = {}
        # graph key -> program (LRU, bounded by X10ARRAY_CACHE_SIZE, read at each insertion)
        self.programs = LRU(
            "lazy programs",
            functools.partial(settings.get, "X10ARRAY_CACHE_SIZE"),
            on_evict=_evicted_programs,
            weak_entries=True,  # (a plan keeps its program's entry weakly: plans._planned)
        )
        # the barrier's targets' (device, primitives, shapes) -> the plans of their graphs (a few
        # structures each, the last hit or kept first; plans.Plan), bounded as the programs
        self.plans = LRU("lazy plans", functools.partial(settings.get, "X10ARRAY_CACHE_SIZE"))

    def watched(self) -> Watch | None:
        """The watch of the recording this thread is making, if any."""
        watch = self.watching[0]
        if watch is not None and watch.thread == threading.get_ident():
            return watch
        return None

    def scope(self, device: Device) -> tuple[list[tuple[Any, Any]], tuple[Any, Any]]:
        """What a compiled run of `device` enters around its call of the program: jax's
        contexts, made once per device and shared with the eager device (devices.jax_scope)."""
        return jax_scope(device)

    def locked(self, fn: Any) -> Any:
        """`fn`, run holding the lock."""
        lock = self.lock

        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return fn(*args, **kwargs)

        locked.__name__ = locked.__qualname__ = fn.__name__
        locked.__doc__ = fn.__doc__
        locked.__wrapped__ = fn  # type: ignore[attr-defined]  # an attribute on a function, as functools.wraps sets
        return locked


RUNTIME = Runtime()
metrics.count_under(RUNTIME.lock)
