"""One MNIST epoch of the MNIST demo on the lazy device against the hand-written `jax.jit` loop.

Issue 15's target: the demo's lazy epoch (`python -m x10array.examples.mnist --device xla
--epochs 1`, whose train and eval steps are captured with `x10array.compile`) takes at most
the time of the same epoch written by hand in JAX: LeNet-5 (XLA's convolution), SGD with
momentum 0.9 and learning rate 0.1, batches of 128 in the same shuffled order, a `jax.jit`
train step and eval step, running sums of the loss and of the correct guesses kept on the
device and read once at the end of the epoch, as the demo does.

Both sides start cold in this process: nothing is compiled before the first epoch (round 0),
and x10array's disk cache of compiled programs starts empty (as a first run of the demo on a
new machine; `--warm-cache` uses the default cache instead). Each side's epoch runs
`--repeat` times, alternating, in one process, each from the same initial weights; later
rounds reuse the compiled programs on both sides. Reported: round 0 (a process's first
epoch) and the best round of each side, with the ratios, the test accuracy and the compile
seconds. The MNIST files are read from `--data-dir`
(default: the project's `../shared/data/mnist`, else X10ARRAY_DATA_DIR), never downloaded.

Run: python benchmarks/bench_mnist.py [--repeat 2] [--max-batches N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

LR, MOMENTUM, BATCH = 0.1, 0.9, 128
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"


def jax_steps() -> tuple[Any, Any]:
    """LeNet-5's train and eval steps written in JAX (jitted once: later epochs reuse them)."""
    import jax
    import jax.numpy as jnp
    from bench_lenet import jax_lenet

    loss_and_logits = jax_lenet("conv")  # the same LeNet-5 as bench_lenet.py's jax.jit step

    def tally(logits: Any, y: Any, loss: Any, correct: Any, loss_sum: Any) -> Any:
        return correct + jnp.sum(jnp.argmax(logits, axis=1) == y), loss_sum + loss

    @jax.jit
    def train_step(p: list[Any], v: list[Any], x: Any, y: Any, sums: Any) -> Any:
        (loss, logits), g = jax.value_and_grad(loss_and_logits, has_aux=True)(p, x, y)
        v = [MOMENTUM * vi + gi for vi, gi in zip(v, g)]
        p = [pi - LR * vi for pi, vi in zip(p, v)]
        return p, v, tally(logits, y, loss, *sums)

    @jax.jit
    def eval_step(p: list[Any], x: Any, y: Any, sums: Any) -> Any:
        loss, logits = loss_and_logits(p, x, y)
        return tally(logits, y, loss, *sums)

    return train_step, eval_step


def jax_epoch(steps: tuple[Any, Any], data: Any, max_batches: int | None) -> dict[str, float]:
    """One epoch (train, then evaluate) of the JAX loop from the demo's initial weights."""
    import itertools

    import jax.numpy as jnp

    import x10array as xp
    from x10array import nn

    train_step, eval_step = steps
    model = nn.LeNet(seed=0, device=xp.Device("cpu", 0, "eager"))  # the demo's initial weights
    params = [jnp.asarray(np.asarray(p)) for p in model.parameters()]
    zero = (jnp.asarray(0, jnp.int32), jnp.asarray(0.0, jnp.float32))
    start = time.perf_counter()
    v = [jnp.zeros_like(q) for q in params]
    sums, seen = zero, 0
    batches = next(iter(data.training))
    for images, labels in itertools.islice(batches, max_batches):
        params, v, sums = train_step(params, v, images, labels, sums)
        seen += labels.shape[0]
    test, total = zero, 0
    for images, labels in itertools.islice(data.validation, max_batches):
        test = eval_step(params, images, labels, test)
        total += labels.shape[0]
    accuracy = int(test[0]) / total
    float(sums[1])
    return {"seconds": time.perf_counter() - start, "test_accuracy": accuracy}


def x10_epoch(data: Any, max_batches: int | None) -> tuple[dict[str, float], Any]:
    import x10array as xp
    from x10array.examples.mnist import train

    before = xp.metrics()
    history = train(
        xp.Device.default_xla, epochs=1, batch_size=BATCH, data_dir=None, learning_rate=LR, momentum=MOMENTUM,
        log=lambda *_: None, data=data, max_batches=max_batches,
    )  # fmt: skip
    return history[0], xp.metrics() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="epochs per side, alternating (best one reported)")
    parser.add_argument("--max-batches", type=int, default=None, help="at most N batches per epoch (a quick try)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--warm-cache", action="store_true", help="use x10array's default disk cache")
    args = parser.parse_args()
    if not args.warm_cache:
        os.environ["X10ARRAY_COMPILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="x10-bench-mnist-")
    data_dir = args.data_dir or (str(SHARED) if SHARED.is_dir() else None)

    import x10array as xp
    from x10array.datasets import MNIST

    x10_data = MNIST(BATCH, data_dir, device=xp.Device("cpu", 0, "eager"), seed=0, download=False)
    jax_data = MNIST(BATCH, data_dir, xp=np, seed=0, download=False)  # the same batches, as NumPy arrays
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    jax_runs, x10_runs = [], []
    steps = jax_steps()
    for i in range(args.repeat):
        jax_runs.append(jax_epoch(steps, jax_data, args.max_batches))
        record, metrics = x10_epoch(x10_data, args.max_batches)
        x10_runs.append(record)
        print(
            f"round {i}: jax.jit {jax_runs[-1]['seconds']:.1f} s ({100 * jax_runs[-1]['test_accuracy']:.2f}%), "
            f"x10array lazy {record['seconds']:.1f} s ({100 * record['test_accuracy']:.2f}%, "
            f"{record['host_ms_per_step']:.2f} host ms per step, {metrics.compile_count} compiles in "
            f"{metrics.compile_seconds:.1f} s, {metrics.captured_replays} captured replays)",
            flush=True,
        )
    first = x10_runs[0]["seconds"] / jax_runs[0]["seconds"]
    best_jax = min(r["seconds"] for r in jax_runs)
    best_x10 = min(r["seconds"] for r in x10_runs)
    print(f"\nfirst epoch of the process: x10array lazy / jax.jit {first:.2f}x (target <= 1.0x)")
    print(
        f"best of {args.repeat}: jax.jit {best_jax:.2f} s, x10array lazy {best_x10:.2f} s: {best_x10 / best_jax:.2f}x"
    )


if __name__ == "__main__":
    main()
