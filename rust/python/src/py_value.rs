//! GradValue for Python tensors, the hooks that call Python, and the node that calls a Python
//! backward formula.
//!
//! Gradients travel through the engine as Python `Tensor` objects, so a formula written in
//! rustgrad ops records a graph of its own under `create_graph=True` (double backward).

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyWeakrefReference};
use rustgrad_core::{
    grad_mode, is_expandable_to, AccumulateGrad, Error, GradValue, Node, NodeBase, NodePostHook,
    NodePreHook, NodeRef, PostAccumulateHook, Result, SavedVariables, ShapeMismatch, Storage,
    TensorHook, VersionCounter,
};

use crate::errors::from_py;
use crate::provenance::{trace_hook, NodeCuts, Site};
use crate::tensor::{new_tensor, PyTensor, TensorMeta};

/// A gradient as the engine carries it: the Python tensor, and the engine's fresh mark (Note
/// [Stealing a gradient] in rust/core/src/accumulate.rs). The binding only carries the mark:
/// it is set by the engine (a sum it made) or by `PyNode::apply` for what a formula of
/// rustgrad's own made (`mark_fresh_outputs`), and a clone never has it.
#[derive(Debug)]
pub struct PyGrad(pub Py<PyAny>, bool);

impl PyGrad {
    /// A gradient someone else may hold (a root gradient, a hook's replacement): not fresh.
    pub fn new(obj: Py<PyAny>) -> Self {
        PyGrad(obj, false)
    }

    /// The tensor's storage, if the gradient is a tensor that has one.
    fn storage(&self, py: Python<'_>) -> Option<Arc<Storage>> {
        let t = self.0.bind(py).downcast::<PyTensor>().ok()?;
        let b = t.try_borrow().ok()?;
        b.storage.clone()
    }
}

impl Clone for PyGrad {
    fn clone(&self) -> Self {
        Python::with_gil(|py| PyGrad::new(self.0.clone_ref(py)))
    }
}

/// `grad.<test>().any()`: whether a Python-side elementwise test holds anywhere.
fn any_of(grad: &Bound<'_, PyAny>, test: &str) -> Result<bool> {
    grad.call_method0(test)
        .and_then(|m| m.call_method0(pyo3::intern!(grad.py(), "any")))
        .and_then(|a| a.is_truthy())
        .map_err(from_py)
}

/// What a node records of an input whose shape or dtype differs from its output's (Note
/// [Input metadata] in rust/core/src/engine.rs).
pub struct PyInputMeta {
    pub shape: Box<[usize]>,
    pub dtype: Py<PyAny>,
    /// The input is a NumPy (CPU) array: a 0-d CPU tensor met a device tensor as torch's scalar,
    /// and its gradient returns to the CPU.
    pub numpy: bool,
}

/// Whether two arrays have one shape and dtype (and are both NumPy's or both not): read from
/// NumPy's array struct for ndarrays (no Python call: this runs for every input of every
/// recorded op), by attribute otherwise.
pub fn same_shape_and_dtype(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    match (
        a.downcast::<PyUntypedArray>(),
        b.downcast::<PyUntypedArray>(),
    ) {
        (Ok(x), Ok(y)) => {
            if x.shape() != y.shape() {
                return Ok(false);
            }
            let (dx, dy) = (x.dtype(), y.dtype());
            return Ok(dx.is(&dy) || dx.is_equiv_to(&dy));
        }
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => return Ok(false),
        (Err(_), Err(_)) => {}
    }
    let py = a.py();
    let (shape, dtype) = (pyo3::intern!(py, "shape"), pyo3::intern!(py, "dtype"));
    Ok(a.getattr(shape)?.eq(b.getattr(shape)?)? && a.getattr(dtype)?.eq(b.getattr(dtype)?)?)
}

/// An array's shape and dtype, as a node records them.
pub fn input_meta_of(a: &Bound<'_, PyAny>) -> PyResult<PyInputMeta> {
    if let Ok(x) = a.downcast::<PyUntypedArray>() {
        return Ok(PyInputMeta {
            shape: x.shape().into(),
            dtype: x.dtype().into_any().unbind(),
            numpy: true,
        });
    }
    let py = a.py();
    let shape: Vec<usize> = a.getattr(pyo3::intern!(py, "shape"))?.extract()?;
    Ok(PyInputMeta {
        shape: shape.into(),
        dtype: a.getattr(pyo3::intern!(py, "dtype"))?.unbind(),
        numpy: false,
    })
}

