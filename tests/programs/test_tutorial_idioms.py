"""Idioms of older tutorials and course code: a cubic fitted by hand-written SGD under
no_grad, "What is torch.nn really?" from raw tensors to nn, and the CIFAR tutorial's loop and
`.data` surgery."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def polynomial_fit_manual_sgd(torch):
    # the classic tutorial: fit sin(x) with a cubic, updating tensors by hand under no_grad
    x = torch.linspace(-3.14159, 3.14159, 200)
    y = torch.sin(x)
    rng = np.random.default_rng(46)
    a, b, c, d = (torch.tensor(float(v), requires_grad=True) for v in rng.standard_normal(4))
    lr = 1e-6
    losses = []
    for t in range(60):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % 20 == 19:
            print(t, round(loss.item(), 2))
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    return {"losses": losses, "coeffs": [a, b, c, d]}


@program
def mnist_from_scratch(torch):
    # "What is torch.nn really?": raw tensors first, then the same model refactored onto nn
    import math

    F = torch.nn.functional
    x = torch.from_numpy(np.abs(data((16, 12), 61)))
    y = torch.from_numpy(np.random.default_rng(62).integers(0, 4, 16))
    weights = torch.from_numpy(data((12, 4), 63)) / math.sqrt(12)
    weights.requires_grad_()
    bias = torch.zeros(4, requires_grad=True)

    def log_softmax(t):
        return t - t.exp().sum(-1).log().unsqueeze(-1)

    def nll(inp, target):
        return -inp[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        return (torch.argmax(out, dim=1) == yb).float().mean()

    lr, bs = 0.5, 4
    losses = []
    for i in range((16 - 1) // bs + 1):
        xb, yb = x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
        loss = nll(log_softmax(xb @ weights + bias), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
        losses.append(loss.item())
    by_hand = F.cross_entropy(x @ weights + bias, y)

    class MnistLogistic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = torch.nn.Parameter(torch.from_numpy(data((12, 4), 63)) / math.sqrt(12))
            self.bias = torch.nn.Parameter(torch.zeros(4))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    model = MnistLogistic()
    for i in range(4):
        xb, yb = x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
        F.cross_entropy(model(xb), yb).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()
    print(model)
    return {"losses": losses, "w": weights, "b": bias, "by_hand": by_hand,
            "acc": accuracy(x @ weights + bias, y), "module_w": model.weights,
            "module_b": model.bias, "module_grad": model.weights.grad}


@program
def cifar_tutorial_idioms(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 6, 2)
            self.fc1 = nn.Linear(6 * 1 * 1, 10)
            self.fc2 = nn.Linear(10, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 6 * 1 * 1)
            return self.fc2(F.relu(self.fc1(x)))

    net = seed_params(torch, Net(), 64)
    print(net)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.from_numpy(data((8, 3, 8, 8), 65))
    labels = torch.from_numpy(np.random.default_rng(66).integers(0, 3, 8))
    running_loss = 0.0
    for i in range(4):
        optimizer.zero_grad()
        outputs = net(inputs[2 * i:2 * i + 2])
        loss = criterion(outputs, labels[2 * i:2 * i + 2])
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 2 == 1:
            print(f"[{i + 1:5d}] loss: {running_loss / 2:.3f}")
            running_loss = 0.0
    correct, total = 0, 0
    with torch.no_grad():
        outputs = net(inputs)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
    # old-style parameter surgery through .data
    net.fc2.bias.data.fill_(0.25)
    net.fc2.weight.data *= 0.5
    data_is_leaf = net.fc2.weight.data.requires_grad
    print(f"Accuracy: {100 * correct // total} %")
    return {"predicted": predicted, "params": params_of(net), "data_req": data_is_leaf,
            "n_params": sum(p.numel() for p in net.parameters())}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
