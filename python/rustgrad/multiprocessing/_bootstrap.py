"""Run in each process that ``rustgrad.multiprocessing.spawn`` starts under mpiexec:
prepares the interpreter as multiprocessing's "spawn" does (sys.path, cwd, the main script
imported as ``__mp_main__``), unpickles ``fn`` and ``args``, and calls ``fn(rank, *args)``.
An exception's traceback goes, pickled, to WORKDIR/error{rank} for the parent to raise; a
non-zero ``sys.exit`` code to WORKDIR/exit{rank}."""

from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pathlib
import pickle
import sys
import traceback

__all__ = ["main"]


def _rank() -> int:
    from ..distributed._rank_env import torchrun_env  # import-time cost: the distributed package

    return int(torchrun_env(os.environ).get("RANK", "0"))


def _end_the_world() -> None:
    """After a failure: abort the MPI world if this process joined one of several ranks
    (the others may wait in a collective), else exit with 1."""
    sys.stdout.flush()
    sys.stderr.flush()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized() \
            and mpi.COMM_WORLD.Get_size() > 1:
        mpi.COMM_WORLD.Abort(1)
    sys.exit(1)


def main() -> None:
    """The entry point: ``python -c '...main()' WORKDIR``."""
    workdir = pathlib.Path(sys.argv[1])
    rank = _rank()
    _report(workdir / f"pid{rank}", str(os.getpid()).encode())
    try:
        with open(workdir / "payload", "rb") as f:
            _mp_spawn.prepare(pickle.load(f))
            fn, args = pickle.load(f)
        fn(rank, *args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code != 0:  # reported as torch's ProcessExitedException, with this rank
            _report(workdir / f"exit{rank}", str(code).encode())
        raise
    except (Exception, KeyboardInterrupt):
        _report(workdir / f"error{rank}", pickle.dumps(traceback.format_exc()))
        _end_the_world()


def _report(path: pathlib.Path, data: bytes) -> None:
    """Writes a file the parent polls for, whole or not at all."""
    path.with_suffix(".tmp").write_bytes(data)
    os.replace(path.with_suffix(".tmp"), path)
