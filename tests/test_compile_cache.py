"""The persistent compile cache (x10array/_core/compile_cache.py): compiled lazy programs are
loaded from the disk by a later process, stale or damaged entries are never used, concurrent
processes are safe, and the directory stays within its bound.

The test session turns the cache off (conftest.py); each test here gives its processes a
temporary directory of their own, so nothing is written to the user's ~/.cache.
"""

from __future__ import annotations

import os
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
    lines = out.splitlines()
    values = next(line for line in lines if line.startswith("values")).split()[1:]
    counts = next(line for line in lines if line.startswith("counts")).split()[1:]
    return values, (int(counts[0]), int(counts[1])), out + err


def _entries(top: Path) -> list[Path]:
    return sorted(top.rglob("*-cache"))


def test_a_second_process_loads_the_programs_from_the_disk(tmp_path):
    # (with a jax.jit program of the user's own, which stays out of x10array's cache)
    users_own = SCRIPT + "import jax, jax.numpy as jnp\nprint(jax.jit(lambda a: jnp.sin(a) * 2)(jnp.ones(3)))\n"
    first_values, (compiled, loaded), log = _run(str(tmp_path), script=users_own)
    assert compiled == 3 and loaded == 0, log
    assert "loaded from the disk cache" not in log
    entries = _entries(tmp_path)
    assert len(entries) == 3 and all(e.name.startswith("jit_replay") for e in entries), entries
    # under a subdirectory naming the x10array, jax and jaxlib versions: another version never reads them
    import jax

    assert all(f"jax-{jax.__version__}" in e.parent.name and e.parent.name.startswith("x10array-") for e in entries)
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == first_values
    assert (compiled, loaded) == (0, 3), log
    assert log.count("x10array: loaded from the disk cache") == 3, log


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


def test_two_processes_filling_the_cache_at_once_are_safe(tmp_path):
    procs = [_run(str(tmp_path), wait=False) for _ in range(2)]
    results = [_finish(p) for p in procs]
    assert results[0][0] == results[1][0]
    for _, _, log in results:
        assert "Warning" not in log and "Error" not in log, log
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind
    values, (compiled, loaded), log = _run(str(tmp_path))
    assert values == results[0][0] and (compiled, loaded) == (0, 3), log


def test_eviction_removes_the_least_recently_used_entries(tmp_path):
    now = time.time()
    for i in range(5):  # entry 0 is the oldest, spread over two version folders
        folder = tmp_path / ("old" if i < 2 else "new")
        folder.mkdir(exist_ok=True)
        path = folder / f"k{i}-cache"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - 100 + i, now - 100 + i))
    compile_cache.evict(str(tmp_path), 3000)
    assert [p.name for p in _entries(tmp_path)] == ["k2-cache", "k3-cache", "k4-cache"]
    compile_cache.evict(str(tmp_path), 3000)  # within the bound: nothing more
    assert len(_entries(tmp_path)) == 3


def test_the_size_bound_holds_after_a_write(tmp_path):
    # an entry of another version, used long ago, and a bound that cannot keep it besides new ones
    stale = tmp_path / "x10array-older-version" / "stale-cache"
    stale.parent.mkdir()
    stale.write_bytes(b"x" * (2**20 - 1))
    os.utime(stale, (0, 0))
    _, (compiled, _), _ = _run(str(tmp_path), extra_env={"X10ARRAY_COMPILE_CACHE_MB": "1"})
    assert compiled == 3
    assert not stale.exists()  # the least recently used went first
    assert 0 < sum(e.stat().st_size for e in _entries(tmp_path)) <= 2**20


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
