"""Worker for tests/distributed/test_torchrun_style.py, started by
`python -m rustgrad.distributed.run --nproc-per-node 2`: the shape of the usual torchrun DDP
script (rank from the environment, a Trainer, DistributedSampler + set_epoch, a snapshot saved by
rank 0 from `model.module.state_dict()` and loaded back with `map_location`), written with
rustgrad under torch's names. Each rank writes what it saw to OUT/rank{r}.json for the test."""

from __future__ import annotations

import json
import os
import pathlib
import sys
import warnings
from typing import Any, Dict, List

import rustgrad as torch
import rustgrad.distributed as dist
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.distributed import destroy_process_group, init_process_group
from rustgrad.distributed.elastic.multiprocessing.errors import record
from rustgrad.nn.modules.utils import consume_prefix_in_state_dict_if_present
from rustgrad.nn.parallel import DistributedDataParallel as DDP
from rustgrad.utils.data import DataLoader, Dataset
from rustgrad.utils.data.distributed import DistributedSampler

SAMPLES, BATCH, EPOCHS, LR = 48, 6, 3, 0.05


class RegressionSet(Dataset):
    """A fixed set of (x, y) pairs, the same on every rank (seeded before the model)."""

    def __init__(self, size: int) -> None:
        torch.manual_seed(1234)
        self.x = torch.randn(size, 5)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0], [3.0]]) + 0.1

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        return self.x[i], self.y[i], i


def make_model(seed: int) -> nn.Module:
    # a seed per rank: DDP's broadcast from rank 0 is what makes the replicas agree
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))


def flat(module: nn.Module) -> List[float]:
    return [float(v) for p in module.parameters() for v in p.detach().reshape(-1).tolist()]


class Trainer:
    """The tutorial series' Trainer shape: wrap after an optional snapshot load, run epochs."""

    def __init__(self, model: nn.Module, data: DataLoader, snapshot: pathlib.Path,
                 local_rank: int, global_rank: int) -> None:
        self.local_rank, self.global_rank = local_rank, global_rank
        self.data, self.snapshot, self.epochs_run = data, snapshot, 0
        if snapshot.exists():
            state = torch.load(snapshot, map_location="cpu")
            model.load_state_dict(state["MODEL_STATE"])
            self.epochs_run = state["EPOCHS_RUN"]
        self.model = DDP(model, device_ids=None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.seen: Dict[int, List[int]] = {}

    def _run_batch(self, x: Any, y: Any) -> None:
        self.optimizer.zero_grad()
        F.mse_loss(self.model(x), y).backward()
        self.optimizer.step()

    def _run_epoch(self, epoch: int) -> None:
        self.data.sampler.set_epoch(epoch)
        for x, y, idx in self.data:
            self.seen.setdefault(epoch, []).extend(int(i) for i in idx.tolist())
            self._run_batch(x, y)

    def _save_snapshot(self, epochs_done: int) -> None:
        state = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epochs_done}
        torch.save(state, self.snapshot)

    def train(self, max_epochs: int, stop_after: int = -1) -> None:
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0:
                self._save_snapshot(epoch + 1)
            if epoch == stop_after:
                break


@record
def main(out: pathlib.Path) -> None:
    local_rank = int(os.environ["LOCAL_RANK"])
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    init_process_group(backend="gloo")
    report: Dict[str, Any] = {"rank": dist.get_rank(), "world_size": dist.get_world_size(),
                              "env": [rank, local_rank, world_size], "backend": dist.get_backend(),
                              "elastic": dist.is_torchelastic_launched(),
                              "run_id": os.environ.get("TORCHELASTIC_RUN_ID")}

    dataset = RegressionSet(SAMPLES)
    report["x"], report["y"] = dataset.x.tolist(), dataset.y.tolist()
    loader = DataLoader(dataset, batch_size=BATCH, pin_memory=True, shuffle=False,
                        sampler=DistributedSampler(dataset))
    report["steps_per_epoch"] = len(loader)

    # one uninterrupted run, from rank 0's initial parameters
    model = make_model(seed=rank)
    report["initial_own"] = flat(model)
    full = Trainer(model, loader, out / "full.pt", local_rank, rank)
    report["initial"] = flat(full.model.module)
    full.train(EPOCHS)
    report["final"] = flat(full.model.module)
    report["seen"] = {str(k): v for k, v in full.seen.items()}
    report["ddp_keys"] = list(full.model.state_dict())
    report["module_keys"] = list(full.model.module.state_dict())
    report["ddp_group_is_world"] = full.model.process_group is dist.group.WORLD
    # the DDP state_dict's "module." keys, stripped in place, load into a plain model
    ddp_state = full.model.state_dict()
    consume_prefix_in_state_dict_if_present(ddp_state, "module.")
    plain = make_model(seed=9)
    plain.load_state_dict(ddp_state)
    report["plain_from_ddp"] = flat(plain)

    # a run stopped after epoch 0, then resumed from its snapshot by a fresh model
    snapshot = out / "snapshot.pt"
    dist.barrier()
    first = Trainer(make_model(seed=rank), loader, snapshot, local_rank, rank)
    first.train(EPOCHS, stop_after=0)
    dist.barrier()  # the snapshot is written before any rank reads it
    resumed = Trainer(make_model(seed=100 + rank), loader, snapshot, local_rank, rank)
    report["resumed_from"] = resumed.epochs_run
    resumed.train(EPOCHS)
    report["resumed_final"] = flat(resumed.model.module)
    dist.barrier()

    # the tutorial's map_location spellings all read the CPU snapshot back
    loads = {}
    for name, loc in [("str", "cpu"), ("device", torch.device("cpu")),
                      ("dict", {"cuda:0": f"cuda:{local_rank}"}),
                      ("callable", lambda storage, where: storage)]:
        state = torch.load(snapshot, map_location=loc)
        probe = make_model(seed=7)
        probe.load_state_dict(state["MODEL_STATE"])
        loads[name] = flat(probe)
    report["loads"] = loads
    report["snapshot_epochs"] = torch.load(snapshot, map_location="cpu")["EPOCHS_RUN"]

    everyone: List[Any] = [None] * world_size
    dist.all_gather_object(everyone, report["final"])
    report["gathered_final"] = everyone
    # per-rank metrics collected on rank 0 only; dist_tuto's deprecated reduce_op spelling
    metrics: Any = [None] * world_size if rank == 0 else None
    dist.gather_object({"rank": rank, "steps": len(full.seen[0])}, metrics, dst=0)
    report["metrics"] = metrics
    total = torch.tensor([float(rank + 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        dist.all_reduce(total, op=dist.reduce_op.SUM)
    report["reduce_op_sum"] = float(total)
    destroy_process_group()
    report["initialized_after"] = dist.is_initialized()
    (out / f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message=".*pin_memory.*")
    main(pathlib.Path(sys.argv[1]))
