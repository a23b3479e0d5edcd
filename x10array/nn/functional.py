"""Neural-network operations beyond the standard: conv2d, avg_pool2d, max_pool2d (NHWC).

Layouts follow Swift for TensorFlow's: images NHWC, filters HWIO
(height, width, in channels, out channels).

- `conv2d` is one extension primitive (`x10array.extend.primitive("nn.conv2d", ...)`):
  windowed tensordot with NumPy; under jax XLA's convolution (the default,
  `X10ARRAY_CONV_LOWERING=conv`: it compiles faster than im2col in a training loop, see
  benchmarks/README.md) or im2col + matmul (`im2col`); the setting is read at each call
  and passed as the primitive's `lowering` parameter, so compiled programs are
  cached per lowering). Its fallback, for the arrays of any other namespace, composes the same
  convolution from standard functions (strided slices, `stack`, `matmul`). Its VJP rule is
  written once, with `xp`: a second primitive (`nn.conv2d_vjp`) on x10array arrays, conv2d
  itself and standard functions elsewhere.
- The pools are composed from standard functions on every namespace (a reshape and a `mean`
  or `max` when windows tile the image, strided slices otherwise); XLA fuses them, and
  autodiff differentiates them through the standard rules.
"""

from __future__ import annotations

from typing import Any

from .. import Array, extend

__all__ = ["conv2d", "avg_pool2d", "max_pool2d", "relu", "softmax", "log_softmax", "softmax_cross_entropy"]


def _pair(value: Any, fname: str, arg: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) and v > 0 for v in value)):
        raise ValueError(f"{fname}: {arg} must be a positive int or a pair of them, got {value!r}")
    return int(value[0]), int(value[1])


def _pads(size: int, window: int, stride: int, padding: str) -> tuple[int, int, int]:
    """(pad before, pad after, output size) along one spatial axis, as TensorFlow pads."""
    if padding == "valid":
        return 0, 0, (size - window) // stride + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2, out


def _check_padding(padding: str, fname: str) -> str:
    if padding not in ("same", "valid"):
        raise ValueError(f"{fname}: padding must be 'same' or 'valid', got {padding!r}")
    return padding


def _check_input(x: Any, fname: str, arg: str = "x", category: str | None = "real floating") -> Any:
    """`x`'s namespace, after checking that `x` is an array (of `category`), before anything is recorded."""
    if not hasattr(x, "__array_namespace__"):
        raise TypeError(f"{fname}: {arg} must be an array, got {type(x).__name__}")
    xp = x.__array_namespace__()
    kinds = ("integral", "real floating") if category == "real numeric" else category
    if kinds is not None and not xp.isdtype(x.dtype, kinds):
        raise TypeError(f"{fname}: {arg} must have a {category} dtype, got {getattr(x.dtype, 'name', x.dtype)}")
    return xp


def _check_axis(axis: Any, ndim: int, fname: str) -> int:
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"{fname}: axis must be an int, got {type(axis).__name__}")
    axis = axis.__index__()
    if not -ndim <= axis < ndim:
        raise IndexError(f"{fname}: axis {axis} is out of range for an array with {ndim} dimensions")
    return axis


# -- the conv2d primitive ------------------------------------------------------------------------

Pads = tuple[int, int, int, int]


