"""Fine-tuning a frozen backbone (unfrozen later, with ReduceLROnPlateau) and knowledge
distillation from a frozen teacher with mixup."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def finetune_frozen_backbone(torch):
    nn = torch.nn
    backbone = seed_params(torch, nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU()), 47)
    for p in backbone.parameters():
        p.requires_grad = False
    model = nn.Sequential(backbone, nn.Linear(8, 3))
    seed_params(torch, model[1], 48)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(trainable, lr=0.1, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=0)
    x = torch.from_numpy(data((9, 4), 49))
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])
    losses, lrs = [], []
    for epoch in range(6):
        if epoch == 3:  # unfreeze the backbone with a smaller learning rate
            for p in backbone.parameters():
                p.requires_grad_(True)
            opt.add_param_group({"params": list(backbone.parameters()), "lr": 0.01})
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step(loss.item() if epoch % 2 else 10.0)
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt.param_groups])
    counts = [sum(p.numel() for p in m.parameters() if p.requires_grad) for m in (backbone, model)]
    return {"losses": losses, "lrs": lrs, "counts": counts, "params": params_of(model),
            "names": [n for n, _ in model.named_modules()]}


@program
def knowledge_distillation(torch):
    nn = torch.nn
    F = torch.nn.functional
    teacher = seed_params(torch, nn.Sequential(nn.Linear(4, 12), nn.ReLU(), nn.Linear(12, 3)), 114)
    student = seed_params(torch, nn.Sequential(nn.Linear(4, 3)), 115)
    teacher.eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9, dampening=0.1)
    x = torch.from_numpy(data((8, 4), 116))
    y = torch.from_numpy(np.random.default_rng(117).integers(0, 3, 8))
    temp, alpha = 3.0, 0.7
    losses = []
    for step in range(4):
        lam = 0.6 if step % 2 else 1.0  # mixup on every other step
        perm = torch.arange(7, -1, -1)
        mixed = lam * x + (1 - lam) * x[perm]
        with torch.no_grad():
            soft_targets = F.softmax(teacher(mixed) / temp, dim=-1)
        logits = student(mixed)
        distill = F.kl_div(F.log_softmax(logits / temp, -1), soft_targets,
                           reduction="batchmean") * temp ** 2
        hard = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
        loss = alpha * distill + (1 - alpha) * hard
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([distill.item(), hard.item()])
    return {"losses": losses, "student": params_of(student),
            "teacher_grads": [p.grad for p in teacher.parameters()]}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
