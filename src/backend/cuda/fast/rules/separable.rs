//! The measured rules of the separable tiled kernel `fast_sep`'s launch shape: which plans take
//! it before the register and integer kernels, its blocks, rows and samples per thread, row-pass
//! items and launch bounds, by channels, sample size, kernel side, plane size, the planes a
//! frame filters and (one rule) the device's memory rate (what its code compiles in beyond
//! that: [`separable_code`](super::separable_code)).

use super::separable_code::{sep_rolled, SEP_STAGED_MIN_SAMPLES};

/// Separable plans from this side on take the tiled kernel `fast_sep`, its row pass from
/// global memory, before the register and integer kernels (H100, gaussian:7 on 1080p / 4K /
/// 8K: gray 7.9 / 17.4 / 66.2 µs against 10.9 / 21.3 / 68.1 for the two-factor integer kernel,
/// NV12 15.6 / 29.6 / 97.8 against 18.2 / 33.3 / 100.0, box:7 gray 7.9 / 17.5 / 66.2 against
/// 11.2 / 21.3 / 68.9 for the integer kernels; RGB, RGBA and 16-bit tie) …
pub const SEP_TILED_MIN_SIDE: usize = 6;
/// … and from this side for 16-bit samples, or on planes under [`SEP_SMALL_PLANE`] pixels
/// (gaussian:5 on 1080p: gray 7.5 against 8.9 µs, RGB 14.2 against 17.9, RGBA 17.1 against 23.6,
/// NV12 13.8 against 14.8; rgb48 20.0 / 67.4 / 227.7 against 31.2 / 86.9 / 303.5 on 1080p / 4K /
/// 8K; on 4K and 8K the 8-bit integer kernels tied or won then, gray 8K 42.1 against 61.5),
/// and on larger 8-bit planes but RGBA's since (below). At side 3 the register and integer
/// kernels win everywhere (4K gray 10.5 against 14.0 µs).
pub const SEP_TILED_MIN_SIDE_SMALL: usize = 4;
/// See [`SEP_TILED_MIN_SIDE_SMALL`] (a 1080p plane has 2.1 M pixels, a 4K one 8.3 M).
///
/// On larger planes too, with padded rows of sums, for every 8-bit plane but RGBA's
/// ([`sep_rgba_large`]); measured with both row passes (`gaussian:4`'s factor is irrational
/// and takes the f32 one, `gaussian:5`'s the integer one). H100, held clock, gaussian:4 / :5,
/// µs, the integer and register kernels against `fast_sep` (docs/PERFORMANCE.md,
/// "twenty-seventh round"): 4K RGB 43.5 / 42.4 against 35.7 / 35.3, 8K RGB 143.6 / 128.9
/// against 111.4 / 111.2, 4K gray 17.6 / 15.6 against 15.5 / 15.0, 4K YUV 4:2:0 27.7 / 25.7
/// against 21.5 / 20.7, 4K NV12 26.9 / 26.4 against 24.6 / 25.7; RGBA keeps the integer
/// kernel (4K :5 51.2 against 56.5; H200, fifty-ninth round, 4K / 8K 37.5 / 136.3 against
/// 44.3 / 161.3). One and two channels kept it on 8K-sized planes (gray :5 41.3 against 47.9
/// then) until `fast_sep` took 18 % and then 6 % fewer instructions a sample (fifty-first and
/// fifty-third rounds): H200, 8K gaussian:5, µs, against the integer kernel (docs/PERFORMANCE.md,
/// "fifty-ninth round"): gray 30.2 against 36.1, YUV 4:2:0 46.2 against 55.0, NV12 52.1
/// against 56.7. The rule goes by the frame's largest plane of as many channels, so that
/// YUV's three planes stay in one launch.
pub const SEP_SMALL_PLANE: usize = 4_000_000;
/// … but separable plans whose larger side is 4 with an integer form (`box:4`) on one or two
/// 8-bit channels keep the integer kernel `fast_int` on planes of this many pixels and more
/// (the frame's largest of as many channels): H200, `box:4`,
/// µs, `fast_sep` against it (docs/PERFORMANCE.md, "fifty-ninth round"): 8K gray 32.6 against
/// 31.6, NV12 53.2 against 51.1, YUV 4:2:0 48.8 against 46.9; 6144 × 3456 (21 M pixels) NV12
/// 36.4 against 35.2, YUV 4:2:0 32.9 against 32.2, gray level.
pub const SEP_INT4_MIN_PLANE: usize = 16_000_000;

/// Whether a separable plan whose larger side is `side`, of `ch` channels of `sb`-byte samples
/// on planes whose largest (of the frame's with `ch` channels) has `pixels`, takes `fast_int`
/// where it can before `fast_sep` ([`SEP_INT4_MIN_PLANE`]; not with
/// `CONVFLOW_FAST_SEP_TILED_MIN` set).
pub fn sep_int_first(side: usize, ch: usize, sb: usize, pixels: usize) -> bool {
    side == 4
        && sb == 1
        && ch <= 2
        && pixels >= SEP_INT4_MIN_PLANE
        && super::tuning().sep_tiled_min.is_none()
}

/// Output rows per thread of the separable tiled kernel `fast_sep` with its row pass from global
/// memory ([`FastSpec::row_global`](super::super::FastSpec::row_global)) … (H100, 1080p and 4K,
/// gaussian:7…25: RGB 1.0–1.27× faster than 2 rows, e.g. 4K gaussian:9 57.7 against 66.6 µs)
pub const SEP_ROWS: usize = 4;
/// … and for 4 channels (RGBA 4K gaussian:9: 85.1 against 115 µs with 4 rows) …
pub const SEP_ROWS_RGBA: usize = 2;
/// … but for 8-bit RGBA taller than 9 on planes of at least [`SEP_SMALL_PLANE`] pixels
/// ([`sep_rgba_large`]), with 3 blocks resident ([`sep_min_blocks`]). H100, gaussian, 4K / 8K,
/// µs, against the rule before (2 rows; 3 blocks, 2 from 16 taps; docs/PERFORMANCE.md, "tenth
/// round"): 11 103.7 / 376.8 against 108.5 / 409.9, 13 107.4 / 389.4 against 114.8 / 434.4,
/// 15 113.6 / 406.8 against 121.1 / 455.7, 25 172.6 / 593.6 against 200.4 / 749.3 (2 rows with
/// 3 blocks: 186.7 / 673.3). On 1080p the rule before stays best (25: 58.6 µs; 4 rows 61.5).
/// Only square kernels were measured; the rule goes by the height, as the block does.
pub const SEP_ROWS_RGBA_LARGE: usize = 4;
/// … but [`SEP_ROWS_RGBA`] (2) at this height with alpha kept, where ptxas 13.0 keeps about
/// 200 registers a thread with 4 rows (93 at 11 taps, 96 at 10 with alpha filtered: its
/// schedule, not the code, differs). On the H100, before `fast_sep` left a kept alpha's sums
/// out, one row won there (gaussian:10, µs, 4 / 2 / 1 rows, docs/PERFORMANCE.md, "forty-second
/// round": 4K 99.5 / 119.5 / 81.7, 8K 363.7 / 447.5 / 302.0); on the H200 without them two
/// rows win (8 × 32, 4 / 2 / 1 rows, one pass, "sixty-fourth round": 4K 90.6 / 50.8 / 64.4, 8K
/// 344.9 / 187.3 / 246.7; 8 × 16 of 2 rows 52.3 / 192.7).
pub const SEP_RGBA_LARGE_TWO_ROW_HEIGHT: usize = 10;

