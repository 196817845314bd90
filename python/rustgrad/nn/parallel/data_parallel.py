"""DataParallel and data_parallel on one device.

Without a GPU, torch's DataParallel is a pass-through wrapper (`device_ids == []`) and so is this
one. With CuPy GPUs, rustgrad runs the module on `device_ids[0]` only, as torch does when given a
single device: the parameters must live there, the inputs are moved there and the output stays
there. rustgrad does not replicate a module over several GPUs; with more device ids the work still
runs on the first one (the same values, as torch's gather of the replicas' outputs gives for
modules without batch statistics).
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ... import cuda
from ..._backends import device
from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]

DeviceId = Union[int, Any]


def _gpu_count() -> int:
    return cuda.device_count() if cuda.is_available() else 0


def _device_index(device: DeviceId) -> int:
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    return 0 if index is None else int(index)


def _src_device(device_ids: Sequence[int]) -> Any:
    return device("cuda", device_ids[0])


def _moved(obj: Any, target: Any) -> Any:
    """obj with every tensor inside (tuples, lists, dicts) moved to target."""
    if isinstance(obj, Tensor):
        return obj.to(target)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_moved(o, target) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_moved(o, target) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _moved(v, target)) for k, v in obj.items())
    return obj


def _check_module_device(module: Module, src: Any) -> None:
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src:
            raise RuntimeError(
                "module must have its parameters and buffers on device "
                f"{src} (device_ids[0]) but found one of them on device: {t.device}"
            )


class DataParallel(Module):
    """torch.nn.DataParallel on one device: `.module` holds the wrapped module (state_dict keys
    gain the prefix `module.`), forward runs it."""

    def __init__(self, module: Module, device_ids: Optional[Sequence[DeviceId]] = None,
                 output_device: Optional[DeviceId] = None, dim: int = 0) -> None:
        super().__init__()
        gpus = _gpu_count()
        if gpus == 0:
            # torch without an accelerator: a pass-through, and only these two attributes
            self.module = module
            self.device_ids: List[int] = []
            return
        if device_ids is None:
            device_ids = list(range(gpus))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _src_device(self.device_ids)
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Runs the wrapped module (on device_ids[0] when there are GPUs)."""
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module, self.src_device_obj)
        return self.module(*_moved(inputs, self.src_device_obj),
                           **_moved(kwargs, self.src_device_obj))

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


def data_parallel(module: Module, inputs: Any, device_ids: Optional[Sequence[DeviceId]] = None,
                  output_device: Optional[DeviceId] = None, dim: int = 0,
                  module_kwargs: Optional[Dict[str, Any]] = None) -> Any:
    """The functional DataParallel: module(*inputs) on device_ids[0] (a GPU is required)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    gpus = _gpu_count()
    if gpus == 0:
        raise RuntimeError("device type could not be determined")
    ids = [_device_index(d) for d in (device_ids if device_ids is not None else range(gpus))]
    src = _src_device(ids)
    _check_module_device(module, src)
    args: Tuple[Any, ...] = _moved(inputs, src)
    return module(*args, **_moved(module_kwargs or {}, src))
