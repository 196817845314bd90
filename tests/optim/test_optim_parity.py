"""Optimizers against torch: loss at every step and every parameter after 10 steps of an MLP
and a CNN (same initial weights and data), state_dict layout, resuming, param groups, flags
and errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_states_close, cnn, copy_state, mlp, twin

rng = np.random.default_rng(0)
DATA = {
    "mlp": (rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 4, 32)),
    "cnn": (rng.standard_normal((16, 1, 8, 8)).astype(np.float32), rng.integers(0, 4, 16)),
}
BUILD = {"mlp": mlp, "cnn": cnn}

# Per-element normalizing optimizers (RMSprop with momentum) turn the ~1e-6 relative differences
# of tiny gradient entries (summation order of the BLAS kernels) into ~1e-5 differences of the
# updates; these configs get a looser tolerance.
LOOSE = {("RMSprop", True)}

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    ("SGD", dict(lr=0.005, momentum=0.9, dampening=0.2, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1, betas=(0.8, 0.99))),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.5, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01,
                     initial_accumulator_value=0.1)),
]


def _train(lib, model, opt, x, y, steps):
    F = lib.nn.functional
    xt, yt = lib.tensor(x), lib.tensor(y)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("name,kwargs", CONFIGS,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
def test_optimizer_10_steps_loss_and_params_equal_torch(arch, name, kwargs):
    tm, rm = twin(BUILD[arch])
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)
    x, y = DATA[arch]

    tl = _train(torch, tm, to, x, y, 10)
    rl = _train(rustgrad, rm, ro, x, y, 10)

    loose = (name, bool(kwargs.get("momentum"))) in LOOSE
    np.testing.assert_allclose(rl, tl, rtol=1e-5, atol=1e-6)
    assert_states_close(rm, tm, rtol=1e-4 if loose else 1e-5, atol=2e-5 if loose else 2e-6)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
def test_optimizer_state_dict_layout_equals_torch(name, kwargs):
    tm, rm = twin(mlp)
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)
    _train(torch, tm, to, *DATA["mlp"], 2)
    _train(rustgrad, rm, ro, *DATA["mlp"], 2)

    ts, rs = to.state_dict(), ro.state_dict()

    assert rs["param_groups"] == ts["param_groups"]
    assert list(rs["state"]) == list(ts["state"])
    for i in ts["state"]:
        assert list(rs["state"][i]) == list(ts["state"][i])
        for k, tv in ts["state"][i].items():
            rv = rs["state"][i][k]
            if isinstance(tv, torch.Tensor):
                assert str(rv.dtype) == str(tv.dtype) and tuple(rv.shape) == tuple(tv.shape)
                # buffers hold per-element ratios of gradients: see LOOSE above
                np.testing.assert_allclose(rv.numpy(), tv.numpy(), rtol=1e-4, atol=1e-5)
            else:
                assert rv == tv


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::2], ids=[n for n, _ in CONFIGS[1::2]])
def test_optimizer_load_state_dict_resumes_identically(name, kwargs):
    _, a = twin(mlp)
    b = copy.deepcopy(a)
    oa = getattr(rustgrad.optim, name)(a.parameters(), **kwargs)
    _train(rustgrad, a, oa, *DATA["mlp"], 3)
    copy_state(a, b, rustgrad)
    ob = getattr(rustgrad.optim, name)(b.parameters(), **kwargs)
    ob.load_state_dict(copy.deepcopy(oa.state_dict()))

    la = _train(rustgrad, a, oa, *DATA["mlp"], 3)
    lb = _train(rustgrad, b, ob, *DATA["mlp"], 3)

    assert la == lb
    assert_states_close(b, a, 0, 0)


def test_optimizer_param_groups_with_own_lr_equal_torch():
    tm, rm = twin(mlp)
    groups = lambda m: [{"params": m[0].parameters(), "lr": 0.5},  # noqa: E731
                        {"params": list(m[2].parameters()) + list(m[4].parameters())}]
    to = torch.optim.SGD(groups(tm), lr=0.01, momentum=0.5)
    ro = rustgrad.optim.SGD(groups(rm), lr=0.01, momentum=0.5)

    _train(torch, tm, to, *DATA["mlp"], 5)
    _train(rustgrad, rm, ro, *DATA["mlp"], 5)

    assert [g["lr"] for g in ro.param_groups] == [0.5, 0.01]
    assert_states_close(rm, tm, 1e-5, 1e-6)


def test_optimizer_add_param_group_takes_defaults(lib):
    a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
    opt = lib.optim.Adam(a.parameters(), lr=0.1)

    opt.add_param_group({"params": b.parameters(), "eps": 1e-3})

    assert len(opt.param_groups) == 2
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["eps"] == 1e-3


def test_optimizer_step_skips_parameters_without_grad(lib):
    used, unused = lib.nn.Linear(2, 1), lib.nn.Linear(2, 1)
    opt = lib.optim.Adam(list(used.parameters()) + list(unused.parameters()), lr=0.1,
                         weight_decay=0.1)
    before = unused.weight.detach().clone()

    used(lib.ones(1, 2)).sum().backward()
    opt.step()

    assert unused.weight.tolist() == before.tolist()
    assert len(opt.state) == 2 and unused.weight not in opt.state


def test_optimizer_step_is_in_place_and_records_nothing(lib):
    lin = lib.nn.Linear(2, 1)
    w = lin.weight
    ptr, v = w.data_ptr(), w._version
    opt = lib.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

    lin(lib.ones(1, 2)).sum().backward()
    opt.step()

    assert lin.weight is w and w.data_ptr() == ptr and w._version > v
    assert w.is_leaf and w.grad_fn is None and w.requires_grad


def test_optimizer_step_after_forward_invalidates_saved_weight(lib):
    lin = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    x = lib.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    out = (lin(x) * lin.weight).sum()  # saves the weight

    opt.step()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_optimizer_zero_grad_default_sets_none_and_false_zeroes(lib):
    lin = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    lin(lib.ones(1, 2)).sum().backward()
    g = lin.weight.grad

    opt.zero_grad(set_to_none=False)
    kept = lin.weight.grad
    opt.zero_grad()

    assert kept is g and kept.tolist() == [[0.0, 0.0]]
    assert lin.weight.grad is None


def test_optimizer_closure_runs_with_grad_and_returns_loss(lib):
    lin = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)

    def closure():
        opt.zero_grad()
        loss = lin(lib.ones(1, 2)).sum()
        loss.backward()
        return loss

    with lib.no_grad():
        loss = opt.step(closure)

    assert loss.requires_grad and lin.weight.grad is not None


def test_optimizer_step_hooks_run_around_step(lib):
    lin = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    log = []
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    h = opt.register_step_post_hook(lambda o, a, k: log.append("post"))

    opt.step()
    h.remove()
    opt.step()

    assert log == ["pre", "post", "pre"]


def test_optimizer_repr_equals_torch():
    for name, kwargs in [("SGD", {"lr": 0.1}), ("Adam", {}), ("AdamW", {}), ("RMSprop", {}),
                         ("Adagrad", {})]:
        t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
        r = getattr(rustgrad.optim, name)([rustgrad.zeros(1, requires_grad=True)], **kwargs)
        assert repr(r) == repr(t)


def test_optimizer_empty_params_raises_value_error(lib):
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        lib.optim.SGD([], lr=0.1)


def test_optimizer_tensor_instead_of_iterable_raises_type_error(lib):
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got torch.FloatTensor"):
        lib.optim.SGD(lib.zeros(2, requires_grad=True), lr=0.1)


def test_optimizer_non_leaf_raises_value_error(lib):
    x = lib.zeros(2, requires_grad=True)

    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        lib.optim.SGD([x * 2], lr=0.1)


def test_optimizer_parameter_in_two_groups_raises_value_error(lib):
    p = lib.nn.Parameter(lib.zeros(2))

    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_optimizer_invalid_hyperparameters_raise_value_error(lib):
    p = [lib.nn.Parameter(lib.zeros(2))]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        lib.optim.Adam(p, lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        lib.optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        lib.optim.SGD(p, lr=0.1, nesterov=True)


def test_optimizer_named_parameters_store_param_names(lib):
    lin = lib.nn.Linear(2, 1)

    opt = lib.optim.SGD(lin.named_parameters(), lr=0.1)

    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_optimizer_float64_model_matches_torch():
    tm, rm = twin(mlp)
    tm.double()
    rm.double()
    to = torch.optim.Adam(tm.parameters(), lr=1e-2)
    ro = rustgrad.optim.Adam(rm.parameters(), lr=1e-2)
    x, y = DATA["mlp"]

    _train(torch, tm, to, x.astype(np.float64), y, 10)
    _train(rustgrad, rm, ro, x.astype(np.float64), y, 10)

    assert_states_close(rm, tm, rtol=1e-10, atol=1e-12)


def test_load_state_dict_casts_tensors_in_lists_into_fresh_lists(lib):
    x = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.LBFGS([x], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((x - 3) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    y = lib.nn.Parameter(lib.tensor([1.0, 2.0], dtype=lib.float64))
    o2 = lib.optim.LBFGS([y])
    o2.load_state_dict(opt.state_dict())
    assert o2.state[y]["old_dirs"][0].dtype == lib.float64
    assert o2.state[y]["old_dirs"] is not opt.state[x]["old_dirs"]


def test_step_counter_follows_a_float64_default_dtype(lib):
    prev = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.Adam([p])
        p.sum().backward()
        opt.step()
        assert opt.state[p]["step"].dtype == lib.float64
    finally:
        lib.set_default_dtype(prev)
