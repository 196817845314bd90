"""REINFORCE: a policy gradient with discounted, normalized returns and an entropy bonus."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, params_of, program, programs_in, seed_params


@program
def reinforce_policy_gradient(torch):
    nn = torch.nn
    F = torch.nn.functional
    policy = seed_params(torch, nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), 112)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    rng = np.random.default_rng(113)
    gamma = 0.9
    returns_log = []
    for _ in range(3):
        states = torch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        logits = policy(states)
        log_probs = F.log_softmax(logits, dim=-1)
        actions = torch.from_numpy(rng.integers(0, 3, 5))  # sampled outside, as a replay would be
        rewards = rng.standard_normal(5).tolist()
        g, returns = 0.0, []
        for r in reversed(rewards):
            g = r + gamma * g
            returns.insert(0, g)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        chosen = log_probs.gather(1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
        loss = -(chosen * returns).sum() - 0.01 * entropy
        opt.zero_grad()
        loss.backward()
        opt.step()
        returns_log.append([loss.item(), entropy.item()])
    return {"log": returns_log, "params": params_of(policy)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
