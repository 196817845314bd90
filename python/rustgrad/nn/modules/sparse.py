"""Embedding (a lookup table of num_embeddings rows) and EmbeddingBag (its rows pooled by bag)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ... import _creation
from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """A lookup table: each index of the input selects a row of ``weight``.

    The weight is initialized from N(0, 1) (the ``padding_idx`` row with zeros). In backward,
    each row's gradient is the sum of the output gradients of the positions that selected
    it; the ``padding_idx`` row gets none.

    Args:
        num_embeddings (int): the number of rows (the size of the vocabulary).
        embedding_dim (int): the size of each row.
        padding_idx (int, optional): a row that is zero and receives no gradient.
        max_norm (float, optional): rows looked up with a larger norm are rescaled to this
            norm in place.
        norm_type (float): the p of the norm for ``max_norm``. Default: ``2.0``.
        scale_grad_by_freq (bool): scale the gradients by the inverse frequency of the
            indices in the batch. Default: ``False``.
        sparse (bool): accepted for torch compatibility; gradients are dense.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(*)``, integer indices of any shape.
        - Output: ``(*, embedding_dim)``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> emb = nn.Embedding(10, 3)
        >>> emb
        Embedding(10, 3)
        >>> emb(torch.tensor([[1, 2], [4, 9]])).shape
        torch.Size([2, 2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Optional[Tensor] = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                if padding_idx >= num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
            elif padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(_creation.empty((num_embeddings, embedding_dim),
                                                    device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Re-draws the weight from N(0, 1) and zeroes the ``padding_idx`` row."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        """Returns the rows of ``weight`` selected by the indices in ``input``."""
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The table's size and the options that differ from their defaults."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """Creates an Embedding whose weight is ``embeddings`` (its rows are the vectors).

        Args:
            embeddings (Tensor): ``(num_embeddings, embedding_dim)``.
            freeze (bool): keep the weight fixed (``requires_grad=False``). Default: ``True``.
            padding_idx (int, optional): see :class:`Embedding`.
            max_norm (float, optional): see :class:`Embedding`.
            norm_type (float): see :class:`Embedding`. Default: ``2.0``.
            scale_grad_by_freq (bool): see :class:`Embedding`. Default: ``False``.
            sparse (bool): see :class:`Embedding`. Default: ``False``.

        Example::

            >>> emb = nn.Embedding.from_pretrained(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> emb(torch.tensor([1]))
            tensor([[3., 4.]])
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows, without materializing the rows.

    The weight is initialized from N(0, 1) (the ``padding_idx`` row with zeros).

    Args:
        num_embeddings (int): the number of rows.
        embedding_dim (int): the size of each row.
        max_norm (float, optional): rows used with a larger norm are rescaled to it in place.
        norm_type (float): the p of the norm for ``max_norm``. Default: ``2.0``.
        scale_grad_by_freq (bool): scale the gradients by the inverse frequency of the
            indices. Default: ``False``.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``. Default: ``'mean'``.
        sparse (bool): sparse gradients (not supported). Default: ``False``.
        include_last_offset (bool): ``offsets`` has one more entry, the end of the last bag.
            Default: ``False``.
        padding_idx (int, optional): a row that is left out of every bag.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(B, N)`` (one bag per row), or ``(L)`` with ``offsets`` ``(B)``.
        - Output: ``(B, embedding_dim)``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag
        EmbeddingBag(10, 3, mode='sum')
        >>> bag(torch.tensor([1, 2, 4, 5]), torch.tensor([0, 2])).shape
        torch.Size([2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 max_norm: Optional[float] = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Optional[Tensor] = None, include_last_offset: bool = False,
                 padding_idx: Optional[int] = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0:
                if padding_idx >= num_embeddings:
                    raise AssertionError("padding_idx must be within num_embeddings")
            elif padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(_creation.empty((num_embeddings, embedding_dim),
                                                    device=device, dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Re-draws the weight from N(0, 1) and zeroes the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None) -> Tensor:
        """Returns each bag's sum, mean or max of the rows of ``weight`` its indices select."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The table's size, the mode and the options that differ from their defaults."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: Optional[float] = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: Optional[int] = None) -> EmbeddingBag:
        """Creates an EmbeddingBag whose weight is ``embeddings``.

        Args:
            embeddings (Tensor): ``(num_embeddings, embedding_dim)``.
            freeze (bool): keep the weight fixed (``requires_grad=False``). Default: ``True``.
            **rest: max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                include_last_offset and padding_idx, as :class:`EmbeddingBag` takes them.

        Example::

            >>> bag = nn.EmbeddingBag.from_pretrained(torch.tensor([[1., 2.], [3., 4.]]))
            >>> bag(torch.tensor([[0, 1]]))
            tensor([[2., 3.]])
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode,
                  sparse=sparse, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
