//! Unit tests of the separable tiled kernel's launch shapes: blocks, launch bounds, row-pass
//! items, rows per thread, small planes' shapes, samples per thread.

use super::*;

#[test]
fn separable_blocks_follow_the_measured_rules() {
    let block = |k, ch, sb, row_global| {
        FastSpec {
            row_global,
            ..FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb)
        }
        .first_block(UHD)
    };
    for (ch, sb) in [(2, 1), (3, 1), (1, 2)] {
        assert_eq!(block(7, ch, sb, true), Some(SEP_BLOCK));
        assert_eq!(block(25, ch, sb, true), Some(SEP_BLOCK));
    }
    // One 8-bit channel: 16 × 8 from 4 to 9 taps high, 8 × 16 from 11.
    for k in [4, 5, 7, 9] {
        assert_eq!(block(k, 1, 1, true), Some(SEP_BLOCK_WIDE_GRAY));
    }
    assert_eq!(block(11, 1, 1, true), Some(SEP_BLOCK));
    // NV12's chroma (two 8-bit channels): the luma's 16 × 8 from 4 to 9 taps high on planes
    // under 1 M pixels (one launch for both planes), 8 × 16 on larger ones and from 11.
    // Not wider than the pair rule takes (else the planes would not share a launch), and
    // not P010's chroma (two 16-bit channels).
    let chroma = |(kw, kh), sb, pixels| {
        let spec = FastSpec::separable(kw, kh, 2, Border::Clamp).with_sample_bytes(sb);
        FastSpec {
            row_global: true,
            ..spec
        }
        .first_block(pixels)
    };
    let small = SEP_WIDE_CHROMA_BELOW_PIXELS - 1;
    for k in [4, 5, 7, 9] {
        assert_eq!(chroma((k, k), 1, small), Some(SEP_BLOCK_WIDE_GRAY));
        assert_eq!(
            chroma((k, k), 1, SEP_WIDE_CHROMA_BELOW_PIXELS),
            Some(SEP_BLOCK)
        );
        assert_eq!(chroma((k, k), 2, small), Some(SEP_BLOCK));
        assert_eq!(
            chroma((PAIR_SEP_MAX_SIDE + 2, k), 1, small),
            Some(SEP_BLOCK)
        );
    }
    assert_eq!(chroma((11, 11), 1, 960 * 540), Some(SEP_BLOCK));
    assert_eq!(block(25, 1, 1, true), Some(SEP_BLOCK));
    assert_eq!(block(9, 4, 1, true), Some(SEP_BLOCK));
    // Large planes' RGBA64 (2-byte samples) with alpha kept: 8 × 16 at 15 taps high, 4 × 32
    // elsewhere from 10 (`sep_large16_shape`); 8-bit RGBA taller than 9 with alpha kept: 8 × 16
    // at 11–19 taps high, 8 × 32 at 10 and from 20 (`sep_rgba_large_block`); with alpha
    // filtered the rules before (4 × 32, 8 × 32); below 4 M pixels 4 × 32.
    let kept = |k, sb, mask| {
        FastSpec {
            mask,
            ..FastSpec::separable(k, k, 4, Border::Clamp).with_sample_bytes(sb)
        }
        .first_block(UHD)
    };
    let tall = SEP_BLOCK_TALL_RGBA;
    let large = SEP_BLOCK_RGBA_LARGE;
    for (sb, heights, blocks) in [
        (
            2,
            [10, 13, 14, 15, 16, 25],
            [tall, tall, tall, SEP_BLOCK, tall, tall],
        ),
        (
            1,
            [10, 11, 15, 19, 20, 25],
            [large, SEP_BLOCK, SEP_BLOCK, SEP_BLOCK, large, large],
        ),
    ] {
        for (k, b) in heights.into_iter().zip(blocks) {
            assert_eq!(kept(k, sb, 0b0111), Some(b), "{sb} B, {k}");
            let filtered = if sb == 2 { tall } else { large };
            assert_eq!(kept(k, sb, 0b1111), Some(filtered), "{sb} B, {k}");
        }
    }
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
    // … and 16 × 8 at 10–12 (`sep_large16_shape`), not on smaller planes.
    for (k, b) in [
        (10, SEP_BLOCK_WIDE_GRAY),
        (12, SEP_BLOCK_WIDE_GRAY),
        (13, SEP_BLOCK),
    ] {
        assert_eq!(block(k, 3, 2, true), Some(b), "{k}");
    }
    use super::rules::sep_large16_shape;
    let shape = |k, pixels| sep_large16_shape((3, 2), k, pixels, false);
    assert_eq!(shape(11, SEP_SMALL_PLANE - 1), None);
    assert_eq!(
        shape(11, SEP_SMALL_PLANE),
        Some((SEP_BLOCK_WIDE_GRAY, SEP_ROWS))
    );
    assert_eq!(shape(9, UHD).or(shape(13, UHD)), None);
    assert_eq!(sep_large16_shape((3, 1), 11, UHD, false), None, "8-bit RGB");
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
    // Round 38's sweep: 8-bit RGB from 16 taps 4 (rgb48 keeps 3), RGBA64 on large planes 8 at
    // 10–15 taps and 6 beyond; round 59's (H200): 8-bit RGBA and RGBA64 to 9 taps 8, 8-bit RGB
    // and rgb48 at 10–15 taps 6; the entries beside them kept.
    assert_eq!(bounds(9, 4, 1), Some((128, 8)));
    assert_eq!(bounds(7, 4, 1), Some((128, 8)));
    assert_eq!(bounds(25, 3, 1), Some((128, 4)));
    assert_eq!(bounds(15, 3, 1), Some((128, 6)));
    assert_eq!(bounds(11, 3, 2), Some((128, 6)));
    assert_eq!(bounds(9, 3, 2), Some((128, 5)));
    assert_eq!(bounds(15, 4, 2), Some((128, 8)));
    assert_eq!(bounds(31, 4, 2), Some((128, 6)));
    assert_eq!(bounds(9, 4, 2), Some((128, 8)));
    assert_eq!(bounds(5, 4, 2), Some((128, 8)));
    assert_eq!(bounds(11, 4, 1), Some((128, 3)));
    // RGBA64's small-plane shapes keep their 5: to 15 taps under 1 M pixels, beyond under 4 M.
    let rgba64 = |k| FastSpec::separable(k, k, 4, Border::Clamp).with_sample_bytes(2);
    assert_eq!(rgba64(15).sep_bounds(SEP_BLOCK, 1280 * 720), Some((128, 5)));
    assert_eq!(
        rgba64(15).sep_bounds(SEP_BLOCK, 1920 * 1080),
        Some((128, 8))
    );
    assert_eq!(
        rgba64(25).sep_bounds(SEP_BLOCK, 1920 * 1080),
        Some((128, 5))
    );
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
    let launched = |k, ch, sb, block, samples| {
        let spec = FastSpec::separable(k, k, ch, Border::Clamp).with_sample_bytes(sb);
        let px = spec.px;
        spec.for_block(block, UHD, samples).row_px / px
    };
    let items = |k, ch, sb, block| launched(k, ch, sb, block, UHD * ch);
    // On 4K launches: two threads' outputs, four for wide 8-bit one- and three-channel
    // kernels (below the large launches' line too), four for narrow 8-bit RGBA, one for RGBA64.
    assert_eq!(items(4, 1, 1, SEP_BLOCK), 2);
    assert_eq!(items(15, 1, 1, SEP_BLOCK), 4);
    for k in [10, 15, 25] {
        assert_eq!(launched(k, 1, 1, SEP_BLOCK, 1), 4, "{k}");
        assert_eq!(launched(k, 3, 1, SEP_BLOCK, 1), 4, "{k}");
    }
    assert_eq!(items(15, 2, 1, SEP_BLOCK), 2);
    assert_eq!(items(25, 2, 1, SEP_BLOCK), 4);
    assert_eq!(items(7, 3, 1, SEP_BLOCK), 2);
    assert_eq!(items(25, 3, 1, SEP_BLOCK), 4);
    assert_eq!(items(9, 4, 1, SEP_BLOCK), 4);
    assert_eq!(items(25, 4, 1, SEP_BLOCK_TALL_RGBA), 2);
    assert_eq!(items(9, 1, 2, SEP_BLOCK), 2);
    assert_eq!(items(25, 4, 2, SEP_BLOCK), 1);
    // One channel on large launches: four from 5 taps for 8-bit samples on launches that
    // stage their rows (3 M samples), from 11 for 16-bit ones on launches of 5 M.
    use super::rules::{SEP_STAGED_MIN_SAMPLES as STAGED, SEP_WIDE_ITEMS_MIN_SAMPLES_16 as WIDE16};
    for k in [5, 7, 9] {
        assert_eq!(launched(k, 1, 1, SEP_BLOCK, STAGED), 4, "{k}");
        assert_eq!(launched(k, 1, 1, SEP_BLOCK, STAGED - 1), 2, "{k}");
        assert_eq!(launched(k, 2, 1, SEP_BLOCK, usize::MAX), 2, "{k}");
    }
    for k in [11, 15, 25] {
        assert_eq!(launched(k, 1, 2, SEP_BLOCK, WIDE16), 4, "{k}");
        assert_eq!(launched(k, 1, 2, SEP_BLOCK, WIDE16 - 1), 2, "{k}");
    }
    assert_eq!(launched(10, 1, 2, SEP_BLOCK, usize::MAX), 2);
    // Never more threads' outputs than a whole number of them fills the block's row.
    assert_eq!(items(25, 1, 1, (2, 64)), 2);
    assert_eq!(items(25, 1, 1, (1, 128)), 1);
    // Only the separable kernel with its row pass from global memory has row-pass items.
    let tile = FastSpec {
        row_global: false,
        ..FastSpec::separable(25, 25, 1, Border::Clamp)
    };
    assert_eq!(tile.clone().for_block(SEP_BLOCK, HD, HD).row_px, tile.px);
    let full = FastSpec::new(25, 25, 1, Border::Clamp);
    assert_eq!(full.clone().for_block(SEP_BLOCK, HD, HD).row_px, full.px);
    // It is compiled in.
    let spec = FastSpec::separable(25, 25, 1, Border::Clamp).for_block(SEP_BLOCK, HD, HD);
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
    // 10 taps high: two rows with alpha kept, the rule's with every channel filtered.
    assert_eq!(spec(10, 4, 1, large).py, SEP_ROWS_RGBA_LARGE);
    let kept = |k| {
        FastSpec {
            mask: 0b0111,
            ..FastSpec::separable(k, k, 4, Border::Clamp)
        }
        .for_pixels(large)
        .py
    };
    assert_eq!(
        (kept(9), kept(10), kept(11)),
        (SEP_ROWS_RGBA, SEP_ROWS_RGBA, SEP_ROWS_RGBA_LARGE)
    );
    // As `choose` builds it: the plane's mask is in before the rows are chosen.
    let tiled = |mask| {
        let p = super::plane(3840, 4, mask);
        FastSpec::tiled_for_plane(true, (10, 10), (4, 1), Border::Clamp, &p, large).py
    };
    assert_eq!(
        (tiled(0b0111), tiled(0b1111)),
        (SEP_ROWS_RGBA, SEP_ROWS_RGBA_LARGE)
    );
    // 9 and below, 16-bit RGBA and other channel counts keep their rows.
    assert_eq!(spec(9, 4, 1, large).py, SEP_ROWS_RGBA);
    // RGBA64 on large planes with alpha kept: 4 rows at 15 and 20–25 taps high, else the
    // rule's 2 (and 2 everywhere with alpha filtered).
    let kept64 = |k| {
        FastSpec {
            mask: 0b0111,
            ..FastSpec::separable(k, k, 4, Border::Clamp).with_sample_bytes(2)
        }
        .for_pixels(large)
        .py
    };
    let four = SEP_ROWS;
    let rows = [
        (13, 2),
        (14, 2),
        (15, four),
        (19, 2),
        (20, four),
        (25, four),
        (26, 2),
    ];
    for (k, rows) in rows {
        assert_eq!(kept64(k), rows, "{k}");
        assert_eq!(
            spec(k, 4, 2, large).py,
            SEP_ROWS_RGBA,
            "{k}: alpha filtered"
        );
    }
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
    assert_eq!(bounds(9, large), Some((128, 8)));
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
        // rgb48 4–5 taps high: 16 × 8, one row, no launch bound; not 3 taps high, nor for
        // other 16-bit formats or large planes; from 6 taps high the taller kernels' shape.
        ((3, 2, 5, hd), Some(SEP_SHAPE_SHORT_RGB48)),
        ((3, 2, 6, hd), Some(shape(SEP_BLOCK, one, 2))),
        ((3, 2, 4, p480), Some(SEP_SHAPE_SHORT_RGB48)),
        ((3, 2, 3, hd), None),
        ((3, 2, 5, SEP_SMALL_PLANE), None),
        ((1, 2, 5, hd), None),
        ((4, 2, 5, p720), None),
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
    let short = FastSpec::separable(5, 5, 3, Border::Clamp)
        .with_sample_bytes(2)
        .for_pixels(hd);
    assert_eq!(short.py, 1);
    assert_eq!(short.first_block(hd), Some(SEP_BLOCK_SHORT16));
    assert_eq!(short.sep_bounds(SEP_BLOCK_SHORT16, hd), None);
    let px = short.px;
    assert_eq!(
        short.for_block(SEP_BLOCK_SHORT16, hd, 3 * hd).row_px,
        2 * px
    );
    let spec = FastSpec::separable(25, 25, 4, Border::Clamp).with_sample_bytes(2);
    let small = spec.clone().for_pixels(p480);
    assert_eq!(small.py, 1);
    assert_eq!(small.first_block(p480), Some(SEP_BLOCK_TALL_RGBA));
    assert_eq!(small.sep_bounds(SEP_BLOCK_TALL_RGBA, p480), Some((128, 5)));
    let px = small.px;
    assert_eq!(
        small.for_block(SEP_BLOCK_TALL_RGBA, p480, 4 * p480).row_px,
        2 * px
    );
    // On 4K RGBA64 keeps one thread's outputs per item.
    let uhd = spec.for_pixels(3840 * 2160);
    assert_eq!(
        uhd.clone()
            .for_block(SEP_BLOCK_TALL_RGBA, 3840 * 2160, 4 * 3840 * 2160)
            .row_px,
        uhd.px
    );
}

