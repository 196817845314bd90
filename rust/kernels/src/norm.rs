//! layer_norm over rows (the last dim of an (N, D) array), forward and backward, with the
//! formulas of the CUDA backend's kernels (`_backends/cuda_kernels.py`): each row's mean,
//! variance and sums in float64, every element computed in float64 from its float64 inputs and
//! rounded once to the array's dtype. The backward's input gradient is `_ops/norm.py`'s
//! `_norm_bw_x_raw` (`rstd * gw + b * x + c`, gw the gradient times the weight), so an
//! infinite weight gives torch's inf and nan.
//!
//! Rounding: a float32 result is the float64 value rounded once, so it is within one ulp (half
//! an ulp plus the float64 error) of the exact value; NumPy's float32 formulation, which these
//! replace on the CPU, rounds each of its ~8 steps to float32 and lands within a few ulps.
//! Sums run as 8 float64 lanes folded in a fixed order, so every instruction set and every split
//! over threads gives the same bits.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::isa::isa_copies;
use crate::{Isa, Real, PAR_MIN_ELEMS};

/// Lanes of the row sums: one AVX-512 register of float64.
const LANES: usize = 8;

/// The lanes added in order (a sequential fold: a pairwise tree makes LLVM split the lanes
/// into 2-wide vectors).
#[inline(always)]
fn fold(acc: [f64; LANES]) -> f64 {
    acc.iter().fold(0.0, |a, &v| a + v)
}

/// The sum of `f(x)` over a row: 8 running lanes (element i into lane i mod 8) from +0, the
/// lanes folded in order, then the elements past the last full 8 added one by one.
#[inline(always)]
fn lane_sum<T: Real>(xs: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        let c: &[T; LANES] = c.try_into().expect("a full chunk");
        let v: [f64; LANES] = std::array::from_fn(|l| f(c[l]));
        for l in 0..LANES {
            acc[l] += v[l];
        }
    }
    let mut total = fold(acc);
    for &v in rest {
        total += f(v);
    }
    total
}

/// (sum of gw x, sum of gw) over a row, gw = g w (g where there is no weight), each as
/// [`lane_sum`] (two passes over the row: one pass with two sets of lanes does not vectorize).
#[inline(always)]
fn grad_sums<T: Real>(g: &[T], w: Option<&[T]>, x: &[T]) -> (f64, f64) {
    let chunks = x.len() / LANES;
    let full = chunks * LANES;
    let at = |s: &[T], j: usize| -> [f64; LANES] {
        let c: &[T; LANES] = s[j * LANES..][..LANES].try_into().expect("a full chunk");
        std::array::from_fn(|l| c[l].widen())
    };
    let (mut s, mut b) = match w {
        Some(w) => {
            let gw = |j| {
                let (gc, wc) = (at(g, j), at(w, j));
                std::array::from_fn(|l| gc[l] * wc[l])
            };
            (
                chunk_sum(chunks, |j| {
                    let (gv, xv): ([f64; LANES], _) = (gw(j), at(x, j));
                    std::array::from_fn(|l| gv[l] * xv[l])
                }),
                chunk_sum(chunks, gw),
            )
        }
        None => (
            chunk_sum(chunks, |j| {
                let (gv, xv) = (at(g, j), at(x, j));
                std::array::from_fn(|l| gv[l] * xv[l])
            }),
            chunk_sum(chunks, |j| at(g, j)),
        ),
    };
    for j in full..x.len() {
        let gw = g[j].widen() * w.map_or(1.0, |w| w[j].widen());
        s += gw * x[j].widen();
        b += gw;
    }
    (s, b)
}

/// The sum of the lanes f(0), ..., f(chunks - 1) (8 running lanes from +0), folded in order.
#[inline(always)]
fn chunk_sum(chunks: usize, f: impl Fn(usize) -> [f64; LANES]) -> f64 {
    let mut acc = [0.0f64; LANES];
    for j in 0..chunks {
        let v = f(j);
        for l in 0..LANES {
            acc[l] += v[l];
        }
    }
    fold(acc)
}

