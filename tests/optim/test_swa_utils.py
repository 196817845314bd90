"""optim.swa_utils against torch: AveragedModel (SWA and EMA, per-tensor and per-list
averaging functions, buffers), SWALR's schedules, update_bn, and a whole SWA training run, with
rustgrad's models on each device."""

from __future__ import annotations

import math
import pickle
import warnings
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import rustgrad
import torch

RNG = np.random.default_rng(4)
X = RNG.standard_normal((24, 3))
Y = RNG.standard_normal((24, 1))


def np_of(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def on(lib: Any, device: str) -> str:
    return "cpu" if lib is torch else device


def tol(device: str) -> Dict[str, float]:
    # on a GPU torch averages with a lerp whose weight is a float32 tensor (its foreach path),
    # which rustgrad follows there; the oracle runs on the CPU
    return dict(rtol=1e-10, atol=1e-12) if device == "cpu" else dict(rtol=1e-6, atol=1e-7)


def model(lib: Any, device: str, seed: int = 0) -> Any:
    """Linear -> BatchNorm -> ReLU -> Linear with fixed weights, in float64."""
    nn = lib.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1)).double()
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    return m.to(on(lib, device))


def perturb(lib: Any, m: Any, step: int) -> None:
    """A deterministic 'training step': new parameters and BatchNorm statistics."""
    rng = np.random.default_rng(100 + step)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)), device=p.device))
        m[1].running_mean.add_(0.5 * step)
        m[1].num_batches_tracked.add_(step)


def both(fn: Callable[[Any, str], Any], device: str) -> List[Any]:
    return [fn(torch, device), fn(rustgrad, device)]


def swa_utils(lib: Any) -> Any:
    return lib.optim.swa_utils


def states(m: Any) -> Dict[str, np.ndarray]:
    return {k: np_of(v) for k, v in m.state_dict().items()}


def assert_states(r: Dict[str, np.ndarray], t: Dict[str, np.ndarray], device: str) -> None:
    assert list(r) == list(t)
    for k in t:
        assert r[k].dtype == t[k].dtype, k
        np.testing.assert_allclose(r[k], t[k], err_msg=k, **tol(device))


# ---- AveragedModel --------------------------------------------------------------------------------
AVERAGERS = {
    "default": lambda u: {},
    "swa_avg_fn": lambda u: dict(avg_fn=u.get_swa_avg_fn()),
    "ema_avg_fn": lambda u: dict(avg_fn=u.get_ema_avg_fn(0.9)),
    "swa_multi": lambda u: dict(multi_avg_fn=u.get_swa_multi_avg_fn()),
    "ema_multi": lambda u: dict(multi_avg_fn=u.get_ema_multi_avg_fn(0.75)),
    "custom": lambda u: dict(avg_fn=lambda avg, cur, n: 0.5 * avg + 0.5 * cur + n * 0),
}


@pytest.mark.parametrize("averager", list(AVERAGERS))
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_like_torch(device, averager, use_buffers):
    def run(lib, dev):
        m = model(lib, dev)
        avg = swa_utils(lib).AveragedModel(m, use_buffers=use_buffers, **AVERAGERS[averager](swa_utils(lib)))
        out = dict(type=type(avg).__name__, is_module=isinstance(avg, lib.nn.Module),
                   copied=avg.module is not m, names=[n for n, _ in avg.named_parameters()],
                   n0=int(avg.n_averaged), n_dtype=str(avg.n_averaged.dtype))
        history = []
        for step in range(4):
            perturb(lib, m, step)
            try:
                avg.update_parameters(m)
            except RuntimeError:
                # torch's per-list mean refuses integer buffers (its addcdiv): so must rustgrad
                assert averager == "swa_multi" and use_buffers and step == 1
                out["refused"] = True
                return out
            history.append(states(avg))
        x = lib.tensor(X, device=on(lib, dev))
        avg.eval()
        out.update(history=history, n=int(avg.n_averaged), y=np_of(avg(x)),
                   grad_free=all(p.grad is None for p in avg.parameters()))
        return out

    t, r = both(run, device)
    assert r.get("refused") == t.get("refused")
    if t.get("refused"):
        return
    for k in ("type", "is_module", "copied", "names", "n0", "n_dtype", "n", "grad_free"):
        assert r[k] == t[k], k
    for rs, ts in zip(r["history"], t["history"]):
        assert_states(rs, ts, device)
    np.testing.assert_allclose(r["y"], t["y"], **tol(device))
    assert list(r["history"][0])[0] == "n_averaged"


def test_the_default_average_is_the_mean_of_the_models(device):
    m = model(rustgrad, device)
    avg = rustgrad.optim.swa_utils.AveragedModel(m)
    seen = []
    for step in range(5):
        perturb(rustgrad, m, step)
        seen.append(np_of(m[0].weight))
        avg.update_parameters(m)
    np.testing.assert_allclose(np_of(avg.module[0].weight), np.mean(seen, axis=0), **tol(device))
    assert int(avg.n_averaged) == 5


