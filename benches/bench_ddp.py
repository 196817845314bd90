"""DistributedDataParallel on this machine: the SGD step of an MLP 784-512-512-10 (float32,
cross-entropy) at 1 and 2 ranks, one BLAS thread per rank, and how much of the all-reduce time
backward hides.

    python benches/bench_ddp.py [--steps 40]

It starts the ranks itself (`mpiexec -n 1` and `mpiexec -n 2`, this file with --worker) and
prints one table. Definitions:

- strong scaling: the global batch stays 128 (64 per rank at 2 ranks);
  efficiency = t1 / (2 * t2), the speedup t1 / t2 over the ideal 2;
- weak scaling: each rank keeps 128 samples (global batch 256 at 2 ranks);
  efficiency = t1 / t2 (ideal: the step time does not grow); the same steps under no_sync
  (no communication) show what the compute alone gets from the cores;
- all-reduce hidden fraction (2 ranks, strong setting): the all-reduces alone (the same buckets,
  back to back) take C; backward with DDP takes B_sync, and B_copies with DDP's hooks and bucket
  copies but the all-reduce left out; what backward does not hide is B_sync - B_copies, so
  hidden = 1 - (B_sync - B_copies) / C, clipped to [0, 1]. Backward under no_sync (no hooks at
  work) is printed beside them.

Times are the best of the steps: on a shared machine the median mostly measures other processes
preempting one rank while its peer waits in a collective. No pass/fail: the numbers depend on the
machine (two cores here, shared by both ranks' compute and MPI's progress).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

SIZES = (784, 512, 512, 10)
GLOBAL_BATCH = 128


def _mlp(nn: Any) -> Any:
    return nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(), nn.Linear(SIZES[1], SIZES[2]),
                         nn.ReLU(), nn.Linear(SIZES[2], SIZES[3]))


def _timed_steps(step: Callable[[], Any], steps: int, sync: Callable[[], Any]) -> float:
    """The best seconds of `step` over `steps` runs, ranks aligned by `sync` before each."""
    for _ in range(5):
        sync()
        step()
    times = []
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times)


def worker(steps: int) -> Dict[str, float]:
    """Runs on every rank; rank 0 prints its measurements as one JSON line."""
    import numpy as np
    import rustgrad
    import rustgrad.distributed as dist
    import rustgrad.nn as nn
    import rustgrad.nn.functional as F
    from rustgrad.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    sync = dist.barrier
    g = np.random.default_rng(rank)
    out: Dict[str, float] = {"world": world}

    def data(batch: int) -> Any:
        return (rustgrad.tensor(g.standard_normal((batch, SIZES[0])).astype("float32")),
                rustgrad.tensor(g.integers(0, SIZES[-1], batch)))

    def train_step(model: Any, opt: Any, x: Any, y: Any) -> Callable[[], None]:
        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return step

    rustgrad.manual_seed(0)
    if world == 1:
        plain = _mlp(nn)
        x, y = data(GLOBAL_BATCH)
        out["plain"] = _timed_steps(train_step(plain, rustgrad.optim.SGD(plain.parameters(),
                                                                         lr=0.01), x, y),
                                    steps, sync)
    for name, batch in (("strong", GLOBAL_BATCH // world), ("weak", GLOBAL_BATCH)):
        ddp = DDP(_mlp(nn))
        opt = rustgrad.optim.SGD(ddp.parameters(), lr=0.01)
        x, y = data(batch)
        out[name] = _timed_steps(train_step(ddp, opt, x, y), steps, sync)
        if name == "weak":
            def local_step(step: Callable[[], None] = train_step(ddp, opt, x, y),
                           ddp: Any = ddp) -> None:
                with ddp.no_sync():
                    step()
            # the same compute with no communication: are the cores really free?
            out["weak_local"] = _timed_steps(local_step, steps, sync)

    if world > 1:
        # backward alone in the strong setting: with DDP, with DDP's bucket copies but no
        # communication, and under no_sync
        ddp = DDP(_mlp(nn))
        x, y = data(GLOBAL_BATCH // world)

        def backward() -> Callable[[], None]:
            loss = F.cross_entropy(ddp(x), y)
            sync()
            return loss.backward

        def backward_time(mode: str) -> float:
            times = []
            for k in range(steps + 5):
                ddp.zero_grad()
                if mode == "no_sync":
                    with ddp.no_sync():
                        run = backward()
                        t0 = time.perf_counter()
                        run()
                else:
                    run = backward()
                    t0 = time.perf_counter()
                    run()
                if k >= 5:
                    times.append(time.perf_counter() - t0)
            return min(times)

        backward_time("sync")  # the first iterations rebuild the buckets
        out["bwd_sync"] = backward_time("sync")
        out["bwd_local"] = backward_time("no_sync")
        reducer = ddp.reducer
        launch = reducer._launch
        # the same hooks and copies, the all-reduce left out
        reducer._launch = lambda bucket: bucket.flat.mul_(1.0 / world)  # type: ignore
        out["bwd_copies"] = backward_time("sync")
        reducer._launch = launch  # type: ignore
        flats = [b.flat for b in reducer.buckets]
        out["buckets"] = len(flats)
        out["bucket_mb"] = sum(f.numel() * f.element_size() for f in flats) / 2 ** 20

        def all_reduces() -> None:
            works: List[Any] = [dist.all_reduce(f, async_op=True) for f in flats]
            for w in works:
                w.wait()
        out["comm"] = _timed_steps(all_reduces, steps, sync)
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(out), flush=True)
    return out


def _launch(n: int, steps: int) -> Dict[str, float]:
    here = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(here) if here.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("mpiexec not found (pip install mpich mpi4py)")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([mpiexec, "-n", str(n), sys.executable, __file__, "--worker",
                           "--steps", str(steps)], capture_output=True, text=True, env=env,
                          timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"mpiexec -n {n} failed:\n{proc.stdout}\n{proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.steps)
        return
    load = os.getloadavg()[0]
    one, two = _launch(1, args.steps), _launch(2, args.steps)
    ms = 1e3
    print(f"DistributedDataParallel, MLP {'-'.join(map(str, SIZES))} SGD step (float32), "
          f"one BLAS thread per rank, best of {args.steps} steps")
    print(f"{os.cpu_count()} cores, 1-minute load average {load:.1f} before the run (other "
          "processes running take cores from the ranks)")
    rows: List[tuple] = [
        ("plain module (no DDP)", 1, GLOBAL_BATCH, one["plain"]),
        ("DDP", 1, GLOBAL_BATCH, one["strong"]),
        ("DDP strong (global batch 128)", 2, GLOBAL_BATCH // 2, two["strong"]),
        ("DDP weak (global batch 256)", 2, GLOBAL_BATCH, two["weak"]),
        ("  the same under no_sync", 2, GLOBAL_BATCH, two["weak_local"]),
    ]
    print(f"{'':32}{'ranks':>6}{'batch/rank':>12}{'step ms':>10}{'samples/s':>11}")
    for name, n, b, t in rows:
        print(f"{name:32}{n:>6}{b:>12}{t * ms:>10.2f}{n * b / t:>11.0f}")
    print(f"DDP overhead at 1 rank:      {one['strong'] / one['plain']:.2f}x the plain step")
    print(f"strong scaling: speedup {one['strong'] / two['strong']:.2f}x, "
          f"efficiency t1/(2*t2) = {one['strong'] / (2 * two['strong']):.2f}")
    print(f"weak scaling: efficiency t1/t2 = {one['weak'] / two['weak']:.2f} "
          f"({one['weak'] / two['weak_local']:.2f} without communication)")
    hidden = 1 - (two["bwd_sync"] - two["bwd_copies"]) / two["comm"]
    print(f"all-reduce, 2 ranks: {two['buckets']} buckets, {two['bucket_mb']:.2f} MiB, "
          f"{two['comm'] * ms:.2f} ms alone")
    print(f"backward at 2 ranks: {two['bwd_sync'] * ms:.2f} ms with DDP, "
          f"{two['bwd_copies'] * ms:.2f} ms with its bucket copies but no all-reduce, "
          f"{two['bwd_local'] * ms:.2f} ms under no_sync")
    print(f"all-reduce time hidden behind backward: {min(max(hidden, 0.0), 1.0):.2f}")

if __name__ == "__main__":
    main()
