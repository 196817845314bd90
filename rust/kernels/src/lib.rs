//! rustgrad-kernels: the CPU kernels rustgrad runs where NumPy has no routine or a slow one,
//! as functions over slices. No Python and no NumPy here: the binding (`rust/python`,
//! `kernels.rs`) checks the arrays (dtype, C-contiguity, alignment, shapes) and calls these; the
//! cargo tests and benches call them directly.
//!
//! What is here, and why each exists:
//! - [`erf_f32`], [`erf_slice_f32`], [`erf_f64`]: NumPy has no erf, and exact GELU needs one
//!   on every forward and backward. float32 by a branch-free polynomial that vectorizes (within
//!   1.5e-7 of the exact value), float64 by libm, as torch's `std::erf`; [`exp_f32`], the
//!   float32 exp of erf, GELU's gradient and softmax, vectorizes likewise.
//! - [`gelu_f32`], [`gelu_f64`], [`gelu_backward_f32`], [`gelu_backward_f64`]: exact GELU and its
//!   gradient in one pass; in NumPy each is several temporaries around the missing erf.
//! - [`powi_f32`], [`powi_f64`]: `x ** 3` and `x ** -2` as torch's pow kernel multiplies them
//!   (`(x x) x`, `1 / (x x)`), bit for bit; NumPy's `power` rounds differently.
//! - [`select`], [`select_scalar`]: `where(mask, a, b)` as a branch-free blend; NumPy's `where`
//!   branches per element, ~5 ns on a random mask (a relu's).
//! - [`relu_f32`], [`relu_f64`]: ReLU with torch's signed zero (`x < 0 ? 0 : x`), one pass;
//!   NumPy's `maximum(x, 0)` turns -0 into +0 and dispatches its NaN checks per element.
//! - [`threshold_backward`]: ReLU's gradient from its output in one branch-free pass; NumPy's
//!   formulation makes two masks (`result <= 0`, its negation) and a `where`.
//! - [`softmax_rows`], [`softmax_backward_rows`]: softmax and log_softmax over the last dim and
//!   their gradients, in torch's CPU order (max, exp, 16-lane partial sums), one pass per row
//!   instead of NumPy's several reductions and temporaries.
//! - [`layer_norm_rows`], [`layer_norm_backward_rows`]: layer_norm over the last dim and its
//!   input gradient, one pass per row with the row's statistics in float64 (the CUDA kernels'
//!   formulas), instead of NumPy's ~8 (forward) and ~20 (backward) whole-array passes.
//! - [`sgd_step`], [`adam_step`]: one optimizer step over one parameter, in place and in one
//!   pass, with exactly the roundings of the NumPy formulations in `optim/sgd.py` and
//!   `optim/adam.py` (which allocate a temporary per operation).
//! - [`max_pool2d`], [`max_pool2d_backward`]: max-pooling with torch's indices and NaN rules;
//!   NumPy has no windowed argmax; a strided view with `argmax` takes a window's first NaN
//!   where torch takes the last, and a padded copy lets the padding win an all -inf window.
//! - [`im2col`], [`col2im`]: the convolution's unfold and its adjoint in one pass, split over
//!   threads (Rayon) above a size threshold; NumPy's formulation is a padded copy and one
//!   strided copy (or add) per kernel offset, on one thread.
//! - [`index_add_rows`]: embedding's gradient, rows added at indices in order; NumPy's
//!   `add.at` dispatches per element, ~90x slower on 1,024 rows of 128.
//!
//! SIMD: the hot float32 loops are compiled again with `#[target_feature]` for AVX-512F and for
//! AVX2+FMA and picked at run time ([`Isa`]); every path computes the same roundings (Rust never
//! contracts `a * b + c` into an FMA, and `mul_add` is fused on every path), so the paths agree
//! bit for bit, which the tests check on each path the CPU has ([`with_isa_cap`]).
//!
//! The elementwise kernels write a caller's uninitialized buffer and return it initialized:
//!
//! ```
//! use std::mem::MaybeUninit;
//!
//! let xs = [0.0f32, 1.0, -2.0];
//! let mut slots = [MaybeUninit::uninit(); 3];
//! let ys = rustgrad_kernels::gelu_f32(&xs, &mut slots);
//! assert_eq!(ys[0], 0.0);
//! assert!((ys[1] - 0.841_344_7).abs() < 1e-6);
//! // or into a new Vec
//! let v = rustgrad_kernels::filled_vec(xs.len(), |o| rustgrad_kernels::erf_slice_f32(&xs, o));
//! assert_eq!(v[0], 0.0);
//! ```

mod elementwise;
mod im2col;
mod index;
mod isa;
mod norm;
mod optim;
mod pool;
mod real;
mod softmax;

pub use elementwise::{
    erf_exp_f32, erf_f32, erf_f64, erf_slice_f32, exp_f32, filled_vec, gelu_backward_f32,
    gelu_backward_f64, gelu_f32, gelu_f64, powi_f32, powi_f64, relu_f32, relu_f64, select,
    select_scalar, sigmoid_f32, sigmoid_f64, threshold_backward, SmallPow,
};
pub use im2col::{col2im, default_threads, im2col, Unfold, PAR_MIN_ELEMS};
pub use index::index_add_rows;
pub use isa::{with_isa_cap, Isa};
pub use norm::{layer_norm_backward_rows, layer_norm_rows, split_units};
pub use optim::{adam_step, sgd_step, Adam, Sgd};
pub use pool::{max_pool2d, max_pool2d_backward, Pair, Window};
pub use real::Real;
pub use softmax::{softmax_backward_rows, softmax_rows};
