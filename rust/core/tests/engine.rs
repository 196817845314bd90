//! The engine: dependencies, sums, order, `inputs=` filtering and capture, errors.

mod common;

use common::*;
use rustgrad_core::{Edge, Engine, Error, ExecuteOptions, NodeRef};

#[test]
fn diamond_sums_each_path_once() {
    // x -> a = 2x -> (b = 3a, c = 5a) -> d = b + c: dd/dx = 2 * (3 + 5).
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let a = Mul::node("a", 2.0, &[&x.node], Some(&log));
    let b = Mul::node("b", 3.0, &[&a], Some(&log));
    let c = Mul::node("c", 5.0, &[&a], Some(&log));
    let d = Add::node("d", &[&b, &c], Some(&log));

    let out = backward(&d, 1.0).unwrap();

    assert!(out.is_empty());
    assert_eq!(x.grad(), Some(16.0));
    let ran = entries(&log);
    assert_eq!(ran.iter().filter(|n| *n == "a").count(), 1, "{ran:?}");
    assert_eq!(ran.iter().filter(|n| *n == "x").count(), 1, "{ran:?}");
    assert_eq!(ran, ["d", "c", "b", "a", "x"]);
}

#[test]
fn diamond_of_leaf_sums_both_edges_into_one_accumulation() {
    // Two edges straight into one leaf: the sink is called once, with the sum.
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let a = Mul::node("a", 2.0, &[&x.node], None);
    let b = Mul::node("b", 7.0, &[&x.node], None);
    let s = Add::node("s", &[&a, &b], None);

    backward(&s, 1.0).unwrap();

    assert_eq!(x.grad(), Some(9.0));
    assert_eq!(entries(&log), ["x"]);
}

#[test]
fn several_roots_deliver_each_root_gradient() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Leaf::new("y", Some(&log));
    let p = Mul::node("p", 2.0, &[&x.node], Some(&log));
    let q = Mul::node("q", 3.0, &[&x.node, &y.node], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(p.clone(), 0), Edge::new(q.clone(), 0)],
        vec![1.0, 10.0],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(out, Vec::<Option<f64>>::new());
    assert_eq!(x.grad(), Some(2.0 + 30.0));
    assert_eq!(y.grad(), Some(30.0));
    // q was created after p; y's AccumulateGrad is ready after q and goes before p; x waits
    // for both p and q and accumulates once.
    assert_eq!(entries(&log), ["q", "y", "p", "x"]);
}

