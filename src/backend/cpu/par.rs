//! `cpu-par`: rayon over row bands, bit-identical to `cpu-seq`.
//!
//! Each band keeps a ring of `kh + GROUP − 1` rows: for the full path, source rows converted to
//! f32 and padded horizontally by the border rule; for the separable path, horizontal-pass
//! results.
//! Border handling thus happens once per row, outside the hot loop, and the hot loop is a plain
//! multiply-add over contiguous f32 (all channels interleaved alike), blocked `LANES` samples
//! wide so the accumulators stay in vector registers, for `GROUP` output rows at a time so the
//! rows they share are read from L1. The per-sample tap order is the contract's
//! row-major order, so vectorizing across samples changes no result.
//!
//! Samples of any depth are converted to f32 once per row, as the ring is filled, and written
//! back at the format's depth; the hot loop never sees the storage.
//!
//! On x86-64 the band code is compiled a second time with AVX2+FMA enabled and chosen at run
//! time; elsewhere (or on CPUs without FMA) `f32::mul_add` is still a fused multiply-add, only
//! slower.

use std::cell::RefCell;

use rayon::prelude::*;

use crate::backend::{filter_planes, Backend, BackendError, PlaneFilter};
use crate::border::Border;
use crate::filter::{finish, Decomposition, Plan};
use crate::frame::{Depth, Frame, PlaneMut, PlaneRef};

/// Samples computed together per block: 8 AVX registers of 8 f32.
const LANES: usize = 64;

/// Output rows computed together, sharing the rows they read while those are in L1.
const GROUP: usize = 8;

/// The `cpu-par` backend: a rayon pool of its own, filtering each plane in row bands.
pub struct CpuPar {
    pool: rayon::ThreadPool,
}

impl CpuPar {
    /// `threads == 0` uses one thread per logical CPU.
    pub fn new(threads: usize) -> Result<Self, BackendError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("convflow-cpu-{i}"))
            .build()
            .map_err(|e| BackendError::ThreadPool(e.to_string()))?;
        Ok(CpuPar { pool })
    }

    /// Threads in the pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

/// The instruction set the hot loops run with on this CPU.
pub fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        return "avx2+fma";
    }
    "baseline"
}

/// Everything a band needs to know, shared by all bands of one plane.
struct Job<'a> {
    src: PlaneRef<'a>,
    weights: &'a [f32],
    /// `Some((col, row))` for the separable path.
    factors: Option<(&'a [f32], &'a [f32])>,
    kw: usize,
    kh: usize,
    ax: usize,
    ay: usize,
    border: Border,
    offset: f32,
    abs: bool,
    mask: u8,
    dst_stride: usize,
    /// Storage of the samples, read and written; `max` is where outputs saturate.
    depth: Depth,
    max: u16,
}

#[derive(Default)]
struct Scratch {
    ring: Vec<f32>,
    padded: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Backend for CpuPar {
    fn name(&self) -> String {
        format!("cpu-par ({} threads, {})", self.threads(), simd_level())
    }

    fn filter_frame(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
    ) -> Result<(), BackendError> {
        filter_planes(self, plan, src, dst)
    }
}

impl PlaneFilter for CpuPar {
    fn filter_plane(
        &mut self,
        plan: &Plan,
        src: PlaneRef<'_>,
        dst: PlaneMut<'_>,
        mask: u8,
    ) -> Result<(), BackendError> {
        let k = &plan.kernel;
        let (ax, ay) = k.anchor();
        let factors = match &plan.decomposition {
            Decomposition::Full => None,
            Decomposition::Separable { col, row } => Some((col.as_slice(), row.as_slice())),
        };
        let job = Job {
            src,
            weights: k.weights(),
            factors,
            kw: k.width(),
            kh: k.height(),
            ax,
            ay,
            border: plan.border,
            offset: k.offset(),
            abs: plan.abs,
            mask,
            dst_stride: dst.layout.stride,
            depth: src.layout.depth,
            max: src.layout.depth.max(),
        };
        let h = src.layout.height;
        // About four bands per thread for balance, but never much shorter than the kernel so
        // the ring's start-up cost (kh rows) stays small against the band's work.
        let band = h.div_ceil(self.threads() * 4).max(job.kh.max(16)).min(h);
        let chunk = job.dst_stride * band;
        self.pool.install(|| {
            dst.data
                .par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(i, out)| {
                    let y0 = i * band;
                    let y1 = (y0 + band).min(h);
                    SCRATCH.with(|s| run_band(&job, out, y0, y1, &mut s.borrow_mut()));
                });
        });
        Ok(())
    }
}

