"""Implicit synchronisation: `transfer_guard` and the call sites of host reads and graph breaks.

Under "disallow" every implicit read of a lazy array's value raises TransferGuardError naming
the operation and the line of this file that asked, before anything is computed; explicit
reads (`to_device`, `lazy_barrier`) work; eager arrays are never guarded. "log" logs each call
site once. `metrics_report()` lists the call sites with their counts. array-api-compat sees
lazy arrays as lazy under "disallow", and array-api-extra's functions still give the right
values then.
"""

from __future__ import annotations

import inspect
import logging
import operator
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array.extend import settings

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")
DEVICES = {"eager": EAGER, "lazy": LAZY}
HERE = __file__


@pytest.fixture(autouse=True)
def fresh_metrics() -> Iterator[None]:
    xp.reset_metrics()
    yield
    xp.reset_metrics()


def _line() -> int:
    """The line of the caller."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


# Each implicit read: (name the message starts with, the read). Each takes a 0-d float array
# `s` (an int array for the int conversions) and a 1-d array `v`.
READS: dict[str, tuple[str, Callable[[Any, Any, Any], Any]]] = {
    "bool": ("bool()", lambda s, i, v: bool(s)),
    "int": ("int()", lambda s, i, v: int(i)),
    "float": ("float()", lambda s, i, v: float(s)),
    "complex": ("complex()", lambda s, i, v: complex(s)),
    "index": ("__index__", lambda s, i, v: operator.index(i)),
    "list-index": ("__index__", lambda s, i, v: [10, 20, 30][i]),
    "numpy.asarray": ("__array__", lambda s, i, v: np.asarray(v)),
    "dlpack": ("__dlpack__", lambda s, i, v: np.from_dlpack(v)),
    "repr": ("repr()", lambda s, i, v: repr(v)),
    "str": ("str()", lambda s, i, v: str(v)),
    "format": ("str()", lambda s, i, v: f"{v}"),
    "print": ("str()", lambda s, i, v: print(v)),
    "repeat-by-array": ("repeat", lambda s, i, v: xp.repeat(v, xp.asarray([1, 2, 0], device=v.device))),
}

# Graph breaks (data-dependent shapes): each takes a 1-d array `v`.
BREAKS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "nonzero": ("nonzero", lambda v: xp.nonzero(v > 1.5)),
    "unique_values": ("unique_values", lambda v: xp.unique_values(v)),
    "mask-getitem": ("x[...]", lambda v: v[v > 1.5]),
}


def _operands(device: xp.Device) -> tuple[Any, Any, Any]:
    """Pending values on the lazy device (each computed from a transferred array)."""
    base = xp.asarray([1.0, 2.0, 3.0], device=device)
    return xp.sum(base) / 3.0, xp.astype(xp.sum(base), xp.int64) - 5, base * 2.0


@pytest.mark.parametrize("name", list(READS))
def test_disallow_refuses_an_implicit_read_naming_it_and_the_line(name: str, capsys: Any) -> None:
    what, read = READS[name]
    s, i, v = _operands(LAZY)
    before = xp.metrics()
    with xp.transfer_guard("disallow"):
        with pytest.raises(xp.TransferGuardError) as info:
            read(s, i, v)
    message = str(info.value)
    assert message.startswith(what), message
    assert f"{HERE}:{read.__code__.co_firstlineno}" in message, message  # the line of the read
    assert "to_device" in message, message  # the way out
    assert isinstance(info.value, RuntimeError)
    after = xp.metrics()
    assert after.transfers_to_host == before.transfers_to_host, "a refused read transferred"
    assert after.interpreted_graphs + after.execute_count == before.interpreted_graphs + before.execute_count
    # the refused read counts nowhere, and the values are intact: allowed, they read as on eager
    assert not [site for site in _sites() if site[0] == HERE]
    es, ei, ev = _operands(EAGER)
    assert _same(read(s, i, v), read(es, ei, ev))
    capsys.readouterr()


def _same(a: Any, b: Any) -> bool:
    if type(a) is xp.Array:
        return np.array_equal(np.asarray(a), np.asarray(b)) and a.dtype == b.dtype
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, str):  # printing: the same text but for the device
        return a.replace(repr(LAZY), "D") == b.replace(repr(EAGER), "D")
    return a == b


@pytest.mark.parametrize("name", list(READS))
def test_eager_arrays_are_never_guarded(name: str, capsys: Any) -> None:
    _, read = READS[name]
    s, i, v = _operands(EAGER)
    with xp.transfer_guard("disallow"):
        read(s, i, v)
    capsys.readouterr()


@pytest.mark.parametrize("name", list(BREAKS))
def test_disallow_refuses_a_graph_break(name: str) -> None:
    what, op = BREAKS[name]
    _, _, v = _operands(LAZY)
    before = xp.metrics()
    with xp.transfer_guard("disallow"):
        with pytest.raises(xp.TransferGuardError, match="graph break") as info:
            op(v)
    assert str(info.value).startswith(what), str(info.value)
    assert f"{HERE}:{op.__code__.co_firstlineno}" in str(info.value)
    assert xp.metrics().graph_breaks == before.graph_breaks
    with xp.transfer_guard("disallow"):  # eager: no graph to break
        op(_operands(EAGER)[2])
    result = op(v)  # allowed: the same values as on eager
    expected = op(_operands(EAGER)[2])
    for a, b in zip(
        result if isinstance(result, tuple) else (result,), expected if isinstance(expected, tuple) else (expected,)
    ):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_explicit_reads_stay_allowed() -> None:
    s, _, v = _operands(LAZY)
    with xp.transfer_guard("disallow"):
        host = v.to_device(EAGER)  # explicit: a copy to an eager device
        assert float(host[1]) == 4.0  # the copy is eager: never guarded
        xp.lazy_barrier()  # runs pending work, reads nothing to the host
        t = s * 3.0
        xp.lazy_barrier(wait=True)
        assert float(t.to_device(EAGER)) == 6.0
        moved = xp.asarray(v + 1.0, device=EAGER)  # asarray to another device: to_device
        imported = xp.from_dlpack(v * 3.0, device=EAGER)  # an explicit import (through __dlpack__)
    np.testing.assert_array_equal(np.asarray(moved), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(np.asarray(imported), [6.0, 12.0, 18.0])
    sites = _sites()
    assert any(op == "to_device (explicit)" for _, _, op, _ in sites), sites
    assert any(op == "from_dlpack (explicit)" for _, _, op, _ in sites), sites


def test_nested_blocks_and_the_setting() -> None:
    s, _, _ = _operands(LAZY)
    with settings.override(X10ARRAY_TRANSFER_GUARD="disallow"):
        with pytest.raises(xp.TransferGuardError):
            float(s)
        with xp.transfer_guard("allow"):  # a block overrides the setting
            assert float(s) == 2.0
            with xp.transfer_guard("disallow"):
                with pytest.raises(xp.TransferGuardError):
                    float(s)
            assert float(s) == 2.0  # the inner block's exit restored "allow"
        with pytest.raises(xp.TransferGuardError):
            float(s)
    assert float(s) == 2.0
    guard = xp.transfer_guard("disallow")  # one guard object, entered twice (re-entrant)
    with guard:
        with xp.transfer_guard("allow"), guard:
            with pytest.raises(xp.TransferGuardError):
                float(s)
        with pytest.raises(xp.TransferGuardError):
            float(s)
    assert float(s) == 2.0


def test_the_mode_is_thread_local() -> None:
    s, _, _ = _operands(LAZY)
    xp.lazy_barrier()
    entered, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def guarded() -> None:
        with xp.transfer_guard("disallow"):
            entered.set()
            release.wait(10)
            try:
                float(s)
                seen.append("read")
            except xp.TransferGuardError:
                seen.append("refused")

    thread = threading.Thread(target=guarded)
    thread.start()
    assert entered.wait(10)
    assert float(s) == 2.0  # this thread is not guarded while the other one is
    release.set()
    thread.join(10)
    assert seen == ["refused"]


def test_log_reports_each_call_site_once(caplog: Any) -> None:
    s, _, v = _operands(LAZY)
    with caplog.at_level(logging.WARNING, logger="x10array"), xp.transfer_guard("log"):
        first = _line() + 2
        for _ in range(3):
            float(s)
        second = _line() + 1
        np.asarray(v)
        v.to_device(EAGER)  # explicit: not logged
    records = [r.getMessage() for r in caplog.records if r.name == "x10array"]
    assert len(records) == 2, records
    assert "float()" in records[0] and f"{HERE}:{first}" in records[0], records
    assert "__array__" in records[1] and f"{HERE}:{second}" in records[1], records
    counts = {line: count for file, line, _, count in _sites() if file == HERE}
    assert counts[first] == 3 and counts[second] == 1, counts


def test_log_reports_graph_breaks(caplog: Any) -> None:
    _, _, v = _operands(LAZY)
    with caplog.at_level(logging.WARNING, logger="x10array"), xp.transfer_guard("log"):
        line = _line() + 1
        xp.unique_values(v)
    records = [r.getMessage() for r in caplog.records if r.name == "x10array"]
    assert len(records) == 1 and "graph break" in records[0] and f"{HERE}:{line}" in records[0], records


def _sites(kind: str = "read") -> list[tuple[str, int, str, int]]:
    """(file, line, operation, count) of each call site in metrics_report()'s section."""
    report = xp.metrics_report()
    title = {"read": "host reads", "graph break": "graph breaks"}[kind]
    lines = report.splitlines()
    if f"top call sites of {title} (count  line  operation)" not in lines:
        return []
    start = lines.index(f"top call sites of {title} (count  line  operation)") + 1
    rows = []
    for text in lines[start:]:
        if not text.strip() or text.startswith("top call sites") or text.split()[0] == "...":
            break
        count, where, operation = text.split(None, 2)
        file, _, line = where.rpartition(":")
        rows.append((file, int(line), operation, int(count)))
    return rows


