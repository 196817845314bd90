"""Op declarations: each op states, next to its definition, every public name it goes by.

    @op(method="add", dunder=("__add__",), function="add", grad_fn="AddBackward0")
    def add(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor: ...

`op` records a `Decl` and returns the function itself, so a bound method or operator is the op
function with no wrapper frame (the recorded-op hot path stays one Python call). Nothing is
attached here: `rustgrad._bind` attaches every declared name once, after all families are
imported, and refuses a name declared twice. The same declarations feed the generated stubs, the
README op table and `grad_fn._saved_<name>` (`saved`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

F = TypeVar("F", bound=Callable[..., Any])
Names = Union[str, Sequence[str], None]
# grad_fn name -> attribute -> getter(saved values tuple, ctx) giving torch's `_saved_<attr>`
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
        d = Decl(
            fn=fn,
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
