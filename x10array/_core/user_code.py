"""Which frame is the user's: the one rule every "at the user's line" message uses.

A frame is x10array's library code when it runs a file of the package (`x10array/`), except
its examples (`x10array/examples/`, scripts a user runs and edits: their lines are the user's),
or code x10array generates (the wrappers of `dispatch`, which run in globals without a module
name). Every other frame is the user's. The lazy backend's messages (the size guard's warning,
a compile's log line, a bounds error's "recorded at", a capture's reason) and the transfer
counters of `_core/transfers.py` (`debug.call_sites`, the transfer guard) name the innermost
frame of the user's.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

PACKAGE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep  # x10array/
EXAMPLES_DIR = PACKAGE_DIR + "examples" + os.sep


def is_library(frame: FrameType) -> bool:
    """Whether `frame` is x10array's library code, not the user's (see the module docstring)."""
    filename = frame.f_code.co_filename
    if filename.startswith(PACKAGE_DIR):
        return not filename.startswith(EXAMPLES_DIR)
    return "__name__" not in frame.f_globals


def user_line() -> str:
    """The file:line of the caller's innermost frame that is the user's (cheap: reads no
    source), "<unknown>" if none is."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and is_library(frame):
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def user_location() -> tuple[int, str, int]:
    """The caller's innermost frame that is the user's: (its `stacklevel` for `warnings.warn`
    called by the function that calls this one, its file, its line)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and is_library(frame):
        frame = frame.f_back
        level += 1
    if frame is None:
        return 1, "<unknown>", 0
    return level, frame.f_code.co_filename, frame.f_lineno
