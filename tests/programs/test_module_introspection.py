"""What programs print and inspect: printed models, training-log prints of tensors and losses,
and module introspection (named parameters and modules, submodules, containers)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, err, program, programs_in


@program
def printed_models(torch):
    nn = torch.nn
    models = [
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1), nn.Linear(4, 1, bias=False)),
        # (norm layers left out: rustgrad prints torch 2.15's `bias=True`, torch 2.9 does not)
        nn.Sequential(nn.Conv2d(1, 2, 3, stride=2, padding=1), nn.MaxPool2d(2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.GELU()),
        nn.LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.0),
        nn.ModuleDict({"enc": nn.Embedding(5, 2, padding_idx=0), "act": nn.LeakyReLU(0.1)}),
        nn.ConvTranspose2d(2, 1, 3, stride=2, output_padding=1),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.MultiheadAttention(4, 2),
    ]
    for m in models:
        print(m)
    return {"counts": [sum(p.numel() for p in m.parameters()) for m in models]}


@program
def training_log_prints(torch):
    nn = torch.nn
    F = torch.nn.functional
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    w = torch.tensor([[1.0, 0.5], [-0.5, 1.0]], requires_grad=True)
    h = x @ w
    print(h)
    print(F.mse_loss(h, torch.zeros(2, 2)))
    print(F.cross_entropy(h, torch.tensor([0, 1])))
    print(F.binary_cross_entropy_with_logits(h, torch.ones(2, 2)))
    print(F.nll_loss(F.log_softmax(h, 1), torch.tensor([1, 0])))
    print(F.l1_loss(h, torch.ones(2, 2)), F.smooth_l1_loss(h, torch.ones(2, 2)))
    print(h.relu().mean(), h.sigmoid().sum(1), h.tanh().max(), h.softmax(-1).std())
    print(F.gelu(h), F.silu(h).t(), F.dropout(h, 0.5, training=False))
    print(nn.Linear(2, 1)(x).shape, h.norm(), h.abs().amax(dim=0).values if False else h.abs().amax(0))
    print(h.view(-1)[1:], h.reshape(4).unsqueeze(0), h.permute(1, 0).contiguous(), h[:, None].squeeze())
    print(torch.cat([h, h]).sum(0), torch.stack([h, h]).mean(), torch.where(h > 0, h, 0 * h))
    print(f"loss={F.mse_loss(h, x).item():.6f} lr={1e-3:.0e}")
    return {}


@program
def module_introspection(torch):
    nn = torch.nn

    class Expert(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(2))
            self.table = nn.ParameterDict({"a": nn.Parameter(torch.zeros(2)),
                                           "b": nn.Parameter(torch.ones(2))})
            self.layers = nn.ParameterList([nn.Parameter(torch.full((2,), float(i))) for i in range(2)])
            self.register_parameter("unused", None)

        def forward(self, x):
            return x * self.scale + self.table["a"] + sum(self.layers)

    model = nn.Sequential()
    model.add_module("expert", Expert())
    model.append(nn.Linear(2, 2))
    model.extend([nn.ReLU()])
    model.insert(1, nn.Identity())
    info = {
        "named": [n for n, _ in model.named_parameters()],
        "norecurse": [n for n, _ in model.expert.named_parameters(recurse=False)],
        "prefixed": [n for n, _ in model.named_parameters(prefix="net")],
        "children": [type(m).__name__ for m in model.children()],
        "modules": [n for n, _ in model.named_modules()],
        "sub": type(model.get_submodule("expert")).__name__,
        "param": tuple(model.get_parameter("expert.table.b").shape),
        "len": len(model), "slice": [type(m).__name__ for m in model[1:]],
        "missing_attr": err(lambda: model.expert.nope),
        "unused": model.expert.unused,
        "state": list(model.state_dict()),
    }
    del model[1]
    info["after_del"] = [type(m).__name__ for m in model]
    out = model(torch.tensor([[1.0, 2.0]]))
    out.sum().backward()
    model.zero_grad(set_to_none=False)
    info["zeroed"] = [p.grad for p in model.parameters()]
    model.requires_grad_(False)
    info["frozen"] = [p.requires_grad for p in model.parameters()]
    info["double_dtype"] = [str(p.dtype) for p in model.double().parameters()]
    return info


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
