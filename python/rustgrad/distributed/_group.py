"""Process groups: the default one (``init_process_group``), sub-groups (``new_group``), and the
questions about them (rank, size, backend). Backends are imported on first use only."""

from __future__ import annotations

import datetime
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _checks
from ._nccl import NCCLBackend

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "default_pg_timeout", "destroy_process_group",
    "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "is_initialized", "new_group",
]

default_pg_timeout = datetime.timedelta(minutes=30)
_NCCL_TIMEOUT = datetime.timedelta(minutes=10)
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class Backend(str):
    """A backend's name: ``Backend.MPI`` (``"mpi"``), ``Backend.NCCL`` (``"nccl"``) and
    ``Backend.GLOO`` (``"gloo"``, run on MPI: rustgrad has no gloo, and torch scripts ask for
    gloo to mean "the CPU backend"). ``Backend("NCCL") == "nccl"``.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.Backend("GLOO"), dist.Backend.MPI
        ('gloo', 'mpi')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"
    backend_list = [GLOO, MPI, NCCL]

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = name.lower()
        if value not in cls.backend_list and value != cls.UNDEFINED:
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together (torch's ``ProcessGroup``).

    Made by ``init_process_group`` (the default group, ``group.WORLD``) and ``new_group``;
    passed as ``group=`` to collectives. ``rank()`` is this process's rank in the group and
    ``size()`` the group's number of ranks.
    """

    def __init__(self, backend: str, impl: Any, ranks: List[int]) -> None:
        self._backend_name = backend
        self._impl = impl
        self._ranks = ranks
        # the cross-rank checks of its collectives (_checks.py): on or off, and their count
        self._checked = _checks.wanted(len(ranks))
        self._check_seq = 0
        impl.global_ranks = ranks
        if hasattr(impl, "mpi"):  # NCCL's MPI communicator serves its CPU tensors
            impl.mpi.global_ranks = ranks

    def rank(self) -> int:
        """This process's rank in the group."""
        return int(self._impl.rank)

    def size(self) -> int:
        """The number of ranks in the group."""
        return int(self._impl.size)

    def name(self) -> str:
        """The backend's name (``"mpi"``, ``"nccl"``, or ``"gloo"`` as asked)."""
        return self._backend_name

    def __repr__(self) -> str:
        return f"<ProcessGroup {self._backend_name} ranks={self._ranks}>"


_world: List[Optional[ProcessGroup]] = [None]  # the default group, once initialised


