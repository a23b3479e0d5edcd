"""Gradient rules against central finite differences in float64, on x10array eager, x10array
lazy and array-api-strict (the rules are written with `xp`, so all three must agree)."""

from __future__ import annotations

import inspect
import math

import array_api_strict
import numpy as np
import pytest

import x10array as xp
from x10array.autodiff import RULES, grad, value_and_grad, vjp

NAMESPACES = {
    "eager": (xp, {"device": xp.Device("cpu", 0, "eager")}),
    "lazy": (xp, {"device": xp.Device("cpu", 0, "xla")}),
    "strict": (array_api_strict, {}),
}


def _ns_of(x):
    return x.__array_namespace__()


def _device(a):
    return getattr(a, "device", None)  # (a jax tracer has none)


def _complex(n, a):
    """A complex array made of the real `a`: a * (1 + 2j), then + 0.5j * a**2 (for the
    complex conventions of real, imag and conj)."""
    c = n.astype(a, n.complex128) * n.asarray(1.0 + 2.0j, device=_device(a))
    return c + n.astype(a * a, n.complex128) * n.asarray(0.5j, device=_device(a))


def _parts(n, z):
    """A real array of the complex `z`: its real part plus half its imaginary part."""
    return n.real(z) + 0.5 * n.imag(z)


def _symmetric(n, a):
    """A symmetric matrix with well separated eigenvalues (finite differences need gaps)."""
    k = a.shape[-1]
    spread = n.asarray(np.diag(np.arange(k) * 3.0), device=_device(a))
    return a + n.matrix_transpose(a) + spread


def _spread(n, a):
    """`a` plus well separated singular values."""
    m, k = a.shape[-2], a.shape[-1]
    return a + n.asarray(np.eye(m, k) * (np.arange(m)[:, None] * 2.0 + 1.0), device=_device(a))


def _eigh_invariants(n, result):
    """The eigenvalues and the squared eigenvectors (each vector's sign is arbitrary)."""
    w, v = result
    return n.concat([w, n.reshape(v * v, (-1,))])


def _squares(n, arrays):
    """The squares of the arrays, flattened and joined (invariant under sign flips)."""
    return n.concat([n.reshape(a * a, (-1,)) for a in arrays])


def _svd_invariants(n, result):
    """S and the squares of U and Vh (a singular pair's sign is arbitrary), and U S Vh."""
    u, s, vh = result
    pieces = [u * u, s, vh * vh, n.matmul(u * s[..., None, :], vh)]
    return n.concat([n.reshape(p, (-1,)) for p in pieces])


