//! The measured rules of what `fast_sep`'s code compiles in beyond its launch shape (which
//! [`separable`](super::separable) rules): its input rows staged in shared memory and read by
//! 16-byte loads, its rows of sums padded, no sums for an unfiltered alpha, its integer row
//! pass regrouped per channel, its passes rolled, its block and a zero offset compiled in.

use super::separable::SEP_SMALL_PLANE;

/// Launches of one-channel planes (of one 8-bit channel off fast memory) and of NV12's chroma
/// from this many samples stage their input rows ([`sep_staged`]; a 1080p plane has 2.1 M, a
/// 1080p YUV 4:2:0 frame's three 3.1 M, 4K NV12's chroma 4.1 M).
pub const SEP_STAGED_MIN_SAMPLES: usize = 3_000_000;
/// On devices of fast memory ([`fast_memory`](super::fast_memory)) launches of one 8-bit
/// channel stage their input rows from this many samples ([`sep_staged`]), so that a 1080p
/// YUV 4:2:0 frame's three planes (3.1 M) read theirs from global memory: H200, separable
/// `gaussian:5`–`:9` and `box:5`, staged against not, 1.04–1.07× unstaged (5.8 / 6.2 / 6.6 →
/// 5.6 / 6.0 / 6.2 µs; docs/PERFORMANCE.md, "sixty-first round"), where the H100 measured
/// staging faster (1.12×, "twenty-sixth round"). 1440p gray (3.7 M) and YUV 4:2:0 (5.5 M)
/// keep staging.
pub const SEP_STAGED_MIN_SAMPLES_FAST_MEMORY: usize = 3_500_000;

/// Whether `fast_sep` (row pass from global memory) on `ch` channels of `sb`-byte samples,
/// `kh` taps high, in a launch of `launch_samples` samples, its row pass in exact integers
/// (`int`, [`sep_int_channels`]) or not, first copies each inner block's input rows to shared
/// memory ([`FastSpec::row_staged`](super::super::FastSpec::row_staged)):
/// - 8-bit RGB to 9 taps high;
/// - one channel of 8-bit samples to 7 (to 9 with the integer row pass) and of 16-bit samples
///   to 9, on launches of [`SEP_STAGED_MIN_SAMPLES`] and more (8-bit on devices of fast
///   memory, `fast_memory`, of [`SEP_STAGED_MIN_SAMPLES_FAST_MEMORY`]);
/// - two 8-bit channels (NV12's chroma) to 7, on launches of [`SEP_STAGED_MIN_SAMPLES`] and
///   more: since their staged words are read by 16-byte loads
///   ([`FastSpec::staged_vector`](super::super::FastSpec::staged_vector)), H200, NV12
///   separable, the frame's chroma staged against not (docs/PERFORMANCE.md, "sixty-first
///   round"): 4K / 8K `gaussian:5` 1.06 / 1.07×, `:7` 1.06 / 1.06×, `box:5` 1.03 / 1.04×;
///   1440p (1.8 M samples of chroma) 0.98×, and 8K `box:9` 0.97×. (Measured with those loads;
///   where an override turns them off, `CONVFLOW_FAST_SEPV=0` or `CONVFLOW_FAST_SEP_FIXED=0`,
///   the chroma still stages, by word loads, unmeasured.)
///
/// With the integer row pass, one channel at 9 taps (H100, held clock, gaussian:9, staged
/// against not, best of two passes; docs/PERFORMANCE.md, "twenty-sixth round"): 4K / 8K gray
/// 1.13 / 1.16×, NV12 1.05 / 1.08×, YUV 4:2:0 1.15 / 1.18× (1080p's three planes, 3.1 M
/// samples, 1.12×); 1080p gray and NV12 lost 3 %, and 4-channel planes still lose (RGBA 0.86–
/// 0.93×).
///
/// H100, held clock, gaussian, against the same build with `CONVFLOW_FAST_SEPA=0`, two passes
/// alternating (docs/PERFORMANCE.md, "twenty-fifth round"), 1080p / 4K / 8K: RGB :7 1.09 /
/// 1.15 / 1.20× (4K 48.6 → 42.2 µs), :9 1.01 / 1.08 / 1.11×, 1080p :5 1.09×; gray :7 on 4K /
/// 8K 1.05 / 1.09×; gray16 :5–:9 on 4K and 8K 1.01–1.04×; YUV 4:2:0 10-bit :5–:9 1.01–1.06×
/// (1080p too). One-channel launches of 1080p planes lost 5–6 %; every format lost from 15
/// taps (gray 8K :25 0.91×), and 4-channel and 16-bit RGB planes everywhere (RGBA 4K :25
/// 0.62×, rgb48 8K :7 0.78×).
pub fn sep_staged(
    (ch, sb): (usize, usize),
    kh: usize,
    launch_samples: usize,
    int: bool,
    fast_memory: bool,
) -> bool {
    let large = launch_samples >= SEP_STAGED_MIN_SAMPLES;
    let large8 = launch_samples
        >= if fast_memory {
            SEP_STAGED_MIN_SAMPLES_FAST_MEMORY
        } else {
            SEP_STAGED_MIN_SAMPLES
        };
    match (ch, sb) {
        (3, 1) => kh <= 9,
        (1, 1) => kh <= if int { 9 } else { 7 } && large8,
        (2, 1) => kh <= 7 && large,
        (1, 2) => kh <= 9 && large,
        _ => false,
    }
}

