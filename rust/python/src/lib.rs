//! rustgrad._core: the thin pyo3 layer over rustgrad-core.
//!
//! Argument parsing, dtype rules and docs live in Python; this module holds the mechanism:
//! tensors' autograd meta, recording a node (`record`, the one call per op into Rust), and the
//! one marked crossing from Python into the engine (`run_backward`).

mod errors;
mod node;
mod py_value;
mod tensor;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyList, PyTuple};
use rustgrad_core::{
    grad_mode, storage, Edge, Engine, ExecuteOptions, NodeBase, SavedTensor, SavedVariables,
    Storage, VersionCounter,
};

use py_value::{PyGrad, PyNode, Saved};
use tensor::{gradient_edge, new_tensor, PyTensor, TensorMeta};

/// Python functions the binding calls back, registered once by `rustgrad/__init__.py`.
pub struct Callbacks {
    pub tensor_cls: Py<PyAny>,
    pub accumulate: Py<PyAny>,
    pub describe: Py<PyAny>,
    pub can_require_grad: Py<PyAny>,
    /// The CPU array type; anything else (a NumPy scalar from an op on 0-d arrays) goes
    /// through `as_array` first.
    pub array_type: Py<PyAny>,
    pub as_array: Py<PyAny>,
}

/// `data` as an array of a backend: NumPy ops on 0-d arrays return NumPy scalars.
fn as_array<'py>(data: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = data.py();
    let cb = callbacks(py);
    if data.get_type().is(cb.array_type.bind(py)) {
        return Ok(data);
    }
    cb.as_array.bind(py).call1((data,))
}

static CALLBACKS: GILOnceCell<Callbacks> = GILOnceCell::new();

pub fn callbacks(py: Python<'_>) -> &Callbacks {
    CALLBACKS
        .get(py)
        .expect("rustgrad._core used before rustgrad registered its callbacks")
}

#[pyfunction]
fn _register(
    py: Python<'_>,
    tensor_cls: Py<PyAny>,
    accumulate: Py<PyAny>,
    describe: Py<PyAny>,
    can_require_grad: Py<PyAny>,
    array_type: Py<PyAny>,
    as_array: Py<PyAny>,
) -> PyResult<()> {
    let _ = CALLBACKS.set(
        py,
        Callbacks {
            tensor_cls,
            accumulate,
            describe,
            can_require_grad,
            array_type,
            as_array,
        },
    );
    Ok(())
}

fn device_of(inputs: &Bound<'_, PyTuple>) -> usize {
    inputs
        .iter()
        .next()
        .and_then(|t| {
            t.downcast::<PyTensor>()
                .ok()
                .and_then(|t| t.borrow().storage.as_ref().map(|s| s.device()))
        })
        .unwrap_or(0)
}

fn nbytes(data: &Bound<'_, PyAny>) -> PyResult<usize> {
    data.getattr(pyo3::intern!(data.py(), "nbytes"))?.extract()
}

/// Records one op: `data` is the forward result computed from `inputs` (the tensor arguments).
/// When grad mode is on and an input requires grad, a node named `name` is made whose backward
/// is `backward(grad, saved, ctx)`; `saved` are input tensors (or None) to keep for it, and with
/// `save_output` the output is saved last. `view_of` makes the output a view sharing the base's
/// storage and version counter. Returns the new tensor.
#[pyfunction]
#[pyo3(signature = (data, inputs, name, backward, saved=None, ctx=None, save_output=false, view_of=None))]
#[allow(clippy::too_many_arguments)]
fn record<'py>(
    py: Python<'py>,
    data: Bound<'py, PyAny>,
    inputs: &Bound<'py, PyTuple>,
    name: String,
    backward: &Bound<'py, PyAny>,
    saved: Option<&Bound<'py, PyTuple>>,
    ctx: Option<Bound<'py, PyAny>>,
    save_output: bool,
    view_of: Option<&Bound<'py, PyTensor>>,
) -> PyResult<Bound<'py, PyTensor>> {
    let data = as_array(data)?;
    let mut needs_grad = false;
    if grad_mode::is_grad_enabled() {
        for t in inputs.iter() {
            if t.downcast::<PyTensor>()?.borrow().requires_grad {
                needs_grad = true;
                break;
            }
        }
    }
    let (version, storage, base) = match view_of {
        Some(v) => {
            let b = v.borrow();
            let root = match &b.base {
                Some(r) => r.clone_ref(py),
                None => v.clone().into_any().unbind(),
            };
            (b.version.clone(), b.storage.clone(), Some(root))
        }
        None => (
            VersionCounter::new(),
            Some(Storage::new(device_of(inputs), nbytes(&data)?)),
            None,
        ),
    };
    let meta = TensorMeta {
        version,
        storage,
        requires_grad: needs_grad,
    };
    if !needs_grad {
        let out = new_tensor(py, data.unbind(), meta, None, 0)?;
        out.borrow_mut().base = base;
        return Ok(out);
    }
    let mut edges = Vec::with_capacity(inputs.len());
    for t in inputs.iter() {
        edges.push(gradient_edge(t.downcast::<PyTensor>()?));
    }
    let mut saved_values = Vec::new();
    if let Some(saved) = saved {
        saved_values.reserve(saved.len() + save_output as usize);
        for s in saved.iter() {
            if s.is_none() {
                saved_values.push(SavedTensor::new(Saved::NoneValue, VersionCounter::new(), 0));
            } else {
                let t = s.downcast::<PyTensor>()?;
                let (v, nr) = {
                    let b = t.borrow();
                    (b.version.clone(), b.output_nr)
                };
                saved_values.push(SavedTensor::new(Saved::Input(s.unbind()), v, nr));
            }
        }
    }
    if save_output {
        saved_values.push(SavedTensor::new(
            Saved::Output {
                data: data.clone().unbind(),
                meta: meta.clone(),
                output_nr: 0,
            },
            meta.version.clone(),
            0,
        ));
    }
    let node = Arc::new_cyclic(|weak| PyNode {
        base: NodeBase::new(1, edges),
        name,
        backward: backward.clone().unbind(),
        saved: SavedVariables::new(saved_values),
        ctx: ctx.map_or_else(|| py.None(), Bound::unbind),
        weak_self: weak.clone(),
    });
    let out = new_tensor(py, data.unbind(), meta, Some(node), 0)?;
    out.borrow_mut().base = base;
    Ok(out)
}

