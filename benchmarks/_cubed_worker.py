"""bench_cubed.py's compile_function: x10array.cubed's, with each worker task's compile counts
appended to `$X10ARRAY_BENCH_LOG/worker-<pid>.jsonl` (imported by the workers, which find this
folder on PYTHONPATH)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import x10array as xp
import x10array.cubed as xc


class _Timed:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.inner = xc.compile_function(fn)

    def __call__(self, *args: Any) -> Any:
        before = xp.metrics()
        out = self.inner(*args)
        after = xp.metrics()
        record = {
            "compiles": after.compile_count - before.compile_count,
            "disk_loads": after.disk_cache_loads - before.disk_cache_loads,
            "compile_s": after.compile_seconds - before.compile_seconds,
        }
        path = os.path.join(os.environ["X10ARRAY_BENCH_LOG"], f"worker-{os.getpid()}.jsonl")
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
        return out


def timed_compile_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    return _Timed(fn)
