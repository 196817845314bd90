"""KL divergences between distributions: ``kl_divergence(p, q)`` dispatches on the pair of
types to a closed form registered with ``@register_kl(TypeP, TypeQ)``, as torch.distributions.kl.

Example::

    >>> from rustgrad.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Dict, Tuple, Type

from . import _linalg
from . import _rg as rg
from ._rg import Tensor
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, broadcast_shapes, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: Dict[Tuple[type, type], Callable[..., Tensor]] = {}
# (type(p), type(q)) -> the function dispatch chose (or NotImplemented)
_KL_MEMOIZE: Dict[Tuple[type, type], Any] = {}

_HALF_LOG_2PI_E = 0.5 * (1 + math.log(2 * math.pi))


def register_kl(type_p: Type[Distribution], type_q: Type[Distribution]) -> Callable[[Callable], Callable]:
    """A decorator registering a function ``kl(p, q)`` for a pair of distribution types.

    Dispatch picks the most specific registered pair whose types are superclasses of the
    arguments' types (first by p's type, then by q's); when the order of preference is
    ambiguous a RuntimeWarning asks for a registration of the exact pair.

    Args:
        type_p (type): a subclass of Distribution.
        type_q (type): a subclass of Distribution.

    Example::

        >>> from rustgrad.distributions import Normal, kl_divergence, register_kl
        >>> class MyNormal(Normal):
        ...     pass
        >>> @register_kl(MyNormal, MyNormal)
        ... def _kl_mine(p, q):
        ...     return torch.zeros(())
        >>> kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0))
        tensor(0.)
    """
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new registration may change earlier dispatch results
        return fun

    return decorator


def _distance(sub: type, sup: type) -> int:
    """How far up sub's method resolution order sup sits (0: the class itself)."""
    return sub.__mro__.index(sup)


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The registered function for the most specific matching pair (NotImplemented if none)."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    by_p = min(matches, key=lambda m: (_distance(type_p, m[0]), _distance(type_q, m[1])))
    by_q = min(matches, key=lambda m: (_distance(type_q, m[1]), _distance(type_p, m[0])))
    left, right = _KL_REGISTRY[by_p], _KL_REGISTRY[by_q]
    if left is not right:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{by_p[0].__name__}, {by_q[1].__name__})", RuntimeWarning, stacklevel=3)
    return left


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], one per batch entry, in closed form.

    Args:
        p (Distribution): the first distribution.
        q (Distribution): the second distribution.

    Returns:
        a tensor of the broadcast batch shape.

    Raises:
        NotImplementedError: no closed form is registered for the pair of types.
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fun(p, q)


# ---- helpers -------------------------------------------------------------------------------------
def _infinite_like(t: Tensor) -> Tensor:
    return rg.full_like(t, math.inf)


def _x_log_x(t: Tensor) -> Tensor:
    # x log x, 0 at x = 0
    return rg.xlogy(t, t)


def _inf_where(mask: Tensor, value: Tensor) -> Tensor:
    return rg.where(mask, math.inf, value)