def _conv_kernel(k: Any, x: Any, w: Any, *, strides: tuple[int, int], pads: Pads, lowering: str) -> Any:
    """Valid convolution of `x` padded by `pads` (top, bottom, left, right)."""
    pt, pb, pl, pr = pads
    if k.is_jax and lowering == "conv":
        return k.lax.conv_general_dilated(
            x, w, strides, ((pt, pb), (pl, pr)), dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
    if pt or pb or pl or pr:
        x = k.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    kh, kw = w.shape[0], w.shape[1]
    sh, sw = strides
    n, hp, wp, c = x.shape
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    if k.is_jax:
        cols = [
            x[:, i : i + (ho - 1) * sh + 1 : sh, j : j + (wo - 1) * sw + 1 : sw, :]
            for i in range(kh)
            for j in range(kw)
        ]
        patches = k.stack(cols, axis=3)  # (n, ho, wo, kh*kw, c)
        return k.reshape(patches, (n, ho, wo, kh * kw * c)) @ k.reshape(w, (kh * kw * c, -1))
    windows = k.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]  # n,ho,wo,c,kh,kw
    return k.tensordot(windows, w, axes=((4, 5, 3), (0, 1, 2))).astype(x.dtype, copy=False)


def _conv_fallback(xp: Any, x: Any, w: Any, *, strides: tuple[int, int], pads: Pads, lowering: str) -> Any:
    """The same convolution from standard functions, for any other namespace's arrays."""
    x = _pad(xp, x, pads)
    kh, kw, c, o = w.shape
    sh, sw = strides
    n, hp, wp, _ = x.shape
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    cols = [
        x[:, i : i + (ho - 1) * sh + 1 : sh, j : j + (wo - 1) * sw + 1 : sw, :] for i in range(kh) for j in range(kw)
    ]
    patches = xp.reshape(xp.stack(cols, axis=3), (n * ho * wo, kh * kw * c))
    return xp.reshape(xp.matmul(patches, xp.reshape(w, (kh * kw * c, o))), (n, ho, wo, o))


def _conv_rule(
    xp: Any, g: Any, ans: Any, x: Any, w: Any, *, strides: Any, pads: Pads, lowering: str, needs: tuple[bool, ...]
) -> tuple[Any, Any]:
    """(d input, d filter); d input only when needed (not for the images of a first layer)."""
    if type(x) is Array and type(w) is Array and type(g) is Array:
        dx, dw = _conv2d_vjp(x, w, g, strides=strides, pads=pads, lowering=lowering, need_input=needs[0])
        return (dx if needs[0] else None), dw
    return _conv_vjp_portable(xp, g, x, w, strides, pads, lowering, needs[0])


_conv2d = extend.primitive("nn.conv2d", _conv_kernel, vjp=_conv_rule, vjp_needs=True, fallback=_conv_fallback)


def _pad(xp: Any, x: Any, pads: Pads) -> Any:
    """`x` with zero rows and columns around it, from concatenations (no writes: `x` may be
    another namespace's array or a tracer, as in a gradient of a gradient)."""
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    xp = x.__array_namespace__()  # (a tracer's own, in a gradient of a gradient)
    n, h, w, c = x.shape

    def zeros(*shape: int) -> Any:
        return xp.zeros(shape, dtype=x.dtype, device=x.device)

    x = xp.concat([zeros(n, pt, w, c), x, zeros(n, pb, w, c)], axis=1)
    return xp.concat([zeros(n, h + pt + pb, pl, c), x, zeros(n, h + pt + pb, pr, c)], axis=2)


def _dilate(xp: Any, g: Any, strides: tuple[int, int]) -> Any:
    """`g` with strides - 1 zero rows (columns) between its rows (columns), from
    concatenations and reshapes (no writes, as in _pad)."""
    sh, sw = strides
    xp = g.__array_namespace__()  # (a tracer's own, in a gradient of a gradient)
    n, h, w, c = g.shape
    if sh > 1:
        z = xp.zeros((n, h, sh - 1, w, c), dtype=g.dtype, device=g.device)
        g = xp.reshape(xp.concat([xp.expand_dims(g, axis=2), z], axis=2), (n, h * sh, w, c))[
            :, : (h - 1) * sh + 1, :, :
        ]
        h = g.shape[1]
    if sw > 1:
        z = xp.zeros((n, h, w, sw - 1, c), dtype=g.dtype, device=g.device)
        g = xp.reshape(xp.concat([xp.expand_dims(g, axis=3), z], axis=3), (n, h, w * sw, c))[
            :, :, : (w - 1) * sw + 1, :
        ]
    return g


