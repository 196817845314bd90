"""Pointwise unary ops: exp, log, sqrt, abs, relu, sigmoid, tanh, clamp, reciprocal, sign."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._util import as_scalar, check_inplace, is_grad_enabled, record


def _floating(a: Tensor) -> Any:
    """a's array, cast to the default float dtype if it is integral (torch's exp(int) is float)."""
    d = a._data
    if d.dtype.kind in "biu":
        return d.astype(_dtype.get_default_dtype().np)
    return d


def _exp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * out


def exp(a: Tensor) -> Tensor:
    return record(a._backend.exp(_floating(a)), (a,), "ExpBackward0", _exp_bw, (), None, True)


def _log_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g / a


def log(a: Tensor) -> Tensor:
    return record(a._backend.log(_floating(a)), (a,), "LogBackward0", _log_bw, (a,))


def _sqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g / (2 * out)


def sqrt(a: Tensor) -> Tensor:
    return record(a._backend.sqrt(_floating(a)), (a,), "SqrtBackward0", _sqrt_bw, (), None, True)


def _abs_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * a.sign()


def abs(a: Tensor) -> Tensor:
    return record(a._backend.abs(a._data), (a,), "AbsBackward0", _abs_bw, (a,))


def sign(a: Tensor) -> Tensor:
    return record(a._backend.sign(a._data), (a,), "SignBackward0", _zero_bw)


def _zero_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * 0


def _relu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (out > 0)


def relu(a: Tensor) -> Tensor:
    xp = a._backend
    d = a._data
    return record(xp.maximum(d, d.dtype.type(0)), (a,), "ReluBackward0", _relu_bw, (), None, True)


def _sigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (out * (1 - out))


def sigmoid(a: Tensor) -> Tensor:
    xp = a._backend
    d = _floating(a)
    # exp of a negative argument only, so large |x| neither overflows nor loses precision
    e = xp.exp(-xp.abs(d))
    out = xp.where(d >= 0, 1 / (1 + e), e / (1 + e)).astype(d.dtype, copy=False)
    return record(out, (a,), "SigmoidBackward0", _sigmoid_bw, (), None, True)


def _tanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (1 - out * out)


def tanh(a: Tensor) -> Tensor:
    return record(a._backend.tanh(_floating(a)), (a,), "TanhBackward0", _tanh_bw, (), None, True)


def _reciprocal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return -g * out * out


def reciprocal(a: Tensor) -> Tensor:
    d = _floating(a)
    return record(1 / d, (a,), "ReciprocalBackward0", _reciprocal_bw, (), None, True)


def _clamp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    lo, hi = ctx
    mask = None
    if lo is not None:
        mask = a >= lo
    if hi is not None:
        m = a <= hi
        mask = m if mask is None else mask & m
    return g * mask


def _clamp_array(a: Tensor, lo: Any, hi: Any) -> Any:
    xp = a._backend
    d = a._data
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = d
    if lo is not None:
        out = xp.maximum(out, lo)
    if hi is not None:
        out = xp.minimum(out, hi)
    if out is d:
        out = d.copy()
    return out.astype(d.dtype, copy=False) if type(lo) is not float and type(hi) is not float \
        or d.dtype.kind == "f" else out


def clamp(a: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(a, min, max)
    lo = None if min is None else as_scalar(min)
    hi = None if max is None else as_scalar(max)
    out = _clamp_array(a, lo, hi)
    return record(out, (a,), "ClampBackward1", _clamp_bw, (a,), (lo, hi))


def _clamp_tensor(a: Tensor, lo: Any, hi: Any) -> Tensor:
    from .select import maximum, minimum

    out = a
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


def clamp_(a: Tensor, min: Any = None, max: Any = None) -> Tensor:
    check_inplace(a)
    if is_grad_enabled() and a.requires_grad:
        from .. import _core

        out = clamp(a, min, max)
        a._data[...] = out._data
        _core.rebase_history(a, out)
        return a
    lo = None if min is None else as_scalar(min)
    hi = None if max is None else as_scalar(max)
    a._data[...] = _clamp_array(a, lo, hi)
    a._bump_version()
    return a
