"""How a process of a multi-process run ends when something fails.

jax ends a process that joined a run with `jax.distributed.shutdown()` at exit (an atexit
handler): a barrier that waits for every other process, up to 300 s, then aborts. A process
that failed with an exception (its peer blocked in a collective that will never complete)
would sit there, the launcher waiting for an exit that never comes. So, for a process that
joined a run through `initialize()`:

- an uncaught exception ends the process at once after its traceback (exit status 1; 130
  for KeyboardInterrupt), without jax's barrier, and so does `sys.exit(status)` with a
  failing status (recorded by a wrapper of `sys.exit`: atexit handlers cannot see it): the
  launcher sees the failure and stops the others; on a cluster the others notice the missing
  process by the heartbeat timeout;
- jax's heartbeat timeout (a process that stops answering is declared dead and every other
  process aborts) is X10ARRAY_DISTRIBUTED_TIMEOUT, at least MIN_HEARTBEAT s (jax's 100 s
  otherwise);
- jax's preemption service, which catches SIGTERM (so that a launcher or `timeout` could
  not stop the process), is off unless JAX_ENABLE_PREEMPTION_SERVICE asks for it;
- a process started by `python -m x10array.distributed.launch` ends itself when the
  launcher is gone (killed with SIGKILL, say), which would otherwise leave it running.

The namespace layer: it uses `_core` only.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
import threading
import time
from typing import Any, NoReturn

from .._core import settings

MIN_HEARTBEAT = 10  # s: shorter ones risk declaring a loaded but healthy process dead
_installed: list[bool] = []


def heartbeat_timeout() -> int:
    """jax's heartbeat timeout for this run, in whole seconds."""
    timeout = settings.get("X10ARRAY_DISTRIBUTED_TIMEOUT")
    if not math.isfinite(timeout):
        return 100  # (jax's default)
    return max(MIN_HEARTBEAT, math.ceil(timeout))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # (a closed or broken stream: nothing more to say)
            pass


class _Exit:
    status: int | None = None  # a failing sys.exit(status)'s status (what atexit cannot see)


def _recording_exit(exit: Any) -> Any:
    def recorded(status: object = None) -> NoReturn:
        # (in another thread SystemExit ends that thread only; a SystemExit caught by the
        # program still ends the process with this status when it exits: an accepted corner)
        if status is not None and status != 0 and threading.current_thread() is threading.main_thread():
            _Exit.status = status if isinstance(status, int) else 1
        exit(status)
        raise AssertionError  # (unreachable: exit raises SystemExit)

    recorded.__doc__ = exit.__doc__
    recorded.__wrapped__ = exit  # type: ignore[attr-defined]
    return recorded


def _at_exit() -> None:
    """Registered after jax's own atexit handler, so it runs first: after an uncaught
    exception (whose traceback is printed by now) or a failing sys.exit(), end the process
    without jax's barrier."""
    error = getattr(sys, "last_value", None)  # (set by the interpreter for an uncaught exception)
    if error is None and _Exit.status is None:
        return
    _flush()
    if error is not None:
        os._exit(130 if isinstance(error, KeyboardInterrupt) else 1)
    os._exit(_Exit.status & 0xFF or 1)  # type: ignore[operator]


def _watch_launcher(pid: int, index: int) -> None:
    while True:
        if os.getppid() != pid:
            try:  # (its output went to the launcher: the pipe may be broken)
                print(
                    f"x10array.distributed: the launcher (process {pid}) is gone; ending process {index}",
                    file=sys.stderr,
                    flush=True,
                )
            except Exception:
                pass
            os._exit(1)
        time.sleep(0.5)


def install(index: int) -> None:
    """After jax.distributed.initialize: the exit handler, and the launcher's watchdog when
    this process was started by the launcher."""
    if _installed:
        return
    _installed.append(True)
    atexit.register(_at_exit)
    sys.exit = _recording_exit(sys.exit)
    launcher = settings.get("X10ARRAY_LAUNCHER_PID")
    if not launcher:
        return
    if os.getppid() != launcher:  # (not its child: a copied environment; or the launcher died already)
        try:
            os.kill(launcher, 0)
        except ProcessLookupError:
            _watch_launcher(launcher, index)
        except OSError:
            pass
        return
    threading.Thread(target=_watch_launcher, args=(launcher, index), daemon=True, name="x10array-launcher").start()
