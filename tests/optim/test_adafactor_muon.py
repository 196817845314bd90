"""Adafactor, Muon and swap_in_optimizer_params_and_state against torch: every parameter after
each step (float32 and float64, matrices, vectors, a 3-D and a 0-d parameter; Muon's
Newton-Schulz iteration in bfloat16 as torch's), state_dict layout and resuming from torch's,
param groups, closures, and torch's argument errors. torch runs on the CPU, rustgrad on the
device under test."""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import on_real_gpu, oracle_for
from ._common import _to_rustgrad

RNG = np.random.default_rng(0)
SHAPES = {"matrix": (6, 5), "tall": (7, 3), "wide": (3, 8), "vector": (5,), "cube": (2, 3, 4),
          "scalar": ()}
INIT = {name: RNG.standard_normal(shape) for name, shape in SHAPES.items()}
DATA = RNG.standard_normal((4, 8))


def on(lib: Any, device: str) -> str:
    return device if lib is rustgrad else "cpu"


def tol(device: str, dtype: str) -> Dict[str, float]:
    if on_real_gpu(device):  # cuBLAS sums in another order
        return dict(rtol=1e-4, atol=1e-5)
    return dict(rtol=1e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


# Muon's bfloat16 values are torch's exactly but where a float32 sum (a matmul's) taken in
# another order rounds to the other bfloat16 neighbour: one such element moves a parameter by
# lr' * 2**-8 * |update| (~2e-5 here), far below one step's own change (~3e-3)
MUON_TOL = dict(rtol=1e-5, atol=1e-4)


def make_params(lib: Any, names: Sequence[str], dtype: str, device: str) -> List[Any]:
    return [lib.tensor(INIT[n], dtype=getattr(lib, dtype), device=on(lib, device),
                       requires_grad=True) for n in names]


def loss_of(lib: Any, params: Sequence[Any], device: str) -> Any:
    """A loss that couples every parameter (nonzero, differing gradients each step)."""
    x = lib.tensor(DATA, dtype=params[0].dtype, device=on(lib, device))
    total = 0
    for p in params:
        flat = p.reshape(-1)
        k = flat.shape[0]
        h = (x[:, :min(k, 8)] @ flat[:min(k, 8)].unsqueeze(-1) if k > 1 else x[:, :1] * flat)
        total = total + (h.tanh() ** 2).sum() + (flat ** 3).sum() * 0.1
    return total


def train(lib: Any, make_opt: Callable[[List[Any]], Any], names: Sequence[str], dtype: str,
          device: str, steps: int = 8) -> Tuple[List[List[np.ndarray]], Any]:
    params = make_params(lib, names, dtype, device)
    opt = make_opt(params)
    trajectory = []
    for _ in range(steps):
        def closure() -> Any:
            opt.zero_grad()
            loss = loss_of(lib, params, device)
            loss.backward()
            return loss
        loss = opt.step(closure)
        assert isinstance(loss, lib.Tensor) and loss.grad_fn is not None  # the closure's loss
        trajectory.append([p.detach().cpu().numpy().copy() for p in params])
    return trajectory, opt


def compare(name: str, kwargs: dict, names: Sequence[str], dtype: str, device: str,
            steps: int = 8, tolerance: Any = None) -> Tuple[Any, Any]:
    oracle = oracle_for(device)
    tt, to = train(oracle, lambda ps: getattr(oracle.optim, name)(ps, **kwargs), names, dtype,
                   "cpu", steps)
    rt, ro = train(rustgrad, lambda ps: getattr(rustgrad.optim, name)(ps, **kwargs), names,
                   dtype, device, steps)
    for step, (rps, tps) in enumerate(zip(rt, tt), 1):
        for n, rp, tp in zip(names, rps, tps):
            assert rp.dtype == tp.dtype == np.dtype(dtype)
            np.testing.assert_allclose(rp, tp, **(tolerance or tol(device, dtype)),
                                       err_msg=f"step {step} {n}")
    return to, ro


ADAFACTOR = [
    {},
    dict(lr=0.05, weight_decay=0.1, maximize=True, d=1.5, eps=(1e-3, 1e-2), beta2_decay=-0.5),
    dict(lr=0.02, eps=(0.0, 0.0)),
    dict(lr=0.05, eps=(1e-20, 0.5)),
    dict(foreach=True, weight_decay=0.01),
]
MUON = [
    {},
    dict(lr=0.02, nesterov=False, weight_decay=0.01, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.02, momentum=0.3, adjust_lr_fn="spectral_unclamped", ns_steps=3),
    dict(lr=0.05, adjust_lr_fn="original", ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3,
         weight_decay=0.0),
]


def _ids(configs: Sequence[dict]) -> List[str]:
    return [",".join(f"{k}={v}" for k, v in c.items()) or "defaults" for c in configs]


# ---- trajectories ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", ADAFACTOR, ids=_ids(ADAFACTOR))
def test_adafactor_steps_match_torch(device, kwargs, dtype):
    compare("Adafactor", kwargs, ["matrix", "vector", "cube", "scalar"], dtype, device)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", MUON, ids=_ids(MUON))
def test_muon_steps_match_torch(device, kwargs, dtype):
    compare("Muon", kwargs, ["matrix", "tall", "wide"], dtype, device, tolerance=MUON_TOL)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 5), (5, 6), (16, 16), (40, 12), (1, 7)])
