//! rustgrad-core: the autograd graph and the backward engine, in pure Rust.
//!
//! Who owns whom:
//! - a tensor owns its `grad_fn` (strong);
//! - a node owns the nodes of its inputs through its edges (strong);
//! - a leaf knows its AccumulateGrad only weakly; the AccumulateGrad owns the leaf's sink;
//! - a node's saved output is kept as data plus a weak reference to the node, never the node.
//!
//! So a graph is freed when the last tensor pointing into it goes, and never keeps itself alive.
//!
//! The engine knows gradients only through `GradValue` (value.rs). The Python binding
//! instantiates it with Python tensors; the cargo tests with `f64` and vectors, without Python.
//!
//! Notes, cited from elsewhere:
//! - Note [Hook order] (hooks.rs): what runs around a node, in which order.
//! - Note [Iterative drop] (graph.rs): why long chains are dropped from a loop.
//! - Note [Stealing a gradient] (accumulate.rs): when a leaf keeps the incoming gradient itself:
//!   the fresh mark the engine carries on each gradient, never a reference count.
//! - Note [Inference tensors] (meta.rs): what an inference tensor may not do; views and
//!   CreationMeta.
//! - Note [Accumulation across threads] (accumulate.rs): the per-leaf lock.
//! - Note [Input metadata] (engine.rs): the engine, not each formula, sums a broadcast
//!   gradient down to its input's shape and casts it to the input's dtype.

pub mod accumulate;
pub mod engine;
pub mod error;
pub mod grad_mode;
pub mod graph;
pub mod hooks;
pub mod input_buffer;
pub mod meta;
pub mod saved;
pub mod storage;
pub mod value;
pub mod version;

pub use accumulate::{AccumulateGrad, Accumulation, GradSink, LeafGrad, LeafGuard, LeafLock};
pub use engine::{AddressHasher, Engine, ExecuteOptions};
pub use error::{Error, Result};
pub use graph::{
    drop_deferred, next_sequence_nr, node_id, peek_sequence_nr, Edge, Node, NodeBase, NodeRef,
};
pub use hooks::{
    HookId, HookList, NodeHooks, NodePostHook, NodePostHooks, NodePreHook, NodePreHooks,
    PostAccumulateHook, TensorHook,
};
pub use input_buffer::InputBuffer;
pub use meta::{CreationMeta, Inference, StaleView};
pub use saved::{SavedTensor, SavedVariables};
pub use storage::Storage;
pub use value::{is_expandable_to, GradValue, ShapeMismatch};
pub use version::VersionCounter;
