"""The ops this package builds on, gathered in one namespace (`from . import _rg as rg`).

A module below the package root may not import `rustgrad` itself (tests/test_import_layers.py),
so the names `rustgrad.where`, `rustgrad.lgamma`, ... are taken here from the op families and
the creation module that define them."""

from __future__ import annotations

from .._creation import (  # noqa: F401
    arange,
    empty,
    eye,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .._dtype import bool_, finfo, float64, get_default_dtype, int64  # noqa: F401
from .._ops.activation import log_softmax, logsigmoid, sigmoid, softmax, softplus  # noqa: F401
from .._ops.compare import maximum, minimum, where  # noqa: F401
from .._ops.gather import gather  # noqa: F401
from .._ops.joins import cat, stack  # noqa: F401
from .._ops.loss import binary_cross_entropy_with_logits  # noqa: F401
from .._ops.reduce import logsumexp  # noqa: F401
from .._ops.special import digamma, erfinv, lgamma, mvlgamma, xlogy  # noqa: F401
from .._size import Size  # noqa: F401
from .._tensor import Tensor  # noqa: F401
from ..autograd import enable_grad, grad, is_grad_enabled, no_grad  # noqa: F401
