//! rustgrad._core: the thin pyo3 layer over rustgrad-core.
//!
//! Argument parsing, dtype rules and docs live in Python; this crate holds the mechanism, one
//! file per job:
//! - `record.rs`: recording a node (`record`, the one call per op into Rust) and its saved
//!   values, and the calls that give a tensor or take away its history;
//! - `backward.rs`: the one marked crossing from Python into the engine (`run_backward`) and
//!   the leaf's gradient sink;
//! - `gc.rs`: what the garbage collector is shown of the graph (Note [GC traversal]);
//! - `node_spec.rs`: node specs (name, named saved slots, formula), the way ops record;
//! - `tensor.rs`, `node.rs`, `handle.rs`: the Python objects (TensorBase, grad_fn, the hook
//!   handle base); `py_value.rs`: gradients, hooks and formulas as the engine sees them;
//! - `modes.rs`: grad, inference and anomaly mode, live storage counts;
//! - `provenance.rs`: sites, cuts, version-bump logs, scopes and the hook tracer (explain tools);
//! - `kernels.rs`: the NumPy glue of rustgrad-kernels (rust/kernels: CPU kernels NumPy lacks
//!   or runs slowly: erf, GELU, softmax, where, the SGD and Adam steps, max-pooling), called
//!   by the CPU backend;
//! - `malloc.rs`: glibc's trim and mmap thresholds, set at import so a training step reuses
//!   the pages its previous step freed;
//! - `callbacks.rs`: the Python functions the binding calls back; `errors.rs`: core errors as
//!   Python exceptions.

mod backward;
mod callbacks;
mod errors;
mod frames;
mod gc;
mod handle;
mod kernels;
mod malloc;
mod modes;
mod node;
mod node_spec;
mod provenance;
mod py_value;
mod record;
mod tensor;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<node::PyNodeHandle>()?;
    m.add_class::<handle::PyHookHandle>()?;
    m.add_class::<node_spec::NodeSpec>()?;
    m.add("SECOND_BACKWARD", rustgrad_core::error::SECOND_BACKWARD)?;
    m.add("MALLOC_TUNED", malloc::tune())?;
    // torch's CreationMeta integers, as `TensorBase._creation_meta` gives them (the enum is
    // rustgrad_core::CreationMeta)
    use rustgrad_core::CreationMeta;
    m.add("CREATION_DEFAULT", CreationMeta::Default.code())?;
    m.add(
        "CREATION_MULTI_OUTPUT_NODE",
        CreationMeta::MultiOutputNode.code(),
    )?;
    m.add("CREATION_NO_GRAD_MODE", CreationMeta::NoGradMode.code())?;
    m.add(
        "CREATION_INFERENCE_MODE",
        CreationMeta::InferenceMode.code(),
    )?;
    m.add_function(wrap_pyfunction!(callbacks::_register, m)?)?;
    m.add_function(wrap_pyfunction!(record::record, m)?)?;
    m.add_function(wrap_pyfunction!(record::record_multi, m)?)?;
    m.add_function(wrap_pyfunction!(record::_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(record::_pop_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(record::make_leaf, m)?)?;
    m.add_function(wrap_pyfunction!(record::detach, m)?)?;
    m.add_function(wrap_pyfunction!(record::detach_, m)?)?;
    m.add_function(wrap_pyfunction!(record::rebase_history, m)?)?;
    m.add_function(wrap_pyfunction!(record::adopt_saved_output, m)?)?;
    m.add_function(wrap_pyfunction!(record::shallow_copy, m)?)?;
    m.add_function(wrap_pyfunction!(backward::run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(backward::_gradient_edge, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::_peek_sequence_nr, m)?)?;
    m.add_function(wrap_pyfunction!(modes::set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::live_storages, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_erf, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_gelu, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_sigmoid, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_relu, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_unary, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_gelu_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_where, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_threshold_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_powi, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_softmax, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_softmax_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_layer_norm_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_index_add_rows, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_max_pool2d_backward, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_im2col, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::_col2im, m)?)?;
    m.add_function(wrap_pyfunction!(frames::_frames_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_set_package_dir, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::set_provenance, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::is_provenance_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_set_cheap_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_is_cheap_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::set_strict_data, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::is_strict_data, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_push_scope, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_pop_scope, m)?)?;
    m.add_function(wrap_pyfunction!(provenance::_set_hook_tracer, m)?)?;
    Ok(())
}
