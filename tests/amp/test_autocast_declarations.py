"""Each op declares its autocast policy beside its definition (`@op(..., autocast=...)`); the
declarations agree with torch's lists, kept here as test data (torch_autocast_lists.py)."""

from __future__ import annotations

import pytest
from rustgrad import _bind
from rustgrad._ops import _declare

from . import torch_autocast_lists as torch_lists


@pytest.mark.parametrize("device_type", ["cuda", "cpu"])
def test_declared_policies_are_torchs_lists(device_type: str) -> None:
    decls = _bind.declared()
    declared = {d.name: d.autocast[device_type] for d in decls if device_type in d.autocast}
    names = {d.name for d in decls}
    torchs = {n: p for n, p in torch_lists.BY_DEVICE[device_type].items() if n in names}
    assert declared == torchs


def test_a_policy_name_that_is_not_torchs_is_refused_at_declaration() -> None:
    def op_fn(x: object) -> object:
        return x

    with pytest.raises(ValueError, match="autocast policy"):
        _declare.with_autocast(op_fn, {"cuda": "lowr"})
    with pytest.raises(ValueError, match="autocast policy"):
        _declare.with_autocast(op_fn, {"gpu": "lower"})


def test_the_policy_names_are_torchs() -> None:
    assert _declare.POLICIES == {torch_lists.LOWER, torch_lists.FP32, torch_lists.FP32_SET_OPT_DTYPE,
                                 torch_lists.FP32_APPEND_DTYPE, torch_lists.PROMOTE, torch_lists.BANNED}
