"""Run a script in several processes on this machine, as one multi-process x10array run:

    python -m x10array.distributed.launch -n 2 --local-devices 2 script.py [args...]

Starts `-n` copies of `script.py`, each told (through X10ARRAY_COORDINATOR,
X10ARRAY_NUM_PROCESSES, X10ARRAY_PROCESS_ID and JAX_NUM_CPU_DEVICES) how to join the run, which
the script does by calling `x10array.distributed.initialize()` first. Each line a process
prints is prefixed with its index. The launcher watches its processes: when one fails (exits
non-zero or is killed), it names it and its last error on stderr, stops the others (SIGTERM,
then SIGKILL) and exits with the failure's status (128 + the signal's number for a process
killed by a signal; 0 when all succeed). Ctrl-C, SIGTERM and SIGHUP stop every process too
(exit status 130, 143, 129). On a cluster, start the processes with the cluster's launcher
instead and pass initialize() the coordinator's address (see docs/distributed.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

# After a process fails, the others get GRACE seconds to end on their own (a process that
# raised the same error prints it), then SIGTERM, then after KILL_AFTER seconds more SIGKILL.
GRACE = 2.0
KILL_AFTER = 5.0
_STOP_SIGNALS = ("SIGTERM", "SIGHUP")


class _Stopped(Exception):
    """The launcher received SIGTERM or SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


class _Output:
    """One process's output, forwarded line by line with its index; remembers its last error
    (the last line of its last traceback) and its last line."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.tail: collections.deque[str] = collections.deque(maxlen=1)
        self.error = ""
        self._in_traceback = False

    def forward(self, stream: Any, out: Any) -> None:
        writing = True
        for line in iter(stream.readline, ""):
            if writing:
                try:
                    out.write(f"[{self.index}] {line}")
                    out.flush()
                except (OSError, ValueError):  # (the launcher's output is closed: read on, or the pipe fills)
                    writing = False
            text = line.rstrip("\n")
            if text.startswith("Traceback (most recent call last):"):
                self._in_traceback = True
            elif self._in_traceback and text and not text[0].isspace():
                self.error, self._in_traceback = text, False
            if text.strip():
                self.tail.append(text)

    def last_error(self) -> str:
        """Its last error, else its last line (labelled), else ""."""
        if self.error:
            return self.error
        return f"its last line: {self.tail[0]}" if self.tail else ""


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _status(code: int) -> int:
    """A process's exit status as a shell reports it (128 + n for a process killed by signal n)."""
    return 128 - code if code < 0 else code


def _stop(procs: list[subprocess.Popen[str]], kill_after: float = KILL_AFTER) -> list[int]:
    """SIGTERM every process still running, SIGKILL those still running `kill_after` seconds
    later; the indices of the processes it stopped."""
    running = [i for i, p in enumerate(procs) if p.poll() is None]
    for i in running:
        _signal(procs[i], signal.SIGTERM)
    deadline = time.monotonic() + kill_after
    while time.monotonic() < deadline and any(procs[i].poll() is None for i in running):
        time.sleep(0.05)
    for i in running:
        if procs[i].poll() is None:
            _signal(procs[i], signal.SIGKILL)
    for i in running:
        try:
            procs[i].wait(timeout=5)
        except subprocess.TimeoutExpired:  # (a process in uninterruptible sleep: leave it)
            pass
    return running


def _signal(proc: subprocess.Popen[str], signum: int) -> None:
    try:
        proc.send_signal(signum)
    except (ProcessLookupError, OSError):
        pass


def _on_stop_signals() -> dict[int, Any]:
    """Make SIGTERM and SIGHUP raise _Stopped in the launcher's main thread; the previous
    handlers (to restore)."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # (signal handlers can only be set there)

    def handler(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    for name in _STOP_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, handler)
    return previous


def launch(
    script: str, args: list[str], n: int, local_devices: int, port: int | None = None, *, grace: float = GRACE
) -> int:
    """Run `script` in `n` processes with `local_devices` CPU devices each; the exit status."""
    if n < 1:
        raise ValueError(f"launch: -n must be a positive number of processes, got {n}")
    if local_devices < 1:
        raise ValueError(f"launch: --local-devices must be positive, got {local_devices}")
    address = f"localhost:{port or _free_port()}"
    procs: list[subprocess.Popen[str]] = []
    outputs: list[_Output] = []
    threads = []
    previous = _on_stop_signals()
    status = 0
    try:
        for i in range(n):
            # the parent's environment (jax on the CPU unless JAX_PLATFORMS says otherwise), and how to join
            env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
            env.update(
                X10ARRAY_COORDINATOR=address,
                X10ARRAY_NUM_PROCESSES=str(n),
                X10ARRAY_PROCESS_ID=str(i),
                X10ARRAY_LAUNCHER_PID=str(os.getpid()),  # (a process ends itself if the launcher is gone)
                JAX_NUM_CPU_DEVICES=str(local_devices),
            )
            env.pop("XLA_FLAGS", None)  # (forced host devices would override the count per process)
            proc = subprocess.Popen(
                [sys.executable, script, *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",  # (a line that is not UTF-8 must not stop the forwarding: the pipe would fill)
            )
            procs.append(proc)
            output = _Output(i)
            outputs.append(output)
            t = threading.Thread(target=output.forward, args=(proc.stdout, sys.stdout), daemon=True)
            t.start()
            threads.append(t)
        status = _watch(procs, outputs, threads, grace)
    except (KeyboardInterrupt, _Stopped) as e:
        signum = e.signum if isinstance(e, _Stopped) else signal.SIGINT
        status = 128 + signum
        stopped = _stop(procs)
        names = ", ".join(str(i) for i in stopped) or "none"
        print(f"launch: {signal.Signals(signum).name} received: stopped processes {names}", file=sys.stderr)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    for t in threads:
        t.join(timeout=5)
    return status


def _watch(procs: list[subprocess.Popen[str]], outputs: list[_Output], threads: list[Any], grace: float) -> int:
    """Wait for every process; at the first failure, stop the others after `grace` seconds and
    report it. The run's exit status."""
    pending = set(range(len(procs)))
    failed: tuple[int, int] | None = None
    stop_at = 0.0
    stopped: list[int] = []
    while pending:
        for i in sorted(pending):
            code = procs[i].poll()
            if code is None:
                continue
            pending.discard(i)
            if code != 0 and failed is None:
                failed, stop_at = (i, code), time.monotonic() + grace
        if failed is not None and pending and time.monotonic() >= stop_at:
            stopped = _stop(procs)
            pending.clear()
        else:
            time.sleep(0.05)
    if failed is None:
        return 0
    index, code = failed
    threads[index].join(timeout=2)  # (its last lines: the error)
    error = outputs[index].last_error()
    report = f"launch: process {index} {_describe(code)}" + (f" ({error})" if error else "")
    if stopped:
        report += f"; stopped process{'es' if len(stopped) > 1 else ''} {', '.join(str(i) for i in stopped)}"
    print(report, file=sys.stderr, flush=True)
    return _status(code)


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
