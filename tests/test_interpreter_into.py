"""The interpreter writes the result of a one-ufunc step (policies.INTERPRETER_UFUNCS: add,
subtract, multiply, negative, exp on real, integer and boolean operands) into an operand's
buffer that nothing reads afterwards, instead of a new buffer (interpreter.NumpySteps._into):
the same NumPy loop on the same operands, so the same bits; never into a value that is an
output, that a live view shows, or that a later step reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import x10array as xp
from x10array._backends.lazy import interpreter as _interpreter
from x10array._backends.lazy import tiering as _tiering
from x10array._core.policies import INTERPRETER_UFUNCS

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0)


@pytest.fixture(autouse=True)
def _interpreted(monkeypatch: pytest.MonkeyPatch) -> Any:
    # (small arrays here: every result size written into, see the threshold's own test below)
    monkeypatch.setattr(_interpreter, "_INTO_BYTES", 0)
    # (and no chain strip-mined, whose block buffers take no result: tests/test_interpreter_blocks.py)
    monkeypatch.setattr(_interpreter, "_BLOCK_BYTES", 1 << 62)
    with _tiering.compile_threshold(None):
        yield


def _operands(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(64) > 0.5
    if dtype.kind in "iu":
        return rng.integers(-50 if dtype.kind == "i" else 0, 50, 64).astype(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 700.0, -745.5], dtype=np.float64)
    return np.concatenate([rng.standard_normal(64 - special.size) * 10, special]).astype(dtype)


@pytest.mark.parametrize("prim", list(INTERPRETER_UFUNCS), ids=lambda p: p.name)
def test_each_rule_is_its_kernel_on_the_interpreter_namespace(prim: Any) -> None:
    """Each rule's ufunc gives its kernel's bits on the interpreter's namespace, for every
    operand kind the rule is used on (arrays of one dtype, an array and a Python scalar)."""
    ufunc: Any = INTERPRETER_UFUNCS.get(prim)
    rng = np.random.default_rng(0)
    ns = _interpreter._NUMPY_TIERED
    for dtype in (np.float64, np.float32, np.int32, np.uint8, np.bool_):
        a, b = _operands(np.dtype(dtype), rng), _operands(np.dtype(dtype), rng)
        cases: list[tuple[Any, ...]] = [(a, b), (a, 3.5), (a, 2)] if ufunc.nin == 2 else [(a,)]
        for args in cases:
            with np.errstate(all="ignore"):
                try:
                    want = prim.kernel(ns, *args)
                except TypeError:  # (bool subtract, negative: refused by the kernel and the ufunc alike)
                    with pytest.raises(TypeError):
                        ufunc(*args)
                    continue
                got = ufunc(*args)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (prim.name, dtype, args[1:])


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each ufunc call of the interpreter that writes into an operand."""
    into: list[str] = []
    for prim, ufunc in list(_interpreter._UFUNCS.items()):

        def call(*args: Any, _u: Any = ufunc, _name: str = prim.name, **kw: Any) -> Any:
            out = kw.get("out")
            assert out is not None and any(out is a for a in args)
            into.append(_name)
            return _u(*args, **kw)

        call.resolve_dtypes = ufunc.resolve_dtypes  # type: ignore[attr-defined]
        monkeypatch.setitem(_interpreter._UFUNCS, prim, call)
    return into


def chain(device: xp.Device, x: np.ndarray) -> list[np.ndarray]:
    a = xp.asarray(x, device=device)
    # (temporaries no name holds: the sum into the product's buffer, negative and exp into
    # the sum's, the square of e into its own operand, read twice, the difference into that)
    e = xp.exp(-((a * 2.0) + 1.0))
    r = (e * 1.5) ** 2 - a  # (x ** 2 is recorded as x * x: one operand read twice)
    held = a * 3.0  # an output (held): its reader must not write into it
    s = held + 1.0
    t = a * 0.5
    view = t[:2]  # a live view of t: the step reading t must not write into it
    u = t + 1.0
    row = xp.asarray(x[:1], device=device)
    v = (a * 1.5) + row  # (a broadcast operand: the result has the product's shape)
    return [np.asarray(z) for z in (e, r, held, s, view, u, v)]


