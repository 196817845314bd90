//! TensorBase: the data handle and autograd meta of a tensor, with fast attribute access.
//!
//! Python's `rustgrad.Tensor` subclasses it and adds operators and methods; everything that is
//! graph bookkeeping (grad_fn, version counter, storage, hooks, the leaf's AccumulateGrad) lives
//! here, in Rust.

use std::sync::{Arc, Weak};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::impl_::pyclass_init::PyObjectInit;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType, PyWeakrefReference};
use pyo3::PyClassInitializer;
use pyo3::{PyTraverseError, PyVisit};
use rustgrad_core::meta::{self, ViewRef, MODIFIED_BASE};
use rustgrad_core::{
    AccumulateGrad, CreationMeta, Edge, HookList, Inference, Node, NodeRef, PostAccumulateHook,
    StaleView, Storage, TensorHook, VersionCounter,
};

use crate::backward::TensorSink;
use crate::handle::{new_handle, HandleList};
use crate::provenance::{bump_logged, cut_tuple, version_history, Cut};
use crate::py_value::{PyGrad, PyPostAccumulateHook, PyTensorHook};

pub type TensorHooks = HookList<dyn TensorHook<PyGrad>>;
pub type PostHooks = HookList<dyn PostAccumulateHook>;

/// What a tensor shares with its views and detach()es.
#[derive(Clone, Debug)]
pub struct TensorMeta {
    pub version: Arc<VersionCounter>,
    pub storage: Option<Arc<Storage>>,
    pub requires_grad: bool,
}

#[pyclass(subclass, weakref, name = "TensorBase", module = "rustgrad._core")]
pub struct PyTensor {
    pub data: Py<PyAny>,
    pub requires_grad: bool,
    pub grad_fn: Option<NodeRef<PyGrad>>,
    pub output_nr: usize,
    pub grad: Option<Py<PyAny>>,
    pub version: Arc<VersionCounter>,
    pub storage: Option<Arc<Storage>>,
    pub base: Option<Py<PyAny>>,
    pub accumulator: Weak<AccumulateGrad<PyGrad>>,
    pub hooks: Option<Arc<TensorHooks>>,
    pub post_hooks: Option<Arc<PostHooks>>,
    pub retains_grad: bool,
    /// For a view: the shared version when its grad_fn was last set (torch's attr_version);
    /// once the counter moves past it, the grad_fn is remade from the base (`refresh_view`).
    pub view_version: u32,
    /// torch's CreationMeta of a view (rust/core/src/meta.rs).
    pub creation_meta: CreationMeta,
    /// Made in inference mode: see Note [Inference tensors] (rust/core/src/meta.rs).
    pub inference: Inference,
    /// Which output of a function returning several views (unbind, split) this view is, for
    /// torch's error naming it; each is recorded as a view of its own.
    pub multi_output_nr: u32,
    /// How this tensor was cut from a graph, if it was (Note [Sites] in provenance.rs).
    pub cut: Option<Arc<Cut>>,
}

/// torch's refusal of an in-place op on a view made in no_grad or inference mode (or on a view
/// of one), or on its base seen through it (`modified`: `meta::MODIFIED_THIS` or
/// `meta::MODIFIED_BASE`). The rule and the words are the core's (`meta::view_mode_message`).
pub fn view_mode_error(b: &PyTensor, modified: &str) -> PyErr {
    let name = b.grad_fn.as_ref().map(|f| f.name());
    let view = ViewRef {
        creation: b.creation_meta,
        grad_fn: name.as_deref(),
        output_nr: b.output_nr,
        multi_output_nr: b.multi_output_nr,
    };
    PyRuntimeError::new_err(meta::view_mode_message(view, modified))
}

impl PyTensor {
    fn placeholder(py: Python<'_>) -> Self {
        Self::with(py.None(), false, VersionCounter::new(), None, None, 0)
    }

