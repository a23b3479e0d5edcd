"""Implicit synchronisation: the transfer guard and the call sites of host reads.

A lazy array's value reaches the host in two ways, and the lazy backend reports both here,
from the one place each happens (`note`):

- a *host read*: the backend's `read` or `buffer` (`bool()`, `int()`, `float()`,
  `complex()`, `__index__`, `__array__`/`numpy.asarray`, `__dlpack__`, `repr()`/`str()`,
  and `x.to_device(...)`, which is explicit);
- a *graph break*: an operation whose result shape depends on values (`nonzero`,
  `unique_*`, boolean-mask indexing, `repeat` by an array) reads its operands to the host.

Each is counted by call site, the line of the user's code that caused it (the innermost frame
outside x10array's library code, by the rule of `user_code.py`: `x10array/examples` counts as
user code): a dict increment keyed by (kind, file, line), listed by `metrics_report()`. Then the guard (after
`jax.transfer_guard`) applies: `transfer_guard(mode)`, thread-local and nestable, else
X10ARRAY_TRANSFER_GUARD:

- "allow" (default): nothing more;
- "log": each distinct call site of an implicit read is logged once (logger "x10array",
  WARNING), naming the operation and the line;
- "disallow": an implicit read raises `TransferGuardError` (a RuntimeError) naming the
  operation and the line, before anything is computed.

Explicit reads stay allowed in every mode: `x.to_device(device)`, `asarray(x, device=...)`
(which calls it), `from_dlpack(x)` and `lazy_barrier()` (which reads nothing to the host).
Eager arrays are never guarded: their values are computed already, and reading them waits for
no pending work.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from types import CodeType, FrameType
from typing import Any

from . import settings
from .user_code import is_library

__all__ = ["MODES", "TransferGuardError", "transfer_guard", "mode", "note", "sites", "reset"]

MODES = ("allow", "log", "disallow")


class TransferGuardError(RuntimeError):
    """An implicit read of a lazy array's value under `transfer_guard("disallow")`."""


class _Local(threading.local):
    def __init__(self) -> None:
        self.modes: list[str] = []


_LOCAL = _Local()


