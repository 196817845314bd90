"""Anomaly detection: NaN-producing backward raises torch's error; a failing backward warns
with the forward traceback of the node that failed; off, nothing is recorded."""

from __future__ import annotations

import warnings

import pytest

from ..parity import f64, same_error


def _nan_backward(lib):
    x = f64(lib, [0.0, 1.0], True)
    with lib.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()  # d sqrt / dx at 0 is inf, times 0 is nan
        y.backward()


def test_detect_anomaly_nan_in_backward_raises_torch_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(_nan_backward, "Function 'SqrtBackward0' returned nan values in its 0th output.")


def test_anomaly_off_lets_nan_through(lib):
    x = f64(lib, [0.0, 1.0], True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().any().item()


def test_detect_anomaly_check_nan_false_lets_nan_through(lib):
    x = f64(lib, [0.0, 1.0], True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
            (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().any().item()
    assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()


def test_detect_anomaly_warns_on_enter(lib):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with lib.autograd.detect_anomaly():
            pass


def _failing(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad backward")

    return Bad


def test_failing_backward_warns_forward_traceback_of_the_node(lib):
    x = f64(lib, [1.0], True)
    lib.autograd.set_detect_anomaly(True)
    y = _failing(lib).apply(x)  # the line the traceback must show
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="bad backward"):
            y.sum().backward()
    lib.autograd.set_detect_anomaly(False)
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("Error detected in BadBackward. Traceback of forward call that "
                              "caused the error:")
    assert "y = _failing(lib).apply(x)  # the line the traceback must show" in msgs[0]


def test_node_recorded_before_anomaly_mode_has_no_traceback(lib):
    x = f64(lib, [1.0], True)
    y = _failing(lib).apply(x)  # recorded with anomaly mode off
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.set_detect_anomaly(True):
            with pytest.raises(ValueError, match="bad backward"):
                y.sum().backward()
    assert not [w for w in caught if "Traceback of forward call" in str(w.message)]


def _anomaly_warnings(f):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f()
    return [str(m.message) for m in caught if "Error detected in" in str(m.message)]


def test_anomaly_without_forward_information_still_names_the_node(lib):
    x = lib.ones(3, requires_grad=True)
    z = (x.exp() * float("nan")).sum()  # forward outside anomaly mode

    def run():
        with pytest.raises(RuntimeError, match="returned nan values"):
            with lib.autograd.detect_anomaly():
                z.backward()

    (msg,) = _anomaly_warnings(run)
    # (torch's C++ warnings end with where they were raised)
    assert msg.startswith("Error detected in MulBackward0. No forward pass information available."
                          " Enable detect anomaly during forward pass for more information.")


def test_anomaly_reports_the_node_whose_tensor_hook_raised(lib):
    x = lib.ones(3, requires_grad=True)

    def run():
        with lib.autograd.set_detect_anomaly(True):
            y = x * 2.0
            y.register_hook(lambda g: 1 / 0)
            with pytest.raises(ZeroDivisionError):
                y.sum().backward()

    (msg,) = _anomaly_warnings(run)
    assert msg.startswith("Error detected in MulBackward0. Traceback of forward call that caused "
                          "the error:")
