"""Lazy modules against torch: UninitializedParameter/UninitializedBuffer, LazyModuleMixin and
the lazy layers (Linear, Conv1d/2d, ConvTranspose1d/2d, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d):
reprs and state_dicts before and after the first forward, the class they become, values and
gradients once materialized (torch's values copied in), the eager layer's initialization,
load_state_dict in every lazy/initialized combination, an optimizer built before the first
forward, and torch's errors."""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import same_error

# name -> (constructor over a library, input shape)
CASES: Dict[str, Tuple[Callable[[Any], Any], Tuple[int, ...]]] = {
    "Linear": (lambda L: L.nn.LazyLinear(4), (3, 5)),
    "Linear_nobias_3d": (lambda L: L.nn.LazyLinear(2, bias=False), (2, 3, 6)),
    "Linear_unbatched": (lambda L: L.nn.LazyLinear(3), (5,)),
    "Conv1d": (lambda L: L.nn.LazyConv1d(4, 3, padding=1), (2, 3, 7)),
    "Conv1d_unbatched": (lambda L: L.nn.LazyConv1d(2, 2), (3, 6)),
    "Conv2d_groups": (lambda L: L.nn.LazyConv2d(4, 3, stride=2, groups=2, bias=False),
                      (2, 6, 7, 7)),
    "Conv2d_reflect": (lambda L: L.nn.LazyConv2d(3, 3, padding=1, padding_mode="reflect"),
                       (1, 2, 5, 5)),
    "ConvTranspose1d": (lambda L: L.nn.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 5)),
    "ConvTranspose2d_groups": (lambda L: L.nn.LazyConvTranspose2d(4, 3, groups=2),
                               (2, 6, 4, 4)),
    "BatchNorm1d": (lambda L: L.nn.LazyBatchNorm1d(), (6, 3)),
    "BatchNorm2d_noaffine": (lambda L: L.nn.LazyBatchNorm2d(affine=False), (2, 3, 4, 4)),
    "BatchNorm3d_nostats": (lambda L: L.nn.LazyBatchNorm3d(track_running_stats=False),
                            (2, 3, 2, 3, 2)),
    "InstanceNorm1d": (lambda L: L.nn.LazyInstanceNorm1d(), (2, 3, 6)),
    "InstanceNorm2d_noaffine": (lambda L: L.nn.LazyInstanceNorm2d(affine=False),
                                (2, 3, 4, 4)),
    "InstanceNorm3d_nostats": (lambda L: L.nn.LazyInstanceNorm3d(track_running_stats=False),
                               (2, 2, 3, 2, 3)),
}


def _summary(sd: Dict[str, Any]) -> List[Tuple[str, Any]]:
    """A state_dict as (key, repr of an uninitialized value, or the shape of a real one)."""
    return [(k, repr(v) if type(v).__name__.startswith("Uninitialized") else tuple(v.shape))
            for k, v in sd.items()]


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


