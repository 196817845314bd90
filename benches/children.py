"""Running a benchmark in a fresh child process and reading its result back: the child prints
one line `RESULT <json>` on stdout (anything else it prints is passed through to stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

MARK = "RESULT "
HERE = os.path.dirname(os.path.abspath(__file__))


def child_env(threads: int = 1) -> Dict[str, str]:
    """This environment with `threads` BLAS/Rayon threads and without the OpenBLAS core/cache
    overrides some machines here set (they slow current NumPy builds). OPENBLAS_NUM_THREADS has
    to be set before NumPy is imported, hence one process per thread count."""
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        env[name] = str(threads)
    return env


def emit(result: Any) -> None:
    """The child's side: prints `result` as the one result line."""
    sys.stdout.write(MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


def run_child(args: List[str], threads: int = 1, timeout: float = 600) -> Optional[Any]:
    """Runs `python <args>` from benches/ and returns its last result line, or None if it printed
    none (a child that dies after printing a result still returns it: the memory bench prints
    one before its backward, so a crash there is seen as such)."""
    try:
        proc = subprocess.run([sys.executable, *args], cwd=HERE, env=child_env(threads),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"{' '.join(args)}: timed out after {timeout:.0f} s\n")
        return None
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            result = json.loads(line[len(MARK):])
        elif line.strip():
            sys.stderr.write(line + "\n")
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.splitlines()[-8:])
        sys.stderr.write(f"{' '.join(args)}: exit status {proc.returncode}\n{tail}\n")
    return result
