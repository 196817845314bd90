"""DDP checks, run on every rank by tests/distributed/test_ddp.py under `mpiexec -n N`.

Each check prints `PASS <name>` or `FAIL <name>: <why>` on rank 0 (the checks themselves run on
every rank; a failure on any rank fails the check). The oracles: the gradients of one process on
the whole batch (computed by every rank locally), and torch's own DistributedDataParallel over a
gloo group of the same ranks (rendezvous through the file given as argv[1]).
"""

from __future__ import annotations

import sys
import traceback
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import rustgrad
import rustgrad.distributed as dist
import rustgrad.nn as nn
import rustgrad.nn.functional as F
import torch
import torch.distributed as tdist
from mpi4py import MPI
from rustgrad.nn.parallel import DistributedDataParallel as DDP
from rustgrad.utils.data import DataLoader, TensorDataset
from rustgrad.utils.data.distributed import DistributedSampler

COMM = MPI.COMM_WORLD
CHECKS: List[Tuple[str, Callable[[], None]]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append((fn.__name__, fn))
    return fn


def rank() -> int:
    return dist.get_rank()


def world() -> int:
    return dist.get_world_size()


def close(a: Any, b: Any, what: str, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol):
        diff = np.abs(a - b).max() if a.shape == b.shape else f"shapes {a.shape} {b.shape}"
        raise AssertionError(f"{what}: rank {rank()} differs by {diff}")


def same_on_all_ranks(a: np.ndarray, what: str) -> None:
    everyone = COMM.allgather(np.asarray(a))
    for r, other in enumerate(everyone):
        if not np.array_equal(other, everyone[0]):
            raise AssertionError(f"{what}: rank {r} differs from rank 0")


class MLP(nn.Module):
    def __init__(self, sizes: Tuple[int, ...] = (6, 8, 8, 3)) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])

    def forward(self, x: Any) -> Any:
        for k, layer in enumerate(self.layers):
            x = layer(x)
            if k < len(self.layers) - 1:
                x = F.tanh(x)
        return x


def seeded(seed: int, make: Callable[[], nn.Module]) -> nn.Module:
    rustgrad.manual_seed(seed)
    return make().double()


def params_np(model: nn.Module) -> Dict[str, np.ndarray]:
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def grads_np(model: nn.Module) -> Dict[str, Any]:
    return {n: None if p.grad is None else p.grad.numpy().copy()
            for n, p in model.named_parameters()}


def shard(x: Any) -> Any:
    """This rank's contiguous share of the batch (equal shares)."""
    h = x.shape[0] // world()
    return x[rank() * h:(rank() + 1) * h]


def batch(n: int, d: int, classes: int, seed: int) -> Tuple[Any, Any]:
    g = np.random.default_rng(seed)
    x = rustgrad.tensor(g.standard_normal((n, d)))
    y = rustgrad.tensor(g.integers(0, classes, n))
    return x, y


def torch_twin(model: nn.Module, make: Callable[[], Any]) -> Any:
    """A torch module with `make()`'s structure holding `model`'s values."""
    twin = make().double()
    with torch.no_grad():
        state = {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}
        twin.load_state_dict(state)
    return twin


class TorchMLP(torch.nn.Module):
    def __init__(self, sizes: Tuple[int, ...] = (6, 8, 8, 3)) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(a, b)
                                           for a, b in zip(sizes, sizes[1:])])

    def forward(self, x: Any) -> Any:
        for k, layer in enumerate(self.layers):
            x = layer(x)
            if k < len(self.layers) - 1:
                x = torch.tanh(x)
        return x


# --- gradients against one process on the whole batch ---------------------------------------

@check
def wrap_broadcasts_rank0_state() -> None:
    model = seeded(100 + rank(), MLP)  # different on every rank until wrapped
    ddp = DDP(model)
    close(np.concatenate([v.ravel() for v in params_np(ddp.module).values()]),
          np.concatenate([v.ravel() for v in params_np(seeded(100, MLP)).values()]),
          "parameters after wrap", rtol=0, atol=0)


