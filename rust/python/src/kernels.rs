//! The CPU kernels NumPy lacks (the `rustgrad-kernels` crate, where the math and its tests
//! live) on NumPy arrays: which arrays qualify (dtype, C-contiguity, alignment, shapes), their
//! slices, and the new arrays. The ops call these through the CPU backend (`_backends/cpu.py`),
//! never directly; a `None` or `False` answer sends the op to its NumPy formulation.

use std::mem::MaybeUninit;

use numpy::{
    Element, IntoPyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad_kernels::{self as rk, Real};

/// erf of a float32 or float64 array (any layout), as a new array of the same dtype: float32
/// by `erf_f32` (torch's CPU formula), float64 by libm (as torch's `std::erf`).
#[pyfunction]
pub fn _erf<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        if let Some(xs) = c_slice(&a) {
            return Ok(fresh_f32(py, a.shape(), |o| rk::erf_slice_f32(xs, o)));
        }
        let out = a.as_array().mapv(rk::erf_f32);
        return Ok(out.into_pyarray(py).into_any());
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let out = a.readonly().as_array().mapv(rk::erf_f64);
        return Ok(out.into_pyarray(py).into_any());
    }
    Err(PyTypeError::new_err(
        "_erf: expected a float32 or float64 NumPy array",
    ))
}

/// A new C-contiguous float32 array of `shape`, every element written by `fill` (a kernel, which
/// returns the slots initialized): NumPy's uninitialized allocation, as zeroing the buffer first
/// costs here about what an elementwise pass does.
fn fresh_f32<'py>(
    py: Python<'py>,
    shape: &[usize],
    fill: impl FnOnce(&mut [MaybeUninit<f32>]) -> &mut [f32],
) -> Bound<'py, PyAny> {
    // SAFETY: a new C-contiguous array that nothing else references yet; its `len` slots are
    // handed out as uninitialized memory, and `fill` returns them all as initialized floats
    // before Python sees them.
    let arr = unsafe { PyArrayDyn::<f32>::new(py, shape, false) };
    let slots =
        unsafe { std::slice::from_raw_parts_mut(arr.data() as *mut MaybeUninit<f32>, arr.len()) };
    let n = slots.len();
    let written = fill(slots);
    assert_eq!(written.len(), n, "fresh_f32: a kernel left slots unwritten");
    arr.into_any()
}

/// A new array of `shape` from `n` elements written by `fill` (a kernel): a Vec NumPy adopts.
fn fresh_vec<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[usize],
    n: usize,
    fill: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T],
) -> PyResult<Bound<'py, PyAny>> {
    shaped(py, shape, rk::filled_vec(n, fill))
}

fn shaped<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[usize],
    data: Vec<T>,
) -> PyResult<Bound<'py, PyAny>> {
    let out = numpy::ndarray::Array::from_shape_vec(shape.to_vec(), data)
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    Ok(out.into_pyarray(py).into_any())
}

/// Exact GELU, x Phi(x) = x/2 (1 + erf(x/sqrt 2)), of a C-contiguous float32/float64 array,
/// in one pass (float32 through `erf_f32`, float64 through libm), the GIL released and split
/// over Rayon's threads from `PAR_MIN_ELEMS` elements on; None for other arrays.
#[pyfunction]
pub fn _gelu<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(map_floats(py, x, rk::gelu_f32, rk::gelu_f64))
}

/// The logistic sigmoid of a C-contiguous float32/float64 array in one pass
/// (`sigmoid_f32`/`sigmoid_f64`, the formulation of `_ops/activation.py`'s sigmoid; GIL and
/// threads as `_gelu`); None for other arrays.
#[pyfunction]
pub fn _sigmoid<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(map_floats(py, x, rk::sigmoid_f32, rk::sigmoid_f64))
}

/// ReLU (`x < 0 ? 0 : x`, torch's signed zero) of a C-contiguous float32/float64 array in one
/// pass (GIL and threads as `_gelu`); None for other arrays.
#[pyfunction]
pub fn _relu<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(map_floats(py, x, rk::relu_f32, rk::relu_f64))
}

/// An elementwise kernel's new array for a C-contiguous float32 (`f32k`) or float64 (`f64k`)
/// array, split over threads as `fresh_split`; None for other arrays.
fn map_floats<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    f32k: for<'o> fn(&[f32], &'o mut [MaybeUninit<f32>]) -> &'o mut [f32],
    f64k: for<'o> fn(&[f64], &'o mut [MaybeUninit<f64>]) -> &'o mut [f64],
) -> Option<Bound<'py, PyAny>> {
    fn run<'py, T: numpy::Element + Send + Sync>(
        py: Python<'py>,
        a: &Bound<'py, PyArrayDyn<T>>,
        k: for<'o> fn(&[T], &'o mut [MaybeUninit<T>]) -> &'o mut [T],
    ) -> Option<Bound<'py, PyAny>> {
        let a = a.readonly();
        let xs = c_slice(&a)?;
        Some(fresh_split(py, a.shape(), 16, |first, o| {
            k(&xs[first..][..o.len()], o)
        }))
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        return run(py, a, f32k);
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        return run(py, a, f64k);
    }
    None
}

/// The gradient of exact GELU: grad (Phi(x) + x phi(x)), phi the standard normal density, of
/// C-contiguous float32/float64 arrays of one shape, in one pass (GIL and threads as `_gelu`);
/// None for other arrays.
#[pyfunction]
pub fn _gelu_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let (Ok(g), Ok(a)) = (
        grad.downcast::<PyArrayDyn<f32>>(),
        x.downcast::<PyArrayDyn<f32>>(),
    ) {
        let (g, a) = (g.readonly(), a.readonly());
        let (Some(gs), Some(xs)) = (c_slice(&g), c_slice(&a)) else {
            return Ok(None);
        };
        if g.shape() != a.shape() {
            return Ok(None);
        }
        return Ok(Some(fresh_split(py, a.shape(), 16, |first, o| {
            let span = first..first + o.len();
            rk::gelu_backward_f32(&gs[span.clone()], &xs[span], o)
        })));
    }
    if let (Ok(g), Ok(a)) = (
        grad.downcast::<PyArrayDyn<f64>>(),
        x.downcast::<PyArrayDyn<f64>>(),
    ) {
        let (g, a) = (g.readonly(), a.readonly());
        let (Some(gs), Some(xs)) = (c_slice(&g), c_slice(&a)) else {
            return Ok(None);
        };
        if g.shape() != a.shape() {
            return Ok(None);
        }
        return Ok(Some(fresh_split(py, a.shape(), 16, |first, o| {
            let span = first..first + o.len();
            rk::gelu_backward_f64(&gs[span.clone()], &xs[span], o)
        })));
    }
    Ok(None)
}

