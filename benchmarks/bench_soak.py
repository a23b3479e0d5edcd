"""Long runs: nothing grows without bound.

Three phases per device, RSS sampled at intervals (after `gc.collect()` and glibc's
`malloc_trim`):

- train: `--steps` LeNet-5 training steps (the step of bench_lenet.py: forward, autodiff,
  SGD with momentum, a barrier per step on the lazy device) on MNIST-shaped random batches
  whose size cycles through `--batch-sizes`, with an evaluation pass (inference phase, its
  own batch size) every `--eval-every` steps;
- graphs: `--graphs` small graphs of ever-new shapes, read back each time (the scikit-learn
  pattern: standardize an (n, 3) array, a Gram matrix, a sum; n = 1, 2, 3, ...);
- compiles (lazy only): `--compiles` distinct programs, each compiled (a new shape each),
  several times what the compile cache holds (`X10ARRAY_CACHE_SIZE`, default 256).

Targets: RSS growth under 50 MB after warm-up in each phase (the first tenth of the train
and graphs phases, the first cache-full of compiles), every cache at or below its bound, and
the compiles of the train phase bounded by its distinct shapes (a training step per batch
size and the evaluation; at most two programs each: the first step has no momentum yet).
`--check` exits 1 unless all are met.

Run: python benchmarks/bench_soak.py [--steps 5000] [--graphs 20000] [--compiles 600]
     [--devices lazy,eager] [--check]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from typing import Any

import numpy as np

import x10array as xp
from x10array import nn
from x10array._backends import lazy as _lazy
from x10array._core import lru as _lru
from x10array._core import settings
from x10array.autodiff import value_and_grad
from x10array.examples.mnist import loss_and_logits
from x10array.optim import SGD

MB = 1e6
LIMIT_MB = 50.0

try:
    import ctypes

    _trim = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):  # not glibc
    _trim = None


def rss_mb() -> float:
    """Resident memory after a garbage collection and glibc's malloc_trim (memory freed but
    kept by the allocator is not counted: it would be reused)."""
    gc.collect()
    if _trim is not None:
        _trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def cache_sizes() -> dict[str, tuple[int, int]]:
    """name -> (entries, bound) of x10array's caches."""
    return _lru.caches()


def jax_cache_entries() -> int:
    """Entries in jax's own tracing/lowering caches (what x10array's compiles leave there)."""
    from jax._src import util

    return sum(c.cache_info().currsize for c in list(util._caches) if hasattr(c, "cache_info"))


class Phase:
    """Samples of one phase: (iteration, RSS, compiles so far, caches)."""

    def __init__(self, device: xp.Device, name: str, total: int, warmup: int, samples: int = 10):
        self.device, self.name, self.total, self.warmup = device, name, total, warmup
        self.every = max(1, total // samples)
        self.rows: list[tuple[int, float, int, dict[str, tuple[int, int]], int]] = []
        self.compiles0 = xp.metrics().compile_count
        self.start = time.perf_counter()
        self.over_bound: list[str] = []
        self.sample(0)

    def sample(self, i: int) -> None:
        caches = cache_sizes()
        for name, (size, bound) in caches.items():
            if 0 <= bound < size:
                self.over_bound.append(f"{name} {size} > {bound}")
        compiles = xp.metrics().compile_count - self.compiles0
        row = (i, rss_mb(), compiles, caches, jax_cache_entries() if "jax" in sys.modules else 0)
        self.rows.append(row)
        shapes = caches.get("lazy shapes", (0, 0))[0]
        programs = caches.get("lazy programs", (0, 0))[0]
        print(
            f"  {self.device.backend.value:5s} {self.name:8s} {i:6d}/{self.total}  RSS {row[1]:8.1f} MB  "
            f"compiles {compiles:4d}  programs {programs:4d}  shapes {shapes:5d}  jax cache entries {row[4]:6d}",
            flush=True,
        )

    def tick(self, i: int) -> None:
        """Call after iteration i (1-based)."""
        if i % self.every == 0 or i == self.warmup or i == self.total:
            if not self.rows or self.rows[-1][0] != i:
                self.sample(i)

    def growth(self) -> float:
        """RSS growth from the end of warm-up to the end."""
        after = [r for r in self.rows if r[0] >= self.warmup]
        return after[-1][1] - after[0][1] if after else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "device": self.device.backend.value,
            "phase": self.name,
            "n": self.total,
            "seconds": time.perf_counter() - self.start,
            "rss_start": self.rows[0][1],
            "rss_warm": next(r[1] for r in self.rows if r[0] >= self.warmup),
            "rss_end": self.rows[-1][1],
            "growth": self.growth(),
            "compiles": self.rows[-1][2],
            "over_bound": sorted(set(self.over_bound)),
        }


