"""x10array: the Python Array API standard (2025.12) on eager and lazy XLA devices."""

__array_api_version__ = "2025.12"

import sys as _sys

from . import (
    _dispatch,
    _lazy,  # noqa: F401  (registers the XLA backend)
)
from . import fft as fft
from . import linalg as linalg
from ._array_object import Array as Array
from ._constants import *  # noqa: F403
from ._creation_functions import *  # noqa: F403
from ._data_type_functions import *  # noqa: F403
from ._device import Backend as Backend
from ._device import Device as Device
from ._device import DeviceKind as DeviceKind
from ._device import device_scope as device_scope
from ._dtypes import bool as bool  # noqa: A004
from ._dtypes import complex64 as complex64
from ._dtypes import complex128 as complex128
from ._dtypes import float32 as float32
from ._dtypes import float64 as float64
from ._dtypes import int8 as int8
from ._dtypes import int16 as int16
from ._dtypes import int32 as int32
from ._dtypes import int64 as int64
from ._dtypes import uint8 as uint8
from ._dtypes import uint16 as uint16
from ._dtypes import uint32 as uint32
from ._dtypes import uint64 as uint64
from ._eager import set_cpu_kernels as set_cpu_kernels
from ._elementwise_functions import *  # noqa: F403
from ._indexing_functions import *  # noqa: F403
from ._info import __array_namespace_info__ as __array_namespace_info__
from ._lazy import lazy_barrier as lazy_barrier
from ._linear_algebra_functions import *  # noqa: F403
from ._manipulation_functions import *  # noqa: F403
from ._metrics import metrics as metrics
from ._metrics import metrics_report as metrics_report
from ._metrics import reset_metrics as reset_metrics
from ._searching_functions import *  # noqa: F403
from ._set_functions import *  # noqa: F403
from ._sorting_functions import *  # noqa: F403
from ._statistical_functions import *  # noqa: F403
from ._utility_functions import *  # noqa: F403

# Every public array function also accepts autodiff tracers of x10array arrays (see _dispatch).
_dispatch.wrap_namespace(_sys.modules[__name__], [_n for _n in dir() if not _n.startswith("_")], "", _wrapped := {})
_dispatch.wrap_namespace(linalg, linalg.__all__, "linalg.", _wrapped)
_dispatch.wrap_namespace(fft, fft.__all__, "fft.", _wrapped)
del _wrapped
