//! AccumulateGrad: the sink of a leaf's gradient.
//!
//! A leaf holds its AccumulateGrad weakly and the node holds the leaf (through its sink)
//! strongly, so the node lives while a graph uses the leaf and is made anew for the next graph.
//! Its sequence number is the largest there is, so it runs as soon as its gradient is complete.
//! The leaf owns its tensor hooks and post-accumulate-grad hooks; every AccumulateGrad made for
//! it shares those lists, so hooks outlive any one graph.
//!
//! Note [Stealing a gradient]
//! How an incoming gradient reaches `.grad` is decided here, by torch's AccumulateGrad rules,
//! from what the engine knows; the sink only carries the decision out (`Accumulation`):
//! - `.grad` is set: under grad mode (`create_graph=True`) `.grad + grad` out of place, so the
//!   sum records a graph; otherwise `grad` is added into `.grad` in place. One difference from
//!   torch: a `.grad` that itself records a graph (left by a `create_graph` backward) is also
//!   replaced out of place, so a plain backward after it leaves a `.grad` in no graph and breaks
//!   the param -> `.grad` -> graph -> param cycle (torch adds in place and keeps the cycle).
//! - `.grad` is unset, grad mode off, the gradient is fresh (`GradValue::is_fresh`, below) and
//!   its buffer fits the leaf as it is (`GradSink::fits`: same dtype and shape, dense, writable,
//!   not borrowed from another array): the gradient itself becomes `.grad` (taken, no copy).
//! - otherwise a copy of it does (recorded under grad mode).
//!
//! torch takes the gradient when no one else holds it (a use count); rustgrad never counts
//! references (a Python refcount says nothing certain: frames, tracers and the interpreter hold
//! references of their own). It carries one bit per gradient instead, the fresh mark, which says
//! "made for this backward, and nothing outside the engine can see it":
//! - set on what the engine makes itself: the sum an `InputBuffer` makes of two gradients
//!   arriving at one slot (a root gradient only when the caller made it for the engine and
//!   marked it so);
//! - set by a node on an output that is a buffer it made during the call and keeps no reference
//!   to, or a fresh gradient it received and hands on as it is, once (the binding: a formula of
//!   rustgrad's own op layer; a custom Function's or a module hook's backward marks nothing);
//! - cleared by the engine whenever anything else can see the value: a tensor hook or the
//!   retains-grad hook runs on it (and what a hook returns is never fresh), `autograd.grad`
//!   captures it, a node pre-hook or post-hook sees it, or one node hands the same buffer to
//!   two edges (`GradValue::shares_buffer`: neither copy is then the engine's alone);
//! - a clone is never fresh (it is a second handle on the buffer).
//!
//! So a gradient the user can still see (the `gradient=` of `backward`, a tensor a hook kept or
//! returned, a formula's output stored elsewhere) is never fresh, `.grad` never aliases it and
//! a later in-place accumulation never writes into it.
//!
//! Note [Accumulation across threads]
//! Several threads may run backward into the same leaf at once (torch guarantees every gradient
//! arrives). Reading `.grad`, deciding and writing it is one step under the node's `LeafLock`.
//! The lock is the leaf's own: while any graph uses a leaf, every graph built meanwhile reuses
//! the same AccumulateGrad (the leaf's weak reference upgrades), so concurrent backwards meet on
//! one lock. Two rules keep it from deadlocking:
//! - a runtime with a global lock of its own (Python's GIL, released by NumPy inside the add)
//!   must give that lock up while waiting for this one (`GradSink::acquire`);
//! - post-accumulate-grad hooks run after the lock is released, so a hook may run a backward
//!   into its own leaf. The lock is reentrant besides, for code the sink runs on the same thread
//!   (a finalizer of the old `.grad` that runs a backward).

use std::any::Any;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use crate::error::Result;
use crate::grad_mode;
use crate::graph::{Node, NodeBase};
use crate::hooks::{HookList, PostAccumulateHook, TensorHook};
use crate::value::GradValue;

/// How a leaf's sink folds an incoming gradient into `.grad`. See Note [Stealing a gradient].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accumulation {
    /// `.grad` is unset and the gradient is fresh (the engine's alone): it becomes `.grad` as it
    /// is.
    Take,
    /// `.grad` is unset: a copy of the gradient becomes `.grad` (recorded under grad mode).
    Copy,
    /// `.grad` is set and in no graph, grad mode off: the gradient is added into `.grad` in
    /// place.
    AddInPlace,
    /// `.grad` is set, and grad mode is on or `.grad` records a graph: `.grad` becomes
    /// `.grad + gradient` (recorded under grad mode).
    AddOutOfPlace,
}

/// A leaf's `.grad` as an accumulation finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafGrad {
    /// None yet.
    Unset,
    /// A gradient in no graph.
    Plain,
    /// A gradient that records a graph (left by a `create_graph` backward).
    InGraph,
}

impl Accumulation {
    /// torch's AccumulateGrad rules for `grad` arriving at the leaf behind `sink`.
    pub fn decide<V: GradValue>(sink: &dyn GradSink<V>, grad: &V) -> Result<Self> {
        let grad_mode = grad_mode::is_grad_enabled();
        match sink.current()? {
            LeafGrad::Plain if !grad_mode => Ok(Accumulation::AddInPlace),
            LeafGrad::Plain | LeafGrad::InGraph => Ok(Accumulation::AddOutOfPlace),
            // Cheapest test first: `fits` may look at the arrays.
            LeafGrad::Unset if !grad_mode && grad.is_fresh() && sink.fits(grad)? => {
                Ok(Accumulation::Take)
            }
            LeafGrad::Unset => Ok(Accumulation::Copy),
        }
    }
}

