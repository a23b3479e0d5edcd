"""The MNIST loader: IDX parsing and its error paths, and the real files from ../shared."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

import x10array as xp
from x10array.datasets import MNIST, read_idx

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
needs_mnist = pytest.mark.skipif(not MNIST_DIR.exists(), reason="the MNIST files of ../shared are not here")


def idx_bytes(array: np.ndarray, type_code: int = 0x08) -> bytes:
    header = struct.pack(">HBB", 0, type_code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(">u1").tobytes()


def test_read_idx_round_trip():
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    np.testing.assert_array_equal(read_idx(idx_bytes(a)), a)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\x00", "too short"),
        (b"\x12\x34\x08\x01" + b"\x00" * 8, "bad magic"),
        (b"\x00\x00\x42\x01" + b"\x00" * 8, "unknown IDX element type"),
        (b"\x00\x00\x08\x09" + b"\x00" * 40, "implausible number of dimensions"),
        (b"\x00\x00\x08\x03\x00\x00", "truncated IDX header"),
        # a lying header: promises 4 billion images in a 100-byte file; must fail before allocating
        (struct.pack(">HBB3I", 0, 8, 3, 0xFFFFFFFF, 28, 28) + b"\x00" * 100, "promises"),
        (idx_bytes(np.zeros((2, 3), np.uint8))[:-1], "promises"),
    ],
)
def test_malformed_idx_is_a_value_error(data, message):
    with pytest.raises(ValueError, match=message):
        read_idx(data)


def write_fake_mnist(directory: Path, n_train: int, n_test: int, gz: bool) -> None:
    rng = np.random.default_rng(0)
    files = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28)),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28)),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test),
    }
    for name, array in files.items():
        data = idx_bytes(array.astype(np.uint8))
        if gz:
            (directory / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (directory / name).write_bytes(data)


@pytest.mark.parametrize("gz", [True, False])
def test_batches_from_a_local_directory(tmp_path, gz):
    write_fake_mnist(tmp_path, n_train=50, n_test=23, gz=gz)
    data = MNIST(8, tmp_path, download=False)
    epochs = iter(data.training)
    first = list(next(epochs))
    second = list(next(epochs))
    assert len(first) == 6  # 50 // 8, remainder dropped
    images, labels = first[0]
    assert images.shape == (8, 28, 28, 1) and images.dtype == xp.float32
    assert labels.shape == (8,) and labels.dtype == xp.int32
    assert 0.0 <= float(xp.min(images)) and float(xp.max(images)) <= 1.0
    assert not np.array_equal(np.asarray(first[0][1]), np.asarray(second[0][1]))  # reshuffled
    assert [b[0].shape[0] for b in data.validation] == [8, 8, 7]


def test_missing_files_without_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="not in"):
        MNIST(8, tmp_path, download=False)


def test_data_dir_from_the_environment(tmp_path, monkeypatch):
    write_fake_mnist(tmp_path, n_train=16, n_test=4, gz=True)
    monkeypatch.setenv("X10ARRAY_DATA_DIR", str(tmp_path))
    assert MNIST(4, download=False).training_size == 16


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        MNIST(0, "/nonexistent", download=False)


@needs_mnist
def test_real_mnist_files():
    data = MNIST(128, MNIST_DIR, download=False)
    batches = list(next(iter(data.training)))
    assert len(batches) == 468 and data.training_size == 59904
    assert sum(int(b[0].shape[0]) for b in data.validation) == 10000
    images, labels = batches[0]
    assert set(np.unique(np.asarray(labels))) <= set(range(10))
    assert 0.0 < float(xp.mean(images)) < 0.5
