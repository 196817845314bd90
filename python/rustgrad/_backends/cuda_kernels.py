"""CUDA kernels CuPy lacks, written once (CuPy's ElementwiseKernel and RawKernel), so that
these ops never take a host round trip: GELU (exact and tanh, forward and backward), a fused
softmax-cross-entropy (one block per row: the row's log-sum-exp and its loss in one pass, and
the gradient in one elementwise kernel), max-pooling with torch's flat indices, and im2col.

Kernels are compiled on first use and cached by CuPy. The module imports without CuPy (the
functions import it when called): the CPU computes the same things with NumPy in `_ops/`.
Each kernel is small and plain on purpose: `tests/cuda/test_kernels.py` checks each against
NumPy on a GPU."""

from __future__ import annotations

import functools
from typing import Any, Tuple

import numpy as np

# arithmetic in float for float16/float32 and in double for float64 (CuPy's float16 converts)
_ACC = """
template <typename T> struct acc { typedef float type; };
template <> struct acc<double> { typedef double type; };
"""


@functools.cache
def _elementwise(name: str) -> Any:
    import cupy as cp  # optional dependency: the module imports without CuPy

    src = {
        "gelu": ("T x", "T y", """
            typedef typename acc<T>::type F;
            F v = (F)x;
            y = (T)(v * (F)0.5 * ((F)1 + erf(v * (F)0.70710678118654752440)));"""),
        "gelu_tanh": ("T x", "T y", """
            typedef typename acc<T>::type F;
            F v = (F)x;
            F inner = (F)0.79788456080286535588 * (v + (F)0.044715 * v * v * v);
            y = (T)((F)0.5 * v * ((F)1 + tanh(inner)));"""),
        "gelu_backward": ("T g, T x", "T dx", """
            typedef typename acc<T>::type F;
            F v = (F)x;
            F cdf = (F)0.5 * ((F)1 + erf(v * (F)0.70710678118654752440));
            F pdf = exp((F)-0.5 * v * v) * (F)0.39894228040143267794;
            dx = (T)((F)g * (cdf + v * pdf));"""),
        "gelu_tanh_backward": ("T g, T x", "T dx", """
            typedef typename acc<T>::type F;
            const F k = (F)0.79788456080286535588;
            F v = (F)x;
            F t = tanh(k * (v + (F)0.044715 * v * v * v));
            F left = (F)0.5 * ((F)1 + t);
            F right = (F)0.5 * v * ((F)1 - t * t) * k * ((F)1 + (F)3 * (F)0.044715 * v * v);
            dx = (T)((F)g * (left + right));"""),
        # grad of mean/sum cross-entropy w.r.t. the logits: (softmax - onehot) * grow
        "softmax_cross_entropy_backward": (
            "T x, int64 target, T lse, T grow, int64 ignore_index, int64 c", "T dx", """
            typedef typename acc<T>::type F;
            long long j = i % c;
            F p = exp((F)x - (F)lse);
            F onehot = (j == target) ? (F)1 : (F)0;
            dx = (target == ignore_index) ? (T)0 : (T)((p - onehot) * (F)grow);"""),
        # one output element of (C, kh, kw, N, OH, OW) (channels_first) or (N, C, kh, kw, OH, OW)
        "im2col": (
            "raw T x, int32 n, int32 c, int32 h, int32 w, int32 kh, int32 kw, int32 oh, "
            "int32 ow, int32 sh, int32 sw, int32 pt, int32 pl, int32 dh, int32 dw, T fill, "
            "bool channels_first", "T col", """
            long long r = i;
            int ox = r % ow; r /= ow;
            int oy = r % oh; r /= oh;
            int ni, ci, ki, kj;
            if (channels_first) {
                ni = r % n; r /= n; kj = r % kw; r /= kw; ki = r % kh; r /= kh; ci = r;
            } else {
                kj = r % kw; r /= kw; ki = r % kh; r /= kh; ci = r % c; r /= c; ni = r;
            }
            int y = oy * sh - pt + ki * dh;
            int xx = ox * sw - pl + kj * dw;
            col = (y < 0 || y >= h || xx < 0 || xx >= w)
                ? fill : x[(((long long)ni * c + ci) * h + y) * w + xx];"""),
        # one output element of (N, C, OH, OW): the window's max (the last NaN wins, as torch's) and its
        # flat index y * W + x in the input plane
        "max_pool2d": (
            "raw T x, int32 h, int32 w, int32 kh, int32 kw, int32 oh, int32 ow, int32 sh, "
            "int32 sw, int32 ph, int32 pw, int32 dh, int32 dw", "T out, int64 index", """
            long long plane = i / ((long long)oh * ow);
            int oy = (i / ow) % oh;
            int ox = i % ow;
            const T* p = &x[plane * h * w];
            double best = 0;
            long long arg = -1;
            for (int a = 0; a < kh; ++a) {
                int y = oy * sh - ph + a * dh;
                if (y < 0 || y >= h) continue;
                for (int b = 0; b < kw; ++b) {
                    int xx = ox * sw - pw + b * dw;
                    if (xx < 0 || xx >= w) continue;
                    double v = (double)p[y * w + xx];
                    if (arg < 0 || v > best || isnan(v)) {
                        best = v;
                        arg = (long long)y * w + xx;
                    }
                }
            }
            out = (T)best;
            index = arg;"""),
        # one whole Adam/AdamW step of one parameter (optim/adam.py's formulation): p, m, v
        # (and vmax with amsgrad) updated in place, in float for float16/float32
        "adam_step": (
            "T g, float64 lr, float64 beta1, float64 beta2, float64 eps, float64 wd, "
            "bool decoupled, bool maximize, float64 step_size, float64 bc2_sqrt",
            "T p, T m, T v", _ADAM_BODY.format(vmax="")),
        "adam_step_amsgrad": (
            "T g, float64 lr, float64 beta1, float64 beta2, float64 eps, float64 wd, "
            "bool decoupled, bool maximize, float64 step_size, float64 bc2_sqrt",
            "T p, T m, T v, T vmax",
            _ADAM_BODY.format(vmax="if ((F)v > (F)vmax) vmax = v; vv = (F)vmax;")),
        "threshold_backward": ("T g, T y", "T dx", "dx = (y <= (T)0) ? (T)0 : g;"),
        # one SGD step (optim/sgd.py): momentum buffer (init: g itself), nesterov, dampening
        "sgd_step": (
            "T g, float64 lr, float64 wd, float64 momentum, float64 dampening, bool nesterov, "
            "bool maximize, bool init_buffer", "T p, T buf", _SGD_BODY),
        "sgd_step_plain": (
            "T g, float64 lr, float64 wd, bool maximize", "T p", """
            typedef typename acc<T>::type F;
            F gg = maximize ? -(F)g : (F)g;
            if (wd != 0) gg = (F)wd * (F)p + gg;
            p = (T)((F)(-lr) * gg + (F)p);"""),
    }[name]
    return cp.ElementwiseKernel(src[0], src[1], src[2], "rustgrad_" + name, preamble=_ACC)


