"""The documentation site (docs/conf.py, built with `sphinx-build -W` by .ci/docs).

Without building it (Sphinx is the `docs` extra, not a test dependency): the generated API
reference names every public name of every public module, every public module of the package
is in the reference's module list, and every page of docs/ is in the site's table of contents.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
import apiref  # noqa: E402


def _entries(text: str) -> list[str]:
    """The names listed in the autosummary tables of a generated reference page."""
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and line.startswith("   ") and not line.strip().startswith(":"):
            names.append(line.strip())
        elif inside and line and not line.startswith("   "):
            inside = False
    return [n for n in names if n]


def _public_modules() -> list[str]:
    """Every module of the package with no underscore in its dotted name."""
    found = []
    for path in (ROOT / "x10array").rglob("*.py"):  # read from the files: importing runs registrations
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return found


def _defined_public_names(module: types.ModuleType) -> set[str]:
    """What a reader of `dir(module)` takes for its API. Without `__all__`: every name without
    an underscore that is not a module. With `__all__`: the functions and classes the module
    itself defines without an underscore (one missing from `__all__` is a mistake to catch);
    names it imports for its own use (`Any`, `np`, `autodiff.Tracer`) are not its API."""
    out = set()
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_") or isinstance(obj, types.ModuleType) or type(obj).__module__ == "__future__":
            continue
        if not hasattr(module, "__all__"):
            out.add(name)
        elif (isinstance(obj, type) or callable(obj)) and getattr(obj, "__module__", None) == module.__name__:
            out.add(name)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    apiref.write(out)
    return out


def test_every_public_name_of_every_module_is_in_the_reference(reference: Path) -> None:
    written = {name: module for name, module, _, _ in apiref.importable()}
    assert {"x10array", "x10array.linalg", "x10array.nn", "x10array.checkpoint", "x10array.extend"} <= set(written)
    for name, module in written.items():
        page = reference / f"{name.replace('.', '-')}.rst"
        entries = _entries(page.read_text())
        assert len(entries) == len(set(entries)), f"{name}: a name listed twice"
        exported = set(getattr(module, "__all__", ()))
        submodules = {n for n in exported if isinstance(getattr(module, n), types.ModuleType)}
        assert {f"{name}.{n}" for n in submodules} <= set(written), f"{name}: a submodule in __all__ has no page"
        wanted = (exported - submodules) | _defined_public_names(module)
        missing = wanted - set(entries)
        assert not missing, f"{name}: public names missing from the API reference: {sorted(missing)}"
        for entry in entries:
            assert hasattr(module, entry), f"{name}: the reference lists {entry}, which the module lacks"
    namespace = _entries((reference / "x10array.rst").read_text())
    for name in ("asarray", "Array", "Device", "lazy_barrier", "float32", "pi", "__array_namespace_info__"):
        assert name in namespace, name
    assert len(namespace) > 150


def test_every_public_module_is_in_the_module_list() -> None:
    listed = {name for name, _, _ in apiref.MODULES}
    unlisted = sorted(set(_public_modules()) - listed - apiref.NOT_REFERENCED)
    assert not unlisted, f"public modules missing from docs/apiref.py's MODULES: {unlisted}"
    assert "x10array.debug" in listed


def test_a_module_that_cannot_be_imported_is_left_out_and_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(apiref, "MODULES", [*apiref.MODULES[:2], ("x10array.no_such_module", "none", "absent")])
    assert apiref.write(tmp_path) == ["x10array", "x10array.linalg"]
    assert "``x10array.no_such_module``" in (tmp_path / "index.rst").read_text()


def test_the_checker_sees_a_missing_name(tmp_path: Path, monkeypatch) -> None:
    real = apiref.public_names
    monkeypatch.setattr(apiref, "public_names", lambda m: [n for n in real(m) if n != "save"])
    apiref.write(tmp_path)
    entries = _entries((tmp_path / "x10array-checkpoint.rst").read_text())
    assert "save" not in entries and "load" in entries


def _toctree_entries() -> set[str]:
    found = set()
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts:
            continue
        for block in re.findall(r"```\{toctree\}\n(.*?)```", page.read_text(), re.S):
            for line in block.splitlines():
                if line.strip() and not line.startswith(":"):
                    found.add(str((page.parent / line.strip()).relative_to(DOCS)))
    return found


def test_every_page_is_in_the_table_of_contents() -> None:
    pages = {
        str(p.relative_to(DOCS).with_suffix(""))
        for p in DOCS.rglob("*.md")
        if "_build" not in p.parts and p.name != "index.md"
    }
    entries = _toctree_entries()
    assert not pages - entries, f"pages of docs/ in no toctree of docs/index.md: {sorted(pages - entries)}"
    assert not entries - pages - {"reference/index"}, sorted(entries - pages)


def test_the_mnist_tutorial_shows_the_plot_figure() -> None:
    text = (DOCS / "tutorial-mnist.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images, "docs/tutorial-mnist.md shows no figure"
    for image in images:
        path = DOCS / image
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", image
        assert path.stat().st_size < 200_000, f"{image}: keep the committed figure small"


def test_the_docs_extra_and_check_are_declared() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = {"sphinx", "pydata-sphinx-theme", "myst-parser"}
    assert wanted <= {re.split(r"[<>=!~ \[]", r)[0] for r in extras["docs"]}
    script = (ROOT / ".ci" / "docs").read_text()
    assert "sphinx" in script and " -W" in script
    assert ".ci/docs" in (ROOT / ".ci" / "run").read_text()
    assert "sphinx-build" in (ROOT / "README.md").read_text() or ".ci/docs" in (ROOT / "README.md").read_text()


def _docstrings() -> list[tuple[str, str]]:
    """(qualified name, docstring) of every public function and class of the reference and of
    the members Sphinx shows on a class's page."""
    import inspect

    out = []
    for name, module, _, _ in apiref.importable():
        for entry in apiref.public_names(module):
            obj = getattr(module, entry)
            if not (isinstance(obj, type) or callable(obj)):
                continue  # constants: docs/conf.py shows their value, not their type's docstring
            doc = inspect.cleandoc(obj.__doc__ or "")  # its own, as Sphinx shows a class (not Enum's)
            if doc and getattr(obj, "__module__", "").startswith("x10array"):
                out.append((f"{name}.{entry}", doc))
            if isinstance(obj, type) and obj.__module__.startswith("x10array"):
                for member, value in vars(obj).items():
                    doc = inspect.getdoc(value) if not member.startswith("_") or member == "__call__" else None
                    if doc and doc != inspect.getdoc(type(value)):
                        out.append((f"{name}.{entry}.{member}", doc))
    return out