# ---- same family ---------------------------------------------------------------------------------
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    # log p = -softplus(-logit p), log(1 - p) = -softplus(logit p)
    t1 = p.probs * (rg.softplus(-q.logits) - rg.softplus(-p.logits))
    t1 = rg.where(p.probs == 0, 0.0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (rg.softplus(q.logits) - rg.softplus(p.logits))
    t2 = rg.where(p.probs == 1, 0.0, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    log_betas = (rg.lgamma(a2) + rg.lgamma(b2) + rg.lgamma(s1)) - (rg.lgamma(a1) + rg.lgamma(b1) + rg.lgamma(s2))
    return (log_betas + (a1 - a2) * rg.digamma(a1) + (b1 - b2) * rg.digamma(b1)
            + (s2 - s1) * rg.digamma(s1))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    # the closed form needs equal counts; p's support outruns q's when its count is larger
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    shape = broadcast_shapes(t.shape, q.probs.shape, p.probs.shape)
    t = _inf_where((q.probs == 0).expand(shape), t.expand(shape))
    t = rg.where((p.probs == 0).expand(shape), 0.0, t)
    return t.sum(-1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    num = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return num - (4 * p.scale * q.scale).log()


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    cp, cq = p.concentration, q.concentration
    sp, sq = cp.sum(-1), cq.sum(-1)
    t1 = rg.lgamma(sp) - rg.lgamma(sq)
    t2 = (rg.lgamma(cp) - rg.lgamma(cq)).sum(-1)
    t3 = ((cp - cq) * (rg.digamma(cp) - rg.digamma(sp).unsqueeze(-1))).sum(-1)
    return t1 - t2 + t3


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    # the Bregman divergence of the log-normalizer, its gradient by autograd
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    lg_normal = p._log_normalizer(*p_params)
    gradients = rg.grad(lg_normal.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - lg_normal
    for pp, qp, g in zip(p_params, q_params, gradients):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = rg.lgamma(q.concentration) - rg.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * rg.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    q_loc = q.loc / q.scale
    p_loc = p.loc / q.scale
    t1 = -ratio.log() - q_loc + p_loc
    t2 = ratio * euler_constant
    t3 = (q_loc + rg.lgamma(1 + ratio) - p_loc).exp()
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


def _log_det_and_inv_quad(q: Distribution, diff: Tensor, root: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """For a Gaussian q (MultivariateNormal or LowRankMultivariateNormal): log det of its
    covariance, the Mahalanobis terms diff^T cov^-1 diff, and tr(cov^-1 root root^T)."""
    if isinstance(q, MultivariateNormal):
        low = q._unbroadcasted_scale_tril
        log_det = 2 * low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        maha = _linalg.solve_lower_vec(low, diff).pow(2).sum(-1)
        shape = broadcast_shapes(low.shape[:-2], root.shape[:-2])
        n = low.shape[-1]
        solved = _linalg.solve_triangular(low.expand(tuple(shape) + (n, n)),
                                          root.expand(tuple(shape) + tuple(root.shape[-2:])), upper=False)
        trace = solved.pow(2).sum((-2, -1))
        return log_det, maha, trace
    assert isinstance(q, LowRankMultivariateNormal)
    w, d, cap = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
    log_det = q._log_det()
    scaled = diff / d
    wt = (w.mT @ scaled.unsqueeze(-1)).squeeze(-1)
    maha = (diff * scaled).sum(-1) - _linalg.solve_lower_vec(cap, wt).pow(2).sum(-1)
    # tr(cov^-1 S S^T) = |D^-1/2 S|^2 - |L_C^-1 W^T D^-1 S|^2 (Woodbury)
    inner = w.mT @ (root / d.unsqueeze(-1))
    shape = broadcast_shapes(cap.shape[:-2], inner.shape[:-2])
    r = cap.shape[-1]
    solved = _linalg.solve_triangular(cap.expand(tuple(shape) + (r, r)),
                                      inner.expand(tuple(shape) + tuple(inner.shape[-2:])), upper=False)
    trace = (root.pow(2) / d.unsqueeze(-1)).sum((-2, -1)) - solved.pow(2).sum((-2, -1))
    return log_det, maha, trace


def _gaussian_root(p: Distribution) -> Tuple[Tensor, Tensor]:
    """(S, log det cov) for a Gaussian p with covariance S S^T."""
    if isinstance(p, MultivariateNormal):
        low = p._unbroadcasted_scale_tril
        return low, 2 * low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    assert isinstance(p, LowRankMultivariateNormal)
    w, d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    shape = broadcast_shapes(w.shape[:-2], d.shape[:-1])
    n = w.shape[-2]
    root = rg.cat([w.expand(tuple(shape) + tuple(w.shape[-2:])), d.sqrt().diag_embed().expand(tuple(shape) + (n, n))],
                  -1)
    return root, p._log_det()


def _kl_gaussians(p: Any, q: Any, what: str) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")
    n = p.event_shape[0]
    root, p_log_det = _gaussian_root(p)
    q_log_det, maha, trace = _log_det_and_inv_quad(q, q.loc - p.loc, root)
    kl = 0.5 * (trace + maha - n + q_log_det - p_log_det)
    return kl.expand(broadcast_shapes(p.batch_shape, q.batch_shape))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    return _kl_gaussians(p, q, "Multivariate Normals")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p: LowRankMultivariateNormal,
                                                            q: LowRankMultivariateNormal) -> Tensor:
    return _kl_gaussians(p, q, "Low Rank Multivariate Normals")


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal,
                                                     q: LowRankMultivariateNormal) -> Tensor:
    return _kl_gaussians(p, q, "(Low Rank) Multivariate Normals")


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal,
                                                     q: MultivariateNormal) -> Tensor:
    return _kl_gaussians(p, q, "(Low Rank) Multivariate Normals")


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    # the same bijections on both sides leave the divergence unchanged
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# ---- across families -----------------------------------------------------------------------------
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Pareto)
def _kl_beta_infinity(p: Beta, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration1)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b = p.concentration1, p.concentration0
    t2 = rg.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (rg.digamma(a) - rg.digamma(a + b))
    t4 = q.rate * a / (a + b)
    return -p.entropy() + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    a, b = p.concentration1, p.concentration0
    mean = a / (a + b)
    var = a * b / ((a + b).pow(2) * (a + b + 1))
    second = var + mean.pow(2)
    t2 = 0.5 * (q.scale.pow(2) * math.pi * 2).log()
    t3 = (second - 2 * q.loc * mean + q.loc.pow(2)) * 0.5 / q.scale.pow(2)
    return -p.entropy() + t2 + t3


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0.0) | (q.high < 1.0), result)