/// Whether an array has the shape, dtype and kind (NumPy's or not) in `meta`; else its shape.
fn conforms_to(a: &Bound<'_, PyAny>, meta: &PyInputMeta) -> PyResult<(bool, Vec<usize>)> {
    let py = a.py();
    let (shape, dtype_ok) = match a.downcast::<PyUntypedArray>() {
        Ok(x) => {
            let d = x.dtype();
            let want = meta.dtype.bind(py);
            let ok = meta.numpy
                && (d.is(want)
                    || want
                        .downcast::<numpy::PyArrayDescr>()
                        .is_ok_and(|w| d.is_equiv_to(w)));
            (x.shape().to_vec(), ok)
        }
        Err(_) if meta.numpy => {
            let shape: Vec<usize> = a.getattr(pyo3::intern!(py, "shape"))?.extract()?;
            (shape, false)
        }
        Err(_) => {
            let shape: Vec<usize> = a.getattr(pyo3::intern!(py, "shape"))?.extract()?;
            let ok = a
                .getattr(pyo3::intern!(py, "dtype"))?
                .eq(meta.dtype.bind(py))?;
            (shape, ok)
        }
    };
    Ok((dtype_ok && *shape == *meta.shape, shape))
}

impl GradValue for PyGrad {
    type InputMeta = PyInputMeta;

    /// Note [Input metadata]: a gradient of another shape or dtype than its input's goes
    /// through `rustgrad._ops._util.conform` (rustgrad ops, so double backward sees them). What
    /// it makes is a buffer of this backward's own, fresh unless a graph is being recorded.
    fn conform(self, meta: &PyInputMeta) -> Result<std::result::Result<Self, ShapeMismatch>> {
        Python::with_gil(|py| {
            let grad = self.0.bind(py);
            let Ok(t) = grad.downcast::<PyTensor>() else {
                return Ok(Ok(self));
            };
            let data = t
                .try_borrow()
                .map_err(|e| from_py(e.into()))?
                .data
                .clone_ref(py);
            let (ok, shape) = conforms_to(data.bind(py), meta).map_err(from_py)?;
            if ok {
                return Ok(Ok(self));
            }
            if !is_expandable_to(&meta.shape, &shape) {
                return Ok(Err(ShapeMismatch {
                    got: shape,
                    expected: meta.shape.to_vec(),
                }));
            }
            let conform = &crate::callbacks::callbacks(py).conform;
            let wanted = PyTuple::new(py, meta.shape.iter()).map_err(from_py)?;
            let out = conform
                .bind(py)
                .call1((grad, wanted, meta.dtype.bind(py), meta.numpy))
                .map_err(from_py)?;
            let fresh = if out.is(grad) {
                self.1
            } else {
                !grad_mode::is_grad_enabled()
            };
            Ok(Ok(PyGrad(out.unbind(), fresh)))
        })
    }

    fn add(&self, other: &Self) -> Result<Self> {
        Python::with_gil(|py| {
            self.0
                .bind(py)
                .add(other.0.bind(py))
                .map(|r| PyGrad::new(r.unbind()))
                .map_err(from_py)
        })
    }

    /// Anomaly mode's check (Note [Hook order], step 7): `grad.isnan().any()`.
    fn has_nan(&self) -> Result<bool> {
        Python::with_gil(|py| any_of(self.0.bind(py), "isnan"))
    }

    /// The cheap anomaly mode's check: scanned in Rust for contiguous float32/float64 NumPy
    /// arrays, else `isnan().any()` / `isinf().any()` in Python (CuPy, float16, strided).
    fn non_finite(&self) -> Result<Option<&'static str>> {
        Python::with_gil(|py| {
            let obj = self.0.bind(py);
            if let Ok(t) = obj.downcast::<PyTensor>() {
                let data = t
                    .try_borrow()
                    .map_err(|e| from_py(e.into()))?
                    .data
                    .clone_ref(py);
                if let Ok(found) = crate::provenance::non_finite_in(data.bind(py)) {
                    return Ok(found);
                }
            }
            for (method, kind) in [("isnan", "nan"), ("isinf", "inf")] {
                if any_of(obj, method)? {
                    return Ok(Some(kind));
                }
            }
            Ok(None)
        })
    }

    fn is_fresh(&self) -> bool {
        self.1
    }

    fn set_fresh(&mut self, fresh: bool) {
        self.1 = fresh;
    }

    /// Tensors share a buffer when they share a storage (views and detach()es do); anything
    /// else only when it is the same object.
    fn shares_buffer(&self, other: &Self) -> bool {
        if self.0.is(&other.0) {
            return true;
        }
        Python::with_gil(|py| match (self.storage(py), other.storage(py)) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a, &b),
            _ => false,
        })
    }
}

