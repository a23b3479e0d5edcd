"""Smoke runs of benchmarks whose full runs are too long for the suite (figures in
benchmarks/README.md). (`bench_soak.py`'s smoke run is in test_caches.py.)"""

from __future__ import annotations

from _util import run_benchmark


def test_dayone_benchmark_quick_run():
    """`bench_dayone.py --quick`: every workload runs in every mode it has, the table has a
    row per workload, and the captured MLP (optim.Adam under x10array.compile) replays
    without a fallback."""
    proc = run_benchmark("bench_dayone.py", "--quick")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "workload" not in line]
    assert len(rows) == 7, proc.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(cells[i] for i in (2, 4, 5)), row  # eager, lazy, lazy/eager: every workload
    counters = proc.stdout.split("lazy counters", 1)[1]
    mlp = counters.split("mlp_compile:", 1)[1]
    assert "captured_replays" in mlp and "capture_fallbacks" not in mlp, mlp
    assert "x10array.compile" not in proc.stderr, proc.stderr[-3000:]  # no fallback warning
