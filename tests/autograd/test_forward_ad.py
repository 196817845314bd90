"""rustgrad.autograd.forward_ad against torch.autograd.forward_ad: dual levels, make_dual and
unpack_dual (values, views, flags, errors), the tangents ops carry (elementwise, matmul and
linear, reductions, softmax, views, tuple outputs, an MLP with cross_entropy, in-place ops, two
duals, random ops), ordinary autograd at the same time (backward, a Hessian-vector product), and
the op entry points being the original objects again outside a level, on every device."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import rustgrad
import rustgrad.autograd.forward_ad as fwAD
import rustgrad.nn.functional as RF
import torch
import torch.autograd.forward_ad  # noqa: F401  (torch.autograd.forward_ad below)

from ..parity import oracle_for, rustgrad_on

TOL = {np.float64: (1e-7, 1e-9), np.float32: (1e-4, 1e-5)}


def fw(lib: Any) -> Any:
    """The program's forward_ad module."""
    return lib.autograd.forward_ad


def libs(device: str) -> list:
    """The oracle and rustgrad on device, for programs that assert the same facts of both."""
    return [oracle_for(device), rustgrad_on(device)]


def _np(t: Any) -> Any:
    return None if t is None else np.asarray(t.detach().cpu().numpy())


def _outputs(out: Any) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def jvp_parity(device: str, program: Callable[..., Any], shapes: Sequence[Any],
               dtype: Any = np.float64, requires_grad: bool = False, seed: int = 0) -> list:
    """Runs program(lib, *duals) in a dual level under the oracle and under rustgrad on device
    (each input a dual of a random primal and tangent); asserts the primals and tangents of
    every output match (a missing tangent included); returns the oracle's tangents."""
    rng = np.random.default_rng(seed)
    prim = [rng.uniform(-1.5, 1.5, s).astype(dtype) for s in shapes]
    tans = [rng.uniform(-1.0, 1.0, s).astype(dtype) for s in shapes]
    results = []
    for lib in (oracle_for(device), rustgrad_on(device)):
        with fw(lib).dual_level():
            xs = [lib.tensor(p.copy(), requires_grad=requires_grad) for p in prim]
            duals = [fw(lib).make_dual(x, lib.tensor(t.copy())) for x, t in zip(xs, tans)]
            outs = _outputs(program(lib, *duals))
            results.append([(_np(fw(lib).unpack_dual(o).primal), _np(fw(lib).unpack_dual(o).tangent))
                            if isinstance(o, (torch.Tensor, rustgrad.Tensor)) else (o, None)
                            for o in outs])
    rtol, atol = TOL[dtype]
    (want, got) = results
    assert len(want) == len(got)
    for i, ((wp, wt), (gp, gt)) in enumerate(zip(want, got)):
        np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol, err_msg=f"primal {i}")
        assert (gt is None) == (wt is None), f"output {i}: tangent {gt} instead of {wt}"
        if wt is not None:
            assert gt.dtype == wt.dtype and gt.shape == wt.shape, f"output {i}"
            np.testing.assert_allclose(gt, wt, rtol=rtol, atol=atol, err_msg=f"tangent {i}")
    return [wt for _, wt in want]


