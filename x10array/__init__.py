"""x10array: the Python Array API standard (2025.12) on eager and lazy XLA devices.

This module assembles the namespace: the standard's chapters from `_api`, the devices and
dtypes from `_core`, and the two backends (`_backends`), imported here so that they register
themselves with `_core.backend`.
"""

__array_api_version__ = "2025.12"

import sys as _sys

from . import _backends  # noqa: F401  (the eager and lazy backends register themselves)
from . import debug as debug
from . import fft as fft
from . import linalg as linalg
from ._api import operators as _operators
from ._api.constants import *  # noqa: F403
from ._api.creation import *  # noqa: F403
from ._api.data_types import *  # noqa: F403
from ._api.devices import lazy_barrier as lazy_barrier
from ._api.devices import set_cpu_kernels as set_cpu_kernels
from ._api.elementwise import *  # noqa: F403
from ._api.indexing_functions import *  # noqa: F403
from ._api.info import __array_namespace_info__ as __array_namespace_info__
from ._api.linear_algebra import *  # noqa: F403
from ._api.manipulation import *  # noqa: F403
from ._api.searching import *  # noqa: F403
from ._api.sets import *  # noqa: F403
from ._api.sorting import *  # noqa: F403
from ._api.statistical import *  # noqa: F403
from ._api.utility import *  # noqa: F403
from ._capture import compile as compile  # noqa: A004
from ._core import dispatch as _dispatch
from ._core.array import Array as Array
from ._core.devices import Backend as Backend
from ._core.devices import Device as Device
from ._core.devices import DeviceKind as DeviceKind
from ._core.devices import device_scope as device_scope
from ._core.dtypes import bool as bool  # noqa: A004
from ._core.dtypes import complex64 as complex64
from ._core.dtypes import complex128 as complex128
from ._core.dtypes import float32 as float32
from ._core.dtypes import float64 as float64
from ._core.dtypes import int8 as int8
from ._core.dtypes import int16 as int16
from ._core.dtypes import int32 as int32
from ._core.dtypes import int64 as int64
from ._core.dtypes import uint8 as uint8
from ._core.dtypes import uint16 as uint16
from ._core.dtypes import uint32 as uint32
from ._core.dtypes import uint64 as uint64
from ._core.metrics import metrics as metrics
from ._core.metrics import metrics_report as metrics_report
from ._core.metrics import reset_metrics as reset_metrics
from ._core.transfers import TransferGuardError as TransferGuardError
from ._core.transfers import transfer_guard as transfer_guard

_operators.install()

# Every public array function also accepts autodiff tracers of x10array arrays (see _core.dispatch).
_wrapped: dict[int, object] = {}
_dispatch.wrap_namespace(_sys.modules[__name__], [_n for _n in dir() if not _n.startswith("_")], "", _wrapped)
_dispatch.wrap_namespace(linalg, linalg.__all__, "linalg.", _wrapped)
_dispatch.wrap_namespace(fft, fft.__all__, "fft.", _wrapped)
del _wrapped
