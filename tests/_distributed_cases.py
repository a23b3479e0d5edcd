"""The cases of tests/test_distributed.py, each run in a subprocess of its own (forced host
devices, or several processes, change jax's process for good):

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python tests/_distributed_cases.py CASE

Each case prints one line `RESULT <json>` that the test reads and checks; the assertions that
need the numbers of both sides are in the test, those about one side are here.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np


def _result(**values: Any) -> None:
    print("RESULT " + json.dumps(values), flush=True)


def _hlo_recorder() -> list[str]:
    """Record the compiled HLO text of every new mesh program (wrapping
    program.compiled_function)."""
    from x10array._backends.lazy import program as lazy_program

    texts: list[str] = []
    original = lazy_program.compiled_function

    def recording(program: Any, leaf_values: Any) -> Any:
        fn = original(program, leaf_values)
        if program.key.device.mesh is None:
            return fn

        def run(donated: Any, kept: Any, scalars: Any) -> Any:
            if not seen:  # (the first run: the program's text)
                seen.append(True)
                texts.append(fn.func.lower(*fn.args, donated, kept, scalars).compile().as_text())
            return fn(donated, kept, scalars)

        seen: list[bool] = []

        return run

    lazy_program.compiled_function = recording
    return texts


def _mlp(xp: Any, device: Any, dtype: Any, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    shapes = {"w1": (784, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    return {k: rng.standard_normal(s) * (0.05 if k[0] == "w" else 0.01) for k, s in shapes.items()}


def _loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    xp = x.__array_namespace__()
    h = xp.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"] + params["b2"]
    m = xp.max(logits, axis=1, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(logits - m), axis=1)) + m[:, 0]
    picked = xp.sum(logits * y, axis=1)
    return xp.mean(lse - picked)


def _batches(dtype: Any, steps: int, batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((batch, 784)).astype(dtype)
        y = np.eye(10, dtype=dtype)[rng.integers(0, 10, batch)]
        out.append((x, y))
    return out


def data_parallel_mlp() -> None:
    """Test 1: 20 data-parallel SGD steps on a 4-device mesh against one device."""
    import x10array as xp
    import x10array.distributed as xd
    from x10array.autodiff import value_and_grad

    texts = _hlo_recorder()
    mesh = xd.Mesh((4,), ("data",))
    single = xp.Device("cpu", 0, "xla")
    step = value_and_grad(_loss)
    rates = [0.1, 0.05, 0.02]
    report: dict[str, Any] = {}
    for name, dtype in (("float64", np.float64), ("float32", np.float32)):
        host = {k: v.astype(dtype) for k, v in _mlp(xp, None, dtype).items()}
        batches = _batches(dtype, 20, 64)
        runs = {}
        compiles = {}
        for where in ("mesh", "single"):
            if where == "mesh":
                params = {k: xd.replicate(v, mesh) for k, v in host.items()}
            else:
                params = {k: xp.asarray(v, device=single) for k, v in host.items()}
            losses = []
            counts = []
            start = xp.metrics().compile_count
            for i, (bx, by) in enumerate(batches):
                if where == "mesh":
                    x = xp.asarray(bx, device=xd.NamedSharding(mesh, xd.P("data")))
                    y = xp.asarray(by, device=xd.NamedSharding(mesh, xd.P("data")))
                else:
                    x, y = xp.asarray(bx, device=single), xp.asarray(by, device=single)
                loss, grads = step(params, x, y)
                lr = rates[i % 3]
                params = {k: params[k] - lr * grads[k] for k in params}
                xp.lazy_barrier()
                losses.append(float(loss))
                counts.append(xp.metrics().compile_count - start)
            runs[where] = (losses, {k: np.asarray(v) for k, v in params.items()})
            compiles[where] = counts
            if where == "mesh":
                report[f"{name}_device_ok"] = all(v.device == mesh.device for v in params.values())
                report[f"{name}_param_sharding"] = str(xd.sharding(params["w1"]))
        diff = max(float(np.max(np.abs(runs["mesh"][1][k] - runs["single"][1][k]))) for k in host)
        loss_diff = max(abs(a - b) for a, b in zip(runs["mesh"][0], runs["single"][0]))
        report[name] = {"param_diff": diff, "loss_diff": loss_diff, "mesh_compiles": compiles["mesh"]}
    report["hlo_all_reduces"] = [t.count(" all-reduce(") + t.count(" all-reduce-start(") for t in texts]
    _result(**report)


def tensor_parallel() -> None:
    """Test 2: a weight split along "model" keeps its sharding across steps; donation works."""
    import x10array as xp
    import x10array.distributed as xd

    mesh = xd.Mesh((2, 2), ("data", "model"))
    rng = np.random.default_rng(0)
    w_host = rng.standard_normal((16, 8))
    w = xd.shard(w_host, mesh, xd.P(None, "model"))
    ref = w_host.copy()
    layouts = []
    donated = []
    for _ in range(5):
        bx = rng.standard_normal((8, 16))
        x = xp.asarray(bx, device=xd.NamedSharding(mesh, xd.P("data")))
        g = xp.matrix_transpose(x) @ xp.tanh(x @ w)
        w -= 0.01 * g  # in place: w keeps its layout
        ref -= 0.01 * (bx.T @ np.tanh(bx @ ref))
        before = xp.metrics().donated_buffers
        xp.lazy_barrier(mesh.device)
        donated.append(xp.metrics().donated_buffers - before)
        layouts.append(str(xd.sharding(w)))
    # a gathered single-file checkpoint of values on the mesh, restored onto the mesh
    import tempfile

    from x10array import checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        tree = {"w": w, "state": {"step": 5, "m": xd.replicate(np.arange(4.0), mesh)}}
        checkpoint.save(f"{tmp}/c.safetensors", tree)
        back = checkpoint.load(f"{tmp}/c.safetensors", like=tree)
    restored = (
        bool(np.array_equal(np.asarray(back["w"]), np.asarray(w)))
        and back["w"].device == mesh.device
        and back["state"]["step"] == 5
        and bool(np.array_equal(np.asarray(back["state"]["m"]), np.arange(4.0)))
    )
    _result(
        restored=restored,
        layouts=layouts,
        donated=donated,
        max_diff=float(np.max(np.abs(np.asarray(w) - ref))),
        describe=xd.describe(w),
    )


def constrain_is_lazy() -> None:
    """Test 3: constrain records a constraint and runs nothing before the barrier."""
    import x10array as xp
    import x10array.distributed as xd

    mesh = xd.Mesh((2, 2), ("data", "model"))
    x = xd.shard(np.arange(32.0).reshape(8, 4), mesh, xd.P("data"))
    before = xp.metrics()
    y = xd.constrain(x * 2.0, xd.P(None, "model"))
    z = xd.constrain(xp.sum(y, axis=0), xd.P("model"))
    middle = xp.metrics()
    pending = (xd.sharding(y), xd.sharding(z))
    xp.lazy_barrier(mesh.device)
    after = xp.metrics()
    # the compile log names a layout change that caused a compile
    import contextlib
    import io

    from x10array.extend import settings

    log = io.StringIO()
    with settings.override(X10ARRAY_LOG_COMPILES=True), contextlib.redirect_stdout(log):
        for spec in (xd.P("data"), xd.P()):
            v = xd.shard(np.ones((8, 4)), mesh, spec)
            float(xp.sum(xp.exp(v)))
    _result(
        log=log.getvalue(),
        runs_before_barrier=middle.execute_count - before.execute_count,
        compiles_before_barrier=middle.compile_count - before.compile_count,
        runs_at_barrier=after.execute_count - middle.execute_count,
        pending=list(pending),
        y_layout=str(xd.sharding(y)),
        z_layout=str(xd.sharding(z)),
        z=np.asarray(z).tolist(),
    )


def relayout_on_the_mesh() -> None:
    """shard / to_device of an array already on the mesh into another layout: the slices move
    between the mesh's devices (no host transfer), bit for bit, and the source is unchanged."""
    import x10array as xp
    import x10array.distributed as xd

    mesh = xd.Mesh((2, 2), ("data", "model"))
    host = np.random.default_rng(0).standard_normal((8, 4))
    x = xd.shard(host, mesh, xd.P("data"))
    pending = x * 3.0
    before = xp.metrics()
    specs = {"replicated": xd.P(), "model": xd.P(None, "model"), "both": xd.P("data", "model")}
    moved = {name: xd.shard(x, mesh, spec) for name, spec in specs.items()}
    z = x.to_device(xd.NamedSharding(mesh, xd.P(None, "model")))
    w = xd.shard(pending, mesh, xd.P())  # a pending array: computed, then re-laid out
    middle = xp.metrics()  # (before any read below)
    layouts = {name: str(xd.sharding(y)) for name, y in moved.items()}
    values = {name: bool(np.array_equal(np.asarray(y), host)) for name, y in moved.items()}
    same = xd.shard(x, mesh, xd.P("data"))
    _result(
        layouts=layouts,
        values=values,
        to_device_layout=str(xd.sharding(z)),
        to_device_exact=bool(np.array_equal(np.asarray(z), host)),
        pending_exact=bool(np.array_equal(np.asarray(w), host * 3.0)),
        pending_layout=str(xd.sharding(w)),
        source_layout=str(xd.sharding(x)),
        source_exact=bool(np.array_equal(np.asarray(x), host)),
        same_is_source=same is x,
        host_transfers=(middle.transfers_to_host - before.transfers_to_host)
        + (middle.transfers_to_device - before.transfers_to_device),
    )


