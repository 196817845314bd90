//! The elementwise kernels against plain scalar references written here: on every instruction
//! set the CPU has, bit for bit (any NaN matching any NaN) at every length class; and the
//! float32 approximations against libm in float64, within stated bounds:
//! - `erf_f32`: within 2 ulps of the correctly rounded float32 erf, and within 1.5e-7 absolute
//!   (the doc's claim), on a sweep of all positive floats;
//! - `exp_f32`: within 1 ulp of the correctly rounded float32 exp on [-87, 88];
//! - `gelu_f32`: within 1.5e-7 max(1, |x|) absolute on [-10, 10] (erf's error scaled by x/2,
//!   plus the roundings of the products);
//! - `gelu_backward_f32` with g = 1: within 2e-7 absolute on [-10, 10].

mod common;

use std::f64::consts::{FRAC_1_SQRT_2, PI};
use std::mem::MaybeUninit;

use common::*;
use proptest::prelude::*;
use rustgrad_kernels::*;

// ---------------------------------------------------------------------------------------------
// the scalar references: the formulas as the kernels document them, one element at a time

fn gelu_ref_f32(x: f32) -> f32 {
    x * 0.5 * (1.0 + erf_f32(x * (FRAC_1_SQRT_2 as f32)))
}

fn gelu_ref_f64(x: f64) -> f64 {
    x * 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2))
}

fn gelu_backward_ref_f32(g: f32, x: f32) -> f32 {
    let beta = (1.0 / (2.0 * PI).sqrt()) as f32;
    let u = x * (FRAC_1_SQRT_2 as f32);
    // Phi and the density from one erf that also gives its exp, exp(-u^2)
    let (erf, e) = erf_exp_f32(u);
    let cdf = 0.5 * (1.0 + erf);
    let pdf = beta * e;
    g * (cdf + x * pdf)
}

fn gelu_backward_ref_f64(g: f64, x: f64) -> f64 {
    let beta = 1.0 / (2.0 * PI).sqrt();
    let cdf = 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2));
    g * (cdf + x * beta * (-0.5 * x * x).exp())
}

/// The exact (float64) GELU and its derivative, for the accuracy bounds.
fn gelu_exact(x: f64) -> f64 {
    x * 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2))
}

fn gelu_grad_exact(x: f64) -> f64 {
    0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2)) + x * (-0.5 * x * x).exp() / (2.0 * PI).sqrt()
}

/// An elementwise kernel's shape: input(s), the slots it fills, the slots filled.
type UnaryFn<T> = for<'o> fn(&[T], &'o mut [MaybeUninit<T>]) -> &'o mut [T];
type BinaryFn<T> = for<'o> fn(&[T], &[T], &'o mut [MaybeUninit<T>]) -> &'o mut [T];

/// A kernel of one input and the scalar reference it must match.
struct Unary<T: 'static> {
    name: &'static str,
    kernel: UnaryFn<T>,
    reference: fn(T) -> T,
}

/// A kernel of two inputs (gradient, x) and its scalar reference.
struct Binary<T: 'static> {
    name: &'static str,
    kernel: BinaryFn<T>,
    reference: fn(T, T) -> T,
}

/// The elementwise kernels of a float type, each with its reference.
trait Kernels: Float {
    fn unary() -> Vec<Unary<Self>>;
    fn binary() -> Vec<Binary<Self>>;
}

/// The tables of one float type: GELU, its gradient and the two powers, and `extra` kernels
/// only that type has.
macro_rules! kernels {
    ($t:ty, gelu: $gelu:expr, $gelu_ref:expr, backward: $back:expr, $back_ref:expr,
     powi: $powi:path, extra: [$($extra:expr),*]) => {
        impl Kernels for $t {
            fn unary() -> Vec<Unary<$t>> {
                vec![
                    Unary { name: "gelu", kernel: $gelu, reference: $gelu_ref },
                    Unary {
                        name: "cube",
                        kernel: |xs, o| $powi(xs, SmallPow::Cube, o),
                        reference: |x| x * x * x,
                    },
                    Unary {
                        name: "inverse square",
                        kernel: |xs, o| $powi(xs, SmallPow::InvSquare, o),
                        reference: |x| 1.0 / (x * x),
                    },
                    $($extra),*
                ]
            }
            fn binary() -> Vec<Binary<$t>> {
                vec![Binary { name: "gelu_backward", kernel: $back, reference: $back_ref }]
            }
        }
    };
}

