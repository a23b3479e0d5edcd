"""XLA compile options of x10array's own programs, chosen by measurement, per jaxlib version.

The one place where x10array picks XLA options: the lazy backend's programs (barriers and
reads), `x10array.compile`'s captured programs and the subnormal probes of `kernels` (which
must see the code those programs get) pass `compiler_options()` to `jax.jit`. They are
per-compile options: the user's `XLA_FLAGS` are never read or changed, and a `jax.jit`
function of the user's keeps XLA's defaults. A flag given in `XLA_FLAGS` wins over the same
option here (jax passes both to XLA; the per-compile value only where the flag is not set).

Options are chosen per program kind: None (every program) or NARROW (a program whose
reductions are narrow, or that reduces elementwise work on a column, and that has no matrix
product: `kind_of`, which the lazy backend's Program asks once from its calls). An
entry is kept only with its measurement (benchmarks/README.md, "XLA options"), for the
jaxlib versions it was measured on; another version gets XLA's defaults until measured.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

__all__ = ["NARROW", "compiler_options", "kind_of"]

# (jaxlib major.minor, platform) -> {program kind: options}; a kind missing: XLA's defaults.
# Kind None is every program's; NARROW is a program whose reductions are narrow (`kind_of`).
#
# jaxlib 0.10, CPU (the measurements: benchmarks/README.md, "XLA options"):
# `xla_cpu_experimental_ynn_fusion_type` (its default holds YNNPACK's dot, elementwise and
# reduce fusions). In plain jax.jit, YNNPACK's reduce fusion is slow over a short last axis and
# fast elsewhere (long and whole reductions, softmax), and its elementwise fusion into a dot
# makes `relu(A @ W)` faster, on both x86-64 machines measured. So the default stays, and a
# program whose sizeable reductions are all narrow (over a last axis of at most NARROW_LAST
# elements) and that has no matrix product gets the dot fusion alone (k-means' distance program
# runs in about a third of the time). Both settings give the same bits where the tiers promise
# bits (tests/test_tiers.py runs under both).
# A reduction of elementwise work on a column (an integer index on the last axis, `p[:, 0]`
# of a (1e6, 2) array: the lazy backend's policies.COLUMN_READS) is slow under the default
# fusions wherever it is (`mean(exp(-(p[:, 0] ** 2)))`, `max(exp(col))`, `t[:, :, 0]` alike:
# several times slower). Not a column alone (`sum(p[:, 0])`), nor a transposed row (`p.T[0]`),
# nor a stride along one axis (`x[::2]`): those keep the defaults. One miss: `mean(-(p[:, 0] **
# 2))` is somewhat slower with the dot fusion on one machine. So a program holding such a
# reduction (of more than SMALL elements) and no matrix product is NARROW too.
NARROW = "narrow reductions"
_MEASURED: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {
    ("0.10", "cpu"): {NARROW: {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}},
}

# `kind_of`'s bounds, from the measurements above: a reduction over a last axis of at most
# NARROW_LAST elements is narrow; any other reduction of an array of SMALL elements or fewer
# is too small to weigh either way
NARROW_LAST = 8
SMALL = 4096


def kind_of(reductions: list[tuple[tuple[int, ...], tuple[int, ...], bool]], matrix_product: bool) -> Any:
    """The kind of a program whose reductions reduce arrays of these shapes over these axes
    (non-negative), each of elementwise work on a column or not (see below): NARROW when the
    program has no matrix product and either one of its reductions of more than SMALL
    elements is of elementwise work on a column, or at least one is narrow and the others
    are narrow or small; else None (XLA's defaults)."""
    if matrix_product:
        return None
    if any(of_column and math.prod(shape) > SMALL for shape, _, of_column in reductions):
        return NARROW
    kind = None
    for shape, axes, _ in reductions:
        if len(shape) >= 2 and shape[-1] <= NARROW_LAST and len(shape) - 1 in axes:
            kind = NARROW
        elif math.prod(shape) > SMALL:
            return None  # (a reduction YNNPACK's fusion runs faster, or may)
    return kind


@functools.cache
def _jaxlib_version() -> str:
    from jaxlib.version import __version__ as version_str  # (as compile_cache names its folders)

    return ".".join(str(version_str).split(".")[:2])


def compiler_options(platform: str = "cpu", kind: Any = None) -> dict[str, Any] | None:
    """The options for a program of `kind` (None, or NARROW: see `kind_of`) on `platform`
    ("cpu", "gpu", "tpu"); None for none. Options that the user's XLA_FLAGS set themselves are
    left out (theirs apply)."""
    chosen = _MEASURED.get((_jaxlib_version(), platform), {}).get(kind)
    if not chosen:
        return None
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in chosen.items() if f"--{k}" not in flags} or None
