"""rustgrad.nn.utils.parametrize: a module's parameter or buffer computed on every access from
unconstrained originals (torch.nn.utils.parametrize).

``register_parametrization(m, "weight", P)`` moves ``m.weight`` to
``m.parametrizations.weight.original`` and swaps ``m``'s class for a generated subclass
(``ParametrizedLinear`` for a ``Linear``) whose ``weight`` property returns ``P(original)``;
assigning to ``m.weight`` calls ``P.right_inverse``. Example::

    >>> import rustgrad.nn.utils.parametrize as P
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).mT
    >>> m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    >>> type(m).__name__, P.type_before_parametrizations(m).__name__
    ('ParametrizedLinear', 'Linear')
    >>> bool((m.weight == m.weight.mT).all())
    True
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original']
"""

from __future__ import annotations

import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from ..._tensor import Tensor
from ...autograd import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "cached", "ParametrizationList", "register_parametrization", "is_parametrized",
    "remove_parametrizations", "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

# nesting depth of `cached()` blocks and the values computed inside them, by (id(module), name)
_cache_enabled = 0
_cache: Dict[Tuple[int, str], Optional[Tensor]] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Computes each parametrized tensor once inside the block and reuses it.

    Inside ``with cached():`` the first access to a parametrized ``module.weight`` runs its
    parametrizations and keeps the result; later accesses (a weight shared by several layers,
    an RNN cell called at every step) return the same tensor. The values are dropped when the
    outermost block exits.

    Example::

        >>> import rustgrad.nn.utils.parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> with P.cached():
        ...     same = m.weight is m.weight
        >>> same, m.weight is m.weight
        (True, False)
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    # torch's `dest.set_(src)`: dest keeps its identity (an optimizer holds it) and takes src's
    # values, shape included
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its unconstrained original(s), as
    ``module.parametrizations[name]`` holds them (torch's ParametrizationList).

    It is built by :func:`register_parametrization`, not by hand. The original is registered
    as ``original`` (a Parameter if the tensor was one, else a buffer), or as ``original0``,
    ``original1``, ... when the first parametrization's ``right_inverse`` returns a sequence.
    Calling the list applies the parametrizations in registration order.

    Args:
        modules (sequence of Module): the parametrizations.
        original (Tensor): the parameter or buffer being parametrized.
        unsafe (bool): skip the checks that the parametrized tensor keeps the original's
            dtype and shape. Default: ``False``.
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor,
                 unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype

        # the originals are what the parametrizations, applied in order, map to `original`
        with no_grad():
            new: Any = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # taken to be the identity, as without a right_inverse

        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)

        if isinstance(new, Tensor):
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\n"
                    f"right_inverse(original).device: {new.device}")
            # the original object itself stays registered, so an optimizer that holds it
            # keeps training it
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        "(list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)

        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Sets the original(s) so that the parametrized tensor becomes ``value``.

        Calls the parametrizations' ``right_inverse`` in reverse registration order (under
        ``no_grad``) and stores the result in ``original`` (or ``original0``, ...), keeping
        those tensors' identity. Assigning to the parametrized attribute calls this.

        Raises:
            RuntimeError: if a parametrization has no ``right_inverse``.
            ValueError: if the result does not fit the originals (type, dtype, count).
        """
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError("'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(
                            "'right_inverse' must return a sequence of tensors "
                            f"or reference-type opaques. Got element {i} of type "
                            f"{type(tensor).__name__}.")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(
                            f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                            f"while `original{i}` has dtype {original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the parametrizations applied in order to the original(s)."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Gives `module` a class of its own, `Parametrized<Class>`, to hang properties on."""
    cls = module.__class__

    def default_deepcopy(self: Module, memo: Dict[int, Any]) -> Module:
        # the generated class refuses pickling (below), which copy.deepcopy would go through
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = deepcopy(self.__dict__, memo)
        for slot in copyreg._slotnames(self.__class__):  # type: ignore[attr-defined]
            if hasattr(self, slot):
                setattr(replica, slot, deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self: Module) -> Any:
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict(). "
            "See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    def load_from_state_dict(self: Module, state_dict: Dict[str, Any], prefix: str,
                             local_metadata: Dict[str, Any], strict: bool,
                             missing_keys: List[str], unexpected_keys: List[str],
                             error_msgs: List[str], assign: bool = False) -> None:
        # Module has no load_state_dict pre-hooks: parametrizations that rename old keys
        # (weight_norm's weight_g/weight_v) register theirs here
        for hook in list(self.__dict__.get("_rg_load_pre_hooks", {}).values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        cls._load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs, assign)

    namespace: Dict[str, Any] = {"__getstate__": getstate,
                                 "_load_from_state_dict": load_from_state_dict}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Adds the property `tensor_name` to `module`'s generated class."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Registers a parametrization of a parameter or buffer of ``module``.

    After it, reading ``module.<tensor_name>`` returns ``parametrization(original)``, computed
    on every access (see :func:`cached`), and gradients flow to the original, which lives at
    ``module.parametrizations.<tensor_name>.original``. Registering again on the same name
    appends to the chain. If the parametrization has a ``right_inverse(X)`` it gives the
    original from the current value (a sequence of tensors registers ``original0``,
    ``original1``, ...), and assigning to ``module.<tensor_name>`` calls it. The
    parametrization takes the module's training mode.

    Args:
        module (Module): the module holding the tensor.
        tensor_name (str): the parameter or buffer to parametrize.
        parametrization (Module): the module that computes the tensor from the original(s).

    Keyword args:
        unsafe (bool): allow a parametrization that changes the tensor's dtype or shape (the
            consistency checks are skipped). Default: ``False``.

    Returns:
        the module, whose class is now ``Parametrized<Class>``.

    Raises:
        ValueError: if ``module`` has no parameter, buffer or parametrization named
            ``tensor_name``, or a check fails.

    Example::

        >>> import rustgrad.nn.utils.parametrize as P
        >>> class Positive(nn.Module):
        ...     def forward(self, X):
        ...         return X.exp()
        ...     def right_inverse(self, Y):
        ...         return Y.log()
        >>> m = nn.Linear(2, 2)
        >>> with torch.no_grad():
        ...     _ = m.weight.fill_(1.0)
        >>> m = P.register_parametrization(m, "weight", Positive())
        >>> m.parametrizations.weight.original.sum()
        tensor(0., grad_fn=<SumBackward0>)
        >>> m.weight = torch.full((2, 2), 3.0)
        >>> m.parametrizations.weight.original
        Parameter containing:
        tensor([[1.0986, 1.0986],
                [1.0986, 1.0986]], requires_grad=True)
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.shape: {y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {x.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError("parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(z).__name__}")
                    if z.dtype != y.dtype:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the "
                            f"same dtype as module.{tensor_name}, unless the `unsafe` flag is "
                            f"enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                            f"returned dtype: {z.dtype}")
                    if z.shape != y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the "
                            f"same shape as module.{tensor_name}, unless the `unsafe` flag is "
                            f"enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                            f"returned shape: {z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: Optional[str] = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on any tensor when None).

    Example::

        >>> import rustgrad.nn.utils.parametrize as P
        >>> P.is_parametrized(nn.Linear(2, 2))
        False
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Removes the parametrizations of ``module.<tensor_name>``.

    With ``leave_parametrized=True`` the tensor keeps its current parametrized value (stored
    into the original object, which is registered back under ``tensor_name``); with False it
    goes back to the original's value, which needs a single original. When no
    parametrization is left the module gets its own class back.

    Args:
        module (Module): the parametrized module.
        tensor_name (str): the tensor whose parametrizations go.
        leave_parametrized (bool): keep the parametrized value. Default: ``True``.

    Returns:
        the module.

    Raises:
        ValueError: if the tensor is not parametrized, or ``leave_parametrized=False`` with
            several originals.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t

    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)

    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations swapped it (its own class if none did).

    Example::

        >>> import rustgrad.nn.utils.parametrize as P
        >>> P.type_before_parametrizations(nn.Linear(2, 2)).__name__
        'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: Optional[str] = None) -> Module:
    """Registers ``from_module``'s parametrizations (all, or those of ``tensor_name``) on
    ``to_module`` and makes ``to_module`` share their original tensors.

    A tensor that ``to_module`` lacks is created first as a Parameter. Nothing happens if
    ``from_module`` is not parametrized.

    Returns:
        ``to_module``.
    """
    if is_parametrized(from_module):
        names: Union[List[str], ModuleDict] = (
            from_module.parametrizations if tensor_name is None else [tensor_name])
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            source = from_module.parametrizations[name]
            for param_func in source:
                register_parametrization(to_module, name, param_func)
            target = to_module.parametrizations[name]
            if hasattr(source, "original"):
                target.original = source.original
            else:
                i = 0
                while hasattr(source, f"original{i}"):
                    setattr(target, f"original{i}", getattr(source, f"original{i}"))
                    i += 1
    return to_module
