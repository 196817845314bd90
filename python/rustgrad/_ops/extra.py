"""More ops: in-place unary methods (exp_, sigmoid_, tanh_, sqrt_, abs_, neg_, square_),
index_add / index_put (and in place), the in-place random fills (normal_, uniform_,
bernoulli_) under rustgrad's generator, broadcast_to, hstack / vstack, addcmul / addcdiv,
nan_to_num, randperm, median and unique. Backward formulas are torch's, in rustgrad ops."""

from __future__ import annotations

from typing import Any, Sequence

from .. import _dtype, return_types
from .._tensor import Tensor, _wrap_dim
from ._declare import op
from ._util import (
    _type_name,
    cast_grad,
    check_inplace,
    commit_inplace,
    is_grad_enabled,
    record,
    same_device,
    sum_to,
)
from ._util import (
    const as _const,
)

_INT64 = _dtype.int64.np
_median_type = return_types._make("median")


def _check_bounds(xp: Any, index: Any, size: int, dim: int) -> None:
    from .gather import _check_bounds as check

    check(xp, index, size, dim)




def _inplace(self: Tensor, out: Tensor, needs_grad: bool) -> Tensor:
    if out._data.dtype != self._data.dtype:
        raise RuntimeError(
            f"result type {_type_name(_dtype.from_np(out._data.dtype))} can't be cast to the "
            f"desired output type {_type_name(self.dtype)}"
        )
    if is_grad_enabled() and needs_grad:
        commit_inplace(self, out)
    else:
        self._data[...] = out._data
        self._bump_version()
    return self


def _unary_inplace(method: str, saves_input: bool = False) -> Any:
    """saves_input: the backward formula reads the input, which the write will change, so
    the op runs on a clone (as torch's generated in-place kernels save self.clone())."""
    def inplace(self: Tensor) -> Tensor:
        check_inplace(self)
        src = self.clone() if saves_input and is_grad_enabled() and self.requires_grad else self
        return _inplace(self, getattr(src, method)(), self.requires_grad)

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


# ---- index_add / index_put ---------------------------------------------------------------
def _index_add_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx, alpha, src_shape, in_dt, src_dt = ctx
    gs = g.index_select(dim, _const(idx)) if g._data.ndim else g.reshape(1)
    if alpha != 1:
        gs = gs * alpha
    return cast_grad(g, in_dt), cast_grad(gs.reshape(src_shape), src_dt)


@op(method="index_add", function="index_add", grad_fn="IndexAddBackward0")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    d, s, idx = input._data, source._data, index._data
    same_device(d, idx)
    same_device(d, s)
    if idx.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if idx.dtype not in (_INT64, _dtype.int32.np):
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index")
    if s.dtype != d.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_type_name(input.dtype)}) and source "
            f"({_type_name(source.dtype)}) must have the same scalar type"
        )
    xp = input._backend
    dim = _wrap_dim(dim, max(d.ndim, 1))
    idx = idx.reshape(-1)
    n = d.shape[dim] if d.ndim else 1
    _check_bounds(xp, idx, n, dim)
    out = d.reshape(d.shape or (1,)).copy()
    src = s.reshape(out.shape[:dim] + (idx.size,) + out.shape[dim + 1:])
    if idx.size:
        xp.add_at(out, (slice(None),) * dim + (idx,), src * alpha if alpha != 1 else src)
    return record(out.reshape(d.shape), (input, source), "IndexAddBackward0", _index_add_bw,
                  None, (dim, idx, alpha, s.shape, d.dtype, s.dtype))


@op(method="index_add_")
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *,
               alpha: Any = 1) -> Tensor:
    check_inplace(self)
    out = index_add(self, dim, index, source, alpha=alpha)
    return _inplace(self, out, self.requires_grad or source.requires_grad)


def _index_put_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, idx, accumulate, vshape, in_dt, v_dt = ctx
    gi = g if accumulate else g.masked_fill(_const(mask), 0)
    gv = sum_to(g[tuple(_const(i) for i in idx)], vshape)
    return cast_grad(gi, in_dt), cast_grad(gv, v_dt)