    /// A new tensor's fields: its array, flags, version counter, storage and history.
    fn with(
        data: Py<PyAny>,
        requires_grad: bool,
        version: Arc<VersionCounter>,
        storage: Option<Arc<Storage>>,
        grad_fn: Option<NodeRef<PyGrad>>,
        output_nr: usize,
    ) -> Self {
        PyTensor {
            data,
            requires_grad,
            grad_fn,
            output_nr,
            grad: None,
            version,
            storage,
            base: None,
            accumulator: Weak::new(),
            hooks: None,
            post_hooks: None,
            retains_grad: false,
            view_version: 0,
            creation_meta: CreationMeta::Default,
            multi_output_nr: 0,
            cut: None,
            inference: Inference::now(),
        }
    }

    /// A view made in no_grad or inference mode (or a view of one): it has no edge to its base.
    pub fn is_no_grad_view(&self) -> bool {
        self.base.is_some() && self.creation_meta.is_mode_view()
    }

    /// requires_grad as torch reads it: a view made in no_grad or inference mode requires grad
    /// while its base does (a later `detach_()` of the base ends it).
    pub fn requires_grad_now(&self, py: Python<'_>) -> PyResult<bool> {
        if self.requires_grad || !self.is_no_grad_view() {
            return Ok(self.requires_grad);
        }
        match &self.base {
            Some(root) => Ok(root
                .bind(py)
                .downcast::<PyTensor>()?
                .try_borrow()?
                .requires_grad),
            None => Ok(false),
        }
    }

    /// torch's refusal to save an inference tensor for backward.
    pub fn check_savable(&self) -> PyResult<()> {
        self.inference
            .check_savable()
            .map_err(PyRuntimeError::new_err)
    }

    pub fn meta(&self) -> TensorMeta {
        TensorMeta {
            version: self.version.clone(),
            storage: self.storage.clone(),
            requires_grad: self.requires_grad,
        }
    }

    pub fn is_leaf(&self) -> bool {
        self.grad_fn.is_none()
    }

    fn tensor_hooks(&mut self) -> Arc<TensorHooks> {
        self.hooks.get_or_insert_with(Default::default).clone()
    }
}

/// A new `rustgrad.Tensor` (or the class registered at import) around `data`.
pub fn new_tensor<'py>(
    py: Python<'py>,
    data: Py<PyAny>,
    meta: TensorMeta,
    grad_fn: Option<NodeRef<PyGrad>>,
    output_nr: usize,
) -> PyResult<Bound<'py, PyTensor>> {
    let cls = crate::callbacks::callbacks(py).tensor_cls.bind(py);
    // rustgrad.Tensor, checked a subclass of PyTensor when it was registered
    // SAFETY: `cls` is that class (see `_register`).
    let ty = unsafe { cls.downcast_unchecked::<PyType>() };
    alloc_tensor(ty, data, meta, grad_fn, output_nr)
}

pub fn new_tensor_of<'py>(
    cls: &Bound<'py, PyAny>,
    data: Py<PyAny>,
    meta: TensorMeta,
    grad_fn: Option<NodeRef<PyGrad>>,
    output_nr: usize,
) -> PyResult<Bound<'py, PyTensor>> {
    let ty = cls.downcast::<PyType>()?;
    if !ty.is_subclass_of::<PyTensor>()? {
        return Err(PyTypeError::new_err(format!(
            "{} is not a subclass of rustgrad.Tensor",
            ty.name()?
        )));
    }
    alloc_tensor(ty, data, meta, grad_fn, output_nr)
}

