"""nn.Parameter and nn.Buffer: tensors that a Module registers when they are assigned to it."""

from __future__ import annotations

from typing import Any, Optional

from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as a parameter; `requires_grad=True` by default.

    `Parameter(t)` shares t's data, storage and version counter (as torch's `_make_subclass`),
    and, like torch, is created with `requires_grad` even under `no_grad`.
    """

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            from .._creation import empty

            data = empty(0)
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
    from .._creation import from_numpy

    return Parameter(from_numpy(array), requires_grad)


class Buffer(Tensor):
    """torch.nn.Buffer: marks a tensor to be registered as a buffer when assigned to a Module.

    `Buffer(t)` is a plain Tensor subclass sharing t's data; `persistent` says whether it goes
    into the state_dict.
    """

    persistent: bool

    def __new__(cls, data: Optional[Tensor] = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            from .._creation import empty

            data = empty(0)
        t = Tensor.detach(data)
        t.__class__ = cls
        t.requires_grad = data.requires_grad
        t.persistent = persistent
        return t  # type: ignore[return-value]

    def __init__(self, data: Optional[Tensor] = None, *, persistent: bool = True) -> None:
        pass


def is_lazy(param: Any) -> bool:
    return False
