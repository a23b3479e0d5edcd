"""The public extension API: what code building on x10array may use beyond the standard.

`nn`, `optim`, `autodiff`, `datasets` and `examples` import x10array's public namespace and
this module only (a test checks it).
"""

from __future__ import annotations

from ._api.operators import OPERATORS as _OPERATORS
from ._core import settings as settings
from ._core.dispatch import register_tracer as register_tracer

__all__ = ["settings", "register_tracer", "operator_table"]


def operator_table() -> tuple[tuple[str, str, bool, bool], ...]:
    """The array object's binary operators: (operator, the standard function it calls, has a
    reflected form, has an in-place form), e.g. ("add", "add", True, True) for `__add__`."""
    return tuple((op, fn.__name__, reflected, inplace) for op, fn, reflected, inplace in _OPERATORS)