def test_metrics_report_lists_call_sites_with_counts() -> None:
    s, _, v = _operands(LAZY)
    hot = _line() + 2
    for _ in range(5):
        float(s)
    cold = _line() + 1
    repr(v)
    breaks = _line() + 2
    for _ in range(2):
        xp.nonzero(v > 3.0)
    reads = [(file, line, op, count) for file, line, op, count in _sites("read") if file == HERE]
    assert reads == [(HERE, hot, "float()", 5), (HERE, cold, "repr()", 1)], reads  # most frequent first
    assert [r for r in _sites("graph break") if r[0] == HERE] == [(HERE, breaks, "nonzero", 2)]
    # graph breaks are counted in graph_breaks; their reads are not host reads of the user's
    assert xp.metrics().graph_breaks == 2
    xp.reset_metrics()
    assert _sites("read") == [] and _sites("graph break") == []


def test_metrics_report_shows_the_top_sites_only() -> None:
    from x10array._core import metrics

    s, _, _ = _operands(LAZY)
    fns = [eval(compile("\n" * k + "lambda s: float(s)", HERE, "eval")) for k in range(metrics.SITES_SHOWN + 3)]
    for fn in fns:
        fn(s)
    rows = _sites()
    assert len(rows) == metrics.SITES_SHOWN
    assert f"{3} more call sites" in xp.metrics_report()


