"""The collectives and point-to-point operations, with torch's signatures and checks.

Each function resolves the group, turns global ranks into the group's, checks its tensors,
then asks the group's backend (`_mpi.MPIBackend`, `_nccl.NCCLBackend`), which writes the
results into the tensors' storage in place. ``async_op=True`` returns the backend's `Work`.
"""

from __future__ import annotations

import warnings
from typing import Any, List, Optional, Sequence

from .._ops.joins import cat
from .._tensor import Tensor
from ..autograd import no_grad
from . import _checks
from ._group import GroupMember, ProcessGroup, resolve
from ._reduce_op import ReduceOp, as_red_op_type
from ._work import Work

__all__ = [
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather",
    "gather_object", "irecv",
    "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
    "scatter", "send",
]

SUM = ReduceOp.SUM


def _group(g: Optional[ProcessGroup], op: str) -> Optional[ProcessGroup]:
    pg = resolve(g)
    if pg is None:
        warnings.warn(f"Running {op} on a global rank which does not belong to the given group.",
                      stacklevel=3)
    return pg


def _check_tensor(t: Any, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


def _check_tensor_list(ts: Any, name: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        "List[torch.Tensor]\n             but got "
                        f"{type(ts)} with elements of type {[type(t) for t in ts]}.")


def _group_rank(pg: ProcessGroup, global_rank: Optional[int], group_rank: Optional[int]) -> int:
    """torch's _canonicalize_group_rank: the group's rank of a global or group rank."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return int(group_rank)
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if pg is GroupMember.WORLD:
        if not 0 <= global_rank < pg.size():
            raise RuntimeError(f"ProcessGroupMPI: invalid root rank: {global_rank}")
        return int(global_rank)
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._ranks.index(global_rank)


def _done(work: Work, async_op: bool) -> Optional[Work]:
    return work if async_op else None


def _same_numel(outputs: Sequence[Any], t: Any, op: str) -> None:
    for i, out in enumerate(outputs):
        if out.shape != t.shape:
            raise RuntimeError(f"ProcessGroupMPI::{op}: invalid tensor size at index {i} "
                               f"(expected {tuple(t.shape)}, got {tuple(out.shape)})")
        if out.dtype != t.dtype:
            raise RuntimeError(f"ProcessGroupMPI::{op}: invalid tensor type at index {i} "
                               f"(expected {t.dtype}, got {out.dtype})")


def all_reduce(tensor: Any, op: Any = SUM, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    """Reduces ``tensor`` across the group's ranks, in place: afterwards every rank holds the
    reduction (``op``: a `ReduceOp`, default SUM) of all ranks' values.

    Args:
        tensor (Tensor): the input and output, on every rank of the same shape and dtype.
        op (ReduceOp): SUM, AVG, PRODUCT, MIN, MAX, or (integer and bool tensors) BAND, BOR,
            BXOR. Default: SUM.
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Returns:
        A `Work` when ``async_op``, else None.

    Example (on a world of one the sum is the tensor itself)::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = torch.tensor([1.0, 2.0])
        >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)
        >>> t
        tensor([1., 2.])
        >>> dist.destroy_process_group()
    """
    _check_tensor(tensor, "tensor")
    red = as_red_op_type(op)
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    _checks.check(pg, "ALLREDUCE", tensor, ("reduce op", red.name))
    return _done(pg._impl.allreduce(tensor, red, async_op), async_op)


def broadcast(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
              async_op: bool = False, group_src: Optional[int] = None) -> Optional[Work]:
    """Copies ``tensor`` from rank ``src`` into ``tensor`` on every other rank of the group.

    Args:
        tensor (Tensor): the data to send on ``src``, the output elsewhere.
        src (int): the global rank that sends (or ``group_src``, its rank in ``group``).
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = torch.arange(3)
        >>> dist.broadcast(t, src=0)
        >>> t
        tensor([0, 1, 2])
        >>> dist.destroy_process_group()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src)
    _checks.check(pg, "BROADCAST", tensor, ("root", pg._ranks[root]))
    return _done(pg._impl.broadcast(tensor, root, async_op), async_op)


