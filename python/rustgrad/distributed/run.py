"""``python -m rustgrad.distributed.run``: torchrun's command line, starting the ranks with
``mpiexec``.

Example::

    python -m rustgrad.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m rustgrad.distributed.run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py

Each rank finds torchrun's variables in its environment: ``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``,
``TORCHELASTIC_RUN_ID`` (``--rdzv-id``, default ``none``; a fresh one with ``--standalone``),
so a torchrun script (``init_process_group("gloo")`` or ``"nccl"``,
``int(os.environ["LOCAL_RANK"])``) runs by changing only the command. The mpiexec used is the
one next to this Python (a virtual environment's, from ``pip install mpich mpi4py``), else the
first on PATH, else ``--mpiexec``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import uuid
from typing import List, Optional, Sequence

from .. import cuda

__all__ = ["find_mpiexec", "get_args_parser", "main", "mpiexec_command", "parse_args"]

_MISSING = ("rustgrad.distributed.run: no mpiexec found next to {python} or on PATH; install "
            "MPI with `pip install mpich mpi4py` (or pass --mpiexec PATH)")


def find_mpiexec(explicit: Optional[str] = None) -> str:
    """The mpiexec to start the ranks with: ``explicit``, else the one in this Python's
    ``bin`` directory, else the first on PATH; a RuntimeError naming the install otherwise.

    Example::

        >>> from rustgrad.distributed.run import find_mpiexec
        >>> find_mpiexec("/opt/mpi/bin/mpiexec")
        '/opt/mpi/bin/mpiexec'
    """
    if explicit:
        return explicit
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError(_MISSING.format(python=sys.executable))
    return found


def get_args_parser() -> argparse.ArgumentParser:
    """The launcher's arguments: torchrun's names (with ``-`` or ``_``) plus MPI's host list.

    Example::

        >>> from rustgrad.distributed.run import parse_args
        >>> args = parse_args(["--nproc_per_node", "2", "train.py", "--lr", "0.1"])
        >>> args.nproc_per_node, args.training_script, args.training_script_args
        ('2', 'train.py', ['--lr', '0.1'])
    """
    p = argparse.ArgumentParser(
        prog="python -m rustgrad.distributed.run",
        description="Start a torchrun-style training script on N ranks through mpiexec.")

    def flag(name: str, **kw: object) -> None:
        spellings = [f"--{name}"]
        if "-" in name:
            spellings.append("--" + name.replace("-", "_"))
        p.add_argument(*spellings, **kw)  # type: ignore[arg-type]

    flag("nproc-per-node", default="1", help="ranks per node: a number, or 'cpu' (one per "
         "core) or 'gpu' (one per visible GPU). Default: 1")
    flag("nnodes", default="1", help="number of nodes (with --hostfile or --hosts). Default: 1")
    flag("hostfile", default=None, help="a file of host names, one a line (mpiexec -f)")
    flag("hosts", default=None, help="comma-separated host names (mpiexec -hosts)")
    flag("node-rank", default=0, type=int, help="accepted for torchrun compatibility")
    flag("master-addr", default="127.0.0.1", help="MASTER_ADDR for the script. Default: "
         "127.0.0.1")
    flag("master-port", default=29500, type=int, help="MASTER_PORT for the script. "
         "Default: 29500")
    flag("standalone", action="store_true", help="a fresh TORCHELASTIC_RUN_ID, as torchrun")
    flag("rdzv-id", default="none", help="TORCHELASTIC_RUN_ID for the script. Default: none")
    flag("mpiexec", default=None, help="the mpiexec to use (default: the venv's, then PATH's)")
    flag("mpiexec-args", default="", help="extra arguments for mpiexec, one string")
    flag("no-python", action="store_true", help="run the script as an executable, not with "
         "Python")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a Python module (python -m)")
    p.add_argument("training_script", help="the script (or module, or executable) to run")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The parsed command line (argv: without the program name; default sys.argv[1:])."""
    return get_args_parser().parse_args(argv)


def _nproc(value: str) -> int:
    if value == "cpu" or value == "auto":
        return os.cpu_count() or 1
    if value == "gpu":
        return max(cuda.device_count(), 1)
    n = int(value)
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {value}")
    return n


def mpiexec_command(args: argparse.Namespace) -> List[str]:
    """The mpiexec command line for parsed launcher arguments.

    Example::

        >>> from rustgrad.distributed.run import mpiexec_command, parse_args
        >>> cmd = mpiexec_command(parse_args(["--nproc-per-node", "2",
        ...                                   "--mpiexec", "mpiexec", "train.py"]))
        >>> cmd[:3], cmd[-1]
        (['mpiexec', '-n', '2'], 'train.py')
    """
    nproc, nnodes = _nproc(str(args.nproc_per_node)), int(args.nnodes)
    cmd = [find_mpiexec(args.mpiexec), "-n", str(nproc * nnodes)]
    if args.hostfile or args.hosts or nnodes > 1:
        if not (args.hostfile or args.hosts):
            raise ValueError("--nnodes > 1 needs the nodes: --hostfile FILE or --hosts h1,h2")
        cmd += ["-f", args.hostfile] if args.hostfile else ["-hosts", args.hosts]
        cmd += ["-ppn", str(nproc)]
    cmd += args.mpiexec_args.split()
    if args.no_python:
        return cmd + [args.training_script, *args.training_script_args]
    bootstrap = str(pathlib.Path(__file__).with_name("_rank_env.py"))
    script = ["-m", args.training_script] if args.module else [args.training_script]
    return cmd + [sys.executable, "-u", bootstrap, *script, *args.training_script_args]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Parses the command line and replaces this process by mpiexec running the ranks."""
    args = parse_args(argv)
    try:
        cmd = mpiexec_command(args)
    except (RuntimeError, ValueError) as e:
        sys.exit(f"error: {e}")
    os.environ["MASTER_ADDR"] = str(args.master_addr)
    os.environ["MASTER_PORT"] = str(args.master_port)
    # torchrun's: scripts test TORCHELASTIC_RUN_ID (dist.is_torchelastic_launched())
    os.environ["TORCHELASTIC_RUN_ID"] = str(uuid.uuid4()) if args.standalone else args.rdzv_id
    os.environ["TORCHELASTIC_RESTART_COUNT"] = "0"
    os.environ["TORCHELASTIC_MAX_RESTARTS"] = "0"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
