//! Unit tests of `fast`'s specializations and measured rules (thread shapes, blocks, tiles,
//! integer weight packing, plane masks, launches over several planes); the full tiled kernel's
//! in [`full`], the separable kernel's in [`separable`] (launch shapes) and
//! [`separable_passes`] (how its passes run).

use super::rules::TALL_TILE_PREFERRED;
use super::*;
use crate::backend::cuda::abi::FastPlanes;
use crate::backend::cuda::registry::ModuleKey;

mod full;
mod separable;
mod separable_passes;

#[test]
fn integer_kernel_takes_the_measured_cases_only() {
    let form = |k: usize, n: i32| IntegerForm {
        width: k,
        height: k,
        weights: vec![n; k * k],
        divisor: (k * k) as u32,
        offset: 0,
    };
    let (small, large) = (1920 * 1080, 3840 * 2160);
    let take = |k, n, ch, sep, samples| {
        FastSpec::integer(&form(k, n), ch, 1, Border::Clamp, sep, samples).is_some()
    };
    for ch in 1..=2 {
        assert!(take(3, 1, ch, false, small) && take(7, -127, ch, false, small));
        // 9 wide: 60 words of window for gray and for two deinterleaved channels.
        assert!(take(9, 1, ch, false, small));
        // Separable 7 on small planes: the two-factor kernel, one channel only.
        assert!(take(5, 1, ch, true, small) && take(7, 1, ch, true, small) == (ch == 1));
        assert!(take(7, 1, ch, true, large) && !take(9, 1, ch, true, large));
        assert!(!take(10, 1, ch, false, large), "beyond INT_MAX_FULL");
        assert!(
            !take(3, 128, ch, false, large),
            "weights beyond a signed byte"
        );
    }
    // Three and four channels at every size, separable plans up to 5; from a width of 5
    // the windows are deinterleaved, whole pixels per thread.
    for ch in 3..=4 {
        assert!(take(3, 1, ch, false, 3 * small) && take(5, 1, ch, true, 3 * small));
        assert!(!take(7, 1, ch, true, 3 * small) && !take(7, 1, ch, false, 4 * large));
    }
    // 16-bit samples: the full kernel (dp2a, the register kernel's thread shape) up to
    // INT16_MAX_SIDE, separable plans as their outer product; weights within a signed byte;
    // not on INT16_SKIP_CHANNELS (16-bit RGB).
    for ch in 1..=4 {
        for separable in [false, true] {
            let s = FastSpec::integer(&form(3, 1), ch, 2, Border::Wrap, separable, small);
            if ch == INT16_SKIP_CHANNELS {
                assert!(s.is_none(), "16-bit RGB takes the f32 register kernel");
                continue;
            }
            let s = s.unwrap();
            let reg = FastSpec::register(3, 3, ch, Border::Wrap, false, 2).unwrap();
            assert_eq!(
                (s.sb, s.px, s.py, s.min_blocks),
                (2, reg.px, reg.py, reg.min_blocks)
            );
            assert!(s.reg && s.int == Some((9, 0)) && !s.separable && !s.deinterleave);
            assert!(FastSpec::integer(&form(3, 128), ch, 2, Border::Wrap, false, small).is_none());
            let side = INT16_MAX_SIDE + 1;
            assert!(FastSpec::integer(&form(side, 1), ch, 2, Border::Wrap, false, small).is_none());
        }
    }
    let spec = |k, ch| FastSpec::integer(&form(k, 1), ch, 1, Border::Clamp, false, small);
    assert!(!spec(3, 3).unwrap().deinterleave && spec(3, 3).unwrap().px == 16);
    for ch in 2..=4 {
        let s5 = spec(5, ch).unwrap();
        assert!(s5.deinterleave && s5.px == ch * INT_PIXELS && s5.tap_stride() == 1);
    }
    assert!(
        !spec(5, 1).unwrap().deinterleave,
        "one channel is never regrouped"
    );
    // The two-factor kernel: weights beyond a signed byte are fine when the row factor's
    // are not (g ⊗ g has 324), side 7 only, one channel.
    let g = [1, 18, 1, 1, 1, 1, 18];
    let outer = IntegerForm {
        width: 7,
        height: 7,
        weights: (0..49).map(|i| g[i / 7] * g[i % 7]).collect(),
        divisor: 4096,
        offset: 0,
    };
    let two = FastSpec::integer(&outer, 1, 1, Border::Clamp, true, small).unwrap();
    assert!(two.separable && two.int == Some((4096, 0)) && two.py == INT_SEP_ROWS);
    assert!(FastSpec::integer(&outer, 1, 1, Border::Clamp, false, small).is_none());
    assert!(FastSpec::integer(&outer, 2, 1, Border::Clamp, true, small).is_none());
    // 9 keeps the f32 separable kernel, 5 the full integer one.
    assert!(!take(9, 1, 1, true, small));
    let s5 = FastSpec::integer(&form(5, 1), 1, 1, Border::Clamp, true, small).unwrap();
    assert!(!s5.separable);
    let spec = FastSpec::integer(&form(5, 1), 1, 1, Border::Zero, false, large).unwrap();
    assert!(spec.reg && spec.int == Some((25, 0)) && spec.min_blocks == INT_MIN_BLOCKS_SMALL);
}

