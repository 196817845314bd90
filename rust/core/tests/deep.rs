//! A million-node chain: backward and drop run in constant stack (Note [Iterative drop]).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use rustgrad_core::NodeRef;

const N: usize = 1_000_000;

/// Runs `f` on a thread with a small, fixed stack, so a recursion as deep as the chain would
/// overflow whatever RUST_MIN_STACK says.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// x <- n1 <- n2 <- ... <- nN, each node owning the edge to the previous one; built in a loop.
fn chain(x: &Leaf<f64>, runs: &Arc<AtomicUsize>) -> NodeRef<f64> {
    let mut head: NodeRef<f64> = x.node.clone();
    for _ in 0..N {
        head = Counted::node(head, runs);
    }
    head
}

#[test]
fn million_node_chain_runs_backward_and_drops_without_stack_overflow() {
    on_small_stack(|| {
        let x = Leaf::new("x", None);
        let weak_leaf_node = Arc::downgrade(&x.node);
        let runs = Arc::new(AtomicUsize::new(0));
        let head = chain(&x, &runs);

        backward(&head, 2.5).unwrap();

        assert_eq!(runs.load(Ordering::Relaxed), N);
        assert_eq!(x.grad(), Some(2.5));

        drop(head);
        drop(x.node);
        assert!(
            weak_leaf_node.upgrade().is_none(),
            "dropping the head frees the whole chain"
        );
    });
}

#[test]
fn million_node_chain_drops_without_backward() {
    on_small_stack(|| {
        let x = Leaf::new("x", None);
        let runs = Arc::new(AtomicUsize::new(0));
        let head = chain(&x, &runs);
        // Every node holds a clone of `runs`: all N are freed once the head goes.
        assert_eq!(Arc::strong_count(&runs), N + 1);

        drop(head);

        assert_eq!(Arc::strong_count(&runs), 1);
        assert_eq!(runs.load(Ordering::Relaxed), 0);
    });
}
