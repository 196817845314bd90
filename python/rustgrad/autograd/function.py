"""torch.autograd.Function: custom ops with a Python forward and backward.

`Function.apply` runs `forward` under no_grad, then records ONE node for all its tensor outputs
(`_core.record_multi`): output `i` is input slot `i` of the node, the node's edges go to the
tensor arguments, and what `ctx.save_for_backward` named is saved through the same SavedTensor
machinery as the built-in ops (version-checked, released after backward, packed by
`saved_tensors_hooks`). The node's backward formula is `_function_backward`, which calls the
user's `backward(ctx, *grads)` and checks what it returns as torch's engine does.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _core, _creation, _dtype
from .._ops._node import node
from .._ops._util import sum_to
from .._tensor import Tensor
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable", "InplaceFunction"]


class FunctionCtx:
    """The `ctx` of a custom Function: what forward leaves for backward."""

    to_save: Tuple[Any, ...]
    dirty_tensors: Tuple[Tensor, ...]
    non_differentiable: Tuple[Tensor, ...]
    materialize_grads: bool
    needs_input_grad: Tuple[bool, ...]

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Saves tensors (or None) for backward, where `ctx.saved_tensors` gives them back."""
        self.to_save = tensors

    def save_for_forward(self, *tensors: Optional[Tensor]) -> None:
        """Saves tensors for a forward-mode `jvp` (kept for torch compatibility; rustgrad has no
        forward-mode AD, so they are only stored).
        """
        self.saved_for_forward = tensors

    def mark_dirty(self, *args: Tensor) -> None:
        """Marks inputs that forward modified in place (they must be returned as outputs)."""
        self.dirty_tensors = args

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Deprecated, as in torch: storage sharing is tracked without it. Only warns."""
        warnings.warn(
            "mark_shared_storage is deprecated. Tensors with shared storages are automatically "
            "tracked. Note that calls to `set_()` are not tracked",
            DeprecationWarning,
            stacklevel=2,
        )

    def mark_non_differentiable(self, *args: Tensor) -> None:
        """Marks outputs that get no gradient (requires_grad=False)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward sees zeros (True, the default) or None for outputs without grad."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> Tuple[Any, ...]:
        """The tensors given to `save_for_backward`, as a tuple, for use in backward.

        Reading them checks they were not modified in place since they were saved; after the graph
        was freed (a second backward without ``retain_graph=True``) it raises.
        """
        saved = self.__dict__.get("_saved")
        if saved is None:
            if "to_save" in self.__dict__:  # still in forward / setup_context
                return tuple(self.to_save)
            raise RuntimeError(_core.SECOND_BACKWARD)
        return saved


class BackwardCFunction(FunctionCtx):
    """The class of a custom Function's ctx: `<ClassName>Backward`, made by the metaclass."""

    _forward_cls: Any

    def apply(self, *args: Any) -> Any:
        """Runs the Function's `backward` with this ctx on the given gradients."""
        return self._forward_cls.backward(self, *args)


