"""Whole training recipes, each written once and run under torch and rustgrad: freezing,
a GAN step with detach, a DQN target, feature extraction under no_grad, checkpoint resume."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, assert_states_close, copy_state, mlp, twin

rng = np.random.default_rng(0)
X = rng.standard_normal((16, 8)).astype(np.float32)
Y = rng.integers(0, 4, 16)


def test_freezing_requires_grad_false_leaves_frozen_weights_bit_identical(lib):
    lib.manual_seed(0)
    model = mlp(lib)
    for p in model[0].parameters():
        p.requires_grad_(False)
    frozen = [p.detach().clone() for p in model[0].parameters()]
    trainable = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trainable]
    opt = lib.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.5)

    for _ in range(3):
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(lib.tensor(X)), lib.tensor(Y)).backward()
        opt.step()

    for f, p in zip(frozen, model[0].parameters()):
        assert p.grad is None
        np.testing.assert_array_equal(p.detach().numpy(), f.numpy())
    assert all(not np.array_equal(b.numpy(), p.detach().numpy())
               for b, p in zip(before, trainable))
    assert len(trainable) == 4


def _gan(lib):
    nn = lib.nn
    g = nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2))
    d = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    return g, d


def _gan_step(lib, g, d, noise, real):
    F = lib.nn.functional
    opt_g = lib.optim.Adam(g.parameters(), lr=1e-2, betas=(0.5, 0.999))
    opt_d = lib.optim.Adam(d.parameters(), lr=1e-2, betas=(0.5, 0.999))
    noise, real = lib.tensor(noise), lib.tensor(real)
    ones, zeros = lib.ones(len(real), 1), lib.zeros(len(real), 1)
    fake = g(noise)
    # discriminator step on detached fakes: the generator gets no gradient
    opt_d.zero_grad()
    d_loss = F.binary_cross_entropy_with_logits(d(real), ones) + \
        F.binary_cross_entropy_with_logits(d(fake.detach()), zeros)
    d_loss.backward()
    g_grads_after_d = [p.grad for p in g.parameters()]
    opt_d.step()
    # generator step through the updated discriminator
    opt_g.zero_grad()
    g_loss = F.binary_cross_entropy_with_logits(d(fake), ones)
    g_loss.backward()
    opt_g.step()
    return d_loss.item(), g_loss.item(), g_grads_after_d


def test_gan_step_detach_leaves_generator_grads_none_and_equals_torch():
    (tg, td), (rg, rd) = _twin_gan()
    noise = rng.standard_normal((8, 3)).astype(np.float32)
    real = rng.standard_normal((8, 2)).astype(np.float32) + 2

    td_loss, tg_loss, t_none = _gan_step(torch, tg, td, noise, real)
    rd_loss, rg_loss, r_none = _gan_step(rustgrad, rg, rd, noise, real)

    assert r_none == [None] * 4 and t_none == [None] * 4
    assert rd_loss == pytest.approx(td_loss, rel=1e-6)
    assert rg_loss == pytest.approx(tg_loss, rel=1e-6)
    assert_states_close(rg, tg, 1e-5, 1e-6)
    assert_states_close(rd, td, 1e-5, 1e-6)


def _twin_gan():
    torch.manual_seed(0)
    tg, td = _gan(torch)
    rg, rd = _gan(rustgrad)
    copy_state(tg, rg, rustgrad)
    copy_state(td, rd, rustgrad)
    return (tg, td), (rg, rd)


def _dqn_step(lib, policy, target, s, a, r, s2, done):
    F = lib.nn.functional
    opt = lib.optim.RMSprop(policy.parameters(), lr=1e-3)
    s, a, r, s2, done = (lib.tensor(v) for v in (s, a, r, s2, done))
    q = policy(s).gather(1, a.unsqueeze(1)).squeeze(1)
    next_q = target(s2).max(1)[0].detach()
    expected = r + 0.99 * next_q * (1 - done)
    loss = F.smooth_l1_loss(q, expected)
    opt.zero_grad()
    loss.backward()
    for p in policy.parameters():
        p.grad.clamp_(-1, 1)
    opt.step()
    return loss.item(), next_q, [p.grad for p in target.parameters()]


def test_dqn_target_max_detach_trains_policy_only_and_equals_torch():
    tp, rp = twin(mlp)
    tt, rt = copy.deepcopy(tp), copy.deepcopy(rp)
    s = rng.standard_normal((10, 8)).astype(np.float32)
    s2 = rng.standard_normal((10, 8)).astype(np.float32)
    a = rng.integers(0, 4, 10)
    r = rng.standard_normal(10).astype(np.float32)
    done = (rng.random(10) < 0.3).astype(np.float32)

    tl, tnq, tgrads = _dqn_step(torch, tp, tt, s, a, r, s2, done)
    rl, rnq, rgrads = _dqn_step(rustgrad, rp, rt, s, a, r, s2, done)

    assert not rnq.requires_grad and rnq.grad_fn is None
    assert rgrads == [None] * 6 and tgrads == [None] * 6
    assert rl == pytest.approx(tl, rel=1e-6)
    assert_states_close(rp, tp, 1e-5, 1e-6)
    assert_states_close(rt, tt, 0, 0)


def test_feature_extraction_under_no_grad_trains_classifier_only(lib):
    lib.manual_seed(0)
    backbone = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU())
    head = lib.nn.Linear(16, 4)
    opt = lib.optim.SGD(head.parameters(), lr=0.1)
    before = [p.detach().clone() for p in backbone.parameters()]

    with lib.no_grad():
        feats = backbone(lib.tensor(X))
    loss = lib.nn.functional.cross_entropy(head(feats), lib.tensor(Y))
    loss.backward()
    opt.step()

    assert not feats.requires_grad and feats.is_leaf
    assert all(p.grad is None for p in backbone.parameters())
    assert all(p.grad is not None for p in head.parameters())
    for b, p in zip(before, backbone.parameters()):
        np.testing.assert_array_equal(b.numpy(), p.detach().numpy())


def test_feature_extraction_step_equals_torch():
    tm, rm = twin(mlp)
    out = {}
    for lib, m in ((torch, tm), (rustgrad, rm)):
        opt = lib.optim.Adam(m[4].parameters(), lr=1e-2)
        with lib.no_grad():
            feats = m[:4](lib.tensor(X))
        loss = lib.nn.functional.cross_entropy(m[4](feats), lib.tensor(Y))
        loss.backward()
        opt.step()
        out[lib.__name__] = loss.item()

    assert out["rustgrad"] == pytest.approx(out["torch"], rel=1e-6)
    assert_states_close(rm, tm, 1e-5, 1e-6)


def _train(model, opt, sched, steps):
    F = rustgrad.nn.functional
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(rustgrad.tensor(X)), rustgrad.tensor(Y)).backward()
        opt.step()
        sched.step()


def test_checkpoint_save_load_resumes_bit_identically():
    rustgrad.manual_seed(0)
    a = mlp(rustgrad)
    oa = rustgrad.optim.AdamW(a.parameters(), lr=1e-2, amsgrad=True)
    sa = rustgrad.optim.lr_scheduler.StepLR(oa, 2, 0.5)
    _train(a, oa, sa, 3)
    buf = io.BytesIO()
    rustgrad.save({"model": a.state_dict(), "opt": oa.state_dict(), "sched": sa.state_dict(),
                   "epoch": 3}, buf)
    buf.seek(0)

    ckpt = rustgrad.load(buf)
    rustgrad.manual_seed(1)
    b = mlp(rustgrad)
    b.load_state_dict(ckpt["model"])
    ob = rustgrad.optim.AdamW(b.parameters(), lr=1e-2, amsgrad=True)
    ob.load_state_dict(ckpt["opt"])
    sb = rustgrad.optim.lr_scheduler.StepLR(ob, 2, 0.5)
    sb.load_state_dict(ckpt["sched"])
    _train(a, oa, sa, 3)
    _train(b, ob, sb, 3)

    assert ckpt["epoch"] == 3
    assert [g["lr"] for g in ob.param_groups] == [g["lr"] for g in oa.param_groups]
    assert_states_close(b, a, 0, 0)
    for pa, pb in zip(a.parameters(), b.parameters()):
        for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"):
            np.testing.assert_array_equal(oa.state[pa][k].numpy(), ob.state[pb][k].numpy())


def test_training_loop_with_grad_clipping_and_scheduler_equals_torch():
    tm, rm = twin(mlp)
    losses = {}
    for lib, m in ((torch, tm), (rustgrad, rm)):
        opt = lib.optim.SGD(m.parameters(), lr=0.2, momentum=0.9)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 0.5, total_steps=8)
        seq = []
        for _ in range(8):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(X)), lib.tensor(Y))
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            sched.step()
            seq.append(loss.item())
        losses[lib.__name__] = seq

    np.testing.assert_allclose(losses["rustgrad"], losses["torch"], rtol=1e-5)
    assert_states_close(rm, tm, 1e-5, 2e-6)


def test_eval_mode_and_no_grad_inference_matches_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                             nn.Linear(16, 4))

    tm, rm = twin(build)
    for lib, m in ((torch, tm), (rustgrad, rm)):
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        m.train()
        m[3].p = 0.0  # the two libraries' dropout masks differ; keep training identical
        lib.nn.functional.cross_entropy(m(lib.tensor(X)), lib.tensor(Y)).backward()
        opt.step()
        m[3].p = 0.5
        m.eval()

    with torch.no_grad():
        to = tm(torch.tensor(X))
    with rustgrad.no_grad():
        ro = rm(rustgrad.tensor(X))

    assert not ro.requires_grad
    assert_close(ro, to, 1e-5, 1e-5)
    assert_states_close(rm, tm, 1e-5, 1e-6)