/// Rows per thread of 8-bit RGBA on large planes ([`sep_rgba_large`]) `kh` taps high, all of
/// its channels filtered or not: [`SEP_ROWS_RGBA_LARGE`], or two
/// ([`SEP_RGBA_LARGE_TWO_ROW_HEIGHT`]).
pub fn sep_rows_rgba_large(kh: usize, all_filtered: bool) -> usize {
    if kh == SEP_RGBA_LARGE_TWO_ROW_HEIGHT && !all_filtered {
        SEP_ROWS_RGBA
    } else {
        SEP_ROWS_RGBA_LARGE
    }
}

/// 16-bit RGBA (RGBA64) with alpha kept (`--alpha keep`, the default: no sums for it) on planes
/// of at least [`SEP_SMALL_PLANE`] pixels (where [`sep_small_shape`] has no shape) at this
/// height takes [`SEP_BLOCK`] and [`SEP_ROWS`] (4) rows a thread, not [`SEP_BLOCK_TALL_RGBA`]
/// and [`SEP_ROWS_RGBA`] (2) …
pub const SEP_RGBA64_LARGE_MID_HEIGHT: usize = 15;
/// … and at these 4 × 32 with 4 rows; rgb48 there at [`SEP_RGB48_LARGE_MID`] 16 × 8
/// ([`SEP_BLOCK_WIDE_GRAY`]), rows as before (4). H200, gaussian separable, µs, the rules
/// before against these (docs/PERFORMANCE.md, "sixty-fourth round"; first found in one pass
/// over 4 × 32 / 8 × 16 / 8 × 32 / 16 × 8 / 16 × 16 / 8 × 8 threads of 1 / 2 / 4 / 6 rows, then
/// two passes alternating, best of each), 4K / 8K: RGBA64 `:15` 83.7 / 310.2 → 80.2 / 281.7,
/// `:20` 101.4 / 378.6 → 88.2 / 309.9, `:25` 118.9 / 443.2 → 101.3 / 355.0; rgb48 `:10` /
/// `:11` / `:12` 1.02–1.03 / 1.10–1.11 / 1.04–1.05× (`:11` 62.4 / 205.6 → 56.3 / 187.2).
/// Left as they were: RGBA64 at 13 (8 × 16 of 4 rows 0.96× on 4K, 1.02× on 8K), at 11 (the
/// sweep's best as it was) and at 12, 14 and 16–19 (not measured in other shapes); rgb48
/// from 13 (15 and 25 the sweep's best as they were; 13 not measured in 16 × 8). RGBA64
/// 21–24 lie between two measured gains and were not measured; with alpha filtered (a
/// quarter more sums) none of these was measured, and those plans keep the rules before.
pub const SEP_RGBA64_LARGE_TALL: std::ops::RangeInclusive<usize> = 20..=25;
/// See [`SEP_RGBA64_LARGE_TALL`].
pub const SEP_RGB48_LARGE_MID: std::ops::RangeInclusive<usize> = 10..=12;

/// The block and rows per thread of a separable plan `kh` taps high on a plane of `pixels`
/// pixels of `ch` channels of 16-bit samples (`sb`), with alpha kept (4 channels) or not,
/// where [`SEP_RGBA64_LARGE_TALL`]'s rules say; None elsewhere.
pub fn sep_large16_shape(
    (ch, sb): (usize, usize),
    kh: usize,
    pixels: usize,
    alpha_kept: bool,
) -> Option<((u32, u32), usize)> {
    if sb != 2 || pixels < SEP_SMALL_PLANE {
        return None;
    }
    match ch {
        4 if alpha_kept && kh == SEP_RGBA64_LARGE_MID_HEIGHT => Some((SEP_BLOCK, SEP_ROWS)),
        4 if alpha_kept && SEP_RGBA64_LARGE_TALL.contains(&kh) => {
            Some((SEP_BLOCK_TALL_RGBA, SEP_ROWS))
        }
        3 if SEP_RGB48_LARGE_MID.contains(&kh) => Some((SEP_BLOCK_WIDE_GRAY, SEP_ROWS)),
        _ => None,
    }
}

