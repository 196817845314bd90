"""create_graph=True through the built-in ops: double backward, Hessian-vector products, a
WGAN-GP gradient penalty that trains, and `autograd.grad`'s full signature and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ..parity import f64, parity, same_error

X = np.array([[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]])
W = np.array([[0.2, -0.4], [1.1, 0.6], [-0.3, 0.9]])


def test_create_graph_double_backward_through_grad_matches_torch():
    def run(lib):
        x = f64(lib, X, True)
        w = f64(lib, W, True)
        y = ((x @ w).tanh() * x.sum(1, keepdim=True).sigmoid()).exp().sum()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
        assert gx.requires_grad and gw.requires_grad
        hx, hw = lib.autograd.grad((gx ** 2).sum() + gw.sum(), (x, w))
        return gx, gw, hx, hw

    parity(run)


def test_create_graph_backward_leaf_grad_is_differentiable_and_accumulates_as_torch():
    def run(lib):
        x = f64(lib, X[0], True)
        y = (x ** 3).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        first = x.grad.detach().clone()
        assert x.grad.requires_grad
        x.grad.sum().backward()  # second order accumulates into the same .grad
        return first, x.grad

    first, total = parity(run)
    np.testing.assert_allclose(total - first, 6 * X[0])


def test_create_graph_third_order_derivative_matches_torch():
    def run(lib):
        x = f64(lib, [0.3, -1.1], True)
        y = (x.sin() * x.exp()).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (t,) = lib.autograd.grad(h.sum(), x)
        return g, h, t

    parity(run)


def test_hessian_vector_product_by_double_backward_matches_torch():
    v = np.array([1.0, -2.0, 0.5])

    def run(lib):
        x = f64(lib, [0.4, 1.3, -0.8], True)
        loss = (x.exp() * x.roll(1, 0)).sum() + (x ** 2).prod()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (hv,) = lib.autograd.grad(g, x, grad_outputs=f64(lib, v))
        return hv

    hv = parity(run)
    assert np.abs(hv).sum() > 0


def _wgan_gp(lib, steps=4):
    """A small WGAN critic trained with the gradient penalty ((||grad_x D(x_hat)|| - 1)^2)."""
    rng = np.random.default_rng(0)
    params = [f64(lib, rng.standard_normal((2, 8)) * 0.5, True), f64(lib, np.zeros(8), True),
              f64(lib, rng.standard_normal((8, 1)) * 0.5, True), f64(lib, np.zeros(1), True)]
    real = f64(lib, rng.standard_normal((16, 2)) + 2.0)
    fake = f64(lib, rng.standard_normal((16, 2)))
    eps = f64(lib, rng.uniform(size=(16, 1)))

    def critic(h):
        w1, b1, w2, b2 = params
        return (h @ w1 + b1).tanh() @ w2 + b2

    history = []
    for _ in range(steps):
        x_hat = (eps * real + (1 - eps) * fake).requires_grad_(True)
        d_hat = critic(x_hat)
        (g,) = lib.autograd.grad(d_hat, x_hat, grad_outputs=lib.ones_like(d_hat),
                                 create_graph=True, retain_graph=True)
        gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * gp
        for p in params:
            p.grad = None
        loss.backward()
        history.append((loss.item(), gp.item(), [p.grad.clone() for p in params]))
        with lib.no_grad():
            for p in params:
                p -= 0.05 * p.grad
    return history, params


def test_wgan_gp_gradient_penalty_trains_as_torch():
    history, params = parity(_wgan_gp)
    losses = [h[0] for h in history]
    assert losses[-1] < losses[0]
    # the penalty's own gradient reaches the first layer (it is a second-order term)
    assert np.abs(history[0][2][0]).sum() > 0


def test_wgan_gp_penalty_contributes_second_order_gradient(rg):
    """Without create_graph the penalty's gradient would be missing: check it is there."""
    x = f64(rg, X, True)
    w = f64(rg, W, True)
    (g,) = rg.autograd.grad((x @ w).tanh().sum(), x, create_graph=True)
    (gw,) = rg.autograd.grad((g ** 2).sum(), w)
    assert np.abs(gw.numpy()).sum() > 0


# ---- autograd.grad: full signature and errors, as torch ----------------------------------
def test_grad_materialize_grads_gives_zeros_that_require_grad():
    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        z = f64(lib, [3.0, 4.0, 5.0], True)
        gx, gz = lib.autograd.grad((x ** 3).sum(), (x, z), create_graph=True,
                                   materialize_grads=True)
        return gx, gz, gz.requires_grad, gz.is_leaf, gx.requires_grad

    out = parity(run)
    assert out[2:] == (True, True, True)