_ADAM_BODY = """
    typedef typename acc<T>::type F;
    F gg = maximize ? -(F)g : (F)g;
    if (wd != 0) {{
        if (decoupled) p = (T)((F)p * (F)(1 - lr * wd));
        else gg = (F)wd * (F)p + gg;
    }}
    F mm = (F)m, w1 = (F)(1 - beta1);
    mm = (w1 < (F)0.5) ? w1 * (gg - mm) + mm : -(F)beta1 * (gg - mm) + gg;
    m = (T)mm;
    F vv = (F)v * (F)beta2;
    vv = (F)(1 - beta2) * gg * gg + vv;
    v = (T)vv;
    {vmax}
    F denom = sqrt(vv) / (F)bc2_sqrt + (F)eps;
    p = (T)((F)p + ((F)(-step_size) * mm) / denom);"""

_SGD_BODY = """
    typedef typename acc<T>::type F;
    F gg = maximize ? -(F)g : (F)g;
    if (wd != 0) gg = (F)wd * (F)p + gg;
    if (momentum != 0) {
        F b = init_buffer ? gg : (F)(1 - dampening) * gg + (F)buf * (F)momentum;
        buf = (T)b;
        gg = nesterov ? (F)momentum * b + gg : b;
    }
    p = (T)((F)(-lr) * gg + (F)p);"""


def _floating_alike(*arrays: Any) -> bool:
    """Arrays of one floating dtype the kernels take (float16, float32, float64)."""
    dt = arrays[0].dtype
    return dt.kind == "f" and all(a is None or a.dtype == dt for a in arrays)


