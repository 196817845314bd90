"""DistributedDataParallel: torch.nn.parallel.DistributedDataParallel over rustgrad.distributed.

Every process holds a replica of the module and runs it on its own share of the batch. At wrap
time rank 0's parameters and buffers are broadcast, so all replicas start equal. During backward
each parameter's post-accumulate-grad hook copies its gradient into a flat *bucket*; a full
bucket is all-reduced asynchronously right away, so communication overlaps the rest of backward.
When the last bucket is launched (rustgrad's engine has no end-of-backward callback queue, so
this happens in the hook that readies the last parameter) every Work is waited on and the
averaged gradients are written into ``.grad``. The optimizer step then sees equal gradients on
every rank and the replicas stay equal.

Bucketing follows torch's reducer: the first iteration puts all parameters into one bucket
(unless ``find_unused_parameters``); the order in which gradients became ready in it (rank 0's,
broadcast) then rebuilds the buckets once, a small first bucket (1 MiB, when ``bucket_cap_mb`` is
left at its default) and ``bucket_cap_mb`` after that, each holding one dtype and device.
Gradients are scaled by ``1 / world_size`` in the bucket before the sum, as torch does.

Parameters that produced no gradient make the next forward raise torch's "Expected to have
finished reduction in the prior iteration" error; rustgrad names those parameters (torch prints
their indices). With ``find_unused_parameters=True`` the graph below the forward's outputs is
walked and the parameters it does not reach are marked ready at the first hook; a parameter
unused on every rank keeps its ``.grad`` untouched (None stays None).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ... import _creation, _dtype
from ..._backends import device as _device
from ..._ops.joins import cat as _cat
from ..._tensor import Tensor
from ...autograd import is_grad_enabled, no_grad
from ...autograd._walk import graph_nodes
from ..modules.module import Module
from .data_parallel import _device_index, _moved

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


def _dist() -> Any:
    from ... import distributed  # import-time cost: `import rustgrad.nn` defers the package

    return distributed


def _compute_bucket_assignment_by_size(tensors: Sequence[Tensor], size_limits: Sequence[int],
                                       tensor_indices: Optional[Sequence[int]] = None
                                       ) -> Tuple[List[List[int]], List[int]]:
    """torch.distributed._compute_bucket_assignment_by_size for dense tensors: walks `tensors`
    (their indices are `tensor_indices`, default 0..n-1), keeps one open bucket per (dtype,
    device), and closes it once it holds at least its size limit; the limits are taken in turn,
    the last one repeating. Without `tensor_indices` the buckets are sorted by their smallest
    index. Returns (buckets of indices, each bucket's limit)."""
    indices = list(range(len(tensors))) if tensor_indices is None else list(tensor_indices)
    limits = list(size_limits)
    # per key: [indices, bytes, position in limits]
    open_: Dict[Any, List[Any]] = {}
    done: List[Tuple[List[int], int]] = []
    for t, index in zip(tensors, indices):
        key = (t.dtype, str(t.device))
        entry = open_.setdefault(key, [[], 0, 0])
        entry[0].append(index)
        entry[1] += t.numel() * t.element_size()
        limit = limits[entry[2]]
        if entry[1] >= limit:
            done.append((entry[0], limit))
            open_[key] = [[], 0, min(entry[2] + 1, len(limits) - 1)]
    for entry in open_.values():
        if entry[0]:
            done.append((entry[0], limits[entry[2]]))
    if tensor_indices is None:
        done.sort(key=lambda b: min(b[0]))
    return [b for b, _ in done], [lim for _, lim in done]


def _find_tensors(obj: Any) -> Iterator[Tensor]:
    """Every tensor inside `obj` (lists, tuples, dicts, dataclasses), as torch's DDP finds the
    outputs to walk from."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _find_tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _find_tensors(o)
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            yield from _find_tensors(getattr(obj, f.name))


def _broadcast_coalesced(tensors: Sequence[Tensor], src: int, group: Any) -> None:
    """Broadcasts `tensors` from `src` in place, one flat message per dtype and device."""
    by_key: Dict[Any, List[Tensor]] = {}
    for t in tensors:
        by_key.setdefault((t.dtype, str(t.device)), []).append(t)
    dist = _dist()
    with no_grad():
        for ts in by_key.values():
            flat = _cat([t.detach().reshape(-1) for t in ts])
            dist.broadcast(flat, src=src, group=group)
            offset = 0
            for t in ts:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view(t.shape))
                offset += n


def _verify_param_shape_across_processes(params: Sequence[Tensor], group: Any) -> None:
    """Raises on every rank when the ranks' models differ in parameter count or sizes (the
    broadcast that follows would otherwise hang or mismatch)."""
    dist = _dist()
    sizes = [float(len(params)), float(sum(p.numel() for p in params)),
             float(sum((k + 1) * p.numel() for k, p in enumerate(params)))]
    high = _creation.tensor(sizes, dtype=_dtype.float64)
    low = _creation.tensor([-v for v in sizes], dtype=_dtype.float64)
    dist.all_reduce(high, op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(low, op=dist.ReduceOp.MAX, group=group)
    if high.tolist() != [-v for v in low.tolist()]:
        raise RuntimeError(
            f"DDP expects same model across all ranks, but rank {dist.get_rank(group)} has "
            f"{len(params)} params with {int(sizes[1])} elements, and some rank differs.")


class _Bucket:
    """One flat gradient buffer: the parameters it holds (by index), their places in it, and
    the Work of its all-reduce while one is in flight."""

    def __init__(self, indices: List[int], params: Sequence[Tensor]) -> None:
        self.indices = indices
        first = params[indices[0]]
        total = sum(params[i].numel() for i in indices)
        self.flat = _creation.zeros(total, dtype=first.dtype, device=first.device)
        self.views: List[Tensor] = []
        offset = 0
        for i in indices:
            n = params[i].numel()
            self.views.append(self.flat[offset:offset + n].view(params[i].shape))
            offset += n
        self.pending = len(indices)
        self.work: Any = None


class _Reducer:
    """The gradient side of DDP: buckets, hooks, the per-iteration accounting, finalization."""

    def __init__(self, params: List[Tensor], names: List[str], group: Any, world_size: int,
                 bucket_bytes_cap: int, first_bucket_bytes_cap: int,
                 find_unused_parameters: bool, gradient_as_bucket_view: bool,
                 static_graph: bool) -> None:
        self.params = params
        self.names = names
        self.group = group
        self.world_size = world_size
        self.bucket_bytes_cap = bucket_bytes_cap
        self.first_bucket_bytes_cap = first_bucket_bytes_cap
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        if static_graph or not find_unused_parameters:
            # torch: no bucketing before the real gradient order is known
            limits = [2 ** 63 - 1]
        elif first_bucket_bytes_cap < bucket_bytes_cap:
            limits = [first_bucket_bytes_cap, bucket_bytes_cap]
        else:
            limits = [bucket_bytes_cap]
        assignment, _ = _compute_bucket_assignment_by_size(params, limits)
        # reversed: the parameters registered last produce their gradients first
        self._set_buckets(list(reversed(assignment)))
        self.has_rebuilt_buckets = False
        self.rebuilt_order: List[int] = []
        self.expect_hooks = False
        self.require_finalize = False
        self.ready: Set[int] = set()
        self.unused: List[int] = []
        self.static_unused: Optional[List[int]] = None
        # torch reduces the used-map in a static graph's first iteration only
        self.static_first = static_graph
        self.static_used: Optional[List[bool]] = None
        self.marked_unused = False
        self.local_used = [0] * len(params)
        self.next_bucket = 0
        # Works of an iteration that never finished: kept so MPI's buffers outlive them
        self._abandoned: List[Any] = []
        self.handles = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                        for i, p in enumerate(params)]

    def _set_buckets(self, assignment: List[List[int]]) -> None:
        self.buckets = [_Bucket(b, self.params) for b in assignment]
        self.locate: Dict[int, Tuple[int, int]] = {}
        for b, bucket in enumerate(self.buckets):
            for k, i in enumerate(bucket.indices):
                self.locate[i] = (b, k)

    def _hook_for(self, index: int) -> Any:
        def hook(_param: Tensor) -> None:
            self._autograd_hook(index)
        return hook

    # forward side

    def should_rebuild_buckets(self) -> bool:
        return (self.static_graph or not self.find_unused_parameters) \
            and not self.has_rebuilt_buckets

    def ensure_prior_reduction_finished(self) -> None:
        if not self.require_finalize:
            return
        missing = [i for i in range(len(self.params)) if i not in self.ready]
        self._abandoned.extend(b.work for b in self.buckets if b.work is not None)
        msg = ("Expected to have finished reduction in the prior iteration before starting a "
               "new one. This error indicates that your module has parameters that were not "
               "used in producing loss. You can enable unused parameter detection by passing "
               "the keyword argument `find_unused_parameters=True` to "
               "`rustgrad.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
               "`forward` function outputs participate in calculating loss. \nIf you already "
               "have done the above, then the distributed data parallel module wasn't able to "
               "locate the output tensors in the return value of your module's `forward` "
               "function. Please include the loss function and the structure of the return "
               "value of `forward` of your module when reporting this issue (e.g. list, dict, "
               "iterable).\n")
        if self.static_graph:
            msg = ("Expected to have finished reduction in the prior iteration before starting "
                   "a new one. This error indicates that your training graph has changed in "
                   "this iteration, e.g., one parameter is used in first iteration, but then "
                   "got unused in the second iteration. this is not compatible with "
                   "static_graph set to True.\n")
        rank = _dist().get_rank(self.group)
        msg += (f"Parameter indices which did not receive grad for rank {rank}: "
                + " ".join(str(i) for i in missing) + "\n"
                f"Parameters which did not receive grad for rank {rank}: "
                + ", ".join(self.names[i] for i in missing))
        raise RuntimeError(msg)

    def rebuild_buckets(self) -> bool:
        self.ensure_prior_reduction_finished()
        if not self.should_rebuild_buckets() or not self.rebuilt_order:
            return False
        order = self.rebuilt_order
        if self.world_size > 1:
            # every rank must bucket alike: rank 0's order wins, as torch's sync_bucket_indices
            t = _creation.tensor(order, dtype=_dtype.int64)
            _dist().broadcast(t, src=0, group=self.group)
            order = [int(i) for i in t.tolist()]
        assignment, _ = _compute_bucket_assignment_by_size(
            [self.params[i] for i in order],
            [self.first_bucket_bytes_cap, self.bucket_bytes_cap], order)
        self._set_buckets(assignment)
        self.has_rebuilt_buckets = True
        self.rebuilt_order = []
        return True

    def prepare_for_backward(self, outputs: Sequence[Tensor]) -> None:
        self.expect_hooks = True
        self.ready = set()
        self.next_bucket = 0
        for b in self.buckets:
            b.pending = len(b.indices)
            b.work = None
        self.marked_unused = False
        self.local_used = [0] * len(self.params)
        if self.static_graph and self.static_unused is not None:
            self.unused = self.static_unused
        elif self.find_unused_parameters or self.static_graph:
            self.unused = self._search_unused(outputs)
            if self.static_graph:
                self.static_unused = self.unused
        else:
            self.unused = []

    def _search_unused(self, outputs: Sequence[Tensor]) -> List[int]:
        position = {id(p): i for i, p in enumerate(self.params)}
        used: Set[int] = set()
        for node in graph_nodes(list(outputs)):
            var = getattr(node, "variable", None)
            if var is not None and id(var) in position:
                used.add(position[id(var)])
        # an output that is itself a parameter has no grad_fn to walk from
        for t in outputs:
            if id(t) in position:
                used.add(position[id(t)])
        return [i for i in range(len(self.params)) if i not in used]

    # backward side

    def _autograd_hook(self, index: int) -> None:
        if not self.expect_hooks:
            return
        if not self.marked_unused:
            self.marked_unused = True
            for i in self.unused:
                self._mark_ready(i)
        self.local_used[index] = 1
        self._mark_ready(index)
        self._progress()

    def _progress(self) -> None:
        """Lets in-flight all-reduces advance: MPI moves a nonblocking collective on only
        inside MPI calls, so every hook tests the launched buckets (torch's backends have
        threads of their own for this)."""
        for bucket in self.buckets[:self.next_bucket]:
            if bucket.work is not None and not bucket.work.is_completed():
                return

    def _mark_ready(self, index: int) -> None:
        if index in self.ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of "
                f"the following reasons: 1) Use of a module parameter outside the `forward` "
                f"function. Please make sure model parameters are not shared across multiple "
                f"concurrent forward-backward passes. or try to use _set_static_graph() as a "
                f"workaround if this module graph does not change during training loop.2) "
                f"Reused parameters in multiple reentrant backward passes. For example, if you "
                f"use multiple `checkpoint` functions to wrap the same part of your model, it "
                f"would result in the same set of parameters been used by different reentrant "
                f"backward passes multiple times, and hence marking a variable ready multiple "
                f"times. DDP does not support such use cases in default. \nParameter at index "
                f"{index} with name {self.names[index]} has been marked as ready twice. This "
                f"means that multiple autograd engine  hooks have fired for this particular "
                f"parameter during this iteration.")
        self.ready.add(index)
        self.require_finalize = True
        if self.should_rebuild_buckets():
            # the order gradients arrive in (a static graph's unused ones at the first hook)
            self.rebuilt_order.append(index)
        b, k = self.locate[index]
        bucket = self.buckets[b]
        param, view = self.params[index], bucket.views[k]
        grad = param.grad
        # on a world of one .grad already holds the answer: no copy in and out
        if self.world_size > 1 or self.gradient_as_bucket_view:
            with no_grad():
                if grad is None:
                    view.zero_()
                elif grad is not view:
                    view.copy_(grad)
                    if self.gradient_as_bucket_view:
                        param.grad = view
        bucket.pending -= 1
        if bucket.pending == 0:
            # launched in bucket order so that every rank issues the same collectives
            while self.next_bucket < len(self.buckets) \
                    and self.buckets[self.next_bucket].pending == 0:
                self._launch(self.buckets[self.next_bucket])
                self.next_bucket += 1
            if self.next_bucket == len(self.buckets):
                self._finalize()

    def _launch(self, bucket: _Bucket) -> None:
        if self.world_size == 1:
            return
        with no_grad():
            bucket.flat.mul_(1.0 / self.world_size)
        with _dist()._checks.trusted():  # shapes verified across ranks at construction
            bucket.work = _dist().all_reduce(bucket.flat, group=self.group, async_op=True)

    def _finalize(self) -> None:
        used_work = None
        used = None
        if (self.find_unused_parameters and not self.static_graph) or self.static_first:
            used = _creation.tensor(self.local_used, dtype=_dtype.int32)
            if self.world_size > 1:
                used_work = _dist().all_reduce(used, group=self.group, async_op=True)
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None
        if used_work is not None:
            used_work.wait()
        if used is not None:
            globally_used = [bool(u) for u in used.tolist()]
            if self.static_graph:
                self.static_used = globally_used  # a static graph's first answer holds
        else:
            globally_used = self.static_used or [True] * len(self.params)
        in_place = self.world_size == 1 and not self.gradient_as_bucket_view
        with no_grad():
            for bucket in self.buckets:
                for i, view in zip(bucket.indices, bucket.views):
                    if not globally_used[i]:
                        continue  # torch leaves the .grad of a parameter no rank used alone
                    param = self.params[i]
                    if in_place:
                        if param.grad is None:
                            param.grad = _creation.zeros_like(param)
                    elif self.gradient_as_bucket_view:
                        if param.grad is not view:
                            param.grad = view
                    elif param.grad is None:
                        param.grad = view.clone()
                    else:
                        param.grad.copy_(view)
        self.static_first = False
        self.expect_hooks = False
        self.require_finalize = False

class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel: data parallelism across the processes of a
    rustgrad.distributed process group.

    Wrap the model after ``rustgrad.distributed.init_process_group``; rank 0's parameters and
    buffers are copied to every rank. Each rank feeds its own share of the batch; after
    ``loss.backward()`` every parameter's ``.grad`` holds the gradient averaged over the ranks,
    all-reduced in buckets while backward was still running. ``.module`` is the wrapped module
    (state_dict keys carry the prefix ``module.``).

    Args:
        module (Module): the module to replicate.
        device_ids (list, optional): None for CPU modules; a single GPU index for a GPU module.
        output_device (int, optional): where the output goes (the one GPU of device_ids).
        dim (int): kept for torch's signature (one device per process: nothing is scattered).
        broadcast_buffers (bool): re-broadcast rank 0's buffers before each forward.
        bucket_cap_mb (float, optional): bucket size in MiB (default 25, with a 1 MiB first
            bucket as torch).
        find_unused_parameters (bool): walk the graph below the outputs each forward, so
            parameters that get no gradient do not hold the reduction back.
        gradient_as_bucket_view (bool): make each ``.grad`` a view into its bucket (saves a
            copy and memory).
        static_graph (bool): the set of used parameters never changes; found once.
        process_group: the group to reduce over (default: the whole world).

    Example (a process started alone is a world of one; under ``mpiexec -n 2`` the same lines
    average over two)::

        >>> from rustgrad import distributed as dist
        >>> from rustgrad.nn.parallel import DistributedDataParallel as DDP
        >>> dist.init_process_group("mpi")
        >>> model = DDP(nn.Linear(3, 1))
        >>> model(torch.ones(2, 3)).sum().backward()   # .grad: the mean over the ranks
        >>> model.module.weight.grad
        tensor([[2., 2., 2.]])
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
        >>> dist.destroy_process_group()
    """

    def __init__(self, module: Module, device_ids: Optional[Sequence[Any]] = None,
                 output_device: Optional[Any] = None, dim: int = 0,
                 broadcast_buffers: Optional[bool] = None, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: Optional[float] = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 forward_sync_buffers: Optional[bool] = None) -> None:
        super().__init__()
        dist = _dist()
        if process_group is None and not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        # torch keeps the group object, the default one when none is given
        self.process_group = dist.group.WORLD if process_group is None else process_group
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        named = [(n, p) for n, p in module.named_parameters() if n not in ignore]
        if not any(p.requires_grad for _, p in named):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        device_types = {p.device.type for _, p in named}
        if len(device_types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type "
                             f"of devices, but input module parameters locate in "
                             f"{device_types}.")
        self.device_type = next(iter(device_types))
        if not device_ids or self.device_type == "cpu":
            if device_ids or output_device:
                devices = {p.device for _, p in named}
                raise ValueError(
                    "DistributedDataParallel device_ids and output_device arguments only work "
                    "with single-device/multiple-device GPU modules or CPU modules, but got "
                    f"device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {devices}.")
            self.device_ids: Optional[List[int]] = None
            self.output_device: Optional[int] = None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = self.device_ids[0] if output_device is None \
                else _device_index(output_device)
        if broadcast_buffers is not None:
            warnings.warn(
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided." if forward_sync_buffers is not None else
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. "
                "IMPORTANT: unlike `broadcast_buffers=False`, `forward_sync_buffers=False` "
                "still syncs buffers at init. If you rely on buffers NOT being synced at init "
                "(e.g. rank-local buffers), keep using `broadcast_buffers=False` until "
                "`init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            self.forward_sync_buffers = True if broadcast_buffers is None else broadcast_buffers
            init_sync_buffers = self.forward_sync_buffers
        self.module = module
        self.dim = dim
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.parameters_to_ignore = ignore
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MB)
        # torch: the small first bucket only when the cap is left at its default
        first_cap = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None \
            else self.bucket_bytes_cap
        self.modules_buffers = [b for n, b in module.named_buffers() if n not in ignore]
        self.world_size = dist.get_world_size(process_group)
        trainable = [(n, p) for n, p in named if p.requires_grad]
        if init_sync and self.world_size > 1:
            _verify_param_shape_across_processes([p for _, p in trainable], process_group)
            # all replicas start from rank 0's state
            _broadcast_coalesced([p for _, p in named]
                                 + (self.modules_buffers if init_sync_buffers else []),
                                 0, process_group)
        self.reducer = _Reducer([p for _, p in trainable], [n for n, _ in trainable],
                                process_group, self.world_size, self.bucket_bytes_cap,
                                first_cap, find_unused_parameters, gradient_as_bucket_view,
                                static_graph)

    @property
    def broadcast_buffers(self) -> bool:
        """Whether buffers are broadcast from rank 0 before each forward (torch's deprecated
        name of ``forward_sync_buffers``)."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Runs the wrapped module on this rank's inputs and prepares the gradient reduction
        of the backward that follows (skipped under :meth:`no_sync` and without grad)."""
        grad_enabled = is_grad_enabled()
        if grad_enabled:
            self.reducer.rebuild_buckets()
        if self._will_sync_module_buffers():
            _broadcast_coalesced(self.modules_buffers, 0, self.process_group)
        if self.device_ids:
            target = _device(self.device_type, self.device_ids[0])
            inputs, kwargs = _moved(inputs, target), _moved(kwargs, target)
        output = self.module(*inputs, **kwargs)
        if grad_enabled and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            wants_outputs = self.find_unused_parameters or (
                self.static_graph and self.reducer.static_unused is None)
            self.reducer.prepare_for_backward(
                list(_find_tensors(output)) if wants_outputs else [])
        else:
            self.require_forward_param_sync = False
        return output

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def _will_sync_module_buffers(self) -> bool:
        return (self.require_forward_param_sync and self.forward_sync_buffers
                and len(self.modules_buffers) > 0 and self.world_size > 1)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """A context in which backward accumulates gradients locally without communication;
        the first backward after it all-reduces the accumulated sum.

        Example::

            >>> from rustgrad import distributed as dist
            >>> dist.init_process_group("mpi")
            >>> ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
            >>> with ddp.no_sync():
            ...     ddp(torch.ones(1, 3)).sum().backward()   # local only
            >>> ddp(torch.ones(1, 3)).sum().backward()   # all-reduces the sum of both
            >>> ddp.module.weight.grad
            tensor([[2., 2., 2.]])
            >>> dist.destroy_process_group()
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
