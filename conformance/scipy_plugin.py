"""A pytest plugin that runs SciPy's own array-API tests on x10array.

SciPy's tests (they ship in the scipy wheel) take the array namespace from the `xp` fixture of
`scipy/conftest.py`, parametrized over the libraries it knows (NumPy, array-api-strict, JAX,
...). This plugin replaces those parameters with x10array alone, so that one process runs one
backend, and tells SciPy's skip markers that x10array is a non-NumPy backend (so that
`skip_xp_backends(np_only=True)` skips it, as it skips array-api-strict):

    SCIPY_ARRAY_API=1 python -m pytest -c conformance/scipy-pytest.ini \
        -p conformance.scipy_plugin --pyargs scipy.signal -m array_api_backends

The device is x10array's default one: eager, or the lazy device with
`X10ARRAY_DEFAULT_DEVICE=xla` (every graph compiled: also `X10ARRAY_COMPILE_THRESHOLD=1`).
`XP_BACKEND=array_api_strict` runs the same tests on array-api-strict instead (the baseline:
SciPy's own parameter, nothing replaced). The tests listed in conformance/downstream-xfails.txt
for this device are marked xfail. conformance/downstream.py runs the modules one by one and
counts; docs/scipy-devices.md has the counts. Nothing of SciPy is copied.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

BACKEND = os.environ.get("XP_BACKEND", "x10array")
if BACKEND == "x10array":
    # SciPy's array-API mode must be on before SciPy is first imported.
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
elif BACKEND in ("array_api_strict", "numpy"):
    os.environ["SCIPY_ARRAY_API"] = f'["{BACKEND}"]'  # scipy/conftest.py's own selection
else:
    raise ValueError(f"XP_BACKEND must be x10array, array_api_strict or numpy, got {BACKEND!r}")

sys.path.insert(0, str(Path(__file__).parent))
import downstream_xfails  # noqa: E402


def _x10array_param() -> Any:
    import x10array

    return pytest.param(x10array, id="x10array", marks=pytest.mark.array_api_backends)


def pytest_plugin_registered(plugin: Any) -> None:
    # scipy/conftest.py builds its skip reasons over `xp_known_backends`: a backend outside it
    # is never skipped, not even by np_only=True. x10array is a CPU, eager-capable backend.
    if BACKEND == "x10array" and getattr(plugin, "__name__", None) == "scipy.conftest":
        plugin.xp_known_backends.add("x10array")


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if BACKEND != "x10array":
        return
    for fixturedef in metafunc._arg2fixturedefs.get("xp", ()):
        if fixturedef.func.__module__ == "scipy.conftest" and fixturedef.params is not None:
            if fixturedef.ids != ("x10array",):
                fixturedef.params = (_x10array_param(),)  # type: ignore[misc]
                fixturedef.ids = ("x10array",)  # type: ignore[misc]
    for fixturedef in metafunc._arg2fixturedefs.get("devices", ()):
        # SciPy's `devices` fixture writes `xp.__array_namespace_info__().devices() + [None]`:
        # the 2024.12 standard's list. 2025.12 (x10array's) returns a tuple, so the harness
        # takes the upstream-ready fix, `[*devices(), None]` (docs/scipy-devices.md).
        if fixturedef.func.__module__ == "scipy.conftest" and fixturedef.func is not _devices:
            fixturedef.func = _devices  # type: ignore[misc]


def _devices(xp: Any) -> list[Any]:
    return [*xp.__array_namespace_info__().devices(), None]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if BACKEND == "x10array":
        downstream_xfails.mark(items, "scipy")
