"""The eager device on XLA kernels: what it does to avoid compiling a program per new shape
gives the bits the exact programs give.

- data-moving primitives on the CPU run their NumPy kernel on host views (no compile);
- elementwise primitives on a new shape run the program of a flat, zero-padded size bucket,
  until the shape has been seen often enough to get its own program.
"""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
from x10array._backends import eager as _eager
from x10array._core.primitive import OP_TABLE, bind

ELEMENTWISE = sorted((p for p in OP_TABLE.values() if p.elementwise), key=lambda p: p.name)
DTYPES = ["float64", "float32", "complex64", "int8", "uint64", "bool"]
_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 1e-310, -3e-39, 1e30, -7.25]


def _values(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=shape).astype(dt)

    def real() -> np.ndarray:
        v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-6, 6, shape)
        with np.errstate(over="ignore"):
            part = np.float32 if dt in (np.float32, np.complex64) else np.float64
            return np.where(rng.random(shape) < 0.35, rng.choice(np.array(_SPECIAL), shape), v).astype(part)

    with np.errstate(over="ignore", invalid="ignore"):
        return (real() + 1j * real()).astype(dt) if dt.kind == "c" else real().astype(dt)


def _operands(prim, dtype: str, shapes: list[tuple[int, ...]], rng: np.random.Generator):
    """(operands, params) for one call of `prim`, or None if it takes no such dtype."""
    if prim.name == "where":
        dt = xp.bool if dtype == "bool" else getattr(xp, dtype)
        return [_values("bool", shapes[0], rng)] + [_values(dtype, s, rng) for s in shapes[1:]], {"dtype": dt}
    if prim.name == "astype":
        return [_values(dtype, shapes[0], rng)], {"dtype": xp.float32 if dtype != "float32" else xp.int16}
    return [_values(dtype, s, rng) for s in shapes], {}


def _arity(prim) -> int:
    return {"where": 3, "clip": 3, "astype": 1}.get(prim.name, 0)


def _run(prim, host_operands, params, exact_after, monkeypatch):
    monkeypatch.setattr(_eager, "_EXACT_AFTER", exact_after)
    monkeypatch.setattr(_eager, "_SIGHTINGS", _eager.LRU("test sightings", 64, register=False))
    arrays = [xp.asarray(h) for h in host_operands]
    return np.asarray(bind(prim, arrays[0].device, *arrays, **params))


def _bits(a: np.ndarray, nan_sign: bool) -> bytes:
    """The bytes of `a`, each NaN made the canonical quiet NaN unless `nan_sign`: XLA's CPU code
    gives the NaN of an arithmetic function (cosh of infinity) one sign in its vectorized loop
    and the other in its scalar remainder, so the exact programs themselves differ by the
    element's position there (IEEE 754 leaves that sign unspecified outside bit operations:
    those, `passes_bits` primitives, are compared with it)."""
    if nan_sign or a.dtype.kind not in "fc":
        return a.tobytes()
    parts = a.reshape(-1).view(a.real.dtype) if a.dtype.kind == "c" else a.reshape(-1)
    return np.where(np.isnan(parts), np.array(np.nan, parts.dtype), parts).tobytes()


def _compare(prim, dtypes, shape_sets, monkeypatch) -> int:
    """Compare the bits of the bucketed and the exact programs of `prim` on every dtype it
    takes among `dtypes` and every set of operand shapes; the number of comparisons."""
    rng = np.random.default_rng(sum(map(ord, prim.name)))
    arity = _arity(prim) or (2 if prim.kernel.__code__.co_argcount >= 3 else 1)
    compared = 0
    for dtype in dtypes:
        for shapes in shape_sets:
            shapes = (shapes * 3)[:arity]
            host, params = _operands(prim, dtype, shapes, rng)
            try:
                exact = _run(prim, host, params, 0, monkeypatch)
            except Exception:  # a dtype this primitive does not take
                continue
            bucketed = _run(prim, host, params, 10**9, monkeypatch)
            assert bucketed.dtype == exact.dtype and bucketed.shape == exact.shape
            assert _bits(bucketed, prim.passes_bits) == _bits(exact, prim.passes_bits), (prim.name, dtype, shapes)
            compared += 1
    return compared