/// Output rows per thread of `fast_sep` on one-channel planes (gray, the planes of YUV, P016's
/// luma) on launches of at least [`SEP_ROWS_TALL_MIN_SAMPLES`] samples: 8 for 8-bit samples
/// from [`SEP_ROWS_TALL_8_MIN_SIDE`] taps high …
pub const SEP_ROWS_TALL: usize = 8;
/// … 6 for 16-bit ones from [`SEP_ROWS_TALL_MIN_SIDE`]. H100, held clock, gaussian:11 / :15 /
/// :25 separable against 4 rows, µs (docs/PERFORMANCE.md, "twenty-seventh round"): 8K gray 57.5
/// / 66.0 / 101.4 → 52.5 / 60.2 / 89.3, 8K YUV 4:2:0 88.1 / 101.2 / 152.6 → 81.3 / 91.3 /
/// 134.5, 4K gray 1.03–1.05×, 4K YUV 4:2:0 1.05–1.07×; 16-bit with 6 rows: 8K gray16
/// 1.05–1.09×, YUV 4:2:0 10-bit 1.06–1.08×, 4K 1.00–1.03×. At 1080p (gray 0.86–0.91× with 8
/// rows) 4 rows stay; NV12 lost with either count on its two-channel plane, which keeps 4.
/// At 10 taps (forty-third round, two passes alternating, 4 / 6 rows): gray16 on 4K / 5K / 8K
/// 1.02 / 1.05 / 1.05× (8K 71.4 → 68.0 µs), YUV 4:2:0 10-bit 1.00 / 1.05 / 1.04×.
pub const SEP_ROWS_TALL_16: usize = 6;
/// See [`SEP_ROWS_TALL_16`].
pub const SEP_ROWS_TALL_MIN_SIDE: usize = 10;
/// See [`SEP_ROWS_TALL`]; 8-bit planes 10 taps high take [`SEP_ROWS_MID`].
pub const SEP_ROWS_TALL_8_MIN_SIDE: usize = 11;
/// See [`SEP_ROWS_TALL`] (a 4K one-channel plane has 8.3 M samples, 4K YUV 4:2:0 12.4 M, 1080p
/// YUV 4:2:0 3.1 M).
pub const SEP_ROWS_TALL_MIN_SAMPLES: usize = 4_000_000;
/// 8-bit one-channel planes take this many rows 10 taps high on launches of
/// [`SEP_ROWS_TALL_MIN_SAMPLES`], and [`SEP_ROWS_MID_MIN_SIDE`]–9 taps high on launches of
/// [`SEP_ROWS_MID_MIN_SAMPLES`] (of [`SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY`] on devices of fast
/// memory). H100, held clock, gaussian separable, rows 4 (the rule before) / 6 / 8, two passes
/// alternating, µs (docs/PERFORMANCE.md, "forty-third round"):
/// - 10 taps: gray 4K 18.1 / 16.5 / 17.5, 5K (5120 × 2880) 28.6 / 25.8 / 26.5, 8K 55.7 / 51.4 /
///   51.1; YUV 4:2:0 4K / 5K / 8K 1.10 / 1.09 / 1.08× with 6, 1.04–1.05× with 8;
/// - 5–9 taps with 6 rows: YUV 4:2:0 (one launch: 12.4 M samples on 4K) 1.03–1.08× on 4K,
///   1.04–1.10× on 5K, 1.06–1.13× on 8K (`:7` 70.0 → 62.1 µs); gray 1.01–1.04× on 5K
///   (14.7 M), 1.01–1.07× on 8K (`:7` 42.4 → 40.2; 8 rows 39.1 but 0.96× on 5K `:8`); at 5 taps
///   level on gray 5K (8K's one-channel 5-tap plans take the integer kernel);
/// - on 4K gray (8.3 M samples) 5–9 taps were 0.93–1.02× with 6 and slower with 8; 16-bit
///   samples at 5–9 (gray16, YUV 4:2:0 10-bit) 0.96–1.01× on 4K and 5K (8K 0.99–1.04×), so
///   they keep 4. P010's luma was measured only with its chroma plane's rows changed too.
pub const SEP_ROWS_MID: usize = 6;
/// See [`SEP_ROWS_MID`].
pub const SEP_ROWS_MID_MIN_SIDE: usize = 5;
/// See [`SEP_ROWS_MID`].
pub const SEP_ROWS_MID_MIN_SAMPLES: usize = 12_000_000;
/// [`SEP_ROWS_MID`]'s launches from 5 to 9 taps high on devices of fast memory
/// ([`fast_memory`](super::fast_memory)), where `fast_sep` waits less on memory and what 6 rows
/// a thread save (a block's halo rows summed once for 6 output rows, not 4) pays from smaller
/// launches. H200 (18.4 bytes a multiprocessor cycle), this rule's build against the one
/// before, three passes alternating, best of each, `gaussian` and `box` 5–9 separable
/// (docs/PERFORMANCE.md, "sixtieth round"): gray 1440p (3.7 M samples) 1.01–1.15×, 3200 × 1800
/// (5.8 M) 1.03–1.08×, 4K (8.3 M) 1.02–1.09× (`gaussian:7` 11.5 → 10.9 µs); YUV 4:2:0 (one
/// launch of 1.5× the luma's samples) 1080p 1.08–1.19× (`:7` 6.8 → 6.2), 1440p 1.02–1.10×,
/// 3200 × 1800 1.07–1.10×; NV12's luma 1440p 1.02–1.10×, 3200 × 1800 1.00–1.03×, 4K
/// 1.02–1.05×. Unchanged and level: 720p and 1080p gray (1080p, 2.1 M samples: 6 rows lost
/// there, `box:5`–`:9` 0.90–0.92× by the tuning variables), 4K YUV 4:2:0 (6 rows before). The
/// H100 (about 12.8 bytes) measured 0.93–1.02× on 4K gray (forty-third round), so it keeps the
/// rule before.
pub const SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY: usize = 3_000_000;
/// 8-bit one-channel launches [`SEP_ROWS_MID_MIN_SIDE`]–9 taps high of at least this many
/// samples take [`SEP_ROWS_TALL`] (8) rows on devices of fast memory, not [`SEP_ROWS_MID`]'s 6:
/// H200, gaussian:5–9 separable, µs, 6 rows against 8, two passes alternating, best of each
/// (docs/PERFORMANCE.md, "sixty-fourth round"): 8K YUV 4:2:0 (one launch of 49.8 M samples)
/// 1.026–1.042× (`:7` 48.8 → 47.0, `:9` 53.4 → 51.3); 8K gray (33.2 M) 0.99–1.03×, 5K YUV
/// 4:2:0 (22.1 M) 1.00–1.02×, 4K gray and YUV 4:2:0 0.96–1.02×, so those keep 6. Larger
/// launches than 8K YUV 4:2:0's (8K 4:2:2 and 4:4:4, 5K 4:4:4, gray frames over 40 M pixels)
/// take it unmeasured.
pub const SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY: usize = 40_000_000;

/// The rows per thread [`SEP_ROWS_TALL`], [`SEP_ROWS_TALL_16`] and [`SEP_ROWS_MID`] give a
/// separable launch of `samples` samples on planes of `ch` channels of `sb`-byte samples, `kh`
/// taps high, on a device of fast memory or not ([`fast_memory`](super::fast_memory)); None
/// where the rule before stays.
pub fn sep_rows_tall(
    ch: usize,
    sb: usize,
    kh: usize,
    samples: usize,
    fast_memory: bool,
) -> Option<usize> {
    if ch != 1 {
        return None;
    }
    let tall = samples >= SEP_ROWS_TALL_MIN_SAMPLES;
    let mid = samples
        >= if fast_memory {
            SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY
        } else {
            SEP_ROWS_MID_MIN_SAMPLES
        };
    let eight = fast_memory && samples >= SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY;
    match sb {
        1 if tall && kh >= SEP_ROWS_TALL_8_MIN_SIDE => Some(SEP_ROWS_TALL),
        1 if tall && kh >= SEP_ROWS_TALL_MIN_SIDE => Some(SEP_ROWS_MID),
        1 if eight && (SEP_ROWS_MID_MIN_SIDE..SEP_ROWS_TALL_MIN_SIDE).contains(&kh) => {
            Some(SEP_ROWS_TALL)
        }
        1 if mid && (SEP_ROWS_MID_MIN_SIDE..SEP_ROWS_TALL_MIN_SIDE).contains(&kh) => {
            Some(SEP_ROWS_MID)
        }
        2 if tall && kh >= SEP_ROWS_TALL_MIN_SIDE => Some(SEP_ROWS_TALL_16),
        _ => None,
    }
}