/// The elements of a C-contiguous array in order (NumPy's `as_slice` also takes Fortran order,
/// which would pair the elements of two arrays wrongly).
fn c_slice<'a, T: numpy::Element>(a: &'a numpy::PyReadonlyArrayDyn<'_, T>) -> Option<&'a [T]> {
    if a.is_c_contiguous() && aligned(a.data()) {
        a.as_slice().ok()
    } else {
        None
    }
}

fn c_slice_mut<'a, T: numpy::Element>(
    a: &'a mut numpy::PyReadwriteArrayDyn<'_, T>,
) -> Option<&'a mut [T]> {
    if a.is_c_contiguous() && aligned(a.data()) {
        a.as_slice_mut().ok()
    } else {
        None
    }
}

/// NumPy allows arrays at any byte offset (`np.frombuffer(..., offset=1)`); a Rust slice must be
/// aligned, so such arrays take the NumPy path.
fn aligned<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(std::mem::align_of::<T>())
}

/// `where(mask, a, other)` as a new array: mask (bool) and a C-contiguous and of one shape,
/// other a Python number or an array like a. None when the arrays do not qualify (the caller
/// falls back to NumPy). NumPy's `where` branches per element, which costs ~5 ns on a random
/// mask (a relu's); this loop compiles to a branch-free blend.
#[pyfunction]
pub fn _where<'py>(
    py: Python<'py>,
    mask: &Bound<'py, PyAny>,
    a: &Bound<'py, PyAny>,
    other: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Ok(mask) = mask.downcast::<PyArrayDyn<bool>>() else {
        return Ok(None);
    };
    if let Ok(a) = a.downcast::<PyArrayDyn<f32>>() {
        return select::<f32>(py, mask, a, other);
    }
    if let Ok(a) = a.downcast::<PyArrayDyn<f64>>() {
        return select::<f64>(py, mask, a, other);
    }
    Ok(None)
}

fn select<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    mask: &Bound<'py, PyArrayDyn<bool>>,
    a: &Bound<'py, PyArrayDyn<T>>,
    other: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (mask, a) = (mask.readonly(), a.readonly());
    let (Some(m), Some(x)) = (c_slice(&mask), c_slice(&a)) else {
        return Ok(None);
    };
    if mask.shape() != a.shape() {
        return Ok(None);
    }
    let out: Vec<T> = if let Ok(b) = other.downcast::<PyArrayDyn<T>>() {
        let b = b.readonly();
        let Some(y) = c_slice(&b) else {
            return Ok(None);
        };
        if b.shape() != a.shape() {
            return Ok(None);
        }
        rk::filled_vec(x.len(), |o| rk::select(m, x, y, o))
    } else if let Ok(s) = other.extract::<f64>() {
        rk::filled_vec(x.len(), |o| rk::select_scalar(m, x, T::of(s), o))
    } else {
        return Ok(None);
    };
    shaped(py, a.shape(), out).map(Some)
}

/// ReLU's gradient from its output: `grad` where `result` is above 0 or NaN, else +0, for
/// C-contiguous float32/float64 arrays of one shape and dtype, as a new array, in one pass
/// (`where(~(result <= 0), grad, 0)` bit for bit). None when the arrays do not qualify.
#[pyfunction]
pub fn _threshold_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    result: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let (Ok(g), Ok(y)) = (
        grad.downcast::<PyArrayDyn<f32>>(),
        result.downcast::<PyArrayDyn<f32>>(),
    ) {
        return Ok(threshold_backward_of(py, g, y));
    }
    if let (Ok(g), Ok(y)) = (
        grad.downcast::<PyArrayDyn<f64>>(),
        result.downcast::<PyArrayDyn<f64>>(),
    ) {
        return Ok(threshold_backward_of(py, g, y));
    }
    Ok(None)
}

fn threshold_backward_of<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    grad: &Bound<'py, PyArrayDyn<T>>,
    result: &Bound<'py, PyArrayDyn<T>>,
) -> Option<Bound<'py, PyAny>> {
    let (g, y) = (grad.try_readonly().ok()?, result.try_readonly().ok()?);
    let (gs, ys) = (c_slice(&g)?, c_slice(&y)?);
    if g.shape() != y.shape() {
        return None;
    }
    // SAFETY: the kernel writes every slot (it checks the lengths) before Python sees the array.
    let (arr, slots) = unsafe { uninit_array::<T>(py, g.shape()) };
    rk::threshold_backward(gs, ys, slots);
    Some(arr.into_any())
}

/// The hyper-parameters of one SGD step over one parameter (`optim/sgd.py` passes them).
#[derive(FromPyObject)]
pub struct SgdArgs {
    lr: f64,
    weight_decay: f64,
    momentum: f64,
    dampening: f64,
    nesterov: bool,
    maximize: bool,
    /// The momentum buffer was just made: it takes the gradient.
    init_buffer: bool,
}

impl From<&SgdArgs> for rk::Sgd {
    fn from(a: &SgdArgs) -> rk::Sgd {
        rk::Sgd {
            lr: a.lr,
            weight_decay: a.weight_decay,
            momentum: a.momentum,
            dampening: a.dampening,
            nesterov: a.nesterov,
            maximize: a.maximize,
            init_buffer: a.init_buffer,
        }
    }
}