kernels!(f32, gelu: gelu_f32, gelu_ref_f32, backward: gelu_backward_f32, gelu_backward_ref_f32,
powi: powi_f32, extra: [
    Unary { name: "erf", kernel: erf_slice_f32, reference: erf_f32 },
    Unary { name: "relu", kernel: relu_f32, reference: |x| if x < 0.0 { 0.0 } else { x } }
]);
kernels!(f64, gelu: gelu_f64, gelu_ref_f64, backward: gelu_backward_f64, gelu_backward_ref_f64,
powi: powi_f64, extra: [
    Unary { name: "relu", kernel: relu_f64, reference: |x| if x < 0.0 { 0.0 } else { x } }
]);

/// Every kernel of `T` against its reference on `xs` (and `gs` as the gradient, then the
/// other way round), on every instruction set: the first difference, if any.
fn compare<T: Kernels>(xs: &[T], gs: &[T]) -> Result<(), String> {
    let n = xs.len();
    let mut first = Ok(());
    on_every_isa(|isa| {
        let mut check = |name: &str, got: Vec<T>, want: Vec<T>| {
            if let Some(i) = (0..n).find(|&i| !same(got[i], want[i])) {
                if first.is_ok() {
                    first = Err(format!(
                        "{name} n={n} {isa:?}: element {i} (x {:?}, g {:?}): got {:?}, want {:?}",
                        xs[i], gs[i], got[i], want[i]
                    ));
                }
            }
        };
        for k in T::unary() {
            check(
                k.name,
                run(n, |o| (k.kernel)(xs, o)),
                xs.iter().map(|&x| (k.reference)(x)).collect(),
            );
        }
        for k in T::binary() {
            for (a, b) in [(gs, xs), (xs, gs)] {
                let want = a
                    .iter()
                    .zip(b)
                    .map(|(&a, &b)| (k.reference)(a, b))
                    .collect();
                check(k.name, run(n, |o| (k.kernel)(a, b, o)), want);
            }
        }
    });
    first
}

fn check_all<T: Kernels>(xs: &[T], gs: &[T], what: &str) {
    if let Err(e) = compare(xs, gs) {
        panic!("{what}: {e}");
    }
}

#[test]
fn every_length_matches_the_scalar_reference() {
    for (k, &n) in LENS.iter().enumerate() {
        let (xs, gs) = (
            sample::<f32>(n, k as u64, 3.0),
            sample::<f32>(n, 99 + k as u64, 1.0),
        );
        check_all(&xs, &gs, "sample");
        let (xs, gs) = (
            sample::<f64>(n, k as u64, 3.0),
            sample::<f64>(n, 99 + k as u64, 1.0),
        );
        check_all(&xs, &gs, "sample");
    }
}

#[test]
fn specials_in_every_lane_match_the_scalar_reference() {
    // each special at each position of a 33-long vector (every lane of a 16-wide block and of
    // the tail), with ordinary values around it
    for &s in &SPECIALS {
        for at in 0..33 {
            let mut xs = sample::<f32>(33, at as u64, 2.0);
            let mut gs = sample::<f32>(33, 7 + at as u64, 1.0);
            xs[at] = s as f32;
            gs[(at + 5) % 33] = s as f32;
            check_all(&xs, &gs, &format!("special {s} at {at}"));
            let mut xs = sample::<f64>(33, at as u64, 2.0);
            let mut gs = sample::<f64>(33, 7 + at as u64, 1.0);
            xs[at] = s;
            gs[(at + 5) % 33] = s;
            check_all(&xs, &gs, &format!("special {s} at {at}"));
        }
    }
}

