//! What the garbage collector is shown of the graph, which lives in Rust out of its sight.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use rustgrad_core::{node_id, AccumulateGrad, NodeRef};

use crate::backward::TensorSink;
use crate::py_value::{
    Origin, PyGrad, PyNode, PyNodePostHook, PyNodePreHook, PyPostAccumulateHook, PyTensorHook,
    Saved,
};
use crate::tensor::{PyTensor, TensorHooks};

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

/// A tensor's traversal: its array, its `.grad`, its base, and what its hook lists and its
/// grad_fn hold for it alone (see the Note above).
pub fn traverse_tensor(t: &PyTensor, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    visit.call(&t.data)?;
    if let Some(g) = &t.grad {
        visit.call(g)?;
        // See Note [GC traversal]: the graph below a grad held by this tensor alone.
        // SAFETY: `g` is live (held here); reading its count takes no reference.
        if unsafe { pyo3::ffi::Py_REFCNT(g.as_ptr()) } == 1 {
            // SAFETY: traversal runs with the GIL held; only a type check and a borrow-flag
            // read follow, which neither allocate nor run Python code.
            let py = unsafe { Python::assume_gil_acquired() };
            if let Ok(g) = g.bind(py).downcast::<PyTensor>() {
                if let Ok(b) = g.try_borrow() {
                    if let Some(f) = b.grad_fn.as_ref().filter(|f| Arc::strong_count(f) == 1) {
                        traverse_below(f, visit)?;
                    }
                }
            }
        }
    }
    if let Some(b) = &t.base {
        visit.call(b)?;
    }
    let owned_grad_fn = t.grad_fn.as_ref().filter(|f| Arc::strong_count(f) == 1);
    if let Some(list) = &t.hooks {
        // Held by the tensor alone; when its grad_fn holds it too, the node's traversal
        // below reports it (once).
        if Arc::strong_count(list) == 1 {
            let result = std::cell::RefCell::new(Ok(()));
            visit_hook_list(list, &|o| {
                let mut r = result.borrow_mut();
                if r.is_ok() {
                    *r = visit.call(o);
                }
            });
            result.into_inner()?;
        }
    }
    if let Some(list) = &t.post_hooks {
        if Arc::strong_count(list) == 1 {
            let mut result = Ok(());
            list.for_each(|h| {
                if Arc::strong_count(h) == 1 && result.is_ok() {
                    if let Some(h) = h.as_any().downcast_ref::<PyPostAccumulateHook>() {
                        result = visit.call(&h.func);
                    }
                }
            });
            result?;
        }
    }
    if let Some(f) = owned_grad_fn {
        traverse_exclusive_node(f, t.hooks.as_ref(), visit)?;
    }
    Ok(())
}