/// A leaf around `data` (factories, `tensor()`, `from_numpy`).
#[pyfunction]
#[pyo3(signature = (cls, data, requires_grad=false, device=0))]
fn make_leaf<'py>(
    cls: &Bound<'py, PyAny>,
    data: Bound<'py, PyAny>,
    requires_grad: bool,
    device: usize,
) -> PyResult<Bound<'py, PyTensor>> {
    let data = as_array(data)?;
    let meta = TensorMeta {
        version: VersionCounter::new(),
        storage: Some(Storage::new(device, nbytes(&data)?)),
        requires_grad,
    };
    tensor::new_tensor_of(cls, data.unbind(), meta, None, 0)
}

/// `detach()`: a leaf sharing data, storage and version counter. `share_version=False` gives
/// `.data`'s fresh counter.
#[pyfunction]
#[pyo3(signature = (t, share_version=true))]
fn detach<'py>(t: &Bound<'py, PyTensor>, share_version: bool) -> PyResult<Bound<'py, PyTensor>> {
    let py = t.py();
    let b = t.borrow();
    let meta = TensorMeta {
        version: if share_version {
            b.version.clone()
        } else {
            VersionCounter::new()
        },
        storage: b.storage.clone(),
        requires_grad: false,
    };
    let data = b.data.clone_ref(py);
    drop(b);
    let cls = callbacks(py).tensor_cls.bind(py);
    tensor::new_tensor_of(cls, data, meta, None, 0)
}

/// `detach_()`: drops the history in place.
#[pyfunction]
fn detach_(t: &Bound<'_, PyTensor>) -> PyResult<()> {
    let mut b = t.borrow_mut();
    if b.base.is_some() {
        return Err(PyRuntimeError::new_err(
            "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.",
        ));
    }
    if let Some(f) = b.grad_fn.take() {
        rustgrad_core::drop_deferred(f);
    }
    b.requires_grad = false;
    b.output_nr = 0;
    Ok(())
}

/// After an in-place op computed `out` from `t`: bumps `t`'s version (unless `bump_version` is
/// false, e.g. for a view whose shared counter its base's rebase already bumped) and gives it
/// `out`'s history (grad_fn, requires_grad). The caller has written `out`'s values into `t`'s
/// array.
#[pyfunction]
#[pyo3(signature = (t, out, bump_version=true))]
fn rebase_history(
    t: &Bound<'_, PyTensor>,
    out: &Bound<'_, PyTensor>,
    bump_version: bool,
) -> PyResult<()> {
    let (grad_fn, requires_grad) = {
        let o = out.borrow();
        (o.grad_fn.clone(), o.requires_grad)
    };
    let mut b = t.borrow_mut();
    if bump_version {
        b.version.bump();
    }
    if let Some(f) = grad_fn {
        // As torch: hooks registered before the in-place op stay with the old grad_fn (they see
        // the gradient of the old value); later ones go to a fresh list on the new grad_fn. The
        // retains-grad hook moves, so `.grad` is the gradient of the new value.
        b.hooks = None;
        let moved = b
            .grad_fn
            .as_ref()
            .and_then(|old| old.base().hooks.take_retains_grad(b.output_nr));
        if let Some(hook) = moved {
            f.base().hooks.set_retains_grad(0, hook);
        }
        b.grad_fn = Some(f);
        b.output_nr = 0;
        b.requires_grad = requires_grad;
    }
    Ok(())
}