class _WorldMeta(type):
    @property
    def WORLD(cls) -> Optional[ProcessGroup]:
        """The default process group (None before ``init_process_group``)."""
        return _world[0]


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD``: the default group once initialised (else None);
    ``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` returns on ranks outside the group."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default process group (None before ``init_process_group``).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.group.WORLD is None
        True
    """


_groups: Dict[int, ProcessGroup] = {}  # id -> every live group, the default one included


def is_initialized() -> bool:
    """Whether the default process group has been initialised.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.is_initialized()
        False
    """
    return GroupMember.WORLD is not None


def default_group() -> ProcessGroup:
    """The default group; torch's ValueError before ``init_process_group``."""
    pg = GroupMember.WORLD
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def resolve(g: Optional[ProcessGroup]) -> Optional[ProcessGroup]:
    """The group a ``group=`` argument names (None: the default one); None on a rank outside it."""
    if g is None or g is GroupMember.WORLD:
        return default_group()
    default_group()
    if isinstance(g, int) and g == GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(g, ProcessGroup):
        raise TypeError(f"expected a distributed.ProcessGroup, got {type(g).__name__}")
    return g


def _seconds(timeout: Any, default: datetime.timedelta) -> float:
    if timeout is None:
        return default.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout!r}")


def _backend_name(backend: Any) -> str:
    if backend is None:
        return Backend.MPI
    name = str(backend)
    if ":" in name:  # torch's "cpu:gloo,cuda:nccl": one backend serves both here
        devices = dict(part.split(":", 1) for part in name.lower().split(","))
        name = devices.get("cuda", devices.get("cpu", name))
    return str(Backend(name))



def _check_rank_and_size(name: str, rank: Any, world_size: Any, mpi_rank: int,
                         mpi_size: int) -> None:
    """torch's MPI backend ignores rank and world_size (with a warning); gloo and NCCL use them
    to rendezvous, and here, where MPI placed the processes already, they must agree with it."""
    rank = -1 if rank is None else int(rank)
    world_size = -1 if world_size is None else int(world_size)
    if name == Backend.MPI:
        if world_size != -1 or rank != -1:
            warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are "
                          "ignored since they are assigned by the MPI runtime.", stacklevel=3)
        return
    if world_size != -1:
        if world_size < 1:
            raise ValueError(f"init_process_group(world_size={world_size}): the world size "
                             "must be at least 1")
        if world_size != mpi_size:
            raise ValueError(
                f"init_process_group(world_size={world_size}) but MPI started {mpi_size} "
                f"process(es): start the ranks with `mpiexec -n {world_size}`, "
                f"`python -m rustgrad.distributed.run --nproc-per-node {world_size}` or "
                f"`rustgrad.multiprocessing.spawn(fn, nprocs={world_size})`")
    if rank != -1 and rank != mpi_rank:
        if not 0 <= rank < (mpi_size if world_size == -1 else world_size):
            raise ValueError(f"init_process_group(rank={rank}): the rank must be in "
                             f"[0, {mpi_size})")
        raise ValueError(f"init_process_group(rank={rank}) but this process is MPI's rank "
                         f"{mpi_rank}: the ranks come from mpiexec")


def init_process_group(backend: Optional[str] = None, init_method: Optional[str] = None,
                       timeout: Optional[datetime.timedelta] = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Joins this process to the job's default process group (torch's ``init_process_group``).

    The ranks are MPI's: start the processes with ``mpiexec -n N python train.py`` or
    ``python -m rustgrad.distributed.run --nproc-per-node N train.py``; a process started
    alone is a world of one, where every collective is a no-op of torch's shape.

    Args:
        backend (str, optional): ``"mpi"`` (the default) for tensors anywhere, staged through
            host memory; ``"nccl"`` for CUDA tensors through CuPy's NCCL (the communicator's
            unique id travels over MPI); ``"gloo"`` is accepted as torch scripts write it for
            the CPU and runs on MPI.
        init_method (str, optional): accepted for torch compatibility (``"env://"``,
            ``"tcp://..."``); MPI finds the other ranks by itself.
        timeout (datetime.timedelta, optional): how long a blocking collective or
            ``Work.wait()`` may take before the watchdog ends the job (default 30 minutes,
            10 for NCCL, as torch).
        world_size (int, optional), rank (int, optional): with ``"mpi"``, ignored with torch's
            warning (the MPI runtime assigns them); with ``"gloo"`` and ``"nccl"``, checked
            against MPI's: a ValueError if they disagree (the job was not started by mpiexec
            or ``rustgrad.multiprocessing.spawn`` with that many processes).
        store, group_name, pg_options, device_id: accepted for torch compatibility.

    On groups of up to 8 ranks every collective first checks, with one small allgather, that
    all ranks call the same collective on tensors of the same shape, dtype and device (and
    the same reduce op and root): where they differ, every rank raises a RuntimeError naming
    both ranks' calls, as torch does only under ``TORCH_DISTRIBUTED_DEBUG=DETAIL``, instead of
    reducing mismatched buffers. The environment variable ``RUSTGRAD_DISTRIBUTED_CHECKS``,
    read when a group is made and the same on every rank, sets it: ``0`` (off), ``1`` (on for
    any group size), ``auto`` (the default).

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.get_rank(), dist.get_world_size(), dist.is_initialized()
        (0, 1, True)
        >>> dist.destroy_process_group()
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_name(backend)
    default = _NCCL_TIMEOUT if name == Backend.NCCL else default_pg_timeout
    seconds = _seconds(timeout, default)
    # cycle: the package defines these two after importing this module
    from . import is_mpi_available, is_nccl_available

    if not is_mpi_available():
        raise RuntimeError("Distributed package doesn't have MPI built in: rustgrad's "
                           "backends run on mpi4py; install it with `pip install mpich mpi4py`")
    if name == Backend.NCCL and not is_nccl_available():
        raise RuntimeError("Distributed package doesn't have NCCL built in: rustgrad's NCCL "
                           "backend needs CuPy with its NCCL bindings (pip install "
                           "rustgrad[cuda12] or rustgrad[cuda13])")
    from . import _mpi  # optional dependency: mpi4py
    from ._watchdog import Watchdog  # import-time cost: threading, for a process group only

    comm = _mpi.world()
    mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
    # no backend named: torch's default (gloo/NCCL) uses rank and world_size, so check them
    asked = name if backend is not None else Backend.GLOO
    _check_rank_and_size(asked, rank, world_size, mpi_rank, mpi_size)
    watchdog = Watchdog(mpi_rank, _mpi.abort_world)
    impl: Any = _mpi.MPIBackend(comm, seconds, watchdog)
    if name == Backend.NCCL:
        impl = NCCLBackend(impl, device_id)
    pg = ProcessGroup(name, impl, list(range(mpi_size)))
    _world[0] = pg
    _groups[id(pg)] = pg
    if mpi_size > 1:
        _mpi.install_excepthook()


def destroy_process_group(group: Optional[ProcessGroup] = None) -> None:
    """Leaves a group (``group``), or every group, the default one included (None).

    After destroying the default group, ``init_process_group`` may be called again.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.destroy_process_group()
        >>> dist.is_initialized()
        False
    """
    if group is None or group is GroupMember.WORLD:
        if GroupMember.WORLD is None:
            raise AssertionError("Process group cannot be None")
        world = GroupMember.WORLD
        for pg in list(_groups.values()):
            if pg is not world:
                pg._impl.destroy()
        world._impl.destroy()
        world._impl.watchdog.stop()
        _groups.clear()
        _world[0] = None
        from . import _mpi  # optional dependency: mpi4py

        _mpi.restore_excepthook()
        return
    if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
        return
    if _groups.pop(id(group), None) is not None:
        group._impl.destroy()


def new_group(ranks: Optional[Sequence[int]] = None, timeout: Optional[datetime.timedelta] = None,
              backend: Optional[str] = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: Optional[str] = None,
              device_id: Any = None, sort_ranks: bool = True) -> Union[ProcessGroup, int]:
    """A group of some of the default group's ranks (an MPI communicator split).

    Every rank of the default group must call it, with the same ``ranks``, in the same order
    as its other ``new_group`` calls. A rank outside ``ranks`` gets
    ``GroupMember.NON_GROUP_MEMBER``; collectives on it do nothing there.

    Args:
        ranks (list of int, optional): the global ranks of the group (default: all).
        timeout (datetime.timedelta, optional): the group's timeout (default: the default
            group's).
        backend (str, optional): the group's backend (default: the default group's).
        sort_ranks (bool): order the group's ranks as the global ones. Default: ``True``.
        pg_options, use_local_synchronization, group_desc, device_id: accepted for torch
            compatibility.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> g = dist.new_group([0])
        >>> dist.get_rank(g), dist.get_world_size(g), dist.get_process_group_ranks(g)
        (0, 1, [0])
        >>> dist.destroy_process_group()
    """
    world = default_group()
    size = world.size()
    members = list(range(size)) if ranks is None else [int(r) for r in ranks]
    if sort_ranks:
        members = sorted(members)
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {size - 1} "
                             f"(world_size={size})")
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: ranks must be distinct, got {members}")
    name = world.name() if backend is None else _backend_name(backend)
    base = world._impl
    mpi = getattr(base, "mpi", base)  # an NCCL backend's MPI communicator
    seconds = mpi.timeout if timeout is None else _seconds(timeout, default_pg_timeout)
    impl: Any = mpi.split(members, seconds)
    if impl is None:
        return GroupMember.NON_GROUP_MEMBER
    if name == Backend.NCCL:
        impl = NCCLBackend(impl, device_id)
    pg = ProcessGroup(name, impl, members)
    _groups[id(pg)] = pg
    return pg


def get_rank(group: Optional[ProcessGroup] = None) -> int:
    """This process's rank in ``group`` (default: the default group); -1 outside it.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.get_rank()
        0
        >>> dist.destroy_process_group()
    """
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Optional[ProcessGroup] = None) -> int:
    """The number of ranks in ``group`` (default: the default group); -1 outside it.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.get_world_size()
        1
        >>> dist.destroy_process_group()
    """
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: Optional[ProcessGroup] = None) -> str:
    """The backend's name of ``group`` (default: the default group), as it was asked for.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_backend()
        'gloo'
        >>> dist.destroy_process_group()
    """
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg.name())


def get_process_group_ranks(group: Optional[ProcessGroup]) -> List[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._ranks)


def get_global_rank(group: Optional[ProcessGroup], group_rank: int) -> int:
    """The global rank of ``group``'s rank ``group_rank``."""
    pg = resolve(group)
    if pg is None or not 0 <= group_rank < len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg._ranks[group_rank]


def get_group_rank(group: Optional[ProcessGroup], global_rank: int) -> int:
    """``group``'s rank of the global rank ``global_rank``."""
    pg = resolve(group)
    if pg is None or global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return pg._ranks.index(global_rank)


