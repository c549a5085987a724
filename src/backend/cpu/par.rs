//! `cpu-par`: rayon over row bands (shared out as `bands.rs` says), bit-identical to `cpu-seq`.
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
//! the widest the CPU has is chosen at run time ([`simd_level`]; `CONVFLOW_CPU_SIMD=avx2` caps it,
//! to compare); elsewhere (or on CPUs without FMA) `f32::mul_add` is still a fused
//! multiply-add, only slower. Every width adds the same products in the same order, so all give
//! the same bits.

use std::cell::RefCell;

use super::bands::{self, Rows, Span};
use crate::backend::{filter_planes, Backend, BackendError, PlaneFilter};
use crate::border::Border;
use crate::filter::{finish, Decomposition, Plan};
use crate::frame::{Depth, Frame, PlaneMut, PlaneRef};

/// Samples computed together per block: 8 AVX registers of 8 f32.
const LANES: usize = 64;

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

/// The instruction set the hot loops run with on this CPU.
pub fn simd_level() -> &'static str {
    level_name(level())
}

fn level_name(simd: u8) -> &'static str {
    match simd {
        AVX512 => "avx512f+fma",
        AVX2 => "avx2+fma",
        _ => "baseline",
    }
}

/// Band code compiled for no extension, for AVX2+FMA, for AVX-512F (+AVX2+FMA): the `SIMD`
/// parameter of [`run_band_impl`].
const BASE: u8 = 0;
const AVX2: u8 = 1;
const AVX512: u8 = 2;

/// The widest band code this CPU runs, capped by `CONVFLOW_CPU_SIMD` (`avx2`, `baseline`).
fn level() -> u8 {
    static LEVEL: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = match std::env::var("CONVFLOW_CPU_SIMD").as_deref() {
            Ok("baseline") => BASE,
            Ok("avx2") => AVX2,
            _ => AVX512,
        };
        cap.min(widest())
    })
}

/// The widest band code this CPU can run.
fn widest() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx2") && has!("fma") {
            return AVX512;
        }
        if has!("avx2") && has!("fma") {
            return AVX2;
        }
    }
    BASE
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
    s.ring.resize(ring_row * slots_n, 0.0);
    s.padded.resize(padded_len, 0.0);
    let Scratch { ring, padded, .. } = s;

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

/// [`finish`] on eight samples at a time, bit-identical to it: `acc + offset`, `abs` by
/// clearing the sign bit, `max(·, 0)` before `min(·, max)` so a NaN becomes 0 as in `finish`,
/// then `cvtps2dq`, which rounds half to even (the rounding mode Rust code always runs with).
/// Clamping to integer bounds before rounding gives what rounding before clamping gives. The
/// saturating packs then narrow exactly, since every value already lies in 0…max.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store_block_avx2(
    acc: &[f32; LANES],
    offset: f32,
    abs: bool,
    depth: Depth,
    out: &mut [u8],
) {
    use std::arch::x86_64::*;
    assert_eq!(out.len(), LANES * depth.bytes());
    let (off, hi) = (_mm256_set1_ps(offset), _mm256_set1_ps(depth.max() as f32));
    let mut q = [_mm256_setzero_si256(); LANES / 8];
    for (i, q) in q.iter_mut().enumerate() {
        let mut v = _mm256_add_ps(_mm256_loadu_ps(acc.as_ptr().add(8 * i)), off);
        if abs {
            v = _mm256_andnot_ps(_mm256_set1_ps(-0.0), v);
        }
        *q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), hi));
    }
    let dst = out.as_mut_ptr().cast::<__m256i>();
    if depth == Depth::U8 {
        for (h, q) in q.chunks_exact(4).enumerate() {
            store_bytes_avx2(q.try_into().unwrap(), dst.add(h));
        }
    } else {
        let shift = _mm_cvtsi32_si128(depth.shift() as i32);
        for h in 0..LANES / 16 {
            let c = _mm256_permute4x64_epi64(_mm256_packus_epi32(q[2 * h], q[2 * h + 1]), 0xd8);
            _mm256_storeu_si256(dst.add(h), _mm256_sll_epi16(c, shift));
        }
    }
}

