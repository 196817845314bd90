"""CUDA graphs with torch.cuda's calls: `CUDAGraph`, the `graph` context, `graph_pool_handle`,
`make_graphed_callables` and `is_current_stream_capturing` (all reached as ``rustgrad.cuda.*``).

Built on CuPy's stream capture (``cupy.cuda.Stream.begin_capture``/``end_capture``, which give
a ``cupy.cuda.graph.Graph``): between `CUDAGraph.capture_begin` and `capture_end` the kernels
queued on the current stream are recorded, not run, and `CUDAGraph.replay` launches them all as
one graph, reading the current contents of the same input buffers and writing into the same
output buffers. As in torch:

- capture runs on a side stream, never the default one (`graph` brings its own); replay may run
  on any stream;
- a host read of a captured tensor (``.item()``, ``.tolist()``, ``bool(t)``, printing), a host
  to device copy (``torch.tensor(...)``, random numbers, which rustgrad draws on the host) or a
  synchronize inside a capture raises CuPy's error ("operation not permitted when stream is
  capturing") and spoils the capture; warm up (run the work once or a few times on a side stream)
  before capturing, so that lazily created state such as optimizer buffers exists;
- Python scalars are baked into the graph at capture: a learning rate changed later has no
  effect on replays, and Adam/AdamW need ``capturable=True`` (their step count then lives on the
  device) or their ``step()`` raises inside a capture, as torch's does.

Memory: the arrays a capture allocates come from a private CuPy memory pool the graph owns
(``cupy.cuda.MemoryPool``, switched in with ``cupy.cuda.using_allocator`` for the capture), so a
block the graph reads or writes is never handed to a tensor outside it; when such a tensor is
freed its block goes back to that pool, which is released when the graph is `reset` or freed.
Captures given the same `pool` (a `graph_pool_handle()` or another graph's `pool()`) share one
pool, as torch's do, and should replay in the order they were captured. Tensors made before the
capture that the graph reads or writes (the static inputs, the parameters) must be kept alive by
the caller, as with torch.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from . import cuda as _cuda
from .autograd import function as _function
from .autograd import grad as _grad

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
           "is_current_stream_capturing"]

NOT_ON_DEFAULT_STREAM = ("CUDA graphs must be captured on a non-default stream. (However, after "
                         "capture, it's ok to replay them on the default stream.)")
_MODES = {"global": "streamCaptureModeGlobal", "thread_local": "streamCaptureModeThreadLocal",
          "relaxed": "streamCaptureModeRelaxed"}


is_current_stream_capturing = _cuda.is_current_stream_capturing


class _Pool:
    """A private CuPy memory pool shared by the graphs captured into it."""

    _ids = itertools.count(1)

    def __init__(self) -> None:
        self.id = next(self._ids)
        self._memory: Any = None  # the cupy.cuda.MemoryPool, made at the first capture

    def memory(self, cp: Any) -> Any:
        if self._memory is None:
            self._memory = cp.cuda.MemoryPool()
        return self._memory


class _PoolHandle(tuple):
    """The opaque token of a graph memory pool, a pair of ints as torch's; it keeps its pool
    alive."""

    _pool: _Pool

    def __new__(cls, pool: _Pool) -> _PoolHandle:
        handle = super().__new__(cls, (0, pool.id))
        handle._pool = pool
        return handle


def graph_pool_handle() -> Tuple[int, int]:
    """An opaque token naming a new graph memory pool, for `CUDAGraph.capture_begin(pool=...)`,
    `graph(pool=...)` and `make_graphed_callables(pool=...)`: captures given the same token
    share one pool."""
    return _PoolHandle(_Pool())


def _pool_of(pool: Any) -> _Pool:
    if pool is None:
        return _Pool()
    found = getattr(pool, "_pool", None)
    if not isinstance(found, _Pool):
        raise RuntimeError("CUDA graph pool: expected a token from graph_pool_handle() or "
                           f"CUDAGraph.pool(), got {pool!r}")
    return found


class CUDAGraph:
    """A CUDA graph: the kernels queued on a stream between `capture_begin` and `capture_end`,
    replayed as one launch by `replay` (see the module's notes on what a capture may do).

    Use it through `rustgrad.cuda.graph` or `rustgrad.cuda.make_graphed_callables`.

    Args:
        keep_graph (bool, optional): accepted for torch compatibility (CuPy instantiates the
            graph when the capture ends). Default: False.
    """

    def __init__(self, keep_graph: bool = False) -> None:
        self._keep_graph = bool(keep_graph)
        self._graph: Any = None  # the cupy.cuda.graph.Graph
        self._pool: Optional[_Pool] = None
        self._capturing: Any = None  # the stream being captured
        self._allocator: Optional[contextlib.ExitStack] = None
        self._debug = False

    def capture_begin(self, pool: Any = None, capture_error_mode: str = "global") -> None:
        """Starts capturing the CUDA work queued on the current stream (not the default one).

        Args:
            pool (optional): a token from `graph_pool_handle()` or another graph's `pool()`:
                this capture allocates from that pool. Default: a pool of its own.
            capture_error_mode (str, optional): "global", "thread_local" or "relaxed", CUDA's
                cudaStreamCaptureMode. Default: "global".
        """
        if capture_error_mode not in _MODES:
            raise RuntimeError("Unknown capture error mode. Expected `global`, `thread_local`, "
                               f"or `relaxed`, got {capture_error_mode}")
        if self._capturing is not None or self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance or call reset().")
        cp = _cuda._cp()
        stream = cp.cuda.get_current_stream()
        if int(stream.ptr) == 0:
            raise RuntimeError(NOT_ON_DEFAULT_STREAM)
        self._pool = _pool_of(pool)
        allocator = contextlib.ExitStack()
        allocator.enter_context(cp.cuda.using_allocator(self._pool.memory(cp).malloc))
        try:
            stream.begin_capture(mode=getattr(cp.cuda.runtime, _MODES[capture_error_mode]))
        except BaseException:
            allocator.close()
            raise
        self._capturing, self._allocator = stream, allocator

    def capture_end(self) -> None:
        """Ends the capture begun by `capture_begin`; `replay` may be called afterwards."""
        stream, allocator = self._capturing, self._allocator
        if stream is None:
            raise RuntimeError("CUDAGraph.capture_end called without a capture under way")
        self._capturing = self._allocator = None
        try:
            self._graph = stream.end_capture()
        finally:
            if allocator is not None:
                allocator.close()

    def replay(self) -> None:
        """Launches the captured work on the current stream."""
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        self._graph.launch()

    def instantiate(self) -> None:
        """Nothing to do: CuPy instantiates the graph when the capture ends."""
        if self._graph is None:
            raise RuntimeError("CUDAGraph::instantiate called without a captured graph")

    def reset(self) -> None:
        """Deletes the captured graph (and lets its private pool go)."""
        self._graph = None
        self._pool = None

    def pool(self) -> Tuple[int, int]:
        """The token of this graph's memory pool, for another capture to share it."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: this graph has no pool until capture_begin")
        return _PoolHandle(self._pool)

    def enable_debug_mode(self) -> None:
        """Keeps the graph for `debug_dump` (it always is)."""
        self._debug = True

    def debug_dump(self, debug_path: str, *, verbose: bool = True) -> None:
        """Writes the captured graph to `debug_path` in Graphviz DOT format (CuPy's
        ``Graph.debug_dot_str``)."""
        if self._graph is None:
            raise RuntimeError("CUDAGraph.debug_dump called without a captured graph")
        with open(debug_path, "w", encoding="utf-8") as f:
            f.write(self._graph.debug_dot_str())

    def __repr__(self) -> str:
        state = "captured" if self._graph is not None else (
            "capturing" if self._capturing is not None else "empty")
        return f"<rustgrad.cuda.CUDAGraph {state}>"


class graph:  # noqa: N801 - torch's name
    """A context that captures the CUDA work inside it into `cuda_graph`, for later
    ``cuda_graph.replay()``.

    Args:
        cuda_graph (CUDAGraph): the graph to capture into.
        pool (optional): a token from `graph_pool_handle()` or another graph's `pool()` to
            share its memory pool. Default: a pool of the graph's own.
        stream (rustgrad.cuda.Stream, optional): the stream to capture on; by default one side
            stream shared by every `graph` context.
        capture_error_mode (str, optional): "global", "thread_local" or "relaxed". Default:
            "global".

    Example::

        g = torch.cuda.CUDAGraph()
        static_x = torch.zeros(8, device="cuda")
        with torch.cuda.graph(g):
            static_y = static_x * 2 + 1
        static_x.copy_(torch.arange(8.0))
        g.replay()  # static_y now holds arange(8) * 2 + 1
    """

    default_capture_stream: Optional[_cuda.Stream] = None

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None,
                 stream: Optional[_cuda.Stream] = None,
                 capture_error_mode: str = "global") -> None:
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = _cuda.Stream()
        self.pool: Tuple[Any, ...] = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = _cuda.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        _cuda.synchronize()  # the work queued before the capture is done
        gc.collect()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool[0] if self.pool else None,
                                          capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.cuda_graph.capture_end()
            else:  # the block raised: end the capture and let that error through
                with contextlib.suppress(Exception):
                    self.cuda_graph.capture_end()
                self.cuda_graph.reset()
        finally:
            self.stream_ctx.__exit__(*exc)


