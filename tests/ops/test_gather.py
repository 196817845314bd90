"""Index-driven ops against torch: index_select, gather, scatter /
scatter_add (and in place), masked_fill (and in place), masked_select, take_along_dim, nonzero,
index_fill (and in place).
Repeated indices accumulate gradients; out-of-range indices raise torch's error and write
nothing."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_double_backward, check_error, grad_ok, ints, on_real_gpu, parity

# ---- index_select ------------------------------------------------------------------------
INDEX_SELECT = {
    "dim0_repeats": ((3, 4), 0, ints([2, 0, 2])),
    "dim1": ((3, 4), 1, ints([3, 1])),
    "dim_neg": ((2, 3, 4), -1, ints([0, 0, 3, 1])),
    "vector": ((5,), 0, ints([4, 4, 0])),
    "scalar_input": ((), 0, ints([0])),
    "empty_index": ((3, 4), 1, ints([])),
    "scalar_index": ((3, 4), 1, ints(2)),
    "int32_index": ((3, 4), 0, np.array([1, 1], dtype=np.int32)),
    "empty_input": ((0, 3), 1, ints([2, 0])),
}


@pytest.mark.parametrize("case", sorted(INDEX_SELECT))
def test_index_select_cases_match_torch(case, device):
    shape, dim, idx = INDEX_SELECT[case]
    check(lambda lib, a, i: a.index_select(dim, i), shape, idx, device=device)
    check(lambda lib, a, i: lib.index_select(a, dim, i), shape, idx, device=device)


# ---- gather / take_along_dim ---------------------------------------------------------------
GATHER = {
    "dim1_repeats": ((3, 4), 1, ints([[0, 0], [3, 1], [2, 2]])),
    "dim0": ((3, 4), 0, ints([[2, 0, 1, 1], [0, 0, 0, 2]])),
    "smaller_index": ((3, 4), 1, ints([[1], [3]])),
    "three_d": ((2, 3, 4), 2, ints(np.arange(12).reshape(2, 3, 2) % 4)),
    "empty_index": ((3, 4), 1, np.zeros((3, 0), dtype=np.int64)),
    "scalar": ((), 0, ints(0)),
}


@pytest.mark.parametrize("case", sorted(GATHER))
def test_gather_cases_match_torch(case, device):
    shape, dim, idx = GATHER[case]
    check(lambda lib, a, i: a.gather(dim, i), shape, idx, device=device)
    check(lambda lib, a, i: lib.gather(a, dim, i), shape, idx, device=device)


TAKE = {
    "dim1": ((3, 4), ints([[0, 3], [1, 1], [2, 0]]), 1),
    "broadcast_index": ((3, 4), ints([[0, 3, 3]]), 1),
    "broadcast_input": ((1, 4), ints([[0], [2], [3]]), 1),
    "flat": ((3, 4), ints([[11, 0], [5, 5]]), None),
    "flat_scalar_input": ((), ints([0, 0]), None),
}


@pytest.mark.parametrize("case", sorted(TAKE))
def test_take_along_dim_cases_match_torch(case, device):
    shape, idx, dim = TAKE[case]
    check(lambda lib, a, i: lib.take_along_dim(a, i, dim), shape, idx, device=device)
    check(lambda lib, a, i: a.take_along_dim(i, dim=dim), shape, idx, device=device)


# ---- scatter / scatter_add -----------------------------------------------------------------
SCATTER = {
    # distinct indices along dim (torch leaves the winner of duplicates unspecified)
    "dim1": ((3, 4), 1, ints([[0, 3], [1, 2], [2, 0]]), (3, 2)),
    "dim0": ((3, 4), 0, ints([[2, 0, 1, 1], [0, 1, 2, 0]]), (2, 4)),
    "smaller_index": ((3, 4), 1, ints([[1], [3]]), (2, 1)),
    "three_d": ((2, 3, 4), 0, ints(np.arange(24).reshape(2, 3, 4) % 2), (2, 3, 4)),
    "empty_index": ((3, 4), 1, np.zeros((3, 0), dtype=np.int64), (3, 0)),
}


@pytest.mark.parametrize("case", sorted(SCATTER))
def test_scatter_src_and_value_match_torch(case, device):
    shape, dim, idx, src = SCATTER[case]
    if case == "three_d" and on_real_gpu(device):
        # repeated indices: torch's CPU keeps the last write, a GPU any one (torch's CUDA too)
        _check_some_writer_wins(shape, dim, idx, src, device)
        return
    check(lambda lib, a, i, s: a.scatter(dim, i, s), shape, idx, src, device=device)
    check(lambda lib, a, i, s: lib.scatter(a, dim, i, s), shape, idx, src, device=device)
    check(lambda lib, a, i: a.scatter(dim, i, 2.5), shape, idx, device=device)
    check(lambda lib, a, i: lib.scatter(a, dim, i, value=-1.0), shape, idx, device=device)


def _check_some_writer_wins(shape, dim, idx, src, device):
    a = np.random.default_rng(0).uniform(-2, 2, size=shape)
    s = np.random.default_rng(1).uniform(-2, 2, size=src)
    got = rustgrad.tensor(a, device=device).scatter(dim, rustgrad.tensor(idx, device=device),
                                                    rustgrad.tensor(s, device=device)).cpu().numpy()
    writers: dict = {}
    for pos in np.ndindex(*idx.shape):
        target = pos[:dim] + (int(idx[pos]),) + pos[dim + 1:]
        writers.setdefault(target, []).append(s[pos])
    for pos in np.ndindex(*shape):
        assert got[pos] in writers.get(pos, [a[pos]]), (pos, got[pos], writers.get(pos, [a[pos]]))


SCATTER_ADD = dict(SCATTER, repeats=((3, 4), 1, ints([[0, 0, 0], [3, 1, 3], [2, 2, 1]]), (3, 3)))


@pytest.mark.parametrize("case", sorted(SCATTER_ADD))
def test_scatter_add_with_repeated_indices_matches_torch(case, device):
    shape, dim, idx, src = SCATTER_ADD[case]
    check(lambda lib, a, i, s: a.scatter_add(dim, i, s), shape, idx, src, device=device)
    check(lambda lib, a, i, s: lib.scatter_add(a, dim, i, s), shape, idx, src, device=device)


def test_scatter_src_larger_than_index_forward_matches_torch(device):
    # torch's backward refuses a src larger than the index; rustgrad pads src's gradient
    idx = ints([[0, 1]])
    check(lambda lib, a, i, s: (a.scatter(1, i, s), a.scatter_add(1, i, s)), (3, 4), idx, (2, 3),
          backward=False, device=device)
    x = rustgrad.rand(3, 4, dtype=rustgrad.float64, requires_grad=True)
    src = rustgrad.rand(2, 3, dtype=rustgrad.float64, requires_grad=True)
    g = rustgrad.rand(3, 4, dtype=rustgrad.float64)
    x.scatter(1, rustgrad.tensor([[0, 1]]), src).backward(g)
    expect = np.zeros((2, 3))
    expect[0, :2] = g.numpy()[0, :2]
    np.testing.assert_allclose(src.grad.numpy(), expect)


INPLACE = {
    "scatter_": lambda lib, a, i, s: a.scatter_(1, i, s),
    "scatter_value": lambda lib, a, i, s: a.scatter_(1, i, 0.5),
    "scatter_add_": lambda lib, a, i, s: a.scatter_add_(1, i, s),
    "masked_fill_": lambda lib, a, i, s: a.masked_fill_(a > 1.0, 0.25),
    "masked_fill_tensor": lambda lib, a, i, s: a.masked_fill_(a > 1.0, s.sum()),
}


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_graph_tensor_rebases_history_like_torch(op, device):
    fn = INPLACE[op]
    idx = ints([[0, 3], [1, 2], [2, 0]])

    def prog(lib, a, i, s):
        y = a * 2
        out = fn(lib, y, i, s)
        assert out is y
        return y, y * 1
    check(prog, (3, 4), idx, (3, 2), device=device)


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_view_of_graph_tensor_rewrites_base_history_like_torch(op, device):
    fn = INPLACE[op]
    idx = ints([[0, 3], [1, 2]])

    def prog(lib, a, i, s):
        y = a * 2
        view = y[1:]
        fn(lib, view, i, s)
        return y * y, view
    check(prog, (3, 4), idx, (2, 2), device=device)


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_without_grad_bumps_version_like_torch(op, device):
    fn = INPLACE[op]
    idx = ints([[0, 3], [1, 2], [2, 0]])

    def prog(lib, a, i, s):
        y = a.clone()
        fn(lib, y, i, s)
        return y
    check(prog, (3, 4), idx, (3, 2), requires_grad=False, device=device)


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_leaf_requiring_grad_raises_like_torch(op, device):
    fn = INPLACE[op]
    check_error(lambda lib, a, i, s: fn(lib, a, i, s), (3, 4),
                ints([[0, 3], [1, 2], [2, 0]]), (3, 2), requires_grad=True,
                phrase="a leaf Variable that requires grad is being used in an in-place",
                device=device)


# ---- masked_fill / masked_select -----------------------------------------------------------
MASKED = {
    "same_shape": ((3, 4), np.array([[True, False, True, False]] * 3)),
    "broadcast_mask": ((3, 4), np.array([True, False, False, True])),
    "broadcast_input": ((4,), np.array([[True, False, True, True], [False] * 4])),
    "scalar_input": ((), np.array(True)),
    "scalar_mask": ((2, 3), np.array(False)),
    "empty": ((0, 3), np.array([True, False, True])),
}


@pytest.mark.parametrize("case", sorted(MASKED))
def test_masked_fill_scalar_and_tensor_value_match_torch(case, device):
    shape, mask = MASKED[case]
    check(lambda lib, a, m: a.masked_fill(m, -0.5), shape, mask, device=device)
    check(lambda lib, a, m: lib.masked_fill(a, m, 3), shape, mask, device=device)
    check(lambda lib, a, m, v: a.masked_fill(m, v), shape, mask, (), device=device)
    check(lambda lib, a, m, v: a.masked_fill(m, v.float()), shape, mask, (),
          dtypes=(np.float64,), device=device)


@pytest.mark.parametrize("case", sorted(MASKED))
def test_masked_select_broadcast_matches_torch(case, device):
    shape, mask = MASKED[case]
    check(lambda lib, a, m: a.masked_select(m), shape, mask, device=device)
    check(lambda lib, a, m: lib.masked_select(a, m), shape, mask, device=device)


# ---- nonzero -------------------------------------------------------------------------------
NONZERO = {
    "matrix": np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]),
    "bool": np.array([True, False, True]),
    "int3d": ints(np.arange(12).reshape(2, 3, 2) % 3),
    "scalar_true": np.array(2.0),
    "scalar_false": np.array(0.0),
    "none": np.zeros((2, 2)),
    "empty": np.zeros((0, 3)),
}


@pytest.mark.parametrize("case", sorted(NONZERO))
def test_nonzero_matches_torch(case, device):
    x = NONZERO[case]
    check(lambda lib, a: (a.nonzero(), lib.nonzero(a), lib.argwhere(a)), x, device=device)
    check(lambda lib, a: a.nonzero(as_tuple=True), x, device=device)


# ---- gradcheck, double backward ------------------------------------------------------------
X = np.array([[0.3, -1.2, 2.0, 0.7], [1.1, -0.4, 0.9, -2.3], [0.55, 1.6, -0.8, 1.25]])
I3 = ints([[0, 0], [3, 1], [2, 2]])
M = X > 0.6
GRADCHECK = {
    "index_select": (lambda lib, a: a.index_select(1, lib.tensor([3, 0, 3])), X),
    "gather": (lambda lib, a: a.gather(1, lib.tensor(I3)), X),
    "take_along_dim": (lambda lib, a: lib.take_along_dim(a, lib.tensor([[1, 1, 0]]), 1), X),
    "scatter": (lambda lib, a, s: a.scatter(1, lib.tensor([[0, 2], [1, 3], [3, 0]]), s),
                X, X[:, :2] * 3),
    "scatter_value": (lambda lib, a: a.scatter(0, lib.tensor([[2, 0, 1, 1]]), -0.5), X),
    "scatter_add": (lambda lib, a, s: a.scatter_add(1, lib.tensor(I3), s), X, X[:, 1:3]),
    "scatter_inplace": (lambda lib, a, s: (a * 1).scatter_(
        1, lib.tensor([[0, 2], [1, 3], [3, 0]]), s), X, X[:, :2] * 3),
    "scatter_add_inplace": (lambda lib, a, s: (a * 1).scatter_add_(1, lib.tensor(I3), s), X,
                            X[:, 1:3]),
    "masked_fill_inplace": (lambda lib, a, v: (a * 1).masked_fill_(lib.tensor(M), v), X,
                            np.array(0.5)),
    "masked_fill": (lambda lib, a, v: a.masked_fill(lib.tensor(M), v), X, np.array(0.5)),
    "masked_select": (lambda lib, a: a.masked_select(lib.tensor(M)), X),
}


@pytest.mark.parametrize("op", sorted(GRADCHECK))
def test_gather_family_gradcheck_passes(op):
    fn, *arrs = GRADCHECK[op]
    assert grad_ok(fn, *arrs)


@pytest.mark.parametrize("op", ["index_select", "gather", "scatter_add", "masked_select"])
def test_gather_family_double_backward_matches_torch(op, device):
    fn, *arrs = GRADCHECK[op]
    check_double_backward(lambda lib, *xs: fn(lib, *xs) ** 2, *arrs, device=device)


# ---- errors: torch's type and phrase, nothing written --------------------------------------
ERRORS = {
    "index_select_dim0_range": (lambda lib, a, i: a.index_select(0, lib.tensor([0, 3])),
                                "index out of range in self", IndexError),
    "index_select_negative": (lambda lib, a, i: a.index_select(0, lib.tensor([-1])),
                              "index out of range in self", IndexError),
    "index_select_dim1_range": (lambda lib, a, i: a.index_select(1, lib.tensor([4])),
                                "INDICES element is out of DATA bounds, id=4 axis_dim=4",
                                RuntimeError),
    "index_select_2d_index": (lambda lib, a, i: a.index_select(1, i),
                              "Index is supposed to be a vector", IndexError),
    "index_select_2d_float_index": (lambda lib, a, i: a.index_select(1, i.double()),
                                    "Index is supposed to be a vector", IndexError),
    "index_select_float_index": (lambda lib, a, i: a.index_select(1, i[0].double()),
                                 "Expected dtype int32 or int64 for index", RuntimeError),
    "gather_range": (lambda lib, a, i: a.gather(1, i + 3),
                     "index 4 is out of bounds for dimension 1 with size 4", RuntimeError),
    "gather_negative": (lambda lib, a, i: a.gather(1, i - 1),
                        "is out of bounds for dimension 1 with size 4", RuntimeError),
    "gather_ndim": (lambda lib, a, i: a.gather(1, i[0]),
                    "Index tensor must have the same number of dimensions", RuntimeError),
    "gather_size": (lambda lib, a, i: a.gather(1, lib.zeros(4, 1).long()),
                    "Size does not match at dimension 0", RuntimeError),
    "scatter_range": (lambda lib, a, i: a.scatter(1, i + 3, 1.0),
                      "index 4 is out of bounds for dimension 1 with size 4", RuntimeError),
    "scatter__range": (lambda lib, a, i: a.scatter_(1, i + 3, 1.0),
                       "index 4 is out of bounds for dimension 1 with size 4", RuntimeError),
    "scatter_add__range": (lambda lib, a, i: a.scatter_add_(0, i + 2, a[:2, :2]),
                           "is out of bounds for dimension 0 with size 3", RuntimeError),
    "scatter_dtype": (lambda lib, a, i: a.scatter(1, i, a.float()),
                      "Expected self.dtype to be equal to src.dtype", RuntimeError),
    "scatter_src_small": (lambda lib, a, i: a.scatter(1, i, a[:1, :1]),
                          "to be no larger size than src", RuntimeError),
    "masked_fill_long_mask": (lambda lib, a, i: a.masked_fill(a.long(), 1.0),
                              "masked_fill_ only supports boolean masks", RuntimeError),
    "masked_fill_value_dims": (lambda lib, a, i: a.masked_fill(a > 0, a[0, :1]),
                               "only supports a 0-dimensional value tensor", RuntimeError),
    "masked_fill_shape": (lambda lib, a, i: a.masked_fill(a[:, 0] > 0, 1.0),
                          "must match the size of tensor b (4) at non-singleton dimension 1",
                          RuntimeError),
    "masked_fill__broadcast_self": (lambda lib, a, i: a[0].masked_fill_(a > 0, 1.0),
                                    "output with shape [4] doesn't match the broadcast shape",
                                    RuntimeError),
    "masked_select_long_mask": (lambda lib, a, i: a.masked_select(a.long()),
                                "masked_select: expected BoolTensor for mask", RuntimeError),
    "take_along_dim_ndim": (lambda lib, a, i: lib.take_along_dim(a, i[0], 1),
                            "input and indices should have the same number of dimensions",
                            RuntimeError),
    "take_along_dim_dtype": (lambda lib, a, i: lib.take_along_dim(a, i.double(), 1),
                             "dtype of indices should be Long but got Double", RuntimeError),
    "take_along_dim_range": (lambda lib, a, i: lib.take_along_dim(a, i * 12),
                             "index 12 is out of bounds for dimension 0 with size 12",
                             RuntimeError),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_index_ops_invalid_arguments_raise_torch_error_and_write_nothing(case, device):
    fn, phrase, etype = ERRORS[case]
    check_error(fn, (3, 4), ints([[1, 0], [0, 1]]), phrase=phrase, device=device)
    with pytest.raises(etype):
        fn(rustgrad, rustgrad.zeros(3, 4, dtype=rustgrad.float64),
           rustgrad.tensor([[1, 0], [0, 1]]))


# ---- index_fill ---------------------------------------------------------------------------------
INDEX_FILL = {
    "dim0": ((3, 4), 0, ints([0, 2])),
    "dim1": ((3, 4), 1, ints([3, 1])),
    "dim_neg": ((2, 3, 4), -1, ints([3])),
    "scalar_index": ((3, 4), 1, ints(2)),
    "repeats": ((3, 4), 0, ints([1, 1])),
    "empty_index": ((3, 4), 0, ints([])),
}


@pytest.mark.parametrize("case", sorted(INDEX_FILL))
def test_index_fill_matches_torch(case):
    shape, dim, idx = INDEX_FILL[case]
    check(lambda L, x, i: x.index_fill(dim, i, -1.5), shape, idx)
    check(lambda L, x, i, v: L.index_fill(x, dim, i, v), shape, idx, np.array(2.5))
    check(lambda L, x, i: (x * 1).index_fill_(dim, i, 3.0), shape, idx)
    assert grad_ok(lambda L, x, i, v: x.index_fill(dim, i, v), shape, idx, np.array(2.5))


def test_index_fill_negative_index_matches_torch():
    # (torch's own backward of IndexFillBackward1 rejects a negative index, so a scalar value here)
    check(lambda L, x, i: x.index_fill(1, i, -1.5), (3, 4), ints([-1, 1]))


def test_index_fill_errors_and_ints():
    parity(lambda L: L.tensor([1, 2, 3]).index_fill(0, L.tensor([0]), 2.5))
    parity(lambda L: L.tensor(5.0).index_fill(0, L.tensor([0]), 2.5))
    for bad, phrase in [(lambda L, x: x.index_fill(1, L.tensor([5]), 1.0), "out of bounds"),
                        (lambda L, x: x.index_fill(1, L.tensor([1.0]), 1.0), "Expected dtype int64"),
                        (lambda L, x: x.index_fill(1, L.tensor([[1]]), 1.0), "vector/scalar"),
                        (lambda L, x: x.index_fill(1, L.tensor([1]), L.ones(2)), "0-dimensional"),
                        (lambda L, x: x.index_fill(3, L.tensor([1]), 1.0), "Dimension out of range")]:
        check_error(bad, (3, 4), phrase=phrase)
