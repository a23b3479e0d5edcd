"""Test configuration for x10array.

Four host (CPU) devices are forced before jax is imported, so that device-mismatch and
device-copy tests have two distinct eager devices: ``Device("cpu", 0)`` and ``Device("cpu", 1)``.
"""

from __future__ import annotations

import contextlib
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
# scikit-learn's array-API dispatch needs SciPy in array-API mode, set before SciPy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
# The persistent compile cache is off in the test session (and the subprocesses it starts): tests
# never write to the user's ~/.cache, and a program compiled by one test is not loaded by the
# next. Tests of the cache give it a temporary directory of their own.
os.environ["X10ARRAY_COMPILE_CACHE_DIR"] = "0"

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# "default": quick enough for every run; "thorough": for a longer local or nightly run
# (X10ARRAY_HYPOTHESIS_PROFILE=thorough python -m pytest -m "slow or not slow").
settings.register_profile("default", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("X10ARRAY_HYPOTHESIS_PROFILE", "default"))

import x10array as xp  # noqa: E402
from x10array._core import settings as x10_settings  # noqa: E402

KERNELS = ("numpy", "xla")


@pytest.fixture(params=KERNELS)
def kernels(request: pytest.FixtureRequest):
    """Run the test once with NumPy eager CPU kernels and once with XLA op-by-op kernels."""
    old = xp.set_cpu_kernels(request.param)
    try:
        yield request.param
    finally:
        xp.set_cpu_kernels(old)


@pytest.fixture
def xla_kernels():
    old = xp.set_cpu_kernels("xla")
    try:
        yield
    finally:
        xp.set_cpu_kernels(old)


@pytest.fixture
def override_settings():
    """`override_settings(X10ARRAY_NAME=value, ...)`: x10array settings changed until the end
    of the test (`settings.override`, entered now and left at teardown)."""
    with contextlib.ExitStack() as stack:
        yield lambda **values: stack.enter_context(x10_settings.override(**values))


@pytest.fixture
def cpu0() -> xp.Device:
    return xp.Device("cpu", 0)


@pytest.fixture
def cpu1() -> xp.Device:
    return xp.Device("cpu", 1)


@pytest.fixture(autouse=True)
def _kernels_restored():
    """A test that switches the CPU kernels must switch them back."""
    before = xp.set_cpu_kernels("numpy")
    xp.set_cpu_kernels(before)
    yield
    after = xp.set_cpu_kernels(before)
    assert after == before, f"the test left the eager CPU kernels set to {after!r}"
