"""Per-op overhead: a chain of N `y = y * 1.0001 + 0.001`, forward and backward, rustgrad and
torch side by side in one run. Prints µs per recorded op and rustgrad/torch ratios.

    python benches/bench_overhead.py [--n 5000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any, Callable, Dict, List, Tuple

from libraries import libraries  # benches/ is on sys.path when a bench runs

SHAPES = [(1,), (16,), (256, 256)]


def chain(lib: Any, shape: Tuple[int, ...], n: int) -> Tuple[float, float]:
    """µs per recorded op of n `y = y * 1.0001 + 0.001` (2n ops): (forward, backward)."""
    x = lib.ones(*shape, requires_grad=True)
    gc.collect()
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.0001 + 0.001
    t1 = time.perf_counter()
    y.sum().backward()
    t2 = time.perf_counter()
    ops = 2 * n
    return (t1 - t0) / ops * 1e6, (t2 - t1) / ops * 1e6


def _best(fn: Callable[[], Tuple[float, float]], repeat: int) -> Tuple[float, float]:
    runs = [fn() for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


_chain = chain  # the name benches/bench_explain.py imports


def chain_ops(shape: Tuple[int, ...], n: int) -> int:
    """The chain's length for a shape: n, or a tenth of it (at least 50) for (256, 256)."""
    return n if shape != (256, 256) else max(n // 10, 50)


def measure(n: int, rounds: int, libs: Dict[str, Any], shapes: Any = SHAPES
            ) -> Dict[Tuple[int, ...], Dict[str, List[Tuple[float, float]]]]:
    """{shape: {library: [(fwd µs/op, bwd µs/op) per round]}}, the libraries alternating within
    every round (the first of them changes from round to round)."""
    names = list(libs)
    out: Dict[Tuple[int, ...], Dict[str, List[Tuple[float, float]]]] = {}
    for shape in shapes:
        for lib in libs.values():
            chain(lib, shape, 50)  # warm up
        out[shape] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                out[shape][name].append(chain(libs[name], shape, chain_ops(shape, n)))
    return out


def run(n: int, repeat: int) -> Dict[str, Any]:
    libs = libraries()
    results: Dict[str, Any] = {}
    for shape in SHAPES:
        for name, lib in libs.items():
            k = chain_ops(shape, n)
            chain(lib, shape, 50)  # warm up
            results[(name, shape)] = _best(lambda lib=lib, shape=shape, k=k: chain(lib, shape, k), repeat)
    print(f"chain of y = y * 1.0001 + 0.001, n={n}, best of {repeat}; µs per recorded op")
    print(f"{'shape':>12} {'rustgrad fwd':>13} {'torch fwd':>10} {'ratio':>7}"
          f" {'rustgrad bwd':>13} {'torch bwd':>10} {'ratio':>7}")
    for shape in SHAPES:
        rf, rb = results[("rustgrad", shape)]
        if "torch" in libs:
            tf, tb = results[("torch", shape)]
            print(f"{str(shape):>12} {rf:13.2f} {tf:10.2f} {rf / tf:7.2f} {rb:13.2f} {tb:10.2f}"
                  f" {rb / tb:7.2f}")
        else:
            print(f"{str(shape):>12} {rf:13.2f} {'-':>10} {'-':>7} {rb:13.2f}")
    return results


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--repeat", type=int, default=7)
    a = p.parse_args()
    run(a.n, a.repeat)
