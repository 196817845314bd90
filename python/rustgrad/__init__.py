"""rustgrad: reverse-mode autograd with PyTorch's semantics, a Rust engine and NumPy/CuPy
kernels. `import rustgrad as torch` works for everything rustgrad supports."""

from __future__ import annotations

import builtins as _builtins
from typing import Any as _Any

from . import (
    _backends,
    _core,
    _methods,  # noqa: F401  (binds ops to Tensor)
    _methods_ext,  # noqa: F401,E402
    autograd,
    cuda,
    memory,
    return_types,
)
from ._backends import device
from ._creation import (
    Generator,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    initial_seed,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from ._dtype import (
    bool_ as bool,  # noqa: A001  (torch.bool)
)
from ._dtype import (
    double,
    dtype,
    float,  # noqa: A004
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,  # noqa: A004
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from ._functional_ext import *  # noqa: F401,F403,E402
from ._legacy import (  # noqa: F401  (torch's typed constructors)
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from ._ops import arith as _arith
from ._ops import linalg as _linalg
from ._ops import reduce as _reduce
from ._ops import select as _select
from ._ops import shape as _shape
from ._ops import unary as _unary
from ._ops._util import can_require_grad as _can_require_grad
from ._ops._util import describe as _describe
from ._size import Size
from ._tensor import Tensor
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

_core._register(
    Tensor,
    autograd._accumulate_grad,
    _describe,
    _can_require_grad,
    _backends.cpu.ndarray,
    _backends.as_array,
)

# the functional namespace, named as torch's

_NUMBERS = (_builtins.bool, _builtins.int, _builtins.float)


def _scalar_first(op: _Any) -> _Any:
    """torch.add(2., x): a Python number as the first operand is a wrapped 0-d tensor."""

    def fn(input: _Any, other: _Any, *args: _Any, **kwargs: _Any) -> _Any:
        if isinstance(input, _NUMBERS) and isinstance(other, Tensor):
            input = tensor(input, device=other.device)
        return op(input, other, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = op.__name__
    fn.__doc__ = op.__doc__
    fn.__wrapped__ = op  # type: ignore[attr-defined]  (the op registry keys ops by it)
    return fn


def pow(input: _Any, exponent: _Any, **kwargs: _Any) -> _Any:
    if isinstance(input, _NUMBERS) and isinstance(exponent, Tensor):
        return _arith.rpow(exponent, input)  # torch's pow(Scalar, Tensor): PowBackward2
    return _arith.pow(input, exponent, **kwargs)


pow.__wrapped__ = _arith.pow  # type: ignore[attr-defined]


add, sub, mul, div = (_scalar_first(_arith.add), _scalar_first(_arith.sub),
                      _scalar_first(_arith.mul), _scalar_first(_arith.div))
subtract, multiply, divide, true_divide = sub, mul, div, div
neg, negative = _arith.neg, _arith.neg
remainder = _arith.remainder
exp, log, sqrt, abs = _unary.exp, _unary.log, _unary.sqrt, _unary.abs
relu, sigmoid, tanh, sign, reciprocal = _unary.relu, _unary.sigmoid, _unary.tanh, _unary.sign, _unary.reciprocal
clamp = clip = _unary.clamp
sum, mean, max, min = _reduce.sum, _reduce.mean, _reduce.max, _reduce.min
matmul = _linalg.matmul
reshape, flatten, transpose, t, permute = _shape.reshape, _shape.flatten, _shape.transpose, _shape.t, _shape.permute
unsqueeze, squeeze, cat, concat, stack = _shape.unsqueeze, _shape.squeeze, _shape.cat, _shape.cat, _shape.stack
clone = _shape.clone
where, maximum, minimum = _select.where, _select.maximum, _select.minimum
eq, ne, lt, le, gt, ge = _select.eq, _select.ne, _select.lt, _select.le, _select.gt, _select.ge


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def numel(t: Tensor) -> int:
    return t.numel()


def result_type(a: object, b: object) -> dtype:
    from ._dtype import result_type as _rt

    return _rt(a, b)


__version__ = "0.1.0"

from . import nn, optim, utils
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .serialization import load, save