/// fast_int's accumulation replayed on the host (the same OFF, word index and packed
/// weights; dp4a as four byte products, dp2a.lo as two 16-bit ones) against the direct sum,
/// for every kernel width up to 9, 1–4 channels, 8- and 16-bit samples and all 16 bytes of
/// outputs of a thread.
#[test]
fn packed_weights_give_every_tap_once() {
    let mut seed = 7u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed >> 8
    };
    for (sb, ch) in [1, 2]
        .into_iter()
        .flat_map(|sb| (1..=4).map(move |ch| (sb, ch)))
    {
        let spw = 4 / sb;
        for kw in 1..=9 {
            let form = IntegerForm {
                width: kw,
                height: 1,
                weights: (0..kw).map(|_| (rnd() % 255) as i32 - 127).collect(),
                divisor: 1,
                offset: 0,
            };
            let packed = pack_int_weights(&form, ch, sb);
            let ax = kw / 2;
            let hwl = (ax * ch).div_ceil(spw);
            let off = hwl * spw - ax * ch;
            let span = (kw - 1) * ch + 1;
            let win = (spw - 1 + span).div_ceil(spw);
            assert_eq!(packed.len(), spw * win);
            // Samples of sb bytes (16-bit ones anywhere in 0…65535), spw to a word.
            let samples: Vec<u32> = (0..spw * (hwl + 4 + 10))
                .map(|_| rnd() & if sb == 1 { 0xFF } else { 0xFFFF })
                .collect();
            let word =
                |k: usize| (0..spw).fold(0u32, |w, l| w | samples[spw * k + l] << (8 * sb * l));
            for i in 0..16 / sb {
                let (b, q) = ((i + off) % spw, (i + off) / spw);
                let mut acc = 0i64;
                // fast_int's loop: every word of the window but those holding no tap
                // (holds_tap), whose packed weights must all be 0.
                let holds_tap = |t: usize| (0..kw).any(|kx| (b + kx * ch) / spw == t);
                for t in 0..win {
                    let (a, w) = (word(q + t), packed[b * win + t]);
                    if !holds_tap(t) {
                        assert_eq!(w, 0, "sb {sb} ch {ch} kw {kw}: word {t} holds no tap");
                        continue;
                    }
                    // dp4a: four bytes by four weight bytes; dp2a.lo: two 16-bit lanes by
                    // the weight word's two low bytes.
                    for l in 0..spw {
                        let s = (a >> (8 * sb * l)) & if sb == 1 { 0xFF } else { 0xFFFF };
                        acc += s as i64 * (w >> (8 * l)) as u8 as i8 as i64;
                    }
                    // dp2a.lo reads no weight from the high bytes: they hold none.
                    if spw < 4 {
                        assert_eq!(w >> (8 * spw), 0);
                    }
                }
                let direct: i64 = (0..kw)
                    .map(|kx| form.weights[kx] as i64 * samples[off + i + kx * ch] as i64)
                    .sum();
                assert_eq!(acc, direct, "sb {sb} ch {ch} kw {kw} output {i}");
            }
        }
    }
}

