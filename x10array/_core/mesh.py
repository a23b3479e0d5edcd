"""Meshes and layouts: one x10array device over many jax devices (XLA SPMD).

A `Mesh` is a grid of jax devices with named axes (a `jax.sharding.Mesh` underneath), and
its `device` is ONE x10array `Device` (a `MeshDevice`, on the lazy XLA backend): arrays on it
combine like arrays on any one device, and a graph recorded on it runs as one SPMD program,
which XLA's partitioner splits over the mesh's devices, inserting the communication. An
array's *layout* is its sharding: a `NamedSharding` (mesh, partition spec) says which axis of
the array is split over which axes of the mesh. Partition specs are kept in a canonical form
(`canonical_spec`: a tuple whose entries are None, an axis name or a tuple of two or more
names, trailing Nones dropped), so "unsharded" and `P()` are the same layout, and
`P("data", None)` is `P("data")`.

The public names (`x10array.distributed`) are these classes; jax is imported only inside
functions, as everywhere in `_core`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .devices import Backend, Device, DeviceKind

__all__ = ["Mesh", "MeshDevice", "NamedSharding", "canonical_spec", "spec_text", "check_layout", "spec_of"]

Spec = tuple[Any, ...]  # a canonical partition spec (see canonical_spec)


class MeshDevice(Device):
    """The x10array device of a mesh: lazy (XLA backend), of the kind of the mesh's devices.
    Equal to another MeshDevice over the same devices (in order), shape and axis names; never
    equal to a single device, so mixing the two raises as for any two devices."""

    __slots__ = ("mesh",)
    mesh: Mesh  # (None on plain devices: see Device.mesh)

    def __init__(self, mesh: Mesh) -> None:  # (not Device.__init__: there is no one ordinal)
        self._fields(mesh.kind, 0, Backend.XLA, mesh.key)
        object.__setattr__(self, "mesh", mesh)

    def __repr__(self) -> str:
        return f"MeshDevice({self.mesh.text()})"

    def __reduce__(self) -> Any:
        raise TypeError("MeshDevice: a mesh device cannot be pickled (its devices belong to this process)")

    @property
    def jax_device(self) -> Any:
        """The mesh's first device of this process (where per-device limits are read)."""
        return self.mesh.local_devices[0]


