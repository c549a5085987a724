//! Unit tests of `fast`'s specializations and measured rules (thread shapes, blocks, tiles,
//! integer weight packing, plane masks, launches over several planes).

use super::rules::TALL_TILE_PREFERRED;
use super::*;
use crate::backend::cuda::abi::FastPlanes;
use crate::backend::cuda::registry::ModuleKey;

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
        FastSpec::integer(&form(k, n), ch, Border::Clamp, sep, samples).is_some()
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
    let spec = |k, ch| FastSpec::integer(&form(k, 1), ch, Border::Clamp, false, small);
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
    let two = FastSpec::integer(&outer, 1, Border::Clamp, true, small).unwrap();
    assert!(two.separable && two.int == Some((4096, 0)) && two.py == INT_SEP_ROWS);
    assert!(FastSpec::integer(&outer, 1, Border::Clamp, false, small).is_none());
    assert!(FastSpec::integer(&outer, 2, Border::Clamp, true, small).is_none());
    // 9 keeps the f32 separable kernel, 5 the full integer one.
    assert!(!take(9, 1, 1, true, small));
    let s5 = FastSpec::integer(&form(5, 1), 1, Border::Clamp, true, small).unwrap();
    assert!(!s5.separable);
    let spec = FastSpec::integer(&form(5, 1), 1, Border::Zero, false, large).unwrap();
    assert!(spec.reg && spec.int == Some((25, 0)) && spec.min_blocks == INT_MIN_BLOCKS_SMALL);
}

/// fast_int's accumulation replayed on the host (the same OFF, word index and packed
/// weights, dp4a as four byte products) against the direct sum, for every kernel width up
/// to 9, 1–4 channels and all 16 outputs of a thread.
#[test]
fn packed_weights_give_every_tap_once() {
    let mut seed = 7u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed >> 8
    };
    for ch in 1..=4 {
        for kw in 1..=9 {
            let form = IntegerForm {
                width: kw,
                height: 1,
                weights: (0..kw).map(|_| (rnd() % 255) as i32 - 127).collect(),
                divisor: 1,
                offset: 0,
            };
            let packed = pack_int_weights(&form, ch);
            let ax = kw / 2;
            let hwl = (ax * ch).div_ceil(4);
            let off = hwl * 4 - ax * ch;
            let span = (kw - 1) * ch + 1;
            let win = (3 + span).div_ceil(4);
            assert_eq!(packed.len(), 4 * win);
            let bytes: Vec<u8> = (0..4 * (hwl + 4 + 10)).map(|_| rnd() as u8).collect();
            let word = |k: usize| u32::from_le_bytes(bytes[4 * k..][..4].try_into().unwrap());
            for i in 0..16 {
                let (b, q) = ((i + off) % 4, (i + off) / 4);
                let mut acc = 0i32;
                for t in 0..(b + span).div_ceil(4) {
                    let (a, w) = (word(q + t), packed[b * win + t]);
                    for l in 0..4 {
                        acc += (a >> (8 * l) & 255) as i32 * (w >> (8 * l)) as u8 as i8 as i32;
                    }
                }
                let direct: i32 = (0..kw)
                    .map(|kx| form.weights[kx] * bytes[off + i + kx * ch] as i32)
                    .sum();
                assert_eq!(acc, direct, "ch {ch} kw {kw} output {i}");
            }
        }
    }
}

#[test]
fn register_kernel_takes_small_kernels_only() {
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
    // gray16 at 7: the blocks of 5, the rows of 3.
    let gray16_7 = FastSpec::register(7, 7, 1, Border::Clamp, false, 2).unwrap();
    assert_eq!(
        (gray16_7.min_blocks, gray16_7.py),
        (REG_MIN_BLOCKS_GRAY16_5, REG_ROWS)
    );
    let gray = FastSpec::register(3, 3, 1, Border::Clamp, false, 1).unwrap();
    assert_eq!(gray.min_blocks, REG_MIN_BLOCKS);
    assert!(gray.defines().contains(&"-DREG=1".to_string()));
}

