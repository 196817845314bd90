"""rustgrad.autograd.who_gets_grad(loss, params) on the tutorial programs: a GAN discriminator
and generator step, a DQN target under no_grad, a frozen feature extractor, a detach branch.
The exact table, with the cut's file:line checked against the real line of the test; which
parameters are reached is checked against torch: the same program's backward under torch must
fill exactly the `.grad`s that who_gets_grad calls reached."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import pytest
import rustgrad
import torch
from rustgrad import nn
from rustgrad.autograd._reach import who_gets_grad

from .sites import next_line, provenance  # noqa: F401  (the fixture)

FILE = "test_who_gets_grad.py"


pytestmark = pytest.mark.usefixtures("provenance")


def named(**modules: Any) -> Dict[str, Any]:
    """{"G.0.weight": ..., "D.0.weight": ...} from modules given by name."""
    return {f"{m}.{n}": p for m, mod in modules.items() for n, p in mod.named_parameters()}


def torch_grads(program: Callable[[Any], Tuple[Any, Dict[str, Any]]]) -> List[str]:
    """The names whose .grad torch's backward fills, running `program` under torch."""
    loss, params = program(torch)
    loss.backward()
    return [n for n, p in params.items() if p.grad is not None]


def gan(lib: Any) -> Tuple[Any, Any, Dict[str, Any], List[int]]:
    """A GAN: the discriminator's loss on a detached fake and a real batch, and the generator's
    loss through the discriminator. Returns d_loss, g_loss, params, the lines of each step."""
    lib.manual_seed(0)
    G = lib.nn.Sequential(lib.nn.Linear(2, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    D = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
    bce = lib.nn.functional.binary_cross_entropy_with_logits
    z, real = lib.randn(8, 2), lib.randn(8, 2)
    lines = [next_line()]
    fake = G(z)
    lines.append(next_line())
    d_fake = D(fake.detach())
    lines.append(next_line())
    d_real = D(real)
    lines.append(next_line())
    d_loss = bce(d_fake, lib.zeros(8, 1)) + bce(d_real, lib.ones(8, 1))
    lines.append(next_line())
    g_loss = bce(D(fake), lib.ones(8, 1))
    return d_loss, g_loss, named(G=G, D=D), lines


def test_gan_discriminator_step_cuts_the_generator() -> None:
    d_loss, _, params, (lf, ld, lr, ll, _) = gan(rustgrad)
    reach = who_gets_grad(d_loss, params)
    cut = f"cut by detach() at {FILE}:{ld}"
    assert str(reach) == "\n".join([
        f"who gets grad from AddBackward0 at {FILE}:{ll}:",
        f"  G.0.weight  [4, 2]  unreachable: {cut}",
        f"  G.0.bias    [4]     unreachable: {cut}",
        f"  G.2.weight  [2, 4]  unreachable: {cut}",
        f"  G.2.bias    [2]     unreachable: {cut}",
        f"  D.0.weight  [3, 2]  reached through TBackward0 at {FILE}:{ld}",
        f"  D.0.bias    [3]     reached through AddmmBackward0 at {FILE}:{ld}",
        f"  D.2.weight  [1, 3]  reached through TBackward0 at {FILE}:{ld}",
        f"  D.2.bias    [1]     reached through AddmmBackward0 at {FILE}:{ld}",
        f"  (the graph is {cut})",
    ])
    assert list(reach.reached) == torch_grads(lambda lib: gan(lib)[0::2])
    assert reach.unreachable == {n: f"unreachable: {cut}" for n in params if n[0] == "G"}
    assert reach.also_reached == {}
    assert lf < ld < lr


def test_gan_generator_step_reaches_both() -> None:
    _, g_loss, params, lines = gan(rustgrad)
    reach = who_gets_grad(g_loss, params)
    assert list(reach.reached) == list(params)
    assert list(reach.reached) == torch_grads(lambda lib: gan(lib)[1:3])
    assert reach.reached["G.0.bias"] == f"through AddmmBackward0 at {FILE}:{lines[0]}"
    assert reach.reached["D.0.bias"] == f"through AddmmBackward0 at {FILE}:{lines[4]}"
    assert reach.cuts == []


def dqn(lib: Any) -> Tuple[Any, Dict[str, Any], int]:
    """A DQN step: Q(s, a) of the policy network against a target computed under no_grad by the
    target network."""
    lib.manual_seed(0)
    policy, target = lib.nn.Linear(4, 2), lib.nn.Linear(4, 2)
    s, s2 = lib.randn(6, 4), lib.randn(6, 4)
    a = lib.tensor([[0], [1], [1], [0], [1], [0]])
    r = lib.randn(6)
    q = policy(s).gather(1, a).squeeze(1)
    with lib.no_grad():
        line = next_line()
        y = r + 0.9 * target(s2).max(1)[0]
    loss = lib.nn.functional.mse_loss(q, y)
    return loss, named(policy=policy, target=target), line


def test_dqn_target_network_is_cut_by_no_grad() -> None:
    loss, params, line = dqn(rustgrad)
    reach = who_gets_grad(loss, params)
    cut = f"cut by no_grad at {FILE}:{line}"
    assert reach.unreachable == {"target.weight": f"unreachable: {cut}",
                                 "target.bias": f"unreachable: {cut}"}
    assert list(reach.reached) == ["policy.weight", "policy.bias"]
    assert list(reach.reached) == torch_grads(lambda lib: dqn(lib)[:2])
    assert str(reach).splitlines()[3:] == [
        f"  target.weight  [2, 4]  unreachable: {cut}",
        f"  target.bias    [2]     unreachable: {cut}",
        f"  (the graph is {cut})",
    ]


def frozen(lib: Any) -> Tuple[Any, Dict[str, Any], int]:
    """A frozen feature extractor under a trained head."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU()),
                              lib.nn.Linear(8, 3))
    model[0].requires_grad_(False)
    line = next_line()
    loss = lib.nn.functional.cross_entropy(model(lib.randn(5, 4)), lib.tensor([0, 1, 2, 0, 1]))
    return loss, dict(model.named_parameters()), line


def test_frozen_feature_extractor() -> None:
    loss, params, line = frozen(rustgrad)
    reach = who_gets_grad(loss, params)
    assert str(reach) == "\n".join([
        f"who gets grad from NllLossBackward0 at {FILE}:{line}:",
        "  0.0.weight  [8, 4]  unreachable: requires_grad=False (frozen)",
        "  0.0.bias    [8]     unreachable: requires_grad=False (frozen)",
        f"  1.weight    [3, 8]  reached through TBackward0 at {FILE}:{line}",
        f"  1.bias      [3]     reached through AddmmBackward0 at {FILE}:{line}",
    ])
    assert list(reach.reached) == torch_grads(lambda lib: frozen(lib)[:2])
    # parameters of another model: not used by this loss, and its own head is "also reached"
    other = frozen(rustgrad)[1]
    reach = who_gets_grad(loss, other)
    assert reach.unreachable["1.weight"] == "unreachable: not used by this loss"
    assert list(reach.also_reached) == ["leaf 0", "leaf 1"]


def test_frozen_feature_extractor_by_module() -> None:
    rustgrad.manual_seed(0)
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Linear(8, 3))
    model[0].requires_grad_(False)
    line = next_line()
    loss = model(rustgrad.randn(5, 4)).pow(2).mean()
    reach = who_gets_grad(loss, model)
    assert str(reach) == "\n".join([
        f"who gets grad from MeanBackward0 at {FILE}:{line}:",
        "  0.0.weight  [8, 4]  unreachable: requires_grad=False (frozen)",
        "  0.0.bias    [8]     unreachable: requires_grad=False (frozen)",
        f"  1.weight    [3, 8]  reached through TBackward0 at {FILE}:{line}",
        f"  1.bias      [3]     reached through AddmmBackward0 at {FILE}:{line}",
    ])
    assert list(reach.reached) == torch_grads(lambda lib: frozen(lib)[:2])


def test_detach_branch_params_none_lists_leaves() -> None:
    x = rustgrad.tensor([1.0], requires_grad=True)
    w = rustgrad.tensor([2.0], requires_grad=True)
    ly = next_line()
    y = x * 2
    ld = next_line()
    z = y.detach() * w + y
    reach = who_gets_grad(z)
    assert str(reach) == "\n".join([
        f"who gets grad from AddBackward0 at {FILE}:{ld}:",
        f"  leaf 0  [1]  reached through MulBackward0 at {FILE}:{ld}",
        f"  leaf 1  [1]  reached through MulBackward0 at {FILE}:{ly}",
        f"  (the graph is cut by detach() at {FILE}:{ld})",
    ])
    assert [e.name for e in reach.entries] == ["leaf 0", "leaf 1"]
    # pairs and bare tensors name themselves; a leaf not asked about is "also reached"
    reach = who_gets_grad(z, [("x", x)])
    assert reach.reached == {"x": f"through MulBackward0 at {FILE}:{ly}"}
    assert reach.also_reached == {"leaf 0": f"through MulBackward0 at {FILE}:{ld}"}
    reach = who_gets_grad(z, [w, x])
    assert list(reach.reached) == ["[0]", "[1]"]


def test_modules_given_by_name() -> None:
    rustgrad.manual_seed(0)
    policy, target = nn.Linear(4, 2), nn.Linear(4, 2)
    s = rustgrad.randn(3, 4)
    with rustgrad.no_grad():
        line = next_line()
        y = target(s).max(1)[0]
    loss = (policy(s).max(1)[0] - y).pow(2).sum()
    for params in ({"policy": policy, "t": target}, [("policy", policy), ("t", target)]):
        reach = who_gets_grad(loss, params)
        assert list(reach.reached) == ["policy.weight", "policy.bias"]
        assert reach.unreachable == {"t.weight": f"unreachable: cut by no_grad at {FILE}:{line}",
                                     "t.bias": f"unreachable: cut by no_grad at {FILE}:{line}"}


def test_detached_leaf_is_behind_the_cut() -> None:
    w = rustgrad.tensor([2.0], requires_grad=True)
    x = rustgrad.tensor([3.0], requires_grad=True)
    line = next_line()
    loss = (w.detach() * x).sum()
    reach = who_gets_grad(loss, {"w": w, "x": x})
    assert reach.unreachable == {"w": f"unreachable: cut by detach() at {FILE}:{line}"}
    assert list(reach.reached) == ["x"]


def test_data_and_a_cut_behind_a_cut() -> None:
    x = rustgrad.tensor([1.0], requires_grad=True)
    y = rustgrad.tensor([2.0], requires_grad=True)
    z = rustgrad.tensor([3.0], requires_grad=True)
    w = rustgrad.tensor([4.0], requires_grad=True)
    a = x * 2  # kept: a cut holds what it cut off only weakly
    b = a.detach() * y
    line = next_line()
    c = b.detach() * z
    ld = next_line()
    loss = (c + w.data).sum()
    reach = who_gets_grad(loss, {"x": x, "y": y, "z": z, "w": w})
    # x lies behind two cuts: the one nearer the loss is the one that matters
    assert reach.unreachable == {"x": f"unreachable: cut by detach() at {FILE}:{line}",
                                 "y": f"unreachable: cut by detach() at {FILE}:{line}",
                                 "w": f"unreachable: cut by .data at {FILE}:{ld}"}
    assert reach.cuts == [f"cut by .data at {FILE}:{ld}", f"cut by detach() at {FILE}:{line}"]
    tx, ty, tz, tw = (torch.tensor([v], requires_grad=True) for v in (1.0, 2.0, 3.0, 4.0))
    ((((tx * 2).detach() * ty).detach() * tz) + tw.data).sum().backward()
    assert [t.grad is not None for t in (tx, ty, tz, tw)] == [False, False, True, False]
    assert list(reach.reached) == ["z"]
    assert a.requires_grad


def test_cut_off_graph_already_freed() -> None:
    rustgrad.manual_seed(0)
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    line = next_line()
    d_loss = D(G(rustgrad.randn(4, 2)).detach()).mean()  # G's output and graph are freed
    reach = who_gets_grad(d_loss, {"G.weight": G.weight, "D.weight": D.weight})
    assert str(reach).splitlines()[1:] == [
        f"  G.weight  [2, 2]  unreachable: not used by this loss, or cut by detach() at {FILE}:"
        f"{line} (what was cut off is already freed, so it cannot be told)",
        f"  D.weight  [1, 2]  reached through TBackward0 at {FILE}:{line}",
        f"  leaf 0    [1]     also reached through AddmmBackward0 at {FILE}:{line}",
        f"  (the graph is cut by detach() at {FILE}:{line}; what it cut off is already freed)",
    ]


def test_unused_and_non_leaf_params() -> None:
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    unused = rustgrad.zeros(2, requires_grad=True)
    line = next_line()
    h = x * 3
    loss = h.sum()
    reach = who_gets_grad(loss, {"x": x, "unused": unused, "h": h})
    assert reach.unreachable == {"unused": "unreachable: not used by this loss"}
    assert reach.reached["h"] == ("as a non-leaf (its .grad is filled only after retain_grad()) "
                                  f"through MulBackward0 at {FILE}:{line}")


def test_loss_without_graph() -> None:
    x = rustgrad.ones(2, requires_grad=True)
    with rustgrad.no_grad():
        line = next_line()
        loss = (x * 2).sum()
    reach = who_gets_grad(loss, {"x": x})
    assert str(reach) == "\n".join([
        "who gets grad from a tensor of shape [] with no grad_fn:",
        f"  x  [2]  unreachable: cut by no_grad at {FILE}:{line}",
        f"  (the graph is cut by no_grad at {FILE}:{line})",
    ])
    leaf = rustgrad.ones(1, requires_grad=True)
    assert who_gets_grad(leaf, [("leaf", leaf)]).reached == {"leaf": "as the loss itself (a leaf)"}


def test_deep_graph_is_walked_iteratively() -> None:
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y + 1
    assert list(who_gets_grad(y, {"x": x}).reached) == ["x"]


def test_bad_params() -> None:
    x = rustgrad.ones(1, requires_grad=True)
    with pytest.raises(TypeError, match="params must be an nn.Module"):
        who_gets_grad(x * 2, [1.0])
    with pytest.raises(TypeError, match="expects a Tensor as loss"):
        who_gets_grad(1.0)  # type: ignore[arg-type]
