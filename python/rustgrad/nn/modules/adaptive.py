"""AdaptiveLogSoftmaxWithLoss: the efficient softmax approximation of Grave et al. (2016) for
large output vocabularies, with torch's parameter layout (``head``, ``tail``)."""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING, Any, List, Sequence

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The log-softmax over a large number of classes approximated by clusters: the most frequent
    classes (those below ``cutoffs[0]``) are scored by a ``head`` layer together with one token
    per tail cluster, and each tail cluster's classes by a smaller two-layer projection whose
    hidden size shrinks by ``div_value`` per cluster. Sort the classes by decreasing frequency.

    Args:
        in_features (int): the number of features of each input sample.
        n_classes (int): the number of classes.
        cutoffs (Sequence[int]): the increasing, unique class indices (between 1 and
            ``n_classes - 1``) where the clusters start.
        div_value (float): the ratio between the hidden sizes of consecutive clusters.
            Default: ``4.0``.
        head_bias (bool): whether the head layer has a bias. Default: ``False``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Attributes:
        head (Linear): ``in_features -> cutoffs[0] + len(cutoffs)``.
        tail (ModuleList): one ``Sequential(Linear, Linear)`` projection per cluster.

    Returns (``forward``):
        a named tuple ``(output, loss)``: ``output`` holds the log-probability of each target
        (``(N)``, or a scalar for an unbatched input), ``loss`` is the mean negative
        log-likelihood.

    Shape:
        - input: ``(N, in_features)`` or ``(in_features)``.
        - target: ``(N)`` or ``()``, with values in ``[0, n_classes - 1]``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7], div_value=2.0)
        >>> out = asm(torch.randn(5, 8), torch.tensor([0, 3, 5, 9, 7]))
        >>> out.output.shape, out.loss.shape
        (torch.Size([5]), torch.Size([]))
        >>> asm.log_prob(torch.randn(2, 8)).exp().sum(1).allclose(torch.ones(2))
        True
    """

    in_features: int
    n_classes: int
    cutoffs: List[int]
    div_value: float
    head_bias: bool
    head: Linear
    tail: ModuleList

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cuts = list(cutoffs)
        if not cuts:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        increasing_and_unique = all(a < b for a, b in zip(cuts, cuts[1:]))
        if (not increasing_and_unique or min(cuts) <= 0 or max(cuts) > n_classes - 1
                or any(int(c) != c for c in cuts)):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cuts + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for k in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (k + 1)))
            size = self.cutoffs[k + 1] - self.cutoffs[k]
            self.tail.append(Sequential(
                Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                Linear(hidden, size, bias=False, device=device, dtype=dtype),
            ))

    def reset_parameters(self) -> None:
        """Re-draws the head's and every projection's parameters with Linear's initialization."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection.children():
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """The log-probability of each target and the mean negative log-likelihood, as
        ``_ASMoutput(output, loss)``."""
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() == 1
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        n = target.size(0)
        if n and not bool(((target >= 0) & (target < self.n_classes)).all()):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        # the head's entry each row is scored by: its class in the shortlist, else its
        # cluster's token; the tail clusters add the class's log-probability in the cluster
        head_entry = target.clone()
        in_cluster = input.new_zeros(n)
        for k in range(self.n_clusters):
            low, high = self.cutoffs[k], self.cutoffs[k + 1]
            member = (target >= low) & (target < high)
            rows = member.nonzero().view(-1)
            if rows.numel() == 0:
                continue
            head_entry = head_entry.masked_fill(member, self.shortlist_size + k)
            scores = self.tail[k](input.index_select(0, rows))
            within = (target.index_select(0, rows) - low).unsqueeze(1)
            picked = F.log_softmax(scores, dim=1).gather(1, within).view(-1)
            in_cluster = in_cluster.index_copy(0, rows, picked)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = in_cluster + head_logprob.gather(1, head_entry.unsqueeze(1)).view(-1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    if TYPE_CHECKING:  # module(x, y) is typed as forward(x, y)
        __call__ = forward

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Every class's log-probability, from the input and the head's output on it."""
        head_logprob = F.log_softmax(head_output, dim=1)
        out = _creation.empty((head_output.size(0), self.n_classes), dtype=input.dtype,
                              device=input.device)
        out[:, :self.shortlist_size] = head_logprob[:, :self.shortlist_size]
        for k in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[k](input), dim=1)
            token = head_logprob[:, self.shortlist_size + k].unsqueeze(1)
            out[:, self.cutoffs[k]:self.cutoffs[k + 1]] = cluster_logprob + token
        return out

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, ``(N, n_classes)``, for an ``(N, in_features)``
        input."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row of an ``(N, in_features)`` input, ``(N)``: the
        same as ``log_prob(input).argmax(dim=1)``, computing the tail clusters only for rows
        whose best head entry is a cluster token."""
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        in_tail = best >= self.shortlist_size
        if not bool(in_tail.any()):
            return best
        if bool(in_tail.all()):
            return self._full_log_prob(input, head_output).argmax(dim=1)
        best[in_tail] = self._full_log_prob(input[in_tail], head_output[in_tail]).argmax(dim=1)
        return best
