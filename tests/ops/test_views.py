"""Shape ops against torch. Views (shared storage and version counter): reshape / view,
transpose / t / T / mT, permute, (un)squeeze, expand, flatten, narrow, select, unbind, split,
chunk, diagonal, movedim, unfold, broadcast_to. Copies: clone, contiguous, to(dtype), tril / triu,
flip, roll, repeat, repeat_interleave, tile, pad. (Joins, and the views and copies issue 24 added,
are tests/ops/test_joins.py's.)"""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, rustgrad_on

VIEWS = {
    "narrow": ((3, 4), lambda lib, a: a.narrow(1, 1, 2)),
    "narrow_neg_start": ((3, 4), lambda lib, a: lib.narrow(a, -1, -3, 3)),
    "narrow_empty": ((3, 4), lambda lib, a: a.narrow(0, 3, 0)),
    "narrow_tensor_start": ((3, 4), lambda lib, a: a.narrow(1, lib.tensor(2), 2)),
    "select": ((3, 4), lambda lib, a: a.select(1, 2)),
    "select_neg": ((2, 3, 4), lambda lib, a: lib.select(a, -2, -1)),
    "select_vector": ((5,), lambda lib, a: a.select(0, 3)),
    "unbind": ((3, 4), lambda lib, a: a.unbind()),
    "unbind_dim": ((2, 3, 4), lambda lib, a: lib.unbind(a, -1)),
    "split_int": ((5, 4), lambda lib, a: a.split(2)),
    "split_int_dim": ((3, 4), lambda lib, a: lib.split(a, 3, dim=1)),
    "split_big": ((3, 4), lambda lib, a: a.split(5, 1)),
    "split_sizes": ((3, 4), lambda lib, a: a.split([1, 0, 3], 1)),
    "split_with_sizes": ((3, 4), lambda lib, a: a.split_with_sizes([2, 1], 0)),
    "split_empty": ((0, 3), lambda lib, a: a.split(2)),
    "chunk": ((5, 4), lambda lib, a: a.chunk(3)),
    "chunk_more_than_size": ((3, 5), lambda lib, a: lib.chunk(a, 4, 1)),
    "chunk_empty": ((0, 3), lambda lib, a: a.chunk(3)),
    "diagonal": ((3, 4), lambda lib, a: a.diagonal()),
    "diagonal_offset": ((3, 4), lambda lib, a: a.diagonal(1)),
    "diagonal_neg_offset": ((3, 4), lambda lib, a: lib.diagonal(a, -2)),
    "diagonal_off_matrix": ((3, 4), lambda lib, a: a.diagonal(7)),
    "diagonal_dims": ((2, 3, 4), lambda lib, a: a.diagonal(0, 2, 0)),
    "mT": ((3, 4), lambda lib, a: a.mT),
    "mT_batch": ((2, 3, 4), lambda lib, a: a.mT),
    "movedim": ((2, 3, 4), lambda lib, a: a.movedim(0, 2)),
    "movedim_many": ((2, 3, 4, 5), lambda lib, a: lib.movedim(a, (0, -1), (2, 0))),
    "movedim_same": ((3, 4), lambda lib, a: a.movedim(1, 1)),
    "moveaxis": ((2, 3, 4), lambda lib, a: lib.moveaxis(a, 1, 0)),
    "unfold": ((3, 5), lambda lib, a: a.unfold(1, 2, 1)),
    "unfold_step": ((3, 7), lambda lib, a: a.unfold(1, 3, 2)),
    "unfold_dim0": ((6, 2), lambda lib, a: a.unfold(0, 2, 3)),
    "unfold_full": ((4,), lambda lib, a: a.unfold(0, 4, 1)),
    "unfold_size0": ((3, 4), lambda lib, a: a.unfold(1, 0, 1)),
    "unfold_scalar": ((), lambda lib, a: a.unfold(0, 1, 1)),
}


@pytest.mark.parametrize("case", sorted(VIEWS))
def test_view_ops_match_torch_and_are_views(case, device):
    shape, fn = VIEWS[case]
    check(fn, shape, device=device)  # check() compares `_base is None` too