#[test]
fn rgb_rows_on_small_planes_follow_the_measured_rules() {
    use super::rules::{sep_rows_rgb_small, tiled_threads, TILED_FEW_THREADS};
    let (hd, uhd) = (1920 * 1080, 3840 * 2160);
    // 1080p RGB at 4 rows of 12 samples: 130 K threads.
    let threads = |w: usize, h: usize| tiled_threads(w * h * 3, (12, SEP_ROWS));
    let many = threads(1920, 1080);
    // The integer row pass on every small plane up to 9 taps high, the f32 one where the
    // launch has enough threads for the small launches' rule to leave its rows.
    assert!(sep_rows_rgb_small(3, 1, 9, hd, true, many));
    assert!(sep_rows_rgb_small(3, 1, 4, hd, false, many));
    assert!(sep_rows_rgb_small(3, 1, 9, hd, false, TILED_FEW_THREADS));
    let few = threads(853, 480);
    assert!(few < TILED_FEW_THREADS);
    assert!(sep_rows_rgb_small(3, 1, 7, 853 * 480, true, few));
    assert!(!sep_rows_rgb_small(3, 1, 7, 853 * 480, false, few));
    assert!(!sep_rows_rgb_small(
        3,
        1,
        6,
        hd,
        false,
        TILED_FEW_THREADS - 1
    ));
    // Not from 10 taps high, on planes of SEP_SMALL_PLANE pixels, nor for rgb48 or RGBA.
    assert!(!sep_rows_rgb_small(3, 1, 10, hd, true, many));
    assert!(!sep_rows_rgb_small(3, 1, 5, SEP_SMALL_PLANE, true, many));
    assert!(!sep_rows_rgb_small(3, 1, 5, uhd, false, many));
    assert!(!sep_rows_rgb_small(3, 2, 5, hd, false, many));
    assert!(!sep_rows_rgb_small(4, 1, 5, hd, true, many));
}