def _conv_vjp_kernel(
    k: Any, x: Any, w: Any, g: Any, *, strides: tuple[int, int], pads: Pads, lowering: str, need_input: bool
) -> Any:
    """(d input, d filter) of the valid convolution of `x` padded by `pads`; d input is
    zeros when not needed (the images of a first layer)."""
    if k.is_jax:  # XLA's own transposed convolutions, as jax.grad would emit them
        options: dict[str, Any] = {"strides": strides, "pads": pads, "lowering": lowering}
        if not need_input:
            _, vjp = k.jax.vjp(lambda b: _conv_kernel(k, x, b, **options), w)
            return k.zeros_like(x), vjp(g)[0]
        _, vjp = k.jax.vjp(lambda a, b: _conv_kernel(k, a, b, **options), x, w)
        return vjp(g)
    kh, kw = w.shape[0], w.shape[1]
    pt, pb, pl, pr = pads
    n, h, wd, c = x.shape
    xpad = k.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    hp, wp = xpad.shape[1], xpad.shape[2]
    sh, sw = strides
    gd = g
    if sh > 1 or sw > 1:
        gd = k.zeros((n, (g.shape[1] - 1) * sh + 1, (g.shape[2] - 1) * sw + 1, g.shape[3]), dtype=g.dtype)
        gd[:, ::sh, ::sw, :] = g
    hd, wdd = gd.shape[1], gd.shape[2]
    windows = k.lib.stride_tricks.sliding_window_view(xpad, (hd, wdd), axis=(1, 2))[:, :kh, :kw]  # n,kh,kw,c,hd,wd
    dw = k.tensordot(windows, gd, axes=((0, 4, 5), (0, 1, 2)))  # kh,kw,c,o
    if not need_input:
        return k.zeros_like(x), dw.astype(w.dtype, copy=False)
    full = k.pad(gd, ((0, 0), (kh - 1, hp - hd), (kw - 1, wp - wdd), (0, 0)))
    wins = k.lib.stride_tricks.sliding_window_view(full, (kh, kw), axis=(1, 2))  # n,hp,wp,o,kh,kw
    dxp = k.tensordot(wins, w[::-1, ::-1], axes=((4, 5, 3), (0, 1, 3)))  # n,hp,wp,c
    return dxp[:, pt : pt + h, pl : pl + wd, :].astype(x.dtype, copy=False), dw.astype(w.dtype, copy=False)


# x10array arrays only (the rule above calls it for them); no VJP rule of its own: a gradient
# of a gradient goes through the portable form
_conv2d_vjp = extend.primitive("nn.conv2d_vjp", _conv_vjp_kernel, multiple_results=True)


def _conv_vjp_portable(
    xp: Any, g: Any, x: Any, w: Any, strides: Any, pads: Pads, lowering: str, need_input: bool
) -> tuple[Any, Any]:
    """The same cotangents from standard functions and conv2d itself (any namespace, tracers)."""
    kh, kw = w.shape[0], w.shape[1]
    pt, pb, pl, pr = pads
    n, h, wd, c = x.shape
    hp, wp = h + pt + pb, wd + pl + pr
    gd = _dilate(xp, g, strides)
    hd, wdd = gd.shape[1], gd.shape[2]
    dx = None
    if need_input:  # full correlation of the dilated cotangent with the flipped, transposed filter
        w_t = xp.permute_dims(xp.flip(w, axis=(0, 1)), (0, 1, 3, 2))
        dxp = _conv2d(gd, w_t, strides=(1, 1), pads=(kh - 1, hp - hd, kw - 1, wp - wdd), lowering=lowering)
        dx = dxp[:, pt : pt + h, pl : pl + wd, :]
    # filter: correlate the padded input (channels as batch) with the dilated cotangent
    xpad_t = xp.permute_dims(_pad(xp, x, pads), (3, 1, 2, 0))  # (c, hp, wp, n)
    g_t = xp.permute_dims(gd, (1, 2, 0, 3))  # (hd, wd, n, o)
    dw = _conv2d(xpad_t, g_t, strides=(1, 1), pads=(0, 0, 0, 0), lowering=lowering)[:, :kh, :kw, :]  # (c, kh, kw, o)
    return dx, xp.permute_dims(dw, (1, 2, 0, 3))


