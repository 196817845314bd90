"""The one binder: attaches every name declared with `_ops._declare.op` to `Tensor`, the package
namespace and `nn.functional`, once each.

A name declared twice, or declared over a name its target already defines by hand, is an
ImportError naming both places: a later binding never silently wins.

Families load on first use. `import rustgrad` imports only the op families other modules import;
Tensor gets a placeholder for every other declared member (`_Placeholder`) and the package
namespace finds every other declared function through its `__getattr__`, both from the index
that tools/gen_stubs.py writes (`_ops/_index.py`). A placeholder's first call imports its family,
whose declarations are then bound everywhere (`_flush`), replacing the placeholders: from then on
the bound function is the op itself, as if it had been bound at import. What reads every
declaration (the stubs, forward AD and vmap's entry points, `_saved_<name>` getters) calls
`load_families()` first.
"""

from __future__ import annotations

import _thread
import importlib
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, MutableMapping, Optional, Tuple

from . import _ops
from ._ops import _declare, _index
from ._ops._declare import Decl

_FAMILIES_LOADED = False
_SEEN = 0  # _declare.DECLS[:_SEEN] were looked at by a flush
_WAITING: List[Decl] = []  # seen while their family was still importing (in another thread)
_BOUND: List[Decl] = []  # bound to Tensor and the lazy namespaces, in order
_TENSOR: List[type] = []  # the class bind_tensor bound, once it has
# namespaces that get each family's names as it loads: (target, namespace, kind, names bound)
_LAZY: List[Tuple[str, MutableMapping[str, Any], str, List[str]]] = []
# a thread that finds a flush under way waits for its bindings (`_thread`: `threading` costs import)
_FLUSH_LOCK = _thread.RLock()


def _new_lock() -> None:
    global _FLUSH_LOCK
    _FLUSH_LOCK = _thread.RLock()


if hasattr(os, "register_at_fork"):  # a child forked mid-flush must not inherit the held lock
    os.register_at_fork(after_in_child=_new_lock)


def load_family(family: str) -> None:
    """Imports one op family module and binds what it (and any family it imports) declares."""
    importlib.import_module(f"{_ops.__name__}.{family}")
    _flush()


def load_families() -> List[Decl]:
    """Imports every op family module under `_ops` (each registers its declarations) and binds
    them all."""
    global _FAMILIES_LOADED
    if not _FAMILIES_LOADED:
        # the family modules are the package's public .py files, listed directly: pkgutil costs
        # `import rustgrad` ~1 ms
        for entry in sorted(os.listdir(_ops.__path__[0])):
            name, ext = os.path.splitext(entry)
            if ext == ".py" and not name.startswith("_"):
                importlib.import_module(f"{_ops.__name__}.{name}")
        _FAMILIES_LOADED = True
    _flush()
    return _declare.DECLS


