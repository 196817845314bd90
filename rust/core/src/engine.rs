//! The backward engine: Engine::execute runs one GraphTask.
//!
//! 1. A GraphRoot node feeds the root gradients to the root edges.
//! 2. One iterative walk from the root counts, for every reachable node, how many edges point at
//!    it (its dependencies), and marks which nodes are needed: with `inputs=` only the nodes
//!    on a path to an input are run; `autograd.grad` captures the gradient arriving at each input
//!    edge instead of running its node.
//! 3. A ready queue ordered by sequence number (later nodes first, AccumulateGrad first of all)
//!    runs each node once all its dependencies have delivered; the gradients arriving at one
//!    input slot are summed in its InputBuffer first.
//! 4. Along the way the engine keeps each gradient's fresh mark, which decides whether a leaf may
//!    keep the gradient itself as its `.grad` (Note [Stealing a gradient] in accumulate.rs): a
//!    sum it makes is fresh; what a hook or `autograd.grad` sees, and what one node hands to two
//!    edges, is not.
//!
//! Nothing here recurses over the graph, so a chain of a million nodes runs in constant stack.

use std::any::Any;
use std::cmp::Ordering as CmpOrdering;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::grad_mode;
use crate::graph::{node_id, Edge, Node, NodeBase, NodeRef};
use crate::input_buffer::InputBuffer;
use crate::value::GradValue;

/// How one backward runs. An options struct, not a row of bools.
pub struct ExecuteOptions<V: GradValue> {
    /// Keep saved values for another backward (`retain_graph=True`).
    pub keep_graph: bool,
    /// Run the backward with grad mode on, so the formulas record a graph of their own (double
    /// backward) and leaves accumulate out of place (Note [Stealing a gradient]). Grad mode is
    /// restored when `execute` returns.
    pub create_graph: bool,
    /// `backward()` (true): leaves accumulate into `.grad`. `autograd.grad` (false): the
    /// gradients at `inputs` are returned and nothing is accumulated.
    pub accumulate_grad: bool,
    /// The input edges (`inputs=`); empty means every reachable leaf (backward only).
    pub inputs: Vec<Edge<V>>,
}

impl<V: GradValue> Default for ExecuteOptions<V> {
    fn default() -> Self {
        ExecuteOptions {
            keep_graph: false,
            create_graph: false,
            accumulate_grad: true,
            inputs: Vec::new(),
        }
    }
}

/// The node that starts every backward: it hands the root gradients to the roots.
struct GraphRoot<V: GradValue> {
    base: NodeBase<V>,
    grads: Mutex<Option<Vec<Option<V>>>>,
}

