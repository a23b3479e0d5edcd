"""XLA's treatment of subnormals on the CPU, for the eager XLA executor's host kernels
(policies.XLA_HOST_KERNELS), which read their operands as XLA's programs do:

- `xla_flushes()`: whether XLA flushes subnormals on this machine's CPU (probed once);
- `flush_subnormals`: subnormal floats to signed zeros, as XLA's arithmetic reads and stores
  them (`has_subnormal`, the scan it runs first, tuned for large arrays).

The lazy device does not imitate it: its interpreter keeps subnormals (NumPy's numerics), its
compiled programs flush them where XLA does (the subnormal rule of docs/numerics.md).
"""

from __future__ import annotations

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


def flush_subnormals(value: Any) -> Any:
    """Subnormal floats to (signed) zero, as XLA's CPU arithmetic does (flush-to-zero and
    denormals-are-zero): `value` itself when it holds none (or is not a float array). The
    eager XLA executor's host kernels (policies.XLA_HOST_KERNELS) read their operands through
    it. (The common case, a real float array with no subnormal, costs one dtype lookup and the
    scan.)"""
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
