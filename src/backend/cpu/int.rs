//! `cpu-par`'s exact integer path (x86-64 with AVX2): 8-bit samples under a plan with an integer
//! form ([`IntegerForm`], which proves that it gives the f32 contract's bytes for every input),
//! full (not separable), at least [`MIN_WIDTH`] taps wide, whose kernel rows each weigh at most
//! 128 in absolute value. Separable plans have their own integer path ([`super::int_sep`]);
//! [`IntPath`] picks one of the two. `CONVFLOW_CPU_NO_INT=1` keeps every plan on the f32 path
//! (to compare).
//!
//! Each source row is padded by the border rule and kept in the band's ring as byte pairs
//! `(s[j], s[j + ch])`: the samples of taps `2p` and `2p + 1` of output `j − 2p·ch` side by side.
//! `_mm256_maddubs_epi16` multiplies 16 such pairs by the two taps' weights and adds each pair,
//! exactly (|a·s + b·s'| ≤ 128·255 < 2^15); kernel rows are summed in 16 bits while their
//! weights add up to at most 128 (every partial sum then fits), and such groups in 32 bits.
//! Four times the multiply-adds per instruction of the f32 path, and no conversions. The output
//! is the integer form's rounding, `round_half_even((Σ + O) / D)` with `|·|` for `--abs`,
//! saturated to 0…255: an f32 estimate of the quotient, corrected by the exact remainder where
//! the estimate alone could be off.

use std::arch::x86_64::*;

use super::bands::{Group, Walk};
use super::bands::{Rows, Span};
use super::int_sep::SepPlan;
use super::par::{pad_row, restore_passed, Job, Scratch, GROUP};
use super::simd::store_bytes_avx2;
use crate::filter::{IntegerForm, Plan};
use crate::frame::Depth;

/// Most absolute weight per kernel row: a pair's and a row's sums then fit 16 bits exactly.
pub(super) const MAX_ROW_WEIGHT: u32 = 128;

/// Narrowest kernel the integer path takes: below, the f32 path is as fast or faster (three
/// taps fill two pairs, and the exact stores weigh as much as the taps). 1080p `box:k` full,
/// 2 threads, min of 5 runs alternating with the f32 path (`CONVFLOW_CPU_NO_INT=1`), integer vs
/// f32 ms: gray k = 5 1.88 / 1.80, 7 2.33 / 3.08, 9 2.94 / 4.72, 15 6.62 / 12.52; RGB k = 5
/// 5.77 / 5.51, 7 7.00 / 9.32, 9 8.86 / 14.49, 15 19.85 / 37.90 (docs/PERFORMANCE.md).
const MIN_WIDTH: usize = 7;

/// Samples per block: two 256-bit vectors of 16-bit sums (the separable path's too).
pub(super) const BLOCK: usize = 32;

/// A plan ready for the integer path.
pub(super) struct IntPlan {
    form: IntegerForm,
    /// Weight pairs per kernel row: `pairs[ky·np + p]` holds tap `2p` in its low byte and tap
    /// `2p + 1` (0 past the row's end) in its high byte, as `maddubs` takes them.
    pairs: Vec<i16>,
    /// Pairs per kernel row: ⌈kw / 2⌉.
    np: usize,
    /// After which kernel rows the 16-bit sums are widened to 32 bits: rows are summed in 16
    /// bits while their weights add up to at most 128 (so every partial sum fits), and the
    /// last row always ends a group.
    widen_after: Vec<bool>,
    /// The quotient's f32 estimate is already the exact rounding (see [`store`]).
    estimate_exact: bool,
}

/// The integer path a plan takes on this CPU, if any.
pub(super) enum IntPath {
    Full(IntPlan),
    Separable(SepPlan),
}

impl IntPath {
    /// The integer path for `plan` on samples of `depth`: needs AVX2, and is off under
    /// `CONVFLOW_CPU_NO_INT`.
    pub fn of(plan: &Plan, depth: Depth) -> Option<IntPath> {
        if !std::is_x86_feature_detected!("avx2")
            || std::env::var_os("CONVFLOW_CPU_NO_INT").is_some()
        {
            return None;
        }
        match plan.is_separable() {
            true => SepPlan::of(plan, depth).map(IntPath::Separable),
            false => IntPlan::of(plan, depth).map(IntPath::Full),
        }
    }

    /// One band of output rows (as `par::run_band`).
    ///
    /// # Safety
    /// The CPU must support AVX2 ([`IntPath::of`] checked it).
    pub unsafe fn run_band(&self, job: &Job<'_>, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
        match self {
            IntPath::Full(ip) => run_band(job, ip, out, span, s),
            IntPath::Separable(sp) => super::int_sep::run_band(job, sp, out, span, s),
        }
    }
}

