//! glibc's malloc policy for NumPy's arrays. By default glibc gives freed memory back to the
//! kernel (trims the heap top past 2x the mmap threshold, and serves large blocks by mmap), so a
//! training step that frees its activations and allocates them again the next step takes every
//! page of them as a fresh fault: ~6,000 minor faults and ~14 ms of system time per step of the
//! small GPT bench (10% of the step). Fixed thresholds keep up to 64 MiB of freed heap and serve
//! blocks up to 32 MiB from it; peak RSS does not grow (the same pages are reused).
//! `RUSTGRAD_MALLOC=system` at import leaves glibc's defaults.

/// Sets the thresholds, unless `RUSTGRAD_MALLOC=system`; whether they were set.
pub fn tune() -> bool {
    if std::env::var_os("RUSTGRAD_MALLOC").is_some_and(|v| v == "system") {
        return false;
    }
    set_thresholds()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    const TRIM: libc::c_int = 64 << 20;
    const MMAP: libc::c_int = 32 << 20;
    // SAFETY: mallopt only changes the allocator's parameters; any value is accepted or refused
    // (0 returned) without effect on blocks already handed out.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM) == 1
            && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}