# ---- the tangents ops carry ---------------------------------------------------------------
UNARY = {
    "sin": lambda L, x: x.sin(),
    "exp": lambda L, x: L.exp(x),
    "tanh": lambda L, x: L.tanh(x),
    "pow_scalar": lambda L, x: x ** 3,
    "rpow": lambda L, x: 2.0 ** x,
    "mul_scalar": lambda L, x: 2.5 * x - 1,
    "div_scalar": lambda L, x: 1.0 / (x * x + 1),
    "abs_relu": lambda L, x: L.relu(x) + x.abs(),
    "sigmoid_F": lambda L, x: L.nn.functional.sigmoid(x),
    "special_expit": lambda L, x: L.special.expit(x),
    "clone_double": lambda L, x: x.clone().double(),
    "floor_round": lambda L, x: x.floor() + x.round(),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_tangents(device: str, name: str, dtype: Any) -> None:
    jvp_parity(device, UNARY[name], [(2, 3)], dtype)


BINARY = {
    "mul": lambda L, x, y: x * y,
    "div": lambda L, x, y: x / (y + 3),
    "pow": lambda L, x, y: (x + 2) ** y,
    "add_alpha": lambda L, x, y: L.add(x, y, alpha=0.5),
    "same_dual_twice": lambda L, x, y: x * x + y,
    "where": lambda L, x, y: L.where(x > 0, x, y),
    "maximum": lambda L, x, y: L.maximum(x, y),
    "cat_stack": lambda L, x, y: L.cat([x, L.stack([y, x]).sum(0)]),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_two_dual_tangents(device: str, name: str) -> None:
    jvp_parity(device, BINARY[name], [(2, 3), (2, 3)])


def test_a_dual_and_a_plain_tensor(device: str) -> None:
    def program(L: Any, x: Any) -> Any:
        return x * L.tensor([[1.0, 2.0, 3.0]], dtype=L.float64)
    t = jvp_parity(device, program, [(2, 3)])[0]
    assert t is not None


def test_matmul_and_linear(device: str) -> None:
    jvp_parity(device, lambda L, a, b: a @ b, [(2, 3), (3, 4)])
    jvp_parity(device, lambda L, a, b: L.matmul(a, b.T), [(2, 3), (4, 3)])
    jvp_parity(device, lambda L, x, w, b: L.nn.functional.linear(x, w, b), [(5, 3), (4, 3), (4,)])


REDUCTIONS = {
    "sum": lambda L, x: x.sum(),
    "sum_dim": lambda L, x: L.sum(x, dim=1, keepdim=True),
    "mean": lambda L, x: x.mean(0),
    "softmax": lambda L, x: L.softmax(x, dim=1),
    "softmax_F": lambda L, x: L.nn.functional.softmax(x, dim=0),
    "log_softmax_F": lambda L, x: L.nn.functional.log_softmax(x, dim=1),
    "log_softmax_method": lambda L, x: x.log_softmax(-1),
    "norm": lambda L, x: L.linalg.vector_norm(x, dim=1),
    "logsumexp": lambda L, x: L.logsumexp(x, 1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_tangents(device: str, name: str) -> None:
    jvp_parity(device, REDUCTIONS[name], [(3, 4)])


VIEWS = {
    "reshape": lambda L, x: x.reshape(4, 3),
    "view_flat": lambda L, x: x.view(-1),
    "transpose": lambda L, x: x.transpose(0, 1),
    "T_property": lambda L, x: x.T,
    "index_basic": lambda L, x: x[1, 1:],
    "index_tensor": lambda L, x: x[L.tensor([2, 0, 2])],
    "unsqueeze_expand": lambda L, x: x.unsqueeze(0).expand(2, 3, 4),
    "chain": lambda L, x: x.t()[1:].reshape(-1).sin(),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_tangents(device: str, name: str) -> None:
    jvp_parity(device, VIEWS[name], [(3, 4)])


def test_a_views_tangent_is_the_same_view_of_the_tangent(device: str) -> None:
    lib = rustgrad_on(device)
    with fwAD.dual_level():
        t = lib.randn(3, 4, dtype=lib.float64)
        d = fwAD.make_dual(lib.randn(3, 4, dtype=lib.float64), t)
        v = d[1:].transpose(0, 1)
        assert v._is_view()
        tv = fwAD.unpack_dual(v).tangent
        assert tv._base is t  # as torch's
        np.testing.assert_array_equal(_np(tv), _np(t)[1:].T)


def test_tuple_outputs(device: str) -> None:
    # a tangent for each float output; none for the indices
    jvp_parity(device, lambda L, x: x.max(dim=1), [(3, 4)])
    jvp_parity(device, lambda L, x: x.split(1, dim=0), [(3, 4)])
    jvp_parity(device, lambda L, x: x.sort(dim=1), [(3, 4)])
    jvp_parity(device, lambda L, x: (x > 0, x.argmax(), x.shape[0]), [(3, 4)])


def test_mlp_with_cross_entropy(device: str) -> None:
    rng = np.random.default_rng(1)
    w1, b1, w2, b2 = (rng.uniform(-1, 1, s) for s in [(5, 4), (5,), (3, 5), (3,)])
    target = np.array([0, 2, 1, 2, 0, 1])

    def program(L: Any, x: Any) -> Any:
        net = L.nn.Sequential(L.nn.Linear(4, 5), L.nn.Tanh(), L.nn.Linear(5, 3))
        net = net.double().to(x.device)
        with L.no_grad():
            for p, v in zip(net.parameters(), (w1, b1, w2, b2)):
                p.copy_(L.tensor(v))
        out = net(x)
        loss = L.nn.functional.cross_entropy(out, L.tensor(target))
        return out, loss, L.nn.functional.mse_loss(out, out.detach() * 0.5)

    tangents = jvp_parity(device, program, [(6, 4)])
    assert all(t is not None for t in tangents)


def test_tangent_of_a_parameter_dual(device: str) -> None:
    # the dual is the weight: J t of the model with respect to its parameters
    def program(L: Any, w: Any, x: Any) -> Any:
        return L.tanh(x @ w.T).sum(1)
    jvp_parity(device, program, [(3, 4), (5, 4)])


# ---- in-place ops ---------------------------------------------------------------------------
def _inplace_mul_add(L: Any, x: Any) -> Any:
    y = x.clone()
    y.mul_(2.0)
    y += x
    return y


def _inplace_into_plain(L: Any, x: Any) -> Any:
    y = L.zeros(2, 3, dtype=L.float64)
    y.add_(x)
    return y


def _setitem(L: Any, x: Any) -> Any:
    y = L.zeros(4, 3, dtype=L.float64)
    y[1:3] = x
    return y


def _inplace_on_view(L: Any, x: Any) -> Any:
    y = x.clone()
    v = y[1:]
    v.mul_(3.0)
    return y, v


def _view_of_plain_base(L: Any, x: Any) -> Any:
    base = L.zeros(3, 3, dtype=L.float64)
    v1, v2, col = base[0], base[1], base[:, 0]
    v1.copy_(x[0])
    return base, v1, v2, col


def _relu_inplace(L: Any, x: Any) -> Any:
    return L.nn.functional.leaky_relu(x.clone(), 0.1, inplace=True)


def _inplace_by_plain(L: Any, x: Any) -> Any:
    y = x.clone()
    y.mul_(L.tensor([[1.0, 2.0, 3.0]], dtype=L.float64))
    y.sin_()
    return y


INPLACE = {
    "mul_add": _inplace_mul_add,
    "into_plain": _inplace_into_plain,
    "setitem": _setitem,
    "on_view": _inplace_on_view,
    "view_of_plain_base": _view_of_plain_base,
    "leaky_relu_inplace_kw": _relu_inplace,
    "by_plain": _inplace_by_plain,
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_tangents(device: str, name: str) -> None:
    jvp_parity(device, INPLACE[name], [(2, 3)])


def test_inplace_on_a_dual_updates_its_tangent_in_place(device: str) -> None:
    for lib in libs(device):
        with fw(lib).dual_level():
            t = lib.tensor([1.0, 2.0, 3.0])
            d = fw(lib).make_dual(lib.tensor([1.0, 1.0, 1.0]), t)
            d.mul_(2.0)
            d[1:].mul_(5.0)
            # the tangent given to make_dual is updated, as torch's
            assert fw(lib).unpack_dual(d).tangent is t
            assert t.tolist() == [2.0, 20.0, 30.0]


# ---- autograd at the same time ---------------------------------------------------------------
def test_backward_through_a_dual(device: str) -> None:
    rng = np.random.default_rng(3)
    x0, t0 = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))
    got = []
    for lib in (oracle_for(device), rustgrad_on(device)):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(np.arange(12.0).reshape(3, 4) / 10, requires_grad=True)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, lib.tensor(t0))
            y = lib.tanh(d @ w) * d.sum()
            y.sum().backward()
            tangent = fw(lib).unpack_dual(y).tangent
            # a Hessian-vector product: the gradient carries the tangent (forward over reverse)
            x2 = lib.tensor(x0, requires_grad=True)
            d2 = fw(lib).make_dual(x2, lib.tensor(t0))
            (g,) = lib.autograd.grad((d2.sin() * d2).sum(), x2)
            got.append([_np(tangent), _np(x.grad), _np(w.grad), _np(g),
                        _np(fw(lib).unpack_dual(g).tangent),
                        fw(lib).unpack_dual(x.grad).tangent is None])
    want, mine = got
    for i, (a, b) in enumerate(zip(want, mine)):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9, err_msg=str(i))
        else:
            assert a == b, i


def test_tangents_need_no_grad_mode(device: str) -> None:
    def program(L: Any, x: Any) -> Any:
        with L.no_grad():
            return x.exp() * x
    assert jvp_parity(device, program, [(4,)], requires_grad=True)[0] is not None


def test_a_primal_that_requires_grad(device: str) -> None:
    jvp_parity(device, lambda L, x: (x.sin() * x).sum(0), [(3, 2)], requires_grad=True)


# ---- random ops draw once -------------------------------------------------------------------
def test_dropout_tangent_uses_the_primals_mask(device: str) -> None:
    lib = rustgrad_on(device)
    with fwAD.dual_level():
        x = lib.rand(200, dtype=lib.float64) + 1.0
        t = lib.rand(200, dtype=lib.float64) + 1.0
        out = RF.dropout(fwAD.make_dual(x, t), p=0.5)
        p, tangent = fwAD.unpack_dual(out)
    kept = _np(p) != 0
    assert 0 < kept.sum() < 200
    np.testing.assert_allclose(_np(tangent), np.where(kept, _np(t) * 2.0, 0.0))


# ---- make_dual, unpack_dual, levels ----------------------------------------------------------
def test_make_dual_is_a_view_of_the_primal(device: str) -> None:
    for lib in libs(device):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        t = lib.tensor([0.5, 0.5, 0.5])
        with fw(lib).dual_level() as level:
            assert level == 0
            d = fw(lib).make_dual(x, t)
            assert d._base is x and d._is_view()
            assert d.requires_grad and d.grad_fn.name() == "ViewBackward0"
            assert d.data_ptr() == x.data_ptr()
            u = fw(lib).unpack_dual(d)
            assert type(u).__name__ == "UnpackedDualTensor" and u._fields == ("primal", "tangent")
            assert u.tangent is t
            assert u.primal is not d and u.primal._base is x
            assert fw(lib).unpack_dual(u.primal).tangent is None
            # a tangent that requires grad does not make the dual require grad
            d2 = fw(lib).make_dual(lib.tensor([1.0]), lib.tensor([1.0], requires_grad=True))
            assert not d2.requires_grad


def test_a_tangent_laid_out_otherwise_is_copied(device: str) -> None:
    for lib in libs(device):
        with fw(lib).dual_level():
            t = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).T
            d = fw(lib).make_dual(lib.zeros(2, 3), t)
            got = fw(lib).unpack_dual(d).tangent
            assert got is not t and got.stride() == (3, 1)
            assert got.tolist() == t.tolist()


def test_unpack_dual_of_a_plain_tensor(device: str) -> None:
    for lib in libs(device):
        x = lib.tensor([1.0, 2.0])
        u = fw(lib).unpack_dual(x)
        assert u.primal is x and u.tangent is None
        assert fw(lib).unpack_dual(3.0) == (3.0, None)
        with fw(lib).dual_level():
            u = fw(lib).unpack_dual(x)
            assert u.tangent is None and u.primal is not x and u.primal._base is x
            assert fw(lib).unpack_dual(lib.arange(3)).tangent is None
            assert fw(lib).unpack_dual(x, level=5).tangent is None


def test_tangents_are_cleared_when_the_level_exits(device: str) -> None:
    for lib in libs(device):
        x = lib.tensor([1.0, 2.0])
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, lib.tensor([1.0, 1.0]))
            y = d * 3
        assert fw(lib).unpack_dual(d).tangent is None
        assert fw(lib).unpack_dual(d).primal is d
        with fw(lib).dual_level():
            assert fw(lib).unpack_dual(d).tangent is None
            assert fw(lib).unpack_dual(y).tangent is None
            assert fw(lib).unpack_dual(y * 2).tangent is None


