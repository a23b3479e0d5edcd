"""XLA compile options of x10array's own programs, chosen by measurement, per jaxlib version.

The one place where x10array picks XLA options: the lazy backend's programs (barriers and
reads), `x10array.compile`'s captured programs and the subnormal probes of `kernels` (which
must see the code those programs get) pass `compiler_options()` to `jax.jit`. They are
per-compile options: the user's `XLA_FLAGS` are never read or changed, and a `jax.jit`
function of the user's keeps XLA's defaults. A flag given in `XLA_FLAGS` wins over the same
option here (jax passes both to XLA; the per-compile value only where the flag is not set).

Options are chosen per program kind: None (every program) or NARROW (a program with a narrow
reduction and no matrix product, which the lazy backend's Program finds from its calls). An
entry is kept only with its measurement (benchmarks/README.md, "XLA options"), for the
jaxlib versions it was measured on; another version gets XLA's defaults until measured.
"""

from __future__ import annotations

import functools
import os
from typing import Any

__all__ = ["compiler_options"]

# (jaxlib major.minor, platform) -> {program kind: options}; a kind missing: XLA's defaults.
# Kind None is every program's; NARROW is a program with a narrow reduction (`narrow`).
#
# jaxlib 0.10, CPU (2026-12-06, 2-core x86-64; benchmarks/README.md, "XLA options"):
# `xla_cpu_experimental_ynn_fusion_type` (its default holds YNNPACK's dot, elementwise and
# reduce fusions). In plain jax.jit, YNNPACK's reduce fusion is fast where the reduced array's
# last axis is long and slow where it is short: `sum(x * x, axis=-1)` of a (500000, 2) float64
# array takes 2.15 ms with the default and 0.21 ms with the dot fusion alone, (250000, 4)
# 1.06 against 0.14, (125000, 8) 0.57 against 0.28, but (62500, 16) 0.33 against 0.33 and
# (15625, 64) 0.13 against 0.44; over axis 0, (250000, 4) 0.74 against 0.55 and (125000, 8)
# 0.39 against 0.44; a contiguous `sum(x * x)` of 1e6 0.15 against 0.54 and a float32
# softmax 256 x 784 0.18 against 0.40, and YNNPACK's elementwise fusion into a dot makes
# `relu(A @ W)` ~2x faster. So the default stays, and a program whose reductions include a
# narrow one (`narrow`) and that has no matrix product gets the dot fusion alone: k-means'
# distance program (5000 x 5 x 4, a sum over the last axis, then argmin) 260 us -> 82 us.
# Both settings give the same bits on x10array's programs (its reductions' order is its own,
# and the lazy tiers' bits are checked under both by tests/test_xla_options.py).
NARROW = "narrow reductions"
_MEASURED: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {
    ("0.10", "cpu"): {NARROW: {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}},
}

# `narrow`'s bounds, from the table above: a reduction over the last axis of at most
# NARROW_LAST elements, or over other axes of an array whose last axis has at most NARROW_ANY
NARROW_LAST = 8
NARROW_ANY = 4


def narrow(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Whether reducing an array of `shape` over `axes` (non-negative, sorted or not) is a
    narrow reduction, the kind YNNPACK's reduce fusion runs slowly (see _MEASURED): an array
    of two or more axes whose last axis is short."""
    if len(shape) < 2 or not axes:
        return False
    last = shape[-1]
    return last <= NARROW_ANY or (last <= NARROW_LAST and len(shape) - 1 in axes)


@functools.cache
def _jaxlib_version() -> str:
    from jax._src.lib import version_str  # (as compile_cache names its folders)

    return ".".join(str(version_str).split(".")[:2])


def compiler_options(platform: str = "cpu", kind: Any = None) -> dict[str, Any] | None:
    """The options for a program of `kind` (None, or NARROW: see `narrow`) on `platform`
    ("cpu", "gpu", "tpu"); None for none. Options that the user's XLA_FLAGS set themselves are
    left out (theirs apply)."""
    chosen = _MEASURED.get((_jaxlib_version(), platform), {}).get(kind)
    if not chosen:
        return None
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in chosen.items() if f"--{k}" not in flags} or None
