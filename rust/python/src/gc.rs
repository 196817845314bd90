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

/// Passes objects to the collector's `visit` until it first fails, keeping that error for
/// `finish` (the walks below take a plain `&dyn Fn` callback).
struct Reporter<'a, 'py> {
    visit: &'a PyVisit<'py>,
    result: std::cell::RefCell<Result<(), PyTraverseError>>,
}

impl<'a, 'py> Reporter<'a, 'py> {
    fn new(visit: &'a PyVisit<'py>) -> Self {
        Reporter {
            visit,
            result: std::cell::RefCell::new(Ok(())),
        }
    }

    fn report(&self, o: &Py<PyAny>) {
        let mut r = self.result.borrow_mut();
        if r.is_ok() {
            *r = self.visit.call(o);
        }
    }

    fn failed(&self) -> bool {
        self.result.borrow().is_err()
    }

    fn finish(self) -> Result<(), PyTraverseError> {
        self.result.into_inner()
    }
}

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
/// That covers `node` itself. What lies below it (`traverse_below`) is reported by the same
/// caller for the nodes and saved tensors only it reaches, found by counting holders (up to
/// `MAX_BELOW_NODE` members, the collector visits tensors often; past it a cheaper walk through
/// the nodes all of whose holders it found, which sees no cycle inside the graph): the
/// cycles that run through a graph (`create_graph=True`'s param -> `.grad` -> graph -> param,
/// identity saved-tensor hooks whose graph holds the tensors it produced, a grad_fn kept on a
/// tensor its graph saves) are then seen whole. A node held by one tensor alone is that
/// tensor's to report, with its own walk, so each reference is still reported once. Deleting a
/// cycle needs no clearing of nodes: the tensors and Python objects in it are cleared, and a
/// node is never left half-cleared for a later backward to meet.
///
/// The walk also counts tensors' hook lists and reads the closures of their hook functions
/// (functions, tuples and cells only, through their own `tp_traverse`), so a hook capturing its
/// own non-leaf under `create_graph=True` is seen whole. Not seen: references kept in other
/// Python objects, such as several grad_fn handles of one graph in a container the graph saves
/// (torch leaks that too).
pub fn traverse_exclusive_node(
    node: &NodeRef<PyGrad>,
    own: Option<&Arc<TensorHooks>>,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    let result = Reporter::new(visit);
    let report = |o: &Py<PyAny>| result.report(o);
    visit_node(node, own, &report);
    result.finish()
}

/// Reports what the nodes below `node` (held by the caller alone, see Note [GC traversal])
/// hold, for the nodes that are the caller's alone too. It is the collector's own trial
/// deletion, run over the part of the graph Rust hides: the walk gathers the nodes and the saved
/// tensors reachable from `node` (a tensor's grad_fn held by that tensor alone is the tensor's
/// own to report, and the walk stops there), counts the references it found to each, and calls a
/// member held from outside when it has more holders (strong counts, reference counts) than
/// found references; whatever such a member reaches is held from outside too. The rest is
/// reachable only through the caller, cycles inside it included (a saved-tensor hook that packs
/// the output itself), and its nodes' objects are reported here, once. The walk is iterative,
/// deterministic (the collector's passes must see the same references) and gives up, reporting
/// past `cap` members, to the greedy walk (reporting less is always safe).
///
/// `own` is the caller's own hook list, which `traverse_exclusive_node` reports.
pub fn traverse_below(
    node: &NodeRef<PyGrad>,
    own: Option<&Arc<TensorHooks>>,
    cap: usize,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    let result = Reporter::new(visit);
    let report = |o: &Py<PyAny>| result.report(o);
    let Some(region) = Region::gather(node, cap) else {
        return traverse_below_greedy(node, visit);
    };
    for i in region.exclusive() {
        match &region.members[i] {
            Member::Node(n) => visit_node(n, None, &report),
            // A list held by one tensor or node alone is reported by that holder.
            Member::Hooks(l)
                if region.holders[i] > 1 && !own.is_some_and(|o| Arc::ptr_eq(o, l)) =>
            {
                visit_hook_list(l, &report)
            }
            _ => {}
        }
        if result.failed() {
            break;
        }
    }
    result.finish()
}

/// The walk `traverse_below` falls back to past its cap: cheap, it goes only through the nodes
/// every holder of which it found (so it stops at shared nodes and sees no cycle inside the
/// graph), up to `MAX_GREEDY_NODES`.
fn traverse_below_greedy(
    node: &NodeRef<PyGrad>,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    let result = Reporter::new(visit);
    let report = |o: &Py<PyAny>| result.report(o);
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
        if visited >= MAX_GREEDY_NODES || result.failed() {
            break;
        }
        visited += 1;
        visit_node(&next, None, &report);
        current = next;
    }
    result.finish()
}

/// How many nodes the greedy walk looks at, at most.
const MAX_GREEDY_NODES: usize = 100_000;