@check
def grads_equal_full_batch() -> None:
    for kwargs, set_to_none in (({}, True), ({}, False),
                                ({"gradient_as_bucket_view": True}, True),
                                ({"gradient_as_bucket_view": True}, False),
                                ({"bucket_cap_mb": 0.0001}, True),
                                ({"find_unused_parameters": True}, True),
                                ({"static_graph": True}, True)):
        ddp = DDP(seeded(7 + rank(), MLP), **kwargs)
        ref = seeded(7, MLP)
        for step in range(3):  # the third runs on rebuilt buckets
            x, y = batch(8, 6, 3, seed=step)
            ddp.zero_grad(set_to_none=set_to_none)
            F.cross_entropy(ddp(shard(x)), shard(y)).backward()
            ref.zero_grad()
            F.cross_entropy(ref(x), y).backward()
            for (n, g), (_, r) in zip(grads_np(ddp.module).items(), grads_np(ref).items()):
                close(g, r, f"{kwargs} step {step} grad of {n}")
            if kwargs.get("gradient_as_bucket_view"):
                views = {id(v) for b in ddp.reducer.buckets for v in b.views}
                assert all(id(p.grad) in views for p in ddp.parameters()), \
                    "with gradient_as_bucket_view every .grad is a view of its bucket"


@check
def buckets_rebuilt_like_torch() -> None:
    sizes = (784, 512, 512, 10)
    rg_ddp = DDP(seeded(0, lambda: MLP(sizes)).float())
    t_ddp = torch.nn.parallel.DistributedDataParallel(TorchMLP(sizes))
    for _ in range(3):
        rg_ddp(rustgrad.ones(4, 784)).sum().backward()
        t_ddp(torch.ones(4, 784)).sum().backward()
    data = t_ddp._get_ddp_logging_data()
    want = [sorted(int(i) for i in b.split()) for b in
            data["rebuilt_per_bucket_param_indices"].split(",")]
    got = [sorted(b.indices) for b in rg_ddp.reducer.buckets]
    assert got == want, f"rebuilt buckets {got}, torch {want}"
    want_sizes = [int(s) for s in data["rebuilt_bucket_sizes"].split(",")]
    got_sizes = [b.flat.numel() * b.flat.element_size() for b in rg_ddp.reducer.buckets]
    assert got_sizes == want_sizes, f"bucket bytes {got_sizes}, torch {want_sizes}"


@check
def digits_sgd_20_steps() -> None:
    from sklearn.datasets import load_digits

    data = load_digits()
    xs = (data.data - data.data.mean(0)) / (data.data.std(0) + 1e-8)
    ds = TensorDataset(rustgrad.tensor(xs), rustgrad.tensor(data.target))
    local_bs = 32

    def make() -> nn.Module:
        return MLP((64, 32, 10))

    ddp = DDP(seeded(3 + rank(), make))
    ref = seeded(3, make)
    opt = rustgrad.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = rustgrad.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    sampler = DistributedSampler(ds, shuffle=True, seed=5)
    # every rank's sampler, to build the single process's concatenated batches
    samplers = [DistributedSampler(ds, num_replicas=world(), rank=r, shuffle=True, seed=5)
                for r in range(world())]
    loader = DataLoader(ds, batch_size=local_bs, sampler=sampler)
    step = 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for s in samplers:
            s.set_epoch(epoch)
        shares = [list(s) for s in samplers]
        for k, (x, y) in enumerate(loader):
            if step == 20:
                break
            opt.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
            idx = [i for share in shares for i in share[k * local_bs:(k + 1) * local_bs]]
            ref_opt.zero_grad()
            F.cross_entropy(ref(ds.tensors[0][idx]), ds.tensors[1][idx]).backward()
            ref_opt.step()
            step += 1
    assert step == 20, step
    flat = np.concatenate([v.ravel() for v in params_np(ddp.module).values()])
    same_on_all_ranks(flat, "parameters after 20 steps")
    close(flat, np.concatenate([v.ravel() for v in params_np(ref).values()]),
          "parameters after 20 steps vs one process", rtol=1e-9, atol=1e-11)


