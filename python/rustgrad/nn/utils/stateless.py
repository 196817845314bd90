"""rustgrad.nn.utils.stateless: calling a module with other tensors in place of its parameters
and buffers (torch.nn.utils.stateless.functional_call)."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Dict, Iterator, List, Optional, Set

from ..._tensor import Tensor
from ..modules.module import Module

# the module, not the class: nn.parallel is still being imported when nn.modules.rnn (through
# nn.utils.rnn) gets here
from ..parallel import data_parallel as _data_parallel

__all__ = ["functional_call"]

# the "no such attribute" marker of a swap: the name is deleted, not assigned, when swapping back
_MISSING: Any = object()


def _submodule(module: Module, path: str, memo: Dict[str, Module]) -> Module:
    if not path:
        return module
    if path in memo:
        return memo[path]
    prefix, _, attr = path.rpartition(".")
    parent = _submodule(module, prefix, memo)
    try:
        sub = getattr(parent, attr)
    except AttributeError as ex:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
    if not isinstance(sub, Module):
        raise TypeError(f"submodule `{path}`: {sub} is not an instance of torch.nn.Module")
    memo[path] = sub
    return sub


def _swap_tensor(module: Module, name: str, tensor: Any) -> Any:
    """Puts `tensor` at module.<name> (in _parameters or _buffers directly where the name is
    registered, so that any tensor fits there) and returns what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for registry in (module._parameters, module._buffers):
        if name in registry:
            orig = registry[name]
            if tensor is _MISSING:
                del registry[name]
            else:
                registry[name] = tensor
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def _swap_all(module: Module, named: Dict[str, Any], memo: Dict[str, Module]) -> Dict[str, Any]:
    """Swaps every tensor of `named` in; on an error, swaps back those already swapped."""
    originals: Dict[str, Any] = {}
    try:
        for path, tensor in named.items():
            prefix, _, attr = path.rpartition(".")
            originals[path] = _swap_tensor(_submodule(module, prefix, memo), attr, tensor)
    except Exception:
        for path, orig in originals.items():
            prefix, _, attr = path.rpartition(".")
            _swap_tensor(_submodule(module, prefix, memo), attr, orig)
        raise
    return originals


def _untie_named_tensors_map(module: Module,
                             parameters_and_buffers: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """`parameters_and_buffers` with every name tied to a given one (the same tensor
    registered under several names) mapped to the given value too."""
    all_named: Dict[str, Tensor] = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_of: Dict[int, Set[str]] = {}
    for name, tensor in all_named.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied: Dict[str, Set[str]] = {}
    for names in names_of.values():
        if len(names) > 1:
            for name in names:
                tied[name] = names
    given = set(parameters_and_buffers)
    given_tied = {name for name in given if name in tied}
    for name in given_tied:
        names = tied[name]
        values = {id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}
        if len(names & given_tied) > 1 and len(values) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: Dict[str, Tensor],
                          tie_weights: bool = False, strict: bool = False) -> Iterator[None]:
    untied = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
              else parameters_and_buffers)
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(untied)), sorted(set(untied) - valid)
        error_msgs: List[str] = []
        if unexpected:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(error_msgs)))
    memo: Dict[str, Module] = {}
    originals: Dict[str, Any] = {}
    try:
        originals = _swap_all(module, untied, memo)
        yield
    finally:
        current = _swap_all(module, originals, memo)
        # a forward that rebinds a registered tensor (BatchNorm's counters, say) leaves the new
        # tensor where the caller can see it, as torch does
        parameters_and_buffers.update(
            {k: current[k] for k in parameters_and_buffers if k in current})


def functional_call(module: Module, parameters_and_buffers: Dict[str, Tensor],
                    args: Any = None, kwargs: Optional[Dict[str, Any]] = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Calls ``module(*args, **kwargs)`` with the tensors of ``parameters_and_buffers`` in place
    of the module's parameters and buffers of the same (dotted) names, then puts the module's
    own back.

    Gradients flow to the given tensors, not to the module's parameters. Names the dict does
    not give keep the module's tensors. Deprecated in torch 2 in favour of
    ``torch.func.functional_call``: warns with a ``FutureWarning``, as torch does.

    Args:
        module (Module): the module to call.
        parameters_and_buffers (dict of str to Tensor): the tensors to use, by their names in
            ``module.named_parameters()`` / ``named_buffers()``.
        args (Any or tuple): the positional arguments (one that is not a tuple is the only
            argument).
        kwargs (dict, optional): the keyword arguments.

    Keyword args:
        tie_weights (bool): a tensor registered under several names (tied weights) takes the
            value given for any of them. Default: ``True``.
        strict (bool): the dict must give exactly the module's parameters and buffers.
            Default: ``False``.

    Returns:
        what the module returns.

    Raises:
        RuntimeError: if ``strict`` and the names differ.
        ValueError: if tied names are given different tensors.

    Example::

        >>> import warnings
        >>> from rustgrad.nn.utils.stateless import functional_call
        >>> m = nn.Linear(2, 1)
        >>> w = torch.ones(1, 2, requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     out = functional_call(m, {"weight": w, "bias": torch.zeros(1)},
        ...                           (torch.tensor([[1.0, 2.0]]),))
        >>> out
        tensor([[3.]], grad_fn=<AddmmBackward0>)
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module: Module, parameters_and_buffers: Dict[str, Tensor],
                     args: Any = None, kwargs: Optional[Dict[str, Any]] = None, *,
                     tie_weights: bool = True, strict: bool = False) -> Any:
    if isinstance(module, _data_parallel.DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)
