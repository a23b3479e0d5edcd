"""Bad input, systematically: every public function, eager and lazy, rejected at the call.

A table of cases over every public callable of the namespace, `linalg`, `fft`, `nn`,
`nn.functional`, `optim`, `autodiff`, `datasets` and `checkpoint`. Most cases are generated
from the functions' signatures (`inspect.signature` and the parameters' names, which follow the
standard's: `x`, `x1`, `axis`, `dtype`, `device`, ...) so that a new function is covered as
soon as it has a valid baseline call in BASE; the rest are written by hand (NaN/inf where not
allowed, wrong ranks for the matrix functions, hyperparameters, pytrees, files).

Two kinds of case, each run on the eager device and on the lazy (XLA) device:

- *must raise* (wrong types, None, str, list, NumPy arrays where not allowed, wrong dtype
  objects, out-of-range or non-int axes, bad devices, arrays on mixed devices, NaN/inf, bad
  options): the call raises TypeError / ValueError / IndexError whose message starts with the
  function's name, with the same type and the same message (device names aside) on both
  devices, at the call; on the lazy device nothing is recorded (`x10array.metrics()` and the
  lazy device's live list are unchanged).
- *probe* (every array argument in each dtype kind, at rank 0, 1 and 3, and empty): the two
  devices agree: both accept (same result shapes and dtypes, and the lazy graph runs at the
  barrier), or both reject at the call as above.

Cases (counted by `test_case_count`): 2189 must-raise and 1467 probe cases, 3656 in all, over
226 public callables, each run on both devices.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from _standard_names import CHAPTERS

import x10array as xp
from x10array import autodiff, checkpoint, datasets, fft, linalg, nn, optim
from x10array._backends.lazy import graph as _graph
from x10array.nn import functional as F

EAGER = (xp.Device("cpu", 0), xp.Device("cpu", 1))
LAZY = (xp.Device("cpu", 0, "xla"), xp.Device("cpu", 1, "xla"))
MODES = {"eager": EAGER, "lazy": LAZY}
TYPE = (TypeError,)
VALUE = (ValueError,)
AXIS = (IndexError, ValueError)
ANY = (TypeError, ValueError, IndexError)

# -- values that are made on the device of the mode ---------------------------------------------


@dataclass(frozen=True)
class Arr:
    """An array to be made on the mode's device `dev` (0 or 1), or on the other mode's (`other`)."""

    kind: str = "f"  # f float64, g float32, i int64, n int64 in {0, 1} (indices), b bool, c complex128
    shape: tuple[int, ...] = (3, 3)
    dev: int = 0
    other: bool = False


def _values(kind: str, shape: tuple[int, ...]) -> np.ndarray:
    size = math.prod(shape)
    base = (np.arange(size, dtype=np.float64) + 1) / (size + 1)
    if len(shape) >= 2 and shape[-1] == shape[-2] and size:
        m = base.reshape(shape)
        base = ((m + np.swapaxes(m, -1, -2)) / 2 + 3 * np.eye(shape[-1])).reshape(-1)  # symmetric positive definite
    if kind in "fg":
        return base.reshape(shape).astype(np.float64 if kind == "f" else np.float32)
    if kind == "c":
        return (base + 0.5j * base).reshape(shape)
    if kind == "i":
        return (np.arange(size) % 3).reshape(shape).astype(np.int64)
    if kind == "n":
        return (np.arange(size) % 2).reshape(shape).astype(np.int64)
    if kind == "b":
        return (np.arange(size) % 2 == 0).reshape(shape)
    raise AssertionError(kind)


def make(value: Any, devices: tuple[xp.Device, xp.Device], other: tuple[xp.Device, xp.Device]) -> Any:
    if isinstance(value, Arr):
        device = (other if value.other else devices)[value.dev]
        return xp.asarray(_values(value.kind, value.shape), device=device)
    if isinstance(value, list):
        return [make(v, devices, other) for v in value]
    if isinstance(value, tuple):
        return tuple(make(v, devices, other) for v in value)
    if isinstance(value, dict):
        return {k: make(v, devices, other) for k, v in value.items()}
    if isinstance(value, Thunk):
        return value.fn(devices)
    return value


@dataclass(frozen=True)
class Thunk:
    """Anything else built per mode (a model, an optimizer state): fn(devices) -> value."""

    fn: Callable[[tuple[xp.Device, xp.Device]], Any]
    label: str = "thunk"

    def __repr__(self) -> str:
        return self.label


# -- the table ---------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    fname: str  # the name the message must start with
    func: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    expect: tuple | None = ANY  # None: a probe (either both accept or both reject alike)
    newcomer: bool = False  # one of issue 14's items (fixed with it)
    user_code: bool = False  # the rejection comes after the user's function ran (and recorded its work)


def _public(module: Any, prefix: str) -> dict[str, Any]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = {}
    for name in names:
        obj = getattr(module, name)
        if callable(obj) and not isinstance(obj, type(xp.float64)) and not isinstance(obj, type(inspect)):
            out[prefix + name] = obj
    return out


def _entered(cm: Callable[..., Any]) -> Callable[..., Any]:
    """A context-manager function as its `with` statement: entered and left at once."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with cm(*args, **kwargs) as value:
            return value

    call.__signature__ = inspect.signature(cm)  # type: ignore[attr-defined]
    call.__name__ = cm.__name__
    return call


PUBLIC: dict[str, Any] = {}
for _module, _prefix in (
    (xp, ""), (linalg, "linalg."), (fft, "fft."), (nn, "nn."), (F, "nn.functional."), (optim, "optim."),
    (autodiff, "autodiff."), (datasets, "datasets."), (checkpoint, "checkpoint."),
):  # fmt: skip
    PUBLIC.update(_public(_module, _prefix))
CONTEXT_MANAGERS = {"device_scope", "nn.phase", "transfer_guard"}
for _name in CONTEXT_MANAGERS:
    PUBLIC[_name] = _entered(PUBLIC[_name])

# Callables that take no input worth corrupting, or are not functions of data.
EXEMPT = {
    "Backend": "an enum (its values are checked by Device)",
    "DeviceKind": "an enum (its values are checked by Device)",
    "Array": "not constructible by users (test_errors: Array-constructor)",
    "metrics": "no parameters",
    "reset_metrics": "no parameters",
    "nn.Module": "an abstract base class",
    "nn.learning_phase": "no parameters",
    "datasets.DownloadError": "an exception class",
    "TransferGuardError": "an exception class",
}

# A valid call for every function: (args, kwargs). Unary and binary elementwise functions are
# filled in from the standard's chapter below.
F33, F3, I3, B33, C33 = Arr("f"), Arr("f", (3,)), Arr("i", (3,)), Arr("b"), Arr("c")
IMG = Arr("g", (2, 6, 6, 1))  # NHWC float32
KERNEL = Arr("g", (3, 3, 1, 2))  # HWIO


def _model(devices: Any) -> Any:
    return nn.Dense(3, 2, seed=0, device=devices[0])


def _sgd_state(devices: Any) -> Any:
    return optim.SGD(0.1, momentum=0.9).init(_model(devices))


MODEL = Thunk(_model, "Dense(3, 2)")
DENSE = nn.Dense(3, 2)  # only called with inputs that are refused before its parameters are read


def _square(x: Any) -> Any:
    return x.__array_namespace__().sum(x * x)


def _idx(shape: tuple[int, ...] = (2, 3)) -> bytes:
    import struct

    return struct.pack(">HBB", 0, 8, len(shape)) + struct.pack(f">{len(shape)}I", *shape) + bytes(math.prod(shape))


