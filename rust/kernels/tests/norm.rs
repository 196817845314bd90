//! layer_norm rows and their input gradient against a plain scalar reference written here (the
//! CUDA kernel's formulas in float64, the row sums as 8 running lanes folded in order, then the
//! tail), bit for bit on every instruction set the CPU has and on every split over threads
//! (any NaN matching any NaN), at row lengths that leave every tail size; float32 and float64.
//! Against float64 math summed in plain order: float32 results within 1 ulp.

mod common;

use common::*;
use rustgrad_kernels::*;

fn lanes(vals: impl Iterator<Item = f64>, n: usize) -> f64 {
    let v: Vec<f64> = vals.collect();
    assert_eq!(v.len(), n);
    let full = n / 8 * 8;
    let mut acc = [0.0f64; 8];
    for (i, &x) in v[..full].iter().enumerate() {
        acc[i % 8] += x;
    }
    let mut total = 0.0;
    for a in acc {
        total += a;
    }
    for &x in &v[full..] {
        total += x;
    }
    total
}

fn stats<T: Float>(x: &[T], eps: f64) -> (f64, f64) {
    let d = x.len();
    let mean = lanes(x.iter().map(|v| v.to_f64()), d) / d as f64;
    let var = lanes(
        x.iter().map(|v| {
            let c = v.to_f64() - mean;
            c * c
        }),
        d,
    ) / d as f64;
    (mean, 1.0 / (var + eps).sqrt())
}

fn forward_ref<T: Float>(xs: &[T], w: Option<&[T]>, b: Option<&[T]>, eps: f64, d: usize) -> Vec<T> {
    let mut out = Vec::new();
    for x in xs.chunks(d) {
        let (mean, rstd) = stats(x, eps);
        for (j, &v) in x.iter().enumerate() {
            let mut o = (v.to_f64() - mean) * rstd;
            if let Some(w) = w {
                o *= w[j].to_f64();
            }
            if let Some(b) = b {
                o += b[j].to_f64();
            }
            out.push(T::of(o));
        }
    }
    out
}

fn backward_ref<T: Float>(
    gs: &[T],
    xs: &[T],
    w: Option<&[T]>,
    eps: f64,
    d: usize,
) -> (Vec<T>, Vec<T>) {
    let (mut dx, mut xhat) = (Vec::new(), Vec::new());
    for (g, x) in gs.chunks(d).zip(xs.chunks(d)) {
        let (mean, rstd) = stats(x, eps);
        let gw: Vec<f64> = (0..d)
            .map(|j| g[j].to_f64() * w.map_or(1.0, |w| w[j].to_f64()))
            .collect();
        let ds = lanes((0..d).map(|j| gw[j] * x[j].to_f64()), d);
        let db = lanes(gw.iter().copied(), d);
        let n = d as f64;
        let bb = (db * mean - ds) * (rstd * rstd * rstd) / n;
        let cc = -bb * mean - db * rstd / n;
        for j in 0..d {
            dx.push(T::of(rstd * gw[j] + bb * x[j].to_f64() + cc));
            xhat.push(T::of((x[j].to_f64() - mean) * rstd));
        }
    }
    (dx, xhat)
}

