"""LBFGS with a closure: Rosenbrock with and without the strong-Wolfe line search, and a
least-squares fit of a linear layer."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


def _rosenbrock_lbfgs(torch, search):
    xy = torch.tensor([-1.5, 2.0], requires_grad=True)
    opt = torch.optim.LBFGS([xy], lr=1, max_iter=20, history_size=5, line_search_fn=search)
    calls = []

    def closure():
        opt.zero_grad()
        a, b = xy[0], xy[1]
        loss = (1 - a) ** 2 + 10 * (b - a ** 2) ** 2
        loss.backward()
        calls.append(loss.item())
        return loss

    first = [opt.step(closure).item() for _ in range(3)]
    return {"xy": xy.detach().clone(), "first": first, "calls": len(calls),
            "n_iter": opt.state[xy]["n_iter"]}


@program
def lbfgs_closure(torch):
    results = {str(search): _rosenbrock_lbfgs(torch, search) for search in (None, "strong_wolfe")}

    # least squares fit of a linear layer
    layer = seed_params(torch, torch.nn.Linear(3, 1), 28)
    x = torch.from_numpy(data((16, 3), 29))
    y = x @ torch.tensor([[1.0], [2.0], [-1.0]]) + 0.5
    opt = torch.optim.LBFGS(layer.parameters(), lr=0.5, max_iter=10)

    def fit():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(layer(x), y)
        loss.backward()
        return loss

    opt.step(fit)
    results["fit"] = params_of(layer)
    return results


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
