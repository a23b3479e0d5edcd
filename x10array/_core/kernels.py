"""Kernel namespaces: the `k` every primitive's kernel is written against.

`NUMPY` wraps NumPy (the eager CPU backend); `jax_namespace()` wraps `jax.numpy` and `lax`
(used inside `jax.jit`, op by op on eager accelerators and as the lowering of lazy graphs).
Both expose the NumPy API under the same names, `k.linalg`, `k.fft`, and a handful of
helpers where the two libraries differ; `k.is_jax` lets a kernel branch where it must.
"""

from __future__ import annotations

import contextvars
import functools
import types
from typing import Any

import numpy as np

from . import xla_options


def _numpy_index_update(x: np.ndarray, index: Any, value: Any) -> np.ndarray:
    # The eager executor hands over a buffer this array owns alone (copy on write).
    x[index] = value
    return x


NUMPY = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
NUMPY.is_jax = False
NUMPY.index_update = _numpy_index_update
NUMPY.lax = None
NUMPY.rounded = lambda x: x
# Whether the kernel runs on a lazy tier (the interpreter's NumPy namespaces, jax's): there a
# complex multiply, divide, square or reciprocal is written out from real steps, each through
# `rounded`, so both tiers take the same steps with the same subnormal flushing (NumPy's own
# complex loops and XLA's expansion differ at special values); eager NumPy keeps its loops.
NUMPY.tiered = False

# A traced 1.0 that XLA cannot see through, set while a lazy graph is traced for compiling
# (see `rounded` and _backends/lazy/compile._jitted_program).
ROUNDING_GUARD: contextvars.ContextVar[Any] = contextvars.ContextVar("rounding_guard", default=None)


def _rounded(x: Any) -> Any:
    """`x` as an arithmetic step of a compiled lazy graph must store it: rounded to its dtype
    (not fused into a later addition) and, where XLA flushes, with subnormals flushed to zero.

    XLA's CPU compiler contracts a multiplication and an addition that reads it into one fused
    multiply-add (rounded once), always, with no option to turn it off (LLVM's
    `AllowFPOpFusion::Fast`; neither XLA's flags nor the per-compile options change it short
    of lowering the instruction set to SSE4.2 for the whole process). NumPy rounds the product,
    then the sum: 23% of `x * y + z` differ. So a lazy graph multiplies each arithmetic result
    by a runtime 1.0 (an input of the compiled program, which XLA cannot fold): a contraction
    can then only fuse that exact multiplication by one into the addition, and
    fma(p, 1, z) = p + z rounded once, with p already rounded. The same multiplication flushes
    a subnormal that a bit-level lowering (abs, negation, copysign, a select) let through, as
    XLA's flush-to-zero arithmetic does everywhere else. Outside a compiled lazy graph (eager
    XLA kernels: one operation per program) `x` is returned as it is."""
    guard = ROUNDING_GUARD.get()
    if guard is None or not hasattr(x, "dtype") or x.dtype.kind not in "fc":
        return x
    if x.dtype.kind == "c":
        import jax

        g = guard.astype(x.real.dtype)
        return jax.lax.complex(x.real * g, x.imag * g)
    return x * guard.astype(x.dtype)


_INT64_MAX = 2**63 - 1


def jax_operand(value: Any) -> Any:
    """An operand as jax may take it: a Python int beyond int64 (next to a uint64 array)
    would overflow jax's scalar conversion, so it travels as a NumPy uint64."""
    if type(value) is int and value > _INT64_MAX:
        return np.uint64(value)
    return value


@functools.cache  # no arguments: one entry
def jax_namespace() -> types.SimpleNamespace:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def index_update(x: Any, index: Any, value: Any) -> Any:
        return x.at[index].set(value)

    ns = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("__")})
    ns.is_jax = True
    ns.index_update = index_update
    ns.lax = lax
    ns.jax = jax
    ns.rounded = _rounded
    ns.tiered = True
    # jaxlib 0.10.2's CPU reductions drop NaN from max and min over large arrays (the
    # vectorized loop, from about 4096 elements: jax.jit(jnp.max) of such an array with a NaN
    # gives its largest number); the standard and NumPy propagate it.
    ns.max = ns.amax = functools.partial(_nan_propagating, jnp.max, jnp)
    ns.min = ns.amin = functools.partial(_nan_propagating, jnp.min, jnp)
    # jax.numpy has no errstate; kernels may use `with k.errstate(...)` on both.
    ns.errstate = lambda **kw: _NULL
    ns.divide = ns.true_divide = functools.partial(_quotient, jnp, lax)
    return ns


