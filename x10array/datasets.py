"""MNIST from the IDX files: local directory, cache, or the public mirror (SHA-256 checked).

    data = MNIST(batch_size=128, data_dir="../shared/data/mnist")
    for epoch, batches in enumerate(itertools.islice(data.training, 5)):
        for images, labels in batches: ...          # 468 batches of 128 per epoch
    for images, labels in data.validation: ...       # all 10,000 test images

Images are float32 NHWC in [0, 1], labels int32. Every header is checked against the file's
real size before anything large is allocated.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MNIST", "read_idx"]

MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"
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


def read_idx(data: bytes, name: str = "IDX data") -> np.ndarray:
    """Parse one IDX file (already decompressed); ValueError on any malformed header."""
    if len(data) < 4:
        raise ValueError(f"{name}: too short for an IDX header ({len(data)} bytes)")
    zero, type_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0:
        raise ValueError(f"{name}: not an IDX file (bad magic number)")
    if type_code not in _IDX_TYPES:
        raise ValueError(f"{name}: unknown IDX element type 0x{type_code:02x}")
    if not 1 <= ndim <= 4:
        raise ValueError(f"{name}: implausible number of dimensions {ndim}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{name}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = dtype.itemsize
    for d in shape:
        expected *= d
    if len(data) - header != expected:
        raise ValueError(
            f"{name}: the header promises {shape} ({expected} bytes of data) but the file holds {len(data) - header}"
        )
    return np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)


def _find_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get("X10ARRAY_DATA_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "x10array" / "mnist"


def _load(directory: Path, filename: str, download: bool) -> bytes:
    raw_name = filename[: -len(".gz")]
    for candidate in (directory / filename, directory / raw_name):
        if candidate.exists():
            data = candidate.read_bytes()
            return gzip.decompress(data) if candidate.suffix == ".gz" else data
    if not download:
        raise FileNotFoundError(f"MNIST: {filename} is not in {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / filename
    tmp = target.with_suffix(".part")
    with urllib.request.urlopen(MIRROR + filename, timeout=60) as response, open(tmp, "wb") as out:
        out.write(response.read())
    data = gzip.decompress(tmp.read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256[filename]:
        tmp.unlink()
        raise ValueError(f"MNIST: {filename} from the mirror has SHA-256 {digest}, expected {SHA256[filename]}")
    tmp.replace(target)
    return data


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
    missing files are downloaded there from the public mirror (unless `download=False`) and
    their SHA-256 checked. Batches are arrays of `xp` (default x10array) on `device`.
    """

    def __init__(
        self, batch_size: int, data_dir: str | os.PathLike[str] | None = None, *, xp: Any = None,
        device: Any = None, seed: int = 0, download: bool = True,
    ) -> None:  # fmt: skip
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"MNIST: batch_size must be a positive int, got {batch_size!r}")
        if xp is None:
            import x10array as xp
        self.batch_size = batch_size
        self.xp = xp
        self.device = device
        self.seed = seed
        directory = _find_dir(data_dir)
        arrays = {key: read_idx(_load(directory, name, download), name) for key, name in FILES.items()}
        for split in ("train", "test"):
            images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
            if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
                raise ValueError(f"MNIST: {split} images {images.shape} and labels {labels.shape} do not match")
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
