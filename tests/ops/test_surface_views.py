"""Issue 24's views, copies and creation surface against torch, on every device: the `*_copy`
functions and narrow_copy, as_strided_scatter, unsafe_split / unsafe_chunk /
unsafe_split_with_sizes, slice_inverse, tril_ / triu_, fill_diagonal_, nonzero_static,
new_empty_strided; the factories unravel_index, range, logspace, normal, empty_permuted,
asarray, can_cast; detach_, the in-place dropout functions, bilinear, conv_tbc, segment_reduce;
and cond / while_loop evaluated eagerly. Values, dtypes, grad_fn names, gradients (gradcheck and
double backward where differentiable), versions and views, and torch's errors."""

from __future__ import annotations

import array as pyarray
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import (
    assert_same_tensor,
    check,
    check_double_backward,
    check_error,
    grad_ok,
    ints,
    rustgrad_on,
    same_error,
)


def _same(fn: Callable[[Any, str], Any], device: str, **kw: Any) -> None:
    """fn(lib, device) under torch (on the CPU) and rustgrad (on device): the same tensors
    (values, dtype, shape; rustgrad's on device), nested in tuples or lists."""
    t, r = fn(torch, "cpu"), fn(rustgrad, device)
    _compare(t, r, "result", device, **kw)


def _compare(t: Any, r: Any, what: str, device: str, **kw: Any) -> None:
    if isinstance(t, torch.Tensor):
        assert_same_tensor(t, r, what, device=device, **kw)
        assert r.requires_grad == t.requires_grad, what
    elif isinstance(t, (tuple, list)):
        assert type(r) is type(t) and len(r) == len(t), f"{what}: {r!r} vs {t!r}"
        for k, (a, b) in enumerate(zip(t, r)):
            _compare(a, b, f"{what}[{k}]", device, **kw)
    else:
        assert r == t, f"{what}: {r!r} vs {t!r}"


def _raises_like(fn: Callable[..., Any], *shapes: Any, phrase: str, device: str) -> None:
    """fn(lib, *inputs) raises under both libraries, with phrase in both messages, and torch's
    exception is an instance of rustgrad's type (torch's control flow raises subclasses of
    RuntimeError from torch.compile, where rustgrad raises RuntimeError itself)."""
    arrays = [np.random.default_rng(0).uniform(-2, 2, size=s) for s in shapes]
    raised = []
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        ins = [lib.tensor(a, dtype=lib.float32, device=dev) for a in arrays]
        with pytest.raises(Exception) as info:
            fn(torch if lib is torch else rustgrad_on(device), *ins)
        raised.append(info.value)
    et, er = raised
    assert isinstance(et, type(er)), f"torch raised {type(et)}, rustgrad {type(er)}"
    assert phrase in str(et), f"torch: {et}"
    assert phrase in str(er), f"rustgrad: {er}"


# ---- the *_copy functions ---------------------------------------------------------------------
COPIES = {
    "alias_copy": ((3, 4), lambda L, a: L.alias_copy(a)),
    "as_strided_copy": ((3, 4), lambda L, a: L.as_strided_copy(a, (2, 2), (1, 2), 1)),
    "as_strided_copy_overlap": ((6,), lambda L, a: L.as_strided_copy(a, (3, 3), (1, 1))),
    "as_strided_copy_view": ((3, 4), lambda L, a: L.as_strided_copy(a[1:], (2, 2), (4, 1))),
    "diagonal_copy": ((3, 4), lambda L, a: L.diagonal_copy(a)),
    "diagonal_copy_offset": ((2, 3, 4), lambda L, a: L.diagonal_copy(a, -1, 2, 0)),
    "expand_copy": ((3, 1), lambda L, a: L.expand_copy(a, (2, 3, 4))),
    "expand_copy_keep": ((3, 1), lambda L, a: L.expand_copy(a, [-1, 5], implicit=True)),
    "narrow_copy": ((3, 4), lambda L, a: L.narrow_copy(a, 1, 1, 2)),
    "narrow_copy_method": ((3, 4), lambda L, a: a.narrow_copy(0, 1, 2)),
    "narrow_copy_tensor_start": ((3, 4), lambda L, a: a.narrow_copy(1, L.tensor(1), 3)),
    "permute_copy": ((2, 3, 4), lambda L, a: L.permute_copy(a, (2, 0, 1))),
    "permute_copy_neg": ((2, 3), lambda L, a: L.permute_copy(a, [-1, 0])),
    "select_copy": ((3, 4), lambda L, a: L.select_copy(a, 1, -1)),
    "slice_copy": ((3, 4), lambda L, a: L.slice_copy(a, 1, 1, 4, 2)),
    "slice_copy_defaults": ((3, 4), lambda L, a: L.slice_copy(a)),
    "slice_copy_clamped": ((3, 4), lambda L, a: L.slice_copy(a, -1, -3, 100)),
    "slice_copy_empty": ((3, 4), lambda L, a: L.slice_copy(a, 0, 2, 1)),
    "split_copy": ((5, 4), lambda L, a: L.split_copy(a, 2)),
    "split_copy_dim": ((3, 4), lambda L, a: L.split_copy(a, 3, 1)),
    "split_with_sizes_copy": ((3, 4), lambda L, a: L.split_with_sizes_copy(a, [1, 0, 3], 1)),
    "squeeze_copy": ((3, 1, 2, 1), lambda L, a: L.squeeze_copy(a)),
    "squeeze_copy_dim": ((3, 1, 2, 1), lambda L, a: L.squeeze_copy(a, 1)),
    "squeeze_copy_dims": ((3, 1, 2, 1), lambda L, a: L.squeeze_copy(a, (1, 3))),
    "t_copy": ((3, 4), lambda L, a: L.t_copy(a)),
    "t_copy_vector": ((3,), lambda L, a: L.t_copy(a)),
    "transpose_copy": ((2, 3, 4), lambda L, a: L.transpose_copy(a, 0, -1)),
    "unbind_copy": ((3, 4), lambda L, a: L.unbind_copy(a, 1)),
    "unbind_copy_default": ((2, 3), lambda L, a: L.unbind_copy(a)),
    "unfold_copy": ((3, 7), lambda L, a: L.unfold_copy(a, 1, 3, 2)),
    "unsqueeze_copy": ((3, 4), lambda L, a: L.unsqueeze_copy(a, -1)),
    "view_copy": ((3, 4), lambda L, a: L.view_copy(a, (2, -1))),
    "view_copy_strided": ((3, 4), lambda L, a: L.view_copy(a.t(), (12,))),
    "copy_of_transposed": ((3, 4), lambda L, a: L.permute_copy(a.t(), (1, 0))),
}


@pytest.mark.parametrize("case", sorted(COPIES))
def test_copy_functions_match_torch_and_are_no_views(case, device):
    shape, fn = COPIES[case]
    check(fn, shape, device=device)  # values, grad_fn names (`..._copy`), views, gradients


@pytest.mark.parametrize("case", sorted(COPIES))
def test_copy_functions_give_contiguous_memory_of_their_own(case, device):
    shape, fn = COPIES[case]
    x = rustgrad.randn(*shape, device=device)
    t = torch.tensor(x.cpu().numpy())
    outs, touts = fn(rustgrad, x), fn(torch, t)
    outs = outs if isinstance(outs, tuple) else (outs,)
    touts = touts if isinstance(touts, tuple) else (touts,)
    for o, to in zip(outs, touts):
        assert o.is_contiguous() and to.is_contiguous()
        assert o._base is None
        if o.numel():
            assert o.stride() == to.stride()
            assert o.data_ptr() != x.data_ptr()
            before = x.clone()
            o.fill_(7)
            assert rustgrad.equal(x, before)  # writing the copy leaves the input alone


@pytest.mark.parametrize("case", ["permute_copy", "unbind_copy", "split_copy", "diagonal_copy",
                                  "unfold_copy", "expand_copy", "as_strided_copy", "select_copy"])
def test_copy_functions_gradcheck_and_double_backward(case, device):
    shape, fn = COPIES[case]
    assert grad_ok(lambda L, a: fn(L, a), shape)
    check_double_backward(lambda L, a: fn(L, a)[0] if isinstance(fn(L, a), tuple) else fn(L, a),
                          shape, device=device)