# name -> (function of (ns, *arrays), input shapes, input sampler)
positive = "positive"
unit = "unit"
CASES = {
    "add": (lambda n, a, b: n.add(a, b), [(3, 1), (4,)], None),
    "subtract": (lambda n, a, b: a - b, [(3, 4), (4,)], None),
    "multiply": (lambda n, a, b: a * b * 2.0, [(2, 3), (2, 3)], None),
    "divide": (lambda n, a, b: a / b, [(3,), (3,)], positive),
    "pow": (lambda n, a, b: n.pow(a, b), [(3,), (3,)], positive),
    "maximum": (lambda n, a, b: n.maximum(a, b), [(4,), (4,)], None),
    "minimum": (lambda n, a, b: n.minimum(a, b), [(4,), (4,)], None),
    "atan2": (lambda n, a, b: n.atan2(a, b), [(3,), (3,)], positive),
    "hypot": (lambda n, a, b: n.hypot(a, b), [(3,), (3,)], positive),
    "logaddexp": (lambda n, a, b: n.logaddexp(a, b), [(3,), (3,)], None),
    "negative": (lambda n, a: -a, [(3,)], None),
    "abs": (lambda n, a: n.abs(a), [(3,)], positive),
    "exp": (lambda n, a: n.exp(a), [(3,)], None),
    "expm1": (lambda n, a: n.expm1(a), [(3,)], None),
    "log": (lambda n, a: n.log(a), [(3,)], positive),
    "log1p": (lambda n, a: n.log1p(a), [(3,)], positive),
    "log2": (lambda n, a: n.log2(a), [(3,)], positive),
    "log10": (lambda n, a: n.log10(a), [(3,)], positive),
    "sqrt": (lambda n, a: n.sqrt(a), [(3,)], positive),
    "square": (lambda n, a: n.square(a), [(3,)], None),
    "reciprocal": (lambda n, a: n.reciprocal(a), [(3,)], positive),
    "sin": (lambda n, a: n.sin(a), [(3,)], None),
    "cos": (lambda n, a: n.cos(a), [(3,)], None),
    "tan": (lambda n, a: n.tan(a), [(3,)], unit),
    "asin": (lambda n, a: n.asin(a), [(3,)], unit),
    "acos": (lambda n, a: n.acos(a), [(3,)], unit),
    "atan": (lambda n, a: n.atan(a), [(3,)], None),
    "sinh": (lambda n, a: n.sinh(a), [(3,)], None),
    "cosh": (lambda n, a: n.cosh(a), [(3,)], None),
    "tanh": (lambda n, a: n.tanh(a), [(3,)], None),
    "asinh": (lambda n, a: n.asinh(a), [(3,)], None),
    "acosh": (lambda n, a: n.acosh(a + 2.0), [(3,)], positive),
    "atanh": (lambda n, a: n.atanh(a), [(3,)], unit),
    "where": (lambda n, a, b: n.where(a > 0, a, b), [(4,), (4,)], None),
    "clip": (lambda n, a: n.clip(a, -0.5, 0.5), [(6,)], None),
    "matmul": (lambda n, a, b: n.matmul(a, b), [(2, 3, 4), (4, 2)], None),
    "matmul-vector": (lambda n, a, b: n.matmul(a, b), [(3,), (3, 2)], None),
    "matmul-vector-vector": (lambda n, a, b: n.matmul(a, b), [(3,), (3,)], None),
    "matmul-matrix-vector": (lambda n, a, b: n.matmul(a, b), [(2, 2, 3), (3,)], None),
    "tensordot": (lambda n, a, b: n.tensordot(a, b, axes=([0, 2], [1, 0])), [(3, 2, 4), (4, 3, 5)], None),
    "abs-complex": (lambda n, a: n.abs(_complex(n, a)), [(3,)], positive),
    "pow-complex": (lambda n, a, b: _parts(n, n.pow(_complex(n, a), _complex(n, b))), [(3,), (3,)], positive),
    "linalg.vector_norm-complex": (lambda n, a: n.linalg.vector_norm(_complex(n, a), axis=1), [(2, 3)], None),
    "linalg.matrix_norm-complex": (lambda n, a: n.linalg.matrix_norm(_complex(n, a)), [(2, 3)], None),
    "vecdot-complex": (lambda n, a, b: _parts(n, n.vecdot(_complex(n, a), _complex(n, b))), [(2, 3), (3,)], None),
    "vecdot": (lambda n, a, b: n.vecdot(a, b), [(2, 3), (3,)], None),
    "sum": (lambda n, a: n.sum(a, axis=1), [(3, 4)], None),
    "mean": (lambda n, a: n.mean(a, axis=(0, 2), keepdims=True), [(2, 3, 2)], None),
    "prod": (lambda n, a: n.prod(a, axis=0), [(3, 2)], positive),
    "max": (lambda n, a: n.max(a, axis=1), [(3, 4)], None),
    "min": (lambda n, a: n.min(a), [(3, 4)], None),
    "std": (lambda n, a: n.std(a, axis=0, correction=1.0), [(5, 2)], None),
    "var": (lambda n, a: n.var(a), [(5, 2)], None),
    "cumulative_sum": (lambda n, a: n.cumulative_sum(a, axis=1), [(2, 4)], None),
    "reshape": (lambda n, a: n.reshape(a, (3, 4)), [(2, 6)], None),
    "permute_dims": (lambda n, a: n.permute_dims(a, (2, 0, 1)), [(2, 3, 4)], None),
    "matrix_transpose": (lambda n, a: n.matrix_transpose(a), [(2, 3, 4)], None),
    "broadcast_to": (lambda n, a: n.broadcast_to(a, (2, 3, 4)), [(3, 1)], None),
    "concat": (lambda n, a, b: n.concat([a, b], axis=1), [(2, 3), (2, 2)], None),
    "stack": (lambda n, a, b: n.stack([a, b], axis=1), [(2, 3), (2, 3)], None),
    "squeeze": (lambda n, a: n.squeeze(a, axis=1), [(3, 1, 2)], None),
    "expand_dims": (lambda n, a: n.expand_dims(a, axis=(0, 2)), [(3, 2)], None),
    "flip": (lambda n, a: n.flip(a, axis=0), [(3, 2)], None),
    "roll": (lambda n, a: n.roll(a, 2, axis=1), [(2, 5)], None),
    "tile": (lambda n, a: n.tile(a, (2, 3)), [(2, 2)], None),
    "repeat": (lambda n, a: n.repeat(a, 3, axis=1), [(2, 2)], None),
    "moveaxis": (lambda n, a: n.moveaxis(a, 0, -1), [(2, 3, 4)], None),
    "getitem-basic": (lambda n, a: a[1:, ::2, None], [(3, 5)], None),
    "getitem-mask": (lambda n, a: a[a > 0], [(6,)], None),
    "getitem-int-array": (lambda n, a: a[n.asarray([0, 2, 2, 1], device=a.device)], [(3,)], None),
    "take": (lambda n, a: n.take(a, n.asarray([2, 0, 2], device=a.device), axis=1), [(2, 3)], None),
    "take_along_axis": (
        lambda n, a: n.take_along_axis(a, n.asarray([[0, 2], [1, 1]], device=a.device), axis=1),
        [(2, 3)],
        None,
    ),
    "from_dlpack": (lambda n, a: n.from_dlpack(a * a), [(3,)], None),
    "to_device": (lambda n, a: (a * a).to_device(a.device) * a, [(3,)], None),
    "astype": (lambda n, a: n.astype(n.astype(a, n.float32), n.float64), [(3,)], None),
    "linalg.solve": (lambda n, a, b: n.linalg.solve(a + 3.0 * n.eye(3, device=a.device), b), [(3, 3), (3,)], None),
    "linalg.inv": (lambda n, a: n.linalg.inv(a + 3.0 * n.eye(3, device=a.device)), [(3, 3)], None),
    "linalg.det": (lambda n, a: n.linalg.det(a + 3.0 * n.eye(3, device=a.device)), [(3, 3)], None),
    "linalg.cholesky": (
        lambda n, a: n.linalg.cholesky(n.matmul(a, n.matrix_transpose(a)) + n.eye(3, device=a.device)),
        [(3, 3)],
        None,
    ),
    "linalg.vector_norm": (lambda n, a: n.linalg.vector_norm(a, axis=1), [(2, 3)], None),
    "linalg.matrix_norm": (lambda n, a: n.linalg.matrix_norm(a), [(2, 3, 3)], None),
    "tril": (lambda n, a: n.tril(a, k=-1), [(2, 3, 4)], None),
    "triu": (lambda n, a: n.triu(a, k=1), [(4, 3)], None),
    "real": (lambda n, a: n.real(a), [(3,)], None),
    "real-complex": (lambda n, a: n.real(n.astype(a, n.complex128) * 2.0), [(3,)], None),
    "imag": (lambda n, a: n.imag(_complex(n, a) * _complex(n, a)), [(3,)], None),
    "conj": (lambda n, a: n.real(n.conj(_complex(n, a)) * _complex(n, a) * 2.0), [(3,)], None),
    "remainder": (lambda n, a, b: n.remainder(a * 3.0, b), [(5,), (5,)], positive),
    "sort": (lambda n, a: n.sort(a, axis=0), [(5, 2)], None),
    "sort-descending": (lambda n, a: n.sort(a, descending=True), [(2, 5)], None),
    "diff": (lambda n, a: n.diff(a, axis=0, n=2), [(5, 2)], None),
    "diff-prepend": (lambda n, a: n.diff(a, prepend=n.ones((2, 1), device=a.device)), [(2, 4)], None),
    "cumulative_prod": (lambda n, a: n.cumulative_prod(a, axis=1), [(2, 4)], None),
    "cumulative_prod-initial": (lambda n, a: n.cumulative_prod(a, include_initial=True), [(4,)], None),
    "unstack": (lambda n, a: n.unstack(a, axis=1)[1] * n.unstack(a, axis=1)[2], [(2, 3)], None),
    "broadcast_arrays": (lambda n, a, b: n.stack(n.broadcast_arrays(a, b)), [(3, 1), (4,)], None),
    "meshgrid": (lambda n, a, b, c: n.stack(n.meshgrid(a, b, c)), [(2,), (3,), (4,)], None),
    "meshgrid-ij": (lambda n, a, b: n.stack(n.meshgrid(a, b, indexing="ij")), [(2,), (3,)], None),
    "linalg.slogdet": (lambda n, a: n.linalg.slogdet(a + 3.0 * n.eye(3, device=a.device))[1], [(2, 3, 3)], None),
    "linalg.eigvals": (lambda n, a: _parts(n, n.sum(n.linalg.eigvals(a) ** 3, axis=-1)), [(2, 3, 3)], None),
    "linalg.eigvalsh": (lambda n, a: n.linalg.eigvalsh(_symmetric(n, a)), [(2, 3, 3)], None),
    "linalg.eigh": (lambda n, a: _eigh_invariants(n, n.linalg.eigh(_symmetric(n, a))), [(3, 3)], None),
    "linalg.svdvals": (lambda n, a: n.linalg.svdvals(_spread(n, a)), [(2, 3, 4)], None),
    "linalg.svd": (lambda n, a: _svd_invariants(n, n.linalg.svd(_spread(n, a), full_matrices=False)), [(3, 4)], None),
    "linalg.svd-tall": (
        lambda n, a: _svd_invariants(n, n.linalg.svd(_spread(n, a), full_matrices=False)),
        [(4, 2)],
        None,
    ),
    "linalg.svd-square": (lambda n, a: _svd_invariants(n, n.linalg.svd(_spread(n, a))), [(3, 3)], None),
    "linalg.qr": (lambda n, a: _squares(n, n.linalg.qr(_spread(n, a))), [(4, 3)], None),
    "linalg.qr-square": (lambda n, a: _squares(n, n.linalg.qr(_spread(n, a), mode="complete")), [(2, 3, 3)], None),
    "linalg.pinv": (lambda n, a: n.linalg.pinv(_spread(n, a)), [(3, 4)], None),
    "linalg.pinv-tall": (lambda n, a: n.linalg.pinv(_spread(n, a)), [(2, 4, 2)], None),
    "fft.fft": (lambda n, a: _parts(n, n.fft.fft(_complex(n, a), n=6, axis=0)), [(4, 2)], None),
    "fft.fft-complex": (lambda n, a: _parts(n, n.fft.fft(_complex(n, a), n=3, norm="ortho")), [(2, 5)], None),
    "fft.ifft": (lambda n, a: _parts(n, n.fft.ifft(_complex(n, a), norm="forward")), [(5,)], None),
    "fft.fftn": (lambda n, a: _parts(n, n.fft.fftn(_complex(n, a), s=(3, 5), axes=(0, 1))), [(2, 4)], None),
    "fft.ifftn": (lambda n, a: _parts(n, n.fft.ifftn(_complex(n, a), axes=(0, 2))), [(3, 2, 4)], None),
    "fft.rfft": (lambda n, a: _parts(n, n.fft.rfft(a, n=7)), [(2, 5)], None),
    "fft.rfft-truncated": (lambda n, a: _parts(n, n.fft.rfft(a, n=4, axis=0, norm="ortho")), [(6, 2)], None),
    "fft.rfftn": (lambda n, a: _parts(n, n.fft.rfftn(a, s=(4, 5), axes=(0, 1))), [(3, 4)], None),
    "fft.irfft": (lambda n, a: n.fft.irfft(_complex(n, a), n=6), [(4,)], None),
    "fft.irfft-odd": (lambda n, a: n.fft.irfft(_complex(n, a), n=7, axis=0, norm="ortho"), [(5, 2)], None),
    "fft.irfft-default": (lambda n, a: n.fft.irfft(_complex(n, a), norm="forward"), [(2, 5)], None),
    "fft.irfftn": (lambda n, a: n.fft.irfftn(_complex(n, a), s=(3, 6), axes=(0, 1)), [(3, 4)], None),
    "fft.irfftn-ortho": (lambda n, a: n.fft.irfftn(_complex(n, a), axes=(0, 1), norm="ortho"), [(3, 3, 2)], None),
    "fft.hfft": (lambda n, a: n.fft.hfft(_complex(n, a), n=5, norm="ortho"), [(4,)], None),
    "fft.hfft-default": (lambda n, a: n.fft.hfft(_complex(n, a)), [(2, 4)], None),
    "fft.ihfft": (lambda n, a: _parts(n, n.fft.ihfft(a, n=6)), [(5,)], None),
    "fft.ihfft-forward": (lambda n, a: _parts(n, n.fft.ihfft(a, norm="forward")), [(2, 5)], None),
    "fft.fftshift": (lambda n, a: n.fft.fftshift(a, axes=0), [(5, 2)], None),
    "fft.ifftshift": (lambda n, a: n.fft.ifftshift(a), [(3, 4)], None),
    "linalg.diagonal": (lambda n, a: n.linalg.diagonal(a, offset=1), [(2, 3, 4)], None),
    "linalg.diagonal-below": (lambda n, a: n.linalg.diagonal(a, offset=-2), [(4, 3)], None),
    "linalg.trace": (lambda n, a: n.linalg.trace(a, offset=-1), [(2, 4, 3)], None),
    "linalg.outer": (lambda n, a, b: n.linalg.outer(a, b), [(3,), (4,)], None),
    "linalg.cross": (lambda n, a, b: n.linalg.cross(a, b), [(2, 3), (3,)], None),
    "linalg.matrix_power": (lambda n, a: n.linalg.matrix_power(a, 3), [(2, 3, 3)], None),
    "linalg.matrix_power-negative": (
        lambda n, a: n.linalg.matrix_power(a + 3.0 * n.eye(3, device=a.device), -2),
        [(3, 3)],
        None,
    ),
}


