"""glibc's malloc thresholds set at import (rust/python/src/malloc.rs): a step that frees its
large arrays and allocates them again reuses the freed pages instead of faulting them in anew;
RUSTGRAD_MALLOC=system leaves glibc's defaults, under which the same loop faults pages in every
round."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"

# three 8 MiB arrays freed together leave 24 MiB at the heap top: past glibc's default trim
# threshold (2x its dynamic mmap threshold, here 16 MiB), inside rustgrad's 64 MiB
LOOP = """
import json, resource, numpy as np, rustgrad
from rustgrad import _core
def round_():
    xs = [np.ones(2 << 20, np.float32) for _ in range(3)]
    del xs
for _ in range(3):
    round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    round_()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"tuned": _core.MALLOC_TUNED, "faults": (after - before) / 10}))
"""


def _run(**env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", LOOP], env={**os.environ, **env},
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's mallopt parameters")
def test_freed_pages_are_reused_and_the_switch_restores_glibcs_defaults() -> None:
    tuned = _run(RUSTGRAD_MALLOC="")
    system = _run(RUSTGRAD_MALLOC="system")
    assert tuned["tuned"] and not system["tuned"]
    pages = 3 * (8 << 20) // 4096  # the pages of one round
    assert tuned["faults"] < pages / 20, tuned
    # glibc's defaults fault part of each round in again (~1,000 of its 6,144 pages here)
    assert system["faults"] > pages / 20, system
