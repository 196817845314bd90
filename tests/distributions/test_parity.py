"""Every distribution's log_prob, cdf, icdf, entropy, mean, mode, variance and stddev, and their
gradients with respect to every parameter, match torch's on fixed inputs (float64 and float32,
on the CPU and the simulated CUDA device)."""

from __future__ import annotations

import numpy as np
import pytest

from ._cases import CASES
from ._util import backward_both, compare, evaluate


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_values_and_gradients_match_torch(case, dtype, device):
    import rustgrad
    import torch

    tparams, touts = evaluate(torch, case, dtype, device)
    rparams, routs = evaluate(rustgrad, case, dtype, device)
    assert touts.keys() == routs.keys()
    for k in touts:
        if k in ("batch_shape", "event_shape"):
            assert routs[k] == touts[k], f"{k}: {routs[k]} vs {touts[k]}"
            continue
        compare(touts[k], routs[k], f"{case.name}.{k}", dtype, device)
    assert any(not isinstance(v, (str, tuple)) for v in routs.values())
    if backward_both(touts, routs, device, case.no_backward):
        for name in tparams:
            t, r = tparams[name].grad, rparams[name].grad
            assert (t is None) == (r is None), f"grad of {name}: torch {t is not None}, rustgrad {r is not None}"
            if t is not None:
                compare(t, r, f"{case.name}: grad of {name}", dtype, device)


@pytest.mark.parametrize("lib_name", ["torch", "rustgrad"])
def test_gamma_cdf_gradients(lib_name, device):
    # differentiable in the value and the rate; the concentration's derivative is missing, as
    # torch's igamma's
    import importlib

    import numpy as np

    lib = importlib.import_module(lib_name)
    kw = {"device": device} if lib_name == "rustgrad" else {}
    c = lib.tensor([0.5, 3.0], dtype=lib.float64, requires_grad=True, **kw)
    rate = lib.tensor([1.2, 0.7], dtype=lib.float64, requires_grad=True, **kw)
    x = lib.tensor([0.3, 2.0], dtype=lib.float64, requires_grad=True, **kw)
    cdf = lib.distributions.Gamma(c, rate).cdf(x)
    with pytest.raises(NotImplementedError, match="igamma: input"):
        cdf.sum().backward(retain_graph=True)
    cdf = lib.distributions.Gamma(c.detach(), rate).cdf(x)
    cdf.sum().backward()
    # d/dx P(c, r x) = r * Gamma(c, r) density at x
    dens = lib.distributions.Gamma(c.detach(), rate.detach()).log_prob(x.detach()).exp()
    np.testing.assert_allclose(x.grad.cpu().numpy(), dens.cpu().numpy(), rtol=1e-10)
    np.testing.assert_allclose(rate.grad.cpu().numpy(), (dens * x.detach() / rate.detach()).cpu().numpy(),
                               rtol=1e-10)
