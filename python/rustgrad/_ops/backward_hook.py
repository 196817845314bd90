"""The identity node of module full backward hooks (torch's BackwardHookFunctionBackward): a
module's tensor inputs and outputs pass through it, and its backward formula hands each
gradient to the hook machinery of `nn.modules._backward_hook`, which may replace it."""

from __future__ import annotations

from typing import Any, Callable

from .._tensor import Tensor
from ._util import record

BACKWARD_HOOK_NODE = "BackwardHookFunctionBackward"


def backward_hook_identity(input: Tensor, backward: Callable[[Tensor, Any, Any], Any],
                           ctx: Any) -> Tensor:
    """A view of input (same data, same version counter) whose node's backward formula is
    `backward(grad, saved, ctx)`."""
    return record(input._data, (input,), BACKWARD_HOOK_NODE, backward, None, ctx, False, input)
