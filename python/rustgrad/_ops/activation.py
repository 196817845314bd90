"""Activations: relu, sigmoid, softplus, gelu, silu, mish, leaky_relu, elu/selu/celu,
hardtanh/relu6, hardsigmoid, hardswish, logsigmoid, softsign, tanhshrink, and the softmax family
(softmax, log_softmax, softmin, and the attention's safe softmax).

Forward on the input's arrays through `input._backend`; backward formulas in rustgrad ops, so
double backward works; grad_fn names and kernel names in errors as torch's. The activations
that take `inplace` write their result into the input as torch's in-place kernels do (see
`inplace_input` / `write_activation`)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

from .. import _core, _creation, _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
from ._unary import refuse_complex
from ._util import (
    _type_name,
    check_inplace,
    check_internal_overlap,
    const,
    floating,
    is_bf16,
    is_grad_enabled,
    opmath,
    quiet_fp,
    same_device,
    select_grad,
)
from .compare import where
from .copyslices import commit_inplace
from .joins import cat
from .pointwise import _erf_array, erf
from .reduce import _src

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_KAPPA = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946




def _require_float(input: Tensor, kernel: str) -> Any:
    """input's array; torch's refusal of an integral input to a floating-point-only kernel."""
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{_type_name(_dtype.from_np(d.dtype))}\''
        )
    return d




# ---- in place --------------------------------------------------------------------------
def inplace_input(input: Tensor, inplace: bool) -> Tensor:
    """What an activation computes from: for an in-place call with autograd, a copy of input's
    values with input's history, so that what the op saves for backward is not overwritten by
    the write."""
    if inplace and is_grad_enabled() and input.requires_grad:
        return _core.shallow_copy(input, input._data.copy())
    return input


def write_activation(input: Tensor, out: Tensor) -> Tensor:
    """Writes out into input as torch's in-place activations do: input takes out's node as its
    grad_fn (ReluBackward0, ...), or CopySlices when input is a view."""
    if not (is_grad_enabled() and out.requires_grad):
        return input.copy_(out)
    check_inplace(input)
    check_internal_overlap(input)
    commit_inplace(input, out)
    return input


def _finish(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return write_activation(input, out) if inplace else out


def stable_softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), stable for large |x| (for backward formulas and composite losses): the
    softplus op, whose gradient is sigmoid(x) everywhere (1/2 at 0, where a composite of
    clamp and abs would give 0)."""
    return softplus(x)


# ---- relu, sigmoid ---------------------------------------------------------------------
def _relu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's threshold_backward: zero where result <= 0, so a nan passes its gradient
    out = saved.result
    kernel = g._backend.kernels.threshold_backward
    if kernel is not None and not is_grad_enabled():  # no graph of the gradient to record
        dx = kernel(g._data, out._data)
        if dx is not None:
            return const(dx)
    return select_grad(g, out, ~(out._data <= 0), "ThresholdBackwardBackward0")


RELU = node("ReluBackward0", _relu_bw, result=True, forward=ELEMENTWISE)


@op(method="relu", function="relu", grad_fn=("ReluBackward0", "ThresholdBackwardBackward0"))
def relu(input: Tensor) -> Tensor:
    """max(input, 0), elementwise.

    The gradient is 1 where input > 0 and 0 elsewhere, including at 0.

    Example::

        >>> x = rustgrad.tensor([-1., 0., 2.], requires_grad=True)
        >>> x.relu()
        tensor([0., 0., 2.], grad_fn=<ReluBackward0>)
        >>> x.relu().sum().backward()
        >>> x.grad
        tensor([0., 0., 1.])
    """
    xp = input._backend
    d = input._data
    if d.dtype.kind == "b":
        raise NotImplementedError("Boolean inputs not supported for relu")
    if d.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    kernel = xp.kernels.relu
    out = None if kernel is None else kernel(d)
    if out is None:  # torch's clamp at 0: -0 stays -0 (NumPy's maximum gives +0), NaN passes
        out = xp.where(d < 0, d.dtype.type(0), d)
    return RELU.record(out, (input,))


def _sigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    out = saved.result
    return g * (out * (1 - out))


SIGMOID = node("SigmoidBackward0", _sigmoid_bw, result=True, forward=ELEMENTWISE)


