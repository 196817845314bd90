"""Op declarations: each op states, next to its definition, every public name it goes by.

    @op(method="add", dunder=("__add__",), function="add", grad_fn="AddBackward0")
    def add(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor: ...

`op` records a `Decl` and returns the function itself, so a bound method or operator is the op
function with no wrapper frame (the recorded-op hot path stays one Python call). The one
exception is an op with a `dim` or `keepdim` parameter: its public names are bound to an adapter
that also takes NumPy's `axis=`/`keepdims=`, as torch's parser does (`with_numpy_aliases`); the
family module's own name stays the plain function for internal callers. Nothing is
attached here: `rustgrad._bind` attaches every declared name once, after all families are
imported, and refuses a name declared twice. The same declarations feed the generated stubs, the
README op table and `grad_fn._saved_<name>` (`saved`).
"""

from __future__ import annotations

import functools
import inspect
import os
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, cast

from .. import _memory_format
from ._autocast_lists import NAMES as _AUTOCAST_NAMES

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

F = TypeVar("F", bound=Callable[..., Any])
Names = Union[str, Sequence[str], None]
# grad_fn name -> attribute -> getter(saved values tuple, ctx) giving torch's `_saved_<attr>`
_P = inspect.Parameter
SavedGetters = Mapping[str, Mapping[str, Callable[[Tuple[Any, ...], Any], Any]]]


@dataclass(frozen=True)
class Decl:
    """One op's public surface: the function and the names it is bound to."""

    fn: Callable[..., Any]
    family: str
    method: Tuple[str, ...] = ()
    dunder: Tuple[str, ...] = ()
    function: Tuple[str, ...] = ()
    functional: Tuple[str, ...] = ()
    prop: Tuple[str, ...] = ()
    grad_fn: Tuple[str, ...] = ()
    saved: SavedGetters = field(default_factory=dict)
    doc: str = ""

    @property
    def name(self) -> str:
        return self.fn.__name__


DECLS: List[Decl] = []
# grad_fn name -> its `_saved_<attr>` getters, merged from every declaration
SAVED: Dict[str, Dict[str, Callable[[Tuple[Any, ...], Any], Any]]] = {}


def _names(v: Names) -> Tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


def op(
    *,
    method: Names = None,
    dunder: Names = None,
    function: Names = None,
    functional: Names = None,
    prop: Names = None,
    grad_fn: Names = None,
    saved: Optional[SavedGetters] = None,
    doc: Optional[str] = None,
) -> Callable[[F], F]:
    """Declares the decorated function as an op with these public names (see module doc).

    method: Tensor methods; dunder: Tensor operators; function: `rustgrad.<name>`;
    functional: `rustgrad.nn.functional.<name>`; prop: Tensor properties (the function takes
    self only); grad_fn: the node names it records; saved: `_saved_<attr>` getters per node;
    doc: the one-line docstring (defaults to the first line of the function's own)."""

    def declare(fn: F) -> F:
        line = doc or (fn.__doc__ or "").strip().split("\n")[0]
        if not fn.__doc__ and line:
            fn.__doc__ = line
        fn = with_autocast(fn)
        d = Decl(
            fn=with_numpy_aliases(fn),
            family=fn.__module__.rsplit(".", 1)[-1],
            method=_names(method),
            dunder=_names(dunder),
            function=_names(function),
            functional=_names(functional),
            prop=_names(prop),
            grad_fn=_names(grad_fn),
            saved=dict(saved or {}),
            doc=line,
        )
        DECLS.append(d)
        for node, getters in d.saved.items():
            SAVED.setdefault(node, {}).update(getters)
        return fn

    return declare


# ---- autocast --------------------------------------------------------------------------------
# An op torch's autocast lists name (_autocast_lists.py) is declared, and bound in its
# family module, as an entry point that checks one flag: `autocast_dispatch`, None unless an
# enabled autocast region is open in some thread (rustgrad.amp sets it). Other ops, the
# arithmetic hot path among them, are left as they are.
autocast_dispatch: Optional[Callable[..., Any]] = None


def with_autocast(fn: F) -> F:
    """fn, or its autocast entry point where an autocast list names it (see above)."""
    name = fn.__name__
    if name not in _AUTOCAST_NAMES:
        return fn

    def entry(*args: Any, **kwargs: Any) -> Any:
        if autocast_dispatch is None:
            return fn(*args, **kwargs)
        return autocast_dispatch(name, fn, args, kwargs)

    entry = functools.update_wrapper(entry, fn)
    entry.autocast_of = fn  # type: ignore[attr-defined]
    return cast(F, entry)


# ---- NumPy's keyword names --------------------------------------------------------------
# torch's argument parser takes NumPy's names for two parameters of its native ops: `axis` for
# `dim` and `keepdims` for `keepdim`. An op with either parameter is declared through an adapter
# generated with the op's own signature plus the alias keywords (one frame, no *args packing);
# an op without them (the arithmetic hot path) is bound as itself.
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim"}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _both(name: str, param: str, alias: str) -> TypeError:
    # torch's argument parser, when both are given, reports the alias as unexpected
    return TypeError(f"{name}() got an unexpected keyword argument '{alias}'")


