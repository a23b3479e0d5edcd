"""scikit-learn's array-API dispatch on x10array, on the eager and the lazy device.

The checks are scikit-learn's own: `sklearn.utils.estimator_checks.check_array_api_input`
for estimators (fitted attributes and outputs in x10array, on the input's device, and with
`check_values=True` equal to the NumPy run), the `array_api_metric_checkers` of its metric
tests, and its LabelEncoder compliance test. `SCIPY_ARRAY_API=1` is set by conftest.py
before SciPy is imported. Everything skips cleanly without scikit-learn (the `sklearn`
extra).

The lazy-device metric sweep takes a few minutes and is marked slow; a sample of it runs by
default.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import x10array as xp

sklearn = pytest.importorskip("sklearn", minversion="1.9")
pytest.importorskip("scipy")

if os.environ.get("SCIPY_ARRAY_API") != "1":  # pragma: no cover - conftest sets it
    pytest.skip("SCIPY_ARRAY_API=1 must be set before SciPy is imported", allow_module_level=True)

from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import (  # noqa: E402
    LogisticRegression,
    PoissonRegressor,
    Ridge,
    RidgeClassifierCV,
    RidgeCV,
)
from sklearn.mixture import GaussianMixture  # noqa: E402
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline, make_union  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    Binarizer,
    KernelCenterer,
    MinMaxScaler,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.utils import all_estimators, get_tags  # noqa: E402
from sklearn.utils.estimator_checks import check_array_api_input  # noqa: E402

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = {"eager": EAGER, "lazy": LAZY}
DTYPES = ("float64", "float32")


@pytest.fixture(autouse=True)
def _quiet_sklearn_notes():
    # scikit-learn tells, as UserWarnings, which solver array-API dispatch picks and when
    # lbfgs stops at max_iter: notes about the estimator, not about x10array.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")
        warnings.filterwarnings("ignore", message=".*(lbfgs failed to converge|max_iter).*")
        # SciPy's note on the rank-deficient test data, in the NumPy reference fit
        warnings.filterwarnings("ignore", message="An ill-conditioned matrix detected")
        yield


# -- estimators ---------------------------------------------------------------------------

# (estimator, compare values with the NumPy run: True, False, or for this dtype only) The
# settings follow scikit-learn's own array-API tests
# (instance_generator.PER_ESTIMATOR_CHECK_PARAMS) plus a few variants.
ESTIMATORS: list[tuple[Any, bool | str]] = [
    (PCA(n_components=2, svd_solver="full"), True),
    (PCA(n_components=3, svd_solver="full", whiten=True), True),
    (PCA(n_components=2, svd_solver="covariance_eigh"), True),
    (PCA(n_components=2, svd_solver="randomized", power_iteration_normalizer="QR", random_state=0), True),
    (PCA(n_components=0.9, svd_solver="full"), True),
    # all 10 components of rank-deficient data: scikit-learn itself marks the values of this
    # check as an expected failure (`linalg.inv` of a singular matrix in score)
    (PCA(), False),
    (Ridge(), True),
    (Ridge(solver="svd", alpha=0.5, fit_intercept=False), True),
    (RidgeCV(), True),
    (RidgeCV(alphas=[0.1, 1.0, 10.0]), True),
    (RidgeClassifierCV(), True),
    (LinearDiscriminantAnalysis(), True),
    (LinearDiscriminantAnalysis(n_components=1), True),
    (LogisticRegression(max_iter=5), True),
    (LogisticRegression(C=0.5, max_iter=200), True),
    (PoissonRegressor(max_iter=5), True),
    (PoissonRegressor(alpha=0.5), True),
    (GaussianNB(), True),
    (StandardScaler(), True),
    (MinMaxScaler(), True),
    (Normalizer(), True),
    (Binarizer(), True),
    (KernelCenterer(), True),
    (PolynomialFeatures(), True),
    (Nystroem(), True),
    (Nystroem(kernel="poly", degree=2, n_components=10, random_state=0), True),
    (GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2, error_score="raise"), True),
    (GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=2, error_score="raise"), True),
    (RandomizedSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2, error_score="raise", random_state=0), True),
    (make_pipeline(StandardScaler(), Ridge()), True),
    (make_pipeline(MinMaxScaler(), LogisticRegression()), True),
    (make_union(StandardScaler(), PolynomialFeatures(degree=2)), True),
    *[
        (GaussianMixture(covariance_type=c, init_params=i, max_iter=5, n_init=2, random_state=0), True)
        for c in ("diag", "spherical")
        for i in ("random", "random_from_data")
    ],
    # "full" and "tied" are ill-conditioned on this rank-deficient data: their values depend
    # on the BLAS's rounding (OpenBLAS's kernel for the CPU, XLA's GEMM on the compiled tier)
    # far beyond scikit-learn's 2.2e-13, and its array-API code path rounds differently from
    # its NumPy path. On another x86 machine NumPy's and array-api-strict's scores differ by
    # 4.1e-11. So these are compared with array-api-strict (the same array-API path, NumPy
    # underneath) on the same machine, to STRICT_RTOL: see _check_against_array_api_strict.
    # "full" adds its regularization through a view (`covariances[k, :, :]`). In float32
    # array-api-strict's values differ from NumPy's too: values in float64 only.
    *[
        (GaussianMixture(covariance_type="full", init_params=i, max_iter=5, n_init=2, random_state=0), "strict-float64")
        for i in ("random", "random_from_data")
    ],
    (GaussianMixture(covariance_type="tied", init_params="random", max_iter=5, n_init=2, random_state=0),
     "strict-float64"),
]  # fmt: skip

# Relative tolerance of the comparison with array-api-strict for the ill-conditioned fits
# above. Measured: eager and interpreted results equal array-api-strict's bit for bit under
# the same OpenBLAS; every graph compiled (XLA's GEMM) differs by at most 1.5e-9 (relative to
# each attribute's largest magnitude) under OpenBLAS's Haswell, Zen, Sandybridge and Prescott
# kernels (OPENBLAS_CORETYPE). A wrong value (a lost write, a bad kernel) is off by far more.
STRICT_RTOL = 1e-6

# Lazy runs of these are slow (scipy's lbfgs loop: one graph per iteration)
SLOW_ON_LAZY = (GridSearchCV, RandomizedSearchCV)


def _estimator_params() -> Iterator[Any]:
    for device_name in DEVICES:
        for estimator, values in ESTIMATORS:
            marks = []
            if device_name == "lazy" and isinstance(estimator, SLOW_ON_LAZY):
                marks.append(pytest.mark.slow)
            name = repr(estimator).replace("\n", "").replace(" ", "")
            yield pytest.param(estimator, values, device_name, id=f"{name}-{device_name}", marks=marks)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("estimator, check_values, device_name", list(_estimator_params()))
def test_estimator_array_api_input(estimator: Any, check_values: bool | str, device_name: str, dtype_name: str) -> None:
    if not isinstance(estimator, Pipeline):  # Pipeline declares nothing, but works
        assert get_tags(estimator).array_api_support, f"{estimator} does not declare array-API support"
    check_array_api_input(
        type(estimator).__name__,
        estimator,
        array_namespace="x10array",
        device_name=DEVICES[device_name],
        dtype_name=dtype_name,
        check_values=check_values is True or check_values == dtype_name,
    )
    if check_values == f"strict-{dtype_name}":
        _check_against_array_api_strict(estimator, DEVICES[device_name], dtype_name)


def _check_against_array_api_strict(estimator: Any, device: xp.Device, dtype_name: str) -> None:
    """The values check of `check_array_api_input`, with array-api-strict's fit as the
    reference instead of NumPy's: the same data, the same array-API code path of
    scikit-learn, on this machine's BLAS. Fitted array attributes and the outputs of the
    estimator's methods agree to STRICT_RTOL (relative to the largest magnitude of each)."""
    import array_api_strict as strict
    from sklearn.base import clone
    from sklearn.datasets import make_classification
    from sklearn.utils.estimator_checks import set_random_state

    X, y = make_classification(n_samples=30, n_features=10, random_state=42)
    X = X.astype(dtype_name, copy=False)
    fits = {}
    for name, ns, dev in (("x10array", xp, device), ("array-api-strict", strict, None)):
        est = clone(estimator)
        set_random_state(est)
        X_ns, y_ns = ns.asarray(X, device=dev), ns.asarray(y, device=dev)
        with sklearn.config_context(array_api_dispatch=True):
            est.fit(X_ns, y_ns)
            outputs = {}
            for method in ("score", "score_samples", "predict", "predict_proba", "predict_log_proba", "transform"):
                if hasattr(est, method):
                    outputs[method] = getattr(est, method)(*((X_ns, y_ns) if method == "score" else (X_ns,)))
        attributes = {k: v for k, v in vars(est).items() if hasattr(v, "__array_namespace__")}
        fits[name] = {**attributes, **{f"{m}()": v for m, v in outputs.items()}}

    def host(v: Any) -> np.ndarray:
        return np.asarray(v._array) if isinstance(v, strict._array_object.Array) else np.asarray(v)

    ours, ref = fits["x10array"], fits["array-api-strict"]
    assert ours.keys() == ref.keys()
    for key in ref:
        a, b = host(ours[key]), host(ref[key])
        assert a.shape == b.shape and a.dtype == b.dtype, f"{key}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        scale = float(np.max(np.abs(b))) if b.size and b.dtype.kind == "f" else 0.0
        np.testing.assert_allclose(a, b, rtol=STRICT_RTOL, atol=STRICT_RTOL * scale, err_msg=key)