def test_copy_functions_of_integer_tensors_match_torch(device):
    x = ints([[1, 2, 3], [4, 5, 6]])
    check(lambda L, a: (L.permute_copy(a, (1, 0)), L.view_copy(a, (3, 2)), L.t_copy(a),
                        L.slice_copy(a, 1, 0, 3, 2), *L.split_copy(a, 2, 1)), x,
          dtypes=(None,), device=device)


def test_split_copies_share_one_node_like_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.randn(5, 3, requires_grad=True, device=dev)
        for pieces, name in ((lib.split_copy(x, 2), "SplitBackward0_copy"),
                             (lib.unbind_copy(x), "UnbindBackward0_copy"),
                             (lib.split_with_sizes_copy(x, [4, 1]),
                              "SplitWithSizesBackward0_copy")):
            assert all(p.grad_fn is pieces[0].grad_fn for p in pieces)
            assert pieces[0].grad_fn.name() == name
            assert pieces[0].grad_fn.next_functions[0][0].name() == \
                "torch::autograd::AccumulateGrad"


def test_detach_copy_has_no_derivative_like_torch(device):
    check(lambda L, a: L.detach_copy(a), (3, 4), backward=False, device=device)
    check_error(lambda L, a: L.detach_copy(a).sum().backward(), (3, 4), requires_grad=True,
                phrase="derivative for aten::detach_copy is not implemented", device=device)
    with rustgrad.no_grad():
        assert rustgrad.detach_copy(rustgrad.ones(2, requires_grad=True)).grad_fn is None


def test_view_copy_of_a_dtype_matches_torch(device):
    check(lambda L, a: (L.view_copy(a, L.int32), L.view_copy(a, L.float32)),
          np.arange(6, dtype=np.float32).reshape(2, 3), dtypes=(None,), device=device)
    check(lambda L, a: L.view_copy(a, L.float32), np.arange(6.).reshape(3, 2), dtypes=(None,),
          device=device)
    check(lambda L, a: L.view_copy(a, L.int16), np.arange(4, dtype=np.int32), dtypes=(None,),
          device=device)


COPY_ERRORS = {
    "as_strided_copy": ((3, 4), lambda L, a: L.as_strided_copy(a, (3,), (5,), 10), "setStorage"),
    "diagonal_copy": ((3, 4), lambda L, a: L.diagonal_copy(a, 0, 1, 1),
                      "diagonal dimensions cannot be identical"),
    "expand_copy": ((3, 2), lambda L, a: L.expand_copy(a, (3, 4)),
                    "must match the existing size (2)"),
    "narrow_copy": ((3, 4), lambda L, a: L.narrow_copy(a, 0, 5, 1), "start out of range"),
    "narrow_copy_scalar": ((), lambda L, a: L.narrow_copy(a, 0, 0, 1),
                           "cannot be applied to a 0-dim tensor"),
    "permute_copy": ((3, 4), lambda L, a: L.permute_copy(a, (0, 0)), "duplicate dims"),
    "permute_copy_varargs": ((3, 4), lambda L, a: L.permute_copy(a, 1, 0), "positional argument"),
    "select_copy": ((3, 4), lambda L, a: L.select_copy(a, 1, 4), "out of range"),
    "slice_copy": ((3, 4), lambda L, a: L.slice_copy(a, 1, 0, 3, 0), "slice step must be positive"),
    "split_copy": ((3, 4), lambda L, a: L.split_copy(a, [1, 3], 1),
                   "argument 'split_size' (position 2) must be int, not list"),
    "split_with_sizes_copy": ((3, 4), lambda L, a: L.split_with_sizes_copy(a, [1, 2], 1),
                              "split_with_sizes expects split_sizes to sum exactly to 4"),
    "t_copy": ((2, 2, 2), lambda L, a: L.t_copy(a), "expects a tensor with <= 2 dimensions"),
    "transpose_copy": ((3, 4), lambda L, a: L.transpose_copy(a, 0, 2), "Dimension out of range"),
    "unbind_copy": ((), lambda L, a: L.unbind_copy(a), "tensor has no dimensions"),
    "unfold_copy": ((3, 4), lambda L, a: L.unfold_copy(a, 1, 5, 1),
                   "maximum size for tensor at dimension 1 is 4"),
    "unsqueeze_copy": ((3, 4), lambda L, a: L.unsqueeze_copy(a, 3), "Dimension out of range"),
    "view_copy": ((3, 4), lambda L, a: L.view_copy(a, (5, -1)), "is invalid for input of size 12"),
    "view_copy_dtype": ((3, 3), lambda L, a: L.view_copy(a.float(), L.float64),
                        "must be divisible by 2 to view Float as Double"),
    "view_copy_dtype_0d": ((), lambda L, a: L.view_copy(a.float(), L.float64),
                           "cannot be 0 to view Float as Double"),
}


@pytest.mark.parametrize("case", sorted(COPY_ERRORS))
def test_copy_functions_invalid_arguments_raise_torch_error(case, device):
    shape, fn, phrase = COPY_ERRORS[case]
    check_error(fn, shape, phrase=phrase, device=device)


# ---- as_strided_scatter --------------------------------------------------------------------------
SCATTERS = {
    "function": ((3, 4), (2, 2), lambda L, a, s: L.as_strided_scatter(a, s, (2, 2), (1, 2), 1)),
    "method": ((3, 4), (2, 3), lambda L, a, s: a.as_strided_scatter(s, (2, 3), (4, 1))),
    "diagonal": ((3, 3), (3,), lambda L, a, s: L.as_strided_scatter(a, s, (3,), (4,))),
    "transposed_input": ((4, 3), (2,), lambda L, a, s: L.as_strided_scatter(a.t(), s, (2,), (1,))),
    "sliced_input": ((4, 4), (2, 2), lambda L, a, s: L.as_strided_scatter(a[1:, ::2], s, (2, 2),
                                                                            (2, 1))),
    "empty": ((3, 4), (0, 2), lambda L, a, s: L.as_strided_scatter(a, s, (0, 2), (1, 1))),
    "offset_input": ((4, 4), (2,), lambda L, a, s: L.as_strided_scatter(a[1:3, 1:3], s, (2,),
                                                                         (1,))),
    "outside_the_input": ((4, 4), (2, 2), lambda L, a, s: L.as_strided_scatter(
        a[1:, ::2], s, (2, 2), (2, 1), 0)),
}


def _scatter_reference(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, but under torch the scatter written as its composite (a copy of input's storage, a
    write into its strided part): torch 2.15's own derivative of as_strided_scatter sends
    input's gradient to the written elements instead of the others (its gradcheck fails), and
    refuses a non-contiguous input that requires grad; the composite's gradient is right."""
    def run(L: Any, a: Any, s: Any) -> Any:
        if L is not torch:
            return fn(L, a, s)

        class Scattering:
            @staticmethod
            def as_strided_scatter(x: Any, src: Any, size: Any, stride: Any,
                                   offset: Any = None) -> Any:
                n = x.untyped_storage().nbytes() // x.element_size()
                storage = x.as_strided((n,), (1,), 0).clone()
                out = storage.as_strided(x.shape, x.stride(), x.storage_offset())
                at = x.storage_offset() if offset is None else offset
                storage.as_strided(size, stride, at).copy_(src)
                return out

        return fn(Scattering, a, s)

    return run


@pytest.mark.parametrize("case", sorted(SCATTERS))
def test_as_strided_scatter_matches_torch(case, device):
    a, s, fn = SCATTERS[case]
    check(fn, a, s, device=device, requires_grad=False)  # torch's own op, without autograd
    if case != "method":
        check(_scatter_reference(fn), a, s, device=device, grad_fn=False, versions=False,
              views=False)


def test_as_strided_scatter_records_torch_node(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.randn(3, 4, requires_grad=True, device=dev)
        out = lib.as_strided_scatter(x, lib.randn(2, 2, device=dev), (2, 2), (1, 2), 1)
        assert out.grad_fn.name() == "AsStridedScatterBackward0"
        assert out.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_as_strided_scatter_gradcheck_and_double_backward(device):
    fn = SCATTERS["function"][2]
    assert grad_ok(fn, (3, 4), (2, 2))
    assert grad_ok(SCATTERS["transposed_input"][2], (4, 3), (2,))
    check_double_backward(_scatter_reference(fn), (3, 4), (2, 2), device=device)


def test_as_strided_scatter_keeps_the_input_layout_like_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.zeros(4, 3, device=dev).t()
        out = lib.as_strided_scatter(x, lib.ones(2, device=dev), (2,), (1,))
        assert out.stride() == (1, 3)
        assert out.tolist() == [[1.0, 0, 0, 0], [1.0, 0, 0, 0], [0.0, 0, 0, 0]]
        y = lib.arange(16.0, device=dev).reshape(4, 4)[1:, ::2]
        out = lib.as_strided_scatter(y, lib.full((2, 2), 100.0, device=dev), (2, 2), (2, 1))
        assert out.stride() == (4, 2)  # the offset counts in y's storage: 4, 6 are written
        assert out.tolist() == [[100.0, 100.0], [8.0, 10.0], [12.0, 14.0]]


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, a, s: L.as_strided_scatter(a, s, (2, 2), (1, 2)), "expected src to have a size"),
    (lambda L, a, s: L.as_strided_scatter(a, s[:2, :2], (2, 2), (1, 20)), "setStorage"),
    (lambda L, a, s: L.as_strided_scatter(a, 1.0, (2, 2), (1, 2)), "must be Tensor"),
])
def test_as_strided_scatter_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (3, 4), (3, 2), phrase=phrase, device=device)


