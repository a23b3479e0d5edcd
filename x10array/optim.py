"""Optimizers as small `init` / `update` pairs over pytrees, written against the standard.

    opt = SGD(learning_rate=0.1, momentum=0.9)
    state = opt.init(model)
    model, state = opt.update(model, grads, state)

The state is a pytree of arrays on the parameters' device; `x10array.nn.to_device(state, d)`
moves it with the model (Swift for TensorFlow's `SGD(copying:to:)`). Python-number
hyperparameters enter lazy graphs as inputs, so a learning-rate schedule does not recompile. Every number that
changes from step to step is an array of the state (Adam's `step` and its powers
`beta1_power`, `beta2_power`), never a Python int: under `x10array.compile` a step replays
instead of recording a new signature every call.
"""

from __future__ import annotations

import math
from typing import Any

from .extend import tree_flatten, tree_unflatten

__all__ = ["SGD", "Adam", "AdamW"]


def _check(value: float, name: str, owner: str, low: float = 0.0) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < low:
        raise ValueError(f"{owner}: {name} must be a finite number >= {low}, got {value!r}")
    return float(value)


def _positive(value: float, name: str, owner: str) -> float:
    value = _check(value, name, owner)
    if value == 0:
        raise ValueError(f"{owner}: {name} must be a finite number > 0, got {value!r}")
    return value


def _zeros_like(p: Any) -> Any:
    return p.__array_namespace__().zeros_like(p)


def _leaves(params: Any, owner: str) -> list[Any]:
    """The arrays of a parameter pytree; TypeError for a leaf that is not an array."""
    leaves, _ = tree_flatten(params)
    for leaf in leaves:
        if not hasattr(leaf, "__array_namespace__"):
            raise TypeError(f"{owner}: the parameters must be a pytree of arrays, found a {type(leaf).__name__}")
    return leaves


def _check_update(
    owner: str, params: Any, grads: Any, state: Any, keys: tuple[str, ...]
) -> tuple[list[Any], Any, list[Any]]:
    """(parameter leaves, treedef, gradient leaves) after checking all three arguments agree."""
    leaves = _leaves(params, owner)
    _, treedef = tree_flatten(params)
    gleaves = _leaves(grads, owner)
    if len(gleaves) != len(leaves):
        raise ValueError(f"{owner}: {len(gleaves)} gradients for {len(leaves)} parameters")
    for p, g in zip(leaves, gleaves):
        if getattr(g, "shape", None) != p.shape:
            raise ValueError(f"{owner}: a gradient of shape {g.shape} for a parameter of shape {p.shape}")
    if not isinstance(state, dict) or not all(k in state for k in keys):
        raise TypeError(f"{owner}: state must be the dict that init() returned, got {type(state).__name__}")
    return leaves, treedef, gleaves


class SGD:
    """Stochastic gradient descent with optional momentum, Nesterov momentum, weight decay."""

    def __init__(
        self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False, weight_decay: float = 0.0
    ):
        self.learning_rate = _check(learning_rate, "learning_rate", "SGD")
        self.momentum = _check(momentum, "momentum", "SGD")
        self.weight_decay = _check(weight_decay, "weight_decay", "SGD")
        if not isinstance(nesterov, bool):
            raise TypeError(f"SGD: nesterov must be a bool, got {type(nesterov).__name__}")
        if nesterov and self.momentum == 0:
            raise ValueError("SGD: nesterov=True needs a momentum > 0")
        self.nesterov = bool(nesterov)

    def init(self, params: Any) -> dict[str, Any]:
        leaves = _leaves(params, "SGD.init")
        return {"velocity": [_zeros_like(p) for p in leaves] if self.momentum else []}

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        leaves, treedef, gleaves = _check_update("SGD.update", params, grads, state, ("velocity",))
        if self.momentum and len(state["velocity"]) != len(leaves):
            raise ValueError(
                f"SGD.update: the state holds {len(state['velocity'])} velocities for {len(leaves)} parameters"
            )
        lr, mu, wd = self.learning_rate, self.momentum, self.weight_decay
        new, velocity = [], []
        for i, (p, g) in enumerate(zip(leaves, gleaves)):
            if wd:
                g = g + wd * p
            if mu:
                v = mu * state["velocity"][i] + g
                velocity.append(v)
                g = g + mu * v if self.nesterov else v
            new.append(p - lr * g)
        return tree_unflatten(treedef, new), {"velocity": velocity}


