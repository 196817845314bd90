# pyright: strict
"""A typical user program, written as a torch user would write it against rustgrad.

tests/test_typing.py checks it with `mypy --strict` and with pyright (each must infer the types
that `assert_type` states), and runs it, checking each asserted type against the value's.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
import rustgrad as torch
import rustgrad.nn as nn
import rustgrad.nn.functional as F
from rustgrad import Tensor
from typing_extensions import assert_type

Number = Union[int, float, bool]


class MLP(nn.Module):
    """Two linear layers with a ReLU and dropout between them."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: Tensor) -> Tensor:
        h = F.relu(self.fc1(x))
        # a built-in module's call is typed as its forward (torch types it Any)
        assert_type(self.fc1(x), Tensor)
        return self.fc2(self.dropout(h))


class Scale(nn.Module):
    """A module with a parameter and a forward of another signature than MLP's."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        y = x * self.weight
        return y if bias is None else y + bias


def batches(n: int, size: int) -> List[Tuple[Tensor, Tensor]]:
    x = torch.randn(n, 4)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return [(x[i:i + size], y[i:i + size]) for i in range(0, n, size)]


@torch.no_grad()
def accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    logits: Tensor = model(x)
    return (logits.argmax(dim=1) == y).float().mean().item()


def train(epochs: int = 5) -> Tuple[float, float]:
    torch.manual_seed(0)
    model = MLP(4, 16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = batches(128, 32)
    last = 0.0
    for _ in range(epochs):
        model.train()
        for xb, yb in data:
            opt.zero_grad()
            logits: Tensor = model(xb)
            loss = F.cross_entropy(logits, yb)
            assert_type(loss, Tensor)
            loss.backward()
            opt.step()
            last = loss.item()
    model.eval()
    x = torch.cat([xb for xb, _ in data])
    y = torch.cat([yb for _, yb in data])
    return last, accuracy(model, x, y)


def operators() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2)
    assert_type(x + 1, Tensor)
    assert_type(x * 2, Tensor)
    assert_type(2 * x, Tensor)
    assert_type(1.5 - x, Tensor)
    assert_type(x / 3.0, Tensor)
    assert_type(1 / x, Tensor)
    assert_type(x ** 2, Tensor)
    assert_type(2 ** x, Tensor)
    assert_type(-x, Tensor)
    assert_type(abs(x), Tensor)
    assert_type(x @ w, Tensor)
    assert_type(x + w.sum(1).expand(3, 4), Tensor)
    assert_type(np.float64(2.0) * x, Tensor)
    assert_type(x * np.float32(0.5), Tensor)
    assert_type(np.int64(3) + x, Tensor)
    assert_type(x > 0, Tensor)
    assert_type(x == x, Tensor)
    assert_type((x > 0) & (x < 1), Tensor)
    assert_type(~(x > 0), Tensor)


def indexing() -> None:
    x = torch.arange(12).reshape(3, 4).float()
    assert_type(x[:, 0], Tensor)
    assert_type(x[0], Tensor)
    assert_type(x[1:, ::2], Tensor)
    assert_type(x[..., -1], Tensor)
    assert_type(x[x > 5], Tensor)
    assert_type(x[torch.tensor([0, 2])], Tensor)
    x[0, 0] = 1.0
    x[:, 1] = torch.zeros(3)
    rows = [row for row in x]
    assert_type(rows[0], Tensor)


def reductions_and_shapes() -> None:
    x = torch.randn(3, 4)
    assert_type(x.sum(), Tensor)
    assert_type(x.mean(dim=0), Tensor)
    assert_type(x.sum(1, keepdim=True), Tensor)
    assert_type(torch.sum(x, dim=1), Tensor)
    assert_type(x.max(), Tensor)
    values, indices = x.max(dim=1)
    assert_type(values, Tensor)
    assert_type(indices, Tensor)
    assert_type(x.min(0).indices, Tensor)
    assert_type(x.argmax(1), Tensor)
    assert_type(x.softmax(dim=-1), Tensor)
    assert_type(x.T, Tensor)
    assert_type(x.mT, Tensor)
    assert_type(x.view(-1), Tensor)
    assert_type(x.unsqueeze(0).squeeze(0), Tensor)
    assert_type(x.shape, torch.Size)
    assert_type(x.shape[0], int)
    assert_type(x.shape[-1] * x.size(0), int)
    assert_type(x.size(), torch.Size)
    assert_type(x.size(0), int)
    assert_type(x.dim(), int)
    assert_type(x.numel(), int)
    assert_type(x.dtype, torch.dtype)
    assert_type(x.device, torch.device)
    assert_type(x.sum().item(), Number)
    assert_type(x.tolist(), Any)
    assert_type(x.numpy(), npt.NDArray[Any])
    assert_type(x.to(torch.float64), Tensor)
    assert_type(x.double(), Tensor)
    assert_type(torch.stack([x, x]), Tensor)
    assert_type(torch.where(x > 0, x, 0.0), Tensor)
    assert_type(x.chunk(2), Tuple[Tensor, ...])
    assert_type(float(x.sum()), float)


def autograd() -> None:
    x = torch.randn(3, requires_grad=True)
    assert_type(x.grad, Optional[Tensor])
    y = (x * x).sum()
    y.backward()
    g = x.grad
    assert g is not None
    assert_type(g, Tensor)
    with torch.no_grad():
        z = x * 2
        assert_type(z, Tensor)
    assert not z.requires_grad
    assert_type(x.detach(), Tensor)
    s = Scale()
    assert_type(s.weight, nn.Parameter)
    out: Tensor = s(torch.ones(2, 4), bias=torch.zeros(4))
    assert_type(out.sum(), Tensor)


def main() -> None:
    loss, acc = train()
    operators()
    indexing()
    reductions_and_shapes()
    autograd()
    assert loss < 0.7 and acc > 0.8, (loss, acc)


if __name__ == "__main__":
    main()
