"""no_grad, enable_grad, set_grad_enabled, inference_mode: thread-local, as in torch.

The flag itself lives in Rust (rust/core/src/grad_mode.rs), so recording an op reads it
without a Python call.
"""

from __future__ import annotations

# _thread, not threading: the same local() class, and `import rustgrad` skips threading
import _thread
import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar

from .. import _core

F = TypeVar("F", bound=Callable[..., Any])

# Inside inference mode ops record nothing whatever grad mode says (torch): Rust's grad flag,
# which recording reads, stays off there, and the grad mode user code sets and reads is kept
# here, per thread.
_inference_grad = _thread._local()


def _grad_in_inference() -> bool:
    return getattr(_inference_grad, "mode", False)


def _set_grad(mode: bool) -> bool:
    """Sets grad mode as user code sees it; returns the previous one."""
    if _core.is_inference_mode_enabled():
        prev = _grad_in_inference()
        _inference_grad.mode = mode
        return prev
    return _core.set_grad_enabled(mode)


class _DecoratorContextManager:
    """Usable as `with no_grad():` and as `@no_grad()` (also on generator functions)."""

    def __call__(self, orig_func: F) -> F:
        func: Any = orig_func
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods.",
                FutureWarning,
                stacklevel=2,
            )
            func = lambda *args, **kwargs: orig_func(*args, **kwargs)  # noqa: E731
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as e:
                            with self.clone():
                                response = gen.throw(e)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value

            return gen_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> _DecoratorContextManager:
        """A fresh copy of this context manager (what the decorator enters at each call)."""
        return self.__class__()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: Any) -> None:
        raise NotImplementedError


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disables gradient recording: results of ops are leaves that do not require grad.

    Use it for inference and for updates that autograd must not see (an optimizer step).
    Thread-local; usable as ``with no_grad():``, as ``@no_grad()`` and as a bare ``@no_grad``
    (generator functions included). `enable_grad` turns recording back on inside.

    Example::

        >>> x = torch.tensor([1.0], requires_grad=True)
        >>> with torch.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> @torch.no_grad
        ... def double(t):
        ...     return t * 2
        >>> double(x).requires_grad
        False
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _set_grad(False)

    def __exit__(self, *exc: Any) -> None:
        _set_grad(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Enables gradient recording inside a no_grad block.

    Thread-local; a context manager and a decorator, as `no_grad`. It has no effect inside
    `inference_mode`.

    Example::

        >>> x = torch.tensor([1.0], requires_grad=True)
        >>> with torch.no_grad():
        ...     with torch.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _set_grad(True)

    def __exit__(self, *exc: Any) -> None:
        _set_grad(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off; takes effect at once, and also works as a context manager.

    Called as a function it changes the mode for the rest of the thread; used with ``with`` (or as
    a decorator) it restores the previous mode on exit.

    Args:
        mode (bool): ``True`` to record operations for autograd, ``False`` not to.

    Example::

        >>> x = torch.tensor([1.0], requires_grad=True)
        >>> with torch.set_grad_enabled(False):
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> torch.is_grad_enabled()
        True
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.prev = _set_grad(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _set_grad(self.prev)

    def clone(self) -> set_grad_enabled:
        """A fresh copy with the same mode (what the decorator enters at each call)."""
        return self.__class__(self.mode)

    def __call__(self, func: F) -> F:
        _set_grad(self.prev)
        return super().__call__(func)


class inference_mode(_DecoratorContextManager):
    """No recording at all, even under enable_grad; `inference_mode(False)` turns it off and
    grad mode on. Tensors made inside are inference tensors (Note [Inference tensors]).

    Cheaper than `no_grad` for pure inference, but the tensors made inside cannot later be saved
    for backward by a recorded op. A context manager and a decorator (bare or called).

    Args:
        mode (bool): whether to enable inference mode. Default: ``True``.

    Example::

        >>> x = torch.ones(2, requires_grad=True)
        >>> with torch.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad, torch.is_inference_mode_enabled()
        (False, False)
    """
    """No recording at all, even under enable_grad; `inference_mode(False)` turns it off and
    grad mode on. Tensors made inside are inference tensors (Note [Inference tensors])."""

    def __new__(cls, mode_or_orig_func: Any = True) -> Any:
        # a bare `@inference_mode` hands the function over in place of the mode
        if mode_or_orig_func is None or isinstance(mode_or_orig_func, bool):
            return super().__new__(cls)
        return cls()(mode_or_orig_func)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prev = self.prev_inf = self.prev_inner = False

    def __call__(self, func: Any) -> Any:  # type: ignore[override]
        if isinstance(func, bool):
            return inference_mode(func)
        return super().__call__(func)

    def __enter__(self) -> None:
        # torch's InferenceMode(mode) also sets grad mode to `not mode`
        self.prev_inner = _grad_in_inference()
        _inference_grad.mode = False
        self.prev = _core.set_grad_enabled(not self.mode)
        self.prev_inf = _core.set_inference_mode(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _core.set_inference_mode(self.prev_inf)
        _core.set_grad_enabled(self.prev)
        _inference_grad.mode = self.prev_inner

    def clone(self) -> inference_mode:
        """A fresh copy with the same mode (what the decorator enters at each call)."""
        return self.__class__(self.mode)


def is_grad_enabled() -> bool:
    """Whether grad mode is on in this thread (ops record for autograd).

    Example::

        >>> torch.is_grad_enabled()
        True
        >>> with torch.no_grad():
        ...     torch.is_grad_enabled()
        False
    """
    if _core.is_inference_mode_enabled():
        return _grad_in_inference()
    return _core.is_grad_enabled()


def is_inference_mode_enabled() -> bool:
    """Whether `inference_mode` is on in this thread."""
    return _core.is_inference_mode_enabled()
