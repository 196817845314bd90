"""nn.utils.stateless.functional_call against torch: the module called with other tensors in
place of its parameters and buffers, gradients to those tensors, the module's own put back,
tied weights, strict key checks and the errors, with rustgrad's module on each device."""

from __future__ import annotations

import warnings
from typing import Any, Callable, List

import numpy as np
import pytest
import rustgrad
import torch

RNG = np.random.default_rng(2)
W1, B1 = RNG.standard_normal((4, 3)), RNG.standard_normal(4)
W2, B2 = RNG.standard_normal((2, 4)), RNG.standard_normal(2)
X = RNG.standard_normal((5, 3))


def stateless(lib: Any) -> Any:
    return __import__(f"{lib.__name__}.nn.utils.stateless", fromlist=["x"])


def np_of(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def on(lib: Any, device: str) -> str:
    return "cpu" if lib is torch else device


def call(lib: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return stateless(lib).functional_call(*args, **kwargs)


def net(lib: Any, device: str) -> Any:
    """The same small model in either library, with fixed weights."""
    nn = lib.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2)).double()
    rng = np.random.default_rng(3)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    return m.to(on(lib, device))


def both(fn: Callable[[Any, str], Any], device: str) -> List[Any]:
    return [fn(torch, device), fn(rustgrad, device)]


def assert_same(t: Any, r: Any, path: str = "") -> None:
    if isinstance(t, dict):
        assert list(r) == list(t), path
        for k in t:
            assert_same(t[k], r[k], f"{path}.{k}")
    elif isinstance(t, (list, tuple)):
        assert len(r) == len(t), path
        for i, (a, b) in enumerate(zip(t, r)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(t, np.ndarray):
        np.testing.assert_allclose(r, t, rtol=1e-10, atol=1e-12, err_msg=path)
    else:
        assert r == t, path


def test_functional_call_uses_the_given_tensors_and_restores_the_module(device):
    def run(lib, dev):
        m = net(lib, dev)
        own = {n: p for n, p in m.named_parameters()}
        before = {n: np_of(p) for n, p in m.state_dict().items()}
        t = lambda a, rg=True: lib.tensor(a, device=on(lib, dev), requires_grad=rg)  # noqa: E731
        given = {"0.weight": t(W1), "0.bias": t(B1), "3.weight": t(W2), "3.bias": t(B2),
                 "1.running_mean": t(np.ones(4), False)}
        x = lib.tensor(X, device=on(lib, dev))
        y = call(lib, m, given, (x,))
        (y ** 2).sum().backward()
        return dict(
            y=np_of(y), grads={k: np_of(v.grad) for k, v in given.items() if v.requires_grad},
            own_grads=[p.grad is None for p in m.parameters()],
            restored=[own[n] is p for n, p in m.named_parameters()],
            state={n: np_of(p) for n, p in m.state_dict().items()}, before=before,
            # training-mode BatchNorm updated the running mean it was given, in place
            running=np_of(given["1.running_mean"]),
            tracked=int(m[1].num_batches_tracked))

    t, r = both(run, device)
    assert_same(t, r)
    # the given tensors took the gradients; BatchNorm's own weight and bias were used as usual
    assert r["own_grads"] == [True, True, False, False, True, True] and all(r["restored"])
    np.testing.assert_allclose(r["state"]["1.running_mean"], 0.0)


def test_args_kwargs_and_partial_dicts(device):
    def run(lib, dev):
        class Two(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 4).double()

            def forward(self, x, scale=1.0, shift=None):
                return self.lin(x) * scale + (0 if shift is None else shift)

        m = Two().to(on(lib, dev))
        with lib.no_grad():
            m.lin.bias.copy_(lib.tensor(B1))
        w = lib.tensor(W1, device=on(lib, dev))
        x = lib.tensor(X, device=on(lib, dev))
        single = call(lib, m, {"lin.weight": w}, x)  # a lone argument need not be a tuple
        with_kwargs = call(lib, m, {"lin.weight": w}, (x,), {"scale": 2.0, "shift": 1.0})
        none_args = call(lib, m, {"lin.weight": w}, kwargs={"x": x})
        return np_of(single), np_of(with_kwargs), np_of(none_args)

    t, r = both(run, device)
    assert_same(t, r)


def test_tied_weights_follow_the_given_value(device):
    def run(lib, dev):
        nn = lib.nn
        m = nn.Sequential(nn.Linear(3, 3, bias=False), nn.Linear(3, 3, bias=False)).double()
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(W1[1:]))
        m[1].weight = m[0].weight
        m = m.to(on(lib, dev))
        x = lib.tensor(X, device=on(lib, dev))
        w = lib.tensor(W1[:3], device=on(lib, dev))
        tied = call(lib, m, {"0.weight": w}, (x,))
        untied = call(lib, m, {"0.weight": w}, (x,), tie_weights=False)
        same_twice = call(lib, m, {"0.weight": w, "1.weight": w}, (x,))
        try:
            call(lib, m, {"0.weight": w, "1.weight": w * 2}, (x,))
            err = None
        except ValueError as e:
            err = str(e)
        return np_of(tied), np_of(untied), np_of(same_twice), err

    t, r = both(run, device)
    assert_same(t, r)
    assert "functional_call got multiple values for keys ['0.weight', '1.weight'], which are tied" in r[3]


