//! Unit tests of the full tiled kernel's rules: which full plans take it on small planes, its
//! rows per thread (by the unrolled code's size, by kernel side, on 16-bit launches of the
//! middle range, and as the launch composes them) and the blocks it tries first.

use super::*;

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
    let rows_sb = |sb, ch, side, pixels: usize| {
        full_rows_by_side((ch, sb), side, pixels, (pixels * ch, 4 * ch))
    };
    let rows = |ch, side, pixels: usize| rows_sb(1, ch, side, pixels);
    assert_eq!(rows(3, 15, p4k), Some(4));
    assert_eq!(rows(4, 13, p1080), Some(2));
    assert_eq!(rows(2, 25, p4k), Some(2));
    assert_eq!(rows(3, 25, p1080), Some(2));
    // From 4 M pixels RGB 25 is back at the rule's one row (`FULL_ROWS_LARGE`).
    assert_eq!(
        rows(3, 25, p4k),
        Some(FastSpec::new(25, 25, 3, Border::Clamp).py)
    );
    assert_eq!(rows(3, 25, p4k), Some(1));
    assert_eq!(rows(3, 25, 3_999_999), Some(2));
    assert_eq!(rows(3, 23, p1080), None);
    assert_eq!(rows(1, 15, p1080), None);
    // Even sides as their odd neighbours (RGBA 12 / 14 two rows, 16 four; NV12's chroma 18–22
    // two); RGB's even sides keep the rule.
    assert_eq!(rows(4, 12, p1080), Some(2));
    assert_eq!(rows(4, 14, p4k), Some(2));
    assert_eq!(rows(4, 16, p4k), Some(4));
    assert_eq!(rows(4, 22, p4k), Some(2));
    assert_eq!(rows(2, 20, p4k), Some(2));
    assert_eq!(rows(3, 14, p4k), None);
    // 16-bit samples: their own table (RGBA64 12–14 two rows, 16 four, 24 none); rgb48 none
    // but 15 on large planes (below); RGB 25's two rows are 8-bit only.
    assert_eq!(rows_sb(2, 4, 13, p4k), Some(2));
    assert_eq!(rows_sb(2, 4, 12, p1080), Some(2));
    assert_eq!(rows_sb(2, 4, 16, p4k), Some(4));
    assert_eq!(rows_sb(2, 4, 24, p4k), None);
    // Large planes (`FULL_ROWS_LARGE`), smaller ones keeping the tables: from 2 M pixels RGBA64
    // 15 and 17 four rows, 21 and 25 two, RGBA 21 and 25 two and 23 four; from 4 M RGBA and
    // RGBA64 19 and RGBA64 23 four.
    let p768 = 1366 * 768;
    let from_2m = [
        (2, 15, 4),
        (2, 17, 4),
        (2, 21, 2),
        (2, 25, 2),
        (1, 21, 2),
        (1, 23, 4),
        (1, 25, 2),
    ];
    for (sb, side, large) in from_2m {
        assert_eq!(rows_sb(sb, 4, side, 2_000_000), Some(large), "{sb} {side}");
        assert_eq!(rows_sb(sb, 4, side, p4k), Some(large), "{sb} {side}");
        assert_eq!(rows_sb(sb, 4, side, p768), None, "{sb} {side}");
    }
    assert_eq!(rows_sb(2, 4, 19, p1080), Some(2));
    assert_eq!(rows_sb(2, 4, 19, 2560 * 1440), Some(2));
    assert_eq!(rows_sb(2, 4, 19, p4k), Some(4));
    assert_eq!(rows_sb(1, 4, 19, p4k), Some(4));
    assert_eq!(rows_sb(1, 4, 19, p1080), Some(2));
    assert_eq!(rows_sb(2, 4, 23, p4k), Some(4));
    assert_eq!(rows_sb(2, 4, 23, 4_000_000 - 1), Some(2));
    assert_eq!(rows_sb(1, 3, 19, p4k), None);
    assert_eq!(rows_sb(2, 3, 21, p4k), None);
    // P010's chroma at 17–21 two rows from 2 M chroma pixels (a 4K frame), rgb48 15 four from
    // 4 M; NV12's chroma keeps its own table.
    // (A 1440p frame's chroma plane, 1280 × 720, has 115 K threads at two rows: only its size
    // keeps the rule's row.)
    let chroma4k = 1920 * 1080;
    for side in [17, 19, 21] {
        assert_eq!(rows_sb(2, 2, side, chroma4k), Some(2), "{side}");
        assert_eq!(rows_sb(2, 2, side, p720), None, "{side}");
    }
    assert_eq!(rows_sb(2, 2, 23, chroma4k), None);
    assert_eq!(rows_sb(2, 3, 15, p4k), Some(4));
    assert_eq!(rows_sb(2, 3, 15, p1080), None);
    // On the lines themselves: 2 M and 4 M pixels take the rows, one pixel fewer not.
    assert_eq!(rows_sb(2, 4, 15, 1_999_999), None);
    assert_eq!(rows_sb(1, 4, 21, 1_999_999), None);
    assert_eq!(rows_sb(2, 3, 15, 4_000_000), Some(4));
    assert_eq!(rows_sb(2, 3, 15, 3_999_999), None);
    assert_eq!(rows_sb(1, 4, 19, 4_000_000), Some(4));
    assert_eq!(rows_sb(1, 4, 19, 3_999_999), Some(2));
    assert_eq!(rows_sb(1, 2, 17, chroma4k), Some(2));
    assert_eq!(rows_sb(2, 3, 25, p1080), None);
    assert_eq!(rows_sb(2, 2, 25, p4k), None);
    // Not on launches those rows would leave with fewer than 64 K threads.
    assert_eq!(rows(4, 15, p720), None);
    assert_eq!(rows(4, 13, p720), Some(2));
}