def test_averaged_model_on_another_device(device):
    m = model(rustgrad, "cpu")
    avg = rustgrad.optim.swa_utils.AveragedModel(m, device=device)
    assert all(p.device.type == device for p in avg.parameters())
    assert avg.n_averaged.device.type == device
    assert all(p.device.type == "cpu" for p in m.parameters())
    perturb(rustgrad, m, 1)
    avg.update_parameters(m)
    np.testing.assert_allclose(np_of(avg.module[0].weight), np_of(m[0].weight))


def test_averaged_model_errors_like_torch():
    for lib in (torch, rustgrad):
        u = swa_utils(lib)
        m = lib.nn.Linear(2, 2)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
            u.AveragedModel(m, avg_fn=u.get_swa_avg_fn(), multi_avg_fn=u.get_swa_multi_avg_fn())
        for make in (u.get_ema_avg_fn, u.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided\. Please provide a "
                                                 r"value in \[0,1\] range\."):
                make(1.5)


def test_avg_fns_return_or_write_like_torch(device):
    a, c = RNG.standard_normal(5), RNG.standard_normal(5)

    def run(lib, dev):
        u = swa_utils(lib)
        t = lambda v: lib.tensor(v, device=on(lib, dev))  # noqa: E731
        n = lib.tensor(2, device=on(lib, dev))
        out = [np_of(u.get_swa_avg_fn()(t(a), t(c), n)), np_of(u.get_ema_avg_fn(0.8)(t(a), t(c), n)),
               np_of(u.get_swa_avg_fn()(t(a), t(c), 3))]
        for fn in (u.get_swa_multi_avg_fn(), u.get_ema_multi_avg_fn(0.8)):
            xs = [t(a), t(a * 2)]
            fn(xs, [t(c), t(c * 2)], n)
            out += [np_of(x) for x in xs]
        ints = [lib.tensor([4, 8], device=on(lib, dev))]
        u.get_ema_multi_avg_fn(0.5)(ints, [lib.tensor([2, 2], device=on(lib, dev))], 1)
        out.append(np_of(ints[0]))
        return out

    t, r = both(run, device)
    for x, y in zip(t, r):
        assert y.dtype == x.dtype
        np.testing.assert_allclose(y, x, rtol=1e-7)


def test_ema_of_a_parametrized_model_like_torch(device):
    """The averaged copy of a weight-normed model (deepcopy of a parametrized module) averages
    its originals, and its weight is recomputed from them."""
    def run(lib, dev):
        m = model(lib, dev)
        lib.nn.utils.parametrizations.weight_norm(m[0])
        ema = swa_utils(lib).AveragedModel(m, multi_avg_fn=swa_utils(lib).get_ema_multi_avg_fn(0.5))
        for step in range(3):
            perturb(lib, m, step)
            ema.update_parameters(m)
        return (type(ema.module[0]).__name__, states(ema), np_of(ema.module[0].weight),
                ema.module[0].parametrizations.weight.original0 is m[0].parametrizations.weight.original0)

    t, r = both(run, device)
    assert r[0] == t[0] == "ParametrizedLinear" and r[3] is t[3] is False
    assert_states(r[1], t[1], device)
    np.testing.assert_allclose(r[2], t[2], **tol(device))


# ---- update_bn --------------------------------------------------------------------------------------
@pytest.mark.parametrize("loader_kind", ["tensors", "pairs"])
def test_update_bn_recomputes_the_statistics_like_torch(device, loader_kind):
    def run(lib, dev):
        m = model(lib, dev)
        m[1].momentum = 0.3
        m.eval()
        batches = [lib.tensor(X[i:i + 8]) for i in range(0, 24, 8)]
        loader = batches if loader_kind == "tensors" else [(b, lib.zeros(8)) for b in batches]
        swa_utils(lib).update_bn(loader, m, device=on(lib, dev))
        return dict(mean=np_of(m[1].running_mean), var=np_of(m[1].running_var),
                    n=int(m[1].num_batches_tracked), momentum=m[1].momentum, training=m.training,
                    grads=[p.grad is None for p in m.parameters()])

    t, r = both(run, device)
    assert r["n"] == t["n"] == 3 and r["momentum"] == t["momentum"] == 0.3
    assert r["training"] is t["training"] is False and all(r["grads"])
    np.testing.assert_allclose(r["mean"], t["mean"], rtol=1e-10)
    np.testing.assert_allclose(r["var"], t["var"], rtol=1e-10)


def test_update_bn_without_batchnorm_does_nothing():
    for lib in (torch, rustgrad):
        m = lib.nn.Linear(3, 1).train(False)
        calls: List[int] = []
        m.register_forward_hook(lambda *a, seen=calls: seen.append(1))
        swa_utils(lib).update_bn([lib.ones(2, 3)], m)
        assert calls == [] and m.training is False


