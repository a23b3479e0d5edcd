"""Stage 7, capture and replay: the lazy half of `x10array.compile`.

`x10array.compile(fn)` (x10array/_capture.py) records `fn` once per signature between `begin`
and `end`: the graph from the argument arrays' values (leaves) to the outputs and to the new
values of the arguments that `fn` rebound (`w -= lr * g`), through the recording stages as any
lazy code. `end` checks that the graph alone reproduces `fn` (no value was read and no graph
was run inside it, no data-dependent shape, no bounds check of pending indices, no array other
than an argument or an output was rebound), compiles it as one XLA program (compile.py's
`_jitted_program`, the persistent cache included) and runs it for this call. `Captured.replay`
runs that program on later calls' arguments: no Python execution of `fn`, no recording, no
graph key; the outputs are new materialized lazy arrays, and the rebound arguments are rebound
to their new values (`_core.primitive.rebind`, so their views follow).

A leaf that is not an argument (an array the function reads from a closure or a global) is a
constant of the program; the replay checks that the array still holds that value, else the
namespace records again. Python scalars recorded in the graph are runtime inputs when they are
the very objects passed as arguments (a learning rate), constants otherwise.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ..._core.array import Array
from ..._core.devices import Device
from ..._core.dtypes import FROM_NUMPY
from ..._core.metrics import COUNTERS
from . import spmd
from .compile import _Program
from .executor import _leaf, _materialize_nodes, _owned_array, _run_compiled, barrier
from .graph import _LOCK, IN_FLIGHT, WATCHING, Node, Watch, _watched
from .trace import GraphKey, _trace


def begin(arrays: list[Array], device: Device) -> Watch | None:
    """Start recording a function of `arrays` (lazy arrays on `device`): pending values are
    computed first, so the recorded graph starts at values. None when another recording is
    under way (the caller then runs the function uncaptured: inside another recording, its
    operations become part of that one)."""
    if WATCHING[0] is not None:
        return None
    # Every pending array of the device is computed first, not only the arguments: an array the
    # function reads from a closure is then a leaf, a constant whose array the replay checks
    # (Captured.stale); a pending one would bake its recipe into the program unchecked.
    barrier([device], False)
    with _LOCK:
        if WATCHING[0] is not None:
            return None
        watch = WATCHING[0] = Watch(threading.get_ident())
    return watch


def recording() -> bool:
    """Whether this thread is recording a function for x10array.compile (a compiled function
    called inside another is then run as plain code, recorded into the outer graph)."""
    return WATCHING[0] is not None and _watched() is not None


def stop(watch: Watch) -> None:
    with _LOCK:
        if WATCHING[0] is watch:
            WATCHING[0] = None


class Captured:
    """A recorded function's compiled program and how to feed it (see the module docstring)."""

    __slots__ = ("program", "device", "leaves", "scalars", "outputs", "rebinds", "key", "constants")

    def __init__(self, program: _Program, device: Device, leaves: list[tuple[Any, ...]], scalars: list[tuple[str, Any]],
                 outputs: list[tuple[str, Any]], rebinds: list[tuple[int, int]], key: Any):  # fmt: skip
        self.program = program
        self.device = device
        self.leaves = leaves  # per leaf: ("arg", index of the argument array) or ("const", node)
        self.scalars = scalars  # per scalar: ("arg", index of the scalar argument) or ("const", value)
        self.outputs = outputs  # per output: ("out", program output index) / ("arg", i) / ("const", array)
        self.rebinds = rebinds  # (argument index, program output index) of each rebound argument
        self.key = key  # what the debug check compares
        # the arrays whose values are constants of the program: (weak ref to the array, its node)
        self.constants = [(c[2], c[1]) for c in leaves if c[0] == "const" and c[2] is not None]

    def stale(self) -> bool:
        """A constant's array was rebound since the recording (captured state changed)."""
        for ref, node in self.constants:
            owner = ref()
            if owner is not None and owner._data is not node:
                return True
        return False

    def replay(self, arrays: list[Array], scalars: list[Any]) -> tuple[list[Any], list[Array]]:
        """Run the program on the arguments: (the outputs, the new values of the rebound
        arguments, in `rebinds` order)."""
        import jax

        pending = [a._data for a in arrays if a._data.value is None]
        if pending:
            _materialize_nodes(pending, self.device)
        values = []
        for spec in self.leaves:
            node = arrays[spec[1]]._data if spec[0] == "arg" else spec[1]
            value = node.value
            if type(value) is np.ndarray:  # an interpreted (host) value: placed once, then reused
                with jax.enable_x64(True):
                    node.value = value = jax.device_put(value, self.device.jax_device)
            values.append(value)
        inputs = [scalars[s[1]] if s[0] == "arg" else s[1] for s in self.scalars]
        start = time.perf_counter()
        with _LOCK, jax.enable_x64(True), jax.default_device(self.device.jax_device):
            results = self.program.compiled([], values, inputs)
            COUNTERS.execute_seconds += time.perf_counter() - start
            COUNTERS.execute_count += 1
            COUNTERS.cache_hits += 1
            COUNTERS.captured_replays += 1
        IN_FLIGHT[self.device] = results
        made = [_wrap(r, self.device) for r in results]
        outs: list[Any] = []
        for spec in self.outputs:
            if spec[0] == "out":
                outs.append(made[spec[1]])
            elif spec[0] == "arg":
                outs.append(arrays[spec[1]])
            else:
                outs.append(spec[1])
        return outs, [made[i] for _, i in self.rebinds]