def sample(shape, kind, rng):
    values = rng.uniform(-1.0, 1.0, size=shape)
    if kind == positive:
        values = np.abs(values) + 0.5
    elif kind == unit:
        values = values * 0.8
    return values


def scalarize(n, out):
    """A scalar of the output that depends on every element (weights avoid symmetric sums)."""
    weights = n.asarray(np.linspace(0.5, 1.5, math.prod(out.shape)).reshape(out.shape), device=out.device)
    return n.sum(out * weights)


def numeric_grad(f, values, i, eps=1e-6):
    base = [v.copy() for v in values]
    g = np.zeros_like(base[i])
    for idx in np.ndindex(base[i].shape):
        plus = [v.copy() for v in base]
        minus = [v.copy() for v in base]
        plus[i][idx] += eps
        minus[i][idx] -= eps
        g[idx] = (f(plus) - f(minus)) / (2 * eps)
    return g


@pytest.mark.parametrize("namespace", list(NAMESPACES))
@pytest.mark.parametrize("case", list(CASES))
def test_rule_matches_finite_differences(case, namespace):
    n, kwargs = NAMESPACES[namespace]
    fn, shapes, kind = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    values = [sample(s, kind, rng) for s in shapes]

    def loss(*arrays):
        m = _ns_of(arrays[0])
        return scalarize(m, fn(m, *arrays))

    def loss_np(vals):
        return float(loss(*[n.asarray(v, **kwargs) for v in vals]))

    arrays = [n.asarray(v, **kwargs) for v in values]
    grads = grad(loss, argnums=tuple(range(len(arrays))))(*arrays)
    # a float32 round trip swamps a 1e-6 step: wider step and tolerance there
    rtol, eps = (1e-3, 1e-2) if case == "astype" else (1e-5, 1e-6)
    for i, g in enumerate(grads):
        expected = numeric_grad(loss_np, values, i, eps)
        np.testing.assert_allclose(np.asarray(g), expected, rtol=rtol, atol=1e-6, err_msg=f"{case} argument {i}")


