//! Note [Hook order]: tensor pre-hooks, retains-grad hooks, post-accumulate-grad hooks.

mod common;

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use rustgrad_core::{Edge, Engine, ExecuteOptions, HookList, Result, TensorHook};

#[test]
fn tensor_pre_hooks_run_in_registration_order_each_seeing_previous_replacement() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.tensor_hooks.push(Affine::hook("plus1", 1.0, 1.0, &log));
    x.tensor_hooks
        .push(Affine::hook("times10", 10.0, 0.0, &log));
    x.tensor_hooks.push(Affine::observer("seen", &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    backward(&y, 1.0).unwrap();

    assert_eq!(entries(&log), ["plus1:2", "times10:3", "seen:30", "x"]);
    assert_eq!(x.grad(), Some(30.0));
}

#[test]
fn tensor_pre_hooks_on_non_leaf_replace_gradient_passed_on() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 1.0, &[&x.node], None);
    let r = Mul::node("r", 3.0, &[&m], None);
    let list: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    list.push(Affine::hook("double", 2.0, 0.0, &log));
    m.base().hooks.add_tensor_pre_hooks(0, list.clone());
    // Attaching the same list to the same slot again must not run its hooks twice.
    m.base().hooks.add_tensor_pre_hooks(0, list.clone());

    backward(&r, 1.0).unwrap();

    assert_eq!(entries(&log), ["double:3"]);
    assert_eq!(x.grad(), Some(6.0));
}

#[test]
fn retains_grad_hook_registered_first_sees_gradient_after_tensor_hooks() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 1.0, &[&x.node], None);
    let r = Mul::node("r", 3.0, &[&m], None);
    // retain_grad() first, then register_hook twice (one list, shared with the tensor, so a
    // hook pushed after attaching still runs).
    m.base()
        .hooks
        .set_retains_grad(0, Affine::observer("retain", &log));
    let list: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    m.base().hooks.add_tensor_pre_hooks(0, list.clone());
    list.push(Affine::hook("double", 2.0, 0.0, &log));
    list.push(Affine::hook("plus1", 1.0, 1.0, &log));

    backward(&r, 1.0).unwrap();

    assert_eq!(entries(&log), ["double:3", "plus1:6", "retain:7"]);
    assert_eq!(x.grad(), Some(7.0));
}

#[test]
fn set_retains_grad_twice_keeps_only_latest() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 1.0, &[&x.node], None);
    let r = Mul::node("r", 3.0, &[&m], None);
    m.base()
        .hooks
        .set_retains_grad(0, Affine::observer("old", &log));
    m.base()
        .hooks
        .set_retains_grad(0, Affine::observer("new", &log));
    assert!(m.base().hooks.has_retains_grad(0));
    assert!(!m.base().hooks.has_retains_grad(1));

    backward(&r, 1.0).unwrap();

    assert_eq!(entries(&log), ["new:3"]);
}

