"""One jitted XLA program per (primitive, parameters): how a device runs primitives one at a
time, on the device.

The eager device of an accelerator (and of the CPU under X10ARRAY_EAGER_CPU_KERNELS=xla) runs
every primitive through these programs (_backends/eager.py), and so does the lazy device of an
accelerator for a graph it has not compiled yet (a cold graph: _backends/lazy/interpreter.py's
`run_on_device`), so both share one cache: a primitive's program compiled for the eager device
serves a cold lazy graph, and the other way round. Each program is the primitive's lowering
(`Primitive.lowering` on jax's kernel namespace) under `jax.jit`; jax keeps one executable per
input shapes and dtypes in it.

The cache is an LRU bounded by X10ARRAY_EAGER_CACHE_SIZE; evicting a program frees its
executables and what jax kept from tracing it (lru.release_jax_traces).
"""

from __future__ import annotations

import functools
from typing import Any

from .kernels import jax_namespace
from .lru import LRU, release_jax_traces
from .primitive import Primitive
from .settings import get as get_setting

__all__ = ["jitted"]

# (primitive, parameters' key) -> its jitted program (see the module's docstring). The bound is
# the setting's value at each insertion; an eviction pass drops an eighth of it.
_JITTED = LRU(
    "op-by-op programs",
    functools.partial(get_setting, "X10ARRAY_EAGER_CACHE_SIZE"),
    batch=lambda bound: bound // 8,
    on_evict=lambda _: release_jax_traces(),
)


def jitted(prim: Primitive, key: tuple[Any, ...], params: tuple[tuple[str, Any], ...]) -> Any:
    """The jitted program of one (primitive, parameters), cached by the parameters' key
    (`primitive.params_key(params)`)."""
    fn = _JITTED.get((prim, key))
    if fn is None:
        fn = _JITTED.put((prim, key), make_jitted(prim, dict(params)))
    return fn


def make_jitted(prim: Primitive, kwargs: dict[str, Any]) -> Any:
    """A new jitted program of `prim` with the parameters `kwargs` (a module function, so that
    a test can count the programs made)."""
    import jax

    k = jax_namespace()
    lowering = prim.lowering

    def program(*bufs: Any) -> Any:
        return lowering(k, *bufs, **kwargs)

    program.__name__ = prim.name
    return jax.jit(program)
