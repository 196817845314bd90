"""Programs over the newer parts of torch's surface, each run unchanged under torch and rustgrad:
a VAE written with torch.distributions, an actor-critic with Categorical, per-sample gradients
with torch.func (vmap, grad, functional_call), a spectral-norm GAN, the pruning tutorial's
steps, SWA with AveragedModel/SWALR/update_bn, weight-norm and orthogonal parametrizations,
Gaussian-process regression through torch.linalg, a normalizing flow with
TransformedDistribution, MAML's inner loop with torch.func.grad, and a Newton step with
torch.func.hessian."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def vae_with_distributions(torch):
    nn = torch.nn
    D = torch.distributions

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)
            self.mu = nn.Linear(8, 2)
            self.logvar = nn.Linear(8, 2)
            self.dec = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 6))

        def forward(self, x, eps):
            h = torch.relu(self.enc(x))
            q = D.Independent(D.Normal(self.mu(h), (0.5 * self.logvar(h)).exp()), 1)
            z = q.mean + q.stddev * eps  # the reparameterized draw, with the noise given
            prior = D.Independent(D.Normal(torch.zeros_like(z), torch.ones_like(z)), 1)
            recon = D.Independent(D.Bernoulli(logits=self.dec(z)), 1)
            return -(recon.log_prob(x) - D.kl_divergence(q, prior)).mean(), q

    model = seed_params(torch, VAE(), 301)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.from_numpy((data((16, 6), 302) > 0).astype(np.float32))
    log = []
    for step in range(4):
        eps = torch.from_numpy(data((16, 2), 303 + step))
        loss, q = model(x, eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.append([loss.item(), q.entropy().mean().item(), q.base_dist.scale.mean().item()])
    return {"log": log, "params": params_of(model), "batch_shape": list(q.batch_shape),
            "event_shape": list(q.event_shape)}


@program
def actor_critic_with_categorical(torch):
    nn = torch.nn
    body = seed_params(torch, nn.Sequential(nn.Linear(4, 16), nn.ReLU()), 311)
    actor = seed_params(torch, nn.Linear(16, 3), 312)
    critic = seed_params(torch, nn.Linear(16, 1), 313)
    params = [*body.parameters(), *actor.parameters(), *critic.parameters()]
    opt = torch.optim.RMSprop(params, lr=5e-3)
    rng = np.random.default_rng(314)
    log = []
    for _ in range(4):
        states = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        h = body(states)
        dist = torch.distributions.Categorical(logits=actor(h))
        actions = torch.from_numpy(rng.integers(0, 3, 8))
        returns = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
        values = critic(h).squeeze(-1)
        advantage = returns - values.detach()
        loss = (-(dist.log_prob(actions) * advantage).mean()
                + 0.5 * (returns - values).pow(2).mean() - 0.01 * dist.entropy().mean())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        log.append([loss.item(), dist.probs.max().item()])
    return {"log": log, "actor": params_of(actor)}


@program
def per_sample_gradients_with_vmap(torch):
    functional_call, grad, vmap = torch.func.functional_call, torch.func.grad, torch.func.vmap
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)), 321)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = torch.from_numpy(data((6, 5), 322))
    y = torch.from_numpy(np.random.default_rng(323).integers(0, 2, 6))

    def loss_of(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))

    per_sample = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, x, y)
    # the mean of per-sample gradients is the batch gradient
    model.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    batch = {k: v.grad for k, v in model.named_parameters()}
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample.values()]).sum(0)
    return {"per_sample": per_sample, "batch": batch,
            "mean_matches": [bool(torch.allclose(per_sample[k].mean(0), batch[k], atol=1e-6))
                             for k in batch],
            "norms": norms}


@program
def spectral_norm_gan(torch):
    nn = torch.nn
    sn = nn.utils.parametrizations.spectral_norm
    gen = seed_params(torch, nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 4)), 331)
    disc = nn.Sequential(sn(nn.Linear(4, 8)), nn.LeakyReLU(0.2), sn(nn.Linear(8, 1)))
    seed_params(torch, disc, 332)
    rng = np.random.default_rng(333)
    with torch.no_grad():  # the power iteration's start vectors, the same in both libraries
        for layer in (disc[0], disc[2]):
            p = layer.parametrizations.weight[0]
            p._u.copy_(torch.from_numpy(rng.standard_normal(p._u.shape[0]).astype(np.float32)))
            p._v.copy_(torch.from_numpy(rng.standard_normal(p._v.shape[0]).astype(np.float32)))
    g_opt = torch.optim.Adam(gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
    d_opt = torch.optim.Adam(disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    log = []
    for step in range(3):
        real = torch.from_numpy(data((8, 4), 334 + step))
        noise = torch.from_numpy(data((8, 3), 340 + step))
        fake = gen(noise)
        d_loss = bce(disc(real), torch.ones(8, 1)) + bce(disc(fake.detach()), torch.zeros(8, 1))
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()
        g_loss = bce(disc(fake), torch.ones(8, 1))
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        sigma = torch.linalg.matrix_norm(disc[0].weight, ord=2).item()
        log.append([d_loss.item(), g_loss.item(), sigma])
    return {"log": log, "gen": params_of(gen), "keys": sorted(disc.state_dict().keys())}


@program
def pruning_tutorial(torch):
    nn = torch.nn
    prune = importlib.import_module(torch.__name__ + ".nn.utils.prune")  # import torch.nn.utils.prune
    model = seed_params(torch, nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)), 351)
    prune.l1_unstructured(model[0], name="weight", amount=0.4)
    prune.ln_structured(model[2], name="weight", amount=1, n=2, dim=0)
    prune.l1_unstructured(model[2], name="bias", amount=1)
    names = sorted(n for n, _ in model.named_buffers())
    pruned_before = [prune.is_pruned(model), float((model[0].weight == 0).sum())]
    prune.global_unstructured([(model[0], "weight"), (model[2], "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.from_numpy(data((10, 6), 352))
    y = torch.from_numpy(data((10, 3), 353))
    losses = []
    for _ in range(3):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    sparsity = float((model[0].weight == 0).sum() + (model[2].weight == 0).sum())
    prune.remove(model[0], "weight")
    prune.remove(model[2], "weight")
    return {"buffers": names, "before": pruned_before, "losses": losses, "sparsity": sparsity,
            "keys": sorted(model.state_dict().keys()), "weight": model[0].weight.detach(),
            "hooks": len(model[2]._forward_pre_hooks)}


@program
def swa_tutorial(torch):
    nn = torch.nn
    swa = torch.optim.swa_utils
    model = seed_params(torch, nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(),
                                             nn.Linear(6, 1)), 361)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa_model = swa.AveragedModel(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    swa_scheduler = swa.SWALR(opt, swa_lr=0.02, anneal_epochs=2, anneal_strategy="linear")
    batches = [(torch.from_numpy(data((8, 4), 362 + i)), torch.from_numpy(data((8, 1), 370 + i)))
               for i in range(3)]
    log = []
    for epoch in range(6):
        for x, y in batches:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch >= 3:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        log.append([loss.item(), opt.param_groups[0]["lr"]])
    swa.update_bn([x for x, _ in batches], swa_model)
    swa_model.eval()
    return {"log": log, "n_averaged": swa_model.n_averaged, "swa": params_of(swa_model.module),
            "running_mean": swa_model.module[1].running_mean.clone(),
            "out": swa_model(batches[0][0]).detach()}


@program
def weight_norm_and_orthogonal(torch):
    nn = torch.nn
    P = nn.utils.parametrizations
    layer = seed_params(torch, nn.Linear(5, 4), 381)
    wn = P.weight_norm(layer)
    square = seed_params(torch, nn.Linear(4, 4, bias=False), 382)
    orth = P.orthogonal(square, orthogonal_map="matrix_exp")
    opt = torch.optim.Adam([*wn.parameters(), *orth.parameters()], lr=1e-2)
    x = torch.from_numpy(data((7, 5), 383))
    target = torch.from_numpy(data((7, 4), 384))
    log = []
    for _ in range(4):
        out = orth(torch.tanh(wn(x)))
        loss = (out - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w = orth.weight
        log.append([loss.item(), (w @ w.T - torch.eye(4)).abs().max().item() < 1e-5])
    names = sorted(n for n, _ in wn.named_parameters())
    nn.utils.parametrize.remove_parametrizations(wn, "weight")
    return {"log": log, "names": names, "after": sorted(n for n, _ in wn.named_parameters()),
            "g": wn.weight.detach().norm(dim=1)}


@program
def gaussian_process_regression(torch):
    rng = np.random.default_rng(391)
    x = torch.from_numpy(np.sort(rng.uniform(-3, 3, 12)).astype(np.float64)).unsqueeze(-1)
    y = torch.sin(x).squeeze(-1) + 0.1 * torch.from_numpy(rng.standard_normal(12))
    log_ls = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    log_sf = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    log_sn = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_ls, log_sf, log_sn], lr=0.05)

    def kernel(a, b):
        d2 = torch.cdist(a, b).pow(2)
        return log_sf.exp().pow(2) * torch.exp(-0.5 * d2 / log_ls.exp().pow(2))

    log = []
    for _ in range(5):
        K = kernel(x, x) + (log_sn.exp().pow(2) + 1e-6) * torch.eye(12, dtype=torch.float64)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
        nll = 0.5 * (y.unsqueeze(-1) * alpha).sum() + torch.log(torch.diagonal(L)).sum()
        opt.zero_grad()
        nll.backward()
        opt.step()
        sign, logdet = torch.linalg.slogdet(K)
        log.append([nll.item(), logdet.item(), sign.item()])
    xs = torch.linspace(-3, 3, 5, dtype=torch.float64).unsqueeze(-1)
    with torch.no_grad():
        K = kernel(x, x) + (log_sn.exp().pow(2) + 1e-6) * torch.eye(12, dtype=torch.float64)
        mean = kernel(xs, x) @ torch.linalg.solve(K, y)
        v = torch.linalg.solve_triangular(torch.linalg.cholesky(K), kernel(x, xs), upper=False)
        var = torch.diagonal(kernel(xs, xs)) - (v * v).sum(0)
    return {"log": log, "mean": mean, "var": var,
            "hyper": [log_ls.item(), log_sf.item(), log_sn.item()]}


@program
def normalizing_flow(torch):
    D = torch.distributions
    T = D.transforms
    nn = torch.nn
    shift = nn.Parameter(torch.zeros(2))
    log_scale = nn.Parameter(torch.zeros(2))
    opt = torch.optim.Adam([shift, log_scale], lr=0.05)
    samples = torch.from_numpy(data((64, 2), 401) * np.array([0.5, 2.0], dtype=np.float32) + 1.0)
    log = []
    for _ in range(5):
        base = D.Independent(D.Normal(torch.zeros(2), torch.ones(2)), 1)
        flow = D.TransformedDistribution(base, [T.AffineTransform(shift, log_scale.exp()),
                                                T.TanhTransform(cache_size=1),
                                                T.AffineTransform(0.0, 4.0)])
        inside = samples.clamp(-3.9, 3.9)
        loss = -flow.log_prob(inside).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.append(loss.item())
    sigmoid = D.TransformedDistribution(D.Normal(0.0, 1.0), [T.SigmoidTransform()])
    return {"log": log, "shift": shift.detach(), "scale": log_scale.exp().detach(),
            "sigmoid_lp": sigmoid.log_prob(torch.tensor([0.2, 0.5, 0.9])),
            "event": list(flow.event_shape)}


@program
def maml_inner_loop_with_func_grad(torch):
    functional_call, grad = torch.func.functional_call, torch.func.grad
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)), 411)
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(412)
    log = []
    for _ in range(3):
        meta_loss = 0.0
        for _task in range(2):
            amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, 3)
            xs = torch.from_numpy(rng.uniform(-3, 3, (10, 1)).astype(np.float32))
            ys = amp * torch.sin(xs + phase)
            params = dict(model.named_parameters())

            def loss_fn(p, x, y):
                return nn.functional.mse_loss(functional_call(model, p, (x,)), y)

            for _step in range(2):  # differentiable inner steps
                g = grad(loss_fn)(params, xs[:5], ys[:5])
                params = {k: params[k] - 0.1 * g[k] for k in params}
            meta_loss = meta_loss + loss_fn(params, xs[5:], ys[5:])
        meta_opt.zero_grad()
        meta_loss.backward()
        meta_opt.step()
        log.append(meta_loss.item())
    return {"log": log, "params": params_of(model)}


@program
def newton_step_with_hessian(torch):
    hessian, jacrev = torch.func.hessian, torch.func.jacrev
    A = torch.from_numpy(data((4, 4), 421)).double()
    Q = A @ A.T + 4 * torch.eye(4, dtype=torch.float64)
    b = torch.from_numpy(data((4,), 422)).double()

    def f(w):
        return 0.5 * w @ Q @ w - b @ w + 0.1 * torch.log(torch.cosh(w)).sum()

    w = torch.zeros(4, dtype=torch.float64)
    log = []
    for _ in range(3):
        g = jacrev(f)(w)
        H = hessian(f)(w)
        w = w - torch.linalg.solve(H, g)
        log.append([f(w).item(), g.norm().item()])
    return {"log": log, "w": w, "H": H}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
