"""Per-operation overhead on small arrays: NumPy, array-api-strict and x10array (eager CPU).

Each operation runs on a 100-element float64 array, where the cost is the library's own
Python overhead rather than arithmetic. All three libraries are measured in the same process
and run, with `timeit`, keeping the best of several repeats (the least disturbed by other
load on the machine).

    python benchmarks/bench_overhead.py [--repeat 7] [--number 20000] [--check] [--xla]

`--check` exits non-zero unless x10array's `add` meets the targets: at most 3 us per call
and at least 2.5x faster than array-api-strict.

`--xla` adds the eager device on XLA kernels (`set_cpu_kernels("xla")`, what accelerators
run) against jax's own op-by-op dispatch (`jax.numpy` outside `jit`), in the same run: the
first call on each of `--shapes` new shapes (median; XLA compiles a program per new shape
unless the call avoids it) and the steady state on one shape (best of repeats).
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

TARGET_ADD_US = 3.0
TARGET_SPEEDUP_VS_STRICT = 2.5


def operations(ns: object) -> dict[str, Callable[[], object]]:
    """The measured operations, written once against a namespace."""
    x = ns.asarray(np.linspace(0.0, 1.0, 100))
    y = ns.asarray(np.linspace(1.0, 2.0, 100))
    add, exp, sum_ = ns.add, ns.exp, ns.sum

    u = ns.asarray(np.zeros((16, 16)))
    v = ns.asarray(np.ones((14, 14)))

    def setitem() -> None:
        x[10] = 1.0

    def setitem_slices() -> None:  # the heat stencil's write (benchmarks/bench_dayone.py)
        u[1:-1, 1:-1] = v

    return {
        "add": lambda: add(x, y),
        "exp": lambda: exp(x),
        "sum": lambda: sum_(x),
        "getitem x[10]": lambda: x[10],
        "setitem x[10]=1.0": setitem,
        "getitem u[1:-1, 2:]": lambda: u[1:-1, 2:],
        "setitem u[1:-1, 1:-1]=v": setitem_slices,
        "multiply 4.0 * x": lambda: 4.0 * x,
    }


def best_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()  # warm up (imports, caches)
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--check", action="store_true", help="fail unless the add targets are met")
    parser.add_argument("--xla", action="store_true", help="also the eager XLA kernels against jax op by op")
    parser.add_argument("--shapes", type=int, default=12, help="new shapes per operation for first calls (--xla)")
    args = parser.parse_args(argv)

    import array_api_strict

    import x10array

    libraries = {"numpy": np, "array-api-strict": array_api_strict, "x10array": x10array}
    results: dict[str, dict[str, float]] = {}
    for label, ns in libraries.items():
        for op, fn in operations(ns).items():
            results.setdefault(op, {})[label] = best_us(fn, args.number, args.repeat)

    header = f"{'operation':<26}{'numpy us':>10}{'strict us':>11}{'x10array us':>13}{'x10/numpy':>11}{'strict/x10':>12}"
    print(f"Per-call time, 100-element float64 (u: 16x16), best of {args.repeat} x {args.number} calls")
    print(header)
    print("-" * len(header))
    for op, row in results.items():
        n, s, x = row["numpy"], row["array-api-strict"], row["x10array"]
        print(f"{op:<26}{n:>10.2f}{s:>11.2f}{x:>13.2f}{x / n:>10.1f}x{s / x:>11.1f}x")

    add = results["add"]
    speedup = add["array-api-strict"] / add["x10array"]
    ok = add["x10array"] <= TARGET_ADD_US and speedup >= TARGET_SPEEDUP_VS_STRICT
    print(
        f"\ntarget: x10array add <= {TARGET_ADD_US} us and >= {TARGET_SPEEDUP_VS_STRICT}x faster than"
        f" array-api-strict: {add['x10array']:.2f} us, {speedup:.1f}x -> {'met' if ok else 'NOT met'}"
    )
    if args.xla:
        xla_first_calls(args.shapes, args.number // 10, args.repeat)
    return 0 if ok or not args.check else 1


def _xla_operations(ns: Any, x: Any, y: Any, m: Any) -> dict[str, Callable[[], object]]:
    """The operations of the XLA comparison, written once for x10array and jax.numpy (two
    vectors `x`, `y` of one shape and a square matrix `m`)."""
    return {
        "add": lambda: ns.add(x, y),
        "multiply by 2.5": lambda: ns.multiply(x, 2.5),
        "sin": lambda: ns.sin(x),
        "equal": lambda: ns.equal(x, y),
        "astype float32": lambda: ns.astype(x, ns.float32),
        "astype int32": lambda: ns.astype(x, ns.int32),
        "sum": lambda: ns.sum(x),
        "matmul": lambda: ns.matmul(m, m),
        "reshape": lambda: ns.reshape(x, (1, -1)),
        "getitem x[3]": lambda: x[3],
        "concat": lambda: ns.concat([x, y]) if hasattr(ns, "concat") else ns.concatenate([x, y]),
    }


def xla_first_calls(n_shapes: int, number: int, repeat: int) -> None:
    """x10array's eager XLA kernels against jax.numpy op by op: first calls on new shapes and
    the steady state, each pair measured back to back (see the module docstring)."""
    import time

    import jax
    import jax.numpy as jnp

    import x10array

    def ready(out: Any) -> Any:
        return out.block_until_ready() if hasattr(out, "block_until_ready") else np.asarray(out)

    def inputs(lib: str, n: int) -> tuple[Any, Any, Any]:
        hx, hy = np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n)
        hm = np.linspace(0.0, 1.0, (n // 8 + 2) ** 2).reshape(n // 8 + 2, -1)
        if lib == "jax":
            return jnp.asarray(hx), jnp.asarray(hy), jnp.asarray(hm)
        return x10array.asarray(hx), x10array.asarray(hy), x10array.asarray(hm)

    old = x10array.set_cpu_kernels("xla")
    libs = {"x10array": x10array, "jax": jnp}
    first: dict[str, dict[str, list[float]]] = {}
    steady: dict[str, dict[str, float]] = {}
    try:
        with jax.enable_x64(True):  # float64 on both sides (x10array asks for it per call)
            for i in range(n_shapes):
                for lib, ns in libs.items():  # disjoint shapes: nothing compiled by the other
                    n = 40 + 16 * i + (0 if lib == "jax" else 7)
                    for op, fn in _xla_operations(ns, *inputs(lib, n)).items():
                        start = time.perf_counter()
                        ready(fn())
                        first.setdefault(op, {}).setdefault(lib, []).append(time.perf_counter() - start)
            for lib, ns in libs.items():
                for op, fn in _xla_operations(ns, *inputs(lib, 100)).items():
                    steady.setdefault(op, {})[lib] = best_us(lambda fn=fn: ready(fn()), number, repeat)
    finally:
        x10array.set_cpu_kernels(old)
    print(
        f"\nEager XLA kernels against jax.numpy op by op, float64: first call on {n_shapes} new shapes"
        f" (median), steady state on 100 elements (best of {repeat} x {number})"
    )
    header = f"{'operation':<18}{'x10 first ms':>13}{'jax first ms':>13}{'x10/jax':>9}"
    header += f"{'x10 us':>9}{'jax us':>9}{'x10/jax':>9}"
    print(header)
    print("-" * len(header))
    for op in first:
        fx, fj = (float(np.median(first[op][lib])) * 1e3 for lib in ("x10array", "jax"))
        sx, sj = steady[op]["x10array"], steady[op]["jax"]
        print(f"{op:<18}{fx:>13.2f}{fj:>13.2f}{fx / fj:>8.3f}x{sx:>9.1f}{sj:>9.1f}{sx / sj:>8.2f}x")


if __name__ == "__main__":
    sys.exit(main())