fn check<T: Float>(xs: &[T], gs: &[T], w: &[T], b: &[T], d: usize, what: &str) {
    let eps = 1e-5;
    for (wo, bo) in [
        (None, None),
        (Some(w), None),
        (None, Some(b)),
        (Some(w), Some(b)),
    ] {
        let want = forward_ref(xs, wo, bo, eps, d);
        let (want_dx, want_h) = backward_ref(gs, xs, wo, eps, d);
        on_every_isa(|isa| {
            for threads in [1, 2, 3] {
                let at = format!(
                    "{what} d={d} w={} b={} {isa:?} threads={threads}",
                    wo.is_some(),
                    bo.is_some()
                );
                let got = run(xs.len(), |o| {
                    layer_norm_rows(xs, wo, bo, eps, d, o, None, threads).0
                });
                assert_same(&got, &want, &format!("forward {at}"));
                let mut dx_slots = vec![std::mem::MaybeUninit::<T>::uninit(); xs.len()];
                let mut h_slots = vec![std::mem::MaybeUninit::<T>::uninit(); xs.len()];
                let (dx, h) = layer_norm_backward_rows(
                    gs,
                    xs,
                    wo,
                    eps,
                    d,
                    &mut dx_slots,
                    Some(&mut h_slots),
                    None,
                    threads,
                );
                let (dx, h) = (dx.to_vec(), h.expect("xhat asked for").to_vec());
                assert_same(&dx, &want_dx, &format!("backward dx {at}"));
                assert_same(&h, &want_h, &format!("backward xhat {at}"));
                let dx2 = run(xs.len(), |o| {
                    layer_norm_backward_rows(gs, xs, wo, eps, d, o, None, None, threads).0
                });
                assert_same(&dx2, &want_dx, &format!("backward dx without xhat {at}"));
                // the forward's statistics handed to the backward: the same bits
                let rows = xs.len() / d;
                let mut y_slots = vec![std::mem::MaybeUninit::<T>::uninit(); xs.len()];
                let mut st_slots = vec![std::mem::MaybeUninit::<f64>::uninit(); 2 * rows];
                let (y, st) = layer_norm_rows(
                    xs,
                    wo,
                    bo,
                    eps,
                    d,
                    &mut y_slots,
                    Some(&mut st_slots),
                    threads,
                );
                assert_same(y, &want, &format!("forward with statistics {at}"));
                let st = st.expect("statistics asked for").to_vec();
                let dx3 = run(xs.len(), |o| {
                    layer_norm_backward_rows(gs, xs, wo, eps, d, o, None, Some(&st), threads).0
                });
                assert_same(&dx3, &want_dx, &format!("backward dx from statistics {at}"));
            }
        });
    }
}

#[test]
fn every_row_length_matches_the_scalar_reference() {
    for (k, &d) in LENS.iter().enumerate().filter(|(_, &n)| n > 0) {
        for rows in [1, 3] {
            let seed = (k * 10 + rows) as u64;
            let n = rows * d;
            check(
                &sample::<f32>(n, seed, 4.0),
                &sample::<f32>(n, seed + 1, 1.0),
                &ordinary::<f32>(d, seed + 2, 1.0),
                &ordinary::<f32>(d, seed + 3, 1.0),
                d,
                "f32",
            );
            check(
                &sample::<f64>(n, seed, 4.0),
                &sample::<f64>(n, seed + 1, 1.0),
                &ordinary::<f64>(d, seed + 2, 1.0),
                &ordinary::<f64>(d, seed + 3, 1.0),
                d,
                "f64",
            );
        }
    }
}

#[test]
fn large_arrays_split_over_threads_match_the_scalar_reference() {
    // above PAR_MIN_ELEMS, so threads > 1 really splits
    let d = 128;
    let n = (PAR_MIN_ELEMS / d + 3) * d;
    check(
        &ordinary::<f32>(n, 7, 3.0),
        &ordinary::<f32>(n, 8, 1.0),
        &ordinary::<f32>(d, 9, 1.0),
        &ordinary::<f32>(d, 10, 1.0),
        d,
        "f32 large",
    );
}

#[test]
fn float32_is_within_one_ulp_of_float64_math() {
    for &d in &[1usize, 7, 8, 17, 128, 1000] {
        let xs = ordinary::<f32>(4 * d, d as u64, 5.0);
        let w = ordinary::<f32>(d, 1 + d as u64, 1.0);
        let y = run(xs.len(), |o| {
            layer_norm_rows(&xs, Some(&w), None, 1e-5, d, o, None, 1).0
        });
        for (r, x) in xs.chunks(d).enumerate() {
            let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let mean = wide.iter().sum::<f64>() / d as f64;
            let var = wide.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
            let rstd = 1.0 / (var + 1e-5).sqrt();
            for j in 0..d {
                let exact = ((wide[j] - mean) * rstd * w[j] as f64) as f32;
                let got = y[r * d + j];
                assert!(
                    ulps_f32(got, exact) <= 1,
                    "d={d} [{r}, {j}]: {got} vs {exact}"
                );
            }
        }
    }
}

#[test]
#[should_panic(expected = "a row of 0 elements")]
fn a_row_of_nothing_is_refused() {
    let _ = run(0, |o| {
        layer_norm_rows::<f32>(&[], None, None, 1e-5, 0, o, None, 1).0
    });
}

#[test]
#[should_panic(expected = "a weight or bias of length other than")]
fn a_weight_of_another_length_is_refused() {
    let xs = [1.0f32; 8];
    let _ = run(8, |o| {
        layer_norm_rows(&xs, Some(&[1.0f32; 3]), None, 1e-5, 4, o, None, 1).0
    });
}
