"""Graph memory: saved_tensors / memory_report bytes against the saved arrays themselves and
against torch's own saved tensors, per-module attribution through nn.Module's scope, and
live_graphs naming what keeps a graph alive (the `total_loss += loss` bug)."""

from __future__ import annotations

import copy
import pickle
import sys
import types
from pathlib import Path
from typing import Any, Dict, Iterator, List

import numpy as np
import pytest
import rustgrad
import torch
from rustgrad import nn
from rustgrad.autograd._memory_report import (
    LiveGraph,
    format_bytes,
    live_graphs,
    memory_report,
    saved_tensors,
)


def _torch_nodes(root: torch.Tensor) -> Iterator[Any]:
    stack, seen = [root.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        yield n
        stack.extend(m for m, _ in n.next_functions)


def _torch_saved_bytes(root: torch.Tensor) -> int:
    """Bytes of the distinct storages torch's graph saved (its `_saved_*` tensors)."""
    storages: Dict[int, int] = {}
    for node in _torch_nodes(root):
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            value = getattr(node, attr)
            for t in value if isinstance(value, (tuple, list)) else [value]:
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    storages[st.data_ptr()] = st.nbytes()
    return sum(storages.values())


def _program(lib: Any, arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """A graph with shared saves: exp's result is also sin's input, x is saved twice by mul,
    a view of the exp result is saved by cos; float32 and float64 storages."""
    x = lib.tensor(arrays["x"], requires_grad=True)
    w = lib.tensor(arrays["w"], requires_grad=True)
    z = lib.tensor(arrays["z"], requires_grad=True)
    h = x @ w
    a = h.exp()
    b = a.sin()
    v = a[1:]
    c = v.cos()
    s = h.sigmoid()
    tz = z.tanh()
    loss = b.sum() + c.sum() + s.sum() + (x * x).sum() + tz.sum()
    return dict(x=x, w=w, z=z, a=a, s=s, tz=tz, loss=loss)


def _arrays() -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return dict(x=rng.standard_normal((5, 3)).astype(np.float32),
                w=rng.standard_normal((3, 4)).astype(np.float32),
                z=rng.standard_normal(7))


def test_total_bytes_is_the_sum_of_distinct_saved_arrays() -> None:
    arrays = _arrays()
    g = _program(rustgrad, arrays)
    report = memory_report(g["loss"])
    # saved: x, w (mm), a (exp result, sin input, base of cos's view), s (sigmoid result),
    # x twice (mul), tz (tanh result): five storages
    expected = sum(g[k].detach().numpy().nbytes for k in ("x", "w", "a", "s", "tz"))
    assert expected == 5 * 3 * 4 + 3 * 4 * 4 + 5 * 4 * 4 + 5 * 4 * 4 + 7 * 8
    assert report.total_bytes == expected
    assert report.storages == 5
    assert sum(report.by_node.values()) == expected
    assert report.by_device == {"cpu": expected}
    # more saved tensors than storages: sharing was found, not summed twice
    assert len(report.entries) > report.storages
    assert sum(e.nbytes for e in report.entries) > expected


def test_total_bytes_match_torch_saved_storages() -> None:
    arrays = _arrays()
    ours = memory_report(_program(rustgrad, arrays)["loss"]).total_bytes
    assert ours == _torch_saved_bytes(_program(torch, arrays)["loss"])


def test_saved_tensor_records_name_torch_attributes() -> None:
    arrays = _arrays()
    g = _program(rustgrad, arrays)
    tg = _program(torch, arrays)
    torch_nodes = {}
    for n in _torch_nodes(tg["loss"]):
        torch_nodes.setdefault(n.name(), n)
    entries = saved_tensors(g["loss"])
    names = {(e.node_name, e.name) for e in entries}
    assert names >= {("ExpBackward0", "result"), ("MulBackward0", "self"),
                     ("MulBackward0", "other"), ("TanhBackward0", "result"),
                     ("SigmoidBackward0", "result")}
    for e in entries:
        theirs_node = torch_nodes[e.node_name]
        assert e.node.name() == e.node_name
        assert str(e.device) == "cpu"
        if e.name.startswith("saved["):
            continue  # the op declares no saved-attribute names: found by index only
        # the same attribute on torch's node holds the same values
        theirs = getattr(theirs_node, "_saved_" + e.name)
        np.testing.assert_allclose(e.tensor.detach().numpy(), theirs.detach().numpy(),
                                   rtol=1e-6)
        assert e.shape == tuple(theirs.shape)
        assert e.dtype.itemsize == theirs.dtype.itemsize
    exp = next(e for e in entries if e.node_name == "ExpBackward0")
    sin = next(e for e in entries if e.node_name == "SinBackward0")
    cos = next(e for e in entries if e.node_name == "CosBackward0")
    assert exp.storage == sin.storage == cos.storage
    assert exp.nbytes == cos.nbytes == g["a"].detach().numpy().nbytes


def test_a_view_and_its_base_count_once(device: str) -> None:
    x = rustgrad.randn(6, 4, device=device, requires_grad=True)
    v = x[2:]
    loss = v.sin().sum() + x.cos().sum() + (x * x).sum()
    report = memory_report(loss)
    assert report.total_bytes == x.detach().cpu().numpy().nbytes == 6 * 4 * 4
    assert report.storages == 1
    assert len(report.entries) == 4
    assert report.by_device == {str(x.device): 6 * 4 * 4}
    view_entry = next(e for e in report.entries if e.node_name == "SinBackward0")
    assert view_entry.shape == (4, 4)
    assert view_entry.nbytes == 6 * 4 * 4  # the storage, not the view


def test_roots_may_be_several_and_share_a_graph() -> None:
    x = rustgrad.randn(10, requires_grad=True)
    a = x.exp()
    y1, y2 = a.sin().sum(), a.cos().sum()
    both = memory_report(y1, y2)
    assert both.total_bytes == memory_report(y1).total_bytes == 10 * 4
    assert both.nodes == 6  # exp, sin, cos, two sums, one AccumulateGrad
    assert memory_report(x).total_bytes == 0  # a leaf holds no graph
    assert memory_report(y1.grad_fn).total_bytes == 10 * 4


def test_backward_releases_and_retain_graph_keeps() -> None:
    x = rustgrad.randn(8, 3, requires_grad=True)
    loss = (x.exp() * x).sum()
    before = memory_report(loss).total_bytes
    assert before == 2 * x.detach().numpy().nbytes  # x and exp's result
    loss.backward(retain_graph=True)
    assert memory_report(loss).total_bytes == before
    loss.backward()
    report = memory_report(loss)
    assert report.total_bytes == 0
    assert report.entries == [] and saved_tensors(loss) == []
    assert report.nodes == 4  # the nodes themselves live on


def test_per_module_bytes_with_qualified_names() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x = rustgrad.randn(32, 4)
    loss = model(x).pow(2).mean()
    report = memory_report(loss, model=model)
    f32 = 4
    relu_out = 32 * 8 * f32  # saved by ReLU (result) and by layer 2 (its input): counted once
    assert report.by_module == {
        # the input only: as torch's, addmm saves the weight only when the input needs a grad
        "0": x.numpy().nbytes,
        "1": relu_out,
        "2": model[2].weight.detach().numpy().nbytes,
        "(no module)": 32 * 1 * f32,  # pow's input, the model's output
    }
    assert sum(report.by_module.values()) == report.total_bytes
    assert report.module_classes["0"] == "Linear" and report.module_classes["1"] == "ReLU"
    relu = next(e for e in report.entries if e.node_name == "ReluBackward0")
    layer2 = [e for e in report.entries if e.node_name == "AddmmBackward0"
              and e.scope == model[2].__dict__["_rg_scope"]]
    assert relu.storage in {e.storage for e in layer2}
    # without the model: class names
    assert set(memory_report(loss).by_module) == {"Linear", "ReLU", "(no module)"}
    text = str(report)
    assert "0 (Linear)" in text and "2 (Linear)" in text and "KiB" in text


def test_nested_modules_take_the_innermost_scope_and_errors_pop_it() -> None:
    class Boom(nn.Module):
        def forward(self, x: Any) -> Any:
            x.exp()
            raise ValueError("boom")

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(3, 3), nn.Tanh())

        def forward(self, x: Any) -> Any:
            return self.body(x).exp()  # exp runs in Net itself

    net = Net()
    x = rustgrad.randn(2, 3)
    with pytest.raises(ValueError):
        Boom()(x.requires_grad_())
    out = net(x)
    after = out.cos().exp()  # outside any module again
    report = memory_report(after, model=net)
    assert set(report.by_module) == {"Net", "body.0", "body.1", "(no module)"}
    assert after.grad_fn._scope is None
    assert out.grad_fn._scope == (id(net), "Net")
    assert out.grad_fn.next_functions[0][0]._scope == (id(net.body[1]), "Tanh")


def test_module_scope_survives_deepcopy_and_pickle() -> None:
    m = nn.Linear(3, 2)
    x = rustgrad.randn(4, 3)
    m(x)
    assert m.__dict__["_rg_scope"] == (id(m), "Linear")
    assert "_rg_scope" not in m.state_dict() and "_rg_scope" not in repr(m)
    assert all("_rg_scope" not in name for name, _ in m.named_parameters())
    c = copy.deepcopy(m)
    out = c(x)
    assert out.grad_fn._scope == (id(c), "Linear") != m.__dict__["_rg_scope"]
    p = pickle.loads(pickle.dumps(m))
    out = p(x)
    assert out.grad_fn._scope == (id(p), "Linear")
    np.testing.assert_allclose(out.detach().numpy(), m(x).detach().numpy())


def test_saved_tensor_hooks_and_custom_functions() -> None:
    class Square(rustgrad.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any, b: Any) -> Any:
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            a, b = ctx.saved_tensors
            return g * b, g * a

    x = rustgrad.randn(5, requires_grad=True)
    y = rustgrad.randn(5, dtype=rustgrad.float64, requires_grad=True)
    out = Square.apply(x, y)
    entries = saved_tensors(out)
    assert [e.name for e in entries] == ["saved[0]", "saved[1]"]
    assert memory_report(out).total_bytes == 5 * 4 + 5 * 8
    with rustgrad.autograd.graph.save_on_cpu():
        z = x.exp().sum()
    assert memory_report(z).total_bytes == 5 * 4


def test_sites_and_no_version_check() -> None:
    prev = rustgrad._core.set_provenance(True)
    try:
        x = rustgrad.randn(4, requires_grad=True)
        h = x.clone()
        y = h * h; line = sys._getframe().f_lineno  # noqa: E702
    finally:
        rustgrad._core.set_provenance(prev)
    h.add_(1)  # the saved h is now stale: backward would refuse, the report still reads it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward(retain_graph=True)
    entries = [e for e in saved_tensors(y) if e.node_name == "MulBackward0"]
    assert len(entries) == 2
    assert {e.site for e in entries} == {(__file__, line, "test_sites_and_no_version_check")}
    assert memory_report(y).total_bytes == 4 * 4
    assert "test_memory_report.py:" in str(memory_report(y))


def test_a_deep_graph_is_walked_without_recursion() -> None:
    x = rustgrad.randn(3, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    y = (y * y).sum()
    report = memory_report(y)
    assert report.nodes == 20_000 + 3
    assert report.total_bytes == 3 * 4


def test_format_bytes() -> None:
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12.3 * 2**20) == "12.3 MiB"
    assert format_bytes(3 * 2**30) == "3.0 GiB"


# ---- live_graphs -----------------------------------------------------------------------------

_TRAIN = """\
import rustgrad
from rustgrad import nn

rustgrad.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
total_loss = 0
for step in range(STEPS):
    loss = model(rustgrad.randn(8, 3)).pow(2).mean()
    loss.backward()
    total_loss += ACCUMULATE
"""


def _torch_train_nodes(steps: int) -> int:
    src = _TRAIN.replace("rustgrad", "torch").replace("STEPS", str(steps))
    scope: Dict[str, Any] = {}
    exec(compile(src.replace("ACCUMULATE", "loss"), "<torch>", "exec"), scope)
    return sum(1 for _ in _torch_nodes(scope["total_loss"]))


def _run_train(tmp_path: Path, accumulate: str, steps: int) -> types.ModuleType:
    """Run _TRAIN as module `train` from train.py, as a user's script would."""
    path = tmp_path / "train.py"
    src = _TRAIN.replace("STEPS", str(steps)).replace("ACCUMULATE", accumulate)
    path.write_text(src)
    mod = types.ModuleType("train")
    mod.__file__ = str(path)
    sys.modules["train"] = mod
    exec(compile(src, str(path), "exec"), mod.__dict__)
    return mod


@pytest.fixture
def train_module() -> Iterator[None]:
    yield
    sys.modules.pop("train", None)


def _ours(graphs: List[LiveGraph], where: str) -> List[LiveGraph]:
    return [g for g in graphs if any(where in h for h in g.holders)]


def test_accumulating_the_loss_tensor_is_diagnosed(tmp_path: Path, train_module: None) -> None:
    mod = _run_train(tmp_path, "loss", steps=6)
    found = _ours(live_graphs(), "global in train.py")
    assert len(found) == 1
    g = found[0]
    assert g.tensor is mod.total_loss and g.accumulator
    assert g.holders == ["total_loss (global in train.py)"]
    assert g.nodes == _torch_train_nodes(6)
    assert g.saved_bytes == 0  # each step's backward freed its saved tensors; nodes remain
    assert str(g) == (f"total_loss (global in train.py) holds a graph of {g.nodes} node(s) and "
                      "0 B of saved tensors; use loss.item() or loss.detach() to accumulate")


def test_accumulating_item_reports_nothing(tmp_path: Path, train_module: None) -> None:
    mod = _run_train(tmp_path, "loss.item()", steps=6)
    assert isinstance(mod.total_loss, float)
    assert mod.loss.grad_fn is not None  # the last loss: a spent graph, not a leak
    assert _ours(live_graphs(), "train.py") == []


def test_an_unbackwarded_accumulator_in_a_local_reports_its_bytes() -> None:
    model = nn.Linear(16, 16)
    total_val = 0
    for _ in range(4):  # a validation loop without no_grad: every graph keeps its saves
        total_val += model(rustgrad.randn(10, 16)).pow(2).mean()
    found = _ours(live_graphs(), "local in test_an_unbackwarded")
    assert [g.holders[0].split(" (")[0] for g in found] == ["total_val"]
    g = found[0]
    assert g.saved_bytes == memory_report(total_val).total_bytes
    # per step: the input, the linear's output (pow's input); not the weight, which torch's
    # addmm saves only when the input needs a gradient
    assert g.saved_bytes == 4 * (10 * 16 * 4 * 2)
    assert g.holders[0].startswith("total_val (local in test_an_unbackwarded_accumulator_in_a"
                                   "_local_reports_its_bytes, test_memory_report.py:")


def test_holders_are_attributes_and_list_elements() -> None:
    class Trainer:
        pass

    x = rustgrad.randn(4, requires_grad=True)
    out = x.exp().sum()
    trainer = Trainer()
    trainer.last = out
    history = [x.sin().sum()]
    found = {id(g.tensor): g for g in _ours(live_graphs(), "local in test_holders")}
    assert {h.split(" (")[0] for h in found[id(out)].holders} == {"out", "trainer.last"}
    assert [h.split(" (")[0] for h in found[id(history[0])].holders] == ["history[0]"]
    assert not found[id(out)].accumulator
    assert "call backward() through it" in str(found[id(out)])
    # a result of live_graphs held by the caller is not itself a holder
    again = _ours(live_graphs(), "local in test_holders")
    assert {h.split(" (")[0] for h in
            next(g for g in again if g.tensor is out).holders} == {"out", "trainer.last"}
