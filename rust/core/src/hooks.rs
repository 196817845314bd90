//! Hooks: tensor pre-hooks, retains-grad hooks, node pre- and post-hooks and
//! post-accumulate-grad hooks.
//!
//! Note [Hook order]
//! When a node is about to run, for each of its input slots that received a gradient:
//!   1. the tensor pre-hooks registered on the tensor that is that slot's forward output
//!      (`tensor.register_hook`), in registration order; each may return a replacement;
//!   2. then the retains-grad hook of that tensor (`retain_grad()`), which therefore sees the
//!      gradient after every tensor hook, whenever it was registered;
//!   3. then gradients captured for `autograd.grad` / `backward(inputs=...)` are taken.
//!
//! If the node is needed, then, once for the whole node:
//!   4. the node's pre-hooks (`grad_fn.register_prehook(fn(grad_outputs))`), in registration
//!      order; each sees all the gradients the node received (None where none arrived) and may
//!      return a replacement tuple;
//!   5. the node runs. For a leaf the node is its AccumulateGrad: the gradient is accumulated
//!      into `.grad`, then the post-accumulate-grad hooks run, in registration order;
//!   6. the node's post-hooks (`grad_fn.register_hook(fn(grad_inputs, grad_outputs))`), in
//!      registration order; each sees what the node returned and what it received, and may
//!      return a replacement for what it returned;
//!   7. with anomaly detection on, what the node returned is checked for NaN.
//! A node that received no gradient at all does not run, and neither do its hooks of steps 4-7.
//! Handles are ids from one global counter; removing an id twice is harmless.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Result;
use crate::value::GradValue;

pub type HookId = u64;

static HOOK_ID: AtomicU64 = AtomicU64::new(1);

