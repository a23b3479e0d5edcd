"""Differential tests: the same inputs through x10array and array-api-strict.

One table of cases. Each case is a function of a namespace and some arrays; the arrays are
generated once (NumPy, fixed seed) and handed to both libraries. Results must agree in
structure, dtype, shape and value (floating point within the dtype's tolerance). Every case
runs with the NumPy eager CPU kernels and with the XLA op-by-op kernels.

Where the standard leaves an order unspecified (unique, eigenvalues) the case puts the result
in a canonical form with the namespace's own functions. Inputs stay where NumPy (and so
array-api-strict) follows the standard; the special cases are the conformance suite's job.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable
from typing import Any

import array_api_strict as strict
import numpy as np
import pytest
from _util import assert_values, dtype_name
from array_api_strict._array_object import Array as StrictArray

import x10array as xp

# -- inputs ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class A:
    """An input array: shape, dtype name and value domain."""

    shape: tuple[int, ...]
    dtype: str = "float64"
    values: str = "any"


_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, -0.5, 1e-30, 3.0, -7.25]


def generate(spec: A, rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(spec.dtype)
    shape, values = spec.shape, spec.values
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = {
            "any": (-20, 21),
            "pos": (1, 21),
            "nonzero": (1, 21),
            "small": (0, 5),
            "shift": (0, info.bits),
            "index": (0, 4),
            "dup": (0, 4),
        }[values]
        if dtype.kind == "u":
            lo = max(lo, 0 if values != "nonzero" else 1)
        out = rng.integers(lo, hi, size=shape).astype(dtype)
        if values == "nonzero" and dtype.kind == "i":
            out = np.where(rng.random(shape) < 0.5, out, -out).astype(dtype)
        return out
    real = dtype if dtype.kind == "f" else np.dtype(f"float{dtype.itemsize * 4}")

    def draw() -> np.ndarray:
        if values == "special":
            return rng.choice(np.array(_SPECIAL), size=shape)
        if values == "pos":
            return rng.uniform(0.1, 10.0, size=shape)
        if values == "unit":
            return rng.uniform(-0.95, 0.95, size=shape)
        if values == "ge1":
            return rng.uniform(1.0, 10.0, size=shape)
        if values == "small":
            return rng.uniform(-4.0, 4.0, size=shape)
        if values == "nonzero":
            v = rng.uniform(0.5, 5.0, size=shape)
            return np.where(rng.random(shape) < 0.5, v, -v)
        if values == "dup":
            return rng.integers(0, 4, size=shape).astype(float)
        if values == "spd":  # symmetric positive definite matrices in the last two dims
            m = rng.normal(size=shape)
            return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])
        if values == "sym":
            m = rng.normal(size=shape)
            return m + np.swapaxes(m, -1, -2)
        return rng.normal(scale=3.0, size=shape)

    out = draw().astype(real)
    if dtype.kind == "c":
        imag = draw().astype(real) if values not in ("spd", "sym") else 0
        out = (out + 1j * imag).astype(dtype)
    return out


# -- the table ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    fn: Callable[..., Any]
    inputs: tuple[A, ...]
    scale: float = 1.0  # tolerance multiplier (ill-conditioned operations)


CASES: list[Case] = []


def case(id: str, fn: Callable[..., Any], *inputs: A, scale: float = 1.0) -> None:
    CASES.append(Case(id, fn, inputs, scale))


def call(name: str, **kwargs: Any) -> Callable[..., Any]:
    """`ns.<name>(*arrays, **kwargs)`; dotted names reach into linalg / fft."""

    def fn(ns: Any, *arrays: Any) -> Any:
        target = ns
        for part in name.split("."):
            target = getattr(target, part)
        return target(*arrays, **kwargs)

    return fn


def _kw(kwargs: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in kwargs.items())


FLOAT = ("float32", "float64")
FLOATING = ("float32", "float64", "complex64", "complex128")
REAL = ("int8", "int16", "int64", "uint8", "uint32", "float32", "float64")
NUMERIC = REAL + ("complex64", "complex128")
INTEGER = ("int8", "int32", "int64", "uint8", "uint16", "uint64")

# Elementwise, one operand: (name, dtypes, value domain for real floats)
UNARY = [
    ("abs", NUMERIC, "special"), ("negative", NUMERIC, "special"), ("positive", NUMERIC, "any"),
    ("square", NUMERIC, "any"), ("sign", NUMERIC, "special"), ("round", FLOATING, "any"),
    ("ceil", REAL, "special"), ("floor", REAL, "special"), ("trunc", REAL, "special"),
    ("conj", NUMERIC, "any"), ("real", NUMERIC, "any"), ("imag", ("complex64", "complex128"), "any"),
    ("isfinite", NUMERIC, "special"), ("isinf", NUMERIC, "special"), ("isnan", NUMERIC, "special"),
    ("signbit", FLOAT, "special"),
    ("exp", FLOATING, "small"), ("expm1", FLOATING, "small"), ("log", FLOATING, "pos"),
    ("log1p", FLOATING, "pos"), ("log2", FLOATING, "pos"), ("log10", FLOATING, "pos"),
    ("sqrt", FLOATING, "special"), ("reciprocal", FLOATING, "nonzero"),
    ("sin", FLOATING, "small"), ("cos", FLOATING, "small"), ("tan", FLOATING, "unit"),
    ("asin", FLOATING, "unit"), ("acos", FLOATING, "unit"), ("atan", FLOATING, "any"),
    ("sinh", FLOATING, "small"), ("cosh", FLOATING, "small"), ("tanh", FLOATING, "small"),
    ("asinh", FLOATING, "any"), ("acosh", FLOAT, "ge1"), ("atanh", FLOATING, "unit"),
    ("logical_not", ("bool",), "any"), ("bitwise_invert", ("bool",) + INTEGER, "any"),
]  # fmt: skip
for _name, _dtypes, _values in UNARY:
    for _dt in _dtypes:
        _v = _values if _dt in FLOAT else ("pos" if _values in ("pos", "ge1") else "small")
        if _dt not in FLOAT and _values in ("any", "special") and _dt[0] != "c":
            _v = "any"
        if _dt[0] == "c" and _name in ("sqrt", "log", "log1p", "log2", "log10"):
            _v = "pos"
        case(f"{_name}-{_dt}", call(_name), A((4, 5), _dt, _v))

# Elementwise, two operands: (name, [(dtype1, dtype2, values1, values2)])
_SAME = lambda dts, v1="any", v2="any": [(d, d, v1, v2) for d in dts]  # noqa: E731
BINARY = [
    ("add", _SAME(NUMERIC) + [("int8", "int32", "any", "any"), ("uint8", "int16", "any", "any"),
                              ("float32", "float64", "any", "any"), ("float32", "complex128", "any", "any"),
                              ("float64", "float64", "special", "special")]),
    ("subtract", _SAME(NUMERIC) + [("uint16", "int8", "any", "any")]),
    ("multiply", _SAME(NUMERIC) + [("float64", "float64", "special", "special")]),
    ("divide", _SAME(FLOATING, "any", "nonzero") + [("float64", "float64", "special", "special")]),
    ("floor_divide", _SAME(REAL, "any", "nonzero")),
    ("remainder", _SAME(REAL, "any", "nonzero")),
    ("pow", _SAME(FLOAT, "pos", "small") + _SAME(("complex128",), "small", "small")
     + _SAME(("int8", "int64", "uint8"), "small", "small")),
    ("maximum", _SAME(REAL) + [("float64", "float64", "special", "special")]),
    ("minimum", _SAME(REAL) + [("float64", "float64", "special", "special")]),
    ("hypot", _SAME(FLOAT) + [("float64", "float64", "special", "special")]),
    ("copysign", _SAME(FLOAT, "special", "special")),
    ("nextafter", _SAME(FLOAT)),
    ("logaddexp", _SAME(FLOAT)),
    ("atan2", _SAME(FLOAT) + [("float64", "float64", "special", "special")]),
    ("equal", _SAME(("bool",) + NUMERIC) + [("int8", "uint8", "any", "any"),
                                             ("float64", "float64", "special", "special")]),
    ("not_equal", _SAME(("bool",) + NUMERIC)),
    ("less", _SAME(REAL) + [("float64", "float64", "special", "special")]),
    ("less_equal", _SAME(REAL)),
    ("greater", _SAME(REAL)),
    ("greater_equal", _SAME(REAL) + [("int16", "uint8", "any", "any")]),
    ("logical_and", _SAME(("bool",))),
    ("logical_or", _SAME(("bool",))),
    ("logical_xor", _SAME(("bool",))),
    ("bitwise_and", _SAME(("bool",) + INTEGER)),
    ("bitwise_or", _SAME(("bool",) + INTEGER)),
    ("bitwise_xor", _SAME(("bool",) + INTEGER)),
    ("bitwise_left_shift", [(d, d, "any" if d[0] == "u" else "pos", "small") for d in INTEGER]),
    ("bitwise_right_shift", [(d, d, "any", "shift") for d in INTEGER]),
]  # fmt: skip
for _name, _combos in BINARY:
    for _d1, _d2, _v1, _v2 in _combos:
        case(f"{_name}-{_d1}-{_d2}-{_v1}", call(_name), A((3, 4), _d1, _v1), A((3, 4), _d2, _v2))
    _d1, _d2, _v1, _v2 = _combos[0]
    case(f"{_name}-broadcast", call(_name), A((2, 1, 4), _d1, _v1), A((3, 1), _d2, _v2))
    case(f"{_name}-0d", call(_name), A((), _d1, _v1), A((3,), _d2, _v2))

# Python scalars with arrays (the standard's scalar rules).
case("add-int-scalar", lambda ns, x: ns.add(x, 3), A((5,), "int16"))
case("add-scalar-left", lambda ns, x: 3 + x, A((5,), "uint8"))
case("multiply-float-scalar", lambda ns, x: x * 2.5, A((5,), "float32"))
case("subtract-rscalar", lambda ns, x: 1.5 - x, A((5,), "float64"))
case("divide-rscalar", lambda ns, x: 1.0 / x, A((5,), "float32", "nonzero"))
case("pow-scalar", lambda ns, x: x**2, A((5,), "int32", "small"))
case("pow-float-scalar", lambda ns, x: x**0.5, A((5,), "float64", "pos"))
case("complex-scalar", lambda ns, x: x * (1 - 2j), A((5,), "complex64"))
case("compare-scalar", lambda ns, x: x < 0.5, A((5,), "float32"))
case("and-bool-scalar", lambda ns, x: x & True, A((5,), "bool"))
case("floordiv-scalar", lambda ns, x: x // 3, A((5,), "int8"))
case("mod-scalar", lambda ns, x: x % 2.5, A((5,), "float64"))
case("matmul-operator", lambda ns, a, b: a @ b, A((3, 4)), A((4, 2)))
case("rshift-operator", lambda ns, a: a >> 1, A((5,), "int64"))
for _kwargs in ({"min": -1.0, "max": 1.0}, {"min": 0.0}, {"max": -0.5}):
    case(f"clip-{_kw(_kwargs)}", call("clip", **_kwargs), A((4, 4), "float64"))
case("clip-int", call("clip", min=-3, max=4), A((6,), "int16"))
case("clip-array-bounds", lambda ns, x, lo: ns.clip(x, min=lo, max=lo + 2), A((3, 4), "float32"), A((4,), "float32"))

# Reductions
for _name, _dtypes in (
    ("sum", ("int8", "uint8", "int32", "float32", "float64", "complex64")),
    ("prod", ("int8", "uint16", "float32", "float64", "complex128")),
    ("mean", FLOATING),
    ("max", REAL),
    ("min", REAL),
    ("std", FLOAT),
    ("var", FLOAT),
):
    for _dt in _dtypes:
        _v = "small" if _name == "prod" else "any"
        for _kwargs in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 2)}):
            case(f"{_name}-{_dt}-{_kw(_kwargs)}", call(_name, **_kwargs), A((3, 4, 2), _dt, _v))
case("sum-dtype", lambda ns, x: ns.sum(x, dtype=ns.float64), A((10,), "float32"))
case("sum-dtype-strict-check", lambda ns, x: ns.sum(x, dtype=ns.int16), A((10,), "int8"))
case("prod-dtype", lambda ns, x: ns.prod(x, dtype=ns.float64), A((4,), "float32", "small"))
case("std-correction", call("std", correction=1), A((10,), "float64"))
case("var-correction-axis", call("var", correction=1.0, axis=1), A((3, 6), "float32"))
case("mean-empty-axis", call("mean", axis=()), A((3, 2), "float64"))
for _name in ("cumulative_sum", "cumulative_prod"):
    for _dt in ("int8", "uint8", "int64", "float32", "float64", "complex128"):
        case(f"{_name}-{_dt}", call(_name), A((6,), _dt, "small"))
        case(f"{_name}-{_dt}-axis", call(_name, axis=1), A((3, 4), _dt, "small"))
    case(f"{_name}-include-initial", call(_name, axis=0, include_initial=True), A((3, 4), "float64", "small"))
    case(f"{_name}-dtype", lambda ns, x, _n=_name: getattr(ns, _n)(x, dtype=ns.float64), A((5,), "float32", "small"))

# Searching
for _name in ("argmax", "argmin"):
    for _dt in ("int8", "uint16", "float32", "float64"):
        case(f"{_name}-{_dt}", call(_name), A((4, 5), _dt))
        case(f"{_name}-{_dt}-axis", call(_name, axis=1, keepdims=True), A((4, 5), _dt, "dup"))
for _kwargs in ({}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}):
    case(f"count_nonzero-{_kw(_kwargs)}", call("count_nonzero", **_kwargs), A((3, 4), "int8", "dup"))
case("count_nonzero-float", call("count_nonzero"), A((3, 4), "float64", "special"))
case("nonzero-1d", call("nonzero"), A((8,), "int32", "dup"))
case("nonzero-2d", call("nonzero"), A((3, 4), "bool"))
for _side in ("left", "right"):
    case(f"searchsorted-{_side}", lambda ns, a, v, s=_side: ns.searchsorted(ns.sort(a), v, side=s),
         A((10,), "float64", "dup"), A((3, 2), "float64", "dup"))  # fmt: skip
case("searchsorted-sorter", lambda ns, a, v: ns.searchsorted(a, v, sorter=ns.argsort(a)),
     A((10,), "int64", "any"), A((4,), "int64", "any"))  # fmt: skip
case("searchsorted-scalar", lambda ns, a: ns.searchsorted(ns.sort(a), 0.5), A((10,), "float64"))
case("where", call("where"), A((3, 4), "bool"), A((3, 4), "float64"), A((4,), "float64"))
case("where-promote", call("where"), A((3, 4), "bool"), A((3, 4), "int8"), A((3, 4), "int32"))
case("where-scalars", lambda ns, c, x: ns.where(c, x, 0.0), A((5,), "bool"), A((5,), "float32"))


# Sets (the standard leaves the order of unique values unspecified: compare sorted)
def _sorted_unique_counts(ns: Any, x: Any) -> Any:
    r = ns.unique_counts(x)
    order = ns.argsort(r.values)
    return ns.take(r.values, order), ns.take(r.counts, order)


def _unique_inverse_rebuilds(ns: Any, x: Any) -> Any:
    r = ns.unique_inverse(x)
    assert r.inverse_indices.shape == x.shape
    rebuilt = ns.reshape(ns.take(r.values, ns.reshape(r.inverse_indices, (-1,))), x.shape)
    return ns.sort(r.values), rebuilt


def _unique_all_consistent(ns: Any, x: Any) -> Any:
    r = ns.unique_all(x)
    flat = ns.reshape(x, (-1,))
    order = ns.argsort(r.values)
    return (
        ns.take(r.values, order),
        ns.take(r.counts, order),
        ns.take(flat, r.indices),  # the first occurrences hold the unique values
        ns.reshape(ns.take(r.values, ns.reshape(r.inverse_indices, (-1,))), x.shape),
    )


for _dt in ("int8", "uint8", "int64", "float32", "float64"):
    case(f"unique_values-{_dt}", lambda ns, x: ns.sort(ns.unique_values(x)), A((4, 5), _dt, "dup"))
    case(f"unique_counts-{_dt}", _sorted_unique_counts, A((4, 5), _dt, "dup"))
    case(f"unique_inverse-{_dt}", _unique_inverse_rebuilds, A((4, 5), _dt, "dup"))
    case(f"unique_all-{_dt}", _unique_all_consistent, A((4, 5), _dt, "dup"))
case("isin", call("isin"), A((3, 4), "int32", "dup"), A((2,), "int32", "dup"))
# array-api-strict 2.6 ignores `invert` (it returns np.isin without it): compare with its negation.
case("isin-invert", lambda ns, x, t: ns.isin(x, t, invert=True) if ns is xp else ns.logical_not(ns.isin(x, t)),
     A((3, 4), "int32", "dup"), A((3,), "int32", "dup"))  # fmt: skip

# Sorting (stable sorts are deterministic, so argsort can be compared exactly)
for _dt in ("int8", "uint32", "float32", "float64"):
    case(f"sort-{_dt}", call("sort"), A((4, 6), _dt, "dup"))
    case(f"sort-{_dt}-axis0-desc", call("sort", axis=0, descending=True), A((4, 6), _dt, "dup"))
    case(f"argsort-{_dt}", call("argsort", stable=True), A((4, 6), _dt, "dup"))
    case(f"argsort-{_dt}-desc", call("argsort", axis=0, descending=True, stable=True), A((5, 3), _dt, "dup"))
case("sort-special", call("sort"), A((12,), "float64", "special"))

# Utility
for _name in ("all", "any"):
    for _dt in ("bool", "int8", "float64", "complex64"):
        case(f"{_name}-{_dt}", call(_name), A((3, 4), _dt, "dup"))
        case(f"{_name}-{_dt}-axis", call(_name, axis=1, keepdims=True), A((3, 4), _dt, "dup"))
    case(f"{_name}-axes", call(_name, axis=(0, 2)), A((2, 3, 2), "bool"))
for _kwargs in ({}, {"axis": 0}, {"n": 2}, {"n": 0}):
    case(f"diff-{_kw(_kwargs)}", call("diff", **_kwargs), A((4, 5), "float64"))
case("diff-int", call("diff"), A((6,), "int16"))
case("diff-prepend-append", lambda ns, x, p: ns.diff(x, axis=0, prepend=p, append=p),
     A((3, 2), "int64"), A((1, 2), "int64"))  # fmt: skip

# Manipulation
case("broadcast_arrays", call("broadcast_arrays"), A((3, 1)), A((1, 4)), A((4,)))
case("broadcast_to", call("broadcast_to", shape=(2, 3, 4)), A((3, 1), "int8"))
case("concat-0", lambda ns, a, b: ns.concat([a, b]), A((2, 3)), A((4, 3)))
case("concat-1", lambda ns, a, b: ns.concat((a, b), axis=1), A((2, 3), "int8"), A((2, 1), "int8"))
case("concat-none", lambda ns, a, b: ns.concat([a, b], axis=None), A((2, 3)), A((4,)))
case("concat-promote", lambda ns, a, b: ns.concat([a, b]), A((2,), "int8"), A((3,), "int64"))
case("expand_dims", call("expand_dims", axis=1), A((2, 3)))
case("expand_dims-neg", call("expand_dims", axis=-1), A((2, 3)))
case("flip", call("flip"), A((3, 4)))
case("flip-axis", call("flip", axis=(0, 2)), A((2, 3, 4)))
case("moveaxis", lambda ns, x: ns.moveaxis(x, 0, -1), A((2, 3, 4)))
case("moveaxis-tuple", lambda ns, x: ns.moveaxis(x, (0, 1), (2, 0)), A((2, 3, 4)))
case("permute_dims", call("permute_dims", axes=(2, 0, 1)), A((2, 3, 4)))
case("repeat-int", lambda ns, x: ns.repeat(x, 2, axis=1), A((2, 3)))
case("repeat-flat", lambda ns, x: ns.repeat(x, 3), A((2, 2), "int8"))
case("repeat-array", lambda ns, x: ns.repeat(x, ns.asarray([1, 0, 2]), axis=0), A((3, 2)))
case("reshape", call("reshape", shape=(4, -1)), A((2, 3, 4)))
case("reshape-0d", call("reshape", shape=()), A((1, 1)))
case("roll", call("roll", shift=2), A((3, 4)))
case("roll-axes", call("roll", shift=(1, -2), axis=(0, 1)), A((3, 4)))
case("squeeze", call("squeeze", axis=1), A((3, 1, 4)))
case("squeeze-tuple", call("squeeze", axis=(0, 2)), A((1, 3, 1)))
case("stack", lambda ns, a, b: ns.stack([a, b]), A((2, 3)), A((2, 3)))
case("stack-axis", lambda ns, a, b: ns.stack((a, b), axis=-1), A((2, 3), "uint8"), A((2, 3), "uint8"))
case("tile", lambda ns, x: ns.tile(x, (2, 1, 3)), A((2, 3)))
case("unstack", call("unstack", axis=1), A((2, 3)))
case("matrix_transpose", call("matrix_transpose"), A((2, 3, 4)))
case("mT", lambda ns, x: x.mT, A((2, 3, 4)))
case("T", lambda ns, x: x.T, A((3, 4)))

# Creation
case("arange-stop", lambda ns: ns.arange(7))
case("arange-step", lambda ns: ns.arange(1, 20, 3))
case("arange-negative-step", lambda ns: ns.arange(10, 0, -2))
case("arange-float", lambda ns: ns.arange(0.0, 2.0, 0.25))
case("arange-dtype", lambda ns: ns.arange(5, dtype=ns.float32))
case("asarray-nested-int", lambda ns: ns.asarray([[1, 2], [3, 4]]))
case("asarray-nested-float", lambda ns: ns.asarray([[1.5, 2.0], [3.0, -4.0]]))
case("asarray-bool", lambda ns: ns.asarray([True, False, True]))
case("asarray-complex", lambda ns: ns.asarray([1 + 2j, -3j]))
case("asarray-scalar", lambda ns: ns.asarray(2.5))
case("asarray-dtype", lambda ns: ns.asarray([1, 2, 3], dtype=ns.uint8))
case("asarray-array", lambda ns, x: ns.asarray(x, dtype=ns.float32), A((3,), "float64"))
case("eye", lambda ns: ns.eye(3))
case("eye-rect-k", lambda ns: ns.eye(3, 5, k=2, dtype=ns.int32))
case("eye-k-neg", lambda ns: ns.eye(4, k=-1))
case("full", lambda ns: ns.full((2, 3), 7))
case("full-float", lambda ns: ns.full((2,), -1.5, dtype=ns.float32))
case("full-bool", lambda ns: ns.full(3, True))
case("full-complex", lambda ns: ns.full((2, 2), 1 + 1j))
case("zeros", lambda ns: ns.zeros((2, 3), dtype=ns.int16))
case("ones", lambda ns: ns.ones(4))
case("zeros_like", call("zeros_like"), A((2, 3), "int8"))
case("ones_like-dtype", lambda ns, x: ns.ones_like(x, dtype=ns.complex64), A((2, 3)))
case("full_like", lambda ns, x: ns.full_like(x, 3), A((2, 2), "uint8"))
case("linspace", lambda ns: ns.linspace(0, 1, 7))
case("linspace-no-endpoint", lambda ns: ns.linspace(-2.0, 3.0, 5, endpoint=False))
case("linspace-float32", lambda ns: ns.linspace(0, 10, 11, dtype=ns.float32))
case("linspace-complex", lambda ns: ns.linspace(0, 1 + 2j, 4))
case("meshgrid-xy", lambda ns, a, b: ns.meshgrid(a, b), A((3,)), A((4,)))
case("meshgrid-ij", lambda ns, a, b: ns.meshgrid(a, b, indexing="ij"), A((3,)), A((4,)))
for _k in (0, 1, -1):
    case(f"tril-{_k}", call("tril", k=_k), A((4, 5)))
    case(f"triu-{_k}", call("triu", k=_k), A((2, 4, 3)))

# Data type functions
for _src, _dst in (("int32", "float64"), ("float64", "int32"), ("int64", "uint8"), ("float32", "complex64"),
                   ("bool", "int8"), ("int8", "bool"), ("float64", "float32"), ("uint8", "int8")):  # fmt: skip
    case(f"astype-{_src}-{_dst}", lambda ns, x, d=_dst: ns.astype(x, getattr(ns, d)), A((6,), _src, "small"))
case("result_type-dtypes", lambda ns: ns.result_type(ns.int8, ns.uint8, ns.int16))
case("result_type-arrays", lambda ns, a, b: ns.result_type(a, b), A((2,), "float32"), A((2,), "complex64"))
case("result_type-scalar", lambda ns, a: ns.result_type(a, 1.0), A((2,), "float32"))
for _a, _b in (("int8", "int16"), ("int16", "int8"), ("uint8", "int16"), ("float32", "float64"),
               ("int32", "float64"), ("bool", "int8"), ("float64", "complex128")):  # fmt: skip
    case(f"can_cast-{_a}-{_b}", lambda ns, a=_a, b=_b: ns.can_cast(getattr(ns, a), getattr(ns, b)))
for _dt in FLOATING:
    case(f"finfo-{_dt}", lambda ns, d=_dt: ns.finfo(getattr(ns, d)))
for _dt in INTEGER:
    case(f"iinfo-{_dt}", lambda ns, d=_dt: ns.iinfo(getattr(ns, d)))
for _kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"):
    case(f"isdtype-{_kind}", lambda ns, k=_kind: tuple(ns.isdtype(getattr(ns, d), k) for d in (
        "bool", "int8", "uint64", "float32", "complex128")))  # fmt: skip

# Indexing
case("take", lambda ns, x, i: ns.take(x, i, axis=1), A((3, 5)), A((4,), "int64", "index"))
case("take-1d", lambda ns, x, i: ns.take(x, i), A((5,), "int8"), A((6,), "int32", "index"))
case("take_along_axis", lambda ns, x, i: ns.take_along_axis(x, i, axis=0), A((5, 3)), A((2, 3), "int64", "index"))
case("take_along_axis-last", lambda ns, x: ns.take_along_axis(x, ns.argsort(x), axis=-1), A((3, 4)))
# Keys index every axis (the standard: fewer indices than dimensions "should" raise).
for _key, _shape in (
    ((1,), (5,)), ((-1,), (5,)), ((slice(1, None),), (5,)), ((slice(None, None, -1),), (6,)),
    ((slice(3, 0, -2),), (6,)), ((Ellipsis, 0), (4, 5)),
    ((None, slice(None), 1), (4, 5)), ((0, Ellipsis), (4, 5)), ((slice(-2, None), None, slice(None)), (4, 5)),
    ((), ()), ((1, 2), (4, 5)), ((slice(1, 3), slice(None, None, 2)), (4, 5)), ((Ellipsis,), (2, 3)),
    ((-1, slice(None), None, 0), (2, 3, 4)),
):  # fmt: skip
    case(f"getitem-{_key!r}-{_shape}", lambda ns, x, k=_key: x[k], A(_shape))
case("getitem-mask", lambda ns, x: x[x > 0], A((4, 5)))
case("getitem-mask-row", lambda ns, x, m: x[m], A((4, 5)), A((4,), "bool"))
case("getitem-mask-0d", lambda ns, x: x[ns.asarray(True)], A((3,)))
case("getitem-int-array", lambda ns, x, i: x[i], A((5,)), A((4,), "int64", "index"))
case("getitem-int-arrays", lambda ns, x, i, j: x[i, j], A((5, 5)), A((3,), "int32", "index"), A((3,), "int32", "index"))
case("getitem-0d-int-array", lambda ns, x: x[ns.asarray(2)], A((5,)))

# Linear algebra (main namespace)
case("matmul-2d", call("matmul"), A((3, 4)), A((4, 2)))
case("matmul-batched", call("matmul"), A((2, 3, 4)), A((4, 5)))
case("matmul-vector", call("matmul"), A((4,)), A((4, 3)))
case("matmul-vector-vector", call("matmul"), A((4,), "int16"), A((4,), "int16"))
case("matmul-complex", call("matmul"), A((2, 3), "complex64"), A((3, 2), "complex64"))
case("matmul-promote", call("matmul"), A((2, 3), "float32"), A((3, 2), "float64"))
case("tensordot-1", call("tensordot", axes=1), A((2, 3)), A((3, 4)))
case("tensordot-2", call("tensordot", axes=2), A((2, 3, 4)), A((3, 4, 5)))
case("tensordot-0", call("tensordot", axes=0), A((2,)), A((3,)))
case("tensordot-pairs", call("tensordot", axes=((0,), (1,))), A((3, 2)), A((4, 3)))
case("vecdot", call("vecdot"), A((3, 4)), A((4,)))
case("vecdot-axis", call("vecdot", axis=-2), A((3, 4)), A((3, 4)))
case("vecdot-complex", call("vecdot"), A((2, 3), "complex128"), A((2, 3), "complex128"))


# Linear algebra extension
def _eigh_canonical(ns: Any, x: Any) -> Any:
    w, v = ns.linalg.eigh(x)
    # Eigenvectors are defined up to sign: compare v diag(w) v^H (= x) and the eigenvalues.
    rebuilt = ns.matmul(v * ns.expand_dims(w, axis=-2), ns.conj(ns.matrix_transpose(v)))
    return w, rebuilt


def _qr_canonical(ns: Any, x: Any, mode: str = "reduced") -> Any:
    q, r = ns.linalg.qr(x, mode=mode)
    return ns.matmul(q, r), ns.abs(ns.linalg.diagonal(r)), ns.matmul(ns.matrix_transpose(q), q)


def _svd_canonical(ns: Any, x: Any) -> Any:
    u, s, vh = ns.linalg.svd(x, full_matrices=False)
    return s, ns.matmul(u * ns.expand_dims(s, axis=-2), vh)


def _eigvals_sorted(ns: Any, x: Any) -> Any:
    w = ns.linalg.eigvals(x)  # of a symmetric matrix: real eigenvalues, any order
    return ns.sort(ns.real(w))


def _eig_rebuilds(ns: Any, x: Any) -> Any:
    w, v = ns.linalg.eig(x)  # x v = v diag(w), whatever the order and scaling of the pairs
    return ns.matmul(ns.astype(x, v.dtype), v) - v * ns.expand_dims(w, axis=-2)


for _dt in FLOAT + ("complex128",):
    case(f"linalg.cholesky-{_dt}", call("linalg.cholesky"), A((2, 3, 3), _dt, "spd"), scale=100)
    case(f"linalg.det-{_dt}", call("linalg.det"), A((2, 3, 3), _dt), scale=100)
    case(f"linalg.inv-{_dt}", call("linalg.inv"), A((3, 3), _dt, "spd"), scale=100)
    case(f"linalg.eigh-{_dt}", _eigh_canonical, A((3, 3), _dt, "sym"), scale=1000)
    case(f"linalg.eigvalsh-{_dt}", call("linalg.eigvalsh"), A((2, 3, 3), _dt, "sym"), scale=1000)
    case(f"linalg.qr-{_dt}", _qr_canonical, A((4, 3), _dt), scale=100)
    case(f"linalg.svd-{_dt}", _svd_canonical, A((4, 3), _dt), scale=1000)
    case(f"linalg.svdvals-{_dt}", call("linalg.svdvals"), A((2, 4, 3), _dt), scale=1000)
    case(f"linalg.slogdet-{_dt}", call("linalg.slogdet"), A((3, 3), _dt, "spd"), scale=100)
    case(f"linalg.solve-{_dt}", call("linalg.solve"), A((3, 3), _dt, "spd"), A((3, 2), _dt), scale=100)
    case(f"linalg.pinv-{_dt}", call("linalg.pinv"), A((4, 3), _dt), scale=1000)
    case(f"linalg.matrix_rank-{_dt}", call("linalg.matrix_rank"), A((4, 3), _dt))
case("linalg.eigvals", _eigvals_sorted, A((4, 4), "float64", "sym"), scale=1000)
case("linalg.eig", _eig_rebuilds, A((3, 3), "float64"), scale=1000)
case("linalg.qr-complete", lambda ns, x: _qr_canonical(ns, x, "complete"), A((4, 3)), scale=100)
case("linalg.solve-vector", lambda ns, a, b: ns.linalg.solve(a, b), A((3, 3), "float64", "spd"), A((3,)), scale=100)
case("linalg.cross", call("linalg.cross"), A((4, 3)), A((4, 3)))
case("linalg.cross-axis", call("linalg.cross", axis=-2), A((3, 2), "int32"), A((3, 2), "int32"))
for _off in (0, 1, -2):
    case(f"linalg.diagonal-{_off}", call("linalg.diagonal", offset=_off), A((2, 3, 4)))
    case(f"linalg.trace-{_off}", call("linalg.trace", offset=_off), A((2, 3, 4), "int32"))
case("linalg.trace-float32-dtype", lambda ns, x: ns.linalg.trace(x, dtype=ns.float64), A((3, 3), "float32"))
case("linalg.matmul", call("linalg.matmul"), A((3, 4)), A((4, 2)))
case("linalg.matrix_transpose", call("linalg.matrix_transpose"), A((3, 4)))
case("linalg.tensordot", call("linalg.tensordot", axes=1), A((2, 3)), A((3, 4)))
case("linalg.vecdot", call("linalg.vecdot"), A((3, 4)), A((3, 4)))
case("linalg.outer", call("linalg.outer"), A((3,)), A((4,), "float64"))
for _ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
    case(f"linalg.matrix_norm-{_ord}", call("linalg.matrix_norm", ord=_ord), A((2, 3, 4)), scale=1000)
case("linalg.matrix_norm-keepdims", call("linalg.matrix_norm", keepdims=True), A((2, 3, 4), "complex64"))
for _ord in (1, 2, 3, 0, math.inf, -math.inf, -1):
    case(f"linalg.vector_norm-{_ord}", call("linalg.vector_norm", ord=_ord), A((3, 4), "float64", "nonzero"))
case("linalg.vector_norm-axis", call("linalg.vector_norm", axis=(0, 2), keepdims=True), A((2, 3, 4), "float32"))
case("linalg.vector_norm-complex", call("linalg.vector_norm"), A((5,), "complex128"))
for _n in (0, 1, 3, -1, -2):
    case(f"linalg.matrix_power-{_n}", lambda ns, x, n=_n: ns.linalg.matrix_power(x, n), A((3, 3), "float64", "spd"),
         scale=1000)  # fmt: skip

# FFT
for _name, _dt, _shape in (
    ("fft", "complex128", (8,)), ("ifft", "complex64", (6,)), ("fftn", "complex128", (4, 6)),
    ("ifftn", "complex128", (3, 4)), ("rfft", "float64", (8,)), ("rfftn", "float32", (4, 6)),
    ("irfft", "complex128", (5,)), ("irfftn", "complex128", (4, 5)), ("hfft", "complex128", (5,)),
    ("ihfft", "float64", (8,)),
):  # fmt: skip
    case(f"fft.{_name}", call(f"fft.{_name}"), A(_shape, _dt), scale=100)
    case(f"fft.{_name}-ortho", call(f"fft.{_name}", norm="ortho"), A(_shape, _dt), scale=100)
case("fft.fft-n-axis", call("fft.fft", n=5, axis=0), A((4, 3), "complex64"), scale=100)
case("fft.ifft-forward", call("fft.ifft", norm="forward"), A((7,), "complex128"), scale=100)
case("fft.fftn-axes-s", call("fft.fftn", s=(3, 8), axes=(0, 1)), A((4, 6), "complex128"), scale=100)
case("fft.rfft-n", call("fft.rfft", n=10), A((8,), "float64"), scale=100)
case("fft.irfft-n", call("fft.irfft", n=9), A((5,), "complex128"), scale=100)
case("fft.irfftn-s", call("fft.irfftn", s=(4, 7), axes=(0, 1)), A((4, 5), "complex128"), scale=100)
case("fft.fftfreq", lambda ns: ns.fft.fftfreq(8, d=0.5))
case("fft.fftfreq-odd", lambda ns: ns.fft.fftfreq(7))
case("fft.fftfreq-dtype", lambda ns: ns.fft.fftfreq(6, dtype=ns.float32))
case("fft.rfftfreq", lambda ns: ns.fft.rfftfreq(9, d=2.0))
case("fft.fftshift", call("fft.fftshift"), A((5, 4)))
case("fft.fftshift-axes", call("fft.fftshift", axes=1), A((5, 4)))
case("fft.ifftshift", call("fft.ifftshift"), A((5, 4)))

# -- running a case ----------------------------------------------------------------------------


def _inputs(ns: Any, arrays: list[np.ndarray]) -> list[Any]:
    return [ns.asarray(a) for a in arrays]


def _compare(got: Any, want: Any, what: str, scale: float) -> None:
    if isinstance(want, StrictArray):
        assert isinstance(got, xp.Array), f"{what}: expected an x10array array, got {type(got).__name__}"
        assert dtype_name(got) == dtype_name(want), f"{what}: dtype {dtype_name(got)} != {dtype_name(want)}"
        assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
        assert_values(np.asarray(got), np.asarray(want._array), scale=scale, what=what)
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{what}: expected a sequence, got {type(got).__name__}"
        assert len(got) == len(want), f"{what}: {len(got)} results, expected {len(want)}"
        if hasattr(want, "_fields"):
            assert getattr(got, "_fields", None) == want._fields, f"{what}: fields {getattr(got, '_fields', None)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{what}[{i}]", scale)
    elif type(want).__name__ in ("finfo_object", "iinfo_object"):
        for attr in ("bits", "eps", "max", "min", "smallest_normal", "dtype"):
            if hasattr(want, attr):
                g, w = getattr(got, attr), getattr(want, attr)
                if attr == "dtype":
                    assert dtype_name_of(g) == dtype_name_of(w), f"{what}.dtype"
                else:
                    assert type(g) is type(w) and g == w, f"{what}.{attr}: {g!r} != {w!r}"
    elif type(want).__module__.startswith("array_api_strict"):  # a dtype
        assert dtype_name_of(got) == dtype_name_of(want), f"{what}: dtype {got!r} != {want!r}"
    else:
        assert type(got) is type(want) and got == want, f"{what}: {got!r} != {want!r}"


def dtype_name_of(d: Any) -> str:
    return getattr(d, "name", None) or str(d).rsplit(".", 1)[-1]


def _params() -> list[Any]:
    """Every case with the NumPy kernels; with the XLA kernels, the first case of each
    function by default and the rest under the `slow` marker (XLA compiles each program)."""
    params, seen = [], set()
    for c in CASES:
        params.append(pytest.param(c, "numpy", id=f"numpy-{c.id}"))
        function = c.id.split("-")[0]
        marks = () if function not in seen else (pytest.mark.slow,)
        seen.add(function)
        params.append(pytest.param(c, "xla", id=f"xla-{c.id}", marks=marks))
    return params


@pytest.mark.parametrize(("c", "kernels"), _params())
def test_same_as_array_api_strict(c: Case, kernels: str) -> None:
    rng = np.random.default_rng(zlib.crc32(c.id.encode()))
    arrays = [generate(spec, rng) for spec in c.inputs]
    with np.errstate(all="ignore"):  # array-api-strict passes NumPy's warnings through
        want = c.fn(strict, *_inputs(strict, arrays))
    old = xp.set_cpu_kernels(kernels)
    try:
        got = c.fn(xp, *_inputs(xp, arrays))  # x10array itself must not warn
    finally:
        xp.set_cpu_kernels(old)
    scale = c.scale * (10 if kernels == "xla" else 1)
    _compare(got, want, f"{c.id} ({kernels} kernels)", scale)


def test_table_is_large() -> None:
    assert len(CASES) > 400
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"