def adam_step(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any,
              args: Any) -> bool:
    """One fused Adam/AdamW step of one parameter, one launch (see _kernels.Kernels)."""
    if not _floating_alike(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
        return False
    scalars = (args.lr, args.beta1, args.beta2, args.eps, args.weight_decay, args.decoupled,
               args.maximize, args.step_size, args.bias_correction2_sqrt)
    if max_exp_avg_sq is None:
        _elementwise("adam_step")(grad, *scalars, param, exp_avg, exp_avg_sq)
    else:
        _elementwise("adam_step_amsgrad")(grad, *scalars, param, exp_avg, exp_avg_sq,
                                          max_exp_avg_sq)
    return True


# Adam over many parameters in one launch: blockIdx.y picks the tensor (its pointers from
# arrays of addresses), the x blocks stride over its elements; the body is _ADAM_BODY's
_ADAM_MULTI = r"""
extern "C" __global__ void rustgrad_adam_multi(const long long* ptrs, long long count,
        double lr, double beta1, double beta2, double eps, double wd, int decoupled,
        int maximize, double step_size, double bc2_sqrt, int amsgrad) {
    long long t = blockIdx.y;
    long long n = ptrs[5 * count + t];
    T* p = (T*)ptrs[t];
    const T* g = (const T*)ptrs[count + t];
    T* m = (T*)ptrs[2 * count + t];
    T* v = (T*)ptrs[3 * count + t];
    T* vmax = (T*)ptrs[4 * count + t];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        double gg = maximize ? -(double)g[i] : (double)g[i];
        double pi = (double)p[i];
        if (wd != 0) {
            if (decoupled) pi = (double)(T)(pi * (1 - lr * wd));
            else gg = wd * pi + gg;
        }
        double mm = (double)m[i], w1 = 1 - beta1;
        mm = (w1 < 0.5) ? w1 * (gg - mm) + mm : -beta1 * (gg - mm) + gg;
        m[i] = (T)mm;
        double vv = (double)v[i] * beta2;
        vv = (1 - beta2) * gg * gg + vv;
        v[i] = (T)vv;
        if (amsgrad) {
            if (vv > (double)vmax[i]) vmax[i] = (T)vv;
            vv = (double)vmax[i];
        }
        double denom = sqrt(vv) / bc2_sqrt + eps;
        p[i] = (T)(pi + (-step_size * mm) / denom);
    }
}
"""


_TABLES: dict[tuple[int, bytes], Any] = {}  # recent pointer tables already on the device


def _device_table(table: np.ndarray) -> Any:
    """The pointer table on the device. A host-to-device copy from pageable memory waits for
    the GPU; in a steady training loop the same arrays (and pool blocks) come back each step,
    so recent tables are kept on the device and reused."""
    import cupy as cp

    key = (cp.cuda.runtime.getDevice(), table.tobytes())
    found = _TABLES.get(key)
    if found is None:
        if len(_TABLES) >= 16:
            _TABLES.pop(next(iter(_TABLES)))
        found = _TABLES[key] = cp.asarray(table)
    return found


@functools.cache
def _adam_multi_kernel(ctype: str) -> Any:
    import cupy as cp  # optional dependency: the module imports without CuPy

    return cp.RawKernel("#define T " + ctype + "\n" + _ADAM_MULTI, "rustgrad_adam_multi")


def adam_step_multi(params: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any,
                    max_exp_avg_sqs: Any, args: Any) -> bool:
    """One Adam/AdamW step of many parameters (one dtype, one device, one step count) in one
    launch; False where they do not qualify (float16, strided, mixed)."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    count = len(params)
    vmaxs = max_exp_avg_sqs if max_exp_avg_sqs is not None else params
    columns = (params, grads, exp_avgs, exp_avg_sqs, vmaxs)
    dt = params[0].dtype
    if dt.kind != "f" or dt.itemsize < 4 or any(
            a.dtype != dt or not a.flags.c_contiguous or a.size != p.size
            for col in columns for a, p in zip(col, params)):
        return False
    table = np.empty(6 * count, dtype=np.int64)  # the pointer table: built here, copied once
    for c, col in enumerate(columns):
        table[c * count:(c + 1) * count] = [a.data.ptr for a in col]
    sizes = [p.size for p in params]
    table[5 * count:] = sizes
    biggest = max(sizes)
    if biggest == 0:
        return True
    blocks = min((biggest + 255) // 256, 1024)
    _adam_multi_kernel("double" if dt.itemsize == 8 else "float")(
        (blocks, count), (256,),
        (_device_table(table), cp.int64(count), cp.float64(args.lr), cp.float64(args.beta1),
         cp.float64(args.beta2), cp.float64(args.eps), cp.float64(args.weight_decay),
         cp.int32(args.decoupled), cp.int32(args.maximize), cp.float64(args.step_size),
         cp.float64(args.bias_correction2_sqrt), cp.int32(max_exp_avg_sqs is not None)))
    return True


def sgd_step(param: Any, grad: Any, buf: Any, args: Any) -> bool:
    """One fused SGD step of one parameter (and its momentum buffer), one launch."""
    if not _floating_alike(param, grad, buf):
        return False
    if buf is None:
        _elementwise("sgd_step_plain")(grad, args.lr, args.weight_decay, args.maximize, param)
    else:
        _elementwise("sgd_step")(grad, args.lr, args.weight_decay, args.momentum,
                                 args.dampening, args.nesterov, args.maximize,
                                 args.init_buffer, param, buf)
    return True


def gelu(x: Any, approximate: str = "none") -> Any:
    """x * Phi(x) elementwise (Phi the standard normal CDF), or its tanh approximation."""
    return _elementwise("gelu_tanh" if approximate == "tanh" else "gelu")(x)


def gelu_backward(g: Any, x: Any, approximate: str = "none") -> Any:
    """The gradient of gelu at x times g."""
    name = "gelu_tanh_backward" if approximate == "tanh" else "gelu_backward"
    return _elementwise(name)(g, x)


# one block of 256 threads per row: each thread keeps a running (max, sum of exp) over its
# strided columns (the online softmax), then the block merges the pairs
_SOFTMAX_CE = r"""
#define NEG_INF __longlong_as_double(0xfff0000000000000ULL)
extern "C" __global__ void rustgrad_softmax_ce(const T* x, const long long* target, T* lse,
                                               T* loss, long long c, long long ignore_index) {
    __shared__ double m_sh[256];
    __shared__ double s_sh[256];
    const T* row = x + (long long)blockIdx.x * c;
    double m = NEG_INF, s = 0.0;
    for (long long j = threadIdx.x; j < c; j += blockDim.x) {
        double v = (double)row[j];
        if (v > m) { s = s * exp(m - v) + 1.0; m = v; }
        else { s += exp(v - m); }
    }
    m_sh[threadIdx.x] = m;
    s_sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            double m1 = m_sh[threadIdx.x], m2 = m_sh[threadIdx.x + half];
            double s1 = s_sh[threadIdx.x], s2 = s_sh[threadIdx.x + half];
            double mm = m1 > m2 ? m1 : m2;
            double ss = (m1 == NEG_INF ? 0.0 : s1 * exp(m1 - mm))
                      + (m2 == NEG_INF ? 0.0 : s2 * exp(m2 - mm));
            m_sh[threadIdx.x] = mm;
            s_sh[threadIdx.x] = ss;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double l = m_sh[0] + log(s_sh[0]);
        long long t = target[blockIdx.x];
        lse[blockIdx.x] = (T)l;
        loss[blockIdx.x] = (t == ignore_index) ? (T)0 : (T)(l - (double)row[t]);
    }
}
"""


@functools.cache
def _softmax_ce_kernel(ctype: str) -> Any:
    import cupy as cp  # optional dependency: the module imports without CuPy

    return cp.RawKernel("#define T " + ctype + "\n" + _SOFTMAX_CE, "rustgrad_softmax_ce")


def softmax_cross_entropy(logits: Any, target: Any, ignore_index: int = -100) -> Tuple[Any, Any]:
    """Per-row cross-entropy of (N, C) logits against int64 class indices (N,), and each row's
    log-sum-exp (what `softmax_cross_entropy_backward` needs): (loss (N,), lse (N,)). Rows
    whose target is ignore_index have loss 0. float16 is computed in float32."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    dtype = logits.dtype
    x = logits.astype(cp.float32) if dtype == cp.float16 else cp.ascontiguousarray(logits)
    t = cp.ascontiguousarray(target, dtype=cp.int64)
    n, c = x.shape
    lse = cp.empty(n, dtype=x.dtype)
    loss = cp.empty(n, dtype=x.dtype)
    if n:
        kernel = _softmax_ce_kernel("double" if x.dtype == cp.float64 else "float")
        kernel((n,), (256,), (x, t, lse, loss, cp.int64(c), cp.int64(ignore_index)))
    return loss.astype(dtype, copy=False), lse.astype(dtype, copy=False)


