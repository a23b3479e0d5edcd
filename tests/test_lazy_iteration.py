"""Iterating a lazy array and reading its elements one at a time from Python.

On the lazy device (CPU) `for v in x`, `max(x)`, `list(x)` and `float(x[i])` in a loop take
their elements from the array's computed value (executor.LazyBackend.index_now,
compute_for_reads) and compute 0-d operations on computed values at once
(executor._scalar_now), rather than recording a graph per element and running it at its read.
What must hold: the elements are those the eager device gives (values, dtypes, shapes,
device), a write is seen by every later read, and the graphs run do not grow with the number
of elements (a count, not a timing).
"""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
from x10array._core import settings

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")


def _graphs(d: xp.Metrics) -> int:
    """Graphs run in a metrics difference: interpreted or compiled."""
    return d.interpreted_graphs + d.execute_count


HOSTS = {
    "float64": np.random.default_rng(0).standard_normal(12),
    "float32": np.random.default_rng(1).standard_normal(12).astype(np.float32),
    "int32": np.arange(-6, 6, dtype=np.int32),
    "uint8": np.arange(12, dtype=np.uint8),
    "bool": np.arange(12) % 3 == 0,
    "complex64": (np.arange(12) + 1j * np.arange(12, 0, -1)).astype(np.complex64),
    "rows": np.random.default_rng(2).standard_normal((5, 3)),
}


def _same_elements(lazy_items: list, eager_items: list, device: xp.Device) -> None:
    assert len(lazy_items) == len(eager_items)
    for a, e in zip(lazy_items, eager_items):
        assert a.device == device and a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


@pytest.mark.parametrize("name", list(HOSTS))
@pytest.mark.parametrize("pending", [False, True])
def test_iteration_gives_the_eager_elements(name, pending):
    """`list(x)` of a computed or a pending lazy array: 0-d arrays (rows of a 2-D one) on the
    array's device, with the eager device's dtypes, shapes and values."""
    host = HOSTS[name]
    lazy, eager = xp.asarray(host, device=LAZY), xp.asarray(host, device=EAGER)
    if pending:  # (the same operation on both devices: a copy through an identity)
        lazy, eager = (xp.where(xp.ones_like(a, dtype=xp.bool), a, a) for a in (lazy, eager))
        assert lazy._data.value is None
    _same_elements(list(lazy), list(eager), LAZY)
    _same_elements([lazy[i] for i in range(host.shape[0])], [eager[i] for i in range(host.shape[0])], LAZY)
    _same_elements([lazy[-1, ...], lazy[0, ...]], [eager[-1, ...], eager[0, ...]], LAZY)


def test_python_reductions_and_scalars_match_the_eager_device():
    """max, min, sum and the Python scalars of the elements: the eager device's values and
    dtypes, including float32 with Python floats (no promotion to float64) and ints."""
    for name in ("float64", "float32", "int32", "uint8"):
        host = HOSTS[name]
        lazy = xp.exp(xp.asarray(host, device=LAZY)) if name == "float64" else xp.asarray(host, device=LAZY)
        eager = xp.exp(xp.asarray(host, device=EAGER)) if name == "float64" else xp.asarray(host, device=EAGER)
        for fn in (max, min, sum):
            got, want = fn(lazy), fn(eager)
            assert got.device == LAZY and got.dtype == want.dtype and got.shape == ()
            assert np.asarray(got) == np.asarray(want), (name, fn)
        assert [float(v) for v in lazy] == [float(v) for v in eager]
        assert [float(lazy[i]) for i in range(12)] == [float(eager[i]) for i in range(12)]
        got = [v * 2.5 - 1 for v in lazy]
        want = [v * 2.5 - 1 for v in eager]
        _same_elements(got, want, LAZY)
    ints = xp.asarray(HOSTS["int32"], device=LAZY)
    assert [int(v) for v in ints] == HOSTS["int32"].tolist()
    assert [bool(v) for v in xp.asarray(HOSTS["bool"], device=LAZY)] == HOSTS["bool"].tolist()
    assert [complex(v) for v in xp.asarray(HOSTS["complex64"], device=LAZY)] == HOSTS["complex64"].tolist()


