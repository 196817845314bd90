"""A GAN: generator and discriminator steps with detach, and a WGAN-GP critic's gradient
penalty (autograd.grad with create_graph=True)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, grads_of, params_of, program, programs_in, seed_params


@program
def gan_step(torch):
    nn = torch.nn
    gen = seed_params(torch, nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 3)), 14)
    disc = seed_params(torch, nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)), 15)
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    real = torch.from_numpy(data((6, 3), 16) + 1.0)
    ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
    d_losses, g_losses = [], []
    for step in range(3):
        z = torch.from_numpy(data((6, 2), 100 + step))
        fake = gen(z)
        opt_d.zero_grad()
        d_loss = bce(disc(real), ones) + bce(disc(fake.detach()), zeros)
        d_loss.backward()
        opt_d.step()
        gen_grad_after_d = [p.grad for p in gen.parameters()]
        opt_g.zero_grad()
        g_loss = bce(disc(fake), ones)
        g_loss.backward()
        opt_g.step()
        d_losses.append(d_loss.item())
        g_losses.append(g_loss.item())
    return {"d": d_losses, "g": g_losses, "gen": params_of(gen), "disc": params_of(disc),
            "gen_grad_after_d": gen_grad_after_d}


@program
def gradient_penalty(torch):
    nn = torch.nn
    critic = seed_params(torch, nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)), 33)
    real = torch.from_numpy(data((5, 3), 34))
    fake = torch.from_numpy(data((5, 3), 35))
    alpha = torch.from_numpy(np.random.default_rng(36).random((5, 1)).astype(np.float32))
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(interp)
    (grads,) = torch.autograd.grad(outputs=scores, inputs=interp,
                                   grad_outputs=torch.ones_like(scores), create_graph=True)
    print(grads.requires_grad, grads.grad_fn is not None)
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward()

    # second derivative of a scalar function, twice through autograd.grad
    t = torch.tensor([0.5, -1.0], requires_grad=True)
    f = (t.sin() * t ** 2).sum()
    (d1,) = torch.autograd.grad(f, t, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), t)
    return {"grads": grads.detach(), "penalty": penalty, "loss": loss,
            "critic_grads": grads_of(critic), "d1": d1.detach(), "d2": d2}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
