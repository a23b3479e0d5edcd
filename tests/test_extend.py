"""x10array.extend: primitives defined by users run on every device and differentiate.

A user-defined fused softplus (and a few smaller ops) on eager NumPy, eager XLA kernels, the
lazy device interpreted and compiled; values against NumPy, gradients against the analytic
derivative and finite differences; the errors for bad calls and bad definitions; conv2d (an
extension primitive of `nn`); and docs/extending.md, whose code blocks run here.
"""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path

import array_api_strict
import numpy as np
import pytest
from _util import check_doc_page

import x10array as xp
from x10array import extend, nn
from x10array.autodiff import grad, value_and_grad
from x10array.nn import functional as F

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
MODES = ["eager-numpy", "eager-xla", "lazy-interpreted", "lazy-compiled"]


@contextlib.contextmanager
def compile_threshold(n):
    """Every lazy graph compiled at its first sighting (n=1) or interpreted (n=None)."""
    from x10array._backends import lazy

    legacy = getattr(lazy, "compile_threshold", None)  # (the lazy backend's own switch, where it has one)
    with extend.settings.override(X10ARRAY_COMPILE_THRESHOLD=10**9 if n is None else n):
        with legacy(n) if legacy is not None else contextlib.nullcontext():
            yield


@contextlib.contextmanager
def mode(name):
    """The device of `name`, with the tier or kernels it asks for; checks the tier ran."""
    if name.startswith("eager"):
        previous = xp.set_cpu_kernels(name.partition("-")[2])
        try:
            yield EAGER
        finally:
            xp.set_cpu_kernels(previous)
        return
    compiled = name == "lazy-compiled"
    before = xp.metrics()
    with compile_threshold(1 if compiled else None):
        yield LAZY
        xp.lazy_barrier()
    ran = xp.metrics() - before
    if compiled:
        assert ran.compile_count + ran.cache_hits > 0 and ran.interpreted_graphs == 0, ran
    else:
        assert ran.interpreted_graphs > 0 and ran.compile_count + ran.cache_hits == 0, ran


def _forget(name):
    """Undefine a primitive a test defined (so the op table's completeness tests never see it)."""
    from x10array._core.primitive import OP_TABLE

    extend._DEFINITIONS.pop(name, None)
    OP_TABLE.pop(name, None)


def softplus_vjp(xp, g, ans, x, *, beta):
    return (g * -xp.expm1(-beta * ans),)  # sigmoid(beta x) = 1 - exp(-beta softplus(x))


def softplus_kernel(k, x, *, beta=1.0):
    """log(1 + exp(beta x)) / beta, fused."""
    return k.logaddexp(beta * x, 0.0) / beta


def sincos_kernel(k, x):
    return k.sin(x), k.cos(x)


def sincos_vjp(xp, g, ans, x):
    return (g[0] * xp.cos(x) - g[1] * xp.sin(x),)


def sincos_shape(x):
    return (extend.ShapeDtype(x.shape, x.dtype),) * 2


def scaled_add_kernel(k, a, b, *, scale):
    return a + scale * b


def scaled_add_vjp(xp, g, ans, a, b, *, scale, needs):
    return (g if needs[0] else None, g * scale if needs[1] else None)


@pytest.fixture(scope="module")
def ops():
    names = ["test.softplus", "test.sincos", "test.scaled_add"]
    defined = {
        "softplus": extend.primitive("test.softplus", softplus_kernel, vjp=softplus_vjp, category="real floating"),
        "sincos": extend.primitive(
            "test.sincos", sincos_kernel, vjp=sincos_vjp, shape=sincos_shape, multiple_results=True
        ),
        "scaled_add": extend.primitive(
            "test.scaled_add", scaled_add_kernel, vjp=scaled_add_vjp, vjp_needs=True, elementwise=True
        ),
    }
    yield type("Ops", (), defined)
    for name in names:
        _forget(name)


