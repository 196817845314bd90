"""The distributions the parity tests build under torch and rustgrad: a constructor over named
parameter arrays, values inside the support, and the methods and properties to compare.

Parameters are float64 NumPy arrays (ints where a parameter is a count); the tests turn them
into tensors of each library, float ones requiring grad."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

A = np.asarray

# a few symmetric positive-definite 3 x 3 matrices, and one lower Cholesky factor
SPD = A([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])
SPD2 = A([[1.0, -0.3, 0.0], [-0.3, 2.0, 0.4], [0.0, 0.4, 0.7]])
TRIL = A([[1.5, 0.0, 0.0], [0.4, 0.9, 0.0], [-0.2, 0.3, 1.2]])

# every method compared when the distribution has it (both libraries raising
# NotImplementedError counts as agreement)
VALUE_METHODS = ("log_prob", "cdf")
PROPERTIES = ("mean", "mode", "variance", "stddev")


@dataclass
class Case:
    name: str
    make: Callable[..., Any]  # (D, **params) -> distribution
    params: Dict[str, np.ndarray]
    value: np.ndarray  # points of the support (batch-broadcastable)
    icdf: bool = False  # compare icdf at QUANTILES
    entropy: bool = True
    int_value: bool = False  # values are indices (int64)
    no_grad: Tuple[str, ...] = ()  # parameters that stay constant (counts)
    no_backward: Tuple[str, ...] = ()  # outputs left out of the gradient comparison
    extra: Dict[str, Any] = field(default_factory=dict)


QUANTILES = A([[0.1, 0.5], [0.75, 0.98]])  # broadcast over a (2,) batch, two rows


def _normal(D, loc, scale):
    return D.Normal(loc, scale)


CASES: List[Case] = [
    Case("Normal", _normal, {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])}, A([[0.3, 2.0], [-1.0, 0.1]]),
         icdf=True),
    Case("Laplace", lambda D, loc, scale: D.Laplace(loc, scale), {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
         A([[0.3, 2.0], [-1.0, 0.1]]), icdf=True),
    Case("Cauchy", lambda D, loc, scale: D.Cauchy(loc, scale), {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
         A([[0.3, 2.0], [-1.0, 0.1]]), icdf=True),
    Case("Gumbel", lambda D, loc, scale: D.Gumbel(loc, scale), {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
         A([[0.3, 2.0], [-1.0, 0.1]]), icdf=True),
    Case("LogNormal", lambda D, loc, scale: D.LogNormal(loc, scale), {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
         A([[0.3, 2.0], [1.0, 0.1]]), icdf=True),
    Case("HalfNormal", lambda D, scale: D.HalfNormal(scale), {"scale": A([1.2, 0.7])}, A([[0.3, 2.0], [0.0, 0.1]]),
         icdf=True),
    Case("HalfCauchy", lambda D, scale: D.HalfCauchy(scale), {"scale": A([1.2, 0.7])}, A([[0.3, 2.0], [0.0, 0.1]]),
         icdf=True),
    Case("Exponential", lambda D, rate: D.Exponential(rate), {"rate": A([0.5, 2.0])}, A([[0.3, 2.0], [0.0, 0.1]]),
         icdf=True),
    Case("Uniform", lambda D, low, high: D.Uniform(low, high), {"low": A([0.0, -1.0]), "high": A([1.2, 0.7])},
         A([[0.3, 0.5], [1.0, -0.9]]), icdf=True),
    Case("Pareto", lambda D, scale, alpha: D.Pareto(scale, alpha), {"scale": A([0.5, 1.0]), "alpha": A([3.2, 2.7])},
         A([[0.6, 2.0], [1.5, 1.0]]), icdf=True),
    Case("StudentT", lambda D, df, loc, scale: D.StudentT(df, loc, scale),
         {"df": A([3.0, 5.5]), "loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])}, A([[0.3, 2.0], [-1.0, 0.1]])),
    Case("StudentT-low-df", lambda D, df: D.StudentT(df), {"df": A([0.7, 1.5, 2.5])}, A([0.3, 2.0, -1.0])),
    Case("Gamma", lambda D, concentration, rate: D.Gamma(concentration, rate),
         {"concentration": A([0.5, 3.0]), "rate": A([1.2, 0.7])}, A([[0.3, 2.0], [4.0, 0.1]]),
         # torch's igamma has no derivative in the concentration (test_gamma_cdf_gradients)
         no_backward=("cdf",)),
    Case("Chi2", lambda D, df: D.Chi2(df), {"df": A([0.5, 3.0])}, A([[0.3, 2.0], [4.0, 0.1]]),
         no_backward=("cdf",)),
    Case("Beta", lambda D, c1, c0: D.Beta(c1, c0), {"c1": A([0.5, 3.0]), "c0": A([1.2, 0.7])},
         A([[0.3, 0.8], [0.05, 0.5]])),
    Case("Dirichlet", lambda D, c: D.Dirichlet(c), {"c": A([[0.5, 3.0, 1.0], [2.0, 2.0, 0.3]])},
         A([[0.3, 0.2, 0.5], [0.1, 0.1, 0.8]])),
    Case("Dirichlet-corner-mode", lambda D, c: D.Dirichlet(c), {"c": A([[0.5, 0.3, 0.9], [2.0, 3.0, 0.5]])},
         A([0.3, 0.2, 0.5])),
    Case("Poisson", lambda D, rate: D.Poisson(rate), {"rate": A([0.5, 3.0])}, A([[0.0, 2.0], [5.0, 1.0]]),
         entropy=False),
    Case("Bernoulli", lambda D, probs: D.Bernoulli(probs), {"probs": A([0.3, 0.9, 0.5])}, A([0.0, 1.0, 1.0])),
    Case("Bernoulli-logits", lambda D, logits: D.Bernoulli(logits=logits), {"logits": A([0.3, -0.9])},
         A([[0.0, 1.0], [1.0, 1.0]])),
    Case("Binomial", lambda D, n, probs: D.Binomial(n, probs), {"n": A([5.0, 5.0]), "probs": A([0.3, 0.9])},
         A([[0.0, 4.0], [5.0, 2.0]]), no_grad=("n",)),
    Case("Binomial-logits", lambda D, n, logits: D.Binomial(n, logits=logits),
         {"n": A([3.0, 7.0]), "logits": A([0.3, -2.0])}, A([[0.0, 4.0], [3.0, 7.0]]), no_grad=("n",),
         entropy=False),
    Case("Geometric", lambda D, probs: D.Geometric(probs), {"probs": A([0.3, 0.9, 1.0])}, A([0.0, 4.0, 0.0])),
    Case("Geometric-logits", lambda D, logits: D.Geometric(logits=logits), {"logits": A([0.3, -0.9])},
         A([[0.0, 4.0], [1.0, 2.0]])),
    Case("Categorical", lambda D, probs: D.Categorical(probs), {"probs": A([[0.3, 0.9, 0.2], [1.0, 2.0, 3.0]])},
         A([[0, 2], [1, 1]]), int_value=True),
    Case("Categorical-logits", lambda D, logits: D.Categorical(logits=logits),
         {"logits": A([[0.3, 0.9, -0.2], [1.0, 2.0, 3.0]])}, A([0, 2]), int_value=True),
    Case("Categorical-zero-prob", lambda D, probs: D.Categorical(probs), {"probs": A([0.0, 0.4, 0.6])},
         A([1, 2]), int_value=True),
    Case("OneHotCategorical", lambda D, probs: D.OneHotCategorical(probs),
         {"probs": A([[0.3, 0.9, 0.2], [1.0, 2.0, 3.0]])}, A([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])),
    Case("RelaxedBernoulli", lambda D, t, probs: D.RelaxedBernoulli(t, probs),
         {"t": A([0.5, 1.0]), "probs": A([0.3, 0.6])}, A([[0.6, 0.2], [0.9, 0.01]]), entropy=False),
    Case("RelaxedBernoulli-logits", lambda D, t, logits: D.RelaxedBernoulli(t, logits=logits),
         {"t": A(0.7), "logits": A([0.3, -1.6])}, A([0.6, 0.2]), entropy=False),
    Case("RelaxedOneHotCategorical", lambda D, t, probs: D.RelaxedOneHotCategorical(t, probs),
         {"t": A([0.5]), "probs": A([0.3, 0.6, 0.1])}, A([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]), entropy=False),
    Case("MultivariateNormal", lambda D, loc, cov: D.MultivariateNormal(loc, cov), {"loc": A([0.5, 1.0, 0.0]),
         "cov": SPD}, A([[0.6, 0.3, 0.1], [1.0, 2.0, 3.0]])),
    Case("MultivariateNormal-batched", lambda D, loc, cov: D.MultivariateNormal(loc, cov),
         {"loc": A([[0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]), "cov": A([SPD, SPD2])},
         A([[[0.6, 0.3, 0.1], [1.0, 2.0, 3.0]]] * 2)),
    Case("MultivariateNormal-precision", lambda D, loc, prec: D.MultivariateNormal(loc, precision_matrix=prec),
         {"loc": A([0.5, 1.0, 0.0]), "prec": SPD2}, A([[0.6, 0.3, 0.1], [1.0, 2.0, 3.0]])),
    Case("MultivariateNormal-tril", lambda D, loc, tril: D.MultivariateNormal(loc, scale_tril=tril),
         {"loc": A([[0.5, 1.0, 0.0]]), "tril": TRIL}, A([[0.6, 0.3, 0.1], [1.0, 2.0, 3.0]])),
    Case("LowRankMultivariateNormal", lambda D, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
         {"loc": A([0.5, 1.0, 0.0]), "w": A([[2.0, 0.5], [0.5, 1.0], [0.1, 0.2]]), "d": A([1.0, 2.0, 0.5])},
         A([[0.6, 0.3, 0.1], [1.0, 2.0, 3.0]])),
    Case("MixtureSameFamily", lambda D, w, loc, scale: D.MixtureSameFamily(D.Categorical(w), D.Normal(loc, scale)),
         {"w": A([0.2, 0.8]), "loc": A([0.0, 2.0]), "scale": A([1.0, 0.5])}, A([0.3, 1.5, -2.0]), entropy=False),
    Case("MixtureSameFamily-mvn", lambda D, w, loc, cov: D.MixtureSameFamily(
         D.Categorical(w), D.MultivariateNormal(loc, cov)),
         {"w": A([[0.2, 0.8], [0.5, 0.5]]), "loc": A([[[0.0, 2.0, 1.0], [1.0, 0.0, -1.0]]] * 2),
          "cov": A([[SPD, SPD2], [SPD2, SPD]])},
         A([[0.3, 1.5, -2.0], [0.0, 0.0, 0.0]]), entropy=False),
    Case("Independent", lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
         {"loc": A([[0.0, 2.0], [1.0, 1.0]]), "scale": A([[1.0, 0.5], [2.0, 0.3]])}, A([[0.3, 1.5]])),
    Case("TransformedDistribution", lambda D, loc, scale: D.TransformedDistribution(
         D.Normal(loc, scale), [D.transforms.AffineTransform(1.0, 2.0), D.transforms.ExpTransform()]),
         {"loc": A([0.0, 2.0]), "scale": A([1.0, 0.5])}, A([[0.3, 1.5], [2.0, 20.0]]), icdf=True, entropy=False),
    Case("TransformedDistribution-decreasing", lambda D, loc, scale: D.TransformedDistribution(
         D.Normal(loc, scale), [D.transforms.AffineTransform(1.0, -2.0)]),
         {"loc": A([0.0, 2.0]), "scale": A([1.0, 0.5])}, A([[0.3, 1.5], [2.0, 20.0]]), icdf=True, entropy=False),
    Case("TransformedDistribution-stickbreaking", lambda D, loc, scale: D.TransformedDistribution(
         D.Normal(loc, scale), D.transforms.StickBreakingTransform()),
         {"loc": A([0.0, 2.0]), "scale": A([1.0, 0.5])}, A([[0.3, 0.5, 0.2], [0.1, 0.1, 0.8]]), entropy=False),
]

BY_NAME = {c.name: c for c in CASES}
