"""The import layers of x10array (docs/architecture.md), checked on the source's AST.

Every import of every module counts: module level, inside functions, under `TYPE_CHECKING`,
and the dynamic forms the walk can read (`importlib.import_module`, `__import__` and
`sys.modules[...]` with a literal name). Relative and absolute imports are resolved to module
names. The layers, bottom up:

- `x10array._core`: only `_core` (jax only inside functions);
- `x10array._api`: `_core` and `_api`;
- `x10array._backends.eager`: `_core`; `x10array._backends.lazy`: `_core` and the stages
  before its own (`LAZY_STAGES`, the order an operation flows through them);
- the namespace (`x10array`, `linalg`, `fft`, `extend`, the `distributed` package;
  `_backends/__init__` registers the two backends): everything below;
- `autodiff`, `nn`, `optim`, `datasets`, `checkpoint`, `examples`: the public namespace, `x10array.extend`,
  the public subpackages, and their own package's modules.

And the module-level import graph has no cycle.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "x10array"

PUBLIC = (
    "x10array.linalg", "x10array.fft", "x10array.autodiff", "x10array.nn", "x10array.optim", "x10array.datasets",
    "x10array.checkpoint",
)  # fmt: skip
UPPER = (
    "x10array.autodiff", "x10array.nn", "x10array.optim", "x10array.datasets", "x10array.checkpoint",
    "x10array.examples", "x10array.cubed",
)  # fmt: skip
NAMESPACE = (
    "x10array", "x10array.linalg", "x10array.fft", "x10array.extend", "x10array._capture", "x10array.debug",
    "x10array.distributed",
)  # fmt: skip
BASE_EXTERNAL = frozenset(sys.stdlib_module_names) | {"numpy"}
LOWER_EXTERNAL = BASE_EXTERNAL | {"jax", "jaxlib", "ml_dtypes"}
LAZY = "x10array._backends.lazy"
# each imports only those before it
LAZY_STAGES = (
    "runtime", "shapes", "graph", "trace", "interpreter", "spmd", "placement", "tiering", "lowering", "program",
    "plans", "executor", "capture", "inspect",
)  # fmt: skip


def _within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@dataclass(frozen=True)
class Import:
    """One import statement (or dynamic import) of a module, resolved."""

    line: int
    text: str  # the statement as written
    target: str  # the module it loads
    local: bool  # inside a function
    type_only: bool  # under `if TYPE_CHECKING:`


@dataclass(frozen=True)
class Layer:
    name: str
    rule: str  # in words, for messages
    internal: tuple[str, ...]  # x10array packages/modules it may import (with their submodules)
    external: frozenset[str]

    def allows(self, module: str, target: str) -> bool:
        if not _within(target, "x10array"):
            return target.partition(".")[0] in self.external
        return _within(target, *self.internal)


def _upper_allows(module: str, target: str) -> bool:
    """The upper layer: the namespace, extend, public subpackages (no underscore module of
    them) and the module's own package (underscore modules included)."""
    own = next(p for p in UPPER if _within(module, p))
    if _within(target, own) or target in ("x10array", "x10array.extend"):
        return True
    return _within(target, *PUBLIC) and not any(part.startswith("_") for part in target.split(".")[1:])


class UpperLayer(Layer):
    def allows(self, module: str, target: str) -> bool:
        if not _within(target, "x10array"):
            top = target.partition(".")[0]
            return top in self.external or (top == "matplotlib" and _within(module, "x10array.examples"))
        return _upper_allows(module, target)


LAYERS = [
    Layer("_core", "_core imports only _core (and the stdlib, numpy, jax)", ("x10array._core",), LOWER_EXTERNAL),
    Layer("_api", "_api imports _core and _api only: never a backend or the namespace",
          ("x10array._core", "x10array._api"), LOWER_EXTERNAL),
    Layer("_backends.eager", "the eager backend imports _core only: never _api or the lazy backend",
          ("x10array._core", "x10array._backends.eager"), LOWER_EXTERNAL),
    Layer("_backends.lazy", "the lazy backend imports _core and its own stages only: never _api or the eager backend",
          ("x10array._core", "x10array._backends.lazy"), LOWER_EXTERNAL),
    Layer("_backends", "_backends/__init__ imports the two backends (so they register) and _core",
          ("x10array._core", "x10array._backends.eager", "x10array._backends.lazy"), LOWER_EXTERNAL),
    Layer("namespace", "the namespace imports _core, _api, _backends and its own public modules, nothing above",
          ("x10array._core", "x10array._api", "x10array._backends", *NAMESPACE[1:]), LOWER_EXTERNAL),
    UpperLayer("upper", "autodiff, nn, optim, datasets, checkpoint and examples import only x10array, x10array.extend,"
               " the public subpackages and their own package: never an underscore module of x10array", (),
               BASE_EXTERNAL),
]  # fmt: skip


