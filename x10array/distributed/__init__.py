"""x10array over a device mesh (XLA SPMD) and across processes (jax.distributed).

    import x10array as xp, x10array.distributed as xd
    mesh = xd.Mesh((2, 2), ("data", "model"))
    x = xp.asarray(batch, device=xd.NamedSharding(mesh, xd.P("data")))   # x.device == mesh.device

A mesh is ONE x10array device (on the lazy XLA backend): arrays on it combine like arrays on
any device, and each barrier runs one SPMD program, which XLA's partitioner splits over the
mesh's devices, inserting the communication (the gradient all-reduce of data-parallel
training, say). An array's layout is its sharding; the partitioner chooses the layouts of
results, recorded on them after the run (`sharding(y)`). See docs/distributed.md.

The namespace layer: it uses `_core`, `_api` and the lazy backend's entry points.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from jax.sharding import PartitionSpec as P

from .._api.creation import asarray, to_device
from .._backends.lazy import from_global, materialize
from .._core import settings
from .._core.array import Array
from .._core.backend import impl as backend_impl
from .._core.mesh import Mesh, MeshDevice, NamedSharding, jax_sharding, spec_text
from .._core.primitive import Primitive, bind, same_as_first
from .._core.validation import check_array
from . import _ending

__all__ = [
    "Mesh", "NamedSharding", "P", "MeshDevice", "shard", "replicate", "sharding", "constrain", "gather",
    "describe", "from_process_local", "initialize", "process_index", "process_count",
]  # fmt: skip


def _constraint(k: Any, x: Any, *, mesh: Mesh, spec: tuple[Any, ...]) -> Any:
    """The layout constraint: the identity, which under XLA tells the partitioner the layout."""
    if k.is_jax:
        return k.jax.lax.with_sharding_constraint(x, jax_sharding(mesh, spec))
    return x


# A recorded layout constraint (`constrain`): lowered to jax.lax.with_sharding_constraint.
_CONSTRAIN = Primitive("sharding_constraint", _constraint, rule=same_as_first, moves_data=True)


def _on_mesh(x: Any, fname: str) -> MeshDevice:
    check_array(x, fname)
    device = x._device
    if device.mesh is None:
        raise ValueError(
            f"{fname}: the array is on {device!r}, not on a mesh; place it on one with shard(), replicate() or"
            " asarray(..., device=NamedSharding(mesh, spec))"
        )
    return device


def _sharding(mesh: Any, spec: Any, fname: str) -> NamedSharding:
    if not isinstance(mesh, Mesh):
        raise ValueError(f"{fname}: mesh must be an x10array.distributed.Mesh, got {type(mesh).__name__}")
    try:
        return NamedSharding(mesh, spec)
    except ValueError as e:
        raise ValueError(f"{fname}: {str(e).removeprefix('NamedSharding: ')}") from None


def shard(x: Any, mesh: Mesh, spec: Any = None) -> Array:
    """`x` (an array, or anything `asarray` takes) on `mesh`, laid out as `spec` (a partition
    spec: `P("data")` splits axis 0 over the mesh axis "data"; None or `P()` replicates)."""
    s = _sharding(mesh, spec, "shard")
    shape = x.shape if type(x) is Array else np.shape(x)
    s.check(tuple(shape), "shard")
    if type(x) is Array:
        return to_device(x, s)
    return asarray(x, device=s)


def replicate(x: Any, mesh: Mesh) -> Array:
    """`x` on `mesh`, whole on every device."""
    return shard(x, mesh, None)


def sharding(x: Array) -> NamedSharding | str:
    """The layout of `x` on its mesh: a NamedSharding, or "pending" while its value is pending
    (the partitioner decides the layout of a result when the graph runs, at the barrier)."""
    device = _on_mesh(x, "sharding")
    spec = backend_impl(device).layout(x)
    if spec is None:
        return "pending"
    if spec and spec[0] == "hlo":  # (a layout no partition spec describes)
        return str(spec[1])
    return NamedSharding(device.mesh, spec)


def constrain(x: Array, spec: Any) -> Array:
    """`x` with its layout constrained to `spec` (jax.lax.with_sharding_constraint), recorded in
    the pending graph: nothing runs until the barrier."""
    device = _on_mesh(x, "constrain")
    s = _sharding(device.mesh, spec, "constrain")
    s.check(x.shape, "constrain")
    return bind(_CONSTRAIN, device, x, mesh=device.mesh, spec=s.spec)


def gather(x: Array) -> np.ndarray:
    """The whole value of `x` in host memory, in every process (a collective: in a
    multi-process run every process must call it)."""
    _on_mesh(x, "gather")
    value = materialize(x)
    if value.is_fully_addressable or value.is_fully_replicated:
        return np.asarray(value)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(value, tiled=True))


def describe(x: Array) -> str:
    """Which device holds which slice of `x` (computing it if pending), as text."""
    device = _on_mesh(x, "describe")
    value = materialize(x)
    mesh = device.mesh
    spec = backend_impl(device).layout(x)
    layout = spec_text(spec) if spec is not None and (not spec or spec[0] != "hlo") else str(value.sharding)
    lines = [f"{x.dtype} {tuple(x.shape)} on {mesh!r}, layout {layout}:"]
    where = value.sharding.devices_indices_map(tuple(x.shape))
    for d in mesh.devices:
        index = where[d]
        text = ", ".join(_slice_text(s, n) for s, n in zip(index, x.shape)) if x.shape else "()"
        lines.append(f"  {d.platform}:{d.id} (process {d.process_index}): [{text}]")
    return "\n".join(lines)


def _slice_text(s: slice, n: int) -> str:
    start, stop, _ = s.indices(n)
    return ":" if (start, stop) == (0, n) else f"{start}:{stop}"


def from_process_local(local: Any, s: NamedSharding) -> Array:
    """A global array on `s`'s mesh made of each process's part: every process passes its own
    piece (`local`, what its devices hold of the split axes, e.g. its rows of the batch for
    `P("data")`); the global shape is the pieces put together."""
    if not isinstance(s, NamedSharding):
        raise ValueError(f"from_process_local: s must be an x10array.distributed.NamedSharding, got {type(s).__name__}")
    import jax

    host = np.asarray(local._host() if type(local) is Array else local)
    if s.entries > host.ndim:
        s.check(host.shape, "from_process_local")
    global_shape = list(host.shape)
    for axis, entry in enumerate(s.spec):
        if entry is None:
            continue
        names = (entry,) if isinstance(entry, str) else entry
        parts = math.prod(s.mesh.axis_size(n) for n in names)
        local_parts = _local_parts(s, axis, names, parts)
        global_shape[axis] = host.shape[axis] * parts // local_parts
    s.check(tuple(global_shape), "from_process_local")
    with jax.enable_x64(True):
        buf = jax.make_array_from_process_local_data(s.jax, host, tuple(global_shape))
    return from_global(buf, s.device)


def _local_parts(s: NamedSharding, axis: int, names: tuple[str, ...], parts: int) -> int:
    """How many of the `parts` pieces of an axis this process's devices hold."""
    import jax

    shape = [parts if i == axis else 1 for i in range(axis + 1)]
    where = s.jax.devices_indices_map(tuple(shape))
    me = jax.process_index()
    return len({where[d][axis].indices(parts)[0] for d in s.mesh.devices if d.process_index == me}) or 1