def test_enter_and_exit_by_hand(device: str) -> None:
    for lib in libs(device):
        assert fw(lib).enter_dual_level() == 0
        try:
            d = fw(lib).make_dual(lib.tensor([2.0]), lib.tensor([1.0]))
            assert fw(lib).unpack_dual(d * d).tangent.tolist() == [4.0]
        finally:
            fw(lib).exit_dual_level()
        assert fw(lib)._current_level == -1


def test_dual_level_as_a_decorator(device: str) -> None:
    for lib in libs(device):
        ad = fw(lib)

        @ad.dual_level()
        def jvp(x: Any, t: Any, ad: Any = ad) -> Any:
            return ad.unpack_dual(ad.make_dual(x, t).exp()).tangent

        assert jvp(lib.tensor([0.0]), lib.tensor([3.0])).tolist() == [3.0]
        assert fw(lib)._current_level == -1


def test_the_module_names(device: str) -> None:
    for lib in libs(device):
        assert set(fw(lib).__all__) == {"UnpackedDualTensor", "enter_dual_level", "exit_dual_level",
                                         "make_dual", "unpack_dual", "dual_level"}
        assert fw(lib).UnpackedDualTensor(1, 2).tangent == 2


def test_forward_ad_is_an_attribute_of_autograd() -> None:
    assert rustgrad.autograd.forward_ad is fwAD