def bad_input() -> None:
    """Test 4: every bad input raises ValueError at the call, naming the function and problem."""
    import x10array as xp
    import x10array.distributed as xd

    mesh = xd.Mesh((4,), ("data",))
    cases = {
        "uneven": lambda: xd.shard(np.zeros((250, 3)), mesh, xd.P("data")),
        "uneven_asarray": lambda: xp.asarray(np.zeros((250, 3)), device=xd.NamedSharding(mesh, xd.P("data"))),
        "unknown_axis": lambda: xd.NamedSharding(mesh, xd.P("model")),
        "unknown_axis_shard": lambda: xd.shard(np.zeros((8, 3)), mesh, xd.P("model")),
        "spec_too_long": lambda: xd.shard(np.zeros(8), mesh, xd.P("data", None)),
        "mesh_shape": lambda: xd.Mesh((3, 2), ("a", "b")),
        "mesh_devices": lambda: xd.Mesh((2, 2), ("a", "b"), devices=mesh.devices[:3]),
        "axis_twice": lambda: xd.NamedSharding(xd.Mesh((2, 2), ("a", "b")), xd.P("a", "a")),
        "mixing": lambda: xd.replicate(np.ones(4), mesh) + xp.ones(4, device=xp.Device("cpu", 0, "xla")),
        "constrain_single": lambda: xd.constrain(xp.ones(4, device=xp.Device("cpu", 0, "xla")), xd.P("data")),
        "constrain_uneven": lambda: xd.constrain(xd.replicate(np.ones(6), mesh), xd.P("data")),
        "initialize_late": lambda: xd.initialize("localhost:1", 2, 0),
    }
    out = {}
    for name, call in cases.items():
        try:
            call()
        except ValueError as e:
            out[name] = str(e)
        except Exception as e:  # a wrong kind of error: reported as such
            out[name] = f"WRONG {type(e).__name__}: {e}"
        else:
            out[name] = "NO ERROR"
    x = xd.shard(np.ones((8, 2)), mesh, xd.P("data"))
    try:
        x.__dlpack__()
    except BufferError as e:
        out["dlpack"] = str(e)
    _result(**out)