/// The instance of `ty` (PyTensor's type or a subclass of it) holding these fields.
fn alloc_tensor<'py>(
    ty: &Bound<'py, PyType>,
    data: Py<PyAny>,
    meta: TensorMeta,
    grad_fn: Option<NodeRef<PyGrad>>,
    output_nr: usize,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = ty.py();
    let tensor = PyTensor::with(
        data,
        meta.requires_grad,
        meta.version,
        meta.storage,
        grad_fn,
        output_nr,
    );
    // Note [Internal construction]: an op's tensor is allocated by the class's own tp_alloc, as
    // the class call would, without the call's argument parsing, `__init__` and placeholder
    // fields made only to be replaced (a tenth of a recorded op's time).
    // SAFETY: `ty` is PyTensor's type or a subclass of it (checked above).
    let obj = unsafe { PyClassInitializer::from(tensor).into_new_object(py, ty.as_type_ptr())? };
    // SAFETY: `into_new_object` returned a new reference to an instance of `ty`.
    Ok(unsafe { Bound::from_owned_ptr(py, obj).downcast_into_unchecked() })
}

/// The edge a gradient for this tensor travels along: its grad_fn, or its leaf accumulator.
/// A stale view is refreshed first; where that fails (a view made in no_grad mode whose base
/// was modified in place) the tensor has no edge: callers that can raise use
/// `try_gradient_edge`.
pub fn gradient_edge(t: &Bound<'_, PyTensor>) -> Option<Edge<PyGrad>> {
    let _ = refresh_view(t);
    edge_of(t)
}

/// `gradient_edge`, raising torch's error for a stale view made in no_grad mode.
pub fn try_gradient_edge(t: &Bound<'_, PyTensor>) -> PyResult<Option<Edge<PyGrad>>> {
    refresh_view(t)?;
    Ok(edge_of(t))
}

fn edge_of(t: &Bound<'_, PyTensor>) -> Option<Edge<PyGrad>> {
    let mut b = t.borrow_mut();
    if !b.requires_grad {
        return None;
    }
    if let Some(f) = &b.grad_fn {
        return Some(Edge::new(f.clone(), b.output_nr));
    }
    if b.is_no_grad_view() {
        // As torch: it requires grad through its base but has no accumulator of its own.
        return None;
    }
    Some(Edge::new(grad_accumulator(t.as_any(), &mut b), 0))
}

/// The edge of a view made in no_grad mode that requires grad through its base, as an input of
/// `autograd.grad`: an AccumulateGrad of its own that no graph reaches, as torch gives it one,
/// so the view is an unused input rather than one that does not require grad.
pub fn unreachable_edge(t: &Bound<'_, PyTensor>) -> PyResult<Option<Edge<PyGrad>>> {
    let py = t.py();
    let mut b = t.try_borrow_mut()?;
    if !b.is_no_grad_view() || b.grad_fn.is_some() {
        return Ok(None);
    }
    if !b.requires_grad_now(py)? {
        return Ok(None);
    }
    Ok(Some(Edge::new(grad_accumulator(t.as_any(), &mut b), 0)))
}

/// The leaf's AccumulateGrad (None unless `t` is a leaf that requires grad).
pub fn leaf_accumulator(t: &Bound<'_, PyTensor>) -> Option<Arc<AccumulateGrad<PyGrad>>> {
    let _ = refresh_view(t);
    let mut b = t.borrow_mut();
    if !b.requires_grad || b.grad_fn.is_some() || b.is_no_grad_view() {
        return None;
    }
    Some(grad_accumulator(t.as_any(), &mut b))
}

