//! AccumulateGrad: the sink of a leaf's gradient.
//!
//! A leaf holds its AccumulateGrad weakly and the node holds the leaf (through its sink)
//! strongly, so the node lives while a graph uses the leaf and is made anew for the next graph.
//! Its sequence number is the largest there is, so it runs as soon as its gradient is complete.
//! The leaf owns its tensor hooks and post-accumulate-grad hooks; every AccumulateGrad made for
//! it shares those lists, so hooks outlive any one graph.

use std::any::Any;
use std::sync::Arc;

use crate::error::Result;
use crate::graph::{Node, NodeBase};
use crate::hooks::{HookList, PostAccumulateHook, TensorHook};
use crate::value::GradValue;

/// Where a leaf's gradient goes (the binding stores it in the tensor's `.grad`).
pub trait GradSink<V>: Send + Sync {
    fn accumulate(&self, grad: V) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}

pub struct AccumulateGrad<V: GradValue> {
    base: NodeBase<V>,
    pub sink: Arc<dyn GradSink<V>>,
    pub post_hooks: Arc<HookList<dyn PostAccumulateHook>>,
}

impl<V: GradValue> AccumulateGrad<V> {
    pub fn new(
        sink: Arc<dyn GradSink<V>>,
        tensor_hooks: Arc<HookList<dyn TensorHook<V>>>,
        post_hooks: Arc<HookList<dyn PostAccumulateHook>>,
    ) -> Self {
        let base = NodeBase::with_sequence_nr(u64::MAX, 1, Vec::new());
        base.hooks.add_tensor_pre_hooks(0, tensor_hooks);
        AccumulateGrad {
            base,
            sink,
            post_hooks,
        }
    }
}

impl<V: GradValue> Node<V> for AccumulateGrad<V> {
    fn base(&self) -> &NodeBase<V> {
        &self.base
    }

    fn name(&self) -> String {
        "torch::autograd::AccumulateGrad".to_string()
    }

    fn apply(&self, grads: Vec<Option<V>>) -> Result<Vec<Option<V>>> {
        if let Some(grad) = grads.into_iter().next().flatten() {
            self.sink.accumulate(grad)?;
            self.post_hooks.run()?;
        }
        Ok(Vec::new())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
