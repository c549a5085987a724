//! The measured rules of the full tiled kernel `fast_full`: which full plans take it before the
//! register and integer kernels (on small planes), its rows per thread (by the unrolled code's
//! size, by kernel side, and on 16-bit launches of the middle range) and the blocks it tries
//! first, by channels, sample size, kernel side and plane size.

use super::*;

/// Output rows per thread of the full tiled kernel `fast_full` for threads owning one or two
/// channels' samples (px ≤ 8) while its unrolled code stays at most 1024 FMAs …
pub const FULL_ROWS: usize = 4;
/// … and for the others (and for px ≤ 8 from 1025 FMAs) up to 2048 FMAs; beyond, one row. Two rows
/// against the four of the rule before (H100, gaussian, 1080p / 4K / 8K, µs): RGBA64 7×7 52.7 /
/// 174.5 / 593.4 against 71.0 / 236.6 / 817.2, RGB 9×9 45.3 / 133.4 / 453.5 against 55.2 / 153.9 /
/// 537.0, rgb48 7×7 40.2 / 132.5 / 460.2 against 45.6 / 159.1 / 514.1 and 9×9 49.0 / 160.3 / 563.1
/// against 58.7 / 188.3 / 655.0 (one row per thread was 1–4 % faster still for rgb48 only). For
/// gray and gray16 at 7 and 9 two rows tied with four (within 3 %); RGBA 9×9 had two already. The
/// four rows kept 104 registers live for RGBA64 7×7 against 72 for two.
pub const FULL_ROWS_WIDE: usize = 2;