/// Whether `fast_sep`, where it can ([`FastSpec::staged_vector_fits`]), reads its staged words
/// by 16-byte loads ([`FastSpec::staged_vector`]) on a plane whose samples are shifted right
/// by `shift` (MSB-aligned formats): everywhere but there (`CONVFLOW_FAST_SEPV=0` / `1`: never
/// / wherever it can). ncu, H200, 8K gray `gaussian:7` separable: the word loads of items 16
/// bytes apart took 4 wavefronts each, a quarter of the kernel's shared-memory wavefronts,
/// whose pipe was the busiest unit (89 % against 68 % for issue); with 16-byte loads of the
/// units an item touches, 80 % (docs/PERFORMANCE.md, "sixty-first round"). Against word loads,
/// H200, separable `gaussian`, best of three passes: 4K / 8K gray `:5` 1.04 / 1.07×, `:7` 1.02 /
/// 1.05×; gray16 `:5`–`:9` 1.04–1.06 / 1.07–1.11×; YUV 4:2:0 1.01–1.05× on 4K and 8K, 10-bit
/// 1.00–1.05×; from 11 taps nothing stages. P010's luma (shifted by 6) lost: 1440p `:5`–`:9`
/// 0.955–0.963×, 4K `:9` 0.966×.
///
/// [`FastSpec::staged_vector_fits`]: super::super::FastSpec::staged_vector_fits
/// [`FastSpec::staged_vector`]: super::super::FastSpec::staged_vector
pub fn sep_staged_vector(shift: u32) -> bool {
    super::tuning().sep_vector.unwrap_or(shift == 0)
}

