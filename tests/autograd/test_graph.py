"""grad_fn objects: names, next_functions wiring, AccumulateGrad.variable (torch vs rustgrad)."""

from __future__ import annotations

import importlib

import pytest
import rustgrad
import torch


def _structure(fn, depth=0):
    """A grad_fn graph as nested (name, [(input_nr, child)...]) tuples; None for no edge."""
    if fn is None:
        return None
    assert depth < 50
    return (
        fn.name(),
        tuple((nr, _structure(child, depth + 1)) for child, nr in fn.next_functions),
    )


def _small_graph(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    w = m.tensor([3.0, 4.0], requires_grad=True)
    c = m.tensor([5.0, 6.0])
    y = ((x * w + x) * c).exp().sum()
    return x, w, y


def test_next_functions_structure_of_small_graph_matches_torch():
    want = _structure(_small_graph(torch)[2].grad_fn)
    got = _structure(_small_graph(rustgrad)[2].grad_fn)

    assert got == want
    # torch's own spelling, checked once so a torch upgrade that renames shows up here
    assert want[0] == "SumBackward0"
    assert want[1][0][1][0] == "ExpBackward0"


@pytest.mark.parametrize(
    "program",
    [
        "x * 2", "x + x", "x - 1", "x / 2", "-x", "x ** 2", "x.exp()", "x.sum()", "x.mean()",
        "x.clone()", "x.view(2)", "x.reshape(2)", "x[0]", "x.unsqueeze(0)", "x.relu()",
        "x.sigmoid()", "x.tanh()", "x.abs()", "x @ x", "x.t()", "x.to(torch.float64)",
    ],
)
def test_grad_fn_name_of_op_matches_torch(program):
    names = []
    for m in (torch, rustgrad):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        names.append(eval(program, {"x": x, "torch": m}).grad_fn.name())

    assert names[1] == names[0]


def test_next_functions_input_without_grad_is_none_edge(lib):
    x = lib.tensor([1.0], requires_grad=True)
    c = lib.tensor([2.0])

    nf = (x * c).grad_fn.next_functions

    assert len(nf) == 2
    assert nf[0][0].name() == "torch::autograd::AccumulateGrad" and nf[0][1] == 0
    assert nf[1] == (None, 0)


def test_next_functions_same_input_twice_shares_one_accumulate_grad(lib):
    x = lib.tensor([1.0], requires_grad=True)

    (a, na), (b, nb) = (x * x).grad_fn.next_functions

    assert a == b and (na, nb) == (0, 0)


def test_accumulate_grad_variable_is_the_leaf(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2

    acc = y.grad_fn.next_functions[0][0]

    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert acc.variable is x
    assert acc.next_functions == ()


def test_accumulate_grad_is_shared_while_graph_lives(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y1, y2 = x * 2, x * 3

    assert y1.grad_fn.next_functions[0][0] == y2.grad_fn.next_functions[0][0]


def test_grad_fn_repr_names_the_node(lib):
    y = lib.tensor([1.0], requires_grad=True) * 2

    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert repr(y) == "tensor([2.], grad_fn=<MulBackward0>)"


def test_grad_fn_of_chain_follows_next_functions_to_leaf(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = ((x * 2) + 1).sum()

    names = []
    fn = y.grad_fn
    while fn is not None:
        names.append(fn.name())
        fn = fn.next_functions[0][0] if fn.next_functions else None

    assert names == [
        "SumBackward0", "AddBackward0", "MulBackward0", "torch::autograd::AccumulateGrad",
    ]


def test_autograd_graph_node_is_type_of_grad_fn(lib):
    graph = importlib.import_module(f"{lib.__name__}.autograd.graph")
    y = lib.tensor([1.0], requires_grad=True) * 2

    assert isinstance(y.grad_fn, graph.Node)


def test_grad_fn_is_one_python_object_per_node(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()

    assert y.grad_fn is y.grad_fn
    mul = z.grad_fn.next_functions[0][0]
    assert mul.next_functions[0][0] is y.grad_fn
    assert mul.next_functions[0][0] is mul.next_functions[1][0]
    acc = y.grad_fn.next_functions[0][0]
    assert acc is (x * 3).grad_fn.next_functions[0][0]


def test_grad_fn_ids_name_nodes_for_graph_walkers(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = (x * 2 + x).sum()

    seen, stack = {}, [y.grad_fn]
    while stack:
        fn = stack.pop()
        seen[id(fn)] = fn  # kept alive, as graph walkers do, so ids stay unique
        stack.extend(f for f, _ in fn.next_functions if f is not None and id(f) not in seen)

    assert sorted(fn.name() for fn in seen.values()) == [
        "AddBackward0", "MulBackward0", "SumBackward0", "torch::autograd::AccumulateGrad",
    ]


def test_saved_non_tensor_attributes_survive_backward_and_reductions_expose_dims(lib):
    x = lib.ones(2, 3, requires_grad=True)
    y = x.pow(2)
    y.sum().backward()
    assert y.grad_fn._saved_exponent == 2  # not a tensor: readable after backward
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn._saved_self
    s = x.sum(1, keepdim=True)
    assert (s.grad_fn._saved_dim, s.grad_fn._saved_keepdim) == ((1,), True)
    assert tuple(s.grad_fn._saved_self_sym_sizes) == (2, 3)
    m = x.mean((0, 1))
    assert m.grad_fn._saved_dim == (0, 1)
