"""rustgrad.optim.swa_utils: stochastic weight averaging and exponential moving averages of a
model's weights (torch.optim.swa_utils): AveragedModel, SWALR, update_bn and the averaging
functions.

A typical SWA run: train as usual, then from some epoch on keep a running average of the
weights and anneal the learning rate to a constant; finally recompute BatchNorm's statistics
for the averaged weights. Example::

    >>> from rustgrad.optim.swa_utils import SWALR, AveragedModel, update_bn
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> swa_model, swa_sched = AveragedModel(model), SWALR(opt, swa_lr=0.05, anneal_epochs=2)
    >>> data = [torch.randn(16, 4) for _ in range(3)]
    >>> for x in data:
    ...     opt.zero_grad()
    ...     model(x).pow(2).mean().backward()
    ...     opt.step()
    ...     swa_model.update_parameters(model)
    ...     swa_sched.step()
    >>> int(swa_model.n_averaged)
    3
    >>> update_bn(data, swa_model)
    >>> int(swa_model.module[1].num_batches_tracked)
    3
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = [
    "AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
    "get_ema_avg_fn", "get_swa_avg_fn",
]

PARAM_LIST = Union[Tuple[Tensor, ...], List[Tensor]]
AvgFn = Callable[[Tensor, Tensor, Union[Tensor, int]], Tensor]
MultiAvgFn = Callable[[PARAM_LIST, PARAM_LIST, Union[Tensor, int]], None]


def _is_float(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place exponential moving average over lists of tensors, for
    ``AveragedModel(multi_avg_fn=...)``: ``ema = decay * ema + (1 - decay) * current``.

    Raises:
        ValueError: if ``decay`` is outside [0, 1].
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param_list: PARAM_LIST, current_param_list: PARAM_LIST, _: Any) -> None:
        with no_grad():
            if _is_float(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place running mean over lists of tensors, for ``AveragedModel(multi_avg_fn=...)``:
    ``avg += (current - avg) / (n + 1)`` after ``n`` models averaged."""

    def swa_update(averaged_param_list: PARAM_LIST, current_param_list: PARAM_LIST,
                   num_averaged: Union[Tensor, int]) -> None:
        with no_grad():
            if _is_float(averaged_param_list[0]):
                # torch's foreach lerp reads a tensor weight as a number: 1 / (n + 1) in the
                # default dtype (float32), even for float64 parameters
                weight = 1 / (num_averaged + 1)
                if isinstance(weight, Tensor):
                    weight = weight.item()
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, Tensor):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """An exponential moving average of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``decay * ema + (1 - decay) * current``.

    Raises:
        ValueError: if ``decay`` is outside [0, 1].
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """A running mean of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``avg + (current - avg) / (n + 1)`` after ``n`` models averaged."""

    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Union[Tensor, int]) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(
        averaged: Sequence[Tensor],
        current: Sequence[Tensor]) -> Dict[Tuple[Any, Any], Tuple[List[Tensor], List[Tensor]]]:
    groups: Dict[Tuple[Any, Any], Tuple[List[Tensor], List[Tensor]]] = {}
    for a, c in zip(averaged, current):
        mine, theirs = groups.setdefault((a.device, a.dtype), ([], []))
        mine.append(a)
        theirs.append(c)
    return groups


class AveragedModel(Module):
    """A copy of a model whose parameters are an average of the model's over time, for
    stochastic weight averaging (SWA) or an exponential moving average (EMA).

    The copy (``deepcopy(model)``) is ``self.module``; :meth:`update_parameters` folds the
    model's current parameters into it: the first call copies them, later ones average with
    ``avg_fn`` (per tensor) or ``multi_avg_fn`` (per list of tensors), by default the running
    mean. ``n_averaged`` (a buffer) counts the calls. Buffers are copied from the model, unless
    ``use_buffers``, which averages them with the parameters (then :func:`update_bn` is not
    needed).

    Args:
        model (Module): the model to average.
        device (str or device, optional): where to keep the averaged copy. Default: the
            model's device.
        avg_fn (callable, optional): ``avg_fn(averaged, current, n_averaged)`` returning the
            new average of one tensor.
        multi_avg_fn (callable, optional): ``multi_avg_fn(averaged_list, current_list,
            n_averaged)`` updating the averages in place.
        use_buffers (bool): average the buffers too. Default: ``False``.

    Example::

        >>> from rustgrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
        >>> model = nn.Linear(2, 1)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model)
        >>> bool((ema.module.weight == model.weight).all())
        True
        >>> sorted(ema.state_dict())
        ['module.bias', 'module.weight', 'n_averaged']
    """

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None, avg_fn: Optional[AvgFn] = None,
                 multi_avg_fn: Optional[MultiAvgFn] = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged",
                             _creation.tensor(0, dtype=_dtype.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Folds ``model``'s current parameters (and buffers, with ``use_buffers``) into the
        averages and counts one more model in ``n_averaged``."""
        self_param: Iterable[Tensor] = (
            itertools.chain(self.module.parameters(), self.module.buffers())
            if self.use_buffers else self.parameters())
        model_param: Iterable[Tensor] = (
            itertools.chain(model.parameters(), model.buffers())
            if self.use_buffers else model.parameters())
        self_detached: List[Tensor] = []
        model_detached: List[Tensor] = []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if bool(self.n_averaged > 0):
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_by_device_and_dtype(self_detached, model_detached)
                for (device, _), (self_params, model_params) in groups.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    elif device.type == "cuda" and _is_float(self_params[0]):
                        # torch's foreach path, which it takes on GPUs only (for integer
                        # buffers its addcdiv refuses; they take the per-tensor mean here)
                        get_swa_multi_avg_fn()(self_params, model_params, n_averaged)
                    else:
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_detached, model_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(
                        self.avg_fn(p_averaged.detach(), p_model, n_averaged))

        if not self.use_buffers:
            # the averaged model's buffers follow the current model's (update_bn recomputes
            # BatchNorm's for the averaged weights)
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recomputes the running statistics of ``model``'s BatchNorm layers with one pass over
    ``loader`` (their cumulative average over all its batches), for averaged weights.

    Each batch is the loader's item (its first element when it is a list or tuple), moved to
    ``device`` when one is given. The model runs in training mode under ``no_grad``; its mode
    and the layers' momenta are restored afterwards.

    Args:
        loader (iterable): the batches.
        model (Module): the model (an :class:`AveragedModel`, say).
        device (str or device, optional): where to move each batch.
    """
    with no_grad():
        momenta: Dict[Module, Optional[float]] = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            # None: a cumulative average over the batches
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for bn_module, momentum in momenta.items():
            bn_module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each param group's learning rate from its current value to ``swa_lr`` over
    ``anneal_epochs`` steps (cosine or linear), then holds it there: the schedule of the SWA
    phase.

    Args:
        optimizer (Optimizer): the optimizer.
        swa_lr (float or list): the learning rate(s) to reach, one or one per group.
        anneal_epochs (int): steps of annealing (0: jump to ``swa_lr``). Default: ``10``.
        anneal_strategy (str): ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        last_epoch (int): the index of the last epoch. Default: ``-1``.

    Raises:
        ValueError: if ``anneal_strategy`` is unknown or ``anneal_epochs`` is not a
            non-negative int.

    Example::

        >>> from rustgrad.optim.swa_utils import SWALR
        >>> opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.5, anneal_epochs=2, anneal_strategy="linear")
        >>> lrs = []
        >>> for _ in range(3):
        ...     opt.step()
        ...     sched.step()
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        >>> lrs
        [0.75, 0.5, 0.5]
    """

    def __init__(self, optimizer: Optimizer, swa_lr: Union[float, List[float]],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        # the lr the previous step started annealing from, given where it got to
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> List[float]:
        """The learning rates of the current step, one per param group."""
        self._warn_get_lr()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func: Callable[[float], float] = (
            self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal)

    def state_dict(self) -> Dict[str, Any]:
        """The scheduler's state (every attribute but the optimizer and the anneal function)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores the state given by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
