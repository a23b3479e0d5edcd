"""The expected failures of SciPy's and array-api-extra's own tests with x10array.

`conformance/downstream-xfails.txt` lists them, one a line:

    OWNER  DEVICES  PATTERN  # reason

OWNER says whose the failure is: `scipy`, `array-api-extra` or `x10array` (a bug of ours,
with the issue that fixes it). DEVICES is a comma-separated subset of `eager`, `lazy` and
`compiled` (the lazy device with every graph compiled), or `*`. PATTERN is the test's id from
its package on, where `*` stands for any text (nothing else is special, brackets included), e.g.
`scipy/signal/tests/test_signaltools.py::TestOAConvolve::*`. The reason is required.

The plugins (conformance/scipy_plugin.py, conformance/xpx_plugin.py) mark the matching tests
`xfail(strict=False)`: a listed test that passes shows up as XPASS, to be pruned.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

FILE = Path(__file__).with_name("downstream-xfails.txt")
OWNERS = ("scipy", "array-api-extra", "x10array")
DEVICES = ("eager", "lazy", "compiled")


@dataclass(frozen=True)
class Entry:
    owner: str
    devices: frozenset[str]
    pattern: str
    reason: str

    def matches(self, key: str) -> bool:
        return re.fullmatch(".*".join(map(re.escape, self.pattern.split("*"))), key) is not None


def current_device() -> str:
    """eager, lazy or compiled, from the X10ARRAY_ variables this process runs under."""
    if os.environ.get("X10ARRAY_DEFAULT_DEVICE", "").endswith("xla"):
        return "compiled" if os.environ.get("X10ARRAY_COMPILE_THRESHOLD") == "1" else "lazy"
    return "eager"


def load(path: Path = FILE) -> list[Entry]:
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, sep, reason = line.partition("#")
        fields = body.split()
        if not sep or not reason.strip() or len(fields) != 3:
            raise ValueError(f"{path}:{n}: want 'OWNER DEVICES PATTERN  # reason', got {raw!r}")
        owner, devices, pattern = fields
        if owner not in OWNERS:
            raise ValueError(f"{path}:{n}: owner must be one of {OWNERS}, got {owner!r}")
        chosen = frozenset(DEVICES) if devices == "*" else frozenset(devices.split(","))
        if not chosen <= set(DEVICES):
            raise ValueError(f"{path}:{n}: devices must be among {DEVICES} or '*', got {devices!r}")
        entries.append(Entry(owner, chosen, pattern, reason.strip()))
    return entries


def test_key(item: pytest.Item, package: str) -> str:
    """The test's id from its package's folder on: `scipy/signal/tests/x.py::T::t[x10array]`."""
    parts = item.path.parts
    where = len(parts) - 1 - parts[::-1].index(package) if package in parts else 0
    name = item.nodeid.partition("::")[2]
    return "/".join(parts[where:]) + "::" + name


def mark(items: list[pytest.Item], package: str) -> None:
    """Mark the listed tests of this device xfail (not strict), with owner and reason."""
    device = current_device()
    entries = [e for e in load() if device in e.devices]
    if not entries:
        return
    for item in items:
        key = test_key(item, package)
        for e in entries:
            if e.matches(key):
                item.add_marker(pytest.mark.xfail(reason=f"[{e.owner}] {e.reason}", strict=False))
                break
