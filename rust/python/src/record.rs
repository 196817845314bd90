//! Recording: the one call per op into Rust (`record`, `record_multi`), the saved values a node
//! keeps (through `saved_tensors_hooks` when one is in force), and the calls that give a tensor
//! a history or take it away (`make_leaf`, `detach`, `detach_`, `rebase_history`,
//! `shallow_copy`).

use std::cell::RefCell;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use rustgrad_core::{
    grad_mode, CreationMeta, Edge, Inference, NodeBase, NodeRef, SavedTensor, SavedVariables,
    Storage, VersionCounter,
};

use crate::callbacks::{as_array, callbacks};
use crate::provenance::{self, current_scope, node_sites_enabled, Cut, NodeCuts, Site, Source};
use crate::py_value::{
    formula_is_ours, input_meta_of, intern_name, same_shape_and_dtype, Origin, PyGrad, PyInputMeta,
    PyNode, Saved,
};
use crate::tensor::{
    gradient_edge, leaf_accumulator, new_tensor, new_tensor_of, refresh_view, set_history,
    try_gradient_edge, PyTensor, TensorMeta,
};
use numpy::{PyArrayDescrMethods, PyUntypedArrayMethods};

/// The version counter of saved `None` slots (never bumped): shared, so saving a Python scalar
/// (as `x * 2` does, like torch) allocates nothing.
fn none_version() -> Arc<VersionCounter> {
    static NONE: std::sync::OnceLock<Arc<VersionCounter>> = std::sync::OnceLock::new();
    NONE.get_or_init(VersionCounter::new).clone()
}

fn device_of(inputs: &Bound<'_, PyTuple>) -> usize {
    inputs
        .iter()
        .next()
        .and_then(|t| {
            t.downcast::<PyTensor>()
                .ok()
                .and_then(|t| t.try_borrow().ok()?.storage.as_ref().map(|s| s.device()))
        })
        .unwrap_or(0)
}

fn nbytes(data: &Bound<'_, PyAny>) -> PyResult<usize> {
    // a NumPy array's from its header (no attribute call: every recorded op asks)
    if let Ok(a) = data.downcast::<numpy::PyUntypedArray>() {
        return Ok(a.len() * a.dtype().itemsize());
    }
    data.getattr(pyo3::intern!(data.py(), "nbytes"))?.extract()
}

/// An input's requires_grad, after a stale view has followed its base (which may have come to
/// require grad through an in-place op).
fn requires_grad_now(t: &Bound<'_, PyTensor>) -> PyResult<bool> {
    refresh_view(t)?;
    let b = t.try_borrow()?;
    b.requires_grad_now(t.py())
}

/// Records one op: `data` is the forward result computed from `inputs` (the tensor arguments).
/// When grad mode is on and an input requires grad, a node named `name` is made whose backward
/// is `backward(grad, saved, ctx)`; `saved` are input tensors (or None) to keep for it, and with
/// `save_output` the output is saved last. `view_of` makes the output a view sharing the base's
/// storage and version counter. Returns the new tensor.
#[pyfunction]
#[pyo3(signature = (data, inputs, name, backward, saved=None, ctx=None, save_output=false, view_of=None))]
#[allow(clippy::too_many_arguments)]
pub fn record<'py>(
    py: Python<'py>,
    data: Bound<'py, PyAny>,
    inputs: &Bound<'py, PyTuple>,
    name: &str,
    backward: &Bound<'py, PyAny>,
    saved: Option<&Bound<'py, PyTuple>>,
    ctx: Option<Bound<'py, PyAny>>,
    save_output: bool,
    view_of: Option<&Bound<'py, PyTensor>>,
) -> PyResult<Bound<'py, PyTensor>> {
    let name = intern_name(name);
    if !name.is_empty() && !crate::node_spec::is_declared(name) {
        return Err(PyRuntimeError::new_err(format!(
            "rustgrad: node {name} is recorded without a node spec: declare it with \
             rustgrad._ops._node.node(...) and record through the spec"
        )));
    }
    record_node(
        py,
        data,
        inputs,
        name,
        backward,
        saved,
        ctx,
        save_output,
        view_of,
    )
}

