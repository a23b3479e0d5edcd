"""XLA's numerics on the CPU, in one place: what both lazy tiers and the eager XLA executor's
host kernels reproduce of it.

- `xla_flushes()`: whether XLA flushes subnormals on this machine's CPU (probed once);
- `flush_subnormals`: subnormal floats to signed zeros, as XLA's arithmetic reads and stores
  them (`has_subnormal`, the scan it runs first, tuned for large arrays);
- `xla_lets_subnormals_through`: which elementwise lowerings let a subnormal through on this
  CPU anyway (probed per primitive, parameters and operand dtypes), which the compiled lazy
  tier then flushes itself;
- `KEEPS_CLEAN`: the primitives whose results need no scan (a policy table of the lazy
  interpreter, by primitive name);
- `cpu_flush_mode`: the CPU's own flush-to-zero mode, where glibc can set it, and
  `CPU_MODE_KERNELS`, the kernels the lazy interpreter may run under it instead of a scan.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any

import numpy as np

from . import compile_cache, xla_options


@functools.cache  # no arguments: one entry
def xla_flushes() -> bool:
    """Whether XLA flushes subnormals on this machine's CPU (jax sets flush-to-zero and
    denormals-are-zero for its work): probed once, by a compiled multiplication. The one probe
    of it: the lazy interpreter, the compiled tier and the eager XLA host kernels read it."""
    import jax

    def flush_probe(a: Any, b: Any) -> Any:  # (its disk cache entry: jit_flush_probe-*, see _probe)
        return a * b

    with jax.enable_x64(True), compile_cache.scope():
        tiny = np.finfo(np.float32).tiny
        product = jax.jit(flush_probe, compiler_options=xla_options.compiler_options("cpu"))
        return float(product(np.float32(tiny), np.float32(0.25))) == 0.0


# -- which lowerings let a subnormal through, on this machine -----------------------------------
#
# XLA's CPU arithmetic flushes subnormals (xla_flushes), but not every lowering is arithmetic
# all the way: a select, a bit operation, an integer routine (fmod is one on some CPUs, its
# vectorized form on others) passes an operand's bits on or makes a subnormal without a
# floating-point instruction. Which ones do depends on the CPU (its instruction set, the code
# XLA generates for it), so it is measured here, per primitive, parameters and operand dtypes,
# on the machine that runs the program: `xla_lets_subnormals_through` runs the compiled
# lowering on special values (subnormals, zeros, tiny, infinities, NaN, ...) once as they are
# and once with the operands flushed, and compares the first with the second flushed. Where
# they differ, the compiled lazy tier flushes that operation's operands and result itself
# (_backends/lazy/program.XlaSteps, as for `passes_bits` primitives), so it gives what
# the interpreter gives, flush(kernel(flush(operands))), on every CPU.


def _real_specials(dtype: np.dtype) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = info.tiny
    smallest = np.nextafter(dtype.type(0), dtype.type(1))
    magnitudes = [
        0.0, smallest, tiny - smallest, tiny / 3, tiny, tiny * 1.5, tiny * 4, 0.5, 1.0, 1.5, 2.0, 3.0,
        100.0, 1e300 if dtype.itemsize == 8 else 1e30, info.max, np.inf,
    ]  # fmt: skip
    with np.errstate(all="ignore"):
        values = np.array(magnitudes, dtype)
        return np.concatenate([values, -values, np.array([np.nan], dtype)])


def _specials(dtype: np.dtype, few: bool) -> np.ndarray:
    """Probe values of one operand dtype (`few`: a shorter list, for a third operand)."""
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array(sorted({0, 1, 2, 3, info.max, info.min, 0 if dtype.kind == "u" else -1}), dtype)
    if dtype.kind == "c":
        real = _real_specials(np.zeros((), dtype).real.dtype)
        parts = real[[0, 1, 3, 4, 8, 15, 16, 17, 32]]
        re, im = np.meshgrid(real if not few else parts, parts)
        z = np.empty(re.size, dtype)
        z.real, z.imag = re.ravel(), im.ravel()
        return z
    real = _real_specials(dtype)
    return real[[0, 1, 3, 4, 8, 15, 16, 17, 32]] if few else real


def _probe_operands(dtypes: tuple[np.dtype, ...], near_underflow: bool = False) -> list[np.ndarray]:
    """Every combination of the operands' special values, as 1-D arrays of one length (with
    `near_underflow`: also, for the first two real floating-point operands, magnitudes where
    a function's or a product's result is near or below the subnormal range: exp(-745),
    1e-160 squared, ...)."""
    values = []
    for i, d in enumerate(dtypes):
        v = _specials(d, i >= 2)
        if near_underflow and i < 2 and d.kind == "f":
            with np.errstate(all="ignore"):
                tiny = float(np.finfo(d).tiny)
                extra = np.array(_NEAR_UNDERFLOW + tuple(tiny * m for m in _NEAR_TINY), np.float64).astype(d)
            v = np.concatenate([v, extra, -extra])
        values.append(v)
    grids = np.meshgrid(*values, indexing="ij")
    return [np.ascontiguousarray(g.ravel()) for g in grids]


probe_operands = _probe_operands

_NEAR_UNDERFLOW = (
    1e-20, 1e-23, 1e-30, 1e-154, 1e-160, 1e-200, 1e-300, 1e-307, 0.75, 1.25, 1e10, 87.0, 88.0, 103.0, 104.0,
    700.0, 708.0, 709.0, 710.0, 740.0, 745.0, 746.0, 1e20, 1e154, 1e160,
)  # fmt: skip
_NEAR_TINY = (1.0001, 1.3, 1.7, 2.2, 2.5, 3.1, 5.3, 7.9, 15.5, 31.0, 1000.0)  # (multiples of tiny)


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, any NaN matching any NaN (its sign and payload are not promised)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        parts = (a.real, b.real, a.imag, b.imag) if a.dtype.kind == "c" else (a, b)
        for x, y in zip(parts[::2], parts[1::2]):
            nan = np.isnan(x)
            if not np.array_equal(nan, np.isnan(y)):
                return False
            uint = _UINT[x.dtype.itemsize]
            if not np.array_equal(np.where(nan, 0, x).view(uint), np.where(nan, 0, y).view(uint)):
                return False
        return True
    return bool(np.array_equal(a, b))


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}

# (the program kind of xla_options, (primitive, parameters as a hashable tuple, operand
# dtypes)) -> whether its compiled lowering lets a subnormal through (see above); bounded: the
# entries are the distinct elementwise operations compiled graphs hold, a few per primitive
_THROUGH: dict[tuple[Any, ...], bool] = {}
_THROUGH_BOUND = 8192


def xla_lets_subnormals_through(
    entries: list[tuple[Any, tuple[Any, ...], tuple[np.dtype, ...]]], kind: Any = None
) -> list[bool]:
    """For each (elementwise primitive, its parameters as sorted items, its operands' dtypes):
    whether its compiled lowering on this CPU, in a program of `kind` (compiled with
    xla_options.compiler_options("cpu", kind), as the program is), gives something else than
    the lowering on flushed operands, flushed (see above). Probed once per entry and kind and
    cached; the entries not seen yet are probed together, in one compiled program."""
    missing = [e for e in dict.fromkeys(entries) if (kind, e) not in _THROUGH]
    if missing:
        try:
            _probe(missing, kind)
        except Exception:  # noqa: BLE001 - a lowering that refuses the probe's operands
            for e in missing:  # one by one; one that still fails is flushed by the graph itself
                try:
                    _probe([e], kind)
                except Exception:  # noqa: BLE001 - (flushing is always right, only slower)
                    _THROUGH[(kind, e)] = True
    return [_THROUGH.get((kind, e), True) for e in entries]


def _probe(entries: list[tuple[Any, tuple[Any, ...], tuple[np.dtype, ...]]], kind: Any = None) -> None:
    import jax

    from .kernels import jax_namespace  # (kernels reads flush_subnormals of this module)

    k = jax_namespace()
    raw: list[list[np.ndarray]] = []
    flushed: list[list[np.ndarray]] = []
    for _, _, dtypes in entries:
        ops = _probe_operands(dtypes)
        raw.append(ops)
        flushed.append([flush_subnormals(o) for o in ops])

    def subnormal_probe(operands: list[list[Any]]) -> list[Any]:  # (its disk cache entries: jit_subnormal_probe-*)
        outs = []
        for (prim, items, _), ops in zip(entries, operands):
            out = prim.lowering(k, *ops, **dict(items))
            outs.append(out if not prim.multiple_results else tuple(out))
        return outs

    # (compiled through the persistent cache, as the graphs it serves: a later process loads
    # the probe's program instead of compiling it, and still runs it on this CPU)
    with jax.enable_x64(True), np.errstate(all="ignore"), compile_cache.scope():
        options = xla_options.compiler_options("cpu", kind)
        program = jax.jit(subnormal_probe, compiler_options=options)  # (one program, run twice)
        got_raw, got_flushed = program(raw), program(flushed)
        if len(_THROUGH) + len(entries) > _THROUGH_BOUND:
            _THROUGH.clear()
        for e, r, f in zip(entries, got_raw, got_flushed):
            pairs = zip(r, f) if isinstance(r, tuple) else [(r, f)]
            _THROUGH[(kind, e)] = not all(same_values(np.asarray(a), flush_subnormals(np.asarray(b))) for a, b in pairs)


def flush_subnormals(value: Any) -> Any:
    """Subnormal floats to (signed) zero, as XLA's CPU arithmetic does (flush-to-zero and
    denormals-are-zero): `value` itself when it holds none (or is not a float array). The lazy
    interpreter applies it to the operands and results of every arithmetic step, and a
    compiled graph does the same (see _backends/lazy/program.XlaSteps), so both tiers treat
    subnormals alike (docs/eager-and-lazy.md, "What the tiers guarantee"); the eager XLA
    executor's host kernels (policies.XLA_HOST_KERNELS) read their operands through it.
    (Run on every arithmetic result: the common case, a real float array with no subnormal,
    costs one dtype lookup and the scan.)"""
    if type(value) is not np.ndarray:
        if not isinstance(value, np.generic):
            return value
        value = np.asarray(value)
    tiny = _TINY.get(value.dtype)
    if tiny is None or value.size == 0:  # (not a floating-point array)
        return value
    if value.dtype.kind != "c":
        if not has_subnormal(value, tiny):
            return value
        value = value.copy()
        parts: tuple[np.ndarray, ...] = (value,)
    else:
        if not (has_subnormal(value.real, tiny) or has_subnormal(value.imag, tiny)):
            return value
        value = value.copy()
        parts = (value.real, value.imag)
    for p in parts:
        found = _TINY_BITS.get(p.dtype)
        if found is None:  # (a long double: no unsigned integer of its size)
            p[(np.abs(p) < tiny) & (p != 0)] = 0.0 * np.sign(p[(np.abs(p) < tiny) & (p != 0)])
            continue
        # on the bits, so that it flushes under the CPU's denormals-are-zero mode too (a kernel's
        # `k.rounded` in the interpreter, see cpu_flush_mode): the magnitude zeroed, the sign kept
        uint, sign = found[0], _SIGN_BIT[p.dtype]
        bits = p.view(uint)
        magnitude = bits & ~sign
        bits[(magnitude != 0) & (magnitude < found[2] + uint(1))] &= sign
    return value


# the smallest normal magnitude of each floating-point dtype (complex: of its parts)
_TINY: dict[np.dtype, Any] = {
    np.dtype(t): np.finfo(t).tiny for t in (np.float16, np.float32, np.float64, np.complex64, np.complex128)
}
if hasattr(np, "longdouble"):
    _TINY[np.dtype(np.longdouble)] = np.finfo(np.longdouble).tiny
    _TINY[np.dtype(np.clongdouble)] = np.finfo(np.clongdouble).tiny


def has_subnormal(part: np.ndarray, tiny: Any) -> bool:
    """Whether a real array holds a subnormal.

    Two ways, the same answer (tests/test_lazy.py::test_has_subnormal checks both):
    - `_bits_hold_subnormal`: one elementwise pass (the bits minus 1, into a scratch buffer)
      and two reductions, whatever the values: the way for an array holding zeros, the common
      case of a mostly-zero field, where the magnitude test below cannot decide;
    - `_magnitudes_hold_subnormal`: two passes (abs, min) where no magnitude is below `tiny`,
      then the closer look of the bits.
    Which one runs is a guess from the first element (a zero: the bits), never a change of the
    answer. A large contiguous array is scanned in pieces through one small buffer that stays
    in the cache, rather than through a temporary of its size."""
    n = part.size
    found = _TINY_BITS.get(part.dtype)
    if n <= _SMALL and found is not None:  # (a few values: compared in Python, no NumPy pass)
        return _small_holds_subnormal(part, float(tiny))
    if part.ndim == 0 or found is None:
        return _magnitudes_hold_subnormal(part, tiny)
    if n > _SCAN_CHUNK * 4 and part.flags.c_contiguous:
        flat = part.reshape(-1)
        scratch = _scratch(found[0])
        for start in range(0, n, _SCAN_CHUNK):
            piece = flat[start : start + _SCAN_CHUNK]
            if _bits_hold_subnormal(piece, found, scratch[: piece.size]):
                return True
        return False
    if n > _SCAN_CHUNK:
        return _bits_hold_subnormal(part, found, None) if part.flat[0] == 0 else _magnitudes_hold_subnormal(part, tiny)
    if part.flat[0] == 0:
        return _bits_hold_subnormal(part, found, _scratch(found[0])[:n].reshape(part.shape))
    return _magnitudes_hold_subnormal(part, tiny, _scratch(part.dtype)[:n].reshape(part.shape))


_SCAN_CHUNK = 1 << 15  # elements per piece of a large scan (256 KiB of float64)
_SMALL = 64  # at most this many elements: scanned as Python floats (a 0-d sum, a mean of 4 columns)
_SCRATCH = threading.local()


def _scratch(dtype: Any) -> np.ndarray:
    """This thread's scan buffer (_SCAN_CHUNK 8-byte elements, made once), as `dtype`: a scan's
    temporaries go there rather than into a new buffer per scan, which past the C library's
    mmap threshold (128 KiB at first) is fresh pages, each a page fault (k-means' (5000, 5)
    distances: ~35 us a scan with its faults, ~8 without). No scan calls another while it
    holds the buffer."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None:
        buf = _SCRATCH.buf = np.empty(_SCAN_CHUNK, np.uint64)
    return buf.view(dtype)


