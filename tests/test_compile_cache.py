"""The persistent compile cache (x10array/_core/compile_cache.py): compiled lazy programs are
loaded from the disk by a later process, stale or damaged entries are never used, concurrent
processes are safe, and the directory stays within its bound.

The test session turns the cache off (conftest.py); each test here gives its processes a
temporary directory of their own, so nothing is written to the user's ~/.cache.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from x10array._core import compile_cache
from x10array.extend import settings

ROOT = Path(__file__).resolve().parent.parent

# Three lazy graphs compiled at their first sighting; prints one line of results and one of counters.
SCRIPT = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("always")
    import x10array as xp
    from x10array._backends.lazy import compile_threshold
    d = xp.Device.default_xla
    values = []
    with compile_threshold(1):
        x = xp.reshape(xp.arange(64 * 64, dtype=xp.float64, device=d), (64, 64)) / 4096.0
        values.append(float(xp.sum(xp.sin(x) @ x + 2.0)))
        values.append(float(xp.max(xp.exp(x) - xp.cos(x))))
        values.append(float(xp.mean(xp.tanh(x @ x) * 3.0)))
    m = xp.metrics()
    print("values", *values)
    print("counts", m.compile_count, m.disk_cache_loads)
    """
)


def _run(cache_dir: str | None, *, script: str = SCRIPT, extra_env: dict[str, str] | None = None, wait: bool = True):
    env = dict(os.environ, PYTHONPATH=str(ROOT), X10ARRAY_LOG_COMPILES="1")
    env.pop("X10ARRAY_COMPILE_CACHE_DIR", None)
    if cache_dir is not None:
        env["X10ARRAY_COMPILE_CACHE_DIR"] = cache_dir
    env.update(extra_env or {})
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return _finish(proc) if wait else proc


