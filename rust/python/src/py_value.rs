//! GradValue for Python tensors, the hooks that call Python, and the node that calls a Python
//! backward formula.
//!
//! Gradients travel through the engine as Python `Tensor` objects, so a formula written in
//! rustgrad ops records a graph of its own under `create_graph=True` (double backward).

use std::any::Any;
use std::sync::{Arc, Weak};

use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyWeakrefReference};
use rustgrad_core::{
    Error, GradSink, GradValue, Node, NodeBase, PostAccumulateHook, Result, SavedVariables,
    TensorHook,
};

use crate::errors::from_py;
use crate::tensor::{new_tensor, PyTensor, TensorMeta};

#[derive(Debug)]
pub struct PyGrad(pub Py<PyAny>);

impl Clone for PyGrad {
    fn clone(&self) -> Self {
        Python::with_gil(|py| PyGrad(self.0.clone_ref(py)))
    }
}

impl GradValue for PyGrad {
    fn add(&self, other: &Self) -> Result<Self> {
        Python::with_gil(|py| {
            self.0
                .bind(py)
                .add(other.0.bind(py))
                .map(|r| PyGrad(r.unbind()))
                .map_err(from_py)
        })
    }
}

/// `tensor.register_hook(fn)`: fn(grad) -> None or a replacement.
pub struct PyTensorHook(pub Py<PyAny>);

