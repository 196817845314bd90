"""alpha_dropout, feature_alpha_dropout, dropout1d, dropout3d, rrelu in training, gumbel_softmax
and their modules: what torch's random ops promise (the identity in evaluation, the values a
kept or dropped entry can take, the masks' shapes, statistics, gradients of the kept entries),
errors and reprs. The draws come from rustgrad's generator, so they are not torch's."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_error, parity

ALPHA = 1.7580993408473766


def _alpha_values(p: float) -> tuple:
    a = 1.0 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    return a, a * ALPHA * p - ALPHA * a  # (scale of a kept entry, value of a dropped one)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout", "dropout1d",
                                  "dropout3d"])
def test_the_identity_when_not_training_or_p_is_zero(name, device):
    shape = (2, 3, 4, 2, 2) if name == "dropout3d" else (2, 3, 4)
    check(lambda L, x: getattr(F(L), name)(x, 0.4, training=False), shape, device=device)
    check(lambda L, x: getattr(F(L), name)(x, 0.0, training=True), shape, device=device)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_values_and_gradient(p, device):
    rustgrad.manual_seed(0)
    x = (rustgrad.rand(400, 5, device=device) + 0.5).requires_grad_()
    y = F(rustgrad).alpha_dropout(x, p, training=True)
    assert y.grad_fn.name() == "AddBackward0"
    a, dropped = _alpha_values(p)
    yd, xd = y.detach().cpu().numpy(), x.detach().cpu().numpy()
    kept = ~np.isclose(yd, dropped)
    np.testing.assert_allclose(yd[kept], xd[kept] * a + a * ALPHA * p, rtol=1e-5)
    assert abs((~kept).mean() - p) < 0.05
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(kept, a, 0.0), rtol=1e-6)


def test_alpha_dropout_keeps_a_standard_normal_standard():
    rustgrad.manual_seed(1)
    y = F(rustgrad).alpha_dropout(rustgrad.randn(200000), 0.3, training=True)
    assert abs(y.mean().item()) < 0.02 and abs(y.std().item() - 1) < 0.02


def test_feature_alpha_dropout_drops_whole_channels(device):
    rustgrad.manual_seed(0)
    x = rustgrad.ones(8, 6, 3, 3, device=device)
    y = F(rustgrad).feature_alpha_dropout(x, 0.5, training=True).cpu().numpy()
    a, dropped = _alpha_values(0.5)
    per_channel = y.reshape(8, 6, 9)
    assert np.allclose(per_channel, per_channel[:, :, :1])  # one draw per (sample, channel)
    firsts = per_channel[:, :, 0].ravel()
    values = np.array([a + a * ALPHA * 0.5, dropped], dtype=np.float32)
    assert np.isclose(firsts[:, None], values[None]).any(1).all()
    assert np.isclose(firsts, values[0]).any() and np.isclose(firsts, values[1]).any()
    # torch's values for a kept and a dropped entry of ones are the same two
    t = torch.nn.functional.feature_alpha_dropout(torch.ones(64, 2), 0.5, True).numpy().ravel()
    assert np.isclose(t[:, None], values[None]).any(1).all()


def test_p_one_gives_zeros_as_torch(device):
    check(lambda L, x: (F(L).alpha_dropout(x, 1.0, True), F(L).dropout1d(x, 1.0),
                        F(L).feature_alpha_dropout(x, 1.0, True)), (2, 3, 4), device=device,
          grad_fn=False)


@pytest.mark.parametrize("name,shape,mask", [
    ("dropout1d", (6, 5, 7), (6, 5, 1)), ("dropout1d", (5, 7), (5, 1)),
    ("dropout3d", (4, 5, 2, 3, 3), (4, 5, 1, 1, 1)), ("dropout3d", (5, 2, 3, 3), (5, 1, 1, 1)),
])
def test_channel_dropouts_drop_whole_channels(name, shape, mask, device):
    rustgrad.manual_seed(0)
    x = rustgrad.ones(shape, device=device, requires_grad=True)
    y = getattr(F(rustgrad), name)(x, 0.4)
    yd = y.detach().cpu().numpy()
    assert np.isclose(yd.ravel()[:, None], np.array([0.0, 1 / 0.6])[None]).any(1).all()
    assert np.array_equal(yd, np.broadcast_to(yd[tuple(slice(0, 1) if m == 1 else slice(None)
                                                       for m in mask)], shape))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), yd)


def test_channel_dropout_errors_and_warnings_match_torch(device):
    check_error(lambda L, x: F(L).dropout1d(x, 0.5), (2, 3, 4, 5), device=device,
                phrase="dropout1d: Expected 2D or 3D input, but received a 4D input")
    check_error(lambda L, x: F(L).alpha_dropout(x, 1.5), (3,), device=device,
                phrase="dropout probability has to be between 0 and 1, but got 1.5")
    check_error(lambda L, x: F(L).feature_alpha_dropout(x, 0.5, True), (3,), device=device,
                phrase="Feature dropout requires at least 2 dimensions in the input")
    for lib in (torch, rustgrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.functional.dropout3d(lib.ones(2, 3, 4), 0.5, training=False)
        assert any("dropout3d: Received a 3-D input to dropout3d" in str(w.message)
                   for w in caught)


def test_inplace_dropouts_write_into_the_input():
    rustgrad.manual_seed(0)
    x = rustgrad.ones(4, 3, 2)
    out = F(rustgrad).alpha_dropout(x, 0.5, True, inplace=True)
    assert out is x and x._version == 1
    y = rustgrad.ones(4, 3, 2)
    assert F(rustgrad).dropout1d(y, 0.5, inplace=True) is y and y._version == 1


def test_rrelu_training_draws_slopes_within_bounds(device):
    rustgrad.manual_seed(0)
    x = rustgrad.linspace(-3, 3, 600, device=device).requires_grad_()
    y = F(rustgrad).rrelu(x * 1, 0.1, 0.3, training=True)
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    xd, yd = x.detach().cpu().numpy(), y.detach().cpu().numpy()
    slopes = yd[xd < 0] / xd[xd < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert np.array_equal(yd[xd > 0], xd[xd > 0])
    noise = y.grad_fn._saved_noise.cpu().numpy()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), noise)
    np.testing.assert_allclose(noise[xd < 0], slopes, rtol=1e-6)


def test_rrelu_inplace_training_and_module_modes():
    rustgrad.manual_seed(0)
    x = rustgrad.tensor([-1.0, -2.0, 3.0], requires_grad=True)
    y = x * 1
    out = F(rustgrad).rrelu_(y, 0.2, 0.4, training=True)
    assert out is y and y.grad_fn.name() == "RreluWithNoiseBackward1"
    assert 0.2 <= -y[0].item() <= 0.4 and y[2].item() == 3.0
    m = rustgrad.nn.RReLU(0.1, 0.3)
    drawn = m(-rustgrad.ones(1000)).numpy()  # training: a slope per element
    assert m.training and np.unique(drawn).size > 900 and -0.3 <= drawn.min() <= drawn.max() <= -0.1
    assert m.eval()(rustgrad.tensor([-1.0])).item() == pytest.approx(-0.2)


def test_gumbel_softmax_samples(device):
    rustgrad.manual_seed(0)
    logits = rustgrad.tensor([[0.0, 1.0, 3.0]] * 4000, device=device, requires_grad=True)
    soft = F(rustgrad).gumbel_softmax(logits, tau=0.5)
    assert soft.grad_fn.name() == "SoftmaxBackward0"
    np.testing.assert_allclose(soft.sum(-1).detach().cpu().numpy(), 1.0, rtol=1e-6)
    hard = F(rustgrad).gumbel_softmax(logits, hard=True)
    assert hard.grad_fn.name() == "AddBackward0"
    hd = hard.detach().cpu().numpy()
    assert set(np.unique(hd)) <= {0.0, 1.0} and (hd.sum(-1) == 1).all()
    # the category frequencies follow softmax(logits)
    freq = hd.mean(0)
    np.testing.assert_allclose(freq, np.exp([0, 1, 3]) / np.exp([0, 1, 3]).sum(), atol=0.03)
    (hard * rustgrad.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.cpu().numpy()).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F(rustgrad).gumbel_softmax(logits, eps=1e-5)


@pytest.mark.parametrize("make", [
    lambda nn: nn.AlphaDropout(), lambda nn: nn.FeatureAlphaDropout(0.2, True),
    lambda nn: nn.Dropout3d(0.3), lambda nn: nn.Dropout1d(0.1, True),
    lambda nn: nn.RReLU(0.1, 0.3),
])
def test_module_reprs_and_eval_match_torch(make):
    def program(lib):
        m = make(lib.nn).eval()
        x = lib.tensor(np.linspace(-2, 2, 24).reshape(1, 2, 3, 2, 2))
        return repr(m), list(m.state_dict()), m(x if "3d" in repr(m) else x[0, :, :, 0])

    parity(program)
