"""Ctrl-C (SIGINT) held off where an interrupt would leave x10array's state half-changed.

Python raises KeyboardInterrupt at any bytecode of the main thread, also between a lock's
acquisition and the `try` that releases it, or halfway through an import. Two places of
x10array cannot be left half-done that way: the lazy interpreter's wait for its worker
threads (a lock left held there blocks a worker for good, and the next large run waits on
it), and the first import of jax (an import stopped halfway leaves jax's submodules behind
without their package, so that every later `import jax` fails). Both run under `held()`: an
interrupt meanwhile is raised once they are done.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block with SIGINT held: a Ctrl-C meanwhile is handed to the handler in place
    (KeyboardInterrupt by default) when the block ends, once. Only the main thread receives
    signals: elsewhere, or where the handler is not a Python function (SIG_IGN, SIG_DFL, one
    set from C), the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    caught: list[tuple[int, Any]] = []

    def hold(signum: int, frame: Any) -> None:
        caught.append((signum, frame))

    try:
        signal.signal(signal.SIGINT, hold)
    except ValueError:  # (not the main interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            previous(*caught[0])


def import_jax() -> Any:
    """The jax module, imported with Ctrl-C held (see `held`) the first time. Where an import
    of jax failed before (an error, an interrupt in a thread other than the main one, an
    import elsewhere), the submodules it left behind without their package are forgotten
    first, so that this import starts afresh rather than failing on them."""
    jax = sys.modules.get("jax")
    if jax is not None:
        return jax
    _forget_orphans()
    with held():
        import jax
    return jax


def _forget_orphans() -> None:
    """Remove from sys.modules the modules of jax and jaxlib whose package is not there: an
    import stopped halfway removes the module it was running, not the submodules that module
    had finished importing, which a later import of the package would not bind to it."""
    for name in list(sys.modules):
        if name.startswith(("jax.", "jaxlib.")):
            parts = name.split(".")
            if any(".".join(parts[:i]) not in sys.modules for i in range(1, len(parts))):
                sys.modules.pop(name, None)