def test_every_array_api_estimator_is_covered() -> None:
    """A new scikit-learn that adds array-API support to an estimator shows up here."""
    covered = {type(e).__name__ for e, _ in ESTIMATORS} | {"LabelEncoder"}
    declared = set()
    warnings.simplefilter("ignore", FutureWarning)  # deprecated estimators
    for name, cls in all_estimators():
        try:
            if get_tags(cls()).array_api_support:
                declared.add(name)
        except (TypeError, AttributeError):  # meta-estimators need arguments
            continue
    assert declared <= covered, f"not tested: {sorted(declared - covered)}"


@pytest.mark.parametrize("device_name", list(DEVICES))
@pytest.mark.parametrize("y", [np.array([2, 1, 3, 1, 3]), np.array([1, 1, 4, 5, -1, 0]), np.array([3, 5, 9, 5, 9, 3])])
def test_label_encoder(y: np.ndarray, device_name: str) -> None:
    """LabelEncoder works on 1-D labels (check_array_api_input is for 2-D X): scikit-learn's
    own compliance test, run on x10array."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from sklearn.preprocessing.tests.test_label import test_label_encoder_array_api_compliance

    test_label_encoder_array_api_compliance(y, "x10array", DEVICES[device_name], "int64")


@pytest.mark.parametrize("device_name", list(DEVICES))
def test_fitted_estimator_stays_on_device(device_name: str) -> None:
    """The example of docs/sklearn.md: fitted attributes and predictions are x10array arrays
    on the input's device, equal to the NumPy fit."""
    from sklearn.datasets import make_regression

    device = DEVICES[device_name]
    X, y = make_regression(n_samples=200, n_features=8, noise=0.1, random_state=0)
    reference = make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("error")  # the page's example is quiet (solver="svd" named)
        model = make_pipeline(StandardScaler(), Ridge(alpha=1.0, solver="svd"))
        model.fit(xp.asarray(X, device=device), xp.asarray(y, device=device))
        pred = model.predict(xp.asarray(X, device=device))
    coef = model[-1].coef_
    assert type(coef) is xp.Array and coef.device == device and pred.device == device
    np.testing.assert_allclose(np.asarray(coef), reference[-1].coef_, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(pred), reference.predict(X), rtol=1e-10)


