"""Activation checkpointing (utils.checkpoint, use_reentrant=False) gives the plain run's
gradients."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, program, programs_in, seed_params


@program
def activation_checkpointing(torch):
    nn = torch.nn
    cp = torch.utils.checkpoint
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(5, 5), nn.Tanh()) for _ in range(3)])
    seed_params(torch, blocks, 55)
    x = torch.from_numpy(data((4, 5), 56)).requires_grad_()

    def forward(use_cp):
        h = x
        for blk in blocks:
            h = cp.checkpoint(blk, h, use_reentrant=False) if use_cp else blk(h)
        return h.pow(2).sum()

    plain_loss = forward(False)
    plain_loss.backward()
    plain = (grads_of(blocks), x.grad.clone())
    blocks.zero_grad()
    x.grad = None
    ck_loss = forward(True)
    ck_loss.backward()
    return {"plain_loss": plain_loss, "ck_loss": ck_loss, "plain": list(plain),
            "ck": [grads_of(blocks), x.grad]}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