def test_every_rule_is_checked():
    checked = {c.split("-")[0] for c in CASES} | {
        "positive",
        "asarray",
        "nn.conv2d",
        "linalg.matmul",
        "linalg.tensordot",
        "linalg.vecdot",
        "linalg.matrix_transpose",
        "__getitem__",
        "copysign",
    }
    assert set(RULES) <= checked, sorted(set(RULES) - checked)


# differentiable standard functions that have no rule yet: they raise "has no gradient rule"
# (docs/api/autodiff.md lists them; keep both in step)
STILL_WITHOUT_RULE = {
    "full", "linalg.eig",
}  # fmt: skip


def test_every_public_function_has_a_rule_or_is_listed():
    from x10array.autodiff._tracer import NONDIFFERENTIABLE

    public = {name for name, _ in PUBLIC_ARRAY_FUNCTIONS} - {"compile"}  # compile takes a function
    covered = set(RULES) | NONDIFFERENTIABLE
    assert public - covered == STILL_WITHOUT_RULE & public, sorted((public - covered) ^ (STILL_WITHOUT_RULE & public))
    assert not STILL_WITHOUT_RULE & covered, sorted(STILL_WITHOUT_RULE & covered)


def test_integer_input_is_rejected():
    with pytest.raises(TypeError, match="real floating-point"):
        grad(lambda x: xp.sum(x))(xp.asarray([1, 2, 3]))


