//! Timings of the float32 kernels the training benchmarks lean on: exact GELU (forward and
//! backward) on each instruction set the CPU has, softmax rows and the plain AdamW step on the
//! baseline build and the widest (they have no AVX2 copy), at a few sizes; im2col and col2im
//! at the CNN benchmark's two geometries over growing batches, on 1 thread and on 2 (where the
//! split starts to pay: `PAR_MIN_ELEMS`); max_pool2d at the CNN's two pools, on the baseline
//! build and the widest.
//!
//! `cargo bench -p rustgrad-kernels` runs them all; words after `--` keep the cases whose name
//! contains one of them (`cargo bench -p rustgrad-kernels -- softmax adam`). A plain timing
//! loop: each case runs in batches of about 20 ms for about 0.3 s after a warm-up, and the
//! fastest batch is reported (the least disturbed by other load), as time per call and elements
//! per second.

use std::hint::black_box;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

use rustgrad_kernels::{
    adam_step, col2im, gelu_backward_f32, gelu_f32, im2col, max_pool2d, softmax_rows, with_isa_cap,
    Adam, Isa, Unfold, Window, PAR_MIN_ELEMS,
};

const SIZES: [usize; 3] = [1 << 10, 1 << 16, 1 << 20];

/// The baseline build and the widest the CPU has (one entry where they coincide).
fn ends() -> Vec<Isa> {
    let mut v = vec![Isa::Scalar, Isa::cpu()];
    v.dedup();
    v
}

fn values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 2001) as f32 / 250.0 - 4.0)
        .collect()
}

/// n pseudo-random values in [-1, 1) (xorshift64*).
fn noise(n: usize) -> Vec<f32> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

struct Bench {
    filters: Vec<String>,
}

impl Bench {
    /// Times `f` (one call = `elems` elements) under `isa`, if `name` passes the filters.
    fn run(&self, name: &str, isa: Isa, elems: usize, mut f: impl FnMut()) {
        let name = format!("{name}/{isa:?}");
        if !self.filters.is_empty() && !self.filters.iter().any(|w| name.contains(w.as_str())) {
            return;
        }
        with_isa_cap(isa, || {
            // calls per batch: enough for ~20 ms, found on the warm-up
            let start = Instant::now();
            let mut calls = 0u64;
            while start.elapsed() < Duration::from_millis(100) || calls == 0 {
                f();
                calls += 1;
            }
            let per = start.elapsed().as_secs_f64() / calls as f64;
            let batch = ((0.02 / per) as u64).max(1);
            let mut best = f64::INFINITY;
            let begin = Instant::now();
            while begin.elapsed() < Duration::from_millis(300) {
                let t = Instant::now();
                for _ in 0..batch {
                    f();
                }
                best = best.min(t.elapsed().as_secs_f64() / batch as f64);
            }
            println!(
                "{name:<44} {:>12} {:>10.1} Melem/s",
                human(best),
                elems as f64 / best / 1e6
            );
        });
    }
}

fn human(s: f64) -> String {
    match s {
        s if s < 1e-6 => format!("{:.1} ns", s * 1e9),
        s if s < 1e-3 => format!("{:.2} us", s * 1e6),
        s => format!("{:.2} ms", s * 1e3),
    }
}

fn gelu(b: &Bench) {
    for n in SIZES {
        let (xs, gs) = (values(n), values(n));
        let mut out = vec![MaybeUninit::<f32>::uninit(); n];
        for isa in Isa::available() {
            b.run(&format!("gelu_f32/forward/{n}"), isa, n, || {
                black_box(gelu_f32(black_box(&xs), &mut out)[0]);
            });
            b.run(&format!("gelu_f32/backward/{n}"), isa, n, || {
                black_box(gelu_backward_f32(black_box(&gs), &xs, &mut out)[0]);
            });
        }
    }
}

