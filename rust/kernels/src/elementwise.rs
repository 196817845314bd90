//! Elementwise kernels: erf, exact GELU and its gradient, small integer powers, and the
//! branch-free `where`. Each writes a caller's uninitialized buffer of the input's length (the
//! binding hands NumPy's fresh allocation, as zeroing it first costs about what the pass does)
//! and returns it initialized.

use std::f64::consts::{FRAC_1_SQRT_2, PI};
use std::mem::MaybeUninit;

use crate::{Isa, Real};

/// exp(x) for float32 in straight-line arithmetic, so loops over it vectorize: x = n ln2 + r
/// with |r| <= ln2/2, exp(r) by its Taylor polynomial to r^7 (error < 1e-8 relative), times
/// 2^n built in the exponent bits. Below -87 it is 0 (exp underflows there, and softmax's
/// masked -inf entries must give exactly 0); arguments above 88 are clamped (the kernels pass
/// x <= 0).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let (p, k) = exp_parts(x.clamp(-87.0, 88.0));
    let y = p * f32::from_bits(((k + 127) << 23) as u32);
    if x < -87.0 {
        0.0
    } else {
        y
    }
}

/// exp(xc) as p * 2^k: xc = n ln2 + r with |r| <= ln2/2, p = exp(r) by its Taylor polynomial to
/// r^7, k = n.
#[inline(always)]
fn exp_parts(xc: f32) -> (f32, i32) {
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
    let m = xc * std::f32::consts::LOG2_E + MAGIC;
    let n = m - MAGIC;
    let k = (m.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = xc - n * 0.693_145_75 - n * 1.428_606_8e-6; // ln 2 split: exact products
    (horner_desc(&C, r), k)
}

/// exp(x) for x <= 0 (or NaN) as [`exp_f32`], down into float32's subnormals: 2^k is applied
/// as 2^(k+64) then 2^-64, so the exponent bits stay normal and the one rounding into a
/// subnormal is the last multiply. Below -104 it is 0 (the true value rounds to 0 there).
#[inline(always)]
fn exp_nonpositive_f32(x: f32) -> f32 {
    let (p, k) = exp_parts(x.clamp(-104.0, 0.0));
    let y = p * f32::from_bits(((k + 64 + 127) << 23) as u32) * f32::from_bits(63 << 23);
    if x < -104.0 {
        0.0
    } else {
        y
    }
}

/// erf for float32 in straight-line arithmetic (both branches computed, one kept, so loops
/// vectorize), within 1.5e-7 of the exact value (2 units in the last place; libm's is correctly
/// rounded but 30x slower, torch's kernel is within 1): for |x| < 1, x P(x^2); above,
/// 1 - R(s) with s = (2 min(|x|, 4) - 5) / 3, which is 1 in float32 from |x| = 4 on. P is a
/// least-squares fit (degree 7) to erf(x)/x; R a minimax fit (degree 14) to erfc on [1, 4]
/// (9.5e-9 before rounding to float32; `python tools/fit_erfcx.py --erfc --degree 14`): one
/// polynomial where 1 - Q(s) exp(-x^2) ([`erf_exp_f32`]) takes an exp and a second one. Not
/// monotone to the last bit: on [3.1, 4] about one pair of neighbouring floats in 700 steps
/// down by one ulp (the exp form's roundings happen not to).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    const R: [f32; 15] = [
        0.000_406_952_66,
        -0.003_267_283_6,
        0.012_252_772,
        -0.028_187_038,
        0.043_652_35,
        -0.046_392_538,
        0.031_863_555,
        -0.009_569_152,
        -0.006_624_581_3,
        0.010_394_886,
        -0.004_685_662,
        -0.001_529_318,
        0.002_045_837_7,
        -0.000_099_161_625,
        -0.000_261_607_73,
    ];
    let ax = x.abs();
    erf_pick(x, 1.0 - horner(&R, erf_s(ax)))
}

/// s = (2 min(|x|, 4) - 5) / 3, the large branch's argument over [-1, 1] for |x| in [1, 4].
#[inline(always)]
fn erf_s(ax: f32) -> f32 {
    ax.min(4.0).mul_add(2.0 / 3.0, -5.0 / 3.0)
}

