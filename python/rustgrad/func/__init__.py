"""torch.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap,
linearize, functionalize), functional_call and stack_module_state, rearrange, on rustgrad's
reverse-mode autograd.

The derivative transforms run ``autograd.grad`` on stand-ins of the arguments (see
``rustgrad.func._grad``); forward-mode products use the double-vjp trick (two backward passes);
``vmap`` runs batching rules per op family and loops over the batch where none applies (see
``rustgrad.func._vmap`` and ``_batching``). They nest with each
other and compose with ``.backward()``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.utils.stateless import _functional_call
from ._einops import rearrange
from ._extras import (
    debug_unwrap,
    functionalize,
    linearize,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._grad import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "vjp", "vmap", "linearize", "functionalize", "rearrange", "stack_module_state",
           "replace_all_batch_norm_modules_", "debug_unwrap"]


def functional_call(module: Module,
                    parameter_and_buffer_dicts: Union[Dict[str, Tensor],
                                                      Sequence[Dict[str, Tensor]]],
                    args: Any = None, kwargs: Optional[Dict[str, Any]] = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Calls ``module(*args, **kwargs)`` with the given tensors in place of its parameters and
    buffers of the same (dotted) names, then puts the module's own back.

    With a list or tuple of dicts their union is used (a name in two of them is an error).
    Gradients flow to the given tensors, so this turns a module into a function of its
    parameters for :func:`grad`, :func:`jacrev` or :func:`vmap`.

    Args:
        module (Module): the module to call.
        parameter_and_buffer_dicts (dict or sequence of dicts): name -> tensor.
        args (Any or tuple): the positional arguments (one that is not a tuple is the only
            argument).
        kwargs (dict, optional): the keyword arguments.

    Keyword args:
        tie_weights (bool): a tensor registered under several names takes the value given for
            any of them. Default: ``True``.
        strict (bool): the dicts must give exactly the module's parameters and buffers.
            Default: ``False``.

    Example::

        >>> from rustgrad.func import functional_call, grad
        >>> m = nn.Linear(2, 1, bias=False)
        >>> x = torch.tensor([[1.0, 2.0]])
        >>> loss = lambda p: functional_call(m, p, (x,)).sum()
        >>> grad(loss)({"weight": torch.zeros(1, 2)})
        {'weight': tensor([[1., 2.]])}
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        merged = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a "
                                 f"list/tuple of dicts, but got {type(d)}")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        for d in parameter_and_buffer_dicts:
            merged.update(d)
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights,
                            strict=strict)
