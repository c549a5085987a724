//! `cpu-par`'s exact integer path for separable plans (x86-64 with AVX2): 8-bit samples under a
//! separable plan with an integer form ([`IntegerForm`], proven to give the f32 contract's bytes
//! for every input) over a power of two, whose every sum fits 16 bits (below). The default
//! Gaussians up to 5 taps (OpenCV's fixed dyadic tables), small binomials, boxes of 2^n, the
//! Sobels and custom kernels like them are such plans; the Gaussians of 7 and 9 taps (dyadic
//! too, but with sums up to 255·2^12 and 255·2^16), odd divisors (`box:3`) and the irrational
//! Gaussians from 11 taps keep the f32 path.
//!
//! The horizontal pass works as the full integer path's rows do ([`super::int`]): byte pairs
//! `(s[j], s[j + ch])` (unpacked from two loads), `_mm256_maddubs_epi16` on 16 pairs per
//! instruction, sums exact in 16 bits (|Σ| ≤ 255·128). The band's ring holds these 16-bit row
//! sums, half the bytes of the f32 path's ring. The vertical pass stays in 16 bits too
//! (`_mm256_mullo_epi16`, 16 sums per instruction), so the path takes only plans where nothing
//! can wrap: the divisor `D = 2^s` a power of two and `255·Σ|w| + |offset·D| + D/2 < 2^15`
//! (signed sums; any weights, offsets, `--abs`), or, for weights all ≥ 0 without an offset and
//! `D ≥ 2`, `255·Σw + D/2 < 2^16` (unsigned sums: `gaussian:5`'s reach 255·256). Rounding half
//! to even is `(t + D/2 − 1 + ((t >> s) & 1)) >> s` in the same 16 bits. That gives
//! `IntegerForm::finish` of the exact sum `Σ_ky col[ky]·Σ_kx row[kx]·s`, which the integer
//! form's proof equates with the contract's two-pass f32 result. (A 32-bit vertical pass, for
//! `gaussian:7` or odd divisors, was measured slower than the f32 path: 0.54–0.93× its speed at
//! 1080p 7×7; docs/PERFORMANCE.md.)

use std::arch::x86_64::*;

use super::bands::{Group, Walk};
use super::bands::{Rows, Span};
use super::int::{BLOCK, MAX_ROW_WEIGHT};
use super::par::{restore_passed, Job, Scratch};
use crate::filter::{IntegerForm, Plan};
use crate::frame::Depth;

/// Output rows computed per pass: the two rows share `kh − 1` ring rows, loaded once. Two rather
/// than the f32 path's eight keeps the ring small; 1080p and 4K, gray and RGB, 3×3 and 5×5, one
/// thread, best of 3 (ms, groups of 1 / 2 / 4 / 8 rows): 1080p gray 3×3 0.73 / 0.69 / 1.26 /
/// 0.74, 4K RGB 3×3 10.30 / 9.82 / 10.15 / 10.07 (docs/PERFORMANCE.md has every point).
const GROUP: usize = 2;

/// A separable plan ready for the integer path.
pub(super) struct SepPlan {
    form: IntegerForm,
    /// Row weight pairs as `maddubs` takes them: tap `2p` in the low byte, `2p + 1` (0 past the
    /// row's end) in the high one.
    pairs: Vec<i16>,
    /// The row factor's integer weights.
    row: Vec<i32>,
    /// The column factor's integer weights.
    col: Vec<i32>,
    /// The divisor is `2^shift`.
    shift: u32,
    /// The sums' range: signed 16 bits (`Signed`), or unsigned 16 bits for weights all ≥ 0
    /// without an offset (`Unsigned`, twice the room: `gaussian:5`'s sums reach 255·256).
    range: Range,
    /// The offset's numerator over the divisor (`Signed` only).
    offset: i16,
}

/// How [`store`] reads the 16-bit sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Range {
    Unsigned,
    Signed,
}