/// Stores 32 values of 0…255 (more saturates to 255), held as 4 × 8 i32 in order, as 32 bytes
/// at `dst`. The packs work within 128-bit lanes; the permute puts the 4-byte groups in order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn store_bytes_avx2(
    q: &[std::arch::x86_64::__m256i; 4],
    dst: *mut std::arch::x86_64::__m256i,
) {
    use std::arch::x86_64::*;
    let a = _mm256_packs_epi32(q[0], q[1]);
    let b = _mm256_packs_epi32(q[2], q[3]);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let c = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), order);
    _mm256_storeu_si256(dst, c);
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

/// Defines `$name`: one block of the vertical pass for two adjacent output rows at once. The
/// `kh − 1` source rows they share are loaded once and feed both rows' accumulators, which
/// halves the loads. `taps` are the first row's ring offsets, `below` the last source row of the
/// second. Each row still adds its taps in the order `ky = 0, 1, …` ([`vertical_block`]'s), so
/// nothing changes in the results: the second row's tap `ky` is the first row's source row
/// `ky + 1`. In registers of `$w` f32 (`$zero`, `$set1`, `$load`, `$fma`, `$store`: that
/// width's intrinsics, enabled by `$features`), `4·$w` samples per pass, so both rows' 8
/// accumulators stay in registers.
#[cfg(target_arch = "x86_64")]
macro_rules! vertical_pair {
    ($(#[$doc:meta])* $name:ident, $features:literal, $w:literal,
     $zero:ident, $set1:ident, $load:ident, $fma:ident, $store:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $name(
            ring: &[f32],
            taps: &[usize],
            below: usize,
            col: &[f32],
            e: usize,
        ) -> [[f32; LANES]; 2] {
            use std::arch::x86_64::*;
            let kh = col.len();
            assert!(kh == taps.len() && kh > 0);
            let fits = |t: usize| t + e + LANES <= ring.len();
            assert!(taps.iter().all(|&t| fits(t)) && fits(below));
            let mut out = [[0f32; LANES]; 2];
            for h in (0..LANES).step_by(4 * $w) {
                let p = ring.as_ptr().add(e + h);
                let (mut a, mut b) = ([$zero(); 4], [$zero(); 4]);
                let w = $set1(col[0]);
                for (i, a) in a.iter_mut().enumerate() {
                    *a = $fma(w, $load(p.add(taps[0] + $w * i)), *a);
                }
                for m in 1..kh {
                    let (wa, wb) = ($set1(col[m]), $set1(col[m - 1]));
                    for (i, (a, b)) in a.iter_mut().zip(&mut b).enumerate() {
                        let s = $load(p.add(taps[m] + $w * i));
                        *a = $fma(wa, s, *a);
                        *b = $fma(wb, s, *b);
                    }
                }
                let w = $set1(col[kh - 1]);
                for (i, (a, b)) in a.iter().zip(&mut b).enumerate() {
                    *b = $fma(w, $load(p.add(below + $w * i)), *b);
                    $store(out[0].as_mut_ptr().add(h + $w * i), *a);
                    $store(out[1].as_mut_ptr().add(h + $w * i), *b);
                }
            }
            out
        }
    };
}

#[cfg(target_arch = "x86_64")]
vertical_pair!(
    /// [`vertical_pair!`] in AVX2: two passes of half a block.
    vertical_pair_avx2, "avx2,fma", 8,
    _mm256_setzero_ps, _mm256_set1_ps, _mm256_loadu_ps, _mm256_fmadd_ps, _mm256_storeu_ps
);

#[cfg(target_arch = "x86_64")]
vertical_pair!(
    /// [`vertical_pair!`] in AVX-512: one pass of a whole block.
    vertical_pair_avx512, "avx512f,avx2,fma", 16,
    _mm512_setzero_ps, _mm512_set1_ps, _mm512_loadu_ps, _mm512_fmadd_ps, _mm512_storeu_ps
);

#[cfg(test)]
mod tests {
    use super::{widest, CpuPar, Group, Span, Walk, AVX2, AVX512, BASE};
    use crate::backend::{cpu::CpuSeq, Backend};
    use crate::border::Border;
    use crate::filter::{test_plan, Mode};
    use crate::frame::{Frame, PixelFormat};

    #[test]
    fn every_band_code_this_cpu_runs_gives_what_cpu_seq_gives() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
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
            src.data_mut().iter_mut().for_each(|b| *b = next() as u8);
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
