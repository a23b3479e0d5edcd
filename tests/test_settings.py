"""The settings module (x10array/_core/settings.py): every `X10ARRAY_*` variable declared once.

A bad value raises ValueError naming the variable and what it allows (from the environment, at
import or first use, and from `settings.set`); `override` restores on exit; no module reads
the environment for a variable of its own; the README's table is `settings.table()`.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from x10array.extend import settings

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "x10array"
SETTINGS_MODULE = PACKAGE / "_core" / "settings.py"
NAME = re.compile(r"X10ARRAY_[A-Z0-9_]+")

# One value each kind refuses (str and path settings accept any text).
BAD_TEXT = {"int": "many", "float": "fast", "bool": "maybe", "choice": "bogus", "address": "host0"}
CHECKED = [s for s in settings.SETTINGS.values() if s.kind in BAD_TEXT]


@pytest.fixture
def restored() -> Iterator[None]:
    """Every setting's value put back after the test (it may reload or set them)."""
    saved = {name: settings.get(name) for name in settings.SETTINGS}
    try:
        yield
    finally:
        for name, value in saved.items():
            settings.set(name, value)


def _message_names(message: str, setting: settings.Setting) -> None:
    assert setting.name in message and setting.allowed() in message, message


# --- the declarations ---------------------------------------------------------------------


def test_every_setting_is_declared_completely():
    assert settings.SETTINGS, "no settings declared"
    for name, s in settings.SETTINGS.items():
        assert name == s.name and NAME.fullmatch(name), name
        assert s.kind in ("str", "choice", "int", "float", "bool", "path", "dir_or_off", "address"), (name, s.kind)
        assert s.meaning.strip(), f"{name}: no meaning"
        assert s.kind != "choice" or (s.choices and s.default in s.choices), (name, s.choices, s.default)
        if s.default not in (None, ""):
            assert s.parse(s.default) == s.default, f"{name}: the default {s.default!r} does not parse to itself"


def test_environment_text_is_read(monkeypatch, restored):
    monkeypatch.setenv("X10ARRAY_GRAPH_LIMIT", " 123 ")
    monkeypatch.setenv("X10ARRAY_DONATE", "off")
    monkeypatch.setenv("X10ARRAY_EAGER_CPU_KERNELS", "XLA")
    settings.reload()
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 123
    assert settings.get("X10ARRAY_DONATE") is False
    assert settings.get("X10ARRAY_EAGER_CPU_KERNELS") == "xla"
    monkeypatch.setenv("X10ARRAY_GRAPH_LIMIT", "")  # empty: the default
    settings.reload()
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == settings.SETTINGS["X10ARRAY_GRAPH_LIMIT"].default


# --- bad values -----------------------------------------------------------------------------


@pytest.mark.parametrize("setting", CHECKED, ids=lambda s: s.name)
def test_bad_environment_value_names_the_variable(setting, monkeypatch, restored):
    monkeypatch.setenv(setting.name, BAD_TEXT[setting.kind])
    settings.reload()
    with pytest.raises(ValueError) as info:
        settings.get(setting.name)
    _message_names(str(info.value), setting)


def test_below_the_minimum_is_refused(monkeypatch, restored):
    for setting in settings.SETTINGS.values():
        if setting.minimum is None:
            continue
        monkeypatch.setenv(setting.name, str(setting.minimum - 1))
        settings.reload()
        with pytest.raises(ValueError) as info:
            settings.get(setting.name)
        _message_names(str(info.value), setting)


def test_above_the_maximum_is_refused(monkeypatch, restored):
    bounded = [s for s in settings.SETTINGS.values() if s.maximum is not None]
    assert bounded
    for setting in bounded:
        monkeypatch.setenv(setting.name, repr(setting.maximum * 2))
        settings.reload()
        with pytest.raises(ValueError) as info:
            settings.get(setting.name)
        _message_names(str(info.value), setting)
        assert settings.SETTINGS[setting.name].parse(setting.maximum) == setting.maximum


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e999"])
@pytest.mark.parametrize("setting", [s for s in settings.SETTINGS.values() if s.kind == "float"], ids=lambda s: s.name)
def test_a_float_setting_refuses_nan_and_infinity(setting, text, monkeypatch, restored):
    # NaN passed `>= 0`; X10ARRAY_DISTRIBUTED_TIMEOUT=inf then failed every multi-process run
    # with an OverflowError
    monkeypatch.setenv(setting.name, text)
    settings.reload()
    with pytest.raises(ValueError) as info:
        settings.get(setting.name)
    _message_names(str(info.value), setting)
    with pytest.raises(ValueError, match=setting.name):
        settings.set(setting.name, float(text))