/// Odd divisors below this: the f32 estimate of `t / D` (t ≤ 256·D) is within 2^-15 of it,
/// nearer than any rounding boundary (≥ 1/(2D) away, since an odd D makes no ties).
const ODD_DIVISOR_ESTIMATED: u32 = 1 << 13;

impl IntPlan {
    /// The integer path for `plan` on samples of `depth`, when it applies on this CPU.
    pub fn of(plan: &Plan, depth: Depth) -> Option<IntPlan> {
        // Separable plans take `SepPlan` or the f32 path: their k + k taps beat this path's k².
        if depth != Depth::U8 || plan.is_separable() {
            return None;
        }
        if plan.kernel.width() < MIN_WIDTH {
            return None;
        }
        let form = IntegerForm::of(plan, 255)?;
        let kw = form.width;
        let row_weight = |r: &[i32]| r.iter().map(|w| w.unsigned_abs()).sum::<u32>();
        if form.weights.chunks(kw).any(|r| row_weight(r) > MAX_ROW_WEIGHT)
            // Sums stay exact in f32, for the quotient's estimate.
            || form.abs_sum() * 255 + form.offset.unsigned_abs() as i64 >= 1 << 24
        {
            return None;
        }
        let np = kw.div_ceil(2);
        let w = |ky: usize, kx: usize| {
            let n = if kx < kw {
                form.weights[ky * kw + kx]
            } else {
                0
            };
            n as i8 as u8 as u16
        };
        let pairs = (0..form.height)
            .flat_map(|ky| (0..np).map(move |p| (ky, p)))
            .map(|(ky, p)| (w(ky, 2 * p) | w(ky, 2 * p + 1) << 8) as i16)
            .collect();
        let weights: Vec<u32> = form.weights.chunks(kw).map(row_weight).collect();
        let widen_after = (0..weights.len())
            .scan(0, |group, ky| {
                *group += weights[ky];
                let next = weights.get(ky + 1).copied();
                let end = next.is_none_or(|w| *group + w > MAX_ROW_WEIGHT);
                if end {
                    *group = 0;
                }
                Some(end)
            })
            .collect();
        let d = form.divisor;
        let estimate_exact = d.is_power_of_two() || (d % 2 == 1 && d < ODD_DIVISOR_ESTIMATED);
        Some(IntPlan {
            form,
            pairs,
            np,
            widen_after,
            estimate_exact,
        })
    }
}

/// One band of output rows on the integer path (as `par::run_band`).
///
/// # Safety
/// The CPU must support AVX2 ([`IntPlan::of`] checked it).
#[target_feature(enable = "avx2")]
unsafe fn run_band(job: &Job<'_>, ip: &IntPlan, out: &Rows<'_>, span: &Span, s: &mut Scratch) {
    let l = job.src.layout;
    let (ch, kh) = (l.channels, job.kh);
    let n = l.width * ch;
    let padded_len = (l.width + job.kw - 1) * ch;
    let ring_row = 2 * padded_len;
    let mut walk = Walk::new(job, span, GROUP, ring_row);
    let slots_n = walk.slots_n();
    s.bytes.resize(ring_row * slots_n + padded_len + ch, 0);
    let (ring, pad) = s.bytes.split_at_mut(ring_row * slots_n);
    for sy in walk.warmup() {
        fill(job, ring, pad, ring_row, slots_n, sy);
    }
    while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
        for sy in new_rows {
            fill(job, ring, pad, ring_row, slots_n, sy);
        }
        // SAFETY: the walk claimed these rows from the band's span.
        let rows = out.group(y..y + g);
        let mut e = 0;
        while e + BLOCK <= n {
            for r in 0..g {
                let sums = block(ip, ring, &slots[r * kh..][..kh], ch, e);
                let o = &mut rows[r * job.dst_stride + e..][..BLOCK];
                store(ip, job.abs, &sums, o);
            }
            e += BLOCK;
        }
        for r in 0..g {
            let taps = &slots[r * kh..][..kh];
            let orow = &mut rows[r * job.dst_stride..][..l.row_bytes()];
            for (e, o) in orow.iter_mut().enumerate().take(n).skip(e) {
                let sum = taps.iter().enumerate().fold(0i32, |acc, (ky, &base)| {
                    let w = &ip.form.weights[ky * job.kw..][..job.kw];
                    let s = |kx: usize| ring[base + 2 * (e + kx * ch)] as i32;
                    acc + (0..job.kw).map(|kx| w[kx] * s(kx)).sum::<i32>()
                });
                *o = ip.form.finish(sum, job.abs, 255) as u8;
            }
            restore_passed(job, orow, y + r, 0);
        }
    }
}

