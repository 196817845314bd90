"""Per-sample gradients with vmap, rustgrad against torch in one process:
`vmap(grad(loss), in_dims=(None, 0, 0))` over Linear(16,32)-Tanh-Linear(32,4) with cross_entropy.

    OPENBLAS_NUM_THREADS=1 python benches/bench_vmap.py [--batch 64] [--threads 1]

Prints ms per call for rustgrad's batched path, its per-sample loop (`_vmap.BATCHED = False`) and
torch, best of 3 rounds of 10 calls, and the ratios to torch."""

from __future__ import annotations

import argparse
import timeit
from typing import Any, Callable

import rustgrad
import torch
from rustgrad.func import _vmap


def _per_sample_grads(lib: Any, batch: int) -> Callable[[], Any]:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = lib.randn(batch, 16), lib.randint(0, 4, (batch,))

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))

    f = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: f(params, x, y)


def _ms(call: Callable[[], Any]) -> float:
    call()
    return min(timeit.repeat(call, number=10, repeat=3)) / 10 * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch's intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ours = _per_sample_grads(rustgrad, args.batch)
    times = {}
    for batched in (True, False):
        _vmap.BATCHED = batched
        times["batched" if batched else "loop"] = _ms(ours)
    _vmap.BATCHED = True
    times["torch"] = _ms(_per_sample_grads(torch, args.batch))
    for name in ("batched", "loop"):
        print(f"rustgrad {name:8s} {times[name]:7.2f} ms  {times[name] / times['torch']:5.2f}x torch")
    print(f"torch            {times['torch']:7.2f} ms")


if __name__ == "__main__":
    main()
