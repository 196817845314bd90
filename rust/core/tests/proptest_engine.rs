//! Property test of the engine against a small reference interpreter.
//!
//! Each case is a random DAG over `f64` gradients (several leaves, interior nodes with one or two
//! input slots and random fan-in/fan-out, one or more roots), a sequence of backward calls
//! (`retain_graph` twice, then once without, then more), and between calls random hook
//! registrations and removals. The reference walks the same DAG in its own loop and predicts
//! leaf `.grad`s, captured gradients, the log of hooks and nodes that ran, which saved values
//! are freed, and the "second backward" error; the engine must agree on all of it.
//!
//! Order: within one node the engine follows Note [Hook order]; across nodes it promises
//! later-created nodes first and AccumulateGrad as soon as it is ready (ties: first ready first).
//! The reference predicts the order from those rules alone, so the whole log is compared.
//!
//! `PROPTEST_CASES=n` runs more cases than the default.

mod common;

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use rustgrad_core::{
    Edge, Engine, Error, ExecuteOptions, HookId, HookList, Node, NodeBase, NodeRef, SavedTensor,
    SavedVariables, TensorHook, VersionCounter,
};

const DEFAULT_CASES: u32 = 256;

// ---------------------------------------------------------------------------------------------
// The generated case. Selectors are raw numbers, resolved modulo what exists (`Case::resolve`),
// so every generated value is a valid case and shrinking stays simple.

#[derive(Clone, Debug)]
struct RawNode {
    slots: usize,
    saves: bool,
    /// (target selector, slot selector, weight; None: the node returns no gradient there)
    edges: Vec<(u8, u8, Option<i8>)>,
}

#[derive(Clone, Debug)]
enum RawOp {
    TensorHook {
        node: u8,
        slot: u8,
        mul: i8,
        add: i8,
    },
    RetainGrad {
        node: u8,
        slot: u8,
    },
    DropRetainGrad {
        node: u8,
        slot: u8,
    },
    PreHook {
        node: u8,
        scale: Option<i8>,
    },
    PostHook {
        node: u8,
        scale: Option<i8>,
    },
    PostAccumulateHook {
        leaf: u8,
    },
    Remove {
        pick: u8,
    },
}

#[derive(Clone, Debug)]
enum RawKind {
    Backward,
    /// `backward(inputs=leaves)`
    BackwardInputs(Vec<u8>),
    /// `autograd.grad(roots, inputs=(node, slot)...)`
    Grad(Vec<(u8, u8)>),
}

#[derive(Clone, Debug)]
struct RawCall {
    ops: Vec<RawOp>,
    kind: RawKind,
    keep: bool,
}

#[derive(Clone, Debug)]
struct RawCase {
    leaves: usize,
    nodes: Vec<RawNode>,
    roots: Vec<(u8, u8, i8)>,
    calls: Vec<RawCall>,
}

fn raw_node() -> impl Strategy<Value = RawNode> {
    let edge = (
        any::<u8>(),
        any::<u8>(),
        proptest::option::weighted(0.85, -2i8..=2),
    );
    (
        1usize..=2,
        any::<bool>(),
        prop::collection::vec(edge, 1..=3),
    )
        .prop_map(|(slots, saves, edges)| RawNode {
            slots,
            saves,
            edges,
        })
}

fn raw_op() -> impl Strategy<Value = RawOp> {
    let scale = proptest::option::of(prop_oneof![Just(-1i8), Just(2i8)]);
    prop_oneof![
        3 => (any::<u8>(), any::<u8>(), prop_oneof![Just(-1i8), Just(1), Just(2)], -1i8..=1)
            .prop_map(|(node, slot, mul, add)| RawOp::TensorHook { node, slot, mul, add }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(node, slot)| RawOp::RetainGrad { node, slot }),
        1 => (any::<u8>(), any::<u8>())
            .prop_map(|(node, slot)| RawOp::DropRetainGrad { node, slot }),
        2 => (any::<u8>(), scale.clone()).prop_map(|(node, scale)| RawOp::PreHook { node, scale }),
        2 => (any::<u8>(), scale).prop_map(|(node, scale)| RawOp::PostHook { node, scale }),
        1 => any::<u8>().prop_map(|leaf| RawOp::PostAccumulateHook { leaf }),
        2 => any::<u8>().prop_map(|pick| RawOp::Remove { pick }),
    ]
}