class Mesh:
    """A grid of jax devices with named axes: `Mesh((2, 2), ("data", "model"))` over the first
    4 devices (of every process) of the default kind, or over `devices` (a sequence of jax
    devices, in row-major order). `mesh.device` is the one x10array device of the mesh."""

    __slots__ = ("shape", "axis_names", "devices", "kind", "key", "device", "_jax", "__weakref__")

    def __init__(self, shape: Sequence[int], axis_names: Sequence[str], *, devices: Sequence[Any] | None = None):
        fname = "Mesh"
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else shape
        if not isinstance(shape, tuple) or not shape or not all(type(d) is int and d > 0 for d in shape):
            raise ValueError(f"{fname}: shape must be a non-empty tuple of positive ints, got {shape!r}")
        names = tuple(axis_names) if isinstance(axis_names, (tuple, list)) else None
        if names is None or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"{fname}: axis_names must be a tuple of non-empty strings, got {axis_names!r}")
        if len(names) != len(shape):
            raise ValueError(f"{fname}: {len(shape)} axes in shape {shape} but {len(names)} axis names {names}")
        if len(set(names)) != len(names):
            raise ValueError(f"{fname}: axis names must be distinct, got {names}")
        size = math.prod(shape)
        if devices is None:
            found = _global_devices()
            if size > len(found):
                raise ValueError(
                    f"{fname}: a mesh of shape {shape} needs {size} devices, but there are {len(found)}"
                    f" {found[0].platform.upper() if found else ''} devices (all processes together); for more"
                    " CPU devices set XLA_FLAGS=--xla_force_host_platform_device_count=N before jax starts"
                )
            chosen = tuple(found[:size])
        else:
            chosen = tuple(devices)
            if len(chosen) != size:
                raise ValueError(
                    f"{fname}: a mesh of shape {shape} needs {size} devices, but {len(chosen)} devices were given"
                )
            if not all(hasattr(d, "platform") and hasattr(d, "id") for d in chosen):
                raise ValueError(f"{fname}: devices must be jax devices (from jax.devices())")
            if len({d.id for d in chosen}) != size:
                raise ValueError(f"{fname}: a device appears twice in devices")
            if len({d.platform for d in chosen}) != 1:
                raise ValueError(f"{fname}: the devices of a mesh must all be of one kind")
        try:
            kind = DeviceKind(chosen[0].platform.lower())
        except ValueError:
            raise ValueError(f"{fname}: devices of platform {chosen[0].platform!r} are not supported") from None
        self.shape = shape
        self.axis_names = names
        self.devices = chosen
        self.kind = kind
        self.key = (tuple(d.id for d in chosen), shape, names)
        self._jax: Any = None
        self.device = MeshDevice(self)

    @property
    def jax(self) -> Any:
        """The `jax.sharding.Mesh`."""
        if self._jax is None:
            import jax
            import numpy as np

            self._jax = jax.sharding.Mesh(np.array(self.devices, dtype=object).reshape(self.shape), self.axis_names)
        return self._jax

    @property
    def size(self) -> int:
        return len(self.devices)

    @property
    def local_devices(self) -> tuple[Any, ...]:
        """The mesh's devices that belong to this process."""
        import jax

        index = jax.process_index()
        return tuple(d for d in self.devices if d.process_index == index)

    def axis_size(self, name: str) -> int:
        return self.shape[self.axis_names.index(name)]

    def text(self) -> str:
        return ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.shape)) + f", {self.kind.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Mesh({self.text()})"


def _global_devices() -> list[Any]:
    """Every device of the default kind, of all processes (accelerators first, else the CPU)."""
    import jax

    for kind in ("gpu", "tpu"):
        try:
            found = jax.devices(kind)
        except RuntimeError:
            continue
        if found:
            return list(found)
    return list(jax.devices("cpu"))


def canonical_spec(spec: Any, mesh: Mesh, fname: str) -> Spec:
    """A partition spec (a `jax.sharding.PartitionSpec`, a tuple, or None) in canonical form,
    checked against `mesh`: every name an axis of the mesh, no mesh axis used twice."""
    if spec is None:
        return ()
    if not isinstance(spec, (tuple, list)):
        import jax

        if not isinstance(spec, jax.sharding.PartitionSpec):
            raise ValueError(f"{fname}: expected a partition spec such as P('data', None), got {spec!r}")
        spec = tuple(spec)
    out: list[Any] = []
    used: set[str] = set()
    for entry in spec:
        names: tuple[Any, ...] = (entry,) if entry is None or isinstance(entry, str) else tuple(entry)
        if entry is None:
            out.append(None)
            continue
        for name in names:
            if not isinstance(name, str):
                raise ValueError(
                    f"{fname}: a partition spec entry must be None, an axis name or a tuple of them, got {entry!r}"
                )
            if name not in mesh.axis_names:
                raise ValueError(
                    f"{fname}: the partition spec {spec_text(tuple(spec))} names the axis {name!r}, which the mesh"
                    f" does not have (its axes: {', '.join(map(repr, mesh.axis_names))})"
                )
            if name in used:
                raise ValueError(
                    f"{fname}: the partition spec {spec_text(tuple(spec))} uses the mesh axis {name!r} twice"
                )
            used.add(name)
        out.append(names[0] if len(names) == 1 else (names if names else None))
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def spec_text(spec: Spec) -> str:
    """`P('data', None)`: how a spec is written."""
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def check_layout(shape: tuple[int, ...], mesh: Mesh, spec: Spec, fname: str, entries: int = 0) -> None:
    """An array of `shape` can take the layout `spec` on `mesh`: no more entries than axes
    (`entries`: how many the spec had as written, trailing Nones included), and each split
    axis divides evenly over its mesh axes (ValueError naming the problem)."""
    entries = max(entries, len(spec))
    if entries > len(shape):
        raise ValueError(
            f"{fname}: the partition spec has {entries} entries, more than the array's rank {len(shape)}"
            f" (shape {shape})"
        )
    for axis, entry in enumerate(spec):
        if entry is None:
            continue
        names = (entry,) if isinstance(entry, str) else entry
        parts = math.prod(mesh.axis_size(n) for n in names)
        if shape[axis] % parts:
            raise ValueError(
                f"{fname}: uneven sharding: axis {axis} of the array (size {shape[axis]}) does not split evenly"
                f" over {' x '.join(map(repr, names))} ({parts} devices); x10array shards only evenly (pad the"
                " array, or choose another spec)"
            )


