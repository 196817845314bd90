"""rustgrad.utils.checkpoint: recompute in backward, the plain run's gradients, less memory."""

from __future__ import annotations

import gc
import importlib
import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import f64, parity, same_error

RNG = np.random.default_rng(0)
WS = [RNG.standard_normal((8, 8)) * 0.4 for _ in range(6)]
X0 = RNG.standard_normal((4, 8))


def _mlp(lib):
    ws = [f64(lib, w, True) for w in WS]
    layers = [_layer(w) for w in ws]
    return ws, layers


def _layer(w):
    return lambda h: (h @ w).tanh() * 1.5 + h.sigmoid()


def _relu_layer(w):
    return lambda h: (h @ w).relu()


def _ckpt(lib):
    return importlib.import_module(lib.__name__ + ".utils.checkpoint")


@pytest.mark.parametrize("mode", ["plain", "reentrant", "non_reentrant"])
@pytest.mark.parametrize("segments", [2, 3])
def test_checkpoint_sequential_gives_the_plain_gradients(mode, segments):
    def run(lib):
        ws, layers = _mlp(lib)
        x = f64(lib, X0, True)
        if mode == "plain":
            h = x
            for f in layers:
                h = f(h)
        else:
            h = _ckpt(lib).checkpoint_sequential(layers, segments, x,
                                                 use_reentrant=mode == "reentrant")
        loss = (h ** 2).sum()
        loss.backward()
        return loss, x.grad, [w.grad for w in ws]

    parity(run)


def test_checkpoint_gradients_bit_identical_to_plain_run(rg):
    ck = _ckpt(rg)
    results = []
    for use in (None, False, True):
        ws, layers = _mlp(rg)
        x = f64(rg, X0, True)
        if use is None:
            h = x
            for f in layers:
                h = f(h)
        else:
            h = ck.checkpoint_sequential(layers, 3, x, use_reentrant=use)
        (h ** 2).sum().backward()
        results.append([w.grad.numpy().copy() for w in ws] + [x.grad.numpy().copy()])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_checkpoint_non_reentrant_double_backward_and_retain_graph_match_torch():
    def run(lib):
        ck = _ckpt(lib)
        x = f64(lib, [0.3, -0.2, 1.1], True)
        f = lambda a: (a.exp() * a).sin()  # noqa: E731
        y = ck.checkpoint(f, x, use_reentrant=False).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        y2 = ck.checkpoint(f, x, use_reentrant=False).sum()
        y2.backward(retain_graph=True)
        y2.backward()  # recomputes again
        return g, h, x.grad

    parity(run)


def test_checkpoint_recomputes_once_per_backward():
    def run(lib):
        calls = []

        def seg(a):
            calls.append(1)
            return (a * a).exp().sum(0)

        x = f64(lib, X0, True)
        y = _ckpt(lib).checkpoint(seg, x, use_reentrant=False)
        n_forward = len(calls)
        y.sum().backward()
        return n_forward, len(calls), x.grad

    n_fwd, n_total, _ = parity(run)
    assert (n_fwd, n_total) == (1, 2)


def test_checkpoint_preserves_rng_state_for_dropout_like_segments():
    def run(lib):
        lib.manual_seed(0)
        x = f64(lib, np.ones((3, 4)), True)

        def seg(a):
            mask = (lib.rand(3, 4, dtype=lib.float64) > 0.5).to(lib.float64)
            return a * mask * 2

        y = _ckpt(lib).checkpoint(seg, x, use_reentrant=False)
        y.sum().backward()
        return (y.detach() == x.grad).all().item(), y.detach().sum().item() > 0

    # the recomputed mask is the forward's mask, so the gradient is 2 * mask (values differ
    # between torch and rustgrad's generators; the identity holds in both)
    assert parity(run) == (True, True)


def test_checkpoint_reentrant_refuses_autograd_grad():
    def run(lib):
        x = f64(lib, [0.3, -0.2], True)
        y = _ckpt(lib).checkpoint(lambda a: a.exp() * a, x, use_reentrant=True).sum()
        lib.autograd.grad(y, x)

    same_error(run, "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()")


def test_checkpoint_without_use_reentrant_warns_as_torch(lib):
    x = f64(lib, [0.3], True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed"):
        _ckpt(lib).checkpoint(lambda a: a * 2, x)


def test_checkpoint_reentrant_inputs_without_grad_warns(lib):
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        _ckpt(lib).checkpoint(lambda a: a * 2, f64(lib, [0.3]), use_reentrant=True)


def test_checkpoint_sequential_unexpected_kwargs_raise(lib):
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        _ckpt(lib).checkpoint_sequential([lambda a: a], 1, f64(lib, [1.0]), use_reentrant=False,
                                         foo=1)


def _live_graph_bytes(rg, fn):
    gc.collect()
    base = rg.memory.live_bytes()
    loss = fn()
    held = rg.memory.live_bytes() - base
    loss.backward()
    return held


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential_saves_activation_memory_on_deep_mlp(rg, use_reentrant):
    rng = np.random.default_rng(1)
    depth, width, batch = 16, 64, 128
    ws = [rg.tensor(rng.standard_normal((width, width)).astype(np.float32) * 0.1,
                    requires_grad=True) for _ in range(depth)]
    layers = [_relu_layer(w) for w in ws]
    x = rg.tensor(rng.standard_normal((batch, width)).astype(np.float32), requires_grad=True)

    def plain():
        h = x
        for f in layers:
            h = f(h)
        return h.sum()

    full = _live_graph_bytes(rg, plain)
    plain_grads = [w.grad.numpy().copy() for w in ws]
    for w in ws:
        w.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ckpt = _live_graph_bytes(rg, lambda: _ckpt(rg).checkpoint_sequential(
            layers, 4, x, use_reentrant=use_reentrant).sum())
    activation = batch * width * 4
    loss = 4
    assert full == depth * activation + loss  # every relu output is kept
    # 3 checkpointed segments keep their outputs, the last segment (4 layers) is plain
    assert ckpt == (3 + 4) * activation + loss
    for w, g in zip(ws, plain_grads):
        assert np.array_equal(w.grad.numpy(), g)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_as_a_decorator_matches_torch(use_reentrant):
    def run(lib):
        @_ckpt(lib).checkpoint(use_reentrant=use_reentrant)
        def block(a, b):
            return (a.exp() * b).sin()

        class Net:
            scale = 3.0

            @_ckpt(lib).checkpoint(use_reentrant=use_reentrant)
            def forward(self, a):
                return (a * self.scale).tanh()

        x = f64(lib, [0.3, -0.2], True)
        w = f64(lib, [1.5, 0.5], True)
        y = block(x, w).sum() + Net().forward(x).sum()
        y.backward()
        return y, x.grad, w.grad, block.__name__

    parity(run)


def test_checkpoint_warning_and_refusal_texts_equal_torch():
    texts = []
    for lib in (torch, rustgrad):
        x = f64(lib, [0.3], True)
        with pytest.warns(UserWarning) as record:
            _ckpt(lib).checkpoint(lambda a: a * 2, x)
        with pytest.raises(ValueError) as info:
            _ckpt(lib).checkpoint(lambda a: a * 2, x, use_reentrant=True, debug=True)
        with pytest.raises(ValueError) as unexpected:
            _ckpt(lib).checkpoint(use_reentrant=False, foo=1)
        texts.append((str(record[0].message), str(info.value), str(unexpected.value)))
    assert texts[1] == texts[0]