def layouts(arrays: list[Array], device: Device) -> tuple[Any, ...]:
    """On a mesh: the canonical layout of each argument array (part of a captured function's
    signature: the program was compiled for its inputs' shardings), its pending ones computed
    first (as a replay or a recording would compute them anyway)."""
    pending = [a._data for a in arrays if a._data.value is None]
    if pending:
        _materialize_nodes(pending, device)
    return tuple([spmd.layout(a._data) for a in arrays])


def _wrap(value: Any, device: Device) -> Array:
    dtype = np.dtype(value.dtype)
    return _owned_array(_leaf(value, dtype), FROM_NUMPY[dtype], device)


def end(
    watch: Watch, device: Device, arrays: list[Array], nodes: list[Node], scalars: list[Any], outputs: list[Any]
) -> Captured | str:
    """Finish the recording of a function whose argument arrays `arrays` held `nodes` and whose
    scalar arguments are `scalars`, and which returned the leaves `outputs`: its Captured
    program (already run for this call), or why it cannot be captured (a sentence naming the
    line)."""
    stop(watch)
    if watch.reads:
        return f"a value was read or a graph was run inside the function (at {watch.reads[0]})"
    if watch.breaks:
        return f"an operation whose result shape depends on values ({watch.breaks[0]})"
    arg_ids = {id(n): i for i, n in enumerate(nodes)}
    out_ids = {id(o) for o in outputs if type(o) is Array}
    arg_arrays = {id(a) for a in arrays}
    for ref, line in watch.rebound:
        a = ref()
        if a is not None and id(a) not in arg_arrays and id(a) not in out_ids:
            return f"an array that is neither an argument nor an output was written (captured state, at {line})"
    for o in outputs:
        if type(o) is Array and o._device != device and o._device.is_lazy:
            return f"an output is on {o._device}, not on {device}"
    rebound = [(i, a._data) for i, a in enumerate(arrays) if a._data is not nodes[i]]
    targets: list[Node] = []
    index: dict[int, int] = {}

    def target(node: Node) -> int:
        if id(node) not in index:
            index[id(node)] = len(targets)
            targets.append(node)
        return index[id(node)]

    out_specs: list[tuple[str, Any]] = []
    for o in outputs:
        if type(o) is not Array or not o._device.is_lazy:
            out_specs.append(("const", o))
        elif o._data.value is None:
            out_specs.append(("out", target(o._data)))
        elif id(o._data) in arg_ids:
            out_specs.append(("arg", arg_ids[id(o._data)]))
        else:
            out_specs.append(("const", o))
    rebinds = []
    for i, node in rebound:
        if node.value is None:
            rebinds.append((i, target(node)))
        else:
            return "an argument was rebound to a value computed outside the function"
    if any(n.checks for n in targets):
        return "an index array whose values were pending was used (its bounds check cannot be replayed)"
    if not targets:
        return "the function computes nothing on the device"
    n = len(targets)
    joined = list(targets)
    traced = _trace(joined, device)  # (may add held intermediate values: not outputs of the program)
    leaf_specs: list[tuple[Any, ...]] = []
    for leaf in traced.leaves:
        if id(leaf) in arg_ids:
            leaf_specs.append(("arg", arg_ids[id(leaf)]))
        else:
            owner = leaf.owner
            leaf_specs.append(("const", leaf, owner if owner is not None and owner() is not None else None))
    scalar_specs: list[tuple[str, Any]] = []
    for value in traced.scalars:
        for j, s in enumerate(scalars):
            if value is s:
                scalar_specs.append(("arg", j))
                break
        else:
            scalar_specs.append(("const", value))
    donate = (False,) * len(traced.leaves)
    if device.mesh is None:
        key = GraphKey(device, traced.ops, traced.outputs[:n], traced.leaf_avals, donate)
    else:  # a mesh: the inputs' layouts and the pinned outputs' are part of the program (spmd.key_shardings)
        shardings = spmd.key_shardings(traced, joined[:n])
        key = GraphKey(device, traced.ops, traced.outputs[:n], traced.leaf_avals, donate, shardings)
    program = _Program([(c.prim, c.params) for c in traced.calls], key.outputs, len(traced.leaves), key)
    _run_compiled(program, key, traced, joined[:n], device)  # compiles (or loads), runs this call
    constants = tuple(
        (s[0], s[1]) if s[0] == "arg" else (s[0], type(s[1]), repr(s[1])) for s in scalar_specs
    )  # fmt: skip
    leaves_key = tuple(s[1] if s[0] == "arg" else -1 for s in leaf_specs)
    return Captured(program, device, leaf_specs, scalar_specs, out_specs, rebinds, (key, constants, leaves_key))