def test_non_scalar_output_is_rejected():
    with pytest.raises(TypeError, match="0-d"):
        grad(lambda x: x * 2.0)(xp.asarray([1.0, 2.0]))


def test_non_differentiable_function_is_a_clear_error():
    def f(x):
        n = _ns_of(x)
        return n.sum(n.abs(n.linalg.eig(x)[1]))

    with pytest.raises(TypeError, match="linalg.eig has no gradient rule"):
        grad(f)(xp.asarray([[3.0, 1.0], [2.0, 5.0]]))


def test_pytrees_and_has_aux():
    params = {"w": xp.asarray([1.0, 2.0]), "layers": [xp.asarray(3.0), (xp.asarray([4.0]),)]}

    def f(p):
        n = _ns_of(p["w"])
        total = n.sum(p["w"] ** 2) + p["layers"][0] * n.sum(p["layers"][1][0])
        return total, {"w_sum": n.sum(p["w"])}

    (value, aux), g = value_and_grad(f, has_aux=True)(params)
    assert float(value) == 1 + 4 + 12
    assert float(aux["w_sum"]) == 3.0
    np.testing.assert_allclose(np.asarray(g["w"]), [2.0, 4.0])
    assert float(g["layers"][0]) == 4.0
    np.testing.assert_allclose(np.asarray(g["layers"][1][0]), [3.0])


