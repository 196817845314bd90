"""CUDA graphs (rustgrad.cuda.CUDAGraph, graph, make_graphed_callables) as torch's: on
"cuda-sim" (the strict CuPy double models stream capture: captured work is recorded, not run,
and a replay is one launch) and on a real GPU where CuPy sees one."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad as torch

from . import strict_cupy


@pytest.fixture(params=["cuda-sim", pytest.param("cuda", marks=pytest.mark.cuda)])
def gpu(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """"cuda-sim" or a real "cuda" (skipped where CuPy sees no GPU); the device is "cuda"."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    if request.param == "cuda-sim":
        strict_cupy.install(monkeypatch)
    return request.param


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_replay_recomputes_from_the_static_inputs_in_one_launch(gpu):
    x = torch.zeros(4, device="cuda")
    w = torch.full((4,), 3.0, device="cuda")
    g = torch.cuda.CUDAGraph()
    assert not torch.cuda.is_current_stream_capturing()
    with torch.cuda.graph(g):
        assert torch.cuda.is_current_stream_capturing()
        y = (x * w + 1).exp().log()
        x.add_(1)  # captured: not run until a replay
    assert not torch.cuda.is_current_stream_capturing()
    assert _np(x).tolist() == [0.0] * 4  # the capture ran nothing
    if gpu == "cuda-sim":
        assert np.isnan(_np(y)).all()  # outputs hold nothing valid before a replay
    x.copy_(torch.arange(4.0, device="cuda"))
    strict_cupy.KERNELS.clear()
    g.replay()
    np.testing.assert_allclose(_np(y), np.arange(4.0) * 3 + 1, rtol=1e-6)
    assert _np(x).tolist() == [1.0, 2.0, 3.0, 4.0]
    if gpu == "cuda-sim":
        assert dict(strict_cupy.KERNELS) == {"graph_launch": 1}
    g.replay()  # again, from the new contents of x
    np.testing.assert_allclose(_np(y), np.arange(1.0, 5.0) * 3 + 1, rtol=1e-6)
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_capture_on_the_default_stream_raises_as_torch(gpu):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(torch.cuda.default_stream()):
        with pytest.raises(RuntimeError, match="CUDA graphs must be captured on a non-default "
                                               "stream"):
            g.capture_begin()
    assert not torch.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        with torch.cuda.graph(g, capture_error_mode="loose"):
            pass


def test_a_host_read_inside_a_capture_raises_and_the_next_capture_works(gpu):
    x = torch.ones(3, device="cuda")
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
        with torch.cuda.graph(g):
            (x * 2).sum().item()
    assert not torch.cuda.is_current_stream_capturing()
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
    g.replay()
    assert _np(y).tolist() == [2.0] * 3