@op(method="sigmoid", function="sigmoid", functional="sigmoid", grad_fn="SigmoidBackward0")
def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-input)), elementwise.

    The gradient is sigmoid(input) * (1 - sigmoid(input)), from the saved result.

    Example::

        >>> rustgrad.tensor([0., 2.]).sigmoid()
        tensor([0.5000, 0.8808])
    """
    xp = input._backend
    d = floating(input)
    if d.dtype.kind == "c":
        refuse_complex("sigmoid", input)
    w = opmath(d)
    fused = xp.kernels.sigmoid
    out = None if fused is None else fused(w)
    if out is None:
        # exp of a negative argument only, so large |x| neither overflows nor loses precision
        e = xp.exp(-xp.abs(w))
        out = xp.where(w >= 0, 1 / (1 + e), e / (1 + e))
    return SIGMOID.record(out.astype(d.dtype, copy=False), (input,))


# ---- softplus, gelu, silu, mish, logsigmoid --------------------------------------------
def _softplus_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    beta, threshold = ctx
    xb = saved.self * beta
    return where(xb > threshold, g, g * xb.sigmoid())


SOFTPLUS = node("SoftplusBackward0", _softplus_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="softplus", grad_fn="SoftplusBackward0", autocast=dict(cuda="fp32"))
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * input)) / beta, and input itself where beta * input > threshold.

    Args:
        beta (float, optional): the sharpness. Default: 1.
        threshold (float, optional): above this, beta * input is returned as is (divided by
            beta), for stability. Default: 20.

    Example::

        >>> rustgrad.nn.functional.softplus(rustgrad.tensor([0., 30.]))
        tensor([ 0.6931, 30.0000])
    """
    d = _require_float(input, "softplus_cpu")
    xp = input._backend
    w = opmath(d)
    with quiet_fp(xp):
        bx = w * w.dtype.type(beta)
        # max(bx, 0) + log1p(exp(-|bx|)): no overflow for a large threshold
        soft = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / w.dtype.type(beta)
        out = xp.where(bx > threshold, w, soft).astype(d.dtype, copy=False)
    return SOFTPLUS.record(out, (input,), (beta, threshold), self=input)


def _gelu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a = saved.self
    if ctx == "tanh":
        inner = _SQRT_2_OVER_PI * (a + _KAPPA * a * a * a)
        t = inner.tanh()
        left = 0.5 * a
        right = 1 + t
        left_derivative = 0.5 * right
        right_derivative = left * (1 - t * t) * (_SQRT_2_OVER_PI * (1 + 3 * _KAPPA * a * a))
        return g * (left_derivative + right_derivative)
    fused = g._backend.kernels.gelu_backward
    if fused is not None and not is_grad_enabled():  # no graph of the gradient to record
        gd, ad = g._data, a._data
        if is_bf16(ad.dtype) and gd.dtype == ad.dtype:  # torch's kernel: float32, rounded once
            out = fused(gd.astype("float32"), ad.astype("float32"))
            if out is not None:
                return const(out.astype(ad.dtype))
        out = fused(gd, ad)
        if out is not None:
            return const(out)
    cdf = 0.5 * (1 + erf(a * math.sqrt(0.5)))
    pdf = (-0.5 * a * a).exp() * _INV_SQRT_2PI
    return g * (cdf + a * pdf)


GELU = node("GeluBackward0", _gelu_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="gelu", grad_fn="GeluBackward0")
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """input * Phi(input) (Phi the standard normal CDF), or its tanh approximation.

    Args:
        approximate (str, optional): "none" for the exact form, "tanh" for the tanh
            approximation. Default: "none".

    Example::

        >>> rustgrad.nn.functional.gelu(rustgrad.tensor([-1., 0., 1.]))
        tensor([-0.1587,  0.0000,  0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    d = _require_float(input, "GeluKernelImpl")
    xp = input._backend
    w = opmath(d)
    with quiet_fp(xp):
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (w + _KAPPA * w * w * w)
            out = 0.5 * w * (1 + xp.tanh(inner))
        else:
            fused = xp.kernels.gelu
            out = None if fused is None else fused(w)
            if out is None:
                out = w * 0.5 * (1 + _erf_array(xp, w * w.dtype.type(math.sqrt(0.5))))
    return GELU.record(out.astype(d.dtype, copy=False), (input,), approximate, self=input)


def _silu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a = saved.self
    s = a.sigmoid()
    return g * (s * (1 + a * (1 - s)))


SILU = node("SiluBackward0", _silu_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="silu", grad_fn="SiluBackward0")
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """input * sigmoid(input), elementwise (also called swish).

    Example::

        >>> rustgrad.nn.functional.silu(rustgrad.tensor([0., 1.]))
        tensor([0.0000, 0.7311])
    """
    _require_float(input, "silu_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    xp = src._backend
    w = opmath(d)
    with quiet_fp(xp):
        e = xp.exp(-xp.abs(w))
        sig = xp.where(w >= 0, 1 / (1 + e), e / (1 + e))
        out = (w * sig).astype(d.dtype, copy=False)
    return _finish(input, SILU.record(out, (src,), self=src), inplace)


def _mish_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    tsp = stable_softplus(x).tanh()
    return g * (tsp + x * x.sigmoid() * (1 - tsp * tsp))


MISH = node("MishBackward0", _mish_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="mish", grad_fn="MishBackward0")
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """input * tanh(softplus(input))."""
    _require_float(input, "mish_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    xp = src._backend
    w = opmath(d)
    with quiet_fp(xp):
        sp = xp.maximum(w, 0) + xp.log1p(xp.exp(-xp.abs(w)))
        out = (w * xp.tanh(sp)).astype(d.dtype, copy=False)
    return _finish(input, MISH.record(out, (src,), self=src), inplace)


def _logsigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * (-saved.self).sigmoid()


LOGSIGMOID = node("LogSigmoidBackward0", _logsigmoid_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="logsigmoid", grad_fn="LogSigmoidBackward0")
def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(input)), computed stably."""
    d = _require_float(input, "log_sigmoid_cpu")
    xp = input._backend
    w = opmath(d)
    with quiet_fp(xp):
        out = (xp.minimum(w, 0) - xp.log1p(xp.exp(-xp.abs(w)))).astype(d.dtype, copy=False)
    return LOGSIGMOID.record(out, (input,), self=input)


