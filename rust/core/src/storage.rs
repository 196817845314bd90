//! Storage identity and live bytes per device.
//!
//! A tensor's views and `detach()`es share one `Storage`; the storage is freed when the last of
//! them goes. Every live storage is counted per device, which feeds `rustgrad.memory`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Devices 0 is the CPU; device `1 + i` is `cuda:i`. Sixteen slots are plenty for one host.
pub const MAX_DEVICES: usize = 17;

struct Counters {
    count: [AtomicI64; MAX_DEVICES],
    bytes: [AtomicI64; MAX_DEVICES],
}

static LIVE: Counters = Counters {
    count: [const { AtomicI64::new(0) }; MAX_DEVICES],
    bytes: [const { AtomicI64::new(0) }; MAX_DEVICES],
};

#[derive(Debug)]
pub struct Storage {
    device: usize,
    nbytes: usize,
}

impl Storage {
    /// A new storage on `device` (0 = cpu, 1 + i = cuda:i) holding `nbytes`.
    pub fn new(device: usize, nbytes: usize) -> Arc<Self> {
        let device = device.min(MAX_DEVICES - 1);
        LIVE.count[device].fetch_add(1, Ordering::Relaxed);
        LIVE.bytes[device].fetch_add(nbytes as i64, Ordering::Relaxed);
        Arc::new(Storage { device, nbytes })
    }

    pub fn device(&self) -> usize {
        self.device
    }

    pub fn nbytes(&self) -> usize {
        self.nbytes
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        LIVE.count[self.device].fetch_sub(1, Ordering::Relaxed);
        LIVE.bytes[self.device].fetch_sub(self.nbytes as i64, Ordering::Relaxed);
    }
}

/// (live storages, live bytes) on `device`.
pub fn live(device: usize) -> (i64, i64) {
    let d = device.min(MAX_DEVICES - 1);
    (
        LIVE.count[d].load(Ordering::Relaxed),
        LIVE.bytes[d].load(Ordering::Relaxed),
    )
}