/// Whether a separable plan on a plane of `ch` channels of `sb`-byte samples and `pixels`
/// pixels takes the large planes' RGBA rules ([`SEP_ROWS_RGBA_LARGE`], [`sep_min_blocks`]).
pub fn sep_rgba_large(ch: usize, sb: usize, pixels: usize) -> bool {
    (ch, sb) == (4, 1) && pixels >= SEP_SMALL_PLANE
}

/// The block `fast_sep` tries first with its row pass from global memory: 8 × 16 threads was
/// within 7 % of the best of 11 shapes at every measured point (gray, gray16, NV12, RGB, RGBA,
/// RGBA64 on 1080p and 4K, gaussian:7…25; docs/PERFORMANCE.md, "seventh round") …
pub const SEP_BLOCK: (u32, u32) = (8, 16);
/// … but for 4 channels taller than 9, 4 × 32, within 9 % of the best there (RGBA gaussian:25
/// 66.0 / 221 µs on 1080p / 4K against 76.6 / 252 for 8 × 16) …
pub const SEP_BLOCK_TALL_RGBA: (u32, u32) = (4, 32);
/// … and 8 × 32 where the large planes' RGBA rules apply ([`sep_rgba_large`], taller than 9):
/// H100, gaussian:11 / 13 / 19 / 25, µs, against 4 × 32 (docs/PERFORMANCE.md, "fourteenth
/// round"): 4K 69.1 / 74.5 / 92.7 / 113.4 against 76.6 / 82.5 / 110.3 / 135.8, 8K 250.4 / 265.4
/// / 320.2 / 381.6 against 265.2 / 284.5 / 390.5 / 482.3. On 1080p and 1440p it lost 1–7 %.
pub const SEP_BLOCK_RGBA_LARGE: (u32, u32) = (8, 32);
/// … but [`SEP_BLOCK`] there at these heights with alpha kept (`--alpha keep`, the default), whose
/// sums `fast_sep` no longer keeps (sixty-second round on): H200, gaussian separable, µs, 8 × 32
/// against 8 × 16, two passes alternating, best of each (docs/PERFORMANCE.md, "sixty-fourth
/// round"): `:11` / `:13` / `:15` / `:19` on 4K 54.8 / 59.3 / 63.1 / 74.0 → 47.7 / 52.1 / 54.9 /
/// 67.1, 5K 1.13–1.18×, 8K 204.5 / 222.1 / 232.6 / 273.0 → 171.3 / 187.2 / 198.5 / 243.4; at 25
/// 8 × 16 lost 1–3 % (8K 317.7 against 326.4), and at 10 ([`SEP_RGBA_LARGE_TWO_ROW_HEIGHT`]) 8 × 32
/// of two rows was the fastest, so 10 and from 20 keep 8 × 32 (20–24 not measured in 8 × 16). 12,
/// 14 and 16–18 lie between measured gains and were not measured; with alpha filtered (a quarter
/// more sums, as when the 8 × 32 rule was measured) nothing was, and those plans keep 8 × 32.
pub const SEP_RGBA_LARGE_BLOCK16_HEIGHTS: std::ops::RangeInclusive<usize> = 11..=19;

/// The block of a separable plan `kh` taps high under the large planes' RGBA rules
/// ([`sep_rgba_large`], taller than 9), with alpha kept or not: [`SEP_BLOCK_RGBA_LARGE`] or,
/// with alpha kept at [`SEP_RGBA_LARGE_BLOCK16_HEIGHTS`], [`SEP_BLOCK`].
pub fn sep_rgba_large_block(kh: usize, alpha_kept: bool) -> (u32, u32) {
    if alpha_kept && SEP_RGBA_LARGE_BLOCK16_HEIGHTS.contains(&kh) {
        SEP_BLOCK
    } else {
        SEP_BLOCK_RGBA_LARGE
    }
}
/// … and 16 × 8 for one to three channels of 16-bit samples under kernels of 4–5 taps a side
/// (measured square) where the frame's
/// largest plane of that many channels has at least [`SEP_SMALL_PLANE`] pixels, its smaller
/// planes alike so that they stay in one launch (4K YUV 4:2:0 10-bit with the luma alone in
/// 16 × 8 blocks ran 0.87–0.89× as fast, in two launches). H100, held clock, gaussian:4 / :5,
/// µs, against 8 × 16 (docs/PERFORMANCE.md, "twenty-seventh round"): 4K rgb48 67.7 / 67.4 →
/// 49.3 / 50.7, 8K rgb48 244.0 / 236.3 → 164.9 / 167.1, 4K gray16 18.5 / 19.0 → 17.8 / 18.1,
/// 8K gray16 60.8 / 62.5 → 55.0 / 56.4 …
pub const SEP_BLOCK_SHORT16: (u32, u32) = (16, 8);
/// Whether [`SEP_BLOCK_SHORT16`] applies to a kernel whose larger side is `side` (`pixels`:
/// the largest plane's).
pub fn sep_short16(ch: usize, sb: usize, side: usize, pixels: usize) -> bool {
    sb == 2 && ch <= 3 && (4..=5).contains(&side) && pixels >= SEP_SMALL_PLANE
}
/// … and 16 × 16 for one 16-bit channel stored from bit 0, 6–9 taps high, where it is the
/// frame's one filtered plane (gray16, gray10, gray12, and a YUV frame's luma under `--planes
/// luma`, the same plane: no other plane shares the launch or pairs with it) of at least
/// [`SEP_SQUARE16_MIN_SAMPLES`] samples: a block twice as wide (64 × 64 outputs, not 32 × 64)
/// loads and sums fewer halo columns per output. H200, this rule's build against the one
/// before (8 × 16), three passes
/// alternating, best of each, gaussian:6–9 (docs/PERFORMANCE.md, "sixtieth round"): gray16
/// 1440p 1.03×, 4K 1.04–1.05× (`:7` 17.8 → 17.0 µs), 8K 1.07–1.10× (`:7` 57.5 → 53.4); gray10
/// 1.01–1.02 / 1.01–1.03 / 1.03–1.08×. By the tuning variables, 720p and 1080p lost
/// (0.89–0.99×), 11 taps and up ran 0.94–1.03× from 1440p, and frames of more planes all in
/// 16 × 16 lost:
/// YUV 4:2:0 10-bit 0.93–0.97× on 4K and 8K, 4K P010 0.92–0.93× (with its luma alone in 16 ×
/// 16 it would take two launches, not one pair). P010's and P012's shifted samples were not
/// measured alone.
pub const SEP_BLOCK_SQUARE16: (u32, u32) = (16, 16);
/// See [`SEP_BLOCK_SQUARE16`] (a 1440p plane has 3.7 M samples, a 1080p one 2.1 M).
pub const SEP_SQUARE16_MIN_SAMPLES: usize = 3_500_000;
/// Whether [`SEP_BLOCK_SQUARE16`] applies to a separable launch `kh` taps high of `samples`
/// samples on planes of `ch` channels of `sb`-byte samples, the frame's one filtered plane
/// with its samples stored from bit 0 (`one_plane`) or not.
pub fn sep_square16(ch: usize, sb: usize, kh: usize, samples: usize, one_plane: bool) -> bool {
    (ch, sb) == (1, 2) && (6..=9).contains(&kh) && one_plane && samples >= SEP_SQUARE16_MIN_SAMPLES
}
/// … and 16 × 8 for one 8-bit channel from 4 to 9 taps high ([`sep_wide`]): with each
/// block's input rows copied whole to shared memory (twenty-fifth round on), a block twice as
/// wide copies fewer halo bytes per output. H100, held clock, gaussian:4 / 5 / 7 / 9, against
/// 8 × 16 (docs/PERFORMANCE.md, "twenty-ninth round"): gray 1.05–1.07× on 1080p, 1.04–1.13× on
/// 4K (7: 15.3 → 14.4 µs), 8K 7 / 9 1.12 / 1.08× (48.6 → 43.4 µs); YUV 4:2:0 (the chroma planes
/// in the same launch) 0.98–1.05×. From 11 taps it lost 1–4 %, and on RGB, 16-bit and two
/// channels 16 × 8 lost up to 28 % (two channels: NV12's chroma plane on 4K and 8K, on its own;
/// on smaller frames, where it then shares the luma plane's launch, see
/// [`SEP_WIDE_CHROMA_BELOW_PIXELS`]) …
pub const SEP_BLOCK_WIDE_GRAY: (u32, u32) = (16, 8);

