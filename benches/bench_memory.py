"""A long chain of recorded ops (`y = y * 1.0001 + 0.001` on a (1,) tensor, two nodes per
iteration), each library in its own fresh process: seconds per node to record it, bytes per
node the live graph adds to the process's resident memory (RSS from /proc/self/statm, so the
Rust and C++ allocations count as well as Python's), and whether its backward completes (no
RecursionError, no stack overflow). Backward time is measured separately, not in the per-node
recording time.

    python benches/bench_memory.py [--nodes 1000000] [--rounds 3]
    python benches/bench_memory.py --child rustgrad 1000000   # one measurement, as JSON
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from typing import Any, Dict, List, Sequence

from children import emit, run_child

LIBRARIES = ("rustgrad", "torch")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(lib_name: str, nodes: int, backward: bool = True) -> None:
    """Builds the chain in this process and prints its figures (a first line before the
    backward, so that a backward that crashes the process still leaves the recording figures);
    backward=False stops after the recording."""
    lib = __import__(lib_name)
    x = lib.ones(1, requires_grad=True)
    y = x
    for _ in range(100):  # warm up the op paths before the baseline is read
        y = y * 1.0001 + 0.001
    y.sum().backward()
    del y
    x.grad = None
    gc.collect()
    rss0 = _rss()
    t0 = time.perf_counter()
    y = x
    for _ in range(nodes // 2):
        y = y * 1.0001 + 0.001
    t1 = time.perf_counter()
    rss1 = _rss()
    out: Dict[str, Any] = {"library": lib_name, "nodes": nodes, "record_s_per_node": (t1 - t0) / nodes,
                           "bytes_per_node": (rss1 - rss0) / nodes, "backward_ok": False}
    emit(out)
    if not backward:
        return
    t2 = time.perf_counter()
    y.sum().backward()
    out["backward_s_per_node"] = (time.perf_counter() - t2) / nodes
    out["backward_ok"] = bool(x.grad is not None)
    emit(out)


def measure(sizes: Sequence[int], rounds: int, libs: Sequence[str] = LIBRARIES
            ) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """{str(nodes): {library: [child result per round]}}, one fresh process per measurement, the
    libraries alternating within every round. A child that failed contributes {} (so the
    no-recursion check fails). Only rustgrad's backward runs in every round; torch's (for
    information, and slow at 10^6 nodes) in the first round alone."""
    out: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    for nodes in sizes:
        out[str(nodes)] = {name: [] for name in libs}
        for r in range(rounds):
            for name in list(libs[r % len(libs):]) + list(libs[:r % len(libs)]):
                skip = ["--no-backward"] if name != "rustgrad" and r else []
                res = run_child(["bench_memory.py", "--child", name, str(nodes), *skip])
                out[str(nodes)][name].append(res or {})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--child", nargs=2, metavar=("LIBRARY", "NODES"))
    p.add_argument("--no-backward", action="store_true", help="(with --child) record only")
    a = p.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), not a.no_backward)
        return
    res = measure([a.nodes], a.rounds)[str(a.nodes)]
    print(f"chain of {a.nodes} nodes, median of {a.rounds} fresh processes")
    for name, runs in res.items():
        done = [r for r in runs if r]
        ok = [r for r in runs if r.get("backward_ok")]
        if not done:
            print(f"{name:>9}: failed")
            continue
        rec = statistics.median(r["record_s_per_node"] for r in done) * 1e6
        mem = statistics.median(r["bytes_per_node"] for r in done)
        bwd = statistics.median(r["backward_s_per_node"] for r in ok) * 1e6 if ok else float("nan")
        print(f"{name:>9}: record {rec:.3f} µs/node, backward {bwd:.3f} µs/node, {mem:.0f} bytes/node,"
              f" backward completed in {len(ok)} of the rounds that ran it")


if __name__ == "__main__":
    main()
