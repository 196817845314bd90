"""no_grad, enable_grad and inference_mode as bare decorators (`@no_grad` without parentheses),
on functions, generators and classes, as torch's."""

from __future__ import annotations

import pytest

# each mode, and whether ops record a graph inside it when entered from no_grad
MODES = [("no_grad", False), ("enable_grad", True), ("inference_mode", False)]


def _records(lib):
    return (lib.ones(1, requires_grad=True) * 2).requires_grad


@pytest.mark.parametrize("name,inside", MODES)
def test_bare_decorator_applies_mode(lib, name, inside):
    @getattr(lib, name)
    def f(x):
        """doc"""
        return lib.is_grad_enabled(), _records(lib), x

    with lib.no_grad():
        assert f(7) == (inside, inside, 7)
    assert f.__name__ == "f" and f.__doc__ == "doc"
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("name,inside", MODES)
def test_bare_decorator_on_generator(lib, name, inside):
    @getattr(lib, name)
    def gen():
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()

    with lib.no_grad():
        it = gen()
        first = next(it)
        between = lib.is_grad_enabled()
        second = next(it)
    assert (first, between, second) == (inside, False, inside)


@pytest.mark.parametrize("name,inside", MODES)
def test_called_decorator_still_works(lib, name, inside):
    @getattr(lib, name)()
    def f():
        return lib.is_grad_enabled()

    with lib.no_grad():
        assert f() is inside


def test_bare_inference_mode_decorator_enables_inference(lib):
    @lib.inference_mode
    def f():
        return lib.is_inference_mode_enabled()

    assert f() is True
    assert lib.is_inference_mode_enabled() is False


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_decorating_a_class_warns_and_wraps_its_constructor(lib, name):
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):

        @getattr(lib, name)
        class C:
            def __init__(self):
                self.grad = lib.is_grad_enabled()

    with lib.no_grad():
        made = C()
    assert made.grad is (name == "enable_grad")