def _small_holds_subnormal(part: np.ndarray, tiny: float) -> bool:
    """has_subnormal of a small float16/32/64 array: its values as Python floats (exact: a
    float64 holds each of them), compared with `tiny` one by one (a NaN compares false). Each
    NumPy pass of the other ways costs a call's overhead, which dominates a few values."""
    for v in part.ravel().tolist():
        if 0.0 < abs(v) < tiny:
            return True
    return False


def _bits_hold_subnormal(part: np.ndarray, found: tuple[Any, Any, Any, Any], out: np.ndarray | None) -> bool:
    """Whether a real array holds a subnormal, from its bits `u` minus 1 (unsigned, so zero
    wraps around to the largest value), into `out` (or a new buffer): as unsigned integers the
    positive subnormals, and only they, fall below bits(tiny) - 1 (a negative number's sign
    bit puts it above); as signed integers of the same bits the negative subnormals, and only
    they, fall below INT_MIN + bits(tiny) - 1 (-0 wraps around to INT_MAX, positive numbers
    are at least -1). No absolute value, no temporary of floats."""
    uint, sint, below_u, below_s = found
    d = np.subtract(part.view(uint), uint(1), out=out)
    return bool(d.min() < below_u or d.view(sint).min() < below_s)


def _magnitudes_hold_subnormal(part: np.ndarray, tiny: Any, out: np.ndarray | None = None) -> bool:
    magnitude = np.abs(part, out=out)
    if magnitude.min() >= tiny:
        return False
    if type(magnitude) is not np.ndarray:  # (a 0-d operand's abs is a NumPy scalar)
        return bool(0 < magnitude < tiny)
    return _below_tiny(magnitude)