def test_muon_newton_schulz_rounds_as_torchs_bfloat16(device, shape, dtype):
    from rustgrad.optim.muon import _newton_schulz
    torch_ns = pytest.importorskip("torch.optim._muon")._zeropower_via_newtonschulz
    rng = np.random.default_rng(sum(shape))
    equal = total = 0
    for scale in (1e-3, 1.0, 50.0):
        g = rng.standard_normal(shape).astype(dtype) * scale
        want = torch_ns(torch.tensor(g), (3.4445, -4.775, 2.0315), 5, 1e-7).float().numpy()
        x = rustgrad.tensor(g, device=device)
        got = _newton_schulz(x._backend, x._data, (3.4445, -4.775, 2.0315), 5, 1e-7)
        got = np.asarray(x._backend.to_numpy(got))
        assert got.dtype == np.float32 and got.shape == shape
        np.testing.assert_array_equal(got.view(np.uint32) & 0xFFFF, 0)  # bfloat16 values
        np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -7 * np.abs(want).max())
        equal += (got == want).sum()
        total += got.size
    assert equal / total > (0.9 if on_real_gpu(device) else 0.99)


def test_adafactor_tensor_lr_matches_torch(device):
    oracle = oracle_for(device)
    tt, _ = train(oracle, lambda ps: oracle.optim.Adafactor(ps, lr=oracle.tensor(0.02),
                                                            weight_decay=0.1),
                  ["matrix", "vector"], "float32", "cpu")
    rt, _ = train(rustgrad, lambda ps: rustgrad.optim.Adafactor(ps, lr=rustgrad.tensor(0.02),
                                                                weight_decay=0.1),
                  ["matrix", "vector"], "float32", device)
    for rps, tps in zip(rt, tt):
        for rp, tp in zip(rps, tps):
            np.testing.assert_allclose(rp, tp, **tol(device, "float32"))


def test_muon_zero_gradient_only_decays(device):
    for lib in (oracle_for(device), rustgrad):
        w = lib.tensor(INIT["matrix"], device=on(lib, device), requires_grad=True)
        opt = lib.optim.Muon([w], lr=0.1, weight_decay=0.5)
        w.grad = lib.zeros_like(w)
        opt.step()
        np.testing.assert_allclose(w.detach().cpu().numpy(), INIT["matrix"] * 0.95, rtol=1e-12)


def test_steps_skip_parameters_without_gradients(device):
    for lib in (oracle_for(device), rustgrad):
        a, b = make_params(lib, ["matrix", "tall"], "float32", device)
        for opt in (lib.optim.Adafactor([a, b]), lib.optim.Muon([a, b])):
            opt.zero_grad()
            (a ** 2).sum().backward()
            opt.step()
            assert b not in opt.state and a in opt.state
        np.testing.assert_array_equal(b.detach().cpu().numpy(), INIT["tall"].astype(np.float32))


