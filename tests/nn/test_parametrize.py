"""nn.utils.parametrize and nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal),
and the legacy hook forms nn.utils.weight_norm / spectral_norm, against torch: the same program
under both libraries (rustgrad's on each device), comparing values, gradients, names, classes,
flags and errors."""

from __future__ import annotations

import copy
import pickle
import warnings
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import rustgrad
import torch

RNG = np.random.default_rng(0)
W33 = RNG.standard_normal((3, 3))
B3 = RNG.standard_normal(3)
X23 = RNG.standard_normal((2, 3))


def np_of(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def close(r: Any, t: Any, rtol: float = 1e-10, atol: float = 1e-12, what: str = "") -> None:
    rv, tv = np_of(r), np_of(t)
    assert rv.shape == tv.shape, f"{what}: shape {rv.shape} != {tv.shape}"
    np.testing.assert_allclose(rv, tv, rtol=rtol, atol=atol, err_msg=what)


def P(lib: Any) -> Any:
    """lib.nn.utils.parametrize (imported as a submodule, as torch users do)."""
    return __import__(f"{lib.__name__}.nn.utils.parametrize", fromlist=["x"])


def PZ(lib: Any) -> Any:
    return __import__(f"{lib.__name__}.nn.utils.parametrizations", fromlist=["x"])


def on(lib: Any, device: str) -> str:
    return "cpu" if lib is torch else device


def linear(lib: Any, device: str, w: np.ndarray = W33, b: np.ndarray = B3) -> Any:
    m = lib.nn.Linear(w.shape[1], w.shape[0]).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(b))
    return m.to(on(lib, device))


def both(fn: Callable[[Any, str], Any], device: str) -> List[Any]:
    """[torch's result, rustgrad's result] of fn(lib, device)."""
    return [fn(torch, device), fn(rustgrad, device)]


# ---- parametrizations used in the tests (one class per library, same code) --------------------
def symmetric(lib: Any) -> Any:
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    return Symmetric()


def scale(lib: Any, k: float) -> Any:
    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * k

        def right_inverse(self, Y):
            return Y / k

    return Scale()


def halves(lib: Any) -> Any:
    """Two originals: the tensor is their sum."""
    class Halves(lib.nn.Module):
        def forward(self, a, b):
            return a + 2 * b

        def right_inverse(self, Y):
            return Y / 2, Y / 4

    return Halves()


