"""Activation modules: thin wrappers over nn.functional with torch's reprs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
    "Tanh", "Softplus", "Softmax", "Softmin", "LogSoftmax", "Hardtanh", "Hardsigmoid",
    "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "MultiheadAttention", "GLU",
    "Hardshrink", "Softshrink", "Threshold", "RReLU", "Softmax2d",
]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """Applies the rectified linear unit elementwise: ``ReLU(x) = max(0, x)``.

    Its gradient is 1 where the input is positive and 0 elsewhere (0 at 0, as torch).

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.

    Example::

        >>> m = nn.ReLU()
        >>> m(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies ReLU to ``input`` elementwise."""
        return F.relu(input, inplace=self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class SiLU(_Inplace):
    """Applies the sigmoid linear unit (swish) elementwise: ``SiLU(x) = x * sigmoid(x)``.

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies SiLU to ``input`` elementwise."""
        return F.silu(input, inplace=self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Mish(_Inplace):
    """Applies Mish elementwise: ``Mish(x) = x * tanh(softplus(x))``.

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Mish to ``input`` elementwise."""
        return F.mish(input, inplace=self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class SELU(_Inplace):
    """Applies the scaled exponential linear unit elementwise:
    ``SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))``, with
    ``alpha ~ 1.6733`` and ``scale ~ 1.0507`` (Klambauer et al., 2017).

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies SELU to ``input`` elementwise."""
        return F.selu(input, inplace=self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Hardsigmoid(_Inplace):
    """Applies the hard sigmoid elementwise: 0 for ``x <= -3``, 1 for ``x >= 3`` and
    ``x / 6 + 1 / 2`` in between.

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Hardsigmoid to ``input`` elementwise."""
        return F.hardsigmoid(input, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Hardswish(_Inplace):
    """Applies the hard swish elementwise: ``x * hardsigmoid(x)``, that is 0 for ``x <= -3``,
    ``x`` for ``x >= 3`` and ``x * (x + 3) / 6`` in between.

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Hardswish to ``input`` elementwise."""
        return F.hardswish(input, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Hardtanh(Module):
    """Clamps the input elementwise to ``[min_val, max_val]``.

    The gradient is 1 inside the range and 0 outside.

    Args:
        min_val (float): the lower bound. Default: ``-1.0``.
        max_val (float): the upper bound. Default: ``1.0``.
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise AssertionError("max_val must be greater than min_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies Hardtanh to ``input`` elementwise."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The bounds (and ``inplace=True`` when set)."""
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    """Applies ``min(max(0, x), 6)`` elementwise (Hardtanh with bounds 0 and 6).

    Args:
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, else nothing (the bounds are fixed)."""
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """Applies ``max(0, x) + negative_slope * min(0, x)`` elementwise.

    Args:
        negative_slope (float): the slope for negative inputs. Default: ``1e-2``.
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.

    Example::

        >>> nn.LeakyReLU(0.1)(torch.tensor([-2.0, 3.0]))
        tensor([-0.2000,  3.0000])
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies LeakyReLU to ``input`` elementwise."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The negative slope (and ``inplace=True`` when set)."""
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class ELU(Module):
    """Applies the exponential linear unit elementwise: ``x`` for ``x > 0`` and
    ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha (float): the scale of the negative part. Default: ``1.0``.
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Applies ELU to ``input`` elementwise."""
        return F.elu(input, self.alpha, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``alpha`` (and ``inplace=True`` when set)."""
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class CELU(ELU):
    """Applies the continuously differentiable ELU elementwise:
    ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        alpha (float): the scale of the negative part. Default: ``1.0``.
        inplace (bool): write the result into the input instead of a new tensor.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies CELU to ``input`` elementwise."""
        return F.celu(input, self.alpha, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class GELU(Module):
    """Applies the Gaussian error linear unit elementwise: ``x * Phi(x)``, where ``Phi`` is the
    standard normal CDF; with ``approximate='tanh'``,
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.

    Args:
        approximate (str): ``'none'`` (exact, with erf) or ``'tanh'``. Default: ``'none'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """Applies GELU to ``input`` elementwise."""
        return F.gelu(input, approximate=self.approximate)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The ``approximate`` setting."""
        return f"approximate={repr(self.approximate)}"


class Sigmoid(Module):
    """Applies the logistic sigmoid elementwise: ``Sigmoid(x) = 1 / (1 + exp(-x))``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.

    Example::

        >>> nn.Sigmoid()(torch.tensor([0.0]))
        tensor([0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Sigmoid to ``input`` elementwise."""
        return F.sigmoid(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Tanh(Module):
    """Applies the hyperbolic tangent elementwise.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Tanh to ``input`` elementwise."""
        return F.tanh(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LogSigmoid(Module):
    """Applies ``log(sigmoid(x))`` elementwise, computed without overflow for large ``|x|``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies LogSigmoid to ``input`` elementwise."""
        return F.logsigmoid(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Softsign(Module):
    """Applies ``x / (1 + |x|)`` elementwise.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Softsign to ``input`` elementwise."""
        return F.softsign(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Tanhshrink(Module):
    """Applies ``x - tanh(x)`` elementwise.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies Tanhshrink to ``input`` elementwise."""
        return F.tanhshrink(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Softplus(Module):
    """Applies ``log(1 + exp(beta * x)) / beta`` elementwise, a smooth approximation of ReLU.

    Where ``beta * x > threshold`` the input is returned unchanged, for numerical stability.

    Args:
        beta (float): the sharpness. Default: ``1.0``.
        threshold (float): above it the function is linear. Default: ``20.0``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """Applies Softplus to ``input`` elementwise."""
        return F.softplus(input, self.beta, self.threshold)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``beta`` and ``threshold``."""
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
    """Rescales the input along ``dim`` so that the values lie in (0, 1) and sum to 1:
    ``softmax(x)_i = exp(x_i) / sum_j exp(x_j)``.

    Args:
        dim (int): the dimension along which the values are normalized. Torch's implicit
            choice (with its deprecation warning) is used if None.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.

    Example::

        >>> nn.Softmax(dim=1)(torch.tensor([[0.0, 0.0], [0.0, 2.0]]))
        tensor([[0.5000, 0.5000],
                [0.1192, 0.8808]])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies softmax to ``input`` along ``self.dim``."""
        return F.softmax(input, self.dim, _stacklevel=5)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Softmin(_SoftmaxBase):
    """Applies softmax to ``-x`` along ``dim``: the smallest values get the largest weights.

    Args:
        dim (int): the dimension along which the values are normalized. Torch's implicit
            choice (with its deprecation warning) is used if None.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    _check_dim = False

    def forward(self, input: Tensor) -> Tensor:
        """Applies softmin to ``input`` along ``self.dim``."""
        return F.softmin(input, self.dim, _stacklevel=5)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LogSoftmax(_SoftmaxBase):
    """Applies ``log(softmax(x))`` along ``dim``, computed stably as ``x - logsumexp(x)``.

    Feed its output to :class:`NLLLoss` (or use :class:`CrossEntropyLoss`, which does both).

    Args:
        dim (int): the dimension along which the values are normalized. Torch's implicit
            choice (with its deprecation warning) is used if None.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies log-softmax to ``input`` along ``self.dim``."""
        return F.log_softmax(input, self.dim, _stacklevel=5)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al., 2017): ``Concat(head_1, ..., head_h) @ W_o.T``,
    with ``head_i = softmax(Q_i @ K_i.T / sqrt(d_k)) @ V_i`` over the projections ``Q_i``,
    ``K_i``, ``V_i`` of query, key and value.

    The projections are ``in_proj_weight`` (or ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight`` when ``kdim``/``vdim`` differ from ``embed_dim``) and ``out_proj``, as
    torch; the computation is ``F.multi_head_attention_forward``.

    Args:
        embed_dim (int): the number of features of the query (and of the output).
        num_heads (int): the number of heads; it must divide ``embed_dim``.
        dropout (float): the dropout probability on the attention weights. Default: ``0.0``.
        bias (bool): whether the projections have biases. Default: ``True``.
        add_bias_kv (bool): add a learned bias step to the keys and values. Default: ``False``.
        add_zero_attn (bool): add a step of zeros to the keys and values. Default: ``False``.
        kdim (int, optional): the number of features of the key. Default: ``embed_dim``.
        vdim (int, optional): the number of features of the value. Default: ``embed_dim``.
        batch_first (bool): take and return ``(N, L, E)`` instead of ``(L, N, E)``.
            Default: ``False``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> attn = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.randn(2, 5, 16)
        >>> out, weights = attn(x, x, x)
        >>> out.shape, weights.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 5, 5]))
    """

    __constants__ = ["batch_first"]
    bias_k: Optional[Tensor]
    bias_v: Optional[Tensor]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
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
        """Attends from ``query`` to ``key``/``value`` with ``num_heads`` heads.

        Args:
            query (Tensor): ``(L, N, E)``, ``(N, L, E)`` with ``batch_first=True``, or ``(L, E)``.
            key (Tensor): ``(S, N, kdim)`` (or batch first, or unbatched).
            value (Tensor): ``(S, N, vdim)`` (or batch first, or unbatched).
            key_padding_mask (Tensor, optional): ``(N, S)``; True (or -inf) marks keys to ignore.
            need_weights (bool): also return the attention weights. Default: ``True``.
            attn_mask (Tensor, optional): ``(L, S)`` or ``(N * num_heads, L, S)``, added to (float)
                or masking (bool, True = not allowed) the attention scores.
            average_attn_weights (bool): average the returned weights over the heads.
                Default: ``True``.
            is_causal (bool): a hint that ``attn_mask`` is the causal mask. Default: ``False``.

        Returns:
            ``(attn_output, attn_output_weights)``: the output, shaped as ``query`` with
            ``embed_dim`` features, and the weights ``(N, L, S)`` (``(N, num_heads, L, S)``
            without averaging), or None when ``need_weights`` is False.
        """
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

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class GLU(Module):
    """The gated linear unit: ``a * sigmoid(b)``, for ``a`` and ``b`` the two halves of the
    input along ``dim``.

    Args:
        dim (int): the dimension that is halved; its size must be even. Default: ``-1``.

    Example::

        >>> nn.GLU()(torch.tensor([[1., 2., 0., 0.]]))
        tensor([[0.5000, 1.0000]])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``glu(input, dim)``."""
        return F.glu(input, self.dim)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The dimension."""
        return f"dim={self.dim}"