def reduce(tensor: Any, dst: Optional[int] = None, op: Any = SUM,
           group: Optional[ProcessGroup] = None, async_op: bool = False,
           group_dst: Optional[int] = None) -> Optional[Work]:
    """Reduces ``tensor`` across the group into ``tensor`` on rank ``dst`` only (the other
    ranks' tensors are left as they were).

    Args:
        tensor (Tensor): the input, and the output on ``dst``.
        dst (int): the global rank that receives the result (or ``group_dst``).
        op (ReduceOp): the reduction. Default: SUM.
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = torch.tensor([4, 5])
        >>> dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        >>> t
        tensor([4, 5])
        >>> dist.destroy_process_group()
    """
    _check_tensor(tensor, "tensor")
    red = as_red_op_type(op)
    pg = _group(group, "reduce")
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst)
    _checks.check(pg, "REDUCE", tensor, ("root", pg._ranks[root]), ("reduce op", red.name))
    return _done(pg._impl.reduce(tensor, root, red, async_op), async_op)


def all_gather(tensor_list: List[Any], tensor: Any, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    """Gathers every rank's ``tensor`` into ``tensor_list`` on every rank (entry i: rank i's).

    Args:
        tensor_list (list of Tensor): one output per rank of the group, each of ``tensor``'s
            shape and dtype.
        tensor (Tensor): this rank's contribution.
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = [torch.zeros(2)]
        >>> dist.all_gather(out, torch.tensor([1.0, 2.0]))
        >>> out
        [tensor([1., 2.])]
        >>> dist.destroy_process_group()
    """
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"ProcessGroupMPI::allgather: requires tensor_list of length "
                         f"{pg.size()} (the world size), got {len(tensor_list)}")
    _same_numel(tensor_list, tensor, "allgather")
    _checks.check(pg, "ALLGATHER", tensor)
    return _done(pg._impl.allgather(tensor_list, tensor, async_op), async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any,
                           group: Optional[ProcessGroup] = None,
                           async_op: bool = False) -> Optional[Work]:
    """Gathers every rank's ``input_tensor`` into ``output_tensor``, rank i's at the i-th
    block of its first dimension (``output_tensor`` is ``world_size`` inputs concatenated,
    or stacked).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = torch.zeros(1, 2)
        >>> dist.all_gather_into_tensor(out, torch.tensor([1.0, 2.0]))
        >>> out
        tensor([[1., 2.]])
        >>> dist.destroy_process_group()
    """
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise RuntimeError("output tensor size must be equal to world_size times input tensor "
                           f"size ({tuple(output_tensor.shape)} vs {pg.size()} x "
                           f"{tuple(input_tensor.shape)})")
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError("output tensor must have the same type as input tensor")
    _checks.check(pg, "_ALLGATHER_BASE", input_tensor,
                  ("output shape", tuple(int(d) for d in output_tensor.shape)))
    return _done(pg._impl.allgather_into(output_tensor, input_tensor, async_op), async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = SUM,
                          group: Optional[ProcessGroup] = None,
                          async_op: bool = False) -> Optional[Work]:
    """Reduces ``input`` across the ranks, then gives rank i the i-th block (of its first
    dimension) of the result, in ``output``.

    Args:
        output (Tensor): this rank's block of the reduction (``input.numel() / world_size``
            elements).
        input (Tensor): ``world_size`` blocks, the same shape on every rank.
        op (ReduceOp): the reduction. Default: SUM.
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = torch.zeros(2)
        >>> dist.reduce_scatter_tensor(out, torch.tensor([3.0, 4.0]))
        >>> out
        tensor([3., 4.])
        >>> dist.destroy_process_group()
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    red = as_red_op_type(op)
    pg = _group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if input.numel() != output.numel() * pg.size():
        raise RuntimeError("input tensor must be the same size as output size times world size "
                           f"({tuple(input.shape)} vs {pg.size()} x {tuple(output.shape)})")
    if output.dtype != input.dtype:
        raise RuntimeError("output tensor must have the same type as input tensor")
    _checks.check(pg, "_REDUCE_SCATTER_BASE", input,
                  ("output shape", tuple(int(d) for d in output.shape)), ("reduce op", red.name))
    return _done(pg._impl.reduce_scatter(output, input, red, async_op), async_op)


def gather(tensor: Any, gather_list: Optional[List[Any]] = None, dst: Optional[int] = None,
           group: Optional[ProcessGroup] = None, async_op: bool = False,
           group_dst: Optional[int] = None) -> Optional[Work]:
    """Gathers every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (entry i: rank i's).

    Args:
        tensor (Tensor): this rank's contribution.
        gather_list (list of Tensor, optional): on ``dst`` only, one output per rank.
        dst (int, optional): the global rank that receives (default 0; or ``group_dst``).
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = [torch.zeros(2, dtype=torch.int64)]
        >>> dist.gather(torch.tensor([7, 8]), out, dst=0)
        >>> out
        [tensor([7, 8])]
        >>> dist.destroy_process_group()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group, "gather")
    if pg is None:
        return None
    if dst is None and group_dst is None:
        dst = pg._ranks[0]
    root = _group_rank(pg, dst, group_dst)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"ProcessGroupMPI::gather: requires a gather_list of length "
                             f"{pg.size()}, got {len(gather_list)}")
        _same_numel(gather_list, tensor, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    _checks.check(pg, "GATHER", tensor, ("root", pg._ranks[root]))
    return _done(pg._impl.gather(tensor, gather_list, root, async_op), async_op)


def scatter(tensor: Any, scatter_list: Optional[List[Any]] = None, src: Optional[int] = None,
            group: Optional[ProcessGroup] = None, async_op: bool = False,
            group_src: Optional[int] = None) -> Optional[Work]:
    """Sends ``scatter_list[i]`` from rank ``src`` into ``tensor`` on rank i.

    Args:
        tensor (Tensor): the output.
        scatter_list (list of Tensor, optional): on ``src`` only, one input per rank.
        src (int, optional): the global rank that sends (default 0; or ``group_src``).
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = torch.zeros(2)
        >>> dist.scatter(t, [torch.tensor([5.0, 6.0])], src=0)
        >>> t
        tensor([5., 6.])
        >>> dist.destroy_process_group()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group, "scatter")
    if pg is None:
        return None
    if src is None and group_src is None:
        src = pg._ranks[0]
    root = _group_rank(pg, src, group_src)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"ProcessGroupMPI::scatter: requires a scatter_list of length "
                             f"{pg.size()}, got {len(scatter_list)}")
        _same_numel(scatter_list, tensor, "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _checks.check(pg, "SCATTER", tensor, ("root", pg._ranks[root]))
    return _done(pg._impl.scatter(tensor, scatter_list, root, async_op), async_op)


def all_to_all_single(output: Any, input: Any, output_split_sizes: Optional[List[int]] = None,
                      input_split_sizes: Optional[List[int]] = None,
                      group: Optional[ProcessGroup] = None,
                      async_op: bool = False) -> Optional[Work]:
    """Splits ``input`` along its first dimension and sends split i to rank i; ``output``
    receives, at its i-th split, what rank i sent this rank.

    Args:
        output (Tensor): the received splits, concatenated along the first dimension.
        input (Tensor): the splits to send, concatenated along the first dimension.
        output_split_sizes (list of int, optional): the rows received from each rank
            (default: ``output``'s rows divided equally).
        input_split_sizes (list of int, optional): the rows sent to each rank (default:
            ``input``'s rows divided equally).
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a `Work` to ``wait()`` on instead of blocking.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = torch.zeros(2, 2)
        >>> dist.all_to_all_single(out, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> out
        tensor([[1., 2.],
                [3., 4.]])
        >>> dist.destroy_process_group()
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group, "all_to_all_single")
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise RuntimeError("output tensor must have the same type as input tensor")
    n = pg.size()
    out_counts = _split_counts(output, output_split_sizes, n, "output")
    in_counts = _split_counts(input, input_split_sizes, n, "input")
    _checks.check(pg, "ALLTOALL_BASE", input, skip_dim0=True)
    return _done(pg._impl.alltoall(output, input, out_counts, in_counts, async_op), async_op)


def _split_counts(t: Any, splits: Optional[List[int]], n: int, what: str) -> List[int]:
    """Elements per rank of a tensor split along its first dimension."""
    rows = t.shape[0] if t.dim() else 1
    row = t.numel() // rows if rows else 0
    if splits is None or len(splits) == 0:
        if rows % n:
            raise RuntimeError(f"Tensor's dim 0 does not divide equally across group size ({what}"
                               f" has {rows} rows for {n} ranks)")
        return [rows // n * row] * n
    if len(splits) != n or sum(splits) != rows:
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size ({what}: {list(splits)} "
                           f"for {rows} rows and {n} ranks)")
    return [int(k) * row for k in splits]


def reduce_scatter(output: Any, input_list: List[Any], op: Any = SUM,
                   group: Optional[ProcessGroup] = None,
                   async_op: bool = False) -> Optional[Work]:
    """Reduces the i-th tensor of ``input_list`` across the ranks into ``output`` on rank i.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = torch.zeros(2)
        >>> dist.reduce_scatter(out, [torch.tensor([1.0, 2.0])])
        >>> out
        tensor([1., 2.])
        >>> dist.destroy_process_group()
    """
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _group(group, "reduce_scatter")
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: requires input_list of length {pg.size()} (the world "
                         f"size), got {len(input_list)}")
    _same_numel(input_list, output, "reduce_scatter")

    with no_grad():
        flat = cat([t.reshape(-1) for t in input_list])
    return reduce_scatter_tensor(output, flat, op, group, async_op)


def monitored_barrier(group: Optional[ProcessGroup] = None, timeout: Any = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that ends the job with the watchdog's message when some rank does not reach
    it within ``timeout`` (default: the group's).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.monitored_barrier()
        >>> dist.destroy_process_group()
    """
    barrier(group, timeout=timeout)


def barrier(group: Optional[ProcessGroup] = None, async_op: bool = False,
            device_ids: Optional[List[int]] = None, timeout: Any = None) -> Optional[Work]:
    """Blocks until every rank of the group has reached it.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.barrier()
        >>> dist.destroy_process_group()
    """
    pg = _group(group, "barrier")
    if pg is None:
        return None
    _checks.check(pg, "BARRIER")
    work = pg._impl.barrier(True)
    if not async_op:
        work.wait(timeout)
    return _done(work, async_op)


def _peer(pg: ProcessGroup, rank: Optional[int], group_rank: Optional[int], what: str) -> int:
    peer = _group_rank(pg, rank, group_rank)
    if peer == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         "of the current process.")
    return peer


def isend(tensor: Any, dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
          tag: int = 0, group_dst: Optional[int] = None) -> Optional[Work]:
    """Starts sending ``tensor`` to rank ``dst``; returns a `Work` (keep ``tensor`` unchanged
    until its ``wait()``).

    Example (two ranks)::

        >>> if dist.get_rank() == 0:  # doctest: +SKIP
        ...     dist.isend(torch.ones(2), dst=1).wait()
        ... else:
        ...     dist.irecv(t := torch.zeros(2), src=0).wait()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    return pg._impl.send(tensor, peer, tag, True)


def irecv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
          tag: int = 0, group_src: Optional[int] = None) -> Optional[Work]:
    """Starts receiving into ``tensor`` from rank ``src`` (any rank if None); returns a
    `Work` whose ``wait()`` ends with the values in ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _group(group, "irecv")
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "source")
    return pg._impl.recv(tensor, peer, tag, True)


def send(tensor: Any, dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
         tag: int = 0, group_dst: Optional[int] = None) -> None:
    """Sends ``tensor`` to rank ``dst`` (a matching ``recv`` there receives it).

    Example (two ranks)::

        >>> t = torch.arange(3.0)
        >>> if dist.get_rank() == 0:  # doctest: +SKIP
        ...     dist.send(t, dst=1)
        ... else:
        ...     dist.recv(t, src=0)
    """
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
         tag: int = 0, group_src: Optional[int] = None) -> int:
    """Receives into ``tensor`` from rank ``src`` (any rank if None); returns the sender's
    global rank (-1 outside ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


def broadcast_object_list(object_list: List[Any], src: Optional[int] = None,
                          group: Optional[ProcessGroup] = None, device: Any = None,
                          group_src: Optional[int] = None, weights_only: bool = False) -> None:
    """Replaces ``object_list``'s items on every rank by those of rank ``src`` (picklable
    objects).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> objs = [{"lr": 0.1}, "cfg"]
        >>> dist.broadcast_object_list(objs, src=0)
        >>> objs
        [{'lr': 0.1}, 'cfg']
        >>> dist.destroy_process_group()
    """
    pg = _group(group, "broadcast_object_list")
    if pg is None:
        return
    if src is None and group_src is None:
        src = pg._ranks[0]
    root = _group_rank(pg, src, group_src)
    mpi = getattr(pg._impl, "mpi", pg._impl)
    object_list[:] = mpi.bcast_object(list(object_list) if pg.rank() == root else None, root)


def all_gather_object(object_list: List[Any], obj: Any, group: Optional[ProcessGroup] = None,
                      weights_only: bool = False) -> None:
    """Fills ``object_list`` (one slot per rank) with every rank's picklable ``obj``.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = [None]
        >>> dist.all_gather_object(out, {"rank": dist.get_rank()})
        >>> out
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    pg = _group(group, "all_gather_object")
    if pg is None:
        return
    mpi = getattr(pg._impl, "mpi", pg._impl)
    gathered = mpi.allgather_object(obj)
    if len(object_list) != len(gathered):
        raise ValueError(f"all_gather_object: object_list must have {len(gathered)} slots "
                         f"(the world size), got {len(object_list)}")
    object_list[:] = gathered


def gather_object(obj: Any, object_gather_list: Optional[List[Any]] = None,
                  dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
                  group_dst: Optional[int] = None, weights_only: bool = False) -> None:
    """Gathers every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``
    (entry i: rank i's); the other ranks pass None and receive nothing.

    Args:
        obj (Any): this rank's picklable object.
        object_gather_list (list, optional): on ``dst`` only, a list with a slot per rank of
            the group (its first ``world_size`` entries are replaced); None elsewhere.
        dst (int, optional): the global rank that receives (default 0; or ``group_dst``).
        group (ProcessGroup, optional): the group (default: the default group).
        weights_only: accepted for torch compatibility (objects travel pickled).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = [None]
        >>> dist.gather_object({"loss": 0.5}, out if dist.get_rank() == 0 else None, dst=0)
        >>> out
        [{'loss': 0.5}]
        >>> dist.destroy_process_group()
    """
    pg = _group(group, "gather_object")
    if pg is None:
        return
    if dst is None and group_dst is None:
        dst = 0
    root = _group_rank(pg, dst, group_dst)
    if pg.rank() == root:
        if not object_gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    mpi = getattr(pg._impl, "mpi", pg._impl)
    gathered = mpi.gather_object(obj, root)
    if pg.rank() != root:
        return
    assert object_gather_list is not None
    for i, item in enumerate(gathered):
        object_gather_list[i] = item
