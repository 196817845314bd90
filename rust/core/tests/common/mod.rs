//! Toy nodes, sinks and hooks for the engine tests: gradients are `f64` (or `Vec<f64>`), nodes
//! record what they did into a shared log.

#![allow(dead_code)]

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustgrad_core::{
    AccumulateGrad, Accumulation, Edge, Engine, Error, ExecuteOptions, GradSink, GradValue,
    HookList, LeafGrad, Node, NodeBase, NodePostHook, NodePreHook, NodeRef, PostAccumulateHook,
    Result, SavedVariables, TensorHook,
};

/// What ran, in order.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn record(log: &Option<Log>, entry: String) {
    if let Some(log) = log {
        log.lock().unwrap().push(entry);
    }
}

/// An edge to input slot 0 of `node`.
pub fn edge<V: GradValue>(node: &NodeRef<V>) -> Option<Edge<V>> {
    Some(Edge::new(node.clone(), 0))
}

/// `backward()` from one root with gradient `grad`, defaults otherwise.
pub fn backward(root: &NodeRef<f64>, grad: f64) -> Result<Vec<Option<f64>>> {
    Engine::execute(
        vec![Edge::new(root.clone(), 0)],
        vec![grad],
        ExecuteOptions::default(),
    )
}

/// The foreign error the toy nodes and hooks fail with.
pub fn boom() -> Error {
    Error::Foreign(Box::new("boom"))
}

/// Whether `err` is the error made by `boom()`.
pub fn is_boom(err: &Error) -> bool {
    match err {
        Error::Foreign(payload) => payload.downcast_ref::<&str>() == Some(&"boom"),
        _ => false,
    }
}

/// `y = factor * x` for every input `x`: sends `factor * (sum of the received gradients)` to each
/// edge, and logs its name when it runs.
pub struct Mul {
    base: NodeBase<f64>,
    name: String,
    factor: f64,
    log: Option<Log>,
}

impl Mul {
    pub fn node(
        name: &str,
        factor: f64,
        inputs: &[&NodeRef<f64>],
        log: Option<&Log>,
    ) -> NodeRef<f64> {
        Self::with_edges(
            name,
            factor,
            1,
            inputs.iter().map(|n| edge(n)).collect(),
            log,
        )
    }

    pub fn with_edges(
        name: &str,
        factor: f64,
        num_inputs: usize,
        edges: Vec<Option<Edge<f64>>>,
        log: Option<&Log>,
    ) -> NodeRef<f64> {
        Arc::new(Mul {
            base: NodeBase::new(num_inputs, edges),
            name: name.to_string(),
            factor,
            log: log.cloned(),
        })
    }
}

impl Node<f64> for Mul {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        record(&self.log, self.name.clone());
        let sum: Option<f64> = grads.into_iter().flatten().reduce(|a, b| a + b);
        let n = self.base.next_edges().len();
        Ok(vec![sum.map(|g| g * self.factor); n])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `y = a + b + ...`: passes the gradient it receives through to each of its edges unchanged.
pub struct Add<V: GradValue> {
    base: NodeBase<V>,
    name: String,
    log: Option<Log>,
}

impl<V: GradValue> Add<V> {
    pub fn node(name: &str, inputs: &[&NodeRef<V>], log: Option<&Log>) -> NodeRef<V> {
        Arc::new(Add {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect()),
            name: name.to_string(),
            log: log.cloned(),
        })
    }
}

