"""Op declarations: each op states, next to its definition, every public name it goes by.

    @op(method="add", dunder=("__add__",), function="add", grad_fn="AddBackward0")
    def add(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor: ...

`op` records a `Decl` and returns the function itself, so a bound method or operator is the op
function with no wrapper frame (the recorded-op hot path stays one Python call). The one
exception is an op with a `dim` or `keepdim` parameter: it is declared (and returned) behind a
normaliser that also takes NumPy's `axis=`/`keepdims=`, as torch's parser does
(`with_numpy_aliases`), so the family module's name and every public name are one object. Nothing is
attached here: `rustgrad._bind` attaches every declared name once, after all families are
imported, and refuses a name declared twice. The same declarations feed the generated stubs, the
README op table and `grad_fn._saved_<name>` (`saved`).
"""

from __future__ import annotations

import functools
import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, cast

from .. import _memory_format
from ._docs import with_common_args
from ._params import parameters

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
    linalg: Tuple[str, ...] = ()
    special: Tuple[str, ...] = ()
    fft: Tuple[str, ...] = ()
    prop: Tuple[str, ...] = ()
    grad_fn: Tuple[str, ...] = ()
    saved: SavedGetters = field(default_factory=dict)
    doc: str = ""
    # what `function` names are bound to when it differs from fn (see `number_first`)
    function_fn: Optional[Callable[..., Any]] = None
    # torch's autocast policy of the op by device type (see `with_autocast`)
    autocast: Mapping[str, str] = field(default_factory=dict)

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
    linalg: Names = None,
    special: Names = None,
    fft: Names = None,
    prop: Names = None,
    grad_fn: Names = None,
    saved: Optional[SavedGetters] = None,
    doc: Optional[str] = None,
    number_first: Optional[Callable[..., Any]] = None,
    autocast: Optional[Mapping[str, str]] = None,
    args_like: Optional[Callable[..., Any]] = None,
) -> Callable[[F], F]:
    """Declares the decorated function as an op with these public names (see module doc).

    method: Tensor methods; dunder: Tensor operators; function: `rustgrad.<name>`;
    functional: `rustgrad.nn.functional.<name>`; linalg, special, fft: `rustgrad.linalg.<name>`,
    `rustgrad.special.<name>`, `rustgrad.fft.<name>`; prop: Tensor properties (the function takes
    self only); grad_fn: the node names it records; saved: `_saved_<attr>` getters per node;
    doc: the one-line docstring (defaults to the first line of the function's own);
    number_first: for the `function` names, what a Python number as the first argument runs
    instead (`rustgrad.add(2., x)`: torch's wrapped number), called with the same arguments;
    autocast: the op's policy in torch's autocast lists, by device type ("cuda" also stands
    for other device types, as torch's lists do), e.g. `dict(cuda="lower", cpu="lower")`;
    args_like: an op whose documented arguments this one shares (its docstring then documents
    only its own; see _docs)."""

    def declare(fn: F) -> F:
        line = doc or (fn.__doc__ or "").strip().split("\n")[0]
        if not fn.__doc__ and line:
            fn.__doc__ = line
        with_common_args(fn, args_like)
        fn = with_numpy_aliases(with_autocast(fn, autocast))
        d = Decl(
            fn=fn,
            family=fn.__module__.rsplit(".", 1)[-1],
            method=_names(method),
            dunder=_names(dunder),
            function=_names(function),
            functional=_names(functional),
            linalg=_names(linalg),
            special=_names(special),
            fft=_names(fft),
            prop=_names(prop),
            grad_fn=_names(grad_fn),
            saved=dict(saved or {}),
            doc=line,
            function_fn=None if number_first is None else _function_form(fn, number_first),
            autocast=dict(autocast or {}),
        )
        DECLS.append(d)
        for node, getters in d.saved.items():
            SAVED.setdefault(node, {}).update(getters)
        return fn

    return declare


# ---- a number first -------------------------------------------------------------------------
# A method's first argument is a tensor; torch's functions also take a Python number there
# (`torch.add(2., x)`, `torch.pow(2, x)`). The function names of such an op are bound to one
# form of it that hands a number first to the op's `number_first`; the op and its docs are
# written once.
_NUMBERS = (bool, int, float)