impl SepPlan {
    /// The integer path for the separable `plan` on samples of `depth`, when it applies. The
    /// caller checked AVX2 and `CONVFLOW_CPU_NO_INT`.
    pub fn of(plan: &Plan, depth: Depth) -> Option<SepPlan> {
        if depth != Depth::U8 || !plan.is_separable() {
            return None;
        }
        let form = IntegerForm::of(plan, 255)?;
        let (col, row) = form.factors()?;
        let d = form.divisor;
        let row_weight: i64 = row.iter().map(|&w| w.unsigned_abs() as i64).sum();
        // The row factor's horizontal sums fit 16 bits exactly, as the full path's rows do.
        if row_weight > MAX_ROW_WEIGHT as i64
            || col.iter().any(|c| c.unsigned_abs() > i16::MAX as u32)
            || !d.is_power_of_two()
        {
            return None;
        }
        // Every sum, offset and rounding term included, stays within the range.
        let top = 255 * form.abs_sum() + form.offset.unsigned_abs() as i64 + d as i64 / 2;
        let nonneg = row.iter().chain(&col).all(|&w| w >= 0) && form.offset == 0;
        let range = if top < 1 << 15 {
            Range::Signed
        } else if nonneg && d >= 2 && top < 1 << 16 {
            Range::Unsigned
        } else {
            return None;
        };
        let np = row.len().div_ceil(2);
        let w = |kx: usize| row.get(kx).map_or(0, |&n| n as i8 as u8 as u16);
        let pairs = (0..np)
            .map(|p| (w(2 * p) | w(2 * p + 1) << 8) as i16)
            .collect();
        Some(SepPlan {
            shift: d.trailing_zeros(),
            offset: form.offset as i16,
            range,
            form,
            pairs,
            row,
            col,
        })
    }
}

/// One band of output rows on the separable integer path (as `par::run_band`).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn run_band(
    job: &Job<'_>,
    sp: &SepPlan,
    out: &Rows<'_>,
    span: &Span,
    s: &mut Scratch,
) {
    let l = job.src.layout;
    let (ch, kh) = (l.channels, job.kh);
    let n = l.width * ch;
    let padded_len = (l.width + job.kw - 1) * ch;
    let mut walk = Walk::new(job, span, GROUP, n);
    let slots_n = walk.slots_n();
    s.halves.resize(n * slots_n, 0);
    s.bytes.resize(padded_len + ch, 0);
    let (ring, pad) = (&mut s.halves[..], &mut s.bytes[..]);
    for sy in walk.warmup() {
        fill(job, sp, ring, pad, slots_n, sy);
    }
    let weights: Vec<__m256i> = sp
        .col
        .iter()
        .map(|&c| _mm256_set1_epi16(c as i16))
        .collect();
    let round = Round::new(sp, job.abs);
    while let Some((Group { y, g, new_rows }, slots)) = walk.next_group() {
        for sy in new_rows {
            fill(job, sp, ring, pad, slots_n, sy);
        }
        // SAFETY: the walk claimed these rows from the band's span.
        let rows = out.group(y..y + g);
        let (taps, below) = (&slots[..kh], (g == 2).then(|| slots[2 * kh - 1]));
        let mut e = 0;
        while e + BLOCK <= n {
            let [a, b] = vertical(ring, taps, below, &weights, e);
            store(&round, a, &mut rows[e..][..BLOCK]);
            if below.is_some() {
                store(&round, b, &mut rows[job.dst_stride + e..][..BLOCK]);
            }
            e += BLOCK;
        }
        for r in 0..g {
            let taps = &slots[r * kh..][..kh];
            let orow = &mut rows[r * job.dst_stride..][..l.row_bytes()];
            for (e, o) in orow.iter_mut().enumerate().take(n).skip(e) {
                let sum = taps
                    .iter()
                    .zip(&sp.col)
                    .map(|(&t, &c)| c * ring[t + e] as i32)
                    .sum();
                *o = sp.form.finish(sum, job.abs, 255) as u8;
            }
            restore_passed(job, orow, y + r, 0);
        }
    }
}

