"""x10array as cubed's chunk namespace (docs/pydata.md).

cubed runs every chunk of a computation through one array-API namespace, named by the
environment variable `CUBED_BACKEND_ARRAY_API_MODULE` of the client and of every worker:

- `CUBED_BACKEND_ARRAY_API_MODULE=x10array.cubed` (this module): x10array's namespace (every
  name not defined here is x10array's) plus what cubed calls beyond the standard: `nansum`
  (cubed's `nansum` and `nanmean`), a `sum` that also counts a boolean array (cubed's
  `nanmean` counts with `sum(~isnan(x))`; the standard's `sum` takes numeric dtypes), a `mean`
  with NumPy's `dtype=` and a `take` of a Python int (cubed's `var` and `std`), and an
  `__array_namespace_info__` that takes cubed's device string `"cpu"`. They live here rather
  than in `x10array` because the main namespace holds only the standard's names and the
  README's extras (tests/test_completeness.py);
- `CUBED_BACKEND_ARRAY_API_MODULE=x10array`: the bare namespace, which also works (cubed's
  dtypes are NumPy dtype objects, which x10array takes: docs/interop.md) except in the
  functions above.

The chunks live on `X10ARRAY_DEFAULT_DEVICE` of each worker (eager CPU unless it is set:
`X10ARRAY_DEFAULT_DEVICE=xla` puts them on the lazy device). `compile_function` is what to pass
as `compute(compile_function=...)` on the lazy device: each worker process compiles each task's
chunk function once per chunk signature (shapes, dtypes) with `x10array.compile` and replays it
for the other chunks; the persistent compile cache (`X10ARRAY_COMPILE_CACHE_DIR`, shared by the
workers when it is on a shared disk) lets a fresh worker load the program instead of compiling
it. The outputs are read back to the host explicitly at the end of each task, where cubed
writes them to Zarr, so a worker run under `X10ARRAY_TRANSFER_GUARD=disallow` refuses implicit
reads inside the chunk function but not the task's one read of its result.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable
from typing import Any

import x10array as _xp

# this module's own names (the reference lists these; the rest is x10array's namespace)
__all__ = ["__array_namespace_info__", "compile_function", "mean", "nansum", "sum", "take"]


def __getattr__(name: str) -> Any:
    # every other name is x10array's (`asarray`, `linalg`, `float64`, `__array_api_version__`)
    try:
        return getattr(_xp, name)
    except AttributeError:
        raise AttributeError(f"module 'x10array.cubed' has no attribute {name!r}") from None


def nansum(
    x: _xp.Array,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    dtype: Any = None,
    keepdims: builtins.bool = False,
) -> _xp.Array:
    """NumPy's `nansum` in the standard's functions: the sum with NaNs counted as zero (the
    signature of the standard's `sum`)."""
    if not hasattr(x, "__array_namespace__") or x.__array_namespace__() is not _xp:
        raise TypeError(f"nansum: x must be an x10array array, got {type(x).__name__}")
    if _xp.isdtype(x.dtype, ("real floating", "complex floating")):
        x = _xp.where(_xp.isnan(x), _xp.zeros_like(x), x)
    return _xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def sum(  # noqa: A001 - shadows the namespace's, for cubed
    x: _xp.Array,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    dtype: Any = None,
    keepdims: builtins.bool = False,
) -> _xp.Array:
    """The standard's `sum`, and also of a boolean array (a count, in the default integer
    dtype, as NumPy's): cubed's `nanmean` counts the non-NaN elements that way."""
    if hasattr(x, "__array_namespace__") and x.__array_namespace__() is _xp and x.dtype == _xp.bool:
        x = _xp.astype(x, _xp.int64)
    return _xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def mean(
    x: _xp.Array,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    dtype: Any = None,
    keepdims: builtins.bool = False,
) -> _xp.Array:
    """The standard's `mean`, with NumPy's `dtype=` (the dtype to compute in, which cubed's
    `var` and `std` pass for their chunks' means): the array cast to it first."""
    if dtype is not None:
        x = _xp.astype(x, dtype)
    return _xp.mean(x, axis=axis, keepdims=keepdims)


def take(x: _xp.Array, indices: Any, /, *, axis: int | None = None) -> _xp.Array:
    """The standard's `take`, and NumPy's with a Python int index (the axis dropped), which
    cubed's `var` and `std` combine their chunks with."""
    if isinstance(indices, int) and not isinstance(indices, builtins.bool):
        if axis is None:
            raise TypeError("take: axis is required with an int index")
        index = _xp.asarray([indices], dtype=_xp.int64, device=x.device)
        return _xp.squeeze(_xp.take(x, index, axis=axis), axis=axis)
    return _xp.take(x, indices, axis=axis)


class _Info:
    """`__array_namespace_info__()` of x10array, where cubed's own device, `"cpu"` (cubed
    passes its arrays' `.device` to the chunk namespace's inspection functions), means the
    default device."""

    def __init__(self) -> None:
        self._info = _xp.__array_namespace_info__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._info, name)

    def default_dtypes(self, *, device: Any = None) -> Any:
        return self._info.default_dtypes(device=None if device == "cpu" else device)

    def dtypes(self, *, device: Any = None, kind: Any = None) -> Any:
        return self._info.dtypes(device=None if device == "cpu" else device, kind=kind)


