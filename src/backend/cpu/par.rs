//! `cpu-par`: rayon over row bands (shared out as `bands.rs` says), bit-identical to `cpu-seq`.
//! A full plan runs as its separable plan where the two are proven to give the same bytes
//! (`same_separable`, as `fast` does).
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
//! On x86-64 the band code is compiled twice more, with AVX2+FMA and with AVX-512F enabled, and
//! the widest the CPU has is chosen at run time, but AVX2 on AMD's Zen 4, where it measured
//! faster ([`super::simd_level`], with the hand-written intrinsics in `simd.rs`;
//! `CONVFLOW_CPU_SIMD=baseline|avx2|avx512` picks one it has, to compare); elsewhere (or on CPUs
//! without FMA) `f32::mul_add` is still a fused multiply-add, only slower. Every width adds the
//! same products in the same order, so all give the same bits.

use std::cell::RefCell;

use super::bands::{self, Rows, Span};
use super::simd::{level, level_name, widest, AVX2, AVX512, BASE};
#[cfg(target_arch = "x86_64")]
use super::simd::{store_block_avx2, vertical_pair_avx2, vertical_pair_avx512};
use crate::backend::{filter_planes, Backend, BackendError, PlaneFilter};
use crate::border::Border;
use crate::filter::{finish, Decomposition, Plan};
use crate::frame::{Depth, Frame, PlaneMut, PlaneRef};

/// Samples computed together per block: 8 AVX registers of 8 f32.
pub(super) const LANES: usize = 64;

/// Output rows computed together, sharing the rows they read while those are in L1.
pub(super) const GROUP: usize = 8;

/// The `cpu-par` backend: a rayon pool of its own, filtering each plane in row bands.
pub struct CpuPar {
    pool: rayon::ThreadPool,
    /// The band code it runs ([`level`]).
    simd: u8,
}

impl CpuPar {
    /// `threads == 0` uses one thread per logical CPU.
    pub fn new(threads: usize) -> Result<Self, BackendError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("convflow-cpu-{i}"))
            .build()
            .map_err(|e| BackendError::ThreadPool(e.to_string()))?;
        Ok(CpuPar {
            pool,
            simd: level(),
        })
    }

    /// Threads in the pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

/// A guess, mostly on the high side, at how long `cpu-par` on `threads` threads (0: one per
/// logical CPU; no more than there are) takes to filter `samples` samples with `plan`: per
/// thread, 3 ns a sample (conversions, rings, stores) plus, a tap, 0.1 ns with the AVX-512
/// band code, 0.15 ns with AVX2 and 0.6 ns with neither (10, 6.7 and 1.7 G multiply-adds a
/// second). Against measurements: 16 Xeon threads (AVX-512), a 4K RGB image with a full
/// 31 × 31 box ~120 ms (guess 154), 1080p yuv420p `gaussian:9` 0.64–1.0 ms (0.93), 1080p gray
/// `gaussian:25` 1.36 ms (1.03: one thread of 16 straggles, docs/PERFORMANCE.md's fifteenth
/// round); 2 Zen 3 threads (AVX2), 4K gray `gaussian:25` 6.6 ms (44). Used to decide whether
/// the CPU is done with a frame before a CUDA context comes up.
pub fn estimate(plan: &Plan, samples: usize, threads: usize) -> std::time::Duration {
    // More threads than CPUs run no faster.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match threads {
        0 => cpus,
        n => n.min(cpus),
    };
    let tap_ns = match level() {
        AVX512 => 0.1,
        AVX2 => 0.15,
        _ => 0.6,
    };
    let taps = plan.weights().len() as f64;
    let ns = samples as f64 * (3.0 + tap_ns * taps) / threads as f64;
    std::time::Duration::from_secs_f64(ns * 1e-9)
}

/// Everything a band needs to know, shared by all bands of one plane.
pub(super) struct Job<'a> {
    pub src: PlaneRef<'a>,
    pub weights: &'a [f32],
    /// `Some((col, row))` for the separable path.
    pub factors: Option<(&'a [f32], &'a [f32])>,
    pub kw: usize,
    pub kh: usize,
    pub ax: usize,
    pub ay: usize,
    pub border: Border,
    pub offset: f32,
    pub abs: bool,
    pub mask: u8,
    pub dst_stride: usize,
    /// Storage of the samples, read and written; `max` is where outputs saturate.
    pub depth: Depth,
    pub max: u16,
}