/// Whether `fast_sep`, where it can ([`FastSpec::compact_sums_fits`]: 4 channels, alpha not
/// filtered), keeps no horizontal sums for alpha ([`FastSpec::compact_sums`]) in blocks
/// `block_width` threads wide of threads owning `px` samples and `py` rows: in blocks 8 wide
/// and more, and in blocks 4 wide of 4-pixel threads (`px` 16) but for a multiple of 8 rows
/// a thread (none of the rules' shapes), where no stride of the sums' rows keeps a quarter
/// warp's loads apart; not in narrower blocks (`CONVFLOW_FAST_SEPK=0` / `1`: never / wherever
/// it fits). Its sums' rows are then padded ([`sums_padded`]), in blocks 4 wide to
/// `py · u ≡ 4` float4s mod 8 ([`FastSpec::sep_sums_row`]; the row pass's stores there are
/// not all conflict-free: with 2 rows a thread no stride serves both passes, and the column
/// pass's loads are the more).
///
/// ncu, H200, 8K RGBA `gaussian:7` separable with alpha kept: the L1 at 97 % of its peak, the
/// column pass's 16-byte loads of the sums 63 % of the shared-memory wavefronts and the row
/// pass's stores 37 %, a quarter of both alpha's. Against alpha's sums kept, H200, separable,
/// best of two or three passes alternating:
/// - blocks 8 wide and more (docs/PERFORMANCE.md, "sixty-second round"): RGBA
///   `gaussian:5`–`:9` 1.12–1.13× on 720p, 1.16–1.19× on 1080p, 1.19–1.22× on 1440p, `:7` /
///   `:9` 1.24× on 4K and 1.27 / 1.29× on 8K (`:7` 162.1 → 127.2 µs; `:5` runs another kernel
///   there); `:11`–`:25` 1.09–1.12× on 4K and 8K; RGBA64 `:5`–`:9` 1.02–1.10×;
/// - blocks 4 wide (8-bit RGBA taller than 9 on planes under 4 M pixels; RGBA64 taller than 9,
///   but up to 15 on planes under 1 M), a quarter warp's column-pass loads on two rows of
///   threads: with the rows an odd number of float4s apart their 12-float columns shared bank
///   groups and compaction ran 0.81–0.90× (sixty-second round); with `sep_sums_row`'s stride
///   ("sixty-third round") RGBA64 `:11` / `:15` / `:25` 1.11 / 1.13 / 1.13× on 4K and 1.12 /
///   1.14 / 1.14× on 8K (8K `:15` 355.1 → 311.1 µs), 1.00–1.015× on 1080p, `:25` 1.01× on
///   720p; RGBA 1.02–1.04× on 720p, 1.00–1.02× on 1080p.
///
/// [`FastSpec::compact_sums_fits`]: super::super::FastSpec::compact_sums_fits
/// [`FastSpec::compact_sums`]: super::super::FastSpec::compact_sums
/// [`FastSpec::sep_sums_row`]: super::super::FastSpec::sep_sums_row
pub fn sep_compact_sums(block_width: u32, px: usize, py: usize) -> bool {
    super::tuning()
        .sep_compact
        .unwrap_or(block_width >= 8 || narrow_sums_stride(block_width, px, py))
}

/// Whether alpha-free sums ([`FastSpec::compact_sums`]) in blocks `block_width` threads wide
/// of threads owning `px` samples and `py` rows take the stride that keeps a quarter warp's
/// two rows of threads on disjoint bank groups (`py · u ≡ 4` float4s mod 8,
/// [`FastSpec::sep_sums_row`], fast_sep.cuh's `sep_sums_row`): blocks 4 wide of 4-pixel
/// threads, `py` not a multiple of 8 (for which no such `u` exists).
///
/// [`FastSpec::compact_sums`]: super::super::FastSpec::compact_sums
/// [`FastSpec::sep_sums_row`]: super::super::FastSpec::sep_sums_row
pub fn narrow_sums_stride(block_width: u32, px: usize, py: usize) -> bool {
    block_width == 4 && px == 16 && !py.is_multiple_of(8)
}

