//! Thread-local grad mode, inference mode and anomaly mode, as in torch. The recording hot path
//! reads these in Rust, so a `no_grad` block costs no Python call per op, and anomaly mode off
//! costs one thread-local read per recorded op.
//!
//! Anomaly mode (`detect_anomaly()`): nodes recorded while it is on keep the traceback of their
//! forward call, reported when their backward fails; and, with `check_nan`, every gradient a
//! node returns is checked for NaN (Note [Hook order], step 7).

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
    static ANOMALY: Cell<(bool, bool)> = const { Cell::new((false, true)) };
    static CHEAP_ANOMALY: Cell<bool> = const { Cell::new(false) };
}

/// Cheap anomaly mode (`detect_anomaly(cheap=True)`): no traceback per node, but every gradient
/// a node returns is checked for NaN and Inf, and the first node producing one fails backward,
/// naming its forward line (`Node::origin`).
pub fn is_cheap_anomaly_enabled() -> bool {
    CHEAP_ANOMALY.with(Cell::get)
}

/// Sets cheap anomaly mode and returns the previous one.
pub fn set_cheap_anomaly(enabled: bool) -> bool {
    CHEAP_ANOMALY.with(|c| c.replace(enabled))
}

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Sets grad mode and returns the previous one.
pub fn set_grad_enabled(enabled: bool) -> bool {
    GRAD_ENABLED.with(|c| c.replace(enabled))
}

pub fn is_inference_mode_enabled() -> bool {
    INFERENCE.with(Cell::get)
}

/// Sets inference mode and returns the previous one.
pub fn set_inference_mode(enabled: bool) -> bool {
    INFERENCE.with(|c| c.replace(enabled))
}

pub fn is_anomaly_enabled() -> bool {
    ANOMALY.with(|c| c.get().0)
}

pub fn is_anomaly_check_nan_enabled() -> bool {
    ANOMALY.with(|c| c.get().1)
}

/// Sets anomaly mode and its NaN check; returns the previous pair.
pub fn set_anomaly_enabled(enabled: bool, check_nan: bool) -> (bool, bool) {
    ANOMALY.with(|c| c.replace((enabled, check_nan)))
}
