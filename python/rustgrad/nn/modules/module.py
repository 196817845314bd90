"""nn.Module: the base class of layers, with torch's registration, traversal, state_dict and
hooks."""

from __future__ import annotations

import functools
import itertools
import warnings
import weakref
from collections import OrderedDict
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Set,
    Tuple,
    TypeVar,
)

from ..._ops.copies import parse_to
from ..._tensor import Tensor
from ...autograd import _reach, no_grad
from ...autograd.provenance import _pop_scope, _push_scope
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter
from ._backward_hook import BackwardHook

T = TypeVar("T", bound="Module")

# nodes recorded in a module's forward carry its scope (memory_report's per-module bytes)

__all__ = [
    "Module", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_backward_hook", "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
]


class _IncompatibleKeys(NamedTuple):
    missing_keys: List[str]
    unexpected_keys: List[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )

    __str__ = __repr__


def _addindent(s_: str, num_spaces: int) -> str:
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    # torch >= 2.15 leaves blank lines unindented (no trailing spaces)
    rest = "\n".join((num_spaces * " ") + line if line.strip() else "" for line in s)
    return first + "\n" + rest


def _typename(value: Any) -> str:
    if isinstance(value, Tensor):
        return "torch.FloatTensor" if value.dtype.name == "float32" else type(value).__name__
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


class _WrappedHook:
    """A hook that gets its module (held weakly) as the first argument, as torch's."""

    def __init__(self, hook: Callable[..., Any], module: Optional[Module] = None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)


# Hooks common to all modules (torch.nn.modules.module's globals, for debugging/profiling);
# they run before the module's own hooks.
_global_backward_pre_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
_global_is_full_backward_hook: Optional[bool] = None
_global_forward_pre_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks: Dict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks_always_called: Dict[int, bool] = OrderedDict()
_global_forward_hooks_with_kwargs: Dict[int, bool] = OrderedDict()


