"""Transformer, TransformerEncoder/Decoder and their layers, as torch.nn's: the same submodules
(so the same parameter names and state_dict keys), arguments, masks and causal-mask detection,
composed from MultiheadAttention, Linear, Dropout and LayerNorm.

torch's CPU fast paths (`_transformer_encoder_layer_fwd`, nested tensors) compute the same values
as the composition; the one visible difference they make is reproduced: in eval mode without
autograd, TransformerEncoder returns zeros at the padded positions of a left-aligned
`src_key_padding_mask` (torch drops them into a nested tensor and pads back with 0).
"""

from __future__ import annotations

import copy
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ... import _creation, _dtype
from ..._ops.copies import triu
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from .. import functional as F
from .. import init
from .activation import GELU, MultiheadAttention, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]

Activation = Union[str, Callable[[Tensor], Tensor]]


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    return triu(_creation.full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _get_seq_len(src: Tensor, batch_first: bool) -> Optional[int]:
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask: Optional[Tensor], is_causal: Optional[bool] = None,
                           size: Optional[int] = None) -> bool:
    """An explicit hint wins; with none, a mask equal to the square causal mask is causal."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.size()) == tuple(causal.size()):
            make_causal = bool((mask == causal).all())
    return make_causal


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """One encoder layer of the Transformer: self-attention then a feed-forward network
    (``linear2(dropout(activation(linear1(x))))``), each added to its input (a residual
    connection) and normalized with LayerNorm.

    Args:
        d_model (int): the number of features of the input.
        nhead (int): the number of attention heads.
        dim_feedforward (int): the hidden size of the feed-forward network. Default: ``2048``.
        dropout (float): the dropout probability. Default: ``0.1``.
        activation (str or Callable): the feed-forward activation, ``"relu"``, ``"gelu"`` or
            a function. Default: ``F.relu``.
        layer_norm_eps (float): the ``eps`` of the LayerNorms. Default: ``1e-5``.
        batch_first (bool): take and return ``(N, S, E)`` instead of ``(S, N, E)``.
            Default: ``False``.
        norm_first (bool): apply each LayerNorm before its block (pre-norm) instead of after.
            Default: ``False``.
        bias (bool): whether the linear layers and LayerNorms have biases. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - ``src``: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - Output: the shape of ``src``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
        >>> layer(torch.randn(2, 5, 16)).shape
        torch.Size([2, 5, 16])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # torch records which of its fused activations this is (0: neither)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: bool = False) -> Tensor:
        """Passes src through self-attention and the feed-forward block."""
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask", F._none_or_dtype(src_mask),
            "src_mask", src.dtype)
        src_mask = F._canonical_mask(src_mask, "src_mask", None, "", src.dtype, False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """One decoder layer of the Transformer: self-attention over the target, attention over the
    encoder's output (``memory``), then a feed-forward network, each with a residual
    connection and LayerNorm.

    Args:
        d_model (int): the number of features of the input.
        nhead (int): the number of attention heads.
        dim_feedforward (int): the hidden size of the feed-forward network. Default: ``2048``.
        dropout (float): the dropout probability. Default: ``0.1``.
        activation (str or Callable): the feed-forward activation, ``"relu"``, ``"gelu"`` or
            a function. Default: ``F.relu``.
        layer_norm_eps (float): the ``eps`` of the LayerNorms. Default: ``1e-5``.
        batch_first (bool): take and return ``(N, S, E)`` instead of ``(S, N, E)``.
            Default: ``False``.
        norm_first (bool): apply each LayerNorm before its block (pre-norm) instead of after.
            Default: ``False``.
        bias (bool): whether the linear layers and LayerNorms have biases. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - ``tgt``: ``(T, N, E)``, ``(N, T, E)`` with ``batch_first``, or ``(T, E)``.
        - ``memory``: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - Output: the shape of ``tgt``.
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = (_get_activation_fn(activation) if isinstance(activation, str)
                           else activation)

    def __setstate__(self, state: Any) -> None:
        if "activation" not in state:
            state["activation"] = F.relu
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        """Passes tgt through self-attention, attention over memory and the feed-forward block."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Optional[Tensor],
                   key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _why_no_nested_tensor(layer: Any) -> str:
    """torch's reason (empty when none) for not taking the nested-tensor path of this layer."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True"
                "(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if not layer.norm1.eps == layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _left_aligned(key_padding_mask: Tensor) -> bool:
    """Whether every row keeps a prefix and pads the rest (True marks padding)."""
    keep = key_padding_mask.logical_not().to(dtype=_dtype.int64)
    # a prefix never rises from 0 back to 1 along the sequence
    return bool((keep[:, 1:] <= keep[:, :-1]).all()) if keep.size(1) > 1 else True


class TransformerEncoder(Module):
    """A stack of ``num_layers`` encoder layers (deep copies of ``encoder_layer``), followed by
    an optional normalization.

    Args:
        encoder_layer (TransformerEncoderLayer): the layer to copy.
        num_layers (int): the number of layers.
        norm (Module, optional): applied to the output of the last layer.
        enable_nested_tensor (bool): accepted for torch compatibility; padded positions come
            back as zeros where torch's nested-tensor path would give them.
            Default: ``True``.
        mask_check (bool): check the padding mask as torch does. Default: ``True``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=2)
        >>> encoder(torch.randn(2, 5, 16)).shape
        torch.Size([2, 5, 16])
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Optional[Module] = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                "enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}", UserWarning, stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None) -> Tensor:
        """Passes src through every layer in turn, then the norm."""
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask", F._none_or_dtype(mask), "mask",
            src.dtype)
        mask = F._canonical_mask(mask, "mask", None, "", src.dtype, False)
        first = self.layers[0]
        zero_padding = self._pads_with_zeros(src, mask, src_key_padding_mask)
        seq_len = _get_seq_len(src, first.self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if zero_padding:
            assert src_key_padding_mask is not None
            output = output.masked_fill(src_key_padding_mask.unsqueeze(-1) != 0, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def _pads_with_zeros(self, src: Tensor, mask: Optional[Tensor],
                         key_padding_mask: Optional[Tensor]) -> bool:
        """torch's conditions for running the layers on a nested tensor (padding comes back 0)."""
        first = self.layers[0]
        if (not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3
                or key_padding_mask is None or mask is not None):
            return False
        if getattr(self, "mask_check", True) and not _left_aligned(key_padding_mask != 0):
            return False
        attn = first.self_attn
        args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
                first.norm2.bias, first.linear1.weight, first.linear1.bias,
                first.linear2.weight, first.linear2.bias)
        if is_grad_enabled() and any(
                a is not None and a.requires_grad for a in args):
            return False
        return True


class TransformerDecoder(Module):
    """A stack of ``num_layers`` decoder layers (deep copies of ``decoder_layer``), followed by
    an optional normalization.

    Args:
        decoder_layer (TransformerDecoderLayer): the layer to copy.
        num_layers (int): the number of layers.
        norm (Module, optional): applied to the output of the last layer.
    """

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Optional[Module] = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        """Passes tgt (attending to memory) through every layer in turn, then the norm."""
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Transformer(Module):
    """The encoder-decoder Transformer (Vaswani et al., 2017): a :class:`TransformerEncoder`
    turns ``src`` into a memory, and a :class:`TransformerDecoder` attends to it while
    processing ``tgt``. Both stacks end with a LayerNorm.

    Args:
        d_model (int): the number of features of the inputs. Default: ``512``.
        nhead (int): the number of attention heads. Default: ``8``.
        num_encoder_layers (int): the number of encoder layers. Default: ``6``.
        num_decoder_layers (int): the number of decoder layers. Default: ``6``.
        dim_feedforward (int): the hidden size of the feed-forward networks. Default: ``2048``.
        dropout (float): the dropout probability. Default: ``0.1``.
        activation (str or Callable): the feed-forward activation. Default: ``F.relu``.
        custom_encoder (Module, optional): an encoder to use instead of the default one.
        custom_decoder (Module, optional): a decoder to use instead of the default one.
        layer_norm_eps (float): the ``eps`` of the LayerNorms. Default: ``1e-5``.
        batch_first (bool): take and return batch-first tensors. Default: ``False``.
        norm_first (bool): pre-norm layers. Default: ``False``.
        bias (bool): whether the linear layers and LayerNorms have biases. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - ``src``: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``).
        - ``tgt``: ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``).
        - Output: the shape of ``tgt``.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 custom_encoder: Optional[Any] = None, custom_decoder: Optional[Any] = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Optional[Tensor] = None,
                tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encodes src into a memory, then decodes tgt attending to it."""
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The (sz, sz) causal mask: -inf above the diagonal, 0.0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
