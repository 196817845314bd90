"""rustgrad.func's linearize, functionalize, stack_module_state, replace_all_batch_norm_modules_,
debug_unwrap and rearrange against torch.func: values, structure, requires_grad, aliasing of
results, gradients and torch's errors. Each program runs under torch on the CPU and under
rustgrad on the device under test."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict

import numpy as np
import pytest
import rustgrad
import torch

from ..conftest import GPU_DEVICES
from ..models import copy_state
from ..parity import _assert_same_values, rustgrad_on, same_error, to_np

RNG = np.random.default_rng(0)
X3 = RNG.uniform(-1.5, 1.5, 3)
Y3 = RNG.uniform(-1.5, 1.5, 3)
A23 = RNG.uniform(-1.5, 1.5, (2, 3))


def run(fn: Callable[[Any, Callable[..., Any]], Any], device: str, rtol: float = 1e-7,
        atol: float = 1e-9) -> Any:
    """`fn(lib, t)` under torch (cpu) and rustgrad (`device`); `t(array)` makes a float64 tensor
    on that library's device. The nested results must match; returns torch's."""
    def maker(lib: Any, dev: str) -> Callable[..., Any]:
        return lambda a, **kw: lib.tensor(np.asarray(a, dtype=np.float64), device=dev, **kw)

    expected = to_np(fn(torch, maker(torch, "cpu")))
    got = to_np(fn(rustgrad, maker(rustgrad, device)))
    _assert_same_values(expected, got, rtol, atol)
    return expected


def flags(tree: Any) -> Any:
    """requires_grad of each tensor of a nested result."""
    if isinstance(tree, (torch.Tensor, rustgrad.Tensor)):
        return tree.requires_grad
    if isinstance(tree, (tuple, list)):
        return [flags(v) for v in tree]
    if isinstance(tree, dict):
        return {k: flags(v) for k, v in tree.items()}
    return tree


def dev(lib: Any, device: str) -> str:
    """The device a program runs on: rustgrad's under test, torch's CPU."""
    return device if lib is rustgrad else "cpu"


def quiet(fn: Callable[[], Any]) -> Any:
    """torch's linearize traces with make_fx, which warns about its own internals."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# ---- linearize ---------------------------------------------------------------------------------
def test_linearize_output_and_repeated_jvps(device):
    def fn(lib, t):
        f = lambda x, y: (x.sin() * y, {"p": (x ** 2).sum(), "q": [x * y.exp()]})  # noqa: E731
        out, jvp_fn = quiet(lambda: lib.func.linearize(f, t(X3), t(Y3)))
        first = jvp_fn(t(Y3), t(X3))
        second = jvp_fn(t([1.0, 0.0, 0.0]), t([0.0, 0.0, 0.0]))
        return out, first, second, flags((out, first, second))
    run(fn, device)


def test_linearize_equals_jvp(device):
    f = lambda x: (x @ x.T).tanh()  # noqa: E731
    x = rustgrad.tensor(A23, device=device)
    tangent = rustgrad.tensor(A23[::-1].copy(), device=device)
    _, jvp_fn = rustgrad.func.linearize(f, x)
    _, expected = rustgrad.func.jvp(f, (x,), (tangent,))
    np.testing.assert_allclose(jvp_fn(tangent).cpu().numpy(), expected.cpu().numpy(), rtol=1e-12)


def test_linearize_pytree_primal_and_outputs_not_depending_on_it(device):
    def fn(lib, t):
        f = lambda d: (d["x"] * 2, lib.ones(2, dtype=lib.float64), 3, d["x"].argmax())  # noqa: E731
        out, jvp_fn = quiet(lambda: lib.func.linearize(f, {"x": t(X3)}))
        res = jvp_fn({"x": t(Y3)})
        return out, res, flags(res)
    run(fn, device)


