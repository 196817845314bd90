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

use crate::kernels::ScalarOp;
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
    /// the forward (JVP) formula `forward(tangents, saved, ctx)`, where the spec states one
    forward: Option<Py<PyAny>>,
    /// the formula's native form, where the spec states one (see `Native`)
    native: Option<Native>,
    /// the formula holds for real tensors only: a complex gradient is refused before it runs
    real_only: bool,
}

/// A formula's common case written here too, so that the engine runs it without calling
/// Python (the per-op chain's backward): the Python formula stays the reference, and runs in
/// every other case.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Native {
    /// With ctx None, every input gets the incoming gradient (add without alpha).
    Identity,
    /// With a Python float as ctx and grad mode off, the first input gets the incoming
    /// gradient times it and the second none (a tensor times a Python float), computed by
    /// `kernels::scalar_arith` where the gradient is a contiguous float NumPy array.
    Scale,
}

#[pymethods]
impl NodeSpec {
    /// A backward node named `name` whose formula `backward(grad, saved, ctx)` reads the
    /// values saved under `saved` (in order; with `save_output`, the output is saved after
    /// them) from a tuple of type `fields`; `forward(tangents, saved, ctx)`, where given, is
    /// its forward-mode formula (one tangent per input, None where an input has none).
    /// `native` ("identity" or "scale", see `Native`) declares the formula's common case the
    /// engine runs itself.
    #[new]
    #[pyo3(signature = (name, backward, saved=Vec::new(), save_output=false, fields=None, forward=None, native=None, real_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        backward: Py<PyAny>,
        saved: Vec<String>,
        save_output: bool,
        fields: Option<Py<PyAny>>,
        forward: Option<Py<PyAny>>,
        native: Option<&str>,
        real_only: bool,
    ) -> PyResult<Self> {
        let native = match native {
            None => None,
            Some("identity") => Some(Native::Identity),
            Some("scale") => Some(Native::Scale),
            Some(other) => {
                return Err(PyTypeError::new_err(format!(
                    "NodeSpec: native must be 'identity' or 'scale', not {other:?}"
                )))
            }
        };
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
            forward,
            native,
            real_only,
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

    #[getter]
    fn forward(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.forward.as_ref().map(|f| f.clone_ref(py))
    }

    #[getter]
    fn native(&self) -> Option<&'static str> {
        self.native.map(|n| match n {
            Native::Identity => "identity",
            Native::Scale => "scale",
        })
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

    /// `input + scalar` (`op` 0), `input * scalar` (1) or `scalar - input` (2) for a
    /// C-contiguous float32/float64 NumPy input, computed here (`kernels::scalar_arith`) and
    /// recorded through this spec as the op records it (ctx: `ctx`; with `scalar_slot`, the
    /// scalar is an input slot without an edge, as torch's wrapped number); None for any other
    /// input, whose op takes its NumPy path.
    #[pyo3(signature = (input, scalar, op, ctx=None, scalar_slot=true))]
    fn record_scalar<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        scalar: f64,
        op: u8,
        ctx: Option<Bound<'py, PyAny>>,
        scalar_slot: bool,
    ) -> PyResult<Option<Bound<'py, PyTensor>>> {
        let op = match op {
            0 => ScalarOp::Add,
            1 => ScalarOp::Mul,
            2 => ScalarOp::Rsub,
            _ => return Err(PyTypeError::new_err(format!("record_scalar: no op {op}"))),
        };
        Self::scalar_op(slf, py, input, scalar, op, ctx, scalar_slot)
    }

    /// `input <op> other` (`op`: 0 add, 1 sub, 2 mul, 3 div) for two tensors holding
    /// C-contiguous NumPy arrays of one shape and one float dtype, computed here
    /// (`kernels::binary_arith`) and recorded through this spec with `ctx` and the saved values
    /// `saved` (in slot order), as the op records it; None for any other pair, whose op takes its
    /// NumPy path.
    #[pyo3(signature = (input, other, op, ctx=None, saved=None))]
    fn record_binary<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        other: &Bound<'py, PyAny>,
        op: u8,
        ctx: Option<Bound<'py, PyAny>>,
        saved: Option<&Bound<'py, PyTuple>>,
    ) -> PyResult<Option<Bound<'py, PyTensor>>> {
        let (a, b) = (data_of(input)?, data_of(other)?);
        let Some(out) = crate::kernels::binary_arith(py, a.bind(py), b.bind(py), op) else {
            return Ok(None);
        };
        Self::record_computed(slf, out, PyTuple::new(py, [input, other])?, saved, ctx)
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
    /// `record_scalar`'s body (the engine's `Native::Scale` runs it too).
    pub fn scalar_op<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        scalar: f64,
        op: ScalarOp,
        ctx: Option<Bound<'py, PyAny>>,
        scalar_slot: bool,
    ) -> PyResult<Option<Bound<'py, PyTensor>>> {
        let Some(out) = crate::kernels::scalar_arith(py, data_of(input)?.bind(py), scalar, op)
        else {
            return Ok(None);
        };
        let inputs = if scalar_slot {
            PyTuple::new(py, [input.clone(), py.None().into_bound(py)])?
        } else {
            PyTuple::new(py, [input.clone()])?
        };
        Self::record_computed(slf, out, inputs, None, ctx)
    }

    /// The tensor of `out` (an array this spec's op computed) recorded through the spec from
    /// `inputs`, with `saved` values in slot order and `ctx`.
    fn record_computed<'py>(
        slf: &Bound<'py, Self>,
        out: Bound<'py, PyAny>,
        inputs: Bound<'py, PyTuple>,
        saved: Option<&Bound<'py, PyTuple>>,
        ctx: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyTensor>>> {
        let this = slf.get();
        let py = slf.py();
        record_node(
            py,
            out,
            &inputs,
            this.name,
            slf.as_any(),
            saved,
            ctx,
            this.save_output,
            None,
        )
        .map(Some)
    }

    /// NotImplementedError where the formula holds for real tensors only and a gradient in
    /// `grad` (a tensor or a tuple of them) is complex: torch's complex gradients conjugate
    /// what they multiply by, which such a formula does not.
    pub fn refuse_complex(&self, grad: &Bound<'_, PyAny>) -> PyResult<()> {
        if !self.real_only {
            return Ok(());
        }
        let complex = match grad.downcast::<PyTuple>() {
            Ok(t) => t
                .iter()
                .try_fold(false, |acc, g| Ok::<_, PyErr>(acc || is_complex(&g)?))?,
            Err(_) => is_complex(grad)?,
        };
        if complex {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                "rustgrad: the derivative of {} for complex tensors is not implemented",
                self.name
            )));
        }
        Ok(())
    }

    /// The native form's gradients for `grad` (one per input), or None where it does not
    /// apply and the Python formula runs (see `Native`).
    pub fn native_grads<'py>(
        slf: &Bound<'py, Self>,
        grad: &Bound<'py, PyAny>,
        ctx: &Bound<'py, PyAny>,
        n_inputs: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = grad.py();
        match slf.get().native {
            Some(Native::Identity) if ctx.is_none() => {
                let items = std::iter::repeat_n(grad.clone(), n_inputs);
                Ok(Some(PyTuple::new(py, items)?.into_any()))
            }
            Some(Native::Scale)
                if n_inputs == 2
                    && ctx.is_exact_instance_of::<pyo3::types::PyFloat>()
                    && !rustgrad_core::grad_mode::is_grad_enabled() =>
            {
                let s: f64 = ctx.extract()?;
                let scaled =
                    Self::scalar_op(slf, py, grad, s, ScalarOp::Mul, Some(ctx.clone()), true)?;
                match scaled {
                    Some(t) => {
                        let items = [t.into_any(), py.None().into_bound(py)];
                        Ok(Some(PyTuple::new(py, items)?.into_any()))
                    }
                    None => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// The forward formula, where the spec states one.
    pub fn forward_formula<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyAny>> {
        self.forward.as_ref().map(|f| f.bind(py))
    }

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

/// Whether `g` is a tensor whose array is complex (NumPy's by its descriptor, others' by
/// `dtype.kind`).
fn is_complex(g: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(t) = g.downcast::<PyTensor>() else {
        return Ok(false);
    };
    let data = t.try_borrow()?.data.clone_ref(g.py());
    let data = data.bind(g.py());
    if let Ok(a) = data.downcast::<numpy::PyUntypedArray>() {
        use numpy::{PyArrayDescrMethods, PyUntypedArrayMethods};
        return Ok(a.dtype().kind() == b'c');
    }
    let py = g.py();
    let kind = data
        .getattr(pyo3::intern!(py, "dtype"))?
        .getattr(pyo3::intern!(py, "kind"))?;
    Ok(kind.extract::<String>()? == "c")
}

/// A tensor's array (`t._data`).
fn data_of(t: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    Ok(t.downcast::<PyTensor>()?
        .try_borrow()?
        .data
        .clone_ref(t.py()))
}