def lenet_mnist() -> None:
    """Test 5: LeNet-5 on MNIST, data-parallel over 4 devices for one epoch, against one device."""
    import x10array as xp
    import x10array.distributed as xd
    from x10array import nn
    from x10array.autodiff import value_and_grad
    from x10array.datasets import MNIST
    from x10array.optim import SGD

    data_dir = sys.argv[2]
    limit = int(sys.argv[3])
    momentum = float(sys.argv[4]) if len(sys.argv) > 4 else 0.9
    mesh = xd.Mesh((4,), ("data",))
    host = xp.Device("cpu", 0, "eager")
    data = MNIST(128, data_dir, device=host, seed=0, download=False)

    def loss_fn(model: Any, images: Any, labels: Any) -> Any:
        return nn.softmax_cross_entropy(model(images), labels)

    accuracy = {}
    for where in ("mesh", "single"):
        device = mesh.device if where == "mesh" else xp.Device("cpu", 0, "xla")
        batch_layout = xd.NamedSharding(mesh, xd.P("data")) if where == "mesh" else device
        model = nn.LeNet(seed=0, device=host).move(to=device)
        optimizer = SGD(learning_rate=0.1, momentum=momentum)
        state = nn.to_device(optimizer.init(model), device)
        step = value_and_grad(loss_fn)
        with nn.phase("training"):
            for i, (images, labels) in enumerate(next(iter(data.training))):
                if i == limit:
                    break
                images, labels = images.to_device(batch_layout), labels.to_device(batch_layout)
                _, grads = step(model, images, labels)
                model, state = optimizer.update(model, grads, state)
                xp.lazy_barrier()
        correct, total = 0, 0
        with nn.phase("inference"):
            for images, labels in data.validation:
                if images.shape[0] % 4:
                    continue  # (even shards only: the last partial batch is left out on both)
                images, labels = images.to_device(batch_layout), labels.to_device(batch_layout)
                guesses = xp.argmax(model(images), axis=1)
                correct += int(xp.sum(xp.astype(guesses == labels, xp.int64)))
                total += labels.shape[0]
        accuracy[where] = correct / total
    _result(accuracy=accuracy, compiles=xp.metrics().compile_count)


