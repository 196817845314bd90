"""`ReduceOp`: how a collective combines the ranks' values (torch's names and numbering)."""

from __future__ import annotations

import enum
import warnings

__all__ = ["ReduceOp", "reduce_op"]


class RedOpType(enum.IntEnum):
    """The reduction a collective applies; torch's ``ReduceOp.RedOpType`` with its values."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class ReduceOp:
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``.

    ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX`` and the bitwise ``BAND``, ``BOR``,
    ``BXOR`` (integer and bool tensors). On bool tensors SUM is a logical or and PRODUCT a
    logical and, as torch's NCCL backend does; AVG divides the sum by the group's size
    (floating-point tensors only: on integer and bool tensors it raises torch's gloo
    RuntimeError). ``ReduceOp(ReduceOp.MAX)`` wraps an op as torch does.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.ReduceOp.SUM
        <RedOpType.SUM: 0>
        >>> dist.ReduceOp(dist.ReduceOp.MAX) == dist.ReduceOp.MAX
        True
    """

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM

    __slots__ = {"op": "The RedOpType this ReduceOp wraps."}

    def __init__(self, op: RedOpType) -> None:
        self.op = as_red_op_type(op)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ReduceOp, RedOpType)):
            return self.op == as_red_op_type(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.op)

    def __repr__(self) -> str:
        return f"ReduceOp({self.op!r})"


def as_red_op_type(op: object) -> RedOpType:
    """The RedOpType of a ReduceOp, a RedOpType or its integer value (TypeError otherwise)."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    if isinstance(op, int) and not isinstance(op, bool) and op in RedOpType._value2member_map_:
        return RedOpType(op)
    raise TypeError(f"expected a distributed.ReduceOp, got {op!r}")


class _DeprecatedReduceOp:
    """``dist.reduce_op``: torch's deprecated alias of ``ReduceOp``'s members. Each attribute
    read warns (FutureWarning, as torch) and returns the ``ReduceOp`` value.

    Example::

        >>> import warnings
        >>> from rustgrad import distributed as dist
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     dist.reduce_op.SUM == dist.ReduceOp.SUM
        True
    """

    def __init__(self) -> None:
        for name, value in RedOpType.__members__.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "__members__", RedOpType.__members__)

    def __getattribute__(self, key: str) -> object:
        if key.startswith("__") and key != "__members__":  # isinstance, inspect: no warning
            return object.__getattribute__(self, key)
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use "
                      "`torch.distributed.ReduceOp` instead", FutureWarning, stacklevel=2)
        return object.__getattribute__(self, key)


reduce_op = _DeprecatedReduceOp()
