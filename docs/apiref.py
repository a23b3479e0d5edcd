"""The API reference of the documentation site, generated from a list of modules.

`MODULES` names every public module of x10array with a title. `write(directory)` writes one
page per importable module (an `autosummary` table of each of its public names, whose pages
Sphinx generates) and an index; a module that cannot be imported (an optional part not in this
checkout) is left out of the site, and the index says so. `docs/conf.py` calls `write` at the
start of every build; `tests/test_docs.py` checks that every public name of every module is in
the pages, and that every public module of the package is in `MODULES`.

The public names of a module: its `__all__`, else its names without a leading underscore that
are not modules; for the namespace, also the standard's `__array_namespace_info__` and
`__array_api_version__`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import types
from pathlib import Path
from typing import Any

# (module, title, one line on what it is): the order of the reference's pages
MODULES: list[tuple[str, str, str]] = [
    ("x10array", "The namespace", "the Array API standard's functions, constants and dtypes, and x10array's additions"),
    ("x10array.linalg", "linalg", "the standard's linear algebra extension"),
    ("x10array.fft", "fft", "the standard's Fourier transform extension"),
    ("x10array.autodiff", "autodiff", "reverse-mode derivatives of code written against any conforming namespace"),
    ("x10array.nn", "nn", "layers, activations, losses and the learning phase, as pytrees"),
    ("x10array.nn.functional", "nn.functional", "the functions behind the layers"),
    ("x10array.optim", "optim", "SGD, Adam and AdamW as init/update pairs over pytrees"),
    ("x10array.datasets", "datasets", "MNIST, read from checked IDX files"),
    ("x10array.checkpoint", "checkpoint", "pytrees of arrays to and from safetensors files"),
    ("x10array.debug", "debug", "the recorded graph as text, StableHLO and DOT; cost and memory analyses"),
    ("x10array.distributed", "distributed", "meshes of devices and sharded arrays"),
    ("x10array.cubed", "cubed", "x10array as cubed's chunk namespace: what cubed calls beyond the standard"),
    ("x10array.extend", "extend", "primitives of your own, devices, settings, pytrees: the extension API"),
    ("x10array.extend.settings", "extend.settings", "every X10ARRAY_* setting: read, change, override in a block"),
]

# Modules that hold no public API of their own (documented as pages, not in the reference).
# (command-line programs: `python -m x10array.distributed.launch`, `python -m x10array.examples.mnist`)
NOT_REFERENCED = {
    "x10array.examples", "x10array.examples.demo", "x10array.examples.mnist", "x10array.distributed.launch",
}  # fmt: skip

NAMESPACE_DUNDERS = ("__array_namespace_info__", "__array_api_version__")

# The standard's pages: each function of the namespace, linalg and fft, and each constant, has one.
SPEC = "https://data-apis.org/array-api/2025.12/API_specification/"
_NAMES_FILE = Path(__file__).resolve().parents[1] / "tests" / "_standard_names.py"  # transcribed from the spec

# Objects that are neither functions nor classes, whose value says too little on its own.
OBJECT_DOCS = {
    "x10array.autodiff.RULES": "The derivative rule of each primitive, by name: a dict that `defvjp` adds to.",
    "x10array.extend.settings.SETTINGS": "Every `X10ARRAY_*` setting, by name: its `Setting` (kind, default, meaning).",
    "x10array.__array_api_version__": "The version of the Array API standard that x10array implements.",
}


def _standard() -> dict[str, Any]:
    """The standard's names (tests/_standard_names.py), or nothing outside a checkout."""
    if not _NAMES_FILE.is_file():
        return {}
    spec = importlib.util.spec_from_file_location("_standard_names", _NAMES_FILE)
    assert spec is not None and spec.loader is not None
    names = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(names)
    return vars(names)


def standard_url(module: str, name: str) -> str | None:
    """The standard's page of `module.name`, where the standard defines it."""
    names = _standard()
    if not names:
        return None
    if module == "x10array":
        if name in names["CHAPTERS"].get("constants", ()):
            return f"{SPEC}generated/array_api.constants.{name}.html"
        if name in names["DTYPES"]:
            return f"{SPEC}data_types.html"
        if name in ("__array_namespace_info__", "__array_api_version__"):
            return f"{SPEC}inspection.html" if name == "__array_namespace_info__" else f"{SPEC}index.html"
        if any(name in chapter for chapter in names["CHAPTERS"].values()):
            return f"{SPEC}generated/array_api.{name}.html"
    if module == "x10array.linalg" and name in names["LINALG"]:
        return f"{SPEC}generated/array_api.linalg.{name}.html"
    if module == "x10array.fft" and name in names["FFT"]:
        return f"{SPEC}generated/array_api.fft.{name}.html"
    return None


