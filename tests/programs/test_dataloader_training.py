"""Training from a DataLoader: TensorDataset batches with SGD and StepLR, a Dataset subclass
with dict samples and custom collate, samplers and ConcatDataset, and an MLP classifier with a
Subset, OneCycleLR, label smoothing and accuracy metrics."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def dataloader_training(torch):
    nn = torch.nn
    x = torch.from_numpy(data((20, 3), 3))
    true_w = torch.tensor([[1.5], [-2.0], [0.5]])
    y = x @ true_w + 0.3
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=6,
                                         shuffle=False)
    model = seed_params(torch, nn.Linear(3, 1), 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loss_fn = nn.MSELoss()
    losses, lrs, sizes = [], [], []
    for epoch in range(4):
        for xb, yb in loader:
            sizes.append(len(xb))
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
        lrs.append(sched.get_last_lr())
        print(f"epoch {epoch} loss {losses[-1]:.4f}")
    return {"losses": losses, "lrs": lrs, "sizes": sizes, "params": params_of(model),
            "batches": len(loader)}


@program
def dataset_subclass_and_collate(torch):
    class Pairs(torch.utils.data.Dataset):
        def __init__(self, n):
            self.x = data((n, 3), 67)
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return {"x": torch.from_numpy(self.x[i]), "y": i % 2, "w": float(i) / 10,
                    "np": self.x[i, :2]}

    ds = Pairs(7)
    loader = torch.utils.data.DataLoader(ds, batch_size=3)
    batches = [{k: v for k, v in b.items()} for b in loader]

    def pad_collate(items):
        xs = [torch.ones(n) * n for n in items]
        return torch.nn.utils.rnn.pad_sequence(xs, batch_first=True, padding_value=-1.0)

    padded = list(torch.utils.data.DataLoader([1, 3, 2, 4], batch_size=2, collate_fn=pad_collate))
    sampler = torch.utils.data.SequentialSampler(ds)
    batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size=3, drop_last=False)
    concat = torch.utils.data.ConcatDataset([torch.utils.data.TensorDataset(torch.arange(3)),
                                             torch.utils.data.TensorDataset(torch.arange(10, 12))])
    concat_items = [concat[i][0] for i in range(len(concat))]
    return {"batches": batches, "len": len(loader), "padded": padded,
            "batch_sampler": list(batch_sampler), "concat": concat_items,
            "types": [type(v).__name__ for v in batches[0].values()]}


@program
def mlp_classifier_with_metrics(torch):
    nn = torch.nn
    rng = np.random.default_rng(44)
    x = torch.from_numpy(rng.standard_normal((30, 2)).astype(np.float32))
    y = ((x[:, 0] * x[:, 1]) > 0).long()
    dataset = torch.utils.data.TensorDataset(x, y)
    train_set = torch.utils.data.Subset(dataset, list(range(24)))
    loader = torch.utils.data.DataLoader(train_set, batch_size=8, shuffle=False, drop_last=True)
    model = seed_params(torch, nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)), 45,
                        scale=0.7)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=9)
    history = []
    for _ in range(3):
        model.train()
        total, correct, running = 0, 0, 0.0
        for xb, yb in loader:
            opt.zero_grad()
            logits = model(xb)
            loss = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, yb)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item() * xb.size(0)
            correct += (logits.argmax(1) == yb).sum().item()
            total += yb.numel()
        model.eval()
        with torch.no_grad():
            val = model(x[24:]).argmax(1).eq(y[24:]).float().mean().item()
        history.append([running / total, correct, val, sched.get_last_lr()[0]])
    return {"history": history, "params": params_of(model)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
