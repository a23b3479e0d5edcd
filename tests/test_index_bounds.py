"""Out-of-bounds integer index arrays: one behaviour on every device and tier (issue 13, 2).

Every function that gathers or scatters by an integer index array raises IndexError whose
message starts with its name, never clamps and never drops a write: at the call when the
index values are computed (eager devices; lazy arrays already materialized), else, for a
lazy index still pending, whenever the result (or anything computed from it) is read, naming
the user's line that recorded it. Values that do not depend on the bad index are unaffected.
In-bounds indices, negative ones included, give NumPy's values exactly.

The table runs each operation on the eager device (NumPy kernels and XLA op-by-op kernels)
and on the lazy device interpreted and compiled (the compile threshold is set in-process,
as in test_op_table; a subprocess test checks the X10ARRAY_COMPILE_THRESHOLD=1 path too)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import x10array as xp

LAZY = xp.Device("cpu", 0, "xla")
EAGER = xp.Device("cpu", 0, "eager")
X = np.arange(5.0) * 10 + 1
X2 = np.arange(15.0).reshape(3, 5)
BAD = [0, 5, 7, -6]  # first out of bounds: 5
GOOD = [0, -1, -5, 4, 2]


def _setitem(x, i):
    z = x * 1
    z[i] = -1.0
    return z


def _setitem_2d(x, i):
    z = x * 1
    z[1:, i] = -1.0
    return z


# (name, the function named in the error, 1-D or 2-D input, the operation on (namespace, x, i),
# and optionally how the index values are laid out)
OPERATIONS = [
    ("getitem", "__getitem__", X, lambda n, x, i: x[i]),
    ("getitem-2d-mixed", "__getitem__", X2, lambda n, x, i: x[1:, i]),
    ("getitem-2d-int-and-array", "__getitem__", X2, lambda n, x, i: x[-1, i]),
    ("setitem", "__setitem__", X, lambda n, x, i: _setitem(x, i)),
    ("setitem-2d", "__setitem__", X2, lambda n, x, i: _setitem_2d(x, i)),
    ("take", "take", X, lambda n, x, i: n.take(x, i)),
    ("take-axis-1", "take", X2, lambda n, x, i: n.take(x, i, axis=1)),
    # (the axis is given: NumPy before 2.3 has no default for it)
    ("take_along_axis", "take_along_axis", X, lambda n, x, i: n.take_along_axis(x, i, axis=-1)),
    ("take_along_axis-2d", "take_along_axis", X2, lambda n, x, i: n.take_along_axis(x, i, axis=1), lambda v: [v] * 3),
]
SORTER_GOOD = [0, 1, 2, 3, 4]  # searchsorted needs a permutation that sorts x: any of them, for X
SORTER_BAD = [0, 1, 5, 3, 4]


def _values(op: tuple, values: list[int]) -> list:
    return op[4](values) if len(op) > 4 else values


def _expected(op: tuple, values: list[int]) -> np.ndarray:
    return np.asarray(op[3](np, op[2].copy(), np.array(_values(op, values))))


TIERS = ["eager-numpy", "eager-xla", "lazy-interpreted", "lazy-compiled"]


@pytest.fixture(params=TIERS)
def tier(request, override_settings):
    if request.param == "eager-xla":
        old = xp.set_cpu_kernels("xla")
        request.addfinalizer(lambda: xp.set_cpu_kernels(old))
    if request.param == "lazy-interpreted":
        override_settings(X10ARRAY_COMPILE_THRESHOLD=10**9)
    if request.param == "lazy-compiled":
        override_settings(X10ARRAY_COMPILE_THRESHOLD=1)
    return request.param


def _index(tier: str, values: list[int], kind: str) -> xp.Array:
    device = LAZY if tier.startswith("lazy") else EAGER
    a = xp.asarray(np.array(values), device=device)
    if kind == "pending":
        a = a + 0  # a lazy value not computed yet
        assert a._data.value is None
    return a


def _kinds(tier: str) -> list[str]:
    return ["concrete", "pending"] if tier.startswith("lazy") else ["concrete"]


@pytest.mark.parametrize("op", OPERATIONS, ids=[op[0] for op in OPERATIONS])
def test_in_bounds_indices_give_numpy_values(op, tier):
    name, _, base, fn = op[:4]
    for kind in _kinds(tier):
        x = xp.asarray(base, device=LAZY if tier.startswith("lazy") else EAGER)
        got = np.asarray(fn(xp, x, _index(tier, _values(op, GOOD), kind)))
        np.testing.assert_array_equal(got, _expected(op, GOOD), err_msg=f"{name} {tier} {kind}")


@pytest.mark.parametrize("op", OPERATIONS, ids=[op[0] for op in OPERATIONS])
def test_out_of_bounds_indices_raise_at_the_call_when_known(op, tier):
    name, fname, base, fn = op[:4]
    x = xp.asarray(base, device=LAZY if tier.startswith("lazy") else EAGER)
    with pytest.raises(IndexError) as info:
        fn(xp, x, _index(tier, _values(op, BAD), "concrete"))
    assert str(info.value).startswith(f"{fname}: index 5 is out of bounds for axis "), str(info.value)
    np.testing.assert_array_equal(np.asarray(x), base)  # (a failed write changes nothing)


@pytest.mark.parametrize("op", OPERATIONS, ids=[op[0] for op in OPERATIONS])
def test_out_of_bounds_pending_indices_raise_at_every_read(op, tier):
    if not tier.startswith("lazy"):
        pytest.skip("index values are pending on a lazy device only")
    name, fname, base, fn = op[:4]
    x = xp.asarray(base, device=LAZY)
    before = xp.sin(x)  # recorded before, in the same graph: unaffected
    out = fn(xp, x, _index(tier, _values(op, BAD), "pending"))  # recorded: no error yet
    after = out + 1.0  # computed from the result: raises too
    unrelated = xp.cos(x)
    for _ in range(2):  # and again: never a placeholder value
        with pytest.raises(IndexError) as info:
            np.asarray(out)
        message = str(info.value)
        del info  # (its traceback holds this frame: a cycle that would keep `out` alive, and
        # registered, failing later barriers, until the garbage collector happens to run)
        assert message.startswith(f"{fname}: index 5 is out of bounds for axis "), message
        assert f"{Path(__file__).name}:" in message  # the user's line that recorded it
    with pytest.raises(IndexError, match=f"^{fname}: "):
        float(xp.sum(after))
    # (within the documented bound of NumPy's result, not its bits: the compiled tier's sin and
    # cos are XLA's, and NumPy's own differ between CPUs)
    np.testing.assert_allclose(
        np.asarray(before), np.sin(base), rtol=4 * np.finfo(np.asarray(before).dtype).eps, atol=1e-15
    )
    np.testing.assert_allclose(
        np.asarray(unrelated), np.cos(base), rtol=4 * np.finfo(np.asarray(before).dtype).eps, atol=1e-15
    )
    np.testing.assert_array_equal(np.asarray(x), base)


def test_searchsorted_sorter_is_checked(tier):
    device = LAZY if tier.startswith("lazy") else EAGER
    x = xp.asarray(X, device=device)
    for kind in _kinds(tier):
        got = xp.searchsorted(x, 25.0, sorter=_index(tier, SORTER_GOOD, kind))
        assert int(got) == int(np.searchsorted(X, 25.0))
        if kind == "concrete":
            with pytest.raises(IndexError, match="^searchsorted: index 5 is out of bounds"):
                xp.searchsorted(x, 25.0, sorter=_index(tier, SORTER_BAD, kind))
        else:
            out = xp.searchsorted(x, 25.0, sorter=_index(tier, SORTER_BAD, kind))
            with pytest.raises(IndexError, match="^searchsorted: index 5 is out of bounds"):
                int(out)


def test_a_barrier_raises_for_the_bad_array_and_computes_the_others(tier):
    if not tier.startswith("lazy"):
        pytest.skip("lazy only")
    gc.collect()  # bad arrays of earlier tests, kept alive by cycles through their tracebacks, raise at a barrier too
    x = xp.asarray(X, device=LAZY)
    good = xp.sin(x)
    bad = x[_index(tier, [7], "pending")]
    z = xp.asarray(X, device=LAZY) * 1
    z[_index(tier, [1, -6], "pending")] = 0.0  # the write of -6 must not be dropped silently
    with pytest.raises(IndexError, match="^(__getitem__|__setitem__): index (7|-6) is out of bounds"):
        xp.lazy_barrier()
    np.testing.assert_allclose(np.asarray(good), np.sin(X), rtol=4 * np.finfo(np.asarray(good).dtype).eps, atol=1e-15)
    with pytest.raises(IndexError, match="^__getitem__: index 7 "):
        np.asarray(bad)
    with pytest.raises(IndexError, match="^__setitem__: index -6 "):
        np.asarray(z)
    del bad, z
    xp.lazy_barrier()  # nothing bad is left


def test_views_of_a_bad_write_raise_too(tier):
    if not tier.startswith("lazy"):
        pytest.skip("lazy only")
    z = xp.asarray(X2, device=LAZY) * 1
    row = z[1]
    z[0, _index(tier, [9], "pending")] = 0.0
    with pytest.raises(IndexError, match="^__setitem__: index 9 "):
        np.asarray(row)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint64"])
def test_index_dtypes(dtype, tier):
    """The check compares in the index's own dtype: an int8 index on an axis longer than
    127 is always in bounds; a uint8 one is never below."""
    device = LAZY if tier.startswith("lazy") else EAGER
    base = np.arange(300.0)
    x = xp.asarray(base, device=device)
    good = [0, 5, 127] if dtype != "int8" else [-128, 0, 127]
    for kind in _kinds(tier):
        i = xp.asarray(np.array(good, dtype=dtype), device=device)
        if kind == "pending":
            i = i * 1
        np.testing.assert_array_equal(np.asarray(x[i]), base[np.array(good, dtype=dtype)])
    if dtype in ("int16", "uint64"):
        for kind in _kinds(tier):
            i = xp.asarray(np.array([1, 300], dtype=dtype), device=device)
            if kind == "pending":
                i = i * 1
            try:
                out = xp.take(x, i)
                np.asarray(out)
            except IndexError as e:
                assert str(e).startswith("take: index 300 is out of bounds for axis 0 with size 300")
            else:
                pytest.fail("no IndexError")


def test_an_index_array_on_an_empty_axis_is_known_out_of_bounds():
    x = xp.zeros((3, 0), device=LAZY)
    i = xp.asarray(np.array([0]), device=LAZY) + 0  # pending: the shape alone decides
    with pytest.raises(IndexError, match="^__getitem__: an index array with entries is out of bounds"):
        x[:, i]
    with pytest.raises(IndexError, match="^take: an index array with entries is out of bounds"):
        xp.take(x, i, axis=1)


def test_the_issue_table_compiled_in_a_subprocess():
    """The issue's table with X10ARRAY_COMPILE_THRESHOLD=1: every graph compiled."""
    code = textwrap.dedent(
        """
        import numpy as np, x10array as xp
        lazy = xp.Device.default_xla
        for pending in (False, True):
            x = xp.asarray(np.arange(5.0), device=lazy)
            idx = xp.asarray(np.array([0, 5, 7, -6]), device=lazy)
            if pending:
                idx = idx + 0
            def setitem():
                z = xp.asarray(np.arange(5.0), device=lazy)
                z[idx] = 1.0
                return z
            ops = {
                "x[idx]": lambda: x[idx],
                "take": lambda: xp.take(x, idx),
                "take_along_axis": lambda: xp.take_along_axis(x, idx),
                "z[idx] = 1.0": setitem,
            }
            for name, fn in ops.items():
                try:
                    print(pending, name, np.asarray(fn()).tolist())
                except IndexError as e:
                    print(pending, name, "IndexError", str(e).split(" (")[0])
        """
    )
    root = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "X10ARRAY_COMPILE_THRESHOLD": "1",
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    fnames = {
        "x[idx]": "__getitem__",
        "take": "take",
        "take_along_axis": "take_along_axis",
        "z[idx] = 1.0": "__setitem__",
    }
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 8
    for line, (pending, name) in zip(lines, [(p, n) for p in (False, True) for n in fnames]):
        assert line == f"{pending} {name} IndexError {fnames[name]}: index 5 is out of bounds for axis 0 with size 5"