/// fast_int.cuh's float finish (`INT_FFIN`) replayed on the host for every sum it may see, on
/// 8-bit and 16-bit samples: each power-of-two divisor up to `int_ffin_max_divisor`, every t
/// with t / d in [−0.5, max + 0.5) (the clamp proven idle), offsets included (t is the sum plus
/// the offset's numerator). The low bits of 1.5·2²³ + t, fused-multiplied by 1/d plus
/// 1.5·2²³·(1 − 1/d), must be `IntegerForm::finish`'s output.
#[test]
fn float_finish_of_integer_sums_is_the_integer_rounding() {
    use crate::backend::cuda::abi::int_ffin_max_divisor;
    for (sb, max) in [(1usize, 255u16), (2, 65535)] {
        let mut d = 1u32;
        while d <= int_ffin_max_divisor(sb) {
            let form = IntegerForm {
                width: 1,
                height: 1,
                weights: vec![d as i32],
                divisor: d,
                offset: 0,
            };
            let (lo, hi) = (-(d as i64) / 2, (2 * max as i64 + 1) * d as i64 / 2);
            let (inv, c) = (1.0 / d as f32, 12582912.0 - 12582912.0 / d as f32);
            for t in lo..hi {
                let f = f32::from_bits((0x4B40_0000i64 + t) as u32);
                let got = f.mul_add(inv, c).to_bits() & if sb == 1 { 0xFF } else { 0xFFFF };
                let want = form.finish(t as i32, false, max);
                assert_eq!(got, want as u32, "{sb}-byte samples, divisor {d}, sum {t}");
            }
            d *= 2;
        }
    }
}

#[test]
fn register_kernel_takes_small_kernels_only() {
    if overridden(&[
        "CONVFLOW_FAST_PY",
        "CONVFLOW_FAST_REG_PX",
        "CONVFLOW_FAST_REG_MAX",
    ]) {
        return;
    }
    for sb in [1, 2] {
        for ch in 1..=4 {
            for separable in [false, true] {
                let spec = FastSpec::register(3, 5, ch, Border::Reflect, separable, sb)
                    .expect("5 and below take the register kernel");
                // Full 16-bit kernels of side 4-5 take more rows per thread.
                let rows = if sb == 2 && !separable {
                    REG_ROWS_16BIT_5
                } else {
                    REG_ROWS
                };
                assert!(spec.reg && spec.px * sb == 16 && spec.py == rows);
                // 7 wide for full 8-bit gray, RGB and RGBA and one channel of 16-bit samples.
                let wide = !separable && if sb == 1 { ch != 2 } else { ch == 1 };
                for (kw, kh) in [(7, 3), (3, 7)] {
                    let reg = FastSpec::register(kw, kh, ch, Border::Zero, separable, sb);
                    assert_eq!(reg.is_some(), wide, "{kw}x{kh} ch {ch} sb {sb}");
                }
                assert!(FastSpec::register(9, 9, ch, Border::Zero, separable, sb).is_none());
            }
        }
    }
    let wide16 = FastSpec::register(3, 3, 3, Border::Clamp, false, 2).unwrap();
    assert_eq!(
        (wide16.min_blocks, wide16.py),
        (REG_MIN_BLOCKS_WIDE16, REG_ROWS)
    );
    let rgb48_5 = FastSpec::register(5, 5, 3, Border::Clamp, false, 2).unwrap();
    assert_eq!(
        (rgb48_5.min_blocks, rgb48_5.py),
        (REG_MIN_BLOCKS, REG_ROWS_16BIT_5)
    );
    let gray16_5 = FastSpec::register(5, 5, 1, Border::Clamp, false, 2).unwrap();
    assert_eq!(gray16_5.min_blocks, REG_MIN_BLOCKS_GRAY16_5);
    // gray16 at 6 and 7: the blocks of 5, rows of their own.
    for (kw, kh) in [(7, 7), (6, 3), (1, 6)] {
        let gray16_7 = FastSpec::register(kw, kh, 1, Border::Clamp, false, 2).unwrap();
        assert_eq!(
            (gray16_7.min_blocks, gray16_7.py),
            (REG_MIN_BLOCKS_GRAY16_5, REG_ROWS_16BIT_7)
        );
    }
    // … and under 4 M samples at most 2 (`register_thread_shape`); 8-bit full 7×7 keeps its
    // rows.
    let launch = |samples| register_thread_shape(samples, 2, false, (8, REG_ROWS_16BIT_7));
    assert_eq!(launch(REG16_TWO_ROWS_BELOW), (8, REG_ROWS_16BIT_7));
    assert_eq!(launch(REG16_TWO_ROWS_BELOW - 1), (8, 2));
    for ch in [1, 3, 4] {
        let gray7 = FastSpec::register(7, 7, ch, Border::Clamp, false, 1).unwrap();
        assert_eq!(gray7.py, REG_ROWS, "8-bit 7x7, {ch} channels");
    }
    // 8-bit full kernels up to 5 take 8 blocks, wider ones and separable plans 4.
    let gray = FastSpec::register(3, 3, 1, Border::Clamp, false, 1).unwrap();
    assert_eq!(gray.min_blocks, REG_MIN_BLOCKS_8BIT_FULL);
    for (kw, kh, ch, separable) in [(5, 4, 3, false), (5, 5, 4, false), (1, 5, 2, false)] {
        let spec = FastSpec::register(kw, kh, ch, Border::Clamp, separable, 1).unwrap();
        assert_eq!(
            spec.min_blocks, REG_MIN_BLOCKS_8BIT_FULL,
            "{kw}x{kh} ch {ch}"
        );
    }
    for (kw, kh, ch, separable) in [(7, 7, 1, false), (6, 3, 3, false), (5, 5, 1, true)] {
        let spec = FastSpec::register(kw, kh, ch, Border::Clamp, separable, 1).unwrap();
        assert_eq!(
            spec.min_blocks, REG_MIN_BLOCKS,
            "{kw}x{kh} ch {ch} {separable}"
        );
    }
    assert!(gray.defines().contains(&"-DREG=1".to_string()));
}

