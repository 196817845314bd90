"""nn.SyncBatchNorm against torch: without a process group (and in evaluation) it is a local
BatchNorm of any input dimension; with one on the CPU it raises torch's error; on a world of one
it is a local BatchNorm; across ranks (tests/nn/sync_batchnorm_worker.py under `mpiexec -n 2`,
on the strict CuPy double's GPUs) its outputs, gradients and running statistics are those of
torch's BatchNorm over the global batch. Also convert_sync_batchnorm, repr, state_dict and
errors, and the collective Function's math on a world of one."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any, Dict, Iterator, List

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import same_error

HERE = pathlib.Path(__file__).resolve().parent


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


SHAPES = {"2d": (6, 3), "3d": (4, 3, 5), "4d": (2, 3, 3, 4), "5d": (2, 3, 2, 2, 3)}
OPTIONS: Dict[str, Dict[str, Any]] = {
    "default": {},
    "momentum_none": {"momentum": None},
    "no_affine": {"affine": False},
    "no_stats": {"track_running_stats": False},
    "no_bias": {"bias": False},
}


@pytest.mark.parametrize("opts", sorted(OPTIONS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_without_a_process_group_it_is_torchs_local_batchnorm(shape, opts, device):
    kw = OPTIONS[opts]
    t = torch.nn.SyncBatchNorm(3, **kw).double()
    r = rustgrad.nn.SyncBatchNorm(3, **kw).to(device).double()
    assert repr(r) == repr(t)
    assert list(r.state_dict()) == list(t.state_dict())
    rng = np.random.default_rng(0)
    if t.affine:
        w, b = rng.normal(size=3), rng.normal(size=3)
        with torch.no_grad():
            t.weight.copy_(torch.tensor(w))
            if t.bias is not None:
                t.bias.copy_(torch.tensor(b))
        r.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                           for k, v in t.state_dict().items()})
    for mode in ("train", "train", "eval"):
        t.train(mode == "train")
        r.train(mode == "train")
        x = rng.normal(size=SHAPES[shape]) * 2 + 1
        g = rng.normal(size=x.shape)
        tx = torch.tensor(x, requires_grad=True)
        rx = rustgrad.tensor(x, device=device, requires_grad=True)
        tout, rout = t(tx), r(rx)
        np.testing.assert_allclose(_np(rout), _np(tout), rtol=1e-9, atol=1e-11)
        tout.backward(torch.tensor(g))
        rout.backward(rustgrad.tensor(g, device=device))
        np.testing.assert_allclose(_np(rx.grad), _np(tx.grad), rtol=1e-9, atol=1e-11)
        for (name, tp), (_, rp) in zip(t.named_parameters(), r.named_parameters()):
            np.testing.assert_allclose(_np(rp.grad), _np(tp.grad), rtol=1e-9, atol=1e-11,
                                       err_msg=name)
        for (name, tb), (_, rb) in zip(t.named_buffers(), r.named_buffers()):
            np.testing.assert_allclose(_np(rb), _np(tb), rtol=1e-9, atol=1e-11, err_msg=name)


@pytest.mark.parametrize("call, phrase", [
    (lambda L: L.nn.SyncBatchNorm(3)(L.ones(3)), "expected at least 2D input (got 1D input)"),
    (lambda L: L.nn.SyncBatchNorm(3)(L.ones(2, 0, 4)),
     "SyncBatchNorm number of input channels should be non-zero"),
    (lambda L: L.nn.SyncBatchNorm(3)(L.ones(1, 3)),
     "Expected more than 1 value per channel when training"),
    (lambda L: L.nn.SyncBatchNorm(3)(L.ones(4, 2)), "running_mean should contain 2 elements "
     "not 3"),
])
def test_errors_as_torch(call, phrase):
    same_error(call, phrase)


def test_convert_sync_batchnorm_as_torch():
    def run(L: Any) -> List[Any]:
        inner = L.nn.Sequential(L.nn.BatchNorm1d(2, momentum=None, eps=1e-3).eval())
        net = L.nn.Sequential(L.nn.Conv2d(1, 4, 3), L.nn.BatchNorm2d(4, affine=False),
                              inner, L.nn.InstanceNorm1d(3, affine=True),
                              L.nn.BatchNorm3d(5, bias=False, track_running_stats=False))
        held = [net[1].running_mean, inner[0].weight, inner[0].num_batches_tracked]
        out = L.nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group="pg")
        seen: List[Any] = [repr(out), out is net, out[2][0].training, out[1].training,
                           out[1].process_group, out[2][0].process_group,
                           out[1].running_mean is held[0], out[2][0].weight is held[1],
                           out[2][0].num_batches_tracked is held[2], out[4].weight is not None,
                           out[4].bias is None, list(out.state_dict())]
        bn = L.nn.BatchNorm1d(3)
        alone = L.nn.SyncBatchNorm.convert_sync_batchnorm(bn)
        seen += [type(alone).__name__, alone is bn, alone.weight is bn.weight,
                 alone.process_group]
        return seen

    assert run(rustgrad) == run(torch)


@pytest.fixture
def world_of_one(tmp_path: pathlib.Path) -> Iterator[None]:
    """torch's and rustgrad's default process groups, each a world of one."""
    pytest.importorskip("mpi4py")
    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}",
                                         rank=0, world_size=1)
    rustgrad.distributed.init_process_group("gloo")
    try:
        yield
    finally:
        torch.distributed.destroy_process_group()
        rustgrad.distributed.destroy_process_group()


def test_on_a_process_group_cpu_input_is_refused_as_torch(world_of_one):
    def run(L: Any) -> List[Any]:
        bn = L.nn.SyncBatchNorm(3)
        seen: List[Any] = []
        try:
            bn(L.ones(4, 3))
        except ValueError as e:
            seen.append(str(e))
        seen.append(int(bn.num_batches_tracked))  # counted before the refusal, as torch
        bn.eval()  # evaluation needs no synchronization: allowed on the CPU
        seen.append(_np(bn(L.ones(4, 3) * 2)).tolist())
        free = L.nn.SyncBatchNorm(3, track_running_stats=False).eval()
        try:  # batch statistics in evaluation are not synchronized either
            seen.append(_np(free(L.arange(12.0).view(4, 3))).round(4).tolist())
        except ValueError as e:
            seen.append(str(e))
        return seen

    ours = run(rustgrad)
    assert ours == run(torch)
    assert ours[0] == "SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone"


def test_on_a_world_of_one_gpu_input_is_a_local_batchnorm(world_of_one, sim_cuda):
    rng = np.random.default_rng(4)
    x, g = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3, 4))
    t = torch.nn.BatchNorm1d(3).double()
    r = rustgrad.nn.SyncBatchNorm(3).to("cuda").double()
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, device="cuda", requires_grad=True)
    tout, rout = t(tx), r(rx)
    assert rout.grad_fn.name() == tout.grad_fn.name()  # no collective: the local op
    tout.backward(torch.tensor(g))
    rout.backward(rustgrad.tensor(g, device="cuda"))
    np.testing.assert_allclose(_np(rout), _np(tout), rtol=1e-9)
    np.testing.assert_allclose(_np(rx.grad), _np(tx.grad), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(r.running_var), _np(t.running_var), rtol=1e-9)


@pytest.mark.parametrize("shape", [(6, 3), (3, 3, 4), (2, 3, 2, 3)], ids=str)
def test_the_collective_function_on_a_world_of_one_matches_batchnorm(world_of_one, shape,
                                                                       device):
    from rustgrad.nn.modules._functions import SyncBatchNorm as SyncFunction

    rng = np.random.default_rng(5)
    x, g = rng.normal(size=shape) * 3 - 1, rng.normal(size=shape)
    w, b = rng.normal(size=3), rng.normal(size=3)
    t = torch.nn.BatchNorm1d(3, momentum=0.3).double() if len(shape) < 4 else \
        torch.nn.BatchNorm2d(3, momentum=0.3).double()
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    tx = torch.tensor(x, requires_grad=True)
    tout = t(tx)
    tout.backward(torch.tensor(g))

    def dev(a: Any, grad: bool = False) -> Any:
        return rustgrad.tensor(a, device=device, requires_grad=grad)

    rx, rw, rb = dev(x, True), dev(w, True), dev(b, True)
    rm, rv = dev(np.zeros(3)), dev(np.ones(3))
    out = SyncFunction.apply(rx, rw, rb, rm, rv, 1e-5, 0.3,
                             rustgrad.distributed.group.WORLD, 1)
    assert out.grad_fn.name() == "SyncBatchNormBackward"
    out.backward(dev(g))
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(rx.grad), _np(tx.grad), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(rw.grad), _np(t.weight.grad), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(rb.grad), _np(t.bias.grad), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(rm), _np(t.running_mean), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(rv), _np(t.running_var), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        SyncFunction.apply(dev(np.ones((1, 3))), rw, rb, None, None, 1e-5, 0.1,
                           rustgrad.distributed.group.WORLD, 1)


def _two_ranks(device: str) -> Dict[str, str]:
    from rustgrad.distributed.run import find_mpiexec

    pytest.importorskip("mpi4py")
    proc = subprocess.run([find_mpiexec(), "-n", "2", sys.executable,
                           str(HERE / "sync_batchnorm_worker.py"), device],
                          capture_output=True, text=True, timeout=120, cwd=HERE.parents[1])
    lines = {}
    for line in proc.stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        if verdict in ("PASS", "FAIL"):
            lines[rest.split(":")[0]] = line
    assert proc.returncode == 0 and lines and all(v.startswith("PASS") for v in lines.values()), \
        proc.stdout[-4000:] + proc.stderr[-4000:]
    return lines


def test_two_ranks_match_one_batchnorm_over_the_global_batch():
    lines = _two_ranks("cuda-sim")
    assert set(lines) >= {"equal_batches_2d_input", "uneven_batches_4d_input",
                          "cumulative_average_without_affine", "a_rank_with_an_empty_batch",
                          "one_sample_per_rank_is_enough_across_ranks",
                          "cpu_input_refused_as_torch",
                          "converted_model_trains_as_the_global_batch"}


@pytest.mark.cuda
def test_two_ranks_on_real_gpus():
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    _two_ranks("cuda")