@pytest.mark.parametrize("op", ["take", "getitem", "take_along_axis"])
def test_gradients_of_a_gather_never_drop_an_out_of_bounds_index(op, tier):
    """The backward pass scatters by the same indices: an out-of-bounds one raises there too
    (on a lazy device, whether or not the gradient depends on the forward values)."""
    from x10array.autodiff import grad

    device = LAZY if tier.startswith("lazy") else EAGER
    fname = {"take": "take", "getitem": "__getitem__", "take_along_axis": "take_along_axis"}[op]

    def loss(x, i):
        picked = {
            "take": lambda: xp.take(x, i),
            "getitem": lambda: x[i],
            "take_along_axis": lambda: xp.take_along_axis(x, i),
        }[op]()
        return xp.sum(picked * 3.0)

    for kind in _kinds(tier):
        x = xp.asarray(X, device=device)
        good = _index(tier, GOOD + [-1], kind)
        expected = np.zeros(5)
        np.add.at(expected, np.array(GOOD + [-1]), 3.0)
        np.testing.assert_array_equal(np.asarray(grad(loss)(x, good)), expected)
        with pytest.raises(IndexError, match=f"^({fname}|take): index 5 is out of bounds"):
            np.asarray(grad(loss)(x, _index(tier, BAD, kind)))