#[test]
fn register_blocks_leave_the_fewest_idle_threads() {
    let spec = FastSpec::register(3, 3, 1, Border::Clamp, false, 1).unwrap();
    // 3840 gray: 240 threads per row, 16 divides it; 1920: 120, 8 does.
    assert_eq!(spec.register_block(3840), (16, 8));
    assert_eq!(spec.register_block(1920), (8, 16));
    assert_eq!(spec.register_block(4096), (32, 4));
    // Every shape has 128 threads.
    for n in [1, 15, 17, 1000, 11520] {
        let (x, y) = spec.register_block(n);
        assert_eq!(x * y, 128);
    }
}

/// Pixels of a 1080p and a 4K plane.
const HD: usize = 1920 * 1080;
const UHD: usize = 3840 * 2160;

#[test]
fn separable_blocks_follow_the_measured_rules() {
    let block = |k, ch, sb, row_global| {
        FastSpec {
            row_global,
            ..FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb)
        }
        .first_block(UHD)
    };
    for (ch, sb) in [(1, 1), (2, 1), (3, 1), (1, 2)] {
        assert_eq!(block(7, ch, sb, true), Some(SEP_BLOCK));
        assert_eq!(block(25, ch, sb, true), Some(SEP_BLOCK));
    }
    assert_eq!(block(9, 4, 1, true), Some(SEP_BLOCK));
    assert_eq!(block(15, 4, 2, true), Some(SEP_BLOCK_TALL_RGBA));
    // Large planes' 8-bit RGBA taller than 9: 8 × 32; below 4 M pixels 4 × 32.
    assert_eq!(block(15, 4, 1, true), Some(SEP_BLOCK_RGBA_LARGE));
    let rgba = FastSpec::separable(25, 25, 4, Border::Clamp);
    assert_eq!(rgba.clone().first_block(HD), Some(SEP_BLOCK_TALL_RGBA));
    let large = rgba.for_pixels(UHD);
    assert!(large.tile(SEP_BLOCK_RGBA_LARGE).1 <= TALL_TILE_PREFERRED);
    // rgb48 on large planes: 16 × 16 from 6 to 9 taps high (16 × 8 at 4–5 from the launch's
    // rule, `sep_short16`); smaller planes take `sep_small_shape`'s blocks
    // (separable_shapes_of_small_planes_follow_the_measured_rules).
    assert_eq!(block(5, 3, 2, true), Some(SEP_BLOCK));
    assert_eq!(block(7, 3, 2, true), Some(SEP_BLOCK_WIDE_RGB48));
    assert_eq!(block(9, 3, 2, true), Some(SEP_BLOCK_WIDE_RGB48));
    assert_eq!(block(25, 3, 2, true), Some(SEP_BLOCK));
    let rgb48 = FastSpec::separable(25, 25, 3, Border::Clamp).with_sample_bytes(2);
    assert_eq!(rgb48.first_block(HD), Some(SEP_BLOCK));
    // Its tile exceeds the 48 KB of full kernels' preferred size, not the tall one.
    let rgb48 = FastSpec::separable(9, 9, 3, Border::Clamp).with_sample_bytes(2);
    let bytes = rgb48.tile(SEP_BLOCK_WIDE_RGB48).1;
    assert!(bytes > 48 * 1024 && bytes <= TALL_TILE_PREFERRED);
    // With an input tile: the taller blocks of 8-bit RGB only.
    assert_eq!(block(25, 3, 1, false), Some((16, 16)));
    assert_eq!(block(15, 3, 1, false), Some((8, 16)));
    assert_eq!(block(9, 3, 1, false), None);
    assert_eq!(block(25, 1, 1, false), None);
    assert_eq!(block(25, 3, 2, false), None);
    assert_eq!(
        FastSpec::new(25, 25, 3, Border::Clamp).first_block(HD),
        None
    );
    assert_eq!(FastSpec::new(7, 7, 4, Border::Clamp).first_block(HD), None);
    for k in [9, 25] {
        let rgba = FastSpec::new(k, k, 4, Border::Clamp);
        assert_eq!(rgba.first_block(HD), Some(FULL_BLOCK_RGBA));
        assert!(rgba.tile(FULL_BLOCK_RGBA).1 <= TALL_TILE_PREFERRED);
    }
    // The 16 × 16 tile of RGB 25 fits the preferred size.
    let spec = FastSpec {
        row_global: false,
        py: 2,
        ..FastSpec::separable(25, 25, 3, Border::Clamp)
    };
    assert!(spec.tile((16, 16)).1 <= TALL_TILE_PREFERRED);
    // Rows from global memory: shared memory holds only the horizontal sums.
    let g = FastSpec::separable(25, 25, 4, Border::Clamp);
    assert!(g.row_global);
    assert_eq!(g.tile((4, 32)), (0, (32 * 2 + 24) * (64 + 4) * 4));
}