/// Whether any of these overrides of the rules (for sweeps) is set: a test of the rules as
/// measured then skips, and says so.
fn overridden(vars: &[&str]) -> bool {
    let set: Vec<&&str> = vars
        .iter()
        .filter(|v| std::env::var_os(v).is_some())
        .collect();
    if !set.is_empty() {
        eprintln!("skipped: {set:?} set");
    }
    !set.is_empty()
}

#[test]
fn register_blocks_are_narrow_where_measured_faster() {
    if overridden(&["CONVFLOW_FAST_REG_BX", "CONVFLOW_FAST_REG_PX"]) {
        return;
    }
    let narrow = (REG_BLOCK_WIDTH as u32, 128 / REG_BLOCK_WIDTH as u32);
    let rows = [1, 15, 2560, 3840, 7680, 11520];
    // 8-bit planes of 1–2 channels at every side; 3–4 channels of either depth from
    // REG_NARROW_MIN_SIDE on (a side: 3 × 4 counts), one channel of 16-bit samples from
    // REG16_NARROW_MIN_SIDE: narrow at every width, 2560 gray and 7680-sample RGB rows
    // included (32 × 4 under the fewest-idle rule).
    let side = REG_NARROW_MIN_SIDE;
    assert!(side > 3, "the 3×3 cases below take the fewest-idle rule");
    for (kw, kh, ch, sb) in [
        (3, 3, 1, 1),
        (5, 5, 1, 1),
        (3, 3, 2, 1),
        (side, side, 3, 1),
        (3, side, 3, 1),
        (side, 3, 4, 1),
        (5, 5, 4, 1),
        (side, side, 3, 2),
        (5, 5, 4, 2),
        (REG16_NARROW_MIN_SIDE, REG16_NARROW_MIN_SIDE, 1, 2),
        (7, 7, 1, 2),
    ] {
        let spec = FastSpec::register(kw, kh, ch, Border::Clamp, false, sb).unwrap();
        for n in rows {
            assert_eq!(
                spec.register_block(n),
                narrow,
                "{kw}x{kh} ch {ch} sb {sb} {n} a row"
            );
        }
    }
    // The others: the fewest idle threads at a row's end, the widest on a tie. 16 8-bit
    // samples a thread: RGB 3×3's 11520 is 720 threads (16 divides it, 32 does not), 7680 and
    // RGBA 3×3's 5120 are 480 and 320 (32 does). 8 16-bit samples a thread: rgb48 3×3's 7680
    // is 960 threads, one or two channels' 3840 is 480 (32 divides both), 1920 is 240 (16 and
    // 8 do), 1928 is 241 (7 idle at 8 wide, 15 at 16 and 32).
    let wide = |k: usize, ch: usize, sb: usize| {
        FastSpec::register(k, k, ch, Border::Clamp, false, sb).unwrap()
    };
    assert_eq!(wide(3, 3, 1).register_block(11520), (16, 8));
    assert_eq!(wide(3, 3, 1).register_block(7680), (32, 4));
    assert_eq!(wide(3, 4, 1).register_block(5120), (32, 4));
    assert_eq!(wide(3, 3, 2).register_block(7680), (32, 4));
    const {
        assert!(
            REG16_NARROW_MIN_SIDE > 5,
            "one 16-bit channel's 5×5 is wide below"
        )
    };
    for (k, ch) in [(3, 1), (5, 1), (3, 2), (5, 2)] {
        let spec = wide(k, ch, 2);
        assert_eq!(spec.register_block(3840), (32, 4), "{k}x{k} ch {ch}");
        assert_eq!(spec.register_block(1920), (16, 8), "{k}x{k} ch {ch}");
        assert_eq!(spec.register_block(1928), (8, 16), "{k}x{k} ch {ch}");
        // Every shape has 128 threads.
        for n in [1, 15, 17, 1000, 11520] {
            let (x, y) = spec.register_block(n);
            assert_eq!(x * y, 128);
        }
    }
}

