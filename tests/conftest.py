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


# -- which tests the floors' run and the parallel run treat specially ----------------------------
#
# The test modules whose behaviour depends on NumPy's or jax's version: `.ci/min-versions` runs
# these (`-m floors`) on the declared floors instead of the whole suite again. A module belongs
# here when it exercises an API or a result that a release of NumPy or jax changed or could
# change; the reason is beside each. (The others check x10array's own logic through these same
# APIs, which these modules already cover.)
FLOOR_MODULES = {
    "test_interop": "DLPack: NumPy's capsule import flags and copy=/device= keywords (2.1 reads capsules read-only)",
    "test_compile_cache": "jax's persistent compile-cache API (private jax._src modules)",
    "test_caches": "jax's trace and jit caches, released through jax._src",
    "test_xla_options": "the XLA compiler options jax's CPU client accepts",
    "test_devices": "jax's device and platform API, default backends",
    "test_eager_xla": "jax.jit per primitive, jax.enable_x64 as a context manager",
    "test_promotion": "NumPy's and jax's result types under x10array's promotion table",
    "test_numerics": "XLA's special values (jax 0.8.0 compiles a float32 floor_divide by zero to NaN)",
    "test_faults": "XLA's out-of-memory errors and buffer lifetimes (jax 0.8.0 keeps a refused graph alive)",
    "test_distributed": "jax's multi-device and multi-process API (jax.distributed, shardings)",
    "test_capture": "jax.jit's donation and replay of captured programs",
    "test_lazy": "jax.jit of whole lazy graphs, donation, device_put",
    "test_interpreter_blocks": "NumPy's summation order (2.1 sums some shapes in chunks)",
    "test_index_bounds": "NumPy's take_along_axis signature (2.1 requires the axis)",
    "test_differential": "NumPy's results as the reference of every function",
    "test_checkpoint": "NumPy's and ml_dtypes' bfloat16 and the safetensors format",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if os.path.dirname(str(item.path)) != here:
            continue  # (another project's tests run with this conftest loaded: array-api-extra's)
        if item.path.stem in FLOOR_MODULES:
            item.add_marker(pytest.mark.floors)
        if item.get_closest_marker("serial") is not None:
            # pytest-xdist's `--dist loadgroup` (pyproject.toml's addopts) runs one group on
            # one worker, in order: the serial tests never run beside each other
            item.add_marker(pytest.mark.xdist_group("serial"))
