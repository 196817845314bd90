"""The `gradient=` of backward() and `grad_outputs=` of autograd.grad given as an integer or
bool tensor for a float output: torch casts it to the output's dtype and proceeds."""

from __future__ import annotations

import pytest

from ..parity import parity, same_error


def _x(lib, dtype="float32"):
    return lib.tensor([1.0, 2.0, -3.0], dtype=getattr(lib, dtype), requires_grad=True)


GRADS = {
    "int64": lambda lib: lib.tensor([1, 2, 3]),
    "int32": lambda lib: lib.tensor([1, 2, 3], dtype=lib.int32),
    "uint8": lambda lib: lib.tensor([1, 2, 3], dtype=lib.uint8),
    "bool": lambda lib: lib.tensor([True, False, True]),
    "float64": lambda lib: lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64),
}


@pytest.mark.parametrize("grad", sorted(GRADS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backward_casts_the_gradient(grad, dtype):
    def prog(lib):
        x = _x(lib, dtype)
        (x * x).backward(GRADS[grad](lib))
        return x.grad

    parity(prog)


@pytest.mark.parametrize("grad", sorted(GRADS))
def test_autograd_grad_casts_grad_outputs(grad):
    def prog(lib):
        x = _x(lib)
        y = x.exp()
        (g,) = lib.autograd.grad(y, x, GRADS[grad](lib), create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg

    parity(prog)


def test_scalar_output_with_an_int_gradient():
    def prog(lib):
        x = _x(lib)
        (x * x).sum().backward(lib.tensor(2))
        lib.autograd.backward([(x * 3).sum()], [lib.tensor(True)])
        return x.grad

    parity(prog)


def test_wrong_shape_still_refused():
    def prog(lib):
        x = _x(lib)
        (x * x).backward(lib.tensor([1, 2]))

    same_error(prog, "Mismatch in shape")