def _below_tiny(magnitude: np.ndarray) -> bool:
    """Whether an array of magnitudes (non-negative, NaN allowed; a temporary: it is
    overwritten) holds a subnormal, in two passes: as unsigned integers the subnormals are
    exactly 1 .. bits(tiny) - 1, so subtracting 1 (zero wraps around to the largest value)
    puts them, and only them, below bits(tiny) - 1."""
    found = _TINY_BITS.get(magnitude.dtype)
    if found is None:  # (no unsigned integer of its size: a long double)
        return bool(magnitude[magnitude < _TINY[magnitude.dtype]].any())
    uint, _, limit, _ = found
    bits = magnitude.view(uint)
    np.subtract(bits, uint(1), out=bits)
    return bool(bits.min() < limit)


# per real floating-point dtype: the unsigned and signed integers of its size, bits(tiny) - 1
# and INT_MIN + bits(tiny) - 1 (see _bits_hold_subnormal)
_TINY_BITS: dict[np.dtype, tuple[Any, Any, Any, Any]] = {}
_SIGN_BIT: dict[np.dtype, Any] = {}
for _t in (np.float16, np.float32, np.float64):
    _size = np.dtype(_t).itemsize
    _uint, _sint = {2: (np.uint16, np.int16), 4: (np.uint32, np.int32), 8: (np.uint64, np.int64)}[_size]
    _tiny_bits = int(np.array(np.finfo(_t).tiny, _t).view(_uint)[()])
    _int_min = -(1 << (8 * _size - 1))
    _TINY_BITS[np.dtype(_t)] = (_uint, _sint, _uint(_tiny_bits - 1), _sint(_int_min + _tiny_bits - 1))
    _SIGN_BIT[np.dtype(_t)] = _uint(1 << (8 * _size - 1))