impl<V: GradValue> Node<V> for GraphRoot<V> {
    fn base(&self) -> &NodeBase<V> {
        &self.base
    }
    fn name(&self) -> String {
        "GraphRoot".to_string()
    }
    fn apply(&self, _grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        Ok(self
            .grads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What one GraphTask knows about one node.
struct NodeTask<V: GradValue> {
    node: NodeRef<V>,
    dependencies: usize,
    needed: bool,
    /// (input slot, index into the returned gradients)
    captures: Vec<(usize, usize)>,
    buffer: Option<InputBuffer<V>>,
}

struct Ready<V: GradValue> {
    sequence_nr: u64,
    order: u64,
    id: usize,
    node: NodeRef<V>,
}

impl<V: GradValue> PartialEq for Ready<V> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl<V: GradValue> Eq for Ready<V> {}
impl<V: GradValue> PartialOrd for Ready<V> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl<V: GradValue> Ord for Ready<V> {
    // Max-heap: larger sequence numbers first; among equals, first pushed first.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.sequence_nr
            .cmp(&other.sequence_nr)
            .then_with(|| other.order.cmp(&self.order))
    }
}

pub struct Engine;

impl Engine {
    /// Runs backward from `roots` with `grads` (one per root). Returns the gradients captured at
    /// `options.inputs` (None where nothing arrived); with `accumulate_grad` they are all None.
    pub fn execute<V: GradValue>(
        roots: Vec<Edge<V>>,
        grads: Vec<V>,
        options: ExecuteOptions<V>,
    ) -> Result<Vec<Option<V>>> {
        if roots.len() != grads.len() {
            return Err(Error::runtime(format!(
                "got {} roots but {} gradients",
                roots.len(),
                grads.len()
            )));
        }
        let n_roots = roots.len();
        let root: NodeRef<V> = Arc::new(GraphRoot {
            base: NodeBase::with_sequence_nr(u64::MAX, 0, roots.into_iter().map(Some).collect()),
            grads: Mutex::new(Some(grads.into_iter().map(Some).collect())),
        });
        debug_assert_eq!(root.base().next_edges().len(), n_roots);
        let mut task = GraphTask::discover(&root, &options);
        let _mode = GradModeGuard::set(options.create_graph);
        task.run(root, &options)
    }
}

/// Grad mode for one backward, restored on the way out (an error or a panic included).
struct GradModeGuard(bool);

impl GradModeGuard {
    fn set(enabled: bool) -> Self {
        GradModeGuard(grad_mode::set_grad_enabled(enabled))
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        grad_mode::set_grad_enabled(self.0);
    }
}

/// A hasher for keys that are addresses (node ids, code objects): a multiplicative hash spreads
/// them well enough, at a fraction of SipHash's cost (a backward hashes every node a few times).
#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type ById<T> = HashMap<usize, T, BuildHasherDefault<AddressHasher>>;

struct GraphTask<V: GradValue> {
    nodes: ById<NodeTask<V>>,
    n_captures: usize,
}

impl<V: GradValue> GraphTask<V> {
    /// Step 2: dependencies, needed nodes and captures, by one iterative depth-first walk.
    fn discover(root: &NodeRef<V>, options: &ExecuteOptions<V>) -> Self {
        let mut nodes: ById<NodeTask<V>> = ById::default();
        let filtered = !options.inputs.is_empty();
        let mut targets: ById<Vec<(usize, usize)>> = ById::default();
        for (i, edge) in options.inputs.iter().enumerate() {
            targets
                .entry(node_id(&edge.node))
                .or_default()
                .push((edge.input_nr, i));
        }
        let new_task = |node: &NodeRef<V>, targets: &ById<Vec<(usize, usize)>>| {
            let id = node_id(node);
            let (needed, captures) = match targets.get(&id) {
                Some(_) if options.accumulate_grad => (true, Vec::new()),
                Some(t) => (false, t.clone()),
                None => (!filtered, Vec::new()),
            };
            NodeTask {
                node: node.clone(),
                dependencies: 0,
                needed,
                captures,
                buffer: None,
            }
        };
        nodes.insert(node_id(root), new_task(root, &targets));
        // Post-order walk: a node's `needed` is settled after all its children's.
        let mut stack: Vec<(NodeRef<V>, Vec<NodeRef<V>>, usize)> =
            vec![(root.clone(), children(root), 0)];
        while let Some(top) = stack.last_mut() {
            if top.2 < top.1.len() {
                let child = top.1[top.2].clone();
                top.2 += 1;
                match nodes.entry(node_id(&child)) {
                    Entry::Occupied(mut o) => o.get_mut().dependencies += 1,
                    Entry::Vacant(v) => {
                        let mut t = new_task(&child, &targets);
                        t.dependencies = 1;
                        v.insert(t);
                        let kids = children(&child);
                        stack.push((child, kids, 0));
                    }
                }
            } else {
                let (node, kids, _) = stack.pop().expect("stack is not empty");
                if filtered {
                    let active = kids.iter().any(|k| {
                        nodes
                            .get(&node_id(k))
                            .is_some_and(|t| t.needed || !t.captures.is_empty())
                    });
                    if active {
                        if let Some(t) = nodes.get_mut(&node_id(&node)) {
                            t.needed = true;
                        }
                    }
                }
            }
        }
        GraphTask {
            nodes,
            n_captures: options.inputs.len(),
        }
    }

    /// Step 3: the ready queue.
    fn run(&mut self, root: NodeRef<V>, options: &ExecuteOptions<V>) -> Result<Vec<Option<V>>> {
        let mut captured: Vec<Option<V>> = vec![None; self.n_captures];
        let mut heap = BinaryHeap::new();
        let mut order = 0u64;
        heap.push(Ready {
            sequence_nr: u64::MAX,
            order,
            id: node_id(&root),
            node: root,
        });
        while let Some(Ready { id, node, .. }) = heap.pop() {
            let (needed, captures, buffer) = {
                let t = self.nodes.get_mut(&id).expect("ready node was discovered");
                (t.needed, std::mem::take(&mut t.captures), t.buffer.take())
            };
            let base = node.base();
            let mut grads = match buffer {
                Some(b) => b.into_inner(),
                None => vec![None; base.num_inputs()],
            };
            // Note [Hook order], steps 1-3.
            if base.hooks.has_tensor_hooks() {
                for (slot, g) in grads.iter_mut().enumerate() {
                    if let Some(grad) = g.take() {
                        *g = Some(base.hooks.run(slot, grad).map_err(|e| reported(&node, e))?);
                    }
                }
            }
            for (slot, index) in captures {
                if let Some(Some(g)) = grads.get_mut(slot) {
                    // The caller of autograd.grad gets it: no longer the engine's alone.
                    g.set_fresh(false);
                    captured[index] = Some(g.clone());
                }
            }
            if !needed {
                continue;
            }
            let edges: Vec<Option<Edge<V>>> = base.next_edges().clone();
            // Steps 4-7.
            let outputs =
                call_function(&node, grads, edges.len()).map_err(|e| reported(&node, e))?;
            if !options.keep_graph {
                node.release_variables();
            }
            if outputs.len() != edges.len() {
                return Err(Error::runtime(format!(
                    "function {} returned an incorrect number of gradients (expected {}, got {})",
                    node.name(),
                    edges.len(),
                    outputs.len()
                )));
            }
            for (edge, grad) in edges.into_iter().zip(outputs) {
                let Some(edge) = edge else { continue };
                let next_id = node_id(&edge.node);
                let Some(t) = self.nodes.get_mut(&next_id) else {
                    continue;
                };
                if !t.needed && t.captures.is_empty() {
                    continue;
                }
                if let Some(grad) = grad {
                    let size = t.node.base().num_inputs();
                    t.buffer
                        .get_or_insert_with(|| InputBuffer::new(size))
                        .add(edge.input_nr, grad)?;
                }
                t.dependencies -= 1;
                if t.dependencies == 0 {
                    order += 1;
                    heap.push(Ready {
                        sequence_nr: t.node.base().sequence_nr(),
                        order,
                        id: next_id,
                        node: edge.node,
                    });
                }
            }
        }
        Ok(captured)
    }
}

/// An error of a node's step (its tensor hooks, node hooks or function), reported with the
/// node's forward traceback when anomaly detection is on (see grad_mode.rs).
fn reported<V: GradValue>(node: &NodeRef<V>, e: Error) -> Error {
    if grad_mode::is_anomaly_enabled() {
        node.report_anomaly();
    }
    e
}

/// Steps 4-7 of Note [Hook order]: node pre-hooks, the node, node post-hooks, the NaN check.
fn call_function<V: GradValue>(
    node: &NodeRef<V>,
    grads: Vec<Option<V>>,
    n_edges: usize,
) -> Result<Vec<Option<V>>> {
    // A node that received no gradient at all passes None on without running. A node with no
    // inputs (GraphRoot) has nothing to receive and must always run.
    if !grads.is_empty() && grads.iter().all(Option::is_none) && n_edges != 0 {
        return Ok(vec![None; n_edges]);
    }
    let hooks = &node.base().hooks;
    let mut outputs = if hooks.is_empty() {
        validate_outputs(node, node.apply(grads)?)?
    } else {
        let mut grads = hooks.run_pre(grads)?;
        if hooks.has_post_hooks() {
            // The post-hooks see what the node received: a node that hands one on as it is
            // must not hand it on fresh.
            for g in grads.iter_mut().flatten() {
                g.set_fresh(false);
            }
            let received = grads.clone();
            let outputs = validate_outputs(node, node.apply(grads)?)?;
            hooks.run_post(outputs, &received)?
        } else {
            validate_outputs(node, node.apply(grads)?)?
        }
    };
    unshare_fresh(&mut outputs);
    if grad_mode::is_anomaly_enabled() && grad_mode::is_anomaly_check_nan_enabled() {
        for (i, out) in outputs.iter_mut().enumerate() {
            if let Some(g) = out {
                if g.has_nan()? {
                    return Err(Error::runtime(format!(
                        "Function '{}' returned nan values in its {i}th output.",
                        node.name()
                    )));
                }
            }
        }
    } else if grad_mode::is_cheap_anomaly_enabled() {
        for (i, out) in outputs.iter().enumerate() {
            if let Some(kind) = out
                .as_ref()
                .map(GradValue::non_finite)
                .transpose()?
                .flatten()
            {
                return Err(Error::runtime(format!(
                    "Function '{}' returned {kind} values in its {i}th output{}.",
                    node.name(),
                    node.origin()
                )));
            }
        }
    }
    Ok(outputs)
}

/// Note [Input metadata]
/// A formula returns each input's gradient at whatever shape and dtype its math gives, often
/// the output's (a broadcast add hands `grad` to both inputs). The node recorded, per edge,
/// the input's shape and dtype where they differed from the output's; here, before the node's
/// post-hooks see them, each such gradient is summed over the dimensions its input was
/// broadcast along and cast to the input's dtype (torch's `validate_outputs`). A gradient
/// whose shape the input's does not broadcast to is the formula's error, reported as torch's.
fn validate_outputs<V: GradValue>(
    node: &NodeRef<V>,
    mut outputs: Vec<Option<V>>,
) -> Result<Vec<Option<V>>> {
    let base = node.base();
    if !base.has_input_meta() {
        return Ok(outputs);
    }
    for (index, out) in outputs.iter_mut().enumerate() {
        let Some(meta) = base.input_meta(index) else {
            continue;
        };
        let Some(grad) = out.take() else { continue };
        match grad.conform(meta)? {
            Ok(g) => *out = Some(g),
            Err(m) => {
                return Err(Error::runtime(format!(
                    "Function {} returned an invalid gradient at index {index} - got {:?} but expected shape compatible with {:?}",
                    node.name(),
                    m.got,
                    m.expected
                )))
            }
        }
    }
    Ok(outputs)
}

/// A fresh output that shares its buffer with another output of the same node (a gradient
/// handed to two edges, or two views of one buffer) is the engine's alone no more: the first
/// leaf to keep it would see the other's writes. Both lose the mark (Note [Stealing a
/// gradient]). Only fresh outputs are compared, so a node with one output, or none fresh, costs
/// nothing.
fn unshare_fresh<V: GradValue>(outputs: &mut [Option<V>]) {
    if outputs.len() < 2 {
        return;
    }
    for i in 0..outputs.len() {
        let shared = match &outputs[i] {
            Some(g) if g.is_fresh() => outputs
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.as_ref().is_some_and(|o| g.shares_buffer(o))),
            _ => false,
        };
        if shared {
            if let Some(g) = &mut outputs[i] {
                g.set_fresh(false);
            }
        }
    }
}

/// The nodes a node's present edges point at.
fn children<V: GradValue>(node: &NodeRef<V>) -> Vec<NodeRef<V>> {
    node.base()
        .next_edges()
        .iter()
        .flatten()
        .map(|e| e.node.clone())
        .collect()
}
