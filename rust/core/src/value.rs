//! All the engine knows about arrays.
//!
//! The engine never looks inside a gradient: it only needs to sum two gradients arriving at the
//! same input slot. The binding implements this for Python tensors; the cargo tests use `f64`
//! and small vectors.

use crate::error::Result;

/// A gradient whose shape cannot be summed down to its input's: the shapes, for the engine's
/// "returned an invalid gradient" error (see `GradValue::conform`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeMismatch {
    pub got: Vec<usize>,
    pub expected: Vec<usize>,
}

pub trait GradValue: Clone + Send + Sync + 'static {
    /// What a node records of an input (its shape and dtype) when the gradient arriving there
    /// may need conforming to it: torch's per-edge InputMetadata. See Note [Input metadata]
    /// (engine.rs).
    type InputMeta: Send + Sync + 'static;

    /// The gradient summed over the dimensions it was broadcast along and cast to the input's
    /// type, so every formula may return its gradient at the output's shape. `Ok(Err(..))`
    /// when the shape is not one the input's broadcasts to. Values that record no metadata
    /// are returned as they are.
    fn conform(self, meta: &Self::InputMeta) -> Result<std::result::Result<Self, ShapeMismatch>> {
        let _ = meta;
        Ok(Ok(self))
    }

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
    type InputMeta = ();
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

/// A vector's metadata is its length; a gradient conforms to a length-1 input by summing
/// (broadcasting a single element is the only broadcast a vector has).
impl GradValue for Vec<f64> {
    type InputMeta = usize;
    fn conform(self, len: &usize) -> Result<std::result::Result<Self, ShapeMismatch>> {
        Ok(if self.len() == *len {
            Ok(self)
        } else if is_expandable_to(&[*len], &[self.len()]) {
            Ok(vec![self.iter().sum()])
        } else {
            Err(ShapeMismatch {
                got: vec![self.len()],
                expected: vec![*len],
            })
        })
    }
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

/// Whether `shape` broadcasts to `desired` (torch's `is_expandable_to`): aligned from the last
/// dimension, each of `shape`'s sizes is 1 or equal to `desired`'s, and `shape` has no more
/// dimensions.
pub fn is_expandable_to(shape: &[usize], desired: &[usize]) -> bool {
    if shape.len() > desired.len() {
        return false;
    }
    shape
        .iter()
        .rev()
        .zip(desired.iter().rev())
        .all(|(&s, &d)| s == d || s == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expandable_shapes_follow_broadcasting() {
        assert!(is_expandable_to(&[], &[2, 3]));
        assert!(is_expandable_to(&[3], &[2, 3]));
        assert!(is_expandable_to(&[1, 3], &[2, 3]));
        assert!(is_expandable_to(&[2, 1], &[2, 3]));
        assert!(!is_expandable_to(&[2], &[2, 3]));
        assert!(!is_expandable_to(&[1, 2, 3], &[2, 3]));
        assert!(is_expandable_to(&[0], &[0]));
        assert!(!is_expandable_to(&[0], &[2]));
    }

    #[test]
    fn a_vector_conforms_by_summing_to_one_element() {
        assert_eq!(vec![1.0, 2.0].conform(&1).unwrap(), Ok(vec![3.0]));
        assert_eq!(vec![1.0, 2.0].conform(&2).unwrap(), Ok(vec![1.0, 2.0]));
        assert_eq!(
            vec![1.0, 2.0].conform(&3).unwrap(),
            Err(ShapeMismatch {
                got: vec![2],
                expected: vec![3]
            })
        );
    }
}
