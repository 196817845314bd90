"""LazyModuleMixin: modules whose parameter shapes come from their first input (torch's lazy
modules), and the lazy layers built on it: LazyLinear, LazyConv1d/2d, LazyConvTranspose1d/2d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d.

A lazy module starts with :class:`~rustgrad.nn.UninitializedParameter` s (and
:class:`~rustgrad.nn.UninitializedBuffer` s) and a forward pre-hook. Its first call runs
``initialize_parameters`` on the call's arguments, which materializes them with the eager
layer's initialization; the hook then removes itself and the module becomes its
``cls_to_become`` (``LazyLinear`` becomes ``Linear``). The tensors stay the same objects, so an
optimizer built before that first call updates them afterwards.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from ... import _creation, _dtype
from ..._tensor import Tensor
from ...autograd import no_grad
from ...utils.hooks import RemovableHandle
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm
from .linear import Linear

__all__ = [
    "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]


class _OwnHookHandle:
    """A lazy module's handle on one of its own hooks: it names the module's hook dicts rather
    than holding references to them, so a deep copy or an unpickled module removes its own."""

    def __init__(self, owner: Any, dict_names: Tuple[str, ...], hook_id: int) -> None:
        self.owner = owner
        self.dict_names = dict_names
        self.id = hook_id

    def remove(self) -> None:
        """Removes the hook; removing twice does nothing."""
        for name in self.dict_names:
            self.owner.__dict__.get(name, {}).pop(self.id, None)


class LazyModuleMixin:
    """A mixin for modules that infer their parameters' shapes from their first input.

    Put it before the module class in the bases, create the parameters as
    :class:`~rustgrad.nn.UninitializedParameter` and define ``initialize_parameters(*args,
    **kwargs)``, which is called with the first forward's arguments and must materialize every
    uninitialized parameter and buffer. After it, the module becomes ``cls_to_become`` when that
    is set.

    Before the first forward, ``state_dict()`` holds the uninitialized tensors themselves, and
    ``load_state_dict`` of an initialized state materializes them to the checkpoint's shapes
    (the module then stays lazy until its first forward, which keeps the loaded values).

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
        >>> net[0]
        LazyLinear(in_features=0, out_features=4, bias=True)
        >>> net(torch.ones(2, 3)).shape
        torch.Size([2, 1])
        >>> net[0]
        Linear(in_features=3, out_features=4, bias=True)
    """

    cls_to_become: Optional[type] = None

    _parameters: Dict[str, Any]
    _buffers: Dict[str, Any]
    _non_persistent_buffers_set: Any
    _forward_pre_hooks: Dict[int, Any]
    _forward_pre_hooks_with_kwargs: Dict[int, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # torch registers the load hook on Module's load_state_dict pre-hooks; here the mixin's
        # own _load_from_state_dict runs the hooks of this dict
        hooks: Dict[int, Any] = OrderedDict()
        object.__setattr__(self, "_lazy_load_pre_hooks", hooks)
        load_id = RemovableHandle(hooks).id
        hooks[load_id] = self._lazy_load_hook
        self._load_hook = _OwnHookHandle(self, ("_lazy_load_pre_hooks",), load_id)
        handle = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            self._infer_parameters, with_kwargs=True)
        self._initialize_hook = _OwnHookHandle(
            self, ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs"), handle.id)

    # ---- state_dict -------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: Dict[str, Any], prefix: str,
                            keep_vars: bool) -> None:
        # an uninitialized tensor is saved as itself (it cannot be detached)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars or is_lazy(param) \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()

    def _lazy_load_hook(self, state_dict: Dict[str, Any], prefix: str,
                        local_metadata: Dict[str, Any], strict: bool, missing_keys: List[str],
                        unexpected_keys: List[str], error_msgs: List[str]) -> None:
        """Materializes each uninitialized tensor that ``state_dict`` has an initialized value
        for, to that value's shape, so that the load then copies into it."""
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if t is None or key not in state_dict or not is_lazy(t):
                continue
            value = state_dict[key]
            if not is_lazy(value):
                with no_grad():
                    t.materialize(value.shape)

    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str,
                              local_metadata: Dict[str, Any], strict: bool,
                              missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str], assign: bool = False) -> None:
        hooks: Dict[int, Any] = self.__dict__.get("_lazy_load_pre_hooks", {})
        for hook in list(hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        # an uninitialized entry loaded into an uninitialized tensor: nothing to copy (torch
        # copies the empty placeholder into the empty placeholder)
        both_lazy = {prefix + name for name, t in itertools.chain(self._parameters.items(),
                                                                    self._buffers.items())
                     if t is not None and is_lazy(t) and is_lazy(state_dict.get(prefix + name))}
        if both_lazy:
            state_dict = {k: v for k, v in state_dict.items() if k not in both_lazy}
        start = len(missing_keys)
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
            error_msgs, assign)
        if both_lazy:
            missing_keys[start:] = [k for k in missing_keys[start:] if k not in both_lazy]

    # ---- initialization ---------------------------------------------------------------------
    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materializes and initializes the parameters from the first forward's arguments;
        each lazy module defines it."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def has_uninitialized_params(self) -> bool:
        """Whether the module has a parameter or buffer that is not initialized yet."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module: Any, args: Any, kwargs: Any = None) -> None:
        """The forward pre-hook: initializes the parameters from the first call's arguments,
        removes itself and the load hook, and turns the module into ``cls_to_become``."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")  # type: ignore[attr-defined]
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self) -> Any:
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
            "dummy forward pass to correctly initialize the modules"
        )


