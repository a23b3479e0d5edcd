"""Writes through `numpy.asarray(x)` of an array or of a view, compared with NumPy doing the same.

Run by tests/test_view_writes.py in a subprocess per device and tier (X10ARRAY_DEFAULT_DEVICE
and X10ARRAY_COMPILE_THRESHOLD set by the caller: 1 compiles every graph), so that every read
below goes through the tier under test:

    X10ARRAY_DEFAULT_DEVICE=xla X10ARRAY_COMPILE_THRESHOLD=1 python tests/_host_writes.py

A base and a NumPy model of it get the same views (basic indices, views of views, the functions
NumPy returns views from); NumPy writes go into `numpy.asarray` of the base or of a view, and
after each, every array and view is read on x10array and compared, bit for bit, with the model,
also through a recorded operation (negation: exact on every tier), and through views made after
the write. Views NumPy makes read-only give read-only buffers (a write raises ValueError).
Prints "ok <checks>" at the end; exits 1 at the first mismatch.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

import x10array as xp

CHECKS = [0]


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def check(what: str, got: xp.Array, want: np.ndarray) -> None:
    host = np.asarray(got, copy=True)
    negated = np.asarray(xp.negative(got), copy=True)
    if host.shape != want.shape or not np.array_equal(bits(host), bits(want)):
        sys.exit(f"{what}: read {host.tolist()}, NumPy {want.tolist()}")
    if not np.array_equal(bits(negated), bits(-want)):
        sys.exit(f"{what}: negative() read {negated.tolist()}, NumPy {(-want).tolist()}")
    CHECKS[0] += 1


VIEWS = {
    "row": lambda a, m: (a[1], m[1]),
    "slices": lambda a, m: (a[:, ::-1, 1:4:2], m[:, ::-1, 1:4:2]),
    "view of a view": lambda a, m: (a[:, ::-1, 1:4:2][0, ..., None], m[:, ::-1, 1:4:2][0, ..., None]),
    "permute_dims": lambda a, m: (xp.permute_dims(a, (2, 0, 1)), m.transpose(2, 0, 1)),
    "permuted row": lambda a, m: (xp.permute_dims(a, (2, 0, 1))[1:3], m.transpose(2, 0, 1)[1:3]),
    "moveaxis": lambda a, m: (xp.moveaxis(a, 0, -1), np.moveaxis(m, 0, -1)),
    "reshape": lambda a, m: (xp.reshape(a, (6, 5)), m.reshape(6, 5)),
    "mT": lambda a, m: (a.mT, np.swapaxes(m, -1, -2)),
    "flip": lambda a, m: (xp.flip(a, axis=1), np.flip(m, axis=1)),
    "expand_dims": lambda a, m: (xp.expand_dims(a, axis=0), m[None]),
}
READ_ONLY = {
    "broadcast_to": lambda a, m: (xp.broadcast_to(a[0, 0], (2, 5)), np.broadcast_to(m[0, 0], (2, 5))),
    "diagonal": lambda a, m: (xp.linalg.diagonal(a), np.diagonal(m, axis1=-2, axis2=-1)),
}


def compare(step: str, a: xp.Array, m: np.ndarray, views: dict[str, tuple[xp.Array, np.ndarray]]) -> None:
    check(f"{step}: base", a, m)
    for name, (v, mv) in views.items():
        check(f"{step}: {name}", v, mv)
    for name, make in {**VIEWS, **READ_ONLY}.items():  # views made after the write
        v, mv = make(a, m)
        check(f"{step}: {name} (made after)", v, mv)


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, 3, 5))
    a = xp.asarray(values, copy=True)
    m = values.copy()
    views = {name: make(a, m) for name, make in {**VIEWS, **READ_ONLY}.items()}
    compare("before", a, m, views)  # (every view's value computed: the copies that could go stale)
    pending = a + 0.0  # recorded before the writes below: reads the value before them
    expected = m + 0.0

    # a write through a view's buffer reaches the base and every other view
    for name in VIEWS:
        buffer = np.asarray(views[name][0])
        if not buffer.flags.writeable:
            sys.exit(f"numpy.asarray of the {name} view is read-only; NumPy's view is writable")
        new = rng.standard_normal(buffer.shape)
        buffer[...] = new
        views[name][1][...] = new
        compare(f"written through {name}", a, m, views)
    check("recorded before the writes", pending, expected)

    # ... and through the base's buffer
    buffer = np.asarray(a)
    buffer[0, 1:, ::2] = 7.5
    m[0, 1:, ::2] = 7.5
    compare("written through the base", a, m, views)

    # a buffer handed out before a view is made, written after the view was read
    late = a[1, 2]
    check("late view", late, m[1, 2])
    buffer[1, 2, 3] = -0.0
    m[1, 2, 3] = -0.0
    check("late view after a write", late, m[1, 2])

    # read-only views: a write raises, it is never silently lost
    for name in READ_ONLY:
        buffer = np.asarray(views[name][0])
        try:
            buffer[...] = 1.0
        except ValueError:
            pass
        else:
            sys.exit(f"numpy.asarray of the {name} view accepted a write; NumPy's view is read-only")
    compare("after the refused writes", a, m, views)

    # x10array writes still reach the views (replayed), and NumPy writes after them too
    a[1] = 3.0
    m[1] = 3.0
    compare("written by x10array", a, m, views)
    buffer = np.asarray(views["permute_dims"][0])
    buffer[0] = -2.0
    views["permute_dims"][1][0] = -2.0
    compare("written through a view after an x10array write", a, m, views)

    # threads writing rows of one output, as SciPy's ndimage does (TestThreading)
    out = xp.zeros((4, 6))
    model = np.zeros((4, 6))

    def work(i: int) -> None:
        np.asarray(out[i, ...])[...] = i + 0.5

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        model[i] = i + 0.5
    check("rows written by threads", out, model)
    print("ok", CHECKS[0])


if __name__ == "__main__":
    main()