def softmax_cross_entropy_backward(logits: Any, target: Any, lse: Any, grad_rows: Any,
                                   ignore_index: int = -100) -> Any:
    """(softmax(logits) - onehot(target)) * grad_rows[:, None]: the gradient of the per-row
    losses (scaled by grad_rows, (N,)) w.r.t. (N, C) logits; ignored rows get 0."""
    n, c = logits.shape
    return _elementwise("softmax_cross_entropy_backward")(
        logits, target.reshape(n, 1), lse.reshape(n, 1), grad_rows.reshape(n, 1),
        ignore_index, c)


# layer_norm over the last dim of an (N, D) array, one block of 256 threads per row; the row's
# sums in double (a tree in shared memory). The backward's input gradient is the formula of
# _ops/norm.py's _norm_bw_x_raw (rstd * gw + b * x + c), so an infinite weight gives torch's
# inf and nan; it also writes xhat for the weight's gradient when asked.
_LAYER_NORM = r"""
__device__ double rg_block_sum(double v, double* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ void rg_row_stats(const T* row, long long d, double eps, double* sh, double* mean,
                             double* rstd) {
    double a = 0.0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) a += (double)row[j];
    double m = rg_block_sum(a, sh) / (double)d;
    double v = 0.0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double c = (double)row[j] - m;
        v += c * c;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(rg_block_sum(v, sh) / (double)d + eps);
}

extern "C" __global__ void rustgrad_layer_norm(const T* x, const T* w, const T* b, T* y,
                                               long long d, double eps, int has_w, int has_b) {
    __shared__ double sh[256];
    const T* row = x + (long long)blockIdx.x * d;
    T* out = y + (long long)blockIdx.x * d;
    double mean, rstd;
    rg_row_stats(row, d, eps, sh, &mean, &rstd);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double o = ((double)row[j] - mean) * rstd;
        if (has_w) o *= (double)w[j];
        if (has_b) o += (double)b[j];
        out[j] = (T)o;
    }
}

extern "C" __global__ void rustgrad_layer_norm_backward(const T* g, const T* x, const T* w,
                                                        T* dx, T* xhat, long long d, double eps,
                                                        int has_w, int want_xhat) {
    __shared__ double sh[256];
    long long off = (long long)blockIdx.x * d;
    const T* row = x + off;
    const T* grow = g + off;
    double mean, rstd;
    rg_row_stats(row, d, eps, sh, &mean, &rstd);
    double ds = 0.0, db = 0.0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double gw = (double)grow[j] * (has_w ? (double)w[j] : 1.0);
        ds += gw * (double)row[j];
        db += gw;
    }
    ds = rg_block_sum(ds, sh);
    db = rg_block_sum(db, sh);
    double bb = (db * mean - ds) * (rstd * rstd * rstd) / (double)d;
    double cc = -bb * mean - db * rstd / (double)d;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double gw = (double)grow[j] * (has_w ? (double)w[j] : 1.0);
        dx[off + j] = (T)(rstd * gw + bb * (double)row[j] + cc);
        if (want_xhat) xhat[off + j] = (T)(((double)row[j] - mean) * rstd);
    }
}
"""


