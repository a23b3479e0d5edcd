"""Timing helpers shared by the benchmarks (run as scripts: this folder is on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def in_a_loop(step: Callable[[bool], Any], steps: int, warmup: int = 5) -> float:
    """Seconds per step of `steps` steps in a row, waiting only at the last one (`step(wait)`):
    a training loop, where the host records or dispatches step n+1 while the device runs
    step n. Best of three loops."""
    for _ in range(warmup):
        step(True)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(i == steps - 1)
        best = min(best, (time.perf_counter() - start) / steps)
    return best
