"""Parity of indexing with torch: basic indexing (views), advanced indexing with integer lists
and tensors (repeated indices add their gradients), boolean masks, setitem, index_add and
index_put."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_error, grad_ok, ints, on_real_gpu

BASIC = {
    "int": (lambda a: a[1], (3, 4)),
    "neg_int": (lambda a: a[-1], (3, 4)),
    "int_int": (lambda a: a[2, -1], (3, 4)),
    "slice": (lambda a: a[1:3], (4, 3)),
    "slice_step": (lambda a: a[::2], (5, 3)),
    "slice_neg": (lambda a: a[-3:-1], (5, 2)),
    "slice_step_2d": (lambda a: a[1::2, ::3], (5, 7)),
    "full_slice": (lambda a: a[:], (3, 2)),
    "none": (lambda a: a[None], (3, 2)),
    "none_mid": (lambda a: a[:, None, 1], (3, 2)),
    "ellipsis": (lambda a: a[..., 1], (2, 3, 4)),
    "ellipsis_front": (lambda a: a[0, ...], (2, 3, 4)),
    "ellipsis_only": (lambda a: a[...], (2, 3)),
    "ellipsis_none": (lambda a: a[..., None], (2, 3)),
    "mixed": (lambda a: a[1, ..., ::2, None], (2, 3, 4)),
    "empty_slice": (lambda a: a[2:1], (3, 2)),
    "zero_dim_ellipsis": (lambda a: a[...], ()),
    "zero_dim_none": (lambda a: a[None], ()),
    "beyond_end": (lambda a: a[1:100], (3,)),
    "chain": (lambda a: a[1][1:], (3, 4)),
    "single_full_slice": (lambda a: a[0:3], (3, 4)),
    "tuple_full_slice": (lambda a: a[:, :], (3, 4)),
}


@pytest.mark.parametrize("case", sorted(BASIC))
def test_basic_indexing_forms_match_torch(case, device):
    fn, shape = BASIC[case]
    check(lambda lib, a: fn(a), shape, device=device)


def _write_through_view(lib, a):
    b = a * 1
    v = b[1:]
    v.mul_(2)
    return b, v


def test_basic_indexing_result_shares_version_counter_like_torch(device):
    check(_write_through_view, (3, 2), requires_grad=False, device=device)


def test_inplace_on_view_of_nonleaf_rebases_base_history_like_torch(device):
    check(_write_through_view, (3, 2), device=device)


ADVANCED = {
    "list": (lambda lib, a: a[[0, 2]], (3, 4)),
    "list_repeats": (lambda lib, a: a[[0, 0, 2, 0]], (3, 4)),
    "neg_list": (lambda lib, a: a[[-1, 0, -1]], (3, 2)),
    "tensor_idx": (lambda lib, a: a[lib.tensor([1, 1, 0])], (3, 2)),
    "tensor_2d_idx": (lambda lib, a: a[lib.tensor([[0, 1], [1, 1]])], (2, 3)),
    "two_lists": (lambda lib, a: a[[0, 1, 1], [2, 2, 0]], (2, 3)),
    "list_and_slice": (lambda lib, a: a[1:, [0, 0, 3]], (3, 4)),
    "slice_and_list_3d": (lambda lib, a: a[:, [1, 0, 1], ::2], (2, 3, 4)),
    "int_and_list": (lambda lib, a: a[1, [0, 0]], (3, 4)),
    "empty_list": (lambda lib, a: a[lib.tensor([], dtype=lib.int64)], (3, 2)),
    "bool_mask": (lambda lib, a: a[a > 0], (4, 3)),
    "bool_mask_rows": (lambda lib, a: a[lib.tensor([True, False, True])], (3, 4)),
    "bool_mask_none_true": (lambda lib, a: a[a > 100], (2, 3)),
    "bool_mask_0d": (lambda lib, a: a[a > 0], ()),
    "bool_mask_cols": (lambda lib, a: a[:, lib.tensor([False, True, True, False])], (2, 4)),
}


@pytest.mark.parametrize("case", sorted(ADVANCED))
def test_advanced_indexing_forms_match_torch(case, device):
    check(ADVANCED[case][0], ADVANCED[case][1], device=device)


def test_advanced_indexing_repeated_indices_gradients_add_up(device):
    def fn(lib, a):
        return a[[1, 1, 1, 0]] * lib.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=a.dtype)

    check(fn, (3, 2), device=device)


def test_indexing_of_nonleaf_then_reduce_gradient_matches_torch(device):
    check(lambda lib, a: (a * 2)[[0, 2]][:, 1:].sum(), (3, 3), device=device)


@pytest.mark.parametrize("idx", [0, -2, 2])
def test_indexing_with_0d_int_tensor_matches_torch(idx, device):
    check(lambda lib, a: a[lib.tensor(idx)], (3, 2), device=device)


def test_indexing_mask_from_numpy_values_matches_torch(device):
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    check(lambda lib, a: a[a < 0], x, device=device)


SETITEM = {
    "int_scalar": lambda lib, y, c: y.__setitem__(0, 1.0),
    "int_tensor": lambda lib, y, c: y.__setitem__(0, c),
    "column_scalar": lambda lib, y, c: y.__setitem__((slice(None), 1), 2.0),
    "ellipsis_scalar": lambda lib, y, c: y.__setitem__(Ellipsis, 1.0),
    "full_slice_tensor": lambda lib, y, c: y.__setitem__(slice(None), c),
    "full_slices_scalar": lambda lib, y, c: y.__setitem__((slice(None), slice(None)), 1.0),
    "list_rows": lambda lib, y, c: y.__setitem__([0, 1], 1.0),
    "mask": lambda lib, y, c: y.__setitem__(y > 0, 0.0),
    "repeated_pairs": lambda lib, y, c: y.__setitem__(([0, 0], [1, 1]), c[:2]),
    "slice_then_list": lambda lib, y, c: y.__setitem__((slice(1, None), [0]), 3.0),
    "none": lambda lib, y, c: y.__setitem__(None, 1.0),
    "element_from_tensor": lambda lib, y, c: y.__setitem__((0, 0), c[0]),
    "ellipsis_int": lambda lib, y, c: y.__setitem__((Ellipsis, 0), 1.0),
    "list_then_slice": lambda lib, y, c: y.__setitem__(([0, 1], slice(1, None)), 2.0),
    "negative_int": lambda lib, y, c: y.__setitem__(-1, c),
    "bool_mask_rows": lambda lib, y, c: y.__setitem__(lib.tensor([True, False, True]), c),
    # a number through one int or bool index: index_fill_ / masked_fill_ (torch >= 2.15)
    "list_cols_scalar": lambda lib, y, c: y.__setitem__((slice(None), [0, 2]), 1.0),
    "bool_mask_rows_scalar": lambda lib, y, c: y.__setitem__(lib.tensor([True, False, True]), 1.0),
    "ellipsis_bool_cols_scalar": lambda lib, y, c: y.__setitem__(
        (Ellipsis, lib.tensor([True, False, True, True])), 1.0),
    "two_lists_scalar": lambda lib, y, c: y.__setitem__(([0, 1], [1, 2]), 1.0),
    "list_rows_0d_tensor": lambda lib, y, c: y.__setitem__([0, 2], c[0]),
}


@pytest.mark.parametrize("case", sorted(SETITEM))
def test_setitem_on_nonleaf_values_grads_and_grad_fn_match_torch(case, device):
    def fn(lib, a, c):
        y = a * 2
        SETITEM[case](lib, y, c)
        return y, y * a

    if case == "repeated_pairs" and on_real_gpu(device):
        # two writes to y[0, 1]: torch's CPU keeps the last, a GPU either one (torch's CUDA too)
        a, c = rustgrad.rand(3, 4, device=device), rustgrad.rand(4, device=device)
        y = fn(rustgrad, a, c)[0].cpu().numpy()
        want = 2 * a.cpu().numpy()
        assert y[0, 1] in c.cpu().numpy()[:2].tolist()
        want[0, 1] = y[0, 1]
        np.testing.assert_allclose(y, want, rtol=1e-6)
        return

    check(fn, (3, 4), (4,), device=device)


def test_setitem_without_grad_bumps_version_like_torch(device):
    def fn(lib, a, c):
        y = a.clone()
        y[0] = c
        y[[1, 2], 0] = 5.0
        y[y > 1] = 0.0
        return y

    check(fn, (3, 4), (4,), requires_grad=False, device=device)


def _setitem_into_row_view(lib, a, b):
    y = a * 1
    v = y[0]
    v[1] = 5.0
    return y, v, y * a


def _setitem_list_into_slice_view(lib, a, b):
    y = a * 1
    v = y[:, 1:]
    v[[0, 1]] = b[:3]
    return y, v


def _setitem_mask_into_transposed_view(lib, a, b):
    y = a * 1
    v = y.t()
    v[v > 0] = 0.0
    return y, v


@pytest.mark.parametrize("fn", [_setitem_into_row_view, _setitem_list_into_slice_view,
                                _setitem_mask_into_transposed_view], ids=lambda f: f.__name__)
def test_setitem_into_view_of_nonleaf_rebases_base_like_torch(fn, device):
    check(fn, (3, 4), (4,), device=device)


# ---- index_add / index_put -----------------------------------------------------------------
@pytest.mark.parametrize("dim,idx,src", [
    (0, ints([2, 0, 2]), (3, 4)),
    (1, ints([3, 1]), (3, 2)),
    (-1, ints([0]), (3, 1)),
])
def test_index_add_matches_torch(dim, idx, src, device):
    check(lambda lib, a, i, s: lib.index_add(a, dim, i, s), (3, 4), idx, src, device=device)
    check(lambda lib, a, i, s: a.index_add(dim, i, s, alpha=2.5), (3, 4), idx, src, device=device)
    check(lambda lib, a, i, s: (a * 1).index_add_(dim, i, s), (3, 4), idx, src, device=device)
    assert grad_ok(lambda lib, a, i, s: a.index_add(dim, i, s, alpha=2.0), (3, 4), idx, src)


def test_index_add_refuses_leaf(device):
    check_error(lambda lib, a, i, s: a.index_add_(0, i, s), (3, 4), ints([0]), (1, 4),
                requires_grad=True, phrase="a leaf Variable", device=device)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate, device):
    i0, i1 = ints([0, 2, 1]), ints([1, 3, 1])
    check(lambda lib, a, x, y, v: lib.index_put(a, (x, y), v, accumulate), (3, 4), i0, i1, (3,),
          device=device)
    check(lambda lib, a, x, y, v: (a * 1).index_put_((x, y), v, accumulate=accumulate),
          (3, 4), i0, i1, (3,), device=device)
    check(lambda lib, a, x, v: a.index_put((x,), v, accumulate), (3, 4), ints([2, 0]), (4,),
          device=device)
    assert grad_ok(lambda lib, a, x, y, v: a.index_put((x, y), v, accumulate), (3, 4), i0, i1,
                   (3,))


def test_index_put_accumulate_repeats(device):
    check(lambda lib, a, x, v: a.index_put((x,), v, accumulate=True), (4,), ints([1, 1, 3]),
          (3,), device=device)


INDEX_ADD_PUT_ERRORS = {
    "index_add_out_of_range": (lambda lib, a, i, s: a.index_add(0, i, s), ((3, 4), ints([5]),
                               (1, 4)), "index 5 is out of bounds for dimension 0 with size 3"),
    "index_add_matrix_index": (lambda lib, a, i, s: a.index_add(0, i, s),
                               ((3, 4), ints([[0]]), (1, 4)), "Index is supposed to be a vector"),
    "index_add_dtype": (lambda lib, a, i, s: a.index_add(0, i, s.float()),
                        ((3, 4), ints([0]), (1, 4)), "must have the same scalar type"),
    "index_put_dtype": (lambda lib, a, i, v: a.index_put((i,), v.float()),
                        ((3, 4), ints([0]), (4,)), "Index put requires the source and destination"),
}


@pytest.mark.parametrize("case", sorted(INDEX_ADD_PUT_ERRORS))
def test_index_add_put_errors_match_torch(case, device):
    fn, specs, phrase = INDEX_ADD_PUT_ERRORS[case]
    check_error(fn, *specs, phrase=phrase, device=device)