/// … and for NV12's interleaved chroma (two 8-bit channels) 4–9 taps high and at most
/// [`PAIR_SEP_MAX_SIDE`](super::PAIR_SEP_MAX_SIDE) wide, on planes under
/// [`SEP_WIDE_CHROMA_BELOW_PIXELS`] (frames under about 4 M pixels): the luma plane's 16 × 8, so
/// that the frame's two planes take one launch ([`paired`](super::paired); with 8 × 16 on the
/// chroma plane the blocks differ and they run side by side). H100, gaussian:4–9 separable, µs,
/// two passes alternating, best of each, the rule before / this (docs/PERFORMANCE.md,
/// "fiftieth round"): 720p 1.08–1.24× (5: 6.6 → 5.3), 1080p 1.17–1.23× (7: 10.1 → 8.2), 1440p
/// 1.02–1.17×; on 4K (a 2.1 M-pixel chroma plane) 0.93–1.01×, so larger planes keep 8 × 16 and
/// two launches. Both planes 16 × 8 side by side (as `CONVFLOW_FAST_PAIR=0` leaves them)
/// measured 0.96–1.03× the rule before: the gain is the one launch.
pub const SEP_WIDE_CHROMA_BELOW_PIXELS: usize = 1_000_000;

/// Whether [`SEP_BLOCK_WIDE_GRAY`] applies to a separable plan `kw` × `kh` taps over `ch`
/// channels of `sb`-byte samples on a plane of `pixels` pixels.
pub fn sep_wide(ch: usize, sb: usize, (kw, kh): (usize, usize), pixels: usize) -> bool {
    (4..=9).contains(&kh)
        && match (ch, sb) {
            (1, 1) => true,
            (2, 1) => kw <= super::PAIR_SEP_MAX_SIDE && pixels < SEP_WIDE_CHROMA_BELOW_PIXELS,
            _ => false,
        }
}

/// … and 16 × 16 for 16-bit RGB (rgb48) from [`SEP_TILED_MIN_SIDE`] to 9 taps high
/// ([`sep_rgb48_wide`]; smaller planes take [`sep_small_shape`]'s): H100, gaussian:7 / 9, µs, 4K
/// 58.9 / 63.3 against 65.1 / 68.7 for 8 × 16, 8K 185.3 / 197.7 against 212.9 / 220.7. On 4K
/// and 8K it lost 4–14 % from 11 to 19.
pub const SEP_BLOCK_WIDE_RGB48: (u32, u32) = (16, 16);

/// Whether a separable plan `kh` taps high of `ch` channels of `sb`-byte samples takes
/// [`SEP_BLOCK_WIDE_RGB48`] (where [`sep_small_shape`] has none).
pub fn sep_rgb48_wide(ch: usize, sb: usize, kh: usize) -> bool {
    (ch, sb) == (3, 2) && (SEP_TILED_MIN_SIDE..=9).contains(&kh)
}

/// Output rows per thread of `fast_sep` for 8-bit RGB on planes under [`SEP_SMALL_PLANE`]
/// pixels, taps up to 9 high ([`sep_rows_rgb_small`]): more threads beat fewer halo rows.
pub const SEP_ROWS_RGB_SMALL: usize = 2;

/// Whether a separable 8-bit RGB launch takes [`SEP_ROWS_RGB_SMALL`] rows: planes of `ch`
/// channels of `sb`-byte samples under [`SEP_SMALL_PLANE`] pixels (`pixels`), kernels up to 9
/// taps high (`kh`); with the exact integer row pass (`int_rows`) on every such launch, with
/// the f32 one where the launch has at least [`TILED_FEW_THREADS`](super::TILED_FEW_THREADS)
/// threads at the rule's rows (`threads`, [`tiled_threads`](super::tiled_threads)), so that
/// the small launches' rule ([`tiled_rows`](super::tiled_rows)) keeps the smaller ones as it
/// measured them (853×480 and 960×540 one row).
/// - The integer row pass: H100, gaussian:7 / 9 on 1080p: 15.9 / 17.6 µs against 17.6 / 19.5
///   with [`SEP_ROWS`]; on 4K they lost 5–7 % (docs/PERFORMANCE.md, "twenty-sixth round").
/// - The f32 one (the even Gaussians, and the odd ones with `CONVFLOW_FAST_SEPI=0` as for a
///   Gaussian of another σ): H100, best of two passes, against 4 rows, `gaussian:4` / `:6` /
///   `:8` 1.15 / 1.21 / 1.20× on 1080p (`:6` 18.2 → 15.1 µs), 1.07 / 1.09 / 1.08× on 1440p,
///   `:5` / `:7` / `:9` 1.16 / 1.16 / 1.19× and 1.05 / 1.06 / 1.08×; on 4K 0.95–1.00×; at 10–12
///   taps 0.93–0.99× on 1440p and 0.73–1.11× on 1080p (`:10` 1.11×, `:11` / `:12` 0.73 /
///   0.76×), so not there. 720p launches (57.6 K threads at 4 rows) took 2 rows by the small
///   launches' rule already (4 rows 0.77–0.83×), 640×360 one (2 rows 0.77–0.82×)
///   (docs/PERFORMANCE.md, "forty-fourth round").
pub fn sep_rows_rgb_small(
    ch: usize,
    sb: usize,
    kh: usize,
    pixels: usize,
    int_rows: bool,
    threads: usize,
) -> bool {
    (ch, sb) == (3, 1)
        && kh <= 9
        && pixels < SEP_SMALL_PLANE
        && (int_rows || threads >= super::TILED_FEW_THREADS)
}

