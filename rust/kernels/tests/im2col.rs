//! im2col and col2im against naive references written here (every block element's image
//! coordinate computed and bounds-checked one by one), exactly: im2col's copies bit for bit
//! (NaN payloads included), col2im's sums in NumPy's order (from +0, kernel offsets in
//! row-major order); both layouts, float32 and float64, strides, dilations, asymmetric padding,
//! fill values (0, -inf, NaN), and the threaded split above the size threshold.

mod common;

use common::*;
use proptest::prelude::*;
use rustgrad_kernels::*;

/// im2col by the definition: block element (n, c, i, j, oy, ox) is image (n, c, y, x) with
/// y = oy sh + i dh - top, x = ox sw + j dw - left, or `fill` outside the image.
fn im2col_ref<T: Float>(xs: &[T], g: &Unfold, fill: T) -> Vec<T> {
    let (n_, c_, (h, w), (kh, kw), (oh, ow)) = (g.batch, g.channels, g.size, g.kernel, g.out);
    let mut out = vec![T::of(0.0); g.cols_len()];
    for n in 0..n_ {
        for c in 0..c_ {
            for i in 0..kh {
                for j in 0..kw {
                    let block = if g.channels_first {
                        ((c * kh + i) * kw + j) * n_ + n
                    } else {
                        ((n * c_ + c) * kh + i) * kw + j
                    };
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let y =
                                (oy * g.stride.0 + i * g.dilation.0) as isize - g.pads.0 as isize;
                            let x =
                                (ox * g.stride.1 + j * g.dilation.1) as isize - g.pads.2 as isize;
                            let inside = y >= 0 && x >= 0 && y < h as isize && x < w as isize;
                            out[(block * oh + oy) * ow + ox] = if inside {
                                xs[((n * c_ + c) * h + y as usize) * w + x as usize]
                            } else {
                                fill
                            };
                        }
                    }
                }
            }
        }
    }
    out
}

