//! `cpu-par`: rayon over row bands (shared out as `bands.rs` says), bit-identical to `cpu-seq`.
//! A full plan runs as its separable plan where the two are proven to give the same bytes
//! (`Plan::same_separable`, as `fast` does). The separable f32 path's bands lie in column strips
//! where many threads or wide rings ask for them (`bands.rs`'s `strips`).
//!
//! Each band keeps a ring of `kh + GROUP − 1` rows: for the full path, source rows converted to
//! f32 and padded horizontally by the border rule; for the separable path, horizontal-pass
//! results.
//! Border handling thus happens once per row, outside the hot loop, and the hot loop is a plain
//! multiply-add over contiguous f32 (all channels interleaved alike), blocked `LANES` samples
//! wide so the accumulators stay in vector registers, for `GROUP` output rows at a time so the
//! rows they share are read from L1; a row's last block ends at the row's end, overlapping the
//! one before (`last_block`). The per-sample tap order is the contract's row-major order,
//! so vectorizing across samples changes no result.
//!
//! Samples of any depth are converted to f32 once per row, as the ring is filled, and written
//! back at the format's depth; the hot loop never sees the storage.
//!
//! On x86-64 the band code is compiled twice more, with AVX2+FMA and with AVX-512F enabled, and
//! the widest the CPU has is chosen at run time, but AVX2 on AMD's Zen 4, where it measured
//! faster ([`super::simd_level`], with the hand-written intrinsics in `simd.rs`;
//! `CONVFLOW_CPU_SIMD=baseline|avx2|avx512` picks one it has, to compare). The baseline x86-64
//! build, for CPUs without FMA, computes each fused multiply-add exactly in f64 (`simd.rs`'s
//! `mul_add`); elsewhere `f32::mul_add` is the target's FMA instruction (or, on a target
//! without one, the C library's `fmaf`). Every width adds the same products in the same order,
//! so all give the same bits.

use std::cell::RefCell;
use std::ops::Range;

use super::bands::{self, split_columns, strips, Group, Rows, Span, Walk};
use super::simd::{level, level_name, mul_add, widest, AVX2, AVX512, BASE};
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
    /// Column strips asked for (`CONVFLOW_CPU_STRIPS`, [`strips`]).
    strips: Option<usize>,
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
            strips: std::env::var("CONVFLOW_CPU_STRIPS")
                .ok()
                .and_then(|v| v.parse().ok()),
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
        // A full plan runs as its separable plan where both give the same bytes for every input
        // ([`Plan::same_separable`]): 2k taps a sample instead of k². 2 AVX2 threads (the
        // development VM, Zen 3), `bench kernels --backend cpu-par --threads 2 --modes full`,
        // best of two passes alternating with the build before, ms, before → after: 4K gray
        // `gaussian:3` / `:5` / `:7` / `:9` 2.90 / 5.84 / 9.45 / 15.74 → 2.52 / 2.59 / 4.73 /
        // 5.98, RGB 12.72 / 22.39 / 38.26 / 56.74 → 7.09 / 8.16 / 12.58 / 13.75 (twenty-third
        // round). 16-bit 3 × 3 kept its full loop until the thirty-fifth round, which made
        // 16-bit rows' conversion vector code: since then the separable plan is 1.30–1.61×
        // faster there (the Xeon, 4 and 16 threads, 1080p and 4K gray16, P010 and rgb48, 4K gray16
        // 16 threads 0.535 → 0.372 ms; docs/PERFORMANCE.md, thirty-fifth round).
        let separable = plan.same_separable(src.layout.depth.largest_stored());
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
        #[cfg(target_arch = "x86_64")]
        let int = super::int::IntPath::of(plan, job.depth);
        #[cfg(target_arch = "x86_64")]
        let f32_path = int.is_none();
        #[cfg(not(target_arch = "x86_64"))]
        let f32_path = true;
        let l = src.layout;
        let strips = match (f32_path, job.factors) {
            (true, Some(_)) => {
                let threads = self.threads();
                strips(l.width, l.channels, l.height, threads, job.kh, self.strips)
            }
            _ => split_columns(l.width, l.channels, 1),
        };
        let spans =
            bands::first_bands_in_strips(l.height, strips.len(), self.threads(), job.kh, split);
        let rows = Rows::new(dst.data, job.dst_stride);
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
                    run_band(self.simd, &job, &strips, &rows, span, s)
                })
            });
        });
        Ok(())
    }
}