def test_a_dead_operand_takes_the_result_with_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(1).standard_normal((40, 8))
    eager = chain(EAGER, x)
    into = _spy(monkeypatch)
    got = chain(LAZY, x)
    # written into dead operands: the sum, negative, exp, the square, the difference
    assert sorted(into) == ["add", "exp", "multiply", "negative", "subtract"], into
    monkeypatch.setattr(_interpreter, "_UFUNCS", {})  # (every step into a new buffer)
    fresh = chain(LAZY, x)
    for g, f, e in zip(got, fresh, eager, strict=True):
        assert g.tobytes() == f.tobytes() == e.tobytes()


def test_an_output_or_a_viewed_value_is_never_written_into(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(12.0).reshape(3, 4)
    into = _spy(monkeypatch)
    a = xp.asarray(x, device=LAZY)
    held = a * 3.0
    s = held + 1.0  # (held's last use, but an output)
    t = a * 0.5
    view = t[:2]
    u = t + 1.0  # (t's last use, but a live view shows it)
    xp.lazy_barrier()
    assert into == []
    np.testing.assert_array_equal(np.asarray(held), x * 3.0)
    np.testing.assert_array_equal(np.asarray(s), x * 3.0 + 1.0)
    np.testing.assert_array_equal(np.asarray(view), (x * 0.5)[:2])
    np.testing.assert_array_equal(np.asarray(u), x * 0.5 + 1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.bool_, np.complex128])
def test_count_nonzero_over_every_axis_counts_as_the_sum_of_nonzero_does(dtype: Any) -> None:
    """count_nonzero over every axis takes NumPy's count on the NumPy kernel namespaces (the
    eager device, the interpreter): the same integer as the sum of `x != 0` it replaced, for
    NaN, -0.0 and subnormals (kept by the interpreter, as NumPy keeps them), with keepdims,
    and on a 0-d array."""
    from x10array._api import searching

    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 7)).astype(dtype)
    if x.dtype.kind in "fc":
        x.flat[:5] = [np.nan, -0.0, 0.0, 5e-324 if x.dtype.itemsize >= 8 else 1e-40, np.inf]
    else:
        x.flat[:5] = 0
    ns = _interpreter._NUMPY_TIERED
    for arr in (x, x[0], np.asarray(x.flat[3])):
        axes = tuple(range(arr.ndim))
        for keepdims in (False, True):
            want = np.sum(arr != 0, axis=axes, keepdims=keepdims, dtype=np.int64)
            got = searching._COUNT_NONZERO.kernel(ns, arr, axes=axes, keepdims=keepdims)
            assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.int64
            assert np.array_equal(got, want)
        for dev in (EAGER, LAZY):
            count = int(xp.count_nonzero(xp.asarray(arr, device=dev)))
            assert count == int(np.sum(arr != 0))  # (the lazy device interprets this one-operation graph)


def _flushed(a: np.ndarray) -> np.ndarray:
    """`a` with its subnormals (of either part) zero, as the lazy tiers read an operand."""
    if a.dtype.kind == "c":
        return _flushed(a.real) + 1j * _flushed(a.imag)
    if a.dtype.kind != "f":
        return a
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, 0, a)


def test_only_a_result_of_64_kib_or_more_is_written_into(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below _INTO_BYTES a fresh buffer comes from the allocator's free lists: no dead operand
    is looked for (a raw step does not even call _into: its first array operand is too small);
    from it on, one is (the same bits either way, the test above)."""
    monkeypatch.setattr(_interpreter, "_INTO_BYTES", 1 << 16)
    into = _spy(monkeypatch)
    looked: list[int] = []
    real = _interpreter.NumpySteps._into
    monkeypatch.setattr(_interpreter.NumpySteps, "_into", lambda self, i, *a: looked.append(i) or real(self, i, *a))
    for n, want, looks in ((1000, [], 0), (8192, ["add"], 2)):  # 8 KB, 64 KiB of float64
        a = xp.asarray(np.arange(float(n)), device=LAZY)
        b = (a * 2.0) + 1.0  # (the sum may take the product's buffer)
        np.testing.assert_array_equal(np.asarray(b), np.arange(float(n)) * 2.0 + 1.0)
        assert into == want and len(looked) == looks, (n, into, looked)
        looked.clear()
