"""Helpers shared by the tests: comparing results with NumPy / array-api-strict; running the
code blocks of a docs page; running a benchmark script."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import x10array as xp

DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip

# (rtol, atol) per NumPy dtype kind/size for comparing floating-point results of two
# implementations that may round differently (e.g. NumPy vs XLA transcendental kernels).
TOLERANCE = {
    np.dtype("float32"): (2e-5, 1e-6),
    np.dtype("complex64"): (2e-5, 1e-6),
    np.dtype("float64"): (1e-11, 1e-13),
    np.dtype("complex128"): (1e-11, 1e-13),
}


# NumPy's from_dlpack imports its own arrays read-only before NumPy 2.2 (numpy/numpy#26902's
# fix): whether a write through `np.from_dlpack(x)` is possible at all is the consumer's
# choice, so the tests that write through a DLPack import ask NumPy first.
NUMPY_DLPACK_WRITES = bool(np.from_dlpack(np.zeros(1)).flags.writeable)


def forget_programs() -> None:
    """Empty the lazy backend's program cache and plans: later graphs are built afresh (a
    program keeps its compiled function, its XLA options' kind and its interpreter Schedule)."""
    from x10array._backends.lazy.runtime import RUNTIME

    RUNTIME.programs.clear()
    RUNTIME.plans.clear()


def host(x: Any) -> np.ndarray:
    """A NumPy copy of an array of any namespace (x10array, array-api-strict, NumPy)."""
    if hasattr(x, "_array") and not isinstance(x, np.ndarray):  # array-api-strict
        return np.array(x._array, copy=True)
    return np.array(x, copy=True)


def dtype_name(x: Any) -> str:
    d = x.dtype
    return getattr(d, "name", None) or str(d).rsplit(".", 1)[-1]


def assert_values(actual: np.ndarray, expected: np.ndarray, *, scale: float = 1.0, what: str = "") -> None:
    """Equal shapes; equal values (floats within tolerance, NaN where NaN, same inf signs)."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind in "fc" and expected.dtype.kind in "fc":
        rtol, atol = TOLERANCE.get(expected.dtype, (1e-11, 1e-13))
        np.testing.assert_allclose(actual, expected, rtol=rtol * scale, atol=atol * scale, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what, strict=False)


def assert_bitwise_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()


def to_x10(a: np.ndarray, device: Any = None) -> xp.Array:
    return xp.asarray(a, device=device)


def numbers_close(got: str, expected: str) -> bool:
    """Equal text, except numbers, which may differ in their last printed digit."""
    number = r"[-+]?\d+\.?\d*(?:e[-+]?\d+)?"
    got_words, expected_words = got.split(), expected.split()
    if len(got_words) != len(expected_words):
        return False
    for a, b in zip(got_words, expected_words):
        if a == b:
            continue
        pa, pb = re.fullmatch(r"(\[*)(" + number + r")(\]*)", a), re.fullmatch(r"(\[*)(" + number + r")(\]*)", b)
        if not (pa and pb and pa[1] == pb[1] and pa[3] == pb[3]):
            return False
        if not math.isclose(float(pa[2]), float(pb[2]), rel_tol=2e-6, abs_tol=2e-6):
            return False
    return True


def check_doc_page(page: Path, min_blocks: int = 1, env: dict[str, str] | None = None) -> None:
    """Each ```python block of `page` runs (in order, in one fresh process, warnings as
    errors, no X10ARRAY_* variable set) and prints the ```text block that follows it
    (nothing, where none follows)."""
    blocks = re.findall(r"```(\w+)\n(.*?)```", page.read_text(), re.S)
    pairs = []
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            follows = blocks[i + 1] if i + 1 < len(blocks) else ("", "")
            pairs.append((body, follows[1] if follows[0] == "text" else ""))
    assert len(pairs) >= min_blocks
    script = "".join(f"print('<<<block {i}>>>')\n{code}\n" for i, (code, _) in enumerate(pairs))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")} | (env or {})
    environ.setdefault("X10ARRAY_COMPILE_CACHE_DIR", "0")  # (never the user's ~/.cache: see conftest.py)
    root = Path(__file__).resolve().parents[1]
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True, text=True, timeout=300, env=environ, cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outputs = re.split(r"<<<block \d+>>>\n", result.stdout)[1:]
    assert len(outputs) == len(pairs)
    for (code, expected), got in zip(pairs, outputs):
        assert numbers_close(got, expected), f"the block\n{code}\nprinted\n{got}\nwhere the page shows\n{expected}"


ROOT = Path(__file__).resolve().parent.parent


def run_benchmark(script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python benchmarks/<script> <args>` in a subprocess, with this checkout first on the path
    (and `env` added to the environment); asserts it exits 0, showing the ends of its output."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
