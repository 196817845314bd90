"""The one binder: attaches every name declared with `_ops._declare.op` to `Tensor`, the package
namespace and `nn.functional`, once each.

A name declared twice, or declared over a name its target already defines by hand, is an
ImportError naming both places: a later binding never silently wins.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Dict, List, MutableMapping

from ._ops import _declare
from ._ops._declare import Decl

_FAMILIES_LOADED = False
# (target, name) -> the declaration that bound it
_BOUND: Dict[tuple, Decl] = {}


def load_families() -> List[Decl]:
    """Imports every op family module under `_ops` (each registers its declarations)."""
    global _FAMILIES_LOADED
    if not _FAMILIES_LOADED:
        from . import _ops

        for info in pkgutil.iter_modules(_ops.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{_ops.__name__}.{info.name}")
        _FAMILIES_LOADED = True
    return _declare.DECLS


def _where(d: Decl) -> str:
    return f"{d.fn.__module__}.{d.fn.__qualname__}"


def _claim(target: str, name: str, d: Decl, present: bool) -> None:
    prev = _BOUND.get((target, name))
    if prev is not None and prev is not d:
        raise ImportError(f"rustgrad: {target}.{name} is declared twice: by {_where(prev)} and by {_where(d)}")
    if prev is None and present:
        raise ImportError(f"rustgrad: {target}.{name} declared by {_where(d)} is already defined there by hand")
    _BOUND[(target, name)] = d


def bind_tensor(tensor: type) -> None:
    """Methods, operators and properties on Tensor."""
    for d in load_families():
        for name in d.method + d.dunder:
            _claim("Tensor", name, d, name in tensor.__dict__ and ("Tensor", name) not in _BOUND)
            setattr(tensor, name, d.fn)
        for name in d.prop:
            _claim("Tensor", name, d, name in tensor.__dict__ and ("Tensor", name) not in _BOUND)
            setattr(tensor, name, property(d.fn, doc=d.doc))
    if "__eq__" in tensor.__dict__:
        # defining __eq__ unsets __hash__; tensors hash by identity, as torch's
        tensor.__hash__ = object.__hash__  # type: ignore[assignment]


def bind_namespace(namespace: MutableMapping[str, Any], target: str, kind: str) -> List[str]:
    """`rustgrad.<name>` (kind "function") or `nn.functional.<name>` (kind "functional");
    returns the names bound, for `__all__`."""
    names = []
    for d in load_families():
        for name in getattr(d, kind):
            _claim(target, name, d, name in namespace and (target, name) not in _BOUND)
            namespace[name] = d.fn
            names.append(name)
    return names


def declared() -> List[Decl]:
    """Every declaration, in registration order (for the stub and README generators)."""
    return list(load_families())
