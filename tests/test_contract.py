"""The numerics contract (docs/numerics.md), stated as tests.

Generated from one list, the standard's elementwise functions (`_standard_names`), per dtype,
per tier and per class of special value:

- tiers: the eager CPU device with NumPy kernels and with XLA kernels
  (`set_cpu_kernels("xla")`), the lazy device with every graph interpreted and with every
  graph compiled (X10ARRAY_COMPILE_THRESHOLD);
- inputs: a grid of special values (NaN, +-inf, +-0, subnormals, the smallest and largest
  normals, integers at their edges), random normal values, and Python scalars of each kind as
  the second operand;
- semantics, asserted exactly against the eager device: NaN-ness, infinities and their sign,
  the sign of a zero, integers and booleans, allowing only the subnormal rule (an operand or
  result that is subnormal may be read or returned as a zero of its sign);
- rounding: every tier within the page's bound of a high-precision reference (mpmath, or
  float64 for float32 results), in units in the last place. The bounds are read from the
  table in docs/numerics.md, the one place they are stated.

Each (dtype, tier) is one run: every function of a dtype recorded into one lazy graph, one
barrier (one compile per dtype on the compiled tier). Run `python tests/test_contract.py` to
print the measured distances next to the page's bounds.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

if __name__ == "__main__":  # run from a checkout: import the checkout's x10array
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _standard_names import CHAPTERS  # noqa: E402

import x10array as xp  # noqa: E402
from x10array._core.devices import DeviceKind  # noqa: E402
from x10array.extend import settings  # noqa: E402

try:  # the high-precision reference of the rounding tests (scipy's and sympy's dependency)
    import mpmath
except ImportError:  # (the rounding tests skip)
    mpmath = None

# The default devices: the CPU's in CI; on a machine with an accelerator (run by hand there),
# the accelerator's, whose eager device runs XLA's kernels (the "numpy" and "xla-kernels"
# tiers are then the same) and whose lazy device compiles every graph.
EAGER = xp.Device.default
LAZY = xp.Device.default_xla
HOST = xp.Device("cpu", 0, "eager")  # the float64 reference of float32 results: NumPy's
FUNCTIONS = CHAPTERS["elementwise_functions"]
TIERS = ("numpy", "xla-kernels", "interpreted", "compiled")
ROUNDED = ("numpy", "interpreted", "compiled")  # the tiers the page's bounds hold (not XLA's eager kernels)
FLOATS = ("float32", "float64", "complex64", "complex128")
DTYPES = (*FLOATS, "int8", "int32", "int64", "uint8", "uint64", "bool")
N_RANDOM = 64  # random normal values per function and dtype (rounding)
PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "numerics.md")


# -- the functions ---------------------------------------------------------------------------


def arity(name: str) -> int:
    if name == "clip":
        return 3
    import inspect

    fn = getattr(xp, name)
    return len([p for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_ONLY])


def call(name: str, operands: list[Any]) -> Any:
    fn = getattr(xp, name)
    if name == "clip":
        return fn(operands[0], min=operands[1], max=operands[2])
    return fn(*operands)


# -- the inputs ------------------------------------------------------------------------------


def real_specials(dt: np.dtype) -> np.ndarray:
    fi = np.finfo(dt)
    sub = fi.smallest_subnormal
    values = [
        0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, fi.tiny / 2, -fi.tiny / 2, fi.tiny, -fi.tiny,
        fi.max, -fi.max, 1.0, -1.0, 0.5, -2.0, 3.0, 0.41, -0.41,
    ]  # fmt: skip
    return np.array(values, dtype=dt)


def real_random(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Normal values: magnitudes spread over the dtype's range, and the ranges where the
    functions are interesting ((-1, 1), (-10, 10), up to the overflow of exp)."""
    fi = np.finfo(dt)
    top = math.log10(fi.max) - 1
    q = n // 4
    parts = [
        np.sign(rng.standard_normal(q)) * 10.0 ** rng.uniform(-top, top, q),
        rng.uniform(-1, 1, q),
        rng.uniform(-10, 10, q),
        rng.uniform(-1, 1, n - 3 * q) * math.log(fi.max),
    ]
    out = np.concatenate(parts).astype(dt)
    out[np.abs(out) < fi.tiny] = 1.0
    return out


