"""One op of each family on a non-NumPy backend: on the simulated GPU (the strict CuPy double,
whose arrays are not NumPy's) results and gradients stay on the device and equal the CPU's bit
for bit; tensors of two devices in one op raise torch's error."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

pytestmark = pytest.mark.usefixtures("sim_cuda")

PROGRAMS = {
    "erf": lambda lib, a, i: a.erf(),
    "gelu": lambda lib, a, i: lib.nn.functional.gelu(a),
    "lerp": lambda lib, a, i: lib.lerp(a, a * 2, 0.3),
    "fmod": lambda lib, a, i: lib.fmod(a, 0.7),
    "softmax": lambda lib, a, i: a.softmax(1),
    "logsumexp": lambda lib, a, i: a.logsumexp(0),
    "prod_zero": lambda lib, a, i: (a * (a > 0)).prod(1),
    "cumprod_zero": lambda lib, a, i: (a * (a > 0)).cumprod(1),
    "norm": lambda lib, a, i: a.norm(3, 1),
    "std": lambda lib, a, i: a.std(0),
    "amax": lambda lib, a, i: a.amax(1),
    "sort": lambda lib, a, i: a.sort(1, True).values,
    "topk": lambda lib, a, i: a.topk(2).values,
    "index_select": lambda lib, a, i: a.index_select(1, i[0]),
    "gather": lambda lib, a, i: a.gather(1, i),
    "scatter_add": lambda lib, a, i: a.scatter_add(1, i, a[:, :2]),
    "masked_fill": lambda lib, a, i: a.masked_fill(a > 0, 0.5),
    "masked_select": lambda lib, a, i: a.masked_select(a > 0),
    "narrow": lambda lib, a, i: a.narrow(1, 1, 2),
    "diagonal": lambda lib, a, i: a.diagonal(1),
    "unfold": lambda lib, a, i: a.unfold(1, 2, 1),
    "roll": lambda lib, a, i: a.roll(1, 1),
    "repeat_interleave": lambda lib, a, i: a.repeat_interleave(2, 0),
    "pad": lambda lib, a, i: lib.nn.functional.pad(a, (1, 2)),
    "einsum": lambda lib, a, i: lib.einsum("ij,kj->ik", a, a),
    "mm": lambda lib, a, i: a.mm(a.t()),
    "kron": lambda lib, a, i: lib.kron(a, a[:1]),
    "diag_embed": lambda lib, a, i: lib.diag_embed(a),
}


@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_op_on_simulated_gpu_stays_there_and_matches_cpu(op):
    fn = PROGRAMS[op]
    x = np.array([[0.3, -1.2, 2.0, 0.7], [1.1, -0.4, 0.9, -2.3], [0.55, 1.6, -0.8, 1.25]])
    idx = np.array([[0, 3], [2, 2], [1, 0]])
    results = {}
    for dev in ("cpu", "cuda"):
        a = rustgrad.tensor(x, device=dev, requires_grad=True)
        i = rustgrad.tensor(idx, device=dev)
        out = fn(rustgrad, a, i)
        assert out.device.type == dev
        out.backward(rustgrad.ones_like(out))
        assert a.grad.device.type == dev
        results[dev] = (out.detach().cpu().numpy(), a.grad.cpu().numpy())
    np.testing.assert_allclose(results["cuda"][0], results["cpu"][0], rtol=1e-12)
    np.testing.assert_allclose(results["cuda"][1], results["cpu"][1], rtol=1e-12)


MIXED = {
    "index_select": lambda a, c: a.index_select(0, c.long()[:1]),
    "gather": lambda a, c: a.gather(0, c.long()),
    "scatter": lambda a, c: a.scatter(0, c.long(), 1.0),
    "masked_fill": lambda a, c: a.masked_fill(c > 0, 1.0),
    "masked_select": lambda a, c: a.masked_select(c > 0),
    "take_along_dim": lambda a, c: rustgrad.take_along_dim(a, c.long(), 0),
    "lerp": lambda a, c: rustgrad.lerp(a, c, 0.5),
    "logical_and": lambda a, c: rustgrad.logical_and(a, c),
    "mm": lambda a, c: a.mm(c),
    "dot": lambda a, c: a[0].dot(c[0]),
    "einsum": lambda a, c: rustgrad.einsum("ij,jk->ik", a, c),
}


@pytest.mark.parametrize("op", sorted(MIXED))
def test_op_mixing_devices_raises_same_device_error(op):
    a = rustgrad.zeros(2, 2, device="cuda")
    c = rustgrad.zeros(2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        MIXED[op](a, c)
