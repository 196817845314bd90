"""The arguments many ops share, documented once: an op's docstring states only its own
arguments, and `with_common_args` (called by `op`) writes the Args block in signature order,
taking each argument the docstring leaves out from `COMMON_ARGS` (torch's docs do the same with
their common_args)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

COMMON_ARGS: Dict[str, str] = {
    "input": "input (Tensor): the input tensor.",
    "keepdim": "keepdim (bool, optional): keep the reduced dims as size 1. Default: False.",
    "inplace": "inplace (bool, optional): write the result into input. Default: False.",
    "size_average": "size_average (bool, optional): deprecated; use reduction.",
    "reduce": "reduce (bool, optional): deprecated; use reduction.",
    "reduction": 'reduction (str, optional): "none", "mean" or "sum" over the entries. '
                 'Default: "mean".',
    "generator": "generator (Generator, optional): keyword-only; the generator drawn from.",
}

_ARGS = re.compile(r"\nArgs:\n((?:(?:    .*)?\n)*?)(?=\n\S|\Z)")


def _entries(block: str) -> List[Tuple[str, str]]:
    """(argument name, entry text) of an Args block's body, in order."""
    out: List[Tuple[str, str]] = []
    for line in block.splitlines():
        if line.startswith("    ") and not line.startswith("     "):
            out.append((line.strip().split(" ", 1)[0], line[4:]))
        elif out and line.strip():
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line[4:])
    return out


def documented_args(fn: Callable[..., Any]) -> Dict[str, str]:
    """The entries of fn's Args block, by argument name."""
    m = _ARGS.search(inspect.cleandoc(fn.__doc__ or "") + "\n")
    return dict(_entries(m.group(1))) if m else {}


def with_common_args(fn: Callable[..., Any], like: Optional[Callable[..., Any]] = None) -> None:
    """Completes fn's docstring with the shared arguments it takes and does not document:
    those of `like` (an op whose arguments fn shares), then COMMON_ARGS."""
    doc = fn.__doc__
    if not doc:
        return
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return
    shared = dict(COMMON_ARGS)
    if like is not None:
        shared.update(documented_args(like))
    common = [p for p in params if p in shared]
    if not common:
        return
    text = inspect.cleandoc(doc) + "\n"
    m = _ARGS.search(text)
    own = dict(_entries(m.group(1))) if m else {}
    if all(p in own for p in common):
        return
    rows = [own.get(p) or shared.get(p) for p in params]
    rows += [e for name, e in own.items() if name not in params]  # *args, **kwargs entries
    body = "\n".join("    " + line for r in rows if r for line in r.splitlines())
    block = f"\nArgs:\n{body}\n"
    if m:
        text = text[:m.start()] + block + text[m.end():]
    else:
        summary, sep, rest = text.partition("\n\n")
        text = summary.rstrip("\n") + "\n" + block + ("\n" + rest if sep else "")
    fn.__doc__ = text
