"""Save and restore pytrees of arrays (models, optimizer states, dicts) as safetensors files.

    from x10array import checkpoint
    checkpoint.save("run.safetensors", {"model": model, "optimizer": state, "epoch": 3})
    tree = checkpoint.load("run.safetensors", like={"model": model, "optimizer": state, "epoch": 0})

The file is in the safetensors format (https://huggingface.co/docs/safetensors): an 8-byte
little-endian header length, a JSON header naming each tensor's dtype, shape and byte range,
then the raw little-endian bytes. PyTorch, JAX/Flax, NumPy and Hugging Face tools read it, and
this module reads theirs. It is written here on purpose: the format is an 8-byte length, a
JSON header and raw bytes (a few dozen lines to write and check), x10array depends on NumPy and
jax alone, and with the package this module would still lay out complex128 and the tree's
Python scalars itself (the format has no complex128, and only string metadata: below).
To keep the two formats one, the tests check this module's files
against the `safetensors` package, and the package's files against this module, in both
directions (tests/test_checkpoint.py).

Keys name the path of each array in the tree, joined by dots: dict keys, list and tuple
indices, and the attribute names of `nn.Module` objects (`model.layers.0.filter`,
`optimizer.velocity.3`). Python numbers, bools and strings in the tree (an optimizer's step
count, an epoch) go into the header's `__metadata__` as JSON, under `x10array.scalars`.

Dtypes: every x10array dtype is stored bit for bit. complex64 is the format's `C64`;
complex128 has no safetensors dtype, so it is stored as float64 with a trailing axis of 2
(real, imaginary: PyTorch's `view_as_real` layout) and its key listed in the metadata under
`x10array.complex128`, which `load` reads to restore it. Files from other tools may hold F16
or BF16 tensors: `load` widens them to float32 (exactly: every such value is a float32).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import time
from typing import Any

import numpy as np

import x10array

try:
    import fcntl
except ImportError:  # (Windows: no stale temporary files are removed)
    fcntl = None  # type: ignore[assignment]

from . import extend
from .nn import Module

__all__ = ["save", "load"]

# x10array dtype name -> safetensors dtype (complex128: float64 pairs, see the module docstring)
_TO_FORMAT = {
    "bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "float32": "F32", "float64": "F64", "complex64": "C64", "complex128": "F64",
}  # fmt: skip
# safetensors dtype -> the NumPy dtype its bytes are read as
_FROM_FORMAT = {
    "BOOL": np.dtype(np.bool_), "I8": np.dtype("<i1"), "I16": np.dtype("<i2"), "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"), "U8": np.dtype("<u1"), "U16": np.dtype("<u2"), "U32": np.dtype("<u4"),
    "U64": np.dtype("<u8"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "C64": np.dtype("<c8"),
    "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
}  # fmt: skip
_SCALARS = "x10array.scalars"
_COMPLEX128 = "x10array.complex128"
_MAX_HEADER = 100_000_000  # the safetensors package's own limit
_STALE_SECONDS = 60.0  # a temporary file unlocked and untouched this long is a save that died
_MAX_NDIM = 64  # NumPy's (every array is read into one)
_HOST = x10array.Device("cpu", 0, "eager")


# -- the tree, with a key for each leaf ----------------------------------------------------------


def _child_names(tree: Any, aux: Any, children: list[Any]) -> Any:
    """A module's children are its attributes, named in aux; other objects' are numbered."""
    return aux[0] if isinstance(tree, Module) else None


def _name(path: tuple[Any, ...]) -> str:
    """A leaf's key in the file: its path's keys, joined by dots."""
    return ".".join(str(k) for k in path)


def _is_scalar(leaf: Any) -> bool:
    return isinstance(leaf, (bool, int, float, str)) and not isinstance(leaf, np.generic)


def _keyed_leaves(tree: Any, owner: str) -> tuple[list[tuple[str, Any]], Any]:
    """[(key, leaf)] and the treedef; TypeError for a leaf that is neither an array nor a
    Python scalar, ValueError for two leaves with the same key."""

    def check_key(path: tuple[Any, ...], k: Any) -> None:
        if isinstance(k, bool) or not isinstance(k, (str, int)):
            raise TypeError(f"{owner}: dict keys must be str or int, got {k!r} at {_name(path) or 'the root'!r}")

    paths, treedef = extend.tree_leaves_with_paths(tree, _child_names, check_key)
    keyed = [(_name(path), leaf) for path, leaf in paths]
    seen: set[str] = set()
    for key, leaf in keyed:
        if key == "":
            raise TypeError(
                f"{owner}: the tree is a single {type(leaf).__name__}; give it a name, e.g. {{'weight': array}}"
            )
        if key in seen:
            raise ValueError(f"{owner}: two leaves have the key {key!r} (a dict key with a dot, or 1 and '1'?)")
        seen.add(key)
        if not (_is_scalar(leaf) or hasattr(leaf, "__array_namespace__") or isinstance(leaf, (np.ndarray, np.generic))):
            raise TypeError(
                f"{owner}: {key!r} is a {type(leaf).__name__}; a checkpoint holds arrays and Python numbers, bools"
                " and strings"
            )
    return keyed, treedef


def _dtype_name(dtype: Any) -> str:
    name = getattr(dtype, "name", None)
    return name if isinstance(name, str) else str(dtype).rpartition(".")[2]


# -- save ------------------------------------------------------------------------------------------


def _check_path(path: Any, owner: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: path must be a str or a path, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{owner}: path must be a str or a path, got bytes")
    return path


def _to_host(leaf: Any, key: str) -> np.ndarray:
    """The leaf's value as a little-endian, C-contiguous NumPy array, bit for bit."""
    if isinstance(leaf, x10array.Array):
        host = np.asarray(leaf.to_device(_HOST))
    else:
        try:
            host = np.asarray(leaf)
        except Exception as e:
            raise TypeError(f"checkpoint.save: {key!r}: cannot read the {type(leaf).__name__} on the host: {e}") from e
    if host.dtype.name not in _TO_FORMAT:
        raise TypeError(
            f"checkpoint.save: {key!r} has dtype {host.dtype.name}, not one of x10array's ({', '.join(_TO_FORMAT)})"
        )
    return host.astype(host.dtype.newbyteorder("<"), order="C", copy=False)  # keeps 0-d arrays 0-d


