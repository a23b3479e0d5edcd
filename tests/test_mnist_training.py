"""The seed's story end to end on the real MNIST files: 5 epochs of LeNet-5, eager and lazy.

Slow (minutes): run with `python -m pytest -m slow`; CI runs it after the default suite.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import x10array as xp
from x10array.examples.mnist import train

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
LINE = re.compile(
    r"^\[Epoch \d+\] Training Loss: \d+\.\d{3}, Training Accuracy: \d+/59904 \(\d+\.\d%\), "
    r"Test Loss: \d+\.\d{3}, Test Accuracy: \d+/10000 \(\d+\.\d%\) seconds per epoch: \d+\.\d, "
    r"host CPU ms per training step: \d+\.\d\d$"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MNIST_DIR.exists(), reason="the MNIST files of ../shared are not here"),
]


@pytest.mark.parametrize("device", [xp.Device("cpu", 0, "eager"), xp.Device("cpu", 0, "xla")], ids=["eager", "xla"])
def test_lenet_reaches_98_percent_in_5_epochs(device):
    lines: list[str] = []
    before = xp.metrics()
    history = train(
        device, epochs=5, batch_size=128, data_dir=str(MNIST_DIR), learning_rate=0.1, momentum=0.9, log=lines.append
    )
    compiled = (xp.metrics() - before).compile_count
    assert len(lines) == 5 and all(LINE.match(line) for line in lines), lines
    assert history[-1]["test_accuracy"] >= 0.98, lines
    if device.is_lazy:
        # a training step, an evaluation step, and the smaller last evaluation batch
        assert compiled <= 3, compiled
    else:
        assert compiled == 0
