"""Every name of the 2025.12 standard exists, with the standard's signature, and nothing else.

The lists of names and signatures are in `_standard_names.py` (transcribed from the spec).
"""

from __future__ import annotations

import ast
import inspect
import math
import types

import pytest
from _standard_names import (
    API_VERSION,
    ARRAY_ATTRIBUTES,
    ARRAY_METHOD_SIGNATURES,
    ARRAY_METHODS,
    CHAPTERS,
    DTYPES,
    FFT,
    FFT_SIGNATURES,
    IN_PLACE_OPERATORS,
    INFO_METHODS,
    INFO_SIGNATURES,
    LINALG,
    LINALG_SIGNATURES,
    NAMESPACE,
    REFLECTED_OPERATORS,
    SIGNATURES,
    X10ARRAY_EXTRAS,
    X10ARRAY_SUBPACKAGES,
)

import x10array as xp

_REQUIRED = object()


def _parse(signature: str) -> list[tuple[str, str, object]]:
    """'(x, /, *, axis=None)' -> [(name, kind, default)], kinds as in inspect.Parameter."""
    fn = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    a = fn.args
    out: list[tuple[str, str, object]] = []
    positional = a.posonlyargs + a.args
    defaults = [_REQUIRED] * (len(positional) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    for arg, default in zip(positional, defaults):
        kind = "POSITIONAL_ONLY" if arg in a.posonlyargs else "POSITIONAL_OR_KEYWORD"
        out.append((arg.arg, kind, default))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", _REQUIRED))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, "KEYWORD_ONLY", _REQUIRED if default is None else ast.literal_eval(default)))
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", _REQUIRED))
    return out


def _actual(fn: object, *, drop_self: bool = False) -> list[tuple[str, str, object]]:
    params = list(inspect.signature(fn).parameters.values())
    if drop_self:
        params = params[1:]
    return [(p.name, p.kind.name, _REQUIRED if p.default is inspect.Parameter.empty else p.default) for p in params]


def _assert_signature(fn: object, expected: str, qualname: str, *, drop_self: bool = False) -> None:
    want = _parse(expected)
    got = _actual(fn, drop_self=drop_self)
    # Compare defaults by value and type (1 and 1.0 differ; True and 1 differ).
    norm = lambda ps: [(n, k, (type(d).__name__, d) if d is not _REQUIRED else "required") for n, k, d in ps]  # noqa: E731
    assert norm(got) == norm(want), (
        f"{qualname}: signature {inspect.signature(fn)} differs from the standard's {expected}"
    )


def test_api_version() -> None:
    assert xp.__array_api_version__ == API_VERSION


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_namespace_function(name: str) -> None:
    assert hasattr(xp, name), f"x10array.{name} is missing"
    fn = getattr(xp, name)
    assert callable(fn)
    _assert_signature(fn, SIGNATURES[name], f"x10array.{name}")


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_function(name: str) -> None:
    assert hasattr(xp.linalg, name), f"x10array.linalg.{name} is missing"
    _assert_signature(getattr(xp.linalg, name), LINALG_SIGNATURES[name], f"x10array.linalg.{name}")


@pytest.mark.parametrize("name", sorted(FFT))
def test_fft_function(name: str) -> None:
    assert hasattr(xp.fft, name), f"x10array.fft.{name} is missing"
    _assert_signature(getattr(xp.fft, name), FFT_SIGNATURES[name], f"x10array.fft.{name}")


@pytest.mark.parametrize("name", ["linalg", "fft"])
def test_extension_is_a_module(name: str) -> None:
    assert isinstance(getattr(xp, name), types.ModuleType)


def test_constants() -> None:
    assert set(CHAPTERS["constants"]) == {"e", "inf", "nan", "newaxis", "pi"}
    for name, value in (("e", math.e), ("pi", math.pi), ("inf", math.inf)):
        assert type(getattr(xp, name)) is float, name
        assert getattr(xp, name) == value, name
    assert type(xp.nan) is float and math.isnan(xp.nan)
    assert xp.newaxis is None


@pytest.mark.parametrize("name", DTYPES)
def test_dtype(name: str) -> None:
    dtype = getattr(xp, name)
    assert dtype == dtype
    assert hash(dtype) == hash(getattr(xp, name))
    others = [getattr(xp, other) for other in DTYPES if other != name]
    assert all(dtype != other for other in others)
    assert dtype in {dtype: 1}
    # The dtype of an array of that dtype is that same dtype object.
    assert xp.zeros(2, dtype=dtype).dtype == dtype


@pytest.mark.parametrize("name", ARRAY_ATTRIBUTES)
def test_array_attribute(name: str) -> None:
    descriptor = inspect.getattr_static(xp.Array, name)
    assert isinstance(descriptor, property), f"Array.{name} should be a property"
    x = xp.zeros((2, 3))
    getattr(x, name)


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_array_method(name: str) -> None:
    assert callable(getattr(xp.Array, name, None)), f"Array.{name} is missing"
    _assert_signature(getattr(xp.Array, name), ARRAY_METHOD_SIGNATURES[name], f"Array.{name}", drop_self=True)


@pytest.mark.parametrize("name", REFLECTED_OPERATORS + IN_PLACE_OPERATORS)
def test_array_operator(name: str) -> None:
    assert callable(getattr(xp.Array, name, None)), f"Array.{name} is missing"


@pytest.mark.parametrize("name", INFO_METHODS)
def test_info_method(name: str) -> None:
    info = xp.__array_namespace_info__()
    method = getattr(info, name, None)
    assert callable(method), f"__array_namespace_info__().{name} is missing"
    _assert_signature(method, INFO_SIGNATURES[name], f"__array_namespace_info__().{name}")


def test_array_namespace() -> None:
    x = xp.asarray([1.0])
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version=API_VERSION) is xp


def _public_names(module: types.ModuleType) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")} | {
        n for n in ("__array_api_version__", "__array_namespace_info__") if hasattr(module, n)
    }


def test_no_extra_names() -> None:
    """The main namespace holds the standard's names and the documented extras, nothing else."""
    extra = {
        name
        for name in _public_names(xp) - NAMESPACE - X10ARRAY_EXTRAS
        if not (name in X10ARRAY_SUBPACKAGES and getattr(getattr(xp, name), "__name__", "") == f"x10array.{name}")
    }
    assert not extra, f"undocumented public names in x10array: {sorted(extra)}"


def test_no_missing_names() -> None:
    missing = NAMESPACE - _public_names(xp)
    assert not missing, f"standard names missing from x10array: {sorted(missing)}"


@pytest.mark.parametrize(("module", "names"), [("linalg", LINALG), ("fft", FFT)])
def test_extension_all(module: str, names: tuple[str, ...]) -> None:
    """`__all__` of the extension modules is exactly the standard's list."""
    mod = getattr(xp, module)
    exported = set(getattr(mod, "__all__", ()))
    assert exported == set(names), (
        f"x10array.{module}.__all__: missing {sorted(set(names) - exported)}, extra {sorted(exported - set(names))}"
    )


def test_extras_exist() -> None:
    for name in X10ARRAY_EXTRAS:
        assert hasattr(xp, name), name