/// 16-bit full tiled launches of the middle range: one channel takes 1 row below 112 K threads
/// at 4 rows and 2 below 384 K; rgb48 at 7–12 taps one row below 320 K threads at 2 rows;
/// nothing else, nor where the rule's rows are other than 4 (one channel) or 2 (rgb48).
#[test]
fn full_rows_of_16_bit_mid_launches() {
    use super::rules::full_rows_mid16;
    // (ch, sb), side, samples, (px, py)
    let gray16 = |w: usize, h: usize, side| full_rows_mid16((1, 2), side, w * h, (4, 4));
    assert_eq!(gray16(1280, 720, 9), Some(1));
    assert_eq!(gray16(1366, 768, 11), Some(1));
    assert_eq!(gray16(1920, 1080, 9), Some(2));
    assert_eq!(gray16(2560, 1440, 15), Some(2));
    assert_eq!(gray16(3840, 2160, 9), None);
    // A YUV 4:2:0 10-bit frame's three planes in one launch: 1.5 samples a pixel.
    let yuv = |w: usize, h: usize| full_rows_mid16((1, 2), 11, w * h * 3 / 2, (4, 4));
    assert_eq!(yuv(1366, 768), Some(1));
    assert_eq!(yuv(1920, 1080), Some(2));
    assert_eq!(yuv(2560, 1440), Some(2));
    assert_eq!(yuv(3840, 2160), None);
    // Other rows than the rule's four (the rule gives one channel 2 rows at 17–22 taps, 1
    // beyond), 8-bit samples, 2 channels.
    assert_eq!(full_rows_mid16((1, 2), 25, 1920 * 1080, (4, 1)), None);
    assert_eq!(full_rows_mid16((1, 1), 11, 1920 * 1080, (4, 4)), None);
    assert_eq!(full_rows_mid16((2, 2), 11, 960 * 540 * 2, (8, 4)), None);
    // rgb48: 7–12 taps below 320 K threads at two rows (1080p: 259 K; 1440p: 461 K).
    let rgb48 = |w: usize, h: usize, side| full_rows_mid16((3, 2), side, w * h * 3, (12, 2));
    assert_eq!(rgb48(1280, 720, 7), Some(1));
    assert_eq!(rgb48(1920, 1080, 9), Some(1));
    assert_eq!(rgb48(1920, 1080, 12), Some(1));
    assert_eq!(rgb48(1920, 1080, 13), None);
    assert_eq!(rgb48(1920, 1080, 6), None);
    assert_eq!(rgb48(2560, 1440, 9), None);
    assert_eq!(full_rows_mid16((3, 2), 9, 1920 * 1080 * 3, (12, 1)), None);
    assert_eq!(full_rows_mid16((4, 2), 9, 1920 * 1080 * 4, (16, 2)), None);
}