/// Pixels of a 1080p and a 4K plane.
const HD: usize = 1920 * 1080;
const UHD: usize = 3840 * 2160;

#[test]
fn small_launches_give_each_thread_fewer_outputs() {
    use super::rules::{register_thread_shape, tiled_rows};
    // The rules as measured: the environment's overrides (for sweeps) would replace them.
    if overridden(&["CONVFLOW_FAST_PY", "CONVFLOW_FAST_REG_PX"]) {
        return;
    }
    let (p480, p720, p1080, p4k) = (853 * 480, 1280 * 720, 1920 * 1080, 3840 * 2160);
    // 8-bit register kernels: 16 samples × 2 rows on 4K, one row on 1080p gray and 720p RGB,
    // 8 samples on 720p gray; a YUV 4:2:0 frame's planes count together (1.5 × the luma).
    let shape8 = |samples| register_thread_shape(samples, 1, false, (16, 2));
    assert_eq!(shape8(p4k), (16, 2));
    assert_eq!(shape8(p1080), (16, 1));
    assert_eq!(shape8(3 * p720), (16, 1));
    assert_eq!(shape8(p720), (8, 1));
    assert_eq!(shape8(p720 * 3 / 2), (16, 1));
    assert_eq!(shape8(p1080 * 3 / 2), (16, 2));
    // 16-bit ones keep 8 samples; one row below 1 M samples, at most two below 4 M.
    let shape16 = |samples, py| register_thread_shape(samples, 2, false, (8, py));
    assert_eq!(shape16(p720, 2), (8, 1));
    assert_eq!(shape16(p720, 4), (8, 1));
    assert_eq!(shape16(p1080, 2), (8, 2));
    assert_eq!(shape16(p1080, 4), (8, 2));
    assert_eq!(shape16(3 * p1080, 4), (8, 4));
    assert_eq!(shape16(p4k, 2), (8, 2));
    assert_eq!(register_thread_shape(p720, 2, false, (16, 2)), (16, 1));
    // 8-bit full f32 kernels: 8 blocks from 1 M samples a launch (720p YUV 4:2:0's three planes
    // together), 4 below (720p gray); other blocks stay.
    if std::env::var_os("CONVFLOW_FAST_MINB").is_none() {
        use super::rules::register_min_blocks;
        let blocks = REG_MIN_BLOCKS_8BIT_FULL;
        assert_eq!(register_min_blocks(p720 * 3 / 2, 1, blocks), blocks);
        assert_eq!(register_min_blocks(p720, 1, blocks), REG_MIN_BLOCKS);
        assert_eq!(register_min_blocks(p4k, 1, REG_MIN_BLOCKS), REG_MIN_BLOCKS);
        assert_eq!(
            register_min_blocks(p720, 2, REG_MIN_BLOCKS_WIDE16),
            REG_MIN_BLOCKS_WIDE16
        );
    }
    // fast_int on 16-bit samples: one row below 4 M samples (1080p gray16 and YUV 4:2:0
    // 10-bit), not on 1080p rgb48 or 4K gray16.
    let int16 = |samples| register_thread_shape(samples, 2, true, (8, 2));
    assert_eq!(int16(p1080), (8, 1));
    assert_eq!(int16(p1080 * 3 / 2), (8, 1));
    assert_eq!(int16(3 * p1080), (8, 2));
    assert_eq!(int16(p4k), (8, 2));
    // Tiled full kernels: one row below 64 K threads, but 4 channels taller than 7.
    let full = |samples, shape, ch, sb, kh| tiled_rows(samples, shape, false, (ch, sb), kh);
    assert_eq!(full(p480, (4, 4), 1, 1, 7), 1);
    assert_eq!(full(p720, (4, 4), 1, 1, 15), 1);
    assert_eq!(full(p1080, (4, 4), 1, 1, 7), 4);
    assert_eq!(full(p720 * 3 / 2, (4, 4), 1, 1, 15), 4);
    assert_eq!(full(4 * p480, (16, 2), 4, 1, 7), 1);
    assert_eq!(full(4 * p480, (16, 2), 4, 1, 9), 2);
    assert_eq!(full(3 * p720, (12, 2), 3, 1, 7), 2);
    assert_eq!(full(p480, (4, 4), 1, 2, 15), 1);
    assert_eq!(full(4 * p480, (16, 2), 4, 2, 9), 2);
    // Tiled separable kernels, 8-bit: two rows, one up to 9 taps high below 32 K threads; RGBA
    // keeps 2. 16-bit: one row up to 15 taps high, RGBA64 too; two beyond.
    let sep = |samples, shape, ch, sb, kh| tiled_rows(samples, shape, true, (ch, sb), kh);
    assert_eq!(sep(3 * p480, (12, 4), 3, 1, 7), 1);
    assert_eq!(sep(3 * p480, (12, 4), 3, 1, 25), 2);
    assert_eq!(sep(3 * p720, (12, 4), 3, 1, 7), 2);
    assert_eq!(sep(3 * p1080, (12, 4), 3, 1, 7), 4);
    assert_eq!(sep(4 * p480, (16, 2), 4, 1, 25), 2);
    assert_eq!(sep(p4k, (4, 4), 1, 1, 25), 4);
    assert_eq!(sep(3 * p720, (12, 4), 3, 2, 9), 1);
    assert_eq!(sep(4 * p480, (16, 2), 4, 2, 7), 1);
    assert_eq!(sep(p480, (4, 4), 1, 2, 15), 1);
    assert_eq!(sep(p480, (4, 4), 1, 2, 17), 2);
    assert_eq!(sep(p480, (4, 4), 1, 2, 25), 2);
    assert_eq!(sep(p1080, (4, 4), 1, 2, 7), 4);
}