COPIES = {
    "tril": ((3, 4), lambda lib, a: a.tril()),
    "tril_k": ((3, 4), lambda lib, a: lib.tril(a, 1)),
    "tril_batch": ((2, 3, 3), lambda lib, a: a.tril(-1)),
    "triu": ((3, 4), lambda lib, a: a.triu()),
    "triu_k": ((4, 3), lambda lib, a: lib.triu(a, -1)),
    "triu_big_k": ((3, 4), lambda lib, a: a.triu(10)),
    "flip": ((3, 4), lambda lib, a: a.flip(0)),
    "flip_many": ((2, 3, 4), lambda lib, a: lib.flip(a, (0, -1))),
    "flip_varargs": ((2, 3, 4), lambda lib, a: a.flip(1, 2)),
    "flip_none": ((3, 4), lambda lib, a: a.flip([])),
    "flip_scalar": ((), lambda lib, a: a.flip(0)),
    "roll": ((3, 4), lambda lib, a: a.roll(1, 1)),
    "roll_flat": ((3, 4), lambda lib, a: lib.roll(a, 5)),
    "roll_many": ((3, 4), lambda lib, a: a.roll((1, -3), (0, 1))),
    "roll_scalar": ((), lambda lib, a: a.roll(2)),
    "roll_empty": ((0, 3), lambda lib, a: a.roll(1, 0)),
    "repeat": ((3, 4), lambda lib, a: a.repeat(2, 1)),
    "repeat_more_dims": ((3, 4), lambda lib, a: a.repeat(2, 1, 3)),
    "repeat_tuple": ((2,), lambda lib, a: a.repeat((3, 2))),
    "repeat_zero": ((3, 4), lambda lib, a: a.repeat(0, 2)),
    "repeat_scalar": ((), lambda lib, a: a.repeat(2, 3)),
    "tile": ((3, 4), lambda lib, a: a.tile(2)),
    "tile_tuple": ((3, 4), lambda lib, a: lib.tile(a, (2, 1, 2))),
    "tile_empty": ((3, 4), lambda lib, a: a.tile(())),
    "repeat_interleave": ((3, 4), lambda lib, a: a.repeat_interleave(2)),
    "repeat_interleave_dim": ((3, 4), lambda lib, a: a.repeat_interleave(3, dim=1)),
    "repeat_interleave_zero": ((3, 4), lambda lib, a: lib.repeat_interleave(a, 0, dim=0)),
    "repeat_interleave_scalar": ((), lambda lib, a: a.repeat_interleave(3)),
    "repeat_interleave_tensor": ((3, 4), lambda lib, a: a.repeat_interleave(
        lib.tensor([1, 0, 2]), dim=0)),
    "repeat_interleave_tensor_one": ((3, 4), lambda lib, a: a.repeat_interleave(
        lib.tensor(2), dim=1)),
    "repeat_interleave_tensor_flat": ((2, 2), lambda lib, a: lib.repeat_interleave(
        a, lib.tensor([1, 2, 0, 1]))),
    "pad_last": ((3, 4), lambda lib, a: F(lib).pad(a, (1, 2))),
    "pad_two_dims": ((3, 4), lambda lib, a: F(lib).pad(a, (1, 1, 2, 0), value=3.5)),
    "pad_crop": ((3, 4), lambda lib, a: F(lib).pad(a, (-1, 2, 0, -2))),
    "pad_crop_all": ((3, 4), lambda lib, a: F(lib).pad(a, (-2, -2))),
    "pad_zero": ((3, 4), lambda lib, a: F(lib).pad(a, (0, 0))),
    "pad_all_dims": ((2, 3), lambda lib, a: F(lib).pad(a, [1, 0, 0, 1], "constant", -1.0)),
    "pad_scalar": ((), lambda lib, a: F(lib).pad(a, ())),
    "pad_empty": ((0, 2), lambda lib, a: F(lib).pad(a, (1, 1, 1, 0))),
}


@pytest.mark.parametrize("case", sorted(COPIES))
def test_copy_ops_match_torch(case, device):
    shape, fn = COPIES[case]
    check(fn, shape, device=device)


def test_repeat_interleave_counts_only_gives_indices(device):
    check(lambda lib, r: lib.repeat_interleave(r), np.array([1, 2, 0, 3], dtype=np.int64),
          device=device)


def test_pad_integral_input_casts_value_like_torch(device):
    check(lambda lib, a: F(lib).pad(a, (1, 1), value=3.5), np.array([1, 2], dtype=np.int64),
          device=device)


