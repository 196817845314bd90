//! Storage identity and live bytes per device.
//!
//! A tensor's views and `detach()`es share one `Storage`; the storage is freed when the last of
//! them goes. Every live storage is counted per device, which feeds `rustgrad.memory`.
//!
//! Each storage also has a serial number on its device: how many storages the device had made
//! before it. Taking a `Mark` and comparing it later tells a storage made in between from an
//! older one, which is how the binding knows a buffer a backward formula returned was made by
//! that formula (Note [Stealing a gradient] in accumulate.rs). The serial is the made-count the
//! live count is kept from, so it costs no atomic operation of its own.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Devices 0 is the CPU; device `1 + i` is `cuda:i`. Sixteen slots are plenty for one host.
pub const MAX_DEVICES: usize = 17;

struct Counters {
    /// Storages made on the device, ever (the next one's serial).
    made: [AtomicU64; MAX_DEVICES],
    /// Storages freed on the device, ever.
    freed: [AtomicU64; MAX_DEVICES],
    bytes: [AtomicI64; MAX_DEVICES],
}

static LIVE: Counters = Counters {
    made: [const { AtomicU64::new(0) }; MAX_DEVICES],
    freed: [const { AtomicU64::new(0) }; MAX_DEVICES],
    bytes: [const { AtomicI64::new(0) }; MAX_DEVICES],
};

#[derive(Debug)]
pub struct Storage {
    device: usize,
    nbytes: usize,
    serial: u64,
}

impl Storage {
    /// A new storage on `device` (0 = cpu, 1 + i = cuda:i) holding `nbytes`.
    pub fn new(device: usize, nbytes: usize) -> Arc<Self> {
        let device = device.min(MAX_DEVICES - 1);
        let serial = LIVE.made[device].fetch_add(1, Ordering::Relaxed);
        LIVE.bytes[device].fetch_add(nbytes as i64, Ordering::Relaxed);
        Arc::new(Storage {
            device,
            nbytes,
            serial,
        })
    }

    pub fn device(&self) -> usize {
        self.device
    }

    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// How many storages this one's device had made before it.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Whether this storage was made after `mark` was taken.
    pub fn made_since(&self, mark: &Mark) -> bool {
        self.serial >= mark.0[self.device]
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        LIVE.freed[self.device].fetch_add(1, Ordering::Relaxed);
        LIVE.bytes[self.device].fetch_sub(self.nbytes as i64, Ordering::Relaxed);
    }
}

/// A moment in the making of storages, on every device: see `Storage::made_since`.
#[derive(Clone, Debug)]
pub struct Mark([u64; MAX_DEVICES]);

impl Mark {
    /// Now: every storage made after this call is `made_since` the mark, none made before it.
    pub fn now() -> Self {
        Mark(std::array::from_fn(|d| {
            LIVE.made[d].load(Ordering::Relaxed)
        }))
    }
}

/// (live storages, live bytes) on `device`.
pub fn live(device: usize) -> (i64, i64) {
    let d = device.min(MAX_DEVICES - 1);
    // freed first: a storage made and freed between the two loads is then counted as live, never
    // as less than none.
    let freed = LIVE.freed[d].load(Ordering::Relaxed);
    let made = LIVE.made[d].load(Ordering::Relaxed);
    (
        made.saturating_sub(freed) as i64,
        LIVE.bytes[d].load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storages_made_after_a_mark_are_made_since_it() {
        let before = Storage::new(0, 8);
        let other_device = Storage::new(3, 8);
        let mark = Mark::now();
        let after = Storage::new(0, 8);
        let after_elsewhere = Storage::new(3, 8);
        assert!(!before.made_since(&mark));
        assert!(!other_device.made_since(&mark));
        assert!(after.made_since(&mark));
        assert!(after_elsewhere.made_since(&mark));
        assert!(after.serial() > before.serial());
    }

    #[test]
    fn live_counts_follow_made_and_freed_storages() {
        // device 16 is used by no other test
        let (count, bytes) = live(16);
        let a = Storage::new(16, 100);
        let b = Storage::new(16, 20);
        assert_eq!(live(16), (count + 2, bytes + 120));
        drop(a);
        assert_eq!(live(16), (count + 1, bytes + 20));
        drop(b);
        assert_eq!(live(16), (count, bytes));
    }
}