/// The gradients as the tuple a node hook sees: None where none arrived.
fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<PyGrad>]) -> Result<Bound<'py, PyTuple>> {
    let items: Vec<PyObject> = grads
        .iter()
        .map(|g| g.as_ref().map_or_else(|| py.None(), |g| g.0.clone_ref(py)))
        .collect();
    PyTuple::new(py, items).map_err(from_py)
}

/// The name torch's node-hook errors give a hook: its `__name__`, else "<unknown>" (a callable
/// object, a `functools.partial`).
fn hook_name(hook: &Bound<'_, PyAny>) -> String {
    hook.getattr("__name__")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "<unknown>".to_string())
}

/// torch's `check_variable_result` on a node hook's replacement `new` for `old`: the same
/// dtype and device, and the same shape (a replacement of another shape would otherwise be
/// broadcast into the next formula or summed into `.grad`).
fn check_replacement(hook: &Bound<'_, PyAny>, old: &PyGrad, new: &Bound<'_, PyAny>) -> Result<()> {
    let py = hook.py();
    let old = old.0.bind(py);
    let same = |attr: &Bound<'_, pyo3::types::PyString>| -> Result<bool> {
        let (a, b) = (
            old.getattr(attr).map_err(from_py)?,
            new.getattr(attr).map_err(from_py)?,
        );
        a.eq(b).map_err(from_py)
    };
    if !same(pyo3::intern!(py, "dtype"))? || !same(pyo3::intern!(py, "is_cuda"))? {
        let type_string = py
            .import("rustgrad._tensor")
            .and_then(|m| m.getattr("_type_string"))
            .map_err(from_py)?;
        let ts = |t: &Bound<'_, PyAny>| -> Result<String> {
            type_string
                .call1((t,))
                .and_then(|s| s.extract::<String>())
                .map_err(from_py)
        };
        return Err(from_py(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the type of value (was {} got {})",
            hook_name(hook),
            ts(old)?,
            ts(new)?
        ))));
    }
    if !same(pyo3::intern!(py, "shape"))? {
        return Err(from_py(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the size of value",
            hook_name(hook)
        ))));
    }
    Ok(())
}

/// What a node hook returned, checked as torch's `check_result`: None, or a tuple of as many
/// tensors-or-None as it was given (`given`), each tensor replacing one of the same dtype,
/// device and shape.
fn hook_result(
    hook: &Bound<'_, PyAny>,
    res: Bound<'_, PyAny>,
    given: &[Option<PyGrad>],
) -> Result<Option<Vec<Option<PyGrad>>>> {
    let expected = given.len();
    if res.is_none() {
        return Ok(None);
    }
    let tensor_cls = crate::callbacks::callbacks(res.py())
        .tensor_cls
        .bind(res.py());
    let Ok(tuple) = res.downcast::<PyTuple>() else {
        let ty = res
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(from_py(PyTypeError::new_err(format!(
            "expected tuple, but hook returned '{ty}'"
        ))));
    };
    if tuple.len() != expected {
        return Err(from_py(PyRuntimeError::new_err(format!(
            "hook '{}' has returned an incorrect number of values (got {}, but expected {expected})",
            hook_name(hook),
            tuple.len()
        ))));
    }
    let mut out = Vec::with_capacity(expected);
    for (item, old) in tuple.iter().zip(given) {
        if item.is_none() {
            out.push(None);
        } else if item.is_instance(tensor_cls).map_err(from_py)? {
            if let Some(old) = old {
                check_replacement(hook, old, &item)?;
            }
            out.push(Some(PyGrad::new(item.unbind())));
        } else {
            let ty = item
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            return Err(from_py(PyTypeError::new_err(format!(
                "expected Variable or None (got {ty})"
            ))));
        }
    }
    Ok(Some(out))
}

/// `grad_fn.register_prehook(fn)`: fn(grad_outputs) -> None or a replacement tuple.
pub struct PyNodePreHook(pub Py<PyAny>);

