"""rustgrad: reverse-mode autograd with PyTorch's semantics, a Rust engine and NumPy/CuPy
kernels. `import rustgrad as torch` works for everything rustgrad supports."""

from __future__ import annotations

import builtins as _builtins
import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import (
    _backends,
    _bind,
    _core,
    autograd,
    cuda,
    memory,
    return_types,
)
from ._backends import device
from ._creation import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from ._dtype import (
    bfloat16,
    cdouble,
    cfloat,
    chalf,
    complex32,
    complex64,
    complex128,
    double,
    dtype,
    finfo,
    float,  # noqa: A004
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    int,  # noqa: A004
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from ._dtype import (
    bool_ as bool,  # noqa: A001  (torch.bool)
)
from ._dtype import result_type as _result_type
from ._legacy import (  # noqa: F401  (torch's typed constructors)
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from ._memory_format import accepting as _memory_format_accepting
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)
from ._ops._util import can_require_grad as _can_require_grad
from ._ops._util import conform as _conform
from ._ops._util import describe as _describe
from ._size import Size
from ._tensor import Tensor
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

# provenance sites are the first frames outside this package (Note [Sites], provenance.rs)
_core._set_package_dir(__path__[0] + __import__("os").sep)
_core._register(
    Tensor,
    autograd._accumulate_grad,
    _describe,
    _can_require_grad,
    _backends.cpu.ndarray,
    _backends.as_array,
    _conform,
)

# every declared op name (methods, operators, `rustgrad.<op>`), bound once, each family's when it
# is first used (_bind.py): the families cost `import rustgrad` ~100 ms
_bind.bind_tensor(Tensor)
_bind.bind_namespace(globals(), "rustgrad", "function", lazy=True)
_OP_NAMES = list(_bind._index.FUNCTION)
# torch's `*_like(..., memory_format=)` keyword (see _memory_format.py)
empty_like, zeros_like, ones_like, full_like, rand_like, randn_like, randint_like = map(
    _memory_format_accepting,
    (empty_like, zeros_like, ones_like, full_like, rand_like, randn_like, randint_like))


def is_tensor(obj: object) -> _builtins.bool:
    """Whether obj is a rustgrad Tensor."""
    return isinstance(obj, Tensor)


def is_complex(input: Tensor) -> _builtins.bool:
    """Whether input's dtype is a complex type."""
    return input.is_complex()


def is_floating_point(input: Tensor) -> _builtins.bool:
    """Whether input's dtype is a floating point type."""
    return input.is_floating_point()


def from_dlpack(ext_tensor: _Any) -> Tensor:
    """A tensor sharing memory with a DLPack-exporting array or tensor (NumPy, CuPy, torch)."""
    from .utils.dlpack import from_dlpack as _from_dlpack  # import-time cost: utils.dlpack is deferred

    return _from_dlpack(ext_tensor)


def to_dlpack(tensor: Tensor) -> _Any:
    """tensor's memory as a DLPack capsule (rustgrad.utils.dlpack.to_dlpack)."""
    from .utils.dlpack import to_dlpack as _to_dlpack  # import-time cost: utils.dlpack is deferred

    return _to_dlpack(tensor)


def is_storage(obj: object) -> _builtins.bool:
    """Whether obj is a storage (what `Tensor.untyped_storage()` returns)."""
    from ._tensor import UntypedStorage

    return isinstance(obj, UntypedStorage)


def is_nonzero(input: Tensor) -> _builtins.bool:
    """Whether the one value of a one-element tensor is not zero (Tensor.is_nonzero)."""
    return input.is_nonzero()


def is_inference(input: Tensor) -> _builtins.bool:
    """Whether input was made in inference mode (Tensor.is_inference)."""
    return input.is_inference()


def typename(obj: _Any) -> str:
    """A type's name as torch spells it: 'torch.FloatTensor' for a float32 CPU tensor, the
    qualified class name for anything else ('float', 'torch.nn.modules.linear.Linear')."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "builtins")
    name = type(obj).__qualname__
    if module == "builtins":
        return name
    if module.startswith("rustgrad"):
        module = "torch" + module[len("rustgrad"):]
    return f"{module}.{name}"


def get_device_module(device: _Any = None) -> _Any:
    """The module of a device type: rustgrad.cuda for 'cuda', rustgrad.cpu for 'cpu'; with no
    device, the current accelerator's (the cpu's where there is none)."""
    if device is None:
        kind = "cuda" if cuda.is_available() else "cpu"
    else:
        kind = device.type if isinstance(device, _backends.device) else str(device).split(":")[0]
    if kind not in ("cuda", "cpu"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'torch.{kind}'.")
    return cuda if kind == "cuda" else cpu


def thread_safe_generator() -> Generator:
    """The generator for random numbers in data-loading code: rustgrad's DataLoader workers are
    processes, each with its own default generator, so this is `default_generator`."""
    return default_generator


def numel(input: Tensor) -> _builtins.int:
    """The number of elements of input."""
    return input.numel()


def result_type(tensor1: _Any, tensor2: _Any) -> dtype:
    """The dtype torch's type promotion gives an op on these two operands."""
    return _result_type(tensor1, tensor2)


def _version() -> str:
    """The installed distribution's version (from Cargo's workspace version, through maturin)."""
    from importlib.metadata import PackageNotFoundError, version  # import-time cost (below)

    try:
        return version("rustgrad")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


