"""Samples: shapes, dtypes, devices and autograd flags as torch's; their statistics (N draws,
each check within 6 standard errors, so a correct sampler fails with probability < 1e-8 per
check); reparameterized gradients against finite differences with common random numbers; the
hand-written Gamma, Poisson and Binomial samplers across their parameter regimes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._cases import CASES

N = 20000
K = 6.0  # standard errors allowed


def _t(x, device, dtype=None, requires_grad=False):
    return rustgrad.tensor(np.asarray(x, dtype=np.float64), dtype=dtype or rustgrad.float64, device=device,
                           requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# ---- shapes, dtypes, flags ----------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sample_shapes_dtypes_and_flags_match_torch(case, device):
    from ._util import tensors

    tdist = case.make(TD, **tensors(torch, case.params, np.float32, device, case.no_grad))
    rdist = case.make(RD, **tensors(rustgrad, case.params, np.float32, device, case.no_grad))
    assert rdist.has_rsample == tdist.has_rsample
    for shape in [(), (3,), (2, 4)]:
        r = rdist.sample(shape)
        assert tuple(r.shape) == shape + tuple(rdist.batch_shape) + tuple(rdist.event_shape)
        t = tdist.sample(shape)
        assert tuple(r.shape) == tuple(t.shape)
        assert str(r.dtype) == str(t.dtype)
        assert r.device.type == rustgrad.device(device).type
        assert not r.requires_grad
        if tdist.has_rsample and rdist.has_rsample:
            r = rdist.rsample(shape)
            t = tdist.rsample(shape)
            assert tuple(r.shape) == tuple(t.shape) and str(r.dtype) == str(t.dtype)
            assert r.requires_grad == t.requires_grad
        assert bool(rdist.support.check(rdist.sample(shape)).all())


def test_has_rsample_matches_torch_for_every_class():
    names = [n for n in RD.__all__ if isinstance(getattr(RD, n), type) and issubclass(getattr(RD, n), RD.Distribution)]
    assert len(names) > 25
    for n in names:
        r, t = getattr(RD, n).has_rsample, getattr(TD, n).has_rsample
        if isinstance(t, bool):  # else a property of the instance (Independent, ...)
            assert r == t, n


def test_samples_follow_manual_seed():
    d = RD.Normal(rustgrad.zeros(3), rustgrad.ones(3))
    rustgrad.manual_seed(7)
    a = d.sample((4,))
    rustgrad.manual_seed(7)
    b = d.sample((4,))
    assert rustgrad.equal(a, b)
    assert not rustgrad.equal(a, d.sample((4,)))


# ---- statistics ---------------------------------------------------------------------------------
def _mean_ok(x, mean, what):
    # x: (N, *batch); the standard error from the samples themselves
    m = x.mean(0)
    se = x.std(0) / math.sqrt(x.shape[0])
    assert np.all(np.abs(m - mean) <= K * se + 1e-12), f"{what}: mean {m} vs {mean} (se {se})"


def _var_ok(x, var, what):
    c = (x - x.mean(0)) ** 2
    se = c.std(0) / math.sqrt(x.shape[0])
    assert np.all(np.abs(c.mean(0) - var) <= K * se + 1e-12), f"{what}: variance {c.mean(0)} vs {var}"


def _quantiles_ok(x, dist_cdf_at, what):
    # the fraction of samples below points of known cdf p is within K sqrt(p (1 - p) / N)
    for pts, p in dist_cdf_at:
        frac = (x <= pts).mean(0)
        se = np.sqrt(p * (1 - p) / x.shape[0])
        assert np.all(np.abs(frac - p) <= K * se + 1e-12), f"{what}: P(X <= {pts}) {frac} vs {p}"


MOMENT_CASES = [
    ("Normal", lambda d: RD.Normal(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("Laplace", lambda d: RD.Laplace(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("Gumbel", lambda d: RD.Gumbel(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("LogNormal", lambda d: RD.LogNormal(_t([0.5, -1.0], d), _t([0.3, 0.1], d))),
    ("HalfNormal", lambda d: RD.HalfNormal(_t([1.2, 0.1], d))),
    ("Exponential", lambda d: RD.Exponential(_t([0.5, 4.0], d))),
    ("Uniform", lambda d: RD.Uniform(_t([0.0, -1.0], d), _t([1.2, -0.5], d))),
    ("Pareto", lambda d: RD.Pareto(_t([0.5, 1.0], d), _t([5.0, 8.0], d))),
    ("StudentT", lambda d: RD.StudentT(_t([5.0, 30.0], d), _t([0.5, -1.0], d), _t([1.2, 0.7], d))),
    ("Gamma", lambda d: RD.Gamma(_t([0.2, 1.0, 4.0, 150.0], d), _t([1.2, 0.7, 2.0, 3.0], d))),
    ("Chi2", lambda d: RD.Chi2(_t([0.5, 3.0, 40.0], d))),
    ("Beta", lambda d: RD.Beta(_t([0.5, 3.0, 40.0], d), _t([1.2, 0.7, 30.0], d))),
    ("Dirichlet", lambda d: RD.Dirichlet(_t([[0.5, 3.0, 1.0], [20.0, 20.0, 0.3]], d))),
    ("Poisson", lambda d: RD.Poisson(_t([0.0, 0.5, 3.0, 9.99, 10.0, 45.0, 2000.0], d))),
    ("Binomial", lambda d: RD.Binomial(_t([0.0, 1.0, 20.0, 20.0, 1000.0, 100.0, 7.0, 50.0], d),
                                       _t([0.4, 0.3, 0.3, 0.99, 0.5, 0.95, 1.0, 0.0], d))),
    ("Geometric", lambda d: RD.Geometric(_t([0.05, 0.3, 0.9, 1.0], d))),
    ("Bernoulli", lambda d: RD.Bernoulli(_t([0.0, 0.3, 0.9], d))),
    ("OneHotCategorical", lambda d: RD.OneHotCategorical(_t([[0.2, 0.0, 0.8], [1.0, 1.0, 1.0]], d))),
    ("MultivariateNormal", lambda d: RD.MultivariateNormal(_t([0.5, 1.0, 0.0], d),
                                                           _t([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]], d))),
    ("LowRankMultivariateNormal", lambda d: RD.LowRankMultivariateNormal(
        _t([0.5, 1.0, 0.0], d), _t([[2.0, 0.5], [0.5, 1.0], [0.1, 0.2]], d), _t([1.0, 2.0, 0.5], d))),
    ("MixtureSameFamily", lambda d: RD.MixtureSameFamily(RD.Categorical(_t([0.2, 0.8], d)),
                                                         RD.Normal(_t([-2.0, 2.0], d), _t([1.0, 0.5], d)))),
    ("Independent", lambda d: RD.Independent(RD.Normal(_t([[0.0, 2.0]], d), _t([[1.0, 0.5]], d)), 1)),
]


@pytest.mark.parametrize("name,make", MOMENT_CASES, ids=[n for n, _ in MOMENT_CASES])
def test_sample_moments(name, make, device):
    rustgrad.manual_seed(1234)
    d = make(device)
    x = _np(d.sample((N,)))
    assert x.shape == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    _mean_ok(x, _np(d.mean), name)
    _var_ok(x, _np(d.variance), name)
    if name in ("Poisson", "Binomial", "Geometric", "Bernoulli"):
        assert np.all(x == np.round(x)), f"{name}: non-integer samples"
    if name == "MultivariateNormal":
        cov = np.cov(x.T)
        np.testing.assert_allclose(cov, _np(d.covariance_matrix), atol=0.08)  # ~6 se at N = 20000


CDF_CASES = [
    ("Normal", lambda d: RD.Normal(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("Cauchy", lambda d: RD.Cauchy(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("HalfCauchy", lambda d: RD.HalfCauchy(_t([1.2, 0.1], d))),
    ("Laplace", lambda d: RD.Laplace(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("Gumbel", lambda d: RD.Gumbel(_t([0.5, -3.0], d), _t([1.2, 0.1], d))),
    ("Exponential", lambda d: RD.Exponential(_t([0.5, 4.0], d))),
    ("Gamma", lambda d: RD.Gamma(_t([0.05, 0.7, 1.0, 8.0], d), _t([1.0, 0.7, 2.0, 3.0], d))),
    ("Pareto", lambda d: RD.Pareto(_t([0.5, 1.0], d), _t([0.5, 8.0], d))),
]


@pytest.mark.parametrize("name,make", CDF_CASES, ids=[n for n, _ in CDF_CASES])
def test_sample_quantiles(name, make, device):
    # the distribution of the samples, not only their moments (heavy tails included)
    rustgrad.manual_seed(99)
    d = make(device)
    x = _np(d.sample((N,)))
    ps = []
    for p in (0.05, 0.25, 0.5, 0.75, 0.95):
        if name == "Gamma":  # no icdf: check the cdf at sample quantiles instead
            pts = np.quantile(x, p, axis=0)
            ps.append((pts, _np(d.cdf(_t(pts, device)))))
        else:
            pts = _np(d.icdf(_t(np.full(tuple(d.batch_shape), p), device)))
            ps.append((pts, p))
    _quantiles_ok(x, ps, name)


@pytest.mark.parametrize("name", ["Poisson", "Binomial", "Geometric", "Categorical"])
def test_discrete_frequencies_match_the_pmf(name, device):
    rustgrad.manual_seed(5)
    d = {"Poisson": lambda: RD.Poisson(_t([0.7, 4.0, 25.0], device)),
         "Binomial": lambda: RD.Binomial(_t([3.0, 40.0, 200.0], device), _t([0.2, 0.5, 0.9], device),
                                         validate_args=False),  # counts above 3 are outside one support
         "Geometric": lambda: RD.Geometric(_t([0.2, 0.6], device)),
         "Categorical": lambda: RD.Categorical(_t([0.1, 0.2, 0.3, 0.4], device))}[name]()
    x = _np(d.sample((N,)))
    for k in np.unique(x):
        freq = (x == k).mean(0)
        p = np.exp(_np(d.log_prob(_t(np.full(tuple(d.batch_shape), k), device))))
        se = np.sqrt(p * (1 - p) / N)
        assert np.all(np.abs(freq - p) <= K * se + 5 / N), f"{name}: P({k}) {freq} vs {p}"


def test_relaxed_samples_lie_in_their_support_and_harden_at_low_temperature(device):
    rustgrad.manual_seed(3)
    probs = _t([0.2, 0.3, 0.5], device)
    x = _np(RD.RelaxedOneHotCategorical(_t(0.05, device), probs).sample((N,)))
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-9)
    # near zero temperature the argmax is the Categorical draw
    freq = np.bincount(x.argmax(-1), minlength=3) / N
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=K * np.sqrt(0.25 / N))
    b = _np(RD.RelaxedBernoulli(_t(0.01, device), probs).sample((N,)))
    assert np.all((b >= 0) & (b <= 1))
    np.testing.assert_allclose((b > 0.5).mean(0), [0.2, 0.3, 0.5], atol=K * np.sqrt(0.25 / N))


# ---- reparameterized gradients ----------------------------------------------------------------
RSAMPLE_CASES = [
    ("Normal", lambda a, b: RD.Normal(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Laplace", lambda a, b: RD.Laplace(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Cauchy", lambda a, b: RD.Cauchy(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Gumbel", lambda a, b: RD.Gumbel(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("LogNormal", lambda a, b: RD.LogNormal(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Uniform", lambda a, b: RD.Uniform(a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Pareto", lambda a, b: RD.Pareto(a, b), [0.5, 1.0], [3.0, 2.0]),
    ("StudentT", lambda a, b: RD.StudentT(3.0, a, b), [0.5, -1.0], [1.2, 0.7]),
    ("Exponential", lambda a, b: RD.Exponential(a * b), [0.5, 1.0], [1.2, 0.7]),
    ("HalfNormal", lambda a, b: RD.HalfNormal(a * b), [0.5, 1.0], [1.2, 0.7]),
    ("HalfCauchy", lambda a, b: RD.HalfCauchy(a * b), [0.5, 1.0], [1.2, 0.7]),
    ("RelaxedBernoulli", lambda a, b: RD.RelaxedBernoulli(b, logits=a), [0.5, -1.0], [1.2, 0.7]),
    ("RelaxedOneHotCategorical", lambda a, b: RD.RelaxedOneHotCategorical(b.sum(), logits=a), [0.5, -1.0],
     [1.2, 0.7]),
    ("MultivariateNormal", lambda a, b: RD.MultivariateNormal(a, scale_tril=rustgrad.diag_embed(b) + 0.3 *
                                                              rustgrad.ones(2, 2, dtype=b.dtype, device=b.device)
                                                              .tril(-1)), [0.5, -1.0], [1.2, 0.7]),
    ("MultivariateNormal-cov", lambda a, b: RD.MultivariateNormal(a, rustgrad.diag_embed(b) + 0.1), [0.5, -1.0],
     [1.2, 0.7]),
    ("LowRankMultivariateNormal", lambda a, b: RD.LowRankMultivariateNormal(a, b.unsqueeze(-1), b * b), [0.5, -1.0],
     [1.2, 0.7]),
    ("Independent", lambda a, b: RD.Independent(RD.Normal(a, b), 1), [0.5, -1.0], [1.2, 0.7]),
]


@pytest.mark.parametrize("name,make,a0,b0", RSAMPLE_CASES, ids=[c[0] for c in RSAMPLE_CASES])
def test_rsample_gradients_match_finite_differences(name, make, a0, b0, device):
    # with the generator reseeded, rsample is a smooth function of the parameters: its pathwise
    # gradient is the derivative of the very same draws
    w = np.random.default_rng(0).uniform(-1, 1, size=(16, 2, 2))

    def loss(a, b):
        rustgrad.manual_seed(11)
        x = make(a, b).rsample((16,))
        ww = rustgrad.tensor(w[..., : x.shape[-1]].reshape(16, *([1] * (x.dim() - 2)), -1)[..., : x.shape[-1]],
                             device=device)
        return (x * ww).sum()

    a = _t(a0, device, requires_grad=True)
    b = _t(b0, device, requires_grad=True)
    assert make(a, b).has_rsample
    loss(a, b).backward()
    h = 1e-6
    for p, g in ((a, a.grad), (b, b.grad)):
        assert g is not None
        for i in range(2):
            with rustgrad.no_grad():
                p[i] += h
                up = loss(a, b).item()
                p[i] -= 2 * h
                down = loss(a, b).item()
                p[i] += h
            fd = (up - down) / (2 * h)
            assert abs(g[i].item() - fd) <= 1e-5 * max(1.0, abs(fd)), f"{name}: grad {g[i].item()} vs fd {fd}"


def test_straight_through_rsample_is_a_one_hot_sample_with_the_gradient_of_probs(device):
    logits = _t([[0.5, -1.0, 0.2]], device, requires_grad=True)
    d = RD.OneHotCategoricalStraightThrough(logits=logits)
    rustgrad.manual_seed(4)
    x = d.rsample((6,))
    rustgrad.manual_seed(4)
    assert rustgrad.equal(x.detach(), d.sample((6,)))
    w = _t(np.arange(18.0).reshape(6, 1, 3), device)
    (x * w).sum().backward()
    logits2 = logits.detach().requires_grad_()
    (rustgrad.softmax(logits2, -1) * w).sum().backward()
    np.testing.assert_allclose(_np(logits.grad), _np(logits2.grad), rtol=1e-12)


def test_normal_rsample_gradients_are_the_reparameterization(device):
    loc = _t([0.5, -1.0], device, requires_grad=True)
    scale = _t([1.2, 0.7], device, requires_grad=True)
    x = RD.Normal(loc, scale).rsample((1000,))
    x.sum().backward()
    np.testing.assert_allclose(_np(loc.grad), [1000.0, 1000.0])
    eps = (_np(x) - _np(loc)) / _np(scale)
    np.testing.assert_allclose(_np(scale.grad), eps.sum(0), rtol=1e-10)


# ---- the hand-written samplers ----------------------------------------------------------------
def test_implicit_gamma_gradient_matches_high_precision_values():
    # dx/dalpha = -(dP/dalpha) / density at fixed (alpha, x), against mpmath's 40 digits
    mpmath = pytest.importorskip("mpmath")
    from rustgrad.distributions import _special

    mpmath.mp.dps = 40
    alpha = np.array([0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 100.0, 0.5, 30.0, 1e4, 2.0, 5.0])
    x = np.array([0.5, 0.01, 2.0, 1.0, 2.5, 30.0, 90.0, 50.0, 29.0, 1.01e4, 0.5, 0.8])

    def exact(a, v):
        a, v = mpmath.mpf(a), mpmath.mpf(v)
        dp = mpmath.diff(lambda t: mpmath.gammainc(t, 0, v, regularized=True), a)
        return float(-dp / (v ** (a - 1) * mpmath.exp(-v) / mpmath.gamma(a)))

    want = np.array([exact(a, v) for a, v in zip(alpha, x)])
    got = _special.standard_gamma_grad(rustgrad.tensor(alpha), rustgrad.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-7)
    # torch's own approximation agrees to its accuracy (about 1e-2 at worst)
    np.testing.assert_allclose(got, torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy(),
                               rtol=2e-2)


IMPLICIT = {
    # name: (parameter values, f(theta) -> the function of the sample, d/dtheta E[f(X)])
    "Gamma": ([0.4, 2.5, 40.0], lambda th: RD.Gamma(th, 2.0).rsample().log(),  # E = digamma(a) - log 2
              lambda th: _trigamma(th)),
    "Chi2": ([0.4, 2.5, 40.0], lambda th: RD.Chi2(th).rsample(), lambda th: np.ones_like(th)),  # E = df
    "Beta": ([0.4, 2.5, 40.0], lambda th: RD.Beta(th, 2.0).rsample(), lambda th: 2 / (th + 2) ** 2),
    "Dirichlet": ([0.4, 2.5, 40.0], lambda th: RD.Dirichlet(rustgrad.stack(
        [th, rustgrad.full_like(th, 1.0), rustgrad.full_like(th, 2.0)], -1)).rsample()[..., 0],
        lambda th: 3 / (th + 3) ** 2),  # E = a / (a + 3)
    "StudentT": ([5.0, 8.0, 40.0], lambda th: RD.StudentT(th).rsample() ** 2,
                 lambda th: -2 / (th - 2) ** 2),  # E = df / (df - 2)
}


def _trigamma(a):
    from rustgrad.special import polygamma

    return polygamma(1, rustgrad.tensor(a)).numpy()


@pytest.mark.parametrize("name", list(IMPLICIT))
def test_implicit_rsample_gradients_are_unbiased(name, device):
    # d/dtheta E[f(X)], estimated by batches of pathwise gradients, matches the derivative of
    # the known expectation within K standard errors of the batch estimates
    values, f, derivative = IMPLICIT[name]
    rustgrad.manual_seed(21)
    n, batches = 4000, 10
    estimates = []
    for _ in range(batches):
        theta = _t(values, device, requires_grad=True)
        out = f(theta.expand(n, 3))
        estimates.append(_np(rustgrad.autograd.grad(out.sum(), theta)[0]) / n)
    est = np.array(estimates)
    se = est.std(0, ddof=1) / math.sqrt(batches)
    want = derivative(np.asarray(values))
    assert np.all(np.abs(est.mean(0) - want) <= K * se), (est.mean(0), want, se)


def test_standard_gamma_regimes_and_edges(device):
    from rustgrad.distributions import _sampling

    rustgrad.manual_seed(0)
    alpha = _t([1e-3, 0.1, 0.5, 1.0, 2.5, 30.0, 1e4], device)
    x = _np(_sampling.standard_gamma(alpha.expand(N, 7)))
    a = _np(alpha)
    _mean_ok(x, a, "standard_gamma")
    _var_ok(x, a, "standard_gamma")
    assert np.all(x > 0)
    out = _np(_sampling.standard_gamma(_t([math.inf, math.nan, 0.0, -1.0], device)))
    assert out[0] == math.inf and math.isnan(out[1]) and out[2] > 0 and math.isnan(out[3])
    f32 = _sampling.standard_gamma(rustgrad.tensor([0.5, 2.0], device=device))
    assert f32.dtype == rustgrad.float32 and f32.device.type == rustgrad.device(device).type


def test_poisson_and_binomial_edges(device):
    from rustgrad.distributions import _sampling

    p = _np(_sampling.poisson(_t([0.0, math.inf, math.nan, -1.0], device)))
    assert p[0] == 0 and all(math.isnan(v) for v in p[1:])
    b = _np(_sampling.binomial(_t([0.0, 5.0, 5.0, 5.0, -1.0], device), _t([0.5, 0.0, 1.0, 1.5, 0.5], device)))
    assert b[0] == 0 and b[1] == 0 and b[2] == 5 and math.isnan(b[3]) and math.isnan(b[4])