/// How many nodes, saved tensors and hook objects one traversal looks at, at most (see Note
/// [GC traversal]) before it falls back to the greedy walk: the collector visits tensors often.
pub const MAX_BELOW_NODE: usize = 2_000;

enum Member {
    Node(NodeRef<PyGrad>),
    /// A borrowed pointer, to a tensor or another Python object: its holder in the walk keeps it
    /// alive while the walk runs no Python code.
    Tensor(*mut pyo3::ffi::PyObject),
    /// A tensor's hook list, which its grad_fn may hold too.
    Hooks(Arc<TensorHooks>),
}

/// The part of a graph below a node, with each member's holders and the references to it found
/// inside (see `traverse_below`).
struct Region {
    members: Vec<Member>,
    holders: Vec<usize>,
    found: Vec<usize>,
    children: Vec<Vec<usize>>,
    /// Tensors whose grad_fn could not be read (borrowed): held from outside, to be safe.
    opaque: Vec<bool>,
}

impl Region {
    fn gather(root: &NodeRef<PyGrad>, cap: usize) -> Option<Region> {
        // SAFETY: traversal runs with the GIL held; the token is used only for type checks and
        // borrow-flag reads of saved tensors, which neither allocate nor run Python code.
        let py = unsafe { Python::assume_gil_acquired() };
        let mut r = Region {
            members: Vec::new(),
            holders: Vec::new(),
            found: Vec::new(),
            children: Vec::new(),
            opaque: Vec::new(),
        };
        let mut index: HashMap<usize, usize> = HashMap::new();
        // The caller's reference is the root's one holder, and counts as found.
        r.add(&mut index, node_id(root), 1, &|| Member::Node(root.clone()));
        r.found[0] = 1;
        let mut next = 0;
        while next < r.members.len() {
            if r.members.len() > cap {
                return None;
            }
            let i = next;
            next += 1;
            let mut kids: Vec<usize> = Vec::new();
            let (node, tensor, hooks) = match &r.members[i] {
                Member::Node(n) => (Some(n.clone()), None, None),
                Member::Tensor(p) => (None, Some(*p), None),
                Member::Hooks(l) => (None, None, Some(l.clone())),
            };
            if let Some(n) = node {
                let mut tensors: Vec<*mut pyo3::ffi::PyObject> = Vec::new();
                for_each_child(
                    &n,
                    &mut |id, count, make| {
                        kids.push(r.add(&mut index, id, count, &|| Member::Node(make())));
                    },
                    &mut |t| tensors.push(t.as_ptr()),
                );
                n.base().hooks.for_each_shared(
                    |l| {
                        let (id, count) = (Arc::as_ptr(l) as usize, Arc::strong_count(l));
                        kids.push(r.add(&mut index, id, count, &|| Member::Hooks(l.clone())));
                    },
                    |_| {},
                );
                for ptr in tensors {
                    // SAFETY: `ptr` is live, held by a saved value of `n`.
                    let count = unsafe { pyo3::ffi::Py_REFCNT(ptr) } as usize;
                    kids.push(r.add(&mut index, ptr as usize, count, &|| Member::Tensor(ptr)));
                }
            } else if let Some(ptr) = tensor {
                // SAFETY: as above; a borrowed pointer, no reference is taken.
                let obj = unsafe { pyo3::Borrowed::from_ptr(py, ptr) };
                if let Ok(t) = obj.downcast::<PyTensor>() {
                    match t.try_borrow() {
                        // A grad_fn held by the tensor alone is reported by the tensor's own
                        // traversal (and what lies below it by its own walk).
                        Ok(b) => {
                            if let Some(f) = b.grad_fn.as_ref().filter(|f| Arc::strong_count(f) > 1)
                            {
                                let (id, count) = (node_id(f), Arc::strong_count(f));
                                kids.push(
                                    r.add(&mut index, id, count, &|| Member::Node(f.clone())),
                                );
                            }
                            if let Some(l) = &b.hooks {
                                let (id, count) = (Arc::as_ptr(l) as usize, Arc::strong_count(l));
                                kids.push(
                                    r.add(&mut index, id, count, &|| Member::Hooks(l.clone())),
                                );
                            }
                        }
                        Err(_) => r.opaque[i] = true,
                    }
                } else {
                    match closure_referents(ptr) {
                        Some(refs) => {
                            for p in refs {
                                // SAFETY: `p` is live, held by `ptr`.
                                let count = unsafe { pyo3::ffi::Py_REFCNT(p) } as usize;
                                kids.push(
                                    r.add(&mut index, p as usize, count, &|| Member::Tensor(p)),
                                );
                            }
                        }
                        None => r.opaque[i] = true,
                    }
                }
            } else if let Some(l) = hooks {
                l.for_each(|h| {
                    if Arc::strong_count(h) == 1 {
                        if let Some(h) = h.as_any().downcast_ref::<PyTensorHook>() {
                            let p = h.0.as_ptr();
                            // SAFETY: `p` is live, held by the hook.
                            let count = unsafe { pyo3::ffi::Py_REFCNT(p) } as usize;
                            kids.push(r.add(&mut index, p as usize, count, &|| Member::Tensor(p)));
                        }
                    }
                });
            }
            for &j in &kids {
                r.found[j] += 1;
            }
            r.children[i] = kids;
        }
        Some(r)
    }