# ---- state_dict --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,names", [
    ("Adafactor", dict(lr=0.05, weight_decay=0.1), ["matrix", "vector", "cube", "scalar"]),
    ("Muon", dict(lr=0.02), ["matrix", "wide"]),
], ids=["Adafactor", "Muon"])
def test_state_dict_layout_equals_torch(device, name, kwargs, names):
    to, ro = compare(name, kwargs, names, "float32", device, steps=3)
    ts, rs = to.state_dict(), ro.state_dict()
    assert rs["param_groups"] == ts["param_groups"]
    assert list(rs["state"]) == list(ts["state"])
    for i, tstate in ts["state"].items():
        assert list(rs["state"][i]) == list(tstate)
        for k, tv in tstate.items():
            rv = rs["state"][i][k]
            assert str(rv.dtype) == str(tv.dtype) and tuple(rv.shape) == tuple(tv.shape), k
            want = "cpu" if k == "step" else device  # steps stay on the CPU, as torch's
            assert rv.device.type == rustgrad.device(want).type, k
            np.testing.assert_allclose(rv.cpu().numpy(), tv.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=k)


@pytest.mark.parametrize("name,kwargs,names", [
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.6), ["matrix", "vector"]),
    ("Muon", dict(lr=0.02, momentum=0.8), ["matrix", "tall"]),
], ids=["Adafactor", "Muon"])
def test_resuming_from_torchs_state_dict(device, name, kwargs, names):
    tp = make_params(torch, names, "float32", "cpu")
    to = getattr(torch.optim, name)(tp, **kwargs)
    for _ in range(3):
        to.zero_grad()
        loss_of(torch, tp, "cpu").backward()
        to.step()
    rp = [rustgrad.tensor(p.detach().numpy().copy(), device=device, requires_grad=True)
          for p in tp]
    ro = getattr(rustgrad.optim, name)(rp)
    ro.load_state_dict(_to_rustgrad(copy.deepcopy(to.state_dict())))
    assert ro.param_groups[0]["lr"] == kwargs["lr"]
    for _ in range(3):
        for lib, ps, opt in ((torch, tp, to), (rustgrad, rp, ro)):
            opt.zero_grad()
            loss_of(lib, ps, on(lib, device)).backward()
            opt.step()
    for r, t in zip(rp, tp):
        np.testing.assert_allclose(r.detach().cpu().numpy(), t.detach().numpy(),
                                   **tol(device, "float32"))


def test_param_groups_with_own_options_match_torch(device):
    def build(lib: Any, ps: List[Any]) -> List[Any]:
        return [lib.optim.Adafactor([{"params": ps[:1], "lr": 0.05, "d": 2.0},
                                     {"params": ps[1:], "maximize": True}], weight_decay=0.1),
                lib.optim.Muon([{"params": ps[:1], "lr": 0.02, "nesterov": False},
                                {"params": ps[1:]}], lr=0.01)]
    results = []
    for lib in (oracle_for(device), rustgrad):
        ps = make_params(lib, ["matrix", "wide"], "float64", device)
        for opt in build(lib, ps):
            for _ in range(4):
                opt.zero_grad()
                loss_of(lib, ps, on(lib, device)).backward()
                opt.step()
            assert [g["lr"] for g in opt.param_groups][1] == opt.defaults["lr"]
        results.append([p.detach().cpu().numpy() for p in ps])
    for r, t in zip(*results[::-1]):
        np.testing.assert_allclose(r, t, **tol(device, "float64"))


# ---- errors ------------------------------------------------------------------------------------
def same_error_on(device: str, fn: Callable[[Any, str], Any], phrase: str) -> None:
    """`fn(lib, dev)` raises the same exception type with `phrase` under torch (CPU) and
    rustgrad (`device`)."""
    errors = []
    for lib in (torch, rustgrad):
        with pytest.raises(Exception) as info:
            fn(lib, on(lib, device))
        errors.append(info.value)
    et, er = errors
    assert type(er) is type(et), f"{type(er).__name__}: {er}; torch {type(et).__name__}: {et}"
    assert phrase in str(et), str(et)
    assert phrase in str(er), str(er)


def _w(lib: Any, dev: str, shape: Tuple[int, ...] = (3, 2)) -> Any:
    return lib.ones(shape, device=dev, requires_grad=True)