def layer_of(module: str) -> Layer | None:
    for prefix, layer in [
        ("x10array._core", LAYERS[0]),
        ("x10array._api", LAYERS[1]),
        ("x10array._backends.eager", LAYERS[2]),
        ("x10array._backends.lazy", LAYERS[3]),
    ]:
        if _within(module, prefix):
            return layer
    if module == "x10array._backends":
        return LAYERS[4]
    if module in NAMESPACE or _within(module, "x10array.distributed"):  # (the package and its launcher)
        return LAYERS[5]
    if _within(module, *UPPER):
        return LAYERS[6]
    return None


# --- reading the imports --------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve_from(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, local: bool = False, type_only: bool = False) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node with (inside a function, under TYPE_CHECKING)."""
    for child in ast.iter_child_nodes(node):
        child_local = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            yield child, local, type_only
            for stmt in child.body:
                yield stmt, local, True
                yield from _walk(stmt, local, True)
            for stmt in child.orelse:
                yield stmt, local, type_only
                yield from _walk(stmt, local, type_only)
            continue
        yield child, child_local, type_only
        yield from _walk(child, child_local, type_only)


def imports_of(
    module: str, source: str, *, is_package: bool, known: set[str] | frozenset[str] = frozenset()
) -> list[Import]:
    """The imports of a module's source, resolved to module names. `known`: the package's
    modules, to tell `from pkg import submodule` from `from pkg import name`."""
    found: list[Import] = []
    for node, local, type_only in _walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(line, f"import {alias.name}", alias.name, local, type_only))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, is_package, node.level, node.module)
            text = f"from {'.' * node.level}{node.module or ''} import {', '.join(a.name for a in node.names)}"
            targets = {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
            found += [Import(line, text, t, local, type_only) for t in sorted(targets)]
        elif isinstance(node, ast.Call):
            found += _dynamic(module, is_package, node, local, type_only)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "sys.modules":
            name = _literal(node.slice)
            if name is not None:
                found.append(Import(line, ast.unparse(node), name, local, type_only))
    return found


def _dynamic(module: str, is_package: bool, call: ast.Call, local: bool, type_only: bool) -> list[Import]:
    func = ast.unparse(call.func)
    text = ast.unparse(call)
    first = call.args[0] if call.args else None
    if func in ("importlib.import_module", "import_module"):
        name = _literal(first)
        if name is None:
            return [Import(call.lineno, text, "<dynamic>", local, type_only)]
        if name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            package = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords), None)
            if not (isinstance(package, ast.Name) and package.id in ("__package__", "__name__")) and not _literal(
                package
            ):
                return [Import(call.lineno, text, "<dynamic>", local, type_only)]
            anchor = _literal(package) or (module if is_package else module.rpartition(".")[0])
            name = _resolve_from(anchor, True, level, name.lstrip(".") or None)
        return [Import(call.lineno, text, name, local, type_only)]
    if func == "__import__":
        name = _literal(first)
        return [Import(call.lineno, text, name if name is not None else "<dynamic>", local, type_only)]
    if func == "sys.modules.get":
        name = _literal(first)
        return [] if name is None else [Import(call.lineno, text, name, local, type_only)]
    return []


# --- the checks -----------------------------------------------------------------------------


