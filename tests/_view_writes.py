"""Random programs of writes through views, run on the lazy device and compared with NumPy.

Run by tests/test_view_writes.py in a subprocess with X10ARRAY_COMPILE_THRESHOLD=1, so that
every graph is compiled by XLA and a process abort (XLA's fatal checks) is a failed test, not
a dead pytest:

    X10ARRAY_COMPILE_THRESHOLD=1 python tests/_view_writes.py --seed 0 --cases 20

A program makes a random array, takes views of it and of its views (slices with negative
steps, None, ..., integers mixed with slices), writes through them (basic indices, integer
arrays with negative entries, scalars and arrays, augmented assignment), and after each
barrier compares every array and view with NumPy doing the same. Each program is printed
before it runs, so an abort names its culprit. Prints "ok <cases> <barriers>" at the end;
exits 1 at the first mismatch.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import x10array as xp


def random_slice(rng: np.random.Generator, n: int) -> slice:
    def end() -> int | None:
        return None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))

    step = [None, 1, 2, 3, -1, -1, -2, -3][int(rng.integers(0, 8))]
    return slice(end(), end(), step)


def random_index(rng: np.random.Generator, shape: tuple[int, ...], arrays: bool) -> tuple:
    """A random key for an array of `shape`: basic (ints, slices, None, ...), and with
    `arrays`, at most one integer array of distinct in-bounds entries (negative ones too)."""
    k = int(rng.integers(0, len(shape) + 1))  # axes indexed explicitly
    ellipsis = rng.random() < 0.4
    p = int(rng.integers(0, k + 1)) if ellipsis else k  # items before the ellipsis
    sizes = shape[:p] + shape[len(shape) - (k - p) :]  # the axes the items index
    items: list = []
    for n in sizes:
        r = rng.random()
        if n > 0 and r < 0.25:
            items.append(int(rng.integers(-n, n)))
        elif r < 0.35:
            items.append(slice(None))
        else:
            items.append(random_slice(rng, n))
    if arrays and k and rng.random() < 0.4:
        position = int(rng.integers(0, k))
        n = sizes[position]
        if n > 0:
            m = int(rng.integers(1, n + 1))
            picked = rng.permutation(n)[:m]
            items[position] = np.where(rng.random(m) < 0.5, picked - n, picked)
    if ellipsis:
        items.insert(p, Ellipsis)
    for _ in range(int(rng.integers(0, 3))):
        if rng.random() < 0.3:
            items.insert(int(rng.integers(0, len(items) + 1)), None)
    return tuple(items)


def to_x10(key: tuple, device: xp.Device) -> tuple:
    return tuple(xp.asarray(i, device=device) if isinstance(i, np.ndarray) else i for i in key)


def show(key: tuple) -> str:
    def one(i: object) -> str:
        if isinstance(i, slice):
            return ":".join("" if v is None else str(v) for v in (i.start, i.stop, i.step))
        if i is Ellipsis:
            return "..."
        if isinstance(i, np.ndarray):
            return f"array({i.tolist()})"
        return repr(i)

    return "[" + ", ".join(one(i) for i in key) + "]"


def run_program(rng: np.random.Generator, device: xp.Device, n_ops: int, log: list[str]) -> int:
    """One random program; returns the number of barriers it compared at."""
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 6)) for _ in range(ndim))
    dtype = ["float64", "float32", "int32"][int(rng.integers(0, 3))]
    base = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    pairs = [(base, xp.asarray(base, device=device), "x")]
    log.append(f"x = arange{shape} {dtype}")
    barriers = 0
    for _ in range(n_ops):
        r = rng.random()
        np_a, x10_a, name = pairs[int(rng.integers(0, len(pairs)))]
        if r < 0.35 or len(pairs) == 1:  # a view
            key = random_index(rng, np_a.shape, arrays=False)
            expected = np_a[key]
            if not isinstance(expected, np.ndarray):  # an int for every axis: a copy
                continue
            view = x10_a[to_x10(key, device)]
            label = f"v{len(pairs)}"
            log.append(f"{label} = {name}{show(key)}")
            pairs.append((expected, view, label))
        elif r < 0.8:  # a write (a fifth of them to the whole array: XLA's trap, see _indexing)
            key = (Ellipsis,) if rng.random() < 0.2 else random_index(rng, np_a.shape, arrays=True)
            target = np_a[key]
            sel = np.shape(target)
            if rng.random() < 0.4 or not sel:
                value = int(rng.integers(-50, 50))
                np_a[key] = value
                x10_a[to_x10(key, device)] = value if dtype == "int32" else float(value)
            else:
                vshape = tuple(1 if rng.random() < 0.3 else d for d in sel[int(rng.integers(0, len(sel) + 1)) :])
                value = rng.integers(-50, 50, size=vshape).astype(dtype)
                np_a[key] = value
                x10_a[to_x10(key, device)] = xp.asarray(value, device=device)
                value = f"array{vshape}"
            log.append(f"{name}{show(key)} = {value}")
        elif r < 0.9:  # augmented assignment through a view
            np_a += np_a.dtype.type(3)
            x10_a += 3
            log.append(f"{name} += 3")
        if r >= 0.9 or rng.random() < 0.3:
            barrier(log)
            barriers += 1
            compare(pairs, log)
    barrier(log)
    compare(pairs, log)
    return barriers + 1


def barrier(log: list[str]) -> None:
    """Print the operations recorded since the last barrier, then run them."""
    log.append("barrier")
    start = len(log) - 1
    while start > 0 and log[start - 1] != "barrier" and not log[start - 1].startswith("case "):
        start -= 1
    print("\n".join(log[start - 1 if log[start - 1].startswith("case ") else start :]), flush=True)
    xp.lazy_barrier()


def compare(pairs: list, log: list[str]) -> None:
    for np_a, x10_a, name in pairs:
        got = np.asarray(x10_a)
        if got.shape != np_a.shape or not np.array_equal(got, np_a):
            print("\n".join(log), flush=True)
            print(f"MISMATCH {name}: x10array {got.tolist()} != NumPy {np_a.tolist()}", flush=True)
            sys.exit(1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--ops", type=int, default=6)
    args = parser.parse_args()
    device = xp.Device.default_xla
    barriers = 0
    for case in range(args.cases):
        rng = np.random.default_rng([args.seed, case])
        log: list[str] = [f"case {case} (seed {args.seed})"]
        barriers += run_program(rng, device, args.ops, log)
    print(f"ok {args.cases} {barriers}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
