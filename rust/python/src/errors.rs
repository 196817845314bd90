//! Core errors become Python exceptions here, and only here.
//!
//! A Python exception raised inside a backward formula or a hook travels through the engine as
//! `Error::Foreign(PyErr)` and comes out unchanged; every other engine error is a RuntimeError
//! with torch's text. Panics never cross into Python: pyo3 turns a panic inside a `#[pyfunction]`
//! into a `PanicException`, and the engine entry point additionally catches unwinding.

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;
use rustgrad_core::Error;

pub fn to_py(err: Error) -> PyErr {
    match err {
        Error::Foreign(payload) => match payload.downcast::<PyErr>() {
            Ok(e) => *e,
            Err(_) => PyRuntimeError::new_err("autograd engine: foreign error of unknown type"),
        },
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

pub fn from_py(err: PyErr) -> Error {
    Error::Foreign(Box::new(err))
}