# jax PartitionSpec -> its canonical spec: a memo bounded by construction (it stops adding at
# 1,024 specs; a run's arrays have few layouts), not an LRU: spec_of is on a replay's path
_CANONICAL: dict[Any, Spec] = {}


def spec_of(sharding: Any) -> Spec | tuple[str, str]:
    """The canonical spec of a jax sharding of a computed value (a NamedSharding's spec; a
    fully replicated one is `()`; any other is keyed by its HLO text)."""
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        canonical = _CANONICAL.get(spec)  # (a captured step's replay asks this of each argument)
        if canonical is None:
            out = [e[0] if isinstance(e, tuple) and len(e) == 1 else (e if e != () else None) for e in spec]
            while out and out[-1] is None:
                out.pop()
            canonical = tuple(out)
            if len(_CANONICAL) < 1024:
                _CANONICAL[spec] = canonical
        return canonical
    if sharding.is_fully_replicated:
        return ()
    return ("hlo", str(sharding._to_xla_hlo_sharding(1)))  # (not reached for arrays x10array made)


class NamedSharding:
    """A layout on a mesh: `NamedSharding(mesh, P("data", None))` splits an array's axis 0
    over the mesh axis "data" and replicates it over the others. `device` is the mesh's
    device; `spec` the canonical partition spec."""

    __slots__ = ("mesh", "spec", "entries", "_jax")

    def __init__(self, mesh: Mesh, spec: Any = None):
        if not isinstance(mesh, Mesh):
            raise ValueError(f"NamedSharding: mesh must be an x10array.distributed.Mesh, got {type(mesh).__name__}")
        self.mesh = mesh
        self.spec = canonical_spec(spec, mesh, "NamedSharding")
        self.entries = 0 if spec is None else len(tuple(spec))  # as written (the rank it needs at least)
        self._jax: Any = None

    def check(self, shape: tuple[int, ...], fname: str) -> None:
        """An array of `shape` can be laid out so (see check_layout)."""
        check_layout(shape, self.mesh, self.spec, fname, self.entries)

    @property
    def device(self) -> MeshDevice:
        return self.mesh.device

    @property
    def jax(self) -> Any:
        """The `jax.sharding.NamedSharding`."""
        if self._jax is None:
            import jax

            self._jax = jax.sharding.NamedSharding(self.mesh.jax, jax.sharding.PartitionSpec(*self.spec))
        return self._jax

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and other.mesh == self.mesh and other.spec == self.spec

    def __hash__(self) -> int:
        return hash((self.mesh.key, self.spec))

    def __repr__(self) -> str:
        return f"NamedSharding({self.mesh!r}, {spec_text(self.spec)})"


def jax_sharding(mesh: Mesh, spec: Spec) -> Any:
    """The jax NamedSharding of a canonical spec on `mesh`."""
    import jax

    return jax.sharding.NamedSharding(mesh.jax, jax.sharding.PartitionSpec(*spec))
