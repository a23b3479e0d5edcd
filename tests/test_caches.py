"""Every cache is bounded, and a compiled program that leaves the cache frees what it held."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
from _util import run_benchmark

import x10array as xp
from x10array._backends.lazy import shapes as _shapes
from x10array._core import devices as _devices
from x10array._core import lru as _lru
from x10array._core import op_programs as _op_programs
from x10array._core import settings

LAZY = xp.Device("cpu", 0, "xla")


def test_lru_evicts_the_least_recently_used():
    evicted = []
    cache = _lru.LRU("test", 3, on_evict=evicted.extend, register=False)
    for k in "abc":
        cache.put(k, k.upper())
    assert cache.get("a") == "A"  # a is now more recent than b and c
    cache.put("d", "D")
    assert evicted == [("b", "B")] and sorted(cache.keys()) == ["a", "c", "d"]
    cache.get("c")
    cache.put("e", "E")
    assert evicted[-1] == ("a", "A") and len(cache) == 3 and cache.evictions == 2
    assert cache.keys() == ["d", "c", "e"]  # least recently used first
    assert cache.get("zz", 7) == 7 and "zz" not in cache


def test_lru_batch_eviction_keeps_the_most_recent():
    cache = _lru.LRU("test", 8, batch=4, register=False)
    for i in range(8):
        cache.put(i, i)
    for i in (0, 1):  # used again: younger than 2..7
        cache.get(i)
    cache.put(8, 8)  # past the bound: evicts 4 at once, the least recently used
    assert sorted(cache.keys()) == [0, 1, 6, 7, 8] and cache.evictions == 4
    for i in range(9, 100):
        cache.put(i, i)
        assert len(cache) <= 8


def test_lru_changes_move_at_each_insertion_and_removal_and_no_two_caches_share_them():
    """`changes` (what a lazy plan checks before using the program entry it kept): a new tick
    at every put, pop, clear and eviction, never at a get; and a new cache's is none of
    another's (a test replacing the program cache with a fresh LRU must not see an old entry)."""
    cache = _lru.LRU("test", 2, register=False)
    seen = [cache.changes]
    for step in (
        lambda: cache.put("a", 1),
        lambda: cache.put("b", 2),
        lambda: cache.put("c", 3),  # (evicts a)
        lambda: cache.pop("b"),
        lambda: cache.clear(),
    ):
        step()
        assert cache.changes not in seen
        seen.append(cache.changes)
    cache.put("d", 4)
    changes = cache.changes
    assert cache.get("d") == 4 and cache.get("zz") is None and cache.changes == changes
    other = _lru.LRU("test", 2, register=False)
    assert other.changes != cache.changes and other.changes not in seen


def test_lru_rejects_a_bound_below_one():
    try:
        _lru.LRU("lazy programs", 0, register=False)
    except ValueError as e:
        assert str(e).startswith("lazy programs:")
    else:
        raise AssertionError("no error")


def test_every_cache_is_registered_with_its_bound():
    found = _lru.caches()
    for name in ("lazy programs", "lazy shapes", "lazy elementwise dtypes", "op-by-op programs"):
        size, bound = found[name]
        assert 0 <= size <= bound
    assert found["lazy programs"][1] == settings.get("X10ARRAY_CACHE_SIZE")
    with settings.override(X10ARRAY_CACHE_SIZE=7, X10ARRAY_SHAPE_CACHE_SIZE=9):  # bounds follow their settings
        assert _lru.caches()["lazy programs"][1] == 7 and _lru.caches()["lazy shapes"][1] == 9


def test_the_eager_jit_cache_bound_follows_its_setting():
    with settings.override(X10ARRAY_EAGER_CACHE_SIZE=5):
        assert _lru.caches()["op-by-op programs"][1] == 5 and _op_programs._JITTED.batch == 1
    with settings.override(X10ARRAY_EAGER_CACHE_SIZE=64):
        assert _lru.caches()["op-by-op programs"][1] == 64 and _op_programs._JITTED.batch == 8


