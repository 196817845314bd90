"""nn.Parameter and nn.Buffer: tensors that a Module registers when they are assigned to it."""

from __future__ import annotations

from typing import Any, Optional, cast

from .. import _creation
from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigned as an attribute of a :class:`Module`, it is
    registered and returned by :meth:`Module.parameters`.

    A Parameter is a leaf of the autograd graph that requires grad by default (even when made
    under ``no_grad``), so ``backward`` accumulates into its ``.grad``, which an optimizer
    then reads. ``Parameter(t)`` shares ``t``'s data and version counter without recording
    an operation.

    Args:
        data (Tensor): the parameter's value. Default: an empty tensor.
        requires_grad (bool): whether autograd computes a gradient for it. Default: ``True``.

    Example::

        >>> w = nn.Parameter(torch.ones(2))
        >>> w
        Parameter containing:
        tensor([1., 1.], requires_grad=True)
        >>> w.is_leaf, w.requires_grad
        (True, True)
        >>> (w * 3).sum().backward()
        >>> w.grad
        tensor([3., 3.])
    """

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}"
            )
        if requires_grad and not data.is_floating_point():
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        t = Tensor.detach(data)
        t.__class__ = cls
        t.requires_grad = requires_grad
        return t  # type: ignore[return-value]

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        pass

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_parameter, (self.detach().numpy().copy(), self.requires_grad))

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _rebuild_parameter(array: Any, requires_grad: bool) -> Parameter:
    return Parameter(_creation.from_numpy(array), requires_grad)


class Buffer(Tensor):
    """A tensor marked to become a buffer when assigned as an attribute of a :class:`Module`.

    Assigning ``m.name = nn.Buffer(t)`` is the same as ``m.register_buffer("name", t,
    persistent)``. ``Buffer(t)`` shares ``t``'s data.

    Args:
        data (Tensor): the buffer's value. Default: an empty tensor.
        persistent (bool): whether the buffer goes into the module's state_dict.
            Default: ``True``.
    """

    persistent: bool

    def __new__(cls, data: Optional[Tensor] = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            data = _creation.empty(0)
        t = Tensor.detach(data)
        t.__class__ = cls
        buf = cast(Buffer, t)
        buf.requires_grad = data.requires_grad
        buf.persistent = persistent
        return buf

    def __init__(self, data: Optional[Tensor] = None, *, persistent: bool = True) -> None:
        pass


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized lazy parameter; always ``False`` (rustgrad has no lazy modules).
    """
    return False
