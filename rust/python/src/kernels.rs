//! CPU kernels NumPy lacks, on NumPy arrays (rust-numpy): the ops call them through the CPU
//! backend (`_backends/cpu.py`), never directly.

use std::mem::MaybeUninit;

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// erf of a float32 or float64 array (any layout), as a new array of the same dtype: float32
/// by `erf_f32` (torch's CPU formula), float64 by libm (as torch's `std::erf`).
#[pyfunction]
pub fn _erf<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        if let Some(xs) = c_slice(&a) {
            return Ok(fresh_f32(py, a.shape(), |o| map_f32(xs, o, erf_f32)));
        }
        let out = a.as_array().mapv(erf_f32);
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

/// A new C-contiguous float32 array of `shape`, every element written by `fill`: NumPy's
/// uninitialized allocation, as zeroing the buffer first costs here about what an elementwise
/// pass does.
fn fresh_f32<'py>(
    py: Python<'py>,
    shape: &[usize],
    fill: impl FnOnce(&mut [MaybeUninit<f32>]),
) -> Bound<'py, PyAny> {
    // SAFETY: a new C-contiguous array that nothing else references yet; its `len` slots are
    // handed out as uninitialized memory, and `fill` writes each one before Python sees it.
    let arr = unsafe { PyArrayDyn::<f32>::new(py, shape, false) };
    let slots =
        unsafe { std::slice::from_raw_parts_mut(arr.data() as *mut MaybeUninit<f32>, arr.len()) };
    fill(slots);
    arr.into_any()
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

