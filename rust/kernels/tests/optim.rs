//! The SGD and Adam steps against their NumPy formulations (`optim/sgd.py`'s loop,
//! `optim/adam.py`'s `_array_step`) transcribed here as whole-array operations, each rounded to
//! the parameter's dtype, a Python float converted to it first (NumPy 2's rule): bit for bit
//! (any NaN matching any NaN), for every combination of options, float32 and float64, at every
//! length class, on every instruction set the CPU has (the plain Adam step is the one with AVX-512
//! and AVX2 copies), over several steps, with NaN and infinities among the gradients.

mod common;

use common::*;
use proptest::prelude::*;
use rustgrad_kernels::*;

/// NumPy's elementwise operations on whole arrays, as the Python optimizers spell them.
fn scale<T: Float>(s: f64, a: &[T]) -> Vec<T> {
    a.iter().map(|&x| T::of(s) * x).collect()
}

fn mul<T: Float>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(&x, &y)| x * y).collect()
}

fn add<T: Float>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(&x, &y)| x + y).collect()
}

fn sub<T: Float>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(&x, &y)| x - y).collect()
}

fn div<T: Float>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(&x, &y)| x / y).collect()
}

/// `_fma(xp, s, b, c)` = s * b + c, two roundings.
fn fma<T: Float>(s: f64, b: &[T], c: &[T]) -> Vec<T> {
    add(&scale(s, b), c)
}

/// `optim/sgd.py`'s loop for one parameter.
fn sgd_numpy<T: Float>(a: &Sgd, p: &mut Vec<T>, grad: &[T], buf: &mut Option<Vec<T>>) {
    let mut g = grad.to_vec();
    if a.maximize {
        g = g.iter().map(|&x| -x).collect();
    }
    if a.weight_decay != 0.0 {
        g = fma(a.weight_decay, p, &g);
    }
    if a.momentum != 0.0 {
        let b = buf.as_mut().expect("a buffer");
        if a.init_buffer {
            *b = g.clone();
        } else {
            *b = scale(a.momentum, b);
            *b = fma(1.0 - a.dampening, &g, b);
        }
        g = if a.nesterov {
            fma(a.momentum, b, &g)
        } else {
            b.clone()
        };
    }
    *p = fma(-a.lr, &g, p);
}

/// `optim/adam.py`'s `_array_step` for one parameter.
fn adam_numpy<T: Float>(a: &Adam, st: &mut AdamState<T>, grad: &[T]) {
    let mut g = grad.to_vec();
    if a.maximize {
        g = g.iter().map(|&x| -x).collect();
    }
    if a.weight_decay != 0.0 {
        if a.decoupled {
            st.p = scale(1.0 - a.lr * a.weight_decay, &st.p);
        } else {
            g = fma(a.weight_decay, &st.p, &g);
        }
    }
    // _lerp_(xp, m, g, 1 - beta1)
    let w = 1.0 - a.beta1;
    let diff = sub(&g, &st.m);
    st.m = if w.abs() < 0.5 {
        fma(w, &diff, &st.m)
    } else {
        fma(-(1.0 - w), &diff, &g)
    };
    st.v = scale(a.beta2, &st.v);
    st.v = add(&mul(&scale(1.0 - a.beta2, &g), &g), &st.v);
    let second = match st.vmax.as_mut() {
        Some(vmax) => {
            // np.maximum: NaN wins
            for (x, &v) in vmax.iter_mut().zip(&st.v) {
                if v.is_nan() || *x < v {
                    *x = v;
                }
            }
            vmax.clone()
        }
        None => st.v.clone(),
    };
    let denom: Vec<T> = second
        .iter()
        .map(|&v| v.sqrt() / T::of(a.bias_correction2_sqrt))
        .collect();
    let denom: Vec<T> = denom.iter().map(|&d| d + T::of(a.eps)).collect();
    st.p = add(&st.p, &div(&scale(-a.step_size, &st.m), &denom));
}

#[derive(Clone, Debug)]
struct AdamState<T> {
    p: Vec<T>,
    m: Vec<T>,
    v: Vec<T>,
    vmax: Option<Vec<T>>,
}

impl<T: Float> AdamState<T> {
    fn new(n: usize, seed: u64, amsgrad: bool) -> Self {
        let v: Vec<T> = ordinary::<T>(n, seed + 2, 1.0)
            .iter()
            .map(|&x| x * x)
            .collect();
        let vmax = amsgrad.then(|| {
            let mut x: Vec<T> = ordinary::<T>(n, seed + 3, 1.0)
                .iter()
                .map(|&x| x * x)
                .collect();
            if n > 2 {
                x[2] = T::of(f64::NAN); // a NaN already in the running maximum stays
            }
            x
        });
        AdamState {
            p: ordinary(n, seed, 1.0),
            m: ordinary(n, seed + 1, 0.1),
            v,
            vmax,
        }
    }