# ---- unsafe_split, unsafe_chunk, unsafe_split_with_sizes ------------------------------------------
UNSAFE = {
    "unsafe_split": ((5, 4), lambda L, a: L.unsafe_split(a, 2)),
    "unsafe_split_method_dim": ((5, 4), lambda L, a: a.unsafe_split(3, 1)),
    "unsafe_chunk": ((5, 4), lambda L, a: L.unsafe_chunk(a, 2)),
    "unsafe_chunk_method": ((5, 4), lambda L, a: a.unsafe_chunk(3, -1)),
    "unsafe_chunk_empty": ((0, 3), lambda L, a: L.unsafe_chunk(a, 2)),
    "unsafe_split_with_sizes": ((5, 4), lambda L, a: L.unsafe_split_with_sizes(a, [1, 4])),
    "unsafe_split_with_sizes_method": ((5, 4), lambda L, a: a.unsafe_split_with_sizes([2, 2], 1)),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_splits_match_torch_and_are_no_views(case, device):
    shape, fn = UNSAFE[case]
    check(fn, shape, device=device)  # `_base is None` for both, UnsafeSplit*Backward0


def test_unsafe_split_pieces_share_memory_but_not_versions_like_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.randn(5, 4, requires_grad=True, device=dev)
        y = x * 1
        pieces = lib.unsafe_split(y, 2)
        assert pieces[1].data_ptr() == y.data_ptr() + 8 * y.element_size()
        pieces[0].add_(1)  # no view tracking: y keeps its history and version
        assert y._version == 0 and pieces[0]._version == 1 and pieces[1]._version == 0
        assert y.grad_fn.name() == "MulBackward0"
        assert pieces[0].grad_fn.name() == "AddBackward0"
        assert y[0, 0].item() == pieces[0][0, 0].item()  # the write shows in y's memory


def test_unsafe_split_gradcheck():
    assert grad_ok(lambda L, a: L.unsafe_split(a, 2)[1], (5, 3))
    assert grad_ok(lambda L, a: L.unsafe_chunk(a, 2, 1)[0], (2, 4))


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, a: a.unsafe_split([1, 4]), "must be int, not list"),
    (lambda L, a: L.unsafe_split(a[0, 0], 2), "split expects at least a 1-dimensional tensor"),
    (lambda L, a: L.unsafe_split(a, -1), "split expects split_size be non-negative"),
    (lambda L, a: L.unsafe_chunk(a, 0), "chunk expects `chunks` to be greater than 0"),
    (lambda L, a: L.unsafe_chunk(a[0, 0], 2), "chunk expects at least a 1-dimensional tensor"),
    (lambda L, a: L.unsafe_split_with_sizes(a, [5, -1, 1]), "only non-negative entries"),
    (lambda L, a: L.unsafe_split_with_sizes(a, [1, 2]), "to sum exactly to 5"),
    (lambda L, a: L.unsafe_split_with_sizes(a, 5), "must be tuple of ints, not int"),
])
def test_unsafe_splits_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (5, 4), phrase=phrase, device=device)


# ---- slice_inverse ------------------------------------------------------------------------------
def _slice_inverse(L: Any, a: Any) -> Any:
    base = a * 1
    return base[:, 1:5:2].slice_inverse(a.detach(), 1, 1, 5, 2)


def test_slice_inverse_matches_torch(device):
    # a view of base's storage laid out as src: SliceInverseBackward0, whose gradient is the
    # slice (torch's formula; not the derivative of the values, which are all of base's)
    check(_slice_inverse, (2, 6), device=device)
    check(lambda L, a: L.slice_inverse(a[2:4], a.detach(), 0, 2, 4), (6,), device=device)


def test_slice_inverse_saves_the_slice_like_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.randn(2, 6, requires_grad=True, device=dev) * 1
        fn = x[:, 1:5:2].slice_inverse(x.detach(), 1, 1, 5, 2).grad_fn
        assert (fn._saved_dim, fn._saved_start, fn._saved_end, fn._saved_step) == (1, 1, 5, 2)


def test_slice_inverse_out_of_storage_raises_torch_error(device):
    check_error(lambda L, a: a[:2].slice_inverse(L.zeros(3, 4), 0), (6,), phrase="setStorage",
                device=device)


# ---- tril_, triu_, fill_diagonal_ ---------------------------------------------------------------
INPLACE = {
    "tril_": ((3, 4), lambda L, a: (a * 1).tril_()),
    "tril_k": ((2, 3, 3), lambda L, a: (a * 1).tril_(-1)),
    "triu_": ((3, 4), lambda L, a: (a * 1).triu_(1)),
    "triu_view": ((4, 4), lambda L, a: (lambda y: (y[1:].triu_(), y))(a * 1)),
    "fill_diagonal_": ((3, 4), lambda L, a: (a * 1).fill_diagonal_(5.0)),
    "fill_diagonal_tall": ((7, 3), lambda L, a: (a * 1).fill_diagonal_(-1.5)),
    "fill_diagonal_wrap": ((7, 3), lambda L, a: (a * 1).fill_diagonal_(2, wrap=True)),
    "fill_diagonal_wrap_wide": ((3, 7), lambda L, a: (a * 1).fill_diagonal_(2, True)),
    "fill_diagonal_cube": ((3, 3, 3), lambda L, a: (a * 1).fill_diagonal_(0)),
    "fill_diagonal_transposed": ((3, 5), lambda L, a: (a * 1).t().fill_diagonal_(4.0)),
    "fill_diagonal_view": ((4, 5), lambda L, a: (lambda y: (y[1:].fill_diagonal_(3.0), y))(a * 1)),
}


@pytest.mark.parametrize("case", sorted(INPLACE))
def test_inplace_tri_and_fill_diagonal_match_torch(case, device):
    shape, fn = INPLACE[case]
    check(fn, shape, device=device)  # values, versions, grad_fn (TrilBackward0, CopySlices)


def test_inplace_tri_and_fill_diagonal_of_integers_and_without_grad(device):
    x = ints(np.arange(12).reshape(3, 4))
    check(lambda L, a: (a.clone().tril_(), a.clone().triu_(-1), a.clone().fill_diagonal_(1.7),
                        a.clone().fill_diagonal_(-3, wrap=True)), x, dtypes=(None,), device=device)
    check(lambda L, a: L.zeros(3, 3, dtype=L.bool).fill_diagonal_(True), x, dtypes=(None,),
          device=device)
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        leaf = lib.ones(3, 3, requires_grad=True, device=dev)
        with lib.no_grad():
            leaf.fill_diagonal_(0).tril_()
        assert leaf._version == 2 and leaf.sum().item() == 3.0


