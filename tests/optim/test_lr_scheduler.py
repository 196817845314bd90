"""lr_scheduler against torch: the learning rate (and momentum) sequence over many steps, the
closed form of step(epoch), state_dict round trips and torch's ordering warning; CyclicLR's
lr/momentum sequences in every mode, its errors and state_dict round trip."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import parity, same_error


def _opt(lib, name="SGD", **kw):
    params = [lib.zeros(2, requires_grad=True)]
    groups = [{"params": params}, {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5}]
    kw.setdefault("lr", 0.1)
    if name == "SGD":
        kw.setdefault("momentum", 0.9)
    return getattr(lib.optim, name)(groups, **kw)


SCHEDULERS = [
    ("StepLR", lambda L, o: L.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5, 9], 0.3)),
    ("ExponentialLR", lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    ("CosineAnnealingLR", lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.01)),
    ("LambdaLR", lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e))),
    ("LambdaLR_per_group", lambda L, o: L.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 0.9**e, lambda e: e + 1])),
    ("MultiplicativeLR", lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95)),
    ("LinearLR", lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 6)),
    ("ConstantLR", lambda L, o: L.optim.lr_scheduler.ConstantLR(o, 0.5, 4)),
    ("PolynomialLR", lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, 8, 2.0)),
    ("CosineAnnealingWarmRestarts", lambda L, o:
        L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 4, 2, 0.001)),
    ("OneCycleLR", lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, [1.0, 2.0],
                                                                total_steps=20)),
    ("OneCycleLR_linear_three_phase", lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, 1.0, epochs=4, steps_per_epoch=5, anneal_strategy="linear", three_phase=True)),
    ("SequentialLR", lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=3),
            L.optim.lr_scheduler.ExponentialLR(o, 0.8)], milestones=[3])),
    ("ChainedScheduler", lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, 0.5, 3),
         L.optim.lr_scheduler.ExponentialLR(o, 0.9)])),
]


def _lrs(lib, build, steps=19, opt_name="SGD"):
    opt = _opt(lib, opt_name)
    sched = build(lib, opt)
    seq = [[g["lr"] for g in opt.param_groups]]
    moms = []
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append([g["lr"] for g in opt.param_groups])
        moms.append([g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups])
    return seq, moms, sched.get_last_lr()


@pytest.mark.filterwarnings("ignore:The epoch parameter")  # SequentialLR, as torch's, uses it
@pytest.mark.parametrize("case", SCHEDULERS, ids=[c[0] for c in SCHEDULERS])
def test_scheduler_lr_sequence_equals_torch(case):
    _, build = case

    ts, tm, tl = _lrs(torch, build)
    rs, rm, rl = _lrs(rustgrad, build)

    np.testing.assert_allclose(rs, ts, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rl, tl, rtol=1e-12)
    np.testing.assert_allclose(rm, tm, rtol=1e-12)


def test_one_cycle_cycles_adam_beta1_like_torch():
    build = SCHEDULERS[11][1]

    ts, tm, _ = _lrs(torch, build, opt_name="Adam")
    rs, rm, _ = _lrs(rustgrad, build, opt_name="Adam")

    np.testing.assert_allclose(rs, ts, rtol=1e-12)
    np.testing.assert_allclose(rm, tm, rtol=1e-12)
    assert min(m for m, _ in rm) < 0.9


@pytest.mark.parametrize("name,build", [(n, b) for n, b in SCHEDULERS
                                        if n in ("StepLR", "MultiStepLR", "ExponentialLR",
                                                 "CosineAnnealingLR", "LinearLR")])
def test_scheduler_step_with_epoch_uses_closed_form_like_torch(name, build):
    out = {}
    for lib in (torch, rustgrad):
        opt = _opt(lib)
        sched = build(lib, opt)
        opt.step()
        with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
            sched.step(5)
        out[lib.__name__] = [g["lr"] for g in opt.param_groups]

    np.testing.assert_allclose(out["rustgrad"], out["torch"], rtol=1e-12)


def test_reduce_lr_on_plateau_sequence_equals_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7]
    seqs = {}
    for lib in (torch, rustgrad):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1,
                                                         cooldown=1, min_lr=[0.01, 0.2])
        seq = []
        for m in metrics:
            opt.step()
            sched.step(m)
            seq.append(sched.get_last_lr())
        seqs[lib.__name__] = seq

    assert seqs["rustgrad"] == seqs["torch"]


def test_reduce_lr_on_plateau_max_mode_abs_threshold_like_torch():
    seqs = {}
    for lib in (torch, rustgrad):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, "max", 0.1, 0, 0.05, "abs")
        for m in [0.5, 0.52, 0.6, 0.61]:
            sched.step(m)
        seqs[lib.__name__] = (sched.get_last_lr(), sched.best, sched.num_bad_epochs)

    assert seqs["rustgrad"] == seqs["torch"]


def test_scheduler_sets_initial_lr_and_base_lrs(lib):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)

    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert sched.base_lrs == [0.1, 0.5] and sched.last_epoch == 0


def test_scheduler_resume_without_initial_lr_raises_key_error(lib):
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        lib.optim.lr_scheduler.StepLR(_opt(lib), 2, last_epoch=3)


def test_scheduler_resume_without_initial_lr_message_equals_torch():
    messages = []
    for lib in (torch, rustgrad):
        with pytest.raises(KeyError) as info:
            lib.optim.lr_scheduler.StepLR(_opt(lib), 2, last_epoch=3)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_optimizer_over_a_set_of_parameters_warns_as_torch(lib):
    x = lib.zeros(2, requires_grad=True)
    with pytest.warns(FutureWarning, match="the ordering of tensors in sets will change between "
                                           "runs. Please use a list instead. This will be an "
                                           "error in a future release."):
        opt = lib.optim.SGD({x}, lr=0.1)
    assert opt.param_groups[0]["params"][0] is x


def test_scheduler_step_before_optimizer_step_warns(lib):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)

    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before "
                                         "`optimizer.step\\(\\)`"):
        sched.step()


def test_scheduler_after_optimizer_step_does_not_warn(lib):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_scheduler_state_dict_round_trip_continues_sequence(lib):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, 10)
    for _ in range(4):
        opt.step()
        sched.step()
    state = sched.state_dict()
    expected = []
    for _ in range(3):
        opt.step()
        sched.step()
        expected.append(sched.get_last_lr())

    opt2 = _opt(lib)
    for g, lr in zip(opt2.param_groups, [0.1, 0.5]):
        g["initial_lr"] = lr
    sched2 = lib.optim.lr_scheduler.CosineAnnealingLR(opt2, 10, last_epoch=0)
    sched2.load_state_dict(state)
    for g, lr in zip(opt2.param_groups, state["_last_lr"]):
        g["lr"] = lr
    got = []
    for _ in range(3):
        opt2.step()
        sched2.step()
        got.append(sched2.get_last_lr())

    assert got == expected
    assert "optimizer" not in state


def test_scheduler_get_lr_outside_step_warns(lib):
    sched = lib.optim.lr_scheduler.ExponentialLR(_opt(lib), 0.5)

    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_one_cycle_too_many_steps_raises_value_error(lib):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=2)
    opt.step()
    sched.step()
    sched.step()

    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()


def test_cosine_annealing_reaches_eta_min_at_t_max():
    opt = _opt(rustgrad)
    sched = rustgrad.optim.lr_scheduler.CosineAnnealingLR(opt, 5, eta_min=0.01)
    for _ in range(5):
        opt.step()
        sched.step()

    assert sched.get_last_lr()[0] == pytest.approx(0.01)
    assert math.isclose(sched.get_last_lr()[1], 0.01)


# ---- CyclicLR -----------------------------------------------------------------------------------
CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5, mode="triangular2"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range", gamma=0.9),
    dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.05], step_size_up=3, base_momentum=0.7,
         max_momentum=[0.95, 0.9]),
    dict(base_lr=0.001, max_lr=0.01, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
         scale_mode="iterations"),
    dict(base_lr=0.001, max_lr=0.01, step_size_up=2, cycle_momentum=False),
]


@pytest.mark.parametrize("kw", CYCLIC, ids=[str(i) for i in range(len(CYCLIC))])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_cyclic_lr_matches_torch(kw: dict, opt: str) -> None:
    def prog(L: Any) -> Any:
        a, b = L.nn.Parameter(L.ones(2)), L.nn.Parameter(L.ones(3))
        extra = dict(momentum=0.9) if opt == "SGD" else {}
        o = getattr(L.optim, opt)([{"params": [a]}, {"params": [b]}], lr=0.5, **extra)
        s = L.optim.lr_scheduler.CyclicLR(o, **kw)
        seq = []
        for _ in range(15):
            o.step()
            s.step()
            groups = [{k: g[k] for k in ("lr", "momentum", "betas") if k in g}
                      for g in o.param_groups]
            seq.append((s.get_last_lr(), groups))
        state = s.state_dict()
        keys = sorted(k for k in state if k not in ("_scale_fn_ref",))
        return seq, keys, s.last_epoch
    parity(prog, rtol=1e-12, atol=1e-15)


def test_cyclic_lr_errors_match_torch() -> None:
    def sgd(L: Any, **kw: Any) -> Any:
        return L.optim.SGD([L.nn.Parameter(L.ones(2))], lr=0.1, **kw)
    same_error(lambda L: L.optim.lr_scheduler.CyclicLR(sgd(L, momentum=0.9), 0.01, 0.1,
                                                       mode="bad"),
               "mode is invalid and scale_fn is None")
    same_error(lambda L: L.optim.lr_scheduler.CyclicLR(
        L.optim.Adagrad([L.nn.Parameter(L.ones(2))]), 0.01, 0.1),
        "optimizer must support momentum or beta1")
    same_error(lambda L: L.optim.lr_scheduler.CyclicLR(sgd(L, momentum=0.9), [0.01, 0.02], 0.1),
               "base_lr must have the same length as optimizer.param_groups")


def test_cyclic_lr_state_dict_round_trip() -> None:
    def prog(L: Any) -> Any:
        o = L.optim.SGD([L.nn.Parameter(L.ones(2))], lr=0.1, momentum=0.9)
        s = L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="triangular2")
        for _ in range(4):
            o.step()
            s.step()
        o2 = L.optim.SGD([L.nn.Parameter(L.ones(2))], lr=0.1, momentum=0.9)
        s2 = L.optim.lr_scheduler.CyclicLR(o2, 0.01, 0.1, step_size_up=3, mode="triangular2")
        s2.load_state_dict(s.state_dict())
        lrs = []
        for _ in range(5):
            o2.step()
            s2.step()
            lrs.append((s2.get_last_lr(), o2.param_groups[0]["momentum"]))
        return lrs, s.state_dict()["_scale_fn_custom"]
    parity(prog, rtol=1e-12)