# ---- the entry points are the originals outside a level --------------------------------------
def test_entry_points_are_the_originals_outside_a_level(device: str) -> None:
    T = rustgrad.Tensor
    before = {n: T.__dict__[n] for n in ("add", "__add__", "__eq__", "__setitem__", "mul_", "T")}
    spaces = {"sin": rustgrad.sin, "relu": RF.relu, "linear": RF.linear,
              "vector_norm": rustgrad.linalg.vector_norm, "expit": rustgrad.special.expit}
    with fwAD.dual_level():
        assert T.__dict__["add"] is not before["add"]
        assert T.__dict__["T"] is not before["T"]
        assert rustgrad.sin is not spaces["sin"] and RF.relu is not spaces["relu"]
        d = fwAD.make_dual(rustgrad.ones(2, device=device), rustgrad.ones(2, device=device))
        assert fwAD.unpack_dual(RF.relu(d)).tangent.tolist() == [1.0, 1.0]
        assert {d: 1}[d] == 1 and hash(d) == object.__hash__(d)  # __eq__ swapped, hash kept
    for n, f in before.items():
        assert T.__dict__[n] is f, n
    assert rustgrad.Tensor.add is before["add"]
    assert (rustgrad.sin, RF.relu, RF.linear, rustgrad.linalg.vector_norm,
            rustgrad.special.expit) == tuple(spaces.values())
    x = rustgrad.ones(2, device=device)
    assert hash(x) == hash(x) and {x: 1}[x] == 1
    assert (x == x).all()


