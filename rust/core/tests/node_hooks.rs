//! Note [Hook order], steps 4-7: node pre-hooks, node post-hooks, anomaly mode's NaN check.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use rustgrad_core::{grad_mode, Error, Node, NodeRef};

#[test]
fn node_pre_hooks_run_in_order_after_tensor_hooks_and_replace_what_the_node_receives() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 2.0, &[&x.node], Some(&log));
    let r = Mul::node("r", 3.0, &[&m], None);
    let list: Arc<rustgrad_core::HookList<dyn rustgrad_core::TensorHook<f64>>> =
        Arc::new(Default::default());
    list.push(Affine::hook("tensor", 1.0, 1.0, &log));
    m.base().hooks.add_tensor_pre_hooks(0, list);
    m.base()
        .hooks
        .pre_hooks()
        .push(PreRecorder::hook("pre1", Some(10.0), &log));
    m.base()
        .hooks
        .pre_hooks()
        .push(PreRecorder::hook("pre2", None, &log));

    backward(&r, 1.0).unwrap();

    // 3 -> tensor hook 4 -> pre1 sees 4, returns 40 -> pre2 sees 40 -> m runs: 80 to x.
    assert_eq!(
        entries(&log),
        ["tensor:3", "pre1:[Some(4.0)]", "pre2:[Some(40.0)]", "m"]
    );
    assert_eq!(x.grad(), Some(80.0));
}

#[test]
fn node_post_hooks_see_returned_and_received_gradients_and_replace_what_is_passed_on() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 2.0, &[&x.node], Some(&log));
    let r = Mul::node("r", 3.0, &[&m], None);
    m.base()
        .hooks
        .post_hooks()
        .push(PostNodeRecorder::hook("post1", Some(0.5), &log));
    m.base()
        .hooks
        .post_hooks()
        .push(PostNodeRecorder::hook("post2", None, &log));

    backward(&r, 1.0).unwrap();

    assert_eq!(
        entries(&log),
        [
            "m",
            "post1:[Some(6.0)]/[Some(3.0)]",
            "post2:[Some(3.0)]/[Some(3.0)]"
        ]
    );
    assert_eq!(x.grad(), Some(3.0));
}

#[test]
fn node_hooks_on_accumulate_grad_run_around_the_sink() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    x.post_hooks.push(PostRecorder::hook("acc", &x, &log));
    x.node
        .base()
        .hooks
        .pre_hooks()
        .push(PreRecorder::hook("pre", None, &log));
    x.node
        .base()
        .hooks
        .post_hooks()
        .push(PostNodeRecorder::hook("post", None, &log));
    let y = Mul::node("y", 2.0, &[&x.node], None);

    backward(&y, 1.0).unwrap();

    assert_eq!(
        entries(&log),
        [
            "pre:[Some(2.0)]",
            "x",
            "acc:Some(2.0)",
            "post:[]/[Some(2.0)]"
        ]
    );
}

#[test]
fn removed_node_hook_no_longer_runs_and_emptied_lists_leave_the_fast_path_correct() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 2.0, &[&x.node], None);
    let id = m
        .base()
        .hooks
        .pre_hooks()
        .push(PreRecorder::hook("pre", Some(10.0), &log));
    assert!(!m.base().hooks.is_empty());
    assert!(m.base().hooks.pre_hooks().remove(id));
    assert!(m.base().hooks.is_empty());

    backward(&m, 1.0).unwrap();

    assert!(entries(&log).is_empty());
    assert_eq!(x.grad(), Some(2.0));
}

#[test]
fn node_that_receives_nothing_runs_no_node_hooks() {
    let log = new_log();
    let x = Leaf::new("x", None);
    let m = Mul::node("m", 2.0, &[&x.node], Some(&log));
    m.base()
        .hooks
        .pre_hooks()
        .push(PreRecorder::hook("pre", None, &log));
    m.base()
        .hooks
        .post_hooks()
        .push(PostNodeRecorder::hook("post", None, &log));
    // Slots sends None along every edge.
    let root = Slots::node(1, &[&m], &log);

    backward(&root, 1.0).unwrap();

    assert_eq!(entries(&log), ["[Some(1.0)]"]);
    assert_eq!(x.grad(), None);
}