@register_kl(Exponential, Beta)
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p: Exponential, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + rg.lgamma(q.concentration) + q.concentration * euler_constant - (1 + euler_constant)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    prod = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t1 = prod.log() - 1
    t2 = loc_ratio.exp() * prod / (prod + 1)
    return t1 - loc_ratio + t2 + prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var = q.scale.pow(2)
    rate2 = p.rate.pow(2)
    t1 = 0.5 * (rate2 * var * 2 * math.pi).log()
    return t1 - 1 + (rate2.reciprocal() - q.loc / p.rate + 0.5 * q.loc.pow(2)) / var


@register_kl(Gamma, Beta)
@register_kl(Gamma, Pareto)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    c = p.concentration
    prod = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t1 = (c - 1) * rg.digamma(c) - rg.lgamma(c) - c
    t2 = prod.log() + c / prod
    t3 = loc_ratio.exp() * (1 + prod.reciprocal()).pow(-c) - loc_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    c = p.concentration
    var = q.scale.pow(2)
    rate2 = p.rate.pow(2)
    t1 = 0.5 * (rate2 * var * 2 * math.pi).log() - c - rg.lgamma(c)
    t2 = 0.5 * (c.pow(2) + c) / rate2
    t3 = q.loc * c / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (c - 1) * rg.digamma(c) + (t2 - t3 + t4) / var


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
def _kl_gumbel_infinity(p: Gumbel, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Laplace, Beta)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
def _kl_laplace_infinity(p: Laplace, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var = q.scale.pow(2)
    ratio = p.scale.pow(2) / var
    t1 = 0.5 * (2 * ratio / math.pi).log()
    t2 = 0.5 * p.loc.pow(2)
    t3 = p.loc * q.loc
    t4 = 0.5 * q.loc.pow(2)
    return -t1 + ratio + (t2 - t3 + t4) / var - 1


@register_kl(Normal, Beta)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Pareto)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p: Normal, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t1 = var_ratio.log() * 0.5
    t2 = mean_ratio - loc_ratio
    t3 = (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
    return -t1 + t2 + t3 - _HALF_LOG_2PI_E


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    diff = p.loc - q.loc
    ratio = p.scale / q.scale
    z = diff / p.scale
    t1 = ratio.log()
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * z.pow(2)).exp()
    t3 = diff * (math.sqrt(0.5) * z).erf()
    return -t1 + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Pareto, Beta)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p: Pareto, q: Distribution) -> Tensor:
    return _infinite_like(p.scale)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    prod = p.scale * q.rate
    t1 = (p.alpha / prod).log()
    t3 = p.alpha * prod / (p.alpha - 1)
    result = t1 - p.alpha.reciprocal() + t3 - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    common = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common
    t2 = rg.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    var2 = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / var2 - 1
    return _inf_where(p.alpha <= 2, result)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p: Poisson, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    t1 = width.log()
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = (rg.lgamma(q.concentration1) + rg.lgamma(q.concentration0)
          - rg.lgamma(q.concentration1 + q.concentration0))
    return _inf_where((p.high > 1.0) | (p.low < 0.0), t3 + t4 - t1 - t2)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponetial(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < 0.0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    t1 = width.log()
    t2 = rg.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < 0.0, -t1 + t2 + t3 + t4)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common = q.scale / (p.high - p.low)
    high = (p.high - q.loc) / q.scale
    low = (p.low - q.loc) / q.scale
    t1 = common.log() + 0.5 * (high + low)
    t2 = common * ((-high).exp() - (-low).exp())
    return t1 - t2


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.scale, t2 * (q.alpha + 1) - t1)


# ---- ContinuousBernoulli -------------------------------------------------------------------------
def _cb_cross_terms(p_mean: Tensor, q: ContinuousBernoulli) -> Tensor:
    # -E_p[log q(x)] for p of mean p_mean: -(mean logit_q + log(1 - q) + log C(q))
    return -p_mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _cb_cross_terms(p.mean, q)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuous_bernoulli_infinity(p: ContinuousBernoulli, q: Distribution) -> Tensor:
    return _infinite_like(p.probs)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    # infinite unless q's interval strictly contains [0, 1]
    return _inf_where((q.low >= 0.0) | (q.high <= 1.0), result)


def _infinite_kl(param: str) -> Callable[[Any, Any], Tensor]:
    """KL(p || q) where p puts mass where q has none: inf, shaped as p's parameter `param`."""
    def kl(p: Any, q: Any) -> Tensor:
        return _infinite_like(getattr(p, param))

    return kl


# ContinuousBernoulli lives on [0, 1]: these p's reach outside it
for _p, _param in ((Exponential, "rate"), (Gamma, "concentration"), (Gumbel, "loc"),
                   (Laplace, "loc"), (Normal, "loc"), (Pareto, "scale")):
    register_kl(_p, ContinuousBernoulli)(_infinite_kl(_param))
del _p, _param


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = -p.entropy() + _cb_cross_terms(p.mean, q)
    # infinite unless p's interval lies strictly inside (0, 1)
    return _inf_where((p.high >= 1.0) | (p.low <= 0.0), result)