#[test]
fn short_and_tall_separable_rules_follow_the_measurements() {
    use super::rules::{
        sep_int_first, sep_rows_tall, sep_short16, sep_square16, SEP_INT4_MIN_PLANE,
        SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY, SEP_ROWS_MID, SEP_ROWS_MID_MIN_SAMPLES,
        SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY, SEP_ROWS_TALL_MIN_SAMPLES, SEP_SMALL_PLANE,
    };
    if std::env::var_os("CONVFLOW_FAST_SEP_TILED_MIN").is_some() {
        return; // the override decides
    }
    let (qhd, uhd8k) = (SEP_SMALL_PLANE - 1, 7680 * 4320);
    // 4–5 taps: the tiled kernel for one to three 8-bit channels, 16-bit samples and small
    // planes always; 8-bit RGBA keeps the integer and register kernels on large planes; 3
    // taps never.
    let tiled = FastSpec::tiled_first;
    for side in [4, 5] {
        assert!(tiled(side, 3, 1, uhd8k));
        assert!(tiled(side, 1, 1, UHD) && tiled(side, 2, 1, UHD));
        assert!(tiled(side, 1, 1, uhd8k) && tiled(side, 2, 1, uhd8k));
        assert!(!tiled(side, 4, 1, UHD));
        assert!(tiled(side, 4, 1, qhd) && tiled(side, 4, 2, uhd8k));
    }
    assert!(!tiled(3, 3, 1, HD) && tiled(6, 4, 1, uhd8k));
    // … but integer plans 4 wide keep `fast_int` on one or two 8-bit channels from 16 M pixels.
    assert!(sep_int_first(4, 1, 1, uhd8k) && sep_int_first(4, 2, 1, SEP_INT4_MIN_PLANE));
    assert!(!sep_int_first(4, 1, 1, SEP_INT4_MIN_PLANE - 1) && !sep_int_first(5, 1, 1, uhd8k));
    assert!(!sep_int_first(4, 3, 1, uhd8k) && !sep_int_first(4, 1, 2, uhd8k));
    // 16 × 8 blocks for one to three 16-bit channels 4–5 taps high on large planes.
    assert!(sep_short16(3, 2, 5, UHD) && sep_short16(1, 2, 4, UHD));
    assert!(!sep_short16(4, 2, 5, UHD) && !sep_short16(3, 1, 5, UHD));
    assert!(!sep_short16(3, 2, 6, UHD) && !sep_short16(3, 2, 5, qhd));
    assert!(!sep_short16(1, 2, 9, UHD), "a kernel 9 wide and 4 high");
    // One channel on large launches: 8 rows for 8-bit from 11 taps, 6 at 10 (and at 5-9 on
    // launches of 12 M samples, of 3 M on fast memory), 6 for 16-bit from 10.
    let large = SEP_ROWS_TALL_MIN_SAMPLES;
    let mid = SEP_ROWS_MID_MIN_SAMPLES;
    let fast = SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY;
    for f in [false, true] {
        let rows = |ch, sb, k, n| sep_rows_tall(ch, sb, k, n, f);
        assert_eq!(rows(1, 1, 11, large), Some(SEP_ROWS_TALL));
        assert_eq!(rows(1, 1, 10, large), Some(SEP_ROWS_MID));
        assert_eq!(rows(1, 2, 25, UHD), Some(SEP_ROWS_TALL_16));
        assert_eq!(rows(1, 2, 10, large), Some(SEP_ROWS_TALL_16));
        assert_eq!(rows(1, 2, 9, usize::MAX), None);
        for k in 5..=9 {
            assert_eq!(rows(1, 1, k, mid), Some(SEP_ROWS_MID), "{k}");
            assert_eq!(rows(1, 1, k, fast - 1), None, "{k}");
            assert_eq!(rows(1, 2, k, mid), None, "{k}: 16-bit");
        }
        assert_eq!(rows(1, 1, 4, usize::MAX), None);
        assert_eq!(
            rows(1, 1, 15, large - 1),
            None,
            "taller than 9 below 4 M samples"
        );
        assert_eq!(rows(1, 1, 10, large - 1), None);
        assert_eq!(rows(2, 1, 15, UHD), None);
        assert_eq!(rows(2, 1, 7, usize::MAX), None);
    }
    // 5-9 taps on launches of 40 M samples and more (8K YUV 4:2:0's one launch, not 8K gray):
    // 8 rows on fast memory, 6 elsewhere.
    let eight = SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY;
    assert!(eight <= 7680 * 4320 * 3 / 2 && eight > 7680 * 4320);
    for k in 5..=9 {
        assert_eq!(
            sep_rows_tall(1, 1, k, eight, true),
            Some(SEP_ROWS_TALL),
            "{k}"
        );
        assert_eq!(sep_rows_tall(1, 1, k, eight - 1, true), Some(SEP_ROWS_MID));
        assert_eq!(sep_rows_tall(1, 1, k, eight, false), Some(SEP_ROWS_MID));
        assert_eq!(sep_rows_tall(1, 2, k, eight, true), None, "{k}: 16-bit");
    }
    assert_eq!(sep_rows_tall(1, 1, 4, eight, true), None);
    // 5-9 taps below 12 M samples: 6 rows only on fast memory (1080p YUV 4:2:0's one launch,
    // 3.1 M samples, to 4K gray's 8.3 M).
    for k in 5..=9 {
        assert_eq!(
            sep_rows_tall(1, 1, k, UHD, false),
            None,
            "{k}: 8.3 M samples"
        );
        assert_eq!(sep_rows_tall(1, 1, k, mid - 1, false), None, "{k}");
        assert_eq!(sep_rows_tall(1, 1, k, UHD, true), Some(SEP_ROWS_MID), "{k}");
        assert_eq!(
            sep_rows_tall(1, 1, k, fast, true),
            Some(SEP_ROWS_MID),
            "{k}"
        );
    }
    assert!(
        fast <= 1920 * 1080 * 3 / 2 && fast > 1920 * 1080,
        "1080p YUV 4:2:0, not 1080p gray"
    );
    // 16 x 16 blocks for a frame of one 16-bit plane 6-9 taps high from 1440p.
    assert!(sep_square16(1, 2, 6, 2560 * 1440, true) && sep_square16(1, 2, 9, UHD, true));
    assert!(
        !sep_square16(1, 2, 9, UHD, false),
        "YUV 4:2:0 10-bit, P010: frames of more planes"
    );
    assert!(!sep_square16(1, 2, 5, UHD, true) && !sep_square16(1, 2, 10, UHD, true));
    assert!(!sep_square16(1, 1, 7, UHD, true) && !sep_square16(2, 2, 7, UHD, true));
    assert!(!sep_square16(1, 2, 7, 1920 * 1080, true), "1080p");
}

