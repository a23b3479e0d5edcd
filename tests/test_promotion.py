"""Mixed-kind type promotion: the floating operand's dtype wins (bool < integer < real < complex).

The standard defines no promotion between kinds; x10array's rule (JAX's and PyTorch's) is in
`_core/dtypes.promote`, and every function that promotes goes through it: each case here runs
on the eager device (NumPy and XLA kernels) and on the lazy device (interpreted, and compiled
at once), and its value is NumPy's on operands cast to the result dtype first.
X10ARRAY_STRICT_PROMOTION=1 restores array-api-strict's TypeError (tests/test_errors.py lists
each refused call).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _util import check_doc_page

import x10array as xp
from x10array.autodiff import grad

DTYPES = [
    xp.bool,
    xp.int8,
    xp.int32,
    xp.int64,
    xp.uint8,
    xp.uint64,
    xp.float32,
    xp.float64,
    xp.complex64,
    xp.complex128,
]
RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def expected_promotion(a: Any, b: Any) -> Any:
    """The rule, written out independently of the implementation: between kinds, the dtype of
    the operand of the higher kind; within a kind, NumPy's (the standard's) answer."""
    ka, kb = np.dtype(a.name).kind, np.dtype(b.name).kind
    if RANK[ka] == RANK[kb] or {ka, kb} == {"f", "c"}:
        return None  # defined by the standard (real with complex too): tested in test_properties.py
    return a if RANK[ka] > RANK[kb] else b


@pytest.mark.parametrize("a", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("b", DTYPES, ids=lambda d: d.name)
def test_result_type_between_kinds(a: Any, b: Any) -> None:
    want = expected_promotion(a, b)
    if want is None:
        return
    assert xp.result_type(a, b) is want
    assert xp.result_type(b, a) is want


def test_can_cast_stays_within_kinds() -> None:
    """can_cast answers the standard's question (no cross-kind casts), whatever the rule."""
    assert not xp.can_cast(xp.int64, xp.float64)
    assert not xp.can_cast(xp.bool, xp.int8)
    assert xp.can_cast(xp.float32, xp.float64)


DEVICES = ["eager-numpy", "eager-xla", "lazy", "lazy-compiled"]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest, override_settings: Any) -> Any:
    """The device (and tier) a case runs on; the lazy tiers read their results at once."""
    if request.param == "eager-xla":
        old = xp.set_cpu_kernels("xla")
        yield xp.Device("cpu", 0)
        xp.set_cpu_kernels(old)
        return
    if request.param == "lazy-compiled":
        override_settings(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_COMPILE_PAYBACK=0)
    yield xp.Device("cpu", 0, "xla") if request.param.startswith("lazy") else xp.Device("cpu", 0)


RNG = np.random.default_rng(0)
I64 = RNG.integers(-5, 6, size=(3, 3)).astype(np.int64)
F32 = RNG.normal(size=(3, 3)).astype(np.float32)
F64 = RNG.normal(size=(3, 3))
C64 = (RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))).astype(np.complex64)
MASK = I64 > 0
I64_1D = I64[0]
F32_1D = np.sort(F32[0])


def f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


