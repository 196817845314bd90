//! Which compiled copy of a kernel runs: the widest instruction set the CPU has (found at run
//! time), capped per thread by [`with_isa_cap`] so tests and benches can run every copy.

use std::cell::Cell;

/// The instruction sets the kernels are compiled for, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// The loops as the baseline target compiles them (SSE2 on x86_64, 4 float32 lanes). Without
    /// FMA hardware each `mul_add` of erf and exp is a call to libm's `fmaf`, so those kernels
    /// run ~100x slower here than on AVX2: the path of CPUs older than AVX2 only.
    Scalar,
    /// AVX2 with FMA: 8 float32 lanes (elementwise float32, softmax and layer_norm rows, the
    /// plain Adam step). Most x86 CPUs stop here (AMD before Zen 4, Intel's client cores).
    Avx2Fma,
    /// AVX-512F: 16 float32 lanes (the same kernels, and max_pool2d's branch-free select).
    Avx512,
}

thread_local! {
    static CAP: Cell<Isa> = const { Cell::new(Isa::Avx512) };
}

impl Isa {
    /// The widest the CPU has.
    pub fn cpu() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2Fma;
            }
        }
        Isa::Scalar
    }

    /// What a kernel called on this thread now uses: the CPU's widest, at most the cap of an
    /// enclosing [`with_isa_cap`]. Never more than the CPU has, so dispatching on it is sound.
    pub fn current() -> Isa {
        Isa::cpu().min(CAP.with(Cell::get))
    }

    /// Every level this CPU runs, narrowest first (`Scalar` always).
    pub fn available() -> Vec<Isa> {
        let cpu = Isa::cpu();
        [Isa::Scalar, Isa::Avx2Fma, Isa::Avx512]
            .into_iter()
            .filter(|&i| i <= cpu)
            .collect()
    }
}

/// `$avx512` and `$avx2`: the row loop `$body` (generic over `T: Real`, returning nothing)
/// compiled again for AVX-512F and for AVX2+FMA. Unsafe to call: only where [`Isa::current`]
/// says the CPU has that set.
macro_rules! isa_copies {
    ($body:ident => $avx512:ident, $avx2:ident; ($($arg:ident: $ty:ty),* $(,)?)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $avx512<T: Real>($($arg: $ty),*) {
            $body($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $avx2<T: Real>($($arg: $ty),*) {
            $body($($arg),*)
        }
    };
}
pub(crate) use isa_copies;

/// Runs `f` with the kernels called on this thread using at most `cap` (restored afterwards,
/// also on a panic). Only narrows: a cap above the CPU's widest changes nothing.
pub fn with_isa_cap<R>(cap: Isa, f: impl FnOnce() -> R) -> R {
    struct Restore(Isa);
    impl Drop for Restore {
        fn drop(&mut self) {
            CAP.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CAP.with(|c| c.replace(cap)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_restored_after_a_panic() {
        let caught = std::panic::catch_unwind(|| with_isa_cap(Isa::Scalar, || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(Isa::current(), Isa::cpu());
    }

    #[test]
    fn a_cap_above_the_cpu_changes_nothing() {
        with_isa_cap(Isa::Avx512, || assert_eq!(Isa::current(), Isa::cpu()));
    }
}
