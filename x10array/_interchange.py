"""DLPack export of arrays (`__dlpack__`, `__dlpack_device__`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array_object import Array


def dlpack_device(x: Array) -> tuple[Any, int]:
    data = x._data
    if type(data) is np.ndarray:
        return data.__dlpack_device__()
    return x._host().__dlpack_device__()


def dlpack_export(x: Array, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    host = x._host()
    if not copy:
        x._shared = True
    kwargs: dict[str, Any] = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    return host.__dlpack__(stream=stream, **kwargs)
