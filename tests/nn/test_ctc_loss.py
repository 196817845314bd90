"""ctc_loss and nn.CTCLoss against torch: values, grad_fn names, torch's gradient of the log
probabilities (reductions, zero_infinity, lengths past the targets), gradcheck through a
log_softmax, the refused double backward, saved attributes and errors."""

from __future__ import annotations

import numpy as np
import pytest

from ..parity import F, check, check_error, grad_ok, ints, parity

T, N, C = 8, 3, 5
PADDED = ints([[1, 2, 2, 4], [3, 1, 0, 0], [2, 2, 2, 0]])
CONCAT = ints([1, 2, 2, 4, 3, 1, 2, 2, 2])
IL, TL = (8, 6, 5), (4, 2, 3)


def _ctc(**kw):
    return lambda L, x, t: F(L).ctc_loss(x.log_softmax(2), t, IL, TL, **kw)


PROGRAMS = {
    "mean": _ctc(),
    "none": _ctc(reduction="none"),
    "sum": _ctc(reduction="sum"),
    "blank_last": _ctc(blank=4, reduction="none"),
    "zero_infinity_mean": _ctc(zero_infinity=True),
    # the first sample cannot emit its 4 labels in 3 steps: an infinite loss
    "infinite_zeroed": lambda L, x, t: F(L).ctc_loss(x.log_softmax(2), t, (3, 6, 5), TL,
                                                     reduction="sum", zero_infinity=True),
    "tensor_lengths": lambda L, x, t: F(L).ctc_loss(x.log_softmax(2), t, L.tensor(IL),
                                                    L.tensor(TL, dtype=L.int32),
                                                    reduction="none"),
    "empty_target": lambda L, x, t: F(L).ctc_loss(x.log_softmax(2), t, (8, 6, 5), (4, 0, 3),
                                                  reduction="none"),
    # torch's gradient of the log probabilities themselves (not through a log_softmax)
    "raw_log_probs": lambda L, x, t: F(L).ctc_loss(x, t, IL, TL, reduction="none"),
    "module": lambda L, x, t: L.nn.CTCLoss(blank=0, reduction="sum")(x.log_softmax(2), t, IL,
                                                                      TL),
    "module_mean": lambda L, x, t: L.nn.CTCLoss(zero_infinity=True)(x.log_softmax(2), t, IL, TL),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ctc_loss_padded_targets_match_torch(name, device):
    check(PROGRAMS[name], (T, N, C), PADDED, device=device)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_concatenated_targets_match_torch(reduction, device):
    check(lambda L, x, t: F(L).ctc_loss(x.log_softmax(2), t, IL, TL, reduction=reduction),
          (T, N, C), CONCAT, device=device)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_ctc_loss_unbatched_matches_torch(reduction, device):
    check(lambda L, x, t: F(L).ctc_loss(x.log_softmax(1), t, (7,), (3,), reduction=reduction),
          (T, C), ints([3, 3, 1]), device=device)
    check(lambda L, x, t: F(L).ctc_loss(x.log_softmax(1), t, L.tensor(6), L.tensor(2),
                                        reduction=reduction), (T, C), ints([1, 2]),
          device=device)


def test_ctc_loss_infinite_loss_without_zero_infinity_matches_torch():
    # the loss is inf and torch's gradient NaN for the impossible sample
    def program(lib):
        x = lib.tensor(np.linspace(-1, 1, 4 * 2 * 3).reshape(4, 2, 3), requires_grad=True)
        loss = F(lib).ctc_loss(x.log_softmax(2), lib.tensor([[1, 1, 1], [2, 1, 0]]), (2, 4),
                               (3, 2), reduction="none")
        loss.sum().backward()
        return loss, x.grad

    parity(program)


def test_ctc_loss_gradcheck():
    # (not blank_last: where a label is the blank, torch's gradient is not the derivative)
    for name in ("none", "mean", "sum", "empty_target", "zero_infinity_mean"):
        assert grad_ok(PROGRAMS[name], (T, N, C), PADDED)


def test_ctc_loss_has_no_double_backward_as_torch(device):
    def twice(L, x, t):
        lp = x.log_softmax(2)
        g, = L.autograd.grad(F(L).ctc_loss(lp, t, IL, TL), lp, create_graph=True)
        assert g.requires_grad and g.grad_fn.name() == "torch::autograd::NotImplemented"
        g.sum().backward()

    check_error(twice, (T, N, C), PADDED, device=device, requires_grad=True,
                phrase="derivative for aten::_ctc_loss_backward is not implemented")


def test_ctc_loss_saved_attributes_match_torch():
    def program(lib):
        x = lib.tensor(np.linspace(-1, 1, 4 * 2 * 3).reshape(4, 2, 3), requires_grad=True)
        loss = F(lib).ctc_loss(x, lib.tensor([[1, 2], [2, 0]]), (4, 3), (2, 1), blank=0,
                               reduction="none")
        fn = loss.grad_fn
        return (fn._saved_input_lengths, fn._saved_target_lengths, fn._saved_blank,
                fn._saved_zero_infinity, fn._saved_result0, fn._saved_targets,
                fn._saved_log_probs)

    parity(program)


def test_ctc_loss_errors_match_torch(device):
    lp = (T, N, C)
    cases = [
        (lambda L, x, t: F(L).ctc_loss(x, t, (9, 6, 5), TL), "Expected input_lengths to have "
                                                             "value at most 8, but got value 9"),
        (lambda L, x, t: F(L).ctc_loss(x, t, (8, -1, 5), TL), "Expected input_lengths to have "
                                                              "value at least 0, but got value -1"),
        (lambda L, x, t: F(L).ctc_loss(x, t, (8, 6), TL), "input_lengths must be of size "
                                                          "batch_size"),
        (lambda L, x, t: F(L).ctc_loss(x, t, IL, (4, 2, 3, 1)), "target_lengths must be of size "
                                                                "batch_size"),
        (lambda L, x, t: F(L).ctc_loss(x, t, IL, (5, 2, 3)), "Expected tensor to have size at "
                                                             "least 5 at dimension 1, but got "
                                                             "size 4 for argument #2 'targets'"),
        (lambda L, x, t: F(L).ctc_loss(x, t, IL, (4, -2, 3)), "Expected target_lengths to have "
                                                              "value at least 0, but got value -2"),
        (lambda L, x, t: F(L).ctc_loss(x, t, IL, TL, blank=5), "blank must be in label range"),
        (lambda L, x, t: F(L).ctc_loss(x, t.reshape(-1)[:8], IL, TL),
         "Expected tensor to have size 9 at dimension 0, but got size 8 for argument #2 "
         "'targets'"),
        (lambda L, x, t: F(L).ctc_loss(x, t[:2], IL, TL), "Expected tensor to have size 3 at "
                                                          "dimension 0, but got size 2"),
        (lambda L, x, t: F(L).ctc_loss(x, t[None], IL, TL), "Expected 1 to 2 dimensions, but got "
                                                            "3-dimensional tensor for argument "
                                                            "#2 'targets'"),
        (lambda L, x, t: F(L).ctc_loss(x[0, 0], t, IL, TL), "Expected 3-dimensional tensor, but "
                                                            "got 2-dimensional tensor for "
                                                            "argument #1 'log_probs'"),
        (lambda L, x, t: F(L).ctc_loss(x, t, L.tensor([8.0, 6.0, 5.0]), L.tensor(TL)),
         "input_lengths must be integral"),
        (lambda L, x, t: F(L).ctc_loss(x, t, L.tensor(IL), TL),
         "ctc_loss() received an invalid combination of arguments"),
        (lambda L, x, t: F(L).ctc_loss(x[:, 0], t[0], 8, 4),
         "ctc_loss() received an invalid combination of arguments"),
        (lambda L, x, t: F(L).ctc_loss(x, t, IL, TL, reduction="avg"),
         "avg is not a valid value for reduction"),
        (lambda L, x, t: F(L).ctc_loss(x.half(), t, IL, TL),
         "\"ctc_loss_cpu\" not implemented for 'Half'"),
    ]
    for program, phrase in cases:
        check_error(program, lp, PADDED, device=device, phrase=phrase)