@pytest.mark.parametrize("fn, shape, phrase", [
    (lambda L, a: a.tril_(), (3,), "tril: input tensor must have at least 2 dimensions"),
    (lambda L, a: a.triu_(), (3,), "triu: input tensor must have at least 2 dimensions"),
    (lambda L, a: a.fill_diagonal_(1), (3,), "dimensions must larger than 1"),
    (lambda L, a: a.fill_diagonal_(1), (2, 3, 2), "all dimensions of input must be of equal length"),
])
def test_inplace_tri_and_fill_diagonal_invalid_arguments_raise_torch_error(fn, shape, phrase,
                                                                           device):
    check_error(fn, shape, phrase=phrase, device=device)


@pytest.mark.parametrize("fn", [lambda a: a.tril_(), lambda a: a.triu_(1),
                                lambda a: a.fill_diagonal_(2.0)])
def test_inplace_tri_and_fill_diagonal_refuse_a_leaf_like_torch(fn, device):
    check_error(lambda L, a: fn(a), (3, 3), requires_grad=True, phrase="leaf Variable that "
                "requires grad is being used in an in-place operation", device=device)


# ---- nonzero_static, new_empty_strided --------------------------------------------------------------
@pytest.mark.parametrize("size, fill", [(2, -1), (6, -7), (0, -1), (4, 9)])
def test_nonzero_static_matches_torch(size, fill, device):
    x = ints([[0, 1, 0], [2, 0, 3]])
    check(lambda L, a: (L.nonzero_static(a, size=size, fill_value=fill),
                        a.nonzero_static(size=size), L.nonzero_static(a > 1, size=size),
                        L.nonzero_static(a.double(), size=size, fill_value=fill)),
          x, dtypes=(None,), device=device)
    check(lambda L, a: (L.nonzero_static(a[0, 1], size=size), L.nonzero_static(a[0, 0], size=2)),
          x, dtypes=(None,), device=device)


def test_nonzero_static_invalid_arguments_raise_torch_error(device):
    check_error(lambda L, a: L.nonzero_static(a, size=-1), (2, 3),
                phrase="nonzero_static: 'size' must be an non-negative integer", device=device)
    check_error(lambda L, a: L.nonzero_static(a, 2), (2, 3), phrase="positional argument",
                device=device)


def test_new_empty_strided_matches_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.zeros(2, dtype=lib.int32, device=dev)
        e = x.new_empty_strided((2, 3), (1, 2))
        assert (e.shape, e.stride(), e.dtype, e.requires_grad) == ((2, 3), (1, 2), lib.int32,
                                                                  False)
        assert e.device.type == (dev if lib is rustgrad else "cpu")
        f = x.new_empty_strided((4,), (2,), dtype=lib.float64, requires_grad=True)
        assert (f.stride(), f.dtype, f.requires_grad, f.is_leaf) == ((2,), lib.float64, True, True)
    same_error(lambda L: L.zeros(2).new_empty_strided((2, 3), (1,)),
               "dimensionality of sizes (2) must match dimensionality of strides (1)")


# ---- unravel_index --------------------------------------------------------------------------------
@pytest.mark.parametrize("idx, shape", [
    ([4, 1, -1, 7, 13], (2, 3)), ([[4, 5], [0, 2]], (2, 3)), (5, (2, 3)), ([4], 6),
    ([3, 11], (2, 3, 2)), ([5], ()), ([], (2, 0)),
])
def test_unravel_index_matches_torch(idx, shape, device):
    _same(lambda L, dev: L.unravel_index(L.tensor(idx, dtype=L.int64, device=dev), shape), device)
    _same(lambda L, dev: L.unravel_index(L.tensor(idx, dtype=L.int32, device=dev),
                                         L.Size(shape) if isinstance(shape, tuple) else shape),
          device)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L: L.unravel_index(L.tensor([1.0]), (2, 3)), "expected 'indices' to be integer dtype"),
    (lambda L: L.unravel_index(L.tensor([True]), (2, 3)), "expected 'indices' to be integer dtype"),
    (lambda L: L.unravel_index(L.tensor([1]), (2, -3)), "'shape' cannot have negative values"),
    (lambda L: L.unravel_index(L.tensor([0]), (2, 0)), "'shape' cannot have zero dimensions"),
    (lambda L: L.unravel_index(L.tensor([0]), (2.0, 3)), "expected 'shape' sequence to only contain"),
    (lambda L: L.unravel_index(L.tensor([0]), "ab"), "expected 'shape' sequence to only contain"),
    (lambda L: L.unravel_index(L.tensor([0]), 2.5), "expected 'shape' to be int or sequence"),
    (lambda L: L.unravel_index(5, (2, 3)), "object has no attribute"),
])
def test_unravel_index_invalid_arguments_raise_torch_error(fn, phrase):
    same_error(fn, phrase)


# ---- range, logspace -----------------------------------------------------------------------------
def _quiet_range(L: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return L.range(*args, **kw)


@pytest.mark.parametrize("args, kw", [
    ((1, 4), {}), ((1, 4, 0.5), {}), ((0, 1, 0.3), {}), ((0, 1, 0.1), {}), ((5, 1, -2), {}),
    ((3, 3), {}), ((1, 4), {"dtype": "int64"}), ((1.5, 4.5, 1), {"dtype": "int64"}),
    ((-1.5, 4.5, 1.7), {"dtype": "int32"}), ((0.1, 7.3, 0.37), {"dtype": "float64"}),
    ((0, 10, 3), {"dtype": "float16"}), ((1, 3), {"requires_grad": True}),
])
def test_range_matches_torch(args, kw, device):
    def fn(L: Any, dev: str) -> Any:
        k = dict(kw, device=dev)
        if "dtype" in k:
            k["dtype"] = getattr(L, k["dtype"])
        return _quiet_range(L, *args, **k)

    _same(fn, device)


def test_range_warns_deprecated_like_torch(device):
    for lib in (torch, rustgrad):
        with pytest.warns(UserWarning, match="torch.range is deprecated and will be removed"):
            lib.range(0, 2)
    with pytest.warns(UserWarning):
        assert rustgrad.range(0, 2, device=device).device.type == device


def test_range_and_logspace_take_tensors_and_out(device):
    _same(lambda L, dev: _quiet_range(L, L.tensor(1), L.tensor(3.0), device=dev), device)
    _same(lambda L, dev: L.logspace(L.tensor(0), L.tensor(1.0), 3, device=dev), device)

    def into_out(L: Any, dev: str) -> Any:
        a, b = L.empty(0, device=dev), L.empty(2, dtype=L.float64, device=dev)
        ra = _quiet_range(L, 0, 1, 0.5, out=a)
        rb = L.logspace(0, 1, 3, out=b)
        assert ra is a and rb is b
        return a, b

    _same(into_out, device)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L: L.range(1, 4, 0), "step must be nonzero"),
    (lambda L: L.range(4, 1), "upper bound and lower bound inconsistent with step sign"),
    (lambda L: L.range(1, 4, -1), "upper bound and lower bound inconsistent with step sign"),
    (lambda L: L.range(0, float("inf")), "unsupported range: 0 -> inf"),
    (lambda L: L.range(4), 'missing 1 required positional argument'),
    (lambda L: L.range(0, 1, 0.5, out=L.empty(3, dtype=L.float64), dtype=L.float32),
     "dtype Float does not match dtype of out parameter (Double)"),
    (lambda L: L.logspace(0, 1, -1), "number of steps must be non-negative"),
])
def test_range_and_logspace_invalid_arguments_raise_torch_error(fn, phrase):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(fn, phrase)


@pytest.mark.parametrize("args, kw", [
    ((0, 2, 5), {}), ((0, 2, 5), {"base": 2}), ((2, 0, 3), {"dtype": "int64"}), ((0, 1, 1), {}),
    ((0, 1, 0), {}), ((-1.3, 2.7, 17), {}), ((-1.3, 2.7, 17), {"dtype": "float64"}),
    ((0, 3, 4), {"dtype": "int32"}), ((0, 3, 4), {"base": 2.5, "dtype": "int64"}),
    ((0, 2, 3), {"base": -2}), ((0, 2, 3), {"requires_grad": True}),
])
def test_logspace_matches_torch(args, kw, device):
    def fn(L: Any, dev: str) -> Any:
        k = dict(kw, device=dev)
        if "dtype" in k:
            k["dtype"] = getattr(L, k["dtype"])
        return L.logspace(*args, **k)

    _same(fn, device)


