"""The lazy tiers agree on this machine, whatever its CPU (issue 22): every graph interpreted
and every graph compiled give the same bits where x10array promises them (data movement,
selections, casts, comparisons, integer and correctly rounded arithmetic, and wherever a
value is special: zero, subnormal, infinite, NaN), and stay within the documented bounds
elsewhere. Nothing here is a constant recorded on one CPU: the expectations are the other
tier's results on the running machine, and the one rule x10array picks for an out-of-range
float -> integer cast (docs/promotion.md). `.ci/run` runs this file again under NumPy's other
kernel family and with XLA's code generation capped at AVX2 (see there).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import _numerics
import array_api_extra as xpx
import numpy as np
import pytest
from _util import forget_programs
from test_numerics import check

import x10array as xp
from x10array._backends import lazy as _lazy
from x10array._backends.lazy import program as _program
from x10array._core import xla_options

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
FLOATS = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def specials(dtype: str) -> np.ndarray:
    """Special values of `dtype` (subnormals included for floating-point types), as 1-D."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return _numerics.real_specials(dt)
    if dt.kind == "c":
        part = _numerics.real_specials(np.zeros((), dt).real.dtype)
        re, im = np.meshgrid(part[:12], part[[0, 1, 5, 6, 8, 10, 15]], indexing="ij")
        z = np.empty(re.size, dt)
        z.real, z.imag = re.ravel(), im.ravel()
        return z
    if dt.kind == "b":
        return np.array([False, True, True, False, True, False, False, True])
    info = np.iinfo(dt)
    return np.array(sorted({0, 1, 2, 7, info.max, info.min, info.max - 1, 0 if dt.kind == "u" else -3}), dt)