# ---- register_parametrization -----------------------------------------------------------------
def test_register_swaps_the_class_and_moves_the_original(device):
    def run(lib, dev):
        m = linear(lib, dev)
        w0 = m.weight
        out = P(lib).register_parametrization(m, "weight", symmetric(lib))
        y = m(lib.tensor(X23, device=on(lib, dev)))
        (y ** 2).sum().backward()
        orig = m.parametrizations.weight.original
        return dict(
            same=out is m, cls=type(m).__name__, base=type(m).__bases__[0].__name__,
            before=P(lib).type_before_parametrizations(m).__name__,
            flags=(P(lib).is_parametrized(m), P(lib).is_parametrized(m, "weight"),
                   P(lib).is_parametrized(m, "bias")),
            params=[n for n, _ in m.named_parameters()], state=list(m.state_dict()),
            kept=orig is w0, is_param=type(orig).__name__, plist=type(m.parametrizations.weight).__name__,
            unsafe=m.parametrizations.weight.unsafe, is_tensor=m.parametrizations.weight.is_tensor,
            weight=np_of(m.weight), y=np_of(y), grad=np_of(orig.grad), bgrad=np_of(m.bias.grad),
            leaf=(m.weight.is_leaf, m.weight.requires_grad), repr=repr(m))

    t, r = both(run, device)
    for k in ("same", "cls", "base", "before", "flags", "params", "state", "kept", "is_param",
              "plist", "unsafe", "is_tensor", "leaf", "repr"):
        assert r[k] == t[k], k
    for k in ("weight", "y", "grad", "bgrad"):
        np.testing.assert_allclose(r[k], t[k], rtol=1e-10, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(r["weight"], r["weight"].T)


def test_assigning_calls_right_inverse(device):
    A = W33 + W33.T

    def run(lib, dev):
        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", symmetric(lib))
        orig = m.parametrizations.weight.original
        m.weight = lib.tensor(A, device=on(lib, dev))
        return (np_of(m.weight), np_of(m.parametrizations.weight.original),
                m.parametrizations.weight.original is orig)

    (tw, to, tk), (rw, ro, rk) = both(run, device)
    np.testing.assert_allclose(rw, tw)
    np.testing.assert_allclose(ro, to)
    np.testing.assert_allclose(rw, A)
    assert rk and tk


def test_chained_parametrizations_apply_in_order(device):
    def run(lib, dev):
        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", symmetric(lib))
        P(lib).register_parametrization(m, "weight", scale(lib, 3.0))
        (m(lib.tensor(X23, device=on(lib, dev))).sum()).backward()
        m.weight = lib.tensor(np.eye(3) * 6.0, device=on(lib, dev))
        return (len(m.parametrizations.weight), [n for n, _ in m.named_modules()],
                np_of(m.parametrizations.weight.original.grad),
                np_of(m.parametrizations.weight.original), np_of(m.weight))

    t, r = both(run, device)
    assert r[:2] == t[:2]
    for a, b in zip(r[2:], t[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_right_inverse_returning_several_tensors_registers_original0_original1(device):
    def run(lib, dev):
        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", halves(lib))
        pl = m.parametrizations.weight
        (m(lib.tensor(X23, device=on(lib, dev))) ** 2).sum().backward()
        res = dict(names=[n for n, _ in m.named_parameters()], is_tensor=pl.is_tensor,
                   ntensors=pl.ntensors, w=np_of(m.weight), o0=np_of(pl.original0),
                   g0=np_of(pl.original0.grad), g1=np_of(pl.original1.grad),
                   types=(type(pl.original0).__name__, pl.original1.requires_grad))
        try:
            P(lib).remove_parametrizations(m, "weight", leave_parametrized=False)
        except ValueError as e:
            res["error"] = str(e)
        P(lib).remove_parametrizations(m, "weight")
        res["after"] = ([n for n, _ in m.named_parameters()], type(m.weight).__name__,
                        type(m).__name__)
        res["w_after"] = np_of(m.weight)
        return res

    t, r = both(run, device)
    for k in ("names", "is_tensor", "ntensors", "types", "after"):
        assert r[k] == t[k], k
    assert "Cannot leave unparametrized" in t["error"] and "Cannot leave unparametrized" in r["error"]
    for k in ("w", "o0", "g0", "g1", "w_after"):
        np.testing.assert_allclose(r[k], t[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_a_buffer_can_be_parametrized(device):
    def run(lib, dev):
        m = lib.nn.BatchNorm1d(3).double().to(on(lib, dev))
        with lib.no_grad():
            m.running_var.copy_(lib.tensor([1.0, 2.0, 3.0]))
        P(lib).register_parametrization(m, "running_var", scale(lib, 2.0))
        orig = m.parametrizations.running_var.original
        return (list(m.state_dict()), [n for n, _ in m.named_buffers()], type(orig).__name__,
                orig.requires_grad, np_of(m.running_var), np_of(orig))

    t, r = both(run, device)
    assert r[:4] == t[:4]
    np.testing.assert_allclose(r[4], t[4])
    np.testing.assert_allclose(r[5], t[5])


@pytest.mark.parametrize("case,phrase", [
    ("shape", "may not change the shape of the tensor"),
    ("dtype", "may not change the dtype of the tensor"),
    ("second_shape", "may not change the shape of the tensor"),
    ("missing", "does not have a parameter, a buffer, or a parametrized element with name"),
    ("remove", "does not have a parametrization on"),
    ("no_inverse", "does not implement right_inverse"),
    ("inverse_dtype", "When `right_inverse` outputs one tensor, it may not change the dtype"),
    ("inverse_type", "'right_inverse' must return a Tensor or a Sequence of tensors"),
])
def test_errors_like_torch(case, phrase):
    def program(lib):
        nn = lib.nn

        class Flatten(nn.Module):
            def forward(self, X):
                return X.flatten()

        class ToFloat(nn.Module):
            def forward(self, X):
                return X.float()

        class NoInverse(nn.Module):
            def forward(self, X):
                return X

        class BadInverse(nn.Module):
            def forward(self, X):
                return X

            def right_inverse(self, X):
                return X.float() if case == "inverse_dtype" else 3

        m = nn.Linear(3, 3).double()
        reg = P(lib).register_parametrization
        if case == "shape":
            reg(m, "weight", Flatten())
        elif case == "dtype":
            reg(m, "weight", ToFloat())
        elif case == "second_shape":
            reg(m, "weight", NoInverse())
            reg(m, "weight", Flatten())
        elif case == "missing":
            reg(m, "nope", NoInverse())
        elif case == "remove":
            P(lib).remove_parametrizations(m, "weight")
        elif case == "no_inverse":
            reg(m, "weight", NoInverse())
            m.weight = lib.zeros(3, 3, dtype=lib.float64)
        else:
            reg(m, "weight", BadInverse())

    errors = []
    for lib in (torch, rustgrad):
        with pytest.raises(Exception) as info:
            program(lib)
        errors.append(info.value)
    assert type(errors[1]) is not Exception and type(errors[1]).__name__ == type(errors[0]).__name__
    assert phrase in str(errors[0]), str(errors[0])
    assert phrase in str(errors[1]), str(errors[1])


def test_unsafe_allows_a_change_of_shape(device):
    def run(lib, dev):
        class Flatten(lib.nn.Module):
            def forward(self, X):
                return X.flatten()

        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", Flatten(), unsafe=True)
        return tuple(m.weight.shape), m.parametrizations.weight.unsafe

    t, r = both(run, device)
    assert r == t == ((9,), True)


def test_cached_computes_once_and_gradients_still_add_up(device):
    calls: Dict[str, int] = {}

    def run(lib, dev):
        calls[lib.__name__] = 0

        class Counting(lib.nn.Module):
            def forward(self, X):
                calls[lib.__name__] += 1
                return X * 2

        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", Counting())
        calls[lib.__name__] = 0
        x = lib.tensor(X23, device=on(lib, dev))
        with P(lib).cached():
            same = m.weight is m.weight
            with P(lib).cached():  # nested blocks share the outer cache
                y = m(m(x))
        inside = calls[lib.__name__]
        y.sum().backward()
        after = m.weight is m.weight
        return same, inside, after, np_of(y), np_of(m.parametrizations.weight.original.grad)

    t, r = both(run, device)
    assert r[:3] == t[:3] == (True, 1, False)
    np.testing.assert_allclose(r[3], t[3], rtol=1e-10)
    np.testing.assert_allclose(r[4], t[4], rtol=1e-10)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_restores_the_class_and_the_parameter(device, leave):
    def run(lib, dev):
        m = linear(lib, dev)
        w0 = m.weight
        P(lib).register_parametrization(m, "weight", symmetric(lib))
        P(lib).register_parametrization(m, "bias", scale(lib, 2.0))
        P(lib).remove_parametrizations(m, "weight", leave_parametrized=leave)
        mid = (type(m).__name__, [n for n, _ in m.named_parameters()])
        P(lib).remove_parametrizations(m, "bias", leave_parametrized=leave)
        return (mid, type(m).__name__, [n for n, _ in m.named_parameters()], m.weight is w0,
                hasattr(m, "parametrizations"), type(m.weight).__name__, m.weight.requires_grad,
                np_of(m.weight), np_of(m.bias))

    t, r = both(run, device)
    assert r[:7] == t[:7]
    np.testing.assert_allclose(r[7], t[7])
    np.testing.assert_allclose(r[8], t[8])


def test_deepcopy_works_and_pickle_refuses(device):
    def run(lib, dev):
        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", symmetric(lib))
        c = copy.deepcopy(m)
        with lib.no_grad():
            m.parametrizations.weight.original.zero_()
        try:
            pickle.dumps(m)
            err = None
        except RuntimeError as e:
            err = str(e)
        return (type(c).__name__, c.parametrizations.weight.original is m.parametrizations.weight.original,
                np_of(c.weight), np_of(m.weight), err)

    t, r = both(run, device)
    assert r[:2] == t[:2]
    np.testing.assert_allclose(r[2], t[2])
    np.testing.assert_allclose(r[3], 0)
    assert "Serialization of parametrized modules is only supported through state_dict()" in r[4]
    assert t[4] is not None and r[4].split(":")[0] == t[4].split(":")[0]


def test_the_parametrization_takes_the_module_training_mode():
    for lib in (torch, rustgrad):
        m = lib.nn.Linear(2, 2).eval()
        p = scale(lib, 2.0)
        P(lib).register_parametrization(m, "weight", p)
        assert p.training is False
        m.train()
        assert p.training is True


def test_transfer_parametrizations_and_params(device):
    def run(lib, dev):
        a = linear(lib, dev)
        P(lib).register_parametrization(a, "weight", symmetric(lib))
        b = linear(lib, dev, w=np.zeros((3, 3)))
        P(lib).transfer_parametrizations_and_params(a, b)
        return (type(b).__name__, b.parametrizations.weight.original is a.parametrizations.weight.original,
                np_of(b.weight))

    t, r = both(run, device)
    assert r[:2] == t[:2]
    np.testing.assert_allclose(r[2], t[2])


def test_state_dict_loads_across_libraries():
    tm = linear(torch, "cpu")
    P(torch).register_parametrization(tm, "weight", symmetric(torch))
    rm = linear(rustgrad, "cpu", w=np.zeros((3, 3)), b=np.zeros(3))
    P(rustgrad).register_parametrization(rm, "weight", symmetric(rustgrad))

    result = rm.load_state_dict({k: rustgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})

    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    close(rm.weight, tm.weight)


def test_sgd_trains_the_original_in_place(device):
    def run(lib, dev):
        m = linear(lib, dev)
        P(lib).register_parametrization(m, "weight", symmetric(lib))
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = lib.tensor(X23, device=on(lib, dev))
        for _ in range(3):
            opt.zero_grad()
            (m(x) ** 2).mean().backward()
            opt.step()
        return np_of(m.weight), np_of(m.bias)

    t, r = both(run, device)
    np.testing.assert_allclose(r[0], t[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r[1], t[1], rtol=1e-10, atol=1e-12)


# ---- parametrizations.weight_norm ---------------------------------------------------------------
@pytest.mark.parametrize("build,dim", [
    ("linear", 0), ("linear", 1), ("linear", None), ("linear", -1), ("conv", 0), ("conv", 2),
])
def test_weight_norm_like_torch(device, build, dim):
    w = RNG.standard_normal((4, 3, 2, 2)) if build == "conv" else RNG.standard_normal((4, 3))
    x = RNG.standard_normal((2, 3, 5, 5)) if build == "conv" else RNG.standard_normal((2, 3))

    def run(lib, dev):
        nn = lib.nn
        m = (nn.Conv2d(3, 4, 2) if build == "conv" else nn.Linear(3, 4)).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        m = PZ(lib).weight_norm(m.to(on(lib, dev)), dim=dim)
        pl = m.parametrizations.weight
        y = m(lib.tensor(x, device=on(lib, dev)))
        (y ** 2).sum().backward()
        return dict(names=[n for n, _ in m.named_parameters()], state=list(m.state_dict()),
                    g=np_of(pl.original0), v=np_of(pl.original1), w=np_of(m.weight), y=np_of(y),
                    gg=np_of(pl.original0.grad), gv=np_of(pl.original1.grad),
                    unsafe=pl.unsafe)

    t, r = both(run, device)
    assert r["names"] == t["names"] and r["state"] == t["state"] and r["unsafe"] == t["unsafe"]
    for k in ("g", "v", "w", "y", "gg", "gv"):
        np.testing.assert_allclose(r[k], t[k], rtol=1e-9, atol=1e-11, err_msg=k)


def test_weight_norm_loads_a_legacy_state_dict():
    torch.manual_seed(0)
    legacy = torch.nn.Linear(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(legacy)
    state = {k: v.detach().numpy() for k, v in legacy.state_dict().items()}
    assert sorted(state) == ["bias", "weight_g", "weight_v"]
    results = []
    for lib in (torch, rustgrad):
        m = PZ(lib).weight_norm(lib.nn.Linear(3, 4))
        res = m.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        results.append((list(res.missing_keys), list(res.unexpected_keys),
                        np_of(m.parametrizations.weight.original0), np_of(m.weight)))
    (tm, tu, tg, tw), (rm, ru, rg_, rw) = results
    assert (rm, ru) == (tm, tu) == ([], [])
    np.testing.assert_allclose(rg_, state["weight_g"])
    np.testing.assert_allclose(rw, tw, rtol=1e-6)


# ---- parametrizations.spectral_norm -------------------------------------------------------------
def _copy_buffers(src: Any, dst: Any, names: List[str], device: str) -> None:
    with rustgrad.no_grad():
        for n in names:
            getattr(dst, n).copy_(rustgrad.tensor(np_of(getattr(src, n)), device=device))


@pytest.mark.parametrize("build", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_like_torch(device, build):
    shapes = {"linear": ((5, 4), (2, 4)), "conv": ((4, 3, 2, 2), (2, 3, 4, 4)),
              "conv_transpose": ((3, 4, 2, 2), (2, 3, 4, 4))}
    w, xs = shapes[build]
    w, x = RNG.standard_normal(w), RNG.standard_normal(xs)

    def make(lib, dev):
        nn = lib.nn
        m = {"linear": lambda: nn.Linear(4, 5), "conv": lambda: nn.Conv2d(3, 4, 2),
             "conv_transpose": lambda: nn.ConvTranspose2d(3, 4, 2)}[build]().double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        return PZ(lib).spectral_norm(m.to(on(lib, dev)), n_power_iterations=2)

    tm, rm = make(torch, device), make(rustgrad, device)
    tsn, rsn = tm.parametrizations.weight[0], rm.parametrizations.weight[0]
    assert rsn.dim == tsn.dim == (1 if build == "conv_transpose" else 0)
    assert [n for n, _ in rm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    # 16 power iterations from a random start: sigma is estimated from below, and closely
    mat = np.moveaxis(w, tsn.dim, 0).reshape(w.shape[tsn.dim], -1)
    sigma = np.linalg.svd(mat, compute_uv=False)[0]
    r_est = abs(np_of(rsn._u) @ mat @ np_of(rsn._v))
    assert 0.95 * sigma < r_est <= sigma * (1 + 1e-12)
    _copy_buffers(tsn, rsn, ["_u", "_v"], device)
    for training in (True, False):
        tm.train(training)
        rm.train(training)
        ty = tm(torch.tensor(x))
        ry = rm(rustgrad.tensor(x, device=device))
        (ty ** 2).sum().backward()
        (ry ** 2).sum().backward()
        close(ry, ty, 1e-9, 1e-11, "output")
        close(rsn._u, tsn._u, 1e-9, 1e-11, "_u")
        close(rsn._v, tsn._v, 1e-9, 1e-11, "_v")
        close(rm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
              1e-8, 1e-10, "grad")


def test_spectral_norm_of_a_vector_normalises_it(device):
    def run(lib, dev):
        m = lib.nn.Module()
        m.w = lib.nn.Parameter(lib.tensor([3.0, 4.0], device=on(lib, dev)))
        PZ(lib).spectral_norm(m, "w")
        return np_of(m.w), [n for n, _ in m.named_buffers()]

    (tw, tb), (rw, rb) = both(run, device)
    np.testing.assert_allclose(rw, tw)
    assert rb == tb == []


@pytest.mark.parametrize("kwargs,exc,phrase", [
    (dict(n_power_iterations=0), ValueError, "Expected n_power_iterations to be positive"),
    (dict(dim=2), IndexError, "Dimension out of range"),
    (dict(name="nope"), ValueError, "has no parameter or buffer with name 'nope'"),
])
def test_spectral_norm_errors(kwargs, exc, phrase):
    for lib in (torch, rustgrad):
        with pytest.raises(exc, match=phrase):
            PZ(lib).spectral_norm(lib.nn.Linear(3, 3), **kwargs)


# ---- parametrizations.orthogonal ----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
@pytest.mark.parametrize("orth_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_like_torch(device, shape, orth_map, triv):
    w = RNG.standard_normal(shape)
    x = RNG.standard_normal((2, shape[-1]))
    assign = RNG.standard_normal(shape)

    def make(lib, dev):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.tensor(w, device=on(lib, dev)))
        return PZ(lib).orthogonal(m, orthogonal_map=orth_map, use_trivialization=triv)

    tm, rm = make(torch, device), make(rustgrad, device)
    tp, rp = tm.parametrizations.weight, rm.parametrizations.weight
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert rp.unsafe is tp.unsafe is True
    close(rm.weight, tm.weight, 1e-9, 1e-11, "weight")
    q = np_of(rm.weight)
    gram = q @ np.swapaxes(q, -1, -2) if shape[-2] < shape[-1] else np.swapaxes(q, -1, -2) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape), atol=1e-12)
    if triv and shape[-2] != shape[-1]:
        # the base's extra columns are random: use torch's to compare what depends on them
        with rustgrad.no_grad():
            rp[0].base.copy_(rustgrad.tensor(np_of(tp[0].base), device=device))
    # move away from the starting point, then differentiate there
    with torch.no_grad():
        tp.original.add_(0.1 * torch.tensor(w))
    with rustgrad.no_grad():
        rp.original.add_(0.1 * rustgrad.tensor(w, device=device))
    ty = torch.tensor(x) @ tm.weight.mT
    ry = rustgrad.tensor(x, device=device) @ rm.weight.mT
    (ty ** 2).sum().backward()
    (ry ** 2).sum().backward()
    close(ry, ty, 1e-9, 1e-11, "output")
    close(rp.original.grad, tp.original.grad, 1e-8, 1e-10, "grad")
    errors = []
    for m, lib, dev in ((tm, torch, "cpu"), (rm, rustgrad, device)):
        try:
            m.weight = lib.tensor(assign, device=dev)
            errors.append(None)
        except NotImplementedError as e:
            errors.append(str(e))
    assert errors[0] == errors[1]
    if errors[0] is None:
        if triv and shape[-2] != shape[-1]:
            with rustgrad.no_grad():
                rp[0].base.copy_(rustgrad.tensor(np_of(tp[0].base), device=device))
        close(rm.weight, tm.weight, 1e-9, 1e-11, "assigned weight")
    else:
        assert "It is not possible to assign to the matrix exponential" in errors[0]


@pytest.mark.parametrize("kwargs,weight,phrase", [
    (dict(), (3,), "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."),
    (dict(orthogonal_map="qr"), (3, 3), 'orthogonal_map has to be one of "matrix_exp"'),
    (dict(name="nope"), (3, 3), "has no parameter or buffer with name 'nope'"),
])
def test_orthogonal_errors(kwargs, weight, phrase):
    for lib in (torch, rustgrad):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.zeros(*weight))
        with pytest.raises(ValueError, match=phrase.replace("(", r"\(").replace(".", r"\.")):
            PZ(lib).orthogonal(m, **kwargs)


def test_orthogonal_assignment_checks_the_shape():
    for lib in (torch, rustgrad):
        m = PZ(lib).orthogonal(lib.nn.Linear(3, 3))
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
            m.weight = lib.zeros(2, 2)


# ---- the legacy hook forms: nn.utils.weight_norm, nn.utils.spectral_norm ------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_legacy_weight_norm_like_torch(device, dim):
    x = RNG.standard_normal((2, 3))

    def run(lib, dev):
        m = linear(lib, dev)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = lib.nn.utils.weight_norm(m, dim=dim)
        res = dict(same=out is m, warn=[(w.category.__name__, str(w.message)) for w in caught],
                   names=[n for n, _ in m.named_parameters()], state=list(m.state_dict()),
                   attr=(type(m.weight).__name__, "weight" in m._parameters),
                   hooks=[type(h).__name__ for h in m._forward_pre_hooks.values()])
        y = m(lib.tensor(x, device=on(lib, dev)))
        (y ** 2).sum().backward()
        res.update(y=np_of(y), g=np_of(m.weight_g), gg=np_of(m.weight_g.grad),
                   gv=np_of(m.weight_v.grad))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                lib.nn.utils.weight_norm(m, dim=dim)
        except RuntimeError as e:
            res["twice"] = str(e)
        lib.nn.utils.remove_weight_norm(m)
        res["removed"] = ([n for n, _ in m.named_parameters()], type(m.weight).__name__,
                          len(m._forward_pre_hooks))
        res["w"] = np_of(m.weight)
        try:
            lib.nn.utils.remove_weight_norm(m)
        except ValueError as e:
            res["missing"] = str(e).split(" in ")[0]
        return res

    t, r = both(run, device)
    for k in ("same", "warn", "names", "state", "attr", "hooks", "twice", "removed", "missing"):
        assert r[k] == t[k], k
    for k in ("y", "g", "gg", "gv", "w"):
        np.testing.assert_allclose(r[k], t[k], rtol=1e-9, atol=1e-11, err_msg=k)


@pytest.mark.parametrize("build", ["linear", "conv_transpose"])
def test_legacy_spectral_norm_like_torch(device, build):
    w = RNG.standard_normal((5, 4) if build == "linear" else (3, 4, 2, 2))
    x = RNG.standard_normal((2, 4) if build == "linear" else (2, 3, 3, 3))

    def make(lib, dev):
        nn = lib.nn
        m = (nn.Linear(4, 5) if build == "linear" else nn.ConvTranspose2d(3, 4, 2)).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        m = m.to(on(lib, dev))
        w0 = m.weight
        out = lib.nn.utils.spectral_norm(m)
        assert out is m and m.weight_orig is w0
        return m

    tm, rm = make(torch, device), make(rustgrad, device)
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert type(rm.weight).__name__ == "Tensor" and "weight" not in rm._parameters
    _copy_buffers(tm, rm, ["weight_u", "weight_v"], device)
    for training in (True, False):
        tm.train(training)
        rm.train(training)
        ty, ry = tm(torch.tensor(x)), rm(rustgrad.tensor(x, device=device))
        (ty ** 2).sum().backward()
        (ry ** 2).sum().backward()
        close(ry, ty, 1e-9, 1e-11, "output")
        close(rm.weight_u, tm.weight_u, 1e-9, 1e-11, "weight_u")
        close(rm.weight_orig.grad, tm.weight_orig.grad, 1e-8, 1e-10, "grad")
    for lib, m in ((torch, tm), (rustgrad, rm)):
        with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
            lib.nn.utils.spectral_norm(m)
        lib.nn.utils.remove_spectral_norm(m)
        with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
            lib.nn.utils.remove_spectral_norm(m)
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert len(rm._forward_pre_hooks) == len(tm._forward_pre_hooks) == 0
    close(rm.weight, tm.weight, 1e-9, 1e-11, "removed weight")


def test_namespaces_match_torch():
    for name in ("parametrize", "parametrizations", "stateless", "weight_norm", "remove_weight_norm",
                 "spectral_norm", "remove_spectral_norm"):
        assert hasattr(rustgrad.nn.utils, name), name
        assert name in rustgrad.nn.utils.__all__
    assert set(PZ(rustgrad).__all__) == set(PZ(torch).__all__)
    assert set(P(rustgrad).__all__) == set(P(torch).__all__)
