"""The legacy spectral_norm / remove_spectral_norm (torch.nn.utils.spectral_norm): the weight
kept as ``<name>_orig``, with power-iteration buffers ``<name>_u`` and ``<name>_v``, and
``<name>`` recomputed by a forward pre-hook. :func:`rustgrad.nn.utils.parametrizations.
spectral_norm` is the current form."""

from __future__ import annotations

from typing import Any, Optional, TypeVar

from ..._ops.linalg import dot, mv
from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from ..modules.module import Module
from ..parameter import Parameter
from .parametrizations import _CONV_TRANSPOSE

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm`: sets ``module.<name>`` to
    ``<name>_orig / sigma`` before each forward, sigma estimated by power iteration (advanced
    ``n_power_iterations`` steps per forward in training mode).

    Args:
        name (str): the parameter's name. Default: ``"weight"``.
        n_power_iterations (int): power iterations per training forward. Default: ``1``.
        dim (int): the output dimension. Default: ``0``.
        eps (float): added to norms when normalising. Default: ``1e-12``.
    """

    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix whose rows run along ``dim``."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``<name>_orig / sigma``, after updating ``<name>_u`` and ``<name>_v`` in place when
        ``do_power_iteration``."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(weight_mat, v), dim=0, eps=self.eps))
                # clones: the buffers change in place at the next forward, after backward
                # has saved them
                u = u.clone()
                v = v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Puts the current normalised weight back as the parameter ``<name>``."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        """Moves ``module.<name>`` to ``<name>_orig``, adds the buffers and the hook."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward recomputes it
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


T_module = TypeVar("T_module", bound=Module)


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> T_module:
    """Divides ``module.<name>`` by its spectral norm before every forward (the legacy hook
    form; :func:`rustgrad.nn.utils.parametrizations.spectral_norm` is the current one).

    The parameter moves to ``<name>_orig``; the buffers ``<name>_u`` and ``<name>_v`` hold the
    power iteration's vectors (random at first, advanced ``n_power_iterations`` steps per
    forward in training mode); ``<name>`` becomes a plain attribute.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        n_power_iterations (int): power iterations per training forward. Default: ``1``.
        eps (float): added to norms when normalising. Default: ``1e-12``.
        dim (int, optional): the output dimension. Default: ``1`` for transposed
            convolutions, else ``0``.

    Returns:
        the module.

    Example::

        >>> m = nn.utils.spectral_norm(nn.Linear(20, 40))
        >>> m.weight_u.shape, m.weight_v.shape
        (torch.Size([40]), torch.Size([20]))
    """
    if dim is None:
        dim = 1 if isinstance(module, _CONV_TRANSPOSE) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undoes :func:`spectral_norm`: the current normalised weight becomes the parameter
    ``<name>`` again and the buffers go.

    Raises:
        ValueError: if ``module.<name>`` has no spectral norm.
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