/// (mean, rstd) of a row: mean = sum / D, rstd = 1 / sqrt(sum((x - mean)^2) / D + eps).
#[inline(always)]
fn row_stats<T: Real>(x: &[T], eps: f64) -> (f64, f64) {
    let d = x.len() as f64;
    let mean = lane_sum(x, |v| v.widen()) / d;
    let var = lane_sum(x, |v| {
        let c = v.widen() - mean;
        c * c
    }) / d;
    (mean, 1.0 / (var + eps).sqrt())
}

#[inline(always)]
fn forward_rows<T: Real>(
    xs: &[T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
    d: usize,
    out: &mut [MaybeUninit<T>],
    mut stats: Option<&mut [MaybeUninit<f64>]>,
) {
    for (r, (x, o)) in xs.chunks_exact(d).zip(out.chunks_exact_mut(d)).enumerate() {
        let (mean, rstd) = row_stats(x, eps);
        if let Some(st) = stats.as_deref_mut() {
            st[2 * r].write(mean);
            st[2 * r + 1].write(rstd);
        }
        let xhat = |v: T| (v.widen() - mean) * rstd;
        match (w, b) {
            (Some(w), Some(b)) => {
                for (((o, &v), &wi), &bi) in o.iter_mut().zip(x).zip(w).zip(b) {
                    o.write(T::of(xhat(v) * wi.widen() + bi.widen()));
                }
            }
            (Some(w), None) => {
                for ((o, &v), &wi) in o.iter_mut().zip(x).zip(w) {
                    o.write(T::of(xhat(v) * wi.widen()));
                }
            }
            (None, Some(b)) => {
                for ((o, &v), &bi) in o.iter_mut().zip(x).zip(b) {
                    o.write(T::of(xhat(v) + bi.widen()));
                }
            }
            (None, None) => {
                for (o, &v) in o.iter_mut().zip(x) {
                    o.write(T::of(xhat(v)));
                }
            }
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward_rows<T: Real>(
    gs: &[T],
    xs: &[T],
    w: Option<&[T]>,
    eps: f64,
    d: usize,
    dx: &mut [MaybeUninit<T>],
    mut xhat: Option<&mut [MaybeUninit<T>]>,
    stats: Option<&[f64]>,
) {
    let n = d as f64;
    for (r, (x, o)) in xs.chunks_exact(d).zip(dx.chunks_exact_mut(d)).enumerate() {
        let g = &gs[r * d..][..d];
        let (mean, rstd) = match stats {
            Some(st) => (st[2 * r], st[2 * r + 1]),
            None => row_stats(x, eps),
        };
        let (ds, db) = grad_sums(g, w, x);
        let bb = (db * mean - ds) * (rstd * rstd * rstd) / n;
        let cc = -bb * mean - db * rstd / n;
        match w {
            Some(w) => {
                for (((o, &gv), &wv), &v) in o.iter_mut().zip(g).zip(w).zip(x) {
                    let gw = gv.widen() * wv.widen();
                    o.write(T::of(rstd * gw + bb * v.widen() + cc));
                }
            }
            None => {
                for ((o, &gv), &v) in o.iter_mut().zip(g).zip(x) {
                    o.write(T::of(rstd * gv.widen() + bb * v.widen() + cc));
                }
            }
        }
        if let Some(h) = xhat.as_deref_mut() {
            for (o, &v) in h[r * d..][..d].iter_mut().zip(x) {
                o.write(T::of((v.widen() - mean) * rstd));
            }
        }
    }
}

isa_copies!(forward_rows => forward_rows_avx512, forward_rows_avx2; (
    xs: &[T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
    d: usize,
    out: &mut [MaybeUninit<T>],
    stats: Option<&mut [MaybeUninit<f64>]>,
));

isa_copies!(backward_rows => backward_rows_avx512, backward_rows_avx2; (
    gs: &[T],
    xs: &[T],
    w: Option<&[T]>,
    eps: f64,
    d: usize,
    dx: &mut [MaybeUninit<T>],
    xhat: Option<&mut [MaybeUninit<T>]>,
    stats: Option<&[f64]>,
));

/// How many runs of whole rows `total` elements split into at `threads` threads: one below
/// [`PAR_MIN_ELEMS`], else at most one per thread and per row, each at least about
/// `PAR_MIN_ELEMS / 2` elements.
fn parts(total: usize, rows: usize, threads: usize) -> usize {
    if threads <= 1 || total < PAR_MIN_ELEMS || rows < 2 {
        return 1;
    }
    threads.min(rows).min(total / (PAR_MIN_ELEMS / 2)).max(1)
}

fn check(what: &str, d: usize, lens: &[usize], params: &[Option<usize>]) {
    assert!(d > 0, "{what}: a row of 0 elements");
    assert!(
        lens.iter().all(|&l| l == lens[0]) && lens[0].is_multiple_of(d),
        "{what}: lengths {lens:?} differ or are not whole rows of {d}"
    );
    assert!(
        params.iter().flatten().all(|&l| l == d),
        "{what}: a weight or bias of length other than {d}"
    );
}

/// Runs `work(first, chunk)` over `out` cut into runs of whole units of `unit` elements
/// (`first` the offset of the chunk's first element), on up to `threads` of Rayon's threads from
/// [`PAR_MIN_ELEMS`] elements on, else on the calling thread: for the binding to split an
/// elementwise or row kernel (GELU, softmax) whose result does not depend on the split. The
/// instruction set of a kernel on a pool thread is the CPU's ([`crate::with_isa_cap`] caps
/// the calling thread only).
pub fn split_units<T: Send>(
    out: &mut [T],
    unit: usize,
    threads: usize,
    work: impl Fn(usize, &mut [T]) + Sync,
) {
    let unit = unit.max(1);
    let p = parts(out.len(), out.len() / unit, threads);
    if p <= 1 {
        work(0, out);
        return;
    }
    let per = (out.len() / unit).div_ceil(p) * unit;
    out.par_chunks_mut(per)
        .enumerate()
        .for_each(|(k, c)| work(k * per, c));
}

/// # Safety
/// Every element of `s` is initialized.
unsafe fn assume_init<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller vouches for the contents.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// layer_norm of each row of `d` elements of `xs` into `out`: (x - mean) * rstd, times
/// `weight` and plus `bias` (each `d` long, or absent), rstd = 1 / sqrt(var + eps) with the
/// biased variance; in float64 as the module says. When `stats` is given (two slots per row),
/// each row's float64 (mean, rstd) goes into it too, for [`layer_norm_backward_rows`] to read
/// instead of computing them again (two passes over the row fewer, the same bits). Split over
/// up to `threads` threads (Rayon's pool) from [`PAR_MIN_ELEMS`] elements on; the result does
/// not depend on the split.
///
/// # Panics
/// If `d` is 0, the lengths differ or are not whole rows, a weight or bias is not `d` long, or
/// `stats` is not two slots per row.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn layer_norm_rows<'o, T: Real>(
    xs: &[T],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    eps: f64,
    d: usize,
    out: &'o mut [MaybeUninit<T>],
    stats: Option<&'o mut [MaybeUninit<f64>]>,
    threads: usize,
) -> (&'o mut [T], Option<&'o mut [f64]>) {
    check(
        "layer_norm rows",
        d,
        &[xs.len(), out.len()],
        &[weight.map(<[T]>::len), bias.map(<[T]>::len)],
    );
    let rows = xs.len() / d;
    check_stats(stats.as_ref().map(|s| s.len()), rows);
    let isa = Isa::current();
    let work = |first: usize, o: &mut [MaybeUninit<T>], st: Option<&mut [MaybeUninit<f64>]>| {
        let x = &xs[first * d..][..o.len()];
        match isa {
            // SAFETY (both): `isa` came from `Isa::current`, which never exceeds what the CPU
            // has.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { forward_rows_avx512(x, weight, bias, eps, d, o, st) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => unsafe { forward_rows_avx2(x, weight, bias, eps, d, o, st) },
            _ => forward_rows(x, weight, bias, eps, d, o, st),
        }
    };
    let mut stats = stats;
    let p = parts(xs.len(), rows, threads);
    split_rows(out, d, stats.as_deref_mut(), 2, p, work);
    // SAFETY: the row loop wrote every element of every row and, when given, both statistics
    // of every row; the rows tile `out` and `stats` (their lengths are checked).
    unsafe { (assume_init(out), stats.map(|s| assume_init(s))) }
}

/// `work(first_row, rows, extra_rows)` over `out` cut into `p` runs of whole rows (`d`
/// elements a row) on Rayon's threads, with the same rows of `extra` (`e` elements a row) when
/// it is given; on the calling thread when `p` is 1.
fn split_rows<A: Send, B: Send>(
    out: &mut [A],
    d: usize,
    extra: Option<&mut [B]>,
    e: usize,
    p: usize,
    work: impl Fn(usize, &mut [A], Option<&mut [B]>) + Sync,
) {
    if p <= 1 {
        work(0, out, extra);
        return;
    }
    let per = (out.len() / d).div_ceil(p);
    match extra {
        Some(x) => out
            .par_chunks_mut(per * d)
            .zip(x.par_chunks_mut(per * e))
            .enumerate()
            .for_each(|(k, (o, x))| work(k * per, o, Some(x))),
        None => out
            .par_chunks_mut(per * d)
            .enumerate()
            .for_each(|(k, o)| work(k * per, o, None)),
    }
}

/// Two statistics per row, or none.
fn check_stats(len: Option<usize>, rows: usize) {
    if let Some(len) = len {
        assert_eq!(
            len,
            2 * rows,
            "layer_norm rows: {len} statistics for {rows} rows"
        );
    }
}

/// The input gradient of [`layer_norm_rows`] for the incoming gradient `gs`, into `dx`, and
/// when `xhat` is given the normalized input (x - mean) * rstd into it (for the weight's
/// gradient): with gw = g * weight (g where there is none), ds = sum(gw x), db = sum(gw),
/// b = (db mean - ds) rstd^3 / D and c = -b mean - db rstd / D, dx = rstd gw + b x + c; in
/// float64 as the module says. Each row's (mean, rstd) is read from `stats` when given (as
/// [`layer_norm_rows`] wrote them for these `xs` and `eps`), else computed. Split over threads
/// as [`layer_norm_rows`].
///
/// # Panics
/// As [`layer_norm_rows`].
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn layer_norm_backward_rows<'o, T: Real>(
    gs: &[T],
    xs: &[T],
    weight: Option<&[T]>,
    eps: f64,
    d: usize,
    dx: &'o mut [MaybeUninit<T>],
    xhat: Option<&'o mut [MaybeUninit<T>]>,
    stats: Option<&[f64]>,
    threads: usize,
) -> (&'o mut [T], Option<&'o mut [T]>) {
    let mut lens = vec![gs.len(), xs.len(), dx.len()];
    lens.extend(xhat.as_ref().map(|h| h.len()));
    check(
        "layer_norm backward rows",
        d,
        &lens,
        &[weight.map(<[T]>::len)],
    );
    check_stats(stats.map(<[f64]>::len), xs.len() / d);
    let isa = Isa::current();
    let work = |first: usize, o: &mut [MaybeUninit<T>], h: Option<&mut [MaybeUninit<T>]>| {
        let span = first * d..first * d + o.len();
        let (g, x) = (&gs[span.clone()], &xs[span]);
        let st = stats.map(|s| &s[first * 2..][..o.len() / d * 2]);
        match isa {
            // SAFETY (both): `isa` came from `Isa::current`, which never exceeds what the CPU
            // has.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { backward_rows_avx512(g, x, weight, eps, d, o, h, st) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => unsafe { backward_rows_avx2(g, x, weight, eps, d, o, h, st) },
            _ => backward_rows(g, x, weight, eps, d, o, h, st),
        }
    };
    let mut xhat = xhat;
    let p = parts(xs.len(), xs.len() / d, threads);
    split_rows(dx, d, xhat.as_deref_mut(), d, p, work);
    // SAFETY: the row loop wrote every element of `dx` and, when given, of `xhat`, and the rows
    // tile both (their lengths are checked).
    unsafe { (assume_init(dx), xhat.map(|h| assume_init(h))) }
}