fn raw_call() -> impl Strategy<Value = RawCall> {
    let kind = prop_oneof![
        3 => Just(RawKind::Backward),
        1 => prop::collection::vec(any::<u8>(), 1..=3).prop_map(RawKind::BackwardInputs),
        2 => prop::collection::vec((any::<u8>(), any::<u8>()), 1..=3).prop_map(RawKind::Grad),
    ];
    (prop::collection::vec(raw_op(), 0..=4), kind, any::<bool>())
        .prop_map(|(ops, kind, keep)| RawCall { ops, kind, keep })
}

fn raw_case() -> impl Strategy<Value = RawCase> {
    (
        1usize..=4,
        prop::collection::vec(raw_node(), 1..=7),
        prop::collection::vec((any::<u8>(), any::<u8>(), -3i8..=3), 1..=3),
        prop::collection::vec(raw_call(), 3..=5),
    )
        .prop_map(|(leaves, nodes, roots, mut calls)| {
            // retain_graph twice, then without: the calls after that find saved values freed.
            for (call, keep) in calls.iter_mut().zip([true, true, false]) {
                call.keep = keep;
            }
            RawCase {
                leaves,
                nodes,
                roots,
                calls,
            }
        })
}

// ---------------------------------------------------------------------------------------------
// The resolved case. Nodes have global ids: leaves first (`0..leaves`), then interior nodes in
// creation order, so a larger id is a later node.

#[derive(Clone, Debug)]
struct NodeSpec {
    slots: usize,
    saves: bool,
    /// (target id, target slot, weight)
    edges: Vec<(usize, usize, Option<f64>)>,
}

#[derive(Clone, Debug)]
enum Op {
    TensorHook {
        node: usize,
        slot: usize,
        mul: f64,
        add: f64,
    },
    RetainGrad {
        node: usize,
        slot: usize,
    },
    DropRetainGrad {
        node: usize,
        slot: usize,
    },
    PreHook {
        node: usize,
        scale: Option<f64>,
    },
    PostHook {
        node: usize,
        scale: Option<f64>,
    },
    PostAccumulateHook {
        leaf: usize,
    },
    Remove {
        pick: usize,
    },
}

#[derive(Clone, Debug)]
enum Kind {
    Backward,
    BackwardInputs(Vec<usize>),
    Grad(Vec<(usize, usize)>),
}

#[derive(Clone, Debug)]
struct Call {
    ops: Vec<Op>,
    kind: Kind,
    keep: bool,
}

#[derive(Clone, Debug)]
struct Case {
    leaves: usize,
    /// Interior nodes; node `i` has global id `leaves + i`.
    nodes: Vec<NodeSpec>,
    /// (node id, slot, root gradient)
    roots: Vec<(usize, usize, f64)>,
    calls: Vec<Call>,
}

