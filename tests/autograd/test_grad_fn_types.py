"""Each grad_fn name is its own Python type, as torch's (`type(fn).__name__ == "MulBackward0"`),
all subclasses of `autograd.graph.Node`; what torchviz-style graph walkers read works."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

from tests.parity import parity


def _program(lib: Any) -> Tuple[Any, Any, Any]:
    x = lib.ones(2, 3, requires_grad=True)
    w = lib.full((3,), 0.5, requires_grad=True)
    y = ((x * w).relu().sum(dim=1) + x.mean()).exp().sum()
    return x, w, y


def _walk(lib: Any, root: Any, params: Dict[int, str]) -> List[Tuple[str, ...]]:
    """A torchviz-like walk: type names, edges, AccumulateGrad variables, saved tensors."""
    seen, keep, out, stack = set(), [], [], [root]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        keep.append(fn)  # ids stay unique while the walk holds its nodes
        name = type(fn).__name__
        row: Tuple[str, ...] = (name, fn.name().split("::")[-1])
        if name == "AccumulateGrad":
            row += (params[id(fn.variable)], str(tuple(fn.variable.shape)))
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                val = getattr(fn, attr)
                if isinstance(val, lib.Tensor):
                    row += (attr, str(tuple(val.shape)))
        out.append(row)
        for nxt, _ in fn.next_functions:
            stack.append(nxt)
    return sorted(out)


def test_grad_fn_types_are_named_as_torchs() -> None:
    def run(lib: Any) -> Any:
        x, w, y = _program(lib)
        return _walk(lib, y.grad_fn, {id(x): "x", id(w): "w"})

    parity(run)


def test_every_grad_fn_is_a_node(lib: Any) -> None:
    x, _, y = _program(lib)
    fn = y.grad_fn
    assert isinstance(fn, lib.autograd.graph.Node)
    assert type(fn).__name__ == "SumBackward0" and type(fn) is not lib.autograd.graph.Node
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and isinstance(acc, lib.autograd.graph.Node)
    assert acc.variable is x


def test_one_type_per_name(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    a, b = (x * 2).grad_fn, (x * 3).grad_fn
    assert type(a) is type(b) and a is not b
    assert type((x + 1).grad_fn) is not type(a)
    assert type(a).__module__ == "builtins" and repr(type(a)) == "<class 'MulBackward0'>"


def test_identity_equality_and_hash_survive(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn is y.grad_fn and y.grad_fn == y.grad_fn
    assert hash(y.grad_fn) == hash(y.grad_fn)
    assert y.grad_fn in {y.grad_fn: 1}


def test_saved_tensors_and_hooks_work_on_named_types(lib: Any) -> None:
    x = lib.full((2,), 3.0, requires_grad=True)
    y = x * x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn._saved_self.tolist() == [3.0, 3.0]
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append(type(gi[0]).__name__))
    y.sum().backward()
    assert seen == ["Tensor"] and x.grad.tolist() == [6.0, 6.0]


def test_custom_function_node_type_is_named_after_the_function(lib: Any) -> None:
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    fn = Double.apply(lib.ones(2, requires_grad=True)).grad_fn
    assert type(fn).__name__ == "DoubleBackward"


def test_nodes_cannot_be_made_from_python() -> None:
    import rustgrad

    x = rustgrad.ones(2, requires_grad=True)
    with pytest.raises(TypeError):
        rustgrad.autograd.graph.Node()
    with pytest.raises(TypeError):
        type((x * 2).grad_fn)()


def test_grad_fn_name_is_not_a_per_instance_dict(lib: Any) -> None:
    fn = (lib.ones(2, requires_grad=True) * 2).grad_fn
    with pytest.raises(AttributeError):
        fn.some_new_attribute = 1
