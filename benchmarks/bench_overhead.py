"""Per-operation overhead on small arrays: NumPy, array-api-strict and x10array (eager CPU).

Each operation runs on a 100-element float64 array, where the cost is the library's own
Python overhead rather than arithmetic. All three libraries are measured in the same process
and run, with `timeit`, keeping the best of several repeats (the least disturbed by other
load on the machine).

    python benchmarks/bench_overhead.py [--repeat 7] [--number 20000] [--check]

`--check` exits non-zero unless x10array's `add` meets the targets: at most 3 us per call
and at least 2.5x faster than array-api-strict.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable

import numpy as np

TARGET_ADD_US = 3.0
TARGET_SPEEDUP_VS_STRICT = 2.5


def operations(ns: object) -> dict[str, Callable[[], object]]:
    """The measured operations, written once against a namespace."""
    x = ns.asarray(np.linspace(0.0, 1.0, 100))
    y = ns.asarray(np.linspace(1.0, 2.0, 100))
    add, exp, sum_ = ns.add, ns.exp, ns.sum

    def setitem() -> None:
        x[10] = 1.0

    return {
        "add": lambda: add(x, y),
        "exp": lambda: exp(x),
        "sum": lambda: sum_(x),
        "getitem x[10]": lambda: x[10],
        "setitem x[10]=1.0": setitem,
    }


def best_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()  # warm up (imports, caches)
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--check", action="store_true", help="fail unless the add targets are met")
    args = parser.parse_args(argv)

    import array_api_strict

    import x10array

    libraries = {"numpy": np, "array-api-strict": array_api_strict, "x10array": x10array}
    results: dict[str, dict[str, float]] = {}
    for label, ns in libraries.items():
        for op, fn in operations(ns).items():
            results.setdefault(op, {})[label] = best_us(fn, args.number, args.repeat)

    header = f"{'operation':<20}{'numpy us':>10}{'strict us':>11}{'x10array us':>13}{'x10/numpy':>11}{'strict/x10':>12}"
    print(f"Per-call time, 100-element float64, best of {args.repeat} x {args.number} calls")
    print(header)
    print("-" * len(header))
    for op, row in results.items():
        n, s, x = row["numpy"], row["array-api-strict"], row["x10array"]
        print(f"{op:<20}{n:>10.2f}{s:>11.2f}{x:>13.2f}{x / n:>10.1f}x{s / x:>11.1f}x")

    add = results["add"]
    speedup = add["array-api-strict"] / add["x10array"]
    ok = add["x10array"] <= TARGET_ADD_US and speedup >= TARGET_SPEEDUP_VS_STRICT
    print(
        f"\ntarget: x10array add <= {TARGET_ADD_US} us and >= {TARGET_SPEEDUP_VS_STRICT}x faster than"
        f" array-api-strict: {add['x10array']:.2f} us, {speedup:.1f}x -> {'met' if ok else 'NOT met'}"
    )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