impl Case {
    fn resolve(raw: &RawCase) -> Case {
        let leaves = raw.leaves;
        let mut slots: Vec<usize> = vec![1; leaves];
        let mut nodes = Vec::new();
        for n in &raw.nodes {
            let before = slots.len();
            let edges = n
                .edges
                .iter()
                .map(|&(t, s, w)| {
                    let target = t as usize % before;
                    (target, s as usize % slots[target], w.map(f64::from))
                })
                .collect();
            nodes.push(NodeSpec {
                slots: n.slots,
                saves: n.saves,
                edges,
            });
            slots.push(n.slots);
        }
        let total = slots.len();
        let interior = nodes.len();
        // Mostly interior roots; a leaf now and then (`backward` of a leaf).
        let pick_root = |sel: u8| {
            if sel.is_multiple_of(8) {
                sel as usize / 8 % total
            } else {
                leaves + sel as usize % interior
            }
        };
        let slot_of = |node: usize, sel: u8| sel as usize % slots[node];
        let any_node = |sel: u8| sel as usize % total;
        let interior_node = |sel: u8| leaves + sel as usize % interior;
        let roots = raw
            .roots
            .iter()
            .map(|&(n, s, g)| {
                let node = pick_root(n);
                (node, slot_of(node, s), f64::from(g))
            })
            .collect();
        let calls = raw
            .calls
            .iter()
            .map(|c| Call {
                keep: c.keep,
                kind: match &c.kind {
                    RawKind::Backward => Kind::Backward,
                    RawKind::BackwardInputs(l) => {
                        Kind::BackwardInputs(l.iter().map(|&l| l as usize % leaves).collect())
                    }
                    RawKind::Grad(v) => Kind::Grad(
                        v.iter()
                            .map(|&(n, s)| {
                                let node = any_node(n);
                                (node, slot_of(node, s))
                            })
                            .collect(),
                    ),
                },
                ops: c
                    .ops
                    .iter()
                    .map(|op| match *op {
                        RawOp::TensorHook {
                            node,
                            slot,
                            mul,
                            add,
                        } => {
                            let node = any_node(node);
                            Op::TensorHook {
                                node,
                                slot: slot_of(node, slot),
                                mul: f64::from(mul),
                                add: f64::from(add),
                            }
                        }
                        RawOp::RetainGrad { node, slot } => {
                            let node = interior_node(node);
                            Op::RetainGrad {
                                node,
                                slot: slot_of(node, slot),
                            }
                        }
                        RawOp::DropRetainGrad { node, slot } => {
                            let node = interior_node(node);
                            Op::DropRetainGrad {
                                node,
                                slot: slot_of(node, slot),
                            }
                        }
                        RawOp::PreHook { node, scale } => Op::PreHook {
                            node: any_node(node),
                            scale: scale.map(f64::from),
                        },
                        RawOp::PostHook { node, scale } => Op::PostHook {
                            node: any_node(node),
                            scale: scale.map(f64::from),
                        },
                        RawOp::PostAccumulateHook { leaf } => Op::PostAccumulateHook {
                            leaf: leaf as usize % leaves,
                        },
                        RawOp::Remove { pick } => Op::Remove {
                            pick: pick as usize,
                        },
                    })
                    .collect(),
            })
            .collect();
        Case {
            leaves,
            nodes,
            roots,
            calls,
        }
    }

    fn total(&self) -> usize {
        self.leaves + self.nodes.len()
    }

    fn slots(&self, id: usize) -> usize {
        if id < self.leaves {
            1
        } else {
            self.nodes[id - self.leaves].slots
        }
    }

    fn is_leaf(&self, id: usize) -> bool {
        id < self.leaves
    }
}

// ---------------------------------------------------------------------------------------------
// The interior node both sides share: `lin_outputs` is its formula.

/// What an interior node sends along each edge: `weight * sum over slots of (slot + 1) * grad`,
/// None where the weight is None or nothing arrived. Summed in slot order on both sides.
fn lin_outputs(weights: &[Option<f64>], grads: &[Option<f64>]) -> Vec<Option<f64>> {
    let sum = grads
        .iter()
        .enumerate()
        .filter_map(|(slot, g)| g.map(|g| (slot + 1) as f64 * g))
        .reduce(|a, b| a + b);
    weights
        .iter()
        .map(|w| match (w, sum) {
            (Some(w), Some(s)) => Some(w * s),
            _ => None,
        })
        .collect()
}

/// An interior node: logs its name when it runs, then unpacks its saved value (if it saved one)
/// and applies `lin_outputs`.
struct Lin {
    base: NodeBase<f64>,
    name: String,
    weights: Vec<Option<f64>>,
    saved: SavedVariables<f64>,
    log: Log,
}