#[test]
fn separable_launch_bounds_follow_the_measured_rules() {
    let bounds = |k, ch, sb| {
        FastSpec::separable(k, k, ch, Border::Clamp)
            .with_sample_bytes(sb)
            .sep_bounds(SEP_BLOCK, UHD)
    };
    assert_eq!(bounds(25, 1, 1), Some((128, 6)));
    assert_eq!(bounds(7, 3, 1), Some((128, 6)));
    assert_eq!(bounds(25, 3, 2), Some((128, 3)));
    assert_eq!(bounds(9, 4, 1), Some((128, 4)));
    assert_eq!(bounds(31, 4, 2), Some((128, 3)));
    // Scaled to other blocks' threads; none for the input-tile kernel.
    let spec = FastSpec::separable(9, 9, 1, Border::Clamp);
    assert_eq!(spec.sep_bounds((16, 16), UHD), Some((256, 3)));
    let tile = FastSpec {
        row_global: false,
        ..spec
    };
    assert_eq!(tile.sep_bounds(SEP_BLOCK, UHD), None);
}

#[test]
fn separable_row_items_follow_the_measured_rules_and_the_block() {
    let items = |k, ch, sb, block| {
        let spec = FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb);
        let px = spec.px;
        spec.for_block(block, UHD).row_px / px
    };
    // Two threads' outputs, four for wide 8-bit one- and three-channel kernels, four for
    // narrow 8-bit RGBA, one for RGBA64.
    assert_eq!(items(7, 1, 1, SEP_BLOCK), 2);
    assert_eq!(items(15, 1, 1, SEP_BLOCK), 4);
    assert_eq!(items(15, 2, 1, SEP_BLOCK), 2);
    assert_eq!(items(25, 2, 1, SEP_BLOCK), 4);
    assert_eq!(items(25, 3, 1, SEP_BLOCK), 4);
    assert_eq!(items(9, 4, 1, SEP_BLOCK), 4);
    assert_eq!(items(25, 4, 1, SEP_BLOCK_TALL_RGBA), 2);
    assert_eq!(items(25, 1, 2, SEP_BLOCK), 2);
    assert_eq!(items(25, 4, 2, SEP_BLOCK), 1);
    // Never more threads' outputs than a whole number of them fills the block's row.
    assert_eq!(items(25, 1, 1, (2, 64)), 2);
    assert_eq!(items(25, 1, 1, (1, 128)), 1);
    // Only the separable kernel with its row pass from global memory has row-pass items.
    let tile = FastSpec {
        row_global: false,
        ..FastSpec::separable(25, 25, 1, Border::Clamp)
    };
    assert_eq!(tile.clone().for_block(SEP_BLOCK, HD).row_px, tile.px);
    let full = FastSpec::new(25, 25, 1, Border::Clamp);
    assert_eq!(full.clone().for_block(SEP_BLOCK, HD).row_px, full.px);
    // It is compiled in.
    let spec = FastSpec::separable(25, 25, 1, Border::Clamp).for_block(SEP_BLOCK, HD);
    assert!(spec.defines().contains(&"-DPXH=16".to_string()));
}

