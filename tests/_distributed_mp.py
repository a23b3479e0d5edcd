"""The multi-process cases of tests/test_distributed.py (issue 10, tests 6-8), run by the
launcher in two processes of two CPU devices each:

    python -m x10array.distributed.launch -n 2 --local-devices 2 tests/_distributed_mp.py CASE

Each process prints one line `RESULT <json>` (the launcher prefixes it with the process index).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

import numpy as np

import x10array.distributed as xd

xd.initialize()  # first: before anything makes a device

import x10array as xp  # noqa: E402
from x10array.autodiff import value_and_grad  # noqa: E402


def _result(**values: Any) -> None:
    print("RESULT " + json.dumps(values), flush=True)


def _loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    ns = x.__array_namespace__()
    h = ns.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"]
    return ns.mean((out - y) ** 2)


def _reference(params: dict[str, np.ndarray], batches: list[Any], lr: float) -> list[float]:
    """The same steps in NumPy, by hand (float64): the one-process answer."""
    p = {k: v.copy() for k, v in params.items()}
    losses = []
    for x, y in batches:
        a = x @ p["w1"] + p["b1"]
        h = np.tanh(a)
        out = h @ p["w2"]
        diff = out - y
        losses.append(float(np.mean(diff**2)))
        d_out = 2 * diff / diff.size
        g_w2 = h.T @ d_out
        d_a = (d_out @ p["w2"].T) * (1 - h**2)
        p["w1"] -= lr * (x.T @ d_a)
        p["b1"] -= lr * d_a.sum(0)
        p["w2"] -= lr * g_w2
    return losses


def cluster() -> None:
    """Test 6 and 7: the cluster, an exact global mean, 20 data-parallel steps, reads."""
    me, n = xd.process_index(), xd.process_count()
    mesh = xd.Mesh((4,), ("data",))
    rows = xd.NamedSharding(mesh, xd.P("data"))
    # a global mean of process-local data: process i holds 10*i + [0, 1, 2, 3]
    local = (np.arange(4.0) + 10 * me).reshape(4, 1)
    x = xd.from_process_local(local, rows)
    mean = float(xp.mean(x))
    expected_mean = float(np.mean([np.arange(4.0) + 10 * i for i in range(n)]))
    try:
        np.asarray(x)
        read_error = ""
    except ValueError as e:
        read_error = str(e)
    gathered = xd.gather(x).ravel().tolist()
    # a data-dependent shape runs on the host: replicated inputs only
    try:
        xp.unique_values(x)
        break_error = ""
    except ValueError as e:
        break_error = str(e)
    uniques = np.asarray(xp.unique_values(xd.replicate(np.array([3.0, 1.0, 3.0]), mesh))).tolist()
    # 20 data-parallel steps: each process supplies its half of every batch
    rng = np.random.default_rng(0)
    host = {"w1": rng.standard_normal((8, 16)) * 0.3, "b1": np.zeros(16), "w2": rng.standard_normal((16, 1)) * 0.3}
    batches = [(rng.standard_normal((32, 8)), rng.standard_normal((32, 1))) for _ in range(20)]
    params = {k: xd.replicate(v, mesh) for k, v in host.items()}
    step = value_and_grad(_loss)
    losses = []
    half = 32 // n
    for bx, by in batches:
        xb = xd.from_process_local(bx[me * half : (me + 1) * half], rows)
        yb = xd.from_process_local(by[me * half : (me + 1) * half], rows)
        loss, grads = step(params, xb, yb)
        params = {k: params[k] - 0.1 * grads[k] for k in params}
        xp.lazy_barrier()
        losses.append(float(loss))
    _result(
        process=me,
        processes=n,
        devices=len(mesh.devices),
        local_devices=len(mesh.local_devices),
        mean=mean,
        expected_mean=expected_mean,
        read_error=read_error,
        gathered=gathered,
        break_error=break_error,
        uniques=uniques,
        losses=losses,
        reference=_reference(host, batches, 0.1),
        compiles=xp.metrics().compile_count,
    )


def mismatch() -> None:
    """Test 8: the two processes record different programs: both raise, none hangs."""
    me = xd.process_index()
    mesh = xd.Mesh((4,), ("data",))
    x = xd.replicate(np.arange(8.0), mesh)
    same = float(xp.sum(x * 2.0))  # the same program everywhere: fine
    y = x * 2.0 if me == 0 else x + 1.0  # a different program in each process
    try:
        value = float(xp.sum(y))
        error = ""
    except (ValueError, RuntimeError) as e:
        value, error = float("nan"), f"{type(e).__name__}: {e}"
    _result(process=me, same=same, value=value, error=error)


def cached_mismatch() -> None:
    """Both processes compile the same two programs (agreed at their compiles); then each
    runs a different one of them, cached: with X10ARRAY_DISTRIBUTED_CHECK_EVERY=1 (set by the
    test) that run raises instead of pairing the two programs' all-reduces."""
    me = xd.process_index()
    mesh = xd.Mesh((4,), ("data",))
    x = xd.shard(np.arange(8.0), mesh, xd.P("data"))
    first = [float(xp.sum(x * 2.0)), float(xp.sum(x + 1.0))]  # the same programs, in the same order
    try:
        value = float(xp.sum(x * 2.0)) if me == 0 else float(xp.sum(x + 1.0))
        error = ""
    except (ValueError, RuntimeError) as e:
        value, error = float("nan"), f"{type(e).__name__}: {e}"
    compiles = xp.metrics().compile_count
    # the same with captured steps (x10array.compile): their replays are runs too
    doubled = xp.compile(lambda a: xp.sum(a * 2.0))
    shifted = xp.compile(lambda a: xp.sum(a + 1.0))
    for step in (doubled, shifted, doubled, shifted):  # captured, then replayed, in the same order
        float(step(x))
    try:
        float(doubled(x) if me == 0 else shifted(x))
        replay_error = ""
    except (ValueError, RuntimeError) as e:
        replay_error = f"{type(e).__name__}: {e}"
    _result(
        process=me, first=first, value=value, error=error, compiles=compiles,
        replay_error=replay_error, replays=xp.metrics().captured_replays,
    )  # fmt: skip


