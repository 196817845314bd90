"""Elementwise kernels on 16,384 float32 values (issue 11's bar: each at most 1.5x torch's
time): erf, exact GELU, tanh, pow with an integer exponent and softmax, forward alone and
forward + backward, rustgrad and torch side by side in one run (median of rounds, µs).

    python benches/bench_kernels.py [--rounds 9] [--n 16384]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, Dict, List

from libraries import libraries  # benches/ is on sys.path when a bench runs

KERNELS: Dict[str, Callable[[Any, Any], Any]] = {
    "erf": lambda lib, x: x.erf(),
    "gelu": lambda lib, x: lib.nn.functional.gelu(x),
    "tanh": lambda lib, x: x.tanh(),
    "pow(x, 3)": lambda lib, x: x.pow(3),
    "softmax": lambda lib, x: x.softmax(-1),
}


def _time(fn: Callable[[], Any], reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e6


def measure(rounds: int, n: int, libs: Dict[str, Any]) -> Dict[str, Dict[str, List[float]]]:
    """{"erf fwd": {"rustgrad": [µs, ...], "torch": [...]}, "erf fwd+bwd": ...}: each kernel on
    n float32 values, the libraries alternating within every round."""
    import numpy as np

    data = np.random.default_rng(0).standard_normal((max(n // 128, 1), min(n, 128)))
    data = data.astype(np.float32)
    calls: Dict[str, Dict[str, Callable[[], Any]]] = {}
    for name, kernel in KERNELS.items():
        for lib_name, lib in libs.items():
            x = lib.tensor(data)
            xg = lib.tensor(data, requires_grad=True)

            def fwd(lib: Any = lib, x: Any = x, kernel: Any = kernel) -> None:
                kernel(lib, x)

            def fwd_bwd(lib: Any = lib, xg: Any = xg, kernel: Any = kernel) -> None:
                kernel(lib, xg).sum().backward()
                xg.grad = None

            fwd_bwd()  # warm up
            calls.setdefault(f"{name} fwd", {})[lib_name] = fwd
            calls.setdefault(f"{name} fwd+bwd", {})[lib_name] = fwd_bwd
    results: Dict[str, Dict[str, List[float]]] = {
        label: {lib_name: [] for lib_name in by_lib} for label, by_lib in calls.items()}
    names = list(libs)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for label, by_lib in calls.items():
            reps = 20 if label.endswith("fwd") else 10
            for lib_name in order:
                results[label][lib_name].append(_time(by_lib[lib_name], reps))
    return results


def run(rounds: int, n: int) -> List[str]:
    """The kernels' medians as printable lines, with the rustgrad/torch ratio."""
    results = measure(rounds, n, libraries())
    lines = [f"{n} float32 values, median of {rounds} rounds, µs per call"]
    for label, by_lib in results.items():
        r = statistics.median(by_lib["rustgrad"])
        line = f"{label:>20}: rustgrad {r:9.1f}"
        if "torch" in by_lib:
            t = statistics.median(by_lib["torch"])
            line += f"  torch {t:9.1f}  ratio {r / t:6.2f}  ({'met' if r / t <= 1.5 else 'not met'})"
        lines.append(line)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--n", type=int, default=16384)
    args = p.parse_args()
    for line in run(args.rounds, args.n):
        print(line)


if __name__ == "__main__":
    main()
