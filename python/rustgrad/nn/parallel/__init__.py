"""rustgrad.nn.parallel: DataParallel and data_parallel on one device, and
DistributedDataParallel across the processes of a rustgrad.distributed group."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
