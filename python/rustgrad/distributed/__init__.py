"""``rustgrad.distributed``: torch.distributed's API on MPI (mpi4py) and NCCL (CuPy).

Start the ranks with MPI's launcher or rustgrad's torchrun-like one::

    mpiexec -n 2 python train.py
    python -m rustgrad.distributed.run --nproc-per-node 2 train.py

and write the script as for torch::

    import rustgrad.distributed as dist
    dist.init_process_group("mpi")          # "gloo" runs on MPI too; "nccl" for CUDA tensors
    t = torch.ones(3) * dist.get_rank()
    dist.all_reduce(t)                      # every rank now holds the sum over ranks

A process started alone is a world of one, where every collective is a no-op of torch's shape.
On groups of up to 8 ranks, collectives whose ranks disagree (shape, dtype, device, reduce op,
root, or the collective itself) raise a RuntimeError on every rank before anything is sent;
``RUSTGRAD_DISTRIBUTED_CHECKS=0`` turns that check off, ``=1`` on for larger groups.
Importing this package imports neither mpi4py nor CuPy: ``init_process_group`` does.

Example::

    >>> from rustgrad import distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = torch.tensor([1.0, 2.0])
    >>> dist.all_reduce(t, op=dist.ReduceOp.MAX)
    >>> t, dist.get_rank(), dist.get_world_size()
    (tensor([1., 2.]), 0, 1)
    >>> dist.destroy_process_group()
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from .._backends import device as _make_device
from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    monitored_barrier,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_initialized,
    new_group,
)
from ._reduce_op import ReduceOp, reduce_op
from ._work import Work

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all_single",
    "barrier", "broadcast", "monitored_barrier", "reduce_scatter",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_default_backend_for_device", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "isend", "new_group",
    "recv", "reduce", "reduce_op", "reduce_scatter_tensor", "scatter", "send",
]


def is_available() -> bool:
    """Whether the distributed package is usable: always True (the backends are checked by
    ``is_mpi_available`` and ``is_nccl_available``).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_available()
        True
    """
    return True


def is_mpi_available() -> bool:
    """Whether the MPI backend can run: mpi4py is installed (``pip install mpich mpi4py``).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_mpi_available() in (True, False)
        True
    """
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """Whether the NCCL backend can run: mpi4py, and CuPy with its NCCL bindings, load.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_nccl_available() in (True, False)
        True
    """
    if not is_mpi_available():
        return False
    try:
        from cupy.cuda import nccl  # optional dependency
    except Exception:  # no CuPy, CuPy without a CUDA runtime, or built without NCCL
        return False
    return bool(getattr(nccl, "available", True))


def is_gloo_available() -> bool:
    """Whether ``init_process_group("gloo")`` can run: True when mpi4py is installed, since
    rustgrad's gloo is its MPI backend under torch's CPU backend name.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_gloo_available() == dist.is_mpi_available()
        True
    """
    return is_mpi_available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchrun or ``python -m rustgrad.distributed.run``
    (both set ``TORCHELASTIC_RUN_ID`` in every rank's environment).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_torchelastic_launched() in (True, False)
        True
    """
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


# torch's Backend.default_device_backend_map
_DEVICE_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo"}
# device types torch knows but has no default backend for (a ValueError, not a bad device)
_OTHER_DEVICE_TYPES = frozenset({"meta", "hip", "ipu", "mkldnn", "opengl", "opencl", "ideep",
                                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "hpu", "mtia",
                                 "privateuseone"})


def get_default_backend_for_device(device: Any) -> str:
    """The backend torch picks for a device: ``"gloo"`` for ``"cpu"``, ``"nccl"`` for
    ``"cuda"`` (both run here); a ValueError for a device type without one.

    Args:
        device (str or rustgrad.device): the device, as ``"cuda:1"`` or ``torch.device``.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.get_default_backend_for_device("cpu"), dist.get_default_backend_for_device(
        ...     torch.device("cuda:0"))
        ('gloo', 'nccl')
    """
    if isinstance(device, str) and device.split(":", 1)[0] in (
            _DEVICE_BACKENDS.keys() | _OTHER_DEVICE_TYPES):
        kind = device.split(":", 1)[0]
    else:
        kind = device.type if isinstance(device, _make_device) else _make_device(device).type
    backend = _DEVICE_BACKENDS.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend
