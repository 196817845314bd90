"""rustgrad.backends.cuda: cuBLAS matmul flags (recorded; CuPy's matmul ignores them)."""

from __future__ import annotations


class cuBLASModule:
    """torch.backends.cuda.matmul: the TF32 and reduced-precision reduction flags.

    Attributes:
        allow_tf32 (bool): let float32 matmuls use TF32. Default: ``False``.
        allow_fp16_reduced_precision_reduction (bool): Default: ``True``.
        allow_bf16_reduced_precision_reduction (bool): Default: ``True``.
        allow_fp16_accumulation (bool): Default: ``False``.

    They are recorded only: CuPy's matmul does not read them.
    """

    def __init__(self) -> None:
        self.allow_tf32: bool = False
        self.allow_fp16_reduced_precision_reduction: bool = True
        self.allow_bf16_reduced_precision_reduction: bool = True
        self.allow_fp16_accumulation: bool = False


matmul = cuBLASModule()


def is_built() -> bool:
    """Whether this rustgrad can run on CUDA (CuPy is importable)."""
    import importlib.util  # import-time cost: `import rustgrad` does not load importlib.util

    return importlib.util.find_spec("cupy") is not None


def preferred_linalg_library(backend: object = None) -> str:
    """The linear algebra library: always ``"default"`` (the array library's own).

    Args:
        backend (str, optional): accepted for torch compatibility; nothing is switched.
    """
    return "default"


# scaled_dot_product_attention kernels: torch's toggles (rustgrad has one math kernel)
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled: bool) -> None:
    """Records the flash attention toggle (scaled_dot_product_attention has one kernel).

    Args:
        enabled (bool): the new value of the toggle.
    """
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """The flash attention toggle (True by default)."""
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Records the memory-efficient attention toggle (scaled_dot_product_attention has one kernel).

    Args:
        enabled (bool): the new value of the toggle.
    """
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """The memory-efficient attention toggle (True by default)."""
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    """Records the math attention toggle (scaled_dot_product_attention has one kernel).

    Args:
        enabled (bool): the new value of the toggle.
    """
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    """The math attention toggle (True by default)."""
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Records the cuDNN attention toggle (scaled_dot_product_attention has one kernel).

    Args:
        enabled (bool): the new value of the toggle.
    """
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """The cuDNN attention toggle (True by default)."""
    return _sdp["cudnn"]
