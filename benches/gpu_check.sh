#!/usr/bin/env bash
# The GPU check, one command on a machine with one NVIDIA GPU, Python 3.12 with torch, CuPy,
# NumPy, pytest and hypothesis installed and no package registry:
#
#   here (any Linux x86-64 machine):  make gpu-wheel          # rustgrad's abi3 wheel -> gpu/wheels/
#   there, in the repository root:    bash benches/gpu_check.sh
#
# (gpu/wheels/ is git-ignored: a tool that copies the working tree must be told to carry it.)
# It installs rustgrad from gpu/wheels/ into a private folder (nothing else on the machine
# changes), checks that rustgrad sees the GPU, runs the `cuda` tests (pytest -m cuda), then
# benches/bench_gpu.py (rustgrad against torch on the same GPU). Each stage has a time limit;
# the whole run stays under 8 minutes. Exit status: 0 when every stage passed.
set -u
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
WHEELS=${WHEELS:-gpu/wheels}
SITE=${SITE:-/tmp/rustgrad-gpu-site}
WORKERS=${WORKERS:-8}          # pytest-xdist workers sharing the GPU (0: no xdist); CuPy compiles
                               # each new kernel once (cached on disk), so workers help
export PYTHONUNBUFFERED=1
failed=0

stage() {  # stage NAME SECONDS COMMAND...: runs COMMAND under a time limit, reports, records failure
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    echo "=== $name (at most ${limit}s)"
    timeout -k 10 "$limit" "$@"
    rc=$?
    [ "$rc" -eq 124 ] && echo "=== $name: TIMED OUT after ${limit}s"
    echo "=== $name: exit $rc, $((SECONDS - t0))s"
    [ "$rc" -eq 0 ] || failed=1
    return "$rc"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    || echo "nvidia-smi: not found"
shopt -s nullglob
wheels=("$WHEELS"/*.whl)
if [ ${#wheels[@]} -eq 0 ]; then
    echo "no wheel in $WHEELS/: run 'make gpu-wheel' on the build machine and bring $WHEELS/ along"
    exit 2
fi
rm -rf "$SITE"
stage install 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$SITE" "${wheels[@]}" || exit 1
if [ -n "${OVERLAY_PYTHON:-}" ]; then  # a quick re-check: this tree's Python over the wheel's
    "$PY" -c "import shutil, sys; shutil.copytree('python/rustgrad', sys.argv[1] + '/rustgrad', \
dirs_exist_ok=True, ignore=shutil.ignore_patterns('*.so', '__pycache__'))" "$SITE" || exit 1
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$SITE/bin:$PATH"   # mpiexec from the MPICH wheel (the NCCL test's launcher)
if [ -e "$SITE/lib/libmpi.so.12" ]; then
    # mpi4py's wheel loads the MPI it finds first: MPICH's, not an Open MPI the image may have
    export MPI4PY_MPIABI=mpich MPI4PY_LIBMPI="$SITE/lib/libmpi.so.12"
    export LD_LIBRARY_PATH="$SITE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
LOGS=${LOGS:-target/gpu_check}
mkdir -p "$LOGS"

stage gpu-seen 60 "$PY" - <<'PY' || exit 1
import rustgrad, torch
assert rustgrad.__file__.startswith(__import__("os").environ["PYTHONPATH"].split(":")[0]), rustgrad.__file__
print("rustgrad", rustgrad.__version__, "from", rustgrad.__file__)
print("torch", torch.__version__, "cuda", torch.version.cuda)
assert rustgrad.cuda.is_available(), "rustgrad (CuPy) sees no GPU"
print("GPU:", rustgrad.cuda.get_device_name(), "| devices:", rustgrad.cuda.device_count())
x = rustgrad.ones(3, device="cuda", requires_grad=True)
(x * 2).sum().backward()
assert x.grad.device.type == "cuda" and x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
PY

xdist=()
if [ "$WORKERS" -gt 0 ] && "$PY" -c "import xdist" 2>/dev/null; then
    xdist=(-n "$WORKERS")
fi
stage cuda-tests 270 "$PY" -m pytest -m cuda -q -p no:cacheprovider --maxfail=60 -rfE \
    -o addopts="" "${xdist[@]}" tests > >(tee "$LOGS/cuda-tests.log") 2>&1

stage bench 150 "$PY" benches/bench_gpu.py --device cuda --rounds 3 --budget 8 \
    > >(tee "$LOGS/bench.log") 2>&1

# one line and a JSON of the figures: counts from pytest's last line, ratios from the bench table
"$PY" - "$LOGS" "$failed" "$SECONDS" <<'PY'
import json, pathlib, re, sys
logs, failed, seconds = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tests = (logs / "cuda-tests.log").read_text() if (logs / "cuda-tests.log").exists() else ""
last = [ln for ln in tests.splitlines() if re.search(r"\d+ (passed|failed)", ln)][-1:] or [""]
counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)",
                                            last[0])}
bench = (logs / "bench.log").read_text() if (logs / "bench.log").exists() else ""
ratios = {m.group(1).strip(): float(m.group(2))
          for m in re.finditer(r"^(\S.{0,43}?)\s+[\d.nan]+\s+[\d.nan]+\s+([\d.]+)x?\s*$", bench, re.M)}
summary = {"passed": failed == 0, "seconds": seconds, "tests": counts, "bench_ratios": ratios}
(logs / "summary.json").write_text(json.dumps(summary, indent=1))
print("=== gpu_check summary:", "PASSED" if failed == 0 else "FAILED", f"in {seconds}s |",
      ", ".join(f"{n} {k}" for k, n in counts.items()) or "no test counts", "|",
      ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()) or "no bench ratios")
PY
exit $failed