/// Whether `fast_sep`'s rows of horizontal sums lie an odd number of float4s apart
/// ([`FastSpec::sums_pad`](super::super::FastSpec::sums_pad)) for a plane of `ch` channels of
/// `sb`-byte samples and a kernel `kh` taps high: one or two channels and 8-bit RGB always, 8-bit
/// RGBA from 11 taps. ncu on 4K gray `gaussian:7` counted 8.5 shared-memory wavefronts per row-pass
/// store where 4 carry the bytes: the rows were a multiple of 32 floats apart, and a warp's items
/// in 8 consecutive rows stored to the same four-bank groups. Padded against unpadded (H100, held
/// clock, gaussian separable 5–25 on gray, gray16, NV12, YUV 4:2:0, RGB and RGBA, two passes
/// alternating, best of each; docs/PERFORMANCE.md, "twenty-seventh round"): geomean 1.022 / 1.018 /
/// 1.011× on 1080p / 4K / 8K, 1.05–1.14× at 15 taps on one-channel planes (4K gray 23.1 → 20.3 µs,
/// 4K YUV 4:2:0 33.7 → 29.5), RGB and RGBA at 15 1.02–1.04×. Where the padding did not pay it is
/// left out: RGBA at 4–9 taps tied but for 1080p `gaussian:4` (16.9 → 18.2), and rgb48 lost 1–3 %
/// at 7–25 (4K 25: 127.5 → 131.0). 8-bit RGB under 11 taps, which lost 2–3 % with the padding then
/// (4K `:7` 39.3 → 40.2 µs), gains with it since its integer row pass regroups its windows per
/// channel (thirtieth round): padded against unpadded, `gaussian:4`–`:10`, 720p to 8K, two passes
/// alternating (docs/PERFORMANCE.md, "forty-seventh round"), 1.007–1.086× from 1080p (4K `:5` 35.0
/// → 32.6 µs, `:10` 53.7 → 49.7; 8K `:5` 106.2 → 98.9), 720p 0.97–1.04× by pass. And
/// wherever 4 channels keep no sums for alpha (`compact`, [`sep_compact_sums`]): their 12-float
/// columns a multiple of 32 floats apart put the row pass's stores on shared bank groups (ncu,
/// 8K RGBA `gaussian:7`: 12.7 wavefronts a store where 3.3 carry the bytes), and compacted
/// without the padding RGBA `gaussian:5`–`:9` ran 0.99–1.02× against alpha's sums kept, with it
/// up to 1.29× (docs/PERFORMANCE.md, "sixty-second round").
pub fn sums_padded(ch: usize, sb: usize, kh: usize, compact: bool) -> bool {
    ch <= 2 || sb == 1 && (ch == 3 || kh >= 11) || compact
}

/// Whether `fast_sep`'s exact integer row pass
/// ([`FastSpec::row_int`](super::super::FastSpec::row_int); 8-bit samples, row pass from
/// global memory, wherever the row factor allows it, on every plane) on `ch` interleaved
/// channels regroups each item's window per channel first
/// ([`FastSpec::deinterleave`](super::super::FastSpec::deinterleave)): 8-bit RGB and RGBA.
///
/// The integer row pass against the f32 one in the same build (`CONVFLOW_FAST_SEPI=0`), H100,
/// held clock, gaussian:5–9 separable, best of two passes alternating (docs/PERFORMANCE.md,
/// "twenty-sixth round"), 1080p / 4K / 8K: gaussian:7 gray 0.98 / 1.08 / 1.09×, NV12 0.99 /
/// 1.06 / 1.07×, YUV 4:2:0 1.08 / 1.12 / 1.15×, RGB 1.05 / 1.06 / 1.06×; gaussian:9
/// 1.00–1.06×; box:4–16 on 1080p and 4K 0.97–1.09×; RGBA 1.02–1.05× on 1080p, 0.98–1.00× on
/// 4K and 8K with its windows as loaded (one useful byte in four of each dot product).
///
/// Regrouped against as loaded (`CONVFLOW_FAST_SEPD=0`), best of two passes alternating:
/// - RGB (thirtieth round), whose taps 3 bytes apart spread a 9-tap sum over 7 words:
///   `gaussian:9` 1.05 / 1.06 / 1.10× on 1080p / 4K / 8K (8K 142.9 → 130.1 µs), `:7` 1.03 /
///   1.02 / 1.06×, `:5` on 8K 1.02×; NV12's chroma (taps 2 bytes apart) 0.99–1.01×, so two
///   channels keep their windows as loaded;
/// - RGBA (forty-third round; the thirtieth had 1.00–1.02× on 1080p): alpha kept, `:5` / `:7` /
///   `:9` 1.02–1.04× on 1080p and 1440p; with alpha filtered 1.05 / 1.08–1.10 / 1.10–1.13× (1440p
///   `:9` 35.8 → 31.5). On 4K and 8K, where RGBA's row pass had been f32 (above), the integer
///   pass regrouped against that: alpha kept `:7` 1.03 / 1.04×, `:9` 1.06 / 1.07× (8K 234.1 →
///   219.5), alpha filtered (the f32 pass one channel at a time, [`sep_rolled`]) `:7` 1.06 /
///   1.08×, `:9` 1.03 / 1.05×.
pub fn sep_int_channels(ch: usize) -> bool {
    ch >= 3
}

