"""class Tensor: torch's tensor API over a backend array and the Rust autograd meta.

Graph bookkeeping (grad_fn, version counter, storage, hooks) is in `_core.TensorBase`; the ops
are in `_ops/` and bound as methods by `_methods.py`.
"""

from __future__ import annotations

import copy as _copy
import warnings
import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from . import _backends, _core, _dtype, _memory_format, _warn_once
from ._backends import namespace_of
from ._size import Size, _wrap_dim

# rustgrad.autograd (backward, no_grad), which sits above the tensor: it sets itself here when
# imported, and `import rustgrad` imports it before any tensor exists
_autograd: Any = None


class Tensor(_core.TensorBase):
    """A tensor: an array on a device plus its autograd state (`requires_grad`, `grad_fn`...)."""

    # NumPy defers its binary operators to the Tensor's reflected ones, as for torch's tensors:
    # `np.float64(2.0) * x` is a Tensor, not an ndarray
    __array_priority__ = 1000

    # ---- data and metadata -------------------------------------------------------------
    @property
    def _backend(self) -> Any:
        return namespace_of(self._data)

    @property
    def shape(self) -> Size:
        """The size of each dimension, as a Size (a tuple).

        Example::

            >>> torch.zeros(2, 3).shape
            torch.Size([2, 3])
        """
        return Size(self._data.shape)

    def size(self, dim: Optional[int] = None) -> Union[Size, int]:
        """The shape (a Size), or the length of dimension dim (an int).

        Args:
            dim (int, optional): the dimension to measure; negative values count from the end.

        Example::

            >>> x = torch.zeros(2, 3)
            >>> x.size()
            torch.Size([2, 3])
            >>> x.size(-1)
            3
        """
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements.

        ``nelement`` is the same method under torch's older name.

        Example::

            >>> torch.zeros(2, 3).numel()
            6
        """
        return int(self._data.size)

    nelement = numel

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def dtype(self) -> _dtype.dtype:
        """The element type."""
        return _dtype.from_np(self._data.dtype)

    @property
    def device(self) -> Any:
        """The device the tensor's array lives on."""
        return self._backend.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor is on a CUDA device."""
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating point type."""
        return _dtype.is_floating_np(self._data.dtype)

    def element_size(self) -> int:
        """The size of one element in bytes.

        Example::

            >>> torch.zeros(3, dtype=torch.float64).element_size()
            8
        """
        return int(self._data.itemsize)

    def stride(self, dim: Optional[int] = None) -> Any:
        """The step in elements between entries along each dimension (or along dim).

        Args:
            dim (int, optional): return only this dimension's stride.

        Example::

            >>> x = torch.zeros(2, 3)
            >>> x.stride()
            (3, 1)
            >>> x.t().stride()
            (1, 3)
        """
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def is_contiguous(self) -> bool:
        """Whether the array is C-contiguous."""
        return bool(self._data.flags.c_contiguous)

    def data_ptr(self) -> int:
        """The address of the first element.

        A view and its base report addresses in the same memory; `detach()` shares it.
        """
        return int(self._backend.data_ptr(self._data))

    def _storage_span(self) -> tuple:
        """(the lowest address of this tensor's storage, its size in bytes): the storage is
        the memory of its base's array (its own, for a tensor that is no view)."""
        base = self._base if self._base is not None else self
        b = base._data
        low = int(self._backend.data_ptr(b))
        if b.size == 0:
            return low, 0
        # negative strides start below the first element
        low += sum((n - 1) * s for n, s in zip(b.shape, b.strides) if s < 0)
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(b.shape, b.strides)) // b.itemsize
        return low, span * b.itemsize

    def storage_offset(self) -> int:
        """Where this tensor's first element sits in its storage, counted in elements.

        A view (a slice, a select, a narrow) starts part way into its base's storage; a tensor
        that is no view starts at 0.

        Example::

            >>> x = torch.arange(12.).reshape(3, 4)
            >>> x[1:, 2:].storage_offset()
            6
        """
        if self._base is None:
            return 0
        low, _ = self._storage_span()
        return (int(self._backend.data_ptr(self._data)) - low) // int(self._data.itemsize)

    @property
    def nbytes(self) -> int:
        """The bytes of the tensor's elements: numel() * element_size() (an expanded tensor
        counts every element it shows)."""
        return int(self._data.size) * int(self._data.itemsize)

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (element_size())."""
        return int(self._data.itemsize)

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the CPU."""
        return self.device.type == "cpu"

    def get_device(self) -> int:
        """The index of the tensor's GPU, or -1 for a tensor on the CPU.

        Example::

            >>> torch.zeros(2).get_device()
            -1
        """
        dev = self.device
        return -1 if dev.type == "cpu" else int(dev.index or 0)

    def ndimension(self) -> int:
        """The number of dimensions (dim())."""
        return self._data.ndim

    # ---- torch's layout, memory-placement and identity queries --------------------------------
    @property
    def layout(self) -> Any:
        """The storage layout: always `rustgrad.strided` (no sparse layouts here)."""
        return _memory_format.strided

    @property
    def name(self) -> None:
        """torch's Variable name slot: None (nothing sets it)."""
        return None

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on torch's shape-only meta device: never here."""
        return False

    @property
    def volatile(self) -> bool:
        """Removed from torch (always False, with torch's warning): use `no_grad()`."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    def reinforce(self, reward: Any) -> None:
        """Removed from torch: raises torch's RuntimeError, which shows the
        `torch.distributions` way of writing a policy gradient."""
        raise RuntimeError(
            "reinforce() was removed.\nUse torch.distributions instead.\n"
            "See https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\n"
            "probs = policy_network(state)\naction = probs.multinomial()\n"
            "next_state, reward = env.step(action)\naction.reinforce(reward)\n"
            "action.backward()\n\nUse:\n\nprobs = policy_network(state)\n"
            "# NOTE: categorical is equivalent to what used to be called multinomial\n"
            "m = torch.distributions.Categorical(probs)\naction = m.sample()\n"
            "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\n"
            "loss.backward()\n")

    def is_distributed(self) -> bool:
        """Whether the tensor is a distributed (THD) tensor: never here."""
        return False

    def is_pinned(self, device: Any = None) -> bool:
        """Whether the tensor lives in page-locked host memory (made by `pin_memory()`)."""
        return self.device.type == "cpu" and _is_pinned_array(self._data)

    def pin_memory(self, device: Any = None) -> Tensor:
        """A copy in page-locked host memory (CuPy's pinned allocator), for faster copies to
        the GPU; self where it is pinned already. Needs CUDA, as torch's.

        Args:
            device (optional): accepted for torch's signature (deprecated there).
        """
        from . import cuda

        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        if not cuda.is_available():
            raise RuntimeError("Found no NVIDIA driver on your system. Please check that you "
                               "have an NVIDIA GPU and installed a driver from "
                               "http://www.nvidia.com/Download/index.aspx")
        import cupyx  # import cost: only for pinning, which needs CuPy anyway

        pinned = cupyx.empty_pinned(self._data.shape, self._data.dtype)
        pinned[...] = self._data
        return _wrap(pinned)

    def is_shared(self) -> bool:
        """Whether the tensor's memory can be seen by other processes: after
        `share_memory_()`, or mapped from a file with `from_file(shared=True)`; a CUDA tensor
        always can (torch's answer)."""
        return self.device.type == "cuda" or _is_shared_array(self._data)

    def share_memory_(self) -> Tensor:
        """Moves the tensor's values into shared memory (an anonymous shared mapping that
        forked workers see), in place; nothing to do where they are shared already or on CUDA.

        Example::

            >>> x = torch.arange(3.).share_memory_()
            >>> x.is_shared(), x.tolist()
            (True, [0.0, 1.0, 2.0])
        """
        if self.is_shared():
            return self
        import mmap

        nbytes = max(int(self._data.nbytes), 1)
        array = _backends.cpu.np.frombuffer(mmap.mmap(-1, nbytes), dtype=self._data.dtype,
                                            count=self._data.size).reshape(self._data.shape)
        array[...] = self._data
        self._set_data(array, int(array.nbytes))
        return self

    def record_stream(self, stream: Any) -> None:
        """Marks the tensor as used by `stream`, so its memory is not reused before that stream's
        work ends. CuPy's pool frees a block for reuse on the stream it was allocated on only;
        stream-ordered reuse elsewhere is the caller's to synchronise (see docs/gpu.md)."""
        if self.device.type != "cuda":
            raise RuntimeError("unknown parameter type")
        from . import cuda

        if not isinstance(stream, cuda.Stream):
            raise TypeError(f"record_stream(): argument 'stream' must be Stream, not "
                            f"{type(stream).__name__}")

    def const_data_ptr(self) -> int:
        """The address of the first element, for reading (data_ptr())."""
        return self.data_ptr()

    def dim_order(self, *, ambiguity_check: Any = False) -> Tuple[int, ...]:
        """The dimensions from outermost to innermost in memory (by decreasing stride).

        Example::

            >>> torch.zeros(2, 3).t().dim_order()
            (1, 0)
        """
        strides = self.stride()
        return tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))

    def module_load(self, other: Tensor, assign: bool = False) -> Tensor:
        """What `load_state_dict` swaps in for this parameter or buffer: `other.detach()` with
        assign, else `self.copy_(other).detach()` (torch's default).

        Args:
            other (Tensor): the state dict's value.
            assign (bool): load_state_dict's assign argument.
        """
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def as_subclass(self, cls: type) -> Tensor:
        """The same values as an instance of `cls` (a Tensor subclass), sharing memory and
        attached to the graph through torch's AliasBackward0.

        Example::

            >>> class Tagged(torch.Tensor):
            ...     pass
            >>> type(torch.ones(2).as_subclass(Tagged)).__name__
            'Tagged'
        """
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                            "Tensor is not possible. Make sure your class inherits from Tensor.")
        out = self[...]  # torch's alias: AliasBackward0
        out.__class__ = cls
        return out

    def _elementwise_python(self, fn_name: str) -> Any:
        """The NumPy array an apply_/map_/map2_ writes into, after torch's checks."""
        if self.requires_grad:
            raise RuntimeError(f"Can't call {fn_name}() on Variable that requires grad. Use "
                               f"var.detach().{fn_name}() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"{fn_name} is only implemented on CPU tensors")
        return self._data

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002  (torch's name)
        """Replaces each element with `callable(element)`, in place (CPU only, slow: a Python
        call per element, as torch's).

        Example::

            >>> torch.tensor([1., 2.]).apply_(lambda v: v * 10)
            tensor([10., 20.])
        """
        data = self._elementwise_python("apply_")
        for index in _backends.cpu.np.ndindex(data.shape):
            data[index] = callable(data[index].item())
        self._bump_version()
        return self

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replaces each element a with `callable(a, b)`, b from `tensor` broadcast to self's
        shape, in place (CPU only).

        Example::

            >>> torch.tensor([1., 2.]).map_(torch.tensor([3., 4.]), lambda a, b: a * b)
            tensor([3., 8.])
        """
        data = self._elementwise_python("map_")
        np = _backends.cpu.np
        other = np.broadcast_to(tensor.detach().cpu()._data, data.shape)
        for index in np.ndindex(data.shape):
            data[index] = callable(data[index].item(), other[index].item())
        self._bump_version()
        return self

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replaces each element a with `callable(a, b, c)`, b and c from x and y broadcast to
        self's shape, in place (CPU only)."""
        data = self._elementwise_python("map2_")
        np = _backends.cpu.np
        bx = np.broadcast_to(x.detach().cpu()._data, data.shape)
        by = np.broadcast_to(y.detach().cpu()._data, data.shape)
        for index in np.ndindex(data.shape):
            data[index] = callable(data[index].item(), bx[index].item(), by[index].item())
        self._bump_version()
        return self

    def untyped_storage(self) -> Any:  # an UntypedStorage (the stubs show Tensor alone)
        """The memory this tensor reads, as a minimal storage object (its bytes and address).

        A view's storage is its base's: `x[1:].untyped_storage().nbytes()` is x's byte count.

        Example::

            >>> torch.zeros(2, 3)[1].untyped_storage().nbytes()
            24
        """
        low, nbytes = self._storage_span()
        return UntypedStorage(low, nbytes, self.device)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number.

        Raises RuntimeError when the tensor has more than one element. The result is a plain
        number: it is outside autograd.

        Example::

            >>> torch.tensor([2.5]).item()
            2.5
            >>> torch.tensor(7).item()
            7
        """
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._backend.to_numpy(self._data).reshape(()).item()

    def tolist(self) -> Any:
        """The values as (nested) Python lists of numbers.

        A 0-d tensor gives a number. The result is a copy, outside autograd.

        Example::

            >>> torch.tensor([[1, 2], [3, 4]]).tolist()
            [[1, 2], [3, 4]]
            >>> torch.tensor(1.5).tolist()
            1.5
        """
        return self._backend.to_numpy(self._data).tolist()

    def numpy(self, *, force: bool = False) -> Any:
        """The tensor's values as a NumPy array (sharing memory on the CPU).

        Writes through either one are seen by the other. A tensor that requires grad must be
        detached first, and a tensor on another device copied to the CPU, unless ``force=True``
        (which copies a device tensor to host memory).

        Args:
            force (bool): detach and copy to host memory as needed instead of raising.

        Example::

            >>> torch.tensor([1.0, 2.0]).numpy()
            array([1., 2.], dtype=float32)
        """
        if self.requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        if self.device.type != "cpu" and not force:
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self._backend.to_numpy(self._data)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> Any:
        # NumPy 2's contract: copy=False must share memory or raise ValueError
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __format__(self, format_spec: str) -> str:
        # torch: a plain 0-d tensor formats as its item (f"{loss:.4f}"), anything else as object
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of this tensor's memory (zero-copy), exported by its array."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("dl_device", dl_device), ("copy", copy)) if v is not None}
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        """(DLPack device type, device index) of this tensor's memory."""
        return self._data.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA Array Interface of a CUDA tensor's memory (zero-copy, for CuPy, Numba,
        torch.as_tensor); an AttributeError on other devices, as torch's."""
        cai = getattr(self._data, "__cuda_array_interface__", None)
        if cai is None or not self.is_cuda:
            raise AttributeError(
                "Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                f"{self.type()} If CUDA data is required use tensor.cuda() to copy tensor to "
                "device memory."
            )
        if self.requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. If "
                "gradients aren't required, use var.detach() to get Variable that doesn't "
                "require grad."
            )
        return cai

    def __deepcopy__(self, memo: Dict[int, Any]) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                "because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]  # type: ignore[no-any-return]
        with _autograd.no_grad():
            new = _wrap(_deepcopy_array(self._data, memo))
        new.requires_grad = self.requires_grad
        if type(self) is not Tensor:
            new.__class__ = type(self)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        d = getattr(self, "__dict__", None)
        if d:
            new.__dict__.update(_copy.deepcopy(d, memo))
        memo[id(self)] = new
        return new

    def is_complex(self) -> bool:
        """Whether the dtype is a complex type."""
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        """Whether the dtype is signed (floating point and signed integers)."""
        return self._data.dtype.kind in "fic" or _dtype.is_floating_np(self._data.dtype)

    @property
    def is_sparse(self) -> bool:
        """Always False: rustgrad tensors are dense (strided)."""
        return False

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        from ._tensor_str import tensor_repr  # import-time cost: loaded on the first repr

        return tensor_repr(self)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self.item())

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self.requires_grad and _warn_once.due("float() of a tensor that requires grad"):
            warnings.warn(
                "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                "behavior.\nConsider using tensor.detach() first.",
                UserWarning,
                stacklevel=2,
            )
        return float(self.item())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "biu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self) -> Any:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild, (self.detach().numpy().copy(), self.requires_grad))

    # ---- autograd ----------------------------------------------------------------------
    @property
    def grad(self) -> Optional[Tensor]:
        """The gradient accumulated by backward (None until then).

        `backward()` adds into ``.grad`` of the leaves that require grad; it is not reset between
        calls (an optimizer's ``zero_grad`` does that). A non-leaf tensor's ``.grad`` stays None
        (reading it warns) unless `retain_grad()` was called on it. Assigning checks the new
        value's dtype, device and size against the tensor's.

        Example::

            >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * x).sum().backward()
            >>> x.grad
            tensor([2., 4.])
        """
        # torch reads the history as it stands: a view whose base was written warns, not raises
        if not self._is_leaf_now and not self.retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more informations. (Triggered "
                "internally at rustgrad/_tensor.py.)",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Optional[Tensor]) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            grad_dtype = self.grad_dtype
            if grad_dtype is not None and value.dtype != grad_dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_dtype.cpp_name(value.dtype)}' to a "
                    f"tensor with grad_dtype '{_dtype.scalar_type_name(grad_dtype)}'. The gradient "
                    "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
                    "the tensor's grad_dtype attribute with a specific dtype, or None to allow any "
                    "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
                    "gradient may break downstream systems that assume they match."
                )
            gdev, sdev = value.device, self.device
            if gdev.type != sdev.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{gdev.type}' to a tensor "
                    f"with device type '{sdev.type}'. Please ensure that the gradient and the "
                    "tensor are on the same device"
                )
            if gdev != sdev:
                raise RuntimeError(
                    f"attempting to assign a gradient located on device with index "
                    f"'{gdev.index}' to a tensor located on device with index '{sdev.index}'. "
                    "Please ensure that the gradient and the tensor are on the same device"
                )
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def grad_dtype(self) -> Optional[_dtype.dtype]:
        """The dtype a gradient assigned to `.grad` must have: the tensor's own unless set (None
        allows any), as torch's."""
        return self.__dict__.get("_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value: Optional[_dtype.dtype]) -> None:
        self.__dict__["_grad_dtype"] = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Sets requires_grad in place; returns self.

        Autograd starts recording operations on the tensor once it requires grad; only floating
        point (and complex) tensors can. Only a leaf can be switched off.

        Args:
            requires_grad (bool): whether autograd should record operations on this tensor.
                Default: ``True``.

        Example::

            >>> w = torch.ones(2).requires_grad_()
            >>> w.requires_grad, w.is_leaf
            (True, True)
        """
        # torch: a non-leaf may be told requires_grad_(True) (it already does); the dtype
        # refusal has its own wording here.
        if not self.is_leaf:
            if not requires_grad:
                self.requires_grad = False  # raises torch's leaf-only error, with its hint
            return self
        if requires_grad and not (self._data.dtype.kind == "c"
                                  or _dtype.is_floating_np(self._data.dtype)):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Makes backward populate .grad of this non-leaf tensor.

        By default only leaves keep their gradient; a non-leaf (the output of a recorded op)
        passes it on and forgets it. After `retain_grad()`, backward accumulates the gradient that
        reaches this tensor into its ``.grad``. On a leaf this does nothing.

        Example::

            >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
            >>> y = x * 3
            >>> y.retain_grad()
            >>> y.sum().backward()
            >>> y.grad
            tensor([1., 1.])
        """
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._is_leaf_now or self.retains_grad:  # a no_grad view: a leaf as it stands
            return
        ref = weakref.ref(self)

        def retain(grad: Tensor) -> None:
            t = ref()
            if t is None:
                return
            old = t._grad
            if old is None:
                t._grad = grad.clone() if not grad.requires_grad else grad
            else:
                t._grad = old + grad

        self._set_retains_grad(retain)

    def register_hook(self, hook: Callable[[Tensor], Optional[Tensor]]) -> Any:
        """Registers `hook(grad)`; it may return a replacement gradient. Returns a handle.

        The hook runs each time a gradient with respect to this tensor is computed during
        backward, before it is accumulated or passed on; returning a tensor (same dtype, device and
        size) replaces the gradient, returning None keeps it. The tensor must require grad. Call
        ``handle.remove()`` to unregister.

        Args:
            hook (Callable): ``hook(grad) -> Tensor or None``.

        Example::

            >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
            >>> handle = x.register_hook(lambda grad: grad * 10)
            >>> x.sum().backward()
            >>> x.grad
            tensor([10., 10.])
            >>> handle.remove()
        """
        return self._register_hook(_checked_hook(hook))  # Rust refuses a tensor without grad

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> Any:
        """Registers hook(tensor), called after .grad is accumulated.

        For a leaf tensor: the hook receives the tensor itself once backward has added into its
        ``.grad`` (an optimizer step can run there, per parameter). Its return value is ignored.
        Returns a handle with ``remove()``.

        Args:
            hook (Callable): ``hook(tensor) -> None``.
        """
        return self._register_post_accumulate_grad_hook(hook)

    def backward(
        self,
        gradient: Optional[Tensor] = None,
        retain_graph: Optional[bool] = None,
        create_graph: bool = False,
        inputs: Optional[Sequence[Tensor]] = None,
    ) -> None:
        """Computes the gradient of this tensor w.r.t. the graph's leaves.

        Runs the backward graph from this tensor and accumulates (adds) into ``.grad`` of every
        leaf that requires grad (and of non-leaves that called `retain_grad()`); existing values
        are not overwritten, so zero them between steps. The graph's saved tensors are freed
        afterwards unless ``retain_graph=True``. Same as ``rustgrad.autograd.backward(self, ...)``.

        Args:
            gradient (Tensor, optional): the gradient of some scalar w.r.t. this tensor; may be
                omitted only when the tensor has one element (it is taken as 1).
            retain_graph (bool, optional): keep the graph to run backward through it again.
                Defaults to ``create_graph``.
            create_graph (bool): record the backward pass itself, so the gradients have a graph
                (for higher-order derivatives). Default: ``False``.
            inputs (sequence of Tensor, optional): accumulate only into these tensors' ``.grad``.

        Example::

            >>> x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
            >>> (x ** 2).sum().backward()
            >>> x.grad
            tensor([2., 4., 6.])
            >>> (x ** 2).sum().backward()   # accumulates
            >>> x.grad
            tensor([ 4.,  8., 12.])
        """
        _autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A new tensor sharing the values, detached from the graph.

        The result is a leaf with ``requires_grad=False`` and no ``grad_fn``. It shares storage and
        the version counter with this tensor: in-place writes to one are seen by the other, and
        autograd still notices when a value it saved was modified through the detached tensor.

        Example::

            >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
            >>> d = x.detach()
            >>> d.requires_grad, d.grad_fn is None
            (False, True)
            >>> d.data_ptr() == x.data_ptr()
            True
        """
        return _core.detach(self)

    def detach_(self) -> Tensor:
        """Detaches this tensor from the graph, in place.

        The tensor becomes a leaf that does not require grad; returns self. A view cannot be
        detached in place.
        """
        _core.detach_(self)
        return self

    @property
    def data(self) -> Tensor:
        """The values as a tensor outside autograd (assigning replaces them).

        Reading gives a tensor that shares storage but not the version counter (unlike
        `detach()`), so in-place writes through it go unnoticed by autograd. Assigning a tensor
        swaps this tensor's values for that tensor's, keeping its autograd state.
        """
        return _core.detach(self, False)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._set_data(value._data, int(value._data.nbytes))

    @property
    def is_leaf_tensor(self) -> bool:  # pragma: no cover - alias kept for readability
        """Whether this is a leaf tensor (alias of is_leaf)."""
        return self.is_leaf


class UntypedStorage:
    """The memory under a tensor, as `Tensor.untyped_storage()` gives it: its size in bytes,
    address and device (no element access)."""

    __slots__ = ("_ptr", "_nbytes", "device")

    def __init__(self, ptr: int, nbytes: int, device: Any) -> None:
        self._ptr = ptr
        self._nbytes = nbytes
        self.device = device

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """The storage's size in bytes (an untyped storage counts bytes)."""
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def data_ptr(self) -> int:
        """The address of the storage's first byte."""
        return self._ptr

    def __repr__(self) -> str:
        return f"<rustgrad.UntypedStorage of {self._nbytes} bytes on {self.device}>"


def _array_bases(array: Any) -> Any:
    """array, then the objects whose memory it borrows, outermost first."""
    while array is not None:
        yield array
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)