@check
def no_sync_accumulates_locally() -> None:
    for kwargs in ({}, {"gradient_as_bucket_view": True}):
        ddp = DDP(seeded(11, MLP), **kwargs)
        ref = seeded(11, MLP)
        local = seeded(11, MLP)
        micro = [batch(8, 6, 3, seed=20 + k) for k in range(3)]
        for it in range(2):  # twice: the second runs on rebuilt buckets
            ddp.zero_grad()
            ref.zero_grad()
            local.zero_grad()
            with ddp.no_sync():
                for x, y in micro[:2]:
                    F.cross_entropy(ddp(shard(x)), shard(y)).backward()
                    F.cross_entropy(local(shard(x)), shard(y)).backward()
            # inside no_sync nothing was communicated: the local sums
            for (n, g), (_, r) in zip(grads_np(ddp.module).items(), grads_np(local).items()):
                close(g, r, f"{kwargs} it {it} local grad of {n} under no_sync")
            x, y = micro[2]
            F.cross_entropy(ddp(shard(x)), shard(y)).backward()
            for x, y in micro:
                F.cross_entropy(ref(x), y).backward()
            for (n, g), (_, r) in zip(grads_np(ddp.module).items(), grads_np(ref).items()):
                close(g, r, f"{kwargs} it {it} accumulated grad of {n}")


# --- unused parameters -----------------------------------------------------------------------

class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(4, 5)
        self.head_a = nn.Linear(5, 2)
        self.head_b = nn.Linear(5, 2)

    def forward(self, x: Any, use_b: bool = False) -> Any:
        h = F.tanh(self.trunk(x))
        return self.head_b(h) if use_b else self.head_a(h)


class TorchTwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = torch.nn.Linear(4, 5)
        self.head_a = torch.nn.Linear(5, 2)
        self.head_b = torch.nn.Linear(5, 2)

    def forward(self, x: Any, use_b: bool = False) -> Any:
        h = torch.tanh(self.trunk(x))
        return self.head_b(h) if use_b else self.head_a(h)


@check
def unused_parameters_named_in_error() -> None:
    ddp = DDP(seeded(1, TwoHeads))
    x, _ = batch(4, 4, 2, seed=1)
    ddp(x).sum().backward()
    try:
        ddp(x)
    except RuntimeError as e:
        msg = str(e)
    else:
        raise AssertionError("the second forward did not raise")
    assert msg.startswith("Expected to have finished reduction in the prior iteration"), msg
    assert "find_unused_parameters=True" in msg, msg
    assert f"Parameters which did not receive grad for rank {rank()}: head_b.weight, " \
           "head_b.bias" in msg, msg
    assert f"Parameter indices which did not receive grad for rank {rank()}: 4 5" in msg, msg


@check
def find_unused_parameters_like_torch() -> None:
    # find_unused_parameters: head_b unused everywhere, then used on the last rank only;
    # static_graph: head_b never used
    for kwargs, uses in (({"find_unused_parameters": True}, [False, rank() == world() - 1, False]),
                         ({"static_graph": True}, [False, False, False])):
        model = seeded(2, TwoHeads)
        twin = torch_twin(model, TorchTwoHeads)
        ddp = DDP(model, **kwargs)
        t_ddp = torch.nn.parallel.DistributedDataParallel(twin, **kwargs)
        for step, use_b in enumerate(uses):
            x, _ = batch(4 * world(), 4, 2, seed=30 + step)
            ddp.zero_grad(set_to_none=False)
            t_ddp.zero_grad(set_to_none=False)
            ddp(shard(x), use_b=use_b).pow(2).mean().backward()
            t_x = torch.from_numpy(shard(x).numpy().copy())
            t_ddp(t_x, use_b=use_b).pow(2).mean().backward()
            for (n, g), (_, tp) in zip(grads_np(ddp.module).items(), twin.named_parameters()):
                if tp.grad is None or g is None:
                    assert g is None and tp.grad is None, \
                        f"{kwargs} step {step} {n}: rustgrad grad is None: {g is None}, " \
                        f"torch's: {tp.grad is None}"
                else:
                    close(g, tp.grad.numpy(), f"{kwargs} step {step} grad of {n} vs torch")


