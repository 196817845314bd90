//! What the kernel tests share: the lengths that reach every SIMD tail, deterministic inputs
//! with the special values in them, "same result" and ulp distance, a run on every instruction
//! set the CPU has, and proptest strategies.

#![allow(dead_code)]

use std::fmt::Debug;
use std::mem::MaybeUninit;

use proptest::prelude::*;
use rustgrad_kernels::{filled_vec, with_isa_cap, Isa, Real};

/// Lengths around the 4-, 8- and 16-lane blocks (a tail of every size class) and a long one.
pub const LENS: [usize; 10] = [0, 1, 7, 8, 15, 16, 17, 31, 33, 1000];

/// The values every input carries somewhere: NaN, both infinities and zeros, subnormals, the
/// edges of `exp_f32` (-87, 88) and of `erf_f32`'s branches (1, 4), huge and tiny numbers.
pub const SPECIALS: [f64; 22] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1e-40,
    -1e-40,
    1.0,
    -1.0,
    0.999_999,
    4.0,
    -4.0,
    3.999,
    87.0,
    -87.0,
    -87.5,
    88.5,
    1e30,
    -1e30,
    1e-30,
    0.5,
    -3.25,
];

/// The float types, with what the tests need beyond [`Real`].
pub trait Float: Real + Debug + PartialEq + 'static {
    fn bits(self) -> u64;
    fn to_f64(self) -> f64;
}

impl Float for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Float for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Bit for bit, except that any NaN matches any NaN: which operand's payload a SIMD instruction
/// propagates when two NaNs meet is not part of the contract.
pub fn same<T: Float>(a: T, b: T) -> bool {
    a.bits() == b.bits() || (a.is_nan() && b.is_nan())
}

pub fn assert_same<T: Float>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

/// As [`assert_same`], for proptest bodies.
pub fn check_same<T: Float>(got: &[T], want: &[T], what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "{}: lengths", what);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        prop_assert!(
            same(g, w),
            "{}: element {}: got {:?}, want {:?}",
            what,
            i,
            g,
            w
        );
    }
    Ok(())
}

/// The distance between two finite float32s in representable steps (0 for equal, 1 for
/// neighbours, +0 and -0 equal).
pub fn ulps_f32(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let b = x.to_bits() as i32;
        (if b < 0 { i32::MIN.wrapping_sub(b) } else { b }) as i64
    };
    (key(a) - key(b)).unsigned_abs()
}

/// `f` once per instruction set this CPU runs (the kernels capped to it), narrowest first.
pub fn on_every_isa(mut f: impl FnMut(Isa)) {
    for isa in Isa::available() {
        with_isa_cap(isa, || f(isa));
    }
}

/// A kernel's output as a Vec.
pub fn run<T>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T]) -> Vec<T> {
    filled_vec(n, fill)
}

/// n deterministic values: normal-ish of scale `scale`, with the specials spread over the
/// slice (each at a different offset in the SIMD blocks) when it is long enough.
pub fn sample<T: Real>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    let mut v = ordinary(n, seed, scale);
    if n >= 2 * SPECIALS.len() {
        for (k, &x) in SPECIALS.iter().enumerate() {
            v[(k * 7 + 3) % n] = T::of(x);
        }
    }
    v
}

/// n deterministic normal-ish values of scale `scale`, nothing special among them.
pub fn ordinary<T: Real>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        // xorshift64*
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            // the sum of three uniforms: bell-shaped, mean 0
            let u = next() + next() + next() - 1.5;
            T::of(u * 2.0 * scale)
        })
        .collect()
}

/// Any float32: all bit patterns (NaN, infinities, subnormals) or ordinary values, half each.
pub fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![any::<f32>(), -12.0f32..12.0]
}

pub fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![any::<f64>(), -12.0f64..12.0]
}

/// A vector of [`any_f32`], of a length among `LENS` (below 1000) or any up to 70.
pub fn vec_f32() -> impl Strategy<Value = Vec<f32>> {
    lens().prop_flat_map(|n| proptest::collection::vec(any_f32(), n))
}

pub fn vec_f64() -> impl Strategy<Value = Vec<f64>> {
    lens().prop_flat_map(|n| proptest::collection::vec(any_f64(), n))
}

pub fn lens() -> impl Strategy<Value = usize> {
    prop_oneof![proptest::sample::select(&LENS[..9]), 0usize..70]
}