def test_linearize_requires_grad_follows_torch(device):
    def fn(lib, t):
        x = t(X3, requires_grad=True)
        out, jvp_fn = quiet(lambda: lib.func.linearize(lambda a: a.sin() * a, x))
        tangent = t(Y3, requires_grad=True)
        res = jvp_fn(tangent)
        res.sum().backward()
        return out, res, flags((out, res)), tangent.grad
    run(fn, device)


@pytest.mark.parametrize("call,phrase", [
    (lambda lib, jvp_fn: jvp_fn(lib.ones(4, dtype=lib.float64)),
     "tangent:0 with shape torch.Size([4]) in flattened pytree doesn't match the shape"),
    (lambda lib, jvp_fn: jvp_fn(lib.ones(3)),
     "tangent:0 with dtype torch.float32 in flattened pytree doesn't match the dtype "
     "torch.float64 of the corresponding primal."),
    (lambda lib, jvp_fn: jvp_fn(lib.ones(3, dtype=lib.float64), lib.ones(3)),
     "to have the same argspec as the primals"),
    (lambda lib, jvp_fn: jvp_fn([lib.ones(3, dtype=lib.float64)]),
     "to have the same argspec as the primals"),
    (lambda lib, jvp_fn: jvp_fn(3), "'int' object has no attribute 'shape'"),
], ids=["shape", "dtype", "count", "structure", "not-a-tensor"])
def test_linearize_tangent_errors(device, call, phrase):
    def make(lib):
        x = lib.tensor(X3, dtype=lib.float64, device=dev(lib, device))
        _, jvp_fn = quiet(lambda: lib.func.linearize(lambda a: a * 2, x))
        if lib is rustgrad and device != "cpu":  # the tangents on the primal's device
            return call(rustgrad_on(device), jvp_fn)
        return call(lib, jvp_fn)
    same_error(make, phrase)


@pytest.mark.parametrize("device", GPU_DEVICES, indirect=True)  # a device beside the cpu
def test_linearize_tangent_on_another_device(device):
    _, jvp_fn = rustgrad.func.linearize(lambda a: a * 2, rustgrad.ones(3, device=device))
    with pytest.raises(RuntimeError, match="tangent:0 with device cpu in flattened pytree "
                                           "doesn't match the device"):
        jvp_fn(rustgrad.ones(3))


@pytest.mark.parametrize("primal,phrase", [
    (lambda lib: lib.arange(3), "Expected primal to be floating point or complex, but got: "
                                "torch.int64"),
    (lambda lib: 2.0, "'float' object has no attribute 'new_empty'"),
], ids=["integer", "float"])
def test_linearize_primal_errors(primal, phrase):
    same_error(lambda lib: lib.func.linearize(lambda a: a * 2, primal(lib)), phrase)


# ---- functionalize -----------------------------------------------------------------------------
def _shares(a: Any, b: Any) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _clone_add(t: Any) -> Any:
    u = t.clone()
    v = u[:2]
    v.mul_(3)
    return u, v


PROGRAMS: Dict[str, Callable[[Any], Any]] = {
    "identity": lambda t: t,
    "view": lambda t: t[1:],
    "fresh-and-input": lambda t: (t + 1, t),
    "mutate-and-return": lambda t: t.add_(1),
    "view-of-mutated": lambda t: t.mul_(2)[1:],
    "mutated-view": lambda t: t[1:].add_(1),
    "intermediate-and-its-view": _clone_add,
    "same-output-twice": lambda t: (lambda u: (u, u))(t * 2),
    "output-and-its-view": lambda t: (lambda u: (u, u.view(3)))(t * 2),
}


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_functionalize_values_mutations_and_aliasing(device, remove, name):
    def fn(lib, t):
        x = t(X3)
        out = lib.func.functionalize(PROGRAMS[name], remove=remove)(x)
        outs = out if isinstance(out, tuple) else (out,)
        aliasing = [[o is x, _shares(o, x)] for o in outs]
        among = [[a is b, _shares(a, b)] for i, a in enumerate(outs) for b in outs[i + 1:]]
        return out, x, x._version, aliasing, among
    run(fn, device)


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_gradients_and_kwargs(device, remove):
    def fn(lib, t):
        x = t(X3, requires_grad=True)

        def f(a, *, scale):
            u = a * scale
            u.add_(1)
            return u.sin()[1:]
        out = lib.func.functionalize(f, remove=remove)(x, scale=t(Y3))
        out.sum().backward()
        return out, x.grad, flags(out)
    run(fn, device)