pub fn next_hook_id() -> HookId {
    HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

/// A hook on a tensor's gradient: observes it, or returns a replacement.
pub trait TensorHook<V>: Send + Sync {
    fn call(&self, grad: &V) -> Result<Option<V>>;
    fn as_any(&self) -> &dyn Any;
}

/// A hook run after a leaf's `.grad` was updated.
pub trait PostAccumulateHook: Send + Sync {
    fn call(&self) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}

/// A hook run before a node (step 4 of Note [Hook order]): sees every gradient the node is
/// about to receive (one per input slot) and may return replacements (as many).
pub trait NodePreHook<V>: Send + Sync {
    fn call(&self, grad_outputs: &[Option<V>]) -> Result<Option<Vec<Option<V>>>>;
    fn as_any(&self) -> &dyn Any;
}

/// A hook run after a node (step 6 of Note [Hook order]): sees what the node returned
/// (`grad_inputs`, one per edge) and what it received (`grad_outputs`), and may return
/// replacements for `grad_inputs` (as many).
pub trait NodePostHook<V>: Send + Sync {
    fn call(
        &self,
        grad_inputs: &[Option<V>],
        grad_outputs: &[Option<V>],
    ) -> Result<Option<Vec<Option<V>>>>;
    fn as_any(&self) -> &dyn Any;
}

/// One ordered list of hooks of one kind, shared by the tensor that owns it and its node.
pub struct HookList<H: ?Sized> {
    hooks: Mutex<Vec<(HookId, Arc<H>)>>,
}

impl<H: ?Sized> Default for HookList<H> {
    fn default() -> Self {
        HookList {
            hooks: Mutex::new(Vec::new()),
        }
    }
}

impl<H: ?Sized> HookList<H> {
    pub fn push(&self, hook: Arc<H>) -> HookId {
        let id = next_hook_id();
        self.lock().push((id, hook));
        id
    }

    /// Removes the hook with this id; false if there was none.
    pub fn remove(&self, id: HookId) -> bool {
        // The hook is dropped after the lock is released: dropping it may run arbitrary code
        // (a Python `__del__`) that registers or removes hooks on this very list.
        let removed = {
            let mut hooks = self.lock();
            let i = hooks.iter().position(|(i, _)| *i == id);
            i.map(|i| hooks.remove(i))
        };
        removed.is_some()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub fn clear(&self) {
        let hooks = std::mem::take(&mut *self.lock());
        drop(hooks);
    }

    /// Visits every hook in place (no clone, so `Arc::strong_count` of each is what others hold
    /// plus one), for the binding's garbage-collector traversal.
    ///
    /// A list locked by this thread right now (traversal inside a hook operation) is skipped:
    /// reporting less only makes the collector keep more.
    pub fn for_each(&self, mut f: impl FnMut(&Arc<H>)) {
        let Some(hooks) = try_lock(&self.hooks) else {
            return;
        };
        for (_, h) in hooks.iter() {
            f(h);
        }
    }

    /// The hooks as they are now. Hooks run from a snapshot, so a hook may add or remove hooks.
    pub fn snapshot(&self) -> Vec<Arc<H>> {
        self.lock().iter().map(|(_, h)| h.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(HookId, Arc<H>)>> {
        self.hooks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<V: GradValue> HookList<dyn TensorHook<V>> {
    /// Runs every hook in order, each seeing the previous one's replacement. A gradient a hook
    /// saw, or returned, is no longer fresh (Note [Stealing a gradient]).
    pub fn run(&self, grad: V) -> Result<V> {
        let mut grad = grad;
        for hook in self.snapshot() {
            grad.set_fresh(false);
            if let Some(new) = hook.call(&grad)? {
                grad = new;
                grad.set_fresh(false);
            }
        }
        Ok(grad)
    }
}

impl HookList<dyn PostAccumulateHook> {
    pub fn run(&self) -> Result<()> {
        for hook in self.snapshot() {
            hook.call()?;
        }
        Ok(())
    }
}

/// A tensor's own hook list, shared with the node whose input slot the tensor is.
pub type TensorHooks<V> = HookList<dyn TensorHook<V>>;

/// Per input slot: which tensor hook lists run for it.
type SlotLists<V> = Mutex<Vec<(usize, Arc<TensorHooks<V>>)>>;
/// Per input slot: the retains-grad hook.
type SlotHooks<V> = Mutex<Vec<(usize, Arc<dyn TensorHook<V>>)>>;

pub type NodePreHooks<V> = HookList<dyn NodePreHook<V>>;
pub type NodePostHooks<V> = HookList<dyn NodePostHook<V>>;

/// The hooks a node runs. See Note [Hook order].
///
/// Most nodes never get a hook, so the lists live behind one pointer allocated on the first
/// hook: an unhooked node pays 16 bytes for them, and "none here" is one atomic load.
pub struct NodeHooks<V> {
    slots: OnceLock<Box<HookSlots<V>>>,
}

struct HookSlots<V> {
    tensor_pre: SlotLists<V>,
    retains_grad: SlotHooks<V>,
    pre: OnceLock<Arc<NodePreHooks<V>>>,
    post: OnceLock<Arc<NodePostHooks<V>>>,
}

impl<V> Default for NodeHooks<V> {
    fn default() -> Self {
        NodeHooks {
            slots: OnceLock::new(),
        }
    }
}

impl<V: GradValue> NodeHooks<V> {
    /// The lists, made on the first hook.
    fn slots(&self) -> &HookSlots<V> {
        self.slots.get_or_init(|| {
            Box::new(HookSlots {
                tensor_pre: Mutex::new(Vec::new()),
                retains_grad: Mutex::new(Vec::new()),
                pre: OnceLock::new(),
                post: OnceLock::new(),
            })
        })
    }

    /// Attaches a tensor's hook list to input slot `slot` (once per list).
    pub fn add_tensor_pre_hooks(&self, slot: usize, list: Arc<HookList<dyn TensorHook<V>>>) {
        let mut lists = self
            .slots()
            .tensor_pre
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !lists
            .iter()
            .any(|(s, l)| *s == slot && Arc::ptr_eq(l, &list))
        {
            lists.push((slot, list));
        }
    }

    /// Sets the retains-grad hook of input slot `slot`, replacing an earlier one.
    /// Returns the hook it replaced, for the caller to drop outside any borrow it holds.
    pub fn set_retains_grad(
        &self,
        slot: usize,
        hook: Arc<dyn TensorHook<V>>,
    ) -> Option<Arc<dyn TensorHook<V>>> {
        let mut hooks = self
            .slots()
            .retains_grad
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let old = hooks
            .iter()
            .position(|(s, _)| *s == slot)
            .map(|i| hooks.remove(i).1);
        hooks.push((slot, hook));
        old
    }

    /// Removes and returns the retains-grad hook of input slot `slot` (an in-place op moves it
    /// to the tensor's new grad_fn).
    pub fn take_retains_grad(&self, slot: usize) -> Option<Arc<dyn TensorHook<V>>> {
        let mut hooks = self
            .slots
            .get()?
            .retains_grad
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let i = hooks.iter().position(|(s, _)| *s == slot)?;
        Some(hooks.remove(i).1)
    }

    pub fn has_retains_grad(&self, slot: usize) -> bool {
        self.slots.get().is_some_and(|h| {
            let hooks = h.retains_grad.lock().unwrap_or_else(|e| e.into_inner());
            hooks.iter().any(|(s, _)| *s == slot)
        })
    }

    /// The node's pre-hook list (`grad_fn.register_prehook`), made on first use.
    pub fn pre_hooks(&self) -> Arc<NodePreHooks<V>> {
        self.slots().pre.get_or_init(Default::default).clone()
    }

    /// The node's post-hook list (`grad_fn.register_hook`), made on first use.
    pub fn post_hooks(&self) -> Arc<NodePostHooks<V>> {
        self.slots().post.get_or_init(Default::default).clone()
    }

    /// How many pre- and post-hooks are registered, without making the lists.
    pub fn node_hook_counts(&self) -> (usize, usize) {
        (
            self.pre().map_or(0, |l| l.len()),
            self.post().map_or(0, |l| l.len()),
        )
    }

    fn pre(&self) -> Option<&Arc<NodePreHooks<V>>> {
        self.slots.get()?.pre.get()
    }

    fn post(&self) -> Option<&Arc<NodePostHooks<V>>> {
        self.slots.get()?.post.get()
    }

    /// No hook of any kind: the engine's fast path, one atomic load for a node never hooked.
    pub fn is_empty(&self) -> bool {
        if self.slots.get().is_none() {
            return true;
        }
        !self.has_tensor_hooks() && !self.has_pre_hooks() && !self.has_post_hooks()
    }

    /// Tensor pre-hooks or retains-grad hooks on some slot (steps 1 and 2).
    pub fn has_tensor_hooks(&self) -> bool {
        let Some(h) = self.slots.get() else {
            return false;
        };
        !h.tensor_pre
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
            || !h
                .retains_grad
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty()
    }

    pub fn has_pre_hooks(&self) -> bool {
        self.pre().is_some_and(|l| !l.is_empty())
    }

    pub fn has_post_hooks(&self) -> bool {
        self.post().is_some_and(|l| !l.is_empty())
    }

    /// Step 4 of Note [Hook order]: each pre-hook in turn, each seeing the previous one's
    /// replacement.
    pub fn run_pre(&self, grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        let Some(list) = self.pre() else {
            return Ok(grads);
        };
        let mut grads = grads;
        for hook in list.snapshot() {
            seen(&mut grads);
            if let Some(new) = hook.call(&grads)? {
                grads = new;
                seen(&mut grads);
            }
        }
        Ok(grads)
    }

    /// Step 6 of Note [Hook order]: each post-hook in turn on what the node returned.
    pub fn run_post(
        &self,
        grad_inputs: Vec<Option<V>>,
        grad_outputs: &[Option<V>],
    ) -> Result<Vec<Option<V>>> {
        let Some(list) = self.post() else {
            return Ok(grad_inputs);
        };
        let mut grad_inputs = grad_inputs;
        for hook in list.snapshot() {
            seen(&mut grad_inputs);
            if let Some(new) = hook.call(&grad_inputs, grad_outputs)? {
                grad_inputs = new;
                seen(&mut grad_inputs);
            }
        }
        Ok(grad_inputs)
    }

    /// Every node pre- and post-hook held by its list alone, in a list held by this node alone,
    /// for the binding's garbage-collector traversal (see `for_each_shared`).
    pub fn for_each_exclusive_node_hook(&self, mut f: impl FnMut(&dyn Any)) {
        if let Some(list) = self.pre().filter(|l| Arc::strong_count(l) == 1) {
            list.for_each(|h| {
                if Arc::strong_count(h) == 1 {
                    f(h.as_any());
                }
            });
        }
        if let Some(list) = self.post().filter(|l| Arc::strong_count(l) == 1) {
            list.for_each(|h| {
                if Arc::strong_count(h) == 1 {
                    f(h.as_any());
                }
            });
        }
    }

    /// Runs steps 1 and 2 of Note [Hook order] for one slot.
    pub fn run(&self, slot: usize, grad: V) -> Result<V> {
        let Some(h) = self.slots.get() else {
            return Ok(grad);
        };
        let lists: Vec<_> = {
            let lists = h.tensor_pre.lock().unwrap_or_else(|e| e.into_inner());
            lists
                .iter()
                .filter(|(s, _)| *s == slot)
                .map(|(_, l)| l.clone())
                .collect()
        };
        let mut grad = grad;
        for list in lists {
            grad = list.run(grad)?;
        }
        let retain: Vec<_> = {
            let hooks = h.retains_grad.lock().unwrap_or_else(|e| e.into_inner());
            hooks
                .iter()
                .filter(|(s, _)| *s == slot)
                .map(|(_, h)| h.clone())
                .collect()
        };
        for hook in retain {
            grad.set_fresh(false);
            if let Some(new) = hook.call(&grad)? {
                grad = new;
                grad.set_fresh(false);
            }
        }
        Ok(grad)
    }

    /// Every tensor hook list attached here (with its slot) and every retains-grad hook, in
    /// place, for the binding's garbage-collector traversal: the binding reports a Python object
    /// only when each `Arc` on the way to it is held by no one else.
    pub fn for_each_shared(
        &self,
        mut list: impl FnMut(&Arc<TensorHooks<V>>),
        mut retains: impl FnMut(&Arc<dyn TensorHook<V>>),
    ) {
        let Some(h) = self.slots.get() else {
            return;
        };
        if let Some(lists) = try_lock(&h.tensor_pre) {
            for (_, l) in lists.iter() {
                list(l);
            }
        }
        if let Some(hooks) = try_lock(&h.retains_grad) {
            for (_, h) in hooks.iter() {
                retains(h);
            }
        }
    }

    /// Every hook object held here, for the binding's garbage-collector traversal.
    pub fn for_each_hook(&self, mut f: impl FnMut(&dyn Any)) {
        let Some(h) = self.slots.get() else {
            return;
        };
        if let Some(list) = h.pre.get() {
            for h in list.snapshot() {
                f(h.as_any());
            }
        }
        if let Some(list) = h.post.get() {
            for h in list.snapshot() {
                f(h.as_any());
            }
        }
        for (_, list) in h
            .tensor_pre
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for h in list.snapshot() {
                f(h.as_any());
            }
        }
        for (_, h) in h
            .retains_grad
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            f(h.as_any());
        }
    }
}

/// Clears the fresh mark of gradients a hook sees or returns (Note [Stealing a gradient]).
fn seen<V: GradValue>(grads: &mut [Option<V>]) {
    for g in grads.iter_mut().flatten() {
        g.set_fresh(false);
    }
}

/// The lock if no one holds it: the garbage collector's traversal may run while this thread is
/// inside an operation that holds it, and must neither deadlock nor see a half-made change.
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scale(f64);

    impl TensorHook<f64> for Scale {
        fn call(&self, grad: &f64) -> Result<Option<f64>> {
            Ok(Some(grad * self.0))
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn take_retains_grad_moves_the_hook_out_of_its_slot() {
        let hooks = NodeHooks::<f64>::default();
        hooks.set_retains_grad(1, Arc::new(Scale(2.0)));

        assert!(hooks.take_retains_grad(0).is_none());
        let taken = hooks
            .take_retains_grad(1)
            .expect("slot 1 had a retains-grad hook");

        assert!(!hooks.has_retains_grad(1));
        assert!(hooks.is_empty());
        assert_eq!(taken.call(&3.0).unwrap(), Some(6.0));
    }

    #[test]
    fn for_each_visits_in_place_without_cloning() {
        let list = TensorHooks::<f64>::default();
        list.push(Arc::new(Scale(2.0)));
        list.push(Arc::new(Scale(3.0)));

        let mut counts = Vec::new();
        list.for_each(|h| counts.push(Arc::strong_count(h)));

        assert_eq!(counts, [1, 1]);
    }

    #[test]
    fn for_each_shared_visits_lists_and_retains_grad_hooks() {
        let hooks = NodeHooks::<f64>::default();
        let list = Arc::new(TensorHooks::<f64>::default());
        hooks.add_tensor_pre_hooks(0, list.clone());
        hooks.set_retains_grad(0, Arc::new(Scale(1.0)));

        let (mut lists, mut retains) = (0, 0);
        hooks.for_each_shared(
            |l| {
                assert!(Arc::ptr_eq(l, &list));
                lists += 1;
            },
            |_| retains += 1,
        );

        assert_eq!((lists, retains), (1, 1));
    }
}