impl Node<f64> for Lin {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> rustgrad_core::Result<Vec<Option<f64>>> {
        self.log.lock().unwrap().push(self.name.clone());
        self.saved
            .unpack_all(&self.name, |_| "torch.DoubleTensor []".to_string())?;
        Ok(lin_outputs(&self.weights, &grads))
    }
    fn release_variables(&self) {
        self.saved.release();
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn node_name(case: &Case, id: usize) -> String {
    if case.is_leaf(id) {
        format!("x{id}")
    } else {
        format!("n{}", id - case.leaves)
    }
}

// ---------------------------------------------------------------------------------------------
// The engine side: the graph built from the case, and its hook lists.

/// One tensor's hook list, as `Tensor.register_hook` fills it.
type TensorHooks = HookList<dyn TensorHook<f64>>;

struct Built {
    log: Log,
    leaves: Vec<Leaf<f64>>,
    lins: Vec<Arc<Lin>>,
    /// Global id -> node (a leaf's AccumulateGrad, or a Lin).
    refs: Vec<NodeRef<f64>>,
    /// The hook list of the tensor that is (interior node, slot), attached on first use.
    tensor_lists: HashMap<(usize, usize), Arc<TensorHooks>>,
}

impl Built {
    fn new(case: &Case) -> Built {
        let log = new_log();
        let leaves: Vec<Leaf<f64>> = (0..case.leaves)
            .map(|j| Leaf::new(&node_name(case, j), Some(&log)))
            .collect();
        let mut refs: Vec<NodeRef<f64>> = leaves.iter().map(|l| l.node.clone()).collect();
        let mut lins = Vec::new();
        for (i, spec) in case.nodes.iter().enumerate() {
            let saved = if spec.saves {
                vec![SavedTensor::new(1.0, VersionCounter::new(), 0)]
            } else {
                Vec::new()
            };
            let lin = Arc::new(Lin {
                base: NodeBase::new(
                    spec.slots,
                    spec.edges
                        .iter()
                        .map(|&(t, s, _)| Some(Edge::new(refs[t].clone(), s)))
                        .collect(),
                ),
                name: node_name(case, case.leaves + i),
                weights: spec.edges.iter().map(|e| e.2).collect(),
                saved: SavedVariables::new(saved),
                log: log.clone(),
            });
            refs.push(lin.clone());
            lins.push(lin);
        }
        Built {
            log,
            leaves,
            lins,
            refs,
            tensor_lists: HashMap::new(),
        }
    }

    fn tensor_list(&mut self, node: usize, slot: usize) -> Arc<TensorHooks> {
        if let Some(leaf) = self.leaves.get(node) {
            return leaf.tensor_hooks.clone();
        }
        let refs = &self.refs;
        self.tensor_lists
            .entry((node, slot))
            .or_insert_with(|| {
                let list: Arc<TensorHooks> = Arc::new(HookList::default());
                refs[node]
                    .base()
                    .hooks
                    .add_tensor_pre_hooks(slot, list.clone());
                list
            })
            .clone()
    }

    fn execute(&self, case: &Case, call: &Call) -> rustgrad_core::Result<Vec<Option<f64>>> {
        let roots = case
            .roots
            .iter()
            .map(|&(n, s, _)| Edge::new(self.refs[n].clone(), s))
            .collect();
        let grads = case.roots.iter().map(|r| r.2).collect();
        let (accumulate_grad, inputs) = match &call.kind {
            Kind::Backward => (true, Vec::new()),
            Kind::BackwardInputs(l) => (true, l.iter().map(|&j| self.leaves[j].edge()).collect()),
            Kind::Grad(v) => (
                false,
                v.iter()
                    .map(|&(n, s)| Edge::new(self.refs[n].clone(), s))
                    .collect(),
            ),
        };
        Engine::execute(
            roots,
            grads,
            ExecuteOptions {
                keep_graph: call.keep,
                create_graph: false,
                accumulate_grad,
                inputs,
            },
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The reference side: the hooks as plain data, and an interpreter of one backward call.

#[derive(Clone, Copy, Debug, PartialEq)]
enum HookKind {
    Tensor { node: usize, slot: usize },
    Pre { node: usize },
    Post { node: usize },
    PostAccumulate { leaf: usize },
}

/// One registration: our name for it (`k`), the engine's id, and whether it is still there.
struct Handle {
    kind: HookKind,
    k: usize,
    id: HookId,
    live: bool,
}

/// A tensor hook as the reference knows it: (k, mul, add).
type AffineSpec = (usize, f64, f64);

#[derive(Default)]
struct Reference {
    /// (node, slot) -> tensor hooks in registration order.
    tensor: HashMap<(usize, usize), Vec<AffineSpec>>,
    /// (node, slot) -> the retains-grad hook's k.
    retains: HashMap<(usize, usize), usize>,
    /// node -> pre-hooks / post-hooks (k, scale) in registration order.
    pre: HashMap<usize, Vec<(usize, Option<f64>)>>,
    post: HashMap<usize, Vec<(usize, Option<f64>)>>,
    /// leaf -> post-accumulate-grad hooks' k.
    post_accumulate: HashMap<usize, Vec<usize>>,
    /// Interior nodes whose saved value was freed.
    released: HashSet<usize>,
    /// Each leaf's `.grad`.
    grads: Vec<Option<f64>>,
}

/// The interpreter's answer for one call.
#[derive(Debug, PartialEq)]
enum Outcome {
    Ok(Vec<Option<f64>>),
    SecondBackward,
}

/// A node of one call's graph: the GraphRoot, or a node of the case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum At {
    Root,
    Node(usize),
}

impl Reference {
    fn new(case: &Case) -> Self {
        Reference {
            grads: vec![None; case.leaves],
            ..Default::default()
        }
    }

    /// The edges of a node of this call's graph: (target, slot).
    fn edges(case: &Case, at: At) -> Vec<(usize, usize)> {
        match at {
            At::Root => case.roots.iter().map(|r| (r.0, r.1)).collect(),
            At::Node(id) if case.is_leaf(id) => Vec::new(),
            At::Node(id) => case.nodes[id - case.leaves]
                .edges
                .iter()
                .map(|e| (e.0, e.1))
                .collect(),
        }
    }

    /// Runs one call: returns what it logged and its outcome, and updates `.grad`s and
    /// released saved values.
    fn run(&mut self, case: &Case, call: &Call) -> (Vec<String>, Outcome) {
        let total = case.total();
        // Which nodes the roots reach.
        let mut reached = vec![false; total];
        let mut stack: Vec<usize> = case.roots.iter().map(|r| r.0).collect();
        while let Some(n) = stack.pop() {
            if !std::mem::replace(&mut reached[n], true) {
                stack.extend(Self::edges(case, At::Node(n)).into_iter().map(|e| e.0));
            }
        }
        // inputs= as (node, slot); a capture goes to the same index of the result.
        let (accumulate, inputs): (bool, Vec<(usize, usize)>) = match &call.kind {
            Kind::Backward => (true, Vec::new()),
            Kind::BackwardInputs(l) => (true, l.iter().map(|&j| (j, 0)).collect()),
            Kind::Grad(v) => (false, v.clone()),
        };
        let filtered = !inputs.is_empty();
        let is_target = |n: usize| inputs.iter().any(|i| i.0 == n);
        // needed: runs its function; captures: gradients taken for autograd.grad.
        // Ids grow along creation and edges point at earlier nodes: one ascending pass settles
        // every node after the nodes it points at.
        let mut needed = vec![false; total];
        let mut captures = vec![false; total];
        for n in 0..total {
            if !reached[n] {
                continue;
            }
            captures[n] = !accumulate && is_target(n);
            needed[n] = !filtered
                || (accumulate && is_target(n))
                || Self::edges(case, At::Node(n))
                    .iter()
                    .any(|&(t, _)| needed[t] || captures[t]);
        }
        let active = |n: usize| needed[n] || captures[n];
        let root_needed = !filtered || case.roots.iter().any(|r| active(r.0));

        // The order the nodes are taken in: the root, then interior nodes latest first; a leaf
        // right after the last of its parents is taken (ties: the order its last edge came in).
        let interior: Vec<usize> = (case.leaves..total).rev().filter(|&n| active(n)).collect();
        let parents_in_order: Vec<At> = std::iter::once(At::Root)
            .chain(interior.iter().map(|&n| At::Node(n)))
            .collect();
        let mut order: Vec<At> = Vec::new();
        let mut placed: HashSet<usize> = HashSet::new();
        let mut pending: Vec<usize> = (0..case.leaves).filter(|&l| active(l)).collect();
        for &parent in &parents_in_order {
            let parent_runs = match parent {
                At::Root => root_needed,
                At::Node(n) => needed[n],
            };
            order.push(parent);
            if !parent_runs {
                // A node taken only for its captures passes nothing on.
                continue;
            }
            // Leaves whose parents have all been taken now, by position of the edge that
            // readied them.
            let edges = Self::edges(case, parent);
            let mut ready: Vec<(usize, usize)> = Vec::new();
            for &leaf in &pending {
                let last_edge = edges.iter().rposition(|e| e.0 == leaf);
                let Some(pos) = last_edge else { continue };
                let later_parent = parents_in_order
                    .iter()
                    .skip_while(|p| **p != parent)
                    .skip(1)
                    .any(|p| Self::edges(case, *p).iter().any(|e| e.0 == leaf));
                if !later_parent {
                    ready.push((pos, leaf));
                }
            }
            ready.sort();
            for (_, leaf) in ready {
                placed.insert(leaf);
                order.push(At::Node(leaf));
            }
            pending.retain(|l| !placed.contains(l));
        }
        assert!(
            pending.is_empty(),
            "reference: leaves never readied: {pending:?}"
        );

        // Evaluate in that order, summing what arrives at each slot in arrival order.
        let mut log: Vec<String> = Vec::new();
        let mut result: Vec<Option<f64>> = vec![None; inputs.len()];
        let mut buffers: HashMap<usize, Vec<Option<f64>>> = HashMap::new();
        let mut released_now: Vec<usize> = Vec::new();
        let mut outcome = None;
        for at in order {
            let outputs: Vec<Option<f64>> = match at {
                At::Root => {
                    if !root_needed {
                        continue;
                    }
                    case.roots.iter().map(|r| Some(r.2)).collect()
                }
                At::Node(n) => {
                    let mut grads = buffers
                        .remove(&n)
                        .unwrap_or_else(|| vec![None; case.slots(n)]);
                    // Steps 1-2: tensor hooks, then the retains-grad hook, per slot.
                    for (slot, g) in grads.iter_mut().enumerate() {
                        let Some(mut v) = *g else { continue };
                        for &(k, mul, add) in self.tensor.get(&(n, slot)).into_iter().flatten() {
                            log.push(format!("t{k}:{v}"));
                            // common's Affine: an identity hook only observes
                            if (mul, add) != (1.0, 0.0) {
                                v = v * mul + add;
                            }
                        }
                        if let Some(k) = self.retains.get(&(n, slot)) {
                            log.push(format!("r{k}:{v}"));
                        }
                        *g = Some(v);
                    }
                    // Step 3: captures.
                    for (index, &(node, slot)) in inputs.iter().enumerate() {
                        if captures[n] && node == n {
                            result[index] = grads[slot];
                        }
                    }
                    if !needed[n] {
                        continue;
                    }
                    let n_edges = Self::edges(case, at).len();
                    // A node that received nothing is skipped, unless it has no edges (an
                    // AccumulateGrad): the engine still runs that one's node hooks (as torch
                    // does), though Note [Hook order] says otherwise.
                    let outputs = if grads.iter().all(Option::is_none) && n_edges != 0 {
                        vec![None; n_edges]
                    } else {
                        // Step 4: node pre-hooks.
                        for &(k, scale) in self.pre.get(&n).into_iter().flatten() {
                            log.push(format!("p{k}:{grads:?}"));
                            if let Some(s) = scale {
                                grads = grads.iter().map(|g| g.map(|g| g * s)).collect();
                            }
                        }
                        // Step 5: the node.
                        let mut outputs = if case.is_leaf(n) {
                            if let Some(g) = grads[0] {
                                let new = match self.grads[n] {
                                    None => g,
                                    Some(old) => old + g,
                                };
                                self.grads[n] = Some(new);
                                log.push(node_name(case, n));
                                for k in self.post_accumulate.get(&n).into_iter().flatten() {
                                    log.push(format!("a{k}:{:?}", Some(new)));
                                }
                            }
                            Vec::new()
                        } else {
                            log.push(node_name(case, n));
                            let spec = &case.nodes[n - case.leaves];
                            if spec.saves && self.released.contains(&n) {
                                outcome = Some(Outcome::SecondBackward);
                                break;
                            }
                            let weights: Vec<Option<f64>> =
                                spec.edges.iter().map(|e| e.2).collect();
                            lin_outputs(&weights, &grads)
                        };
                        // Step 6: node post-hooks.
                        for &(k, scale) in self.post.get(&n).into_iter().flatten() {
                            log.push(format!("q{k}:{outputs:?}/{grads:?}"));
                            if let Some(s) = scale {
                                outputs = outputs.iter().map(|g| g.map(|g| g * s)).collect();
                            }
                        }
                        outputs
                    };
                    // Released after the function, whether or not it received anything.
                    if !call.keep && !case.is_leaf(n) && case.nodes[n - case.leaves].saves {
                        released_now.push(n);
                    }
                    outputs
                }
            };
            for ((target, slot), grad) in Self::edges(case, at).into_iter().zip(outputs) {
                if !active(target) {
                    continue;
                }
                let Some(grad) = grad else { continue };
                let buffer = buffers
                    .entry(target)
                    .or_insert_with(|| vec![None; case.slots(target)]);
                buffer[slot] = Some(match buffer[slot] {
                    None => grad,
                    Some(old) => old + grad,
                });
            }
        }
        self.released.extend(released_now);
        (log, outcome.unwrap_or(Outcome::Ok(result)))
    }
}

// ---------------------------------------------------------------------------------------------
// Both sides, driven together.

struct Harness {
    case: Case,
    built: Built,
    reference: Reference,
    handles: Vec<Handle>,
    next_k: usize,
}

impl Harness {
    fn new(case: Case) -> Self {
        let built = Built::new(&case);
        let reference = Reference::new(&case);
        Harness {
            case,
            built,
            reference,
            handles: Vec::new(),
            next_k: 0,
        }
    }

    fn fresh_k(&mut self) -> usize {
        self.next_k += 1;
        self.next_k
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let log = self.built.log.clone();
        match *op {
            Op::TensorHook {
                node,
                slot,
                mul,
                add,
            } => {
                let k = self.fresh_k();
                let list = self.built.tensor_list(node, slot);
                let id = list.push(Affine::hook(&format!("t{k}"), mul, add, &log));
                self.reference
                    .tensor
                    .entry((node, slot))
                    .or_default()
                    .push((k, mul, add));
                self.handles.push(Handle {
                    kind: HookKind::Tensor { node, slot },
                    k,
                    id,
                    live: true,
                });
            }
            Op::RetainGrad { node, slot } => {
                let k = self.fresh_k();
                let old = self.built.refs[node]
                    .base()
                    .hooks
                    .set_retains_grad(slot, Affine::observer(&format!("r{k}"), &log));
                let had = self.reference.retains.insert((node, slot), k).is_some();
                prop_assert_eq!(old.is_some(), had, "retain_grad replaced a hook");
            }
            Op::DropRetainGrad { node, slot } => {
                let taken = self.built.refs[node].base().hooks.take_retains_grad(slot);
                let had = self.reference.retains.remove(&(node, slot)).is_some();
                prop_assert_eq!(taken.is_some(), had, "take_retains_grad");
            }
            Op::PreHook { node, scale } => {
                let k = self.fresh_k();
                let hook = PreRecorder::hook(&format!("p{k}"), scale, &log);
                let id = self.built.refs[node].base().hooks.pre_hooks().push(hook);
                self.reference.pre.entry(node).or_default().push((k, scale));
                self.handles.push(Handle {
                    kind: HookKind::Pre { node },
                    k,
                    id,
                    live: true,
                });
            }
            Op::PostHook { node, scale } => {
                let k = self.fresh_k();
                let hook = PostNodeRecorder::hook(&format!("q{k}"), scale, &log);
                let id = self.built.refs[node].base().hooks.post_hooks().push(hook);
                self.reference
                    .post
                    .entry(node)
                    .or_default()
                    .push((k, scale));
                self.handles.push(Handle {
                    kind: HookKind::Post { node },
                    k,
                    id,
                    live: true,
                });
            }
            Op::PostAccumulateHook { leaf } => {
                let k = self.fresh_k();
                let l = &self.built.leaves[leaf];
                let id = l
                    .post_hooks
                    .push(PostRecorder::hook(&format!("a{k}"), l, &log));
                self.reference
                    .post_accumulate
                    .entry(leaf)
                    .or_default()
                    .push(k);
                self.handles.push(Handle {
                    kind: HookKind::PostAccumulate { leaf },
                    k,
                    id,
                    live: true,
                });
            }
            Op::Remove { pick } => {
                if self.handles.is_empty() {
                    return Ok(());
                }
                let i = pick % self.handles.len();
                let (kind, k, id, live) = {
                    let h = &self.handles[i];
                    (h.kind, h.k, h.id, h.live)
                };
                let removed = match kind {
                    HookKind::Tensor { node, slot } => {
                        let list = self.built.tensor_list(node, slot);
                        if let Some(hooks) = self.reference.tensor.get_mut(&(node, slot)) {
                            hooks.retain(|h| h.0 != k);
                        }
                        list.remove(id)
                    }
                    HookKind::Pre { node } => {
                        if let Some(hooks) = self.reference.pre.get_mut(&node) {
                            hooks.retain(|h| h.0 != k);
                        }
                        self.built.refs[node].base().hooks.pre_hooks().remove(id)
                    }
                    HookKind::Post { node } => {
                        if let Some(hooks) = self.reference.post.get_mut(&node) {
                            hooks.retain(|h| h.0 != k);
                        }
                        self.built.refs[node].base().hooks.post_hooks().remove(id)
                    }
                    HookKind::PostAccumulate { leaf } => {
                        if let Some(hooks) = self.reference.post_accumulate.get_mut(&leaf) {
                            hooks.retain(|h| *h != k);
                        }
                        self.built.leaves[leaf].post_hooks.remove(id)
                    }
                };
                // Removing twice is harmless and says so.
                prop_assert_eq!(removed, live, "remove of {:?} k={}", kind, k);
                self.handles[i].live = false;
            }
        }
        Ok(())
    }

    fn check_call(&mut self, i: usize) -> Result<(), TestCaseError> {
        let call = self.case.calls[i].clone();
        for op in &call.ops {
            self.apply(op)?;
        }
        self.built.log.lock().unwrap().clear();
        let got = self.built.execute(&self.case, &call);
        let ran = entries(&self.built.log);
        let (expected_log, expected) = self.reference.run(&self.case, &call);

        let got = match got {
            Ok(v) => Outcome::Ok(v),
            Err(Error::SecondBackward) => Outcome::SecondBackward,
            Err(e) => return Err(TestCaseError::fail(format!("call {i}: engine error {e}"))),
        };
        prop_assert_eq!(&got, &expected, "call {}: outcome", i);
        prop_assert_eq!(&ran, &expected_log, "call {}: what ran, in order", i);
        let grads: Vec<Option<f64>> = self.built.leaves.iter().map(Leaf::grad).collect();
        prop_assert_eq!(&grads, &self.reference.grads, "call {}: leaf .grad", i);
        let released: Vec<bool> = self
            .built
            .lins
            .iter()
            .map(|lin| lin.saved.is_released())
            .collect();
        let expected_released: Vec<bool> = (0..self.case.nodes.len())
            .map(|j| self.reference.released.contains(&(self.case.leaves + j)))
            .collect();
        prop_assert_eq!(
            &released,
            &expected_released,
            "call {}: freed saved values",
            i
        );
        Ok(())
    }
}

fn check(raw: &RawCase) -> Result<(), TestCaseError> {
    let case = Case::resolve(raw);
    let mut harness = Harness::new(case.clone());
    for i in 0..case.calls.len() {
        harness
            .check_call(i)
            .map_err(|e| TestCaseError::fail(format!("{e}\nresolved case: {case:#?}")))?;
    }
    Ok(())
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config {
        cases,
        // A failing case is printed (raw and resolved); no regression file is written.
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn engine_agrees_with_reference_interpreter(raw in raw_case()) {
        check(&raw)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The reference on a hand-made case, so a wrong reference cannot agree with a wrong engine
// unnoticed.

#[test]
fn reference_interpreter_gives_known_answers_on_a_diamond() {
    // x0 <- n0 = 2 x0 <- (n1 = 3 n0, n2 = 5 n0) <- roots n1 and n2 with gradient 1:
    // dx0 = 2 * (3 + 5) = 16; with a tensor hook doubling n0's gradient, 32.
    let case = Case {
        leaves: 1,
        nodes: vec![
            NodeSpec {
                slots: 1,
                saves: true,
                edges: vec![(0, 0, Some(2.0))],
            },
            NodeSpec {
                slots: 1,
                saves: false,
                edges: vec![(1, 0, Some(3.0))],
            },
            NodeSpec {
                slots: 1,
                saves: false,
                edges: vec![(1, 0, Some(5.0))],
            },
        ],
        roots: vec![(2, 0, 1.0), (3, 0, 1.0)],
        calls: Vec::new(),
    };
    let plain = Call {
        ops: Vec::new(),
        kind: Kind::Backward,
        keep: false,
    };
    let mut reference = Reference::new(&case);
    let (log, outcome) = reference.run(&case, &plain);
    assert_eq!(outcome, Outcome::Ok(Vec::new()));
    assert_eq!(log, ["n2", "n1", "n0", "x0"]);
    assert_eq!(reference.grads, [Some(16.0)]);
    assert!(reference.released.contains(&1));

    // n0 saved a value and it is freed now.
    let (log, outcome) = reference.run(&case, &plain);
    assert_eq!(outcome, Outcome::SecondBackward);
    assert_eq!(log, ["n2", "n1", "n0"]);

    let mut reference = Reference::new(&case);
    reference.tensor.insert((1, 0), vec![(7, 2.0, 0.0)]);
    let grad = Call {
        ops: Vec::new(),
        kind: Kind::Grad(vec![(0, 0), (1, 0)]),
        keep: true,
    };
    let (log, outcome) = reference.run(&case, &grad);
    assert_eq!(outcome, Outcome::Ok(vec![Some(32.0), Some(16.0)]));
    assert_eq!(log, ["n2", "n1", "t7:8", "n0"]);
    assert_eq!(reference.grads, [None]);
}
