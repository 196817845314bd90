"""The arguments many ops share, documented once: an op's docstring states only its own
arguments, and `with_common_args` (called by `op`) writes the Args block in signature order,
taking each argument the docstring leaves out from `COMMON_ARGS` (torch's docs do the same with
their common_args)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional

from ._params import parameters

COMMON_ARGS: Dict[str, str] = {
    "input": "input (Tensor): the input tensor.",
    "keepdim": "keepdim (bool, optional): keep the reduced dims as size 1. Default: False.",
    "inplace": "inplace (bool, optional): write the result into input. Default: False.",
    "size_average": "size_average (bool, optional): deprecated; use reduction.",
    "reduce": "reduce (bool, optional): deprecated; use reduction.",
    "reduction": 'reduction (str, optional): "none", "mean" or "sum" over the entries. '
                 'Default: "mean".',
    "generator": "generator (Generator, optional): keyword-only; the generator drawn from.",
    "dtype": "dtype (rustgrad.dtype, optional): keyword-only; the dtype to compute in and return.",
}

_ARGS = re.compile(r"\nArgs:\n((?:(?:    .*)?\n)*?)(?=\n\S|\Z)")


def _entries(block: str) -> Dict[str, str]:
    """An Args block's entries by each argument they name, in order; an entry naming several
    ("dtype, device: see empty") is found under each of them."""
    texts: List[str] = []
    for line in block.splitlines():
        if line.startswith("    ") and not line.startswith("     "):
            texts.append(line[4:])
        elif texts and line.strip():
            texts[-1] += "\n" + line[4:]
    out: Dict[str, str] = {}
    for text in texts:
        head = re.split(r" \(|:", text, maxsplit=1)[0]
        for name in head.split(", "):
            out.setdefault(name.strip(), text)
    return out


def documented_args(fn: Callable[..., Any]) -> Dict[str, str]:
    """The entries of fn's Args block, by argument name."""
    m = _ARGS.search(inspect.cleandoc(fn.__doc__ or "") + "\n")
    return _entries(m.group(1)) if m else {}


def with_common_args(fn: Callable[..., Any], like: Optional[Callable[..., Any]] = None) -> None:
    """Completes fn's docstring with the shared arguments it takes and does not document:
    those of `like` (an op whose arguments fn shares), then COMMON_ARGS."""
    doc = fn.__doc__
    if not doc:
        return
    try:
        params = [name for name, _ in parameters(fn)]
    except (TypeError, ValueError):
        return
    if like is None and not COMMON_ARGS.keys() & params:
        return  # no shared argument to document: the docstring stays as written
    text = inspect.cleandoc(doc) + "\n"
    m = _ARGS.search(text)
    own = _entries(m.group(1)) if m else {}
    shared = {**COMMON_ARGS, **(documented_args(like) if like is not None else {})}
    names = params + [n for n in {**shared, **own} if n not in params and n not in COMMON_ARGS]
    rows: List[str] = []
    for name in names:
        entry = own.get(name) or shared.get(name)
        if entry and entry not in rows:
            rows.append(entry)
    if all(e in own.values() for e in rows):
        return  # nothing to add
    body = "\n".join("    " + line for r in rows for line in r.splitlines())
    block = f"\nArgs:\n{body}\n"
    if m:
        text = text[:m.start()] + block + text[m.end():]
    else:
        summary, sep, rest = text.partition("\n\n")
        text = summary.rstrip("\n") + "\n" + block + ("\n" + rest if sep else "")
    fn.__doc__ = text