/// `record` for a node name already interned (a node spec's).
#[allow(clippy::too_many_arguments)]
pub fn record_node<'py>(
    py: Python<'py>,
    data: Bound<'py, PyAny>,
    inputs: &Bound<'py, PyTuple>,
    name: &'static str,
    backward: &Bound<'py, PyAny>,
    saved: Option<&Bound<'py, PyTuple>>,
    ctx: Option<Bound<'py, PyAny>>,
    save_output: bool,
    view_of: Option<&Bound<'py, PyTensor>>,
) -> PyResult<Bound<'py, PyTensor>> {
    let data = as_array(data)?;
    let mut needs_grad = false;
    if grad_mode::is_grad_enabled() {
        for t in inputs.iter() {
            // None stands for a Python scalar operand: an input slot without an edge, as
            // torch's wrapped numbers (`(x * 2).grad_fn.next_functions` has `(None, 0)`).
            if !t.is_none() && requires_grad_now(t.downcast::<PyTensor>()?)? {
                needs_grad = true;
                break;
            }
        }
    }
    let (meta, base, view) = match view_of {
        Some(v) => {
            let (meta, root, view) = new_view_of(v, needs_grad)?;
            (meta, Some(root), Some(view))
        }
        None => (
            TensorMeta {
                version: VersionCounter::new(),
                storage: Some(Storage::new(device_of(inputs), nbytes(&data)?)),
                requires_grad: needs_grad,
            },
            None,
            None,
        ),
    };
    if !needs_grad {
        let cut = output_cut(py, inputs)?;
        let out = new_tensor(py, data.unbind(), meta, None, 0)?;
        mark_view(&out, base, view);
        if cut.is_some() {
            out.try_borrow_mut()?.cut = cut;
        }
        return Ok(out);
    }
    let mut edges = Vec::with_capacity(inputs.len());
    let mut cuts = None;
    for (i, t) in inputs.iter().enumerate() {
        edges.push(if t.is_none() {
            None
        } else {
            let t = t.downcast::<PyTensor>()?;
            let edge = try_gradient_edge(t)?;
            if edge.is_none() {
                note_cut(&mut cuts, i, t)?;
            }
            edge
        });
    }
    let input_meta = input_meta(&data, inputs, &edges)?;
    let hooks = if saved.is_some() || save_output {
        saved_tensors_hooks(py)
    } else {
        None
    };
    // exact: a Vec growing from empty takes 4 slots at once (224 bytes more per node)
    let mut saved_values = Vec::with_capacity(if hooks.is_none() {
        saved.map_or(0, |s| s.len()) + save_output as usize
    } else {
        0
    });
    if let (Some(saved), None) = (saved, &hooks) {
        for s in saved.iter() {
            if s.is_none() {
                saved_values.push(SavedTensor::new(Saved::NoneValue, none_version(), 0));
            } else {
                let t = s.downcast::<PyTensor>()?;
                let (v, nr, non_leaf) = {
                    let b = t.try_borrow()?;
                    b.check_savable()?;
                    (b.version.clone(), b.output_nr, b.grad_fn.is_some())
                };
                saved_values.push(SavedTensor::new(Saved::Input(s.unbind(), non_leaf), v, nr));
            }
        }
    }
    if save_output && hooks.is_none() {
        saved_values.push(SavedTensor::new(
            Saved::Output {
                data: data.clone().unbind(),
                meta: meta.clone(),
                output_nr: 0,
            },
            meta.version.clone(),
            0,
        ));
    }
    let node = Arc::new_cyclic(|weak| PyNode {
        base: NodeBase::new(1, edges).with_input_meta(input_meta),
        name,
        backward: backward.clone().unbind(),
        saved: SavedVariables::new(saved_values),
        ctx: ctx.map_or_else(|| py.None(), Bound::unbind),
        weak_self: weak.clone(),
        stack: anomaly_stack(py),
        site: node_site(py),
        scope: current_scope(py),
        cuts,
        own_formula: formula_is_ours(name),
    });
    let out = new_tensor(py, data.unbind(), meta, Some(node.clone()), 0)?;
    mark_view(&out, base, view);
    if let Some(hooks) = hooks {
        let mut items = Vec::new();
        if let Some(saved) = saved {
            items.extend(saved.iter().map(ToSave::Input));
        }
        if save_output {
            items.push(ToSave::Output(out.clone(), 0));
        }
        node.saved.set(pack_saved(py, items, Some(&hooks))?);
    }
    Ok(out)
}

