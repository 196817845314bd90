"""Public-style programs written once against `torch` and run with `import rustgrad as torch`:
a VAE step (reparameterized Normal, Bernoulli likelihood, KL to a standard Normal prior) and a
REINFORCE step (Categorical policy), on the same weights; losses and gradients match torch's.
The VAE's noise is fixed in both libraries so that its rsample path can be compared too."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

RNG = np.random.default_rng(0)
W_ENC = RNG.normal(size=(4, 6)) * 0.5
B_ENC = RNG.normal(size=(4,)) * 0.1
W_DEC = RNG.normal(size=(6, 2)) * 0.5
B_DEC = RNG.normal(size=(6,)) * 0.1
X = (RNG.uniform(size=(5, 6)) > 0.5).astype(np.float64)
EPS = RNG.normal(size=(5, 2))


def vae_step(torch, device="cpu"):
    """One training step of a VAE; returns the loss, its parts and the parameter gradients."""
    nn = torch.nn
    D = torch.distributions

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 4)
            self.dec = nn.Linear(2, 6)

        def forward(self, x):
            mu, logvar = self.enc(x).chunk(2, dim=-1)
            q = D.Normal(mu, (0.5 * logvar).exp())
            z = q.rsample()
            prior = D.Normal(torch.zeros_like(mu), torch.ones_like(mu))
            kl = D.kl_divergence(q, prior).sum(-1)
            likelihood = D.Independent(D.Bernoulli(logits=self.dec(z)), 1)
            rec = -likelihood.log_prob(x)
            return (rec + kl).mean(), rec.mean(), kl.mean()

    model = VAE().double().to(device)
    with torch.no_grad():
        model.enc.weight.copy_(torch.tensor(W_ENC))
        model.enc.bias.copy_(torch.tensor(B_ENC))
        model.dec.weight.copy_(torch.tensor(W_DEC))
        model.dec.bias.copy_(torch.tensor(B_DEC))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss, rec, kl = model(torch.tensor(X, device=device))
    opt.zero_grad()
    loss.backward()
    grads = [p.grad.detach().cpu().numpy().copy() for p in model.parameters()]
    opt.step()
    after = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    return loss.item(), rec.item(), kl.item(), grads, after


def reinforce_step(torch, device="cpu"):
    """One REINFORCE update of a linear Categorical policy with an entropy bonus."""
    nn = torch.nn
    policy = nn.Linear(6, 3).double().to(device)
    with torch.no_grad():
        policy.weight.copy_(torch.tensor(W_ENC[:3] * 2))
        policy.bias.copy_(torch.tensor(B_DEC[:3]))
    states = torch.tensor(X, device=device)
    actions = torch.tensor([0, 2, 1, 1, 0], device=device)
    returns = torch.tensor([1.0, -0.5, 2.0, 0.3, -1.0], dtype=torch.float64, device=device)
    dist = torch.distributions.Categorical(logits=policy(states))
    loss = -(dist.log_prob(actions) * returns).mean() - 0.01 * dist.entropy().mean()
    loss.backward()
    return loss.item(), [p.grad.detach().cpu().numpy() for p in policy.parameters()]


def _fixed_noise(monkeypatch, device):
    """Both libraries' Normal.rsample draw EPS instead of fresh noise."""
    import rustgrad
    import rustgrad.distributions.normal as rn
    import torch
    import torch.distributions.normal as tn

    monkeypatch.setattr(tn, "_standard_normal", lambda shape, dtype, device: torch.tensor(EPS, dtype=dtype))
    monkeypatch.setattr(rn, "_standard_normal",
                        lambda shape, dtype, device: rustgrad.tensor(EPS, dtype=dtype, device=device))


def test_vae_step_matches_torch(monkeypatch, device):
    _fixed_noise(monkeypatch, device)
    expected = vae_step(importlib.import_module("torch"))
    got = vae_step(importlib.import_module("rustgrad"), device)
    np.testing.assert_allclose(got[:3], expected[:3], rtol=1e-10)
    for g, e in zip(got[3], expected[3]):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    for g, e in zip(got[4], expected[4]):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


def test_reinforce_step_matches_torch(device):
    expected = reinforce_step(importlib.import_module("torch"))
    got = reinforce_step(importlib.import_module("rustgrad"), device)
    assert got[0] == pytest.approx(expected[0], rel=1e-12)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-14)


def test_vae_trains_with_fresh_noise():
    # the same program with rustgrad's own noise: the ELBO improves over a few hundred steps
    import rustgrad as torch

    torch.manual_seed(0)
    nn, D = torch.nn, torch.distributions
    enc, dec = nn.Linear(6, 4).double(), nn.Linear(2, 6).double()
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=3e-2)
    x = torch.tensor(X)
    losses = []
    for _ in range(300):
        mu, logvar = enc(x).chunk(2, dim=-1)
        q = D.Normal(mu, (0.5 * logvar).exp())
        z = q.rsample((4,))
        rec = -D.Bernoulli(logits=dec(z)).log_prob(x).sum(-1).mean(0)
        loss = (rec + D.kl_divergence(q, D.Normal(0.0, 1.0)).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) - 0.5, (losses[:3], losses[-3:])


def test_a_prior_built_from_numbers_meets_device_tensors(device):
    import rustgrad
    import rustgrad.distributions as RD

    q = RD.Normal(rustgrad.zeros(3, device=device), rustgrad.ones(3, device=device))
    prior = RD.Normal(0.0, 1.0)
    assert RD.kl_divergence(q, prior).sum().item() == 0.0
    assert prior.log_prob(q.sample()).device == q.loc.device
