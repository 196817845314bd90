"""nn.AdaptiveLogSoftmaxWithLoss against torch, with torch's parameters copied in: forward's
(output, loss) named tuple, log_prob and predict, values and gradients of the input and every
parameter, the head/tail layout (state_dict keys, shapes, repr), and torch's errors."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import same_error

# name -> (in_features, n_classes, cutoffs, div_value, head_bias)
CONFIGS: Dict[str, Tuple[int, int, List[int], float, bool]] = {
    "two_clusters": (8, 10, [4, 7], 2.0, False),
    "head_bias": (8, 12, [3, 5, 9], 2.0, True),
    "one_cluster": (5, 6, [2], 1.5, False),
}
# targets per case (a batch of TARGETS[k].size rows)
TARGETS = {
    "mixed": [0, 3, 9, 4, 7, 5, 1, 8],
    "shortlist_only": [0, 1, 1, 0],
    "tail_only": [5, 4, 5, 5],
    "one_row": [5],
}


def _pair(cfg: str, device: str) -> Tuple[Any, Any]:
    in_f, n, cutoffs, div, hb = CONFIGS[cfg]
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(in_f, n, cutoffs, div_value=div,
                                            head_bias=hb).double()
    r = rustgrad.nn.AdaptiveLogSoftmaxWithLoss(in_f, n, cutoffs, div_value=div,
                                               head_bias=hb).to(device).double()
    r.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                       for k, v in t.state_dict().items()})
    return t, r


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _assert_grads(t: Any, r: Any, tx: Any, rx: Any) -> None:
    np.testing.assert_allclose(_np(rx.grad), _np(tx.grad), rtol=1e-9, atol=1e-12)
    for (tn, tp), (rn, rp) in zip(t.named_parameters(), r.named_parameters()):
        assert tn == rn
        assert (rp.grad is None) == (tp.grad is None), tn
        if tp.grad is not None:
            np.testing.assert_allclose(_np(rp.grad), _np(tp.grad), rtol=1e-9, atol=1e-12,
                                       err_msg=tn)


@pytest.mark.parametrize("targets", sorted(TARGETS))
@pytest.mark.parametrize("cfg", sorted(CONFIGS))
def test_forward_values_and_gradients_match_torch(cfg, targets, device):
    t, r = _pair(cfg, device)
    n_classes = CONFIGS[cfg][1]
    target = np.array(TARGETS[targets]) % n_classes
    x = np.random.default_rng(0).normal(size=(target.size, CONFIGS[cfg][0]))
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, device=device, requires_grad=True)
    tout = t(tx, torch.tensor(target))
    rout = r(rx, rustgrad.tensor(target, device=device))
    assert type(rout).__name__ == "_ASMoutput" and rout._fields == ("output", "loss")
    for a, b in zip(rout, tout):
        assert tuple(a.shape) == tuple(b.shape)
        assert a.grad_fn.name() == b.grad_fn.name()
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-12)
    g = np.random.default_rng(1).normal(size=target.size)
    # the output and the loss together, so both paths of the gradient are checked
    (tout.output * torch.tensor(g)).sum().add(tout.loss).backward()
    (rout.output * rustgrad.tensor(g, device=device)).sum().add(rout.loss).backward()
    _assert_grads(t, r, tx, rx)


def test_unbatched_input_matches_torch(device):
    t, r = _pair("two_clusters", device)
    x = np.random.default_rng(2).normal(size=8)
    for target in (2, 8):
        tx = torch.tensor(x, requires_grad=True)
        rx = rustgrad.tensor(x, device=device, requires_grad=True)
        tout = t(tx, torch.tensor(target))
        rout = r(rx, rustgrad.tensor(target, device=device))
        assert tuple(rout.output.shape) == tuple(tout.output.shape) == ()
        np.testing.assert_allclose(_np(rout.output), _np(tout.output), rtol=1e-9)
        np.testing.assert_allclose(_np(rout.loss), _np(tout.loss), rtol=1e-9)
        t.zero_grad()
        r.zero_grad()
        tout.loss.backward()
        rout.loss.backward()
        _assert_grads(t, r, tx, rx)


@pytest.mark.parametrize("cfg", sorted(CONFIGS))
def test_log_prob_and_predict_match_torch(cfg, device):
    t, r = _pair(cfg, device)
    x = np.random.default_rng(3).normal(size=(40, CONFIGS[cfg][0])) * 3
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, device=device, requires_grad=True)
    tl, rl = t.log_prob(tx), r.log_prob(rx)
    np.testing.assert_allclose(_np(rl), _np(tl), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(rl.exp().sum(1)), np.ones(40), rtol=1e-12)
    g = np.random.default_rng(4).normal(size=tuple(tl.shape))
    tl.backward(torch.tensor(g))
    rl.backward(rustgrad.tensor(g, device=device))
    _assert_grads(t, r, tx, rx)
    tp, rp = t.predict(tx.detach()), r.predict(rx.detach())
    assert rp.dtype == rustgrad.int64
    np.testing.assert_array_equal(_np(rp), _np(tp))
    np.testing.assert_array_equal(_np(rp), _np(rl.argmax(1)))
    # all rows in the shortlist, and all in the tail: the other two paths of predict
    with torch.no_grad():
        t.head.weight[:, :] = 0
        t.head.weight[0, 0] = 50
    r.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                       for k, v in t.state_dict().items()})
    ones = np.ones((3, CONFIGS[cfg][0]))
    np.testing.assert_array_equal(_np(r.predict(rustgrad.tensor(ones, device=device))),
                                  _np(t.predict(torch.tensor(ones))))
    with torch.no_grad():
        t.head.weight[0, 0] = 0
        t.head.weight[-1, 0] = 50
    r.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                       for k, v in t.state_dict().items()})
    np.testing.assert_array_equal(_np(r.predict(rustgrad.tensor(ones, device=device))),
                                  _np(t.predict(torch.tensor(ones))))


def test_layout_and_repr_match_torch():
    for cfg in CONFIGS.values():
        t = torch.nn.AdaptiveLogSoftmaxWithLoss(*cfg[:3], div_value=cfg[3], head_bias=cfg[4])
        r = rustgrad.nn.AdaptiveLogSoftmaxWithLoss(*cfg[:3], div_value=cfg[3],
                                                   head_bias=cfg[4])
        assert repr(r) == repr(t)
        assert [(k, tuple(v.shape)) for k, v in r.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
        for attr in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias",
                     "shortlist_size", "n_clusters", "head_size"):
            assert getattr(r, attr) == getattr(t, attr), attr
        assert type(r.tail).__name__ == "ModuleList"
        assert all(type(s).__name__ == "Sequential" for s in r.tail)
    r = rustgrad.nn.AdaptiveLogSoftmaxWithLoss(8, 6, (2, 4), div_value=2.0,
                                               dtype=rustgrad.float64)
    assert all(p.dtype == rustgrad.float64 for p in r.parameters())
    before = [p.detach().clone() for p in r.parameters()]
    r.reset_parameters()
    assert all(not rustgrad.equal(a, b) for a, b in zip(before, r.parameters()))


@pytest.mark.parametrize("cutoffs", [[], [3, 2], [2, 2], [0, 3], [-1, 3], [2.5], [3, 10]],
                         ids=str)
def test_bad_cutoffs_raise_torchs_error(cutoffs):
    phrase = "cutoffs should be a sequence of length larger than 0" if not cutoffs else \
        "cutoffs should be a sequence of unique, positive integers sorted in an increasing " \
        "order, where each value is between 1 and n_classes-1"
    same_error(lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs), phrase)


@pytest.mark.parametrize("shapes, target, phrase", [
    ((3, 8), [0, 10, 2], "Target values should be in [0, 9], but values in range [0, 10] "
     "were found."),
    ((3, 8), [-1, 5, 2], "Target values should be in [0, 9], but values in range [-1, 5] "
     "were found."),
    ((3, 8), [0, 1], "Input and target should have the same size in the batch dimension."),
    ((3, 8, 2), [0, 1, 2], "1D target tensor expects 2D input tensors, but found inputs with "
     "size torch.Size([3, 8, 2])"),
    ((3, 8), 1, "0D target tensor expects 1D input tensors, but found inputs with size "
     "torch.Size([3, 8])"),
    ((3, 8), [[0, 1, 2]], "0D or 1D target tensor expected, multi-target not supported"),
])
def test_bad_targets_raise_torchs_error(shapes, target, phrase):
    def call(L: Any) -> Any:
        L.manual_seed(0)
        m = L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)
        return m(L.ones(*shapes), L.tensor(target))

    same_error(call, phrase)