fn run_band(job: &Job<'_>, out: &mut [u8], y0: usize, y1: usize, s: &mut Scratch) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU was just checked to support AVX2 and FMA.
        unsafe { run_band_avx2(job, out, y0, y1, s) };
        return;
    }
    run_band_impl(job, out, y0, y1, s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_band_avx2(job: &Job<'_>, out: &mut [u8], y0: usize, y1: usize, s: &mut Scratch) {
    run_band_impl(job, out, y0, y1, s);
}

#[inline(always)]
fn run_band_impl(job: &Job<'_>, out: &mut [u8], y0: usize, y1: usize, s: &mut Scratch) {
    let l = job.src.layout;
    let n = l.width * l.channels; // samples per row
    let padded_len = (l.width + job.kw - 1) * l.channels;
    let ring_row = if job.factors.is_some() { n } else { padded_len };
    let slots_n = job.kh + GROUP - 1;
    s.ring.resize(ring_row * slots_n, 0.0);
    s.padded.resize(padded_len, 0.0);
    let Scratch { ring, padded } = s;

    let first = y0 as isize - job.ay as isize;
    for sy in first..first + job.kh as isize - 1 {
        fill(job, ring, padded, ring_row, slots_n, sy);
    }
    // slots[r * kh + ky]: ring offset of the row read by tap row ky of output row y + r.
    let mut slots = vec![0usize; GROUP * job.kh];
    let mut y = y0;
    while y < y1 {
        let g = GROUP.min(y1 - y);
        let top = y as isize - job.ay as isize;
        for r in 0..g as isize {
            fill(
                job,
                ring,
                padded,
                ring_row,
                slots_n,
                top + job.kh as isize - 1 + r,
            );
        }
        for (i, slot) in slots[..g * job.kh].iter_mut().enumerate() {
            let sy = top + (i / job.kh) as isize + (i % job.kh) as isize;
            *slot = sy.rem_euclid(slots_n as isize) as usize * ring_row;
        }
        let rows = &mut out[(y - y0) * job.dst_stride..];
        // Blocks outermost, rows innermost: the kh + g − 1 row segments of one block stay in
        // L1 while the g output rows of the group read them.
        let mut e = 0;
        while e + LANES <= n {
            for r in 0..g {
                let taps = &slots[r * job.kh..][..job.kh];
                let acc = match job.factors {
                    None => full_block(job, ring, taps, l.channels, e),
                    Some((col, _)) => vertical_block(ring, taps, col, e),
                };
                let orow = &mut rows[r * job.dst_stride..];
                if job.depth == Depth::U8 {
                    let o: &mut [u8; LANES] = (&mut orow[e..][..LANES]).try_into().unwrap();
                    for i in 0..LANES {
                        o[i] = finish(acc[i], job.offset, job.abs, 255) as u8;
                    }
                } else {
                    for (i, &a) in acc.iter().enumerate() {
                        job.depth
                            .put(orow, e + i, finish(a, job.offset, job.abs, job.max));
                    }
                }
            }
            e += LANES;
        }
        for r in 0..g {
            let taps = &slots[r * job.kh..][..job.kh];
            let orow = &mut rows[r * job.dst_stride..][..l.row_bytes()];
            for e in e..n {
                let acc = match job.factors {
                    None => full_sample(job, ring, taps, l.channels, e),
                    Some((col, _)) => taps
                        .iter()
                        .zip(col)
                        .fold(0f32, |acc, (&b, &w)| w.mul_add(ring[b + e], acc)),
                };
                job.depth
                    .put(orow, e, finish(acc, job.offset, job.abs, job.max));
            }
            if job.mask != (1u8 << l.channels) - 1 {
                // Channels passed through keep their stored bytes.
                let (srow, b) = (job.src.row(y + r), job.depth.bytes());
                for i in (0..n).filter(|i| job.mask & (1 << (i % l.channels)) == 0) {
                    orow[i * b..][..b].copy_from_slice(&srow[i * b..][..b]);
                }
            }
        }
        y += g;
    }
}

/// Fills the ring slot for source row `sy` (which may lie outside the image). A function, not a
/// closure: closures do not inherit the caller's `target_feature`s.
#[inline(always)]
fn fill(
    job: &Job<'_>,
    ring: &mut [f32],
    padded: &mut [f32],
    ring_row: usize,
    slots_n: usize,
    sy: isize,
) {
    let l = job.src.layout;
    let slot = sy.rem_euclid(slots_n as isize) as usize;
    let dst = &mut ring[slot * ring_row..][..ring_row];
    let Some(r) = job.border.map(sy, l.height) else {
        dst.fill(0.0);
        return;
    };
    match job.factors {
        None => pad_row(job, r, dst),
        Some((_, row)) => {
            pad_row(job, r, padded);
            horizontal(padded, row, l.channels, dst);
        }
    }
}

/// Source row `r` as f32, extended by `ax` pixels on the left and `kw−1−ax` on the right
/// according to the border rule.
#[inline(always)]
fn pad_row(job: &Job<'_>, r: usize, dst: &mut [f32]) {
    let l = job.src.layout;
    let ch = l.channels;
    let src = job.src.row(r);
    let body = &mut dst[job.ax * ch..][..l.width * ch];
    if job.depth == Depth::U8 {
        for (d, &v) in body.iter_mut().zip(src) {
            *d = v as f32;
        }
    } else {
        for (i, d) in body.iter_mut().enumerate() {
            *d = job.depth.get(src, i) as f32;
        }
    }
    let edges = (0..job.ax).chain(job.ax + l.width..l.width + job.kw - 1);
    for px in edges {
        let d = &mut dst[px * ch..][..ch];
        match job.border.map(px as isize - job.ax as isize, l.width) {
            Some(sx) => d
                .iter_mut()
                .enumerate()
                .for_each(|(c, d)| *d = job.depth.get(src, sx * ch + c) as f32),
            None => d.fill(0.0),
        }
    }
}

/// One block of a full-kernel output row: `acc[i] = Σ_ky Σ_kx w·rows[ky][e + i + kx·ch]`.
#[inline(always)]
fn full_block(job: &Job<'_>, ring: &[f32], taps: &[usize], ch: usize, e: usize) -> [f32; LANES] {
    let (kw, w) = (job.kw, job.weights);
    let mut acc = [0f32; LANES];
    for (ky, &base) in taps.iter().enumerate() {
        for (kx, &wt) in w[ky * kw..][..kw].iter().enumerate() {
            let s: &[f32; LANES] = ring[base + e + kx * ch..][..LANES].try_into().unwrap();
            for i in 0..LANES {
                acc[i] = wt.mul_add(s[i], acc[i]);
            }
        }
    }
    acc
}

/// One sample of a full-kernel output row (the tail after the last whole block).
#[inline(always)]
fn full_sample(job: &Job<'_>, ring: &[f32], taps: &[usize], ch: usize, e: usize) -> f32 {
    let (kw, w) = (job.kw, job.weights);
    let mut acc = 0f32;
    for (ky, &base) in taps.iter().enumerate() {
        for (kx, &wt) in w[ky * kw..][..kw].iter().enumerate() {
            acc = wt.mul_add(ring[base + e + kx * ch], acc);
        }
    }
    acc
}

/// Horizontal pass of one padded row: `dst[e] = Σ_kx row[kx]·padded[e + kx·ch]`.
#[inline(always)]
fn horizontal(padded: &[f32], row: &[f32], ch: usize, dst: &mut [f32]) {
    let n = dst.len();
    let mut e = 0;
    while e + LANES <= n {
        let mut acc = [0f32; LANES];
        for (kx, &wt) in row.iter().enumerate() {
            let s: &[f32; LANES] = padded[e + kx * ch..][..LANES].try_into().unwrap();
            for i in 0..LANES {
                acc[i] = wt.mul_add(s[i], acc[i]);
            }
        }
        dst[e..e + LANES].copy_from_slice(&acc);
        e += LANES;
    }
    for e in e..n {
        let mut acc = 0f32;
        for (kx, &wt) in row.iter().enumerate() {
            acc = wt.mul_add(padded[e + kx * ch], acc);
        }
        dst[e] = acc;
    }
}

/// One block of the vertical pass: `acc[i] = Σ_ky col[ky]·rows[ky][e + i]`.
#[inline(always)]
fn vertical_block(ring: &[f32], taps: &[usize], col: &[f32], e: usize) -> [f32; LANES] {
    let mut acc = [0f32; LANES];
    for (&base, &wt) in taps.iter().zip(col) {
        let s: &[f32; LANES] = ring[base + e..][..LANES].try_into().unwrap();
        for i in 0..LANES {
            acc[i] = wt.mul_add(s[i], acc[i]);
        }
    }
    acc
}