/// Remakes a view's grad_fn from its base when the shared version counter moved since it was
/// set (an in-place op on the base or on another view of it), as torch's VariableHooks::grad_fn:
/// the new grad_fn is AsStridedBackward0 of the view's region over the base's current history.
/// A view made in no_grad mode cannot follow its base: torch's error. One comparison when
/// nothing moved.
pub fn refresh_view(t: &Bound<'_, PyTensor>) -> PyResult<()> {
    let py = t.py();
    let (root, current) = {
        let b = t.try_borrow()?;
        let Some(root) = &b.base else {
            return Ok(());
        };
        let current = b.version.current();
        if current == b.view_version {
            return Ok(());
        }
        let root = root.clone_ref(py);
        let root_rg = root
            .bind(py)
            .downcast::<PyTensor>()?
            .try_borrow()?
            .requires_grad;
        match b.creation_meta.on_stale(b.grad_fn.is_some() || root_rg) {
            StaleView::Keep => return Ok(()),
            StaleView::Refuse => return Err(view_mode_error(&b, MODIFIED_BASE)),
            StaleView::Regenerate => {}
        }
        (root, current)
    };
    static REGENERATE: pyo3::sync::GILOnceCell<Py<PyAny>> = pyo3::sync::GILOnceCell::new();
    let regenerate = REGENERATE.get_or_try_init(py, || {
        py.import("rustgrad._ops.copyslices")?
            .getattr("regenerate_view")
            .map(Bound::unbind)
    })?;
    // The history is remade whatever the grad mode, as torch's.
    let prev = rustgrad_core::grad_mode::set_grad_enabled(true);
    let made = regenerate.bind(py).call1((t, root.bind(py)));
    rustgrad_core::grad_mode::set_grad_enabled(prev);
    let made = made?;
    if made.is_none() {
        return Ok(()); // a region as_strided cannot express: the old history stays
    }
    let (f, nr) = {
        let o = made.downcast::<PyTensor>()?.try_borrow()?;
        (o.grad_fn.clone(), o.output_nr)
    };
    let Some(f) = f else {
        return Ok(());
    };
    let mut b = t.try_borrow_mut()?;
    let old = set_history(&mut b, f, nr, true);
    b.view_version = current;
    drop(b);
    drop(old);
    drop(made);
    Ok(())
}

/// Gives `b` the history of output `output_nr` of `f` (an in-place op, or a custom Function's
/// output). As torch: tensor hooks registered before stay with the old grad_fn (they see the
/// gradient of the old value); later ones go to a fresh list on the new grad_fn. The
/// retains-grad hook moves, so `.grad` is the gradient of the new value.
///
/// Returns what `b` let go of, for the caller to drop once its borrow of the tensor is released:
/// dropping it may run Python code (a `__del__`, a weakref callback) that uses the tensor.
#[must_use = "drop the old history after releasing the borrow"]
pub fn set_history(
    b: &mut PyTensor,
    f: NodeRef<PyGrad>,
    output_nr: usize,
    requires_grad: bool,
) -> OldHistory {
    let hooks = b.hooks.take();
    let moved = b
        .grad_fn
        .as_ref()
        .and_then(|old| old.base().hooks.take_retains_grad(b.output_nr));
    let replaced = moved.and_then(|hook| f.base().hooks.set_retains_grad(output_nr, hook));
    let grad_fn = b.grad_fn.replace(f);
    b.output_nr = output_nr;
    b.requires_grad = requires_grad;
    b.view_version = b.version.current();
    OldHistory {
        hooks,
        replaced,
        grad_fn,
    }
}

/// What `set_history` took out of a tensor; dropped (through `drop_deferred`) when it goes.
pub struct OldHistory {
    hooks: Option<Arc<TensorHooks>>,
    replaced: Option<Arc<dyn TensorHook<PyGrad>>>,
    grad_fn: Option<NodeRef<PyGrad>>,
}

impl Drop for OldHistory {
    fn drop(&mut self) {
        drop(self.hooks.take());
        drop(self.replaced.take());
        if let Some(old) = self.grad_fn.take() {
            rustgrad_core::drop_deferred(old);
        }
    }
}

/// The leaf's AccumulateGrad, made anew when no graph holds the old one.
fn grad_accumulator(obj: &Bound<'_, PyAny>, b: &mut PyTensor) -> Arc<AccumulateGrad<PyGrad>> {
    if let Some(acc) = b.accumulator.upgrade() {
        return acc;
    }
    let hooks = b.tensor_hooks();
    let post = b.post_hooks.get_or_insert_with(Default::default).clone();
    let sink = Arc::new(TensorSink {
        tensor: obj.clone().unbind(),
    });
    let acc = Arc::new(AccumulateGrad::new(sink, hooks, post));
    b.accumulator = Arc::downgrade(&acc);
    acc
}