#[test]
fn small_values_match_the_scalar_reference() {
    // |x| < 1 in (nearly) every lane of a register, so erf's small branch is the one kept
    // throughout, with one special (NaN, inf, a value past 1, a subnormal) in each lane in turn
    for &s in &SPECIALS {
        for at in 0..33 {
            let mut xs = ordinary::<f32>(33, at as u64, 0.2);
            let gs = ordinary::<f32>(33, 7 + at as u64, 0.2);
            xs[at] = s as f32;
            check_all(&xs, &gs, &format!("special {s} at {at} among small values"));
        }
    }
    for (k, &n) in LENS.iter().enumerate() {
        let (xs, gs) = (
            ordinary::<f32>(n, k as u64, 0.3),
            ordinary::<f32>(n, 50 + k as u64, 0.3),
        );
        check_all(&xs, &gs, "small values");
    }
}

#[test]
fn erf_f32_special_values() {
    let nan = f32::from_bits(0x7fc0_1234);
    assert_eq!(
        erf_f32(nan).to_bits(),
        nan.to_bits(),
        "a NaN passes through"
    );
    assert_eq!(erf_f32(f32::INFINITY), 1.0);
    assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(erf_f32(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    for x in [4.0f32, 4.5, 9.0, 1e10, f32::MAX] {
        assert_eq!(erf_f32(x), 1.0, "erf({x}) is 1 in float32");
        assert_eq!(erf_f32(-x), -1.0);
    }
    let mut x = 1e-3f32;
    while x < 6.0 {
        assert_eq!(erf_f32(-x).to_bits(), (-erf_f32(x)).to_bits(), "odd at {x}");
        x *= 1.01;
    }
}

#[test]
fn erf_f32_is_within_2_ulps_and_1_5e_7() {
    let (mut worst_ulps, mut worst_abs) = (0u64, 0f64);
    // every 4099th positive float (NaN and inf excluded), so all exponents and both branches
    let mut bits = 0u32;
    while bits < 0x7f80_0000 {
        let x = f32::from_bits(bits);
        let exact = libm::erf(x as f64);
        let got = erf_f32(x);
        worst_ulps = worst_ulps.max(ulps_f32(got, exact as f32));
        worst_abs = worst_abs.max((got as f64 - exact).abs());
        bits += 4099;
    }
    assert!(worst_ulps <= 2, "erf_f32: {worst_ulps} ulps");
    assert!(worst_abs <= 1.5e-7, "erf_f32: {worst_abs:e} absolute");
}

#[test]
fn erf_f64_is_libm() {
    for x in sample::<f64>(1000, 5, 3.0) {
        assert!(same(erf_f64(x), libm::erf(x)));
    }
}

#[test]
fn exp_f32_is_within_1_ulp_and_flushes_below_minus_87() {
    let mut x = -87.0f32;
    let mut worst = 0;
    while x <= 88.0 {
        let exact = (x as f64).exp() as f32;
        worst = worst.max(ulps_f32(exp_f32(x), exact));
        x += 1.0 / 1024.0 + x.abs() * 1e-6;
    }
    assert!(worst <= 1, "exp_f32: {worst} ulps");
    assert_eq!(exp_f32(0.0), 1.0);
    assert_eq!(exp_f32(-0.0), 1.0);
    for x in [-87.001f32, -100.0, -1e30, f32::NEG_INFINITY] {
        assert_eq!(exp_f32(x).to_bits(), 0, "exp_f32({x}) is +0");
    }
    assert!(exp_f32(f32::NAN).is_nan());
}

#[test]
fn gelu_f32_is_within_1_5e_7_times_max_1_x() {
    let xs: Vec<f32> = (-100_000..=100_000).map(|i| i as f32 * 1e-4).collect();
    let ys = run(xs.len(), |o| gelu_f32(&xs, o));
    let ones = vec![1.0f32; xs.len()];
    let ds = run(xs.len(), |o| gelu_backward_f32(&ones, &xs, o));
    for ((&x, &y), &d) in xs.iter().zip(&ys).zip(&ds) {
        let bound = 1.5e-7 * (x.abs() as f64).max(1.0);
        let err = (y as f64 - gelu_exact(x as f64)).abs();
        assert!(err <= bound, "gelu({x}) = {y}: off by {err:e}");
        let err = (d as f64 - gelu_grad_exact(x as f64)).abs();
        assert!(err <= 2e-7, "gelu'({x}) = {d}: off by {err:e}");
    }
}

#[test]
fn gelu_limits() {
    let xs = [f32::INFINITY, 0.0, -0.0, 30.0, -30.0];
    let ys = run(xs.len(), |o| gelu_f32(&xs, o));
    assert_eq!(ys[0], f32::INFINITY);
    assert_eq!(ys[1].to_bits(), 0.0f32.to_bits());
    assert_eq!(ys[2].to_bits(), (-0.0f32).to_bits());
    assert_eq!(ys[3], 30.0);
    assert_eq!(ys[4], 0.0);
    let ones = [1.0f32; 5];
    let ds = run(xs.len(), |o| gelu_backward_f32(&ones, &xs, o));
    assert_eq!(&ds[1..], &[0.5, 0.5, 1.0, 0.0]);
}

#[test]
fn small_pow_exponents() {
    assert_eq!(SmallPow::of(2), Some(SmallPow::Square));
    assert_eq!(SmallPow::of(3), Some(SmallPow::Cube));
    assert_eq!(SmallPow::of(-1), Some(SmallPow::Reciprocal));
    assert_eq!(SmallPow::of(-2), Some(SmallPow::InvSquare));
    for e in [-3, 0, 1, 4, i64::MIN, i64::MAX] {
        assert_eq!(SmallPow::of(e), None, "{e}");
    }
}

fn select_ref<T: Copy>(mask: &[bool], a: &[T], b: &[T]) -> Vec<T> {
    mask.iter()
        .zip(a)
        .zip(b)
        .map(|((&k, &x), &y)| if k { x } else { y })
        .collect()
}

fn assert_bits<T: Float>(got: &[T], want: &[T], what: &str) {
    let bits = |v: &[T]| v.iter().map(|x| x.bits()).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(want), "{what}");
}

fn check_select<T: Float>(n: usize, seed: u64) {
    let (a, b) = (sample::<T>(n, seed, 2.0), sample::<T>(n, seed + 1, 2.0));
    let mask: Vec<bool> = sample::<f64>(n, seed + 2, 1.0)
        .iter()
        .map(|&u| u > 0.0)
        .collect();
    // exactly the chosen bits: NaN payloads and signed zeros included
    let mut b = b;
    if n > 3 {
        b[1] = T::of(-0.0);
        b[2] = a[2];
    }
    let got = run(n, |o| select(&mask, &a, &b, o));
    assert_bits(&got, &select_ref(&mask, &a, &b), &format!("select n={n}"));
    let s = T::of(-0.0);
    let got = run(n, |o| select_scalar(&mask, &a, s, o));
    assert_bits(&got, &select_ref(&mask, &a, &vec![s; n]), "select_scalar");
}

#[test]
fn select_takes_the_chosen_bits() {
    for (k, &n) in LENS.iter().enumerate() {
        check_select::<f32>(n, k as u64);
        check_select::<f64>(n, k as u64);
    }
    let nan = f32::from_bits(0xffc0_4321);
    let got = run(2, |o| select(&[true, false], &[nan, 1.0], &[2.0, nan], o));
    assert_eq!(got[0].to_bits(), nan.to_bits());
    assert_eq!(got[1].to_bits(), nan.to_bits());
}

/// torch's threshold_backward at 0, element by element: the gradient where the result is
/// above 0 or NaN, else +0.
fn threshold_backward_ref<T: Float>(grad: &[T], result: &[T]) -> Vec<T> {
    grad.iter()
        .zip(result)
        .map(|(&g, &y)| if y <= T::of(0.0) { T::of(0.0) } else { g })
        .collect()
}

fn check_threshold_backward<T: Float>(n: usize, seed: u64) {
    // the results carry the specials (NaN, -0, +-inf, subnormals), the gradients too
    let (g, y) = (sample::<T>(n, seed, 2.0), sample::<T>(n, seed + 1, 2.0));
    let got = run(n, |o| threshold_backward(&g, &y, o));
    assert_bits(
        &got,
        &threshold_backward_ref(&g, &y),
        &format!("threshold_backward n={n}"),
    );
}

#[test]
fn threshold_backward_passes_the_gradient_above_zero_and_at_nan() {
    for (k, &n) in LENS.iter().enumerate() {
        check_threshold_backward::<f32>(n, k as u64);
        check_threshold_backward::<f64>(n, k as u64);
    }
    let nan = f32::NAN;
    let got = run(5, |o| {
        threshold_backward(
            &[1.0, 2.0, 3.0, -4.0, nan],
            &[0.0, -0.0, nan, 1e-40, -1.0],
            o,
        )
    });
    let want = [0.0f32, 0.0, 3.0, -4.0, 0.0];
    assert_bits(&got, &want, "rules");
}

#[test]
#[should_panic(expected = "lengths differ")]
fn threshold_backward_refuses_a_short_result() {
    let mut out = vec![std::mem::MaybeUninit::uninit(); 2];
    threshold_backward(&[1.0f32, 2.0], &[1.0], &mut out);
}

#[test]
#[should_panic(expected = "lengths differ")]
fn a_short_output_is_refused() {
    let mut out = vec![std::mem::MaybeUninit::uninit(); 3];
    gelu_f32(&[1.0; 4], &mut out);
}

#[test]
#[should_panic(expected = "the slots it was given")]
fn filled_vec_refuses_other_slices() {
    // a slice the closure may return (the signature ties it to the slots, or 'static)
    let elsewhere: &'static mut [f32] = Box::leak(vec![0.0f32; 4].into_boxed_slice());
    let _ = filled_vec::<f32>(4, |_| elsewhere);
}

#[test]
fn isa_levels() {
    let all = Isa::available();
    assert_eq!(all[0], Isa::Scalar);
    assert_eq!(*all.last().unwrap(), Isa::cpu());
    assert_eq!(Isa::current(), Isa::cpu());
    with_isa_cap(Isa::Scalar, || {
        assert_eq!(Isa::current(), Isa::Scalar);
        with_isa_cap(Isa::Avx512, || assert_eq!(Isa::current(), Isa::cpu()));
        assert_eq!(Isa::current(), Isa::Scalar);
    });
    assert_eq!(Isa::current(), Isa::cpu());
}

proptest! {
    #[test]
    fn prop_f32_kernels_match_the_reference(xs in vec_f32(), seed in any::<u64>()) {
        let gs = sample::<f32>(xs.len(), seed, 1.0);
        compare(&xs, &gs).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn prop_f64_kernels_match_the_reference(xs in vec_f64(), seed in any::<u64>()) {
        let gs = sample::<f64>(xs.len(), seed, 1.0);
        compare(&xs, &gs).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn prop_erf_f32_bounds(x in -8.0f32..8.0) {
        let exact = libm::erf(x as f64);
        prop_assert!(ulps_f32(erf_f32(x), exact as f32) <= 2);
        prop_assert!((erf_f32(x) as f64 - exact).abs() <= 1.5e-7);
        prop_assert_eq!(erf_f32(-x).to_bits(), (-erf_f32(x)).to_bits());
    }

    #[test]
    fn prop_select_is_bit_exact(
        rows in proptest::collection::vec((any::<bool>(), any::<f64>(), any::<f64>()), 0..70),
        s in any::<f64>(),
    ) {
        let mask: Vec<bool> = rows.iter().map(|r| r.0).collect();
        let a: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let b: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let n = rows.len();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&run(n, |o| select(&mask, &a, &b, o))), bits(&select_ref(&mask, &a, &b)));
        prop_assert_eq!(bits(&run(n, |o| select_scalar(&mask, &a, s, o))), bits(&select_ref(&mask, &a, &vec![s; n])));
        let (a, b): (Vec<f32>, Vec<f32>) = (a.iter().map(|&x| x as f32).collect(), b.iter().map(|&x| x as f32).collect());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&run(n, |o| select(&mask, &a, &b, o))), bits(&select_ref(&mask, &a, &b)));
    }
}