/// One SGD step over a float32/float64 C-contiguous parameter, in place and in one pass, with
/// exactly the roundings of the NumPy formulation in `optim/sgd.py` (each product and sum
/// rounded to the parameter's dtype). False (nothing written) when the arrays do not qualify.
#[pyfunction]
#[pyo3(signature = (param, grad, buf, args))]
pub fn _sgd_step(
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    buf: Option<&Bound<'_, PyAny>>,
    args: SgdArgs,
) -> PyResult<bool> {
    if param.downcast::<PyArrayDyn<f32>>().is_ok() {
        return sgd::<f32>(param, grad, buf, &args);
    }
    if param.downcast::<PyArrayDyn<f64>>().is_ok() {
        return sgd::<f64>(param, grad, buf, &args);
    }
    Ok(false)
}

fn sgd<T: Real + numpy::Element>(
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    buf: Option<&Bound<'_, PyAny>>,
    a: &SgdArgs,
) -> PyResult<bool> {
    let (Ok(p), Ok(g)) = (
        param.downcast::<PyArrayDyn<T>>(),
        grad.downcast::<PyArrayDyn<T>>(),
    ) else {
        return Ok(false);
    };
    let mut b = match buf {
        Some(b) => match b.downcast::<PyArrayDyn<T>>() {
            Ok(b) => match b.try_readwrite() {
                Ok(b) => Some(b),
                Err(_) => return Ok(false),
            },
            Err(_) => return Ok(false),
        },
        None => None,
    };
    let (Ok(mut p), Ok(g)) = (p.try_readwrite(), g.try_readonly()) else {
        return Ok(false);
    };
    if p.shape() != g.shape() || b.as_ref().is_some_and(|b| b.shape() != g.shape()) {
        return Ok(false);
    }
    let (Some(ps), Some(gs)) = (c_slice_mut(&mut p), c_slice(&g)) else {
        return Ok(false);
    };
    let bs = match b.as_mut() {
        Some(b) => match c_slice_mut(b) {
            Some(s) => Some(s),
            None => return Ok(false),
        },
        None => None,
    };
    if a.momentum != 0.0 && bs.is_none() {
        return Ok(false);
    }
    rk::sgd_step(&rk::Sgd::from(a), ps, gs, bs);
    Ok(true)
}

/// `target[index[i]] += values[i]` over the first axis of a C-contiguous float32/float64
/// `target`, for a 1-D int64 `index` and `values` of shape `index.shape + target.shape[1:]`:
/// NumPy's `add.at` in its order (the same bits), one pass. False (nothing written) when the
/// arrays do not qualify, overlap, or an index is out of range (NumPy's `add.at` then runs and
/// raises).
#[pyfunction]
pub fn _index_add_rows(
    target: &Bound<'_, PyAny>,
    index: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let Ok(index) = index.downcast::<PyArrayDyn<i64>>() else {
        return Ok(false);
    };
    if target.downcast::<PyArrayDyn<f32>>().is_ok() {
        return Ok(index_add_rows::<f32>(target, index, values));
    }
    if target.downcast::<PyArrayDyn<f64>>().is_ok() {
        return Ok(index_add_rows::<f64>(target, index, values));
    }
    Ok(false)
}

fn index_add_rows<T: numpy::Element + Copy + std::ops::AddAssign>(
    target: &Bound<'_, PyAny>,
    index: &Bound<'_, PyArrayDyn<i64>>,
    values: &Bound<'_, PyAny>,
) -> bool {
    let (Ok(t), Ok(v)) = (
        target.downcast::<PyArrayDyn<T>>(),
        values.downcast::<PyArrayDyn<T>>(),
    ) else {
        return false;
    };
    // a failed borrow: the arrays share memory
    let (Ok(mut t), Ok(i), Ok(v)) = (t.try_readwrite(), index.try_readonly(), v.try_readonly())
    else {
        return false;
    };
    let Some((_, inner)) = t.shape().split_first() else {
        return false;
    };
    let row: usize = inner.iter().product();
    let want: Vec<usize> = i.shape().iter().chain(inner).copied().collect();
    if row == 0 || i.ndim() != 1 || v.shape() != want.as_slice() {
        return false;
    }
    let (Some(ts), Some(is), Some(vs)) = (c_slice_mut(&mut t), c_slice(&i), c_slice(&v)) else {
        return false;
    };
    rk::index_add_rows(ts, is, vs, row)
}

/// The hyper-parameters of one Adam/AdamW step over one parameter (`optim/adam.py`).
#[derive(FromPyObject)]
pub struct AdamArgs {
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    maximize: bool,
    /// lr / (1 - beta1 ** step)
    step_size: f64,
    /// (1 - beta2 ** step) ** 0.5
    bias_correction2_sqrt: f64,
}

impl From<&AdamArgs> for rk::Adam {
    fn from(a: &AdamArgs) -> rk::Adam {
        rk::Adam {
            lr: a.lr,
            beta1: a.beta1,
            beta2: a.beta2,
            eps: a.eps,
            weight_decay: a.weight_decay,
            decoupled: a.decoupled,
            maximize: a.maximize,
            step_size: a.step_size,
            bias_correction2_sqrt: a.bias_correction2_sqrt,
        }
    }
}

/// One Adam step over a float32/float64 C-contiguous parameter and its state, in place and in
/// one pass, with exactly the roundings of the NumPy formulation in `optim/adam.py`. False
/// (nothing written) when the arrays do not qualify.
#[pyfunction]
#[pyo3(signature = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args))]
pub fn _adam_step(
    param: &Bound<'_, PyAny>,
    grad: &Bound<'_, PyAny>,
    exp_avg: &Bound<'_, PyAny>,
    exp_avg_sq: &Bound<'_, PyAny>,
    max_exp_avg_sq: Option<&Bound<'_, PyAny>>,
    args: AdamArgs,
) -> PyResult<bool> {
    let arrays = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    if param.downcast::<PyArrayDyn<f32>>().is_ok() {
        return adam::<f32>(arrays, &args);
    }
    if param.downcast::<PyArrayDyn<f64>>().is_ok() {
        return adam::<f64>(arrays, &args);
    }
    Ok(false)
}

type AdamArrays<'a, 'py> = (
    &'a Bound<'py, PyAny>,
    &'a Bound<'py, PyAny>,
    &'a Bound<'py, PyAny>,
    &'a Bound<'py, PyAny>,
    Option<&'a Bound<'py, PyAny>>,
);