def conv2d(x: Any, filter: Any, *, strides: Any = (1, 1), padding: str = "valid") -> Any:  # noqa: A002
    """2-D convolution (cross-correlation) of NHWC `x` with HWIO `filter`."""
    _check_input(x, "conv2d", "x", category="numeric")
    _check_input(filter, "conv2d", "filter", category="numeric")
    if getattr(x, "ndim", None) != 4 or getattr(filter, "ndim", None) != 4:
        raise ValueError(
            f"conv2d: expected a 4-D NHWC input and a 4-D HWIO filter, got shapes "
            f"{getattr(x, 'shape', type(x))} and {getattr(filter, 'shape', type(filter))}"
        )
    if x.shape[3] != filter.shape[2]:
        raise ValueError(f"conv2d: the input has {x.shape[3]} channels but the filter expects {filter.shape[2]}")
    if x.dtype != filter.dtype:
        raise TypeError(f"conv2d: input and filter dtypes differ ({x.dtype} and {filter.dtype})")
    strides = _pair(strides, "conv2d", "strides")
    padding = _check_padding(padding, "conv2d")
    pt, pb, _ = _pads(x.shape[1], filter.shape[0], strides[0], padding)
    pl, pr, _ = _pads(x.shape[2], filter.shape[1], strides[1], padding)
    if x.shape[1] + pt + pb < filter.shape[0] or x.shape[2] + pl + pr < filter.shape[1]:
        raise ValueError(f"conv2d: the filter {filter.shape[:2]} is larger than the input {x.shape[1:3]}")
    lowering = extend.settings.get("X10ARRAY_CONV_LOWERING")
    return _conv2d(x, filter, strides=strides, pads=(pt, pb, pl, pr), lowering=lowering)


# -- pooling (composed from standard functions) -------------------------------------------------


def _pool(x: Any, pool_size: Any, strides: Any, padding: str, fname: str, reduce: str) -> Any:
    _check_input(x, fname, category="real floating" if reduce == "mean" else "real numeric")
    if getattr(x, "ndim", None) != 4:
        raise ValueError(f"{fname}: expected a 4-D NHWC input, got shape {getattr(x, 'shape', type(x))}")
    kh, kw = _pair(pool_size, fname, "pool_size")
    sh, sw = _pair(strides if strides is not None else (kh, kw), fname, "strides")
    padding = _check_padding(padding, fname)
    xp = x.__array_namespace__()
    n, h, w, c = x.shape
    pt, pb, ho = _pads(h, kh, sh, padding)
    pl, pr, wo = _pads(w, kw, sw, padding)
    if ho <= 0 or wo <= 0:
        raise ValueError(f"{fname}: the window {(kh, kw)} is larger than the input {(h, w)}")
    if (pt or pb or pl or pr) and reduce == "max":
        fill = xp.finfo(x.dtype).min if xp.isdtype(x.dtype, "real floating") else xp.iinfo(x.dtype).min
        padded = xp.full((n, h + pt + pb, w + pl + pr, c), fill, dtype=x.dtype, device=x.device)
        padded[:, pt : pt + h, pl : pl + w, :] = x
        x = padded
    elif pt or pb or pl or pr:
        x = _pad(xp, x, (pt, pb, pl, pr))
    if (kh, kw) == (sh, sw):  # windows tile the image: a reshape and one reduction
        if x.shape[1] != ho * kh or x.shape[2] != wo * kw:
            x = x[:, : ho * kh, : wo * kw, :]
        tiles = xp.reshape(x, (n, ho, kh, wo, kw, c))
        return xp.mean(tiles, axis=(2, 4)) if reduce == "mean" else xp.max(tiles, axis=(2, 4))
    out: Any = None
    for i in range(kh):
        for j in range(kw):
            piece = x[:, i : i + (ho - 1) * sh + 1 : sh, j : j + (wo - 1) * sw + 1 : sw, :]
            out = piece if out is None else (out + piece if reduce == "mean" else xp.maximum(out, piece))
    return out / (kh * kw) if reduce == "mean" else out


