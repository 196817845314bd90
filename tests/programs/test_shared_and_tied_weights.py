"""Shared and tied weights: an embedding tied to the output layer, one module used twice."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, grads_of, params_of, program, programs_in, seed_params


@program
def shared_and_tied_weights(torch):
    nn = torch.nn

    class TiedLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(6, 4)
            self.mix = nn.Linear(4, 4)
            self.head = nn.Linear(4, 6, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, idx):
            h = self.embed(idx)
            h = torch.tanh(self.mix(torch.tanh(self.mix(h))))  # one module used twice
            return self.head(h)

    model = seed_params(torch, TiedLM(), 57)
    names = [n for n, _ in model.named_parameters()]
    idx = torch.tensor([[1, 2, 3], [4, 5, 0]])
    target = torch.tensor([[2, 3, 4], [5, 0, 1]])
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(idx).flatten(0, 1), target.flatten())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"names": names, "tied": model.head.weight is model.embed.weight,
            "n_state": len(model.state_dict()), "losses": losses, "params": params_of(model),
            "grads": grads_of(model)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