fn writable<'py, T: numpy::Element>(
    x: &Bound<'py, PyAny>,
) -> Option<numpy::PyReadwriteArrayDyn<'py, T>> {
    x.downcast::<PyArrayDyn<T>>()
        .ok()
        .and_then(|x| x.try_readwrite().ok())
}

fn adam<T: Real + numpy::Element>(arrays: AdamArrays<'_, '_>, a: &AdamArgs) -> PyResult<bool> {
    let (param, grad, exp_avg, exp_avg_sq, vmax) = arrays;
    let (Some(mut p), Some(mut m), Some(mut v)) = (
        writable::<T>(param),
        writable::<T>(exp_avg),
        writable::<T>(exp_avg_sq),
    ) else {
        return Ok(false);
    };
    let Some(g) = grad
        .downcast::<PyArrayDyn<T>>()
        .ok()
        .and_then(|g| g.try_readonly().ok())
    else {
        return Ok(false);
    };
    let mut vmax = match vmax {
        Some(x) => match writable::<T>(x) {
            Some(x) => Some(x),
            None => return Ok(false),
        },
        None => None,
    };
    let shape = g.shape().to_vec();
    if p.shape() != shape
        || m.shape() != shape
        || v.shape() != shape
        || vmax.as_ref().is_some_and(|x| x.shape() != shape)
    {
        return Ok(false);
    }
    let (Some(ps), Some(gs), Some(ms), Some(vs)) = (
        c_slice_mut(&mut p),
        c_slice(&g),
        c_slice_mut(&mut m),
        c_slice_mut(&mut v),
    ) else {
        return Ok(false);
    };
    let xs = match vmax.as_mut() {
        Some(x) => match c_slice_mut(x) {
            Some(s) => Some(s),
            None => return Ok(false),
        },
        None => None,
    };
    rk::adam_step(&rk::Adam::from(a), ps, gs, ms, vs, xs);
    Ok(true)
}

/// max_pool2d over a C-contiguous float32/float64 (N, C, H, W) array: the (N, C, OH, OW)
/// maxima and their flat indices in each (H, W) plane (int64), by torch's CPU kernel's rules:
/// padding never wins, a NaN always does (the last one in a window), ties keep the first, and
/// a window with nothing above -inf points at its first in-bounds element. None when the array
/// does not qualify.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn _max_pool2d<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    kernel: rk::Pair,
    stride: rk::Pair,
    padding: rk::Pair,
    dilation: rk::Pair,
    out: rk::Pair,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let geometry = rk::Window {
        kernel,
        stride,
        padding,
        dilation,
        out,
    };
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        return max_pool::<f32>(py, a, &geometry);
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        return max_pool::<f64>(py, a, &geometry);
    }
    Ok(None)
}

fn max_pool<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    x: &Bound<'py, PyArrayDyn<T>>,
    w: &rk::Window,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let x = x.readonly();
    let Some(xs) = c_slice(&x) else {
        return Ok(None);
    };
    let &[n, c, h, wd] = x.shape() else {
        return Ok(None);
    };
    if w.dilation.0 == 0 || w.dilation.1 == 0 || w.kernel.0 == 0 || w.kernel.1 == 0 {
        return Ok(None);
    }
    if h * wd == 0 {
        return Ok(None); // torch refuses empty planes; the op says so
    }
    let (vals, idx) = rk::max_pool2d(xs, n * c, (h, wd), w);
    let shape = [n, c, w.out.0, w.out.1];
    Ok(Some((shaped(py, &shape, vals)?, shaped(py, &shape, idx)?)))
}

/// The gradient of max_pool2d: zeros of `shape` (N, C, H, W) with each (N, C, OH, OW) entry
/// of the C-contiguous float32/float64 `grad` added at its plane's flat index. None when the
/// arrays do not qualify.
#[pyfunction]
pub fn _max_pool2d_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    shape: Vec<usize>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Ok(indices) = indices.downcast::<PyArrayDyn<i64>>() else {
        return Ok(None);
    };
    if let Ok(g) = grad.downcast::<PyArrayDyn<f32>>() {
        return scatter_planes::<f32>(py, g, indices, shape);
    }
    if let Ok(g) = grad.downcast::<PyArrayDyn<f64>>() {
        return scatter_planes::<f64>(py, g, indices, shape);
    }
    Ok(None)
}

fn scatter_planes<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    grad: &Bound<'py, PyArrayDyn<T>>,
    indices: &Bound<'py, PyArrayDyn<i64>>,
    shape: Vec<usize>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (g, ix) = (grad.readonly(), indices.readonly());
    let (Some(gs), Some(is)) = (c_slice(&g), c_slice(&ix)) else {
        return Ok(None);
    };
    let &[n, c, h, w] = shape.as_slice() else {
        return Ok(None);
    };
    let gshape = g.shape();
    if gshape.len() != 4 || gshape[0] != n || gshape[1] != c || ix.shape() != gshape {
        return Ok(None);
    }
    let (hw, per_plane) = (h * w, gshape[2] * gshape[3]);
    let mut out = vec![T::of(0.0); n * c * hw];
    rk::max_pool2d_backward(gs, is, per_plane, &mut out, hw);
    shaped(py, &shape, out).map(Some)
}

/// softmax (`log`: log_softmax) over the last dim of a C-contiguous float32/float64 array, in
/// torch's CPU order: the row's max m, e = exp(x - m), then e / sum(e) as e * (1 / sum), or
/// (x - m) - ln sum; the GIL released and the rows split over Rayon's threads from
/// `PAR_MIN_ELEMS` elements on. None for other arrays (the op's NumPy formulation runs).
#[pyfunction]
pub fn _softmax<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    log: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        return softmax::<f32>(py, a, log);
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        return softmax::<f64>(py, a, log);
    }
    Ok(None)
}

fn softmax<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyArrayDyn<T>>,
    log: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let a = a.readonly();
    let (Some(xs), Some(&n)) = (c_slice(&a), a.shape().last()) else {
        return Ok(None);
    };
    if n == 0 {
        return Ok(None);
    }
    let mut out = vec![T::of(0.0); xs.len()];
    let threads = rk::default_threads();
    py.allow_threads(|| {
        rk::split_units(&mut out, n, threads, |first, o| {
            rk::softmax_rows(&xs[first..][..o.len()], o, n, log)
        })
    });
    shaped(py, a.shape(), out).map(Some)
}