def test_vjp_gives_one_cotangent_per_primal():
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    b = xp.asarray([1.0, -1.0])
    out, f_vjp = vjp(lambda a, b: _ns_of(a).matmul(a, b), a, b)
    ga, gb = f_vjp(xp.asarray([1.0, 1.0]))
    np.testing.assert_allclose(np.asarray(out), [-1.0, -1.0])
    np.testing.assert_allclose(np.asarray(ga), [[1.0, -1.0], [1.0, -1.0]])
    np.testing.assert_allclose(np.asarray(gb), [4.0, 6.0])
    with pytest.raises(ValueError, match="shape"):
        f_vjp(xp.asarray([1.0]))


def test_unused_input_gets_zero_gradient():
    g = grad(lambda x, y: _ns_of(x).sum(x * 2.0), argnums=1)(xp.asarray([1.0]), xp.asarray([5.0, 6.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0])


# -- x10array's own functions on tracers (the `import x10array as xp; xp.mean(...)` habit) --------


def _public_array_functions():
    from x10array._core.dispatch import NOT_ARRAY_FUNCTIONS

    for module, prefix in ((xp, ""), (xp.linalg, "linalg."), (xp.fft, "fft.")):
        for name in sorted(dir(module)):
            fn = getattr(module, name)
            if name.startswith("_") or not callable(fn) or isinstance(fn, type) or name in NOT_ARRAY_FUNCTIONS:
                continue
            yield prefix + name, fn


PUBLIC_ARRAY_FUNCTIONS = list(_public_array_functions())


@pytest.mark.parametrize("device", ["eager", "lazy"])
def test_every_public_function_forwards_tracers_to_their_namespace(device, monkeypatch):
    """A loop over the namespace: each function, given a tracer of x10array arrays, hands the
    call to the tracer's namespace (the one that records gradients), not computing silently."""
    from x10array.autodiff._tracer import DiffNamespace, Tracer

    seen = []

    class Forwarded(Exception):
        pass

    def spy(self, name, fn, args, kwargs):
        seen.append(name)
        raise Forwarded

    monkeypatch.setattr(DiffNamespace, "_call", spy)
    t = Tracer(xp.ones((3, 3), device=NAMESPACES[device][1]["device"]), None, DiffNamespace.of(xp))
    missed = []
    for name, fn in PUBLIC_ARRAY_FUNCTIONS:
        params = inspect.signature(fn).parameters.values()
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        required = [p for p in params if p.default is p.empty and p.kind in positional]
        args = [[t] if name in ("concat", "stack") else t for _ in required or [None]]
        before = len(seen)
        try:
            fn(*args)
        except Forwarded:
            pass
        except Exception as e:  # noqa: BLE001 - reported below
            missed.append(f"{name}: {type(e).__name__}: {e}")
            continue
        else:
            missed.append(f"{name}: computed without the tracer's namespace")
            continue
        if [s.rpartition(".")[2] for s in seen[before:]] != [name.rpartition(".")[2]]:  # linalg.matmul is matmul
            missed.append(f"{name}: forwarded as {seen[before:]}")
    assert len(PUBLIC_ARRAY_FUNCTIONS) > 150
    assert not missed, "\n".join(missed)


@pytest.mark.parametrize("namespace", ["eager", "lazy"])
def test_xp_style_differentiates_like_the_portable_style(namespace):
    """`xp.mean(...)` on tracers gives the gradient that `x.__array_namespace__().mean(...)` gives."""
    _, kw = NAMESPACES[namespace]

    def loss(n, w, b):
        h = n.tanh(n.matmul(w, b) + 0.5)
        terms = n.concat([n.reshape(h, (-1,)), n.linalg.vector_norm(w, axis=1)])
        terms = n.where(terms > 0, terms, 0.1 * terms)
        return n.mean(n.exp(terms) * 2.0) + n.sum(n.clip(w, -0.5, 0.5)) + n.max(n.fft.fftfreq(4, device=w.device))

    def xp_style(w, b):
        return loss(xp, w, b)

    def portable(w, b):
        return loss(w.__array_namespace__(), w, b)

    rng = np.random.default_rng(0)
    w = xp.asarray(rng.uniform(-1, 1, (3, 4)), **kw)
    b = xp.asarray(rng.uniform(-1, 1, (4, 2)), **kw)
    v1, (gw1, gb1) = value_and_grad(xp_style, argnums=(0, 1))(w, b)
    v2, (gw2, gb2) = value_and_grad(portable, argnums=(0, 1))(w, b)
    assert float(v1) == float(v2)
    assert np.asarray(gw1).tobytes() == np.asarray(gw2).tobytes()
    assert np.asarray(gb1).tobytes() == np.asarray(gb2).tobytes()
    assert float(xp.linalg.vector_norm(gw1)) > 0
    # nested: the gradient of a gradient, written in the xp. style
    d2 = grad(lambda w: xp.sum(grad(lambda v: xp.sum(v * v * v))(w)))(w)
    np.testing.assert_allclose(np.asarray(d2), 6.0 * np.asarray(w))


def test_tracers_of_another_namespace_get_an_error_that_says_what_to_do():
    def f(w):
        return xp.mean(w)

    message = r"^mean: got an autodiff tracer of array_api_strict arrays.*x\.__array_namespace__\(\)"
    with pytest.raises(TypeError, match=message):
        grad(f)(array_api_strict.asarray([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"^linalg\.vector_norm: got an autodiff tracer of array_api_strict"):
        grad(lambda w: xp.linalg.vector_norm(w))(array_api_strict.asarray([1.0, 2.0]))


def test_other_errors_are_unchanged_by_the_forwarding():
    w = xp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match=r"^mean: x must be an x10array array, got list"):
        xp.mean([1.0, 2.0])
    with pytest.raises(TypeError, match=r"^exp: x must have a floating-point dtype"):
        grad(lambda v: xp.sum(xp.exp(xp.astype(v, xp.int64))))(w)


# -- second derivatives against jax (the rules are written with `xp`, so a rule's own backward
# pass is traced too, and must have rules for every function it calls) -------------------------

SECOND_ORDER = {
    "tril": lambda n, x: n.sum(n.tril(x * x * x, k=-1) * _w(n, x)),
    "sort": lambda n, x: n.sum(n.sort(x * x * x, axis=1) * _w(n, x)),
    "cumulative_prod": lambda n, x: n.sum(n.cumulative_prod(x, axis=1) * _w(n, x)),
    "diff": lambda n, x: n.sum(n.diff(x * x * x, axis=0) * _w(n, x)[1:]),
    "linalg.trace": lambda n, x: n.linalg.trace(n.matmul(x, n.matmul(x, x))),
    "linalg.cross": lambda n, x: n.sum(n.linalg.cross(x, x * x) * _w(n, x)),
    "linalg.matrix_power": lambda n, x: n.sum(n.linalg.matrix_power(x, 3) * _w(n, x)),
    "linalg.matrix_power-negative": lambda n, x: n.sum(n.linalg.matrix_power(x + 3.0 * n.eye(3), -2) * _w(n, x)),
    "linalg.slogdet": lambda n, x: n.linalg.slogdet(x + 3.0 * n.eye(3))[1],
    "linalg.eigvalsh": lambda n, x: n.sum(n.linalg.eigvalsh(_symmetric(n, x)) ** 3),
    "linalg.svdvals": lambda n, x: n.sum(n.linalg.svdvals(_spread(n, x)) ** 3),
    "getitem-basic": lambda n, x: n.sum(x[1:, ::2] ** 3) + n.sum(x[0, ...] ** 3) + n.sum(x[None, :, -1] ** 3),
    "getitem-mask": lambda n, x: n.sum(x[x > 0] ** 3),
    "linalg.eigh": lambda n, x: n.sum(_eigh_invariants(n, n.linalg.eigh(_symmetric(n, x))) ** 2),
    "linalg.svd": lambda n, x: n.sum(_svd_invariants(n, n.linalg.svd(_spread(n, x[:, :2]), full_matrices=False)) ** 2),
    "fft.fftn": lambda n, x: n.sum(_parts(n, n.fft.fftn(_complex(n, x), s=(4, 2), axes=(0, 1))) ** 3),
    "fft.irfftn": lambda n, x: n.sum(n.fft.irfftn(_complex(n, x), s=(3, 4), axes=(0, 1)) ** 3),
    "fft.hfft": lambda n, x: n.sum(n.fft.hfft(_complex(n, x), axis=0, norm="ortho") ** 3),
    "linalg.qr": lambda n, x: n.sum(n.linalg.qr(_spread(n, x))[1] ** 3),
    "linalg.pinv": lambda n, x: n.sum(n.linalg.pinv(_spread(n, x)) ** 3),
    "fft.rfft": lambda n, x: n.sum(_parts(n, n.fft.rfft(x * x, axis=0)) ** 2),
    "fft.irfft": lambda n, x: n.sum(n.fft.irfft(_complex(n, x), n=4) ** 3),
}


def _w(n, x):
    return n.reshape(n.linspace(0.5, 1.5, x.shape[0] * x.shape[1], dtype=x.dtype), x.shape)


@pytest.mark.parametrize("namespace", ["eager", "lazy"])
@pytest.mark.parametrize("case", list(SECOND_ORDER))
def test_second_derivative_matches_jax(case, namespace):
    jax = pytest.importorskip("jax")
    _, kw = NAMESPACES[namespace]
    f = SECOND_ORDER[case]
    rng = np.random.default_rng(7)
    x0 = rng.uniform(-1.0, 1.0, (3, 3))
    weights = np.linspace(-1.0, 1.0, 9).reshape(3, 3)

    def ours(x):
        n = _ns_of(x)
        return n.sum(grad(lambda v: f(_ns_of(v), v))(x) * n.asarray(weights, device=x.device))

    got = np.asarray(grad(ours)(xp.asarray(x0, **kw)))
    with jax.enable_x64(True):
        import jax.numpy as jnp

        def theirs(x):
            return jnp.sum(jax.grad(lambda v: f(jnp, v))(x) * weights)

        expected = np.asarray(jax.grad(theirs)(jnp.asarray(x0)))
    assert np.abs(expected).max() > 1e-3
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