def _has_any_global_hook() -> bool:
    return bool(_global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_pre_hooks or _global_forward_hooks)


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, args) -> None or new args, called before every module's forward."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) -> None or new output, called after every module's
    forward."""
    handle = RemovableHandle(
        _global_forward_hooks,
        extra_dict=[_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs],
    )
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated global form of Module.register_backward_hook."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module "
            "hook. Please use only one of them."
        )
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_output) for every module, before the module's own pre-hooks."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_input, grad_output) for every module, before the module's own."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module "
            "hook. Please use only one of them."
        )
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def _forward_unimplemented(self: Module, *input: Any) -> Any:
    """The forward of a Module subclass that defines none: an error naming the class."""
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


class Module:
    """Base class for all neural network modules, as ``torch.nn.Module``.

    Subclasses set up their layers in ``__init__`` (after calling ``super().__init__()``) and
    define the computation in ``forward``; calling the module runs the forward pre-hooks,
    ``forward`` and the forward hooks. Assigning a :class:`Parameter`, a ``Module`` or a
    tensor to a registered buffer name as an attribute registers it, so that
    :meth:`parameters`, :meth:`state_dict`, :meth:`train`/:meth:`eval`, :meth:`to`,
    :meth:`zero_grad` and the hooks see it.

    Example::

        >>> class TwoLayer(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(F.relu(self.fc1(x)))
        >>> net = TwoLayer()
        >>> net(torch.ones(3, 4)).shape
        torch.Size([3, 2])
        >>> [name for name, _ in net.named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training: bool
    _parameters: Dict[str, Optional[Parameter]]
    _buffers: Dict[str, Optional[Tensor]]
    _non_persistent_buffers_set: Set[str]
    _modules: Dict[str, Optional[Module]]
    call_super_init: bool = False
    _version: int = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                f"'{next(iter(kwargs))}'"
            )
        if self.call_super_init is False and bool(args):
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but "
                f"{len(args) + 1} were given"
            )
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- forward --------------------------------------------------------------------------
    # an attribute, not a method, as in torch: a subclass's forward of any signature then
    # overrides it without a type checker error (mypy, pyright)
    forward: Callable[..., Any] = _forward_unimplemented

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        # made once per instance; the id check gives a deep copy or an unpickled module its own
        scope = self.__dict__.get("_rg_scope")
        if scope is None or scope[0] != id(self):
            scope = self.__dict__["_rg_scope"] = (id(self), type(self).__name__)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_backward_pre_hooks
                or _global_backward_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            _push_scope(scope)
            try:
                return self.forward(*args, **kwargs)
            finally:
                _pop_scope()
        result = None
        called_always: Set[int] = set()
        _push_scope(scope)
        try:
            full_backward_hooks: List[Callable[..., Any]] = []
            non_full_backward_hooks: List[Callable[..., Any]] = []
            backward_pre_hooks: List[Callable[..., Any]] = []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            for hook_id, hook in (*_global_forward_pre_hooks.items(),
                                  *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if isinstance(res, tuple) and len(res) == 2:
                            args, kwargs = res
                        else:
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of "
                                f"(new_args, new_kwargs), but got {res}."
                            )
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if (hook_id in self._forward_hooks_always_called
                        or hook_id in _global_forward_hooks_always_called):
                    called_always.add(hook_id)
                if (hook_id in self._forward_hooks_with_kwargs
                        or hook_id in _global_forward_hooks_with_kwargs):
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  "Tensor or a tuple of Tensors but received "
                                  f"{type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_backward_hooks:
                var = result
                while not isinstance(var, Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, Tensor))
                    else:
                        var = var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        grad_fn.register_hook(_WrappedHook(hook, self))
                    self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
            return result
        except Exception:
            for hook_id, hook in _global_forward_hooks.items():
                if hook_id in _global_forward_hooks_always_called and \
                        hook_id not in called_always:
                    try:
                        res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` "
                                      "raised an exception that was silenced as another error "
                                      f"was raised in forward: {str(e)}", stacklevel=2)
                        continue
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {str(e)}", stacklevel=2)
                        continue
            raise
        finally:
            _pop_scope()

    # not annotated, so a subclass's `__call__ = forward` (the built-in modules') types
    # `module(x)` as its forward for mypy and pyright; a user's module stays Any, as torch's
    __call__ = _call_impl

    # ---- hooks ----------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Registers a hook called before every :meth:`forward` of this module.

        The hook is called as ``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs=True``) and may return a replacement for ``args`` (a single value is
        wrapped in a tuple), or ``(args, kwargs)`` with ``with_kwargs=True``, or None to keep
        them.

        Args:
            hook (Callable): the hook to register.
            prepend (bool): call it before the hooks already registered. Default: ``False``.
            with_kwargs (bool): pass the keyword arguments of the call to the hook as well.
                Default: ``False``.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Registers a hook called after every :meth:`forward` of this module.

        The hook is called as ``hook(module, args, output)`` (or
        ``hook(module, args, kwargs, output)`` with ``with_kwargs=True``) and may return a new
        output to replace the module's, or None to keep it.

        Args:
            hook (Callable): the hook to register.
            prepend (bool): call it before the hooks already registered. Default: ``False``.
            with_kwargs (bool): pass the keyword arguments of the call too. Default: ``False``.
            always_call (bool): call the hook even when ``forward`` raises. Default: ``False``.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.

        Example::

            >>> lin = nn.Linear(3, 2)
            >>> shapes = []
            >>> h = lin.register_forward_hook(lambda m, args, out: shapes.append(out.shape))
            >>> _ = lin(torch.ones(5, 3))
            >>> shapes
            [torch.Size([5, 2])]
            >>> h.remove()
        """
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any],
                                    prepend: bool = False) -> RemovableHandle:
        """Registers a hook called during backward with the gradients of the module's inputs.

        The hook is called as ``hook(module, grad_input, grad_output)`` once autograd has
        computed the gradients with respect to the module's tensor inputs. ``grad_input`` and
        ``grad_output`` are tuples holding the gradients of the inputs and of the outputs (None
        for those that do not require grad). The hook may return a new tuple to use in place of
        ``grad_input``; it must not modify its arguments in place.

        Args:
            hook (Callable): the hook to register.
            prepend (bool): call it before the hooks already registered. Default: ``False``.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.

        Example::

            >>> lin = nn.Linear(3, 2)
            >>> seen = []
            >>> h = lin.register_full_backward_hook(
            ...     lambda m, gin, gout: seen.append((gin[0].shape, gout[0].shape)))
            >>> x = torch.ones(4, 3, requires_grad=True)
            >>> lin(x).sum().backward()
            >>> seen
            [(torch.Size([4, 3]), torch.Size([4, 2]))]
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers a backward hook on the module's last autograd node (deprecated).

        Kept for torch compatibility: ``hook(module, grad_input, grad_output)`` receives the
        gradients of the inputs of the last op the forward ran, which are not always the
        module's inputs. Use :meth:`register_full_backward_hook` instead.

        Args:
            hook (Callable): the hook to register.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.
        """
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _get_backward_hooks(self) -> Tuple[List[Callable[..., Any]], List[Callable[..., Any]]]:
        full: List[Callable[..., Any]] = []
        non_full: List[Callable[..., Any]] = []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> List[Callable[..., Any]]:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def _maybe_warn_non_full_backward_hook(self, inputs: Any, result: Any,
                                           grad_fn: Any) -> None:
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn(
                    "Using non-full backward hooks on a Module that does not return a single "
                    "Tensor or a tuple of Tensors is deprecated and will be removed in future "
                    "versions. This hook will be missing some of the grad_output. Please use "
                    "register_full_backward_hook to get the documented behavior.",
                    FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn(
                    "Using non-full backward hooks on a Module that does not take as input a "
                    "single Tensor or a tuple of Tensors is deprecated and will be removed in "
                    "future versions. This hook will be missing some of the grad_input. Please "
                    "use register_full_backward_hook to get the documented behavior.",
                    FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn(
                "Using a non-full backward hook when outputs are nested in python data "
                "structure is deprecated and will be removed in future versions. This hook will "
                "be missing some grad_output.", FutureWarning, stacklevel=2)
        elif len(out_grad_fn) > 1:
            warnings.warn(
                "Using a non-full backward hook when outputs are generated by different "
                "autograd Nodes is deprecated and will be removed in future versions. This hook "
                "will be missing some grad_output. Please use register_full_backward_hook to get "
                "the documented behavior.", FutureWarning, stacklevel=2)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn(
                    "Using a non-full backward hook when the forward contains multiple autograd "
                    "Nodes is deprecated and will be removed in future versions. This hook will "
                    "be missing some grad_input. Please use register_full_backward_hook to get "
                    "the documented behavior.", FutureWarning, stacklevel=2)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any],
                                        prepend: bool = False) -> RemovableHandle:
        """Registers a hook called during backward before the module's input gradients are computed.

        The hook is called as ``hook(module, grad_output)``, where ``grad_output`` is a tuple of
        the gradients with respect to the module's outputs, and may return a new tuple to use in
        their place.

        Args:
            hook (Callable): the hook to register.
            prepend (bool): call it before the hooks already registered. Default: ``False``.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    # ---- registration ---------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Optional[Tensor],
                        persistent: bool = True) -> None:
        """Adds a tensor to the module's state that is not a parameter.

        Buffers (such as BatchNorm's ``running_mean``) are moved by :meth:`to`, returned by
        :meth:`buffers` and, when persistent, saved in :meth:`state_dict`; the optimizer does not
        see them.

        Args:
            name (str): the buffer's name; it becomes an attribute of the module.
            tensor (Tensor or None): the buffer. None registers the name with no value (it is
                then left out of the state_dict).
            persistent (bool): whether the buffer is part of the module's state_dict.
                Default: ``True``.

        Example::

            >>> m = nn.Module()
            >>> m.register_buffer("steps", torch.zeros(1))
            >>> list(m.state_dict())
            ['steps']
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = Tensor.detach(tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Adds a parameter to the module under the given name.

        Assigning a :class:`Parameter` as an attribute does the same.

        Args:
            name (str): the parameter's name; it becomes an attribute of the module.
            param (Parameter or None): the parameter. None registers the name with no value
                (as ``Linear(bias=False)`` does for ``bias``).
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                "be created explicitly. To express '" + name + "' as a function of another "
                "Tensor, compute the value in the forward() method."
            )
        self._parameters[name] = param

    def add_module(self, name: str, module: Optional[Module]) -> None:
        """Adds a child module under the given name (``register_module`` is the same method).

        Assigning a ``Module`` as an attribute does the same.

        Args:
            name (str): the child's name; it becomes an attribute of the module.
            module (Module or None): the child module.
        """
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """Returns the submodule named by a dotted path such as ``"encoder.layers.0"``.

        Args:
            target (str): the path; ``""`` names the module itself.

        Raises:
            AttributeError: if a step of the path does not exist or is not a ``Module``.
        """
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """Returns the parameter named by a dotted path such as ``"encoder.0.weight"``.

        Args:
            target (str): the submodule path followed by the parameter's name.

        Raises:
            AttributeError: if the path does not name a parameter.
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """Returns the buffer named by a dotted path such as ``"bn.running_mean"``.

        Args:
            target (str): the submodule path followed by the buffer's name.

        Raises:
            AttributeError: if the path does not name a buffer.
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- attribute access -----------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__

        def remove_from(*dicts_or_sets: Any) -> None:
            for c in dicts_or_sets:
                if name in c:
                    if isinstance(c, dict):
                        del c[name]
                    else:
                        c.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)"
                        )
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(d)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> List[str]:
        attrs = list(object.__dir__(self))
        keys = attrs + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ---- traversal ------------------------------------------------------------------------
    def _named_members(self, get_members_fn: Callable[[Module], Any], prefix: str = "",
                       recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[Tuple[str, Any]]:
        memo: Set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Returns an iterator over the module's parameters, typically passed to an optimizer.

        Each parameter is yielded once even when it is shared by several submodules.

        Args:
            recurse (bool): include the parameters of all submodules; otherwise only this
                module's own. Default: ``True``.

        Example::

            >>> net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 1))
            >>> [tuple(p.shape) for p in net.parameters()]
            [(3, 4), (3,), (1, 3), (1,)]
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[Tuple[str, Parameter]]:
        """Returns an iterator over ``(name, parameter)`` pairs, the names dotted paths.

        Args:
            prefix (str): prepended to every name. Default: ``""``.
            recurse (bool): include the parameters of all submodules. Default: ``True``.
            remove_duplicate (bool): yield a shared parameter only once. Default: ``True``.
        """
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Returns an iterator over the module's buffers.

        Args:
            recurse (bool): include the buffers of all submodules. Default: ``True``.
        """
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, Tensor]]:
        """Returns an iterator over ``(name, buffer)`` pairs, the names dotted paths.

        Args:
            prefix (str): prepended to every name. Default: ``""``.
            recurse (bool): include the buffers of all submodules. Default: ``True``.
            remove_duplicate (bool): yield a shared buffer only once. Default: ``True``.
        """
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        """Returns an iterator over the immediate child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[Tuple[str, Module]]:
        """Returns an iterator over ``(name, module)`` pairs of the immediate child modules."""
        memo: Set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        """Returns an iterator over all modules of the tree, this one first.

        A module reachable along several paths is yielded once.
        """
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: Optional[Set[Any]] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, Module]]:
        """Returns an iterator over ``(name, module)`` pairs of all modules of the tree.

        The module itself comes first, with the name ``prefix``; the others have dotted paths.

        Args:
            memo (set, optional): modules already yielded (used by the recursion).
            prefix (str): prepended to every name. Default: ``""``.
            remove_duplicate (bool): yield a module reachable along several paths only once.
                Default: ``True``.

        Example::

            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> [name for name, _ in net.named_modules()]
            ['', '0', '1', '1.0']
        """
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ---- modes ----------------------------------------------------------------------------
    def train(self: T, mode: bool = True) -> T:
        """Sets the module and all its submodules to training mode (or evaluation mode).

        The mode changes the behaviour of layers such as :class:`Dropout` and
        :class:`BatchNorm2d`; it has no effect on autograd (see ``rustgrad.no_grad`` for that).

        Args:
            mode (bool): ``True`` for training mode, ``False`` for evaluation mode.
                Default: ``True``.

        Returns:
            the module itself.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: T) -> T:
        """Sets the module and all its submodules to evaluation mode; the same as ``train(False)``.

        Returns:
            the module itself.

        Example::

            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
            >>> net.eval()[1].training
            False
        """
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Sets ``requires_grad`` of every parameter in place, e.g. to freeze a part of a model.

        Args:
            requires_grad (bool): whether autograd should record operations on the parameters.
                Default: ``True``.

        Returns:
            the module itself.
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the ``.grad`` of every parameter.

        Args:
            set_to_none (bool): set the gradients to None instead of filling them with zeros
                (the next backward then allocates them anew). Default: ``True``.
        """
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # ---- conversion -----------------------------------------------------------------------
    def _apply(self: T, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> T:
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                applied = fn(param)
            if applied is not param:
                param.data = applied
            if param.grad is not None:
                with no_grad():
                    g = fn(param.grad)
                if g is not param.grad:
                    param.grad.data = g
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self: T, fn: Callable[[Module], None]) -> T:
        """Calls ``fn`` on every submodule (children first) and then on the module itself.

        Typically used to initialize a model's weights.

        Args:
            fn (Callable[[Module], None]): the function to call on each module.

        Returns:
            the module itself.

        Example::

            >>> def init_weights(m):
            ...     if isinstance(m, nn.Linear):
            ...         nn.init.constant_(m.weight, 0.5)
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1)).apply(init_weights)
            >>> net[1].weight
            Parameter containing:
            tensor([[0.5000, 0.5000]], requires_grad=True)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """Moves and/or casts the parameters and buffers, in place.

        Called as ``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(tensor)`` (the
        device and dtype of ``tensor``). Only floating point parameters and buffers are cast to
        ``dtype``; integer ones only move. A parameter stays the same object (its ``.data`` is
        replaced), so an optimizer made before the call still holds it.

        Args:
            device (rustgrad.device): the target device.
            dtype (rustgrad.dtype): the target floating point dtype.
            tensor (Tensor): a tensor whose device and dtype are the targets.

        Returns:
            the module itself.

        Example::

            >>> lin = nn.Linear(2, 2).to(torch.float64)
            >>> lin.weight.dtype
            torch.float64
        """
        dev, dtype, _ = parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            if t.is_floating_point() and dtype is not None:
                return t.to(dev, dtype) if dev is not None else t.to(dtype)
            return t.to(dev) if dev is not None else t

        return self._apply(convert)

    def float(self: T) -> T:
        """Casts all floating point parameters and buffers to ``float32``, in place; returns the module.
        """
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self: T) -> T:
        """Casts all floating point parameters and buffers to ``float64``, in place; returns the module.
        """
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self: T) -> T:
        """Casts all floating point parameters and buffers to ``float16``, in place; returns the module.
        """
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def cpu(self: T) -> T:
        """Moves all parameters and buffers to the CPU, in place; returns the module."""
        return self._apply(lambda t: t.cpu())

    def cuda(self: T, device: Any = None) -> T:
        """Moves all parameters and buffers to the CUDA device, in place; returns the module.

        Args:
            device (int or rustgrad.device, optional): the CUDA device; the current one if None.
        """
        return self._apply(lambda t: t.cuda(device))

    def type(self: T, dst_type: Any) -> T:
        """Casts all parameters and buffers to ``dst_type``, in place; returns the module.

        Args:
            dst_type (rustgrad.dtype): the target dtype.
        """
        return self._apply(lambda t: t.to(dst_type))

    # ---- state_dict -----------------------------------------------------------------------
    def _save_to_state_dict(self, destination: Dict[str, Any], prefix: str,
                            keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args: Any, destination: Optional[Dict[str, Any]] = None,
                   prefix: str = "", keep_vars: bool = False) -> Dict[str, Any]:
        """Returns a dictionary holding the module's whole state.

        The keys are the dotted names of the parameters and persistent buffers; the values are
        those tensors detached from autograd (they share their storage with the module's, so
        save or copy them before changing the module). The result is an ``OrderedDict``.

        Args:
            destination (dict, optional): a dictionary to fill instead of a new one.
            prefix (str): prepended to every key. Default: ``""``.
            keep_vars (bool): return the parameters themselves rather than detached tensors.
                Default: ``False``.

        Example::

            >>> _ = rustgrad.manual_seed(0)
            >>> src = nn.Linear(3, 2)
            >>> list(src.state_dict())
            ['weight', 'bias']
            >>> dst = nn.Linear(3, 2)
            >>> dst.load_state_dict(src.state_dict())
            <All keys matched successfully>
            >>> bool((dst.weight == src.weight).all())
            True
        """
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, {})
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str,
                              local_metadata: Dict[str, Any], strict: bool,
                              missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str], assign: bool = False) -> None:
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                         persistent.items()) if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, Tensor):
                    error_msgs.append(
                        f'While copying the parameter named "{key}", expected torch.Tensor or '
                        f"Tensor-like object from checkpoint but received {type(input_param)}"
                    )
                    continue
                if input_param.shape != param.shape:
                    error_msgs.append(
                        f"size mismatch for {key}: copying a param with shape "
                        f"{input_param.shape} from checkpoint, the shape in current model is "
                        f"{param.shape}."
                    )
                    continue
                try:
                    with no_grad():
                        if assign:
                            if isinstance(param, Parameter):
                                new = input_param if isinstance(input_param, Parameter) \
                                    else Parameter(input_param, param.requires_grad)
                                setattr(self, name, new)
                            else:
                                setattr(self, name, input_param)
                        else:
                            param.copy_(input_param)
                except Exception as ex:
                    error_msgs.append(
                        f'While copying the parameter named "{key}", whose dimensions in the '
                        f"model are {param.size()} and whose dimensions in the checkpoint are "
                        f"{input_param.size()}, an exception occurred : {ex.args}."
                    )
            elif strict:
                missing_keys.append(key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copies parameters and buffers from ``state_dict`` into this module and its submodules.

        The values are copied into the existing tensors (under ``no_grad``), so the parameters
        stay the same objects, unless ``assign=True``.

        Args:
            state_dict (dict): a dictionary such as one returned by :meth:`state_dict`.
            strict (bool): raise if the keys of ``state_dict`` and of the module's state differ.
                Default: ``True``.
            assign (bool): make the tensors of ``state_dict`` the module's (as Parameters where
                the module has Parameters) instead of copying. Default: ``False``.

        Returns:
            a named tuple ``(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: if ``strict`` and keys differ, or if a shape differs.

        Example::

            >>> a, b = nn.Linear(2, 1), nn.Linear(2, 1)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
            >>> b.load_state_dict({"weight": a.weight.detach()}, strict=False)
            _IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])
        """
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"Expected state_dict to be dict-like, got {type(state_dict)}."
            )
        missing_keys: List[str] = []
        unexpected_keys: List[str] = []
        error_msgs: List[str] = []
        state_dict = OrderedDict(state_dict)

        def load(module: Module, local_state_dict: Dict[str, Any], prefix: str = "") -> None:
            module._load_from_state_dict(local_state_dict, prefix, {}, True, missing_keys,
                                         unexpected_keys, error_msgs, assign)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers a hook called after :meth:`state_dict` has collected this module's state.

        The hook is called as ``hook(module, state_dict, prefix, local_metadata)`` and may
        modify ``state_dict`` in place or return a replacement.

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers a hook called after :meth:`load_state_dict` has loaded this module.

        The hook is called as ``hook(module, incompatible_keys)``, where ``incompatible_keys``
        has the ``missing_keys`` and ``unexpected_keys`` lists, which it may modify in place
        (clearing them keeps a strict load from raising).

        Returns:
            a ``RemovableHandle``; ``handle.remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- repr -----------------------------------------------------------------------------
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Returns the module-specific part of its ``repr``, such as ``in_features=3, ...``.

        Subclasses override it to show their configuration; the base class returns ``""``.
        """
        return ""

    def __repr__(self) -> str:
        extra_lines: List[str] = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def share_memory(self: T) -> T:
        """Kept for torch compatibility; does nothing here (a single process) and returns the module.
        """
        return self


# who_gets_grad(loss, module) names a module's parameters: autograd, below nn, learns the class here
_reach.module_types = (Module,)