/// Fills the ring slot of source row `sy` (which may lie outside the image, then zeros) with
/// the row's exact horizontal sums: the row padded by the border rule into `pad`, then per
/// block of 32 outputs and pair of taps `(2p, 2p + 1)` two loads `ch` bytes apart, unpacked into
/// byte pairs and multiplied by `maddubs`. The unpacks work within 128-bit lanes, so a block's
/// 32 sums are stored in the order 0…7, 16…23, 8…15, 24…31; the vertical pass works sample by
/// sample and [`store`] puts the order right.
#[target_feature(enable = "avx2")]
unsafe fn fill(
    job: &Job<'_>,
    sp: &SepPlan,
    ring: &mut [i16],
    pad: &mut [u8],
    slots_n: usize,
    sy: isize,
) {
    let l = job.src.layout;
    let (ch, n) = (l.channels, l.width * l.channels);
    let slot = sy.rem_euclid(slots_n as isize) as usize;
    let dst = &mut ring[slot * n..][..n];
    let Some(r) = job.border.map(sy, l.height) else {
        dst.fill(0);
        return;
    };
    let padded_len = pad.len() - ch;
    let np = sp.pairs.len();
    // A block reads `reach` bytes of the padded row from its output's index on (the last pair's
    // second load ends at byte e + 31 + (2np − 1)·ch ≤ padded_len + ch − 1). Padded index j is
    // source index j − lead; blocks whose bytes all lie in the source row read it directly, the
    // others (and the scalar tail) the padded row, built only where they read.
    let (reach, lead) = (BLOCK + (2 * np - 1) * ch, job.ax * ch);
    let src = job.src.row(r);
    let total = padded_len / ch;
    let left = (lead + reach).div_ceil(ch).min(total);
    let right = ((n + lead).saturating_sub(reach) / ch).min(total);
    pad_pixels(job, src, 0, left, pad);
    pad_pixels(job, src, right.max(left), total, pad);
    pad[padded_len..].fill(0);
    let mut e = 0;
    while e + BLOCK <= n {
        let q = match e.checked_sub(lead) {
            Some(j) if j + reach <= n => &src[j..][..reach],
            _ => &pad[e..][..reach],
        };
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for (p, &w) in sp.pairs.iter().enumerate() {
            let w = _mm256_set1_epi16(w);
            let a = _mm256_loadu_si256(q.as_ptr().add(2 * p * ch).cast());
            let b = _mm256_loadu_si256(q.as_ptr().add((2 * p + 1) * ch).cast());
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(_mm256_unpacklo_epi8(a, b), w));
            hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(_mm256_unpackhi_epi8(a, b), w));
        }
        let o = dst[e..][..BLOCK].as_mut_ptr().cast::<__m256i>();
        _mm256_storeu_si256(o, lo);
        _mm256_storeu_si256(o.add(1), hi);
        e += BLOCK;
    }
    for (e, d) in dst.iter_mut().enumerate().skip(e) {
        let sum: i32 = sp
            .row
            .iter()
            .enumerate()
            .map(|(kx, &w)| w * pad[e + kx * ch] as i32)
            .sum();
        *d = sum as i16;
    }
}

/// Padded pixels `p0 .. p1` of the source row `src` into `pad`: padded pixel `i` is source pixel
/// `i − ax`, by the border rule outside the row.
fn pad_pixels(job: &Job<'_>, src: &[u8], p0: usize, p1: usize, pad: &mut [u8]) {
    let (w, ch, ax) = (job.src.layout.width, job.src.layout.channels, job.ax);
    // Pixels i0 .. i1 lie inside the row.
    let i0 = ax.clamp(p0, p1.max(p0));
    let i1 = (ax + w).clamp(i0, p1.max(i0));
    if i1 > i0 {
        // Then ax ≤ i0 and i1 ≤ ax + w.
        pad[i0 * ch..i1 * ch].copy_from_slice(&src[(i0 - ax) * ch..(i1 - ax) * ch]);
    }
    for i in (p0..i0).chain(i1..p1) {
        let d = &mut pad[i * ch..][..ch];
        match job.border.map(i as isize - ax as isize, w) {
            Some(sx) => d.copy_from_slice(&src[sx * ch..][..ch]),
            None => d.fill(0),
        }
    }
}