def summary(module: types.ModuleType, name: str) -> str:
    """The one line a reference table shows for `module.name`: the first paragraph's first line
    of its own docstring (a class's, not a base class's), else what OBJECT_DOCS says, else, for a
    constant, its type and value; empty where there is none (tests/test_docs.py forbids that)."""
    obj = getattr(module, name)
    qualified = f"{module.__name__}.{name}"
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__") or ""
    elif callable(obj):
        doc = obj.__doc__ or ""
    else:
        known = OBJECT_DOCS.get(qualified) or OBJECT_DOCS.get(f"{_listed_as(module)}.{name}")
        if known:
            return known
        value = repr(obj)
        return f"A {type(obj).__name__}: {value}." if len(value) <= 100 else ""
    lines = inspect.cleandoc(doc).strip().splitlines()
    return lines[0].strip() if lines else ""


def _listed_as(module: types.ModuleType) -> str:
    """The name MODULES lists `module` under (`x10array.extend.settings` is `x10array._core.settings`)."""
    for name, _, _ in MODULES:
        try:
            if _module(name) is module:
                return name
        except ImportError:
            continue
    return module.__name__


def public_names(module: types.ModuleType) -> list[str]:
    """The public names of a module, in a stable order."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)
        ]
    names = [n for n in names if not isinstance(getattr(module, n), types.ModuleType)]
    if module.__name__ == "x10array":
        names = [*names, *NAMESPACE_DUNDERS]
    return sorted(dict.fromkeys(names), key=lambda n: (n.lower(), n))


def _module(name: str) -> types.ModuleType:
    """The module `name`, imported; or an attribute that is a module (`x10array.extend.settings`
    is `x10array._core.settings`, re-exported). ImportError when there is none."""
    try:
        return importlib.import_module(name)
    except ImportError:
        parent, _, attr = name.rpartition(".")
        module = getattr(importlib.import_module(parent), attr, None) if parent else None
        if not isinstance(module, types.ModuleType):
            raise
        return module


def importable() -> list[tuple[str, types.ModuleType, str, str]]:
    """(name as listed, module, title, about) for each module of MODULES that imports here."""
    out = []
    for name, title, about in MODULES:
        try:
            module = _module(name)
        except ImportError:
            continue
        out.append((name, module, title, about))
    return out


def _kind(obj: Any) -> str:
    if isinstance(obj, type):
        return "classes"
    if callable(obj):
        return "functions"
    return "constants and objects"


def page(name: str, module: types.ModuleType, title: str, about: str) -> str:
    """The reST page of one module: what it is and an autosummary table per kind of name (each
    entry gets a page that Sphinx generates from its docstring)."""
    heading = f"``{name}``: {title[0].lower()}{title[1:]}"
    lines = [f".. _ref-{name}:", "", heading, "=" * len(heading), "", f"{about[0].upper()}{about[1:]}.", ""]
    lines += [f".. module:: {name}", ""]  # a link target: `x10array.nn` in a docstring links here
    groups: dict[str, list[str]] = {}
    for name in public_names(module):
        groups.setdefault(_kind(getattr(module, name)), []).append(name)
    for kind in ("functions", "classes", "constants and objects"):
        if kind not in groups:
            continue
        lines += [kind.capitalize(), "-" * len(kind), "", ".. autosummary::", "   :toctree: generated/", ""]
        lines += [f"   {name}" for name in groups[kind]]
        lines.append("")
    return "\n".join(lines)


def write(directory: str | Path) -> list[str]:
    """Write the reference's pages into `directory` (index.rst and one page per importable
    module); returns the modules written. Files are rewritten only when their text changes."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written, pages = [], []
    for name, module, title, about in importable():
        stem = name.replace(".", "-")
        _put(directory / f"{stem}.rst", page(name, module, title, about))
        pages.append(stem)
        written.append(name)
    missing = [name for name, _, _ in MODULES if name not in written]
    index = [
        "API reference", "=============", "",
        "Every public name of x10array, by module, generated from the modules at build time (``docs/apiref.py``).",
        "The guides explain how the pieces fit; these pages give each name's signature and docstring.", "",
    ]  # fmt: skip
    if missing:
        index += [f"Not in this build (not importable here): {', '.join(f'``{m}``' for m in missing)}.", ""]
    index += [".. toctree::", "   :maxdepth: 1", "", *(f"   {p}" for p in pages), ""]
    _put(directory / "index.rst", "\n".join(index))
    return written


def _put(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
