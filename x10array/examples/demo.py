"""A tour of x10array in a minute: arrays, devices, operations, eager and lazy.

    python -m x10array.examples.demo

Everything here is the Array API standard (2025.12) plus x10array's devices: an eager device
runs each operation at once; an XLA (lazy) device records operations and runs them as one
compiled XLA program when a value is needed or at `lazy_barrier()`.
"""

from __future__ import annotations

import x10array as xp


def eager_part() -> xp.Array:
    print(f"x10array implements the Array API standard {xp.__array_api_version__}")
    print("devices on this machine:")
    for device in xp.__array_namespace_info__().devices():
        print("   ", device)

    device = xp.Device.default  # the eager device on the first accelerator, else the CPU
    print(f"\ndefault device: {device}")
    x = xp.linspace(0.0, 1.0, 5, device=device)
    w = xp.reshape(xp.arange(10, dtype=xp.float64), (5, 2))
    y = xp.exp(-x) @ w + 1.0  # runs now, op by op
    print("x =", x)
    print("exp(-x) @ w + 1 =", y, f"(dtype {y.dtype}, device {y.device})")

    x[0] = 10.0  # y was computed from the old x (a new value, not a view of x): it keeps its value
    print("after x[0] = 10:", x, "| y unchanged:", y)

    print("mean, std of x:", float(xp.mean(x)), float(xp.std(x)))
    return x


def lazy_part(x: xp.Array) -> None:
    lazy = xp.Device.default_xla  # the same hardware, recorded and compiled by XLA
    print(f"\nlazy device: {lazy}")
    moved = x.to_device(lazy)  # devices never mix implicitly: copies are explicit, bit for bit
    print("x copied to", moved.device, "->", moved)
    xp.reset_metrics()
    w = xp.ones((4, 4), device=lazy)
    g = xp.full((4, 4), 0.5, device=lazy)
    for step in range(5):
        w = w - 0.1 * g * (step + 1)  # recorded, not run
        xp.lazy_barrier()  # cut the graph here: one compiled program per step
    print("w[0] after 5 steps:", w[0])  # reading a value materializes it
    m = xp.metrics()
    print(f"ops recorded: {m.ops_recorded}, XLA compiles: {m.compile_count}, barriers: {m.barriers}")


def main() -> None:
    lazy_part(eager_part())


if __name__ == "__main__":
    main()