def test_functionalize_composes_with_grad(device):
    def fn(lib, t):
        def f(a):
            b = a.clone()
            b.mul_(a)
            return b.sum()
        return lib.func.grad(lib.func.functionalize(f))(t(X3))
    run(fn, device)


def test_functionalize_refuses_an_unknown_remove():
    same_error(lambda lib: lib.func.functionalize(lambda t: t, remove="views"),
               "functionalize(f, remove='mutations'): received invalid argument for "
               "remove=views. Valid options are:\n     remove='mutations': all inplace and out= "
               "operators will be removed from the program")


# ---- stack_module_state ------------------------------------------------------------------------
def _linears(lib: Any, n: int = 3) -> list:
    return [lib.nn.Linear(3, 2) for _ in range(n)]


def _twin_list(build: Callable[[Any], list], device: str) -> tuple:
    torch.manual_seed(0)
    tms = build(torch)
    rms = build(rustgrad)
    for tm, rm in zip(tms, rms):
        copy_state(tm, rm, rustgrad)
        rm.to(device)
    return tms, rms


def test_stack_module_state_ensembles_with_vmap(device):
    tms, rms = _twin_list(_linears, device)
    data = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
    results = []
    for lib, models, dev in ((torch, tms, "cpu"), (rustgrad, rms, device)):
        params, buffers = lib.func.stack_module_state(models)

        def call(p, b, x, models=models, lib=lib):
            return lib.func.functional_call(models[0], (p, b), (x,))
        out = lib.func.vmap(call, (0, 0, None))(params, buffers, lib.tensor(data, device=dev))
        out.sum().backward()
        results.append((out, {k: v.grad for k, v in params.items()},
                        {k: [tuple(v.shape), v.requires_grad, v.is_leaf, str(v.dtype)]
                         for k, v in params.items()}))
    _assert_same_values(to_np(results[0]), to_np(results[1]), 1e-6, 1e-6)
    assert all(m.weight.grad is None for m in rms)  # new leaves: the models' own are untouched


def test_stack_module_state_buffers_and_frozen_parameters(device):
    def build(lib):
        ms = [lib.nn.BatchNorm1d(3) for _ in range(2)]
        for m in ms:
            m.weight.requires_grad_(False)
        return ms
    tms, rms = _twin_list(build, device)
    rms[0].running_mean.add_(1.0)
    tms[0].running_mean.add_(1.0)
    out = []
    for lib, models in ((torch, tms), (rustgrad, rms)):
        params, buffers = lib.func.stack_module_state(models)
        out.append({k: [v, v.requires_grad, v.is_leaf, str(v.dtype)]
                    for k, v in {**params, **buffers}.items()})
    _assert_same_values(to_np(out[0]), to_np(out[1]), 1e-7, 1e-9)
    stacked = rustgrad.func.stack_module_state(rms)[1]["running_mean"]
    stacked.add_(5.0)  # a stack is a copy: the models' buffers are untouched
    np.testing.assert_array_equal(rms[0].running_mean.cpu().numpy(), np.ones(3))


