"""Signals held off where an exception they raise would leave x10array's state half-changed.

Python runs a signal's handler (KeyboardInterrupt for Ctrl-C) at any bytecode of the main
thread, also between a lock's acquisition and the `try` that releases it, or halfway through an
import. The places of x10array that cannot be left half-done that way run with the signals
deferred (`deferred_signals`, `held`): the lazy device's hand-over of a program's results once
it consumed its donated inputs, the interpreter's wait for its worker threads (a lock left held
there blocks a worker for good, and the next large run waits on it), and the first import of
jax (an import stopped halfway leaves jax's submodules behind without their package, so that
every later `import jax` fails). A signal meanwhile is handled once they are done.
"""

from __future__ import annotations

import contextlib
import signal as _signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

# the signals whose handlers may be Python functions (SIGKILL and SIGSTOP have none)
_SIGNALS = tuple(s for s in _signal.valid_signals() if s not in (_signal.SIGKILL, _signal.SIGSTOP))
_MAIN_THREAD = threading.main_thread().ident


def _main_thread() -> bool:
    return threading.get_ident() == _MAIN_THREAD


def deferred_signals() -> _Deferred | None:
    """Defer the signals that have a Python handler until the result's `close()`: each handler
    is swapped for one that notes the signal, and `close()` puts the handlers back, then runs
    each noted signal's handler (which may raise: KeyboardInterrupt for Ctrl-C, a timeout's
    exception). For the moments when Python code runs between a program consuming its donated
    inputs and its outputs reaching their arrays, where an exception would lose them. None
    outside the main thread (only the main thread runs Python signal handlers: a signal cannot
    raise in another) or when no handler is a Python function."""
    if not _main_thread():
        return None
    handlers: list[tuple[int, Any]] = [(s, h) for s in _SIGNALS if callable(h := _signal.getsignal(s))]
    return _Deferred(handlers) if handlers else None


class _Deferred:
    __slots__ = ("handlers", "received")

    def __init__(self, handlers: list[tuple[int, Any]]):
        self.handlers = handlers
        self.received: list[tuple[int, Any]] = []
        note = self.received.append
        for s, _ in handlers:
            _signal.signal(s, lambda signum, frame: note((signum, frame)))

    def close(self) -> None:
        for s, h in self.handlers:
            _signal.signal(s, h)
        handlers = dict(self.handlers)
        for signum, frame in self.received:  # (a handler that raises ends the loop, as Python's would)
            handlers[signum](signum, frame)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block with the signals deferred (`deferred_signals`): one received meanwhile is
    handled when the block ends (KeyboardInterrupt raised then, for Ctrl-C)."""
    deferred = deferred_signals()
    try:
        yield
    finally:
        if deferred is not None:
            deferred.close()


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