def inputs(name: str, dtype: str) -> list[np.ndarray]:
    """The operands of `name` at `dtype`: every combination of special values, then random
    ones."""
    rng = np.random.default_rng(sum(map(ord, name + dtype)))
    dt = np.dtype(dtype)
    k = arity(name)
    if dt.kind == "b":
        specials = np.array([False, True])
        randoms = [rng.integers(0, 2, N_RANDOM).astype(bool) for _ in range(k)]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        edges = {0, 1, 2, 7, info.max, info.max - 1, info.min, info.min + 1} | ({-1, -7} if dt.kind == "i" else set())
        specials = np.array(sorted(edges), dtype=dt)
        randoms = [rng.integers(info.min, info.max, N_RANDOM, dtype=dt, endpoint=True) for _ in range(k)]
        if name in ("bitwise_left_shift", "bitwise_right_shift"):
            specials = specials[specials >= 0]
            randoms[1] = rng.integers(0, 8 * dt.itemsize, N_RANDOM).astype(dt)
    elif dt.kind == "f":
        specials = real_specials(dt)
        randoms = [real_random(dt, N_RANDOM, rng) for _ in range(k)]
    else:
        part = np.dtype(f"float{dt.itemsize * 4}")
        rs = (
            real_specials(part)[[0, 1, 2, 3, 4, 5, 9, 11, 13, 15]]
            if k == 1
            else real_specials(part)[[0, 1, 2, 4, 5, 13]]
        )
        re_, im_ = np.meshgrid(rs, rs, indexing="ij")
        specials = _complex(re_.ravel(), im_.ravel()).astype(dt)
        randoms = []
        for _ in range(k):
            z = real_random(part, N_RANDOM, rng).astype(dt)
            z.imag = real_random(part, N_RANDOM, rng)
            randoms.append(z)
    if k == 1:
        grid = [specials]
    elif k == 2:
        a, b = np.meshgrid(specials, specials, indexing="ij")
        grid = [a.ravel(), b.ravel()]
    else:  # clip: x over the specials, bounds from a few of them
        few = specials[: min(len(specials), 6)]
        a, b, c = np.meshgrid(specials, few, few, indexing="ij")
        grid = [a.ravel(), b.ravel(), c.ravel()]
    return [np.concatenate([g, r]) for g, r in zip(grid, randoms)]