def captured() -> None:
    """x10array.compile across two processes: the captured SPMD step replayed (same losses
    as by hand), and two processes capturing different programs raise."""
    me, n = xd.process_index(), xd.process_count()
    mesh = xd.Mesh((4,), ("data",))
    rows = xd.NamedSharding(mesh, xd.P("data"))
    rng = np.random.default_rng(0)
    host = {"w1": rng.standard_normal((8, 16)) * 0.3, "b1": np.zeros(16), "w2": rng.standard_normal((16, 1)) * 0.3}
    batches = [(rng.standard_normal((32, 8)), rng.standard_normal((32, 1))) for _ in range(10)]
    params = {k: xd.replicate(v, mesh) for k, v in host.items()}
    grad = value_and_grad(_loss)

    @xp.compile
    def step(params: Any, x: Any, y: Any, lr: float) -> Any:
        loss, g = grad(params, x, y)
        return {k: params[k] - lr * g[k] for k in params}, loss

    losses = []
    half = 32 // n
    start = xp.metrics()
    for bx, by in batches:
        xb = xd.from_process_local(bx[me * half : (me + 1) * half], rows)
        yb = xd.from_process_local(by[me * half : (me + 1) * half], rows)
        params, loss = step(params, xb, yb, 0.1)
        losses.append(float(loss))
    done = xp.metrics() - start

    @xp.compile
    def differs(x: Any) -> Any:
        return xp.sum(x * 2.0) if me == 0 else xp.sum(x + 1.0)

    try:
        float(differs(xd.replicate(np.arange(8.0), mesh)))
        error = ""
    except (ValueError, RuntimeError) as e:
        error = f"{type(e).__name__}: {e}"
    _result(
        process=me,
        losses=losses,
        reference=_reference(host, batches, 0.1),
        replays=done.captured_replays,
        compiles=done.compile_count,
        error=error,
    )


def _stepping(mesh: Any) -> tuple[Any, Any]:
    """A step's input (this process's rows of a batch) and its loss: reading the loss waits
    for the step's all-reduce, in which every process takes part."""
    me = xd.process_index()
    rows = xd.NamedSharding(mesh, xd.P("data"))
    x = xd.from_process_local(np.full((4, 8), me + 1.0), rows)
    return x, xp.mean(x @ xd.replicate(np.ones((8, 1)), mesh))


def failing() -> None:
    """Issue 23, item 7: process 1 fails in the third step (sys.argv[2]: `raise`, `kill`
    (SIGKILL), `exit` (sys.exit(3)) or `diverge` (records one program more)); process 0
    goes on into the step's collective, which waits for process 1 for ever. The launcher
    must end the run (the test bounds it)."""
    mode = sys.argv[2]
    me = xd.process_index()
    print(f"PID {os.getpid()}", flush=True)
    mesh = xd.Mesh((4,), ("data",))
    for step in range(4):
        x, loss = _stepping(mesh)
        if step == 2 and me == 1:
            print(f"FAILING {time.time()}", flush=True)
            if mode == "raise":
                raise ValueError("process 1 fails mid-step")
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "exit":
                sys.exit(3)
            if mode == "diverge":
                float(xp.sum(x * 3.0 + 1.0))  # a program process 0 does not record
        float(loss)
    _result(process=me, finished=True)  # (process 0 never gets here: its third step waits for ever)


def until_stopped() -> None:
    """Issue 23, item 8: steps for ever (the test signals the launcher once both processes
    print READY)."""
    print(f"PID {os.getpid()}", flush=True)
    mesh = xd.Mesh((4,), ("data",))
    float(_stepping(mesh)[1])
    print("READY", flush=True)
    while True:
        float(_stepping(mesh)[1])
        time.sleep(0.2)


if __name__ == "__main__":
    globals()[sys.argv[1]]()
