"""torch.autograd's engine switches that rustgrad's engine has no use for but programs set and
read: set_multithreading_enabled / is_multithreading_enabled, enforce_grad_layout_policy, and
_force_original_view_tracking / is_view_replay_enabled.

Each is a thread-local flag with torch's default, set and restored as torch's context managers
do (on construction, so each also works as a plain function call). What the flags change in
torch, and why rustgrad gives the same values either way:

- multithreading: torch runs the backward of accelerator tensors on per-device worker threads;
  rustgrad's engine always runs backward on the calling thread.
- grad layout: torch makes an accumulated ``.grad`` take its parameter's strides unless the
  policy is relaxed; rustgrad's ``.grad`` keeps the layout its gradient arrives in (row-major
  for a gradient the engine made), whatever the flag says. Values are the same.
- view replay: after an in-place op on a view, torch regenerates the view's ``grad_fn`` by
  replaying the views when this is on; rustgrad always regenerates it through ``as_strided``
  (``AsStridedBackward0``), which gives the same gradients.
"""

from __future__ import annotations

# _thread, not threading: `import rustgrad` skips threading
import _thread
from typing import Any, Callable, TypeVar

from .grad_mode import _DecoratorContextManager

__all__ = ["set_multithreading_enabled", "is_multithreading_enabled",
           "enforce_grad_layout_policy", "is_view_replay_enabled",
           "_force_original_view_tracking"]

F = TypeVar("F", bound=Callable[..., Any])

_flags = _thread._local()


def _flag(name: str, default: bool) -> bool:
    return getattr(_flags, name, default)


def _set_flag(name: str, setter: str, value: Any) -> None:
    """Sets a flag, refusing what torch's binding refuses (anything but a Python bool)."""
    if type(value) is not bool:
        kind = type(value)
        shown = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"{setter}(): argument 'enabled' (position 1) must be bool, not {shown}")
    setattr(_flags, name, value)


def is_multithreading_enabled() -> bool:
    """Returns True if multithreading is currently enabled.

    Example::

        >>> torch.autograd.is_multithreading_enabled()
        True
    """
    return _flag("multithreading", True)


def is_view_replay_enabled() -> bool:
    """Returns True if view-replay is currently enabled.

    rustgrad regenerates a view's ``grad_fn`` after an in-place op through ``as_strided`` either
    way (same gradients); the flag is kept for programs that read it.

    Example::

        >>> torch.autograd.is_view_replay_enabled()
        False
    """
    return _flag("view_replay", False)


class set_multithreading_enabled(_DecoratorContextManager):
    """Context-manager (and function) that enables or disables multithreaded backward.

    Sets the thread-local flag :func:`is_multithreading_enabled` reads when constructed, and
    restores the previous value on exit of a ``with`` block. rustgrad's engine runs backward on
    the calling thread either way, so the flag changes no result.

    Args:
        mode (bool): whether to enable multithreaded backward.

    Example::

        >>> with torch.autograd.set_multithreading_enabled(False):
        ...     torch.autograd.is_multithreading_enabled()
        False
        >>> torch.autograd.is_multithreading_enabled()
        True
    """

    def __init__(self, mode: bool) -> None:
        self.prev = is_multithreading_enabled()
        _set_flag("multithreading", "set_multithreading_enabled", mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _flags.multithreading = self.prev

    def clone(self) -> set_multithreading_enabled:
        """A fresh copy of this context manager (what the decorator enters at each call)."""
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):
    """Context-manager (and function) that sets whether accumulated gradients must take their
    parameter's layout (strides).

    A thread-local flag, set when constructed and restored on exit of a ``with`` block. rustgrad
    does not enforce the layout of ``.grad`` either way (it keeps the layout the gradient arrives
    in); values are the same.

    Args:
        enable (bool): enforce the layout contract (``True``) or relax it. Default: ``True``.

    Example::

        >>> p = torch.ones(2, 3, requires_grad=True)
        >>> with torch.autograd.enforce_grad_layout_policy(False):
        ...     (p * 2).sum().backward()
        >>> p.grad
        tensor([[2., 2., 2.],
                [2., 2., 2.]])
    """

    def __init__(self, enable: bool = True) -> None:
        self.prev = _flag("grad_layout", True)
        _set_flag("grad_layout", "set_grad_layout_enforcement_enabled", enable)
        self.mode = enable

    def __call__(self, orig_func: F) -> F:
        _flags.grad_layout = self.prev
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _flags.grad_layout = self.prev

    def clone(self) -> enforce_grad_layout_policy:
        """A fresh copy of this context manager (what the decorator enters at each call)."""
        return self.__class__(self.mode)


class _force_original_view_tracking(_DecoratorContextManager):
    """Context-manager (and function) that sets whether autograd always replays views (the flag
    :func:`is_view_replay_enabled` reads), thread-local, restored on exit.

    rustgrad regenerates views through ``as_strided`` whatever the flag says (see the module
    docstring).

    Args:
        mode (bool): whether to enable view replay.
    """

    def __init__(self, mode: bool) -> None:
        self.prev = is_view_replay_enabled()
        self.mode = mode
        _set_flag("view_replay", "set_view_replay_enabled", mode)

    def __call__(self, orig_func: F) -> F:
        _flags.view_replay = self.prev
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        _flags.view_replay = self.mode

    def __exit__(self, *exc: Any) -> None:
        _flags.view_replay = self.prev

    def clone(self) -> _force_original_view_tracking:
        """A fresh copy of this context manager (what the decorator enters at each call)."""
        return self.__class__(self.mode)
