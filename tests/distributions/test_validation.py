"""Argument validation: torch's ValueErrors (and messages) for bad parameters, values outside
the support and shapes that do not fit; the default switch; reprs."""

from __future__ import annotations

import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ..parity import same_error

ERRORS = [
    (lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0])),
     "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: torch.Size([2]), scale: "
     "torch.Size([2])) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:"),
    (lambda L: L.distributions.Normal(0.0, 1.0).log_prob(1.0), "The value argument to log_prob must be a Tensor"),
    (lambda L: L.distributions.Normal(L.zeros(2), 1.0).log_prob(L.zeros(3)),
     "Value is not broadcastable with batch_shape+event_shape: torch.Size([3]) vs torch.Size([2])."),
    (lambda L: L.distributions.Exponential(L.ones(2)).log_prob(-L.ones(2)),
     "Expected value argument (Tensor of shape (2,)) to be within the support (GreaterThanEq(lower_bound=0.0)) "
     "of the distribution Exponential(rate: torch.Size([2])), but found invalid values:"),
    (lambda L: L.distributions.Categorical(L.ones(3)).log_prob(L.tensor([3])),
     "to be within the support (IntegerInterval(lower_bound=0, upper_bound=2)) of the distribution "
     "Categorical(probs: torch.Size([3]))"),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2)).log_prob(L.zeros(3)),
     "The right-most size of value must match event_shape: torch.Size([3]) vs torch.Size([2])."),
    (lambda L: L.distributions.Uniform(1.0, 0.0),
     "Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 1.0, high: 0.0) to satisfy the "
     "constraint LessThan(upper_bound=0.0)"),
    (lambda L: L.distributions.Geometric(L.tensor([0.5, 0.0])),
     "Expected parameter probs (Tensor of shape (2,)) of distribution Geometric(probs: torch.Size([2])) to be "
     "positive but found invalid values:"),
    (lambda L: L.distributions.Categorical(), "Either `probs` or `logits` must be specified, but not both."),
    (lambda L: L.distributions.Bernoulli(0.5, 0.5), "Either `probs` or `logits` must be specified, but not both."),
    (lambda L: L.distributions.Categorical(L.tensor(1.0)), "`probs` parameter must be at least one-dimensional."),
    (lambda L: L.distributions.Categorical(logits=L.tensor(1.0)),
     "`logits` parameter must be at least one-dimensional."),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [2.0, 1.0]])),
     "to satisfy the constraint PositiveDefinite(), but found invalid values:"),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2), scale_tril=L.tensor([[1.0, 2.0], [2.0, 1.0]])),
     "to satisfy the constraint LowerCholesky(), but found invalid values:"),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2)),
     "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(()), L.eye(2)), "loc must be at least one-dimensional."),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.ones(2)),
     "covariance_matrix must be at least two-dimensional, with optional leading batch dimensions"),
    (lambda L: L.distributions.MultivariateNormal(L.zeros(2), scale_tril=L.ones(2)),
     "scale_tril matrix must be at least two-dimensional, with optional leading batch dimensions"),
    (lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(3, 1), L.ones(2)),
     "cov_factor must be a batch of matrices with shape 2 x m"),
    (lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(3)),
     "cov_diag must be a batch of vectors with shape torch.Size([2])"),
    (lambda L: L.distributions.Dirichlet(L.tensor(1.0)), "`concentration` parameter must be at least one-dimensional."),
    (lambda L: L.distributions.Beta(-1.0, 1.0),
     "Expected parameter concentration (Tensor of shape (2,)) of distribution Dirichlet(concentration: "
     "torch.Size([2])) to satisfy the constraint IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"),
    (lambda L: L.distributions.Normal(0.0, 1.0).log_prob(L.tensor(float("nan"))),
     "to be within the support (Real()) of the distribution Normal(loc: 0.0, scale: 1.0)"),
    (lambda L: L.distributions.Normal("a", 1),
     "Input arguments must all be instances of Number, torch.Tensor or objects implementing __torch_function__."),
    (lambda L: L.distributions.Normal(L.zeros(2), 1.0).expand([3, 3]),
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 1"),
    (lambda L: L.distributions.Binomial(L.tensor([2.0, 3.0]), L.tensor([0.5, 0.5])).entropy(),
     "Inhomogeneous total count not supported by `entropy`."),
    (lambda L: L.distributions.Independent(L.distributions.Normal(L.zeros(2), 1.0), 2),
     "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 2 vs 1"),
    (lambda L: L.distributions.MixtureSameFamily(L.distributions.Normal(0.0, 1.0),
                                                 L.distributions.Normal(L.zeros(2), 1.0)),
     "The Mixture distribution needs to be an  instance of torch.distributions.Categorical"),
    (lambda L: L.distributions.MixtureSameFamily(L.distributions.Categorical(L.ones(3)), 3),
     "The Component distribution needs to be an instance of torch.distributions.Distribution"),
    (lambda L: L.distributions.MixtureSameFamily(L.distributions.Categorical(L.ones(3)),
                                                 L.distributions.Normal(L.zeros(2), 1.0)),
     "`mixture_distribution component` (3) does not equal `component_distribution.batch_shape[-1]` (2)"),
    (lambda L: L.distributions.MixtureSameFamily(L.distributions.Categorical(L.ones(4, 2)),
                                                 L.distributions.Normal(L.zeros(3, 2), 1.0)),
     "`mixture_distribution.batch_shape` (torch.Size([4])) is not compatible with `component_distribution.batch_shape`"
     "(torch.Size([3]))"),
    (lambda L: L.distributions.MixtureSameFamily(L.distributions.Categorical(L.ones(2, 3)),
                                                 L.distributions.Exponential(L.ones(2, 3))).log_prob(-L.ones(2)),
     "to be within the support (MixtureSameFamilyConstraint(GreaterThanEq(lower_bound=0.0))) of the distribution "
     "MixtureSameFamily(\n  Categorical(probs: torch.Size([2, 3]), logits: torch.Size([2, 3])),\n  "
     "Exponential(rate: torch.Size([2, 3])))"),
    (lambda L: L.distributions.Normal(0.0, 1.0).mode + L.distributions.Distribution().mode, "does not implement mode"),
    (lambda L: L.distributions.Distribution().arg_constraints, ""),
    (lambda L: L.distributions.Normal(0.0, 1.0).enumerate_support(), ""),
    (lambda L: L.distributions.Normal(L.zeros(2), 1.0).rsample((2,)) + L.distributions.Categorical(
        L.ones(2)).rsample(), ""),
]