#[test]
fn large_rgba_planes_take_more_separable_rows_and_blocks() {
    let spec = |k, ch, sb, pixels| {
        FastSpec::separable(k, k, ch, Border::Clamp)
            .with_sample_bytes(sb)
            .for_pixels(pixels)
    };
    let (small, large) = (SEP_SMALL_PLANE - 1, SEP_SMALL_PLANE);
    // Below SEP_SMALL_PLANE, `sep_small_shape`'s rows and blocks.
    assert_eq!(spec(25, 4, 1, small).py, 2);
    assert_eq!(spec(25, 4, 1, large).py, SEP_ROWS_RGBA_LARGE);
    assert_eq!(spec(11, 4, 1, large).py, SEP_ROWS_RGBA_LARGE);
    // 9 and below, 16-bit RGBA and other channel counts keep their rows.
    assert_eq!(spec(9, 4, 1, large).py, SEP_ROWS_RGBA);
    assert_eq!(spec(25, 4, 2, large).py, SEP_ROWS_RGBA);
    assert_eq!(spec(25, 3, 1, large).py, SEP_ROWS);
    // The height decides: a wide, short kernel keeps the rule before.
    let wide = FastSpec::separable(25, 3, 4, Border::Clamp).for_pixels(large);
    assert_eq!(wide.py, SEP_ROWS_RGBA);
    assert_eq!(wide.sep_bounds(SEP_BLOCK, large), Some((128, 2)));
    let bounds = |k, pixels| spec(k, 4, 1, pixels).sep_bounds(SEP_BLOCK_TALL_RGBA, pixels);
    assert_eq!(bounds(25, small), Some((128, 5)));
    assert_eq!(bounds(25, large), Some((128, 3)));
    assert_eq!(bounds(15, small), Some((128, 5)));
    assert_eq!(bounds(15, large), Some((128, 3)));
    assert_eq!(bounds(9, large), Some((128, 4)));
}

#[test]
fn small_planes_take_the_tiled_kernel_at_4_to_7() {
    let (small, p720, hd, uhd) = (853 * 480, 1280 * 720, 1920 * 1080, 3840 * 2160);
    // One plane a launch.
    let first = |side, ch, sb, pixels| full_tiled_first(side, ch, sb, pixels, pixels * ch);
    assert!(first(7, 3, 1, uhd) && !first(7, 3, 1, 4 * uhd));
    assert!(!first(7, 4, 1, uhd));
    for ch in [3, 4] {
        assert!(first(7, ch, 1, hd) && first(6, ch, 1, hd));
        assert!(first(5, ch, 1, small) && first(4, ch, 1, small));
        assert!(!first(5, ch, 1, p720), "the integer kernel from 720p");
    }
    for ch in [1, 2] {
        assert!(first(7, ch, 1, p720) && !first(7, ch, 1, hd));
        assert!(!first(5, ch, 1, small), "1–2 channels: never at 5");
    }
    for (side, ch, sb) in [(3, 3, 1), (9, 3, 1), (9, 1, 2), (7, 4, 2), (3, 3, 2)] {
        assert!(
            !first(side, ch, sb, small),
            "side {side}, {ch} channels, {sb}-byte samples"
        );
    }
    // 16-bit samples of 3–4 channels at sides 4–5 take it on the same small planes, in place
    // of the register kernel; one channel never does.
    for (side, ch) in [(5, 3), (4, 4)] {
        assert!(first(side, ch, 2, small));
        assert!(!first(side, ch, 2, p720));
    }
    assert!(!first(5, 1, 2, small));
    // One channel of 16-bit samples at 6–7: the tiled kernel on launches under
    // REG16_FULL_MIN_SAMPLES samples, counted over the launch's planes (720p YUV 4:2:0 10-bit's
    // three planes take the register kernel, 720p gray16 does not).
    for side in [6, 7] {
        assert!(first(side, 1, 2, p720) && !first(side, 1, 2, hd));
        assert!(!full_tiled_first(side, 1, 2, p720, p720 * 3 / 2));
    }
}

