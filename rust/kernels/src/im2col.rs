//! im2col and col2im: the convolution's unfold of (N, C, H, W) images into their window
//! elements and its adjoint, in the two layouts of `_ops/conv.py` (and of the CUDA kernel in
//! `_backends/cuda_kernels.py`), split over threads above a size threshold.
//!
//! Both layouts are a sequence of `N * C * kh * kw` *blocks* of `OH x OW`, block `(n, c, i, j)`
//! holding the image element under kernel offset `(i, j)` of every output position:
//! - standard, (N, C, kh, kw, OH, OW): block `((n C + c) kh + i) kw + j`;
//! - channels-first, (C, kh, kw, N, OH, OW): block `((c kh + i) kw + j) N + n`, whose
//!   (C kh kw, N OH OW) reshape is the convolution's one GEMM operand.
//!
//! Each output element is one input element or the fill, so every split gives the same bits;
//! col2im sums a pixel's contributions in the order of NumPy's formulation (from +0, kernel
//! offsets in row-major order), whatever the split.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::pool::Pair;
use crate::Real;

/// Output elements (im2col) or image elements (col2im) below which a call runs on the calling
/// thread alone: waking a pool thread and splitting costs a few microseconds, about a copy of
/// this many floats (`cargo bench -p rustgrad-kernels -- im2col` measures the crossing).
pub const PAR_MIN_ELEMS: usize = 1 << 16;

/// The threads an im2col or col2im call may use by default: Rayon's global pool (the CPUs, or
/// `RAYON_NUM_THREADS`).
pub fn default_threads() -> usize {
    rayon::current_num_threads()
}

/// The geometry of an im2col / col2im over (N, C, H, W) images: kernel, dilation and stride
/// per spatial dim (each at least 1), the padding on each side (top, bottom, left, right), the
/// layout of the blocks, and the output size (OH, OW) the blocks have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unfold {
    pub batch: usize,
    pub channels: usize,
    pub size: Pair,
    pub kernel: Pair,
    pub dilation: Pair,
    pub stride: Pair,
    /// (top, bottom, left, right)
    pub pads: (usize, usize, usize, usize),
    /// (OH, OW); [`Unfold::new`] computes it, col2im may be given fewer positions (a
    /// transposed convolution's output padding): every block must fit in the padded image.
    pub out: Pair,
    /// (C, kh, kw, N, OH, OW) blocks rather than (N, C, kh, kw, OH, OW).
    pub channels_first: bool,
}