# ---- leaky_relu, elu, selu, celu -------------------------------------------------------
def _leaky_relu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    return select_grad(g, x, x._data > 0, "LeakyReluBackwardBackward0", ctx)


# the in-place form (LeakyReluBackward1) saves the input too, a copy taken before the write
# (torch's saves the result)
LEAKY_RELU = node("LeakyReluBackward0", _leaky_relu_bw, saved=("self",), forward=ELEMENTWISE)
LEAKY_RELU_ = node("LeakyReluBackward1", _leaky_relu_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="leaky_relu", grad_fn=("LeakyReluBackward0", "LeakyReluBackward1", "LeakyReluBackwardBackward0"))
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where positive, else negative_slope * input.

    Args:
        negative_slope (float, optional): the slope for negative entries. Default: 0.01.

    Example::

        >>> rustgrad.nn.functional.leaky_relu(rustgrad.tensor([-2., 3.]), 0.1)
        tensor([-0.2000,  3.0000])
    """
    _require_float(input, "leaky_relu_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    out = src._backend.where(d > 0, d, d * d.dtype.type(negative_slope)).astype(d.dtype,
                                                                                copy=False)
    spec = LEAKY_RELU_ if inplace else LEAKY_RELU
    return _finish(input, spec.record(out, (src,), negative_slope, self=src), inplace)


def _elu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    alpha, scale, input_scale = ctx
    neg = g * (alpha * scale * input_scale) * (x * input_scale).exp()
    # torch's double backward differentiates the exponential only where x < 0 (not at 0); a
    # nan input takes the exponential's branch, so its gradient is nan (torch's vectorized
    # kernel, which every tensor of more than a few elements runs)
    neg = where(x >= 0, g * (alpha * scale * input_scale), neg)
    return where(x > 0, g * scale if scale != 1 else g, neg)


# the in-place forms (EluBackward1, CeluBackward1) save the input too, a copy taken before
# the write (torch's save the result)
ELU = node("EluBackward0", _elu_bw, saved=("self",), forward=ELEMENTWISE)
ELU_ = node("EluBackward1", _elu_bw, saved=("self",), forward=ELEMENTWISE)
CELU = node("CeluBackward0", _elu_bw, saved=("self",), forward=ELEMENTWISE)
CELU_ = node("CeluBackward1", _elu_bw, saved=("self",), forward=ELEMENTWISE)


def _elu(input: Tensor, alpha: float, scale: float, input_scale: float, inplace: bool,
         spec: Any) -> Tensor:
    """scale * (input where positive, else alpha * (exp(input * input_scale) - 1)): elu, selu
    and celu are this kernel with other constants, as in torch."""
    _require_float(input, "elu_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    xp = src._backend
    with quiet_fp(xp):
        neg = alpha * xp.expm1(xp.minimum(d, 0) * input_scale)
        out = (scale * xp.where(d > 0, d, neg)).astype(d.dtype, copy=False)
    return _finish(input, spec.record(out, (src,), (alpha, scale, input_scale), self=src),
                   inplace)


@op(functional="elu", grad_fn=("EluBackward0", "EluBackward1"))
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where positive, else alpha * (exp(input) - 1).

    Args:
        alpha (float, optional): the negative saturation value. Default: 1.

    Example::

        >>> rustgrad.nn.functional.elu(rustgrad.tensor([-1., 2.]))
        tensor([-0.6321,  2.0000])
    """
    return _elu(input, alpha, 1.0, 1.0, inplace, ELU_ if inplace else ELU)


@op(function="selu", functional="selu", grad_fn=("EluBackward0", "EluBackward1"))
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(input, alpha) with the self-normalizing constants."""
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, ELU_ if inplace else ELU)


@op(function="celu", functional="celu", grad_fn=("CeluBackward0", "CeluBackward1"))
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where positive, else alpha * (exp(input / alpha) - 1)."""
    return _elu(input, alpha, 1.0, 1.0 / alpha, inplace, CELU_ if inplace else CELU)


# ---- hardtanh, relu6, hardsigmoid, hardswish -------------------------------------------
def _hardtanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch: the gradient is zero at and beyond the bounds (exclusive, unlike clamp)
    x = saved.self
    lo, hi = ctx
    xd = x._data
    return select_grad(g, x, (xd > lo) & (xd < hi), "HardtanhBackwardBackward0")