/// The gradient of `_softmax` over the last dim from the output y and the incoming gradient g
/// (C-contiguous, one shape, float32/float64); None for other arrays.
#[pyfunction]
pub fn _softmax_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    log: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let (Ok(g), Ok(y)) = (
        grad.downcast::<PyArrayDyn<f32>>(),
        out.downcast::<PyArrayDyn<f32>>(),
    ) {
        return softmax_backward::<f32>(py, g, y, log);
    }
    if let (Ok(g), Ok(y)) = (
        grad.downcast::<PyArrayDyn<f64>>(),
        out.downcast::<PyArrayDyn<f64>>(),
    ) {
        return softmax_backward::<f64>(py, g, y, log);
    }
    Ok(None)
}

fn softmax_backward<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    g: &Bound<'py, PyArrayDyn<T>>,
    y: &Bound<'py, PyArrayDyn<T>>,
    log: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (g, y) = (g.readonly(), y.readonly());
    let (Some(gs), Some(ys), Some(&n)) = (c_slice(&g), c_slice(&y), y.shape().last()) else {
        return Ok(None);
    };
    if g.shape() != y.shape() || n == 0 {
        return Ok(None);
    }
    let mut res = vec![T::of(0.0); ys.len()];
    let threads = rk::default_threads();
    py.allow_threads(|| {
        rk::split_units(&mut res, n, threads, |first, o| {
            let span = first..first + o.len();
            rk::softmax_backward_rows(&gs[span.clone()], &ys[span], o, n, log)
        })
    });
    shaped(py, y.shape(), res).map(Some)
}

/// x ** 3 as (x x) x, or x ** -2 as 1 / (x x) (torch's pow kernel's products, bit for bit), of a
/// C-contiguous float32/float64 array in one pass; None for other arrays or exponents.
#[pyfunction]
pub fn _powi<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    exponent: i64,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(p) = rk::SmallPow::of(exponent) else {
        return Ok(None);
    };
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        return Ok(Some(fresh_f32(py, a.shape(), |o| rk::powi_f32(xs, p, o))));
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        return fresh_vec(py, a.shape(), xs.len(), |o| rk::powi_f64(xs, p, o)).map(Some);
    }
    Ok(None)
}

/// A new C-contiguous array of `shape` whose every element `fill` (a kernel) writes with the
/// GIL released (the kernels may split the work over Rayon's threads meanwhile): NumPy's
/// uninitialized allocation, as in `fresh_f32`.
/// Below this many elements a kernel runs with the GIL held.
const RELEASE_MIN_ELEMS: usize = 4096;

fn fresh_released<'py, T: numpy::Element + Send>(
    py: Python<'py>,
    shape: &[usize],
    fill: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T] + Send,
) -> Bound<'py, PyAny> {
    // SAFETY: as in `fresh_f32`: a new C-contiguous array nothing else references yet, whose
    // slots `fill` returns initialized before Python sees the array; no Python object is
    // touched while the GIL is released.
    let arr = unsafe { PyArrayDyn::<T>::new(py, shape, false) };
    let slots =
        unsafe { std::slice::from_raw_parts_mut(arr.data() as *mut MaybeUninit<T>, arr.len()) };
    let n = slots.len();
    // releasing the GIL costs about what a pass over a few thousand elements does
    let written = if n < RELEASE_MIN_ELEMS {
        fill(slots).len()
    } else {
        py.allow_threads(move || fill(slots).len())
    };
    assert_eq!(written, n, "fresh_released: a kernel left slots unwritten");
    arr.into_any()
}

/// A new C-contiguous array of `shape` whose elements `work(first, chunk)` writes (a kernel over
/// the input elements from `first` on, returning the chunk's slots initialized), with the GIL
/// released and split over Rayon's threads in runs of whole `unit`s from `PAR_MIN_ELEMS`
/// elements on (`rk::split_units`); for kernels whose result does not depend on the split.
fn fresh_split<'py, T: numpy::Element + Send>(
    py: Python<'py>,
    shape: &[usize],
    unit: usize,
    work: impl for<'o> Fn(usize, &'o mut [MaybeUninit<T>]) -> &'o mut [T] + Sync + Send,
) -> Bound<'py, PyAny> {
    let threads = rk::default_threads();
    fresh_released(py, shape, move |o| {
        rk::split_units(o, unit, threads, |first, c| {
            let n = c.len();
            assert_eq!(
                work(first, c).len(),
                n,
                "fresh_split: a kernel left slots unwritten"
            );
        });
        // SAFETY: every chunk's slots were returned initialized (checked above), and the
        // chunks tile `o`.
        unsafe { &mut *(o as *mut [MaybeUninit<T>] as *mut [T]) }
    })
}

/// Python ints as sizes; None if one is negative.
fn sizes<const N: usize>(v: [i64; N]) -> Option<[usize; N]> {
    let mut out = [0; N];
    for (o, x) in out.iter_mut().zip(v) {
        *o = usize::try_from(x).ok()?;
    }
    Some(out)
}

/// im2col of a C-contiguous float32/float64 (N, C, H, W) array, as `_ops/conv.py`'s `im2col`
/// (and the CUDA backend's kernel) computes it, bit for bit: a new (N, C, kh, kw, OH, OW) array
/// of every output position's window elements, or (C, kh, kw, N, OH, OW) with
/// `channels_first`, `fill` where a window reaches into the padding (top, bottom, left, right).
/// Computed with the GIL released, split over Rayon's threads above `PAR_MIN_ELEMS` output
/// elements. None for other arrays, or a geometry with an empty output or a size below 1.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn _im2col<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    kernel: (i64, i64),
    dilation: (i64, i64),
    pads: (i64, i64, i64, i64),
    stride: (i64, i64),
    fill: f64,
    channels_first: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (Some([kh, kw, dh, dw, sh, sw]), Some([pt, pb, pl, pr])) = (
        sizes([
            kernel.0, kernel.1, dilation.0, dilation.1, stride.0, stride.1,
        ]),
        sizes([pads.0, pads.1, pads.2, pads.3]),
    ) else {
        return Ok(None);
    };
    let geometry = |shape: &[usize]| {
        let &[n, c, h, w] = shape else {
            return None;
        };
        rk::Unfold::new(
            n,
            c,
            (h, w),
            (kh, kw),
            (dh, dw),
            (sh, sw),
            (pt, pb, pl, pr),
            channels_first,
        )
    };
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        return Ok(im2col_of(py, a, geometry, fill as f32));
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        return Ok(im2col_of(py, a, geometry, fill));
    }
    Ok(None)
}