@pytest.mark.parametrize("case", ["narrow", "select", "diagonal", "unfold", "split_int", "mT"])
def test_view_write_is_seen_by_base_and_shares_version(case, device):
    shape, fn = VIEWS[case]
    for lib in (torch, rustgrad_on(device)):
        base = lib.zeros(shape, dtype=lib.float64)
        view = fn(lib, base)
        view = view[0] if isinstance(view, tuple) else view
        view.fill_(7.0)
        assert base._version == view._version == 1, lib.__name__
        assert float(base.sum()) == 7.0 * view.numel() or case == "unfold", lib.__name__
    tv = VIEWS[case][1](torch, torch.zeros(shape, dtype=torch.float64))
    rv = VIEWS[case][1](rustgrad, rustgrad.zeros(shape, dtype=rustgrad.float64, device=device))
    tv = tv[0] if isinstance(tv, tuple) else tv
    rv = rv[0] if isinstance(rv, tuple) else rv
    assert tv.stride() == rv.stride()


# ---- gradcheck, double backward ------------------------------------------------------------
GRADCHECK = sorted(["narrow", "select", "unbind_dim", "split_sizes", "chunk", "diagonal_offset",
                    "diagonal_dims", "mT_batch", "movedim_many", "unfold_step", "unfold"])
GRADCHECK_COPIES = sorted(["tril_k", "triu", "flip_many", "roll_many", "repeat_more_dims",
                           "tile_tuple", "repeat_interleave_dim", "repeat_interleave_tensor",
                           "pad_two_dims", "pad_crop"])


@pytest.mark.parametrize("case", GRADCHECK)
def test_view_gradcheck_passes(case):
    shape, fn = VIEWS[case]
    assert grad_ok(lambda lib, a: fn(lib, a), shape)


@pytest.mark.parametrize("case", GRADCHECK_COPIES)
def test_copy_gradcheck_passes(case):
    shape, fn = COPIES[case]
    assert grad_ok(lambda lib, a: fn(lib, a), shape)


@pytest.mark.parametrize("case", ["unfold_step", "diagonal_offset", "narrow"])
def test_view_double_backward_matches_torch(case, device):
    shape, fn = VIEWS[case]
    check_double_backward(lambda lib, a: fn(lib, a) ** 2, shape, device=device)


@pytest.mark.parametrize("case", ["repeat_more_dims", "pad_crop", "roll_many", "tril_k"])
def test_copy_double_backward_matches_torch(case, device):
    shape, fn = COPIES[case]
    check_double_backward(lambda lib, a: fn(lib, a) ** 2, shape, device=device)


# ---- errors --------------------------------------------------------------------------------
ERRORS = {
    "narrow_start": (lambda lib, a: a.narrow(1, 5, 1), "start out of range"),
    "narrow_length": (lambda lib, a: a.narrow(1, 2, 3), "start (2) + length (3) exceeds"),
    "narrow_negative_length": (lambda lib, a: a.narrow(1, 2, -1), "length must be non-negative"),
    "narrow_scalar": (lambda lib, a: a[0, 0].narrow(0, 0, 1), "cannot be applied to a 0-dim"),
    "select_range": (lambda lib, a: a.select(1, 4), "select(): index 4 out of range"),
    "select_scalar": (lambda lib, a: a[0, 0].select(0, 0), "cannot be applied to a 0-dim"),
    "unbind_scalar": (lambda lib, a: a[0, 0].unbind(), "tensor has no dimensions"),
    "split_zero": (lambda lib, a: a.split(0, 1), "split_size can only be 0 if"),
    "split_negative": (lambda lib, a: a.split(-1, 1), "split expects split_size be non-negative"),
    "split_sizes_sum": (lambda lib, a: a.split([1, 2], 1), "expects split_sizes to sum exactly"),
    "chunk_zero": (lambda lib, a: a.chunk(0), "chunk expects `chunks` to be greater than 0"),
    "diagonal_same_dims": (lambda lib, a: a.diagonal(0, 1, -1), "cannot be identical"),
    "mT_vector": (lambda lib, a: a[0].mT, "only supported on matrices or batches of matrices"),
    "movedim_repeat": (lambda lib, a: a.movedim((0, 1), (1, 1)), "repeated dim in `destination`"),
    "movedim_len": (lambda lib, a: a.movedim((0, 1), (1,)), "Invalid source or destination"),
    "unfold_size": (lambda lib, a: a.unfold(1, 5, 1), "maximum size for tensor at dimension 1"),
    "unfold_step": (lambda lib, a: a.unfold(1, 2, 0), "step is 0 but must be > 0"),
    "tril_vector": (lambda lib, a: a[0].tril(), "tril: input tensor must have at least 2"),
    "triu_vector": (lambda lib, a: a[0].triu(), "triu: input tensor must have at least 2"),
    "flip_repeat": (lambda lib, a: a.flip(0, 0), "appears multiple times in the list of dims"),
    "roll_align": (lambda lib, a: a.roll((1, 2), 0), "shifts and dimensions must align"),
    "repeat_few": (lambda lib, a: a.repeat(2), "Number of dimensions of repeat dims"),
    "repeat_negative": (lambda lib, a: a.repeat(2, -1), "negative dimension"),
    "repeat_interleave_negative": (lambda lib, a: a.repeat_interleave(-1), "must be non-negative"),
    "repeat_interleave_sizes": (lambda lib, a: a.repeat_interleave(lib.tensor([1, 2]), dim=0),
                                "repeats must have the same size as input along dim"),
    "pad_odd": (lambda lib, a: F(lib).pad(a, (1,)), "Padding length must be divisible by 2"),
    "pad_long": (lambda lib, a: F(lib).pad(a, (1,) * 6), "Padding length should be less than"),
    "pad_negative_size": (lambda lib, a: F(lib).pad(a, (-2, -3)), "must be non-negative"),
    "pad_mode": (lambda lib, a: F(lib).pad(a, (1, 1), mode="foo"), "Unrecognised padding mode"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_view_ops_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (3, 4), phrase=phrase, device=device)


# ---- reshape, view, transpose, permute, squeeze, expand, flatten, clone, to ----------------------
RESHAPES = [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (4, -1, 2)),
    ((), (1,)),
    ((), (1, 1)),
    ((1,), ()),
    ((0, 3), (3, 0)),
    ((0, 3), (-1, 3)),
    ((6,), (2, 3)),
]