    fn step(&mut self, a: &Adam, g: &[T]) {
        adam_step(
            a,
            &mut self.p,
            g,
            &mut self.m,
            &mut self.v,
            self.vmax.as_deref_mut(),
        );
    }

    fn assert_same(&self, want: &Self, what: &str) {
        assert_same(&self.p, &want.p, &format!("param {what}"));
        assert_same(&self.m, &want.m, &format!("exp_avg {what}"));
        assert_same(&self.v, &want.v, &format!("exp_avg_sq {what}"));
        if let (Some(x), Some(y)) = (&self.vmax, &want.vmax) {
            assert_same(x, y, &format!("max_exp_avg_sq {what}"));
        }
    }
}

/// Adam's hyper-parameters at step `t`, as `optim/adam.py` derives them (lr 1e-2, beta2
/// 0.999, eps 1e-8 unless `with` says otherwise).
fn adam_args(t: i32, beta1: f64, wd: f64, decoupled: bool, maximize: bool) -> Adam {
    adam_with(
        t,
        1e-2,
        beta1,
        0.999,
        Adam {
            weight_decay: wd,
            decoupled,
            maximize,
            ..BASE
        },
    )
}

const BASE: Adam = Adam {
    lr: 0.0,
    beta1: 0.0,
    beta2: 0.0,
    eps: 1e-8,
    weight_decay: 0.0,
    decoupled: false,
    maximize: false,
    step_size: 0.0,
    bias_correction2_sqrt: 0.0,
};

/// `options` at step `t` with this lr and these betas, and the step's derived constants.
fn adam_with(t: i32, lr: f64, beta1: f64, beta2: f64, options: Adam) -> Adam {
    Adam {
        lr,
        beta1,
        beta2,
        step_size: lr / (1.0 - beta1.powi(t)),
        bias_correction2_sqrt: (1.0 - beta2.powi(t)).sqrt(),
        ..options
    }
}

fn sgd_args(bits: u32) -> Sgd {
    let on = |k: u32| bits & (1 << k) != 0;
    Sgd {
        lr: 0.1,
        weight_decay: if on(0) { 0.01 } else { 0.0 },
        momentum: if on(1) { 0.9 } else { 0.0 },
        dampening: if on(2) { 0.1 } else { 0.0 },
        nesterov: on(3),
        maximize: on(4),
        init_buffer: on(5),
    }
}

fn check_sgd<T: Float>(n: usize, seed: u64) {
    for bits in 0..64 {
        let a = sgd_args(bits);
        for with_buf in [false, true] {
            if a.momentum != 0.0 && !with_buf {
                continue; // refused (the binding answers False before calling)
            }
            let (mut p, g) = (ordinary::<T>(n, seed, 1.0), sample::<T>(n, seed + 1, 1.0));
            let mut b = with_buf.then(|| ordinary::<T>(n, seed + 2, 1.0));
            let (mut want_p, mut want_b) = (p.clone(), b.clone());
            for _ in 0..3 {
                sgd_step(&a, &mut p, &g, b.as_deref_mut());
                sgd_numpy(&a, &mut want_p, &g, &mut want_b);
            }
            let what = format!("sgd {a:?} n={n}");
            assert_same(&p, &want_p, &what);
            if let (Some(b), Some(w)) = (&b, &want_b) {
                assert_same(b, w, &format!("buffer {what}"));
            }
        }
    }
}

fn check_adam<T: Float>(n: usize, seed: u64) {
    for beta1 in [0.9, 0.5, 0.3] {
        for wd in [0.0, 0.01] {
            for bits in 0..8u32 {
                let (decoupled, maximize, amsgrad) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
                let start = AdamState::<T>::new(n, seed, amsgrad);
                let mut want = start.clone();
                for t in 1..=3 {
                    let g = sample::<T>(n, seed + 10 + t as u64, 1.0);
                    adam_numpy(&adam_args(t, beta1, wd, decoupled, maximize), &mut want, &g);
                }
                on_every_isa(|isa| {
                    let mut got = start.clone();
                    for t in 1..=3 {
                        let g = sample::<T>(n, seed + 10 + t as u64, 1.0);
                        got.step(&adam_args(t, beta1, wd, decoupled, maximize), &g);
                    }
                    let what = format!(
                        "beta1={beta1} wd={wd} decoupled={decoupled} maximize={maximize} \
                         amsgrad={amsgrad} n={n} {isa:?}"
                    );
                    got.assert_same(&want, &what);
                });
            }
        }
    }
}