#[test]
fn rgb_threads_own_four_samples_where_measured_faster() {
    // 8-bit RGB from 11 taps on planes of 0.9 M to 3 M pixels; not below 11 taps, not on
    // planes outside, not for other channel counts or 16-bit samples.
    let px = |k: usize, pixels: usize| sep_px(3, 1, (k, k), pixels, true);
    assert_eq!(px(11, HD), Some(4));
    assert_eq!(px(25, HD), Some(4));
    assert_eq!(px(11, SEP_RGB_NARROW_MIN_PLANE), Some(4));
    assert_eq!(px(11, SEP_RGB_NARROW_MAX_PLANE - 1), Some(4));
    assert_eq!(px(10, HD), None);
    assert_eq!(px(25, SEP_RGB_NARROW_MIN_PLANE - 1), None);
    assert_eq!(px(25, 854 * 480), None);
    assert_eq!(px(25, SEP_RGB_NARROW_MAX_PLANE), None);
    // On 720p, threads of 4 pixels whose f32 row pass goes one channel at a time (from 13 taps
    // wide) instead; an integer row pass (or one turned off), or one narrower, keeps 4 samples.
    assert_eq!(px(11, 1280 * 720), Some(4));
    assert_eq!(px(13, 1280 * 720), None);
    assert_eq!(px(25, SEP_RGB_NARROW_PLANAR_MAX_PLANE - 1), None);
    assert_eq!(px(25, SEP_RGB_NARROW_PLANAR_MAX_PLANE), Some(4));
    assert_eq!(sep_px(3, 1, (25, 25), 1280 * 720, false), Some(4));
    assert_eq!(sep_px(3, 1, (11, 25), 1280 * 720, true), Some(4));
    for (ch, sb) in [(1, 1), (2, 1), (4, 1), (3, 2), (4, 2)] {
        assert_eq!(
            sep_px(ch, sb, (25, 25), HD, true),
            None,
            "{ch} channels, {sb} bytes"
        );
    }
    // A thread of 4 samples takes row-pass items of at most 4 pixels' threads' samples, whole
    // threads' outputs that the block's row holds a whole number of.
    let item = |px: usize, block: (u32, u32), deinterleave: bool| {
        let spec = FastSpec {
            px,
            row_px: px,
            deinterleave,
            ..FastSpec::separable(15, 15, 3, Border::Clamp)
        }
        .for_block(block, HD, 3 * HD);
        (spec.row_px, spec.deinterleave)
    };
    assert_eq!(item(4, (8, 16), false), (32, false));
    assert_eq!(item(4, (12, 16), false), (48, false));
    assert_eq!(item(4, (6, 16), false), (24, false));
    // The integer row pass of such threads reads its windows as loaded, not regrouped per
    // channel, even in items of whole groups of 4 pixels (not measured).
    assert_eq!(item(4, (8, 16), true), (32, false));
    assert_eq!(item(4, (12, 16), true), (48, false));
    // Threads of 4 whole pixels keep their rule: up to 4 threads' outputs.
    assert_eq!(item(12, (8, 16), true), (48, true));
    assert_eq!(item(12, (6, 16), true), (24, true));
}