def process_index() -> int:
    """This process's index in a multi-process run (0 in one process)."""
    import jax

    return int(jax.process_index())


def process_count() -> int:
    """How many processes take part (1 unless initialize() joined a cluster)."""
    import jax

    return int(jax.process_count())


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_devices: int | None = None,
) -> None:
    """Join a multi-process run (jax.distributed.initialize): the coordinator's host:port, the
    number of processes and this one's index, from the arguments, else X10ARRAY_COORDINATOR,
    X10ARRAY_NUM_PROCESSES and X10ARRAY_PROCESS_ID (which `python -m
    x10array.distributed.launch` sets), else jax's detection of the cluster. `local_devices`:
    how many CPU devices this process has (CPU runs only). Call it first, before any array
    is made: jax's devices cannot change once they exist. Once joined, the process ends at
    once after an uncaught exception or a failing `sys.exit()` (without jax's exit barrier,
    which would wait for processes stuck in a collective with it), and jax's heartbeat
    timeout is X10ARRAY_DISTRIBUTED_TIMEOUT: docs/distributed.md, "When a process fails"."""
    import jax
    from jax._src import distributed, xla_bridge

    if jax.distributed.is_initialized():
        raise ValueError("initialize: this process has joined a multi-process run already")
    if xla_bridge.backends_are_initialized():
        raise ValueError(
            "initialize: jax's devices were created already (an array was made, or devices were listed);"
            " call x10array.distributed.initialize() first, before anything else uses a device"
        )
    if coordinator_address is not None:
        if not isinstance(coordinator_address, str):
            raise TypeError(f"initialize: coordinator_address must be a host:port string, got {coordinator_address!r}")
        try:  # the setting's own rule (jax's parser fails with a bare IndexError without a port)
            settings.SETTINGS["X10ARRAY_COORDINATOR"].parse(coordinator_address)
        except ValueError:
            raise ValueError(
                f"initialize: coordinator_address must be 'host:port' with a port from 1 to 65535,"
                f" got {coordinator_address!r}"
            ) from None
    coordinator = coordinator_address or settings.get("X10ARRAY_COORDINATOR") or None
    if num_processes is None and settings.get("X10ARRAY_NUM_PROCESSES"):
        num_processes = settings.get("X10ARRAY_NUM_PROCESSES")
        if process_id is None:
            process_id = settings.get("X10ARRAY_PROCESS_ID")
    if num_processes is not None and (type(num_processes) is not int or num_processes < 1):
        raise ValueError(f"initialize: num_processes must be a positive int, got {num_processes!r}")
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"initialize: process_id must be in [0, {num_processes}), got {process_id!r}")
    if local_devices is not None:
        if type(local_devices) is not int or local_devices < 1:
            raise ValueError(f"initialize: local_devices must be a positive int, got {local_devices!r}")
        jax.config.update("jax_num_cpu_devices", local_devices)
    # CPU collectives across processes go through gloo (jax's default CPU client has none)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # jax's preemption service catches SIGTERM: a launcher (or `timeout`) could not stop the process
    if "JAX_ENABLE_PREEMPTION_SERVICE" not in os.environ:
        jax.config.update("jax_enable_preemption_service", False)
    try:
        jax.distributed.initialize(
            coordinator, num_processes, process_id, heartbeat_timeout_seconds=_ending.heartbeat_timeout()
        )
    except ValueError as e:  # (what jax could not find: the coordinator, the processes)
        raise ValueError(
            f"initialize: {e} (pass coordinator_address, num_processes and process_id, or run the script with"
            " python -m x10array.distributed.launch)"
        ) from None
    _ending.install(int(distributed.global_state.process_id))
