"""Binds the ops of pointwise, reductions, gather, views and linalg_ext to Tensor as methods
(imported by rustgrad/__init__.py after _methods, whose bindings it extends)."""

from __future__ import annotations

from ._ops import gather, linalg_ext, pointwise, reductions, views
from ._tensor import Tensor

T = Tensor

# pointwise
T.sin, T.cos, T.tan = pointwise.sin, pointwise.cos, pointwise.tan
T.asin, T.acos, T.atan, T.atan2 = pointwise.asin, pointwise.acos, pointwise.atan, pointwise.atan2
T.arcsin, T.arccos, T.arctan, T.arctan2 = T.asin, T.acos, T.atan, T.atan2
T.sinh, T.cosh = pointwise.sinh, pointwise.cosh
T.exp2, T.expm1, T.log2, T.log10, T.log1p = (pointwise.exp2, pointwise.expm1, pointwise.log2,
                                             pointwise.log10, pointwise.log1p)
T.rsqrt, T.square = pointwise.rsqrt, pointwise.square
T.floor, T.ceil, T.round, T.trunc, T.fix = (pointwise.floor, pointwise.ceil, pointwise.round,
                                            pointwise.trunc, pointwise.trunc)
T.erf, T.lerp, T.fmod = pointwise.erf, pointwise.lerp, pointwise.fmod
T.isnan, T.isinf, T.isfinite = pointwise.isnan, pointwise.isinf, pointwise.isfinite
T.isposinf, T.isneginf = pointwise.isposinf, pointwise.isneginf
T.logical_and, T.logical_or = pointwise.logical_and, pointwise.logical_or
T.logical_not, T.logical_xor = pointwise.logical_not, pointwise.logical_xor

# reductions and scans
T.softmax, T.log_softmax = reductions.softmax, reductions.log_softmax
T.logsumexp, T.prod = reductions.logsumexp, reductions.prod
T.cumsum, T.cumprod = reductions.cumsum, reductions.cumprod
T.var, T.std, T.norm, T.dist = reductions.var, reductions.std, reductions.norm, reductions.dist
T.amax, T.amin, T.all, T.any = reductions.amax, reductions.amin, reductions.all, reductions.any
T.argmax, T.argmin = reductions.argmax, reductions.argmin
T.topk, T.sort, T.argsort = reductions.topk, reductions.sort, reductions.argsort

# index-driven
T.index_select, T.gather, T.take_along_dim = gather.index_select, gather.gather, \
    gather.take_along_dim
T.scatter, T.scatter_, T.scatter_add, T.scatter_add_ = gather.scatter, gather.scatter_, \
    gather.scatter_add, gather.scatter_add_
T.masked_fill, T.masked_fill_, T.masked_select = gather.masked_fill, gather.masked_fill_, \
    gather.masked_select
T.nonzero, T.argwhere = gather.nonzero, gather.argwhere

# views and copies
T.narrow, T.select, T.unbind = views.narrow, views.select, views.unbind
T.split, T.split_with_sizes, T.chunk = views.split, views.split_with_sizes, views.chunk
T.diagonal, T.movedim, T.moveaxis, T.unfold = views.diagonal, views.movedim, views.moveaxis, \
    views.unfold
T.tril, T.triu, T.flip, T.roll = views.tril, views.triu, views.flip, views.roll
T.repeat, T.repeat_interleave, T.tile = views.repeat, views.repeat_interleave, views.tile


@property  # type: ignore[misc]
def _mT(self: Tensor) -> Tensor:
    return views.mT(self)


T.mT = _mT

# products
T.outer, T.ger, T.dot = linalg_ext.outer, linalg_ext.outer, linalg_ext.dot
T.mv, T.mm, T.bmm = linalg_ext.mv, linalg_ext.mm, linalg_ext.bmm
T.addmm, T.baddbmm = linalg_ext.addmm, linalg_ext.baddbmm
T.kron, T.trace = linalg_ext.kron, linalg_ext.trace
T.diag, T.diag_embed = linalg_ext.diag, linalg_ext.diag_embed


# new_* factories: torch's defaults are this tensor's dtype and device
def _new_factory(fill: str) -> object:
    def method(self: Tensor, *size: object, dtype: object = None, device: object = None,
               requires_grad: bool = False) -> Tensor:
        from . import _creation

        return getattr(_creation, fill)(*size, dtype=dtype or self.dtype,
                                        device=device or self.device,
                                        requires_grad=requires_grad)

    method.__name__ = f"new_{fill}"
    return method


def _new_full(self: Tensor, size: object, fill_value: object, *, dtype: object = None,
              device: object = None, requires_grad: bool = False) -> Tensor:
    from . import _creation

    return _creation.full(size, fill_value, dtype=dtype or self.dtype,
                          device=device or self.device, requires_grad=requires_grad)


def _new_tensor(self: Tensor, data: object, *, dtype: object = None, device: object = None,
                requires_grad: bool = False) -> Tensor:
    from . import _creation

    return _creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)


T.new_zeros, T.new_ones, T.new_empty = (_new_factory("zeros"), _new_factory("ones"),
                                        _new_factory("empty"))
T.new_full, T.new_tensor = _new_full, _new_tensor


def _type(self: Tensor, dtype: object = None, non_blocking: bool = False) -> object:
    """torch's Tensor.type(): the legacy type name, or a cast to a dtype or such a name."""
    from . import _dtype

    if dtype is None:
        return "torch." + _dtype.LEGACY_NAMES[self.dtype.name]
    if isinstance(dtype, str):
        names = {"torch." + v: k for k, v in _dtype.LEGACY_NAMES.items()}
        if dtype not in names:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _dtype.from_np(__import__("numpy").dtype(names[dtype]))
    return self if dtype is self.dtype else self.to(dtype)


T.type = _type


def _bind_comparisons() -> None:
    from . import _functional_ext as fx

    T.isclose, T.allclose, T.equal = fx.isclose, fx.allclose, fx.equal


_bind_comparisons()


def _relu_(self: Tensor) -> Tensor:
    from .nn import functional

    return functional.relu_(self)


T.relu_ = _relu_


def _bind_extra() -> None:
    from ._ops import extra

    T.exp_, T.sigmoid_, T.tanh_, T.sqrt_ = extra.exp_, extra.sigmoid_, extra.tanh_, extra.sqrt_
    T.abs_, T.neg_, T.square_ = extra.abs_, extra.neg_, extra.square_
    T.absolute_, T.negative_ = extra.abs_, extra.neg_
    T.index_add, T.index_add_ = extra.index_add, extra.index_add_
    T.index_put, T.index_put_ = extra.index_put, extra.index_put_
    T.normal_, T.uniform_, T.bernoulli_ = extra.normal_, extra.uniform_, extra.bernoulli_
    T.broadcast_to, T.addcmul, T.addcdiv = extra.broadcast_to, extra.addcmul, extra.addcdiv
    T.nan_to_num, T.median, T.unique = extra.nan_to_num, extra.median, extra.unique


_bind_extra()
