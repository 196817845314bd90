"""`make demo` keeps working: a short run prints every section of the tour with real values."""

import pathlib
import shutil
import subprocess
import sys

DEMO = pathlib.Path(__file__).resolve().parents[1] / "examples" / "demo.py"


def test_demo_short_run_prints_every_section(tmp_path):
    svg = tmp_path / "graph.svg"
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--epochs", "2", "--no-torch", "--graph-svg", str(svg)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    for i in range(13):
        assert f"=== {i}." in out, f"section {i} missing"
    assert "MLP    rustgrad" in out and "CNN    rustgrad" in out
    assert "unchanged, bit for bit, after an SGD step: True" in out
    assert "x.grad_fn = None" in out and "MulBackward0" in out
    # the graph picture: SVG where Graphviz is installed, else DOT text beside the asked path
    assert "└─ NllLossBackward0" in out and "leaf 0.weight (16, 1, 3, 3)" in out
    if shutil.which("dot"):
        assert svg.read_text().rstrip().endswith("</svg>")
    else:
        assert svg.with_suffix(".dot").read_text().startswith("digraph {")
