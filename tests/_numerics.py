"""Elementwise numerics of the three tiers: eager (NumPy), lazy interpreted, lazy compiled.

Every elementwise function of the standard (the list in `_standard_names`) runs on the same
inputs on the eager CPU device and on the lazy XLA device, once with every graph interpreted
and once with every graph compiled (`_lazy.compile_threshold`). Inputs per dtype: every pair
(for binary functions) of special values (zeros, infinities, NaN, subnormals, the smallest
normal `tiny`, the largest finite `max`, values near the overflow of exp) and random values
spread over the magnitudes where the functions are interesting.

Measured per function and dtype:

- `ulp_interp`, `ulp_compiled`: the largest distance in units in the last place from the
  eager result, over the elements whose inputs hold no subnormal and whose eager result is
  not subnormal ("normal inputs"; NaN against NaN counts 0, NaN against a number infinity);
  for complex results the larger of the two parts;
- `tier_mismatch`: the elements where the two lazy tiers break the contract
  (`breaks_contract`): not the same value (any NaN equals any NaN) although a result is
  special (zero, infinite, NaN or subnormal; for a complex result, part by part, see
  `tiers_differ`), or more than 2 * BOUND_ULP apart; where an operand holds a subnormal, the
  subnormal rule (a tier may read it as a zero of its sign, and flush a subnormal result to
  one) lets each tier give eager's result on the operands as they are or flushed;
- `fma`: for multiply, the elements of `x * y + z` where the compiled tier is farther from
  the eager one than a contracted multiply-add (rounded once) can be.

Run: `python tests/_numerics.py [--random 100000] [--json out.json]` prints the table;
tests/test_numerics.py enforces the documented bounds with fewer random values.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

import numpy as np

if __name__ == "__main__":  # run from a checkout: import the checkout's x10array
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _standard_names import CHAPTERS  # noqa: E402

import x10array as xp  # noqa: E402
from x10array._backends import lazy as _lazy  # noqa: E402

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
FUNCTIONS = CHAPTERS["elementwise_functions"]
DTYPES = ("float32", "float64", "complex64", "complex128", "int32", "int64", "uint8", "bool")
BOUND_ULP = 4  # the documented bound at normal inputs, both lazy tiers, against eager


def arity(name: str) -> int:
    if name == "clip":
        return 3
    fn = getattr(xp, name)
    prim = getattr(fn, "primitive", None)
    if prim is None:
        raise AssertionError(f"{name}: no primitive")
    import inspect

    return len([p for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_ONLY])


def real_specials(dtype: np.dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    sub = fi.smallest_subnormal
    big = 88.5 if dtype == np.float32 else 709.5
    values = [
        0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, 3 * sub, fi.tiny / 2, -fi.tiny / 2,
        fi.tiny, -fi.tiny, 1.5 * fi.tiny, fi.max, -fi.max, 1.0, -1.0, 0.5, -0.5, 2.0, 1.5, 3.0,
        big, -big, math.pi, 1e-30, -0.41, 0.41,
    ]  # fmt: skip
    with np.errstate(all="ignore"):
        return np.array(values, dtype=dtype)


def real_random(dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Normal (or zero) values: magnitudes from 1e-30 to 1e30 (1e-300..1e300 for float64),
    values in (-1, 1), (-10, 10), (-100, 100), and up to the overflow of exp."""
    fi = np.finfo(dtype)
    top = math.log10(fi.max) - 1
    q = n // 5
    parts = [
        np.sign(rng.standard_normal(q)) * 10.0 ** rng.uniform(-top, top, q),
        rng.uniform(-1, 1, q),
        rng.uniform(-10, 10, q),
        rng.uniform(-100, 100, q),
        rng.uniform(-1, 1, n - 4 * q) * math.log(fi.max),
    ]
    out = np.concatenate(parts).astype(dtype)
    out[np.abs(out) < fi.tiny] = 0.0
    return out


