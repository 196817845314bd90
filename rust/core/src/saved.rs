//! SavedTensor: a value a backward formula needs, with the version it had when saved.
//!
//! Unpacking checks the version: if an in-place op moved the tensor's version counter on, the
//! gradient would be computed from the wrong numbers, so unpacking fails with torch's
//! "modified by an inplace operation" error, naming the node and both versions. After a backward
//! without `retain_graph` the node releases its saved values; unpacking then fails with torch's
//! "backward through the graph a second time" error.
//!
//! A saved value never owns the node that saved it (the binding saves a node's own outputs as
//! data plus a weak reference), so a graph never keeps itself alive.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::version::VersionCounter;

pub struct SavedTensor<T> {
    value: T,
    version: Arc<VersionCounter>,
    saved_version: u32,
    output_nr: usize,
}

impl<T: Clone> SavedTensor<T> {
    pub fn new(value: T, version: Arc<VersionCounter>, output_nr: usize) -> Self {
        let saved_version = version.current();
        SavedTensor {
            value,
            version,
            saved_version,
            output_nr,
        }
    }

    pub fn saved_version(&self) -> u32 {
        self.saved_version
    }

    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value, if its version is still the saved one. `describe` names the tensor in the
    /// error, torch style (`torch.FloatTensor [3]`), and is only called on failure.
    pub fn unpack(&self, node: &str, describe: impl FnOnce(&T) -> String) -> Result<T> {
        let version = self.version.current();
        if version != self.saved_version {
            return Err(Error::ModifiedInplace {
                tensor: describe(&self.value),
                output_nr: self.output_nr,
                node: node.to_string(),
                version,
                expected: self.saved_version,
                detail: String::new(),
            });
        }
        Ok(self.value.clone())
    }
}

/// The saved values of one node; released as a whole after backward.
pub struct SavedVariables<T: 'static> {
    inner: Mutex<Option<Vec<SavedTensor<T>>>>,
}

impl<T: Clone + 'static> SavedVariables<T> {
    pub fn new(saved: Vec<SavedTensor<T>>) -> Self {
        SavedVariables {
            inner: Mutex::new(Some(saved)),
        }
    }

    /// Unpacks every saved value; errors as `SavedTensor::unpack`, or SecondBackward once released.
    ///
    /// `describe` runs after the lock is released: it may call back into code (the binding's
    /// Python) that needs this node's saved values (the garbage collector's traversal does).
    pub fn unpack_all(&self, node: &str, describe: impl Fn(&T) -> String) -> Result<Vec<T>> {
        let failed = {
            let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let Some(saved) = inner.as_ref() else {
                return Err(Error::SecondBackward);
            };
            let mut values = Vec::with_capacity(saved.len());
            let mut failed = None;
            for s in saved {
                let version = s.version.current();
                if version != s.saved_version {
                    failed = Some((s.value.clone(), s.output_nr, version, s.saved_version));
                    break;
                }
                values.push(s.value.clone());
            }
            match failed {
                None => return Ok(values),
                Some(f) => (values, f),
            }
        };
        let (values, (value, output_nr, version, expected)) = failed;
        drop(values);
        Err(Error::ModifiedInplace {
            tensor: describe(&value),
            output_nr,
            node: node.to_string(),
            version,
            expected,
            detail: String::new(),
        })
    }

    /// Sets the saved values of a node made before they were known (the binding packs a
    /// node's own output with saved-tensor hooks only once the output exists).
    pub fn set(&self, saved: Vec<SavedTensor<T>>) {
        let old = self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(saved);
        if let Some(old) = old {
            crate::graph::drop_deferred(old);
        }
    }

    /// Re-points the saved values tracked by `old` to `new` at its current version, changing
    /// each value with `change`: an in-place op's node saved its out-of-place result, which
    /// the binding then wrote into the tensor it modifies; a later write to that tensor must be
    /// seen when unpacking (torch saves the modified tensor itself).
    pub fn rebase_version(
        &self,
        old: &Arc<VersionCounter>,
        new: &Arc<VersionCounter>,
        mut change: impl FnMut(&mut T),
    ) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(saved) = inner.as_mut() else {
            return;
        };
        for s in saved.iter_mut().filter(|s| Arc::ptr_eq(&s.version, old)) {
            s.version = new.clone();
            s.saved_version = new.current();
            change(&mut s.value);
        }
    }

    pub fn is_released(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Frees the saved values (dropped through `drop_deferred`, see Note [Iterative drop]).
    pub fn release(&self) {
        // A node that saved nothing can run again, as in torch: only unpacking a freed value is
        // "backward through the graph a second time".
        let taken = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if inner.as_ref().is_some_and(Vec::is_empty) {
                return;
            }
            inner.take()
        };
        if let Some(saved) = taken {
            crate::graph::drop_deferred(saved);
        }
    }

    /// Visits every saved value still held (for garbage-collector traversal).
    /// Skipped while this thread holds the lock (see `hooks::try_lock`).
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        let Some(inner) = crate::hooks::try_lock(&self.inner) else {
            return;
        };
        if let Some(saved) = inner.as_ref() {
            for s in saved {
                f(&s.value);
            }
        }
    }
}

impl<T: 'static> Drop for SavedVariables<T> {
    fn drop(&mut self) {
        let taken = self
            .inner
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(saved) = taken {
            if !saved.is_empty() {
                crate::graph::drop_deferred(saved);
            }
        }
    }
}