@pytest.fixture(autouse=True)
def _primitives_defined_by_a_test_are_forgotten(ops):
    before = set(extend._DEFINITIONS)
    yield
    for name in set(extend._DEFINITIONS) - before:
        _forget(name)


X = np.array([-30.0, -3.0, -0.5, 0.0, 0.25, 2.0, 40.0])


def numpy_softplus(x, beta=1.0):
    return np.logaddexp(beta * x, 0.0) / beta


def sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


# -- a user-defined op on every device -----------------------------------------------------------


@pytest.mark.parametrize("name", MODES)
def test_softplus_matches_numpy_on_every_device(ops, name):
    with mode(name) as device:
        x = xp.asarray(X, device=device)
        y = ops.softplus(x)
        y4 = ops.softplus(x, beta=4.0)
        y32 = ops.softplus(xp.asarray(X, dtype=xp.float32, device=device), beta=0.5)
        assert y.device == device and y.dtype == xp.float64 and y32.dtype == xp.float32
        np.testing.assert_allclose(np.asarray(y), numpy_softplus(X), rtol=1e-14, atol=0)
        np.testing.assert_allclose(np.asarray(y4), numpy_softplus(X, 4.0), rtol=1e-14, atol=0)
        np.testing.assert_allclose(np.asarray(y32), numpy_softplus(X.astype(np.float32), 0.5), rtol=1e-6)


