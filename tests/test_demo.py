"""The README's quickstart: the demo runs, without warnings, and shows both halves."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    env["X10ARRAY_COMPILE_CACHE_DIR"] = "0"  # (never the user's ~/.cache: see conftest.py)
    result = subprocess.run(
        [sys.executable, "-W", "error", "-m", "x10array.examples.demo"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "2025.12" in out
    assert "Device(kind=CPU, ordinal=0, backend=EAGER)" in out
    assert "backend=XLA" in out and "XLA compiles:" in out
