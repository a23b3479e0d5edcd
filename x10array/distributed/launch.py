"""Run a script in several processes on this machine, as one multi-process x10array run:

    python -m x10array.distributed.launch -n 2 --local-devices 2 script.py [args...]

Starts `-n` copies of `script.py`, each told (through X10ARRAY_COORDINATOR,
X10ARRAY_NUM_PROCESSES, X10ARRAY_PROCESS_ID and JAX_NUM_CPU_DEVICES) how to join the run, which
the script does by calling `x10array.distributed.initialize()` first. Each line a process
prints is prefixed with its index. When one process fails the others are stopped; the exit
status is the first failure's (0 when all succeed). On a cluster, start the processes with the
cluster's launcher instead and pass initialize() the coordinator's address (see
docs/distributed.md).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


def _forward(index: int, stream: object, out: object) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        out.write(f"[{index}] {line}")  # type: ignore[attr-defined]
        out.flush()  # type: ignore[attr-defined]


def launch(script: str, args: list[str], n: int, local_devices: int, port: int | None = None) -> int:
    """Run `script` in `n` processes with `local_devices` CPU devices each; the exit status."""
    if n < 1:
        raise ValueError(f"launch: -n must be a positive number of processes, got {n}")
    if local_devices < 1:
        raise ValueError(f"launch: --local-devices must be positive, got {local_devices}")
    address = f"localhost:{port or _free_port()}"
    procs = []
    threads = []
    for i in range(n):
        # the parent's environment (jax on the CPU unless JAX_PLATFORMS says otherwise), and how to join
        env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
        env.update(
            X10ARRAY_COORDINATOR=address,
            X10ARRAY_NUM_PROCESSES=str(n),
            X10ARRAY_PROCESS_ID=str(i),
            JAX_NUM_CPU_DEVICES=str(local_devices),
        )
        env.pop("XLA_FLAGS", None)  # (forced host devices would override the count per process)
        proc = subprocess.Popen(
            [sys.executable, script, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        procs.append(proc)
        t = threading.Thread(target=_forward, args=(i, proc.stdout, sys.stdout), daemon=True)
        t.start()
        threads.append(t)
    status = 0
    try:
        pending = set(range(n))
        while pending:
            for i in sorted(pending):
                code = procs[i].poll()
                if code is None:
                    continue
                pending.discard(i)
                if code != 0 and status == 0:
                    status = code
                    _stop_later(procs, pending)
            time.sleep(0.05)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        status = 130
    for t in threads:
        t.join(timeout=5)
    return status


def _stop_later(procs: list[subprocess.Popen[str]], pending: set[int], grace: float = 10.0) -> None:
    """A process failed: give the others `grace` seconds to fail on their own (their errors
    are the informative ones), then stop them."""

    def stop() -> None:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(procs[i].poll() is None for i in pending):
            time.sleep(0.1)
        for i in list(pending):
            if procs[i].poll() is None:
                procs[i].terminate()

    threading.Thread(target=stop, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m x10array.distributed.launch", description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--processes", type=int, default=2, help="how many processes (default 2)")
    parser.add_argument("--local-devices", type=int, default=1, help="CPU devices per process (default 1)")
    parser.add_argument("--port", type=int, default=None, help="the coordinator's port (default: a free one)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    return launch(ns.script, ns.args, ns.processes, ns.local_devices, ns.port)


if __name__ == "__main__":
    sys.exit(main())
