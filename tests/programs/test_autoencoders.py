"""Autoencoders: a convolutional autoencoder with transposed convolutions and upsampling, and a
VAE with the reparameterization trick and a KL term."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def conv_autoencoder(torch):
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
        nn.Upsample(scale_factor=2, mode="nearest"),
        nn.Conv2d(4, 1, 3, padding=1), nn.Sigmoid())
    seed_params(torch, model, 25)
    up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    images = torch.from_numpy(np.abs(data((3, 1, 8, 8), 26)).clip(0, 1))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        recon = model(images)
        loss = nn.functional.binary_cross_entropy(recon, images)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    small = torch.from_numpy(data((1, 2, 3, 3), 27)).requires_grad_()
    big = up_bilinear(small)
    big.sum().backward()
    return {"losses": losses, "shape": tuple(recon.shape), "params": params_of(model),
            "big": big, "small_grad": small.grad}


@program
def vae(torch):
    nn = torch.nn
    F = torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)
            self.mu = nn.Linear(8, 2)
            self.logvar = nn.Linear(8, 2)
            self.dec = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 6))

        def forward(self, x, eps):
            h = F.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + eps * torch.exp(0.5 * logvar)
            return torch.sigmoid(self.dec(z)), mu, logvar

    model = seed_params(torch, VAE(), 51)
    x = torch.from_numpy((np.random.default_rng(52).random((5, 6)) > 0.5).astype(np.float32))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(4):
        eps = torch.from_numpy(data((5, 2), 60 + step))
        recon, mu, logvar = model(x, eps)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / x.shape[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([bce.item(), kld.item()])
    kl_div = F.kl_div(F.log_softmax(mu, -1), F.softmax(logvar, -1), reduction="batchmean")
    return {"losses": losses, "params": params_of(model), "kl_div": kl_div}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