# ---- normal ---------------------------------------------------------------------------------------
NORMALS = {
    "tensor_tensor": (lambda L, m, s: L.normal(m, s), "NormalBackward3"),
    "tensor_float": (lambda L, m, s: L.normal(m, 1.5), "NormalBackward1"),
    "tensor_default": (lambda L, m, s: L.normal(m), "NormalBackward1"),
    "float_tensor": (lambda L, m, s: L.normal(0.5, s), "NormalBackward2"),
    "broadcast": (lambda L, m, s: L.normal(m[:, :1], s[0]), "NormalBackward3"),
}


@pytest.mark.parametrize("case", sorted(NORMALS))
def test_normal_tensor_forms_match_torch_but_for_the_samples(case, device):
    fn, name = NORMALS[case]
    for dt in (np.float32, np.float64):
        outs = []
        for lib, dev in ((torch, "cpu"), (rustgrad, device)):
            m = lib.tensor(np.zeros((3, 4), dt), requires_grad=True, device=dev)
            s = lib.tensor(np.full((3, 4), 2.0, dt), requires_grad=True, device=dev)
            out = fn(lib, m, s)
            out.backward(lib.ones(out.shape, dtype=out.dtype, device=dev))
            outs.append((out, m.grad, s.grad))
        (t, tm, ts), (r, rm, rs) = outs
        assert (tuple(r.shape), str(r.dtype), r.device.type) == (tuple(t.shape), str(t.dtype),
                                                                 device)
        assert r.grad_fn.name() == t.grad_fn.name() == name
        for tg, rg in ((tm, rm), (ts, rs)):  # zeros, or no gradient at all, as torch's
            assert (tg is None) == (rg is None)
            if tg is not None:
                assert_same_tensor(tg, rg, "gradient", device=device)


def test_normal_with_zero_std_is_its_mean_like_torch(device):
    check(lambda L, m, s: (L.normal(m, s * 0), L.normal(m, 0.0), L.normal(-1.5, s * 0)),
          (3, 4), (3, 4), device=device)


def test_normal_samples_have_the_asked_mean_and_std(device):
    rustgrad.manual_seed(3)
    x = rustgrad.normal(rustgrad.full((200, 100), 2.0, device=device), 3.0)
    assert abs(float(x.mean()) - 2.0) < 0.1 and abs(float(x.std()) - 3.0) < 0.1
    y = rustgrad.normal(-1.0, 0.5, (20000,), device=device, dtype=rustgrad.float64)
    assert y.dtype == rustgrad.float64 and y.device.type == device
    assert abs(float(y.mean()) + 1.0) < 0.05 and abs(float(y.std()) - 0.5) < 0.05
    a = rustgrad.normal(0.0, 1.0, (5,), generator=rustgrad.Generator().manual_seed(7))
    b = rustgrad.normal(0.0, 1.0, (5,), generator=rustgrad.Generator().manual_seed(7))
    assert rustgrad.equal(a, b)


def test_normal_of_numbers_matches_torch_but_for_the_samples(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        a = lib.normal(0.0, 1.0, (2, 3), device=dev)
        b = lib.normal(0.0, 1.0, size=(4,), dtype=lib.float64, requires_grad=True, device=dev)
        assert (a.shape, a.dtype, a.requires_grad, a.grad_fn) == ((2, 3), lib.float32, False, None)
        assert (b.dtype, b.requires_grad, b.is_leaf) == (lib.float64, True, True)
        assert a.device.type == (device if lib is rustgrad else "cpu")
        out = lib.empty(3, device=dev)
        assert lib.normal(lib.zeros(3, device=dev), lib.ones(3, device=dev), out=out) is out
        out = lib.empty(3, device=dev)
        assert lib.normal(0.0, 1.0, (2,), out=out) is out and tuple(out.shape) == (2,)
        assert lib.normal(lib.zeros(3, dtype=lib.float64, device=dev),
                          lib.ones(3, device=dev)).dtype == lib.float64
        assert lib.normal(lib.zeros(3, device=dev),
                          lib.ones(3, dtype=lib.float64, device=dev)).dtype == lib.float32


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, m: L.normal(m, -1.0), "normal expects std >= 0.0, but found std -1"),
    (lambda L, m: L.normal(1.0, -m.abs() - 1), "normal expects all elements of std >= 0.0"),
    (lambda L, m: L.normal(m, m.abs() * float("nan")), "normal expects all elements of std >= 0.0"),
    (lambda L, m: L.normal(0.0, float("nan"), (2,)), "normal expects std >= 0.0, but found std nan"),
    (lambda L, m: L.normal(m.long(), 1.0), "not implemented for 'Long'"),
    (lambda L, m: L.normal(1.0, m.abs().long()), "not implemented for 'Long'"),
    (lambda L, m: L.normal(0.0, 1.0, (2,), dtype=L.int64), "not implemented for 'Long'"),
    (lambda L, m: L.normal(m, L.ones(4, 1, 2)), "must match the size of tensor b"),
    (lambda L, m: L.normal(0.0, 1.0), "normal() received an invalid combination of arguments"),
    (lambda L, m: L.normal(m, 1.0, out=L.empty(2)), "must match the size of tensor b"),
])
def test_normal_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (3,), phrase=phrase, device=device)


def test_normal_out_refuses_autograd_like_torch(device):
    check_error(lambda L, m: L.normal(m, 1.0, out=L.empty(3)), (3,), requires_grad=True,
                phrase="functions with out=... arguments don't support automatic "
                "differentiation", device=device)


# ---- empty_permuted -------------------------------------------------------------------------------
@pytest.mark.parametrize("size, layout", [((2, 3, 5), (0, 2, 1)), ((2, 3, 5), (2, 0, 1)),
                                          ((4,), (0,)), ((), ()), ((2, 1, 3), (1, 2, 0))])
def test_empty_permuted_matches_torch_layout(size, layout, device):
    for kw in ({}, {"dtype": "int32"}, {"requires_grad": True}):
        got = []
        for lib, dev in ((torch, "cpu"), (rustgrad, device)):
            k = dict(kw, device=dev)
            if "dtype" in k:
                k["dtype"] = getattr(lib, k["dtype"])
            e = lib.empty_permuted(size, layout, **k)
            got.append((tuple(e.shape), e.stride(), str(e.dtype), e.requires_grad, e.is_leaf))
            if lib is rustgrad:
                assert e.device.type == device
        assert got[0] == got[1]


@pytest.mark.parametrize("fn, phrase", [
    (lambda L: L.empty_permuted((2, 3), (0,)), "does not match the length of the physical_layout"),
    (lambda L: L.empty_permuted((2, 3), (0, 0)), "Duplicate dim not allowed"),
    (lambda L: L.empty_permuted((2, 3), (0, 2)), "expected to be between 0 and 1, but got 2 at "
                                                 "index 1"),
])
def test_empty_permuted_invalid_arguments_raise_torch_error(fn, phrase):
    same_error(fn, phrase)


# ---- asarray ------------------------------------------------------------------------------------
def test_asarray_shares_numpy_memory_like_torch():
    for lib in (torch, rustgrad):
        a = np.arange(6.0).reshape(2, 3)
        t = lib.asarray(a)
        a[0, 0] = 9.0
        assert t.dtype == lib.float64 and float(t[0, 0]) == 9.0 and not t.requires_grad
        assert lib.asarray(a.T).stride() == (1, 3) and lib.asarray(a[:, ::2]).stride() == (3, 2)
        c = lib.asarray(a, copy=True)
        a[0, 1] = -1.0
        assert float(c[0, 1]) == 1.0
        f = lib.asarray(a, dtype=lib.float32)
        a[1, 1] = 100.0
        assert f.dtype == lib.float32 and float(f[1, 1]) == 4.0
        g = lib.asarray(a, requires_grad=True)
        assert g.requires_grad and g.is_leaf
        g.detach()[1, 2] = 5.0
        assert a[1, 2] == 5.0
        assert lib.asarray(np.float32(2.5)).dtype == lib.float32
        assert lib.asarray(np.array(3)).dtype == lib.int64
        b = pyarray.array("f", [1, 2, 3])
        tb = lib.asarray(b)
        b[0] = 7
        assert tb.dtype == lib.float32 and tb.tolist() == [7.0, 2.0, 3.0]
        ba = bytearray(b"\x01\x02")
        assert lib.asarray(ba).dtype == lib.uint8 and lib.asarray(ba).tolist() == [1, 2]


