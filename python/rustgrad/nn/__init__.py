"""rustgrad.nn: Module, Parameter, layers, losses, functional and init, as torch.nn."""

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "Buffer", "functional", "init", "utils", "parallel", "DataParallel",
           "UninitializedParameter", "UninitializedBuffer", *_modules_all]
