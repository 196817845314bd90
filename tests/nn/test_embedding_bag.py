"""nn.functional.embedding_bag and nn.EmbeddingBag against torch: the sum, mean and max modes,
1-D input with offsets (include_last_offset, empty bags) and 2-D input, per_sample_weights,
padding_idx, scale_grad_by_freq, max_norm; values, gradients of the weight and of
per_sample_weights, errors, the module's repr and state_dict."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import F, check, check_error, grad_ok, ints, parity

IDX = ints([1, 2, 4, 5, 4, 3, 2, 9])
OFFSETS = ints([0, 2, 2, 5])  # the second bag is empty
W = (10, 3)

BAGS = {
    "mean": lambda L, w, i, o: F(L).embedding_bag(i, w, o),
    "sum": lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="sum"),
    "max": lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="max"),
    "mean_padding": lambda L, w, i, o: F(L).embedding_bag(i, w, o, padding_idx=4),
    "sum_padding_negative": lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="sum",
                                                                  padding_idx=-6),
    "max_padding": lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="max", padding_idx=2),
    "last_offset": lambda L, w, i, o: F(L).embedding_bag(i, w, L.cat([o, o[:1] + 8]),
                                                         include_last_offset=True),
    "last_offset_max": lambda L, w, i, o: F(L).embedding_bag(i, w, L.cat([o, o[:1] + 8]),
                                                             mode="max", include_last_offset=True),
    "last_offset_padding": lambda L, w, i, o: F(L).embedding_bag(
        i, w, L.cat([o, o[:1] + 8]), padding_idx=2, include_last_offset=True),
    "last_offset_max_padding": lambda L, w, i, o: F(L).embedding_bag(
        i, w, L.cat([o, o[:1] + 8]), mode="max", padding_idx=9, include_last_offset=True),
    "last_offset_sum": lambda L, w, i, o: F(L).embedding_bag(
        i, w, L.cat([o, o[:1] + 8]), mode="sum", include_last_offset=True),
    "two_d_mean": lambda L, w, i, o: F(L).embedding_bag(i.view(2, 4), w),
    "two_d_max": lambda L, w, i, o: F(L).embedding_bag(i.view(4, 2), w, mode="max"),
    "freq_mean": lambda L, w, i, o: F(L).embedding_bag(i, w, o, scale_grad_by_freq=True),
    "freq_sum": lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="sum",
                                                      scale_grad_by_freq=True),
}


@pytest.mark.parametrize("op", sorted(BAGS))
def test_embedding_bag_matches_torch(op, device):
    check(BAGS[op], W, IDX, OFFSETS, device=device)


def test_per_sample_weights_match_torch(device):
    check(lambda L, w, i, o, p: F(L).embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
          W, IDX, OFFSETS, (8,), device=device)
    check(lambda L, w, i, o, p: F(L).embedding_bag(i, w, L.cat([o, o[:1] + 8]), mode="sum",
                                                   per_sample_weights=p, padding_idx=4,
                                                   include_last_offset=True),
          W, IDX, OFFSETS, (8,), device=device)
    check(lambda L, w, i, p: F(L).embedding_bag(i.view(2, 4), w, mode="sum",
                                                per_sample_weights=p.view(2, 4)),
          W, IDX, (8,), device=device)


def test_empty_input_and_gradcheck(device):
    check(lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="sum"), W, ints([]), ints([0, 0]),
          device=device)
    check(lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="max"), W, ints([]), ints([0, 0]),
          device=device)
    assert grad_ok(lambda L, w, i, o, p: F(L).embedding_bag(i, w, o, mode="sum",
                                                            per_sample_weights=p),
                   W, IDX, OFFSETS, (8,))
    assert grad_ok(BAGS["mean_padding"], W, IDX, OFFSETS)


def test_max_norm_renormalizes_the_rows_used(device):
    def program(lib):
        w = lib.tensor(np.arange(30.0).reshape(10, 3) / 5)
        out = F(lib).embedding_bag(lib.tensor([1, 2, 4]), w, lib.tensor([0, 1]), max_norm=1.5)
        return out, w

    parity(program)


def test_embedding_bag_saved_mode_matches_torch():
    def program(lib):
        w = lib.ones(4, 2, requires_grad=True)
        return [F(lib).embedding_bag(lib.tensor([[0, 1]]), w, mode=m).grad_fn._saved_mode
                for m in ("sum", "mean", "max")]

    parity(program)


def test_errors_match_torch(device):
    check_error(lambda L, w, i, o: F(L).embedding_bag(i, w, o + 1), W, IDX, OFFSETS,
                device=device, phrase="offsets[0] has to be 0, i.e., the first sequence in the "
                                      "mini-batch has to start from position 0. However, got 1")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i, w, o * 4), W, IDX, OFFSETS,
                device=device, phrase="offsets[-1] can not be greater than input's length 8 "
                                      "but got offsets[-1] of 20")
    check_error(lambda L, w, i: F(L).embedding_bag(i, w), W, IDX, device=device,
                phrase="offsets has to be a 1D Tensor but got None")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i.view(2, 4), w, o), W, IDX, OFFSETS,
                device=device, phrase="if input is 2D, then offsets has to be None")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i, w, o.view(2, 2)), W, IDX, OFFSETS,
                device=device, phrase="offsets has to be a 1D Tensor")
    check_error(lambda L, w, i, o, p: F(L).embedding_bag(i, w, o, per_sample_weights=p), W, IDX,
                OFFSETS, (8,), device=device,
                phrase="per_sample_weights is only supported for mode='sum' (got mode='mean')")
    check_error(lambda L, w, i, o, p: F(L).embedding_bag(i, w, o, mode="sum",
                                                         per_sample_weights=p),
                W, IDX, OFFSETS, (7,), device=device, phrase="embedding_bag: If per_sample_weights")
    check_error(lambda L, w, i, o, p: F(L).embedding_bag(i, w, o, mode="sum",
                                                         per_sample_weights=p.float()),
                W, IDX, OFFSETS, (8,), device=device,
                phrase="Expected tensor for argument #1 'weight' to have the same type as tensor "
                       "for argument #1 'per_sample_weights'; but type torch.DoubleTensor does "
                       "not equal torch.FloatTensor")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i, w, o, mode="foo"), W, IDX, OFFSETS,
                device=device, phrase="mode has to be one of sum, mean or max")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i.to(w.dtype), w, o), W, IDX, OFFSETS,
                device=device, phrase="Expected tensor for argument #1 'indices' to have one of "
                                      "the following scalar types: Long, Int; but got "
                                      "torch.DoubleTensor instead")
    # (torch's float64 kernel words this one otherwise)
    check_error(lambda L, w, i, o: F(L).embedding_bag(i + 5, w, o), W, IDX, OFFSETS,
                device=device, dtype=np.float32, phrase="which is not in the valid range [0, 10)")
    check_error(lambda L, w, i, o: F(L).embedding_bag(i, w, o, padding_idx=12), W, IDX, OFFSETS,
                device=device, phrase="padding_idx must be within the number of embeddings, -10 "
                                      "through 9, but got 12")


@pytest.mark.parametrize("kwargs", [
    {}, {"mode": "sum", "padding_idx": 2, "max_norm": 1.0, "include_last_offset": True},
    {"mode": "max", "norm_type": 1.0, "scale_grad_by_freq": True}, {"padding_idx": -3},
], ids=str)
def test_module_matches_torch(kwargs):
    def program(lib):
        lib.manual_seed(0)
        m = lib.nn.EmbeddingBag(10, 3, **kwargs)
        w = m.weight.detach().clone()
        return repr(m), list(m.state_dict()), m.padding_idx, w.shape

    parity(program)
    m = rustgrad.nn.EmbeddingBag(10, 3, padding_idx=2)
    assert m.weight[2].abs().sum().item() == 0  # the padding row starts at zero


def test_module_forward_and_from_pretrained_match_torch():
    def program(lib):
        w = lib.tensor(np.arange(12.0).reshape(4, 3))
        m = lib.nn.EmbeddingBag.from_pretrained(w, mode="max")
        n = lib.nn.EmbeddingBag.from_pretrained(w, freeze=False, mode="sum")
        out = n(lib.tensor([0, 1, 3, 2]), lib.tensor([0, 3]),
                per_sample_weights=lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=w.dtype))
        out.sum().backward()
        return (m(lib.tensor([[0, 2], [3, 1]])), m.weight.requires_grad, out,
                n.weight.grad, repr(m))

    parity(program)
