"""Every example in the package's docstrings runs as a doctest, and every fenced Python example of
the docs pages (docs/index.md, docs/guides/*.md) runs and prints what the page says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from typing import Dict, List

import pytest
import rustgrad
import rustgrad.nn.functional

from . import markdown_examples

# modules that cannot be imported on every machine, with the reason
NEEDS_CUPY = {"rustgrad._backends.cuda": "imports CuPy, which needs an NVIDIA GPU's CUDA runtime"}

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
GLOBS = {"rustgrad": rustgrad, "torch": rustgrad, "nn": rustgrad.nn, "F": rustgrad.nn.functional}


def _module_names() -> List[str]:
    names = ["rustgrad"]
    for info in pkgutil.walk_packages(rustgrad.__path__, "rustgrad."):
        if info.name not in NEEDS_CUPY:
            names.append(info.name)
    return sorted(names)


MODULES = _module_names()
PAGES = [markdown_examples.ROOT / "docs" / "index.md",
         *sorted((markdown_examples.ROOT / "docs" / "guides").glob("*.md"))]


def _doctests(name: str) -> List[doctest.DocTest]:
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name, globs=dict(GLOBS))
    return sorted((t for t in tests if t.examples), key=lambda t: t.name)


def test_the_skipped_modules_exist():
    """A module listed as skipped must still be there (else the list hides nothing, or a rename)."""
    found = {info.name for info in pkgutil.walk_packages(rustgrad.__path__, "rustgrad.")}
    assert set(NEEDS_CUPY) <= found


def test_the_package_has_docstring_examples():
    counts: Dict[str, int] = {}
    for name in MODULES:
        counts[name] = sum(len(t.examples) for t in _doctests(name))
    assert sum(counts.values()) > 0, counts


@pytest.fixture
def in_tmp_dir(tmp_path, monkeypatch):
    """Examples that write files (a graph's .dot, a checkpoint) write them here."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("in_tmp_dir")
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str):
    report: List[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failed = sum(runner.run(test, out=report.append).failed for test in _doctests(name))
    assert failed == 0, "".join(report)


@pytest.mark.usefixtures("in_tmp_dir")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_docs_page_examples_run_and_print_what_the_page_says(page):
    found = markdown_examples.examples(page)
    assert found, f"{page} has no python examples"
    for example in found:
        # the pages show lines of a program run as example.py (provenance names the file)
        printed = markdown_examples.run(example, "example.py")
        problems = markdown_examples.problems(example, printed)
        assert not problems, f"{page.name}:{example.line}: " + "\n".join(problems)
