"""Op declarations and the binder: every public name is declared once, beside its op, and bound
to exactly that function."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad import _bind
from rustgrad._ops import arith
from rustgrad._ops._declare import Decl


def _decl(fn: Any, **names: Any) -> Decl:
    fields = {k: tuple(v) for k, v in names.items()}
    return Decl(fn=fn, family="test", **fields)


def _one(self: Any) -> int:
    return 1


def _two(self: Any) -> int:
    return 2


def test_binder_method_declared_twice_raises_naming_both_places():
    class T:
        pass

    binder = _bind.Binder()
    with pytest.raises(ImportError, match=r"T\.twice is declared twice: by .*_one and by .*_two"):
        binder.bind_tensor(T, [_decl(_one, method=["twice"]), _decl(_two, method=["twice"])])


def test_binder_function_declared_twice_raises():
    binder = _bind.Binder()
    ns: dict = {}
    with pytest.raises(ImportError, match="ns.f is declared twice"):
        binder.bind_namespace(ns, "ns", "function", [_decl(_one, function=["f"]),
                                                     _decl(_two, function=["f"])])


def test_binder_name_defined_by_hand_is_not_silently_replaced():
    class T:
        def mine(self) -> int:
            return 0

    binder = _bind.Binder()
    with pytest.raises(ImportError, match="already defined there by hand"):
        binder.bind_tensor(T, [_decl(_one, method=["mine"])])
    assert T().mine() == 0


def test_binder_binds_methods_operators_properties_and_functions():
    class T:
        pass

    binder = _bind.Binder()
    binder.bind_tensor(T, [_decl(_one, method=["one"], dunder=["__len__"]), _decl(_two, prop=["two"])])
    t = T()
    assert t.one() == 1 and len(t) == 1 and t.two == 2
    ns: dict = {}
    assert binder.bind_namespace(ns, "ns", "function", [_decl(_one, function=["a", "b"])]) == ["a", "b"]
    assert ns["a"] is _one and ns["b"] is _one


def test_every_declared_name_is_bound_to_its_function():
    for d in _bind.declared():
        for name in d.method + d.dunder:
            assert inspect.getattr_static(rustgrad.Tensor, name) is d.fn, f"Tensor.{name}"
        for name in d.prop:
            assert inspect.getattr_static(rustgrad.Tensor, name).fget is d.fn, f"Tensor.{name}"
        for name in d.function:
            assert getattr(rustgrad, name) is d.fn, f"rustgrad.{name}"
        for name in d.functional:
            assert getattr(F, name) is d.fn, f"nn.functional.{name}"


def test_every_public_name_is_declared_at_most_once():
    seen: dict = {}
    for d in _bind.declared():
        for kind in ("method", "dunder", "prop", "function", "functional"):
            for name in getattr(d, kind):
                key = ("Tensor" if kind in ("method", "dunder", "prop") else kind, name)
                assert key not in seen, f"{key} declared by {seen.get(key)} and {d.fn.__qualname__}"
                seen[key] = d.fn.__qualname__


def test_hot_path_operators_are_the_op_functions_without_a_wrapper():
    # the recorded-op hot path must not gain a Python frame: the operator is the op itself
    assert rustgrad.Tensor.__mul__ is arith.mul
    assert rustgrad.Tensor.__add__ is arith.add
    assert rustgrad.Tensor.mul is arith.mul


def test_saved_attributes_come_from_the_declarations():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = rustgrad.tensor([3.0, 4.0], requires_grad=True)
    node = (x * y).grad_fn
    assert node._saved_self is x or bool((node._saved_self == x).all())
    assert bool((node._saved_other == y).all())
    assert bool((x.exp().grad_fn._saved_result == x.exp()).all())


def test_package_namespace_does_not_shadow_what_torch_names_differently():
    # torch's dtype aliases are in the namespace, as torch's
    assert rustgrad.float is rustgrad.float32 and rustgrad.int is rustgrad.int32
    assert rustgrad.bool.is_floating_point is False


def test_every_op_declares_a_one_line_docstring():
    missing = [f"{d.family}.{d.fn.__name__}" for d in _bind.declared() if not d.doc.strip()]
    assert not missing, f"ops without a docstring: {missing}"


_PACKAGE = Path(rustgrad.__file__).parent


def _sources(*folders: str) -> list:
    return [p for f in folders for p in sorted((_PACKAGE / f).rglob("*.py"))]


def test_no_array_library_imported_past_the_dispatch_layer():
    # ops take their array namespace from their inputs: only _backends knows NumPy or CuPy
    offenders = [
        str(p.relative_to(_PACKAGE)) for p in _sources("_ops", "nn", "optim", "autograd")
        if re.search(r"^\s*(import numpy|from numpy|import cupy|from cupy)", p.read_text(), re.M)
    ]
    assert not offenders, offenders


def test_array_interface_and_the_test_device_stay_out_of_the_package():
    for p in _PACKAGE.rglob("*.py"):
        text = p.read_text()
        if p.parent.name != "_backends":
            assert "__array_interface__" not in text, p
        assert '"fake"' not in text and "strict_cupy" not in text, p


def test_nodes_are_recorded_only_by_the_op_layer():
    allowed = {"_ops", "autograd"}
    for p in _PACKAGE.rglob("*.py"):
        rel = p.relative_to(_PACKAGE)
        if rel.parts[0] in allowed:
            continue
        # a call of `record(` or `_core.record(`; a method of another object (a CUDA event's)
        # or a function of its own named so (torch's elastic `record`) is fine
        pattern = r"(?<![.\w])(?<!def )record(_multi)?\(|\b_core\.record(_multi)?\("
        assert not re.search(pattern, p.read_text()), rel
