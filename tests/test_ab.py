"""benchmarks/ab.py, the A/B of two checkouts: its parsers read each benchmark's printed text
(samples below are those scripts' own output), its order alternates the sides, and the
paired ratio pairs the i-th run of each side. Nothing is timed here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("ab", Path(__file__).resolve().parents[1] / "benchmarks" / "ab.py")
ab = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ab)

LENET = """\
ms per step        each step waited for   in a loop (wait at the end)
x10array lazy             21.44                  18.57
x10array captured         16.51                  16.07
x10array eager            54.76                      -
jax.jit (XLA conv)        15.34                  14.82
jax.jit (im2col)          10.62                  12.60
lazy     / jax.jit (XLA conv) 1.40x per step, 1.25x in a loop
captured / jax.jit (im2col)   1.55x per step, 1.28x in a loop
host ms per step (not waited for), x10array captured      1.110 wall,   1.046 thread CPU
host ms per step (not waited for), jax.jit (XLA conv)     0.655 wall,   0.653 thread CPU
eager / lazy                2.55x
lazy compiles: 1
"""

MNIST = """\
python 3.11.7, load average 0.4, 2 CPUs
round 0: jax.jit 2.7 s (90.69%), x10array lazy 3.2 s (90.79%, 5.38 host ms per step, 2 compiles in 1.6 s, 118 captured replays)
round 1: jax.jit 2.5 s (90.69%), x10array lazy 2.4 s (90.79%, 2.10 host ms per step, 0 compiles in 0.0 s, 120 captured replays)

first epoch of the process: x10array lazy / jax.jit 1.16x (target <= 1.0x)
best of 2: jax.jit 2.51 s, x10array lazy 2.43 s: 0.97x
"""  # noqa: E501 (a benchmark's printed lines, as it prints them)

DISTRIBUTED = """\
 batch  devices  procs  recorded  captured  in place      jax  rec/jax  cap/jax  inpl/jax  compiles  1-dev lazy
   256        1      1      1.65      0.98      1.01     0.93     1.78     1.09      1.08     0/0/0        1.29
   256        4      2     10.59      9.50      7.46     6.93     1.53     1.37      1.08     0/1/0           -
"""

SKLEARN = """\
estimator           run       numpy s  eager s   lazy s lazy/eager  lazy counters
---------------------------------------------------------------------------------
PCA                 first       0.093    0.097    0.108      1.11x  compiles=0, cache_hits=0, reads=1
LogisticRegression  repeat      0.019    0.027    0.044      1.59x  compiles=0, cache_hits=0, reads=48
targets (lazy first fit <= 2x eager; lazy repeated fit <= 1.0x eager): NOT met
"""


def test_lenet_figures_and_derived_ratios():
    f = ab.parse_lenet(LENET)
    assert f["x10array lazy ms per step"] == 21.44 and f["x10array lazy ms in a loop"] == 18.57
    assert "x10array eager ms in a loop" not in f  # printed as "-"
    assert f["lazy / jax.jit (XLA conv) in a loop (ratio)"] == 1.25
    assert f["captured / jax.jit (im2col) per step (ratio)"] == 1.55
    assert f["host x10array captured ms thread CPU"] == 1.046
    assert f["eager / jax.jit (XLA conv) per step (ratio)"] == pytest.approx(54.76 / 15.34)
    assert f["host CPU captured / jax.jit (XLA conv) (ratio)"] == pytest.approx(1.046 / 0.653)
    assert f["lazy compiles"] == 1


def test_mnist_rounds_and_ratios():
    f = ab.parse_mnist(MNIST)
    assert f["round 0 x10array lazy s"] == 3.2 and f["round 1 host ms per step"] == 2.10
    assert f["round 0 compile s"] == 1.6
    assert f["first epoch lazy / jax.jit (ratio)"] == 1.16
    assert f["best epoch lazy / jax.jit (ratio)"] == 0.97 and f["best jax.jit s"] == 2.51


def test_distributed_rows():
    f = ab.parse_distributed(DISTRIBUTED)
    assert f["b256 d1 p1 jax ms"] == 0.93 and f["b256 d1 p1 captured / jax (ratio)"] == 1.09
    assert f["b256 d1 p1 1-dev lazy / jax (ratio)"] == pytest.approx(1.29 / 0.93)
    assert f["b256 d4 p2 in place / jax (ratio)"] == 1.08 and f["b256 d4 p2 steady compiles"] == 1
    assert "b256 d4 p2 1-dev lazy ms" not in f


def test_sklearn_rows():
    f = ab.parse_sklearn(SKLEARN)
    assert f["PCA first lazy / eager (ratio)"] == 1.11
    assert f["LogisticRegression repeat lazy / numpy (ratio)"] == pytest.approx(0.044 / 0.019)
    assert len(f) == 12  # 6 per row, the header and target lines ignored


def test_order_alternates_and_pairs_runs_next_to_each_other():
    assert ab.order(4) == list("ABBAABBA")
    a = [{"x": 1.0, "only_a": 1.0}, {"x": 2.0, "only_a": 1.0}, {"x": 4.0, "only_a": 1.0}]
    b = [{"x": 1.1}, {"x": 2.4}, {"x": 4.0}]
    table = ab.paired(a, b)
    assert set(table) == {"x"}  # a figure missing from some run is left out
    assert table["x"]["a"] == 2.0 and table["x"]["b"] == 2.4
    assert table["x"]["b_over_a"] == pytest.approx(1.1) and table["x"]["max"] == pytest.approx(1.2)
    assert ab.parser_for("benchmarks/bench_sklearn.py") is ab.parse_sklearn
    assert ab.parser_for("benchmarks/bench_other.py") is ab.parse_generic