def _function_form(fn: Callable[..., Any], number_first: Callable[..., Any]) -> Callable[..., Any]:
    def function(input: Any, *args: Any, **kwargs: Any) -> Any:
        if type(input) in _NUMBERS:
            return number_first(input, *args, **kwargs)
        return fn(input, *args, **kwargs)

    function = functools.update_wrapper(function, fn)
    sig = inspect.signature(fn)
    first, *rest = sig.parameters.values()
    function.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[first.replace(annotation=Any), *rest])
    # pickled by reference as `<family>.<op>.function`, which names this very object
    function.__qualname__ = f"{fn.__qualname__}.function"
    fn.function = function  # type: ignore[attr-defined]
    return function


# ---- autocast --------------------------------------------------------------------------------
# An op in torch's autocast lists declares its policy there, `@op(..., autocast=dict(cuda=LOWER))`:
# its names are bound to an entry point that checks one flag, `autocast_dispatch`, None unless
# an enabled autocast region is open in some thread (rustgrad.amp sets it). Other ops, the
# arithmetic hot path among them, are left as they are.
LOWER = "lower"  # floating inputs cast to the region's lower precision dtype
FP32 = "fp32"  # floating inputs cast to float32
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"  # run with dtype=float32 unless one was given
FP32_APPEND_DTYPE = "fp32_append_dtype"  # norm: run with dtype=float32
PROMOTE = "promote"  # floating inputs cast to the widest of their dtypes
BANNED = "banned"  # refused in the region (binary_cross_entropy on cuda)
POLICIES = frozenset({LOWER, FP32, FP32_SET_OPT_DTYPE, FP32_APPEND_DTYPE, PROMOTE, BANNED})
autocast_dispatch: Optional[Callable[..., Any]] = None


def with_autocast(fn: F, policy: Optional[Mapping[str, str]]) -> F:
    """fn, or its autocast entry point where it declares a policy (see above)."""
    if not policy:
        return fn
    bad = {k: v for k, v in policy.items() if k not in ("cuda", "cpu") or v not in POLICIES}
    if bad:
        raise ValueError(f"{fn.__qualname__}: autocast policy {bad} (device types cuda/cpu; "
                         f"policies {sorted(POLICIES)})")
    policies = dict(policy)

    def entry(*args: Any, **kwargs: Any) -> Any:
        if autocast_dispatch is None:
            return fn(*args, **kwargs)
        return autocast_dispatch(policies, fn, args, kwargs)

    entry = functools.update_wrapper(entry, fn)
    entry.autocast_of = fn  # type: ignore[attr-defined]
    return cast(F, entry)


# ---- NumPy's keyword names --------------------------------------------------------------
# torch's argument parser takes NumPy's names for two parameters of its native ops: `axis` for
# `dim` and `keepdims` for `keepdim`. An op with either parameter (or with `memory_format`,
# which torch checks against the input's rank) is declared as one normaliser around it that
# renames the keywords; an op without them (the arithmetic hot path) is declared as itself.
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def _both(name: str, alias: str) -> TypeError:
    # torch's argument parser, when both are given, reports the alias as unexpected
    return TypeError(f"{name}() got an unexpected keyword argument '{alias}'")


def with_numpy_aliases(fn: F) -> F:
    """fn, or fn behind a normaliser of `axis=`/`keepdims=` (and a `memory_format=` check)."""
    of = getattr(fn, "autocast_of", fn)  # an autocast entry point takes its op's signature
    try:
        params = dict(parameters(of))
    except (TypeError, ValueError):
        return fn
    if _P.VAR_POSITIONAL in params.values():
        return fn
    order = [n for n, kind in params.items() if kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    # (alias, parameter, how many positional arguments give the parameter too)
    aliases = tuple((a, n, order.index(n) + 1 if n in order else len(order) + 1)
                    for a, n in NUMPY_ALIASES.items() if n in params and a not in params)
    checks_format = "memory_format" in params
    if not (aliases or checks_format):
        return fn
    name = fn.__name__
    first = next(iter(params))

    def normalised(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, param, given_at in aliases:
                if alias in kwargs:
                    if param in kwargs or len(args) >= given_at:
                        raise _both(name, alias)
                    kwargs[param] = kwargs.pop(alias)
            if checks_format and "memory_format" in kwargs:
                _memory_format.check(args[0] if args else kwargs.get(first), kwargs["memory_format"], name)
        return fn(*args, **kwargs)

    return cast(F, functools.update_wrapper(normalised, fn))
