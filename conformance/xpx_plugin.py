"""A pytest plugin that runs array-api-extra's own tests on x10array.

array-api-extra's tests (in its wheel, as `array_api_extra.tests`, and its sdist) take their
library from the `library` fixture of `tests/main/conftest.py`, one parameter per member of its
`Backend` enum (`array_api_extra._lib._backends`). This plugin, imported before that conftest,
replaces the enum by one with the same members and methods plus `X10ARRAY = "x10array"`, so
that every test also runs on x10array, with the id `x10array`:

    python -m pytest -c conformance/xpx-pytest.ini -p conformance.xpx_plugin \
        --pyargs array_api_extra.tests.main -k x10array

(`-k "array_api_strict and not strictest"` runs the baseline.) The device is x10array's default
one (`X10ARRAY_DEFAULT_DEVICE=xla` for the lazy device, and `X10ARRAY_COMPILE_THRESHOLD=1` for
every graph compiled). The tests listed in conformance/downstream-xfails.txt for this device are
marked xfail. Nothing of array-api-extra is copied.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path

import pytest
from array_api_extra._lib import _backends

sys.path.insert(0, str(Path(__file__).parent))
import downstream_xfails  # noqa: E402

_Original = _backends.Backend
if "X10ARRAY" not in _Original.__members__:
    Backend = enum.Enum(  # type: ignore[misc]
        "Backend",
        {**{m.name: m.value for m in _Original}, "X10ARRAY": "x10array"},
        module=_Original.__module__,
        qualname=_Original.__qualname__,
    )
    for _name, _attr in vars(_Original).items():
        if not _name.startswith("_") and _name not in _Original.__members__:
            setattr(Backend, _name, _attr)  # modname, like, pytest_param
    _backends.Backend = Backend  # type: ignore[misc]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    downstream_xfails.mark([i for i in items if "[x10array" in i.nodeid or "-x10array" in i.nodeid], "array_api_extra")
