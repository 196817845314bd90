"""``spawn``: torch.multiprocessing's ``spawn(fn, args, nprocs)``, with the processes started
by ``mpiexec`` so that they form one MPI world: ``fn(rank, *args)`` may call
``dist.init_process_group("gloo", rank=rank, world_size=nprocs)`` as in torch's DDP tutorial.

Each process unpickles ``fn`` and ``args`` as multiprocessing's "spawn" start method does: the
main script is imported as ``__mp_main__`` (its ``if __name__ == "__main__":`` block does not
run), so ``fn`` must be a module-level function, as torch requires.
"""

from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pathlib
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Callable, List, Optional, Sequence

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]

_POLL_S = 0.05
# the process manager's variables of a parent started by mpiexec: a nested mpiexec must not
# mistake the children for its own parent's ranks
_MANAGER_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL", "OMPI_")


class ProcessException(Exception):
    """A spawned process failed: ``error_index`` is its rank, ``error_pid`` its process id."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process's ``fn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process (or the launcher) ended with a non-zero exit code or a signal,
    without a Python exception to report."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: Optional[str] = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return (type(self),
                (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name))


class ProcessContext:
    """The running processes of a ``spawn(..., join=False)``: ``join()`` waits for them."""

    def __init__(self, launcher: subprocess.Popen, nprocs: int, workdir: pathlib.Path) -> None:
        self.launcher = launcher
        self.nprocs = nprocs
        self.workdir = workdir
        self._done = False

    def pids(self) -> List[int]:
        """The process ids of the ranks that have started (in rank order; the launcher's id
        when none has reported yet)."""
        found = [self.workdir / f"pid{r}" for r in range(self.nprocs)]
        pids = [int(p.read_text()) for p in found if p.exists() and p.read_text()]
        return pids or [self.launcher.pid]

    def _errors(self) -> List[pathlib.Path]:
        """The failed ranks' reports (error{r}: a traceback, exit{r}: an exit code), the
        first failure first."""
        files = [self.workdir / f"{kind}{r}" for r in range(self.nprocs)
                 for kind in ("error", "exit")]
        return sorted((f for f in files if f.exists()), key=lambda f: f.stat().st_mtime)

    def _stop(self, grace_period: Optional[float]) -> None:
        if grace_period is not None:
            try:
                self.launcher.wait(grace_period)
            except subprocess.TimeoutExpired:
                pass
        if self.launcher.poll() is None:
            self.launcher.send_signal(signal.SIGTERM)  # mpiexec passes it to every rank
            try:
                self.launcher.wait(30 if grace_period is None else grace_period)
            except subprocess.TimeoutExpired:
                self.launcher.kill()
                self.launcher.wait()

    def join(self, timeout: Optional[float] = None,
             grace_period: Optional[float] = None) -> bool:
        """Waits for the processes: True once all have ended well, False if ``timeout``
        seconds passed first. When one fails, the others are ended (after ``grace_period``
        seconds, if given) and its exception is raised here: ``ProcessRaisedException``
        with its traceback, or ``ProcessExitedException``."""
        if self._done:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.launcher.poll() is None and not self._errors():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        errors = self._errors()
        if errors:
            time.sleep(_POLL_S)  # the failing rank exits right after writing its file
            self._stop(grace_period)
        code = self.launcher.wait()
        self._done = True
        try:
            if errors:
                first = errors[0]
                kind = "exit" if first.name.startswith("exit") else "error"
                index = int(first.name[len(kind):])
                pid_file = self.workdir / f"pid{index}"
                pid = int(pid_file.read_text()) if pid_file.exists() else self.launcher.pid
                if kind == "exit":
                    status = int(first.read_text())
                    raise ProcessExitedException(
                        f"process {index:d} terminated with exit code {status:d}", index, pid,
                        status)
                trace = pickle.loads(first.read_bytes())
                msg = f"\n\n-- Process {index:d} terminated with the following error:\n"
                raise ProcessRaisedException(msg + trace, index, pid)
            if code != 0:
                if code < 0:
                    try:
                        name = signal.Signals(-code).name
                    except ValueError:
                        name = f"<Unknown signal {-code}>"
                    raise ProcessExitedException(f"process 0 terminated with signal {name}", 0,
                                                 self.launcher.pid, code, name)
                raise ProcessExitedException(f"process 0 terminated with exit code {code:d}",
                                             0, self.launcher.pid, code)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return True


def _child_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(_MANAGER_PREFIXES)}


def start_processes(fn: Callable[..., Any], args: Sequence[Any] = (), nprocs: int = 1,
                    join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> Optional[ProcessContext]:
    """Starts ``nprocs`` processes under ``mpiexec``, each calling ``fn(rank, *args)``.

    Args:
        fn (callable): a module-level function (pickled by reference), called as
            ``fn(i, *args)`` with ``i`` in ``range(nprocs)``, the process's MPI rank.
        args (tuple): picklable arguments passed on after the rank.
        nprocs (int): the number of processes. Default: 1.
        join (bool): wait for them (and raise a failure) before returning. Default: True.
        daemon (bool), start_method (str): accepted for torch compatibility; the processes
            are always fresh interpreters, as with torch's ``"spawn"``.

    Returns:
        None if ``join``, else the `ProcessContext` to ``join()``.

    Example::

        >>> import rustgrad.multiprocessing as mp
        >>> def work(rank, n):  # doctest: +SKIP
        ...     print(rank, n)
        >>> mp.start_processes(work, args=(3,), nprocs=2)  # doctest: +SKIP
    """
    from ..distributed.run import find_mpiexec  # import-time cost: the distributed package

    nprocs = int(nprocs)
    if nprocs < 1:
        raise ValueError(f"nprocs must be at least 1, got {nprocs}")
    mpiexec = find_mpiexec()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="rustgrad_spawn_"))
    try:
        with open(workdir / "payload", "wb") as f:
            # the main module's preparation first: the children need it to unpickle fn
            prep = _mp_spawn.get_preparation_data("rustgrad-spawn")
            prep["authkey"] = bytes(prep["authkey"])  # multiprocessing pickles it only itself
            pickle.dump(prep, f)
            pickle.dump((fn, tuple(args)), f)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    bootstrap = "from rustgrad.multiprocessing._bootstrap import main; main()"
    cmd = [mpiexec, "-n", str(nprocs), sys.executable, "-c", bootstrap, str(workdir)]
    sys.stdout.flush()
    sys.stderr.flush()
    context = ProcessContext(subprocess.Popen(cmd, env=_child_env()), nprocs, workdir)
    if not join:
        return context
    try:
        while not context.join():
            pass
    except KeyboardInterrupt:
        context._stop(None)
        raise
    return None


def spawn(fn: Callable[..., Any], args: Sequence[Any] = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> Optional[ProcessContext]:
    """torch.multiprocessing's ``spawn``: ``nprocs`` processes, each calling
    ``fn(rank, *args)``, started together as one MPI world (through ``mpiexec``), so ``fn``
    may call ``dist.init_process_group("gloo", rank=rank, world_size=nprocs)``.

    ``fn`` must be defined at the top level of a module (the main script included: it is
    imported in each process as ``__mp_main__``, so keep the script's entry under
    ``if __name__ == "__main__":``). An exception in one process ends the others and is
    raised here as `ProcessRaisedException`, with the process's traceback.

    Args:
        fn (callable): the function, called as ``fn(i, *args)``.
        args (tuple): picklable arguments after the rank.
        nprocs (int): the number of processes. Default: 1.
        join (bool): wait for the processes before returning. Default: True.
        daemon (bool): accepted for torch compatibility.
        start_method (str): deprecated, as in torch: anything but ``"spawn"`` warns.

    Returns:
        None if ``join``, else the `ProcessContext` to ``join()``.

    Example::

        >>> import rustgrad.multiprocessing as mp
        >>> def train(rank, world_size):  # doctest: +SKIP
        ...     dist.init_process_group("gloo", rank=rank, world_size=world_size)
        ...     ...
        ...     dist.destroy_process_group()
        >>> if __name__ == "__main__":  # doctest: +SKIP
        ...     mp.spawn(train, args=(2,), nprocs=2)
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t "
                      "torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