/// The full tiled kernel's rows as the launch takes them (`full_rows`): square kernels only,
/// the sides' tables before the middle range's rule, fed the rule's rows.
#[test]
fn full_rows_compose_the_sides_and_the_middle_range() {
    use super::rules::full_rows;
    let rows = |ch, sb, (kw, kh), (w, h): (usize, usize)| {
        let spec = FastSpec::new(kw, kh, ch, Border::Clamp);
        full_rows((ch, sb), (kw, kh), w * h, (w * h * ch, spec.px, spec.py))
    };
    // RGBA64 13 × 13 from the 16-bit table; 13 × 11 and 11 × 13 keep the rule.
    assert_eq!(rows(4, 2, (13, 13), (1920, 1080)), Some(2));
    assert_eq!(rows(4, 2, (13, 11), (1920, 1080)), None);
    // One channel of 16-bit samples: the middle range's rule on square kernels only.
    assert_eq!(rows(1, 2, (9, 9), (1920, 1080)), Some(2));
    assert_eq!(rows(1, 2, (9, 9), (1366, 768)), Some(1));
    assert_eq!(rows(1, 2, (15, 1), (1366, 768)), None);
    assert_eq!(rows(1, 2, (3, 25), (1920, 1080)), None);
    // 8-bit one channel: neither rule.
    assert_eq!(rows(1, 1, (11, 11), (1366, 768)), None);
    // rgb48: the rule's 2 rows at 9 become 1 up to 1080p; at 13 (2 rows) and 14 (1) nothing.
    assert_eq!(rows(3, 2, (9, 9), (1920, 1080)), Some(1));
    assert_eq!(rows(3, 2, (13, 13), (1280, 720)), None);
    assert_eq!(rows(3, 2, (14, 14), (1280, 720)), None);
    // 8-bit RGB 25 on planes under 4 M pixels, 2 rows; not for rgb48.
    assert_eq!(rows(3, 1, (25, 25), (1920, 1080)), Some(2));
    assert_eq!(rows(3, 2, (25, 25), (1920, 1080)), None);
}

/// The full tiled kernel's first blocks: rgb48 half-height blocks at 6–8 taps (wider or
/// narrower kernels, other channel counts and 8-bit RGB keep the blocks chosen by size), and
/// RGBA's narrow ones from 9.
#[test]
fn full_blocks_follow_the_measured_rules() {
    let full = |kw, kh, ch, sb| FastSpec::new(kw, kh, ch, Border::Clamp).with_sample_bytes(sb);
    for side in 6..=8 {
        let rgb48 = full(side, side, 3, 2);
        assert_eq!(rgb48.first_block(UHD), Some(FULL_BLOCK_RGB48), "{side}");
        assert!(rgb48.tile(FULL_BLOCK_RGB48).1 <= super::rules::FULL_TILE_PREFERRED);
        assert_eq!(full(side, side, 3, 1).first_block(UHD), None, "{side}");
        assert_eq!(full(side, side, 1, 2).first_block(UHD), None, "{side}");
    }
    // The larger side decides.
    assert_eq!(full(7, 3, 3, 2).first_block(UHD), Some(FULL_BLOCK_RGB48));
    assert_eq!(full(3, 9, 3, 2).first_block(UHD), None);
    for side in [5, 9, 11, 25] {
        assert_eq!(full(side, side, 3, 2).first_block(UHD), None, "{side}");
    }
    assert_eq!(full(9, 9, 4, 2).first_block(UHD), Some(FULL_BLOCK_RGBA));
    // One 16-bit channel 8–9 a side: 16 × 8 where the frame's largest plane has 4 M pixels
    // (the launch's rule, by the frame's planes, not `first_block`'s).
    use super::rules::{full_one16_block, FULL_ONE16_BLOCK_MIN_PIXELS as MIN};
    for side in [8, 9] {
        assert!(full_one16_block(1, 2, side, MIN), "{side}");
        assert!(!full_one16_block(1, 2, side, MIN - 1), "{side}");
        assert!(!full_one16_block(1, 1, side, UHD) && !full_one16_block(3, 2, side, UHD));
        assert_eq!(full(side, side, 1, 2).first_block(UHD), None, "{side}");
    }
    for side in [7, 10] {
        assert!(!full_one16_block(1, 2, side, UHD), "{side}");
    }
    const { assert!(MIN > 1920 * 1080 && MIN <= 3840 * 2160) };
    assert_eq!(full(7, 7, 4, 2).first_block(UHD), None);
}
