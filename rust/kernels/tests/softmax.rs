//! softmax / log_softmax rows and their gradients against a plain scalar reference written
//! here (torch's order: the max and the sum as 16 running lanes, then the tail), bit for bit on
//! every instruction set the CPU has (any NaN matching any NaN), at row lengths that leave every
//! tail size; float32 and float64. Against float64 math, on rows of spread ~ +-18: float32
//! softmax within 4e-6 relative plus 1e-30 absolute (mostly the rounding of x - m, which exp
//! turns into |x - m| 6e-8 relative: ~2.3e-6 measured), log_softmax within 4e-6 absolute plus
//! 1 ulp of the result; every row of softmax sums to 1, and every row of either gradient to 0,
//! within 1e-5 (scaled by the gradient's size).

mod common;

use common::*;
use proptest::prelude::*;
use rustgrad_kernels::*;

/// `f` over 16 running lanes (element i into lane i mod 16), the lanes folded in order, then
/// the elements past the last full block of 16 one by one.
fn lanes<T: Float>(xs: &[T], init: T, f: impl Fn(T, T) -> T) -> T {
    let full = xs.len() / 16 * 16;
    let mut acc = [init; 16];
    for (i, &v) in xs[..full].iter().enumerate() {
        acc[i % 16] = f(acc[i % 16], v);
    }
    let mut total = init;
    for a in acc {
        total = f(total, a);
    }
    for &v in &xs[full..] {
        total = f(total, v);
    }
    total
}

fn softmax_ref<T: Float>(xs: &[T], n: usize, log: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(xs.len());
    for row in xs.chunks(n) {
        let m = lanes(
            row,
            T::of(f64::NEG_INFINITY),
            |a, v| if v > a { v } else { a },
        );
        let e: Vec<T> = row.iter().map(|&v| (v - m).exp_k()).collect();
        let sum = lanes(&e, T::of(0.0), |a, v| a + v);
        if log {
            let ln_sum = sum.ln();
            out.extend(row.iter().map(|&v| (v - m) - ln_sum));
        } else {
            let inv = T::of(1.0) / sum;
            out.extend(e.iter().map(|&e| e * inv));
        }
    }
    out
}

fn softmax_backward_ref<T: Float>(gs: &[T], ys: &[T], n: usize, log: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(gs.len());
    for (g, y) in gs.chunks(n).zip(ys.chunks(n)) {
        if log {
            let s = lanes(g, T::of(0.0), |a, v| a + v);
            out.extend(g.iter().zip(y).map(|(&gi, &yi)| gi - yi.exp_k() * s));
        } else {
            let gy: Vec<T> = g.iter().zip(y).map(|(&gi, &yi)| gi * yi).collect();
            let s = lanes(&gy, T::of(0.0), |a, v| a + v);
            out.extend(g.iter().zip(y).map(|(&gi, &yi)| (gi - s) * yi));
        }
    }
    out
}

fn forward<T: Float>(xs: &[T], n: usize, log: bool) -> Vec<T> {
    let mut out = vec![T::of(0.0); xs.len()];
    softmax_rows(xs, &mut out, n, log);
    out
}

fn backward<T: Float>(gs: &[T], ys: &[T], n: usize, log: bool) -> Vec<T> {
    let mut out = vec![T::of(0.0); gs.len()];
    softmax_backward_rows(gs, ys, &mut out, n, log);
    out
}

/// Forward and backward of `rows` rows of `n`, both flavours, on every instruction set.
fn check<T: Float>(xs: &[T], gs: &[T], n: usize, what: &str) {
    for log in [false, true] {
        let want_y = softmax_ref(xs, n, log);
        let want_g = softmax_backward_ref(gs, &want_y, n, log);
        on_every_isa(|isa| {
            let at = format!("{what} n={n} log={log} {isa:?}");
            assert_same(&forward(xs, n, log), &want_y, &format!("forward {at}"));
            assert_same(
                &backward(gs, &want_y, n, log),
                &want_g,
                &format!("backward {at}"),
            );
        });
    }
}

#[test]
fn every_row_length_matches_the_scalar_reference() {
    for (k, &n) in LENS.iter().enumerate().filter(|(_, &n)| n > 0) {
        for rows in [1, 3] {
            let seed = (k * 10 + rows) as u64;
            check(
                &sample::<f32>(rows * n, seed, 4.0),
                &sample::<f32>(rows * n, seed + 1, 1.0),
                n,
                "f32",
            );
            check(
                &sample::<f64>(rows * n, seed, 4.0),
                &sample::<f64>(rows * n, seed + 1, 1.0),
                n,
                "f64",
            );
        }
    }
}

#[test]
fn specials_at_every_position_match_the_scalar_reference() {
    for &s in &SPECIALS {
        for at in 0..33 {
            let mut xs = sample::<f32>(66, at as u64, 3.0);
            xs[at] = s as f32;
            check(&xs, &sample::<f32>(66, 1, 1.0), 33, &format!("{s} at {at}"));
            let mut xs = sample::<f64>(66, at as u64, 3.0);
            xs[at] = s;
            check(&xs, &sample::<f64>(66, 1, 1.0), 33, &format!("{s} at {at}"));
        }
    }
}

