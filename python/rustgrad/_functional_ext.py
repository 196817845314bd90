"""The functional names of the ops in pointwise, reductions, gather, views and linalg_ext, as
torch spells them at top level (`rustgrad.sin(x)`, `rustgrad.einsum(...)`).

`NN_FUNCTIONAL` lists the ops torch only has in torch.nn.functional (softplus, gelu, ...), for
`rustgrad.nn.functional` to take from here; they are not exported at top level, as in torch."""

from __future__ import annotations

from ._ops import extra as _extra
from ._ops import gather as _gather
from ._ops import linalg_ext as _linalg_ext
from ._ops import pointwise as _pointwise
from ._ops import reductions as _reductions
from ._ops import views as _views

# pointwise
sin, cos, tan = _pointwise.sin, _pointwise.cos, _pointwise.tan
asin, acos, atan, atan2 = _pointwise.asin, _pointwise.acos, _pointwise.atan, _pointwise.atan2
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
sinh, cosh = _pointwise.sinh, _pointwise.cosh
exp2, expm1, log2, log10, log1p = (_pointwise.exp2, _pointwise.expm1, _pointwise.log2,
                                   _pointwise.log10, _pointwise.log1p)
rsqrt, square = _pointwise.rsqrt, _pointwise.square
floor, ceil, round, trunc, fix = (_pointwise.floor, _pointwise.ceil, _pointwise.round,  # noqa: A001
                                  _pointwise.trunc, _pointwise.trunc)
erf, lerp, fmod = _pointwise.erf, _pointwise.lerp, _pointwise.fmod
isnan, isinf, isfinite = _pointwise.isnan, _pointwise.isinf, _pointwise.isfinite
isposinf, isneginf = _pointwise.isposinf, _pointwise.isneginf
logical_and, logical_or = _pointwise.logical_and, _pointwise.logical_or
logical_not, logical_xor = _pointwise.logical_not, _pointwise.logical_xor

# reductions and scans
softmax, log_softmax = _reductions.softmax, _reductions.log_softmax
logsumexp = _reductions.logsumexp
prod, cumsum, cumprod = _reductions.prod, _reductions.cumsum, _reductions.cumprod
var, std, var_mean, std_mean = (_reductions.var, _reductions.std, _reductions.var_mean,
                                _reductions.std_mean)
norm, dist = _reductions.norm, _reductions.dist
amax, amin = _reductions.amax, _reductions.amin
all, any = _reductions.all, _reductions.any  # noqa: A001
argmax, argmin = _reductions.argmax, _reductions.argmin
topk, sort, argsort = _reductions.topk, _reductions.sort, _reductions.argsort

# index-driven
index_select, gather, take_along_dim = _gather.index_select, _gather.gather, _gather.take_along_dim
scatter, scatter_add = _gather.scatter, _gather.scatter_add
masked_fill, masked_select = _gather.masked_fill, _gather.masked_select
nonzero, argwhere = _gather.nonzero, _gather.argwhere

# views and copies
narrow, select, unbind = _views.narrow, _views.select, _views.unbind
split, split_with_sizes, chunk = _views.split, _views.split_with_sizes, _views.chunk
diagonal, movedim, moveaxis = _views.diagonal, _views.movedim, _views.moveaxis
tril, triu, flip, roll = _views.tril, _views.triu, _views.flip, _views.roll
repeat_interleave, tile = _views.repeat_interleave, _views.tile

# products
outer, ger, dot = _linalg_ext.outer, _linalg_ext.outer, _linalg_ext.dot
mv, mm, bmm = _linalg_ext.mv, _linalg_ext.mm, _linalg_ext.bmm
addmm, baddbmm = _linalg_ext.addmm, _linalg_ext.baddbmm
einsum, tensordot, kron = _linalg_ext.einsum, _linalg_ext.tensordot, _linalg_ext.kron
trace, diag, diag_embed = _linalg_ext.trace, _linalg_ext.diag, _linalg_ext.diag_embed

# more ops
index_add, index_put = _extra.index_add, _extra.index_put
broadcast_to, hstack, vstack = _extra.broadcast_to, _extra.hstack, _extra.vstack
addcmul, addcdiv, nan_to_num = _extra.addcmul, _extra.addcdiv, _extra.nan_to_num
randperm, median, unique = _extra.randperm, _extra.median, _extra.unique

__all__ = [
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "arcsin", "arccos", "arctan",
    "arctan2", "sinh", "cosh", "exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "square",
    "floor", "ceil", "round", "trunc", "fix", "erf", "lerp", "fmod", "isnan", "isinf",
    "isfinite", "isposinf", "isneginf", "logical_and", "logical_or", "logical_not",
    "logical_xor",
    "softmax", "log_softmax", "logsumexp", "prod", "cumsum", "cumprod", "var", "std",
    "var_mean", "std_mean", "norm", "dist", "amax", "amin", "all", "any", "argmax", "argmin",
    "topk", "sort", "argsort",
    "index_select", "gather", "take_along_dim", "scatter", "scatter_add", "masked_fill",
    "masked_select", "nonzero", "argwhere",
    "narrow", "select", "unbind", "split", "split_with_sizes", "chunk", "diagonal", "movedim",
    "moveaxis", "tril", "triu", "flip", "roll", "repeat_interleave", "tile",
    "outer", "ger", "dot", "mv", "mm", "bmm", "addmm", "baddbmm", "einsum", "tensordot", "kron",
    "trace", "diag", "diag_embed",
    "isclose", "allclose", "equal",
    "index_add", "index_put", "broadcast_to", "hstack", "vstack", "addcmul", "addcdiv",
    "nan_to_num", "randperm", "median", "unique",
]

# torch.nn.functional-only names (not exported above)
softplus, gelu, silu = _pointwise.softplus, _pointwise.gelu, _pointwise.silu
leaky_relu, elu, hardtanh = _pointwise.leaky_relu, _pointwise.elu, _pointwise.hardtanh
pad = _views.pad
vector_norm = _reductions.vector_norm  # torch.linalg.vector_norm
NN_FUNCTIONAL = ("softplus", "gelu", "silu", "leaky_relu", "elu", "hardtanh", "pad", "softmax",
                 "log_softmax")


# comparisons of whole tensors (no autograd: they return bools)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: ANN001,ANN201
    """torch.isclose: |input - other| <= atol + rtol * |other|, elementwise, as a bool tensor."""
    import numpy as _np

    from ._creation import _wrap
    from ._ops._util import _type_name, broadcast_error

    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_type_name(input.dtype)} did not match {_type_name(other.dtype)}")
    a, b = input._backend.to_numpy(input._data), other._backend.to_numpy(other._data)
    try:
        _np.broadcast_shapes(a.shape, b.shape)
    except ValueError as e:
        raise broadcast_error(e, a.shape, b.shape) from None
    return _wrap(_np.asarray(_np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: ANN001,ANN201
    """torch.allclose: whether isclose holds everywhere (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other):  # noqa: ANN001,ANN201
    """torch.equal: same shape and the same values (a Python bool)."""
    a, b = input._backend.to_numpy(input._data), other._backend.to_numpy(other._data)
    return a.shape == b.shape and bool((a == b).all())