@pytest.mark.parametrize("text", ["host0", "host0:", ":1234", "host0:port", "host0:0", "host0:65536", "host0:-1",
                                  "host0:１２"])  # fmt: skip
def test_the_coordinator_must_be_host_and_port(text, restored):
    # "host0" (no port) was a bare IndexError from inside jax.distributed.initialize
    setting = settings.SETTINGS["X10ARRAY_COORDINATOR"]
    with pytest.raises(ValueError) as info:
        settings.set("X10ARRAY_COORDINATOR", text)
    _message_names(str(info.value), setting)
    for good in ("host0:1234", "10.0.0.1:65535", "[::1]:8476", " node-3.cluster:1 ", ""):
        settings.set("X10ARRAY_COORDINATOR", good)
        assert settings.get("X10ARRAY_COORDINATOR") == good.strip()


def test_a_bad_coordinator_is_refused_by_initialize():
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    code = "from x10array import distributed\ndistributed.initialize()"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(ROOT), "X10ARRAY_COMPILE_CACHE_DIR": "0", "X10ARRAY_COORDINATOR": "host0",
             "X10ARRAY_NUM_PROCESSES": "2"},
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("ValueError: X10ARRAY_COORDINATOR='host0': expected"), proc.stderr


def test_bad_environment_value_fails_in_a_fresh_process():
    """With the variable set in the environment, x10array refuses it at import or at the
    setting's first use: never a silent default. One process per setting, run side by side."""
    code = textwrap.dedent(
        """
        import sys
        name = sys.argv[1]
        try:
            import x10array as xp
            import x10array.datasets, x10array.nn, x10array.optim
            from x10array.extend import settings
            float(xp.sum(xp.ones(3) + 1))
            settings.get(name)
        except ValueError as e:
            print(f"ValueError: {e}")
            sys.exit(0)
        print("accepted")
        sys.exit(1)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    env["X10ARRAY_COMPILE_CACHE_DIR"] = "0"  # (never the user's ~/.cache: see conftest.py)
    env["PYTHONPATH"] = str(ROOT)
    procs = {
        s.name: subprocess.Popen(
            [sys.executable, "-c", code, s.name],
            env={**env, s.name: BAD_TEXT[s.kind]},
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in CHECKED
    }
    failures = []
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        setting = settings.SETTINGS[name]
        if proc.returncode != 0 or name not in out or setting.allowed() not in out:
            failures.append(f"{name}={BAD_TEXT[setting.kind]!r}: rc {proc.returncode}, {out.strip()!r} {err[-500:]}")
    assert not failures, "\n".join(failures)


def test_bad_default_device_fails_at_first_use():
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    env["X10ARRAY_COMPILE_CACHE_DIR"] = "0"  # (never the user's ~/.cache: see conftest.py)
    proc = subprocess.run(
        [sys.executable, "-c", "import x10array as xp; xp.zeros(1)"],
        env={**env, "PYTHONPATH": str(ROOT), "X10ARRAY_DEFAULT_DEVICE": "bogus"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and last.startswith("ValueError: X10ARRAY_DEFAULT_DEVICE='bogus'"), proc.stderr


@pytest.mark.parametrize("setting", CHECKED, ids=lambda s: s.name)
def test_set_refuses_a_bad_value_and_keeps_the_old_one(setting, restored):
    before = settings.get(setting.name)
    for bad in (BAD_TEXT[setting.kind], object()):
        with pytest.raises(ValueError) as info:
            settings.set(setting.name, bad)
        _message_names(str(info.value), setting)
    assert settings.get(setting.name) == before


def test_set_accepts_python_values_and_text(restored):
    settings.set("X10ARRAY_GRAPH_LIMIT", 77)
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 77
    settings.set("X10ARRAY_GRAPH_LIMIT", "78")
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 78
    settings.set("X10ARRAY_LOG_COMPILES", True)
    assert settings.get("X10ARRAY_LOG_COMPILES") is True
    with pytest.raises(ValueError, match="X10ARRAY_GRAPH_LIMIT"):
        settings.set("X10ARRAY_GRAPH_LIMIT", True)  # a bool is not an integer here
    with pytest.raises(ValueError, match="X10ARRAY_GRAPH_LIMIT"):
        settings.set("X10ARRAY_GRAPH_LIMIT", 0)


# --- override -------------------------------------------------------------------------------


def test_override_restores_on_exit():
    before = settings.get("X10ARRAY_GRAPH_LIMIT"), settings.get("X10ARRAY_DONATE")
    with settings.override(X10ARRAY_GRAPH_LIMIT=5, X10ARRAY_DONATE="0"):
        assert settings.get("X10ARRAY_GRAPH_LIMIT") == 5 and settings.get("X10ARRAY_DONATE") is False
        with settings.override(X10ARRAY_GRAPH_LIMIT=6):
            assert settings.get("X10ARRAY_GRAPH_LIMIT") == 6
        assert settings.get("X10ARRAY_GRAPH_LIMIT") == 5
    assert (settings.get("X10ARRAY_GRAPH_LIMIT"), settings.get("X10ARRAY_DONATE")) == before


def test_override_restores_on_exception():
    before = settings.get("X10ARRAY_COMPILE_PAYBACK")
    with pytest.raises(KeyError), settings.override(X10ARRAY_COMPILE_PAYBACK=3.5):
        assert settings.get("X10ARRAY_COMPILE_PAYBACK") == 3.5
        raise KeyError("inside")
    assert settings.get("X10ARRAY_COMPILE_PAYBACK") == before


def test_override_with_a_bad_value_changes_nothing():
    before = settings.get("X10ARRAY_GRAPH_LIMIT"), settings.get("X10ARRAY_CONV_LOWERING")
    setting = settings.SETTINGS["X10ARRAY_CONV_LOWERING"]
    with pytest.raises(ValueError) as info:
        with settings.override(X10ARRAY_GRAPH_LIMIT=9, X10ARRAY_CONV_LOWERING="fft"):
            pytest.fail("entered the block")
    _message_names(str(info.value), setting)
    assert (settings.get("X10ARRAY_GRAPH_LIMIT"), settings.get("X10ARRAY_CONV_LOWERING")) == before


def test_overlapping_overrides_restore_in_any_order(restored):
    # two blocks exited in the order they were entered (as two threads' blocks can be): the
    # second one's exit used to restore the first one's value for good
    before = settings.get("X10ARRAY_GRAPH_LIMIT")
    first, second = settings.override(X10ARRAY_GRAPH_LIMIT=5), settings.override(X10ARRAY_GRAPH_LIMIT=6)
    first.__enter__()
    second.__enter__()
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 6
    first.__exit__(None, None, None)
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 6  # the newest open block's value
    second.__exit__(None, None, None)
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == before
    # and the other way round, with a second setting only one block changes
    first = settings.override(X10ARRAY_GRAPH_LIMIT=5, X10ARRAY_DONATE=False)
    second = settings.override(X10ARRAY_GRAPH_LIMIT=6)
    first.__enter__()
    second.__enter__()
    second.__exit__(None, None, None)
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == 5 and settings.get("X10ARRAY_DONATE") is False
    first.__exit__(None, None, None)
    assert settings.get("X10ARRAY_GRAPH_LIMIT") == before and settings.get("X10ARRAY_DONATE") is True


def test_overrides_from_many_threads_leave_every_value_as_it_was(restored):
    import random
    import threading
    import time

    names = ["X10ARRAY_GRAPH_LIMIT", "X10ARRAY_CACHE_SIZE", "X10ARRAY_COMPILE_PAYBACK"]
    before = {name: settings.get(name) for name in names}
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            for i in range(200):
                name = rng.choice(names)
                with settings.override(**{name: 1000 + seed * 1000 + i}):
                    assert settings.get(name) >= 1000  # some open block's value
                    if rng.random() < 0.2:
                        time.sleep(0.0005)
        except BaseException as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert {name: settings.get(name) for name in names} == before


# --- unknown names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: settings.get("X10ARRAY_NO_SUCH"),
        lambda: settings.set("X10ARRAY_NO_SUCH", 1),
        lambda: settings.override(X10ARRAY_NO_SUCH=1).__enter__(),
        lambda: settings.get("CACHE_SIZE"),
    ],
    ids=["get", "set", "override", "unprefixed"],
)
def test_unknown_name_lists_the_settings(call: Any):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "no setting" in message, message
    for name in settings.SETTINGS:
        assert name in message, f"{name} missing from: {message}"


# --- completeness: the source, the docs -----------------------------------------------------


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_variable_in_the_source_is_declared():
    undeclared = [
        f"{path.relative_to(ROOT)}:{n}: {name}"
        for path in _sources()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        for name in NAME.findall(line)
        if name not in settings.SETTINGS
    ]
    assert not undeclared, "X10ARRAY_ names not declared in _core/settings.py:\n" + "\n".join(undeclared)


def test_every_declared_setting_is_used():
    used = {name for path in _sources() if path != SETTINGS_MODULE for name in NAME.findall(path.read_text())}
    assert set(settings.SETTINGS) <= used, f"declared but never read: {sorted(set(settings.SETTINGS) - used)}"


def _environment_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each read of the process environment: `os.environ...`, `environ`
    imported from os, `os.getenv(...)`."""
    readers = ("environ", "getenv", "environb", "getenvb")
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "os"
        for alias in node.names
        if alias.name in readers
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in readers:
            yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Name) and node.id in imported:
            yield node.lineno, node.id


