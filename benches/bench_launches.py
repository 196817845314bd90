"""Kernel launches per training step on the GPU, counted without one: rustgrad's CUDA backend
runs over the strict CuPy double (tests/devices/strict_cupy.py), which counts every call that
would launch a kernel on a GPU (a call that writes device memory; views launch none; each CUDA C
kernel one). torch's counts are CUPTI's on an H200 (torch 2.11, the issue's table):

    python benches/bench_launches.py            # the issue's sizes
    python benches/bench_launches.py --quick    # small sizes (the counts barely depend on them)

Prints, per step: rustgrad's launches, torch's, the ratio, the captured step, and the five
busiest kernels. "captured" is the same step captured once as a CUDA graph (rustgrad.cuda.graph,
Adam/AdamW with capturable=True) and replayed: the launches of one replayed step (1: the graph
launch) and, in parentheses, the kernels the graph holds."""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import sys
from typing import Any, Callable, Dict, Iterator, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benches")]

# torch's kernels per step, measured with CUPTI on an H200 (issue 25's table)
TORCH = {"mlp": 40, "gpt": 235}


def count(step: Callable[[], Any]) -> Dict[str, int]:
    """Launches of one step (after a first one that makes the optimizer's state)."""
    from tests.devices import strict_cupy

    step()
    strict_cupy.KERNELS.clear()
    step()
    return dict(strict_cupy.KERNELS)


@contextlib.contextmanager
def capturable_adam() -> Iterator[None]:
    """Adam and AdamW made with capturable=True inside (a CUDA graph needs it, as torch's)."""
    import functools

    import rustgrad

    saved = rustgrad.optim.Adam, rustgrad.optim.AdamW
    rustgrad.optim.Adam = functools.partial(saved[0], capturable=True)  # type: ignore[misc]
    rustgrad.optim.AdamW = functools.partial(saved[1], capturable=True)  # type: ignore[misc]
    try:
        yield
    finally:
        rustgrad.optim.Adam, rustgrad.optim.AdamW = saved


def count_captured(step: Callable[[], Any]) -> Tuple[Dict[str, int], int]:
    """(launches of one replayed step, kernels in the graph): two warm-up steps on a side
    stream, one capture of the whole step, then one replay counted."""
    import rustgrad

    from tests.devices import strict_cupy

    side = rustgrad.cuda.Stream()
    with rustgrad.cuda.stream(side):
        step()
        step()
    g = rustgrad.cuda.CUDAGraph()
    strict_cupy.CAPTURED.clear()
    with rustgrad.cuda.graph(g):
        step()
    nodes = sum(strict_cupy.CAPTURED.values())
    g.replay()
    strict_cupy.KERNELS.clear()
    g.replay()
    return dict(strict_cupy.KERNELS), nodes


def host_us(run: Callable[[], Any], n: int = 15) -> float:
    """Median µs of `run` on the double: at the small sizes its NumPy work is small, so this
    is about the host's time per step (what a GPU would wait for)."""
    import statistics
    import time

    run()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    args = p.parse_args(argv)
    import pytest
    import rustgrad
    from bench_gpu import gpt, mlp_of

    from tests.devices import strict_cupy

    mp = pytest.MonkeyPatch()
    try:
        strict_cupy.install(mp)
        quick = {"mlp": ("MLP 64-32-32-10 batch 8, Adam",
                         lambda: mlp_of(rustgrad, "cuda", [64, 32, 32, 10], 8, "Adam")),
                 "gpt": ("GPT 4x32, 2 heads, ctx 16, batch 2, AdamW",
                         lambda: gpt(rustgrad, "cuda", {"vocab": 64, "block": 16, "n_embd": 32,
                                                         "n_head": 2, "n_layer": 4, "batch": 2}))}
        if args.quick:
            rows = quick
        else:
            rows = {"mlp": ("MLP 784-512-512-10 batch 128, Adam",
                            lambda: mlp_of(rustgrad, "cuda", [784, 512, 512, 10], 128, "Adam")),
                    "gpt": ("GPT 4x512, 8 heads, ctx 256, batch 16, vocab 2048, AdamW",
                            lambda: gpt(rustgrad, "cuda", {"vocab": 2048, "block": 256,
                                                            "n_embd": 512, "n_head": 8,
                                                            "n_layer": 4, "batch": 16}))}
        print(f"{'step':58} {'rustgrad':>9} {'torch':>6} {'ratio':>6} {'captured':>9}  busiest")
        for key, (name, build) in rows.items():
            counts = count(build())
            total = sum(counts.values())
            top = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
            with capturable_adam():
                step = build()
            replayed, nodes = count_captured(step)
            graphed = f"{sum(replayed.values())} ({nodes})"
            print(f"{name:58} {total:9d} {TORCH[key]:6d} {total / TORCH[key]:5.1f}x {graphed:>9}  "
                  f"{top}", flush=True)
        # a captured step's host cost is one graph launch; the double's replay re-runs NumPy
        # work, so only the eager step is timed
        print("\n# host µs per eager step on the double, small sizes (its NumPy work is small)")
        for name, build in quick.values():
            print(f"# {name:56} {host_us(build()):9.0f}", flush=True)
    finally:
        mp.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