/// exp(x) for float32 in straight-line arithmetic, so loops over it vectorize: x = n ln2 + r
/// with |r| <= ln2/2, exp(r) by its Taylor polynomial to r^7 (error < 1e-8 relative), times
/// 2^n built in the exponent bits. Below -87 it is 0 (exp underflows there, and softmax's
/// masked -inf entries must give exactly 0); arguments above 88 are clamped (the kernels pass
/// x <= 0).
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    const C: [f32; 8] = [
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let xc = x.clamp(-87.0, 88.0);
    let m = xc * std::f32::consts::LOG2_E + MAGIC;
    let n = m - MAGIC;
    let k = (m.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = xc - n * 0.693_145_75 - n * 1.428_606_8e-6; // ln 2 split: exact products
    let p = C.iter().fold(0.0f32, |acc, &c| acc.mul_add(r, c));
    let y = p * f32::from_bits(((k + 127) << 23) as u32);
    if x < -87.0 {
        0.0
    } else {
        y
    }
}

/// erf for float32 in straight-line arithmetic (both branches computed, one kept, so loops
/// vectorize), within 1.5e-7 of the exact value (2.5 units in the last place; libm's is
/// correctly rounded but 30x slower, torch's kernel is within 1): for |x| < 1, x P(x^2); above,
/// 1 - Q(t) exp(-x^2) with t = 1 / (1 + |x|/2), which is 1 in float32 from |x| = 4 on. P and Q
/// are least-squares fits (degrees 7 and 10) to erf(x)/x and erfc(x) exp(x^2).
#[inline(always)]
fn erf_f32(x: f32) -> f32 {
    const P: [f32; 8] = [
        std::f32::consts::FRAC_2_SQRT_PI,
        -0.376_126_4,
        0.112_837_84,
        -0.026_865_53,
        0.005_221_318,
        -8.488_295e-4,
        1.129_688_5e-4,
        -9.756_356e-6,
    ];
    const Q: [f32; 11] = [
        2.798_744_7e-5,
        0.281_449_15,
        0.288_794_36,
        0.205_674_59,
        0.341_832_96,
        -0.369_798_18,
        0.845_082_4,
        -1.105_836,
        0.710_574_75,
        -0.226_041_21,
        0.028_231_66,
    ];
    let horner = |c: &[f32], v: f32| c.iter().rev().fold(0.0f32, |acc, &k| acc.mul_add(v, k));
    let ax = x.abs();
    let small = ax * horner(&P, ax * ax);
    let al = ax.min(4.0);
    let large = 1.0 - horner(&Q, 1.0 / (0.5 * al + 1.0)) * exp_f32(-(al * al));
    let y = if ax < 1.0 { small } else { large };
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

/// `out[i] = f(x[i])`, compiled again for AVX-512 and for AVX2+FMA, the widest the CPU has
/// (found at run time), so the loop runs 16 or 8 lanes wide.
fn map_f32<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { map_f32_avx512(xs, out, f) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { map_f32_avx2(xs, out, f) };
        return;
    }
    for (o, &x) in out.iter_mut().zip(xs) {
        o.write(f(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn map_f32_avx512<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    for (o, &x) in out.iter_mut().zip(xs) {
        o.write(f(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_f32_avx2<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    for (o, &x) in out.iter_mut().zip(xs) {
        o.write(f(x));
    }
}

/// Exact GELU, x Phi(x) = x/2 (1 + erf(x/sqrt 2)), of a C-contiguous float32/float64 array,
/// in one pass (float32 through `erf_f32`, float64 through libm); None for other arrays.
#[pyfunction]
pub fn _gelu<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    use std::f64::consts::FRAC_1_SQRT_2;
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        let alpha = FRAC_1_SQRT_2 as f32;
        let gelu = |x: f32| x * 0.5 * (1.0 + erf_f32(x * alpha));
        return Ok(Some(fresh_f32(py, a.shape(), |o| map_f32(xs, o, gelu))));
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        let out = xs
            .iter()
            .map(|&x| x * 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2)))
            .collect();
        return shaped(py, a.shape(), out).map(Some);
    }
    Ok(None)
}

/// The gradient of exact GELU: grad (Phi(x) + x phi(x)), phi the standard normal density, of
/// C-contiguous float32/float64 arrays of one shape, in one pass; None for other arrays.
#[pyfunction]
pub fn _gelu_backward<'py>(
    py: Python<'py>,
    grad: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    use std::f64::consts::{FRAC_1_SQRT_2, PI};
    let beta = 1.0 / (2.0 * PI).sqrt();
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
        let (alpha, beta) = (FRAC_1_SQRT_2 as f32, beta as f32);
        let grad = |g: f32, x: f32| {
            let cdf = 0.5 * (1.0 + erf_f32(x * alpha));
            let pdf = beta * exp_f32(-0.5 * x * x);
            g * (cdf + x * pdf)
        };
        return Ok(Some(fresh_f32(py, a.shape(), |o| {
            map2_f32(gs, xs, o, grad)
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
        let out = gs
            .iter()
            .zip(xs)
            .map(|(&g, &x)| {
                let cdf = 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2));
                g * (cdf + x * beta * (-0.5 * x * x).exp())
            })
            .collect();
        return shaped(py, a.shape(), out).map(Some);
    }
    Ok(None)
}

/// `out[i] = f(a[i], b[i])`, dispatched as `map_f32`.
fn map2_f32<F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    f: F,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { map2_f32_avx512(a, b, out, f) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { map2_f32_avx2(a, b, out, f) };
        return;
    }
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn map2_f32_avx512<F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    f: F,
) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map2_f32_avx2<F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    f: F,
) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
}

