"""Lazy XLA device: record cost, a fused elementwise chain, an MLP training step.

Every figure is a ratio against a baseline measured in the same run:

- record: microseconds to record one op on the lazy device (add, multiply, an add of a Python
  float, matmul, two getitems, a reshape), against jax's own op-by-op dispatch (`jnp.add` on
  committed arrays); target <= 1.0 us for add; and the host's time recording a whole
  MLP step and LeNet training step (autodiff included), per step and per recorded operation;
- chain: 8 elementwise ops on 1e7 float32, x10array lazy (record + barrier + wait) against the
  same chain hand-written under `jax.jit`, and NumPy; target lazy <= 1.1x jax.jit;
- mlp: one SGD step of a 2-layer MLP with hand-written backprop (only standard functions) in
  steady state, x10array lazy against the same step under `jax.jit`, waiting for each step and
  in a loop (waiting at the end); target <= 1.2x. The same step under `x10array.compile`
  (recorded once, replayed), with the host's time per step when it does not wait.
- narrow: k-means' distance step (`argmin(sum((X[:, None] - C) ** 2, axis=2), axis=1)`,
  5000 x 5 x 4, float64), compiled (`compile_threshold(1)`) and read, against the same step
  under `jax.jit` with XLA's default options and NumPy: a program with a narrow reduction,
  which x10array compiles with options of its own (`_core/xla_options.py`) and whose sum adds
  its 4 columns in order (`_core/kernels.py`, `_short_axis_reduction`); and the largest squared
  norm of 10^6 points in 3-D (`max(sum(P * P, axis=-1))`, the sum over a short last axis beside
  a large reduction: XLA's default options), compiled, against `jax.jit`.
- fixed: the fixed host cost of a barrier and of a replay. The least-squares fit's step
  (bench_dayone's: `value_and_grad` + `optim.Adam`, 2000 x 20 float64) with a barrier per
  step, its graph seen before so the barrier follows its plan: the barrier's wall time and
  the calling thread's CPU time (medians), and the recording's CPU time per recorded
  operation; a small add (`x + 1.0` of 20 elements) under `x10array.compile` against the
  same function and a no-op under `jax.jit`, per call (wall and CPU, medians). Target: the barrier at most
  60 us of host time, the replay's fixed cost at most `jax.jit`'s.

Run: python benchmarks/bench_lazy.py [--record | --fixed [--quick]]   (one group of figures alone)
"""

from __future__ import annotations

import functools
import time
import timeit

import jax
import jax.numpy as jnp
import numpy as np
from _timing import in_a_loop

import x10array as xp

LAZY = xp.Device("cpu", 0, "xla")


