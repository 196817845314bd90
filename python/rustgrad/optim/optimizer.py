"""Optimizer: the base class with torch's param groups, state, state_dict and step hooks.

Updates run in place on the parameters' arrays (through the device's array namespace), bump
the parameters' version counters and record nothing, as torch's steps under no_grad.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain
from typing import Any, Callable, DefaultDict, Dict, Iterable, List, Optional, Union

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]

ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]], Iterable[tuple]]


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()

_global_pre_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
_global_post_hooks: Dict[int, Callable[..., Any]] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _type_name(t: Any) -> str:
    if isinstance(t, Tensor):
        return "torch." + _dtype.LEGACY_NAMES[t.dtype.name]
    return type(t).__name__


def _with_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if isinstance(res, tuple) and len(res) == 2:
                    args, kwargs = res
                else:
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but "
                        f"got {res}."
                    )
        with no_grad():
            out = step(self, *args, **kwargs)
        self._opt_called = True
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True  # type: ignore[attr-defined]
    return wrapper


class Optimizer:
    """Base class of the optimizers: holds param_groups (lists of parameters with their
    options) and per-parameter state."""

    state: DefaultDict[Tensor, Dict[str, Any]]
    param_groups: List[Dict[str, Any]]
    _opt_called: bool  # set by the first step (lr_scheduler warns when it runs before one)
    defaults: Dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_hooks(step)  # type: ignore[method-assign]

    def __init__(self, params: ParamsT, defaults: Dict[str, Any]) -> None:
        if defaults.get("differentiable"):
            raise NotImplementedError(
                "rustgrad: differentiable=True (an optimizer step recorded in the graph) is not "
                "supported; steps run in place under no_grad"
            )
        self.defaults = defaults
        self._optimizer_step_pre_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_step_post_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
        self._zero_grad_profile_name = "Optimizer.zero_grad"
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_type_name(params)}"
            )
        if isinstance(params, set):
            warnings.warn(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead. This will be an error in a future release.",
                FutureWarning,
                stacklevel=2,
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> Dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---- param groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters with its own options (e.g. a layer with another lr).

        Options the group leaves out take the optimizer's defaults. A parameter may belong to only
        one group.

        Args:
            param_group (dict): ``{"params": [...], <option>: value, ...}``.

        Example::

            >>> w = torch.zeros(1, requires_grad=True)
            >>> opt = torch.optim.SGD([w], lr=0.1)
            >>> opt.add_param_group({"params": [torch.zeros(2, requires_grad=True)], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead."
            )
        else:
            param_group["params"] = list(params)
        extracted: List[Tensor] = []
        names: List[str] = []
        for p in param_group["params"]:
            if isinstance(p, tuple):
                name, p = p
                names.append(name)
            extracted.append(p)
        if names:
            if len(names) != len(extracted):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        param_group["params"] = extracted
        for param in extracted:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + _type_name(param)
                )
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        params_list = param_group["params"]
        if len(params_list) != len({id(p) for p in params_list}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information", stacklevel=3)
        param_set: set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer"
                )
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- grads ----------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all the optimized parameters.

        `backward` accumulates into ``.grad``, so call this before each step's backward.

        Args:
            set_to_none (bool): set ``.grad`` to None (the default, cheaper) instead of filling it
                with zeros.
        """
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step; each optimizer class defines it.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss (required by
                some optimizers, such as LBFGS).
        """
        raise NotImplementedError

    # ---- hooks ----------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)``, called before each `step`.

        The hook may return a new ``(args, kwargs)`` for the step. Returns a handle with
        ``remove()``.
        """
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)``, called after each `step`. Returns a handle
        with ``remove()``.
        """
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # ---- state_dict -----------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}, with
        parameters numbered in group order, as torch.

        The per-parameter state (momentum buffers, moment estimates, step counts) is keyed by
        the parameter's position instead of the tensor, so the dict can be saved and loaded into
        an optimizer over another model's parameters. The tensors in it are not copied.

        Example::

            >>> w = torch.tensor([1.0], requires_grad=True)
            >>> opt = torch.optim.Adam([w], lr=0.1)
            >>> (w ** 2).sum().backward()
            >>> opt.step()
            >>> sd = opt.state_dict()
            >>> sorted(sd["state"][0]), sd["param_groups"][0]["params"]
            (['exp_avg', 'exp_avg_sq', 'step'], [0])
        """
        param_mappings: Dict[int, int] = {}
        start_index = 0

        def pack_group(group: Dict[str, Any]) -> Dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _process_value(param: Tensor, value: Any, key: Any = None) -> Any:
        if isinstance(value, Tensor):
            if key == "step":
                return value
            if param.is_floating_point():
                return value.to(param.dtype).to(param.device)
            return value.to(param.device)
        if isinstance(value, dict):
            return {k: Optimizer._process_value(param, v, key=k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):  # fresh containers, as torch's (LBFGS's history)
            return type(value)(Optimizer._process_value(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores the state and the group options from `state_dict` (as given by `state_dict()`).

        The optimizer must have been built over parameter groups of the same sizes; its
        parameters are matched to the saved state by position. Floating-point state tensors
        (other than ``step``) are cast to their parameter's dtype and device.

        Args:
            state_dict (dict): the optimizer state, from `state_dict()`.
        """
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: DefaultDict[Tensor, Dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._process_value(param, v)
            else:
                state[k] = v

        def update_group(group: Dict[str, Any], new_group: Dict[str, Any]) -> Dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__dict__["state"] = state
        self.__dict__["param_groups"] = [update_group(g, ng) for g, ng in
                                         zip(groups, saved_groups)]

    # ---- helpers for the subclasses -------------------------------------------------------
    @staticmethod
    def _params_with_grad(group: Dict[str, Any]) -> List[Tensor]:
        return [p for p in group["params"] if p.grad is not None]

    @staticmethod
    def _closure_loss(closure: Optional[Callable[[], Any]]) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()


_UNSET: Any = object()


def check_args(lr: Any = _UNSET, *, eps: Any = _UNSET, betas: Any = _UNSET,
               weight_decay: Any = _UNSET) -> None:
    """The argument checks torch's optimizers share, in torch's order (an argument left out is
    not checked)."""
    if lr is not _UNSET:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not _UNSET and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not _UNSET:
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    if weight_decay is not _UNSET and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _zeros_like(p: Tensor) -> Tensor:
    return _creation.zeros_like(p)


def _step_tensor(value: float = 0.0) -> Tensor:
    # torch's _get_scalar_dtype: float64 only when that is the default dtype
    default = _dtype.get_default_dtype()
    return _creation.tensor(value, dtype=default if default is _dtype.float64 else _dtype.float32)


def _fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c, as torch's add(alpha=), addcmul and lerp. torch's vectorized CPU kernels fuse
    this into one rounding (fmadd); emulating that in float64 cost 3x the whole training step,
    so float32 parameters here round twice and may differ from torch's in the last bit."""
    return a * b + c


def _lerp_(xp: Any, a: Any, b: Any, w: float) -> None:
    """a <- lerp(a, b, w) in place, with torch's two formulas."""
    diff = b - a
    if abs(w) < 0.5:
        a[...] = _fma(xp, w, diff, a)
    else:
        a[...] = _fma(xp, -(1 - w), diff, b)
