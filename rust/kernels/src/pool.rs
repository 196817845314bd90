//! max_pool2d and its gradient over (N, C, H, W) planes, by torch's CPU kernel's rules.

use crate::{Isa, Real};

/// A (height, width) pair of a pooling window's geometry.
pub type Pair = (usize, usize);

/// A pooling window's geometry: kernel, stride, padding and dilation per spatial dim, and the
/// output size (the caller's, as torch's output-size rule with ceil_mode decides it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub kernel: Pair,
    pub stride: Pair,
    pub padding: Pair,
    pub dilation: Pair,
    pub out: Pair,
}

impl Window {
    /// The in-bounds input rows (or columns) of output position `o` along one dim: the first
    /// one and the end, stepping by the dilation.
    fn span(o: usize, k: usize, s: usize, p: usize, d: usize, size: usize) -> (usize, usize) {
        let start = (o * s) as isize - p as isize;
        let end = (start + ((k - 1) * d) as isize + 1).min(size as isize);
        let mut first = start;
        while first < 0 {
            first += d as isize;
        }
        (first as usize, end.max(first) as usize)
    }
}

/// max_pool2d over `planes` planes of `h` x `w` (C order): the `planes` x OH x OW maxima and
/// their flat indices in their plane, by torch's CPU kernel's rules: padding never wins, a NaN
/// always does (the last one in a window), ties keep the first, and a window with nothing above
/// -inf points at its first in-bounds element (or, wholly in the padding, past its plane).
/// A window wholly inside its plane is read by fixed offsets (2x2 and 3x3 unrolled), one at the
/// border row by row within bounds; both in torch's row-major order.
///
/// # Panics
/// If `xs` is not `planes` planes of `h` x `w`, a plane is empty, or a kernel size or dilation
/// is 0.
pub fn max_pool2d<T: Real>(
    xs: &[T],
    planes: usize,
    (h, wd): Pair,
    w: &Window,
) -> (Vec<T>, Vec<i64>) {
    assert!(
        h * wd > 0 && xs.len() == planes * h * wd,
        "max_pool2d: {} elements are not {planes} non-empty planes of {h}x{wd}",
        xs.len()
    );
    assert!(
        w.dilation.0 > 0 && w.dilation.1 > 0 && w.kernel.0 > 0 && w.kernel.1 > 0,
        "max_pool2d: a kernel size or dilation of 0"
    );
    #[cfg(target_arch = "x86_64")]
    if Isa::current() >= Isa::Avx512 {
        // SAFETY: `Isa::current` never exceeds what the CPU has.
        return unsafe { max_pool2d_avx512(xs, planes, (h, wd), w) };
    }
    pool_loop::<T, IntMax>(xs, planes, (h, wd), w)
}

/// AVX-512 compiles a float select without a branch (a masked move), and the plain running
/// maximum is then the fastest.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max_pool2d_avx512<T: Real>(
    xs: &[T],
    planes: usize,
    hw: Pair,
    w: &Window,
) -> (Vec<T>, Vec<i64>) {
    pool_loop::<T, FloatMax<T>>(xs, planes, hw, w)
}

