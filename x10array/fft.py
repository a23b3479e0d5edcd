"""The `fft` extension of the Array API standard (implemented in `x10array._api.fft`)."""

from ._api.fft import *  # noqa: F403
from ._api.fft import __all__ as __all__