def _is_pinned_array(array: Any) -> bool:
    """Whether a NumPy array's memory came from CuPy's pinned allocator."""
    return any(type(b).__name__ == "PinnedMemoryPointer" or type(b).__name__ == "PinnedMemory"
               for b in _array_bases(array))


def _is_shared_array(array: Any) -> bool:
    """Whether a NumPy array's memory is a shared mapping (share_memory_, from_file)."""
    import mmap

    for b in _array_bases(array):
        if isinstance(b, mmap.mmap):
            return True
        if type(b).__name__ == "memmap" and getattr(b, "_mmap", None) is not None:
            return getattr(b, "mode", "") in ("r+", "w+", "r")
    return False


def _wrap(array: Any, requires_grad: bool = False) -> Tensor:
    """A leaf tensor holding array."""
    backend = namespace_of(array)
    if requires_grad and not (array.dtype.kind == "c" or _dtype.is_floating_np(array.dtype)):
        raise RuntimeError(
            "Only Tensors of floating point and complex dtype can require gradients"
        )
    return _core.make_leaf(Tensor, array, requires_grad, backend.storage_slot(array))


def _rebuild(array: Any, requires_grad: bool) -> Tensor:
    """Unpickles a tensor (what `__reduce_ex__` names; `_creation._rebuild` in older pickles)."""
    return _wrap(array, requires_grad)


