"""`_ops._params.parameters` reads an op's parameters from its code object instead of building a
Signature (import time); it must agree with `inspect.signature` on every declared op, on the
wrappers `op` makes, and on the parameter shapes Python has."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Tuple

import pytest
import rustgrad  # noqa: F401  (declares every op)
from rustgrad._ops._declare import DECLS
from rustgrad._ops._params import parameters


def _by_inspect(fn: Callable[..., Any]) -> Tuple[Tuple[str, Any], ...]:
    return tuple((n, p.kind) for n, p in inspect.signature(fn).parameters.items())


def _every_declared() -> list:
    fns = []
    for d in DECLS:
        fns += [d.fn, getattr(d.fn, "autocast_of", d.fn), getattr(d.fn, "__wrapped__", d.fn)]
    return fns


def test_agrees_with_inspect_on_every_declared_op() -> None:
    fns = _every_declared()
    assert len(fns) > 1000
    differ = [f for f in fns if parameters(f) != _by_inspect(f)]
    assert differ == []


def _all_kinds(a: Any, b: Any = 1, /, c: Any = 2, *rest: Any, d: Any, e: Any = 3, **kw: Any) -> None:
    x = 1  # a local after the parameters in co_varnames
    del x


def _no_star(a: Any, *, dim: Any = None, keepdim: bool = False) -> None: ...


@pytest.mark.parametrize("fn", [_all_kinds, _no_star, lambda: None, lambda *a: None, lambda **k: None])
def test_agrees_with_inspect_on_every_parameter_kind(fn: Callable[..., Any]) -> None:
    assert parameters(fn) == _by_inspect(fn)


def test_a_wrapper_or_builtin_goes_through_inspect() -> None:
    wrapped = functools.wraps(_no_star)(lambda *a, **k: None)
    assert parameters(wrapped) == _by_inspect(_no_star)
    assert parameters(len) == _by_inspect(len) == (("obj", inspect.Parameter.POSITIONAL_ONLY),)
