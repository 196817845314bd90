"""Forward-mode AD (`autograd.forward_ad`), rustgrad against torch in one process: one dual op
(`sin` of a (16,) dual) and the tangent of an MLP's loss (Linear(64,128)-Tanh-Linear(128,10) with
cross_entropy, batch 32, the input dual).

    OPENBLAS_NUM_THREADS=1 python benches/bench_forward_ad.py [--threads 1]

Prints µs per call for rustgrad with the specs' forward formulas, rustgrad by the double-vjp
alone (`forward_ad.FORMULAS = False`, what every op cost before the formulas) and torch, best
of 3 rounds, and the ratios to torch."""

from __future__ import annotations

import argparse
import timeit
from typing import Any, Callable, Dict

import rustgrad
import rustgrad.autograd.forward_ad as rg_fwad
import torch


def _one_op(lib: Any) -> Callable[[], Any]:
    fw = lib.autograd.forward_ad
    x, t = lib.randn(16), lib.randn(16)

    def call() -> Any:
        with fw.dual_level():
            d = fw.make_dual(x, t)
            for _ in range(20):
                d.sin()
    return call


def _mlp(lib: Any) -> Callable[[], Any]:
    fw, nn = lib.autograd.forward_ad, lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    for p in model.parameters():
        p.requires_grad_(False)
    x, t, y = lib.randn(32, 64), lib.randn(32, 64), lib.randint(0, 10, (32,))

    def call() -> Any:
        with fw.dual_level():
            loss = nn.functional.cross_entropy(model(fw.make_dual(x, t)), y)
            return fw.unpack_dual(loss).tangent
    return call


def _us(call: Callable[[], Any], per: int) -> float:
    call()
    return min(timeit.repeat(call, number=20, repeat=3)) / 20 / per * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch's intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name, make, per in (("dual sin (16,)", _one_op, 20), ("MLP loss tangent", _mlp, 1)):
        times: Dict[str, float] = {}
        for formulas in (True, False):
            rg_fwad.FORMULAS = formulas
            times["formulas" if formulas else "double-vjp"] = _us(make(rustgrad), per)
        rg_fwad.FORMULAS = True
        times["torch"] = _us(make(torch), per)
        print(name)
        for k in ("formulas", "double-vjp"):
            print(f"  rustgrad {k:10s} {times[k]:8.1f} µs  {times[k] / times['torch']:6.2f}x torch")
        print(f"  torch               {times['torch']:8.1f} µs")


if __name__ == "__main__":
    main()
