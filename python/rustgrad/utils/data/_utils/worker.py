"""torch.utils.data._utils.worker's import path for the worker side (see ../_worker.py)."""

from .._worker import WorkerInfo, get_worker_info  # noqa: F401
