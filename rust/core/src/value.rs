//! All the engine knows about arrays.
//!
//! The engine never looks inside a gradient: it only needs to sum two gradients arriving at the
//! same input slot. The binding implements this for Python tensors; the cargo tests use `f64`
//! and small vectors.

use crate::error::Result;

pub trait GradValue: Clone + Send + Sync + 'static {
    /// `self + other`, for gradients that arrive at the same input of one node.
    fn add(&self, other: &Self) -> Result<Self>;

    /// Whether the value holds a NaN (anomaly detection's check); values that cannot hold
    /// one need not say.
    fn has_nan(&self) -> Result<bool> {
        Ok(false)
    }

    /// Which non-finite value the gradient holds first, if any ("nan" or "inf"): the cheap
    /// anomaly mode's check, run after every node.
    fn non_finite(&self) -> Result<Option<&'static str>> {
        Ok(if self.has_nan()? { Some("nan") } else { None })
    }

    /// Whether the engine marked this gradient fresh: a buffer made for this backward that no
    /// one outside the engine can see, which a leaf may therefore keep as its `.grad` and later
    /// add into in place. See Note [Stealing a gradient] (accumulate.rs). Values that cannot
    /// carry the mark are never fresh, and are copied.
    fn is_fresh(&self) -> bool {
        false
    }

    /// Sets or clears the fresh mark. A value that cannot carry it ignores this.
    fn set_fresh(&mut self, fresh: bool) {
        let _ = fresh;
    }

    /// Whether `self` and `other` share memory (one buffer, or views of one), so that a leaf
    /// keeping one would see writes through the other. Values that cannot tell say yes.
    fn shares_buffer(&self, other: &Self) -> bool {
        let _ = other;
        true
    }
}

impl GradValue for f64 {
    fn add(&self, other: &Self) -> Result<Self> {
        Ok(self + other)
    }
    fn has_nan(&self) -> Result<bool> {
        Ok(self.is_nan())
    }
    fn non_finite(&self) -> Result<Option<&'static str>> {
        Ok(non_finite_of(*self))
    }
    /// A plain value: whoever holds it holds its own copy, so it is always fresh.
    fn is_fresh(&self) -> bool {
        true
    }
    fn shares_buffer(&self, _other: &Self) -> bool {
        false
    }
}

impl GradValue for Vec<f64> {
    fn add(&self, other: &Self) -> Result<Self> {
        if self.len() != other.len() {
            return Err(crate::error::Error::runtime(format!(
                "gradient shapes differ: [{}] and [{}]",
                self.len(),
                other.len()
            )));
        }
        Ok(self.iter().zip(other).map(|(a, b)| a + b).collect())
    }
    fn has_nan(&self) -> Result<bool> {
        Ok(self.iter().any(|v| v.is_nan()))
    }
    fn non_finite(&self) -> Result<Option<&'static str>> {
        Ok(self.iter().find_map(|v| non_finite_of(*v)))
    }
    fn is_fresh(&self) -> bool {
        true
    }
    fn shares_buffer(&self, _other: &Self) -> bool {
        false
    }
}

fn non_finite_of(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v.is_infinite() {
        Some("inf")
    } else {
        None
    }
}
