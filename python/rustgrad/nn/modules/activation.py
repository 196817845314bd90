"""Activation modules: thin wrappers over nn.functional with torch's reprs."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
    "Tanh", "Softplus", "Softmax", "Softmin", "LogSoftmax", "Hardtanh", "Hardsigmoid",
    "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "MultiheadAttention",
]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)


class SiLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)


class SELU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise AssertionError("max_val must be greater than min_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class CELU(ELU):
    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={repr(self.approximate)}"


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _SoftmaxBase(Module):
    _check_dim = True  # torch >= 2.15 refuses a dim that is not an int (Softmin does not check)

    def __init__(self, dim: Optional[int] = None) -> None:
        if self._check_dim and dim is not None and (not isinstance(dim, int)
                                                    or isinstance(dim, bool)):
            raise TypeError(f"dim must be an int or None, got {type(dim)}")
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    _check_dim = False

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: parameters (in_proj_weight or q/k/v_proj_weight,
    in_proj_bias, out_proj, bias_k/bias_v) and initialization as torch's; forward is
    F.multi_head_attention_forward (torch's CPU fast path computes the same values)."""

    __constants__ = ["batch_first"]
    bias_k: Optional[Tensor]
    bias_v: Optional[Tensor]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        from ... import _creation
        from ..parameter import Parameter
        from .linear import NonDynamicallyQuantizableLinear

        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        super().__init__()

        def empty(*shape: int) -> Parameter:
            return Parameter(_creation.empty(shape, device=device, dtype=dtype))

        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        from .. import init

        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        is_batched = query.dim() == 3
        key_padding_mask = F._canonical_mask(key_padding_mask, "key_padding_mask",
                                             F._none_or_dtype(attn_mask), "attn_mask",
                                             query.dtype)
        attn_mask = F._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if self.batch_first and is_batched:
            # keep the `is` relations between query, key and value (self-attention packing)
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        attn_output, attn_output_weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None,
            v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), attn_output_weights
        return attn_output, attn_output_weights
