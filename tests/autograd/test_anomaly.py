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