def scalars(dtype: str) -> list[Any]:
    """Python scalars of each kind the standard lets combine with `dtype`, at their edges."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return [True, False]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return [0, 1, 7, int(info.max), int(info.min)] + ([-1] if dt.kind == "i" else [])
    if dt.kind == "c":
        return [-3, 1e-40, complex(0.0, -0.0), complex(math.inf, math.nan)]
    return [-3, True, -0.0, math.inf, math.nan, 0.5, 1e-40, 5e-324]


@functools.cache
def cases(dtype: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """Every (function, operands) run at `dtype`: the grid and random values, then each binary
    function with a Python scalar second operand (the grid as the array)."""
    out = []
    for name in FUNCTIONS:
        host = inputs(name, dtype)
        try:
            call(name, [xp.asarray(h, device=EAGER) for h in host])
        except TypeError:
            continue
        out.append((name, tuple(host)))
        if arity(name) == 2:
            for s in scalars(dtype):
                try:
                    with np.errstate(all="ignore"):
                        call(name, [xp.asarray(host[0], device=EAGER), s])
                except (TypeError, ValueError, OverflowError):
                    continue  # (a scalar of a kind or value the standard does not combine with dtype)
                out.append((name, (host[0], s)))
    return tuple(out)


# -- the tiers -------------------------------------------------------------------------------

NEVER = 2**62  # a compile threshold no graph reaches: every graph interpreted


@functools.cache
def results(dtype: str, tier: str) -> tuple[np.ndarray, ...]:
    """Every case of `dtype` on `tier`; on the lazy device one graph, one barrier."""
    todo = cases(dtype)
    if tier in ("numpy", "xla-kernels"):
        before = xp.set_cpu_kernels("numpy" if tier == "numpy" else "xla")
        try:
            out = [
                call(n, [xp.asarray(o, device=EAGER) if type(o) is np.ndarray else o for o in ops]) for n, ops in todo
            ]
            return tuple(np.asarray(o) for o in out)
        finally:
            xp.set_cpu_kernels(before)
    threshold = 1 if tier == "compiled" else NEVER
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=threshold):
        out = [call(n, [xp.asarray(o, device=LAZY) if type(o) is np.ndarray else o for o in ops]) for n, ops in todo]
        xp.lazy_barrier()
        return tuple(np.asarray(o) for o in out)


# -- the reference ---------------------------------------------------------------------------

MP = {
    "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asin": "asin", "acos": "acos", "atan": "atan",
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "sqrt": "sqrt",
}  # fmt: skip


def _mp_call(name: str, args: list[Any]) -> Any:
    m = mpmath
    if name in MP:
        return getattr(m, MP[name])(*args)
    if name == "log2":
        return m.log(args[0], 2)
    if name == "log10":
        return m.log10(args[0])
    if name == "atan2":
        return m.atan2(*args)
    if name == "hypot":
        return m.hypot(*args)
    if name == "logaddexp":
        return m.log(m.exp(args[0]) + m.exp(args[1]))
    if name == "pow":
        return m.power(*args)
    if name == "divide":
        return args[0] / args[1]
    if name == "reciprocal":
        return 1 / args[0]
    if name == "multiply":
        return args[0] * args[1]
    if name == "square":
        return args[0] * args[0]
    if name == "abs":
        return abs(args[0])
    if name == "sign":
        return args[0] / abs(args[0])
    return None


def reference(name: str, ops: tuple[Any, ...], dtype: str, want: np.ndarray) -> np.ndarray | None:
    """The correctly rounded result (NaN where there is none to compare with), or None where
    the eager result is the reference (operations that are exact or correctly rounded in IEEE
    arithmetic: +, -, *, /, sqrt, rounding functions, selections, ...), for a complex dtype
    only the functions mpmath computes."""
    dt = np.dtype(dtype)
    exact = ("add", "subtract", "multiply", "divide", "sqrt", "square", "reciprocal")
    if dt.kind == "f" and name in exact:
        return None
    if dt.kind == "f" and name not in MP and _mp_call(name, [mpmath.mpf(1)] * arity(name)) is None:
        return None
    if dt.kind == "c" and name in exact[:2]:
        return None
    wide = np.dtype("float64" if dt.kind == "f" else "complex128")
    host = [np.asarray(o, dtype=wide) for o in ops]
    out = np.full(want.shape, np.nan, dtype=want.dtype)
    if dtype == "float32":
        # float32: the float64 NumPy result, rounded once
        with np.errstate(all="ignore"):
            got = np.asarray(call(name, [xp.asarray(h, device=HOST) for h in host]))
        return got.astype(want.dtype)
    with mpmath.workprec(1200 if dt.kind == "c" else 120):  # (complex: cancellation near tiny parts)
        return _mp_values(name, host, dt, out)


def _mp_values(name: str, host: list[np.ndarray], dt: np.dtype, out: np.ndarray) -> np.ndarray | None:
    conv = mpmath.mpc if dt.kind == "c" else mpmath.mpf
    n = out.shape[0]
    want = out
    for i in range(n):
        args = [h[i] if h.ndim else h[()] for h in host]
        if not all(np.isfinite(a) and a != 0 for a in args):
            continue  # (special values are semantics; mpmath has no signed zero)
        try:
            r = _mp_call(name, [conv(complex(a)) if dt.kind == "c" else conv(float(a)) for a in args])
        except (ZeroDivisionError, ValueError):
            continue
        if r is None:
            return None
        if dt.kind == "c" or isinstance(r, mpmath.mpc):
            r = complex(r)
            if want.dtype.kind != "c":
                if r.imag != 0:
                    continue
                r = r.real
        else:
            r = float(r)
        out[i] = r
    return out


# -- distances -------------------------------------------------------------------------------


def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values (-0 and +0 one apart)."""
    bits = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(bits).astype(np.int64)
    return np.where(i < 0, np.iinfo(bits).min - i, i)


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Units in the last place between `got` and `ref` (complex: normwise, in ulps of the
    larger part of `ref`); NaN where `ref` is NaN or not normal."""
    if got.dtype.kind == "c":
        part = np.dtype(f"float{got.dtype.itemsize * 4}")
        scale = np.maximum(np.abs(ref.real), np.abs(ref.imag)).astype(part)
        with np.errstate(all="ignore"):
            err = np.abs(got.astype(np.complex128) - ref.astype(np.complex128)) / np.spacing(scale).astype(np.float64)
        ok = np.isfinite(ref) & (scale >= np.finfo(part).tiny) & (scale < np.finfo(part).max)
        return np.where(ok, np.where(np.isfinite(got), err, np.inf), np.nan)
    d = np.abs(_ordered(got) - _ordered(ref.astype(got.dtype))).astype(np.float64)
    ok = np.isfinite(ref) & (np.abs(ref) >= np.finfo(got.dtype).tiny) & (np.abs(ref) <= np.finfo(got.dtype).max)
    d = np.where(np.isnan(got), np.inf, d)
    return np.where(ok, d, np.nan)


def normal_inputs(ops: tuple[Any, ...], n: int) -> np.ndarray:
    """Per element, whether no operand is subnormal (or NaN/inf, whose results are semantics)."""
    keep = np.ones(n, dtype=bool)
    for o in ops:
        a = np.asarray(o)
        if a.dtype.kind not in "fc":
            continue
        parts = (a.real, a.imag) if a.dtype.kind == "c" else (a,)
        for p in parts:  # (a complex part of zero: on a branch cut, its sign decides the side)
            keep &= np.isfinite(p) & (((p == 0) & (a.dtype.kind == "f")) | (np.abs(p) >= np.finfo(p.dtype).tiny))
    return np.broadcast_to(keep, (n,)) if keep.ndim == 0 else keep


def _absolute(ops: tuple[Any, ...], ref: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """logaddexp: in ulps of the largest of its operands and result (near a zero result the
    formula cancels, in NumPy too)."""
    with np.errstate(all="ignore"):
        big = np.maximum.reduce(np.broadcast_arrays(np.abs(ref), *[np.abs(o) for o in ops])).astype(dtype)
        return np.where(np.isfinite(big), np.spacing(big) / np.spacing(np.abs(ref).astype(dtype)), 1.0)


def _pow_scale(ops: tuple[Any, ...], ref: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Complex pow, exp(y log x): its error grows with |y log x| (in NumPy too)."""
    x, y = (np.asarray(o, dtype=np.complex128) for o in ops)
    with np.errstate(all="ignore"):
        return 1 + np.abs(y * np.log(x))


