"""Order statistics and sample statistics against torch: kthvalue, mode, nanmedian, msort,
unique_consecutive, quantile/nanquantile (every interpolation, tensor q, keepdim, NaN), cov
(weights, correction), corrcoef, histc, histogram (edges, weights, density), trapezoid/trapz,
cumulative_trapezoid and gradient (uniform, per-dim and coordinate spacing, edge orders): values,
dtypes, grad_fn names, gradients, double backward, gradcheck and errors, on every device."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_double_backward, check_error, grad_ok, ints

NAN = np.nan


# ---- kthvalue, mode, nanmedian, msort --------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), ()], ids=str)
def test_kthvalue_matches_torch(shape, device):
    # random values have no ties, so the indices (and the gradient's target) are torch's
    n = shape[-1] if shape else 1
    check(lambda L, a: tuple(L.kthvalue(a, 1)), shape, device=device)
    check(lambda L, a: tuple(a.kthvalue(n, dim=-1, keepdim=True)), shape, device=device)
    if len(shape) > 1:
        check(lambda L, a: tuple(a.kthvalue(2, 0)), shape, device=device)


def test_kthvalue_nan_is_largest_and_errors_match_torch(device):
    check(lambda L, a: tuple(a.kthvalue(3, 1)), np.array([[3.0, NAN, 1.0], [2.0, 0.5, 1.0]]),
          device=device)
    check_error(lambda L, a: a.kthvalue(4, 1), (2, 3), device=device,
                phrase="selected number k out of range for dimension 1")
    check_error(lambda L, a: a.kthvalue(1, 1), (2, 0), device=device,
                phrase="Expected reduction dim 1 to have non-zero size")


def test_mode_matches_torch(device):
    # the most frequent value, the smallest among equally frequent ones, at its last index
    a = np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [3.0, 3.0, 1.0, 1.0, 0.0], [4.0, 5.0, 6.0, 7.0, 8.0]])
    check(lambda L, x: tuple(L.mode(x)), a, device=device)
    check(lambda L, x: tuple(x.mode(0, keepdim=True)), a, device=device)
    check(lambda L, x: tuple(x.mode(dim=1)), ints([[1, 2, 2, 1], [3, 3, 1, 1]]), dtypes=(None,),
          device=device)
    check(lambda L, x: tuple(x.mode()), (), device=device)


@pytest.mark.parametrize("shape", [(7,), (3, 4), ()], ids=str)
def test_nanmedian_without_nan_matches_torch(shape, device):
    check(lambda L, a: L.nanmedian(a), shape, device=device)
    if shape:
        check(lambda L, a: tuple(a.nanmedian(0)), shape, device=device)
        check(lambda L, a: tuple(a.nanmedian(-1, keepdim=True)), shape, device=device)


def test_nanmedian_skips_nan_like_torch(device):
    a = np.array([[1.0, NAN, 3.0, 2.0], [NAN, 5.0, NAN, 4.0], [2.0, 2.0, 7.0, 7.0]])
    check(lambda L, x: x.nanmedian(), a, device=device)
    check(lambda L, x: tuple(x.nanmedian(1)), a, device=device)
    check(lambda L, x: x.nanmedian(), np.array([NAN, NAN]), device=device)
    # ties share the gradient of the overall nanmedian evenly
    check(lambda L, x: x.nanmedian(), np.array([1.0, 2.0, 2.0, 3.0]), device=device)


def test_order_statistics_saved_attributes_and_named_tuples():
    x = rustgrad.randn(3, 4, dtype=rustgrad.float64, requires_grad=True)
    for r, name, node in ((x.kthvalue(2, 1), "kthvalue", "KthvalueBackward0"),
                          (x.mode(1), "mode", "ModeBackward0"),
                          (x.nanmedian(1), "nanmedian", "NanmedianBackward1")):
        assert type(r).__name__ == name and repr(r).startswith(f"torch.return_types.{name}(")
        fn = r.values.grad_fn
        assert fn.name() == node
        assert (fn._saved_dim, fn._saved_keepdim, fn._saved_self_sym_sizes) == (1, False, (3, 4))
        assert fn._saved_indices.tolist() == r.indices.tolist()
    assert x.nanmedian().grad_fn.name() == "NanmedianBackward0"
    check_double_backward(lambda L, a: a.kthvalue(2, 1).values * a.sum(1), (3, 4))
    assert grad_ok(lambda L, a: a.nanmedian(0).values, (5, 3))


def test_msort_matches_torch(device):
    check(lambda L, a: L.msort(a), (4, 3), device=device)
    check(lambda L, a: a.msort(), (5,), device=device)


# ---- unique_consecutive ----------------------------------------------------------------------
def test_unique_consecutive_matches_torch(device):
    a = ints([1, 1, 2, 2, 3, 1, 1, 2])
    check(lambda L, x: L.unique_consecutive(x), a, dtypes=(None,), device=device)
    check(lambda L, x: x.unique_consecutive(return_inverse=True, return_counts=True), a,
          dtypes=(None,), device=device)
    check(lambda L, x: x.unique_consecutive(return_counts=True), ints([[1, 1], [2, 2], [2, 3]]),
          dtypes=(None,), device=device)
    m = ints([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]])
    check(lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True, dim=0), m,
          dtypes=(None,), device=device)
    check(lambda L, x: x.unique_consecutive(return_inverse=True, dim=1), m, dtypes=(None,),
          device=device)
    check(lambda L, x: x.unique_consecutive(return_inverse=True, return_counts=True),
          np.zeros(0), dtypes=(np.float64,), backward=False, device=device)


def test_unique_consecutive_has_torch_node_without_a_derivative():
    x = rustgrad.tensor([1.0, 1.0, 2.0], requires_grad=True)
    y = x.unique_consecutive()
    assert y.grad_fn.name() == "UniqueConsecutiveBackward0"
    with pytest.raises(RuntimeError, match="derivative for aten::unique_consecutive is not implemented"):
        y.sum().backward()


# ---- quantile, nanquantile -------------------------------------------------------------------
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_matches_torch(name, interpolation, device):
    def program(L, a, q=0.3, **kw):
        return getattr(a, name)(q, interpolation=interpolation, **kw)

    check(lambda L, a: program(L, a), (3, 5), grad_fn=False, versions=False, device=device)
    check(lambda L, a: program(L, a, dim=1), (3, 5), grad_fn=False, versions=False, device=device)
    check(lambda L, a: program(L, a, dim=0, keepdim=True), (3, 5), grad_fn=False, versions=False, device=device)
    check(lambda L, a: program(L, a, keepdim=True), (2, 3, 2), grad_fn=False, versions=False, device=device)
    check(lambda L, a, q: program(L, a, q, dim=-1), (4, 6), np.array([0.0, 0.25, 0.5, 1.0]),
          grad_fn=False, versions=False, device=device)
    check(lambda L, a, q: program(L, a, q, dim=1, keepdim=True), (2, 5, 3), np.array([0.1, 0.9]),
          grad_fn=False, versions=False, device=device)
    check(lambda L, a: program(L, a, 0.5), (), grad_fn=False, versions=False, device=device)


def test_quantile_with_nan_and_half_ranks_matches_torch(device):
    a = np.array([[1.0, 4.0, 2.0, 8.0], [3.0, NAN, 0.0, 1.0], [NAN, NAN, NAN, NAN]])
    for interpolation in INTERPOLATIONS:
        check(lambda L, x, i=interpolation: (x.quantile(0.4, dim=1, interpolation=i),
                                             x.nanquantile(0.4, dim=1, interpolation=i)),
              a[:2], grad_fn=False, versions=False, device=device)
        # (which NaN of an all-NaN row gets the gradient is torch's sort's choice)
        check(lambda L, x, i=interpolation: x.nanquantile(0.4, dim=1, interpolation=i), a,
              backward=False, grad_fn=False, versions=False, device=device)
    # nearest rounds half ranks to even, as torch
    check(lambda L, x: x.quantile(L.tensor([0.125, 0.5, 0.75], dtype=L.float64),
                                  interpolation="nearest"),
          np.array([1.0, 2.0, 3.0, 4.0, 5.0]), dtypes=(np.float64,), grad_fn=False,
          versions=False, device=device)


def test_quantile_gradcheck_and_double_backward():
    assert grad_ok(lambda L, a: a.quantile(0.3, dim=1), (3, 5))
    assert grad_ok(lambda L, a: a.nanquantile(0.7), (3, 5))
    check_double_backward(lambda L, a: a.quantile(0.6, dim=0) * a.sum(0), (4, 3))


@pytest.mark.parametrize("program,phrase", [
    (lambda L, a: a.quantile(1.5), "q must be in the range [0, 1] but got 1.5"),
    (lambda L, a: a.quantile(L.tensor([0.5], dtype=L.float32)), "q tensor must be same dtype"),
    (lambda L, a: a.quantile(L.tensor([[0.5]], dtype=L.float64)), "q must be a scalar or 1D tensor"),
    (lambda L, a: a.quantile(L.tensor([-0.5], dtype=L.float64)), "q values must be in the range"),
    (lambda L, a: a.quantile(0.5, interpolation="foo"), "interpolation must be one of"),
    (lambda L, a: a.long().quantile(0.5), "input tensor must be either float or double"),
    (lambda L, a: a[:0].quantile(0.5), "input tensor must be non-empty"),
])
def test_quantile_errors_match_torch(program, phrase, device):
    check_error(program, (4,), device=device, phrase=phrase)


# ---- cov, corrcoef ---------------------------------------------------------------------------
def test_cov_matches_torch(device):
    check(lambda L, a: L.cov(a), (3, 6), device=device)
    check(lambda L, a: a.cov(correction=0), (2, 5), device=device)
    check(lambda L, a: L.cov(a), (6,), device=device)
    check(lambda L, a, w: L.cov(a, fweights=w), (3, 4), ints([1, 2, 0, 3]), device=device)
    check(lambda L, a, w: L.cov(a, aweights=w), (3, 4), np.array([0.5, 1.0, 2.0, 0.25]),
          device=device)
    check(lambda L, a, f, w: L.cov(a, correction=2, fweights=f, aweights=w), (2, 4),
          ints([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 0.25]), device=device)
    check(lambda L, a: L.cov(a), ints([[1, 2, 3], [2, 2, 5]]), dtypes=(None,), device=device)


def test_cov_errors_and_gradcheck(device):
    check_error(lambda L, a: L.cov(a), (2, 2, 2), device=device,
                phrase="expected input to have two or fewer dimensions")
    check_error(lambda L, a, w: L.cov(a, fweights=w), (2, 3), np.array([1.0, 2.0, 3.0]),
                device=device, phrase="to have integral dtype")
    check_error(lambda L, a, w: L.cov(a, fweights=w), (2, 3), ints([1, 2]), device=device,
                phrase="to have the same numel")
    assert grad_ok(lambda L, a, w: L.cov(a, aweights=w), (3, 4), np.array([0.5, 1.0, 2.0, 1.0]))
    check_double_backward(lambda L, a: L.cov(a), (3, 4))


def test_corrcoef_matches_torch(device):
    check(lambda L, a: L.corrcoef(a), (3, 6), device=device)
    check(lambda L, a: a.corrcoef(), (6,), device=device)
    check(lambda L, a: L.corrcoef(a), ints([[1, 2, 3], [2, 2, 5]]), dtypes=(None,), device=device)
    assert grad_ok(lambda L, a: L.corrcoef(a), (2, 5))


# ---- histc, histogram ------------------------------------------------------------------------
def test_histc_matches_torch(device):
    check(lambda L, a: a.histc(), (50,), requires_grad=False, device=device)
    check(lambda L, a: L.histc(a, bins=7, min=-1, max=1), (5, 9), requires_grad=False,
          device=device)
    check(lambda L, a: a.histc(bins=4, min=0, max=3), np.array([0.0, 1.0, 2.0, 3.0, 3.5, -1.0]),
          requires_grad=False, device=device)
    check(lambda L, a: a.histc(bins=3), np.array([2.0, 2.0]), requires_grad=False, device=device)
    check(lambda L, a: a.histc(bins=3), np.zeros(0), requires_grad=False, device=device)


def test_histc_errors_match_torch(device):
    check_error(lambda L, a: a.histc(min=2, max=1), (3,), device=device,
                phrase="max must be larger than min")
    check_error(lambda L, a: a.long().histc(), (3,), device=device, phrase="not implemented for 'Long'")
    check_error(lambda L, a: a.histc(bins=3), np.array([1.0, NAN]), device=device,
                phrase="is not finite")


def test_histogram_matches_torch(device):
    check(lambda L, a: tuple(L.histogram(a, bins=5)), (40,), requires_grad=False, device=device)
    check(lambda L, a: tuple(a.histogram(4, range=(0.0, 3.0))), np.array([1.0, 2.0, 1.0, 3.0, 9.0]),
          requires_grad=False, device=device)
    check(lambda L, a, w: tuple(L.histogram(a, 4, range=(-1.0, 1.0), weight=w, density=True)),
          (3, 5), (3, 5), requires_grad=False, device=device)
    check(lambda L, a, b: tuple(L.histogram(a, bins=b)), (30,), np.array([-2.0, -0.5, 0.0, 1.5]),
          requires_grad=False, device=device)
    check(lambda L, a, b: tuple(L.histogram(a, bins=b, density=True)), (30,),
          np.array([-2.0, -0.5, 0.0, 1.5]), requires_grad=False, device=device)
    check(lambda L, a: tuple(L.histogram(a, bins=2)), np.array([2.0, 2.0]), requires_grad=False,
          device=device)
    check(lambda L, a: tuple(L.histogram(a, bins=2)), np.zeros(0), requires_grad=False,
          device=device)


def test_histogram_result_and_errors():
    r = rustgrad.histogram(rustgrad.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
    assert type(r).__name__ == "histogram" and r.hist is r[0] and r.bin_edges is r[1]
    assert r.hist.tolist() == [0.0, 2.0, 1.0, 0.0]
    check_error(lambda L, a: L.histogram(a.long(), 3), (3,), phrase="not implemented for 'Long'")
    check_error(lambda L, a: L.histogram(a, 3, range=(2.0, 1.0)),
                (3,), phrase="min should not exceed max")


def _dd(r):
    return (r.hist, *r.bin_edges)


def test_histogramdd_matches_torch(device):
    check(lambda L, a: _dd(L.histogramdd(a, bins=[3, 4])), (40, 2), requires_grad=False,
          device=device)
    check(lambda L, a, w: _dd(L.histogramdd(a, bins=2, range=[-1.0, 1.0, -1.0, 1.0, 0.0, 1.0],
                                            weight=w, density=True)),
          (6, 5, 3), (6, 5), requires_grad=False, device=device)
    check(lambda L, a, b, c: _dd(L.histogramdd(a, bins=[b, c])), (30, 2),
          np.array([-2.0, -0.5, 0.0, 1.5]), np.array([-1.0, 1.0]), requires_grad=False,
          device=device)
    check(lambda L, a: _dd(L.histogramdd(a, bins=2)), np.ones((2, 2)), requires_grad=False,
          device=device)
    check(lambda L, a: _dd(L.histogramdd(a, bins=2)), np.zeros((0, 2)), requires_grad=False,
          device=device)


def test_histogramdd_result_and_errors(device):
    pts = rustgrad.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]], device=device)
    r = rustgrad.histogramdd(pts, bins=[2, 2])
    assert type(r).__name__ == "histogramdd" and isinstance(r.bin_edges, tuple)
    assert r.hist.tolist() == [[0.0, 1.0], [2.0, 1.0]]
    check_error(lambda L, a: L.histogramdd(a, bins=[2]), (4, 2), device=device,
                phrase="size of bins must be equal to the innermost dimension")
    check_error(lambda L, a: L.histogramdd(a.long(), bins=2), (4, 2), device=device,
                phrase="\"histogramdd\" not implemented for 'Long'")
    check_error(lambda L, a: L.histogramdd(a, bins=2, range=[0.0, 1.0]), (4, 2), device=device,
                phrase="range should have 4 elements, but got 2")
    check_error(lambda L, a: L.histogramdd(a, bins=2), (3,), device=device,
                phrase="input tensor should have at least 2 dimensions")
    check_error(lambda L, a, w: L.histogramdd(a, bins=2, weight=w), (4, 2), (3,), device=device,
                phrase="excluding its innermost dimension")
    check_error(lambda L, a: L.histogramdd(a, bins=[2, 0]), (4, 2), device=device,
                phrase="bins must be > 0, but got 0 for dimension 1")
    check_error(lambda L, a: L.histogramdd(a, bins=2, range=[1.0, 0.0, 0.0, 1.0]), (4, 2),
                device=device, phrase="min should not exceed max, but got min 1 max 0")
    check_error(lambda L, a: L.histogramdd(a, bins=2, range=[0.0, math.inf, 0.0, 1.0]), (4, 2),
                device=device, phrase="dimension 0's range [0, inf] is not finite")


# ---- trapezoid, trapz, cumulative_trapezoid --------------------------------------------------
@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_family_matches_torch(name, device):
    # (torch's composite multiplies and divides by a Scalar, MulBackward1/DivBackward1, where
    # rustgrad's Python-number operand records MulBackward0/DivBackward0: names not compared)
    def fn(L):
        return getattr(L, name)

    check(lambda L, y: fn(L)(y), (3, 5), grad_fn=False, device=device)
    check(lambda L, y: fn(L)(y, dx=0.5, dim=0), (4, 3), grad_fn=False, device=device)
    check(lambda L, y, x: fn(L)(y, x), (3, 5), np.array([0.0, 0.5, 1.5, 1.75, 3.0]),
          grad_fn=False, device=device)
    check(lambda L, y, x: fn(L)(y, x, dim=0), (4, 2), (4, 2), grad_fn=False, device=device)
    check(lambda L, y: fn(L)(y), ints([[1, 2, 3], [4, 6, 9]]), dtypes=(None,), grad_fn=False, device=device)
    check(lambda L, y: fn(L)(y), (3, 1), grad_fn=False, device=device)


def test_trapezoid_gradcheck_and_errors(device):
    assert grad_ok(lambda L, y, x: L.trapezoid(y, x), (3, 4), np.array([0.0, 1.0, 1.5, 3.0]))
    assert grad_ok(lambda L, y, x: L.cumulative_trapezoid(y, x, dim=0), (3, 2), (3, 2))
    check_error(lambda L, y, x: L.trapezoid(y, x), (4,), (3,), device=device,
                phrase="There must be one `x` value for each sample point")


# ---- gradient --------------------------------------------------------------------------------
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_torch(edge_order, device):
    def grads(L, f, **kw):
        return L.gradient(f, edge_order=edge_order, **kw)

    check(lambda L, f: grads(L, f), (6,), device=device)
    check(lambda L, f: grads(L, f), (4, 5), device=device)
    check(lambda L, f: grads(L, f, spacing=2.0), (4, 5), device=device)
    check(lambda L, f: grads(L, f, spacing=[0.5, 3.0]), (4, 5), device=device)
    check(lambda L, f: grads(L, f, dim=1), (3, 4, 5), device=device)
    check(lambda L, f: grads(L, f, spacing=[1.5, 0.5], dim=[0, -1]), (3, 4, 5), device=device)
    check(lambda L, f, x: grads(L, f, spacing=(x,)), (5,), np.array([0.0, 1.0, 3.0, 4.0, 7.0]),
          device=device)
    check(lambda L, f, x, y: grads(L, f, spacing=(x, y)), (3, 4), np.array([0.0, 0.5, 2.0]),
          np.array([-1.0, 0.0, 2.0, 2.5]), device=device)
    check(lambda L, f: grads(L, f), ints([[1, 2, 4], [2, 5, 9], [0, 0, 1]]), dtypes=(None,),
          device=device)


def test_gradient_gradcheck_and_errors(device):
    assert grad_ok(lambda L, f: L.gradient(f, edge_order=2), (4, 5))
    assert grad_ok(lambda L, f, x: L.gradient(f, spacing=(x,))[0], (5,),
                   np.array([0.0, 1.0, 3.0, 4.0, 7.0]))
    check_error(lambda L, f: L.gradient(f, edge_order=2), (2,), device=device,
                phrase="expected each dimension size to be at least edge_order+1")
    check_error(lambda L, f: L.gradient(f, edge_order=3), (5,), device=device,
                phrase="only supports edge_order=1 and edge_order=2")
