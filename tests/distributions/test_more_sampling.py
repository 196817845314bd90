"""Samples of the later distributions: their moments and quantiles against the analytic ones
(seeded; each check within K standard errors, so a correct sampler fails with probability
< 1e-8 per check), and rsample's reparameterized gradients: exactly torch's for the same noise
where the draw is an explicit function of uniform or normal noise, against finite differences
with common random numbers where it goes through Gamma draws."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._cases import SPD
from ._util import compare
from .test_sampling import K, _mean_ok, _np, _quantiles_ok, _t, _var_ok

N = 20000


MOMENT_CASES = [
    ("ContinuousBernoulli", lambda d: RD.ContinuousBernoulli(_t([0.2, 0.5, 0.9], d))),
    ("FisherSnedecor", lambda d: RD.FisherSnedecor(_t([4.0, 10.0], d), _t([12.0, 30.0], d))),
    ("GeneralizedPareto", lambda d: RD.GeneralizedPareto(_t([0.1, -1.0], d), _t([2.0, 0.5], d), _t([0.1, -0.3], d))),
    ("InverseGamma", lambda d: RD.InverseGamma(_t([5.0, 10.0], d), _t([1.2, 0.7], d))),
    ("Kumaraswamy", lambda d: RD.Kumaraswamy(_t([0.5, 3.0], d), _t([1.2, 2.0], d))),
    ("Multinomial", lambda d: RD.Multinomial(5, _t([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], d))),
    ("NegativeBinomial", lambda d: RD.NegativeBinomial(_t([3.0, 0.5], d), _t([0.3, 0.6], d))),
    ("Weibull", lambda d: RD.Weibull(_t([1.2, 0.7], d), _t([1.5, 3.0], d))),
    ("Wishart", lambda d: RD.Wishart(_t(5.0, d), _t(SPD, d))),
]


@pytest.mark.parametrize("name,make", MOMENT_CASES, ids=[n for n, _ in MOMENT_CASES])
def test_sample_moments(name, make, device):
    rustgrad.manual_seed(1234)
    d = make(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Wishart's "Singular sample detected", as torch's
        x = _np(d.sample((N,)))
    assert x.shape == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    _mean_ok(x, _np(d.mean), name)
    _var_ok(x, _np(d.variance), name)
    if name in ("Multinomial", "NegativeBinomial"):
        assert np.all(x == np.round(x)) and np.all(x >= 0)
    if name == "Multinomial":
        assert np.all(x.sum(-1) == 5)


@pytest.mark.parametrize("name,make", [
    ("ContinuousBernoulli", lambda d: RD.ContinuousBernoulli(_t([0.2, 0.5, 0.9], d))),
    ("GeneralizedPareto", lambda d: RD.GeneralizedPareto(_t([0.1, -1.0, 0.0], d), _t([2.0, 0.5, 1.0], d),
                                                         _t([0.8, -0.3, 0.0], d))),
    ("Kumaraswamy", lambda d: RD.Kumaraswamy(_t([0.5, 3.0], d), _t([1.2, 2.0], d))),
    ("Weibull", lambda d: RD.Weibull(_t([1.2, 0.7], d), _t([0.5, 3.0], d))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_sample_quantiles(name, make, device):
    rustgrad.manual_seed(99)
    d = make(device)
    x = _np(d.sample((N,)))
    pts = [(_np(d.icdf(_t(np.full(tuple(d.batch_shape), p), device))), p) for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    _quantiles_ok(x, pts, name)


def test_negative_binomial_frequencies_match_the_pmf(device):
    rustgrad.manual_seed(5)
    d = RD.NegativeBinomial(_t([3.0, 0.5, 20.0], device), logits=_t([-0.5, 1.0, 0.2], device))
    x = _np(d.sample((N,)))
    for k in range(0, 12):
        freq = (x == k).mean(0)
        p = np.exp(_np(d.log_prob(_t(np.full(3, float(k)), device))))
        se = np.sqrt(p * (1 - p) / N)
        assert np.all(np.abs(freq - p) <= K * se + 5 / N), f"P({k}) {freq} vs {p}"


def test_von_mises_samples(device):
    rustgrad.manual_seed(7)
    loc = _t([0.5, -3.0, 2.0, 0.0], device)
    conc = _t([1.2, 5.0, 0.01, 200.0], device)
    d = RD.VonMises(loc, conc)
    x = _np(d.sample((N,)))
    assert np.all((x >= -math.pi) & (x < math.pi))
    # E[cos(X - loc)] = I1 / I0 = 1 - the circular variance, E[sin(X - loc)] = 0
    c, s = np.cos(x - _np(loc)), np.sin(x - _np(loc))
    _mean_ok(c, 1 - _np(d.variance), "VonMises cos")
    _mean_ok(s, np.zeros(4), "VonMises sin")
    f32 = RD.VonMises(rustgrad.tensor([0.5], device=device), rustgrad.tensor([1e-4], device=device)).sample((5,))
    assert f32.dtype == rustgrad.float32 and not f32.requires_grad


def test_lkj_cholesky_samples(device):
    rustgrad.manual_seed(3)
    torch.manual_seed(3)
    eta = [0.5, 1.0, 4.0]
    d = RD.LKJCholesky(3, _t(eta, device))
    low = d.sample((N,))
    assert bool(d.support.check(low).all())
    corr = _np(low @ low.mT)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    # the first correlation of an LKJ(eta) matrix of size 3 is 2 B - 1 with B ~ Beta(b, b),
    # b = eta + 1/2: mean 0, variance 1 / (2 eta + 2)
    _mean_ok(corr[..., 1, 0], np.zeros(3), "LKJ")
    _var_ok(corr[..., 1, 0], 1 / (2 * np.asarray(eta) + 2), "LKJ")
    # every correlation's mean and variance as those of torch's sampler (the same onion method),
    # within K standard errors of the difference of two samples
    tl = TD.LKJCholesky(3, torch.tensor(eta, dtype=torch.float64)).sample((N,))
    tcorr = (tl @ tl.mT).numpy()
    for i, j in ((1, 0), (2, 0), (2, 1)):
        for f in (lambda v: v, lambda v: v * v):
            a, b = f(corr[..., i, j]), f(tcorr[..., i, j])
            se = np.sqrt(a.var(0) / N + b.var(0) / N)
            assert np.all(np.abs(a.mean(0) - b.mean(0)) <= K * se), (i, j, a.mean(0), b.mean(0))


def test_logistic_normal_samples_are_stick_broken_normals(device):
    rustgrad.manual_seed(8)
    loc, scale = _t([[0.5, -1.0], [0.0, 2.0]], device), _t([1.0, 0.3], device)
    d = RD.LogisticNormal(loc, scale)
    x = d.sample((N,))
    np.testing.assert_allclose(_np(x.sum(-1)), 1.0, rtol=1e-12)
    z = _np(RD.transforms.StickBreakingTransform().inv(x))
    _mean_ok(z, _np(loc), "LogisticNormal")
    _var_ok(z, _np(scale.expand(2, 2)) ** 2, "LogisticNormal")


def test_multinomial_category_frequencies(device):
    rustgrad.manual_seed(2)
    probs = _t([0.1, 0.2, 0.3, 0.4], device)
    x = _np(RD.Multinomial(1, probs).sample((N,)))
    assert np.all(x.sum(-1) == 1)
    p = _np(probs)
    np.testing.assert_allclose(x.mean(0), p, atol=K * np.sqrt(p * (1 - p) / N).max())


# ---- reparameterized gradients ----------------------------------------------------------------
def _noise_then_torch(name):
    """(params, rustgrad maker, a function (torch params, noise) -> torch's draw, noise kind)."""
    def kumaraswamy(tp, u):
        d = TD.Kumaraswamy(*tp)
        for t in d.transforms:
            u = t(u)
        return u

    def weibull(tp, u):
        d = TD.Weibull(*tp)
        x = -(-u).log1p()
        for t in d.transforms:
            x = t(x)
        return x

    return {
        "ContinuousBernoulli": ([[0.2, 0.4996, 0.9]], lambda p: RD.ContinuousBernoulli(*p),
                                lambda tp, u: TD.ContinuousBernoulli(*tp).icdf(u), "rand"),
        "ContinuousBernoulli-logits": ([[0.3, -2.0]], lambda p: RD.ContinuousBernoulli(logits=p[0]),
                                       lambda tp, u: TD.ContinuousBernoulli(logits=tp[0]).icdf(u), "rand"),
        "GeneralizedPareto": ([[0.1, -1.0, 0.0], [2.0, 0.5, 1.0], [0.4, -0.3, 0.0]],
                              lambda p: RD.GeneralizedPareto(*p),
                              lambda tp, u: TD.GeneralizedPareto(*tp).icdf(u), "rand"),
        "Kumaraswamy": ([[0.5, 3.0], [1.2, 2.0]], lambda p: RD.Kumaraswamy(*p), kumaraswamy, "rand"),
        "Weibull": ([[1.2, 0.7], [0.5, 3.0]], lambda p: RD.Weibull(*p), weibull, "rand"),
        "LogisticNormal": ([[0.5, -1.0, 0.2], [1.0, 2.0, 0.5]], lambda p: RD.LogisticNormal(*p),
                           lambda tp, e: TD.transforms.StickBreakingTransform()(tp[0] + e * tp[1]), "randn"),
    }[name]


EXPLICIT = ["ContinuousBernoulli", "ContinuousBernoulli-logits", "GeneralizedPareto", "Kumaraswamy", "Weibull",
            "LogisticNormal"]


@pytest.mark.parametrize("name", EXPLICIT)
def test_rsample_values_and_gradients_match_torch_for_the_same_noise(name, device):
    values, make, torch_draw, kind = _noise_then_torch(name)
    rp = [_t(v, device, requires_grad=True) for v in values]
    tp = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    d = make(rp)
    assert d.has_rsample
    rustgrad.manual_seed(17)
    x = d.rsample((50,))
    rustgrad.manual_seed(17)
    noise = getattr(rustgrad, kind)(tuple(x.shape) if kind == "rand" else (50,) + tuple(rp[0].shape),
                                    dtype=rustgrad.float64, device=device)
    tx = torch_draw(tp, torch.tensor(_np(noise)))
    compare(tx, x, f"{name} rsample", np.float64, device)
    w = np.random.default_rng(0).uniform(-1, 1, size=tuple(x.shape))
    (x * _t(w, device)).sum().backward()
    (tx * torch.tensor(w)).sum().backward()
    for t, r in zip(tp, rp):
        compare(t.grad, r.grad, f"{name} rsample gradient", np.float64, device)


GAMMA_BASED = {
    # name: (parameter values, f(theta) -> the draws, d/dtheta E[draws]); the draws' gradient in
    # a Gamma shape is the implicit one (see Gamma), so it is checked for unbiasedness
    "FisherSnedecor-df1": ([2.0, 5.0], lambda th: RD.FisherSnedecor(th, 12.0).rsample(), lambda th: 0 * th),
    "FisherSnedecor-df2": ([12.0, 30.0], lambda th: RD.FisherSnedecor(3.0, th).rsample(),
                           lambda th: -2 / (th - 2) ** 2),  # E = df2 / (df2 - 2)
    "InverseGamma-concentration": ([4.0, 6.0], lambda th: RD.InverseGamma(th, 2.0).rsample(),
                                   lambda th: -2.0 / (th - 1) ** 2),  # E = rate / (c - 1)
    "InverseGamma-rate": ([0.5, 2.0], lambda th: RD.InverseGamma(4.0, th).rsample(), lambda th: 0 * th + 1 / 3),
    "Wishart-df": ([3.0, 6.0], lambda th: RD.Wishart(th, _t(SPD[:2, :2], th.device)).rsample()[..., 0, 1],
                   lambda th: 0 * th + SPD[0, 1]),  # E = df Sigma
}


@pytest.mark.parametrize("name", list(GAMMA_BASED))
def test_gamma_based_rsample_gradients_are_unbiased(name, device):
    values, f, derivative = GAMMA_BASED[name]
    rustgrad.manual_seed(21)
    n, batches = 4000, 10
    estimates = []
    for _ in range(batches):
        theta = _t(values, device, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = f(theta.expand(n, 2))
        estimates.append(_np(rustgrad.autograd.grad(out.sum(), theta)[0]) / n)
    est = np.array(estimates)
    se = est.std(0, ddof=1) / math.sqrt(batches)
    want = derivative(np.asarray(values))
    assert np.all(np.abs(est.mean(0) - want) <= K * se + 1e-12), (est.mean(0), want, se)


def test_wishart_rsample_gradient_in_the_scale_matches_finite_differences(device):
    # with the generator reseeded the draws are smooth in the scale (the noise does not depend
    # on it): the pathwise gradient is the derivative of the very same draws
    w = np.random.default_rng(0).uniform(-1, 1, size=(16, 2, 2))

    def loss(b):
        rustgrad.manual_seed(11)
        tril = rustgrad.diag_embed(b) + 0.3 * rustgrad.ones(2, 2, dtype=b.dtype, device=b.device).tril(-1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            x = RD.Wishart(_t(3.5, device), scale_tril=tril).rsample((16,))
        return (x * _t(w, device)).sum()

    b = _t([1.2, 0.7], device, requires_grad=True)
    loss(b).backward()
    h = 1e-6
    for i in range(2):
        with rustgrad.no_grad():
            b[i] += h
            up = loss(b).item()
            b[i] -= 2 * h
            down = loss(b).item()
            b[i] += h
        fd = (up - down) / (2 * h)
        assert abs(b.grad[i].item() - fd) <= 1e-5 * max(1.0, abs(fd)), (b.grad[i].item(), fd)