#[inline(always)]
fn pool_loop<T: Real, R: RunningMax<T>>(
    xs: &[T],
    planes: usize,
    (h, wd): Pair,
    w: &Window,
) -> (Vec<T>, Vec<i64>) {
    let (oh, ow) = w.out;
    let neg_inf = T::of(f64::NEG_INFINITY);
    if w.kernel == (2, 2)
        && w.stride == (2, 2)
        && w.padding == (0, 0)
        && w.dilation == (1, 1)
        && 2 * oh <= h
        && 2 * ow <= wd
    {
        return pool_2x2(xs, planes, (h, wd), (oh, ow), neg_inf);
    }
    let mut vals: Vec<T> = Vec::with_capacity(planes * oh * ow);
    let mut idx: Vec<i64> = Vec::with_capacity(planes * oh * ow);
    // each output's window: its in-bounds rows r0..r1 and columns c0..c1 (stepping by the
    // dilation), and whether the whole window is in bounds
    let (kh, kw) = w.kernel;
    let (dh, dw) = w.dilation;
    let spans = |out: usize, k: usize, s: usize, p: usize, d: usize, size: usize| {
        (0..out)
            .map(|o| {
                let (first, end) = Window::span(o, k, s, p, d, size);
                let whole = o * s >= p && o * s - p + (k - 1) * d < size;
                (first, end, whole)
            })
            .collect::<Vec<_>>()
    };
    let rows = spans(oh, kh, w.stride.0, w.padding.0, dh, h);
    let cols = spans(ow, kw, w.stride.1, w.padding.1, dw, wd);
    // a whole window's elements relative to its first, in row-major order
    let offsets: Vec<usize> = (0..kh)
        .flat_map(|i| (0..kw).map(move |j| i * dh * wd + j * dw))
        .collect();
    for plane in xs.chunks_exact(h * wd).take(planes) {
        for &(r0, r1, whole_rows) in &rows {
            for &(c0, c1, whole_cols) in &cols {
                let first = r0 * wd + c0;
                let (best, at) = if whole_rows && whole_cols {
                    // the window at `first` (in bounds): its elements by fixed offsets; the
                    // common kernels unrolled
                    let win = &plane[first..];
                    match (kh, kw) {
                        (2, 2) => window::<T, R, 4>(win, &offsets, neg_inf),
                        (3, 3) => window::<T, R, 9>(win, &offsets, neg_inf),
                        _ => window::<T, R, 0>(win, &offsets, neg_inf),
                    }
                } else {
                    let mut top = R::new(neg_inf);
                    let mut r = r0;
                    while r < r1 {
                        let mut col = c0;
                        while col < c1 {
                            let i = r * wd + col;
                            top.offer(plane[i], i - first);
                            col += dw;
                        }
                        r += dh;
                    }
                    top.result(&plane[first.min(plane.len())..], neg_inf)
                };
                vals.push(best);
                // a window with nothing above -inf points at its first in-bounds element
                // (wholly in the padding, past its plane)
                idx.push((first + at) as i64);
            }
        }
    }
    (vals, idx)
}

/// The 2x2 windows of stride 2 wholly inside their planes (every window of an unpadded 2x2
/// pool without ceil_mode's partial windows): an output row from two input rows, each window's
/// four elements offered in torch's row-major order with [`FloatMax`]'s branch-free rule, so
/// the loop over a row vectorizes. The same maxima and indices as the general loop.
#[inline(always)]
fn pool_2x2<T: Real>(
    xs: &[T],
    planes: usize,
    (h, wd): Pair,
    (oh, ow): Pair,
    neg_inf: T,
) -> (Vec<T>, Vec<i64>) {
    let n = planes * oh * ow;
    let mut vals: Vec<T> = Vec::with_capacity(n);
    let mut idx: Vec<i64> = Vec::with_capacity(n);
    let (vs, is) = (
        &mut vals.spare_capacity_mut()[..n],
        &mut idx.spare_capacity_mut()[..n],
    );
    if n > 0 {
        let per_plane = oh * ow;
        for (p, plane) in xs.chunks_exact(h * wd).take(planes).enumerate() {
            for oy in 0..oh {
                let at = p * per_plane + oy * ow;
                let (vrow, irow) = (&mut vs[at..at + ow], &mut is[at..at + ow]);
                let top = &plane[2 * oy * wd..][..2 * ow];
                let bottom = &plane[(2 * oy + 1) * wd..][..2 * ow];
                let row0 = (2 * oy * wd) as i64;
                let wd = wd as i64;
                for (ox, ((v, i), (t, b))) in vrow
                    .iter_mut()
                    .zip(irow.iter_mut())
                    .zip(top.chunks_exact(2).zip(bottom.chunks_exact(2)))
                    .enumerate()
                {
                    let mut best = neg_inf;
                    let mut off = 0i64;
                    for (e, o) in [(t[0], 0), (t[1], 1), (b[0], wd), (b[1], wd + 1)] {
                        let take = (e > best) | e.is_nan();
                        best = T::pick(take, e, best);
                        off = if take { o } else { off };
                    }
                    v.write(best);
                    i.write(row0 + 2 * ox as i64 + off);
                }
            }
        }
    }
    // SAFETY: the loops wrote every one of the first n slots of both (planes x OH rows of OW).
    unsafe {
        vals.set_len(n);
        idx.set_len(n);
    }
    (vals, idx)
}