@pytest.mark.parametrize("device_name", list(DEVICES))
def test_calibrated_classifier_temperature_is_a_known_gap(device_name: str) -> None:
    """CalibratedClassifierCV(method="temperature") declares array-API support but calls the
    non-standard `predictions.reshape(-1, 1)` method (array-api-strict fails the same way)."""
    est = CalibratedClassifierCV(LogisticRegression(), method="temperature")
    with pytest.raises(AttributeError, match="reshape"):
        check_array_api_input("CalibratedClassifierCV", est, "x10array", device_name=DEVICES[device_name])


# -- metrics ------------------------------------------------------------------------------


def _metric_checkers() -> list[tuple[Any, Any]]:
    with warnings.catch_warnings():  # its module uses marks registered by scikit-learn's conftest
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from sklearn.metrics.tests.test_common import yield_metric_checker_combinations

    return list(yield_metric_checker_combinations())


def _metric_name(metric: Any) -> str:
    if hasattr(metric, "func"):  # functools.partial
        kw = ",".join(f"{k}={v}" for k, v in sorted(metric.keywords.items()))
        return f"{metric.func.__name__}({kw})"
    return metric.__name__


def _metric_params(lazy_sample_only: bool) -> Iterator[Any]:
    seen_on_lazy: set[str] = set()
    for device_name in DEVICES:
        for metric, checker in _metric_checkers():
            for dtype_name in DTYPES:
                name = _metric_name(metric)
                marks = []
                if device_name == "lazy":
                    base = name.split("(")[0]
                    # by default the lazy device runs each metric once (float64, first checker)
                    if dtype_name != "float64" or base in seen_on_lazy:
                        marks.append(pytest.mark.slow)
                    elif lazy_sample_only:
                        seen_on_lazy.add(base)
                yield pytest.param(
                    metric, checker, device_name, dtype_name,
                    id=f"{name}-{checker.__name__.removeprefix('check_array_api_')}-{device_name}-{dtype_name}",
                    marks=marks,
                )  # fmt: skip