/// Runs `f` with anomaly mode set, restoring it after.
fn with_anomaly<T>(check_nan: bool, f: impl FnOnce() -> T) -> T {
    let prev = grad_mode::set_anomaly_enabled(true, check_nan);
    let out = f();
    grad_mode::set_anomaly_enabled(prev.0, prev.1);
    out
}

#[test]
fn anomaly_mode_names_the_node_that_returned_nan() {
    let x = Leaf::new("x", None);
    let m = Mul::node("m", f64::NAN, &[&x.node], None);

    let err = with_anomaly(true, || backward(&m, 1.0).unwrap_err());

    assert_eq!(
        err.to_string(),
        "Function 'm' returned nan values in its 0th output."
    );
    assert_eq!(x.grad(), None);
}

#[test]
fn anomaly_mode_without_check_nan_or_off_lets_nan_through() {
    let x = Leaf::new("x", None);
    let m = Mul::node("m", f64::NAN, &[&x.node], None);
    with_anomaly(false, || backward(&m, 1.0).unwrap());
    assert!(x.grad().unwrap().is_nan());

    let y = Leaf::new("y", None);
    let n = Mul::node("n", f64::NAN, &[&y.node], None);
    backward(&n, 1.0).unwrap();
    assert!(y.grad().unwrap().is_nan());
}

#[test]
fn cheap_anomaly_mode_names_the_first_node_returning_nan_or_inf() {
    let prev = grad_mode::set_cheap_anomaly(true);
    let x = Leaf::new("x", None);
    let m = Mul::node("m", f64::INFINITY, &[&x.node], None);
    let inf = backward(&m, 1.0).unwrap_err().to_string();
    let y = Leaf::new("y", None);
    let n = Mul::node("n", f64::NAN, &[&y.node], None);
    let nan = backward(&n, 1.0).unwrap_err().to_string();
    let z = Leaf::new("z", None);
    let ok = Mul::node("ok", 2.0, &[&z.node], None);
    backward(&ok, 1.0).unwrap();
    grad_mode::set_cheap_anomaly(prev);

    // the test nodes know no forward line: Node::origin adds nothing
    assert_eq!(inf, "Function 'm' returned inf values in its 0th output.");
    assert_eq!(nan, "Function 'n' returned nan values in its 0th output.");
    assert_eq!((x.grad(), y.grad(), z.grad()), (None, None, Some(2.0)));
}

/// A failing node that remembers whether the engine asked it to report itself.
struct Reporting {
    base: rustgrad_core::NodeBase<f64>,
    reported: Arc<AtomicBool>,
}

impl Node<f64> for Reporting {
    fn base(&self) -> &rustgrad_core::NodeBase<f64> {
        &self.base
    }
    fn name(&self) -> String {
        "ReportingBackward".to_string()
    }
    fn apply(&self, _grads: Vec<Option<f64>>) -> rustgrad_core::Result<Vec<Option<f64>>> {
        Err(Error::runtime("failed"))
    }
    fn report_anomaly(&self) {
        self.reported.store(true, Ordering::Relaxed);
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn failing_node_is_reported_only_in_anomaly_mode() {
    for anomaly in [false, true] {
        let x = Leaf::new("x", None);
        let reported = Arc::new(AtomicBool::new(false));
        let node: NodeRef<f64> = Arc::new(Reporting {
            base: rustgrad_core::NodeBase::new(1, vec![edge(&x.node)]),
            reported: reported.clone(),
        });
        let err = if anomaly {
            with_anomaly(true, || backward(&node, 1.0).unwrap_err())
        } else {
            backward(&node, 1.0).unwrap_err()
        };
        assert_eq!(err.to_string(), "failed");
        assert_eq!(reported.load(Ordering::Relaxed), anomaly);
    }
}
