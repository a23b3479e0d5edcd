"""Smoke runs of benchmarks whose full runs are too long for the suite (figures in
benchmarks/README.md). (`bench_soak.py`'s smoke run is in test_caches.py.)"""

from __future__ import annotations

import re

from _util import ROOT, run_benchmark


def test_dayone_benchmark_quick_run():
    """`bench_dayone.py --quick`: every workload runs in every mode it has, the table has a
    row per workload, and the captured steps (the MLP's and the least-squares fit's, optim.Adam
    under x10array.compile) replay without a fallback."""
    proc = run_benchmark("bench_dayone.py", "--quick")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "workload" not in line]
    assert len(rows) == 8, proc.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(cells[i] for i in (2, 4, 5)), row  # eager, lazy, lazy/eager: every workload
    counters = proc.stdout.split("lazy counters", 1)[1]
    for name in ("lstsq_compile", "mlp_compile"):
        captured = counters.split(f"{name}:", 1)[1].split(";", 1)[0]
        assert "captured_replays" in captured and "capture_fallbacks" not in captured, captured
    assert "x10array.compile" not in proc.stderr, proc.stderr[-3000:]  # no fallback warning


def test_accelerator_benchmark_quick_run(tmp_path):
    """`bench_accelerator.py --quick` on the default jax platform (here the CPU): a row for every
    workload, each with a finite positive figure in every mode it runs and its ratios, and the
    run's jax version, platform and date in the header and in the JSON it writes. (`--cold`: its
    compile caches in a temporary directory, not the user's.)"""
    import json
    import math

    out = tmp_path / "figures.json"
    proc = run_benchmark("bench_accelerator.py", "--quick", "--cold", "--json", str(out))
    figures = json.loads(out.read_text())
    env = figures["environment"]
    assert env["platform"] and env["device_kind"] and re.fullmatch(r"\d+\.\d+\.\d+.*", env["jax"]), env
    header = proc.stdout.split("| row |", 1)[0]
    assert f"jax {env['jax']}, platform {env['platform']}" in header and env["date"] in header, header
    modes = {
        "heat stencil, barrier per step": "eager lazy jit jnp",
        "the same, jax.jit step not waited for": "lazy jit",
        "Monte-Carlo": "eager lazy jit jnp",
        "k-means": "eager lazy jit jnp",
        "least squares": "eager lazy jit jnp",
        "add, 100 float32": "eager jnp",
        "exp, 100 float32": "eager jnp",
        "MNIST LeNet-5, first epoch": "lazy jit",
        "MNIST LeNet-5, steady epoch": "lazy jit",
    }
    columns = {"eager": 2, "lazy": 3, "jit": 4, "jnp": 5}
    ratios = {"lazy/eager": ("lazy", "eager"), "lazy/jax.jit": ("lazy", "jit"), "eager/jax.numpy": ("eager", "jnp")}
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| row |")]
    assert len(rows) == len(modes), proc.stdout
    for (start, expected), row in zip(modes.items(), rows):
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert cells[0].startswith(start), (start, row)
        ran = set(expected.split())
        for mode, i in columns.items():
            assert bool(cells[i]) == (mode in ran), (mode, row)
        for k, (a, b) in enumerate(ratios.values()):
            assert bool(cells[6 + k]) == (a in ran and b in ran), row
        numbers = [float(c) for c in cells[2:] if c]
        assert numbers and all(math.isfinite(v) and v > 0 for v in numbers), row
    for r in figures["rows"].values():
        assert all(math.isfinite(v) and v > 0 for v in [*r["median_seconds"].values(), *r["ratios"].values()]), r


def test_profile_dayone_quick_run():
    """`profile_dayone.py --quick`: both workloads run in the three modes, every stage it
    wraps is reached (a renamed stage would leave its row out), and the wrapped functions are
    put back (the counters line comes from an unwrapped run)."""
    proc = run_benchmark("profile_dayone.py", "--quick", "--fits", "2")
    out = proc.stdout
    for row in ("| eager |", "| lazy |", "| lazy, no subnormal scans |"):
        assert out.count(row) == 2, out
    for stage in ("recording", "graph breaks", "materialize_nodes", "barrier_program", "interpreter kernels"):
        assert stage in out.split("scikit-learn", 1)[0], out
    assert out.count("counters a run:") == 2 and "graph_breaks=0" not in out.split("scikit-learn", 1)[0], out


def test_profile_interp_quick_run():
    """`profile_interp.py --quick` on two interpreter.py files (this checkout's, twice): the
    graphs it captures are timed on both, side by side, with a ratio and the kernels alone."""
    module = str(ROOT / "x10array" / "_backends" / "lazy" / "interpreter.py")
    proc = run_benchmark("profile_interp.py", "--quick", "--runs", "2", module, module)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "steps" not in line]
    assert rows, proc.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 7 and int(cells[0]) >= 4 and all(float(c) > 0 for c in cells[1:5]), row


def test_reads_benchmark_quick_run():
    """`bench_reads.py` on small arrays: every case runs on both devices, and each line is one
    that benchmarks/ab.py reads as figures (a label without digits, then the numbers)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import ab
    finally:
        sys.path.pop(0)
    proc = run_benchmark("bench_reads.py", "--n", "4000", "--repeat", "1", "--number", "1", "--elements", "50")
    figures = ab.parse_generic(proc.stdout)
    # ten cases, six element by element: eager, lazy, lazy/eager
    assert len(figures) == (10 + 6) * 3, proc.stdout
    assert all(v > 0 for v in figures.values()), figures


def test_lazy_benchmark_fixed_costs_quick_run():
    """`bench_lazy.py --fixed --quick`: the barrier of a step seen before follows its plan (the
    benchmark asserts it), and every figure is a line that benchmarks/ab.py reads (a label
    without digits, then a positive number)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import ab
    finally:
        sys.path.pop(0)
    proc = run_benchmark("bench_lazy.py", "--fixed", "--quick")
    figures = ab.parse_generic(proc.stdout)
    assert len(figures) == 10, proc.stdout
    assert all(v > 0 for v in figures.values()), figures


def test_dispatch_benchmark_quick_run():
    """`bench_dispatch.py --quick`: every route case and every program in both dispatch modes
    gives its figures, as lines that benchmarks/ab.py reads (a label without digits, then a
    positive number)."""
    proc = run_benchmark("bench_dispatch.py", "--quick")
    lines = proc.stdout.splitlines()
    for label in ("coordinates minus a point", "k-means differences", "one shape, no route"):
        assert sum(line.startswith(f"route {label},") for line in lines) == 3, proc.stdout
    if "no jax_cpu_enable_async_dispatch setting" in proc.stderr:  # (a jax without it: route figures only)
        return
    for program in ("matrix times vector", "least squares and Adam step", "stencil step"):
        for kind in ("waited", "dispatched"):
            rows = [line for line in lines if line.startswith(f"dispatch {program} {kind},")]
            assert len(rows) == 3, proc.stdout  # asynchronous, inline, their ratio
    for line in lines:
        label, value = line.rsplit("  ", 1)
        assert not any(c.isdigit() for c in label) and float(value) > 0, line