class FunctionMeta(type):
    """Gives every Function subclass its `<ClassName>Backward` ctx class."""

    def __init__(cls, name: str, bases: Tuple[type, ...], attrs: Dict[str, Any]) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom autograd ops: subclass it with static `forward` and `backward`
    (and optionally `setup_context`) and call `apply`.

    `forward` computes the outputs from the inputs (no recording happens inside it); `backward`
    receives one gradient per output and returns one gradient per input of `forward` (None for
    non-tensor inputs or inputs without a gradient). `apply` records a single node whose
    backward calls yours; the ctx object carries what forward saved (`ctx.save_for_backward`,
    attributes) to backward. Never instantiate the class: call ``MyFunction.apply(...)``.

    Example::

        >>> class Cube(torch.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     def backward(ctx, grad_output):
        ...         (x,) = ctx.saved_tensors
        ...         return grad_output * 3 * x ** 2
        >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> y = Cube.apply(x)
        >>> y.sum().backward()
        >>> x.grad
        tensor([ 3., 12.])
    """
    """Base class of custom autograd ops: subclass it with static `forward` and `backward`
    (and optionally `setup_context`) and call `apply`."""

    _backward_cls: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are "
            "all static, so you should invoke them on the class itself. Instantiating an "
            "autograd function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Computes the outputs of the custom op (override as a staticmethod).

        Either ``forward(ctx, *args)``, saving into ctx directly, or ``forward(*args)`` together with
        a `setup_context`. It runs with grad mode off; any tensors and Python values are accepted
        as arguments, and a tensor or a tuple of them (other values allowed) is returned.
        """
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> Any:
        """Fills ctx for backward from the inputs and output of a ctx-less `forward` (optional
        override, as a staticmethod).

        Args:
            ctx: the context object backward will receive.
            inputs (tuple): the arguments `forward` was called with (defaults filled in).
            output: what `forward` returned.
        """
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """The gradients of the inputs, given those of the outputs (override as a staticmethod).

        Receives ctx and one gradient per output of `forward` (zeros for outputs that got none,
        unless ``ctx.set_materialize_grads(False)``: then None). Returns one value per argument of
        `forward`: a tensor of the input's shape, or None where no gradient flows.
        ``ctx.needs_input_grad`` says which inputs need one. `vjp` is the same method.
        """
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """The forward-mode derivative (torch's API; rustgrad has no forward-mode AD, so it is never
        called).
        """
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs `forward` on the arguments and records one node whose backward is the class's
        `backward`; returns forward's outputs.

        Outputs require grad when any tensor input does (and grad mode is on), except those
        marked with ``ctx.mark_non_differentiable``.
        """
        setup = cls.setup_context is not Function.setup_context
        if setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = tuple(bound.args), {}
        return _apply(cls, setup, args, kwargs)


def _apply(cls: Any, setup: bool, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    ctx = cls._backward_cls()
    tensor_args = tuple(a for a in args if isinstance(a, Tensor))
    grad_on = _core.is_grad_enabled()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx.materialize_grads = True
    with no_grad():
        if setup:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    is_tuple = isinstance(output, tuple)
    outputs = output if is_tuple else (output,)
    to_save = ctx.__dict__.pop("to_save", None)
    if not (grad_on and any(t.requires_grad for t in tensor_args)):
        return output
    # as torch, ctx forgets the tensors it was told about: they are outputs, and the node (which
    # holds ctx) must not hold its own outputs
    dirty = {id(t) for t in ctx.__dict__.pop("dirty_tensors", ())}
    non_diff = {id(t) for t in ctx.__dict__.pop("non_differentiable", ())}
    inputs = {id(t) for t in tensor_args}
    wrapped: List[Tensor] = []
    differentiable: List[bool] = []
    positions: List[int] = []
    seen = set()
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            continue
        if id(o) in dirty:
            if o.is_leaf and o.requires_grad:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation."
                )
            o._bump_version()  # as torch's mark_dirty, on top of the in-place op's own bump
            out = o
        elif id(o) in inputs or id(o) in seen or o.requires_grad:
            out = _core.detach(o)  # an input returned as is becomes an alias with new history
        else:
            out = o
        seen.add(id(o))
        wrapped.append(out)
        differentiable.append(id(o) not in non_diff and (out._data.dtype.kind == "c" or
                                                         _dtype.is_floating_np(out._data.dtype)))
        positions.append(i)
    ctx._out_meta = tuple((w.shape, w.dtype, w.device) for w in wrapped)
    ctx._is_tensor_input = tuple(isinstance(a, Tensor) for a in args)
    ctx._input_meta = tuple((t.shape, t.dtype) for t in tensor_args)
    saved = None
    if to_save is not None:
        for s in to_save:
            if s is not None and not isinstance(s, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{to_save.index(s)} is of type {type(s).__name__}"
                )
        saved = tuple(to_save)
    results = _core.record_multi(
        tuple(wrapped), tensor_args, cls.__name__ + "Backward", _function_backward, saved, ctx,
        differentiable,
    )
    if not is_tuple:
        return results[0] if positions else output
    out_list = list(outputs)
    for pos, r in zip(positions, results):
        out_list[pos] = r
    return tuple(out_list)


def _function_backward(grad: Any, saved: Tuple[Any, ...], ctx: Any) -> Any:
    """The node formula of every custom Function: calls `backward(ctx, *grads)` and checks and
    fixes what it returns as torch's engine (count, None for non-tensor inputs, shapes,
    dtypes)."""
    cls = ctx._forward_cls
    name = cls.__name__ + "Backward"
    metas = ctx._out_meta
    grads = (grad,) if len(metas) == 1 else tuple(grad)
    if ctx.materialize_grads and any(g is None for g in grads):
        grads = tuple(_creation.zeros(tuple(shape), dtype=dtype, device=device) if g is None else g
                      for g, (shape, dtype, device) in zip(grads, metas))
    ctx._saved = saved
    try:
        result = cls.backward(ctx, *grads)
    finally:
        ctx._saved = None
    if not isinstance(result, tuple):
        result = (result,)
    is_tensor = ctx._is_tensor_input
    n = len(is_tensor)
    if len(result) > n and all(r is None for r in result[n:]):
        result = result[:n]
    if len(result) != n:
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected {n}, got "
            f"{len(result)})"
        )
    out = []
    for i, (g, t) in enumerate(zip(result, is_tensor)):
        if not t:
            if g is not None:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
            continue
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"expected Variable or None (got {type(g).__name__})")
        out.append(g)
    for k, (g, (shape, dtype)) in enumerate(zip(out, ctx._input_meta)):
        if g is None:
            continue
        if g.shape != shape:
            if not _expandable(shape, g.shape):
                raise RuntimeError(
                    f"Function {name} returned an invalid gradient at index {k} - got "
                    f"{list(g.shape)} but expected shape compatible with {list(shape)}"
                )
            g = sum_to(g, tuple(shape))
        if g.dtype != dtype:
            g = g.to(dtype)
        out[k] = g
    return tuple(out)


def _expandable(shape: Tuple[int, ...], target: Tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to `target` (torch's is_expandable_to)."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(tuple(shape)), reversed(tuple(target))):
        if s != t and s != 1:
            return False
    return True


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a Function's backward that is not itself differentiable: it runs under
    no_grad, and differentiating its result raises instead of silently giving zeros."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not _core.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        wrapped = tuple(_delayed_error(o) if isinstance(o, Tensor) else o for o in outs)
        return wrapped if isinstance(outputs, tuple) else wrapped[0]

    return wrapper


_ONCE_MSG = ("trying to differentiate twice a function that was marked with "
             "@once_differentiable")


def _raise_delayed(g: Any, saved: Any, ctx: Any) -> Any:
    raise RuntimeError(ctx)


_ONCE_ERROR = node("torch::autograd::Error", _raise_delayed)


def _delayed_error(t: Tensor) -> Tensor:
    """An alias of `t` whose backward raises (torch's DelayedError node)."""
    fake = _core.detach(t)
    fake.requires_grad = True
    return _ONCE_ERROR.record(t._data, (fake,), _ONCE_MSG)


class InplaceFunction(Function):
    """Kept for backward compatibility, as torch's."""

    def __init__(self, inplace: bool = False) -> None:
        """Stores `inplace`, as torch's."""
        super().__init__()
        self.inplace = inplace
