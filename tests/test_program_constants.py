"""Which Python numbers are part of a lazy program and which are its runtime inputs (issue 26).

A Python int exponent of 2 to 4 picks the computation: `x ** n` is recorded as products on
every device (no generic `power` raised to a runtime exponent), with the same bits on the
eager device and both lazy tiers, and another exponent is another program. A Python float (a
learning rate) stays a runtime input: changing it compiles nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
from x10array import debug
from x10array.extend import settings

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")
TIERS = {"interpreted": 2**62, "compiled": 1}


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, info.max, -info.max, info.tiny, 2.0**0.5]
        return np.concatenate([np.asarray(special, dtype), (rng.standard_normal(200) * 10).astype(dtype)])
    info = np.iinfo(dtype)
    return np.concatenate([np.asarray([0, 1, info.max, info.min], dtype), rng.integers(info.min, info.max, 200, dtype)])


def _bits(a: np.ndarray) -> np.ndarray:
    """The bits, every NaN as one NaN (a NaN's sign and payload are not promised)."""
    a = np.asarray(a).copy()
    if a.dtype.kind == "f":
        a[np.isnan(a)] = np.nan
    return a.view(f"u{a.dtype.itemsize}")


def _products(ns, x, n):
    square = ns.multiply(x, x)
    return square if n == 2 else ns.multiply(square, x if n == 3 else square)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "uint16"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_small_integer_powers_are_products_with_the_same_bits_everywhere(dtype, n):
    host = _values(dtype)
    with np.errstate(all="ignore"):
        expected = _products(np, host, n)  # NumPy's multiplications: IEEE products, integers wrap
    for tier, threshold in TIERS.items():
        for device in (EAGER, LAZY):
            with settings.override(X10ARRAY_COMPILE_THRESHOLD=threshold):
                x = xp.asarray(host, device=device)
                for got in (x**n, xp.pow(x, n)):
                    got = np.asarray(got)
                    assert got.dtype == host.dtype
                    # (no subnormal result here: the lazy tiers flush those as every product does)
                    np.testing.assert_array_equal(_bits(got), _bits(expected), err_msg=f"{tier} {device} x**{n}")
    y = xp.asarray(host, device=LAZY)
    text = debug.graph_text(y**n)
    assert "multiply" in text and "pow" not in text, text


def test_other_exponents_stay_a_power():
    x = xp.asarray(np.linspace(0.5, 2.0, 7), device=LAZY)
    for y in (x**5, x**2.0, x**-1, xp.pow(x, x), 2**x):
        assert "pow(" in debug.graph_text(y)
    z = xp.asarray([1 + 2j], device=LAZY) ** 2  # complex: pow's own rules for special parts
    assert "pow(" in debug.graph_text(z)
    np.testing.assert_allclose(np.asarray(x**5), np.asarray(x.to_device(EAGER)) ** 5, rtol=1e-15)


def test_in_place_power_and_autodiff_of_a_product_power():
    from x10array.autodiff import grad

    x = xp.asarray([1.5, -2.0], device=LAZY)
    x **= 2
    np.testing.assert_array_equal(np.asarray(x), [2.25, 4.0])
    g = grad(lambda v: xp.sum(v**3))(xp.asarray([1.0, 2.0], device=LAZY))
    np.testing.assert_array_equal(np.asarray(g), [3.0, 12.0])


def test_an_exponent_is_part_of_the_program_and_a_learning_rate_is_not(capsys):
    """With every graph compiled and X10ARRAY_LOG_COMPILES: a loop whose learning rate changes
    at every step compiles its step once; a step with another exponent is another program."""
    host = np.random.default_rng(0).random((7, 13))  # a shape of its own: no program cached before
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_LOG_COMPILES=True):
        capsys.readouterr()
        w = xp.asarray(host, device=LAZY)
        before = xp.metrics()
        for i in range(6):
            lr = 0.1 / (i + 1)
            w = w - lr * w**2
            xp.lazy_barrier()
        d = xp.metrics() - before
        logged = [line for line in capsys.readouterr().out.splitlines() if line.startswith("x10array: compiling")]
        assert d.compile_count + d.disk_cache_loads == 1 and len(logged) <= 1, (d, logged)
        assert d.cache_hits >= 5, d
        w = w - 0.5 * w**3
        xp.lazy_barrier()
        d = xp.metrics() - before
        assert d.compile_count + d.disk_cache_loads == 2, d
    expected = host.copy()
    for i in range(6):
        expected = expected - (0.1 / (i + 1)) * (expected * expected)
    expected = expected - 0.5 * ((expected * expected) * expected)
    np.testing.assert_allclose(np.asarray(w), expected, rtol=1e-14)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_integer_operand_is_a_runtime_input_so_xla_cannot_fold_it(dtype):
    """Python int operands of arithmetic (`x + 0`, `x * -1`, `x - n`) stay runtime inputs of a
    compiled program: as constants, XLA's simplifier rewrites `x + 0` to `x` (-0.0 + 0 is +0.0
    in IEEE arithmetic and NumPy, but `x` keeps -0.0) and `x * -1` to a negation (a NaN's sign
    bit then differs). So the compiled tier gives NumPy's bits, and an int that changes
    from step to step (`x + i` in a loop) is one program."""
    host = np.asarray([-0.0, 0.0, -1.5, 2.0, np.inf, -np.inf], dtype)
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):
        x = xp.asarray(host, device=LAZY)
        for n, expected in ((0, host + 0), (-1, host * -1)):
            got = np.asarray(x + n if n == 0 else x * n)
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), expected.view(f"u{got.itemsize}"))
        before = xp.metrics()
        for i in range(4):
            y = x + i
            xp.lazy_barrier()
            np.testing.assert_array_equal(np.asarray(y), host + i)
        d = xp.metrics() - before
        assert d.cache_hits >= 3, d
