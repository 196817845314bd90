"""Pointwise unary ops: exp, log, sqrt, abs, relu, sigmoid, tanh, clamp, reciprocal, sign."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import as_scalar, check_inplace, commit_inplace, is_grad_enabled, record


def _floating(a: Tensor) -> Any:
    """a's array, cast to the default float dtype if it is integral (torch's exp(int) is float)."""
    d = a._data
    if d.dtype.kind in "biu":
        return d.astype(_dtype.get_default_dtype().np)
    return d


def _exp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * out


# torch's `_saved_result` / `_saved_self` of a unary node that saves one tensor
_SAVED_RESULT = {"result": lambda s, c: s[0]}
_SAVED_SELF = {"self": lambda s, c: s[0]}


@op(method="exp", function="exp", grad_fn="ExpBackward0",
    saved={"ExpBackward0": _SAVED_RESULT})
def exp(a: Tensor) -> Tensor:
    return record(a._backend.exp(_floating(a)), (a,), "ExpBackward0", _exp_bw, (), None, True)


def _log_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g / a


@op(method="log", function="log", grad_fn="LogBackward0",
    saved={"LogBackward0": _SAVED_SELF})
def log(a: Tensor) -> Tensor:
    return record(a._backend.log(_floating(a)), (a,), "LogBackward0", _log_bw, (a,))


def _sqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g / (2 * out)


@op(method="sqrt", function="sqrt", grad_fn="SqrtBackward0",
    saved={"SqrtBackward0": _SAVED_RESULT})
def sqrt(a: Tensor) -> Tensor:
    return record(a._backend.sqrt(_floating(a)), (a,), "SqrtBackward0", _sqrt_bw, (), None, True)


def _abs_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * a.sign()


@op(method="abs", dunder="__abs__", function="abs", grad_fn="AbsBackward0",
    saved={"AbsBackward0": _SAVED_SELF})
def abs(a: Tensor) -> Tensor:
    return record(a._backend.abs(a._data), (a,), "AbsBackward0", _abs_bw, (a,))


@op(method="sign", function="sign", grad_fn="SignBackward0")
def sign(a: Tensor) -> Tensor:
    d = a._data
    if d.dtype.kind == "b":
        out = d.copy()
    else:
        out = a._backend.sign(d)
        if d.dtype.kind == "f":  # torch's sign(nan) is 0, NumPy's nan
            out = a._backend.nan_to_num(out, nan=0.0)
    return record(out, (a,), "SignBackward0", _zero_bw)


def _zero_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * 0


def _relu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's threshold_backward: zero where result <= 0, so a nan passes its gradient
    (out,) = saved
    return g * ~(out <= 0)


@op(method="relu", function="relu", grad_fn="ReluBackward0",
    saved={"ReluBackward0": _SAVED_RESULT})
def relu(a: Tensor) -> Tensor:
    xp = a._backend
    d = a._data
    return record(xp.maximum(d, d.dtype.type(0)), (a,), "ReluBackward0", _relu_bw, (), None, True)


def _sigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (out * (1 - out))


@op(method="sigmoid", function="sigmoid", grad_fn="SigmoidBackward0",
    saved={"SigmoidBackward0": _SAVED_RESULT})
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


@op(method="tanh", function="tanh", grad_fn="TanhBackward0",
    saved={"TanhBackward0": _SAVED_RESULT})
def tanh(a: Tensor) -> Tensor:
    return record(a._backend.tanh(_floating(a)), (a,), "TanhBackward0", _tanh_bw, (), None, True)


def _reciprocal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return -g * out * out


@op(method="reciprocal", function="reciprocal", grad_fn="ReciprocalBackward0",
    saved={"ReciprocalBackward0": _SAVED_RESULT})
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
    if d.dtype.kind != "f" and (type(lo) is float or type(hi) is float):
        d = d.astype(_dtype.get_default_dtype().np)  # int tensor, float bound: default float
    out = d
    if lo is not None:
        out = xp.maximum(out, lo)
    if hi is not None:
        out = xp.minimum(out, hi)
    if out is a._data:
        out = out.copy()
    return out.astype(d.dtype, copy=False)


# torch names the C type in clamp_'s scalar-bound cast error ("... output type long int")
_C_TYPE_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "bool": "bool"}


@op(method=("clamp", "clip"), function=("clamp", "clip"), grad_fn="ClampBackward1")
def clamp(a: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(a, min, max)
    lo = None if min is None else as_scalar(min)
    hi = None if max is None else as_scalar(max)
    out = _clamp_array(a, lo, hi)
    return record(out, (a,), "ClampBackward1", _clamp_bw, (a,), (lo, hi))


def _clamp_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's clamp_backward and clamp_backward_min_max
    from ._util import cast_grad, sum_to
    from .select import where

    a, lo, hi = saved
    zero = g * 0
    if lo is not None and hi is not None:
        ga = where((a >= lo) & (a <= hi), g, zero)
        glo = where((a < lo) & (lo < hi), g, zero)
        ghi = where((a > hi) | (hi < lo), g, zero)
    elif lo is not None:
        ga, glo, ghi = where(a >= lo, g, zero), where(a < lo, g, zero), None
    else:
        ga, glo, ghi = where(a <= hi, g, zero), None, where(a > hi, g, zero)
    out = []
    for grad, (shape, dt) in zip((ga, glo, ghi), ctx):
        if shape is not None:
            out.append(cast_grad(sum_to(grad, shape), dt))
    return tuple(out)


def _clamp_tensor(a: Tensor, lo: Any, hi: Any) -> Tensor:
    for x in (lo, hi):
        if x is not None and not isinstance(x, Tensor):
            raise TypeError(
                "clamp() received an invalid combination of arguments - got (Tensor, "
                f"{type(lo).__name__ if lo is not None else 'NoneType'}, "
                f"{type(hi).__name__ if hi is not None else 'NoneType'}), but expected one of:\n"
                " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)"
            )
    from .. import _dtype as dt
    from ._util import broadcast_error, same_device

    present = [x for x in (a, lo, hi) if x is not None]
    rt = dt.result_type(*present).np
    xp = a._backend
    out = a._data.astype(rt, copy=False)
    try:
        if lo is not None:
            same_device(a._data, lo._data)
            out = xp.maximum(out, lo._data.astype(rt, copy=False))
        if hi is not None:
            same_device(a._data, hi._data)
            out = xp.minimum(out, hi._data.astype(rt, copy=False))
    except ValueError as e:
        raise broadcast_error(e, *(x._data.shape for x in present)) from None
    if out is a._data:
        out = out.copy()
    ctx = tuple((x._data.shape, x._data.dtype) if x is not None else (None, None)
                for x in (a, lo, hi))
    return record(out, tuple(present), "ClampBackward0", _clamp_tensor_bw, (a, lo, hi), ctx)


@op(method=("clamp_", "clip_"))
def clamp_(a: Tensor, min: Any = None, max: Any = None) -> Tensor:
    check_inplace(a)
    if a._data.dtype.kind != "f":
        bounds = [x for x in (min, max) if x is not None]
        if any(type(x) is float for x in bounds):
            raise RuntimeError(
                "result type Float can't be cast to the desired output type "
                f"{_C_TYPE_NAMES.get(a.dtype.name, a.dtype.name)}"
            )
        if bounds and any(isinstance(x, Tensor) for x in bounds):
            from .. import _dtype as dt
            from ._util import check_inplace_cast

            check_inplace_cast(a, dt.result_type(a, *bounds))
    tensor_bound = isinstance(min, Tensor) and min.requires_grad or \
        isinstance(max, Tensor) and max.requires_grad
    if is_grad_enabled() and (a.requires_grad or tensor_bound):
        from .. import _core

        # the backward needs self as it was before the write: save a copy with its history
        out = clamp(_core.shallow_copy(a, a._data.copy()), min, max)
        commit_inplace(a, out)
        return a
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        res = _clamp_tensor(a, min, max)._data
        if res.shape != a._data.shape:
            raise RuntimeError(
                f"output with shape {list(a._data.shape)} doesn't match the broadcast shape "
                f"{list(res.shape)}"
            )
    else:
        lo = None if min is None else as_scalar(min)
        hi = None if max is None else as_scalar(max)
        res = _clamp_array(a, lo, hi)
    a._data[...] = res
    a._bump_version()
    return a