@pytest.mark.parametrize("keys,phrase", [
    (["0.weight"], "Missing key(s): '0.bias', '1.bias', '1.num_batches_tracked'"),
    (["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
      "1.num_batches_tracked", "3.weight", "3.bias", "extra"], "Unexpected key(s): 'extra'."),
])
def test_strict_checks_the_keys_like_torch(keys, phrase):
    errors = []
    for lib in (torch, rustgrad):
        m = net(lib, "cpu")
        full = dict(m.state_dict())
        given = {k: full.get(k, lib.zeros(1)) for k in keys}
        with pytest.raises(RuntimeError) as info:
            call(lib, m, given, (lib.tensor(X),), strict=True)
        errors.append(str(info.value))
        # nothing was swapped
        assert all(full[k] is v or (full[k] == v).all() for k, v in m.state_dict().items())
    assert errors[0] == errors[1]
    assert phrase in errors[1] and errors[1].startswith("Error(s) in reparametrizing for Sequential")


def test_strict_with_every_key_runs():
    outs = []
    for lib in (torch, rustgrad):
        m = net(lib, "cpu")
        state = {k: v.clone() for k, v in net(lib, "cpu").state_dict().items()}
        outs.append(np_of(call(lib, m, state, (lib.tensor(X),), strict=True)))
    assert outs[0].shape == outs[1].shape == (5, 2)


def test_an_error_in_forward_puts_the_module_back(device):
    def run(lib, dev):
        m = net(lib, dev)
        own = list(m.parameters())
        w = lib.tensor(W1, device=on(lib, dev))
        with pytest.raises(RuntimeError):
            call(lib, m, {"0.weight": w}, (lib.zeros(5, 7, dtype=lib.float64, device=on(lib, dev)),))
        return [a is b for a, b in zip(own, m.parameters())]

    t, r = both(run, device)
    assert r == t and all(r)


def test_unknown_non_strict_names_are_set_then_removed(device):
    def run(lib, dev):
        m = net(lib, dev)
        call(lib, m, {"0.extra": lib.ones(1, device=on(lib, dev))}, (lib.tensor(X, device=on(lib, dev)),))
        return hasattr(m[0], "extra"), [n for n, _ in m.named_parameters()]

    t, r = both(run, device)
    assert r == t == (False, [n for n, _ in net(torch, "cpu").named_parameters()])


def test_a_non_tensor_value_is_refused(device):
    def run(lib, dev):
        m = net(lib, dev)
        with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
            call(lib, m, {"0.weight": 3.0}, (lib.tensor(X, device=on(lib, dev)),))
        return [type(p).__name__ for p in m.parameters()]

    t, r = both(run, device)
    assert r == t


def test_it_warns_that_it_is_deprecated():
    msgs = []
    for lib in (torch, rustgrad):
        m = lib.nn.Linear(3, 4)
        with pytest.warns(FutureWarning) as caught:
            stateless(lib).functional_call(m, {}, (lib.ones(1, 3),))
        msgs.append(str(caught[0].message))
    assert msgs[0] == msgs[1]


def test_data_parallel_is_refused():
    for lib in (torch, rustgrad):
        with pytest.raises(RuntimeError, match="The stateless API can't be used with nn.DataParallel"):
            call(lib, lib.nn.DataParallel(lib.nn.Linear(2, 2)), {}, (lib.ones(1, 2),))


def test_gradients_of_a_parametrized_original(device):
    """functional_call over the original of a parametrized weight (its dotted name)."""
    def run(lib, dev):
        P = __import__(f"{lib.__name__}.nn.utils.parametrize", fromlist=["x"])

        class Double(lib.nn.Module):
            def forward(self, X):
                return 2 * X

        m = lib.nn.Linear(3, 4).double().to(on(lib, dev))
        P.register_parametrization(m, "weight", Double())
        w = lib.tensor(W1, device=on(lib, dev), requires_grad=True)
        y = call(lib, m, {"parametrizations.weight.original": w, "bias": lib.tensor(B1, device=on(lib, dev))},
                 (lib.tensor(X, device=on(lib, dev)),))
        y.sum().backward()
        return np_of(y), np_of(w.grad), m.parametrizations.weight.original.grad is None

    t, r = both(run, device)
    assert_same(t, r)