/// A plane's parameters as `run_planes_at` makes them (addresses 0: nothing is launched).
fn plane(width: i32, channels: i32, mask: i32) -> PlaneParams {
    PlaneParams {
        src: 0,
        dst: 0,
        width,
        height: 1,
        src_stride: width * channels,
        dst_stride: width * channels,
        channels,
        mask,
        kw: 3,
        kh: 3,
        ax: 1,
        ay: 1,
        abs_out: 0,
        offset: 0.0,
        maxval: 255,
        shift: 0,
    }
}

#[test]
fn planes_compile_in_their_mask_depth_and_output_rule() {
    let rgba = FastSpec::register(3, 3, 4, Border::Clamp, false, 1).unwrap();
    assert_eq!(rgba.mask, 0b1111, "every channel by default");
    let kept = rgba.clone().for_plane(&plane(8, 4, 0b0111));
    assert!(kept.defines().contains(&"-DCMASK=7".to_string()));
    assert_ne!(
        ModuleKey::Fast(kept),
        ModuleKey::Fast(rgba),
        "a module of its own"
    );
    // Bits beyond the plane's channels mean nothing: NV12's chroma has two. P010's samples
    // sit 6 bits up; --abs and an offset are compiled in too.
    let p010 = PlaneParams {
        shift: 6,
        abs_out: 1,
        offset: 128.0,
        maxval: 1023,
        ..plane(8, 2, 0xff)
    };
    let uv = FastSpec::register(3, 3, 2, Border::Zero, false, 2)
        .unwrap()
        .for_plane(&p010);
    assert_eq!(
        (uv.mask, uv.shift, uv.abs, uv.zero_offset),
        (0b11, 6, true, false)
    );
    let defines = uv.defines();
    for d in ["-DSHIFT=6", "-DABS=1", "-DZERO_OFFSET=0"] {
        assert!(defines.contains(&d.to_string()), "{d}");
    }
    // The tiled kernels read --abs and the offset (one module whatever they are).
    let tiled = FastSpec::new(5, 5, 2, Border::Zero).for_plane(&p010);
    assert_eq!(
        (tiled.shift, tiled.abs, tiled.zero_offset),
        (6, false, false)
    );
    let plain = FastSpec::new(5, 5, 2, Border::Zero).for_plane(&plane(8, 2, 3));
    assert_eq!(plain.zero_offset, tiled.zero_offset);
    // 16-bit samples from bit 0 are converted by the conversion unit (a module of its own);
    // P010's shifted ones are not, and 8-bit ones only in the f32 register kernel (below).
    if !overridden(&["CONVFLOW_FAST_XU"]) {
        assert!(!uv.conv_unit, "P010's samples sit 6 bits up");
        assert!(defines.contains(&"-DCONV_UNIT=0".to_string()));
        let deep = FastSpec::new(5, 5, 1, Border::Zero).with_sample_bytes(2);
        let gray16 = deep.clone().for_plane(&plane(8, 1, 1));
        assert!(gray16.conv_unit);
        assert!(gray16.defines().contains(&"-DCONV_UNIT=1".to_string()));
        assert_ne!(ModuleKey::Fast(gray16), ModuleKey::Fast(deep));
        let gray8 = FastSpec::new(5, 5, 1, Border::Zero).for_plane(&plane(8, 1, 1));
        assert!(
            !gray8.conv_unit,
            "8-bit samples keep byte_perm in the tiled kernels"
        );
        // 8-bit: the f32 register kernel's full plans of sides 5-7 on 2-4 channels only.
        // (Two channels take the register kernel up to 5 taps.)
        let reg8 = |side: usize, ch: usize, sep: bool| {
            let mask = (1 << ch) - 1;
            FastSpec::register(side, side, ch, Border::Clamp, sep, 1)
                .map(|s| s.for_plane(&plane(64, ch as i32, mask)))
        };
        let unit = |side, ch, sep| reg8(side, ch, sep).map(|s| s.conv_unit);
        for side in [5, 6, 7] {
            for ch in [3, 4] {
                let spec = reg8(side, ch, false).unwrap();
                assert!(spec.conv_unit, "{side} {ch}");
                assert!(spec.defines().contains(&"-DCONV_UNIT=1".to_string()));
            }
            assert_eq!(unit(side, 1, false), Some(false), "one channel at {side}");
        }
        assert_eq!(unit(5, 2, false), Some(true));
        assert_eq!(
            (unit(3, 3, false), unit(4, 4, false)),
            (Some(false), Some(false))
        );
        assert_eq!(
            unit(3, 3, true),
            Some(false),
            "the separable register kernel"
        );
        let int = FastSpec {
            int: Some((16, 0)),
            ..FastSpec::register(5, 5, 3, Border::Clamp, false, 1).unwrap()
        };
        assert!(!int.for_plane(&plane(64, 3, 0b111)).conv_unit, "fast_int");
    }
    // Every thread shape of four channels owns whole pixels (fast.cu's condition for a
    // partial mask).
    for sb in [1, 2] {
        for sep in [false, true] {
            let reg = FastSpec::register(5, 5, 4, Border::Clamp, sep, sb).unwrap();
            assert_eq!(reg.px % 4, 0);
        }
        assert_eq!(FastSpec::separable(25, 25, 4, Border::Clamp).px % 4, 0);
        assert_eq!(FastSpec::new(25, 25, 4, Border::Clamp).px % 4, 0);
    }
}