fn im2col_of<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyArrayDyn<T>>,
    geometry: impl Fn(&[usize]) -> Option<rk::Unfold>,
    fill: T,
) -> Option<Bound<'py, PyAny>> {
    let a = a.readonly();
    let xs = c_slice(&a)?;
    let g = geometry(a.shape())?;
    let (n, c, (kh, kw), (oh, ow)) = (g.batch, g.channels, g.kernel, g.out);
    let shape = if g.channels_first {
        [c, kh, kw, n, oh, ow]
    } else {
        [n, c, kh, kw, oh, ow]
    };
    let threads = rk::default_threads();
    Some(fresh_released(py, &shape, |o| {
        rk::im2col(xs, &g, fill, o, threads)
    }))
}

/// col2im, im2col's adjoint, of a C-contiguous float32/float64 array of blocks, (N, C, kh, kw,
/// OH, OW) or with `channels_first` (C, kh, kw, N, OH, OW), as `_ops/conv.py`'s `col2im`
/// computes it, bit for bit: a new (N, C, H, W) array (`size` = (H, W)) whose every element sums
/// the block elements im2col would have copied from it, padding (top, bottom, left, right)
/// dropped. Computed with the GIL released, split over images above `PAR_MIN_ELEMS` elements.
/// None for other arrays, or blocks that do not fit in the padded image.
#[pyfunction]
pub fn _col2im<'py>(
    py: Python<'py>,
    cols: &Bound<'py, PyAny>,
    size: (i64, i64),
    dilation: (i64, i64),
    pads: (i64, i64, i64, i64),
    stride: (i64, i64),
    channels_first: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (Some([h, w, dh, dw, sh, sw]), Some([pt, pb, pl, pr])) = (
        sizes([size.0, size.1, dilation.0, dilation.1, stride.0, stride.1]),
        sizes([pads.0, pads.1, pads.2, pads.3]),
    ) else {
        return Ok(None);
    };
    let geometry = |shape: &[usize]| {
        let (n, c, kh, kw, oh, ow) = match (channels_first, shape) {
            (false, &[n, c, kh, kw, oh, ow]) | (true, &[c, kh, kw, n, oh, ow]) => {
                (n, c, kh, kw, oh, ow)
            }
            _ => return None,
        };
        let g = rk::Unfold {
            batch: n,
            channels: c,
            size: (h, w),
            kernel: (kh, kw),
            dilation: (dh, dw),
            stride: (sh, sw),
            pads: (pt, pb, pl, pr),
            out: (oh, ow),
            channels_first,
        };
        g.is_valid().then_some(g)
    };
    if let Ok(a) = cols.downcast::<PyArrayDyn<f32>>() {
        return Ok(col2im_of(py, a, geometry));
    }
    if let Ok(a) = cols.downcast::<PyArrayDyn<f64>>() {
        return Ok(col2im_of(py, a, geometry));
    }
    Ok(None)
}

fn col2im_of<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyArrayDyn<T>>,
    geometry: impl Fn(&[usize]) -> Option<rk::Unfold>,
) -> Option<Bound<'py, PyAny>> {
    let a = a.readonly();
    let cs = c_slice(&a)?;
    let g = geometry(a.shape())?;
    let shape = [g.batch, g.channels, g.size.0, g.size.1];
    let threads = rk::default_threads();
    Some(fresh_released(py, &shape, |o| {
        rk::col2im(cs, &g, o, threads)
    }))
}

/// A float array argument as a C-contiguous slice of `T`: Ok(None) for an absent one, Err(())
/// for one that does not qualify (another dtype, strided, misaligned).
type Param<'py, T> = Result<Option<numpy::PyReadonlyArrayDyn<'py, T>>, ()>;

fn param<'py, T: numpy::Element>(a: Option<&Bound<'py, PyAny>>) -> Param<'py, T> {
    match a {
        None => Ok(None),
        Some(a) => match a.downcast::<PyArrayDyn<T>>() {
            Ok(a) => {
                let r = a.try_readonly().map_err(|_| ())?;
                if c_slice(&r).is_none() {
                    return Err(());
                }
                Ok(Some(r))
            }
            Err(_) => Err(()),
        },
    }
}

/// layer_norm over the last dim of a C-contiguous float32/float64 array, times `weight` plus
/// `bias` (each of the last dim's length, same dtype, or None), in one pass per row with the
/// row's statistics in float64 (the CUDA kernel's formulas; `rustgrad-kernels`'
/// `layer_norm_rows`), the GIL released and split over Rayon's threads above
/// `PAR_MIN_ELEMS` elements. With `stats`, the answer is (y, statistics): each row's float64
/// (mean, rstd) as an (N, 2) array, for `_layer_norm_backward`. None for other arrays.
#[pyfunction]
#[pyo3(signature = (x, weight, bias, eps, stats=false))]
pub fn _layer_norm<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    weight: Option<&Bound<'py, PyAny>>,
    bias: Option<&Bound<'py, PyAny>>,
    eps: f64,
    stats: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if x.downcast::<PyArrayDyn<f32>>().is_ok() {
        return Ok(layer_norm_of::<f32>(py, x, weight, bias, eps, stats));
    }
    if x.downcast::<PyArrayDyn<f64>>().is_ok() {
        return Ok(layer_norm_of::<f64>(py, x, weight, bias, eps, stats));
    }
    Ok(None)
}

