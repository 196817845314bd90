//! Node specs: each backward node stated once, as `name`, named saved slots and formula.
//!
//! An op records through its spec, `MUL.record(out, (a, b), self=a, other=b)`: the spec puts
//! the saved values in slot order (None for a slot not given; a keyword it does not declare is
//! refused), and
//! the formula reads them back by name (`saved.self`) from a tuple of the spec's `fields` type
//! (a namedtuple made by `rustgrad._ops._node`). The declared grad_fn names and torch's
//! `grad_fn._saved_<slot>` getters come from the same statement, on the Python side.

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::py_value::intern_name;
use crate::record::{record_multi_node, record_node, MultiNode};
use crate::tensor::PyTensor;

/// The fields type of each spec'd node and its number of fields, by its interned name's address (one per name for the
/// process, as the names themselves).
/// name -> (fields type, number of fields, the all-None instance)
type FieldsByName = HashMap<usize, (Py<PyAny>, usize, Py<PyAny>)>;
static FIELDS: Mutex<Option<FieldsByName>> = Mutex::new(None);

fn key(name: &'static str) -> usize {
    name.as_ptr() as usize
}

/// Every node name a spec declares, by its interned name's address: `record` refuses any other
/// (the check behind "every node an op records is declared").
static DECLARED: Mutex<Option<std::collections::HashSet<usize>>> = Mutex::new(None);

/// Whether a spec declares node `name` (an interned name).
pub fn is_declared(name: &'static str) -> bool {
    DECLARED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|d| d.contains(&key(name)))
}

/// The saved values of node `name` as its formula reads them: a tuple of the spec's fields
/// type where a spec declared one, else the plain tuple.
pub fn named<'py>(
    py: Python<'py>,
    name: &'static str,
    saved: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let (fields, n) = {
        let map = FIELDS.lock().unwrap_or_else(|e| e.into_inner());
        match map.as_ref().and_then(|m| m.get(&key(name))) {
            // the one None slot of a node recorded with nothing saved: the spec's all-None
            // tuple, made once (a scalar operand's node is the per-op hot path)
            Some((_, n, empty)) if saved.len() < *n => return Ok(empty.bind(py).clone()),
            Some((f, n, _)) => (f.clone_ref(py), *n),
            None => return Ok(saved.into_any()),
        }
    };
    debug_assert_eq!(saved.len(), n);
    tuple_new(py)?.call1((fields, saved))
}

/// `tuple.__new__`, looked up once: it makes a fields instance without the type's own __new__.
fn tuple_new(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static NEW: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
    Ok(NEW
        .get_or_try_init(py, || {
            py.get_type::<PyTuple>()
                .getattr(pyo3::intern!(py, "__new__"))
                .map(Bound::unbind)
        })?
        .bind(py))
}

#[pyclass(module = "rustgrad._core", frozen, name = "NodeSpec")]
pub struct NodeSpec {
    name: &'static str,
    slots: Vec<Py<PyString>>,
    backward: Py<PyAny>,
    save_output: bool,
    /// the fields type, its number of fields and its all-None instance (see `named`)
    fields: Option<(Py<PyAny>, usize, Py<PyAny>)>,
}

