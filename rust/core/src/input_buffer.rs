//! InputBuffer: sums the gradients arriving at one node's input slots before it runs.

use crate::error::Result;
use crate::value::GradValue;

pub struct InputBuffer<V> {
    slots: Vec<Option<V>>,
}

impl<V: GradValue> InputBuffer<V> {
    pub fn new(size: usize) -> Self {
        InputBuffer {
            slots: vec![None; size],
        }
    }

    /// Adds `grad` into slot `slot`: the first arrival is kept as it is (fresh or not), later
    /// ones are summed in. A sum is a buffer the engine made, held by nothing else: it is fresh
    /// (Note [Stealing a gradient]).
    pub fn add(&mut self, slot: usize, grad: V) -> Result<()> {
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, None);
        }
        let entry = &mut self.slots[slot];
        *entry = Some(match entry.take() {
            None => grad,
            Some(old) => {
                let mut sum = old.add(&grad)?;
                sum.set_fresh(true);
                sum
            }
        });
        Ok(())
    }

    pub fn into_inner(self) -> Vec<Option<V>> {
        self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value that carries the fresh mark (`f64` is always fresh).
    #[derive(Debug, PartialEq)]
    struct Marked(f64, bool);

    impl Clone for Marked {
        fn clone(&self) -> Self {
            Marked(self.0, false)
        }
    }

    impl GradValue for Marked {
        type InputMeta = ();
        fn add(&self, other: &Self) -> Result<Self> {
            Ok(Marked(self.0 + other.0, false))
        }
        fn is_fresh(&self) -> bool {
            self.1
        }
        fn set_fresh(&mut self, fresh: bool) {
            self.1 = fresh;
        }
    }

    #[test]
    fn first_arrival_keeps_its_mark() {
        let mut b = InputBuffer::new(2);
        b.add(0, Marked(1.0, true)).unwrap();
        b.add(1, Marked(2.0, false)).unwrap();
        assert_eq!(
            b.into_inner(),
            [Some(Marked(1.0, true)), Some(Marked(2.0, false))]
        );
    }

    #[test]
    fn a_sum_is_fresh_whatever_was_summed() {
        let mut b = InputBuffer::new(1);
        b.add(0, Marked(1.0, false)).unwrap();
        b.add(0, Marked(2.0, false)).unwrap();
        b.add(3, Marked(4.0, false)).unwrap();
        assert_eq!(
            b.into_inner(),
            [
                Some(Marked(3.0, true)),
                None,
                None,
                Some(Marked(4.0, false))
            ]
        );
    }
}
