"""torch's autocast op lists (torch 2.15, aten/src/ATen/autocast_mode.{h,cpp}), as rustgrad
names its ops: the test data that each op's own `@op(..., autocast=...)` declaration is checked
against (tests/amp/test_autocast_declarations.py).

Each list maps an op's function name (the name of the function `@op` declares) to a cast
policy:

- ``lower``: floating inputs are cast to the region's lower precision dtype;
- ``fp32``: floating inputs are cast to float32;
- ``fp32_set_opt_dtype``: ops with a ``dtype=`` argument (softmax, sum, ...): run with
  ``dtype=torch.float32`` unless one was given, when the first input is eligible;
- ``fp32_append_dtype``: norm: run with ``dtype=torch.float32``;
- ``promote``: floating inputs are cast to the widest of their dtypes;
- ``banned``: the op refuses to run in the region (binary_cross_entropy on cuda).

An input is eligible when it is a floating point tensor on the region's device type that is
not float64. torch names some ops differently (``aten::pow`` is rustgrad's ``pow``,
``pow_function`` and ``rpow``; ``matmul`` is also ``rmatmul`` for ``a @ b`` reflected); names
of torch ops that rustgrad does not have are kept, so the lists read as torch's.
"""

from __future__ import annotations

from typing import Dict, FrozenSet

LOWER = "lower"
FP32 = "fp32"
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
FP32_APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"
BANNED = "banned"

# ---- cuda (also the lists of other device types, as torch's XPU reuses them) ----------------
_CUDA_LOWER = (
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "rmatmul",
    "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
    "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "scaled_dot_product_attention",
)
_CUDA_FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "pow_function", "rpow", "softplus",
    "layer_norm", "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
    "logsumexp",
    # aten's upsample_* kernels: rustgrad's interpolate and its upsample spellings
    "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
)
_CUDA_FP32_SET_OPT_DTYPE = (
    "prod", "softmax", "log_softmax", "softmin", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "sum",
)
_CUDA_FP32_APPEND_DTYPE = ("norm",)
_CUDA_PROMOTE = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
    "index_put", "tensordot", "scatter_add",
)
_CUDA_BANNED = ("binary_cross_entropy",)

# ---- cpu -------------------------------------------------------------------------------------
_CPU_LOWER = (
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
    "linear", "matmul", "rmatmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "prelu", "scaled_dot_product_attention",
)
_CPU_FP32 = (
    "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile",
    "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
    "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "mse_loss", "cosine_embedding_loss",
    "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
    "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2",
    "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn",
    "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_matrix_rank", "linalg_solve",
    "linalg_cholesky", "linalg_svdvals", "linalg_eigvals", "linalg_eigvalsh", "linalg_inv",
    "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve", "geqrf", "qr",
    "svd", "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d",
    "adaptive_max_pool3d", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
    "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
)
_CPU_PROMOTE = ("stack", "cat", "index_copy")


def _policies(**lists: tuple) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for policy, names in lists.items():
        for name in names:
            out[name] = policy
    return out


CUDA: Dict[str, str] = _policies(
    lower=_CUDA_LOWER, fp32=_CUDA_FP32, fp32_set_opt_dtype=_CUDA_FP32_SET_OPT_DTYPE,
    fp32_append_dtype=_CUDA_FP32_APPEND_DTYPE, promote=_CUDA_PROMOTE, banned=_CUDA_BANNED)
CPU: Dict[str, str] = _policies(lower=_CPU_LOWER, fp32=_CPU_FP32, promote=_CPU_PROMOTE)

#: device type -> {op name: policy}; a device type not named here uses CUDA's lists
BY_DEVICE: Dict[str, Dict[str, str]] = {"cpu": CPU, "cuda": CUDA}

#: every op name some list names: the ops `@op` gives an autocast entry point
NAMES: FrozenSet[str] = frozenset(CUDA) | frozenset(CPU)


def policies(device_type: str) -> Dict[str, str]:
    """The {op name: policy} lists autocast applies on device_type."""
    return BY_DEVICE.get(device_type, CUDA)