/// The vertical pass of outputs `e .. e + 32` of one output row (ring rows at `taps`, weights
/// broadcast in `w`) and, with `below` (the last ring row of the next output row), of the next
/// one too: the `kh − 1` rows they share are loaded once. Each row's exact 16-bit sums, as two
/// vectors in `fill`'s order.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn vertical(
    ring: &[i16],
    taps: &[usize],
    below: Option<usize>,
    w: &[__m256i],
    e: usize,
) -> [[__m256i; 2]; 2] {
    let kh = taps.len();
    let fits = |t: usize| t + e + BLOCK <= ring.len();
    assert!(kh == w.len() && kh > 0 && taps.iter().all(|&t| fits(t)));
    assert!(below.is_none_or(fits));
    let load = |t: usize, h: usize| _mm256_loadu_si256(ring.as_ptr().add(t + e + 16 * h).cast());
    let mul_add =
        |acc: __m256i, x: __m256i, w: __m256i| _mm256_add_epi16(acc, _mm256_mullo_epi16(x, w));
    let (x0, x1) = (load(taps[0], 0), load(taps[0], 1));
    let mut a = [_mm256_mullo_epi16(x0, w[0]), _mm256_mullo_epi16(x1, w[0])];
    let mut b = [_mm256_setzero_si256(); 2];
    for m in 1..kh {
        for (h, (a, b)) in a.iter_mut().zip(&mut b).enumerate() {
            let x = load(taps[m], h);
            *a = mul_add(*a, x, w[m]);
            if below.is_some() {
                *b = mul_add(*b, x, w[m - 1]);
            }
        }
    }
    if let Some(t) = below {
        for (h, b) in b.iter_mut().enumerate() {
            *b = mul_add(*b, load(t, h), w[kh - 1]);
        }
    }
    [a, b]
}

/// The output rule on 16-bit sums `t`: `t + offset`, `|·|` with `--abs` (`Signed`), then
/// rounding half to even by `2^s` as `(t + D/2 − 1 + ((t >> s) & 1)) >> s` (a remainder below
/// D/2 rounds down, above rounds up, exactly D/2 to the even quotient; with floor shifts this
/// holds for negative `t` too), no rounding when `s = 0`. Logical shifts for `Unsigned` sums,
/// arithmetic ones for `Signed`; [`SepPlan::of`] keeps every step inside the range.
struct Round {
    count: __m128i,
    half: __m256i,
    one: __m256i,
    offset: __m256i,
    offset_added: bool,
    signed: bool,
    abs: bool,
    shift: u32,
}

impl Round {
    #[target_feature(enable = "avx2")]
    unsafe fn new(sp: &SepPlan, abs: bool) -> Round {
        let shift = sp.shift;
        Round {
            count: _mm_cvtsi32_si128(shift as i32),
            half: _mm256_set1_epi16(((1i32 << shift) / 2 - 1) as i16),
            one: _mm256_set1_epi16(1),
            offset: _mm256_set1_epi16(sp.offset),
            offset_added: sp.offset != 0,
            signed: sp.range == Range::Signed,
            // Sums of non-negative weights are never negative: `|·|` changes nothing.
            abs: abs && sp.range == Range::Signed,
            shift,
        }
    }
}

