"""Second-order research code: jacobian/hessian/vjp/jvp/hvp, MAML's fast weights through
autograd.grad(create_graph=True), and a physics-informed net's second derivatives."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def jacobian_hessian(torch):
    F = torch.autograd.functional

    def f(x):
        return torch.stack([x[0] * x[1], x[1].exp(), (x ** 2).sum()])

    def g(a, b):
        return a @ b

    def scalar(x):
        return (x ** 3).sum() + x[0] * x[1]

    x = torch.tensor([1.0, 2.0])
    a = torch.from_numpy(data((2, 3), 37))
    b = torch.from_numpy(data((3,), 38))
    jac = F.jacobian(f, x)
    jac_ab = F.jacobian(g, (a, b))
    hess = F.hessian(scalar, x)
    jac_graph = F.jacobian(f, x.clone().requires_grad_(), create_graph=True)
    out, vjp = F.vjp(f, x, torch.tensor([1.0, 0.0, 1.0]))
    _, jvp = F.jvp(f, x, torch.tensor([0.0, 1.0]))
    _, hvp = F.hvp(scalar, x, torch.tensor([1.0, 1.0]))
    return {"jac": jac, "jac_ab": list(jac_ab), "hess": hess, "jac_graph_req": jac_graph.requires_grad,
            "vjp": vjp, "out": out, "jvp": jvp, "hvp": hvp}


@program
def maml_fast_weights(torch):
    F = torch.nn.functional
    rng = np.random.default_rng(110)
    w1 = torch.from_numpy(rng.uniform(-0.5, 0.5, (8, 1)).astype(np.float32)).requires_grad_()
    b1 = torch.zeros(8, requires_grad=True)
    w2 = torch.from_numpy(rng.uniform(-0.5, 0.5, (1, 8)).astype(np.float32)).requires_grad_()
    b2 = torch.zeros(1, requires_grad=True)
    meta = [w1, b1, w2, b2]
    meta_opt = torch.optim.Adam(meta, lr=0.01)

    def net(x, params):
        a, b, c, d = params
        return F.linear(torch.tanh(F.linear(x, a, b)), c, d)

    meta_losses = []
    for it in range(3):
        meta_opt.zero_grad()
        total = 0.0
        for task in range(2):
            amp, phase = 1.0 + task, 0.5 * it
            xs = torch.from_numpy(rng.uniform(-2, 2, (5, 1)).astype(np.float32))
            xq = torch.from_numpy(rng.uniform(-2, 2, (5, 1)).astype(np.float32))
            ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
            grads = torch.autograd.grad(F.mse_loss(net(xs, meta), ys), meta, create_graph=True)
            fast = [p - 0.1 * g for p, g in zip(meta, grads)]
            query = F.mse_loss(net(xq, fast), yq)
            query.backward()
            total += query.item()
        meta_opt.step()
        meta_losses.append(total)
    return {"losses": meta_losses, "meta": [p.detach() for p in meta]}


@program
def physics_informed_net(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(1, 10), nn.Tanh(), nn.Linear(10, 10),
                                             nn.Tanh(), nn.Linear(10, 1)), 111, scale=0.8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    t = torch.linspace(0, 1, 12).reshape(-1, 1).requires_grad_(True)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        u = model(t)
        du = torch.autograd.grad(u, t, torch.ones_like(u), create_graph=True)[0]
        d2u = torch.autograd.grad(du, t, torch.ones_like(du), create_graph=True)[0]
        residual = d2u + (2 * 3.14159) ** 2 * u  # harmonic oscillator u'' = -w^2 u
        t0 = torch.zeros(1, 1, requires_grad=True)
        u0 = model(t0)
        du0 = torch.autograd.grad(u0, t0, torch.ones_like(u0), create_graph=True)[0]
        loss = residual.pow(2).mean() * 1e-3 + (u0 - 1).pow(2).sum() + du0.pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model), "d2u": d2u.detach()}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