@op(method="index_put", function="index_put", grad_fn="IndexPutBackward0")
def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor,
              accumulate: bool = False) -> Tensor:
    d, v = input._data, values._data
    xp = input._backend
    idx = tuple(i._data for i in indices)
    if v.dtype != d.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{_type_name(input.dtype)} for the destination and {_type_name(values.dtype)} for "
            "the source."
        )
    out = d.copy()
    if accumulate:
        sel_shape = out[idx].shape
        xp.add_at(out, idx, xp.broadcast_to(v, sel_shape))
    else:
        out[idx] = v
    mask = xp.zeros(d.shape, dtype=bool)
    mask[idx] = True
    return record(out, (input, values), "IndexPutBackward0", _index_put_bw, None,
                  (mask, idx, accumulate, v.shape, d.dtype, v.dtype))


@op(method="index_put_")
def index_put_(self: Tensor, indices: Sequence[Tensor], values: Tensor,
               accumulate: bool = False) -> Tensor:
    check_inplace(self)
    out = index_put(self, indices, values, accumulate)
    return _inplace(self, out, self.requires_grad or values.requires_grad)


# ---- in-place random fills -----------------------------------------------------------------
def _fill_random(self: Tensor, draw: Any) -> Tensor:
    from .. import _creation

    check_inplace(self)
    arr = draw(_creation.default_generator._rng, tuple(self._data.shape))
    arr = arr.astype(self._data.dtype)
    self._data[...] = _creation._target(self.device).from_numpy(arr, self.device)
    self._bump_version()
    return self


