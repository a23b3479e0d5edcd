"""Stage 6, placement: where a lazy device's values live, chosen once per device.

Everything that differs between one device and a device mesh (`_core/mesh.MeshDevice`) is a
method of the device's placement (`placement_of(device)`): a `SingleDevice` or a `OnMesh`,
so no other stage asks which kind of device it runs on (the mesh's mechanics, placing in a
layout, the sharded program, the agreement of processes, the bounded launch queue, are in
spmd.py, which only `OnMesh` calls):

- placing host data (`place`) and, on a mesh, copying an array into another layout
  (`relayout`);
- the part of a graph's key that layouts make (`key_shardings`: empty on one device);
- where a cold graph runs (`interprets`: on the host's interpreter, only where the host is the
  device, see `interprets_cold_graphs`; `op_by_op`: op by op on an accelerator; a mesh always
  compiles) and whether a barrier may reuse a plan of
  its structure (`plans`: not on a mesh, whose keys hold layouts);
- the jitted program's in/out shardings (`jit`) and, across processes, its checked runs
  (`checked_runs`, `agree`);
- the programs in flight (`launched`: bounded on a CPU mesh);
- reads: an array's layout (`layout`), what may be read or exported to the host
  (`check_readable`, `readable_here`, `check_exportable`, `check_graph_break`, `host_buffers`),
  where a program's constants are placed (`constants_target`);
- the layout an array rebound in place keeps (`layout_keeper`: None on a single device, decided
  once per device, so that an in-place write there costs no call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._core.capabilities import capabilities
from ..._core.devices import Device, DeviceKind, jax_put
from ..._core.mesh import jax_sharding
from . import spmd
from .graph import Node
from .interpreter import as_node_value
from .trace import GraphKey, Traced


def interprets_cold_graphs(device: Device) -> bool:
    """Where a single device runs its cold graphs, a fact of its kind (so deterministic,
    `capabilities(device).cold_graphs`): True on a CPU, whose memory the host's is, where the
    host's NumPy interpreter runs them (interpreter.py; the cost model then decides when a
    graph compiles); False on an accelerator, where they run op by op on the device
    (interpreter.run_on_device) and a structure compiles when it is seen again
    (Program.runs_op_by_op): values stay where they live, with the device's own numerics
    (docs/numerics.md), never a round trip through the host."""
    return capabilities(device).cold_graphs == "host"


class SingleDevice:
    """The placement of one device (a CPU, an accelerator): values are its buffers."""

    __slots__ = ("device", "host_buffers")
    plans = True  # a barrier may reuse a graph structure's plan (plans.Plan: its key holds no layout)
    mesh = False

    def __init__(self, device: Device):
        self.device = device
        # on the CPU a host buffer is the device's memory (see LazyBackend.host_buffer)
        self.host_buffers = device.kind is DeviceKind.CPU

    @property
    def interprets(self) -> bool:
        """Whether a cold graph may run on the host's interpreter (a CPU's: interprets_cold_graphs;
        asked at each run, since X10ARRAY_CPU_PROFILE=tpu changes a CPU's capabilities)."""
        return interprets_cold_graphs(self.device)

    @property
    def op_by_op(self) -> bool:
        """Whether a cold graph runs op by op on the device (an accelerator's, or a CPU's that
        declares a TPU's capabilities)."""
        return not interprets_cold_graphs(self.device)

    def place(self, host: np.ndarray, owned: bool, layout: Any) -> Any:
        """A host array as a node's value on the device. On the CPU the host buffer is the
        device's memory, as for the interpreter's results: it is kept as it is (copied unless
        `owned`: nobody else may write it), and placed with jax only when a compiled program
        reads it (see executor.run_compiled)."""
        if self.device.kind is DeviceKind.CPU:
            return as_node_value(host if owned else host.copy(order="K"), host.dtype)
        import jax

        with jax.enable_x64(True):
            return jax.device_put(host, self.device.jax_device)

    def relayout(self, value: Any, layout: Any) -> Any:
        raise AssertionError("relayout: not a mesh")  # (_api calls it only for arrays on a mesh)

    def key_shardings(self, traced: Traced, targets: list[Node]) -> tuple[Any, ...]:
        return ()

    def jit(self, fn: Any, key: GraphKey, leaf_values: list[Any], options: dict[str, Any] | None) -> Any:
        import jax

        return jax.jit(fn, donate_argnums=(1,) if any(key.donate) else (), compiler_options=options)

    def checked_runs(self, run: Any, key: GraphKey) -> Any:
        return run

    def agree(self, key: GraphKey) -> None:
        pass

    def launched(self, targets: list[Node]) -> None:
        pass

    def launched_value(self, value: Any) -> None:
        pass

    def layout(self, node: Node) -> Any:
        return ()

    def check_readable(self, value: Any) -> None:
        pass

    def readable_here(self, value: Any) -> bool:
        return True

    def check_exportable(self) -> None:
        pass

    def check_graph_break(self, prim: Any, values: Any) -> None:
        """Whether `prim`, whose result shape depends on values, may read its operands on the
        host (`values()`: their computed buffers)."""

    def constants_target(self) -> Any:
        return self.device.jax_device

    def place_scalars(self, arrays: list[np.ndarray]) -> list[Any]:
        """A barrier's packed scalars placed on the device for its programs' runs
        (lowering.PackedScalars.placed_pack), with jax's C++ transfer (`jax_put`: committed to
        the device, as the program's placed leaves are; every run passes placed arrays, so jax
        keeps one compiled program for the call)."""
        target = self.device.jax_device
        return [jax_put(a, target) for a in arrays]

    def layout_keeper(self) -> Callable[[Node], None] | None:
        """What keeps the layout of an array rebound in place (given its new pending node):
        None here, where values have no layout."""
        return None