def _importing(d: Decl) -> bool:
    """Whether d's family module is still being imported (its later globals not yet defined)."""
    spec = getattr(sys.modules.get(d.fn.__module__), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _flush() -> None:
    """Binds the declarations registered since the last flush to Tensor and the lazy namespaces,
    but for those of a family another thread is still importing (its next flush binds them). A
    name already set there by the user (`rustgrad.relu = f` before relu's family loaded) keeps
    the user's object, as it would have had the family been bound at import."""
    global _SEEN
    with _FLUSH_LOCK:
        decls = _declare.DECLS
        if _SEEN == len(decls) and not _WAITING:
            return
        new = _WAITING + decls[_SEEN:]
        ready: List[Decl] = []
        waiting: List[Decl] = []
        for d in new:
            (waiting if _importing(d) else ready).append(d)
        for tensor in _TENSOR:
            _BINDER.bind_tensor(tensor, ready, keep_overrides=True)
        for target, namespace, kind, names in _LAZY:
            names += _BINDER.bind_namespace(namespace, target, kind, ready, keep_overrides=True)
        _SEEN = len(decls)
        _WAITING[:] = waiting
        _BOUND.extend(ready)


def _stale_index(where: str, family: str) -> ImportError:
    return ImportError(f"rustgrad: the op index names {where} in _ops/{family}.py, which does not declare it: "
                       f"run `python tools/gen_stubs.py`")


class _Placeholder:
    """What Tensor holds under a declared name until its family loads. A descriptor: reading the
    name (`x.add`, `Tensor.add`, `x + y`, a property) loads the family, whose binding replaces the
    placeholder, and gives what the op's own binding gives. For a method or operator no frame of
    the binder's stands between the caller and the op (a warning's stacklevel counts the same on
    the first call); a property's getter runs inside `__get__`, so a warning it gives on the
    family's first read names this module's line."""

    __slots__ = ("tensor", "name", "family")

    def __init__(self, tensor: type, name: str, family: str) -> None:
        self.tensor, self.name, self.family = tensor, name, family

    def _op(self) -> Any:
        load_family(self.family)
        real = self.tensor.__dict__.get(self.name)
        if real is None or isinstance(real, _Placeholder):
            raise _stale_index(f"Tensor.{self.name}", self.family)
        return real

    def __get__(self, obj: Any, cls: Optional[type] = None) -> Any:
        return self._op().__get__(obj, cls)


class _PropertyPlaceholder(_Placeholder):
    """A placeholder of a property: a data descriptor, as the property it stands for (an
    assignment is refused as the property refuses it, not stored on the instance)."""

    __slots__ = ()

    def __set__(self, obj: Any, value: Any) -> None:
        self._op().__set__(obj, value)


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

    def bind_tensor(self, tensor: type, decls: Iterable[Decl], keep_overrides: bool = False) -> None:
        """Methods, operators and properties on the tensor class; with keep_overrides, a name
        set there neither by hand nor by a binding (by the user, after import) is left as set."""
        target = tensor.__name__
        for d in decls:
            for name in d.method + d.dunder + d.prop:
                defined = name in tensor.__dict__ and not isinstance(tensor.__dict__[name], _Placeholder)
                overridden = defined and (target, name) not in self._bound
                if keep_overrides and overridden:
                    continue
                self._claim(target, name, d, overridden)
                setattr(tensor, name, property(d.fn, doc=d.doc) if name in d.prop else d.fn)
        if "__eq__" in tensor.__dict__:
            # defining __eq__ unsets __hash__; tensors hash by identity, as torch's
            tensor.__hash__ = object.__hash__  # type: ignore[assignment]

    def bind_namespace(self, namespace: MutableMapping[str, Any], target: str, kind: str,
                       decls: Iterable[Decl], keep_overrides: bool = False) -> List[str]:
        """Functions into a module namespace: kind "function" (`rustgrad.<name>`) or
        "functional" (`nn.functional.<name>`); returns the names bound, for `__all__`. With
        keep_overrides, a name the namespace has and no binding set is left as it is."""
        names = []
        for d in decls:
            for name in getattr(d, kind):
                overridden = name in namespace and (target, name) not in self._bound
                if keep_overrides and overridden:
                    continue
                self._claim(target, name, d, overridden)
                namespace[name] = d.function_fn if kind == "function" and d.function_fn else d.fn
                names.append(name)
        return names


_BINDER = Binder()


def bind_tensor(tensor: type) -> None:
    """Binds every declared method, operator and property to Tensor: those of the families
    loaded now, and a placeholder for each other one in the index (see module doc). A declared
    name the class defines by hand is an ImportError here, at import, whether or not its family
    is loaded."""
    target = tensor.__name__
    for name, family in _index.TENSOR.items():
        if name in tensor.__dict__:
            raise ImportError(f"rustgrad: {target}.{name} declared in _ops/{family}.py is already "
                              f"defined there by hand")
        kind = _PropertyPlaceholder if name in _index.PROPERTIES else _Placeholder
        setattr(tensor, name, kind(tensor, name, family))
    if "__eq__" in tensor.__dict__:
        tensor.__hash__ = object.__hash__  # type: ignore[assignment]
    _TENSOR.append(tensor)
    _BINDER.bind_tensor(tensor, _BOUND)
    _flush()


# every namespace bind_namespace filled, as (target, namespace, names), and who wants to hear of
# the next ones: autograd.forward_ad swaps these entry points while a dual level is open
_NAMESPACES: List[Tuple[str, MutableMapping[str, Any], List[str]]] = []
_LISTENERS: List[Callable[[str, MutableMapping[str, Any], List[str]], None]] = []


def bind_namespace(namespace: MutableMapping[str, Any], target: str, kind: str,
                   decls: Optional[Iterable[Decl]] = None, lazy: bool = False) -> List[str]:
    """Binds every declared name of this kind into namespace (see Binder.bind_namespace); with
    lazy, only those of the families loaded now, each other family's as it loads (the namespace
    finds them through its `__getattr__` and `lazy_function`)."""
    if lazy:
        index = _index.FUNCTION if kind == "function" else {}
        for name in index.keys() & namespace.keys():
            raise ImportError(f"rustgrad: {target}.{name} declared in _ops/{index[name]}.py is already "
                              f"defined there by hand")
        _flush()
        names = _BINDER.bind_namespace(namespace, target, kind, _BOUND)
        _LAZY.append((target, namespace, kind, names))
        _NAMESPACES.append((target, namespace, names))  # the list the loads extend
        return list(names)
    names = _BINDER.bind_namespace(namespace, target, kind, declared() if decls is None else decls)
    _NAMESPACES.append((target, namespace, list(names)))
    for listener in list(_LISTENERS):
        listener(target, namespace, list(names))
    return names


def bound_namespaces(
    listener: Optional[Callable[[str, MutableMapping[str, Any], List[str]], None]] = None,
) -> List[Tuple[str, MutableMapping[str, Any], List[str]]]:
    """The namespaces bound so far, as (target, namespace, names bound there); `listener`, if
    given, is also called so with each namespace bound from now on (a module imported later).
    Every family is loaded first, so the names are all of them."""
    load_families()
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
    """Every declaration, by family, each family's in its module's order (for the stub and README
    generators): the order does not depend on which family was used first."""
    return sorted(load_families(), key=lambda d: d.family)


def lazy_function(namespace: MutableMapping[str, Any], name: str) -> Any:
    """The declared `rustgrad.<name>` function, its family loaded if it was not (for the package's
    `__getattr__`); KeyError where no family declares that name."""
    family = _index.FUNCTION[name]
    load_family(family)
    if name not in namespace:
        raise _stale_index(f"rustgrad.{name}", family)
    return namespace[name]


def saved_getters() -> Dict[str, Dict[str, Callable[[Tuple[Any, ...], Any], Any]]]:
    """Every node's `_saved_<name>` getters (`_declare.SAVED`), every family loaded."""
    load_families()
    return _declare.SAVED
