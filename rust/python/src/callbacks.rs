//! The Python functions the binding calls back, registered once by `rustgrad/__init__.py`.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

pub struct Callbacks {
    pub tensor_cls: Py<PyAny>,
    /// `rustgrad.autograd._accumulate_grad(leaf, grad, how)`: the array math of a leaf's
    /// accumulation the engine decided on (see `backward.rs`).
    pub accumulate: Py<PyAny>,
    pub describe: Py<PyAny>,
    pub can_require_grad: Py<PyAny>,
    /// The CPU array type; anything else (a NumPy scalar from an op on 0-d arrays) goes
    /// through `as_array` first.
    pub array_type: Py<PyAny>,
    pub as_array: Py<PyAny>,
    /// `rustgrad._ops._util.conform(grad, shape, dtype)`: a gradient summed to an input's shape
    /// and cast to its dtype, in rustgrad ops (Note [Input metadata] in rust/core/src/engine.rs).
    pub conform: Py<PyAny>,
}

static CALLBACKS: GILOnceCell<Callbacks> = GILOnceCell::new();

pub fn callbacks(py: Python<'_>) -> &Callbacks {
    CALLBACKS
        .get(py)
        .expect("rustgrad._core used before rustgrad registered its callbacks")
}

/// `data` as an array of a backend: NumPy ops on 0-d arrays return NumPy scalars.
pub fn as_array<'py>(data: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = data.py();
    let cb = callbacks(py);
    if data.get_type().is(cb.array_type.bind(py)) {
        return Ok(data);
    }
    cb.as_array.bind(py).call1((data,))
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn _register(
    py: Python<'_>,
    tensor_cls: Py<PyAny>,
    accumulate: Py<PyAny>,
    describe: Py<PyAny>,
    can_require_grad: Py<PyAny>,
    array_type: Py<PyAny>,
    as_array: Py<PyAny>,
    conform: Py<PyAny>,
) -> PyResult<()> {
    // the tensors ops make are allocated as this class without a check each (tensor.rs)
    let is_tensor_class = tensor_cls
        .bind(py)
        .downcast::<pyo3::types::PyType>()
        .is_ok_and(|t| {
            t.is_subclass_of::<crate::tensor::PyTensor>()
                .unwrap_or(false)
        });
    if !is_tensor_class {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "_register: the tensor class must be a subclass of rustgrad._core.TensorBase",
        ));
    }
    let _ = CALLBACKS.set(
        py,
        Callbacks {
            tensor_cls,
            accumulate,
            describe,
            can_require_grad,
            array_type,
            as_array,
            conform,
        },
    );
    Ok(())
}
