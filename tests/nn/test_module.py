"""nn.Parameter and nn.Module: registration, traversal, modes, conversion, state_dict, repr
(each test runs under torch and rustgrad: torch's behaviour is the expected one)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import rustgrad
import torch


class Net:
    """Builds a small module tree in either library."""

    @staticmethod
    def build(lib):
        nn = lib.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 4)
                self.scale = nn.Parameter(lib.ones(4))
                self.register_buffer("count", lib.zeros(1))
                self.register_buffer("cache", lib.zeros(2), persistent=False)

            def forward(self, x):
                return self.fc(x) * self.scale

        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

            def forward(self, x):
                return self.head(self.block(x))

        return Top()


# ---- Parameter -----------------------------------------------------------------------------
def test_parameter_default_requires_grad_is_leaf(lib):
    p = lib.nn.Parameter(lib.zeros(3))

    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert isinstance(p, lib.Tensor)


def test_parameter_created_under_no_grad_still_requires_grad(lib):
    with lib.no_grad():
        p = lib.nn.Parameter(lib.zeros(2))

    assert p.requires_grad


def test_parameter_shares_data_with_source_tensor(lib):
    t = lib.zeros(3)
    p = lib.nn.Parameter(t)
    with lib.no_grad():
        p[0] = 5.0

    assert t[0].item() == 5.0
    assert p.data_ptr() == t.data_ptr()


def test_parameter_requires_grad_false_is_respected(lib):
    p = lib.nn.Parameter(lib.zeros(2), requires_grad=False)

    assert not p.requires_grad


def test_parameter_op_result_is_plain_tensor_not_parameter(lib):
    p = lib.nn.Parameter(lib.ones(2))

    y = p * 2

    assert type(y) is lib.Tensor
    assert type(y.grad_fn).__name__ == "MulBackward0" or y.grad_fn.name() == "MulBackward0"


def test_parameter_repr_has_torch_prefix(lib):
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))

    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_parameter_of_integer_tensor_raises_runtime_error(lib):
    with pytest.raises(RuntimeError, match="floating point"):
        lib.nn.Parameter(lib.tensor([1, 2]))


def test_parameter_deepcopy_is_new_parameter_with_same_values(lib):
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))

    q = copy.deepcopy(p)

    assert type(q) is type(p) and q.requires_grad
    assert q.tolist() == [1.0, 2.0] and q.data_ptr() != p.data_ptr()


# ---- registration and traversal ----------------------------------------------------------
def test_module_named_parameters_order_and_names(lib):
    m = Net.build(lib)

    names = [n for n, _ in m.named_parameters()]

    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "head.1.weight",
                     "head.1.bias"]


def test_module_named_parameters_recurse_false_lists_own_only(lib):
    m = Net.build(lib)

    assert [n for n, _ in m.block.named_parameters(recurse=False)] == ["scale"]
    assert list(m.named_parameters(recurse=False)) == []


def test_module_shared_parameter_listed_once_unless_duplicates_kept(lib):
    nn = lib.nn
    a = nn.Linear(2, 2)
    m = nn.Sequential(a, a)

    assert len(list(m.parameters())) == 2
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == [
        "0.weight", "0.bias", "1.weight", "1.bias"]


def test_module_buffers_and_persistence(lib):
    m = Net.build(lib)

    assert [n for n, _ in m.named_buffers()] == ["block.count", "block.cache"]
    assert list(m.state_dict().keys()) == ["block.scale", "block.count", "block.fc.weight",
                                           "block.fc.bias", "head.1.weight", "head.1.bias"]


def test_module_children_and_named_modules(lib):
    m = Net.build(lib)

    assert [type(c).__name__ for c in m.children()] == ["Block", "Sequential"]
    assert [n for n, _ in m.named_modules()] == ["", "block", "block.fc", "head", "head.0",
                                                 "head.1"]


def test_module_setattr_tensor_is_not_registered(lib):
    m = lib.nn.Module()
    m.t = lib.zeros(2)

    assert list(m.parameters()) == [] and list(m.buffers()) == []
    assert m.t.shape == (2,)


def test_module_assign_none_to_parameter_slot_keeps_slot(lib):
    lin = lib.nn.Linear(2, 2)
    lin.bias = None

    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert "bias" not in lin.state_dict()


def test_module_assign_tensor_to_parameter_slot_raises_type_error(lib):
    lin = lib.nn.Linear(2, 2)

    with pytest.raises(TypeError, match="cannot assign"):
        lin.weight = lib.zeros(2, 2)


def test_module_register_non_leaf_parameter_raises_value_error(lib):
    m = lib.nn.Module()
    p = lib.nn.Parameter(lib.zeros(2))
    with pytest.raises((ValueError, TypeError)):
        m.register_parameter("q", p * 2)


def test_module_missing_attribute_raises_attribute_error_with_class_name(lib):
    m = lib.nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        m.nope  # noqa: B018


def test_module_assign_before_init_raises_attribute_error(lib):
    class Bad(lib.nn.Module):
        def __init__(self):
            self.p = lib.nn.Parameter(lib.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_module_delattr_unregisters_submodule(lib):
    m = Net.build(lib)
    del m.head

    assert [n for n, _ in m.named_children()] == ["block"]


def test_module_get_submodule_and_parameter(lib):
    m = Net.build(lib)

    assert m.get_submodule("head.1") is m.head[1]
    assert m.get_parameter("block.fc.weight") is m.block.fc.weight


def test_module_forward_missing_raises_not_implemented(lib):
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        lib.nn.Module()(1)


# ---- modes, grads, conversion --------------------------------------------------------------
def test_module_train_eval_propagates_to_children(lib):
    m = Net.build(lib)

    m.eval()
    flags = [x.training for x in m.modules()]
    m.train()

    assert flags == [False] * 6
    assert all(x.training for x in m.modules())


def test_module_zero_grad_sets_grads_to_none_by_default(lib):
    m = Net.build(lib)
    m(lib.ones(2, 3)).sum().backward()

    m.zero_grad()

    assert all(p.grad is None for p in m.parameters())


def test_module_zero_grad_set_to_none_false_zeroes_in_place(lib):
    m = Net.build(lib)
    m(lib.ones(2, 3)).sum().backward()
    g = m.block.fc.weight.grad

    m.zero_grad(set_to_none=False)

    assert m.block.fc.weight.grad is g
    assert float(g.abs().sum()) == 0.0


def test_module_requires_grad_false_freezes_all_parameters(lib):
    m = Net.build(lib)

    m.requires_grad_(False)

    assert not any(p.requires_grad for p in m.parameters())
    assert not m(lib.ones(1, 3)).requires_grad


def test_module_to_double_converts_float_params_keeps_identity(lib):
    m = Net.build(lib)
    w = m.block.fc.weight

    m.to(lib.float64)

    assert m.block.fc.weight is w
    assert w.dtype == lib.float64 and m.block.count.dtype == lib.float64
    assert m(lib.ones(1, 3, dtype=lib.float64)).dtype == lib.float64


def test_module_to_keeps_integer_buffers(lib):
    bn = lib.nn.BatchNorm1d(3)

    bn.double()

    assert bn.num_batches_tracked.dtype == lib.int64
    assert bn.running_mean.dtype == lib.float64


def test_module_apply_visits_children_before_self(lib):
    m = Net.build(lib)
    seen = []

    m.apply(lambda mod: seen.append(type(mod).__name__))

    assert seen == ["Linear", "Block", "ReLU", "Linear", "Sequential", "Top"]


def test_module_deepcopy_has_independent_parameters(lib):
    m = lib.nn.Linear(2, 2)
    c = copy.deepcopy(m)
    with lib.no_grad():
        c.weight.fill_(0.0)

    assert float(m.weight.detach().abs().sum()) > 0
    assert isinstance(c.weight, lib.nn.Parameter)


# ---- state_dict ---------------------------------------------------------------------------
def test_state_dict_values_are_detached(lib):
    m = lib.nn.Linear(2, 2)

    sd = m.state_dict()

    assert not sd["weight"].requires_grad
    assert sd["weight"].data_ptr() == m.weight.data_ptr()
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_load_state_dict_copies_values_in_place(lib):
    a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
    w = b.weight

    res = b.load_state_dict(a.state_dict())

    assert b.weight is w and b.weight.tolist() == a.weight.tolist()
    assert list(res.missing_keys) == [] and list(res.unexpected_keys) == []


def test_load_state_dict_missing_and_unexpected_keys_raise_runtime_error(lib):
    m = lib.nn.Linear(2, 2)
    sd = {"weight": lib.zeros(2, 2), "extra": lib.zeros(1)}

    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)

    msg = str(e.value)
    assert "Error(s) in loading state_dict for Linear" in msg
    assert 'Missing key(s) in state_dict: "bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg


def test_load_state_dict_strict_false_reports_keys(lib):
    m = lib.nn.Linear(2, 2)

    res = m.load_state_dict({"weight": lib.zeros(2, 2), "extra": lib.zeros(1)}, strict=False)

    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    assert float(m.weight.detach().abs().sum()) == 0.0


def test_load_state_dict_size_mismatch_raises_runtime_error(lib):
    m = lib.nn.Linear(2, 2)
    sd = m.state_dict()
    sd["weight"] = lib.zeros(3, 2)

    with pytest.raises(RuntimeError, match="size mismatch for weight: copying a param with "
                                           r"shape torch.Size\(\[3, 2\]\)"):
        m.load_state_dict(sd)


def test_load_state_dict_loads_buffers_and_skips_non_persistent(lib):
    a, b = Net.build(lib), Net.build(lib)
    with lib.no_grad():
        a.block.count.fill_(7.0)
        a.block.cache.fill_(3.0)

    b.load_state_dict(a.state_dict())

    assert b.block.count.item() == 7.0 and b.block.cache.tolist() == [0.0, 0.0]


def test_state_dict_equal_to_torch_for_batchnorm_keys():
    bt, br = torch.nn.BatchNorm2d(3), rustgrad.nn.BatchNorm2d(3)

    assert list(bt.state_dict()) == list(br.state_dict())
    assert br.state_dict()["num_batches_tracked"].dtype == rustgrad.int64


# ---- repr ---------------------------------------------------------------------------------
def test_module_repr_equals_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, groups=2, bias=False),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.25),
            nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8), nn.GELU()]),
            nn.LayerNorm(8), nn.Embedding(10, 3, padding_idx=0), nn.LeakyReLU(0.2),
            nn.Softmax(dim=1), nn.CrossEntropyLoss(), nn.Identity(), nn.Unflatten(1, (2, 4)),
            nn.AvgPool2d(2), nn.ELU(), nn.Softplus(), nn.Hardtanh(), nn.ReLU6(),
            nn.ModuleDict({"a": nn.Tanh()}), nn.Conv1d(2, 3, 3), nn.BatchNorm1d(4),
            nn.GroupNorm(2, 4), nn.GroupNorm(1, 2, bias=False), nn.BatchNorm1d(2, bias=False),
            nn.LayerNorm(3, bias=False), nn.BatchNorm3d(2, affine=False, bias=False),
        )

    assert repr(build(rustgrad)) == repr(build(torch))


def test_module_custom_extra_repr_and_nesting_equal_torch():
    def build(lib):
        class Custom(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Linear(2, 3, bias=False)

            def extra_repr(self):
                return "k=1\nv=2"

        return Custom()

    assert repr(build(rustgrad)) == repr(build(torch))


def test_module_repr_with_blank_lines_in_a_child_equals_torch():
    # torch >= 2.15 does not indent the blank lines of a child's repr
    def build(lib):
        class Spaced(lib.nn.Module):
            def extra_repr(self):
                return "a=1\n\n  \nb=2"

        return lib.nn.Sequential(lib.nn.Sequential(Spaced(), lib.nn.ReLU()))

    assert repr(build(rustgrad)) == repr(build(torch))


def test_parameter_list_and_dict_register_parameters(lib):
    nn = lib.nn
    pl = nn.ParameterList([nn.Parameter(lib.zeros(2)), lib.ones(3)])
    pd = nn.ParameterDict({"a": nn.Parameter(lib.zeros(1))})

    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    assert isinstance(pl[1], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["a"]


def test_state_dict_numpy_roundtrip_between_libraries_gives_same_output():
    torch.manual_seed(0)
    tm = Net.build(torch)
    rm = Net.build(rustgrad)
    rm.load_state_dict({k: rustgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)

    np.testing.assert_allclose(rm(rustgrad.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)
