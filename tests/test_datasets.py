"""The MNIST loader: IDX parsing and its error paths, and the real files from ../shared."""

from __future__ import annotations

import gzip
import hashlib
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import x10array as xp
from x10array import datasets
from x10array.datasets import MNIST, read_idx, read_idx_file

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


# --- files on disk: every malformed IDX file is a ValueError naming it, with bounded memory ---


def write_file(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


@pytest.mark.parametrize("suffix", [".gz", ""])
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda good: good[:-7], "promises"),  # truncated data
        (lambda good: good[:10], "truncated IDX header"),
        (lambda good: good + b"\x00" * 5, "promises|more data"),  # oversized: data past the header's promise
        (lambda good: b"\x08\x00" + good[2:], "bad magic"),
        (lambda good: good[:3] + b"\x07" + good[4:], "implausible number of dimensions"),
        (lambda good: good[:2] + b"\x42" + good[3:], "unknown IDX element type"),
    ],
    ids=["truncated", "truncated-header", "oversized", "wrong-magic", "wrong-dimension", "wrong-type"],
)
def test_malformed_idx_files(tmp_path, suffix, make, message):
    good = idx_bytes(np.arange(60, dtype=np.uint8).reshape(3, 4, 5))
    np.testing.assert_array_equal(
        read_idx_file(write_file(tmp_path / f"ok{suffix}", good)), np.arange(60).reshape(3, 4, 5)
    )
    path = write_file(tmp_path / f"bad{suffix}", make(good))
    with pytest.raises(ValueError, match=message) as info:
        read_idx_file(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_gzip_is_a_value_error(tmp_path, damage):
    packed = gzip.compress(idx_bytes(np.random.default_rng(0).integers(0, 256, (40, 28, 28)).astype(np.uint8)))
    if damage == "truncated":
        packed = packed[: len(packed) // 2]
    else:
        packed = packed[:200] + bytes(b ^ 0x5A for b in packed[200:260]) + packed[260:]
    path = tmp_path / "x-idx3-ubyte.gz"
    path.write_bytes(packed)
    with pytest.raises(ValueError, match="corrupted or truncated gzip|promises") as info:
        read_idx_file(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".gz", ""])
@pytest.mark.parametrize("count", [0xFFFFFFFF, 600_000])  # over the size limit; under it but a lie
def test_lying_header_allocates_nothing_large(tmp_path, suffix, count):
    import tracemalloc

    path = write_file(tmp_path / f"lie{suffix}", struct.pack(">HBB3I", 0, 8, 3, count, 28, 28) + b"\x01" * 5000)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="oversized|promises"):
            read_idx_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # the header claims up to 3.4 GB; a few chunks were read


def test_mnist_checks_the_images_dimensions(tmp_path):
    write_fake_mnist(tmp_path, n_train=8, n_test=4, gz=True)
    wrong = np.zeros((8, 28, 27), np.uint8)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(wrong)))
    with pytest.raises(ValueError, match=r"MNIST: train images must be uint8 of shape \(n, 28, 28\)"):
        MNIST(4, tmp_path, download=False)


