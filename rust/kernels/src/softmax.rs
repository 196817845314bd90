//! softmax and log_softmax over rows, forward and backward, in torch's CPU order.

use crate::isa::isa_copies;
use crate::{Isa, Real};

/// Lanes of the partial sums and maxima below: wide enough for AVX-512, so the reductions
/// vectorize (in the order torch's vectorized kernels use, not one running total).
const LANES: usize = 16;

/// `f` folded over `xs` as 16 running lanes (element i into lane i mod 16), the lanes folded in
/// order, then the tail past the last full 16 folded on one by one.
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

/// softmax (`log`: log_softmax) of each row of `n` elements of `xs` into `out`, in torch's
/// CPU order: the row's max m (NaN never wins it), e = exp(x - m), then e / sum(e) computed as
/// e * (1 / sum), or (x - m) - ln sum. float32 runs 16 lanes wide where the CPU has AVX-512,
/// 8 with AVX2 and FMA (the same bits: the lanes are the same 16 running sums either way).
///
/// # Panics
/// If `n` is 0, the lengths differ, or the length is not a multiple of `n`.
pub fn softmax_rows<T: Real>(xs: &[T], out: &mut [T], n: usize, log: bool) {
    check_rows(&[xs.len(), out.len()], n);
    match if T::INLINE_EXP {
        Isa::current()
    } else {
        Isa::Scalar
    } {
        // SAFETY (both): `Isa::current` never exceeds what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { softmax_rows_avx512(xs, out, n, log) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { softmax_rows_avx2(xs, out, n, log) },
        _ => softmax_rows_loop(xs, out, n, log),
    }
}

/// The gradient of [`softmax_rows`] (`log`: of log_softmax) over rows of `n`, from the
/// incoming gradient g and the output y: y (g - sum(g y)), or g - exp(y) sum(g).
///
/// # Panics
/// As [`softmax_rows`].
pub fn softmax_backward_rows<T: Real>(gs: &[T], ys: &[T], out: &mut [T], n: usize, log: bool) {
    check_rows(&[gs.len(), ys.len(), out.len()], n);
    match if T::INLINE_EXP {
        Isa::current()
    } else {
        Isa::Scalar
    } {
        // SAFETY (both): `Isa::current` never exceeds what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { softmax_backward_rows_avx512(gs, ys, out, n, log) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { softmax_backward_rows_avx2(gs, ys, out, n, log) },
        _ => softmax_backward_rows_loop(gs, ys, out, n, log),
    }
}

fn check_rows(lens: &[usize], n: usize) {
    assert!(n > 0, "softmax rows: a row of 0 elements");
    assert!(
        lens.iter().all(|&l| l == lens[0]) && lens[0].is_multiple_of(n),
        "softmax rows: lengths {lens:?} differ or are not whole rows of {n}"
    );
}

#[inline(always)]
fn softmax_rows_loop<T: Real>(xs: &[T], out: &mut [T], n: usize, log: bool) {
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

#[inline(always)]
fn softmax_backward_rows_loop<T: Real>(gs: &[T], ys: &[T], out: &mut [T], n: usize, log: bool) {
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

isa_copies!(softmax_rows_loop => softmax_rows_avx512, softmax_rows_avx2;
    (xs: &[T], out: &mut [T], n: usize, log: bool));

isa_copies!(softmax_backward_rows_loop => softmax_backward_rows_avx512, softmax_backward_rows_avx2;
    (gs: &[T], ys: &[T], out: &mut [T], n: usize, log: bool));
