"""Backend policies (`x10array._core.policies`): every entry is a primitive of the op table,
every registry is read by the backend it names, and the registries hold what the policy
fields of `Primitive` held before they moved out of it (lists captured on main at 3c29b59)."""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import x10array as xp
import x10array.nn  # noqa: F401 - defines its primitives
from x10array._backends import eager as _eager
from x10array._core import policies
from x10array._core.primitive import OP_TABLE, Primitive

# `Primitive.quiet`, `.library` and `.fold` of every primitive on main before the move.
QUIET = {
    "abs", "acos", "acosh", "add", "all", "any", "arange", "asin", "asinh", "astype", "atan", "atan2", "atanh",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "cumulative", "diff", "divide", "equal", "exp", "expm1",
    "fft.fft", "fft.fftfreq", "fft.fftn", "fft.hfft", "fft.ifft", "fft.ifftn", "fft.ihfft", "fft.irfft",
    "fft.irfftn", "fft.rfft", "fft.rfftn", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag",
    "less", "less_equal", "linalg.cholesky", "linalg.det", "linalg.eig", "linalg.eigh", "linalg.eigvals",
    "linalg.eigvalsh", "linalg.inv", "linalg.matrix_norm", "linalg.matrix_power", "linalg.matrix_rank",
    "linalg.pinv", "linalg.qr", "linalg.slogdet", "linalg.solve", "linalg.svd", "linalg.svdvals",
    "linalg.vector_norm", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "max", "maximum", "mean", "min",
    "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "prod", "real", "reciprocal",
    "remainder", "round", "setitem", "setitem_mask", "sign", "sin", "sinh", "sqrt", "square", "subtract", "sum",
    "tan", "tanh", "trunc", "var_std",
}  # fmt: skip
NOT_QUIET = {
    "argmax", "argmin", "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "broadcast_to", "concat", "copy", "count_nonzero", "empty", "expand_dims", "eye", "fft.shift",
    "flip", "full", "getitem", "getitem_mask", "index_bounds", "isfinite", "isin", "isinf", "isnan", "linalg.cross",
    "linalg.diagonal", "linalg.outer", "linalg.trace", "logical_and", "logical_not", "logical_or", "logical_xor",
    "matmul", "matrix_transpose", "moveaxis", "nn.conv2d", "nn.conv2d_vjp", "nonzero", "permute_dims", "repeat",
    "repeat_array", "reshape", "roll", "searchsorted", "signbit", "sort", "squeeze", "stack", "take",
    "take_along_axis", "tensordot", "tile", "tril", "triu", "unique", "unstack", "vecdot", "where",
}  # fmt: skip
LIBRARY = {
    "fft.fft", "fft.fftn", "fft.hfft", "fft.ifft", "fft.ifftn", "fft.ihfft", "fft.irfft", "fft.irfftn", "fft.rfft",
    "fft.rfftn", "linalg.cholesky", "linalg.det", "linalg.eig", "linalg.eigh", "linalg.eigvals", "linalg.eigvalsh",
    "linalg.inv", "linalg.matrix_power", "linalg.matrix_rank", "linalg.pinv", "linalg.qr", "linalg.slogdet",
    "linalg.solve", "linalg.svd", "linalg.svdvals",
}  # fmt: skip
REWRITES = {"matmul": "_fold_transposes"}

ON_MAIN = QUIET | NOT_QUIET  # every primitive there was


def _names(registry: policies.PrimitiveSet | policies.PrimitiveRules) -> set[str]:
    return {p.name for p in registry}


def test_the_registries_hold_what_the_primitive_fields_held():
    assert ON_MAIN <= set(OP_TABLE)
    assert _names(policies.NUMPY_QUIET) & ON_MAIN == QUIET
    assert _names(policies.COST_LIBRARY) & ON_MAIN == LIBRARY
    assert {p.name: rule.__name__ for p, rule in policies.GRAPH_REWRITES.rules.items()} == REWRITES


@pytest.mark.parametrize("registry", policies.REGISTRIES, ids=lambda r: r.name)
def test_every_entry_is_a_primitive_of_the_op_table(registry):
    assert len(list(registry)) > 0
    for prim in registry:
        assert type(prim) is Primitive and OP_TABLE[prim.name] is prim


