"""The eager device on XLA kernels: what it does to avoid compiling a program per new shape
gives the bits the exact programs give.

- data-moving primitives on the CPU run their NumPy kernel on host views (no compile);
- elementwise primitives on a new shape run the program of a flat, zero-padded size bucket,
  until the shape has been seen often enough to get its own program;
- primitives with an XLA_HOST_KERNELS function (casts) run it with NumPy on the host, with
  XLA's convert semantics (checked against XLA's program for every dtype pair).
"""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
from x10array._backends import eager as _eager
from x10array._core import op_programs as _op_programs
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
    make = _op_programs.make_jitted
    monkeypatch.setattr(_op_programs, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_op_programs, "make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    for shape in [(3,), (5,), (2, 3), (7,), (1, 1, 2)]:  # all of at most 8 elements
        host = np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape)
        out = xp.sin(xp.asarray(host))
        assert out.shape == shape
        np.testing.assert_allclose(np.asarray(out), np.sin(host), rtol=1e-15)
    assert compiled == ["sin"]  # one jitted function...
    fn = _op_programs._JITTED.entries[next(iter(_op_programs._JITTED.entries))][0]
    assert fn._cache_size() == 1  # ...compiled once, for the bucket of 8


def test_a_shape_seen_often_gets_its_exact_program(xla_kernels, monkeypatch):
    monkeypatch.setattr(_eager, "_SIGHTINGS", _eager.LRU("test sightings", 64, register=False))
    monkeypatch.setattr(_op_programs, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_eager, "_EXACT_AFTER", 3)
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    for _ in range(3):
        xp.exp(x)
    (fn,) = (entry[0] for entry in _op_programs._JITTED.entries.values())
    assert fn._cache_size() == 1  # the bucket's program only
    np.testing.assert_array_equal(np.asarray(xp.exp(x)), np.asarray(xp.exp(xp.asarray(np.arange(6.0).reshape(2, 3)))))
    assert fn._cache_size() == 2  # and now the (2, 3) program