# (function) -> per element, what its ulps are divided by before they meet the bound
SCALED = {"logaddexp": _absolute}


@functools.cache
def measured(dtype: str, tier: str) -> dict[str, float]:
    """Per function, the largest distance in ulps of `tier`'s results from the reference at
    normal inputs (its arrays' cases, not the scalar ones)."""
    out: dict[str, float] = {}
    dt = np.dtype(dtype)
    for (name, ops), got, want in zip(cases(dtype), results(dtype, tier), results(dtype, "numpy")):
        if got.dtype.kind not in "fc":
            continue
        with np.errstate(all="ignore"):
            out[name] = max(out.get(name, 0.0), _distance(name, ops, got, want, dt))
    return out


def _distance(name: str, ops: tuple[Any, ...], got: np.ndarray, want: np.ndarray, dt: np.dtype) -> float:
    """The largest distance in ulps of `got` from the reference at normal inputs."""
    dtype = dt.name
    # (a Python scalar as the dtype's value, as the function reads it)
    ops = tuple(o if type(o) is np.ndarray else np.asarray(o).astype(dt) for o in ops)
    ref = reference(name, ops, dtype, want)
    if ref is None:
        ref = want
    d = ulps(got, ref)
    scale = SCALED.get(name) or (_pow_scale if name == "pow" and got.dtype.kind == "c" else None)
    if scale is not None:
        d = d / scale(ops, ref, got.dtype)
    d = d[normal_inputs(ops, got.shape[0]) & ~np.isnan(d)]
    return float(d.max()) if d.size else 0.0


# -- the page's table ------------------------------------------------------------------------


@functools.cache
def bounds() -> dict[tuple[str, str], float]:
    """(function, dtype) -> the page's bound in ulps, from its table "Rounding bounds": a row
    names functions in backquotes, then one bound per dtype of its header."""
    with open(PAGE, encoding="utf-8") as page:
        text = page.read()
    section = text.split("<!-- bounds -->")[1].split("<!-- end of bounds -->")[0]
    rows = [line.strip().strip("|") for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in re.split(r"(?<!\\)\|", rows[0])]
    dtypes = header[1:]
    out: dict[tuple[str, str], float] = {}
    for line in rows[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]
        for name in re.findall(r"`(\w+)`", cells[0]):
            for dt, cell in zip(dtypes, cells[1:]):
                if cell not in ("", "-"):
                    out[(name, dt)] = float(cell)
    return out


# -- semantics -------------------------------------------------------------------------------


def _flushed(a: np.ndarray) -> np.ndarray:
    """Subnormals (of each part) replaced by a zero of their sign."""
    if a.dtype.kind == "c":
        return _complex(_flushed(a.real), _flushed(a.imag))
    if a.dtype.kind != "f":
        return a
    tiny = np.finfo(a.dtype).tiny
    return np.where((np.abs(a) < tiny) & (a != 0), np.copysign(np.zeros_like(a), a), a)


