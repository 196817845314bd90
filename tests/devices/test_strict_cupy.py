"""The strict CuPy double agrees with the installed CuPy (read without a GPU): the same namespace,
the same ndarray attributes and flags, CuPy's ufunc type loops; and it refuses what CuPy
refuses (implicit NumPy conversion, `__index__`, NumPy-only names)."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest

from ..parity import ORACLE_TORCH
from . import strict_cupy

SURFACE = strict_cupy.surface()


@pytest.fixture
def cp(sim_cuda):
    return strict_cupy.build()[0]


def test_double_is_pinned_to_the_installed_cupy():
    makefile = (strict_cupy.__file__.rsplit("/tests/", 1)[0] + "/Makefile")
    text = open(makefile).read()
    assert strict_cupy.CUPY_PIN in text
    assert SURFACE.version == strict_cupy.CUPY_PIN.split("==")[1]
    assert re.search(rf"^TORCH_VERSION := {re.escape(ORACLE_TORCH)}$", text, re.M)


def test_namespace_has_exactly_cupys_names(cp):
    names = {n for n in dir(cp) if not n.startswith("_")}
    assert names == set(SURFACE.namespace)
    numpy_only = sorted(set(np.__all__) - set(SURFACE.namespace) - {"random", "linalg", "fft"})
    assert "errstate" in numpy_only and "select" not in numpy_only  # CuPy has select
    for name in ("errstate", "insert", "geomspace", "nanquantile", "nditer", "unstack"):
        assert name in numpy_only
        with pytest.raises(AttributeError):
            getattr(cp, name)


def test_ndarray_has_exactly_cupys_attributes(cp):
    assert strict_cupy.public_attrs(strict_cupy.ndarray) == SURFACE.ndarray_attrs
    assert not issubclass(strict_cupy.ndarray, np.ndarray)
    x = cp.ones((2, 3))
    for missing in ("__array_interface__", "ctypes", "__index__", "resize", "setflags"):
        assert not hasattr(x, missing), missing
    flags = {n for n in dir(x.flags) if not n.startswith("_")}
    assert flags == set(SURFACE.flags_attrs)
    assert not hasattr(x.flags, "writeable")


def test_refuses_implicit_conversion_and_index(cp):
    x = cp.arange(3)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError):
        operator.index(x[0])
    assert isinstance(x.get(), np.ndarray) and x.get().tolist() == [0, 1, 2]
    assert type(x.sum()) is strict_cupy.ndarray and x.sum().shape == ()  # 0-d, not a scalar


def test_ufuncs_take_cupys_type_loops(cp):
    import cupyx.scipy.special as special

    assert special.erf.types == list(SURFACE.special_types["erf"])
    h = cp.ones(3, dtype=np.float16)
    assert special.erf(h).dtype == np.float64  # CuPy's erf has no float16 loop ('e->d')
    assert cp.sin(h).dtype == np.float16
    assert cp.add.types == list(SURFACE.ufunc_types["add"])


def test_integer_array_indices_wrap_around_as_on_cupy(cp):
    x = cp.arange(3.0)
    assert x[cp.asarray([0, 3])].get().tolist() == [0.0, 0.0]
    assert cp.take(x, cp.asarray([-4])).get().tolist() == [2.0]
    with pytest.raises(IndexError, match="Index 3 is out of bounds for axis 0 with size 3"):
        x[3]


def test_arrays_of_another_device_are_refused_as_without_peer_access(cp):
    with cp.cuda.Device(1):
        y = cp.ones(2)
    assert y.device.id == 1
    with pytest.raises(ValueError, match="is different from the current device"):
        y + 1
    with cp.cuda.Device(1):
        assert (y + 1).device.id == 1


def test_cuda_c_kernels_are_recorded_and_the_formulation_runs(sim_cuda):
    import rustgrad

    x = rustgrad.randn(4, 5, device="cuda", requires_grad=True)
    rustgrad.nn.functional.gelu(x).sum().backward()
    assert [name for name, _ in strict_cupy.KERNEL_CALLS] == ["gelu", "gelu_backward"]
    assert strict_cupy.KERNEL_CALLS[0][1] == ((4, 5),)
    expected = rustgrad.nn.functional.gelu(x.detach().cpu())
    np.testing.assert_allclose(rustgrad.nn.functional.gelu(x.detach()).cpu().numpy(),
                               expected.numpy(), rtol=1e-4, atol=1e-6)


def test_the_array_protocol_asks_only_what_numpy_and_cupy_arrays_both_have():
    from rustgrad._backends._array import Array, ArrayFlags

    def members(proto):
        return {n for n in vars(proto) if not n.startswith("_") or
                (n.startswith("__") and n.endswith("__") and n not in vars(object).keys()
                 and n not in ("__dict__", "__weakref__", "__module__", "__doc__",
                               "__annotations__", "__protocol_attrs__", "__abstractmethods__",
                               "__parameters__", "__orig_bases__", "__non_callable_proto_members__",
                               "__firstlineno__", "__static_attributes__", "__subclasshook__",
                               "__slots__", "__type_params__"))}

    wanted = members(Array)
    assert {"shape", "dtype", "flags", "astype", "__getitem__"} <= wanted
    cupy_has = SURFACE.ndarray_attrs | {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}
    assert wanted - cupy_has == set()
    assert wanted - set(dir(np.ndarray)) == set()
    assert members(ArrayFlags) <= SURFACE.flags_attrs


def test_the_fused_optimizer_kernels_are_asked_for_on_the_gpu(sim_cuda):
    import rustgrad

    w = rustgrad.randn(3, 2, device="cuda", requires_grad=True)
    for make in (lambda ps: rustgrad.optim.Adam(ps), lambda ps: rustgrad.optim.SGD(ps, lr=0.1,
                                                                                   momentum=0.9)):
        strict_cupy.KERNEL_CALLS.clear()
        opt = make([w])
        (w * w).sum().backward()
        opt.step()
        assert [name for name, _ in strict_cupy.KERNEL_CALLS] in (["adam_step_multi"], ["sgd_step"])
        assert strict_cupy.KERNEL_CALLS[0][1][0] == (3, 2)
        w.grad = None


def test_layer_norm_runs_one_kernel_each_way_on_the_gpu(sim_cuda):
    import rustgrad

    x = rustgrad.randn(4, 3, 8, device="cuda", requires_grad=True)
    ln = rustgrad.nn.LayerNorm(8).to("cuda")
    strict_cupy.KERNEL_CALLS.clear()
    ln(x).sum().backward()
    assert [n for n, _ in strict_cupy.KERNEL_CALLS] == ["layer_norm", "layer_norm_backward"]
    assert strict_cupy.KERNEL_CALLS[0][1][0] == (12, 8)  # rows of the normalized dim
    with rustgrad.enable_grad():  # double backward: the formulas in rustgrad ops, no kernel
        strict_cupy.KERNEL_CALLS.clear()
        (g,) = rustgrad.autograd.grad(ln(x).pow(2).sum(), x, create_graph=True)
        assert [n for n, _ in strict_cupy.KERNEL_CALLS] == ["layer_norm"]
        g.sum().backward()


def test_adam_updates_a_group_in_one_launch_and_matches_the_cpu(sim_cuda):
    import rustgrad

    ws = {d: [rustgrad.tensor(np.arange(6.0).reshape(2, 3) / 7 + k, device=d, requires_grad=True)
              for k in range(3)] for d in ("cpu", "cuda")}
    opts = {d: rustgrad.optim.AdamW(ws[d], lr=0.1, amsgrad=True) for d in ws}
    for step in range(3):
        strict_cupy.KERNELS.clear()
        for d in ws:
            sum((w * w * (step + 1)).sum() for w in ws[d]).backward()
            opts[d].step()
            opts[d].zero_grad()
        assert strict_cupy.KERNELS["adam_step_multi"] == 1 and not strict_cupy.KERNELS["adam_step"]
    for a, b in zip(ws["cpu"], ws["cuda"]):
        np.testing.assert_allclose(b.detach().cpu().numpy(), a.detach().numpy(), rtol=1e-12)


def test_stream_capture_has_real_cupys_names():
    """The double's capture surface (Stream.begin_capture/end_capture/is_capturing, Graph,
    the capture modes, private pools) exists on the installed CuPy, read without a GPU."""
    assert {"begin_capture", "end_capture", "is_capturing", "synchronize", "null"} <= \
        SURFACE.stream_attrs
    mine = {n for n in dir(strict_cupy.Stream) if not n.startswith("_")}
    assert {"begin_capture", "end_capture", "is_capturing"} <= mine
    assert mine - SURFACE.stream_attrs <= {"non_blocking"}  # CuPy's is is_non_blocking
    graph = {n for n in dir(strict_cupy.Graph) if not n.startswith("_")}
    assert graph == {"launch", "upload", "debug_dot_str"} and graph <= SURFACE.graph_attrs
    assert strict_cupy.CAPTURE_MODES == SURFACE.capture_modes
    assert {"Graph", "graph", "MemoryPool", "using_allocator"} <= SURFACE.submodules["cuda"]


def test_capture_records_launches_and_refuses_host_reads(cp):
    x = cp.arange(4.0)
    with pytest.raises(Exception, match="operation not permitted when stream is capturing"):
        cp.cuda.Stream.null.begin_capture()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        assert s.is_capturing() and cp.cuda.Stream.null.is_capturing() is False
        y = x * 2
        x += 1  # recorded, not run
        assert np.isnan(y._a).all() and x._a.tolist() == [0.0, 1.0, 2.0, 3.0]
        g = s.end_capture()
    strict_cupy.KERNELS.clear()
    g.launch()
    assert dict(strict_cupy.KERNELS) == {"graph_launch": 1}
    assert y.get().tolist() == [0.0, 2.0, 4.0, 6.0] and x.get().tolist() == [1.0, 2.0, 3.0, 4.0]
    g.launch()  # the same buffers, from their current contents
    assert y.get().tolist() == [2.0, 4.0, 6.0, 8.0]
    with s:
        s.begin_capture()
        with pytest.raises(Exception, match="not permitted when stream is capturing"):
            x.sum().item()
        with pytest.raises(Exception, match="previous error during capture"):
            s.end_capture()
    assert not s.is_capturing()
