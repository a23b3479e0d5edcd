"""The README's quickstart: the demo runs, without warnings, and shows both halves."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    env["X10ARRAY_COMPILE_CACHE_DIR"] = "0"  # (never the user's ~/.cache: see conftest.py)
    result = subprocess.run(
        [sys.executable, "-W", "error", "-m", "x10array.examples.demo"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "2025.12" in out
    assert "Device(kind=CPU, ordinal=0, backend=EAGER)" in out
    assert "backend=XLA" in out and "XLA compiles:" in out


def test_a_long_run_prints_progress_lines_when_not_on_a_terminal(capsys) -> None:
    """In a log (stderr not a terminal) an epoch prints a progress line every tenth of its
    batches, so a run of minutes is never silent; the bar is for terminals only."""
    from x10array.examples import mnist

    for done in range(1, 101):
        mnist._progress(3, done, 100, "lines", 0.0)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" batches")[0] for line in lines] == [f"[Epoch 3] {k}/100" for k in range(10, 100, 10)]
    for done in range(1, 101):
        mnist._progress(3, done, 100, False)
    assert capsys.readouterr().err == ""


def test_quick_runs_one_short_epoch_and_the_full_demo_says_what_it_costs(tmp_path, monkeypatch, capsys) -> None:
    """`--quick` is one epoch of at most QUICK_BATCHES batches per device, shown by lines when
    not on a terminal; the full demo says on stderr that eager epochs take minutes, and how to
    try it quickly."""
    from test_datasets import write_fake_mnist

    from x10array.examples import mnist

    write_fake_mnist(tmp_path, n_train=16, n_test=8, gz=False)
    calls = []
    monkeypatch.setattr(mnist, "train", lambda device, **kw: calls.append(kw) or [])
    assert mnist.main(["--quick", "--device", "eager", "--data-dir", str(tmp_path)]) == 0
    assert calls[-1]["epochs"] == 1 and calls[-1]["max_batches"] == mnist.QUICK_BATCHES
    assert calls[-1]["progress"] == "lines"  # pytest's stderr is not a terminal
    assert "--quick" not in capsys.readouterr().err

    assert mnist.main(["--device", "eager", "--data-dir", str(tmp_path)]) == 0
    assert calls[-1]["epochs"] == 5 and calls[-1]["max_batches"] is None
    assert "--quick" in capsys.readouterr().err
