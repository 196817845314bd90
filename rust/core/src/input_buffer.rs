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

    /// Adds `grad` into slot `slot`: the first arrival is kept, later ones are summed in.
    pub fn add(&mut self, slot: usize, grad: V) -> Result<()> {
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, None);
        }
        let entry = &mut self.slots[slot];
        *entry = Some(match entry.take() {
            None => grad,
            Some(old) => old.add(&grad)?,
        });
        Ok(())
    }

    pub fn into_inner(self) -> Vec<Option<V>> {
        self.slots
    }
}
