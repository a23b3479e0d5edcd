"""Layers as pytrees: a `Module`'s arrays are its parameters; everything else is static.

Modules work with any conforming namespace: they create their parameters with the `xp` they
are given (default x10array) and compute with the namespace of their input, so
`grad(loss)(model, ...)` differentiates them on x10array eager, lazy or array-api-strict.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import extend
from ..extend import tree_flatten, tree_map
from . import functional as F

__all__ = [
    "Module", "Dense", "Conv2D", "AvgPool2D", "MaxPool2D", "Flatten", "Sequential", "LeNet",
    "glorot_uniform", "learning_phase", "set_learning_phase", "phase", "to_device",
]  # fmt: skip


# -- learning phase (Swift for TensorFlow's Context.local.learningPhase) ----------------


class _Phase(threading.local):
    value = "inference"


_phase = _Phase()


def learning_phase() -> str:
    """'training' or 'inference' (thread-local; layers such as dropout read it)."""
    return _phase.value


def set_learning_phase(value: str) -> None:
    """Set the learning phase ("training" or "inference") for the rest of the process."""
    if value not in ("training", "inference"):
        raise ValueError(f"set_learning_phase: expected 'training' or 'inference', got {value!r}")
    _phase.value = value


def phase(value: str) -> contextlib.AbstractContextManager[None]:
    """`with nn.phase("training"): ...` sets the learning phase for a block."""
    if value not in ("training", "inference"):
        raise ValueError(f"phase: expected 'training' or 'inference', got {value!r}")
    return _phase_block(value)


@contextlib.contextmanager
def _phase_block(value: str) -> Iterator[None]:
    old = learning_phase()
    set_learning_phase(value)
    try:
        yield
    finally:
        _phase.value = old


# -- the module base ---------------------------------------------------------------------------


def _is_array(value: Any) -> bool:
    return hasattr(value, "__array_namespace__")


def _holds_arrays(value: Any) -> bool:
    if _is_array(value) or isinstance(value, Module):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_arrays(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_arrays(v) for v in value.values())
    return False


class Module:
    """A layer: attributes holding arrays (or modules) are parameters, the rest is static."""

    def tree_flatten(self) -> tuple[list[Any], tuple[Any, ...]]:
        # (one pass, each attribute read once: a captured step flattens its model at every call)
        dynamic: list[str] = []
        children: list[Any] = []
        static: list[tuple[str, Any]] = []
        for n in sorted(vars(self)):
            value = getattr(self, n)
            if _holds_arrays(value):
                dynamic.append(n)
                children.append(value)
            else:
                static.append((n, value))
        return children, (tuple(dynamic), tuple(static))

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], children: list[Any]) -> Module:
        dynamic, static = aux
        obj = object.__new__(cls)
        for name, value in static:
            object.__setattr__(obj, name, value)
        for name, value in zip(dynamic, children):
            object.__setattr__(obj, name, value)
        return obj

    def parameters(self) -> list[Any]:
        return tree_flatten(self)[0]

    def move(self, to: Any) -> Module:
        """A copy of this module with every parameter on device `to` (Swift for TensorFlow's move(to:))."""
        return to_device(self, to)

    def __call__(self, x: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define __call__")

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{k}={getattr(v, 'shape', v)!r}" if _is_array(v) else f"{k}={v!r}" for k, v in sorted(vars(self).items())
        )
        return f"{type(self).__name__}({fields})"


def to_device(tree: Any, device: Any) -> Any:
    """Copy every array of a pytree (model, optimizer state, batch) to `device`."""
    return tree_map(lambda a: a.to_device(device) if _is_array(a) else a, tree)


def _positive_int(value: Any, owner: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise (ValueError if isinstance(value, (int, np.integer)) else TypeError)(
            f"{owner}: {arg} must be a positive int, got {value!r}"
        )
    return int(value)


def _check_creation(owner: str, seed: Any, xp: Any, device: Any, dtype: Any) -> None:
    """The arguments a layer creates its parameters with, checked before anything is created."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{owner}: seed must be an int, got {type(seed).__name__}")
    if dtype is not None:
        try:
            floating = xp.isdtype(dtype, "real floating")
        except (TypeError, ValueError):
            floating = False
        if not floating:
            raise TypeError(f"{owner}: dtype must be a real floating-point dtype of the namespace, got {dtype!r}")
    if device is not None and getattr(xp, "__name__", None) == "x10array":
        extend.resolve_device(device, owner)


def glorot_uniform(
    shape: tuple[int, ...], fan_in: int, fan_out: int, *, seed: int, xp: Any, device: Any, dtype: Any
) -> Any:
    """Glorot (Xavier) uniform initialization from a seeded NumPy generator."""
    if not isinstance(shape, tuple):
        raise TypeError(f"glorot_uniform: shape must be a tuple of ints, got {type(shape).__name__}")
    for d in shape:
        _positive_int(d, "glorot_uniform", "shape")
    fan_in = _positive_int(fan_in, "glorot_uniform", "fan_in")
    fan_out = _positive_int(fan_out, "glorot_uniform", "fan_out")
    _check_creation("glorot_uniform", seed, xp, device, dtype)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    host = np.random.default_rng(seed).uniform(-limit, limit, size=shape)
    return xp.asarray(host, dtype=dtype, device=device)


def _namespace(xp: Any) -> Any:
    if xp is None:
        import x10array

        return x10array
    return xp


def _activation(name: Any, owner: str = "activation") -> Callable[[Any], Any] | None:
    if name is None or callable(name):
        return name
    if name == "relu":
        return F.relu
    raise ValueError(f"{owner}: unknown activation {name!r}; pass None, 'relu' or a function")


class Dense(Module):
    """`activation(x @ weight + bias)`."""

    def __init__(
        self, in_features: int, out_features: int, activation: Any = None, *, seed: int = 0,
        xp: Any = None, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        xp = _namespace(xp)
        in_features = _positive_int(in_features, "Dense", "in_features")
        out_features = _positive_int(out_features, "Dense", "out_features")
        _activation(activation, "Dense")
        _check_creation("Dense", seed, xp, device, dtype)
        dtype = dtype or xp.float32
        self.weight = glorot_uniform(
            (in_features, out_features), in_features, out_features, seed=seed, xp=xp, device=device, dtype=dtype
        )
        self.bias = xp.zeros((out_features,), dtype=dtype, device=device)
        self.activation = activation

    def __call__(self, x: Any) -> Any:
        xp = F._check_input(x, "Dense", category="real floating")
        if x.ndim < 1 or x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"Dense: expected inputs (..., {self.weight.shape[0]}), got shape {x.shape}")
        if x.device != self.weight.device:
            raise ValueError(
                f"Dense: the input is on {x.device!r} but the layer's parameters on {self.weight.device!r};"
                " move one of them with to_device() (a model with model.move(to=...))"
            )
        y = xp.matmul(x, self.weight) + self.bias
        act = _activation(self.activation)
        return act(y) if act else y


class Conv2D(Module):
    """`activation(conv2d(x, filter) + bias)`, NHWC input, HWIO filter."""

    def __init__(
        self, filter_shape: tuple[int, int, int, int], padding: str = "valid", activation: Any = None, *,
        strides: Any = (1, 1), seed: int = 0, xp: Any = None, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        xp = _namespace(xp)
        if not isinstance(filter_shape, (tuple, list)) or len(filter_shape) != 4:
            raise ValueError(
                f"Conv2D: filter_shape must be (height, width, in channels, out channels), got {filter_shape!r}"
            )
        kh, kw, cin, cout = (_positive_int(d, "Conv2D", "filter_shape") for d in filter_shape)
        F._check_padding(padding, "Conv2D")
        strides = F._pair(strides, "Conv2D", "strides")
        _activation(activation, "Conv2D")
        _check_creation("Conv2D", seed, xp, device, dtype)
        dtype = dtype or xp.float32
        self.filter = glorot_uniform(
            tuple(filter_shape), kh * kw * cin, kh * kw * cout, seed=seed, xp=xp, device=device, dtype=dtype
        )
        self.bias = xp.zeros((cout,), dtype=dtype, device=device)
        self.padding = padding
        self.strides = tuple(strides)
        self.activation = activation

    def __call__(self, x: Any) -> Any:
        y = F.conv2d(x, self.filter, strides=self.strides, padding=self.padding) + self.bias
        act = _activation(self.activation)
        return act(y) if act else y


class AvgPool2D(Module):
    """Average pooling over windows of NHWC images (`pool_size`, `strides`, `padding`); no parameters."""

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid") -> None:
        F._pair(pool_size, "AvgPool2D", "pool_size")
        if strides is not None:
            F._pair(strides, "AvgPool2D", "strides")
        F._check_padding(padding, "AvgPool2D")
        self.pool_size, self.strides, self.padding = pool_size, strides, padding

    def __call__(self, x: Any) -> Any:
        return F.avg_pool2d(x, self.pool_size, self.strides, self.padding)


class MaxPool2D(Module):
    """Max pooling over windows of NHWC images (`pool_size`, `strides`, `padding`); no parameters."""

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid") -> None:
        F._pair(pool_size, "MaxPool2D", "pool_size")
        if strides is not None:
            F._pair(strides, "MaxPool2D", "strides")
        F._check_padding(padding, "MaxPool2D")
        self.pool_size, self.strides, self.padding = pool_size, strides, padding

    def __call__(self, x: Any) -> Any:
        return F.max_pool2d(x, self.pool_size, self.strides, self.padding)


class Flatten(Module):
    """Flattens each example of a batch to one dimension (`(n, h, w, c)` to `(n, h * w * c)`)."""

    def __call__(self, x: Any) -> Any:
        xp = x.__array_namespace__()
        return xp.reshape(x, (x.shape[0], -1))


class Sequential(Module):
    """Layers applied one after the other: `Sequential(Dense(784, 128, nn.relu), Dense(128, 10))(x)`; a pytree."""

    def __init__(self, *layers: Module) -> None:
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"{type(self).__name__}: layer {i} must be a Module or a function, got {layer!r}")
        self.layers = list(layers)

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x


class LeNet(Sequential):
    """LeNet-5 as in Swift for TensorFlow's models: conv 5x5x6 same + relu, avg-pool 2,
    conv 5x5x16 valid + relu, avg-pool 2, flatten, dense 400-120-84-10 (relu, relu, logits)."""

    def __init__(self, *, seed: int = 0, xp: Any = None, device: Any = None, dtype: Any = None) -> None:
        _check_creation("LeNet", seed, _namespace(xp), device, dtype)
        kw = {"xp": xp, "device": device, "dtype": dtype}
        super().__init__(
            Conv2D((5, 5, 1, 6), padding="same", activation="relu", seed=seed, **kw),
            AvgPool2D((2, 2), (2, 2)),
            Conv2D((5, 5, 6, 16), activation="relu", seed=seed + 1, **kw),
            AvgPool2D((2, 2), (2, 2)),
            Flatten(),
            Dense(400, 120, activation="relu", seed=seed + 2, **kw),
            Dense(120, 84, activation="relu", seed=seed + 3, **kw),
            Dense(84, 10, seed=seed + 4, **kw),
        )
