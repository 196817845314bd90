"""What the generated stubs say where the sources' annotations are looser than torch's API.

Each entry here tightens a name the sources type as `Any` (or as a union the caller cannot use,
such as `size() -> Union[Size, int]`); `tools/gen_stubs.py` reports an entry whose name no
longer exists. Better still is to tighten the annotation at the source and delete the entry.

- RETURNS: public name -> return type, wherever that name is bound (Tensor member,
  `rustgrad.<name>`, `nn.functional.<name>`) with an `Any` return.
- TensorOverrides / NamespaceOverrides: whole signatures (overloads included) for Tensor
  members and `rustgrad.<name>` functions; a docstring here is used where the source has none.
- TENSOR_EXTRA: Tensor members the stub needs although the class dict does not show them as
  hand-written functions (`__hash__` is rebound to object's by the binder).
"""

from __future__ import annotations

import builtins
from typing import Any, Iterator, Literal, Optional, SupportsIndex, Tuple, Union

from numpy.typing import NDArray
from rustgrad import return_types
from rustgrad._backends import device
from rustgrad._size import Size
from rustgrad._tensor import Tensor
from typing_extensions import overload

Number = Union[builtins.int, builtins.float, builtins.bool]

RETURNS = {
    name: Tensor
    for name in (
        "eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
        "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__invert__",
        "matmul", "__matmul__", "__rmatmul__", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
        "logical_and", "logical_or", "logical_xor", "logical_not",
    )
}
RETURNS.update(sort=return_types.sort, topk=return_types.topk)

# operators whose stub signature differs from object's on purpose (they return a Tensor)
IGNORE_OVERRIDE = {"__eq__", "__ne__"}


class TensorOverrides:
    @overload
    def size(self, dim: None = None) -> Size:
        """The shape (a Size), or the length of dimension dim (an int)."""

    @overload
    def size(self, dim: builtins.int) -> builtins.int: ...

    @overload
    def stride(self, dim: None = None) -> Tuple[builtins.int, ...]:
        """The step in elements between entries along each dimension (or along dim)."""

    @overload
    def stride(self, dim: builtins.int) -> builtins.int: ...

    def item(self) -> Number:
        """The value of a one-element tensor as a Python number."""

    def numpy(self, *, force: builtins.bool = False) -> NDArray[Any]:
        """The tensor's values as a NumPy array (sharing memory on the CPU)."""

    def __array__(self, dtype: Any = None, copy: Optional[builtins.bool] = None) -> NDArray[Any]:
        """The values as a NumPy array (NumPy's array protocol)."""

    def __iter__(self) -> Iterator[Tensor]:
        """The slices along the first dimension."""

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        """Pickling support: the values and requires_grad."""

    def __hash__(self) -> builtins.int:
        """Tensors hash by identity."""

    @property
    def device(self) -> device:
        """The device the tensor's array lives on."""

    @overload
    def max(self) -> Tensor:
        """The largest entry; over dim, (values, indices); with a tensor, the elementwise max."""

    @overload
    def max(self, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.max: ...

    @overload
    def max(self, other: Tensor) -> Tensor: ...

    @overload
    def min(self) -> Tensor:
        """The smallest entry; over dim, (values, indices); with a tensor, the elementwise min."""

    @overload
    def min(self, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.min: ...

    @overload
    def min(self, other: Tensor) -> Tensor: ...

    @overload
    def median(self) -> Tensor:
        """The lower median of all entries, or (values, indices) over dim."""

    @overload
    def median(self, dim: builtins.int, keepdim: builtins.bool = False) -> Tuple[Tensor, Tensor]: ...

    @overload
    def nonzero(self, *, as_tuple: Literal[False] = False) -> Tensor:
        """The indices of the non-zero entries (one row each, or a tuple of index tensors)."""

    @overload
    def nonzero(self, *, as_tuple: Literal[True]) -> Tuple[Tensor, ...]: ...

    @overload
    def type(self, dtype: None = None, non_blocking: builtins.bool = False) -> builtins.str:
        """The legacy type name (`torch.FloatTensor`), or a cast to the given type."""

    @overload
    def type(self, dtype: Any, non_blocking: builtins.bool = False) -> Tensor: ...

    def where(self, condition: Tensor, other: Any) -> Tensor:
        """self where condition holds, else other."""


class NamespaceOverrides:
    @staticmethod
    @overload
    def max(input: Tensor) -> Tensor:
        """The largest entry; over dim, (values, indices); with a tensor, the elementwise max."""

    @staticmethod
    @overload
    def max(input: Tensor, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.max: ...

    @staticmethod
    @overload
    def max(input: Tensor, other: Tensor) -> Tensor: ...

    @staticmethod
    @overload
    def min(input: Tensor) -> Tensor:
        """The smallest entry; over dim, (values, indices); with a tensor, the elementwise min."""

    @staticmethod
    @overload
    def min(input: Tensor, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.min: ...

    @staticmethod
    @overload
    def min(input: Tensor, other: Tensor) -> Tensor: ...

    @staticmethod
    @overload
    def median(input: Tensor) -> Tensor:
        """The lower median of all entries, or (values, indices) over dim."""

    @staticmethod
    @overload
    def median(input: Tensor, dim: builtins.int, keepdim: builtins.bool = False) -> Tuple[Tensor, Tensor]: ...

    @staticmethod
    @overload
    def nonzero(input: Tensor, *, as_tuple: Literal[False] = False) -> Tensor:
        """The indices of the non-zero entries (one row each, or a tuple of index tensors)."""

    @staticmethod
    @overload
    def nonzero(input: Tensor, *, as_tuple: Literal[True]) -> Tuple[Tensor, ...]: ...

    @staticmethod
    @overload
    def where(condition: Tensor) -> Tuple[Tensor, ...]:
        """input where condition holds, else other; with condition alone, its nonzero indices."""

    @staticmethod
    @overload
    def where(condition: Tensor, input: Any, other: Any) -> Tensor: ...


TENSOR_EXTRA = ("__hash__",)
