"""rustgrad.nn: Module, Parameter, layers, losses, functional and init, as torch.nn."""

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter

__all__ = ["Parameter", "Buffer", "functional", "init", "utils", *_modules_all]
