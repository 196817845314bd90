"""rustgrad.nn.parallel: DataParallel and data_parallel, on one device."""

from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