def save(path: str | os.PathLike[str], tree: Any, *, metadata: dict[str, str] | None = None) -> None:
    """Write the arrays of `tree` to the safetensors file `path`, atomically.

    `tree`: dicts, lists, tuples and `nn.Module` objects (any pytree) of arrays on any device, and
    Python numbers, bools and strings. `metadata`: extra text entries for the header's
    `__metadata__` (str to str; keys starting with 'x10array.' are reserved).

    The file is first written in full under a temporary name in the same directory, flushed to
    disk (fsync), then renamed over `path` in one step (`os.replace`): a crash leaves the old
    file or the new one, never half of one. A save killed midway leaves its temporary file
    (`.<name>.<random>.tmp`); the next `save` or `load` of `path` removes it, once it has been
    untouched for a minute and no live process holds its lock (every save locks its own).
    """
    path = _check_path(path, "checkpoint.save")
    user_meta = _check_metadata(metadata)
    keyed, _ = _keyed_leaves(tree, "checkpoint.save")
    lazy = {leaf.device for _, leaf in keyed if isinstance(leaf, x10array.Array) and leaf.device.is_lazy}
    if lazy:
        x10array.lazy_barrier(sorted(lazy, key=str))  # one program per device, not one per leaf
    header: dict[str, Any] = {}
    arrays: list[np.ndarray] = []
    scalars: dict[str, Any] = {}
    complex128: list[str] = []
    offset = 0
    for key, leaf in keyed:
        if _is_scalar(leaf):
            scalars[key] = leaf
            continue
        host = _to_host(leaf, key)
        if host.dtype.name == "complex128":
            complex128.append(key)
            host = host.reshape(-1).view("<f8").reshape(host.shape + (2,))  # (NumPy cannot view a 0-d array)
        nbytes = host.nbytes
        header[key] = {"dtype": _TO_FORMAT[host.dtype.name], "shape": list(host.shape),
                       "data_offsets": [offset, offset + nbytes]}  # fmt: skip
        arrays.append(host)
        offset += nbytes
    meta = dict(user_meta)
    if scalars:
        meta[_SCALARS] = json.dumps(scalars, allow_nan=True)
    if complex128:
        meta[_COMPLEX128] = json.dumps(complex128)
    body = json.dumps({"__metadata__": meta, **header} if meta else header, separators=(",", ":")).encode()
    body += b" " * (-len(body) % 8)  # pad the header so the data starts 8-byte aligned (as safetensors does)
    _write_atomically(path, [len(body).to_bytes(8, "little"), body, *arrays])


