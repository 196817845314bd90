"""Hooks in programs: module forward pre/post hooks, full backward (pre) hooks, tensor hooks and
post-accumulate-grad hooks, feature capture, hooks with kwargs and prepend, saved_tensors_hooks,
and removal through the handles."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, program, programs_in, seed_params


@program
def hooks(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    seed_params(torch, model, 1)
    log = []

    def pre_hook(module, args):
        log.append(("pre", type(module).__name__, tuple(args[0].shape)))
        return (args[0] * 2,)

    def fwd_hook(module, args, output):
        log.append(("fwd", type(module).__name__))
        return output + 1

    def bwd_hook(module, grad_input, grad_output):
        log.append(("bwd", type(module).__name__, [None if g is None else tuple(g.shape)
                                                   for g in grad_input]))

    def tensor_hook(grad):
        log.append(("tensor", tuple(grad.shape)))
        return grad * 0.5

    post_acc = []
    h1 = model[0].register_forward_pre_hook(pre_hook)
    h2 = model[2].register_forward_hook(fwd_hook)
    h3 = model[2].register_full_backward_hook(bwd_hook)
    w = model[0].weight
    h4 = w.register_hook(tensor_hook)
    h5 = w.register_post_accumulate_grad_hook(lambda p: post_acc.append(p.grad.clone()))

    x = torch.from_numpy(data((5, 3), 2))
    out = model(x)
    out.pow(2).mean().backward()
    g1 = grads_of(model)
    for h in (h1, h2, h3, h4, h5):
        h.remove()
    model.zero_grad()
    out2 = model(x)
    out2.pow(2).mean().backward()
    return {"log": log, "out": out, "grads": g1, "post_acc": post_acc, "out2": out2,
            "grads_after_remove": grads_of(model)}


@program
def hooks_advanced(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)), 85)
    log = []
    features = {}

    def save_output(name):
        def hook(module, args, output):
            features[name] = output.detach()
        return hook

    def kw_hook(module, args, kwargs, output):
        log.append(("kw", sorted(kwargs)))

    def bwd_pre(module, grad_output):
        log.append(("bwd_pre", tuple(grad_output[0].shape)))
        return (grad_output[0] * 2,)

    def scale_grad_input(module, grad_input, grad_output):
        return tuple(None if g is None else g * 0 + 1 for g in grad_input)

    handles = [model[0].register_forward_hook(save_output("fc1")),
               model[1].register_forward_hook(save_output("relu")),
               model[2].register_forward_hook(kw_hook, with_kwargs=True),
               model[2].register_full_backward_pre_hook(bwd_pre),
               model[1].register_full_backward_hook(scale_grad_input),
               model[0].register_forward_pre_hook(lambda m, a: log.append("first"), prepend=True)]
    x = torch.from_numpy(data((4, 3), 86))
    out = model(x)
    out.sum().backward()
    grads = grads_of(model)

    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t * 1

    def unpack(t):
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = (a * a).sin().sum()
    b.backward()
    for h in handles:
        h.remove()
    return {"features": features, "log": log, "grads": grads, "out": out, "a_grad": a.grad,
            "packed": len(packed) > 0}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