impl Unfold {
    /// The geometry with torch's output size `(H + pads - d (k - 1) - 1) / s + 1` per dim;
    /// None where it is below 1 or a kernel size, dilation or stride is 0.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        batch: usize,
        channels: usize,
        size: Pair,
        kernel: Pair,
        dilation: Pair,
        stride: Pair,
        pads: (usize, usize, usize, usize),
        channels_first: bool,
    ) -> Option<Unfold> {
        let dim = |n: usize, k: usize, d: usize, s: usize, lo: usize, hi: usize| {
            if k == 0 || d == 0 || s == 0 {
                return None;
            }
            let span = d * (k - 1) + 1;
            (n + lo + hi).checked_sub(span).map(|r| r / s + 1)
        };
        let oh = dim(size.0, kernel.0, dilation.0, stride.0, pads.0, pads.1)?;
        let ow = dim(size.1, kernel.1, dilation.1, stride.1, pads.2, pads.3)?;
        Some(Unfold {
            batch,
            channels,
            size,
            kernel,
            dilation,
            stride,
            pads,
            out: (oh, ow),
            channels_first,
        })
    }

    /// Whether the geometry is one the kernels take: kernel, dilation and stride at least 1,
    /// and every block inside the padded image (always so for [`Unfold::new`]'s output size).
    pub fn is_valid(&self) -> bool {
        let fits = |n: usize, k: usize, d: usize, s: usize, lo: usize, hi: usize, o: usize| {
            k > 0 && d > 0 && s > 0 && (o == 0 || (o - 1) * s + d * (k - 1) < n + lo + hi)
        };
        let (k, d, s, p, o) = (self.kernel, self.dilation, self.stride, self.pads, self.out);
        fits(self.size.0, k.0, d.0, s.0, p.0, p.1, o.0)
            && fits(self.size.1, k.1, d.1, s.1, p.2, p.3, o.1)
    }

    /// The number of elements of the images, N C H W.
    pub fn image_len(&self) -> usize {
        self.batch * self.channels * self.size.0 * self.size.1
    }

    /// The number of elements of the blocks, N C kh kw OH OW.
    pub fn cols_len(&self) -> usize {
        self.blocks() * self.out.0 * self.out.1
    }

    fn blocks(&self) -> usize {
        self.batch * self.channels * self.kernel.0 * self.kernel.1
    }

    /// Block `b`'s (n, c, i, j) in this layout.
    #[inline]
    fn block(&self, b: usize) -> (usize, usize, usize, usize) {
        let (kh, kw) = self.kernel;
        if self.channels_first {
            let n = b % self.batch;
            let r = b / self.batch;
            (n, r / (kh * kw), (r / kw) % kh, r % kw)
        } else {
            let j = b % kw;
            let r = b / kw;
            let i = r % kh;
            let r = r / kh;
            (r / self.channels, r % self.channels, i, j)
        }
    }

    /// The index of block (n, c, i, j) in this layout.
    #[inline]
    fn block_index(&self, n: usize, c: usize, i: usize, j: usize) -> usize {
        let (kh, kw) = self.kernel;
        if self.channels_first {
            ((c * kh + i) * kw + j) * self.batch + n
        } else {
            ((n * self.channels + c) * kh + i) * kw + j
        }
    }

    /// Kernel offset `k`'s run of in-bounds output positions along one dim: positions `o` in
    /// `lo..hi` read image coordinate `first + (o - lo) * stride`; the others are padding.
    fn runs(
        k: usize,
        out: usize,
        size: usize,
        pad: usize,
        d: usize,
        s: usize,
    ) -> Vec<(usize, usize, usize)> {
        (0..k)
            .map(|i| {
                let off = i * d; // coordinate = o s + off - pad
                let lo = pad.saturating_sub(off).div_ceil(s).min(out);
                // last o with o s + off - pad <= size - 1
                let hi = if size + pad > off {
                    ((size + pad - off - 1) / s + 1).min(out)
                } else {
                    0
                };
                if hi <= lo {
                    return (lo, lo, 0); // no in-bounds position
                }
                (lo, hi, lo * s + off - pad)
            })
            .collect()
    }

    /// (rows per kernel row offset, columns per kernel column offset).
    #[allow(clippy::type_complexity)]
    fn all_runs(&self) -> (Vec<(usize, usize, usize)>, Vec<(usize, usize, usize)>) {
        (
            Self::runs(
                self.kernel.0,
                self.out.0,
                self.size.0,
                self.pads.0,
                self.dilation.0,
                self.stride.0,
            ),
            Self::runs(
                self.kernel.1,
                self.out.1,
                self.size.1,
                self.pads.2,
                self.dilation.1,
                self.stride.1,
            ),
        )
    }
}

/// How many parts `total` elements of `units` independent units split into at `threads`
/// threads: one below [`PAR_MIN_ELEMS`], else at most one per thread and per unit, each at
/// least about `PAR_MIN_ELEMS / 2` elements.
fn parts(total: usize, units: usize, threads: usize) -> usize {
    if threads <= 1 || total < PAR_MIN_ELEMS || units < 2 {
        return 1;
    }
    threads.min(units).min(total / (PAR_MIN_ELEMS / 2)).max(1)
}

/// Runs `work(first_unit, chunk)` over `out` cut into `parts` runs of whole units (`unit`
/// elements each), in parallel when there are several.
fn split<T: Send>(out: &mut [T], unit: usize, parts: usize, work: impl Fn(usize, &mut [T]) + Sync) {
    if parts <= 1 || unit == 0 {
        work(0, out);
        return;
    }
    let units = out.len() / unit;
    let per = units.div_ceil(parts);
    out.par_chunks_mut(per * unit)
        .enumerate()
        .for_each(|(p, chunk)| work(p * per, chunk));
}