def _complex(re_: np.ndarray, im_: np.ndarray) -> np.ndarray:
    out = np.empty(re_.shape, dtype=np.result_type(re_.dtype, np.complex64))
    out.real, out.imag = re_, im_
    return out


def kind(a: np.ndarray) -> np.ndarray:
    """Per element (per part of a complex one), its class: 0 NaN, +-1 +-inf, +-2 +-0, +-3
    another number; a complex part: 0 NaN, +-1 +-inf, 2 a finite number (the sign of a zero
    part is the formula's where the standard leaves it: docs/numerics.md); integers and
    booleans are their value."""
    if a.dtype.kind == "c":
        parts = [kind(a.real), kind(a.imag)]
        return np.stack([np.where(np.abs(p) >= 2, 2, p) for p in parts], axis=-1)
    if a.dtype.kind != "f":
        return a.astype(object)
    sign = np.where(np.signbit(a), -1, 1)
    k = np.where(np.isnan(a), 0, np.where(np.isinf(a), 1, np.where(a == 0, 2, 3)) * sign)
    return k


def allowed_kinds(name: str, ops: tuple[Any, ...], dtype: str) -> list[np.ndarray]:
    """The classes the subnormal rule allows: the eager result, flushed or not, of the
    operands, each as it is or flushed (a Python float subnormal in `dtype` included)."""
    dt = np.dtype(dtype)
    part = np.dtype(f"float{dt.itemsize * 4}") if dt.kind == "c" else dt

    def flush_op(o: Any) -> Any:
        if type(o) is np.ndarray:
            return _flushed(o)
        if type(o) is float and part.kind == "f" and 0 < abs(o) < np.finfo(part).tiny:
            return math.copysign(0.0, o)
        if type(o) is complex and part.kind == "f":
            return complex(flush_op(o.real), flush_op(o.imag))
        return o

    out = []
    for flushing in itertools.product((False, True), repeat=len(ops)):  # (each operand may be)
        operands = tuple(flush_op(o) if f else o for o, f in zip(ops, flushing))
        with np.errstate(all="ignore"):
            r = np.asarray(call(name, [xp.asarray(o, device=EAGER) if type(o) is np.ndarray else o for o in operands]))
        out += [kind(r), kind(_flushed(r))]
    return out


def semantic_mismatches(name: str, ops: tuple[Any, ...], dtype: str, got: np.ndarray, want: np.ndarray) -> list[str]:
    if got.dtype != want.dtype or got.shape != want.shape:
        return [f"dtype/shape {got.dtype}{got.shape}, eager {want.dtype}{want.shape}"]
    k = kind(got)
    if (k == kind(want)).all():
        return []
    ok = np.zeros(k.shape, dtype=bool)
    flushed = kind(_flushed(got))  # (a subnormal result may be a zero of its sign)
    for allowed in allowed_kinds(name, ops, dtype):
        ok |= (k == allowed) | (flushed == allowed)
    if k.ndim == 2:
        ok = ok.all(axis=1)
    if name == "clip":  # (min > max: unspecified by the standard)
        with np.errstate(invalid="ignore"):
            ok |= ~(np.asarray(ops[1]) <= np.asarray(ops[2]))
    bad = np.flatnonzero(~ok)
    show = []
    for i in bad[:4]:
        args = ", ".join(repr(o[i] if type(o) is np.ndarray else o) for o in ops)
        show.append(f"{name}({args}) = {got[i]!r}, eager {want[i]!r}")
    return show + ([f"... {bad.size} in all"] if bad.size > 4 else [])


# Where a tier breaks the contract today, (function, dtype kind, tier) -> why. A listed case
# that no longer differs fails the test (so the list is kept true): remove its line.
KNOWN = {
    ("log", "c", "xla-kernels"): "XLA's CPU complex log of a subnormal is -inf + NaN j (log(0j) is -inf + 0j)",
    ("log2", "c", "xla-kernels"): "as log",
    ("log10", "c", "xla-kernels"): "as log",
    **{
        ("log1p", "c", tier): "the eager device's complex log1p (NumPy's) overflows to inf near the"
        " largest finite value, where the result is finite"
        for tier in ("xla-kernels", "interpreted", "compiled")
    },
}
# The standard leaves these complex special values (and overflow) to the implementation:
# checked for rounding only.
UNSPECIFIED = {("pow", "c"), ("multiply", "c"), ("divide", "c"), ("reciprocal", "c"), ("square", "c")}


