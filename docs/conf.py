"""Sphinx configuration of x10array's documentation site.

Build (the `docs` extra installs Sphinx, the pydata theme and MyST):

    pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html

The Markdown pages of docs/ are the site's pages as they are (MyST); the API reference under
docs/reference/ is generated from the modules at the start of each build (docs/apiref.py), and
Sphinx's autosummary then writes a page per public name from its docstring and signature.
Code written in backticks that names a documented object links to its entry (docs/codelinks.py).
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's x10array, before any installed copy
sys.path.insert(0, str(HERE))

import apiref  # noqa: E402

apiref.write(HERE / "reference")  # before autosummary reads the pages (it does so when the builder starts)
for _name, _module, _, _ in apiref.importable():
    # x10array.extend.settings is a module re-exported as an attribute: autodoc imports by name
    sys.modules.setdefault(_name, _module)

project = "x10array"
author = "the x10array authors"
copyright = "the x10array authors, Apache-2.0"  # noqa: A001 (Sphinx's name)
try:
    release = metadata.version("x10array")
except metadata.PackageNotFoundError:
    release = "0.1.0"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "codelinks"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: `#heading` anchors in links between pages (eager-and-lazy.md#mutation)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# Docstrings use `name` for code, as the Markdown pages do; docs/codelinks.py makes each such
# literal that names a documented object (`lazy_barrier`, `settings.override`) a link to it.
default_role = "literal"
autosummary_generate = True
templates_path = ["_templates"]
autosummary_ignore_module_all = False
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
add_module_names = False

html_theme = "pydata_sphinx_theme"
html_title = "x10array"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    # the top bar: the API reference (first in docs/index.md) and the tutorial, the
    # rest under "More" (all of them wrapped the bar onto three lines; the guides' titles are long)
    "header_links_before_dropdown": 2,
    "navbar_persistent": ["search-button"],  # the search as an icon: its field wrapped the bar to a second row
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False


def _value_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant or object (`pi`, `float32`, `autodiff.RULES`) has no docstring of its own: its
    page would show its type's (float's "Convert a string or number..."). Show its value instead,
    and its type's docstring only where the type is x10array's."""
    origin = getattr(obj, "__module__", None) if isinstance(obj, type) or callable(obj) else None
    if isinstance(origin, str) and origin.split(".")[0] not in ("x10array", "builtins"):
        # re-exported from another library (distributed.P is jax's PartitionSpec): its own
        # documentation is the reference; its docstring is not x10array's to check under -W
        lines[:] = [f"``{origin}.{getattr(obj, '__qualname__', name)}``, re-exported: see its library's documentation."]
        return
    module, _, short = name.rpartition(".")
    url = apiref.standard_url(module, short)
    # the standard's function or constant: its page is the full specification
    link = ["", f"Specified by the Array API standard: `{short} in the standard <{url}>`__."] if url else []
    if what not in ("data", "attribute") or isinstance(obj, type) or callable(obj):
        lines += link
        return
    if getattr(obj, "__doc__", None) != getattr(type(obj), "__doc__", None):
        lines += link
        return  # a docstring of its own (a module-level `#:` comment)
    own = type(obj).__module__.startswith("x10array")
    value = repr(obj)
    text = [f"A ``{type(obj).__name__}``" + (f": ``{value}``." if len(value) <= 100 else ".")]
    if name in apiref.OBJECT_DOCS:
        text = [apiref.OBJECT_DOCS[name], "", *text]
    lines[:] = text + ([""] + lines if own else []) + link


class RepositoryFiles(SphinxPostTransform):
    """A link from a page to a file of the repository outside docs/ (`../benchmarks/README.md`)
    has no page on the site: it is shown as the file's path in the repository. A link to a
    file that does not exist is still an error (MyST's xref_missing, fatal under -W)."""

    default_priority = 8  # before MyST resolves its links (9)

    def run(self, **kwargs: Any) -> None:
        root = HERE.parent
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or node.get("refdomain") != "doc":
                continue
            target = str(node["reftarget"])
            if target in self.env.all_docs:
                continue
            path = Path(target).with_suffix(".md")
            if not path.is_absolute():
                path = (HERE / self.env.doc2path(self.env.docname).parent / path).resolve()
            if path.is_file() and root in path.parents and HERE not in path.parents:
                shown = str(path.relative_to(root))
                node.replace_self(nodes.literal(shown, shown))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _value_docstring)
    app.add_post_transform(RepositoryFiles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
