"""Provenance (issue 13): the in-place error naming where a tensor was saved and changed, the
version history, node sites, cuts, cheap anomaly mode and the hook tracer. Every file:line is
checked against the real line of this file; torch, running the same program, is the oracle for
everything torch also does (its messages, gradients and hook order)."""

from __future__ import annotations

import gc
import math
import warnings
import weakref
from contextlib import nullcontext
from typing import Any, Callable, Dict, Iterator, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from .sites import next_line

FILE = __file__
Lines = Dict[str, int]


def at(line: int, func: str) -> str:
    return f"{FILE}:{line} (in {func})"


@pytest.fixture(autouse=True)
def defaults() -> Iterator[None]:
    """Each test starts with provenance and strict .data off, and leaves them as it found them."""
    prev_prov = rustgrad.autograd.set_provenance(False)
    prev_strict = rustgrad.autograd.set_strict_data(False)
    yield
    rustgrad.autograd.set_provenance(bool(prev_prov))
    rustgrad.autograd.set_strict_data(bool(prev_strict))


def np_of(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


# ---- 1. the "modified by an inplace operation" error -------------------------------------------


def inplace_error(lib: Any, program: Callable[[Any, Lines], None]) -> Tuple[str, Lines]:
    lines: Lines = {}
    with pytest.raises(RuntimeError) as info:
        program(lib, lines)
    return str(info.value), lines


def check_inplace(program: Callable[[Any, Lines], None], expected: Callable[[Lines, bool], str]
                  ) -> None:
    """rustgrad's message is torch's, then one line of provenance; with and without node sites."""
    torch_msg, _ = inplace_error(torch, program)
    for provenance in (False, True):
        with rustgrad.autograd.set_provenance(provenance):
            msg, lines = inplace_error(rustgrad, program)
        head, sep, tail = msg.partition("\nrustgrad: ")
        assert sep, msg
        assert head == torch_msg
        assert "rustgrad: " + tail == expected(lines, provenance)


def saved_at(lines: Lines, provenance: bool, func: str) -> str:
    if provenance:
        return f" at {at(lines['save'], func)}"
    return " (rustgrad.autograd.set_provenance(True) records where)"


def output_saved(lib: Any, lines: Lines) -> None:
    x = lib.ones(3, requires_grad=True)
    lines["save"] = next_line()
    y = x.exp()
    lines["write"] = next_line()
    y.add_(1)
    y.sum().backward()


def test_inplace_error_output_saved() -> None:
    f = "output_saved"
    check_inplace(output_saved, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by ExpBackward0{saved_at(ln, p, f)}; then "
        f"modified by add_ at {at(ln['write'], f)} (version 1)."))


def input_saved(lib: Any, lines: Lines) -> None:
    a = lib.ones(3, requires_grad=True)
    x = a + 1
    y = lib.full((3,), 2.0, requires_grad=True)
    lines["save"] = next_line()
    z = x * y
    lines["write"] = next_line()
    x.mul_(3)
    z.sum().backward()


def test_inplace_error_input_saved() -> None:
    f = "input_saved"
    check_inplace(input_saved, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by MulBackward0{saved_at(ln, p, f)}; then "
        f"modified by mul_ at {at(ln['write'], f)} (version 1)."))


def setitem_written(lib: Any, lines: Lines) -> None:
    x = lib.ones(3, requires_grad=True)
    lines["save"] = next_line()
    z = x.exp()
    lines["write"] = next_line()
    z[0] = 5
    z.sum().backward()


def test_inplace_error_setitem() -> None:
    f = "setitem_written"
    check_inplace(setitem_written, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by ExpBackward0{saved_at(ln, p, f)}; then "
        f"modified by setitem at {at(ln['write'], f)} (version 1)."))


def view_written(lib: Any, lines: Lines) -> None:
    x = lib.ones(4, requires_grad=True)
    lines["save"] = next_line()
    z = x.exp()
    v = z[1:]
    lines["write"] = next_line()
    v.zero_()
    z.sum().backward()


def test_inplace_error_write_through_view() -> None:
    f = "view_written"
    check_inplace(view_written, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by ExpBackward0{saved_at(ln, p, f)}; then "
        f"modified by zero_ at {at(ln['write'], f)} (version 1)."))