#[test]
fn planes_of_one_launch_number_their_blocks_in_turn() {
    let p = |w| plane(w, 1, 1);
    // A 4:2:0 frame: Y 8 × 4 blocks, U and V 4 × 2 each, in one row of blocks.
    let (set, grid) = FastPlanes::new(&[(p(64), (8, 4)), (p(32), (4, 2)), (p(31), (4, 2))]);
    assert_eq!(grid, (32 + 8 + 8, 1));
    assert_eq!((set.first, set.gx), ([0, 32, 40], [8, 4, 4]));
    assert_eq!(set.p[2].width, 31);
    // The same launch on another frame's planes: new addresses, the same blocks.
    let moved = |w, a| PlaneParams {
        src: a,
        dst: a + 1,
        ..p(w)
    };
    let mut again = set;
    again.set_params([moved(64, 100), moved(32, 200), moved(31, 300)].into_iter());
    assert_eq!((again.first, again.gx), (set.first, set.gx));
    assert_eq!(
        again.p.map(|p| (p.src, p.dst, p.width)),
        [(100, 101, 64), (200, 201, 32), (300, 301, 31)]
    );
    // Two planes: the entry past them repeats the first.
    again.set_params([moved(64, 7), moved(32, 8)].into_iter());
    assert_eq!(again.p.map(|p| p.src), [7, 8, 7]);
    // fast.cu's plane_block, replayed: every block lands in one plane, at one place.
    let mut seen = std::collections::HashSet::new();
    for b in 0..grid.0 as i32 {
        let k = (0..3).rev().find(|&k| b >= set.first[k]).unwrap();
        let local = b - set.first[k];
        let (bx, by) = (local % set.gx[k], local / set.gx[k]);
        let gy = [4, 2, 2][k];
        assert!(bx < set.gx[k] && by < gy);
        assert!(seen.insert((k, bx, by)));
    }
}

