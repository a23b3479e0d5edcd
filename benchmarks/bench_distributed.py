"""Data-parallel MLP step (784-128-10, float32, SGD) on a mesh of 1, 2 and 4 forced host
devices, and across 2 processes on localhost (2 devices each).

Measured in one run per device count (each in a subprocess of its own: forced devices change
jax's process), steady state (`_timing.in_a_loop`: steps in a row, best of three loops), each
form once and then in `--rounds` interleaved rounds (the order turning each round, so all see
the same load):

- x10array lazy on `xd.Mesh((n,), ("data",))`: the batch sharded along "data", the parameters
  replicated; record + autodiff + barrier per step;
- the same step under `x10array.compile`: recorded once, then its compiled SPMD program
  replayed (no recording, no autodiff, no graph key per step), returning new parameters;
- the captured step updating the parameters in place (`p[k] -= lr * g[k]`): its replays
  donate the parameters' old buffers, as the hand-written step does;
- the same step hand-written in JAX: `jax.jit` with `in_shardings` (batch `P("data")`,
  parameters `P()`) and `donate_argnums` for the parameters, `jax.value_and_grad`.

Reported as ms per step (each form's best loop) and the ratios x10array / jax of each form: the
median over the rounds of its loop time over the jax loop's in the same round (paired, so a
burst of load on the machine moves both sides), with x10array's compile count in the steady
state, each form (target: within 1.25x of the jax step in a loop, 1
compile). On a small CPU no speedup from more devices is expected (they share the cores): the figures measure overhead.

Loops stay at 20 steps or fewer: the hand-written jax loop has no bound on the programs in flight,
and XLA's CPU client aborts at 32 (x10array bounds its own at 8, see docs/distributed.md).

Run: python benchmarks/bench_distributed.py [--steps 20] [--rounds 6] [--batches 256 2048] [--devices 1 2 4]
[--no-processes]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LR = 0.05


def _params(dtype: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "w1": (rng.standard_normal((784, 128)) * 0.05).astype(dtype),
        "b1": np.zeros(128, dtype),
        "w2": (rng.standard_normal((128, 10)) * 0.05).astype(dtype),
        "b2": np.zeros(10, dtype),
    }


def _loss(ns: Any, p: dict[str, Any], x: Any, y: Any) -> Any:
    h = ns.maximum(x @ p["w1"] + p["b1"], 0.0)
    logits = h @ p["w2"] + p["b2"]
    m = ns.max(logits, axis=1, keepdims=True)
    lse = ns.log(ns.sum(ns.exp(logits - m), axis=1)) + m[:, 0]
    return ns.mean(lse - ns.sum(logits * y, axis=1))


def worker(batch: int, steps: int, rounds: int) -> dict[str, Any]:
    """Both steps on a mesh of every device (of every process)."""
    import jax
    import jax.numpy as jnp
    from _timing import in_a_loop
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import x10array as xp
    import x10array.distributed as xd
    from x10array.autodiff import value_and_grad
    from x10array.extend import settings

    n = len(jax.devices())
    mesh = xd.Mesh((n,), ("data",))
    rows = xd.NamedSharding(mesh, xd.P("data"))
    rng = np.random.default_rng(1)
    me, count = xd.process_index(), xd.process_count()
    bx = rng.standard_normal((batch, 784)).astype(np.float32)
    by = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    share = batch // count
    mine = slice(me * share, (me + 1) * share)

    # x10array
    params = {k: xd.replicate(v, mesh) for k, v in _params(np.float32).items()}
    x = xd.from_process_local(bx[mine], rows)
    y = xd.from_process_local(by[mine], rows)
    grad_step = value_and_grad(lambda p, x, y: _loss(xp, p, x, y))
    state = {"p": params}

    def x10_step(wait: bool) -> None:
        loss, g = grad_step(state["p"], x, y)
        state["p"] = {k: state["p"][k] - LR * g[k] for k in state["p"]}
        xp.lazy_barrier(mesh.device, wait=wait)

    x10 = in_a_loop(x10_step, steps)
    compiles_before = xp.metrics().compile_count
    in_a_loop(x10_step, steps, warmup=0)
    steady_compiles = xp.metrics().compile_count - compiles_before

    # the same step captured (x10array.compile): its SPMD program replayed
    @xp.compile
    def train(p: Any, x: Any, y: Any, lr: float) -> Any:
        loss, g = grad_step(p, x, y)
        return {k: p[k] - lr * g[k] for k in p}, loss

    cstate = {"p": {k: xd.replicate(v, mesh) for k, v in _params(np.float32).items()}}

    def captured_step(wait: bool) -> None:
        cstate["p"], loss = train(cstate["p"], x, y, LR)
        if wait:
            xp.lazy_barrier(mesh.device, wait=True)  # (waits for the replayed program too)

    captured = in_a_loop(captured_step, steps)
    compiles_before = xp.metrics().compile_count
    in_a_loop(captured_step, steps, warmup=0)
    captured_compiles = xp.metrics().compile_count - compiles_before

    # the same step captured, updating the parameters in place (`p[k] -= ...`): the replay
    # donates their old buffers, as the hand-written jax step donates its parameters
    @xp.compile
    def train_in_place(p: Any, x: Any, y: Any, lr: float) -> Any:
        loss, g = grad_step(p, x, y)
        for k in p:
            p[k] -= lr * g[k]
        return loss

    istate = {k: xd.replicate(v, mesh) for k, v in _params(np.float32).items()}
    donated_before = xp.metrics().donated_buffers

    def in_place_step(wait: bool) -> None:
        train_in_place(istate, x, y, LR)
        if wait:
            xp.lazy_barrier(mesh.device, wait=True)

    in_place = in_a_loop(in_place_step, steps)
    compiles_before = xp.metrics().compile_count
    in_a_loop(in_place_step, steps, warmup=0)
    in_place_compiles = xp.metrics().compile_count - compiles_before
    donated = xp.metrics().donated_buffers - donated_before

    # jax.jit with NamedSharding, by hand
    jmesh = mesh.jax
    rep, split = NamedSharding(jmesh, P()), NamedSharding(jmesh, P("data"))
    jp = {k: jax.make_array_from_callback(v.shape, rep, lambda i, v=v: v[i]) for k, v in _params(np.float32).items()}
    jx = jax.make_array_from_process_local_data(split, bx[mine], bx.shape)
    jy = jax.make_array_from_process_local_data(split, by[mine], by.shape)

    def jax_loss(p: Any, x: Any, y: Any) -> Any:
        return _loss(jnp, p, x, y)

    def update(p: Any, x: Any, y: Any) -> Any:
        loss, g = jax.value_and_grad(jax_loss)(p, x, y)
        return {k: p[k] - LR * g[k] for k in p}, loss

    jstep = jax.jit(update, in_shardings=(rep, split, split), out_shardings=(rep, rep), donate_argnums=(0,))
    jstate = {"p": jp}

    def jax_step(wait: bool) -> None:
        jstate["p"], loss = jstep(jstate["p"], jx, jy)
        if wait:
            loss.block_until_ready()

    jx_time = in_a_loop(jax_step, steps)

    # the same x10array step on one lazy device (no mesh), for what the mesh itself costs
    single = None
    if count == 1:
        dev = xp.Device("cpu", 0, "xla")
        sx, sy = xp.asarray(bx, device=dev), xp.asarray(by, device=dev)
        sstate = {"p": {k: xp.asarray(v, device=dev) for k, v in _params(np.float32).items()}}

        def single_step(wait: bool) -> None:
            loss, g = grad_step(sstate["p"], sx, sy)
            sstate["p"] = {k: sstate["p"][k] - LR * g[k] for k in sstate["p"]}
            xp.lazy_barrier(dev, wait=wait)

        with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):  # compiled from the first step, as a mesh is
            single = in_a_loop(single_step, steps)
    # again, interleaved in rounds (the order turning each round), so all four see the same
    # load: per form its best loop, and per round its time over the jax step's in that round
    # (the median of those paired ratios is the figure least moved by the machine's load)
    variants = [x10_step, captured_step, in_place_step, jax_step]
    times = [[x10], [captured], [in_place], [jx_time]]
    for r in range(rounds):
        for i in range(len(variants)):
            v = (i + r) % len(variants)
            times[v].append(in_a_loop(variants[v], steps))
    paired = [statistics.median(t / j for t, j in zip(form, times[3])) for form in times[:3]]
    return {
        "devices": n,
        "processes": count,
        "batch": batch,
        "x10array_ms": 1e3 * min(times[0]),
        "captured_ms": 1e3 * min(times[1]),
        "in_place_ms": 1e3 * min(times[2]),
        "jax_ms": 1e3 * min(times[3]),
        "paired": paired,
        "steady_compiles": steady_compiles,
        "captured_compiles": captured_compiles,
        "in_place_compiles": in_place_compiles,
        "in_place_donated": donated,
        "single_ms": None if single is None else 1e3 * single,
    }


def _run(args: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=1800)
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in done.stdout.splitlines() if "RESULT " in line]
    if done.returncode or not results:
        raise RuntimeError(f"bench_distributed: a worker failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds of the four forms after the first")
    parser.add_argument("--batches", type=int, nargs="+", default=[256, 2048])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--no-processes", action="store_true", help="skip the 2-process loopback step")
    parser.add_argument("--worker", nargs=3, type=int, metavar=("BATCH", "STEPS", "ROUNDS"), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.worker:
        if os.environ.get("X10ARRAY_NUM_PROCESSES"):
            import x10array.distributed as xd

            xd.initialize()
        print("RESULT " + json.dumps(worker(*ns.worker)), flush=True)
        return
    base = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")]))
    rows = []
    for batch in ns.batches:
        for n in ns.devices:
            env = dict(base, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
            rows += _run([__file__, "--worker", str(batch), str(ns.steps), str(ns.rounds)], env)
        if not ns.no_processes:
            launch = ["-m", "x10array.distributed.launch", "-n", "2", "--local-devices", "2"]
            rows += _run([*launch, __file__, "--worker", str(batch), str(ns.steps), str(ns.rounds)], base)[:1]
    print("data-parallel MLP 784-128-10 float32 step in a loop, ms: x10array lazy mesh, recorded at each step;")
    print("captured (x10array.compile) returning new parameters; captured updating them in place (their buffers")
    print("donated); jax.jit + NamedSharding + donated parameters; same run. compiles: in the steady state, per")
    print("form. ms: each form's best loop; ratios: the median over rounds of the form's loop over the jax loop of")
    print("the same round. (1-dev lazy: the recorded step on cpu:0:xla, no mesh, compiled from the first step)")
    header = f"{'batch':>6} {'devices':>8} {'procs':>6} {'recorded':>9} {'captured':>9} {'in place':>9} {'jax':>8}"
    print(header + f" {'rec/jax':>8} {'cap/jax':>8} {'inpl/jax':>9} {'compiles':>9} {'1-dev lazy':>11}")
    for r in rows:
        single = "-" if r["single_ms"] is None else f"{r['single_ms']:.2f}"
        compiles = f"{r['steady_compiles']}/{r['captured_compiles']}/{r['in_place_compiles']}"
        print(
            f"{r['batch']:>6} {r['devices']:>8} {r['processes']:>6} {r['x10array_ms']:>9.2f} {r['captured_ms']:>9.2f}"
            f" {r['in_place_ms']:>9.2f} {r['jax_ms']:>8.2f} {r['paired'][0]:>8.2f}"
            f" {r['paired'][1]:>8.2f} {r['paired'][2]:>9.2f} {compiles:>9} {single:>11}"
        )
        if not r["in_place_donated"]:
            print("   (the in-place step donated nothing: its replays copied the parameters)")


if __name__ == "__main__":
    main()
