"""The import rules of the source tree (README, "How it works"), read from the code with `ast`: nothing is imported.

- Layers: `compiler/` imports nothing from `simulator/` (data flows compile -> simulate: the simulator may import
  the compiler, never the other way; the names both speak live in `compiler/vocabulary/`, which imports nothing
  else of the project, and the export path is given the simulator's prediction); `compiler/` and `simulator/`
  import nothing from `worker/`, `store/`, `server/` or `edgescope/`; no part of the product imports `tests/`,
  `testkit/`, `benchmarks/` or `corpus/`; `benchmarks/`, `corpus/` and `testkit/` never import `tests/` (what
  they share with the tests lives in `testkit/`); the server reaches the worker only to queue work
  (`SERVER_TO_WORKER`): result documents are shaped below both.
- No import loops between modules. Imports inside functions and under `TYPE_CHECKING` count: a loop there is still
  two modules that each need the other. A package's `__init__` counts where it is named, not when one of its
  submodules is.
- No private name (`_x`) imported from another module outside the tests (which may look inside what they test).
- Every name imported from a project module exists there (a renamed function fails here, not at run time).
- No import loops in the web app (web/src) either: types both sides need live in a module both import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("compiler", "simulator", "worker", "store", "server", "edgescope", "benchmarks", "corpus", "testkit",
            "tests")
PRODUCT = ("compiler", "simulator", "worker", "store", "server", "edgescope")
DEV_ONLY = ("tests", "testkit", "benchmarks", "corpus")
FORBIDDEN = {
    "compiler": ("simulator", "worker", "store", "server", "edgescope", *DEV_ONLY),
    "simulator": ("worker", "store", "server", "edgescope", *DEV_ONLY),
    **{p: DEV_ONLY for p in ("worker", "store", "server", "edgescope")},
    "benchmarks": ("tests",),
    "corpus": ("tests", "benchmarks", "testkit"),
    "testkit": ("tests", "benchmarks"),
}
# The server queues analyses and exports and reads leases; it never runs or shapes an analysis itself.
SERVER_TO_WORKER = frozenset({"worker.celery_app", "worker.lease", "worker.scratch"})

# The names compiler and simulator both speak: below both, so they import nothing else of the project.
VOCABULARY = "compiler.vocabulary"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (`from a import b`: a.b when b is a module, else a)
    name: str | None  # `from a import name`; None for `import a` and for a submodule
    line: int

    def __str__(self) -> str:
        return f"{self.module} (line {self.line}) imports {self.target}{'.' + self.name if self.name else ''}"


@cache
def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(), filename=str(modules()[module]))


def _enclosing(name: str) -> str | None:
    """The longest project module `name` is or is inside of."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> Iterator[Import]:
    is_package = modules()[module].name == "__init__.py"
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _enclosing(alias.name)
                if target:
                    yield Import(module, target, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - (0 if is_package else 1)]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules():
                    yield Import(module, f"{base}.{alias.name}", None, node.lineno)
                elif (target := _enclosing(base)) and target != module:
                    yield Import(module, target, alias.name, node.lineno)


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(i for m in sorted(modules()) for i in imports_of(m))


def package(module: str) -> str:
    return module.split(".")[0]


def test_layers() -> None:
    wrong = [str(i) for i in all_imports()
             if package(i.target) in FORBIDDEN.get(package(i.module), ()) and package(i.module) != package(i.target)]
    wrong += [str(i) for i in all_imports() if package(i.module) == "server" and package(i.target) == "worker"
              and i.target not in SERVER_TO_WORKER]
    wrong += [str(i) for i in all_imports() if i.module.startswith(VOCABULARY + ".")
              and not i.target.startswith(VOCABULARY)]
    assert not wrong, "imports against the layers (README, How it works):\n" + "\n".join(wrong)


def find_loops(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def loops() -> list[frozenset[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for i in all_imports():
        if i.target != i.module:
            graph[i.module].add(i.target)
    return find_loops(graph)


def test_no_import_loops() -> None:
    found = [sorted(c) for c in loops()]
    assert not found, f"import loops (move what both need below both, or pass it in): {found}"


def test_the_rules_see_what_they_check() -> None:
    # A loop two modules deep behind a third that only points into it; a lone chain is no loop.
    assert find_loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"d"}}) == [frozenset("abc")]
    assert find_loops({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # A relative import inside a method counts, and resolves to the submodule it names.
    lazy = [i for i in imports_of("compiler.backends") if i.target == "compiler.backends.litert"]
    assert lazy and lazy[0].name is None
    # `from package import name` of a non-module name points at the package, with the name kept.
    assert Import("compiler.backends", "compiler.backends.base", "as_tasks", lazy[0].line).target in modules()
    assert any(i.target == "compiler.backends.base" and i.name == "as_tasks" for i in imports_of("compiler.backends"))


def test_no_private_names_across_modules() -> None:
    found = {(i.module, i.target, i.name) for i in all_imports()
             if i.name and i.name.startswith("_") and not i.name.startswith("__") and package(i.module) != "tests"}
    assert not found, f"private names imported across modules (make them public where they live): {sorted(found)}"


def _bound(module: str) -> set[str] | None:
    """Names a module binds at its top level (also under `if` / `try`); None when it cannot be known."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if node.name == "__getattr__":
                    return False
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        return False
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
                targets = (node.targets if isinstance(node, ast.Assign) else [node.target] if hasattr(node, "target")
                           else [i.optional_vars for i in node.items if i.optional_vars])  # type: ignore[union-attr]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            if isinstance(node, (ast.If, ast.Try, ast.For, ast.While, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    if not visit(getattr(node, block, [])):
                        return False
                for handler in getattr(node, "handlers", []):
                    if not visit(handler.body):
                        return False
        return True

    return names if visit(tree(module).body) else None


def test_imported_names_exist() -> None:
    missing = []
    for i in all_imports():
        if i.name in (None, "*") or i.target not in modules():
            continue
        bound = _bound(i.target)
        if bound is not None and i.name not in bound:
            missing.append(str(i))
    assert not missing, "names imported from project modules that do not define them:\n" + "\n".join(missing)


# `import ... from "./x"`, `export ... from "../y"`, `import "./z"` and `import("./w")`, relative specifiers only.
TS_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.{1,2}/[^'"]+)['"]"""
                       r"""|^\s*import\s+['"](\.{1,2}/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}/[^'"]+)['"]\s*\)""", re.M)


def web_imports() -> dict[str, set[str]]:
    """web/src modules (path without extension) -> the web/src modules they import (`import type` included)."""
    src = ROOT / "web" / "src"
    files = {p.relative_to(src).with_suffix("").as_posix(): p for p in src.rglob("*") if p.suffix in (".ts", ".tsx")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = set()
        for match in TS_IMPORT.finditer(path.read_text()):
            spec = next(g for g in match.groups() if g)
            target = (path.parent / spec).resolve().relative_to(src.resolve()).as_posix()
            stem = target.rsplit(".", 1)[0] if target.endswith((".ts", ".tsx", ".js")) else target
            graph[name] |= {c for c in (target, stem, stem + "/index") if c in files}
    return graph


def test_no_import_loops_in_the_web_app() -> None:
    graph = web_imports()
    assert "selection" in graph.get("pages/ModelPage", set())  # the reader sees type imports too
    assert find_loops(graph) == [], "import loops in web/src (shared types go to a module both import)"