#[test]
fn sgd_matches_the_numpy_formulation() {
    for (k, &n) in LENS.iter().enumerate() {
        check_sgd::<f32>(n, k as u64);
        check_sgd::<f64>(n, k as u64);
    }
}

#[test]
fn adam_matches_the_numpy_formulation() {
    for (k, &n) in LENS.iter().enumerate() {
        check_adam::<f32>(n, k as u64);
        check_adam::<f64>(n, k as u64);
    }
}

#[test]
fn amsgrad_keeps_a_nan_maximum() {
    let a = adam_args(1, 0.9, 0.0, false, false);
    let (mut p, mut m, mut v) = ([1.0f32; 2], [0.0f32; 2], [0.0f32; 2]);
    let mut vmax = [f32::NAN, 5.0];
    adam_step(&a, &mut p, &[1.0, 1.0], &mut m, &mut v, Some(&mut vmax));
    assert!(vmax[0].is_nan() && p[0].is_nan());
    assert_eq!(vmax[1], 5.0);
}

#[test]
#[should_panic(expected = "momentum without a buffer")]
fn sgd_momentum_needs_a_buffer() {
    sgd_step(&sgd_args(2), &mut [0.0f32; 3], &[1.0; 3], None);
}

#[test]
#[should_panic(expected = "lengths differ")]
fn adam_lengths_must_agree() {
    let a = adam_args(1, 0.9, 0.0, false, false);
    adam_step(
        &a,
        &mut [0.0f64; 3],
        &[1.0; 3],
        &mut [0.0; 3],
        &mut [0.0; 2],
        None,
    );
}

/// One step from a fresh parameter and buffer, against `sgd_numpy`.
fn sgd_case<T: Float>(a: &Sgd, g: &[T], seed: u64) -> Result<(), TestCaseError> {
    let n = g.len();
    let (mut p, mut want_p) = (ordinary::<T>(n, seed, 1.0), ordinary::<T>(n, seed, 1.0));
    let mut b = Some(ordinary::<T>(n, seed + 1, 1.0));
    let mut want_b = b.clone();
    sgd_step(a, &mut p, g, b.as_deref_mut());
    sgd_numpy(a, &mut want_p, g, &mut want_b);
    check_same(&p, &want_p, "param")?;
    check_same(b.as_ref().unwrap(), want_b.as_ref().unwrap(), "buffer")
}

proptest! {
    #[test]
    fn prop_adam_any_options(
        g in vec_f32(),
        beta1 in prop_oneof![Just(0.9), Just(0.5), 0.0f64..1.0],
        beta2 in 0.0f64..1.0,
        wd in prop_oneof![Just(0.0), 0.0f64..0.5],
        lr in 1e-5f64..1.0,
        t in 1i32..50,
        bits in 0u32..8,
        seed in any::<u64>(),
    ) {
        let n = g.len();
        let (decoupled, maximize, amsgrad) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
        let a = adam_with(t, lr, beta1, beta2, Adam { weight_decay: wd, decoupled, maximize, ..BASE });
        let start = AdamState::<f32>::new(n, seed, amsgrad);
        let mut want = start.clone();
        adam_numpy(&a, &mut want, &g);
        let g64: Vec<f64> = g.iter().map(|&x| x as f64).collect();
        let start64 = AdamState::<f64>::new(n, seed, amsgrad);
        let mut want64 = start64.clone();
        adam_numpy(&a, &mut want64, &g64);
        for isa in Isa::available() {
            with_isa_cap(isa, || -> Result<(), TestCaseError> {
                let mut got = start.clone();
                got.step(&a, &g);
                check_same(&got.p, &want.p, "param")?;
                check_same(&got.m, &want.m, "exp_avg")?;
                check_same(&got.v, &want.v, "exp_avg_sq")?;
                let mut got = start64.clone();
                got.step(&a, &g64);
                check_same(&got.p, &want64.p, "param f64")?;
                check_same(&got.m, &want64.m, "exp_avg f64")
            })?;
        }
    }

    #[test]
    fn prop_sgd_any_options(
        g in vec_f64(),
        bits in 0u32..64,
        lr in 1e-5f64..1.0,
        seed in any::<u64>(),
    ) {
        let a = Sgd { lr, ..sgd_args(bits) };
        sgd_case(&a, &g, seed)?;
        sgd_case(&a, &g.iter().map(|&x| x as f32).collect::<Vec<_>>(), seed)?;
    }
}
