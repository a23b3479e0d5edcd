"""SciPy's array-API functions on arrays placed explicitly on the lazy device.

A representative set of the rows of docs/scipy-devices.md (made by tools/scipy_devices.py):
functions SciPy implements with the standard keep the lazy device; functions SciPy computes
with NumPy return `xp.asarray(out)` without a device, an uncommitted array on the default
device, which joins the lazy device when combined with a lazy array, and lands there at once
inside `device_scope(lazy)` (docs/devices.md). `SCIPY_ARRAY_API=1` is set by conftest.py
before SciPy is imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import x10array as xp

if os.environ.get("SCIPY_ARRAY_API") != "1":  # pragma: no cover - conftest sets it
    pytest.skip("SCIPY_ARRAY_API=1 must be set before SciPy is imported", allow_module_level=True)

import scipy.fft  # noqa: E402
import scipy.ndimage  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

LAZY = xp.Device("cpu", 0, "xla")
SAMPLE = np.linspace(0.15, 0.85, 16) ** 1.5


def lazy() -> xp.Array:
    return xp.asarray(SAMPLE, device=LAZY)


def test_ttest_1samp_with_a_python_float_popmean() -> None:
    """The issue's example: SciPy makes xp.asarray(0.0) on the default device and subtracts it."""
    result = scipy.stats.ttest_1samp(lazy(), 0.0)
    want = scipy.stats.ttest_1samp(SAMPLE, 0.0)
    assert result.statistic.device == LAZY and result.statistic._committed
    assert result.pvalue.device == LAZY or not result.pvalue._committed  # from SciPy's NumPy fallback
    np.testing.assert_allclose([float(result.statistic), float(result.pvalue)], [want.statistic, want.pvalue])
    with xp.device_scope(LAZY):
        scoped = scipy.stats.ttest_1samp(lazy(), 0.0)
    assert scoped.statistic.device == LAZY and scoped.pvalue.device == LAZY


def test_erf_result_follows_the_lazy_array() -> None:
    x = lazy()
    e = scipy.special.erf(x)  # SciPy: np.asarray(x), then xp.asarray(out) without device=
    np.testing.assert_allclose(np.asarray(e), scipy.special.erf(SAMPLE))
    assert not e._committed
    combined = e * x
    assert combined.device == LAZY
    np.testing.assert_allclose(np.asarray(combined), scipy.special.erf(SAMPLE) * SAMPLE)
    with xp.device_scope(LAZY):
        assert scipy.special.erf(x).device == LAZY


# functions SciPy implements with the standard's functions: the result stays on the lazy device
NATIVE: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = [
    ("fft.fft", scipy.fft.fft, lambda r: r),
    ("fft.rfft", scipy.fft.rfft, lambda r: r),
    ("special.logsumexp", scipy.special.logsumexp, lambda r: r),
    ("special.softmax", scipy.special.softmax, lambda r: r),
    ("stats.pearsonr", lambda x: scipy.stats.pearsonr(x, x**2), lambda r: r.statistic),
    ("stats.zscore", scipy.stats.zscore, lambda r: r),
    ("stats.moment", lambda x: scipy.stats.moment(x, order=3), lambda r: r),
    ("stats.skew", scipy.stats.skew, lambda r: r),
]


@pytest.mark.parametrize(("call", "pick"), [n[1:] for n in NATIVE], ids=[n[0] for n in NATIVE])
def test_array_api_functions_keep_the_lazy_device(call: Callable[[Any], Any], pick: Callable[[Any], Any]) -> None:
    out = pick(call(lazy()))
    assert out.device == LAZY
    np.testing.assert_allclose(np.asarray(out), np.asarray(pick(call(SAMPLE))), rtol=1e-10, atol=1e-12)


# functions SciPy computes with NumPy: an uncommitted result, which follows the lazy arrays
FALLBACK: list[tuple[str, Callable[[Any], Any]]] = [
    ("signal.convolve", lambda x: scipy.signal.convolve(x, x)),
    ("ndimage.gaussian_filter", lambda x: scipy.ndimage.gaussian_filter(x, 2)),
    ("special.gammaln", scipy.special.gammaln),
]


@pytest.mark.parametrize("call", [f[1] for f in FALLBACK], ids=[f[0] for f in FALLBACK])
def test_numpy_fallbacks_give_uncommitted_results(call: Callable[[Any], Any]) -> None:
    out = call(lazy())
    assert not out._committed
    assert (out + xp.asarray(0.0, device=LAZY)).device == LAZY
    np.testing.assert_allclose(np.asarray(out), call(SAMPLE))
    with xp.device_scope(LAZY):
        assert call(lazy()).device == LAZY
