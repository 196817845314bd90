"""nn.utils.prune against torch: masks, the weight_orig/weight_mask/forward pre-hook machinery,
PruningContainer's iterative pruning, global pruning, remove, and the errors, with rustgrad's
module on each device. Random pruning draws different numbers in each library, so its tests
check the structure of the masks instead."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import rustgrad
import torch

RNG = np.random.default_rng(1)
# distinct magnitudes: L1 and Ln rankings have no ties
W_LIN = RNG.permutation(np.arange(1, 25)).reshape(4, 6) * RNG.choice([-1.0, 1.0], (4, 6)) / 10
W_CONV = RNG.standard_normal((4, 3, 2, 2))
X_LIN = RNG.standard_normal((3, 6))
X_CONV = RNG.standard_normal((2, 3, 4, 4))


def prune_of(lib: Any) -> Any:
    return __import__(f"{lib.__name__}.nn.utils.prune", fromlist=["x"])


def np_of(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def on(lib: Any, device: str) -> str:
    return "cpu" if lib is torch else device


def build(lib: Any, device: str, kind: str = "linear") -> Any:
    nn = lib.nn
    if kind == "linear":
        m, w = nn.Linear(6, 4).double(), W_LIN
    else:
        m, w = nn.Conv2d(3, 4, 2).double(), W_CONV
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(np.arange(4.0) / 7))
    return m.to(on(lib, device))


def x_for(lib: Any, device: str, kind: str) -> Any:
    return lib.tensor(X_LIN if kind == "linear" else X_CONV, device=on(lib, device))


def snapshot(lib: Any, m: Any, device: str, kind: str) -> Dict[str, Any]:
    """Everything a pruned module shows: names, hooks, mask, values, and a backward."""
    y = m(x_for(lib, device, kind))
    (y ** 2).sum().backward()
    hooks = [type(h).__name__ for h in m._forward_pre_hooks.values()]
    return dict(
        params=[n for n, _ in m.named_parameters()], buffers=[n for n, _ in m.named_buffers()],
        state=list(m.state_dict()), hooks=hooks, pruned=prune_of(lib).is_pruned(m),
        attr=(type(m.weight).__name__, "weight" in m._parameters),
        mask=np_of(m.weight_mask), weight=np_of(m.weight), y=np_of(y),
        grad=np_of(m.weight_orig.grad), orig=np_of(m.weight_orig),
        mask_dtype=str(m.weight_mask.dtype))


def assert_same(t: Dict[str, Any], r: Dict[str, Any]) -> None:
    for k, v in t.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_allclose(r[k], v, rtol=1e-10, atol=1e-12, err_msg=k)
        else:
            assert r[k] == v, k


def both(fn: Callable[[Any, str], Any], device: str) -> List[Any]:
    return [fn(torch, device), fn(rustgrad, device)]


# ---- deterministic pruning: the same masks as torch ---------------------------------------------
@pytest.mark.parametrize("amount", [0, 5, 0.3, 1.0])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_l1_unstructured_like_torch(device, amount, kind):
    def run(lib, dev):
        m = build(lib, dev, kind)
        w0 = m.weight
        out = prune_of(lib).l1_unstructured(m, "weight", amount=amount)
        res = snapshot(lib, m, dev, kind)
        res["same"] = (out is m, m.weight_orig is w0)
        return res

    t, r = both(run, device)
    assert_same(t, r)
    assert r["same"] == (True, True)
    assert r["params"] == ["bias", "weight_orig"] and r["hooks"] == ["L1Unstructured"]


def test_l1_unstructured_ranks_by_importance_scores(device):
    scores = RNG.standard_normal(W_LIN.shape)

    def run(lib, dev):
        m = build(lib, dev)
        prune_of(lib).l1_unstructured(m, "weight", amount=10,
                                      importance_scores=lib.tensor(scores, device=on(lib, dev)))
        return snapshot(lib, m, dev, "linear")

    t, r = both(run, device)
    assert_same(t, r)
    assert r["mask"].sum() == W_LIN.size - 10


@pytest.mark.parametrize("n", [1, 2, 3, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_ln_structured_like_torch(device, n, dim, kind):
    def run(lib, dev):
        m = build(lib, dev, kind)
        prune_of(lib).ln_structured(m, "weight", amount=0.5, n=n, dim=dim)
        return snapshot(lib, m, dev, kind)

    t, r = both(run, device)
    assert_same(t, r)


def test_ln_structured_nuclear_norm_needs_an_svd():
    torch_m = build(torch, "cpu", "conv")
    prune_of(torch).ln_structured(torch_m, "weight", amount=1, n="nuc", dim=0)  # torch can
    m = build(rustgrad, "cpu", "conv")
    with pytest.raises(NotImplementedError, match="singular value decomposition"):
        prune_of(rustgrad).ln_structured(m, "weight", amount=1, n="nuc", dim=0)
    # the failed pruning left the module as it was
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert not prune_of(rustgrad).is_pruned(m)


def test_identity_and_custom_from_mask_like_torch(device):
    mask = (RNG.random(W_LIN.shape) > 0.4).astype(np.float64)

    def run(lib, dev):
        m = build(lib, dev)
        prune_of(lib).identity(m, "bias")
        prune_of(lib).custom_from_mask(m, "weight", mask=lib.tensor(mask, device=on(lib, dev)))
        res = snapshot(lib, m, dev, "linear")
        res["bias_mask"] = np_of(m.bias_mask)
        res["bias_grad"] = np_of(m.bias_orig.grad)
        return res

    t, r = both(run, device)
    assert_same(t, r)
    assert r["hooks"] == ["Identity", "CustomFromMask"]


def test_pruning_again_makes_a_container_and_prunes_only_what_is_left(device):
    def run(lib, dev):
        p = prune_of(lib)
        m = build(lib, dev, "conv")
        p.l1_unstructured(m, "weight", amount=0.2)
        p.ln_structured(m, "weight", amount=1, n=2, dim=0)
        p.random_unstructured(m, "weight", amount=0)  # prunes nothing more
        p.l1_unstructured(m, "weight", amount=3)
        container = list(m._forward_pre_hooks.values())[0]
        res = snapshot(lib, m, dev, "conv")
        res["container"] = (type(container).__name__, len(container),
                            [type(c).__name__ for c in container], container._tensor_name,
                            type(container[0]).__name__)
        return res

    t, r = both(run, device)
    assert_same(t, r)
    assert r["container"][0] == "PruningContainer" and r["container"][1] == 4


def test_global_unstructured_like_torch(device):
    def run(lib, dev):
        p = prune_of(lib)
        a, b = build(lib, dev), build(lib, dev, "conv")
        p.l1_unstructured(b, "weight", amount=4)  # b's existing mask is respected
        p.global_unstructured([(a, "weight"), (b, "weight"), (a, "bias")],
                              pruning_method=p.L1Unstructured, amount=0.4)
        return (np_of(a.weight_mask), np_of(b.weight_mask), np_of(a.bias_mask),
                [type(h).__name__ for h in b._forward_pre_hooks.values()],
                [n for n, _ in a.named_parameters()])

    t, r = both(run, device)
    for x, y in zip(t[:3], r[:3]):
        np.testing.assert_array_equal(y, x)
    assert r[3:] == t[3:]


def test_global_unstructured_errors_like_torch():
    for lib in (torch, rustgrad):
        p = prune_of(lib)
        m = lib.nn.Linear(2, 2)
        with pytest.raises(TypeError, match="parameters is not an Iterable"):
            p.global_unstructured(3, pruning_method=p.L1Unstructured, amount=1)
        with pytest.raises(TypeError, match="importance_scores must be of type dict"):
            p.global_unstructured([(m, "weight")], p.L1Unstructured, importance_scores=[1], amount=1)
        with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
            p.global_unstructured([(m, "weight")], p.LnStructured, amount=1, n=2, dim=0)


# ---- random pruning: the structure of the masks -------------------------------------------------
@pytest.mark.parametrize("amount", [7, 0.25])
def test_random_unstructured_prunes_that_many_entries(device, amount):
    def run(lib, dev):
        m = build(lib, dev)
        prune_of(lib).random_unstructured(m, "weight", amount=amount)
        res = snapshot(lib, m, dev, "linear")
        return res

    t, r = both(run, device)
    for res in (t, r):
        assert res["mask"].sum() == W_LIN.size - (7 if amount == 7 else 6)
        assert set(np.unique(res["mask"])) <= {0.0, 1.0}
        np.testing.assert_allclose(res["weight"], W_LIN * res["mask"])
        np.testing.assert_allclose(res["grad"] == 0, np.broadcast_to(res["mask"] == 0, W_LIN.shape))
    for k in ("params", "buffers", "state", "hooks", "pruned", "attr", "mask_dtype"):
        assert r[k] == t[k], k
    # with the same mask, the same numbers as torch
    tm = build(torch, "cpu")
    prune_of(torch).custom_from_mask(tm, "weight", torch.tensor(r["mask"]))
    assert_same({k: v for k, v in snapshot(torch, tm, "cpu", "linear").items() if k != "hooks"},
                {k: v for k, v in r.items() if k != "hooks"})


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_random_structured_prunes_whole_slices(device, dim):
    def run(lib, dev):
        m = build(lib, dev, "conv")
        prune_of(lib).random_structured(m, "weight", amount=0.5, dim=dim)
        return snapshot(lib, m, dev, "conv")

    t, r = both(run, device)
    for res in (t, r):
        mask = np.moveaxis(res["mask"], dim, 0).reshape(W_CONV.shape[dim], -1)
        per_slice = mask.sum(axis=1)
        assert sorted(set(per_slice)) == [0.0, mask.shape[1]]
        assert (per_slice == 0).sum() == round(0.5 * W_CONV.shape[dim])
        np.testing.assert_allclose(res["weight"], W_CONV * res["mask"])
    for k in ("params", "buffers", "state", "hooks", "attr", "mask_dtype"):
        assert r[k] == t[k], k


# ---- remove --------------------------------------------------------------------------------------
def test_remove_makes_the_pruning_permanent(device):
    def run(lib, dev):
        p = prune_of(lib)
        m = build(lib, dev, "conv")
        orig = m.weight
        p.l1_unstructured(m, "weight", amount=0.5)
        p.ln_structured(m, "weight", amount=1, n=1, dim=1)
        out = p.remove(m, "weight")
        y = m(x_for(lib, dev, "conv"))
        y.sum().backward()
        return dict(same=(out is m, m.weight is orig, type(m.weight).__name__),
                    params=[n for n, _ in m.named_parameters()], state=list(m.state_dict()),
                    hooks=len(m._forward_pre_hooks), pruned=p.is_pruned(m),
                    weight=np_of(m.weight), y=np_of(y), grad=np_of(m.weight.grad))

    t, r = both(run, device)
    assert_same(t, r)
    assert r["params"] == ["bias", "weight"] and r["same"] == (True, True, "Parameter")


def test_remove_of_an_unpruned_tensor_raises_like_torch():
    for lib in (torch, rustgrad):
        with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned before"):
            prune_of(lib).remove(lib.nn.Linear(2, 2), "weight")


def test_is_pruned_looks_into_submodules():
    for lib in (torch, rustgrad):
        nn = lib.nn
        m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 2)))
        assert not prune_of(lib).is_pruned(m)
        prune_of(lib).identity(m[1][1], "bias")
        assert prune_of(lib).is_pruned(m)


# ---- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,phrase", [
    (lambda p, m: p.l1_unstructured(m, "weight", amount=1.5), ValueError,
     "should either be a float in the range [0, 1] or a non-negative integer"),
    (lambda p, m: p.l1_unstructured(m, "weight", amount=-1), ValueError,
     "should either be a float in the range [0, 1] or a non-negative integer"),
    (lambda p, m: p.l1_unstructured(m, "weight", amount="a"), TypeError,
     "Invalid type for amount: a. Must be int or float."),
    (lambda p, m: p.l1_unstructured(m, "weight", amount=25), ValueError,
     "amount=25 should be smaller than the number of parameters to prune=24"),
    (lambda p, m: p.ln_structured(m, "bias", amount=1, n=2, dim=0), ValueError,
     "Structured pruning can only be applied to multidimensional tensors"),
    (lambda p, m: p.ln_structured(m, "weight", amount=1, n=2, dim=2), IndexError,
     "Invalid index 2 for tensor of size"),
    (lambda p, m: p.random_structured(m, "weight", amount=5, dim=0), ValueError,
     "amount=5 should be smaller than the number of parameters to prune=4"),
    (lambda p, m: p.l1_unstructured(m, "weight", amount=1, importance_scores=m.bias), AssertionError,
     "importance_scores should have the same shape as parameter weight"),
])
def test_errors_leave_the_module_as_torch_does(device, call, exc, phrase):
    def run(lib, dev):
        m = build(lib, dev)
        with pytest.raises(exc) as info:
            call(prune_of(lib), m)
        assert phrase in str(info.value), str(info.value)
        return ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                len(m._forward_pre_hooks), "weight_orig" in m._parameters)

    t, r = both(run, device)
    assert r == t


def test_pruning_container_rejects_another_tensor_like_torch():
    for lib in (torch, rustgrad):
        p = prune_of(lib)
        a = p.L1Unstructured(1)
        a._tensor_name = "weight"
        b = p.L1Unstructured(1)
        b._tensor_name = "bias"
        container = p.PruningContainer(a)
        with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter"):
            container.add_pruning_method(b)
        with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
            container.add_pruning_method(3)
        with pytest.raises(TypeError):
            p.BasePruningMethod()  # abstract


# ---- the method objects and training -----------------------------------------------------------
def test_method_prune_returns_the_masked_tensor(device):
    def run(lib, dev):
        p = prune_of(lib)
        t = lib.tensor(W_LIN, device=on(lib, dev))
        return (np_of(p.L1Unstructured(amount=0.5).prune(t)),
                np_of(p.LnStructured(amount=2, n=1, dim=0).prune(t)), np_of(t))

    t, r = both(run, device)
    for a, b in zip(t, r):
        np.testing.assert_array_equal(b, a)


def test_state_dict_of_a_pruned_model_loads_into_torch():
    rm = build(rustgrad, "cpu", "conv")
    prune_of(rustgrad).ln_structured(rm, "weight", amount=2, n=2, dim=0)
    tm = build(torch, "cpu", "conv")
    prune_of(torch).identity(tm, "weight")

    tm.load_state_dict({k: torch.tensor(np_of(v)) for k, v in rm.state_dict().items()})

    np.testing.assert_allclose(np_of(tm(torch.tensor(X_CONV))),
                               np_of(rm(rustgrad.tensor(X_CONV))), rtol=1e-10)


def test_sgd_steps_on_a_pruned_model_like_torch(device):
    def run(lib, dev):
        m = build(lib, dev, "conv")
        prune_of(lib).l1_unstructured(m, "weight", amount=0.5)
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            (m(x_for(lib, dev, "conv")) ** 2).mean().backward()
            opt.step()
        y = m(x_for(lib, dev, "conv"))
        return np_of(m.weight_orig), np_of(m.weight), np_of(y)

    t, r = both(run, device)
    for a, b in zip(t, r):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    assert (r[1] == 0).sum() >= W_CONV.size // 2