# (id, x10array call on placed operands, NumPy reference on host operands, result dtype)
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], Any]] = [
    ("add-int64-float32", lambda d: xp.add(d(I64), d(F32)), lambda: f32(I64) + F32, xp.float32),
    ("operator-float32-int64", lambda d: d(F32) * d(I64), lambda: F32 * f32(I64), xp.float32),
    ("subtract-bool-float64", lambda d: d(MASK) - d(F64), lambda: MASK.astype(np.float64) - F64, xp.float64),
    ("multiply-bool-int64", lambda d: d(MASK) * d(I64), lambda: MASK.astype(np.int64) * I64, xp.int64),
    ("add-int64-complex64", lambda d: d(I64) + d(C64), lambda: I64.astype(np.complex64) + C64, xp.complex64),
    ("divide-int64-float32", lambda d: xp.divide(d(I64), d(F32)), lambda: f32(I64) / F32, xp.float32),
    ("equal-int64-float32", lambda d: xp.equal(d(I64), d(F32)), lambda: f32(I64) == F32, xp.bool),
    ("maximum-bool-float32", lambda d: xp.maximum(d(MASK), d(F32)), lambda: np.maximum(f32(MASK), F32), xp.float32),
    ("matmul-int64-float32", lambda d: d(I64) @ d(F32), lambda: f32(I64) @ F32, xp.float32),
    ("tensordot-int64-float32", lambda d: xp.tensordot(d(I64), d(F32), axes=1), lambda: f32(I64) @ F32, xp.float32),
    ("vecdot-float32-int64", lambda d: xp.vecdot(d(F32), d(I64)), lambda: (F32 * f32(I64)).sum(-1), xp.float32),
    ("where-int64-float32", lambda d: xp.where(d(MASK), d(I64), d(F32)), lambda: np.where(MASK, f32(I64), F32),
     xp.float32),
    ("concat-int64-float32", lambda d: xp.concat([d(I64), d(F32)]), lambda: np.concatenate([f32(I64), F32]),
     xp.float32),
    ("stack-bool-float64", lambda d: xp.stack([d(MASK), d(F64)]), lambda: np.stack([MASK.astype(float), F64]),
     xp.float64),
    ("clip-float32-int-bound", lambda d: xp.clip(d(F32), d(I64) * 0), lambda: np.clip(F32, 0, None), xp.float32),
    ("searchsorted-float32-int64", lambda d: xp.searchsorted(d(F32_1D), d(I64_1D)),
     lambda: np.searchsorted(F32_1D, f32(I64_1D)), xp.int64),
    ("linalg.outer-int64-float32", lambda d: xp.linalg.outer(d(I64_1D), d(F32_1D)),
     lambda: np.outer(f32(I64_1D), F32_1D), xp.float32),
    ("linalg.cross-bool-float64", lambda d: xp.linalg.cross(d(MASK), d(F64)),
     lambda: np.cross(MASK.astype(np.float64), F64), xp.float64),
    ("diff-prepend-int-float", lambda d: xp.diff(d(F32), prepend=d(I64), axis=0),
     lambda: np.diff(np.concatenate([f32(I64), F32]), axis=0), xp.float32),
    ("scalar-int-array-float", lambda d: d(I64) * 0.5, lambda: I64 * 0.5, xp.float64),
    ("scalar-bool-array-int", lambda d: d(MASK) + 2, lambda: MASK.astype(np.int64) + 2, xp.int64),
    ("scalar-int-array-complex", lambda d: d(I64) - 1j, lambda: I64 - 1j, xp.complex128),
    ("scalar-float-array-bool", lambda d: d(F32) * True, lambda: F32 * np.float32(1), xp.float32),
]  # fmt: skip


@pytest.mark.parametrize(("call", "reference", "dtype"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_mixed_kinds_on_every_device(call: Callable[..., Any], reference: Callable[[], Any], dtype: Any,
                                     device: Any) -> None:  # fmt: skip
    out = call(lambda a: xp.asarray(a, device=device))
    assert out.dtype is dtype
    assert out.device == device
    want = reference()
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6 if dtype in (xp.float32, xp.complex64) else 1e-12)


def test_setitem_and_inplace_take_the_target_dtype(device: Any) -> None:
    x = xp.asarray(F32, device=device)
    x[0] = xp.asarray(I64[0], device=device)
    x += xp.asarray(MASK, device=device)
    want = F32.copy()
    want[0] = I64[0]
    want += MASK
    assert x.dtype is xp.float32
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-6)
    n = xp.asarray(I64, device=device)
    with pytest.raises(TypeError, match="^__iadd__|^in-place"):
        n += xp.asarray(F32, device=device)  # float32 cannot be stored in int64


def test_bool_with_bool_stays_the_standards(device: Any) -> None:
    """Mixed kinds only: a function that refuses bool keeps refusing two bool operands."""
    with pytest.raises(TypeError, match="^add"):
        xp.add(xp.asarray(MASK, device=device), xp.asarray(MASK, device=device))
    with pytest.raises(TypeError, match="^logical_and"):
        xp.logical_and(xp.asarray(MASK, device=device), xp.asarray(I64, device=device))


def test_gradient_through_a_mixed_kind_product(device: Any) -> None:
    """d/dx sum(x * n) = n, in x's dtype, with n an int64 array (autodiff's rules see the
    promoted operands)."""
    n = xp.asarray(I64, device=device)

    def f(x: Any) -> Any:
        return xp.sum(x * n + xp.asarray(MASK, device=device) * x)

    g = grad(f)(xp.asarray(F32, device=device))
    assert g.dtype is xp.float32
    np.testing.assert_allclose(np.asarray(g), f32(I64) + f32(MASK))


@pytest.mark.parametrize(("call", "reference", "dtype"), [c[1:] for c in CASES[:12]], ids=[c[0] for c in CASES[:12]])
def test_strict_setting_refuses_mixed_kinds(call: Callable[..., Any], reference: Any, dtype: Any,
                                            override_settings: Any) -> None:  # fmt: skip
    override_settings(X10ARRAY_STRICT_PROMOTION=True)
    with pytest.raises(TypeError, match="promotion|can only be combined|dtypes"):
        call(lambda a: xp.asarray(a, device=xp.Device("cpu", 0, "xla")))


def test_the_docs_page_runs_and_prints_what_it_shows() -> None:
    check_doc_page(Path(__file__).resolve().parents[1] / "docs" / "promotion.md", min_blocks=2)
