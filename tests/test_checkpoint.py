"""x10array.checkpoint: pytrees of arrays to and from safetensors files.

Round trips are checked bit for bit (NaN payloads, -0.0, integer extremes) from each device onto
each device; the files are checked against the `safetensors` package in both directions; a
mismatched tree, a malformed file and bad arguments give clear errors; writes are atomic.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import x10array as xp
from x10array import checkpoint, nn, optim

safetensors = pytest.importorskip("safetensors")
import safetensors.numpy as stn  # noqa: E402

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = {"eager": EAGER, "lazy": LAZY}


def _host_values() -> dict[str, np.ndarray]:
    """One array of every x10array dtype, with the values a careless copy would change."""
    f32 = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, 1e-45], dtype=np.float32)
    f32 = np.concatenate([f32, np.array([0x7FC00001, 0x7F800001, 0xFFC12345], dtype=np.uint32).view(np.float32)])
    f64 = np.array([0.0, -0.0, np.pi, 5e-324, np.inf], dtype=np.float64)
    f64 = np.concatenate([f64, np.array([0x7FF8000000000001, 0xFFF0000000000F00], dtype=np.uint64).view(np.float64)])
    out = {"float32": f32.reshape(3, 3), "float64": f64, "bool": np.array([[True, False], [False, True]])}
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(name)
        out[name] = np.array([info.min, info.max, 0, 1, info.max // 3], dtype=name)
    out["complex64"] = f32[1:].view(np.complex64)  # (real, imaginary) pairs of the values above
    out["complex128"] = f64[1:].view(np.complex128).reshape(3, 1)
    out["empty"] = np.zeros((0, 4), dtype=np.float32)
    out["scalar0d"] = np.array(7, dtype=np.int32)
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _small_model(device: xp.Device) -> nn.Sequential:
    return nn.Sequential(
        nn.Dense(4, 3, activation="relu", seed=1, device=device), nn.Dense(3, 2, seed=2, device=device)
    )


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("src", list(DEVICES))
@pytest.mark.parametrize("dst", list(DEVICES))
def test_every_dtype_round_trips_bit_for_bit(tmp_path, src, dst):
    host = _host_values()
    tree = {k: xp.asarray(v, device=DEVICES[src]) for k, v in host.items()}
    if src == "lazy":  # pending results too, not only transfers
        tree["pending"] = xp.arange(6, dtype=xp.float32, device=LAZY) * 2.5
        host["pending"] = np.arange(6, dtype=np.float32) * np.float32(2.5)
    path = tmp_path / "all.safetensors"
    checkpoint.save(path, tree)
    back = checkpoint.load(path, like=tree, device=DEVICES[dst])
    assert list(back) == list(tree)
    for key, value in back.items():
        assert isinstance(value, xp.Array) and value.device == DEVICES[dst], key
        assert _same_bits(np.asarray(value.to_device(EAGER)), host[key]), key


@pytest.mark.parametrize("device", list(DEVICES))
def test_model_and_optimizer_state_restore_onto_their_device(tmp_path, device):
    d = DEVICES[device]
    model = _small_model(d)
    opt = optim.Adam(learning_rate=0.01)
    state = opt.init(model)
    x = xp.asarray(np.random.default_rng(0).normal(size=(5, 4)), dtype=xp.float32, device=d)
    grads = nn.to_device(_small_model(d), d)  # any tree of the parameters' shapes
    for _ in range(2):
        model, state = opt.update(model, grads, state)
    path = tmp_path / "run.safetensors"
    checkpoint.save(path, {"model": model, "optimizer": state, "epoch": 2, "note": "two steps", "lr": 0.01})

    fresh = _small_model(d)  # same structure, other values
    like = {"model": fresh, "optimizer": opt.init(fresh), "epoch": 0, "note": "", "lr": 0.0}
    back = checkpoint.load(path, like=like)
    assert back["epoch"] == 2 and back["note"] == "two steps" and back["lr"] == 0.01
    assert back["optimizer"]["step"] == 2 and type(back["model"]) is nn.Sequential
    assert back["model"].layers[0].activation == "relu"  # static parts come from `like`
    for a, b in zip(back["model"].parameters() + back["optimizer"]["m"], model.parameters() + state["m"]):
        assert a.device == d  # device=None: the device of the array it replaces
        assert _same_bits(np.asarray(a.to_device(EAGER)), np.asarray(b.to_device(EAGER)))
    assert _same_bits(np.asarray(back["model"](x).to_device(EAGER)), np.asarray(model(x).to_device(EAGER)))
    # and the restored state continues training exactly like the original
    m1, _ = opt.update(back["model"], grads, back["optimizer"])
    m2, _ = opt.update(model, grads, state)
    for a, b in zip(m1.parameters(), m2.parameters()):
        assert _same_bits(np.asarray(a.to_device(EAGER)), np.asarray(b.to_device(EAGER)))


def test_keys_name_the_path_in_the_tree(tmp_path):
    model = nn.LeNet(seed=0)
    state = optim.SGD(learning_rate=0.1, momentum=0.9).init(model)
    tree = {"model": model, "opt": state, "pair": (xp.ones(2), [xp.zeros(1), None]), 3: xp.ones(1)}
    path = tmp_path / "keys.safetensors"
    checkpoint.save(path, tree)
    keys = set(stn.load_file(str(path)))
    assert {"model.layers.0.filter", "model.layers.0.bias", "model.layers.7.weight", "opt.velocity.0"} <= keys
    assert {"pair.0", "pair.1.0", "3"} <= keys
    assert len(keys) == len(model.parameters()) * 2 + 3


def test_load_without_like_gives_a_flat_dict(tmp_path):
    path = tmp_path / "flat.safetensors"
    checkpoint.save(path, {"a": {"b": xp.arange(3)}, "step": 4})
    flat = checkpoint.load(path, device="xla")
    assert set(flat) == {"a.b", "step"} and flat["step"] == 4
    assert flat["a.b"].device == LAZY and np.asarray(flat["a.b"]).tolist() == [0, 1, 2]


# -- the safetensors package reads our files and we read its files ----------------------------------


def test_safetensors_reads_our_files(tmp_path):
    host = _host_values()
    path = tmp_path / "ours.safetensors"
    checkpoint.save(path, {k: xp.asarray(v) for k, v in host.items()}, metadata={"format": "np"})
    theirs = stn.load_file(str(path))
    assert set(theirs) == set(host)
    for key, value in host.items():
        if key == "complex128":  # float64 pairs, PyTorch's view_as_real layout
            assert _same_bits(theirs[key], value.view(np.float64).reshape(3, 1, 2))
        else:
            assert _same_bits(np.asarray(theirs[key]), value), key
    with safetensors.safe_open(str(path), framework="np") as f:
        meta = f.metadata()
    assert meta["format"] == "np" and json.loads(meta["x10array.complex128"]) == ["complex128"]


def test_we_read_files_of_the_safetensors_package(tmp_path):
    host = {k: v for k, v in _host_values().items() if k != "complex128"}  # the format has no complex128
    half = np.array([1.5, 65504.0, -0.0, 6e-8, np.inf], dtype=np.float16)
    brain = np.array([1.5, -2.25, 3e38, -np.inf, 1e-40], dtype=ml_dtypes.bfloat16)
    path = tmp_path / "theirs.safetensors"
    stn.save_file({**host, "half": half, "brain": brain}, str(path), metadata={"format": "pt"})
    flat = checkpoint.load(path)
    for key, value in host.items():
        assert _same_bits(np.asarray(flat[key]), value), key
    # F16 and BF16 are widened to float32, exactly
    assert _same_bits(np.asarray(flat["half"]), half.astype(np.float32))
    assert _same_bits(np.asarray(flat["brain"]), brain.astype(np.float32))
    like = {k: xp.asarray(v) for k, v in host.items()} | {
        "half": xp.zeros(5, dtype=xp.float32),
        "brain": xp.zeros(5, dtype=xp.float32),
    }
    back = checkpoint.load(path, like=like, device="xla")
    assert back["uint64"].device == LAZY and _same_bits(np.asarray(back["uint64"]), host["uint64"])


# -- structure checked on load ------------------------------------------------------------------------


def test_a_mismatched_tree_is_a_value_error_naming_the_key(tmp_path):
    path = tmp_path / "ref.safetensors"
    ref = {"w": xp.ones((2, 3)), "b": xp.zeros(3, dtype=xp.int32), "step": 1}
    checkpoint.save(path, ref)
    cases = {
        "'extra' is in `like` but not in": {**ref, "extra": xp.ones(1)},
        "holds 'b', which `like` does not have": {"w": ref["w"], "step": 1},
        "'w' has shape (2, 3)": {**ref, "w": xp.ones((3, 2))},
        "'b' has dtype int32": {**ref, "b": xp.zeros(3, dtype=xp.int64)},
        "'step' is a int in": {**ref, "step": 1.0},
        "'w' is a float in `like` but an array": {**ref, "w": 1.0},
        "'step' is an array in `like` but a int": {**ref, "step": xp.ones(())},
    }
    for message, like in cases.items():
        with pytest.raises(ValueError, match="^checkpoint.load: ") as info:
            checkpoint.load(path, like=like)
        assert message in str(info.value), (message, str(info.value))


def _write(path, header: dict, data: bytes, *, length: int | None = None) -> None:
    body = json.dumps(header).encode()
    path.write_bytes((len(body) if length is None else length).to_bytes(8, "little") + body + data)


def test_malformed_files_are_value_errors(tmp_path):
    f4 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    cases = {
        "shorter than the 8-byte": lambda p: p.write_bytes(b"\x01\x02"),
        "does not fit": lambda p: _write(p, {"a": f4}, bytes(8), length=10**6),
        "not JSON": lambda p: p.write_bytes((5).to_bytes(8, "little") + b"{nope" + bytes(8)),
        "not a JSON object": lambda p: _write(p, [1, 2], b""),  # type: ignore[arg-type]
        "'a' lacks a dtype": lambda p: _write(p, {"a": {"shape": [2]}}, bytes(8)),
        "'F8_E4M3', which x10array cannot hold": lambda p: _write(
            p, {"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, bytes(2)
        ),
        "'a' has the shape [-2]": lambda p: _write(p, {"a": {**f4, "shape": [-2]}}, bytes(8)),
        "'a' occupies bytes 0..12": lambda p: _write(p, {"a": {**f4, "data_offsets": [0, 12]}}, bytes(12)),
        "hold 8 bytes of data, the file 9": lambda p: _write(p, {"a": f4}, bytes(9)),
        "holds bytes other than 0 and 1": lambda p: _write(
            p, {"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"
        ),
        "malformed 'x10array.scalars'": lambda p: _write(p, {"__metadata__": {"x10array.scalars": "[1]"}}, b""),
        "not float64 pairs": lambda p: _write(p, {"__metadata__": {"x10array.complex128": '["a"]'}, "a": f4}, bytes(8)),
    }
    for message, make in cases.items():
        path = tmp_path / "bad.safetensors"
        make(path)
        with pytest.raises(ValueError, match="^checkpoint.load: ") as info:
            checkpoint.load(path)
        assert message in str(info.value), (message, str(info.value))
    with pytest.raises(FileNotFoundError):
        checkpoint.load(tmp_path / "missing.safetensors")


def _write_text(path, text: str, data: bytes = b"") -> None:
    body = text.encode()
    path.write_bytes(len(body).to_bytes(8, "little") + body + data)


_DEEP = "[" * 100_000 + "]" * 100_000
_F4 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
# what the error says -> how to make the file; the first eight raised other errors than load's own
_MALFORMED_HEADERS = {
    "deep-header": ("nested too deeply", lambda p: _write_text(p, '{"a":' + _DEEP + "}")),
    "deep-scalars": ("malformed 'x10array.scalars'", lambda p: _write(
        p, {"__metadata__": {"x10array.scalars": '{"a":' + _DEEP + "}"}}, b"")),
    "65-dims": ("65 dimensions", lambda p: _write(
        p, {"a": {**_F4, "shape": [1] * 65, "data_offsets": [0, 4]}}, bytes(4))),
    "0x2^62x2^62": ("larger than an array can be", lambda p: _write(
        p, {"a": {**_F4, "shape": [0, 2**62, 2**62], "data_offsets": [0, 0]}}, b"")),
    "0x2^64": ("larger than an array can be", lambda p: _write(
        p, {"a": {**_F4, "shape": [0, 2**64], "data_offsets": [0, 0]}}, b"")),
    "list-dtype": ("'a' has the dtype ['F32'], not a string", lambda p: _write(
        p, {"a": {**_F4, "dtype": ["F32"]}}, bytes(8))),
    "list-complex128": ("malformed 'x10array.complex128'", lambda p: _write(
        p, {"__metadata__": {"x10array.complex128": '[["a"]]'}, "a": _F4}, bytes(8))),
    "5000-digit-offset": ("the header is not JSON", lambda p: _write_text(
        p, '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,' + "9" * 5000 + "]}}", bytes(8))),
    "tensor-and-scalar": ("'a' both as a tensor and as a scalar", lambda p: _write(
        p, {"__metadata__": {"x10array.scalars": '{"a": 1}'}, "a": _F4}, bytes(8))),
    "list-scalar": ("malformed 'x10array.scalars'", lambda p: _write(
        p, {"__metadata__": {"x10array.scalars": '{"b": [1, 2]}'}}, b"")),
}  # fmt: skip


@pytest.mark.parametrize("case", list(_MALFORMED_HEADERS))
def test_malformed_headers_that_broke_the_parser_are_value_errors(tmp_path, case):
    """Headers that raised RecursionError, NumPy's ValueError, TypeError or Python's integer
    digit limit instead of checkpoint.load's own error."""
    message, make = _MALFORMED_HEADERS[case]
    path = tmp_path / "bad.safetensors"
    make(path)
    for like in (None, {"a": xp.ones(2)}):
        with pytest.raises(ValueError, match="^checkpoint.load: ") as info:
            checkpoint.load(path, like=like)
        assert message in str(info.value), (message, str(info.value))
        assert len(str(info.value)) < 500, str(info.value)  # (a huge header is not repeated)