/// Rows per thread of the full tiled kernel `fast_full` for 8-bit square kernels on 2–4 channels,
/// by (channels, side), where a sweep found rows other than the rule's
/// ([`FastSpec::new`](super::super::FastSpec::new): one row at these sides) faster on 720p to 8K;
/// other sides keep the rule. The best rows move with the block the tile allows and with the
/// unrolled code, not smoothly with the side: in the nineteenth round RGB 23 and 19, and RGBA 25,
/// lost with 2 rows (RGB 23 by 1.3–1.5×). H100, gaussian, µs, the rule / these rows
/// (docs/PERFORMANCE.md, "nineteenth round"): NV12's chroma 17 / 19 / 21 / 25 on 4K 203.8 / 274.0 /
/// 320.7 / 439.8 against 185.5 / 248.7 / 284.8 / 427.2 (the whole frame; 8K 1.07–1.12×; on 1080p
/// the chroma launch is small and keeps the rule's row); RGB 15 on 1080p / 4K / 8K 81.2 / 298.4 /
/// 1152.1 against 76.8 / 280.7 / 1054.9 (2 rows: 84.2 / 318.9 / 1253.5), RGB 17 1.01–1.04×, RGB 21
/// 157.4 / 582.7 against 134.6 / 499.8 on 1080p / 4K (720p and 1440p 1.18–1.20×); RGBA 13 97.6 /
/// 364.4 / 1438.1 against 69.9 / 269.4 / 1120.1, RGBA 15 121.2 / 452.9 / 1788.6 against 106.8 /
/// 407.2 / 1569.6, RGBA 17 1.16–1.20×, RGBA 19 1.02–1.12×. The even sides (forty-fifth round; that
/// sweep had measured odd ones only), 1080p / 4K: RGBA 12 82.7 / 302.2 against 58.5 / 198.0, 14
/// 105.5 / 389.5 against 74.2 / 251.7, 16 (4 rows) 1.01 / 1.08×, 18 / 20 / 22 1.12 / 1.05 / 1.14×
/// and 1.14 / 1.06 / 1.16×; NV12 18 / 20 / 22 1.02 / 1.01 / 1.00× and 1.13 / 1.12 / 1.06×; RGB at
/// even sides kept the rule's rows (within 4 %). RGBA 19, 21, 23 and 25 on large planes:
/// [`FULL_ROWS_LARGE`].
pub const FULL_ROWS_BY_SIDE: [(usize, usize, usize); 21] = [
    (2, 17, 2),
    (2, 18, 2),
    (2, 19, 2),
    (2, 20, 2),
    (2, 21, 2),
    (2, 22, 2),
    (2, 25, 2),
    (3, 15, 4),
    (3, 17, 2),
    (3, 21, 2),
    (3, 25, 2),
    (4, 12, 2),
    (4, 13, 2),
    (4, 14, 2),
    (4, 15, 4),
    (4, 16, 4),
    (4, 17, 2),
    (4, 18, 2),
    (4, 19, 2),
    (4, 20, 2),
    (4, 22, 2),
];
/// … and for 16-bit samples (RGBA64; forty-fifth round, H100, gaussian, µs, the rule's one row /
/// these rows, 1080p / 4K): 12 86.8 / 316.1 against 63.3 / 208.9, 13 96.0 / 355.3 against 77.7 /
/// 261.4 (1440p 1.34×, 8K 1.33×), 14 109.4 / 405.1 against 78.6 / 262.5, 16 (4 rows) 1.01 /
/// 1.12×, 18 / 19 / 20 / 22 / 23 1.08 / 1.05 / 1.04 / 1.12 / 1.09× and 1.13 / 1.10 / 1.08 / 1.16
/// / 1.13×; 15, 17, 19, 21, 23 and 25 on large planes: [`FULL_ROWS_LARGE`]. rgb48 and P010's
/// chroma keep the rule at 12–25 on planes of every size but for rgb48 15 and P010's chroma at
/// 17, 19 and 21 on large planes ([`FULL_ROWS_LARGE`]).
pub const FULL_ROWS_BY_SIDE_16: [(usize, usize, usize); 9] = [
    (4, 12, 2),
    (4, 13, 2),
    (4, 14, 2),
    (4, 16, 4),
    (4, 18, 2),
    (4, 19, 2),
    (4, 20, 2),
    (4, 22, 2),
    (4, 23, 2),
];
/// Rows of the full tiled kernel at sides where they depend on the plane's size,
/// as (sample bytes, channels, side, rows, least pixels), before the sides' tables
/// ([`FULL_ROWS_BY_SIDE`], [`FULL_ROWS_BY_SIDE_16`]), which smaller planes keep (forty-sixth
/// round; the blocks and the tile had changed since the nineteenth round's sweep). H100,
/// gaussian, this round's build against the one before, two passes alternating (spread under
/// 1 %), 720p / 1366×768 / 1080p / 1440p / 4K / 8K, ×, µs at 4K:
/// - RGBA 19 in 4 rows (table: 2) from 4 M pixels: 1.04 / 1.06×, 607.7 against 584.2; on 1080p /
///   1440p a sweep found 0.97 / 1.02×;
/// - RGBA 21 in 2 rows (the rule's 1): 1.06 / 1.08 / 1.07 / 1.09× from 2 M, 801.2 against 751.9;
///   0.95 / 1.02× below;
/// - RGBA 23 in 4 rows: 1.10 / 1.13 / 1.17 / 1.21×, 923.2 against 787.1 (2 rows 1.11–1.14×);
///   1366×768 0.97×;
/// - RGBA 25 in 2 rows: 1.03 / 1.04 / 1.03 / 1.05×; 720p 0.98×;
/// - RGBA64 15 and 17 in 4 rows (the rule's 1): 1.07 / 1.16 / 1.26 / 1.34× (444.6 against 351.5)
///   and 1.00 / 1.07 / 1.12 / 1.16×; 1366×768 0.83 and 0.83× (64.0 K threads at 4 rows, just
///   over the 64 K line);
/// - RGBA64 19 and 23 in 4 rows (table: 2) from 4 M pixels, the final build, 4K / 8K: 1.05 /
///   1.08× (624.1 against 592.9) and 1.04 / 1.07×; on 1080p / 1440p a sweep found 0.96 / 1.01×
///   and 0.97 / 1.01×;
/// - RGBA64 21 and 25 in 2 rows (the rule's 1): 1.03 / 1.05 / 1.06 / 1.09× and 1.03 / 1.06 / 1.06
///   / 1.09×; 720p 0.95 / 0.96×, 1366×768 0.93 / 0.96×.
///
/// And for the chroma planes of P010 / P016 (2 channels of 16-bit samples) at 17 / 19 / 21 in 2
/// rows (the rule's 1; the pixels are the chroma plane's), a sweep, the whole frame, 1080p / 4K /
/// 8K: 0.97 / 1.08 / 1.12×, 1.04 / 1.09 / 1.13× (4K 245.4 against 225.8 µs), 0.99 / 1.10 /
/// 1.12× (at 23 and 25 0.94 / 0.97× on 1080p, 1.00–1.07× on 4K and 8K: not taken); rgb48 15 in
/// 4 rows (the rule's 1): 0.91 / 1.07 / 1.11× (4K 275.7 against 258.0).
///
/// And 8-bit RGB 25, 2 rows in [`FULL_ROWS_BY_SIDE`], back to one from 4 M pixels (the rule's
/// row; nineteenth round, 2 rows / 1: 720p / 1080p / 1440p 94.5 / 192.9 / 337.1 µs against
/// 104.4 / 222.1 / 376.8; on 4K 778.4 against 771.5, on 8K 3224 against 3105).
pub const FULL_ROWS_LARGE: [(usize, usize, usize, usize, usize); 15] = [
    (1, 4, 19, 4, 4_000_000),
    (1, 4, 21, 2, 2_000_000),
    (1, 4, 23, 4, 2_000_000),
    (1, 4, 25, 2, 2_000_000),
    (2, 4, 15, 4, 2_000_000),
    (2, 4, 17, 4, 2_000_000),
    (2, 4, 19, 4, 4_000_000),
    (2, 4, 21, 2, 2_000_000),
    (2, 4, 23, 4, 4_000_000),
    (2, 4, 25, 2, 2_000_000),
    (2, 2, 17, 2, 2_000_000),
    (2, 2, 19, 2, 2_000_000),
    (2, 2, 21, 2, 2_000_000),
    (2, 3, 15, 4, 4_000_000),
    (1, 3, 25, 1, 4_000_000),
];