def _type_string(t: Tensor) -> str:
    prefix = "torch.cuda." if t.is_cuda else "torch."
    return prefix + _dtype.LEGACY_NAMES.get(t.dtype.name, t.dtype.name)


def _checked_hook(hook: Callable[[Tensor], Optional[Tensor]]) -> Callable[..., Any]:
    """`hook` with torch's checks on its replacement gradient (check_variable_result)."""

    def checked(grad: Tensor) -> Optional[Tensor]:
        new = hook(grad)
        if new is None:
            return None
        if not isinstance(new, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
        name = getattr(hook, "__name__", type(hook).__name__)
        if new._data.dtype != grad._data.dtype or new.is_cuda != grad.is_cuda:
            raise RuntimeError(
                f"hook '{name}' has changed the type of value (was {_type_string(grad)} got "
                f"{_type_string(new)})"
            )
        if new._data.shape != grad._data.shape:
            raise RuntimeError(f"hook '{name}' has changed the size of value")
        return new

    # trace_hooks shows the user's hook; only names are copied (a reference to the hook here
    # would hide it from the cycle collection of Note [GC traversal])
    checked.__name__ = getattr(hook, "__name__", checked.__name__)
    checked.__qualname__ = getattr(hook, "__qualname__", checked.__qualname__)
    return checked


def _deepcopy_array(data: Any, memo: Dict[int, Any]) -> Any:
    """A copy of data; arrays over one memory (a tensor and its views) copied in one memo share
    their copy, as torch's deepcopy shares storages."""
    root = data
    while isinstance(root.base, type(data)):
        root = root.base
    if root is data or root.dtype != data.dtype or not (
            root.flags.c_contiguous or root.flags.f_contiguous):
        return data.copy()
    copied = memo.get(id(root))
    if copied is None:
        copied = root.copy(order="K")
        memo[id(root)] = copied
        memo.setdefault(id(memo), []).append(root)  # keeps root's id from being reused
    backend = namespace_of(data)
    offset = (int(backend.data_ptr(data)) - int(backend.data_ptr(root))) // data.itemsize
    return backend.as_strided(copied.ravel(order="K")[offset:], data.shape, data.strides)
