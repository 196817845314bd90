//! grad_fn objects as Python sees them: `name()`, `next_functions`, `variable` for
//! AccumulateGrad, equality by identity of the underlying node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyWeakrefReference};
use pyo3::{PyTraverseError, PyVisit};
use rustgrad_core::{node_id, AccumulateGrad, NodeRef};

use crate::py_value::{
    Origin, PyGrad, PyNode, PyNodePostHook, PyNodePreHook, PyTensorHook, Saved, TensorSink,
};
use crate::tensor::{PyHookHandle, PyTensor, TensorHooks};

/// Note [GC traversal]
/// The graph lives in Rust, out of the collector's sight. A Python object (a tensor, a grad_fn
/// handle) may report to the collector a Python object that Rust holds for it only when that
/// Python object is the sole owner of every `Arc` on the way: otherwise some other owner, which
/// the collector cannot see, still reaches it, and reporting it could let the collector clear an
/// object that is still in use. Each Python reference is reported at most once.
///
/// `node` is held by the caller alone; `own` is the caller's own hook list (a tensor's), which
/// may be attached to the node as well, and then counts as held by the caller alone when the
/// tensor and the node are its only holders.
///
/// That covers `node` itself only: walking every graph at every collection would cost a
/// training loop dearly. The one cycle a training step makes deep in a graph is
/// `create_graph=True`'s param -> `.grad` -> graph -> param, whose reference to the param sits
/// several nodes below the grad's grad_fn; so a tensor whose `.grad` it alone holds, and whose
/// grad's grad_fn that grad alone holds, also reports what lies below that node
/// (`traverse_below`; the grad itself reports the node).
pub fn traverse_exclusive_node(
    node: &NodeRef<PyGrad>,
    own: Option<&Arc<TensorHooks>>,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    let result = std::cell::RefCell::new(Ok(()));
    let report = |o: &Py<PyAny>| {
        let mut r = result.borrow_mut();
        if r.is_ok() {
            *r = visit.call(o);
        }
    };
    visit_node(node, own, &report);
    result.into_inner()
}

/// Reports what the nodes below `node` (held by the caller alone, see Note [GC traversal])
/// hold, for the nodes that are the caller's alone too: a node is when every one of its strong
/// holders is an edge (or a saved value's origin) of a node already found to be the caller's
/// alone, or the grad_fn of a saved tensor all of whose references were found so: its strong
/// count equals the references found. The walk is iterative, visits each node once, stops after
/// `MAX_TRAVERSED_NODES` (reporting less is always safe) and is deterministic, so the
/// collector's passes see the same references.
pub fn traverse_below(node: &NodeRef<PyGrad>, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    let result = std::cell::RefCell::new(Ok(()));
    let report = |o: &Py<PyAny>| {
        let mut r = result.borrow_mut();
        if r.is_ok() {
            *r = visit.call(o);
        }
    };
    // SAFETY: traversal runs with the GIL held; the token is used only for type checks and
    // borrow-flag reads of saved tensors, which neither allocate nor run Python code.
    let py = unsafe { Python::assume_gil_acquired() };
    let mut found: HashMap<usize, usize> = HashMap::new();
    let mut found_tensors: HashMap<usize, isize> = HashMap::new();
    let mut stack: Vec<NodeRef<PyGrad>> = Vec::new();
    let mut current = node.clone();
    let mut visited = 1;
    loop {
        let mut admit = |id: usize, holders: usize, make: &dyn Fn() -> NodeRef<PyGrad>| {
            if holders == 1 {
                stack.push(make());
                return;
            }
            let seen = found.entry(id).or_insert(0);
            *seen += 1;
            if *seen == holders {
                stack.push(make());
            }
        };
        // Pointers, not new references: the collector reads reference counts between its
        // passes, and `current` keeps these objects alive while the walk runs no Python code.
        let mut tensors: Vec<*mut pyo3::ffi::PyObject> = Vec::new();
        for_each_child(&current, &mut admit, &mut |t| tensors.push(t.as_ptr()));
        for ptr in tensors {
            // A saved tensor every reference to which was found here is the caller's alone,
            // and so is its grad_fn's reference to its node.
            // SAFETY: `ptr` is a live object held by a saved value of `current`.
            let refcnt = unsafe { pyo3::ffi::Py_REFCNT(ptr) };
            if refcnt != 1 {
                let seen = found_tensors.entry(ptr as usize).or_insert(0);
                *seen += 1;
                if *seen != refcnt {
                    continue;
                }
            }
            // SAFETY: as above; a borrowed pointer, no reference is taken.
            let obj = unsafe { pyo3::Borrowed::from_ptr(py, ptr) };
            let Ok(t) = obj.downcast::<PyTensor>() else {
                continue;
            };
            let Ok(b) = t.try_borrow() else { continue };
            // A grad_fn held by the tensor alone is reported by the tensor's own traversal.
            if let Some(f) = b.grad_fn.as_ref().filter(|f| Arc::strong_count(f) > 1) {
                admit(node_id(f), Arc::strong_count(f), &|| f.clone());
            }
        }
        let Some(next) = stack.pop() else { break };
        if visited >= MAX_TRAVERSED_NODES || result.borrow().is_err() {
            break;
        }
        visited += 1;
        visit_node(&next, None, &report);
        current = next;
    }
    result.into_inner()
}