BASE: dict[str, tuple[tuple, dict]] = {
    # creation
    "arange": ((5,), {}),
    "asarray": (([1.0, 2.0],), {}),
    "empty": (((2, 3),), {}),
    "empty_like": ((F33,), {}),
    "eye": ((3,), {}),
    "from_dlpack": ((F33,), {}),
    "full": (((2, 3), 1.5), {}),
    "full_like": ((F33, 1.5), {}),
    "linspace": ((0.0, 1.0, 5), {}),
    "meshgrid": ((F3, F3), {}),
    "ones": (((2, 3),), {}),
    "ones_like": ((F33,), {}),
    "tril": ((F33,), {}),
    "triu": ((F33,), {}),
    "zeros": (((2, 3),), {}),
    "zeros_like": ((F33,), {}),
    # data types
    "astype": ((F33, xp.float32), {}),
    "can_cast": ((xp.int8, xp.int16), {}),
    "finfo": ((xp.float32,), {}),
    "iinfo": ((xp.int8,), {}),
    "isdtype": ((xp.float32, "real floating"), {}),
    "result_type": ((xp.int8, xp.int16), {}),
    # elementwise with options
    "clip": ((F33,), {"min": 0.2, "max": 0.8}),
    # indexing
    "take": ((F3, Arr("n", (2,))), {}),
    "take_along_axis": ((F33, Arr("n", (3, 1))), {"axis": 1}),
    # linear algebra
    "matmul": ((F33, F33), {}),
    "matrix_transpose": ((F33,), {}),
    "tensordot": ((F33, F33), {}),
    "vecdot": ((F33, F33), {}),
    # manipulation
    "broadcast_arrays": ((F33, F3), {}),
    "broadcast_shapes": (((2, 3), (3,)), {}),
    "broadcast_to": ((F3, (2, 3)), {}),
    "concat": (([F33, F33],), {}),
    "expand_dims": ((F33,), {"axis": 0}),
    "flip": ((F33,), {}),
    "moveaxis": ((F33, 0, 1), {}),
    "permute_dims": ((F33, (1, 0)), {}),
    "repeat": ((F33, 2), {}),
    "reshape": ((F33, (9,)), {}),
    "roll": ((F33, 1), {}),
    "squeeze": ((Arr("f", (1, 3)),), {"axis": 0}),
    "stack": (([F33, F33],), {}),
    "tile": ((F33, (2, 1)), {}),
    "unstack": ((F33,), {}),
    # searching, sets, sorting, statistics, utilities
    "argmax": ((F33,), {}),
    "argmin": ((F33,), {}),
    "count_nonzero": ((F33,), {}),
    "nonzero": ((F33,), {}),
    "searchsorted": ((F3, F3), {}),
    "where": ((B33, F33, F33), {}),
    "isin": ((Arr("i"), I3), {}),
    "unique_all": ((F33,), {}),
    "unique_counts": ((F33,), {}),
    "unique_inverse": ((F33,), {}),
    "unique_values": ((F33,), {}),
    "argsort": ((F33,), {}),
    "sort": ((F33,), {}),
    "cumulative_prod": ((F3,), {}),
    "cumulative_sum": ((F3,), {}),
    "max": ((F33,), {}),
    "mean": ((F33,), {}),
    "min": ((F33,), {}),
    "prod": ((F33,), {}),
    "std": ((F33,), {}),
    "sum": ((F33,), {}),
    "var": ((F33,), {}),
    "all": ((B33,), {}),
    "any": ((B33,), {}),
    "diff": ((F33,), {}),
    # x10array's own
    "Device": (("cpu", 0), {}),
    "device_scope": ((xp.Device("cpu", 0),), {}),
    "lazy_barrier": ((), {}),
    "metrics_report": ((), {"file": Thunk(lambda d: __import__("io").StringIO(), "StringIO()")}),
    "compile": ((_square,), {}),
    "set_cpu_kernels": (("numpy",), {}),
    "transfer_guard": (("allow",), {}),
    # linalg
    "linalg.cholesky": ((F33,), {}),
    "linalg.cross": ((F33, F33), {}),
    "linalg.det": ((F33,), {}),
    "linalg.diagonal": ((F33,), {}),
    "linalg.eig": ((F33,), {}),
    "linalg.eigh": ((F33,), {}),
    "linalg.eigvals": ((F33,), {}),
    "linalg.eigvalsh": ((F33,), {}),
    "linalg.inv": ((F33,), {}),
    "linalg.matmul": ((F33, F33), {}),
    "linalg.matrix_norm": ((F33,), {}),
    "linalg.matrix_power": ((F33, 2), {}),
    "linalg.matrix_rank": ((F33,), {}),
    "linalg.matrix_transpose": ((F33,), {}),
    "linalg.outer": ((F3, F3), {}),
    "linalg.pinv": ((F33,), {}),
    "linalg.qr": ((F33,), {}),
    "linalg.slogdet": ((F33,), {}),
    "linalg.solve": ((F33, F33), {}),
    "linalg.svd": ((F33,), {}),
    "linalg.svdvals": ((F33,), {}),
    "linalg.tensordot": ((F33, F33), {}),
    "linalg.trace": ((F33,), {}),
    "linalg.vecdot": ((F33, F33), {}),
    "linalg.vector_norm": ((F33,), {}),
    # fft
    "fft.fft": ((C33,), {}),
    "fft.fftfreq": ((4,), {}),
    "fft.fftn": ((C33,), {}),
    "fft.fftshift": ((F33,), {}),
    "fft.hfft": ((C33,), {}),
    "fft.ifft": ((C33,), {}),
    "fft.ifftn": ((C33,), {}),
    "fft.ifftshift": ((F33,), {}),
    "fft.ihfft": ((F33,), {}),
    "fft.irfft": ((C33,), {}),
    "fft.irfftn": ((C33,), {}),
    "fft.rfft": ((F33,), {}),
    "fft.rfftfreq": ((4,), {}),
    "fft.rfftn": ((F33,), {}),
    # nn
    "nn.AvgPool2D": (((2, 2),), {}),
    "nn.Conv2D": (((3, 3, 1, 2),), {}),
    "nn.Dense": ((3, 2), {}),
    "nn.Flatten": ((), {}),
    "nn.LeNet": ((), {}),
    "nn.MaxPool2D": (((2, 2),), {}),
    "nn.Sequential": ((nn.Flatten(),), {}),
    "nn.glorot_uniform": (((3, 2), 3, 2), {"seed": 0, "xp": xp, "device": None, "dtype": xp.float32}),
    "nn.phase": (("training",), {}),
    "nn.relu": ((F33,), {}),
    "nn.set_learning_phase": (("inference",), {}),
    "nn.softmax": ((F33,), {}),
    "nn.softmax_cross_entropy": ((F33, Arr("n", (3,))), {}),
    "nn.to_device": (([F3],), {"device": xp.Device("cpu", 0)}),
    "nn.functional.avg_pool2d": ((IMG,), {}),
    "nn.functional.conv2d": ((IMG, KERNEL), {}),
    "nn.functional.log_softmax": ((F33,), {}),
    "nn.functional.max_pool2d": ((IMG,), {}),
    "nn.functional.relu": ((F33,), {}),
    "nn.functional.softmax": ((F33,), {}),
    "nn.functional.softmax_cross_entropy": ((F33, Arr("n", (3,))), {}),
    # optim
    "optim.SGD": ((), {"learning_rate": 0.1}),
    "optim.Adam": ((), {"learning_rate": 0.1}),
    "optim.AdamW": ((), {"learning_rate": 0.1}),
    # autodiff
    "autodiff.defvjp": (("bad_input_test_rule",), {}),
    "autodiff.grad": ((_square,), {}),
    "autodiff.value_and_grad": ((_square,), {}),
    "autodiff.vjp": ((_square, F3), {}),
    "autodiff.tree_flatten": (([F3, F3],), {}),
    "autodiff.tree_map": ((lambda a: a, [F3]), {}),
    "autodiff.tree_unflatten": ((autodiff.tree_flatten([1, 2])[1], [3, 4]), {}),
    # datasets
    "datasets.MNIST": ((8,), {"data_dir": "/nonexistent-x10array-data", "download": False}),
    "datasets.read_idx": ((_idx(),), {}),
    "datasets.read_idx_file": (("/nonexistent-x10array-data/x.idx",), {}),
    # checkpoint (its trees and files: tests/test_checkpoint.py)
    "checkpoint.save": (("/nonexistent-x10array-data/x.safetensors", {"w": F3}), {}),
    "checkpoint.load": (("/nonexistent-x10array-data/x.safetensors",), {}),
}
# calls that raise even when valid because of their environment (no such file): only their
# generated type errors are run, not their baseline
BASE_RAISES = {"datasets.MNIST", "datasets.read_idx_file", "checkpoint.save", "checkpoint.load"}

