"""The kernel table: the one-pass kernels a backend may offer beside its array namespace.

Each entry has one fixed signature, the same on every backend; a backend without a kernel
leaves its entry None, and a kernel may also answer None for arrays it does not take (a
strided or integer array, say). Either way the op computes with its array formulation. Ops
read `xp.kernels.<name>`, never `getattr(xp, name)`: a kernel is never confused with an array
namespace function of the same name (NumPy's and CuPy's `select`, a future `cupy.erf`).

Every kernel returns arrays of its input's dtype (erf of float16 is float16).

The special functions NumPy and CuPy's main namespaces lack (lgamma ... log_ndtr) come from
scipy.special on the CPU and cupyx.scipy.special on CUDA, each imported on first use. They take
float arrays: float32 and float64 are computed in their dtype, float16 and bfloat16 in float32
and rounded, as torch's kernels compute them."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

Kernel = Optional[Callable[..., Any]]


@dataclasses.dataclass
class Kernels:
    """A backend's kernels (see the module docstring); each field's comment is its signature."""

    erf: Kernel = None  # (x) -> erf(x)
    gelu: Kernel = None  # (x) -> exact GELU of x
    sigmoid: Kernel = None  # (x) -> 1 / (1 + exp(-x)), as _ops/activation.py's formulation
    relu: Kernel = None  # (x) -> where(x < 0, 0, x): torch's signed zero
    unary: Kernel = None  # (x, name) -> sqrt / reciprocal / log of x, without warnings
    gelu_backward: Kernel = None  # (grad, x) -> grad * GELU'(x)
    softmax: Kernel = None  # (x, log) -> (log_)softmax over the last dim
    softmax_backward: Kernel = None  # (grad, out, log) -> its gradient from the output
    powi: Kernel = None  # (x, exponent) -> x ** exponent as torch's products
    threshold_backward: Kernel = None  # (grad, out) -> grad where out > 0 (nan passes), else 0
    where: Kernel = None  # (mask, a, other) -> where(mask, a, other)
    max_pool2d: Kernel = None  # (x, kernel, stride, padding, dilation, out) -> (max, index)
    max_pool2d_backward: Kernel = None  # (grad, indices, shape) -> zeros(shape) + grad at indices
    im2col: Kernel = None  # see cuda_kernels.im2col
    col2im: Kernel = None  # (cols, size, d, pads, s, channels_first) -> _ops/conv.py's col2im
    layer_norm: Kernel = None  # (x (N, D), weight, bias, eps) -> y; weight/bias (D,) or None
    layer_norm_backward: Kernel = None  # (g, x, weight, eps, want_xhat) -> (dx, xhat or None)
    # layer_norm that also answers each row's float64 (mean, rstd), and the backward reading
    # them instead of computing them again (the same bits as the two above):
    layer_norm_stats: Kernel = None  # (x, weight, bias, eps) -> (y, stats (N, 2))
    layer_norm_backward_stats: Kernel = None  # (g, x, weight, eps, want_xhat, stats) -> as above
    sgd_step: Kernel = None  # (param, grad, buf, args) -> bool: stepped in place
    adam_step: Kernel = None  # (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args) -> bool
    adam_step_multi: Kernel = None  # the same over lists of arrays (one step count), one launch
    # (param, grad, square_avg, grad_avg or None, momentum_buffer or None, args) -> bool
    rmsprop_step: Kernel = None
    adagrad_step: Kernel = None  # (param, grad, state_sum, args) -> bool: stepped in place
    # (grad, found_inf, inv_scale) -> bool: grad *= inv_scale, found_inf[0] = 1 if it held inf/NaN
    non_finite_check_and_unscale: Kernel = None
    # special functions of a float array (see the module docstring)
    lgamma: Kernel = None  # (x) -> log |gamma(x)|
    digamma: Kernel = None  # (x) -> gamma'(x) / gamma(x)
    polygamma: Kernel = None  # (n, x) -> digamma's n-th derivative at x, for an int n >= 1
    erfinv: Kernel = None  # (x) -> the inverse of erf
    erfc: Kernel = None  # (x) -> 1 - erf(x), without the cancellation
    erfcx: Kernel = None  # (x) -> exp(x^2) erfc(x)
    i0: Kernel = None  # (x) -> the modified Bessel function of the first kind, order 0
    i0e: Kernel = None  # (x) -> exp(-|x|) i0(x)
    i1: Kernel = None  # (x) -> the modified Bessel function of the first kind, order 1
    i1e: Kernel = None  # (x) -> exp(-|x|) i1(x)
    ndtri: Kernel = None  # (p) -> the standard normal quantile of p
    log_ndtr: Kernel = None  # (x) -> log of the standard normal CDF at x
