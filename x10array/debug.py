"""See the graph: what a lazy array will run, as text, Graphviz DOT and StableHLO, and XLA's
cost and memory analyses of its program (after torch_xla's `_get_xla_tensors_text/_hlo/_dot`
and jax's `.lower(...).as_text()`).

Every function takes one array or a list of them, on one lazy device. Reading the graph never
materializes or alters it: nothing runs, no metric counts, the arrays stay pending, and the
barrier that runs them later computes exactly what it would have. `stablehlo`,
`cost_analysis` and `memory_analysis` lower (and the last two compile) the graph on its inputs'
shapes and dtypes, as a read of the arrays would, without donating buffers and without caching
the result. Source lines appear in `graph_text` and `graph_dot` for operations recorded while
X10ARRAY_RECORD_SOURCE is on (or inside `record_source()`). See docs/debugging.md.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Sequence
from typing import Any

from ._backends import lazy as _lazy
from ._core import settings as _settings
from ._core import transfers as _transfers
from ._core.array import Array
from ._core.devices import Backend, Device

__all__ = [
    "graph_text", "graph_dot", "stablehlo", "cost_analysis", "memory_analysis", "record_source", "call_sites",
    "primitive_facts",
]  # fmt: skip


def _arrays(arrays: Any, fname: str) -> tuple[list[Array], Device]:
    """The arrays of a call (one array or a sequence of them), all on one lazy device."""
    items = [arrays] if type(arrays) is Array else arrays
    if not isinstance(items, (list, tuple)) or not all(type(a) is Array for a in items):
        raise TypeError(f"{fname}: expected an x10array Array or a list of them, got {type(arrays).__name__}")
    if not items:
        raise ValueError(f"{fname}: expected at least one array")
    device = items[0].device
    for a in items:
        if a.device.backend is not Backend.XLA:
            raise ValueError(
                f"{fname}: an array is on the eager device {a.device}, which runs each operation at once:"
                " only arrays on a lazy device (Device(kind, ordinal, 'xla')) have a graph"
            )
        if a.device != device:
            raise ValueError(
                f"{fname}: the arrays are on different devices ({device} and {a.device}); pass one device's"
            )
    return list(items), device


def _device_text(device: Device) -> str:
    return f"{device.kind.name.lower()}:{device.ordinal}:{device.backend.name.lower()}"


def _graph(arrays: Any, fname: str) -> _lazy.Graph:
    items, device = _arrays(arrays, fname)
    return _lazy.describe([a._data for a in items], device)


def _aval(aval: Any) -> str:
    if aval is None:
        return "?"
    shape, dtype = aval
    return f"{dtype}[{', '.join(map(str, shape))}]"


def _param(value: Any) -> str:
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__name__ == "DType":
        return name
    if isinstance(value, tuple):
        return "(" + ", ".join(_param(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _ref(ref: tuple[Any, ...], graph: _lazy.Graph) -> str:
    if ref[0] == "op":
        n_out = len(graph.operations[ref[1]].outputs)
        return f"%{ref[1]}" if n_out == 1 else f"%{ref[1]}.{ref[2]}"
    if ref[0] == "input":
        return f"in{ref[1]}"
    if ref[0] == "scalar":
        return repr(ref[1])
    return "None"


def _result_text(op: _lazy.Operation) -> str:
    if len(op.outputs) == 1:
        return _aval(op.outputs[0])
    return "(" + ", ".join(_aval(a) for a in op.outputs) + ")"


def _call_text(op: _lazy.Operation, graph: _lazy.Graph) -> str:
    args = ", ".join(_ref(r, graph) for r in op.inputs)
    params = ", ".join(f"{k}={_param(v)}" for k, v in op.params.items())
    return f"{op.name}({args}{'; ' + params if params else ''})"


def graph_text(arrays: Array | Sequence[Array]) -> str:
    """The pending graph behind `arrays` as readable text: its inputs (computed values it
    reads), then each operation in the order it runs, with its parameters, its result's
    dtype and shape, and the line of your code that recorded it (when recorded with
    X10ARRAY_RECORD_SOURCE on), then which value each array is."""
    graph = _graph(arrays, "graph_text")
    ops = graph.operations
    lines = [
        f"lazy graph on {_device_text(graph.device)}: {len(ops)} pending operation{'s' * (len(ops) != 1)},"
        f" {len(graph.inputs)} input{'s' * (len(graph.inputs) != 1)}"
    ]
    for k, aval in enumerate(graph.inputs):
        lines.append(f"  in{k} = input {_aval(aval)}")
    body = [f"%{i} = {_call_text(op, graph)} : {_result_text(op)}" for i, op in enumerate(ops)]
    width = max((len(b) for b in body), default=0)
    for b, op in zip(body, ops):
        lines.append(f"  {b:<{width}}  # {op.where}" if op.where else f"  {b}")
    results = ", ".join(_ref(r, graph) + (" (computed)" if r[0] == "input" else "") for r in graph.results)
    lines.append(f"  results: {results}")
    if ops and not any(op.where for op in ops):
        lines.append("  (source lines: record with X10ARRAY_RECORD_SOURCE=1 or inside x10array.debug.record_source())")
    return "\n".join(lines)


def _dot_label(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def graph_dot(arrays: Array | Sequence[Array]) -> str:
    """The pending graph behind `arrays` as Graphviz DOT text (render it with `dot -Tsvg`):
    an ellipse per input, a box per operation (its name, result dtype and shape, scalars and
    parameters, source line), an edge per use (labelled with the output's index for
    operations of several results), and the arrays' values drawn with a double border."""
    graph = _graph(arrays, "graph_dot")
    results = {r for r in graph.results}
    out = ["digraph x10array {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for k, aval in enumerate(graph.inputs):
        periph = ", peripheries=2" if ("input", k) in results else ""
        out.append(f"  in{k} [shape=ellipse, label={_dot_label(f'in{k}: {_aval(aval)}')}{periph}];")
    for i, op in enumerate(graph.operations):
        label = [f"%{i} {op.name}", _result_text(op)]
        scalars = [_ref(r, graph) for r in op.inputs if r[0] in ("scalar", "none")]
        if scalars:
            label.append("scalars: " + ", ".join(scalars))
        if op.params:
            label.append(", ".join(f"{k}={_param(v)}" for k, v in op.params.items()))
        if op.where:
            label.append(op.where)
        periph = ", peripheries=2" if any(r[0] == "op" and r[1] == i for r in results) else ""
        out.append(f"  op{i} [label={_dot_label(chr(10).join(label))}{periph}];")
    for i, op in enumerate(graph.operations):
        for position, r in enumerate(op.inputs):
            if r[0] == "input":
                out.append(f'  in{r[1]} -> op{i} [label="{position}"];')
            elif r[0] == "op":
                many = len(graph.operations[r[1]].outputs) > 1
                edge = f"{r[2]}->{position}" if many else f"{position}"
                out.append(f'  op{r[1]} -> op{i} [label="{edge}"];')
    out.append("}")
    return "\n".join(out)


def _lowered(arrays: Any, fname: str) -> Any:
    items, device = _arrays(arrays, fname)
    lowered = _lazy.lower([a._data for a in items], device)
    if lowered is None:
        raise ValueError(f"{fname}: nothing is pending behind these arrays (they are computed already)")
    return lowered


def stablehlo(arrays: Array | Sequence[Array]) -> str:
    """The StableHLO module that XLA compiles for the pending graph behind `arrays` (as a read
    or a barrier would trace it; `jax.jit(f).lower(...).as_text()`). ValueError when nothing
    behind them is pending."""
    return str(_lowered(arrays, "stablehlo").as_text())


def cost_analysis(arrays: Array | Sequence[Array]) -> dict[str, float]:
    """XLA's cost analysis of the compiled program of the pending graph behind `arrays`:
    a dict with at least "flops" and "bytes accessed" (XLA's estimates, per run), and
    whatever else the backend reports ("transcendentals", "optimal_seconds", ...). Compiles
    the graph (not cached, not run)."""
    costs = _lowered(arrays, "cost_analysis").compile().cost_analysis()
    if isinstance(costs, (list, tuple)):  # older jax: one dict per device program
        costs = costs[0] if costs else {}
    result = {str(k): float(v) for k, v in dict(costs or {}).items()}
    result.setdefault("flops", 0.0)
    result.setdefault("bytes accessed", 0.0)
    return result


_MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "temp_size_in_bytes",
    "alias_size_in_bytes",
    "generated_code_size_in_bytes",
)