_BITWISE = {n for n in CHAPTERS["elementwise_functions"] if n.startswith("bitwise_")}
_LOGICAL = {n for n in CHAPTERS["elementwise_functions"] if n.startswith("logical_")}
for _name in CHAPTERS["elementwise_functions"]:
    if _name in BASE:
        continue
    _params = list(inspect.signature(getattr(xp, _name)).parameters)
    _kind = "i" if _name in _BITWISE else "b" if _name in _LOGICAL else "f"
    BASE[_name] = (tuple(Arr(_kind) for _ in _params), {})

# -- generated cases ---------------------------------------------------------------------------

ARRAY_PARAMS = {"x", "x1", "x2", "condition", "indices", "logits", "labels", "filter", "obj", "from_", "type"}
OPTIONAL_ARRAYS = {"prepend", "append", "sorter"}
AXIS_PARAMS = {"axis", "source", "destination"}
TUPLE_AXES = {"flip", "roll", "squeeze", "expand_dims", "sum", "prod", "max", "min", "mean", "std", "var", "all",
              "any", "count_nonzero", "linalg.vector_norm", "fft.fftshift", "fft.ifftshift"}  # fmt: skip
INT_PARAMS = {"n", "num", "n_rows", "n_cols", "k", "offset", "repeats", "batch_size", "seed", "in_features",
              "out_features", "fan_in", "fan_out"}  # fmt: skip
BOOL_PARAMS = {"keepdims", "descending", "stable", "upper", "full_matrices", "invert", "endpoint",
               "include_initial", "nesterov", "download", "has_aux", "wait"}  # fmt: skip
OPTION_PARAMS = {"norm": "both", "mode": "economic", "indexing": "xx", "side": "middle", "padding": "full"}
SCALAR_ARGS_OK = {n for n in CHAPTERS["elementwise_functions"]} | {"where", "isin", "searchsorted", "clip"}
# The nn functions and layers take any standard namespace's arrays, NumPy's included.
ACCEPTS_NUMPY = {"asarray", "from_dlpack", "autodiff.tree_flatten", "autodiff.tree_map", "autodiff.vjp"}
CASES: list[Case] = []


def case(id: str, fname: str, func: Any, args: tuple = (), kwargs: dict | None = None, expect: Any = ANY,
         newcomer: bool = False, user_code: bool = False) -> None:  # fmt: skip
    CASES.append(Case(id, fname, func, args, kwargs or {}, expect, newcomer, user_code))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _bound(func: Any, args: tuple, kwargs: dict) -> inspect.BoundArguments | None:
    try:
        return inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None


def _with(name: str, param: str, value: Any) -> tuple[tuple, dict]:
    """The baseline call of `name` with `param` replaced by (or set to) `value`."""
    func = PUBLIC[name]
    args, kwargs = BASE[name]
    sig = inspect.signature(func)
    bound = sig.bind_partial(*args, **kwargs)
    bound.arguments[param] = value
    new_args, new_kwargs = [], {}
    skipped = False
    for q in sig.parameters.values():
        if q.name not in bound.arguments:
            skipped = True
            continue
        v = bound.arguments[q.name]
        if q.kind is q.VAR_POSITIONAL:
            new_args.extend(v)
        elif q.kind is q.POSITIONAL_ONLY or (q.kind is q.POSITIONAL_OR_KEYWORD and not skipped):
            new_args.append(v)
        else:
            new_kwargs[q.name] = v
    return tuple(new_args), new_kwargs


def _generate(name: str) -> None:
    func = PUBLIC[name]
    args, kwargs = BASE[name]
    fname = _short(name)
    sig = inspect.signature(func)
    params = sig.parameters
    array_params = [p for p in params if p in ARRAY_PARAMS and (name, p) != ("datasets.read_idx", "data")]

    def add(id: str, param: str, value: Any, expect: Any = ANY, newcomer: bool = False) -> None:
        a, k = _with(name, param, value)
        case(f"{name}-{param}-{id}", fname, func, a, k, expect, newcomer)

    # Python's own argument checks: the message names the function too ("sum() got ...")
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        case(f"{name}-unknown-keyword", fname, func, args, {**kwargs, "bogus_keyword": 1}, TYPE)
    if not any(p.kind is p.VAR_POSITIONAL for p in params.values()):
        positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        extra = tuple(args) + (None,) * (len(positional) - len(args) + 1)
        if len(extra) > len(positional):
            case(f"{name}-too-many-arguments", fname, func, extra, {}, TYPE)

    for p in params.values():
        pname = p.name
        if pname in ARRAY_PARAMS and pname in array_params:
            if p.default is p.empty:
                add("None", pname, None, TYPE, newcomer=name == "from_dlpack")
            if name in ("asarray",):
                add("object", pname, object(), TYPE)
                continue
            add(
                "str",
                pname,
                "abc",
                ANY if name in ("isdtype", "finfo", "iinfo") else TYPE,
                newcomer=name == "from_dlpack",
            )
            if name not in ACCEPTS_NUMPY and not name.startswith("nn."):
                add("list", pname, [1.0, 2.0], TYPE)
                add("numpy", pname, np.ones(3), TYPE, newcomer=name in SCALAR_ARGS_OK)
            if len(array_params) > 1 and pname != array_params[0]:
                value = _bound(func, args, kwargs).arguments.get(pname)  # type: ignore[union-attr]
                if isinstance(value, Arr):
                    add("other-device", pname, Arr(value.kind, value.shape, dev=1), VALUE)
                    add("other-backend", pname, Arr(value.kind, value.shape, other=True), VALUE)
        elif pname in OPTIONAL_ARRAYS:
            add("str", pname, "abc", TYPE)
            add("numpy", pname, np.ones(3), TYPE)
            add("other-device", pname, Arr("f" if pname != "sorter" else "n", (3,), dev=1), VALUE)
        elif pname == "arrays" and name not in ("result_type",):
            if p.kind is p.VAR_POSITIONAL:
                add("None", pname, (F3, None), TYPE)
                add("str", pname, (F3, "abc"), TYPE)
                add("numpy", pname, (F3, np.ones(3)), TYPE)
                add("other-device", pname, (F3, Arr("f", (3,), dev=1)), VALUE)
            else:
                add("None", pname, None, TYPE)
                add("str", pname, "abc", TYPE)
                add("array", pname, F33, TYPE)
                add("None-element", pname, [F33, None], TYPE)
                add("numpy-element", pname, [F33, np.ones((3, 3))], TYPE)
                add("other-device", pname, [F33, Arr(dev=1)], VALUE)
                add("other-backend", pname, [F33, Arr(other=True)], VALUE)
        elif pname in AXIS_PARAMS:
            add("out-of-range", pname, 7, AXIS)
            add("negative-out-of-range", pname, -8, AXIS)
            add("float", pname, 1.5, TYPE)
            add("str", pname, "0", TYPE)
            add("bool", pname, True, TYPE, newcomer=True)
            if pname == "axis" and name in TUPLE_AXES:
                add("tuple-out-of-range", pname, (0, 7), AXIS)
                add("list", pname, [0], TYPE, newcomer=True)
        elif pname == "axes" and name.startswith("fft."):
            add("out-of-range", pname, (7,), AXIS)
            add("float", pname, (1.5,), TYPE)
            add("str", pname, "0", TYPE)
        elif pname == "dtype" and p.kind is p.KEYWORD_ONLY:
            add("str", pname, "float64", TYPE)
            add("numpy", pname, np.float64, TYPE)
            add("python-type", pname, float, TYPE)
        elif pname == "device":
            add("int", pname, 3, ANY)
            add("unknown-str", pname, "npu:0", ANY)
            add("object", pname, object(), ANY)
        elif pname in INT_PARAMS:
            if name.startswith(("autodiff.", "datasets.read")) or name in ("nn.glorot_uniform",) and pname == "seed":
                continue
            add("float", pname, 1.5, ANY)
            add("str", pname, "2", ANY)
            if p.default is p.empty:
                add("None", pname, None, ANY)
        elif pname in BOOL_PARAMS:
            add("str", pname, "yes", TYPE, newcomer=name == "lazy_barrier")
        elif pname in OPTION_PARAMS:
            add("unknown", pname, OPTION_PARAMS[pname], VALUE)
            add("int", pname, 3, ANY)
        elif pname == "shape" and name not in ("nn.glorot_uniform",):
            add("str", pname, "abc", TYPE)
            add("float", pname, (2.0, 3), TYPE)
            add("negative", pname, (2, -2), VALUE)
            add("None", pname, None, TYPE)