@pytest.mark.parametrize("case", sorted(CASES))
def test_first_forward_materializes_as_torch(case, device):
    make, shape = CASES[case]
    tm = make(torch).double()
    rm = make(rustgrad).to(device).double()
    assert repr(rm) == repr(tm)
    assert _summary(rm.state_dict()) == _summary(tm.state_dict())
    assert rm.has_uninitialized_params() is tm.has_uninitialized_params() is True
    x = np.random.default_rng(0).normal(size=shape)
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, device=device, requires_grad=True)
    tm(tx)
    rm(rx)
    # the module is now the eager class, with its parameters and buffers of torch's shapes
    assert type(rm).__name__ == type(tm).__name__ and not type(rm).__name__.startswith("Lazy")
    assert repr(rm) == repr(tm)
    assert _summary(rm.state_dict()) == _summary(tm.state_dict())
    assert not hasattr(rm, "_initialize_hook") and not hasattr(rm, "_load_hook")
    assert not rm._forward_pre_hooks
    assert all(type(p) is rustgrad.nn.Parameter for p in rm.parameters())
    assert all(p.device.type == device for p in rm.parameters())
    # torch's values in, then the same outputs and gradients
    rm.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                        for k, v in tm.state_dict().items()})
    g = np.random.default_rng(1).normal(size=tuple(tm(tx).shape))
    tout, rout = tm(tx), rm(rx)
    np.testing.assert_allclose(_np(rout), _np(tout), rtol=1e-9, atol=1e-10)
    tx.grad = None
    rx.grad = None
    tout.backward(torch.tensor(g))
    rout.backward(rustgrad.tensor(g, device=device))
    np.testing.assert_allclose(_np(rx.grad), _np(tx.grad), rtol=1e-9, atol=1e-10)
    for (tn, tp), (rn, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        assert tn == rn
        np.testing.assert_allclose(_np(rp.grad), _np(tp.grad), rtol=1e-9, atol=1e-10)


EAGER = {
    "LazyLinear": (lambda L: L.nn.LazyLinear(4), lambda L: L.nn.Linear(5, 4), (3, 5)),
    "LazyConv1d": (lambda L: L.nn.LazyConv1d(4, 3), lambda L: L.nn.Conv1d(5, 4, 3), (2, 5, 6)),
    "LazyConv2d": (lambda L: L.nn.LazyConv2d(5, 3, groups=5, bias=False),
                   lambda L: L.nn.Conv2d(5, 5, 3, groups=5, bias=False), (1, 5, 4, 4)),
    "LazyConvTranspose1d": (lambda L: L.nn.LazyConvTranspose1d(4, 3),
                            lambda L: L.nn.ConvTranspose1d(5, 4, 3), (2, 5, 6)),
    "LazyConvTranspose2d": (lambda L: L.nn.LazyConvTranspose2d(4, 2, stride=2),
                            lambda L: L.nn.ConvTranspose2d(5, 4, 2, stride=2), (1, 5, 3, 3)),
    "LazyBatchNorm2d": (lambda L: L.nn.LazyBatchNorm2d(), lambda L: L.nn.BatchNorm2d(5),
                        (2, 5, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(EAGER))
def test_materialized_parameters_get_the_eager_layers_initialization(name, device):
    lazy, eager, shape = EAGER[name]
    x = rustgrad.randn(*shape, device=device)
    ref = eager(rustgrad).to(device)
    rustgrad.manual_seed(3)
    ref.reset_parameters()  # the eager layer's one initialization, from the same seed
    rustgrad.manual_seed(3)
    m = lazy(rustgrad).to(device)
    m.initialize_parameters(x)  # a forward would move BatchNorm's running statistics
    assert list(m.state_dict()) == list(ref.state_dict())
    for (k, a), b in zip(m.state_dict().items(), ref.state_dict().values()):
        assert a.shape == b.shape, k
        np.testing.assert_array_equal(_np(a), _np(b), err_msg=k)


def test_uninitialized_parameter_and_buffer_as_torch():
    for L in (torch, rustgrad):
        p = L.nn.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>"
        assert isinstance(p, L.nn.Parameter) and L.nn.parameter.is_lazy(p)
        assert p.requires_grad and p.is_leaf and p.dtype == L.float32
        assert p.device.type == "cpu" and p.grad is None
        assert tuple(p.size()) == (0,)
        assert p.float() is p
        assert type(p.to(L.float64)).__name__ == "Tensor"
        assert type(copy.deepcopy(p)).__name__ == "UninitializedParameter"
        assert not L.nn.UninitializedParameter(requires_grad=False).requires_grad
        assert L.nn.UninitializedParameter(dtype=L.float64).dtype == L.float64
        b = L.nn.UninitializedBuffer()
        assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
        assert type(b.double()).__name__ == "UninitializedBuffer"
        assert L.nn.parameter.is_lazy(b) and not L.nn.parameter.is_lazy(L.ones(1))
        p.materialize((2, 3))
        assert type(p) is L.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
        b.materialize((4,), dtype=L.float64)
        assert type(b) is L.Tensor and tuple(b.shape) == (4,) and b.dtype == L.float64
    for use, phrase, kind in [
        (lambda L: L.nn.UninitializedParameter().shape, "Can't access the shape of an "
         "uninitialized parameter or buffer", RuntimeError),
        (lambda L: L.nn.UninitializedParameter() + 1, "Attempted to use an uninitialized "
         "parameter in", ValueError),
        (lambda L: L.nn.UninitializedParameter().sum(), "Call `forward` with a dummy batch",
         ValueError),
        (lambda L: L.nn.UninitializedParameter().numel(), "explicitly manipulating "
         "`torch.nn.parameter.UninitializedParameter` objects", ValueError),
        (lambda L: L.nn.UninitializedParameter().share_memory_(), "Can't share memory on an "
         "uninitialized parameter", RuntimeError),
        (lambda L: copy.deepcopy(L.nn.UninitializedBuffer()), "`torch.nn.parameter."
         "UninitializedBuffer` objects", ValueError),
    ]:
        same_error(use, phrase)
        assert isinstance(pytest.raises(kind, use, rustgrad).value, kind)


def test_state_dict_and_load_state_dict_as_torch():
    def run(L: Any) -> List[Any]:
        L.manual_seed(0)
        seen: List[Any] = []
        lazy = L.nn.Sequential(L.nn.LazyLinear(3), L.nn.ReLU(), L.nn.LazyBatchNorm1d())
        seen.append(_summary(lazy.state_dict()))
        seen.append(_summary(lazy.state_dict(keep_vars=True)))
        full = L.nn.Sequential(L.nn.Linear(5, 3), L.nn.ReLU(), L.nn.BatchNorm1d(3))
        # initialized into lazy: materialized to the checkpoint's shapes, values copied
        res = lazy.load_state_dict(full.state_dict())
        seen.append((list(res.missing_keys), list(res.unexpected_keys)))
        seen.append([type(m).__name__ for m in lazy])
        seen.append(lazy[0].in_features)
        seen.append(_summary(lazy.state_dict()))
        seen.append(all(L.equal(a, b) for a, b in zip(lazy.state_dict().values(),
                                                        full.state_dict().values())))
        lazy(L.ones(2, 5))  # keeps the loaded values, becomes the eager classes
        seen.append([type(m).__name__ for m in lazy] + [lazy[0].in_features])
        seen.append(L.equal(lazy[0].weight, full[0].weight))
        # uninitialized into uninitialized: accepted, still lazy
        other = L.nn.LazyLinear(3)
        res = other.load_state_dict(L.nn.LazyLinear(3).state_dict())
        seen.append((list(res.missing_keys), other.has_uninitialized_params()))
        # partial, non-strict
        part = L.nn.LazyLinear(3)
        res = part.load_state_dict({"weight": L.ones(3, 2)}, strict=False)
        seen.append((list(res.missing_keys), _summary(part.state_dict())))
        return seen

    ours, theirs = run(rustgrad), run(torch)
    assert ours == theirs


def test_load_errors_as_torch():
    same_error(lambda L: L.nn.Linear(2, 3).load_state_dict(L.nn.LazyLinear(3).state_dict()),
               "Can't access the shape of an uninitialized parameter")
    same_error(lambda L: L.nn.LazyLinear(3).load_state_dict({"weight": L.ones(3, 2)}),
               'Missing key(s) in state_dict: "bias"')

    def loaded_then_wrong_width(L: Any) -> Any:
        m = L.nn.LazyLinear(2)
        m.load_state_dict(L.nn.Linear(3, 2).state_dict())
        return m(L.ones(1, 4))

    same_error(loaded_then_wrong_width,
               "The in_features inferred from input: 4 is not equal to in_features from "
               "self.weight: 3")


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_optimizer_built_before_the_first_forward_trains_as_torch(opt, device):
    x = np.random.default_rng(2).normal(size=(4, 5))

    def train(L: Any, dev: str, weights: Any) -> List[np.ndarray]:
        m = L.nn.LazyLinear(2).to(dev).double()
        o = getattr(L.optim, opt)(m.parameters(), lr=0.1)
        held = list(m.parameters())
        m.initialize_parameters(L.tensor(x, device=dev))
        with L.no_grad():
            for p, w in zip(m.parameters(), weights):
                p.copy_(L.tensor(w, device=dev))
        for _ in range(3):
            o.zero_grad()
            (m(L.tensor(x, device=dev)) ** 2).sum().backward()
            o.step()
        assert [id(p) for p in m.parameters()] == [id(p) for p in held]
        return [_np(p) for p in m.parameters()]

    w = [np.random.default_rng(3).normal(size=(2, 5)), np.random.default_rng(4).normal(size=2)]
    for a, b in zip(train(rustgrad, device, w), train(torch, "cpu", w)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_initialize_parameters_then_forward_as_torch():
    def run(L: Any) -> List[Any]:
        m = L.nn.LazyConv2d(4, 3)
        seen: List[Any] = [m.in_channels]
        m.initialize_parameters(L.ones(1, 2, 5, 5))
        # materialized but still the lazy class until its forward
        seen += [type(m).__name__, tuple(m.weight.shape), m.has_uninitialized_params(),
                 hasattr(m, "_initialize_hook"), m.in_channels]
        m(L.ones(1, 2, 5, 5))
        seen += [type(m).__name__, hasattr(m, "_initialize_hook"), repr(m)]
        return seen

    assert run(rustgrad) == run(torch)
    same_error(lambda L: L.nn.LazyLinear(3).initialize_parameters(), "missing 1 required "
               "positional argument: 'input'")


@pytest.mark.parametrize("call, phrase", [
    (lambda L: L.nn.LazyConv2d(4, 3)(L.ones(3, 3)),
     "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: "
     "torch.Size([3, 3])"),
    (lambda L: L.nn.LazyConv1d(4, 3, groups=2)(L.ones(1, 3, 5)),
     "in_channels must be divisible by groups"),
    (lambda L: L.nn.LazyConvTranspose1d(4, 3, padding_mode="reflect"),
     'Only "zeros" padding mode is supported for LazyConvTranspose1d'),
    (lambda L: L.nn.LazyBatchNorm2d()(L.ones(2, 3)), "expected 4D input (got 2D input)"),
    (lambda L: L.nn.LazyInstanceNorm1d()(L.ones(3, 5)),
     "expected input's size at dim=0 to match num_features (5), but got: 3."),
    (lambda L: L.nn.LazyLinear(3)(L.ones(2, 4, dtype=L.float64)),
     "must have the same dtype"),
    (lambda L: L.nn.LazyLinear(3)._replicate_for_data_parallel(),
     "Modules with uninitialized parameters can't be used with `DataParallel`"),
])
def test_errors_as_torch(call, phrase):
    same_error(call, phrase)


def test_a_user_lazy_module_as_torch():
    def run(L: Any) -> List[Any]:
        class Half(L.nn.modules.lazy.LazyModuleMixin, L.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = L.nn.UninitializedParameter()
                self.b = L.nn.UninitializedParameter()

            def initialize_parameters(self, x: Any) -> None:
                self.a.materialize(x.shape)

            def forward(self, x: Any) -> Any:
                return x * self.a

        class Whole(Half):
            def initialize_parameters(self, x: Any) -> None:
                self.a.materialize(x.shape)
                self.b.materialize(x.shape)

        class Bare(L.nn.modules.lazy.LazyModuleMixin, L.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.w = L.nn.UninitializedParameter()

        seen: List[Any] = []
        for make in (Half, Bare):
            try:
                make()(L.ones(2))
            except Exception as e:  # noqa: BLE001  (the exception is compared)
                seen.append((type(e).__name__, str(e)))
        w = Whole()
        w(L.ones(3))
        seen += [type(w).__name__, w.has_uninitialized_params(), tuple(w.a.shape)]
        return seen

    assert run(rustgrad) == run(torch)


def test_copies_and_pickles_become_eager_on_their_own():
    m = rustgrad.nn.LazyLinear(3)
    c = copy.deepcopy(m)
    p = pickle.loads(pickle.dumps(m))
    c(rustgrad.ones(2, 4))
    assert type(c) is rustgrad.nn.Linear and c.in_features == 4
    assert type(m) is rustgrad.nn.LazyLinear and m.has_uninitialized_params()
    p(rustgrad.ones(2, 6))
    assert type(p) is rustgrad.nn.Linear and p.in_features == 6
    m(rustgrad.ones(1, 5))
    assert m.in_features == 5 and not m._forward_pre_hooks and not c._forward_pre_hooks


def test_conversions_before_the_first_forward_as_torch(device):
    def run(L: Any, dev: str) -> List[Any]:
        m = L.nn.Sequential(L.nn.LazyLinear(3), L.nn.LazyBatchNorm1d()).to(dev).double()
        seen: List[Any] = [type(m[0].weight).__name__, m[0].weight.dtype == L.float64,
                           type(m[1].running_mean).__name__, m[1].running_var.dtype == L.float64,
                           m[1].num_batches_tracked.dtype == L.int64]
        m(L.ones(4, 2, dtype=L.float64, device=dev))
        seen += [str(p.dtype) for p in m.state_dict().values()]
        return seen

    assert run(rustgrad, device) == run(torch, "cpu")
