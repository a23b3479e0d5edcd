"""LeNet-5 training step on one MNIST-shaped batch (128 x 28 x 28 x 1, float32).

Measured in one run, steady state (median of timed steps after warm-up):

- x10array lazy (record + autodiff + barrier + wait), the same step under `x10array.compile`
  (recorded once, then its compiled program replayed), and x10array eager;
- the same step hand-written in JAX under `jax.jit`, with XLA's convolution and with an
  im2col + matmul convolution;
- PyTorch eager on the CPU, when torch is installed.

Reported as ms per step and ratios, and the host's time per step when it does not wait (what
recording, or a replay's dispatch, costs); the lazy step's compile count is printed.
Targets: lazy <= 1.1x jax.jit (either form). Stretch: lazy <= 1.0x PyTorch eager,
eager <= 1.5x PyTorch eager.

Run: python benchmarks/bench_lenet.py [--steps 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import in_a_loop

import x10array as xp
from x10array import nn
from x10array.autodiff import value_and_grad
from x10array.optim import SGD

LR, MOMENTUM = 0.1, 0.9


def timed(step: Callable[[], Any], steps: int, warmup: int = 5) -> float:
    """Median time of one step, each step waiting for its result."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def batch(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((128, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, 128).astype(np.int32)


def x10_step(device: xp.Device, images: np.ndarray, labels: np.ndarray) -> Callable[[], Any]:
    from x10array.examples.mnist import loss_and_logits

    model = nn.LeNet(seed=0, device=device)
    opt = SGD(LR, MOMENTUM)
    state = {"model": model, "opt": opt.init(model)}
    x, y = xp.asarray(images, device=device), xp.asarray(labels, device=device)
    grad_fn = value_and_grad(loss_and_logits, has_aux=True)

    def step(wait: bool = True) -> Any:
        (loss, _), grads = grad_fn(state["model"], x, y)
        state["model"], state["opt"] = opt.update(state["model"], grads, state["opt"])
        if device.is_lazy:
            xp.lazy_barrier(wait=wait)
        return loss

    return step


def x10_captured_step(device: xp.Device, images: np.ndarray, labels: np.ndarray) -> Callable[[], Any]:
    """The same step under `x10array.compile`: recorded once, then its compiled program replayed."""
    from x10array.examples.mnist import loss_and_logits

    model = nn.LeNet(seed=0, device=device)
    opt = SGD(LR, MOMENTUM)
    state = {"model": model, "opt": opt.init(model)}
    x, y = xp.asarray(images, device=device), xp.asarray(labels, device=device)
    grad_fn = value_and_grad(loss_and_logits, has_aux=True)

    @xp.compile
    def train(model: Any, opt_state: Any, x: Any, y: Any) -> Any:
        (loss, _), grads = grad_fn(model, x, y)
        model, opt_state = opt.update(model, grads, opt_state)
        return model, opt_state, loss

    def step(wait: bool = True) -> Any:
        state["model"], state["opt"], loss = train(state["model"], state["opt"], x, y)
        if wait:
            xp.lazy_barrier(wait=True)  # (waits for the replayed program too)
        return loss

    return step


def host_time(step: Callable[[bool], Any], steps: int) -> tuple[float, float]:
    """Median seconds the host spends in one step that it does not wait for: wall-clock, and
    the calling thread's CPU time (which other processes on a loaded machine disturb less)."""
    for _ in range(3):
        step(True)
    times = []
    cpu = []
    for _ in range(steps):
        start, start_cpu = time.perf_counter(), time.thread_time()
        step(False)
        times.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
        step(True)  # (the wait is not timed)
    return statistics.median(times), statistics.median(cpu)


def jax_lenet(conv_form: str) -> Callable[[list[Any], Any, Any], tuple[Any, Any]]:
    """LeNet-5 written in JAX: `loss_and_logits(params, images, labels)`, params in nn.LeNet's
    pytree order; the convolution as XLA's (`"conv"`) or im2col + matmul (`"im2col"`)."""
    import jax
    import jax.numpy as jnp

    def conv(x: Any, w: Any, padding: str) -> Any:
        if conv_form == "conv":
            return jax.lax.conv_general_dilated(
                x, w, (1, 1), padding.upper(), dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
        kh, kw, c, o = w.shape
        if padding == "same":
            x = jnp.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
        n, h, wd, _ = x.shape
        ho, wo = h - kh + 1, wd - kw + 1
        cols = jnp.stack([x[:, i : i + ho, j : j + wo, :] for i in range(kh) for j in range(kw)], axis=3)
        return cols.reshape(n, ho, wo, kh * kw * c) @ w.reshape(kh * kw * c, o)

    def pool(x: Any) -> Any:
        n, h, w, c = x.shape
        return x.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))

    def forward(p: list[Any], x: Any) -> Any:
        # nn.LeNet's pytree order: per layer with parameters, sorted fields (bias, filter/weight)
        b1, f1, b2, f2, b3, w3, b4, w4, b5, w5 = p
        x = pool(jax.nn.relu(conv(x, f1, "same") + b1))
        x = pool(jax.nn.relu(conv(x, f2, "valid") + b2))
        x = x.reshape(x.shape[0], -1)
        x = jax.nn.relu(x @ w3 + b3)
        x = jax.nn.relu(x @ w4 + b4)
        return x @ w5 + b5

    def loss_and_logits(p: list[Any], x: Any, y: Any) -> tuple[Any, Any]:
        logits = forward(p, x)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None].astype(jnp.int32), axis=1)), logits

    return loss_and_logits


