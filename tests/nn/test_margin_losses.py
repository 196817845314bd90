"""multi_margin_loss, multilabel_margin_loss, triplet_margin_loss,
triplet_margin_with_distance_loss, and the distances they use (pdist, pairwise_distance,
cosine_similarity) against torch: values, grad_fn names, gradients, double backward, errors and
the loss modules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity

T3 = ints([1, 0, 3])
LABELS = ints([[3, 0, -1, 1], [1, -1, 2, 2], [-1, 0, 0, 0]])

MARGIN = {
    "multi_margin": lambda L, x, t: F(L).multi_margin_loss(x, t),
    "multi_margin_p2": lambda L, x, t: F(L).multi_margin_loss(x, t, p=2, margin=0.7),
    "multi_margin_none": lambda L, x, t: F(L).multi_margin_loss(x, t, reduction="none"),
    "multi_margin_sum": lambda L, x, t: F(L).multi_margin_loss(x, t, 2, reduction="sum"),
    "multi_margin_weight": lambda L, x, t: F(L).multi_margin_loss(
        x, t, weight=L.tensor([0.5, 1.0, 2.0, 0.25], dtype=x.dtype)),
    "multi_margin_weight_p2_none": lambda L, x, t: F(L).multi_margin_loss(
        x, t, p=2, weight=L.tensor([0.5, 1.0, 2.0, 0.25], dtype=x.dtype), reduction="none"),
    "multi_margin_1d": lambda L, x, t: F(L).multi_margin_loss(x[0], t[1], reduction="none"),
    "multi_margin_module": lambda L, x, t: L.nn.MultiMarginLoss(p=2, margin=0.5)(x, t),
}


@pytest.mark.parametrize("op", sorted(MARGIN))
def test_multi_margin_loss_matches_torch(op, device):
    check(MARGIN[op], (3, 4), T3, device=device)


LABEL_PROGRAMS = {
    "mean": lambda L, x, t: F(L).multilabel_margin_loss(x, t),
    "none": lambda L, x, t: F(L).multilabel_margin_loss(x, t, reduction="none"),
    "sum": lambda L, x, t: F(L).multilabel_margin_loss(x, t, reduction="sum"),
    "one_sample": lambda L, x, t: F(L).multilabel_margin_loss(x[0], t[0], reduction="none"),
    "module": lambda L, x, t: L.nn.MultiLabelMarginLoss(reduction="sum")(x, t),
}


@pytest.mark.parametrize("op", sorted(LABEL_PROGRAMS))
def test_multilabel_margin_loss_matches_torch(op, device):
    check(LABEL_PROGRAMS[op], (3, 4), LABELS, device=device)


@pytest.mark.parametrize("program", [MARGIN["multi_margin_p2"], LABEL_PROGRAMS["mean"]])
def test_margin_losses_have_no_double_backward_as_torch(program, device):
    # torch's first-order gradient requires grad, and differentiating it again is refused
    def twice(L, x, t):
        g, = L.autograd.grad(program(L, x, t), x, create_graph=True)
        assert g.requires_grad and g.grad_fn.name() == "torch::autograd::NotImplemented"
        g.sum().backward()

    check_error(twice, (3, 4), ints([1, 0, 3]) if program is MARGIN["multi_margin_p2"] else
                LABELS, device=device, requires_grad=True, phrase="_margin_loss_backward is not "
                                                                  "implemented")


def test_margin_losses_gradcheck():
    assert grad_ok(MARGIN["multi_margin_weight_p2_none"], (3, 4), T3)
    assert grad_ok(LABEL_PROGRAMS["none"], (3, 4), LABELS)


def test_margin_loss_saved_attributes_match_torch():
    def program(lib):
        x = lib.tensor([[0.1, 0.2, 0.4, 0.8]], dtype=lib.float64, requires_grad=True)
        y = F(lib).multi_margin_loss(x, lib.tensor([3]), p=2, margin=0.5, reduction="sum")
        z = F(lib).multilabel_margin_loss(x, lib.tensor([[3, 0, -1, 1]]), reduction="none")
        return (y.grad_fn._saved_p, y.grad_fn._saved_margin, y.grad_fn._saved_reduction,
                y.grad_fn._saved_target, z.grad_fn._saved_is_target, z.grad_fn._saved_reduction)

    parity(program)


def test_margin_loss_errors_match_torch(device):
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t, p=3), (3, 4), T3, device=device,
                phrase="only p == 1 and p == 2 supported")
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t + 3), (3, 4), T3, device=device,
                phrase="target out of range")
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t[:2]), (3, 4), T3, device=device,
                phrase="target tensor should be 1-D with size equal to the number of input "
                       "samples (batch size). Expected target size [3], but got [2]")
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t), (2, 3, 4), ints([1, 0]),
                device=device, phrase="Expected non-empty vector or matrix with optional 0-dim "
                                      "batch size, but got: [2, 3, 4]")
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t, weight=L.ones(3, dtype=x.dtype)),
                (3, 4), T3, device=device, phrase="inconsistent weight size, expected 4 but got [3]")
    check_error(lambda L, x, t: F(L).multi_margin_loss(x, t.to(x.dtype)), (3, 4), T3,
                device=device, phrase="expected scalar type Long but found Double")
    check_error(lambda L, x, t: F(L).multilabel_margin_loss(x, t[:, 0]), (3, 4), LABELS,
                device=device, phrase="inconsistent target size: [3] for input of size: [3, 4]")
    check_error(lambda L, x, t: F(L).multilabel_margin_loss(x, t + 4), (3, 4), LABELS,
                device=device, phrase="argument #2 'target' is out of range")


TRIPLETS = {
    "default": lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n),
    "p1_swap": lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True),
    "none": lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n, margin=1.5, reduction="none"),
    "sum_eps": lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n, eps=0.1, reduction="sum"),
    "unbatched": lambda L, a, p, n: F(L).triplet_margin_loss(a[0], p[0], n[0], margin=3.0),
    "module": lambda L, a, p, n: L.nn.TripletMarginLoss(margin=2.0, swap=True)(a, p, n),
    "with_distance": lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(a, p, n,
                                                                             margin=2.0),
    "with_distance_swap_none": lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda x, y: 1 - F(L).cosine_similarity(x, y), swap=True,
        reduction="none"),
    "with_distance_module": lambda L, a, p, n: L.nn.TripletMarginWithDistanceLoss(
        distance_function=L.nn.PairwiseDistance(p=1), margin=3.0)(a, p, n),
}


@pytest.mark.parametrize("op", sorted(TRIPLETS))
def test_triplet_losses_match_torch(op, device):
    # the none reductions keep the hinge's own node (ClampMinBackward0) as torch's
    check(TRIPLETS[op], (4, 5), (4, 5), (4, 5), device=device,
          grad_fn=op not in ("with_distance_swap_none", "none"))


def test_triplet_losses_double_backward():
    # (torch's second-order gradients hold ZeroTensors it cannot compare: gradcheck instead)
    assert grad_ok(TRIPLETS["p1_swap"], (4, 5), (4, 5), (4, 5))
    assert grad_ok(TRIPLETS["with_distance"], (4, 5), (4, 5), (4, 5))
    a, p, n = (rustgrad.randn(3, 4, dtype=rustgrad.float64, requires_grad=True)
               for _ in range(3))
    assert rustgrad.autograd.gradgradcheck(
        lambda a, p, n: F(rustgrad).triplet_margin_loss(a, p, n, margin=3.0), (a, p, n))


def test_triplet_errors_match_torch(device):
    phrase = "The anchor, positive, and negative tensors are expected to have the same number of "
    check_error(lambda L, a, p, n: F(L).triplet_margin_loss(a, p[0], n), (3, 4), (3, 4), (3, 4),
                device=device, phrase=phrase + "dimensions, but got: anchor 2D, positive 1D")
    check_error(lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(a, p, n[0]), (3, 4),
                (3, 4), (3, 4), device=device, phrase=phrase)
    check_error(lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(a, p, n, margin=0),
                (3, 4), (3, 4), (3, 4), device=device, phrase="margin must be greater than 0")


DISTANCES = {
    "pdist": lambda L, x: F(L).pdist(x),
    "pdist_torch_p1": lambda L, x: L.pdist(x, 1),
    "pdist_p3": lambda L, x: F(L).pdist(x, 3),
    "pdist_p_half": lambda L, x: F(L).pdist(x, 0.5),
    "pdist_inf": lambda L, x: F(L).pdist(x, math.inf),
    "pdist_p0": lambda L, x: F(L).pdist(x, 0),
    "cosine_similarity_torch": lambda L, x: L.cosine_similarity(x, x.flip(0) + 1),
    "cosine_similarity_module": lambda L, x: L.nn.CosineSimilarity(0)(x, x * 2 - 1),
}


@pytest.mark.parametrize("shape", [(4, 3), (1, 3), (0, 3), (5, 0)], ids=str)
@pytest.mark.parametrize("op", sorted(DISTANCES))
def test_distances_match_torch(op, shape, device):
    if shape == (0, 3) and op.startswith("pdist"):
        # torch's pdist backward crashes (a segmentation fault) on zero rows: forward only
        check(DISTANCES[op], shape, device=device, backward=False)
        return
    check(DISTANCES[op], shape, device=device)


def test_pairwise_distance_under_its_torch_name_and_module(device):
    # torch records NormBackward1 (Tensor.norm); rustgrad's norm records its linalg node
    check(lambda L, a, b: (L.pairwise_distance(a, b), L.nn.PairwiseDistance(1, keepdim=True)(a, b)),
          (4, 3), (4, 3), device=device, grad_fn=False)


def test_pdist_duplicate_rows_pass_no_gradient(device):
    rows = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, -1.0]])
    for p in (1.0, 2.0, 3.0, math.inf):
        check(lambda L, x, p=p: F(L).pdist(x, p), rows, device=device)


def test_pdist_double_backward_and_gradcheck(device):
    check_double_backward(DISTANCES["pdist_p3"], (4, 3), device=device)
    check_double_backward(DISTANCES["pdist"], (4, 3), device=device)
    assert grad_ok(DISTANCES["pdist_p3"], (4, 3))
    assert grad_ok(DISTANCES["pdist"], (4, 3))


def test_pdist_errors_match_torch(device):
    check_error(lambda L, x: F(L).pdist(x), (2, 3, 4), device=device,
                phrase="pdist only supports 2D tensors, got: 3D")
    check_error(lambda L, x: F(L).pdist(x, -1), (3, 4), device=device,
                phrase="pdist only supports non-negative p values")
    check_error(lambda L, x: F(L).pdist(x), ints([[1, 2], [3, 4]]), device=device,
                phrase="pdist only supports floating-point dtypes")


@pytest.mark.parametrize("make", [
    lambda nn: nn.MultiMarginLoss(), lambda nn: nn.MultiMarginLoss(2, 0.5, reduction="sum"),
    lambda nn: nn.MultiLabelMarginLoss(), lambda nn: nn.TripletMarginLoss(swap=True),
    lambda nn: nn.TripletMarginWithDistanceLoss(), lambda nn: nn.PairwiseDistance(),
    lambda nn: nn.CosineSimilarity(dim=0),
])
def test_module_reprs_and_state_match_torch(make):
    parity(lambda lib: (repr(make(lib.nn)), list(make(lib.nn).state_dict()),
                        sorted(make(lib.nn)._buffers)))


def test_multi_margin_module_keeps_the_weight_as_a_buffer():
    def program(lib):
        m = lib.nn.MultiMarginLoss(weight=lib.tensor([1.0, 2.0, 3.0]))
        return list(m.state_dict()), m.state_dict()["weight"]

    parity(program)
    for lib in (torch, rustgrad):
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            lib.nn.MultiMarginLoss(p=3)
