"""array-api-extra on x10array: every function gives what it gives on array-api-strict.

Each case is a function of (namespace, inputs already in that namespace); it runs once on
array-api-strict (the reference) and once on each x10array device (eager, lazy), and the
results must agree in shape, dtype and value. array-api-extra reaches x10array through
array-api-compat's protocol (`__array_namespace__`), so these tests also exercise the
standard beyond our own functions: `at` updates use `__setitem__`, `nunique` / `setdiff1d`
data-dependent shapes, `lazy_apply` the NumPy round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _util import assert_values, dtype_name, host

import x10array as xp

xpx = pytest.importorskip("array_api_extra")
strict = pytest.importorskip("array_api_strict")

DEVICES = {
    "eager": xp.Device("cpu", 0, "eager"),
    "lazy": xp.Device("cpu", 0, "xla"),
}

rng = np.random.default_rng(1234)
F = rng.standard_normal((4, 5))
F3 = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(6)
W = np.array([0.0, 1e-9, 1.0, np.nan, np.inf, -2.5])
I = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
J = np.array([1, 5, 7, 9])
POS = np.abs(rng.standard_normal(6)) + 0.1
Z = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex128)
MASK = np.array([True, False, True, False, False, True])

CASES: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...], Any]] = {}


def case(name: str, fn: Callable[..., Any], *inputs: np.ndarray, reference: Any = strict) -> None:
    """`reference`: the namespace whose result is expected (array-api-strict, or NumPy through
    array-api-compat where array-api-strict refuses what the case does)."""
    assert name not in CASES, name
    CASES[name] = (fn, inputs, reference)


NUMPY = pytest.importorskip("array_api_compat.numpy")


def _deprecated(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Functions that array-api-extra deprecates (the standard has them now)."""
    with pytest.warns(DeprecationWarning, match="deprecated"):
        return fn(*args, **kwargs)


# -- creation / shape helpers --------------------------------------------------------------
case("atleast_nd-0d", lambda ns, x: xpx.atleast_nd(x, ndim=3), np.asarray(2.5))
case("atleast_nd-2d", lambda ns, x: xpx.atleast_nd(x, ndim=4), F)
case("atleast_nd-noop", lambda ns, x: xpx.atleast_nd(x, ndim=1), F3)
case("expand_dims", lambda ns, x: _deprecated(xpx.expand_dims, x, axis=(0, -1)), F)
case("expand_dims-mid", lambda ns, x: _deprecated(xpx.expand_dims, x, axis=(1, 3)), F)
case("create_diagonal", lambda ns, x: xpx.create_diagonal(x), V)
case("create_diagonal-offset", lambda ns, x: xpx.create_diagonal(x, offset=-2), V)
case("create_diagonal-batch", lambda ns, x: xpx.create_diagonal(x), F)
case("pad-int", lambda ns, x: xpx.pad(x, 2), F)
case("pad-pairs", lambda ns, x: xpx.pad(x, ((1, 0), (0, 3)), constant_values=-1.5), F)
case("diag_indices", lambda ns: xpx.diag_indices(4, xp=ns))
case("tril_indices", lambda ns: xpx.tril_indices(4, offset=-1, m=5, xp=ns))
case("triu_indices", lambda ns: xpx.triu_indices(4, offset=1, xp=ns))
case("broadcast_shapes", lambda ns: ns.asarray(_deprecated(xpx.broadcast_shapes, (4, 1), (1, 5), (5,))))
case("default_dtype", lambda ns: ns.zeros(2, dtype=xpx.default_dtype(ns, "integral")))
case("one_hot", lambda ns, x: xpx.one_hot(x, 10), I)
case("one_hot-axis0-float32", lambda ns, x: xpx.one_hot(x, 10, dtype=ns.float32, axis=0), I)

