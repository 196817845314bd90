"""A grad_fn hook (register_hook) or pre-hook (register_prehook) must return gradients of the
shape and dtype it was given, or fail as torch's check_variable_result does; before, a wrong
shape was broadcast into the next formula or summed into `.grad`."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any, Callable

import pytest


def _leaf_and_out(lib: ModuleType) -> tuple[Any, Any]:
    x = lib.ones(2, requires_grad=True)
    return x, x * 2


def _each(make: Callable[[Any], Any]) -> Callable[..., tuple[Any, ...]]:
    # A post-hook's replacement for every gradient the node returned (None stays None).
    return lambda grad_inputs, grad_outputs: tuple(None if g is None else make(g) for g in grad_inputs)


def _raises(fn: Callable[[], Any], message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        fn()
    assert str(info.value) == message


@pytest.mark.parametrize("shape", [(3,), (1,), (), (2, 2), (1, 2)])
def test_prehook_changing_size_raises(lib: ModuleType, shape: tuple[int, ...]) -> None:
    x, y = _leaf_and_out(lib)

    def pre(grad_outputs: tuple[Any, ...]) -> tuple[Any, ...]:
        return (lib.ones(shape),)

    y.grad_fn.register_prehook(pre)
    _raises(lambda: y.sum().backward(), "hook 'pre' has changed the size of value")
    assert x.grad is None


@pytest.mark.parametrize("shape", [(3,), (1,), (), (2, 2)])
def test_post_hook_changing_size_raises(lib: ModuleType, shape: tuple[int, ...]) -> None:
    x, y = _leaf_and_out(lib)
    post = _each(lambda g: lib.ones(shape))
    y.grad_fn.register_hook(post)
    _raises(lambda: y.sum().backward(), "hook '<lambda>' has changed the size of value")
    assert x.grad is None


def test_broadcastable_prehook_result_is_not_summed_into_grad(lib: ModuleType) -> None:
    # (2, 2) reaching MulBackward of a (2,) leaf used to be summed down to (2,) silently.
    x, y = _leaf_and_out(lib)
    z = y.exp()
    z.grad_fn.register_prehook(lambda g: (lib.ones(2, 2),))
    _raises(lambda: z.sum().backward(), "hook '<lambda>' has changed the size of value")


def test_prehook_on_accumulate_grad_changing_size_raises(lib: ModuleType) -> None:
    x, y = _leaf_and_out(lib)
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: (lib.ones(4),))
    _raises(lambda: y.sum().backward(), "hook '<lambda>' has changed the size of value")
    assert x.grad is None


def test_autograd_grad_checks_node_hooks_too(lib: ModuleType) -> None:
    x, y = _leaf_and_out(lib)
    y.grad_fn.register_prehook(lambda g: (lib.ones(3),))
    _raises(lambda: lib.autograd.grad(y.sum(), x), "hook '<lambda>' has changed the size of value")


class _Callable:
    def __call__(self, grad_outputs: tuple[Any, ...]) -> tuple[Any, ...]:
        return (grad_outputs[0].new_ones(3),)


@pytest.mark.parametrize("hook", [_Callable(), functools.partial(lambda k, g: (g[0].new_ones(3),), 1)])
def test_hook_without_a_name_is_unknown(lib: ModuleType, hook: Any) -> None:
    x, y = _leaf_and_out(lib)
    y.grad_fn.register_prehook(hook)
    _raises(lambda: y.sum().backward(), "hook '<unknown>' has changed the size of value")


def test_prehook_changing_dtype_raises(lib: ModuleType) -> None:
    x, y = _leaf_and_out(lib)
    y.grad_fn.register_prehook(lambda g: (g[0].double(),))
    _raises(
        lambda: y.sum().backward(),
        "hook '<lambda>' has changed the type of value (was torch.FloatTensor got torch.DoubleTensor)",
    )


def test_post_hook_changing_dtype_raises(lib: ModuleType) -> None:
    x, y = _leaf_and_out(lib)
    y.grad_fn.register_hook(_each(lambda g: g.double()))
    _raises(
        lambda: y.sum().backward(),
        "hook '<lambda>' has changed the type of value (was torch.FloatTensor got torch.DoubleTensor)",
    )


def test_same_shape_replacements_and_none_are_kept(lib: ModuleType) -> None:
    x, y = _leaf_and_out(lib)
    y.grad_fn.register_prehook(lambda g: (g[0] * 3,))
    y.grad_fn.register_hook(_each(lambda g: g + 1))
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]

    x, y = _leaf_and_out(lib)
    y.grad_fn.register_hook(lambda gi, go: tuple(None for _ in gi))
    y.sum().backward()
    assert x.grad is None
