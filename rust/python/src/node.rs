//! grad_fn objects as Python sees them: `name()`, `next_functions`, `variable` for
//! AccumulateGrad, equality by identity of the underlying node.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustgrad_core::{node_id, AccumulateGrad, NodeRef};

use crate::py_value::{PyGrad, PyNode, TensorSink};

#[pyclass(name = "Node", module = "rustgrad._core", frozen)]
pub struct PyNodeHandle {
    pub node: NodeRef<PyGrad>,
}

#[pymethods]
impl PyNodeHandle {
    fn name(&self) -> String {
        self.node.name()
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let edges = self.node.base().next_edges().clone();
        let items: Vec<PyObject> = edges
            .into_iter()
            .map(|e| match e {
                Some(e) => {
                    let h = Py::new(py, PyNodeHandle { node: e.node })?;
                    Ok((h, e.input_nr).into_pyobject(py)?.into_any().unbind())
                }
                None => Ok((py.None(), 0usize).into_pyobject(py)?.into_any().unbind()),
            })
            .collect::<PyResult<_>>()?;
        PyTuple::new(py, items)
    }

    /// The leaf tensor of an AccumulateGrad node.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<PyObject> {
        let acc = self
            .node
            .as_any()
            .downcast_ref::<AccumulateGrad<PyGrad>>()
            .ok_or_else(|| {
                pyo3::exceptions::PyAttributeError::new_err(format!(
                    "'{}' object has no attribute 'variable'",
                    self.node.name()
                ))
            })?;
        let sink = acc
            .sink
            .as_any()
            .downcast_ref::<TensorSink>()
            .expect("AccumulateGrad of a Python tensor has a TensorSink");
        Ok(sink.tensor.clone_ref(py))
    }

    /// The Python-side context the op stored (non-tensor values of its forward).
    #[getter]
    fn _ctx(&self, py: Python<'_>) -> Option<PyObject> {
        self.node
            .as_any()
            .downcast_ref::<PyNode>()
            .map(|n| n.ctx.clone_ref(py))
    }

    #[getter]
    fn _sequence_nr(&self) -> u64 {
        self.node.base().sequence_nr()
    }

    fn _saved_released(&self) -> bool {
        self.node
            .as_any()
            .downcast_ref::<PyNode>()
            .is_some_and(|n| n.saved.is_released())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PyNodeHandle>()
            .is_ok_and(|o| node_id(&o.get().node) == node_id(&self.node))
    }

    fn __hash__(&self) -> u64 {
        node_id(&self.node) as u64
    }

    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.node.name().trim_start_matches("torch::autograd::"),
            node_id(&self.node)
        )
    }
}
