"""Convolutional networks: a CNN classifier with BatchNorm and dropout, ResNet basic blocks,
mobile-style depthwise-separable and dilated convolutions with padding modes, and a text CNN
over Conv1d."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, grads_of, params_of, program, programs_in, seed_params


@program
def cnn_classifier(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.pool = nn.MaxPool2d(2)
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(6 * 3 * 3, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.bn1(self.conv1(x))))
            x = F.relu(self.conv2(x))
            x = torch.flatten(x, 1)
            return self.fc(self.drop(x))

    model = seed_params(torch, Net(), 5)
    images = torch.from_numpy(data((6, 1, 10, 10), 6))
    labels = torch.tensor([0, 1, 2, 1, 0, 2])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5, weight_decay=1e-3)
    losses = []
    model.train()
    model.drop.eval()  # random masks differ across libraries; everything else trains for real
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(images)
    acc = (logits.argmax(dim=1) == labels).float().mean()
    return {"losses": losses, "params": params_of(model), "running_mean": model.bn1.running_mean,
            "running_var": model.bn1.running_var, "tracked": model.bn1.num_batches_tracked,
            "logits": logits, "acc": acc, "training": [m.training for m in model.modules()]}


@program
def resnet_block(torch):
    nn = torch.nn
    F = torch.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.norm1 = nn.GroupNorm(2, cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.norm2 = nn.BatchNorm2d(cout, momentum=0.2)
            self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.norm1(self.conv1(x)))
            out = self.norm2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), BasicBlock(4, 4, 1), BasicBlock(4, 6, 2),
                        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(6, 2))
    seed_params(torch, net, 53)
    for m in net.modules():  # the usual ResNet init, then the NumPy weights for the convolutions
        if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
    x = torch.from_numpy(data((4, 2, 8, 8), 54))
    y = torch.tensor([0, 1, 1, 0])
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        logits = net(x)
    buffers = {n: b for n, b in net.named_buffers()}
    return {"losses": losses, "params": params_of(net), "buffers": buffers, "logits": logits}


@program
def mobile_convolutions(torch):
    nn = torch.nn

    class DepthwiseSeparable(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.depthwise = nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False)
            self.pointwise = nn.Conv2d(cin, cout, 1)
            self.act = nn.Hardswish()

        def forward(self, x):
            return self.act(self.pointwise(self.depthwise(x)))

    net = nn.Sequential(
        nn.Conv2d(2, 4, 3, stride=2, padding="valid", dilation=1),
        nn.ReLU6(),
        DepthwiseSeparable(4, 6),
        # (padding="same" with padding_mode="reflect" raises NotImplementedError in rustgrad)
        nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=2, padding_mode="reflect"),
        nn.Conv2d(6, 6, 3, padding="same", dilation=2),
        nn.Conv2d(6, 4, 3, padding=1, padding_mode="circular"),
        nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False),
        nn.Mish(),
        nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2, dilation=1),
        nn.Hardsigmoid(),
    )
    seed_params(torch, net, 121)
    x = torch.from_numpy(data((2, 2, 11, 11), 122)).requires_grad_()
    out = net(x)
    out.pow(2).mean().backward()
    pooled, idx = nn.functional.max_pool2d(x.detach(), 3, stride=2, padding=1, return_indices=True)
    return {"out": out, "x_grad": x.grad, "grads": grads_of(net), "pooled": pooled, "idx": idx,
            "avg": nn.functional.avg_pool2d(x.detach(), 3, stride=2, padding=1, ceil_mode=True)}


@program
def text_cnn_conv1d(torch):
    nn = torch.nn
    F = torch.nn.functional

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 6)
            self.convs = nn.ModuleList([nn.Conv1d(6, 4, k, padding=k // 2) for k in (2, 3)])
            self.pool = nn.AvgPool1d(2)
            self.dropout = nn.Dropout(0.3)
            self.fc = nn.Linear(8, 2)

        def forward(self, tokens):
            e = self.embed(tokens).transpose(1, 2)  # (batch, channels, time)
            feats = [F.max_pool1d(self.pool(F.relu(conv(e))), kernel_size=2).amax(dim=2)
                     for conv in self.convs]
            return self.fc(self.dropout(torch.cat(feats, dim=1)))

    model = seed_params(torch, TextCNN(), 82)
    tokens = torch.from_numpy(np.random.default_rng(83).integers(0, 12, (5, 9)))
    labels = torch.tensor([0, 1, 1, 0, 1])
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    model.eval()  # dropout off, the rest trains normally
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), labels, weight=torch.tensor([1.0, 2.0]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