def _finish(proc: subprocess.Popen) -> tuple[list[str], tuple[int, int], str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return _finish_output(out, err)


def _finish_output(out: str, err: str) -> tuple[list[str], tuple[int, int], str]:
    lines = out.splitlines()
    values = next(line for line in lines if line.startswith("values")).split()[1:]
    counts = next(line for line in lines if line.startswith("counts")).split()[1:]
    return values, (int(counts[0]), int(counts[1])), out + err


def _entries(top: Path) -> list[Path]:
    """The entries under `top`, but the subnormal probe's (_core.xla_numerics.xla_flushes)."""
    return sorted(p for p in top.rglob("*-cache") if not p.name.startswith(_PROBES))


_PROBES = ("jit_flush_probe-",)  # xla_numerics.xla_flushes'


def test_a_second_process_loads_the_programs_from_the_disk(tmp_path):
    # (with a jax.jit program of the user's own, which stays out of x10array's cache)
    users_own = SCRIPT + "import jax, jax.numpy as jnp\nprint(jax.jit(lambda a: jnp.sin(a) * 2)(jnp.ones(3)))\n"
    disk = "from x10array._core import compile_cache\nprint('disk', *compile_cache.thread_counts())\n"
    first_values, (compiled, loaded), log = _run(str(tmp_path), script=users_own + disk)
    assert compiled == 3 and loaded == 0, log
    assert "loaded from the disk cache" not in log
    entries = _entries(tmp_path)
    assert len(entries) == 3 and all(e.name.startswith("jit_replay") for e in entries), entries
    # the subnormal probe (where the process makes it) is compiled once, and loaded by later
    # processes with the programs
    probes = sorted(p for p in tmp_path.rglob("*-cache") if p.name.startswith(_PROBES))
    assert {p.name.partition("-")[0] for p in probes} <= {"jit_flush_probe"}, probes
    assert all(p.parent == entries[0].parent for p in probes), probes
    assert f"disk 0 {len(entries) + len(probes)}" in log, log
    _, _, log = _run(str(tmp_path), script=SCRIPT + disk)
    assert f"disk {len(entries) + len(probes)} 0" in log, log  # all loaded, nothing written
    # under a subdirectory naming the x10array, jax and jaxlib versions: another version never reads them
    import jax

    assert all(f"jax-{jax.__version__}" in e.parent.name and e.parent.name.startswith("x10array-") for e in entries)
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == first_values
    assert (compiled, loaded) == (0, 3), log
    assert log.count("x10array: loaded from the disk cache") == 3, log


def test_a_process_on_another_cpu_compiles_its_own_programs(tmp_path):
    # XLA's CPU code is generated for the host's instruction set, which jax's key does not name:
    # a cache shared by machines of different CPUs must not hand one the other's programs
    first_values, (compiled, _), _ = _run(str(tmp_path))
    assert compiled == 3
    other_cpu = "from x10array._core import compile_cache\ncompile_cache._host = lambda: 'othercpu'\n" + SCRIPT
    values, (compiled, loaded), log = _run(str(tmp_path), script=other_cpu)
    assert values == first_values and (compiled, loaded) == (3, 0), log
    tags = {e.parent.name.rpartition("-cpu-")[2] for e in _entries(tmp_path)}
    assert tags == {"othercpu", compile_cache._host()}, tags
    _, (compiled, loaded), log = _run(str(tmp_path))  # this CPU's entries are still there
    assert (compiled, loaded) == (0, 3), log


def test_off_when_empty_or_zero_and_xdg_cache_home_is_the_default(tmp_path):
    _, (compiled, loaded), _ = _run("0", extra_env={"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert (compiled, loaded) == (3, 0)
    assert not (tmp_path / "xdg").exists()
    _, (compiled, _), _ = _run(None, extra_env={"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert compiled == 3
    assert len(_entries(tmp_path / "xdg" / "x10array" / "xla")) >= 3


def test_a_corrupted_or_truncated_entry_is_skipped_with_a_warning_and_rewritten(tmp_path):
    first_values, _, _ = _run(str(tmp_path))
    entries = _entries(tmp_path)
    entries[0].write_bytes(entries[0].read_bytes()[: len(entries[0].read_bytes()) // 2])  # truncated
    damaged = bytearray(entries[1].read_bytes())
    for i in range(len(damaged) // 2, len(damaged) // 2 + 16):
        damaged[i] ^= 0xFF
    entries[1].write_bytes(bytes(damaged))  # corrupted in the middle
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == first_values
    assert (compiled, loaded) == (2, 1), log
    assert log.count("is corrupted or truncated") == 2, log
    values, (compiled, loaded), log = _run(str(tmp_path))  # written again: all loaded now
    assert values == first_values and (compiled, loaded) == (0, 3), log
    assert "corrupted" not in log


@pytest.mark.serial  # two processes racing on one directory, each with a deadline
def test_two_processes_filling_the_cache_at_once_are_safe(tmp_path):
    procs = [_run(str(tmp_path), wait=False) for _ in range(2)]
    results = [_finish(p) for p in procs]
    assert results[0][0] == results[1][0]
    for _, _, log in results:
        assert "Warning" not in log and "Error" not in log, log
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == results[0][0] and (compiled, loaded) == (0, 3), log


def _version_folder(top: Path, name: str) -> Path:
    folder = top / f"x10array-{name}-entry2-jax-0.0-jaxlib-0.0"
    folder.mkdir(exist_ok=True)
    return folder


def test_eviction_removes_the_least_recently_used_entries(tmp_path):
    now = time.time()
    for i in range(5):  # entry 0 is the oldest, spread over two version folders
        folder = _version_folder(tmp_path, "old" if i < 2 else "new")
        path = folder / f"k{i}-cache"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - 100 + i, now - 100 + i))
    compile_cache.evict(str(tmp_path), 3000)
    assert [p.name for p in _entries(tmp_path)] == ["k2-cache", "k3-cache", "k4-cache"]
    compile_cache.evict(str(tmp_path), 3000)  # within the bound: nothing more
    assert len(_entries(tmp_path)) == 3


def test_eviction_removes_only_what_x10array_wrote(tmp_path):
    # the cache directory pointed at a shared one (~/.cache): other tools' files, old and big,
    # some named like entries, must survive any bound
    others = [
        tmp_path / "otherapp" / "thumbnails-cache",
        tmp_path / "fontconfig-cache",
        tmp_path / "jax" / "jit_f-0123-cache",  # jax's own cache directory
        tmp_path / "x10array-notes" / "readme-cache",  # not a version folder of ours
        _version_folder(tmp_path, "1.0") / "autotune" / "deep-cache",  # (jax's XLA caches go in subfolders)
        _version_folder(tmp_path, "1.0") / "notes.txt",
    ]
    for path in others:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"o" * 5000)
        os.utime(path, (0, 0))
    ours = _version_folder(tmp_path, "1.0") / "jit_g-cache"
    ours.write_bytes(b"x" * 1000)
    compile_cache.evict(str(tmp_path), 1)
    assert all(p.exists() for p in others), [p for p in others if not p.exists()]
    assert not ours.exists()


def test_temporary_files_count_and_stale_ones_are_removed(tmp_path):
    folder = _version_folder(tmp_path, "1.0")
    now = time.time()
    stale = folder / f"jit_a-cache.{os.getpid()}.1.tmp"  # a write killed midway, long ago
    stale.write_bytes(b"t" * 4000)
    os.utime(stale, (now - 2 * compile_cache._STALE_SECONDS, now - 2 * compile_cache._STALE_SECONDS))
    fresh = folder / f"jit_b-cache.{os.getpid()}.2.tmp"  # a write in progress: left to its writer
    fresh.write_bytes(b"t" * 3000)
    entry = folder / "jit_c-cache"
    entry.write_bytes(b"x" * 1000)
    compile_cache.evict(str(tmp_path), 10_000)  # within the bound, but the stale one is garbage
    assert not stale.exists() and fresh.exists() and entry.exists()
    compile_cache.evict(str(tmp_path), 3500)  # the fresh temporary file counts: the entry goes
    assert fresh.exists() and not entry.exists()


def test_the_size_bound_holds_after_a_write(tmp_path):
    # an entry of another version, used long ago, and a bound that cannot keep it besides new ones
    stale = _version_folder(tmp_path, "older") / "stale-cache"
    stale.write_bytes(b"x" * (2**20 - 1))
    os.utime(stale, (0, 0))
    _, (compiled, _), _ = _run(str(tmp_path), extra_env={"X10ARRAY_COMPILE_CACHE_MB": "1"})
    assert compiled == 3
    assert not stale.exists()  # the least recently used went first
    assert 0 < sum(e.stat().st_size for e in _entries(tmp_path)) <= 2**20


def test_a_write_lists_the_directory_only_when_the_bound_or_the_time_asks(monkeypatch, tmp_path):
    # listing a cache of 4,600 entries took 30 ms, at every compile; a full one holds far more
    top = str(tmp_path)
    folder = _version_folder(tmp_path, "1.0")
    (folder / "old-cache").write_bytes(b"x" * 1000)
    scans = []
    evict = compile_cache.evict
    monkeypatch.setattr(compile_cache, "evict", lambda top, limit: scans.append(limit) or evict(top, limit))
    clock = [1000.0]
    monkeypatch.setattr(compile_cache, "_clock", lambda: clock[0])
    monkeypatch.setattr(compile_cache, "_USAGE", {})
    compile_cache.written(top, 500, 5000)  # a process's first write lists the directory
    assert len(scans) == 1 and compile_cache._USAGE[top][2] == 1000
    for _ in range(6):  # within the bound and the minute: counted, not listed
        compile_cache.written(top, 500, 5000)
    assert len(scans) == 1 and compile_cache._USAGE[top][2] == 4000
    os.utime(folder / "old-cache", (0, 0))
    (folder / "new-cache").write_bytes(b"x" * 4500)  # a write that would pass the bound lists it
    compile_cache.written(top, 4500, 5000)
    assert len(scans) == 2 and not (folder / "old-cache").exists() and (folder / "new-cache").exists()
    assert compile_cache._USAGE[top][2] == 4500
    clock[0] += compile_cache._RESCAN_SECONDS  # another process may have written meanwhile
    compile_cache.written(top, 10, 5000)
    assert len(scans) == 3
    compile_cache._USAGE[top][1] = 2.0  # a listing that took 2 s is not repeated within 200 s
    clock[0] += compile_cache._RESCAN_SECONDS
    compile_cache.written(top, 10, 5000)
    assert len(scans) == 3
    clock[0] += 200.0
    compile_cache.written(top, 10, 5000)
    assert len(scans) == 4
    compile_cache.written(top, 10, 2000)  # a smaller bound (the setting changed): listed at once
    assert len(scans) == 5 and compile_cache._USAGE[top][2] <= 2000


def test_the_cache_directory_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with settings.override(X10ARRAY_COMPILE_CACHE_DIR=None):
        assert compile_cache.root() == str(tmp_path / "x10array" / "xla")
    for off in ("", "0", " 0 "):
        with settings.override(X10ARRAY_COMPILE_CACHE_DIR=off):
            assert compile_cache.root() is None and compile_cache.directory() is None
    with settings.override(X10ARRAY_COMPILE_CACHE_DIR=str(tmp_path / "mine")):
        assert compile_cache.directory().startswith(str(tmp_path / "mine" / "x10array-"))
    with pytest.raises(ValueError, match="X10ARRAY_COMPILE_CACHE_MB"):
        settings.set("X10ARRAY_COMPILE_CACHE_MB", "0")


# -- damaged entries, under either compression ---------------------------------------------------

# jax compresses entries with zstd when it can import it (the `zstandard` package, or Python
# 3.14's compression.zstd), else with zlib; a process that must use zlib is denied both.
_NO_ZSTD = "import sys\nsys.modules['zstandard'] = None\nsys.modules['compression.zstd'] = None\n"
_SAYS_COMPRESSION = (
    "from jax._src import compilation_cache as _cc\n"
    "print('compression', 'zstd' if (_cc.zstd or _cc.zstandard) else 'zlib')\n"
)


def _zstd_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("zstandard") is not None or sys.version_info >= (3, 14)


@pytest.mark.parametrize(
    "trials", [2, pytest.param(8, marks=pytest.mark.slow)], ids=lambda n: f"{n}-runs"
)  # (the slow one in .ci/run's slow line)
@pytest.mark.parametrize("compression", ["zstd", "zlib"])
def test_flipped_bits_in_entries_never_crash_or_load_and_are_recompiled(tmp_path, compression, trials):
    """One-bit flips on disk (with zstd, which has no checksum, they crashed XLA's deserializer
    or loaded a wrong program before entries had a checksum of their own): each run flips one
    bit in every entry (3 programs), in a subprocess (a crash is its exit status); every flip
    must be caught, the entry removed and compiled again, with the values of the undamaged
    cache."""
    if compression == "zstd" and not _zstd_available():
        pytest.skip("zstandard is not installed (pip install zstandard; it is in the [test] extra)")
    script = (_NO_ZSTD if compression == "zlib" else "") + SCRIPT + _SAYS_COMPRESSION
    first_values, (compiled, _), log = _run(str(tmp_path), script=script)
    assert f"compression {compression}" in log and compiled == 3, log
    entries = _entries(tmp_path)
    pristine = {e: e.read_bytes() for e in entries}
    rng = random.Random(f"flips-{compression}-{trials}")
    head = compile_cache._HEAD
    for trial in range(trials):
        flipped = []
        for i, (entry, data) in enumerate(pristine.items()):
            damaged = bytearray(data)
            # the first entry of the first trial is hit in x10array's own header, the others anywhere
            bit = rng.randrange(head * 8) if trial == i == 0 else rng.randrange(len(data) * 8)
            damaged[bit // 8] ^= 1 << (bit % 8)
            entry.write_bytes(bytes(damaged))
            flipped.append(bit)
        proc = _run(str(tmp_path), script=script, wait=False)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"bits {flipped}: exit status {proc.returncode}\n{err[-3000:]}"
        values, (compiled, loaded), log = _finish_output(out, err)
        assert values == first_values, f"bits {flipped}: wrong values\n{log}"
        assert (compiled, loaded) == (3, 0), f"bits {flipped}\n{log}"
        assert log.count("is corrupted or truncated") == 3, f"bits {flipped}\n{log}"
    # written again by the last run: loaded, intact, with no warning
    values, (compiled, loaded), log = _run(str(tmp_path), script=script)
    assert values == first_values and (compiled, loaded) == (0, 3) and "corrupted" not in log, log


def test_an_entry_under_another_key_or_from_before_the_checksum_is_not_loaded(tmp_path):
    first_values, _, _ = _run(str(tmp_path))
    a, b, c = _entries(tmp_path)
    a.write_bytes(b.read_bytes())  # intact bytes, but another program's
    c.write_bytes(c.read_bytes()[compile_cache._HEAD :])  # jax's bytes alone (the first format)
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == first_values and (compiled, loaded) == (2, 1), log
    assert log.count("is corrupted or truncated") == 2, log


def test_a_bad_size_bound_is_a_clear_error_at_the_first_compile(tmp_path):
    # (it was read only inside jax's write, which turned the ValueError into a warning and
    # never applied the bound)
    proc = _run(str(tmp_path), extra_env={"X10ARRAY_COMPILE_CACHE_MB": "abc"}, wait=False)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    assert err.strip().splitlines()[-1].startswith("ValueError: X10ARRAY_COMPILE_CACHE_MB='abc': expected"), err
    assert not _entries(tmp_path)
