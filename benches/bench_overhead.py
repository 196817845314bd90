"""Per-op overhead: a chain of N `y = y * 1.0001 + 0.001`, forward and backward, rustgrad and
torch side by side in one run. Prints µs per recorded op and rustgrad/torch ratios.

    python benches/bench_overhead.py [--n 5000] [--repeat 7]
    python benches/bench_overhead.py --provenance   # forward with node provenance off and on
    python benches/bench_overhead.py --provenance-instructions   # the same, counted by callgrind

Timings on a shared VM swing by more than the 2% the provenance bar allows, so its cost is also
counted in instructions (valgrind's callgrind, where installed): the difference between a long
and a short chain, per op, in each mode, which cancels the interpreter's start-up.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

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


def provenance_child(on: bool, n: int) -> float:
    """Forward µs/op at (1,) in this process, node provenance on or off (best of 3 chains)."""
    import rustgrad
    from rustgrad.autograd import provenance

    provenance.set_provenance(on)
    chain(rustgrad, (1,), 50)  # warm up
    return min(chain(rustgrad, (1,), n)[0] for _ in range(3))


def provenance_runs(n: int, rounds: int) -> Dict[str, List[float]]:
    """{"off": [...], "on": [...]}: forward µs/op at (1,) with node provenance off and on, each
    measured in a fresh process (a graph's allocations in one mode change the other's timings in a
    shared one), the modes alternating `rounds` times."""
    import subprocess
    import sys

    times: Dict[str, List[float]] = {"off": [], "on": []}
    for r in range(rounds):
        for on in ((True, False) if r % 2 else (False, True)):
            out = subprocess.run([sys.executable, __file__, "--provenance-child",
                                  "on" if on else "off", "--n", str(n)],
                                 capture_output=True, text=True, check=True).stdout
            times["on" if on else "off"].append(float(out.split()[-1]))
    return times


def _provenance_ir_child(on: bool, n: int) -> None:
    """A chain of n iterations with node provenance on or off, after a warm-up (no timing)."""
    import rustgrad
    from rustgrad.autograd import provenance

    provenance.set_provenance(on)
    chain(rustgrad, (1,), 100)
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001 + 0.001


def provenance_instructions(n: int = 10000, rounds: int = 3) -> Optional[Dict[str, float]]:
    """{"off": ..., "on": ...}: instructions per forward op at (1,), counted by callgrind as the
    difference between chains of n and n/6 iterations, medians of `rounds` (addresses move
    from process to process, and with them hash probes: counts differ by about 1%); None
    without valgrind."""
    import os
    import re
    import shutil
    import subprocess
    import sys

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    # an idle BLAS thread's spinning is counted; string hashes and addresses (which set hash
    # probes' lengths) are fixed where setarch can turn address randomisation off
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    setarch = shutil.which("setarch")
    fixed = [setarch, os.uname().machine, "-R"] if setarch else []

    def count(mode: str, k: int) -> int:
        err = subprocess.run([*fixed, valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              sys.executable, __file__, "--provenance-ir-child", mode, "--n", str(k)],
                             capture_output=True, text=True, check=True, env=env).stderr
        found = re.search(r"refs:\s+([\d,]+)", err)
        assert found, err[-2000:]
        return int(found.group(1).replace(",", ""))

    import statistics

    short = n // 6
    per_op: Dict[str, List[float]] = {"off": [], "on": []}
    for _ in range(rounds):
        for mode in per_op:
            per_op[mode].append((count(mode, n) - count(mode, short)) / (2 * (n - short)))
    return {mode: statistics.median(v) for mode, v in per_op.items()}


def provenance_cost(n: int, rounds: int) -> Tuple[float, float]:
    """(forward µs/op at (1,) with node provenance off, with it on), medians of
    `provenance_runs` (issue 26's bar: on costs <= 2%)."""
    import statistics

    times = provenance_runs(n, rounds)
    a, b = statistics.median(times["off"]), statistics.median(times["on"])
    print(f"W1 forward at (1,), medians of {rounds} fresh processes each: provenance off {a:.3f} "
          f"µs/op, on {b:.3f} µs/op: {(b / a - 1) * 100:+.1f}% (bar <= 2%)")
    return a, b


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--provenance", action="store_true",
                   help="the forward's cost of recording each node's site")
    p.add_argument("--provenance-instructions", action="store_true",
                   help="the forward's cost of recording each node's site, in instructions")
    p.add_argument("--provenance-child", choices=("on", "off"), help=argparse.SUPPRESS)
    p.add_argument("--provenance-ir-child", choices=("on", "off"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.provenance_ir_child:
        _provenance_ir_child(a.provenance_ir_child == "on", a.n)
    elif a.provenance_instructions:
        ir = provenance_instructions(a.n)
        if ir is None:
            print("valgrind is not installed")
        else:
            print(f"instructions per forward op at (1,): provenance off {ir['off']:.0f}, on "
                  f"{ir['on']:.0f}: {(ir['on'] / ir['off'] - 1) * 100:+.1f}% (bar <= 2%)")
    elif a.provenance_child:
        print(provenance_child(a.provenance_child == "on", a.n))
    elif a.provenance:
        provenance_cost(a.n, a.repeat)
    else:
        run(a.n, a.repeat)
