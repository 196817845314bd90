"""train/eval modes: BatchNorm and Dropout in either mode, frozen parameters, inference mode,
and BatchNorm/GroupNorm/LayerNorm options."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, program, programs_in, seed_params


@program
def eval_train_modes(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.Linear(4, 2))
    seed_params(torch, model, 40)
    x = torch.from_numpy(data((6, 4), 41))
    print(model.training, [m.training for m in model])
    model.eval()
    print(model.training, [m.training for m in model])
    with torch.no_grad():
        e1 = model(x)
        e2 = model(x)
    model.train()
    _ = model(x)  # updates BatchNorm's running statistics
    stats = (model[1].running_mean.clone(), model[1].running_var.clone())
    model.train(False)
    e3 = model(x)

    drop = nn.Dropout(0.25)
    ones = torch.ones(400)
    dropped = drop(ones)
    kept_values = sorted(set(round(v, 4) for v in dropped.tolist()))
    drop.eval()
    identity = torch.equal(drop(ones), ones)

    for p in model[0].parameters():
        p.requires_grad_(False)
    model.train()
    model[2].p = 0.0
    model(x).sum().backward()
    with torch.inference_mode():
        inf = model(x)
    return {"e1": e1, "e2": e2, "same": torch.equal(e1, e2), "stats": list(stats), "e3": e3,
            "e3_req": e3.requires_grad, "kept_values": kept_values, "identity": identity,
            "frozen": [p.grad for p in model[0].parameters()], "head_grad": model[3].weight.grad,
            "inf_req": inf.requires_grad, "tracked": model[1].num_batches_tracked}


@program
def batchnorm_options(torch):
    nn = torch.nn
    x = torch.from_numpy(data((5, 3), 102))
    cumulative = nn.BatchNorm1d(3, momentum=None)
    for i in range(3):
        cumulative(x * (i + 1))
    no_stats = nn.BatchNorm1d(3, track_running_stats=False, affine=False)
    no_stats.eval()
    y = no_stats(x)  # still normalizes with batch statistics
    bn2 = seed_params(torch, nn.BatchNorm2d(2), 103)
    img = torch.from_numpy(data((2, 2, 3, 3), 104)).requires_grad_()
    bn2(img).pow(2).sum().backward()
    gn = seed_params(torch, nn.GroupNorm(2, 4), 105)
    ln = seed_params(torch, nn.LayerNorm([3, 3]), 106)
    feats = torch.from_numpy(data((2, 4, 3, 3), 107))
    return {"cum_mean": cumulative.running_mean, "cum_var": cumulative.running_var,
            "tracked": cumulative.num_batches_tracked, "y": y, "buffers": dict(no_stats.named_buffers()),
            "img_grad": img.grad, "bn_grads": grads_of(bn2), "gn": gn(feats), "ln": ln(feats)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
