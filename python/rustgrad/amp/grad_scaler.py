"""GradScaler: torch's dynamic loss scaling, with its states, errors and scale updates.

rustgrad has float16 tensors, so scaling is computed for real where it is enabled: on the cpu
(`GradScaler("cpu")`), and on cuda where CuPy sees a GPU. `GradScaler("cuda")` on a machine
without CUDA warns and disables itself, as torch's: then scale() returns its input, step() calls
optimizer.step() and update() does nothing."""

from __future__ import annotations

import math
import struct
import warnings
from collections import abc
from typing import Any, Dict, List, Optional, Union

from .. import _backends, _creation, _dtype, cuda
from .._tensor import Tensor
from ..autograd import no_grad

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _fresh_state() -> Dict[str, Any]:
    # found_inf_per_device: device -> a float32 array of one element, 1 where a gradient on that
    # device held inf/NaN (written on the device); found_inf: their verdict, read once (a host
    # sync per device) by step() or update()
    return {"stage": _READY, "found_inf_per_device": None, "found_inf": None}


def _found_inf(state: Dict[str, Any]) -> Optional[bool]:
    """Whether unscale_() found inf/NaN in the optimizer's gradients (None before it ran)."""
    if state["found_inf"] is None and state["found_inf_per_device"] is not None:
        state["found_inf"] = any(bool(_backends.namespace(dev).to_numpy(f)[0])
                                 for dev, f in state["found_inf_per_device"].items())
    return state["found_inf"]


def _unscale_grads(grads: List[Tensor], inv_scale: float) -> Any:
    """Each grad (all on one device) *= inv_scale in place; returns a float32 array of one
    element on their device, 1 where one of them held inf/NaN before. One kernel launch per
    gradient where the backend has the kernel (CUDA), else array operations; never a host
    sync."""
    xp = grads[0]._backend
    with _backends.device_guard(grads[0].device):
        found = xp.zeros((1,), dtype=xp.float32)
        kernel = xp.kernels.non_finite_check_and_unscale
        for grad in grads:
            gd = grad._data
            if kernel is not None and kernel(gd, found, inv_scale):
                grad._bump_version()
                continue
            bad = xp.logical_not(xp.isfinite(gd)).any()  # checked before scaling, as torch's
            xp.maximum(found, bad, out=found)
            with no_grad(), _backends.host_errstate(over="ignore"):  # overflow: torch's inf
                grad.mul_(inv_scale)
    return found