@pytest.mark.parametrize("kwargs,phrase", [
    (dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    (dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    (dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    (dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (dict(weight_decay=-0.1), "weight_decay should be >= 0 but is: -0.1"),
], ids=["lr", "beta2_decay", "eps1", "eps2", "d", "weight_decay"])
def test_adafactor_argument_errors(device, kwargs, phrase):
    same_error_on(device, lambda lib, dev: lib.optim.Adafactor([_w(lib, dev)], **kwargs), phrase)


def test_adafactor_tensor_lr_must_have_one_element(device):
    same_error_on(device, lambda lib, dev: lib.optim.Adafactor([_w(lib, dev)],
                                                               lr=lib.tensor([0.1, 0.2])),
                  "Tensor lr must be 1-element")


@pytest.mark.parametrize("make,phrase", [
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev)], lr=-1.0),
     "Learning rate should be >= 0 but is: -1.0"),
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev)], momentum=-0.5),
     "momentum should be >= 0 but is: -0.5"),
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev)], weight_decay=-0.5),
     "weight decay should be >= 0 but is: -0.5"),
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev)], adjust_lr_fn="cosine"),
     "Adjust learning rate function cosine is not supported"),
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev), _w(lib, dev, (3,))]),
     "Muon only supports 2D parameters whereas we found a parameter with size: "
     "torch.Size([3])"),
    (lambda lib, dev: lib.optim.Muon([_w(lib, dev, (2, 2, 2))]),
     "Muon only supports 2D parameters whereas we found a parameter with size: "
     "torch.Size([2, 2, 2])"),
    (lambda lib, dev: lib.optim.Muon([]), "optimizer got an empty parameter list"),
], ids=["lr", "momentum", "weight_decay", "adjust_lr_fn", "vector", "cube", "empty"])
def test_muon_argument_errors(device, make, phrase):
    same_error_on(device, make, phrase)


def _muon_step(lib: Any, dev: str, **kwargs: Any) -> None:
    w = _w(lib, dev)
    opt = lib.optim.Muon([w], **kwargs)
    w.grad = lib.ones_like(w)
    opt.step()


@pytest.mark.parametrize("make,phrase", [
    (lambda lib, dev: _muon_step(lib, dev, ns_steps=100),
     "Number of steps must be less than 100 for computational efficiency"),
    (lambda lib, dev: _muon_step(lib, dev, ns_coefficients=(1.0, 2.0)),
     "Coefficients must be a tuple of exactly 3 values"),
], ids=["ns_steps", "coefficients"])
def test_muon_step_errors(device, make, phrase):
    same_error_on(device, make, phrase)


def test_muon_refuses_a_non_matrix_gradient_added_later(device):
    # torch checks the constructor's parameters only; a later group fails at the step
    def make(lib: Any, dev: str) -> None:
        opt = lib.optim.Muon([_w(lib, dev)])
        v = _w(lib, dev, (4,))
        opt.add_param_group({"params": [v]})
        v.grad = lib.ones_like(v)
        opt.step()
    same_error_on(device, make, "Param gradient must be a 2D matrix")


# ---- swap_in_optimizer_params_and_state --------------------------------------------------------
def _adam_with_state(lib: Any, dev: str) -> Tuple[Any, List[Any]]:
    ps = make_params(lib, ["matrix", "vector"], "float64", dev)
    opt = lib.optim.Adam(ps, lr=0.1)
    loss_of(lib, ps, dev).backward()
    opt.step()
    return opt, ps