impl TensorHook<PyGrad> for PyTensorHook {
    fn call(&self, grad: &PyGrad) -> Result<Option<PyGrad>> {
        Python::with_gil(|py| {
            let out = self.0.bind(py).call1((grad.0.bind(py),)).map_err(from_py)?;
            Ok(if out.is_none() {
                None
            } else {
                Some(PyGrad(out.unbind()))
            })
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `tensor.register_post_accumulate_grad_hook(fn)`: fn(tensor), after `.grad` was updated.
/// Holds the tensor weakly: the tensor owns the hook list.
pub struct PyPostAccumulateHook {
    pub func: Py<PyAny>,
    pub tensor: Py<PyWeakrefReference>,
}

impl PostAccumulateHook for PyPostAccumulateHook {
    fn call(&self) -> Result<()> {
        Python::with_gil(|py| {
            let tensor =
                self.tensor.bind(py).upgrade().ok_or_else(|| {
                    Error::runtime("tensor of a post-accumulate-grad hook is gone")
                })?;
            self.func.bind(py).call1((tensor,)).map_err(from_py)?;
            Ok(())
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The leaf's sink: calls `rustgrad.autograd._accumulate_grad(tensor, grad)`, which implements
/// torch's AccumulateGrad rules (steal, clone, in-place add, out-of-place under create_graph).
pub struct TensorSink {
    pub tensor: Py<PyAny>,
}

impl GradSink<PyGrad> for TensorSink {
    fn accumulate(&self, grad: PyGrad) -> Result<()> {
        Python::with_gil(|py| {
            let f = crate::callbacks(py).accumulate.bind(py);
            f.call1((self.tensor.bind(py), grad.0.bind(py)))
                .map_err(from_py)?;
            Ok(())
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a node saved: an input tensor itself, or its own output as data plus meta (never the
/// output tensor object, which owns this node: see lib.rs of the core).
#[derive(Debug)]
pub enum Saved {
    Input(Py<PyAny>),
    Output {
        data: Py<PyAny>,
        meta: TensorMeta,
        output_nr: usize,
    },
    NoneValue,
}

impl Clone for Saved {
    fn clone(&self) -> Self {
        Python::with_gil(|py| match self {
            Saved::Input(t) => Saved::Input(t.clone_ref(py)),
            Saved::Output {
                data,
                meta,
                output_nr,
            } => Saved::Output {
                data: data.clone_ref(py),
                meta: meta.clone(),
                output_nr: *output_nr,
            },
            Saved::NoneValue => Saved::NoneValue,
        })
    }
}

/// A node whose backward is a Python function `backward(grad, saved, ctx)`; `grad` is one tensor
/// (or a tuple for several outputs), `saved` the tuple of unpacked saved tensors; it returns one
/// gradient per input (a tuple, or the bare gradient for a single input).
pub struct PyNode {
    pub base: NodeBase<PyGrad>,
    pub name: String,
    pub backward: Py<PyAny>,
    pub saved: SavedVariables<Saved>,
    pub ctx: Py<PyAny>,
    pub weak_self: Weak<PyNode>,
}

impl PyNode {
    fn unpack<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyTuple>> {
        // torch names the modified tensor's own grad_fn (now, not at save time), or no node
        // at all for a leaf; a saved output names the node that saved it.
        let culprit = std::cell::RefCell::new(None);
        let values = self
            .saved
            .unpack_all(&self.name, |s| {
                *culprit.borrow_mut() = Some(self.grad_fn_name(py, s));
                describe(py, s)
            })
            .map_err(|e| match e {
                Error::ModifiedInplace {
                    tensor,
                    output_nr,
                    node,
                    version,
                    expected,
                } => Error::ModifiedInplace {
                    tensor,
                    output_nr,
                    node: culprit.take().unwrap_or(node),
                    version,
                    expected,
                },
                other => other,
            })?;
        let mut out = Vec::with_capacity(values.len());
        for v in values {
            out.push(match v {
                Saved::Input(t) => t.into_bound(py),
                Saved::NoneValue => py.None().into_bound(py),
                Saved::Output {
                    data,
                    meta,
                    output_nr,
                } => {
                    let node = self.weak_self.upgrade().map(|n| n as Arc<dyn Node<PyGrad>>);
                    let t = new_tensor(py, data, meta, node, output_nr).map_err(from_py)?;
                    t.into_any()
                }
            });
        }
        PyTuple::new(py, out).map_err(from_py)
    }
}

impl PyNode {
    /// The name of the node a saved value is an output of ("" for a leaf).
    fn grad_fn_name(&self, py: Python<'_>, saved: &Saved) -> String {
        match saved {
            Saved::Input(t) => t
                .bind(py)
                .downcast::<PyTensor>()
                .ok()
                .and_then(|t| {
                    t.try_borrow()
                        .ok()
                        .map(|b| b.grad_fn.as_ref().map(|f| f.name()))
                })
                .map_or_else(|| self.name.clone(), Option::unwrap_or_default),
            Saved::Output { .. } | Saved::NoneValue => self.name.clone(),
        }
    }
}

/// torch's description of a tensor in the inplace error: `torch.FloatTensor [3]`.
fn describe(py: Python<'_>, saved: &Saved) -> String {
    let data = match saved {
        Saved::Input(t) => t
            .bind(py)
            .downcast::<PyTensor>()
            .map(|t| t.borrow().data.clone_ref(py))
            .ok(),
        Saved::Output { data, .. } => Some(data.clone_ref(py)),
        Saved::NoneValue => None,
    };
    let Some(data) = data else {
        return "tensor".to_string();
    };
    let f = &crate::callbacks(py).describe;
    f.bind(py)
        .call1((data,))
        .and_then(|s| s.extract::<String>())
        .unwrap_or_else(|_| "tensor".to_string())
}

impl Node<PyGrad> for PyNode {
    fn base(&self) -> &NodeBase<PyGrad> {
        &self.base
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn apply(&self, grads: Vec<Option<PyGrad>>) -> Result<Vec<Option<PyGrad>>> {
        Python::with_gil(|py| {
            let saved = self.unpack(py)?;
            let grad: Bound<'_, PyAny> = if grads.len() == 1 {
                match grads.into_iter().next().flatten() {
                    Some(g) => g.0.into_bound(py),
                    None => py.None().into_bound(py),
                }
            } else {
                let items: Vec<Bound<'_, PyAny>> = grads
                    .into_iter()
                    .map(|g| match g {
                        Some(g) => g.0.into_bound(py),
                        None => py.None().into_bound(py),
                    })
                    .collect();
                PyTuple::new(py, items).map_err(from_py)?.into_any()
            };
            let out = self
                .backward
                .bind(py)
                .call1((grad, saved, self.ctx.bind(py)))
                .map_err(from_py)?;
            let n = self.base.next_edges().len();
            let to_grad = |o: Bound<'_, PyAny>| {
                if o.is_none() {
                    None
                } else {
                    Some(PyGrad(o.unbind()))
                }
            };
            match out.downcast::<PyTuple>() {
                Ok(t) => Ok(t.iter().map(to_grad).collect()),
                Err(_) if n == 1 => Ok(vec![to_grad(out)]),
                Err(_) => Err(Error::runtime(format!(
                    "function {} returned an incorrect number of gradients (expected {n}, got 1)",
                    self.name
                ))),
            }
        })
    }

    fn release_variables(&self) {
        self.saved.release();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PyNode {
    /// Every Python object this node holds, for garbage-collector traversal.
    pub fn for_each_object(&self, mut f: impl FnMut(&Py<PyAny>)) {
        f(&self.backward);
        f(&self.ctx);
        self.saved.for_each(|s| match s {
            Saved::Input(t) => f(t),
            Saved::Output { data, .. } => f(data),
            Saved::NoneValue => {}
        });
    }
}