#[pymethods]
impl NodeSpec {
    /// A backward node named `name` whose formula `backward(grad, saved, ctx)` reads the
    /// values saved under `saved` (in order; with `save_output`, the output is saved after
    /// them) from a tuple of type `fields`.
    #[new]
    #[pyo3(signature = (name, backward, saved=Vec::new(), save_output=false, fields=None))]
    fn new(
        py: Python<'_>,
        name: &str,
        backward: Py<PyAny>,
        saved: Vec<String>,
        save_output: bool,
        fields: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let name = intern_name(name);
        DECLARED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Default::default)
            .insert(key(name));
        let fields = match fields {
            Some(fields) => {
                let n = saved.len() + usize::from(save_output);
                let nones = PyTuple::new(py, (0..n).map(|_| py.None()))?;
                let empty = tuple_new(py)?.call1((fields.bind(py), nones))?.unbind();
                let entry = (fields.clone_ref(py), n, empty.clone_ref(py));
                FIELDS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(key(name), entry);
                Some((fields, n, empty))
            }
            None => None,
        };
        Ok(NodeSpec {
            name,
            slots: saved
                .iter()
                .map(|s| PyString::intern(py, s).unbind())
                .collect(),
            backward,
            save_output,
            fields,
        })
    }

    #[getter]
    fn name(&self) -> &'static str {
        self.name
    }

    /// The names of the saved slots, in order (the output's last, unless named here).
    #[getter]
    fn saved<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.slots.iter().map(|s| s.bind(py)))
    }

    #[getter]
    fn backward(&self, py: Python<'_>) -> Py<PyAny> {
        self.backward.clone_ref(py)
    }

    #[getter]
    fn save_output(&self) -> bool {
        self.save_output
    }

    /// Records the node for `data` computed from `inputs`, saving each declared slot from the
    /// keyword of its name; a slot not given saves None, as torch's undefined saved variable
    /// (see `rustgrad._core.record` for `ctx` and `view_of`).
    #[pyo3(signature = (data, inputs, ctx=None, view_of=None, **saved))]
    fn record<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        data: Bound<'py, PyAny>,
        inputs: &Bound<'py, PyTuple>,
        ctx: Option<Bound<'py, PyAny>>,
        view_of: Option<&Bound<'py, PyTensor>>,
        saved: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTensor>> {
        let this = slf.get();
        let values = this.slot_values(py, saved)?;
        record_node(
            py,
            data,
            inputs,
            this.name,
            slf.as_any(),
            values.as_ref(),
            ctx,
            this.save_output,
            view_of,
        )
    }

    /// Records the node once for several outputs (output `i` is the node's input slot `i`;
    /// the formula gets a tuple of their gradients): `rustgrad._core.record_multi` with this
    /// spec's name, formula and slots. A slot may name one of the outputs (saved as an output).
    /// `view_of`: the outputs given as arrays are views of it returned together (split, unbind).
    #[pyo3(signature = (outputs, inputs, ctx=None, differentiable=None, view_of=None, **saved))]
    #[allow(clippy::too_many_arguments)]
    fn record_multi<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        outputs: &Bound<'py, PyTuple>,
        inputs: &Bound<'py, PyTuple>,
        ctx: Option<Bound<'py, PyAny>>,
        differentiable: Option<Vec<bool>>,
        view_of: Option<&Bound<'py, PyTensor>>,
        saved: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let this = slf.get();
        let values = this.slot_values(py, saved)?;
        let node = MultiNode {
            name: this.name,
            backward: slf.as_any(),
            own_formula: true,
            view_of,
        };
        record_multi_node(
            py,
            outputs,
            inputs,
            node,
            values.as_ref(),
            ctx,
            differentiable,
        )
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("NodeSpec({}, saved={:?})", self.name, self.slot_names(py))
    }
}

impl NodeSpec {
    /// What a node recorded through this spec runs: the formula and the saved values as it
    /// reads them (`named`, without the lookup: the node holds the spec as its backward).
    pub fn formula_and_saved<'py>(
        &self,
        py: Python<'py>,
        saved: Bound<'py, PyTuple>,
    ) -> PyResult<(&Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let formula = self.backward.bind(py);
        let saved = match &self.fields {
            Some((_, n, empty)) if saved.len() < *n => empty.bind(py).clone(),
            Some((fields, _, _)) => tuple_new(py)?.call1((fields.bind(py), saved))?,
            None => saved.into_any(),
        };
        Ok((formula, saved))
    }

    /// The saved values in slot order from the keywords (see `record`); a keyword that names
    /// no slot is refused.
    fn slot_values<'py>(
        &self,
        py: Python<'py>,
        saved: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let values = match saved {
            _ if self.slots.is_empty() => None,
            // Nothing saved (a Python-scalar operand's node): one None slot still makes a
            // second backward raise, as torch's saved wrapped number does; `named` pads it.
            None if !self.save_output => Some(PyTuple::new(py, [py.None()])?),
            None => Some(PyTuple::new(py, self.slots.iter().map(|_| py.None()))?),
            Some(d) => {
                let mut values = Vec::with_capacity(self.slots.len());
                for slot in &self.slots {
                    values.push(
                        d.get_item(slot.bind(py))?
                            .unwrap_or_else(|| py.None().into_bound(py)),
                    );
                }
                Some(PyTuple::new(py, values)?)
            }
        };
        if let Some(d) = saved {
            if let Some(unknown) = d
                .keys()
                .iter()
                .find(|k| !self.slots.iter().any(|s| k.eq(s.bind(py)).unwrap_or(false)))
            {
                return Err(PyTypeError::new_err(format!(
                    "{} saves {:?}; it has no slot {unknown}",
                    self.name,
                    self.slot_names(py)
                )));
            }
        }
        Ok(values)
    }

    fn slot_names(&self, py: Python<'_>) -> Vec<String> {
        self.slots.iter().map(|s| s.bind(py).to_string()).collect()
    }
}
