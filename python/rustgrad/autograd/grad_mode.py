"""no_grad, enable_grad, set_grad_enabled, inference_mode: thread-local, as in torch.

The flag itself lives in Rust (rust/core/src/grad_mode.rs), so recording an op reads it
without a Python call.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from .. import _core

F = TypeVar("F", bound=Callable[..., Any])


class _DecoratorContextManager:
    """Usable as `with no_grad():` and as `@no_grad()` (also on generator functions)."""

    def __call__(self, func: F) -> F:
        if inspect.isclass(func):
            raise RuntimeError("Cannot decorate classes; it is ambiguous")
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
        return self.__class__()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: Any) -> None:
        raise NotImplementedError


class no_grad(_DecoratorContextManager):
    """Disables gradient recording: results of ops are leaves that do not require grad."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _core.set_grad_enabled(False)

    def __exit__(self, *exc: Any) -> None:
        _core.set_grad_enabled(self.prev)


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording inside a no_grad block."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _core.set_grad_enabled(True)

    def __exit__(self, *exc: Any) -> None:
        _core.set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off; takes effect at once, and also works as a context manager."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.prev = _core.set_grad_enabled(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _core.set_grad_enabled(self.prev)

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)

    def __call__(self, func: F) -> F:
        _core.set_grad_enabled(self.prev)
        return super().__call__(func)


class inference_mode(_DecoratorContextManager):
    """Like no_grad (rustgrad does not distinguish inference tensors further)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prev = self.prev_inf = False

    def __call__(self, func: Any) -> Any:  # type: ignore[override]
        if isinstance(func, bool):
            return inference_mode(func)
        return super().__call__(func)

    def __enter__(self) -> None:
        self.prev_inf = _core.set_inference_mode(self.mode)
        self.prev = _core.set_grad_enabled(not self.mode and _core.is_grad_enabled())

    def __exit__(self, *exc: Any) -> None:
        _core.set_grad_enabled(self.prev)
        _core.set_inference_mode(self.prev_inf)

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)


def is_grad_enabled() -> bool:
    return _core.is_grad_enabled()


def is_inference_mode_enabled() -> bool:
    return _core.is_inference_mode_enabled()
