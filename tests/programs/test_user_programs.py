"""User programs, as tutorials and course notebooks write them, run under torch and rustgrad.

Each case is a program text and the names whose observables must agree: for tensors the
values, shape, dtype, requires_grad, is_leaf, grad_fn name, `.grad` and repr; for other values
equality (exception captures included: `err(fn)` gives the exception's type and message).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rustgrad
import torch


def err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return (type(e).__name__, str(e))
    return None


def observe(value, lib):
    if isinstance(value, lib.Tensor):
        out = {
            "shape": tuple(value.shape),
            "dtype": str(value.dtype),
            "requires_grad": value.requires_grad,
            "is_leaf": value.is_leaf,
            "grad_fn": None if value.grad_fn is None else value.grad_fn.name(),
            "values": value.detach().numpy().tolist(),
            "repr": repr(value),
        }
        if value.is_leaf:
            out["grad"] = None if value.grad is None else observe(value.grad, lib)
        return out
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [observe(v, lib) for v in value])
    return value


def run(src, lib, names):
    ns = {"torch": lib, "np": np, "err": err}
    exec(src, ns)
    return {name: observe(ns[name], lib) for name in names}


CASES = [
    # repr: lines wrap at 80 columns, summarized tensors pick scientific mode from the edge
    # values, and a suffix that does not fit goes on its own line
    ("repr_wraps_long_vectors", "r = repr(torch.arange(30.))", ["r"]),
    ("repr_summary_sci_mode", "r = repr(torch.arange(2000.))", ["r"]),
    ("repr_summary_2d", "r = repr(torch.arange(1200.).reshape(40, 30) / 7)", ["r"]),
    ("repr_suffix_on_new_line",
     "x = torch.linspace(-3, 3, 2000, requires_grad=True)\nr = repr(x * 2)", ["r"]),
    ("repr_wrapped_matrix_with_grad_fn",
     "r = repr(torch.arange(72., requires_grad=True).reshape(2, 36) + 0.5)", ["r"]),
    ("repr_int_mode_ratio", "r = repr(torch.tensor([1., 5000.]))", ["r"]),
    ("repr_copyslices_name",
     "x = torch.ones(3, requires_grad=True)\ny = x * 2\ny[0] = 0\nr = repr(y)", ["r"]),
    # max/min/sort/topk return torch.return_types with torch's repr
    ("min_dim_return_type",
     "x = torch.tensor([[1., 5.], [2., 0.]])\nr = repr(torch.min(x, 1))\nn = type(x.max(0)).__name__",
     ["r", "n"]),
    ("sort_return_type", "r = repr(torch.tensor([3, 1, 2]).sort())", ["r"]),
    # error messages name dtypes as torch does
    ("mean_of_long", "e = err(lambda: torch.tensor([1, 2]).mean())", ["e"]),
    ("div_inplace_long", "e = err(lambda: torch.tensor([1, 2]).div_(2))", ["e"]),
    ("where_long_condition",
     "e = err(lambda: torch.where(torch.tensor([1, 0]), torch.ones(2), torch.zeros(2)))", ["e"]),
    # writing through an index of a leaf is "a view of a leaf" (int or partial slice)
    ("setitem_leaf_int",
     "x = torch.ones(2, requires_grad=True)\ne = err(lambda: x.__setitem__(0, 5.))\n"
     "e2 = err(lambda: x.__setitem__(slice(None), 5.))", ["e", "e2"]),
    # ragged nested lists
    ("ragged_list", "e = err(lambda: torch.tensor([[1, 2], [3]]))\n"
     "e2 = err(lambda: torch.tensor([[[1, 2], [3, 4]], [[1, 2], [3]]]))\n"
     "e3 = err(lambda: torch.tensor([[1, 2], 3]))", ["e", "e2", "e3"]),
    # new_* factories take this tensor's dtype
    ("new_factories",
     "x = torch.tensor([1, 2])\na = x.new_zeros(2, 3)\nb = x.new_ones((2,))\n"
     "c = torch.ones(2, dtype=torch.float64).new_full((2,), 3)\nd = x.new_tensor([3.5])\n"
     "f = torch.ones(1).new_tensor([1., 2.], requires_grad=True)", ["a", "b", "c", "d", "f"]),
    # a Python number as the first operand of the functional forms
    ("scalar_first_functional",
     "x = torch.tensor([1., 2.], requires_grad=True)\n"
     "ys = [torch.add(2., x), torch.mul(2, x), torch.sub(2., x), torch.div(2., x), "
     "torch.pow(2., x)]\nsum(y.sum() for y in ys).backward()\n"
     "i = torch.div(2, torch.tensor([1, 2]))", ["ys", "x", "i"]),
    # matmul shape errors
    ("matmul_errors",
     "e1 = err(lambda: torch.ones(2, 3) @ torch.ones(2))\n"
     "e2 = err(lambda: torch.ones(3) @ torch.ones(2, 3))\n"
     "e3 = err(lambda: torch.ones(2, 2, 3) @ torch.ones(2, 4))\n"
     "e4 = err(lambda: torch.ones(2, 2, 3) @ torch.ones(2, 4, 4))", ["e1", "e2", "e3", "e4"]),
    # float()/int() of a many-element tensor is a ValueError (item() is a RuntimeError)
    ("float_int_of_many", "e = err(lambda: float(torch.ones(2)))\n"
     "e2 = err(lambda: int(torch.ones(2)))\ne3 = err(lambda: torch.ones(2).item())",
     ["e", "e2", "e3"]),
    # checking gradients as tutorials do
    ("allclose_equal_isclose",
     "x = torch.tensor([1., 2.], requires_grad=True)\n(x ** 2).sum().backward()\n"
     "a = torch.allclose(x.grad, 2 * x)\nb = torch.equal(x.grad, torch.tensor([2., 4.]))\n"
     "c = torch.isclose(x.grad, torch.tensor([2., 4.1]))\nd = x.grad.allclose(x.grad)\n"
     "e = err(lambda: torch.allclose(x, torch.tensor([1, 2])))\n"
     "f = err(lambda: torch.allclose(x, torch.ones(3)))\ng = torch.equal(x, torch.ones(3))",
     ["a", "b", "c", "d", "e", "f", "g"]),
    # mismatched loss shapes: torch's broadcast error, not NumPy's
    ("mse_loss_shapes", "import warnings\nwarnings.simplefilter('ignore')\n"
     "e = err(lambda: torch.nn.functional.mse_loss(torch.ones(2), torch.ones(3)))", ["e"]),
    # the Variable era: Variable is a detached alias with the flag; typed constructors
    ("variable_and_typed_constructors",
     "from importlib import import_module\n"
     "Variable = import_module(torch.__name__ + '.autograd').Variable\n"
     "y = torch.ones(2, requires_grad=True) * 3\nv = Variable(y)\n"
     "w = Variable(torch.ones(2), requires_grad=True)\n(w * 3).sum().backward()\n"
     "i = isinstance(w, Variable)\na = torch.FloatTensor([1, 2])\nb = torch.LongTensor([1, 2])\n"
     "c = torch.FloatTensor(2, 3).shape\nd = isinstance(a, torch.FloatTensor)\n"
     "f = isinstance(a, torch.LongTensor)", ["v", "w", "i", "a", "b", "c", "d", "f"]),
    # negative slice steps are refused (torch has no negative strides): flip() instead
    ("negative_step", "x = torch.arange(5)\ne = err(lambda: x[::-1])\n"
     "e2 = err(lambda: x.__setitem__(slice(None, None, -1), 0))\nf = x.flip(0)",
     ["e", "e2", "f"]),
    # in-place activations (DCGAN's LeakyReLU(0.2, inplace=True)): the backward works and
    # the tensor takes the activation's node
    ("inplace_activations",
     "nn, F = torch.nn, torch.nn.functional\nouts, grads = [], []\n"
     "for f in (lambda t: nn.LeakyReLU(0.2, inplace=True)(t), lambda t: F.relu(t, inplace=True),\n"
     "          lambda t: t.relu_(), lambda t: F.leaky_relu(t, 0.1, inplace=True),\n"
     "          lambda t: F.hardtanh(t, inplace=True), lambda t: nn.ReLU6(inplace=True)(t)):\n"
     "    a = torch.tensor([-1., 0.5, 2.], requires_grad=True)\n    z = a * 1\n"
     "    r = f(z)\n    (r * torch.tensor([1., 2., 3.])).sum().backward()\n"
     "    outs.append((r is z, z._version, r.grad_fn.name()))\n    grads.append(a.grad)\n"
     "b = torch.tensor([[-1., 2.], [3., -4.]], requires_grad=True) * 1\n"
     "nn.LeakyReLU(0.1, inplace=True)(b[0])\nb.sum().backward()\n"
     "w = torch.tensor([-1., 2.], requires_grad=True)\n"
     "e = err(lambda: F.leaky_relu(w, inplace=True))\n"
     "y = torch.tensor([-1., 2.], requires_grad=True).sigmoid()\nF.relu(y, inplace=True)\n"
     "e2 = err(lambda: y.sum().backward())\ne2 = (e2[0], e2[1].split(' Hint')[0])",
     ["outs", "grads", "b", "e", "e2"]),
    ("softmax_of_long",
     "e = err(lambda: torch.tensor([1, 2]).softmax(0))\n"
     "e2 = err(lambda: torch.tensor([[1, 2]]).softmax(0))\n"
     "e3 = err(lambda: torch.tensor([[1, 2]]).log_softmax(-1))", ["e", "e2", "e3"]),
    ("float_index", "t = torch.tensor([[1, 2], [3, 4]])\ne = err(lambda: t[0.5])\n"
     "e2 = err(lambda: t[0, 1.0])", ["e", "e2"]),
    # legacy type names
    ("tensor_type",
     "a = torch.ones(2).type()\nb = torch.tensor([1]).type()\nc = torch.ones(2).type(torch.int64)\n"
     "d = torch.ones(2).type('torch.DoubleTensor')", ["a", "b", "c", "d"]),
]


@pytest.mark.parametrize("name,src,names", CASES, ids=[c[0] for c in CASES])
def test_user_program_matches_torch(name, src, names):
    expected = run(src, torch, names)
    got = run(src, rustgrad, names)
    assert got == expected


def test_float_of_a_grad_tensor_warns_as_torch():
    import warnings

    from rustgrad import _warn_once

    _warn_once._seen.discard("float() of a tensor that requires grad")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert float(rustgrad.tensor([1.5], requires_grad=True)) == 1.5
        float(rustgrad.tensor([2.5], requires_grad=True))  # once per process, as torch
    messages = [str(w.message) for w in caught if w.category is UserWarning]
    assert len(messages) == 1
    assert messages[0].startswith("Converting a tensor with requires_grad=True to a scalar")


def test_T_of_a_3d_tensor_warns_once_per_process_as_torch():
    # a fresh process: the warning is given once per process, and this one may have given it
    code = textwrap.dedent("""
        import warnings
        import rustgrad
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert rustgrad.ones(2, 3, 4).T.shape == (4, 3, 2)
            assert rustgrad.ones(2, 3).T.shape == (3, 2)
            assert rustgrad.ones(2, 3, 4).T.shape == (4, 3, 2)
        for w in caught:
            if w.category is UserWarning:
                print(w.message)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    messages = proc.stdout.splitlines()
    assert len(messages) == 1 and messages[0].startswith("The use of `x.T` on tensors of dimension")