def avg_pool2d(x: Any, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid") -> Any:
    """Average pooling of NHWC `x` (zero padding counts in the average with 'same')."""
    return _pool(x, pool_size, strides, padding, "avg_pool2d", "mean")


def max_pool2d(x: Any, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid") -> Any:
    """Max pooling of NHWC `x`."""
    return _pool(x, pool_size, strides, padding, "max_pool2d", "max")


# -- activations and losses ---------------------------------------------------------------------


# Each function checks its inputs before its first operation: a rejected call records nothing on
# a lazy device (the checks of the standard functions it is composed of would come too late).


def relu(x: Any) -> Any:
    """max(x, 0), with NaN kept, +0 for -0, and derivative 0 at 0 (as Swift for TensorFlow's
    seed, JAX and PyTorch: `where` routes no gradient to the zeros it selects, where `maximum`'s
    rule would send a tie's gradient to `x`: on MNIST's blank borders, zero patches meet zero
    biases, and the convolution biases would learn from them)."""
    xp = _check_input(x, "relu", category="real numeric")
    return xp.where(x <= 0, 0.0 if xp.isdtype(x.dtype, "real floating") else 0, x)


def log_softmax(logits: Any, axis: int = -1) -> Any:
    """The logarithm of the softmax of `logits` along `axis`, computed stably."""
    xp = _check_input(logits, "log_softmax", "logits")
    _check_axis(axis, logits.ndim, "log_softmax")
    return _log_softmax(xp, logits, axis)


def _log_softmax(xp: Any, logits: Any, axis: int) -> Any:
    shifted = logits - xp.max(logits, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def softmax(logits: Any, axis: int = -1) -> Any:
    """The softmax of `logits` along `axis`: exponentials normalized to sum to 1 (computed stably)."""
    xp = _check_input(logits, "softmax", "logits")
    _check_axis(axis, logits.ndim, "softmax")
    return xp.exp(_log_softmax(xp, logits, axis))


def softmax_cross_entropy(logits: Any, labels: Any) -> Any:
    """Mean cross-entropy of (N, K) `logits` against integer class `labels` (N,)."""
    xp = _check_input(logits, "softmax_cross_entropy", "logits")
    _check_input(labels, "softmax_cross_entropy", "labels", category=None)
    if logits.ndim != 2 or labels.ndim != 1 or labels.shape[0] != logits.shape[0]:
        raise ValueError(
            f"softmax_cross_entropy: expected logits (N, K) and labels (N,), got {logits.shape} and {labels.shape}"
        )
    if not xp.isdtype(labels.dtype, "integral"):
        raise TypeError(f"softmax_cross_entropy: labels must be integers, got {labels.dtype}")
    if labels.device != logits.device:
        raise ValueError(
            f"softmax_cross_entropy: logits and labels are on different devices ({logits.device!r} and"
            f" {labels.device!r}); copy them explicitly with to_device()"
        )
    classes = xp.arange(logits.shape[1], dtype=labels.dtype, device=labels.device)
    onehot = xp.astype(xp.expand_dims(labels, axis=1) == classes, logits.dtype)
    return -xp.sum(onehot * _log_softmax(xp, logits, -1)) / logits.shape[0]
