//! Review regressions: nothing that runs foreign code (a Python `__del__`, a formatter that may
//! trigger the garbage collector) does so while holding a lock the same code may need.

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};

use rustgrad_core::{
    Error, HookList, Result, SavedTensor, SavedVariables, TensorHook, VersionCounter,
};

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

#[test]
fn unpack_all_describes_a_modified_value_outside_the_lock() {
    let version = VersionCounter::new();
    let saved = Arc::new(SavedVariables::new(vec![
        SavedTensor::new(1.0, VersionCounter::new(), 0),
        SavedTensor::new(2.0, version.clone(), 1),
    ]));
    version.bump();

    let inner = saved.clone();
    let err = saved
        .unpack_all("MulBackward0", |v| {
            // Deadlocked before: `describe` ran with the saved values locked.
            let mut n = 0;
            inner.for_each(|_| n += 1);
            assert_eq!(n, 2);
            assert!(!inner.is_released());
            format!("value {v}")
        })
        .unwrap_err();

    match err {
        Error::ModifiedInplace {
            tensor,
            output_nr,
            node,
            version,
            expected,
            ..
        } => {
            assert_eq!(
                (tensor.as_str(), output_nr, node.as_str(), version, expected),
                ("value 2", 1, "MulBackward0", 1, 0)
            );
        }
        other => panic!("expected ModifiedInplace, got {other}"),
    }
}

#[test]
fn unpack_all_of_unchanged_values_returns_them_in_order() {
    let saved = SavedVariables::new(vec![
        SavedTensor::new(1.0, VersionCounter::new(), 0),
        SavedTensor::new(2.0, VersionCounter::new(), 0),
    ]);

    assert_eq!(
        saved.unpack_all("X", |_| unreachable!()).unwrap(),
        [1.0, 2.0]
    );
}