for _name in sorted(BASE):
    if _name not in EXEMPT and _name in PUBLIC:  # a stale entry fails test_every_public_callable_has_cases
        _generate(_name)

# -- probes: every array argument in every dtype kind and at other ranks ------------------------

PROBE_KINDS = {"b": "bool", "i": "int64", "f": "float64", "c": "complex128"}
PROBE_SHAPES = {"0d": (), "1d": (3,), "3d": (2, 3, 3), "empty": (0, 3)}
PROBES: list[Case] = []
for _name in sorted(BASE):
    if (
        _name in EXEMPT
        or _name in BASE_RAISES
        or _name not in PUBLIC
        or _name.startswith(("autodiff.", "optim.", "data"))
    ):
        continue
    _func = PUBLIC[_name]
    _args, _kwargs = BASE[_name]
    _b = _bound(_func, _args, _kwargs)
    for _p, _v in _b.arguments.items() if _b else ():
        if not isinstance(_v, Arr):
            continue
        for _k in PROBE_KINDS:
            if _k != _v.kind:
                a, k = _with(_name, _p, Arr(_k, _v.shape))
                PROBES.append(Case(f"{_name}-{_p}-{PROBE_KINDS[_k]}", _short(_name), _func, a, k, None))
        for _label, _shape in PROBE_SHAPES.items():
            if _shape != _v.shape:
                a, k = _with(_name, _p, Arr(_v.kind, _shape))
                PROBES.append(Case(f"{_name}-{_p}-{_label}", _short(_name), _func, a, k, None))


# -- hand-written cases: what the signatures cannot tell ----------------------------------------