/// Fills the ring slot of source row `sy` (which may lie outside the image): the row padded by
/// the border rule into `pad`, then as pairs `(pad[j], pad[j + ch])`.
#[target_feature(enable = "avx2")]
unsafe fn fill(
    job: &Job<'_>,
    ring: &mut [u8],
    pad: &mut [u8],
    ring_row: usize,
    slots_n: usize,
    sy: isize,
) {
    let l = job.src.layout;
    let ch = l.channels;
    let slot = sy.rem_euclid(slots_n as isize) as usize;
    let dst = &mut ring[slot * ring_row..][..ring_row];
    let Some(r) = job.border.map(sy, l.height) else {
        dst.fill(0);
        return;
    };
    let padded_len = ring_row / 2;
    pad_row(job, r, 0, &mut pad[..padded_len]);
    pad[padded_len..].fill(0);
    // 32 pairs at a time: the unpacks interleave within 128-bit lanes, the permutes put the
    // lanes in order.
    let mut j = 0;
    while j + 32 + ch <= pad.len() && 2 * (j + 32) <= dst.len() {
        let a = _mm256_loadu_si256(pad[j..][..32].as_ptr().cast());
        let b = _mm256_loadu_si256(pad[j + ch..][..32].as_ptr().cast());
        let (lo, hi) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
        let q = &mut dst[2 * j..][..64];
        _mm256_storeu_si256(
            q.as_mut_ptr().cast(),
            _mm256_permute2x128_si256(lo, hi, 0x20),
        );
        _mm256_storeu_si256(
            q[32..].as_mut_ptr().cast(),
            _mm256_permute2x128_si256(lo, hi, 0x31),
        );
        j += 32;
    }
    for (j, q) in dst.chunks_exact_mut(2).enumerate().skip(j) {
        q[0] = pad[j];
        q[1] = pad[j + ch];
    }
}

/// The exact sums of outputs `e .. e + 32` of one output row, whose kernel rows are the ring
/// rows at `taps`.
#[target_feature(enable = "avx2")]
unsafe fn block(ip: &IntPlan, ring: &[u8], taps: &[usize], ch: usize, e: usize) -> [__m256i; 4] {
    let mut acc = [_mm256_setzero_si256(); 4];
    let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let np = ip.np;
    for (ky, &base) in taps.iter().enumerate() {
        // The last pair's 64 bytes end within the row's pairs (e + 31 + 2(np − 1)·ch is below
        // the padded row's length), so the unchecked loads below stay in `ring`.
        let q = &ring[base + 2 * e..][..2 * (BLOCK + 2 * (np - 1) * ch)];
        let ws = &ip.pairs[ky * np..][..np];
        for (p, &w) in ws.iter().enumerate() {
            let w = _mm256_set1_epi16(w);
            let at = q.as_ptr().add(4 * p * ch);
            let a = _mm256_loadu_si256(at.cast());
            let b = _mm256_loadu_si256(at.add(32).cast());
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(a, w));
            hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(b, w));
        }
        if !ip.widen_after[ky] {
            continue; // still within 16 bits
        }
        for (i, v) in [lo, hi].into_iter().enumerate() {
            let low = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(v));
            let high = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(v, 1));
            acc[2 * i] = _mm256_add_epi32(acc[2 * i], low);
            acc[2 * i + 1] = _mm256_add_epi32(acc[2 * i + 1], high);
        }
        (lo, hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    }
    acc
}

