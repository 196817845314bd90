"""rustgrad.backends.cuda: cuBLAS matmul flags (recorded; CuPy's matmul ignores them)."""

from __future__ import annotations


class cuBLASModule:
    """torch.backends.cuda.matmul: the TF32 and reduced-precision reduction flags."""

    def __init__(self) -> None:
        self.allow_tf32: bool = False
        self.allow_fp16_reduced_precision_reduction: bool = True
        self.allow_bf16_reduced_precision_reduction: bool = True
        self.allow_fp16_accumulation: bool = False


matmul = cuBLASModule()


def is_built() -> bool:
    """Whether this rustgrad can run on CUDA (CuPy is importable)."""
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def preferred_linalg_library(backend: object = None) -> str:
    """The linear algebra library: always the array library's own."""
    return "default"