def test_the_default_device_memo_holds_one_entry():
    """current_device() parses X10ARRAY_DEFAULT_DEVICE once per value it meets, and keeps only
    the last (ever-new values, as a test suite's overrides make, do not accumulate)."""
    specs = ["xla", "eager", "cpu:0:xla", "cpu:0:eager", "xla"]
    for spec in specs:
        with settings.override(X10ARRAY_DEFAULT_DEVICE=spec):
            device = xp.asarray(1.0).device
            assert device == _devices.parse_device(spec, "test")
            assert _devices._env_default == (spec, device)
            assert _devices.current_device() is device  # a hit: the same object
    with settings.override(X10ARRAY_DEFAULT_DEVICE=""):
        assert _devices.current_device() is _devices.Device.default


def test_the_shape_cache_is_bounded(override_settings):
    """Ever-new shapes (a fit on new data each time) do not grow the shape cache, whose bound
    is its setting's value at each insertion."""
    override_settings(X10ARRAY_SHAPE_CACHE_SIZE=64)  # (evicts 64 // 8 at a time)
    cache = _shapes._avals
    before = cache.evictions
    for n in range(1, 200):
        x = xp.ones((n, 2), device=LAZY)
        y = xp.sum(x * 2.0, axis=0)  # a reduction: shape by abstract evaluation
        assert len(cache) <= 64
    assert cache.evictions - before >= 199 * 2 - 64
    assert float(y[1]) == 2.0 * 199
    x = xp.ones((3, 2), device=LAZY)  # an evicted shape is derived again, correctly
    assert xp.sum(x * 2.0, axis=0).shape == (2,)


def test_the_elementwise_dtype_cache_is_bounded(monkeypatch):
    small = _lru.LRU("test dtypes", 4, register=False)
    monkeypatch.setattr(_shapes, "_elementwise_dtypes", small)
    monkeypatch.setattr(_shapes, "_avals", _lru.LRU("test shapes", 64, register=False))
    monkeypatch.setattr(_shapes, "avals_entries", _shapes._avals.entries)
    dtypes = [xp.float32, xp.float64, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8]
    for dt in dtypes:
        x = xp.ones(3, dtype=dt, device=LAZY)
        assert (x + x).dtype == dt
        assert len(small) <= 4
    assert small.evictions == len(dtypes) - 4


def test_the_eager_jit_cache_is_bounded(monkeypatch):
    """The eager XLA kernels keep one jitted program per (primitive, parameters): bounded by
    an LRU, not wiped when full."""
    small = _lru.LRU("test jitted", 4, register=False)
    monkeypatch.setattr(_op_programs, "_JITTED", small)
    old = xp.set_cpu_kernels("xla")
    try:
        # (sums: reshapes and other data movement run on the host on the CPU, compiling nothing)
        host = np.arange(24.0).reshape(2, 3, 4)
        x = xp.asarray(host)
        for axes in [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (1,)]:
            y = xp.sum(x, axis=axes)
            assert np.array_equal(np.asarray(y), host.sum(axis=axes))
            assert len(small) <= 4
        assert small.evictions >= 2
    finally:
        xp.set_cpu_kernels(old)


