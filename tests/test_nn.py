"""nn.functional, layers, optimizers: across x10array eager, lazy and array-api-strict."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pytest

import x10array as xp
from x10array import nn, optim
from x10array.autodiff import grad, value_and_grad
from x10array.nn import functional as F

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
NAMESPACES = {"eager": (xp, {"device": EAGER}), "lazy": (xp, {"device": LAZY}), "strict": (array_api_strict, {})}


def reference_conv(x, w, strides, padding):
    import jax

    with jax.enable_x64(True):
        out = jax.lax.conv_general_dilated(x, w, strides, padding.upper(), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return np.asarray(out)


@pytest.mark.parametrize("namespace", list(NAMESPACES))
@pytest.mark.parametrize("strides", [(1, 1), (2, 1), (2, 2)])
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_matches_xla_and_its_gradients_match_finite_differences(namespace, strides, padding):
    n, kw = NAMESPACES[namespace]
    rng = np.random.default_rng(1)
    X, W = rng.standard_normal((2, 6, 5, 2)), rng.standard_normal((3, 2, 2, 3))
    x, w = n.asarray(X, **kw), n.asarray(W, **kw)
    np.testing.assert_allclose(
        np.asarray(F.conv2d(x, w, strides=strides, padding=padding)),
        reference_conv(X, W, strides, padding),
        rtol=1e-12,
        atol=1e-12,
    )

    def loss(w, x):
        return x.__array_namespace__().sum(F.conv2d(x, w, strides=strides, padding=padding) ** 2)

    gw, gx = grad(loss, argnums=(0, 1))(w, x)
    eps = 1e-6
    for arr, g, which in ((W, gw, 0), (X, gx, 1)):
        idx = tuple(s // 2 for s in arr.shape)
        plus, minus = arr.copy(), arr.copy()
        plus[idx] += eps
        minus[idx] -= eps
        args_p = (plus, X) if which == 0 else (W, plus)
        args_m = (minus, X) if which == 0 else (W, minus)
        fd = (
            np.sum(reference_conv(args_p[1], args_p[0], strides, padding) ** 2)
            - np.sum(reference_conv(args_m[1], args_m[0], strides, padding) ** 2)
        ) / (2 * eps)
        assert abs(np.asarray(g)[idx] - fd) < 1e-5 * max(1.0, abs(fd))


def test_conv2d_xla_lowering_matches_numpy_kernel(override_settings):
    override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    rng = np.random.default_rng(2)
    X, W = rng.standard_normal((2, 8, 8, 3)), rng.standard_normal((5, 5, 3, 4))
    results = []
    for device in (EAGER, LAZY):
        x, w = xp.asarray(X, device=device), xp.asarray(W, device=device)
        loss = lambda w, x: x.__array_namespace__().sum(F.conv2d(x, w, padding="same") ** 2)  # noqa: E731
        value, (gw, gx) = value_and_grad(loss, argnums=(0, 1))(w, x)
        results.append([np.asarray(value), np.asarray(gw), np.asarray(gx)])
    for a, b in zip(*results):
        # relative to the largest magnitude too: an element of a gradient near zero (a sum of
        # 100 products that cancel) keeps only the absolute error of its terms, whose rounding
        # depends on the CPU's BLAS kernel and on XLA's
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * float(np.max(np.abs(b))))


@pytest.mark.parametrize("namespace", ["eager", "lazy"])
@pytest.mark.parametrize(("strides", "padding"), [((1, 1), "valid"), ((2, 2), "valid"), ((2, 1), "same")])
def test_conv2d_second_derivatives_match_jax(namespace, strides, padding):
    """A gradient of a gradient through conv2d, strided and padded included (its rule dilates
    and pads tracers: once with writes into a new array, which tracers cannot take). Not on
    array-api-strict: its arrays' operators raise on a tracer operand instead of deferring to
    it, so no second derivative passes through its arithmetic."""
    import jax
    import jax.numpy as jnp

    ns, kw = NAMESPACES[namespace]
    rng = np.random.default_rng(3)
    X, W = rng.standard_normal((2, 6, 5, 2)), rng.standard_normal((3, 3, 2, 2))

    def outer(grad, total, conv):
        def f(w, x):
            return total(conv(x, w) ** 3)

        def h(w, x):
            gw, gx = grad(f, argnums=(0, 1))(w, x)
            return total(gw**2) + total(gx**2)

        return grad(h, argnums=(0, 1))

    def total(a):
        return a.__array_namespace__().sum(a)

    got = outer(grad, total, lambda x, w: F.conv2d(x, w, strides=strides, padding=padding))(
        ns.asarray(W, **kw), ns.asarray(X, **kw)
    )
    with jax.enable_x64(True):
        dims = ("NHWC", "HWIO", "NHWC")
        want = outer(
            jax.grad,
            jnp.sum,
            lambda x, w: jax.lax.conv_general_dilated(x, w, strides, padding.upper(), dimension_numbers=dims),
        )(W, X)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-10 * float(np.max(np.abs(w))))


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_relu_values_and_its_derivative_at_zero_match_jax(namespace):
    import jax

    ns, kw = NAMESPACES[namespace]
    values = np.array([-2.0, -0.0, 0.0, 1e-300, 3.0, np.nan, -np.inf, np.inf])
    x = ns.asarray(values, **kw)
    out = np.asarray(F.relu(x))
    with jax.enable_x64(True):
        want = np.asarray(jax.nn.relu(values))
        want_grad = np.asarray(jax.vmap(jax.grad(jax.nn.relu))(values))
    np.testing.assert_array_equal(out, want)
    assert not np.signbit(out[:5]).any()  # relu(-0.0) is +0.0
    got_grad = np.asarray(grad(lambda v: v.__array_namespace__().sum(F.relu(v)))(x))
    np.testing.assert_array_equal(got_grad[:5], want_grad[:5])  # 0 at -0.0 and 0.0, 1 above
    assert got_grad[1] == 0.0 and got_grad[2] == 0.0
    ints = ns.asarray(np.array([-3, 0, 4]), **kw)
    assert np.asarray(F.relu(ints)).tolist() == [0, 0, 4] and F.relu(ints).dtype == ints.dtype


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_pools(namespace):
    n, kw = NAMESPACES[namespace]
    X = np.arange(2 * 4 * 6 * 3, dtype=np.float64).reshape(2, 4, 6, 3)
    x = n.asarray(X, **kw)
    avg = np.asarray(F.avg_pool2d(x, (2, 2)))
    mx = np.asarray(F.max_pool2d(x, (2, 3), strides=(1, 2)))
    np.testing.assert_allclose(avg, X.reshape(2, 2, 2, 3, 2, 3).mean(axis=(2, 4)))
    expected = np.stack(
        [np.stack([X[:, i : i + 2, j : j + 3].max(axis=(1, 2)) for j in range(0, 4, 2)], 1) for i in range(3)], 1
    )
    np.testing.assert_allclose(mx, expected)
    same = np.asarray(F.max_pool2d(x, 3, strides=2, padding="same"))
    assert same.shape == (2, 2, 3, 3)
    g = grad(lambda x: x.__array_namespace__().sum(F.avg_pool2d(x, 2)))(x)
    np.testing.assert_allclose(np.asarray(g), np.full(X.shape, 0.25))


def test_bad_layer_inputs_are_clear_errors():
    x = xp.ones((1, 8, 8, 3))
    with pytest.raises(ValueError, match="conv2d: the input has 3 channels"):
        F.conv2d(x, xp.ones((3, 3, 2, 4)))
    with pytest.raises(ValueError, match="conv2d: padding"):
        F.conv2d(x, xp.ones((3, 3, 3, 4)), padding="full")
    with pytest.raises(ValueError, match="4-D"):
        F.avg_pool2d(xp.ones((8, 8)))
    with pytest.raises(TypeError, match="labels must be integers"):
        nn.softmax_cross_entropy(xp.ones((2, 3)), xp.ones(2))


def test_softmax_cross_entropy_matches_numpy():
    logits = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, -1.0]])
    labels = np.array([0, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    expected = -logp[np.arange(2), labels].mean()
    got = nn.softmax_cross_entropy(xp.asarray(logits), xp.asarray(labels))
    assert abs(float(got) - expected) < 1e-12


def test_module_is_a_pytree_and_moves_between_devices():
    model = nn.LeNet(seed=3, device=EAGER)
    leaves = model.parameters()
    assert len(leaves) == 10  # 2 convs and 3 dense layers, each filter/weight + bias
    assert sum(int(np.prod(p.shape)) for p in leaves) == 61706  # LeNet-5's parameter count
    moved = model.move(to=LAZY)
    assert all(p.device == LAZY for p in moved.parameters())
    assert all(p.device == EAGER for p in model.parameters())
    for a, b in zip(leaves, moved.parameters()):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    again = nn.LeNet(seed=3, device=EAGER)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(leaves, again.parameters()))


def test_learning_phase():
    assert nn.learning_phase() == "inference"
    with nn.phase("training"):
        assert nn.learning_phase() == "training"
    assert nn.learning_phase() == "inference"
    with pytest.raises(ValueError):
        nn.set_learning_phase("testing")


@pytest.mark.parametrize(
    "make",
    [
        lambda: optim.SGD(0.1),
        lambda: optim.SGD(0.05, momentum=0.9),
        lambda: optim.SGD(0.05, momentum=0.9, nesterov=True),
        lambda: optim.SGD(0.1, weight_decay=1e-3),
        lambda: optim.Adam(0.1),
        lambda: optim.AdamW(0.1, weight_decay=0.01),
    ],
)
def test_optimizers_minimize_a_quadratic(make):
    target = xp.asarray([1.0, -2.0, 3.0])
    params = {"x": xp.zeros(3)}
    opt = make()
    state = opt.init(params)
    loss = lambda p: p["x"].__array_namespace__().sum((p["x"] - target) ** 2)  # noqa: E731
    start = float(loss(params))
    for _ in range(100):
        params, state = opt.update(params, grad(loss)(params), state)
    assert float(loss(params)) < 0.01 * start


def test_sgd_matches_the_textbook_update():
    opt = optim.SGD(0.1, momentum=0.5)
    p = xp.asarray([1.0])
    state = opt.init(p)
    p, state = opt.update(p, xp.asarray([2.0]), state)  # v = 2, p = 1 - 0.2
    p, state = opt.update(p, xp.asarray([2.0]), state)  # v = 3, p = 0.8 - 0.3
    assert abs(float(p[0]) - 0.5) < 1e-12


def test_optimizer_state_moves_with_the_model():
    opt = optim.Adam(0.01)
    model = nn.Dense(3, 2, device=EAGER)
    state = nn.to_device(opt.init(model), LAZY)
    model = model.move(to=LAZY)
    g = grad(lambda m, x: x.__array_namespace__().sum(m(x)))(model, xp.ones((4, 3), dtype=xp.float32, device=LAZY))
    model, state = opt.update(model, g, state)
    assert all(a.device == LAZY for a in state["m"] + state["v"])
    with pytest.raises(ValueError, match="learning_rate"):
        optim.SGD(-1.0)


def test_lenet_trains_on_array_api_strict():
    """The whole stack on another conforming namespace: the loss falls."""
    from x10array.examples.mnist import loss_and_logits

    rng = np.random.default_rng(0)
    images = array_api_strict.asarray(rng.random((16, 28, 28, 1), dtype=np.float32))
    labels = array_api_strict.asarray(rng.integers(0, 10, 16).astype(np.int32))
    model = nn.LeNet(seed=0, xp=array_api_strict)
    opt = optim.SGD(0.1, momentum=0.9)
    state = opt.init(model)
    step = value_and_grad(loss_and_logits, has_aux=True)
    losses = []
    for _ in range(12):
        (loss, _), g = step(model, images, labels)
        model, state = opt.update(model, g, state)
        losses.append(float(loss))
    assert type(model.parameters()[0]).__module__.startswith("array_api_strict")
    assert losses[-1] < 0.85 * losses[0]
