"""Engine behaviours checked against torch: a graph that saved nothing can be run backward
twice; the "modified by an inplace operation" error carries torch's hint for the anomaly mode
in force."""

import pytest
import rustgrad
import torch


@pytest.mark.parametrize("program", ["(x + 1).sum()", "(x * 2).sum()", "(x - 3).mean()",
                                     "x.sum() * 4", "(x / 2).sum()", "x.exp().sum()",
                                     "(x * x).sum()", "x[0] + x[1]"])
def test_engine_second_backward_runs_or_raises_like_torch(program):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = eval(program, {"x": x})
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            return "second time" in str(e), x.grad.tolist()
        return "ran", x.grad.tolist()

    got, want = run(rustgrad), run(torch)
    assert got[0] == want[0]
    assert got[1] == pytest.approx(want[1], rel=1e-6)


def test_engine_second_backward_with_saved_values_still_raises():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def _inplace_error(lib, anomaly):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.set_detect_anomaly(anomaly):
        b = a.exp()
        b.add_(1)
        try:
            b.sum().backward()
        except RuntimeError as e:
            return str(e)
    return ""


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("anomaly", [False, True])
def test_engine_inplace_error_hint_matches_torch(anomaly):
    got, want = _inplace_error(rustgrad, anomaly), _inplace_error(torch, anomaly)
    assert want and got
    # rustgrad adds one line of provenance after torch's message (tests/explain/test_provenance.py)
    got, added = got.split("\nrustgrad: ")
    assert got.split("Hint: ")[1] == want.split("Hint: ")[1]
    assert got.split(" Hint: ")[0] == want.split(" Hint: ")[0]
    assert added.startswith("it was saved at version 0 by ExpBackward0")


