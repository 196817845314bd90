"""The distributions added after the first set (ContinuousBernoulli, FisherSnedecor,
GeneralizedPareto, InverseGamma, Kumaraswamy, LKJCholesky, LogisticNormal, Multinomial,
NegativeBinomial, VonMises, Weibull, Wishart): log_prob, cdf, icdf, entropy, mean, mode,
variance and stddev, and their gradients in every parameter, match torch's on fixed inputs
(float64 and float32, on every device); shapes, expand, repr and has_rsample as torch's."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._cases import SPD, SPD2, TRIL, Case
from ._util import backward_both, compare, evaluate, tensors

A = np.asarray

CORR = A([[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]])
CORR_CHOL = np.linalg.cholesky(CORR)
CORR2_CHOL = np.linalg.cholesky(A([[1.0, -0.5, 0.4], [-0.5, 1.0, 0.0], [0.4, 0.0, 1.0]]))

NEW_CASES = [
    Case("ContinuousBernoulli", lambda D, probs: D.ContinuousBernoulli(probs), {"probs": A([0.3, 0.8])},
         A([[0.2, 0.9], [0.5, 0.0]]), icdf=True),
    Case("ContinuousBernoulli-near-half", lambda D, probs: D.ContinuousBernoulli(probs), {"probs": A([0.4995, 0.5])},
         A([[0.2, 0.9], [0.5, 1.0]]), icdf=True),
    Case("ContinuousBernoulli-logits", lambda D, logits: D.ContinuousBernoulli(logits=logits),
         {"logits": A([0.3, -2.0])}, A([[0.2, 0.9], [0.5, 0.01]]), icdf=True),
    Case("FisherSnedecor", lambda D, df1, df2: D.FisherSnedecor(df1, df2),
         {"df1": A([4.0, 1.5, 3.0]), "df2": A([6.0, 3.0, 1.5])}, A([0.3, 2.0, 0.7])),
    Case("GeneralizedPareto", lambda D, loc, scale, c: D.GeneralizedPareto(loc, scale, c),
         {"loc": A([0.1, -1.0]), "scale": A([2.0, 0.5]), "c": A([0.4, -0.3])}, A([[0.5, 0.0], [3.0, -0.5]]),
         icdf=True),
    Case("GeneralizedPareto-zero-concentration", lambda D, loc, scale, c: D.GeneralizedPareto(loc, scale, c),
         {"loc": A([0.1, 0.0]), "scale": A([2.0, 0.5]), "c": A([0.0, 1.5])}, A([[0.5, 0.1], [3.0, 2.5]]),
         icdf=True),
    Case("InverseGamma", lambda D, c, rate: D.InverseGamma(c, rate), {"c": A([0.5, 3.0]), "rate": A([1.2, 0.7])},
         A([[0.3, 2.0], [4.0, 0.1]]), no_backward=("cdf",)),  # igamma: no derivative in c
    Case("InverseGamma-high", lambda D, c, rate: D.InverseGamma(c, rate), {"c": A([2.5, 5.0]), "rate": A([1.2, 0.7])},
         A([0.3, 2.0]), no_backward=("cdf",)),
    Case("Kumaraswamy", lambda D, a, b: D.Kumaraswamy(a, b), {"a": A([0.5, 3.0]), "b": A([1.2, 2.0])},
         A([[0.3, 0.8], [0.05, 0.5]]), icdf=True),
    Case("Kumaraswamy-mode", lambda D, a, b: D.Kumaraswamy(a, b), {"a": A([2.0, 3.0]), "b": A([1.5, 0.7])},
         A([0.3, 0.8])),
    Case("LKJCholesky", lambda D, c: D.LKJCholesky(3, c), {"c": A([0.5, 2.0])}, A([CORR_CHOL, CORR2_CHOL]),
         entropy=False),
    Case("LKJCholesky-scalar", lambda D, c: D.LKJCholesky(2, c), {"c": A(1.5)},
         A([[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [-0.28, 0.96]]]), entropy=False),
    Case("LogisticNormal", lambda D, loc, scale: D.LogisticNormal(loc, scale),
         {"loc": A([[0.5, -1.0], [0.0, 0.3]]), "scale": A([1.0, 2.0])},
         A([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]), entropy=False),
    Case("Multinomial", lambda D, probs: D.Multinomial(5, probs), {"probs": A([[0.2, 0.3, 0.5], [1.0, 2.0, 3.0]])},
         A([[1.0, 2.0, 2.0], [0.0, 0.0, 5.0]])),
    Case("Multinomial-logits", lambda D, logits: D.Multinomial(4, logits=logits),
         {"logits": A([0.3, -1.0, 2.0, 0.0])}, A([[1.0, 0.0, 2.0, 1.0], [4.0, 0.0, 0.0, 0.0]])),
    Case("NegativeBinomial", lambda D, n, probs: D.NegativeBinomial(n, probs),
         {"n": A([3.0, 2.5]), "probs": A([0.3, 0.6])}, A([[0.0, 2.0], [5.0, 1.0]]), entropy=False),
    Case("NegativeBinomial-logits", lambda D, n, logits: D.NegativeBinomial(n, logits=logits),
         {"n": A([1.0, 0.5]), "logits": A([0.3, -2.0])}, A([[0.0, 4.0], [3.0, 7.0]]), entropy=False),
    Case("VonMises", lambda D, loc, c: D.VonMises(loc, c), {"loc": A([0.5, -1.0, 2.0]), "c": A([1.2, 5.0, 0.01])},
         A([[0.3, 2.0, -3.0], [-7.0, 0.1, 1.0]]), entropy=False),
    Case("Weibull", lambda D, scale, c: D.Weibull(scale, c), {"scale": A([1.2, 0.7]), "c": A([0.5, 3.0])},
         A([[0.3, 2.0], [4.0, 0.1]]), icdf=True),
    Case("Wishart", lambda D, df, cov: D.Wishart(df, cov), {"df": A([4.0, 5.5]), "cov": SPD}, A([SPD2, SPD])),
    Case("Wishart-tril", lambda D, df, tril: D.Wishart(df, scale_tril=tril), {"df": A(6.0), "tril": TRIL},
         A([SPD2, SPD])),
    Case("Wishart-precision", lambda D, df, prec: D.Wishart(df, precision_matrix=prec),
         {"df": A([3.5, 8.0]), "prec": A([SPD2, SPD])}, A(SPD)),
]
LOOSE_CDF = {"InverseGamma", "InverseGamma-high"}  # torch's igamma is good to about 1e-9


@contextlib.contextmanager
def _default_dtype(dtype):
    # torch's GeneralizedPareto compares its concentration with a tensor of the default dtype
    # (a RuntimeError otherwise): evaluate torch with the default dtype of the case
    old = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, np.dtype(dtype).name))
    try:
        yield
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("case", NEW_CASES, ids=[c.name for c in NEW_CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_values_and_gradients_match_torch(case, dtype, device):
    with _default_dtype(dtype), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tparams, touts = evaluate(torch, case, dtype, device)
    rparams, routs = evaluate(rustgrad, case, dtype, device)
    assert touts.keys() == routs.keys()
    for k in touts:
        if k in ("batch_shape", "event_shape"):
            assert routs[k] == touts[k], f"{k}: {routs[k]} vs {touts[k]}"
            continue
        compare(touts[k], routs[k], f"{case.name}.{k}", dtype, device,
                loose=case.name in LOOSE_CDF and k == "cdf")
    if backward_both(touts, routs, device, case.no_backward):
        for name in tparams:
            t, r = tparams[name].grad, rparams[name].grad
            assert (t is None) == (r is None), f"grad of {name}: torch {t is not None}, rustgrad {r is not None}"
            if t is not None:
                compare(t, r, f"{case.name}: grad of {name}", dtype, device, loose=case.name.startswith("Wishart"))


@pytest.mark.parametrize("case", NEW_CASES, ids=[c.name for c in NEW_CASES])
def test_shapes_expand_repr_and_flags_match_torch(case, device):
    with _default_dtype(np.float64), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = case.make(TD, **tensors(torch, case.params, np.float64, device, case.no_grad))
        r = case.make(RD, **tensors(rustgrad, case.params, np.float64, device, case.no_grad))
        assert repr(r) == repr(t)
        assert r.has_rsample == t.has_rsample
        assert r.has_enumerate_support == t.has_enumerate_support
        assert type(r.support).__name__ == type(t.support).__name__
        assert r.support.event_dim == t.support.event_dim
        for shape in [(), (3,), (2, 4)]:
            rs, ts = r.sample(shape), t.sample(shape)
            assert tuple(rs.shape) == tuple(ts.shape) and str(rs.dtype) == str(ts.dtype)
            assert rs.device.type == rustgrad.device(device).type and not rs.requires_grad
            assert bool(r.support.check(rs).all()), case.name
            if t.has_rsample:
                rs, ts = r.rsample(shape), t.rsample(shape)
                assert tuple(rs.shape) == tuple(ts.shape) and rs.requires_grad == ts.requires_grad
        big = (4,) + tuple(t.batch_shape)
        te, re = t.expand(big), r.expand(big)
        assert type(re) is type(r)
        assert re.batch_shape == te.batch_shape and re.event_shape == te.event_shape
        assert tuple(re.sample((2,)).shape) == tuple(te.sample((2,)).shape)
        # log_prob of the expanded distributions at the same points (rustgrad's draws)
        v = re.sample()
        tv = torch.tensor(v.cpu().numpy())
        compare(te.log_prob(tv), re.log_prob(v), f"{case.name}: expanded log_prob", np.float64, device)


def test_every_new_class_is_exported_with_torchs_has_rsample():
    for name in ("ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy",
                 "LKJCholesky", "LogisticNormal", "Multinomial", "NegativeBinomial", "VonMises", "Weibull",
                 "Wishart"):
        assert name in RD.__all__ and issubclass(getattr(RD, name), RD.Distribution)
        r, t = getattr(RD, name).has_rsample, getattr(TD, name).has_rsample
        if isinstance(t, bool):
            assert r == t, name
    for name in ("CatTransform", "CorrCholeskyTransform", "StackTransform"):
        assert name in RD.__all__ and name in RD.transforms.__all__


def test_generalized_pareto_survival_functions_match_torch(device):
    outs = []
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        loc = lib.tensor([0.1, -1.0, 0.0], requires_grad=True, **kw)
        scale = lib.tensor([2.0, 0.5, 1.0], requires_grad=True, **kw)
        c = lib.tensor([0.4, -0.3, 0.0], requires_grad=True, **kw)
        d = lib.distributions.GeneralizedPareto(loc, scale, c)
        x = lib.tensor([0.5, -0.5, 2.0], **kw)
        out = (d.log_survival_function(x), d.log_cdf(x), d.support.upper_bound)
        (out[0].sum() + out[1].sum()).backward()
        outs.append(out + (loc.grad, scale.grad, c.grad))
    for t, r in zip(*outs):
        compare(t, r, "GeneralizedPareto", np.float32, device)


def test_multinomial_log_prob_with_zero_probabilities_and_other_counts(device):
    outs = []
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        logits = lib.tensor([0.0, -float("inf"), 1.0], dtype=lib.float64, **kw)
        d = lib.distributions.Multinomial(logits=logits, validate_args=False)
        outs.append(d.log_prob(lib.tensor([[2.0, 0.0, 1.0], [7.0, 0.0, 2.0]], dtype=lib.float64, **kw)))
    compare(outs[0], outs[1], "Multinomial", np.float64, device)


def test_errors_match_torch():
    from ..parity import same_error

    same_error(lambda L: L.distributions.Multinomial(2.5, L.ones(3)), "inhomogeneous total_count is not supported")
    same_error(lambda L: L.distributions.LKJCholesky(1, 1.0),
               "Expected dim to be an integer greater than or equal to 2. Found dim=1.")
    same_error(lambda L: L.distributions.Wishart(L.tensor(2.0), L.eye(2), scale_tril=L.eye(2)),
               "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    same_error(lambda L: L.distributions.Wishart(L.tensor(2.0), L.ones(2)),
               "scale_tril must be at least two-dimensional, with optional leading batch dimensions")
    same_error(lambda L: L.distributions.Wishart(0.5, L.eye(2)),
               "Value of df=0.5 expected to be greater than ndim - 1 = 1.")
    same_error(lambda L: L.distributions.ContinuousBernoulli(L.tensor([1.5]), validate_args=True),
               "The parameter probs has invalid values")
    same_error(lambda L: L.distributions.NegativeBinomial(2.0), "Either `probs` or `logits` must be specified")
    same_error(lambda L: L.distributions.ContinuousBernoulli(), "Either `probs` or `logits` must be specified")
    same_error(lambda L: L.distributions.VonMises(L.zeros(2), L.tensor([1.0, -1.0])),
               "Expected parameter concentration (Tensor of shape (2,)) of distribution VonMises(loc: torch.Size([2]), "
               "concentration: torch.Size([2])) to satisfy the constraint GreaterThan(lower_bound=0.0)")
    same_error(lambda L: L.distributions.Weibull(L.ones(2), L.ones(2)).log_prob(-L.ones(2)),
               "Expected value argument (Tensor of shape (2,)) to be within the support (GreaterThan(lower_bound=0.0))"
               " of the distribution Weibull(scale: torch.Size([2]), concentration: torch.Size([2]))")
    same_error(lambda L: L.distributions.Multinomial(3, L.ones(2)).log_prob(L.tensor([-1.0, 2.0])),
               "to be within the support (Multinomial(")
    same_error(lambda L: L.distributions.LKJCholesky(2, 1.0).log_prob(L.ones(2, 2)),
               "to be within the support (CorrCholesky()) of the distribution LKJCholesky(concentration: 1.0)")
    same_error(lambda L: L.distributions.NegativeBinomial(L.tensor([2.0]), L.tensor([1.0])),
               "to satisfy the constraint HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)")
    same_error(lambda L: L.distributions.Wishart(L.tensor(3.0), L.tensor([[1.0, 2.0], [2.0, 1.0]])),
               "to satisfy the constraint PositiveDefinite()")


def test_wishart_low_df_and_singular_sample_warnings_as_torchs():
    for lib in (torch, rustgrad):
        with pytest.warns(UserWarning, match="Low df values detected"):
            lib.distributions.Wishart(lib.tensor(1.5), lib.eye(2))
        with pytest.warns(UserWarning, match="Singular sample detected"):
            lib.distributions.Wishart(lib.tensor(4.0), lib.eye(2)).rsample((3,))
