"""SyncBatchNorm checks on every rank of `mpiexec -n N python sync_batchnorm_worker.py DEVICE`,
run by tests/nn/test_sync_batchnorm.py. DEVICE is "cuda-sim" (the strict CuPy double's GPUs,
on any machine) or "cuda" (a real GPU). The backend is gloo (rustgrad's MPI backend, which
stages GPU tensors through host memory).

The oracle of each check is torch's BatchNorm on the CPU over the global batch (the ranks'
batches concatenated): each rank's output and input gradient must be its slice of torch's,
the weight and bias gradients summed over the ranks must be torch's, and the running
statistics torch's. Each check prints `PASS <name>` or `FAIL <name>: <why>` on rank 0."""

from __future__ import annotations

import pathlib
import sys
import traceback
from typing import Any, Callable, List, Tuple

import numpy as np

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cuda-sim"
if DEVICE == "cuda-sim":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import pytest

    from tests.devices import strict_cupy

    strict_cupy.install(pytest.MonkeyPatch())  # never undone: the worker ends with it
    DEVICE = "cuda"

import rustgrad  # noqa: E402  (after the double is installed)
import rustgrad.distributed as dist  # noqa: E402
import torch  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_WORLD
CHECKS: List[Tuple[str, Callable[[], None]]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append((fn.__name__, fn))
    return fn


def close(a: Any, b: Any, what: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-9, atol=1e-11):
        diff = np.abs(a - b).max() if a.shape == b.shape else f"shapes {a.shape} {b.shape}"
        raise AssertionError(f"{what}: rank {dist.get_rank()} differs by {diff}")


def np_of(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def share(grad: Any, channels: int) -> np.ndarray:
    return np.zeros(channels) if grad is None else np_of(grad)


def compare(sizes: List[int], tail: Tuple[int, ...], steps: int = 2, momentum: Any = 0.1,
            affine: bool = True) -> None:
    """Every rank r holds sizes[r] samples of one global batch of shape (sum, C, *tail)."""
    rank = dist.get_rank()
    channels = 3
    rng = np.random.default_rng(7)
    w = rng.normal(size=channels)
    b = rng.normal(size=channels)
    tbn = torch.nn.BatchNorm1d(channels, momentum=momentum, affine=affine).double() \
        if len(tail) <= 1 else torch.nn.BatchNorm2d(channels, momentum=momentum,
                                                    affine=affine).double()
    sbn = rustgrad.nn.SyncBatchNorm(channels, momentum=momentum, affine=affine).to(DEVICE) \
        .double()
    if affine:
        with torch.no_grad():
            tbn.weight.copy_(torch.tensor(w))
            tbn.bias.copy_(torch.tensor(b))
        with rustgrad.no_grad():
            sbn.weight.copy_(rustgrad.tensor(w))
            sbn.bias.copy_(rustgrad.tensor(b))
    start = sum(sizes[:rank])
    for step in range(steps):
        x = rng.normal(size=(sum(sizes), channels, *tail)) * (step + 1) + step
        g = rng.normal(size=x.shape)
        tx = torch.tensor(x, requires_grad=True)
        tout = tbn(tx)
        tout.backward(torch.tensor(g))
        mine = slice(start, start + sizes[rank])
        rx = rustgrad.tensor(x[mine], device=DEVICE, requires_grad=True)
        rout = sbn(rx)
        if sizes[rank]:
            assert rout.grad_fn.name() == "SyncBatchNormBackward", rout.grad_fn.name()
        rout.backward(rustgrad.tensor(g[mine], device=DEVICE))
        # every rank's share of the weight and bias gradients, summed before any assertion (a
        # rank that failed one would leave the others in this collective)
        # (a rank with no samples has no share: torch's Function gives it no gradient)
        totals = {name: COMM.allreduce(share(getattr(sbn, name).grad, channels), op=MPI.SUM)
                  for name in (("weight", "bias") if affine else ())}
        close(np_of(rout), np_of(tout)[mine], f"output, step {step}")
        if sizes[rank]:
            close(np_of(rx.grad), np_of(tx.grad)[mine], f"input gradient, step {step}")
        else:  # torch's Function gives an empty input no gradient
            assert rx.grad is None
        for name, total in totals.items():
            close(total, np_of(getattr(tbn, name).grad), f"{name} gradient, step {step}")
            getattr(sbn, name).grad = None
            getattr(tbn, name).grad = None
        close(np_of(sbn.running_mean), np_of(tbn.running_mean), f"running_mean, step {step}")
        close(np_of(sbn.running_var), np_of(tbn.running_var), f"running_var, step {step}")
        assert int(sbn.num_batches_tracked) == int(tbn.num_batches_tracked) == step + 1
    # evaluation: the running statistics, no collective
    sbn.eval()
    tbn.eval()
    x = rng.normal(size=(sum(sizes), channels, *tail))
    close(np_of(sbn(rustgrad.tensor(x[start:start + sizes[rank]], device=DEVICE))),
          np_of(tbn(torch.tensor(x)))[start:start + sizes[rank]], "evaluation output")


@check
def equal_batches_2d_input() -> None:
    compare([4] * dist.get_world_size(), ())


@check
def uneven_batches_4d_input() -> None:
    compare([3 + 2 * r for r in range(dist.get_world_size())], (2, 3))


@check
def cumulative_average_without_affine() -> None:
    compare([2 + r for r in range(dist.get_world_size())], (5,), steps=3, momentum=None,
            affine=False)


@check
def a_rank_with_an_empty_batch() -> None:
    # the last rank has no samples: it takes part in the collectives and counts for nothing
    compare([4] * (dist.get_world_size() - 1) + [0], (3,))


@check
def one_sample_per_rank_is_enough_across_ranks() -> None:
    compare([1] * dist.get_world_size(), ())


@check
def cpu_input_refused_as_torch() -> None:
    try:
        rustgrad.nn.SyncBatchNorm(3)(rustgrad.ones(4, 3))
    except ValueError as e:
        assert "SyncBatchNorm expected input tensor to be on GPU" in str(e), str(e)
    else:
        raise AssertionError("a CPU input was accepted")


@check
def converted_model_trains_as_the_global_batch() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(11)
    x = rng.normal(size=(4 * world, 2, 3, 3))
    torch.manual_seed(0)  # the same model on every rank
    seq = [torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU()]
    tnet = torch.nn.Sequential(*seq).double()
    rnet = rustgrad.nn.Sequential(rustgrad.nn.Conv2d(2, 4, 3, padding=1),
                                  rustgrad.nn.BatchNorm2d(4), rustgrad.nn.ReLU())
    rnet.load_state_dict({k: rustgrad.tensor(v.numpy()) for k, v in tnet.state_dict().items()})
    rnet = rustgrad.nn.SyncBatchNorm.convert_sync_batchnorm(rnet).to(DEVICE).double()
    assert type(rnet[1]).__name__ == "SyncBatchNorm"
    tnet(torch.tensor(x)).pow(2).sum().backward()
    mine = slice(4 * rank, 4 * rank + 4)
    rnet(rustgrad.tensor(x[mine], device=DEVICE)).pow(2).sum().backward()
    totals = [COMM.allreduce(np_of(p.grad), op=MPI.SUM) for p in rnet.parameters()]
    for (name, tp), total in zip(tnet.named_parameters(), totals):
        close(total, np_of(tp.grad), name)


def main() -> int:
    dist.init_process_group("gloo")
    if DEVICE.startswith("cuda"):
        rustgrad.cuda.set_device(dist.get_rank() % rustgrad.cuda.device_count())
    failed = 0
    for name, fn in CHECKS:
        try:
            fn()
            err = ""
        except Exception:  # reported, then the next check runs
            err = traceback.format_exc().strip().splitlines()[-1]
            traceback.print_exc()
        errors = COMM.allgather(err)
        bad = [f"rank {r}: {e}" for r, e in enumerate(errors) if e]
        if COMM.Get_rank() == 0:
            print(f"FAIL {name}: {' | '.join(bad)}" if bad else f"PASS {name}", flush=True)
        failed += bool(bad)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