def jax_step(images: np.ndarray, labels: np.ndarray, conv_form: str) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    model = nn.LeNet(seed=0, device=xp.Device("cpu", 0, "eager"))
    params = [jnp.asarray(np.asarray(p)) for p in model.parameters()]
    loss_and_logits = jax_lenet(conv_form)

    def loss_fn(p: list[Any], x: Any, y: Any) -> Any:
        return loss_and_logits(p, x, y)[0]

    @jax.jit
    def train(p: list[Any], v: list[Any], x: Any, y: Any) -> Any:
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        v = [MOMENTUM * vi + gi for vi, gi in zip(v, g)]
        p = [pi - LR * vi for pi, vi in zip(p, v)]
        return p, v, loss

    state = {"p": params, "v": [jnp.zeros_like(q) for q in params]}
    x, y = jnp.asarray(images), jnp.asarray(labels)

    def step(wait: bool = True) -> Any:
        state["p"], state["v"], loss = train(state["p"], state["v"], x, y)
        return loss.block_until_ready() if wait else loss

    return step


def torch_step(images: np.ndarray, labels: np.ndarray) -> Callable[[], Any] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.AvgPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(), torch.nn.Linear(84, 10),
    )  # fmt: skip
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(labels).long()

    def step(wait: bool = True) -> Any:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    images, labels = batch()
    results: dict[str, float] = {}
    loops: dict[str, float] = {}
    before = xp.metrics()
    lazy_step = x10_step(xp.Device.default_xla, images, labels)
    # (warm-up past the pay-back rule's compile of the step, at about its 30th sighting)
    results["x10array lazy"] = timed(lazy_step, args.steps, warmup=40)
    loops["x10array lazy"] = in_a_loop(lazy_step, args.steps)
    lazy_compiles = (xp.metrics() - before).compile_count
    hosts = {"x10array lazy": host_time(lazy_step, args.steps)}
    captured = x10_captured_step(xp.Device.default_xla, images, labels)
    results["x10array captured"] = timed(captured, args.steps)
    loops["x10array captured"] = in_a_loop(captured, args.steps)
    hosts["x10array captured"] = host_time(captured, args.steps)
    results["x10array eager"] = timed(x10_step(xp.Device.default, images, labels), max(5, args.steps // 3), warmup=2)
    for form in ("conv", "im2col"):
        name = f"jax.jit ({'XLA conv' if form == 'conv' else 'im2col'})"
        fn = jax_step(images, labels, form)
        results[name] = timed(fn, args.steps)
        loops[name] = in_a_loop(fn, args.steps)
        hosts[name] = host_time(fn, args.steps)
    torch_fn = torch_step(images, labels)
    if torch_fn is not None:
        results["torch eager"] = timed(torch_fn, args.steps)
    print("ms per step        each step waited for   in a loop (wait at the end)")
    for name, seconds in results.items():
        loop = f"{loops[name] * 1e3:8.2f}" if name in loops else "       -"
        print(f"{name:<22} {seconds * 1e3:8.2f}               {loop}")
    lazy = results["x10array lazy"]
    for ours in ("x10array lazy", "x10array captured"):
        for form in ("XLA conv", "im2col"):
            ref = f"jax.jit ({form})"
            in_loop = loops[ours] / loops[ref]
            print(f"{ours[9:]:<8} / {ref:<18} {results[ours] / results[ref]:.2f}x per step, {in_loop:.2f}x in a loop")
    for name, (seconds, cpu) in hosts.items():
        print(f"host ms per step (not waited for), {name:<20} {seconds * 1e3:7.3f} wall, {cpu * 1e3:7.3f} thread CPU")
    print(f"eager / lazy                {results['x10array eager'] / lazy:.2f}x")
    if torch_fn is not None:
        print(f"lazy / torch eager          {loops['x10array lazy'] / results['torch eager']:.2f}x (lazy in a loop)")
        print(f"eager / torch eager         {results['x10array eager'] / results['torch eager']:.2f}x")
    print(f"lazy compiles: {lazy_compiles}")


if __name__ == "__main__":
    main()