def transfer_guard(mode: str) -> contextlib.AbstractContextManager[None]:
    """Inside the `with` block, implicit reads of lazy arrays' values (`bool()`, `float()`,
    `numpy.asarray`, printing, graph breaks, ...) are allowed ("allow"), logged once per call
    site ("log") or raise `TransferGuardError` ("disallow"). Thread-local and nestable: the
    innermost block of the current thread wins; outside any block, X10ARRAY_TRANSFER_GUARD
    decides. Explicit reads (`x.to_device(device)`, `lazy_barrier()`) are always allowed, and
    eager arrays are never guarded.

    An implicit read waits for the pending graph and breaks it in two; in a training loop it
    is the usual cause of a slow step. "disallow" finds the line that does it::

        import x10array as xp

        w = xp.asarray([0.5, -1.0, 2.0], device=xp.Device.default_xla)
        with xp.transfer_guard("disallow"):
            loss = xp.sum(w * w)
            try:
                float(loss)                     # an implicit read: refused here
            except xp.TransferGuardError as error:
                print(type(error).__name__)     # TransferGuardError
            host = loss.to_device(xp.Device("cpu", 0, "eager"))   # explicit: allowed
        print(float(loss))                      # 5.25 (outside the block: allowed)

    The guide: :doc:`/troubleshooting` ("Finding what forces materialization")."""
    if type(mode) is not str:
        raise TypeError(f"transfer_guard: mode must be a str ({', '.join(map(repr, MODES))}), got {mode!r}")
    if mode not in MODES:
        raise ValueError(f"transfer_guard: mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return _Guard(mode)


class _Guard:
    """The context manager of `transfer_guard(mode)` (re-entrant: each entry pushes its mode)."""

    __slots__ = ("mode",)

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        _LOCAL.modes.append(self.mode)

    def __exit__(self, *exc: object) -> None:
        _LOCAL.modes.pop()


def mode() -> str:
    """The guard's mode in the current thread."""
    modes = _LOCAL.modes
    return modes[-1] if modes else settings.get("X10ARRAY_TRANSFER_GUARD")


# What reads a value, by the name of the x10array function the read entered through (the
# outermost one on the stack: `from_dlpack` calls `__dlpack__`): how to name it to the user,
# and whether it is explicit.
_ENTRIES = {
    "__bool__": ("bool()", False),
    "__int__": ("int()", False),
    "__float__": ("float()", False),
    "__complex__": ("complex()", False),
    "__index__": ("__index__ (an array used as a Python int)", False),
    "__array__": ("__array__ (numpy.asarray)", False),
    "__dlpack__": ("__dlpack__", False),
    "__repr__": ("repr()", False),
    "__str__": ("str() (printing)", False),
    "to_device": ("to_device", True),
    "from_dlpack": ("from_dlpack", True),  # (of a lazy array: an explicit copy, through __dlpack__)
}
_SPECIAL = {"__getitem__": "x[...]", "getitem": "x[...]", "__setitem__": "x[...] = value", "setitem": "x[...] = value"}

# the code objects of x10array's library frames met so far (its functions, the wrappers it
# generates): a bounded set, since user code is never added
_LIBRARY_CODES: set[CodeType] = set()

# (kind, file, line) -> [count, operation]; kind is "read" or "graph break"
_SITES: dict[tuple[str, str, int], list[Any]] = {}
_LOGGED: set[tuple[str, str, int]] = set()
_LOG = logging.getLogger("x10array")


def note(kind: str, operation: str | None = None) -> None:
    """A lazy array's value is about to reach the host: count it at its call site and apply
    the guard (TransferGuardError under "disallow", before anything is computed). `kind`:
    "read" (the backend's read/buffer: the operation is found on the stack) or "graph break"
    (`operation` names the primitive). Called by the lazy backend, once per read."""
    frame: FrameType | None = sys._getframe(1)
    entry = None
    outer = None
    library = _LIBRARY_CODES
    while frame is not None:
        code = frame.f_code
        if code not in library:  # (a set lookup per frame once its code is known)
            if not is_library(frame):  # (the one rule: _core/user_code.py)
                break
            library.add(code)
        name = code.co_name
        if name in _ENTRIES:  # the outermost one: the call the user made
            entry = name
        outer = name
        frame = frame.f_back
    if frame is None:
        filename, lineno = "<unknown>", 0
    else:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
    if entry is not None:
        what, explicit = _ENTRIES[entry]
    else:
        explicit = False
        what = operation or (_SPECIAL.get(outer, outer) if outer else "a read")
        if kind == "graph break" and outer is not None and outer != operation:
            what = f"{_SPECIAL.get(outer, outer)} ({operation})"
    key = (kind, filename, lineno)
    if not explicit:
        guard = _LOCAL.modes[-1] if _LOCAL.modes else settings.get("X10ARRAY_TRANSFER_GUARD")
        if guard != "allow":
            _guard(guard, kind, what, key)
    site = _SITES.get(key)
    if site is None:
        _SITES[key] = [1, what + " (explicit)" if explicit else what]
    else:
        site[0] += 1


def _guard(guard: str, kind: str, what: str, key: tuple[str, str, int]) -> None:
    """Log (once per call site) or refuse an implicit read."""
    _, filename, lineno = key
    where = f"{filename}:{lineno}"
    if kind == "graph break":
        text = f"{what}: a data-dependent shape reads a lazy array's values to the host (a graph break) at {where}"
    else:
        text = f"{what}: an implicit read of a lazy array's value at {where}"
    if guard == "disallow":
        raise TransferGuardError(
            f'{text}, disallowed by transfer_guard("disallow"); read it explicitly with'
            ' x.to_device(eager_device), or allow it in a transfer_guard("allow") block'
        )
    if key not in _LOGGED:
        _LOGGED.add(key)
        _LOG.warning("x10array: %s (logged once per call site)", text)


def sites(kind: str | None = None) -> list[tuple[str, str, int, str, int]]:
    """The call sites counted so far, most frequent first: (kind, file, line, operation,
    count)."""
    rows = [(k, f, n, site[1], site[0]) for (k, f, n), site in list(_SITES.items())]
    rows = [r for r in rows if kind is None or r[0] == kind]
    rows.sort(key=lambda r: (-r[4], r[0], r[1], r[2]))
    return rows


def reset() -> None:
    """Forget the call sites counted and logged (`reset_metrics()`)."""
    _SITES.clear()
    _LOGGED.clear()