_COMPILE_MANY = """
import gc, weakref
import numpy as np
import jax
import x10array as xp
from x10array._backends.lazy import program as _program
from x10array._core import settings
from jax._src import util

LAZY = xp.Device("cpu", 0, "xla")
BOUND = settings.get("X10ARRAY_CACHE_SIZE")

def jax_cache_entries():
    return sum(c.cache_info().currsize for c in list(util._caches) if hasattr(c, "cache_info"))

compiled = []  # weak references to every compiled program's executable
at_bound = None
for n in range(1, 7 * BOUND + 1):
    x = xp.asarray(np.full(n, 0.5), device=LAZY)
    assert np.isclose(float(xp.sum(xp.sin(x) * 2.0 + 1.0)), n * (np.sin(0.5) * 2.0 + 1.0), rtol=1e-12)
    for program in _program.RUNTIME.programs.values():
        if program.compiled is not None and not any(r() is program.compiled for r in compiled):
            compiled.append(weakref.ref(program.compiled))
    if n == BOUND:  # the cache is full; nothing evicted yet
        gc.collect()
        at_bound = jax_cache_entries()
gc.collect()
alive = sum(r() is not None for r in compiled)
print(len(compiled), alive, len(_program.RUNTIME.programs), at_bound, jax_cache_entries())
assert len(compiled) >= 6 * BOUND, len(compiled)  # one compile per new shape
assert alive <= BOUND and len(_program.RUNTIME.programs) <= BOUND, (alive, len(_program.RUNTIME.programs))
# jax keeps nothing for evicted programs: its caches hold no more than when BOUND programs
# had been compiled (without the release they hold ~7x that: every compile's traces)
assert jax_cache_entries() <= at_bound, (jax_cache_entries(), at_bound)
"""


def test_evicted_programs_free_their_executables_and_jax_traces():
    """Compiling many more programs than the cache holds: at most the bound's worth of
    executables stay alive, and jax's caches do not grow with the programs compiled."""
    env = dict(os.environ, X10ARRAY_CACHE_SIZE="4", X10ARRAY_COMPILE_THRESHOLD="1")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_COMPILE_MANY)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_soak_benchmark_smoke():
    """A few steps of benchmarks/bench_soak.py: it runs every phase and reports the caches
    within their bounds (the long run's figures are in benchmarks/README.md)."""
    args = ["--steps", "3", "--batch-sizes", "4,8", "--eval-every", "2", "--eval-size", "4"]
    args += ["--graphs", "30", "--compiles", "8", "--check"]
    proc = run_benchmark("bench_soak.py", *args, X10ARRAY_CACHE_SIZE="4")
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "phase" not in line]
    phases = {tuple(cell.strip() for cell in line.split("|")[1:3]) for line in table}
    assert phases == {("xla", "train"), ("xla", "graphs"), ("xla", "compiles"), ("eager", "train"), ("eager", "graphs")}
    assert all("all within bounds" in line for line in table)
    assert "lazy programs 4/4" in proc.stdout  # 8 compiles through a cache of 4


def test_params_keys_keep_equal_but_different_values_apart():
    """params_key's identity memo of nested exact tuples (index descriptions) never makes two
    values that Python finds equal share a key: -0.0 and 0.0, True and 1, 1.0 and 1, nested
    inside tuples, each asked twice (the second time from the memo where it was stored)."""
    from x10array._core.primitive import params_key

    for _ in range(2):
        keys = [params_key({"index": (("s", 1, -1, 1), ("a", v))}) for v in (0, 1, True, False, 0.0, -0.0, 1.0, 1 + 0j)]
        assert len(set(keys)) == len(keys)
        assert keys[0] == params_key({"index": (("s", 1, -1, 1), ("a", 0))})  # equal exact values, equal keys


def test_the_params_key_memo_is_bounded_and_hit_by_identity(monkeypatch):
    from x10array._core import primitive

    monkeypatch.setattr(primitive, "_EXACT", {})
    monkeypatch.setattr(primitive, "_EXACT_LIMIT", 4)
    descs = [(("s", 0, n, 1), ("n",)) for n in range(10)]
    for desc in descs:
        ((_, tagged),) = primitive.params_key({"index": desc})
        assert tagged is desc  # an exact description is its own key, not rebuilt
        assert len(primitive._EXACT) <= 4
    assert primitive._EXACT.get(id(descs[-1])) is descs[-1]  # the last one is remembered
    flat = (3, 4)
    primitive.params_key({"shape": flat})
    assert id(flat) not in primitive._EXACT  # (a flat tuple is walked, not remembered)