def test_a_write_is_seen_by_every_later_read():
    """Mutation between and during reads: never a stale element."""
    x = xp.asarray(np.arange(6.0), device=LAZY)
    assert float(x[3]) == 3.0
    x[3] = 30.0
    assert float(x[3]) == 30.0
    seen = []
    for i, v in enumerate(x):
        if i == 1:
            x[4] = 40.0  # a write during the iteration: the rows after it see it
        seen.append(float(v))
    assert seen == [0.0, 1.0, 2.0, 30.0, 40.0, 5.0]
    x += 1.0  # rebound in place
    assert [float(x[i]) for i in range(6)] == [1.0, 2.0, 3.0, 31.0, 41.0, 6.0]
    assert float(max(x)) == 41.0
    buffer = np.asarray(x)  # a write through NumPy into x's host buffer (docs/interop.md)
    buffer[0] = -5.0
    assert float(x[0]) == -5.0 and float(min(x)) == -5.0


def test_rows_are_views_as_on_the_eager_device():
    """The rows of a 2-D array (and `x[i, ...]` of a 1-D one) are views: a write into one
    reaches the array, a write into the array reaches a live row, on both devices."""
    results = []
    for device in (EAGER, LAZY):
        m = xp.asarray(np.arange(6.0).reshape(3, 2), device=device)
        rows = list(m)
        rows[1][0] = 100.0  # into a row: the array sees it
        m[2, 1] = 200.0  # into the array: the row sees it
        v = xp.asarray(np.arange(3.0), device=device)
        element = v[1, ...]
        element[...] = 9.0
        results.append((np.asarray(m).tolist(), np.asarray(rows[2]).tolist(), np.asarray(v).tolist()))
    assert results[0] == results[1] == ([[0.0, 1.0], [100.0, 3.0], [4.0, 200.0]], [4.0, 200.0], [0.0, 9.0, 2.0])


def test_index_errors_are_those_of_the_eager_device():
    for device in (EAGER, LAZY):
        x = xp.asarray(np.arange(4.0), device=device)
        with pytest.raises(IndexError, match="__getitem__"):
            x[4]
        with pytest.raises(TypeError, match="0-d"):
            iter(x[0])


@pytest.mark.parametrize("n", [100, 1000])
def test_iterating_runs_a_number_of_graphs_that_does_not_grow_with_the_elements(n):
    """The graphs run (interpreted or compiled) while iterating a pending array and reading
    every element, taking max(x) and reading x[i] in a loop: one graph (the array's own),
    whatever the number of elements. (Each element and comparison still counts as an operation
    in ops_recorded, computed at once.)"""
    host = np.random.default_rng(0).standard_normal(n)
    x = xp.asarray(host, device=LAZY) * 2.0  # pending
    before = xp.metrics()
    values = [float(v) for v in x]
    top = max(x)
    reads = [float(x[i]) for i in range(n)]
    assert float(top) == max(values)
    d = xp.metrics() - before
    assert _graphs(d) == 1 and d.ops_recorded == 4 * n - 1, d  # n elements twice, n - 1 comparisons, n x[i]
    assert values == reads == (host * 2.0).tolist()
    y = xp.asarray(host, device=LAZY) + 1.0
    before = xp.metrics()
    total = sum(y)
    d = xp.metrics() - before
    assert _graphs(d) == 1, d
    assert float(total) == sum((host + 1.0).tolist())  # (left to right, as Python's sum)


def test_inside_a_recording_of_compile_elements_are_recorded():
    """x10array.compile records the function: an element of an argument is an operation of
    the recording (a replay reads the new argument's element), not a value taken at the call."""

    def f(x):
        return x[1] * 2.0 + x[0]

    g = xp.compile(f)
    for k in range(4):
        x = xp.asarray(np.arange(3.0) + k, device=LAZY)
        assert float(g(x)) == (1.0 + k) * 2.0 + k


def test_where_every_graph_compiles_the_elements_are_the_same():
    """X10ARRAY_COMPILE_THRESHOLD=1 (every graph compiled): 0-d operations are recorded and
    compiled as before; the elements and reductions are the same."""
    host = np.random.default_rng(4).standard_normal(20)
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):
        x = xp.asarray(host, device=LAZY)
        assert float(max(x)) == host.max() and [float(v) for v in x] == host.tolist()
        v = x[0] > x[1]
        assert v._data.value is None and bool(v) == (host[0] > host[1])  # (recorded, then compiled)
