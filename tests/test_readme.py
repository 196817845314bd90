"""The README's Python examples run as written and print what their comments say."""

import contextlib
import io
import pathlib
import re
import warnings

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_examples_run_and_print_their_comments():
    blocks = _blocks()
    assert len(blocks) >= 12
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # some examples show torch's warnings on purpose
            exec(compile(block, str(README), "exec"), {})
        printed = out.getvalue()
        for line in block.splitlines():
            m = re.match(r"\s*print\(.*\)\s+# (.+)$", line)
            if m:
                assert m.group(1).strip() in printed, (m.group(1), printed)
