//! max_pool2d and its gradient against a naive reference written here (every kernel offset of
//! every window, bounds checked one by one, torch's CPU rules), exactly: the same maxima bit
//! for bit, the same indices, the same sums; float32 and float64; random geometries of the
//! kind torch accepts (padding at most half the dilated kernel, floor and ceil output sizes),
//! with NaN, -inf and ties in the planes.

mod common;

use common::*;
use proptest::prelude::*;
use rustgrad_kernels::*;

/// torch's rules for one window: padding never wins, a NaN always does (so the last NaN), ties
/// keep the first, and the index starts at the window's first non-negative row and column
/// (torch's `while (ih0 < 0) ih0 += dH`), so a window with nothing above -inf points there.
fn max_pool_ref<T: Float>(
    xs: &[T],
    planes: usize,
    h: usize,
    w: usize,
    g: &Window,
) -> (Vec<T>, Vec<i64>) {
    let (mut vals, mut idx) = (vec![], vec![]);
    let first = |start: isize, d: usize| {
        if start >= 0 {
            start
        } else {
            start + ((-start) as usize).div_ceil(d) as isize * d as isize
        }
    };
    for p in 0..planes {
        let plane = &xs[p * h * w..(p + 1) * h * w];
        for oy in 0..g.out.0 {
            for ox in 0..g.out.1 {
                let y0 = (oy * g.stride.0) as isize - g.padding.0 as isize;
                let x0 = (ox * g.stride.1) as isize - g.padding.1 as isize;
                let mut best = T::of(f64::NEG_INFINITY);
                let mut at = first(y0, g.dilation.0) * w as isize + first(x0, g.dilation.1);
                for i in 0..g.kernel.0 {
                    for j in 0..g.kernel.1 {
                        let y = y0 + (i * g.dilation.0) as isize;
                        let x = x0 + (j * g.dilation.1) as isize;
                        if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
                            continue; // padding
                        }
                        let v = plane[y as usize * w + x as usize];
                        if v.is_nan() || v > best {
                            best = v;
                            at = y * w as isize + x;
                        }
                    }
                }
                vals.push(best);
                idx.push(at as i64);
            }
        }
    }
    (vals, idx)
}

fn backward_ref<T: Float>(
    grad: &[T],
    idx: &[i64],
    per_plane: usize,
    planes: usize,
    hw: usize,
) -> Vec<T> {
    let mut out = vec![T::of(0.0); planes * hw];
    for (k, (&g, &i)) in grad.iter().zip(idx).enumerate() {
        if i >= 0 && (i as usize) < hw {
            let slot = &mut out[(k / per_plane) * hw + i as usize];
            *slot = *slot + g;
        }
    }
    out
}