@pytest.fixture(autouse=True, params=["default", "narrow"])
def program_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test twice: compiled programs with the XLA options of their kind (XLA's defaults
    here, the rule's choice), then every program compiled as a program with a narrow reduction
    (_core.xla_options.NARROW: YNNPACK's elementwise and reduce fusions off). The options
    change speed, never the bits the tiers promise."""
    if request.param == "narrow":
        forget_programs()
        monkeypatch.setattr(_program, "_options_kind", lambda calls: xla_options.NARROW)
        yield
        forget_programs()
    else:
        yield


def on_both_tiers(fn, *hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`fn(*lazy arrays)` with every graph interpreted, then with every graph compiled. Each
    operand goes through one arithmetic step first (`x * 1`, `x + 0`, ...) only where `fn`
    does it: leaves and intermediate values both reach the primitive below."""
    out = []
    for threshold in (None, 1):
        with _lazy.compile_threshold(threshold):
            out.append(np.asarray(fn(*[xp.asarray(h, device=LAZY) for h in hosts])))
    return out[0], out[1]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bits, any NaN matching any NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(_numerics.same_bits(a.reshape(-1), b.reshape(-1)).all()) if a.size else True


def assert_same(fn, hosts: list[np.ndarray], what: str) -> None:
    a, b = on_both_tiers(fn, *hosts)
    assert same_bits(a, b), f"{what}: interpreted {a.reshape(-1)[:8]} ... compiled {b.reshape(-1)[:8]} ..."


def assert_contract(fn, hosts: list[np.ndarray], what: str) -> None:
    """The two tiers of an elementwise `fn` against each other under the contract
    (_numerics.breaks_contract): special values exactly (a subnormal operand may be read as a
    zero of its sign, a subnormal result flushed to one: then the result is eager's on the
    operands flushed), within 2 * BOUND_ULP elsewhere."""
    a, b = on_both_tiers(fn, *hosts)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    refs = []
    for operands in (hosts, [_numerics.flushed(h) for h in hosts]):
        with np.errstate(all="ignore"):
            refs.append(np.asarray(fn(*[xp.asarray(h, device=EAGER) for h in operands])).reshape(-1))
    flat = [np.broadcast_to(h, a.shape).reshape(-1) for h in hosts]
    a1, b1 = a.reshape(-1), b.reshape(-1)
    bad = _numerics.breaks_contract(a1, b1, flat, (refs[0], refs[1]))
    bad |= _numerics.breaks_contract(b1, a1, flat, (refs[0], refs[1]))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        operands = [h[i].item() for h in flat]
        raise AssertionError(f"{what}: at {operands} interpreted {a1[i].item()!r}, compiled {b1[i].item()!r}")


def assert_within_ulp(got: np.ndarray, expected: np.ndarray, ulps: float, what: str) -> None:
    """Special values (zero, infinite, NaN, subnormal) exactly, up to the flush of a subnormal
    result; finite values within `ulps` units in the last place."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    g, e = got.reshape(-1), expected.reshape(-1)
    special = _numerics.special(g) | _numerics.special(e)
    exact = _numerics.same_under_flush(g, e)
    assert exact[special].all(), f"{what}: {g[special & ~exact][:4]} vs {e[special & ~exact][:4]}"
    d = _numerics.ulp_distance(g, e)[~special]
    assert d.size == 0 or d.max() <= ulps, f"{what}: {d.max()} ULP apart"


def assert_close(fn, hosts: list[np.ndarray], what: str, rtol: float) -> None:
    """Within `rtol` (of the largest magnitude), and special exactly where either is special
    (a subnormal result up to the subnormal rule)."""
    a, b = on_both_tiers(fn, *hosts)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    a1, b1 = a.reshape(-1), b.reshape(-1)
    special = _numerics.special(a1, zero=False) | _numerics.special(b1, zero=False)
    assert _numerics.same_under_flush(a1[special], b1[special]).all(), f"{what}: {a1[special]} vs {b1[special]}"
    finite = ~special
    scale = max(1.0, float(np.max(np.abs(a1[finite]))) if finite.any() else 1.0)
    assert np.all(np.abs(a1[finite] - b1[finite]) <= rtol * scale), f"{what}: {a1} vs {b1}"


# -- elementwise functions on the dtypes test_numerics leaves out ---------------------------


def test_elementwise_functions_agree_on_integer_and_boolean_dtypes():
    """test_numerics measures float32 and float64 against the bounds; here every elementwise
    function on integer and boolean operands (special values, a few random ones): the tiers
    must agree exactly. (Complex operands: test_complex_arithmetic_agrees_on_both_tiers.)"""
    results = _numerics.measure(n_random=20, dtypes=("int32", "int64", "uint8", "bool"))
    assert check(results) == []
    mismatches = [f"{n} {d}: {r['mismatch_example']}" for (n, d), r in results.items() if r["tier_mismatch"]]
    assert mismatches == []


# Complex elementwise functions the tiers agree on (all of them): each part the same bits
# wherever it is special (zero, subnormal, infinite, NaN) on either tier, within 2 * BOUND_ULP
# elsewhere (_numerics.tiers_differ).
# multiply, divide, square and reciprocal are written out from real steps on the lazy tiers
# (_api/elementwise: _complex_product, _complex_quotient), and so are sinh and cosh (sin and cos
# through them: _sinh_upper, _cosh_upper); sign pins infinite and NaN parts; log, log2, log10,
# exp, expm1, tanh, tan, log1p, pow and the inverse trigonometric and hyperbolic functions are written out
# from IEEE operations alone (_ieee_log, _ieee_atan2, _ieee_cexp, _asin_parts, ...).
COMPLEX_EXACT = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "divide", "equal",
    "exp", "expm1", "imag", "isfinite", "isinf", "isnan", "log", "log10", "log1p", "log2", "multiply", "negative",
    "not_equal", "positive", "pow", "real", "reciprocal", "round", "sign", "sin", "sinh", "sqrt", "square",
    "subtract", "tan", "tanh",
)  # fmt: skip


def test_complex_arithmetic_agrees_on_both_tiers():
    """Every pair of special complex values (and random ones), every complex function: the
    tiers agree under the contract (_numerics.breaks_contract: special parts exactly, up to the
    subnormal rule; normal parts within 2 * BOUND_ULP). On main at 9aeb6bb multiply differed
    in ~600 elements, divide in ~4,400, reciprocal in 87 ([0j]: NaN + NaN j interpreted, inf +
    NaN j compiled), square in 18, sign in 52 ([infj]: 1j and NaN)."""
    results = _numerics.measure(n_random=50, dtypes=COMPLEX, names=COMPLEX_EXACT)
    assert {n for n, _ in results} == set(COMPLEX_EXACT)
    mismatches = [f"{n} {d}: {r['mismatch_example']}" for (n, d), r in results.items() if r["tier_mismatch"]]
    assert mismatches == []


def test_every_complex_function_is_held_to_tier_agreement():
    """No complex function is left out of the tier tests."""
    accepting = {n for n in _numerics.FUNCTIONS if _numerics.accepts(n, "complex64")}
    assert accepting == set(COMPLEX_EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_products_and_quotients_with_scalars_and_intermediates_agree(dtype):
    """The same with a Python scalar operand and on computed operands (the complex steps of a
    graph read from other steps)."""
    z = specials(dtype)
    w = z[::-1].copy()
    for what, fn in {
        "z * w": lambda a, b: a * b,
        "z / w": lambda a, b: a / b,
        "(z + 0) * (w * 1)": lambda a, b: (a + 0) * (b * 1),
        "(z * 1) / (w + 0)": lambda a, b: (a * 1) / (b + 0),
        "z * 2.5": lambda a, b: a * 2.5,
        "z / 3.0": lambda a, b: a / 3.0,
        "1.5 / z": lambda a, b: 1.5 / a,
        "z * (2 - 1j)": lambda a, b: a * (2 - 1j),
        "square(z * 1)": lambda a, b: xp.square(a * 1),
        "reciprocal(w + 0)": lambda a, b: xp.reciprocal(b + 0),
        "sign(z * 1)": lambda a, b: xp.sign(a * 1),
    }.items():
        assert_contract(fn, [z, w], f"{what} {dtype}")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_hyperbolic_functions_stay_finite_past_the_overflow_of_cosh(dtype):
    """cosh(a) overflows at a = 89.5 (float32) and 710.5 (float64) while cosh(a) cos(1) does
    not: the lazy sinh and cosh (written out from real steps) scale there, as NumPy's do,
    and the tiers agree (to a few ulp: these parts are not special)."""
    a = 89.5 if dtype == "complex64" else 710.0
    z = np.array([a + 1j, -a + 1j, a - 2j, 5 + 1j], dtype)
    for fn in (xp.sinh, xp.cosh):
        interp, compiled = on_both_tiers(fn, z)
        agree = not _numerics.tiers_differ(interp, compiled, [z]).any()  # (a few ulp apart at most)
        assert np.isfinite(interp).all() and agree, f"{fn.__name__}: {interp} vs {compiled}"
        eager = np.asarray(fn(xp.asarray(z, device=EAGER)))
        assert np.allclose(interp, eager, rtol=1e-5), f"{fn.__name__}: {interp} vs eager {eager}"


# -- data movement, selections, sorting: bit for bit --------------------------------------

MOVERS = {
    "getitem": lambda x: x[::-1],
    "getitem_index": lambda x: x[xp.asarray(np.array([3, 0, 5, 1]), device=LAZY)],
    "take": lambda x: xp.take(x, xp.asarray(np.array([5, 5, 0, 2]), device=LAZY)),
    "concat": lambda x: xp.concat([x, x[:3]]),
    "reshape": lambda x: xp.reshape(x, (-1, 1)),
    "flip": lambda x: xp.flip(x),
    "roll": lambda x: xp.roll(x, 3),
    "stack": lambda x: xp.stack([x, x]),
    "copy": lambda x: xp.asarray(x, copy=True),
    "where": lambda x: xp.where(xp.arange(x.shape[0], device=LAZY) % 2 == 0, x, x[::-1]),
    "where_intermediate": lambda x: xp.where(xp.arange(x.shape[0], device=LAZY) % 3 == 0, x[::-1], x),
    "sort": lambda x: xp.sort(x),
    "sort_descending": lambda x: xp.sort(x, descending=True),
    "argsort": lambda x: xp.argsort(x),
    "argsort_descending": lambda x: xp.argsort(x, descending=True),
    "astype_same": lambda x: xp.astype(x, x.dtype, copy=True),
    "setitem": lambda x: _set(x),
}


def _set(x):
    y = xp.zeros(x.shape, dtype=x.dtype, device=LAZY)
    y[1:] = x[:-1]
    return y


@pytest.mark.parametrize("dtype", FLOATS + ("int32", "uint8", "bool"))
@pytest.mark.parametrize("name", sorted(MOVERS))
def test_data_movement_and_selections_keep_every_bit_on_both_tiers(name, dtype):
    """Subnormals pass through moves and selections on both tiers, and a sort orders them the
    same way on both (as zeros where XLA flushes: its compiled comparisons read them so;
    the values sorted keep their bits). On a computed operand (`a + a * 0`: arithmetic, which
    a compiled program may flush) the same up to the subnormal rule."""
    if name.startswith(("sort", "argsort")) and dtype == "bool":
        pytest.skip("sort: real numbers only")
    x = specials(dtype)
    assert_same(MOVERS[name], [x], f"{name} {dtype}")
    if np.dtype(dtype).kind == "f" and not name.startswith("argsort"):  # on a computed operand
        a, b = on_both_tiers(lambda a: MOVERS[name](a + a * 0), x)
        agree = _numerics.same_under_flush(a.reshape(-1), b.reshape(-1))
        assert agree.all(), f"{name} {dtype} (intermediate): {a.reshape(-1)[~agree]} vs {b.reshape(-1)[~agree]}"


# -- casts: one rule for out-of-range values, and subnormals ------------------------------


def saturating(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """The documented rule (docs/promotion.md), written out element by element: truncation
    toward zero, NaN to 0, below the range the type's minimum, above it its maximum."""
    info = np.iinfo(target)
    out = []
    for v in x.astype(np.float64).tolist():
        if v != v:
            out.append(0)
        elif v <= info.min - 1 or v == -np.inf:
            out.append(info.min)
        elif v >= info.max + 1 or v == np.inf:
            out.append(info.max)
        else:
            out.append(int(v))
    return np.array(out, dtype=target)


def out_of_range(dtype: str) -> np.ndarray:
    values = [
        -1.0, 300.0, 1e10, -1e10, np.nan, -np.nan, np.inf, -np.inf, 255.9, -0.9, 127.5, -128.5, 65535.5, 2.0**31,
        -(2.0**31), 2.0**31 - 128, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e30, -1e30, 0.5, -0.0, 5e-324, 1e-45,
    ]  # fmt: skip
    with np.errstate(all="ignore"):
        return np.array(values, dtype=dtype)


@pytest.mark.parametrize("target", INTS)
@pytest.mark.parametrize("source", ("float32", "float64"))
def test_float_to_integer_casts_saturate_on_every_device_and_tier(source, target):
    """Out-of-range float -> integer casts (the standard leaves them unspecified) follow one
    rule, XLA's, on the eager device (NumPy and XLA kernels) and both lazy tiers, whether the
    cast reads a leaf or an intermediate value. On main at 87a5705 the interpreter wrapped as
    NumPy does (astype(x * 1 + 0, uint8) of [-1, 300] gave [255, 44] until the graph compiled,
    then [0, 255])."""
    x = out_of_range(source)
    want = saturating(x, np.dtype(target))
    dtype = getattr(xp, target)
    results = {"eager": np.asarray(xp.astype(xp.asarray(x, device=EAGER), dtype))}
    old = xp.set_cpu_kernels("xla")
    try:
        results["eager-xla"] = np.asarray(xp.astype(xp.asarray(x, device=EAGER), dtype))
    finally:
        xp.set_cpu_kernels(old)
    interp, compiled = on_both_tiers(lambda a: xp.astype(a * 1 + 0, dtype), x)
    results.update(interpreted=interp, compiled=compiled)
    results["leaf compiled"] = on_both_tiers(lambda a: xp.astype(a, dtype), x)[1]
    for tier, got in results.items():
        assert got.dtype == want.dtype and np.array_equal(got, want), f"{source} -> {target} {tier}: {got} != {want}"


def test_a_cast_loop_gives_the_same_values_before_and_after_its_graph_compiles():
    """The red team's loop (issue 22): the same graph, run until the cost model compiles it."""
    x = xp.asarray(np.array([-1.0, 300.0, 1e10, np.nan, np.inf, -np.inf, 2.5], np.float32), device=LAZY)
    seen = {np.asarray(xp.astype(x * 1 + 0, xp.uint8)).tobytes() for _ in range(40)}
    assert len(seen) == 1


@pytest.mark.parametrize("target", FLOATS + COMPLEX + ("int32", "uint8", "bool"))
@pytest.mark.parametrize("source", FLOATS + COMPLEX)
def test_casts_of_special_values_agree_on_both_tiers(source, target):
    """Every cast from a floating-point type on special values, subnormals included: the same
    values on both tiers, up to the subnormal rule (a subnormal read as zero by a cast that
    converts, where XLA flushes; kept by a cast to the same type)."""
    if np.dtype(source).kind == "c" and np.dtype(target).kind != "c" and target != "bool":
        pytest.skip("the standard casts complex to complex or bool only")
    x = specials(source)
    dtype = getattr(xp, target)
    assert_contract(lambda a: xp.astype(a, dtype), [x], f"{source} -> {target}")
    assert_contract(lambda a: xp.astype(a * 1, dtype), [x], f"{source} -> {target} (intermediate)")


# -- reductions, products, the rest: the same treatment of special values ------------------

REDUCERS = {
    "sum": (lambda x: xp.sum(x), 1e-6),
    "prod": (lambda x: xp.prod(x[:6]), 1e-6),
    "cumulative_sum": (lambda x: xp.cumulative_sum(x), 1e-6),
    "max": (lambda x: xp.max(x[xp.asarray(np.array([5, 6, 7, 0]), device=LAZY)]), 0.0),
    "min": (lambda x: xp.min(x[xp.asarray(np.array([5, 6, 7, 0]), device=LAZY)]), 0.0),
    "argmax": (lambda x: xp.argmax(x[5:9]), 0.0),
    "argmin": (lambda x: xp.argmin(x[5:9]), 0.0),
    "mean": (lambda x: xp.mean(x[5:12]), 1e-6),
    "matmul": (lambda x: xp.reshape(x[:12], (3, 4)) @ xp.reshape(x[12:24], (4, 3)), 1e-6),
    "vecdot": (lambda x: xp.vecdot(x[5:10], x[10:15]), 1e-6),
    "searchsorted": (lambda x: xp.searchsorted(xp.sort(x[5:12]), x), 0.0),
    "count_nonzero": (lambda x: xp.count_nonzero(x), 0.0),
    "diff": (lambda x: xp.diff(x), 1e-6),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_other_primitives_treat_special_values_alike_on_both_tiers(name, dtype):
    """Subnormal, zero, infinite and NaN operands: the tiers agree exactly on special results
    and within a rounding tolerance elsewhere (summation orders differ); with subnormal
    operands, a tier may read them as zeros (the subnormal rule: its result is then the
    result on the operands flushed)."""
    fn, rtol = REDUCERS[name]
    x = specials(dtype)
    finite = x[np.isfinite(x)]
    finite = finite[np.abs(finite) < 1e10]
    tiny = float(np.finfo(dtype).tiny)
    for what, host, tol in (
        (f"{name} {dtype}", x, rtol),
        (f"{name} {dtype} (finite)", np.resize(finite, x.shape), rtol or 0.0),
    ):
        flat = _numerics.flushed(host)
        if tol == 0.0:
            assert_same(fn, [flat], what)
        else:
            assert_close(fn, [flat], what, tol)
        try:
            if tol == 0.0:
                assert_same(fn, [host], what)
            else:
                assert_close(fn, [host], what, tol)
        except AssertionError:  # (then the compiled result must be the interpreter's on the operands flushed)
            (interpreted, compiled), (on_flat, _) = on_both_tiers(fn, host), on_both_tiers(fn, flat)
            special = _numerics.special(on_flat.reshape(-1), zero=False)
            close = compiled.shape == on_flat.shape and np.allclose(
                compiled, on_flat, rtol=tol, atol=16 * tiny, equal_nan=True
            )
            assert close and _numerics.same_bits(compiled.reshape(-1)[special], on_flat.reshape(-1)[special]).all(), (
                f"{what}: interpreted {interpreted}, compiled {compiled}, interpreted on the operands flushed {on_flat}"
            )


@pytest.mark.parametrize("dtype", FLOATS)
def test_quotients_are_within_the_rounding_bound_on_both_tiers(dtype):
    """XLA's algebraic simplifier rewrites quotients into other roundings (A / broadcast(B)
    as A * broadcast(1 / B), (A / B) / C as A / (B * C), A / sqrt(B) as A * rsqrt(B)): one
    ulp off in a fifth to a third of the elements. The contract bounds it (a few ULP, no more):
    the tiers agree within 2 * BOUND_ULP."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(dtype)
    b = (rng.random((64, 32)) + 0.1).astype(dtype)
    c = np.asarray(0.0019990000000000003, dtype)
    for what, fn, hosts in [
        (f"{dtype} / a 0-d array", lambda x, s: x / s, [a, c]),
        (f"{dtype} / a Python float", lambda x: x / 0.0019990000000000003, [a]),
        (f"a Python float / {dtype}", lambda x: 2.5 / x, [b]),
        (f"{dtype} / a row", lambda x, y: x / y[0], [a, b]),
        (f"{dtype} / a column", lambda x, y: x / y[:, :1], [a, b]),
        ("(A / B) / C", lambda x, y: (x / y) / (y + 1.0), [a, b]),
        ("A / (B / C)", lambda x, y: x / (y / 3.0), [a, b]),
        ("A / sqrt(B)", lambda x, y: x / xp.sqrt(y), [a, b]),
        ("Adam's update", lambda x, y, s: (x / s) / (xp.sqrt(y / s) + 1e-8), [a, b, c]),
    ]:
        interpreted, compiled = on_both_tiers(fn, *hosts)
        assert_within_ulp(compiled, interpreted, 2 * _numerics.BOUND_ULP, what)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "divisor",
    [
        "0-d",
        "row",
        "column",
        "python float",
        "python int",
    ],
)
def test_a_quotient_by_a_broadcast_divisor_is_within_the_rounding_bound_on_both_tiers(divisor, dtype):
    """XLA's algebraic simplifier rewrites `A / broadcast(b)` as `A * broadcast(1 / b)` (two
    roundings, one ulp off in a fifth to two fifths of the elements), for any broadcast divisor:
    a scalar, a row, a column. The contract bounds that rounding: the interpreter gives NumPy's
    correctly rounded quotient, the compiled tier is within BOUND_ULP of it."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 48)).astype(dtype)
    operands = {
        "0-d": np.asarray(0.0019990000000000003, dtype),
        "row": rng.uniform(0.5, 3.0, 48).astype(dtype),
        "column": rng.uniform(0.5, 3.0, (64, 1)).astype(dtype),
    }
    if divisor in operands:
        b = operands[divisor]
        interpreted, compiled = on_both_tiers(lambda x, y: x / y, a, b)
        expected = a / b
    else:
        s = 3.7 if divisor == "python float" else 3
        interpreted, compiled = on_both_tiers(lambda x: x / s, a)
        expected = a / np.asarray(s, dtype)
    assert same_bits(interpreted, expected), f"{dtype} / a {divisor}: not NumPy's quotient interpreted"
    assert_within_ulp(compiled, expected, _numerics.BOUND_ULP, f"{dtype} / a {divisor} compiled")


def _empty_sum(e, dtype):
    """A zero that XLA makes a graph constant: the sum of an empty extent."""
    return xp.sum(xp.astype(e, dtype), axis=1)


# A graph-constant zero (what XLA makes of an empty contraction or reduction) divided by a
# runtime zero that LLVM can prove is never NaN (an integer converted to float, the floor of
# one): with every graph compiled these gave 0 instead of NaN (array-api-extra's
# TestCov::test_empty; docs/scipy-devices.md), and the rest of the class around them.
ZERO_QUOTIENTS = {
    "cov of a (2, 0) array": lambda n, i, e, f: xpx.cov(xp.astype(e, f), xp=xp),
    "(e @ e.T) / float(n)": lambda n, i, e, f: (xp.astype(e, f) @ xp.astype(e, f).T) / xp.astype(n, f),
    "(e @ e.T) / float(n - 0)": lambda n, i, e, f: (xp.astype(e, f) @ xp.astype(e, f).T) / xp.astype(n - 0, f),
    "sum(e) / float(n)": lambda n, i, e, f: _empty_sum(e, f) / xp.astype(n, f),
    "sum(e) / float(int32 n)": lambda n, i, e, f: _empty_sum(e, f) / xp.astype(xp.astype(n, xp.int32), f),
    "sum(e) / float(uint8 n)": lambda n, i, e, f: _empty_sum(e, f) / xp.astype(xp.astype(n, xp.uint8), f),
    "sum(e) / float(n > 0)": lambda n, i, e, f: _empty_sum(e, f) / xp.astype(n > 0, f),
    "sum(e) / floor(float(n))": lambda n, i, e, f: _empty_sum(e, f) / xp.floor(xp.astype(n, f)),
    "sum(e)[:, None] / float(ints)": lambda n, i, e, f: _empty_sum(e, f)[:, None] / xp.astype(i, f),
    "sum(e) * (sum(e) / float(n))": lambda n, i, e, f: _empty_sum(e, f) * (_empty_sum(e, f) / xp.astype(n, f)),
    "cumulative_sum(sum(e)) / float(n)": lambda n, i, e, f: xp.cumulative_sum(_empty_sum(e, f)) / xp.astype(n, f),
    "floor_divide(sum(e), float(n))": lambda n, i, e, f: xp.floor_divide(_empty_sum(e, f), xp.astype(n, f)),
    "remainder(sum(e), float(n))": lambda n, i, e, f: xp.remainder(_empty_sum(e, f), xp.astype(n, f)),
    "sum(e) / sum(e)": lambda n, i, e, f: _empty_sum(e, f) / _empty_sum(e, f),
    "float(n) / sum(e)": lambda n, i, e, f: xp.astype(n, f) / _empty_sum(e, f),
    "sum(e) * (1 / float(n))": lambda n, i, e, f: _empty_sum(e, f) * (1.0 / xp.astype(n, f)),
    "full(inf) * float(n)": lambda n, i, e, f: xp.full((2, 2), math.inf, dtype=f, device=n.device) * xp.astype(n, f),
    "full(inf) / float(n)": lambda n, i, e, f: xp.full((2, 2), math.inf, dtype=f, device=n.device) / xp.astype(n, f),
    "zeros / float(n)": lambda n, i, e, f: xp.zeros((2, 2), dtype=f, device=n.device) / xp.astype(n, f),
    "float(n) / float(n)": lambda n, i, e, f: xp.astype(n, f) / xp.astype(n, f),
    "mean, var, std of e": lambda n, i, e, f: xp.stack(
        [xp.mean(xp.astype(e, f), axis=1), xp.var(xp.astype(e, f), axis=1), xp.std(xp.astype(e, f), axis=1)]
    ),
}


@pytest.mark.filterwarnings("ignore:Degrees of freedom <= 0:RuntimeWarning")  # (xpx.cov's, as NumPy's)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(ZERO_QUOTIENTS))
def test_a_graph_constant_zero_over_a_runtime_zero_is_nan_on_every_device_and_tier(name, dtype):
    """0 / 0 is NaN (0 * inf too) on eager, interpreted and compiled (a semantics of the
    contract: NaN propagation), also where the zero is a graph constant and the divisor a
    converted integer (llvm/llvm-project#202482 folds `0.0 / x` to a zero where it proves x
    never NaN). The expectation is eager NumPy's IEEE value."""
    fn = ZERO_QUOTIENTS[name]
    f = getattr(xp, dtype)
    results = {}
    for what, device, threshold in (("eager", EAGER, None), ("interpreted", LAZY, None), ("compiled", LAZY, 1)):
        n = xp.asarray(0, dtype=xp.int64, device=device)
        ints = xp.asarray([0, 0, 0, 0], dtype=xp.int64, device=device)
        e = xp.zeros((2, 0), dtype=xp.float64, device=device)
        with _lazy.compile_threshold(threshold):
            results[what] = np.asarray(fn(n, ints, e, f))
    eager = results["eager"]
    assert eager.size and eager.dtype.kind == "f"  # (cov computes in float64)
    if name != "full(inf) / float(n)":
        assert np.isnan(eager).all(), f"{name}: eager gave {eager}"
    for what in ("interpreted", "compiled"):
        assert same_bits(eager, results[what]), f"{name} {dtype}: eager {eager.ravel()} {what} {results[what].ravel()}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_select_by_a_comparison_of_its_own_operands_follows_the_subnormal_rule(dtype):
    """`where(x < y, x, y)` is a select, but on x86 LLVM compiles it to MINPD/MAXPD, which read
    subnormals as zero while XLA runs: the compiled tier gives 0.0 where the interpreter keeps
    5e-324 (found by tests/test_fuzz_differential.py). The subnormal rule allows exactly that
    (a subnormal operand read as a zero of its sign); every other value must agree exactly."""
    x = specials(dtype)
    y = np.roll(x, 3)
    for what, fn in [
        ("where(x < y, x, y)", lambda a, b: xp.where(a < b, a, b)),
        ("where(x > y, x, y)", lambda a, b: xp.where(a > b, a, b)),
        ("where(x <= y, y, x)", lambda a, b: xp.where(a <= b, b, a)),
        ("where(x * 1 < y, x * 1, y)", lambda a, b: xp.where(a * 1 < b, a * 1, b)),
        ("where(x <= 0, 0.0, x)", lambda a, b: xp.where(a <= 0, 0.0, a)),
        ("where(x < 0.5, 0.5, x)", lambda a, b: xp.where(a < 0.5, 0.5, a)),
        ("where(x < y, -0.0, x * 1)", lambda a, b: xp.where(a < b, -0.0, a * 1)),
        ("where(leaf, x, y)", lambda a, b: xp.where(xp.asarray(np.arange(a.shape[0]) % 3 == 0, device=a.device), a, b)),
    ]:
        assert_contract(fn, [x, y], f"{what} {dtype}")


SUMS = {  # name: (the reduction, its terms: what the rounding error of a sum is bounded by)
    "sum, axis 0": (lambda x: xp.sum(x * 1.0, axis=0), lambda h: np.abs(h).sum(axis=0), 0),
    "sum, axis 1": (lambda x: xp.sum(x * 1.0, axis=1), lambda h: np.abs(h).sum(axis=1), 1),
    "sum, whole": (lambda x: xp.sum(x * 1.0), lambda h: np.abs(h).sum(), None),
    "mean, axis 0": (lambda x: xp.mean(x * 1.0, axis=0), lambda h: np.abs(h).mean(axis=0), 0),
    "cumulative_sum": (lambda x: xp.cumulative_sum(x * 1.0, axis=1), lambda h: np.abs(h).cumsum(axis=1), 1),
    "vecdot": (lambda x: xp.vecdot(x * 1.0, x * 1.0), lambda h: (h * h).sum(axis=-1), 1),
}


@pytest.mark.parametrize("name", sorted(SUMS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_floating_point_sums_agree_within_the_rounding_of_a_sum(name, dtype):
    """Each tier adds in its own order (the interpreter NumPy's: pairwise along a contiguous
    axis; XLA its own tree), so a floating-point sum is not promised the same bits on both
    tiers (docs/eager-and-lazy.md, "What the tiers guarantee"), only what any summation order
    gives: each within (n - 1) u of the sum of magnitudes of the exact sum, so the two within
    twice that, plus an ulp of the result for a mean's quotient. Integer sums are exact: the
    same bits."""
    reduce, magnitude, axis = SUMS[name]
    rng = np.random.default_rng(17)
    h = rng.standard_normal((300, 257)).astype(dtype)
    a, b = on_both_tiers(reduce, h)
    assert a.dtype == b.dtype == np.dtype(dtype) and a.shape == b.shape, name
    n = h.size if axis is None else h.shape[axis]
    eps = float(np.finfo(dtype).eps)
    bound = 2 * n * eps * magnitude(h.astype(np.float64)) + eps * np.abs(a.astype(np.float64))
    assert np.all(np.abs(a.astype(np.float64) - b) <= bound), f"{name} {dtype}: {np.max(np.abs(a - b))}"
    ints = (h * 1000).astype(np.int64)
    i, c = on_both_tiers(lambda x: xp.sum(x * 1, axis=axis), ints)
    assert same_bits(i, c), f"integer {name}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_sums_and_means_over_a_short_last_axis_agree_on_both_tiers(dtype):
    """A float32 or float64 sum or mean over a last axis of 2 to 7 elements
    (kernels.short_axis_sum: coordinates, k-means' squared differences) adds the axis's
    columns in order from +0.0 on both tiers (the interpreter's NumPy route, the compiled
    program's additions; a speed route on both): signed zeros (a row of -0.0 sums to +0.0),
    infinities and NaN exactly, subnormals under the subnormal rule; the rest within the
    rounding of the few additions (XLA may contract a product into them, round a mean's
    quotient otherwise); a leaf and an intermediate operand, many rows and few, 1-D to 3-D,
    a transposed operand, keepdims."""
    rng = np.random.default_rng(23)
    info = np.finfo(dtype)
    specials = np.array(
        [0.0, -0.0, 1.0, -1.0, 3.0, np.inf, -np.inf, np.nan, info.tiny, -info.tiny, info.tiny / 4, info.max, -info.max],
        dtype,
    )

    def values(shape: tuple[int, ...]) -> np.ndarray:
        with np.errstate(over="ignore"):
            x = rng.choice(specials, shape) * rng.choice(np.array([1.0, 1e-3, 1e3, info.eps], dtype), shape)
        plain = rng.random(shape) < 0.6  # (and ordinary values of mixed magnitudes)
        x[plain] = rng.standard_normal(plain.sum()) * 10.0 ** rng.integers(-4, 5, plain.sum())
        x.reshape(-1, shape[-1])[0] = -0.0
        return x.astype(dtype)

    def reductions(many, few, cube, vector, transposed):
        out = []
        for a in (many, many * 1.0, few * 1.0, cube * 1.0, vector * 1.0, xp.permute_dims(transposed, (1, 0))):
            for keepdims in (False, True):
                out.append(xp.reshape(xp.sum(a, axis=-1, keepdims=keepdims), (-1,)))
                out.append(xp.reshape(xp.mean(a, axis=-1, keepdims=keepdims), (-1,)))
        return xp.concat(out)

    for n in range(2, 8):
        hosts = [values((1000, n)), values((3, n)), values((5, 2, n)), values((n,)), values((n, 300))]
        a, b = on_both_tiers(reductions, *hosts)
        # (values that cancel: the bound is in ULPs of the largest term, not of the sum)
        scale = np.concatenate(
            [
                np.abs(h).max(axis=-1).reshape(-1)
                for h in (hosts[0], hosts[0], hosts[1], hosts[2], hosts[3], hosts[4].T)
                for _ in range(4)
            ]
        )
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(scale) & (a != 0) & (b != 0)
        special = ~finite
        assert _numerics.same_under_flush(a[special], b[special]).all(), f"last axis of {n} {dtype}"
        # (and the subnormal rule: each of the n terms may be read as zero, off by less than tiny)
        with np.errstate(all="ignore"):
            apart = np.abs(a[finite].astype(np.float64) - b[finite]) - n * float(info.tiny)
            err = np.maximum(apart, 0.0) / np.spacing(scale[finite])
        assert err.size == 0 or err.max() <= 2 * n, f"last axis of {n} {dtype}: {err.max()} ULP"


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_0d_quotient_by_a_python_float_keeps_its_dtype_on_both_tiers(dtype):
    """`vector_norm(x) / -4.25` of a float32 `x`: the compiled tier gave a float64 (the Python
    float's runtime input is weakly typed until the divide kernel's rounding step made it a
    strong float64; found by tests/test_fuzz_differential.py)."""
    x = np.array([1.5, -2.0, 3.0, 4.0, 5.0], dtype)
    for what, fn in [
        ("vector_norm(x) / -4.25", lambda a: xp.linalg.vector_norm(a) / -4.25),
        ("sum(x) / 3", lambda a: xp.sum(a) / 3),
        ("(x * 1)[0] / -4.25", lambda a: (a * 1)[0] / -4.25),
        ("-4.25 / sum(x)", lambda a: -4.25 / xp.sum(a)),
    ]:
        interpreted, compiled = on_both_tiers(fn, x)
        assert interpreted.dtype == compiled.dtype == np.dtype(dtype), f"{what}: {interpreted.dtype}, {compiled.dtype}"
        assert same_bits(interpreted, compiled), f"{what} {dtype}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_products_and_quotients_by_python_scalars_follow_the_subnormal_rule(dtype):
    """Products and quotients by Python scalars, of special values and values near the smallest
    normal: the tiers agree under the contract (a subnormal result may be a zero of its sign,
    a subnormal operand read as one; everything else exactly, or within the rounding bound)."""
    dt = np.dtype(dtype)
    tiny = np.finfo(dt).tiny
    x = np.concatenate([specials(dtype), np.array([tiny, -tiny, 1.5 * tiny, 3 * tiny, -7 * tiny], dt)])
    for s in (4.0, -1.0, 1.0, 0.0, -0.0, 1.0000001, 3, 0.5, -0.25, 1e-30, math.inf, math.nan):
        for what, fn in [
            (f"x * {s}", lambda a, s=s: a * s),
            (f"{s} * (x + 0)", lambda a, s=s: s * (a + 0.0)),
            (f"x / {s}", lambda a, s=s: a / s),
            (f"(x * 1) / {s}", lambda a, s=s: (a * 1.0) / s),
        ]:
            assert_contract(fn, [x], f"{what} {dtype}")