def with_numpy_aliases(fn: F) -> F:
    """fn, or an adapter that also takes `axis=`/`keepdims=` where fn has `dim`/`keepdim`."""
    params: Optional[List[inspect.Parameter]] = None
    of = getattr(fn, "autocast_of", fn)  # an autocast entry point takes its op's signature
    if type(of) is types.FunctionType and not hasattr(of, "__wrapped__") and not hasattr(of, "__signature__"):
        # most ops: the parameters read from the code object, as inspect.signature would (its
        # cost is paid on the adapter's first call, not by `import rustgrad`)
        code = of.__code__
        n = code.co_argcount + code.co_kwonlyargcount
        star = bool(code.co_flags & inspect.CO_VARARGS)
        names = set(code.co_varnames[:n + star + bool(code.co_flags & inspect.CO_VARKEYWORDS)])
        positional_only = star or code.co_posonlyargcount > 0
    else:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return fn
        names = {p.name for p in params}
        positional_only = any(p.kind in (_P.POSITIONAL_ONLY, _P.VAR_POSITIONAL) for p in params)
    aliases = {a: n for a, n in NUMPY_ALIASES.items()
               if n in names and a not in names}
    checks_format = "memory_format" in names
    if not (aliases or checks_format) or positional_only:
        return fn
    ns: Dict[str, Any] = {"_fn": fn, "_M": _MISSING, "_both": _both}
    # compiled on its first call, not here (compiling every adapter cost `import rustgrad` ~6 ms):
    # until then the adapter runs _first_call's code, which compiles the adapter's own code and
    # swaps it in, so the one function object bound everywhere never changes
    adapter = types.FunctionType(_first_call.__code__, ns, fn.__name__)
    ns["_compile_me"] = lambda: _compile_adapter(adapter, fn, params, aliases, checks_format)
    adapter = functools.update_wrapper(adapter, fn)
    # pickled by reference as `<family>.<op>.numpy_aliases`, which names this very object
    fn.numpy_aliases = adapter  # type: ignore[attr-defined]
    adapter.__qualname__ = f"{fn.__qualname__}.numpy_aliases"
    return cast(F, adapter)


def _compile_me() -> Callable[..., Any]:
    raise AssertionError("called only as a global of an adapter's own namespace")


def _first_call(*args: Any, **kwargs: Any) -> Any:
    # runs as a not yet compiled adapter: its globals are the adapter's namespace, where
    # _compile_me compiles the adapter (swapping this code out) and returns it
    return _compile_me()(*args, **kwargs)


def _compile_adapter(adapter: Any, fn: Callable[..., Any], params: Optional[List[inspect.Parameter]],
                     aliases: Dict[str, str], checks_format: bool) -> Any:
    """Compiles the adapter's code (fn's signature plus the alias keywords) into adapter."""
    if adapter.__code__ is not _first_call.__code__:
        return adapter  # another thread compiled it first
    if params is None:
        params = list(inspect.signature(fn).parameters.values())
    ns = adapter.__globals__
    targets = set(aliases.values())
    first = min((i for i, p in enumerate(params) if p.name in targets), default=len(params))
    # an alias target and every required positional after it may now be left out (given by alias)
    optional = {p.name for i, p in enumerate(params)
                if p.name in targets or (i > first and p.default is _P.empty and p.kind is _P.POSITIONAL_OR_KEYWORD)}
    if checks_format:
        ns["_check_format"] = _memory_format.check
    sig, call = [], []
    kw_started = False
    for p in params:
        if p.kind is _P.KEYWORD_ONLY and not kw_started:
            sig.append("*")
            kw_started = True
        if p.kind is _P.VAR_KEYWORD:
            sig.append(f"**{p.name}")
            call.append(f"**{p.name}")
            continue
        if p.name in optional:
            sig.append(f"{p.name}=_M")
        elif p.default is not _P.empty:
            ns[f"_d_{p.name}"] = p.default
            sig.append(f"{p.name}=_d_{p.name}")
        else:
            sig.append(p.name)
        call.append(p.name if p.kind is _P.POSITIONAL_OR_KEYWORD else f"{p.name}={p.name}")
    kw_at = next((i for i, s in enumerate(sig) if s.startswith("**")), len(sig))
    extra = [f"{a}=_M" for a in aliases]
    if extra:
        sig[kw_at:kw_at] = extra if kw_started else ["*", *extra]
    body = []
    for a, n in aliases.items():
        body += [f"    if {a} is not _M:",
                 f"        if {n} is not _M: raise _both({fn.__name__!r}, {n!r}, {a!r})",
                 f"        {n} = {a}"]
    if checks_format:
        body.append(f"    _check_format({params[0].name}, memory_format, {fn.__name__!r})")
    required = []
    for p in params:
        if p.name not in optional:
            continue
        if p.default is not _P.empty:
            ns[f"_d_{p.name}"] = p.default
            body.append(f"    if {p.name} is _M: {p.name} = _d_{p.name}")
        else:
            required.append(p.name)
    if required:
        # left out: the op itself raises its missing-argument error
        given = ", ".join(f"({p.name!r}, {p.name})" for p in params
                          if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY))
        test = " or ".join(f"{r} is _M" for r in required)
        body += [f"    if {test}:",
                 f"        return _fn(**{{k: v for k, v in ({given},) if v is not _M}})"]
    src = (f"def {fn.__name__}({', '.join(sig)}):\n" + "\n".join(body)
           + f"\n    return _fn({', '.join(call)})\n")
    # named inside the package, so provenance sites (Note [Sites]) skip this frame
    where = os.path.join(_PACKAGE_DIR, f"<numpy aliases of {fn.__module__}.{fn.__qualname__}>")
    exec(compile(src, where, "exec"), ns)
    made = ns[fn.__name__]
    adapter.__kwdefaults__ = made.__kwdefaults__
    adapter.__defaults__ = made.__defaults__
    adapter.__code__ = made.__code__
    return adapter