def test_metrics_report_notes_a_line_that_reads_at_every_step() -> None:
    """Reading a lazy value at every step is correct but slow, and nothing says so unless the
    transfer guard is set: metrics_report() names a line that read READS_NOTED values or more,
    and what to do; a line that read fewer gets no note."""
    from x10array._core import metrics

    x = xp.ones(4, device=LAZY)
    hot = _line() + 2
    for _ in range(metrics.READS_NOTED):
        float(xp.sum(x * 2.0))
    cold = _line() + 1
    float(xp.sum(x))
    report = xp.metrics_report()
    assert f"note: {HERE}:{hot} read lazy values {metrics.READS_NOTED} times (float())" in report, report
    assert "x10array.compile" in report and f"{HERE}:{cold} read" not in report
    assert _sites()[0][:2] == (HERE, hot)  # the call-site table still parses
    xp.reset_metrics()
    assert "note:" not in xp.metrics_report()


def test_eager_reads_are_not_counted() -> None:
    s, _, v = _operands(EAGER)
    float(s)
    np.asarray(v)
    xp.nonzero(v > 1.0)
    assert _sites() == [] and _sites("graph break") == []


# -- array-api-compat and array-api-extra under "disallow" ---------------------------------


def test_is_lazy_array_under_disallow() -> None:
    compat = pytest.importorskip("array_api_compat")
    lazy, eager = xp.asarray([1.0, 2.0], device=LAZY), xp.asarray([1.0, 2.0], device=EAGER)
    assert not compat.is_lazy_array(lazy)  # "allow": bool() works, so it is not lazy to them
    with xp.transfer_guard("disallow"):
        assert compat.is_lazy_array(lazy)
        assert not compat.is_lazy_array(eager)
        assert compat.is_lazy_array(xp.asarray(3.0, device=LAZY) * 2.0)