def violations(module: str, path: str, imports: list[Import]) -> list[str]:
    """One message per import that breaks the module's layer rule."""
    layer = layer_of(module)
    if layer is None:
        return [f"{path}: module {module} belongs to no layer (add it to tests/test_layers.py's LAYERS)"]
    out = []
    for imp in imports:
        where = f"{path}:{imp.line}: `{imp.text}`"
        if imp.target == "<dynamic>":
            out.append(f"{where}: a dynamic import the layer check cannot follow (use a literal module name)")
            continue
        if imp.target == module:
            continue
        kind = " (inside a function)" if imp.local else " (under TYPE_CHECKING)" if imp.type_only else ""
        if not layer.allows(module, imp.target):
            rule = layer.rule
            if layer.name == "upper" and imp.target.partition(".")[0] in ("jax", "jaxlib"):
                rule = "the upper layer imports no jax: kernels get their namespace through x10array.extend"
            out.append(f"{where}{kind} imports {imp.target}: {rule}")
        elif layer.name == "_backends.lazy" and module != LAZY and _within(imp.target, LAZY):
            out += _stage_order(module, imp.target, f"{where}{kind}")
        elif layer.name == "_core" and imp.target.partition(".")[0] in ("jax", "jaxlib") and not imp.local:
            if not imp.type_only:
                out.append(f"{where} imports {imp.target} at module level: _core imports jax only inside functions")
    return out


def _stage_order(module: str, target: str, where: str) -> list[str]:
    """A lazy stage imports only the stages before it (the package imports them all)."""
    stage = module.split(".")[3]
    if stage not in LAZY_STAGES:
        return [f"{where}: {module} is no stage of LAZY_STAGES in tests/test_layers.py (add it, in pipeline order)"]
    if target == LAZY:
        return [f"{where} imports {target}: a lazy stage imports the stages before it, not the package"]
    other = target.split(".")[3]
    if other in LAZY_STAGES and LAZY_STAGES.index(other) < LAZY_STAGES.index(stage):
        return []
    return [
        f"{where} imports {target}: the lazy stage {stage} imports only the stages before it"
        f" ({', '.join(LAZY_STAGES[: LAZY_STAGES.index(stage)]) or 'none'})"
    ]


def _read_all() -> dict[str, tuple[Path, list[Import]]]:
    modules = all_modules()
    known = set(modules)
    return {
        name: (path, imports_of(name, path.read_text(), is_package=path.name == "__init__.py", known=known))
        for name, path in modules.items()
    }


