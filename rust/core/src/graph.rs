//! Node, Edge and sequence numbers: the shape of the graph.
//!
//! A tensor holds its `grad_fn` strongly; a node holds the nodes of its inputs strongly through
//! its edges; a leaf holds its AccumulateGrad only weakly (see `accumulate.rs`). So a graph lives
//! exactly as long as some tensor or some edge still points into it.
//!
//! Note [Iterative drop]
//! Dropping the head of a chain of a million nodes would drop the next node from inside the
//! first node's destructor, and so on: a recursion as deep as the chain. Every node therefore
//! hands its edges (and the binding hands its saved values) to `drop_deferred`, which drops them
//! from one loop on the current thread; a destructor that runs inside that loop only queues more.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::Result;
use crate::hooks::NodeHooks;
use crate::value::GradValue;

pub type NodeRef<V> = Arc<dyn Node<V>>;

/// Where a gradient goes: input slot `input_nr` of `node` (the forward output number).
pub struct Edge<V: GradValue> {
    pub node: NodeRef<V>,
    pub input_nr: usize,
}

impl<V: GradValue> Clone for Edge<V> {
    fn clone(&self) -> Self {
        Edge {
            node: self.node.clone(),
            input_nr: self.input_nr,
        }
    }
}

impl<V: GradValue> Edge<V> {
    pub fn new(node: NodeRef<V>, input_nr: usize) -> Self {
        Edge { node, input_nr }
    }
}

static SEQUENCE_NR: AtomicU64 = AtomicU64::new(0);

/// A fresh sequence number: later nodes get larger ones and run earlier in backward.
pub fn next_sequence_nr() -> u64 {
    SEQUENCE_NR.fetch_add(1, Ordering::Relaxed)
}

/// The sequence number the next node will get: every node recorded from now on has one at
/// least as large (forward AD tells an op's own nodes from older history by it).
pub fn peek_sequence_nr() -> u64 {
    SEQUENCE_NR.load(Ordering::Relaxed)
}

/// The data every node carries, whatever its kind.
pub struct NodeBase<V: GradValue> {
    sequence_nr: u64,
    num_inputs: usize,
    next_edges: Mutex<Vec<Option<Edge<V>>>>,
    /// Per edge, what its input was at record time, where a gradient may need conforming to
    /// it; None (no allocation) when every input had the output's shape and dtype. See Note
    /// [Input metadata] (engine.rs).
    input_meta: Option<Box<[Option<V::InputMeta>]>>,
    pub hooks: NodeHooks<V>,
}

impl<V: GradValue> NodeBase<V> {
    /// A node receiving `num_inputs` gradients and passing them on along `next_edges`.
    pub fn new(num_inputs: usize, next_edges: Vec<Option<Edge<V>>>) -> Self {
        Self::with_sequence_nr(next_sequence_nr(), num_inputs, next_edges)
    }

    pub fn with_sequence_nr(
        sequence_nr: u64,
        num_inputs: usize,
        next_edges: Vec<Option<Edge<V>>>,
    ) -> Self {
        NodeBase {
            sequence_nr,
            num_inputs,
            next_edges: Mutex::new(next_edges),
            input_meta: None,
            hooks: NodeHooks::default(),
        }
    }

    /// The node with `meta` recorded for its edges (one entry per edge).
    pub fn with_input_meta(mut self, meta: Option<Box<[Option<V::InputMeta>]>>) -> Self {
        self.input_meta = meta;
        self
    }

    /// What edge `index`'s input was at record time, if the node recorded it.
    pub fn input_meta(&self, index: usize) -> Option<&V::InputMeta> {
        self.input_meta.as_ref()?.get(index)?.as_ref()
    }

    /// Whether the node recorded metadata for any edge.
    pub fn has_input_meta(&self) -> bool {
        self.input_meta.is_some()
    }

    pub fn sequence_nr(&self) -> u64 {
        self.sequence_nr
    }

    /// How many gradients the node receives (its forward outputs).
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    pub fn next_edges(&self) -> MutexGuard<'_, Vec<Option<Edge<V>>>> {
        self.next_edges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The edges unless this thread holds them locked (for garbage-collector traversal).
    pub fn try_next_edges(&self) -> Option<MutexGuard<'_, Vec<Option<Edge<V>>>>> {
        crate::hooks::try_lock(&self.next_edges)
    }
}

impl<V: GradValue> Drop for NodeBase<V> {
    fn drop(&mut self) {
        let edges = std::mem::take(self.next_edges.get_mut().unwrap_or_else(|e| e.into_inner()));
        if !edges.is_empty() {
            drop_deferred(edges);
        }
    }
}

/// A backward function. See Note [Hook order] in hooks.rs for what runs around `apply`.
pub trait Node<V: GradValue>: Send + Sync + 'static {
    fn base(&self) -> &NodeBase<V>;

    /// torch's name, e.g. `MulBackward0`.
    fn name(&self) -> String;

    /// Gradients of the forward outputs in, gradients of the forward inputs out (one per edge).
    ///
    /// A node may mark an output fresh (`GradValue::set_fresh`) only when it made that buffer
    /// in this call and keeps no reference to it, or when it is a fresh gradient the node
    /// received and hands on as it is, to one edge. See Note [Stealing a gradient].
    fn apply(&self, grads: Vec<Option<V>>) -> Result<Vec<Option<V>>>;

    /// Frees saved values after a backward without `retain_graph`.
    fn release_variables(&self) {}

    /// Called when this node's backward failed with anomaly detection on: reports where the
    /// node was made (the binding warns with the forward traceback it stored).
    fn report_anomaly(&self) {}

    /// Where the node's forward ran, for error messages (` at file:line`); empty if unknown.
    fn origin(&self) -> String {
        String::new()
    }

    fn as_any(&self) -> &dyn Any;
}

/// The address of a node, used as its identity by the engine.
pub fn node_id<V: GradValue>(node: &NodeRef<V>) -> usize {
    Arc::as_ptr(node) as *const () as usize
}

thread_local! {
    static DEFERRED: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Drops `value` from a loop instead of from the caller's stack. See Note [Iterative drop].
pub fn drop_deferred<T: 'static>(value: T) {
    DEFERRED.with(|d| d.borrow_mut().push(Box::new(value)));
    if DRAINING.with(|d| d.replace(true)) {
        return;
    }
    loop {
        let next = DEFERRED.with(|d| d.borrow_mut().pop());
        match next {
            Some(item) => drop(item),
            None => break,
        }
    }
    DRAINING.with(|d| d.set(false));
}
