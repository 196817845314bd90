"""nn.DataParallel against torch's on a machine without an accelerator (a pass-through wrapper):
`.module`, `device_ids`, repr, state_dict keys with the `module.` prefix, loading torch's
state_dict, outputs and every gradient with torch's weights; on a GPU, torch's single-device
path (module moved to cuda:0, inputs moved there)."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, copy_state
from ..parity import same_error

RTOL, ATOL = 1e-10, 1e-12
no_gpu = pytest.mark.skipif(rustgrad.cuda.is_available() or torch.cuda.is_available(),
                            reason="torch's pass-through path is the one without accelerators")


def _net(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.BatchNorm1d(6), nn.Linear(6, 2)).double()


@no_gpu
def test_wrapper_attributes_repr_and_state_dict_keys_equal_torch():
    t = torch.nn.DataParallel(_net(torch), device_ids=[0, 1], output_device=1, dim=1)
    r = rustgrad.nn.DataParallel(_net(rustgrad), device_ids=[0, 1], output_device=1, dim=1)

    assert r.device_ids == t.device_ids == []
    assert repr(r) == repr(t)
    assert list(r.state_dict()) == list(t.state_dict())
    assert all(k.startswith("module.") for k in r.state_dict())
    assert [n for n, _ in r.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert isinstance(r.module, rustgrad.nn.Sequential) and r.module is r._modules["module"]
    assert rustgrad.nn.parallel.DataParallel is rustgrad.nn.DataParallel


@no_gpu
@pytest.mark.parametrize("train", [True, False])
def test_forward_and_grads_match_torch_with_its_state_dict(train):
    torch.manual_seed(0)
    t = torch.nn.DataParallel(_net(torch))
    r = rustgrad.nn.DataParallel(_net(rustgrad))
    copy_state(t, r, rustgrad)   # torch's `module.*` keys load as they are
    t.train(train)
    r.train(train)
    x = np.random.default_rng(1).standard_normal((5, 4))
    up = np.random.default_rng(2).standard_normal((5, 2))

    outs = []
    for L, m in ((torch, t), (rustgrad, r)):
        xi = L.tensor(x, requires_grad=True)
        out = m(xi)
        (out * L.tensor(up)).sum().backward()
        outs.append([out, xi.grad, *(p.grad for p in m.parameters()),
                     *m.state_dict().values()])

    for i, (rv, tv) in enumerate(zip(outs[1], outs[0])):
        assert_close(rv, tv, RTOL, ATOL, f"item {i}")


@no_gpu
def test_keyword_arguments_and_hooks_pass_through():
    class Scale(rustgrad.nn.Module):
        def forward(self, x, *, factor=1.0):
            return x * factor

    seen = []
    r = rustgrad.nn.DataParallel(Scale())
    r.register_forward_hook(lambda m, args, out: seen.append(type(m).__name__))

    out = r(rustgrad.ones(2), factor=3.0)

    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0])
    assert seen == ["DataParallel"]


@no_gpu
def test_wrapped_state_dict_loads_into_a_plain_module_after_stripping_prefix():
    torch.manual_seed(0)
    t = torch.nn.DataParallel(_net(torch))
    plain = _net(rustgrad)

    state = {k[len("module."):]: rustgrad.tensor(v.detach().numpy())
             for k, v in t.state_dict().items()}
    plain.load_state_dict(state)

    assert_close(plain[0].weight, t.module[0].weight, 0, 0, "weight")


@no_gpu
def test_functional_data_parallel_needs_a_device_as_torch():
    same_error(lambda L: L.nn.parallel.data_parallel(_net(L), L.zeros(2, 4)),
               "device type could not be determined")


@pytest.mark.cuda
def test_on_a_gpu_runs_torchs_single_device_path():
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    rustgrad.manual_seed(0)
    cpu = _net(rustgrad)
    wrapped = rustgrad.nn.DataParallel(_net(rustgrad), device_ids=[0])
    wrapped.module.load_state_dict(cpu.state_dict())
    x = rustgrad.randn(5, 4, dtype=rustgrad.float64)

    out = wrapped(x)
    out.sum().backward()

    assert wrapped.device_ids == [0] and wrapped.output_device == 0
    assert str(out.device) == "cuda:0"
    assert all(str(p.grad.device) == "cuda:0" for p in wrapped.parameters())
    assert_close(out.cpu(), cpu(x), 1e-9, 1e-9, "output")
    wrapped.module.to("cpu")
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers on "
                                           "device cuda:0"):
        wrapped(x)