/// im2col of `xs`, C-contiguous (N, C, H, W) images, into `out` (its [`Unfold::cols_len`]
/// slots) in `g`'s layout: each block element is its image element, or `fill` where the window
/// reaches into the padding. Split over up to `threads` threads (Rayon's pool) from
/// [`PAR_MIN_ELEMS`] output elements on; the result does not depend on the split.
///
/// # Panics
/// If `xs` or `out` has the wrong length, or `g` is not [`Unfold::is_valid`].
pub fn im2col<'o, T: Copy + Send + Sync>(
    xs: &[T],
    g: &Unfold,
    fill: T,
    out: &'o mut [MaybeUninit<T>],
    threads: usize,
) -> &'o mut [T] {
    assert!(g.is_valid(), "im2col: invalid geometry {g:?}");
    assert_eq!(xs.len(), g.image_len(), "im2col: the images' length");
    assert_eq!(out.len(), g.cols_len(), "im2col: the output's length");
    let (oh, ow) = g.out;
    let (h, w) = g.size;
    let plane = oh * ow;
    let (rows, cols) = g.all_runs();
    let sw = g.stride.1;
    let work = |first: usize, chunk: &mut [MaybeUninit<T>]| {
        if plane == 0 {
            return;
        }
        for (k, dst) in chunk.chunks_exact_mut(plane).enumerate() {
            let (n, c, i, j) = g.block(first + k);
            let src = &xs[(n * g.channels + c) * h * w..][..h * w];
            let (r0, r1, y0) = rows[i];
            let (c0, c1, x0) = cols[j];
            for (oy, row) in dst.chunks_exact_mut(ow).enumerate() {
                if oy < r0 || oy >= r1 {
                    row.iter_mut().for_each(|o| {
                        o.write(fill);
                    });
                    continue;
                }
                let y = y0 + (oy - r0) * g.stride.0;
                let line = &src[y * w..][..w];
                let (head, rest) = row.split_at_mut(c0);
                let (mid, tail) = rest.split_at_mut(c1 - c0);
                head.iter_mut().for_each(|o| {
                    o.write(fill);
                });
                if sw == 1 {
                    for (o, &v) in mid.iter_mut().zip(&line[x0..]) {
                        o.write(v);
                    }
                } else {
                    for (o, &v) in mid.iter_mut().zip(line[x0..].iter().step_by(sw)) {
                        o.write(v);
                    }
                }
                tail.iter_mut().for_each(|o| {
                    o.write(fill);
                });
            }
        }
    };
    split(out, plane, parts(out.len(), g.blocks(), threads), work);
    // SAFETY: every block's every row was written above: fill, then the in-bounds run and the
    // fill after it (c0 <= c1 <= OW), and the blocks tile `out` (its length is checked).
    unsafe { &mut *(out as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// col2im, im2col's adjoint: the (N, C, H, W) images (`out`, C-contiguous) whose every element
/// is the sum of the block elements that im2col would have copied from it, `cols` in `g`'s
/// layout (padding positions dropped). Each sum starts at +0 and adds the kernel offsets in
/// row-major order, as NumPy's formulation in `_ops/conv.py` does, so the result is the same
/// bit for bit, whatever the split (over images, from [`PAR_MIN_ELEMS`] elements on).
///
/// # Panics
/// If `cols` or `out` has the wrong length, or `g` is not [`Unfold::is_valid`].
pub fn col2im<'o, T: Real>(
    cols: &[T],
    g: &Unfold,
    out: &'o mut [MaybeUninit<T>],
    threads: usize,
) -> &'o mut [T] {
    assert!(g.is_valid(), "col2im: invalid geometry {g:?}");
    assert_eq!(cols.len(), g.cols_len(), "col2im: the blocks' length");
    assert_eq!(out.len(), g.image_len(), "col2im: the output's length");
    let (oh, ow) = g.out;
    let (h, w) = g.size;
    let plane = oh * ow;
    let (rows, runs) = g.all_runs();
    let (sh, sw) = g.stride;
    let zero = T::of(0.0);
    let work = |first: usize, chunk: &mut [MaybeUninit<T>]| {
        chunk.iter_mut().for_each(|o| {
            o.write(zero);
        });
        // SAFETY: every element was just written.
        let chunk = unsafe { &mut *(chunk as *mut [MaybeUninit<T>] as *mut [T]) };
        if h * w == 0 {
            return;
        }
        for (k, img) in chunk.chunks_exact_mut(h * w).enumerate() {
            let (n, c) = ((first + k) / g.channels, (first + k) % g.channels);
            for (i, &(r0, r1, y0)) in rows.iter().enumerate() {
                for (j, &(c0, c1, x0)) in runs.iter().enumerate() {
                    let block = &cols[g.block_index(n, c, i, j) * plane..][..plane];
                    for oy in r0..r1 {
                        let y = y0 + (oy - r0) * sh;
                        let src = &block[oy * ow + c0..oy * ow + c1];
                        let line = &mut img[y * w..][..w];
                        if sw == 1 {
                            for (o, &v) in line[x0..].iter_mut().zip(src) {
                                *o = *o + v;
                            }
                        } else {
                            for (o, &v) in line[x0..].iter_mut().step_by(sw).zip(src) {
                                *o = *o + v;
                            }
                        }
                    }
                }
            }
        }
    };
    let images = g.batch * g.channels;
    let parts = parts(out.len().max(cols.len()), images, threads);
    split(out, h * w, parts, work);
    // SAFETY: the parts tile `out` (whole images; its length is checked), and each zeroed its
    // part first.
    unsafe { &mut *(out as *mut [MaybeUninit<T>] as *mut [T]) }
}
