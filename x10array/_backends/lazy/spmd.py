"""Stage 5, SPMD, the mechanics of a mesh's placement (placement.OnMesh): graphs on a mesh
device (`_core/mesh.MeshDevice`), one program over many devices, partitioned by XLA
(GSPMD/Shardy through `jax.sharding`): x10array writes no collective of its own.

What differs from a single device, all of it here (only placement.OnMesh calls in, so a
single device's path does no extra work):

- placement (`place`): host data becomes a global jax array in a layout (a canonical
  partition spec, `_core/mesh.py`), each process supplying the slices of its devices;
- the key (`key_shardings`): a graph's key also holds the canonical layout of each input
  ("unsharded" and `P()` are one key) and the pinned layout of each output; the mesh's
  identity is in the key's device;
- pinned outputs: an array rebound in place (`w -= lr * g`, `x[i] = v`) keeps the layout of
  the value it had (`inherit_layout`, at the rebinding), so parameters keep their sharding
  across steps and donation can reuse their buffers;
- the program (`jit`): `jax.jit` with `in_shardings` from the inputs' layouts, and
  `with_sharding_constraint` on pinned outputs; the partitioner chooses every other layout,
  which is recorded on the results (their buffers' shardings) after the run;
- meshes always compile on first sight (no interpreted tier, no timing-based choice), and what
  shapes a program (outputs, donation) is decided from the recording alone, so every process
  of a multi-process run builds the same program; `agree` checks that they do (a fingerprint
  of each new program through jax.distributed's key-value store) and raises when they differ,
  where plain jax would run mismatched collectives and return wrong numbers or hang;
- a bounded launch queue on CPU meshes (`launched`): at most `IN_FLIGHT_LIMIT` programs in
  flight, where XLA's CPU client aborts the process in a collective once 32 are queued.
"""

from __future__ import annotations

import collections
import hashlib
import math
from typing import Any

import numpy as np

from ..._core import settings
from ..._core.devices import Device, DeviceKind
from ..._core.lru import LRU
from ..._core.mesh import Spec, jax_sharding, spec_of, spec_text
from .graph import Node
from .trace import GraphKey, Traced


def place(host: np.ndarray, device: Device, spec: Spec) -> Any:
    """A global jax array on `device`'s mesh holding `host` in the layout `spec`: each process
    places the slices that its own devices hold (every process passes the same `host`)."""
    import jax

    sharding = jax_sharding(device.mesh, spec)
    with jax.enable_x64(True):
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def relayout(value: Any, device: Device, spec: Spec) -> Any:
    """A copy of the global jax array `value` (on `device`'s mesh) laid out as `spec`: one
    small SPMD program (the identity with pinned output sharding; jax caches it per layout
    pair) that moves the slices between the mesh's devices. Every process runs it."""
    import jax

    with jax.enable_x64(True):
        moved = _resharding(jax_sharding(device.mesh, spec))(value)
    launched(device, moved)
    return moved


# a target layout -> the jitted identity pinned to it (jax caches its program per input layout);
# an LRU of 64 layouts, bounded by construction: a run moves arrays into few layouts
_RELAYOUTS = LRU("mesh relayouts", 64)


def _resharding(sharding: Any) -> Any:
    found = _RELAYOUTS.get(sharding)
    if found is None:
        import jax

        found = _RELAYOUTS.put(sharding, jax.jit(_identity, out_shardings=sharding))
    return found


def _identity(value: Any) -> Any:
    return value


def layout(node: Node) -> Spec | None:
    """The canonical layout of a node: its computed value's, else the one pinned on it (an
    array rebound in place), else None (the partitioner will choose)."""
    if node.value is not None:
        return spec_of(node.value.sharding)
    return getattr(node, "layout", None)


def inherit_layout(node: Node) -> None:
    """`node` is the new pending value of an array rebound in place (`w -= g`: subtract(w, g);
    `x[i] = v`: setitem(x, i, v)): the first operand of its call is the array's previous value.
    Pin the new value to that value's layout, if it has one of the same shape and dtype."""
    call = node.call
    if call is None or not call.inputs:
        return
    previous = call.inputs[0]
    if type(previous) is Node and previous.shape == node.shape and previous.dtype == node.dtype:
        spec = layout(previous)
        if spec is not None:
            node.layout = spec