/// col2im by the definition, in NumPy's order: zeros, then for each kernel offset (i, j) in
/// row-major order every block element added at its image coordinate (padding dropped).
fn col2im_ref<T: Float>(cols: &[T], g: &Unfold) -> Vec<T> {
    let (n_, c_, (h, w), (kh, kw), (oh, ow)) = (g.batch, g.channels, g.size, g.kernel, g.out);
    let mut out = vec![T::of(0.0); g.image_len()];
    for i in 0..kh {
        for j in 0..kw {
            for n in 0..n_ {
                for c in 0..c_ {
                    let block = if g.channels_first {
                        ((c * kh + i) * kw + j) * n_ + n
                    } else {
                        ((n * c_ + c) * kh + i) * kw + j
                    };
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let y =
                                (oy * g.stride.0 + i * g.dilation.0) as isize - g.pads.0 as isize;
                            let x =
                                (ox * g.stride.1 + j * g.dilation.1) as isize - g.pads.2 as isize;
                            if y >= 0 && x >= 0 && y < h as isize && x < w as isize {
                                let slot =
                                    &mut out[((n * c_ + c) * h + y as usize) * w + x as usize];
                                *slot = *slot + cols[(block * oh + oy) * ow + ox];
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn assert_bits<T: Float>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (&a, &b)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            a.bits(),
            b.bits(),
            "{what}: element {k}: got {a:?}, want {b:?}"
        );
    }
}

/// (batch, channels, size, kernel, dilation, stride, pads)
type Geometry = (
    usize,
    usize,
    Pair,
    Pair,
    Pair,
    Pair,
    (usize, usize, usize, usize),
);

fn unfold(geo: Geometry, channels_first: bool) -> Unfold {
    let (n, c, size, k, d, s, p) = geo;
    Unfold::new(n, c, size, k, d, s, p, channels_first).expect("a valid geometry")
}

/// Both kernels at these thread counts, both layouts, against the references; the fills
/// include -inf (pooling's) and a NaN.
fn check<T: Float>(geo: Geometry, threads: &[usize], seed: u64) {
    for channels_first in [false, true] {
        let g = unfold(geo, channels_first);
        let xs = sample::<T>(g.image_len(), seed, 2.0);
        let cols = sample::<T>(g.cols_len(), seed + 1, 1.0);
        for fill in [0.0, f64::NEG_INFINITY, f64::NAN, 7.5] {
            let want = im2col_ref(&xs, &g, T::of(fill));
            for &t in threads {
                let got = run(g.cols_len(), |o| im2col(&xs, &g, T::of(fill), o, t));
                assert_bits(
                    &got,
                    &want,
                    &format!("im2col {g:?} fill {fill} threads {t}"),
                );
            }
        }
        let want = col2im_ref(&cols, &g);
        for &t in threads {
            let got = run(g.image_len(), |o| col2im(&cols, &g, o, t));
            assert_bits(&got, &want, &format!("col2im {g:?} threads {t}"));
        }
    }
}

#[test]
fn fixed_geometries_match_the_references() {
    let cases: [Geometry; 12] = [
        // the CNN benchmark's two convolutions, smaller batch
        (2, 1, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
        (2, 16, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
        // no padding, 1x1 kernel
        (3, 2, (5, 7), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
        // strides
        (2, 3, (9, 11), (3, 2), (1, 1), (2, 3), (1, 1, 0, 2)),
        // dilation
        (1, 2, (10, 9), (3, 3), (2, 3), (1, 1), (2, 2, 3, 3)),
        // stride and dilation, asymmetric padding on every side
        (2, 2, (8, 13), (2, 3), (3, 2), (3, 2), (0, 3, 4, 1)),
        // padding wider than the kernel reaches: all-padding rows and columns
        (1, 1, (3, 4), (2, 2), (1, 1), (1, 1), (4, 3, 5, 2)),
        // stride larger than the kernel: image elements no block reads
        (2, 2, (11, 10), (2, 2), (1, 1), (4, 3), (1, 0, 0, 1)),
        // a kernel as large as the padded image
        (2, 3, (4, 5), (6, 5), (1, 1), (1, 1), (1, 1, 0, 0)),
        // one-pixel images, stride beyond the image (empty in-bounds runs)
        (2, 2, (1, 1), (1, 1), (1, 1), (3, 3), (1, 1, 1, 1)),
        // a 1-d convolution seen as height 1
        (3, 4, (1, 17), (1, 5), (1, 2), (1, 2), (0, 0, 3, 3)),
        // empty batch
        (0, 3, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ];
    for (k, geo) in cases.into_iter().enumerate() {
        check::<f32>(geo, &[1, 2, 3], k as u64);
        check::<f64>(geo, &[1, 2], 100 + k as u64);
    }
}

#[test]
fn threaded_splits_match_the_references() {
    // above PAR_MIN_ELEMS, unit counts that do not divide evenly among the threads
    let cases: [Geometry; 4] = [
        (32, 1, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
        (7, 16, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
        (5, 3, (31, 29), (4, 3), (2, 1), (2, 1), (3, 0, 1, 2)),
        (1, 1, (181, 181), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0)),
    ];
    for (k, geo) in cases.into_iter().enumerate() {
        let g = unfold(geo, false);
        assert!(
            g.cols_len() >= PAR_MIN_ELEMS,
            "{g:?} is below the threshold"
        );
        check::<f32>(geo, &[1, 2, 3, 4, 64], 200 + k as u64);
        check::<f64>(geo, &[1, 3], 300 + k as u64);
    }
}

#[test]
fn col2im_takes_fewer_positions_than_fit() {
    // a transposed convolution's output padding: the image is larger than the blocks cover
    for channels_first in [false, true] {
        let mut g = unfold(
            (2, 3, (9, 8), (3, 3), (1, 1), (2, 2), (1, 1, 1, 1)),
            channels_first,
        );
        g.size = (10, 9);
        assert!(g.is_valid());
        let cols = sample::<f32>(g.cols_len(), 7, 1.0);
        let got = run(g.image_len(), |o| col2im(&cols, &g, o, 2));
        assert_bits(&got, &col2im_ref(&cols, &g), "output padding");
    }
}

#[test]
fn geometry_checks() {
    // torch's output size
    let g = Unfold::new(1, 1, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), false).unwrap();
    assert_eq!(g.out, (28, 28));
    let g = Unfold::new(1, 1, (10, 9), (3, 2), (2, 3), (2, 1), (1, 0, 2, 1), false).unwrap();
    assert_eq!(g.out, ((10 + 1 - 5) / 2 + 1, 9 + 3 - 4 + 1));
    // a kernel larger than the padded image, and zero sizes
    assert!(Unfold::new(1, 1, (3, 3), (5, 1), (1, 1), (1, 1), (0, 1, 0, 0), false).is_none());
    assert!(Unfold::new(1, 1, (3, 3), (0, 1), (1, 1), (1, 1), (0, 0, 0, 0), false).is_none());
    assert!(Unfold::new(1, 1, (3, 3), (1, 1), (0, 1), (1, 1), (0, 0, 0, 0), false).is_none());
    assert!(Unfold::new(1, 1, (3, 3), (1, 1), (1, 1), (1, 0), (0, 0, 0, 0), false).is_none());
    // more positions than fit
    let mut g = Unfold::new(1, 1, (5, 5), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), true).unwrap();
    g.out.1 += 1;
    assert!(!g.is_valid());
}

#[test]
#[should_panic(expected = "invalid geometry")]
fn im2col_refuses_blocks_outside_the_image() {
    let mut g = unfold((1, 1, (5, 5), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0)), false);
    g.out.0 += 1;
    let xs = vec![0f32; g.image_len()];
    run(g.cols_len(), |o| im2col(&xs, &g, 0.0, o, 1));
}

fn geometry() -> impl Strategy<Value = (Geometry, bool)> {
    (
        (0usize..4, 1usize..5, 1usize..10, 1usize..10),
        (
            1usize..5,
            1usize..5,
            1usize..4,
            1usize..4,
            1usize..5,
            1usize..5,
        ),
        (0usize..5, 0usize..5, 0usize..5, 0usize..5),
        any::<bool>(),
    )
        .prop_filter_map(
            "the kernel must fit in the padded image",
            |((n, c, h, w), (kh, kw, dh, dw, sh, sw), pads, cf)| {
                let geo = (n, c, (h, w), (kh, kw), (dh, dw), (sh, sw), pads);
                Unfold::new(n, c, (h, w), (kh, kw), (dh, dw), (sh, sw), pads, cf).map(|_| (geo, cf))
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_geometries_match_the_references(
        (geo, cf) in geometry(), seed in 0u64..1000, fill in any_f32(), threads in 1usize..4,
    ) {
        let g = unfold(geo, cf);
        let xs = sample::<f32>(g.image_len(), seed, 3.0);
        let got = run(g.cols_len(), |o| im2col(&xs, &g, fill, o, threads));
        let want = im2col_ref(&xs, &g, fill);
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let cols = sample::<f64>(g.cols_len(), seed + 1, 1.0);
        let got = run(g.image_len(), |o| col2im(&cols, &g, o, threads));
        let want = col2im_ref(&cols, &g);
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