#[pymethods]
impl PyTensor {
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn py_new(
        py: Python<'_>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Self> {
        // Ops allocate their tensors directly (Note [Internal construction]); a call of the
        // class is torch's legacy constructor, built in Python (`Tensor([1., 2.])`,
        // `Tensor(2, 3)`, `Tensor()`), and this tensor aliases it.
        let made = py
            .import("rustgrad._legacy")?
            .getattr("legacy_new")?
            .call(args, kwargs)?;
        let made = made.downcast::<PyTensor>()?.try_borrow()?;
        let mut t = PyTensor::placeholder(py);
        t.data = made.data.clone_ref(py);
        t.version = made.version.clone();
        t.storage = made.storage.clone();
        Ok(t)
    }

    #[getter]
    fn _data(&self, py: Python<'_>) -> Py<PyAny> {
        self.data.clone_ref(py)
    }

    /// Replaces the array (`x.data = y`); keeps grad_fn and version counter, as torch's set_data.
    /// The old array is dropped after the borrow ends (its finalizers may use this tensor).
    fn _set_data(slf: &Bound<'_, Self>, data: Py<PyAny>, nbytes: usize) -> PyResult<()> {
        let old = {
            let mut b = slf.try_borrow_mut()?;
            let device = b.storage.as_ref().map_or(0, |s| s.device());
            let storage = b.storage.replace(Storage::new(device, nbytes));
            (std::mem::replace(&mut b.data, data), storage)
        };
        drop(old);
        Ok(())
    }