fn layer_norm_of<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    weight: Option<&Bound<'py, PyAny>>,
    bias: Option<&Bound<'py, PyAny>>,
    eps: f64,
    want_stats: bool,
) -> Option<Bound<'py, PyAny>> {
    let a = x.downcast::<PyArrayDyn<T>>().ok()?.try_readonly().ok()?;
    let xs = c_slice(&a)?;
    let d = *a.shape().last()?;
    let (w, b) = (param::<T>(weight).ok()?, param::<T>(bias).ok()?);
    let (ws, bs) = (w.as_ref().and_then(c_slice), b.as_ref().and_then(c_slice));
    if d == 0 || ws.is_some_and(|s| s.len() != d) || bs.is_some_and(|s| s.len() != d) {
        return None;
    }
    let threads = rk::default_threads();
    if !want_stats {
        return Some(fresh_released(py, a.shape(), |o| {
            rk::layer_norm_rows(xs, ws, bs, eps, d, o, None, threads).0
        }));
    }
    let rows = xs.len() / d;
    // SAFETY: `layer_norm_rows` writes every slot of both (checked below) before
    // Python sees either array.
    let (y, y_slots) = unsafe { uninit_array::<T>(py, a.shape()) };
    let (st, st_slots) = unsafe { uninit_array::<f64>(py, &[rows, 2]) };
    let n = xs.len();
    let written = py.allow_threads(move || {
        let (o, s) = rk::layer_norm_rows(xs, ws, bs, eps, d, y_slots, Some(st_slots), threads);
        (o.len(), s.map_or(0, |s| s.len()))
    });
    assert_eq!(written, (n, 2 * rows), "layer_norm: slots left unwritten");
    // a tuple of two arrays: converting it cannot fail
    (y, st).into_pyobject(py).ok().map(|t| t.into_any())
}

/// `_layer_norm_backward`'s answer: (dx, xhat or None).
type GradAndXhat<'py> = (Bound<'py, PyAny>, Option<Bound<'py, PyAny>>);

/// The input gradient of `_layer_norm` (no bias needed) for the incoming gradient `grad`, and
/// with `want_xhat` the normalized input (x - mean) * rstd for the weight's gradient, as
/// (dx, xhat or None); float64 statistics, GIL released and threads as `_layer_norm`. None for
/// arrays that do not qualify (dtypes or shapes that differ, strided). `stats`, the statistics
/// `_layer_norm(..., stats=True)` gave for this x and eps, saves computing them again.
#[pyfunction]
#[pyo3(signature = (grad, x, weight, eps, want_xhat, stats=None))]
pub fn _layer_norm_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    weight: Option<&Bound<'py, PyAny>>,
    eps: f64,
    want_xhat: bool,
    stats: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<GradAndXhat<'py>>> {
    if x.downcast::<PyArrayDyn<f32>>().is_ok() {
        return Ok(layer_norm_backward_of::<f32>(
            py, grad, x, weight, eps, want_xhat, stats,
        ));
    }
    if x.downcast::<PyArrayDyn<f64>>().is_ok() {
        return Ok(layer_norm_backward_of::<f64>(
            py, grad, x, weight, eps, want_xhat, stats,
        ));
    }
    Ok(None)
}

/// A new C-contiguous uninitialized array of `shape`, and its slots.
///
/// # Safety
/// The slots must all be written before Python sees the array.
unsafe fn uninit_array<'py, 's, T: numpy::Element>(
    py: Python<'py>,
    shape: &[usize],
) -> (Bound<'py, PyArrayDyn<T>>, &'s mut [MaybeUninit<T>]) {
    // SAFETY: a new C-contiguous array that nothing else references yet; the caller writes
    // every slot before Python sees it.
    let arr = unsafe { PyArrayDyn::<T>::new(py, shape, false) };
    let slots =
        unsafe { std::slice::from_raw_parts_mut(arr.data() as *mut MaybeUninit<T>, arr.len()) };
    (arr, slots)
}

fn layer_norm_backward_of<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    weight: Option<&Bound<'py, PyAny>>,
    eps: f64,
    want_xhat: bool,
    stats: Option<&Bound<'py, PyAny>>,
) -> Option<GradAndXhat<'py>> {
    let a = x.downcast::<PyArrayDyn<T>>().ok()?.try_readonly().ok()?;
    let g = grad.downcast::<PyArrayDyn<T>>().ok()?.try_readonly().ok()?;
    let (xs, gs) = (c_slice(&a)?, c_slice(&g)?);
    let d = *a.shape().last()?;
    let w = param::<T>(weight).ok()?;
    let ws = w.as_ref().and_then(c_slice);
    if d == 0 || g.shape() != a.shape() || ws.is_some_and(|s| s.len() != d) {
        return None;
    }
    let st = match stats {
        Some(s) => Some(s.downcast::<PyArrayDyn<f64>>().ok()?.try_readonly().ok()?),
        None => None,
    };
    let sts = match st.as_ref() {
        Some(s) => Some(c_slice(s).filter(|v| v.len() == 2 * (xs.len() / d))?),
        None => None,
    };
    let threads = rk::default_threads();
    // SAFETY: `layer_norm_backward_rows` writes every slot of both (it returns them
    // initialized, checked below) before Python sees either array.
    let (dx, dx_slots) = unsafe { uninit_array::<T>(py, a.shape()) };
    let (xhat, xhat_slots) = if want_xhat {
        let (h, s) = unsafe { uninit_array::<T>(py, a.shape()) };
        (Some(h), Some(s))
    } else {
        (None, None)
    };
    let n = xs.len();
    let written = py.allow_threads(move || {
        let (o, h) =
            rk::layer_norm_backward_rows(gs, xs, ws, eps, d, dx_slots, xhat_slots, sts, threads);
        (o.len(), h.map(|h| h.len()))
    });
    assert_eq!(written.0, n, "layer_norm backward: slots left unwritten");
    Some((dx.into_any(), xhat.map(|h| h.into_any())))
}

/// What `scalar_arith` computes of an array x and a scalar s.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScalarOp {
    /// x + s
    Add,
    /// x * s
    Mul,
    /// s - x
    Rsub,
}

