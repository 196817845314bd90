"""The scatter family against torch: scatter_reduce (every reduction, with and without
include_self) and index_reduce, index_copy, masked_scatter, take and put, select_scatter,
slice_scatter, diagonal_scatter, and their in-place forms: values, dtypes, grad_fn names and
saved attributes, gradients (ties, zeros of prod), gradcheck and double backward, errors."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints

pytestmark = [pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta"),
              pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")]

REDUCES = ["sum", "prod", "mean", "amax", "amin"]
IDX0 = ints([[0, 1, 0, 2], [1, 1, 2, 0], [2, 0, 0, 1]])  # dim 0 of a (3, 4) input, repeats
IDX1 = ints([[3, 3, 0], [1, 0, 1], [2, 2, 2]])  # dim 1 of a (3, 4) input, repeats


# ---- scatter_reduce --------------------------------------------------------------------------
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_matches_torch(reduce, include_self, device):
    check(lambda L, a, i, s: a.scatter_reduce(0, i, s, reduce, include_self=include_self),
          (3, 4), IDX0, (3, 4), device=device)
    check(lambda L, a, i, s: L.scatter_reduce(a, 1, i, s, reduce, include_self=include_self),
          (3, 4), IDX1, (3, 3), device=device)


# ties between self and src (amax/amin share the gradient between them) and zeros (prod)
TIES = np.array([[1.0, 3.0], [3.0, 0.0]])
TIE_SRC = np.array([[3.0, 3.0], [3.0, 0.0], [0.0, 2.0]])
TIE_IDX = ints([[1, 0], [1, 1], [0, 1]])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "mean"])
def test_scatter_reduce_ties_and_zeros_match_torch(reduce, include_self, device):
    check(lambda L, a, i, s: a.scatter_reduce(0, i, s, reduce, include_self=include_self),
          TIES, TIE_IDX, TIE_SRC, device=device)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_integers_match_torch(reduce, device):
    # mean of integers rounds down, as torch's
    x = ints([[-7, 2, 3], [4, 5, -6]])
    src = ints([[0, 8, 9], [10, -11, 12]])
    idx = ints([[0, 0, 1], [1, 0, 1]])
    check(lambda L, a, i, s: (a.scatter_reduce(0, i, s, reduce),
                              a.scatter_reduce(0, i, s, reduce, include_self=False)),
          x, idx, src, dtypes=(None,), device=device)


def test_scatter_reduce_takes_max_and_min_forward_only_as_torch_does(device):
    check(lambda L, a, i, s: (a.scatter_reduce(0, i, s, "max"), a.scatter_reduce(0, i, s, "min")),
          (3, 4), IDX0, (3, 4), backward=False, device=device)
    for lib in (torch, rustgrad):
        x = lib.ones(3, requires_grad=True)
        y = x.scatter_reduce(0, lib.tensor([0, 0]), lib.ones(2), "min")
        with pytest.raises(RuntimeError, match="Expected 'reduce' to be one of"):
            y.sum().backward()


def test_scatter_family_takes_int32_indices_like_torch(device):
    idx = IDX0.astype(np.int32)
    check(lambda L, a, i, s: (a.scatter_reduce(0, i, s, "amax"), a.gather(0, i),
                              a.scatter_add(0, i, s)), (3, 4), idx, (3, 4), device=device)


def test_scatter_reduce_nan_propagates_like_torch(device):
    x = np.array([1.0, np.nan, 3.0])
    src = np.array([5.0, 2.0, np.nan, 1.0])
    idx = ints([0, 1, 2, 0])
    for reduce in ("amax", "amin", "sum", "prod"):
        check(lambda L, a, i, s, r=reduce: a.scatter_reduce(0, i, s, r), x, idx, src,
              backward=False, device=device)


def test_scatter_reduce_scalar_and_empty_match_torch(device):
    check(lambda L, a, i, s: a.scatter_reduce(0, i, s, "prod"), np.array(2.0), ints([0, 0]),
          np.array([4.0, 5.0]), device=device)
    check(lambda L, a, i, s: a.scatter_reduce(0, i, s, "amax"), (3,), ints([], ), np.zeros(0),
          device=device)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_gradcheck(reduce):
    assert grad_ok(lambda L, a, s: a.scatter_reduce(1, L.tensor(IDX1), s, reduce), (3, 4), (3, 3),
                   low=0.5, high=2.0)
    assert grad_ok(lambda L, a, s: a.scatter_reduce(0, L.tensor(IDX0), s, reduce,
                                                    include_self=False), (3, 4), (3, 4),
                   low=0.5, high=2.0)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax"])
def test_scatter_reduce_double_backward_matches_torch(reduce, device):
    check_double_backward(lambda L, a, s: (a.scatter_reduce(1, L.tensor(IDX1), s, reduce) ** 2),
                          (3, 4), (3, 3), low=0.5, high=2.0, device=device)


def test_scatter_reduce_saved_attributes_match_torch():
    out = {}
    for lib in (torch, rustgrad):
        x = lib.ones(3, 4, requires_grad=True)
        y = x.scatter_reduce(1, lib.tensor(IDX1), lib.ones(3, 3), "amax", include_self=False)
        f = y.grad_fn
        out[lib.__name__] = (f._saved_dim, f._saved_reduce, f._saved_include_self,
                             f._saved_index.tolist(), f._saved_self.shape,
                             f._saved_result.shape)
    assert out["rustgrad"] == out["torch"]


@pytest.mark.parametrize("reduce", ["prod", "amax", "mean"])
def test_scatter_reduce_inplace_matches_torch(reduce, device):
    def prog(L, a, i, s):
        y = a * 2
        out = y.scatter_reduce_(1, i, s, reduce)
        assert out is y
        return y, y * 1
    check(prog, (3, 4), IDX1, (3, 3), low=0.5, high=2.0, device=device)


SCATTER_REDUCE_ERRORS = {
    "bad_reduce": (lambda L, a, i, s: a.scatter_reduce(0, i, s, "add"), "reduce argument must"),
    "dtype": (lambda L, a, i, s: a.scatter_reduce(0, i, s.float(), "sum"),
              "Expected self.dtype to be equal to src.dtype"),
    "out_of_range": (lambda L, a, i, s: a.scatter_reduce(0, i + 5, s, "sum"),
                     "index 5 is out of bounds for dimension 0 with size 3"),
    "float_index": (lambda L, a, i, s: a.scatter_reduce(0, i.double(), s, "sum"),
                    "scatter(): Expected dtype int32/int64 for index"),
    "missing_reduce": (lambda L, a, i, s: a.scatter_reduce(0, i, s), None),
}


@pytest.mark.parametrize("case", sorted(SCATTER_REDUCE_ERRORS))
def test_scatter_reduce_errors_match_torch(case, device):
    fn, phrase = SCATTER_REDUCE_ERRORS[case]
    if phrase is None:  # both raise TypeError, worded by their argument parsers
        with pytest.raises(TypeError):
            fn(torch, torch.ones(3, 4, dtype=torch.float64), torch.tensor(IDX0),
               torch.ones(3, 4, dtype=torch.float64))
        with pytest.raises(TypeError):
            fn(rustgrad, rustgrad.ones(3, 4, dtype=rustgrad.float64, device=device),
               rustgrad.tensor(IDX0, device=device),
               rustgrad.ones(3, 4, dtype=rustgrad.float64, device=device))
        return
    check_error(fn, (3, 4), IDX0, (3, 4), phrase=phrase, device=device)


def test_scatter_reduce_mean_of_bool_is_refused_like_torch():
    for lib in (torch, rustgrad):
        x = lib.tensor([True, False])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            x.scatter_reduce(0, lib.tensor([0, 1]), lib.tensor([True, True]), "mean")


# ---- index_reduce ----------------------------------------------------------------------------
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_matches_torch(reduce, include_self, device):
    idx = ints([0, 3, 3, 1, 3])
    check(lambda L, a, i, s: a.index_reduce(1, i, s, reduce, include_self=include_self),
          (3, 4), idx, (3, 5), low=0.5, high=2.0, device=device)
    check(lambda L, a, i, s: L.index_reduce(a, 0, i, s, reduce, include_self=include_self),
          (3, 4), ints([2, 2]), (2, 4), device=device)


def test_index_reduce_integers_and_inplace_match_torch(device):
    x = ints([[1, 2, 3], [4, 5, 6]])
    src = ints([[7, 8, 9], [10, 11, 12]])
    check(lambda L, a, i, s: (a.index_reduce(0, i, s, "mean"),
                              a.index_reduce(0, i, s, "prod", include_self=False)),
          x, ints([1, 1]), src, dtypes=(None,), device=device)

    def prog(L, a, i, s):
        y = a * 1
        y.index_reduce_(0, i, s, "amax", include_self=False)
        return y
    check(prog, (3, 4), ints([2, 0, 2]), (3, 4), device=device)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax"])
def test_index_reduce_gradcheck(reduce):
    assert grad_ok(lambda L, a, s: a.index_reduce(0, L.tensor([1, 1, 0]), s, reduce), (2, 3),
                   (3, 3), low=0.5, high=2.0)


INDEX_REDUCE_ERRORS = {
    "sum": (lambda L, a, i, s: a.index_reduce(0, i, s, "sum"), "Expected reduce to be one of"),
    "matrix_index": (lambda L, a, i, s: a.index_reduce(0, i.reshape(1, 2), s, "prod"),
                     "Index is supposed to be a vector"),
    "out_of_range": (lambda L, a, i, s: a.index_reduce(0, i + 3, s, "prod"),
                     "index out of range in self"),
    "negative": (lambda L, a, i, s: a.index_reduce(0, i - 2, s, "prod"),
                 "index out of range in self"),
    "shape": (lambda L, a, i, s: a.index_reduce(0, i, s[:, :2], "prod"),
              "source tensor shape must match self tensor shape"),
    "count": (lambda L, a, i, s: a.index_reduce(0, L.cat([i, i]), s, "prod"),
              "Number of indices (4) should be equal to source.size(dim): (2)"),
    "dtype": (lambda L, a, i, s: a.index_reduce(0, i, s.float(), "prod"),
              "must have the same scalar type"),
}


@pytest.mark.parametrize("case", sorted(INDEX_REDUCE_ERRORS))
def test_index_reduce_errors_match_torch(case, device):
    fn, phrase = INDEX_REDUCE_ERRORS[case]
    check_error(fn, (3, 4), ints([1, 1]), (2, 4), phrase=phrase, device=device)


# ---- index_copy ------------------------------------------------------------------------------
INDEX_COPY = {
    "dim1": ((3, 4), 1, ints([3, 0]), (3, 2)),
    "dim0": ((3, 4), 0, ints([2]), (1, 4)),
    "scalar": ((), 0, ints([0]), ()),
    "scalar_index": ((2,), 0, ints(1), ()),
    "empty": ((3, 4), 1, ints([]), (3, 0)),
}


@pytest.mark.parametrize("case", sorted(INDEX_COPY))
def test_index_copy_matches_torch(case, device):
    shape, dim, idx, src = INDEX_COPY[case]
    check(lambda L, a, i, s: a.index_copy(dim, i, s), shape, idx, src, device=device)
    check(lambda L, a, i, s: L.index_copy(a, dim, i, s), shape, idx, src, device=device)

    def prog(L, a, i, s):
        y = a * 1
        assert y.index_copy_(dim, i, s) is y
        return y
    check(prog, shape, idx, src, device=device)


def test_index_copy_gradcheck_and_double_backward(device):
    assert grad_ok(lambda L, a, s: a.index_copy(1, L.tensor([3, 0]), s), (3, 4), (3, 2))
    check_double_backward(lambda L, a, s: a.index_copy(1, L.tensor([3, 0]), s) ** 2, (3, 4),
                          (3, 2), device=device)


INDEX_COPY_ERRORS = {
    "dtype": (lambda L, a, i, s: a.index_copy(0, i, s.float()), "expected to have the same dtype"),
    "out_of_range": (lambda L, a, i, s: a.index_copy(0, i + 3, s),
                     "index_copy_(): index 3 is out of bounds for dimension 0 with size 3"),
    "negative": (lambda L, a, i, s: a.index_copy(0, i - 1, s), "index -1 is out of bounds"),
    "count": (lambda L, a, i, s: a.index_copy(0, L.cat([i, i]), s), "Number of indices (2)"),
    "int32": (lambda L, a, i, s: a.index_copy(0, i.int(), s),
              "Expected a long tensor for index, but got Int"),
    "matrix_index": (lambda L, a, i, s: a.index_copy(0, i.reshape(1, 1), s),
                     "Index should have dimension 1 or 0 (got 2)"),
    "slice_shape": (lambda L, a, i, s: a.index_copy(1, i, s), "must have same slice shapes"),
    "dims": (lambda L, a, i, s: a.index_copy(0, i, s[0]), "their dimensionality must match"),
}


@pytest.mark.parametrize("case", sorted(INDEX_COPY_ERRORS))
def test_index_copy_errors_match_torch(case, device):
    fn, phrase = INDEX_COPY_ERRORS[case]
    check_error(fn, (3, 4), ints([0]), (1, 4), phrase=phrase, device=device)


# ---- masked_scatter --------------------------------------------------------------------------
MASK = np.array([True, False, True, True])


@pytest.mark.parametrize("source", [(3, 5), (9,), (12,)])
def test_masked_scatter_matches_torch(source, device):
    check(lambda L, a, m, s: a.masked_scatter(m, s), (3, 4), MASK, source, dtypes=(np.float64,),
          device=device)
    check(lambda L, a, m, s: L.masked_scatter(a, m, s), (3, 4), MASK, source,
          dtypes=(np.float32,), device=device)


def test_masked_scatter_broadcasts_self_and_inplace_match_torch(device):
    mask = np.array([[True, False, True, True], [False, False, False, True]])
    check(lambda L, a, m, s: a.masked_scatter(m, s), (4,), mask, (6,), device=device)

    def prog(L, a, m, s):
        y = a * 1
        assert y.masked_scatter_(m, s) is y
        return y
    check(prog, (3, 4), MASK, (10,), device=device)


def test_masked_scatter_gradcheck_and_saved_attributes():
    assert grad_ok(lambda L, a, s: a.masked_scatter(L.tensor(MASK), s), (3, 4), (2, 5))
    sizes = []
    for lib in (torch, rustgrad):
        y = lib.zeros(3, 4, requires_grad=True).masked_scatter(lib.tensor(MASK), lib.ones(2, 5))
        sizes.append((y.grad_fn._saved_source_sym_sizes, y.grad_fn._saved_mask.shape))
    assert tuple(sizes[1][0]) == tuple(sizes[0][0]) and tuple(sizes[1][1]) == tuple(sizes[0][1])


MASKED_SCATTER_ERRORS = {
    "short_source": (lambda L, a, m, s: a.masked_scatter(m, s[:8]),
                     "Number of elements of source < number of ones in mask"),
    "int_mask": (lambda L, a, m, s: a.masked_scatter(m.int(), s),
                 "masked_scatter_ only supports boolean masks, but got mask with dtype Int"),
    "dtype": (lambda L, a, m, s: a.masked_scatter(m, s.float()),
              "expected self and source to have same dtypes"),
    "shape": (lambda L, a, m, s: a.masked_scatter(m[:3], s), "must match the size"),
}


@pytest.mark.parametrize("case", sorted(MASKED_SCATTER_ERRORS))
def test_masked_scatter_errors_match_torch(case, device):
    fn, phrase = MASKED_SCATTER_ERRORS[case]
    check_error(fn, (3, 4), MASK, (12,), phrase=phrase, device=device)


# ---- take / put ------------------------------------------------------------------------------
def test_take_matches_torch(device):
    check(lambda L, a, i: a.take(i), (3, 4), ints([[0, 11], [-1, 5]]), device=device)
    check(lambda L, a, i: L.take(a, i), (3, 4), ints([0, 0, 5, 0]), device=device)
    check(lambda L, a, i: a.take(i), (), ints([0, -1]), device=device)
    check(lambda L, a, i: a.take(i), (3, 4), ints([]), device=device)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_matches_torch(accumulate, device):
    idx = ints([[0, 11], [-1, 5]]) if not accumulate else ints([[0, 11], [-1, 0]])
    check(lambda L, a, i, s: a.put(i, s, accumulate), (3, 4), idx, (4,), device=device)
    check(lambda L, a, i, s: L.put(a, i, s, accumulate=accumulate), (3, 4), idx, (2, 2),
          device=device)

    def prog(L, a, i, s):
        y = a * 1
        assert y.put_(i, s, accumulate) is y
        return y
    check(prog, (3, 4), idx, (4,), device=device)


def test_take_and_put_gradcheck_and_double_backward(device):
    assert grad_ok(lambda L, a: a.take(L.tensor([[0, 0], [5, -1]])), (3, 4))
    assert grad_ok(lambda L, a, s: a.put(L.tensor([1, 1, 4]), s, True), (2, 3), (3,))
    check_double_backward(lambda L, a: a.take(L.tensor([0, 0, 5])) ** 2, (3, 4), device=device)
    check_double_backward(lambda L, a, s: a.put(L.tensor([2, 7]), s) ** 2, (3, 4), (2,),
                          device=device)


TAKE_PUT_ERRORS = {
    "take_range": (lambda L, a, i, s: a.take(i + 12),
                   "out of range: tried to access index 12 on a tensor of 12 elements."),
    "take_negative": (lambda L, a, i, s: a.take(i - 13), "tried to access index -13"),
    "take_int32": (lambda L, a, i, s: a.take(i.int()), "take(): Expected a long tensor for index"),
    "put_range": (lambda L, a, i, s: a.put(i + 12, s), "tried to access index 12"),
    "put_count": (lambda L, a, i, s: a.put(i, L.cat([s, s])),
                  "Expected source and index to have the same number of elements"),
    "put_dtype": (lambda L, a, i, s: a.put(i, s.float()), "expected to have the same dtype"),
    "put_int32": (lambda L, a, i, s: a.put(i.int(), s), "put_(): Expected a long tensor"),
}


@pytest.mark.parametrize("case", sorted(TAKE_PUT_ERRORS))
def test_take_and_put_errors_match_torch(case, device):
    fn, phrase = TAKE_PUT_ERRORS[case]
    check_error(fn, (3, 4), ints([0, 1]), (2,), phrase=phrase, device=device)


# ---- select_scatter / slice_scatter / diagonal_scatter ---------------------------------------
EMBEDS = {
    "select0": (lambda L, a, s: L.select_scatter(a, s, 0, 1), (3, 4), (4,)),
    "select_neg": (lambda L, a, s: a.select_scatter(s, -1, -1), (3, 4), (3,)),
    "slice_step": (lambda L, a, s: L.slice_scatter(a, s, 1, 0, 4, 2), (3, 4), (3, 2)),
    "slice_default": (lambda L, a, s: a.slice_scatter(s), (3, 4), (3, 4)),
    "slice_neg_start": (lambda L, a, s: a.slice_scatter(s, start=-2), (3, 4), (2, 4)),
    "slice_clamped": (lambda L, a, s: a.slice_scatter(s, 1, -10, 100), (3, 4), (3, 4)),
    "diagonal": (lambda L, a, s: L.diagonal_scatter(a, s), (3, 4), (3,)),
    "diagonal_above": (lambda L, a, s: a.diagonal_scatter(s, 1), (3, 4), (3,)),
    "diagonal_below": (lambda L, a, s: a.diagonal_scatter(s, -1), (3, 4), (2,)),
    "diagonal_dims": (lambda L, a, s: a.diagonal_scatter(s, 1, 2, 0), (2, 3, 4), (3, 1)),
    "diagonal_empty": (lambda L, a, s: a.diagonal_scatter(s, 5), (3, 4), (0,)),
}


@pytest.mark.parametrize("case", sorted(EMBEDS))
def test_embedding_scatters_match_torch(case, device):
    fn, shape, src = EMBEDS[case]
    check(fn, shape, src, device=device)


def test_embedding_scatters_cast_src_and_double_backward_like_torch(device):
    # a src of another dtype is cast to self's; its gradient comes back in its own dtype
    check(lambda L, a, s: a.select_scatter(s.float(), 0, 1), (3, 4), (4,), dtypes=(np.float64,),
          device=device)
    for name in ("select0", "slice_step", "diagonal_above"):
        fn, shape, src = EMBEDS[name]
        check_double_backward(lambda L, a, s, f=fn: f(L, a, s) ** 2, shape, src, device=device)
        assert grad_ok(fn, shape, src)


def test_embedding_scatter_saved_attributes_match_torch():
    got = {}
    for lib in (torch, rustgrad):
        x = lib.zeros(3, 4, requires_grad=True)
        a = lib.slice_scatter(x, lib.ones(3, 2), 1, 0, 4, 2).grad_fn
        b = lib.slice_scatter(x, lib.ones(3, 4)).grad_fn
        c = lib.select_scatter(x, lib.ones(4), 0, 2).grad_fn
        d = lib.diagonal_scatter(x, lib.ones(2), 1, 1, 0).grad_fn
        got[lib.__name__] = (
            (a._saved_dim, a._saved_start, a._saved_end, a._saved_step),
            (b._saved_dim, b._saved_start, b._saved_end, b._saved_step),
            (c._saved_dim, c._saved_index), (d._saved_offset, d._saved_dim1, d._saved_dim2))
    assert got["rustgrad"] == got["torch"]


EMBED_ERRORS = {
    "select_size": (lambda L, a, s: L.select_scatter(a, s[:3], 0, 1),
                    "expected src to have a size equal to the slice of self. src size = [3], "
                    "slice size = [4]"),
    "select_range": (lambda L, a, s: L.select_scatter(a, s, 0, 5),
                     "select(): index 5 out of range for tensor of size [3, 4] at dimension 0"),
    "slice_size": (lambda L, a, s: L.slice_scatter(a, s.reshape(1, 4)),
                   "src size = [1, 4], slice size = [3, 4]"),
    "slice_step": (lambda L, a, s: L.slice_scatter(a, s, 1, step=0), "slice step must be positive"),
    "diagonal_size": (lambda L, a, s: L.diagonal_scatter(a, s[:2]), "src size = [2], slice size = [3]"),
    "diagonal_dims": (lambda L, a, s: L.diagonal_scatter(a, s[:3], 0, 0, 0),
                      "diagonal dimensions cannot be identical 0, 0"),
}


@pytest.mark.parametrize("case", sorted(EMBED_ERRORS))
def test_embedding_scatter_errors_match_torch(case, device):
    fn, phrase = EMBED_ERRORS[case]
    check_error(fn, (3, 4), (4,), phrase=phrase, device=device)


# ---- scatter(reduce=...) ---------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_matches_torch_and_has_no_derivative(reduce, device):
    idx = ints([[0, 1, 0, 2], [0, 0, 0, 0]])
    check(lambda L, a, i, s: (a.scatter(0, i, s, reduce=reduce), a.scatter(0, i, 1.5, reduce=reduce)),
          (3, 4), idx, (2, 4), backward=False, device=device)

    def inplace(L, a, i, s):
        y = a.detach().clone()
        y.scatter_(0, i, s.detach(), reduce=reduce)
        return y
    check(inplace, (3, 4), idx, (2, 4), device=device)
    for lib in (torch, rustgrad):
        x = lib.ones(3, 4, requires_grad=True)
        y = x.scatter(0, lib.tensor(idx), 2.0, reduce=reduce)
        assert y.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
            y.sum().backward()
    check_error(lambda L, a, i, s: a.scatter(0, i, s, reduce="mean"), (3, 4), idx, (2, 4),
                phrase="reduce argument must be either add or multiply.", device=device)
