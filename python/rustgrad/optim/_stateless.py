"""swap_in_optimizer_params_and_state: run an optimizer's steps on other parameters and state
for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, Dict, Iterator, List, Tuple

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_API = "swap_in_optimizer_params_and_state"


def _checked(optimizer: Optimizer, swapin_parameters: Dict[str, Tensor],
             swapin_optim_state: Any) -> Tuple[Dict[Any, Any], List[Tuple[dict, dict, list]]]:
    """The swap-in state and, per group, (live group, swap-in group, swap-in parameters), after
    torch's checks in torch's order."""
    if not optimizer.state:
        raise RuntimeError(f"{_API} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_API} requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict):
        raise RuntimeError(f"{_API} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_API} requires optimizer.state_dict()-style state keyed by packed "
                           "parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_API} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_API} requires swapin_optim_state['param_groups'] to be a list of "
                           f"param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    tensors = list(swapin_parameters.values())
    offset = 0
    seen: set = set()
    plan = []
    for idx, (live, new) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(new, dict):
            raise RuntimeError(f"{_API} requires each optimizer param group to be a dictionary.")
        ids = new.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError(f"{_API} requires optimizer.state_dict()-style "
                               "param_groups[*]['params'] entries keyed by packed parameter ids.")
        if len(live["params"]) != len(ids):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                               "params than the live optimizer param group.")
        only_new = [k for k in new if k not in live]
        only_live = [k for k in live if k not in new]
        if only_new or only_live:
            raise RuntimeError(f"{_API} requires optimizer.state_dict()-style param group keys "
                               "to exactly match the live optimizer group keys for group "
                               f"{idx}. Keys only in swap-in: {only_new}. Keys only in live: "
                               f"{only_live}.")
        seen.update(ids)
        if offset + len(ids) > len(tensors):
            raise RuntimeError(f"{_API} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        plan.append((live, new, tensors[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_API} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer,
                                       swapin_parameters: Dict[str, Tensor],
                                       swapin_optim_state: Dict[str, Any]) -> Iterator[None]:
    """Makes ``optimizer`` work on other parameters and state inside a ``with`` block, then
    puts its own back.

    Inside the block every optimizer API (``step``, hooks, ``state_dict``) sees the swapped-in
    parameters, state and group options. Unlike ``load_state_dict``, the parameters are
    replaced too, so ``step()`` updates the given tensors. The state's per-parameter dicts are
    shallow copies: updates in place of their tensors reach ``swapin_optim_state``, other
    changes do not.

    Args:
        optimizer (Optimizer): the optimizer; it must have state already (a step taken).
        swapin_parameters (dict): name -> tensor, in the order of the optimizer's parameters
            (the order of ``model.named_parameters()``, usually).
        swapin_optim_state (dict): an ``optimizer.state_dict()``-shaped dict: ``"state"`` keyed
            by packed parameter ids, ``"param_groups"`` with the live groups' keys.

    Example::

        >>> import copy
        >>> w = torch.ones(2, requires_grad=True)
        >>> opt = torch.optim.SGD([w], lr=0.5, momentum=0.9)
        >>> w.grad = torch.ones(2)
        >>> opt.step()
        >>> other = torch.zeros(2, requires_grad=True)
        >>> other.grad = torch.ones(2)
        >>> saved = copy.deepcopy(opt.state_dict())
        >>> with torch.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, saved):
        ...     opt.step()
        >>> other
        tensor([-0.9500, -0.9500], requires_grad=True)
        >>> saved["state"][0]["momentum_buffer"], opt.state[w]["momentum_buffer"]
        (tensor([1.9000, 1.9000]), tensor([1., 1.]))
    """
    state, plan = _checked(optimizer, swapin_parameters, swapin_optim_state)
    own_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: Any = defaultdict(dict)
        for live, new, tensors in plan:
            live["params"] = tensors
            live.update({k: v for k, v in new.items() if k != "params"})
            for t, i in zip(tensors, new["params"]):
                swapped[t] = dict(state.get(i, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = own_state
