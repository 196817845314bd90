"""`make demo` keeps working: a short run prints every section of the tour with real values."""

import pathlib
import subprocess
import sys

DEMO = pathlib.Path(__file__).resolve().parents[1] / "examples" / "demo.py"


def test_demo_short_run_prints_every_section():
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--epochs", "2", "--no-torch"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    for i in range(12):
        assert f"=== {i}." in out, f"section {i} missing"
    assert "MLP    rustgrad" in out and "CNN    rustgrad" in out
    assert "unchanged, bit for bit, after an SGD step: True" in out
    assert "x.grad_fn = None" in out and "MulBackward0" in out