def memory_analysis(arrays: Array | Sequence[Array]) -> dict[str, int]:
    """XLA's memory analysis of the compiled program of the pending graph behind `arrays`,
    in bytes: its arguments (the inputs it reads), outputs, temporaries, the part of the
    outputs aliased to inputs, and its generated code. Compiles the graph (not cached, not
    run)."""
    stats = _lowered(arrays, "memory_analysis").compile().memory_analysis()
    if stats is None:
        raise ValueError("memory_analysis: XLA reports no memory analysis on this device")
    return {name: int(getattr(stats, name, 0) or 0) for name in _MEMORY_FIELDS}


def record_source(enabled: bool = True) -> contextlib.AbstractContextManager[None]:
    """Inside the `with` block, each lazy operation records the line of your code behind it
    (X10ARRAY_RECORD_SOURCE, for the whole process while the block runs), shown by
    `graph_text` and `graph_dot`. About a microsecond per operation."""
    if type(enabled) is not bool:
        raise TypeError(f"record_source: enabled must be a bool, got {type(enabled).__name__}")
    return _settings.override(X10ARRAY_RECORD_SOURCE=enabled)


def call_sites(kind: str | None = None) -> list[tuple[str, str, int, str, int]]:
    """The lines of your code that read lazy values to the host ("read") or broke graphs
    ("graph break") since the last `reset_metrics()`, most frequent first: (kind, file, line,
    operation, count). `metrics_report()` prints the top ones."""
    if kind not in (None, "read", "graph break"):
        raise ValueError(f"call_sites: kind must be None, 'read' or 'graph break', got {kind!r}")
    return _transfers.sites(kind)


def primitive_facts(name: str) -> str:
    """What x10array decides about the primitive `name` (a key of the op table, `"add"`,
    `"linalg.solve"`): its flags, true on every backend, and the backends' registries that hold
    it (`_core/policies.py`), one per line. ValueError for an unknown name."""
    from ._core.policies import facts
    from ._core.primitive import OP_TABLE

    prim = OP_TABLE.get(name)
    if prim is None:
        near = difflib.get_close_matches(name, list(OP_TABLE), n=4)
        raise ValueError(f"primitive_facts: no primitive named {name!r}" + (f" (did you mean {near}?)" if near else ""))
    lines = [f"primitive {name}"]
    for key, value in facts(prim).items():
        if isinstance(value, bool):
            lines.append(f"  {key}: {value}")
        else:
            rule = "" if value is None else f": {getattr(value, '__qualname__', value)}"
            lines.append(f"  registered in {key}{rule}")
    return "\n".join(lines)