def test_an_exception_inside_the_level_still_restores(device: str) -> None:
    add = rustgrad.Tensor.add
    lib = rustgrad_on(device)
    with pytest.raises(RuntimeError, match="must match the size"):
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.ones(2), lib.ones(2))
            d + lib.ones(3)
    assert rustgrad.Tensor.add is add and fwAD._current_level == -1


# ---- errors, as torch's ------------------------------------------------------------------------
def _in_level(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(lib: Any) -> Any:
        with fw(lib).dual_level():
            return fn(lib)
    return run


def _make(lib: Any, primal: Any, tangent: Any, **kw: Any) -> Any:
    return fw(lib).make_dual(primal, tangent, **kw)


ERRORS = {
    "no_level": (lambda L: _make(L, L.ones(3), L.ones(3)),
                 "no level exists, make sure to enter_dual_level() first"),
    "no_level_given_level": (lambda L: _make(L, L.ones(3), L.ones(3), level=0),
                             "Trying to access a forward AD level with an invalid index"),
    "exit_without_level": (lambda L: fw(L).exit_dual_level(), "Dual level must be a positive number."),
    "exit_other_level": (lambda L: fw(L).exit_dual_level(level=0),
                         "Trying to exit a forward AD level that was not the last one"),
    "exit_other_level_inside": (_in_level(lambda L: fw(L).exit_dual_level(level=2)),
                                "was not the last one that was created"),
    "nested": (_in_level(lambda L: fw(L).enter_dual_level()),
               "Nested forward mode AD is not supported at the moment"),
    "nested_context": (_in_level(lambda L: fw(L).dual_level().__enter__()),
                       "Nested forward mode AD is not supported"),
    "size": (_in_level(lambda L: _make(L, L.ones(2, 3), L.ones(1, 3))),
             "Trying to set a forward gradient that has a different size than that of the original "
             "Tensor, this is not supported. Tensor is of size [2, 3] while the given forward "
             "gradient is of size [1, 3]."),
    "size_scalar": (_in_level(lambda L: _make(L, L.ones(1), L.tensor(1.0))),
                    "Tensor is of size [1] while the given forward gradient is of size []."),
    "int_primal": (_in_level(lambda L: _make(L, L.arange(3), L.ones(3))),
                   "Expected primal to be floating point or complex, but got: torch.int64"),
    "bool_primal": (_in_level(lambda L: _make(L, L.ones(3).bool(), L.ones(3))),
                    "Expected primal to be floating point or complex, but got: torch.bool"),
    "int_tangent": (_in_level(lambda L: _make(L, L.ones(3), L.arange(3))),
                    "Expected tangent to be floating point or complex, but got: torch.int64"),
    "dtype_before_size": (_in_level(lambda L: _make(L, L.ones(3), L.arange(4))),
                          "Expected tangent to be floating point"),
    "dtype_before_level": (_in_level(lambda L: _make(L, L.arange(3), L.ones(3), level=5)),
                           "Expected primal to be floating point"),
    "wrong_level": (_in_level(lambda L: _make(L, L.ones(3), L.ones(3), level=1)),
                    "Invalid level given to _make_dual"),
    "level_not_int": (_in_level(lambda L: _make(L, L.ones(3), L.ones(3), level=1.5)),
                      "argument 'level' must be int, not float"),
    "already_dual": (_in_level(lambda L: _make(L, _make(L, L.ones(3), L.ones(3)), L.ones(3))),
                     "Making a dual Tensor based on a Tensor that already has a forward gradient at "
                     "the same level 0 is not supported."),
    "number_primal": (_in_level(lambda L: _make(L, 3.0, L.ones(3))),
                      "'float' object has no attribute 'is_floating_point'"),
    "list_tangent": (_in_level(lambda L: _make(L, L.ones(3), [1.0, 2.0, 3.0])),
                     "'list' object has no attribute 'is_floating_point'"),
    "unpack_number": (_in_level(lambda L: fw(L).unpack_dual(3.0)),
                      "_unpack_dual(): argument 'dual' (position 1) must be Tensor, not float"),
    "unpack_wrong_level": (_in_level(lambda L: fw(L).unpack_dual(_make(L, L.ones(3), L.ones(3)),
                                                                 level=2)),
                           "Invalid level given to _fw_primal"),
    "unpack_level_str": (_in_level(lambda L: fw(L).unpack_dual(L.ones(3), level="a")),
                         "'<' not supported between instances of 'str' and 'int'"),
}


def same_error_on(device: str, program: Callable[[Any], Any], phrase: str) -> None:
    """program(lib) raises the same exception type, with phrase in its message, under the
    oracle and under rustgrad on device."""
    raised = []
    for lib in libs(device):
        with pytest.raises(Exception) as info:
            program(lib)
        assert phrase in str(info.value), f"{lib}: {info.value}"
        raised.append(type(info.value).__name__)
    assert raised[0] == raised[1], raised


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(device: str, name: str) -> None:
    program, phrase = ERRORS[name]
    same_error_on(device, program, phrase)
    assert fwAD._current_level == -1 and torch.autograd.forward_ad._current_level == -1


def test_a_failed_make_dual_leaves_the_tensors_alone(device: str) -> None:
    x = rustgrad.ones(2, 3, device=device)
    t = rustgrad.ones(1, 3, device=device)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, t)
        assert fwAD.unpack_dual(x).tangent is None
        assert x._version == 0 and t._version == 0


