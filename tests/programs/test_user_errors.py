"""The mistakes users make on the way: shape mismatches, wrong targets, item() of many
elements, numpy() of a tensor requiring grad, and the rest, with torch's exception types and
messages."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, err, err_head, program, programs_in


@program
def common_user_errors(torch):
    nn = torch.nn
    F = torch.nn.functional
    lin = nn.Linear(4, 2)
    def has(fn, phrase):
        # torch's kernels prefix some messages with their name on some builds; the phrase counts
        e = err(fn)
        return None if e is None else (e[0], phrase in e[1])

    errors = {
        "linear_shape": has(lambda: lin(torch.ones(3, 3)),
                            "mat1 and mat2 shapes cannot be multiplied (3x3 and 4x2)"),
        "ce_batch": err(lambda: F.cross_entropy(torch.ones(4, 3), torch.tensor([0, 1, 2]))),
        "ce_float_target_shape": err_head(lambda: F.cross_entropy(torch.ones(4, 3), torch.ones(4)), 0),
        "item_many": err(lambda: torch.ones(2).item()),
        "numpy_requires_grad": err(lambda: torch.ones(2, requires_grad=True).numpy()),
        "view_noncontig": err(lambda: torch.ones(2, 3).t().view(6)),
        "matmul": has(lambda: torch.ones(2, 3) @ torch.ones(2, 3),
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
        "cat_dims": err(lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)])),
        "mse_broadcast_warns": F.mse_loss(torch.ones(3, 1), torch.ones(3)).item(),
        "bce_range": err_head(lambda: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0])), 8),
        "conv_channels": err(lambda: nn.Conv2d(3, 4, 3)(torch.ones(1, 1, 5, 5))),
        "embedding_index": err_head(lambda: nn.Embedding(3, 2)(torch.tensor([3])), 4),
        "long_grad": err(lambda: torch.tensor([1, 2], requires_grad=True)),
        "optimizer_empty": err(lambda: torch.optim.SGD([], lr=0.1)),
        "load_missing": err_head(lambda: lin.load_state_dict({"weight": torch.ones(2, 4)}), 9),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.mse_loss(torch.ones(3, 1), torch.ones(3))
    errors["warning"] = [str(w.message).split(".")[0] for w in caught]
    return errors


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
