"""The in-place random fills random_, exponential_, geometric_, log_normal_, cauchy_ and
torch.poisson against torch: the same distributions (moments, quantiles and supports checked on
large samples from both libraries), dtypes, shapes, versions, ranges per dtype, determinism under
a seeded Generator, the grad_fn nodes (with zero gradients) and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check_error

N = 100_000

# name -> (call on a float tensor, the distribution's quantiles at QS from its formula or None)
QS = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
FILLS = {
    "exponential": (lambda x, g: x.exponential_(2.0, generator=g), -np.log(1 - QS) / 2.0),
    "geometric": (lambda x, g: x.geometric_(0.3, generator=g), None),
    "log_normal": (lambda x, g: x.log_normal_(0.5, 0.75, generator=g), None),
    "cauchy": (lambda x, g: x.cauchy_(1.0, 2.0, generator=g), 1.0 + 2.0 * np.tan(np.pi * (QS - 0.5))),
    "random_to": (lambda x, g: x.random_(10, generator=g), None),
    "random_range": (lambda x, g: x.random_(-3, 4, generator=g), None),
}


def _sample(lib, name, device="cpu", dtype="float64", n=N):
    g = lib.Generator(device="cpu") if lib is torch else lib.Generator()
    g.manual_seed(1234)
    x = lib.empty(n, dtype=getattr(lib, dtype), device=device) if lib is rustgrad else \
        lib.empty(n, dtype=getattr(lib, dtype))
    out = FILLS[name][0](x, g)
    assert out is x
    return x


@pytest.mark.parametrize("name", sorted(FILLS))
def test_fill_distribution_matches_torch(name, device):
    r = _sample(rustgrad, name, device)
    t = _sample(torch, name)
    assert r.dtype == rustgrad.float64 and tuple(r.shape) == (N,) and r._version == 1
    assert r.device.type == device
    rv, tv = r.cpu().numpy(), t.numpy()
    if name in ("exponential", "log_normal", "cauchy"):
        # quantiles of 1e5 draws agree to a few percent of the spread
        qr, qt = np.quantile(rv, QS), np.quantile(tv, QS)
        spread = qt[-1] - qt[0]
        np.testing.assert_allclose(qr, qt, atol=0.05 * spread)
        expected = FILLS[name][1]
        if expected is not None:
            np.testing.assert_allclose(qr, expected, atol=0.05 * spread)
    if name == "geometric":
        assert rv.min() >= 1 and np.all(rv == np.round(rv))
        assert abs(rv.mean() - 1 / 0.3) < 0.05 and abs(tv.mean() - 1 / 0.3) < 0.05
    if name == "log_normal":
        assert rv.min() > 0 and abs(np.log(rv).mean() - 0.5) < 0.01
        assert abs(np.log(rv).std() - 0.75) < 0.01
    if name.startswith("random"):
        assert set(np.unique(rv)) == set(np.unique(tv))
        counts = np.unique(rv, return_counts=True)[1] / N
        assert np.all(np.abs(counts - counts.mean()) < 0.01)  # uniform over the range


@pytest.mark.parametrize("name", sorted(FILLS))
def test_fill_is_deterministic_under_a_seeded_generator(name, device):
    a = _sample(rustgrad, name, device, n=50).cpu().numpy()
    b = _sample(rustgrad, name, device, n=50).cpu().numpy()
    np.testing.assert_array_equal(a, b)
    rustgrad.manual_seed(3)
    c = FILLS[name][0](rustgrad.empty(50, dtype=rustgrad.float64), None).numpy()
    rustgrad.manual_seed(3)
    d = FILLS[name][0](rustgrad.empty(50, dtype=rustgrad.float64), None).numpy()
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(a, c)


# ---- random_ per dtype ----------------------------------------------------------------------
DTYPES = ["float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
          "bool"]


TOPS = {"float16": 2.0 ** 11, "bfloat16": 2.0 ** 8, "float32": 2.0 ** 24, "float64": 2.0 ** 53,
        "uint8": 255, "int8": 127, "int16": 2 ** 15 - 1, "int32": 2 ** 31 - 1,
        "int64": 2 ** 63 - 1, "bool": 1}


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_without_bounds_spans_torch_range(dtype):
    # 0 .. the dtype's largest integer (2 ** digits for floating types)
    top = TOPS[dtype]
    for lib in (torch, rustgrad):
        x = lib.empty(20_000, dtype=getattr(lib, dtype)).random_()
        assert x.dtype == getattr(lib, dtype)
        v = x.double().numpy()
        # both fill the range 0 .. top: the largest draw is near its top
        assert v.min() >= 0 and 0.9 * top <= v.max() <= top, lib.__name__


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "int8", "bool"])
def test_random_bounds_match_torch(dtype):
    lo, hi = (0, 2) if dtype == "bool" else (0 if dtype == "uint8" else -3, 5)
    for lib in (torch, rustgrad):
        x = lib.empty(5000, dtype=getattr(lib, dtype)).random_(lo, hi)
        assert set(np.unique(x.numpy().astype(np.int64))) == set(range(lo, hi)), lib.__name__
        y = lib.empty(5000, dtype=getattr(lib, dtype)).random_(hi)
        assert set(np.unique(y.numpy().astype(np.int64))) == set(range(0, hi)), lib.__name__
    # to=None: from `from` to the dtype's largest value
    r = rustgrad.empty(1000, dtype=rustgrad.int8).random_(100, None)
    assert r.numpy().min() >= 100 and r.numpy().max() <= 127


RANDOM_ERRORS = {
    "from_ge_to": (lambda L, a: a.random_(5, 3), "random_ expects 'from' to be less than 'to'",
                   "float32"),
    "uint8_from": (lambda L, a: a.random_(-3, 3), "from is out of bounds for unsigned char", "uint8"),
    "uint8_to": (lambda L, a: a.random_(0, 300), "to - 1 is out of bounds for unsigned char",
                 "uint8"),
    "int8_from": (lambda L, a: a.random_(-200, 3), "from is out of bounds for signed char", "int8"),
    "bool_to": (lambda L, a: a.random_(10), "to - 1 is out of bounds for bool", "bool"),
    "exponential_rate": (lambda L, a: a.exponential_(0), "exponential_ expects lambda > 0.0, but "
                         "found lambda=0", "float32"),
    "exponential_int": (lambda L, a: a.exponential_(), "dtype must be a floating point but you "
                        "specified Long", "int64"),
    "geometric_p": (lambda L, a: a.geometric_(1.5), "geometric_ expects p to be in (0, 1), but got "
                    "p=1.5", "float32"),
    "geometric_bool": (lambda L, a: a.geometric_(0.5), "not implemented for 'Bool'", "bool"),
    "log_normal_std": (lambda L, a: a.log_normal_(1, -1), "log_normal_ expects std > 0.0, but "
                       "found std=-1", "float32"),
    "log_normal_int": (lambda L, a: a.log_normal_(), "\"log_normal_cpu\" not implemented for "
                       "'Long'", "int64"),
    "cauchy_sigma": (lambda L, a: a.cauchy_(0, 0), "cauchy_ expects sigma > 0.0, but found "
                     "sigma=0", "float32"),
    "cauchy_int": (lambda L, a: a.cauchy_(), "Cauchy distribution is a continuous probability "
                   "distribution. dtype must be a floating point but you specified long int",
                   "int64"),
    "poisson_int": (lambda L, a: L.poisson(a), "\"poisson_cpu\" not implemented for 'Long'",
                    "int64"),
    "poisson_negative": (lambda L, a: L.poisson(a - 5), "invalid Poisson rate, expected rate to be "
                         "non-negative", "float32"),
}


@pytest.mark.parametrize("case", sorted(RANDOM_ERRORS))
def test_fill_errors_match_torch(case):
    fn, phrase, dtype = RANDOM_ERRORS[case]
    errors = []
    for lib in (torch, rustgrad):
        x = lib.zeros(4, dtype=getattr(lib, dtype))
        with pytest.raises(Exception) as info:
            fn(lib, x)
        errors.append(info.value)
        assert x._version == 0 and not x.any()  # nothing written
    assert type(errors[1]) is type(errors[0]), errors
    assert phrase in str(errors[0]) and phrase in str(errors[1]), errors


# ---- autograd: the fills record torch's nodes, whose gradient is zero ---------------------------
GRAD_FILLS = {
    "random_()": (lambda x: x.random_(), "RandomBackward2"),
    "random_(to)": (lambda x: x.random_(5), "RandomBackward1"),
    "random_(from, to)": (lambda x: x.random_(1, 5), "RandomBackward0"),
    "random_(from, None)": (lambda x: x.random_(1, None), "RandomBackward0"),
    "exponential_": (lambda x: x.exponential_(), "ExponentialBackward0"),
    "geometric_": (lambda x: x.geometric_(0.3), "GeometricBackward0"),
    "log_normal_": (lambda x: x.log_normal_(), "LogNormalBackward0"),
    "cauchy_": (lambda x: x.cauchy_(), "CauchyBackward0"),
    "normal_": (lambda x: x.normal_(), "NormalBackward0"),
    "uniform_": (lambda x: x.uniform_(), "UniformBackward0"),
    "bernoulli_(p)": (lambda x: x.bernoulli_(0.3), "BernoulliBackward2"),
}


@pytest.mark.parametrize("case", sorted(GRAD_FILLS))
def test_fill_of_graph_tensor_records_torch_node(case, device):
    fn, name = GRAD_FILLS[case]
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        leaf = lib.ones(2, 3, requires_grad=True, device=dev)
        y = leaf * 2
        assert fn(y) is y
        assert y.grad_fn.name() == name and y._version == 1, lib.__name__
        (y.sum() + leaf.sum()).backward()
        assert leaf.grad.cpu().numpy().tolist() == [[1.0] * 3] * 2  # nothing through the fill
        # a fill through a view: the base's history becomes CopySlices
        z = leaf * 1
        fn(z[1:])
        assert z.grad_fn.name() == "torch::autograd::CopySlices"


@pytest.mark.parametrize("case", ["exponential_", "random_()", "cauchy_"])
def test_fill_of_leaf_requiring_grad_is_refused_like_torch(case, device):
    fn = GRAD_FILLS[case][0]
    check_error(lambda L, a: fn(a), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


# ---- poisson ---------------------------------------------------------------------------------
def test_poisson_matches_torch(device):
    rates = np.array([0.0, 0.5, 3.0, 20.0])
    torch.manual_seed(0)  # both draws seeded: the comparison cannot flake
    t = torch.poisson(torch.tensor(rates).repeat(20_000, 1))
    g = rustgrad.Generator().manual_seed(5)
    r = rustgrad.poisson(rustgrad.tensor(rates, device=device).repeat(20_000, 1), g)
    assert r.dtype == rustgrad.float64 and tuple(r.shape) == (20_000, 4) and r.device.type == device
    rv = r.cpu().numpy()
    assert np.all(rv == np.round(rv)) and rv.min() >= 0 and np.all(rv[:, 0] == 0)
    np.testing.assert_allclose(rv.mean(0), t.numpy().mean(0), atol=0.15)
    np.testing.assert_allclose(rv.mean(0), rates, atol=0.1)
    np.testing.assert_allclose(rv.var(0), rates, atol=0.5)
    x32 = rustgrad.poisson(rustgrad.ones(3, dtype=rustgrad.float32, device=device))
    assert x32.dtype == rustgrad.float32


def test_poisson_gradient_is_zero_like_torch():
    for lib in (torch, rustgrad):
        rates = lib.tensor([1.0, 5.0], requires_grad=True)
        y = lib.poisson(rates)
        assert y.grad_fn.name() == "PoissonBackward0"
        y.sum().backward()
        assert rates.grad.tolist() == [0.0, 0.0]