class OnMesh(SingleDevice):
    """The placement of a mesh device: values are global jax arrays laid out over its devices
    (spmd.py)."""

    __slots__ = ()
    plans = False  # a key holds the leaves' layouts, which a plan does not check: every graph is walked
    mesh = True

    def __init__(self, device: Device):
        self.device = device
        self.host_buffers = False

    # no interpreted tier, no cold tier, no cost model: every graph compiles at once
    interprets = False
    op_by_op = False

    def place(self, host: np.ndarray, owned: bool, layout: Any) -> Any:
        return spmd.place(host if owned else host.copy(), self.device, layout or ())  # (jax may alias host memory)

    def relayout(self, value: Any, layout: Any) -> Any:
        return spmd.relayout(value, self.device, layout)

    def key_shardings(self, traced: Traced, targets: list[Node]) -> tuple[Any, ...]:
        return spmd.key_shardings(traced, targets)

    def jit(self, fn: Any, key: GraphKey, leaf_values: list[Any], options: dict[str, Any] | None) -> Any:
        return spmd.jit(fn, key, leaf_values, options)

    def checked_runs(self, run: Any, key: GraphKey) -> Any:
        return spmd.checked_runs(run, key)

    def agree(self, key: GraphKey) -> None:
        spmd.agree(key)  # every process must be building this same program

    def launched(self, targets: list[Node]) -> None:
        """A program just ran for `targets`: the smallest computed one stands for it in the
        launch queue (not those a failed bounds check left pending)."""
        done = [n for n in targets if n.value is not None]
        if done:
            spmd.launched(self.device, done[spmd.smallest([n.shape for n in done])].value)

    def launched_value(self, value: Any) -> None:
        spmd.launched(self.device, value)

    def layout(self, node: Node) -> Any:
        return None if node.value is None else spmd.layout(node)

    def check_readable(self, value: Any) -> None:
        spmd.check_readable(value)

    def readable_here(self, value: Any) -> bool:
        return bool(value.is_fully_addressable)

    def check_exportable(self) -> None:
        raise BufferError(
            f"__dlpack__: an array on a mesh ({self.device!r}) is held in pieces on several devices and"
            " has no one buffer to export; read it with np.asarray(x) or x10array.distributed.gather(x)"
        )

    def check_graph_break(self, prim: Any, values: Any) -> None:
        spmd.check_graph_break(prim, values())

    def constants_target(self) -> Any:
        return jax_sharding(self.device.mesh, ())  # replicated

    def place_scalars(self, arrays: list[np.ndarray]) -> list[Any]:
        import jax

        with jax.enable_x64(True):
            return jax.device_put(arrays, self.constants_target())

    def layout_keeper(self) -> Callable[[Node], None] | None:
        return spmd.inherit_layout


# device -> its placement: one entry per device and mesh device the process uses (bounded by
# construction: a process makes few), made at its first use
_PLACEMENTS: dict[Device, SingleDevice] = {}


def placement_of(device: Device) -> SingleDevice:
    """The placement of a lazy device (made once)."""
    found = _PLACEMENTS.get(device)
    if found is None:
        found = _PLACEMENTS[device] = SingleDevice(device) if device.mesh is None else OnMesh(device)
    return found