class Hardshrink(Module):
    """Keeps the entries with ``|x| > lambd`` and zeroes the others.

    Args:
        lambd (float): the half-width of the zeroed band. Default: ``0.5``.

    Example::

        >>> nn.Hardshrink()(torch.tensor([-1., 0.2, 2.]))
        tensor([-1.,  0.,  2.])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``hardshrink(input, lambd)``."""
        return F.hardshrink(input, self.lambd)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The band's half-width."""
        return f"{self.lambd}"


class Softshrink(Module):
    """Moves each entry ``lambd`` towards 0, and zeroes those with ``|x| <= lambd``.

    Args:
        lambd (float): the shrinkage, at least 0. Default: ``0.5``.

    Example::

        >>> nn.Softshrink()(torch.tensor([-1., 0.2, 2.]))
        tensor([-0.5000,  0.0000,  1.5000])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``softshrink(input, lambd)``."""
        return F.softshrink(input, self.lambd)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The shrinkage."""
        return str(self.lambd)


class Threshold(Module):
    """Keeps the entries above ``threshold`` and replaces the others by ``value``.

    Args:
        threshold (float): entries at or below it are replaced.
        value (float): what they are replaced by.
        inplace (bool): write the result into the input. Default: ``False``.

    Example::

        >>> nn.Threshold(0.5, 9.)(torch.tensor([-1., 2.]))
        tensor([9., 2.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``threshold(input, threshold, value)``."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The threshold, the value and whether it works in place."""
        inplace = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace}"


class RReLU(Module):
    """The randomized leaky ReLU: negative entries are multiplied by a slope drawn from
    ``U(lower, upper)`` in training, and by ``(lower + upper) / 2`` in evaluation.

    Args:
        lower (float): the lower bound of the slope. Default: ``1/8``.
        upper (float): the upper bound of the slope. Default: ``1/3``.
        inplace (bool): write the result into the input. Default: ``False``.

    Example::

        >>> m = nn.RReLU(0.1, 0.3).eval()
        >>> m(torch.tensor([-1., 2.]))
        tensor([-0.2000,  2.0000])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``rrelu(input, lower, upper, training)``."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The slope's bounds and whether it works in place."""
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"


class Softmax2d(Module):
    """Softmax over the channels of each location of ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Example::

        >>> nn.Softmax2d()(torch.zeros(1, 2, 1, 1)).flatten()
        tensor([0.5000, 0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``softmax(input, dim=-3)``."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