def best(fn, number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def best_cpu(fn, number: int, repeat: int = 7) -> float:
    """`best` in the calling thread's CPU time: recording is host work alone, and on a loaded
    machine the CPU time stays near the idle figure where wall time does not."""
    return min(timeit.Timer(fn, timer=time.thread_time).repeat(number=number, repeat=repeat)) / number


def chain(ns, x):
    y = x * 1.5 + 2.0
    y = y * x - 0.5
    y = y / (x + 3.0)
    y = ns.sqrt(ns.abs(y))
    return y * 0.25


def mlp_step(ns, w1, b1, w2, b2, x, onehot, lr):
    """Forward, softmax cross-entropy, backward, SGD update: standard functions only."""
    h_pre = ns.matmul(x, w1) + b1
    h = ns.maximum(h_pre, 0.0)
    logits = ns.matmul(h, w2) + b2
    shifted = logits - ns.max(logits, axis=1, keepdims=True)
    e = ns.exp(shifted)
    p = e / ns.sum(e, axis=1, keepdims=True)
    n = x.shape[0]
    loss = -ns.sum(onehot * (shifted - ns.log(ns.sum(e, axis=1, keepdims=True)))) / n
    d_logits = (p - onehot) / n
    d_w2 = ns.matmul(ns.matrix_transpose(h), d_logits)
    d_b2 = ns.sum(d_logits, axis=0)
    d_h = ns.matmul(d_logits, ns.matrix_transpose(w2))
    d_pre = ns.where(h_pre > 0, d_h, 0.0)
    d_w1 = ns.matmul(ns.matrix_transpose(x), d_pre)
    d_b1 = ns.sum(d_pre, axis=0)
    return w1 - lr * d_w1, b1 - lr * d_b1, w2 - lr * d_w2, b2 - lr * d_b2, loss


def bench_record() -> dict[str, float]:
    """Microseconds (CPU time) to record one op (the result dropped at once), against jax's
    op-by-op add (CPU time too: its dispatch runs in this thread)."""
    x = xp.ones(100, device=LAZY)
    y = xp.ones(100, device=LAZY)
    m = xp.ones((64, 64), device=LAZY)
    xp.lazy_barrier()
    ops = {
        "add": lambda: x + y,
        "multiply": lambda: x * y,
        "add a Python float": lambda: x + 1.5,
        "matmul": lambda: m @ m,
        "getitem x[3]": lambda: x[3],
        "getitem x[1:5]": lambda: x[1:5],
        "reshape": lambda: xp.reshape(x, (10, 10)),
    }
    results = {}
    for name, op in ops.items():
        op()  # warm the shape cache
        results[f"x10array lazy record {name} (us)"] = best_cpu(op, 20000) * 1e6
    with jax.enable_x64(True):
        jx = jax.device_put(np.ones(100))
        jy = jax.device_put(np.ones(100))
        jnp.add(jx, jy)
        theirs = best_cpu(lambda: jnp.add(jx, jy), 20000)
    results["jax op-by-op add (us)"] = theirs * 1e6
    results["record add / jax op-by-op add"] = results["x10array lazy record add (us)"] / (theirs * 1e6)
    return results


def bench_record_steps() -> dict[str, float]:
    """The host's CPU time recording a whole step (no barrier inside the timing), per step and
    per recorded operation: the MLP step below and the LeNet training step of bench_lenet.py
    (forward, autodiff tape, backward, SGD with momentum)."""
    from x10array import nn
    from x10array.autodiff import value_and_grad
    from x10array.examples.mnist import loss_and_logits
    from x10array.optim import SGD

    rng = np.random.default_rng(0)
    params = [
        xp.asarray((rng.standard_normal(s) * 0.05).astype(np.float32), device=LAZY)
        for s in ((784, 256), (256,), (256, 10), (10,))
    ]
    x = xp.asarray(rng.random((128, 784), dtype=np.float32), device=LAZY)
    t = xp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)], device=LAZY)

    model = nn.LeNet(seed=0, device=LAZY)
    opt = SGD(0.1, 0.9)
    state = {"model": model, "opt": opt.init(model)}
    images = xp.asarray(rng.random((128, 28, 28, 1), dtype=np.float32), device=LAZY)
    labels = xp.asarray(rng.integers(0, 10, 128).astype(np.int32), device=LAZY)
    grad_fn = value_and_grad(loss_and_logits, has_aux=True)

    def lenet_step():
        (loss, _), grads = grad_fn(state["model"], images, labels)
        state["model"], state["opt"] = opt.update(state["model"], grads, state["opt"])
        return loss

    results = {}
    for name, step in (("mlp", lambda: mlp_step(xp, *params, x, t, 0.1)), ("lenet", lenet_step)):
        times, ops = [], 0
        for i in range(25):
            before = xp.metrics().ops_recorded
            start = time.thread_time()
            step()
            elapsed = time.thread_time() - start
            ops = xp.metrics().ops_recorded - before
            xp.lazy_barrier(wait=True)
            if i >= 5:
                times.append(elapsed)
        per_step = sorted(times)[len(times) // 2]
        results[f"{name} step record (ms)"] = per_step * 1e3
        results[f"{name} step ops recorded"] = ops
        results[f"{name} step record per op (us)"] = per_step / ops * 1e6
    return results


def bench_chain() -> dict[str, float]:
    host = np.random.default_rng(0).random(10_000_000, dtype=np.float32)
    x = xp.asarray(host, device=LAZY)
    before = xp.metrics()

    def lazy_run():
        y = chain(xp, x)
        xp.lazy_barrier(wait=True)
        return y

    for _ in range(3):
        lazy_run()
    ours = best(lazy_run, 5)
    jx = jax.device_put(host)
    jitted = jax.jit(lambda v: chain(jnp, v))
    jitted(jx).block_until_ready()
    theirs = best(lambda: jitted(jx).block_until_ready(), 5)
    numpy_time = best(lambda: chain(np, host), 3, repeat=3)
    compiles = (xp.metrics() - before).compile_count
    return {
        "chain lazy (ms)": ours * 1e3,
        "chain jax.jit (ms)": theirs * 1e3,
        "chain numpy (ms)": numpy_time * 1e3,
        "chain lazy / jax.jit": ours / theirs,
        "chain compiles": compiles,
    }


def bench_mlp() -> dict[str, float]:
    rng = np.random.default_rng(0)
    shapes = {"w1": (784, 256), "b1": (256,), "w2": (256, 10), "b2": (10,)}
    host = {k: (rng.standard_normal(s) * 0.05).astype(np.float32) for k, s in shapes.items()}
    xb = rng.random((128, 784), dtype=np.float32)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]

    params = [xp.asarray(host[k], device=LAZY) for k in shapes]
    x = xp.asarray(xb, device=LAZY)
    t = xp.asarray(onehot, device=LAZY)
    before = xp.metrics()
    state = {"p": params}

    def lazy_step(wait=True):
        *new, loss = mlp_step(xp, *state["p"], x, t, 0.1)
        state["p"] = new
        xp.lazy_barrier(wait=wait)
        return loss

    for _ in range(5):
        lazy_step()
    ours = best(lazy_step, 20)
    ours_loop = in_a_loop(lazy_step, 50)
    compiles = (xp.metrics() - before).compile_count

    captured = xp.compile(lambda w1, b1, w2, b2, x, t, lr: mlp_step(xp, w1, b1, w2, b2, x, t, lr))
    cstate = {"p": [xp.asarray(host[k], device=LAZY) for k in shapes]}

    def captured_step(wait=True):
        *new, loss = captured(*cstate["p"], x, t, 0.1)
        cstate["p"] = new
        if wait:
            xp.lazy_barrier(wait=True)  # (waits for the replayed program)
        return loss

    for _ in range(5):
        captured_step()
    cap = best(captured_step, 20)
    cap_loop = in_a_loop(captured_step, 50)
    dispatch = []
    for _ in range(20):
        start = time.perf_counter()
        captured_step(False)
        dispatch.append(time.perf_counter() - start)
        xp.lazy_barrier(wait=True)

    jparams = [jax.device_put(host[k]) for k in shapes]
    jx, jt = jax.device_put(xb), jax.device_put(onehot)
    jstep = jax.jit(lambda w1, b1, w2, b2, x, t: mlp_step(jnp, w1, b1, w2, b2, x, t, 0.1), donate_argnums=(0, 1, 2, 3))
    jstate = {"p": jparams}

    def jax_step(wait=True):
        *new, loss = jstep(*jstate["p"], jx, jt)
        jstate["p"] = new
        if wait:
            loss.block_until_ready()
        return loss

    for _ in range(5):
        jax_step()
    theirs = best(jax_step, 20)
    theirs_loop = in_a_loop(jax_step, 50)
    return {
        "mlp lazy step (ms)": ours * 1e3,
        "mlp jax.jit step (ms)": theirs * 1e3,
        "mlp lazy / jax.jit": ours / theirs,
        "mlp lazy step in a loop (ms)": ours_loop * 1e3,
        "mlp jax.jit step in a loop (ms)": theirs_loop * 1e3,
        "mlp lazy / jax.jit in a loop": ours_loop / theirs_loop,
        "mlp captured step (ms)": cap * 1e3,
        "mlp captured / jax.jit": cap / theirs,
        "mlp captured / jax.jit in a loop": cap_loop / theirs_loop,
        "mlp captured host ms per step (not waited for)": sorted(dispatch)[len(dispatch) // 2] * 1e3,
        "mlp compiles": compiles,
    }


def bench_narrow() -> dict[str, float]:
    from x10array._backends.lazy import compile_threshold

    rng = np.random.default_rng(0)
    X, C = rng.standard_normal((5000, 4)), rng.standard_normal((5, 4))

    def step(ns, x, c):
        return ns.argmin(ns.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=2), axis=1)

    lx, lc = xp.asarray(X, device=LAZY), xp.asarray(C, device=LAZY)
    with jax.enable_x64(True):
        jx, jc = jax.device_put(X), jax.device_put(C)
        jitted = jax.jit(lambda x, c: step(jnp, x, c))
        np.asarray(jitted(jx, jc))
        with compile_threshold(1):
            np.asarray(step(xp, lx, lc))
            ours = best(lambda: np.asarray(step(xp, lx, lc)), 50)
        theirs = best(lambda: np.asarray(jitted(jx, jc)), 50)
    numpy_time = best(lambda: step(np, X, C), 20)

    # the largest squared norm of 10^6 points in 3-D: a sum over a short last axis, then a max
    P = rng.standard_normal((1_000_000, 3))

    def norms(ns, p):
        return ns.max(ns.sum(p * p, axis=-1))

    lp = xp.asarray(P, device=LAZY)
    with jax.enable_x64(True):
        jp = jax.device_put(P)
        jitted_norms = jax.jit(lambda p: norms(jnp, p))
        float(jitted_norms(jp))
        with compile_threshold(1):
            float(norms(xp, lp))
            ours_norms = best(lambda: float(norms(xp, lp)), 10)
        theirs_norms = best(lambda: float(jitted_norms(jp)), 10)
    return {
        "narrow step lazy compiled (us)": ours * 1e6,
        "narrow step jax.jit (us)": theirs * 1e6,
        "narrow step numpy (us)": numpy_time * 1e6,
        "narrow step lazy / jax.jit": ours / theirs,
        "norms lazy compiled (ms)": ours_norms * 1e3,
        "norms jax.jit (ms)": theirs_norms * 1e3,
        "norms lazy / jax.jit": ours_norms / theirs_norms,
    }