/// Planes under this many pixels take the smallest planes' separable shapes of 16-bit RGB and
/// RGBA ([`sep_small_shape`]; a 720p plane has 0.92 M pixels, a 1080p one 2.1 M) …
pub const SEP_SMALLER_PLANE: usize = 1_000_000;
/// … and RGBA64 kernels taller than 15 take one row per thread below this many (640×360 and
/// 853×480, 0.23 M and 0.41 M pixels, gaussian:19 15.6 / 20.5 µs against 18.2 / 21.5 with two
/// rows; on 720p two, 31.1 against 35.6).
pub const SEP_RGBA64_ONE_ROW_BELOW: usize = 500_000;

/// The shape of rgb48 separable plans 4–5 taps high on planes under [`SEP_SMALL_PLANE`]
/// pixels ([`sep_small_shape`]): 16 × 8 blocks as on larger planes ([`SEP_BLOCK_SHORT16`]),
/// one row a thread, no launch bound, items of two threads' outputs. The rules before gave
/// these plans 8 × 16 blocks and [`SEP_ROWS`] rows (on 1080p and 1440p their launches have too
/// many threads for the small launches' rule, [`tiled_rows`](super::tiled_rows)), and 1080p
/// `gaussian:5` took 26.7 µs where `:3` took 14.8 and `:7` 20.1. H100, best of two passes,
/// µs, `:4` / `:5` against the rules before: 1080p 16.0 / 16.8 against 26.1 / 26.7, 1921×1081
/// 16.5 / 16.8 against 29.1 / 29.5, 1440p 24.7 / 25.8 against 37.3 / 38.3, 720p 9.9 / 10.1
/// against 10.5 / 11.1, 853×480 and 640×360 1.00–1.04×. Of 9 shapes (8 × 16, 16 × 8, 32 × 4;
/// 1 or 2 rows; bound or not) this one was within 3 % of the best from 720p up; 32 × 4 with
/// one row was 1.02–1.09× faster still on 853×480 and 640×360. One and two channels of
/// 16-bit samples lost 2–8 % in 16 × 8 blocks on these planes and RGBA64 tied, so they keep
/// their rules (docs/PERFORMANCE.md, "forty-fourth round").
pub const SEP_SHAPE_SHORT_RGB48: SepShape = SepShape {
    block: SEP_BLOCK_SHORT16,
    rows: 1,
    min_blocks: 0,
    row_threads: 2,
};

/// A launch shape of `fast_sep` with its row pass from global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SepShape {
    /// The block tried first.
    pub block: (u32, u32),
    /// Output rows per thread.
    pub rows: usize,
    /// Blocks of 128 threads resident per multiprocessor at least (as [`sep_min_blocks`]; 0:
    /// no launch bound).
    pub min_blocks: usize,
    /// Threads' outputs per row-pass item (as [`sep_row_threads`]).
    pub row_threads: usize,
}

/// The shape of a separable plan `kh` taps high over `ch` channels of `sb`-byte samples on a
/// plane of `pixels` pixels under [`SEP_SMALL_PLANE`], where the measured shape differs from
/// the rules made on 1080p and 4K: few threads per launch want more resident blocks (fewer
/// registers) and wider row-pass items (rgb48 4–5 taps high: no launch bound). None elsewhere
/// (the rules of [`sep_min_blocks`], [`sep_row_threads`] and the blocks and rows of `FastSpec`
/// apply).
/// - rgb48 4–5 taps high: [`SEP_SHAPE_SHORT_RGB48`].
/// - 8-bit RGBA taller than 9: 4 × 32, 2 rows, 5 blocks, items of 4.
/// - rgb48 from 6 taps high: 8 × 16 (4 × 32 taller than 15 under [`SEP_SMALLER_PLANE`]), one row
///   (two taller than 9 from [`SEP_SMALLER_PLANE`]), 5 blocks, items of 2.
/// - RGBA64 from 6 taps high under [`SEP_SMALLER_PLANE`]: 8 × 16 to 15 taps high, else 4 × 32;
///   one row (two taller than 15 from [`SEP_RGBA64_ONE_ROW_BELOW`]); 5 blocks, items of 2. On
///   larger planes, taller than 15 only: 4 × 32, 2 rows, 5 blocks, items of 2.
///
/// H100, gaussian:7…25, sizes 640×360, 853×480, 720p, 1080p and 1440p, 11–13 shapes swept,
/// best of two passes (docs/PERFORMANCE.md, "twenty-second round"): against the rules before,
/// 8-bit RGBA 1.04–1.33× faster (640×360 gaussian:25 14.9 against 19.9 µs, 1440p 66.3 against
/// 70.6), rgb48 0.99–1.40× (853×480 :19 14.2 against 19.0, 1080p :7 18.4 against 22.5), RGBA64
/// 1.00–1.48× (853×480 :15 14.7 against 21.0, 640×360 :25 19.0 against 27.5); geomean 1.07 /
/// 1.13 / 1.13. Items of 4 for 8-bit RGBA on 4K and 8K lost up to 11 % from 19 taps; 8-bit RGBA
/// to 9 taps high kept its rules (within 2 % of the best but at 1440p gaussian:5, 10 %).
pub fn sep_small_shape(ch: usize, sb: usize, kh: usize, pixels: usize) -> Option<SepShape> {
    if pixels >= SEP_SMALL_PLANE || kh < SEP_TILED_MIN_SIDE_SMALL {
        return None;
    }
    let smaller = pixels < SEP_SMALLER_PLANE;
    let shape = |block, rows, row_threads| SepShape {
        block,
        rows,
        min_blocks: 5,
        row_threads,
    };
    match (ch, sb) {
        (3, 2) if kh < SEP_TILED_MIN_SIDE => Some(SEP_SHAPE_SHORT_RGB48),
        _ if kh < SEP_TILED_MIN_SIDE => None,
        (4, 1) if kh > 9 => Some(shape(SEP_BLOCK_TALL_RGBA, 2, 4)),
        (3, 2) => {
            let block = if kh > 15 && smaller {
                SEP_BLOCK_TALL_RGBA
            } else {
                SEP_BLOCK
            };
            Some(shape(block, if smaller || kh <= 9 { 1 } else { 2 }, 2))
        }
        (4, 2) if smaller && kh <= 15 => Some(shape(SEP_BLOCK, 1, 2)),
        (4, 2) if kh > 15 => {
            let rows = if pixels < SEP_RGBA64_ONE_ROW_BELOW {
                1
            } else {
                2
            };
            Some(shape(SEP_BLOCK_TALL_RGBA, rows, 2))
        }
        _ => None,
    }
}