/// `op` of a C-contiguous float32/float64 NumPy array and a Python number, as a new array: `s`
/// is cast to the array's dtype first, as NumPy's (and torch's) weak scalars are, so each
/// element is NumPy's result bit for bit. None for any other array (the op's NumPy formulation
/// runs). This is the per-op chain's hot path, without a ufunc dispatch.
pub fn scalar_arith<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    s: f64,
    op: ScalarOp,
) -> Option<Bound<'py, PyAny>> {
    let a = x.downcast::<PyUntypedArray>().ok()?;
    if float_kind(py, a)? {
        map_untyped(py, a, move |x: f64| scalar_apply(op, x, s))
    } else {
        let s = s as f32;
        map_untyped(py, a, move |x: f32| scalar_apply(op, x, s))
    }
}

#[inline(always)]
fn scalar_apply<T: Real>(op: ScalarOp, x: T, s: T) -> T {
    match op {
        ScalarOp::Add => x + s,
        ScalarOp::Mul => x * s,
        ScalarOp::Rsub => s - x,
    }
}

/// Whether a C-contiguous, native-order NumPy array is float64 (true) or float32 (false), read
/// from its dtype's number (a typed downcast compares descriptors); None for any other array.
fn float_kind(py: Python<'_>, a: &Bound<'_, PyUntypedArray>) -> Option<bool> {
    if !a.is_c_contiguous() {
        return None;
    }
    let d = a.dtype();
    if d.is_native_byteorder() == Some(false) {
        return None;
    }
    let num = d.num();
    if num == f64::get_dtype(py).num() {
        Some(true)
    } else if num == f32::get_dtype(py).num() {
        Some(false)
    } else {
        None
    }
}

/// `f` of each element of a C-contiguous array of T (see `float_kind`), as a new array; None
/// when its data is not aligned for T.
fn map_untyped<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyUntypedArray>,
    f: impl Fn(T) -> T,
) -> Option<Bound<'py, PyAny>> {
    // SAFETY: PyUntypedArray is a PyArrayObject; its data pointer is read, not written.
    let data = unsafe { (*a.as_array_ptr()).data } as *const T;
    if !aligned(data) {
        return None;
    }
    // SAFETY: a C-contiguous, aligned array of T (the caller checked its dtype and order) read
    // under the GIL, with no Rust borrow of it alive; the output is a new array nothing else
    // references, each of its `len` slots written before Python sees it.
    unsafe {
        let xs = std::slice::from_raw_parts(data, a.len());
        let out = PyArrayDyn::<T>::new(py, a.shape(), false);
        let slots = std::slice::from_raw_parts_mut(out.data() as *mut MaybeUninit<T>, out.len());
        for (o, &x) in slots.iter_mut().zip(xs) {
            o.write(f(x));
        }
        Some(out.into_any())
    }
}

/// `a + b`, `a - b`, `a * b` or `a / b` (`op` 0 to 3) of two C-contiguous NumPy arrays of one
/// shape and one float dtype (float32 or float64), as a new array: NumPy's result bit for bit
/// (IEEE arithmetic, no broadcasting, no promotion). None for any other pair.
pub fn binary_arith<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    op: u8,
) -> Option<Bound<'py, PyAny>> {
    let a = a.downcast::<PyUntypedArray>().ok()?;
    let b = b.downcast::<PyUntypedArray>().ok()?;
    if op > 3 || a.shape() != b.shape() {
        return None;
    }
    let kind = float_kind(py, a)?;
    if float_kind(py, b)? != kind {
        return None;
    }
    if kind {
        pair_with::<f64>(py, a, b, op)
    } else {
        pair_with::<f32>(py, a, b, op)
    }
}

fn pair_with<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyUntypedArray>,
    b: &Bound<'py, PyUntypedArray>,
    op: u8,
) -> Option<Bound<'py, PyAny>> {
    // SAFETY: PyUntypedArray is a PyArrayObject; the data pointers are read, not written.
    let (pa, pb) = unsafe {
        (
            (*a.as_array_ptr()).data as *const T,
            (*b.as_array_ptr()).data as *const T,
        )
    };
    if !aligned(pa) || !aligned(pb) {
        return None;
    }
    // SAFETY: two C-contiguous, aligned arrays of T and of one length (checked by the caller),
    // read under the GIL with no Rust borrow of them alive; the output is a new array nothing
    // else references, each of its slots written before Python sees it.
    unsafe {
        let n = a.len();
        let (xs, ys) = (
            std::slice::from_raw_parts(pa, n),
            std::slice::from_raw_parts(pb, n),
        );
        let out = PyArrayDyn::<T>::new(py, a.shape(), false);
        let slots = std::slice::from_raw_parts_mut(out.data() as *mut MaybeUninit<T>, n);
        let pairs = slots.iter_mut().zip(xs.iter().zip(ys));
        match op {
            0 => pairs.for_each(|(o, (&x, &y))| {
                o.write(x + y);
            }),
            1 => pairs.for_each(|(o, (&x, &y))| {
                o.write(x - y);
            }),
            2 => pairs.for_each(|(o, (&x, &y))| {
                o.write(x * y);
            }),
            _ => pairs.for_each(|(o, (&x, &y))| {
                o.write(x / y);
            }),
        }
        Some(out.into_any())
    }
}

/// `sqrt`, `reciprocal` (1 / x) or `log` (`op` 0 to 2) of a C-contiguous float32/float64 NumPy
/// array, as a new array, without NumPy's floating-point warnings (torch computes NaN and inf
/// silently): sqrt and 1 / x are IEEE's (NumPy's bit for bit), log the platform's (within an
/// ulp of NumPy's). None for any other array.
#[pyfunction]
pub fn _unary<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    op: u8,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Ok(a) = x.downcast::<PyUntypedArray>() else {
        return Ok(None);
    };
    let Some(kind) = float_kind(py, a) else {
        return Ok(None);
    };
    Ok(match (kind, op) {
        (true, 0) => map_untyped(py, a, f64::sqrt),
        (true, 1) => map_untyped(py, a, |v: f64| 1.0 / v),
        (true, 2) => map_untyped(py, a, f64::ln),
        (false, 0) => map_untyped(py, a, f32::sqrt),
        (false, 1) => map_untyped(py, a, |v: f32| 1.0 / v),
        (false, 2) => map_untyped(py, a, f32::ln),
        _ => None,
    })
}