/// A tensor with `t`'s history but its own copy of the values (`copy`): what an in-place op
/// saves as "self before the write".
#[pyfunction]
fn shallow_copy<'py>(
    t: &Bound<'py, PyTensor>,
    copy: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = t.py();
    let edge = gradient_edge(t);
    let b = t.borrow();
    let meta = TensorMeta {
        version: VersionCounter::new(),
        storage: Some(Storage::new(
            b.storage.as_ref().map_or(0, |s| s.device()),
            nbytes(&copy)?,
        )),
        requires_grad: b.requires_grad,
    };
    drop(b);
    let (grad_fn, nr) = match edge {
        Some(e) => (Some(e.node), e.input_nr),
        None => (None, 0),
    };
    let out = new_tensor(py, copy.unbind(), meta, None, 0)?;
    if let Some(f) = grad_fn {
        // A leaf's copy routes to the leaf's AccumulateGrad through an identity edge: keep the
        // node itself as the copy's grad_fn (it is never shown to users).
        let mut o = out.borrow_mut();
        o.grad_fn = Some(f);
        o.output_nr = nr;
    }
    Ok(out)
}

/// The one crossing from Python into the engine. Runs backward from `roots` with `grads`;
/// returns the gradients captured at `inputs` (all None when `accumulate_grad`).
#[pyfunction]
#[pyo3(signature = (roots, grads, keep_graph, create_graph, inputs, accumulate_grad))]
fn run_backward<'py>(
    py: Python<'py>,
    roots: &Bound<'py, PyTuple>,
    grads: &Bound<'py, PyTuple>,
    keep_graph: bool,
    create_graph: bool,
    inputs: &Bound<'py, PyTuple>,
    accumulate_grad: bool,
) -> PyResult<Bound<'py, PyList>> {
    let mut root_edges = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
        let t = r.downcast::<PyTensor>()?;
        match gradient_edge(t) {
            Some(e) => root_edges.push(e),
            None => {
                return Err(PyRuntimeError::new_err(format!(
                    "element {i} of tensors does not require grad and does not have a grad_fn"
                )))
            }
        }
    }
    let mut input_edges = Vec::with_capacity(inputs.len());
    for t in inputs.iter() {
        let t = t.downcast::<PyTensor>()?;
        match gradient_edge(t) {
            Some(e) => input_edges.push(e),
            None => {
                return Err(PyRuntimeError::new_err(
                    "One of the differentiated Tensors does not require grad",
                ))
            }
        }
    }
    let root_grads: Vec<PyGrad> = grads.iter().map(|g| PyGrad(g.unbind())).collect();
    let options = ExecuteOptions {
        keep_graph,
        accumulate_grad,
        inputs: input_edges,
    };
    let previous = grad_mode::set_grad_enabled(create_graph);
    let result = catch_unwind(AssertUnwindSafe(|| {
        Engine::execute(root_edges, root_grads, options)
    }));
    grad_mode::set_grad_enabled(previous);
    let captured = match result {
        Ok(r) => r.map_err(errors::to_py)?,
        Err(_) => {
            return Err(PyRuntimeError::new_err(
                "internal error in the autograd engine (a Rust panic); please report it",
            ))
        }
    };
    let items: Vec<PyObject> = captured
        .into_iter()
        .map(|g| g.map_or_else(|| py.None(), |g| g.0))
        .collect();
    PyList::new(py, items)
}

/// Edge of a tensor as (grad_fn node, input_nr), for tests of graph wiring.
#[pyfunction]
fn _gradient_edge<'py>(
    t: &Bound<'py, PyTensor>,
) -> PyResult<Option<(Bound<'py, node::PyNodeHandle>, usize)>> {
    gradient_edge(t)
        .map(|Edge { node, input_nr }| Ok((node::handle_for(t.py(), node)?, input_nr)))
        .transpose()
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    grad_mode::is_grad_enabled()
}

/// Sets grad mode; returns the previous one.
#[pyfunction]
fn set_grad_enabled(mode: bool) -> bool {
    grad_mode::set_grad_enabled(mode)
}

#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    grad_mode::is_inference_mode_enabled()
}

#[pyfunction]
fn set_inference_mode(mode: bool) -> bool {
    grad_mode::set_inference_mode(mode)
}

/// (live storages, live bytes) on a device index (0 = cpu, 1 + i = cuda:i).
#[pyfunction]
fn live_storages(device: usize) -> (i64, i64) {
    storage::live(device)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTensor>()?;
    m.add_class::<node::PyNodeHandle>()?;
    m.add_class::<tensor::PyHookHandle>()?;
    m.add_function(wrap_pyfunction!(_register, m)?)?;
    m.add_function(wrap_pyfunction!(record, m)?)?;
    m.add_function(wrap_pyfunction!(make_leaf, m)?)?;
    m.add_function(wrap_pyfunction!(detach, m)?)?;
    m.add_function(wrap_pyfunction!(detach_, m)?)?;
    m.add_function(wrap_pyfunction!(rebase_history, m)?)?;
    m.add_function(wrap_pyfunction!(shallow_copy, m)?)?;
    m.add_function(wrap_pyfunction!(run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_gradient_edge, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(live_storages, m)?)?;
    Ok(())
}
