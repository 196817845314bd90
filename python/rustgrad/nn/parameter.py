"""nn.Parameter and nn.Buffer: tensors that a Module registers when they are assigned to it."""

from __future__ import annotations

import sys
from typing import Any, Optional, cast

from .. import _creation, _dtype
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


_UNINITIALIZED_USE = (
    "Attempted to use an uninitialized parameter in {func}. This error happens when you are "
    "using a `LazyModule` or explicitly manipulating `torch.nn.parameter.{cls}` objects. When "
    "using LazyModules Call `forward` with a dummy batch to initialize the parameters before "
    "calling torch functions"
)


class UninitializedTensorMixin:
    """What :class:`UninitializedParameter` and :class:`UninitializedBuffer` share: a tensor
    whose shape is not known yet (a lazy module's, until its first forward).

    It holds an empty tensor only for its device, dtype and ``requires_grad``. Reading those,
    ``size()``, moving or casting it (``to``, ``cuda``, ``cpu``, ``float``, ...), ``copy_`` and
    :meth:`materialize` are allowed; any op on it raises torch's ``ValueError``, and ``shape``
    torch's ``RuntimeError``.
    """

    cls_to_become: Any = None

    # Every op reads its inputs' arrays through `_data`: refusing it refuses them all, as
    # torch's __torch_function__ refuses every function outside a short list. The allowed
    # methods below read the placeholder through `.data`, which the binding answers itself.
    @property
    def _data(self) -> Any:
        caller = sys._getframe(1).f_code.co_name
        raise ValueError(_UNINITIALIZED_USE.format(func=f"<function {caller}>",
                                                   cls=type(self).__name__))

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Gives the tensor its shape: new (uninitialized) data of ``shape`` on its device and
        dtype (or those given), after which it is a :class:`Parameter` (a parameter) or a plain
        :class:`Tensor` (a buffer).

        Args:
            shape (tuple): the shape of the materialized tensor.
            device (rustgrad.device, optional): the device, if not the tensor's own.
            dtype (rustgrad.dtype, optional): the dtype, if not the tensor's own.
        """
        placeholder = cast(Tensor, self).data
        device = placeholder.device if device is None else device
        dtype = placeholder.dtype if dtype is None else dtype
        cast(Tensor, self).data = _creation.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes."
        )

    @property
    def dtype(self) -> Any:
        return cast(Tensor, self).data.dtype

    @property
    def device(self) -> Any:
        return cast(Tensor, self).data.device

    @property
    def is_cuda(self) -> bool:
        return bool(cast(Tensor, self).data.is_cuda)

    def size(self, dim: Optional[int] = None) -> Any:
        return cast(Tensor, self).data.size(dim)

    def is_floating_point(self) -> bool:
        return cast(Tensor, self).data.is_floating_point()

    def is_complex(self) -> bool:
        return cast(Tensor, self).data.is_complex()

    def get_device(self) -> int:
        return cast(Tensor, self).data.get_device()

    def _converted(self, data: Tensor) -> Tensor:
        return data

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        placeholder = cast(Tensor, self).data
        out = placeholder.to(*args, **kwargs)
        if out.dtype == placeholder.dtype and out.device == placeholder.device:
            return cast(Tensor, self)
        return self._converted(out)

    def cuda(self, device: Any = None, non_blocking: Any = False,
             memory_format: Any = None) -> Tensor:
        return self.to("cuda" if device is None else device)

    def cpu(self, memory_format: Any = None) -> Tensor:
        return self.to("cpu")

    def half(self) -> Tensor:
        return self.to(_dtype.float16)

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def char(self) -> Tensor:
        return self.to(_dtype.int8)

    def short(self) -> Tensor:
        return self.to(_dtype.int16)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        source = src.data if is_lazy(src) else src
        cast(Tensor, self).data.copy_(source)
        return cast(Tensor, self)

    def share_memory_(self) -> Tensor:
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`."
        )

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (type(self), (cast(Tensor, self).requires_grad,))


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an :class:`UninitializedParameter` or :class:`UninitializedBuffer`
    (a lazy module's tensor before its first forward).

    Args:
        param (Any): the object to check.
    """
    return isinstance(param, UninitializedTensorMixin)


def _placeholder(cls: type, requires_grad: bool, device: Any, dtype: Any) -> Any:
    t = Tensor.detach(_creation.empty(0, device=device, dtype=dtype))
    t.requires_grad = requires_grad
    t.__class__ = cls
    return t


class UninitializedParameter(UninitializedTensorMixin, Parameter):  # type: ignore[misc]
    """A :class:`Parameter` whose shape is not known yet: a lazy module's (such as
    ``nn.LazyLinear``'s) until its first forward, which calls :meth:`materialize`.

    Only its dtype, device and ``requires_grad`` can be read; it can be moved or cast, and
    materialized into a regular :class:`Parameter`. Using it in an op raises a ``ValueError``.

    Args:
        requires_grad (bool): whether the parameter requires grad. Default: ``True``.
        device (rustgrad.device, optional): the device it will be materialized on.
        dtype (rustgrad.dtype, optional): the dtype it will be materialized with.

    Example::

        >>> p = nn.UninitializedParameter()
        >>> p
        <UninitializedParameter>
        >>> p.materialize((2, 3))
        >>> type(p).__name__, p.shape
        ('Parameter', torch.Size([2, 3]))
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None,
                dtype: Any = None) -> UninitializedParameter:
        return cast(UninitializedParameter, _placeholder(cls, requires_grad, device, dtype))

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        pass

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) in memo:
            return memo[id(self)]
        placeholder = self.data
        result = type(self)(self.requires_grad, placeholder.device, placeholder.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):  # type: ignore[misc]
    """A buffer whose shape is not known yet: a lazy module's (such as
    ``nn.LazyBatchNorm1d``'s running statistics) until its first forward, which calls
    :meth:`materialize` and makes it a regular :class:`Tensor`.

    Args:
        requires_grad (bool): whether the buffer requires grad. Default: ``False``.
        device (rustgrad.device, optional): the device it will be materialized on.
        dtype (rustgrad.dtype, optional): the dtype it will be materialized with.
        persistent (bool): whether the buffer goes into the module's state_dict.
            Default: ``True``.
    """

    cls_to_become = Tensor
    persistent: bool

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        buf = cast(UninitializedBuffer, _placeholder(cls, requires_grad, device, dtype))
        buf.persistent = persistent
        return buf

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        pass

    def _converted(self, data: Tensor) -> Tensor:
        # a cast buffer stays uninitialized (torch keeps the subclass of a plain tensor)
        out = Tensor.detach(data)
        out.requires_grad = self.requires_grad
        out.__class__ = type(self)
        cast(UninitializedBuffer, out).persistent = self.persistent
        return out