@pytest.mark.parametrize("src,dst", RESHAPES, ids=str)
def test_reshape_view_contiguous_input_match_torch(src, dst, device):
    check(lambda lib, a: a.reshape(dst), src, device=device)
    check(lambda lib, a: lib.reshape(a, dst), src, device=device)
    check(lambda lib, a: a.view(dst), src, device=device)
    check(lambda lib, a: a.view(*dst) if dst else a.view(()), src, device=device)


def test_reshape_non_contiguous_input_copies_like_torch(device):
    check(lambda lib, a: a.t().reshape(-1), (3, 4), device=device)
    check(lambda lib, a: a.transpose(0, 2).reshape(4, 6), (2, 3, 4), device=device)


def test_view_as_reshape_as_match_torch(device):
    check(lambda lib, a, b: (a.view_as(b), a.reshape_as(b)), (2, 6), (3, 4), device=device)


TRANSPOSES = [((3, 4), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((3,), 0, 0), ((), 0, -1)]


@pytest.mark.parametrize("shape,d0,d1", TRANSPOSES, ids=str)
def test_transpose_dims_match_torch(shape, d0, d1, device):
    check(lambda lib, a: a.transpose(d0, d1), shape, device=device)
    check(lambda lib, a: lib.transpose(a, d0, d1), shape, device=device)


@pytest.mark.parametrize("shape", [(3, 4), (3,), (), (0, 2)], ids=str)
def test_t_up_to_2d_matches_torch(shape, device):
    check(lambda lib, a: (a.t(), lib.t(a)), shape, device=device)


def test_T_property_2d_values_and_grad_match_torch(device):
    check(lambda lib, a: a.T.sum(0), (3, 4), device=device)


def test_T_property_2d_grad_fn_is_permute_like_torch(device):
    check(lambda lib, a: a.T, (3, 4), device=device)


@pytest.mark.parametrize("shape,dims", [
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (-1, -3, 1)),
    ((2, 3), (1, 0)),
    ((), ()),
    ((1, 0, 2), (2, 1, 0)),
], ids=str)
def test_permute_orders_match_torch(shape, dims, device):
    check(lambda lib, a: a.permute(dims), shape, device=device)
    if dims:  # torch's a.permute() with no dims is a TypeError
        check(lambda lib, a: a.permute(*dims), shape, device=device)
    check(lambda lib, a: lib.permute(a, dims), shape, device=device)


@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 2), ((3, 4), -1), ((), 0), ((), -1),
                                       ((0,), 1)], ids=str)