ASARRAY_OF_TENSORS = {
    # case: (program over a leaf x that requires grad, whether the result is x itself)
    "unspecified": (lambda L, x: L.asarray(x), True),
    "copy_false": (lambda L, x: L.asarray(x, copy=False, requires_grad=True), True),
    "no_grad": (lambda L, x: L.asarray(x, requires_grad=False), True),  # x stops requiring it
    "copy": (lambda L, x: L.asarray(x, copy=True), False),
    "copy_no_grad": (lambda L, x: L.asarray(x, copy=True, requires_grad=False), False),
    "dtype": (lambda L, x: L.asarray(x, dtype=L.float64), False),
    "dtype_no_grad": (lambda L, x: L.asarray(x, dtype=L.float64, requires_grad=False), False),
    "non_leaf": (lambda L, x: L.asarray(x * 2, requires_grad=True), False),
    "non_leaf_no_grad": (lambda L, x: L.asarray(x * 2, requires_grad=False), False),
    "non_leaf_copy": (lambda L, x: L.asarray(x * 2, copy=True, requires_grad=True), False),
    "detached": (lambda L, x: L.asarray(x.detach(), requires_grad=True), False),
    "detached_copy": (lambda L, x: L.asarray(x.detach(), copy=True, requires_grad=True), False),
}


@pytest.mark.parametrize("case", sorted(ASARRAY_OF_TENSORS))
def test_asarray_of_tensors_matches_torch(case, device):
    fn, itself = ASARRAY_OF_TENSORS[case]
    seen = []
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.randn(3, requires_grad=True, device=dev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(lib, x)
        seen.append((r is x, r.requires_grad, r.is_leaf, None if r.grad_fn is None else
                     r.grad_fn.name(), x.requires_grad, r.data_ptr() == x.data_ptr(), r.dtype))
        assert (r is x) == itself
    t, g = seen
    assert g[:-1] == t[:-1] and str(g[-1]) == str(t[-1]), (g, t)


def test_asarray_warns_once_when_requires_grad_is_left_to_the_tensor(device):
    rustgrad._creation._WARNED_ASARRAY.clear()
    x = rustgrad.randn(3, requires_grad=True, device=device)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to "
                                         "obj.requires_grad instead of False"):
        assert rustgrad.asarray(x) is x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rustgrad.asarray(x)  # once per process, as torch's
        rustgrad._creation._WARNED_ASARRAY.clear()
        rustgrad.asarray(x, requires_grad=True)  # not when given
        rustgrad.asarray(x.detach())  # nor for a tensor without grad


def test_asarray_of_python_data_matches_torch(device):
    _same(lambda L, dev: (L.asarray([1, 2, 3], device=dev), L.asarray([1.0, 2], device=dev),
                          L.asarray(3.5, device=dev), L.asarray(True, device=dev),
                          L.asarray([[1, 2], [3, 4]], dtype=L.float64, device=dev),
                          L.asarray([L.tensor(1.0), L.tensor(2.0)], device=dev),
                          L.asarray([1.0, 2.0], requires_grad=True, device=dev),
                          L.asarray(np.arange(3.0), device=dev)), device)