# ---- make_graphed_callables ----------------------------------------------------------------
def _leaves(x: Any, out: List[Any]) -> Any:
    """The tensors of nested tuples/lists/dicts, in order, and the structure to rebuild it."""
    if isinstance(x, (tuple, list)):
        return (type(x), [_leaves(v, out) for v in x])
    if isinstance(x, dict):
        return (dict, [(k, _leaves(v, out)) for k, v in x.items()])
    out.append(x)
    return None


def _rebuild(spec: Any, it: Any) -> Any:
    if spec is None:
        return next(it)
    kind, items = spec
    if kind is dict:
        return {k: _rebuild(s, it) for k, s in items}
    values = [_rebuild(s, it) for s in items]
    return tuple(values) if kind is tuple else list(values)


def _is_module(c: Any) -> bool:
    return callable(getattr(c, "parameters", None)) and hasattr(c, "_forward_hooks")


_Callable = Union[Callable[..., Any], Any]


def make_graphed_callables(callables: Union[_Callable, Tuple[_Callable, ...]],
                           sample_args: Tuple[Any, ...], num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: Any = None,
                           capture_error_mode: str = "global") -> Any:
    """Graphed versions of callables (functions or nn.Modules): each runs its forward CUDA work
    as one captured graph inside one autograd node, whose backward replays a captured graph of
    the backward work. A drop-in replacement in an autograd training loop, as torch's.

    A Module is returned itself, its forward replaced (when its training mode is the one it was
    graphed in); a function is returned as a new function. Several callables, as a tuple, share
    one memory pool and must then run in the order given.

    Args:
        callables (Module or function, or a tuple of them): what to graph.
        sample_args (tuple of Tensors, or a tuple of such tuples): sample arguments of each
            callable (tensors only; their requires_grad as in the real calls).
        num_warmup_iters (int, optional): eager runs before the capture. Default: 3.
        allow_unused_input (bool, optional): whether an input the outputs do not depend on is
            allowed (its gradient is then None). Default: False.
        pool (optional): a memory pool token (`graph_pool_handle()`) to capture into.
        capture_error_mode (str, optional): as in `graph`. Default: "global".

    Returns:
        the graphed callable, or a tuple of them.
    """
    from .amp import autocast_mode

    if autocast_mode.is_autocast_enabled() and autocast_mode.is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching. "
                           "Please set `cache_enabled=False`.")
    just_one = not isinstance(callables, tuple)
    funcs: Tuple[Any, ...] = (callables,) if just_one else tuple(callables)  # type: ignore[arg-type]
    all_args: Tuple[Tuple[Any, ...], ...] = (tuple(sample_args),) if just_one else tuple(
        tuple(a) for a in sample_args)
    from ._creation import empty_like as _empty_like
    from ._tensor import Tensor

    flat_args: List[Tuple[Any, ...]] = []
    for c, args in zip(funcs, all_args):
        if _is_module(c):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed.")
            if any(b.requires_grad for b in c.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, "
                    "only parameters may be trainable. All buffers must have "
                    "``requires_grad=False``.")
        leaves: List[Any] = []
        _leaves(args, leaves)
        if not all(isinstance(a, Tensor) for a in leaves):
            raise AssertionError("In the beta API, sample_args for each callable must contain "
                                 "only Tensors. Other types are not allowed.")
        flat_args.append(tuple(leaves))
    n_user = [len(a) for a in flat_args]
    params = [tuple(c.parameters()) if _is_module(c) else () for c in funcs]
    surfaces = [flat_args[i] + params[i] for i in range(len(funcs))]
    fwd_graphs = [CUDAGraph() for _ in funcs]
    bwd_graphs = [CUDAGraph() for _ in funcs]
    mempool = graph_pool_handle() if pool is None else pool

    # warm up on the capture stream (lazily made state must not be made inside a capture)
    _cuda.synchronize()
    stream = _cuda.Stream()
    with _cuda.stream(stream):
        for func, args, surface in zip(funcs, all_args, surfaces):
            for _ in range(num_warmup_iters):
                outs: List[Any] = []
                _leaves(func(*args), outs)
                needing = tuple(o for o in outs if o.requires_grad)
                if needing:
                    _grad(needing, tuple(i for i in surface if i.requires_grad),
                          grad_outputs=tuple(_empty_like(o) for o in needing),
                          only_inputs=True, allow_unused=allow_unused_input)
    _cuda.synchronize()

    # forward graphs in order, then backward graphs in reverse order (one shared pool)
    static_outputs: List[Tuple[Any, ...]] = []
    specs: List[Any] = []
    for func, args, fwd in zip(funcs, all_args, fwd_graphs):
        with graph(fwd, pool=mempool, stream=stream, capture_error_mode=capture_error_mode):
            result = func(*args)
        outs = []
        specs.append(_leaves(result, outs))
        static_outputs.append(tuple(outs))
    static_grad_outputs: List[Tuple[Any, ...]] = []
    static_grad_inputs: List[Tuple[Any, ...]] = []
    for surface, outputs, bwd in zip(reversed(surfaces), reversed(static_outputs),
                                     reversed(bwd_graphs)):
        grad_outs = tuple(_empty_like(o) if o.requires_grad else None for o in outputs)
        needing = tuple(o for o in outputs if o.requires_grad)
        grads: Optional[Sequence[Any]] = None
        if needing:
            with graph(bwd, pool=mempool, stream=stream, capture_error_mode=capture_error_mode):
                grads = _grad(needing, tuple(i for i in surface if i.requires_grad),
                              grad_outputs=tuple(g for g in grad_outs if g is not None),
                              only_inputs=True, allow_unused=allow_unused_input)
        it = iter(grads or ())
        static_grad_inputs.append(tuple(next(it) if a.requires_grad and grads is not None
                                        else None for a in surface))
        static_grad_outputs.append(grad_outs)
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()

    ret: List[Any] = []
    for i, func in enumerate(funcs):
        graphed = _graphed_function(fwd_graphs[i], bwd_graphs[i], params[i], n_user[i], specs[i],
                                    surfaces[i], static_outputs[i], static_grad_outputs[i],
                                    static_grad_inputs[i])
        if _is_module(func):
            func.forward = _graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)