@pytest.mark.parametrize("name", MODES)
def test_softplus_gradient_matches_the_derivative_and_finite_differences(ops, name):
    with mode(name) as device:
        x = xp.asarray(X, device=device)
        value, g = value_and_grad(lambda x: xp.sum(ops.softplus(x, beta=2.0) ** 2))(x)
        # nested: the rule is written with xp, so it differentiates too
        second = grad(lambda x: xp.sum(grad(lambda v: xp.sum(ops.softplus(v)))(x)))(x)
        assert g.device == device and second.device == device
        g, second, value = np.asarray(g), np.asarray(second), float(value)
    assert value == pytest.approx(np.sum(numpy_softplus(X, 2.0) ** 2), rel=1e-14)
    np.testing.assert_allclose(g, 2 * numpy_softplus(X, 2.0) * sigmoid(2 * X), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(second, sigmoid(X) * (1 - sigmoid(X)), rtol=1e-12, atol=1e-300)
    eps = 1e-6
    inner = X[np.abs(X) < 10]
    fd = (np.sum(numpy_softplus(inner + eps, 2.0) ** 2 - numpy_softplus(inner - eps, 2.0) ** 2)) / (2 * eps)
    assert np.sum(g[np.abs(X) < 10]) == pytest.approx(fd, rel=1e-7)


@pytest.mark.parametrize("name", MODES)
def test_multiple_results_with_a_shape_rule(ops, name):
    with mode(name) as device:
        x = xp.asarray(X, device=device)
        s, c = ops.sincos(x)
        np.testing.assert_allclose(np.asarray(s), np.sin(X), rtol=1e-14, atol=1e-16)
        np.testing.assert_allclose(np.asarray(c), np.cos(X), rtol=1e-14, atol=1e-16)
        g_both = grad(lambda x: xp.sum(2.0 * ops.sincos(x)[0] + ops.sincos(x)[1] ** 2))(x)
        g_cos = grad(lambda x: xp.sum(ops.sincos(x)[1]))(x)  # the other result gets zeros
        np.testing.assert_allclose(np.asarray(g_both), 2 * np.cos(X) - 2 * np.cos(X) * np.sin(X), atol=1e-14)
        np.testing.assert_allclose(np.asarray(g_cos), -np.sin(X), atol=1e-15)


@pytest.mark.parametrize("name", MODES)
def test_elementwise_op_with_two_operands_and_needs(ops, name):
    with mode(name) as device:
        a = xp.asarray([[1.0, 2.0, 3.0]], device=device)
        b = xp.asarray([[1.0], [-1.0]], device=device)
        out = ops.scaled_add(a, b, scale=3.0)
        assert out.shape == (2, 3)
        np.testing.assert_array_equal(np.asarray(out), [[4.0, 5.0, 6.0], [-2.0, -1.0, 0.0]])
        ga, gb = grad(lambda a, b: xp.sum(ops.scaled_add(a, b, scale=3.0)), argnums=(0, 1))(
            xp.ones((2, 3), device=device), xp.ones((2, 3), device=device)
        )
        np.testing.assert_array_equal(np.asarray(ga), np.ones((2, 3)))
        np.testing.assert_array_equal(np.asarray(gb), np.full((2, 3), 3.0))
        gb_only = grad(lambda b: xp.sum(ops.scaled_add(xp.ones((2, 3), device=device), b, scale=3.0)))(
            xp.ones((2, 3), device=device)
        )
        np.testing.assert_array_equal(np.asarray(gb_only), np.full((2, 3), 3.0))


def test_a_lowering_is_what_xla_runs():
    calls = []

    def lowering(k, x):
        calls.append(k.is_jax)
        return k.jax.nn.softplus(x)

    f = extend.primitive("test.lowered", lambda k, x: k.logaddexp(x, 0.0), lowering=lowering)
    np.testing.assert_allclose(np.asarray(f(xp.asarray(X))), numpy_softplus(X), rtol=1e-15)
    assert calls == []  # NumPy ran the kernel
    with mode("eager-xla") as device:
        np.testing.assert_allclose(np.asarray(f(xp.asarray(X, device=device))), numpy_softplus(X), rtol=1e-14)
    with mode("lazy-compiled") as device:
        np.testing.assert_allclose(np.asarray(f(xp.asarray(X, device=device))), numpy_softplus(X), rtol=1e-14)
    assert calls and all(calls)


def test_parameters_key_the_compiled_programs(ops):
    """Two values of a parameter are two programs, not one reused."""
    with mode("lazy-compiled") as device:
        x = xp.asarray(X, device=device)
        for beta in (1.0, 2.0, 1.0, 2.0):
            np.testing.assert_allclose(np.asarray(ops.softplus(x, beta=beta)), numpy_softplus(X, beta), rtol=1e-14)


def test_the_public_function_looks_like_a_function(ops):
    assert ops.softplus.__name__ == "softplus"
    assert ops.softplus.__doc__ == softplus_kernel.__doc__
    assert str(inspect.signature(ops.softplus)) == "(x, /, *, beta=1.0)"
    assert str(inspect.signature(ops.scaled_add)) == "(a, b, /, *, scale)"
    d = extend.definition("test.softplus")
    assert d.function is ops.softplus and d.vjp is softplus_vjp and d.operands == ("x",)
    assert d.params == {"beta"} and d.defaults == {"beta": 1.0} and not d.required
    assert extend.definition("nn.conv2d").vjp_needs
    with pytest.raises(ValueError, match="^definition: no extension primitive is named 'test.nothing'"):
        extend.definition("test.nothing")


def test_a_fallback_serves_other_namespaces_and_their_gradients():
    f = extend.primitive(
        "test.with_fallback",
        softplus_kernel,
        vjp=softplus_vjp,
        fallback=lambda xp, x, *, beta: xp.logaddexp(beta * x, xp.zeros_like(x)) / beta,
    )
    x = array_api_strict.asarray(X)
    np.testing.assert_allclose(np.asarray(f(x, beta=2.0)), numpy_softplus(X, 2.0), rtol=1e-14)
    g = grad(lambda x: x.__array_namespace__().sum(f(x)))(x)
    assert type(g) is type(x)
    np.testing.assert_allclose(np.asarray(g), sigmoid(X), rtol=1e-13, atol=1e-300)
    with pytest.raises(TypeError, match=r"^test\.with_fallback: x must be an array, got list"):
        f([1.0])


# -- bad calls -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda o, v: o.softplus([1.0]), TypeError, r"x must be an x10array array, got list"),
        (lambda o, v: o.softplus(np.ones(3)), TypeError, r"x must be an x10array array, got numpy\.ndarray"),
        (
            lambda o, v: o.softplus(array_api_strict.ones(3)),
            TypeError,
            r"x must be an x10array array, got array_api_strict\.Array",
        ),
        (lambda o, v: o.softplus(v.ints), TypeError, r"x must have a real floating dtype, got int64"),
        (lambda o, v: o.softplus(v.x, v.x), TypeError, r"takes 1 array operand \(x\), got 2"),
        (lambda o, v: o.softplus(), TypeError, r"takes 1 array operand \(x\), got 0"),
        (lambda o, v: o.softplus(v.x, gamma=1), TypeError, r"unexpected parameter 'gamma' \(its parameters: beta\)"),
        (lambda o, v: o.softplus(v.x, beta=[1]), TypeError, r"parameter 'beta' must be a hashable"),
        (lambda o, v: o.softplus(v.x, beta=v.x), TypeError, r"parameter 'beta' is an array; parameters are static"),
        (lambda o, v: o.scaled_add(v.x, v.x), TypeError, r"missing parameter 'scale'"),
        (lambda o, v: o.scaled_add(v.x, v.other_ordinal, scale=1), ValueError, r"arrays are on different devices"),
        (lambda o, v: o.scaled_add(v.x, v.other_backend, scale=1), ValueError, r"arrays are on different devices"),
    ],
)
@pytest.mark.parametrize("device", [EAGER, LAZY])
def test_bad_calls_are_clear_errors_and_record_nothing(ops, call, error, message, device):
    other_backend = LAZY if device is EAGER else EAGER
    values = type(
        "Values",
        (),
        {
            "x": xp.ones(3, device=device),
            "ints": xp.ones(3, dtype=xp.int64, device=device),
            "other_ordinal": xp.ones(3, device=xp.Device("cpu", 1, device.backend)),
            "other_backend": xp.ones(3, device=other_backend),
        },
    )
    xp.lazy_barrier()
    before = xp.metrics()
    with pytest.raises(error, match=r"^test\.(softplus|scaled_add): " + message):
        call(ops, values)
    assert (xp.metrics() - before).ops_recorded == 0