/// Whether `fast_sep` takes its f32 row pass one channel at a time and rolls its column pass's
/// middle rows ([`FastSpec::sums_planar`](super::super::FastSpec::sums_planar),
/// [`FastSpec::col_rolled`](super::super::FastSpec::col_rolled)), by channels, bytes per
/// sample, how many of them are filtered (RGBA's alpha is not under `--alpha keep`), the
/// kernel's width and height and the plane's pixels: (row pass, column pass), each only where
/// it fits. The row pass:
/// - 3 channels from [`SEP_PLANAR_MIN_WIDTH`] taps wide (8-bit RGB; [`SEP_PLANAR_MIN_WIDTH_16`]
///   for rgb48);
/// - 2 channels (the chroma planes of NV12 and P010) from [`SEP_PLANAR_MIN_WIDTH_2`];
/// - 8-bit RGBA from [`SEP_PLANAR_MIN_WIDTH_4`] on planes under [`SEP_SMALL_PLANE`] pixels; on
///   larger ones at [`SEP_PLANAR_RGBA_LARGE_KEPT`] with alpha kept, at
///   [`SEP_PLANAR_RGBA_LARGE_NARROW`] and from [`SEP_PLANAR_RGBA_LARGE`] with alpha filtered;
/// - RGBA64 from [`SEP_PLANAR_MIN_WIDTH_4_SMALL`] on planes under [`SEP_ROLLED_COL_MIN_PLANE`],
///   from [`SEP_PLANAR_MIN_WIDTH_4_16`] (alpha kept) or [`SEP_PLANAR_MIN_WIDTH_4_16_ALL`] (alpha
///   filtered) on planes under [`SEP_SMALL_PLANE`].
///
/// Unmeasured, and taking the rule of their neighbours: 2 channels at 17–21 taps on 720p,
/// RGBA64 at even widths but 6–12 with alpha kept. (The row pass is the f32 one: the odd
/// Gaussians 5–9, whose row factors are integers, take the integer pass instead; the
/// forty-third round's odd sides below were measured with it turned off.)
///
/// The column pass for RGBA64 5, 7 and [`SEP_ROLLED_COL_MAX_HEIGHT`] taps high (the heights
/// measured), from 7 taps on planes of [`SEP_ROLLED_COL_MIN_PLANE`] pixels, where the row pass
/// reads global memory (the input-tile kernel of `CONVFLOW_FAST_SEPG=0` was not measured with
/// it).
/// H100, gaussian separable, µs, the unrolled passes against the rolled, two passes alternating
/// (docs/PERFORMANCE.md, "fortieth round" and "forty-first round"):
/// - one channel at a time, 8-bit RGB on 1440p / 4K / 8K: `:13` 34.3 / 59.8 / 199.0 against
///   31.3 / 56.2 / 188.6, `:25` 56.6 / 104.5 / 384.1 against 52.9 / 95.1 / 319.9, `:11` mixed
///   (8K 165.7 against 172.2); rgb48 on 720p–8K 1.00–1.13× from 11 taps (4K `:11` 75.4 against
///   69.1, `:25` 127.7 against 113.1). At 7 and 9 taps within 1 % for RGB, 2–6 % slower for
///   rgb48 on 4K and 8K. 8-bit RGB's threads of 4 samples
///   ([`sep_px`](super::separable::sep_px), planes of 1–3 M pixels) do not fit.
/// - with each 4 pixels' sums stored channel after channel (forty-first round; RGB and rgb48
///   0.99–1.01× against the round before's layout): 8-bit RGBA (alpha kept) from 11 taps on 720p /
///   1080p / 1440p 1.13–1.24 / 1.07–1.17 / 1.08–1.20× (1440p `:25` 67.4 against 56.1), at 7–9
///   within 1 %, but 3–6 % slower on 4K and 8K (their 8 × 32 blocks,
///   [`sep_rgba_large`](super::separable::sep_rgba_large), with 3 to 8 blocks resident); RGBA64
///   from 11 taps on 720p–1440p 1.02–1.09×, on 4K 1.02× at 11–15 but
///   0.96× at 25, on 8K up to 5 % slower; RGBA64 at 7 / 9 1.06 / 1.13× on 720p, 3–6 % slower on
///   1080p and 1440p; NV12 and P010 from 17 taps 1.00–1.06× on 1080p–8K (8K NV12 `:21` 128.9
///   against 123.4), at 13 mixed (0.98–1.04×), at 11 and 15 up to 3 % slower on 4K / 8K.
/// - the same, forty-second round: 8-bit RGBA at 10 taps (alpha kept) on 720p / 1080p 16.8 / 26.5
///   against 15.2 / 23.8; with alpha filtered (`bench kernels --alpha filter`) on 720p–1440p
///   1.02–1.13× from 11 taps, level at 7–9, and on 4K / 8K 1.05–1.13× at 7–9, 0.90–0.95× at 11–17,
///   1.19–1.23× from 19 (4K `:19` 133.5 against 110.6, 8K `:25` 543.5 against 447.8; with alpha
///   kept 4K / 8K `:7`–`:9` were level). RGBA64 with alpha filtered: on 720p 1.07–1.10× at 7–9
///   and 17–21, level at 11–15; on 1080p and 1440p 4–12 % slower at 7–15, 1.01–1.06× from 17
///   (1080p `:17` 43.9 against 41.5); on 4K 12–18 % slower. RGBA64 (alpha kept) at 6–12 taps on
///   720p 1.06–1.09×, on 1080p and 1440p 0.99–1.04× (at 10 the unrolled pass spilled:
///   [`SPILL_TOLERATED_BYTES`](super::SPILL_TOLERATED_BYTES)); NV12 and P010 at 17–25 on 720p
///   1.00–1.06×.
/// - the same, forty-third round, 8-bit RGBA at 4–10 taps (the even ones: their row factors
///   are irrational): alpha kept, `:4` / `:6` / `:8` 1.08 / 1.06 / 1.07× on 1080p, 1.12 /
///   1.09 / 1.09× on 1440p, `:6` / `:8` / `:10` 1.08 / 1.09 / 1.12× on 4K and 1.07 / 1.09 /
///   1.12× on 8K (8K `:10` 301.9 → 270.8 µs, one row a thread,
///   [`sep_rows_rgba_large`](super::separable::sep_rows_rgba_large)); alpha filtered, `:4` / `:6` /
///   `:8` 1.09 / 1.03 / 1.09× on 1080p, 1.12 / 1.07 / 1.13× on 1440p,
///   `:6` 1.06× on 4K and 8K, but `:10` 0.90× there. (`:4` on 4K and 8K takes the register
///   kernel `fast_reg`.) The odd sides with the f32 row factor (the integer pass off,
///   `CONVFLOW_FAST_SEPI=0`, as for a Gaussian of another σ), grouped against unrolled: 720p
///   and 1080p 1.03–1.16×; 4K / 8K alpha kept `:7` 1.03 / 1.01×, `:9` 1.00 / 0.99×.
/// - the column pass rolled, RGBA64: `:5` 1.08–1.16× on 720p–8K (8K 249.3 against 215.6), `:7` /
///   `:9` 1.06–1.21× from 1080p (4K 81.2 / 91.8 against 73.9 / 80.5) but 0.975× on 720p, `:11`
///   within 1 %, `:25` up to 3 % slower. One channel (gray, gray16, NV12 at 9–25 taps) 2–11 %
///   slower, RGB and rgb48 mostly slower.
pub fn sep_rolled(
    (ch, filtered): (usize, usize),
    sb: usize,
    kw: usize,
    kh: usize,
    pixels: usize,
) -> (bool, bool) {
    let all = filtered == ch;
    let small = pixels < SEP_SMALL_PLANE;
    let row = match (ch, sb) {
        (2, _) => kw >= SEP_PLANAR_MIN_WIDTH_2,
        (3, 1) => kw >= SEP_PLANAR_MIN_WIDTH,
        (3, _) => kw >= SEP_PLANAR_MIN_WIDTH_16,
        (4, 1) if small => kw >= SEP_PLANAR_MIN_WIDTH_4,
        (4, 1) if all => SEP_PLANAR_RGBA_LARGE_NARROW.contains(&kw) || kw >= SEP_PLANAR_RGBA_LARGE,
        (4, 1) => SEP_PLANAR_RGBA_LARGE_KEPT.contains(&kw),
        (4, _) if pixels < SEP_ROLLED_COL_MIN_PLANE => kw >= SEP_PLANAR_MIN_WIDTH_4_SMALL,
        (4, _) if small => {
            kw >= if all {
                SEP_PLANAR_MIN_WIDTH_4_16_ALL
            } else {
                SEP_PLANAR_MIN_WIDTH_4_16
            }
        }
        _ => false,
    };
    (
        row,
        (ch, sb) == (4, 2)
            && (5..=SEP_ROLLED_COL_MAX_HEIGHT).contains(&kh)
            && kh % 2 == 1
            && (kh == 5 || pixels >= SEP_ROLLED_COL_MIN_PLANE),
    )
}
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH: usize = 13;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_16: usize = 11;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_2: usize = 17;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_4: usize = 4;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_4_16: usize = 11;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_4_16_ALL: usize = 17;
/// See [`sep_rolled`].
pub const SEP_PLANAR_MIN_WIDTH_4_SMALL: usize = 7;
/// See [`sep_rolled`].
pub const SEP_PLANAR_RGBA_LARGE_NARROW: std::ops::RangeInclusive<usize> = 6..=9;
/// See [`sep_rolled`].
pub const SEP_PLANAR_RGBA_LARGE_KEPT: std::ops::RangeInclusive<usize> = 6..=10;
/// See [`sep_rolled`].
pub const SEP_PLANAR_RGBA_LARGE: usize = 19;
/// See [`sep_rolled`].
pub const SEP_ROLLED_COL_MAX_HEIGHT: usize = 9;
/// See [`sep_rolled`] (a 720p plane has 0.92 M pixels, 1080p 2.1 M; none between was measured).
pub const SEP_ROLLED_COL_MIN_PLANE: usize = 1_000_000;