/// One band with the band code `simd` names, which must not be wider than [`widest`]: output
/// rows of one of the plane's column `strips` (pixels), which the band's span tells
/// ([`bands::first_bands_in_strips`]).
fn run_band(
    simd: u8,
    job: &Job<'_>,
    strips: &[Range<usize>],
    out: &Rows<'_>,
    span: &Span,
    s: &mut Scratch,
) {
    assert!(simd <= widest());
    let (h, start) = (job.src.layout.height.max(1), span.left().start);
    let Some(strip) = strips.get(start / h) else {
        return; // nothing left to claim
    };
    let at = Strip {
        cols: strip.clone(),
        base: start / h * h,
    };
    match simd {
        // SAFETY: `widest` found AVX-512F, AVX2 and FMA on this CPU.
        #[cfg(target_arch = "x86_64")]
        AVX512 => unsafe { run_band_avx512(job, &at, out, span, s) },
        // SAFETY: `widest` found AVX2 and FMA on this CPU.
        #[cfg(target_arch = "x86_64")]
        AVX2 => unsafe { run_band_avx2(job, &at, out, span, s) },
        _ => run_band_impl::<BASE>(job, &at, out, span, s),
    }
}

/// The column strip a band runs in: its pixels, and the first (virtual) row of its spans
/// ([`bands::first_bands_in_strips`]).
struct Strip {
    cols: Range<usize>,
    base: usize,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_band_avx2(job: &Job<'_>, at: &Strip, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    run_band_impl::<AVX2>(job, at, out, span, s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_band_avx512(job: &Job<'_>, at: &Strip, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    run_band_impl::<AVX512>(job, at, out, span, s);
}

/// One band of output rows in the column strip `at`, claimed group by group from `span`.
/// `SIMD`: the instruction set the caller was compiled with ([`AVX2`] or more: the explicit
/// AVX2 store and vertical pair may be used; [`AVX512`]: their 512-bit forms).
#[inline(always)]
fn run_band_impl<const SIMD: u8>(
    job: &Job<'_>,
    at: &Strip,
    out: &Rows<'_>,
    span: &Span,
    s: &mut Scratch,
) {
    let l = job.src.layout;
    let (x0, sw) = (at.cols.start, at.cols.len());
    let n = sw * l.channels; // samples per strip row
    let padded_len = (sw + job.kw - 1) * l.channels;
    let ring_row = if job.factors.is_some() { n } else { padded_len };
    let mut walk = Walk::in_strip(job, span, GROUP, ring_row, at.base);
    let slots_n = walk.slots_n();
    s.ring.resize(ring_row * slots_n + ALIGN, 0.0);
    s.padded.resize(padded_len + ALIGN, 0.0);
    let Scratch { ring, padded, .. } = s;
    let ring = aligned(ring, ring_row * slots_n);
    let padded = aligned(padded, padded_len);

    for sy in walk.warmup() {
        fill::<SIMD>(job, x0, ring, padded, ring_row, slots_n, sy);
    }
    let b = job.depth.bytes();
    let bytes = x0 * l.channels * b..(x0 + sw) * l.channels * b;
    // slots[r * kh + ky]: ring offset of the row read by tap row ky of output row y + r.
    while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
        for sy in new_rows {
            fill::<SIMD>(job, x0, ring, padded, ring_row, slots_n, sy);
        }
        // SAFETY: the walk claimed these rows of this strip from the band's span.
        let mut rows: [&mut [u8]; GROUP] = std::array::from_fn(|r| match r < g {
            true => unsafe { out.part(y + r, bytes.clone()) },
            false => &mut [][..],
        });
        // Blocks outermost, rows innermost: the kh + g − 1 row segments of one block stay in
        // L1 while the g output rows of the group read them.
        let mut e = 0;
        while e + LANES <= n {
            group_block::<SIMD>(job, ring, slots, &mut rows[..g], e);
            e += LANES;
        }
        if let Some(e) = last_block(n) {
            group_block::<SIMD>(job, ring, slots, &mut rows[..g], e);
        }
        for (r, orow) in rows.iter_mut().take(g).enumerate() {
            let taps = &slots[r * job.kh..][..job.kh];
            for e in scalar_from(n)..n {
                let acc = match job.factors {
                    None => full_sample::<SIMD>(job, ring, taps, l.channels, e),
                    Some((col, _)) => taps
                        .iter()
                        .zip(col)
                        .fold(0f32, |acc, (&b, &w)| mul_add::<SIMD>(w, ring[b + e], acc)),
                };
                job.depth
                    .put(orow, e, finish(acc, job.offset, job.abs, job.max));
            }
            restore_passed(job, orow, y + r, x0);
        }
    }
}

