//! Leaf accumulation: when `.grad` takes the incoming gradient itself and when a copy, with a toy
//! value whose buffer is shared by its clones, as a Python tensor's array is shared by every
//! reference to the tensor, and which carries the fresh mark. See Note [Stealing a gradient].

use std::any::Any;
use std::sync::{Arc, Mutex};

use rustgrad_core::{
    grad_mode, AccumulateGrad, Accumulation, Edge, Engine, ExecuteOptions, GradSink, GradValue,
    HookList, LeafGrad, Node, NodeBase, NodePostHook, NodePreHook, NodeRef, Result, TensorHook,
};

/// A gradient whose buffer its clones share; `add` makes a new buffer. `view` stands for a buffer
/// borrowed from another array, which a leaf must not keep. `fresh` is the engine's mark; a
/// clone never has it.
struct Buf {
    data: Arc<Mutex<Vec<f64>>>,
    view: bool,
    fresh: bool,
}

impl Clone for Buf {
    fn clone(&self) -> Self {
        Buf {
            data: self.data.clone(),
            view: self.view,
            fresh: false,
        }
    }
}

impl Buf {
    /// A buffer someone made and still holds (a caller's `gradient=`, a hook's tensor).
    fn new(values: &[f64]) -> Self {
        Buf {
            data: Arc::new(Mutex::new(values.to_vec())),
            view: false,
            fresh: false,
        }
    }

    /// A buffer a node made in this call and hands on, marked fresh.
    fn made(values: &[f64]) -> Self {
        let mut b = Buf::new(values);
        b.fresh = true;
        b
    }

    fn values(&self) -> Vec<f64> {
        self.data.lock().unwrap().clone()
    }

    fn same_buffer(&self, other: &Buf) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }
}

impl GradValue for Buf {
    type InputMeta = ();
    fn add(&self, other: &Self) -> Result<Self> {
        let sum: Vec<f64> = self
            .values()
            .iter()
            .zip(other.values())
            .map(|(a, b)| a + b)
            .collect();
        Ok(Buf::new(&sum))
    }

    fn is_fresh(&self) -> bool {
        self.fresh
    }

    fn set_fresh(&mut self, fresh: bool) {
        self.fresh = fresh;
    }

    fn shares_buffer(&self, other: &Self) -> bool {
        self.same_buffer(other)
    }
}

/// A leaf's `.grad` with a fixed length, logging each decision. What it stores under grad mode
/// by a copy or an out-of-place add records a graph (`in_graph`).
struct BufSink {
    grad: Mutex<Option<Buf>>,
    in_graph: Mutex<bool>,
    len: usize,
    decisions: Mutex<Vec<Accumulation>>,
}

impl GradSink<Buf> for BufSink {
    fn current(&self) -> Result<LeafGrad> {
        Ok(
            match (&*self.grad.lock().unwrap(), *self.in_graph.lock().unwrap()) {
                (None, _) => LeafGrad::Unset,
                (Some(_), false) => LeafGrad::Plain,
                (Some(_), true) => LeafGrad::InGraph,
            },
        )
    }

    fn fits(&self, grad: &Buf) -> Result<bool> {
        Ok(!grad.view && grad.values().len() == self.len)
    }