HARDTANH = node("HardtanhBackward0", _hardtanh_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="hardtanh", grad_fn=("HardtanhBackward0", "HardtanhBackwardBackward0"))
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val].

    Args:
        min_val (float, optional): the lower bound. Default: -1.
        max_val (float, optional): the upper bound. Default: 1.

    The gradient is 1 strictly between the bounds and 0 at or outside them.

    Example::

        >>> rustgrad.nn.functional.hardtanh(rustgrad.tensor([-2., 0.5, 2.]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _hardtanh(input, min_val, max_val, inplace)


def _hardtanh(input: Tensor, min_val: float, max_val: float, inplace: bool) -> Tensor:
    # crossed bounds give max_val everywhere, as clamp (only hardtanh refuses them)
    src = inplace_input(input, inplace)
    d = src._data
    out = src._backend.clip(d, min_val, max_val).astype(d.dtype, copy=False)
    return _finish(input, HARDTANH.record(out, (src,), (min_val, max_val), self=src), inplace)


@op(functional="relu6", grad_fn=("HardtanhBackward0", "HardtanhBackwardBackward0"))
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6), elementwise (torch's hardtanh(input, 0, 6)).

    Example::

        >>> rustgrad.nn.functional.relu6(rustgrad.tensor([-1., 3., 8.]))
        tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def _hardsigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    # torch's kernel multiplies by the float literal 1.0f / 6.0f, in every dtype
    return where((x > -3) & (x < 3), g * 0.1666666716337204, 0.0)


HARDSIGMOID = node("HardsigmoidBackward0", _hardsigmoid_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="hardsigmoid", grad_fn="HardsigmoidBackward0")
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(input / 6 + 1/2, 0, 1), elementwise.

    Example::

        >>> rustgrad.nn.functional.hardsigmoid(rustgrad.tensor([-4., 0., 4.]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    _require_float(input, "hardsigmoid_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    w = opmath(d)
    out = (src._backend.clip(w + 3, 0, 6) / 6).astype(d.dtype, copy=False)
    return _finish(input, HARDSIGMOID.record(out, (src,), self=src), inplace)


def _hardswish_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15: the bounds are exclusive (zero at -3, the gradient itself at 3)
    x = saved.self
    # a nan input takes the middle branch: its gradient is nan (torch's vectorized kernel)
    mid = where(x >= 3, g, g * (x / 3 + 0.5))
    return where(x <= -3, 0.0, mid)


HARDSWISH = node("HardswishBackward0", _hardswish_bw, saved=("self",), forward=ELEMENTWISE)


@op(functional="hardswish", grad_fn="HardswishBackward0")
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """input * hardsigmoid(input), elementwise.

    Example::

        >>> rustgrad.nn.functional.hardswish(rustgrad.tensor([-4., 1., 4.]))
        tensor([-0.0000, 0.6667, 4.0000])
    """
    _require_float(input, "hardswish_cpu")
    src = inplace_input(input, inplace)
    d = src._data
    w = opmath(d)
    out = (w * src._backend.clip(w + 3, 0, 6) / 6).astype(d.dtype, copy=False)
    return _finish(input, HARDSWISH.record(out, (src,), self=src), inplace)


# ---- softsign, tanhshrink (composites, as in torch) ------------------------------------
@op(functional="softsign")
def softsign(input: Tensor) -> Tensor:
    """input / (1 + |input|)."""
    return input / (input.abs() + 1)


@op(functional="tanhshrink")
def tanhshrink(input: Tensor) -> Tensor:
    """input - tanh(input)."""
    return input - input.tanh()


# ---- softmax, log_softmax --------------------------------------------------------------
def _softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(input: Tensor, dim: Any, dtype: Any, name: str) -> Any:
    if dtype is not None:
        input = input.to(dtype)
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        last = d.ndim <= 1 or dim is not None and _wrap_dim(dim, d.ndim) == d.ndim - 1
        kernel = f"{name}_lastdim_kernel_impl" if last else "softmax_kernel_impl"
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{_type_name(_dtype.from_np(d.dtype))}\''
        )
    if dim is None:
        dim = _softmax_dim(d.ndim, name)
    return input, _wrap_dim(dim, d.ndim)




def _fused_softmax(xp: Any, src: Any, dim: int, log: bool) -> Any:
    """The backend's one-pass kernel over the last dim, or None (the NumPy formulation runs)."""
    kernel = xp.kernels.softmax
    if kernel is None or dim != src.ndim - 1:
        return None
    return kernel(src, log)


def _fused_softmax_bw(g: Tensor, out: Tensor, dim: int, log: bool) -> Any:
    """The backend's one-pass gradient where no graph of it is recorded, or None."""
    kernel = g._backend.kernels.softmax_backward
    if kernel is None or is_grad_enabled() or dim != out._data.ndim - 1:
        return None
    gd, od = g._data, out._data
    if is_bf16(od.dtype) and gd.dtype == od.dtype:  # torch's kernel: in float32, rounded once
        res = kernel(gd.astype("float32"), od.astype("float32"), log)
        return None if res is None else const(res.astype(od.dtype))
    res = kernel(gd, od, log)
    return None if res is None else const(res)


def _softmax_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    out = saved.result
    fused = _fused_softmax_bw(g, out, dim, False)
    if fused is not None:
        return fused
    return (g - (g * out).sum(dim, keepdim=True)) * out


SOFTMAX = node("SoftmaxBackward0", _softmax_bw, result=True, forward=ELEMENTWISE)
SAFE_SOFTMAX = node("SafeSoftmaxBackward0", _softmax_bw, result=True, forward=ELEMENTWISE)


@op(method="softmax", function="softmax", grad_fn="SoftmaxBackward0", autocast=dict(cuda="fp32_set_opt_dtype"))
def softmax(input: Tensor, dim: Optional[int] = None, dtype: Any = None,
            _stacklevel: int = 3) -> Tensor:
    """exp(input) / exp(input).sum(dim), computed stably by shifting with the max along dim.

    Args:
        dim (int): the dim whose entries sum to 1 (leaving it out is deprecated, as in torch).
        dtype (rustgrad.dtype, optional): the dtype input is cast to first.

    Example::

        >>> rustgrad.tensor([[0., 0.], [0., 1000.]]).softmax(dim=1)
        tensor([[0.5000, 0.5000],
                [0.0000, 1.0000]])
    """
    input, dim = _softmax_input(input, dim, dtype, "softmax")
    xp = input._backend
    d = input._data
    src = opmath(_src(d))
    out = None if src.size == 0 else _fused_softmax(xp, src, dim, False)
    if src.size == 0:
        out = src.copy()
    elif out is None:
        with quiet_fp(xp):
            e = xp.exp(src - src.max(axis=dim, keepdims=True))
            out = e / e.sum(axis=dim, keepdims=True)
    out = out.astype(d.dtype, copy=False)  # bfloat16: computed in float32, rounded once
    return SOFTMAX.record(out.reshape(d.shape), (input,), dim)


def safe_softmax(input: Tensor, dim: int) -> Tensor:
    """torch's _safe_softmax (scaled_dot_product_attention): softmax, with rows whose entries
    are all -inf giving 0 instead of NaN, in value and gradient."""
    input, dim = _softmax_input(input, dim, None, "softmax")
    dt = input._data.dtype
    xd = opmath(input._data)
    xp = input._backend
    mx = xd.max(axis=dim, keepdims=True)
    dead = mx == -math.inf
    with quiet_fp(xp):
        e = xp.exp(xd - xp.where(dead, 0, mx))
        s = e.sum(axis=dim, keepdims=True)
        out = xp.where(dead, 0, e / xp.where(dead, 1, s)).astype(dt, copy=False)
    return SAFE_SOFTMAX.record(out, (input,), dim)


def _log_softmax_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    out = saved.result
    fused = _fused_softmax_bw(g, out, dim, True)
    if fused is not None:
        return fused
    return g - out.exp() * g.sum(dim, keepdim=True)


def _log_softmax_fw(tangents: Any, saved: Any, dim: Any) -> Any:
    t = tangents[0]
    return t - (t * saved.result.exp()).sum(dim, keepdim=True)


LOG_SOFTMAX = node("LogSoftmaxBackward0", _log_softmax_bw, result=True, forward=_log_softmax_fw)


@op(method="log_softmax", function="log_softmax", grad_fn="LogSoftmaxBackward0",
    autocast=dict(cuda="fp32_set_opt_dtype"))
def log_softmax(input: Tensor, dim: Optional[int] = None, dtype: Any = None,
                _stacklevel: int = 3) -> Tensor:
    """input - logsumexp(input, dim), computed stably by shifting with the max along dim.

    Args:
        dim (int): the dim to normalize over (leaving it out is deprecated, as in torch).
        dtype (rustgrad.dtype, optional): the dtype input is cast to first.

    Example::

        >>> rustgrad.tensor([0., 0.]).log_softmax(dim=0)
        tensor([-0.6931, -0.6931])
    """
    input, dim = _softmax_input(input, dim, dtype, "log_softmax")
    xp = input._backend
    d = input._data
    src = opmath(_src(d))
    out = None if src.size == 0 else _fused_softmax(xp, src, dim, True)
    if src.size == 0:
        out = src.copy()
    elif out is None:
        with quiet_fp(xp):
            shifted = src - src.max(axis=dim, keepdims=True)
            out = shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))
    out = out.astype(d.dtype, copy=False)  # bfloat16: computed in float32, rounded once
    return LOG_SOFTMAX.record(out.reshape(d.shape), (input,), dim)


@op(functional="softmin", grad_fn="SoftmaxBackward0", autocast=dict(cuda="fp32_set_opt_dtype"))
def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """softmax(-input, dim).

    Args:
        dim (int): the dim whose entries sum to 1.
        dtype (rustgrad.dtype, optional): the dtype input is cast to first.

    Example::

        >>> rustgrad.nn.functional.softmin(rustgrad.tensor([0., 0.]), dim=0)
        tensor([0.5000, 0.5000])
    """
    if dim is None:
        dim = _softmax_dim(input.ndim, "softmin")
    x = input.to(dtype) if dtype is not None else input
    return softmax(-x, dim)


# ---- prelu ---------------------------------------------------------------------------------
def _prelu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved.self, saved.weight
    wshape_b, dims = ctx
    pos = x > 0
    gx = where(pos, g, w.reshape(wshape_b) * g)
    gw = where(pos, 0.0, x * g)
    if dims:
        gw = gw.sum(dims)
    return gx, gw.reshape(w.shape)


PRELU = node("PreluKernelBackward0", _prelu_bw, saved=("self", "weight"))


@op(method="prelu", function="prelu", functional="prelu", grad_fn="PreluKernelBackward0",
    autocast=dict(cuda="lower", cpu="lower"))
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), with one weight per channel (dim 1) or one for all."""
    wd, xd = weight._data, input._data
    same_device(xd, wd)
    if wd.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {wd.ndim}")
    channels = xd.shape[1] if xd.ndim >= 2 else 1
    n = wd.size
    if n != 1 and n != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter "
                           f"numbers = {n} and channel size = {channels}.")
    if n == 1:
        wshape_b: tuple = ()
        dims = tuple(range(xd.ndim))
    else:
        wshape_b = (1, n) + (1,) * (xd.ndim - 2)
        dims = tuple(k for k in range(xd.ndim) if k != 1)
    xp = input._backend
    out = xp.where(xd > 0, xd, wd.reshape(wshape_b) * xd).astype(xd.dtype, copy=False)
    return PRELU.record(out, (input, weight), (wshape_b, dims), self=input, weight=weight)


# ---- hardshrink, softshrink, threshold -------------------------------------------------------
def _shrink_grad_bw(gg: Tensor, saved: Any, ctx: Any) -> Any:
    keep, name = ctx
    return shrink_grad(gg, saved.self, keep, name), const(gg._backend.zeros_like(gg._data))


# the backwards of hardshrink's and softshrink's backward nodes (double backward): the same
# selection of the incoming gradient, zero for the input (the ops are piecewise linear)
_SHRINK_GRAD = {name: node(name, _shrink_grad_bw, saved=("self",)) for name in (
    "HardshrinkBackwardBackward0", "SoftshrinkBackwardBackward0")}


def shrink_grad(g: Tensor, x: Tensor, keep: Any, name: str) -> Tensor:
    """g where the bool array keep holds, else 0 (a selection, so a NaN or inf in g is cut
    off), recorded as torch's `name` node over (g, x)."""
    gd = g._data
    out = g._backend.where(keep, gd, gd.dtype.type(0)).astype(gd.dtype, copy=False)
    return _SHRINK_GRAD[name].record(out, (g, x), (keep, name), self=x)


def _outside(xd: Any, lambd: float) -> Any:
    # NaN is outside: its comparisons are false, so it passes through as torch's kernels do
    return ~((xd >= -lambd) & (xd <= lambd))


def _hardshrink_bw(g: Tensor, saved: Any, lambd: Any) -> Any:
    x = saved.self
    return shrink_grad(g, x, _outside(x._data, lambd), "HardshrinkBackwardBackward0")


HARDSHRINK = node("HardshrinkBackward0", _hardshrink_bw, saved=("self",),
                  getters={"lambd": lambda s, c: c}, forward=ELEMENTWISE)


@op(method="hardshrink", function="hardshrink", functional="hardshrink",
    grad_fn=("HardshrinkBackward0", "HardshrinkBackwardBackward0"))
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input where |input| > lambd, else 0.

    Args:
        input (Tensor): the input tensor (floating point).
        lambd (float, optional): the half-width of the zeroed band. Default: 0.5.

    The gradient is 1 outside [-lambd, lambd] and 0 inside it, bounds included.

    Example::

        >>> rustgrad.nn.functional.hardshrink(rustgrad.tensor([-1., 0.3, 0.5, 2.]))
        tensor([-1.,  0.,  0.,  2.])
    """
    d = _require_float(input, "hardshrink_cpu")
    xp = input._backend
    out = xp.where(_outside(d, lambd), d, d.dtype.type(0)).astype(d.dtype, copy=False)
    return HARDSHRINK.record(out, (input,), lambd, self=input)


def _softshrink_bw(g: Tensor, saved: Any, lambd: Any) -> Any:
    x = saved.self
    return shrink_grad(g, x, _outside(x._data, lambd), "SoftshrinkBackwardBackward0")


SOFTSHRINK = node("SoftshrinkBackward0", _softshrink_bw, saved=("self",),
                  getters={"lambd": lambda s, c: c}, forward=ELEMENTWISE)


@op(functional="softshrink", grad_fn=("SoftshrinkBackward0", "SoftshrinkBackwardBackward0"))
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input moved lambd towards 0, and 0 where |input| <= lambd.

    Args:
        input (Tensor): the input tensor (floating point).
        lambd (float, optional): the shrinkage, at least 0. Default: 0.5.

    Example::

        >>> rustgrad.nn.functional.softshrink(rustgrad.tensor([-1., 0.3, 2.]))
        tensor([-0.5000,  0.0000,  1.5000])
    """
    d = _require_float(input, "softshrink_check")
    if not lambd >= 0:
        # torch reads the bound of the dtype's range as a float32 would print it
        hi = "3.40282e+38" if d.dtype.itemsize >= 4 else "65504"
        if d.dtype.itemsize == 8:
            hi = "1.79769e+308"
        raise RuntimeError(f"lambda must be in range [0, {hi}] for input dtype "
                           f"{_type_name(input.dtype)}, but found {lambd:g}")
    xp = input._backend
    w = opmath(d)
    lam = w.dtype.type(lambd)
    with quiet_fp(xp):
        # the band gives input * 0 (-0 for a negative input, NaN stays NaN), as torch's kernel
        out = xp.where(w > lam, w - lam, xp.where(w < -lam, w + lam, w * 0))
    return SOFTSHRINK.record(out.astype(d.dtype, copy=False), (input,), lambd, self=input)


def _threshold_bw(g: Tensor, saved: Any, threshold: Any) -> Any:
    x = saved.self
    # NaN passes its gradient, as its value (torch compares input <= threshold)
    return select_grad(g, x, ~(x._data <= threshold), "ThresholdBackwardBackward0")


# the in-place form (ThresholdBackward1) saves the input too, a copy taken before the write
THRESHOLD = node("ThresholdBackward0", _threshold_bw, saved=("self",),
                 getters={"threshold": lambda s, c: c}, forward=ELEMENTWISE)
THRESHOLD_ = node("ThresholdBackward1", _threshold_bw, saved=("self",),
                  getters={"threshold": lambda s, c: c}, forward=ELEMENTWISE)


@op(function="threshold", functional="threshold",
    grad_fn=("ThresholdBackward0", "ThresholdBackward1", "ThresholdBackwardBackward0"))
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """input where input > threshold, else value.

    Args:
        threshold (float): entries at or below it are replaced.
        value (float): what they are replaced by (cast to input's dtype).

    Example::

        >>> rustgrad.nn.functional.threshold(rustgrad.tensor([-1., 0.5, 2.]), 0.5, 9.)
        tensor([9., 9., 2.])
    """
    if input._data.dtype.kind == "b":
        raise RuntimeError('"threshold_cpu" not implemented for \'Bool\'')
    src = inplace_input(input, inplace)
    d = src._data
    xp = src._backend
    out = xp.where(d <= threshold, xp.asarray(value).astype(d.dtype), d).astype(d.dtype,
                                                                               copy=False)
    spec = THRESHOLD_ if inplace else THRESHOLD
    return _finish(input, spec.record(out, (src,), threshold, self=src), inplace)


_threshold_op = threshold  # threshold_'s parameter of that name hides the op


@op(function="threshold_", functional="threshold_", grad_fn="ThresholdBackward1")
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """threshold written into input: input where input > threshold, else value.

    Example::

        >>> x = rustgrad.tensor([-1., 2.])
        >>> rustgrad.nn.functional.threshold_(x, 0., 5.)
        tensor([5., 2.])
    """
    return _threshold_op(input, threshold, value, True)


# ---- glu -----------------------------------------------------------------------------------
def _glu_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    x = saved.self
    a, b = x.chunk(2, dim)
    sb = b.sigmoid()
    ga = g * sb
    gb = g * a * sb * (1 - sb)
    return cat([ga, gb], dim)


GLU = node("GluBackward0", _glu_bw, saved=("self",), getters={"dim": lambda s, c: c})


@op(functional="glu", grad_fn="GluBackward0")
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: a * sigmoid(b), for a and b the two halves of input along dim.

    Args:
        input (Tensor): the input tensor; its size along dim must be even.
        dim (int, optional): the dim that is halved. Default: -1.

    Example::

        >>> rustgrad.nn.functional.glu(rustgrad.tensor([[1., 2., 0., 0.]]))
        tensor([[0.5000, 1.0000]])
    """
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _require_float(input, "glu_cpu")
    k = _wrap_dim(dim, d.ndim)
    n = d.shape[k]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {k} is size {n}")
    xp = input._backend
    w = opmath(d)
    a = w[(slice(None),) * k + (slice(0, n // 2),)]
    b = w[(slice(None),) * k + (slice(n // 2, n),)]
    with quiet_fp(xp):
        e = xp.exp(-xp.abs(b))
        sig = xp.where(b >= 0, 1 / (1 + e), e / (1 + e))
        out = (a * sig).astype(d.dtype, copy=False)
    return GLU.record(out, (input,), dim, self=input)


# ---- rrelu ---------------------------------------------------------------------------------
def _rrelu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    lower, upper, training = ctx
    x = saved.self
    if training and upper - lower > 1e-6:
        return g * saved.noise
    # evaluation: a leaky relu of slope (lower + upper) / 2
    return select_grad(g, x, x._data > 0, "LeakyReluBackwardBackward0", (lower + upper) / 2)


_RRELU_GETTERS = {"lower": lambda s, c: c[0], "upper": lambda s, c: c[1],
                  "training": lambda s, c: c[2]}
# the in-place form (RreluWithNoiseBackward1) saves the input too, a copy taken before the
# write (torch's saves the result)
RRELU = node("RreluWithNoiseBackward0", _rrelu_bw, saved=("self", "noise"),
             getters=_RRELU_GETTERS, forward=ELEMENTWISE)
RRELU_ = node("RreluWithNoiseBackward1", _rrelu_bw, saved=("self", "noise"),
              getters=_RRELU_GETTERS, forward=ELEMENTWISE)


@op(function="rrelu", functional="rrelu",
    grad_fn=("RreluWithNoiseBackward0", "RreluWithNoiseBackward1", "LeakyReluBackwardBackward0"))
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """The randomized leaky relu: input where positive, else input * a, with a drawn from
    U(lower, upper) per element in training and (lower + upper) / 2 in evaluation.

    Args:
        input (Tensor): the input tensor (floating point).
        lower (float, optional): the lower bound of the slope. Default: 1/8.
        upper (float, optional): the upper bound of the slope. Default: 1/3.
        training (bool, optional): draw the slopes (from rustgrad's generator). Default: False.

    The gradient is the slope each element used (1 where input > 0).

    Example::

        >>> rustgrad.nn.functional.rrelu(rustgrad.tensor([-3., 2.]), 0.1, 0.3)
        tensor([-0.6000,  2.0000])
    """
    _require_float(input, "leaky_relu_cpu" if not training else "rrelu_with_noise_out_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    src = inplace_input(input, inplace)
    d = src._data
    xp = src._backend
    if training:
        r = _creation.rand(tuple(d.shape), dtype=src.dtype, device=src.device)._data
        slope = (r * (upper - lower) + lower).astype(d.dtype, copy=False)
        noise_arr = xp.where(d > 0, d.dtype.type(1), slope).astype(d.dtype, copy=False)
        out = (d * noise_arr).astype(d.dtype, copy=False)
    else:
        noise_arr = xp.zeros_like(d)  # torch's noise is left unwritten in evaluation
        out = xp.where(d > 0, d, d * d.dtype.type((lower + upper) / 2)).astype(d.dtype,
                                                                             copy=False)
    noise = const(noise_arr)
    spec = RRELU_ if inplace else RRELU
    res = spec.record(out, (src,), (lower, upper, training), self=src, noise=noise)
    return _finish(input, res, inplace)


@op(function="rrelu_", functional="rrelu_", grad_fn="RreluWithNoiseBackward1")
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """rrelu written into input.

    Example::

        >>> x = rustgrad.tensor([-2., 1.])
        >>> rustgrad.nn.functional.rrelu_(x, 0.5, 0.5)
        tensor([-1.,  1.])
    """
    return rrelu(input, lower, upper, training, True)


# ---- the in-place spellings of torch.nn.functional -----------------------------------------
@op(functional="elu_", grad_fn="EluBackward1")
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """elu written into input.

    Example::

        >>> rustgrad.nn.functional.elu_(rustgrad.tensor([-1., 2.]))
        tensor([-0.6321,  2.0000])
    """
    return elu(input, alpha, True)


@op(function="celu_", functional="celu_", grad_fn="CeluBackward1")
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """celu written into input.

    Example::

        >>> rustgrad.nn.functional.celu_(rustgrad.tensor([-1., 2.]), 2.)
        tensor([-0.7869,  2.0000])
    """
    return celu(input, alpha, True)


@op(function="selu_", functional="selu_", grad_fn="EluBackward1")
def selu_(input: Tensor) -> Tensor:
    """selu written into input.

    Example::

        >>> rustgrad.nn.functional.selu_(rustgrad.tensor([-1., 2.]))
        tensor([-1.1113,  2.1014])
    """
    return selu(input, True)


@op(functional="hardtanh_", grad_fn="HardtanhBackward0")
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """hardtanh written into input.

    Example::

        >>> rustgrad.nn.functional.hardtanh_(rustgrad.tensor([-2., 0.5, 2.]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    return _hardtanh(input, min_val, max_val, True)


@op(functional="leaky_relu_", grad_fn="LeakyReluBackward1")
def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """leaky_relu written into input.

    Example::

        >>> rustgrad.nn.functional.leaky_relu_(rustgrad.tensor([-2., 3.]), 0.5)
        tensor([-1.,  3.])
    """
    return leaky_relu(input, negative_slope, True)