def _quotient(jnp: Any, lax: Any, a: Any, b: Any) -> Any:
    """jnp.divide, correctly rounded in a compiled lazy graph. XLA's algebraic simplifier
    rewrites quotients into other roundings: A / broadcast(B) as A * broadcast(1 / B) (one
    ulp off in about a fifth of the elements), (A / B) / C as A / (B * C), A / sqrt(B) as
    A * rsqrt(B), A / exp(B) as A * exp(-B). So, for real floating-point results: a
    broadcast divisor is broadcast to the result's shape behind an optimization barrier (a
    plain operand again: ~10% on a 1e6-element float64 quotient), a divisor computed in the
    graph and the quotient itself are stored (`_rounded`: a product with the graph's runtime
    1.0, which XLA cannot fold), so that no rewrite sees a quotient or a square root next to a
    division. Outside a compiled graph (`ROUNDING_GUARD` unset) only the barrier applies."""
    dtype = jnp.result_type(a, b)
    if not jnp.issubdtype(dtype, jnp.floating):
        return jnp.divide(a, b)
    shape = jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b))
    if jnp.shape(b) != shape:
        b = lax.optimization_barrier(jnp.broadcast_to(jnp.asarray(b, dtype=dtype), shape))
    else:
        b = _rounded(b)
    return _rounded(jnp.divide(a, b))


def _nan_propagating(reduce: Any, jnp: Any, x: Any, axis: Any = None, *args: Any, keepdims: bool = False,
                     **kwargs: Any) -> Any:  # fmt: skip
    """jnp.max / jnp.min with NaN in the reduced extent giving NaN, whatever the size."""
    out = reduce(x, axis, *args, keepdims=keepdims, **kwargs)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return out
    return jnp.where(jnp.any(jnp.isnan(x), axis=axis, keepdims=keepdims), jnp.nan, out).astype(out.dtype)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL = _Null()


# -- XLA's CPU numerics: subnormals -------------------------------------------------------------


@functools.cache  # no arguments: one entry
def xla_flushes() -> bool:
    """Whether XLA flushes subnormals on this machine's CPU (jax sets flush-to-zero and
    denormals-are-zero for its work): probed once, by a compiled multiplication. The one probe
    of it: the lazy interpreter, the compiled tier and the eager XLA host kernels read it."""
    import jax

    with jax.enable_x64(True):
        tiny = np.finfo(np.float32).tiny
        product = jax.jit(lambda a, b: a * b, compiler_options=xla_options.compiler_options("cpu"))
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
# (_backends/lazy/compile._replay_compiled, as for `passes_bits` primitives), so it gives what
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


def _probe_operands(dtypes: tuple[np.dtype, ...]) -> list[np.ndarray]:
    """Every combination of the operands' special values, as 1-D arrays of one length."""
    grids = np.meshgrid(*[_specials(d, i >= 2) for i, d in enumerate(dtypes)], indexing="ij")
    return [np.ascontiguousarray(g.ravel()) for g in grids]


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
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

# (primitive, parameters as a hashable tuple, operand dtypes) -> whether its compiled lowering
# lets a subnormal through (see above); bounded: the entries are the distinct elementwise
# operations compiled graphs hold, a few per primitive
_THROUGH: dict[tuple[Any, ...], bool] = {}
_THROUGH_BOUND = 8192


def xla_lets_subnormals_through(entries: list[tuple[Any, tuple[Any, ...], tuple[np.dtype, ...]]]) -> list[bool]:
    """For each (elementwise primitive, its parameters as sorted items, its operands' dtypes):
    whether its compiled lowering on this CPU gives something else than the lowering on
    flushed operands, flushed (see above). Probed once per entry and cached; the entries not
    seen yet are probed together, in one compiled program."""
    missing = [e for e in dict.fromkeys(entries) if e not in _THROUGH]
    if missing:
        try:
            _probe(missing)
        except Exception:  # noqa: BLE001 - a lowering that refuses the probe's operands
            for e in missing:  # one by one; one that still fails is flushed by the graph itself
                try:
                    _probe([e])
                except Exception:  # noqa: BLE001 - (flushing is always right, only slower)
                    _THROUGH[e] = True
    return [_THROUGH.get(e, True) for e in entries]