def _ids(case: tuple[str, tuple[Any, ...]]) -> str:
    name, ops = case
    scalar = [o for o in ops if type(o) is not np.ndarray]
    return name + (f"-{type(scalar[0]).__name__}({scalar[0]!r})" if scalar else "")


# -- the tests -------------------------------------------------------------------------------

LAZY_AND_XLA = TIERS[1:]


def _semantic_params() -> list[Any]:
    """(dtype, tier) pairs; the eager XLA kernels on complex dtypes compile a program per
    function (~12 s a dtype on a 2-core machine): marked slow."""
    slow = pytest.mark.slow
    return [
        pytest.param(d, t, marks=slow) if t == "xla-kernels" and d.startswith("complex") else (d, t)
        for d in DTYPES
        for t in LAZY_AND_XLA
    ]


@pytest.mark.parametrize(("dtype", "tier"), _semantic_params())
def test_semantics_are_the_eager_devices(dtype, tier):
    """NaN-ness, infinities, signed zeros, integers and booleans: exactly the eager device's
    on every tier, for every elementwise function, special value and Python scalar, within
    the subnormal rule."""
    failures = []
    known: dict[str, list[str]] = {}
    dkind = np.dtype(dtype).kind
    for case, got, want in zip(cases(dtype), results(dtype, tier), results(dtype, "numpy")):
        if (case[0], dkind) in UNSPECIFIED:
            continue
        found = [f"{_ids(case)}: {m}" for m in semantic_mismatches(*case, dtype, got, want)]
        if (case[0], dkind, tier) in KNOWN:
            known.setdefault(case[0], []).extend(found)
        else:
            failures += found
    assert not failures, f"{dtype} on {tier}:\n" + "\n".join(failures[:40])
    listed = {name for name, k, t in KNOWN if k == dkind and t == tier}
    fixed = {name for name in listed if not known.get(name)}
    assert not fixed, f"{dtype} on {tier}: {sorted(fixed)} keep the contract now: remove them from KNOWN"


# Where a tier's rounding is outside the page's bounds today, (function, dtype kind, tier) -> why
# (the page says so too).
ROUNDING_KNOWN = {
    ("log1p", "c", "numpy"): "NumPy's complex log1p overflows to inf near the largest finite value",
}


@pytest.mark.parametrize("tier", ROUNDED)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rounding_within_the_pages_bounds(dtype, tier):
    """Every floating-point function on every tier within the page's bound of the correctly
    rounded result, at normal inputs (Python scalars included)."""
    if mpmath is None:
        pytest.skip("mpmath is not installed: no reference")
    table = bounds()
    over = []
    for name, d in measured(dtype, tier).items():
        bound = table.get((name, dtype))
        assert bound is not None, f"{name} at {dtype}: no bound in docs/numerics.md's table"
        if d > bound and (name, np.dtype(dtype).kind, tier) not in ROUNDING_KNOWN:
            over.append(f"{name}: {d:g} ulp, bound {bound:g}")
    assert not over, f"{dtype} on {tier}:\n" + "\n".join(over)


def test_the_pages_table_names_every_function_once_per_dtype():
    """A bound for every floating-point function the tests run, and none for a name that is
    not one of the standard's elementwise functions."""
    names = {name for name, _ in bounds()}
    assert names <= set(FUNCTIONS), names - set(FUNCTIONS)
    for dtype in FLOATS:
        floating = {name for (name, _), got in zip(cases(dtype), results(dtype, "numpy")) if got.dtype.kind in "fc"}
        missing = {name for name in floating if (name, dtype) not in bounds()}
        assert not missing, f"{dtype}: no bound for {sorted(missing)}"


# -- the subnormal rule: a Python scalar (issue's reproduction 2) ------------------------------


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize(
    ("dtype", "xs", "tiny"), [("float32", [3e38, 1e10, -1e10], 1e-40), ("float64", [1e300, 1e20, -1e20], 5e-324)]
)
def test_a_subnormal_python_scalar_follows_the_subnormal_rule(dtype, xs, tiny, tier):
    """`(x * tiny) * 2.0`, `tiny` a Python float subnormal in x's dtype (the products normal):
    every tier reads it as its value or as a zero of its sign (the rule), and gives the same
    bits at every run."""
    host = np.array(xs, dtype=dtype)
    kept = (host * np.asarray(tiny, dtype=dtype)) * np.asarray(2.0, dtype=dtype)
    flushed = np.zeros_like(host) * np.sign(host)
    runs = [_run_on(tier, lambda a: (a * tiny) * 2.0, host) for _ in range(3)]
    for got in runs:
        assert got.tobytes() in (kept.tobytes(), flushed.tobytes()), f"{tier}: {got!r}; kept {kept!r}"
    assert len({r.tobytes() for r in runs}) == 1, f"{tier}: {runs}"