def test_no_module_reads_the_environment_for_its_own_variable():
    """Only _core/settings.py reads X10ARRAY_* variables; any other environment read in the
    package must be of a literal, foreign variable (none today)."""
    offenders = []
    for path in _sources():
        if path == SETTINGS_MODULE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        lines = path.read_text().splitlines()
        for lineno, what in _environment_reads(tree):
            line = lines[lineno - 1]
            literals = re.findall(r"""["']([A-Z0-9_]+)["']""", line)
            if not literals or any(name.startswith("X10ARRAY_") for name in literals):
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {what}: {line.strip()}")
    assert not offenders, "environment read outside _core/settings.py:\n" + "\n".join(offenders)


def test_the_environment_check_can_fail():
    bad = textwrap.dedent(
        """
        import os
        from os import environ as env, getenv
        LIMIT = int(os.environ.get("X10ARRAY_GRAPH_LIMIT", 5))
        DONATE = getenv("X10ARRAY_DONATE")
        LOG = env["X10ARRAY_LOG_COMPILES"]
        HOME = os.path.expanduser("~")
        """
    )
    assert sorted(line for line, _ in _environment_reads(ast.parse(bad))) == [4, 5, 6]


def test_docs_name_only_declared_variables():
    """Every X10ARRAY_ name in the docs is a setting, or one of the test suite's own variables."""
    test_variables = {name for path in (ROOT / "tests").glob("*.py") for name in NAME.findall(path.read_text())}
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("*/README.md"))]
    unknown = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in docs
        for name in sorted(set(NAME.findall(path.read_text())))
        if name not in settings.SETTINGS and name not in test_variables
    ]
    assert not unknown, "undeclared X10ARRAY_ variables in the docs:\n" + "\n".join(unknown)