def test_differentiating_a_primitive_without_a_vjp_rule_says_how_to_give_one():
    f = extend.primitive("test.novjp", lambda k, x: 2.0 * x)
    assert float(f(xp.asarray(1.5))) == 3.0
    with pytest.raises(TypeError, match=r"^autodiff: test\.novjp has no VJP rule.*vjp=rule"):
        grad(lambda x: xp.sum(f(x)))(xp.ones(3))
    # on values that are not traced there is nothing to differentiate
    g = grad(lambda x: xp.sum(x) + xp.sum(f(xp.ones(2))))(xp.ones(3))
    np.testing.assert_array_equal(np.asarray(g), np.ones(3))


# -- bad definitions and wrong rules -------------------------------------------------------------


def _kernel(k, x):
    return x


@pytest.mark.parametrize(
    "define, error, message",
    [
        (lambda: extend.primitive(3, _kernel), TypeError, r"^primitive: name must be a str"),
        (lambda: extend.primitive("my lib", _kernel), ValueError, r"^primitive: name must be dotted identifiers"),
        (lambda: extend.primitive("test.softplus", _kernel), ValueError, r"^primitive: 'test.softplus' is already"),
        (lambda: extend.primitive("add", _kernel), ValueError, r"one of x10array's own primitives"),
        (lambda: extend.primitive("nn.conv2d", _kernel), ValueError, r"'nn.conv2d' is already defined"),
        (lambda: extend.primitive("test.k", 3), TypeError, r"^primitive: test.k's kernel must be a function"),
        (lambda: extend.primitive("test.k", lambda: 1), TypeError, r"kernel must take the kernel namespace first"),
        (lambda: extend.primitive("test.k", lambda k: 1), TypeError, r"takes no array operand"),
        (lambda: extend.primitive("test.k", lambda k, x=1: x), TypeError, r"gives operand 'x' a default"),
        (lambda: extend.primitive("test.k", _kernel, vjp=3), TypeError, r"vjp must be a function or None"),
        (lambda: extend.primitive("test.k", _kernel, vjp_needs=True), ValueError, r"vjp_needs=True but no vjp"),
        (lambda: extend.primitive("test.k", _kernel, vjp_needs=1), TypeError, r"vjp_needs must be a bool"),
        (
            lambda: extend.primitive("test.k", _kernel, elementwise=True, multiple_results=True),
            ValueError,
            r"elementwise primitive has one result",
        ),
        (lambda: extend.primitive("test.k", _kernel, category="floats"), ValueError, r"category must be a dtype kind"),
        (
            lambda: extend.primitive("test.k", lambda k, x, *, needs: x, vjp=_kernel, vjp_needs=True),
            ValueError,
            r"cannot take a parameter 'needs'",
        ),
    ],
)
def test_bad_definitions_are_clear_errors(define, error, message):
    with pytest.raises(error, match=message):
        define()
    assert "test.k" not in extend._DEFINITIONS