def test_data_movement_on_the_cpu_compiles_nothing(xla_kernels, monkeypatch):
    compiled = []
    make = _op_programs.make_jitted
    monkeypatch.setattr(_op_programs, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_op_programs, "make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    host = np.arange(24.0).reshape(4, 6)
    x = xp.asarray(host)
    y = xp.reshape(x, (6, 4))
    z = xp.concat([x, x], axis=1)[1:3, ::-2]
    w = xp.full((2, 2), 3.5)
    e = xp.eye(3, 5, k=1, dtype=xp.float32)  # a fill of zeros and ones, like full
    x[1, 2] = -1.0
    assert type(y._data).__module__.startswith("jax")  # still a device buffer
    # (numpy.asarray(y) would make y keep a NumPy buffer, the one it hands out: copies here)
    expected = host.copy()
    expected[1, 2] = -1.0
    np.testing.assert_array_equal(np.asarray(y, copy=True), expected.reshape(6, 4))  # a view, as NumPy's reshape
    np.testing.assert_array_equal(np.asarray(z), np.concatenate([host, host], axis=1)[1:3, ::-2])
    np.testing.assert_array_equal(np.asarray(w), np.full((2, 2), 3.5))
    np.testing.assert_array_equal(np.asarray(e), np.eye(3, 5, k=1, dtype=np.float32))
    expected = host.copy()
    expected[1, 2] = -1.0
    np.testing.assert_array_equal(np.asarray(x), expected)
    assert compiled == []


# -- casts on the CPU: NumPy with XLA's bits, nothing compiled ----------------------------------

_CAST_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def _cast_specials(dtype: str) -> np.ndarray:
    """Values where a cast can go wrong: the ends of every integer range and the floats around
    them, NaN of both signs, infinities, subnormals of both float types and the floats that
    round to or from them, float32's overflow."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        near = [0, 1, -1, 127, 128, -129, 255, 256, 2**24 + 1, 2**53 + 1, -(2**53 + 1), 2**62 + 2**38 + 1]
        ends = [info.min, info.min + 1, info.max - 1, info.max]
        return np.array(sorted({v for v in near + ends if info.min <= v <= info.max}), dtype=dt)
    real = np.float32 if dt in (np.float32, np.complex64) else np.float64
    tiny32, tiny64 = float(np.finfo(np.float32).tiny), float(np.finfo(np.float64).tiny)
    values = [0.0, -0.0, 0.1, 1 / 3, 1.5, -1.5, 2.5, -2.7, -0.5, -0.9999, -1.0, 127.5, -128.9, 255.9, 256.0,
              65535.7, 2.0**24 + 1, np.inf, -np.inf, np.nan, -np.nan, 1e10, -1e10, 3e9, 2.0**31 - 0.5, 2.0**31,
              -(2.0**31), -(2.0**31) - 256, 2147483520.0, 2.0**32, 4294967295.9, 2.0**63, -(2.0**63), 2.0**63 - 1024,
              -(2.0**63) - 2048, 2.0**64, 2.0**64 - 2048, 3.4028235e38, 3.5e38, 1e300, -1e300,
              tiny32, -tiny32, tiny32 / 4, -1e-40, tiny32 * (1 - 2.0**-30), tiny32 * (1 - 2.0**-25), 2.0**-149,
              2.0**-150, 1.5 * 2.0**-150, tiny64, -tiny64, 1e-310, -5e-324]  # fmt: skip
    with np.errstate(over="ignore"):
        parts = np.array(values, dtype=np.float64).astype(real)
    if dt.kind == "c":  # each value with a zero, a subnormal and a normal other part
        others = np.array([0.0, -0.0, tiny32 / 4, 1e-310, 2.5, np.nan], dtype=np.float64).astype(real)
        re, im = np.meshgrid(parts, others)
        out = np.empty(2 * re.size, dt)  # (parts set one by one: 1j * nan would spoil the other)
        out.real, out.imag = (
            np.concatenate([re.reshape(-1), im.reshape(-1)]),
            np.concatenate([im.reshape(-1), re.reshape(-1)]),
        )
        return out
    return parts


def test_a_cast_on_the_cpu_gives_the_xla_programs_bits():
    """XLA_HOST_KERNELS' astype (NumPy) against XLA's own convert, every dtype pair the public
    layer allows, on special values: bit for bit, NaNs included. One program per source dtype
    converts to every target at once (13 compiles, not 160)."""
    import jax

    from x10array._core.convert import ASTYPE
    from x10array._core.kernels import jax_namespace
    from x10array._core.xla_numerics import xla_flushes

    k = jax_namespace()
    host_kernel = _eager._HOST_KERNELS[ASTYPE]
    flush = xla_flushes()
    compared = 0
    for source in _CAST_DTYPES:
        targets = [getattr(xp, t) for t in _CAST_DTYPES if not (source.startswith("complex") and t[0] in "iuf")]
        x = _cast_specials(source)
        with jax.enable_x64(True):
            exact = jax.jit(lambda v, ts=targets: tuple(ASTYPE.lowering(k, v, dtype=t) for t in ts))(x)
        for target, want in zip(targets, exact):
            want = np.asarray(want)
            even = len(x) // 2 * 2
            for value, expected in [  # 1-D, 0-d (each element), 2-D
                (x, want),
                *((x[i].reshape(()), want[i].reshape(())) for i in range(len(x))),
                (x[:even].reshape(2, -1), want[:even].reshape(2, -1)),
            ]:
                got = host_kernel(flush, value, dtype=target)
                assert got.dtype == target.np and got.shape == value.shape
                assert got.tobytes() == expected.tobytes(), (source, target.name, value, got, expected)
            compared += 1
    assert compared == 13 * 13 - 2 * 10  # (complex to an integer or real float: refused)


@pytest.mark.parametrize("pair", [("float64", "int32"), ("float32", "uint8"), ("complex128", "complex64")])
def test_a_cast_through_the_executor_matches_the_xla_program(pair, xla_kernels, monkeypatch):
    """The executor's path (host views, placement) against the same cast with the host
    kernels turned off (the XLA program), on the public functions."""
    source, target = pair
    x = _cast_specials(source)
    on_host = np.asarray(xp.astype(xp.asarray(x), getattr(xp, target)))
    monkeypatch.setattr(_eager, "_HOST_KERNELS", {})
    by_xla = np.asarray(xp.astype(xp.asarray(x), getattr(xp, target)))
    assert on_host.dtype == by_xla.dtype and on_host.tobytes() == by_xla.tobytes()


def test_a_cast_on_the_cpu_compiles_nothing(xla_kernels, monkeypatch):
    """asarray(x, dtype=...) and astype on new shapes and dtype pairs, as the conformance
    suite's test_asarray_arrays draws them: no program is compiled (each would cost tens of
    milliseconds on a first call)."""
    compiled = []
    make = _op_programs.make_jitted
    monkeypatch.setattr(_op_programs, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_op_programs, "make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    rng = np.random.default_rng(0)
    for shape, source, target in [
        ((), "int8", "int64"),
        ((1,), "float32", "float64"),
        ((1, 1), "uint16", "float32"),
        ((3, 2), "bool", "complex128"),
        ((5,), "float64", "int16"),
        ((2, 2, 2), "complex64", "complex128"),
    ]:
        host = _values(source, shape, rng)
        x = xp.asarray(host)
        out = xp.asarray(x, dtype=getattr(xp, target))
        also = xp.astype(x, getattr(xp, target))
        assert out.dtype == also.dtype == getattr(xp, target) and out.shape == shape
        assert type(out._data).__module__.startswith("jax")  # placed on the device
        assert np.asarray(out).tobytes() == np.asarray(also).tobytes()
    assert compiled == []


def test_a_large_cast_runs_the_xla_program(xla_kernels, monkeypatch):
    """Past the bucket's bound, XLA's program (compiled once for the shape) is faster than
    NumPy's passes: the cast compiles it."""
    compiled = []
    make = _op_programs.make_jitted
    monkeypatch.setattr(_op_programs, "_JITTED", _eager.LRU("test jitted", 64, register=False))
    monkeypatch.setattr(_op_programs, "make_jitted", lambda prim, kw: compiled.append(prim.name) or make(prim, kw))
    host = np.linspace(-1e3, 1e3, _eager._BUCKET_MAX + 1)
    out = xp.astype(xp.asarray(host), xp.int32)
    np.testing.assert_array_equal(np.asarray(out), host.astype(np.int32))
    assert compiled == ["astype"]


