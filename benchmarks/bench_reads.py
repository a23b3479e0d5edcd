"""Single operations and writes on large arrays, read at once: eager against lazy.

The day-one programs (bench_dayone.py) read small results; code written the NumPy way also
reads large ones at once (`numpy.asarray(a + 1.0)`, a DLPack export to SciPy) and writes an
element then reads one, at every step of a loop (`x[i] = x[i - 1] + 1.0; float(x[i])`). On
the lazy device each such read is a graph of one or two operations, interpreted; this
measures what it costs against the eager device, on arrays of `--n` float64 elements (10^6 by
default), each case on fresh arrays, best of `--repeat` timings of `--number` calls.

    python benchmarks/bench_reads.py [--n 1000000] [--repeat 5] [--number 10] [--elements 10000]

Each line reads `case  eager_ms  lazy_ms  lazy/eager` (labels without digits: the cases are
`write x[i], read x[j]` for `x[0] = 1.0; float(x[1])`, `x[i] = x[i - one] + c, read` for
`x[5] = x[4] + 1.0; float(x[5])`, ...), which benchmarks/ab.py compares across checkouts
(`label  number ...`). Nothing is asserted: the figures are in benchmarks/README.md.

A second table reads an array of `--elements` float64 elements one element at a time from
Python (`for v in x`, Python's `max(x)` and `sum(x)`, `float(x[i])` in a loop; SciPy calls
`max()` on arrays), in microseconds an element, best of `--repeat` calls:
`case  eager_us  lazy_us  lazy/eager`. "of a pending x" cases iterate `x * 1.0`, not yet computed
on the lazy device.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np


def cases(xp: Any, a: Any, b: Any, m: Any) -> dict[str, Callable[[], object]]:
    """The measured calls on arrays of one device (`a`, `b`: 1-D; `m`: 2-D), fresh per case."""

    def write_read(x: Any) -> float:
        x[0] = 1.0
        return float(x[1])

    def recurrence(x: Any) -> float:
        x[5] = x[4] + 1.0
        return float(x[5])

    def slice_update(x: Any) -> float:
        x[:10] += 1.0
        return float(x[0])

    return {
        "asarray of a + c": lambda: np.asarray(a + 1.0),
        "asarray of exp(a)": lambda: np.asarray(xp.exp(a)),
        "asarray of astype(a, single)": lambda: np.asarray(xp.astype(a, xp.float32)),
        "from_dlpack of a * c": lambda: np.from_dlpack(a * 2.0),
        "asarray of sqrt(abs(a))": lambda: np.asarray(xp.sqrt(xp.abs(a))),
        "asarray of sum(m, axis=first)": lambda: np.asarray(xp.sum(m, axis=0)),
        "float of sum(a)": lambda: float(xp.sum(a)),
        "write x[i], read x[j]": lambda: write_read(b),
        "x[i] = x[i - one] + c, read": lambda: recurrence(b),
        "x[:k] += c, read": lambda: slice_update(b),
    }


def element_cases(xp: Any, e: Any) -> dict[str, Callable[[], object]]:
    """Python code reading the 1-D array `e` element by element (the second table)."""
    n = e.shape[0]
    return {
        "for v in x": lambda: [v for v in e],
        "float of v for v in x": lambda: [float(v) for v in e],
        "max of x": lambda: max(e),
        "sum of x": lambda: sum(e),
        "float of x[i] loop": lambda: [float(e[i]) for i in range(n)],
        "max of a pending x": lambda: max(e * 1.0),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=10)
    ap.add_argument("--elements", type=int, default=10_000)
    args = ap.parse_args(argv)
    import x10array as xp

    rng = np.random.default_rng(0)
    host = {"a": rng.standard_normal(args.n), "b": rng.standard_normal(args.n)}
    host["m"] = rng.standard_normal((1000, max(args.n // 1000, 1)))
    results: dict[str, dict[str, float]] = {}
    for backend in ("eager", "xla"):
        dev = xp.Device("cpu", 0, backend)
        names = list(cases(xp, *[xp.asarray(host[k], device=dev) for k in "abm"]))
        for name in names:
            fresh = [xp.asarray(host[k], device=dev, copy=True) for k in "abm"]
            fn = cases(xp, *fresh)[name]
            fn()  # (the first call: probes, shape rules)
            best = min(timeit.repeat(fn, number=args.number, repeat=args.repeat)) / args.number
            results.setdefault(name, {})[backend] = best * 1e3
    per_element: dict[str, dict[str, float]] = {}
    small = rng.standard_normal(args.elements)
    for backend in ("eager", "xla"):
        dev = xp.Device("cpu", 0, backend)
        for name in element_cases(xp, xp.asarray(small, device=dev)):
            fn = element_cases(xp, xp.asarray(small, device=dev, copy=True))[name]
            fn()
            best = min(timeit.repeat(fn, number=1, repeat=args.repeat))
            per_element.setdefault(name, {})[backend] = best / args.elements * 1e6
    print(f"n = {args.n}, best of {args.repeat} x {args.number} calls, ms a call")
    print(f"{'case':<34} {'eager ms':>9} {'lazy ms':>9} {'lazy/eager':>11}")
    for name, r in results.items():
        print(f"{name:<34} {r['eager']:>9.3f} {r['xla']:>9.3f} {r['xla'] / r['eager']:>11.2f}")
    print(f"\nelement by element, {args.elements} elements, best of {args.repeat} calls, us an element")
    print(f"{'case':<34} {'eager us':>9} {'lazy us':>9} {'lazy/eager':>11}")
    for name, r in per_element.items():
        print(f"{name:<34} {r['eager']:>9.3f} {r['xla']:>9.3f} {r['xla'] / r['eager']:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