def _probe(entries: list[tuple[Any, tuple[Any, ...], tuple[np.dtype, ...]]]) -> None:
    import jax

    k = jax_namespace()
    raw: list[list[np.ndarray]] = []
    flushed: list[list[np.ndarray]] = []
    for _, _, dtypes in entries:
        ops = _probe_operands(dtypes)
        raw.append(ops)
        flushed.append([flush_subnormals(o) for o in ops])

    def run(operands: list[list[Any]]) -> list[Any]:
        outs = []
        for (prim, items, _), ops in zip(entries, operands):
            out = prim.lowering(k, *ops, **dict(items))
            outs.append(out if not prim.multiple_results else tuple(out))
        return outs

    with jax.enable_x64(True), np.errstate(all="ignore"):
        # (one program, run twice: one compile; with the options of the programs it probes for)
        program = jax.jit(run, compiler_options=xla_options.compiler_options("cpu"))
        got_raw, got_flushed = program(raw), program(flushed)
        if len(_THROUGH) + len(entries) > _THROUGH_BOUND:
            _THROUGH.clear()
        for e, r, f in zip(entries, got_raw, got_flushed):
            pairs = zip(r, f) if isinstance(r, tuple) else [(r, f)]
            _THROUGH[e] = not all(_same_values(np.asarray(a), flush_subnormals(np.asarray(b))) for a, b in pairs)


def flush_subnormals(value: Any) -> Any:
    """Subnormal floats to (signed) zero, as XLA's CPU arithmetic does (flush-to-zero and
    denormals-are-zero): `value` itself when it holds none (or is not a float array). For the
    eager XLA executor's host kernels (policies.XLA_HOST_KERNELS); the lazy interpreter, which
    runs it on every arithmetic result, has its own scan tuned for large arrays
    (`interpreter._flush`, with its own probe `flushes`: the same answer as `xla_flushes`)."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc" or value.size == 0:
        return value
    parts = (value.real, value.imag) if value.dtype.kind == "c" else (value,)
    tiny = np.finfo(parts[0].dtype).tiny
    if not any(_has_subnormal(p, tiny) for p in parts):
        return value
    value = value.copy()
    for p in (value.real, value.imag) if value.dtype.kind == "c" else (value,):
        p[(np.abs(p) < tiny) & (p != 0)] = 0.0 * np.sign(p[(np.abs(p) < tiny) & (p != 0)])
    return value


def _has_subnormal(part: np.ndarray, tiny: Any) -> bool:
    """Whether a real array holds a subnormal. Two passes (abs, min) in the common case that
    no magnitude is below `tiny`; zeros and subnormals (and NaN minima) take a closer look."""
    magnitude = np.abs(part)
    if magnitude.min() >= tiny:
        return False
    return bool(magnitude[magnitude < tiny].any())


_F32_TINY = float(np.finfo(np.float32).tiny)


def numpy_on_flushed(prim: Any, *, reads: bool = True) -> Any:
    """The XLA_HOST_KERNELS function (policies) of a primitive whose XLA program gives the bits
    of its NumPy kernel on operands read as XLA reads them, subnormals as signed zeros where
    XLA flushes (`flush`): comparisons, classification, logical and bitwise operations, all
    and any, whose results are booleans or integers (no result to flush). With `reads=False`,
    a primitive that only passes its operands' bits on (a select, a complex number's parts):
    operands unflushed. None (XLA runs it) for a Python float operand that a float32 array
    would read as a subnormal."""
    kernel = prim.kernel

    def host(flush: bool, *buffers: Any, **params: Any) -> Any:
        if flush:
            for b in buffers:
                if type(b) in (float, complex) and b != 0 and abs(b) < _F32_TINY:
                    return None
            if reads:
                buffers = tuple(flush_subnormals(b) for b in buffers)
        return kernel(NUMPY, *buffers, **params)

    host.__name__ = f"{prim.name}_on_flushed"
    return host