# -- elementwise --------------------------------------------------------------------------
case("sinc", lambda ns, x: xpx.sinc(x), np.array([-2.0, -0.5, 0.0, 0.25, 1.0, 3.5]))
case("sinc-float32", lambda ns, x: xpx.sinc(x), np.array([-2.0, 0.0, 0.5], dtype=np.float32))
case("isclose", lambda ns, a, b: xpx.isclose(a, b), V, V + 1e-9)
case("isclose-nan", lambda ns, a, b: xpx.isclose(a, b, equal_nan=True), W, W)
case("isclose-tol", lambda ns, a, b: xpx.isclose(a, b, rtol=0.1, atol=0.0), V, V * 1.05)
case("isclose-int", lambda ns, a, b: xpx.isclose(a, b), I, I[::-1])
case("isclose-complex", lambda ns, a, b: xpx.isclose(a, b), Z, Z + 1e-12)
case("nan_to_num", lambda ns, x: xpx.nan_to_num(x, fill_value=-7.0), W)
case("angle", lambda ns, z: xpx.angle(z), Z)
case("angle-deg", lambda ns, z: xpx.angle(z, deg=True), Z)
case("deg2rad", lambda ns, x: xpx.deg2rad(x), V)
case("rad2deg", lambda ns, x: xpx.rad2deg(x), V)
case(
    "apply_where",
    lambda ns, x: xpx.apply_where(x > 0, (x,), ns.sqrt, fill_value=-1.0),
    V,
)
case(
    "apply_where-two",
    lambda ns, x, y: xpx.apply_where(x > 0, (x, y), lambda a, b: a * b, lambda a, b: a - b),
    V,
    V[::-1],
)

# -- linear algebra / statistics ----------------------------------------------------------
case("kron", lambda ns, a, b: xpx.kron(a, b), F[:2, :3], F[2:, :2])
case("kron-1d", lambda ns, a, b: xpx.kron(a, b), V[:3], J.astype(np.float64))
case("cov", lambda ns, m: xpx.cov(m), F)
case("cov-axis0", lambda ns, m: xpx.cov(m, axis=0, correction=0), F)
case("cov-weights", lambda ns, m, w: xpx.cov(m, aweights=w), F, POS[:5])
case("cov-1d", lambda ns, m: xpx.cov(m), V)
case("nanmean", lambda ns, x: xpx.nanmean(x), W[:4])
case("nanmean-axis", lambda ns, x: xpx.nanmean(x, axis=0), np.where(F > 1, np.nan, F))
case("nansum", lambda ns, x: xpx.nansum(x, axis=1), np.where(F > 1, np.nan, F))
case("nanmax", lambda ns, x: xpx.nanmax(x, axis=1), np.where(F > 1, np.nan, F))
case("nanmin", lambda ns, x: xpx.nanmin(x), np.where(F > 1, np.nan, F))

# -- sets, sorting, searching -------------------------------------------------------------
case("nunique", lambda ns, x: ns.asarray(xpx.nunique(x)), I)
case("nunique-2d", lambda ns, x: ns.asarray(xpx.nunique(x)), I.reshape(2, 5))
case("setdiff1d", lambda ns, a, b: xpx.setdiff1d(a, b), I, J)
case("setdiff1d-unique", lambda ns, a, b: xpx.setdiff1d(a, b, assume_unique=True), np.unique(I), J)
case("union1d", lambda ns, a, b: xpx.union1d(a, b), I, J)
case("isin", lambda ns, a, b: xpx.isin(a, b), I, J)
case("isin-invert", lambda ns, a, b: xpx.isin(a, b, invert=True), I, J)
case("searchsorted", lambda ns, a, b: xpx.searchsorted(a, b), np.sort(V), V)
case("searchsorted-right", lambda ns, a, b: xpx.searchsorted(a, b, side="right"), np.sort(I), J)
case("partition", lambda ns, x: ns.sort(xpx.partition(x, 3)[:3]), V)
case("argpartition", lambda ns, x: ns.sort(ns.take(x, xpx.argpartition(x, 2)[:2])), V)
case("unravel_index", lambda ns, i: xpx.unravel_index(i, (3, 4)), np.array([0, 5, 11, 7]))


# -- at: out-of-place (and in-place) updates ----------------------------------------------
def _at(method: str, idx: Any, value: Any, copy: bool | None = None) -> Callable[..., Any]:
    def run(ns: Any, x: Any, *rest: Any) -> Any:
        index = idx(ns, x, *rest) if callable(idx) else idx
        result = getattr(xpx.at(x, index), method)(value, copy=copy)
        return result, x  # the original too: it must change only where copy allows it

    return run