def _run_on(tier: str, fn: Any, *hosts: np.ndarray) -> Any:
    """`fn`'s result (or tuple of results) on `tier`, as NumPy arrays; on the lazy device one
    graph, one barrier."""
    if tier in ("numpy", "xla-kernels"):
        before = xp.set_cpu_kernels("numpy" if tier == "numpy" else "xla")
        try:
            out = fn(*[xp.asarray(h, device=EAGER) for h in hosts])
        finally:
            xp.set_cpu_kernels(before)
    else:
        with settings.override(X10ARRAY_COMPILE_THRESHOLD=1 if tier == "compiled" else NEVER):
            out = fn(*[xp.asarray(h, device=LAZY) for h in hosts])
            xp.lazy_barrier()
    return tuple(np.asarray(o) for o in out) if type(out) is tuple else np.asarray(out)


# -- sums over a short axis (reproduction 3) ---------------------------------------------------


def _exact_sums(terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the exact sum of `terms` (exact products of floats: a list of Fractions per
    row) and the sum of their magnitudes."""
    from fractions import Fraction

    exact = np.array([float(sum(row, Fraction(0))) for row in terms])
    mags = np.array([float(sum(abs(t) for t in row)) for row in terms])
    return exact, mags


def _fr(a: np.ndarray) -> np.ndarray:
    from fractions import Fraction

    return np.vectorize(Fraction, otypes=[object])(a.astype(np.float64))


SHORT_REDUCTIONS = {
    "sum(x * y, axis=1)": (lambda x, y, c: xp.sum(x * y, axis=1), lambda x, y, c: _fr(x) * _fr(y), 1),
    "sum(x ** 2, axis=1)": (lambda x, y, c: xp.sum(x**2, axis=1), lambda x, y, c: _fr(x) * _fr(x), 1),
    "mean(x * y, axis=-1)": (lambda x, y, c: xp.mean(x * y, axis=-1), lambda x, y, c: _fr(x) * _fr(y), "n"),
}


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("n", [2, 3, 5, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_of_products_over_a_short_axis_are_within_the_sum_bound(dtype, n, tier):
    """A sum of n products (or their mean, or k-means' squared distances) on every tier within
    the page's bound for a sum, (n + 1) u times the sum of the terms' magnitudes, of the exact
    sum of the exactly computed terms: a product fused into the addition (an fma) is allowed."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((64, n)).astype(dtype)
    y = rng.standard_normal((64, n)).astype(dtype)
    c = rng.standard_normal((3, n)).astype(dtype)
    u = float(np.finfo(dtype).eps) / 2
    fns = [fn for fn, _, _ in SHORT_REDUCTIONS.values()]
    *gots, distances = _run_on(
        tier, lambda a, b, k: (*[fn(a, b, None) for fn in fns], xp.sum((a[:, None] - k) ** 2, axis=2)), x, y, c
    )
    for got, (label, (_, terms, divide)) in zip(gots, SHORT_REDUCTIONS.items()):
        exact, mags = _exact_sums(terms(x, y, None))
        if divide == "n":
            exact, mags = exact / n, mags / n
        err = np.abs(got.astype(np.float64) - exact)
        assert (err <= (n + 1) * u * mags).all(), f"{label}, n={n}, {tier}: {np.max(err / (u * mags)):.3g} u"
    # k-means: the differences are rounded first (both operands exact in the reference)
    got = distances
    d = (x[:, None, :] - c).astype(dtype)  # (each difference correctly rounded on every tier)
    sq = _fr(d.reshape(-1, n)) ** 2
    exact, mags = _exact_sums(sq)
    # (n + 1) u for the sum, and 2u for each difference's rounding in its square
    err = np.abs(got.astype(np.float64).ravel() - exact)
    assert (err <= (n + 3) * u * mags).all(), f"k-means distances, n={n}, {tier}"


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_propagates_through_reductions_at_every_size(dtype, tier):
    """One NaN anywhere makes every reduction NaN, whatever the size (a reduction XLA splits
    into vector lanes and a tail, NumPy's pairwise blocks)."""
    sizes = (1, 2, 7, 8, 9, 100, 4099)
    hosts = []
    for n in sizes:
        h = np.arange(n, dtype=dtype)
        h[n // 2] = np.nan
        hosts.append(h)

    def reduce_all(*xs: Any) -> tuple[Any, ...]:
        out = []
        for x in xs:
            out += [xp.max(x), xp.min(x), xp.sum(x), xp.prod(x), xp.mean(x), xp.cumulative_sum(x)[-1]]
            out += [xp.max(xp.reshape(x, (1, -1)), axis=1), xp.sum(xp.reshape(x, (1, -1)), axis=-1)]
        return tuple(out)

    got = _run_on(tier, reduce_all, *hosts)
    assert all(np.isnan(g).all() for g in got), [i for i, g in enumerate(got) if not np.isnan(g).all()]


# -- cold graphs run where the data lives --------------------------------------------------------


def test_an_accelerators_cold_graphs_run_op_by_op_on_the_device_then_compile(monkeypatch):
    """On a device whose cold graphs do not run on the host (every kind but the CPU), no graph
    runs on the host's NumPy interpreter: a graph's first sighting runs op by op on the device
    through the primitives' own programs (shared with the eager device), its second compiles,
    a graph of more than OP_BY_OP_LIMIT operations compiles at once, and every value is right.
    (A CPU declaring a TPU's capabilities stands in for an accelerator here.)"""
    from x10array._backends.lazy import interpreter, placement, tiering
    from x10array._core import op_programs

    cpu = xp.Device("cpu", 0, "xla")
    assert placement.interprets_cold_graphs(cpu)  # the CPU's rule: interpreted while cold
    for kind in ("tpu", "gpu"):  # (a stand-in: this machine may have no such device)
        assert not placement.interprets_cold_graphs(SimpleNamespace(kind=DeviceKind(kind)))

    def no_host_interpreter(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cold graph of an accelerator ran on the host's interpreter")

    monkeypatch.setattr(interpreter, "interpret", no_host_interpreter)
    monkeypatch.setattr(interpreter, "run_single", lambda node, device: no_host_interpreter())
    host = np.linspace(-2.0, 2.0, 12, dtype=np.float32)
    with settings.override(X10ARRAY_CPU_PROFILE="tpu"):
        assert not placement.interprets_cold_graphs(cpu) and placement.placement_of(cpu).op_by_op
        x = xp.asarray(host, device=cpu)
        counts = []
        for _ in range(3):  # one structure, three sightings
            before = xp.metrics()
            total = float(xp.sum(xp.exp(x) * 2.0 - x))
            counted = xp.metrics() - before
            counts.append((counted.interpreted_graphs, counted.compile_count + counted.disk_cache_loads))
            assert math.isclose(total, float(np.sum(np.exp(host) * 2.0 - host)), rel_tol=1e-6)
        assert counts[0] == (1, 0)  # op by op: nothing compiled for the graph
        assert counts[1][0] == 0 and counts[2] == (0, 0)  # compiled at the second sighting, then reused
        assert "exp" in {prim.name for prim, _ in op_programs._JITTED.entries}  # the primitives' programs

        first = float(x[3] + 1.0)  # one operation whose operands are computed (run_single's case on a CPU)
        assert first == host[3] + np.float32(1.0)
        z = xp.where(x > 0, x, -x)
        np.testing.assert_array_equal(np.asarray(z), np.abs(host))

        before = xp.metrics()
        y = x
        for i in range(tiering.OP_BY_OP_LIMIT + 1):  # a model's step: compiled at its first sighting
            y = y * 1.0 + 0.0 if i % 2 else y + 0.0
        np.testing.assert_array_equal(np.asarray(y), host)
        counted = xp.metrics() - before
        assert counted.interpreted_graphs == 0 and counted.compile_count + counted.disk_cache_loads == 1


if __name__ == "__main__":
    table = bounds()
    for dtype in FLOATS:
        rows: dict[str, list[float]] = {}
        for tier in ROUNDED:
            for name, d in measured(dtype, tier).items():
                rows.setdefault(name, []).append(d)
        print(f"\n{dtype}: function, " + ", ".join(ROUNDED) + ", bound")
        for name, ds in rows.items():
            print(f"  {name:12s} " + " ".join(f"{d:10.3g}" for d in ds) + f"   {table.get((name, dtype), '-')}")