def _readme_table() -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("### Environment variables")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return "\n".join(rows)


def test_readme_table_is_the_settings_table():
    """README.md's table of variables is exactly `settings.table()` (paste its output there)."""
    assert _readme_table() == settings.table(), (
        "README.md's table differs from settings.table(); replace it with the output of\n"
        "python -c 'from x10array.extend import settings; print(settings.table())'"
    )


def test_settings_table_has_one_row_per_setting():
    rows = settings.table().splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(settings.SETTINGS)
    for row, s in zip(rows, settings.SETTINGS.values(), strict=True):
        assert s.allowed() in row and s.meaning in row


def test_a_path_setting_can_be_unset(restored):
    settings.set("X10ARRAY_DATA_DIR", Path("/tmp/x10"))
    assert settings.get("X10ARRAY_DATA_DIR") == "/tmp/x10"
    with settings.override(X10ARRAY_DATA_DIR=None):
        assert settings.get("X10ARRAY_DATA_DIR") is None
    assert settings.get("X10ARRAY_DATA_DIR") == "/tmp/x10"
    settings.set("X10ARRAY_DATA_DIR", "")
    assert settings.get("X10ARRAY_DATA_DIR") is None


@pytest.mark.parametrize("address", ["host0", "host0:", "host0:70000"])
def test_a_bad_coordinator_argument_is_refused_by_initialize(address):
    # initialize(coordinator_address="host0") reached jax's bare IndexError (only the setting was checked)
    env = {k: v for k, v in os.environ.items() if not k.startswith("X10ARRAY_")}
    code = f"from x10array import distributed\ndistributed.initialize({address!r}, 2, 0)"
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT), "X10ARRAY_COMPILE_CACHE_DIR": "0"},
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1, proc.stderr
    assert last.startswith("ValueError: initialize: coordinator_address must be 'host:port'"), proc.stderr