# read on first use (`_lazy_submodule`): importlib.metadata costs `import rustgrad` ~30 ms
__version__: str

# reachable as attributes after `import rustgrad`, as torch.nn is after `import torch`, but
# imported on first use: nn and optim alone cost `import rustgrad` ~15 ms
_LAZY_SUBMODULES = frozenset({"distributed", "multiprocessing", "nn", "optim", "serialization",
                              "testing", "viz", "special", "linalg", "fft", "distributions",
                              "func", "profiler", "jit"})
# functions bound on first use, from the module that defines them (imported then): name ->
# module; the `if _TYPE_CHECKING:` imports below name them for type checkers and the stub
_LAZY_FUNCTIONS = {"explain": "._explain", "load": ".serialization", "save": ".serialization",
                   "from_file": ".serialization", "set_printoptions": "._tensor_str",
                   "vmap": ".func"}


def _lazy_submodule(name: str) -> _Any:
    """`rustgrad.nn`, `.optim`, `.distributed`, `.serialization`, `.testing`, `.viz` and the
    other `_LAZY_SUBMODULES`, imported on first use (as torch.nn is reachable after `import
    torch`), `explain`, `load`, `save` and `set_printoptions` bound on first use, and
    `__version__`, read on first use, so that `import rustgrad` pays nothing for them."""
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    if name in _LAZY_FUNCTIONS:
        module = _importlib.import_module(_LAZY_FUNCTIONS[name], __name__)
        globals()[name] = value = getattr(module, name)  # later uses find it directly
        return value
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    if name in _bind._index.FUNCTION:
        return _bind.lazy_function(globals(), name)
    raise AttributeError(f"module 'rustgrad' has no attribute {name!r}")


def _dir() -> list:
    """The namespace's names, with the declared functions of families not loaded yet."""
    return sorted({*globals(), *_bind._index.FUNCTION, *_LAZY_SUBMODULES, *_LAZY_FUNCTIONS})


# PEP 562; bound by assignment so that the generated stub gains no catch-all `__getattr__`
__getattr__ = _lazy_submodule
__dir__ = _dir

from . import accelerator, amp, backends, cpu, utils
from ._config import (
    are_deterministic_algorithms_enabled,
    compile,  # noqa: A004  (torch.compile returns the model: rustgrad has no compiler)
    get_default_device,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled,
    set_default_device,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_warn_always,
    use_deterministic_algorithms,
)
from .accelerator import Event, Stream
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled
from .amp.autocast_mode import (  # torch's torch.* spellings (amp is imported above anyway)
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .cuda import AcceleratorError, OutOfMemoryError

if _TYPE_CHECKING:  # bound on first use by _lazy_submodule (_LAZY_FUNCTIONS)
    from ._explain import explain
    from ._tensor_str import set_printoptions
    from .func import vmap
    from .serialization import from_file, load, save

# what `from rustgrad import *` gives and what type checkers treat as exported (mypy --strict
# re-exports nothing else): the names bound above by hand, then every declared op function
__all__ = [
    "autograd", "cuda", "memory", "nn", "optim", "return_types", "utils",
    "Tensor", "Size", "device", "dtype", "Generator",
    "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor",
    "bool", "double", "float", "float16", "float32", "float64", "half", "int", "int8", "int16",
    "int32", "int64", "long", "short", "uint8",
    "get_default_dtype", "set_default_dtype", "promote_types", "result_type",
    "arange", "as_tensor", "empty", "empty_like", "eye", "from_numpy", "full", "full_like",
    "linspace", "ones", "ones_like", "rand", "rand_like", "randint", "randint_like", "randn",
    "randn_like", "tensor", "zeros", "zeros_like",
    "initial_seed", "manual_seed", "seed",
    "enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "set_grad_enabled", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_tensor", "numel", "load", "save",
    "accelerator", "amp", "backends", "cpu", "testing", "viz", "explain",
    "bfloat16", "cdouble", "cfloat", "chalf", "complex32", "complex64", "complex128", "finfo",
    "iinfo", "default_generator", "get_rng_state", "set_rng_state",
    "are_deterministic_algorithms_enabled", "compile", "get_default_device",
    "get_deterministic_debug_mode", "get_float32_matmul_precision", "get_num_interop_threads",
    "get_num_threads", "is_deterministic_algorithms_warn_only_enabled", "set_default_device",
    "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_num_interop_threads",
    "set_num_threads", "use_deterministic_algorithms", "set_printoptions", "autocast",
    "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled",
    "set_autocast_enabled", "set_autocast_dtype", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
    "set_autocast_cpu_dtype", "set_autocast_gpu_dtype", "clear_autocast_cache",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
    "autocast_decrement_nesting",
    "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
    "is_complex", "is_floating_point", "from_dlpack", "layout", "strided", "to_dlpack",
    "is_storage", "is_nonzero", "is_inference", "typename", "get_device_module",
    "thread_safe_generator", "init_num_threads", "is_warn_always_enabled", "set_flush_denormal",
    "set_warn_always", "Event", "Stream", "GradScaler", "AcceleratorError", "OutOfMemoryError",
    "from_file", "vmap", "jit",
    *_OP_NAMES,
]