def two_writes(lib: Any, lines: Lines) -> None:
    x = lib.ones(3, requires_grad=True)
    lines["save"] = next_line()
    y = x.exp()
    lines["write1"] = next_line()
    y.add_(1)
    lines["write2"] = next_line()
    y.mul_(2)
    y.sum().backward()


def test_inplace_error_two_writes_in_order() -> None:
    f = "two_writes"
    check_inplace(two_writes, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by ExpBackward0{saved_at(ln, p, f)}; then "
        f"modified by add_ at {at(ln['write1'], f)} (version 1), then mul_ at "
        f"{at(ln['write2'], f)} (version 2)."))


def optimizer_step(lib: Any, lines: Lines) -> None:
    w = lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([w], lr=0.1)
    lines["save"] = next_line()
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    lines["write"] = next_line()
    opt.step()
    loss.backward()


def test_inplace_error_optimizer_step() -> None:
    f = "optimizer_step"
    check_inplace(optimizer_step, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by MulBackward0{saved_at(ln, p, f)}; then "
        f"modified by SGD.step at {at(ln['write'], f)} (version 1)."))


def no_grad_write(lib: Any, lines: Lines) -> None:
    w = lib.nn.Parameter(lib.ones(3))
    lines["save"] = next_line()
    loss = (w * w).sum()
    with lib.no_grad():
        lines["write"] = next_line()
        w.sub_(0.5)
    loss.backward()


def test_inplace_error_write_under_no_grad() -> None:
    f = "no_grad_write"
    check_inplace(no_grad_write, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by MulBackward0{saved_at(ln, p, f)}; then "
        f"modified by sub_ at {at(ln['write'], f)} (version 1)."))


def sigmoid_inplace(lib: Any, lines: Lines) -> None:
    x = lib.ones(3, requires_grad=True)
    lines["save"] = next_line()
    y = x.exp()
    lines["write"] = next_line()
    y.sigmoid_()
    y.sum().backward()


def test_inplace_error_sigmoid_() -> None:
    f = "sigmoid_inplace"
    check_inplace(sigmoid_inplace, lambda ln, p: (
        f"rustgrad: it was saved at version 0 by ExpBackward0{saved_at(ln, p, f)}; then "
        f"modified by sigmoid_ at {at(ln['write'], f)} (version 1)."))


# ---- 2. version history ---------------------------------------------------------------------


def test_version_history_rows() -> None:
    f = "test_version_history_rows"
    x = rustgrad.ones(3, requires_grad=True) * 1
    assert x._version_history == ()
    l1 = next_line()
    x.add_(1)
    l2 = next_line()
    x[0] = 3
    l3 = next_line()
    x.sigmoid_()
    assert x._version_history == (
        (1, "add_", FILE, l1, f), (2, "setitem", FILE, l2, f), (3, "sigmoid_", FILE, l3, f))
    assert x._version == 3


def test_version_history_keeps_last_eight() -> None:
    f = "test_version_history_keeps_last_eight"
    x = rustgrad.zeros(2)
    lines = []
    for _ in range(11):
        lines.append(next_line())
        x.add_(1)
    assert x._version == 11
    assert x._version_history == tuple(
        (v, "add_", FILE, lines[v - 1], f) for v in range(4, 12))


def test_version_history_shared_by_views_and_detach() -> None:
    f = "test_version_history_shared_by_views_and_detach"
    x = rustgrad.ones(4, requires_grad=True) * 1
    v = x[1:]
    d = x.detach()
    lv = next_line()
    v.mul_(2)
    ld = next_line()
    d.add_(1)
    expected = ((1, "mul_", FILE, lv, f), (2, "add_", FILE, ld, f))
    assert x._version_history == expected
    assert v._version_history == expected
    assert d._version_history == expected
    # torch agrees on the versions: one counter for all three
    tx = torch.ones(4, requires_grad=True) * 1
    tv, td = tx[1:], tx.detach()
    tv.mul_(2)
    td.add_(1)
    assert (tx._version, tv._version, td._version) == (x._version, v._version, d._version)