/// Whether `fast_sep` (row pass from global memory) on a plane of `ch` channels of `sb`-byte
/// samples, `kh` taps high, whose frame's largest plane of as many channels has `pixels` pixels
/// (so that YUV's planes keep one specialization and one launch), compiles its block in
/// ([`FastSpec::fixed_block`](super::super::FastSpec::fixed_block)): its row width, rows, rows
/// of sums and staged copies then fold to constants, so the column pass's shared loads take
/// immediate offsets and the staged copies neither divide nor step (ncu, 4K gray `gaussian:7`:
/// 31.1 → 25.6 thread instructions an output sample with the zero offset of
/// [`sep_zero_offset`]). Against neither, best of two passes (docs/PERFORMANCE.md,
/// "fifty-first round"), separable `gaussian:5`–`:25` on 1080p / 4K / 8K:
/// - H100, seven formats, the block on every plane: geomean 0.991 / 1.037 / 1.036×; one channel
///   0.99–1.11× (4K gray `:5` 11.9 → 11.0 µs, 8K `:7` 1.11×), 8-bit RGB and RGBA 1.00–1.16× up
///   to 9 taps everywhere and from 15 on 4K and 8K (8K RGBA `:9` 218.3 → 188.0), rgb48 on 1080p
///   0.99–1.06×;
/// - H200, RGBA64, P010 and YUV 4:2:0 10-bit: 1.00–1.09× from 4K (8K YUV 4:2:0 10-bit `:9`
///   1.09×), 1080p 0.94–1.08×;
/// - H100, the block on every plane against the rule before (round 52), 1080p and 1440p,
///   11 / 15 / 25 taps: RGBA64 1.01–1.03×, P010 1.00–1.09× up to 15 (its chroma plane's block
///   added; 1080p `:11` 13.4 → 12.3 µs), 0.94 / 0.975× at 25 (both planes' blocks added).
///   P010's chroma plane is under [`SEP_SMALL_PLANE`] up to 4K, whose 10–15 taps were not
///   measured with it.
///
/// Left out where it lost: 8-bit planes of two to four channels taller than 9 on planes under
/// [`SEP_SMALL_PLANE`] pixels (1080p RGB `:15` / `:25` 0.76 / 0.66×, RGBA 0.83 / 0.71×, NV12
/// `:25` 0.88×), one or two channels of 16-bit samples taller than 15 there (1080p `:25`: P010
/// 0.94×, YUV 4:2:0 10-bit 0.97×, gray16 0.995×); rgb48 8–9 taps high on larger planes (`:9`
/// 0.94 / 0.88× on 4K / 8K, 1.02× on 1080p; 8 not measured, its launch bounds are 9's). rgb48
/// (1080p `:15` / `:25` 1.04 / 1.03×) and RGBA64 keep it on small planes at every height.
/// `CONVFLOW_FAST_SEP_FIXED`: 0 never, 1 on every plane.
pub fn sep_fixed_block(ch: usize, sb: usize, kh: usize, pixels: usize) -> bool {
    let small = pixels < SEP_SMALL_PLANE;
    let lost = match (ch, sb) {
        (1, 1) | (4, 2) => false,
        (1 | 2, 2) => kh > 15 && small,
        (3, 2) => (8..=9).contains(&kh) && !small,
        _ => kh > 9 && small,
    };
    super::tuning().sep_fixed.unwrap_or(!lost)
}