fn softmax(b: &Bench) {
    // (rows, row length): attention-like short rows, a vocabulary-like long one
    for (rows, n) in [(64, 128), (256, 1000), (32, 32_768)] {
        let xs = values(rows * n);
        let mut out = vec![0f32; rows * n];
        for isa in ends() {
            for (log, name) in [(false, "softmax"), (true, "log_softmax")] {
                b.run(
                    &format!("softmax_rows_f32/{name}/{rows}x{n}"),
                    isa,
                    rows * n,
                    || {
                        softmax_rows(black_box(&xs), &mut out, n, log);
                        black_box(out[0]);
                    },
                );
            }
        }
    }
}

fn adam(b: &Bench) {
    let args = Adam {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        decoupled: true,
        maximize: false,
        step_size: 1e-2,
        bias_correction2_sqrt: 0.05,
    };
    for n in SIZES {
        let g = values(n);
        let (mut p, mut m, mut v) = (values(n), vec![0f32; n], vec![0f32; n]);
        for isa in ends() {
            b.run(&format!("adam_step_f32/adamw/{n}"), isa, n, || {
                adam_step(&args, &mut p, black_box(&g), &mut m, &mut v, None);
                black_box(p[0]);
            });
        }
    }
}

fn unfold(b: &Bench) {
    println!("(split from {PAR_MIN_ELEMS} elements on)");
    // (channels, side): the CNN's conv1 (1x28x28) and conv2 (16x14x14) inputs, 3x3, padding 1
    for (c, side) in [(1, 28), (16, 14)] {
        for batch in [1, 2, 4, 8, 32] {
            let g = Unfold::new(
                batch,
                c,
                (side, side),
                (3, 3),
                (1, 1),
                (1, 1),
                (1, 1, 1, 1),
                true,
            )
            .expect("a valid geometry");
            let (xs, cols) = (values(g.image_len()), values(g.cols_len()));
            let mut out = vec![MaybeUninit::<f32>::uninit(); g.cols_len()];
            let mut img = vec![MaybeUninit::<f32>::uninit(); g.image_len()];
            for threads in [1, 2] {
                let name = format!("{batch}x{c}x{side}x{side}/threads {threads}");
                b.run(
                    &format!("im2col_f32/{name}"),
                    Isa::Scalar,
                    g.cols_len(),
                    || {
                        black_box(im2col(black_box(&xs), &g, 0.0, &mut out, threads)[0]);
                    },
                );
                b.run(
                    &format!("col2im_f32/{name}"),
                    Isa::Scalar,
                    g.cols_len(),
                    || {
                        black_box(col2im(black_box(&cols), &g, &mut img, threads)[0]);
                    },
                );
            }
        }
    }
}

fn pool(b: &Bench) {
    // the CNN's two 2x2 max-pools (batch 32), and a 3x3 stride-2 padded one
    for (planes, side, k, s, p) in [(512, 28, 2, 2, 0), (1024, 14, 2, 2, 0), (512, 28, 3, 2, 1)] {
        // random values: which element wins a window is unpredictable, as in training
        let xs = noise(planes * side * side);
        let o = (side + 2 * p - k) / s + 1;
        let w = Window {
            kernel: (k, k),
            stride: (s, s),
            padding: (p, p),
            dilation: (1, 1),
            out: (o, o),
        };
        let name = format!("max_pool2d_f32/{planes}x{side}x{side}/k{k} s{s} p{p}");
        for isa in ends() {
            b.run(&name, isa, xs.len(), || {
                black_box(max_pool2d(black_box(&xs), planes, (side, side), &w).0[0]);
            });
        }
    }
}

fn main() {
    // cargo passes `--bench`; anything else not starting with `-` is a filter
    let filters = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let b = Bench { filters };
    println!("widest instruction set of this CPU: {:?}", Isa::cpu());
    gelu(&b);
    softmax(&b);
    adam(&b);
    unfold(&b);
    pool(&b);
}