def _sources(module: str) -> list[pathlib.Path]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    if spec.submodule_search_locations:  # a package: every module in it
        return sorted(p for d in spec.submodule_search_locations for p in pathlib.Path(d).rglob("*.py"))
    return [pathlib.Path(spec.origin)]


@pytest.mark.parametrize("registry", policies.REGISTRIES, ids=lambda r: r.name)
def test_every_registry_is_read_by_the_backend_it_names(registry):
    assert registry.reader.startswith("x10array._backends."), registry.reader
    read = False
    for path in _sources(registry.reader):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == registry.name and isinstance(node.ctx, ast.Load):
                read = True
    assert read, f"{registry.name} says {registry.reader} reads it, but no module there does"


def test_primitive_holds_no_backend_policy():
    for field in ("quiet", "library", "fold"):
        assert field not in Primitive.__slots__
    with pytest.raises(TypeError):
        Primitive("test_policies.never_defined", lambda k, x: x, quiet=True)
    assert "test_policies.never_defined" not in OP_TABLE


def test_backends_read_the_live_registry():
    # Bound once at import, for the hot path: the same set, so later registrations count.
    assert _eager._QUIET is policies.NUMPY_QUIET.members


def test_registration_checks_what_it_is_given():
    prim = OP_TABLE["add"]
    rules = policies.PrimitiveRules("TEST_RULES", reader="x10array._backends.eager")
    with pytest.raises(TypeError, match="^TEST_RULES: expected a Primitive, got str"):
        rules.register("add", lambda *a: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^TEST_RULES: the rule of add must be callable"):
        rules.register(prim, None)  # type: ignore[arg-type]
    rules.register(prim, print)
    assert rules.get(prim) is print and prim in rules
    with pytest.raises(ValueError, match="^TEST_RULES: add has a rule already"):
        rules.register(prim, print)
    flags = policies.PrimitiveSet("TEST_SET", reader="x10array._backends.eager")
    with pytest.raises(TypeError, match="^TEST_SET: expected a Primitive, got int"):
        flags.add(prim, 3)  # type: ignore[arg-type]
    assert prim not in flags  # nothing added when one is bad
    flags.add(prim, prim)
    assert list(flags) == [prim] and "1 primitives" in repr(flags)


def test_quiet_ops_raise_no_numpy_warning_on_the_numpy_executor():
    eager = xp.Device("cpu", 0, "eager")
    x = xp.asarray([1.0, 0.0, -1.0], device=eager)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(xp.divide(x, xp.zeros_like(x))), [np.inf, np.nan, -np.inf])
        np.testing.assert_array_equal(np.asarray(xp.log(x)), [0.0, -np.inf, np.nan])


def test_facts_name_every_flag_of_a_primitive():
    """policies.FLAGS is every flag of Primitive (a new flag must be added there, so that
    `facts` and x10array.debug.primitive_facts show it)."""
    from x10array._core.policies import FLAGS

    assert set(FLAGS) == set(Primitive.__slots__) - {"name", "kernel", "lowering", "rule"}


@pytest.mark.parametrize("name", sorted(OP_TABLE))
def test_facts_of_a_primitive_are_its_flags_and_exactly_its_registries(name):
    from x10array._core.policies import FLAGS, REGISTRIES, facts

    prim = OP_TABLE[name]
    found = facts(prim)
    assert {k: found[k] for k in FLAGS} == {k: getattr(prim, k) for k in FLAGS}
    assert set(found) - set(FLAGS) == {r.name for r in REGISTRIES if prim in r}


def test_primitive_facts_prints_them_and_refuses_an_unknown_name():
    import x10array.debug as xdebug

    text = xdebug.primitive_facts("linalg.solve")
    assert "registered in COST_LIBRARY" in text and "registered in NUMPY_QUIET" in text and "elementwise: False" in text
    with pytest.raises(ValueError, match="primitive_facts: no primitive named 'ad'.*'add'"):
        xdebug.primitive_facts("ad")
