"""Double precision and parameter vectors: a float64 model, parameters_to_vector and back,
frozen pretrained embeddings, inf-norm clipping, reflect padding and linear interpolation."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, params_of, program, programs_in, seed_params


@program
def double_precision_and_vectors(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 3), nn.Softplus(), nn.Linear(3, 1)), 72)
    model = model.double()
    x = torch.from_numpy(data((4, 3), 73).astype(np.float64))
    out = model(x)
    out.sum().backward()
    vec = nn.utils.parameters_to_vector(model.parameters())
    grad_vec = nn.utils.parameters_to_vector(p.grad for p in model.parameters())
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    emb = nn.Embedding.from_pretrained(torch.from_numpy(data((4, 2), 74)), freeze=True)
    looked = emb(torch.tensor([[0, 3], [2, 2]]))
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1, norm_type="inf")
    padded = nn.functional.pad(x[:1].reshape(1, 1, 3), (1, 2), mode="reflect")
    interp = nn.functional.interpolate(x.reshape(1, 1, 12), size=5, mode="linear",
                                       align_corners=True)
    return {"out": out, "vec": vec, "grad_vec": grad_vec, "params": params_of(model),
            "emb_req": emb.weight.requires_grad, "looked": looked, "norm": norm,
            "padded": padded, "interp": interp, "dtype": str(model[0].weight.dtype)}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