/// Rows per thread of the full tiled kernel for a `side` × `side` kernel on planes of `ch`
/// channels of `sb`-byte samples and `pixels` pixels, `samples` samples in the launch and `px`
/// samples a thread, where measured better than the rule's ([`FULL_ROWS_BY_SIDE`],
/// [`FULL_ROWS_BY_SIDE_16`], [`FULL_ROWS_LARGE`]); else None.
/// Not where those rows would leave fewer than [`TILED_FEW_THREADS`] threads ([`tiled_rows`]'
/// small launches; 720p RGBA 15: 69.6 µs with 4 rows against 57.3 with the rule's one).
pub fn full_rows_by_side(
    (ch, sb): (usize, usize),
    side: usize,
    pixels: usize,
    (samples, px): (usize, usize),
) -> Option<usize> {
    let table: &[(usize, usize, usize)] = match sb {
        1 => &FULL_ROWS_BY_SIDE,
        _ => &FULL_ROWS_BY_SIDE_16,
    };
    let large = FULL_ROWS_LARGE
        .iter()
        .find(|&&(b, c, s, _, from)| (b, c, s) == (sb, ch, side) && pixels >= from)
        .map(|&(.., rows, _)| rows);
    let rows = large.or_else(|| {
        table
            .iter()
            .find(|&&(c, s, _)| (c, s) == (ch, side))
            .map(|&(.., rows)| rows)
    });
    rows.filter(|&rows| tiled_threads(samples, (px, rows)) >= TILED_FEW_THREADS)
}