/// Note [Input metadata] (rust/core/src/engine.rs): per edge, the input's shape and dtype where
/// they differ from the output's; None when none does (most ops: nothing allocated).
fn input_meta(
    out: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyTuple>,
    edges: &[Option<Edge<PyGrad>>],
) -> PyResult<Option<Box<[Option<PyInputMeta>]>>> {
    let py = out.py();
    let mut metas: Option<Vec<Option<PyInputMeta>>> = None;
    for (i, (t, edge)) in inputs.iter().zip(edges).enumerate() {
        if edge.is_none() {
            continue;
        }
        let t = t.downcast::<PyTensor>()?;
        let b = t.try_borrow()?;
        let data = b.data.bind(py);
        if same_shape_and_dtype(data, out)? {
            continue;
        }
        let m = metas.get_or_insert_with(|| (0..edges.len()).map(|_| None).collect());
        m[i] = Some(input_meta_of(data)?);
    }
    Ok(metas.map(Vec::into_boxed_slice))
}

/// A new view of `v`: its meta (v's version counter and storage), its root base, and how it
/// relates to it.
fn new_view_of(
    v: &Bound<'_, PyTensor>,
    requires_grad: bool,
) -> PyResult<(TensorMeta, Py<PyAny>, ViewOf)> {
    let py = v.py();
    let b = v.try_borrow()?;
    let (root, inherited) = match &b.base {
        Some(r) => (r.clone_ref(py), b.creation_meta),
        None => (v.clone().into_any().unbind(), CreationMeta::Default),
    };
    // As torch: a view made in no_grad or inference mode (or of such a view) cannot follow an
    // in-place op; one of a tensor that requires grad still requires grad, as a leaf with no
    // edge.
    let view = ViewOf {
        creation: CreationMeta::of_new_view_now(inherited),
        inference: b.inference.of_view(),
    };
    let meta = TensorMeta {
        version: b.version.clone(),
        storage: b.storage.clone(),
        requires_grad,
    };
    Ok((meta, root, view))
}

/// How a new view relates to what it views.
struct ViewOf {
    creation: CreationMeta,
    /// The view's inference state: a view of an inference tensor is one.
    inference: Inference,
}

/// Makes `out` a view of `base` (its root).
fn mark_view(out: &Bound<'_, PyTensor>, base: Option<Py<PyAny>>, view: Option<ViewOf>) {
    let mut o = out.borrow_mut();
    o.base = base;
    if let Some(v) = view {
        o.creation_meta = v.creation;
        o.view_version = o.version.current();
        o.inference = v.inference;
    }
}

/// What a node saves, before it is saved.
enum ToSave<'py> {
    /// A tensor that is not an output of the node (or None).
    Input(Bound<'py, PyAny>),
    /// Output `output_nr` of the node (kept weakly, see `Saved::Output`).
    Output(Bound<'py, PyTensor>, usize),
}

/// The saved values of a node, through the pack hook of `saved_tensors_hooks` when one is set.
fn pack_saved<'py>(
    py: Python<'py>,
    items: Vec<ToSave<'py>>,
    hooks: Option<&(Py<PyAny>, Py<PyAny>)>,
) -> PyResult<Vec<SavedTensor<Saved>>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let (t, origin) = match item {
            ToSave::Input(s) if s.is_none() => {
                out.push(SavedTensor::new(Saved::NoneValue, none_version(), 0));
                continue;
            }
            ToSave::Input(s) => {
                let t = s.downcast_into::<PyTensor>().map_err(|e| {
                    PyTypeError::new_err(format!(
                        "save_for_backward can only save variables, but argument is of type {}",
                        e.into_inner()
                            .get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })?;
                t.try_borrow()?.check_savable()?;
                let origin = if hooks.is_none() {
                    Origin::Plain
                } else if let Some(acc) = leaf_accumulator(&t) {
                    Origin::Leaf(acc)
                } else {
                    match gradient_edge(&t) {
                        Some(Edge { node, input_nr }) => Origin::Node {
                            node,
                            output_nr: input_nr,
                        },
                        None => Origin::Plain,
                    }
                };
                (t, origin)
            }
            ToSave::Output(t, output_nr) => (t, Origin::SelfOutput { output_nr }),
        };
        let Some((pack, unpack)) = hooks else {
            let b = t.try_borrow()?;
            let saved = match origin {
                Origin::SelfOutput { output_nr } => SavedTensor::new(
                    Saved::Output {
                        data: b.data.clone_ref(py),
                        meta: b.meta(),
                        output_nr,
                    },
                    b.version.clone(),
                    output_nr,
                ),
                _ => SavedTensor::new(
                    Saved::Input(t.clone().into_any().unbind(), b.grad_fn.is_some()),
                    b.version.clone(),
                    b.output_nr,
                ),
            };
            out.push(saved);
            continue;
        };
        let version = t.try_borrow()?.version.clone();
        let before = version.current();
        let packed = pack.bind(py).call1((&t,))?;
        if version.current() != before {
            return Err(PyRuntimeError::new_err(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook can not be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to save a modified tensor.",
            ));
        }
        // Hooks are trusted with the value: nothing to compare a version against.
        out.push(SavedTensor::new(
            Saved::Packed {
                packed: packed.unbind(),
                unpack: unpack.clone_ref(py),
                origin,
            },
            VersionCounter::new(),
            0,
        ));
    }
    Ok(out)
}