def compile_on_a_mesh() -> None:
    """x10array.compile on a mesh captures the SPMD program and replays it: the same values as
    the step recorded at each call and as on one device, one compile in the steady state, no
    recompile for a new learning rate, a new capture for an input laid out differently, and
    the layouts of rebound parameters kept."""
    import x10array as xp
    import x10array.distributed as xd
    from x10array.autodiff import value_and_grad

    mesh = xd.Mesh((4,), ("data",))
    single = xp.Device("cpu", 0, "xla")
    rng = np.random.default_rng(0)
    rows, replicated = xd.NamedSharding(mesh, xd.P("data", None)), xd.NamedSharding(mesh, xd.P())
    columns = xd.NamedSharding(mesh, xd.P(None, "data"))
    hx, hy = rng.standard_normal((64, 8)), rng.standard_normal((64, 1))
    x, y = xp.asarray(hx, device=rows), xp.asarray(hy, device=rows)

    def step(w: Any, x: Any, y: Any, lr: float) -> Any:
        r = x @ w - y
        w -= lr * (x.mT @ r) / x.shape[0]
        return xp.sum(r * r)

    captured = xp.compile(step)
    w_plain, w_compiled = (xp.asarray(np.zeros((8, 1)), device=replicated) for _ in range(2))
    w_single = xp.asarray(np.zeros((8, 1)), device=single)
    sx, sy = xp.asarray(hx, device=single), xp.asarray(hy, device=single)
    losses = []
    compiles = []
    replays = xp.metrics().captured_replays
    for lr in (0.1, 0.05, 0.1, 0.02, 0.1, 0.07):
        before = xp.metrics().compile_count
        compiled = captured(w_compiled, x, y, lr)
        xp.lazy_barrier(mesh.device)
        compiles.append(xp.metrics().compile_count - before)
        plain, alone = step(w_plain, x, y, lr), step(w_single, sx, sy, lr)
        xp.lazy_barrier()
        losses.append((float(plain), float(compiled), float(alone)))
    replays = xp.metrics().captured_replays - replays
    layout = str(xd.sharding(w_compiled))
    single_diff = float(np.max(np.abs(np.asarray(w_single) - np.asarray(w_compiled))))

    # an input laid out differently (x replicated instead of split by rows): captured again
    before = xp.metrics().compile_count
    xr = xp.asarray(hx, device=replicated)
    again = captured(w_compiled, xr, y, 0.1)
    xp.lazy_barrier(mesh.device)
    recaptured = xp.metrics().compile_count - before
    expected = step(w_plain, x, y, 0.1)
    xp.lazy_barrier(mesh.device)
    resharded_diff = abs(float(again) - float(expected))

    # a data-parallel MLP step, functional (new parameters returned): parameters replicated,
    # then with w1 split by columns (tensor parallel): the outputs keep the layouts the program
    # chose (which may differ from the inputs' at first: a new signature, captured again)
    grad = value_and_grad(_loss)
    host = {k: v for k, v in _mlp(xp, None, np.float64).items()}

    @xp.compile
    def mlp_step(params: Any, x: Any, y: Any, lr: float) -> Any:
        loss, g = grad(params, x, y)
        return {k: params[k] - lr * g[k] for k in params}, loss

    mlp: dict[str, Any] = {}
    for name, w1_layout in (("replicated", replicated), ("tensor", columns)):
        layouts_in = {"w1": w1_layout, "b1": replicated, "w2": replicated, "b2": replicated}
        p_mesh = {k: xp.asarray(v, device=layouts_in[k]) for k, v in host.items()}
        p_plain = {k: xp.asarray(v, device=layouts_in[k]) for k, v in host.items()}
        p_single = {k: xp.asarray(v, device=single) for k, v in host.items()}
        mlp_losses = []
        mlp_compiles = []
        plain_compiles = []
        for i, (bx, by) in enumerate(_batches(np.float64, 8, 64)):
            lr = (0.1, 0.05)[i % 2]
            mx, my = xp.asarray(bx, device=rows), xp.asarray(by, device=rows)
            before = xp.metrics().compile_count
            p_mesh, l_mesh = mlp_step(p_mesh, mx, my, lr)
            xp.lazy_barrier(mesh.device)
            mlp_compiles.append(xp.metrics().compile_count - before)
            before = xp.metrics().compile_count
            l_plain, g_plain = grad(p_plain, mx, my)
            p_plain = {k: p_plain[k] - lr * g_plain[k] for k in p_plain}
            xp.lazy_barrier(mesh.device)
            plain_compiles.append(xp.metrics().compile_count - before)
            sx_, sy_ = xp.asarray(bx, device=single), xp.asarray(by, device=single)
            l_single, g_single = grad(p_single, sx_, sy_)
            p_single = {k: p_single[k] - lr * g_single[k] for k in p_single}
            xp.lazy_barrier()
            mlp_losses.append((float(l_plain), float(l_mesh), float(l_single)))
        mlp[name] = {
            "losses": mlp_losses,
            "compiles": mlp_compiles,
            "plain_compiles": plain_compiles,
            "plain": max(float(np.max(np.abs(np.asarray(p_mesh[k]) - np.asarray(p_plain[k])))) for k in host),
            "single": max(float(np.max(np.abs(np.asarray(p_mesh[k]) - np.asarray(p_single[k])))) for k in host),
            "layouts": {k: str(xd.sharding(v)) for k, v in p_mesh.items()},
            "plain_layouts": {k: str(xd.sharding(v)) for k, v in p_plain.items()},
        }
    _result(
        losses=losses,
        compiles=compiles,
        replays=replays,
        diff=float(np.max(np.abs(np.asarray(w_plain) - np.asarray(w_compiled)))),
        single_diff=single_diff,
        device_kept=w_compiled.device == mesh.device,
        layout=layout,
        recaptured=recaptured,
        resharded_diff=resharded_diff,
        mlp=mlp,
    )


