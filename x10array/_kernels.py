"""Kernel namespaces: the `k` every primitive's kernel is written against.

`NUMPY` wraps NumPy (the eager CPU backend); `jax_namespace()` wraps `jax.numpy` and `lax`
(used inside `jax.jit`, op by op on eager accelerators and as the lowering of lazy graphs).
Both expose the NumPy API under the same names, `k.linalg`, `k.fft`, and a handful of
helpers where the two libraries differ; `k.is_jax` lets a kernel branch where it must.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np


def _numpy_index_update(x: np.ndarray, index: Any, value: Any) -> np.ndarray:
    # The eager executor hands over a buffer this array owns alone (copy on write).
    x[index] = value
    return x


NUMPY = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
NUMPY.is_jax = False
NUMPY.index_update = _numpy_index_update
NUMPY.lax = None


_INT64_MAX = 2**63 - 1


def jax_operand(value: Any) -> Any:
    """An operand as jax may take it: a Python int beyond int64 (next to a uint64 array)
    would overflow jax's scalar conversion, so it travels as a NumPy uint64."""
    if type(value) is int and value > _INT64_MAX:
        return np.uint64(value)
    return value


@functools.cache
def jax_namespace() -> types.SimpleNamespace:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def index_update(x: Any, index: Any, value: Any) -> Any:
        return x.at[index].set(value)

    ns = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("__")})
    ns.is_jax = True
    ns.index_update = index_update
    ns.lax = lax
    ns.jax = jax
    # jax.numpy has no errstate; kernels may use `with k.errstate(...)` on both.
    ns.errstate = lambda **kw: _NULL
    return ns


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL = _Null()