/// Where a leaf's gradient goes (the binding stores it in the tensor's `.grad`).
pub trait GradSink<V>: Send + Sync {
    /// The leaf's `.grad` now.
    fn current(&self) -> Result<LeafGrad>;

    /// Whether `grad` could be the leaf's `.grad` as it is: the leaf's dtype and shape, a dense
    /// buffer of its own that may be written to. Only then may the engine hand it over.
    fn fits(&self, grad: &V) -> Result<bool>;

    /// Folds `grad` into `.grad` as `how` says.
    fn accumulate(&self, grad: V, how: Accumulation) -> Result<()>;

    /// Whether the leaf still requires grad: one that stopped (`requires_grad_(False)`,
    /// `detach_()`) after the graph was built receives nothing, as torch's AccumulateGrad.
    fn requires_grad(&self) -> Result<bool> {
        Ok(true)
    }

    /// Waits for the leaf's accumulation lock. A sink whose runtime has a global lock (the GIL)
    /// releases it while waiting (Note [Accumulation across threads]).
    fn acquire<'a>(&self, lock: &'a LeafLock) -> LeafGuard<'a> {
        lock.lock()
    }

    fn as_any(&self) -> &dyn Any;
}

/// The lock that makes one accumulation into a leaf atomic (Note [Accumulation across
/// threads]). Reentrant: the thread holding it may take it again.
#[derive(Default)]
pub struct LeafLock {
    /// The holding thread and how many times it holds the lock.
    owner: Mutex<Option<(ThreadId, usize)>>,
    free: Condvar,
}

/// A hold on a `LeafLock`, released on drop.
#[must_use = "the lock is released when the guard is dropped"]
pub struct LeafGuard<'a> {
    lock: &'a LeafLock,
}

impl LeafLock {
    fn owner(&self) -> MutexGuard<'_, Option<(ThreadId, usize)>> {
        // Nothing panics while holding `owner`; a poisoned one is still consistent.
        self.owner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lock if it is free or this thread holds it; None if another thread does.
    pub fn try_lock(&self) -> Option<LeafGuard<'_>> {
        let me = thread::current().id();
        let mut owner = self.owner();
        match &mut *owner {
            None => *owner = Some((me, 1)),
            Some((id, depth)) if *id == me => *depth += 1,
            Some(_) => return None,
        }
        Some(LeafGuard { lock: self })
    }

    /// Takes the lock, waiting while another thread holds it.
    pub fn lock(&self) -> LeafGuard<'_> {
        let me = thread::current().id();
        let mut owner = self.owner();
        loop {
            match &mut *owner {
                None => {
                    *owner = Some((me, 1));
                    break;
                }
                Some((id, depth)) if *id == me => {
                    *depth += 1;
                    break;
                }
                Some(_) => owner = self.free.wait(owner).unwrap_or_else(|e| e.into_inner()),
            }
        }
        LeafGuard { lock: self }
    }

    /// Whether some thread holds the lock now.
    pub fn is_locked(&self) -> bool {
        self.owner().is_some()
    }
}

impl Drop for LeafGuard<'_> {
    fn drop(&mut self) {
        let mut owner = self.lock.owner();
        if let Some((_, depth)) = &mut *owner {
            *depth -= 1;
            if *depth == 0 {
                *owner = None;
                drop(owner);
                self.lock.free.notify_one();
            }
        }
    }
}

pub struct AccumulateGrad<V: GradValue> {
    base: NodeBase<V>,
    pub sink: Arc<dyn GradSink<V>>,
    pub post_hooks: Arc<HookList<dyn PostAccumulateHook>>,
    lock: LeafLock,
}

impl<V: GradValue> AccumulateGrad<V> {
    pub fn new(
        sink: Arc<dyn GradSink<V>>,
        tensor_hooks: Arc<HookList<dyn TensorHook<V>>>,
        post_hooks: Arc<HookList<dyn PostAccumulateHook>>,
    ) -> Self {
        let base = NodeBase::with_sequence_nr(u64::MAX, 1, Vec::new());
        base.hooks.add_tensor_pre_hooks(0, tensor_hooks);
        AccumulateGrad {
            base,
            sink,
            post_hooks,
            lock: LeafLock::default(),
        }
    }
}

impl<V: GradValue> Node<V> for AccumulateGrad<V> {
    fn base(&self) -> &NodeBase<V> {
        &self.base
    }

    fn name(&self) -> String {
        "torch::autograd::AccumulateGrad".to_string()
    }

    fn apply(&self, grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        if let Some(grad) = grads.into_iter().next().flatten() {
            if !self.sink.requires_grad()? {
                return Ok(Vec::new());
            }
            {
                // Read, decide and write as one step (Note [Accumulation across threads]).
                let _guard = self.sink.acquire(&self.lock);
                let how = Accumulation::decide(self.sink.as_ref(), &grad)?;
                self.sink.accumulate(grad, how)?;
            }
            self.post_hooks.run()?;
        }
        Ok(Vec::new())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