#[test]
fn separable_shapes_of_small_planes_follow_the_measured_rules() {
    use super::rules::{sep_small_shape, SepShape, SEP_SMALLER_PLANE};
    let (p480, p720, hd) = (853 * 480, 1280 * 720, 1920 * 1080);
    let shape = |block, rows, row_threads| SepShape {
        block,
        rows,
        min_blocks: 5,
        row_threads,
    };
    assert!(p720 < SEP_SMALLER_PLANE && hd > SEP_SMALLER_PLANE);
    let (tall, one, two) = (SEP_BLOCK_TALL_RGBA, 1, 2);
    // (channels, bytes per sample, taps high, pixels) and the shape expected.
    let cases = [
        // 8-bit RGBA taller than 9: 4 × 32, 2 rows, items of 4; up to 9 taps its rules.
        ((4, 1, 25, hd), Some(shape(tall, two, 4))),
        ((4, 1, 9, hd), None),
        // rgb48: 8 × 16, one row (two taller than 9 from SEP_SMALLER_PLANE), 4 × 32 taller
        // than 15 below it.
        ((3, 2, 7, hd), Some(shape(SEP_BLOCK, one, 2))),
        ((3, 2, 15, hd), Some(shape(SEP_BLOCK, two, 2))),
        ((3, 2, 15, p720), Some(shape(SEP_BLOCK, one, 2))),
        ((3, 2, 25, p720), Some(shape(tall, one, 2))),
        // RGBA64: one row up to 15 taps below SEP_SMALLER_PLANE, none above it; taller than
        // 15, 4 × 32 with one row below SEP_RGBA64_ONE_ROW_BELOW, two from it.
        ((4, 2, 15, p720), Some(shape(SEP_BLOCK, one, 2))),
        ((4, 2, 15, hd), None),
        ((4, 2, 25, p480), Some(shape(tall, one, 2))),
        ((4, 2, 25, p720), Some(shape(tall, two, 2))),
        // Other formats, short kernels and large planes: the rules before.
        ((1, 1, 25, p480), None),
        ((3, 1, 25, p480), None),
        ((4, 1, 5, p480), None),
        ((4, 1, 25, SEP_SMALL_PLANE), None),
    ];
    for ((ch, sb, kh, pixels), want) in cases {
        assert_eq!(
            sep_small_shape(ch, sb, kh, pixels),
            want,
            "{ch} channels, {sb}-byte samples, {kh} taps, {pixels} pixels"
        );
    }
    // The specialization takes them: rows, first block, bounds and row items.
    let spec = FastSpec::separable(25, 25, 4, Border::Clamp).with_sample_bytes(2);
    let small = spec.clone().for_pixels(p480);
    assert_eq!(small.py, 1);
    assert_eq!(small.first_block(p480), Some(SEP_BLOCK_TALL_RGBA));
    assert_eq!(small.sep_bounds(SEP_BLOCK_TALL_RGBA, p480), Some((128, 5)));
    let px = small.px;
    assert_eq!(small.for_block(SEP_BLOCK_TALL_RGBA, p480).row_px, 2 * px);
    // On 4K RGBA64 keeps one thread's outputs per item.
    let uhd = spec.for_pixels(3840 * 2160);
    assert_eq!(
        uhd.clone()
            .for_block(SEP_BLOCK_TALL_RGBA, 3840 * 2160)
            .row_px,
        uhd.px
    );
}