@pytest.mark.parametrize("models,phrase", [
    (lambda lib: [], "stack_module_state: Expected at least one model, got 0."),
    (lambda lib: [lib.nn.Linear(2, 2), lib.nn.Linear(2, 2).eval()],
     "stack_module_state: Expected all models to have the same training/eval mode."),
    (lambda lib: [lib.nn.Linear(2, 2), lib.nn.Bilinear(2, 2, 2)],
     "stack_module_state: Expected all models to be of the same class."),
    (lambda lib: [lib.nn.Linear(2, 2), lib.nn.Linear(2, 2).requires_grad_(False)],
     "Expected weight from each model to have the same .requires_grad"),
    (lambda lib: [lib.nn.Linear(2, 2), lib.nn.Linear(2, 3)],
     "stack expects each tensor to be equal size, but got [2, 2] at entry 0 and [3, 2] at "
     "entry 1"),
], ids=["empty", "modes", "classes", "requires-grad", "shapes"])
def test_stack_module_state_errors(models, phrase):
    same_error(lambda lib: lib.func.stack_module_state(models(lib)), phrase)


def test_stack_module_state_takes_a_module_list():
    ms = rustgrad.nn.ModuleList(_linears(rustgrad, 2))
    params, _ = rustgrad.func.stack_module_state(ms)
    assert params["bias"].shape == (2, 2)
    np.testing.assert_array_equal(params["bias"][1].detach().numpy(), ms[1].bias.detach().numpy())


# ---- replace_all_batch_norm_modules_ -----------------------------------------------------------
def _bn_net(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4),
                         nn.Sequential(nn.ReLU(), nn.BatchNorm1d(4, affine=False)),
                         nn.InstanceNorm1d(4, track_running_stats=True))


def test_replace_all_batch_norm_modules_(device):
    torch.manual_seed(0)
    tm = _bn_net(torch)
    rm = _bn_net(rustgrad)
    copy_state(tm, rm, rustgrad)
    rm.to(device)
    x = RNG.uniform(-1, 1, (6, 4, 3)).astype(np.float32)
    out = []
    for lib, m, dev in ((torch, tm, "cpu"), (rustgrad, rm, device)):
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        m.eval()  # without running statistics, eval normalizes with the batch's
        y = m[:3](lib.tensor(x[:, 0], device=dev))
        norms = [m[1], m[2][1], m[3]]
        out.append([y, list(m.state_dict()), [n.track_running_stats for n in norms],
                    [n.running_mean is None for n in norms]])
    _assert_same_values(to_np(out[0]), to_np(out[1]), 1e-5, 1e-6)
    assert out[1][3] == [True, True, False]  # InstanceNorm is not a batch norm


def test_replace_all_batch_norm_modules_on_a_batch_norm_root():
    bn = rustgrad.nn.BatchNorm2d(2)
    assert rustgrad.func.replace_all_batch_norm_modules_(bn) is bn
    assert bn.running_var is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == ["weight", "bias"]


# ---- debug_unwrap ------------------------------------------------------------------------------
def test_debug_unwrap_returns_plain_tensors(device):
    x = rustgrad.tensor(A23, device=device)
    assert rustgrad.func.debug_unwrap(x) is x
    assert rustgrad.func.debug_unwrap(x, recurse=False) is x

    def fn(lib, t):
        seen = []

        def f(row):
            seen.append(type(lib.func.debug_unwrap(row)) is lib.Tensor)
            return row * 2
        return lib.func.vmap(f)(t(A23)), all(seen)
    run(fn, device)


def test_debug_unwrap_refuses_a_non_tensor():
    same_error(lambda lib: lib.func.debug_unwrap(3), "is_functorch_wrapped_tensor(): "
                                                     "incompatible function arguments")