def _graph(read: dict[str, tuple[Path, list[Import]]]) -> dict[str, set[str]]:
    """Module-level imports between x10array's modules (what runs when a module is imported)."""
    return {
        name: {i.target for i in imports if not i.local and not i.type_only and i.target in read and i.target != name}
        for name, (_, imports) in read.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _cycle_message(component: list[str], graph: dict[str, set[str]], read: dict[str, tuple[Path, list[Import]]]) -> str:
    edges = []
    for a in component:
        path, imports = read[a]
        for imp in imports:
            if imp.target in component and imp.target in graph[a]:
                edges.append(f"  {path.relative_to(ROOT)}:{imp.line}: `{imp.text}` -> {imp.target}")
    return f"import cycle among {', '.join(component)}:\n" + "\n".join(edges)


# --- the tests ------------------------------------------------------------------------------


def test_every_module_keeps_its_layer():
    read = _read_all()
    assert len(read) > 40, f"found only {len(read)} modules under {PACKAGE}"
    failures = [
        message
        for name, (path, imports) in read.items()
        for message in violations(name, str(path.relative_to(ROOT)), imports)
    ]
    assert not failures, f"{len(failures)} import(s) break the layers:\n" + "\n".join(failures)


def test_module_level_imports_have_no_cycle():
    read = _read_all()
    graph = _graph(read)
    found = cycles(graph)
    assert not found, "\n".join(_cycle_message(c, graph, read) for c in found)


def test_importing_x10array_loads_no_module_in_a_cycle():
    """`python -c "import x10array"`: every x10array module it loads is one the walk knows,
    and none of them is in an import cycle."""
    code = "import sys, x10array; print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] == 'x10array')))"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    read = _read_all()
    assert loaded and loaded <= set(read), f"loaded modules the walk does not know: {sorted(loaded - set(read))}"
    in_cycles = {m for c in cycles(_graph(read)) for m in c}
    assert not loaded & in_cycles, f"`import x10array` loads modules in a cycle: {sorted(loaded & in_cycles)}"


# --- the checker can fail -------------------------------------------------------------------

KNOWN = {"x10array._api.creation", "x10array.autodiff._tracer", "x10array._core.array"}


def _check(module: str, source: str, *, is_package: bool = False) -> list[str]:
    imports = imports_of(module, textwrap.dedent(source), is_package=is_package, known=KNOWN | set(all_modules()))
    return violations(module, "fake.py", imports)


def test_checker_flags_each_kind_of_breach():
    cases = {
        # (module, source): the target named in the message
        ("x10array._core.fake", "def f():\n    from .._api import creation\n"): "x10array._api.creation",
        ("x10array._core.fake", "import jax\n"): "at module level",
        ("x10array._core.fake", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x10array._api\n"): (
            "under TYPE_CHECKING"
        ),
        ("x10array._api.fake", "from .._backends import eager\n"): "x10array._backends.eager",
        ("x10array._api.fake", "import x10array\n"): "imports x10array:",
        ("x10array._backends.eager", "from .lazy import graph\n"): "x10array._backends.lazy",
        ("x10array._backends.lazy.graph", "from ..eager import NumpyExecutor\n"): "x10array._backends.eager",
        ("x10array._backends.lazy.trace", "from ..._api import indexing\n"): "x10array._api.indexing",
        ("x10array._backends.lazy.graph", "def f():\n    from .executor import materialize\n"): (
            "before it (runtime, shapes)"
        ),
        ("x10array._backends.lazy.trace", "from . import Node\n"): "not the package",
        ("x10array._backends.lazy.newstage", "from .graph import Node\n"): "no stage of LAZY_STAGES",
        ("x10array.nn.fake", "from .._core import array\n"): "x10array._core.array",
        ("x10array.nn.fake", "from ..autodiff._tracer import defvjp\n"): "x10array.autodiff._tracer",
        ("x10array.nn.fake", "from x10array.autodiff import _tracer\n"): "x10array.autodiff._tracer",
        ("x10array.optim", "from .autodiff._rules import RULES\n"): "x10array.autodiff._rules",
        ("x10array.nn.fake", "import importlib\nM = importlib.import_module('x10array._core.array')\n"): (
            "x10array._core.array"
        ),
        ("x10array.nn.fake", "import importlib\nM = importlib.import_module('._api', 'x10array')\n"): "x10array._api",
        ("x10array.nn.fake", "import sys\nM = sys.modules['x10array._core.primitive']\n"): "x10array._core.primitive",
        ("x10array.nn.fake", "M = __import__('x10array._api.creation')\n"): "x10array._api.creation",
        ("x10array.nn.fake", "import importlib\ndef f(n):\n    return importlib.import_module(n)\n"): "dynamic",
        ("x10array.nn.fake", "import jax\n"): "imports no jax",
        ("x10array.datasets", "def f():\n    from ._api.creation import resolve_device\n"): "inside a function",
        ("x10array.newthing", "import numpy\n"): "belongs to no layer",
    }
    for (module, source), expected in cases.items():
        found = _check(module, source)
        assert len(found) == 1 and expected in found[0] and "fake.py" in found[0], (module, source, found)


def test_checker_accepts_what_the_layers_allow():
    allowed = [
        ("x10array._core.fake", "import numpy as np\nfrom . import dtypes\nfrom .array import Array\ndef f():\n"
         "    import jax\n"),
        ("x10array._api.fake", "from .._core.primitive import bind\nfrom . import creation\n"),
        ("x10array._backends.lazy.executor", "from .graph import Node\nfrom ..._core import kernels\n"),
        ("x10array._backends.lazy", "from .executor import LazyBackend\nfrom .graph import Node\n"),
        ("x10array._backends", "from . import eager as eager\nfrom . import lazy as lazy\n"),
        ("x10array.linalg", "from ._api.linalg import *\nfrom ._core import dtypes\nfrom . import fft\n"),
        ("x10array.nn.fake", "import numpy as np\nimport x10array as xp\nfrom x10array.extend import settings\n"
         "from .. import autodiff\nfrom ..autodiff import grad\nfrom . import _modules\nfrom x10array import linalg\n"),
        ("x10array.autodiff._rules", "from ._tracer import defvjp\nfrom .. import extend\n"),
        ("x10array.examples.fake", "import matplotlib.pyplot as plt\nfrom x10array.nn import functional\n"),
    ]  # fmt: skip
    for module, source in allowed:
        assert not _check(module, source, is_package=module in ("x10array._backends", LAZY)), (module, source)


def test_relative_imports_resolve():
    known = {"x10array._core.array", "x10array._backends.lazy.graph", "x10array.nn.functional"}

    def targets(module: str, source: str, is_package: bool = False) -> list[str]:
        return [i.target for i in imports_of(module, source, is_package=is_package, known=known)]

    assert targets("x10array._core.dispatch", "from . import array\n") == ["x10array._core.array"]
    assert targets("x10array._core.dispatch", "from .array import Array\n") == ["x10array._core.array"]
    assert targets("x10array._backends.lazy", "from .graph import Node\n", True) == ["x10array._backends.lazy.graph"]
    assert targets("x10array._backends.lazy.trace", "from ..._core import array\n") == ["x10array._core.array"]
    assert targets("x10array.nn", "from . import functional, relu\n", True) == ["x10array.nn", "x10array.nn.functional"]


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# -- the lazy stages share no private names -------------------------------------------------------


def private_uses(module: str, source: str) -> list[str]:
    """Where a lazy stage `module` uses another stage's underscore names: `from .stage import
    _name`, or `stage._name` on a stage module it imported (`from . import stage`). What one
    stage needs of another is a public name or a method of the stage that owns it."""
    if not _within(module, LAZY) or module == LAZY:
        return []
    tree = ast.parse(source)
    aliases: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = _resolve_from(module, False, node.level, node.module)
            if not _within(target, LAZY):
                continue
            for a in node.names:
                if target == LAZY:  # `from . import stage`: a stage module, its attributes checked below
                    aliases.add(a.asname or a.name)
                elif a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{module}:{node.lineno}: imports {target}.{a.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{module}:{node.lineno}: uses {node.value.id}.{node.attr}")
    return found


def test_no_lazy_stage_uses_another_stages_private_names():
    found = [v for name, path in all_modules().items() for v in private_uses(name, path.read_text())]
    assert not found, "\n".join(found)


def test_private_use_checker_flags_both_forms():
    stage = f"{LAZY}.executor"
    assert private_uses(stage, "from .graph import _LOCK, Node\n") == [f"{stage}:1: imports {LAZY}.graph._LOCK"]
    assert private_uses(stage, "from . import shapes as s\nx = s._avals\n") == [f"{stage}:2: uses s._avals"]
    assert private_uses(stage, "from .graph import Node\nfrom . import shapes\nx = shapes.out_avals\n") == []
    assert private_uses(stage, "from ..._core import metrics as _m\nx = _m._COUNTING\n") == []  # (not a stage)


def _lazy_sources() -> dict[str, str]:
    return {name: path.read_text() for name, path in all_modules().items() if _within(name, LAZY)}


_BUILT = ("GraphKey", "Program")


def test_one_owner_builds_keys_and_programs():
    """A GraphKey and a Program are made in program.py alone (program.key_for, program.build)."""
    found = []
    for name, source in _lazy_sources().items():
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("GraphKey", "Program")
            ):
                if name != f"{LAZY}.program":
                    found.append(f"{name}:{node.lineno}: {node.func.id}(...)")
    assert not found, "\n".join(found)


def test_only_the_placement_tells_a_mesh_from_one_device():
    """The single-device / mesh difference is the device's placement's (placement.py)."""
    pattern = re.compile(r"\.mesh is (not )?None")
    found = [
        f"{name}:{i}"
        for name, source in _lazy_sources().items()
        if name != f"{LAZY}.placement"
        for i, line in enumerate(source.splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found


# --- one pytree walk ----------------------------------------------------------------------------

_OBJECT_PROTOCOL = re.compile(r"hasattr\([^\n]*?[\"']tree_unflatten[\"']\)")


def _modules_testing_the_object_protocol(sources: dict[str, str]) -> list[str]:
    return sorted(name for name, text in sources.items() if _OBJECT_PROTOCOL.search(text))


def test_one_module_walks_pytrees():
    """A pytree walk asks whether an object flattens itself (`hasattr(..., "tree_unflatten")`);
    only _core/pytree.py may: every other layer uses it (through x10array.extend above the
    namespace), so that all callers share one encoding."""
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "x10array").rglob("*.py")}
    assert _modules_testing_the_object_protocol(sources) == ["x10array/_core/pytree.py"]
    fake = {"x10array/nn/fake.py": 'if hasattr(type(t), "tree_unflatten"):\n    pass\n', **sources}
    assert "x10array/nn/fake.py" in _modules_testing_the_object_protocol(fake)
