//! One SGD or Adam step over one parameter, in place and in one pass, with exactly the
//! roundings of the NumPy formulations in `optim/sgd.py` and `optim/adam.py`: each product and
//! sum rounded to the parameter's dtype, the hyper-parameters converted to it once.

use crate::isa::isa_copies;
use crate::{Isa, Real};

/// The hyper-parameters of one SGD step (`optim/sgd.py` passes them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sgd {
    pub lr: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub nesterov: bool,
    pub maximize: bool,
    /// The momentum buffer was just made: it takes the gradient.
    pub init_buffer: bool,
}

/// One SGD step: for each element, g = grad (negated to maximize), plus wd p; with momentum,
/// buf = g (a fresh buffer) or (1 - dampening) g + momentum buf, and g = momentum buf + g
/// (Nesterov) or buf; then p = -lr g + p.
///
/// # Panics
/// If the lengths differ, or `momentum` is not 0 and there is no buffer.
pub fn sgd_step<T: Real>(a: &Sgd, ps: &mut [T], gs: &[T], mut bs: Option<&mut [T]>) {
    assert!(
        ps.len() == gs.len() && bs.as_ref().is_none_or(|b| b.len() == gs.len()),
        "sgd_step: lengths differ"
    );
    let with_mom = a.momentum != 0.0;
    assert!(
        !with_mom || bs.is_some(),
        "sgd_step: momentum without a buffer"
    );
    let (wd, mom, damp1, neg_lr) = (
        T::of(a.weight_decay),
        T::of(a.momentum),
        T::of(1.0 - a.dampening),
        T::of(-a.lr),
    );
    for i in 0..ps.len() {
        let mut g = gs[i];
        if a.maximize {
            g = -g;
        }
        if a.weight_decay != 0.0 {
            g = wd * ps[i] + g;
        }
        if with_mom {
            let b = &mut bs.as_mut().expect("checked")[i];
            *b = if a.init_buffer {
                g
            } else {
                damp1 * g + *b * mom
            };
            g = if a.nesterov { mom * *b + g } else { *b };
        }
        ps[i] = neg_lr * g + ps[i];
    }
}

/// The hyper-parameters of one Adam/AdamW step (`optim/adam.py` passes them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// AdamW: the decay multiplies the parameter by 1 - lr wd instead of adding wd p to the
    /// gradient.
    pub decoupled: bool,
    pub maximize: bool,
    /// lr / (1 - beta1 ** step)
    pub step_size: f64,
    /// (1 - beta2 ** step) ** 0.5
    pub bias_correction2_sqrt: f64,
}