#[test]
fn several_roots_at_one_slot_are_summed() {
    let x = Leaf::new("x", None);
    let p = Mul::node("p", 2.0, &[&x.node], None);

    Engine::execute(
        vec![Edge::new(p.clone(), 0), Edge::new(p.clone(), 0)],
        vec![1.0, 10.0],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(x.grad(), Some(22.0));
}

#[test]
fn several_roots_at_different_slots_fill_each_slot() {
    let log = new_log();
    let s = Slots::node(3, &[], &log);

    Engine::execute(
        vec![Edge::new(s.clone(), 2), Edge::new(s.clone(), 0)],
        vec![3.0, 1.0],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(entries(&log), ["[Some(1.0), None, Some(3.0)]"]);
}

#[test]
fn roots_and_gradients_of_different_lengths_error() {
    let x = Leaf::new("x", None);
    let p = Mul::node("p", 2.0, &[&x.node], None);

    let err = Engine::execute(
        vec![Edge::new(p.clone(), 0), Edge::new(p.clone(), 0)],
        vec![1.0],
        ExecuteOptions::default(),
    )
    .unwrap_err();

    assert!(matches!(err, Error::Runtime(_)), "{err}");
    assert_eq!(err.to_string(), "got 2 roots but 1 gradients");
    assert_eq!(x.grad(), None);
}

#[test]
fn later_created_node_runs_first() {
    // c's edges list a before b, but b was created later, so b runs first.
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let a = Mul::node("a", 1.0, &[&x.node], Some(&log));
    let b = Mul::node("b", 1.0, &[&x.node], Some(&log));
    let c = Add::node("c", &[&a, &b], Some(&log));

    backward(&c, 1.0).unwrap();

    assert_eq!(entries(&log), ["c", "b", "a", "x"]);
    assert_eq!(x.grad(), Some(2.0));
}

#[test]
fn later_created_node_runs_first_across_branches() {
    // Two independent chains: r -> (a1 -> a2), (b1 -> b2), created a1, b1, a2, b2. Once r ran,
    // the ready node with the largest sequence number always goes next.
    let log = new_log();
    let x = Leaf::new("x", None);
    let y = Leaf::new("y", None);
    let a1 = Mul::node("a1", 1.0, &[&x.node], Some(&log));
    let b1 = Mul::node("b1", 1.0, &[&y.node], Some(&log));
    let a2 = Mul::node("a2", 1.0, &[&a1], Some(&log));
    let b2 = Mul::node("b2", 1.0, &[&b1], Some(&log));
    let r = Add::node("r", &[&a2, &b2], Some(&log));

    backward(&r, 1.0).unwrap();

    assert_eq!(entries(&log), ["r", "b2", "a2", "b1", "a1"]);
}

#[test]
fn accumulate_grad_runs_as_soon_as_ready() {
    // After c, both d (created just before c, listed first) and x's AccumulateGrad are ready:
    // the AccumulateGrad goes first.
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Leaf::new("y", Some(&log));
    let d = Mul::node("d", 1.0, &[&y.node], Some(&log));
    let c = Add::node("c", &[&d, &x.node], Some(&log));

    backward(&c, 1.0).unwrap();

    assert_eq!(entries(&log), ["c", "x", "d", "y"]);
}

#[test]
fn shared_node_waits_for_every_path() {
    // a is reachable from r directly and through a long branch; it must run once, last, with
    // the sum of both.
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let a = Mul::node("a", 1.0, &[&x.node], Some(&log));
    let mut long: NodeRef<f64> = a.clone();
    for i in 0..5 {
        long = Mul::node(&format!("m{i}"), 2.0, &[&long], Some(&log));
    }
    let r = Add::node("r", &[&a, &long], Some(&log));

    backward(&r, 1.0).unwrap();

    assert_eq!(x.grad(), Some(1.0 + 32.0));
    assert_eq!(entries(&log), ["r", "m4", "m3", "m2", "m1", "m0", "a", "x"]);
}

#[test]
fn inputs_with_accumulate_skip_branches_that_cannot_reach_an_input() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Leaf::new("y", Some(&log));
    let a = Mul::node("a", 2.0, &[&x.node], Some(&log));
    let b = Mul::node("b", 3.0, &[&y.node], Some(&log));
    let c = Add::node("c", &[&a, &b], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(c.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![x.edge()],
            accumulate_grad: true,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [None]);
    assert_eq!(x.grad(), Some(2.0));
    assert_eq!(y.grad(), None);
    assert_eq!(entries(&log), ["c", "a", "x"]);
}

#[test]
fn inputs_without_accumulate_return_gradient_and_leave_sink_untouched() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Leaf::new("y", Some(&log));
    let a = Mul::node("a", 2.0, &[&x.node], Some(&log));
    let b = Mul::node("b", 3.0, &[&y.node], Some(&log));
    let c = Add::node("c", &[&a, &b], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(c.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![y.edge(), x.edge()],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(3.0), Some(2.0)]);
    assert_eq!(x.grad(), None);
    assert_eq!(y.grad(), None);
    assert_eq!(entries(&log), ["c", "b", "a"]);
}

#[test]
fn inputs_without_accumulate_skip_branches_that_cannot_reach_an_input() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Leaf::new("y", Some(&log));
    let a = Mul::node("a", 2.0, &[&x.node], Some(&log));
    let b = Mul::node("b", 3.0, &[&y.node], Some(&log));
    let c = Add::node("c", &[&a, &b], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(c.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![x.edge()],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(2.0)]);
    assert_eq!(entries(&log), ["c", "a"]);
}