def test_graphs_sharing_a_pool_and_debug_dump(gpu, tmp_path):
    pool = torch.cuda.graph_pool_handle()
    assert isinstance(pool, tuple) and len(pool) == 2
    x = torch.arange(3.0, device="cuda")
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, pool=pool):
        y = x + 1
    with torch.cuda.graph(g2, pool=g1.pool()):
        z = y * 10
    assert g1.pool() == g2.pool() == pool
    g1.replay()
    g2.replay()
    assert _np(z).tolist() == [10.0, 20.0, 30.0]
    g2.debug_dump(str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").read_text().startswith("digraph")


def _mlp(device: str, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    nn = torch.nn
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)).to(device)


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, capturable=True),
    "adamw-amsgrad": lambda ps: torch.optim.AdamW(ps, lr=1e-2, amsgrad=True, capturable=True),
}


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_a_whole_training_step_captured_once_matches_eager_steps(gpu, opt_name):
    """torch's whole-network capture: warm up on a side stream, capture forward, backward and
    optimizer.step once, then copy each batch into the static input and replay."""
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5))
               for _ in range(5)]
    warmup = 2
    F = torch.nn.functional

    def eager(device: str) -> list:
        model = _mlp(device)
        opt = OPTIMIZERS[opt_name](model.parameters())
        for i in [0] * warmup + list(range(len(batches))):
            x = torch.tensor(batches[i][0], device=device)
            y = torch.tensor(batches[i][1], device=device)
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return [_np(p) for p in model.parameters()]

    model = _mlp("cuda")
    opt = OPTIMIZERS[opt_name](model.parameters())
    static_x = torch.tensor(batches[0][0], device="cuda")
    static_y = torch.tensor(batches[0][1], device="cuda")

    def step() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)
    before = [_np(p) for p in model.parameters()]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = step()
    for a, b in zip(before, (_np(p) for p in model.parameters())):
        np.testing.assert_array_equal(a, b)  # the capture itself stepped nothing
    for xb, yb in batches:
        static_x.copy_(torch.tensor(xb, device="cuda"))
        static_y.copy_(torch.tensor(yb, device="cuda"))
        strict_cupy.KERNELS.clear()
        g.replay()
        if gpu == "cuda-sim":
            assert dict(strict_cupy.KERNELS) == {"graph_launch": 1}
    assert np.isfinite(_np(static_loss)).all()
    graphed = [_np(p) for p in model.parameters()]
    for a, b in zip(graphed, eager("cuda")):  # eager on the same device: the same formulas
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(graphed, eager("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_adam_without_capturable_refuses_capture_as_torch(gpu):
    model = _mlp("cuda")
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 6, device="cuda")).sum().backward()
    opt.step()  # eager: fine
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="Attempting CUDA graph capture of step\\(\\) for an "
                                           "instance of Adam but param_groups' capturable is "
                                           "False"):
        with torch.cuda.graph(g):
            opt.step()


def test_make_graphed_callables_matches_the_eager_module_and_function(gpu):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3)]
    eager_model, model = _mlp("cuda"), _mlp("cuda")

    def scale_shift(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b.sigmoid() + b).tanh()

    sample = torch.zeros(4, 6, device="cuda", requires_grad=True)
    graphed_model = torch.cuda.make_graphed_callables(model, (sample,))
    assert graphed_model is model
    fa, fb = (torch.zeros(4, 3, device="cuda", requires_grad=True) for _ in range(2))
    graphed_fn = torch.cuda.make_graphed_callables(scale_shift, (fa, fb))
    for p in model.parameters():
        p.grad = None
    b_np = rng.standard_normal((4, 3)).astype(np.float32)
    for x_np in xs:
        outs = []
        for m, f in ((eager_model, scale_shift), (model, graphed_fn)):
            x = torch.tensor(x_np, device="cuda", requires_grad=True)
            b = torch.tensor(b_np, device="cuda", requires_grad=True)
            strict_cupy.KERNELS.clear()
            out = f(m(x), b)
            out.pow(2).sum().backward()  # gradients accumulate over the loop's iterations
            outs.append((out, x.grad, b.grad))
        for a, c in zip(*outs):
            np.testing.assert_allclose(_np(c), _np(a), rtol=1e-5, atol=1e-6)
    for p, q in zip(eager_model.parameters(), model.parameters()):
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-5, atol=1e-6)
    model.eval()  # another training mode than graphed: the original forward runs
    x = torch.tensor(xs[0], device="cuda")
    np.testing.assert_allclose(_np(model(x)), _np(eager_model(x)), rtol=1e-6)


def test_make_graphed_callables_checks_its_arguments(gpu):
    model = _mlp("cuda")
    model.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="Modules must not have hooks registered"):
        torch.cuda.make_graphed_callables(model, (torch.zeros(2, 6, device="cuda"),))
    with pytest.raises(AssertionError, match="sample_args for each callable must contain only "
                                             "Tensors"):
        torch.cuda.make_graphed_callables(lambda a, k: a * k, (torch.zeros(2, device="cuda"), 2))