def test_every_docstring_is_restructured_text_that_sphinx_accepts() -> None:
    """What `sphinx-build -W` (.ci/docs) would refuse, found without Sphinx: a docstring that
    reST cannot parse cleanly (`|x|` is a substitution, `*args` opens an emphasis, an indented
    line after a paragraph is an unexpected block quote)."""
    docutils_core = pytest.importorskip("docutils.core")
    import io

    from docutils import nodes
    from docutils.parsers.rst import roles

    def sphinx_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: ANN001, ANN202
        return [nodes.literal(rawtext, text)], []

    for role in ("class", "func", "meth", "attr", "mod", "obj", "data", "exc", "ref", "doc", "term", "any"):
        roles.register_local_role(role, sphinx_role)  # Sphinx's cross-reference roles, valid there
        roles.register_local_role(f"py:{role}", sphinx_role)

    problems = []
    for name, doc in _docstrings():
        stream = io.StringIO()
        docutils_core.publish_doctree(
            ".. default-role:: literal\n\n" + doc,  # as docs/conf.py's default_role
            settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream},
        )
        if stream.getvalue():
            problems.append(f"{name}: {stream.getvalue().strip()}")
    assert len(_docstrings()) > 200
    assert not problems, "docstrings Sphinx would warn about (the docs build fails):\n" + "\n".join(problems)
