"""rustgrad.nn.utils.prune: masking parameters to zero, as torch.nn.utils.prune.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, registers the 0/1 buffer
``weight_mask`` and a forward pre-hook that sets the plain attribute ``weight`` to
``weight_orig * weight_mask`` before every forward; pruning the same tensor again combines
the masks in a :class:`PruningContainer`, and :func:`remove` makes the pruning permanent.
Example::

    >>> import rustgrad.nn.utils.prune as prune
    >>> m = nn.Linear(4, 2)
    >>> with torch.no_grad():
    ...     _ = m.weight.copy_(torch.arange(8.0).reshape(2, 4))
    >>> _ = prune.l1_unstructured(m, "weight", amount=3)
    >>> m.weight
    tensor([[0., 0., 0., 3.],
            [4., 5., 6., 7.]], grad_fn=<MulBackward0>)
    >>> sorted(m.state_dict())
    ['bias', 'weight_mask', 'weight_orig']
    >>> _ = prune.remove(m, "weight")
    >>> sorted(name for name, _ in m.named_parameters())
    ['bias', 'weight']
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ... import _creation
from ..._ops.sort import sort, topk
from ..._tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
    "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
    "l1_unstructured", "random_structured", "ln_structured", "global_unstructured",
    "custom_from_mask", "remove", "is_pruned",
]


class BasePruningMethod(ABC):
    """The base of the pruning methods: a forward pre-hook that recomputes the pruned tensor.

    A subclass sets ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"`` with a ``dim``, or
    ``"global"``) and defines :meth:`compute_mask`; :meth:`apply` prunes a module's tensor.
    """

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask of ``t``, given the current one (``default_mask``): entries to prune
        are 0, the rest keep ``default_mask``'s value."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module`` (the mask cast to the tensor's dtype)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Optional[Tensor] = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prunes ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with any earlier
        pruning of it), ranking entries by ``importance_scores`` (default: the tensor)."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            # first pruning of this tensor: the parameter becomes <name>_orig
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _creation.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Optional[Tensor] = None,
              importance_scores: Optional[Tensor] = None) -> Tensor:
        """``t`` times the mask this method computes for it (``t`` itself is not changed)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _creation.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Makes the pruning permanent: ``<name>`` becomes a parameter again (the
        ``<name>_orig`` object, now holding the pruned values) and the mask goes."""
        if self._tensor_name is None:
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        assert orig is not None
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls: Any, module: Module, name: str, *args: Any,
                      **kwargs: Any) -> BasePruningMethod:
    """cls(*args, **kwargs), joined into a PruningContainer with the hook already pruning
    module.<name>, whose place it takes."""
    old_method = None
    found = 0
    hooks_to_remove = []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old_method = hook
            hooks_to_remove.append(k)
            found += 1
    if found > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    for k in hooks_to_remove:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old_method is not None:
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        else:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied to one tensor, one after the other: each new
    method prunes only what the earlier ones kept.

    Args:
        *args: the pruning methods (all on the same tensor name).
    """

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: Tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Appends a pruning method of the same tensor.

        Raises:
            TypeError: if ``method`` is not a pruning method.
            ValueError: if it prunes another tensor.
        """
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}."
                             f" Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the last method's mask applied to the part of ``t`` that is
        still unpruned (the kept entries, or the kept slices along a structured ``dim``)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc: Any = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     "the attribute `dim` defined.")
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            index: List[Any] = [slice(None)] * n_dims
            index[dim] = keep_channel
            slc = tuple(index)
        elif method.PRUNING_TYPE == "global":
            slc = tuple([slice(None)] * len(t.shape))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a way to add the ``_orig``/``_mask`` machinery)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        """Adds an all-ones mask to ``module.<name>``."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` of the entries, chosen uniformly at random.

    Args:
        amount (int or float): how many entries (an int) or what fraction of them (a float in
            [0, 1]) to prune.
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Union[int, float]) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` random entries set to 0."""
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            prob = _creation.rand_like(t)
            chosen = topk(prob.view(-1), k=nparams_toprune)
            mask.view(-1)[chosen.indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str,  # type: ignore[override]
              amount: Union[int, float]) -> BasePruningMethod:
        """Prunes ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value.

    Args:
        amount (int or float): how many entries (an int) or what fraction of them (a float in
            [0, 1]) to prune.
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Union[int, float]) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` smallest-magnitude entries of ``t`` set to 0."""
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            smallest = topk(t.abs().view(-1), k=nparams_toprune, largest=False)
            mask.view(-1)[smallest.indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: Union[int, float],  # type: ignore[override]
              importance_scores: Optional[Tensor] = None) -> BasePruningMethod:
        """Prunes the ``amount`` smallest entries of ``module.<name>`` (or of
        ``importance_scores``)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole slices along ``dim`` (channels), chosen at random.

    Args:
        amount (int or float): how many slices (an int) or what fraction of them (a float).
        dim (int): the dimension whose slices are pruned. Default: ``-1``.
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Union[int, float], dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` random slices along ``dim`` set to 0."""
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        prob = _creation.rand(tensor_size, device=t.device)
        # the k-th smallest draw: the slices above it are kept
        threshold = sort(prob).values[nparams_toprune - 1]
        mask = _creation.zeros_like(t)
        index: List[Any] = [slice(None)] * len(t.shape)
        index[self.dim] = prob > threshold
        mask[tuple(index)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: Union[int, float],  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        """Prunes ``amount`` random slices of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` slices along ``dim`` of smallest ``n``-norm.

    Args:
        amount (int or float): how many slices (an int) or what fraction of them (a float).
        n (int, float, inf, -inf, 'fro' or 'nuc'): the norm's order.
        dim (int): the dimension whose slices are pruned. Default: ``-1``.
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Union[int, float], n: Any, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` lowest-norm slices along ``dim`` set to 0."""
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        norm = _compute_norm(t, self.n, self.dim)
        kept = topk(norm, k=nparams_tokeep, largest=True)
        if nparams_toprune == 0:
            return default_mask
        mask = _creation.zeros_like(t)
        index: List[Any] = [slice(None)] * len(t.shape)
        index[self.dim] = kept.indices
        mask[tuple(index)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: Union[int, float],  # type: ignore[override]
              n: Any, dim: int, importance_scores: Optional[Tensor] = None) -> BasePruningMethod:
        """Prunes the ``amount`` lowest-norm slices of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (multiplied into the current one).

    Args:
        mask (Tensor): 0 where to prune, 1 elsewhere, of the tensor's shape.
    """

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask * mask``."""
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        """Prunes ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Adds the pruning machinery to ``module.<name>`` with an all-ones mask; returns the module.

    Example::

        >>> import rustgrad.nn.utils.prune as prune
        >>> m = prune.identity(nn.Linear(2, 3), "bias")
        >>> m.bias_mask
        tensor([1., 1., 1.])
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: Union[int, float]) -> Module:
    """Prunes ``amount`` entries of ``module.<name>`` chosen at random; returns the module.

    Args:
        module (Module): the module.
        name (str): the parameter to prune.
        amount (int or float): how many entries (an int) or what fraction (a float in [0, 1]).
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: Union[int, float],
                    importance_scores: Optional[Tensor] = None) -> Module:
    """Prunes the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` when given); returns the module.

    Args:
        module (Module): the module.
        name (str): the parameter to prune.
        amount (int or float): how many entries (an int) or what fraction (a float in [0, 1]).
        importance_scores (Tensor, optional): the values ranked instead of the parameter's.
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: Union[int, float], dim: int) -> Module:
    """Prunes ``amount`` random slices (channels) of ``module.<name>`` along ``dim``; returns
    the module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: Union[int, float], n: Any, dim: int,
                  importance_scores: Optional[Tensor] = None) -> Module:
    """Prunes the ``amount`` slices of ``module.<name>`` along ``dim`` of smallest ``n``-norm;
    returns the module.

    Args:
        module (Module): the module.
        name (str): the parameter to prune.
        amount (int or float): how many slices (an int) or what fraction (a float in [0, 1]).
        n: the norm's order (as ``torch.linalg.vector_norm``'s ``ord``, or ``'fro'``).
        dim (int): the dimension whose slices are pruned.
        importance_scores (Tensor, optional): the values ranked instead of the parameter's.

    Example::

        >>> import rustgrad.nn.utils.prune as prune
        >>> m = prune.ln_structured(nn.Conv2d(2, 4, 3), "weight", amount=0.5, n=2, dim=0)
        >>> int((m.weight_mask.sum(dim=(1, 2, 3)) == 0).sum())
        2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[Tuple[Module, str]], pruning_method: Any,
                        importance_scores: Optional[Dict[Tuple[Module, str], Tensor]] = None,
                        **kwargs: Any) -> None:
    """Prunes several tensors together, as if they were one: with ``L1Unstructured`` the
    smallest entries across all of them go, whichever tensor holds them.

    Args:
        parameters (iterable of (Module, str)): the tensors to prune.
        pruning_method (type): an unstructured pruning method, such as ``L1Unstructured``.
        importance_scores (dict, optional): ``(module, name) -> Tensor`` of values ranked
            instead of the tensors'.
        **kwargs: the method's arguments, such as ``amount``.

    Raises:
        TypeError: if ``parameters`` is not iterable or the method is not unstructured.

    Example::

        >>> import rustgrad.nn.utils.prune as prune
        >>> a, b = nn.Linear(4, 4), nn.Linear(4, 4)
        >>> prune.global_unstructured([(a, "weight"), (b, "weight")],
        ...                           pruning_method=prune.L1Unstructured, amount=10)
        >>> int((a.weight == 0).sum() + (b.weight == 0).sum())
        10
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    relevant_importance_scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name))
         for module, name in parameters])
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", _creation.ones_like(getattr(module, name)))
         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prunes ``module.<name>`` where ``mask`` is 0; returns the module.

    Example::

        >>> import rustgrad.nn.utils.prune as prune
        >>> m = prune.custom_from_mask(nn.Linear(5, 3), "bias", torch.tensor([0, 1, 0]))
        >>> m.bias_mask
        tensor([0., 1., 0.])
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Makes the pruning of ``module.<name>`` permanent: ``<name>`` becomes a parameter again,
    holding the pruned values, and ``<name>_orig``, ``<name>_mask`` and the hook go.

    Raises:
        ValueError: if ``module.<name>`` is not pruned.
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or one of its submodules has a pruning hook.

    Example::

        >>> import rustgrad.nn.utils.prune as prune
        >>> m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> prune.is_pruned(m)
        False
        >>> _ = prune.random_unstructured(m[0], "weight", amount=1)
        >>> prune.is_pruned(m)
        True
    """
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


# ---- checks and helpers -----------------------------------------------------------------------
def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount: int, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount: Union[int, float], tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n: Any, dim: int) -> Tensor:
    """The n-norm of each slice of t along dim (over all the other dimensions)."""
    dims: Sequence[int] = [d for d in range(t.dim()) if d != dim % t.dim()]
    if n == "nuc":
        raise NotImplementedError(
            "ln_structured with n='nuc' needs the nuclear norm (torch.linalg.matrix_norm with "
            "ord='nuc', a singular value decomposition), which rustgrad does not have yet")
    order = 2 if n == "fro" else n
    if order in (math.inf, -math.inf):
        a = t.abs()
        return a.amax(dim=list(dims)) if order > 0 else a.amin(dim=list(dims))
    return t.norm(order, dim=list(dims))