#[test]
fn small_launches_give_each_thread_fewer_outputs() {
    use super::rules::{register_thread_shape, tiled_rows};
    // The rules as measured: the environment's overrides (for sweeps) would replace them.
    if ["CONVFLOW_FAST_PY", "CONVFLOW_FAST_REG_PX"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
    {
        eprintln!("skipped: a CONVFLOW_FAST_PY / CONVFLOW_FAST_REG_PX override is set");
        return;
    }
    let (p480, p720, p1080, p4k) = (853 * 480, 1280 * 720, 1920 * 1080, 3840 * 2160);
    // 8-bit register kernels: 16 samples × 2 rows on 4K, one row on 1080p gray and 720p RGB,
    // 8 samples on 720p gray; a YUV 4:2:0 frame's planes count together (1.5 × the luma).
    let shape8 = |samples| register_thread_shape(samples, 1, (16, 2));
    assert_eq!(shape8(p4k), (16, 2));
    assert_eq!(shape8(p1080), (16, 1));
    assert_eq!(shape8(3 * p720), (16, 1));
    assert_eq!(shape8(p720), (8, 1));
    assert_eq!(shape8(p720 * 3 / 2), (16, 1));
    assert_eq!(shape8(p1080 * 3 / 2), (16, 2));
    // 16-bit ones keep 8 samples; one row below 1 M samples, at most two below 4 M.
    let shape16 = |samples, py| register_thread_shape(samples, 2, (8, py));
    assert_eq!(shape16(p720, 2), (8, 1));
    assert_eq!(shape16(p720, 4), (8, 1));
    assert_eq!(shape16(p1080, 2), (8, 2));
    assert_eq!(shape16(p1080, 4), (8, 2));
    assert_eq!(shape16(3 * p1080, 4), (8, 4));
    assert_eq!(shape16(p4k, 2), (8, 2));
    assert_eq!(register_thread_shape(p720, 2, (16, 2)), (16, 1));
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

#[test]
fn tiled_rows_per_thread_follow_the_unrolled_size() {
    assert_eq!(FastSpec::new(9, 9, 1, Border::Clamp).py, 4);
    assert_eq!(FastSpec::new(9, 9, 3, Border::Clamp).py, 2);
    assert_eq!(FastSpec::new(7, 7, 4, Border::Clamp).py, 2);
    assert_eq!(FastSpec::new(7, 7, 2, Border::Clamp).py, 4);
    assert_eq!(FastSpec::new(15, 15, 1, Border::Clamp).py, 4);
    assert_eq!(FastSpec::new(9, 9, 4, Border::Clamp).py, 2);
    assert_eq!(FastSpec::new(25, 25, 1, Border::Clamp).py, 1);
    // Sides measured to want other rows on 2–4 channels; RGB 25 on planes under 4 M pixels.
    use super::rules::full_rows_by_side;
    let (p720, p1080, p4k) = (1280 * 720, 1920 * 1080, 3840 * 2160);
    let rows = |ch, side, pixels: usize| full_rows_by_side(ch, side, pixels, (pixels * ch, 4 * ch));
    assert_eq!(rows(3, 15, p4k), Some(4));
    assert_eq!(rows(4, 13, p1080), Some(2));
    assert_eq!(rows(2, 25, p4k), Some(2));
    assert_eq!(rows(3, 25, p1080), Some(2));
    assert_eq!(rows(3, 25, p4k), None);
    assert_eq!(rows(3, 23, p1080), None);
    assert_eq!(rows(1, 15, p1080), None);
    // Not on launches those rows would leave with fewer than 64 K threads.
    assert_eq!(rows(4, 15, p720), None);
    assert_eq!(rows(4, 13, p720), Some(2));
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
fn staged_row_copies_fit_their_shared_rows() {
    // fast.cu's raw_rows copies, per row, the 16-byte units from the block's first window
    // word (bw samples wide, halo words either side) rounded down to 16 bytes; the shared row
    // must hold them at every alignment of that word, in an odd number of 16-byte units.
    for (ch, sb, k, block) in [
        (1, 1, 7, SEP_BLOCK),
        (1, 1, 25, SEP_BLOCK),
        (1, 2, 9, SEP_BLOCK),
        (3, 1, 15, SEP_BLOCK),
        (3, 2, 7, SEP_BLOCK_WIDE_RGB48),
        (4, 1, 25, SEP_BLOCK_RGBA_LARGE),
        (4, 2, 31, SEP_BLOCK_TALL_RGBA),
        (2, 1, 6, (32, 4)),
    ] {
        let spec = FastSpec {
            row_staged: true,
            sums_pad: true,
            ..FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb)
        };
        let (words, bytes) = spec.tile(block);
        assert_eq!(words % 8, 4, "odd 16-byte units: {ch} ch, {sb} B, k {k}");
        let (spw, ax) = (4 / sb, k / 2);
        let (hwl, hwr) = ((ax * ch).div_ceil(spw), ((k - 1 - ax) * ch).div_ceil(spw));
        let bw = block.0 as usize * spec.px;
        for shift_words in 0..16 / 4 {
            let needed = 4 * shift_words + (hwl + bw / spw + hwr) * 4;
            assert!(
                words * 4 >= needed.next_multiple_of(16),
                "{ch} ch, {sb} B, k {k}"
            );
        }
        let th = block.1 as usize * spec.py + k - 1;
        // The rows of horizontal sums hold the padded row, an odd number of float4s apart
        // (HS_PAD), one float4 more than without the padding at most.
        let hsw = spec.sums_row(bw);
        assert!(
            hsw >= bw && hsw.is_multiple_of(4) && !(hsw / 4).is_multiple_of(2),
            "{ch} ch, {sb} B, k {k}"
        );
        assert_eq!(bytes, th * hsw * 4 + th * words * 4);
        let plain = FastSpec {
            sums_pad: false,
            ..spec.clone()
        };
        assert!(plain.sums_row(bw) + 4 >= hsw && plain.sums_row(bw) <= hsw);
        assert!(spec.defines().contains(&"-DHS_PAD=1".to_string()));
        assert!(plain.defines().contains(&"-DHS_PAD=0".to_string()));
        let unstaged = FastSpec {
            row_staged: false,
            ..spec.clone()
        };
        assert_eq!(unstaged.tile(block).0, 0);
        assert!(spec.defines().contains(&"-DSEPA=1".to_string()));
        assert!(unstaged.defines().contains(&"-DSEPA=0".to_string()));
    }
}

#[test]
fn staged_rows_follow_the_measured_rules() {
    use super::rules::{sep_staged, SEP_STAGED_MIN_SAMPLES};
    let large = SEP_STAGED_MIN_SAMPLES;
    // 8-bit RGB to 9 taps high, on every launch.
    assert!(sep_staged(3, 1, 7, HD * 3, false));
    assert!(sep_staged(3, 1, 9, 1000, false));
    assert!(!sep_staged(3, 1, 11, UHD * 3, false));
    // One channel: 8-bit to 7, 16-bit to 9, on large launches only.
    assert!(sep_staged(1, 1, 7, large, false));
    assert!(!sep_staged(1, 1, 7, large - 1, false));
    assert!(!sep_staged(1, 1, 9, UHD, false));
    assert!(sep_staged(1, 2, 9, UHD, false));
    assert!(!sep_staged(1, 2, 9, HD, false));
    assert!(!sep_staged(1, 2, 15, UHD, false));
    // With the integer row pass, one 8-bit channel to 9 taps, on large launches only.
    assert!(sep_staged(1, 1, 9, large, true));
    assert!(!sep_staged(1, 1, 9, large - 1, true));
    assert!(!sep_staged(1, 1, 11, UHD, true));
    assert!(sep_staged(3, 1, 9, HD * 3, true) && !sep_staged(4, 1, 7, UHD * 4, true));
    // Never for 2 and 4 channels or 16-bit RGB.
    for (ch, sb) in [(2, 1), (4, 1), (3, 2), (4, 2), (2, 2)] {
        assert!(
            !sep_staged(ch, sb, 7, UHD * ch, false),
            "{ch} channels of {sb} bytes"
        );
    }
}

#[test]
fn integer_row_passes_follow_the_measured_rules() {
    use super::rules::{sep_int_rows, SEP_SMALL_PLANE};
    // One to three channels on every plane, four on small planes only.
    for ch in 1..=3 {
        assert!(
            sep_int_rows(ch, 1) && sep_int_rows(ch, usize::MAX),
            "{ch} channels"
        );
    }
    assert!(sep_int_rows(4, SEP_SMALL_PLANE - 1));
    assert!(!sep_int_rows(4, SEP_SMALL_PLANE));
    // The specialization compiles the pass in with its divisor; without it, the f32 pass.
    let spec = FastSpec::separable(7, 7, 1, Border::Clamp);
    assert!(spec.defines().contains(&"-DSEPI=0".to_string()));
    let int = FastSpec {
        row_int: Some(64),
        ..spec
    };
    let defines = int.defines();
    assert!(defines.contains(&"-DSEPI=1".to_string()));
    assert!(defines.contains(&"-DRDIV=64".to_string()));
}

#[test]
fn padded_sums_follow_the_measured_rules() {
    use super::rules::sums_padded;
    // One and two channels always; 8-bit RGB and RGBA from 11 taps; 16-bit RGB never.
    for (ch, sb) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
        assert!(
            sums_padded(ch, sb, 4) && sums_padded(ch, sb, 25),
            "{ch} ch, {sb} B"
        );
    }
    for ch in [3, 4] {
        assert!(
            !sums_padded(ch, 1, 9) && sums_padded(ch, 1, 11),
            "{ch} channels"
        );
        assert!(
            !sums_padded(ch, 2, 7) && !sums_padded(ch, 2, 25),
            "{ch} channels"
        );
    }
    // The padding makes an even number of float4s odd and leaves an odd one as it is.
    let spec = FastSpec {
        sums_pad: true,
        ..FastSpec::separable(7, 7, 1, Border::Clamp)
    };
    assert_eq!(
        (spec.sums_row(32), spec.sums_row(36), spec.sums_row(64)),
        (36, 36, 68)
    );
}

#[test]
fn short_and_tall_separable_rules_follow_the_measurements() {
    use super::rules::{
        sep_rows_tall, sep_short16, SEP_ROWS_TALL_MIN_SAMPLES, SEP_SMALL_PLANE,
        SEP_SMALL_SIDE_MAX_PLANE,
    };
    if std::env::var_os("CONVFLOW_FAST_SEP_TILED_MIN").is_some() {
        return; // the override decides
    }
    let (qhd, uhd8k) = (SEP_SMALL_PLANE - 1, 7680 * 4320);
    // 4–5 taps: the tiled kernel for 8-bit RGB everywhere, one or two 8-bit channels below
    // 8K-sized planes, 16-bit samples and small planes always; 8-bit RGBA keeps the integer
    // and register kernels on large planes; 3 taps never.
    let tiled = FastSpec::tiled_first;
    for side in [4, 5] {
        assert!(tiled(side, 3, 1, uhd8k));
        assert!(tiled(side, 1, 1, UHD) && tiled(side, 2, 1, UHD));
        assert!(!tiled(side, 1, 1, SEP_SMALL_SIDE_MAX_PLANE));
        assert!(!tiled(side, 4, 1, UHD));
        assert!(tiled(side, 4, 1, qhd) && tiled(side, 4, 2, uhd8k));
    }
    assert!(!tiled(3, 3, 1, HD) && tiled(6, 4, 1, uhd8k));
    // 16 × 8 blocks for one to three 16-bit channels 4–5 taps high on large planes.
    assert!(sep_short16(3, 2, 5, UHD) && sep_short16(1, 2, 4, UHD));
    assert!(!sep_short16(4, 2, 5, UHD) && !sep_short16(3, 1, 5, UHD));
    assert!(!sep_short16(3, 2, 6, UHD) && !sep_short16(3, 2, 5, qhd));
    assert!(!sep_short16(1, 2, 9, UHD), "a kernel 9 wide and 4 high");
    // One channel from 11 taps on large launches: 8 rows for 8-bit, 6 for 16-bit.
    let large = SEP_ROWS_TALL_MIN_SAMPLES;
    assert_eq!(sep_rows_tall(1, 1, 11, large), Some(SEP_ROWS_TALL));
    assert_eq!(sep_rows_tall(1, 2, 25, UHD), Some(SEP_ROWS_TALL_16));
    assert_eq!(sep_rows_tall(1, 1, 9, UHD), None);
    assert_eq!(sep_rows_tall(1, 1, 15, large - 1), None);
    assert_eq!(sep_rows_tall(2, 1, 15, UHD), None);
}