def _graphed_function(fwd_graph: CUDAGraph, bwd_graph: CUDAGraph, module_params: Tuple[Any, ...],
                      n_user: int, spec: Any, surface: Tuple[Any, ...],
                      static_outputs: Tuple[Any, ...], static_grad_outputs: Tuple[Any, ...],
                      static_grad_inputs: Tuple[Any, ...]) -> Callable[..., Any]:
    """The graphed callable: an autograd Function whose forward copies new inputs into the
    static ones and replays the forward graph, and whose backward copies the incoming gradients
    into the static ones and replays the backward graph."""

    class Graphed(_function.Function):
        @staticmethod
        def forward(ctx: Any, graphs: Tuple[CUDAGraph, CUDAGraph], *inputs: Any) -> Any:
            ctx.bwd_graph = graphs[1]
            for i in range(n_user):
                if surface[i].data_ptr() != inputs[i].data_ptr():
                    surface[i].copy_(inputs[i])
            graphs[0].replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @_function.once_differentiable
        def backward(ctx: Any, *grads: Any) -> Any:
            if len(grads) != len(static_grad_outputs):
                raise AssertionError(f"len(grads)={len(grads)} != "
                                     f"len(static_grad_outputs)={len(static_grad_outputs)}")
            for static, g in zip(static_grad_outputs, grads):
                if static is not None and g is not None and static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            ctx.bwd_graph.replay()
            # the static gradients themselves (the next replay overwrites them): the engine
            # accumulates them into .grad without keeping them
            return (None,) + tuple(None if b is None else b.detach() for b in static_grad_inputs)

    graphs = (fwd_graph, bwd_graph)

    def functionalized(*user_args: Any) -> Any:
        flat: List[Any] = []
        _leaves(user_args, flat)
        out = Graphed.apply(graphs, *(tuple(flat) + module_params))
        return _rebuild(spec, iter(out if isinstance(out, tuple) else (out,)))

    return functionalized


def _graphed_forward(module: Any, training: bool, graphed: Callable[..., Any],
                     original: Any) -> Callable[..., Any]:
    """The module's new forward: the graphed callable in the training mode it was graphed in,
    its original forward in the other. It holds the module weakly (no reference cycle)."""
    import weakref

    ref = weakref.ref(module)
    bound = getattr(original, "__self__", None) is module
    call: Any = original.__func__ if bound else original  # no reference to the module
    del original

    def forward(*args: Any, **kwargs: Any) -> Any:
        m = ref()
        if m is None:
            raise RuntimeError("the graphed module has been freed; its forward cannot be "
                               "called on its own")
        if m.training == training:
            return graphed(*args, **kwargs)
        return call(m, *args, **kwargs) if bound else call(*args, **kwargs)

    return forward