/// torch's output size along one dim, or None where torch refuses the geometry.
fn out_size(size: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> Option<usize> {
    let eff = (k - 1) * d + 1;
    if 2 * p > eff {
        return None; // "pad should be at most half of effective kernel size"
    }
    let span = (size + 2 * p) as isize - eff as isize;
    if span < 0 {
        return None;
    }
    let mut out = if ceil {
        (span as usize).div_ceil(s)
    } else {
        span as usize / s
    } + 1;
    if ceil && (out - 1) * s >= size + p {
        out -= 1; // the last window must start inside the input or the left padding
    }
    Some(out)
}

fn check<T: Float>(xs: &[T], planes: usize, (h, w): Pair, g: &Window, grad_seed: u64) {
    let (want_vals, want_idx) = max_pool_ref(xs, planes, h, w, g);
    // each compiled copy: the AVX-512 one selects floats, the baseline one order keys
    on_every_isa(|isa| {
        let (vals, idx) = max_pool2d(xs, planes, (h, w), g);
        assert_same(&vals, &want_vals, &format!("maxima {g:?} {isa:?}"));
        assert_eq!(idx, want_idx, "indices {g:?} {isa:?}");
    });
    let (vals, idx) = max_pool2d(xs, planes, (h, w), g);
    let per_plane = g.out.0 * g.out.1;
    let grad = ordinary::<T>(vals.len(), grad_seed, 1.0);
    let mut out = vec![T::of(0.0); planes * h * w];
    max_pool2d_backward(&grad, &idx, per_plane, &mut out, h * w);
    assert_same(
        &out,
        &backward_ref(&grad, &idx, per_plane, planes, h * w),
        "gradient",
    );
}

/// A window from (kernel, stride, padding, dilation, out).
fn win(kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair) -> Window {
    Window {
        kernel,
        stride,
        padding,
        dilation,
        out,
    }
}

/// Values with ties and specials: a few levels, some -inf, some NaN.
fn plane_values<T: Float>(n: usize, seed: u64) -> Vec<T> {
    ordinary::<f64>(n, seed, 1.0)
        .iter()
        .map(|&u| match ((u.abs() * 1000.0) as u64) % 11 {
            0 => T::of(f64::NAN),
            1 | 2 => T::of(f64::NEG_INFINITY),
            3..=5 => T::of(1.0),
            _ => T::of(u),
        })
        .collect()
}

#[test]
fn fixed_geometries_match_the_reference() {
    let cases = [
        ((7, 9), (2, 2), (2, 2), (0, 0), (1, 1), false),
        ((8, 8), (3, 3), (1, 2), (1, 1), (1, 1), true),
        ((9, 10), (3, 2), (2, 3), (1, 1), (2, 3), false),
        ((5, 5), (5, 5), (1, 1), (2, 2), (1, 1), false),
        ((1, 1), (1, 1), (1, 1), (0, 0), (1, 1), false),
        ((4, 33), (1, 16), (1, 16), (0, 0), (1, 1), true),
        ((6, 6), (2, 2), (4, 4), (1, 1), (1, 1), true),
    ];
    for (k, &((h, w), kernel, stride, padding, dilation, ceil)) in cases.iter().enumerate() {
        let oh = out_size(h, kernel.0, stride.0, padding.0, dilation.0, ceil).unwrap();
        let ow = out_size(w, kernel.1, stride.1, padding.1, dilation.1, ceil).unwrap();
        let g = win(kernel, stride, padding, dilation, (oh, ow));
        for planes in [1, 3] {
            check(
                &plane_values::<f32>(planes * h * w, k as u64),
                planes,
                (h, w),
                &g,
                1,
            );
            check(
                &plane_values::<f64>(planes * h * w, k as u64),
                planes,
                (h, w),
                &g,
                1,
            );
        }
    }
}

/// The unpadded 2x2, stride 2 pool (the CNN's) has its own loop: every plane size, odd ones
/// (a row and a column left over) and ceil_mode's partial windows (the general loop) included,
/// with NaN, -inf and ties everywhere.
#[test]
fn two_by_two_windows_match_the_reference() {
    for h in 1..=7 {
        for w in 1..=9 {
            for ceil in [false, true] {
                let (Some(oh), Some(ow)) =
                    (out_size(h, 2, 2, 0, 1, ceil), out_size(w, 2, 2, 0, 1, ceil))
                else {
                    continue;
                };
                let g = win((2, 2), (2, 2), (0, 0), (1, 1), (oh, ow));
                let seed = (h * 16 + w) as u64;
                for planes in [1, 3] {
                    check(
                        &plane_values::<f32>(planes * h * w, seed),
                        planes,
                        (h, w),
                        &g,
                        1,
                    );
                    check(
                        &plane_values::<f64>(planes * h * w, seed),
                        planes,
                        (h, w),
                        &g,
                        1,
                    );
                }
            }
        }
    }
}

#[test]
fn rules_on_a_small_plane() {
    on_every_isa(rules_on);
}

fn rules_on(isa: Isa) {
    let nan = f32::NAN;
    let ninf = f32::NEG_INFINITY;
    // one 2x2 window over the whole plane, each rule in turn
    let g = win((2, 2), (2, 2), (0, 0), (1, 1), (1, 1));
    let pool = |xs: [f32; 4]| max_pool2d(&xs, 1, (2, 2), &g);
    assert_eq!(
        pool([1.0, 3.0, 3.0, 2.0]),
        (vec![3.0], vec![1]),
        "ties keep the first ({isa:?})"
    );
    let (v, i) = pool([1.0, nan, 5.0, nan]);
    assert!(v[0].is_nan());
    assert_eq!(i, vec![3], "the last NaN wins ({isa:?})");
    let (v, i) = pool([nan, 5.0, f32::INFINITY, 1.0]);
    assert!(
        v[0].is_nan() && i == vec![0],
        "nothing beats a NaN ({isa:?})"
    );
    let (v, i) = pool([-nan, -5.0, 7.0, 1.0]);
    assert!(
        v[0].is_nan() && i == vec![0],
        "nor a negative NaN ({isa:?})"
    );
    assert_eq!(
        pool([ninf; 4]).1,
        vec![0],
        "nothing above -inf: the first element ({isa:?})"
    );
    // -0 and +0 tie: the first one, with its sign
    let (v, i) = pool([-0.0, 0.0, -1.0, -2.0]);
    assert_eq!((v[0].to_bits(), i[0]), ((-0.0f32).to_bits(), 0), "{isa:?}");
    let (v, i) = pool([-3.0, 0.0, -0.0, -2.0]);
    assert_eq!((v[0].to_bits(), i[0]), (0.0f32.to_bits(), 1), "{isa:?}");
    // negative numbers, subnormals and the extremes in order
    assert_eq!(
        pool([-3.0, -1.0, -2.0, -5.0]),
        (vec![-1.0], vec![1]),
        "{isa:?}"
    );
    assert_eq!(
        pool([-1e-45, -1e-44, 1e-45, 0.0]),
        (vec![1e-45], vec![2]),
        "{isa:?}"
    );
    assert_eq!(
        pool([f32::MIN, ninf, f32::MAX, f32::INFINITY]),
        (vec![f32::INFINITY], vec![3]),
        "{isa:?}"
    );
    // padding never wins, even over -inf
    let g = win((2, 2), (1, 1), (1, 1), (1, 1), (3, 3));
    let (v, i) = max_pool2d(&[ninf; 4], 1, (2, 2), &g);
    assert!(v.iter().all(|&v| v == ninf));
    assert_eq!(i, vec![0, 0, 1, 0, 0, 1, 2, 2, 3]);
    // float64 alike
    let g = win((2, 2), (2, 2), (0, 0), (1, 1), (1, 1));
    let (v, i) = max_pool2d(&[-0.0f64, 0.0, -1.0, f64::NAN], 1, (2, 2), &g);
    assert!(v[0].is_nan() && i == vec![3], "{isa:?}");
    let (v, i) = max_pool2d(&[-0.0f64, 0.0, -1.0, -2.0], 1, (2, 2), &g);
    assert_eq!((v[0].to_bits(), i[0]), ((-0.0f64).to_bits(), 0), "{isa:?}");
}

#[test]
fn indices_outside_the_plane_pass_no_gradient() {
    let mut out = vec![0.0f64; 8];
    max_pool2d_backward(&[1.0, 2.0, 4.0, 8.0], &[-1, 4, 3, 3], 2, &mut out, 4);
    assert_eq!(out, vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 12.0]);
    // nothing to do on empty planes or outputs
    max_pool2d_backward::<f32>(&[], &[], 0, &mut [], 0);
}

