//! Backward: the one marked crossing from Python into the engine (`run_backward`), and the
//! leaf's gradient sink, which carries out the engine's accumulation decisions.

use std::any::Any;
use std::cell::{Cell, OnceCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyRecursionError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rustgrad_core::error::{INPUT_WITHOUT_GRAD, ROOT_WITHOUT_GRAD};
use rustgrad_core::{
    Accumulation, Edge, Engine, ExecuteOptions, GradSink, LeafGrad, LeafGuard, LeafLock, Result,
};

use crate::callbacks::callbacks;
use crate::errors::{from_py, to_py};
use crate::node::{handle_for, PyNodeHandle};
use crate::py_value::PyGrad;
use crate::tensor::{gradient_edge, try_gradient_edge, unreachable_edge, PyTensor};

/// The one crossing from Python into the engine. Runs backward from `roots` with `grads` (one
/// per root); returns the gradients captured at `inputs` (all None with `accumulate_grad`).
/// `keep_graph` keeps the saved values for another backward; `create_graph` runs the formulas
/// with grad mode on, so the gradients record a graph; `accumulate_grad` (backward) stores into
/// the leaves' `.grad`, without it (autograd.grad) the gradients at `inputs` are returned.
#[pyfunction]
#[pyo3(signature = (roots, grads, *, keep_graph=false, create_graph=false, inputs=None, accumulate_grad=true))]
pub fn run_backward<'py>(
    py: Python<'py>,
    roots: &Bound<'py, PyTuple>,
    grads: &Bound<'py, PyTuple>,
    keep_graph: bool,
    create_graph: bool,
    inputs: Option<&Bound<'py, PyTuple>>,
    accumulate_grad: bool,
) -> PyResult<Bound<'py, PyList>> {
    let _nesting = Nesting::enter()?;
    let mut root_edges = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
        let t = r.downcast::<PyTensor>()?;
        match try_gradient_edge(t)? {
            Some(e) => root_edges.push(e),
            None => {
                return Err(PyRuntimeError::new_err(format!(
                    "element {i} of tensors {ROOT_WITHOUT_GRAD}"
                )))
            }
        }
    }
    let mut input_edges = Vec::new();
    for t in inputs.into_iter().flatten() {
        let t = t.downcast::<PyTensor>()?;
        match try_gradient_edge(t)? {
            Some(e) => input_edges.push(e),
            None => match unreachable_edge(t)? {
                Some(e) => input_edges.push(e),
                None => return Err(PyRuntimeError::new_err(INPUT_WITHOUT_GRAD)),
            },
        }
    }
    // The caller holds the root gradients (the `gradient=` of backward, or the implicit ones
    // made in Python): never fresh (Note [Stealing a gradient]).
    let root_grads: Vec<PyGrad> = grads.iter().map(|g| PyGrad::new(g.unbind())).collect();
    let options = ExecuteOptions {
        keep_graph,
        create_graph,
        accumulate_grad,
        inputs: input_edges,
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        Engine::execute(root_edges, root_grads, options)
    }));
    let captured = match result {
        Ok(r) => r.map_err(to_py)?,
        Err(_) => {
            return Err(PyRuntimeError::new_err(
                "internal error in the autograd engine (a Rust panic); please report it",
            ))
        }
    };
    let items: Vec<PyObject> = captured
        .into_iter()
        .map(|g| g.map_or_else(|| py.None(), |g| g.0))
        .collect();
    PyList::new(py, items)
}

// Note [Reentrant backward and the C stack]
// A hook or a custom Function's backward may call backward (or autograd.grad) while a backward
// runs on the same thread: the engine runs the inner one on the same thread, on top of the
// outer one's C stack (Python -> run_backward -> Engine::execute -> the hook -> Python -> ...).
// Each level costs a few KiB, so on a small thread stack (threading.stack_size(256 * 1024))
// a deep nesting would overflow it and crash the process (torch crashes too). Every nested
// entry therefore measures the C stack it has left and raises RecursionError (a RuntimeError)
// while `stack_margin` is still free for the Python error to be raised and unwound. The
// outermost backward is never refused: only a nested one, which torch would have to run on the
// same thread, is checked. Where the thread's stack cannot be known (not Linux, or the code
// runs on a stack that is not the thread's own, e.g. a coroutine's) nothing is checked.