/// erf of x from its large branch's value at |x|: the small branch below 1, the sign of x, and
/// NaN for NaN. Both branches are computed and one kept, so loops vectorize.
#[inline(always)]
fn erf_pick(x: f32, large: f32) -> f32 {
    let ax = x.abs();
    let y = if ax < 1.0 { erf_small(ax) } else { large };
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

/// erf(a) for 0 <= a < 1: a P(a^2), P a least-squares fit (degree 7) to erf(x)/x.
#[inline(always)]
fn erf_small(ax: f32) -> f32 {
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
    ax * horner(&P, ax * ax)
}

/// (erf of x, [`exp_f32`] of -x^2): erf's large branch as 1 - Q(s) exp(-x^2), Q a fit (degree
/// 8, no division) to erfcx = erfc(x) exp(x^2) on [1, 4] weighted by exp(-x^2), so that erf's
/// absolute error is even (2.5e-9 before rounding; `python tools/fit_erfcx.py`). GELU's gradient
/// takes it for the exp, which is its density term (exp(-x^2/2) at x sqrt 2), instead of a
/// second exp. From |x| = 4 on, s stays at 1 (Q's fit ends there) and Q(1) exp(-x^2) < 2e-8
/// leaves 1 - it at 1 in float32. Within the same bounds as [`erf_f32`], not always its bits.
#[inline(always)]
pub fn erf_exp_f32(x: f32) -> (f32, f32) {
    const Q: [f32; 9] = [
        0.210_807_6,
        -0.111_513_27,
        0.056_058_116,
        -0.027_445_622,
        0.011_656_675,
        -0.005_023_341,
        0.006_182_652_4,
        0.003_840_615_3,
        0.002_736_903,
    ];
    let ax = x.abs();
    let e = exp_f32(-(ax * ax));
    (erf_pick(x, 1.0 - horner(&Q, erf_s(ax)) * e), e)
}

/// The polynomial with coefficients `c` (highest degree first) at v, by Horner's rule from the
/// leading coefficient: the roundings of a start from 0 (whose first FMA gives that
/// coefficient exactly at any finite v), one FMA fewer per element.
#[inline(always)]
fn horner_desc(c: &[f32], v: f32) -> f32 {
    let (&lead, rest) = c.split_first().expect("a polynomial has a coefficient");
    rest.iter().fold(lead, |acc, &k| acc.mul_add(v, k))
}

/// [`horner_desc`] with the coefficients lowest degree first.
#[inline(always)]
fn horner(c: &[f32], v: f32) -> f32 {
    let (&lead, rest) = c.split_last().expect("a polynomial has a coefficient");
    rest.iter().rev().fold(lead, |acc, &k| acc.mul_add(v, k))
}

/// erf for float64: libm's (correctly rounded in practice), as torch's `std::erf`.
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// `out[i] = erf_f32(xs[i])`, vectorized.
///
/// # Panics
/// If the lengths differ (as every kernel here).
pub fn erf_slice_f32<'o>(xs: &[f32], out: &'o mut [MaybeUninit<f32>]) -> &'o mut [f32] {
    map_f32(xs, out, erf_f32)
}

/// Exact GELU, x Phi(x) = x/2 (1 + erf(x/sqrt 2)), through [`erf_f32`], vectorized.
pub fn gelu_f32<'o>(xs: &[f32], out: &'o mut [MaybeUninit<f32>]) -> &'o mut [f32] {
    let alpha = FRAC_1_SQRT_2 as f32;
    let gelu = |x: f32| x * 0.5 * (1.0 + erf_f32(x * alpha));
    map_f32(xs, out, gelu)
}

/// The logistic sigmoid 1 / (1 + exp(-x)) as rustgrad's formulation computes it: exp of
/// -|x| only (no overflow, no lost precision for large |x|), then 1 / (1 + e) for x >= 0 and
/// e / (1 + e) below; float32 through [`exp_f32`], vectorized. NaN stays NaN.
pub fn sigmoid_f32<'o>(xs: &[f32], out: &'o mut [MaybeUninit<f32>]) -> &'o mut [f32] {
    map_f32(xs, out, |x| {
        let e = exp_nonpositive_f32(-x.abs());
        let d = 1.0 + e;
        if x >= 0.0 {
            1.0 / d
        } else {
            e / d
        }
    })
}

/// ReLU as torch's: 0 where x < 0, else x itself (so -0 stays -0 and NaN stays NaN, where
/// NumPy's `maximum(x, 0)` gives +0 for -0), as a blend that vectorizes.
pub fn relu_f32<'o>(xs: &[f32], out: &'o mut [MaybeUninit<f32>]) -> &'o mut [f32] {
    map_f32(xs, out, |x| f32::pick(x < 0.0, 0.0, x))
}

/// [`relu_f32`] in float64.
pub fn relu_f64<'o>(xs: &[f64], out: &'o mut [MaybeUninit<f64>]) -> &'o mut [f64] {
    map_plain(xs, out, |x| f64::pick(x < 0.0, 0.0, x))
}

/// [`sigmoid_f32`]'s formulation in float64, through the platform's exp.
pub fn sigmoid_f64<'o>(xs: &[f64], out: &'o mut [MaybeUninit<f64>]) -> &'o mut [f64] {
    map_plain(xs, out, |x| {
        let e = (-x.abs()).exp();
        if x >= 0.0 {
            1.0 / (1.0 + e)
        } else {
            e / (1.0 + e)
        }
    })
}