@op(method="normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(self, lambda rng, shape: rng.normal(mean, std, shape))


@op(method="uniform_")
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _fill_random(self, lambda rng, shape: rng.uniform(a, b, shape))


@op(method="bernoulli_")
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    if isinstance(p, Tensor):
        pa = p._backend.to_numpy(p._data)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        pa = p
    return _fill_random(self, lambda rng, shape: rng.random(shape) < pa)


# ---- shapes and joins ------------------------------------------------------------------------
@op(method="broadcast_to", function="broadcast_to")
def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return input.expand(tuple(size))


@op(function="hstack")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    from .. import cat

    ts = [t.reshape(1) if t.dim() == 0 else t for t in tensors]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


@op(function="vstack")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    from .. import cat

    ts = []
    for t in tensors:
        if t.dim() == 0:
            t = t.reshape(1, 1)
        elif t.dim() == 1:
            t = t.unsqueeze(0)
        ts.append(t)
    return cat(ts, 0)


# ---- addcmul / addcdiv -----------------------------------------------------------------------
def _addc_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    t1, t2 = saved
    kind, value, shapes, dts = ctx
    if kind == "mul":
        g1, g2 = g * t2 * value, g * t1 * value
    else:
        g1, g2 = g * value / t2, -g * value * t1 / (t2 * t2)
    return tuple(cast_grad(sum_to(x, s), dt) for x, s, dt in zip((g, g1, g2), shapes, dts))


def _addc(kind: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    a, b, c = input._data, tensor1._data, tensor2._data
    same_device(a, b)
    same_device(a, c)
    rt = _dtype.result_type(_dtype.result_type(input, tensor1), tensor2).np
    if kind == "div" and rt.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    a, b, c = a.astype(rt, copy=False), b.astype(rt, copy=False), c.astype(rt, copy=False)
    try:
        out = a + value * (b * c if kind == "mul" else b / c)
    except ValueError as e:
        from ._util import broadcast_error

        raise broadcast_error(e, a.shape, b.shape, c.shape) from None
    out = out.astype(rt, copy=False)
    name = "AddcmulBackward0" if kind == "mul" else "AddcdivBackward0"
    return record(out, (input, tensor1, tensor2), name, _addc_bw, (tensor1, tensor2),
                  (kind, value, (a.shape, b.shape, c.shape),
                   (input._data.dtype, tensor1._data.dtype, tensor2._data.dtype)))


@op(method="addcmul", function="addcmul")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    return _addc("mul", input, tensor1, tensor2, value)


@op(method="addcdiv", function="addcdiv")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    return _addc("div", input, tensor1, tensor2, value)


# ---- nan_to_num ------------------------------------------------------------------------------
def _nan_to_num_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * _const(ctx.astype(g._data.dtype))


@op(method="nan_to_num", function="nan_to_num", grad_fn="NanToNumBackward0")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
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


# ---- randperm --------------------------------------------------------------------------------
@op(function="randperm")
def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    from .. import _creation

    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    rng = (generator or _creation.default_generator)._rng
    arr = rng.permutation(n).astype((dtype or _dtype.int64).np)
    if device is not None:
        arr = _creation._target(device).from_numpy(arr, device)
    return _creation._wrap(arr, requires_grad)


# ---- median ----------------------------------------------------------------------------------
def _median_all_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, dt = ctx
    m = _const(mask.astype(dt))
    return m * (g / float(mask.sum()))


def _median_dim_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from .gather import scatter_add_into_zeros

    shape, dim, idx, keepdim = ctx
    if not keepdim and len(shape):
        g = g.unsqueeze(dim)
    return scatter_add_into_zeros(g, shape, dim, idx)


@op(method="median", function="median", grad_fn=("MedianBackward0", "MedianBackward1"))
def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    d = input._data
    xp = input._backend
    if dim is None:
        if d.size == 0:
            return record(xp.asarray(xp.nan, dtype=d.dtype), (), "", None)
        flat = xp.sort(d.reshape(-1))
        val = flat[(d.size - 1) // 2]
        mask = d == val
        if d.dtype.kind == "f" and bool(xp.isnan(d).any()):
            val = xp.asarray(xp.nan, dtype=d.dtype)
            mask = xp.isnan(d)
        return record(xp.asarray(val, dtype=d.dtype).reshape(()), (input,), "MedianBackward0",
                      _median_all_bw, None, (mask, d.dtype))
    nd = d.ndim
    dim = _wrap_dim(dim, max(nd, 1))
    src = d.reshape(1) if nd == 0 else d
    n = src.shape[dim]
    if n == 0:
        raise IndexError(
            f"median(): Expected reduction dim {dim} to have non-zero size.")
    order = xp.argsort(src, axis=dim, kind="stable")
    k = (n - 1) // 2
    idx = xp.take(order, [k], axis=dim)
    if src.dtype.kind == "f":  # a NaN in a row is that row's median (its first one), as torch's
        nans = xp.isnan(src)
        idx = xp.where(nans.any(axis=dim, keepdims=True),
                       xp.argmax(nans, axis=dim, keepdims=True), idx)
    vals = xp.take_along_axis(src, idx, axis=dim)
    if not keepdim or nd == 0:
        vals_o = vals.reshape(d.shape) if nd == 0 else xp.squeeze(vals, axis=dim)
        idx_o = idx.reshape(d.shape) if nd == 0 else xp.squeeze(idx, axis=dim)
    else:
        vals_o, idx_o = vals, idx
    values = record(vals_o, (input,), "MedianBackward1", _median_dim_bw, None,
                    (d.shape, dim, idx.reshape(d.shape) if nd == 0 else idx, keepdim or nd == 0))
    indices = _const(idx_o.astype(_INT64))
    return _median_type(values, indices)


# ---- unique ----------------------------------------------------------------------------------
@op(method="unique", function="unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: Any = None) -> Any:
    if dim is not None:
        raise NotImplementedError("rustgrad.unique: dim is not supported")
    d = input._data
    xp = input._backend
    res = xp.unique(d.reshape(-1), return_inverse=True, return_counts=True)
    vals, inv, counts = res
    outs = [_const(vals)]
    if return_inverse:
        outs.append(_const(inv.reshape(d.shape).astype(_INT64)))
    if return_counts:
        outs.append(_const(counts.astype(_INT64)))
    return outs[0] if len(outs) == 1 else tuple(outs)

