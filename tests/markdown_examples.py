"""Running the fenced Python examples of a Markdown page (the README, the guides under docs/).

A ```python block runs as written, each block in a fresh namespace. A `print(...)  # text`
line promises that `text` appears in what the block printed; a ```text block right after a
```python block (nothing but blank lines between) is the block's whole output, compared
exactly (trailing blanks aside).
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types
import warnings
from typing import List, NamedTuple, Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"```python\n(.*?)```(?:\s*\n```text\n(.*?)```)?", re.S)
_PRINT_COMMENT = re.compile(r"\s*print\(.*\)\s+# (.+)$")


class Example(NamedTuple):
    code: str
    output: Optional[str]  # the ```text block that follows it, if any
    line: int  # where the block starts in the page (1-based)


def examples(page: pathlib.Path) -> List[Example]:
    text = page.read_text(encoding="utf-8")
    return [Example(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 2)
            for m in _FENCE.finditer(text)]


def run(example: Example, filename: str) -> str:
    """Runs one example as the module of a file named filename, and returns what it printed."""
    # a real module in sys.modules, as a script has: tools that name the globals holding a
    # graph (autograd.graph.live_graphs) find them through it
    name = "_markdown_example"
    module = types.ModuleType(name)
    module.__file__ = filename
    out = io.StringIO()
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # some examples show torch's warnings on purpose
            exec(compile(example.code, filename, "exec"), vars(module))
    finally:
        del sys.modules[name]
    return out.getvalue()


def problems(example: Example, printed: str, exact: bool = True) -> List[str]:
    """What the example promised and did not print (empty when it kept every promise); with
    exact=False the ```text block after it is not compared (pages whose outputs name the
    different files each program was run as, as the README's do)."""
    found = []
    for line in example.code.splitlines():
        m = _PRINT_COMMENT.match(line)
        if m and m.group(1).strip() not in printed:
            found.append(f"missing from the output: {m.group(1).strip()!r}")
    if exact and example.output is not None and _trim(printed) != _trim(example.output):
        found.append(f"the output differs from the text block:\n--- printed\n{printed}"
                     f"--- the page\n{example.output}")
    return found


def _trim(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