# softmax / log_softmax over the last dim (a block per row) and their gradients from the
# output; the max propagates nan as NumPy's does; sums in double
_SOFTMAX = r"""
__device__ double rg_block_reduce(double v, double* sh, int take_max) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (threadIdx.x < h) {
            double a = sh[threadIdx.x], b = sh[threadIdx.x + h];
            sh[threadIdx.x] = take_max ? ((b > a || isnan(b)) && !isnan(a) ? b : a) : a + b;
        }
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void rustgrad_softmax(const T* x, T* y, long long d, int take_log) {
    __shared__ double sh[256];
    long long off = (long long)blockIdx.x * d;
    double m = __longlong_as_double(0xfff0000000000000ULL);  // -inf (NVRTC has no math.h)
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double v = (double)x[off + j];
        if ((v > m || isnan(v)) && !isnan(m)) m = v;
    }
    m = rg_block_reduce(m, sh, 1);
    double s = 0.0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) s += exp((double)x[off + j] - m);
    s = rg_block_reduce(s, sh, 0);
    double ls = log(s);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double e = (double)x[off + j] - m;
        y[off + j] = take_log ? (T)(e - ls) : (T)(exp(e) / s);
    }
}

extern "C" __global__ void rustgrad_softmax_backward(const T* g, const T* y, T* dx, long long d,
                                                     int take_log) {
    __shared__ double sh[256];
    long long off = (long long)blockIdx.x * d;
    double s = 0.0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x)
        s += take_log ? (double)g[off + j] : (double)g[off + j] * (double)y[off + j];
    s = rg_block_reduce(s, sh, 0);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
        double gj = (double)g[off + j], yj = (double)y[off + j];
        dx[off + j] = take_log ? (T)(gj - exp(yj) * s) : (T)((gj - s) * yj);
    }
}
"""


