//! Grad mode, inference mode and anomaly mode as Python reads and sets them (the state itself
//! is the core's, thread-local), and the live storage counts behind `rustgrad.memory`.

use pyo3::prelude::*;
use rustgrad_core::{grad_mode, storage};

/// The sequence number the next recorded node will get (see `grad_fn._sequence_nr`).
#[pyfunction]
pub fn _peek_sequence_nr() -> u64 {
    rustgrad_core::peek_sequence_nr()
}

#[pyfunction]
pub fn is_grad_enabled() -> bool {
    grad_mode::is_grad_enabled()
}

/// Sets grad mode; returns the previous one.
#[pyfunction]
pub fn set_grad_enabled(mode: bool) -> bool {
    grad_mode::set_grad_enabled(mode)
}

#[pyfunction]
pub fn is_inference_mode_enabled() -> bool {
    grad_mode::is_inference_mode_enabled()
}

#[pyfunction]
pub fn set_inference_mode(mode: bool) -> bool {
    grad_mode::set_inference_mode(mode)
}

#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    grad_mode::is_anomaly_enabled()
}

#[pyfunction]
pub fn is_anomaly_check_nan_enabled() -> bool {
    grad_mode::is_anomaly_check_nan_enabled()
}

/// Sets anomaly mode and its NaN check on this thread; returns the previous pair.
#[pyfunction]
pub fn set_anomaly_enabled(enabled: bool, check_nan: bool) -> (bool, bool) {
    grad_mode::set_anomaly_enabled(enabled, check_nan)
}

/// (live storages, live bytes) on a device index (0 = cpu, 1 + i = cuda:i).
#[pyfunction]
pub fn live_storages(device: usize) -> (i64, i64) {
    storage::live(device)
}
