"""Utilities against torch: print options, finfo/iinfo, testing.assert_close/make_tensor, RNG
state and Generator (`generator=` isolation and determinism; not torch's streams), multinomial,
bernoulli, cdist, meshgrid and unique(dim=)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_error, parity, same_error


# ---- print options ------------------------------------------------------------------------------
@pytest.fixture
def _default_printoptions() -> Iterator[None]:
    yield
    torch.set_printoptions(profile="default")
    rustgrad.set_printoptions(profile="default")


VALUES = {
    "small": [[1.123456789, -2.5, 3.0], [0.001, 4.0, 5.5]],
    "ints_as_floats": [1.0, 2.0, 300.0],
    "wide_range": [1e-6, 1.0, 1e9],
    "long": list(np.linspace(-3, 3, 40)),
    "big": np.linspace(0, 1, 2000).reshape(40, 50).tolist(),
}
OPTIONS = {
    "precision2": {"precision": 2},
    "precision8": {"precision": 8},
    "threshold5": {"threshold": 5},
    "edgeitems1": {"threshold": 5, "edgeitems": 1},
    "linewidth40": {"linewidth": 40},
    "sci_on": {"sci_mode": True},
    "sci_off": {"sci_mode": False},
    "short": {"profile": "short"},
    "full": {"profile": "full"},
    "full_precision2": {"profile": "full", "precision": 2},
}


@pytest.mark.parametrize("opts", sorted(OPTIONS))
@pytest.mark.parametrize("values", sorted(VALUES))
def test_repr_honours_printoptions_as_torch(values, opts, _default_printoptions):
    for lib in (torch, rustgrad):
        lib.set_printoptions(**OPTIONS[opts])
    data = VALUES[values]
    for dtype in ("float32", "float64", "int64"):
        t = torch.tensor(data, dtype=getattr(torch, dtype))
        r = rustgrad.tensor(data, dtype=getattr(rustgrad, dtype))
        assert repr(r) == repr(t), f"{dtype}:\n{r!r}\n!=\n{t!r}"


def test_printoptions_are_kept_and_reset_as_torch(_default_printoptions):
    from rustgrad import _tensor_str as rstr
    from torch import _tensor_str as tstr

    for lib in (torch, rustgrad):
        lib.set_printoptions(precision=3, sci_mode=True)
        lib.set_printoptions(threshold=10)  # sci_mode goes back to automatic, as torch's
    assert rstr.get_printoptions() == tstr.get_printoptions()
    with rstr.printoptions(precision=1), tstr.printoptions(precision=1):
        assert repr(rustgrad.tensor([1.26])) == repr(torch.tensor([1.26]))
    assert rstr.get_printoptions() == tstr.get_printoptions()


# ---- finfo / iinfo --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "complex128", None])
def test_finfo_matches_torch(name):
    t = torch.finfo() if name is None else torch.finfo(getattr(torch, name))
    r = rustgrad.finfo() if name is None else rustgrad.finfo(getattr(rustgrad, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(r, attr) == getattr(t, attr), attr
        assert type(getattr(r, attr)) is type(getattr(t, attr)), attr
    assert repr(r) == repr(t)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    t, r = torch.iinfo(getattr(torch, name)), rustgrad.iinfo(getattr(rustgrad, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(r, attr) == getattr(t, attr), attr
    assert repr(r) == repr(t)


@pytest.mark.parametrize("case", ["finfo_int", "iinfo_float", "iinfo_bool"])
def test_info_errors_match_torch(case):
    fn = {"finfo_int": lambda lib: lib.finfo(lib.int32),
          "iinfo_float": lambda lib: lib.iinfo(lib.float32),
          "iinfo_bool": lambda lib: lib.iinfo(lib.bool)}[case]
    et = pytest.raises(TypeError, fn, torch).value
    er = pytest.raises(TypeError, fn, rustgrad).value
    assert str(er) == str(et)


# ---- testing.assert_close -------------------------------------------------------------------------
def _f(lib: Any, x: Any, dtype: str = "float32") -> Any:
    return lib.tensor(x, dtype=getattr(lib, dtype))


ASSERT_CLOSE = {
    "equal": lambda lib: lib.testing.assert_close(_f(lib, [1.0, 2.0]), _f(lib, [1.0, 2.0])),
    "within_default_tol": lambda lib: lib.testing.assert_close(_f(lib, [1.0]),
                                                               _f(lib, [1.000001])),
    "float32": lambda lib: lib.testing.assert_close(_f(lib, [1.0, 2.0, 3.0]),
                                                    _f(lib, [1.0, 2.5, 3.0])),
    "float64_2d": lambda lib: lib.testing.assert_close(
        _f(lib, [[1.0, 2.0], [3.0, 4.0]], "float64"),
        _f(lib, [[1.0, 2.0], [3.0, 4.0 + 1e-6]], "float64")),
    "float16": lambda lib: lib.testing.assert_close(_f(lib, [1.0, 2.0], "float16"),
                                                    _f(lib, [1.0, 2.01], "float16")),
    "int": lambda lib: lib.testing.assert_close(lib.tensor([1, 2, 3]), lib.tensor([1, 2, 4])),
    "bool": lambda lib: lib.testing.assert_close(lib.tensor([True]), lib.tensor([False])),
    "dtype": lambda lib: lib.testing.assert_close(_f(lib, [1.0]), _f(lib, [1.0], "float64")),
    "dtype_unchecked": lambda lib: lib.testing.assert_close(
        _f(lib, [1.0]), _f(lib, [1.0], "float64"), check_dtype=False),
    "shape": lambda lib: lib.testing.assert_close(_f(lib, [1.0, 2.0]), _f(lib, [1.0, 2.0, 3.0])),
    "nan": lambda lib: lib.testing.assert_close(_f(lib, [1.0, math.nan]),
                                                _f(lib, [1.0, math.nan])),
    "nan_equal": lambda lib: lib.testing.assert_close(_f(lib, [1.0, math.nan]),
                                                      _f(lib, [1.0, math.nan]), equal_nan=True),
    "inf_same": lambda lib: lib.testing.assert_close(_f(lib, [math.inf]), _f(lib, [math.inf])),
    "inf_vs_finite": lambda lib: lib.testing.assert_close(_f(lib, [1.0, math.inf]),
                                                          _f(lib, [1.0, 2.0])),
    "msg": lambda lib: lib.testing.assert_close(_f(lib, [1.0]), _f(lib, [2.0]), msg="custom"),
    "msg_callable": lambda lib: lib.testing.assert_close(_f(lib, [1.0]), _f(lib, [2.0]),
                                                         msg=lambda m: "X" + m[:10]),
    "explicit_tol": lambda lib: lib.testing.assert_close(_f(lib, [1.0, 2.0]), _f(lib, [1.0, 2.1]),
                                                         rtol=0.1, atol=0.0),
    "explicit_tol_fails": lambda lib: lib.testing.assert_close(
        _f(lib, [1.0, 2.0]), _f(lib, [1.0, 2.1]), rtol=1e-3, atol=1e-3),
    "only_rtol": lambda lib: lib.testing.assert_close(_f(lib, [1.0]), _f(lib, [1.0]), rtol=0.1),
    "zero_dim": lambda lib: lib.testing.assert_close(_f(lib, 1.0), _f(lib, 2.0)),
    "python_floats": lambda lib: lib.testing.assert_close(1.0, 1.1),
    "python_floats_close": lambda lib: lib.testing.assert_close(1.0, 1.0 + 1e-9),
    "python_ints": lambda lib: lib.testing.assert_close(1, 2),
    "list": lambda lib: lib.testing.assert_close([_f(lib, [1.0])], [_f(lib, [2.0])]),
    "dict": lambda lib: lib.testing.assert_close({"a": _f(lib, [1.0])}, {"a": _f(lib, [3.0])}),
    "length": lambda lib: lib.testing.assert_close([1, 2], [1, 2, 3]),
    "requires_grad": lambda lib: lib.testing.assert_close(lib.ones(2, requires_grad=True),
                                                          lib.ones(2)),
}


@pytest.mark.parametrize("case", sorted(ASSERT_CLOSE))
def test_assert_close_matches_torch(case):
    fn = ASSERT_CLOSE[case]
    outcome = []
    for lib in (torch, rustgrad):
        try:
            fn(lib)
            outcome.append(("passed", ""))
        except (AssertionError, ValueError, TypeError) as e:
            outcome.append((type(e).__name__, str(e)))
    assert outcome[1] == outcome[0]


def test_assert_close_mixed_types_raise_type_error():
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        rustgrad.testing.assert_close(rustgrad.ones(2), [1.0, 1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool",
                                   "float16"])
def test_make_tensor_shape_dtype_range(dtype):
    d = getattr(rustgrad, dtype)
    t = rustgrad.testing.make_tensor(4, 5, dtype=d, device="cpu")
    ref = torch.testing.make_tensor(4, 5, dtype=getattr(torch, dtype), device="cpu")
    assert t.shape == (4, 5) and str(t.dtype) == str(ref.dtype)
    v = t.double().numpy() if dtype != "bool" else t.numpy()
    if dtype == "bool":
        assert set(np.unique(v)) <= {False, True}
    elif dtype == "uint8":
        assert v.min() >= 0 and v.max() < 10
    else:
        assert v.min() >= -9 and v.max() <= 9
    t = rustgrad.testing.make_tensor((3,), dtype=d, device="cpu", low=1, high=3)
    assert dtype == "bool" or (t.double().min() >= 1 and t.double().max() <= 3)


def test_make_tensor_options():
    mk = rustgrad.testing.make_tensor
    x = mk(3, 4, dtype=rustgrad.float32, device="cpu", noncontiguous=True, requires_grad=True)
    assert not x.is_contiguous() and x.shape == (3, 4) and x.requires_grad
    z = mk(200, dtype=rustgrad.int64, device="cpu", low=-1, high=1, exclude_zero=True)
    assert not (z == 0).any()
    with pytest.raises(ValueError, match="`low` must be less than or equal to `high`"):
        mk(2, dtype=rustgrad.float32, device="cpu", low=3, high=1)
    b = mk(200, dtype=rustgrad.bfloat16, device="cpu", low=-3, high=3)
    t = torch.testing.make_tensor(200, dtype=torch.bfloat16, device="cpu", low=-3, high=3)
    assert repr(b.dtype) == repr(t.dtype) and b.shape == t.shape
    assert -3 <= b.float().min().item() and b.float().max().item() <= 3


# ---- RNG state and Generator ----------------------------------------------------------------------
def test_rng_state_types_match_torch(lib):
    s = lib.get_rng_state()
    assert s.dtype is lib.uint8 and s.dim() == 1
    g = lib.Generator()
    assert g.device == lib.device("cpu")
    assert g.initial_seed() == 67280421310721  # torch's default seed of a fresh generator
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    new = g.seed()
    assert isinstance(new, int) and g.initial_seed() == new
    assert isinstance(g.get_state(), lib.Tensor) and g.set_state(g.get_state()) is g


def test_rng_state_round_trip(lib):
    lib.manual_seed(11)
    state = lib.get_rng_state()
    a = lib.rand(5)
    lib.set_rng_state(state)
    assert lib.equal(lib.rand(5), a)
    assert lib.initial_seed() == 11


def test_generator_state_round_trip_keeps_the_seed():
    g = rustgrad.Generator().manual_seed(42)
    rustgrad.rand(3, generator=g)
    st = g.get_state()
    a = rustgrad.randn(4, generator=g)
    h = rustgrad.Generator().set_state(st)
    assert rustgrad.equal(rustgrad.randn(4, generator=h), a)
    assert h.initial_seed() == 42


def test_set_state_errors():
    g = rustgrad.Generator()
    with pytest.raises(RuntimeError, match="RNG state size"):
        g.set_state(rustgrad.zeros(3, dtype=rustgrad.uint8))
    same_error(lambda lib: lib.Generator().set_state(lib.zeros(3)), "RNG state must be a torch.By")


DRAWS: dict = {
    "rand": lambda g: rustgrad.rand(50, generator=g),
    "randn": lambda g: rustgrad.randn(50, generator=g),
    "randint": lambda g: rustgrad.randint(0, 100, (50,), generator=g),
    "randperm": lambda g: rustgrad.randperm(50, generator=g),
    "normal_": lambda g: rustgrad.empty(50).normal_(generator=g),
    "uniform_": lambda g: rustgrad.empty(50).uniform_(generator=g),
    "bernoulli_": lambda g: rustgrad.empty(50).bernoulli_(0.5, generator=g),
    "bernoulli": lambda g: rustgrad.bernoulli(rustgrad.full((50,), 0.5), generator=g),
    "multinomial": lambda g: rustgrad.multinomial(rustgrad.ones(50), 50, True, generator=g),
    "multinomial_no_replacement": lambda g: rustgrad.ones(50).multinomial(50, generator=g),
}


@pytest.mark.parametrize("op", sorted(DRAWS))
def test_generator_argument_is_deterministic_and_isolated(op):
    draw: Callable[[Any], Any] = DRAWS[op]
    a = draw(rustgrad.Generator().manual_seed(7)).tolist()
    b = draw(rustgrad.Generator().manual_seed(7)).tolist()
    c = draw(rustgrad.Generator().manual_seed(8)).tolist()
    assert a == b and a != c
    # drawing from a generator leaves the default stream where it was
    rustgrad.manual_seed(3)
    ref = rustgrad.rand(5).tolist()
    rustgrad.manual_seed(3)
    draw(rustgrad.Generator().manual_seed(1))
    assert rustgrad.rand(5).tolist() == ref
    # and the default generator serves the same op without generator=
    rustgrad.manual_seed(7)
    assert draw(None).tolist() == a


def test_generator_refuses_unknown_devices():
    with pytest.raises(RuntimeError):
        rustgrad.Generator("foo")
    if not rustgrad.cuda.is_available():
        with pytest.raises(RuntimeError, match="not available"):
            rustgrad.Generator("cuda")


# ---- multinomial, bernoulli ----------------------------------------------------------------------
def test_multinomial_with_replacement_follows_the_probabilities():
    rustgrad.manual_seed(0)
    p = rustgrad.tensor([0.1, 0.0, 0.6, 0.3])
    s = rustgrad.multinomial(p, 20000, replacement=True)
    assert s.dtype is rustgrad.int64 and s.shape == (20000,)
    freq = np.bincount(s.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    assert freq[1] == 0.0


def test_multinomial_without_replacement():
    rustgrad.manual_seed(0)
    p = rustgrad.tensor([[1.0, 0.0, 2.0, 3.0, 0.5], [0.0, 0.0, 1.0, 0.0, 1.0]])
    s = p.multinomial(2)
    assert s.shape == (2, 2) and s.dtype is rustgrad.int64
    for row, probs in zip(s.tolist(), p.tolist()):
        assert len(set(row)) == 2 and all(probs[i] > 0 for i in row)
    # the first draw of a weighted draw without replacement follows the weights
    firsts = np.array([rustgrad.multinomial(rustgrad.tensor([1.0, 3.0]), 1).item()
                       for _ in range(4000)])
    assert abs(firsts.mean() - 0.75) < 0.03
    full = rustgrad.multinomial(rustgrad.ones(6), 6)
    assert sorted(full.tolist()) == list(range(6))


MULTINOMIAL_ERRORS = {
    "too_many": (lambda lib: lib.multinomial(lib.tensor([0.1, 0.9]), 3), "cannot sample n_sample >"),
    "negative": (lambda lib: lib.multinomial(lib.tensor([-1.0, 1.0]), 1), "element < 0"),
    "inf": (lambda lib: lib.multinomial(lib.tensor([1.0, math.inf]), 1, True), "`inf`, `nan`"),
    "nan": (lambda lib: lib.multinomial(lib.tensor([1.0, math.nan]), 1, True), "`inf`, `nan`"),
    "zero_sum": (lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1), "sum of probabilities"),
    "dims": (lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    "no_samples": (lambda lib: lib.multinomial(lib.ones(3), 0), "cannot sample n_sample <= 0"),
    "int_input": (lambda lib: lib.multinomial(lib.ones(3, dtype=lib.int64), 1),
                  "multinomial only supports floating-point dtypes"),
}


@pytest.mark.parametrize("case", sorted(MULTINOMIAL_ERRORS))
def test_multinomial_errors_match_torch(case):
    fn, phrase = MULTINOMIAL_ERRORS[case]
    same_error(fn, phrase)


def test_bernoulli_function_and_method(lib):
    lib.manual_seed(0)
    p = lib.full((4000,), 0.3, dtype=lib.float64)
    s = lib.bernoulli(p)
    assert s.dtype is lib.float64 and s.shape == p.shape
    assert set(s.unique().tolist()) <= {0.0, 1.0} and abs(s.mean().item() - 0.3) < 0.03
    assert p.bernoulli().dtype is lib.float64
    assert abs(lib.bernoulli(lib.zeros(1000), 0.8).mean().item() - 0.8) < 0.05
    assert lib.bernoulli(lib.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]


# ---- cdist ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, math.inf, 0.5])
def test_cdist_matches_torch(p, device):
    check(lambda lib, a, b: lib.cdist(a, b, p=p), (2, 3, 4), (2, 5, 4), device=device)


def test_cdist_broadcasts_batches_and_2d(device):
    check(lambda lib, a, b: lib.cdist(a, b), (3, 4), (2, 1, 5, 4), device=device)
    check(lambda lib, a, b: lib.cdist(a, b, p=1), (6, 2), (6, 2), device=device)


def test_cdist_zero_distance_passes_no_gradient():
    def program(lib: Any) -> Any:
        a = lib.tensor([[0.0, 1.0], [2.0, 2.0]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[0.0, 1.0]], dtype=lib.float64, requires_grad=True)
        d = lib.cdist(a, b)
        saved_p = d.grad_fn._saved_p
        d.sum().backward()
        return d, a.grad, b.grad, d.grad_fn.name(), saved_p

    parity(program)


@pytest.mark.parametrize("p", [2.0, 3.0, 1.5])
def test_cdist_double_backward(p):
    # torch has no derivative for _cdist_backward; rustgrad's formula is made of ops, so its
    # second derivative is checked numerically
    rustgrad.manual_seed(1)
    a = rustgrad.randn(2, 3, dtype=rustgrad.float64, requires_grad=True)
    b = rustgrad.randn(4, 3, dtype=rustgrad.float64, requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(lambda x, y: rustgrad.cdist(x, y, p=p), (a, b))


@pytest.mark.parametrize("p", [2.0, 1.0, math.inf, 2.5])
def test_cdist_gradcheck(p):
    rustgrad.manual_seed(0)
    a = rustgrad.randn(2, 3, 4, dtype=rustgrad.float64, requires_grad=True)
    b = rustgrad.randn(2, 5, 4, dtype=rustgrad.float64, requires_grad=True)
    assert rustgrad.autograd.gradcheck(lambda x, y: rustgrad.cdist(x, y, p=p), (a, b))


CDIST_ERRORS = {
    "columns": (lambda lib, a, b: lib.cdist(a, b[..., :2]), "must have the same number of columns"),
    "negative_p": (lambda lib, a, b: lib.cdist(a, b, p=-1.0), "only supports non-negative p"),
    "1d": (lambda lib, a, b: lib.cdist(a[0], b[0]), "cdist only supports at least 2D tensors"),
    "int": (lambda lib, a, b: lib.cdist(a.long(), b.long()), "only supports floating-point"),
    "mixed": (lambda lib, a, b: lib.cdist(a, b.float()), "expected scalar type Double"),
}


@pytest.mark.parametrize("case", sorted(CDIST_ERRORS))
def test_cdist_errors_match_torch(case):
    fn, phrase = CDIST_ERRORS[case]
    check_error(fn, (2, 3), (4, 3), phrase=phrase)


# ---- meshgrid ------------------------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_torch(indexing, device):
    check(lambda lib, a, b, c: lib.meshgrid(a, b, c, indexing=indexing), (3,), (2,), (4,),
          device=device)
    check(lambda lib, a, b: lib.meshgrid([a, b], indexing=indexing), (3,), (2,), device=device)
    check(lambda lib, a: lib.meshgrid(a, indexing=indexing), (3,), device=device)


def test_meshgrid_without_indexing_warns_and_uses_ij(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x, y = lib.meshgrid(lib.arange(3), lib.arange(2))
    assert x.shape == (3, 2)
    assert any("indexing argument" in str(w.message) for w in caught)


MESHGRID_ERRORS = {
    "bad_indexing": (lambda lib: lib.meshgrid(lib.ones(2), indexing="ab"), "indexing must be one"),
    "2d": (lambda lib: lib.meshgrid(lib.ones(2, 2), indexing="ij"), "Expected 0D or 1D tensor"),
    "dtypes": (lambda lib: lib.meshgrid(lib.ones(2), lib.arange(2), indexing="ij"),
               "to have the same dtype"),
}


@pytest.mark.parametrize("case", sorted(MESHGRID_ERRORS))
def test_meshgrid_errors_match_torch(case):
    fn, phrase = MESHGRID_ERRORS[case]
    same_error(fn, phrase)


# ---- unique(dim=) --------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim_matches_torch(dim):
    data = [[1, 2, 1], [0, 5, 0], [1, 2, 1], [0, 1, 0]]
    parity(lambda lib: lib.unique(lib.tensor(data), dim=dim, return_inverse=True,
                                  return_counts=True))
    parity(lambda lib: lib.tensor(data, dtype=lib.float32).unique(dim=dim))
    parity(lambda lib: lib.unique(lib.tensor(data), sorted=False, dim=dim, return_counts=True))


def test_unique_dim_out_of_range():
    same_error(lambda lib: lib.unique(lib.ones(2, 2), dim=2), "Dimension out of range")


@pytest.mark.parametrize("weights", [[1.0, -1.0], [1.0, float("nan")], [1.0, float("inf")],
                                     [0.0, 0.0]], ids=repr)
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_refuses_bad_distributions_with_torchs_message(weights, replacement):
    messages = []
    for lib in (torch, rustgrad):
        with pytest.raises(RuntimeError) as info:  # (one sample takes the no-replacement path)
            lib.multinomial(lib.tensor(weights), 2, replacement=replacement)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