#[test]
#[should_panic(expected = "non-empty planes")]
fn empty_planes_are_refused() {
    let g = win((1, 1), (1, 1), (0, 0), (1, 1), (0, 1));
    max_pool2d::<f32>(&[], 1, (0, 1), &g);
}

#[test]
#[should_panic(expected = "kernel size or dilation of 0")]
fn zero_dilation_is_refused() {
    let g = win((1, 1), (1, 1), (0, 0), (0, 1), (1, 1));
    max_pool2d::<f32>(&[1.0], 1, (1, 1), &g);
}

proptest! {
    #[test]
    fn prop_any_geometry_matches_the_reference(
        (h, w) in (1usize..9, 1usize..9),
        kernel in (1usize..5, 1usize..5),
        stride in (1usize..4, 1usize..4),
        pad in (0usize..3, 0usize..3),
        dilation in (1usize..3, 1usize..3),
        ceil in any::<bool>(),
        planes in 1usize..4,
        seed in any::<u64>(),
        wide in any::<bool>(),
    ) {
        let oh = out_size(h, kernel.0, stride.0, pad.0, dilation.0, ceil);
        let ow = out_size(w, kernel.1, stride.1, pad.1, dilation.1, ceil);
        let (Some(oh), Some(ow)) = (oh, ow) else {
            return Err(TestCaseError::reject("torch refuses this geometry"));
        };
        let g = win(kernel, stride, pad, dilation, (oh, ow));
        if wide {
            check(&plane_values::<f64>(planes * h * w, seed), planes, (h, w), &g, seed);
        } else {
            check(&plane_values::<f32>(planes * h * w, seed), planes, (h, w), &g, seed);
        }
    }
}