def test_data_has_its_own_history() -> None:
    f = "test_data_has_its_own_history"
    x = rustgrad.ones(3, requires_grad=True) * 1
    lx = next_line()
    x.add_(1)
    xd = x.data
    assert xd._version == 0 and xd._version_history == ()
    ld = next_line()
    xd.mul_(2)
    assert xd._version_history == ((1, "mul_", FILE, ld, f),)
    assert x._version_history == ((1, "add_", FILE, lx, f),)
    tx = torch.ones(3, requires_grad=True) * 1
    tx.add_(1)
    txd = tx.data
    assert txd._version == 0
    txd.mul_(2)
    assert (tx._version, txd._version) == (x._version, xd._version) == (1, 1)


def data_write(lib: Any, lines: Lines, via_data: bool = True) -> Any:
    x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
    lines["save"] = next_line()
    y = x.exp()
    lines["write"] = next_line()
    (y.data if via_data else y).mul_(2)
    y.sum().backward()
    return x.grad


def test_strict_data_turns_silent_wrong_gradient_into_error() -> None:
    f = "data_write"
    # torch: the write through .data escapes the version check: a wrong gradient, 2 * exp(x)
    t_grad = data_write(torch, {})
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(t_grad.numpy(), 2 * np.exp(x), rtol=1e-6)
    assert not np.allclose(t_grad.numpy(), np.exp(x))
    # rustgrad without strict mode: the same silent behaviour, the same gradient
    r_grad = data_write(rustgrad, {})
    np.testing.assert_allclose(np_of(r_grad), t_grad.numpy(), rtol=1e-6)
    # strict: the write bumps the shared counter, and backward raises torch's in-place error
    with rustgrad.autograd.set_strict_data(True):
        assert rustgrad.autograd.is_strict_data()
        msg, lines = inplace_error(rustgrad, data_write)
    assert not rustgrad.autograd.is_strict_data()
    head, sep, tail = msg.partition("\nrustgrad: ")
    # the error torch gives when the same write is not hidden behind .data
    torch_msg, _ = inplace_error(torch, lambda lib, ln: data_write(lib, ln, via_data=False))
    assert head == torch_msg
    assert tail == (
        "it was saved at version 0 by ExpBackward0 (rustgrad.autograd.set_provenance(True) "
        f"records where); then modified by mul_ at {at(lines['write'], f)} (version 1).")


def test_strict_data_shares_the_counter() -> None:
    f = "test_strict_data_shares_the_counter"
    x = rustgrad.ones(3, requires_grad=True) * 1
    with rustgrad.autograd.set_strict_data(True):
        xd = x.data
    ld = next_line()
    xd.add_(1)
    assert x._version == xd._version == 1
    assert x._version_history == xd._version_history == ((1, "add_", FILE, ld, f),)


# ---- 3. node sites --------------------------------------------------------------------------


class Doubler(rustgrad.nn.Module):
    def forward(self, x: Any) -> Any:
        self.line = next_line()
        return x * 2


def test_node_sites() -> None:
    f = "test_node_sites"
    x = rustgrad.ones(2, 3, requires_grad=True)
    lin = rustgrad.nn.Linear(3, 4)
    seq = rustgrad.nn.Sequential(rustgrad.nn.Linear(3, 3), rustgrad.nn.ReLU())
    plain = x.exp()
    assert plain.grad_fn._site is None
    assert rustgrad.autograd.is_provenance_enabled() is False
    with rustgrad.autograd.set_provenance(True):
        assert rustgrad.autograd.is_provenance_enabled() is True
        # (output, its line, its function); each op is called on its own line
        ops: List[Tuple[Any, int, str]] = []
        ops.append((x.exp(), next_line() - 1, f))
        ops.append((x * 2, next_line() - 1, f))
        ops.append((rustgrad.exp(x), next_line() - 1, f))
        ops.append((rustgrad.nn.functional.relu(x), next_line() - 1, f))
        ops.append((rustgrad.nn.functional.softmax(x, dim=1), next_line() - 1, f))
        ops.append((lin(x), next_line() - 1, f))
        ops.append((seq(x), next_line() - 1, f))
        ops.append((x.sum(dim=0), next_line() - 1, f))
        ops.append((x.mean(), next_line() - 1, f))
        ops.append((x.sum(), next_line() - 1, f))
        model = Doubler()
        out = model(x)  # the op ran in Doubler.forward, a user line
        ops.append((out, model.line, "Doubler.forward"))
    assert rustgrad.autograd.is_provenance_enabled() is False
    for i, (out, line, func) in enumerate(ops):
        assert out.grad_fn._site == (FILE, line, func), (i, out.grad_fn)
    # made after the context: no site
    assert (x * 3).grad_fn._site is None