def __array_namespace_info__() -> Any:
    """x10array's inspection namespace, taking cubed's device `"cpu"` (see `_Info`)."""
    return _Info()


def _to_host(value: Any) -> Any:
    """A chunk function's result with its arrays read to eager CPU arrays: the explicit read at
    the task boundary (cubed writes the result to Zarr as NumPy next)."""
    if isinstance(value, dict):
        return {k: _to_host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v) for v in value)
    if hasattr(value, "__array_namespace__") and value.__array_namespace__() is _xp:
        if value.device.is_lazy:
            return value.to_device(_xp.Device.default)
    return value


class _Args:
    """cubed's `FunctionArgs` (the chunks of one input of a task: a container of arrays) as a
    pytree, so that `x10array.compile` sees the arrays inside it."""

    __slots__ = ("cls", "output_name", "args")

    def __init__(self, cls: type, output_name: Any, args: list[Any]) -> None:
        self.cls = cls
        self.output_name = output_name
        self.args = args

    def tree_flatten(self) -> tuple[list[Any], Any]:
        return self.args, (self.cls, self.output_name)

    @classmethod
    def tree_unflatten(cls, aux: Any, children: list[Any]) -> _Args:
        return cls(aux[0], aux[1], list(children))


class _Opaque(Exception):
    """An argument x10array.compile cannot take apart (an iterator of chunks, say)."""


def _to_tree(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _to_tree(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return kind(_to_tree(v) for v in value)
    if kind.__name__ == "FunctionArgs" and hasattr(value, "output_name"):
        return _Args(kind, value.output_name, [_to_tree(v) for v in value.args])
    if hasattr(value, "__next__"):  # cubed streams a reduction's chunks: they cannot be arguments
        raise _Opaque
    return value


def _from_tree(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _from_tree(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return kind(_from_tree(v) for v in value)
    if kind is _Args:
        return value.cls(*(_from_tree(v) for v in value.args), output_name=value.output_name)
    return value


# the chunk functions this worker process has seen, by their key (see __setstate__); bounded by
# the plans a worker runs (one entry per blockwise op)
_IN_THIS_PROCESS: dict[str, _CompiledChunkFunction] = {}


class _CompiledChunkFunction:
    """A task's chunk function, compiled with `x10array.compile` in each worker at its first
    call (the compiled object holds per-process state, so it is made where it runs, not
    pickled): pickles as the function it wraps."""

    def __init__(self, fn: Callable[..., Any], key: str | None = None) -> None:
        self.fn = fn
        self.key = key if key is not None else uuid.uuid4().hex
        self._compiled: Any = None
        self._plain = False  # the function reads a value: it runs uncompiled in this worker

    def __getstate__(self) -> dict[str, Any]:
        return {"fn": self.fn, "key": self.key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # cubed ships the function with every task: the worker's first copy of it is kept (by
        # the key it was given on the client), so that later tasks replay what it captured
        # instead of capturing (and loading the program) again
        first = _IN_THIS_PROCESS.get(state["key"])
        if first is None:
            self.__init__(state["fn"], state["key"])  # type: ignore[misc]
            _IN_THIS_PROCESS[self.key] = self
        else:
            self.__dict__.update(first.__dict__)
            self._shared_with = first

    def _state(self) -> _CompiledChunkFunction:
        return getattr(self, "_shared_with", self)

    def _call_restored(self, *args: Any) -> Any:
        return self.fn(*(_from_tree(a) for a in args))

    def __call__(self, *args: Any) -> Any:
        state = self._state()
        if state._plain:
            return _to_host(self.fn(*args))
        try:
            tree = [_to_tree(a) for a in args]
        except _Opaque:
            return _to_host(self.fn(*args))
        if state._compiled is None:
            state._compiled = _xp.compile(state._call_restored)
        try:
            # A chunk function that reads a value (cubed's block-id functions read an offsets
            # chunk with int(); random chunks are made on the host from it) cannot be replayed.
            # x10array.compile finds such a read itself (its signature falls back, with a
            # RuntimeWarning), but each chunk shape is a signature of its own: refused here at
            # the first read, it runs uncompiled from now on in this worker, without a warning
            # per shape nor a recording at each call.
            with _xp.transfer_guard("disallow"):
                out = state._compiled(*tree)
        except _xp.TransferGuardError:
            state._plain = True
            out = self.fn(*args)
        return _to_host(out)

    def __repr__(self) -> str:
        return f"<x10array.cubed.compile_function of {self.fn!r}>"


def compile_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`compute(compile_function=x10array.cubed.compile_function)`: each blockwise task's
    function compiled per chunk signature in each worker (`x10array.compile`), its result read
    to the host explicitly. On an eager device the function simply runs."""
    if not callable(fn):
        raise TypeError(f"compile_function: fn must be callable, got {type(fn).__name__}")
    return _CompiledChunkFunction(fn)
