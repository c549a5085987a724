//! The instruction sets of `cpu-par`'s band code: which one this CPU runs ([`simd_level`]: the
//! widest it has, but AVX2 where AVX-512 measured slower; `CONVFLOW_CPU_SIMD=baseline`, `avx2`
//! or `avx512` picks one, to compare), and the band code's hand-written x86-64 intrinsics (the
//! AVX2 store of a block, the vertical row pair in AVX2 and AVX-512). The loops themselves live
//! in `par.rs`, compiled once per set; every set adds the same products in the same order, so
//! all give the same bits.

use super::par::LANES;
#[cfg(target_arch = "x86_64")]
use crate::frame::Depth;

/// The instruction set the hot loops run with on this CPU.
pub fn simd_level() -> &'static str {
    level_name(level())
}

pub(super) fn level_name(simd: u8) -> &'static str {
    match simd {
        AVX512 => "avx512f+fma",
        AVX2 => "avx2+fma",
        _ => "baseline",
    }
}

/// Band code compiled for no extension, for AVX2+FMA, for AVX-512F (+AVX2+FMA): the `SIMD`
/// parameter of `par.rs`'s band code.
pub(super) const BASE: u8 = 0;
pub(super) const AVX2: u8 = 1;
pub(super) const AVX512: u8 = 2;

/// `w · x + acc` rounded once to f32, as `f32::mul_add` and the FMA instructions compute it,
/// in the band code compiled for `SIMD`. The AVX2 and AVX-512 builds and other architectures
/// (aarch64's floating point has a fused multiply-add) call `mul_add`. The baseline x86-64 build
/// has no FMA instruction, and there `mul_add` is a call to the C library's `fmaf` for each
/// product, which cannot be vectorized. This computes the same value in f64 arithmetic instead,
/// which the compiler vectorizes with SSE2 ([`fma_in_f64`]): a dozen or more instructions a
/// product, two products to a register, so the baseline band code still takes 30–59× the AVX2
/// code's time (the development VM, 2 threads, 1080p separable 9 and 25 taps), against 41–78×
/// with `fmaf` calls (docs/PERFORMANCE.md, thirty-fifth round).
#[inline(always)]
pub(super) fn mul_add<const SIMD: u8>(w: f32, x: f32, acc: f32) -> f32 {
    if SIMD >= AVX2 || !cfg!(target_arch = "x86_64") || cfg!(target_feature = "fma") {
        return w.mul_add(x, acc);
    }
    fma_in_f64(w, x, acc)
}

/// `w · x + acc` rounded once to f32, in f64 arithmetic without a fused multiply-add:
/// - `w · x` is exact in f64 (two 24-bit significands make at most 48 bits);
/// - `s = w · x + acc` rounded to f64, and its exact error `e` by Knuth's two-sum;
/// - where `e ≠ 0` and `s` is even, `s` moves one f64 step toward `e`: the sum rounded to odd,
///   which keeps the information that the exact sum lies strictly between two f64 values;
/// - rounding that to f32 (nearest, ties to even) gives the exact sum rounded once, since an
///   f64 has at least two bits more than an f32 (Boldo and Melquiond, "Emulation of FMA and
///   correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 57(4), 2008).
///
/// Infinite and NaN operands (`e` is then NaN) skip the step and give the IEEE result;
/// finite operands never overflow f64.
#[inline(always)]
fn fma_in_f64(w: f32, x: f32, acc: f32) -> f32 {
    let (p, c) = (w as f64 * x as f64, acc as f64);
    let s = p + c;
    let b = s - p;
    let e = (p - (s - b)) + (c - b);
    let bits = s.to_bits();
    let odd = if e != 0.0 && e.is_finite() && bits & 1 == 0 {
        // One step away from zero where the exact sum lies beyond s, else toward it.
        if (e > 0.0) == (s > 0.0) {
            bits + 1
        } else {
            bits - 1
        }
    } else {
        bits
    };
    f64::from_bits(odd) as f32
}

/// The band code `cpu-par` runs: [`preferred`], or what `CONVFLOW_CPU_SIMD` asks for
/// (`baseline`, `avx2`, `avx512`), never wider than [`widest`].
pub(super) fn level() -> u8 {
    static LEVEL: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        let asked = match std::env::var("CONVFLOW_CPU_SIMD").as_deref() {
            Ok("baseline") => BASE,
            Ok("avx2") => AVX2,
            Ok("avx512") => AVX512,
            _ => preferred(),
        };
        asked.min(widest())
    })
}