/// One row's 32 sums (two vectors in `fill`'s order), through the output rule and stored as
/// bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store(r: &Round, sums: [__m256i; 2], out: &mut [u8]) {
    let rule = |t: __m256i| {
        if !r.signed {
            let odd = _mm256_and_si256(_mm256_srl_epi16(t, r.count), r.one);
            return _mm256_srl_epi16(_mm256_add_epi16(_mm256_add_epi16(t, r.half), odd), r.count);
        }
        let mut t = t;
        if r.offset_added {
            t = _mm256_add_epi16(t, r.offset);
        }
        if r.abs {
            t = _mm256_abs_epi16(t);
        }
        if r.shift == 0 {
            return t;
        }
        let odd = _mm256_and_si256(_mm256_sra_epi16(t, r.count), r.one);
        _mm256_sra_epi16(_mm256_add_epi16(_mm256_add_epi16(t, r.half), odd), r.count)
    };
    let q = [rule(sums[0]), rule(sums[1])];
    // Unsigned quotients are below 2^15 (s ≥ 1) and signed ones within ±2^15, so the signed
    // saturating pack clamps them to 0…255 as the output rule does. `q[0]` holds outputs 0…7 |
    // 16…23 and `q[1]` 8…15 | 24…31, and the pack, within lanes, puts them in order.
    let bytes = _mm256_packus_epi16(q[0], q[1]);
    _mm256_storeu_si256(out[..BLOCK].as_mut_ptr().cast(), bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_plan as plan;
    use crate::filter::Mode;

    #[test]
    fn takes_small_separable_kernels_over_powers_of_two() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let sep = |spec: &str| SepPlan::of(&plan(spec, Mode::Separable), Depth::U8);
        use Range::{Signed, Unsigned};
        for (spec, shift, range) in [
            ("gaussian:3", 4, Signed),
            // 255·256 needs the unsigned range.
            ("gaussian:5", 8, Unsigned),
            ("binomial:5", 8, Unsigned),
            ("box:4", 4, Signed),
            ("box:16", 8, Unsigned),
            // Negative weights, over 1 and 2 (the factors sobel-y's plan carries).
            ("sobel-x", 0, Signed),
            ("sobel-y", 1, Signed),
        ] {
            let sp = sep(spec).unwrap();
            assert_eq!((sp.shift, sp.range), (shift, range), "{spec}");
        }
        // Sums beyond 16 bits (gaussian:7 and :9, dyadic: 255·2^12 and 255·2^16; box:32);
        // odd divisors (box:3 is 1/9); irrational weights (gaussian:11); 16-bit samples; full
        // plans.
        for spec in ["gaussian:7", "gaussian:9", "box:32", "box:3", "gaussian:11"] {
            assert!(sep(spec).is_none(), "{spec}");
        }
        assert!(SepPlan::of(&plan("gaussian:3", Mode::Separable), Depth::new(10)).is_none());
        assert!(SepPlan::of(&plan("gaussian:3", Mode::Full), Depth::U8).is_none());
    }

    #[test]
    fn negative_weights_are_packed_as_signed_bytes() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let sp = SepPlan::of(&plan("sobel-x", Mode::Separable), Depth::U8).unwrap();
        // The row with its first weight positive (the column takes the sign): 1 0 −1, pairs
        // (1, 0) and (−1, 0).
        assert_eq!(sp.row, [1, 0, -1]);
        assert_eq!(sp.pairs, [0x0001, 0x00ff]);
    }

    #[test]
    fn row_weights_are_packed_as_maddubs_takes_them() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let sp = SepPlan::of(&plan("gaussian:5", Mode::Separable), Depth::U8).unwrap();
        // OpenCV's 5-tap table times 16: 1 4 6 4 1, over 256 in all.
        assert_eq!(
            (sp.row.as_slice(), sp.col.as_slice()),
            (&[1, 4, 6, 4, 1][..], &[1, 4, 6, 4, 1][..])
        );
        assert_eq!(sp.form.divisor, 256);
        let pair = |lo: i16, hi: i16| lo | hi << 8;
        assert_eq!(sp.pairs, [pair(1, 4), pair(6, 4), pair(1, 0)]);
    }
}
