"""A contrastive (InfoNCE) loss over two augmented views."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def contrastive_info_nce(torch):
    nn = torch.nn
    F = torch.nn.functional
    encoder = seed_params(torch, nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4)), 80)
    opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
    x = torch.from_numpy(data((6, 5), 81))
    losses = []
    for step in range(3):
        view1 = x + torch.from_numpy(data((6, 5), 90 + step, 0.1))
        view2 = x + torch.from_numpy(data((6, 5), 95 + step, 0.1))
        z = F.normalize(torch.cat([encoder(view1), encoder(view2)]), dim=1)
        sim = z @ z.T / 0.5
        sim = sim.masked_fill(torch.eye(12, dtype=torch.bool), float("-inf"))
        targets = torch.cat([torch.arange(6, 12), torch.arange(0, 6)])
        loss = F.cross_entropy(sim, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(encoder), "topk": sim.topk(2, dim=1).indices}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
