"""Cross-rank checks of collectives: every rank of a group must call the same collective on
tensors of the same shape and dtype, or MPI reduces mismatched buffers and returns wrong values
without a word (torch's gloo too, on some ranks).

Before a collective starts, each rank sends the others a fingerprint of its call (a hash of the
operation, the tensor's shape, dtype and device, the reduce op and root where they matter, and
a per-group sequence number): one small allgather. When the fingerprints differ, every rank
gathers the others' descriptions and raises the same RuntimeError, naming itself and a rank
that differs, what each runs and how they differ (torch raises it, worded alike, only under
``TORCH_DISTRIBUTED_DEBUG=DETAIL``). No collective has started then, so a caught error leaves
the group usable.

The check runs on groups of up to `SMALL_GROUP` ranks by default (one extra small
collective per collective). The environment variable ``RUSTGRAD_DISTRIBUTED_CHECKS``, read
when a group is made, decides otherwise: ``0``/``off`` never checks, ``1``/``on`` checks
every group whatever its size, ``auto`` (or unset) is the default; unset, torch's
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` turns it on too. Every rank must see the same setting.
An ``async_op=True`` collective is checked before it is started, blocking; callers that
have checked their shapes once already (DDP verifies its parameters' shapes across ranks when
it is made) issue their collectives inside `trusted()`, which skips the check and so keeps
DDP's bucket all-reduces overlapping the backward.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

__all__ = ["ENV", "SMALL_GROUP", "check", "trusted", "wanted"]

ENV = "RUSTGRAD_DISTRIBUTED_CHECKS"
SMALL_GROUP = 8
_MAGIC = 0x5247_4350  # "RGCP": a fingerprint row, not some other rank's data
_ON = ("1", "on", "true", "yes", "all")
_OFF = ("0", "off", "false", "no", "none")


def wanted(size: int, environ: Optional[Dict[str, str]] = None) -> bool:
    """Whether a group of `size` ranks checks its collectives, under `environ` (os.environ)."""
    env = os.environ if environ is None else environ
    value = env.get(ENV, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return size > 1
    if value not in ("", "auto"):
        raise ValueError(f"{ENV}={env[ENV]!r}: expected 0/off, 1/on or auto")
    if not value and env.get("TORCH_DISTRIBUTED_DEBUG", "").strip().upper() == "DETAIL":
        return size > 1
    return 1 < size <= SMALL_GROUP


_TRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("rustgrad_trusted", default=False)


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """Collectives issued inside skip the cross-rank check (their shapes are known to agree)."""
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def _describe(op: str, tensor: Any, fields: Tuple[Tuple[str, Any], ...],
              skip_dim0: bool) -> Dict[str, Any]:
    desc: Dict[str, Any] = {"op": op}
    if tensor is not None:
        shape = tuple(int(d) for d in tensor.shape)
        if skip_dim0:  # the first dimension may differ (all_to_all_single's splits)
            desc["shape"] = ("*",) + shape[1:] if shape else shape
        else:
            desc["shape"] = shape
        desc["dtype"] = str(tensor.dtype).replace("torch.", "")
        desc["device"] = tensor.device.type
    for name, value in fields:
        if value is not None:
            desc[name] = value
    return desc


def check(pg: Any, op: str, tensor: Any = None, *fields: Tuple[str, Any],
          skip_dim0: bool = False) -> None:
    """Raises the same RuntimeError on every rank of `pg` when the ranks' calls of collective
    `op` differ (in `tensor`'s shape, dtype or device, or a (name, value) of `fields`)."""
    if not getattr(pg, "_checked", False) or _TRUSTED.get():
        return
    seq = pg._check_seq
    pg._check_seq = seq + 1
    desc = _describe(op, tensor, fields, skip_dim0)
    digest = hashlib.blake2b(repr(sorted(desc.items())).encode(), digest_size=8).digest()
    mine = np.array([_MAGIC, seq, int.from_bytes(digest, "little", signed=True)], np.int64)
    mpi = getattr(pg._impl, "mpi", pg._impl)  # NCCL's MPI communicator serves the check
    rows = mpi.allgather_fingerprint(mine, op)
    if (rows == mine).all():
        return
    # every rank sees a row unlike its own, so every rank gets here and gathers the details
    gathered: List[Tuple[int, Dict[str, Any]]] = mpi.allgather_object((seq, desc), op)
    me = pg.rank()
    other = next((r for r in range(len(gathered)) if gathered[r] != gathered[me]), None)
    if other is None:  # the fingerprints differ but the descriptions agree: a hash clash
        return
    raise RuntimeError(_message(pg, me, other, gathered))


def _show(seq: int, desc: Dict[str, Any]) -> str:
    inside = ", ".join(f"{k}={_value(v)}" for k, v in desc.items() if k != "op")
    return f"{desc['op']}(SequenceNumber={seq}{', ' if inside else ''}{inside})"


def _value(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(map(str, v)) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def _message(pg: Any, me: int, other: int, gathered: List[Tuple[int, Dict[str, Any]]]) -> str:
    ranks = pg._ranks
    (my_seq, mine), (their_seq, theirs) = gathered[me], gathered[other]
    aspects = []
    if my_seq != their_seq:
        aspects.append(f"sequence numbers {my_seq} vs {their_seq}")
    for key in dict.fromkeys(list(mine) + list(theirs)):
        a, b = mine.get(key, "-"), theirs.get(key, "-")
        if a != b:
            name = {"op": "collectives", "shape": "shapes", "dtype": "dtypes",
                    "device": "devices"}.get(key, f"{key}s")
            aspects.append(f"{name} {_value(a)} vs {_value(b)}")
    others = [ranks[r] for r in range(len(gathered)) if gathered[r] != gathered[me]]
    return (f"Detected mismatch between collectives on ranks. Rank {ranks[me]} is running "
            f"collective: {_show(my_seq, mine)}, but Rank {ranks[other]} is running collective: "
            f"{_show(their_seq, theirs)}. Collectives differ in: {'; '.join(aspects)}. "
            f"(Ranks {others} differ from rank {ranks[me]}. No rank has started the "
            f"collective. {ENV}=0 turns this check off.)")