/// The float types the kernels below run on, with NumPy's conversion of a Python float.
trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + numpy::Element
{
    fn of(x: f64) -> Self;
    /// exp as the kernels compute it: `exp_f32` for float32, libm's for float64.
    fn exp_k(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
    /// `if keep { a } else { b }` by bit masks: a branch on a random mask mispredicts half
    /// the time, and this form vectorizes.
    fn pick(keep: bool, a: Self, b: Self) -> Self;
}

impl Real for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn exp_k(self) -> Self {
        exp_f32(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn pick(keep: bool, a: Self, b: Self) -> Self {
        let m = 0u32.wrapping_sub(keep as u32);
        f32::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
}

impl Real for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn exp_k(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn pick(keep: bool, a: Self, b: Self) -> Self {
        let m = 0u64.wrapping_sub(keep as u64);
        f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
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

fn select<'py, T: Real>(
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
        m.iter()
            .zip(x)
            .zip(y)
            .map(|((&k, &x), &y)| T::pick(k, x, y))
            .collect()
    } else if let Ok(s) = other.extract::<f64>() {
        let s = T::of(s);
        m.iter().zip(x).map(|(&k, &x)| T::pick(k, x, s)).collect()
    } else {
        return Ok(None);
    };
    let shape = a.shape().to_vec();
    let out = numpy::ndarray::Array::from_shape_vec(shape, out)
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    Ok(Some(out.into_pyarray(py).into_any()))
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

fn sgd<T: Real>(
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
    let (wd, mom, damp1, neg_lr) = (
        T::of(a.weight_decay),
        T::of(a.momentum),
        T::of(1.0 - a.dampening),
        T::of(-a.lr),
    );
    if a.momentum != 0.0 && bs.is_none() {
        return Ok(false);
    }
    let with_mom = a.momentum != 0.0;
    let mut bs = bs;
    for i in 0..ps.len() {
        let mut g = gs[i];
        if a.maximize {
            g = -g;
        }
        if a.weight_decay != 0.0 {
            g = wd * ps[i] + g;
        }
        if with_mom {
            let b = &mut bs.as_mut().expect("checked")[i];
            *b = if a.init_buffer {
                g
            } else {
                damp1 * g + *b * mom
            };
            g = if a.nesterov { mom * *b + g } else { *b };
        }
        ps[i] = neg_lr * g + ps[i];
    }
    Ok(true)
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

fn writable<'py, T: Real>(x: &Bound<'py, PyAny>) -> Option<numpy::PyReadwriteArrayDyn<'py, T>> {
    x.downcast::<PyArrayDyn<T>>()
        .ok()
        .and_then(|x| x.try_readwrite().ok())
}

fn adam<T: Real>(arrays: AdamArrays<'_, '_>, a: &AdamArgs) -> PyResult<bool> {
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
    let mut xs = match vmax.as_mut() {
        Some(x) => match c_slice_mut(x) {
            Some(s) => Some(s),
            None => return Ok(false),
        },
        None => None,
    };
    let w = 1.0 - a.beta1; // the lerp weight of exp_avg towards the gradient
    let (wd, decay) = (T::of(a.weight_decay), T::of(1.0 - a.lr * a.weight_decay));
    let (w_t, w_far) = (T::of(w), T::of(-(1.0 - w)));
    let (beta2, one_beta2) = (T::of(a.beta2), T::of(1.0 - a.beta2));
    let (bc2, eps, neg_step) = (
        T::of(a.bias_correction2_sqrt),
        T::of(a.eps),
        T::of(-a.step_size),
    );
    if !a.maximize && xs.is_none() && (a.weight_decay == 0.0 || a.decoupled) {
        // the usual Adam/AdamW: one branch-free loop, vectorized (see `adam_plain`)
        let c = AdamConsts {
            // decoupled decay multiplies by 1 - lr wd (exactly 1 without weight decay)
            decay: if a.decoupled { decay } else { T::of(1.0) },
            near: w.abs() < 0.5,
            w_t,
            w_far,
            beta2,
            one_beta2,
            bc2,
            eps,
            neg_step,
        };
        adam_plain_dispatch(ps, gs, ms, vs, &c);
        return Ok(true);
    }
    for i in 0..ps.len() {
        let mut g = gs[i];
        if a.maximize {
            g = -g;
        }
        if a.weight_decay != 0.0 {
            if a.decoupled {
                ps[i] = ps[i] * decay;
            } else {
                g = wd * ps[i] + g;
            }
        }
        // torch's lerp: two formulas, by which end the weight is nearer
        let diff = g - ms[i];
        ms[i] = if w.abs() < 0.5 {
            w_t * diff + ms[i]
        } else {
            w_far * diff + g
        };
        let vi = vs[i] * beta2;
        vs[i] = one_beta2 * g * g + vi;
        let mut second = vs[i];
        if let Some(xs) = xs.as_mut() {
            // NumPy's maximum: NaN wins
            let x = xs[i];
            xs[i] = if second.is_nan() || x < second {
                second
            } else {
                x
            };
            second = xs[i];
        }
        let denom = second.sqrt() / bc2 + eps;
        ps[i] = ps[i] + neg_step * ms[i] / denom;
    }
    Ok(true)
}

/// A pooling window's geometry: (kernel, stride, padding, dilation) per spatial dim, and the
/// output size.
type Pair = (usize, usize);

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
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    out: Pair,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let geometry = Window {
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

struct Window {
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    out: Pair,
}

impl Window {
    /// The in-bounds input rows (or columns) of output position `o` along one dim: the first
    /// one and the end, stepping by the dilation.
    fn span(o: usize, k: usize, s: usize, p: usize, d: usize, size: usize) -> (usize, usize) {
        let start = (o * s) as isize - p as isize;
        let end = (start + ((k - 1) * d) as isize + 1).min(size as isize);
        let mut first = start;
        while first < 0 {
            first += d as isize;
        }
        (first as usize, end.max(first) as usize)
    }
}

fn max_pool<'py, T: Real + numpy::Element>(
    py: Python<'py>,
    x: &Bound<'py, PyArrayDyn<T>>,
    w: &Window,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let x = x.readonly();
    let Some(xs) = c_slice(&x) else {
        return Ok(None);
    };
    let &[n, c, h, wd] = x.shape() else {
        return Ok(None);
    };
    let (oh, ow) = w.out;
    if w.dilation.0 == 0 || w.dilation.1 == 0 || w.kernel.0 == 0 || w.kernel.1 == 0 {
        return Ok(None);
    }
    if h * wd == 0 {
        return Ok(None); // torch refuses empty planes; the op says so
    }
    let planes = n * c;
    let mut vals: Vec<T> = Vec::with_capacity(planes * oh * ow);
    let mut idx: Vec<i64> = Vec::with_capacity(planes * oh * ow);
    let rows: Vec<(usize, usize)> = (0..oh)
        .map(|o| Window::span(o, w.kernel.0, w.stride.0, w.padding.0, w.dilation.0, h))
        .collect();
    let cols: Vec<(usize, usize)> = (0..ow)
        .map(|o| Window::span(o, w.kernel.1, w.stride.1, w.padding.1, w.dilation.1, wd))
        .collect();
    let neg_inf = T::of(f64::NEG_INFINITY);
    for plane in xs.chunks_exact(h * wd).take(planes) {
        for &(r0, r1) in &rows {
            for &(c0, c1) in &cols {
                let mut best = neg_inf;
                let mut at = r0 * wd + c0;
                for r in (r0..r1).step_by(w.dilation.0) {
                    for col in (c0..c1).step_by(w.dilation.1) {
                        let i = r * wd + col;
                        let v = plane[i];
                        // selects, not a branch: which element wins is data-dependent
                        let take = (v > best) | v.is_nan();
                        best = if take { v } else { best };
                        at = if take { i } else { at };
                    }
                }
                vals.push(best);
                idx.push(at as i64);
            }
        }
    }
    let shape = vec![n, c, oh, ow];
    let vals = numpy::ndarray::Array::from_shape_vec(shape.clone(), vals)
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    let idx = numpy::ndarray::Array::from_shape_vec(shape, idx)
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    Ok(Some((
        vals.into_pyarray(py).into_any(),
        idx.into_pyarray(py).into_any(),
    )))
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
    if per_plane > 0 && hw > 0 {
        for ((o, g), i) in out
            .chunks_exact_mut(hw)
            .zip(gs.chunks_exact(per_plane))
            .zip(is.chunks_exact(per_plane))
        {
            for (&v, &at) in g.iter().zip(i) {
                // a window wholly in the padding points past its plane (torch's index): it
                // passes no gradient
                if let Some(slot) = usize::try_from(at).ok().and_then(|at| o.get_mut(at)) {
                    *slot = *slot + v;
                }
            }
        }
    }
    let out = numpy::ndarray::Array::from_shape_vec(shape, out)
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    Ok(Some(out.into_pyarray(py).into_any()))
}

/// Lanes of the partial sums and maxima below: wide enough for AVX-512, so the reductions
/// vectorize (in the order torch's vectorized kernels use, not one running total).
const LANES: usize = 16;

#[inline(always)]
fn lane_fold<T: Real>(xs: &[T], init: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let mut acc = [init; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = f(*a, v);
        }
    }
    let mut total = acc.iter().fold(init, |a, &v| f(a, v));
    for &v in rest {
        total = f(total, v);
    }
    total
}

#[inline(always)]
fn softmax_rows<T: Real>(xs: &[T], out: &mut [T], n: usize, log: bool) {
    let neg_inf = T::of(f64::NEG_INFINITY);
    for (row, o) in xs.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let m = lane_fold(row, neg_inf, |a, v| if v > a { v } else { a });
        for (oi, &v) in o.iter_mut().zip(row) {
            *oi = (v - m).exp_k();
        }
        let sum = lane_fold(o, T::of(0.0), |a, v| a + v);
        if log {
            // (x - m) - ln sum, in torch's order
            let ln_sum = sum.ln();
            for (oi, &v) in o.iter_mut().zip(row) {
                *oi = (v - m) - ln_sum;
            }
        } else {
            let inv = T::of(1.0) / sum;
            for oi in o.iter_mut() {
                *oi = *oi * inv;
            }
        }
    }
}

/// The gradient of softmax (`log`: of log_softmax) over rows of n, from the output y:
/// y (g - sum(g y)), or g - exp(y) sum(g).
#[inline(always)]
fn softmax_backward_rows<T: Real>(gs: &[T], ys: &[T], out: &mut [T], n: usize, log: bool) {
    let zero = T::of(0.0);
    for ((g, y), o) in gs
        .chunks_exact(n)
        .zip(ys.chunks_exact(n))
        .zip(out.chunks_exact_mut(n))
    {
        if log {
            let s = lane_fold(g, zero, |a, v| a + v);
            for ((oi, &gi), &yi) in o.iter_mut().zip(g).zip(y) {
                *oi = gi - yi.exp_k() * s;
            }
        } else {
            for ((oi, &gi), &yi) in o.iter_mut().zip(g).zip(y) {
                *oi = gi * yi;
            }
            let s = lane_fold(o, zero, |a, v| a + v);
            for ((oi, &gi), &yi) in o.iter_mut().zip(g).zip(y) {
                *oi = (gi - s) * yi;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_rows_avx512(xs: &[f32], out: &mut [f32], n: usize, log: bool) {
    softmax_rows(xs, out, n, log)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_backward_rows_avx512(
    gs: &[f32],
    ys: &[f32],
    out: &mut [f32],
    n: usize,
    log: bool,
) {
    softmax_backward_rows(gs, ys, out, n, log)
}

fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// softmax (`log`: log_softmax) over the last dim of a C-contiguous float32/float64 array, in
/// torch's CPU order: the row's max m, e = exp(x - m), then e / sum(e) as e * (1 / sum), or
/// (x - m) - ln sum. None for other arrays (the op's NumPy formulation runs).
#[pyfunction]
pub fn _softmax<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    log: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        let (Some(xs), Some(&n)) = (c_slice(&a), a.shape().last()) else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(None);
        }
        let mut out = vec![0f32; xs.len()];
        if has_avx512() {
            // SAFETY: the CPU has the features the function is compiled for.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                softmax_rows_avx512(xs, &mut out, n, log)
            };
        } else {
            softmax_rows(xs, &mut out, n, log);
        }
        return shaped(py, a.shape(), out).map(Some);
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let a = a.readonly();
        let (Some(xs), Some(&n)) = (c_slice(&a), a.shape().last()) else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(None);
        }
        let mut out = vec![0f64; xs.len()];
        softmax_rows(xs, &mut out, n, log);
        return shaped(py, a.shape(), out).map(Some);
    }
    Ok(None)
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
        let (g, y) = (g.readonly(), y.readonly());
        let (Some(gs), Some(ys), Some(&n)) = (c_slice(&g), c_slice(&y), y.shape().last()) else {
            return Ok(None);
        };
        if g.shape() != y.shape() || n == 0 {
            return Ok(None);
        }
        let mut res = vec![0f32; ys.len()];
        if has_avx512() {
            // SAFETY: the CPU has the features the function is compiled for.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                softmax_backward_rows_avx512(gs, ys, &mut res, n, log)
            };
        } else {
            softmax_backward_rows(gs, ys, &mut res, n, log);
        }
        return shaped(py, y.shape(), res).map(Some);
    }
    if let (Ok(g), Ok(y)) = (
        grad.downcast::<PyArrayDyn<f64>>(),
        out.downcast::<PyArrayDyn<f64>>(),
    ) {
        let (g, y) = (g.readonly(), y.readonly());
        let (Some(gs), Some(ys), Some(&n)) = (c_slice(&g), c_slice(&y), y.shape().last()) else {
            return Ok(None);
        };
        if g.shape() != y.shape() || n == 0 {
            return Ok(None);
        }
        let mut res = vec![0f64; ys.len()];
        softmax_backward_rows(gs, ys, &mut res, n, log);
        return shaped(py, y.shape(), res).map(Some);
    }
    Ok(None)
}