NAN, INF = float("nan"), float("inf")
# NaN / inf where a finite number is required
case("arange-stop-nan", "arange", xp.arange, (0, NAN), {}, VALUE)
case("arange-stop-inf", "arange", xp.arange, (0, INF), {}, VALUE)
case("arange-step-nan", "arange", xp.arange, (0, 5, NAN), {}, VALUE)
case("arange-start-inf", "arange", xp.arange, (-INF, 5), {}, VALUE)
case("linspace-num-inf", "linspace", xp.linspace, (0, 1, INF), {}, TYPE)
case("std-correction-nan", "std", xp.std, (F33,), {"correction": NAN}, VALUE)
case("var-correction-inf", "var", xp.var, (F33,), {"correction": INF}, VALUE)
case("std-correction-str", "std", xp.std, (F33,), {"correction": "1"}, TYPE)
case("fftfreq-d-nan", "fftfreq", fft.fftfreq, (4,), {"d": NAN}, VALUE)
case("fftfreq-d-zero", "fftfreq", fft.fftfreq, (4,), {"d": 0.0}, VALUE)
case("rfftfreq-d-inf", "rfftfreq", fft.rfftfreq, (4,), {"d": INF}, VALUE)
case("fftfreq-d-str", "fftfreq", fft.fftfreq, (4,), {"d": "1"}, TYPE)
case("matrix_rank-rtol-nan", "matrix_rank", linalg.matrix_rank, (F33,), {"rtol": NAN}, VALUE)
case("pinv-rtol-negative", "pinv", linalg.pinv, (F33,), {"rtol": -1.0}, VALUE)
case("pinv-rtol-str", "pinv", linalg.pinv, (F33,), {"rtol": "1e-3"}, TYPE)
case("vector_norm-ord-nan", "vector_norm", linalg.vector_norm, (F33,), {"ord": NAN}, VALUE)
case("vector_norm-ord-str", "vector_norm", linalg.vector_norm, (F33,), {"ord": "fro"}, ANY)
case("matrix_norm-ord-nan", "matrix_norm", linalg.matrix_norm, (F33,), {"ord": NAN}, VALUE)
case("matrix_power-n-float", "matrix_power", linalg.matrix_power, (F33, 1.5), {}, TYPE)
case("diagonal-offset-float", "diagonal", linalg.diagonal, (F33,), {"offset": 1.5}, TYPE)
case("trace-offset-str", "trace", linalg.trace, (F33,), {"offset": "1"}, TYPE)
case("eye-k-float", "eye", xp.eye, (3,), {"k": 0.5}, TYPE)
case("tril-k-float", "tril", xp.tril, (F33,), {"k": 0.5}, TYPE)
case("full-fill-None", "full", xp.full, ((2,), None), {}, TYPE)
case("full-fill-list", "full", xp.full, ((2,), [1, 2]), {}, TYPE)
case("full_like-fill-str", "full_like", xp.full_like, (F33, "1"), {}, TYPE)
case("clip-min-str", "clip", xp.clip, (F33,), {"min": "0"}, TYPE)
case("clip-max-list", "clip", xp.clip, (F33,), {"max": [1.0]}, TYPE)
case("where-x1-str", "where", xp.where, (B33, "a", F33), {}, TYPE)
case("searchsorted-side-None", "searchsorted", xp.searchsorted, (F3, F3), {"side": None}, ANY)
case("diff-n-negative", "diff", xp.diff, (F33,), {"n": -1}, VALUE)
case("diff-n-float", "diff", xp.diff, (F33,), {"n": 1.5}, TYPE)
case("roll-shift-float", "roll", xp.roll, (F33, 1.5), {}, TYPE)
case("roll-shift-str", "roll", xp.roll, (F33, "1"), {}, TYPE)
case("tile-repetitions-str", "tile", xp.tile, (F33, "ab"), {}, TYPE)
case("tile-repetitions-float", "tile", xp.tile, (F33, (1.5,)), {}, TYPE)
case("broadcast_to-shape-str", "broadcast_to", xp.broadcast_to, (F3, "abc"), {}, TYPE)
case("reshape-shape-float", "reshape", xp.reshape, (F33, (9.0,)), {}, TYPE)
case("reshape-copy-str", "reshape", xp.reshape, (F33, (9,)), {"copy": "no"}, ANY)
case("permute_dims-axes-str", "permute_dims", xp.permute_dims, (F33, "ab"), {}, TYPE)
case("permute_dims-axes-None", "permute_dims", xp.permute_dims, (F33, None), {}, TYPE)
case("permute_dims-axes-float", "permute_dims", xp.permute_dims, (F33, (1.0, 0.0)), {}, TYPE)
case("tensordot-axes-str", "tensordot", xp.tensordot, (F33, F33), {"axes": "ab"}, TYPE)
case("tensordot-axes-out-of-range", "tensordot", xp.tensordot, (F33, F33), {"axes": ((7,), (0,))}, AXIS)
case("tensordot-axes-float", "tensordot", xp.tensordot, (F33, F33), {"axes": 1.5}, TYPE)
case("fftn-s-str", "fftn", fft.fftn, (C33,), {"s": "ab", "axes": (0, 1)}, TYPE)
case("fftn-s-negative", "fftn", fft.fftn, (C33,), {"s": (3, -2), "axes": (0, 1)}, VALUE)
case("fft-n-float", "fft", fft.fft, (C33,), {"n": 2.5}, TYPE)
case("fft-n-negative", "fft", fft.fft, (C33,), {"n": -4}, VALUE)
case("astype-dtype-None", "astype", xp.astype, (F33, None), {}, TYPE)
case("astype-dtype-str", "astype", xp.astype, (F33, "float32"), {}, TYPE)
case("astype-copy-str", "astype", xp.astype, (F33, xp.float32), {"copy": "yes"}, TYPE)
case("can_cast-to-str", "can_cast", xp.can_cast, (xp.int8, "int16"), {}, TYPE)
case("can_cast-to-array", "can_cast", xp.can_cast, (xp.int8, F33), {}, TYPE)
case("result_type-str", "result_type", xp.result_type, (xp.int8, "int16"), {}, TYPE)
case("result_type-None", "result_type", xp.result_type, (xp.int8, None), {}, TYPE)
case("result_type-numpy", "result_type", xp.result_type, (xp.int8, np.ones(2)), {}, TYPE)
case("isdtype-kind-None", "isdtype", xp.isdtype, (xp.int8, None), {}, TYPE)
case("isdtype-kind-int", "isdtype", xp.isdtype, (xp.int8, 3), {}, TYPE)
case("broadcast_shapes-str", "broadcast_shapes", xp.broadcast_shapes, ("ab", (3,)), {}, TYPE)
case("broadcast_shapes-float", "broadcast_shapes", xp.broadcast_shapes, ((2.0,), (3,)), {}, TYPE)
case("broadcast_shapes-negative", "broadcast_shapes", xp.broadcast_shapes, ((-2,), (3,)), {}, VALUE)
case("asarray-None-dtype", "asarray", xp.asarray, (None,), {"dtype": xp.float64}, TYPE, newcomer=True)
case("asarray-None", "asarray", xp.asarray, (None,), {}, TYPE)
case("asarray-str", "asarray", xp.asarray, ("abc",), {}, TYPE)
case("asarray-nested-None", "asarray", xp.asarray, ([1.0, None],), {}, TYPE, newcomer=True)
case("asarray-copy-str", "asarray", xp.asarray, ([1.0],), {"copy": "yes"}, ANY)
case("from_dlpack-None", "from_dlpack", xp.from_dlpack, (None,), {}, TYPE, newcomer=True)
case("from_dlpack-str", "from_dlpack", xp.from_dlpack, ("abc",), {}, TYPE, newcomer=True)
case("from_dlpack-list", "from_dlpack", xp.from_dlpack, ([1.0],), {}, TYPE, newcomer=True)
case("from_dlpack-int", "from_dlpack", xp.from_dlpack, (3,), {}, TYPE, newcomer=True)
# sizes no memory holds (issue 14)
case("repeat-huge", "repeat", xp.repeat, (F33, 2**70), {}, VALUE, newcomer=True)
case("fftfreq-huge", "fftfreq", fft.fftfreq, (2**70,), {}, VALUE, newcomer=True)
case("eye-huge", "eye", xp.eye, (2**70,), {}, VALUE, newcomer=True)
case("linspace-huge", "linspace", xp.linspace, (0.0, 1.0, 2**70), {}, VALUE, newcomer=True)
case("zeros-huge", "zeros", xp.zeros, ((2**40, 2**40),), {}, VALUE, newcomer=True)
case("ones-huge", "ones", xp.ones, ((2**62, 4),), {}, VALUE, newcomer=True)
case("full-huge", "full", xp.full, ((2**62, 4), 1.0), {}, VALUE, newcomer=True)
case("empty-huge", "empty", xp.empty, ((2**62, 4),), {}, VALUE, newcomer=True)
case("arange-huge", "arange", xp.arange, (2**62,), {}, VALUE, newcomer=True)
case("tile-huge", "tile", xp.tile, (F3, (2**62,)), {}, VALUE, newcomer=True)
case("broadcast_to-huge", "broadcast_to", xp.broadcast_to, (F3, (2**62, 3)), {}, VALUE, newcomer=True)
case("fft-n-huge", "fft", fft.fft, (C33,), {"n": 2**62}, VALUE, newcomer=True)
case("fftn-s-huge", "fftn", fft.fftn, (C33,), {"s": (2**40, 2**40), "axes": (0, 1)}, VALUE, newcomer=True)
case("metrics_report-file-str", "metrics_report", xp.metrics_report, (), {"file": "abc"}, TYPE, newcomer=True)
case("compile-fn-None", "compile", xp.compile, (None,), {}, TYPE, newcomer=True)
case("compile-fn-str", "compile", xp.compile, ("f",), {}, TYPE, newcomer=True)
case("compile-call-ndarray", "compile", lambda: xp.compile(_square)(np.ones(3)), (), {}, TYPE)
case("lazy_barrier-devices-int", "lazy_barrier", xp.lazy_barrier, (), {"devices": 3}, TYPE, newcomer=True)
case("lazy_barrier-devices-str", "lazy_barrier", xp.lazy_barrier, (), {"devices": "npu"}, ANY, newcomer=True)
case("device_scope-None", "device_scope", lambda d: xp.device_scope(d).__enter__(), (None,), {}, ANY)
case("device_scope-int", "device_scope", lambda d: xp.device_scope(d).__enter__(), (3,), {}, ANY)
case("Device-kind-None", "Device", xp.Device, (None,), {}, ANY)
case("Device-ordinal-str", "Device", xp.Device, ("cpu", "0"), {}, ANY)
case("Device-ordinal-float", "Device", xp.Device, ("cpu", 0.5), {}, ANY)
case("Device-backend-int", "Device", xp.Device, ("cpu", 0, 3), {}, ANY)
case("set_cpu_kernels-None", "set_cpu_kernels", xp.set_cpu_kernels, (None,), {}, ANY)
case("transfer_guard-None", "transfer_guard", xp.transfer_guard, (None,), {}, TYPE)
case("transfer_guard-bogus", "transfer_guard", xp.transfer_guard, ("never",), {}, VALUE)
case("transfer_guard-upper", "transfer_guard", xp.transfer_guard, ("DISALLOW",), {}, VALUE)
# NumPy arrays met by operators and in-place operators
case("operator-numpy", "add", lambda a: a + np.ones((3, 3)), (F33,), {}, TYPE, newcomer=True)
case("operator-numpy-reflected", "add", lambda a: np.ones((3, 3)) + a, (F33,), {}, TYPE, newcomer=True)
case("operator-inplace-numpy", "add", lambda a: a.__iadd__(np.ones((3, 3))), (F33,), {}, TYPE, newcomer=True)
case("operator-None", "add|unsupported operand type", lambda a: a + None, (F33,), {}, TYPE)
# str * array is Python's sequence repetition: it asks the array for __index__
case("operator-str", "multiply|__index__", lambda a: a * "ab", (F33,), {}, TYPE)
case("operator-other-device", "add", lambda a, b: a + b, (F33, Arr(dev=1)), {}, VALUE)
case("operator-other-backend", "add", lambda a, b: a + b, (F33, Arr(other=True)), {}, VALUE)
case("operator-inplace-other-device", "add", lambda a, b: a.__iadd__(b), (F33, Arr(dev=1)), {}, VALUE)
case("matmul-operator-other-device", "matmul", lambda a, b: a @ b, (F33, Arr(dev=1)), {}, VALUE)
case("setitem-other-device", "__setitem__", lambda a, b: a.__setitem__(0, b), (F33, Arr("f", (3,), dev=1)), {}, VALUE)
case("setitem-numpy", "__setitem__", lambda a: a.__setitem__(0, np.ones(3)), (F33,), {}, TYPE)
case("setitem-None", "__setitem__", lambda a: a.__setitem__(0, None), (F33,), {}, TYPE)
case("to_device-None-str", "to_device", lambda a: a.to_device("npu:0"), (F33,), {}, ANY)
case("to_device-int", "to_device", lambda a: a.to_device(3), (F33,), {}, ANY)
# ranks: matrix functions on vectors, vectors where matrices are needed
for _name in ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm", "matrix_rank", "pinv",
              "qr", "slogdet", "svd", "svdvals", "trace", "diagonal", "matrix_transpose"):  # fmt: skip
    case(f"linalg.{_name}-1d", _name, getattr(linalg, _name), (F3,), {}, VALUE)