# ---- rearrange ---------------------------------------------------------------------------------
REARRANGE = [
    ((2, 3, 4, 5), "b c h w -> b (c h w)", {}),
    ((2, 3, 4, 5), "b c h w -> b c h w", {}),
    ((2, 3, 4, 5), "b c h w -> w h c b", {}),
    ((2, 3, 4, 5), "b c (h1 h2) w -> b c h1 h2 w", dict(h1=2)),
    ((2, 3, 4, 5), "b c (h1 h2) w -> b c h1 h2 w", dict(h1=2, h2=2)),
    ((2, 3, 4, 5), "... w -> w ...", {}),
    ((2, 3, 4, 5), "b ... w -> w (...) b", {}),
    ((2, 3, 4, 5), "b ... -> (b ...)", {}),
    ((2, 3, 4, 5), "b c h w -> 1 b c h w ()", {}),
    ((2, 1, 3), "a 1 b -> a b", {}),
    ((2, 2, 3), "a 1 b -> a b", {}),  # torch sums over a unit axis of another size
    ((2, 1, 3), "a () b -> b a", {}),
    ((), " -> ", {}),
    ((), " -> 1", {}),
    ((1,), "1 -> ", {}),
    ((3, 4), "a b ... -> a b ...", {}),
    ((3, 4), "a ... -> (...) a", {}),
    ((3, 4), "a b -> (b 1 a) ()", {}),
    ((2, 3, 12), "a b (c d e) -> (e a) (d b) c", dict(c=2, d=3)),
    ((2, 3, 4, 5, 6), "a ... (b c) -> c ... a b", dict(b=3)),
    ((6, 2), "(a b) c -> b a c", dict(a=3)),
]
REARRANGE_ERRORS = [
    ((2, 3, 4, 5), "b c (h1 h2) w -> b c h1 h2 w", dict(h1=3), "DimensionBindError",
     "inferred dimension does not evenly fit into larger dimension: 4 vs (3, '?')"),
    ((2, 3, 4, 5), "b c (h1 h2) w -> b c h1 h2 w", {}, "DimensionBindError",
     "cannot infer the sizes of two dimensions at once d2 and d3"),
    ((2, 3, 4, 5), "b c (h1 h2) w -> b c h1 h2 w", dict(h1=2, h2=3), "DimensionBindError",
     "Dimension sizes to do not match (4 != 6) when matching dimension pack (d2, d3)"),
    ((3, 4), "a b -> a b", dict(a=4), "DimensionBindError",
     "Dimension sizes to do not match (3 != 4) when matching dimension pack (d0,)"),
    ((2, 3, 4, 5), "b c h -> b c h", {}, "ValueError",
     "Number of dimensions in pattern (3) must be equal to the number of dimensions in the "
     "tensor (4)"),
    ((3, 4), "a ... b c -> a ... b c", {}, "ValueError",
     "Number of dimensions in pattern (3) must be less than or equal to the number of "
     "dimensions in the tensor (2)"),
    ((2, 3, 4, 5), "b c h w -> b c h", {}, "ValueError",
     "Identifiers only on one side of rearrange expression (should be on both): {'w'}"),
    ((2, 3, 4, 5), "b c h w -> b c h w", dict(z=3), "ValueError",
     "Identifiers not found in rearrange expression: {'z'}"),
    ((2, 3, 4, 5), "b c h w -> b c (h w)", dict(h=3.0), "TypeError",
     "rearrange axis lengths must be integers, got: <class 'float'>"),
    ((3, 4), "a b -> b a", dict(a=True), "TypeError",
     "rearrange axis lengths must be integers, got: <class 'bool'>"),
    ((2, 3, 4, 5), "b c h w", {}, "ValueError", "Pattern must contain a single '->' separator"),
    ((3, 4), "a b -> a b -> a", {}, "ValueError", "Pattern must contain a single '->' separator"),
    ((2, 3, 4, 5), "b c h w -> b c h 2 w", {}, "ValueError",
     "rearrange only supports unnamed axes of size 1"),
    ((2, 3, 4, 5), "b c (h (w)) -> b c h w", {}, "ValueError",
     "Axis composition is one-level (brackets inside brackets not allowed)"),
    ((2, 3, 4, 5), "b b h w -> b c h w", {}, "ValueError",
     "Indexing expression contains duplicate dimension 'b'"),
    ((2, 3, 4, 5), "b c h w -> b c h w&", {}, "ValueError", "Unknown character '&'"),
    ((2, 3, 4, 5), "b c h w) -> b c h w", {}, "ValueError", "Brackets are not balanced"),
    ((2, 3, 4, 5), "b c (h w -> b c h w", {}, "ValueError",
     "Imbalanced parentheses in expression: 'b c (h w '"),
    ((2, 3, 4, 5), "b c h _w -> b c h _w", {}, "ValueError",
     "Invalid axis identifier: _w\naxis name should should not start or end with underscore"),
    ((3, 4), "2a b -> a b", {}, "ValueError",
     "Invalid axis identifier: 2a\nnot a valid python identifier"),
    ((2, 3, 4, 5), "b c h w -> b c ... h w", {}, "ValueError",
     "Ellipsis found in right side, but not left side of a pattern b c h w -> b c ... h w"),
    ((2, 3, 4, 5), "(b ...) -> b ...", {}, "ValueError",
     "Ellipsis is parenthesis in the left side is not allowed: (b ...) -> b ..."),
    ((2, 3, 4, 5), "b c .. h -> b", {}, "ValueError",
     "Expression may contain dots only inside ellipsis (...)"),
    ((3, 4), "a b -> a b", {"\u2026": 4}, "ValueError", "'\u2026' is not an allowed axis "
                                                         "identifier"),
    ((3, 4), "a (b c) -> a b c", dict(b=0), "ZeroDivisionError", "integer modulo by zero"),
]