# ---- SWALR ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
@pytest.mark.parametrize("swa_lr", [0.05, [0.05, 0.2]])
def test_swalr_schedule_like_torch(strategy, anneal_epochs, swa_lr):
    def run(lib):
        nn = lib.nn
        params = [nn.Parameter(lib.zeros(1)), nn.Parameter(lib.zeros(1))]
        opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=1.0)
        sched = swa_utils(lib).SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_epochs,
                                     anneal_strategy=strategy)
        lrs = [[g["lr"] for g in opt.param_groups]]
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        return lrs, [g["swa_lr"] for g in opt.param_groups], sorted(sched.state_dict())

    (tl, ts, tk), (rl, rs, rk) = run(torch), run(rustgrad)
    np.testing.assert_allclose(rl, tl, rtol=1e-12)
    assert rs == ts and rk == tk and "anneal_func" not in rk
    np.testing.assert_allclose(rl[-1], ts)


def test_swalr_after_a_cosine_schedule_like_torch():
    def run(lib):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        base = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        swa = swa_utils(lib).SWALR(opt, swa_lr=0.1, anneal_epochs=4)
        lrs = []
        for epoch in range(10):
            opt.step()
            (swa if epoch >= 5 else base).step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs

    np.testing.assert_allclose(run(rustgrad), run(torch), rtol=1e-12)


def test_swalr_state_dict_roundtrip_keeps_the_strategy():
    opt = rustgrad.optim.SGD([rustgrad.nn.Parameter(rustgrad.zeros(1))], lr=1.0)
    a = rustgrad.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="linear", anneal_epochs=4)
    opt.step()
    a.step()
    state = pickle.loads(pickle.dumps(a.state_dict()))
    opt2 = rustgrad.optim.SGD([rustgrad.nn.Parameter(rustgrad.zeros(1))], lr=1.0)
    b = rustgrad.optim.swa_utils.SWALR(opt2, swa_lr=0.1)  # cos
    b.load_state_dict(state)
    assert b.anneal_func is b._linear_anneal and b.anneal_epochs == 4
    assert b.state_dict() == a.state_dict()


@pytest.mark.parametrize("kwargs,phrase", [
    (dict(anneal_strategy="exp"), "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (dict(anneal_epochs=-1), "anneal_epochs must be equal or greater than 0, got -1"),
    (dict(anneal_epochs=1.5), "anneal_epochs must be equal or greater than 0, got 1.5"),
    (dict(swa_lr=[0.1, 0.2]), "swa_lr must have the same length as optimizer.param_groups"),
])
def test_swalr_errors_like_torch(kwargs, phrase):
    for lib in (torch, rustgrad):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        kwargs = {"swa_lr": 0.1, **kwargs}
        with pytest.raises(ValueError) as info:
            swa_utils(lib).SWALR(opt, **kwargs)
        assert phrase in str(info.value)


def test_swalr_get_lr_outside_step_warns():
    for lib in (torch, rustgrad):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        sched = swa_utils(lib).SWALR(opt, swa_lr=0.1)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()


# ---- a whole SWA run, torch's recipe with the import swapped ------------------------------------------
def test_swa_training_run_like_torch(device):
    def run(lib, dev):
        m = model(lib, dev)
        u = swa_utils(lib)
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
        swa_model = u.AveragedModel(m)
        swa_sched = u.SWALR(opt, swa_lr=0.02, anneal_epochs=2)
        ema_model = u.AveragedModel(m, multi_avg_fn=u.get_ema_multi_avg_fn(0.9))
        loader = [(lib.tensor(X[i:i + 6], device=on(lib, dev)), lib.tensor(Y[i:i + 6], device=on(lib, dev)))
                  for i in range(0, 24, 6)]
        losses, lrs = [], []
        for epoch in range(8):
            for x, y in loader:
                opt.zero_grad()
                loss = lib.nn.functional.mse_loss(m(x), y)
                loss.backward()
                opt.step()
                ema_model.update_parameters(m)
                losses.append(loss.item())
            if epoch >= 4:
                swa_model.update_parameters(m)
                swa_sched.step()
            else:
                sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        u.update_bn(loader, swa_model)
        x_all = lib.tensor(X, device=on(lib, dev))
        swa_model.eval()
        ema_model.eval()
        return dict(losses=np.array(losses), lrs=np.array(lrs), swa=states(swa_model),
                    ema=states(ema_model), y_swa=np_of(swa_model(x_all)), y_ema=np_of(ema_model(x_all)))

    t, r = both(run, device)
    loose = dict(rtol=1e-9, atol=1e-11) if device == "cpu" else dict(rtol=1e-5, atol=1e-7)
    for k in ("losses", "lrs", "y_swa", "y_ema"):
        np.testing.assert_allclose(r[k], t[k], err_msg=k, **loose)
    for k in ("swa", "ema"):
        assert list(r[k]) == list(t[k])
        for name in t[k]:
            np.testing.assert_allclose(r[k][name], t[k][name], err_msg=f"{k}.{name}", **loose)
    assert int(r["swa"]["n_averaged"]) == 4 and int(r["ema"]["n_averaged"]) == 32


def test_module_exports_match_torch():
    assert set(rustgrad.optim.swa_utils.__all__) == set(torch.optim.swa_utils.__all__)
    assert "swa_utils" in rustgrad.optim.__all__
    assert math.isclose(rustgrad.optim.swa_utils.SWALR._cosine_anneal(0.5), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import rustgrad.optim.swa_utils as u  # importable as a submodule, without warnings
    assert u is rustgrad.optim.swa_utils