@pytest.mark.parametrize("fn,phrase", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
@pytest.mark.filterwarnings("ignore:.*does not define `arg_constraints`")  # Distribution() warns in both
def test_errors_match_torch(fn, phrase):
    same_error(fn, phrase)


def test_non_positive_definite_covariance_without_validation():
    # the Cholesky factorization itself refuses it, with torch's message
    for lib in (torch, rustgrad):
        with pytest.raises(RuntimeError, match="the leading minor of order 2 is not positive-definite"):
            lib.distributions.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]]),
                                                 validate_args=False)


def test_validation_switches():
    for lib in (torch, rustgrad):
        D = lib.distributions
        bad = lib.tensor([-1.0])
        assert D.Normal(0.0, bad, validate_args=False).scale.item() == -1.0
        D.Distribution.set_default_validate_args(False)
        try:
            D.Normal(0.0, bad)  # no check
            assert D.Exponential(lib.ones(1)).log_prob(-lib.ones(1)).shape == (1,)
            with pytest.raises(ValueError):
                D.Normal(0.0, bad, validate_args=True)
        finally:
            D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            D.Normal(0.0, bad)
        with pytest.raises(ValueError):
            D.Distribution.set_default_validate_args(3)
        # expand keeps the setting
        d = D.Normal(lib.zeros(1), lib.ones(1), validate_args=False).expand([2])
        assert d.log_prob(lib.tensor([float("nan"), 0.0])).shape == (2,)


REPRS = [
    lambda L: L.distributions.Normal(L.zeros(2), 1.0),
    lambda L: L.distributions.Normal(0.0, 1.0),
    lambda L: L.distributions.Categorical(logits=L.zeros(2, 3)),
    lambda L: L.distributions.Categorical(L.ones(3)),
    lambda L: L.distributions.Independent(L.distributions.Normal(L.zeros(2, 3), 1.0), 1),
    lambda L: L.distributions.TransformedDistribution(L.distributions.Normal(0.0, 1.0),
                                                      [L.distributions.transforms.ExpTransform()]),
    lambda L: L.distributions.MixtureSameFamily(L.distributions.Categorical(L.ones(3)),
                                                L.distributions.Normal(L.zeros(3), 1.0)),
    lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2)),
    lambda L: L.distributions.Beta(2.0, 3.0),
    lambda L: L.distributions.Binomial(5, L.tensor([0.2, 0.3])),
    lambda L: L.distributions.Geometric(L.tensor([0.2])),
    lambda L: L.distributions.LogNormal(0.0, 1.0),
    lambda L: L.distributions.Uniform(L.zeros(2), 1.0),
    lambda L: L.distributions.transforms.ComposeTransform([L.distributions.transforms.ExpTransform(),
                                                           L.distributions.transforms.AffineTransform(0.0, 2.0)]),
    lambda L: L.distributions.transforms.ExpTransform().inv,
    lambda L: L.distributions.transforms.identity_transform,
    lambda L: L.distributions.transforms.IndependentTransform(L.distributions.transforms.SigmoidTransform(), 1),
]


@pytest.mark.parametrize("fn", REPRS, ids=[str(i) for i in range(len(REPRS))])
def test_reprs_match_torch(fn):
    assert repr(fn(rustgrad)) == repr(fn(torch))


def test_custom_init_subclass_must_define_expand():
    for D in (TD, RD):
        class Shifted(D.Normal):
            def __init__(self, loc):
                super().__init__(loc, 1.0)

        with pytest.raises(NotImplementedError, match="that defines a custom __init__ method must also define"):
            Shifted((torch if D is TD else rustgrad).zeros(2)).expand([3, 2])


def test_lazy_parameters_are_not_validated_until_built():
    # probs given: logits is derived lazily, and validation does not build it
    d = RD.Categorical(rustgrad.tensor([0.2, 0.8]))
    assert "logits" not in d.__dict__
    assert d.logits.shape == (2,) and "logits" in d.__dict__
    # a lazy parameter computed under no_grad still carries the gradient
    p = rustgrad.tensor([0.2, 0.8], requires_grad=True)
    d = RD.Categorical(p)
    with rustgrad.no_grad():
        logits = d.logits
    assert logits.requires_grad
