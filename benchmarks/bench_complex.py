"""Interpreted complex multiply and divide on the lazy device against NumPy's own loops.

    python benchmarks/bench_complex.py [--repeat 7]

Every graph interpreted (`compile_threshold(None)`): `a * b` and `a / b` of 1e5 and 1e6
random complex64 and complex128 values, one graph each, best of `--repeat` (recording, the
interpreter's subnormal scans and the kernel), and NumPy's `a * b`, `a / b` in the same run.
The lazy tiers compute a complex product and quotient from real steps (the same bits as the
compiled program, see _api/elementwise.py); the interpreter's forms of them are vectorised
NumPy (_numpy_complex_product, _numpy_complex_quotient), or NumPy's own loop where a probe
shows it takes those steps.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import x10array as xp  # noqa: E402
from x10array._backends import lazy as _lazy  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    lazy = xp.Device("cpu", 0, "xla")
    rng = np.random.default_rng(0)
    print("| op | dtype | n | lazy interpreted (ms) | NumPy (ms) | ratio |")
    print("|---|---|---|---|---|---|")
    with _lazy.compile_threshold(None):
        for n in (100_000, 1_000_000):
            for dtype in ("complex64", "complex128"):
                a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
                b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
                x, y = xp.asarray(a, device=lazy), xp.asarray(b, device=lazy)
                for op, lazy_fn, numpy_fn in (
                    ("a * b", lambda x=x, y=y: np.asarray(x * y), lambda a=a, b=b: a * b),
                    ("a / b", lambda x=x, y=y: np.asarray(x / y), lambda a=a, b=b: a / b),
                ):
                    ours, theirs = best(lazy_fn, args.repeat), best(numpy_fn, args.repeat)
                    print(f"| {op} | {dtype} | {n} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.1f} |")


if __name__ == "__main__":
    main()