thread_local! {
    /// The `saved_tensors_hooks` (pack, unpack) pairs in force on this thread; the innermost
    /// applies.
    static SAVED_TENSORS_HOOKS: RefCell<Vec<(Py<PyAny>, Py<PyAny>)>> = const { RefCell::new(Vec::new()) };
}

fn saved_tensors_hooks(py: Python<'_>) -> Option<(Py<PyAny>, Py<PyAny>)> {
    SAVED_TENSORS_HOOKS.with(|h| {
        h.borrow()
            .last()
            .map(|(p, u)| (p.clone_ref(py), u.clone_ref(py)))
    })
}

/// Enters `saved_tensors_hooks(pack, unpack)` on this thread.
#[pyfunction]
pub fn _push_saved_tensors_hooks(pack: Py<PyAny>, unpack: Py<PyAny>) {
    SAVED_TENSORS_HOOKS.with(|h| h.borrow_mut().push((pack, unpack)));
}

/// Leaves the innermost `saved_tensors_hooks`.
#[pyfunction]
pub fn _pop_saved_tensors_hooks() -> PyResult<()> {
    let popped = SAVED_TENSORS_HOOKS.with(|h| h.borrow_mut().pop());
    match popped {
        Some(pair) => {
            drop(pair);
            Ok(())
        }
        None => Err(PyRuntimeError::new_err("no saved tensors hooks to pop")),
    }
}