# Primitives whose real floating-point result cannot hold a subnormal when their operands
# (all arrays, flushed) hold none: a selection or a sign change of an operand's values, an
# integral value, or a function whose magnitude at a normal argument is 0 or normal (sqrt,
# the logarithms: |log(x)| >= ~1e-16 unless 0; log1p(x) ~ x for small x). The lazy
# interpreter skips the subnormal scan of their results (not with a Python scalar operand: the scalars
# of a step are not flushed, see _backends/lazy/interpreter.NumpySteps).
KEEPS_CLEAN = frozenset(
    {
        "abs", "negative", "positive", "sign", "floor", "ceil", "trunc", "round", "maximum", "minimum",
        "max", "min", "clip", "copysign", "real", "imag", "sqrt", "log", "log1p", "log2",
        "log10",
    }
)  # fmt: skip


# -- the CPU's own flush-to-zero mode, for the lazy interpreter ---------------------------------
#
# XLA's CPU client runs its programs with the CPU's flush-to-zero and denormals-are-zero modes
# on (tsl::port::ScopedFlushDenormal); the interpreter can run a NumPy kernel the same way
# instead of scanning its result (`has_subnormal`, as costly as the kernel itself). Set from
# Python through glibc's fegetenv/fesetenv (ctypes, no compiler): on x86-64 `fenv_t` is 32
# bytes with MXCSR at offset 28 (FTZ: bit 15, DAZ: bit 6); on aarch64 it is {fpcr, fpsr} and
# FPCR's FZ (bit 24) flushes operands and results. Elsewhere (macOS, Windows, musl, another
# layout), or where the probe below does not see the mode act, there is no such mode (None)
# and the interpreter scans, as before. The mode is per thread: it is set around one kernel
# call and restored right after it (interpreter.NumpySteps), never left on between steps.


