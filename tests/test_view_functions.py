"""Writes through the views that functions return, against NumPy (issue 24, 1).

NumPy returns views from `permute_dims`, `matrix_transpose`, `moveaxis`, `.T`, `.mT`,
`reshape` (where the strides allow), `expand_dims`, `squeeze`, `flip`, `unstack` and basic
indexing, and read-only views from `broadcast_to` and `linalg.diagonal`. x10array's are views
too, on every device (`_api.indexing.Alias`, `Transform`): a write through any of them, or to
the array they view, gives NumPy's numbers, and a write to a read-only one raises as NumPy's
does. SciPy's signal module relies on it (`v = permute_dims(a, ...)[1:3]; v += 1`).

Random programs (chains of views, setitem and every in-place operator) run on x10array and
NumPy side by side, on the eager device (NumPy and XLA kernels) and the lazy one, and every
array of the program is compared after each step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import x10array as xp

DEVICES = {
    "eager": lambda: xp.Device.default,
    "lazy": lambda: xp.Device.default_xla,
}


def _factor_shape(rng: np.random.Generator, size: int) -> tuple[int, ...]:
    """A random shape of `size` elements (1 to 4 axes; size-1 axes sprinkled in)."""
    factors = []
    n = size
    p = 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    ndim = int(rng.integers(1, 5))
    dims = [1] * ndim
    for f in factors:
        dims[int(rng.integers(0, ndim))] *= f
    return tuple(dims)


def _basic_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    key: list = []
    for n in shape:
        r = rng.random()
        if n and r < 0.2:
            key.append(int(rng.integers(-n, n)))
        elif r < 0.45:
            key.append(slice(None))
        else:
            start = None if rng.random() < 0.4 else int(rng.integers(-n - 1, n + 1))
            stop = None if rng.random() < 0.4 else int(rng.integers(-n - 1, n + 1))
            key.append(slice(start, stop, [None, 1, 2, -1, -2][int(rng.integers(0, 5))]))
    if rng.random() < 0.3:
        key.insert(int(rng.integers(0, len(key) + 1)), None)
    if rng.random() < 0.3 and shape:
        cut = int(rng.integers(0, len(key) + 1))
        key = key[:cut] + [Ellipsis]  # the rest of the axes whole
    return tuple(key)


def _make_view(rng: np.random.Generator, a, x):  # noqa: C901 - one branch per function
    """(NumPy view, x10array view, description) of a random view-returning function applied
    to the pair (a, x), or None if the drawn function does not apply to this shape."""
    shape = a.shape
    ndim = len(shape)
    choice = int(rng.integers(0, 14))
    if choice == 0 and ndim:
        axes = tuple(int(i) for i in rng.permutation(ndim))
        return np.permute_dims(a, axes), xp.permute_dims(x, axes), f"permute_dims({axes})"
    if choice == 1 and ndim >= 2:
        return np.matrix_transpose(a), xp.matrix_transpose(x), "matrix_transpose"
    if choice == 2 and ndim:
        k = int(rng.integers(1, ndim + 1))
        src = tuple(int(i) for i in rng.permutation(ndim)[:k])
        dst = tuple(int(i) for i in rng.permutation(ndim)[:k])
        return np.moveaxis(a, src, dst), xp.moveaxis(x, src, dst), f"moveaxis({src}, {dst})"
    if choice == 3:
        new = _factor_shape(rng, a.size) if a.size else (0,)
        if rng.random() < 0.3:  # -1 inferred
            new = (-1,) + new[1:] if a.size else new
        copy = [None, None, False][int(rng.integers(0, 3))]
        try:
            expected = np.reshape(a, new, copy=copy)
        except ValueError:  # NumPy needs a copy: x10array refuses too
            with pytest.raises(ValueError, match="^reshape: copy=False"):
                xp.reshape(x, new, copy=copy)
            return None
        return expected, xp.reshape(x, new, copy=copy), f"reshape({new}, copy={copy})"
    if choice == 4:
        axis = int(rng.integers(-ndim - 1, ndim + 1))
        return np.expand_dims(a, axis), xp.expand_dims(x, axis=axis), f"expand_dims({axis})"
    if choice == 5 and 1 in shape:
        axes = tuple(i for i, n in enumerate(shape) if n == 1 and rng.random() < 0.7) or (shape.index(1),)
        return np.squeeze(a, axis=axes), xp.squeeze(x, axis=axes), f"squeeze({axes})"
    if choice == 6 and ndim:
        axes = None if rng.random() < 0.3 else tuple(i for i in range(ndim) if rng.random() < 0.5)
        return np.flip(a, axis=axes), xp.flip(x, axis=axes), f"flip({axes})"
    if choice == 7 and ndim and shape[0]:
        axis = int(rng.integers(0, ndim))
        if not shape[axis]:
            return None
        i = int(rng.integers(0, shape[axis]))
        # (of a 1-D array, NumPy's are scalars: copies, and x10array's too)
        expected = np.unstack(a, axis=axis)[i]
        if not isinstance(expected, np.ndarray):
            expected = np.array(expected)
        return expected, xp.unstack(x, axis=axis)[i], f"unstack(axis={axis})[{i}]"
    if choice == 8 and ndim == 2:
        return a.T, x.T, ".T"
    if choice == 9 and ndim >= 2:
        return a.mT, x.mT, ".mT"
    if choice in (10, 11):
        key = _basic_key(rng, shape)
        return a[key], x[key], f"[{key}]"
    if choice == 13:  # real: a view; imag of a real array: read-only zeros (NumPy's)
        if rng.random() < 0.5:
            return np.real(a), xp.real(x), "real"
        return np.imag(a), xp.imag(x), "imag"
    if choice == 12:  # read-only views: both refuse writes
        if ndim >= 2 and rng.random() < 0.5:
            return np.linalg.diagonal(a), xp.linalg.diagonal(x), "linalg.diagonal"
        target = (int(rng.integers(1, 3)),) + shape
        return np.broadcast_to(a, target), xp.broadcast_to(x, target), f"broadcast_to({target})"
    return None


INPLACE_FLOAT = ("+=", "-=", "*=", "/=", "**=", "@=")
INPLACE_INT = ("+=", "-=", "*=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>=")


def _operand(rng: np.random.Generator, shape: tuple[int, ...], op: str, dtype):
    if op == "@=":
        n = shape[-1]
        return rng.integers(-1, 2, size=(n, n)).astype(dtype)
    if op in ("<<=", ">>="):
        return int(rng.integers(0, 3))
    if op in ("//=", "%="):
        return int(rng.choice([-3, -2, 2, 3]))
    if op == "/=":
        return float(rng.choice([-2.0, 0.5, 4.0]))
    if op == "**=":
        return 2.0
    if rng.random() < 0.5 or not shape:
        return int(rng.integers(-3, 4))
    # an array broadcast against the view (its trailing axes)
    sub = shape[int(rng.integers(0, len(shape) + 1)) :]
    return rng.integers(-3, 4, size=sub).astype(dtype)


def _apply(op: str, target, operand):
    if op == "+=":
        target += operand
    elif op == "-=":
        target -= operand
    elif op == "*=":
        target *= operand
    elif op == "/=":
        target /= operand
    elif op == "//=":
        target //= operand
    elif op == "%=":
        target %= operand
    elif op == "**=":
        target **= operand
    elif op == "@=":
        target @= operand
    elif op == "&=":
        target &= operand
    elif op == "|=":
        target |= operand
    elif op == "^=":
        target ^= operand
    elif op == "<<=":
        target <<= operand
    elif op == ">>=":
        target >>= operand
    else:  # pragma: no cover - the lists above
        raise AssertionError(op)


def _write(rng: np.random.Generator, a, x, device, log: list[str]) -> None:
    """One random write to both (setitem or an in-place operator), or both refuse it."""
    dtype = a.dtype
    ops = INPLACE_FLOAT if dtype.kind == "f" else INPLACE_INT
    if rng.random() < 0.5:
        key = _basic_key(rng, a.shape)
        selection = a[key]
        if rng.random() < 0.5 or selection.ndim == 0:
            value = int(rng.integers(-5, 6))
            xvalue = value
        else:
            value = rng.integers(-5, 6, size=selection.shape[int(rng.integers(0, selection.ndim + 1)) :])
            value = value.astype(dtype)
            xvalue = xp.asarray(value, device=device)
        log.append(f"setitem {key}")
        if not a.flags.writeable:
            with pytest.raises(ValueError, match="^__setitem__: the array is a read-only view"):
                x[key] = xvalue
            return
        a[key] = value
        x[key] = xvalue
        return
    op = ops[int(rng.integers(0, len(ops)))]
    if op == "@=" and (a.ndim == 0 or a.shape[-1] == 0):
        op = "+="
    operand = _operand(rng, a.shape, op, dtype)
    xoperand = xp.asarray(operand, device=device) if isinstance(operand, np.ndarray) else operand
    log.append(f"{op} {operand if not isinstance(operand, np.ndarray) else operand.shape}")
    if not a.flags.writeable:
        with pytest.raises(ValueError, match="^in-place .*: the array is a read-only view"):
            _apply(op, x, xoperand)
        return
    with np.errstate(all="ignore"):
        _apply(op, a, operand)
    _apply(op, x, xoperand)


def _run_program(seed: int, device, steps: int) -> None:
    rng = np.random.default_rng(seed)
    dtype = np.float64 if rng.random() < 0.6 else np.int64
    shape = _factor_shape(rng, int(rng.choice([1, 4, 6, 8, 12, 24])))
    root = rng.integers(-4, 5, size=shape).astype(dtype)
    pairs = [(root.copy(), xp.asarray(root, device=device))]
    log = [f"root {shape} {dtype.__name__}"]
    for _ in range(steps):
        a, x = pairs[int(rng.integers(0, len(pairs)))]
        if rng.random() < 0.5 and len(pairs) < 10:
            made = _make_view(rng, a, x)
            if made is not None:
                pairs.append(made[:2])
                log.append(made[2])
        else:
            _write(rng, a, x, device, log)
        for i, (a_i, x_i) in enumerate(pairs):
            got = np.asarray(x_i)
            assert got.shape == a_i.shape and got.dtype == a_i.dtype, (i, log)
            np.testing.assert_array_equal(got, a_i, err_msg=f"array {i} after {log}")


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("seed", range(40))
def test_random_view_programs_match_numpy(seed, device):
    _run_program(seed, DEVICES[device](), steps=12)


@pytest.mark.parametrize("seed", range(10))
def test_random_view_programs_match_numpy_xla_kernels(seed, xla_kernels):
    _run_program(1000 + seed, xp.Device.default, steps=12)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_issue_reproductions(device):
    """The issue's two-line reproductions (SciPy's TestOAConvolve)."""
    d = DEVICES[device]()
    a = xp.zeros((2, 4), device=d)
    v = xp.permute_dims(a, (1, 0))[1:3, ...]
    v += 1.0
    assert np.asarray(a).tolist() == [[0, 1, 1, 0], [0, 1, 1, 0]]
    b = xp.zeros((2, 4), device=d)
    xp.moveaxis(b, 0, 1)[...] = 1.0
    assert np.asarray(b).tolist() == [[1] * 4] * 2


VIEW_FUNCTIONS = {
    "permute_dims": (lambda m, a: m.permute_dims(a, (2, 0, 1))),
    "matrix_transpose": (lambda m, a: m.matrix_transpose(a)),
    "moveaxis": (lambda m, a: m.moveaxis(a, 0, -1)),
    "reshape": (lambda m, a: m.reshape(a, (6, 4))),
    "expand_dims": (lambda m, a: m.expand_dims(a, axis=1)),
    "squeeze": (lambda m, a: m.squeeze(m.expand_dims(a, axis=0), axis=0)),
    "flip": (lambda m, a: m.flip(a, axis=1)),
    "unstack": (lambda m, a: m.unstack(a, axis=1)[2]),
    "mT": (lambda m, a: a.mT),
    "getitem": (lambda m, a: a[:, ::-2]),
    "real": (lambda m, a: m.real(a)),
}


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("name", sorted(VIEW_FUNCTIONS))
def test_each_view_function_writes_both_ways(name, device):
    """For each function: a write to the result reaches the input, a write to the input
    reaches the result, chained with a second view of the result, as in NumPy."""
    fn = VIEW_FUNCTIONS[name]
    a = np.arange(24.0).reshape(2, 3, 4)
    x = xp.asarray(a, copy=True, device=DEVICES[device]())
    va, vx = fn(np, a), fn(xp, x)
    va[...] += 100.0
    vx[...] += 100.0
    np.testing.assert_array_equal(np.asarray(x), a)
    a[0] = -1.0
    x[0] = -1.0
    np.testing.assert_array_equal(np.asarray(vx), va)
    wa, wx = va[..., :1], vx[..., :1]  # a view of the view
    wa *= 3.0
    wx *= 3.0
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.asarray(vx), va)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_read_only_views_refuse_writes_and_see_their_base(device):
    d = DEVICES[device]()
    x = xp.zeros((2, 3), device=d)
    b = xp.broadcast_to(x[0], (4, 3))
    diag = xp.linalg.diagonal(x)
    for view in (b, b[1:], diag, xp.reshape(diag, (2, 1))):
        with pytest.raises(ValueError, match="^__setitem__: the array is a read-only view"):
            view[...] = 1.0
        with pytest.raises(ValueError, match="^in-place add: the array is a read-only view"):
            view += 1.0
    x[0, 1] = 5.0
    assert np.asarray(b).tolist() == [[0.0, 5.0, 0.0]] * 4
    assert np.asarray(diag).tolist() == [0.0, 0.0]
    x[1, 1] = 7.0
    assert np.asarray(diag).tolist() == [0.0, 7.0]
    y, z = xp.broadcast_arrays(xp.zeros((3,), device=d), xp.zeros((2, 3), device=d))
    with pytest.raises(ValueError, match="^__setitem__: the array is a read-only view .*broadcast_arrays"):
        y[0, 0] = 1.0
    z[0, 0] = 1.0  # not broadcast: the array itself, writable
    assert float(z[0, 0]) == 1.0


def test_reshape_views_where_numpy_does():
    """`reshape` of a view is a view where NumPy's is (its strides allow it) and a copy
    otherwise; copy=False raises where NumPy does, copy=True never views."""
    a = np.arange(24.0).reshape(4, 6)
    x = xp.asarray(a, copy=True)
    cases = [
        (lambda m, v: v[:, :3], (12,)),  # NumPy: a copy (rows not contiguous)
        (lambda m, v: v[:2], (12,)),  # a view
        (lambda m, v: v.mT, (24,)),  # a copy
        (lambda m, v: v.mT, (6, 2, 2)),  # a view (splits the column axis)
        (lambda m, v: v[::2], (2, 3, 2)),  # a view
    ]
    for make, shape in cases:
        base_np, base_x = make(np, a), make(xp, x)
        expect_view = np.shares_memory(np.reshape(base_np, shape), a)
        r = xp.reshape(base_x, shape)
        r[(0,) * len(shape)] = -7.0
        assert (float(x[0, 0]) == -7.0) == expect_view, (shape, expect_view)
        x[0, 0] = 0.0
        if not expect_view:
            with pytest.raises(ValueError, match="^reshape: copy=False"):
                xp.reshape(base_x, shape, copy=False)
        c = xp.reshape(base_x, shape, copy=True)
        c[(0,) * len(shape)] = 99.0
        assert float(x[0, 0]) == 0.0
    assert math.prod(x.shape) == 24


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_real_and_imag_of_complex_arrays_are_views(dtype, device):
    """As NumPy's: a write into `real(z)` / `imag(z)` stores that part into `z`, bit for
    bit (NaN and signed zeros kept), and a write to `z` shows in both."""
    d = DEVICES[device]()
    a = np.array([[1 + 2j, -3 - 0j], [complex(np.nan, -0.0), 5j]], dtype=dtype)
    z = xp.asarray(a, copy=True, device=d)
    ra, ia, rz, iz = np.real(a), np.imag(a), xp.real(z), xp.imag(z)
    ra[0, :] = [-0.0, np.inf]
    rz[0, :] = xp.asarray(np.array([-0.0, np.inf], dtype=ra.dtype), device=d)
    ia[1] *= 2.0
    iz[1] *= 2.0
    ia_col, iz_col = ia[:, 0], iz[:, 0]  # a view of the view
    ia_col += 1.0
    iz_col += 1.0
    assert np.asarray(z).tobytes() == a.tobytes()
    a[1, 1] = 7 - 7j
    z[1, 1] = 7 - 7j
    assert np.asarray(rz).tobytes() == ra.tobytes() and np.asarray(iz).tobytes() == ia.tobytes()
