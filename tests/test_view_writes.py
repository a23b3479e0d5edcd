"""Writes through views on the lazy device, with every graph compiled by XLA (issue 13, 1).

XLA (jax 0.10) aborts the process while compiling a reverse of a scatter that overwrites a
whole array (see the comment above `_jax_setitem` in x10array/_indexing.py), which ordinary
indexing used to reach: `r = y[::-1]; r[...] = 5.0; y[0] = 1.0`. Each test runs in a
subprocess with X10ARRAY_COMPILE_THRESHOLD=1, so that an abort is a failed test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "X10ARRAY_COMPILE_THRESHOLD": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **(env or {}),
    }
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _report(result: subprocess.CompletedProcess[str]) -> str:
    out, err = result.stdout[-3000:], result.stderr[-3000:]
    return f"exit status {result.returncode}\nstdout (tail):\n{out}\nstderr (tail):\n{err}"


def test_write_through_a_reversed_view_compiles_and_is_right():
    """The issue's reproduction: step 1 compiled and the process died with SIGABRT."""
    code = textwrap.dedent(
        """
        import numpy as np, x10array as xp
        lazy = xp.Device.default_xla
        for step in range(3):
            y = xp.asarray(np.arange(5.0), device=lazy)
            r = y[::-1]; r[...] = 5.0; y[0] = 1.0
            xp.lazy_barrier()
            print(step, np.asarray(y).tolist(), np.asarray(r).tolist())
        y = xp.asarray(np.arange(5.0), device=lazy)
        y[...] = 5.0
        print("flip", np.asarray(xp.flip(y)).tolist())
        """
    )
    result = _run(["-c", code], timeout=300)
    assert result.returncode == 0, _report(result)
    lines = result.stdout.split("\n")
    for step in range(3):
        assert lines[step] == f"{step} [1.0, 5.0, 5.0, 5.0, 5.0] [5.0, 5.0, 5.0, 5.0, 1.0]"
    assert lines[3] == "flip [5.0, 5.0, 5.0, 5.0, 5.0]"


def _fuzz(seed: int, cases: int, ops: int, timeout: float) -> None:
    result = _run(
        [str(ROOT / "tests" / "_view_writes.py"), f"--seed={seed}", f"--cases={cases}", f"--ops={ops}"], timeout
    )
    assert result.returncode == 0, _report(result)
    last = result.stdout.strip().splitlines()[-1].split()
    assert last[:2] == ["ok", str(cases)] and int(last[2]) >= cases, result.stdout[-2000:]


def test_random_view_writes_compiled_match_numpy():
    """Random views (negative steps, None, ..., integers and slices, views of views) and
    writes through them, compiled, compared with NumPy after every barrier. (Seed 0 aborted
    the process at its 7th program before the fix.)"""
    _fuzz(seed=0, cases=12, ops=6, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_view_writes_compiled_match_numpy_long(seed):
    _fuzz(seed=seed, cases=150, ops=8, timeout=1800)


@pytest.mark.parametrize("threshold", ["1", "1000000"], ids=["compiled", "interpreted"])
@pytest.mark.parametrize("device", ["cpu:0:eager", "cpu:0:eager+xla-kernels", "xla"])
def test_numpy_writes_through_asarray_of_views_match_numpy(device, threshold):
    """`numpy.asarray(view)` is a NumPy view of the base's buffer: a write into it is seen by the
    base, by every view (made before or after) and by the next recorded operation, bit for bit,
    on both devices and tiers; NumPy's read-only views give read-only buffers (issue 24, item 8:
    SciPy's ndimage TestThreading writes into `np.asarray(out[i, ...])`)."""
    kernels = "numpy"
    if device.endswith("+xla-kernels"):
        device, kernels = device.removesuffix("+xla-kernels"), "xla"
    env = {
        "X10ARRAY_DEFAULT_DEVICE": device,
        "X10ARRAY_COMPILE_THRESHOLD": threshold,
        "X10ARRAY_EAGER_CPU_KERNELS": kernels,
    }
    result = _run([str(ROOT / "tests" / "_host_writes.py")], timeout=600, env=env)
    assert result.returncode == 0, _report(result)
    last = result.stdout.strip().splitlines()[-1].split()
    assert last[0] == "ok" and int(last[1]) > 300, result.stdout[-2000:]