/// Exact GELU in float64, through libm's erf.
pub fn gelu_f64<'o>(xs: &[f64], out: &'o mut [MaybeUninit<f64>]) -> &'o mut [f64] {
    map_plain(xs, out, |x| x * 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2)))
}

/// The gradient of exact GELU, g (Phi(x) + x phi(x)) with phi the standard normal density,
/// vectorized: Phi through [`erf_exp_f32`] of u = x/sqrt 2 (within erf_f32's bounds, not always
/// its bits), and phi(x) = exp(-u^2) / sqrt(2 pi) from the exp that it computes.
pub fn gelu_backward_f32<'o>(
    gs: &[f32],
    xs: &[f32],
    out: &'o mut [MaybeUninit<f32>],
) -> &'o mut [f32] {
    let beta = 1.0 / (2.0 * PI).sqrt();
    let (alpha, beta) = (FRAC_1_SQRT_2 as f32, beta as f32);
    let grad = |g: f32, x: f32| {
        let (erf, e) = erf_exp_f32(x * alpha);
        let cdf = 0.5 * (1.0 + erf);
        g * (cdf + x * (beta * e))
    };
    map2_f32(gs, xs, out, grad)
}

/// The gradient of exact GELU in float64, through libm's erf and exp.
pub fn gelu_backward_f64<'o>(
    gs: &[f64],
    xs: &[f64],
    out: &'o mut [MaybeUninit<f64>],
) -> &'o mut [f64] {
    let beta = 1.0 / (2.0 * PI).sqrt();
    map2_plain(gs, xs, out, |g, x| {
        let cdf = 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2));
        g * (cdf + x * beta * (-0.5 * x * x).exp())
    })
}

/// The integer powers with a kernel of their own: torch's pow computes them by these products,
/// which NumPy's `power` does not round alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallPow {
    /// `x ** 2` as `x x`.
    Square,
    /// `x ** 3` as `(x x) x`.
    Cube,
    /// `x ** -1` as `1 / x`.
    Reciprocal,
    /// `x ** -2` as `1 / (x x)`.
    InvSquare,
}

impl SmallPow {
    /// The kernel for `x ** exponent`, if there is one.
    pub fn of(exponent: i64) -> Option<SmallPow> {
        match exponent {
            2 => Some(SmallPow::Square),
            3 => Some(SmallPow::Cube),
            -1 => Some(SmallPow::Reciprocal),
            -2 => Some(SmallPow::InvSquare),
            _ => None,
        }
    }
}

/// `x ** p` of each element for a [`SmallPow`], torch's products bit for bit, vectorized.
pub fn powi_f32<'o>(xs: &[f32], p: SmallPow, out: &'o mut [MaybeUninit<f32>]) -> &'o mut [f32] {
    match p {
        SmallPow::Square => map_f32(xs, out, |x| x * x),
        SmallPow::Cube => map_f32(xs, out, |x| x * x * x),
        SmallPow::Reciprocal => map_f32(xs, out, |x| 1.0 / x),
        SmallPow::InvSquare => map_f32(xs, out, |x| 1.0 / (x * x)),
    }
}

/// [`powi_f32`] for float64 elements.
pub fn powi_f64<'o>(xs: &[f64], p: SmallPow, out: &'o mut [MaybeUninit<f64>]) -> &'o mut [f64] {
    match p {
        SmallPow::Square => map_plain(xs, out, |x| x * x),
        SmallPow::Cube => map_plain(xs, out, |x| x * x * x),
        SmallPow::Reciprocal => map_plain(xs, out, |x| 1.0 / x),
        SmallPow::InvSquare => map_plain(xs, out, |x| 1.0 / (x * x)),
    }
}