/// Whether `fast_sep` with its block compiled in also compiles a zero offset in (nothing added
/// to its sums, [`FastSpec::zero_offset`](super::super::FastSpec::zero_offset)), and with it
/// `--abs` ([`FastSpec::abs`](super::super::FastSpec::abs)), on planes of `ch` channels under
/// kernels `kh` taps high: one channel at every height, where ptxas keeps 40 registers (three
/// channels with the offset compiled in spilled before the block was, fast.cu's
/// `finish_bits`), and more channels from [`SEP_ZERO_OFFSET_MIN_HEIGHT`] taps high.
/// - `--abs` compiled in, H200, against it read at run time (round 53): YUV 4:2:0 1.015×,
///   10-bit 1.013×, gray and NV12 1.002× geomean; gray16 0.975–1.03× (`:7` / `:9` lose: ptxas
///   allocates 40 registers, not 48).
/// - H100, with the block compiled in, against the offset added (`CONVFLOW_FAST_SEP_ZOFF=0`),
///   one pass (docs/PERFORMANCE.md, "fifty-first round"): gray and gray16 1.00–1.04×, YUV 4:2:0
///   1.00–1.03×, NV12 0.99–1.02× (its luma plane only). On every plane (`=1`), 4K / 8K, 11–25
///   taps, best of two passes ("fifty-second round"): 8-bit RGB / RGBA 1.005–1.016×, NV12
///   0.997–1.018×, rgb48 0.978–1.008×.
/// - H200, with the output clamp left out on 3–4 channels too ([`sat_free`](super::sat_free)),
///   on every plane against one channel only, two passes alternating, best of each, separable
///   `gaussian:7` / `:9` / `:15` / `:25`, 1080p / 4K / 8K ("sixty-third round"): from 15 taps
///   RGB 1.00–1.02× (8K `:25` 294.1 → 290.1 µs), rgb48 1.00–1.035× (8K `:25` 348.9 → 337.0),
///   NV12 1.00–1.01×; at 7 / 9 RGB 0.79–1.01× (8K `:9` 108.4 → 137.5) and rgb48 0.85–1.00×,
///   so two to four channels take it only taller than 9 (10–14 not measured). RGBA and RGBA64
///   were not in that sweep: with the clamp left out too, this round's build against HEAD's
///   ran RGBA `:11`–`:25` 1.01–1.04× and RGBA64 1.00–1.015× (section 3 of the round's
///   results).
///
/// `CONVFLOW_FAST_SEP_ZOFF`: 0 never, 1 on every plane.
pub fn sep_zero_offset(ch: usize, kh: usize) -> bool {
    super::tuning()
        .sep_zoff
        .unwrap_or(ch == 1 || kh >= SEP_ZERO_OFFSET_MIN_HEIGHT)
}
/// See [`sep_zero_offset`].
pub const SEP_ZERO_OFFSET_MIN_HEIGHT: usize = 10;
