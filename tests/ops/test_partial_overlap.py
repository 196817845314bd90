"""In-place writes whose tensor operand shares memory with the written tensor, against torch.

torch's rule (assert_no_partial_overlap): two non-overlapping-and-dense tensors over the same
memory range with the same strides are the same elements (FULL: x.add_(x) is allowed); memory
ranges that meet otherwise are PARTIAL and refused, since the result would depend on the order
of the writes; a layout that is not non-overlapping-and-dense is TOO_HARD and allowed. The
indexed writes (index_add_, index_put_, x[indices] = t) refuse any overlap (assert_no_overlap).
copy_ of a tensor's own elements returns at once, even into an expanded tensor.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest

from ..parity import check, check_error

SHARED = ("some elements of the input tensor and the written-to tensor refer to a single memory "
          "location. Please clone() the tensor before performing the operation.")

# programs over one (4, 4) input
REFUSED: Dict[str, Callable[[Any, Any], Any]] = {
    "add_t": lambda lib, x: x.add_(x.t()),
    "add_slices": lambda lib, x: x[1:].add_(x[:3]),
    "add_unsqueezed": lambda lib, x: x.unsqueeze(0).add_(x),
    "add_row_broadcast": lambda lib, x: x.add_(x[0]),
    "add_alpha_t": lambda lib, x: x.add_(x.t(), alpha=2),
    "sub_alpha_t": lambda lib, x: x.sub_(x.t(), alpha=2),
    "iadd_t": lambda lib, x: x.__iadd__(x.t()),
    "isub_t": lambda lib, x: x.__isub__(x.t()),
    "mul_t": lambda lib, x: x.mul_(x.t()),
    "imul_t": lambda lib, x: x.__imul__(x.t()),
    "div_t": lambda lib, x: x.div_(x.t()),
    "pow_t": lambda lib, x: x.pow_(x.t()),
    "flat_shifted": lambda lib, x: x.view(16)[2:].add_(x.view(16)[:14]),
    "addcmul_t": lambda lib, x: x.addcmul_(x.t(), x),
    "addcdiv_t": lambda lib, x: x.addcdiv_(x, x.t()),
    "lerp_t": lambda lib, x: x.lerp_(x.t(), 0.5),
    "lerp_weight_t": lambda lib, x: x.lerp_(x * 2, x.t()),
    "clamp_t": lambda lib, x: x.clamp_(x.t()),
    "clamp_min_t": lambda lib, x: x.clamp_min_(x.t()),
    "clamp_max_t": lambda lib, x: x.clamp_max_(x.t()),
    "copy_t": lambda lib, x: x.copy_(x.t()),
    "copy_slices": lambda lib, x: x[1:].copy_(x[:3]),
    "setitem_t": lambda lib, x: x.__setitem__(slice(None), x.t()),
    "setitem_ellipsis_t": lambda lib, x: x.__setitem__(Ellipsis, x.t()),
    "setitem_shifted_rows": lambda lib, x: x.__setitem__(slice(1, None), x[:3]),
    "setitem_advanced_t": lambda lib, x: x.__setitem__(lib.tensor([0, 1, 2, 3]), x.t()),
    "setitem_advanced_self": lambda lib, x: x.__setitem__(lib.tensor([0, 1, 2, 3]), x),
    "index_add_self": lambda lib, x: x.index_add_(0, lib.tensor([0, 1, 2, 3]), x),
    "index_add_t": lambda lib, x: x.index_add_(0, lib.tensor([0, 1, 2, 3]), x.t()),
    "index_put_self": lambda lib, x: x.index_put_((lib.tensor([0, 1, 2, 3]),), x),
    # one element of x is a dense tensor inside x's memory: partial too
    "add_own_element": lambda lib, x: x.add_(x[0, 0]),
    "mul_own_block": lambda lib, x: x.mul_(x[1:2, 1:2]),
    "copy_own_element": lambda lib, x: x.copy_(x[0, 1]),
    "lerp_own_element_weight": lambda lib, x: x.lerp_(x.clone(), x[0, 1]),
    "clamp_own_element": lambda lib, x: x.clamp_(x[0, 1]),
}

# the same elements, disjoint memory, or layouts torch does not judge: allowed
ALLOWED: Dict[str, Callable[[Any, Any], Any]] = {
    "add_self": lambda lib, x: x.add_(x),
    "add_same_view": lambda lib, x: x.view(16).add_(x.view(16)),
    "add_reshaped_alike": lambda lib, x: x.view(2, 8).add_(x.view(2, 8)),
    "add_disjoint_halves": lambda lib, x: x[:2].add_(x[2:]),
    "mul_self": lambda lib, x: x.mul_(x),
    "addcdiv_self": lambda lib, x: x.addcdiv_(x, x.t() + 5),
    "copy_self": lambda lib, x: x.copy_(x),
    "copy_same_view": lambda lib, x: x.view(16).copy_(x.view(16)),
    "copy_disjoint_rows": lambda lib, x: x[0].copy_(x[3]),
    "setitem_self": lambda lib, x: x.__setitem__(slice(None), x),
    "setitem_row_itself": lambda lib, x: x.__setitem__(0, x[0]),
    "setitem_other_row": lambda lib, x: x.__setitem__(0, x[1]),
    "setitem_masked_copy": lambda lib, x: x.__setitem__(x > 0, x[x > 0]),
    "index_put_clone": lambda lib, x: x.index_put_((lib.tensor([0, 1, 2, 3]),), x.clone()),
}

# torch gives up on these layouts (not non-overlapping-and-dense) and computes with its own loop
# order, so only "not refused" is compared
TOO_HARD: Dict[str, Callable[[Any, Any], Any]] = {
    "strided_column": lambda lib, x: x.add_(x[:, :1]),
    "expanded_row": lambda lib, x: x.add_(x[0:1].expand(4, 4)),
    "every_other_row": lambda lib, x: x[:2].mul_(x[::2]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_partial_overlap_is_refused(name: str, device: str) -> None:
    check_error(REFUSED[name], (4, 4), device=device, phrase=SHARED)


@pytest.mark.parametrize("name", ["add_t", "copy_t", "mul_t", "add_slices", "setitem_t",
                                  "index_add_t"])
def test_refused_before_recording_history(name: str, device: str) -> None:
    # on a non-leaf that requires grad, the write is refused the same way, nothing recorded
    def program(lib: Any, x: Any) -> Any:
        y = x * 1
        try:
            REFUSED[name](lib, y)
        except RuntimeError as e:
            assert SHARED in str(e)
            return y
        raise AssertionError("not refused")

    check(program, (4, 4), device=device)


# their backward reads the input the write changed: torch's raises, so run them without grad
WITHOUT_GRAD = {"mul_self", "addcdiv_self"}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_full_or_no_overlap_is_allowed(name: str, device: str) -> None:
    def program(lib: Any, x: Any) -> Any:
        y = x.detach() * 1 if name in WITHOUT_GRAD else x * 1
        ALLOWED[name](lib, y)
        return y

    check(program, (4, 4), device=device)


@pytest.mark.parametrize("name", sorted(TOO_HARD))
def test_layouts_torch_does_not_judge_are_allowed(name: str, lib: Any) -> None:
    x = lib.arange(16.0).reshape(4, 4)
    TOO_HARD[name](lib, x)
    assert x._version == 1


def test_self_copy_of_expanded_tensor(device: str) -> None:
    # the fuzzer's case: same tensor, nothing to copy; the version still moves
    def program(lib: Any, t: Any) -> Any:
        w = t.detach().expand(3, 2)
        w.copy_(w)
        y = t * 1
        y.copy_(y)  # with autograd: CopyBackwards recorded as for any copy_
        return w, y  # their versions are compared too

    check(program, (2,), device=device)


def test_self_copy_of_expanded_tensor_records_copy(lib: Any) -> None:
    # (torch's backward through this write then refuses the expanded view: not run here)
    t = lib.tensor([1.0, 2.0], requires_grad=True) * 1
    z = t.expand(2, 2)
    z.copy_(z)
    assert (z._version, t._version) == (1, 1)
    assert z.grad_fn.name() == "AsStridedBackward0"
    assert t.grad_fn.name() == "torch::autograd::CopySlices"


def test_copy_into_expanded_view_from_an_alias_is_allowed(lib: Any) -> None:
    t = lib.tensor([1.0, 2.0])
    t.expand(2, 2).copy_(t.expand(2, 2))
    assert t._version == 1
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_copy_into_expanded_view_from_other_memory_is_refused(lib: Any) -> None:
    t = lib.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        t.expand(2, 2).copy_(lib.ones(2, 2))