@functools.cache
def _softmax_kernels(ctype: str) -> Tuple[Any, Any]:
    import cupy as cp

    module = cp.RawModule(code="#define T " + ctype + "\n" + _SOFTMAX)
    return module.get_function("rustgrad_softmax"), module.get_function("rustgrad_softmax_backward")


def softmax(x: Any, log: bool) -> Any:
    """softmax (log: log_softmax) over the last dim, one kernel; None for arrays it does not
    take (float16, strided, empty)."""
    import cupy as cp

    ctype = _ln_ctype(x)
    if ctype is None or x.ndim == 0 or x.size == 0:
        return None
    d = x.shape[-1]
    y = cp.empty_like(x)
    _softmax_kernels(ctype)[0]((x.size // d,), (256,), (x, y, cp.int64(d), cp.int32(log)))
    return y


def softmax_backward(grad: Any, out: Any, log: bool) -> Any:
    """The gradient of softmax (log: log_softmax) over the last dim from its output, one kernel;
    None for arrays it does not take."""
    import cupy as cp

    ctype = _ln_ctype(grad, out)
    if ctype is None or out.ndim == 0 or out.size == 0 or grad.shape != out.shape:
        return None
    d = out.shape[-1]
    dx = cp.empty_like(out)
    _softmax_kernels(ctype)[1]((out.size // d,), (256,), (grad, out, dx, cp.int64(d),
                                                          cp.int32(log)))
    return dx


def threshold_backward(grad: Any, out: Any) -> Any:
    """relu's gradient from its output: grad where out > 0 (a nan output passes), else 0; one
    kernel; None for arrays it does not take."""
    if grad.dtype != out.dtype or grad.shape != out.shape or grad.dtype.kind != "f":
        return None
    return _elementwise("threshold_backward")(grad, out)


@functools.cache
def _layer_norm_kernels(ctype: str) -> Tuple[Any, Any]:
    import cupy as cp  # optional dependency: the module imports without CuPy

    module = cp.RawModule(code="#define T " + ctype + "\n" + _LAYER_NORM)
    return (module.get_function("rustgrad_layer_norm"),
            module.get_function("rustgrad_layer_norm_backward"))


def _ln_ctype(*arrays: Any) -> Any:
    """The C type of float32/float64 C-contiguous arrays of one dtype, else None."""
    dt = arrays[0].dtype
    if dt.kind != "f" or dt.itemsize < 4:
        return None
    for a in arrays:
        if a is not None and (a.dtype != dt or not a.flags.c_contiguous):
            return None
    return "double" if dt.itemsize == 8 else "float"


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    """layer_norm of (N, D) x over its last dim, times weight (D,) plus bias (D,) (either may
    be None), in one kernel; None for arrays it does not take (float16, strided)."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    ctype = _ln_ctype(x, weight, bias)
    if ctype is None:
        return None
    n, d = x.shape
    y = cp.empty_like(x)
    if n and d:
        dummy = x[:0]
        _layer_norm_kernels(ctype)[0](
            (n,), (256,), (x, dummy if weight is None else weight, dummy if bias is None else bias,
                           y, cp.int64(d), cp.float64(eps), cp.int32(weight is not None),
                           cp.int32(bias is not None)))
    return y


def layer_norm_backward(g: Any, x: Any, weight: Any, eps: float, want_xhat: bool) -> Any:
    """(dx, xhat or None) of layer_norm over the last dim of (N, D) x, for the upstream
    gradient g, in one kernel; None for arrays it does not take."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    ctype = _ln_ctype(g, x, weight)
    if ctype is None:
        return None
    n, d = x.shape
    dx = cp.empty_like(x)
    xhat = cp.empty_like(x) if want_xhat else None
    if n and d:
        dummy = x[:0]
        _layer_norm_kernels(ctype)[1](
            (n,), (256,), (g, x, dummy if weight is None else weight, dx,
                           dummy if xhat is None else xhat, cp.int64(d), cp.float64(eps),
                           cp.int32(weight is not None), cp.int32(want_xhat)))
    return dx, xhat


def im2col(x: Any, k: Tuple[int, int], d: Tuple[int, int], pads: Tuple[int, int, int, int],
           s: Tuple[int, int], fill: float = 0.0, channels_first: bool = False) -> Any:
    """(N, C, H, W) -> (N, C, kh, kw, OH, OW) (or (C, kh, kw, N, OH, OW) with channels_first),
    as `_ops/conv.py`'s im2col, in one kernel; pads are (top, bottom, left, right)."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    x = cp.ascontiguousarray(x)
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads
    oh = (h + pt + pb - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + pl + pr - d[1] * (k[1] - 1) - 1) // s[1] + 1
    shape = (c, k[0], k[1], n, oh, ow) if channels_first else (n, c, k[0], k[1], oh, ow)
    out = cp.empty(shape, dtype=x.dtype)
    _elementwise("im2col")(x, n, c, h, w, k[0], k[1], oh, ow, s[0], s[1], pt, pl, d[0], d[1],
                           x.dtype.type(fill), bool(channels_first), out)
    return out


def max_pool2d_with_indices(x: Any, k: Tuple[int, int], s: Tuple[int, int],
                            p: Tuple[int, int], d: Tuple[int, int], oh: int,
                            ow: int) -> Tuple[Any, Any]:
    """The (N, C, OH, OW) window maxima of (N, C, H, W) x and their int64 flat indices
    (y * W + x, torch's), with padding never chosen; the output size is the caller's (it
    knows ceil_mode)."""
    import cupy as cp  # optional dependency: the module imports without CuPy

    x = cp.ascontiguousarray(x)
    n, c, h, w = x.shape
    out = cp.empty((n, c, oh, ow), dtype=x.dtype)
    index = cp.empty((n, c, oh, ow), dtype=cp.int64)
    _elementwise("max_pool2d")(x, h, w, k[0], k[1], oh, ow, s[0], s[1], p[0], p[1], d[0], d[1],
                               out, index)
    return out, index


# ---- fused RMSprop and Adagrad steps, GradScaler's unscale (issue 25) ----------------------
# Each is one ElementwiseKernel launch per parameter (or gradient), in place, with the order
# of operations of the array formulation it replaces (optim/rmsprop.py, optim/adagrad.py,
# amp/grad_scaler.py), in float for float16/float32 and in double for float64.
# tests/optim/test_fused_rmsprop_adagrad.py runs these bodies on the CPU (compiled as C++)
# against torch's single-tensor update.
_RMSPROP_BODY = """
    typedef typename acc<T>::type F;
    F gg = maximize ? -(F)g : (F)g;
    if (wd != 0) gg = (F)wd * (F)p + gg;
    F s = (F)sq * (F)alpha;
    s = (F)(1 - alpha) * gg * gg + s;
    sq = (T)s;
    F avg;
    {centered}
    avg = avg + (F)eps;
    {update}"""

# lerp(grad_avg, g, 1 - alpha) with torch's two formulas, then sqrt(square_avg - grad_avg**2)
_RMSPROP_CENTERED = """
    F a = (F)ga;
    double w = 1 - alpha;  // the formula is chosen in double, as the Python float chooses it
    a = (w < 0.5 && w > -0.5) ? (F)w * (gg - a) + a : (F)(-(1 - w)) * (gg - a) + gg;
    ga = (T)a;
    avg = sqrt(-a * a + s);"""

_RMSPROP_MOMENTUM = """
    F b = (F)buf * (F)momentum;
    b = b + gg / avg;
    buf = (T)b;
    p = (T)((F)(-lr) * b + (F)p);"""

_RMSPROP_PLAIN = "p = (T)((F)p + ((F)(-lr) * gg) / avg);"

_ADAGRAD_BODY = """
    typedef typename acc<T>::type F;
    F gg = maximize ? -(F)g : (F)g;
    if (wd != 0) gg = (F)wd * (F)p + gg;
    F ss = gg * gg + (F)s;
    s = (T)ss;
    F denom = sqrt(ss) + (F)eps;
    p = (T)((F)p + ((F)(-clr) * gg) / denom);"""

# torch's _amp_foreach_non_finite_check_and_unscale_ for one gradient: a non-finite input
# sets found_inf[0] to 1 (on the device, no host sync), then g * inv_scale in place
_UNSCALE_BODY = """
    typedef typename acc<T>::type F;
    F v = (F)x;
    if (!isfinite(v)) found_inf[0] = 1.0f;
    y = (T)(inv_scale == 1.0f ? v : v * (F)inv_scale);"""

_RMSPROP_IN = ("T g, float64 lr, float64 alpha, float64 eps, float64 wd, float64 momentum, "
               "bool maximize")


def _rmsprop_source(centered: bool, momentum: bool) -> Tuple[str, str, str]:
    """(in_params, out_params, body) of the RMSprop kernel for these options."""
    outs = "T p, T sq" + (", T ga" if centered else "") + (", T buf" if momentum else "")
    body = _RMSPROP_BODY.format(
        centered=_RMSPROP_CENTERED if centered else "avg = sqrt(s);",
        update=_RMSPROP_MOMENTUM if momentum else _RMSPROP_PLAIN)
    return _RMSPROP_IN, outs, body


_ADAGRAD_SOURCE = ("T g, float64 clr, float64 eps, float64 wd, bool maximize", "T p, T s",
                   _ADAGRAD_BODY)
_UNSCALE_SOURCE = ("T x, float32 inv_scale", "T y, raw float32 found_inf", _UNSCALE_BODY)


@functools.cache
def _optim_kernel(name: str, centered: bool = False, momentum: bool = False) -> Any:
    import cupy as cp  # optional dependency: the module imports without CuPy

    if name == "rmsprop":
        src = _rmsprop_source(centered, momentum)
        name += "_centered" * centered + "_momentum" * momentum
    else:
        src = {"adagrad": _ADAGRAD_SOURCE, "unscale": _UNSCALE_SOURCE}[name]
    return cp.ElementwiseKernel(src[0], src[1], src[2], "rustgrad_" + name, preamble=_ACC)


def rmsprop_step(param: Any, grad: Any, square_avg: Any, grad_avg: Any, momentum_buffer: Any,
                 args: Any) -> bool:
    """One fused RMSprop step of one parameter, one launch: param, square_avg (and grad_avg
    when centered, momentum_buffer with momentum; else None) updated in place. args has lr,
    alpha, eps, weight_decay, momentum, maximize. False for arrays it does not take."""
    if not _floating_alike(param, grad, square_avg, grad_avg, momentum_buffer):
        return False
    kernel = _optim_kernel("rmsprop", grad_avg is not None, momentum_buffer is not None)
    outs = [a for a in (param, square_avg, grad_avg, momentum_buffer) if a is not None]
    kernel(grad, args.lr, args.alpha, args.eps, args.weight_decay, args.momentum,
           args.maximize, *outs)
    return True


def adagrad_step(param: Any, grad: Any, state_sum: Any, args: Any) -> bool:
    """One fused Adagrad step of one parameter, one launch: param and state_sum updated in
    place. args has clr (this step's decayed lr), eps, weight_decay, maximize."""
    if not _floating_alike(param, grad, state_sum):
        return False
    _optim_kernel("adagrad")(grad, args.clr, args.eps, args.weight_decay, args.maximize,
                             param, state_sum)
    return True


def non_finite_check_and_unscale(grad: Any, found_inf: Any, inv_scale: float) -> bool:
    """grad *= inv_scale in place, and found_inf (a float32 array of the grad's device, one
    element) set to 1 where grad held inf or NaN before: one launch, no host sync (torch's
    _amp_foreach_non_finite_check_and_unscale_ for one tensor). False for arrays it does not
    take (not floating, found_inf not float32)."""
    if grad.dtype.kind != "f" or found_inf.dtype.name != "float32" or found_inf.size != 1:
        return False
    _optim_kernel("unscale")(grad, inv_scale, grad, found_inf)
    return True
