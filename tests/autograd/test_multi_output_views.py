"""Views returned together by one function (unbind, split, chunk, split_with_sizes): torch's
MULTI_OUTPUT_NODE views refuse in-place writes with autograd, and once one of them (or their
base) was written, none of them can be used with autograd — each against torch."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

SPLITTERS = {
    # torch >= 2.15 names the node without its "Backward<n>" suffix in these messages
    "unbind": ("Unbind", lambda y: y.unbind()),
    "split": ("Split", lambda y: y.split(1)),
    "chunk": ("Split", lambda y: y.chunk(2)),
    "split_with_sizes": ("SplitWithSizes", lambda y: y.split([1, 1])),
    "unbind_dim1": ("Unbind", lambda y: y.unbind(1)),
}
TAIL = ("This view is the output of a function that returns multiple views. Such functions do "
        "not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.")


def _pieces(lib, how):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    return x, y, SPLITTERS[how][1](y)


def _message(f) -> str:
    with pytest.raises(RuntimeError) as info:
        f()
    return str(info.value)


@pytest.mark.parametrize("how", list(SPLITTERS))
def test_inplace_on_a_piece_is_refused_with_torchs_message(lib, how):
    name = SPLITTERS[how][0]
    x, y, parts = _pieces(lib, how)
    assert _message(lambda: parts[1].mul_(2)) == (
        f"Output 1 of {name} is a view and is being modified inplace. {TAIL}")
    np.testing.assert_array_equal(y.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    # the pieces still work out of place
    (parts[0] * 2 + parts[1]).sum().backward()
    assert x.grad is not None


@pytest.mark.parametrize("how", ["unbind", "split"])
def test_a_write_under_no_grad_makes_every_piece_unusable(lib, how):
    name = SPLITTERS[how][0]
    _, _, parts = _pieces(lib, how)
    with lib.no_grad():
        parts[1].mul_(2)
    for k in (0, 1):
        assert _message(lambda k=k: parts[k].grad_fn) == (
            f"Output {k} of {name} is a view and its base or another view of its base has been "
            f"modified inplace. {TAIL}")
    assert "grad_fn=<Invalid>" in repr(parts[1])  # repr does not raise


def test_a_write_to_the_base_makes_the_pieces_unusable(lib):
    _, y, parts = _pieces(lib, "unbind")
    y.mul_(2)
    assert "its base or another view of its base has been modified inplace" in _message(
        lambda: parts[0].sum())


def test_a_view_of_a_piece_inherits_the_refusal(lib):
    _, _, parts = _pieces(lib, "unbind")
    w = parts[0].view(2)
    assert _message(lambda: w.mul_(2)) == (
        f"Output 0 of View is a view and is being modified inplace. {TAIL}")


def test_pieces_of_a_tensor_not_requiring_grad_may_be_written(lib):
    z = lib.ones(2, 2)
    a, b = z.unbind()
    a.mul_(3)
    np.testing.assert_array_equal(z.numpy(), [[3.0, 3.0], [1.0, 1.0]])


def test_pieces_made_under_no_grad_follow_the_no_grad_rule(lib):
    x = lib.ones(2, 2, requires_grad=True)
    y = x * 1
    with lib.no_grad():
        a, _ = y.unbind()
    assert "no_grad mode" in _message(lambda: a.mul_(2))


@pytest.mark.parametrize("how", list(SPLITTERS))
def test_one_node_for_the_pieces_as_torchs(how):
    def graph(lib):
        x, y, parts = _pieces(lib, how)
        fn = parts[0].grad_fn
        same = all(p.grad_fn is fn for p in parts)
        saved = {a: getattr(fn, a) for a in dir(fn) if a.startswith("_saved_")}
        # the second piece alone gets a gradient: the join's other inputs are edgeless zeros
        (g,) = lib.autograd.grad((parts[1] * parts[1]).sum(), y, create_graph=True)
        joined = (type(g.grad_fn).__name__, [f is None for f, _ in g.grad_fn.next_functions])
        return (same, [p.output_nr for p in parts], type(fn).__name__, saved, joined,
                g.detach().tolist())

    assert graph(rustgrad) == graph(torch)
