"""XLA compile options of x10array's own programs, chosen by measurement, per jaxlib version.

The one place where x10array picks XLA options: the lazy backend's programs (barriers and
reads), `x10array.compile`'s captured programs and the subnormal probes of `kernels` (which
must see the code those programs get) pass `compiler_options()` to `jax.jit`. They are
per-compile options: the user's `XLA_FLAGS` are never read or changed, and a `jax.jit`
function of the user's keeps XLA's defaults. A flag given in `XLA_FLAGS` wins over the same
option here (jax passes both to XLA; the per-compile value only where the flag is not set).

An entry is kept only with its measurement (benchmarks/README.md, "XLA options"), for the
jaxlib versions it was measured on; another version gets XLA's defaults until measured.
"""

from __future__ import annotations

import functools
import os
from typing import Any

__all__ = ["compiler_options"]

# (jaxlib major.minor, platform) -> options. Empty: measured, nothing chosen yet.
#
# jaxlib 0.10, CPU (2026-12-03, 2-core x86-64, loaded; benchmarks/README.md, "XLA options"):
# `xla_cpu_experimental_ynn_fusion_type` (its default holds YNNPACK's dot, elementwise and
# reduce fusions). In plain jax.jit, a float64 `mean(exp(-x*x))` of a column of a (1e6, 2)
# array takes 27 ms with the default and 2.2 ms without YNN's elementwise and reduce fusions,
# but a contiguous `sum(x*x)` 0.28 ms against 0.86, a float32 softmax 0.18 against 0.46, and
# a float64 512x512 matmul needs the dot fusion (3.0 ms, 6.9 without any). On x10array's own
# programs (bench_dayone's workloads, as written and with every graph compiled, default
# against "dot only" against none, two alternating runs) no choice was faster beyond the
# runs' spread: x10array's column reads and rounding guards do not form the slow pattern.
_MEASURED: dict[tuple[str, str], dict[str, Any]] = {}


@functools.cache
def _jaxlib_version() -> str:
    from jax._src.lib import version_str  # (as compile_cache names its folders)

    return ".".join(str(version_str).split(".")[:2])


def compiler_options(platform: str = "cpu") -> dict[str, Any] | None:
    """The options for a program on `platform` ("cpu", "gpu", "tpu"); None for none. Options
    that the user's XLA_FLAGS set themselves are left out (theirs apply)."""
    chosen = _MEASURED.get((_jaxlib_version(), platform))
    if not chosen:
        return None
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in chosen.items() if f"--{k}" not in flags} or None