#[test]
fn inputs_without_accumulate_give_none_for_an_unreached_input() {
    let x = Leaf::new("x", None);
    let z = Leaf::new("z", None);
    let a = Mul::node("a", 2.0, &[&x.node], None);

    let out = Engine::execute(
        vec![Edge::new(a.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![z.edge(), x.edge()],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [None, Some(2.0)]);
    assert_eq!(z.grad(), None);
}

#[test]
fn inputs_without_accumulate_capture_a_non_leaf_without_running_it() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Mul::node("y", 3.0, &[&x.node], Some(&log));
    let r = Mul::node("r", 2.0, &[&y], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(r.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![Edge::new(y.clone(), 0)],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(2.0)]);
    assert_eq!(entries(&log), ["r"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn inputs_without_accumulate_capture_a_non_leaf_and_a_leaf_below_it() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let y = Mul::node("y", 3.0, &[&x.node], Some(&log));
    let r = Mul::node("r", 2.0, &[&y], Some(&log));

    let out = Engine::execute(
        vec![Edge::new(r.clone(), 0)],
        vec![1.0],
        ExecuteOptions {
            inputs: vec![Edge::new(y.clone(), 0), x.edge()],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(2.0), Some(6.0)]);
    assert_eq!(entries(&log), ["r", "y"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn root_that_is_an_input_captures_the_root_gradient() {
    let x = Leaf::new("x", None);
    let y = Mul::node("y", 3.0, &[&x.node], None);

    let out = Engine::execute(
        vec![Edge::new(y.clone(), 0)],
        vec![5.0],
        ExecuteOptions {
            inputs: vec![Edge::new(y.clone(), 0)],
            accumulate_grad: false,
            ..Default::default()
        },
    )
    .unwrap();

    assert_eq!(out, [Some(5.0)]);
    assert_eq!(x.grad(), None);
}

#[test]
fn none_gradient_skips_downstream_nodes_and_leaves_sink_empty() {
    // Slots passes None on: m receives nothing and is not applied; x gets no gradient.
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let m = Mul::node("m", 2.0, &[&x.node], Some(&log));
    let s = Slots::node(1, &[&m], &log);

    backward(&s, 1.0).unwrap();

    assert_eq!(entries(&log), ["[Some(1.0)]"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn node_error_propagates_out_of_execute() {
    let log = new_log();
    let x = Leaf::new("x", Some(&log));
    let f = Failing::node(&[&x.node]);
    let r = Mul::node("r", 2.0, &[&f], Some(&log));

    let err = backward(&r, 1.0).unwrap_err();

    assert!(is_boom(&err), "{err}");
    assert_eq!(entries(&log), ["r"]);
    assert_eq!(x.grad(), None);
}

#[test]
fn wrong_number_of_gradients_errors() {
    let x = Leaf::new("x", None);
    let w = WrongArity::node(&[&x.node]);

    let err = backward(&w, 1.0).unwrap_err();

    assert!(matches!(err, Error::Runtime(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("incorrect number of gradients"), "{msg}");
    assert!(msg.contains("WrongArityBackward"), "{msg}");
    assert!(msg.contains("expected 1, got 2"), "{msg}");
    assert_eq!(x.grad(), None);
}

#[test]
fn vector_gradients_at_one_slot_sum_elementwise() {
    let v: Leaf<Vec<f64>> = Leaf::new("v", None);
    let e1 = Emit::node(vec![1.0, 2.0], &[&v.node]);
    let e2 = Emit::node(vec![10.0, 20.0], &[&v.node]);
    let s = Add::node("s", &[&e1, &e2], None);

    Engine::execute(
        vec![Edge::new(s, 0)],
        vec![vec![1.0]],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(v.grad(), Some(vec![11.0, 22.0]));
}

#[test]
fn mismatched_gradient_shapes_at_one_slot_error() {
    let v: Leaf<Vec<f64>> = Leaf::new("v", None);
    let e1 = Emit::node(vec![1.0, 2.0], &[&v.node]);
    let e2 = Emit::node(vec![1.0], &[&v.node]);
    let s = Add::node("s", &[&e1, &e2], None);

    let err = Engine::execute(
        vec![Edge::new(s, 0)],
        vec![vec![1.0]],
        ExecuteOptions::default(),
    )
    .unwrap_err();

    assert!(err.to_string().contains("gradient shapes differ"), "{err}");
    assert_eq!(v.grad(), None);
}

#[test]
fn a_gradient_is_conformed_to_its_recorded_input() {
    // Note [Input metadata]: the formula hands back the output's shape; the engine sums it down
    // to the length-1 input, and leaves the edge without metadata as it is.
    let v: Leaf<Vec<f64>> = Leaf::new("v", None);
    let w: Leaf<Vec<f64>> = Leaf::new("w", None);
    let e = Emit::with_meta(vec![1.0, 2.0], &[&v.node, &w.node], vec![Some(1), None]);

    Engine::execute(
        vec![Edge::new(e, 0)],
        vec![vec![1.0]],
        ExecuteOptions::default(),
    )
    .unwrap();

    assert_eq!(v.grad(), Some(vec![3.0]));
    assert_eq!(w.grad(), Some(vec![1.0, 2.0]));
}

#[test]
fn a_gradient_that_cannot_conform_is_torchs_invalid_gradient_error() {
    let v: Leaf<Vec<f64>> = Leaf::new("v", None);
    let e = Emit::with_meta(vec![1.0, 2.0], &[&v.node], vec![Some(3)]);

    let err = Engine::execute(
        vec![Edge::new(e, 0)],
        vec![vec![1.0]],
        ExecuteOptions::default(),
    )
    .unwrap_err();

    assert_eq!(
        err.to_string(),
        "Function Emit returned an invalid gradient at index 0 - got [2] but expected shape compatible with [3]"
    );
    assert_eq!(v.grad(), None);
}

#[test]
fn absent_edge_is_skipped() {
    // A node input that needs no gradient has no edge (None); its gradient is dropped.
    let x = Leaf::new("x", None);
    let m = Mul::with_edges("m", 4.0, 1, vec![None, edge(&x.node)], None);

    backward(&m, 1.0).unwrap();

    assert_eq!(x.grad(), Some(4.0));
}

#[test]
fn fresh_graph_over_same_leaf_accumulates_into_grad() {
    let x = Leaf::new("x", None);
    let first = Mul::node("first", 2.0, &[&x.node], None);
    backward(&first, 1.0).unwrap();
    drop(first);

    let node = x.fresh_node();
    let second = Mul::node("second", 5.0, &[&node], None);
    backward(&second, 1.0).unwrap();

    assert_eq!(x.grad(), Some(7.0));
}
