"""Counters of the lazy backend, after X10's `PrintX10Metrics`."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Protocol

from . import settings, transfers


@dataclasses.dataclass
class Metrics:
    """A snapshot of the lazy backend's counters (`x10array.metrics()`)."""

    compile_count: int = 0  # programs compiled by XLA
    disk_cache_loads: int = 0  # programs loaded from the persistent compile cache instead
    cache_hits: int = 0
    interpreted_graphs: int = 0
    plan_hits: int = 0  # barriers that reused the plan of a graph structure seen before (no walk)
    execute_count: int = 0
    compile_seconds: float = 0.0  # first runs: compiles and disk-cache loads
    execute_seconds: float = 0.0
    ops_recorded: int = 0  # operations on lazy arrays: recorded, or computed at once (an element of a computed array)
    graph_breaks: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    barriers: int = 0
    donated_buffers: int = 0
    guard_materializations: int = 0
    repeat_cuts: int = 0  # lazy recordings without a barrier run where they repeat (as a barrier would)
    captured_replays: int = 0  # calls of an x10array.compile function that ran its program
    capture_fallbacks: int = 0  # signatures of an x10array.compile function that could not be captured

    def __sub__(self, other: Metrics) -> Metrics:
        return Metrics(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in dataclasses.fields(self)})


COUNTERS = Metrics()

# The lock under which a backend changes several counters together, so that a snapshot sees
# them agree: the lazy backend's own lock (its runtime's, which it holds while it runs a graph),
# once it is imported (`count_under`). Reentrant.
_COUNTING = [threading.RLock()]


def count_under(lock: Any) -> None:
    """Take `lock` for snapshots and resets of the counters (the lazy backend's runtime gives
    its lock at import)."""
    _COUNTING[0] = lock


def metrics() -> Metrics:
    """A copy of the current counters; subtract two snapshots to measure a region.

    The counters (a `Metrics`): programs compiled (`compile_count`, `compile_seconds`) and
    loaded from the disk cache (`disk_cache_loads`), runs of cached programs (`cache_hits`, of
    which `captured_replays` by `compile`), graphs interpreted (`interpreted_graphs`), graphs
    run from the plan of a structure seen before, without walking them (`plan_hits`),
    operations recorded, graph breaks and implicit reads (`graph_breaks`, `transfers_to_host`),
    barriers and more. In a healthy training loop `compile_count` stops growing after the first
    steps and `graph_breaks` stays 0::

        import x10array as xp

        lazy = xp.Device.default_xla
        before = xp.metrics()
        x = xp.ones((8, 8), device=lazy)
        for _ in range(10):
            x = xp.tanh(x @ x)
            xp.lazy_barrier()
        d = xp.metrics() - before
        print(d.barriers, d.graph_breaks)   # 10 0

    `metrics_report()` prints them as a table with the lines of code that read values; the
    table of every counter and what it should be: :doc:`/troubleshooting`. `reset_metrics`
    sets them back to zero.

    Taken between graph runs (holding the lazy backend's lock, under which a run counts), so
    that its counters agree with each other (`execute_count == compile_count + disk_cache_loads + cache_hits`)
    while other threads run graphs."""
    with _COUNTING[0]:
        return dataclasses.replace(COUNTERS)


def reset_metrics() -> None:
    """Set every counter of `metrics()` back to zero (a difference of two `metrics()` needs none)."""
    with _COUNTING[0]:
        for f in dataclasses.fields(COUNTERS):
            setattr(COUNTERS, f.name, f.default)
        transfers.reset()


class MetricsReport(str):
    """The text of `metrics_report()`: a str whose repr is the table itself, so that an
    interactive session shows it once, readably."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


class TextWriter(Protocol):
    """What `metrics_report(file=...)` writes to: anything with `write(str)` (sys.stdout, a text file)."""

    def write(self, text: str, /) -> object: ...


SITES_SHOWN = 10  # call sites listed per kind by metrics_report()
# A line of user code that read lazy values this often is named in a note of metrics_report():
# a loop reading a value at every step, which nothing else points out (no warning: a read is
# correct, only slower than the lazy device could be)
READS_NOTED = 100


def metrics_report(file: TextWriter | None = None) -> MetricsReport:
    """The counters as a table of text, then the lines of the user's code that read lazy
    values to the host and that broke graphs, most frequent first (the top SITES_SHOWN of
    each), and a note for each line that read READS_NOTED values or more (a loop reading at
    every step). Printed only when asked: `metrics_report(file=sys.stdout)` (or
    `print(metrics_report())`)."""
    if file is not None and not callable(getattr(file, "write", None)):
        raise TypeError(f"metrics_report: file must be a writable text file such as sys.stdout, got {file!r}")
    rows = [(f.name, getattr(COUNTERS, f.name)) for f in dataclasses.fields(COUNTERS)]
    width = max(len(name) for name, _ in rows)
    lines = ["x10array lazy metrics", "-" * (width + 14)]
    for name, value in rows:
        text = f"{value:.4f}" if isinstance(value, float) else str(value)
        lines.append(f"{name:<{width}}  {text:>12}")
    for kind, title in (("read", "host reads"), ("graph break", "graph breaks")):
        sites = transfers.sites(kind)
        if not sites:
            continue
        lines += ["", f"top call sites of {title} (count  line  operation)"]
        for _, filename, lineno, operation, count in sites[:SITES_SHOWN]:
            lines.append(f"{count:>8}  {filename}:{lineno}  {operation}")
        if len(sites) > SITES_SHOWN:
            lines.append(f"     ...  {len(sites) - SITES_SHOWN} more call sites")
    frequent = [site for site in transfers.sites("read") if site[4] >= READS_NOTED]
    for _, filename, lineno, operation, count in frequent[:SITES_SHOWN]:
        lines += [
            "",
            f"note: {filename}:{lineno} read lazy values {count} times ({operation}). Each read of a pending"
            " value runs its graph at once and waits for it, so a loop that reads at every step runs near"
            " eager speed at best: read every few steps, keep such code on the eager device, or put the"
            ' step under x10array.compile (docs/eager-and-lazy.md, "When the lazy device pays").',
        ]
    report = MetricsReport("\n".join(lines))
    if file is not None:
        print(report, file=file)
    return report


def log_compiles() -> bool:
    return bool(settings.get("X10ARRAY_LOG_COMPILES"))