class _Square(rustgrad.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_node_sites_past_package_frames() -> None:
    """The walk starts one frame out when the innermost frame is the package's (an op wrapper,
    never made into a frame object): a custom Function's apply, a graph recorded by backward
    formulas (create_graph) name the user's line."""
    f = "test_node_sites_past_package_frames"
    x = rustgrad.ones(3, requires_grad=True)
    with rustgrad.autograd.set_provenance(True):
        sq = _Square.apply(x)
        sq_line = next_line() - 2
        y = (x * x).sum()
        (g,) = rustgrad.autograd.grad(y, x, create_graph=True)
        grad_line = next_line() - 2
    assert sq.grad_fn._site == (FILE, sq_line, f)
    assert g.grad_fn._site == (FILE, grad_line, f)


def test_set_provenance_returns_previous() -> None:
    assert bool(rustgrad.autograd.set_provenance(True)) is False
    assert bool(rustgrad.autograd.set_provenance(False)) is True
    assert rustgrad.autograd.is_provenance_enabled() is False


# ---- 4. cuts --------------------------------------------------------------------------------


def test_cut_by_detach_and_inherited() -> None:
    f = "test_cut_by_detach_and_inherited"
    x = rustgrad.ones(3, requires_grad=True)
    y = x * 2
    assert y._cut is None and x._cut is None
    ld = next_line()
    d = y.detach()
    site = (FILE, ld, f)
    assert d._cut[:2] == ("detach", site)
    assert len(d._cut[2]) == 1 and d._cut[2][0] is y.grad_fn
    e = d * 3  # no grad: the cut is inherited
    assert e.grad_fn is None
    assert e._cut[:2] == ("detach", site) and e._cut[2][0] is y.grad_fn
    q = d * x
    rows = q.grad_fn._cuts
    assert len(rows) == 1
    slot, kind, where, sources = rows[0]
    assert (slot, kind, where) == (0, "detach", site)
    assert len(sources) == 1 and sources[0] is y.grad_fn
    assert (x * 4).grad_fn._cuts == ()


def test_cut_by_data() -> None:
    f = "test_cut_by_data"
    x = rustgrad.ones(3, requires_grad=True)
    ld = next_line()
    xd = x.data
    assert xd._cut[:2] == ("data", (FILE, ld, f))
    assert len(xd._cut[2]) == 1 and xd._cut[2][0] is x


def test_cut_by_no_grad_and_inference_mode() -> None:
    f = "test_cut_by_no_grad_and_inference_mode"
    w = rustgrad.nn.Parameter(rustgrad.ones(2))
    with rustgrad.no_grad():
        ln = next_line()
        z = w * 2
    with rustgrad.inference_mode():
        li = next_line()
        zi = w * 2
    assert z._cut[:2] == ("no_grad", (FILE, ln, f)) and z._cut[2][0] is w
    assert zi._cut[:2] == ("inference_mode", (FILE, li, f)) and zi._cut[2][0] is w
    assert len(z._cut[2]) == len(zi._cut[2]) == 1
    # an op on a cut tensor keeps where the cut was made
    assert (z + 1)._cut[:2] == ("no_grad", (FILE, ln, f))
    # under no_grad on tensors that do not require grad: nothing was cut
    with rustgrad.no_grad():
        plain = rustgrad.ones(2) * 2
    assert plain._cut is None
    # torch agrees that these tensors are out of the graph
    tw = torch.nn.Parameter(torch.ones(2))
    with torch.no_grad():
        tz = tw * 2
    assert (tz.requires_grad, tz.grad_fn) == (z.requires_grad, z.grad_fn) == (False, None)


def test_cut_sources_are_weak() -> None:
    x = rustgrad.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    q = d * x
    node_ref = weakref.ref(y.grad_fn)
    assert q.grad_fn._cuts[0][3][0] is y.grad_fn
    del y
    gc.collect()
    assert node_ref() is None
    assert d._cut[2] == ()
    assert q.grad_fn._cuts[0][3] == ()
    # a leaf source: the cut does not keep the parameter alive
    w = rustgrad.nn.Parameter(rustgrad.ones(2))
    wd = w.detach()
    with rustgrad.no_grad():
        wz = w * 2
    w_ref = weakref.ref(w)
    assert wd._cut[2][0] is w and wz._cut[2][0] is w
    del w
    gc.collect()
    assert w_ref() is None
    assert wd._cut[0] == "detach" and wd._cut[2] == ()
    assert wz._cut[0] == "no_grad" and wz._cut[2] == ()


# ---- 5. cheap anomaly mode ------------------------------------------------------------------


def anomaly_message(lib: Any, program: Callable[[Any, Lines], None], **kw: Any
                    ) -> Tuple[str, Lines, List[str]]:
    """The error of `program` under detect_anomaly(**kw), and the UserWarnings it gave (anomaly
    mode's warnings are UserWarnings; NumPy's RuntimeWarnings are not counted)."""
    lines: Lines = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError) as info:
            with lib.autograd.detect_anomaly(**kw):
                program(lib, lines)
    return str(info.value), lines, [
        str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def log_nan(lib: Any, lines: Lines, dtype: str = "float32") -> Any:
    x = lib.zeros(3, dtype=getattr(lib, dtype), requires_grad=True)
    lines["fwd"] = next_line()
    y = x.log()
    (y * 0).sum().backward()
    return x


def sqrt_inf(lib: Any, lines: Lines, dtype: str = "float32") -> Any:
    x = lib.zeros(3, dtype=getattr(lib, dtype), requires_grad=True)
    lines["fwd"] = next_line()
    y = x.sqrt()
    y.sum().backward()
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cheap_anomaly_nan(dtype: str) -> None:
    def run(lib: Any, lines: Lines) -> None:
        log_nan(lib, lines, dtype)

    msg, lines, caught = anomaly_message(rustgrad, run, cheap=True)
    assert msg == ("Function 'LogBackward0' returned nan values in its 0th output, whose forward "
                   f"ran at {at(lines['fwd'], 'log_nan')}.")
    assert caught == []
    assert not rustgrad.is_anomaly_enabled()
    assert not rustgrad._core._is_cheap_anomaly_enabled()
    # torch's full mode names the same node, and warns; rustgrad's full mode says what it says
    t_msg, _, t_caught = anomaly_message(torch, run)
    r_msg, _, r_caught = anomaly_message(rustgrad, run)
    assert r_msg == t_msg == "Function 'LogBackward0' returned nan values in its 0th output."
    for got in (t_caught, r_caught):
        assert got[0] == ("Anomaly Detection has been enabled. This mode will increase the "
                          "runtime and should only be enabled for debugging.")
    assert not rustgrad.is_anomaly_enabled()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cheap_anomaly_inf(dtype: str) -> None:
    def run(lib: Any, lines: Lines) -> Any:
        return sqrt_inf(lib, lines, dtype)

    msg, lines, caught = anomaly_message(rustgrad, run, cheap=True)
    assert msg == ("Function 'SqrtBackward0' returned inf values in its 0th output, whose "
                   f"forward ran at {at(lines['fwd'], 'sqrt_inf')}.")
    assert caught == []
    # torch's full mode checks NaN only: the infinite gradient passes, in rustgrad's too
    grads = []
    for lib in (torch, rustgrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                grads.append(np_of(run(lib, {}).grad))
    np.testing.assert_array_equal(grads[1], grads[0])
    assert np.isinf(grads[0]).all()


def strided_nan(lib: Any, lines: Lines) -> None:
    class StridedNan(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            # a permuted view: neither C- nor Fortran-contiguous
            out = lib.full((3, 4, 2), math.nan, dtype=g.dtype).permute(2, 0, 1)
            assert not out.is_contiguous()
            return out

    x = lib.ones(2, 3, 4, requires_grad=True)
    lines["fwd"] = next_line()
    y = StridedNan.apply(x)
    y.sum().backward()


def test_cheap_anomaly_non_contiguous_gradient() -> None:
    msg, lines, caught = anomaly_message(rustgrad, strided_nan, cheap=True)
    assert msg == ("Function 'StridedNanBackward' returned nan values in its 0th output, whose "
                   f"forward ran at {at(lines['fwd'], 'strided_nan')}.")
    assert caught == []
    t_msg, _, _ = anomaly_message(torch, strided_nan)
    r_msg, _, _ = anomaly_message(rustgrad, strided_nan)
    assert r_msg == t_msg == "Function 'StridedNanBackward' returned nan values in its 0th output."


def test_cheap_anomaly_clean_backward_matches_torch() -> None:
    data = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    grads = []
    for lib in (torch, rustgrad):
        x = lib.tensor(data, requires_grad=True)
        w = lib.tensor(data.T.copy() * 0.5, requires_grad=True)
        mode = rustgrad.autograd.detect_anomaly(cheap=True) if lib is rustgrad else nullcontext()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with mode:
                loss = ((x @ w).tanh().exp() + x.t().sigmoid().sum()).sum()
                loss.backward()
        if lib is rustgrad:
            assert caught == []
        grads.append((np_of(x.grad), np_of(w.grad)))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)


# ---- 6. the hook tracer ---------------------------------------------------------------------


def hooked_program(lib: Any, calls: List[str], norms: Dict[str, List[List[float]]]) -> Any:
    """A small program with every kind of backward hook; each hook logs its name and the norms of
    what it received."""

    def log(name: str, grads: Any) -> None:
        calls.append(name)
        items = grads if isinstance(grads, tuple) else (grads,)
        norms.setdefault(name, []).append(
            [float(np.linalg.norm(np.asarray(g.detach().numpy(), dtype=np.float64)))
             for g in items if g is not None])

    def x_tensor_hook(g: Any) -> None:
        log("x_tensor_hook", g)

    def x_post_accumulate(t: Any) -> None:
        log("x_post_accumulate", t.grad)

    def h_tensor_hook(g: Any) -> None:
        log("h_tensor_hook", g)

    def node_pre(grad_outputs: Any) -> None:
        log("node_pre", grad_outputs)

    def node_post(grad_inputs: Any, grad_outputs: Any) -> None:
        log("node_post", grad_inputs)

    def lin_pre(module: Any, grad_output: Any) -> None:
        log("lin_pre", grad_output)

    def lin_full(module: Any, grad_input: Any, grad_output: Any) -> None:
        log("lin_full", grad_input)

    def act_legacy(module: Any, grad_input: Any, grad_output: Any) -> None:
        log("act_legacy", grad_input)

    lib.manual_seed(0)
    lin = lib.nn.Linear(3, 4).double()
    act = lib.nn.Tanh()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3)))
        lin.bias.copy_(lib.tensor(np.linspace(0.1, 0.4, 4)))
    lin.register_full_backward_pre_hook(lin_pre)
    lin.register_full_backward_hook(lin_full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        act.register_backward_hook(act_legacy)
    x = lib.tensor(np.linspace(0.5, 1.5, 6).reshape(2, 3), requires_grad=True)
    x.register_hook(x_tensor_hook)
    x.register_post_accumulate_grad_hook(x_post_accumulate)
    h = lin(x * 2)
    h.retain_grad()
    h.register_hook(h_tensor_hook)
    out = act(h)
    s = out * 3
    s.grad_fn.register_prehook(node_pre)
    s.grad_fn.register_hook(node_post)
    loss = s.pow(2).sum()
    return loss, x, h, (lin, act)  # the modules must outlive backward (hooks hold them weakly)


def test_trace_hooks_order_and_norms_match_torch() -> None:
    t_calls: List[str] = []
    t_norms: Dict[str, List[List[float]]] = {}
    t_loss, t_x, _, _ = hooked_program(torch, t_calls, t_norms)
    t_loss.backward()

    calls: List[str] = []
    norms: Dict[str, List[List[float]]] = {}
    loss, x, h, _ = hooked_program(rustgrad, calls, norms)
    with rustgrad.autograd.trace_hooks() as trace:
        loss.backward()
    assert calls == t_calls
    events = list(trace)
    names = [e.name.rsplit(".", 1)[-1] for e in events if e.kind != "retain_grad"]
    assert names == t_calls

    kinds = {e.name.rsplit(".", 1)[-1]: e.kind for e in events}
    assert kinds == {
        "x_tensor_hook": "tensor", "x_post_accumulate": "post_accumulate",
        "h_tensor_hook": "tensor", "retain_grad": "retain_grad", "node_pre": "node_pre",
        "node_post": "node", "lin_pre": "module_pre", "lin_full": "module",
        "act_legacy": "module_legacy"}
    owners = {e.name.rsplit(".", 1)[-1]: e.owner for e in events}
    assert owners["lin_pre"] == owners["lin_full"] == "Linear"
    assert owners["act_legacy"] == "Tanh"

    # retain_grad runs after h's tensor hooks (torch runs retains_grad hooks last)
    order = [e.name.rsplit(".", 1)[-1] for e in events]
    assert order.index("retain_grad") == order.index("h_tensor_hook") + 1

    # the norms the trace reports are those of the gradients the hooks received
    for e in events:
        name = e.name.rsplit(".", 1)[-1]
        if name == "retain_grad":
            assert e.shapes == ((2, 4),)
            assert e.norms[0] == pytest.approx(float(np.linalg.norm(np_of(h.grad))), rel=1e-12)
            continue
        got = [n for n in e.norms if n is not None]
        assert got == pytest.approx(norms[name][0], rel=1e-12), name
        assert got == pytest.approx(t_norms[name][0], rel=1e-9), name
    by_name = {e.name.rsplit(".", 1)[-1]: e for e in events}
    assert by_name["x_tensor_hook"].shapes == ((2, 3),)
    assert by_name["x_post_accumulate"].shapes == ((2, 3),)
    assert by_name["h_tensor_hook"].shapes == ((2, 4),)
    np.testing.assert_allclose(np_of(x.grad), t_x.grad.numpy(), rtol=1e-12)


def test_trace_hooks_scope_nesting_and_no_effect_on_grads() -> None:
    def hook(g: Any) -> None:
        return None

    def program() -> Tuple[Any, Any]:
        x = rustgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * x
        y.register_hook(hook)
        return x, y.sum()

    # outside any context: nothing is recorded
    trace = rustgrad.autograd.trace_hooks()
    x0, loss = program()
    loss.backward()
    assert len(trace) == 0
    with trace:
        pass
    x0b, loss = program()
    loss.backward()
    assert len(trace) == 0

    with rustgrad.autograd.trace_hooks() as outer:
        x1, loss = program()
        loss.backward()
        with rustgrad.autograd.trace_hooks() as inner:
            x2, loss = program()
            loss.backward()
    assert [e.kind for e in outer] == ["tensor", "tensor"]
    assert [e.kind for e in inner] == ["tensor"]
    assert inner[0].shapes == ((3,),)
    assert inner[0].norms[0] == pytest.approx(math.sqrt(3.0), rel=1e-12)
    assert str(inner[0]).startswith("tensor ")
    # tracing did not change the gradients: 2x, as torch gives
    tx = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (tx * tx).sum().backward()
    for xs in (x0, x0b, x1, x2):
        np.testing.assert_array_equal(np_of(xs.grad), tx.grad.numpy())


def branching_program(lib: Any, calls: List[str]) -> Tuple[Any, Any]:
    """Branches the engine may visit in any order: the order is torch's (by creation order)."""

    def hook(name: str) -> Callable[[Any], None]:
        def named(g: Any) -> None:
            calls.append(name)
        named.__qualname__ = name
        return named

    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    a = x * 2
    b = x.exp()
    c = a * b
    d = b.sin()
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
        t.register_hook(hook(name + "1"))
        t.register_hook(hook(name + "2"))
    x.register_hook(hook("x"))
    return x, (c.sum() + d.sum() * a.sum())


def test_trace_hooks_order_on_branches_matches_torch() -> None:
    t_calls: List[str] = []
    tx, t_loss = branching_program(torch, t_calls)
    t_loss.backward()
    calls: List[str] = []
    x, loss = branching_program(rustgrad, calls)
    with rustgrad.autograd.trace_hooks() as trace:
        loss.backward()
    assert [e.name for e in trace] == calls == t_calls
    assert {e.kind for e in trace} == {"tensor"}
    np.testing.assert_allclose(np_of(x.grad), tx.grad.numpy(), rtol=1e-6)


def test_inplace_module_names_the_module_or_op() -> None:
    f = "test_inplace_module_names_the_module_or_op"
    x = rustgrad.ones(3, requires_grad=True)
    y = x.exp()
    lw = next_line()
    rustgrad.nn.ReLU(inplace=True)(y)
    assert y._version == 1
    (version, op, file, line, func), = y._version_history
    assert (version, file, line, func) == (1, FILE, lw, f)
    assert op in ("relu_", "relu", "ReLU", "ReLU.forward")