class Adam:
    """Adam (Kingma & Ba); `AdamW` decouples the weight decay."""

    decoupled = False

    def __init__(
        self,
        learning_rate: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        name = type(self).__name__
        self.learning_rate = _check(learning_rate, "learning_rate", name)
        self.beta1 = _check(beta1, "beta1", name)
        self.beta2 = _check(beta2, "beta2", name)
        if not (self.beta1 < 1 and self.beta2 < 1):
            raise ValueError(f"{name}: beta1 and beta2 must be below 1")
        self.eps = _positive(eps, "eps", name)
        self.weight_decay = _check(weight_decay, "weight_decay", name)

    def init(self, params: Any) -> dict[str, Any]:
        leaves = _leaves(params, f"{type(self).__name__}.init")
        state = {"step": 0, "m": [_zeros_like(p) for p in leaves], "v": [_zeros_like(p) for p in leaves]}
        return _with_counters(state, leaves, self.beta1, self.beta2)

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        owner = f"{type(self).__name__}.update"
        leaves, treedef, gleaves = _check_update(owner, params, grads, state, ("step", "m", "v"))
        if len(state["m"]) != len(leaves) or len(state["v"]) != len(leaves):
            raise ValueError(f"{owner}: the state holds moments for {len(state['m'])} parameters, not {len(leaves)}")
        b1, b2, lr, wd = self.beta1, self.beta2, self.learning_rate, self.weight_decay
        state = _with_counters(state, leaves, b1, b2)  # (a state of before: Python numbers)
        # The step and the powers beta**step are arrays, data of a lazy graph and of a
        # captured step (a Python int would be part of x10array.compile's signature: a new
        # program every step). The powers are running products in float64, exact on every
        # tier; each bias correction is rounded once to the parameter's dtype, as a Python
        # float meeting the array was.
        step = state["step"] + 1
        power1, power2 = state["beta1_power"] * b1, state["beta2_power"] * b2
        corrections: dict[Any, tuple[Any, Any]] = {}
        new, ms, vs = [], [], []
        for p, g, m, v in zip(leaves, gleaves, state["m"], state["v"]):
            xp = p.__array_namespace__()
            if p.dtype not in corrections:
                corrections[p.dtype] = _corrections(xp, power1, power2, p.dtype)
            c1, c2 = corrections[p.dtype]
            if wd and not self.decoupled:
                g = g + wd * p
            m = b1 * m + (1.0 - b1) * g
            v = b2 * v + (1.0 - b2) * (g * g)
            update = (m / c1) / (xp.sqrt(v / c2) + self.eps)
            if wd and self.decoupled:
                update = update + wd * p
            new.append(p - lr * update)
            ms.append(m)
            vs.append(v)
        state = {"step": step, "m": ms, "v": vs, "beta1_power": power1, "beta2_power": power2}
        return tree_unflatten(treedef, new), state


def _with_counters(state: dict[str, Any], leaves: list[Any], b1: float, b2: float) -> dict[str, Any]:
    """`state` with its step and the powers beta1**step, beta2**step as 0-d arrays on the
    parameters' device (float64 where the device has it). A state whose step is a Python int
    (made by init() before the step was an array, or with no parameters at all) gets them
    computed from it; without parameters they stay Python numbers."""
    step = state["step"]
    if not isinstance(step, int) or isinstance(step, bool):
        return state
    if not leaves:
        return {**state, "beta1_power": b1**step, "beta2_power": b2**step}
    p = leaves[0]
    xp = p.__array_namespace__()
    info = xp.__array_namespace_info__()
    wide = xp.float64 if "float64" in info.dtypes(device=p.device, kind="real floating") else xp.float32
    return {
        **state,
        "step": xp.asarray(step, dtype=info.default_dtypes(device=p.device)["integral"], device=p.device),
        "beta1_power": xp.asarray(b1**step, dtype=wide, device=p.device),
        "beta2_power": xp.asarray(b2**step, dtype=wide, device=p.device),
    }


def _corrections(xp: Any, power1: Any, power2: Any, dtype: Any) -> tuple[Any, Any]:
    """The bias corrections 1 - beta**step in `dtype`: computed in the powers' dtype, rounded once."""
    if not hasattr(power1, "__array_namespace__"):  # (Python numbers: no parameters)
        return 1.0 - power1, 1.0 - power2
    c1, c2 = 1.0 - power1, 1.0 - power2
    if c1.dtype == dtype:
        return c1, c2
    return xp.astype(c1, dtype), xp.astype(c2, dtype)


class AdamW(Adam):
    """Adam with the weight decay decoupled from the gradient (Loshchilov and Hutter): subtracted from the weights."""

    decoupled = True

    def __init__(
        self,
        learning_rate: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):  # its own signature, so that Python's argument errors name AdamW
        super().__init__(learning_rate, beta1, beta2, eps, weight_decay)
