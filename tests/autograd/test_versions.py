"""Version counters, detach()/detach_()/.data/clone(), and the saved-tensor version check."""

from __future__ import annotations

import re

import pytest

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place"
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace"


# ---- _version -----------------------------------------------------------------------------
def test_version_bumps_once_per_inplace_op(lib):
    t = lib.zeros(3)
    assert t._version == 0

    t.add_(1)
    t.mul_(2)
    t += 1
    t[0] = 5.0
    t.zero_()

    assert t._version == 5


def test_version_not_bumped_by_out_of_place_ops(lib):
    t = lib.ones(3)

    _ = t + 1, t * 2, t.exp(), t.clone(), t.sum()

    assert t._version == 0


def test_version_shared_by_view_and_base(lib):
    base = lib.ones(3)
    view = base[0:2]

    view.add_(1)

    assert base._version == view._version == 1
    assert base.tolist() == [2.0, 2.0, 1.0]


# ---- detach() -----------------------------------------------------------------------------
def test_detach_shares_storage_both_ways(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    d = a.detach()

    d[0] = 5.0
    assert a.tolist() == [5.0, 2.0]
    with lib.no_grad():
        a[1] = 7.0
    assert d.tolist() == [5.0, 7.0]


def test_detach_shares_version_counter(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    d = a.detach()

    d.add_(1)
    assert (a._version, d._version) == (1, 1)
    with lib.no_grad():
        a.mul_(2)
    assert (a._version, d._version) == (2, 2)


def test_detach_write_then_backward_raises_version_error(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()

    y.detach().add_(1)  # bumps y's counter through the detached alias

    with pytest.raises(RuntimeError, match=MODIFIED):
        z.backward()


def test_detach_result_does_not_require_grad_and_keeps_source_flags(lib):
    a = lib.tensor([1.0], requires_grad=True)

    d = a.detach()

    assert not d.requires_grad and d.is_leaf
    assert a.requires_grad and a.is_leaf


# ---- detach_() ------------------------------------------------------------------------------
def test_detach_underscore_drops_history_in_place(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2

    out = y.detach_()

    assert out is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


def test_detach_underscore_on_view_raises_cant_detach_views(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    v = (x * 2)[0:1]

    with pytest.raises(RuntimeError, match=r"Can't detach views in-place\. Use detach\(\) instead"):
        v.detach_()

    assert v.requires_grad and v.grad_fn is not None


# ---- .data ------------------------------------------------------------------------------
def test_data_shares_storage_but_not_version_counter(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    d = a.data

    d.add_(1)

    assert a.tolist() == [2.0, 3.0]
    assert d._version == 1
    assert a._version == 0
    assert not d.requires_grad and d.is_leaf


def test_data_write_escapes_the_saved_tensor_check(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()

    y.data.mul_(10)  # unsafe by design: no version bump, so backward uses the new values

    z.backward()
    assert x.grad.tolist() == [20.0, 40.0]


def test_data_setter_replaces_values_keeps_requires_grad(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    a.data = lib.tensor([7.0, 8.0])

    assert a.tolist() == [7.0, 8.0]
    assert a.requires_grad and a.is_leaf


# ---- clone() ------------------------------------------------------------------------------
def test_clone_is_differentiable_and_copies(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    c = x.clone()
    c.retain_grad()
    (c * 3).sum().backward()

    assert c.grad_fn.name() == "CloneBackward0" and not c.is_leaf
    assert x.grad.tolist() == [3.0, 3.0]
    with lib.no_grad():
        c.add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_detach_clone_does_not_alias(lib):
    x = lib.tensor([1.0], requires_grad=True)

    c = x.detach().clone()
    c += 1

    assert x.tolist() == [1.0] and c.tolist() == [2.0]
    assert x._version == 0


# ---- in-place ops and autograd --------------------------------------------------------
def test_inplace_on_leaf_requiring_grad_raises(lib):
    x = lib.ones(2, requires_grad=True)

    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        x.add_(1)

    assert x._version == 0 and x.tolist() == [1.0, 1.0]


def test_inplace_on_leaf_under_no_grad_allowed(lib):
    x = lib.ones(2, requires_grad=True)

    with lib.no_grad():
        x.add_(1)

    assert x.tolist() == [2.0, 2.0] and x.is_leaf and x.requires_grad


def _inplace_error(lib, build):
    with pytest.raises(RuntimeError) as err:
        build().sum().backward()
    return str(err.value)


def test_saved_input_modified_inplace_raises_with_node_and_versions(lib):
    def build():
        p = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        q = p + 1
        r = q * q
        q.mul_(2)
        return r

    msg = _inplace_error(lib, build)

    assert msg.startswith(
        MODIFIED + " operation: [torch.FloatTensor [3]], which is output 0 of Mul, "
        "is at version 1; expected version 0 instead."
    ), msg


def test_saved_input_modified_twice_reports_current_grad_fn_and_version(lib):
    def build():
        p = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        q = p * 1
        r = q * q
        q.add_(1)
        q.add_(1)
        return r

    msg = _inplace_error(lib, build)

    assert re.search(
        r"\[torch\.DoubleTensor \[2, 3\]\], which is output 0 of Add, "
        r"is at version 2; expected version 0 instead\.", msg
    ), msg


def test_saved_output_modified_inplace_names_the_saving_node(lib):
    def build():
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        r = (p * 1).sigmoid()  # sigmoid saves its output
        r.add_(1)
        return r

    msg = _inplace_error(lib, build)

    assert "which is output 0 of Sigmoid, is at version 1; expected version 0" in msg


def test_saved_leaf_modified_inplace_names_no_node(lib):
    def build():
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        r = p * p
        with lib.no_grad():
            p.add_(1)
        return r

    msg = _inplace_error(lib, build)

    assert msg.startswith(
        MODIFIED + " operation: [torch.FloatTensor [2]] is at version 1; expected version 0 "
        "instead."
    ), msg


def test_inplace_error_leaves_grads_untouched(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    y = x * 1
    z = (y * w).sum()
    y.add_(1)

    with pytest.raises(RuntimeError, match=MODIFIED):
        z.backward()

    assert x.grad is None


def test_inplace_on_non_leaf_rebases_history(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2

    y.mul_(3)
    y.sum().backward()

    assert y.grad_fn.name() == "MulBackward0"
    assert y._version == 1
    assert x.grad.tolist() == [6.0, 6.0]


# ---- zero_ / fill_ / copy_ (bound in _methods.py) -----------------------------------------
@pytest.mark.parametrize(
    "program, name, grad",
    [
        ("b.fill_(2); (b * a).sum()", "FillBackward2", [2.0, 2.0, 2.0]),
        ("b.zero_(); (b + a).sum()", "ZeroBackward0", [1.0, 1.0, 1.0]),
        ("b.copy_(a * 2); (b * b).sum()", "torch::autograd::CopyBackwards", [8.0, 16.0, 24.0]),
        ("b.copy_(m.ones(3)); (b * a).sum()", "torch::autograd::CopyBackwards", [1.0, 1.0, 1.0]),
        ("b.copy_(a[0:1] * 5); b.sum()", "torch::autograd::CopyBackwards", [15.0, 0.0, 0.0]),
        ("b.copy_(a.double() * 2); b.sum()", "torch::autograd::CopyBackwards", [2.0, 2.0, 2.0]),
        ("b.fill_((a * 1).sum()); b.sum()", "FillBackward3", [3.0, 3.0, 3.0]),
    ],
)
def test_overwrite_inplace_on_non_leaf_names_node_and_routes_grad(lib, program, name, grad):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    setup, loss = program.split("; ", 1)

    exec(setup, {"a": a, "b": b, "m": lib})
    eval(loss, {"a": a, "b": b, "m": lib}).backward()

    assert b.grad_fn.name() == name
    assert b._version == 1
    assert a.grad.tolist() == grad


def test_copy_into_tensor_without_grad_makes_it_non_leaf(lib):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = lib.zeros(3)

    z.copy_(a * 3)
    z.sum().backward()

    assert not z.is_leaf and z.requires_grad
    assert z.grad_fn.name() == "torch::autograd::CopyBackwards"
    assert a.grad.tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize(
    "program, grad",
    [
        ("b[0:2].fill_(1); (b * b).sum()", [0.0, 0.0, 6.0]),
        ("b[1:].zero_(); (b * b).sum()", [2.0, 0.0, 0.0]),
        ("b[1:].copy_(a[:2] * 3); b.sum()", [4.0, 3.0, 0.0]),
    ],
)
def test_overwrite_inplace_on_view_rewrites_base_history(lib, program, grad):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    setup, loss = program.split("; ", 1)

    exec(setup, {"a": a, "b": b})
    eval(loss, {"a": a, "b": b}).backward()

    assert b._version == 1
    assert a.grad.tolist() == grad


def test_inplace_on_view_base_grad_fn_is_copy_slices(lib):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1

    v = b[0:2]
    v.fill_(1)

    assert v.grad_fn.name() == "AsStridedBackward0"
    assert b.grad_fn.name() == "torch::autograd::CopySlices"


def test_arith_inplace_on_view_rewrites_base_history(lib):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1

    b[0:2].mul_(10)
    b.sum().backward()

    assert a.grad.tolist() == [10.0, 10.0, 1.0]