_HOST_DTYPES = ["float32", "float64", "complex64", "int8", "uint64", "bool"]
NUMPY_CPU = xp.Device("cpu", 0, "eager")


def _host_kernel_cases(prim, dtype: str):
    """(operands, params) to compare for `prim` on `dtype`: every pair of special values (one
    flat array each), and an array with Python scalars where the primitive takes two."""
    x = _cast_specials(dtype)
    if prim.name in ("all", "any"):
        even = len(x) // 2 * 2
        return [
            ((x,), {"axes": (0,), "keepdims": False}),
            ((x[:even].reshape(2, -1),), {"axes": (1,), "keepdims": True}),
        ]
    if prim.kernel.__code__.co_argcount < 3:
        return [((x,), {})]
    x = x[:: max(1, len(x) // 60)]  # (complex specials: 648 values; their pairs would be 420,000)
    a, b = (m.reshape(-1) for m in np.meshgrid(x, x))
    scalars = {"b": [True], "i": [0, 3], "u": [0, 3], "f": [0.0, -0.0, 2.5, 1e-310], "c": [0.0, 1e-310j]}
    if prim.name == "where":
        condition = np.arange(a.size) % 3 == 0
        params = {"dtype": getattr(xp, dtype)}
        return [((condition, a, b), params)] + [
            ((condition[: x.size], x, s), params) for s in scalars[np.dtype(dtype).kind]
        ]
    return [((a, b), {})] + [((x, s), {}) for s in scalars[np.dtype(dtype).kind]]


@pytest.mark.parametrize(
    "prim",
    sorted((p for p in _eager._HOST_KERNELS if p.name != "astype"), key=lambda p: p.name),
    ids=lambda p: p.name,
)
def test_a_host_kernel_gives_the_xla_programs_bits(prim):
    """Every XLA_HOST_KERNELS function but astype's (tested above) against its XLA program on
    the special values of every dtype it takes, subnormals and Python scalars included."""
    import jax

    from x10array._core.xla_numerics import xla_flushes

    host_kernel = _eager._HOST_KERNELS[prim]
    compared = 0
    for dtype in _HOST_DTYPES:
        for operands, params in _host_kernel_cases(prim, dtype):
            try:  # the public function, on the NumPy device: does it take this dtype?
                getattr(xp, prim.name)(
                    *(xp.asarray(o[:1], device=NUMPY_CPU) if isinstance(o, np.ndarray) else o for o in operands)
                )
            except TypeError:
                continue
            with np.errstate(all="ignore"):  # (as the executor runs it: XLA warns of nothing)
                got = host_kernel(xla_flushes(), *operands, **params)
            with jax.enable_x64(True):
                want = np.asarray(_op_programs.make_jitted(prim, params)(*operands))
            if got is None:  # declined: the XLA program runs (a subnormal Python scalar)
                assert any(type(o) in (float, complex) and o != 0 for o in operands)
                continue
            got = np.asarray(got)
            assert got.dtype == want.dtype and got.shape == want.shape, (dtype, operands)
            assert got.tobytes() == want.tobytes(), (prim.name, dtype, operands, got, want)
            compared += 1
    assert compared >= (2 if prim.kernel.__code__.co_argcount >= 3 else 1)  # (a binary one: with a scalar)


def test_an_eager_xla_op_leaves_the_threads_jax_settings_and_gives_its_scope_back(xla_kernels):
    """The eager executor enters jax's x64 and default-device contexts made once per device
    (devices.jax_scope): after an operation, inside a user's own jax context or not, the
    thread's settings are what they were, and the scope is back on its device's free list."""
    import jax

    from x10array._core import devices as _devices

    host = np.arange(4.0)
    col, row = xp.asarray(host[:, None]), xp.asarray(host)  # (broadcast: the exact program, not a bucket's)
    before = (jax.config.jax_enable_x64, jax.config.jax_default_device)
    np.testing.assert_array_equal(np.asarray(col * row), host[:, None] * host)
    free = _devices._SCOPES[row.device]
    held = len(free)
    with jax.default_device(jax.devices("cpu")[0]):  # a user's own context around ours
        np.testing.assert_array_equal(np.asarray(col + row), host[:, None] + host)
        assert jax.config.jax_default_device is not None
    assert (jax.config.jax_enable_x64, jax.config.jax_default_device) == before
    assert len(free) == held >= 1
