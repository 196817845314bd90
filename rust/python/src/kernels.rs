//! CPU kernels NumPy lacks, on NumPy arrays (rust-numpy): the ops call them through the CPU
//! backend (`_backends/cpu.py`), never directly.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// erf of a float32 or float64 array (any layout), as a new array of the same dtype.
#[pyfunction]
pub fn _erf<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let out = a.readonly().as_array().mapv(libm::erff);
        return Ok(out.into_pyarray(py).into_any());
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let out = a.readonly().as_array().mapv(libm::erf);
        return Ok(out.into_pyarray(py).into_any());
    }
    Err(PyTypeError::new_err(
        "_erf: expected a float32 or float64 NumPy array",
    ))
}