    fn accumulate(&self, grad: Buf, how: Accumulation) -> Result<()> {
        self.decisions.lock().unwrap().push(how);
        if matches!(how, Accumulation::Copy | Accumulation::AddOutOfPlace) {
            *self.in_graph.lock().unwrap() = grad_mode::is_grad_enabled();
        }
        let mut cell = self.grad.lock().unwrap();
        match how {
            Accumulation::Take => *cell = Some(grad),
            Accumulation::Copy => *cell = Some(Buf::new(&grad.values())),
            Accumulation::AddInPlace => {
                let old = cell.as_ref().expect("AddInPlace onto a set .grad");
                let add = grad.values();
                for (o, g) in old.data.lock().unwrap().iter_mut().zip(add) {
                    *o += g;
                }
            }
            Accumulation::AddOutOfPlace => {
                let old = cell.take().expect("AddOutOfPlace onto a set .grad");
                *cell = Some(old.add(&grad)?);
            }
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A leaf of `len` values: its sink and tensor hooks; `node()` makes its AccumulateGrad.
struct Leaf {
    sink: Arc<BufSink>,
    hooks: Arc<HookList<dyn TensorHook<Buf>>>,
}

impl Leaf {
    fn new(len: usize) -> Self {
        Leaf {
            sink: Arc::new(BufSink {
                grad: Mutex::new(None),
                in_graph: Mutex::new(false),
                len,
                decisions: Mutex::new(Vec::new()),
            }),
            hooks: Arc::new(HookList::default()),
        }
    }

    fn node(&self) -> NodeRef<Buf> {
        Arc::new(AccumulateGrad::new(
            self.sink.clone(),
            self.hooks.clone(),
            Arc::new(HookList::default()),
        ))
    }

    fn grad(&self) -> Buf {
        self.sink
            .grad
            .lock()
            .unwrap()
            .clone()
            .expect(".grad is set")
    }

    fn decisions(&self) -> Vec<Accumulation> {
        self.sink.decisions.lock().unwrap().clone()
    }
}

/// `y = x * factor`: its backward makes a new buffer (as `MulBackward0`).
struct Scale {
    base: NodeBase<Buf>,
    factor: f64,
}

/// `y = x + z`: its backward hands the gradient it received to every input as it is (as
/// `AddBackward0`).
struct Pass {
    base: NodeBase<Buf>,
}

fn scale(factor: f64, input: &NodeRef<Buf>) -> NodeRef<Buf> {
    Arc::new(Scale {
        base: NodeBase::new(1, vec![Some(Edge::new(input.clone(), 0))]),
        factor,
    })
}

fn pass(inputs: &[&NodeRef<Buf>]) -> NodeRef<Buf> {
    let edges = inputs.iter().map(|n| Some(Edge::new((*n).clone(), 0)));
    Arc::new(Pass {
        base: NodeBase::new(1, edges.collect()),
    })
}

impl Node<Buf> for Scale {
    fn base(&self) -> &NodeBase<Buf> {
        &self.base
    }
    fn name(&self) -> String {
        "MulBackward0".to_string()
    }
    fn apply(&self, grads: Vec<Option<Buf>>) -> Result<Vec<Option<Buf>>> {
        let g = grads.into_iter().next().flatten().expect("a gradient");
        let out: Vec<f64> = g.values().iter().map(|v| v * self.factor).collect();
        Ok(vec![Some(Buf::made(&out))])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Node<Buf> for Pass {
    fn base(&self) -> &NodeBase<Buf> {
        &self.base
    }
    fn name(&self) -> String {
        "AddBackward0".to_string()
    }
    fn apply(&self, grads: Vec<Option<Buf>>) -> Result<Vec<Option<Buf>>> {
        let g = grads.into_iter().next().flatten();
        Ok(vec![g; self.base.next_edges().len()])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn backward(root: &NodeRef<Buf>, grad: Buf) {
    run(root, grad, false);
}

fn run(root: &NodeRef<Buf>, grad: Buf, create_graph: bool) {
    let options = ExecuteOptions {
        create_graph,
        ..Default::default()
    };
    Engine::execute(vec![Edge::new(root.clone(), 0)], vec![grad], options).expect("backward runs");
}

/// A tensor hook that keeps every gradient it sees (as `hook=lambda g: kept.append(g)`), and
/// optionally returns a replacement it keeps too.
struct Keep {
    kept: Arc<Mutex<Vec<Buf>>>,
    replace_with: Option<Buf>,
}

impl TensorHook<Buf> for Keep {
    fn call(&self, grad: &Buf) -> Result<Option<Buf>> {
        self.kept.lock().unwrap().push(grad.clone());
        Ok(self.replace_with.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn fresh_gradient_is_taken_without_copy() {
    let x = Leaf::new(2);
    let y = scale(3.0, &x.node());
    backward(&y, Buf::new(&[1.0, 2.0]));
    assert_eq!(x.decisions(), [Accumulation::Take]);
    assert_eq!(x.grad().values(), [3.0, 6.0]);
}

#[test]
fn gradient_the_caller_still_holds_is_copied() {
    // x.backward(g): g goes straight to the leaf, and the caller still sees it.
    let x = Leaf::new(2);
    let g = Buf::new(&[1.0, 1.0]);
    backward(&x.node(), g.clone());
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!x.grad().same_buffer(&g));
    // A second backward adds into `.grad` in place; the caller's buffer is untouched.
    backward(&x.node(), g.clone());
    assert_eq!(x.grad().values(), [2.0, 2.0]);
    assert_eq!(g.values(), [1.0, 1.0]);
}

#[test]
fn gradient_passed_through_from_the_caller_is_copied() {
    // (x + z).backward(g): AddBackward0 hands g itself to both leaves.
    let (x, z) = (Leaf::new(2), Leaf::new(2));
    let y = pass(&[&x.node(), &z.node()]);
    let g = Buf::new(&[1.0, 1.0]);
    backward(&y, g.clone());
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert_eq!(z.decisions(), [Accumulation::Copy]);
    assert!(!x.grad().same_buffer(&g) && !z.grad().same_buffer(&g));
    assert!(!x.grad().same_buffer(&z.grad()));
}

#[test]
fn fresh_gradient_one_node_hands_to_two_leaves_is_copied_by_each() {
    // (2 * (x + z)).backward(): AddBackward0 hands one fresh buffer to both leaves. Neither
    // holds it alone, so neither takes it (torch lets the last to run take it, by use count; the
    // mark cannot count, and a post-accumulate-grad hook of the first could write into the
    // buffer the other still has to read). The two `.grad`s never share a buffer.
    let (x, z) = (Leaf::new(1), Leaf::new(1));
    let y = scale(2.0, &pass(&[&x.node(), &z.node()]));
    backward(&y, Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert_eq!(z.decisions(), [Accumulation::Copy]);
    assert!(!x.grad().same_buffer(&z.grad()));
    assert_eq!(
        (x.grad().values(), z.grad().values()),
        (vec![2.0], vec![2.0])
    );
}

#[test]
fn fresh_gradient_handed_on_once_as_it_is_is_taken() {
    // (2 * (x + 0)).backward(): AddBackward0 with one edge passes the fresh buffer on as it is.
    let x = Leaf::new(2);
    let y = scale(2.0, &pass(&[&x.node()]));
    backward(&y, Buf::new(&[1.0, 2.0]));
    assert_eq!(x.decisions(), [Accumulation::Take]);
    assert_eq!(x.grad().values(), [2.0, 4.0]);
}

#[test]
fn root_gradient_marked_fresh_is_taken() {
    // A root gradient the caller made for the engine alone (torch's implicit ones).
    let x = Leaf::new(2);
    let g = Buf::made(&[1.0, 1.0]);
    let data = g.data.clone();
    backward(&x.node(), g);
    assert_eq!(x.decisions(), [Accumulation::Take]);
    assert!(Arc::ptr_eq(&x.grad().data, &data));
}

#[test]
fn summed_gradient_is_taken() {
    // x * 2 + x * 3: the input buffer's sum is the engine's alone.
    let x = Leaf::new(1);
    let acc = x.node();
    let y = pass(&[&scale(2.0, &acc), &scale(3.0, &acc)]);
    backward(&y, Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Take]);
    assert_eq!(x.grad().values(), [5.0]);
}

#[test]
fn second_backward_adds_in_place_into_the_same_buffer() {
    let x = Leaf::new(1);
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    let first = x.grad();
    backward(&scale(3.0, &x.node()), Buf::new(&[1.0]));
    assert_eq!(
        x.decisions(),
        [Accumulation::Take, Accumulation::AddInPlace]
    );
    assert!(x.grad().same_buffer(&first));
    assert_eq!(first.values(), [5.0]);
}

#[test]
fn grad_mode_copies_then_adds_out_of_place() {
    // create_graph=True: the engine runs with grad mode on.
    let x = Leaf::new(1);
    run(&scale(2.0, &x.node()), Buf::new(&[1.0]), true);
    let first = x.grad();
    run(&scale(3.0, &x.node()), Buf::new(&[1.0]), true);
    assert_eq!(
        x.decisions(),
        [Accumulation::Copy, Accumulation::AddOutOfPlace]
    );
    assert!(!x.grad().same_buffer(&first));
    assert_eq!((first.values(), x.grad().values()), (vec![2.0], vec![5.0]));
}

#[test]
fn gradient_a_hook_kept_is_copied() {
    let x = Leaf::new(1);
    let kept = Arc::new(Mutex::new(Vec::new()));
    x.hooks.push(Arc::new(Keep {
        kept: kept.clone(),
        replace_with: None,
    }));
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    assert_eq!(x.decisions()[0], Accumulation::Copy);
    let seen = kept.lock().unwrap();
    assert!(seen.iter().all(|g| !g.same_buffer(&x.grad())));
    assert_eq!(seen[0].values(), [2.0]);
}

#[test]
fn replacement_a_hook_kept_is_copied() {
    let x = Leaf::new(1);
    let replacement = Buf::new(&[7.0]);
    x.hooks.push(Arc::new(Keep {
        kept: Arc::new(Mutex::new(Vec::new())),
        replace_with: Some(replacement.clone()),
    }));
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    assert_eq!(
        x.decisions(),
        [Accumulation::Copy, Accumulation::AddInPlace]
    );
    assert_eq!(x.grad().values(), [14.0]);
    assert_eq!(replacement.values(), [7.0]);
}

#[test]
fn plain_backward_after_create_graph_replaces_grad_out_of_place() {
    // The `.grad` a create_graph backward left records a graph: a plain backward replaces it
    // by a sum in no graph (torch would add in place), and the next one adds in place.
    let x = Leaf::new(1);
    run(&scale(2.0, &x.node()), Buf::new(&[1.0]), true);
    let first = x.grad();
    backward(&scale(3.0, &x.node()), Buf::new(&[1.0]));
    let second = x.grad();
    backward(&scale(4.0, &x.node()), Buf::new(&[1.0]));
    assert_eq!(
        x.decisions(),
        [
            Accumulation::Copy,
            Accumulation::AddOutOfPlace,
            Accumulation::AddInPlace
        ]
    );
    assert!(!second.same_buffer(&first) && x.grad().same_buffer(&second));
    assert_eq!((first.values(), x.grad().values()), (vec![2.0], vec![9.0]));
}

#[test]
fn grad_mode_is_the_tasks_and_restored_after() {
    let x = Leaf::new(1);
    let before = grad_mode::set_grad_enabled(true);
    backward(&scale(2.0, &x.node()), Buf::new(&[1.0]));
    assert!(grad_mode::is_grad_enabled());
    grad_mode::set_grad_enabled(false);
    run(&scale(2.0, &x.node()), Buf::new(&[1.0]), true);
    assert!(!grad_mode::is_grad_enabled());
    grad_mode::set_grad_enabled(before);
    assert_eq!(
        x.decisions(),
        [Accumulation::Take, Accumulation::AddOutOfPlace]
    );
}

#[test]
fn gradient_that_does_not_fit_the_leaf_is_copied() {
    struct View {
        base: NodeBase<Buf>,
    }
    impl Node<Buf> for View {
        fn base(&self) -> &NodeBase<Buf> {
            &self.base
        }
        fn name(&self) -> String {
            "ViewBackward0".to_string()
        }
        fn apply(&self, grads: Vec<Option<Buf>>) -> Result<Vec<Option<Buf>>> {
            let g = grads.into_iter().next().flatten().expect("a gradient");
            Ok(vec![Some(Buf {
                data: Arc::new(Mutex::new(g.values())),
                view: true,
                fresh: true,
            })])
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }
    let x = Leaf::new(1);
    let y: NodeRef<Buf> = Arc::new(View {
        base: NodeBase::new(1, vec![Some(Edge::new(x.node(), 0))]),
    });
    backward(&y, Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!x.grad().view);
}

/// A node pre-hook that keeps what it sees (as `grad_fn.register_prehook(lambda g: kept.extend(g))`).
struct KeepPre(Arc<Mutex<Vec<Buf>>>);

impl NodePreHook<Buf> for KeepPre {
    fn call(&self, grad_outputs: &[Option<Buf>]) -> Result<Option<Vec<Option<Buf>>>> {
        self.0
            .lock()
            .unwrap()
            .extend(grad_outputs.iter().flatten().cloned());
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A node post-hook that keeps what the node returned.
struct KeepPost(Arc<Mutex<Vec<Buf>>>);

impl NodePostHook<Buf> for KeepPost {
    fn call(
        &self,
        grad_inputs: &[Option<Buf>],
        _grad_outputs: &[Option<Buf>],
    ) -> Result<Option<Vec<Option<Buf>>>> {
        self.0
            .lock()
            .unwrap()
            .extend(grad_inputs.iter().flatten().cloned());
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn gradient_a_hook_of_a_non_leaf_kept_is_copied_downstream() {
    // y = x + 0 with y.register_hook(keep): the fresh gradient reaching y is seen by the hook,
    // and AddBackward0 hands it on to x as it is.
    let x = Leaf::new(1);
    let y = pass(&[&x.node()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let list: Arc<HookList<dyn TensorHook<Buf>>> = Arc::new(HookList::default());
    list.push(Arc::new(Keep {
        kept: kept.clone(),
        replace_with: None,
    }));
    y.base().hooks.add_tensor_pre_hooks(0, list);
    backward(&scale(2.0, &y), Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!kept.lock().unwrap()[0].same_buffer(&x.grad()));
}

#[test]
fn retained_gradient_is_copied_downstream() {
    // y.retain_grad(): the retains-grad hook keeps the gradient as y's `.grad`.
    let x = Leaf::new(1);
    let y = pass(&[&x.node()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    y.base().hooks.set_retains_grad(
        0,
        Arc::new(Keep {
            kept: kept.clone(),
            replace_with: None,
        }),
    );
    backward(&scale(2.0, &y), Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!kept.lock().unwrap()[0].same_buffer(&x.grad()));
}

#[test]
fn gradient_a_node_pre_hook_saw_is_copied() {
    let x = Leaf::new(1);
    let y = pass(&[&x.node()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    y.base()
        .hooks
        .pre_hooks()
        .push(Arc::new(KeepPre(kept.clone())));
    backward(&scale(2.0, &y), Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!kept.lock().unwrap()[0].same_buffer(&x.grad()));
}

#[test]
fn gradient_a_node_post_hook_saw_is_copied() {
    // The post-hook sees the fresh buffer MulBackward0 made, before the leaf gets it.
    let x = Leaf::new(1);
    let y = scale(2.0, &x.node());
    let kept = Arc::new(Mutex::new(Vec::new()));
    y.base()
        .hooks
        .post_hooks()
        .push(Arc::new(KeepPost(kept.clone())));
    backward(&y, Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
    assert!(!kept.lock().unwrap()[0].same_buffer(&x.grad()));
}

#[test]
fn gradient_received_by_a_node_with_a_post_hook_is_not_handed_on_fresh() {
    // The post-hook sees what AddBackward0 received (grad_outputs), which it hands on as it is.
    let x = Leaf::new(1);
    let y = pass(&[&x.node()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    y.base()
        .hooks
        .post_hooks()
        .push(Arc::new(KeepPost(kept.clone())));
    backward(&scale(2.0, &y), Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Copy]);
}

/// Records whether each gradient it receives is fresh, and hands the first on as it is.
struct Probe {
    base: NodeBase<Buf>,
    seen: Arc<Mutex<Vec<bool>>>,
}

impl Node<Buf> for Probe {
    fn base(&self) -> &NodeBase<Buf> {
        &self.base
    }
    fn name(&self) -> String {
        "Probe".to_string()
    }
    fn apply(&self, grads: Vec<Option<Buf>>) -> Result<Vec<Option<Buf>>> {
        let mut seen = self.seen.lock().unwrap();
        seen.extend(grads.iter().flatten().map(GradValue::is_fresh));
        Ok(vec![grads.into_iter().next().flatten()])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn gradient_captured_by_autograd_grad_is_not_fresh_past_the_capture() {
    // autograd.grad((2 * y), (y, x)) with y = probe(x): y's gradient is captured and the node
    // still runs to reach x; what it receives is no longer the engine's alone.
    let x = Leaf::new(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let acc = x.node();
    let y: NodeRef<Buf> = Arc::new(Probe {
        base: NodeBase::new(1, vec![Some(Edge::new(acc.clone(), 0))]),
        seen: seen.clone(),
    });
    let root = scale(2.0, &y);
    let options = ExecuteOptions {
        accumulate_grad: false,
        inputs: vec![Edge::new(y.clone(), 0), Edge::new(acc, 0)],
        ..Default::default()
    };
    let got = Engine::execute(vec![Edge::new(root, 0)], vec![Buf::new(&[1.0])], options)
        .expect("autograd.grad runs");
    assert_eq!(*seen.lock().unwrap(), [false]);
    let (gy, gx) = (got[0].as_ref().unwrap(), got[1].as_ref().unwrap());
    assert!(!gy.is_fresh() && !gx.is_fresh());
    assert_eq!((gy.values(), gx.values()), (vec![2.0], vec![2.0]));
    assert!(x.decisions().is_empty());
}

#[test]
fn fresh_gradient_reaching_a_plain_node_keeps_its_mark() {
    // Nothing saw it between MulBackward0 and the next node: the mark survives the trip.
    let x = Leaf::new(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let y: NodeRef<Buf> = Arc::new(Probe {
        base: NodeBase::new(1, vec![Some(Edge::new(x.node(), 0))]),
        seen: seen.clone(),
    });
    backward(&scale(2.0, &y), Buf::new(&[1.0]));
    assert_eq!(*seen.lock().unwrap(), [true]);
    assert_eq!(x.decisions(), [Accumulation::Take]);
}

#[test]
fn one_buffer_handed_twice_to_one_leaf_is_summed_and_the_sum_taken() {
    // 2 * (x + x): AddBackward0 hands one buffer to both slots of x; neither copy is fresh, and
    // the sum the input buffer makes of them is.
    let x = Leaf::new(1);
    let acc = x.node();
    let y = scale(2.0, &pass(&[&acc, &acc]));
    backward(&y, Buf::new(&[1.0]));
    assert_eq!(x.decisions(), [Accumulation::Take]);
    assert_eq!(x.grad().values(), [4.0]);
}