/// Full tiled 16-bit launches of one channel (gray16, the planes of YUV 10-bit, P010's and
/// P016's luma) whose rule gives [`FULL_ROWS`] rows (square kernels of sides 8–16) take one
/// row below this many threads at those rows …
pub const FULL_ONE16_ONE_ROW_THREADS: usize = 112 * 1024;
/// … and two below this many (forty-fifth round, H100, gaussian 9 / 11 / 13 / 15, µs, 4 rows /
/// the rows taken; K = 1024 threads at 4 rows): 1366×768 gray16 (64.0 K, 1 row) 15.3 / 18.1 /
/// 19.0 / 22.0 against 12.3 / 15.1 / 16.8 / 20.6 (at 15, 2 rows 19.2); 720p and 1366×768 YUV
/// 4:2:0 10-bit (84.4 and 96.0 K, 1 row) 1.22 / 1.12 / 1.09 / 1.04× and 1.19 / 1.11 / 1.07 /
/// 1.03× (2 rows: 1.14 / 1.11 / 1.05 / 1.02×); 1080p gray16 (126.6 K, 2 rows) 19.7 / 24.0 /
/// 25.8 / 30.1 against 17.9 / 22.8 / 26.3 / 29.8 (1 row: 1.10 / 1.04 / 0.99 / 0.94×), 1080p YUV
/// 4:2:0 10-bit (189.8 K) 1.14 / 1.13 / 1.06 / 1.04×, 1440p gray16 (225.0 K) 1.07 / 1.08 / 1.04
/// / 1.13×, 1440p YUV 4:2:0 10-bit (337.5 K) 1.01 / 1.03 / 1.00 / 1.01×; on 4K (506.3 K) 2 rows
/// lost 4–8 % but at 15. P010's luma launch runs beside its chroma launch and gains less: on
/// 1366×768 at 11–14 taps 0.97–0.98× against the rule before, on 1080p 9–14 0.97–1.06×.
pub const FULL_ONE16_TWO_ROWS_THREADS: usize = 384 * 1024;
/// rgb48 full kernels of sides 7–12, which the rule gives [`FULL_ROWS_WIDE`] rows, take one
/// row on launches of fewer than [`FULL_RGB48_ONE_ROW_THREADS`] threads at two rows
/// (forty-fifth round, H100, gaussian 7 / 9 / 11, µs, 2 rows / 1: 720p 22.4 / 26.1 / 31.1
/// against 21.1 / 23.8 / 28.5, 1280×544 1.11 / 1.20 / 1.06×, 1366×768 1.06 / 1.06 / 1.02×, 1080p
/// 0.99 / 1.05 / 1.06× (12: 1.05×); 1440p 0.96–1.03×, 4K 0.89–0.98×; 13 lost 2–3 % on 720p and
/// 1366×768).
pub const FULL_RGB48_ONE_ROW_SIDES: std::ops::RangeInclusive<usize> = 7..=12;
/// See [`FULL_RGB48_ONE_ROW_SIDES`] (K = 1024 threads at two rows: 1080p rgb48 253.1 K, 1440p
/// 450 K).
pub const FULL_RGB48_ONE_ROW_THREADS: usize = 320 * 1024;

/// Rows per thread of the full tiled kernel on 16-bit launches of `samples` samples in the
/// middle range, for a square kernel of `side` taps a side, where fewer rows than the rule's
/// `py` (threads owning `px` samples) were measured faster: one channel
/// ([`FULL_ONE16_TWO_ROWS_THREADS`]) and rgb48 at sides [`FULL_RGB48_ONE_ROW_SIDES`]; else
/// None.
pub fn full_rows_mid16(
    (ch, sb): (usize, usize),
    side: usize,
    samples: usize,
    (px, py): (usize, usize),
) -> Option<usize> {
    let threads = tiled_threads(samples, (px, py));
    match (ch, sb, py) {
        (1, 2, FULL_ROWS) if threads < FULL_ONE16_ONE_ROW_THREADS => Some(1),
        (1, 2, FULL_ROWS) if threads < FULL_ONE16_TWO_ROWS_THREADS => Some(2),
        (3, 2, FULL_ROWS_WIDE)
            if FULL_RGB48_ONE_ROW_SIDES.contains(&side) && threads < FULL_RGB48_ONE_ROW_THREADS =>
        {
            Some(1)
        }
        _ => None,
    }
}

/// Rows per thread of the full tiled kernel where a measured rule differs from the rows `py` the
/// unrolled code's size gives ([`FastSpec::new`](super::super::FastSpec::new)), for a `kw` × `kh`
/// kernel on planes of `ch` channels of `sb`-byte samples and `pixels` pixels, `samples` samples in
/// the launch and `px` samples a thread: square kernels only (the ones measured), the sides' tables
/// first ([`full_rows_by_side`]), then 16-bit launches of the middle range ([`full_rows_mid16`];
/// the two never both apply); else None. The small launches' rule ([`tiled_rows`]) comes after.
pub fn full_rows(
    (ch, sb): (usize, usize),
    (kw, kh): (usize, usize),
    pixels: usize,
    (samples, px, py): (usize, usize, usize),
) -> Option<usize> {
    if kw != kh {
        return None;
    }
    full_rows_by_side((ch, sb), kh, pixels, (samples, px))
        .or_else(|| full_rows_mid16((ch, sb), kh, samples, (px, py)))
}