@pytest.mark.parametrize("shape,pattern,lengths", REARRANGE, ids=[p for _, p, _ in REARRANGE])
def test_rearrange_values_and_gradients(device, shape, pattern, lengths):
    weights = np.random.default_rng(2).uniform(-1, 1, 720)

    def fn(lib, t):
        x = t(RNG_FIXED[shape], requires_grad=True)
        y = lib.func.rearrange(x, pattern, **lengths)
        w = t(weights[:y.numel()].reshape(y.shape))
        (y * w).sum().backward()
        return y, x.grad, y.is_contiguous(), _shares(x, y)
    run(fn, device)


RNG_FIXED = {shape: np.random.default_rng(1).uniform(-2, 2, shape) for shape, _, _ in REARRANGE}


@pytest.mark.parametrize("shape,pattern,lengths,kind,phrase", REARRANGE_ERRORS,
                         ids=[p for _, p, _, _, _ in REARRANGE_ERRORS])
def test_rearrange_errors(device, shape, pattern, lengths, kind, phrase):
    def call(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.func.rearrange(lib.zeros(shape, device=dev(lib, device)), pattern,
                                      **lengths)
    same_error(call, phrase)
    with pytest.raises(Exception) as info:
        call(rustgrad)
    assert type(info.value).__name__ == kind


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float32"])
def test_rearrange_dtypes_and_a_list_of_tensors(device, dtype):
    def fn(lib, t):
        dt = getattr(lib, dtype)
        rows = [lib.tensor(A23 * k, device=t(0).device).to(dt) for k in (1, 3)]
        return lib.func.rearrange(rows, "n a b -> a (n b)"), \
            lib.func.rearrange(tuple(rows), "n a b -> b n a"), \
            lib.func.rearrange(rows[0].reshape(2, 1, 3), "a 1 b -> b a")
    run(fn, device)


def test_rearrange_warns_on_keyword_axis_names():
    for lib in (torch, rustgrad):
        with pytest.warns(RuntimeWarning, match="It is discouraged to use axes names that are "
                                                "keywords: lambda"):
            lib.func.rearrange(lib.zeros(2, 3), "lambda b -> b lambda")


@pytest.mark.parametrize("tensors,phrase", [
    (lambda lib: "ab", "stack(): argument 'tensors' (position 1) must be tuple of Tensors, "
                       "not str"),
    (lambda lib: [], "stack expects a non-empty TensorList"),
], ids=["str", "empty"])
def test_rearrange_refuses_what_stack_refuses(tensors, phrase):
    same_error(lambda lib: lib.func.rearrange(tensors(lib), "a b -> b a"), phrase)
