//! grad_fn objects as Python sees them: `name()`, `next_functions`, `variable` for
//! AccumulateGrad, equality by identity of the underlying node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType, PyWeakrefReference};
use pyo3::{PyTraverseError, PyVisit};
use rustgrad_core::{node_id, AccumulateGrad, NodeRef};

use crate::backward::TensorSink;
use crate::gc::{traverse_below, traverse_exclusive_node};
use crate::handle::{new_handle, HandleList};
use crate::node_spec::NodeSpec;
use crate::py_value::{PyGrad, PyNode, PyNodePostHook, PyNodePreHook};

#[pyclass(name = "Node", module = "rustgrad._core", frozen, weakref, subclass)]
pub struct PyNodeHandle {
    pub node: NodeRef<PyGrad>,
}

thread_local! {
    /// The node `handle_for` is making a handle of: the per-name class's constructor takes it
    /// from here (Python cannot pass a node in).
    static PENDING: std::cell::RefCell<Option<NodeRef<PyGrad>>> = const { std::cell::RefCell::new(None) };
}

/// Per grad_fn name, its Python class: a subclass of `Node` named as torch names the node's type
/// (`type(fn).__name__ == "MulBackward0"`), made on first use. Slotless, so a handle costs what
/// a plain `Node` does.
static CLASSES: Mutex<Option<HashMap<String, Py<PyType>>>> = Mutex::new(None);

fn class_for<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let short = name.trim_start_matches("torch::autograd::");
    if let Some(cls) = CLASSES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(short))
    {
        return Ok(cls.bind(py).clone());
    }
    let ns = PyDict::new(py);
    ns.set_item("__slots__", PyTuple::empty(py))?;
    ns.set_item("__module__", "builtins")?; // as torch's node types
    let base = py.get_type::<PyNodeHandle>();
    let cls = py
        .get_type::<PyType>()
        .call1((short, (base,), ns))?
        .downcast_into::<PyType>()?;
    CLASSES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(short.to_owned())
        .or_insert_with(|| cls.clone().unbind());
    Ok(cls)
}

fn new_handle_of<'py>(
    py: Python<'py>,
    node: NodeRef<PyGrad>,
) -> PyResult<Bound<'py, PyNodeHandle>> {
    let cls = class_for(py, &node.name())?;
    PENDING.with(|p| *p.borrow_mut() = Some(node));
    let made = cls.call0();
    PENDING.with(|p| p.borrow_mut().take());
    Ok(made?.downcast_into::<PyNodeHandle>()?)
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
    let handle = new_handle_of(py, node)?;
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
    /// Only `handle_for` makes handles; from Python this is CPython's refusal.
    #[new]
    fn py_new() -> PyResult<Self> {
        match PENDING.with(|p| p.borrow_mut().take()) {
            Some(node) => Ok(PyNodeHandle { node }),
            None => Err(pyo3::exceptions::PyTypeError::new_err(
                "cannot create 'Node' instances",
            )),
        }
    }

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
    fn register_hook(&self, py: Python<'_>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let list = self.node.base().hooks.post_hooks();
        let id = list.push(Arc::new(PyNodePostHook(hook)));
        new_handle(py, HandleList::NodePost(Arc::downgrade(&list)), id)
    }

    /// `fn(grad_outputs)` run before this node; may return a replacement for grad_outputs.
    fn register_prehook(&self, py: Python<'_>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let list = self.node.base().hooks.pre_hooks();
        let id = list.push(Arc::new(PyNodePreHook(hook)));
        new_handle(py, HandleList::NodePre(Arc::downgrade(&list)), id)
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

    /// `(forward formula, saved values as the formulas read them, ctx)` of a node recorded
    /// through a spec that states a forward formula (forward AD's fast path); None otherwise.
    fn _forward_args<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(n) = self.node.as_any().downcast_ref::<PyNode>() else {
            return Ok(None);
        };
        let backward = n.backward.bind(py);
        let Ok(spec) = backward.downcast::<NodeSpec>() else {
            return Ok(None);
        };
        let spec = spec.get();
        let Some(forward) = spec.forward_formula(py) else {
            return Ok(None);
        };
        let saved = n.unpack(py).map_err(crate::errors::to_py)?;
        let (_, saved) = spec.formula_and_saved(py, saved)?;
        Ok(Some(PyTuple::new(
            py,
            [forward.clone(), saved, n.ctx.bind(py).clone()],
        )?))
    }

    /// The saved values without the version check (for the memory report and pictures).
    fn _saved_values_unchecked<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match self.node.as_any().downcast_ref::<PyNode>() {
            Some(n) => PyTuple::new(py, n.saved_unchecked(py)?),
            None => Ok(PyTuple::empty(py)),
        }
    }

    /// `(filename, lineno, function)` of the forward op, when node provenance was on.
    #[getter]
    fn _site(&self, py: Python<'_>) -> PyResult<PyObject> {
        let site = self
            .node
            .as_any()
            .downcast_ref::<PyNode>()
            .and_then(|n| n.site.as_ref());
        crate::provenance::site_object(py, site)
    }

    /// `(pre-hooks, post-hooks)` registered on this node.
    #[getter]
    fn _hook_counts(&self) -> (usize, usize) {
        self.node.base().hooks.node_hook_counts()
    }

    /// The innermost scope (module) that was active when the node was recorded.
    #[getter]
    fn _scope(&self, py: Python<'_>) -> Option<PyObject> {
        self.node
            .as_any()
            .downcast_ref::<PyNode>()
            .and_then(|n| n.scope.as_ref().map(|s| s.clone_ref(py)))
    }

    /// `(input_nr, kind, site, sources)` for each input cut from a graph.
    #[getter]
    fn _cuts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut rows = Vec::new();
        if let Some(cuts) = self
            .node
            .as_any()
            .downcast_ref::<PyNode>()
            .and_then(|n| n.cuts.as_deref())
        {
            for (i, cut) in cuts {
                let t = crate::provenance::cut_tuple(py, Some(cut))?;
                let t = t.bind(py).downcast::<PyTuple>()?;
                let mut row = vec![i.into_pyobject(py)?.into_any()];
                row.extend(t.iter());
                rows.push(PyTuple::new(py, row)?);
            }
        }
        PyTuple::new(py, rows)
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

    /// What torchviz-style walkers list: the class's names, less the binding's own `_saved_*`
    /// helpers, plus this node kind's `_saved_<name>` attributes.
    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        let py = slf.py();
        let mut names: Vec<String> = py
            .import("builtins")?
            .getattr("object")?
            .getattr("__dir__")?
            .call1((slf,))?
            .extract()?;
        names.retain(|n| !n.starts_with("_saved_"));
        // every family loaded first: the getters are declared with each family's ops
        let saved = py.import("rustgrad._bind")?.call_method0("saved_getters")?;
        if let Ok(getters) = saved.get_item(slf.get().node.name()) {
            for key in getters.try_iter()? {
                names.push(format!("_saved_{}", key?.extract::<String>()?));
            }
        }
        Ok(names)
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
            traverse_below(&self.node, None, crate::gc::MAX_BELOW_NODE, &visit)?;
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