/// 8-bit full kernels of sides 6–7 on RGB planes take the register kernel only on planes of at
/// least this many pixels: below, the tiled kernel wins (H100, gaussian:7, seventeenth round:
/// 640×360 / 853×480 / 720p / 1080p / 4K 9.7 / 11.6 / 16.4 / 27.2 / 93.2 µs against 23.1 /
/// 26.5 / 27.8 / 37.0 / 114.3; on 8K they tied when last measured, 403.3 against 405.3) …
pub const FULL_TILED_RGB_MAX_PLANE: usize = 16_000_000;
/// … on RGBA planes, below this many (1080p 46.1 µs against 50.6; on 4K the register kernel,
/// 128.0 against 143.5, on 8K 383.1 against 487.8) …
pub const FULL_TILED_RGBA_MAX_PLANE: usize = 4_000_000;
/// … on 1–2 channels, below this many (gray 640×360 / 853×480 / 720p 9.4 / 10.0 / 10.7 against
/// 11.0 / 12.2 / 12.1, NV12 21.5 / 22.5 / 23.1 against 23.4 / 25.3 / 26.2; at 1080p the register
/// kernel, gray 14.4 against 15.5, NV12 28.2 against 29.5) …
pub const FULL_TILED_NARROW_MAX_PLANE: usize = 2_000_000;
/// … and full kernels of sides 4–5 on 3–4 channels (the deinterleaving integer kernel) below
/// this many (RGB 640×360 / 853×480 8.9 / 10.0 µs against 10.1 / 16.2, RGBA 10.0 / 11.8 against
/// 11.8 / 15.9; at 720p the integer kernel, 12.8 / 14.8 against 13.3 / 15.3; gray, NV12 and
/// side 3 lose with the tiled kernel at every size). 16-bit samples take it there too, in place
/// of the register kernel (twenty-second round, gaussian:5, 640×360 / 853×480: rgb48 8.5 / 9.9
/// µs against 9.8 / 12.4, RGBA64 10.2 / 12.0 against 10.8 / 14.9; at 720p 1.04 / 1.09× faster
/// with two rows, 0.88× with one for RGBA64, at 1080p 0.90–0.98×; gray16, YUV 4:2:0 10-bit and
/// side 3 lost at every size).
pub const FULL_TILED_5_MAX_PLANE: usize = 600_000;

/// Whether a full plan of `side` taps on a plane of `ch` channels of `sb`-byte samples and
/// `pixels` pixels takes the tiled kernel ([`FULL_TILED_RGB_MAX_PLANE`] and the constants after
/// it: on small planes the other kernels have too few threads): at sides 4–5 in place of the
/// integer kernel (8-bit) or the register kernel (16-bit), at 6–7 (8-bit) in place of the (f32)
/// register kernel, the ones measured, and for one channel of 16-bit samples at 6–7 on launches
/// of fewer than [`REG16_FULL_MIN_SAMPLES`] samples (`samples`; [`REG_MAX_FULL_GRAY16`]); an
/// integer kernel at 6–7 and the 8-bit register kernel at 4–5 keep their planes. Never while
/// `CONVFLOW_FAST_REG_MAX` or `CONVFLOW_FAST_INT_MAX` sets their reach.
pub fn full_tiled_first(side: usize, ch: usize, sb: usize, pixels: usize, samples: usize) -> bool {
    let t = tuning();
    if t.reg_max.is_some() || t.int_max.is_some() {
        return false;
    }
    if (sb, ch) == (2, 1) && (6..=REG_MAX_FULL_GRAY16).contains(&side) {
        return samples < REG16_FULL_MIN_SAMPLES;
    }
    if sb != 1 && !(4..=5).contains(&side) {
        return false;
    }
    match side {
        6..=7 if ch == 3 => pixels < FULL_TILED_RGB_MAX_PLANE,
        6..=7 if ch >= 4 => pixels < FULL_TILED_RGBA_MAX_PLANE,
        6..=7 => pixels < FULL_TILED_NARROW_MAX_PLANE,
        4..=5 => ch >= 3 && pixels < FULL_TILED_5_MAX_PLANE,
        _ => false,
    }
}

