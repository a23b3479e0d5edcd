"""Committed and uncommitted arrays (docs/devices.md): helper arrays follow the arrays they meet.

An array created without an explicit device, or computed from such arrays only, is
uncommitted: combined with committed arrays on another device, it is copied there. Two
committed arrays on different devices still raise, as do uncommitted arrays on different
devices with no committed array to say where they meet. The rule lives in one function,
`_core.validation.common_device`; these tests call it through every kind of public function.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _util import check_doc_page

import x10array as xp
from x10array.extend import primitive

EAGER = xp.Device("cpu", 0)
CPU1 = xp.Device("cpu", 1)
LAZY = xp.Device("cpu", 0, "xla")
LAZY1 = xp.Device("cpu", 1, "xla")

DATA = np.arange(6.0).reshape(2, 3) / 4


def helper(value: Any = DATA) -> xp.Array:
    """An array made the way SciPy and scikit-learn make helpers: no device given."""
    return xp.asarray(value)


# -- which arrays are committed -------------------------------------------------------------------

CREATIONS: list[tuple[str, Callable[[dict[str, Any]], xp.Array]]] = [
    ("asarray-list", lambda kw: xp.asarray([1.0, 2.0], **kw)),
    ("asarray-numpy", lambda kw: xp.asarray(DATA, **kw)),
    ("asarray-scalar", lambda kw: xp.asarray(0.0, **kw)),
    ("zeros", lambda kw: xp.zeros((2,), **kw)),
    ("ones", lambda kw: xp.ones((2,), **kw)),
    ("empty", lambda kw: xp.empty((2,), **kw)),
    ("full", lambda kw: xp.full((2,), 3.0, **kw)),
    ("arange", lambda kw: xp.arange(3, **kw)),
    ("linspace", lambda kw: xp.linspace(0, 1, 3, **kw)),
    ("eye", lambda kw: xp.eye(2, **kw)),
    ("from_dlpack", lambda kw: xp.from_dlpack(np.arange(3.0), **kw)),
]


@pytest.mark.parametrize("make", [c[1] for c in CREATIONS], ids=[c[0] for c in CREATIONS])
def test_creation_commits_only_with_an_explicit_device(make: Callable[[dict[str, Any]], xp.Array]) -> None:
    assert make({})._committed is False
    assert make({"device": LAZY})._committed is True
    assert make({"device": "eager"})._committed is True
    with xp.device_scope(LAZY):  # a default device, not an explicit one (jax.default_device's)
        scoped = make({})
    assert scoped.device == LAZY and scoped._committed is False


@pytest.mark.parametrize("fname", ["zeros_like", "ones_like", "empty_like"])
def test_like_functions_inherit_unless_placed(fname: str) -> None:
    like = getattr(xp, fname)
    assert like(helper())._committed is False
    assert like(xp.asarray(DATA, device=LAZY))._committed is True
    assert like(helper(), device=LAZY)._committed is True
    assert xp.full_like(helper(), 1.0)._committed is False


def test_results_are_committed_when_an_operand_is() -> None:
    u = helper()
    c = xp.asarray(DATA, device=EAGER)
    assert (u + 1)._committed is False
    assert xp.sum(u)._committed is False
    assert (u + c)._committed is True
    assert xp.linalg.svd(u)[0]._committed is False  # several results
    assert xp.linalg.svd(c)[0]._committed is True


def test_to_device_and_asarray_with_a_device_commit() -> None:
    u = helper()
    assert u.to_device(LAZY)._committed is True
    assert u.to_device(u.device) is u and u._committed is True  # placed where it is: committed now
    v = helper()
    assert xp.asarray(v, device=v.device) is v and v._committed is True
    w = helper()
    assert xp.asarray(w, dtype=xp.float32)._committed is False  # derived, not placed


# -- where they meet ------------------------------------------------------------------------------


def placed(device: xp.Device, value: Any = DATA) -> xp.Array:
    return xp.asarray(value, device=device)


# (id, call(committed array maker, uncommitted array maker), NumPy reference)
MEETINGS: list[tuple[str, Callable[..., Any], Callable[[], Any]]] = [
    ("subtract", lambda c, u: xp.subtract(c(), u(0.5)), lambda: DATA - 0.5),
    ("operator-reflected", lambda c, u: u(0.5) - c(), lambda: 0.5 - DATA),
    ("matmul", lambda c, u: c() @ u(DATA.T), lambda: DATA @ DATA.T),
    ("where", lambda c, u: xp.where(u(DATA > 0.5), c(), u(0.0)), lambda: np.where(DATA > 0.5, DATA, 0.0)),
    ("where-condition", lambda c, u: xp.where(c(DATA > 0.5), u(), 0.0), lambda: np.where(DATA > 0.5, DATA, 0.0)),
    ("concat", lambda c, u: xp.concat([u(), c(), u()]), lambda: np.concatenate([DATA] * 3)),
    ("stack", lambda c, u: xp.stack([u(), c()]), lambda: np.stack([DATA] * 2)),
    ("clip", lambda c, u: xp.clip(c(), u(0.25), u(1.0)), lambda: np.clip(DATA, 0.25, 1.0)),
    ("take", lambda c, u: xp.take(c(), u(np.array([1, 0])), axis=0), lambda: DATA[[1, 0]]),
    ("take_along_axis", lambda c, u: xp.take_along_axis(c(), u(np.array([[2], [0]])), axis=1),
     lambda: np.take_along_axis(DATA, np.array([[2], [0]]), axis=1)),
    ("getitem-int-array", lambda c, u: c()[u(np.array([1, 1]))], lambda: DATA[[1, 1]]),
    ("getitem-mask", lambda c, u: c()[u(DATA > 0.5)], lambda: DATA[DATA > 0.5]),
    ("diff-prepend", lambda c, u: xp.diff(c(), prepend=u(DATA[:, :1]), axis=1),
     lambda: np.diff(DATA, prepend=DATA[:, :1], axis=1)),
    ("broadcast_arrays", lambda c, u: xp.broadcast_arrays(c(), u(1.0))[1], lambda: np.ones((2, 3))),
    ("meshgrid", lambda c, u: xp.meshgrid(c(DATA[0]), u(DATA[1]))[1], lambda: np.meshgrid(DATA[0], DATA[1])[1]),
    ("repeat", lambda c, u: xp.repeat(c(DATA[0]), u(np.array([1, 0, 2]))), lambda: np.repeat(DATA[0], [1, 0, 2])),
    ("searchsorted", lambda c, u: xp.searchsorted(c(DATA[0]), u(DATA[1])), lambda: np.searchsorted(DATA[0], DATA[1])),
    ("isin", lambda c, u: xp.isin(c(), u(DATA[0])), lambda: np.isin(DATA, DATA[0])),
    ("linalg.outer", lambda c, u: xp.linalg.outer(u(DATA[0]), c(DATA[1])), lambda: np.outer(DATA[0], DATA[1])),
    ("linalg.solve", lambda c, u: xp.linalg.solve(u(np.eye(3) * 2), c(DATA.T)), lambda: DATA.T / 2),
    ("pending-helper", lambda c, u: c() * (u(2.0) + 1), lambda: DATA * 3),
]  # fmt: skip

HELPER_OUTPUTS = {m[1] for m in MEETINGS if m[0] in ("broadcast_arrays", "meshgrid")}
TARGETS = {"lazy": LAZY, "eager": EAGER, "eager-cpu1": CPU1, "lazy-cpu1": LAZY1}


@pytest.mark.parametrize("target", TARGETS.values(), ids=TARGETS.keys())
@pytest.mark.parametrize(("call", "reference"), [m[1:] for m in MEETINGS], ids=[m[0] for m in MEETINGS])
def test_uncommitted_arrays_join_the_committed_device(call: Callable[..., Any], reference: Callable[[], Any],
                                                      target: xp.Device) -> None:  # fmt: skip
    # helpers on another device than the target: the default device, unless that is the target
    home = LAZY if target == EAGER else EAGER
    with xp.device_scope(home):
        out = call(lambda value=DATA: placed(target, value), lambda value=DATA: xp.asarray(value))
    assert out.device == target
    # a result computed from the committed array is committed; the moved helper itself (one
    # output of broadcast_arrays or meshgrid) stays uncommitted, free to follow again
    assert out._committed is (call not in HELPER_OUTPUTS)
    np.testing.assert_allclose(np.asarray(out), reference())


def test_writes_commit_an_uncommitted_array() -> None:
    u = helper()
    u[0] = 1.0
    assert not u._committed  # a Python scalar: nothing committed reached it
    u[1] = placed(EAGER, DATA[0])
    assert u._committed  # derived from a committed array now, as `u + placed(...)` would be
    h = helper()
    h += helper()
    assert not h._committed


def test_setitem_moves_an_uncommitted_value_but_not_the_target() -> None:
    x = placed(LAZY)
    x[0] = helper(DATA[1])
    x[helper(np.array([False, True]))] = helper(DATA[0])
    assert x.device == LAZY
    np.testing.assert_allclose(np.asarray(x), DATA[::-1])
    u = helper()  # an uncommitted eager array written with a committed value: it moves there itself
    u[0] = placed(LAZY, DATA[1])
    assert u.device == LAZY and u._committed  # it holds a committed array's values now
    np.testing.assert_allclose(np.asarray(u), DATA[[1, 1]])
    with xp.device_scope(LAZY):
        w = helper()  # uncommitted too, but lazy: its pending graph stays where it is
    with pytest.raises(ValueError, match="^__setitem__: arrays are on different devices"):
        w[0] = placed(EAGER, DATA[1])
    v = helper()
    view = v[0]  # an array with views does not move (its views would be left behind)
    with pytest.raises(ValueError, match="^__setitem__: arrays are on different devices"):
        v[1] = placed(LAZY, DATA[1])
    assert view.device == v.device == EAGER


def test_getitem_moves_an_uncommitted_array_to_its_committed_index() -> None:
    u = helper()
    out = u[placed(LAZY, np.array([1, 0]))]
    assert out.device == LAZY and out._committed
    np.testing.assert_allclose(np.asarray(out), DATA[[1, 0]])
    assert u.device == EAGER  # read, not moved: a copy went to the lazy device


def test_in_place_operators() -> None:
    x = placed(LAZY)
    x += helper(1.0)  # the helper moves to x's device
    assert x.device == LAZY
    np.testing.assert_allclose(np.asarray(x), DATA + 1)
    u = helper()
    u += placed(LAZY)  # an uncommitted eager array without views follows, as with u[...] = v
    assert u.device == LAZY and u._committed
    np.testing.assert_allclose(np.asarray(u), 2 * DATA)
    c = placed(EAGER)
    with pytest.raises(ValueError, match="^add: arrays are on different devices"):
        c += placed(LAZY)  # c was placed explicitly: it does not move
    np.testing.assert_allclose(np.asarray(c), DATA)
    with xp.device_scope(LAZY):
        w = helper()
    with pytest.raises(ValueError, match="^in-place add: the result is on"):
        w += placed(EAGER)  # uncommitted, but lazy: its pending graph stays where it is
    assert c.device == EAGER and w.device == LAZY


def test_two_committed_devices_still_raise() -> None:
    for a, b in ((EAGER, LAZY), (EAGER, CPU1), (LAZY, LAZY1)):
        with pytest.raises(ValueError, match=r"^add: arrays are on different devices .*committed"):
            placed(a) + placed(b)
        with pytest.raises(ValueError, match=r"^concat: arrays are on different devices"):
            xp.concat([helper(), placed(a), placed(b)])


def test_uncommitted_arrays_on_different_devices_raise() -> None:
    with xp.device_scope(LAZY):
        lazy_helper = helper()
    with pytest.raises(ValueError, match=r"^multiply: arrays are on different devices .*uncommitted"):
        helper() * lazy_helper


def test_nothing_moves_or_is_recorded_when_devices_agree() -> None:
    """The fast path: arrays on one device meet without reading a flag or copying."""
    x = placed(LAZY)
    before = xp.metrics()
    with xp.device_scope(LAZY):
        y = x + helper(1.0) * 2  # the helper is on LAZY already (the scope's default)
    spent = xp.metrics() - before
    assert (spent.ops_recorded, spent.transfers_to_device) == (2, 1)  # *, + and the helper's data: no copy
    np.testing.assert_allclose(np.asarray(y), DATA + 2)


def test_extension_primitives_follow_the_rule() -> None:
    from x10array import extend
    from x10array._core.primitive import OP_TABLE

    name = "test_committed.scaled_sum"

    @primitive(name)  # not elementwise: test_numerics lists those
    def scaled_sum(k: Any, a: Any, b: Any) -> Any:
        return a + 2 * b

    try:
        out = scaled_sum(placed(LAZY), helper())
        assert out.device == LAZY
        np.testing.assert_allclose(np.asarray(out), 3 * DATA)
        with pytest.raises(ValueError, match="arrays are on different devices"):
            scaled_sum(placed(LAZY), placed(EAGER))
    finally:  # undefined again: the op table's completeness tests must not see it
        extend._DEFINITIONS.pop(name, None)
        OP_TABLE.pop(name, None)


def test_the_docs_page_runs_and_prints_what_it_shows() -> None:
    check_doc_page(Path(__file__).resolve().parents[1] / "docs" / "devices.md", min_blocks=1)