/// The C stack a nested backward must find free, for the innermost backward, its hooks and the
/// Python code they run (a 64x64 SVD in a hook takes about 45 KiB), and the error's way back
/// out: a quarter of the thread's stack, at least 32 KiB (a nesting level takes about 4 KiB) and
/// at most 256 KiB.
fn stack_margin(size: usize) -> usize {
    (size / 4).clamp(32 * 1024, 256 * 1024)
}

thread_local! {
    /// How many backwards are running on this thread.
    static NESTING: Cell<usize> = const { Cell::new(0) };
    /// This thread's stack as (lowest usable address, size), looked up at its first nested
    /// backward; None where it cannot be known.
    static THREAD_STACK: OnceCell<Option<(usize, usize)>> = const { OnceCell::new() };
}

/// One backward running on this thread; the count goes down again when it ends (an error
/// included).
struct Nesting;

impl Nesting {
    fn enter() -> PyResult<Self> {
        let depth = NESTING.with(Cell::get);
        if depth > 0 {
            check_stack(depth)?;
        }
        NESTING.with(|n| n.set(depth + 1));
        Ok(Nesting)
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Refuses a backward nested `depth` deep when less than `stack_margin` of the C stack is left.
fn check_stack(depth: usize) -> PyResult<()> {
    let Some((low, size)) = THREAD_STACK.with(|s| *s.get_or_init(thread_stack)) else {
        return Ok(());
    };
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    // Not within the thread's own stack: nothing known about what is left.
    if here < low || here - low > size {
        return Ok(());
    }
    let left = here - low;
    let margin = stack_margin(size);
    if left >= margin {
        return Ok(());
    }
    Err(PyRecursionError::new_err(format!(
        "reentrant backward too deep for this thread's stack: backward or autograd.grad called \
         from a hook or a custom Function's backward {depth} levels deep, with {} KiB of the \
         thread's {} KiB C stack left ({} KiB must stay free); nest less, or run it in a thread \
         with a larger stack (threading.stack_size)",
        left / 1024,
        size / 1024,
        margin / 1024
    )))
}

/// The calling thread's stack as (lowest usable address, size), from pthread_getattr_np.
#[cfg(target_os = "linux")]
fn thread_stack() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialised by pthread_getattr_np before it is read and destroyed once;
    // the out-pointers point at live locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && !addr.is_null() && size > 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_stack() -> Option<(usize, usize)> {
    None
}

/// Edge of a tensor as (grad_fn node, input_nr), for tests of graph wiring.
#[pyfunction]
pub fn _gradient_edge<'py>(
    t: &Bound<'py, PyTensor>,
) -> PyResult<Option<(Bound<'py, PyNodeHandle>, usize)>> {
    gradient_edge(t)
        .map(|Edge { node, input_nr }| Ok((handle_for(t.py(), node)?, input_nr)))
        .transpose()
}

/// The leaf's sink. The core decides how a gradient reaches `.grad` (Note [Stealing a
/// gradient]); a gradient to take is stored here, with no Python call; for a copy or an add,
/// `rustgrad.autograd._accumulate_grad(leaf, grad, how)` does the array math.
pub struct TensorSink {
    pub tensor: Py<PyAny>,
}

impl TensorSink {
    fn leaf<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyTensor>> {
        Ok(self.tensor.bind(py).downcast::<PyTensor>()?)
    }
}

impl GradSink<PyGrad> for TensorSink {
    fn current(&self) -> Result<LeafGrad> {
        Python::with_gil(|py| {
            let leaf = self.leaf(py).map_err(from_py)?;
            let b = leaf.try_borrow().map_err(|e| from_py(e.into()))?;
            let Some(grad) = &b.grad else {
                return Ok(LeafGrad::Unset);
            };
            let in_graph = grad
                .bind(py)
                .downcast::<PyTensor>()
                .ok()
                .and_then(|g| g.try_borrow().ok().map(|g| g.requires_grad));
            Ok(if in_graph == Some(true) {
                LeafGrad::InGraph
            } else {
                LeafGrad::Plain
            })
        })
    }