def _check_metadata(metadata: Any) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise TypeError(f"checkpoint.save: metadata must be a dict of str to str, got {type(metadata).__name__}")
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"checkpoint.save: metadata must map str to str, got {k!r}: {type(v).__name__}")
        if k.startswith("x10array."):
            raise ValueError(f"checkpoint.save: metadata key {k!r}: keys starting with 'x10array.' are reserved")
    return dict(metadata)


def _write_atomically(path: str, chunks: list[Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"checkpoint.save: the directory {directory!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"checkpoint.save: {path!r} is a directory")
    _remove_stale_temporaries(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as to open()
    try:
        with os.fdopen(fd, "wb") as f:
            if fcntl is not None:  # held until the rename: no other process takes the file for a stale one
                with contextlib.suppress(OSError):
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            for chunk in chunks:
                if isinstance(chunk, np.ndarray):
                    chunk = chunk.reshape(-1).view(np.uint8)  # C-contiguous: a view, no copy
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files that saves to `path` killed midway (`kill -9`, a crash, a power
    cut) left in its directory. A save holds an exclusive lock (flock) on its temporary file
    until it renames it, and the system drops the lock when the process dies: a file that can
    be locked, and was last written more than _STALE_SECONDS ago, has no live writer. Never
    raises; without flock (Windows) nothing is removed."""
    if fcntl is None:
        return
    directory = os.path.dirname(os.path.abspath(path))
    pattern = re.compile(r"\." + re.escape(os.path.basename(path)) + r"\.[0-9a-f]{12}\.tmp")
    try:
        names = [name for name in os.listdir(directory) if pattern.fullmatch(name)]
    except OSError:
        return
    for name in names:
        candidate = os.path.join(directory, name)
        try:
            fd = os.open(candidate, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or time.time() - st.st_mtime < _STALE_SECONDS:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: a live save holds it
            now = os.stat(candidate, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):  # still the file we locked
                os.unlink(candidate)
        except OSError:
            continue
        finally:
            os.close(fd)


# -- load ------------------------------------------------------------------------------------------


class _Entry:
    __slots__ = ("key", "format", "shape", "begin", "end")

    def __init__(self, key: str, format: str, shape: tuple[int, ...], begin: int, end: int) -> None:
        self.key, self.format, self.shape, self.begin, self.end = key, format, shape, begin, end

    @property
    def dtype_name(self) -> str:
        """The x10array dtype this tensor loads as."""
        if self.format in ("F16", "BF16"):
            return "float32"
        return _FROM_FORMAT[self.format].name


def _read_header(f: Any, path: str, size: int) -> tuple[dict[str, _Entry], dict[str, str], int]:
    """The entries, the metadata and where the data starts; ValueError for anything malformed."""

    def bad(why: str) -> ValueError:
        return ValueError(f"checkpoint.load: {path!r} is not a valid safetensors file: {why}")

    raw = f.read(8)
    if len(raw) < 8:
        raise bad(f"{size} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(raw, "little")
    if n > _MAX_HEADER or 8 + n > size:
        raise bad(f"the header length {n} does not fit the file's {size} bytes")
    text = f.read(n)
    try:
        header = json.loads(text.decode("utf-8"))
    except RecursionError:
        raise bad("the header's JSON is nested too deeply") from None
    except ValueError as e:  # (not UTF-8, not JSON, an integer of more digits than Python converts)
        raise bad(f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad("__metadata__ must map strings to strings")
    entries: dict[str, _Entry] = {}
    for key, info in header.items():
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
            raise bad(f"{key!r} lacks a dtype, shape or data_offsets")
        fmt, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(fmt, str):
            raise bad(f"{key!r} has the dtype {_short(fmt)}, not a string")
        if fmt not in _FROM_FORMAT:
            raise ValueError(
                f"checkpoint.load: {key!r} in {path!r} has the safetensors dtype {fmt!r}, which x10array cannot hold"
                f" (it reads {', '.join(_FROM_FORMAT)})"
            )
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise bad(f"{key!r} has the shape {_short(shape)}")
        if len(shape) > _MAX_NDIM:
            raise bad(f"{key!r} has {len(shape)} dimensions, more than an array can have ({_MAX_NDIM})")
        if math.prod(d for d in shape if d) * _FROM_FORMAT[fmt].itemsize >= 2**63:
            raise bad(f"{key!r} has the shape {_short(shape)}, larger than an array can be (2**63 bytes)")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
            raise bad(f"{key!r} has the data_offsets {_short(offsets)}")
        entries[key] = _Entry(key, fmt, tuple(shape), offsets[0], offsets[1])
    data_size = size - 8 - n
    end = 0
    for entry in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        expected = math.prod(entry.shape) * _FROM_FORMAT[entry.format].itemsize
        if entry.begin != end or entry.end - entry.begin != expected:
            raise bad(f"{entry.key!r} occupies bytes {entry.begin}..{entry.end}, expected {end}..{end + expected}")
        end = entry.end
    if end != data_size:
        raise bad(f"the tensors hold {end} bytes of data, the file {data_size}")
    return entries, meta, 8 + n


def _short(value: Any) -> str:
    """`value` for a message, at most 80 characters of it."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _read_tensor(f: Any, entry: _Entry, start: int, path: str, complex128: bool) -> np.ndarray:
    stored = _FROM_FORMAT[entry.format]
    host = np.empty(entry.shape, dtype=stored)
    f.seek(start + entry.begin)
    view = host.reshape(-1).view(np.uint8)
    if f.readinto(view) != view.size:
        raise ValueError(f"checkpoint.load: {path!r} ends inside {entry.key!r}")
    if entry.format == "BOOL" and view.size and view.max() > 1:
        raise ValueError(f"checkpoint.load: {entry.key!r} in {path!r} is BOOL but holds bytes other than 0 and 1")
    if entry.format == "F16":
        return host.astype(np.float32)  # exact
    if entry.format == "BF16":
        return (host.astype(np.uint32) << 16).view(np.float32)  # bfloat16 is the upper half of a float32
    if complex128:
        if entry.format != "F64" or not entry.shape or entry.shape[-1] != 2:
            raise ValueError(
                f"checkpoint.load: {entry.key!r} in {path!r} is listed as complex128 but is {entry.format}"
                f" {list(entry.shape)}, not float64 pairs"
            )
        return host.view(np.complex128).reshape(entry.shape[:-1])
    return host


def _shape_of(entry: _Entry, complex128: bool) -> tuple[int, ...]:
    return entry.shape[:-1] if complex128 and entry.shape and entry.shape[-1] == 2 else entry.shape


def load(path: str | os.PathLike[str], like: Any = None, device: Any = None) -> Any:
    """Read the safetensors file `path`.

    With `like` (a tree such as the one saved: a freshly built model, an optimizer state), the
    result is a tree of the same structure whose arrays and Python scalars are the file's. The
    file must hold exactly `like`'s keys, with the same shapes and dtypes: anything else is a
    ValueError naming the key. Non-array parts of `like` (a layer's activation, padding) are
    kept. Without `like`, the result is a flat dict of every key in the file.

    `device`: where the arrays go (a `Device` or a device string, eager or lazy). None: each
    array goes to the device of the array it replaces in `like` (so a model built on the lazy
    device is restored there), else the default device. The values are bit for bit those saved.
    """
    path = _check_path(path, "checkpoint.load")
    target = None if device is None else extend.resolve_device(device, "checkpoint.load")
    keyed = None if like is None else _keyed_leaves(like, "checkpoint.load")
    _remove_stale_temporaries(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        entries, meta, start = _read_header(f, path, size)
        scalars = _json_meta(meta, _SCALARS, dict, path)
        complex_keys = set(_json_meta(meta, _COMPLEX128, list, path))
        both = sorted(set(scalars) & set(entries))
        if both:
            raise ValueError(f"checkpoint.load: {path!r} holds {both[0]!r} both as a tensor and as a scalar")
        if keyed is None:
            out: dict[str, Any] = {}
            for key, entry in entries.items():
                host = _read_tensor(f, entry, start, path, key in complex_keys)
                out[key] = x10array.asarray(host, device=target)
            out.update(scalars)
            return out
        pairs, treedef = keyed
        _check_keys([k for k, _ in pairs], set(entries) | set(scalars), path)
        values = []
        for key, leaf in pairs:
            if _is_scalar(leaf):
                values.append(_scalar(key, leaf, scalars, path))
                continue
            if key not in entries:
                raise ValueError(f"checkpoint.load: {key!r} is an array in `like` but a {type(scalars[key]).__name__}"
                                 f" in {path!r}")  # fmt: skip
            entry = entries[key]
            is_c128 = key in complex_keys
            dtype = "complex128" if is_c128 else entry.dtype_name
            shape = _shape_of(entry, is_c128)
            want_shape, want_dtype = tuple(leaf.shape), _dtype_name(leaf.dtype)
            if shape != want_shape:
                raise ValueError(f"checkpoint.load: {key!r} has shape {shape} in {path!r}, {want_shape} in `like`")
            if dtype != want_dtype:
                raise ValueError(f"checkpoint.load: {key!r} has dtype {dtype} in {path!r}, {want_dtype} in `like`")
            host = _read_tensor(f, entry, start, path, is_c128)
            values.append(_place(host, leaf, target))
    return extend.tree_unflatten(treedef, values)


def _json_meta(meta: dict[str, str], name: str, kind: type, path: str) -> Any:
    if name not in meta:
        return kind()
    try:
        value = json.loads(meta[name])
    except (ValueError, RecursionError):  # (not JSON, nested too deeply, an integer too long)
        value = None
    if kind is dict and isinstance(value, dict):
        good = all(_is_scalar(v) for v in value.values())
    else:
        good = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not good:
        what = "an object of numbers, bools and strings" if kind is dict else "a list of keys"
        raise ValueError(f"checkpoint.load: {path!r} has a malformed {name!r} metadata entry (not {what})")
    return value


def _check_keys(wanted: list[str], present: set[str], path: str) -> None:
    missing = [k for k in wanted if k not in present]
    if missing:
        raise ValueError(
            f"checkpoint.load: {missing[0]!r} is in `like` but not in {path!r}"
            + (f" ({len(missing) - 1} more keys missing)" if len(missing) > 1 else "")
        )
    extra = sorted(present - set(wanted))
    if extra:
        raise ValueError(
            f"checkpoint.load: {path!r} holds {extra[0]!r}, which `like` does not have"
            + (f" ({len(extra) - 1} more extra keys)" if len(extra) > 1 else "")
        )


def _scalar(key: str, leaf: Any, scalars: dict[str, Any], path: str) -> Any:
    if key not in scalars:
        raise ValueError(f"checkpoint.load: {key!r} is a {type(leaf).__name__} in `like` but an array in {path!r}")
    value = scalars[key]
    if type(value) is not type(leaf):
        raise ValueError(
            f"checkpoint.load: {key!r} is a {type(value).__name__} in {path!r}, a {type(leaf).__name__} in `like`"
        )
    return value


def _place(host: np.ndarray, leaf: Any, target: Any) -> Any:
    if target is not None:
        return x10array.asarray(host, device=target)
    if isinstance(leaf, x10array.Array):
        return x10array.asarray(host, device=leaf.device)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return host
    ns = leaf.__array_namespace__()
    return ns.asarray(host, device=leaf.device)