def key_shardings(traced: Traced, targets: list[Node]) -> tuple[Any, ...]:
    """The part of a mesh graph's key that layouts make: (the canonical layout of each leaf,
    the pinned layout or None of each output, `targets` being the outputs in order, the
    partitioner in use: "shardy" or "gspmd")."""
    import jax

    leaves = tuple([spec_of(n.value.sharding) for n in traced.leaves])
    pinned = tuple([getattr(n, "layout", None) for n in targets])
    shardy = getattr(jax.config, "jax_use_shardy_partitioner", False)
    return leaves, pinned, "shardy" if shardy else "gspmd"


def jit(replay: Any, key: GraphKey, leaf_values: list[Any], options: dict[str, Any] | None) -> Any:
    """The graph function `replay` of a program on a mesh (lowering.graph_function: of
    (one, donated leaves, kept leaves, scalars)) as jax.jit makes it for one device, with the
    inputs' shardings given (`in_shardings`: the values' own, which the key holds), pinned
    outputs constrained and the program's XLA `options`."""
    import jax

    mesh = key.device.mesh
    donate = key.donate
    pinned = [None if spec is None else jax_sharding(mesh, spec) for spec in key.shardings[1]]

    def constrained(one: Any, donated: list[Any], kept: list[Any], scalars: Any) -> tuple[Any, ...]:
        outs = replay(one, donated, kept, scalars)
        return tuple(o if s is None else jax.lax.with_sharding_constraint(o, s) for o, s in zip(outs, pinned))

    constrained.__name__ = constrained.__qualname__ = "replay"  # (jax names the program after it)
    replicated = jax_sharding(mesh, ())
    shardings = [v.sharding for v in leaf_values]
    in_shardings = (
        replicated,
        [s for s, d in zip(shardings, donate) if d],
        [s for s, d in zip(shardings, donate) if not d],
        replicated,  # Python scalars: a prefix for the whole list (or what `unpack` takes)
    )
    return jax.jit(
        constrained,
        in_shardings=in_shardings,
        donate_argnums=(1,) if any(donate) else (),
        compiler_options=options,
    )


def checked_runs(run: Any, key: GraphKey) -> Any:
    """`run`, comparing every Nth run's program across processes first when
    X10ARRAY_DISTRIBUTED_CHECK_EVERY is N > 0 in a multi-process run (read at the compile)."""
    import jax

    every = settings.get("X10ARRAY_DISTRIBUTED_CHECK_EVERY")
    if not every or jax.process_count() == 1:
        return run
    mine, summary = fingerprint(key), _summary(key)

    def checked(*args: Any) -> Any:
        _Agreement.runs += 1
        n = _Agreement.runs
        if n % every == 0:
            _compare(f"run/{n}", f"run #{n}", mine, summary)
            # every other process has published run n, so it has read this one's previous entry
            _forget(f"run/{n - every}")
        return run(*args)

    return checked


# -- a bounded launch queue on CPU meshes ---------------------------------------------------------

# XLA's CPU client lets 32 programs per device be in flight; at that point a program that holds a
# collective (the all-reduce of a data-parallel step) waits at its rendezvous for a device whose
# part cannot start, and after 40 s XLA aborts the process ("Termination timeout for `all reduce`
# ... only 1 of them arrived"). Plain jax does the same: 2 or 4 forced host devices, a loop of
# unwaited steps, 32 in flight aborts, 24 does not (measured with jax 0.10.2). So a CPU mesh
# waits for its oldest program once more than IN_FLIGHT_LIMIT are in flight: far from 32, and
# enough for the host to run ahead of the devices (a loop dispatches the next step while the
# devices run the previous ones). Other kinds of device have no such limit.
IN_FLIGHT_LIMIT = 8
_LAUNCHED: dict[Device, collections.deque[Any]] = {}


def launched(device: Device, value: Any) -> None:
    """Note a program just launched on the mesh `device`, `value` being one of its outputs (its
    smallest: a loss, not the parameters, which the queue would keep alive for several steps),
    and on a CPU mesh wait for the oldest one in flight while more than IN_FLIGHT_LIMIT are."""
    if device.mesh.kind is not DeviceKind.CPU:
        return
    queue = _LAUNCHED.get(device)
    if queue is None:
        queue = _LAUNCHED[device] = collections.deque()
    queue.append(value)
    while len(queue) > IN_FLIGHT_LIMIT:
        oldest = queue.popleft()
        # (the oldest's output may have been donated to a later program, which the devices run
        # after it: then the next one that is still there stands for it)
        for value in (oldest, *queue):
            if not value.is_deleted():
                value.block_until_ready()
                break