/// The maximum of a whole window, `win[offsets[k]]` for the `N` (or, `N` 0, all) offsets in
/// order, by torch's rules, and its offset.
#[inline(always)]
fn window<T: Real, R: RunningMax<T>, const N: usize>(
    win: &[T],
    offsets: &[usize],
    neg_inf: T,
) -> (T, usize) {
    let offsets = if N == 0 { offsets } else { &offsets[..N] };
    let mut top = R::new(neg_inf);
    for &o in offsets {
        top.offer(win[o], o);
    }
    top.result(win, neg_inf)
}

/// A window's running maximum by torch's rules: an element replaces the maximum so far where
/// it is NaN or larger than a maximum that is not NaN (so ties keep the first, the last NaN
/// wins); with nothing above -inf, -inf at offset 0. Both forms are free of data-dependent
/// branches, which mispredict on random data.
trait RunningMax<T: Real> {
    fn new(neg_inf: T) -> Self;
    /// The element `v` at offset `o` in the window.
    fn offer(&mut self, v: T, o: usize);
    /// (the maximum, its offset); `win` is the window's elements from offset 0.
    fn result(&self, win: &[T], neg_inf: T) -> (T, usize);
}

/// The maximum as a float, selected by [`Real::pick`]: a masked move with AVX-512, but below
/// it the compiler turns a float select back into a branch.
struct FloatMax<T> {
    best: T,
    at: usize,
}

impl<T: Real> RunningMax<T> for FloatMax<T> {
    #[inline(always)]
    fn new(neg_inf: T) -> Self {
        FloatMax {
            best: neg_inf,
            at: 0,
        }
    }

    #[inline(always)]
    fn offer(&mut self, v: T, o: usize) {
        let take = (v > self.best) | v.is_nan();
        self.best = T::pick(take, v, self.best);
        self.at = if take { o } else { self.at };
    }

    #[inline(always)]
    fn result(&self, _win: &[T], _neg_inf: T) -> (T, usize) {
        (self.best, self.at)
    }
}

/// The maximum's order key ([`Real::order_key`]) selected in integer registers (conditional
/// moves), its value read back at the end.
struct IntMax {
    key: i64,
    nan: bool,
    at: usize,
}

impl IntMax {
    const NONE: usize = usize::MAX;
}

impl<T: Real> RunningMax<T> for IntMax {
    #[inline(always)]
    fn new(neg_inf: T) -> Self {
        IntMax {
            key: neg_inf.order_key().0,
            nan: false,
            at: IntMax::NONE,
        }
    }

    #[inline(always)]
    fn offer(&mut self, v: T, o: usize) {
        let (key, nan) = v.order_key();
        let take = nan | (!self.nan & (key > self.key));
        self.key = if take { key } else { self.key };
        self.nan |= nan & take;
        self.at = if take { o } else { self.at };
    }

    #[inline(always)]
    fn result(&self, win: &[T], neg_inf: T) -> (T, usize) {
        if self.at == IntMax::NONE {
            (neg_inf, 0)
        } else {
            (win[self.at], self.at)
        }
    }
}

/// The gradient of [`max_pool2d`]: each plane's `per_plane` entries of `grad` added into
/// `out`'s matching plane of `hw` at their index in `indices`; an index outside the plane (a
/// window wholly in the padding, or a negative one) passes nothing. `out` is not cleared first.
///
/// # Panics
/// If `grad` and `indices` differ in length, or (both sizes non-zero) `grad` and `out` do not
/// hold the same number of planes.
pub fn max_pool2d_backward<T: Real>(
    grad: &[T],
    indices: &[i64],
    per_plane: usize,
    out: &mut [T],
    hw: usize,
) {
    assert_eq!(
        grad.len(),
        indices.len(),
        "max_pool2d_backward: lengths differ"
    );
    if per_plane == 0 || hw == 0 {
        return;
    }
    assert!(
        grad.len().is_multiple_of(per_plane)
            && out.len().is_multiple_of(hw)
            && grad.len() / per_plane == out.len() / hw,
        "max_pool2d_backward: not the same planes"
    );
    for ((o, g), i) in out
        .chunks_exact_mut(hw)
        .zip(grad.chunks_exact(per_plane))
        .zip(indices.chunks_exact(per_plane))
    {
        for (&v, &at) in g.iter().zip(i) {
            if let Some(slot) = usize::try_from(at).ok().and_then(|at| o.get_mut(at)) {
                *slot = *slot + v;
            }
        }
    }
}