@pytest.mark.parametrize("fn, err, phrase", [
    (lambda L: L.asarray([1, 2], copy=False), ValueError, "can't alias arbitrary sequence"),
    (lambda L: L.asarray(3.5, copy=False), ValueError, "can't alias arbitrary sequence"),
    (lambda L: L.asarray(np.arange(3.0), dtype=L.float32, copy=False), ValueError,
     "can't alias tensor with dtype 'Double' into dtype 'Float'"),
    (lambda L: L.asarray(L.ones(2), dtype=L.float64, copy=False), ValueError,
     "can't alias tensor with dtype 'Float' into dtype 'Double'"),
    (lambda L: L.asarray(np.arange(3), requires_grad=True), RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    (lambda L: L.asarray(np.arange(3.0)[::-1]), ValueError, "At least one stride in the given "
                                                            "numpy array is negative"),
    (lambda L: L.asarray("abc"), TypeError, "new(): invalid data type 'str'"),
    (lambda L: L.asarray([[1, 2], [3]]), ValueError, "expected sequence of length 2 at dim 1"),
])
def test_asarray_invalid_arguments_raise_torch_error(fn, err, phrase):
    with pytest.raises(err):
        fn(torch)
    same_error(fn, phrase)


# ---- can_cast -------------------------------------------------------------------------------------
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


def test_can_cast_matches_torch_for_every_pair():
    for a in DTYPES:
        for b in DTYPES:
            assert rustgrad.can_cast(getattr(rustgrad, a), getattr(rustgrad, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


def test_can_cast_invalid_arguments_raise_torch_error():
    same_error(lambda L: L.can_cast(1, L.float32), "argument 'from_' (position 1) must be "
               "torch.dtype, not int")
    same_error(lambda L: L.can_cast(L.float32, "x"), "argument 'to' (position 2) must be "
               "torch.dtype, not str")


# ---- detach_ ---------------------------------------------------------------------------------------
def test_detach_function_matches_torch(device):
    def fn(L: Any, a: Any) -> Any:
        y = a * 2
        r = L.detach_(y)
        assert r is y
        return y

    check(fn, (3, 4), device=device)  # no history, no grad: a gets none
    check_error(lambda L, a: L.detach_((a * 1)[1:]), (3,), requires_grad=True,
                phrase="Can't detach views in-place", device=device)


# ---- in-place dropout functions ---------------------------------------------------------------
DROPOUTS = ["alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_functions_without_effect_return_input_like_torch(name, device):
    for p, train in ((0.5, False), (0.0, True)):
        check(lambda L, a, p=p, train=train: (lambda y: (getattr(L, name)(y, p, train), y))(a * 1),
              (4, 3, 2), device=device)


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_functions_with_p_one_zero_the_input_like_torch(name, device):
    check(lambda L, a: (lambda y: (getattr(L, name)(y, 1.0, True), y))(a * 1), (4, 3, 2),
          device=device)


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_functions_write_in_place_with_torch_nodes(name, device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        lib.manual_seed(0)
        x = lib.randn(8, 6, 5, requires_grad=True, device=dev)
        y = x * 1
        assert getattr(lib, name)(y, 0.4, True) is y and y._version > 0
        want = "MulBackward0" if name == "feature_dropout_" else "AddBackward0"
        assert y.grad_fn.name() == want
        nexts = y.grad_fn.next_functions
        assert nexts[0][0].name() == "MulBackward0" and nexts[1][0] is None
        y.backward(lib.ones_like(y))
        g = x.grad
        if name.startswith("feature"):  # one factor per (sample, channel)
            assert bool((g == g[:, :, :1]).all())
        if name == "feature_dropout_":
            levels = np.array(g.unique().tolist())
            assert np.all(np.isclose(levels, 0.0) | np.isclose(levels, 1 / 0.6))
            assert lib.allclose(y, x * g)


def test_alpha_dropout_values_match_torchs_two_levels(device):
    levels = torch.alpha_dropout_(torch.ones(50, 50), 0.5, True).unique().tolist()
    got = rustgrad.alpha_dropout_(rustgrad.ones(50, 50, device=device), 0.5, True)
    assert got.device.type == device
    assert np.allclose(sorted(got.unique().tolist()), levels, atol=1e-6)


@pytest.mark.parametrize("name", DROPOUTS)
@pytest.mark.parametrize("fn, shape, grad, phrase", [
    (lambda f, L, a: f(a, 1.5, True), (3, 4), False,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda f, L, a: f(a, -0.1, True), (3, 4), False, "dropout probability has to be between 0"),
    (lambda f, L, a: f(a, 0.5, True), (3, 4), True, "a leaf Variable that requires grad"),
    (lambda f, L, a: f(a, 0.5), (3, 4), False, "missing 1 required positional argument"),
])
def test_dropout_functions_invalid_arguments_raise_torch_error(name, fn, shape, grad, phrase,
                                                               device):
    check_error(lambda L, a: fn(getattr(L, name), L, a), shape, requires_grad=grad,
                phrase=phrase, device=device)


@pytest.mark.parametrize("name", ["feature_alpha_dropout_", "feature_dropout_"])
def test_feature_dropout_functions_need_two_dims_like_torch(name, device):
    check_error(lambda L, a: getattr(L, name)(a, 0.5, True), (3,),
                phrase="Feature dropout requires at least 2 dimensions in the input",
                device=device)


# ---- bilinear --------------------------------------------------------------------------------------
BILINEAR = {
    "bias": ((5, 3), (5, 4), (2, 3, 4), (2,), lambda L, a, b, w, c: L.bilinear(a, b, w, c)),
    "no_bias": ((5, 3), (5, 4), (2, 3, 4), (2,), lambda L, a, b, w, c: L.bilinear(a, b, w)),
    "batched": ((2, 5, 3), (2, 5, 4), (2, 3, 4), (2,),
                lambda L, a, b, w, c: L.bilinear(a, b, w, c)),
    "vectors": ((3,), (4,), (2, 3, 4), (2,), lambda L, a, b, w, c: L.bilinear(a, b, w, c)),
    "empty": ((0, 3), (0, 4), (2, 3, 4), (2,), lambda L, a, b, w, c: L.bilinear(a, b, w, c)),
}


@pytest.mark.parametrize("case", sorted(BILINEAR))
def test_bilinear_matches_torch_and_functional(case, device):
    *shapes, fn = BILINEAR[case]
    check(fn, *shapes, device=device)
    if len(shapes[0]) == 2:  # nn.functional.bilinear is the same map
        check(lambda L, a, b, w, c: L.nn.functional.bilinear(a, b, w, c), *shapes, grad_fn=False,
              device=device)


def test_bilinear_gradcheck_and_double_backward(device):
    fn = BILINEAR["bias"][-1]
    assert grad_ok(fn, (3, 2), (3, 4), (2, 2, 4), (2,))
    check_double_backward(fn, (3, 2), (3, 4), (2, 2, 4), (2,), device=device)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, a, b, w, c: L.bilinear(a[0], b, w), "input dimensions do not match: got 1 and 2"),
    (lambda L, a, b, w, c: L.bilinear(a, b[:4], w), "input batch dimensions do not match at dim 0"),
    (lambda L, a, b, w, c: L.bilinear(a, b, w[:, :2]), "input1 size does not match weight size"),
    (lambda L, a, b, w, c: L.bilinear(a, b, w[..., :3]), "input2 size does not match weight size"),
    (lambda L, a, b, w, c: L.bilinear(a, b, w, c.repeat(2)), "bias size does not match weight "
                                                              "size: got 4 but expected 2"),
    (lambda L, a, b, w, c: L.bilinear(a.double(), b.float(), w.float()),
     "All tensors must have the same dtype, got input1: double, input2: float, weight: float"),
    (lambda L, a, b, w, c: L.bilinear(a, b, w[:, :2], c.float()),
     "All tensors must have the same dtype, got input1: double, input2: double, weight: double, "
     "bias: float"),
])
def test_bilinear_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (5, 3), (5, 4), (2, 3, 4), (2,), phrase=phrase, device=device)


# ---- conv_tbc ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc_matches_torch(pad, device):
    check(lambda L, x, w, b: L.conv_tbc(x, w, b, pad), (7, 2, 3), (3, 3, 4), (4,), device=device)


def test_conv_tbc_default_pad_and_gradients(device):
    check(lambda L, x, w, b: L.conv_tbc(x, w, b), (5, 1, 2), (5, 2, 3), (3,), device=device)
    assert grad_ok(lambda L, x, w, b: L.conv_tbc(x, w, b, 1), (5, 2, 2), (3, 2, 3), (3,))
    check_double_backward(lambda L, x, w, b: L.conv_tbc(x, w, b, 1), (5, 2, 2), (3, 2, 3), (3,),
                          device=device)


def test_conv_tbc_is_conv1d_over_time(device):
    x, w, b = rustgrad.randn(7, 2, 3), rustgrad.randn(3, 3, 4), rustgrad.randn(4)
    ref = rustgrad.nn.functional.conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), b, padding=1)
    out = rustgrad.conv_tbc(x.to(device), w.to(device), b.to(device), 1)
    assert rustgrad.allclose(out.cpu(), ref.permute(2, 0, 1), atol=1e-5)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, x, w, b: L.conv_tbc(x, w, L.ones(5)), "Bias size must equal dim 2 in the weight"),
    (lambda L, x, w, b: L.conv_tbc(x, w[:, :2], b), "Input dim 2 (input channels) is not == dim 1"),
    (lambda L, x, w, b: L.conv_tbc(x[0], w, b), "Input must have 3 dims: time, batch, in_channel"),
    (lambda L, x, w, b: L.conv_tbc(x, w[0], b), "Weight tensor must have 3 dims"),
    (lambda L, x, w, b: L.conv_tbc(x[:1], w, b), "Trying to create tensor with negative dimension"),
])
def test_conv_tbc_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (7, 2, 3), (3, 3, 4), (4,), phrase=phrase, device=device)


# ---- segment_reduce ---------------------------------------------------------------------------------
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_matches_torch(reduce, device):
    lengths = ints([2, 0, 3, 1])
    check(lambda L, d, n: L.segment_reduce(d, reduce, lengths=n), (6, 2), lengths, device=device)
    check(lambda L, d, n: L.segment_reduce(d, reduce, lengths=n, initial=0.5), (6, 2), lengths,
          device=device)
    check(lambda L, d, n: L.segment_reduce(d, reduce, offsets=n), (6, 2), ints([0, 2, 2, 5, 6]),
          device=device)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_along_an_inner_axis_matches_torch(reduce, device):
    lengths = ints([[2, 4], [3, 3]])
    check(lambda L, d, n: L.segment_reduce(d, reduce, lengths=n, axis=1), (2, 6, 3), lengths,
          device=device)
    check(lambda L, d, n: L.segment_reduce(d, reduce, lengths=n, axis=-2, unsafe=True),
          (2, 6, 3), lengths, device=device)


def test_segment_reduce_ties_and_zeros_share_gradients_like_torch(device):
    data = np.array([[1., 2], [3, 2], [3, 6], [0, 8], [9, 0], [0, 1]])
    for reduce in ("max", "min", "prod"):
        check(lambda L, d, n, r=reduce: L.segment_reduce(d, r, lengths=n), data, ints([3, 3]),
              device=device)
        check(lambda L, d, n, r=reduce: L.segment_reduce(d, r, lengths=n, initial=3.0), data,
              ints([3, 3]), device=device)


def test_segment_reduce_gradcheck_and_its_backward_has_no_derivative(device):
    for reduce in ("sum", "mean", "max", "prod"):
        assert grad_ok(lambda L, d, n, r=reduce: L.segment_reduce(d, r, lengths=n), (5, 2),
                       ints([2, 3]))
    check_error(lambda L, d, n: L.autograd.grad(
        L.autograd.grad(L.segment_reduce(d, "sum", lengths=n).sum(), d, create_graph=True)[0].sum(),
        d), (5, 2), ints([2, 3]), requires_grad=True,
        phrase="derivative for aten::_segment_reduce_backward is not implemented", device=device)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, d, n: L.segment_reduce(d, "sum", lengths=n[:1]),
     "Expected all rows of lengths along axis to sum to data.size"),
    (lambda L, d, n: L.segment_reduce(d, "sum", lengths=n - 3), "lengths contains negative value!"),
    (lambda L, d, n: L.segment_reduce(d, "sum"), "Either lengths or offsets must be defined"),
    (lambda L, d, n: L.segment_reduce(d, "sum", indices=n), "indices based reduction is not "
                                                            "supported yet"),
    (lambda L, d, n: L.segment_reduce(d, "foo", lengths=n), "reduce argument must be either sum, "
                                                            "prod, mean, amax or amin, got foo"),
    (lambda L, d, n: L.segment_reduce(d, "sum", lengths=n, axis=1),
     "Expected axis to be the last dimension of lengths but got 1"),
    (lambda L, d, n: L.segment_reduce(d, "sum", lengths=n, axis=2), "Dimension out of range"),
    (lambda L, d, n: L.segment_reduce(d, "sum", lengths=n.float()), "not implemented for 'Float'"),
    (lambda L, d, n: L.segment_reduce(d.long(), "sum", lengths=n), "not implemented for 'Long'"),
])
def test_segment_reduce_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (5, 2), ints([2, 3]), phrase=phrase, device=device)


