"""Python ints with integer tensors, as torch's: an int out of the tensor dtype's range wraps
around (uint8: 250 + 10 is 4, + 300 is 38) where NumPy would raise OverflowError, in the
operator, method, reflected and in-place forms; an alpha or an exponent that the dtype cannot
hold is refused with torch's RuntimeError."""

from __future__ import annotations

import numpy as np
import pytest

from ..parity import parity, same_error

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]

PROGRAMS = {
    "add": lambda x, s: x + s,
    "radd": lambda x, s: s + x,
    "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "add_alpha": lambda x, s: x.add(s, alpha=2),
    "sub_alpha": lambda x, s: x.sub(s, alpha=3),
    "floordiv": lambda x, s: x // s if s % 256 else x,
    "div": lambda x, s: x / s,
    "add_": lambda x, s: x.clone().add_(s),
    "iadd": lambda x, s: x.clone().__iadd__(s),
    "sub_": lambda x, s: x.clone().sub_(s),
    "mul_": lambda x, s: x.clone().mul_(s),
    "add_alpha_": lambda x, s: x.clone().add_(s, alpha=2),
}

SCALARS = [10, 300, -1, -300, 1000, 70000, 2**40, 2**63 - 1, 2**63, -(2**63)]


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_scalar_wraps_to_the_tensors_dtype(prog, dtype):
    values = [0, 5, 100, 250] if dtype == "uint8" else [-100, -5, 0, 5, 100]

    def run(lib):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        return [PROGRAMS[prog](x, s) for s in SCALARS]

    parity(run)


def test_uint8_examples():
    parity(lambda lib: (lib.tensor([250], dtype=lib.uint8) + 10,
                        lib.tensor([250], dtype=lib.uint8) + 300))
    assert parity(lambda lib: lib.tensor([250], dtype=lib.uint8) + 10).tolist() == [4]


def test_int_beyond_64_bits_is_refused():
    same_error(lambda lib: lib.tensor([2], dtype=lib.uint8) + 2**64, "")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
@pytest.mark.parametrize("form", ["add", "sub", "add_scalar", "add_"])
def test_alpha_the_dtype_cannot_hold_is_refused(dtype, form):
    def prog(lib):
        x = lib.tensor([3], dtype=getattr(lib, dtype))
        alpha = 2**40
        if form == "add":
            return x.add(x, alpha=alpha)
        if form == "sub":
            return x.sub(x, alpha=alpha)
        if form == "add_scalar":
            return x.add(3, alpha=alpha)
        return x.add_(3, alpha=alpha)

    same_error(prog, "value cannot be converted to type")


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("exponent", [300, 2**40, 2**63])
def test_integer_power_by_an_int_the_dtype_cannot_hold(dtype, exponent):
    def prog(lib):
        return lib.tensor([3], dtype=getattr(lib, dtype)) ** exponent

    if np.iinfo(dtype).max >= exponent:
        parity(prog)
    else:
        same_error(prog, "value cannot be converted to type")


def test_float_and_bool_scalars_keep_their_rules():
    def prog(lib):
        x = lib.tensor([250], dtype=lib.uint8)
        return x + True, x * 2.5, x + 300.0, lib.tensor([1.5]) + 300
    parity(prog)


CREATION = {
    "list": lambda lib, dt, v: lib.tensor([v, 1], dtype=dt),
    "number": lambda lib, dt, v: lib.tensor(v, dtype=dt),
    "tensor_in_list": lambda lib, dt, v: lib.tensor([lib.tensor(v)], dtype=dt),
    "full": lambda lib, dt, v: lib.full((2,), v, dtype=dt),
}


@pytest.mark.parametrize("form", sorted(CREATION))
@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"])
@pytest.mark.parametrize("value", [300, -1, -255, -256, 70000, 2**40])
def test_creating_a_narrow_integer_tensor_checks_the_range(form, dtype, value):
    def prog(lib):
        return CREATION[form](lib, getattr(lib, dtype), value)

    try:
        import torch

        prog(torch)
    except RuntimeError:
        same_error(prog, "value cannot be converted to type")
    else:
        parity(prog)


def test_numpy_arrays_are_cast_without_a_check():
    parity(lambda lib: lib.tensor(np.array([300, -1]), dtype=lib.uint8))
