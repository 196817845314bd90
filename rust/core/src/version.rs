//! VersionCounter: shared by a tensor, all its views and all its `detach()`es.
//!
//! Every in-place op bumps it; a SavedTensor remembers the value at save time and refuses to
//! unpack once it moved on. `.data` gets a fresh counter, which is why writes through `.data`
//! escape the check (as in torch).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct VersionCounter(AtomicU32);

impl VersionCounter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn current(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn bump(&self) -> u32 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}