/// The cut an output that needs no grad carries (Note [Sites]): a new one when grad mode is
/// off and some input requires grad (what a no_grad block cuts), else the first input's.
fn output_cut(py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Option<Arc<Cut>>> {
    let grad_off = !grad_mode::is_grad_enabled();
    let mut sources = Vec::new();
    let mut inherited: Vec<Arc<Cut>> = Vec::new();
    for t in inputs.iter() {
        if t.is_none() {
            continue;
        }
        let t = t.downcast::<PyTensor>()?;
        let b = t.try_borrow()?;
        if let Some(c) = &b.cut {
            if !inherited.iter().any(|x| Arc::ptr_eq(x, c)) {
                inherited.push(c.clone());
            }
        }
        let requires_grad = b.requires_grad;
        drop(b);
        if grad_off && requires_grad {
            sources.push(Source::of(t)?);
        }
    }
    if !sources.is_empty() {
        let kind = if grad_mode::is_inference_mode_enabled() {
            "inference_mode"
        } else {
            "no_grad"
        };
        return Ok(Some(Cut::now(py, kind, sources, &inherited)));
    }
    Ok(inherited.into_iter().next())
}

/// Notes input `i` of a node being recorded when it has no edge but was cut from a graph.
fn note_cut(cuts: &mut NodeCuts, i: usize, t: &Bound<'_, PyTensor>) -> PyResult<()> {
    if let Some(c) = &t.try_borrow()?.cut {
        cuts.get_or_insert_with(Default::default)
            .push((i, c.clone()));
    }
    Ok(())
}

/// The forward site of the node being recorded, when node provenance is on.
fn node_site(py: Python<'_>) -> Option<Site> {
    if node_sites_enabled() {
        provenance::capture(py, false)
    } else {
        None
    }
}

/// The forward traceback of the op being recorded, when anomaly mode is on (one thread-local
/// read otherwise).
fn anomaly_stack(py: Python<'_>) -> Option<Py<PyAny>> {
    if !grad_mode::is_anomaly_enabled() {
        return None;
    }
    let stack = py
        .import("traceback")
        .and_then(|tb| tb.call_method0("format_stack"))
        .and_then(|frames| PyString::new(py, "").call_method1("join", (frames,)));
    stack.ok().map(Bound::unbind)
}

/// Records one op with several outputs, all sharing one node (output `i` is input slot `i` of
/// the node). `outputs` are arrays (new tensors are made) or tensors made by the op's forward
/// with no history, which are given this node's history in place (a custom Function's
/// outputs, including inputs it modified in place). `differentiable[i]` false leaves output
/// `i` without history. `saved` may name outputs: they are saved as outputs (weakly). The
/// backward receives a tuple of gradients, None for outputs that got none.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, name, backward, saved=None, ctx=None, differentiable=None))]
#[allow(clippy::too_many_arguments)]
pub fn record_multi<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyTuple>,
    inputs: &Bound<'py, PyTuple>,
    name: &str,
    backward: &Bound<'py, PyAny>,
    saved: Option<&Bound<'py, PyTuple>>,
    ctx: Option<Bound<'py, PyAny>>,
    differentiable: Option<Vec<bool>>,
) -> PyResult<Bound<'py, PyTuple>> {
    // a custom Function's backward is the user's
    let node = MultiNode {
        name: intern_name(name),
        backward,
        own_formula: false,
        view_of: None,
    };
    record_multi_node(py, outputs, inputs, node, saved, ctx, differentiable)
}

/// The node `record_multi_node` records: its name, formula and whose formula it is.
pub struct MultiNode<'a, 'py> {
    pub name: &'static str,
    pub backward: &'a Bound<'py, PyAny>,
    /// rustgrad's own formula (a node spec's), not a custom Function's: see `PyNode::own_formula`
    pub own_formula: bool,
    /// The outputs given as arrays are views of this tensor, returned together (torch's
    /// split/unbind: one node, each view a MULTI_OUTPUT_NODE view).
    pub view_of: Option<&'a Bound<'py, PyTensor>>,
}