def test_unsqueeze_positions_match_torch(shape, dim, device):
    check(lambda lib, a: (a.unsqueeze(dim), lib.unsqueeze(a, dim)), shape, device=device)


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 1, 4), {}),
    ((1, 3, 1, 4), {"dim": 0}),
    ((1, 3, 1, 4), {"dim": -2}),
    ((1, 3, 1, 4), {"dim": 1}),  # not size 1: unchanged
    ((1, 3, 1, 4), {"dim": (0, 2)}),
    ((1, 1), {}),
    ((), {}),
    ((), {"dim": 0}),
    ((1, 0), {}),
], ids=str)
def test_squeeze_dims_match_torch(shape, kw, device):
    check(lambda lib, a: a.squeeze(**kw), shape, device=device)
    check(lambda lib, a: lib.squeeze(a, **kw), shape, device=device)


@pytest.mark.parametrize("shape,size", [
    ((3, 1), (3, 4)),
    ((3, 1), (2, 3, 5)),
    ((1,), (4,)),
    ((), (2, 3)),
    ((3, 1), (-1, 4)),
    ((1, 4), (0, 4)),
    ((2, 3), (2, 3)),
], ids=str)
def test_expand_sizes_match_torch(shape, size, device):
    check(lambda lib, a: a.expand(size), shape, device=device)
    check(lambda lib, a: a.expand(*size), shape, device=device)


def test_expand_as_then_reduce_gradient_sums_like_torch(device):
    check(lambda lib, a, b: a.expand_as(b) * b, (3, 1), (2, 3, 4), device=device)


@pytest.mark.parametrize("shape,args", [
    ((2, 3, 4), ()),
    ((2, 3, 4), (1,)),
    ((2, 3, 4), (0, 1)),
    ((2, 3, 4), (-2, -1)),
    ((2, 3, 4), (1, 1)),
    ((), ()),
    ((3,), ()),
    ((2, 0, 3), (1,)),
], ids=str)
def test_flatten_ranges_match_torch(shape, args, device):
    check(lambda lib, a: a.flatten(*args), shape, device=device)
    check(lambda lib, a: lib.flatten(a, *args), shape, device=device)


@pytest.mark.parametrize("shape", [(3, 4), (), (0,)], ids=str)
def test_clone_copies_and_passes_gradient_like_torch(shape, device):
    check(lambda lib, a: (a.clone(), lib.clone(a)), shape, device=device)


def test_contiguous_on_contiguous_returns_self_like_torch(device):
    def fn(lib, a):
        b = a * 2
        c = b.contiguous()
        assert c is b
        return c

    check(fn, (3, 4), device=device)


def test_contiguous_on_transposed_copies_like_torch(device):
    def fn(lib, a):
        c = a.t().contiguous()
        assert c.is_contiguous()
        return c

    check(fn, (3, 4), device=device)


@pytest.mark.parametrize("conv", ["float", "double", "half", "to32", "to64", "to_same", "to16",
                                  "to_other"])
def test_to_dtype_conversions_match_torch(conv, device):
    convs = {
        "float": lambda lib, a: a.float(),
        "double": lambda lib, a: a.double(),
        "half": lambda lib, a: a.half(),
        "to32": lambda lib, a: a.to(lib.float32),
        "to64": lambda lib, a: a.to(dtype=lib.float64),
        "to_same": lambda lib, a: a.to(a.dtype),
        "to16": lambda lib, a: a.to(lib.float16),
        "to_other": lambda lib, a: a.to(lib.zeros(1, dtype=lib.float64)),
    }
    check(convs[conv], (3, 2), rtol=1e-3, atol=1e-3, device=device)


def test_to_same_dtype_returns_self_copy_true_copies_like_torch(device):
    def fn(lib, a):
        assert a.to(a.dtype) is a and a.float().dtype == lib.float32
        c = a.to(a.dtype, copy=True)
        assert c is not a
        return c

    check(fn, (2, 2), device=device)


def test_to_integer_dtype_cuts_gradient_like_torch(device):
    check(lambda lib, a: (a.to(lib.int64), a.long(), a.int(), a.bool()), (3, 3), low=-5, high=5,
          device=device)


# ---- broadcast_to -----------------------------------------------------------------------
def test_broadcast_to_matches_torch(device):
    check(lambda lib, a: lib.broadcast_to(a, (2, 3, 4)), (3, 1), device=device)
    check(lambda lib, a: a.broadcast_to((3, -1)), (4,), device=device)
    check_error(lambda lib, a: lib.broadcast_to(a, (2, 3)), (4,), device=device)