/// The block the full tiled kernel `fast_full` tries first for 4 channels from a side of 9, tall
/// and narrow (H100, gaussian:9 / 15 / 25, RGBA on 4K: 192.5 / 482.5 / 1104 µs against 202.4 /
/// 542.5 / 1476 for the 16 × 4 and 16 × 8 blocks chosen by size; RGBA64 236.4 / 516.4 / 1124
/// against 238.9 / 587.1 / 2049; within 5 % of the best of 11 shapes but for 1080p RGBA 9, 9 %).
pub const FULL_BLOCK_RGBA: (u32, u32) = (8, 32);

/// The block `fast_full` tries first for 3 channels of 16-bit samples (rgb48) at
/// [`FULL_RGB48_BLOCK_SIDES`], half as tall as the 32 × 8 chosen by size (H100, gaussian:6 / 7 /
/// 8, µs, on 4K 81.8 / 96.4 / 108.0 against 86.1 / 99.2 / 113.4, on 8K 270.6 / 328.5 / 370.1
/// against 296.9 / 351.7 / 409.2; at 10 and 11 it lost 13–18 %; docs/PERFORMANCE.md,
/// "twenty-eighth round") …
pub const FULL_BLOCK_RGB48: (u32, u32) = (32, 4);
/// … at these sides.
pub const FULL_RGB48_BLOCK_SIDES: std::ops::RangeInclusive<usize> = 6..=8;

/// The block `fast_full` tries first for one channel of 16-bit samples (gray16, the planes of
/// YUV 10-bit) at [`FULL_ONE16_BLOCK_SIDES`] where the frame's largest such plane has at least
/// [`FULL_ONE16_BLOCK_MIN_PIXELS`] pixels ([`full_one16_block`]) and the launch takes 4 rows a
/// thread ([`FULL_ROWS`]; gray16 frames of 4.0–6.3 M pixels take 2, [`full_rows_mid16`], and
/// keep the block chosen by size): half as wide as the 32 × 8 chosen by size. Only frames
/// whose filtered planes all have one channel take it (the launch decides: P010's and P016's
/// luma keep the block chosen by size, since their chroma's decides whether the two planes
/// share a launch; not measured there). H200, gaussian:8 / 9 full, µs, 32 × 8 against
/// 16 × 8, two passes alternating, best of each (docs/PERFORMANCE.md, "sixty-fourth round"): 4K
/// gray16 39.4 / 43.4 → 37.4 / 41.4, YUV 4:2:0 10-bit 56.5 / 63.5 → 54.6 / 60.9; 8K 1.01–1.03×
/// (gray16 `:9` 141.3 → 138.4, YUV 4:2:0 10-bit 218.0 → 212.3); on 1080p 0.99–1.05×, so it
/// keeps the block chosen by size. (r64b.sh, 4K `:9`: of 21 shapes of 1–4 rows, 16 × 8 of 4 was
/// the fastest; `:7` takes the register kernel there.)
pub const FULL_BLOCK_ONE16: (u32, u32) = (16, 8);
/// See [`FULL_BLOCK_ONE16`].
pub const FULL_ONE16_BLOCK_SIDES: std::ops::RangeInclusive<usize> = 8..=9;
/// See [`FULL_BLOCK_ONE16`] (a 4K plane has 8.3 M pixels, 1080p 2.1 M).
pub const FULL_ONE16_BLOCK_MIN_PIXELS: usize = 4_000_000;

/// Whether a full plan `side` taps a side on planes of `ch` channels of `sb`-byte samples,
/// the frame's largest of them `group_pixels` pixels, tries [`FULL_BLOCK_ONE16`] first (all of
/// a frame's planes of one kind alike, so that a YUV frame's three stay in one launch).
pub fn full_one16_block(ch: usize, sb: usize, side: usize, group_pixels: usize) -> bool {
    (ch, sb) == (1, 2)
        && FULL_ONE16_BLOCK_SIDES.contains(&side)
        && group_pixels >= FULL_ONE16_BLOCK_MIN_PIXELS
}