#[test]
fn hooks_on_slot_without_gradient_do_not_run() {
    // A two-output node receiving a gradient only at slot 0: slot 1's hooks stay silent.
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::with_edges("m", 1.0, 2, vec![edge(&x.node)], None);
    let slot0: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    let slot1: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    slot0.push(Affine::observer("slot0", &log));
    slot1.push(Affine::observer("slot1", &log));
    m.base().hooks.add_tensor_pre_hooks(0, slot0);
    m.base().hooks.add_tensor_pre_hooks(1, slot1);
    m.base()
        .hooks
        .set_retains_grad(1, Affine::observer("retain1", &log));

    Engine::execute(
        vec![Edge::new(m.clone(), 0)],
        vec![4.0],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(entries(&log), ["slot0:4"]);
    assert_eq!(x.grad(), Some(4.0));
}

#[test]
fn post_accumulate_hooks_run_after_sink_in_registration_order() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.post_hooks.push(PostRecorder::hook("post1", &x, &log));
    x.post_hooks.push(PostRecorder::hook("post2", &x, &log));
    x.tensor_hooks.push(Affine::observer("pre", &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    backward(&y, 1.0).unwrap();

    assert_eq!(
        entries(&log),
        ["pre:2", "x", "post1:Some(2.0)", "post2:Some(2.0)"]
    );
}

#[test]
fn removed_tensor_hook_does_not_run() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let gone = x.tensor_hooks.push(Affine::hook("gone", 100.0, 0.0, &log));
    let kept = x.tensor_hooks.push(Affine::observer("kept", &log));
    assert_ne!(gone, kept);

    assert!(x.tensor_hooks.remove(gone));
    assert!(!x.tensor_hooks.remove(gone), "removing twice is harmless");
    assert_eq!(x.tensor_hooks.len(), 1);
    let y = Mul::node("y", 2.0, &[&x.node], None);
    backward(&y, 1.0).unwrap();

    assert_eq!(entries(&log), ["kept:2"]);
    assert_eq!(x.grad(), Some(2.0));
}

#[test]
fn removed_retains_grad_list_hook_does_not_run() {
    // A hook removed from a non-leaf's list after it was attached.
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 1.0, &[&x.node], None);
    let r = Mul::node("r", 3.0, &[&m], None);
    let list: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    m.base().hooks.add_tensor_pre_hooks(0, list.clone());
    let id = list.push(Affine::hook("double", 2.0, 0.0, &log));
    list.remove(id);
    assert!(list.is_empty());

    backward(&r, 1.0).unwrap();

    assert_eq!(entries(&log), Vec::<String>::new());
    assert_eq!(x.grad(), Some(3.0));
}

#[test]
fn removed_post_accumulate_hook_does_not_run() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let gone = x.post_hooks.push(PostRecorder::hook("gone", &x, &log));
    x.post_hooks.push(PostRecorder::hook("kept", &x, &log));
    assert!(x.post_hooks.remove(gone));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    backward(&y, 1.0).unwrap();

    assert_eq!(entries(&log), ["kept:Some(2.0)"]);
}

#[test]
fn cleared_hook_list_runs_nothing() {
    let log = new_log();
    let x = Leaf::new("x", None);
    x.tensor_hooks.push(Affine::hook("a", 2.0, 0.0, &log));
    x.post_hooks.push(PostRecorder::hook("p", &x, &log));
    x.tensor_hooks.clear();
    x.post_hooks.clear();
    let y = Mul::node("y", 2.0, &[&x.node], None);

    backward(&y, 1.0).unwrap();

    assert_eq!(entries(&log), Vec::<String>::new());
    assert_eq!(x.grad(), Some(2.0));
}

#[test]
fn leaf_hooks_outlive_one_graph() {
    // Each graph gets a fresh AccumulateGrad for the leaf; the leaf's hook lists are shared.
    let log = new_log();
    let x = Leaf::new("x", None);
    x.tensor_hooks.push(Affine::hook("double", 2.0, 0.0, &log));
    x.post_hooks.push(PostRecorder::hook("post", &x, &log));

    let first = Mul::node("first", 1.0, &[&x.node], None);
    backward(&first, 1.0).unwrap();
    drop(first);
    let acc = x.fresh_node();
    let second = Mul::node("second", 1.0, &[&acc], None);
    backward(&second, 3.0).unwrap();

    assert_eq!(
        entries(&log),
        ["double:1", "post:Some(2.0)", "double:3", "post:Some(8.0)"]
    );
}

