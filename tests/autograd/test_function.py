"""Custom autograd.Function, each case run under torch and rustgrad."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from ..parity import f64, parity, same_error


def exp_fn(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    return Exp


def test_function_exp_forward_backward_and_flags_match_torch():
    def run(lib):
        x = f64(lib, [0.5, -1.0], True)
        y = exp_fn(lib).apply(x)
        flags = (y.requires_grad, y.is_leaf, y.grad_fn.name(), y.output_nr)
        (y * y).sum().backward()
        return y, x.grad, flags

    out = parity(run)
    assert out[2] == (True, False, "ExpBackward", 0)


def test_function_saved_output_double_backward_matches_torch():
    def run(lib):
        x = f64(lib, [0.5, -1.0], True)
        y = exp_fn(lib).apply(x)
        (g,) = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return g, h

    parity(run)


def test_function_setup_context_form_with_defaults_and_non_tensor_ctx_attributes():
    def run(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k, shift=1.0):
                return x * k + shift

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k, shift = inputs
                ctx.k = k
                ctx.shift = shift
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * ctx.k + 0 * x, None, None

        x = f64(lib, [1.0, 2.0], True)
        y = Scale.apply(x, 3.0)
        y.sum().backward()
        return y, x.grad, y.grad_fn.k, y.grad_fn.shift

    out = parity(run)
    assert out[2:] == (3.0, 1.0)


def test_function_needs_input_grad_and_non_tensor_args():
    def run(lib):
        seen = []

        class Mix(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, n, b):
                seen.append(ctx.needs_input_grad)
                return a * n + b

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.needs_input_grad)
                return g * 2, None, g if ctx.needs_input_grad[2] else None

        a = f64(lib, [1.0, 2.0], True)
        b = f64(lib, [3.0, 4.0])
        Mix.apply(a, 2, b).sum().backward()
        with lib.no_grad():
            out = Mix.apply(a, 2, b)
        return seen, a.grad, out.requires_grad

    out = parity(run)
    assert out[0] == [(True, False, False)] * 3  # requires_grad, whatever the grad mode


def split_fn(lib, materialize=True):
    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(materialize)
            return a * 2, a.exp()

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.received = (g1, g2)
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total

    return Split


@pytest.mark.parametrize("materialize", [True, False])
def test_function_multiple_outputs_share_one_node(materialize):
    def run(lib):
        a = f64(lib, [1.0, -2.0], True)
        p, q = split_fn(lib, materialize).apply(a)
        node = p.grad_fn
        same = (node == q.grad_fn, p.output_nr, q.output_nr, node.name())
        p.sum().backward()
        g1, g2 = node.received
        return same, a.grad, g1, g2

    out = parity(run)
    assert out[0] == (True, 0, 1, "SplitBackward")
    assert (out[3] is None) == (not materialize)


def test_function_multiple_outputs_both_used_sum_in_one_backward_call():
    def run(lib):
        calls = []
        cls = split_fn(lib)
        orig = cls.backward

        def counting(ctx, g1, g2):
            calls.append(1)
            return orig(ctx, g1, g2)

        cls.backward = staticmethod(counting)
        a = f64(lib, [1.0, -2.0], True)
        p, q = cls.apply(a)
        (p * q).sum().backward()
        return len(calls), a.grad

    assert parity(run)[0] == 1


def test_function_backward_returning_none_blocks_gradient_custom_detach():
    def run(lib):
        class CustomDetach(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return None

        x = f64(lib, [1.0, 2.0], True)
        y = CustomDetach.apply(x) * x  # only the direct path reaches x
        y.sum().backward()
        return x.grad

    np.testing.assert_allclose(parity(run), [1.0, 2.0])


def test_function_mark_dirty_inplace_rebases_history_and_bumps_version():
    def run(lib):
        class MulInplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = f64(lib, [1.0, 3.0], True)
        b = a * 1
        v0 = b._version
        c = MulInplace.apply(b)
        info = (c is b, b.grad_fn.name(), b._version - v0)
        (b ** 2).sum().backward()
        return info, a.grad

    out = parity(run)
    assert out[0] == (True, "MulInplaceBackward", 2)


def test_function_mark_dirty_on_leaf_raises_as_torch():
    def run(lib):
        class Inplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        Inplace.apply(f64(lib, [1.0], True))

    same_error(run, "a leaf Variable that requires grad has been used in an in-place operation.")


def test_function_mark_non_differentiable_output():
    def run(lib):
        class SortLike(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax()
                ctx.mark_non_differentiable(idx)
                return x * 2, idx

            @staticmethod
            def backward(ctx, g, g_idx):
                ctx.g_idx = g_idx
                return g * 2

        x = f64(lib, [1.0, 5.0, 2.0], True)
        v, i = SortLike.apply(x)
        flags = (v.requires_grad, i.requires_grad, i.grad_fn is None)
        v.sum().backward()
        return flags, x.grad, v.grad_fn.g_idx

    assert parity(run)[0] == (True, False, True)


def test_function_input_returned_as_is_is_an_alias_with_new_history():
    def run(lib):
        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = f64(lib, [1.0, 2.0], True)
        y = Identity.apply(x)
        info = (y is x, x.is_leaf, y.grad_fn.name())
        y.sum().backward()
        return info, x.grad

    out = parity(run)
    assert out[0] == (False, True, "IdentityBackward")


def test_function_saved_input_modified_inplace_raises_version_error():
    def run(lib):
        class Save(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3

        a = f64(lib, [1.0], True)
        b = a * 1
        y = Save.apply(b)
        b.add_(1)
        y.sum().backward()

    same_error(run, "one of the variables needed for gradient computation has been modified by "
                    "an inplace operation: [torch.DoubleTensor [1]], which is output 0 of "
                    "Add, is at version 1; expected version 0 instead.")


def test_function_saved_tensors_released_after_backward():
    def run(lib):
        y = exp_fn(lib).apply(f64(lib, [1.0], True))
        assert len(y.grad_fn.saved_tensors) == 1
        y.sum().backward()
        return y.grad_fn.saved_tensors

    same_error(run, "Trying to backward through the graph a second time")


def wrong_count_fn(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    return Wrong


FUNCTION_ERRORS = [
    ("wrong_count", lambda lib: wrong_count_fn(lib).apply(
        f64(lib, [1.0], True), f64(lib, [2.0], True)).sum().backward(),
     "function WrongBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("wrong_shape", lambda lib: _wrong_shape(lib),
     "Function WrongShapeBackward returned an invalid gradient at index 0 - got [2] but "
     "expected shape compatible with [3]"),
    ("grad_for_non_tensor", lambda lib: _grad_for_non_tensor(lib),
     "function NonTensorBackward returned a gradient different than None at position 2, but the "
     "corresponding forward input was not a Variable"),
    ("legacy_call", lambda lib: exp_fn(lib)()(f64(lib, [1.0])),
     "Legacy autograd function with non-static forward method is deprecated"),
    ("once_differentiable", lambda lib: _once(lib),
     "trying to differentiate twice a function that was marked with @once_differentiable"),
]


def _wrong_shape(lib):
    class WrongShape(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return lib.ones(2, dtype=lib.float64)

    WrongShape.apply(f64(lib, [1.0, 2.0, 3.0], True)).sum().backward()


def _grad_for_non_tensor(lib):
    class NonTensor(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    NonTensor.apply(f64(lib, [1.0], True), 2.0).sum().backward()


def _once(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = f64(lib, [1.0, 2.0], True)
    y = Square.apply(x)
    (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "torch::autograd::Error"
    g.sum().backward()


@pytest.mark.parametrize("case", FUNCTION_ERRORS, ids=[c[0] for c in FUNCTION_ERRORS])
def test_function_error_matches_torch(case):
    _, fn, phrase = case
    with pytest.warns(DeprecationWarning) if case[0] == "legacy_call" else _nothing():
        same_error(fn, phrase)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_function_broadcastable_gradient_is_summed_and_cast_as_torch():
    def run(lib):
        class Bcast(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return lib.ones(4, 3, dtype=lib.float32)  # expandable from [3], float32

        x = f64(lib, [1.0, 2.0, 3.0], True)
        Bcast.apply(x).sum().backward()
        return x.grad

    np.testing.assert_allclose(parity(run), [4.0, 4.0, 4.0])


def test_function_graph_is_freed_without_a_cycle(rg):
    """The ctx holds the node's formula state, the node holds its output only weakly."""
    x = f64(rg, [1.0], True)
    y = exp_fn(rg).apply(x)
    ref = weakref.ref(y.grad_fn._ctx)
    del y
    assert ref() is None  # by reference counting alone, before any collection
    gc.collect()
