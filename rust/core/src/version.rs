//! VersionCounter: shared by a tensor, all its views and all its `detach()`es.
//!
//! Every in-place op bumps it; a SavedTensor remembers the value at save time and refuses to
//! unpack once it moved on. `.data` gets a fresh counter, which is why writes through `.data`
//! escape the check (as in torch).
//!
//! Note [Version provenance]
//! A bump may carry where it happened (the binding's op name and the user's file:line, opaque
//! here). The counter keeps the last `LOG_LEN` of them, so the "modified by an inplace
//! operation" error and `explain()` can name the write that moved the version on. The log is
//! boxed and only allocated by the first logged bump: a tensor never written in place pays
//! one pointer for it.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What the binding records of one bump (opaque to the core).
pub type BumpSite = Arc<dyn Any + Send + Sync>;

/// The logged bumps of one counter: (version reached, site), oldest first.
type BumpLog = VecDeque<(u32, BumpSite)>;

/// How many logged bumps a counter keeps.
pub const LOG_LEN: usize = 8;

#[derive(Default)]
pub struct VersionCounter {
    value: AtomicU32,
    log: Mutex<Option<Box<BumpLog>>>,
}

impl std::fmt::Debug for VersionCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VersionCounter({})", self.current())
    }
}

impl VersionCounter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn current(&self) -> u32 {
        self.value.load(Ordering::Relaxed)
    }

    pub fn bump(&self) -> u32 {
        self.value.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Bumps and logs `site` as the cause of the new version.
    pub fn bump_logged(&self, site: BumpSite) -> u32 {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let version = self.bump();
        let entries = log.get_or_insert_with(Default::default);
        if entries.len() == LOG_LEN {
            entries.pop_front();
        }
        entries.push_back((version, site));
        version
    }

    /// The logged bumps (version reached, site), oldest first.
    pub fn log(&self) -> Vec<(u32, BumpSite)> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.as_ref()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }
}