#[test]
fn captured_gradient_is_taken_after_tensor_hooks() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.tensor_hooks.push(Affine::hook("plus1", 1.0, 1.0, &log));
    x.post_hooks.push(PostRecorder::hook("post", &x, &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    let out = Engine::execute(
        vec![Edge::new(y.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![x.edge()],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(3.0)]);
    // The hook ran; the sink and the post-accumulate hooks did not.
    assert_eq!(entries(&log), ["plus1:2"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn captured_non_leaf_gradient_is_taken_after_retains_grad_hook() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 1.0, &[&x.node], None);
    let r = Mul::node("r", 3.0, &[&m], None);
    let list: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    list.push(Affine::hook("double", 2.0, 0.0, &log));
    m.base().hooks.add_tensor_pre_hooks(0, list);
    m.base()
        .hooks
        .set_retains_grad(0, Affine::hook("retain_plus1", 1.0, 1.0, &log));

    let out = Engine::execute(
        vec![Edge::new(r.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![Edge::new(m.clone(), 0)],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(7.0)]);
    assert_eq!(entries(&log), ["double:3", "retain_plus1:6"]);
}

#[test]
fn tensor_hook_error_propagates_out_of_execute() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.tensor_hooks.push(Affine::observer("before", &log));
    x.tensor_hooks.push(Arc::new(FailingHook));
    x.tensor_hooks.push(Affine::observer("after", &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    let err = backward(&y, 1.0).unwrap_err();

    assert!(is_boom(&err), "{err}");
    assert_eq!(entries(&log), ["before:2"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn non_leaf_tensor_hook_error_stops_backward_before_the_node_runs() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let m = Mul::node("m", 1.0, &[&x.node], Some(&log));
    let r = Mul::node("r", 3.0, &[&m], Some(&log));
    let list: Arc<HookList<dyn TensorHook<f64>>> = Arc::new(HookList::default());
    list.push(Arc::new(FailingHook));
    m.base().hooks.add_tensor_pre_hooks(0, list);

    let err = backward(&r, 1.0).unwrap_err();

    assert!(is_boom(&err), "{err}");
    assert_eq!(entries(&log), ["r"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn post_accumulate_hook_error_propagates_out_of_execute() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.post_hooks.push(Arc::new(FailingPostHook));
    x.post_hooks.push(PostRecorder::hook("after", &x, &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    let err = backward(&y, 1.0).unwrap_err();

    assert!(is_boom(&err), "{err}");
    // The sink had already run; the hook after the failing one did not.
    assert_eq!(entries(&log), ["x"]);
    assert_eq!(x.grad(), Some(2.0));
}

#[test]
fn hook_ids_are_unique_across_lists() {
    let log = new_log();
    let a: HookList<dyn TensorHook<f64>> = HookList::default();
    let b: HookList<dyn TensorHook<f64>> = HookList::default();
    let ia = a.push(Affine::observer("a", &log));
    let ib = b.push(Affine::observer("b", &log));

    assert_ne!(ia, ib);
    assert!(!a.remove(ib), "an id from another list removes nothing");
    assert_eq!(a.len(), 1);
    assert!(b.remove(ib));
}

// ---- a hook list never drops or hands back a hook while it holds its lock ----------------------
// (a dropped Python hook's `__del__` may use the same list)

type Hooks = HookList<dyn TensorHook<f64>>;

/// A hook that, when dropped, uses the list it was in (as a Python hook's `__del__` may).
struct TouchOnDrop {
    list: Arc<OnceLock<Arc<Hooks>>>,
    seen: Arc<Mutex<Option<usize>>>,
}

impl TensorHook<f64> for TouchOnDrop {
    fn call(&self, _grad: &f64) -> Result<Option<f64>> {
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for TouchOnDrop {
    fn drop(&mut self) {
        if let Some(list) = self.list.get() {
            // Deadlocked before: `remove` dropped the hook with the list's lock held.
            *self.seen.lock().unwrap() = Some(list.len());
        }
    }
}

struct Noop;

impl TensorHook<f64> for Noop {
    fn call(&self, _grad: &f64) -> Result<Option<f64>> {
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn removed_hook_is_dropped_after_the_list_lock_is_released() {
    let cell = Arc::new(OnceLock::new());
    let seen = Arc::new(Mutex::new(None));
    let list: Arc<Hooks> = Arc::new(HookList::default());
    cell.set(list.clone()).ok().unwrap();
    let id = list.push(Arc::new(TouchOnDrop {
        list: cell.clone(),
        seen: seen.clone(),
    }));
    list.push(Arc::new(Noop));

    assert!(list.remove(id));

    assert_eq!(*seen.lock().unwrap(), Some(1));
    assert!(!list.remove(id));
}

#[test]
fn set_retains_grad_hands_back_the_hook_it_replaced() {
    let hooks = rustgrad_core::NodeHooks::<f64>::default();
    let first: Arc<dyn TensorHook<f64>> = Arc::new(Noop);

    assert!(hooks.set_retains_grad(0, first.clone()).is_none());
    let replaced = hooks.set_retains_grad(0, Arc::new(Noop)).unwrap();

    assert!(Arc::ptr_eq(&replaced, &first));
    assert!(hooks.has_retains_grad(0));
}
