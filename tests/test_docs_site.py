"""`make docs` works: MkDocs builds the guides and the API reference (mkdocstrings, importing
rustgrad's sources) with --strict, so any warning (a broken link, a page missing from the nav, a
docstring mkdocstrings cannot parse) fails the build."""

from __future__ import annotations

import subprocess
import sys

from .markdown_examples import ROOT

PAGES = ["index.html", "guides/coming-from-torch/index.html", "api/tensor/index.html",
         "api/nn.functional/index.html", "architecture/index.html"]


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    # no -q: quiet mode drops the warnings before --strict counts them
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for page in PAGES:
        assert (site / page).is_file(), page
    # the API reference was generated from the package, not left empty
    tensor_page = (site / "api" / "tensor" / "index.html").read_text(encoding="utf-8")
    assert 'id="rustgrad.Tensor.backward"' in tensor_page
    assert 'id="rustgrad.Tensor.exp"' in tensor_page
