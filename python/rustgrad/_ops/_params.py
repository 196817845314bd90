"""An op function's parameters as `inspect.signature` orders them, read from its code object:
`op` asks for them for every one of ~750 declarations at import, where building Signature
objects took about a third of `import rustgrad`'s own time. Anything but a plain function (a
wrapper with `__wrapped__`, an explicit `__signature__`, a builtin) goes through inspect."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Tuple

_P = inspect.Parameter
_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def parameters(fn: Callable[..., Any]) -> Tuple[Tuple[str, Any], ...]:
    """((name, kind), ...) of fn's parameters in signature order, kinds as `inspect.Parameter`'s.

    Raises TypeError or ValueError where `inspect.signature` does (no signature to read)."""
    code = getattr(fn, "__code__", None)
    if (code is None or not inspect.isfunction(fn) or hasattr(fn, "__wrapped__")
            or "__signature__" in getattr(fn, "__dict__", {})):
        return tuple((n, p.kind) for n, p in inspect.signature(fn).parameters.items())
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    nposonly = code.co_posonlyargcount
    out = [(n, _P.POSITIONAL_ONLY if i < nposonly else _P.POSITIONAL_OR_KEYWORD)
           for i, n in enumerate(names[:npos])]
    rest = npos + nkw
    if code.co_flags & _CO_VARARGS:
        out.append((names[rest], _P.VAR_POSITIONAL))
        rest += 1
    out.extend((n, _P.KEYWORD_ONLY) for n in names[npos:npos + nkw])
    if code.co_flags & _CO_VARKEYWORDS:
        out.append((names[rest], _P.VAR_KEYWORD))
    return tuple(out)
