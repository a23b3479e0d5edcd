"""x10array.debug: the pending graph as text, DOT and StableHLO, and XLA's cost and memory
analyses, read without running or changing anything; and docs/debugging.md, whose code
blocks run here."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array import debug

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")
HERE = __file__
ROOT = Path(__file__).resolve().parents[1]

A = np.arange(12.0).reshape(3, 4) / 7.0
B = np.linspace(-1.0, 1.0, 4)


def _line() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def _recipe(device: xp.Device) -> tuple[xp.Array, xp.Array, list[int]]:
    """A small graph with a multiple-results operation; the lines that record it."""
    a = xp.asarray(A, device=device)
    b = xp.asarray(B, device=device)
    lines = [_line() + 1]
    y = xp.sum(a * 2.0 + b, axis=0)
    lines.append(_line() + 1)
    _, s, _ = xp.linalg.svd(a, full_matrices=False)
    lines.append(_line() + 1)
    z = xp.astype(y[1:] * s[0], xp.float32)
    return z, s, lines


def _state(arrays: list[xp.Array]) -> list[tuple[bool, bool]]:
    """Whether each node of the graphs behind `arrays` is pending and has its recipe."""
    seen, out, stack = set(), [], [a._data for a in arrays]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append((node.value is None, node.call is not None))
        if node.call is not None:
            stack.extend(i for i in node.call.inputs if type(i).__name__ == "Node")
    return out


READERS: dict[str, Callable[[Any], Any]] = {
    "graph_text": debug.graph_text,
    "graph_dot": debug.graph_dot,
    "stablehlo": debug.stablehlo,
    "cost_analysis": debug.cost_analysis,
    "memory_analysis": debug.memory_analysis,
}


@pytest.mark.parametrize("name", list(READERS))
def test_reading_the_graph_neither_runs_nor_changes_it(name: str) -> None:
    z, s, _ = _recipe(LAZY)
    before, state = xp.metrics(), _state([z, s])
    assert all(pending for pending, _ in state[:1])
    READERS[name]([z, s])
    READERS[name](z)
    assert xp.metrics() == before, f"{name} changed the counters: {xp.metrics() - before}"
    assert _state([z, s]) == state, f"{name} changed the graph"
    xp.lazy_barrier()
    # the barrier computes what it computes without inspection, bit for bit
    z2, s2, _ = _recipe(LAZY)
    xp.lazy_barrier()
    assert np.asarray(z).tobytes() == np.asarray(z2).tobytes()
    assert np.asarray(s).tobytes() == np.asarray(s2).tobytes()
    ze, se, _ = _recipe(EAGER)
    np.testing.assert_allclose(np.asarray(z), np.asarray(ze), rtol=1e-6)


def test_graph_text_lists_each_operation_with_shapes_dtypes_and_lines() -> None:
    with debug.record_source():
        z, s, lines = _recipe(LAZY)
    text = debug.graph_text([z, s])
    ops = [line for line in text.splitlines() if re.match(r"\s+%\d+ = ", line)]
    names = [re.match(r"\s+%\d+ = ([\w.]+)\(", line).group(1) for line in ops]  # type: ignore[union-attr]
    assert sorted(names) == sorted(["multiply", "add", "sum", "linalg.svd", "getitem", "getitem", "multiply", "astype"])
    assert f"{len(ops)} pending operations, 2 inputs" in text.splitlines()[0]
    assert "in0 = input float64[3, 4]" in text and "in1 = input float64[4]" in text
    by_name = {name: line for name, line in zip(names, ops)}
    assert by_name["sum"].split(" : ")[1].startswith("float64[4]")
    assert "axes=(0,)" in by_name["sum"]
    assert "(float64[3, 3], float64[3], float64[3, 4])" in by_name["linalg.svd"]
    assert by_name["astype"].split(" : ")[1].startswith("float32[3]")
    assert by_name["sum"].endswith(f"# {HERE}:{lines[0]}")
    assert by_name["linalg.svd"].endswith(f"# {HERE}:{lines[1]}")
    assert by_name["astype"].endswith(f"# {HERE}:{lines[2]}")
    # the results: z is the astype, s the svd's second output
    results = text.splitlines()[-1]
    astype_id = names.index("astype")
    svd_id = names.index("linalg.svd")
    assert results == f"  results: %{astype_id}, %{svd_id}.1", results


def test_source_lines_are_off_by_default_and_cost_nothing_to_record() -> None:
    z, s, _ = _recipe(LAZY)
    assert z._data.call.where is None
    text = debug.graph_text(z)
    assert "#" not in text.replace("X10ARRAY_RECORD_SOURCE", "")
    assert "record_source()" in text  # says how to get them
    with debug.record_source():
        w = z * 2.0
        with debug.record_source(False):
            v = w + 1.0
    assert w._data.call.where == f"{HERE}:{_line() - 3}"
    assert v._data.call.where is None


def test_graph_text_of_computed_arrays() -> None:
    x = xp.asarray(A, device=LAZY)
    y = x + 1.0
    xp.lazy_barrier()
    text = debug.graph_text([x, y])
    assert text.splitlines()[0].endswith("0 pending operations, 2 inputs")
    assert text.splitlines()[-1] == "  results: in0 (computed), in1 (computed)"
    with pytest.raises(ValueError, match=r"^stablehlo: nothing is pending"):
        debug.stablehlo(y)


def test_graph_dot_has_a_node_per_operation_and_an_edge_per_use() -> None:
    z, s, _ = _recipe(LAZY)
    dot = debug.graph_dot([z, s])
    assert dot.startswith("digraph x10array {") and dot.endswith("}")
    text = debug.graph_text([z, s])
    n_ops = len([line for line in text.splitlines() if re.match(r"\s+%\d+ = ", line)])
    ops = re.findall(r"^  op(\d+) \[label=", dot, re.M)
    assert sorted(map(int, ops)) == list(range(n_ops))
    assert len(re.findall(r"^  in\d+ \[shape=ellipse", dot, re.M)) == 2
    # one edge per array operand of each operation (scalars are in the labels)
    uses = sum(len(re.findall(r"(%\d+(?:\.\d+)?|in\d+)", line.split("(", 1)[1].split(";")[0].split(")")[0]))
               for line in text.splitlines() if re.match(r"\s+%\d+ = ", line))  # fmt: skip
    assert len(re.findall(r" -> op\d+ ", dot)) == uses
    assert dot.count("peripheries=2") == 2  # the two results
    assert dot.count("{") == dot.count("}") and dot.count('"') % 2 == 0


def test_graph_dot_renders_with_graphviz_when_installed(tmp_path: Path) -> None:
    import shutil

    dot_exe = shutil.which("dot")
    if dot_exe is None:
        pytest.skip("Graphviz is not installed")
    z, s, _ = _recipe(LAZY)
    out = subprocess.run([dot_exe, "-Tsvg"], input=debug.graph_dot([z, s]), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_stablehlo_is_the_program_of_the_graph() -> None:
    a = xp.asarray(A.astype(np.float32), device=LAZY)
    b = xp.asarray(B.astype(np.float32), device=LAZY)
    y = xp.exp(a * b)
    text = debug.stablehlo(y)
    assert "func.func public @main" in text
    assert "tensor<3x4xf32>" in text and "tensor<4xf32>" in text
    assert "stablehlo.exponential" in text and "stablehlo.multiply" in text


def test_cost_and_memory_analysis_of_a_matmul() -> None:
    n, k, m = 16, 32, 8
    a = xp.asarray(np.ones((n, k), np.float32), device=LAZY)
    b = xp.asarray(np.ones((k, m), np.float32), device=LAZY)
    c = a @ b
    costs = debug.cost_analysis(c)
    assert costs["flops"] >= 2 * n * k * m, costs
    assert costs["bytes accessed"] >= 4 * (n * k + k * m + n * m), costs
    memory = debug.memory_analysis(c)
    assert memory["argument_size_in_bytes"] >= 4 * (n * k + k * m), memory
    assert memory["output_size_in_bytes"] >= 4 * n * m, memory
    bigger = xp.asarray(np.ones((2 * n, k), np.float32), device=LAZY) @ b
    assert debug.cost_analysis(bigger)["flops"] > costs["flops"]


def test_bad_input() -> None:
    lazy = xp.asarray(A, device=LAZY) + 1.0
    eager = xp.asarray(A, device=EAGER) + 1.0
    for name, fn in READERS.items():
        with pytest.raises(ValueError, match=rf"^{name}: an array is on the eager device"):
            fn(eager)
        with pytest.raises(ValueError, match=rf"^{name}: an array is on the eager device"):
            fn([lazy, eager])
        with pytest.raises(TypeError, match=rf"^{name}: expected an x10array Array"):
            fn(A)
        with pytest.raises(TypeError, match=rf"^{name}: expected an x10array Array"):
            fn([lazy, 3.0])
        with pytest.raises(ValueError, match=rf"^{name}: expected at least one array"):
            fn([])
    with pytest.raises(TypeError, match="^record_source: enabled must be a bool"):
        debug.record_source("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^call_sites: kind"):
        debug.call_sites("reads")


def test_arrays_on_two_lazy_devices_are_refused() -> None:
    code = (
        "import x10array as xp, pytest\nfrom x10array import debug\n"
        "a = xp.asarray([1.0], device='cpu:0:xla') + 1.0\nb = xp.asarray([1.0], device='cpu:1:xla') + 1.0\n"
        "with pytest.raises(ValueError, match='^graph_text: the arrays are on different devices'):\n"
        "    debug.graph_text([a, b])\n"
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_call_sites() -> None:
    xp.reset_metrics()
    x = xp.asarray(A, device=LAZY) * 2.0
    line = _line() + 1
    float(x[0, 0])
    assert debug.call_sites() == [("read", HERE, line, "float()", 1)]
    assert debug.call_sites("graph break") == []


# -- docs/debugging.md ---------------------------------------------------------------------------

DOC = ROOT / "docs" / "debugging.md"


def test_docs_debugging_examples_run(tmp_path: Path) -> None:
    """Each ```python block of docs/debugging.md runs, in order, in one fresh process."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/debugging.md has no python examples"
    script = tmp_path / "debugging_examples.py"
    script.write_text("\n".join(blocks))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


_MESH_LOWERING = """
import re, sys
import numpy as np
import jax
import x10array as xp
from x10array import debug, distributed as xd
from x10array._core import lru

n = int(sys.argv[1])
mesh = xd.Mesh((n,), ("data",))
x = xd.shard(xp.asarray(np.arange(8.0 * n).reshape(2 * n, 4)), mesh, ("data", None))
w = xd.replicate(xp.asarray(np.linspace(-1.0, 1.0, 4)), mesh)
y = xp.sum(xp.sin(x) * w, axis=1)
shown = debug.stablehlo(y)
xp.lazy_barrier()
(program,) = [p for _, p in lru._registry["lazy programs"].items() if p.compiled is not None]
run = program.compiled
kept = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in program.key.leaf_avals]
with jax.enable_x64(True):
    ran = run.func.lower(*run.args, [], kept, []).as_text()

def facts(text):
    return (re.findall(r"mhlo.num_partitions = (\\d+)", text),
            sorted(re.findall(r'sdy.sharding<[^>]*>|mhlo.sharding = "[^"]*"|sdy.mesh @\\w+ = <[^>]*>', text)))

assert facts(shown) == facts(ran), (facts(shown), facts(ran))
assert facts(shown)[0] == [str(n)], facts(shown)
assert facts(shown)[1], "no sharding in the lowered program"
print("OK", facts(shown))
"""


@pytest.mark.parametrize("n", [2, 4])
def test_stablehlo_of_a_sharded_result_is_the_program_the_barrier_runs(n: int) -> None:
    """debug.stablehlo on a mesh shows the SPMD program the barrier compiles (its partition
    count and shardings), not a single-device program the barrier never runs."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", _MESH_LOWERING, str(n)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
