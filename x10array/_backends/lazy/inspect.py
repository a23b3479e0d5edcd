"""Stage 10, inspection: the pending graph behind arrays, read without running or changing it.

For `x10array.debug`, the backend's two functions: `describe` (the graph as plain data: each
operation with its parameters, inputs, output shapes and dtypes, and the user's line that
recorded it when X10ARRAY_RECORD_SOURCE was on) and `lower` (the XLA program a read of the
arrays would compile, the barrier's program built and lowered by program.py, as a jax `Lowered`: its StableHLO text,
and once compiled, XLA's cost and memory analyses).

Nothing here runs a graph, counts a metric, touches the program cache or changes a node: the
walk only reads nodes (under the lazy lock, so no run changes them meanwhile), and a lowering
is a jax trace of the replay on abstract inputs (shapes and dtypes: no buffer is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._core.devices import Device
from .graph import Call, Node
from .program import build
from .runtime import RUNTIME
from .shapes import out_avals
from .trace import walk

# An input of an operation: ("op", operation, output), ("input", leaf), ("scalar", value) or ("none",)
Ref = tuple[Any, ...]
Aval = tuple[tuple[int, ...], np.dtype]


@dataclass
class Operation:
    """One recorded operation: its primitive's name, parameters, inputs, output shapes/dtypes
    and where it was recorded ("" if unknown)."""

    name: str
    params: dict[str, Any]
    inputs: list[Ref]
    outputs: list[Aval]
    where: str


@dataclass
class Graph:
    """The pending graph behind some arrays, in topological order. `inputs`: the computed
    values it reads (shape, dtype); `results`: one ref per array asked about (("input", k)
    for an array computed already)."""

    device: Device
    inputs: list[Aval] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    results: list[Ref] = field(default_factory=list)


def describe(nodes: list[Node], device: Device) -> Graph:
    """The graph behind `nodes` (the `_data` of lazy arrays on `device`), as plain data."""
    graph = Graph(device)
    with RUNTIME.lock:
        calls: dict[int, int] = {}  # id(call) -> index in graph.operations
        leaves: dict[int, int] = {}  # id(node) -> index in graph.inputs
        avals: dict[tuple[int, int], Aval] = {}  # (id(call), output) -> aval, from the nodes met

        def ref(i: Any) -> Ref:
            if type(i) is Node:
                if i.value is not None or i.call is None:
                    k = leaves.get(id(i))
                    if k is None:
                        k = leaves[id(i)] = len(graph.inputs)
                        graph.inputs.append((tuple(i.shape), np.dtype(i.dtype)))
                    return ("input", k)
                avals[(id(i.call), i.index)] = (tuple(i.shape), np.dtype(i.dtype))
                return ("op", calls[id(i.call)], i.index)
            if i is None:
                return ("none",)
            return ("scalar", i)

        order: list[tuple[Call, list[Ref]]] = []
        for n in nodes:
            if n.value is None and n.call is not None:
                avals[(id(n.call), n.index)] = (tuple(n.shape), np.dtype(n.dtype))
        stack: list[tuple[Call, bool]] = [(n.call, False) for n in reversed(nodes) if n.value is None and n.call]
        while stack:
            call, expanded = stack.pop()
            if id(call) in calls:
                continue
            if expanded:
                refs = [ref(i) for i in call.inputs]
                calls[id(call)] = len(order)
                order.append((call, refs))
                continue
            stack.append((call, True))
            for i in call.inputs:
                if type(i) is Node and i.value is None and i.call is not None and id(i.call) not in calls:
                    stack.append((i.call, False))
        graph.results = [ref(n) for n in nodes]
        for call, refs in order:
            n_out = len(call.outputs) if call.outputs else 1
            for index, sibling in enumerate(call.outputs):
                node = sibling()
                if node is not None:
                    avals[(id(call), index)] = (tuple(node.shape), np.dtype(node.dtype))
            known = [avals.get((id(call), index)) for index in range(n_out)]
            outputs = [a for a in known if a is not None]
            if len(outputs) < n_out:  # an output nothing holds any more: from the shape rule (cached)
                in_avals = tuple([(i.shape, i.dtype) if type(i) is Node else type(i) for i in call.inputs])
                outputs = [
                    (tuple(a[0]), np.dtype(a[1]))
                    for a in out_avals(call.prim, call.params, call.key_params, in_avals, call.inputs)
                ]
            graph.operations.append(Operation(call.prim.name, dict(call.params), refs, outputs, call.where or ""))
    return graph


def lower(nodes: list[Node], device: Device) -> Any:
    """The XLA program that reading `nodes` would compile (a jax `Lowered`: `.as_text()` is
    its StableHLO, `.compile()` XLA's executable), or None when nothing behind them is
    pending. As the barrier traces and builds it (pending values that arrays still hold become
    outputs too; on a mesh, the SPMD program with its shardings), without donation; traced on
    the inputs' shapes and dtypes, so nothing is read."""
    with RUNTIME.lock:
        targets = [n for n in dict.fromkeys(nodes) if n.value is None]
        if not targets:
            return None
        traced = walk(targets, device)
        program = build(traced, targets, device, (False,) * len(traced.leaves), cached=False)
        # (their values' shardings, on a mesh: the program's input shardings; nothing is read)
        leaf_values = [n.value for n in traced.leaves]
        scalars = list(traced.scalars)
        del traced, targets
    return program.lower(leaf_values, scalars)
