"""The layers import downward only (DESIGN.md): the import-linter contracts of pyproject.toml
hold (`make test` runs `lint-imports` too; here a plain `pytest` fails on a broken one), and
the one thing the contracts cannot see is checked by hand: what modules take from the package
root itself."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "rustgrad"

# the top layer's modules may use the assembled namespace (`import rustgrad`; rustgrad.randperm)
MAY_IMPORT_THE_PACKAGE = ("rustgrad.utils.data",)


def test_import_contracts_hold() -> None:
    pytest.importorskip("importlinter", reason="import-linter is a test dependency (make test)")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _modules() -> list:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out.append((".".join(parts), is_package, path))
    return out


def _package_root_imports(name: str, is_package: bool, path: pathlib.Path) -> list:
    """(line, what) for each import of the package root itself in one module: `import
    rustgrad`, or `from rustgrad import x` where x is not a submodule."""
    children = {p.stem for p in PKG.glob("*.py")} | {p.parent.name for p in PKG.glob("*/__init__.py")}
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name == "rustgrad"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] + ([node.module] if node.module else [])
            else:
                base = (node.module or "").split(".")
            if base == ["rustgrad"]:
                found += [(node.lineno, a.name) for a in node.names if a.name not in children]
    return found


def test_modules_take_only_core_from_the_package_root() -> None:
    # `from .. import _core` reads to import-linter as an import of the package root (it cannot
    # see the compiled extension), so the contracts ignore imports of the root: this test is
    # what keeps them to _core, the bottom layer. Any other name from the root (a bound op
    # such as rustgrad.cat, the namespace itself) reaches every layer through the package's
    # __init__.
    bad = []
    for name, is_package, path in _modules():
        if name == "rustgrad":
            continue
        for line, what in _package_root_imports(name, is_package, path):
            if what == "_core" or (what == "import rustgrad" and name.startswith(MAY_IMPORT_THE_PACKAGE)):
                continue
            bad.append(f"{name}:{line}: {what}")
    assert not bad, "imports of the package root (take it from its module instead):\n" + "\n".join(bad)