class CpuFlushMode:
    """The CPU's flush-to-zero + denormals-are-zero mode of this thread: `envs()` gives the
    thread's current floating-point environment and the same with the mode on (two ctypes
    buffers), `set(env)` installs one (one fesetenv call, ~0.3 us)."""

    __slots__ = ("set", "_get", "_offset", "_bits", "_pairs")

    def __init__(self, libm: Any, offset: int, bits: int):
        self.set = libm.fesetenv
        self._get = libm.fegetenv
        self._offset = offset
        self._bits = bits
        # environment bytes -> (that environment, the same with the mode on): an interpreted
        # graph asks at each run, and a thread sees a few environments (its exception flags
        # vary), so the pair is made once per environment; the buffers are only read after
        # (fesetenv), by any thread
        self._pairs: dict[bytes, tuple[Any, Any]] = {}

    def envs(self) -> tuple[Any, Any]:
        plain = _FENV()
        if self._get(plain) != 0:
            raise OSError("fegetenv failed")
        raw = plain.raw
        pair = self._pairs.get(raw)
        if pair is None:
            flushing = bytearray(raw)
            o = self._offset
            word = int.from_bytes(flushing[o : o + 4], "little") | self._bits
            flushing[o : o + 4] = word.to_bytes(4, "little")
            if len(self._pairs) >= _FENV_PAIRS:
                self._pairs.clear()
            pair = self._pairs[raw] = (plain, ctypes.create_string_buffer(bytes(flushing), _FENV_SIZE))
        return pair