@pytest.mark.parametrize("metric, checker, device_name, dtype_name", list(_metric_params(True)))
def test_metric(metric: Any, checker: Any, device_name: str, dtype_name: str) -> None:
    checker(metric, "x10array", DEVICES[device_name], dtype_name)


# -- what scikit-learn relies on beyond the letter of the standard ------------------------


@pytest.mark.parametrize("device_name", list(DEVICES))
def test_sklearn_array_api_helpers(device_name: str) -> None:
    from sklearn.utils._array_api import (
        _max_precision_float_dtype,
        device,
        get_namespace,
        get_namespace_and_device,
        move_to,
        supported_float_dtypes,
    )

    dev = DEVICES[device_name]
    x = xp.asarray(np.arange(6.0).reshape(2, 3), device=dev)
    with sklearn.config_context(array_api_dispatch=True):
        ns, is_array_api = get_namespace(x)
        assert ns is xp and is_array_api
        assert get_namespace_and_device(x)[2] == dev
        assert device(x) == dev
        assert _max_precision_float_dtype(xp, dev) == xp.float64
        assert xp.float32 in supported_float_dtypes(xp, dev)
        back = move_to(x, xp=np, device="cpu")
        assert isinstance(back, np.ndarray)
        np.testing.assert_array_equal(back, np.arange(6.0).reshape(2, 3))
        there = move_to(np.ones(3), xp=xp, device=dev)
        assert type(there) is xp.Array and there.device == dev
    # dtypes are hashable and the inspection API takes the device
    kinds = xp.__array_namespace_info__().dtypes(device=dev, kind="real floating")
    assert set(kinds.values()) == {xp.float32, xp.float64}
