"""Every public name of rustgrad has a docstring: what `help()` shows a user
(tools/doc_coverage.py says which names are public and what counts as documented)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from .markdown_examples import ROOT


def _doc_coverage() -> ModuleType:
    path = ROOT / "tools" / "doc_coverage.py"
    spec = importlib.util.spec_from_file_location("doc_coverage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring():
    rows = list(_doc_coverage().coverage())
    assert {"rustgrad", "Tensor", "nn", "nn.functional", "optim", "autograd"} <= {r[0] for r in rows}
    assert sum(n for _, _, n, _ in rows) > 500  # the walk saw the whole API
    missing = [f"{label}: {', '.join(names)}" for label, _, _, names in rows if names]
    count = sum(len(names) for _, _, _, names in rows)
    assert not missing, f"{count} public names without a docstring:\n" + "\n".join(missing)
