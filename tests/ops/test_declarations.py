"""Op declarations and the binder: every public name is declared once, beside its op, and bound
to exactly that function."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad import _bind, _core
from rustgrad._ops import arith
from rustgrad._ops._declare import Decl
from rustgrad._ops._node import NODES


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
            # an op taking a number first (rustgrad.add(2., x)) is bound as its function form
            assert getattr(rustgrad, name) is (d.function_fn or d.fn), f"rustgrad.{name}"
        for name in d.functional:
            assert getattr(F, name) is d.fn, f"nn.functional.{name}"
        for kind in ("linalg", "special", "fft"):
            for name in getattr(d, kind):
                assert getattr(getattr(rustgrad, kind), name) is d.fn, f"rustgrad.{kind}.{name}"


def test_a_number_first_runs_the_ops_function_form():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    assert rustgrad.add(2.0, x).grad_fn.name() == "AddBackward0"
    assert rustgrad.pow(2, x).grad_fn.name() == "PowBackward2"
    assert rustgrad.add.__doc__ == rustgrad.Tensor.add.__doc__



@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_two_numbers_are_wrapped_or_refused_as_torchs(name: str):
    torch = pytest.importorskip("torch")
    try:
        want: Any = getattr(torch, name)(2, 3)
    except TypeError as e:
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            getattr(rustgrad, name)(2, 3)
        assert "invalid combination" in str(e)
        return
    got = getattr(rustgrad, name)(2, 3)
    assert got.tolist() == want.tolist() and str(got.dtype) == str(want.dtype)


def test_every_public_name_is_declared_at_most_once():
    seen: dict = {}
    for d in _bind.declared():
        for kind in ("method", "dunder", "prop", "function", "functional", "linalg", "special", "fft"):
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


# ---- every node an op records is declared by a spec ------------------------------------------
# A backward node is stated once, by its spec (`_ops/_node.py`): name, named saved slots and
# formula. `_core.record` refuses a node name no spec declares, so every test that reaches a
# recording checks it; these tests check the refusal itself, that the op declarations (the README
# table, the stubs) list exactly the specs, and where the plain `record` path is still used.
_RECORDING = ("_ops", "autograd")  # where nodes are recorded (test_nodes_are_recorded_only_by_the_op_layer)

# Specs no op declaration lists: nodes recorded by the machinery, not by an op of their own.
NOT_OPS = {
    "AsStridedScatterBackward0": "the formula of AsStridedBackward0 under create_graph (_ops/copyslices.py)",
    "BackwardHookFunctionBackward": "nn.Module full backward hooks (_ops/backward_hook.py), not an op",
    "torch::autograd::Error": "autograd.function.once_differentiable's delayed error, not an op",
    "CopySlices": "the formula of torch::autograd::CopySlices under create_graph (_ops/copyslices.py); "
                  "CopySlices itself is declared by __setitem__",
    "SafeSoftmaxBackward0": "nn.functional.scaled_dot_product_attention with a mask (nn/functional.py), "
                            "which is not a declared op",
}


def test_recording_a_node_no_spec_declares_raises():
    x = rustgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="node UndeclaredBackward0 is recorded without a node spec"):
        _core.record(x._data * 2, (x,), "UndeclaredBackward0", lambda g, s, c: g)
    with rustgrad.no_grad():  # refused whether or not a node would be made
        with pytest.raises(RuntimeError, match="without a node spec"):
            _core.record(x._data * 2, (x,), "UndeclaredBackward0", lambda g, s, c: g)
    assert _core.record(x._data * 2, (), "", None).grad_fn is None  # no node: no name to check


def test_a_spec_refuses_a_slot_it_does_not_declare_and_names_what_it_saves():
    x = rustgrad.ones(2, requires_grad=True)
    spec = NODES["MulBackward0"]
    with pytest.raises(TypeError, match=r'MulBackward0 saves \["other", "self"\]; it has no slot weight'):
        spec.record(x._data * 2, (x, None), 2.0, weight=x)
    y = spec.record(x._data * x._data, (x, x), self=x, other=x)
    assert y.grad_fn.name() == "MulBackward0" and y.grad_fn._saved_self is x
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_a_formula_reads_its_saved_values_by_slot_name():
    seen = []

    def formula(g: Any, saved: Any, ctx: Any) -> Any:
        seen.append((saved.self is saved[0], saved.result is saved[1], type(saved).__name__))
        return g

    spec = rustgrad._ops._node.node("SlotNamesTestBackward0", formula, saved=("self",), result=True)
    try:
        x = rustgrad.ones(2, requires_grad=True)
        spec.record(x._data + 1, (x,), self=x).sum().backward()
    finally:
        del NODES["SlotNamesTestBackward0"]
    assert seen == [(True, True, "SlotNamesTestBackward0Saved")]


def test_every_node_an_op_declares_has_a_spec():
    missing = sorted({n for d in _bind.declared() for n in d.grad_fn} - set(NODES))
    assert not missing, f"@op(grad_fn=...) names without a spec: {missing}"


def test_every_spec_is_listed_by_an_op_or_says_why():
    listed = {n for d in _bind.declared() for n in d.grad_fn}
    # the package's specs (a test may make specs of its own)
    ours = {n for n, spec in NODES.items() if getattr(spec.backward, "__module__", "").startswith("rustgrad.")}
    unlisted = sorted(ours - listed - set(NOT_OPS))
    assert not unlisted, f"specs no @op(grad_fn=...) lists (list them, or add to NOT_OPS why): {unlisted}"
    for name, reason in NOT_OPS.items():
        assert name in NODES, f"{name} has no spec now: drop it from NOT_OPS ({reason})"
        assert name not in listed, f"{name} is listed by an op: drop it from NOT_OPS ({reason})"


# The plain `record(out, inputs, name, formula, ...)` path, where a spec's `record` cannot serve:
# (file under rustgrad/, function) -> why. Its names are still checked against the specs.
PLAIN_RECORD_SITES = {
    ("_ops/linalg.py", "_einsum_core"): "saves every operand (no fixed slots), sometimes as MulBackward0",
    ("_ops/conv.py", "_pad_index"): "circular pad's CopySlices and torch's names per padded rank",
}


def _plain_record_sites() -> Dict[Tuple[str, str], int]:
    sites: Dict[Tuple[str, str], int] = {}
    for part in _RECORDING:
        for p in sorted((_PACKAGE / part).rglob("*.py")):
            tree = ast.parse(p.read_text())
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for call in ast.walk(fn):
                    if not isinstance(call, ast.Call):
                        continue
                    f = call.func
                    plain = (isinstance(f, ast.Name) and f.id == "record") or (
                        isinstance(f, ast.Attribute) and f.attr == "record"
                        and isinstance(f.value, ast.Name) and f.value.id == "_core")
                    inputs = call.args[1] if len(call.args) > 1 else None
                    if plain and not (isinstance(inputs, ast.Tuple) and not inputs.elts):
                        key = (p.relative_to(_PACKAGE).as_posix(), fn.name)
                        sites[key] = sites.get(key, 0) + 1
    return sites


def test_the_plain_record_path_is_used_only_where_a_spec_cannot_serve():
    sites = _plain_record_sites()
    extra = sorted(set(sites) - set(PLAIN_RECORD_SITES))
    assert not extra, f"nodes recorded without their spec (record through the spec): {extra}"
    gone = sorted(set(PLAIN_RECORD_SITES) - set(sites))
    assert not gone, f"PLAIN_RECORD_SITES entries that record through a spec now: drop them: {gone}"