for _name in ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "slogdet"):
    case(f"linalg.{_name}-not-square", _name, getattr(linalg, _name), (Arr("f", (2, 3)),), {}, VALUE)
case("linalg.matrix_power-1d", "matrix_power", linalg.matrix_power, (F3, 2), {}, VALUE)
case("linalg.solve-1d", "solve", linalg.solve, (F3, F3), {}, VALUE)
case("linalg.solve-not-square", "solve", linalg.solve, (Arr("f", (2, 3)), F3), {}, VALUE)
case("linalg.cross-2", "cross", linalg.cross, (Arr("f", (2,)), Arr("f", (2,))), {}, VALUE)
case("tril-0d", "tril", xp.tril, (Arr("f", ()),), {}, VALUE)
case("matmul-0d", "matmul", xp.matmul, (Arr("f", ()), F33), {}, VALUE)
case("vecdot-0d", "vecdot", xp.vecdot, (Arr("f", ()), F33), {}, VALUE)
case("take-0d", "take", xp.take, (Arr("f", ()), Arr("n", (1,))), {}, ANY)
case("take-2d-indices", "take", xp.take, (F3, Arr("n", (2, 2))), {}, ANY)
case("searchsorted-2d", "searchsorted", xp.searchsorted, (F33, F3), {}, VALUE)
case("unstack-0d", "unstack", xp.unstack, (Arr("f", ()),), {}, AXIS)
case("cumulative_sum-0d-axis", "cumulative_sum", xp.cumulative_sum, (Arr("f", ()),), {"axis": 0}, AXIS)
case("fft.fft-0d", "fft", fft.fft, (Arr("c", ()),), {}, AXIS)
case("fft.fftfreq-n-zero", "fftfreq", fft.fftfreq, (0,), {}, VALUE)
case("fft.rfftfreq-n-negative", "rfftfreq", fft.rfftfreq, (-1,), {}, VALUE)
case("fft.irfft-n-zero", "irfft", fft.irfft, (C33,), {"n": 0}, VALUE)
# nn: layers, functions and the pytree helpers
case("nn.relu-None", "relu", nn.relu, (None,), {}, TYPE)
case("nn.softmax-axis-out-of-range", "softmax", nn.softmax, (F33,), {"axis": 5}, AXIS)
case("nn.softmax_cross_entropy-float-labels", "softmax_cross_entropy", nn.softmax_cross_entropy, (F33, F3), {}, TYPE)
case("nn.softmax_cross_entropy-shape", "softmax_cross_entropy", nn.softmax_cross_entropy,
     (F33, Arr("n", (4,))), {}, VALUE)  # fmt: skip
case("nn.softmax_cross_entropy-1d-logits", "softmax_cross_entropy", nn.softmax_cross_entropy,
     (F3, Arr("n", (3,))), {}, VALUE)  # fmt: skip
case("nn.softmax_cross_entropy-other-device", "softmax_cross_entropy", nn.softmax_cross_entropy,
     (F33, Arr("n", (3,), dev=1)), {}, VALUE)  # fmt: skip
case("conv2d-3d-input", "conv2d", F.conv2d, (Arr("g", (6, 6, 1)), KERNEL), {}, VALUE)
case("conv2d-channels", "conv2d", F.conv2d, (Arr("g", (2, 6, 6, 2)), KERNEL), {}, VALUE)
case("conv2d-dtypes", "conv2d", F.conv2d, (IMG, Arr("f", (3, 3, 1, 2))), {}, TYPE)
case("conv2d-strides-zero", "conv2d", F.conv2d, (IMG, KERNEL), {"strides": (0, 1)}, VALUE)
case("conv2d-strides-str", "conv2d", F.conv2d, (IMG, KERNEL), {"strides": "ab"}, ANY)
case("conv2d-other-device", "conv2d", F.conv2d, (IMG, Arr("g", (3, 3, 1, 2), dev=1)), {}, VALUE)
case("max_pool2d-pool-zero", "max_pool2d", F.max_pool2d, (IMG, (0, 2)), {}, VALUE)
case("avg_pool2d-window-too-large", "avg_pool2d", F.avg_pool2d, (IMG, (7, 7)), {}, VALUE)
case("avg_pool2d-int", "avg_pool2d", F.avg_pool2d, (Arr("i", (2, 6, 6, 1)),), {}, TYPE)
case("nn.Dense-in-zero", "Dense", nn.Dense, (0, 2), {}, VALUE)
case("nn.Dense-activation", "Dense", nn.Dense, (3, 2, "sigmoid-ish"), {}, VALUE)
case("nn.Dense-call-None", "Dense", lambda: DENSE(None), (), {}, TYPE)
case("nn.Dense-call-numpy", "Dense", lambda: DENSE(np.ones((2, 3))), (), {}, ANY)
case("nn.Dense-call-features", "Dense", lambda m, a: m(a), (MODEL, Arr("f", (2, 4))), {}, VALUE)
case("nn.Dense-call-other-device", "Dense", lambda m, a: m(a), (MODEL, Arr("f", (2, 3), dev=1)), {}, VALUE)
case("nn.Conv2D-filter-str", "Conv2D", nn.Conv2D, ("abc",), {}, ANY)
case("nn.Conv2D-filter-3", "Conv2D", nn.Conv2D, ((3, 3, 1),), {}, VALUE)
case("nn.Conv2D-filter-zero", "Conv2D", nn.Conv2D, ((0, 3, 1, 2),), {}, VALUE)
case("nn.MaxPool2D-pool-zero", "MaxPool2D", nn.MaxPool2D, ((0, 2),), {}, VALUE)
case("nn.Sequential-not-module", "Sequential", nn.Sequential, (3,), {}, TYPE)
case("nn.phase-unknown", "phase", lambda v: nn.phase(v).__enter__(), ("testing",), {}, VALUE)
case("nn.set_learning_phase-None", "set_learning_phase", nn.set_learning_phase, (None,), {}, VALUE)
case("nn.to_device-str", "to_device", nn.to_device, ([F3], "npu:0"), {}, ANY)
case("nn.LeNet-dtype-str", "LeNet", nn.LeNet, (), {"dtype": "float32"}, TYPE)
# optim: hyperparameters and the pytrees update() is given
for _cls in ("SGD", "Adam", "AdamW"):
    for _param, _bad in (("learning_rate", NAN), ("learning_rate", INF), ("learning_rate", -0.1),
                         ("learning_rate", "0.1"), ("learning_rate", None), ("weight_decay", NAN)):  # fmt: skip
        case(f"optim.{_cls}-{_param}-{_bad!r}", _cls, getattr(optim, _cls), (), {_param: _bad}, ANY)
