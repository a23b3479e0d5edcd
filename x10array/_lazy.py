"""The lazy XLA backend (recording, materialization, barrier, compile cache).

Plugs into `_ops.bind` through `register_backend(Backend.XLA, ...)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array_object import Array
from ._device import Backend, Device
from ._dtypes import DType
from ._ops import Primitive, register_backend


class _NotYet:
    def run(self, prim: Primitive, device: Device, operands: tuple[Any, ...], params: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{prim.name}: the lazy XLA backend is not built yet ({device!r})")


def from_host(host: np.ndarray, dtype: DType, device: Device) -> Array:
    raise NotImplementedError(f"the lazy XLA backend is not built yet ({device!r})")


def materialize(x: Array) -> Any:
    raise NotImplementedError


register_backend(Backend.XLA, _NotYet())