/// A worker thread's band buffers, kept between bands.
#[derive(Default)]
pub(super) struct Scratch {
    ring: Vec<f32>,
    padded: Vec<f32>,
    /// The integer paths' ring of byte pairs (full) and padded rows.
    pub bytes: Vec<u8>,
    /// The separable integer path's ring of 16-bit row sums.
    pub halves: Vec<i16>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Backend for CpuPar {
    fn name(&self) -> String {
        format!(
            "cpu-par ({} threads, {})",
            self.threads(),
            level_name(self.simd)
        )
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
        let separable = same_separable(plan, src.layout.depth);
        let plan = separable.as_ref().unwrap_or(plan);
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
        let split = bands::splitting();
        let spans = bands::first_bands(src.layout.height, self.threads(), job.kh, split);
        let rows = Rows::new(dst.data, job.dst_stride);
        #[cfg(target_arch = "x86_64")]
        let int = super::int::IntPath::of(plan, job.depth);
        self.pool.install(|| {
            bands::run_all(&spans, split, (job.kh - 1) / 2, |span| {
                SCRATCH.with(|s| {
                    let s = &mut s.borrow_mut();
                    #[cfg(target_arch = "x86_64")]
                    if let Some(ip) = &int {
                        // SAFETY: `IntPath::of` found AVX2.
                        unsafe { ip.run_band(&job, &rows, span, s) };
                        return;
                    }
                    run_band(self.simd, &job, &rows, span, s)
                })
            });
        });
        Ok(())
    }
}

/// The separable plan a full plan runs as where both give the same bytes for every input
/// ([`Plan::same_separable`]: 2k taps a sample instead of k²), but 16-bit 3 × 3 kernels, whose
/// full loop was the faster (4K gray16 `gaussian:3` 11.3 ms against 14.0 as separable). 2 AVX2
/// threads (the development VM, Zen 3), `bench kernels --backend cpu-par --threads 2 --modes
/// full`, best of two passes alternating with the build before, ms, before → after: 4K gray
/// `gaussian:3` / `:5` / `:7` / `:9` 2.90 / 5.84 / 9.45 / 15.74 → 2.52 / 2.59 / 4.73 / 5.98,
/// RGB 12.72 / 22.39 / 38.26 / 56.74 → 7.09 / 8.16 / 12.58 / 13.75, RGBA 60.1 / 76.6 / 89.0 /
/// 108.7 → 62.9 / 67.0 / 77.7 / 78.9 (RGBA's passes spread by up to 40 % on this VM); 1080p
/// 1.5–4.3× for gray and RGB (docs/PERFORMANCE.md, "twenty-third round").
fn same_separable(plan: &Plan, depth: Depth) -> Option<Plan> {
    let k = &plan.kernel;
    if depth.bytes() > 1 && k.width().max(k.height()) <= 3 {
        return None;
    }
    plan.same_separable(depth.largest_stored())
}

/// One band with the band code `simd` names, which must not be wider than [`widest`].
fn run_band(simd: u8, job: &Job<'_>, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    assert!(simd <= widest());
    match simd {
        // SAFETY: `widest` found AVX-512F, AVX2 and FMA on this CPU.
        #[cfg(target_arch = "x86_64")]
        AVX512 => unsafe { run_band_avx512(job, out, span, s) },
        // SAFETY: `widest` found AVX2 and FMA on this CPU.
        #[cfg(target_arch = "x86_64")]
        AVX2 => unsafe { run_band_avx2(job, out, span, s) },
        _ => run_band_impl::<BASE>(job, out, span, s),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_band_avx2(job: &Job<'_>, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    run_band_impl::<AVX2>(job, out, span, s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_band_avx512(job: &Job<'_>, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    run_band_impl::<AVX512>(job, out, span, s);
}

/// One band of output rows, claimed group by group from `span`. `SIMD`: the instruction set the
/// caller was compiled with ([`AVX2`] or more: the explicit AVX2 store and vertical pair may
/// be used; [`AVX512`]: their 512-bit forms).
#[inline(always)]
fn run_band_impl<const SIMD: u8>(job: &Job<'_>, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    let l = job.src.layout;
    let n = l.width * l.channels; // samples per row
    let padded_len = (l.width + job.kw - 1) * l.channels;
    let ring_row = if job.factors.is_some() { n } else { padded_len };
    let mut walk = Walk::new(job, span, GROUP, ring_row);
    let slots_n = walk.slots_n();
    s.ring.resize(ring_row * slots_n + ALIGN, 0.0);
    s.padded.resize(padded_len + ALIGN, 0.0);
    let Scratch { ring, padded, .. } = s;
    let ring = aligned(ring, ring_row * slots_n);
    let padded = aligned(padded, padded_len);

    for sy in walk.warmup() {
        fill(job, ring, padded, ring_row, slots_n, sy);
    }
    // slots[r * kh + ky]: ring offset of the row read by tap row ky of output row y + r.
    while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
        for sy in new_rows {
            fill(job, ring, padded, ring_row, slots_n, sy);
        }
        // SAFETY: the walk claimed these rows from the band's span.
        let rows = unsafe { out.group(y..y + g) };
        // Blocks outermost, rows innermost: the kh + g − 1 row segments of one block stay in
        // L1 while the g output rows of the group read them.
        let mut e = 0;
        let b = job.depth.bytes();
        while e + LANES <= n {
            let mut r = 0;
            while r < g {
                let taps = &slots[r * job.kh..][..job.kh];
                let out = |r: usize| r * job.dst_stride + e * b;
                match job.factors {
                    None => {
                        let acc = full_block(job, ring, taps, l.channels, e);
                        store_block::<SIMD>(job, &acc, &mut rows[out(r)..][..LANES * b]);
                        r += 1;
                    }
                    #[cfg(target_arch = "x86_64")]
                    Some((col, _)) if SIMD >= AVX2 && r + 1 < g => {
                        let below = slots[(r + 1) * job.kh + job.kh - 1];
                        // SAFETY: `SIMD` names what `run_band` found on this CPU.
                        let [acc0, acc1] = unsafe {
                            match SIMD {
                                AVX512 => vertical_pair_avx512(ring, taps, below, col, e),
                                _ => vertical_pair_avx2(ring, taps, below, col, e),
                            }
                        };
                        store_block::<SIMD>(job, &acc0, &mut rows[out(r)..][..LANES * b]);
                        store_block::<SIMD>(job, &acc1, &mut rows[out(r + 1)..][..LANES * b]);
                        r += 2;
                    }
                    Some((col, _)) => {
                        let acc = vertical_block(ring, taps, col, e);
                        store_block::<SIMD>(job, &acc, &mut rows[out(r)..][..LANES * b]);
                        r += 1;
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
            restore_passed(job, orow, y + r);
        }
    }
}

/// Spare elements that let [`aligned`] start a buffer on a cache line.
const ALIGN: usize = 16;

/// The first `len` elements of `buf` from its first 64-byte boundary (`buf` holds `len +
/// ALIGN`). The separable ring's rows are then lines apart wherever a row's samples (width ×
/// channels) are a multiple of 16, and the 64-sample blocks the passes store and the vertical
/// pass loads never straddle a cache line (as allocated, on 16 bytes, up to half did). The
/// horizontal pass's loads at tap offsets, and full plans' padded rows, straddle as before.
#[inline(always)]
fn aligned(buf: &mut [f32], len: usize) -> &mut [f32] {
    let skip = buf.as_ptr().align_offset(64).min(ALIGN);
    &mut buf[skip..][..len]
}

/// `slots[r·kh + ky]`: the ring offset of the row that tap row `ky` of output row `top + ay + r`
/// reads (source row `top + r + ky`), in a ring of `slots_n` rows of `ring_row` elements.
#[inline(always)]
fn slot_offsets(slots: &mut [usize], top: isize, kh: usize, slots_n: usize, ring_row: usize) {
    for (i, slot) in slots.iter_mut().enumerate() {
        let sy = top + (i / kh) as isize + (i % kh) as isize;
        *slot = sy.rem_euclid(slots_n as isize) as usize * ring_row;
    }
}

/// How a band walks its output rows, claimed from its [`Span`] a group at a time, through a ring
/// of `kh + group − 1` rows of `ring_row` elements: the `kh − 1` source rows above the first
/// output row fill the ring first ([`Walk::warmup`]), then each group of up to `group` output rows
/// adds the source rows it is the first to read and finds its taps in the ring
/// ([`Walk::next_group`]). The walk ends where the span does, which another thread may pull up
/// ([`Span::split`]). One schedule for the three band runners (the f32 path here, `int` and
/// `int_sep`); what a ring row holds is theirs.
pub(super) struct Walk<'s> {
    kh: usize,
    ay: usize,
    group: usize,
    ring_row: usize,
    span: &'s Span,
    /// The next output row: the span's first, as only this walk claims from its top.
    y: usize,
    /// The current group's taps ([`Walk::next_group`]).
    slots: Vec<usize>,
}

/// One group of a [`Walk`]: output rows `y .. y + g`, which add source rows `new_rows` (some
/// maybe outside the image) to the ring.
pub(super) struct Group {
    pub y: usize,
    pub g: usize,
    pub new_rows: std::ops::Range<isize>,
}

impl<'s> Walk<'s> {
    pub fn new(job: &Job<'_>, span: &'s Span, group: usize, ring_row: usize) -> Walk<'s> {
        Walk::of(job.kh, job.ay, span, group, ring_row)
    }

    /// A walk for a kernel `kh` rows high anchored at row `ay`.
    fn of(kh: usize, ay: usize, span: &'s Span, group: usize, ring_row: usize) -> Walk<'s> {
        Walk {
            kh,
            ay,
            group,
            ring_row,
            span,
            y: span.left().start,
            slots: vec![0; group * kh],
        }
    }

    /// Rows in the ring.
    pub fn slots_n(&self) -> usize {
        self.kh + self.group - 1
    }

    /// The source rows (some maybe outside the image) the ring holds before the first group:
    /// none if the span has no rows left.
    pub fn warmup(&self) -> std::ops::Range<isize> {
        if self.span.left().is_empty() {
            return 0..0;
        }
        let first = self.y as isize - self.ay as isize;
        first..first + self.kh as isize - 1
    }

    /// Claims the next group, and gives its taps: `slots[r·kh + ky]` is the ring offset of the
    /// row that tap row `ky` of output row `y + r` reads (see [`slot_offsets`]).
    pub fn next_group(&mut self) -> Option<(Group, &[usize])> {
        let rows = self.span.claim(self.group)?;
        debug_assert_eq!(rows.start, self.y);
        let g = rows.len();
        let top = self.y as isize - self.ay as isize;
        let first_new = top + self.kh as isize - 1;
        let group = Group {
            y: self.y,
            g,
            new_rows: first_new..first_new + g as isize,
        };
        self.y += g;
        let (kh, slots_n, ring_row) = (self.kh, self.slots_n(), self.ring_row);
        let slots = &mut self.slots[..g * kh];
        slot_offsets(slots, top, kh, slots_n, ring_row);
        Some((group, slots))
    }
}

/// Puts back, in output row `orow` (source row `y`), the stored samples of the channels the
/// filter passes through.
#[inline(always)]
pub(super) fn restore_passed(job: &Job<'_>, orow: &mut [u8], y: usize) {
    let l = job.src.layout;
    if job.mask != (1u8 << l.channels) - 1 {
        let (srow, b) = (job.src.row(y), job.depth.bytes());
        for i in (0..l.width * l.channels).filter(|i| job.mask & (1 << (i % l.channels)) == 0) {
            orow[i * b..][..b].copy_from_slice(&srow[i * b..][..b]);
        }
    }
}

/// Writes one block of results at the storage depth: `finish` of every sample.
#[inline(always)]
fn store_block<const SIMD: u8>(job: &Job<'_>, acc: &[f32; LANES], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if SIMD >= AVX2 {
        // SAFETY: `SIMD` is only set where AVX2 was detected (`run_band`).
        unsafe { store_block_avx2(acc, job.offset, job.abs, job.depth, out) };
        return;
    }
    for (i, &a) in acc.iter().enumerate() {
        job.depth
            .put(out, i, finish(a, job.offset, job.abs, job.max));
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
pub(super) fn pad_row<T: Sample>(job: &Job<'_>, r: usize, dst: &mut [T]) {
    let l = job.src.layout;
    let ch = l.channels;
    let src = job.src.row(r);
    let body = &mut dst[job.ax * ch..][..l.width * ch];
    if job.depth == Depth::U8 {
        for (d, &v) in body.iter_mut().zip(src) {
            *d = T::from_byte(v);
        }
    } else {
        for (i, d) in body.iter_mut().enumerate() {
            *d = T::from_sample(job.depth.get(src, i));
        }
    }
    let edges = (0..job.ax).chain(job.ax + l.width..l.width + job.kw - 1);
    for px in edges {
        let d = &mut dst[px * ch..][..ch];
        match job.border.map(px as isize - job.ax as isize, l.width) {
            Some(sx) => d
                .iter_mut()
                .enumerate()
                .for_each(|(c, d)| *d = T::from_sample(job.depth.get(src, sx * ch + c))),
            None => d.fill(T::ZERO),
        }
    }
}

/// What a padded row holds: f32 (the f32 path, any depth) or bytes (the integer path, 8-bit
/// samples only).
pub(super) trait Sample: Copy {
    const ZERO: Self;
    fn from_byte(v: u8) -> Self;
    fn from_sample(v: u16) -> Self;
}

impl Sample for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn from_byte(v: u8) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn from_sample(v: u16) -> f32 {
        v as f32
    }
}

impl Sample for u8 {
    const ZERO: u8 = 0;
    #[inline(always)]
    fn from_byte(v: u8) -> u8 {
        v
    }
    /// Only 8-bit samples reach the integer path.
    #[inline(always)]
    fn from_sample(v: u16) -> u8 {
        v as u8
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

#[cfg(test)]
mod tests {
    use super::{widest, CpuPar, Group, Span, Walk, AVX2, AVX512, BASE};
    use crate::backend::{cpu::CpuSeq, Backend};
    use crate::bench::fill_random;
    use crate::border::Border;
    use crate::filter::{test_plan, Mode};
    use crate::frame::{Frame, PixelFormat};

    #[test]
    fn every_band_code_this_cpu_runs_gives_what_cpu_seq_gives() {
        // Rows of whole 64-sample blocks and leftover single samples; planes of 1 to 4 channels.
        let formats = [
            (PixelFormat::Gray8, 333, 41),
            (PixelFormat::Rgb8, 130, 37),
            (PixelFormat::Rgba16, 71, 23),
            (PixelFormat::Yuv420p10, 150, 30),
        ];
        let plans = [
            ("gaussian:7", Mode::Separable),
            ("gaussian:25", Mode::Separable),
            ("gaussian:31x3", Mode::Separable),
            ("gaussian:9x5", Mode::Full),
        ];
        let levels: Vec<u8> = [BASE, AVX2, AVX512]
            .into_iter()
            .filter(|&l| l <= widest())
            .collect();
        for (format, w, h) in formats {
            let mut src = Frame::new(format, w, h).unwrap();
            fill_random(&mut src, (w * h) as u64);
            for (spec, mode) in plans {
                for &border in Border::ALL {
                    let mut plan = test_plan(spec, mode);
                    plan.border = border;
                    let mut want = Frame::new(format, w, h).unwrap();
                    CpuSeq::new().filter_frame(&plan, &src, &mut want).unwrap();
                    for &simd in &levels {
                        let mut par = CpuPar::new(3).unwrap();
                        par.simd = simd;
                        let mut got = Frame::new(format, w, h).unwrap();
                        par.filter_frame(&plan, &src, &mut got).unwrap();
                        assert!(
                            got.data() == want.data(),
                            "{format} {w}x{h} {spec} {border}, band code {simd}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_walk_fills_each_source_row_once_and_finds_every_tap() {
        // Output rows 5..12 of a 3-row kernel anchored at row 1, groups of 3, a ring of 5 rows
        // of 10 elements.
        let span = Span::new(5..12);
        let mut walk = Walk::of(3, 1, &span, 3, 10);
        assert_eq!(walk.slots_n(), 5);
        assert_eq!(walk.warmup(), 4..6);
        let mut filled: Vec<isize> = walk.warmup().collect();
        let mut groups = Vec::new();
        while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
            filled.extend(new_rows.clone());
            // Output row y + r reads source rows y + r − 1 + ky, each from its ring slot.
            for r in 0..g {
                for ky in 0..3 {
                    let sy = (y + r) as isize - 1 + ky as isize;
                    assert!(filled.contains(&sy), "row {sy} read before it was filled");
                    assert_eq!(slots[r * 3 + ky], sy.rem_euclid(5) as usize * 10);
                }
            }
            groups.push((y, g, new_rows));
        }
        assert_eq!(groups, [(5, 3, 6..9), (8, 3, 9..12), (11, 1, 12..13)]);
        assert_eq!(filled, (4..13).collect::<Vec<_>>());
    }
}