def inputs(name: str, dtype: str, n_random: int, seed: int = 0) -> list[np.ndarray]:
    """The operands (host arrays) for `name` at `dtype`: a grid of special values, then
    random values."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    k = arity(name)
    if dt.kind == "b":
        specials = np.array([False, True])
        randoms = [rng.integers(0, 2, n_random).astype(bool) for _ in range(k)]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        specials = np.array(
            sorted({0, 1, 2, 7, info.max, info.min, info.max - 1} | ({-1, -7} if dt.kind == "i" else set())), dtype=dt
        )
        randoms = [rng.integers(info.min, info.max, n_random, dtype=dt, endpoint=True) for _ in range(k)]
        if name in ("bitwise_left_shift", "bitwise_right_shift"):
            randoms[1] = rng.integers(0, 8 * dt.itemsize, n_random).astype(dt)
    elif dt.kind == "f":
        specials = real_specials(dt)
        randoms = [real_random(dt, n_random, rng) for _ in range(k)]
    else:
        part = np.dtype(f"float{dt.itemsize * 4}")
        rs = real_specials(part)
        rs = rs[[0, 1, 2, 3, 4, 5, 8, 10, 12, 13, 15, 16, 17, 22, 23]]  # a subset: pairs of pairs grow fast
        re, im = np.meshgrid(rs, rs, indexing="ij")
        specials = (re.ravel() + 0j).astype(dt)
        specials.imag = im.ravel()
        randoms = []
        for _ in range(k):
            z = real_random(part, n_random, rng).astype(dt)
            z.imag = real_random(part, n_random, rng)
            randoms.append(z)
    if k == 1:
        grid = [specials]
    elif k == 2:
        a, b = np.meshgrid(specials, specials, indexing="ij")
        grid = [a.ravel(), b.ravel()]
    else:  # clip: x over the specials, bounds from a few
        few = specials[: min(len(specials), 8)]
        a, b, c = np.meshgrid(specials, few, few, indexing="ij")
        grid = [a.ravel(), b.ravel(), c.ravel()]
    return [np.concatenate([g, r]) for g, r in zip(grid, randoms)]


def accepts(name: str, dtype: str) -> bool:
    host = inputs(name, dtype, 1)
    try:
        call(name, [xp.asarray(h, device=EAGER) for h in host])
    except TypeError:
        return False
    return True


def call(name: str, operands: list) -> Any:
    fn = getattr(xp, name)
    if name == "clip":
        return fn(operands[0], min=operands[1], max=operands[2])
    return fn(*operands)


if not hasattr(_lazy, "compile_threshold"):  # an older x10array (measuring "before")
    import contextlib

    @contextlib.contextmanager
    def _threshold(n: int | None) -> Any:
        old = _lazy.COMPILE_THRESHOLD
        _lazy.COMPILE_THRESHOLD = 2**62 if n is None else n
        try:
            yield
        finally:
            _lazy.COMPILE_THRESHOLD = old

    _lazy.compile_threshold = _threshold


def run_lazy(cases: list[tuple[str, list[np.ndarray]]], tier: int | None) -> list[np.ndarray]:
    """All the cases recorded into one lazy graph and run at one barrier, on one tier."""
    with _lazy.compile_threshold(tier):
        outs = [call(name, [xp.asarray(h, device=LAZY) for h in host]) for name, host in cases]
        xp.lazy_barrier()
        return [np.asarray(o) for o in outs]


# Functions whose result can be much smaller than their operands through cancellation
# (logaddexp(a, b) near 0 for a, b near -log 2): there NumPy's own float formula loses
# relative accuracy, so no tier can hold a relative bound against it; they are held to
# BOUND_ULP units in the last place of the largest of the result and the operands.
ABSOLUTE = {"logaddexp"}


def absolute_ulps(got: np.ndarray, ref: np.ndarray, host: list[np.ndarray]) -> np.ndarray:
    d = ulp_distance(got, ref)
    with np.errstate(all="ignore"):
        scale = np.maximum.reduce([np.abs(ref)] + [np.abs(h) for h in host])
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64)) / np.spacing(scale.astype(got.dtype)).astype(
            np.float64
        )
    finite = np.isfinite(got) & np.isfinite(ref) & np.isfinite(scale)
    return np.where(finite, np.minimum(d, err), d)


def ordered(a: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values (-0 and +0 adjacent, one apart)."""
    bits = a.view(np.int32 if a.dtype == np.float32 else np.int64).astype(np.int64)
    if a.dtype == np.float32:
        return np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)
    # float64: the same in int64, computed without overflow
    return np.where(bits < 0, -(bits & 0x7FFFFFFFFFFFFFFF) - 1, bits)