#[test]
fn output_clamp_is_left_out_where_measured_faster() {
    use super::rules::{sat_free, SAT_CLAMP_RGB48_MAX_SIDE, SAT_FREE_FULL_MAX_SIDE};
    if std::env::var_os("CONVFLOW_FAST_SAT_FREE").is_some() {
        return; // the override decides
    }
    for ch in 1..=4 {
        for sb in [1, 2] {
            for side in [3, 5, 9, 15, 25] {
                // One and two channels everywhere; separable plans of 3–4 but rgb48's up to 9
                // taps; full ones of 3–4 up to 15.
                let rgb48 = (ch, sb) == (3, 2) && side <= SAT_CLAMP_RGB48_MAX_SIDE;
                assert_eq!(sat_free(ch, sb, true, side), !rgb48, "{ch} {sb} {side}");
                let full = ch <= 2 || side <= SAT_FREE_FULL_MAX_SIDE;
                assert_eq!(sat_free(ch, sb, false, side), full, "{ch} {sb} {side}");
            }
        }
    }
    assert!(!sat_free(3, 2, true, 3) && !sat_free(3, 2, true, 5) && !sat_free(3, 2, true, 9));
    assert!(sat_free(3, 2, true, 10) && sat_free(3, 1, true, 7) && sat_free(4, 2, true, 7));
    assert!(sat_free(3, 1, false, 15) && !sat_free(3, 1, false, 17) && sat_free(2, 1, false, 25));
}