/// The fastest band code on this CPU: the widest, but AVX2 on AMD's family 19h (Zen 4), whose
/// cores run each 512-bit operation as two 256-bit halves. There the AVX-512 band code was the
/// slower at every point measured: EPYC family 25 model 17, one thread, best of 3, 1080p gray
/// and RGB `gaussian:7` / `:9` / `:15` / `:25`, separable and full, AVX-512 took 1.03–1.16× the
/// AVX2 time (docs/PERFORMANCE.md, "thirty-first round"). Intel's AVX-512 cores (the H100
/// host's Xeon: 1.14–1.26× faster than AVX2, geomean per thread count at 4–16 threads,
/// sixteenth round) and AMD's later
/// families keep AVX-512.
fn preferred() -> u8 {
    #[cfg(target_arch = "x86_64")]
    let amd = amd_family();
    #[cfg(not(target_arch = "x86_64"))]
    let amd = None;
    prefer(widest(), amd)
}

/// [`preferred`]'s rule, given the widest band code and the AMD family (if any).
fn prefer(widest: u8, amd_family: Option<u32>) -> u8 {
    match amd_family {
        Some(0x19) => widest.min(AVX2),
        _ => widest,
    }
}

/// The CPU family of an AMD processor, or `None` for other vendors.
#[cfg(target_arch = "x86_64")]
fn amd_family() -> Option<u32> {
    use std::arch::x86_64::__cpuid;
    // Leaf 0 gives the vendor and the highest leaf, leaf 1 the family. `__cpuid` is a safe
    // function from Rust 1.94 on, an unsafe one before (the minimum is 1.89).
    // SAFETY: every x86-64 CPU has the `cpuid` instruction and these two leaves.
    #[allow(unused_unsafe)]
    let (vendor, leaf1) = unsafe { (__cpuid(0), __cpuid(1)) };
    (is_amd(vendor.ebx, vendor.edx, vendor.ecx) && vendor.eax >= 1).then(|| family(leaf1.eax))
}

/// Whether leaf 0's vendor registers (`ebx`, `edx`, `ecx`) spell "AuthenticAMD".
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn is_amd(ebx: u32, edx: u32, ecx: u32) -> bool {
    [ebx.to_le_bytes(), edx.to_le_bytes(), ecx.to_le_bytes()] == [*b"Auth", *b"enti", *b"cAMD"]
}

/// The family in leaf 1's `eax`, as AMD and Intel number them: the base family, plus the
/// extended family where the base is 0xf (0x19 for Zen 3 and Zen 4, 0x1a for Zen 5).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn family(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xf;
    if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    }
}