/// How many nodes one traversal looks at, at most (see Note [GC traversal]).
const MAX_TRAVERSED_NODES: usize = 100_000;

/// Every node `node` holds strongly: its edges' nodes and its saved values' origins, as
/// (address, strong count, a new reference).
fn for_each_child(
    node: &NodeRef<PyGrad>,
    f: &mut impl FnMut(usize, usize, &dyn Fn() -> NodeRef<PyGrad>),
    saved_input: &mut impl FnMut(&Py<PyAny>),
) {
    if let Some(edges) = node.base().try_next_edges() {
        for e in edges.iter().flatten() {
            f(node_id(&e.node), Arc::strong_count(&e.node), &|| {
                e.node.clone()
            });
        }
    }
    if let Some(n) = node.as_any().downcast_ref::<PyNode>() {
        n.saved.for_each(|s| {
            if let Saved::Input(t) = s {
                saved_input(t);
            } else if let Saved::Packed { origin, .. } = s {
                match origin {
                    Origin::Node { node, .. } => {
                        f(node_id(node), Arc::strong_count(node), &|| node.clone());
                    }
                    Origin::Leaf(acc) => {
                        let id = Arc::as_ptr(acc) as *const () as usize;
                        f(id, Arc::strong_count(acc), &|| {
                            acc.clone() as NodeRef<PyGrad>
                        });
                    }
                    Origin::Plain | Origin::SelfOutput { .. } => {}
                }
            }
        });
    }
}

/// Reports the Python objects `node` itself holds (not through other nodes).
fn visit_node(
    node: &NodeRef<PyGrad>,
    own: Option<&Arc<TensorHooks>>,
    report: &impl Fn(&Py<PyAny>),
) {
    node.base().hooks.for_each_shared(
        |list| {
            let holders = Arc::strong_count(list);
            let exclusive =
                holders == 1 || (holders == 2 && own.is_some_and(|o| Arc::ptr_eq(o, list)));
            if exclusive {
                visit_hook_list(list, report);
            }
        },
        |hook| {
            if Arc::strong_count(hook) == 1 {
                if let Some(h) = hook.as_any().downcast_ref::<PyTensorHook>() {
                    report(&h.0);
                }
            }
        },
    );
    node.base().hooks.for_each_exclusive_node_hook(|h| {
        if let Some(h) = h.downcast_ref::<PyNodePreHook>() {
            report(&h.0);
        } else if let Some(h) = h.downcast_ref::<PyNodePostHook>() {
            report(&h.0);
        }
    });
    if let Some(node) = node.as_any().downcast_ref::<PyNode>() {
        node.for_each_object(report);
    } else if let Some(acc) = node.as_any().downcast_ref::<AccumulateGrad<PyGrad>>() {
        if Arc::strong_count(&acc.sink) == 1 {
            if let Some(sink) = acc.sink.as_any().downcast_ref::<TensorSink>() {
                report(&sink.tensor);
            }
        }
    }
}

/// Reports the Python function of each hook of `list` held by the list alone.
pub fn visit_hook_list(list: &TensorHooks, report: &impl Fn(&Py<PyAny>)) {
    list.for_each(|hook| {
        if Arc::strong_count(hook) == 1 {
            if let Some(h) = hook.as_any().downcast_ref::<PyTensorHook>() {
                report(&h.0);
            }
        }
    });
}

#[pyclass(name = "Node", module = "rustgrad._core", frozen, weakref)]
pub struct PyNodeHandle {
    pub node: NodeRef<PyGrad>,
}

/// One Python object per node while any is alive, as torch: `y.grad_fn is y.grad_fn`, and
/// `id(fn)` names a node (graph walkers key on it). Maps node address to a weak reference of its
/// handle; a live handle keeps its node alive, so a live entry's address cannot be reused.
struct HandleCache {
    map: HashMap<usize, Py<PyWeakrefReference>>,
    purge_at: usize,
}

static HANDLES: Mutex<Option<HandleCache>> = Mutex::new(None);

fn cached_handle<'py>(py: Python<'py>, id: usize) -> Option<Bound<'py, PyNodeHandle>> {
    let cache = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    let weak = cache.as_ref()?.map.get(&id)?.clone_ref(py);
    drop(cache);
    let handle = weak
        .bind(py)
        .upgrade()?
        .downcast_into::<PyNodeHandle>()
        .ok()?;
    (node_id(&handle.get().node) == id).then_some(handle)
}

