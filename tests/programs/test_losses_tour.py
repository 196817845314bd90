"""A tour of loss functions and their options (reductions, label smoothing, class weights,
ignore_index, pos_weight, ...), and their gradients."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, program, programs_in


@program
def losses_tour(torch):
    F = torch.nn.functional
    logits = torch.from_numpy(data((4, 3), 87)).requires_grad_()
    target = torch.tensor([0, 2, 1, 2])
    soft = torch.softmax(torch.from_numpy(data((4, 3), 88)), dim=1)
    probs_target = (torch.from_numpy(np.random.default_rng(89).random((4, 3))) > 0.5).float()
    reg = torch.from_numpy(data((4, 3), 90))
    losses = {
        "ce_none": F.cross_entropy(logits, target, reduction="none"),
        "ce_smooth": F.cross_entropy(logits, target, label_smoothing=0.2),
        "ce_probs": F.cross_entropy(logits, soft),
        "ce_weight_ignore": F.cross_entropy(logits, torch.tensor([0, -100, 1, 2]),
                                            weight=torch.tensor([1.0, 0.5, 2.0])),
        "bce_logits_pos": F.binary_cross_entropy_with_logits(logits, probs_target,
                                                             pos_weight=torch.tensor([1.0, 2.0, 3.0])),
        "mse_sum": F.mse_loss(logits, reg, reduction="sum"),
        "l1": F.l1_loss(logits, reg),
        "huber": F.huber_loss(logits, reg, delta=0.5),
        "smooth_l1": F.smooth_l1_loss(logits, reg, beta=0.3),
        "kl": F.kl_div(F.log_softmax(logits, 1), soft, reduction="batchmean"),
        "nll": F.nll_loss(F.log_softmax(logits, 1), target),
        "margin": F.margin_ranking_loss(logits[:, 0], logits[:, 1], torch.tensor([1.0, -1.0, 1.0, -1.0])),
        "cos_embed": F.cosine_embedding_loss(logits, reg, torch.tensor([1.0, -1.0, 1.0, -1.0])),
        "gauss": F.gaussian_nll_loss(logits, reg, torch.ones(4, 3) * 0.5),
        "poisson": F.poisson_nll_loss(logits, reg.abs()),
    }
    total = sum(v.sum() for v in losses.values())
    total.backward()
    return {"losses": losses, "grad": logits.grad}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