def test_missing_files_message_names_the_ways_out(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        MNIST(8, tmp_path, download=False)
    message = str(info.value)
    assert "--data-dir" in message and "X10ARRAY_DATA_DIR" in message
    assert all(f"{name[: -len('.gz')]}[.gz]" in message for name in datasets.FILES.values())


# --- downloads: mirrors are file:// URLs or injected openers; nothing touches the network ---


def make_mirror(directory: Path, monkeypatch: pytest.MonkeyPatch, n_train: int = 16, n_test: int = 8) -> str:
    """A directory holding four fake MNIST files; the expected SHA-256s become theirs."""
    directory.mkdir()
    write_fake_mnist(directory, n_train=n_train, n_test=n_test, gz=True)
    for name in datasets.FILES.values():
        data = gzip.decompress((directory / name).read_bytes())
        monkeypatch.setitem(datasets.SHA256, name, hashlib.sha256(data).hexdigest())
    return directory.as_uri() + "/"


def final_and_partial_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_download_from_a_mirror(tmp_path, monkeypatch):
    mirror = make_mirror(tmp_path / "mirror", monkeypatch)
    monkeypatch.setattr(datasets, "MIRRORS", (mirror,))
    cache = tmp_path / "cache"
    data = MNIST(4, cache)
    assert data.training_size == 16
    assert final_and_partial_files(cache) == sorted(datasets.FILES.values())  # no temporary file left
    for name in datasets.FILES.values():
        assert (cache / name).read_bytes() == (tmp_path / "mirror" / name).read_bytes()
    MNIST(4, cache, download=False)  # the cache now serves them


@pytest.mark.parametrize("first", ["missing", "wrong-checksum", "not-gzip"])
def test_a_failing_first_mirror_falls_back_to_the_second(tmp_path, monkeypatch, first):
    good = make_mirror(tmp_path / "good", monkeypatch)
    bad = tmp_path / "bad"
    if first != "missing":
        bad.mkdir()
        for name in datasets.FILES.values():
            payload = gzip.compress(idx_bytes(np.ones((3, 28, 28), np.uint8))) if first == "wrong-checksum" else b"junk"
            (bad / name).write_bytes(payload)
    monkeypatch.setattr(datasets, "MIRRORS", (bad.as_uri() + "/", good))
    cache = tmp_path / "cache"
    assert MNIST(4, cache).training_size == 16
    assert final_and_partial_files(cache) == sorted(datasets.FILES.values())


def test_every_mirror_failing_is_one_message(tmp_path, monkeypatch):
    mirrors = ((tmp_path / "m1").as_uri() + "/", (tmp_path / "m2").as_uri() + "/")
    monkeypatch.setattr(datasets, "MIRRORS", mirrors)
    cache = tmp_path / "cache"
    with pytest.raises(datasets.DownloadError) as info:
        MNIST(4, cache)
    message = str(info.value)
    for mirror in mirrors:
        assert mirror + "train-images-idx3-ubyte.gz" in message  # what was tried
    assert "No such file" in message or "not found" in message.lower()  # why it failed
    assert "--data-dir DIR" in message and "X10ARRAY_DATA_DIR" in message  # the ways out
    assert all(name in message for name in datasets.FILES.values())
    assert final_and_partial_files(cache) == []


class _Response:
    """An HTTP response that delivers `data` in chunks and then raises `error` (an interrupted transfer)."""

    def __init__(self, data: bytes, error: BaseException | None, length: int | None = None):
        self.data, self.error, self.pos = data, error, 0
        self.headers = {"Content-Length": str(length if length is not None else len(data))}

    def read(self, n: int = -1) -> bytes:
        if self.pos >= len(self.data) // 2 and self.error is not None:
            raise self.error
        chunk = self.data[self.pos : self.pos + min(n, 1000)]
        self.pos += len(chunk)
        return chunk

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("interruption", ["KeyboardInterrupt", "ConnectionResetError", "short"])
def test_an_interrupted_download_leaves_no_file(tmp_path, monkeypatch, interruption):
    mirror = make_mirror(tmp_path / "mirror", monkeypatch)
    payload = (tmp_path / "mirror" / "train-images-idx3-ubyte.gz").read_bytes()
    error = {"KeyboardInterrupt": KeyboardInterrupt(), "ConnectionResetError": ConnectionResetError(104, "reset")}
    responses = {
        "KeyboardInterrupt": lambda: _Response(payload, KeyboardInterrupt()),
        "ConnectionResetError": lambda: _Response(payload, error["ConnectionResetError"]),
        "short": lambda: _Response(payload[: len(payload) // 2], None, length=len(payload)),
    }
    monkeypatch.setattr(datasets, "urlopen", lambda url, timeout: responses[interruption]())
    monkeypatch.setattr(datasets, "MIRRORS", (mirror, mirror))
    cache = tmp_path / "cache"
    expected = KeyboardInterrupt if interruption == "KeyboardInterrupt" else datasets.DownloadError
    with pytest.raises(expected) as info:
        MNIST(4, cache)
    assert final_and_partial_files(cache) == []
    if interruption == "short":
        assert "ended after" in str(info.value)


@pytest.mark.parametrize("tty", [True, False])
def test_download_progress_only_on_a_terminal(tmp_path, monkeypatch, tty):
    import io

    class Stderr(io.StringIO):
        def isatty(self) -> bool:
            return tty

    monkeypatch.setattr(datasets, "MIRRORS", (make_mirror(tmp_path / "mirror", monkeypatch),))
    stderr = Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    MNIST(4, tmp_path / "cache")
    text = stderr.getvalue()
    if tty:
        assert "downloading train-images-idx3-ubyte.gz" in text and "(100%)" in text
    else:
        assert text == ""


def test_the_example_without_network_says_what_to_do(tmp_path, monkeypatch, capsys):
    from x10array.examples import mnist as example

    monkeypatch.setattr(datasets, "MIRRORS", ((tmp_path / "nowhere").as_uri() + "/",))
    with xp.extend.settings.override(X10ARRAY_DATA_DIR=tmp_path / "data"), pytest.raises(SystemExit) as info:
        example.main(["--device", "eager", "--epochs", "1"])  # no --data-dir: the download
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert "could not download" in err and "--data-dir DIR" in err and "X10ARRAY_DATA_DIR" in err
    assert f"is not in {tmp_path / 'data'}" in err


@pytest.mark.parametrize("case", ["absent", "empty", "one file"])
def test_a_data_dir_without_the_files_says_so_and_what_it_looked_for(tmp_path, monkeypatch, capsys, case):
    """Issue 28: `--data-dir path/that/does/not/exist` created the directory as a download
    target and spoke only of downloads; a directory given is read, and its lack is the message."""
    from x10array.examples import mnist as example

    monkeypatch.setattr(datasets, "MIRRORS", ((tmp_path / "nowhere").as_uri() + "/",))
    given = tmp_path / "data"
    if case != "absent":
        given.mkdir()
    if case == "one file":
        write_fake_mnist(given, n_train=4, n_test=4, gz=False)
        for name in list(datasets.FILES.values())[1:]:
            (given / name[: -len(".gz")]).unlink()
    with pytest.raises(SystemExit) as info:
        example.main(["--device", "eager", "--epochs", "1", "--data-dir", str(given)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "download" not in err.split("Nothing was")[0]
    expected = {
        "absent": f"{given} does not exist",
        "empty": f"4 of the 4 MNIST files are not in {given} (it is empty)",
        "one file": f"3 of the 4 MNIST files are not in {given} (it holds train-images-idx3-ubyte)",
    }
    assert expected[case] in err
    looked = [name[: -len(".gz")] + "[.gz]" for name in datasets.FILES.values()]
    assert all((name in err) == (case != "one file" or i > 0) for i, name in enumerate(looked)), err
    if case == "absent":
        assert not given.exists(), "a directory given is not created as a download target"
    else:
        assert sorted(p.name for p in given.iterdir()) == (["train-images-idx3-ubyte"] if case == "one file" else [])


def test_missing_files_name_what_was_looked_for(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"does not exist; looked for train-images-idx3-ubyte\[.gz\], "):
        MNIST(8, tmp_path / "absent", download=False)
    assert not (tmp_path / "absent").exists()
