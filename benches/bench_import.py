"""`import rustgrad` against `import numpy`, each in a fresh interpreter (and `python -c pass`
as the interpreter's own start-up), the three alternating, median seconds of the rounds.
PYTHONDONTWRITEBYTECODE is removed for the children (with it, nothing is ever read from a .pyc
cache and every import recompiles), and each is run once first to write those caches.

    python benches/bench_import.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List

PROGRAMS = {"python": "pass", "numpy": "import numpy", "rustgrad": "import rustgrad"}


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _seconds(code: str, env: Dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - t0


def measure(rounds: int) -> Dict[str, List[float]]:
    """{"python": [s, ...], "numpy": [...], "rustgrad": [...]}: wall seconds of each fresh
    interpreter, the order rotated each round."""
    env = _env()
    for code in PROGRAMS.values():
        _seconds(code, env)  # writes the .pyc caches
    names = list(PROGRAMS)
    out: Dict[str, List[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            out[n].append(_seconds(PROGRAMS[n], env))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    med = {k: statistics.median(v) for k, v in measure(a.rounds).items()}
    print(f"median of {a.rounds} fresh interpreters, seconds: "
          + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    print(f"import rustgrad - import numpy = {med['rustgrad'] - med['numpy']:+.3f} s (bar: <= +0.100 s)")


if __name__ == "__main__":
    main()
