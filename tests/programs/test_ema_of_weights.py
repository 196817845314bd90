"""An exponential moving average of a model's weights and buffers."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, program, programs_in, seed_params


@program
def ema_of_weights(torch):
    nn = torch.nn
    def make():
        # no bias before BatchNorm: its gradient is exactly zero, and Adamax would amplify the
        # rounding noise into steps
        return seed_params(torch, nn.Sequential(nn.Linear(3, 3, bias=False), nn.BatchNorm1d(3),
                                                nn.Linear(3, 1)), 75)

    model, ema = make(), make()
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adamax(model.parameters(), lr=0.05)
    decay = 0.8
    x = torch.from_numpy(data((6, 3), 76))
    for _ in range(4):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        with torch.no_grad():
            for e, p in zip(ema.state_dict().values(), model.state_dict().values()):
                if e.dtype.is_floating_point:
                    e.mul_(decay).add_((1 - decay) * p)
                else:
                    e.copy_(p)
    return {"ema": dict(ema.state_dict()), "model": dict(model.state_dict())}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
