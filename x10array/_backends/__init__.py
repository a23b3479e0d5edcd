"""The backends: `eager` runs each primitive at once, `lazy` records graphs and runs them at
a barrier. Each registers its `_core.backend.BackendImpl` when imported; neither imports the
other or anything above `_core`."""

from . import eager as eager
from . import lazy as lazy
