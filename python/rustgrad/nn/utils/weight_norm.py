"""The legacy weight_norm / remove_weight_norm (torch.nn.utils.weight_norm): the weight split
into ``<name>_g`` and ``<name>_v`` parameters and recomputed by a forward pre-hook.
:func:`rustgrad.nn.utils.parametrizations.weight_norm` is the current form."""

from __future__ import annotations

import warnings
from typing import Any, Optional, TypeVar

from ..modules.module import Module
from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm_fn

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: sets ``module.<name>`` to
    ``g * v / ||v||`` from the parameters ``<name>_g`` and ``<name>_v`` before each forward.

    Args:
        name (str): the parameter's name.
        dim (int or None): the dimension that keeps one norm per slice (None: one norm).
    """

    name: str
    dim: int

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        """The weight from ``module``'s ``<name>_g`` and ``<name>_v``."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm_fn(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: Optional[int]) -> WeightNorm:
        """Splits ``module.<name>`` into ``<name>_g`` and ``<name>_v`` and registers the hook."""
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Puts the current weight back as the parameter ``<name>``."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


T_module = TypeVar("T_module", bound=Module)


def weight_norm(module: T_module, name: str = "weight", dim: Optional[int] = 0) -> T_module:
    """Splits ``module.<name>`` into a magnitude ``<name>_g`` and a direction ``<name>_v``
    (deprecated, as in torch: use :func:`rustgrad.nn.utils.parametrizations.weight_norm`).

    Both become parameters and the weight, recomputed as ``g * v / ||v||`` before every
    forward, a plain attribute. Warns with a ``FutureWarning``.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        dim (int, optional): the dimension that keeps one norm per slice; ``None``: one norm
            over the whole tensor. Default: ``0``.

    Returns:
        the module.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     m = nn.utils.weight_norm(nn.Linear(20, 40), name="weight")
        >>> m.weight_g.shape, m.weight_v.shape
        (torch.Size([40, 1]), torch.Size([40, 20]))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undoes :func:`weight_norm`: the current weight becomes the parameter ``<name>`` again.

    Raises:
        ValueError: if ``module.<name>`` has no weight norm.
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
