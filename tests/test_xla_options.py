"""`_core.xla_options`: x10array's per-compile XLA options, per jaxlib version, that leave the
user's XLA_FLAGS alone and reach every compile of x10array's (the lazy programs)."""

from __future__ import annotations

import numpy as np

import x10array as xp
from x10array._core import xla_options
from x10array.extend import settings


def test_options_are_per_jaxlib_version_and_yield_to_xla_flags(monkeypatch):
    version = xla_options._jaxlib_version()
    monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {"xla_backend_optimization_level": 2})
    assert xla_options.compiler_options("cpu") == {"xla_backend_optimization_level": 2}
    assert xla_options.compiler_options("tpu") is None  # nothing measured there
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=1")
    assert xla_options.compiler_options("cpu") is None  # the user's flag wins
    monkeypatch.setitem(xla_options._MEASURED, ("0.0", "cpu"), {"xla_backend_optimization_level": 0})
    assert ("0.0", "cpu") != (version, "cpu")


def test_a_lazy_compile_passes_the_options(monkeypatch):
    """An invalid option makes XLA refuse the compile: proof that the lazy program got it
    (and the failed compile keeps the arrays pending, with their values after the fix)."""
    version = xla_options._jaxlib_version()
    lazy = xp.Device("cpu", 0, "xla")
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):
        # first with valid options: the subnormal probes of these operations (cached per
        # operation, for the process) are made now, so the bad option below fails no probe
        np.asarray(xp.tanh(xp.asarray(np.ones(3), device=lazy)) * 3.0 + 1.0)
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {"xla_cpu_experimental_ynn_fusion_type": "?"})
        host = np.arange(11.0) * 0.5  # another shape: another program, compiled now
        y = xp.tanh(xp.asarray(host, device=lazy)) * 3.0 + 1.0
        try:
            xp.lazy_barrier(wait=True)
        except Exception as e:  # noqa: BLE001 - XLA's error, wrapped or not
            assert "ynn_fusion_type" in str(e), e
        else:
            raise AssertionError("the option did not reach the compile")
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {})
        np.testing.assert_allclose(np.asarray(y), np.tanh(host) * 3.0 + 1.0, rtol=1e-15)