    /// Whether autograd records the ops on this tensor: set on a leaf by the user
    /// (`requires_grad=True`, `requires_grad_()`), inherited by every result of an op on such a
    /// tensor while grad mode is on.
    #[getter]
    fn get_requires_grad(slf: &Bound<'_, Self>) -> PyResult<bool> {
        // As torch: a view requires grad when its base does, even before its history follows
        // the base's (so no refresh here, and no error for a stale no_grad view).
        let b = slf.try_borrow()?;
        if b.requires_grad {
            return Ok(true);
        }
        match &b.base {
            Some(root) => Ok(root
                .bind(slf.py())
                .downcast::<PyTensor>()?
                .try_borrow()?
                .requires_grad),
            None => Ok(false),
        }
    }

    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, value: bool) -> PyResult<()> {
        let b = slf.try_borrow()?;
        if !b.is_leaf() {
            let hint = if value {
                ""
            } else {
                " If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            };
            return Err(PyRuntimeError::new_err(format!(
                "you can only change requires_grad flags of leaf variables.{hint}"
            )));
        }
        b.inference
            .check_requires_grad(value, rustgrad_core::grad_mode::is_inference_mode_enabled())
            .map_err(PyRuntimeError::new_err)?;
        let data = b.data.clone_ref(slf.py());
        drop(b); // the check below runs Python code, which may use this tensor
        if value {
            let py = slf.py();
            let ok = crate::callbacks::callbacks(py)
                .can_require_grad
                .bind(py)
                .call1((data.bind(py),))?
                .is_truthy()?;
            if !ok {
                return Err(PyRuntimeError::new_err(
                    "only Tensors of floating point and complex dtype can require gradients",
                ));
            }
        }
        let mut b = slf.try_borrow_mut()?;
        if !b.is_leaf() {
            return Err(PyRuntimeError::new_err(
                "you can only change requires_grad flags of leaf variables.",
            ));
        }
        b.requires_grad = value;
        drop(b);
        drop(data);
        Ok(())
    }

    /// True for a tensor with no grad_fn: made by the user, by an op on tensors that do not
    /// require grad, under no_grad, or by `detach()`. Only leaves get `.grad` from backward
    /// (others need `retain_grad()`).
    #[getter(is_leaf)]
    fn get_is_leaf(slf: &Bound<'_, Self>) -> PyResult<bool> {
        refresh_view(slf)?;
        Ok(slf.try_borrow()?.grad_fn.is_none())
    }

    /// Whether the tensor has no grad_fn as it stands, without remaking a stale view's history
    /// first (torch's C++ `is_leaf()`, which `.grad` and `retain_grad()` read).
    #[getter]
    fn _is_leaf_now(&self) -> bool {
        self.grad_fn.is_none()
    }

    /// The node that made this tensor and computes its backward (`MulBackward0`, ...); None for
    /// a leaf. `grad_fn.next_functions` leads to the nodes of its inputs.
    #[getter]
    fn grad_fn<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<Option<Bound<'py, crate::node::PyNodeHandle>>> {
        refresh_view(slf)?;
        let f = slf.try_borrow()?.grad_fn.clone();
        f.map(|f| crate::node::handle_for(slf.py(), f)).transpose()
    }

    /// torch's CreationMeta of this view as torch's integer (0: DEFAULT, 2: MULTI_OUTPUT_NODE,
    /// 3: NO_GRAD_MODE, 4: INFERENCE_MODE; `_core.CREATION_*`).
    #[getter]
    fn _creation_meta(&self) -> u8 {
        self.creation_meta.code()
    }

    #[getter(_grad)]
    fn get_raw_grad(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.grad.as_ref().map(|g| g.clone_ref(py))
    }

    /// The old gradient is dropped after the borrow ends: its finalizers may use this tensor.
    #[setter(_grad)]
    fn set_raw_grad(slf: &Bound<'_, Self>, value: Option<Py<PyAny>>) -> PyResult<()> {
        let old = std::mem::replace(&mut slf.try_borrow_mut()?.grad, value);
        drop(old);
        Ok(())
    }

    #[getter]
    fn _version(&self) -> PyResult<u32> {
        self.inference
            .check_version()
            .map_err(PyRuntimeError::new_err)?;
        Ok(self.version.current())
    }

    /// Made in inference mode (or a view or detach() of such a tensor).
    fn is_inference(&self) -> bool {
        self.inference.is_inference()
    }

    /// torch's refusal of an in-place op on an inference tensor outside inference mode.
    fn _check_inplace_mode(&self) -> PyResult<()> {
        self.inference
            .check_inplace(rustgrad_core::grad_mode::is_inference_mode_enabled())
            .map_err(PyRuntimeError::new_err)
    }

    /// Marks this view as output `nr` of a function returning several views (torch's
    /// MULTI_OUTPUT_NODE), unless it was made in no_grad or inference mode.
    pub(crate) fn _set_multi_output(&mut self, nr: u32) {
        if self.base.is_some() {
            let made = self.creation_meta.as_multi_output();
            if made != self.creation_meta {
                self.creation_meta = made;
                self.multi_output_nr = nr;
            }
        }
    }

    /// torch's refusal of an in-place op on this view made in no_grad or inference mode, or
    /// returned with others by one function.
    fn _view_mode_error(
        &self,
        py: Python<'_>,
        modified: &str,
    ) -> Py<pyo3::exceptions::PyBaseException> {
        view_mode_error(self, modified).into_value(py)
    }

    /// Bumps the version, logging the op the user called and where (Note [Version
    /// provenance]).
    fn _bump_version(&self, py: Python<'_>) -> u32 {
        bump_logged(py, &self.version)
    }

    /// `(version, op, filename, lineno, function)` of the last logged bumps, oldest first.
    #[getter]
    fn _version_history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        version_history(py, &self.version)
    }

    /// `(kind, site, source grad_fn)` when this tensor was cut from a graph, else None.
    #[getter]
    fn _cut(&self, py: Python<'_>) -> PyResult<PyObject> {
        cut_tuple(py, self.cut.as_deref())
    }

    /// `(tensor hooks, post-accumulate-grad hooks)` registered on this tensor.
    #[getter]
    fn _hook_counts(&self) -> (usize, usize) {
        (
            self.hooks.as_ref().map_or(0, |h| h.len()),
            self.post_hooks.as_ref().map_or(0, |h| h.len()),
        )
    }

    fn _storage_nbytes(&self) -> usize {
        self.storage.as_ref().map_or(0, |s| s.nbytes())
    }

    /// Which output of its grad_fn this tensor is (0 for single-output ops).
    #[getter]
    fn output_nr(&self) -> usize {
        self.output_nr
    }

    /// Whether this non-leaf keeps its gradient in `.grad` (set by `retain_grad()`).
    #[getter]
    fn retains_grad(&self) -> bool {
        self.retains_grad
    }

    #[getter]
    fn _base(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.base.as_ref().map(|b| b.clone_ref(py))
    }

    fn _is_view(&self) -> bool {
        self.base.is_some()
    }

    /// Storage identity, for `untyped_storage().data_ptr()`-style sharing checks in tests.
    fn _storage_id(&self) -> usize {
        self.storage.as_ref().map_or(0, |s| Arc::as_ptr(s) as usize)
    }

    fn _version_id(&self) -> usize {
        Arc::as_ptr(&self.version) as usize
    }

    fn _device_index(&self) -> usize {
        self.storage.as_ref().map_or(0, |s| s.device())
    }

    fn _register_hook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        refresh_view(slf)?; // the hook goes to the current grad_fn
        let mut b = slf.try_borrow_mut()?;
        if !b.requires_grad_now(slf.py())? {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let list = b.tensor_hooks();
        let id = list.push(Arc::new(PyTensorHook(hook)));
        match &b.grad_fn {
            Some(f) => f
                .base()
                .hooks
                .add_tensor_pre_hooks(b.output_nr, list.clone()),
            None => {
                if let Some(acc) = b.accumulator.upgrade() {
                    acc.base().hooks.add_tensor_pre_hooks(0, list.clone());
                }
            }
        }
        drop(b);
        new_handle(slf.py(), HandleList::Tensor(Arc::downgrade(&list)), id)
    }

    fn _register_post_accumulate_grad_hook(
        slf: &Bound<'_, Self>,
        hook: Py<PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let weak = PyWeakrefReference::new(slf)?.unbind();
        let mut b = slf.try_borrow_mut()?;
        if !b.requires_grad_now(slf.py())? {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        if !b.is_leaf() {
            return Err(PyRuntimeError::new_err(
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
            ));
        }
        let list = b.post_hooks.get_or_insert_with(Default::default).clone();
        let id = list.push(Arc::new(PyPostAccumulateHook {
            func: hook,
            tensor: weak,
        }));
        drop(b);
        new_handle(slf.py(), HandleList::Post(Arc::downgrade(&list)), id)
    }

    /// Installs `hook` (which stores the gradient into `.grad`) as this non-leaf's
    /// retains-grad hook. See Note [Hook order].
    fn _set_retains_grad(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<()> {
        refresh_view(slf)?;
        let replaced = {
            let mut b = slf.try_borrow_mut()?;
            let Some(f) = &b.grad_fn else {
                return Err(PyRuntimeError::new_err("retain_grad on a leaf is a no-op"));
            };
            let replaced = f
                .base()
                .hooks
                .set_retains_grad(b.output_nr, Arc::new(PyTensorHook(hook)));
            b.retains_grad = true;
            replaced
        };
        drop(replaced); // may run Python code that uses this tensor
        Ok(())
    }

    /// See Note [GC traversal] (gc.rs).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        crate::gc::traverse_tensor(self, &visit)
    }

    fn __clear__(&mut self) {
        self.grad = None;
        self.base = None;
        if let Some(list) = self.hooks.take() {
            if Arc::strong_count(&list) == 1 {
                list.clear();
            }
        }
        if let Some(list) = self.post_hooks.take() {
            if Arc::strong_count(&list) == 1 {
                list.clear();
            }
        }
        if let Some(f) = self.grad_fn.take() {
            rustgrad_core::drop_deferred(f);
        }
    }
}
