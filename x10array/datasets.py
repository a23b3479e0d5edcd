"""MNIST from the IDX files: local directory, cache, or the public mirrors (SHA-256 checked).

    data = MNIST(batch_size=128, data_dir="../shared/data/mnist")
    for epoch, batches in enumerate(itertools.islice(data.training, 5)):
        for images, labels in batches: ...          # 468 batches of 128 per epoch
    for images, labels in data.validation: ...       # all 10,000 test images

Images are float32 NHWC in [0, 1], labels int32. Every header is checked against the file's
real size before anything large is allocated.

Why hand-written, not pooch and tqdm: x10array depends on NumPy and jax alone, and one dataset
needs little of them. The download is a loop over fixed mirrors with a pinned SHA-256 per file,
written to a temporary file and renamed (an interrupted download leaves nothing), and a
directory the user names is only read, never a download target, so a wrong path is reported
as missing files rather than fetched into; pooch does most of this but not the IDX header
checks, and would be a dependency for about a hundred lines. The progress line (on a
terminal only) is a dozen lines where tqdm would be another dependency. Worth revisiting if
more datasets come.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import sys
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from . import extend
from .extend import settings

__all__ = ["MNIST", "DownloadError", "read_idx", "read_idx_file"]

# Public mirrors of the MNIST files, tried in order (the original site refuses scripted
# downloads). Tests replace this tuple with file:// URLs; nothing in the tests downloads.
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
MIRROR = MIRRORS[0]
FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
# SHA-256 of the *decompressed* IDX data: mirrors recompress the files, the data is the same.
SHA256 = {
    "train-images-idx3-ubyte.gz": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte.gz": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte.gz": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte.gz": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
# IDX type codes -> NumPy dtypes (big-endian as stored)
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
# No IDX file this module reads is near this size (MNIST's largest holds 47 MB); a header that
# promises more is rejected before anything is read or allocated.
MAX_IDX_BYTES = 1 << 30
_CHUNK = 1 << 16
# The way urls are opened: urllib's, replaceable (tests inject failing or interrupted openers).
urlopen: Callable[..., Any] = urllib.request.urlopen


class DownloadError(OSError):
    """No mirror could deliver a file; the message says what was tried, why it failed, and the ways out."""


def _parse_header(head: bytes, name: str, max_bytes: int) -> tuple[int, np.dtype, tuple[int, ...], int]:
    """(header size, dtype, shape, data size) of an IDX header; ValueError when it is malformed."""
    if len(head) < 4:
        raise ValueError(f"{name}: too short for an IDX header ({len(head)} bytes)")
    zero, type_code, ndim = struct.unpack(">HBB", head[:4])
    if zero != 0:
        raise ValueError(f"{name}: not an IDX file (bad magic number 0x{head[:4].hex()})")
    if type_code not in _IDX_TYPES:
        raise ValueError(f"{name}: unknown IDX element type 0x{type_code:02x}")
    if not 1 <= ndim <= 4:
        raise ValueError(f"{name}: implausible number of dimensions {ndim}")
    header = 4 + 4 * ndim
    if len(head) < header:
        raise ValueError(f"{name}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", head[4:header])
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = dtype.itemsize
    for d in shape:
        expected *= d
    if expected > max_bytes:
        raise ValueError(
            f"{name}: oversized: the header promises {shape} ({expected} bytes of data), more than the limit of"
            f" {max_bytes} bytes"
        )
    return header, dtype, shape, expected


def read_idx(data: bytes, name: str = "IDX data", *, max_bytes: int = MAX_IDX_BYTES) -> np.ndarray:
    """Parse one IDX file (already decompressed); ValueError on any malformed header."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"read_idx: data must be bytes, got {type(data).__name__}")
    header, dtype, shape, expected = _parse_header(bytes(data[:20]), name, max_bytes)
    if len(data) - header != expected:
        raise ValueError(
            f"{name}: the header promises {shape} ({expected} bytes of data) but the file holds {len(data) - header}"
        )
    return np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)