/// Adam's per-step constants in the parameter's dtype, for `adam_plain`.
struct AdamConsts<T> {
    decay: T,
    near: bool,
    w_t: T,
    w_far: T,
    beta2: T,
    one_beta2: T,
    bc2: T,
    eps: T,
    neg_step: T,
}

/// The loop of `adam` without maximize, amsgrad or coupled weight decay, with the same
/// roundings, written without branches (both lerp formulas computed, one kept) so it
/// vectorizes: sqrt and the division, scalar, cost ~3 ns per parameter.
#[inline(always)]
fn adam_plain<T: Real>(ps: &mut [T], gs: &[T], ms: &mut [T], vs: &mut [T], c: &AdamConsts<T>) {
    for (((p, &g), m), v) in ps.iter_mut().zip(gs).zip(ms.iter_mut()).zip(vs.iter_mut()) {
        let decayed = *p * c.decay;
        let diff = g - *m;
        let near = c.w_t * diff + *m;
        let far = c.w_far * diff + g;
        let mi = if c.near { near } else { far };
        *m = mi;
        let vi = *v * c.beta2;
        let vi = c.one_beta2 * g * g + vi;
        *v = vi;
        let denom = vi.sqrt() / c.bc2 + c.eps;
        *p = decayed + c.neg_step * mi / denom;
    }
}

