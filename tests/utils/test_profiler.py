"""rustgrad.profiler and rustgrad.autograd.profiler against torch's: the ops and backward nodes a
training step records (names and call counts where the decomposition is torch's), record_function
nesting, schedules, traces, tables, and no hook left behind."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import sys
import threading
import warnings
from types import ModuleType
from typing import Any, Dict, List

import pytest
import rustgrad
import rustgrad.profiler
from rustgrad.autograd import profiler as legacy

torch = pytest.importorskip("torch")
importlib.import_module("torch.profiler")

# names whose call counts torch and rustgrad share for the step below (rustgrad's ops that
# torch runs as several aten ops, and the AccumulateGrad torch's engine records, are left out)
SHARED = ["aten::linear", "aten::addmm", "aten::relu", "aten::t", "aten::mm", "aten::sum",
          "aten::log_softmax", "aten::nll_loss", "AddmmBackward0", "ReluBackward0", "TBackward0",
          "LogSoftmaxBackward0", "NllLossBackward0",
          "autograd::engine::evaluate_function: AddmmBackward0",
          "autograd::engine::evaluate_function: ReluBackward0",
          "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad", "train_step"]


def _profiler(lib: ModuleType) -> Any:
    return importlib.import_module(lib.__name__ + ".profiler")


def _train_step(lib: ModuleType, **kwargs: Any) -> Any:
    """One profiled SGD step of a small MLP; returns the profile."""
    prof = _profiler(lib)
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x, y = lib.randn(5, 4), lib.tensor([0, 1, 2, 0, 1])
    with prof.profile(activities=[prof.ProfilerActivity.CPU], **kwargs) as p:
        with prof.record_function("train_step"):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    return p


def _counts(p: Any) -> Dict[str, int]:
    return {e.key: e.count for e in p.key_averages()}


def test_training_step_records_torchs_ops_and_counts() -> None:
    want, got = _counts(_train_step(torch)), _counts(_train_step(rustgrad))
    assert {k: got.get(k) for k in SHARED} == {k: want.get(k) for k in SHARED}
    assert sys.getprofile() is None


def _backward_names(lib: ModuleType) -> List[str]:
    # SinBackward0 (a unary row's formula), SumBackward0/1 and MeanBackward1 share formulas
    x = lib.randn(3, 4, requires_grad=True)
    with _profiler(lib).profile() as p:
        (x.sin() * 2).sum(0).mean(0).sum().backward()
    return sorted({e.name for e in p.events() if re.fullmatch(r"\w+Backward\d", e.name)})


def test_backward_nodes_named_as_torchs_even_where_formulas_are_shared() -> None:
    assert _backward_names(rustgrad) == _backward_names(torch)


def test_custom_function_backward_is_recorded(lib: ModuleType) -> None:
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    x = lib.ones(3, requires_grad=True)
    with _profiler(lib).profile() as p:
        Double.apply(x).sum().backward()
    names = [e.name for e in p.events()]
    assert "DoubleBackward" in names
    assert "autograd::engine::evaluate_function: DoubleBackward" in names


def test_record_function_nests_ops_and_works_as_decorator(lib: ModuleType) -> None:
    prof = _profiler(lib)

    @prof.record_function("decorated")
    def inner(t: Any) -> Any:
        return t.relu()

    x = lib.randn(4, 4)
    with prof.profile() as p:
        with prof.record_function("outer"):
            y = x.exp()
            inner(y)
    events = {e.name: e for e in p.events() if e.name in ("outer", "decorated", "aten::exp", "aten::relu")}
    assert set(events) == {"outer", "decorated", "aten::exp", "aten::relu"}
    assert events["aten::exp"].cpu_parent is events["outer"]
    assert events["decorated"].cpu_parent is events["outer"]
    assert events["aten::relu"].cpu_parent is events["decorated"]
    outer = events["outer"]
    assert outer.cpu_time_total >= sum(c.cpu_time_total for c in outer.cpu_children)
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - sum(c.cpu_time_total for c in outer.cpu_children))


def test_record_function_outside_a_profile_records_nothing() -> None:
    with rustgrad.profiler.record_function("nothing"):
        rustgrad.ones(2).exp()
    assert sys.getprofile() is None


def _schedule_run(lib: ModuleType, steps: int, **sched: int) -> List[List[str]]:
    prof = _profiler(lib)
    traces: List[List[str]] = []

    def ready(p: Any) -> None:
        traces.append(sorted({e.trace_name for e in p.events() if e.name == "ProfilerStep*"}))

    x = lib.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = prof.schedule(**sched)
    with prof.profile(schedule=s, on_trace_ready=ready) as p:
        for _ in range(steps):
            x.exp()
            p.step()
    return traces


@pytest.mark.parametrize("sched", [
    dict(wait=1, warmup=1, active=2, repeat=1),
    dict(wait=1, warmup=1, active=2, repeat=2),
    dict(wait=0, warmup=1, active=1, skip_first=2),
    dict(wait=2, warmup=0, active=2),
])
def test_schedule_records_the_steps_torchs_records(sched: Dict[str, int]) -> None:
    assert _schedule_run(rustgrad, 9, **sched) == _schedule_run(torch, 9, **sched)
    assert sys.getprofile() is None


@pytest.mark.parametrize("sched", [
    dict(wait=1, warmup=1, active=2, repeat=1),
    dict(wait=3, warmup=2, active=1, repeat=0, skip_first=1),
    dict(wait=2, warmup=1, active=3, skip_first=4, skip_first_wait=1),
])
def test_schedule_actions_are_torchs(sched: Dict[str, int]) -> None:
    want = torch.profiler.schedule(**sched)
    got = rustgrad.profiler.schedule(**sched)
    assert [got(i).name for i in range(20)] == [want(i).name for i in range(20)]


def test_schedule_without_warmup_warns_as_torch() -> None:
    with pytest.warns(UserWarning, match="won't be using warmup"):
        rustgrad.profiler.schedule(wait=1, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        rustgrad.profiler.schedule(wait=1, warmup=1, active=0)


def test_chrome_trace_is_loadable_json_with_the_events(tmp_path: Any) -> None:
    p = _train_step(rustgrad, record_shapes=True)
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    ranges = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    names = {e["name"] for e in ranges}
    assert {"aten::addmm", "AddmmBackward0", "train_step"} <= names
    for e in ranges:
        assert e["dur"] >= 0 and isinstance(e["ts"], float) and e["pid"] == os.getpid()
    cats = {e["name"]: e["cat"] for e in ranges}
    assert cats["train_step"] == "user_annotation" and cats["aten::addmm"] == "cpu_op"
    addmm = next(e for e in ranges if e["name"] == "aten::addmm")
    assert addmm["args"]["Input Dims"] == [[8], [5, 4], [4, 8], [], []]


def test_tensorboard_trace_handler_names_files_as_torch(tmp_path: Any) -> None:
    x = rustgrad.ones(3)
    prof = rustgrad.profiler
    with prof.profile(schedule=prof.schedule(wait=0, warmup=1, active=1, repeat=2),
                      on_trace_ready=prof.tensorboard_trace_handler(str(tmp_path / "log"), "w0")) as p:
        for _ in range(5):
            x.exp()
            p.step()
    files = sorted(os.listdir(tmp_path / "log"))
    assert len(files) == 2 and all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json", f) for f in files)
    doc = json.loads((tmp_path / "log" / files[0]).read_text())
    assert "aten::exp" in {e["name"] for e in doc["traceEvents"]}


def test_table_layout_and_sort_are_torchs(lib: ModuleType) -> None:
    p = _train_step(lib, record_shapes=True, profile_memory=True)
    table = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=6)
    lines = table.splitlines()
    header = [c for c in re.split(r"\s{2,}", lines[1].strip())]
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                      "CPU Mem", "Self CPU Mem", "# of Calls"]
    rows = lines[3:-2]
    assert len(rows) == 6 and lines[-1].startswith("Self CPU time total: ")
    times = [_us(re.split(r"\s{2,}", r.strip())[2]) for r in rows]
    assert times == sorted(times, reverse=True)
    grouped = p.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=3)
    assert grouped.splitlines()[1].rstrip().endswith("Input Shapes")


def test_table_header_matches_torch_exactly() -> None:
    want = _train_step(torch).key_averages().table(sort_by="count", row_limit=3).splitlines()[:3]
    got = _train_step(rustgrad).key_averages().table(sort_by="count", row_limit=3).splitlines()[:3]
    assert got == want


def _us(text: str) -> float:
    for unit, scale in (("ms", 1e3), ("us", 1.0), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)


def test_total_average_and_events() -> None:
    p = _train_step(rustgrad)
    events = p.events()
    total = p.key_averages().total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    assert all(e.cpu_time_total >= 0 for e in events)


def test_start_stop_and_no_hook_left_behind() -> None:
    assert sys.getprofile() is None
    p = rustgrad.profiler.profile()
    p.start()
    assert sys.getprofile() is not None
    rustgrad.ones(2).exp()
    p.stop()
    assert sys.getprofile() is None and threading.getprofile() is None
    assert "aten::exp" in _counts(p)
    with pytest.raises(ZeroDivisionError):
        with rustgrad.profiler.profile():
            raise ZeroDivisionError
    assert sys.getprofile() is None and threading.getprofile() is None


def test_ops_on_threads_started_while_profiling_are_recorded() -> None:
    x = rustgrad.ones(3)
    with rustgrad.profiler.profile() as p:
        t = threading.Thread(target=lambda: x.sigmoid())
        t.start()
        t.join()
    sig = [e for e in p.events() if e.name == "aten::sigmoid"]
    assert len(sig) == 1 and sig[0].thread != threading.get_ident()
    assert sys.getprofile() is None


def test_legacy_autograd_profiler(lib: ModuleType) -> None:
    x = lib.randn(2, 3, requires_grad=True)
    with lib.autograd.profiler.profile(record_shapes=True) as p:
        with lib.autograd.profiler.record_function("block"):
            x.mul(2).sum().backward()
    names = {e.key for e in p.key_averages()}
    assert {"block", "aten::mul", "aten::sum", "MulBackward0"} <= names
    rows = p.key_averages(group_by_input_shape=True)
    assert [r.input_shapes for r in rows if r.key == "aten::mul"] == [[[2, 3], []]]
    assert "Self CPU time total" in p.table(sort_by="cpu_time_total")
    with lib.autograd.profiler.emit_nvtx(enabled=False):
        pass


def test_emit_nvtx_is_a_no_op_without_cuda() -> None:
    with rustgrad.autograd.profiler.emit_nvtx():
        y = rustgrad.ones(2) * 2
    assert y.tolist() == [2.0, 2.0] and sys.getprofile() is None


def test_cuda_activity_warns_that_device_time_is_not_reported(monkeypatch: Any) -> None:
    from rustgrad import _warn_once

    monkeypatch.setattr(_warn_once, "_seen", set())
    prof = rustgrad.profiler
    with pytest.warns(UserWarning, match="CUDA kernel times"):
        p = prof.profile(activities=[prof.ProfilerActivity.CPU, prof.ProfilerActivity.CUDA])
    with p:
        rustgrad.ones(2).exp()
    assert "aten::exp" in _counts(p)


def test_profile_memory_reports_the_bytes_an_op_allocates() -> None:
    x = rustgrad.ones(256, dtype=rustgrad.float32)
    with rustgrad.profiler.profile(profile_memory=True) as p:
        y = x.exp()
    exp = next(e for e in p.events() if e.name == "aten::exp")
    assert exp.cpu_memory_usage == 1024 and exp.self_cpu_memory_usage == 1024
    del y


def test_with_stack_records_the_users_line() -> None:
    with rustgrad.profiler.profile(with_stack=True) as p:
        rustgrad.ones(2).exp()
    exp = next(e for e in p.events() if e.name == "aten::exp")
    assert exp.stack and exp.stack[0].startswith(__file__) and "test_with_stack" in exp.stack[0]


def test_every_public_name_is_documented() -> None:
    missing = []
    for mod in (rustgrad.profiler, legacy, rustgrad.autograd.profiler_util):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not inspect.getdoc(obj):
                missing.append(f"{mod.__name__}.{name}")
            if inspect.isclass(obj):
                for attr, raw in vars(obj).items():
                    if not attr.startswith("_") and (callable(raw) or isinstance(raw, property)) \
                            and not inspect.getdoc(raw):
                        missing.append(f"{mod.__name__}.{name}.{attr}")
    assert not missing


def test_reachable_lazily_from_the_package() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-c", (
        "import sys, rustgrad\n"
        "print('rustgrad.profiler' in sys.modules, 'rustgrad.autograd.profiler' in sys.modules,\n"
        "      rustgrad.profiler.profile.__name__, rustgrad.autograd.profiler.profile.__name__)")],
        capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False", "profile", "profile"]
