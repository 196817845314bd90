"""Parity of errors with torch: same exception type, same key phrase, inputs left unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check_error, same_error

INTS = np.arange(6, dtype=np.int64).reshape(2, 3)

# name: (program, input specs, key phrase or None for torch's first 40 characters, grad)
ERRORS = {
    "add_shape_mismatch": (lambda lib, a, b: a + b, ((2, 3), (4,)), "The size of tensor a", True),
    "mul_shape_mismatch": (lambda lib, a, b: a * b, ((2, 3), (3, 2)), "The size of tensor a",
                           True),
    "matmul_mismatch": (lambda lib, a, b: a @ b, ((2, 3), (4, 5)),
                        "mat1 and mat2 shapes cannot be multiplied", True),
    "matmul_mismatch_batched": (lambda lib, a, b: a @ b, ((2, 2, 3), (4, 5)), None, True),
    "matmul_0d": (lambda lib, a, b: a @ b, ((), (3,)), None, True),
    "dot_mismatch": (lambda lib, a, b: a @ b, ((3,), (4,)), "inconsistent tensor size", True),
    "view_non_contiguous": (lambda lib, a: a.t().view(-1), ((3, 4),),
                            "view size is not compatible", True),
    "reshape_wrong_numel": (lambda lib, a: a.reshape(5, 2), ((3, 4),), None, True),
    "reshape_two_inferred": (lambda lib, a: a.reshape(-1, -1), ((3, 4),), None, True),
    "index_out_of_range": (lambda lib, a: a[5], ((3, 2),), "out of bounds", True),
    "index_neg_out_of_range": (lambda lib, a: a[:, -4], ((3, 2),), "out of bounds", True),
    "index_list_out_of_range": (lambda lib, a: a[[0, 3]], ((3, 2),), "out of bounds", True),
    "index_too_many": (lambda lib, a: a[0, 0, 0], ((3, 2),), "too many indices", True),
    "index_0d_int": (lambda lib, a: a[0], ((),), "invalid index of a 0-dim tensor", True),
    "index_float": (lambda lib, a: a[lib.tensor([0.5])], ((3,),), None, True),
    "inplace_on_leaf": (lambda lib, a: a.add_(1), ((3,),),
                        "a leaf Variable that requires grad is being used in an in-place "
                        "operation.", True),
    "inplace_mul_on_leaf": (lambda lib, a, b: a.mul_(b), ((3,), (3,)),
                            "a leaf Variable that requires grad is being used", True),
    "iadd_on_leaf": (lambda lib, a: a.__iadd__(1), ((3,),), "a leaf Variable that requires grad",
                     True),
    "clamp_on_leaf": (lambda lib, a: a.clamp_(0, 1), ((3,),), "a leaf Variable that requires",
                      True),
    "zero_on_leaf": (lambda lib, a: a.zero_(), ((3,),), "a leaf Variable that requires", True),
    "setitem_on_leaf": (lambda lib, a: a.__setitem__(0, 1.0), ((3,),),
                        "a leaf Variable that requires grad is being used in an in-place "
                        "operation.", True),
    "setitem_out_of_range": (lambda lib, a: a.__setitem__(5, 1.0), ((3,),), "out of bounds",
                             False),
    "setitem_nonleaf_out_of_range": (lambda lib, a: (a * 1).__setitem__((0, 7), 1.0), ((2, 3),),
                                     "out of bounds", True),
    "int_requires_grad": (lambda lib: lib.tensor([1, 2], requires_grad=True), (),
                          "nly Tensors of floating point", False),
    "int_requires_grad_": (lambda lib, a: a.requires_grad_(), (INTS,),
                           "nly Tensors of floating point", False),
    "int_add_float_inplace": (lambda lib, a: a.add_(1.5), (INTS,),
                              "result type Float can't be cast to the desired output type Long",
                              False),
    "int_mul_float_tensor_inplace": (lambda lib, a: a.mul_(lib.ones(3)), (INTS,),
                                     "result type Float can't be cast to the desired output type "
                                     "Long", False),
    "int_div_inplace": (lambda lib, a: a.div_(2), (INTS,), "result type Float can't be cast",
                        False),
    "clamp_int_float_bound_inplace": (lambda lib, a: a.clamp_(0.5), (INTS,),
                                      "result type Float can't be cast to the desired output "
                                      "type long int", False),
    "clamp_int_float_tensor_bound_inplace": (lambda lib, a: a.clamp_(lib.tensor(0.5)), (INTS,),
                                             "result type Float can't be cast to the desired "
                                             "output type Long", False),
    "clamp_inplace_broadcast": (lambda lib, a: a.clamp_(lib.zeros(2, 3)), ((3,),),
                                "output with shape [3] doesn't match the broadcast shape", False),
    "inplace_broadcast_output": (lambda lib, a, b: (a * 1).add_(b), ((3,), (2, 3)),
                                 "output with shape [3] doesn't match the broadcast shape", True),
    "inplace_broadcast_output_nograd": (lambda lib, a, b: a.clone().mul_(b), ((1, 3), (2, 3)),
                                        "output with shape [1, 3] doesn't match the broadcast",
                                        False),
    "sub_bool_tensors": (lambda lib: lib.tensor([True]) - lib.tensor([False]), (),
                         "Subtraction, the `-` operator, with two bool tensors", False),
    "neg_bool": (lambda lib: -lib.tensor([True]), (), "Negation, the `-` operator, on a bool",
                 False),
    "sum_dim_out_of_range": (lambda lib, a: a.sum(2), ((3, 4),), "Dimension out of range", True),
    "mean_int": (lambda lib, a: a.mean(), (INTS,), "mean(): could not infer output dtype", False),
    "max_empty": (lambda lib, a: a.max(), ((0, 3),), None, True),
    "max_dim_empty": (lambda lib, a: a.max(0), ((0, 3),), None, True),
    "transpose_dim_out_of_range": (lambda lib, a: a.transpose(0, 3), ((2, 3),),
                                   "Dimension out of range", True),
    "t_3d": (lambda lib, a: a.t(), ((2, 3, 4),), None, True),
    "permute_wrong_len": (lambda lib, a: a.permute(1, 0), ((2, 3, 4),), "number of dimensions",
                          True),
    "permute_repeated": (lambda lib, a: a.permute(1, 1, 0), ((2, 3, 4),), None, True),
    "expand_bad": (lambda lib, a: a.expand(4, 3), ((2, 3),),
                   "The expanded size of the tensor (4) must match the existing size (2)", True),
    "expand_too_few": (lambda lib, a: a.expand(3), ((2, 3),),
                       "the number of sizes provided (1) must be greater or equal", True),
    "cat_mismatch": (lambda lib, a, b: lib.cat([a, b]), ((2, 3), (2, 4)),
                     "Sizes of tensors must match except in dimension 0", True),
    "cat_0d": (lambda lib, a: lib.cat([a, a]), ((),), "zero-dimensional tensor", True),
    "cat_empty_list": (lambda lib: lib.cat([]), (), None, False),
    "stack_mismatch": (lambda lib, a, b: lib.stack([a, b]), ((2, 3), (3, 2)),
                       "stack expects each tensor to be equal size", True),
    "squeeze_dim_out_of_range": (lambda lib, a: a.squeeze(3), ((1, 3),),
                                 "Dimension out of range", True),
    "unsqueeze_out_of_range": (lambda lib, a: a.unsqueeze(4), ((1, 3),),
                               "Dimension out of range", True),
    "clamp_no_bounds": (lambda lib, a: a.clamp(), ((3,),),
                        "At least one of 'min' or 'max' must not be None", True),
    "where_non_bool": (lambda lib, a: lib.where(a, a, a), ((3,),),
                       "where expected condition to be a boolean tensor", True),
    "pow_int_negative": (lambda lib, a: a ** -1, (INTS,),
                         "Integers to negative integer powers are not allowed", False),
    "backward_non_scalar": (lambda lib, a: (a * 2).backward(), ((3,),),
                            "grad can be implicitly created only for scalar outputs", True),
    "backward_saved_modified": (lambda lib, a: _modify_saved(a), ((3,),),
                                "one of the variables needed for gradient computation has been "
                                "modified by an inplace operation", True),
    "item_many": (lambda lib, a: a.item(), ((3,),), None, True),
}


def _modify_saved(a):
    y = a.exp()  # saves its output
    y.add_(1)
    y.sum().backward()


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_raised_type_and_message_match_torch(case, device):
    fn, specs, phrase, grad = ERRORS[case]
    check_error(fn, *specs, phrase=phrase, requires_grad=grad, device=device)


def test_error_dim_out_of_range_message_matches_torch_exactly(device):
    et, er = check_error(lambda lib, a: a.sum(-3), (2, 3), device=device)
    assert str(er) == str(et)


BROADCAST_ERRORS = {
    "sub": lambda lib, a, b: a - b,
    "div": lambda lib, a, b: a / b,
    "pow": lambda lib, a, b: a**b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "where": lambda lib, a, b: lib.where(a > 0, a, b),
    "gt": lambda lib, a, b: a > b,
    "eq": lambda lib, a, b: a == b,
    "clamp_tensor": lambda lib, a, b: a.clamp(b),
}


@pytest.mark.parametrize("shapes", [((2, 3), (4,)), ((5, 2, 3), (4, 1, 3)), ((3,), (2,))],
                         ids=str)
@pytest.mark.parametrize("op", sorted(BROADCAST_ERRORS))
def test_error_broadcast_mismatch_message_matches_torch_exactly(op, shapes, device):
    et, er = check_error(BROADCAST_ERRORS[op], *shapes, phrase="The size of tensor a",
                         requires_grad=True, device=device)
    assert str(er) == str(et)


INDEX_ERRORS = {
    "0d_slice": (lambda lib, a: a[:], ()),
    "0d_int": (lambda lib, a: a[0], ()),
    "0d_tuple_int": (lambda lib, a: a[(0,)], ()),
    "0d_ellipsis_slice": (lambda lib, a: a[..., :], ()),
    "0d_none_slice": (lambda lib, a: a[None, :], ()),
    "0d_list": (lambda lib, a: a[[0]], ()),
    "0d_int_tensor": (lambda lib, a: a[lib.tensor(0)], ()),
    "too_many_ints": (lambda lib, a: a[0, 0, 0], (3, 2)),
    "too_many_ellipsis": (lambda lib, a: a[..., 0, 0, 0], (3, 2)),
    "too_many_lists": (lambda lib, a: a[[0], [0], [0]], (3, 2)),
    "int_out_of_range": (lambda lib, a: a[3], (3, 2)),
    "int_out_of_range_dim1": (lambda lib, a: a[0, 2], (3, 2)),
    "mask_wrong_length": (lambda lib, a: a[lib.tensor([True, False])], (3, 2)),
    "mask_wrong_2d": (lambda lib, a: a[lib.ones(3, 3) > 0], (3, 2)),
    "mask_wrong_dim1": (lambda lib, a: a[:, lib.tensor([True, False, True])], (3, 2)),
    "mask_after_ellipsis": (lambda lib, a: a[..., lib.tensor([True, False, True])], (3, 2)),
}


@pytest.mark.parametrize("case", sorted(INDEX_ERRORS))
def test_error_indexing_message_matches_torch_exactly(case, device):
    fn, shape = INDEX_ERRORS[case]
    et, er = check_error(fn, shape, requires_grad=True, device=device)
    assert str(er) == str(et)


# torch >= 2.15 raises its dtype refusals as NotImplementedError
BOOL_REFUSALS = {
    "relu": (lambda b: b.relu(), "Boolean inputs not supported for relu"),
    "relu_": (lambda b: b.clone().relu_(), "Boolean inputs not supported for relu"),
    "topk": (lambda b: b.topk(1), "topk does not support bool dtypes on CPU"),
    "trace": (lambda b: b.reshape(2, 2).trace(), "\"trace\" not implemented for 'Bool'"),
    "argmax": (lambda b: b.argmax(), "argmax(): does not support bool input"),
    "mean": (lambda b: b.mean(), "mean(): could not infer output dtype"),
    "neg": (lambda b: -b, "Negation, the `-` operator, on a bool tensor is not supported"),
    "mean_int_dtype": (lambda b: b.float().mean(dtype=b.long().dtype),
                       "mean(): could not infer output dtype. Optional dtype must be either a "
                       "floating point or complex dtype. Got: Long"),
}


@pytest.mark.parametrize("case", sorted(BOOL_REFUSALS))
def test_bool_input_refusals_are_not_implemented_errors(case):
    fn, phrase = BOOL_REFUSALS[case]
    same_error(lambda lib: fn(lib.tensor([True, False, True, True])), phrase)
    with pytest.raises(NotImplementedError):
        fn(rustgrad.tensor([True, False, True, True]))