#[test]
fn launch_bounds_are_eased_to_the_most_blocks_within_the_spill_tolerance() {
    use super::rules::SPILL_TOLERATED_BYTES as T;
    // Bytes of local memory a thread by resident blocks asked, shaped as ptxas 13.0's spill
    // stores for RGBA64 `gaussian:10` separable (272 / 208 / 124 / 56 / 28 / 0 at 8 … 3).
    let rgba64_10 = |m: usize| [0, 0, 0, 0, 28, 56, 124, 208, 272][m];
    let ease = |asked, threads, local: &dyn Fn(usize) -> usize| {
        let mut asks = Vec::new();
        let m = kernel::eased_blocks(asked, threads, |m| {
            asks.push(m);
            Ok(local(m))
        })
        .unwrap();
        (m, asks)
    };
    // The loosest bound first (2 blocks of 128 threads leave 255 registers), then down from
    // one block fewer than asked.
    assert_eq!(ease(8, 128, &rgba64_10), (5, vec![8, 2, 7, 6, 5]));
    // Within the tolerance: kept, nothing else compiled.
    assert_eq!(ease(5, 128, &rgba64_10), (5, vec![5]));
    assert_eq!(ease(4, 128, &|_| T), (4, vec![4]));
    // Local memory at the loosest bound too (arrays, not spills): the bound stays, two
    // modules compiled, not one per bound.
    assert_eq!(ease(8, 128, &|_| T + 1), (8, vec![8, 2]));
    // Only the loosest fits: taken.
    assert_eq!(
        ease(4, 128, &|m| if m <= 2 { 0 } else { 500 }),
        (2, vec![4, 2, 3])
    );
    // 256 threads: one block is the loosest; a bound at the loosest is never probed.
    assert_eq!(
        ease(3, 256, &|m| if m == 1 { 0 } else { 500 }),
        (1, vec![3, 1, 2])
    );
    assert_eq!(ease(2, 128, &|_| 500), (2, vec![]));
    assert_eq!(
        (
            kernel::loosest_blocks(128),
            kernel::loosest_blocks(256),
            kernel::loosest_blocks(512)
        ),
        (2, 1, 1)
    );
}

#[test]
fn devices_of_fast_memory_are_told_by_their_attributes() {
    use super::rules::{memory_bytes_per_sm_cycle, FAST_MEMORY_MIN_BYTES_PER_SM_CYCLE as FAST};
    // H100 SXM (HBM3 2619 MHz, 5120 bits), the H200 as its driver gives it (HBM3e 3201 MHz,
    // 6016 bits), A100 40 GB / 80 GB (1215 / 1593 MHz, 5120 bits, 108 multiprocessors at 1410
    // MHz).
    let h100 = memory_bytes_per_sm_cycle(2_619_000, 5120, 132, 1_980_000).unwrap();
    let h200 = memory_bytes_per_sm_cycle(3_201_000, 6016, 132, 1_980_000).unwrap();
    let a100 = memory_bytes_per_sm_cycle(1_215_000, 5120, 108, 1_410_000).unwrap();
    let a100_80 = memory_bytes_per_sm_cycle(1_593_000, 5120, 108, 1_410_000).unwrap();
    assert!((h100 - 12.83).abs() < 0.01, "{h100}");
    assert!((h200 - 18.42).abs() < 0.01, "{h200}");
    assert!((a100_80 - 13.39).abs() < 0.01, "{a100_80}");
    assert!(
        h100 < FAST && a100 < FAST && a100_80 < FAST && h200 >= FAST,
        "{a100}"
    );
    assert_eq!(
        memory_bytes_per_sm_cycle(0, 6144, 132, 1_980_000),
        None,
        "no memory clock"
    );
    assert_eq!(
        memory_bytes_per_sm_cycle(3_201_000, 6144, 0, 1_980_000),
        None
    );
}
