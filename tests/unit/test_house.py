"""House rules on the size of code a reader holds in mind (issue 17, item 3), read from the source with `ast`.

- No function (or method, or nested function) over `MAX_FUNCTION_LINES` lines in `compiler/` or `simulator/`,
  counted from its `def` line to its last line (docstring and comments included, decorators not). A longer one
  is split by the jobs inside it.
- No source file (Python in the project's packages, TypeScript in `web/src`) over `MAX_FILE_LINES` lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.unit.test_imports import ROOT, modules, package, tree

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 600
CHECKED = ("compiler", "simulator")


def functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every function under `node`, nested ones and methods included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + child.name, (child.end_lineno or child.lineno) - child.lineno + 1
            yield from functions(child, prefix + child.name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, prefix + child.name + ".")
        else:
            yield from functions(child, prefix)


def long_functions() -> dict[tuple[str, str], int]:
    return {(m, name): n for m in sorted(modules()) if package(m) in CHECKED
            for name, n in functions(tree(m)) if n > MAX_FUNCTION_LINES}


def test_no_long_functions() -> None:
    found = sorted(f"{m}.{name} ({n} lines)" for (m, name), n in long_functions().items())
    assert not found, (f"functions over {MAX_FUNCTION_LINES} lines (split them by the jobs inside them): "
                       + ", ".join(found))


def test_the_count_sees_what_it_checks() -> None:
    # Methods and nested functions count on their own, under their qualified name; a decorator does not count.
    sample = ast.parse("class A:\n    @staticmethod\n    def f():\n        def g():\n            pass\n\n"
                       "        return g\n\n\nif True:\n    def h(): pass\n")
    assert dict(functions(sample)) == {"A.f": 5, "A.f.g": 2, "h": 1}


def test_no_long_files() -> None:
    sources = [*(ROOT / p for p in modules().values()), *(ROOT / "web" / "src").rglob("*.ts"),
               *(ROOT / "web" / "src").rglob("*.tsx")]
    assert len(sources) > 100  # the walk found the tree
    long = sorted(f"{p.relative_to(ROOT)} ({n} lines)" for p in sources
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES)
    assert not long, f"source files over {MAX_FILE_LINES} lines (split them by the jobs inside them): {', '.join(long)}"
