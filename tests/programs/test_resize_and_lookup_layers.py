"""Resizing and lookup layers: Embedding with max_norm, interpolate in every mode, adaptive
pooling, and an LSTM in eval mode."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, program, programs_in, seed_params


@program
def resize_and_lookup_layers(torch):
    nn = torch.nn
    F = torch.nn.functional
    # (scale_grad_by_freq=True raises NotImplementedError in rustgrad)
    emb = seed_params(torch, nn.Embedding(5, 3, max_norm=0.4), 123, 1.0)
    idx = torch.tensor([[0, 2, 2], [4, 0, 1]])
    e = emb(idx)  # renormalizes the looked-up rows in place
    e.sum().backward()
    img = torch.from_numpy(data((1, 2, 5, 7), 124)).requires_grad_()
    outs = {
        "bicubic": F.interpolate(img, size=(8, 9), mode="bicubic", align_corners=False),
        "area": F.interpolate(img, size=(3, 4), mode="area"),
        "nearest_exact": F.interpolate(img, scale_factor=1.5, mode="nearest-exact"),
        "bilinear_ac": F.interpolate(img, scale_factor=(2, 0.5), mode="bilinear", align_corners=True),
        "adaptive": F.adaptive_avg_pool2d(img, (3, 4)),
    }
    sum(o.sum() for o in outs.values()).backward()
    lstm = seed_params(torch, nn.LSTM(3, 3, num_layers=2, dropout=0.5), 125)
    lstm.eval()
    seq, _ = lstm(torch.from_numpy(data((4, 2, 3), 126)))
    return {"emb_weight": emb.weight, "emb_grad": emb.weight.grad, "e": e, "outs": outs,
            "img_grad": img.grad, "seq": seq}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