/// `where(mask, a, b)`: `a[i]` where `mask[i]`, else `b[i]`, as a bit blend (the bits of the
/// chosen element, NaN payloads and signed zeros included).
pub fn select<'o, T: Real>(
    mask: &[bool],
    a: &[T],
    b: &[T],
    out: &'o mut [MaybeUninit<T>],
) -> &'o mut [T] {
    assert!(
        mask.len() == a.len() && b.len() == a.len() && out.len() == a.len(),
        "select: lengths differ"
    );
    for (((o, &k), &x), &y) in out.iter_mut().zip(mask).zip(a).zip(b) {
        o.write(T::pick(k, x, y));
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

/// `where(mask, a, s)` for a number `s`, as [`select`].
pub fn select_scalar<'o, T: Real>(
    mask: &[bool],
    a: &[T],
    s: T,
    out: &'o mut [MaybeUninit<T>],
) -> &'o mut [T] {
    assert!(
        mask.len() == a.len() && out.len() == a.len(),
        "select_scalar: lengths differ"
    );
    for ((o, &k), &x) in out.iter_mut().zip(mask).zip(a) {
        o.write(T::pick(k, x, s));
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

/// ReLU's gradient from its output (torch's `threshold_backward` at 0): `grad[i]` where
/// `result[i]` is above 0 or NaN, else +0, as a bit blend (the fallback's `where(~(result <=
/// 0), grad, 0)` bit for bit), in one pass without the two masks.
pub fn threshold_backward<'o, T: Real>(
    grad: &[T],
    result: &[T],
    out: &'o mut [MaybeUninit<T>],
) -> &'o mut [T] {
    assert!(
        grad.len() == result.len() && out.len() == grad.len(),
        "threshold_backward: lengths differ"
    );
    let zero = T::of(0.0);
    for ((o, &g), &y) in out.iter_mut().zip(grad).zip(result) {
        o.write(T::pick(y <= zero, zero, g));
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

/// A `Vec` of `n` elements written by `fill` (one of the kernels above, say): `fill` gets the
/// `n` uninitialized slots and returns them initialized, so nothing is zeroed first.
///
/// # Panics
/// If `fill` returns another slice than the slots it was given.
pub fn filled_vec<T>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T]) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    let slots = &mut v.spare_capacity_mut()[..n];
    let at = slots.as_ptr() as *const T;
    let done = fill(slots);
    assert!(
        std::ptr::eq(done.as_ptr(), at) && done.len() == n,
        "filled_vec: fill must return the slots it was given"
    );
    // SAFETY: `done`, a `&mut [T]`, covers exactly the first n slots, so each holds a T.
    unsafe { v.set_len(n) };
    v
}

/// # Safety
/// Every element of `s` is initialized.
unsafe fn assume_init<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller vouches for the contents.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// `out[i] = f(xs[i])`, not dispatched (the float64 kernels: libm calls, or the baseline
/// build's vectors).
#[inline(always)]
fn map_plain<'o, T, F: Fn(T) -> T>(xs: &[T], out: &'o mut [MaybeUninit<T>], f: F) -> &'o mut [T]
where
    T: Copy,
{
    assert_eq!(xs.len(), out.len(), "lengths differ");
    for (o, &x) in out.iter_mut().zip(xs) {
        o.write(f(x));
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

/// `out[i] = f(a[i], b[i])`, not dispatched, as `map_plain`.
#[inline(always)]
fn map2_plain<'o, T, F: Fn(T, T) -> T>(
    a: &[T],
    b: &[T],
    out: &'o mut [MaybeUninit<T>],
    f: F,
) -> &'o mut [T]
where
    T: Copy,
{
    assert!(a.len() == b.len() && out.len() == a.len(), "lengths differ");
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

/// `out[i] = f(xs[i])`, compiled again for AVX-512 and for AVX2+FMA, the widest the CPU has
/// ([`Isa::current`]), so the loop runs 16 or 8 lanes wide.
fn map_f32<'o, F: Fn(f32) -> f32 + Copy>(
    xs: &[f32],
    out: &'o mut [MaybeUninit<f32>],
    f: F,
) -> &'o mut [f32] {
    assert_eq!(xs.len(), out.len(), "lengths differ");
    match Isa::current() {
        // SAFETY (both): `Isa::current` never exceeds what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { map_f32_avx512(xs, out, f) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { map_f32_avx2(xs, out, f) },
        _ => map_f32_loop(xs, out, f),
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

#[inline(always)]
fn map_f32_loop<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    for (o, &x) in out.iter_mut().zip(xs) {
        o.write(f(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn map_f32_avx512<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    map_f32_loop(xs, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_f32_avx2<F: Fn(f32) -> f32 + Copy>(xs: &[f32], out: &mut [MaybeUninit<f32>], f: F) {
    map_f32_loop(xs, out, f)
}

/// `out[i] = f(a[i], b[i])`, dispatched as `map_f32`.
fn map2_f32<'o, F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &'o mut [MaybeUninit<f32>],
    f: F,
) -> &'o mut [f32] {
    assert!(a.len() == b.len() && out.len() == a.len(), "lengths differ");
    match Isa::current() {
        // SAFETY (both): `Isa::current` never exceeds what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { map2_f32_avx512(a, b, out, f) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { map2_f32_avx2(a, b, out, f) },
        _ => map2_f32_loop(a, b, out, f),
    }
    // SAFETY: the loop wrote every slot (the lengths are equal).
    unsafe { assume_init(out) }
}

#[inline(always)]
fn map2_f32_loop<F: Fn(f32, f32) -> f32 + Copy>(
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
#[target_feature(enable = "avx512f")]
unsafe fn map2_f32_avx512<F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    f: F,
) {
    map2_f32_loop(a, b, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map2_f32_avx2<F: Fn(f32, f32) -> f32 + Copy>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    f: F,
) {
    map2_f32_loop(a, b, out, f)
}
