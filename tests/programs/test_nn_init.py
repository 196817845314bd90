"""nn.init: gains, constant/eye/dirac, kaiming/xavier/trunc_normal bounds, orthogonal, and
re-initialization through Module.apply."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in


@program
def nn_init(torch):
    nn = torch.nn
    init = nn.init
    w = torch.empty(6, 4)
    gains = [init.calculate_gain(n) for n in ("linear", "relu", "tanh", "sigmoid")]
    gains.append(init.calculate_gain("leaky_relu", 0.2))
    init.constant_(w, 0.3)
    const = w.clone()
    init.eye_(w)
    eye = w.clone()
    conv_w = torch.empty(3, 3, 3, 3)
    init.dirac_(conv_w)
    x = torch.from_numpy(data((1, 3, 5, 5), 39))
    dirac_identity = torch.allclose(nn.functional.conv2d(x, conv_w, padding=1), x)

    torch.manual_seed(0)
    fan_in, fan_out = 4, 6
    bound = gains[1] * (3.0 / fan_in) ** 0.5
    init.kaiming_uniform_(w, nonlinearity="relu")
    kaiming_ok = bool(w.abs().max() <= bound + 1e-6)
    init.xavier_uniform_(w, gain=2.0)
    xavier_ok = bool(w.abs().max() <= 2.0 * (6.0 / (fan_in + fan_out)) ** 0.5 + 1e-6)
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    trunc_ok = bool(w.abs().max() <= 0.5)
    init.orthogonal_(w)
    gram = w.t() @ w
    init.zeros_(w)
    layer = nn.Linear(4, 3)
    with torch.no_grad():
        init.normal_(layer.weight, mean=0.0, std=0.02)
        init.zeros_(layer.bias)

    def reinit(m):
        if isinstance(m, nn.Linear):
            init.ones_(m.weight)
            init.constant_(m.bias, -1.0)

    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)).apply(reinit)
    return {"gains": gains, "const": const, "eye": eye, "dirac": conv_w, "dirac_identity":
            dirac_identity, "kaiming_ok": kaiming_ok, "xavier_ok": xavier_ok, "trunc_ok": trunc_ok,
            "gram": gram, "zeros": w, "bias": layer.bias, "bias_leaf": layer.weight.is_leaf,
            "net": params_of(net), "net_out": net(torch.ones(1, 2))}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
