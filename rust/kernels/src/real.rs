//! The float types the generic kernels run on.

use crate::elementwise::exp_f32;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`, with the few operations the generic kernels need, each rounding as the
/// kernels have always rounded it.
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + sealed::Sealed
{
    /// Whether `exp_k` is inline arithmetic (float32's [`exp_f32`]), so that a row kernel
    /// around it gains from wider vectors; float64's is a libm call per element, and its row
    /// kernels run the baseline build only.
    const INLINE_EXP: bool;
    /// NumPy's conversion of a Python float (round to nearest).
    fn of(x: f64) -> Self;
    /// The value as a float64 (exact).
    fn widen(self) -> f64;
    /// exp as the kernels compute it: [`exp_f32`] for float32, libm's for float64.
    fn exp_k(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
    /// `if keep { a } else { b }` by bit masks: a branch on a random mask mispredicts half the
    /// time, and this form vectorizes.
    fn pick(keep: bool, a: Self, b: Self) -> Self;
    /// (key, is NaN) by integer arithmetic alone: for numbers, `a.key < b.key` exactly when
    /// `a < b` (-0 and +0 share a key), so a running maximum can select in integer registers
    /// (a float select compiles to a branch below AVX-512, which mispredicts on random data).
    fn order_key(self) -> (i64, bool);
}

macro_rules! real {
    ($t:ident, $bits:ty, inline_exp: $inline:expr, exp: $exp:path) => {
        impl Real for $t {
            const INLINE_EXP: bool = $inline;
            #[inline]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn widen(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn exp_k(self) -> Self {
                $exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline]
            fn pick(keep: bool, a: Self, b: Self) -> Self {
                let m = (0 as $bits).wrapping_sub(keep as $bits);
                $t::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
            }
            #[inline(always)]
            fn order_key(self) -> (i64, bool) {
                const BITS: u32 = <$bits>::BITS;
                let b = self.to_bits();
                let mag = b & (<$bits>::MAX >> 1);
                let inf = $t::INFINITY.to_bits();
                // sign-magnitude to two's complement: -mag for a negative number
                let neg = (b >> (BITS - 1)) as i64;
                ((mag as i64 ^ -neg) + neg, mag > inf)
            }
        }
    };
}

real!(f32, u32, inline_exp: true, exp: exp_f32);
real!(f64, u64, inline_exp: false, exp: f64::exp);