#[test]
fn separable_blocks_are_compiled_in_where_measured_faster() {
    use super::rules::{sep_fixed_block, sep_zero_offset, SEP_SMALL_PLANE};
    if std::env::var_os("CONVFLOW_FAST_SEP_FIXED").is_some()
        || std::env::var_os("CONVFLOW_FAST_SEP_ZOFF").is_some()
    {
        return; // the overrides decide
    }
    let small = SEP_SMALL_PLANE - 1;
    // One 8-bit channel everywhere; 16-bit up to 15 taps high on small frames, taller on large.
    for (sb, kh, pixels) in [
        (1, 5, HD),
        (1, 25, small),
        (2, 25, UHD),
        (2, 15, HD),
        (1, 7, 1 << 20),
    ] {
        assert!(sep_fixed_block(1, sb, kh, pixels), "{sb} {kh} {pixels}");
    }
    assert!(!sep_fixed_block(1, 2, 16, small) && !sep_fixed_block(1, 2, 25, HD));
    // Two to four 8-bit channels up to 9 taps high everywhere, taller only on large planes …
    for ch in [2, 3, 4] {
        assert!(sep_fixed_block(ch, 1, 9, small) && sep_fixed_block(ch, 1, 15, UHD));
        assert!(!sep_fixed_block(ch, 1, 10, small) && !sep_fixed_block(ch, 1, 25, HD));
    }
    assert!(sep_fixed_block(2, 1, 25, SEP_SMALL_PLANE));
    // … two 16-bit channels (P010's chroma) as one: up to 15 on small planes …
    assert!(sep_fixed_block(2, 2, 15, small) && sep_fixed_block(2, 2, 25, UHD));
    assert!(!sep_fixed_block(2, 2, 16, small) && !sep_fixed_block(2, 2, 25, HD));
    // … RGBA64 at every height …
    for kh in [5, 9, 11, 15, 25] {
        assert!(
            sep_fixed_block(4, 2, kh, HD) && sep_fixed_block(4, 2, kh, UHD),
            "{kh}"
        );
    }
    // … and rgb48, which gained on small planes at every height and lost at 8–9 on large ones.
    for kh in [5, 7, 9, 15, 25] {
        assert!(sep_fixed_block(3, 2, kh, HD), "{kh}");
    }
    for kh in [8, 9] {
        assert!(!sep_fixed_block(3, 2, kh, UHD) && !sep_fixed_block(3, 2, kh, SEP_SMALL_PLANE));
    }
    assert!(sep_fixed_block(3, 2, 7, UHD) && sep_fixed_block(3, 2, 15, UHD));
    assert!(sep_fixed_block(3, 1, 9, UHD) && sep_fixed_block(4, 2, 9, UHD));
    // The offset compiled in on one channel, on more from 10 taps high.
    assert!(sep_zero_offset(1, 3) && !sep_zero_offset(2, 9) && !sep_zero_offset(3, 7));
    assert!(sep_zero_offset(3, 15) && sep_zero_offset(4, 25) && sep_zero_offset(2, 10));
    // The block reaches the kernel's defines (0 where it is read from blockDim).
    let spec = FastSpec::separable(7, 7, 1, Border::Clamp);
    assert!(spec.defines().contains(&"-DSEP_BX=0".to_string()));
    let fixed = FastSpec {
        fixed_block: Some((16, 8)),
        ..spec.clone()
    };
    let defines = fixed.defines();
    assert!(defines.contains(&"-DSEP_BX=16".to_string()));
    assert!(defines.contains(&"-DSEP_BY=8".to_string()));
    assert_ne!(
        ModuleKey::Fast(fixed),
        ModuleKey::Fast(spec),
        "a module of its own"
    );
}
