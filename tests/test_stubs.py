"""The type stubs of the compiled module match what it exports (mypy.stubtest)."""

import subprocess
import sys


def test_stubs_core_module_matches_runtime():
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "rustgrad._core"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