class GradScaler:
    """Multiplies the loss by a scale factor, unscales gradients before the step, skips steps
    whose gradients overflowed, and grows or backs off the scale.

    Each iteration: ``scaler.scale(loss).backward()`` (gradients come out multiplied by the
    scale), ``scaler.step(optimizer)`` (divides them by the scale, then steps unless one of them
    is inf or NaN), ``scaler.update()`` (after a skipped step the scale is multiplied by
    backoff_factor; after growth_interval steps in a row without one, by growth_factor).

    Args:
        device (str): ``"cuda"`` or ``"cpu"``; ``"cuda"`` without a GPU disables the scaler
            (with torch's warning). Default: ``"cuda"``.
        init_scale (float): the first scale. Default: ``2.0**16``.
        growth_factor (float): what the scale is multiplied by to grow (> 1). Default: ``2.0``.
        backoff_factor (float): what the scale is multiplied by after an overflow (< 1).
            Default: ``0.5``.
        growth_interval (int): the clean steps before the scale grows. Default: ``2000``.
        enabled (bool): when False, scale() returns its input, step() just steps and update()
            does nothing. Default: ``True``.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.SGD([w], lr=0.1)
        >>> scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        >>> scaler.scale((w ** 2).sum()).backward()
        >>> w.grad  # scaled by 1024
        tensor([ 2048., -4096.])
        >>> scaler.step(opt)  # unscales, then steps
        >>> scaler.update()
        >>> w
        tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available."
                              "  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = float(init_scale)
            self._scale: Optional[float] = None  # set on the first scale(), as torch's
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker: Optional[int] = None
            self._per_optimizer_states: Dict[int, Dict[str, Any]] = {}

    def _state_of(self, optimizer: Any) -> Dict[str, Any]:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    def _check_scale(self, funcname: str) -> float:
        msg = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  {msg}"
        return self._scale

    def _lazy_init(self) -> None:
        if self._scale is None:
            self._scale = self._init_scale
            self._growth_tracker = self._init_growth_tracker

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor or an iterable of them) times the scale factor.

        Args:
            outputs (Tensor or iterable of Tensors): usually the loss; lists and tuples keep
                their type.
        """
        if not self._enabled:
            return outputs
        self._lazy_init()

        def apply(val: Any) -> Any:
            if isinstance(val, Tensor):
                factor = _creation.full((), self._scale, dtype=_dtype.float32, device=val.device)
                return val * factor
            if isinstance(val, abc.Iterable):
                mapped = map(apply, val)
                return type(val)(mapped) if isinstance(val, (list, tuple)) else mapped
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divides optimizer's gradients by the scale in place, and notes any inf/NaN in them.

        Call it before step() to work on the true gradients (to clip them, say); step() then
        does not unscale them again. At most once per optimizer between update()s.

        Args:
            optimizer (Optimizer): the optimizer whose parameters' gradients are unscaled.
        """
        if not self._enabled:
            return
        scale = self._check_scale("unscale_")
        state = self._state_of(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(_f32(1.0 / scale))  # reciprocal in float64, then float32, as torch
        by_device: Dict[str, List[Tensor]] = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.dtype.name == "float16":
                    raise ValueError("Attempting to unscale FP16 gradients.")
                by_device.setdefault(str(p.grad.device), []).append(p.grad)
        found = {dev: _unscale_grads(grads, inv_scale) for dev, grads in by_device.items()}
        state["found_inf_per_device"] = found
        state["found_inf"] = None if found else False
        state["stage"] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """optimizer.step() unless the unscaled gradients hold inf/NaN (then the step is skipped
        and None returned).

        Args:
            optimizer (Optimizer): the optimizer to step; its gradients are unscaled first
                unless unscale_() already did it.
            *args, **kwargs: passed to ``optimizer.step`` (a closure is not supported).
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._state_of(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        retval = None if _found_inf(state) else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale: Optional[Union[float, Any]] = None) -> None:
        """Backs the scale off after an overflow, grows it after growth_interval clean steps
        (or sets new_scale).

        Args:
            new_scale (float or Tensor, optional): the scale to use from now on (a one-element
                tensor that does not require grad), instead of the automatic update.
        """
        if not self._enabled:
            return
        scale = self._check_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale = float(_f32(new_scale))
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale = float(new_scale.item())
        else:
            found = [f for f in map(_found_inf, self._per_optimizer_states.values())
                     if f is not None]
            assert len(found) > 0, "No inf checks were recorded prior to update."
            if any(found):
                self._scale = float(_f32(scale * self._backoff_factor))
                self._growth_tracker = 0
            else:
                tracker = (self._growth_tracker or 0) + 1
                if tracker == self._growth_interval:
                    grown = float(_f32(scale * self._growth_factor))
                    if math.isfinite(grown):
                        self._scale = grown
                    tracker = 0
                self._growth_tracker = tracker
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when scaling is disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the factor the scale backs off by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of clean steps before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the number of clean steps before the scale grows."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        """Whether this scaler scales (False after it disabled itself)."""
        return self._enabled

    def state_dict(self) -> Dict[str, Any]:
        """scale, growth/backoff factors, interval and tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores what state_dict() returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker


def _f32(x: float) -> float:
    """x rounded to float32, as torch's float32 scale tensor holds it."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # beyond float32's range
        return math.copysign(math.inf, x)