def long_unwaited_loop() -> None:
    """100 data-parallel steps in a row, none waited for, recorded and captured: XLA's CPU
    client aborts the process once 32 programs with a collective are in flight (plain jax
    too); the mesh bounds them (spmd.IN_FLIGHT_LIMIT). The parameters equal the same steps
    waited for one by one."""
    import x10array as xp
    import x10array.distributed as xd
    from x10array._backends.lazy import spmd
    from x10array.autodiff import value_and_grad

    mesh = xd.Mesh((2,), ("data",))
    rows = xd.NamedSharding(mesh, xd.P("data"))
    host = {k: v.astype(np.float32) for k, v in _mlp(xp, None, np.float32).items()}
    bx, by = _batches(np.float32, 1, 512)[0]
    x, y = xp.asarray(bx, device=rows), xp.asarray(by, device=rows)
    grad = value_and_grad(_loss)

    def train(p: Any, x: Any, y: Any, lr: float) -> Any:
        loss, g = grad(p, x, y)
        return {k: p[k] - lr * g[k] for k in p}, loss

    captured = xp.compile(train)
    finals = {}
    most = 0
    for how in ("recorded", "captured", "waited"):
        params = {k: xd.replicate(v, mesh) for k, v in host.items()}
        for _ in range(100):
            if how == "captured":
                params, loss = captured(params, x, y, 0.01)
            else:
                params, loss = train(params, x, y, 0.01)
                xp.lazy_barrier(mesh.device, wait=how == "waited")
            most = max(most, len(spmd._LAUNCHED.get(mesh.device, ())))
        finals[how] = {k: np.asarray(v) for k, v in params.items()}
    _result(
        most_in_flight=most,
        limit=spmd.IN_FLIGHT_LIMIT,
        recorded_diff=max(float(np.max(np.abs(finals["recorded"][k] - finals["waited"][k]))) for k in host),
        captured_diff=max(float(np.max(np.abs(finals["captured"][k] - finals["waited"][k]))) for k in host),
    )


def bounds_check_on_a_mesh() -> None:
    """A pending index out of bounds on a mesh: the run raises IndexError naming the operation
    and the line, every other value of that run is computed and readable, the bad one raises
    again when read."""
    import x10array as xp
    import x10array.distributed as xd

    mesh = xd.Mesh((2,), ("data",))
    x = xd.replicate(np.arange(8.0), mesh)
    i = xd.replicate(np.array([1, 9]), mesh) + 0  # (pending: its values are known only in the run)
    y = xp.take(x, i)
    z = x * 2
    scalar = x[i[1]]
    errors = []
    try:
        xp.lazy_barrier()
    except IndexError as e:
        errors.append(str(e))
    for bad in (y, scalar):
        try:
            np.asarray(bad)
        except IndexError as e:
            errors.append(str(e))
    _result(errors=errors, z=np.asarray(z).tolist())


if __name__ == "__main__":
    globals()[sys.argv[1]]()