impl NodePreHook<PyGrad> for PyNodePreHook {
    fn call(&self, grad_outputs: &[Option<PyGrad>]) -> Result<Option<Vec<Option<PyGrad>>>> {
        Python::with_gil(|py| {
            let hook = self.0.bind(py);
            let grads = grads_tuple(py, grad_outputs)?;
            trace_hook(py, "node_pre", hook, &grads).map_err(from_py)?;
            let res = hook.call1((grads,)).map_err(from_py)?;
            hook_result(hook, res, grad_outputs)
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `grad_fn.register_hook(fn)`: fn(grad_inputs, grad_outputs) -> None or a replacement tuple
/// for grad_inputs.
pub struct PyNodePostHook(pub Py<PyAny>);

impl NodePostHook<PyGrad> for PyNodePostHook {
    fn call(
        &self,
        grad_inputs: &[Option<PyGrad>],
        grad_outputs: &[Option<PyGrad>],
    ) -> Result<Option<Vec<Option<PyGrad>>>> {
        Python::with_gil(|py| {
            let hook = self.0.bind(py);
            let inputs = grads_tuple(py, grad_inputs)?;
            trace_hook(py, "node_post", hook, &inputs).map_err(from_py)?;
            let res = hook
                .call1((inputs, grads_tuple(py, grad_outputs)?))
                .map_err(from_py)?;
            hook_result(hook, res, grad_inputs)
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `tensor.register_hook(fn)`: fn(grad) -> None or a replacement.
pub struct PyTensorHook(pub Py<PyAny>);

impl TensorHook<PyGrad> for PyTensorHook {
    fn call(&self, grad: &PyGrad) -> Result<Option<PyGrad>> {
        Python::with_gil(|py| {
            let hook = self.0.bind(py);
            trace_hook(py, "tensor", hook, grad.0.bind(py)).map_err(from_py)?;
            let out = hook.call1((grad.0.bind(py),)).map_err(from_py)?;
            Ok(if out.is_none() {
                None
            } else {
                Some(PyGrad::new(out.unbind()))
            })
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `tensor.register_post_accumulate_grad_hook(fn)`: fn(tensor), after `.grad` was updated.
/// Holds the tensor weakly: the tensor owns the hook list.
pub struct PyPostAccumulateHook {
    pub func: Py<PyAny>,
    pub tensor: Py<PyWeakrefReference>,
}

impl PostAccumulateHook for PyPostAccumulateHook {
    fn call(&self) -> Result<()> {
        Python::with_gil(|py| {
            let tensor =
                self.tensor.bind(py).upgrade().ok_or_else(|| {
                    Error::runtime("tensor of a post-accumulate-grad hook is gone")
                })?;
            let hook = self.func.bind(py);
            trace_hook(py, "post_accumulate", hook, &tensor).map_err(from_py)?;
            hook.call1((tensor,)).map_err(from_py)?;
            Ok(())
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a node saved: an input tensor itself, or its own output as data plus meta (never the
/// output tensor object, which owns this node: see lib.rs of the core), or, under
/// `saved_tensors_hooks`, what the pack hook returned.
pub enum Saved {
    /// An input tensor; `non_leaf`: it had a grad_fn when saved (a later `detach_()` of it is
    /// refused at unpacking, as torch's).
    Input(Py<PyAny>, bool),
    Output {
        data: Py<PyAny>,
        meta: TensorMeta,
        output_nr: usize,
    },
    /// Packed by a saved-tensor hook: unpacking calls `unpack(packed)` and gives the result the
    /// saved tensor's place in the graph (`origin`). Versions are not checked, as torch's.
    Packed {
        packed: Py<PyAny>,
        unpack: Py<PyAny>,
        origin: Origin,
    },
    NoneValue,
}

/// Where an unpacked tensor sits in the graph: what the saved tensor was.
#[derive(Clone)]
pub enum Origin {
    /// Did not require grad.
    Plain,
    /// A non-leaf: output `output_nr` of `node`.
    Node {
        node: NodeRef<PyGrad>,
        output_nr: usize,
    },
    /// A leaf that requires grad: gradients go to its AccumulateGrad.
    Leaf(Arc<AccumulateGrad<PyGrad>>),
    /// Output `output_nr` of the node that saved it (held weakly, as `Saved::Output`).
    SelfOutput { output_nr: usize },
}

impl Clone for Saved {
    fn clone(&self) -> Self {
        Python::with_gil(|py| match self {
            Saved::Input(t, non_leaf) => Saved::Input(t.clone_ref(py), *non_leaf),
            Saved::Output {
                data,
                meta,
                output_nr,
            } => Saved::Output {
                data: data.clone_ref(py),
                meta: meta.clone(),
                output_nr: *output_nr,
            },
            Saved::Packed {
                packed,
                unpack,
                origin,
            } => Saved::Packed {
                packed: packed.clone_ref(py),
                unpack: unpack.clone_ref(py),
                origin: origin.clone(),
            },
            Saved::NoneValue => Saved::NoneValue,
        })
    }
}

/// A node whose backward is a Python function `backward(grad, saved, ctx)`; `grad` is one tensor
/// (or a tuple for several outputs), `saved` the tuple of unpacked saved tensors; it returns one
/// gradient per input (a tuple, or the bare gradient for a single input).
pub struct PyNode {
    pub base: NodeBase<PyGrad>,
    /// One copy per distinct name for the process (`intern_name`): a node is recorded per op,
    /// and a String of its own cost each ~50 bytes and an allocation.
    pub name: &'static str,
    pub backward: Py<PyAny>,
    pub saved: SavedVariables<Saved>,
    pub ctx: Py<PyAny>,
    pub weak_self: Weak<PyNode>,
    /// The forward traceback, kept only when anomaly mode was on at record time.
    pub stack: Option<Py<PyAny>>,
    /// The user's line of the forward op, when node provenance was on (Note [Sites]).
    pub site: Option<Site>,
    /// The innermost module (scope) whose forward recorded this node.
    pub scope: Option<Py<PyAny>>,
    /// Inputs without an edge that were cut from a graph: (input slot, cut).
    pub cuts: NodeCuts,
    /// The formula is one of rustgrad's op layer (`formula_is_ours`): it returns what it
    /// computes and keeps no reference to it, so what it makes may be handed on fresh (Note
    /// [Stealing a gradient] in rust/core/src/accumulate.rs).
    pub own_formula: bool,
}

/// torch's name of the identity node whose backward hands the gradients to a module's full
/// backward hooks (nn/modules/_backward_hook.py): user code, which may keep them.
pub const BACKWARD_HOOK_NODE: &str = "BackwardHookFunctionBackward";

/// Whether a node recorded by `record` under `name` runs a formula of rustgrad's own op layer
/// (every `record` caller but the module backward-hook node). A custom Function's node
/// (`record_multi`) runs the user's backward: never ours.
pub fn formula_is_ours(name: &str) -> bool {
    name != BACKWARD_HOOK_NODE
}

/// The process's one copy of a node name: names are few (one per op and Function class) and
/// live as long as the program, so each is leaked once.
pub fn intern_name(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(&known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl PyNode {
    pub fn unpack<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyTuple>> {
        // torch names the modified tensor's own grad_fn (now, not at save time), or no node
        // at all for a leaf; a saved output names the node that saved it.
        let culprit = std::cell::RefCell::new(None);
        let counter = std::cell::RefCell::new(None);
        let values = self
            .saved
            .unpack_all(self.name, |s| {
                *culprit.borrow_mut() = Some(self.grad_fn_name(py, s));
                *counter.borrow_mut() = saved_version_counter(py, s);
                describe(py, s)
            })
            .map_err(|e| match e {
                Error::ModifiedInplace {
                    tensor,
                    output_nr,
                    node,
                    version,
                    expected,
                    ..
                } => Error::ModifiedInplace {
                    tensor,
                    output_nr,
                    node: culprit.take().unwrap_or(node),
                    version,
                    expected,
                    detail: self.provenance_detail(py, counter.take(), expected),
                },
                other => other,
            })?;
        let mut out = Vec::with_capacity(values.len());
        for v in values {
            out.push(match v {
                Saved::Input(t, non_leaf) => {
                    let t = t.into_bound(py);
                    if non_leaf && detached_in_place(&t) {
                        return Err(Error::runtime(
                            "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, please use out-of-place `.detach()` instead",
                        ));
                    }
                    t
                }
                Saved::NoneValue => py.None().into_bound(py),
                Saved::Output {
                    data,
                    meta,
                    output_nr,
                } => self
                    .output_tensor(py, data, meta, output_nr)
                    .map_err(from_py)?
                    .into_any(),
                Saved::Packed {
                    packed,
                    unpack,
                    origin,
                } => {
                    let out = unpack.bind(py).call1((packed,)).map_err(from_py)?;
                    let t = out.downcast::<PyTensor>().map_err(|_| {
                        let ty = out.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                        from_py(PyTypeError::new_err(format!(
                            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {ty}"
                        )))
                    })?;
                    self.rewrap(py, t, &origin).map_err(from_py)?.into_any()
                }
            });
        }
        PyTuple::new(py, out).map_err(from_py)
    }
}

/// The version counter of a saved value, for the provenance of a failed unpack.
fn saved_version_counter(py: Python<'_>, s: &Saved) -> Option<Arc<VersionCounter>> {
    match s {
        Saved::Input(t, _) => t
            .bind(py)
            .downcast::<PyTensor>()
            .ok()
            .and_then(|t| t.try_borrow().ok().map(|b| b.version.clone())),
        Saved::Output { meta, .. } => Some(meta.version.clone()),
        _ => None,
    }
}

impl PyNode {
    /// What rustgrad adds to torch's "modified by an inplace operation" message: where the
    /// node was recorded and which writes moved the version on (Note [Version provenance]).
    fn provenance_detail(
        &self,
        py: Python<'_>,
        counter: Option<Arc<VersionCounter>>,
        saved: u32,
    ) -> String {
        let made = match &self.site {
            Some(site) => format!(" at {}", site.describe(py)),
            None => " (rustgrad.autograd.set_provenance(True) records where)".to_string(),
        };
        let writes = counter
            .map(|c| crate::provenance::writes_since(py, &c, saved))
            .unwrap_or_default();
        let writes = if writes.is_empty() {
            String::new()
        } else {
            format!("; then modified by {writes}")
        };
        format!(
            "\nrustgrad: it was saved at version {saved} by {}{made}{writes}.",
            self.name
        )
    }

    /// A saved output as a tensor again: its data and meta, this node as its grad_fn.
    fn output_tensor<'py>(
        &self,
        py: Python<'py>,
        data: Py<PyAny>,
        meta: TensorMeta,
        output_nr: usize,
    ) -> PyResult<Bound<'py, PyTensor>> {
        let node = self.weak_self.upgrade().map(|n| n as Arc<dyn Node<PyGrad>>);
        new_tensor(py, data, meta, node, output_nr)
    }

    /// The saved values without the version check: tensors (outputs rebuilt as unpacking
    /// does), None, or what a pack hook returned; empty once released.
    pub fn saved_unchecked(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        let mut held = Vec::new();
        self.saved.for_each(|s| held.push(s.clone()));
        let mut out = Vec::with_capacity(held.len());
        for s in held {
            out.push(match s {
                Saved::Input(t, _) => t,
                Saved::NoneValue => py.None(),
                Saved::Output {
                    data,
                    meta,
                    output_nr,
                } => self
                    .output_tensor(py, data, meta, output_nr)?
                    .into_any()
                    .unbind(),
                Saved::Packed { packed, .. } => packed,
            });
        }
        Ok(out)
    }

    /// A tensor with the unpacked tensor's data (and storage) in the saved tensor's place in
    /// the graph, as torch's SavedVariable::unpack with hooks.
    fn rewrap<'py>(
        &self,
        py: Python<'py>,
        unpacked: &Bound<'py, PyTensor>,
        origin: &Origin,
    ) -> PyResult<Bound<'py, PyTensor>> {
        let (data, storage) = {
            let b = unpacked.try_borrow()?;
            (b.data.clone_ref(py), b.storage.clone())
        };
        let meta = |requires_grad| TensorMeta {
            version: VersionCounter::new(),
            storage: storage.clone(),
            requires_grad,
        };
        match origin {
            Origin::Plain => new_tensor(py, data, meta(false), None, 0),
            Origin::Node { node, output_nr } => {
                new_tensor(py, data, meta(true), Some(node.clone()), *output_nr)
            }
            Origin::Leaf(acc) => {
                let t = new_tensor(py, data, meta(true), None, 0)?;
                t.borrow_mut().accumulator = Arc::downgrade(acc);
                Ok(t)
            }
            Origin::SelfOutput { output_nr } => {
                let node = self.weak_self.upgrade().map(|n| n as Arc<dyn Node<PyGrad>>);
                new_tensor(py, data, meta(node.is_some()), node, *output_nr)
            }
        }
    }

    /// The name of the node a saved value is an output of ("" for a leaf).
    fn grad_fn_name(&self, py: Python<'_>, saved: &Saved) -> String {
        match saved {
            Saved::Input(t, _) => t
                .bind(py)
                .downcast::<PyTensor>()
                .ok()
                .and_then(|t| {
                    t.try_borrow()
                        .ok()
                        .map(|b| b.grad_fn.as_ref().map(|f| f.name()))
                })
                .map_or_else(|| self.name.to_owned(), Option::unwrap_or_default),
            Saved::Output { .. } | Saved::Packed { .. } | Saved::NoneValue => self.name.to_owned(),
        }
    }
}

/// What a formula received, for telling which of its outputs are fresh (Note [Stealing a
/// gradient] in rust/core/src/accumulate.rs). Held past the call, so the received tensors and
/// their storages are alive while outputs are compared with them.
struct Received<'py> {
    /// The gradients as the formula got them: one tensor (or None), or a tuple.
    grads: Bound<'py, PyAny>,
    /// Bit `i`: received gradient `i` was fresh (the formula may hand it on as it is).
    fresh: u64,
    /// Storages made after this mark were made during the call (`Storage::made_since`).
    mark: rustgrad_core::storage::Mark,
}

impl Received<'_> {
    /// Whether `f` holds for some received gradient that is a tensor and whose fresh bit is
    /// `fresh` (the others are not looked at: no borrow, no atomics, for them).
    fn any_grad(&self, fresh: bool, mut f: impl FnMut(&PyTensor) -> bool) -> bool {
        let mut visit = |i: usize, g: &Bound<'_, PyAny>| {
            let is_fresh = i < 64 && self.fresh & (1 << i) != 0;
            is_fresh == fresh
                && g.downcast::<PyTensor>()
                    .ok()
                    .and_then(|t| t.try_borrow().ok())
                    .is_some_and(|b| f(&b))
        };
        match self.grads.downcast::<PyTuple>() {
            Ok(t) => t.iter().enumerate().any(|(i, g)| visit(i, &g)),
            Err(_) => visit(0, &self.grads),
        }
    }

    /// Whether `grad`, returned by the formula, is a buffer it made in this call (a storage
    /// made since the mark) or a fresh gradient it received (that gradient's storage), in no
    /// graph, and not around the array of a received gradient that was not fresh.
    ///
    /// Storage identity is the buffer's: an op's output has a storage of its own only when its
    /// array is new (views and detach() share their base's), so a storage made during the call
    /// holds memory nothing older can see. The array check guards the one way around that rule
    /// a formula could take with what it was handed, an op wrapping an existing array in a new
    /// tensor (`astype(copy=False)` of the dtype it has); a formula of rustgrad's own never
    /// returns a saved tensor's array that way.
    fn may_be_fresh(&self, grad: &PyGrad) -> bool {
        let py = self.grads.py();
        let Ok(t) = grad.0.bind(py).downcast::<PyTensor>() else {
            return false;
        };
        let Ok(b) = t.try_borrow() else { return false };
        if b.grad_fn.is_some() || b.requires_grad {
            return false;
        }
        let Some(storage) = &b.storage else {
            return false;
        };
        if !storage.made_since(&self.mark)
            && !self.any_grad(true, |r| {
                r.storage.as_ref().is_some_and(|s| Arc::ptr_eq(s, storage))
            })
        {
            return false;
        }
        let data = b.data.as_ptr();
        // A view's array belongs to its base tensor's: compare with the base's too.
        let base_data = match &b.base {
            Some(base) => match base.bind(py).downcast::<PyTensor>() {
                Ok(bt) => match bt.try_borrow() {
                    Ok(bb) => Some(bb.data.as_ptr()),
                    Err(_) => return false,
                },
                Err(_) => None,
            },
            None => None,
        };
        // Only the gradients that were not fresh are looked at (none, most of the time).
        !self.any_grad(false, |r| {
            let a = r.data.as_ptr();
            a == data || Some(a) == base_data
        })
    }
}

impl PyNode {
    /// Marks fresh the outputs of this node's formula that nothing outside the engine can see
    /// (Note [Stealing a gradient]): the formula is rustgrad's own (`own_formula`) and the
    /// output is a buffer it made or a fresh gradient it was handed (`Received::may_be_fresh`).
    /// The engine then unmarks any two outputs that share a storage.
    fn mark_fresh_outputs(&self, outputs: &mut [Option<PyGrad>], received: &Received<'_>) {
        for g in outputs.iter_mut().flatten() {
            if received.may_be_fresh(g) {
                g.set_fresh(true);
            }
        }
    }
}

/// A saved non-leaf that has no history any more: `detach_()` took it.
fn detached_in_place(t: &Bound<'_, PyAny>) -> bool {
    t.downcast::<PyTensor>()
        .ok()
        .and_then(|t| t.try_borrow().ok().map(|b| b.grad_fn.is_none()))
        .unwrap_or(false)
}

/// torch's description of a tensor in the inplace error: `torch.FloatTensor [3]`.
fn describe(py: Python<'_>, saved: &Saved) -> String {
    let data = match saved {
        Saved::Input(t, _) => t
            .bind(py)
            .downcast::<PyTensor>()
            .ok()
            .and_then(|t| Some(t.try_borrow().ok()?.data.clone_ref(py))),
        Saved::Output { data, .. } => Some(data.clone_ref(py)),
        Saved::Packed { .. } | Saved::NoneValue => None,
    };
    let Some(data) = data else {
        return "tensor".to_string();
    };
    let f = &crate::callbacks::callbacks(py).describe;
    f.bind(py)
        .call1((data,))
        .and_then(|s| s.extract::<String>())
        .unwrap_or_else(|_| "tensor".to_string())
}

impl Node<PyGrad> for PyNode {
    fn origin(&self) -> String {
        match &self.site {
            Some(site) => {
                Python::with_gil(|py| format!(", whose forward ran at {}", site.describe(py)))
            }
            None => String::new(),
        }
    }

    fn base(&self) -> &NodeBase<PyGrad> {
        &self.base
    }

    fn name(&self) -> String {
        self.name.to_owned()
    }

    fn apply(&self, grads: Vec<Option<PyGrad>>) -> Result<Vec<Option<PyGrad>>> {
        Python::with_gil(|py| {
            let saved = self.unpack(py)?;
            // Note [Stealing a gradient]: which received gradients were fresh, and the storage
            // mark, taken after unpacking (a tensor an unpack hook made is not the formula's).
            let fresh_in = (self.own_formula && !grad_mode::is_grad_enabled()).then(|| {
                let bits = grads
                    .iter()
                    .enumerate()
                    .take(64)
                    .fold(0u64, |bits, (i, g)| {
                        bits | (u64::from(g.as_ref().is_some_and(GradValue::is_fresh)) << i)
                    });
                (bits, rustgrad_core::storage::Mark::now())
            });
            let grad: Bound<'_, PyAny> = if grads.len() == 1 {
                match grads.into_iter().next().flatten() {
                    Some(g) => g.0.into_bound(py),
                    None => py.None().into_bound(py),
                }
            } else {
                let items: Vec<Bound<'_, PyAny>> = grads
                    .into_iter()
                    .map(|g| match g {
                        Some(g) => g.0.into_bound(py),
                        None => py.None().into_bound(py),
                    })
                    .collect();
                PyTuple::new(py, items).map_err(from_py)?.into_any()
            };
            let received = fresh_in.map(|(fresh, mark)| Received {
                grads: grad.clone(),
                fresh,
                mark,
            });
            // a node recorded through a spec holds the spec (its formula and fields type)
            let backward = self.backward.bind(py);
            let out = match backward.downcast::<crate::node_spec::NodeSpec>() {
                Ok(spec) => {
                    spec.get().refuse_complex(&grad).map_err(from_py)?;
                    let ctx = self.ctx.bind(py);
                    let n = self.base.next_edges().len();
                    match crate::node_spec::NodeSpec::native_grads(spec, &grad, ctx, n)
                        .map_err(from_py)?
                    {
                        Some(out) => Ok(out),
                        None => {
                            let (formula, saved) =
                                spec.get().formula_and_saved(py, saved).map_err(from_py)?;
                            formula.call1((grad, saved, ctx))
                        }
                    }
                }
                Err(_) => {
                    let saved = crate::node_spec::named(py, self.name, saved).map_err(from_py)?;
                    backward.call1((grad, saved, self.ctx.bind(py)))
                }
            }
            .map_err(from_py)?;
            let n = self.base.next_edges().len();
            let to_grad = |o: Bound<'_, PyAny>| {
                if o.is_none() {
                    None
                } else {
                    Some(PyGrad::new(o.unbind()))
                }
            };
            let mut outputs = match out.downcast::<PyTuple>() {
                Ok(t) => t.iter().map(to_grad).collect(),
                Err(_) if n == 1 => vec![to_grad(out)],
                Err(_) => {
                    return Err(Error::runtime(format!(
                    "function {} returned an incorrect number of gradients (expected {n}, got 1)",
                    self.name
                )))
                }
            };
            if let Some(received) = received {
                self.mark_fresh_outputs(&mut outputs, &received);
            }
            Ok(outputs)
        })
    }

    fn release_variables(&self) {
        self.saved.release();
    }

    /// torch's AnomalyMetadata::print_stack: a UserWarning with the forward traceback.
    fn report_anomaly(&self) {
        Python::with_gil(|py| {
            let msg = match &self.stack {
                Some(stack) => format!(
                    "Error detected in {}. Traceback of forward call that caused the error:\n{}",
                    self.name,
                    stack.bind(py)
                ),
                None => format!(
                    "Error detected in {}. No forward pass information available. Enable detect anomaly during forward pass for more information.",
                    self.name
                ),
            };
            let warn = py
                .import("warnings")
                .and_then(|w| w.call_method1("warn", (msg,)));
            if let Err(e) = warn {
                // -W error turns the warning into an exception: show it, the backward's own
                // error is what propagates.
                e.print(py);
            }
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PyNode {
    /// Every Python object this node holds, for garbage-collector traversal.
    pub fn for_each_object(&self, mut f: impl FnMut(&Py<PyAny>)) {
        f(&self.backward);
        f(&self.ctx);
        if let Some(stack) = &self.stack {
            f(stack);
        }
        self.saved.for_each(|s| match s {
            Saved::Input(t, _) => f(t),
            Saved::Output { data, .. } => f(data),
            Saved::Packed { packed, unpack, .. } => {
                f(packed);
                f(unpack);
            }
            Saved::NoneValue => {}
        });
    }
}