fn adam_plain_dispatch<T: Real>(
    ps: &mut [T],
    gs: &[T],
    ms: &mut [T],
    vs: &mut [T],
    c: &AdamConsts<T>,
) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { adam_plain_avx512(ps, gs, ms, vs, c) };
        return;
    }
    adam_plain(ps, gs, ms, vs, c);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn adam_plain_avx512<T: Real>(
    ps: &mut [T],
    gs: &[T],
    ms: &mut [T],
    vs: &mut [T],
    c: &AdamConsts<T>,
) {
    adam_plain(ps, gs, ms, vs, c)
}

/// x ** 3 as (x x) x, or x ** -2 as 1 / (x x) (torch's pow kernel's products, bit for bit), of a
/// C-contiguous float32/float64 array in one pass; None for other arrays or exponents.
#[pyfunction]
pub fn _powi<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    exponent: i64,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if exponent != 3 && exponent != -2 {
        return Ok(None);
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f32>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        let out = if exponent == 3 {
            fresh_f32(py, a.shape(), |o| map_f32(xs, o, |x| x * x * x))
        } else {
            fresh_f32(py, a.shape(), |o| map_f32(xs, o, |x| 1.0 / (x * x)))
        };
        return Ok(Some(out));
    }
    if let Ok(a) = x.downcast::<PyArrayDyn<f64>>() {
        let a = a.readonly();
        let Some(xs) = c_slice(&a) else {
            return Ok(None);
        };
        let out = if exponent == 3 {
            xs.iter().map(|&x| x * x * x).collect()
        } else {
            xs.iter().map(|&x| 1.0 / (x * x)).collect()
        };
        return shaped(py, a.shape(), out).map(Some);
    }
    Ok(None)
}
