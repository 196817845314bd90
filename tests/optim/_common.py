"""What the optimizer parity files share: the fixed data (one seeded generator, drawn in this
order), the float tolerances, the comparison of parameter trajectories, and a torch state_dict
turned into rustgrad tensors."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import rustgrad
import torch

rng = np.random.default_rng(0)
# the cross-entropy steps of the Adadelta/Adamax/NAdam/RAdam tests
X = rng.standard_normal((32, 8))
Y = rng.integers(0, 4, 32)
# the least-squares problem of the LBFGS tests
A = rng.standard_normal((20, 5))
B = rng.standard_normal(20)
TOL = {"float32": dict(rtol=1e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def _assert_trajectories_close(rt: List[List[np.ndarray]], tt: List[List[np.ndarray]],
                               dtype: str, tol: Optional[dict] = None) -> None:
    assert len(rt) == len(tt)
    for step, (rps, tps) in enumerate(zip(rt, tt), 1):
        for i, (rp, tp) in enumerate(zip(rps, tps)):
            assert rp.dtype == tp.dtype == np.dtype(dtype)
            np.testing.assert_allclose(rp, tp, **(tol or TOL[dtype]),
                                       err_msg=f"step {step} param {i}")


def _to_rustgrad(obj: Any) -> Any:
    """A torch state_dict with its tensors turned into rustgrad tensors."""
    if isinstance(obj, torch.Tensor):
        return rustgrad.tensor(obj.numpy().copy())
    if isinstance(obj, dict):
        return {k: _to_rustgrad(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_rustgrad(v) for v in obj]
    return obj