/// The block of samples `e .. e + LANES` of a group's output `rows`, whose taps `slots` gives
/// ([`Walk::next_group`]).
#[inline(always)]
fn group_block<const SIMD: u8>(
    job: &Job<'_>,
    ring: &[f32],
    slots: &[usize],
    rows: &mut [&mut [u8]],
    e: usize,
) {
    let (g, b, ch) = (rows.len(), job.depth.bytes(), job.src.layout.channels);
    let at = e * b..(e + LANES) * b;
    let mut r = 0;
    while r < g {
        let taps = &slots[r * job.kh..][..job.kh];
        match job.factors {
            None => {
                let acc = full_block::<SIMD>(job, ring, taps, ch, e);
                store_block::<SIMD>(job, &acc, &mut rows[r][at.clone()]);
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
                store_block::<SIMD>(job, &acc0, &mut rows[r][at.clone()]);
                store_block::<SIMD>(job, &acc1, &mut rows[r + 1][at.clone()]);
                r += 2;
            }
            Some((col, _)) => {
                let acc = vertical_block::<SIMD>(ring, taps, col, e);
                store_block::<SIMD>(job, &acc, &mut rows[r][at.clone()]);
                r += 1;
            }
        }
    }
}

/// Where a row of `n` samples has a last `LANES`-sample block after its whole ones: when `n` is
/// not a whole number of blocks, one ending at the row's end, which overlaps the block before
/// it. The overlapped samples are computed again with the same products in the same order, so
/// they get the same bits, and the stores write the same bytes twice. Rows under a block have
/// none ([`scalar_from`]). Without the overlap the rest went sample by sample: a 480-sample row
/// (32 left over) took 3.1× a 1920-sample row's time per sample (H100 host's Xeon, one AVX-512
/// thread, gray `gaussian:25`, 480 × 4320 against 1920 × 1080; 2.4× at 7 taps).
#[inline(always)]
fn last_block(n: usize) -> Option<usize> {
    (n % LANES >= OVERLAP_FROM && n > LANES).then(|| n - LANES)
}

/// Fewest leftover samples a row's last block overlaps for ([`last_block`]); fewer go
/// sample by sample, which costs less than a whole block's work again.
const OVERLAP_FROM: usize = 8;

