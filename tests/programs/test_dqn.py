"""DQN: a policy net against a target net (no_grad targets, soft and hard target updates,
clip_grad_value_)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, params_of, program, programs_in, seed_params


@program
def dqn_target_update(torch):
    nn = torch.nn
    F = torch.nn.functional

    def make():
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))

    policy = seed_params(torch, make(), 17)
    target = make()
    target.load_state_dict(policy.state_dict())
    target.eval()
    opt = torch.optim.RMSprop(policy.parameters(), lr=1e-3)
    gamma, tau = 0.9, 0.1
    rng = np.random.default_rng(18)
    losses = []
    for step in range(4):
        states = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        actions = torch.from_numpy(rng.integers(0, 2, 8))
        rewards = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
        next_states = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        done = torch.from_numpy((rng.random(8) < 0.25).astype(np.float32))
        q = policy(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            best = target(next_states).max(1).values
            expected = rewards + gamma * best * (1 - done)
        loss = F.smooth_l1_loss(q, expected)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(policy.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        with torch.no_grad():
            if step % 2 == 0:
                for tp, p in zip(target.parameters(), policy.parameters()):
                    tp.mul_(1 - tau).add_(p, alpha=tau)
            else:
                for tp, p in zip(target.parameters(), policy.parameters()):
                    tp.copy_(torch.lerp(tp, p, tau))
    with torch.no_grad():
        for tp, p in zip(target.parameters(), policy.parameters()):
            tp.copy_(p)
    same = all(torch.equal(a, b) for a, b in zip(target.parameters(), policy.parameters()))
    return {"losses": losses, "policy": params_of(policy), "target_req": [
        p.requires_grad for p in target.parameters()], "same": same, "expected": expected}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