impl<V: GradValue> Node<V> for Add<V> {
    fn base(&self) -> &NodeBase<V> {
        &self.base
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn apply(&self, grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        record(&self.log, self.name.clone());
        let g = grads.into_iter().next().flatten();
        let n = self.base.next_edges().len();
        Ok(vec![g; n])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Ignores what it receives and sends `value` to each edge.
pub struct Emit<V: GradValue> {
    base: NodeBase<V>,
    value: V,
}

impl<V: GradValue> Emit<V> {
    pub fn node(value: V, inputs: &[&NodeRef<V>]) -> NodeRef<V> {
        Arc::new(Emit {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect()),
            value,
        })
    }

    /// An Emit that recorded `meta` for its edges (Note [Input metadata]).
    pub fn with_meta(
        value: V,
        inputs: &[&NodeRef<V>],
        meta: Vec<Option<V::InputMeta>>,
    ) -> NodeRef<V> {
        Arc::new(Emit {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect())
                .with_input_meta(Some(meta.into_boxed_slice())),
            value,
        })
    }
}

impl<V: GradValue> Node<V> for Emit<V> {
    fn base(&self) -> &NodeBase<V> {
        &self.base
    }
    fn name(&self) -> String {
        "Emit".to_string()
    }
    fn apply(&self, _grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        let n = self.base.next_edges().len();
        Ok(vec![Some(self.value.clone()); n])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Logs the gradients it received, slot by slot, and sends nothing on (None to every edge).
pub struct Slots {
    base: NodeBase<f64>,
    log: Log,
}

impl Slots {
    pub fn node(num_inputs: usize, inputs: &[&NodeRef<f64>], log: &Log) -> NodeRef<f64> {
        Arc::new(Slots {
            base: NodeBase::new(num_inputs, inputs.iter().map(|n| edge(n)).collect()),
            log: log.clone(),
        })
    }
}

impl Node<f64> for Slots {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "Slots".to_string()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        self.log.lock().unwrap().push(format!("{grads:?}"));
        Ok(vec![None; self.base.next_edges().len()])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A node whose backward fails with `boom()`.
pub struct Failing {
    base: NodeBase<f64>,
}

impl Failing {
    pub fn node(inputs: &[&NodeRef<f64>]) -> NodeRef<f64> {
        Arc::new(Failing {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect()),
        })
    }
}

impl Node<f64> for Failing {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "FailingBackward".to_string()
    }
    fn apply(&self, _grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        Err(boom())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A node returning one gradient more than it has edges.
pub struct WrongArity {
    base: NodeBase<f64>,
}

impl WrongArity {
    pub fn node(inputs: &[&NodeRef<f64>]) -> NodeRef<f64> {
        Arc::new(WrongArity {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect()),
        })
    }
}

impl Node<f64> for WrongArity {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "WrongArityBackward".to_string()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        let g = grads.into_iter().next().flatten();
        Ok(vec![g; self.base.next_edges().len() + 1])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `y = x * c` with `c` saved for backward: multiplies the gradient by the product of its saved
/// values, and frees them in `release_variables`.
pub struct SavedMul {
    base: NodeBase<f64>,
    pub saved: SavedVariables<f64>,
}

impl SavedMul {
    pub fn new(saved: SavedVariables<f64>, inputs: &[&NodeRef<f64>]) -> Arc<SavedMul> {
        Arc::new(SavedMul {
            base: NodeBase::new(1, inputs.iter().map(|n| edge(n)).collect()),
            saved,
        })
    }
}

impl Node<f64> for SavedMul {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "MulBackward0".to_string()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        let saved = self
            .saved
            .unpack_all(&self.name(), |_| "torch.DoubleTensor []".to_string())?;
        let factor: f64 = saved.iter().product();
        let g = grads.into_iter().next().flatten();
        Ok(vec![g.map(|g| g * factor); self.base.next_edges().len()])
    }
    fn release_variables(&self) {
        self.saved.release();
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Passes its gradient through to its edges and counts how often it ran (for long chains).
pub struct Counted {
    base: NodeBase<f64>,
    runs: Arc<AtomicUsize>,
}

impl Counted {
    pub fn node(prev: NodeRef<f64>, runs: &Arc<AtomicUsize>) -> NodeRef<f64> {
        Arc::new(Counted {
            base: NodeBase::new(1, vec![Some(Edge::new(prev, 0))]),
            runs: runs.clone(),
        })
    }
}

impl Node<f64> for Counted {
    fn base(&self) -> &NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "CountedBackward".to_string()
    }
    fn apply(&self, grads: Vec<Option<f64>>) -> Result<Vec<Option<f64>>> {
        self.runs.fetch_add(1, Ordering::Relaxed);
        let g = grads.into_iter().next().flatten();
        Ok(vec![g; self.base.next_edges().len()])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A leaf's `.grad`: sums what it receives into a shared cell, and logs `name` when it does.
pub struct CellSink<V> {
    pub grad: Arc<Mutex<Option<V>>>,
    name: String,
    log: Option<Log>,
}

impl<V: GradValue> GradSink<V> for CellSink<V> {
    fn current(&self) -> Result<LeafGrad> {
        Ok(match *self.grad.lock().unwrap() {
            Some(_) => LeafGrad::Plain,
            None => LeafGrad::Unset,
        })
    }
    fn fits(&self, _grad: &V) -> Result<bool> {
        Ok(true)
    }
    // Plain values: taking and copying store the same thing, and so do both kinds of add.
    fn accumulate(&self, grad: V, _how: Accumulation) -> Result<()> {
        let mut cell = self.grad.lock().unwrap();
        *cell = Some(match cell.take() {
            None => grad,
            Some(old) => old.add(&grad)?,
        });
        drop(cell);
        record(&self.log, self.name.clone());
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A leaf tensor: its `.grad` cell, its hook lists, and an AccumulateGrad node writing into them.
pub struct Leaf<V: GradValue> {
    pub grad: Arc<Mutex<Option<V>>>,
    pub tensor_hooks: Arc<HookList<dyn TensorHook<V>>>,
    pub post_hooks: Arc<HookList<dyn PostAccumulateHook>>,
    pub node: NodeRef<V>,
    name: String,
    log: Option<Log>,
}

impl<V: GradValue> Leaf<V> {
    pub fn new(name: &str, log: Option<&Log>) -> Self {
        let grad = Arc::new(Mutex::new(None));
        let tensor_hooks: Arc<HookList<dyn TensorHook<V>>> = Arc::new(HookList::default());
        let post_hooks: Arc<HookList<dyn PostAccumulateHook>> = Arc::new(HookList::default());
        let node = Self::accumulate_node(&grad, &tensor_hooks, &post_hooks, name, log);
        Leaf {
            grad,
            tensor_hooks,
            post_hooks,
            node,
            name: name.to_string(),
            log: log.cloned(),
        }
    }

    /// A fresh AccumulateGrad for this leaf, sharing its `.grad` and hook lists (as the binding
    /// makes one per graph).
    pub fn fresh_node(&self) -> NodeRef<V> {
        Self::accumulate_node(
            &self.grad,
            &self.tensor_hooks,
            &self.post_hooks,
            &self.name,
            self.log.as_ref(),
        )
    }

    fn accumulate_node(
        grad: &Arc<Mutex<Option<V>>>,
        tensor_hooks: &Arc<HookList<dyn TensorHook<V>>>,
        post_hooks: &Arc<HookList<dyn PostAccumulateHook>>,
        name: &str,
        log: Option<&Log>,
    ) -> NodeRef<V> {
        let sink = Arc::new(CellSink {
            grad: grad.clone(),
            name: name.to_string(),
            log: log.cloned(),
        });
        Arc::new(AccumulateGrad::new(
            sink,
            tensor_hooks.clone(),
            post_hooks.clone(),
        ))
    }

    pub fn grad(&self) -> Option<V> {
        self.grad.lock().unwrap().clone()
    }

    pub fn edge(&self) -> Edge<V> {
        Edge::new(self.node.clone(), 0)
    }
}

/// A tensor hook that logs `name:grad` and returns `grad * mul + add` (None when it is the
/// identity, i.e. it only observes).
pub struct Affine {
    name: String,
    mul: f64,
    add: f64,
    log: Log,
}

impl Affine {
    pub fn hook(name: &str, mul: f64, add: f64, log: &Log) -> Arc<dyn TensorHook<f64>> {
        Arc::new(Affine {
            name: name.to_string(),
            mul,
            add,
            log: log.clone(),
        })
    }

    /// A hook that only observes.
    pub fn observer(name: &str, log: &Log) -> Arc<dyn TensorHook<f64>> {
        Self::hook(name, 1.0, 0.0, log)
    }
}

impl TensorHook<f64> for Affine {
    fn call(&self, grad: &f64) -> Result<Option<f64>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.name, grad));
        if self.mul == 1.0 && self.add == 0.0 {
            Ok(None)
        } else {
            Ok(Some(grad * self.mul + self.add))
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A tensor hook that fails with `boom()`.
pub struct FailingHook;

impl TensorHook<f64> for FailingHook {
    fn call(&self, _grad: &f64) -> Result<Option<f64>> {
        Err(boom())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A post-accumulate-grad hook that logs `name:<the leaf's .grad>`.
pub struct PostRecorder {
    name: String,
    grad: Arc<Mutex<Option<f64>>>,
    log: Log,
}

impl PostRecorder {
    pub fn hook(name: &str, leaf: &Leaf<f64>, log: &Log) -> Arc<dyn PostAccumulateHook> {
        Arc::new(PostRecorder {
            name: name.to_string(),
            grad: leaf.grad.clone(),
            log: log.clone(),
        })
    }
}

impl PostAccumulateHook for PostRecorder {
    fn call(&self) -> Result<()> {
        let grad = *self.grad.lock().unwrap();
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{:?}", self.name, grad));
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A post-accumulate-grad hook that fails with `boom()`.
pub struct FailingPostHook;

impl PostAccumulateHook for FailingPostHook {
    fn call(&self) -> Result<()> {
        Err(boom())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A node pre-hook that logs `name:<grads>` and, with `scale`, returns the grads times it.
pub struct PreRecorder {
    name: String,
    scale: Option<f64>,
    log: Log,
}

impl PreRecorder {
    pub fn hook(name: &str, scale: Option<f64>, log: &Log) -> Arc<dyn NodePreHook<f64>> {
        Arc::new(PreRecorder {
            name: name.to_string(),
            scale,
            log: log.clone(),
        })
    }
}

impl NodePreHook<f64> for PreRecorder {
    fn call(&self, grads: &[Option<f64>]) -> Result<Option<Vec<Option<f64>>>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{grads:?}", self.name));
        Ok(self
            .scale
            .map(|s| grads.iter().map(|g| g.map(|g| g * s)).collect()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A node post-hook that logs `name:<grad_inputs>/<grad_outputs>` and, with `scale`, returns
/// the grad_inputs times it.
pub struct PostNodeRecorder {
    name: String,
    scale: Option<f64>,
    log: Log,
}

impl PostNodeRecorder {
    pub fn hook(name: &str, scale: Option<f64>, log: &Log) -> Arc<dyn NodePostHook<f64>> {
        Arc::new(PostNodeRecorder {
            name: name.to_string(),
            scale,
            log: log.clone(),
        })
    }
}

impl NodePostHook<f64> for PostNodeRecorder {
    fn call(
        &self,
        grad_inputs: &[Option<f64>],
        grad_outputs: &[Option<f64>],
    ) -> Result<Option<Vec<Option<f64>>>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{grad_inputs:?}/{grad_outputs:?}", self.name));
        Ok(self
            .scale
            .map(|s| grad_inputs.iter().map(|g| g.map(|g| g * s)).collect()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