case("at-set-int", _at("set", 2, 10.0, copy=True), V)
case("at-set-slice", _at("set", slice(1, 4), -1.0, copy=True), V)
case("at-set-mask", _at("set", lambda ns, x, m: m, 0.0, copy=True), V, MASK)
# array-api-strict refuses integer-array indices in __setitem__ (x10array, as NumPy, takes them)
case("at-set-array-index", _at("set", lambda ns, x, i: i, 3.0, copy=True), V, np.array([0, 5]), reference=NUMPY)
case("at-add-array-index", _at("add", lambda ns, x, i: i, 3.0, copy=True), F, np.array([3, 0]), reference=NUMPY)
case("at-add", _at("add", slice(None, None, 2), 1.5, copy=True), V)
case("at-subtract-mask", _at("subtract", lambda ns, x, m: m, 2.0, copy=True), V, MASK)
case("at-multiply-2d", _at("multiply", (slice(None), 1), 3.0, copy=True), F)
case("at-divide", _at("divide", 0, 4.0, copy=True), V)
case("at-power", _at("power", slice(2), 2.0, copy=True), V)
case("at-min", _at("min", slice(None), 0.0, copy=True), V)
case("at-max-mask", _at("max", lambda ns, x, m: m, 0.5, copy=True), V, MASK)
case("at-set-inplace", _at("set", 1, 99.0, copy=None), V)
case("at-add-inplace-mask", _at("add", lambda ns, x, m: m, 1.0, copy=None), V, MASK)
case("at-getitem-syntax", lambda ns, x: (xpx.at(x)[1:3].set(7.0, copy=True), x), V)


# -- lazy_apply: a NumPy function applied to arrays of any namespace ----------------------
def _np_cumsum_twice(a: np.ndarray) -> np.ndarray:
    return np.cumsum(a) * 2


case(
    "lazy_apply-numpy",
    lambda ns, x: xpx.lazy_apply(_np_cumsum_twice, x, shape=x.shape, dtype=x.dtype, as_numpy=True),
    V,
)


# -----------------------------------------------------------------------------------------


def _to(ns: Any, a: np.ndarray, device: Any) -> Any:
    # a private copy: namespaces that share NumPy memory would otherwise see in-place updates
    a = np.array(a, copy=True)
    return ns.asarray(a) if device is None else ns.asarray(a, device=device)


def _results(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("device_name", list(DEVICES))
@pytest.mark.parametrize("name", list(CASES))
def test_same_as_array_api_strict(name: str, device_name: str) -> None:
    fn, inputs, reference = CASES[name]
    device = DEVICES[device_name]
    expected = _results(fn(reference, *(_to(reference, a, None) for a in inputs)))
    args = [_to(xp, a, device) for a in inputs]
    # The device scope makes arrays that array-api-extra creates without `device=` (the
    # *_indices functions, Python scalars in `at(...).min/max`) land on the inputs' device.
    with xp.device_scope(device):
        actual = _results(fn(xp, *args))
    assert len(actual) == len(expected), name
    for i, (a, e) in enumerate(zip(actual, expected)):
        what = f"{name}[{i}] on {device_name}"
        assert type(a) is xp.Array, f"{what}: got {type(a).__name__}"
        assert a.device == device, f"{what}: on {a.device}, not {device}"
        assert a.dtype.name == dtype_name(e), f"{what}: dtype {a.dtype.name} != {e.dtype}"
        assert_values(host(a), host(e), what=what)


def test_namespace_and_lazy_detection() -> None:
    """array-api-extra finds x10array through array-api-compat's protocol."""
    from array_api_extra._lib._compat import array_namespace, is_lazy_array, is_writeable_array

    for device in DEVICES.values():
        x = xp.asarray(V, device=device)
        assert array_namespace(x) is xp
        assert is_writeable_array(x)
    assert not is_lazy_array(xp.asarray(V, device=DEVICES["eager"]))


def test_at_copy_false_writes_in_place() -> None:
    for device in DEVICES.values():
        x = xp.asarray(V, device=device)
        y = xpx.at(x, 0).set(-5.0, copy=False)
        assert y is x or np.array_equal(host(y), host(x))
        assert float(x[0]) == -5.0