# ---- LazyLinear -----------------------------------------------------------------------------
class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is the last dimension of its first input.

    The weight and bias are :class:`~rustgrad.nn.UninitializedParameter` s until the first
    forward, which materializes them, initializes them as :class:`Linear` does and makes the
    module a :class:`Linear`.

    Args:
        out_features (int): the size of each output sample.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Example::

        >>> m = nn.LazyLinear(3)
        >>> m
        LazyLinear(in_features=0, out_features=3, bias=True)
        >>> m(torch.ones(2, 5)).shape
        torch.Size([2, 3])
        >>> m
        Linear(in_features=5, out_features=3, bias=True)
    """

    cls_to_become = Linear
    weight: UninitializedParameter  # type: ignore[assignment]
    bias: UninitializedParameter

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Initializes the parameters as :class:`Linear` does, once they are materialized."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # type: ignore[override]
        """Sets ``in_features`` to ``input.shape[-1]`` and materializes and initializes the
        weight and bias."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # materialized by load_state_dict
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                    f"in_features from self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


# ---- convolutions ---------------------------------------------------------------------------
class _LazyConvXdMixin(LazyModuleMixin):
    groups: int
    transposed: bool
    in_channels: int
    out_channels: int
    kernel_size: Any
    weight: Any
    bias: Any
    _n: int

    def _lazy_init(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Initializes the parameters as the eager convolution does, once they are
        materialized."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """Sets ``in_channels`` from ``input`` (its dimension 1 when batched, 0 when not) and
        materializes and initializes the weight and bias."""
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        per_group = (self.in_channels, self.out_channels // self.groups) if self.transposed \
            else (self.out_channels, self.in_channels // self.groups)
        with no_grad():
            self.weight.materialize((*per_group, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        unbatched = self._n + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(
                f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                f"{self.__class__.__name__}, but got input of size: {input.shape}"
            )
        return int(input.shape[1] if input.dim() == unbatched + 1 else input.shape[0])


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A :class:`Conv1d` whose ``in_channels`` comes from its first input; it becomes a
    :class:`Conv1d` after that first forward. The arguments are :class:`Conv1d`'s but
    ``in_channels``."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A :class:`Conv2d` whose ``in_channels`` comes from its first input; it becomes a
    :class:`Conv2d` after that first forward. The arguments are :class:`Conv2d`'s but
    ``in_channels``.

    Example::

        >>> m = nn.LazyConv2d(8, 3)
        >>> m(torch.ones(1, 3, 5, 5)).shape
        torch.Size([1, 8, 3, 3])
        >>> m.weight.shape
        torch.Size([8, 3, 3, 3])
    """

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A :class:`ConvTranspose1d` whose ``in_channels`` comes from its first input; it becomes
    a :class:`ConvTranspose1d` after that first forward. The arguments are
    :class:`ConvTranspose1d`'s but ``in_channels``."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A :class:`ConvTranspose2d` whose ``in_channels`` comes from its first input; it becomes
    a :class:`ConvTranspose2d` after that first forward. The arguments are
    :class:`ConvTranspose2d`'s but ``in_channels``."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


# ---- normalization --------------------------------------------------------------------------
class _LazyNormBase(LazyModuleMixin):
    num_features: int
    affine: bool
    track_running_stats: bool
    weight: Any
    bias: Any
    running_mean: Any
    running_var: Any
    num_batches_tracked: Optional[Tensor]

    def __init__(self, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _creation.tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self) -> None:
        """Resets the running statistics and the affine parameters as the eager layer does,
        once they are materialized."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor) -> None:  # type: ignore[override]
        """Sets ``num_features`` to ``input.shape[1]`` and materializes the weight, bias and
        running statistics."""
        if not self.has_uninitialized_params():
            return
        self.num_features = int(input.shape[1])
        shape = (self.num_features,)
        if self.affine:
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize(shape)
        if self.track_running_stats:
            self.running_mean.materialize(shape)
            self.running_var.materialize(shape)
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm1d` whose ``num_features`` is ``input.shape[1]`` of its first input;
    it becomes a :class:`BatchNorm1d` after that first forward. The arguments are
    :class:`BatchNorm1d`'s but ``num_features``.

    Example::

        >>> bn = nn.LazyBatchNorm1d()
        >>> bn(torch.randn(4, 3)).shape
        torch.Size([4, 3])
        >>> bn
        BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    """

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm2d` whose ``num_features`` comes from its first input; it becomes a
    :class:`BatchNorm2d` after that first forward."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm3d` whose ``num_features`` comes from its first input; it becomes a
    :class:`BatchNorm3d` after that first forward."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm1d` whose ``num_features`` is ``input.shape[1]`` of its first
    input; it becomes an :class:`InstanceNorm1d` after that first forward. As torch's, its
    defaults are ``affine=True`` and ``track_running_stats=True``."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm2d` whose ``num_features`` comes from its first input; it becomes
    an :class:`InstanceNorm2d` after that first forward."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm3d` whose ``num_features`` comes from its first input; it becomes
    an :class:`InstanceNorm3d` after that first forward."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4


# ---- 3-d convolutions -------------------------------------------------------------------------
class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A :class:`Conv3d` whose ``in_channels`` comes from its first input; it becomes a
    :class:`Conv3d` after that first forward. The arguments are :class:`Conv3d`'s but
    ``in_channels``.

    Example::

        >>> m = nn.LazyConv3d(4, 2)
        >>> m(torch.ones(1, 3, 3, 3, 3)).shape
        torch.Size([1, 4, 2, 2, 2])
        >>> m.weight.shape
        torch.Size([4, 3, 2, 2, 2])
    """

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A :class:`ConvTranspose3d` whose ``in_channels`` comes from its first input; it becomes
    a :class:`ConvTranspose3d` after that first forward. The arguments are
    :class:`ConvTranspose3d`'s but ``in_channels``."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


__all__ += ["LazyConv3d", "LazyConvTranspose3d"]