V = np.array([0.5, -1.0, 2.0, 3.5, -4.0, 6.0])
MASK = np.array([True, False, True, False, False, True])


def _extra_cases() -> dict[str, Callable[[Any, Any, Any], Any]]:
    xpx = pytest.importorskip("array_api_extra")
    return {
        "at-set-int": lambda ns, x, m: xpx.at(x, 2).set(10.0, copy=True),
        "at-add-slice": lambda ns, x, m: xpx.at(x, slice(1, 4)).add(1.5, copy=True),
        "at-set-mask": lambda ns, x, m: xpx.at(x, m).set(0.0, copy=True),
        "at-set-index-array": lambda ns, x, m: xpx.at(x, ns.asarray([0, 5], device=x.device)).set(3.0, copy=True),
        "at-add-index-array": lambda ns, x, m: xpx.at(x, ns.asarray([0, 5], device=x.device)).add(3.0, copy=True),
        "at-multiply-inplace": lambda ns, x, m: xpx.at(x, 1).multiply(3.0, copy=None),
        "lazy_apply": lambda ns, x, m: xpx.lazy_apply(lambda a: a * 2.0 + 1.0, x, shape=x.shape, dtype=x.dtype),
        "cov": lambda ns, x, m: xpx.cov(ns.reshape(x, (2, 3))),
        "nan_to_num": lambda ns, x, m: xpx.nan_to_num(x / ns.asarray(0.0, device=x.device)),
        "sinc": lambda ns, x, m: xpx.sinc(x),
    }


@pytest.mark.parametrize("name", ["at-set-int", "at-add-slice", "at-set-mask", "at-set-index-array",
                                  "at-add-index-array", "at-multiply-inplace", "lazy_apply", "cov",
                                  "nan_to_num", "sinc"])  # fmt: skip
def test_array_api_extra_under_disallow_gives_correct_values(name: str) -> None:
    """With is_lazy_array True, array-api-extra takes its lazy paths and must not read the
    values: the results (read once the guard is left) equal the eager device's."""
    fn = _extra_cases()[name]
    expected = fn(xp, xp.asarray(V.copy(), device=EAGER), xp.asarray(MASK, device=EAGER))
    x, m = xp.asarray(V.copy(), device=LAZY), xp.asarray(MASK, device=LAZY)
    with xp.transfer_guard("disallow"):
        actual = fn(xp, x, m)
        assert actual.device == LAZY
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-12, atol=0)
    assert actual.dtype == expected.dtype


def test_array_api_extra_reads_that_need_the_host_are_refused() -> None:
    """What cannot be done without the values (a NumPy round trip, reading x[mask] for an
    update) raises TransferGuardError under "disallow", as jax's transfer guard does."""
    xpx = pytest.importorskip("array_api_extra")
    x, m = xp.asarray(V.copy(), device=LAZY), xp.asarray(MASK, device=LAZY)
    with xp.transfer_guard("disallow"):
        with pytest.raises(xp.TransferGuardError, match="__array__"):
            xpx.lazy_apply(np.cumsum, x, shape=x.shape, dtype=x.dtype, as_numpy=True)
        with pytest.raises(xp.TransferGuardError, match="graph break"):
            xpx.at(x, m).add(1.0, copy=True)
    # allowed, the same calls give the right values
    out = xpx.lazy_apply(np.cumsum, x, shape=x.shape, dtype=x.dtype, as_numpy=True)
    np.testing.assert_allclose(np.asarray(out), np.cumsum(V))
    np.testing.assert_allclose(np.asarray(xpx.at(x, m).add(1.0, copy=True)), np.where(MASK, V + 1.0, V))
