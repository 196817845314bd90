"""The CPU-testable parts of the GPU check: benches/gpu_check.sh parses, finds its wheels where
`make gpu-wheel` puts them, installs one privately and stops with a clear message where no GPU
is seen; benches/bench_gpu.py prints its table on the CPU."""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import sys

from ..packaging import artifacts

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benches" / "gpu_check.sh"


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, **kw)


def test_gpu_check_script_parses():
    proc = _run(["bash", "-n", str(SCRIPT)])
    assert proc.returncode == 0, proc.stderr


def test_make_gpu_wheel_builds_the_release_wheel_into_the_folder_the_script_reads():
    proc = _run(["make", "-n", "gpu-wheel"])
    assert proc.returncode == 0, proc.stderr
    joined = proc.stdout.replace("\\\n", " ")  # make -n keeps the recipe's continuations
    lines = [ln for ln in joined.splitlines() if "maturin" in ln and " build" in ln]
    assert len(lines) == 1, proc.stdout
    args = shlex.split(lines[0])
    build = args[args.index("build"):]
    assert build[:len(artifacts.WHEEL_ARGS)] == artifacts.WHEEL_ARGS  # as `make wheel`
    assert build[-2:] == ["-o", "gpu/wheels"]
    assert "rm -rf gpu/wheels && mkdir -p gpu/wheels" in proc.stdout  # one wheel, the new one
    assert re.search(r'^WHEELS=\$\{WHEELS:-gpu/wheels\}$', SCRIPT.read_text(), re.M)
    # ignored, so a tool copying the working tree must be told to carry it
    ignored = _run(["git", "check-ignore", "-q", "gpu/wheels/rustgrad-0-cp39-abi3-x.whl"])
    assert ignored.returncode == 0


def test_gpu_check_without_a_wheel_says_what_to_run(tmp_path):
    env = dict(os.environ, WHEELS=str(tmp_path), PYTHON=sys.executable)
    proc = _run(["bash", str(SCRIPT)], env=env)
    assert proc.returncode == 2
    assert "run 'make gpu-wheel'" in proc.stdout


def test_gpu_check_installs_the_wheel_privately_and_stops_without_a_gpu(tmp_path, wheel):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / wheel.name).write_bytes(wheel.read_bytes())
    site = tmp_path / "site"
    env = dict(os.environ, WHEELS=str(tmp_path / "w"), SITE=str(site), PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    proc = _run(["bash", str(SCRIPT)], env=env)
    out = proc.stdout + proc.stderr
    assert "=== install: exit 0" in out, out
    assert (site / "rustgrad" / "__init__.py").is_file()
    assert f"from {site}" in out  # the installed copy, not the checkout's
    assert "rustgrad (CuPy) sees no GPU" in out and "=== gpu-seen: exit 1" in out
    assert proc.returncode == 1 and "=== cuda-tests" not in out


def test_bench_gpu_prints_its_table_on_the_cpu():
    proc = _run([sys.executable, "benches/bench_gpu.py", "--device", "cpu", "--quick",
                 "--rounds", "1", "--budget", "1"])
    assert proc.returncode == 0, proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if re.match(r"^(op chain|MLP|GPT)", ln)]
    assert [r.split("  ")[0] for r in rows] == [
        "op chain (1,)", "op chain (16,)", "op chain (64, 64)", "MLP 64-64-64-10 batch 32 step",
        "GPT 1x32 ctx 16 batch 2 step"]
    for r in rows:
        rg, torch_ms, ratio = r.split()[-3:]
        assert float(rg) > 0 and float(torch_ms) > 0
        assert abs(float(ratio) - float(rg) / float(torch_ms)) < 0.01 + 0.01 * float(ratio)
    assert "failed" not in proc.stderr


def test_launch_counts_per_step_are_printed_beside_torchs():
    proc = _run([sys.executable, str(ROOT / "benches" / "bench_launches.py"), "--quick"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split(",")[0].split()[0]: line for line in proc.stdout.splitlines()[1:]
            if line.strip() and not line.startswith("#")}
    assert set(rows) == {"MLP", "GPT"}, proc.stdout
    ours, theirs = map(int, re.search(r"\s(\d+)\s+(\d+)\s+[\d.]+x", rows["MLP"]).groups())
    # the fused Adam is one launch for all 6 parameters, where the array formulation took 16
    # per parameter; nll_loss's fast path (every target in range) is 8 launches, where its
    # masks took about 25
    assert "adam_step" not in rows["MLP"].replace("adam_step_multi", "")
    assert theirs == 40 and 20 <= ours < 40, rows["MLP"]
