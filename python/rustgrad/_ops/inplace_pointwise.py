"""In-place pointwise methods (exp_, sigmoid_, tanh_, sqrt_, abs_, neg_, square_, relu_) and
nan_to_num (to be folded into the pointwise family)."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import check_inplace, const, is_grad_enabled, record, write_inplace

_INT64 = _dtype.int64.np






def _unary_inplace(method: str, saves_input: bool = False) -> Any:
    """saves_input: the backward formula reads the input, which the write will change, so
    the op runs on a clone (as torch's generated in-place kernels save self.clone())."""
    def inplace(self: Tensor) -> Tensor:
        check_inplace(self)
        src = self.clone() if saves_input and is_grad_enabled() and self.requires_grad else self
        return write_inplace(self, getattr(src, method)(), self.requires_grad)

    inplace.__name__ = method + "_"
    inplace.__qualname__ = method + "_"
    inplace.__doc__ = f"In-place {method}."
    return inplace


exp_ = op(method="exp_", function="exp_", grad_fn="ExpBackward0")(_unary_inplace("exp"))
sigmoid_ = op(method="sigmoid_", function="sigmoid_", grad_fn="SigmoidBackward0")(_unary_inplace("sigmoid"))
tanh_ = op(method="tanh_", function="tanh_", grad_fn="TanhBackward0")(_unary_inplace("tanh"))
sqrt_ = op(method="sqrt_", function="sqrt_", grad_fn="SqrtBackward0")(_unary_inplace("sqrt"))
abs_ = op(method=("abs_", "absolute_"), function=("abs_", "absolute_"), grad_fn="AbsBackward0")(
    _unary_inplace("abs", True))
neg_ = op(method=("neg_", "negative_"), function=("neg_", "negative_"), grad_fn="NegBackward0")(
    _unary_inplace("neg"))
square_ = op(method="square_", function="square_", grad_fn="PowBackward0")(_unary_inplace("square", True))
relu_ = op(method="relu_", function="relu_", grad_fn="ReluBackward0")(_unary_inplace("relu"))


# ---- nan_to_num ------------------------------------------------------------------------------
def _nan_to_num_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * const(ctx.astype(g._data.dtype))


@op(method="nan_to_num", function="nan_to_num", grad_fn="NanToNumBackward0")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """input with NaN, +inf and -inf replaced by finite numbers."""
    d = input._data
    xp = input._backend
    if d.dtype.kind != "f":
        return record(d.copy(), (), "", None)
    info = xp.finfo(d.dtype)
    out = xp.where(xp.isnan(d), nan, d)
    out = xp.where(xp.isposinf(d), info.max if posinf is None else posinf, out)
    out = xp.where(xp.isneginf(d), info.min if neginf is None else neginf, out)
    return record(out.astype(d.dtype), (input,), "NanToNumBackward0", _nan_to_num_bw, None,
                  xp.isfinite(d))