#[test]
fn masked_entries_nan_and_infinities() {
    let ninf = f32::NEG_INFINITY;
    for n in [1usize, 7, 16, 17, 33] {
        // -inf entries (a mask) give exactly 0, and -inf in log space
        let mut xs = sample::<f32>(n, 3, 2.0);
        for i in (0..n).step_by(3).skip(1) {
            xs[i] = ninf;
        }
        on_every_isa(|_| {
            let y = forward(&xs, n, false);
            let l = forward(&xs, n, true);
            for i in 0..n {
                if xs[i] == ninf {
                    assert_eq!(y[i].to_bits(), 0, "softmax of a masked entry is +0");
                    assert_eq!(l[i], ninf);
                } else {
                    assert!(y[i] > 0.0 && l[i].is_finite());
                }
            }
            // a NaN, a +inf, or nothing but -inf: the whole row is NaN (as torch's)
            for poison in [f32::NAN, f32::INFINITY] {
                let mut p = xs.clone();
                p[n / 2] = poison;
                assert!(forward(&p, n, false).iter().all(|v| v.is_nan()), "{poison}");
                assert!(forward(&p, n, true).iter().all(|v| v.is_nan()), "{poison}");
            }
            assert!(forward(&vec![ninf; n], n, false).iter().all(|v| v.is_nan()));
        });
    }
}

#[test]
fn float32_is_close_to_float64_math() {
    for &n in &[1usize, 8, 17, 33, 1000] {
        let xs = ordinary::<f32>(4 * n, n as u64, 6.0);
        let gs = ordinary::<f32>(4 * n, 1 + n as u64, 1.0);
        for row in 0..4 {
            let r = &xs[row * n..(row + 1) * n];
            let wide: Vec<f64> = r.iter().map(|&v| v as f64).collect();
            let m = wide.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = wide.iter().map(|v| (v - m).exp()).sum();
            let (y, l) = (forward(r, n, false), forward(r, n, true));
            for i in 0..n {
                let exact = (wide[i] - m).exp() / sum;
                let err = (y[i] as f64 - exact).abs();
                assert!(err <= 4e-6 * exact + 1e-30, "softmax n={n} [{i}]: {err:e}");
                let exact_l = (wide[i] - m) - sum.ln();
                let tol = 4e-6 + (exact_l.abs() * f32::EPSILON as f64);
                let err = (l[i] as f64 - exact_l).abs();
                assert!(err <= tol, "log_softmax n={n} [{i}]: {err:e}");
            }
            let total: f64 = y.iter().map(|&v| v as f64).sum();
            assert!((total - 1.0).abs() <= 1e-5, "row sum {total}");
            // the gradient is orthogonal to the constant direction: each row sums to 0
            let g = &gs[row * n..(row + 1) * n];
            let scale: f64 = g.iter().map(|v| v.abs() as f64).sum::<f64>().max(1.0);
            for (log, out) in [(false, &y), (true, &l)] {
                let d: f64 = backward(g, out, n, log).iter().map(|&v| v as f64).sum();
                assert!(d.abs() <= 1e-5 * scale, "gradient row sum {d} (log={log})");
            }
        }
    }
}

#[test]
#[should_panic(expected = "a row of 0 elements")]
fn empty_rows_are_refused() {
    softmax_rows::<f32>(&[], &mut [], 0, false);
}

#[test]
#[should_panic(expected = "not whole rows")]
fn partial_rows_are_refused() {
    softmax_rows::<f64>(&[1.0; 7], &mut [0.0; 7], 3, true);
}

fn rows_f32() -> impl Strategy<Value = (Vec<f32>, Vec<f32>, usize)> {
    (1usize..40, 1usize..4).prop_flat_map(|(n, rows)| {
        (
            proptest::collection::vec(any_f32(), n * rows),
            proptest::collection::vec(-3.0f32..3.0, n * rows),
            Just(n),
        )
    })
}

fn rows_f64() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, usize)> {
    (1usize..40, 1usize..4).prop_flat_map(|(n, rows)| {
        (
            proptest::collection::vec(any_f64(), n * rows),
            proptest::collection::vec(-3.0f64..3.0, n * rows),
            Just(n),
        )
    })
}

proptest! {
    #[test]
    fn prop_f32_rows_match_the_reference((xs, gs, n) in rows_f32()) {
        for log in [false, true] {
            let want_y = softmax_ref(&xs, n, log);
            let want_g = softmax_backward_ref(&gs, &want_y, n, log);
            for isa in Isa::available() {
                with_isa_cap(isa, || -> Result<(), TestCaseError> {
                    check_same(&forward(&xs, n, log), &want_y, "forward")?;
                    check_same(&backward(&gs, &want_y, n, log), &want_g, "backward")
                })?;
            }
        }
    }

    #[test]
    fn prop_f64_rows_match_the_reference((xs, gs, n) in rows_f64()) {
        for log in [false, true] {
            let want_y = softmax_ref(&xs, n, log);
            check_same(&forward(&xs, n, log), &want_y, "forward")?;
            check_same(&backward(&gs, &want_y, n, log), &softmax_backward_ref(&gs, &want_y, n, log), "backward")?;
        }
    }
}