@pytest.mark.parametrize("device", list(DEVICES))
def test_0d_complex_arrays_round_trip(tmp_path, device):
    tree = {
        "c128": xp.asarray(np.complex128(complex(1.5, -0.0)), device=DEVICES[device]),
        "c64": xp.asarray(np.complex64(complex(-2.5, 3.0)), device=DEVICES[device]),
    }
    path = tmp_path / "z.safetensors"
    checkpoint.save(path, tree)
    for back in (checkpoint.load(path, like=tree), checkpoint.load(path)):
        for key, value in tree.items():
            got = np.asarray(back[key].to_device(EAGER))
            assert got.shape == () and _same_bits(got, np.asarray(value.to_device(EAGER))), key


_STALLED_SAVE = """
import os, sys, time
from x10array import checkpoint
import x10array as xp
def stall(fd):
    print("writing", flush=True)
    time.sleep(600)
os.fsync = stall
checkpoint.save(sys.argv[1], {"w": xp.zeros(100_000)})
"""


def _temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_killed_save_leaves_a_temporary_that_a_later_save_or_load_removes(tmp_path):
    path = tmp_path / "model.safetensors"
    checkpoint.save(path, {"w": xp.ones(3)})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), X10ARRAY_COMPILE_CACHE_DIR="0")
    child = subprocess.Popen([sys.executable, "-c", _STALLED_SAVE, str(path)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "writing\n", child.stderr
        (temporary,) = _temporaries(tmp_path)
        _age(temporary, 3600)  # old, but its save is alive (it holds the lock): never removed
        checkpoint.save(path, {"w": xp.ones(3) * 2})
        assert np.asarray(checkpoint.load(path)["w"]).tolist() == [2.0, 2.0, 2.0]
        assert _temporaries(tmp_path) == [temporary]
    finally:
        child.kill()  # SIGKILL: no cleanup of its own
        child.communicate(timeout=60)
    assert child.returncode == -9 and _temporaries(tmp_path) == [temporary]
    _age(temporary, 0)  # just written by a save that may still be starting: left for now
    checkpoint.load(path)
    assert _temporaries(tmp_path) == [temporary]
    _age(temporary, 2 * checkpoint._STALE_SECONDS)
    (tmp_path / ".other.safetensors.0123456789ab.tmp").write_bytes(b"x")  # another checkpoint's: not ours
    _age(tmp_path / ".other.safetensors.0123456789ab.tmp", 3600)
    assert np.asarray(checkpoint.load(path)["w"]).tolist() == [2.0, 2.0, 2.0]  # a load removes it
    assert _temporaries(tmp_path) == [tmp_path / ".other.safetensors.0123456789ab.tmp"]


def test_bad_arguments_are_clear_errors(tmp_path):
    path = tmp_path / "x.safetensors"
    cases = [
        (TypeError, "path must be a str or a path", lambda: checkpoint.save(3, {"a": xp.ones(1)})),
        (TypeError, "'a.b' is a object", lambda: checkpoint.save(path, {"a": {"b": object()}})),
        (TypeError, "the tree is a single Array", lambda: checkpoint.save(path, xp.ones(1))),
        (TypeError, "dict keys must be str or int", lambda: checkpoint.save(path, {(1, 2): xp.ones(1)})),
        (TypeError, "got 3.5 at 'a.b'", lambda: checkpoint.save(path, {"a": {"b": {3.5: None}}, "w": xp.ones(1)})),
        (ValueError, "two leaves have the key '1'", lambda: checkpoint.save(path, {1: xp.ones(1), "1": xp.ones(1)})),
        (ValueError, "'x10array.' are reserved", lambda: checkpoint.save(path, {}, metadata={"x10array.a": "b"})),
        (TypeError, "metadata must map str to str", lambda: checkpoint.save(path, {}, metadata={"a": 1})),
        (TypeError, "'h' has dtype float16", lambda: checkpoint.save(path, {"h": np.ones(2, np.float16)})),
        (FileNotFoundError, "does not exist", lambda: checkpoint.save(tmp_path / "no" / "x", {"a": xp.ones(1)})),
        (ValueError, "checkpoint.load: ", lambda: checkpoint.load(path, device="tpu:7:xla")),
        (TypeError, "path must be a str or a path", lambda: checkpoint.load(None)),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match="^checkpoint.(save|load): ") as info:
            call()
        assert message in str(info.value), (message, str(info.value))
    assert not os.listdir(tmp_path)  # nothing written by a refused save


# -- atomic writes ------------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    checkpoint.save(path, {"w": xp.ones(3)})
    before = path.read_bytes()

    def crash(fd):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="simulated"):
        checkpoint.save(path, {"w": xp.zeros(3)})
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.safetensors"]


def test_the_file_is_synced_under_a_temporary_name_in_its_directory_then_renamed(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 real_fsync(fd))[1])  # fmt: skip
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", str(a))), real_replace(a, b))[1])
    checkpoint.save(path, {"w": xp.ones(3)})
    monkeypatch.undo()
    (kind1, tmp), (kind2, replaced) = events[:2]
    assert kind1 == "fsync" and kind2 == "replace" and tmp == replaced
    assert os.path.dirname(tmp) == str(tmp_path) and tmp != str(path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as open() would make it
    assert np.asarray(checkpoint.load(path)["w"]).tolist() == [1.0, 1.0, 1.0]


# -- the MNIST demo's --save and --resume (the real MNIST files, a few batches per epoch) -----------

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
needs_mnist = pytest.mark.skipif(not MNIST_DIR.exists(), reason="the MNIST files of ../shared are not here")


def _demo(*args: str) -> None:
    from x10array.examples import mnist

    assert mnist.main([*args, "--data-dir", str(MNIST_DIR), "--max-batches", "2", "--batch-size", "32"]) == 0


@needs_mnist
def test_demo_resumed_training_is_bit_for_bit_the_uninterrupted_one(tmp_path, capsys):
    straight, first, resumed = (str(tmp_path / f"{n}.safetensors") for n in ("straight", "first", "resumed"))
    _demo("--device", "eager", "--epochs", "2", "--save", straight)
    _demo("--device", "eager", "--epochs", "1", "--save", first)
    _demo("--device", "eager", "--epochs", "2", "--resume", first, "--save", resumed)
    out = capsys.readouterr().out
    assert f"Resumed from {first} after 1 epochs" in out and out.count("[Epoch 1]") == 2
    assert Path(resumed).read_bytes() == Path(straight).read_bytes() != Path(first).read_bytes()
    # and onto the lazy device: training goes on there from the eager run's checkpoint
    _demo("--device", "xla", "--epochs", "3", "--resume", resumed, "--save", first)
    out = capsys.readouterr().out
    assert "[Epoch 2]" in out and "[Epoch 1]" not in out
    assert checkpoint.load(first)["epoch"] == 3


@needs_mnist
def test_demo_refuses_bad_save_and_resume_arguments(tmp_path, capsys):
    from x10array.examples import mnist

    other = tmp_path / "other.safetensors"
    checkpoint.save(other, {"weights": xp.ones(3)})
    cases = [
        (2, "need one device", ["--save", str(tmp_path / "x.safetensors")]),
        (2, "--resume: no file", ["--device", "eager", "--resume", str(tmp_path / "missing")]),
        (2, "--save: the directory", ["--device", "eager", "--save", str(tmp_path / "no" / "x")]),
        (1, "is in `like` but not in", ["--device", "eager", "--resume", str(other)]),
    ]
    for code, message, args in cases:
        with pytest.raises(SystemExit) as info:
            mnist.main([*args, "--data-dir", str(MNIST_DIR), "--max-batches", "1"])
        assert info.value.code == code and message in capsys.readouterr().err, (message, info.value.code)


# -- docs/checkpoint.md ------------------------------------------------------------------------------


def test_the_page_runs_and_prints_what_it_shows():
    """Each ```python block of docs/checkpoint.md runs (in order, in one fresh process) and
    prints the ```text block that follows it."""
    doc = Path(__file__).resolve().parents[1] / "docs" / "checkpoint.md"
    blocks = re.findall(r"```(\w+)\n(.*?)```", doc.read_text(), re.S)
    pairs = [(body, blocks[i + 1][1]) for i, (lang, body) in enumerate(blocks) if lang == "python"]
    assert len(pairs) == 3 and all(blocks[i + 1][0] == "text" for i, (lang, _) in enumerate(blocks) if lang == "python")
    script = "".join(f"print('<<<block>>>')\n{code}\n" for code, _ in pairs)
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    env["PYTHONPATH"] = str(doc.parents[1])
    result = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=300,
                            env=env, cwd=doc.parents[1])  # fmt: skip
    assert result.returncode == 0, result.stderr
    outputs = result.stdout.split("<<<block>>>\n")[1:]
    for (code, expected), got in zip(pairs, outputs, strict=True):
        assert got == expected, f"the block\n{code}\nprinted\n{got}\nwhere the page shows\n{expected}"
