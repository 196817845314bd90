//! Thread-local grad mode and inference mode, as in torch. The recording hot path reads these
//! in Rust, so a `no_grad` block costs no Python call per op.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
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
