//! The engine's half of `rustgrad.utils.hooks.RemovableHandle`, the one handle class (torch's
//! `torch.utils.hooks.RemovableHandle`): it subclasses `HookHandleBase`, as `Tensor` subclasses
//! `TensorBase`. A handle of a hook the engine runs (tensor, post-accumulate-grad and node hooks)
//! holds here a weak reference to the hook list and the hook's id; a handle of a module or
//! optimizer hook (kept in a Python dict) leaves the list empty and uses only `id`.

use std::sync::Weak;

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};
use rustgrad_core::{HookId, NodePostHooks, NodePreHooks};

use crate::py_value::PyGrad;
use crate::tensor::{PostHooks, TensorHooks};

/// The list a hook was registered in. Weak, as torch's handles: a handle neither keeps hooks
/// alive nor joins a cycle.
pub enum HandleList {
    Tensor(Weak<TensorHooks>),
    Post(Weak<PostHooks>),
    NodePre(Weak<NodePreHooks<PyGrad>>),
    NodePost(Weak<NodePostHooks<PyGrad>>),
}

#[pyclass(subclass, name = "HookHandleBase", module = "rustgrad._core")]
pub struct PyHookHandle {
    list: Option<HandleList>,
    #[pyo3(get, set)]
    id: HookId,
}

#[pymethods]
impl PyHookHandle {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyHookHandle { list: None, id: 0 }
    }

    /// Removes the hook from the engine's list it was registered in (nothing for a handle of a
    /// Python dict, or once the list is gone).
    fn _remove_from_engine(&self) {
        match &self.list {
            Some(HandleList::Tensor(l)) => l.upgrade().map(|l| l.remove(self.id)),
            Some(HandleList::Post(l)) => l.upgrade().map(|l| l.remove(self.id)),
            Some(HandleList::NodePre(l)) => l.upgrade().map(|l| l.remove(self.id)),
            Some(HandleList::NodePost(l)) => l.upgrade().map(|l| l.remove(self.id)),
            None => None,
        };
    }
}

static HANDLE_CLASS: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// A `rustgrad.utils.hooks.RemovableHandle` for hook `id` of `list`.
pub fn new_handle(py: Python<'_>, list: HandleList, id: HookId) -> PyResult<Py<PyAny>> {
    let cls = HANDLE_CLASS.import(py, "rustgrad.utils.hooks", "RemovableHandle")?;
    // `__new__` only: `__init__` is the dict handles' constructor.
    let obj = cls.call_method1(pyo3::intern!(py, "__new__"), (cls,))?;
    {
        let mut b = obj.downcast::<PyHookHandle>()?.try_borrow_mut()?;
        b.list = Some(list);
        b.id = id;
    }
    Ok(obj.unbind())
}