def smallest(shapes: list[tuple[int, ...]]) -> int:
    """The index of the smallest of a program's outputs (see `launched`)."""
    return min(range(len(shapes)), key=lambda i: math.prod(shapes[i]))


# -- every process builds the same program ------------------------------------------------------


class _Agreement:
    """How many new mesh programs this process has compiled (the n-th is compared with every
    other process's n-th)."""

    count = 0
    runs = 0  # mesh program runs (X10ARRAY_DISTRIBUTED_CHECK_EVERY)


def fingerprint(key: GraphKey) -> str:
    """A digest of a program's key that is the same in every process recording the same
    program (no ids or addresses: names, parameters, wiring, shapes, layouts, donation)."""
    text = repr((key.ops, key.outputs, key.leaf_avals, key.donate, key.shardings, key.device.mesh.key))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def agree(key: GraphKey) -> None:
    """In a multi-process run, before a new program's first run: check that every process
    compiles the same program at this point (ValueError naming the processes and the first
    difference, instead of mismatched collectives); nothing to do in one process."""
    import jax

    if jax.process_count() == 1:
        return
    _Agreement.count += 1
    n = _Agreement.count
    _compare(f"program/{n}", f"program #{n}", fingerprint(key), _summary(key))


def _forget(slot: str) -> None:
    """Delete this process's entry `slot` from the key-value store (the run checks' entries
    would otherwise grow with every check)."""
    import contextlib

    import jax
    from jax._src import distributed

    client = distributed.global_state.client
    if client is not None:
        with contextlib.suppress(Exception):
            client.key_value_delete(f"x10array/{slot}/{jax.process_index()}")


def _compare(slot: str, what: str, mine: str, summary: str) -> None:
    """Publish this process's program digest under `slot` and compare it with every other
    process's (jax.distributed's key-value store); raise on a difference or a timeout."""
    import jax
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:  # (not through jax.distributed: nothing to compare with)
        return
    me = jax.process_index()
    client.key_value_set(f"x10array/{slot}/{me}", f"{mine} {summary}")
    timeout_ms = int(settings.get("X10ARRAY_DISTRIBUTED_TIMEOUT") * 1000)
    for other in range(jax.process_count()):
        if other == me:
            continue
        try:
            theirs = client.blocking_key_value_get(f"x10array/{slot}/{other}", timeout_ms)
        except Exception:
            raise RuntimeError(
                f"x10array.distributed: process {other} did not reach its {what} within"
                f" {timeout_ms / 1000:g} s while process {me} ran one ({summary}); the processes"
                " diverged (one ran a program the other did not record?) or process"
                f" {other} is busy or gone (X10ARRAY_DISTRIBUTED_TIMEOUT)"
            ) from None
        digest, _, their_summary = theirs.partition(" ")
        if digest != mine:
            raise ValueError(
                f"x10array.distributed: the processes recorded different programs ({what}: process"
                f" {me} has {summary}, process {other} has {their_summary}); every process must record the"
                " same operations on a mesh, with the same shapes, dtypes and layouts"
            )


def _summary(key: GraphKey) -> str:
    """A short readable description of a program (for the mismatch message)."""
    names = [op[0].name for op in key.ops]
    head = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    layouts = ", ".join(spec_text(s) if isinstance(s, tuple) else str(s) for s in key.shardings[0][:4])
    return f"[{len(names)} ops: {head}; inputs {[list(a[0]) for a in key.leaf_avals][:4]} in {layouts or '-'}]"


# -- reading values -----------------------------------------------------------------------------


def check_readable(value: Any) -> None:
    """Reading a value on a mesh to the host: in one process it is gathered; across processes
    only a fully replicated value can be read (each process has all of it)."""
    if not value.is_fully_addressable and not value.is_fully_replicated:
        raise ValueError(
            f"x10array: this array is sharded across processes ({spec_text(spec_of(value.sharding))} on"
            " a multi-process mesh): no process holds all of it; use x10array.distributed.gather(x) (every"
            " process gets the whole value) or replicate it first"
        )


def check_graph_break(prim: Any, values: list[Any]) -> None:
    """An operation whose result shape depends on values (`unique`, `nonzero`, a boolean
    mask) reads its operands on the host: across processes, only replicated ones."""
    for value in values:
        if not value.is_fully_addressable and not value.is_fully_replicated:
            raise ValueError(
                f"{prim.name}: its result's shape depends on the values, so it runs on the host, but an"
                f" operand is sharded across processes ({spec_text(spec_of(value.sharding))}); replicate it"
                " first (x10array.distributed.replicate) or gather it"
            )
