"""A pytest plugin that adds x10array to scikit-learn's own array-API tests.

scikit-learn parametrizes those tests over a fixed list of namespaces, devices and dtypes
(`sklearn.utils._array_api.yield_namespace_device_dtype_combinations`, and
`yield_namespaces` for a few). This plugin wraps both, before scikit-learn's test modules
are imported, so that they also yield x10array on its eager and its lazy CPU device, in
float64 and float32; their test ids then contain `x10array`:

    python -m pytest --pyargs sklearn -p conformance.sklearn_plugin -k x10array

(run from the repository root: `-p` imports this file as `conformance.sklearn_plugin`).
`-k "x10array and xla"` or `-k "x10array and eager"` picks one device. docs/sklearn.md has
the counts. Nothing of scikit-learn is copied: the tests are scikit-learn's, installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

# SciPy's array-API mode must be on before SciPy is first imported (scikit-learn skips its
# array-API tests otherwise).
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import sklearn.utils._array_api as _array_api  # noqa: E402

DEVICES = ("cpu:0:eager", "cpu:0:xla")
DTYPES = ("float64", "float32")

_combinations = _array_api.yield_namespace_device_dtype_combinations
_namespaces = _array_api.yield_namespaces


def yield_namespace_device_dtype_combinations(include_numpy_namespaces: bool = True) -> Iterator[tuple]:
    """scikit-learn's combinations, then x10array's: (namespace, device string, dtype)."""
    for combination in _combinations(include_numpy_namespaces=include_numpy_namespaces):
        if combination[0] != "x10array":  # scikit-learn's own, which asks yield_namespaces below
            yield combination
    for device in DEVICES:
        for dtype in DTYPES:
            yield "x10array", device, dtype


def yield_namespaces(include_numpy_namespaces: bool = True) -> Iterator[str]:
    """scikit-learn's namespaces, then x10array (on its default device)."""
    yield from _namespaces(include_numpy_namespaces=include_numpy_namespaces)
    yield "x10array"


_array_api.yield_namespace_device_dtype_combinations = yield_namespace_device_dtype_combinations
_array_api.yield_namespaces = yield_namespaces