@pytest.mark.parametrize("prim", ELEMENTWISE, ids=lambda p: p.name)
def test_a_bucketed_elementwise_program_gives_the_exact_programs_bits(prim, xla_kernels, monkeypatch):
    """One dtype each (a compile costs tens of milliseconds): the first one it takes."""
    for dtype in DTYPES:
        if _compare(prim, [dtype], [[(3, 7)], [(2,)]], monkeypatch):
            return
    pytest.fail(f"{prim.name} takes none of {DTYPES}")


@pytest.mark.slow
@pytest.mark.parametrize("prim", ELEMENTWISE, ids=lambda p: p.name)
def test_a_bucketed_elementwise_program_gives_the_exact_programs_bits_in_every_dtype(prim, xla_kernels, monkeypatch):
    assert _compare(prim, DTYPES, [[(3, 7)], [(2,)], [(1000,)], [(3, 1), (1, 5)], [(1, 1)], [()]], monkeypatch) >= 3


def test_a_new_shape_of_an_elementwise_primitive_reuses_its_bucket(xla_kernels, monkeypatch):
    monkeypatch.setattr(_eager, "_SIGHTINGS", _eager.LRU("test sightings", 64, register=False))
    compiled = []
    make = _eager._make_jitted
    monkeypatch.setattr(_eager, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_eager, "_make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    for shape in [(3,), (5,), (2, 3), (7,), (1, 1, 2)]:  # all of at most 8 elements
        host = np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape)
        out = xp.sin(xp.asarray(host))
        assert out.shape == shape
        np.testing.assert_allclose(np.asarray(out), np.sin(host), rtol=1e-15)
    assert compiled == ["sin"]  # one jitted function...
    fn = _eager._JITTED.entries[next(iter(_eager._JITTED.entries))][0]
    assert fn._cache_size() == 1  # ...compiled once, for the bucket of 8


def test_a_shape_seen_often_gets_its_exact_program(xla_kernels, monkeypatch):
    monkeypatch.setattr(_eager, "_SIGHTINGS", _eager.LRU("test sightings", 64, register=False))
    monkeypatch.setattr(_eager, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_eager, "_EXACT_AFTER", 3)
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    for _ in range(3):
        xp.exp(x)
    (fn,) = (entry[0] for entry in _eager._JITTED.entries.values())
    assert fn._cache_size() == 1  # the bucket's program only
    np.testing.assert_array_equal(np.asarray(xp.exp(x)), np.asarray(xp.exp(xp.asarray(np.arange(6.0).reshape(2, 3)))))
    assert fn._cache_size() == 2  # and now the (2, 3) program


def test_data_movement_on_the_cpu_compiles_nothing(xla_kernels, monkeypatch):
    compiled = []
    make = _eager._make_jitted
    monkeypatch.setattr(_eager, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_eager, "_make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    host = np.arange(24.0).reshape(4, 6)
    x = xp.asarray(host)
    y = xp.reshape(x, (6, 4))
    z = xp.concat([x, x], axis=1)[1:3, ::-2]
    w = xp.full((2, 2), 3.5)
    e = xp.eye(3, 5, k=1, dtype=xp.float32)  # a fill of zeros and ones, like full
    x[1, 2] = -1.0
    np.testing.assert_array_equal(np.asarray(y), host.reshape(6, 4))
    np.testing.assert_array_equal(np.asarray(z), np.concatenate([host, host], axis=1)[1:3, ::-2])
    np.testing.assert_array_equal(np.asarray(w), np.full((2, 2), 3.5))
    np.testing.assert_array_equal(np.asarray(e), np.eye(3, 5, k=1, dtype=np.float32))
    expected = host.copy()
    expected[1, 2] = -1.0
    np.testing.assert_array_equal(np.asarray(x), expected)
    assert compiled == []
    assert type(y._data).__module__.startswith("jax")  # still a device buffer
