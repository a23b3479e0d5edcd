"""`x10array.compile(fn)`: record once per signature, replay the compiled program.

Checked against the same function run uncaptured: values, rebound arguments, the outputs
being ordinary lazy arrays; that a replay runs no Python code of `fn`; what makes a new
signature; and that what cannot be captured (a read, a data-dependent shape, captured state)
falls back with one warning, counted, and still computes the right values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import x10array as xp
from x10array import optim
from x10array.autodiff import value_and_grad
from x10array.extend import settings

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0)


def _arr(a, device=LAZY):
    return xp.asarray(np.asarray(a), device=device)


def _np(x):
    return np.asarray(x)


def _sgd_step(w, b, x, y, lr):
    """One step of least squares: the loss before, parameters updated in place (rebound)."""

    def loss(w, b):
        r = x @ w + b - y
        return xp.mean(r * r)

    value, (gw, gb) = value_and_grad(loss, argnums=(0, 1))(w, b)
    w -= lr * gw
    b -= lr * gb
    return {"loss": value, "pred": x @ w + b}


def _data(seed=0, n=8):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)), rng.standard_normal((n, 2))


def test_replay_matches_the_function_and_rebinds_the_arguments():
    xs, ys = _data()
    x, y = _arr(xs), _arr(ys)
    w1, b1 = _arr(np.zeros((3, 2))), _arr(np.zeros(2))
    w2, b2 = _arr(np.zeros((3, 2))), _arr(np.zeros(2))
    step = xp.compile(_sgd_step)
    before = xp.metrics()
    for i in range(5):
        lr = 0.1 / (i + 1)  # a Python float: a runtime input, not a new signature
        got = step(w1, b1, x, y, lr)
        want = _sgd_step(w2, b2, x, y, lr)
        np.testing.assert_allclose(_np(got["loss"]), _np(want["loss"]), rtol=1e-12)
        np.testing.assert_allclose(_np(got["pred"]), _np(want["pred"]), rtol=1e-12)
        np.testing.assert_allclose(_np(w1), _np(w2), rtol=1e-12)
        np.testing.assert_allclose(_np(b1), _np(b2), rtol=1e-12)
    d = xp.metrics() - before
    assert d.captured_replays == 4 and d.capture_fallbacks == 0, d


def test_a_replay_runs_no_python_code_of_the_function():
    calls = []

    def f(x, y):
        calls.append(1)
        return xp.sin(x) * y + 1.0

    g = xp.compile(f)
    x = _arr(np.linspace(0, 1, 5))
    for i in range(4):
        out = g(x, float(i))
        np.testing.assert_allclose(_np(out), np.sin(np.linspace(0, 1, 5)) * i + 1.0, rtol=1e-12)
    assert len(calls) == 1


def test_outputs_are_ordinary_lazy_arrays():
    g = xp.compile(lambda x: (x * 2.0, x + 1.0))
    x = _arr(np.arange(4.0))
    for _ in range(3):
        a, b = g(x)
        assert a.device == LAZY and a.dtype == xp.float64 and a.shape == (4,)
        a += 1.0  # mutated
        a[0] = -1.0
        x = b  # fed to the next call
    np.testing.assert_array_equal(_np(a), [-1.0, 7.0, 9.0, 11.0])
    np.testing.assert_array_equal(_np(x), np.arange(4.0) + 3.0)


def test_a_new_signature_records_again():
    calls = []

    def f(x, n, mode):
        calls.append((x.shape, n, mode))
        y = x * n
        return y + 1 if mode == "plus" else y - 1

    g = xp.compile(f)
    x3, x4 = _arr(np.ones(3)), _arr(np.ones(4))
    np.testing.assert_array_equal(_np(g(x3, 2, "plus")), [3.0] * 3)
    np.testing.assert_array_equal(_np(g(x3, 2, "plus")), [3.0] * 3)
    np.testing.assert_array_equal(_np(g(x4, 2, "plus")), [3.0] * 4)  # another shape
    np.testing.assert_array_equal(_np(g(x3, 3, "plus")), [4.0] * 3)  # an int is static
    np.testing.assert_array_equal(_np(g(x3, 2, "minus")), [1.0] * 3)  # so is a string
    np.testing.assert_array_equal(_np(g(_arr(np.ones(3, np.float32)), 2, "plus")), [3.0] * 3)  # a dtype
    assert len(calls) == 5


def test_pytrees_of_arguments_and_results():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return [self.a, self.b], None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    def f(p, d):
        return [Pair(p.a + d["k"][0], p.b * d["k"][1]), None]

    g = xp.compile(f)
    for i in range(3):
        p = Pair(_arr(np.full(2, float(i))), _arr(np.ones(2)))
        out, nothing = g(p, {"k": (_arr(np.ones(2)), _arr(np.full(2, 3.0)))})
        assert nothing is None and isinstance(out, Pair)
        np.testing.assert_array_equal(_np(out.a), [i + 1.0] * 2)
        np.testing.assert_array_equal(_np(out.b), [3.0] * 2)


def test_a_closure_array_rebound_outside_is_not_replayed_stale():
    scale = _arr(np.full(3, 2.0))
    g = xp.compile(lambda x: x * scale)
    x = _arr(np.ones(3))
    np.testing.assert_array_equal(_np(g(x)), [2.0] * 3)
    np.testing.assert_array_equal(_np(g(x)), [2.0] * 3)
    scale += 1.0  # the constant's array now holds another value: recorded again
    np.testing.assert_array_equal(_np(g(x)), [3.0] * 3)


def test_a_pending_closure_array_rebound_outside_is_not_replayed_stale():
    base = _arr(np.full(3, 2.0))
    scale = base * 1.0  # pending when the function is first recorded
    g = xp.compile(lambda x: x * scale)
    x = _arr(np.ones(3))
    np.testing.assert_array_equal(_np(g(x)), [2.0] * 3)
    np.testing.assert_array_equal(_np(g(x)), [2.0] * 3)
    scale += 1.0
    np.testing.assert_array_equal(_np(g(x)), [3.0] * 3)


def test_on_an_eager_device_the_function_runs():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1.0

    g = xp.compile(f)
    for _ in range(3):
        np.testing.assert_array_equal(_np(g(_arr(np.zeros(2), EAGER))), [1.0, 1.0])
    assert len(calls) == 3


def _fallback_once(fn, args_of, expected, reason):
    g = xp.compile(fn)
    before = xp.metrics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            np.testing.assert_allclose(_np(g(*args_of(i))), expected(i))
    messages = [str(w.message) for w in caught if "x10array.compile" in str(w.message)]
    assert len(messages) == 1 and reason in messages[0], messages
    assert (xp.metrics() - before).capture_fallbacks == 1
    assert (xp.metrics() - before).captured_replays == 0
    return messages[0]


def test_a_value_read_inside_falls_back_with_one_warning_naming_the_line():
    def f(x):
        if float(xp.sum(x)) > 0:  # the Python control flow depends on data
            return x * 2.0
        return x * -1.0

    message = _fallback_once(
        f, lambda i: (_arr(np.full(2, i - 1.0)),), lambda i: np.full(2, (i - 1.0) * (2.0 if i > 1 else -1.0)), "read"
    )
    assert "test_capture.py:" in message


def test_a_data_dependent_shape_falls_back():
    _fallback_once(
        lambda x: xp.sum(xp.unique_values(x)),
        lambda i: (_arr(np.array([1.0, 1.0, float(i)])),),
        lambda i: np.sum(np.unique([1.0, 1.0, float(i)])),
        "depends on values",
    )


def test_captured_state_falls_back():
    counter = _arr(np.zeros(()))

    def f(x):
        nonlocal counter
        counter += 1.0  # an array that is neither an argument nor an output
        return x + counter

    _fallback_once(f, lambda i: (_arr(np.zeros(2)),), lambda i: np.full(2, i + 1.0), "captured state")


def test_the_debug_check_raises_when_the_graph_changed(override_settings):
    override_settings(X10ARRAY_CAPTURE_CHECK_EVERY=2)
    mode = {"square": False}

    def f(x):
        return x * x if mode["square"] else x + x  # depends on Python state that is not an argument

    g = xp.compile(f)
    x = _arr(np.full(2, 3.0))
    for _ in range(4):  # unchanged: the checks pass
        np.testing.assert_array_equal(_np(g(x)), [6.0, 6.0])
    mode["square"] = True
    g(x)  # a replay: the stale program (what the check is for)
    with pytest.raises(RuntimeError, match="does not match its capture"):
        g(x)


def test_a_compiled_function_called_inside_another_is_part_of_its_graph():
    inner = xp.compile(lambda a: a * 2.0 + 1.0)
    outer = xp.compile(lambda a: inner(a + 1.0) * 3.0)
    before = xp.metrics()
    for i in range(4):
        np.testing.assert_array_equal(_np(outer(_arr(np.full(2, float(i))))), np.full(2, ((i + 1.0) * 2 + 1) * 3))
    d = xp.metrics() - before
    assert d.captured_replays == 3 and d.capture_fallbacks == 0, d


def test_a_signature_that_changes_at_every_call_stops_capturing():
    from x10array import _capture

    calls = []

    def f(x, step):
        calls.append(step)
        return x * step

    g = xp.compile(f)
    x = _arr(np.ones(2))
    before = xp.metrics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(_capture._STORM + 5):  # an int: a new signature each time
            np.testing.assert_array_equal(_np(g(x, step)), [float(step)] * 2)
    messages = [str(w.message) for w in caught if "x10array.compile" in str(w.message)]
    assert len(messages) == 1 and "changes at every call" in messages[0], messages
    d = xp.metrics() - before
    assert d.compile_count <= _capture._STORM and d.capture_fallbacks == 1, d
    assert len(calls) == _capture._STORM + 5


def test_bad_input():
    with pytest.raises(TypeError, match="^compile: fn must be callable"):
        xp.compile(3)
    g = xp.compile(lambda x, opts: x)
    with pytest.raises(TypeError, match="^compile: "):
        g(_arr(np.ones(2)), np.ones(2))  # a NumPy array is neither an array of ours nor hashable


def test_a_training_loop_captured_trains_as_the_uncaptured_one():
    xs, ys = _data(1, 16)
    params = {"w": _arr(np.zeros((3, 2))), "b": _arr(np.zeros(2))}
    x, y = _arr(xs), _arr(ys)

    def train(p, x, y):
        def loss(p):
            r = x @ p["w"] + p["b"] - y
            return xp.mean(r * r)

        value, g = value_and_grad(loss)(p)
        return {k: p[k] - 0.05 * g[k] for k in p}, value

    step = xp.compile(train)
    plain = dict(params)
    for _ in range(6):
        params, lv = step(params, x, y)
        plain, lp = train(plain, x, y)
        np.testing.assert_allclose(_np(lv), _np(lp), rtol=1e-12)
    np.testing.assert_allclose(_np(params["w"]), _np(plain["w"]), rtol=1e-12)
    assert settings.get("X10ARRAY_CAPTURE_CHECK_EVERY") == 0


def test_a_replay_donates_the_previous_values_of_arguments_rebound_in_place():
    xs, ys = _data()
    x, y = _arr(xs), _arr(ys)
    w1, b1 = _arr(np.zeros((3, 2))), _arr(np.zeros(2))
    w2, b2 = _arr(np.zeros((3, 2))), _arr(np.zeros(2))
    step = xp.compile(_sgd_step)
    step(w1, b1, x, y, 0.1)  # the capture
    before = xp.metrics()
    for _ in range(3):
        step(w1, b1, x, y, 0.1)
    donated = (xp.metrics() - before).donated_buffers
    assert donated == 6  # w and b at each replay: their buffers become the new w and b
    for _ in range(4):
        _sgd_step(w2, b2, x, y, 0.1)
    np.testing.assert_allclose(_np(w1), _np(w2), rtol=1e-12)
    np.testing.assert_allclose(_np(b1), _np(b2), rtol=1e-12)


def test_a_step_taking_views_of_a_parameter_replays_and_donates():
    """A step that takes views of a parameter (`w.T`, a reshape: views, as NumPy's) and then
    updates it in place replays with the plain step's values, its rebound arguments handed to
    the program as donations (capture._in_views: an Alias whose views are gone does not make
    them copies)."""
    xs, ys = _data()
    x, y = _arr(xs), _arr(ys)
    w, b = _arr(np.zeros((3, 2))), _arr(np.zeros(2))
    w2, b2 = _arr(np.zeros((3, 2))), _arr(np.zeros(2))

    def step_with_views(w, b, x, y, lr):
        scale = xp.sum(xp.reshape(w.T, (-1,))) * 0.0 + 1.0  # views of w, dropped before the update
        return _sgd_step(w, b, x * scale, y, lr)

    step = xp.compile(step_with_views)
    step(w, b, x, y, 0.1)  # the capture
    before = xp.metrics()
    for _ in range(3):
        step(w, b, x, y, 0.1)
    assert (xp.metrics() - before).donated_buffers == 6
    for _ in range(4):
        step_with_views(w2, b2, x, y, 0.1)
    np.testing.assert_allclose(_np(w), _np(w2), rtol=1e-12)


def test_a_replay_does_not_donate_a_value_something_else_still_sees():
    xs, ys = _data()
    x, y = _arr(xs), _arr(ys)
    w, b = _arr(np.ones((3, 2))), _arr(np.ones(2))
    step = xp.compile(_sgd_step)
    step(w, b, x, y, 0.1)
    xp.lazy_barrier()
    # a pending computation that reads w's value before the step, and w's value read to the host
    w_before, b_before = _np(w).copy(), _np(b).copy()
    pending = w * 2.0
    host_b = _np(b)
    step(w, b, x, y, 0.1)
    step(w, b, x, y, 0.1)
    np.testing.assert_array_equal(_np(pending), 2.0 * w_before)
    np.testing.assert_array_equal(host_b, b_before)
    assert not np.array_equal(_np(w), w_before)


@pytest.mark.parametrize(
    "make",
    [
        lambda: optim.SGD(0.05, momentum=0.9, weight_decay=1e-3),
        lambda: optim.Adam(0.05),
        lambda: optim.AdamW(0.05, weight_decay=0.01),
    ],
    ids=["SGD", "Adam", "AdamW"],
)
def test_optimizer_steps_replay_under_compile_and_match_the_uncompiled_loop(make):
    """Every per-step number of an optimizer's state is data (Adam's step and its powers of
    beta are arrays, not Python ints): 300 captured steps are one recording and 299 replays,
    with no fallback. They give the values of the same 300 steps run uncaptured, every graph
    compiled or every graph interpreted, within the rounding the tiers may differ by (XLA may
    fuse a multiply-add or divide by a reciprocal: an ulp a step, which the steps do not
    amplify here)."""
    rng = np.random.default_rng(7)
    target = _arr(rng.standard_normal((4, 3)))

    def loss(p):
        d = p["w"] - target
        return xp.sum(d * d)

    grad_fn = value_and_grad(loss)
    opt = make()

    def train(p, state):
        _, g = grad_fn(p)
        return opt.update(p, g, state)

    step = xp.compile(train)
    start = rng.standard_normal((4, 3))
    p = {"w": _arr(start)}
    state = opt.init(p)
    before = xp.metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        for _ in range(300):
            p, state = step(p, state)
        xp.lazy_barrier(wait=True)
    d = xp.metrics() - before
    assert d.captured_replays == 299 and d.capture_fallbacks == 0, d
    assert d.compile_count + d.disk_cache_loads <= 1, d

    uncaptured = {}
    for tier, threshold in (("compiled", 1), ("interpreted", 2**62)):
        q = {"w": _arr(start)}
        plain = opt.init(q)
        with settings.override(X10ARRAY_COMPILE_THRESHOLD=threshold):
            for _ in range(300):
                q, plain = train(q, plain)
                xp.lazy_barrier()
        uncaptured[tier] = _np(q["w"])
        if "step" in plain:
            assert int(plain["step"]) == 300
    np.testing.assert_allclose(_np(p["w"]), uncaptured["compiled"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(p["w"]), uncaptured["interpreted"], rtol=1e-12, atol=1e-14)
    if "step" in state:
        assert int(state["step"]) == 300
    assert float(loss(p)) < 0.5 * float(loss({"w": _arr(start)}))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_captured_multiply_add_is_within_the_rounding_of_its_steps(dtype):
    """A replayed program's `a * b + c` is eager's within the rounding of its steps: XLA's CPU
    code may contract it into one fused multiply-add (rounded once; about a fifth of the
    results differ by an ulp of a product). Adam's moments, `b1 * m + (1 - b1) * g`, with both
    products, and a product on either side of a subtraction, on 20,000 values."""
    rng = np.random.default_rng(7)
    a, b, c, d = (rng.standard_normal(20_000).astype(dtype) for _ in range(4))

    def step(a, b, c, d, beta):
        return a * b + c, beta * a + (1.0 - beta) * d, c - a * d, a * b - c * d

    compiled = xp.compile(step)
    lazy = [_arr(v) for v in (a, b, c, d)]
    before = xp.metrics()
    for _ in range(3):  # the recording's own compiled run, then replays
        got = compiled(*lazy, 0.9)
    assert (xp.metrics() - before).captured_replays == 2
    want = step(*(_arr(v, EAGER) for v in (a, b, c, d)), 0.9)
    products = (abs(a * b), abs(0.9 * a) + abs(0.1 * d), abs(a * d), abs(a * b) + abs(c * d))  # (the products' sizes)
    for g, w, m in zip(got, want, products):
        g, w = _np(g).astype(np.float64), _np(w)
        bound = 2 * np.spacing(np.abs(m).astype(dtype)).astype(np.float64) + np.spacing(np.abs(w)).astype(np.float64)
        assert np.all(np.abs(g - w) <= bound)