def test_errors_of_ops_on_duals_are_the_ops(device: str) -> None:
    def program(L: Any) -> Any:
        with fw(L).dual_level():
            d = fw(L).make_dual(L.ones(2, 3), L.ones(2, 3))
            return d @ L.ones(2, 3)
    same_error_on(device, program, "cannot be multiplied")

    def inplace(L: Any) -> Any:
        with fw(L).dual_level():
            d = fw(L).make_dual(L.ones(2, 3), L.ones(2, 3))
            y = L.ones(3)
            try:
                y.add_(d)
            finally:
                assert y.tolist() == [1.0, 1.0, 1.0] and fw(L).unpack_dual(y).tangent is None
    same_error_on(device, inplace, "doesn't match the broadcast shape")


def test_inference_mode_keeps_no_tangents(device: str) -> None:
    for lib in libs(device):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(lib.ones(3), lib.ones(3))
            with lib.inference_mode():
                d2 = fw(lib).make_dual(lib.ones(3), lib.ones(3))
                assert fw(lib).unpack_dual(d2).tangent is None
                assert fw(lib).unpack_dual(d * 2).tangent is None
            assert fw(lib).unpack_dual(d * 2).tangent is not None


def test_a_namespace_imported_inside_a_level_is_wrapped_and_restored() -> None:
    # `import rustgrad` leaves nn and special to first use: here that use is inside the level
    code = textwrap.dedent("""
        import sys
        import rustgrad
        import rustgrad.autograd.forward_ad as fwAD
        assert "rustgrad.special" not in sys.modules and "rustgrad.nn" not in sys.modules
        with fwAD.dual_level():
            d = fwAD.make_dual(rustgrad.tensor([0.0, 1.0]), rustgrad.tensor([1.0, 1.0]))
            import rustgrad.special
            import rustgrad.nn.functional as F
            inside = (fwAD.unpack_dual(rustgrad.special.expit(d)).tangent.tolist(),
                      fwAD.unpack_dual(F.softmax(d, 0)).tangent.tolist())
        plain = rustgrad.special.expit is rustgrad.sigmoid and not hasattr(F.softmax, "_forward_ad_of")
        print(repr((inside, plain)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=300)
    (expit_t, softmax_t), plain = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(expit_t, [0.25, 0.19661193], rtol=1e-6)
    np.testing.assert_allclose(softmax_t, [0.0, 0.0], atol=1e-7)
    assert plain