/// Blocks of 128 threads of `fast_sep` (row pass from global memory) resident per
/// multiprocessor at least, its `__launch_bounds__`, which caps its registers at
/// 65536 / (128 × this), by channels, bytes per sample and kernel side (≤ 7, ≤ 9, ≤ 15,
/// larger). Left to itself the compiler took 80–96 registers for one to three channels and
/// 167–225 for four; a sweep of 2–6 on 1080p and 4K (H100, gaussian:7…25, gray, gray16, NV12,
/// RGB, rgb48, RGBA with its alpha kept and RGBA64; docs/PERFORMANCE.md, "eighth round") gave
/// these, each within 3 % of the best at both sizes but 4K RGBA 25 (199.4 µs at 2 against
/// 187.2 at 3, which loses 10 % on 1080p): gray 4K gaussian:25 37.0 µs against 41.2 unbounded,
/// rgb48 183.0 against 213.9, RGBA64 gaussian:7 82.9 against 101.4. On large planes 8-bit RGBA
/// taller than 15 takes 3 (`large`, [`sep_rgba_large`], with [`SEP_ROWS_RGBA_LARGE`] rows; 4K
/// gaussian:25 172.6 µs against 182.9 with 2 and 201.4 with 4).
///
/// Measured again on this round's kernels (H100, held clock, separable gaussian 7 / 9 / 15 / 25,
/// 4, 5, 6 and 8 blocks against the rule on 1080p / 4K / 8K, two passes; then each change
/// against the rule on 720p to 8K, two passes; docs/PERFORMANCE.md, "thirty-eighth round").
/// Most entries were within 2 % of the best; four moved:
/// - 8-bit RGBA to 7 taps, 5 (was 4): 1.03 / 1.05 / 1.06 / 1.06× on 1080p / 1440p / 4K / 8K
///   (4K 61.0 → 57.6 µs), level on 720p;
/// - 8-bit RGB from 16 taps, 4 (was 3): 1.12 / 1.11 / 1.04 / 1.05× on 720p / 1080p / 1440p /
///   4K (4K `gaussian:25` 109.8 → 104.5 µs), 0.995× on 8K; rgb48 lost 2–8 % with 4;
/// - RGBA64 where [`sep_small_shape`] gives no shape: 8 (was 4) at 10–15 taps, that is from
///   1 M pixels, 1.02 / 1.01 / 1.04 / 1.08× on 1080p / 1440p / 4K / 8K (8K `gaussian:15` 406.1
///   → 375.2 µs); 6 (was 3) from 16 taps, that is from 4 M pixels, 1.04 / 1.05× on 4K / 8K
///   (8K `gaussian:25` 579.0 → 553.2 µs).
///
/// Not confirmed, so not taken: rgb48 at 10–15 taps with 5 (1.02–1.03× on 4K and 8K), one
/// channel at 7 taps with 8 (NV12 1.01–1.02×, gray level). Only square kernels were measured:
/// the side here is the kernel's larger one, while [`sep_small_shape`] goes by its height.
///
/// Swept again on the H200 (4K and 8K, gaussian 5–25, 3, 4, 6 and 8 blocks; then the changes
/// against the rule before on 720p to 8K at 4–15 taps, two passes alternating;
/// docs/PERFORMANCE.md, "fifty-ninth round"), three moved:
/// - 8-bit RGBA to 9 taps (not the large planes' taller rule), 8 (was 5 to 7, 4 at 8–9): 1.07 /
///   1.08× at 7 on 4K / 8K (8K 175.5 → 162.1 µs), 1.06 / 1.06× at 9, 1.02–1.03× on 1080p, 1.07
///   / 1.06× on 720p at 7 / 9; 4–6 taps 0.98–1.03× but 720p `gaussian:5` 1.10× (from 4 M pixels
///   the integer kernel takes 4–5);
/// - RGBA64 to 9 taps where [`sep_small_shape`] gives no shape, 8 (was 5): at 9 1.12 / 1.12 / 1.14×
///   on 1080p / 4K / 8K (8K 282.7 → 248.5 µs), at 7 1.03–1.06×, 4–6 level;
/// - 8-bit RGB and, where [`sep_small_shape`] gives no shape, rgb48 at 10–15 taps, 6 (was 4): RGB
///   1.03–1.10× on 1080p and 8K (1080p `gaussian:13` 21.2 → 19.2 µs), 1.00–1.02× on 4K, 1.00–1.04×
///   on 720p; rgb48 `gaussian:15` 1.05× on 4K and 8K, 11 and 13 level. Measured on `gaussian` with
///   alpha kept (RGBA's row pass in integers at 7 and 9, RGB's in f32 from 11); f32 row passes of
///   RGBA and integer ones of RGB (`box:11`) take these blocks unmeasured.
///
/// Where [`sep_small_shape`] has a shape, its blocks.
pub fn sep_min_blocks(ch: usize, sb: usize, side: usize, large: bool) -> usize {
    let by_side = match (ch, sb) {
        (1, _) => [6, 6, 6, 6],
        (2, _) => [6, 6, 5, 3],
        (3, 1) => [6, 5, 6, 4],
        (3, _) => [6, 5, 6, 3],
        (_, 1) if large => [4, 4, 3, 3],
        (_, 1) => [8, 8, 3, 2],
        _ => [8, 8, 8, 6],
    };
    by_side[match side {
        0..=7 => 0,
        8..=9 => 1,
        10..=15 => 2,
        _ => 3,
    }]
}

