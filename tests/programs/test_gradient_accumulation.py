"""Gradient accumulation over micro-batches gives the full batch's gradients."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, params_of, program, programs_in, seed_params


@program
def gradient_accumulation(torch):
    nn = torch.nn
    x = torch.from_numpy(data((12, 5), 19))
    y = torch.from_numpy(data((12, 2), 20))

    def build():
        return seed_params(torch, nn.Sequential(nn.Linear(5, 6), nn.SiLU(), nn.Linear(6, 2)), 21)

    full = build()
    nn.functional.mse_loss(full(x), y).backward()
    full_grads = grads_of(full)

    model = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum = 4
    losses = []
    for i, (xb, yb) in enumerate(zip(x.chunk(accum), y.chunk(accum))):
        loss = nn.functional.mse_loss(model(xb), yb) / accum
        loss.backward()
        losses.append(loss.item())
        if (i + 1) % accum == 0:
            micro_grads = grads_of(model)
            opt.step()
            opt.zero_grad()
    match = all(torch.allclose(full_grads[k], micro_grads[k], atol=1e-6) for k in full_grads)
    return {"full": full_grads, "micro": micro_grads, "match": match, "losses": losses,
            "params": params_of(model), "grad_after_zero": [p.grad for p in model.parameters()]}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