def test_a_definition_made_twice_through_the_decorator_is_refused():
    decorate = extend.primitive("test.twice")
    decorate(_kernel)
    with pytest.raises(ValueError, match="'test.twice' is already defined"):
        decorate(_kernel)


@pytest.mark.parametrize(
    "rule, error, message",
    [
        (lambda xp, g, ans, x: g * 2.0, TypeError, r"must return a tuple with one cotangent .* got Array"),
        (lambda xp, g, ans, x: (g, g), ValueError, r"returned 2 cotangents for 1 operand$"),
        (lambda xp, g, ans, x: (xp.sum(g),), ValueError, r"cotangent for x has shape \(\) .* shape \(3,\)"),
        (lambda xp, g, ans, x: (2.0,), TypeError, r"cotangent for x must be an array or None, got float"),
        (lambda xp, g, ans, x: (xp.astype(g, xp.float32),), ValueError, r"dtype x10array\.float32; the operand"),
    ],
)
@pytest.mark.parametrize("device", [EAGER, LAZY])
def test_a_wrong_vjp_rule_is_a_clear_error(rule, error, message, device):
    f = extend.primitive("test.wrong_vjp", lambda k, x: 2.0 * x, vjp=rule)
    with pytest.raises(error, match=r"^test\.wrong_vjp: its VJP rule" + ".*" + message):
        grad(lambda x: xp.sum(f(x)))(xp.ones(3, device=device))


def test_a_shape_rule_that_contradicts_the_kernel_is_a_clear_error():
    f = extend.primitive("test.wrong_shape", lambda k, x: 2.0 * x, shape=lambda x: extend.ShapeDtype((1,), x.dtype))
    message = r"^test\.wrong_shape: the (kernel|lowering) returned float64\[3\] where the shape rule says float64\[1\]"
    with pytest.raises(ValueError, match=message):
        f(xp.ones(3))
    with compile_threshold(None):
        y = f(xp.ones(3, device=LAZY))
        assert y.shape == (1,)  # recorded as the rule says; running it finds out
        with pytest.raises(ValueError, match=message):
            np.asarray(y)
    g = extend.primitive("test.bad_rule", lambda k, x: x, shape=lambda x: x.shape)
    with pytest.raises(TypeError, match=r"^test\.bad_rule: its shape rule must return ShapeDtype"):
        g(xp.ones(3, device=LAZY))


def test_a_shape_rule_may_give_x10array_dtypes():
    f = extend.primitive(
        "test.to32", lambda k, x: x.astype(k.float32), shape=lambda x: extend.ShapeDtype(x.shape, xp.float32)
    )
    for device in (EAGER, LAZY):
        y = f(xp.ones(3, device=device))
        assert y.dtype == xp.float32 and np.asarray(y).dtype == np.float32


