"""Backticked names become links to their reference entries (a Sphinx extension of docs/conf.py).

Docstrings and the Markdown pages write code as `name` (docs/conf.py's `default_role` is
`literal`; MyST's code spans are literals too). After every cross-reference is resolved, a
literal whose whole text is a documented Python name is made a link to that name's entry, shown
as the same code: `lazy_barrier`, `x10array.compile`, `xp.metrics()`, `settings.override`,
`autodiff.grad`, `float32`, `Array.shape`. Anything else stays code as written: `xp.sum(x,
axis=0)`, `x.shape`, `fn`, `metrics().captured_replays`, `X10ARRAY_LAZY`.

How a text is looked up, first match wins (a trailing `()` is allowed and kept; `xp.` reads as
`x10array.`):

1. inside an object's entry: a member of its class, then a name of its module (`grad` on an
   `x10array.autodiff` page), where the text is not one of the entry's parameters (`clip`'s
   `min` is its argument, not `x10array.min`);
2. the name as written, or under `x10array.` (`lazy_barrier`, `nn.Linear`, `float32`);
3. a dotted text (`settings.override`, `Array.shape`): the one documented name that ends with
   it at a dot; a bare one (`grad`, `NamedSharding`, `svd`): the one function, class or module
   of a public module named so, where no class has a member of that name (`to_device` is
   `Array.to_device` as often as `nn.to_device`). None, or several entries: not a link.

Never linked: `xp` alone (it stands for any namespace), and a bare name of Python's builtins
(`bool()`, `sum`, `max`, `set` are Python's as often as x10array's: write `xp.sum` for the
namespace's).

A literal in a heading, a signature or a link is left alone, as is a name on its own entry's
page. Nothing here warns: a text that is no name is simply code.
"""

from __future__ import annotations

import builtins
import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.nodes import make_refnode

NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?")
ALIASES = {"xp": "x10array"}  # how the docs import the namespace (`import x10array as xp`)
ROOT = "x10array"
BUILTINS = frozenset(dir(builtins)) - {"compile"}  # `compile` in these docs is x10array.compile
Target = tuple[str, str]  # (docname, node id)


def _context(node: nodes.Node) -> tuple[list[str], set[str], set[str]]:
    """(scopes to try first, parameter names, ids of the entries) of the objects `node` is in."""
    scopes: list[str] = []
    params: set[str] = set()
    ids: set[str] = set()
    parent = node.parent
    while parent is not None:
        if isinstance(parent, addnodes.desc):
            for sig in parent.children:  # an entry's signatures are its first children
                if not isinstance(sig, addnodes.desc_signature):
                    continue
                ids.update(sig.get("ids", ()))
                module, cls = sig.get("module") or "", sig.get("class") or ""
                if parent.get("objtype") == "class":
                    cls = sig.get("fullname") or cls
                for scope in (f"{module}.{cls}" if cls else "", module):
                    if scope and scope not in scopes:
                        scopes.append(scope)
                for param in sig.findall(addnodes.desc_parameter):
                    names = list(param.findall(addnodes.desc_sig_name))
                    if names:
                        params.add(names[0].astext())
        parent = parent.parent
    return scopes, params, ids


class CodeLinks(SphinxPostTransform):
    """Make each literal that names a documented object a link to its entry."""

    default_priority = 20  # after the cross-references are resolved (10): links are left alone

    def run(self, **kwargs: Any) -> None:
        domain: Any = self.env.get_domain("py")
        objects: dict[str, Any] = domain.objects
        modules: dict[str, Any] = domain.modules
        targets = {name: (entry.docname, entry.node_id) for name, entry in objects.items()}
        targets.update({name: (entry.docname, entry.node_id) for name, entry in modules.items()})
        by_last: dict[str, list[str]] = {}  # the documented names, by their last part
        for full in targets:
            by_last.setdefault(full.rpartition(".")[2], []).append(full)
        for node in list(self.document.findall(nodes.literal)):
            text = node.astext()
            if not NAME.fullmatch(text) or self._skipped(node):
                continue
            scopes, params, ids = _context(node)
            name = text.removesuffix("()")
            if "." not in name and name in params:
                continue
            target = self._lookup(name, scopes, targets, objects, by_last)
            if target is None or target[1] in ids:
                continue
            docname, node_id = target
            code = nodes.literal(text, text, classes=[*node["classes"], "xref", "py", "py-obj"])
            link = make_refnode(
                self.app.builder, self.env.docname, docname, node_id, code, node_id.removeprefix("module-")
            )
            node.replace_self(link)

    @staticmethod
    def _skipped(node: nodes.Node) -> bool:
        parent = node.parent
        while parent is not None:
            if isinstance(parent, (nodes.reference, addnodes.pending_xref, nodes.title, addnodes.desc_signature)):
                return True
            parent = parent.parent
        return False

    @staticmethod
    def _lookup(
        name: str, scopes: list[str], targets: dict[str, Target], objects: Any, by_last: dict[str, list[str]]
    ) -> Target | None:
        head, _, rest = name.partition(".")
        if head in ALIASES:
            if not rest:
                return None  # `xp` alone is any namespace (autodiff's rules are written with it)
            name = f"{ALIASES[head]}.{rest}"
        elif not rest and name in BUILTINS:
            return None  # `bool()`, `sum`, `max`: Python's, as often as the namespace's (write `xp.sum`)
        for candidate in [*(f"{scope}.{name}" for scope in scopes), name, f"{ROOT}.{name}"]:
            if candidate in targets:
                return targets[candidate]
        ending = [full for full in by_last.get(name.rpartition(".")[2], ()) if full.endswith(f".{name}")]
        found = {targets[full] for full in ending}
        owners = {objects[owner].objtype for owner in (full.rpartition(".")[0] for full in ending) if owner in objects}
        if not rest and owners - {"module"}:
            return None  # a bare name that is also a class's member (`to_device`, `device`) is ambiguous
        return found.pop() if len(found) == 1 else None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(CodeLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
