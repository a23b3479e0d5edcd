"""Data types and the standard's type promotion, as data.

Every dtype of the standard is one `DType` instance. Promotion is the lattice of the
standard's "Type Promotion Rules" chapter: within a kind the wider type wins; signed with
unsigned goes to the smallest signed type that holds both; real with complex goes to the
complex type of the wider precision.

Mixed kinds (bool with an integer, an integer or bool with a floating-point type) are not
defined by the standard; x10array's rule is JAX's and PyTorch's: the operand of the higher
kind (bool < integer < real floating < complex floating) gives the result its dtype, so
`int64 @ float32` is float32 and `bool + float64` is float64 (float32 work stays float32 on
accelerators; NumPy would widen `int64 + float32` to float64). It is the same on every device
and in every function that promotes, since they all call `promote`. X10ARRAY_STRICT_PROMOTION=1
refuses mixed kinds with a TypeError, as array-api-strict does. uint64 with a signed integer
stays undefined (no integer type holds both).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import settings

__all__ = [
    "DType",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


class DType:
    """One data type of the standard; hashable, and readable by NumPy as its own dtype.

    Between x10array dtypes, equality is identity (object's `==`, in C: on the hot path).
    `np.dtype(x10array.float64)` is `np.dtype("float64")`: NumPy reads the `__numpy_dtype__`
    attribute (NumPy >= 2.4) or, before it, `dtype` (JAX's scalar types carry the same), so
    Zarr, xarray, pandas and cubed, which all pass dtypes through `np.dtype()`, can read ours.
    The same conversion is what NumPy's dtype `==` applies to its other operand, so
    `np.dtype("float64") == x10array.float64` is True, and so, by Python's reflected `==`, is
    `x10array.float64 == np.dtype("float64")`; to keep `a == b` implying `hash(a) == hash(b)`,
    a dtype hashes as its NumPy dtype. NumPy's scalar types and strings (`np.float64`,
    `"float64"`) are not equal to an x10array dtype, and no function takes them as a `dtype=`
    (docs/interop.md).
    """

    __slots__ = ("name", "np", "kind", "bits", "_hash", "__weakref__")

    def __init__(self, name: str, kind: str, bits: int) -> None:
        self.name = name
        self.np = np.dtype(name)
        self.kind = kind  # "bool", "signed", "unsigned", "real", "complex"
        self.bits = bits
        self._hash = hash(self.np)

    def __repr__(self) -> str:
        return f"x10array.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return self._hash

    @property
    def __numpy_dtype__(self) -> np.dtype[Any]:
        """NumPy's protocol (NumPy >= 2.4): `np.dtype(self)` is this NumPy dtype."""
        return self.np

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype, for NumPy < 2.4's `np.dtype(obj)` (it reads `obj.dtype`) and for
        code that reads a dtype-like's `.dtype`, as JAX's `jnp.float64.dtype`."""
        return self.np


bool = DType("bool", "bool", 8)  # noqa: A001 - the standard's name
int8 = DType("int8", "signed", 8)
int16 = DType("int16", "signed", 16)
int32 = DType("int32", "signed", 32)
int64 = DType("int64", "signed", 64)
uint8 = DType("uint8", "unsigned", 8)
uint16 = DType("uint16", "unsigned", 16)
uint32 = DType("uint32", "unsigned", 32)
uint64 = DType("uint64", "unsigned", 64)
float32 = DType("float32", "real", 32)
float64 = DType("float64", "real", 64)
complex64 = DType("complex64", "complex", 64)
complex128 = DType("complex128", "complex", 128)

ALL_DTYPES = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
)  # fmt: skip
SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED + UNSIGNED
REAL_FLOATING = (float32, float64)
COMPLEX_FLOATING = (complex64, complex128)
FLOATING = REAL_FLOATING + COMPLEX_FLOATING
NUMERIC = INTEGER + FLOATING
REAL_NUMERIC = INTEGER + REAL_FLOATING
INTEGER_OR_BOOL = (bool,) + INTEGER

# The kinds of `isdtype` and of `__array_namespace_info__().dtypes(kind=...)`.
KINDS = {
    "bool": (bool,),
    "signed integer": SIGNED,
    "unsigned integer": UNSIGNED,
    "integral": INTEGER,
    "real floating": REAL_FLOATING,
    "complex floating": COMPLEX_FLOATING,
    "numeric": NUMERIC,
}

DEFAULT_INT = int64
DEFAULT_FLOAT = float64
DEFAULT_COMPLEX = complex128
DEFAULT_INDEX = int64

# numpy dtype -> DType. Keys are numpy dtype objects (hash-equal to their scalar types).
FROM_NUMPY: dict[object, DType] = {}
for _d in ALL_DTYPES:
    FROM_NUMPY[_d.np] = _d
    FROM_NUMPY[_d.np.type] = _d
del _d

REAL_OF = {complex64: float32, complex128: float64}
COMPLEX_OF = {float32: complex64, float64: complex128}


def _build_promotion_table() -> dict[tuple[DType, DType], DType]:
    """The standard's promotion lattice, spelled out pairwise."""
    table: dict[tuple[DType, DType], DType] = {}

    def add(a: DType, b: DType, out: DType) -> None:
        table[a, b] = out
        table[b, a] = out

    add(bool, bool, bool)
    for group in (SIGNED, UNSIGNED, REAL_FLOATING, COMPLEX_FLOATING):
        for a in group:
            for b in group:
                add(a, b, a if a.bits >= b.bits else b)
    for u in UNSIGNED:
        for s in SIGNED:
            if u is uint64:
                continue  # no signed type holds uint64: undefined by the standard
            if s.bits > u.bits:
                add(u, s, s)
            else:
                add(u, s, {8: int16, 16: int32, 32: int64}[u.bits])
    for r in REAL_FLOATING:
        for c in COMPLEX_FLOATING:
            add(r, c, complex128 if 64 in (r.bits, c.bits // 2) else complex64)
    return table


PROMOTION_TABLE = _build_promotion_table()


# The mixed-kind rule's order of kinds: the higher kind's operand gives the result its dtype.
KIND_RANK = {"bool": 0, "signed": 1, "unsigned": 1, "real": 2, "complex": 3}


def promote(a: DType, b: DType, fname: str, *, strict: builtins.bool | None = None) -> DType:
    """The result type of two dtypes: the standard's lattice, and between kinds the operand of
    the higher kind (see the module's docstring). TypeError where neither defines one, or for
    mixed kinds when `strict` (default: the X10ARRAY_STRICT_PROMOTION setting)."""
    if a is b:
        return a
    try:
        return PROMOTION_TABLE[a, b]
    except KeyError:
        pass
    ra = KIND_RANK[a.kind]
    rb = KIND_RANK[b.kind]
    if ra != rb:
        if not (settings.get("X10ARRAY_STRICT_PROMOTION") if strict is None else strict):
            return a if ra > rb else b
        raise TypeError(
            f"{fname}: the standard defines no type promotion between {a.name} and {b.name}"
            " (mixed kinds are refused because X10ARRAY_STRICT_PROMOTION is set)"
        )
    raise TypeError(f"{fname}: the standard defines no type promotion between {a.name} and {b.name}")


def as_dtype(value: object) -> DType | None:
    """`value` as an x10array dtype: itself, or the x10array dtype of a NumPy dtype object of
    the standard's (`np.dtype("float64")`, native byte order); None for anything else.

    NumPy dtype objects are taken because the PyData stack normalizes every dtype through
    `np.dtype()` (cubed's arrays, xarray's promotions and fill values carry NumPy dtypes and
    hand them back to the array's namespace) and because they compare equal to ours (`DType`).
    NumPy's scalar types (`np.float64`) and strings are not dtypes of the standard: refused."""
    if isinstance(value, DType):
        return value
    if isinstance(value, np.dtype):
        return FROM_NUMPY.get(value)  # a non-native byte order is unequal: None
    return None


def check_dtype(dtype: object, fname: str, arg: str = "dtype") -> DType:
    """Validate a user-given dtype argument: an x10array dtype, or a NumPy dtype object of the
    standard's (see `as_dtype`)."""
    found = as_dtype(dtype)
    if found is not None:
        return found
    # an array is named, not shown: its repr would read a lazy array's values
    if isinstance(dtype, type):
        got = repr(dtype)  # NumPy's scalar types have an __array_namespace__ too: not arrays
    else:
        got = f"an array ({type(dtype).__name__})" if hasattr(dtype, "__array_namespace__") else repr(dtype)
    raise TypeError(
        f"{fname}: {arg} must be an x10array dtype such as x10array.float64 (or a NumPy dtype object"
        f" of the standard's, np.dtype('float64')), got {got}"
    )


# Categories named as the standard names them in its "Data Types" chapter; used for the
# messages of the public layer.
CATEGORY_NAMES = {
    "numeric": NUMERIC,
    "real numeric": REAL_NUMERIC,
    "integer": INTEGER,
    "integer or boolean": INTEGER_OR_BOOL,
    "floating-point": FLOATING,
    "real floating-point": REAL_FLOATING,
    "complex floating-point": COMPLEX_FLOATING,
    "boolean": (bool,),
    "any": ALL_DTYPES,
}
CATEGORIES = {name: frozenset(members) for name, members in CATEGORY_NAMES.items()}