def train(device: xp.Device, steps: int, batch_sizes: list[int], eval_every: int, eval_size: int) -> Phase:
    rng = np.random.default_rng(0)
    host = {
        n: (rng.random((n, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, n).astype(np.int32))
        for n in batch_sizes + [eval_size]
    }
    model = nn.LeNet(seed=0, device=device)
    opt = SGD(0.01, 0.9)
    state = opt.init(model)
    grad_fn = value_and_grad(loss_and_logits, has_aux=True)
    phase = Phase(device, "train", steps, warmup=max(1, steps // 10))
    for i in range(1, steps + 1):
        images, labels = host[batch_sizes[i % len(batch_sizes)]]
        x, y = xp.asarray(images, device=device), xp.asarray(labels, device=device)
        with nn.phase("training"):
            (loss, _), grads = grad_fn(model, x, y)
            model, state = opt.update(model, grads, state)
        if device.is_lazy:
            xp.lazy_barrier()
        if i % eval_every == 0:
            images, labels = host[eval_size]
            with nn.phase("inference"):
                _, logits = loss_and_logits(model, xp.asarray(images, device=device), xp.asarray(labels, device=device))
                correct = int(
                    xp.sum(xp.astype(xp.argmax(logits, axis=1) == xp.asarray(labels, device=device), xp.int64))
                )
            assert 0 <= correct <= eval_size
        phase.tick(i)
    assert np.isfinite(float(loss))
    return phase


def graphs(device: xp.Device, count: int) -> Phase:
    """Small graphs of ever-new shapes, each read back: what a scikit-learn fit records."""
    rng = np.random.default_rng(1)
    phase = Phase(device, "graphs", count, warmup=max(1, count // 10))
    for i in range(1, count + 1):
        x = xp.asarray(rng.random((i, 3)), device=device)
        mean = xp.mean(x, axis=0)
        z = (x - mean) / (xp.std(x, axis=0) + 1.0)
        gram = xp.matrix_transpose(z) @ z
        total = float(xp.sum(gram) + xp.max(xp.abs(z)))
        assert np.isfinite(total)
        phase.tick(i)
    return phase


def compiles(device: xp.Device, count: int) -> Phase:
    """Distinct programs, each compiled at once (a new shape each): the compile cache evicts."""
    with _lazy.compile_threshold(1):
        warm = min(count, settings.get("X10ARRAY_CACHE_SIZE") + 50)
        phase = Phase(device, "compiles", count, warmup=warm)
        for i in range(1, count + 1):
            x = xp.asarray(np.full(i, 0.5), device=device)
            value = float(xp.sum(xp.sin(x) * 2.0 + 1.0))
            assert abs(value - i * (np.sin(0.5) * 2.0 + 1.0)) < 1e-9 * i
            phase.tick(i)
    return phase


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000, help="LeNet training steps (default 5000)")
    parser.add_argument("--graphs", type=int, default=20000, help="small graphs of new shapes (default 20000)")
    parser.add_argument("--compiles", type=int, default=600, help="distinct compiled programs, lazy (default 600)")
    parser.add_argument("--batch-sizes", default="32,48,64", help="training batch sizes, cycled (default 32,48,64)")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between evaluations (default 250)")
    parser.add_argument("--eval-size", type=int, default=100, help="evaluation batch size (default 100)")
    parser.add_argument("--devices", default="lazy,eager", help="lazy, eager or both (default lazy,eager)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every target is met")
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    devices = {"lazy": xp.Device("cpu", 0, "xla"), "eager": xp.Device("cpu", 0, "eager")}
    print(
        f"x10array soak: {args.steps} steps (batch sizes {batch_sizes}, evaluation every {args.eval_every}), "
        f"{args.graphs} graphs, {args.compiles} compiles; compile cache {settings.get('X10ARRAY_CACHE_SIZE')}",
        flush=True,
    )
    results = []
    for name in args.devices.split(","):
        device = devices[name]
        before = xp.metrics()
        if args.steps:
            results.append(train(device, args.steps, batch_sizes, args.eval_every, args.eval_size).summary())
            # distinct shapes: a training step per batch size, and the evaluation
            results[-1]["distinct"] = len(batch_sizes) + (args.steps >= args.eval_every) if device.is_lazy else 0
        if args.graphs:
            results.append(graphs(device, args.graphs).summary())
        if args.compiles and device.is_lazy:
            results.append(compiles(device, args.compiles).summary())
        d = xp.metrics() - before
        print(
            f"  {name}: {d.compile_count} compiles, {d.cache_hits} hits, {d.interpreted_graphs} interpreted", flush=True
        )

    print("\n| device | phase | n | s | RSS start MB | after warm-up | end | growth MB | compiles | caches |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    failed = []
    for r in results:
        bounded = "over: " + ", ".join(r["over_bound"]) if r["over_bound"] else "all within bounds"
        print(
            f"| {r['device']} | {r['phase']} | {r['n']} | {r['seconds']:.0f} | {r['rss_start']:.1f} | "
            f"{r['rss_warm']:.1f} | {r['rss_end']:.1f} | {r['growth']:+.1f} | {r['compiles']} | {bounded} |"
        )
        if r["growth"] >= LIMIT_MB:
            failed.append(f"{r['device']} {r['phase']}: RSS grew {r['growth']:.1f} MB after warm-up")
        if r["over_bound"]:
            failed.append(f"{r['device']} {r['phase']}: {', '.join(r['over_bound'])}")
        if r["phase"] == "train" and r.get("distinct") and r["compiles"] > 2 * r["distinct"]:
            failed.append(f"{r['device']} train: {r['compiles']} compiles for {r['distinct']} distinct shapes")
    caches = cache_sizes()
    print("\ncaches at the end: " + ", ".join(f"{n} {s}/{b}" for n, (s, b) in caches.items()))
    print("targets: " + ("met" if not failed else "NOT met: " + "; ".join(failed)))
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