def _medians(fn, number: int) -> tuple[float, float]:
    """Median wall and calling-thread CPU seconds of `number` calls of `fn`, timed one by one."""
    walls, cpus = [], []
    for _ in range(number):
        start, cpu = time.perf_counter(), time.thread_time()
        fn()
        cpus.append(time.thread_time() - cpu)
        walls.append(time.perf_counter() - start)
    return float(np.median(walls)), float(np.median(cpus))


def bench_fixed(steps: int = 3000, number: int = 5000) -> dict[str, float]:
    """The fixed host cost of a barrier following its plan (median of `steps`), and of a captured
    replay (median of `number` calls)."""
    from x10array.autodiff import value_and_grad
    from x10array.optim import Adam

    rng = np.random.default_rng(0)
    Xn = rng.standard_normal((2000, 20))
    X, y = xp.asarray(Xn, device=LAZY), xp.asarray(Xn @ rng.standard_normal(20), device=LAZY)
    grad = value_and_grad(lambda w: xp.mean((X @ w - y) ** 2))
    opt = Adam(learning_rate=0.05)
    w = xp.zeros(20, dtype=xp.float64, device=LAZY)
    state = opt.init(w)
    walls, cpus, recorded = [], [], []
    ops = 0
    for _ in range(300 + steps):  # (the first 300: the graph compiles and its plan is kept)
        before = xp.metrics().ops_recorded
        cpu = time.thread_time()
        _, g = grad(w)
        w, state = opt.update(w, g, state)
        start, mid = time.perf_counter(), time.thread_time()
        xp.lazy_barrier()
        end = time.thread_time()
        walls.append(time.perf_counter() - start)
        cpus.append(end - mid)
        recorded.append(mid - cpu)
        ops = xp.metrics().ops_recorded - before
    walls, cpus, recorded = walls[300:], cpus[300:], recorded[300:]
    m0 = xp.metrics()
    _, g = grad(w)
    w, state = opt.update(w, g, state)
    xp.lazy_barrier()
    assert (xp.metrics() - m0).plan_hits == 1, "the step's barrier did not follow its plan"

    @xp.compile
    def add_one(x):
        return x + 1.0

    x = xp.ones(20, device=LAZY)
    jitted = jax.jit(lambda a: a + 1.0)
    nothing = jax.jit(lambda: None)
    a = jnp.ones(20)
    for _ in range(300):
        add_one(x), jitted(a), nothing()
    replay = _medians(lambda: add_one(x), number)
    theirs = _medians(lambda: jitted(a), number)
    noop = _medians(nothing, number)
    return {
        "Adam step barrier, plan followed, wall us": float(np.median(walls)) * 1e6,
        "Adam step barrier, plan followed, thread CPU us": float(np.median(cpus)) * 1e6,
        "Adam step operations recorded": ops,
        "Adam step recording, thread CPU per operation us": float(np.median(recorded)) / ops * 1e6,
        "replay of a small add, wall us": replay[0] * 1e6,
        "replay of a small add, thread CPU us": replay[1] * 1e6,
        "jax.jit small add, wall us": theirs[0] * 1e6,
        "jax.jit small add, thread CPU us": theirs[1] * 1e6,
        "jax.jit no-op, wall us": noop[0] * 1e6,
        "replay / jax.jit small add, wall": replay[0] / theirs[0],
    }


def main() -> None:
    import sys

    everything = (bench_record, bench_record_steps, bench_chain, bench_mlp, bench_narrow, bench_fixed)
    if "--record" in sys.argv[1:]:
        parts = everything[:2]
    elif "--fixed" in sys.argv[1:]:  # (--quick: a smoke run, tests/test_benchmarks.py)
        parts = (functools.partial(bench_fixed, 50, 200),) if "--quick" in sys.argv[1:] else (bench_fixed,)
    else:
        parts = everything
    start = time.perf_counter()
    results = {}
    for part in parts:
        results.update(part())
    width = max(map(len, results))
    for name, value in results.items():
        print(f"{name:<{width}}  {value:10.3f}")
    print(f"(total {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
