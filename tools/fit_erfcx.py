"""Fits the polynomials of erf_f32's large branch (rust/kernels/src/elementwise.rs), in
s = (2x - 5) / 3 over x in [1, 4], by Lawson's iterations toward the minimax of erf's absolute
error, and prints their coefficients as float32, constant term first:

- Q (`--degree 8`, the default): erfc(x) exp(x^2), weighted by exp(-x^2), for the branch that
  computes 1 - Q exp(-x^2) (GELU's gradient, which needs the exp anyway);
- R (`--erfc --degree 14`): erfc(x) itself, for erf alone, 1 - R without an exp.

    python tools/fit_erfcx.py [--degree 8]
    python tools/fit_erfcx.py --erfc --degree 14
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.polynomial import chebyshev
from scipy.special import erfc, erfcx


def fit(degree: int, iterations: int = 30, direct: bool = False) -> tuple:
    """(monomial coefficients in s, constant first; the weighted max error before rounding), of
    erfcx, or with direct of erfc."""
    x = np.linspace(1, 4, 40001)
    s = (2 * x - 5) / 3
    f, w = (erfc(x), np.ones_like(x)) if direct else (erfcx(x), np.exp(-x ** 2))
    lawson = np.ones_like(x)
    vander = chebyshev.chebvander(s, degree)
    for _ in range(iterations):
        rows = (w * np.sqrt(lawson))[:, None]
        c, *_ = np.linalg.lstsq(vander * rows, f * rows[:, 0], rcond=None)
        err = np.abs((vander @ c - f) * w)
        lawson = lawson * err / err.mean()
    return chebyshev.cheb2poly(c), float(err.max())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--degree", type=int, default=8)
    p.add_argument("--erfc", action="store_true", help="fit erfc itself (R), not erfcx (Q)")
    args = p.parse_args()
    coef, err = fit(args.degree, iterations=60 if args.erfc else 30, direct=args.erfc)
    print(f"max |erf error| before float32 rounding: {err:.2e}")
    for c in coef.astype(np.float32):
        print(np.format_float_positional(c, unique=True))


if __name__ == "__main__":
    main()