def test_grad_materialize_grads_without_create_graph_gives_plain_zeros():
    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        z = f64(lib, [3.0, 4.0, 5.0], True)
        gx, gz = lib.autograd.grad((x ** 3).sum(), (x, z), materialize_grads=True)
        return gx, gz, gz.requires_grad, gx.requires_grad

    assert parity(run)[2:] == (False, False)


def test_grad_and_backward_take_a_dict_of_inputs():
    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        z = f64(lib, [3.0], True)
        g = lib.autograd.grad((x * z).sum(), {"x": x, "z": z})
        (x * z * 2).sum().backward(inputs={"z": z})
        return g, x.grad, z.grad

    assert list(parity(run)[0]) == ["x", "z"]


@pytest.mark.parametrize("fn", ["grad", "backward"])
def test_inputs_mapping_that_is_not_a_dict_is_refused(fn):
    from types import MappingProxyType

    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        inputs = MappingProxyType({"x": x})
        if fn == "grad":
            lib.autograd.grad((x * 2).sum(), inputs)
        else:
            lib.autograd.backward((x * 2).sum(), inputs=inputs)

    same_error(run, f"`inputs` argument to `{fn}()` must be a dict, not mappingproxy. Other "
                    "Mapping types are not supported.")


def test_grad_allow_unused_gives_none():
    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        z = f64(lib, [3.0], True)
        return lib.autograd.grad((x * 2).sum(), (x, z), allow_unused=True)

    assert parity(run)[1] is None


def test_grad_extra_grad_outputs_are_ignored_as_torch():
    def run(lib):
        x = f64(lib, [1.0, 2.0], True)
        return lib.autograd.grad((x * 2).sum(), x, grad_outputs=[f64(lib, 3.0), f64(lib, 1.0)])

    parity(run)


def test_grad_only_inputs_false_warns_future_warning(lib):
    x = f64(lib, [1.0, 2.0], True)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = lib.autograd.grad((x * 2).sum(), x, only_inputs=False)
    assert g.tolist() == [2.0, 2.0]


def _xy(lib):
    x = f64(lib, [1.0, 2.0, 3.0], True)
    return x, (x * x).sum()


GRAD_ERRORS = [
    ("empty_inputs", lambda lib: lib.autograd.grad(_xy(lib)[1], []),
     "`inputs` argument to `grad()` cannot be empty."),
    ("empty_dict_inputs", lambda lib: lib.autograd.grad(_xy(lib)[1], {}),
     "`inputs` argument to `grad()` cannot be empty."),
    ("fewer_grad_outputs", lambda lib: (lambda x, y: lib.autograd.grad([y, y * 2], x, [f64(lib, 1.0)]))(*_xy(lib)),
     "got 2 tensors and 1 gradients"),
    ("unused", lambda lib: (lambda x, y: lib.autograd.grad(y, [x, f64(lib, [1.0], True)]))(*_xy(lib)),
     "The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
     "allow_unused=True if this is the desired behavior."),
    ("materialize_not_unused", lambda lib: (lambda x, y: lib.autograd.grad(
        y, x, materialize_grads=True, allow_unused=False))(*_xy(lib)),
     "Expected allow_unused to be True or not passed when materialize_grads=True"),
    ("input_no_grad", lambda lib: lib.autograd.grad(_xy(lib)[1], f64(lib, [1.0])),
     "One of the differentiated Tensors does not require grad"),
    ("output_no_grad", lambda lib: lib.autograd.grad(f64(lib, 1.0), _xy(lib)[0]),
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("non_scalar", lambda lib: (lambda x, y: lib.autograd.grad(x * 2, x))(*_xy(lib)),
     "grad can be implicitly created only for scalar outputs"),
    ("shape_mismatch", lambda lib: (lambda x, y: lib.autograd.grad(y, x, f64(lib, [1.0, 1.0])))(*_xy(lib)),
     "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a "
     "shape of torch.Size([])."),
    ("second_time", lambda lib: (lambda x, y: (lib.autograd.grad(y, x), lib.autograd.grad(y, x)))(*_xy(lib)),
     "Trying to backward through the graph a second time"),
]


@pytest.mark.parametrize("case", GRAD_ERRORS, ids=[c[0] for c in GRAD_ERRORS])
def test_grad_error_matches_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)