/// The Python object of `node`: the live one if there is one, else a new one.
pub fn handle_for(py: Python<'_>, node: NodeRef<PyGrad>) -> PyResult<Bound<'_, PyNodeHandle>> {
    let id = node_id(&node);
    if let Some(h) = cached_handle(py, id) {
        return Ok(h);
    }
    let handle = Bound::new(py, PyNodeHandle { node })?;
    let weak = PyWeakrefReference::new(&handle)?.unbind();
    let stale = {
        let mut guard = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
        let cache = guard.get_or_insert_with(|| HandleCache {
            map: HashMap::new(),
            purge_at: 1024,
        });
        let mut stale = Vec::new();
        if cache.map.len() >= cache.purge_at {
            let dead: Vec<usize> = cache
                .map
                .iter()
                .filter(|(_, w)| w.bind(py).upgrade().is_none())
                .map(|(k, _)| *k)
                .collect();
            for k in dead {
                stale.extend(cache.map.remove(&k));
            }
            cache.purge_at = (2 * cache.map.len()).max(1024);
        }
        stale.extend(cache.map.insert(id, weak));
        stale
    };
    drop(stale); // released outside the lock
    Ok(handle)
}

#[pymethods]
impl PyNodeHandle {
    fn name(&self) -> String {
        self.node.name()
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let edges = self.node.base().next_edges().clone();
        let items: Vec<PyObject> = edges
            .into_iter()
            .map(|e| match e {
                Some(e) => {
                    let h = handle_for(py, e.node)?;
                    Ok((h, e.input_nr).into_pyobject(py)?.into_any().unbind())
                }
                None => Ok((py.None(), 0usize).into_pyobject(py)?.into_any().unbind()),
            })
            .collect::<PyResult<_>>()?;
        PyTuple::new(py, items)
    }

    /// The leaf tensor of an AccumulateGrad node.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<PyObject> {
        let acc = self
            .node
            .as_any()
            .downcast_ref::<AccumulateGrad<PyGrad>>()
            .ok_or_else(|| {
                pyo3::exceptions::PyAttributeError::new_err(format!(
                    "'{}' object has no attribute 'variable'",
                    self.node.name()
                ))
            })?;
        let sink = acc
            .sink
            .as_any()
            .downcast_ref::<TensorSink>()
            .expect("AccumulateGrad of a Python tensor has a TensorSink");
        Ok(sink.tensor.clone_ref(py))
    }

    /// The Python-side context the op stored (non-tensor values of its forward).
    #[getter]
    fn _ctx(&self, py: Python<'_>) -> Option<PyObject> {
        self.node
            .as_any()
            .downcast_ref::<PyNode>()
            .map(|n| n.ctx.clone_ref(py))
    }

    #[getter]
    fn _sequence_nr(&self) -> u64 {
        self.node.base().sequence_nr()
    }

    /// `fn(grad_inputs, grad_outputs)` run after this node; may return a replacement for
    /// grad_inputs. See Note [Hook order].
    fn register_hook(&self, hook: Py<PyAny>) -> PyHookHandle {
        let list = self.node.base().hooks.post_hooks();
        let id = list.push(Arc::new(PyNodePostHook(hook)));
        PyHookHandle::node_post(&list, id)
    }

    /// `fn(grad_outputs)` run before this node; may return a replacement for grad_outputs.
    fn register_prehook(&self, hook: Py<PyAny>) -> PyHookHandle {
        let list = self.node.base().hooks.pre_hooks();
        let id = list.push(Arc::new(PyNodePreHook(hook)));
        PyHookHandle::node_pre(&list, id)
    }

    /// The saved values, unpacked as the backward formula would see them (version-checked;
    /// torch's "backward through the graph a second time" error once released). Empty for
    /// nodes that are not Python formulas.
    fn _saved_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match self.node.as_any().downcast_ref::<PyNode>() {
            Some(n) => n.unpack(py).map_err(crate::errors::to_py),
            None => Ok(PyTuple::empty(py)),
        }
    }

    /// Attributes torch's nodes have per kind (`_saved_self`, a custom Function's ctx
    /// attributes): looked up by `rustgrad.autograd.graph._node_getattr`.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        let py = slf.py();
        let f = py
            .import("rustgrad.autograd.graph")?
            .getattr("_node_getattr")?;
        Ok(f.call1((slf, name))?.unbind())
    }

    fn _saved_released(&self) -> bool {
        self.node
            .as_any()
            .downcast_ref::<PyNode>()
            .is_some_and(|n| n.saved.is_released())
    }

    /// See Note [GC traversal]: a handle that alone holds its node (the graph's tensors are
    /// gone) reports what the node holds, so `leaf.attr = leaf.grad_fn...` cycles are collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if Arc::strong_count(&self.node) == 1 {
            traverse_exclusive_node(&self.node, None, &visit)?;
        }
        Ok(())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PyNodeHandle>()
            .is_ok_and(|o| node_id(&o.get().node) == node_id(&self.node))
    }

    fn __hash__(&self) -> u64 {
        node_id(&self.node) as u64
    }

    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.node.name().trim_start_matches("torch::autograd::"),
            node_id(&self.node)
        )
    }
}