/// `record_multi` for a node already named and known (a node spec's).
pub fn record_multi_node<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyTuple>,
    inputs: &Bound<'py, PyTuple>,
    node_of: MultiNode<'_, 'py>,
    saved: Option<&Bound<'py, PyTuple>>,
    ctx: Option<Bound<'py, PyAny>>,
    differentiable: Option<Vec<bool>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut needs_grad = false;
    if grad_mode::is_grad_enabled() {
        for t in inputs.iter() {
            if requires_grad_now(t.downcast::<PyTensor>()?)? {
                needs_grad = true;
                break;
            }
        }
    }
    let n = outputs.len();
    let differentiable = differentiable.unwrap_or_else(|| vec![true; n]);
    if differentiable.len() != n {
        return Err(PyValueError::new_err(format!(
            "record_multi: {} differentiable flags for {n} outputs",
            differentiable.len()
        )));
    }
    let device = device_of(inputs);
    let mut outs: Vec<Bound<'py, PyTensor>> = Vec::with_capacity(n);
    for o in outputs.iter() {
        match o.downcast::<PyTensor>() {
            Ok(t) => outs.push(t.clone()),
            Err(_) => {
                let data = as_array(o)?;
                let Some(v) = node_of.view_of else {
                    let meta = TensorMeta {
                        version: VersionCounter::new(),
                        storage: Some(Storage::new(device, nbytes(&data)?)),
                        requires_grad: false,
                    };
                    outs.push(new_tensor(py, data.unbind(), meta, None, 0)?);
                    continue;
                };
                // a view of `v`, then one of the views returned together
                let (meta, root, view) = new_view_of(v, false)?;
                let out = new_tensor(py, data.unbind(), meta, None, 0)?;
                mark_view(&out, Some(root), Some(view));
                // which output it is, the message reads from output_nr (set with the history)
                out.borrow_mut()._set_multi_output(0);
                outs.push(out);
            }
        }
    }
    if !needs_grad {
        if let Some(cut) = output_cut(py, inputs)? {
            for o in &outs {
                let mut b = o.try_borrow_mut()?;
                if b.grad_fn.is_none() && !b.requires_grad {
                    b.cut = Some(cut.clone());
                }
            }
        }
        return PyTuple::new(py, outs);
    }
    // Edges first: an output may be an input modified in place, whose history changes below.
    let mut edges = Vec::with_capacity(inputs.len());
    let mut cuts = None;
    for (i, t) in inputs.iter().enumerate() {
        let t = t.downcast::<PyTensor>()?;
        let edge = try_gradient_edge(t)?;
        if edge.is_none() {
            note_cut(&mut cuts, i, t)?;
        }
        edges.push(edge);
    }
    let input_meta = match outs.first() {
        Some(first) => input_meta(first.try_borrow()?.data.bind(py), inputs, &edges)?,
        None => None,
    };
    let node = Arc::new_cyclic(|weak| PyNode {
        base: NodeBase::new(n, edges).with_input_meta(input_meta),
        name: node_of.name,
        backward: node_of.backward.clone().unbind(),
        saved: SavedVariables::new(Vec::new()),
        ctx: ctx.map_or_else(|| py.None(), Bound::unbind),
        weak_self: weak.clone(),
        stack: anomaly_stack(py),
        site: node_site(py),
        scope: current_scope(py),
        cuts,
        own_formula: node_of.own_formula,
    });
    for (i, t) in outs.iter().enumerate() {
        if differentiable[i] {
            let f: NodeRef<PyGrad> = node.clone();
            let old = set_history(&mut *t.try_borrow_mut()?, f, i, true);
            drop(old);
        }
    }
    if let Some(saved) = saved {
        let items = saved
            .iter()
            .map(|s| {
                let out = outs
                    .iter()
                    .enumerate()
                    .find(|(i, o)| differentiable[*i] && o.is(&s));
                match out {
                    Some((i, o)) => ToSave::Output(o.clone(), i),
                    None => ToSave::Input(s),
                }
            })
            .collect();
        let hooks = saved_tensors_hooks(py);
        node.saved.set(pack_saved(py, items, hooks.as_ref())?);
    }
    PyTuple::new(py, outs)
}
/// A leaf around `data` (factories, `tensor()`, `from_numpy`).
#[pyfunction]
#[pyo3(signature = (cls, data, requires_grad=false, device=0))]
pub fn make_leaf<'py>(
    cls: &Bound<'py, PyAny>,
    data: Bound<'py, PyAny>,
    requires_grad: bool,
    device: usize,
) -> PyResult<Bound<'py, PyTensor>> {
    let data = as_array(data)?;
    let meta = TensorMeta {
        version: VersionCounter::new(),
        storage: Some(Storage::new(device, nbytes(&data)?)),
        requires_grad,
    };
    new_tensor_of(cls, data.unbind(), meta, None, 0)
}

/// `detach()`: a leaf sharing data, storage and version counter. `share_version=False` gives
/// `.data`'s fresh counter.
#[pyfunction]
#[pyo3(signature = (t, share_version=true))]
pub fn detach<'py>(
    t: &Bound<'py, PyTensor>,
    share_version: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = t.py();
    let b = t.try_borrow()?;
    let meta = TensorMeta {
        version: if share_version || provenance::strict_data_enabled() {
            b.version.clone()
        } else {
            VersionCounter::new()
        },
        storage: b.storage.clone(),
        requires_grad: false,
    };
    let data = b.data.clone_ref(py);
    let inference = b.inference;
    let cut_from = b.requires_grad;
    drop(b);
    let cut = if cut_from {
        let kind = if share_version { "detach" } else { "data" };
        Some(Cut::now(py, kind, vec![Source::of(t)?], &[]))
    } else {
        t.try_borrow()?.cut.clone()
    };
    let cls = callbacks(py).tensor_cls.bind(py);
    let out = new_tensor_of(cls, data, meta, None, 0)?;
    {
        let mut o = out.try_borrow_mut()?;
        o.cut = cut;
        o.inference = inference.of_detach(o.inference); // Note [Inference tensors] (meta.rs)
    }
    Ok(out)
}

