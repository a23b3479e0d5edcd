"""Utility functions (the standard's chapter of that name): all, any, diff."""

from __future__ import annotations

from typing import Any

from .._core.array import Array
from .._core.dtypes import DType, promote
from .._core.kernels import numpy_on_flushed
from .._core.policies import NUMPY_QUIET, XLA_HOST_KERNELS
from .._core.primitive import Primitive, bind
from .._core.validation import check_array, check_int, common_device, normalize_axis
from .statistical import cast, reduction

__all__ = ["all", "any", "diff"]


def _truth(x: Any) -> Any:
    # Explicit `!= 0`: jax's complex -> bool conversion looks at the real part only.
    return x if x.dtype.kind == "b" else x != 0


all = reduction(  # noqa: A001 - the standard's name
    "all", "any", lambda k, x, *, axes, keepdims: k.all(_truth(x), axis=axes, keepdims=keepdims),
    doc="Logical AND over `axis` (True for an empty set); NaN and non-zero components count as True.",
)  # fmt: skip
any = reduction(  # noqa: A001
    "any", "any", lambda k, x, *, axes, keepdims: k.any(_truth(x), axis=axes, keepdims=keepdims),
    doc="Logical OR over `axis` (False for an empty set); NaN and non-zero components count as True.",
)  # fmt: skip
for _fn in (all, any):  # (the eager CPU's XLA kernels: see policies.XLA_HOST_KERNELS)
    XLA_HOST_KERNELS.register(_fn.primitive, numpy_on_flushed(_fn.primitive))  # type: ignore[attr-defined]


def _diff_kernel(k: Any, x: Any, prepend: Any, append: Any, *, axis: int, n: int, dtype: DType) -> Any:
    parts = [cast(p, dtype.np) for p in (prepend, x, append) if p is not None]
    x = k.concatenate(parts, axis=axis) if len(parts) > 1 else parts[0]
    if n >= x.shape[axis]:  # nothing is left: no n passes over the data (jax unrolls each one)
        return k.zeros(x.shape[:axis] + (0,) + x.shape[axis + 1 :], dtype=dtype.np)
    return k.diff(x, n=n, axis=axis) if n else x


_DIFF = Primitive("diff", _diff_kernel)
NUMPY_QUIET.add(_DIFF)


def diff(
    x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array | None = None, append: Array | None = None
) -> Array:
    """n-th forward difference along `axis`, after joining `prepend`, `x` and `append` there.

    `prepend`/`append` must match `x`'s shape off `axis`; their dtypes are promoted with x's.
    """
    check_array(x, "diff", "x", "numeric")
    axis = normalize_axis(axis, x.ndim, "diff")
    n = check_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    dtype = x._dtype

    def off_axis(shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape[:axis] + shape[axis + 1 :]

    for arg, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        check_array(extra, "diff", arg, "numeric")
        x, extra = common_device((x, extra), "diff")[1]
        if arg == "prepend":
            prepend = extra
        else:
            append = extra
        if extra.ndim != x.ndim or off_axis(extra.shape) != off_axis(x.shape):
            raise ValueError(
                f"diff: {arg} has shape {extra.shape}; it must match x's shape {x.shape} except along axis {axis}"
            )
        dtype = promote(dtype, extra._dtype, "diff")
    length = sum(a.shape[axis] for a in (prepend, x, append) if a is not None)
    # n past the joined length gives an empty result: one graph (and compile) for every such n
    return bind(_DIFF, x._device, x, prepend, append, axis=axis, n=min(n, length), dtype=dtype)
