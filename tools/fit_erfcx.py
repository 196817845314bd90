"""Fits the Q polynomial of erf_f32's large branch (rust/kernels/src/elementwise.rs):
erfc(x) exp(x^2) on [1, 4] as a degree-8 polynomial in s = (2x - 5) / 3, weighted by exp(-x^2)
so that erf's absolute error 1 - Q exp(-x^2) is even (Lawson's iterations toward the weighted
minimax), and prints its coefficients as float32, constant term first.

    python tools/fit_erfcx.py [--degree 8]
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.polynomial import chebyshev
from scipy.special import erfcx


def fit(degree: int, iterations: int = 30) -> tuple:
    """(monomial coefficients in s, constant first; the weighted max error before rounding)."""
    x = np.linspace(1, 4, 40001)
    s = (2 * x - 5) / 3
    f, w = erfcx(x), np.exp(-x ** 2)
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
    args = p.parse_args()
    coef, err = fit(args.degree)
    print(f"max |erf error| before float32 rounding: {err:.2e}")
    for c in coef.astype(np.float32):
        print(np.format_float_positional(c, unique=True))


if __name__ == "__main__":
    main()
