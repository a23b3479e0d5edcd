"""The interpreter's two ways of treating subnormals give the same bits (issue 26): elementwise
arithmetic run under the CPU's own flush-to-zero mode (_core.xla_numerics.cpu_flush_mode,
where glibc can set it and the probe sees it act) and the software way (operands flushed,
kernel, result scanned and flushed). Expectations are the software path's results on the
running machine, never bits recorded on one CPU."""

from __future__ import annotations

import math

import _numerics
import numpy as np
import pytest

import x10array as xp
from x10array._backends import lazy as _lazy
from x10array._backends.lazy import interpreter
from x10array._core import xla_numerics

LAZY = xp.Device("cpu", 0, "xla")
DTYPES = ("float32", "float64", "complex64", "complex128")
MODE = xla_numerics.cpu_flush_mode()
needs_mode = pytest.mark.skipif(MODE is None, reason="no CPU flush-to-zero mode here: the scan is the only path")


def _near_subnormal(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Subnormals of both signs, signed zeros and normals near tiny, in random order."""
    real = np.dtype(dt).type(0).real.dtype
    fi = np.finfo(real)
    lo, hi = math.log10(float(fi.smallest_subnormal)), math.log10(float(fi.tiny) * 64)
    mags = 10.0 ** rng.uniform(lo, hi, n)
    vals = (np.sign(rng.standard_normal(n)) * mags).astype(real)
    vals[::7] = 0.0
    vals[3::7] = -0.0
    if np.dtype(dt).kind == "c":
        z = vals.astype(dt)
        z.imag = rng.permutation(vals)
        return z
    return vals


def _operands(name: str, dtype: str, rng: np.random.Generator) -> list[np.ndarray]:
    host = _numerics.inputs(name, dtype, n_random=64)
    extra = [_near_subnormal(np.dtype(dtype), 256, rng) for _ in host]
    return [np.concatenate([h, e]) for h, e in zip(host, extra)]


def _cases(dtype: str) -> list[tuple[str, list[np.ndarray]]]:
    rng = np.random.default_rng(26)
    return [(n, _operands(n, dtype, rng)) for n in _numerics.FUNCTIONS if _numerics.accepts(n, dtype)]


REDUCTIONS = {
    "sum": lambda x: xp.sum(x),
    "prod": lambda x: xp.prod(x[:8]),
    "mean": lambda x: xp.mean(x),
    "cumulative_sum": lambda x: xp.cumulative_sum(x),
    "max": lambda x: xp.max(xp.real(x)),
    "min": lambda x: xp.min(xp.real(x)),
    "var": lambda x: xp.var(xp.real(x)),
}

# how an operand reaches the function: a leaf, a slice of one (data movement), an arithmetic result
WAYS = {
    "leaf": lambda x: x,
    "slice": lambda x: x[::1],
    "intermediate": lambda x: x * 1,
}


def _run(cases, way, scalars) -> list[np.ndarray]:
    with _lazy.compile_threshold(None):  # every graph interpreted
        outs = []
        for name, host in cases:
            outs.append(_numerics.call(name, [WAYS[way](xp.asarray(h, device=LAZY)) for h in host]))
        x = xp.asarray(cases[0][1][0], device=LAZY)
        outs += [fn(WAYS[way](x)) for fn in REDUCTIONS.values()]
        outs += [fn(WAYS[way](x)) for fn in scalars]
        xp.lazy_barrier()
        return [np.asarray(o) for o in outs]


SCALARS = [
    lambda x: x + 0.5, lambda x: x * 2.0, lambda x: x * 0.25, lambda x: x / 3.0, lambda x: 1.0 - x,
    lambda x: x + 1e-310, lambda x: x * 1e-40, lambda x: x - 1e-39, lambda x: x ** 2, lambda x: x * 1e-300,
]  # fmt: skip


@needs_mode
@pytest.mark.parametrize("way", sorted(WAYS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_cpu_mode_gives_the_bits_of_the_scan(dtype, way, monkeypatch):
    """Every elementwise function, the reductions and steps with Python scalars (subnormal in
    float32 or float64 among them), on subnormal-laden operands: the same bits under the CPU
    mode as with it switched off (NaN payloads aside)."""
    cases = _cases(dtype)
    hardware = _run(cases, way, SCALARS)
    monkeypatch.setattr(interpreter, "cpu_flush_mode", lambda: None)
    software = _run(cases, way, SCALARS)
    names = [n for n, _ in cases] + list(REDUCTIONS) + [f"scalar step {i}" for i in range(len(SCALARS))]
    differ = [n for n, a, b in zip(names, hardware, software) if not same_up_to_the_band(a, b)]
    assert differ == [], f"{dtype} ({way}): the CPU mode and the scan differ in {differ}"


def same_up_to_the_band(under: np.ndarray, scanned: np.ndarray) -> bool:
    """The same values, but where the scan gives +-tiny and the mode a zero of the same sign:
    a result whose exact value lies below tiny and rounds up to it, which the CPU flushes as
    XLA's compiled code does (tininess is detected before rounding) and the scan keeps
    (test_a_result_that_rounds_up_to_tiny_is_flushed_as_the_compiled_tier_flushes)."""
    if xla_numerics.same_values(under, scanned):
        return True
    if under.dtype != scanned.dtype or under.shape != scanned.shape or under.dtype.kind not in "fc":
        return False
    pairs = [(under.real, scanned.real), (under.imag, scanned.imag)] if under.dtype.kind == "c" else [(under, scanned)]
    for a, b in pairs:
        tiny = np.finfo(a.dtype).tiny
        band = (np.abs(b) == tiny) & (a == 0) & (np.signbit(a) == np.signbit(b))
        if not xla_numerics.same_values(np.where(band, 0, a), np.where(band, 0, b)):
            return False
    return True


@needs_mode
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_a_result_that_rounds_up_to_tiny_is_flushed_as_the_compiled_tier_flushes(dtype, monkeypatch):
    """Products whose exact value is just below tiny and rounds up to it: the interpreter under
    the CPU mode gives what the compiled tier gives (both flush them where the CPU does); the
    scan alone keeps tiny there, so it differed from the compiled tier."""
    t = np.dtype(dtype).type
    tiny = np.finfo(t).tiny
    a = np.linspace(0.5, 1.0, 4001, endpoint=False).astype(t)
    b = np.maximum((tiny / a.astype(np.float64)).astype(t), tiny)
    x, y = xp.asarray(a, device=LAZY), xp.asarray(b, device=LAZY)
    out = {}
    for tier in (None, 1):
        with _lazy.compile_threshold(tier):
            out[tier] = np.asarray(x * y + 0.0)
    assert xla_numerics.same_values(out[None], out[1])
    monkeypatch.setattr(interpreter, "cpu_flush_mode", lambda: None)
    with _lazy.compile_threshold(None):
        scanned = np.asarray(x * y + 0.0)
    assert same_up_to_the_band(out[None], scanned)


@needs_mode
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_one_operation_read_at_once_runs_under_the_mode_as_a_graph_step_does(dtype, monkeypatch):
    """One operation on computed operands, read at once (`numpy.asarray(x * y)`: run without a
    graph, interpreter.run_single), runs under the CPU mode where a graph's step would: its
    result is not scanned (the scan of 10^6 float64 cost three times the addition), and in the
    band of products that round up to tiny it gives the compiled tier's bits, where the scan
    kept tiny (as it still does with the mode switched off)."""
    t = np.dtype(dtype).type
    tiny = np.finfo(t).tiny
    a = np.linspace(0.5, 1.0, 4001, endpoint=False).astype(t)
    b = np.maximum((tiny / a.astype(np.float64)).astype(t), tiny)
    x, y = xp.asarray(a, device=LAZY), xp.asarray(b, device=LAZY)
    with _lazy.compile_threshold(1):
        compiled = np.asarray(x * y)
    scanned = []  # (shape, writable) of each array scanned: operands are read-only node values,
    real = interpreter.flush_subnormals  # a result is the kernel's fresh buffer
    monkeypatch.setattr(
        interpreter, "flush_subnormals", lambda v: scanned.append((v.shape, v.flags.writeable)) or real(v)
    )
    with _lazy.compile_threshold(None):
        single = np.asarray(x * y)
        assert (a.shape, True) not in scanned
        assert xla_numerics.same_values(single, compiled)
        monkeypatch.setattr(interpreter, "cpu_flush_mode", lambda: None)
        kept = np.asarray(x * y)
    assert (kept == tiny).any() and not xla_numerics.same_values(kept, compiled)
    assert same_up_to_the_band(compiled, kept)


@needs_mode
def test_the_mode_is_used_and_the_probe_refuses_a_kernel_that_makes_subnormals():
    """add and multiply run under the mode; nextafter makes a subnormal from normal operands
    with integer steps (the mode does not flush it): it keeps its scan; and the probe refuses
    a kernel whose result the mode leaves subnormal."""
    x = xp.asarray(np.array([0.0, 1.0, -1.0, 2.0**-1022]), device=LAZY)
    with _lazy.compile_threshold(None):
        out = [xp.add(x, x), xp.multiply(x, x), xp.nextafter(x * 1, xp.zeros_like(x) + 1)]
        xp.lazy_barrier()
    seen = {key[0].name: v for key, v in interpreter._CPU_FLUSHES.items()}
    assert seen.get("add", 0) >= 1 and seen.get("multiply", 0) >= 1
    assert "nextafter" not in seen  # (not in xla_numerics.CPU_MODE_KERNELS: scanned, never probed)
    # flush(nextafter(0, 1)) is 0 on the lazy tiers, as XLA's arithmetic stores it
    assert np.asarray(out[2])[0] == 0.0
    # a bit operation (abs, negative) on a subnormal leaf: the mode does not read it as zero,
    # so the probe has its operand flushed (level 1) or the scan runs: 0 either way
    sub = xp.asarray(np.array([5e-324, -5e-324, 1.0]), device=LAZY)
    with _lazy.compile_threshold(None):
        got = [np.asarray(xp.abs(sub)), np.asarray(-sub)]
    assert [list(g.view(np.uint64)[:2]) for g in got] == [[0, 0], [1 << 63, 0]]
    nextafter = xp.nextafter.primitive
    probe = interpreter._probe_cpu_flushes
    args = [np.zeros(4), np.ones(4)]
    cpu = interpreter.NumpySteps(True, [], {}, set(), ()).cpu
    assert probe(nextafter, {}, args, (args[0].dtype, args[1].dtype), cpu) == 0


@needs_mode
def test_the_probe_sees_the_mode_act_and_end():
    """2.2250738585072014e-308 * 0.5 is 0.0 under the mode, the subnormal outside it."""
    tiny = np.array([2.2250738585072014e-308])
    plain, flushing = MODE.envs()
    try:
        MODE.set(flushing)
        under = np.multiply(tiny, 0.5)
    finally:
        MODE.set(plain)
    assert under.view(np.uint64)[0] == 0
    assert np.multiply(tiny, 0.5)[0] == 2.2250738585072014e-308 / 2 != 0.0


def test_a_mode_that_does_not_act_is_not_used(monkeypatch):
    """The fallback: a mode whose setting changes nothing fails the probe (the scan stays);
    X10ARRAY_CPU_FLUSH=0 switches the mode off."""

    class Inert(xla_numerics.CpuFlushMode):
        def __init__(self) -> None:
            pass

        def envs(self):
            return None, None

    inert = Inert()
    inert.set = lambda env: 0
    assert not xla_numerics._mode_acts(inert)
    from x10array._core import settings

    with settings.override(X10ARRAY_CPU_FLUSH=False):
        assert xla_numerics.cpu_flush_mode.__wrapped__() is None


def test_the_cpu_mode_kernels_are_elementwise_primitives_of_the_op_table():
    """CPU_MODE_KERNELS names primitives (a policy list by name, as KEEPS_CLEAN is): each one
    must be in the op table and elementwise, or the interpreter never matches it (a typo or a
    renamed primitive would silently keep the scan)."""
    from x10array._core.primitive import OP_TABLE

    assert xla_numerics.CPU_MODE_KERNELS <= set(OP_TABLE), xla_numerics.CPU_MODE_KERNELS - set(OP_TABLE)
    assert all(OP_TABLE[n].elementwise for n in xla_numerics.CPU_MODE_KERNELS)


@needs_mode
def test_a_graph_run_again_keeps_its_steps_facts_but_checks_its_scalars_each_run(monkeypatch):
    """A program's interpreted runs share what its steps decide from the key (interpreter.Schedule:
    the CPU mode's level is probed at the first run, not looked up again), but a Python scalar
    subnormal in float32 is checked at every run: such a run takes the scan (the mode would
    read the scalar as 0), whatever an earlier run of the same graph with a normal one did."""
    levels = []
    real = interpreter._cpu_level
    monkeypatch.setattr(interpreter, "_cpu_level", lambda *a: levels.append(a[0].name) or real(*a))
    x = xp.asarray(np.array([1e10, 3.0, -2e12], dtype=np.float32), device=LAZY)

    def run(s):
        return np.asarray((x * s) * 2.0)  # (two operations: a graph, not run_single)

    with _lazy.compile_threshold(None):
        subnormal = run(1e-40)  # (the first run: the scan, nothing kept for the multiply by it)
        assert subnormal[0] != 0.0  # (1e10 times float32's 1e-40, a normal product)
        normal = run(0.5)
        probed = len(levels)
        for _ in range(3):
            assert np.array_equal(run(0.5), normal)
        assert len(levels) == probed  # (the steps' facts are the program's, kept)
        again = run(1e-40)
    assert again.tobytes() == subnormal.tobytes()


def test_an_integer_operation_read_at_once_takes_neither_the_mode_nor_the_scan(monkeypatch):
    """One operation on integer or boolean operands with an integer or boolean result (k-means'
    `labels == j`, read by the selection `X[labels == j]`), run without a graph
    (interpreter.run_single), needs no flush: only floating-point values have subnormals. It
    probes no mode and scans nothing, and gives what the compiled tier gives; an integer
    operation whose result is floating (a true division) still takes the numerics of
    arithmetic."""
    labels = np.random.default_rng(26).integers(-3, 5, 1000)
    x = xp.asarray(labels, device=LAZY)
    m = xp.asarray(labels > -2, device=LAZY)
    cases = {
        "equal": lambda: x == 2,
        "logical_and": lambda: xp.logical_and(m, True),
        "where, int scalar": lambda: xp.where(m, x, 0),
        "add": lambda: x + 7,
        "bitwise_and": lambda: x & 6,
        "floor_divide": lambda: x // 3,
        "negative": lambda: -x,
    }
    with _lazy.compile_threshold(1):
        compiled = {name: np.asarray(make()) for name, make in cases.items()}
    flushed, probed = [], []
    real_flush, real_level = interpreter.flush_subnormals, interpreter._mode_level
    monkeypatch.setattr(interpreter, "flush_subnormals", lambda v: flushed.append(v) or real_flush(v))
    monkeypatch.setattr(interpreter, "_mode_level", lambda *a: probed.append(a[0].name) or real_level(*a))
    with _lazy.compile_threshold(None):
        for name, make in cases.items():
            got = np.asarray(make())
            assert got.dtype == compiled[name].dtype and np.array_equal(got, compiled[name]), name
        assert flushed == [] and probed == []
        assert np.array_equal(np.asarray(x / 2), labels / 2)
    assert flushed or probed  # (the division's float64 result: arithmetic as before)
