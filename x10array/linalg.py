"""The `linalg` extension of the Array API standard (implemented in `x10array._api.linalg`)."""

from ._api.linalg import *  # noqa: F403
from ._api.linalg import __all__ as __all__