/// The first sample of a row of `n` that no block covers (`n`: none; [`last_block`]).
#[inline(always)]
fn scalar_from(n: usize) -> usize {
    match n % LANES {
        _ if n < LANES => 0,
        r if r < OVERLAP_FROM => n - r,
        _ => n,
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

/// Puts back, in output row `orow` (source row `y`, from pixel `x0` on), the stored samples of
/// the channels the filter passes through.
///
/// A byte mask blends the source into the output [`RESTORE_RUN`] bytes at a time (a whole
/// number of pixels of any layout), so the loop compiles to vector blends. Sample by sample,
/// with a division for each sample's channel and a copy call, it made RGBA 3 × 3 planes take
/// 6–8× the time they take now (docs/PERFORMANCE.md, thirty-fifth round).
#[inline(always)]
pub(super) fn restore_passed(job: &Job<'_>, orow: &mut [u8], y: usize, x0: usize) {
    let l = job.src.layout;
    if job.mask == (1u8 << l.channels) - 1 {
        return;
    }
    let px = l.channels * job.depth.bytes();
    let srow = &job.src.row(y)[x0 * px..][..orow.len()];
    // 0xFF on the bytes of passed channels, 0 on filtered ones.
    let keep: [u8; RESTORE_RUN] = std::array::from_fn(|j| {
        let channel = j % px / job.depth.bytes();
        if job.mask & (1 << channel) == 0 {
            0xFF
        } else {
            0
        }
    });
    let blend = |o: &mut [u8], s: &[u8]| {
        for ((o, &s), &k) in o.iter_mut().zip(s).zip(&keep) {
            *o = *o & !k | s & k;
        }
    };
    let mut runs = orow.chunks_exact_mut(RESTORE_RUN);
    let mut from = srow.chunks_exact(RESTORE_RUN);
    for (o, s) in (&mut runs).zip(&mut from) {
        blend(o, s);
    }
    blend(runs.into_remainder(), from.remainder());
}

/// Bytes [`restore_passed`] blends at a time: a multiple of every pixel's size (1–4 channels of
/// 1 or 2 bytes), so each run starts a pixel.
const RESTORE_RUN: usize = 48;

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

/// Fills the ring slot for source row `sy` (which may lie outside the image), from pixel `x0` on
/// (the band's strip). A function, not a closure: closures do not inherit the caller's
/// `target_feature`s.
#[inline(always)]
fn fill<const SIMD: u8>(
    job: &Job<'_>,
    x0: usize,
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
        None => pad_row(job, r, x0, dst),
        Some((_, row)) => {
            pad_row(job, r, x0, padded);
            horizontal::<SIMD>(padded, row, l.channels, dst);
        }
    }
}

/// Source row `r` from pixel `x0` on, as many pixels as `dst` holds less `kw − 1`, in `T`,
/// extended by `ax` pixels on the left and `kw−1−ax` on the right: the row's own where the
/// strip has neighbours, else according to the border rule.
#[inline(always)]
pub(super) fn pad_row<T: Sample>(job: &Job<'_>, r: usize, x0: usize, dst: &mut [T]) {
    let l = job.src.layout;
    let ch = l.channels;
    let src = job.src.row(r);
    // dst's pixel j is the row's pixel x0 + j − ax; j in lo..hi lie in the row.
    let len = dst.len() / ch;
    let lo = job.ax.saturating_sub(x0);
    let hi = len.min(l.width + job.ax - x0);
    let first = (x0 + lo - job.ax) * ch;
    let body = &mut dst[lo * ch..hi * ch];
    if job.depth == Depth::U8 {
        for (d, &v) in body.iter_mut().zip(&src[first..]) {
            *d = T::from_byte(v);
        }
    } else {
        // Converted as vector code (`Depth::words`); `Depth::get` sample by sample held three
        // quarters of a 16-bit 3 × 3 band's profile (docs/PERFORMANCE.md, thirty-fifth round).
        let words = job.depth.words(&src[first * 2..][..body.len() * 2]);
        for (d, v) in body.iter_mut().zip(words) {
            *d = T::from_sample(v);
        }
    }
    for px in (0..lo).chain(hi..len) {
        let d = &mut dst[px * ch..][..ch];
        match job
            .border
            .map((x0 + px) as isize - job.ax as isize, l.width)
        {
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
fn full_block<const SIMD: u8>(
    job: &Job<'_>,
    ring: &[f32],
    taps: &[usize],
    ch: usize,
    e: usize,
) -> [f32; LANES] {
    let (kw, w) = (job.kw, job.weights);
    let mut acc = [0f32; LANES];
    for (ky, &base) in taps.iter().enumerate() {
        for (kx, &wt) in w[ky * kw..][..kw].iter().enumerate() {
            let s: &[f32; LANES] = ring[base + e + kx * ch..][..LANES].try_into().unwrap();
            for i in 0..LANES {
                acc[i] = mul_add::<SIMD>(wt, s[i], acc[i]);
            }
        }
    }
    acc
}

/// One sample of a full-kernel output row (a rest of fewer than 8 samples, or a row under one
/// block: [`scalar_from`]).
#[inline(always)]
fn full_sample<const SIMD: u8>(
    job: &Job<'_>,
    ring: &[f32],
    taps: &[usize],
    ch: usize,
    e: usize,
) -> f32 {
    let (kw, w) = (job.kw, job.weights);
    let mut acc = 0f32;
    for (ky, &base) in taps.iter().enumerate() {
        for (kx, &wt) in w[ky * kw..][..kw].iter().enumerate() {
            acc = mul_add::<SIMD>(wt, ring[base + e + kx * ch], acc);
        }
    }
    acc
}

/// Horizontal pass of one padded row: `dst[e] = Σ_kx row[kx]·padded[e + kx·ch]`.
#[inline(always)]
fn horizontal<const SIMD: u8>(padded: &[f32], row: &[f32], ch: usize, dst: &mut [f32]) {
    let n = dst.len();
    let mut e = 0;
    while e + LANES <= n {
        horizontal_block::<SIMD>(padded, row, ch, &mut dst[e..e + LANES], e);
        e += LANES;
    }
    if let Some(e) = last_block(n) {
        horizontal_block::<SIMD>(padded, row, ch, &mut dst[e..e + LANES], e);
    }
    for e in scalar_from(n)..n {
        let mut acc = 0f32;
        for (kx, &wt) in row.iter().enumerate() {
            acc = mul_add::<SIMD>(wt, padded[e + kx * ch], acc);
        }
        dst[e] = acc;
    }
}

/// One block of the horizontal pass: `dst[i] = Σ_kx row[kx]·padded[e + i + kx·ch]`.
#[inline(always)]
fn horizontal_block<const SIMD: u8>(
    padded: &[f32],
    row: &[f32],
    ch: usize,
    dst: &mut [f32],
    e: usize,
) {
    let mut acc = [0f32; LANES];
    for (kx, &wt) in row.iter().enumerate() {
        let s: &[f32; LANES] = padded[e + kx * ch..][..LANES].try_into().unwrap();
        for i in 0..LANES {
            acc[i] = mul_add::<SIMD>(wt, s[i], acc[i]);
        }
    }
    dst.copy_from_slice(&acc);
}

/// One block of the vertical pass: `acc[i] = Σ_ky col[ky]·rows[ky][e + i]`.
#[inline(always)]
fn vertical_block<const SIMD: u8>(
    ring: &[f32],
    taps: &[usize],
    col: &[f32],
    e: usize,
) -> [f32; LANES] {
    let mut acc = [0f32; LANES];
    for (&base, &wt) in taps.iter().zip(col) {
        let s: &[f32; LANES] = ring[base + e..][..LANES].try_into().unwrap();
        for i in 0..LANES {
            acc[i] = mul_add::<SIMD>(wt, s[i], acc[i]);
        }
    }
    acc
}

#[cfg(test)]
mod tests;