    /// The member for `id`, added with `holders` (counted before the walk's own clone) if new.
    fn add(
        &mut self,
        index: &mut HashMap<usize, usize>,
        id: usize,
        holders: usize,
        make: &dyn Fn() -> Member,
    ) -> usize {
        if let Some(&j) = index.get(&id) {
            return j;
        }
        let j = self.members.len();
        index.insert(id, j);
        self.members.push(make());
        self.holders.push(holders);
        self.found.push(0);
        self.children.push(Vec::new());
        self.opaque.push(false);
        j
    }

    /// The members other than the root that only the caller reaches, in walk order.
    fn exclusive(&self) -> Vec<usize> {
        let n = self.members.len();
        let mut outside = vec![false; n];
        let mut stack: Vec<usize> = (0..n)
            .filter(|&i| self.opaque[i] || self.holders[i] > self.found[i])
            .collect();
        for &i in &stack {
            outside[i] = true;
        }
        while let Some(i) = stack.pop() {
            for &j in &self.children[i] {
                if !outside[j] {
                    outside[j] = true;
                    stack.push(j);
                }
            }
        }
        (1..n).filter(|&i| !outside[i]).collect()
    }
}

/// What a function, a tuple or a cell holds (a hook's closure, which may hold the hook's own
/// tensor), read with their own `tp_traverse`, which runs no Python code; None for other
/// objects, or past a few references (a walk through them would cost more than it finds).
fn closure_referents(obj: *mut pyo3::ffi::PyObject) -> Option<Vec<*mut pyo3::ffi::PyObject>> {
    use pyo3::ffi;
    use std::os::raw::{c_int, c_void};
    extern "C" {
        static mut PyFunction_Type: u8;
        static mut PyCell_Type: u8;
    }
    static READABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: traversal runs with the GIL held; only the version string is read.
    let py = unsafe { Python::assume_gil_acquired() };
    // PyType_GetSlot reads static types from 3.10 on.
    if !*READABLE.get_or_init(|| py.version_info() >= (3, 10)) {
        return None;
    }
    // SAFETY: `obj` is live; type objects are static. Addresses only, nothing is read.
    let ty = unsafe { ffi::Py_TYPE(obj) };
    let known = [
        std::ptr::addr_of_mut!(PyFunction_Type) as *mut ffi::PyTypeObject,
        std::ptr::addr_of_mut!(PyCell_Type) as *mut ffi::PyTypeObject,
        std::ptr::addr_of_mut!(ffi::PyTuple_Type),
    ];
    if !known.contains(&ty) {
        return None;
    }
    unsafe extern "C" fn collect(o: *mut ffi::PyObject, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the Vec passed below, alive for the call.
        let out = unsafe { &mut *(arg as *mut Vec<*mut ffi::PyObject>) };
        out.push(o);
        if out.len() > MAX_CLOSURE_REFERENTS {
            1 // stops the walk
        } else {
            0
        }
    }
    // SAFETY: these builtin types have a tp_traverse, which only calls `collect`.
    let traverse = unsafe { ffi::PyType_GetSlot(ty, ffi::Py_tp_traverse) };
    if traverse.is_null() {
        return None;
    }
    let traverse: ffi::traverseproc = unsafe { std::mem::transmute(traverse) };
    let mut out: Vec<*mut ffi::PyObject> = Vec::new();
    let rc = unsafe { traverse(obj, collect, &mut out as *mut _ as *mut c_void) };
    (rc == 0).then_some(out)
}

/// How many references of one function, tuple or cell the walk reads, at most.
const MAX_CLOSURE_REFERENTS: usize = 32;

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
            if let Saved::Input(t, _) = s {
                saved_input(t);
            } else if let Saved::Packed { origin, packed, .. } = s {
                // What a pack hook returned may be a tensor (an identity hook): it may hold nodes.
                saved_input(packed);
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
    }
    if let Some(b) = &t.base {
        visit.call(b)?;
    }
    let owned_grad_fn = t.grad_fn.as_ref().filter(|f| Arc::strong_count(f) == 1);
    if let Some(list) = &t.hooks {
        // Held by the tensor alone; when its grad_fn holds it too, the node's traversal
        // below reports it (once).
        if Arc::strong_count(list) == 1 {
            let result = Reporter::new(visit);
            visit_hook_list(list, &|o| result.report(o));
            result.finish()?;
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
        traverse_below(f, t.hooks.as_ref(), MAX_BELOW_NODE, visit)?;
    }
    Ok(())
}