/// [`IntegerForm::finish`] on 32 sums, stored as bytes. `t = Σ + O` (`|t|` with `abs`) is
/// clamped to 0…256·D, which changes no output (0 stays 0, and anything from 255.5·D up
/// saturates to 255), and is exact in f32 (≤ 2^24). The quotient's estimate
/// `q0 = round_half_even(f32(t) · f32(1/D))` is the exact rounding when D is a power of two (the
/// product is exact) or odd and below [`ODD_DIVISOR_ESTIMATED`]. Otherwise `q0` is within 1 of
/// `t / D`, and the exact remainder `r = t − q0·D` picks the nearest integer, ties to even:
/// `2r > D` → q0 + 1, `2r < −D` → q0 − 1, `2r = ±D` → the even one of the two.
#[target_feature(enable = "avx2")]
unsafe fn store(ip: &IntPlan, abs: bool, sums: &[__m256i; 4], out: &mut [u8]) {
    let form = &ip.form;
    let d = form.divisor as i32;
    let (dv, neg_d) = (_mm256_set1_epi32(d), _mm256_set1_epi32(-d));
    let (top, inv) = (_mm256_set1_epi32(256 * d), _mm256_set1_ps(1.0 / d as f32));
    let (one, off) = (_mm256_set1_epi32(1), _mm256_set1_epi32(form.offset));
    let mut q = [_mm256_setzero_si256(); 4];
    for (q, &s) in q.iter_mut().zip(sums) {
        let mut t = _mm256_add_epi32(s, off);
        if abs {
            t = _mm256_abs_epi32(t);
        }
        let t = _mm256_min_epi32(_mm256_max_epi32(t, _mm256_setzero_si256()), top);
        let q0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(t), inv));
        if ip.estimate_exact {
            *q = q0;
            continue;
        }
        let r2 = _mm256_slli_epi32(_mm256_sub_epi32(t, _mm256_mullo_epi32(q0, dv)), 1);
        let odd = _mm256_and_si256(q0, one);
        // Compare masks are −1 where true.
        let up = _mm256_cmpgt_epi32(r2, dv);
        let down = _mm256_cmpgt_epi32(neg_d, r2);
        let tie_up = _mm256_and_si256(_mm256_cmpeq_epi32(r2, dv), odd);
        let tie_down = _mm256_and_si256(_mm256_cmpeq_epi32(r2, neg_d), odd);
        let v = _mm256_add_epi32(_mm256_sub_epi32(q0, up), down);
        *q = _mm256_sub_epi32(_mm256_add_epi32(v, tie_up), tie_down);
    }
    // Values are 0…256: the saturating packs clamp 256 to 255.
    store_bytes_avx2(&q, out[..BLOCK].as_mut_ptr().cast());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_plan as plan;
    use crate::filter::Mode;

    #[test]
    fn takes_small_integer_kernels_only() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let takes = |spec: &str, mode| IntPlan::of(&plan(spec, mode), Depth::U8).is_some();
        for spec in ["box:7", "box:11", "box:7x3", "custom:7x1:1,-2,3,-2,1,0,1"] {
            assert!(takes(spec, Mode::Full), "{spec}");
            assert!(
                !takes(spec, Mode::Separable) || spec.starts_with("custom"),
                "{spec}"
            );
        }
        // Separable plans keep the f32 path.
        assert!(!takes("box:9", Mode::Auto));
        // Narrower than 7 taps: the f32 path is as fast.
        for spec in [
            "box:3",
            "box:5",
            "binomial:5",
            "gaussian:5",
            "laplacian",
            "sobel-x",
        ] {
            assert!(!takes(spec, Mode::Full), "{spec}");
        }
        // Irrational weights; kernel rows weighing more than 128 (binomial:7's middle row:
        // 20·64); 16-bit samples.
        assert!(!takes("gaussian:9", Mode::Full));
        assert!(!takes("binomial:7", Mode::Full));
        assert!(IntPlan::of(&plan("box:3", Mode::Full), Depth::new(10)).is_none());
    }

    #[test]
    fn rows_are_summed_in_16_bits_while_their_weights_allow() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        // Rows weighing 70, 70, 10.
        let spec = "custom:7x3:10,10,10,10,10,10,10,10,10,10,10,10,10,10,1,1,2,2,2,1,1";
        let ip = IntPlan::of(&plan(spec, Mode::Full), Depth::U8).unwrap();
        assert_eq!(ip.widen_after, [true, false, true]);
        // box:15 rows weigh 15: groups of 8 rows.
        let ip = IntPlan::of(&plan("box:15", Mode::Full), Depth::U8).unwrap();
        let ends: Vec<usize> = (0..15).filter(|&ky| ip.widen_after[ky]).collect();
        assert_eq!(ends, [7, 14]);
    }

    #[test]
    fn pairs_hold_two_taps_as_signed_bytes() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let spec = "custom:7x2:-2,-1,0,3,1,5,-4,0,1,-4,1,2,0,0";
        let ip = IntPlan::of(&plan(spec, Mode::Full), Depth::U8).unwrap();
        // Rows [-2 -1 0 3 1 5 -4; 0 1 -4 1 2 0 0]: pairs (−2, −1), (0, 3), (1, 5), (−4, 0),
        // (0, 1), (−4, 1), (2, 0), (0, 0).
        assert_eq!(ip.np, 4);
        let pair = |lo: i8, hi: i8| (lo as u8 as u16 | (hi as u8 as u16) << 8) as i16;
        assert_eq!(
            ip.pairs,
            [
                pair(-2, -1),
                pair(0, 3),
                pair(1, 5),
                pair(-4, 0),
                pair(0, 1),
                pair(-4, 1),
                pair(2, 0),
                pair(0, 0)
            ]
        );
    }
}