/// Samples a `fast_sep` thread owns in a row where the rule is not 4 pixels' worth (4 · ch): for
/// 8-bit RGB from [`SEP_RGB_NARROW_MIN_SIDE`] taps a side (the larger; only square kernels
/// were measured) on planes of [`SEP_RGB_NARROW_MIN_PLANE`] pixels up to, not including,
/// [`SEP_RGB_NARROW_MAX_PLANE`], 4 samples (a pixel and a third: the column pass does not care
/// where pixels start). Its row-pass items stay whole threads' outputs
/// ([`for_block`](super::super::FastSpec::for_block)), and with three times the threads the
/// small launches' rule may give more rows per thread ([`tiled_rows`](super::tiled_rows));
/// both as measured.
/// H100, gaussian:11…25 separable, µs, two passes alternating, the rule's 12 / 4
/// (docs/PERFORMANCE.md, "thirty-ninth round"): 720p 11 / 15 / 25 14.1 / 15.7 / 22.4 against
/// 12.4 / 14.9 / 22.1, 1080p 21.9 / 25.5 / 37.7 against 19.3 / 23.8 / 35.2; 1440p mixed (11
/// and 13 0.98–0.99×, 15–25 1.01–1.04×), 4K slower (0.87–0.97×: 15 taps 64.7 against 71.7),
/// and at 7 and 9 taps slower on 1080p too (gaussian:9 16.5 against 19.5). rgb48 was not
/// faster with 4 or 8 on 1080p to 8K; RGBA and RGBA64 under `--alpha keep` (the default) keep
/// whole pixels, and were not measured with alpha filtered; planes under 720p were not
/// measured. `CONVFLOW_FAST_SEP_PX`: 4, 8, 12 or 16 for every plane whose channels are all
/// filtered; `--block` leaves the rule out.
///
/// Not on planes under [`SEP_RGB_NARROW_PLANAR_MAX_PLANE`] pixels where the row pass may go
/// one channel at a time (`planar`: the f32 row pass, not turned off by `CONVFLOW_FAST_SEPC=0`)
/// and does with 4 pixels a thread ([`sep_rolled`]): there that measured faster still (H100,
/// two passes alternating, docs/PERFORMANCE.md, "fortieth round": 720p `gaussian:13` / `:19` /
/// `:25` 13.9 / 17.9 / 21.9 µs with 4 samples against 12.5 / 16.1 / 19.8), but not on 1080p
/// (`:25` 35.1 against 38.3); none between was measured.
pub fn sep_px(
    ch: usize,
    sb: usize,
    (kw, kh): (usize, usize),
    pixels: usize,
    planar: bool,
) -> Option<usize> {
    let planar_small = planar
        && pixels < SEP_RGB_NARROW_PLANAR_MAX_PLANE
        && sep_rolled((ch, ch), sb, kw, kh, pixels).0;
    ((ch, sb) == (3, 1)
        && kw.max(kh) >= SEP_RGB_NARROW_MIN_SIDE
        && (SEP_RGB_NARROW_MIN_PLANE..SEP_RGB_NARROW_MAX_PLANE).contains(&pixels)
        && !planar_small)
        .then_some(4)
}
/// See [`sep_px`].
pub const SEP_RGB_NARROW_MIN_SIDE: usize = 11;
/// See [`sep_px`] (a 720p plane has 0.92 M pixels) …
pub const SEP_RGB_NARROW_MIN_PLANE: usize = 900_000;
/// … (a 1080p plane has 2.1 M pixels, 1440p 3.7 M).
pub const SEP_RGB_NARROW_MAX_PLANE: usize = 3_000_000;
/// See [`sep_px`] (720p's 0.92 M pixels measured, 1080p's 2.1 M not taken).
pub const SEP_RGB_NARROW_PLANAR_MAX_PLANE: usize = 1_000_000;

/// Threads' outputs one row-pass item of `fast_sep` (row pass from global memory) computes,
/// by channels, bytes per sample and kernel width. Each item loads and converts its window,
/// `px + (kw − 1) · ch` samples, once for all its sums, so wider items convert fewer samples
/// per sum, at the cost of registers. H100, gaussian:7…25, 1080p and 4K, two passes with the
/// widths alternating (docs/PERFORMANCE.md, "fourteenth round"), against one thread's outputs:
/// gray 1.16–1.38× faster (two to 9 taps, four from 15), NV12 1.16–1.36× (four only at 25),
/// RGB 1.00–1.30× (two, four from 15), RGBA 1.07–1.16× (four to 9 taps, two beyond: four lost
/// 7–12 % on 4K at 15 and 25), gray16 1.15–1.37× and rgb48 1.06–1.30× (two); RGBA64 lost
/// 2–18 % with two or four on 4K, so it keeps one. Where [`sep_small_shape`] has a shape, its
/// items.
///
/// One channel on large launches (`launch_samples`, all the launch's planes) takes four from 5 taps
/// wide for 8-bit samples on launches of [`SEP_STAGED_MIN_SAMPLES`] and more (the line of
/// [`sep_staged`](super::separable_code::sep_staged) off fast memory, which the square kernels
/// measured stage under 8 taps high and, in integers, under 10; on fast memory launches of 3 to
/// 3.5 M samples take four items unstaged) and from 11 taps for 16-bit ones on launches of
/// [`SEP_WIDE_ITEMS_MIN_SAMPLES_16`]: four against two, gaussian:4–9 (8-bit) and :11–:25 (16-bit),
/// 720p to 8K, two passes alternating (docs/PERFORMANCE.md, "forty-seventh round"): YUV 4:2:0
/// `:5`–`:9` 1.03–1.13× on 1080p to 4K (its three planes, 3.1 M samples on 1080p; 4K `:8` 24.3 →
/// 21.6 µs), 1.00–1.12× on 8K, gray 1.00–1.09× on 1440p to 8K, but 0.98–1.02× on 1080p (2.1 M,
/// unstaged) and 0.99–1.00× at 4 taps on 4K and 8K; gray16 `:11`–`:25` 1.02–1.09× on 4K and 8K,
/// 0.92–0.97× on 1080p and 1440p (3.7 M), YUV 4:2:0 10-bit 1.01–1.06× from 1440p (5.5 M), but
/// 0.99–1.00× at `:19` on 4K and 8K. Not taken: 720p gray (0.92 M) gained 1.04–1.07× at 5–9 with
/// four (1.01–1.03× in one of the two passes), next to 1080p's losses.
pub fn sep_row_threads(ch: usize, sb: usize, kw: usize, launch_samples: usize) -> usize {
    match (sb, ch) {
        (1, 1 | 3) if kw > 9 => 4,
        (1, 1) if kw >= 5 && launch_samples >= SEP_STAGED_MIN_SAMPLES => 4,
        (2, 1) if kw >= 11 && launch_samples >= SEP_WIDE_ITEMS_MIN_SAMPLES_16 => 4,
        (1, 2) if kw > 15 => 4,
        (1, 4) if kw <= 9 => 4,
        (2, 4) => 1,
        _ => 2,
    }
}

/// See [`sep_row_threads`] (a 1440p plane has 3.7 M pixels, a 1440p YUV 4:2:0 frame 5.5 M
/// samples).
pub const SEP_WIDE_ITEMS_MIN_SAMPLES_16: usize = 5_000_000;
