"""The one binder: attaches every name declared with `_ops._declare.op` to `Tensor`, the package
namespace and `nn.functional`, once each.

A name declared twice, or declared over a name its target already defines by hand, is an
ImportError naming both places: a later binding never silently wins.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Dict, Iterable, List, MutableMapping, Optional, Tuple

from . import _ops
from ._ops import _declare
from ._ops._declare import Decl

_FAMILIES_LOADED = False


def load_families() -> List[Decl]:
    """Imports every op family module under `_ops` (each registers its declarations)."""
    global _FAMILIES_LOADED
    if not _FAMILIES_LOADED:
        # the family modules are the package's public .py files, in pkgutil.iter_modules' order
        # (by name), listed directly: pkgutil costs `import rustgrad` ~1 ms
        for entry in sorted(os.listdir(_ops.__path__[0])):
            name, ext = os.path.splitext(entry)
            if ext == ".py" and not name.startswith("_"):
                importlib.import_module(f"{_ops.__name__}.{name}")
        _FAMILIES_LOADED = True
    return _declare.DECLS


def _where(d: Decl) -> str:
    return f"{d.fn.__module__}.{d.fn.__qualname__}"


class Binder:
    """Remembers which declaration bound each (target, name), to refuse a second one."""

    def __init__(self) -> None:
        self._bound: Dict[Tuple[str, str], Decl] = {}

    def _claim(self, target: str, name: str, d: Decl, defined: bool) -> None:
        prev = self._bound.get((target, name))
        if prev is not None and prev is not d:
            raise ImportError(
                f"rustgrad: {target}.{name} is declared twice: by {_where(prev)} and by {_where(d)}"
            )
        if prev is None and defined:
            raise ImportError(
                f"rustgrad: {target}.{name} declared by {_where(d)} is already defined there by hand"
            )
        self._bound[(target, name)] = d

    def bind_tensor(self, tensor: type, decls: Iterable[Decl]) -> None:
        """Methods, operators and properties on the tensor class."""
        target = tensor.__name__
        for d in decls:
            for name in d.method + d.dunder + d.prop:
                self._claim(target, name, d, name in tensor.__dict__ and (target, name) not in self._bound)
                setattr(tensor, name, property(d.fn, doc=d.doc) if name in d.prop else d.fn)
        if "__eq__" in tensor.__dict__:
            # defining __eq__ unsets __hash__; tensors hash by identity, as torch's
            tensor.__hash__ = object.__hash__  # type: ignore[assignment]

    def bind_namespace(self, namespace: MutableMapping[str, Any], target: str, kind: str,
                       decls: Iterable[Decl]) -> List[str]:
        """Functions into a module namespace: kind "function" (`rustgrad.<name>`) or
        "functional" (`nn.functional.<name>`); returns the names bound, for `__all__`."""
        names = []
        for d in decls:
            for name in getattr(d, kind):
                self._claim(target, name, d, name in namespace and (target, name) not in self._bound)
                namespace[name] = d.function_fn if kind == "function" and d.function_fn else d.fn
                names.append(name)
        return names


_BINDER = Binder()


def bind_tensor(tensor: type) -> None:
    """Binds every declared method, operator and property to Tensor."""
    _BINDER.bind_tensor(tensor, load_families())


# every namespace bind_namespace filled, as (target, namespace, names), and who wants to hear of
# the next ones: autograd.forward_ad swaps these entry points while a dual level is open
_NAMESPACES: List[Tuple[str, MutableMapping[str, Any], List[str]]] = []
_LISTENERS: List[Callable[[str, MutableMapping[str, Any], List[str]], None]] = []


def bind_namespace(namespace: MutableMapping[str, Any], target: str, kind: str,
                   decls: Optional[Iterable[Decl]] = None) -> List[str]:
    """Binds every declared name of this kind into namespace (see Binder.bind_namespace)."""
    names = _BINDER.bind_namespace(namespace, target, kind, load_families() if decls is None else decls)
    _NAMESPACES.append((target, namespace, list(names)))
    for listener in list(_LISTENERS):
        listener(target, namespace, list(names))
    return names


def bound_namespaces(
    listener: Optional[Callable[[str, MutableMapping[str, Any], List[str]], None]] = None,
) -> List[Tuple[str, MutableMapping[str, Any], List[str]]]:
    """The namespaces bound so far, as (target, namespace, names bound there); `listener`, if
    given, is also called so with each namespace bound from now on (a module imported later)."""
    if listener is not None and listener not in _LISTENERS:
        _LISTENERS.append(listener)
    return [(t, ns, list(names)) for t, ns, names in _NAMESPACES]


def namespace_entry_points(target: str, namespace: MutableMapping[str, Any], names: List[str],
                           marker: str) -> List[Tuple[MutableMapping[str, Any], str, Any]]:
    """(namespace, name, function) of each op entry point of a bound namespace that a transform
    (forward AD, vmap) wraps while it runs: the names bound there, and for nn.functional, linalg,
    special and fft every function of their `__all__` too (the hand-written ones). Objects
    carrying `marker` (the transform's own wrappers) and classes are left out."""
    todo = list(names)
    if target != "rustgrad":
        todo += [n for n in namespace.get("__all__", ()) if callable(namespace.get(n))]
    out = []
    for name in dict.fromkeys(todo):
        fn = namespace.get(name)
        if fn is not None and callable(fn) and not isinstance(fn, type) and not hasattr(fn, marker):
            out.append((namespace, name, fn))
    return out


def tensor_entry_points(tensor: type) -> List[Tuple[str, Any]]:
    """(name, attribute) of every declared Tensor method, operator and property, as bound."""
    names: List[str] = []
    for d in load_families():
        names += list(d.method + d.dunder + d.prop)
    return [(n, tensor.__dict__[n]) for n in dict.fromkeys(names) if n in tensor.__dict__]


class EntryPointSwap:
    """The entry points a transform replaced while it runs, and how to put them back."""

    def __init__(self, tensor: type) -> None:
        self._tensor = tensor
        self._swapped: List[Tuple[Any, str, Any]] = []

    def __bool__(self) -> bool:
        return bool(self._swapped)

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replaces owner's name (Tensor's attribute, or a namespace's entry) with value."""
        if owner is self._tensor:
            self._swapped.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, value)
        else:
            self._swapped.append((owner, name, owner[name]))
            owner[name] = value

    def restore(self) -> None:
        """Puts every replaced entry point back, the last replaced first."""
        while self._swapped:
            owner, name, orig = self._swapped.pop()
            if owner is self._tensor:
                setattr(owner, name, orig)
            else:
                owner[name] = orig


def declared() -> List[Decl]:
    """Every declaration, in registration order (for the stub and README generators)."""
    return list(load_families())