_FENV_SIZE = 64  # (larger than fenv_t on both layouts: fegetenv writes only its own part)
_FENV = ctypes.c_char * _FENV_SIZE  # (a buffer for fegetenv)
_FENV_PAIRS = 64  # environments whose pair CpuFlushMode keeps (then it starts again)


@functools.cache  # no arguments: one entry
def cpu_flush_mode() -> CpuFlushMode | None:
    """The CPU's flush-to-zero mode where it can be set and is seen to act (probed once), or
    None (`X10ARRAY_CPU_FLUSH=0` also gives None: the interpreter then scans every result)."""
    import platform
    import sys

    from . import settings

    if not settings.get("X10ARRAY_CPU_FLUSH"):
        return None
    machine = platform.machine().lower()
    layout = {"x86_64": (28, 0x8040), "amd64": (28, 0x8040), "aarch64": (0, 1 << 24), "arm64": (0, 1 << 24)}
    if not sys.platform.startswith("linux") or machine not in layout or platform.libc_ver()[0] != "glibc":
        return None
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("m")
        if name is None:
            return None
        libm = ctypes.CDLL(name)
        mode = CpuFlushMode(libm, *layout[machine])
        return mode if _mode_acts(mode) else None
    except Exception:  # noqa: BLE001 - no libm, no symbol, an unknown layout: scan instead
        return None


def _mode_acts(mode: CpuFlushMode) -> bool:
    """Whether the mode flushes results and reads subnormal operands as zeros in NumPy's
    float32 and float64 arithmetic, and whether restoring gives back the plain arithmetic."""

    def run() -> list[bool]:
        seen = []
        for t in (np.float32, np.float64):
            tiny = np.full(16, np.finfo(t).tiny, t)
            sub = np.full(16, np.nextafter(t(0), t(1)), t)
            uint = _UINT[np.dtype(t).itemsize]
            seen.append(bool((np.multiply(tiny, t(0.5)).view(uint) == 0).all()))  # results flushed
            seen.append(bool((np.add(sub, sub).view(uint) == 0).all()))  # operands read as zeros
        return seen

    plain, flushing = mode.envs()
    try:
        mode.set(flushing)
        under = run()
    finally:
        mode.set(plain)
    after = run()
    return all(under) and not any(after)


# Elementwise primitives whose NumPy kernels may run under the CPU's flush-to-zero mode (see
# cpu_flush_mode) in place of the scan of their results: one IEEE operation, a selection or a
# sign change on flushed operands, comparisons and classifications, conversions, and functions
# whose steps cannot be subnormal unless their result is (the elementary functions). Not
# floor_divide and remainder (an fmod remainder near tiny changes the quotient's floor: under
# the mode floor_divide(-3.6868188e-38, 1.676386e-38) was -2.0 in float32, the scan gives
# -3.0), nextafter (integer steps make the subnormal), hypot, logaddexp, atan2 and the generic
# pow (several steps, scaled). The interpreter also probes each one per parameters and dtypes
# before it relies on the mode (interpreter._cpu_flushes).
CPU_MODE_KERNELS = frozenset(
    {
        "abs", "acos", "acosh", "add", "asin", "asinh", "astype", "atan", "atanh", "bitwise_and",
        "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil",
        "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "greater",
        "greater_equal", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p",
        "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
        "negative", "not_equal", "positive", "real", "reciprocal", "round", "sign", "signbit", "sin", "sinh",
        "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    }
)  # fmt: skip
