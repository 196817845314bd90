"""rustgrad.jit: torch.jit's names, with nothing compiled.

rustgrad has no TorchScript: `script` and `trace` return the function or module they are given,
unchanged, after one warning per process, so programs written for torch.jit run eagerly and give
the eager results. The decorators (`ignore`, `unused`, `export`, `interface`, ...) return what
they decorate; `is_scripting()` and `is_tracing()` are False, so code guarded by them takes its
eager path. `fork`/`wait` run the call at once. `save`/`load` of a "scripted" module refuse, since
there is no program to serialise: save its `state_dict()` with `rustgrad.save`.

Example::

    >>> import warnings
    >>> net = torch.nn.Linear(2, 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     scripted = torch.jit.script(net)
    >>> scripted is net
    True
"""

from __future__ import annotations

import builtins
import contextlib
import warnings
from typing import Any, Callable, Generic, Iterator, TypeVar

from . import _warn_once

T = TypeVar("T")

__all__ = [
    "Attribute", "Error", "Final", "Future", "ScriptFunction", "ScriptModule", "ScriptWarning",
    "TracerWarning", "TracingCheckError", "annotate", "enable_onednn_fusion", "export", "fork",
    "freeze", "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load",
    "onednn_fusion_enabled", "optimize_for_inference", "optimized_execution", "save", "script",
    "script_if_tracing", "script_method", "set_fusion_strategy", "strict_fusion", "trace",
    "trace_module", "unused", "wait",
]


class Error(RuntimeError):
    """torch.jit.Error: an error raised inside scripted code."""


class ScriptWarning(Warning):
    """torch.jit.ScriptWarning."""


class TracerWarning(Warning):
    """torch.jit.TracerWarning."""


class TracingCheckError(Exception):
    """torch.jit.TracingCheckError."""


class ScriptModule:
    """torch.jit.ScriptModule: no module is ever one here (script returns the nn.Module)."""


class ScriptFunction:
    """torch.jit.ScriptFunction: no function is ever one here (script returns the function)."""


# torch.jit.Final[int] marks a constant attribute; to Python it is typing.Final
from typing import Final  # noqa: E402


def _unchanged(obj: T, what: str) -> T:
    if _warn_once.due(f"jit.{what}"):
        warnings.warn(f"rustgrad.jit.{what} compiles nothing: it returns the function or module "
                      "it is given, which runs eagerly (rustgrad has no TorchScript)",
                      UserWarning, stacklevel=3)
    return obj


def script(obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> T:
    """Returns obj (a function, an nn.Module or a class) unchanged, after one warning.

    Args:
        obj: what torch would compile.
        optimize, example_inputs: accepted for torch's signature.
    """
    return _unchanged(obj, "script")


def trace(func: T, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None,
          _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> T:
    """Returns func (a function or an nn.Module) unchanged, after one warning; the example inputs
    are not run.

    Args:
        func: what torch would trace.
        example_inputs: accepted for torch's signature.
    """
    return _unchanged(func, "trace")


def trace_module(mod: T, inputs: Any, *args: Any, **kwargs: Any) -> T:
    """Returns mod unchanged, after one warning (see `trace`)."""
    return _unchanged(mod, "trace_module")


def script_if_tracing(fn: T) -> T:
    """Returns fn: nothing is ever traced here."""
    return fn


def freeze(mod: T, preserved_attrs: Any = None, optimize_numerics: bool = True) -> T:
    """Returns mod: there is no scripted module to freeze."""
    return mod


def optimize_for_inference(mod: T, other_methods: Any = None) -> T:
    """Returns mod: there is no scripted module to optimise."""
    return mod


def _identity_decorator(fn: Any = None, **kwargs: Any) -> Any:
    """A decorator usable bare (@ignore) or called (@ignore(drop=True))."""
    if fn is None:
        return lambda f: f
    return fn


ignore = _identity_decorator
unused = _identity_decorator


def export(fn: T) -> T:
    """Returns fn (torch marks it as a scripted entry point)."""
    return fn


def interface(obj: T) -> T:
    """Returns obj (torch declares a TorchScript interface with it)."""
    return obj


def script_method(fn: T) -> T:
    """Returns fn (torch's legacy ScriptModule method decorator)."""
    return fn


def is_scripting() -> bool:
    """False: no code runs as TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: no code is traced here."""
    return False


def annotate(the_type: Any, the_value: T) -> T:
    """Returns the_value (torch uses the_type when scripting)."""
    return the_value


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001  (torch.jit.isinstance)
    """builtins.isinstance for plain classes; for typing's List[int] and the like, the container
    is checked against its origin type."""
    origin = getattr(target_type, "__origin__", None)
    return builtins.isinstance(obj, origin if origin is not None else target_type)


class Attribute(Generic[T]):
    """torch.jit.Attribute(value, type): to Python, the value itself."""

    def __new__(cls, value: T, type: Any = None) -> Any:  # noqa: A002  (torch's name)
        return value


class Future(Generic[T]):
    """The result of `fork`: already computed (the call ran at once)."""

    def __init__(self, value: T) -> None:
        self._value = value

    def wait(self) -> T:
        """The call's result."""
        return self._value

    def done(self) -> bool:
        """True: the call has run."""
        return True


def fork(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Runs func(*args, **kwargs) now and returns its result as a Future (torch may run it on
    another thread; the values are the same)."""
    return Future(func(*args, **kwargs))


def wait(future: Future[T]) -> T:
    """The result of a `fork`."""
    return future.wait()


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refuses: rustgrad has no TorchScript program to write. Save the module's weights with
    `rustgrad.save(m.state_dict(), f)` and rebuild the module in code to load them."""
    raise RuntimeError("rustgrad.jit.save: there is no TorchScript program to save (script and "
                       "trace return the module unchanged); save its weights with "
                       "rustgrad.save(module.state_dict(), path) instead")


def load(f: Any, map_location: Any = None, _extra_files: Any = None,
         _restore_shapes: bool = False) -> Any:
    """Refuses: TorchScript archives hold compiled programs that rustgrad cannot run. Load
    weights saved with torch.save(module.state_dict()) through `rustgrad.load` instead."""
    raise RuntimeError("rustgrad.jit.load: TorchScript archives cannot be run by rustgrad; load "
                       "a state_dict saved with torch.save through rustgrad.load instead")


_fusion = {"onednn": False}


def enable_onednn_fusion(enabled: bool) -> None:
    """Records the oneDNN fusion switch (nothing is fused here)."""
    _fusion["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The oneDNN fusion switch last set (False by default)."""
    return _fusion["onednn"]


def set_fusion_strategy(strategy: Any) -> Any:
    """Accepts torch's fusion strategy list and returns the previous one ([] here)."""
    return []


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """A context in which TorchScript would (not) optimise: nothing changes here."""
    yield


@contextlib.contextmanager
def strict_fusion() -> Iterator[None]:
    """A context in which TorchScript checks that everything fuses: nothing is fused here."""
    yield
