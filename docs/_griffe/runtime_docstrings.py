"""A griffe extension for the API reference: the docstrings `help()` shows.

Most of rustgrad's API is bound at run time (`_bind.py` attaches every op declared in `_ops/` to
`Tensor`, `rustgrad.*` and `nn.functional`, each family's on first use), so griffe's static reading sees those names only in
the generated type stubs, which carry the first line of each docstring. This extension imports
rustgrad and gives each such object its full runtime docstring.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Optional

import griffe

_MISSING = object()
# torch's docstrings mark their examples with reST's `Example::`; as a Google-style section
# (`Examples:`) griffe renders the `>>>` lines as code
_EXAMPLE_MARK = re.compile(r"^(\s*)Examples?::\s*$", re.M)


def _runtime(path: str) -> Any:
    """The object at a dotted path, importing modules on the way; _MISSING if there is none."""
    parts = path.split(".")
    obj: Any = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        nxt = getattr(obj, part, _MISSING)
        if nxt is _MISSING:
            try:
                nxt = importlib.import_module(".".join(parts[: i + 1]))
            except Exception:  # noqa: BLE001  (_backends.cuda needs CuPy: its sources suffice)
                return _MISSING
        obj = nxt
    return obj


def _runtime_doc(obj: griffe.Object) -> Optional[str]:
    """What help() shows for obj: a function's or a property's docstring (None for other values,
    whose __doc__ is their type's)."""
    value = _runtime(obj.path)
    if value is _MISSING:
        return None
    if obj.parent is not None and obj.parent.is_class:
        owner = _runtime(obj.parent.path)
        raw = inspect.getattr_static(owner, obj.name, None) if owner is not _MISSING else None
        if isinstance(raw, property):
            value = raw
        elif not obj.is_function:
            return None
    elif not obj.is_function:
        return None
    doc = getattr(value, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


class RuntimeDocstrings(griffe.Extension):
    """Gives functions and properties the docstring of the runtime object (a stub's one-line
    docstring becomes the full one; a docstring read from the sources stays as it was)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "rustgrad":
            return
        self._visit(pkg, loader)

    def _visit(self, obj: griffe.Object, loader: griffe.GriffeLoader) -> None:
        self._mark_examples(obj)
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            if member.is_function or member.is_attribute:
                self._update(member, loader)
                self._mark_examples(member)
            elif member.is_class or member.is_module:
                self._visit(member, loader)

    @staticmethod
    def _mark_examples(obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_MARK.sub(r"\1Examples:", obj.docstring.value)

    def _update(self, obj: griffe.Object, loader: griffe.GriffeLoader) -> None:
        full = _runtime_doc(obj)
        have = obj.docstring.value if obj.docstring else ""
        if full and full != have:
            obj.docstring = griffe.Docstring(
                full,
                lineno=obj.docstring.lineno if obj.docstring else obj.lineno,
                parent=obj,
                parser=loader.docstring_parser,
                parser_options=loader.docstring_options,
            )