/// `detach_()`: drops the history in place.
#[pyfunction]
pub fn detach_(t: &Bound<'_, PyTensor>) -> PyResult<()> {
    let mut b = t.try_borrow_mut()?;
    if b.base.is_some() {
        return Err(PyRuntimeError::new_err(
            "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.",
        ));
    }
    let old = b.grad_fn.take();
    b.requires_grad = false;
    b.output_nr = 0;
    drop(b); // dropping the history may run Python code that uses this tensor
    if let Some(f) = old {
        rustgrad_core::drop_deferred(f);
    }
    Ok(())
}

/// After an in-place op computed `out` from `t`: bumps `t`'s version (unless `bump_version` is
/// false, e.g. for a view whose shared counter its base's rebase already bumped) and gives it
/// `out`'s history (grad_fn, requires_grad). The caller has written `out`'s values into `t`'s
/// array.
#[pyfunction]
#[pyo3(signature = (t, out, bump_version=true))]
pub fn rebase_history(
    t: &Bound<'_, PyTensor>,
    out: &Bound<'_, PyTensor>,
    bump_version: bool,
) -> PyResult<()> {
    let (grad_fn, output_nr, requires_grad) = {
        let o = out.try_borrow()?;
        (o.grad_fn.clone(), o.output_nr, o.requires_grad)
    };
    let version = t.try_borrow()?.version.clone();
    if bump_version {
        provenance::bump_logged(t.py(), &version);
    }
    adopt_saved_output(t, out)?;
    let mut b = t.try_borrow_mut()?;
    let old = grad_fn.map(|f| set_history(&mut b, f, output_nr, requires_grad));
    drop(b);
    drop(old);
    Ok(())
}

/// An in-place op on `t` computed `out` out of place and wrote it into `t` (already versioned):
/// if `out`'s node saved `out` itself (sigmoid_, exp_, pow_ with a tensor exponent), it saved
/// `t` as torch's does: `t`'s memory, at `t`'s current version, so that a later in-place write
/// to `t` (or to its base, for a view) fails that node's backward, and a write through `.data`
/// is seen by it.
#[pyfunction]
pub fn adopt_saved_output(t: &Bound<'_, PyTensor>, out: &Bound<'_, PyTensor>) -> PyResult<()> {
    let py = t.py();
    let (grad_fn, out_version) = {
        let o = out.try_borrow()?;
        (o.grad_fn.clone(), o.version.clone())
    };
    let Some(node) = grad_fn
        .as_ref()
        .and_then(|f| f.as_any().downcast_ref::<PyNode>())
    else {
        return Ok(());
    };
    let (version, storage, data) = {
        let b = t.try_borrow()?;
        (b.version.clone(), b.storage.clone(), b.data.clone_ref(py))
    };
    node.saved.rebase_version(&out_version, &version, |s| {
        if let Saved::Output {
            data: d, meta: m, ..
        } = s
        {
            *d = data.clone_ref(py);
            m.version = version.clone();
            m.storage = storage.clone();
        }
    });
    Ok(())
}

/// A tensor with `t`'s history but its own copy of the values (`copy`): what an in-place op
/// saves as "self before the write".
#[pyfunction]
pub fn shallow_copy<'py>(
    t: &Bound<'py, PyTensor>,
    copy: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = t.py();
    let edge = gradient_edge(t);
    let b = t.try_borrow()?;
    let meta = TensorMeta {
        version: VersionCounter::new(),
        storage: Some(Storage::new(
            b.storage.as_ref().map_or(0, |s| s.device()),
            nbytes(&copy)?,
        )),
        requires_grad: b.requires_grad,
    };
    drop(b);
    let (grad_fn, nr) = match edge {
        Some(e) => (Some(e.node), e.input_nr),
        None => (None, 0),
    };
    let out = new_tensor(py, copy.unbind(), meta, None, 0)?;
    if let Some(f) = grad_fn {
        // A leaf's copy routes to the leaf's AccumulateGrad through an identity edge: keep the
        // node itself as the copy's grad_fn (it is never shown to users).
        let mut o = out.borrow_mut();
        o.grad_fn = Some(f);
        o.output_nr = nr;
    }
    Ok(out)
}
