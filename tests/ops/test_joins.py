"""Joins against torch: cat/concat/concatenate, stack, hstack/vstack/row_stack, column_stack,
dstack, block_diag, cartesian_prod, combinations. Also the view and copy ops of torch's surface
that came with them (their families are views and copies): atleast_1d/2d/3d, tensor_split,
hsplit/vsplit/dsplit, broadcast_tensors/broadcast_shapes, swapaxes/swapdims, ravel, unflatten,
sum_to_size, as_strided(_), the view ops in place (t_, transpose_, squeeze_, unsqueeze_), rot90,
fliplr, flipud. Values, dtypes, grad_fn names, views, gradients (gradcheck, double backward) and
torch's errors, on every device."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints, parity, rustgrad_on


# ---- cat, stack, hstack, vstack (moved from test_views.py) ------------------------------------
@pytest.mark.parametrize("shapes,dim", [
    (((2, 3), (4, 3)), 0),
    (((2, 3), (2, 1), (2, 2)), 1),
    (((2, 3), (2, 5)), -1),
    (((2, 3, 4), (2, 1, 4)), 1),
    (((0, 3), (2, 3)), 0),
    (((3,), (0,)), 0),
    (((2, 3),), 0),
], ids=str)
def test_cat_dims_match_torch(shapes, dim, device):
    check(lambda lib, *ts: lib.cat(ts, dim), *shapes, device=device)
    check(lambda lib, *ts: lib.cat(list(ts), dim=dim), *shapes, device=device)


def test_cat_mixed_dtypes_promotes_like_torch(device):
    ints = np.arange(6).reshape(2, 3)
    check(lambda lib, a, b: lib.cat([a, b]), (2, 3), ints, device=device)
    check(lambda lib, a, b: lib.cat([a, b.double()]), (2, 3), (2, 3), dtypes=(np.float32,),
          device=device)


def test_cat_legacy_empty_1d_skipped_like_torch(device):
    check(lambda lib, a, b: lib.cat([a, b], 1), (2, 3), (0,), device=device)


@pytest.mark.parametrize("shapes,dim", [
    (((2, 3), (2, 3)), 0),
    (((2, 3), (2, 3), (2, 3)), 1),
    (((2, 3), (2, 3)), 2),
    (((2, 3), (2, 3)), -1),
    (((), ()), 0),
    (((0, 2), (0, 2)), 1),
    (((4,),), 0),
], ids=str)
def test_stack_dims_match_torch(shapes, dim, device):
    check(lambda lib, *ts: lib.stack(ts, dim), *shapes, device=device)
    check(lambda lib, *ts: lib.stack(list(ts), dim=dim), *shapes, device=device)


@pytest.mark.parametrize("shapes", [((3,), (2,)), ((2, 3), (2, 1)), ((), (2,))])
def test_hstack_matches_torch(shapes, device):
    check(lambda lib, a, b: lib.hstack([a, b]), *shapes, device=device)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((1, 4), (2, 4))])
def test_vstack_matches_torch(shapes, device):
    check(lambda lib, a, b: lib.vstack([a, b]), *shapes, device=device)


def test_concatenate_and_row_stack_are_cat_and_vstack(device):
    check(lambda lib, a, b: lib.concatenate([a, b], 1), (2, 3), (2, 1), device=device)
    check(lambda lib, a, b: lib.concatenate((a, b), axis=0), (2, 3), (1, 3), device=device)
    check(lambda lib, a, b: lib.row_stack([a, b]), (3,), (2, 3), device=device)


# ---- column_stack, dstack ----------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((3,), (3, 2)), ((), (1,)), ((2, 1), (2, 3))],
                         ids=str)
def test_column_stack_matches_torch(shapes, device):
    check(lambda lib, *ts: lib.column_stack(ts), *shapes, device=device)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3, 1), (2, 3, 2)),
                                    ((), ()), ((1, 3, 1), (3,))], ids=str)
def test_dstack_matches_torch(shapes, device):
    check(lambda lib, *ts: lib.dstack(ts), *shapes, device=device)


@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "column_stack", "dstack"])
def test_stacking_nothing_raises_like_torch(name):
    check_error(lambda lib: getattr(lib, name)([]), phrase="expects a non-empty TensorList")


# ---- block_diag --------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((2, 3), (3,), (), (1, 2)), ((2, 2),), ((0, 2), (2, 0), (1, 1))],
                         ids=str)
def test_block_diag_matches_torch(shapes, device):
    check(lambda lib, *ts: lib.block_diag(*ts), *shapes, device=device)


def test_block_diag_promotes_like_torch(device):
    check(lambda lib, a, b: lib.block_diag(a, b), (2, 2), ints([[1, 2, 3]]), device=device)


def test_block_diag_of_no_blocks_is_torchs_empty_row():
    check(lambda lib: lib.block_diag())  # (1, 0), the default dtype, on the default device


# ---- cartesian_prod, combinations --------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2,), (3,), (2,)), ((3,),), ((0,), (2,))], ids=str)
def test_cartesian_prod_matches_torch(shapes, device):
    check(lambda lib, *ts: lib.cartesian_prod(*ts), *shapes, device=device)


@pytest.mark.parametrize("r,rep", [(2, False), (3, False), (1, False), (0, False), (5, False),
                                   (2, True), (3, True)], ids=str)
def test_combinations_match_torch(r, rep, device):
    check(lambda lib, a: lib.combinations(a, r, with_replacement=rep), (4,), device=device)


def test_combinations_of_integers_match_torch(device):
    check(lambda lib, a: lib.combinations(a), ints([5, 7, 9]), device=device)


# ---- atleast_1d/2d/3d --------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)], ids=str)
def test_atleast_nd_views_match_torch(n, shape, device):
    check(lambda lib, a: getattr(lib, f"atleast_{n}d")(a), shape, device=device)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_nd_calling_forms_match_torch(n):
    def fn(lib):
        f = getattr(lib, f"atleast_{n}d")
        a, b = lib.tensor(1.0), lib.tensor([1.0, 2.0])
        one = f(a)
        assert isinstance(one, lib.Tensor) and f(b if n == 1 else one) is (b if n == 1 else one)
        pair, listed = f(a, b), f([a, b])
        assert isinstance(pair, tuple) and isinstance(listed, tuple) and f() == ()
        return [tuple(t.shape) for t in (*pair, *listed)]

    parity(fn)


# ---- tensor_split, hsplit, vsplit, dsplit ------------------------------------------------------
SPLITS = {
    "sections": ((7, 2), lambda lib, a: a.tensor_split(3)),
    "sections_more_than_size": ((2, 3), lambda lib, a: lib.tensor_split(a, 4, 1)),
    "indices": ((7, 2), lambda lib, a: lib.tensor_split(a, [1, 5])),
    "indices_unordered": ((4,), lambda lib, a: a.tensor_split([3, 1])),
    "indices_negative_and_past": ((4,), lambda lib, a: a.tensor_split([-1, 10])),
    "indices_dim": ((2, 5), lambda lib, a: a.tensor_split((2,), dim=-1)),
    "tensor_indices": ((6,), lambda lib, a: a.tensor_split(lib.tensor([2, 4]))),
    "tensor_sections": ((6,), lambda lib, a: lib.tensor_split(a, lib.tensor(4))),
    "hsplit_matrix": ((2, 4), lambda lib, a: a.hsplit(2)),
    "hsplit_vector": ((4,), lambda lib, a: lib.hsplit(a, [1])),
    "vsplit": ((4, 2), lambda lib, a: a.vsplit(2)),
    "vsplit_indices": ((4, 2), lambda lib, a: lib.vsplit(a, [3])),
    "dsplit": ((1, 2, 4), lambda lib, a: a.dsplit(2)),
    "dsplit_indices": ((1, 2, 4), lambda lib, a: lib.dsplit(a, [1, 2])),
}


@pytest.mark.parametrize("case", sorted(SPLITS))
def test_tensor_split_family_views_match_torch(case, device):
    shape, fn = SPLITS[case]
    check(fn, shape, device=device)


def test_tensor_split_pieces_can_be_written_in_place_like_torch(device):
    def fn(lib, a):
        pieces = (a * 1).tensor_split(2)
        pieces[0].mul_(2)  # not multi-output views (unlike split's)
        return pieces[0]

    check(fn, (4,), grad_fn=False, device=device)


# ---- broadcast_tensors, broadcast_shapes -------------------------------------------------------
def test_broadcast_tensors_match_torch(device):
    check(lambda lib, a, b: lib.broadcast_tensors(a, b), (2, 1), (3,), device=device)
    check(lambda lib, a, b, c: lib.broadcast_tensors(a, b, c), (2, 3), (3,), (), device=device)
    check(lambda lib, a: lib.broadcast_tensors(a), (2,), device=device)


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), (2, (3, 1)), ((0,), (1,)), (), ((5, 1, 3), (4, 1), 3),
                                    (torch.Size([2, 1]), [1, 4])], ids=str)
def test_broadcast_shapes_match_torch(shapes):
    got = parity(lambda lib: tuple(lib.broadcast_shapes(*shapes)))
    assert type(rustgrad.broadcast_shapes(*shapes)) is rustgrad.Size and isinstance(got, tuple)


# ---- swapaxes, ravel, unflatten, sum_to_size ---------------------------------------------------
SHAPE_OPS = {
    "swapaxes": ((2, 3, 4), lambda lib, a: lib.swapaxes(a, 0, 2)),
    "swapaxes_method": ((2, 3), lambda lib, a: a.swapaxes(-1, 0)),
    "swapdims": ((2, 3, 4), lambda lib, a: a.swapdims(1, 2)),
    "swapdims_function": ((2, 3), lambda lib, a: lib.swapdims(a, 0, 1)),
    "ravel": ((2, 3), lambda lib, a: a.ravel()),
    "ravel_strided": ((2, 3), lambda lib, a: lib.ravel(a.t())),
    "ravel_scalar": ((), lambda lib, a: a.ravel()),
    "unflatten": ((2, 12), lambda lib, a: lib.unflatten(a, 1, (3, -1))),
    "unflatten_neg_dim": ((6,), lambda lib, a: a.unflatten(-1, (2, 3))),
    "sum_to_size": ((2, 3), lambda lib, a: a.sum_to_size(1, 3)),
    "sum_to_size_fewer_dims": ((2, 3), lambda lib, a: a.sum_to_size(3)),
    "sum_to_size_same": ((2, 3), lambda lib, a: a.sum_to_size((2, 3))),
    "sum_to_size_columns": ((2, 3), lambda lib, a: a.sum_to_size([2, 1])),
}


@pytest.mark.parametrize("case", sorted(SHAPE_OPS))
def test_shape_ops_match_torch(case, device):
    shape, fn = SHAPE_OPS[case]
    check(fn, shape, device=device)


def test_sum_to_size_of_its_own_size_is_the_input_like_torch():
    for lib in (torch, rustgrad):
        a = lib.ones(2, 3)
        assert a.sum_to_size(2, 3) is a


# ---- as_strided --------------------------------------------------------------------------------
STRIDED = {
    "transpose_like": ((2, 3), lambda lib, a: a.as_strided((3, 2), (1, 3))),
    "offset": ((2, 3), lambda lib, a: lib.as_strided(a, (2, 2), (3, 1), 1)),
    "overlapping_windows": ((6,), lambda lib, a: a.as_strided((4, 3), (1, 1))),
    "broadcast_stride0": ((3,), lambda lib, a: a.as_strided((2, 3), (0, 1))),
    "of_a_view": ((6,), lambda lib, a: a[2:].as_strided((2, 2), (1, 1))),
    "of_a_view_storage_offset": ((6,), lambda lib, a: a[2:].as_strided((3,), (2,), 0)),
    "empty": ((2, 3), lambda lib, a: a.as_strided((0, 2), (1, 1), 6)),
    "scalar": ((2, 3), lambda lib, a: a.as_strided((), (), 4)),
}


@pytest.mark.parametrize("case", sorted(STRIDED))
def test_as_strided_views_match_torch(case, device):
    shape, fn = STRIDED[case]
    # AsStridedBackward0 under both; the overlapping views' gradients sum, as torch's
    check(fn, shape, device=device)


def test_as_strided_view_reads_and_writes_the_storage(device):
    for lib in (torch, rustgrad_on(device)):
        base = lib.zeros(6, dtype=lib.float64)
        v = base[1:].as_strided((2,), (2,))
        v.fill_(1.0)
        assert base.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0], lib.__name__
        assert v._base is base and v.stride() == (2,) and base._version == 1, lib.__name__


# ---- view ops in place -------------------------------------------------------------------------
INPLACE_VIEWS = {
    "t_": ((2, 3), lambda lib, y: y.t_()),
    "t_vector": ((3,), lambda lib, y: y.t_()),
    "transpose_": ((2, 3, 4), lambda lib, y: y.transpose_(0, 2)),
    "swapaxes_": ((2, 3), lambda lib, y: y.swapaxes_(0, 1)),
    "swapdims_": ((2, 3), lambda lib, y: y.swapdims_(1, 0)),
    "unsqueeze_": ((2, 3), lambda lib, y: y.unsqueeze_(1)),
    "unsqueeze_neg": ((2, 3), lambda lib, y: y.unsqueeze_(-1)),
    "squeeze_": ((1, 3, 1), lambda lib, y: y.squeeze_()),
    "squeeze_dims": ((1, 3, 1), lambda lib, y: y.squeeze_((0, 2))),
    "as_strided_": ((2, 3), lambda lib, y: y.as_strided_((3, 2), (1, 3))),
    "as_strided_offset": ((2, 3), lambda lib, y: lib.as_strided_(y, (2,), (2,), 1)),
}


@pytest.mark.parametrize("case", sorted(INPLACE_VIEWS))
def test_view_ops_in_place_match_torch(case, device):
    shape, fn = INPLACE_VIEWS[case]

    def program(lib, a):
        y = a * 1
        out = fn(lib, y)
        assert out is y  # the same tensor, relaid out
        return y

    check(program, shape, device=device)


def test_squeeze_inplace_one_dim_values_and_gradients_match_torch(device):
    # torch names the node SqueezeBackward4, which _ops/linalg.py's matmul uses for its own node
    check(lambda lib, a: (a * 1).squeeze_(0), (1, 3, 1), grad_fn=False, device=device)
    y = (rustgrad.ones(1, 3, requires_grad=True) * 1).squeeze_(0)
    assert y.grad_fn.name() == "SqueezeBackward5" and y.shape == (3,)


def test_view_ops_in_place_without_grad_bump_the_version_like_torch(device):
    strides = []
    for lib in (torch, rustgrad_on(device)):
        x = lib.zeros(2, 3)
        x.t_()
        x.unsqueeze_(0)
        assert tuple(x.shape) == (1, 3, 2) and x._version == 2 and x.grad_fn is None, lib.__name__
        strides.append(x.stride())
    assert strides[0] == strides[1] == (3, 1, 3)


def test_view_op_in_place_on_a_view_keeps_the_base_and_its_gradient(device):
    def fn(lib, a):
        y = a * 1
        v = y[1]
        v.unsqueeze_(0)
        assert v._base is y and tuple(v.shape) == (1, 3)
        return v * 2

    # torch names v's node UnsqueezeBackward1; rustgrad remakes it over its base (AsStrided)
    check(fn, (2, 3), grad_fn=False, device=device)


# ---- rot90, fliplr, flipud ---------------------------------------------------------------------
ROTATIONS = {
    "rot90": ((2, 3), lambda lib, a: a.rot90()),
    "rot90_k2": ((2, 3), lambda lib, a: lib.rot90(a, 2)),
    "rot90_k3": ((2, 3), lambda lib, a: a.rot90(3)),
    "rot90_k0": ((2, 3), lambda lib, a: a.rot90(0)),
    "rot90_negative": ((2, 3), lambda lib, a: a.rot90(-1, [1, 0])),
    "rot90_k5": ((2, 3), lambda lib, a: lib.rot90(a, 5)),
    "rot90_dims": ((2, 3, 4), lambda lib, a: a.rot90(1, (2, 0))),
    "rot90_neg_dims": ((2, 3, 4), lambda lib, a: lib.rot90(a, 3, [-1, -2])),
    "fliplr": ((2, 3), lambda lib, a: a.fliplr()),
    "fliplr_3d": ((2, 3, 4), lambda lib, a: lib.fliplr(a)),
    "flipud": ((3,), lambda lib, a: lib.flipud(a)),
    "flipud_matrix": ((2, 3), lambda lib, a: a.flipud()),
}


@pytest.mark.parametrize("case", sorted(ROTATIONS))
def test_rotations_match_torch_with_its_strides(case, device):
    shape, fn = ROTATIONS[case]
    check(fn, shape, device=device)
    tr = fn(torch, torch.zeros(shape))
    rr = fn(rustgrad, rustgrad.zeros(shape, device=device))
    assert rr.stride() == tr.stride()


# ---- gradcheck, double backward ----------------------------------------------------------------
GRADCHECK = {
    "block_diag": (((2, 3), (3,), ()), lambda lib, *ts: lib.block_diag(*ts)),
    "cartesian_prod": (((2,), (3,)), lambda lib, *ts: lib.cartesian_prod(*ts)),
    "combinations": (((4,),), lambda lib, a: lib.combinations(a, 2, True)),
    "column_stack": (((3,), (3, 2)), lambda lib, *ts: lib.column_stack(ts)),
    "dstack": (((2, 3), (2, 3, 2)), lambda lib, *ts: lib.dstack(ts)),
    "tensor_split": (((7, 2),), lambda lib, a: a.tensor_split([1, 5])),
    "as_strided_overlapping": (((6,),), lambda lib, a: a.as_strided((4, 3), (1, 1))),
    "as_strided_of_view": (((6,),), lambda lib, a: a[1:].as_strided((2, 2), (2, 1))),
    "t_": (((2, 3),), lambda lib, a: (a * 1).t_()),
    "as_strided_": (((2, 3),), lambda lib, a: (a * 1).as_strided_((2, 2), (1, 2), 1)),
    "sum_to_size": (((2, 3),), lambda lib, a: a.sum_to_size(1, 3)),
    "rot90": (((2, 3, 2),), lambda lib, a: a.rot90(1, (0, 2))),
    "atleast_3d": (((3,),), lambda lib, a: lib.atleast_3d(a)),
}


@pytest.mark.parametrize("case", sorted(GRADCHECK))
def test_gradcheck_passes(case):
    shapes, fn = GRADCHECK[case]
    assert grad_ok(fn, *shapes)


@pytest.mark.parametrize("case", ["block_diag", "combinations", "as_strided_overlapping", "rot90",
                                  "cartesian_prod", "t_"])
def test_double_backward_matches_torch(case, device):
    shapes, fn = GRADCHECK[case]
    check_double_backward(lambda lib, *ts: fn(lib, *ts) ** 2, *shapes, device=device)


# ---- errors ------------------------------------------------------------------------------------
ERRORS = {
    "block_diag_3d": (lambda lib, a: lib.block_diag(a.reshape(1, 2, 3)),
                      "Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    "cartesian_matrix": (lambda lib, a: lib.cartesian_prod(a, a[0]), "Expect a 1D vector, but got shape"),
    "cartesian_dtypes": (lambda lib, a: lib.cartesian_prod(a[0], lib.tensor([1, 2])),
                         "meshgrid expects all tensors to have the same dtype"),
    "cartesian_nothing": (lambda lib, a: lib.cartesian_prod(), "meshgrid expects a non-empty TensorList"),
    "combinations_matrix": (lambda lib, a: lib.combinations(a), "Expect a 1D vector, but got shape [2, 3]"),
    "combinations_negative": (lambda lib, a: lib.combinations(a[0], -1), "Expect a non-negative number"),
    "tensor_split_scalar": (lambda lib, a: a[0, 0].tensor_split(2), "expected at least a 1-dimensional"),
    "tensor_split_zero": (lambda lib, a: a.tensor_split(0), "number of sections must be larger than 0"),
    "tensor_split_2d_indices": (lambda lib, a: a.tensor_split(lib.tensor([[1]])),
                                "zero-dimensional or one-dimensional tensor, but got a tensor with 2"),
    "tensor_split_float_indices": (lambda lib, a: a.tensor_split(lib.tensor([1.0])),
                                   "to have dtype of long, but got Float"),
    "hsplit_scalar": (lambda lib, a: a[0, 0].hsplit(2), "torch.hsplit requires a tensor with at least 1"),
    "hsplit_uneven": (lambda lib, a: a.hsplit(2), "not divisible by the split_size 2!"),
    "vsplit_vector": (lambda lib, a: a[0].vsplit(1), "torch.vsplit requires a tensor with at least 2"),
    "vsplit_uneven": (lambda lib, a: lib.vsplit(a, 3), "size of the dimension 2 is not divisible"),
    "dsplit_matrix": (lambda lib, a: a.dsplit(1), "torch.dsplit requires a tensor with at least 3"),
    "broadcast_tensors": (lambda lib, a: lib.broadcast_tensors(a, a[0, :2]),
                          "must match the size of tensor b (2) at non-singleton dimension 1"),
    "broadcast_shapes": (lambda lib, a: lib.broadcast_shapes((5, 2, 1), (2, 4), 3),
                         "Attempting to broadcast a dimension of length 3 at -1! Mismatching argument "
                         "at index 2 had (3,); but expected shape should be broadcastable to [5, 2, 4]"),
    "broadcast_shapes_negative": (lambda lib, a: lib.broadcast_shapes((2, -1)),
                                  "Attempting to broadcast a dimension with negative length!"),
    "as_strided_negative_stride": (lambda lib, a: a.as_strided((2, 2), (1, -1)),
                                   "Negative strides are not supported at the moment, got strides: [1, -1]"),
    "as_strided_out_of_bounds": (lambda lib, a: a.as_strided((2, 2), (3, 1), 5),
                                 "storage offset 5, and itemsize 8 requiring a storage size of 80 are out "
                                 "of bounds for storage of size 48"),
    "as_strided_negative_offset": (lambda lib, a: a.as_strided((2,), (1,), -1), "invalid storage offset -1"),
    "as_strided_lengths": (lambda lib, a: a.as_strided((2, 2), (1,)), "mismatch in length of strides and shape"),
    "t_3d": (lambda lib, a: a.reshape(1, 2, 3).t_(), "t_() expects a tensor with <= 2 dimensions"),
    "transpose_range": (lambda lib, a: (a * 1).transpose_(0, 2), "Dimension out of range"),
    "rot90_one_dim": (lambda lib, a: a[0].rot90(), "expected total dims >= 2, but got total dims = 1"),
    "rot90_same_dims": (lambda lib, a: a.rot90(1, [0, 0]), "expected rotation dims to be different"),
    "rot90_wrapped_same_dims": (lambda lib, a: a.rot90(1, [0, -2]), "expected rotation dims to be different"),
    "rot90_three_dims": (lambda lib, a: a.rot90(1, [0, 1, 2]), "expected total rotation dims == 2"),
    "rot90_range": (lambda lib, a: a.rot90(1, [0, 2]), "Dimension out of range"),
    "fliplr_vector": (lambda lib, a: a[0].fliplr(), "Input must be >= 2-d."),
    "flipud_scalar": (lambda lib, a: lib.flipud(a[0, 0]), "Input must be >= 1-d."),
    "sum_to_size": (lambda lib, a: a.sum_to_size(4), "size {[4]} is not expandable to size {[2, 3]}."),
    "sum_to_size_more_dims": (lambda lib, a: a.sum_to_size(1, 2, 3), "is not expandable to size"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (2, 3), phrase=phrase, device=device)


INPLACE_ERRORS = {
    "leaf": (lambda lib, a: a.t_(), "a leaf Variable that requires grad is being used in an in-place"),
    "view_of_leaf": (lambda lib, a: a[0].unsqueeze_(0), "a view of a leaf Variable that requires grad"),
    "multi_output": (lambda lib, a: (a * 1).split(1)[0].squeeze_(), "output of a function that returns "
                     "multiple views"),
}


@pytest.mark.parametrize("case", sorted(INPLACE_ERRORS))
def test_view_ops_in_place_refuse_what_torch_refuses(case, device):
    fn, phrase = INPLACE_ERRORS[case]
    check_error(fn, (2, 3), phrase=phrase, requires_grad=True, device=device)
