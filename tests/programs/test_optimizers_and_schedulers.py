"""Optimizers and schedulers as programs use them: two optimizers over one model with param
groups and LambdaLR, a tour of optimizer options, a hand-written Optimizer subclass, and a tour
of lr schedulers."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, err, params_of, program, programs_in, seed_params


@program
def mixed_optimizers(torch):
    nn = torch.nn
    body = seed_params(torch, nn.Sequential(nn.Linear(4, 6), nn.Tanh()), 30)
    head = seed_params(torch, nn.Linear(6, 2), 31)
    opt_body = torch.optim.NAdam(body.parameters(), lr=1e-2, momentum_decay=4e-3)
    opt_head = torch.optim.RAdam([{"params": [head.weight], "weight_decay": 1e-2},
                                  {"params": [head.bias], "lr": 5e-3}], lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt_head, lr_lambda=lambda epoch: 0.9 ** epoch)
    x = torch.from_numpy(data((8, 4), 32))
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    losses, lrs = [], []
    for _ in range(8):  # RAdam switches to its rectified update after step 5
        opt_body.zero_grad()
        opt_head.zero_grad()
        loss = nn.functional.cross_entropy(head(body(x)), y)
        loss.backward()
        opt_body.step()
        opt_head.step()
        sched.step()
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt_head.param_groups])
    return {"losses": losses, "lrs": lrs, "body": params_of(body), "head": params_of(head),
            "mu_product": float(opt_body.state[body[0].weight]["mu_product"])}


@program
def optimizer_options_tour(torch):
    nn = torch.nn
    x = torch.from_numpy(data((6, 3), 118))
    y = torch.from_numpy(data((6, 2), 119))
    configs = {
        "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True, weight_decay=0.01),
        "adamw_amsgrad": lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True),
        "adam_maximize": lambda p: torch.optim.Adam(p, lr=0.01, maximize=True),
        "sgd_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True,
                                                     weight_decay=0.1),
        "adagrad_decay": lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.1,
                                                       initial_accumulator_value=0.1),
        "rmsprop_centered": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
        "adadelta": lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.8, weight_decay=0.01),
        "adamax": lambda p: torch.optim.Adamax(p, lr=0.05),
        "nadam_decoupled": lambda p: torch.optim.NAdam(p, lr=0.05, weight_decay=0.1,
                                                       decoupled_weight_decay=True),
        "radam_decoupled": lambda p: torch.optim.RAdam(p, lr=0.05, weight_decay=0.1,
                                                       decoupled_weight_decay=True),
    }
    results = {}
    for name, make in configs.items():
        model = seed_params(torch, nn.Linear(3, 2), 120)
        opt = make(model.parameters())
        losses = []
        for _ in range(7):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results[name] = {"losses": losses, "params": params_of(model)}
    return results


@program
def custom_optimizer(torch):
    class SignMomentum(torch.optim.Optimizer):
        """Momentum on the gradient's sign (signSGD with momentum), written as users write one."""

        def __init__(self, params, lr=1e-2, beta=0.9, weight_decay=0.0):
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr}")
            super().__init__(params, dict(lr=lr, beta=beta, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if group["weight_decay"]:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = torch.zeros_like(p)
                    state["step"] += 1
                    buf = state["buf"]
                    buf.mul_(group["beta"]).add_(grad, alpha=1 - group["beta"])
                    p.add_(buf.sign(), alpha=-group["lr"])
            return loss

    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)), 77)
    opt = SignMomentum([{"params": model[0].parameters(), "weight_decay": 0.1},
                        {"params": model[2].parameters()}], lr=0.01)
    bad_lr = err(lambda: SignMomentum(model.parameters(), lr=-1.0))
    x = torch.from_numpy(data((6, 3), 78))
    y = torch.from_numpy(data((6, 1), 79))

    def closure():
        opt.zero_grad()
        loss = nn.functional.l1_loss(model(x), y)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(5)]
    sd = opt.state_dict()
    fresh = SignMomentum(model.parameters(), lr=0.5)
    fresh_groups = len(fresh.param_groups)
    opt2 = SignMomentum([{"params": model[0].parameters(), "weight_decay": 0.1},
                         {"params": model[2].parameters()}], lr=0.01)
    opt2.load_state_dict(sd)
    return {"losses": losses, "params": params_of(model), "bad_lr": bad_lr,
            "groups": [{k: v for k, v in g.items() if k != "params"} for g in sd["param_groups"]],
            "steps": [st["step"] for st in sd["state"].values()], "fresh_groups": fresh_groups,
            "loaded_buf": opt2.state[model[2].bias]["buf"], "repr": repr(opt).splitlines()[0]}


@program
def lr_scheduler_tour(torch):
    def lrs_of(make_sched, steps=8, lr=0.1):
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=lr)
        sched = make_sched(opt)
        out = []
        for _ in range(steps):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out

    S = torch.optim.lr_scheduler
    return {
        "cosine": lrs_of(lambda o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.01)),
        "multistep": lrs_of(lambda o: S.MultiStepLR(o, milestones=[2, 5], gamma=0.3)),
        "warm_restarts": lrs_of(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)),
        "warmup_then_cosine": lrs_of(lambda o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=5)],
            milestones=[3])),
        "onecycle": lrs_of(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10), steps=9),
        "exp": lrs_of(lambda o: S.ExponentialLR(o, gamma=0.8)),
    }


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
