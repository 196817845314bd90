"""Module full backward hooks: the module's tensor inputs and outputs pass through identity
nodes (named as torch's, BackwardHookFunctionBackward) whose backward formulas see the
gradients with respect to the outputs (grad_output) and the inputs (grad_input)."""

from __future__ import annotations

import warnings
from typing import Any, List, Optional, Tuple

from ..._ops.backward_hook import backward_hook_identity
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.provenance import emit_module


def _input_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    hook, i = ctx
    return hook._on_input_grad(i, g)


def _output_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    hook, i = ctx
    return hook._on_output_grad(i, g)


class BackwardHook:
    """Set up for one forward call of a module that has full backward (pre-)hooks."""

    def __init__(self, module: Any, hooks: List[Any], pre_hooks: List[Any]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_inputs = 0
        self.input_slots: List[int] = []
        self.n_outputs = 0
        self.output_slots: List[int] = []
        self.grad_inputs: List[Optional[Tensor]] = []
        self.grad_outputs: List[Optional[Tensor]] = []
        self.pending_inputs = 0
        self.pending_outputs = 0

    # ---- forward --------------------------------------------------------------------------
    def setup_input_hook(self, args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        self.n_inputs = len(args)
        if not is_grad_enabled():
            return args
        out = list(args)
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and a.requires_grad:
                self.input_slots.append(i)
                out[i] = backward_hook_identity(a, _input_bw, (self, i))
        return tuple(out)

    def setup_output_hook(self, result: Any) -> Any:
        if not is_grad_enabled():
            return result
        single = isinstance(result, Tensor)
        outs = [result] if single else list(result) if isinstance(result, tuple) else None
        if outs is None:
            return result
        self.n_outputs = len(outs)
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and o.requires_grad:
                self.output_slots.append(i)
                outs[i] = backward_hook_identity(o, _output_bw, (self, i))
        return outs[0] if single else tuple(outs)

    # ---- backward -------------------------------------------------------------------------
    def _on_output_grad(self, i: int, g: Tensor) -> Tensor:
        if self.pending_outputs == 0:
            self.grad_outputs = [None] * self.n_outputs
            self.pending_outputs = len(self.output_slots)
        self.grad_outputs[i] = g
        self.pending_outputs -= 1
        if self.pending_outputs:
            return g
        grads = tuple(self.grad_outputs)
        for hook in self.pre_hooks:
            emit_module("module_pre", self.module, hook, grads)
            res = hook(self.module, grads)
            if res is not None:
                grads = _check(res, len(grads), "backward pre hook")
        if not self.input_slots and self.hooks:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module "
                "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/"
                "main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                "for more details.", UserWarning, stacklevel=2)
            none_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none_inputs, grads)
                if res is not None and any(r is not None for r in res):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
        self.grad_outputs = list(grads)
        return grads[i]

    def _on_input_grad(self, i: int, g: Tensor) -> Tensor:
        if self.pending_inputs == 0:
            self.grad_inputs = [None] * self.n_inputs
            self.pending_inputs = len(self.input_slots)
        self.grad_inputs[i] = g
        self.pending_inputs -= 1
        if self.pending_inputs:
            return g
        grads = tuple(self.grad_inputs)
        grad_outputs = tuple(self.grad_outputs) if self.grad_outputs else \
            (None,) * self.n_outputs
        for hook in self.hooks:
            emit_module("module", self.module, hook, grads)
            res = hook(self.module, grads, grad_outputs)
            if res is not None:
                res = _check(res, len(grads), "backward hook")
                if len(self.input_slots) > 1 and any(
                        res[j] is not grads[j] for j in self.input_slots if j != i):
                    raise RuntimeError(
                        "rustgrad: a full backward hook may replace grad_input only for "
                        "modules with one input that requires grad"
                    )
                grads = res
        return grads[i]


def _check(res: Any, n: int, what: str) -> Tuple[Any, ...]:
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) != n:
        raise RuntimeError(
            f"Backward hook returned an invalid number of grad_input, got {len(res)}, but "
            f"expected {n}"
        )
    return res