def ulp_distance(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Elementwise distance in ULPs (inf where exactly one is NaN; 0 where both are)."""
    if got.dtype.kind == "c":
        return np.maximum(
            ulp_distance(got.real.copy(), ref.real.copy()), ulp_distance(got.imag.copy(), ref.imag.copy())
        )
    if got.dtype.kind != "f":
        return np.where(got == ref, 0.0, np.inf)
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    d = np.abs(ordered(got) - ordered(ref)).astype(np.float64)
    d = np.where(nan_g | nan_r, np.where(nan_g & nan_r, 0.0, np.inf), d)
    return d


def subnormal(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return subnormal(a.real) | subnormal(a.imag)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    return (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)


def special(a: np.ndarray, zero: bool = True) -> np.ndarray:
    """Infinite, NaN, subnormal or (with `zero`) zero (either part, for complex); every
    non-float value."""
    if a.dtype.kind == "c":
        return special(a.real, zero) | special(a.imag, zero)
    if a.dtype.kind != "f":
        return np.ones(a.shape, bool)
    out = ~np.isfinite(a) | subnormal(a)
    return out | (a == 0) if zero else out


def any_special(host: list[np.ndarray], zero: bool = True) -> np.ndarray:
    out = special(host[0], zero)
    for h in host[1:]:
        out = out | special(h, zero)
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return same_bits(a.real.copy(), b.real.copy()) & same_bits(a.imag.copy(), b.imag.copy())
    if a.dtype.kind == "f":
        return (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a) & np.isnan(b))
    return a == b


def flushed(a: np.ndarray) -> np.ndarray:
    """`a` with every subnormal (part) replaced by a zero of its sign: what a tier that flushes
    subnormals reads (docs/numerics.md, the subnormal rule)."""
    a = np.array(a, copy=True)
    if a.dtype.kind == "c":
        re, im = flushed(a.real), flushed(a.imag)
        a.real, a.imag = re, im
        return a
    if a.dtype.kind == "f":
        sub = subnormal(a)
        a[sub] = np.copysign(0.0, a[sub])
    return a


def same_under_flush(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same bits (any NaN matching any NaN), or both finite and at most the smallest
    normal apart (the subnormal rule: a tier that flushes subnormals, in its operands,
    intermediates or results, is off by less than the smallest normal, a zero's sign
    included), part by part."""
    if a.dtype.kind == "c":
        return same_under_flush(a.real.copy(), b.real.copy()) & same_under_flush(a.imag.copy(), b.imag.copy())
    if a.dtype.kind != "f":
        return a == b
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(all="ignore"):
        near = np.isfinite(a) & np.isfinite(b) & (np.abs(a.astype(np.float64) - b.astype(np.float64)) <= tiny)
    return same_bits(a, b) | near


def tiers_differ(a: np.ndarray, b: np.ndarray, host: list[np.ndarray], absolute: bool = False) -> np.ndarray:
    """Where two results `a`, `b` of the same function on the same operands disagree beyond the
    contract: not the same value (up to the flush of a subnormal result, `same_under_flush`)
    although one is special (zero, infinite, NaN, subnormal), or more than 2 * BOUND_ULP apart.
    Complex results part by part: a part must match where it is special in either (the real
    criterion, per part), and within the bound elsewhere: sin(1 + 0j) has an exact zero
    imaginary part, and its real part, each tier's real sin(1), is held to what real sin(1) is
    held to."""
    if a.dtype.kind == "c":
        return tiers_differ(a.real.copy(), b.real.copy(), host) | tiers_differ(a.imag.copy(), b.imag.copy(), host)
    apart = absolute_ulps(a, b, host) if absolute else ulp_distance(a, b)
    return ~same_under_flush(a, b) & (special(a) | special(b) | (apart > 2 * BOUND_ULP))


def breaks_contract(
    got: np.ndarray,
    other: np.ndarray,
    host: list[np.ndarray],
    refs: tuple[np.ndarray, np.ndarray],
    absolute: bool = False,
) -> np.ndarray:
    """Where a tier's result `got` breaks the contract against `other` (the other tier's): at
    operands without a subnormal, `tiers_differ`; at operands holding one (the subnormal rule:
    a tier may read a subnormal operand as a zero of its sign), `got` must agree
    (`tiers_differ`) with `other` or with one of `refs`, the eager results on the operands as
    they are and on the operands flushed."""
    sub = np.zeros(got.shape, bool)
    for h in host:
        sub = sub | np.broadcast_to(subnormal(np.asarray(h)), got.shape)
    bad = tiers_differ(got, other, host, absolute) & ~sub
    raw, flat = refs
    apart = tiers_differ(got, other, host, absolute)
    either = apart & tiers_differ(got, raw, host, absolute) & tiers_differ(got, flat, host, absolute)
    return bad | (sub & either)


def measure(n_random: int = 2000, dtypes: tuple[str, ...] = DTYPES, names: tuple[str, ...] = FUNCTIONS) -> dict:
    """{(name, dtype): {ulp_interp, ulp_compiled, over_interp, over_compiled, tier_mismatch,
    n, worst}} over the functions that accept the dtype."""
    results: dict = {}
    for dtype in dtypes:
        cases = [(name, inputs(name, dtype, n_random)) for name in names if accepts(name, dtype)]
        eager = [np.asarray(call(name, [xp.asarray(h, device=EAGER) for h in host])) for name, host in cases]
        eager_flushed = [
            np.asarray(call(name, [xp.asarray(flushed(h), device=EAGER) for h in host])) for name, host in cases
        ]
        interp = run_lazy(cases, None)
        compiled = run_lazy(cases, 1)
        for (name, host), ref, ref_flushed, a, b in zip(cases, eager, eager_flushed, interp, compiled):
            normal = ~subnormal(ref)
            for h in host:
                normal &= ~subnormal(h)
            row: dict[str, Any] = {"n": int(ref.size)}
            for tier, got in (("interp", a), ("compiled", b)):
                d = ulp_distance(got, ref)
                if name in ABSOLUTE:  # in ULPs of the largest operand (see ABSOLUTE)
                    d = absolute_ulps(got, ref, host)
                d = d[normal]
                row[f"ulp_{tier}"] = float(d.max()) if d.size else 0.0
                row[f"over_{tier}"] = int((d > BOUND_ULP).sum())
                if d.size and d.max() > BOUND_ULP:
                    i = int(np.flatnonzero(normal)[np.argmax(d)])
                    row[f"worst_{tier}"] = (
                        f"{[h[i].item() for h in host]} -> {got[i].item()!r} (eager {ref[i].item()!r})"
                    )
            # the tiers must agree exactly where an input or a result is special (zero,
            # infinite, NaN, subnormal; up to the subnormal rule); elsewhere each is held to its
            # bound against eager
            refs = (ref, ref_flushed)
            absolute = name in ABSOLUTE
            diff = breaks_contract(a, b, host, refs, absolute) | breaks_contract(b, a, host, refs, absolute)
            row["tier_mismatch"] = int(diff.sum())
            if diff.any():
                i = int(np.flatnonzero(diff)[0])
                row["mismatch_example"] = (
                    f"{[h[i].item() for h in host]}: interpreted {a[i].item()!r}, compiled {b[i].item()!r}"
                )
            results[(name, dtype)] = row
    return results


def fma_mismatches(n: int = 100_000) -> dict[str, int]:
    """Elements of x * y + z (one lazy graph, compiled) farther from the eager result than
    the rounding of the product and of the sum allow (XLA may contract them into one fused
    multiply-add, rounded once: within an ULP of the product plus an ULP of the sum)."""
    out = {}
    rng = np.random.default_rng(1)
    for dtype in ("float32", "float64"):
        x, y, z = (rng.standard_normal(n).astype(dtype) for _ in range(3))
        ref = x * y + z
        with _lazy.compile_threshold(1):
            a, b, c = (xp.asarray(v, device=LAZY) for v in (x, y, z))
            got = np.asarray(a * b + c)
        bound = np.spacing(np.abs(x * y)).astype(np.float64) + np.spacing(np.abs(ref)).astype(np.float64)
        out[dtype] = int((np.abs(got.astype(np.float64) - ref) > bound).sum())
    return out


def _fmt(v: float) -> str:
    if v == math.inf:
        return "inf"
    return f"{v:.0f}" if v >= 10 else f"{v:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=100_000, help="random values per operand")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--all", action="store_true", help="print every row, not only the float ones")
    args = parser.parse_args()
    results = measure(args.random)
    print(f"x * y + z, compiled, elements differing from eager: {fma_mismatches()}")
    print()
    print("max ULP vs eager at normal inputs (interpreted / compiled), and elements where the two")
    print(f"lazy tiers differ (all inputs, subnormals included); {args.random} random values per operand")
    print()
    dts = [d for d in DTYPES if args.all or d.startswith(("float", "complex"))]
    print("| function | " + " | ".join(dts) + " |")
    print("|---|" + "---|" * len(dts))
    total = dict.fromkeys(dts, 0)
    for name in FUNCTIONS:
        cells = []
        for d in dts:
            row = results.get((name, d))
            if row is None:
                cells.append("")
                continue
            total[d] += row["tier_mismatch"]
            cells.append(f"{_fmt(row['ulp_interp'])} / {_fmt(row['ulp_compiled'])} / {row['tier_mismatch']}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| tier mismatches, total | " + " | ".join(str(total[d]) for d in dts) + " |")
    print()
    for (name, d), row in results.items():
        for key in ("worst_interp", "worst_compiled", "mismatch_example"):
            if key in row:
                print(f"{name} {d} {key}: {row[key]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{n}:{d}": r for (n, d), r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
