"""Python code that runs while rustgrad's Rust side holds a lock or a borrow (a `__del__`, a
weakref callback, the garbage collector) neither hangs nor finds the tensor borrowed."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import rustgrad as rg


def _run_isolated(code: str) -> str:
    """Runs `code` in a fresh interpreter (a deadlock there cannot hang the suite)."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---- locks held while Python code runs -------------------------------------------------------
def test_removing_a_hook_whose_del_registers_a_hook_on_the_same_tensor_does_not_hang():
    out = _run_isolated(
        """
        import rustgrad as rg
        x = rg.ones(3, requires_grad=True)
        class Hook:
            def __call__(self, g):
                return g
            def __del__(self):
                x.register_hook(lambda g: g * 2)
        handle = x.register_hook(Hook())
        handle.remove()
        (x * 1).sum().backward()
        print(x.grad.tolist())
        """
    )
    assert out.strip() == "[2.0, 2.0, 2.0]"


def test_garbage_collection_while_describing_a_modified_saved_tensor_does_not_hang():
    # The error message is built by Python code; a collection there traverses the node whose
    # saved values are being unpacked.
    out = _run_isolated(
        """
        import gc
        import rustgrad as rg
        from rustgrad._ops import _util
        describe = _util.describe
        def collecting(array):
            gc.collect()
            return "tensor"
        describe.__code__ = collecting.__code__
        a = rg.ones(3, requires_grad=True).clone()
        y = a * a
        fn = y.grad_fn
        del y
        a.add_(1)
        try:
            fn._saved_values()
        except RuntimeError as e:
            print("inplace" in str(e))
        """
    )
    assert out.strip() == "True"


# ---- borrows held while Python code runs ------------------------------------------------------
def test_finalizer_of_the_old_grad_can_use_the_tensor_while_grad_is_set():
    w = rg.ones(3, requires_grad=True)
    g = rg.ones(3)
    w.grad = g
    seen = []
    weakref.finalize(g, lambda: seen.append((w.grad, w.requires_grad, w.register_hook(lambda q: q))))
    del g
    w.grad = None
    assert len(seen) == 1
    assert seen[0][0] is None and seen[0][1] is True


def test_finalizer_of_the_old_history_can_use_the_tensor_during_detach_():
    x = rg.ones(3, requires_grad=True)
    t = rg.ones(3)
    y = x * t  # MulBackward0 holds `t` alone once the name goes
    seen = []
    weakref.finalize(t, lambda: seen.append((y.is_leaf, y.requires_grad, y.grad_fn)))
    del t
    y.detach_()
    assert seen == [(True, False, None)]


def test_finalizer_of_the_old_history_can_use_the_tensor_during_an_inplace_op():
    x = rg.ones(3, requires_grad=True)
    t = rg.ones(3)
    y = x * t
    y.retain_grad()
    seen = []
    weakref.finalize(t, lambda: seen.append((y._version, y.retains_grad)))
    del t
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    assert y.grad.tolist() == [1.0, 1.0, 1.0]
    y.detach_()
    assert seen == [(1, True)]


def test_finalizer_of_the_old_data_can_use_the_tensor():
    x = rg.ones(3, requires_grad=True)
    old = x.data
    seen = []
    weakref.finalize(old, lambda: seen.append(x.requires_grad))
    del old
    x.data = rg.zeros(3)
    gc.collect()
    assert x.tolist() == [0.0, 0.0, 0.0]
