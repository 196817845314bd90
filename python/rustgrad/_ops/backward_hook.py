"""The identity node of module full backward hooks (torch's BackwardHookFunctionBackward): a
module's tensor inputs and outputs pass through it, and its backward formula hands each
gradient to the hook machinery of `nn.modules._backward_hook`, which may replace it."""

from __future__ import annotations

from typing import Any, Callable

from .._tensor import Tensor
from ._node import node


def _hook_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    backward, hook_ctx = ctx
    return backward(g, saved, hook_ctx)


# the formula is the hook machinery's, carried in ctx with its own ctx
BACKWARD_HOOK = node("BackwardHookFunctionBackward", _hook_bw)


def backward_hook_identity(input: Tensor, backward: Callable[[Tensor, Any, Any], Any],
                           ctx: Any) -> Tensor:
    """A view of input (same data, same version counter) whose node's backward formula is
    `backward(grad, saved, ctx)`."""
    return BACKWARD_HOOK.record(input._data, (input,), (backward, ctx), input)