def test_register_tracer_checks_its_arguments():
    with pytest.raises(TypeError, match="^register_tracer: tracer_type must be a class"):
        extend.register_tracer("Tracer", lambda t: xp)
    with pytest.raises(TypeError, match="^register_tracer: apply must be callable"):
        extend.register_tracer(type("T", (), {}), lambda t: xp, apply=3)


def test_resolve_device():
    assert extend.resolve_device("xla", "f") == xp.Device.default_xla
    assert extend.resolve_device(None, "f") == xp.Device.default
    with pytest.raises(ValueError, match="^f: device must be"):
        extend.resolve_device(3, "f")


# -- conv2d is an extension primitive ------------------------------------------------------------


def test_conv2d_is_built_on_extend_and_its_lowering_is_chosen_at_call_time():
    assert extend.definition("nn.conv2d").primitive is F._conv2d.primitive
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 4))

    def loss(w, x):
        return xp.sum(F.conv2d(x, w, strides=(2, 1), padding="same") ** 2)

    results = {}
    for lowering in ("im2col", "conv"):
        with extend.settings.override(X10ARRAY_CONV_LOWERING=lowering):
            before = xp.metrics()
            with mode("lazy-compiled") as device:
                results[lowering] = value_and_grad(loss, argnums=(0, 1))(
                    xp.asarray(W, device=device), xp.asarray(X, device=device)
                )
            assert (xp.metrics() - before).compile_count > 0  # a program of its own, not the other's
    value, (gw, gx) = value_and_grad(loss, argnums=(0, 1))(xp.asarray(W), xp.asarray(X))
    for got_value, (got_gw, got_gx) in results.values():
        assert float(got_value) == pytest.approx(float(value), rel=1e-12)
        np.testing.assert_allclose(np.asarray(got_gw), np.asarray(gw), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(got_gx), np.asarray(gx), rtol=1e-10, atol=1e-10)


def test_lenet_loss_and_gradients_are_unchanged():
    """LeNet through the extension primitive gives what it gave before conv2d moved onto
    x10array.extend (figures from that version; the same bits there and here on this machine),
    on both devices, and what array-api-strict gives through the fallback."""
    rng = np.random.default_rng(3)
    images = rng.random((4, 28, 28, 1), dtype=np.float32)
    labels = rng.integers(0, 10, 4).astype(np.int32)
    before = (2.2868285179138184, [0.11711772438138723, 1.4446789515059208, 0.4617803106084466, 8.259353939839201])
    for n, device in ((xp, EAGER), (xp, LAZY), (array_api_strict, None)):
        kw = {} if device is None else {"device": device}
        model = nn.LeNet(seed=1, xp=n, **kw)
        loss = lambda m, x, y: nn.softmax_cross_entropy(m(x), y)  # noqa: E731
        value, grads = value_and_grad(loss)(model, n.asarray(images, **kw), n.asarray(labels, **kw))
        sums = [float(np.sum(np.abs(np.asarray(g)), dtype=np.float64)) for g in grads.parameters()[:4]]
        assert float(value) == pytest.approx(before[0], rel=1e-6), n
        np.testing.assert_allclose(sums, before[1], rtol=1e-5, err_msg=str(n))


# -- docs/extending.md ---------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_the_tutorial_runs_and_prints_what_it_shows():
    """Each ```python block of docs/extending.md runs (in order, in one fresh process) and
    prints the ```text block that follows it (nothing, where none follows)."""
    check_doc_page(DOC, min_blocks=8)


