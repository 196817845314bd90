"""rustgrad.distributions: probability distributions with torch.distributions' API.

Each distribution has ``sample`` (and, where reparameterizable, the differentiable
``rsample``), ``log_prob``, ``entropy``, ``mean``/``mode``/``variance``/``stddev``, ``cdf``/``icdf``
where it has them, and ``expand``; parameters and values are checked against their
``constraints`` unless ``validate_args=False`` (or
``Distribution.set_default_validate_args(False)``). ``kl_divergence(p, q)`` gives closed-form
KL divergences, extensible with ``register_kl``; ``TransformedDistribution`` pushes a
distribution through ``transforms``.

Everything is written in rustgrad's differentiable ops, so log_prob, entropy, the KL
divergences and rsample back-propagate to the parameters. Samples follow rustgrad's generator
(``manual_seed``): the same seed gives other numbers than torch's.

What differs from torch: samples follow rustgrad's generator; Gamma samples (and so Chi2,
Beta, Dirichlet and StudentT ones) take their implicit reparameterization gradient from a
numerical derivative of the incomplete gamma function (more accurate than torch's
approximations, so per-sample gradients differ slightly). The multivariate Normals' triangular
solves are written in rustgrad's ops, one step per dimension (rustgrad.linalg has no
solve_triangular yet), fine for event sizes up to a few dozen.

Example::

    >>> from rustgrad.distributions import Normal, kl_divergence
    >>> q = Normal(torch.tensor([0.5]), torch.tensor([2.0]))
    >>> kl_divergence(q, Normal(0.0, 1.0))
    tensor([0.9319])
"""

from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "Laplace", "LogNormal", "LowRankMultivariateNormal", "MixtureSameFamily",
    "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
    "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution",
    "Uniform", "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
    "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy",
    "LKJCholesky", "LogisticNormal", "Multinomial", "NegativeBinomial", "VonMises", "Weibull", "Wishart",
    "CatTransform", "CorrCholeskyTransform", "StackTransform",
    "AbsTransform", "AffineTransform", "ComposeTransform", "CumulativeDistributionTransform",
    "ExpTransform", "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
    "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform",
]