def _read_stream(stream: io.BufferedIOBase, name: str, max_bytes: int) -> bytes:
    """The bytes of one IDX file read from `stream`, no more than its header promises (+1 to see excess).

    Memory grows with the data actually read, never with a number in the header."""
    head = stream.read(4)
    if len(head) == 4 and 1 <= head[3] <= 4:
        head += stream.read(4 * head[3])
    header, _, shape, expected = _parse_header(head, name, max_bytes)
    chunks = [head]
    got = 0
    while got <= expected:
        chunk = stream.read(min(_CHUNK, expected + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if got != expected:
        held = f"at least {got}" if got > expected else str(got)
        raise ValueError(f"{name}: the header promises {shape} ({expected} bytes of data) but the file holds {held}")
    return b"".join(chunks)


def read_idx_file(path: str | os.PathLike[str], *, max_bytes: int = MAX_IDX_BYTES) -> np.ndarray:
    """Parse one IDX file on disk, gzipped (name ends in .gz) or not.

    Truncated, corrupted (bad gzip data or CRC), wrong-magic, oversized files and files whose
    size does not match their header raise ValueError naming the file, without allocating memory
    proportional to what a bogus header claims."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"read_idx_file: path must be a str or a path, got {type(path).__name__}")
    path = Path(path)
    name = str(path)
    if path.suffix == ".gz":
        return read_idx(_read_gzip(path, name, max_bytes), name, max_bytes=max_bytes)
    with open(path, "rb") as raw:
        size = os.fstat(raw.fileno()).st_size
        header, _, shape, expected = _parse_header(raw.read(20), name, max_bytes)
        if size - header != expected:
            raise ValueError(
                f"{name}: the header promises {shape} ({expected} bytes of data) but the file holds {size - header}"
            )
        raw.seek(0)
        data = raw.read()
    return read_idx(data, name, max_bytes=max_bytes)


def _read_gzip(path: Path, name: str, max_bytes: int) -> bytes:
    """The decompressed bytes of a gzipped IDX file, checked against its header while reading."""
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as stream:
            data = _read_stream(stream, name, max_bytes)
            if stream.read(1):
                raise ValueError(f"{name}: holds more data than its IDX header promises")
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ValueError(f"{name}: corrupted or truncated gzip data ({e})") from None
    return data


def _find_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    if data_dir is not None:
        return Path(data_dir)
    env = settings.get("X10ARRAY_DATA_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "x10array" / "mnist"


def _ways_out(directory: Path) -> str:
    names = ", ".join(FILES.values())
    return (
        f"Put the four files ({names}; gzipped or not) in a directory DIR and pass --data-dir DIR"
        f" (MNIST(data_dir=DIR)), or set X10ARRAY_DATA_DIR=DIR; downloads go to {directory}."
    )


def _not_found(directory: Path, missing: list[str]) -> str:
    """Why the files `missing` are not in `directory`, the names looked for, and the ways out."""
    if not directory.exists():
        where = f"{directory} does not exist"
    elif not directory.is_dir():
        where = f"{directory} is not a directory"
    else:
        held = sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))
        more = f" and {len(held) - 8} more" if len(held) > 8 else ""
        holds = f"it holds {', '.join(held[:8])}{more}" if held else "it is empty"
        where = f"{len(missing)} of the 4 MNIST files are not in {directory} ({holds})"
    looked = ", ".join(f"{name[: -len('.gz')]}[.gz]" for name in missing)
    return (
        f"MNIST: {where}; looked for {looked}. Nothing was downloaded (download=False, as with the example's"
        f" --data-dir): name the directory that holds the files, or leave it out to download them once"
        f" to ~/.cache/x10array/mnist (or X10ARRAY_DATA_DIR)"
    )


def _progress(filename: str, done: int, total: int | None, enabled: bool, end: bool = False) -> None:
    if not enabled:
        return
    if total:
        text = f"\rdownloading {filename}: {done / 1e6:.1f}/{total / 1e6:.1f} MB ({100 * done // total}%)"
    else:
        text = f"\rdownloading {filename}: {done / 1e6:.1f} MB"
    sys.stderr.write(text + ("\n" if end else ""))
    sys.stderr.flush()


def _download(url: str, tmp: BinaryIO, filename: str, progress: bool) -> None:
    """Copy `url` into the open temporary file `tmp`, in chunks; raises what the transfer raises."""
    with urlopen(url, timeout=60) as response:
        length = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
        total = int(length) if length and length.isdigit() else None
        done = 0
        while True:
            chunk = response.read(_CHUNK)
            if not chunk:
                break
            tmp.write(chunk)
            done += len(chunk)
            _progress(filename, done, total, progress)
        _progress(filename, done, total, progress, end=True)
        if total is not None and done != total:
            raise OSError(f"the transfer ended after {done} of {total} bytes")


def _fetch(directory: Path, filename: str) -> Path:
    """Download `filename` into `directory` from the first mirror that delivers it intact.

    The bytes go to a hidden temporary name in `directory`; only a file whose decompressed data
    has the expected SHA-256 is renamed to its final name, so an interrupted or failed download
    never leaves a valid-looking file behind."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(
            f"MNIST: cannot create the download directory {directory} ({e}). {_ways_out(directory)}"
        ) from None
    target = directory / filename
    progress = sys.stderr is not None and sys.stderr.isatty()
    failures = []
    for mirror in MIRRORS:
        url = mirror + filename
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{filename}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                _download(url, out, filename, progress)
            data = _read_gzip(tmp, filename, MAX_IDX_BYTES)
            digest = hashlib.sha256(data).hexdigest()
            if digest != SHA256[filename]:
                raise ValueError(f"the data has SHA-256 {digest}, expected {SHA256[filename]}")
            tmp.replace(target)
            return target
        except (OSError, ValueError, EOFError) as e:  # urllib's URLError/HTTPError and timeouts are OSErrors
            failures.append(f"{url} ({_reason(e)})")
        finally:
            tmp.unlink(missing_ok=True)  # after a rename there is nothing left here; after a failure, the part
    tried = "; ".join(failures)
    raise DownloadError(
        f"MNIST: {filename} is not in {directory}, and it could not download it: tried {tried}. {_ways_out(directory)}"
    )


def _reason(e: BaseException) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return str(e) or type(e).__name__


def _find(directory: Path, filename: str) -> Path | None:
    """The file `filename` (gzipped) or its uncompressed twin in `directory`, if there."""
    for candidate in (directory / filename, directory / filename[: -len(".gz")]):
        if candidate.exists():
            return candidate
    return None


class _Epochs:
    """`for batches in data.training`: an endless sequence of reshuffled epochs."""

    def __init__(self, owner: MNIST):
        self.owner = owner

    def __iter__(self) -> Iterator[Iterator[tuple[Any, Any]]]:
        epoch = 0
        while True:
            yield self.owner._batches(self.owner._train_x, self.owner._train_y, shuffle_seed=epoch, drop_remainder=True)
            epoch += 1


class MNIST:
    """The MNIST digits in batches (images float32 NHWC in [0, 1], labels int32).

    Files are read from `data_dir`, else `X10ARRAY_DATA_DIR`, else `~/.cache/x10array/mnist`;
    missing files are downloaded there from the first public mirror (`MIRRORS`) that delivers
    them with the right SHA-256 (unless `download=False`: FileNotFoundError). DownloadError
    when no mirror can; ValueError for a malformed file. Batches are arrays of `xp` (default x10array) on `device`.
    """

    def __init__(
        self, batch_size: int, data_dir: str | os.PathLike[str] | None = None, *, xp: Any = None,
        device: Any = None, seed: int = 0, download: bool = True,
    ) -> None:  # fmt: skip
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"MNIST: batch_size must be a positive int, got {batch_size!r}")
        if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
            raise TypeError(f"MNIST: data_dir must be a str or a path, got {type(data_dir).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"MNIST: seed must be an int, got {type(seed).__name__}")
        if not isinstance(download, bool):
            raise TypeError(f"MNIST: download must be a bool, got {type(download).__name__}")
        if xp is None:
            import x10array as xp
        if device is not None and getattr(xp, "__name__", None) == "x10array":
            extend.resolve_device(device, "MNIST")  # checked now, not at the first batch
        self.batch_size = batch_size
        self.xp = xp
        self.device = device
        self.seed = seed
        directory = _find_dir(data_dir)
        found = {key: _find(directory, name) for key, name in FILES.items()}
        missing = [FILES[key] for key, path in found.items() if path is None]
        if missing and not download:
            raise FileNotFoundError(_not_found(directory, missing))
        arrays = {key: read_idx_file(path or _fetch(directory, FILES[key])) for key, path in found.items()}
        for split in ("train", "test"):
            images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
            if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
                raise ValueError(
                    f"MNIST: {split} images must be uint8 of shape (n, 28, 28), got {images.dtype} {images.shape}"
                )
            if labels.ndim != 1 or labels.dtype != np.uint8:
                raise ValueError(
                    f"MNIST: {split} labels must be uint8 of shape (n,), got {labels.dtype} {labels.shape}"
                )
            if images.shape[0] != labels.shape[0]:
                raise ValueError(f"MNIST: {split} images {images.shape} and labels {labels.shape} do not match")
            if labels.size and int(labels.max()) > 9:
                raise ValueError(f"MNIST: {split} labels must be digits 0-9, found {int(labels.max())}")
        self._train_x, self._train_y = arrays["train_images"], arrays["train_labels"]
        self._test_x, self._test_y = arrays["test_images"], arrays["test_labels"]
        self.training = _Epochs(self)

    @property
    def training_size(self) -> int:
        return (self._train_x.shape[0] // self.batch_size) * self.batch_size

    @property
    def validation(self) -> Iterator[tuple[Any, Any]]:
        """All test images in batches (the last may be smaller)."""
        return self._batches(self._test_x, self._test_y, shuffle_seed=None, drop_remainder=False)

    def _batches(
        self, images: np.ndarray, labels: np.ndarray, *, shuffle_seed: int | None, drop_remainder: bool
    ) -> Iterator[tuple[Any, Any]]:
        n = images.shape[0]
        order = (
            np.arange(n) if shuffle_seed is None else np.random.default_rng((self.seed, shuffle_seed)).permutation(n)
        )
        stop = (n // self.batch_size) * self.batch_size if drop_remainder else n
        for start in range(0, stop, self.batch_size):
            idx = order[start : start + self.batch_size]
            x = (images[idx].astype(np.float32) / np.float32(255.0))[..., None]
            y = labels[idx].astype(np.int32)
            yield self.xp.asarray(x, device=self.device), self.xp.asarray(y, device=self.device)