def test_pytrees_one_encoding_with_paths():
    """extend's pytree functions (the walk autodiff, nn, optim, checkpoint and compile share):
    None is no leaf, dict order is kept, a named tuple is a leaf, the treedef is hashable (an
    unhashable aux compares by value), and the keyed walk gives the same leaves and treedef."""
    import collections

    Point = collections.namedtuple("Point", "x y")

    class Box:
        def __init__(self, items):
            self.items = items

        def tree_flatten(self):
            return self.items, {"n": len(self.items)}  # an unhashable aux

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == {"n": len(children)}
            return cls(list(children))

    tree = {"b": [1, None, (2.5, Point(3, 4))], "a": Box(["p", "q"])}
    leaves, treedef = extend.tree_flatten(tree)
    assert leaves == [1, 2.5, Point(3, 4), "p", "q"]
    assert hash(treedef) == hash(extend.tree_flatten({"b": [7, None, (8, 9)], "a": Box([1, 2])})[1])
    assert treedef != extend.tree_flatten({"a": Box([1, 2]), "b": [7, None, (8, 9)]})[1]  # order matters
    back = extend.tree_unflatten(treedef, leaves)
    assert list(back) == ["b", "a"] and back["b"] == [1, None, (2.5, Point(3, 4))] and back["a"].items == ["p", "q"]
    paths, treedef2 = extend.tree_leaves_with_paths(tree, lambda obj, aux, children: ["first", "second"])
    assert treedef2 == treedef and [leaf for _, leaf in paths] == leaves
    assert [p for p, _ in paths] == [("b", 0), ("b", 2, 0), ("b", 2, 1), ("a", "first"), ("a", "second")]
    assert extend.tree_map(lambda u, v: (u, v), [1, {"k": 2}], [3, {"k": 4}]) == [(1, 3), {"k": (2, 4)}]
    with pytest.raises(ValueError, match="tree_unflatten"):
        extend.tree_unflatten(treedef, leaves[:-1])
    with pytest.raises(TypeError, match="tree_unflatten"):
        extend.tree_unflatten(("bogus",), [])


def test_a_treedef_made_into_one_function_unflattens_as_unflatten():
    """pytree.unflattener (a captured step's output tree, built at every replay): for each
    kind of node, the same tree as `unflatten`, with the leaves in their places."""
    from x10array._core import pytree

    class Box:
        def __init__(self, items):
            self.items = items

        def tree_flatten(self):
            return self.items, ("box", len(self.items))

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == ("box", len(children))
            return cls(list(children))

    model = nn.Sequential(nn.Dense(3, 2, "relu", seed=0), nn.Dense(2, 1, seed=1))
    trees = [
        {"b": [1, None, (2.5, [])], "a": Box(["p", (), {"q": 3}]), "c": {}},
        (model, {"step": 4, "m": [5, 6]}, 7.0),
        8,
        None,
        [],
    ]
    for tree in trees:
        leaves, treedef = extend.tree_flatten(tree)
        fresh = [xp.asarray(float(i)) for i in range(len(leaves))]  # (new arrays: the places, by identity)
        built, expected = pytree.unflattener(treedef)(iter(fresh)), pytree.unflatten(treedef, iter(fresh))
        assert extend.tree_flatten(built)[1] == extend.tree_flatten(expected)[1] == treedef
        assert all(u is v for u, v in zip(extend.tree_flatten(built)[0], fresh, strict=True))
    dense = nn.Dense(3, 2, "relu", seed=0)
    children, aux = dense.tree_flatten()  # the arrays by sorted name, then the static attributes
    assert (
        children[0] is dense.bias
        and children[1] is dense.weight
        and aux == (("bias", "weight"), (("activation", "relu"),))
    )


def test_settings_imports_as_a_module_of_extend():
    """The README presents `x10array.extend.settings` as a module: `import x10array.extend.settings`
    raised ModuleNotFoundError ('x10array.extend' is not a package) while `from x10array.extend
    import settings` worked. Both give the one settings module."""
    import importlib

    module = importlib.import_module("x10array.extend.settings")
    assert module is extend.settings
    assert module.get("X10ARRAY_CONV_LOWERING") in ("conv", "im2col")
    with module.override(X10ARRAY_CONV_LOWERING="im2col"):
        assert extend.settings.get("X10ARRAY_CONV_LOWERING") == "im2col"