# --- buffers, state_dict, modes --------------------------------------------------------------

@check
def buffers_broadcast_like_torch() -> None:
    def make() -> nn.Module:
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))

    model = seeded(4, make)
    with rustgrad.no_grad():
        model[1].running_mean.fill_(float(rank() + 1))  # differs until wrapped
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
    with torch.no_grad():
        twin.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                              for k, v in model.state_dict().items()})
    ddp = DDP(model)
    t_ddp = torch.nn.parallel.DistributedDataParallel(twin)
    for step in range(3):
        x, _ = batch(4 * world(), 3, 2, seed=40 + step)
        ddp(shard(x)).sum().backward()
        t_ddp(torch.from_numpy(shard(x).numpy().copy())).sum().backward()
        for (n, b), (_, tb) in zip(ddp.module.named_buffers(), twin.named_buffers()):
            close(b.numpy(), tb.numpy(), f"step {step} buffer {n} vs torch")
    assert list(ddp.state_dict()) == list(t_ddp.state_dict()), \
        (list(ddp.state_dict()), list(t_ddp.state_dict()))


@check
def eval_and_no_grad_forward() -> None:
    ddp = DDP(seeded(5, MLP))
    ref = seeded(5, MLP)
    x, y = batch(8, 6, 3, seed=50)
    with rustgrad.no_grad():
        ddp(shard(x))  # prepares nothing, so no reduction is expected
    ddp.eval()
    assert not ddp.module.training
    F.cross_entropy(ddp(shard(x)), shard(y)).backward()
    ddp.train()
    assert ddp.module.training
    F.cross_entropy(ref(x), y).backward()
    for (n, g), (_, r) in zip(grads_np(ddp.module).items(), grads_np(ref).items()):
        close(g, r, f"grad of {n} after eval forward")
    ddp(shard(x))  # the prior reduction finished: no error


@check
def constructor_refusals_like_torch() -> None:
    def messages(make: Callable[[], Any]) -> str:
        try:
            make()
        except (RuntimeError, ValueError) as e:
            return f"{type(e).__name__}: {e}"
        return "no error"

    frozen = nn.Linear(2, 2).requires_grad_(False)
    t_frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    ours, theirs = messages(lambda: DDP(frozen)), messages(
        lambda: torch.nn.parallel.DistributedDataParallel(t_frozen))
    assert ours == theirs, (ours, theirs)
    ours = messages(lambda: DDP(nn.Linear(2, 2), device_ids=[0]))
    theirs = messages(lambda: torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(2, 2), device_ids=[0]))
    cut = theirs.index("and module parameters")
    assert ours[:cut] == theirs[:cut], (ours, theirs)
    ours = messages(lambda: DDP(nn.Linear(2, 2), device_ids=[0, 1]))
    theirs = messages(lambda: torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(2, 2), device_ids=[0, 1]))
    assert ours == theirs, (ours, theirs)


@check
def different_models_refused_on_every_rank() -> None:
    hidden = 8 + rank()  # differs across ranks when there are several
    try:
        DDP(seeded(0, lambda: MLP((6, hidden, 3))))
    except RuntimeError as e:
        assert world() > 1, f"a world of one refused: {e}"
        assert "DDP expects same model across all ranks" in str(e), str(e)
    else:
        assert world() == 1, "the ranks' different models were wrapped"


def main() -> int:
    tdist.init_process_group("gloo", init_method="file://" + sys.argv[1],
                             rank=COMM.Get_rank(), world_size=COMM.Get_size())
    dist.init_process_group("mpi")
    only = set(sys.argv[2:])
    failed = 0
    for name, fn in CHECKS:
        if only and name not in only:
            continue
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
    tdist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
