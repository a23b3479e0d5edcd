"""The backend protocol: everything the layers above ask of a backend, and the registry.

A backend serves the devices of one `devices.Backend` kind (EAGER, XLA). It registers an
object implementing `BackendImpl` at import (`register`), and the rest of x10array reaches
it only through `impl(device)`: `primitive.bind` to run an operation, the public layer
(`_api`) to place host data, read values, run pending work and check bounds. No module
above `_core` imports a backend, and the backends never import each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .devices import Backend, Device

if TYPE_CHECKING:
    import numpy as np

    from .array import Array
    from .dtypes import DType
    from .primitive import Primitive

__all__ = ["BackendImpl", "register", "impl", "registered"]


class BackendImpl(Protocol):
    """What a backend does for its devices."""

    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Run (eager) or record (lazy) `prim` on `device`; an `Array` or a tuple of them.
        Operands are `Array`s on `device` or Python scalars, already validated."""

    def adopt(self, target: Array) -> None:
        """`target` was rebound to a new value (`x += 1`, `x[i] = v`): track it if needed."""

    def place(self, host: np.ndarray, dtype: DType, device: Device, *, shared: bool, layout: Any = None) -> Array:
        """A new array on `device` holding `host`'s value. `shared`: someone else may see or
        write `host`, so the array must not write it in place (copy, or mark it shared).
        `layout`: on a mesh device only (passed only there), the canonical partition spec to
        place it in (`_core/mesh.py`; None: replicated)."""

    def layout(self, x: Array) -> Any:
        """`x`'s layout: on a mesh, the canonical partition spec of its computed value, or None
        while it is pending (the partitioner decides at the barrier); `()` elsewhere."""

    def relayout(self, x: Array, layout: Any) -> Array:
        """A copy of `x`, an array on a mesh device, laid out as `layout` (a canonical partition
        spec) on the same mesh: moved between the mesh's devices, never through the host."""

    def read(self, x: Array) -> np.ndarray:
        """`x`'s value in host memory, computing it if pending. May share memory with `x`;
        a value that must not be written through is returned read-only."""

    def item(self, x: Array) -> Any:
        """The Python scalar of the 0-d `x` (`float(x)`, `bool(x)`): `read(x).item()`, without
        making the host array."""

    def host_buffer(self, x: Array) -> np.ndarray | None:
        """`x`'s value as a writable NumPy buffer in host memory that *is* `x`'s value: a write
        into it is a write to `x` (`numpy.asarray(x)`, docs/interop.md); None where there is
        none (an accelerator's memory, a mesh)."""

    @property
    def views_share_host(self) -> bool:
        """Whether a view's `host_buffer` must be made a NumPy view of its base's
        (`Alias.share_host`): False where a view's buffer is already one (the eager NumPy
        kernels), True where a view's value is its own, refreshed when x10array writes, not when
        NumPy does (the lazy device, the eager XLA kernels)."""

    def host_value(self, x: Array) -> np.ndarray | None:
        """`x`'s value if it is a host buffer that NumPy may write (handed out by `host_buffer`,
        or given by `share_host`), else None. Runs nothing."""

    def share_host(self, x: Array, buffer: np.ndarray) -> bool:
        """Make `buffer`, a host buffer that NumPy may write, `x`'s value: NumPy's view of the
        host buffer of the array `x` views (`Alias.share_host`), or the memory of a DLPack
        producer (`from_dlpack`). False where it cannot be: `x` keeps its own value."""

    def buffer(self, x: Array) -> Any:
        """`x`'s computed device buffer (a NumPy or jax array), computing it if pending."""

    def known(self, x: Array) -> np.ndarray | None:
        """`x`'s value in host memory if it is computed already (nothing is run), else None."""

    def index_now(self, x: Array, prim: Primitive, operands: tuple[int, ...], params: dict[str, Any]) -> Array | None:
        """`prim(x, *operands, **params)`, a basic index holding ints (`x[i]`, `x[i, ...]`), taken
        at once from `x`'s computed value in host memory: a new computed array, no operation
        recorded. None where the index is to be run as any other operation: on an eager device
        (bind runs it at once anyway), and on a lazy one where `x` is pending, its value is not
        in host memory, or x10array.compile is recording."""

    def compute_for_reads(self, x: Array) -> None:
        """`x` is about to be read piece by piece (iteration): compute its pending value now
        where `index_now` then serves the pieces from it, so that one graph runs, not one per
        piece. Nothing where there is nothing to gain (an eager device)."""

    def guard(self, out: Array, flag: Array, fname: str, axis: int, size: int) -> None:
        """`out` came from indexing by an index array whose bounds `flag` (a 0-d bool array,
        True when an entry is out of bounds) checks: raise IndexError now if the flag is
        known to be set, or make every value computed from `out` raise when read."""

    def barrier(self, devices: list[Device] | None, wait: bool) -> None:
        """Run the pending work of `devices` (None: all of this backend's); block until done
        if `wait`."""


_IMPLS: dict[Backend, BackendImpl] = {}


def register(backend: Backend, implementation: BackendImpl) -> None:
    """Make `implementation` serve the devices of kind `backend` (each backend, at import)."""
    _IMPLS[backend] = implementation


def impl(device: Device) -> BackendImpl:
    """The implementation serving `device`."""
    return _IMPLS[device.backend]


def registered() -> list[BackendImpl]:
    """Every registered implementation, in registration order."""
    return list(_IMPLS.values())