# ---- cond, while_loop -------------------------------------------------------------------------------
def test_cond_with_a_python_predicate_calls_the_branch_like_torch(device):
    check(lambda L, a: L.cond(True, lambda x: x.sin(), lambda x: x.cos(), (a,)), (3,),
          device=device)  # SinBackward0: no node of cond's own
    check(lambda L, a: L.cond(0, lambda x: x.sin(), lambda x: x.cos(), [a]), (3,), device=device)


COND = {
    "true": lambda L, a, b: L.cond(a.sum() > -100, lambda x: x.sin(), lambda x: x.cos(), (a,)),
    "false": lambda L, a, b: L.cond(L.tensor(False), lambda x, y: x * y, lambda x, y: x + y,
                                    [a, b]),
    "two_outputs": lambda L, a, b: L.cond(L.tensor(1.0), lambda x, y: (x.sin(), y * 2),
                                          lambda x, y: (x.cos(), y + 1), (a, b)),
    "nested": lambda L, a, b: L.cond(L.tensor([[0]]), lambda d: d["a"].exp(),
                                     lambda d: d["a"] * d["b"][0], ({"a": a, "b": [b]},)),
    "closure": lambda L, a, b: L.cond(L.tensor(True), lambda x: x.detach() * b,
                                      lambda x: x * 1, (a.detach(),)),
    "no_operands": lambda L, a, b: L.cond(L.tensor(False), lambda: a * b, lambda: b * 3 + a),
    "operand_of_the_other_branch": lambda L, a, b: L.cond(L.tensor(True), lambda x, y: x * 2,
                                                          lambda x, y: y * 3, (a, b)),
    "no_grad_operand": lambda L, a, b: L.cond(L.tensor(True), lambda x, y: (x * 2, y + 1),
                                              lambda x, y: (x * 1, y * 1), (a, b.detach())),
}


@pytest.mark.parametrize("case", sorted(COND))
def test_cond_with_a_tensor_predicate_matches_torch(case, device):
    check(COND[case], (3,), (3,), device=device)  # CondAutogradOpBackward over every output


def test_cond_gradcheck():
    assert grad_ok(COND["two_outputs"], (3,), (3,))


def test_cond_without_autograd_gives_plain_outputs(device):
    with rustgrad.no_grad():
        x = rustgrad.ones(2, requires_grad=True, device=device)
        out = rustgrad.cond(rustgrad.tensor(True), lambda a: a * 2, lambda a: a, (x,))
    assert out.grad_fn is None and out.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, a: L.cond(L.tensor(True), lambda x: x.sin(), lambda x: x.cos(), a),
     "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
     "tensor leaves"),
    (lambda L, a: L.cond(L.tensor(True), lambda x, y: x, lambda x, y: x, (a, 1)),
     "Expect operands to be a tuple of possibly nested dict/list/tuple"),
    (lambda L, a: L.cond(L.tensor([True, False]), lambda x: x.sin(), lambda x: x.cos(), (a,)),
     "Expected pred to be bool or single-element tensor"),
    (lambda L, a: L.cond("a", lambda x: x.sin(), lambda x: x.cos(), (a,)),
     "Expected pred to be bool or tensor, but got a."),
    (lambda L, a: L.cond(L.tensor(True), 1, lambda x: x.cos(), (a,)),
     "Expect both branches to be callable."),
])
def test_cond_invalid_arguments_raise_torch_error(fn, phrase, device):
    check_error(fn, (3,), phrase=phrase, device=device)


@pytest.mark.parametrize("fn", [
    lambda L, a: L.cond(L.tensor(True), lambda x: x, lambda x: x.clone(), (a,)),
    lambda L, a: L.cond(L.tensor(True), lambda x: x[1:], lambda x: x[1:] * 1, (a,)),
    lambda L, a: L.cond(L.tensor(True), lambda x: (lambda y: (y, y))(x * 2),
                        lambda x: (x * 2, x * 3), (a,)),
])
def test_cond_branches_returning_aliases_raise_torch_error(fn, device):
    _raises_like(fn, (3,), phrase="Higher order ops do not support aliasing. Found in cond",
                 device=device)


WHILE = {
    "tensor_counter": lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                                                (L.tensor(0), a)),
    "list_carried": lambda L, a: L.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, x.sin()),
                                              [L.tensor(0), a]),
    "data_dependent": lambda L, a: L.while_loop(lambda x: x.abs().sum() < 50, lambda x: (x * 3,),
                                                (a + 0.5,)),
}


@pytest.mark.parametrize("case", sorted(WHILE))
def test_while_loop_matches_torch(case, device):
    # WhileLoopAutogradOpBackward over the outputs; torch's are views of the buffers its
    # autograd stacks every iteration into (with their versions), rustgrad's are not
    check(WHILE[case], (3,), low=0.5, high=1.0, views=False, versions=False, device=device)
    check(WHILE[case], (3,), low=0.5, high=1.0, requires_grad=False, device=device)


def test_while_loop_with_int_carries_matches_torch(device):
    def fn(L: Any, a: Any) -> Any:
        n, x = L.while_loop(lambda i, x: 2 * i < x.shape[0], lambda i, x: (i + 1, x + i), (0, a))
        assert n == 2
        return x

    check(fn, (3,), requires_grad=False, device=device)
    _raises_like(lambda L, a: fn(L, a.requires_grad_()), (3,),
                 phrase="all carried_inputs must be tensors for stack_output", device=device)


def test_while_loop_gradcheck():
    assert grad_ok(WHILE["list_carried"], (3,))


def test_while_loop_that_never_runs_gives_copies(device):
    def fn(L: Any, a: Any) -> Any:
        return L.while_loop(lambda i, x: i < 0, lambda i, x: (i + 1, x * 2), (L.tensor(0), a))

    check(fn, (3,), requires_grad=False, versions=False, views=False, device=device)
    x = rustgrad.randn(3, requires_grad=True, device=device)
    i, y = fn(rustgrad, x)
    assert y.grad_fn.name() == "WhileLoopAutogradOpBackward" and y.data_ptr() != x.data_ptr()
    y.backward(rustgrad.ones(3, device=device))
    # torch 2.15 sends back twice the gradient here; the copy's derivative is one
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_while_loop_argument_checks_raise_torch_error(device):
    check_error(lambda L, a: L.while_loop(1, lambda i, x: (i + 1, x), (L.tensor(0), a)), (3,),
                phrase="Expect cond_fn and body_fn to be callable.", device=device)
    check_error(lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                                          (0.5, a)), (3,), phrase="can only be of", device=device)


@pytest.mark.parametrize("fn, phrase", [
    (lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1,), (L.tensor(0), a)),
     "Expected body_fn_output and carried_inputs to have same number of outputs"),
    (lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x.double()),
                               (L.tensor(0), a)),
     "pair[1] differ in 'dtype: torch.float64 vs torch.float32'"),
    (lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x[:2] * 1),
                               (L.tensor(0), a)),
     "pair[1] differ in 'shape: torch.Size([2]) vs torch.Size([3])'"),
    (lambda L, a: L.while_loop(lambda i, x: i + 3, lambda i, x: (i + 1, x * 2), (L.tensor(0), a)),
     "Expected cond_fn to return a scalar tensor or a bool but got torch.Size([])"),
    (lambda L, a: L.while_loop(lambda i, x: x > 0, lambda i, x: (i + 1, x * 2), (L.tensor(0), a)),
     "Expected cond_fn to return a scalar tensor or a bool but got torch.Size([3])"),
    (lambda L, a: L.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x), (L.tensor(0), a)),
     "Higher order ops do not support aliasing. Found in while_loop"),
])
def test_while_loop_invalid_outputs_raise_torch_error(fn, phrase, device):
    _raises_like(fn, (3,), phrase=phrase, device=device)


