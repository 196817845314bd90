"""What the explainability tools cost (issue 13), as ratios to the plain run, torch beside:

- node provenance (`set_provenance(True)`: a frame walk per recorded op) on the per-op chain W1
  `y = y * 1.0001 + 0.001`, forward and backward;
- the always-on in-place provenance (each version bump logs its op and line) on an in-place
  chain `y.mul_(1.0001).add_(0.001)` under no_grad, against torch's same chain;
- the cheap anomaly mode (`detect_anomaly(cheap=True)`) and the full one on a backward: the W1
  chain and an MLP 784-512-512-10 (batch 128), against torch's plain and anomaly backward.

Rounds alternate the modes, and each figure is the median of the rounds.

    python benches/bench_explain.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import warnings
from typing import Any, Callable, Dict, List, Tuple

import bench_overhead  # the W1 chain, measured the same way (benches/ is on sys.path when run)
from libraries import libraries  # benches/ is on sys.path when a bench runs

N_CHAIN = 2000


def _chain(lib: Any, n: int = N_CHAIN) -> Tuple[float, float]:
    """W1 on (16,): µs per recorded op, forward and backward (bench_overhead's chain)."""
    return bench_overhead._chain(lib, (16,), n)


def _inplace(lib: Any, n: int = N_CHAIN) -> float:
    y = lib.ones(16)
    t0 = time.perf_counter()
    with lib.no_grad():
        for _ in range(n):
            y.mul_(1.0001).add_(0.001)
    return (time.perf_counter() - t0) / (2 * n) * 1e6


def _mlp(lib: Any) -> Callable[[Any], float]:
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(784, 512), lib.nn.ReLU(), lib.nn.Linear(512, 512),
                              lib.nn.ReLU(), lib.nn.Linear(512, 10))
    x = lib.randn(128, 784)
    target = lib.randint(0, 10, (128,))

    def step(mode: Any) -> float:
        loss = lib.nn.functional.cross_entropy(model(x), target)
        t0 = time.perf_counter()
        with mode:
            loss.backward()
        return (time.perf_counter() - t0) * 1e3

    return step


def _modes(lib: Any, rustgrad: bool) -> Dict[str, Callable[[], Any]]:
    modes: Dict[str, Callable[[], Any]] = {"plain": contextlib.nullcontext,
                                          "anomaly": lib.autograd.detect_anomaly}
    if rustgrad:
        modes["cheap anomaly"] = lambda: lib.autograd.detect_anomaly(cheap=True)
    return modes


def run(rounds: int) -> List[str]:
    libs = libraries()
    rustgrad = libs["rustgrad"]
    warnings.simplefilter("ignore")
    lines = []

    # 1. node provenance on W1
    prov: Dict[bool, List[Tuple[float, float]]] = {False: [], True: []}
    _chain(rustgrad, 100)
    for _ in range(rounds):
        for on in (False, True):
            with rustgrad.autograd.set_provenance(on):
                prov[on].append(_chain(rustgrad))
    f0, b0 = (statistics.median(r[i] for r in prov[False]) for i in (0, 1))
    f1, b1 = (statistics.median(r[i] for r in prov[True]) for i in (0, 1))
    lines.append(f"W1 (16,) node provenance: forward {f0:.2f} -> {f1:.2f} µs/op ({f1 / f0:.2f}x), "
                 f"backward {b0:.2f} -> {b1:.2f} µs/op ({b1 / b0:.2f}x)")

    # 2. in-place provenance (always on) against torch
    ip: Dict[str, List[float]] = {name: [] for name in libs}
    for _ in range(rounds):
        for name, lib in libs.items():
            ip[name].append(_inplace(lib))
    r_ip = statistics.median(ip["rustgrad"])
    line = f"in-place chain under no_grad (logged bumps): rustgrad {r_ip:.2f} µs/op"
    if "torch" in libs:
        t_ip = statistics.median(ip["torch"])
        line += f", torch {t_ip:.2f} µs/op ({r_ip / t_ip:.2f}x torch)"
    lines.append(line)

    # 3. anomaly modes on backward
    for name, lib in libs.items():
        modes = _modes(lib, name == "rustgrad")
        step = _mlp(lib)
        chain_b: Dict[str, List[float]] = {m: [] for m in modes}
        mlp_b: Dict[str, List[float]] = {m: [] for m in modes}
        for _ in range(rounds):
            for m, make in modes.items():
                with make():
                    chain_b[m].append(_chain(lib)[1])
                mlp_b[m].append(step(contextlib.nullcontext()) if m == "plain" else step(make()))
        for label, table, unit in (("W1 backward", chain_b, "µs/op"), ("MLP backward", mlp_b, "ms")):
            base = statistics.median(table["plain"])
            parts = [f"plain {base:.2f} {unit}"]
            for m in modes:
                if m != "plain":
                    v = statistics.median(table[m])
                    parts.append(f"{m} {v:.2f} ({v / base:.2f}x)")
            lines.append(f"{name:>8} {label}: " + ", ".join(parts))
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    for line in run(args.rounds):
        print(line)


if __name__ == "__main__":
    main()