def test_swap_in_steps_other_parameters_and_restores(device):
    results = []
    for lib in (torch, rustgrad):
        dev = on(lib, device)
        opt, ps = _adam_with_state(lib, dev)
        own_params = opt.param_groups[0]["params"]
        own_state = {k: v.clone() for k, v in opt.state[ps[0]].items()}
        others = [lib.tensor(np.asarray(INIT[n]) * 0.5, device=dev, requires_grad=True)
                  for n in ("matrix", "vector")]
        saved = copy.deepcopy(opt.state_dict())
        saved["param_groups"][0]["lr"] = 0.01
        with lib.optim.swap_in_optimizer_params_and_state(
                opt, {"a": others[0], "b": others[1]}, saved):
            assert all(a is b for a, b in zip(opt.param_groups[0]["params"], others))
            assert opt.param_groups[0]["lr"] == 0.01
            for _ in range(2):
                opt.zero_grad()
                loss_of(lib, others, dev).backward()
                opt.step()
            inside = sorted(opt.state[others[0]])
        assert opt.param_groups[0]["params"] is own_params and opt.param_groups[0]["lr"] == 0.1
        for k, v in own_state.items():  # the live state is untouched
            np.testing.assert_array_equal(opt.state[ps[0]][k].cpu().numpy(), v.cpu().numpy())
        results.append(([o.detach().cpu().numpy() for o in others], inside,
                        saved["state"][0]["exp_avg"].cpu().numpy(),  # updated in place
                        float(saved["state"][0]["step"])))
    (tp, tin, tavg, tstep), (rp, rin, ravg, rstep) = results
    assert rin == tin and rstep == tstep == 3.0
    for r, t in zip(rp + [ravg], tp + [tavg]):
        np.testing.assert_allclose(r, t, rtol=1e-10, atol=1e-12)


def _swap(lib: Any, dev: str, edit: Callable[[dict], Any], fresh: bool = False) -> None:
    if fresh:
        ps = make_params(lib, ["matrix"], "float64", dev)
        opt = lib.optim.Adam(ps)
        sd = {"state": {}, "param_groups": copy.deepcopy(opt.state_dict()["param_groups"])}
        others = {"a": ps[0]}
    else:
        opt, ps = _adam_with_state(lib, dev)
        sd = copy.deepcopy(opt.state_dict())
        others = {"a": ps[0], "b": ps[1]}
    sd = edit(sd) or sd
    if isinstance(sd, tuple):
        sd, others = sd[0], dict(list(others.items())[:sd[1]])
    with lib.optim.swap_in_optimizer_params_and_state(opt, others, sd):
        pass


@pytest.mark.parametrize("edit,phrase", [
    (None, "swap_in_optimizer_params_and_state requires initialized optimizer state."),
    (lambda sd: [sd], "requires a DCP-style optimizer state_dict."),
    (lambda sd: {**sd, "state": []}, "requires swapin_optim_state['state'] to be a dict mapping "
                                     "packed parameter ids to per-param state dicts, got list."),
    (lambda sd: {**sd, "state": {0: 1}}, "requires per-parameter optimizer state entries to be "
                                         "dictionaries."),
    (lambda sd: {**sd, "param_groups": {}}, "requires swapin_optim_state['param_groups'] to be a "
                                            "list of param-group dicts, got dict."),
    (lambda sd: {**sd, "param_groups": sd["param_groups"] * 2},
     "swapin_optim_state has a different number of parameter groups than the live optimizer."),
    (lambda sd: {**sd, "param_groups": [[]]},
     "requires each optimizer param group to be a dictionary."),
    (lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "params": ["a", "b"]}]},
     "param_groups[*]['params'] entries keyed by packed parameter ids."),
    (lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "params": [0]}]},
     "swapin_optim_state param group 0 has a different number of params than the live "
     "optimizer param group."),
    (lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "extra": 1}]},
     "param group keys to exactly match the live optimizer group keys for group 0. Keys only in "
     "swap-in: ['extra']. Keys only in live: []."),
    (lambda sd: (sd, 1), "requires the explicit parameter state to match "
                         "optimizer.param_groups ordering."),
    (lambda sd: {**sd, "state": {**sd["state"], 7: {}}},
     "be keyed only by packed parameter ids from param_groups[*]['params']; got extra keys "
     "[7]."),
], ids=["no-state", "not-a-dict", "state-list", "state-entry", "groups-dict", "group-count",
        "group-list", "param-ids", "param-count", "keys", "too-few-tensors", "extra-state"])
def test_swap_in_errors(device, edit, phrase):
    if edit is None:
        same_error_on(device, lambda lib, dev: _swap(lib, dev, lambda sd: None, fresh=True),
                      phrase)
    else:
        same_error_on(device, lambda lib, dev: _swap(lib, dev, edit), phrase)