/// The widest band code this CPU can run.
pub(super) fn widest() -> u8 {
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

/// [`finish`](crate::filter::finish) on eight samples at a time, bit-identical to it: `acc +
/// offset`, `abs` by clearing the sign bit, `max(·, 0)` before `min(·, max)` so a NaN becomes 0
/// as in `finish`, then `cvtps2dq`, which rounds half to even (the rounding mode Rust code
/// always runs with). Clamping to integer bounds before rounding gives what rounding before
/// clamping gives. The saturating packs then narrow exactly, since every value already lies in
/// 0…max.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn store_block_avx2(
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

/// Defines `$name`: one block of the vertical pass for two adjacent output rows at once. The
/// `kh − 1` source rows they share are loaded once and feed both rows' accumulators, which
/// halves the loads. `taps` are the first row's ring offsets, `below` the last source row of the
/// second. Each row still adds its taps in the order `ky = 0, 1, …` (`par::vertical_block`'s), so
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
        pub(super) unsafe fn $name(
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
    use super::{family, fma_in_f64, is_amd, prefer, AVX2, AVX512, BASE};
    use crate::filter::test_rng;

    /// The baseline build's fused multiply-add against `f32::mul_add` (the FMA instruction, or
    /// where the build has none the C library's `fmaf`, both correctly rounded), bit for bit.
    fn same_as_fma(w: f32, x: f32, acc: f32) {
        let (got, want) = (fma_in_f64(w, x, acc), w.mul_add(x, acc));
        assert!(
            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
            "{w:e} * {x:e} + {acc:e}: {got:e}, fma {want:e}"
        );
    }

    #[test]
    fn baseline_multiply_add_is_the_fused_one() {
        // The exact sum 2^24 + 3 − 2^-46 rounds to 2^24 + 2. Rounded to f64 first it is the tie
        // 2^24 + 3, which rounds to even, 2^24 + 4: the case rounding to odd is there for.
        let (w, x, acc) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON, 16_777_218.0);
        assert_eq!((w as f64 * x as f64 + acc as f64) as f32, 16_777_220.0);
        assert_eq!(fma_in_f64(w, x, acc), 16_777_218.0);
        // Away from zero: 162565 · 6605 = 2^30 + 1, and 2^54 + 2^30 + 1 rounds to 2^54 + 2^31;
        // rounded to f64 first it is the tie 2^54 + 2^30, which rounds to even, 2^54.
        let (w, x, acc) = (162_565.0, 6605.0, 2f32.powi(54));
        assert_eq!((w as f64 * x as f64 + acc as f64) as f32, 2f32.powi(54));
        assert_eq!(fma_in_f64(w, x, acc), 2f32.powi(54) + 2f32.powi(31));
        assert_eq!(fma_in_f64(-w, x, -acc), -(2f32.powi(54) + 2f32.powi(31)));
        // The same just above a tie, below and above zero, and with the sum's sign flipped.
        for (w, x, acc) in [
            (1.0 + f32::EPSILON, 1.0 + f32::EPSILON, 16_777_218.0),
            (1.0 + f32::EPSILON, 1.0 - f32::EPSILON, -16_777_218.0),
            (-(1.0 + f32::EPSILON), 1.0 - f32::EPSILON, -16_777_218.0),
            (1.0 + f32::EPSILON, -(1.0 - f32::EPSILON), 16_777_220.0),
        ] {
            same_as_fma(w, x, acc);
        }
        // Zeros, infinities, NaN, the largest and the smallest values.
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            255.0,
            65535.0,
        ];
        for &w in &special {
            for &x in &special {
                for &acc in &special {
                    same_as_fma(w, x, acc);
                }
            }
        }
        // Random operands: samples (integers up to 2^16) and any f32 times weights, sums of
        // nearby and of distant magnitudes, and sums that cancel.
        let mut next = test_rng(0x9e37_79b9_7f4a_7c15);
        let mut f = |exp_lo: u32, exp_hi: u32| {
            let r = next();
            let exp = exp_lo + (r >> 40) as u32 % (exp_hi - exp_lo + 1);
            f32::from_bits((r as u32 & 0x807f_ffff) | exp << 23)
        };
        for i in 0..2_000_000u32 {
            let w = f(100, 130);
            let x = match i % 3 {
                0 => (i.wrapping_mul(2_654_435_761) >> 16) as f32,
                1 => f(110, 150),
                _ => f(1, 254),
            };
            let acc = match i % 4 {
                0 => f(100, 160),
                1 => -(w * x) + f(90, 110),
                2 => f(1, 254),
                _ => (w * x).abs() * if i % 8 == 3 { 1.0 } else { -1.0 },
            };
            same_as_fma(w, x, acc);
        }
    }

    #[test]
    fn zen_4_runs_avx2_and_every_other_cpu_its_widest_band_code() {
        // Leaf 1 signatures: Zen 4 (EPYC 9004), Zen 3 (EPYC 7003), Zen 5 (EPYC 9005), an
        // Intel Sapphire Rapids Xeon (family 6).
        let (zen4, zen3, zen5, spr) = (0x00a1_0f11, 0x00a0_0f11, 0x00b0_0f21, 0x0008_06f8);
        assert_eq!(family(zen4), 0x19);
        assert_eq!(family(zen3), 0x19);
        assert_eq!(family(zen5), 0x1a);
        assert_eq!(family(spr), 6);
        assert_eq!(prefer(AVX512, Some(family(zen4))), AVX2);
        assert_eq!(prefer(AVX2, Some(family(zen3))), AVX2);
        assert_eq!(prefer(AVX512, Some(family(zen5))), AVX512);
        assert_eq!(prefer(AVX512, None), AVX512);
        assert_eq!(prefer(BASE, Some(0x19)), BASE);
        // Leaf 0's ebx, edx, ecx: "Auth" "enti" "cAMD"; "Genu" "ineI" "ntel".
        assert!(is_amd(0x6874_7541, 0x6974_6e65, 0x444d_4163));
        assert!(!is_amd(0x756e_6547, 0x4965_6e69, 0x6c65_746e));
    }
}