for _cls in ("Adam", "AdamW"):
    case(f"optim.{_cls}-beta1-one", _cls, getattr(optim, _cls), (), {"beta1": 1.0}, VALUE)
    case(f"optim.{_cls}-beta2-nan", _cls, getattr(optim, _cls), (), {"beta2": NAN}, VALUE)
    case(f"optim.{_cls}-eps-zero", _cls, getattr(optim, _cls), (), {"eps": 0.0}, VALUE)
case("optim.SGD-momentum-inf", "SGD", optim.SGD, (), {"momentum": INF}, VALUE)
case("optim.SGD-nesterov-str", "SGD", optim.SGD, (), {"momentum": 0.9, "nesterov": "yes"}, TYPE)
_SGD = optim.SGD(0.1, momentum=0.9)
case("optim.SGD.init-leaf-str", "SGD.init", _SGD.init, ([F3, "abc"],), {}, TYPE)
case("optim.SGD.init-str", "SGD.init", _SGD.init, ("abc",), {}, ANY)
case("optim.SGD.update-grads-count", "SGD.update", _SGD.update, (MODEL, [F3, F3, F3], Thunk(_sgd_state, "state")),
     {}, VALUE)  # fmt: skip
case("optim.SGD.update-grads-None", "SGD.update", _SGD.update, (MODEL, None, Thunk(_sgd_state, "state")), {}, ANY)
_GRADS = Thunk(lambda d: autodiff.tree_map(xp.zeros_like, _model(d)), "grads")
case("optim.SGD.update-state-None", "SGD.update", _SGD.update, (MODEL, _GRADS, None), {}, TYPE)
case("optim.SGD.update-grads-shape", "SGD.update", _SGD.update,
     (MODEL, Thunk(lambda d: [xp.ones((2, 2), device=d[0]), xp.ones((3, 2), device=d[0])], "grads"),
      Thunk(_sgd_state, "state")), {}, VALUE)  # fmt: skip
case("optim.Adam.update-state-wrong", "Adam.update", optim.Adam().update,
     (MODEL, _GRADS, Thunk(_sgd_state, "SGD state")), {}, TYPE)  # fmt: skip
# autodiff
case("autodiff.grad-f-None", "grad", autodiff.grad, (None,), {}, TYPE)
case("autodiff.grad-f-str", "grad", autodiff.grad, ("f",), {}, TYPE)
case("autodiff.grad-argnums-float", "grad", autodiff.grad, (_square,), {"argnums": 1.5}, TYPE)
case("autodiff.grad-argnums-negative", "grad", autodiff.grad, (_square,), {"argnums": -1}, ANY)
case("autodiff.grad-has_aux-str", "grad", autodiff.grad, (_square,), {"has_aux": "yes"}, TYPE)
case("autodiff.grad-call-None", "grad", lambda: autodiff.grad(_square)(None), (), {}, ANY)
case("autodiff.grad-call-str", "grad", lambda: autodiff.grad(_square)("abc"), (), {}, TYPE)
case("autodiff.grad-call-int-array", "grad", lambda a: autodiff.grad(_square)(a), (I3,), {}, TYPE)
case("autodiff.grad-call-argnums", "grad", lambda a: autodiff.grad(_square, argnums=3)(a), (F3,), {}, VALUE)
case("autodiff.grad-call-no-array", "grad", lambda: autodiff.grad(_square)([]), (), {}, VALUE)
case("autodiff.grad-non-scalar-output", "grad", lambda a: autodiff.grad(lambda x: x * 2)(a), (F3,), {}, ANY,
     user_code=True)  # fmt: skip
case("autodiff.value_and_grad-f-None", "value_and_grad", autodiff.value_and_grad, (None,), {}, TYPE)
case("autodiff.value_and_grad-call-None", "grad", lambda: autodiff.value_and_grad(_square)(None), (), {}, ANY)
case("autodiff.vjp-f-None", "vjp", autodiff.vjp, (None, F3), {}, TYPE)
case("autodiff.vjp-primal-str", "vjp", autodiff.vjp, (_square, "abc"), {}, TYPE)
_PULLBACK = Thunk(lambda d: autodiff.vjp(lambda x: x * 2, xp.ones(3, device=d[0]))[1], "vjp_fn")
case("autodiff.vjp-cotangent-shape", "vjp", lambda f, c: f(c), (_PULLBACK, F33), {}, VALUE)
case("autodiff.vjp-cotangent-None", "vjp", lambda f: f(None), (_PULLBACK,), {}, TYPE)
case("autodiff.defvjp-name-None", "defvjp", autodiff.defvjp, (None,), {}, TYPE)
case("autodiff.tree_map-fn-None", "tree_map", autodiff.tree_map, (None, [1]), {}, TYPE)
case("autodiff.tree_map-structure", "tree_map", autodiff.tree_map, (lambda a, b: a, [1], [1, 2]), {}, VALUE)
case("autodiff.tree_unflatten-count", "tree_unflatten", autodiff.tree_unflatten,
     (autodiff.tree_flatten([1, 2])[1], [3]), {}, VALUE)  # fmt: skip
case("autodiff.tree_unflatten-treedef-None", "tree_unflatten", autodiff.tree_unflatten, (None, [3]), {}, ANY)
# datasets
case("datasets.MNIST-batch-str", "MNIST", datasets.MNIST, ("8",), {"download": False}, VALUE)
case("datasets.MNIST-batch-zero", "MNIST", datasets.MNIST, (0,), {"download": False}, VALUE)
case("datasets.MNIST-data_dir-int", "MNIST", datasets.MNIST, (8, 3), {"download": False}, TYPE)
case("datasets.read_idx-None", "read_idx", datasets.read_idx, (None,), {}, TYPE)
case("datasets.read_idx-str", "read_idx", datasets.read_idx, ("abc",), {}, TYPE)
case("datasets.read_idx-truncated", "read_idx", datasets.read_idx, (_idx()[:-1], "read_idx"), {}, VALUE)
case("datasets.read_idx-magic", "read_idx", datasets.read_idx, (b"\x01" + _idx()[1:], "read_idx"), {}, VALUE)
case("datasets.read_idx_file-None", "read_idx_file", datasets.read_idx_file, (None,), {}, TYPE)
case("datasets.read_idx_file-int", "read_idx_file", datasets.read_idx_file, (3.5,), {}, TYPE)
# the array-namespace inspection object
_INFO = xp.__array_namespace_info__()
case("info.dtypes-kind-unknown", "dtypes", _INFO.dtypes, (), {"kind": "whole"}, VALUE)
case("info.dtypes-kind-int", "dtypes", _INFO.dtypes, (), {"kind": 3}, ANY)
case("info.dtypes-device-int", "dtypes", _INFO.dtypes, (), {"device": 3}, ANY)
case("info.default_dtypes-device-int", "default_dtypes", _INFO.default_dtypes, (), {"device": 3}, ANY)
case("info.default_dtypes-device-str", "default_dtypes", _INFO.default_dtypes, (), {"device": "npu:0"}, ANY)

