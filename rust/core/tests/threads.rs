//! Note [Accumulation across threads]: several threads running backward into one leaf lose no
//! gradient, and the per-leaf lock is released before post-accumulate-grad hooks run.

mod common;

use std::any::Any;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use common::{backward, Mul};
use rustgrad_core::{
    AccumulateGrad, Accumulation, GradSink, HookList, LeafGrad, LeafLock, NodeRef,
    PostAccumulateHook, Result,
};

/// A `.grad` whose read and write are apart, as Python's are (NumPy releases the GIL between):
/// without a lock around the whole accumulation, concurrent adds overwrite each other.
#[derive(Default)]
struct SlowSink {
    grad: Mutex<Option<f64>>,
}

impl GradSink<f64> for SlowSink {
    fn current(&self) -> Result<LeafGrad> {
        let set = self.grad.lock().unwrap().is_some();
        thread::yield_now();
        Ok(if set {
            LeafGrad::Plain
        } else {
            LeafGrad::Unset
        })
    }
    fn fits(&self, _grad: &f64) -> Result<bool> {
        Ok(true)
    }
    fn accumulate(&self, grad: f64, how: Accumulation) -> Result<()> {
        let old = *self.grad.lock().unwrap();
        thread::sleep(Duration::from_micros(50));
        let new = match how {
            Accumulation::Take | Accumulation::Copy => grad,
            Accumulation::AddInPlace | Accumulation::AddOutOfPlace => {
                old.expect("an add finds .grad set") + grad
            }
        };
        *self.grad.lock().unwrap() = Some(new);
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn accumulate_node(
    sink: &Arc<SlowSink>,
    post: Arc<HookList<dyn PostAccumulateHook>>,
) -> NodeRef<f64> {
    Arc::new(AccumulateGrad::new(
        sink.clone(),
        Arc::new(HookList::default()),
        post,
    ))
}

#[test]
fn threads_backward_into_one_leaf_lose_no_gradient() {
    const THREADS: usize = 8;
    const STEPS: usize = 25;
    for _ in 0..3 {
        let sink = Arc::new(SlowSink::default());
        let acc = accumulate_node(&sink, Arc::new(HookList::default()));
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let acc = acc.clone();
                let barrier = barrier.clone();
                thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..STEPS {
                        let root = Mul::node("mul", (i + 1) as f64, &[&acc], None);
                        backward(&root, 1.0).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let expected = (STEPS * (1..=THREADS).sum::<usize>()) as f64;
        assert_eq!(*sink.grad.lock().unwrap(), Some(expected));
    }
}

/// A post-accumulate-grad hook that checks the leaf's lock is free and, once, runs a backward
/// into its own leaf on another thread and waits for it.
struct Reenter {
    acc: Mutex<Option<NodeRef<f64>>>,
    calls: Mutex<usize>,
}

impl PostAccumulateHook for Reenter {
    fn call(&self) -> Result<()> {
        let first = {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            *calls == 1
        };
        let acc = self.acc.lock().unwrap().clone().expect("node is set");
        let node = acc.as_any().downcast_ref::<AccumulateGrad<f64>>().unwrap();
        assert!(node.sink.as_any().is::<SlowSink>());
        if first {
            // On another thread: a hook run under the lock would wait forever here.
            thread::spawn(move || {
                let root = Mul::node("again", 2.0, &[&acc], None);
                backward(&root, 1.0).unwrap();
            })
            .join()
            .unwrap();
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn post_accumulate_hooks_run_after_the_lock_is_released() {
    let sink = Arc::new(SlowSink::default());
    let hook = Arc::new(Reenter {
        acc: Mutex::new(None),
        calls: Mutex::new(0),
    });
    let post: Arc<HookList<dyn PostAccumulateHook>> = Arc::new(HookList::default());
    post.push(hook.clone());
    let acc = accumulate_node(&sink, post);
    *hook.acc.lock().unwrap() = Some(acc.clone());
    let root = Mul::node("mul", 1.0, &[&acc], None);
    backward(&root, 1.0).unwrap();
    assert_eq!(*sink.grad.lock().unwrap(), Some(3.0));
    assert_eq!(*hook.calls.lock().unwrap(), 2);
    // Break the node -> hook -> node cycle.
    hook.acc.lock().unwrap().take();
}

#[test]
fn leaf_lock_is_reentrant_and_exclusive_across_threads() {
    let lock = Arc::new(LeafLock::default());
    let outer = lock.lock();
    let inner = lock.try_lock().expect("the holder may take it again");
    let other = {
        let lock = lock.clone();
        thread::spawn(move || lock.try_lock().is_some())
            .join()
            .unwrap()
    };
    assert!(!other, "another thread may not take a held lock");
    drop(inner);
    assert!(lock.is_locked(), "held until the outer guard goes");
    let waiter = {
        let lock = lock.clone();
        thread::spawn(move || {
            let _g = lock.lock();
        })
    };
    thread::sleep(Duration::from_millis(20));
    drop(outer);
    waiter.join().unwrap();
    assert!(!lock.is_locked());
}
