"""docs/advanced_autograd.md: every Python block runs as written and prints what its comments
say."""

import contextlib
import io
import pathlib
import re
import warnings

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "advanced_autograd.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_docs_advanced_autograd_examples_run_and_print_their_comments():
    blocks = _blocks()
    assert len(blocks) >= 9
    checked = 0
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(block, str(DOC), "exec"), {})
        printed = out.getvalue()
        for line in block.splitlines():
            m = re.match(r"\s*print\(.*\)\s+# (.+)$", line)
            if m:
                assert m.group(1).strip() in printed, (m.group(1), printed)
                checked += 1
    assert checked >= 15