# -- running a case ----------------------------------------------------------------------------


def _other(mode: str) -> tuple[xp.Device, xp.Device]:
    return LAZY if mode == "eager" else EAGER


def _normalized(message: str) -> str:
    """The message with device names made mode-independent (they name the mode's devices)."""
    message = re.sub(r"backend=\w+", "backend=*", message)
    message = re.sub(r"\b(cpu:\d)(:(eager|xla))?\b", r"\1", message)
    return re.sub(r"\b(eager|lazy|xla|XLA|EAGER)\b", "*", message)


def _pending() -> tuple[int, ...]:
    return tuple(len(v) for v in _graph._live.values())


def _signature(result: Any) -> Any:
    if isinstance(result, xp.Array):
        return ("array", result.shape, result.dtype)
    if isinstance(result, (tuple, list)):
        return tuple(_signature(r) for r in result)
    return type(result).__name__


def _run(c: Case, mode: str) -> tuple[str, Any]:
    """('raised', (type, message)) or ('ok', signature of the result); checks the lazy device's state."""
    devices = MODES[mode]
    args = make(c.args, devices, _other(mode))
    kwargs = make(c.kwargs, devices, _other(mode))
    if mode == "lazy":
        xp.lazy_barrier()  # the inputs' own transfers are done: from here nothing may be recorded
    before, live = xp.metrics(), _pending()
    try:
        with xp.device_scope(devices[0]):
            result = c.func(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (the point: whatever is raised is inspected)
        if mode == "lazy" and not c.user_code:
            diff = xp.metrics() - before
            changed = {k: v for k, v in vars(diff).items() if v and not k.endswith("seconds")}
            assert not changed and _pending() == live, (
                f"{c.id}: the lazy call was rejected ({e!r}) but recorded {changed}, live {live} -> {_pending()}"
            )
        return "raised", (e, str(e))
    if mode == "lazy":
        try:
            xp.lazy_barrier()
        except Exception as e:  # noqa: BLE001
            return "barrier", (e, str(e))
    return "ok", _signature(result)


def _check_message(c: Case, e: BaseException, message: str) -> str | None:
    if not isinstance(e, ANY):
        return f"{type(e).__name__} is not TypeError/ValueError/IndexError: {message!r}"
    if type(e).__module__.startswith(("numpy", "jax", "jaxlib")):
        return f"a raw {type(e).__module__}.{type(e).__name__}: {message!r}"
    names = "|".join(re.escape(n) for n in c.fname.split("|"))
    pattern = rf"^(in-place )?([\w.]+\.)?({names})\b"
    if not re.match(pattern, message):
        return f"the message should start with {c.fname!r}: {type(e).__name__}: {message!r}"
    return None


def check(c: Case) -> str | None:
    """None, or what is wrong with this case."""
    eager = _run(c, "eager")
    lazy = _run(c, "lazy")
    if c.expect is not None and eager[0] != "raised":
        return f"eager accepted it (result {eager[1]})"
    if eager[0] == "raised":
        e, message = eager[1]
        if c.expect is not None and not isinstance(e, c.expect):
            return f"eager raised {type(e).__name__}, expected {'/'.join(t.__name__ for t in c.expect)}: {message!r}"
        problem = _check_message(c, e, message)
        if problem:
            return "eager: " + problem
        if lazy[0] != "raised":
            return f"lazy did not raise at the call ({lazy[0]}: {lazy[1]!r}) where eager raised {message!r}"
        le, lmessage = lazy[1]
        if type(le) is not type(e) or _normalized(lmessage) != _normalized(message):
            return f"eager and lazy differ: {type(e).__name__}: {message!r} vs {type(le).__name__}: {lmessage!r}"
        return None
    if lazy[0] == "raised":
        return f"lazy raised at the call where eager accepted: {type(lazy[1][0]).__name__}: {lazy[1][1]!r}"
    if lazy[0] == "barrier":
        return f"lazy accepted the call but its barrier raised {type(lazy[1][0]).__name__}: {lazy[1][1]!r}"
    if lazy[1] != eager[1]:
        return f"eager and lazy results differ: {eager[1]} vs {lazy[1]}"
    return None


# -- the tests ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A case that reaches MNIST's download finds a mirror that is an empty local directory."""
    monkeypatch.setattr(datasets, "MIRRORS", (tmp_path.as_uri() + "/",))


_ALL = CASES + PROBES
_BY_FUNCTION: dict[str, list[Case]] = {}
for _c in _ALL:
    _BY_FUNCTION.setdefault(_c.id.split("-", 1)[0], []).append(_c)


@pytest.mark.parametrize("group", sorted(_BY_FUNCTION))
def test_bad_input(group: str) -> None:
    problems = [f"{c.id}: {p}" for c in _BY_FUNCTION[group] if (p := check(c))]
    assert not problems, f"{len(problems)} of {len(_BY_FUNCTION[group])} cases fail:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", sorted(n for n in BASE if n not in BASE_RAISES and n not in EXEMPT))
def test_baseline_calls_are_accepted(name: str) -> None:
    """Each generated case differs from a valid call by one argument: the valid call must pass."""
    args, kwargs = BASE[name]
    for mode in MODES:
        status, result = _run(Case(name, _short(name), PUBLIC[name], args, kwargs, None), mode)
        assert status == "ok", f"{name} on {mode}: {result!r}"
    if name == "set_cpu_kernels":
        xp.set_cpu_kernels("numpy")


def test_every_public_callable_has_cases() -> None:
    """A new public function must get a baseline call in BASE (or a reason in EXEMPT)."""
    missing = sorted(set(PUBLIC) - set(BASE) - set(EXEMPT))
    assert not missing, f"public callables without bad-input cases: {missing}"
    covered = {c.id.split("-", 1)[0] for c in CASES}
    assert not sorted(set(BASE) - set(EXEMPT) - covered)
    assert set(EXEMPT) <= set(PUBLIC), sorted(set(EXEMPT) - set(PUBLIC))
    assert set(BASE) <= set(PUBLIC), f"BASE names that are not public: {sorted(set(BASE) - set(PUBLIC))}"


def test_case_count() -> None:
    """The figures in the module docstring are the table's."""
    text = (
        f"{len(CASES)} must-raise and {len(PROBES)} probe cases, {len(CASES) + len(PROBES)} in all, over"
        f" {len(PUBLIC)} public callables"
    )
    assert text in " ".join(__doc__.split()), text


def test_the_checker_catches_what_it_must() -> None:
    """The table's checks can fail: recorded lazy work, a wrong name, eager/lazy differences."""

    def records_then_raises(x: xp.Array) -> None:
        x + 1.0  # noqa: B018 (recorded on the lazy device before the rejection)
        raise ValueError("records_then_raises: rejected late")

    with pytest.raises(AssertionError, match="recorded"):
        check(Case("meta", "records_then_raises", records_then_raises, (F3,), {}, VALUE))

    def misnamed(x: xp.Array) -> None:
        raise ValueError("max: the wrong name")

    assert "should start with 'misnamed'" in (check(Case("meta", "misnamed", misnamed, (F3,), {}, VALUE)) or "")

    def lazy_only(x: xp.Array) -> Any:
        if x.device.is_lazy:
            raise ValueError("lazy_only: only on the lazy device")
        return x

    assert "lazy raised at the call where eager accepted" in (
        check(Case("meta", "lazy_only", lazy_only, (F3,), {}, None)) or ""
    )
    assert "eager accepted it" in (check(Case("meta", "lazy_only", lazy_only, (F3,), {}, VALUE)) or "")