/// One Adam step over a parameter `ps`, its gradient `gs`, and its state `ms` (exp_avg), `vs`
/// (exp_avg_sq) and, for amsgrad, `vmax` (max_exp_avg_sq): m moves towards g by torch's lerp
/// (of its two formulas, the one for the nearer end), v = (1 - beta2) g g + beta2 v, vmax =
/// max(vmax, v) with NaN winning (NumPy's maximum), and p += -step_size m / (sqrt(v) / bc2 +
/// eps). The usual Adam/AdamW (no maximize, no amsgrad, no coupled weight decay) runs one
/// branch-free loop, 16 lanes wide where the CPU has AVX-512; its roundings are the same.
///
/// # Panics
/// If the lengths differ.
pub fn adam_step<T: Real>(
    a: &Adam,
    ps: &mut [T],
    gs: &[T],
    ms: &mut [T],
    vs: &mut [T],
    mut vmax: Option<&mut [T]>,
) {
    let n = gs.len();
    assert!(
        ps.len() == n
            && ms.len() == n
            && vs.len() == n
            && vmax.as_ref().is_none_or(|x| x.len() == n),
        "adam_step: lengths differ"
    );
    let w = 1.0 - a.beta1; // the lerp weight of exp_avg towards the gradient
    let (wd, decay) = (T::of(a.weight_decay), T::of(1.0 - a.lr * a.weight_decay));
    let (w_t, w_far) = (T::of(w), T::of(-(1.0 - w)));
    let (beta2, one_beta2) = (T::of(a.beta2), T::of(1.0 - a.beta2));
    let (bc2, eps, neg_step) = (
        T::of(a.bias_correction2_sqrt),
        T::of(a.eps),
        T::of(-a.step_size),
    );
    if !a.maximize && vmax.is_none() && (a.weight_decay == 0.0 || a.decoupled) {
        let c = AdamConsts {
            // decoupled decay multiplies by 1 - lr wd (exactly 1 without weight decay)
            decay: if a.decoupled { decay } else { T::of(1.0) },
            near: w.abs() < 0.5,
            w_t,
            w_far,
            beta2,
            one_beta2,
            bc2,
            eps,
            neg_step,
        };
        adam_plain_dispatch(ps, gs, ms, vs, &c);
        return;
    }
    for i in 0..ps.len() {
        let mut g = gs[i];
        if a.maximize {
            g = -g;
        }
        if a.weight_decay != 0.0 {
            if a.decoupled {
                ps[i] = ps[i] * decay;
            } else {
                g = wd * ps[i] + g;
            }
        }
        // torch's lerp: two formulas, by which end the weight is nearer
        let diff = g - ms[i];
        ms[i] = if w.abs() < 0.5 {
            w_t * diff + ms[i]
        } else {
            w_far * diff + g
        };
        let vi = vs[i] * beta2;
        vs[i] = one_beta2 * g * g + vi;
        let mut second = vs[i];
        if let Some(xs) = vmax.as_mut() {
            // NumPy's maximum: NaN wins
            let x = xs[i];
            xs[i] = if second.is_nan() || x < second {
                second
            } else {
                x
            };
            second = xs[i];
        }
        let denom = second.sqrt() / bc2 + eps;
        ps[i] = ps[i] + neg_step * ms[i] / denom;
    }
}

/// Adam's per-step constants in the parameter's dtype, for `adam_plain`.
struct AdamConsts<T> {
    decay: T,
    near: bool,
    w_t: T,
    w_far: T,
    beta2: T,
    one_beta2: T,
    bc2: T,
    eps: T,
    neg_step: T,
}

/// The loop of `adam_step` without maximize, amsgrad or coupled weight decay, with the same
/// roundings, written without branches (both lerp formulas computed, one kept) so it
/// vectorizes: sqrt and the division, scalar, cost ~3 ns per parameter.
#[inline(always)]
fn adam_plain<T: Real>(ps: &mut [T], gs: &[T], ms: &mut [T], vs: &mut [T], c: &AdamConsts<T>) {
    for (((p, &g), m), v) in ps.iter_mut().zip(gs).zip(ms.iter_mut()).zip(vs.iter_mut()) {
        let decayed = *p * c.decay;
        let diff = g - *m;
        let near = c.w_t * diff + *m;
        let far = c.w_far * diff + g;
        let mi = if c.near { near } else { far };
        *m = mi;
        let vi = *v * c.beta2;
        let vi = c.one_beta2 * g * g + vi;
        *v = vi;
        let denom = vi.sqrt() / c.bc2 + c.eps;
        *p = decayed + c.neg_step * mi / denom;
    }
}

isa_copies!(adam_plain => adam_plain_avx512, adam_plain_avx2;
    (ps: &mut [T], gs: &[T], ms: &mut [T], vs: &mut [T], c: &AdamConsts<T>));

fn adam_plain_dispatch<T: Real>(
    ps: &mut [T],
    gs: &[T],
    ms: &mut [T],
    vs: &mut [T],
    c: &AdamConsts<T>,
) {
    match Isa::current() {
        // SAFETY (both): `Isa::current` never exceeds what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { adam_plain_avx512(ps, gs, ms, vs, c) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { adam_plain_avx2(ps, gs, ms, vs, c) },
        _ => adam_plain(ps, gs, ms, vs, c),
    }
}