    fn requires_grad(&self) -> Result<bool> {
        Python::with_gil(|py| {
            let leaf = self.leaf(py).map_err(from_py)?;
            let b = leaf.try_borrow().map_err(|e| from_py(e.into()))?;
            Ok(b.requires_grad)
        })
    }

    fn fits(&self, grad: &PyGrad) -> Result<bool> {
        Python::with_gil(|py| {
            let leaf = self.leaf(py).map_err(from_py)?;
            // An array that cannot say (no `flags`) is copied.
            Ok(fits(leaf, grad.0.bind(py)).unwrap_or(false))
        })
    }

    fn accumulate(&self, grad: PyGrad, how: Accumulation) -> Result<()> {
        Python::with_gil(|py| {
            let leaf = self.leaf(py).map_err(from_py)?;
            let how = match how {
                Accumulation::Take => {
                    // a view taken whole stops being one: `.grad` is never a view (torch's)
                    let base = match grad.0.bind(py).downcast::<PyTensor>() {
                        Ok(t) => {
                            let mut b = t.try_borrow_mut().map_err(|e| from_py(e.into()))?;
                            b.creation_meta = rustgrad_core::CreationMeta::Default;
                            b.base.take()
                        }
                        Err(_) => None,
                    };
                    let old = {
                        let mut b = leaf.try_borrow_mut().map_err(|e| from_py(e.into()))?;
                        b.grad.replace(grad.0)
                    };
                    drop(base);
                    drop(old); // its finalizers may use the leaf
                    return Ok(());
                }
                Accumulation::Copy => pyo3::intern!(py, "copy"),
                Accumulation::AddInPlace => pyo3::intern!(py, "add_in_place"),
                Accumulation::AddOutOfPlace => pyo3::intern!(py, "add_out_of_place"),
            };
            let f = callbacks(py).accumulate.bind(py);
            f.call1((leaf, grad.0.bind(py), how)).map_err(from_py)?;
            Ok(())
        })
    }

    /// Waits with the GIL released: the holder may need the GIL to finish (Note [Accumulation
    /// across threads]).
    fn acquire<'a>(&self, lock: &'a LeafLock) -> LeafGuard<'a> {
        if let Some(guard) = lock.try_lock() {
            return guard;
        }
        Python::with_gil(|py| py.allow_threads(|| lock.lock()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Whether `grad`'s array could be `leaf`'s `.grad` as it is: the leaf's dtype and shape, dense,
/// its own memory (not a view of another array), writable.
fn fits(leaf: &Bound<'_, PyTensor>, grad: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = leaf.py();
    let leaf_data = leaf.try_borrow()?.data.clone_ref(py).into_bound(py);
    let data = grad
        .downcast::<PyTensor>()?
        .try_borrow()?
        .data
        .clone_ref(py);
    let data = data.bind(py);
    let flags = data.getattr(pyo3::intern!(py, "flags"))?;
    let flag = |name: &Bound<'_, pyo3::types::PyString>| -> PyResult<bool> {
        flags.getattr(name)?.is_truthy()
    };
    // A view's array owns nothing; the engine took it only if it is all that holds its base
    // (`is_exclusive`), and then its memory is as much its own.
    let is_view = grad.downcast::<PyTensor>()?.try_borrow()?.base.is_some();
    if !flag(pyo3::intern!(py, "c_contiguous"))?
        || !(is_view || flag(pyo3::intern!(py, "owndata"))?)
    {
        return Ok(false);
    }
    // CuPy's flags have no `writeable`: its arrays always are.
    if let Ok(false) = flag(pyo3::intern!(py, "writeable")) {
        return Ok(false);
    }
    let dtype = pyo3::intern!(py, "dtype");
    let shape = pyo3::intern!(py, "shape");
    Ok(data.getattr(dtype)?.eq(leaf_data.getattr(dtype)?)?
        && data.getattr(shape)?.eq(leaf_data.getattr(shape)?)?)
}
