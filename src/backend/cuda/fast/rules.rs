//! The measured rules of `fast`: which kernel, thread shape and block each plan gets, as named
//! constants with the measurements behind them (docs/PERFORMANCE.md), and the environment
//! overrides that measure the alternatives. [`FastSpec`](super::FastSpec)'s constructors and
//! the launch read them; nothing else decides. The full tiled kernel's rules are in [`full`],
//! the separable kernel's in [`separable`] (its launch shape) and [`separable_code`] (what its
//! code compiles in).

mod full;
mod separable;
mod separable_code;
pub use full::*;
pub use separable::*;
pub use separable_code::*;

/// A device's peak DRAM bytes per multiprocessor per SM clock cycle from its attributes: the
/// memory clock in kHz (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`, two transfers a cycle), the
/// bus width in bits, the multiprocessor count and the SM clock in kHz. The H200's attributes
/// (3201 MHz, 6016 bits, 132 multiprocessors at 1980 MHz) give 18.4 (`convflow info`); an H100
/// SXM's (2619 MHz, 5120 bits) about 12.8, an A100's about 10 (40 GB) or 13.4 (80 GB). On a
/// MIG instance the multiprocessor count is the instance's while the memory attributes may be
/// the whole GPU's, so the rate can read high there. None where an attribute is missing.
pub fn memory_bytes_per_sm_cycle(
    mem_khz: i64,
    bus_bits: i64,
    sms: i64,
    sm_khz: i64,
) -> Option<f64> {
    (mem_khz > 0 && bus_bits > 0 && sms > 0 && sm_khz > 0)
        .then(|| 2.0 * mem_khz as f64 * bus_bits as f64 / 8.0 / (sms as f64 * sm_khz as f64))
}
/// Devices whose memory moves at least this many bytes per multiprocessor cycle
/// ([`memory_bytes_per_sm_cycle`]) take the rules measured faster on the H200 only
/// ([`SEP_ROWS_MID_MIN_SAMPLES_FAST_MEMORY`], [`SEP_STAGED_MIN_SAMPLES_FAST_MEMORY`],
/// [`SEP_ROWS_EIGHT_MIN_SAMPLES_FAST_MEMORY`]); the
/// others, the H100 among them, the rules measured on the H100. Devices above the H200's rate
/// (a B200's reads about 27) were not measured and take the H200's. `CONVFLOW_FAST_MEMORY=0` /
/// `1` overrides it (for a MIG instance whose rate reads high, see
/// [`memory_bytes_per_sm_cycle`]).
pub const FAST_MEMORY_MIN_BYTES_PER_SM_CYCLE: f64 = 16.0;
/// Whether a device of `rate` bytes per multiprocessor cycle takes the fast-memory rules.
pub fn fast_memory(rate: Option<f64>) -> bool {
    tuning()
        .fast_memory
        .unwrap_or_else(|| rate.is_some_and(|r| r >= FAST_MEMORY_MIN_BYTES_PER_SM_CYCLE))
}

/// Largest full kernel side `fast_reg` takes (measured on an H200 before the row ends built
/// their windows word by word: at 7 the tiled kernel won for RGB by 1.4×; for gray they tied;
/// 16-bit and RGBA samples were not measured again since) …
pub const REG_MAX_FULL: usize = 5;
/// … and for 8-bit gray, RGB and RGBA (H100, gaussian:7: 1080p/4K/8K gray 14.1/37.3/128.6 µs
/// against 15.5/43.5/156.4 tiled, RGB 36.9/112.9/405.3 against 43.1/122.4/403.3; 1080p/4K
/// RGBA 61.0/176.1 against 61.2/204.6; two channels not measured).
pub const REG_MAX_FULL_8BIT: usize = 7;
/// … and for 16-bit samples of one channel (gray16, the planes of YUV 10-bit, P016's luma) on
/// launches of at least [`REG16_FULL_MIN_SAMPLES`] samples, with [`REG_ROWS`] rows at sides 6–7
/// then ([`REG_ROWS_16BIT_7`] from the fifty-ninth round) (H100, held clock, gaussian:7 full, µs,
/// against the tiled kernel: gray16 1080p / 4K / 8K 15.6 / 37.7 / 108.5 against 16.9 / 48.9 /
/// 161.5, YUV 4:2:0 10-bit 720p / 1080p / 4K / 8K 13.5 / 21.0 / 58.7 / 176.3 against 15.7 / 27.7 /
/// 71.0 / 249.8; at 9 the tiled kernel won, 4K gray16 56.3 against 65.5, and on 3–4 channels at 7,
/// rgb48 1080p 38.2 against 43.9; docs/PERFORMANCE.md, "twenty-fourth round").
pub const REG_MAX_FULL_GRAY16: usize = 7;
/// See [`REG_MAX_FULL_GRAY16`]: below this many samples in the launch the tiled kernel keeps
/// those sides (gray16 640×360 / 720p 6.9 / 9.6 µs against 8.5 / 10.9 with one or two rows,
/// YUV 4:2:0 10-bit 640×360, 0.35 M samples, 7.4 against 8.9).
pub const REG16_FULL_MIN_SAMPLES: usize = 1_000_000;
/// Largest separable kernel side `fast_reg` takes (measured: at 7 the tiled kernel wins for
/// RGB by 1.3× and for gray by 1.1×).
pub const REG_MAX_SEP: usize = 5;
/// Largest kernel side `fast_int` takes for full plans (measured on 4K gray box:9: 35.7 µs vs
/// 47.7 µs for the f32 kernel; larger sides were not measured).
pub const INT_MAX_FULL: usize = 9;
/// … for separable plans (measured on gray box: at 5 1.2–1.5× faster at every size; at 7 0.96×
/// on 1080p and 0.90× on 4K NV12's chroma plane, where the f32 separable kernel's 2k taps beat
/// the integer kernel's k²) …
pub const INT_MAX_SEP: usize = 5;
/// … and on planes of at least [`INT_LARGE_PLANE`] samples (at 7: 1.26× on 4K gray, 1.56× on
/// 8K; at 9 the f32 separable kernel ties or wins everywhere).
pub const INT_MAX_SEP_LARGE: usize = 7;
/// See [`INT_MAX_SEP_LARGE`] (a 4K gray plane is 8.3 M samples).
pub const INT_LARGE_PLANE: usize = 8_000_000;
/// Most interleaved channels `fast_int` takes: all of them. Before the row ends built their
/// windows word by word, RGB was slower than the f32 kernels on 1080p; now 1080p RGB gaussian
/// 3×3 takes 10.2 µs against 11.4 µs, 5×5 18.0 against 20.5, RGBA 5×5 24.1 against 31.0
/// (H100, docs/PERFORMANCE.md).
pub const INT_MAX_CHANNELS: usize = 4;
/// Least kernel width whose `fast_int` windows are deinterleaved
/// ([`FastSpec::deinterleave`](super::FastSpec::deinterleave)): at 5, 4K RGB gaussian 42.6 µs
/// against 51.2 interleaved (8K 132.5 against 167.3, RGBA 57.9 against 79.1, NV12 25.5 against
/// 26.4); at 3 the interleaved windows are as fast or faster (4K RGB 29.9 against 32.0 µs). Two of
/// the chosen specializations spill a little at their 64 registers (NV12 chroma 7×7: 112 bytes;
/// RGBA 5×5: 8) and were measured faster all the same (4K box:7 NV12 42.7 against 48.9 µs
/// interleaved).
pub const INT_DEINTERLEAVE_WIDTH: usize = 5;
/// Sides of separable one-channel plans that `fast_int` runs as two integer factors
/// ([`IntegerForm::factors`](crate::filter::IntegerForm::factors): dp4a horizontal sums of each
/// input row, weighted by the column factor into the output rows), where the full integer kernel
/// cannot take them (weights beyond a signed byte) or is slower: side 7 (H100, gaussian:7 on
/// 1080p/4K/8K gray: 10.3 / 21.0 / 68.1 µs against 12.0 / 32.1 / 115.7 for the f32 separable
/// kernel; box:7 10.5 / 21.5 / 69.5 against 12.1 / 21.5 / 64.5 for the full integer kernel). At 9
/// it ties or loses on 1080p and 4K. That f32 kernel staged an input tile; the one whose row
/// pass reads global memory beats this one at 7 too ([`SEP_TILED_MIN_SIDE`]), so only tests
/// asking for the large planes' rules, or `CONVFLOW_FAST_SEP_TILED_MIN` above 7, reach it.
pub const INT_SEP_MIN_SIDE: usize = 7;
/// See [`INT_SEP_MIN_SIDE`].
pub const INT_SEP_MAX_SIDE: usize = 7;
/// Output rows per thread of the two-factor kernel (each input row's horizontal sums serve
/// that many output rows; measured: 2 rows 10–20 % faster than 4 on 1080p/4K, 4 % slower on
/// 8K; 8 rows spill).
pub const INT_SEP_ROWS: usize = 2;
/// Pixels a deinterleaving `fast_int` thread owns per row (a multiple of 4; 8 measured 1.5–2.8×
/// slower on RGB).
pub const INT_PIXELS: usize = 4;
/// `fast_int`'s resident blocks per multiprocessor for sides up to 7 (measured on 4K gray box:
/// 13.0 vs 13.7 µs at 3, 17.3 vs 19.1 µs at 5; at 9, 39.6 vs 35.4 µs, so 9 keeps
/// [`REG_MIN_BLOCKS`]).
pub const INT_MIN_BLOCKS_SMALL: usize = 8;
/// Largest kernel side `fast_int` takes on 16-bit samples (full plans, and separable ones as
/// their outer product; `CONVFLOW_FAST_INT16`: another side, 0 for none). At 3 (`dp2a`: 6 dot
/// products an output on one channel, 9 on 2–4, where the f32 kernel converts each sample and
/// rounds by float adds) it was as fast or faster everywhere (round 34; but on rgb48 since
/// round 58, [`INT16_SKIP_CHANNELS`]): H100, `gaussian:3` full, µs, f32
/// register kernel / this (with the float finish and the rows below): 720p / 1080p / 4K gray16
/// 5.6 / 8.0 / 16.3 against 5.2 / 7.3 / 15.9, rgb48 10.1 / 15.4 / 42.3 against 9.5 / 15.0 /
/// 41.0, RGBA64 11.0 / 17.7 / 52.5 against 10.6 / 17.2 / 51.2, YUV 4:2:0 10-bit 6.8 / 9.9 / 23.6
/// against 6.1 / 9.3 / 22.8, P010 7.4 / 10.7 / 25.5 against 7.0 / 9.7 / 24.3
/// (docs/PERFORMANCE.md, "thirty-fourth round"). At 5 the separable plans keep their tiled f32
/// kernel (2k taps; a full plan of `gaussian:5` runs as its separable plan): `fast_int` there
/// took 4K gray16 / rgb48 / RGBA64 / P010 21.8 / 67.5 / 77.2 / 36.6 µs against 18.4 / 50.9 /
/// 71.3 / 29.1, tying only on 1080p rgb48 and 8K gray16 and YUV 4:2:0 10-bit.
pub const INT16_MAX_SIDE: usize = 3;
/// Channels of 16-bit samples `fast_int` does not take: 16-bit RGB (rgb48), where the f32
/// register kernel became the faster at 3×3 once it converted 16-bit samples on the
/// conversion unit and found its row ends' columns once (fifty-third and fifty-sixth rounds).
/// H200, µs, `fast_int` against f32, 720p / 1080p / 4K / 8K: `box:3` 8.3 / 11.9 / 35.7 / 125.2
/// against 7.5 / 11.4 / 32.8 / 114.2, `gaussian:3` 8.1 / 11.4 / 34.3 / 120.6 against 7.5 /
/// 11.4 / 32.7 / 114.2. One channel, P010, YUV 4:2:0 10-bit and RGBA64 keep it: 0.84–1.08×
/// there, by size (docs/PERFORMANCE.md, "fifty-eighth round"). With `CONVFLOW_FAST_INT16` set
/// (to any side: trying another side brings rgb48 back too) it takes every channel count.
pub const INT16_SKIP_CHANNELS: usize = 3;
/// `fast_int` on 16-bit samples finishes in floating point where the plan proves the clamp idle
/// (fast_int.cuh's `INT_FFIN`: two instructions an output where the integer rounding and clamp
/// take six; `CONVFLOW_FAST_INT_FFIN=0` / `1`). H100, `gaussian:3` full, µs, integer finish /
/// float finish: 1080p gray16 7.5 / 7.3, P010 10.1 / 9.7, 4K rgb48 41.6 / 41.0, RGBA64 51.7 /
/// 51.2; nowhere slower.
pub const INT16_FLOAT_FINISH: bool = true;
/// … and on 8-bit samples (`CONVFLOW_FAST_INT_FFIN8=0` / `1`): H100, `gaussian`, µs, integer
/// finish / float finish, 1080p / 4K / 8K: gray 3×3 6.3 / 12.7 / 33.7 against 5.9 / 11.6 / 30.0,
/// NV12 3×3 8.2 / 17.4 / 49.2 against 7.8 / 15.9 / 44.8, YUV 4:2:0 3×3 8.1 / 16.7 / 48.9 against
/// 7.8 / 15.3 / 43.6, RGB 3×3 12.0 / 30.1 / 93.6 against 11.6 / 29.3 / 90.6, RGBA 5×5 (its
/// deinterleaving kernel) 17.8 / 51.6 / 150.6 against 17.8 / 47.5 / 136.9; plans on other
/// kernels unchanged (docs/PERFORMANCE.md, "thirty-fourth round").
pub const INT8_FLOAT_FINISH: bool = true;
/// Most words of input window a `fast_int` thread may hold in registers (beyond, the f32
/// path: the window would spill).
pub const INT_MAX_WORDS: usize = 64;
/// The register kernels on small launches (`fast_int` but its deinterleaving and two-factor
/// forms, and `fast_reg`): few threads leave the multiprocessors idle, so each takes fewer
/// outputs. For 8-bit samples, one row per thread below this many samples in the launch (the
/// planes of a frame with as many channels) …
pub const INT_ONE_ROW_BELOW: usize = 3_000_000;
/// … and 8 samples a row, not 16, below this many. H100, `fast_int`, gaussian:3 and 5, 640×360
/// to 4K, µs, rows × samples per thread 2 × 16 (the rule before) / 1 × 16 / 1 × 8
/// (docs/PERFORMANCE.md, "eighteenth round"): 853×480 gray 3×3 5.3 / 4.8 / 4.0, NV12 3×3 12.3 /
/// 10.0 / 8.1, 720p gray 5.0 / 5.1 / 4.4, gray 5×5 7.1 / 6.2 / 6.0, NV12 10.6 / 9.1 / 8.6, RGB
/// (2.8 M samples) 7.9 / 7.1 / 8.1, YUV 4:2:0 (1.4 M in one launch) 5.6 / 5.2 / 5.9, 1080p gray
/// 5.8 / 5.4 / 5.8, NV12 11.4 / 10.1 / 10.5, YUV 4:2:0 (3.1 M) 6.5 / 6.8 / 8.0; on 4K 2 × 16 wins
/// everywhere (gray 10.0 / 10.5 / 12.8). `fast_reg` (f32 weights) measured alike
/// ("nineteenth round", same shapes): 853×480 gray 5×5 full 8.3 / 7.3 / 5.4, NV12 3×3 12.6 /
/// 9.8 / 7.8, RGBA (1.6 M) 3×3 8.3 / 6.7 / 6.3, 720p gray 5×5 8.4 / 6.9 / 6.6, RGB (2.8 M) 3×3
/// 8.1 / 7.6 / 8.3, 1080p NV12 5×5 19.4 / 17.5 / 17.2; on 4K 2 × 16 wins (RGB 5×5 59.0 / 70.0
/// / 91.4).
pub const INT_NARROW_BELOW: usize = 1_000_000;
/// `fast_int` on 16-bit samples: one row per thread below this many samples in the launch (H100,
/// `gaussian:3` full, µs, two rows / one: 1080p gray16 (2.1 M samples) 8.2 / 7.4, YUV 4:2:0
/// 10-bit (3.1 M in one launch) 9.6 / 9.1 and, with the float finish, P010 (a 2.1 M and a 1.0
/// M launch) 10.3 / 9.7; at 6.2 M, 1080p rgb48, 15.1 / 14.9 and RGBA64
/// (8.3 M) 17.4 / 18.5, 4K gray16 15.9 / 16.0: from 6.2 M one row gains 1 % or loses, so two
/// rows there; `fast_reg` keeps its own rule, one row gaining little or losing: 1080p gray16
/// 8.0 / 7.8, rgb48 15.4 / 17.3).
pub const INT16_ONE_ROW_BELOW: usize = 4_000_000;
/// For 16-bit samples (8 a row, 16 bytes), one row per thread below this many samples in the
/// launch …
pub const REG16_ONE_ROW_BELOW: usize = 1_000_000;
/// … and at most two below this many (full kernels of sides 4–5, which take
/// [`REG_ROWS_16BIT_5`] on larger launches, and one channel's of sides 6–7,
/// [`REG_ROWS_16BIT_7`], too).
/// H100, `fast_reg`, gaussian:3 / 5 full, µs, the rule before (2 rows at 3, 4 at 5) / 1 row /
/// 2 rows (docs/PERFORMANCE.md, "nineteenth round"): 640×360 rgb48 6.4 / 5.4 / 6.5 and 13.2 /
/// 9.8 / 10.8, 853×480 gray16 5×5 8.6 / 5.6 / 6.0, 720p gray16 (0.9 M) 5.1 / 4.7 / 5.3 and 9.1 /
/// 6.6 / 6.9, 720p rgb48 (2.8 M) 5×5 17.0 / 17.9 / 15.5, 1080p gray16 5×5 10.6 / 9.0 / 8.5,
/// YUV 4:2:0 10-bit (3.1 M) 12.0 / 12.8 / 11.5; the rule before at 6.2 M samples (1080p rgb48
/// 5×5 22.7 / 26.3 / 23.6): the cut lies between the two.
pub const REG16_TWO_ROWS_BELOW: usize = 4_000_000;

/// Samples and rows per thread of a register kernel (`fast_int` but its deinterleaving and
/// two-factor forms, `fast_reg`) of `sb`-byte samples for a launch of `samples` samples (`px`,
/// `py` the rule would give otherwise, returned unchanged on large launches; `int`: the kernel
/// is `fast_int`). The environment's overrides (`CONVFLOW_FAST_PY`, `CONVFLOW_FAST_REG_PX`)
/// keep theirs.
pub fn register_thread_shape(
    samples: usize,
    sb: usize,
    int: bool,
    (px, py): (usize, usize),
) -> (usize, usize) {
    let t = tuning();
    let py = match t.py {
        Some(_) => py,
        None if sb == 1 && samples < INT_ONE_ROW_BELOW => 1,
        None if sb == 2 && int && samples < INT16_ONE_ROW_BELOW => 1,
        None if sb == 2 && samples < REG16_ONE_ROW_BELOW => 1,
        None if sb == 2 && samples < REG16_TWO_ROWS_BELOW => py.min(2),
        None => py,
    };
    let px = match t.reg_px {
        None if sb == 1 && samples < INT_NARROW_BELOW => 8,
        _ => px,
    };
    (px, py)
}

/// The resident blocks of `fast_reg` (`blocks`, as
/// [`FastSpec::register`](super::FastSpec::register) set them) on a launch of `samples` samples:
/// 8-bit full kernels keep [`REG_MIN_BLOCKS`] below [`REG8_FULL_MIN_SAMPLES`], where
/// [`REG_MIN_BLOCKS_8BIT_FULL`]'s register cap costs more than its blocks bring. A
/// `CONVFLOW_FAST_MINB` override keeps `blocks` (the override's) at every size.
pub fn register_min_blocks(samples: usize, sb: usize, blocks: usize) -> usize {
    match tuning().min_blocks {
        None if sb == 1
            && blocks == REG_MIN_BLOCKS_8BIT_FULL
            && samples < REG8_FULL_MIN_SAMPLES =>
        {
            REG_MIN_BLOCKS
        }
        _ => blocks,
    }
}

/// See [`register_min_blocks`]: H100, `log`, 720p, µs, 4 / 8 blocks: gray (0.9 M samples) 3×3
/// 4.9 / 5.1, 4×4 5.9 / 6.1; YUV 4:2:0 (its three planes in one launch, 1.4 M) 4×4 8.4 / 7.6,
/// 5×5 9.7 / 8.8 (docs/PERFORMANCE.md, "thirty-sixth round").
pub const REG8_FULL_MIN_SAMPLES: usize = 1_000_000;

/// Threads of a register kernel's block (`fast_reg`, `fast_int`; fast_reg.cuh's and fast_int.cuh's
/// `__launch_bounds__(128, REG_MINB)` assume it).
pub const REG_THREADS: u32 = 128;

/// The widths (threads along a row) a register kernel's block of 128 threads takes, widest
/// first: where [`REG_BLOCK_WIDTH`] does not apply, the one that leaves the fewest idle
/// threads at the end of a row, the widest on a tie
/// ([`FastSpec::register_block`](super::FastSpec::register_block)).
pub const REG_BLOCK_WIDTHS: [usize; 3] = [32, 16, 8];
/// The narrow width: 8 × 16 blocks. The fewest-idle rule took 32 × 4 on 1440p gray and RGB
/// rows and on 1080p and 4K RGBA, 16 × 8 on 4K gray and RGB, 8 × 16 on 1080p gray and RGB.
/// Why narrow wins was not measured; likely because 32 output rows of a block then share the
/// kernel's halo rows, not 8. H100, alternating, µs, 8 wide against the fewest-idle rule:
/// `log:5` (`fast_reg`) 1080p RGBA 24.0 / 27.6, 1440p RGB 31.6 / 36.9, RGBA 33.5 / 39.2 and
/// YUV 4:2:0 16.7 / 19.6, 4K RGBA 59.7 / 66.4, 8K NV12 85.7 / 94.3; `log:3` NV12 1440p 11.3 /
/// 12.7; `fast_int` (`gaussian:3`, `:5`) level but 4K RGBA 5×5 44.5 / 47.5 …
pub const REG_BLOCK_WIDTH: usize = 8;
const _: () = assert!((REG_THREADS as usize).is_multiple_of(REG_BLOCK_WIDTH));
/// … on 8-bit planes of 1–2 channels at every side, and on planes of 3–4 channels from this
/// side on. At 3×3 the wide blocks of 3–4 channels were as fast or faster (8K RGBA `log:3`
/// 115.0 / 120.6 µs at 8 wide); one channel of 16-bit samples was up to 2 % slower at 8 wide
/// (3 % at 5K in the sweep: gray16 `gaussian:3` 25.4 / 24.7), and two channels of 16-bit
/// samples (P010's chroma) were not measured: both keep the fewest-idle rule (one channel of
/// 16-bit samples below [`REG16_NARROW_MIN_SIDE`]). One 8-bit point
/// lost more than 3 %: 1440p gray `gaussian:3`, 8.0 against 7.7 µs, where NV12 and YUV 4:2:0
/// of that size gained up to 1.12× at 3×3 and 1.22× at 5×5 (docs/PERFORMANCE.md,
/// "thirty-seventh round").
pub const REG_NARROW_MIN_SIDE: usize = 4;
/// … and for one channel of 16-bit samples from this side (the full 6×6 and 7×7 kernels it takes on
/// launches of [`REG16_FULL_MIN_SAMPLES`]): 8 wide against the fewest-idle rule (32 × 4 on 1440p to
/// 8K rows, 16 × 8 on 1080p), `gaussian:6` / `:7` full, 1080p to 8K, two passes alternating
/// (docs/PERFORMANCE.md, "forty-seventh round"): gray16 1.00–1.09× (4K `:7` 37.1 → 34.4 µs), YUV
/// 4:2:0 10-bit 1.03–1.17× (4K `:7` 56.9 → 49.2, `:6` 43.1 → 38.6), P010 `:6` 1.02–1.07× (P010
/// takes `:7` as its separable plan).
pub const REG16_NARROW_MIN_SIDE: usize = 6;

/// `fast_reg`'s output rows per thread (measured).
pub const REG_ROWS: usize = 2;
/// `fast_reg`'s resident blocks per multiprocessor (measured: 8 caps registers at 64, spills
/// and loses, except for 16-bit RGB/RGBA, one channel of 16-bit samples from side 4, and 8-bit
/// full kernels up to [`REG8_FULL_BLOCKS_MAX_SIDE`] on launches of [`REG8_FULL_MIN_SAMPLES`]) …
pub const REG_MIN_BLOCKS: usize = 4;
/// … for 16-bit samples of 3–4 channels (measured: 49 µs vs 57 µs on 4K rgb48 3×3).
pub const REG_MIN_BLOCKS_WIDE16: usize = 8;
/// … for full 8-bit kernels up to [`REG8_FULL_BLOCKS_MAX_SIDE`] on a side (the plans `fast_int`
/// does not take: float weights such as `log:k`'s or a custom kernel's, integers beyond a signed
/// byte). H100, `log`, the rule's thread shapes, alternating, µs, 4 / 8 blocks: 1080p gray 3×3
/// 7.0 / 6.7, 5×5 10.4 / 9.7, RGB 3×3 13.5 / 12.7; 4K gray 3×3 14.5 / 13.6, 5×5 22.4 / 20.8,
/// RGB 3×3 35.3 / 31.4, 5×5 59.0 / 57.2, RGBA 5×5 71.7 / 66.0; 8K RGB 3×3 115.6 / 97.7; none
/// slower beyond the noise from 1080p up (docs/PERFORMANCE.md, "thirty-sixth round"); on smaller
/// launches see [`register_min_blocks`].
pub const REG_MIN_BLOCKS_8BIT_FULL: usize = 8;
/// See [`REG_MIN_BLOCKS_8BIT_FULL`]: sides 6–7 keep [`REG_MIN_BLOCKS`] (not measured with 8;
/// their windows hold more words).
pub const REG8_FULL_BLOCKS_MAX_SIDE: usize = 5;
/// `fast_reg`'s rows per thread for full 16-bit kernels of side 4–5 (H100, gaussian:5 on 4K /
/// 8K, against 2 rows: rgb48 68.2 / 219.8 µs against 81.4 / 291.6, RGBA64 79.6 / 263.4 against
/// 117.1 / 432.6, gray16 67.3 on 8K against 68.9, yuv420p10 101.0 against 107.3; 3×3 is as
/// fast with 2, which it keeps) …
pub const REG_ROWS_16BIT_5: usize = 4;
/// … and of sides 6–7 (one channel, [`REG_MAX_FULL_GRAY16`]; launches under
/// [`REG16_TWO_ROWS_BELOW`] samples keep at most 2): H200, `gaussian:7` full, µs, against 2
/// rows (docs/PERFORMANCE.md, "fifty-ninth round"): gray16 4K / 8K 23.8 / 79.3 against 26.0 /
/// 87.9, YUV 4:2:0 10-bit 37.4 / 128.4 against 39.0 / 139.0; `gaussian:6`, `log:6` and `log:7`
/// on these and P010 1440p–8K 0.99–1.12×; 4 rows 1.04–1.13× in the sweep, 3 the more even.
pub const REG_ROWS_16BIT_7: usize = 3;
/// … with these blocks resident per multiprocessor for one channel (gray16 4K / 8K 23.5 / 67.3
/// µs against 22.0 / 70.8 with 4; at side 7, 4K / 8K 37.7 / 108.7 against 37.4 / 111.2), and
/// [`REG_MIN_BLOCKS`] for 3–4 (with 8, rgb48 171.5 µs on 8K: spills).
pub const REG_MIN_BLOCKS_GRAY16_5: usize = 8;

/// Whether the f32 kernels on a plane of `ch` interleaved channels of `sb`-byte samples leave
/// the output rule's clamp out where the plan proves it idle
/// ([`Plan::saturation_free`](crate::filter::Plan::saturation_free); fast.cu's `SAT_FREE`), the
/// plan separable or not, `side` taps on its larger side: one and two channels everywhere;
/// three and four in separable plans but rgb48's up to [`SAT_CLAMP_RGB48_MAX_SIDE`], and in full
/// ones up to [`SAT_FREE_FULL_MAX_SIDE`].
///
/// H200, left out against kept on 3–4 channels (the rule before, from H100's twenty-third
/// round: kept there), two passes alternating, best of each, `gaussian:3`–`:25` and `box:5` /
/// `:9`, full and separable, 1080p / 4K / 8K (docs/PERFORMANCE.md, "sixty-third round"):
/// - separable: RGB 1.00–1.045× (geomean 1.02; 8K `:15` / `:25` 186.2 / 303.9 → 179.5 / 294.0
///   µs, `box:9` 1.045×), RGBA 1.00–1.03×, RGBA64 1.00–1.02×; rgb48 5–9 taps 0.94–0.98× on 4K
///   and 8K (8K `:9` 182.3 → 194.0), 1.00–1.01× on 1080p, 15 / 25 level; at 3 taps it gained
///   1.01–1.03×, but that plan, left as it was, was not run through the GPU tests this round;
/// - full: `:7`–`:15` 1.00–1.03× (8K rgb48 `:7` 295.0 → 288.3) but rgb48 `:9` and `box:9`
///   0.994–0.997×; `:25` 0.99× on RGBA and RGBA64, 1.00× on rgb48, 0.96 / 0.98× on RGB on 8K
///   / 4K (8K 3051.9 → 3187.4; 1.01× on 1080p): full kernels over 15 taps keep it (17–23
///   were not measured).
///
/// One and two channels had left it out since the twenty-third round (H100: 1080p gray 5 / 7
/// 7.1 / 7.3 µs kept against 6.8 / 7.0 left out).
pub fn sat_free(ch: usize, sb: usize, separable: bool, side: usize) -> bool {
    tuning().sat_free.unwrap_or(match (ch, separable) {
        (1 | 2, _) => true,
        (_, true) => (ch, sb) != (3, 2) || side > SAT_CLAMP_RGB48_MAX_SIDE,
        (_, false) => side <= SAT_FREE_FULL_MAX_SIDE,
    })
}
/// See [`sat_free`].
pub const SAT_CLAMP_RGB48_MAX_SIDE: usize = 9;
/// See [`sat_free`].
pub const SAT_FREE_FULL_MAX_SIDE: usize = 15;

/// Whether a plane's samples become floats through the conversion unit (16-bit ones: one `I2F.U16`
/// a sample, either half of a word, on a pipe of its own at an eighth of FFMA's rate) rather than
/// by their bits in a float's mantissa (`byte_perm` and an FADD, two issued instructions; fast.cu's
/// `word_value`, [`FastSpec::conv_unit`](super::FastSpec::conv_unit)): 16-bit samples stored from
/// bit 0 of their words (`shift` 0: every 9–16-bit format but P010 and P012, whose samples sit 6
/// and 4 bits up; measured on gray16, rgb48, RGBA64 and YUV 4:2:0 10-bit). Both are exact. H200,
/// against the mantissa route, 4K and 8K, `gaussian:3`–`:15`, best of two passes
/// (docs/PERFORMANCE.md, "fifty-third round"): gray16 full 7×7 1.064–1.071× (the register kernel:
/// 8K 98.5 → 92.6 µs), YUV 4:2:0 10-bit full 7×7 1.046–1.055× and 5×5 1.028×, rgb48 full and
/// separable 5 1.028–1.065× and separable 9 1.036–1.039×, YUV 4:2:0 10-bit separable 5–15
/// 1.007–1.029×, the rest 0.996–1.017× but rgb48 separable 7 (0.991 / 0.982×) and 4K separable 15
/// (0.983×).
///
/// 8-bit samples: `I2F.U8` reads bytes 0 and 3 of a word in one instruction (bytes 1 and 2
/// would take a shift first), so those two bytes of each word go through the conversion unit,
/// the other two through `byte_perm`, in the f32 register kernel (`fast_reg`) of full plans of
/// sides [`CONV_UNIT8_SIDES`] on planes of 2–4 channels (`register_full_side`: that kernel's
/// side, None for other kernels; two channels take it up to 5 taps). H200, `log:3`/`:5`/`:7`
/// (float weights: every plan full and f32), against the mantissa route, 720p / 1080p / 1440p /
/// 4K / 8K, best of two passes
/// (docs/PERFORMANCE.md, "fifty-fourth round"): RGB 5×5 1.01 / 1.02 / 1.03 / 1.04 / 1.04×,
/// RGBA 5×5 1.01–1.04×, NV12 5×5 1.01–1.10× (both planes), at 7×7 8K RGB 1.11× and 4K / 8K
/// RGBA 1.04× (smaller planes take the tiled kernel at 6–7 taps, `full_tiled_first`); 3×3
/// 0.95–1.04× and one channel at 5 0.98–1.02× (not taken). The side is the kernel's longer one
/// (a 7×3 kernel counts as 7); 6 lies between the two measured sides. Measured on fast_sep
/// (round 53, `gaussian`): 0.994–1.036×, not taken.
/// `CONVFLOW_FAST_XU`: 0 never.
pub fn conversion_unit(
    sb: usize,
    shift: u32,
    ch: usize,
    register_full_side: Option<usize>,
) -> bool {
    let sampled = match sb {
        2 => true,
        _ => ch >= 2 && register_full_side.is_some_and(|s| CONV_UNIT8_SIDES.contains(&s)),
    };
    tuning().conv_unit.unwrap_or(true) && shift == 0 && sampled
}

/// Sides of the f32 register kernel's full plans whose 8-bit samples of 2–4 channels go
/// through the conversion unit ([`conversion_unit`]; measured at 5 and 7).
pub const CONV_UNIT8_SIDES: std::ops::RangeInclusive<usize> = 5..=7;

/// A frame's two planes of two specializations (NV12's luma and interleaved chroma, P010's) in
/// one launch (`fast_pair`), not two side by side, where both planes' kernels took the same block
/// shape: where both take the register kernels (`fast_int`, `fast_reg`: no shared memory), and
/// where either takes a tiled one, full kernels up to this many taps a side …
pub const PAIR_FULL_MAX_SIDE: usize = 15;
/// … and separable ones up to this many on frames whose first plane has fewer pixels than
/// [`PAIR_SEP_BELOW_PIXELS`] …
pub const PAIR_SEP_MAX_SIDE: usize = 9;
/// See [`PAIR_SEP_MAX_SIDE`].
pub const PAIR_SEP_BELOW_PIXELS: usize = 16_000_000;
/// … and up to this many on frames under [`PAIR_SEP_LONG_BELOW_PIXELS`]. The pair's blocks all
/// take the larger shared tile of the two (the chroma plane's rows hold twice the samples) and
/// the looser launch bound, which long separable kernels pay for in occupancy. H100, gaussian,
/// µs, side by side / one launch, two passes alternating (docs/PERFORMANCE.md, "forty-ninth
/// round"): 3×3 NV12 1080p / 4K / 8K 8.0 / 15.8 / 44.6 → 6.5 / 14.3 / 42.0, P010 9.9 / 24.2 /
/// 74.4 → 8.7 / 22.3 / 73.0; P010 1080p separable 7 11.9 → 10.3; full 15 1.03–1.11× (1080p NV12
/// 51.8 → 46.7), but full 25 0.97–0.98×; separable 15 1.04–1.09× on 1080p, 0.94–0.98× on 4K and
/// 8K; separable 25 0.73–0.84×; P010 5 on 8K (16 × 8 tiled blocks) 0.88×. (NV12's 8-bit
/// separable kernels of 4–9 taps take 16 × 8 blocks on both planes, and so one launch, where
/// the chroma plane has fewer pixels than [`SEP_WIDE_CHROMA_BELOW_PIXELS`] (frames under about 4
/// M pixels); on larger ones 8 × 16 on the chroma plane and two launches.)
pub const PAIR_SEP_LONG_MAX_SIDE: usize = 15;
/// See [`PAIR_SEP_LONG_MAX_SIDE`].
pub const PAIR_SEP_LONG_BELOW_PIXELS: usize = 4_000_000;

/// Whether a frame's two planes, the first of `pixels` pixels, whose kernels took the same
/// block shape, take one `fast_pair` launch for a kernel `side` taps on its longer side:
/// always where neither kernel is tiled, else as [`PAIR_FULL_MAX_SIDE`] (full, not `separable`)
/// and [`PAIR_SEP_MAX_SIDE`] say.
pub fn paired(tiled: bool, separable: bool, side: usize, pixels: usize) -> bool {
    match (tiled, separable) {
        (false, _) => true,
        (true, false) => side <= PAIR_FULL_MAX_SIDE,
        (true, true) => {
            side <= PAIR_SEP_MAX_SIDE && pixels < PAIR_SEP_BELOW_PIXELS
                || side <= PAIR_SEP_LONG_MAX_SIDE && pixels < PAIR_SEP_LONG_BELOW_PIXELS
        }
    }
}

/// Bytes of local memory a thread (the driver's `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`, where
/// registers spilled under the launch bounds go) that `fast`'s kernels keep before their
/// bounds are eased (`kernel::unspilled`). H100, separable, µs, with the bound the rule asks
/// against fewer blocks (docs/PERFORMANCE.md, "forty-second round"): RGBA64 `gaussian:10`, 8
/// blocks (216 bytes; ptxas: 272 bytes of spill stores) against 5 (56 bytes of spill stores)
/// and 3 (none), 1080p 47.4 / 33.8 / 37.1, 4K 149.9 / 97.4 / 113.7, 8K 565.7 / 350.9 / 438.4;
/// 8-bit RGBA `gaussian:7`, 5 blocks (16 bytes) against 4, 4K 56.6 against 61.0, 1080p 19.4
/// against 20.5; `gaussian:10` on 1080p, 5 blocks (64 bytes, kept) against 3, 25.0 against
/// 26.7. A few spilled words cost less than the occupancy a lower bound gives up. The line
/// sits on that last point: a compiler that spilled a word more there would ease it.
pub const SPILL_TOLERATED_BYTES: usize = 64;

/// Overrides of the measured rules, for measuring the alternatives (docs/PERFORMANCE.md):
/// `CONVFLOW_FAST_REG_MAX` (largest kernel side for `fast_reg`; 0: never) and
/// `CONVFLOW_FAST_PY` (its rows per thread, 1–8), `CONVFLOW_FAST_REG_PX` (8-bit samples per
/// thread of the register and integer kernels but the deinterleaving one: 4, 8 or 16),
/// `CONVFLOW_FAST_REG_BX` (threads along a row of the register and integer kernels' blocks:
/// 8, 16 or 32; 0: the fewest-idle width on every plane, [`REG_BLOCK_WIDTHS`]),
/// `CONVFLOW_FAST_MINB` (its resident blocks per multiprocessor, 1–16),
/// `CONVFLOW_FAST_TILED_PY` (rows per thread of the tiled kernels, 1–8; unset, small launches
/// take fewer, [`tiled_rows`]), `CONVFLOW_FAST_TILED_PX` (samples per thread of the full tiled
/// kernel on planes whose channels are all filtered: 4, 8, 12 or 16; its rows and unrolling stay
/// those of the default, so set `CONVFLOW_FAST_TILED_PY` with it), `CONVFLOW_FAST_INT_MAX`
/// (largest kernel side for `fast_int`; 0: never), `CONVFLOW_FAST_INT_CH` (most channels
/// `fast_int` takes), `CONVFLOW_FAST_DEIL_WIDTH`
/// (least kernel width it deinterleaves), `CONVFLOW_FAST_INT_PIXELS` (pixels per deinterleaving
/// thread: 4 or 8), `CONVFLOW_FAST_INT_SEP_MIN` (least side of its two-factor kernel),
/// `CONVFLOW_FAST_INT16` (largest kernel side for `fast_int` on 16-bit samples, on any
/// channels; 0: never),
/// `CONVFLOW_FAST_INT_FFIN` (0 / 1: its float finish never / where proven; with
/// `CONVFLOW_FAST_INT_FFIN8` the same for 8-bit samples),
/// `CONVFLOW_FAST_SEPG` (1: the tiled separable kernel's row pass reads global memory; 0: an
/// input tile), `CONVFLOW_FAST_SEPA` (1 / 0: inner blocks of that kernel stage their input
/// rows everywhere / nowhere, [`sep_staged`]), `CONVFLOW_FAST_SEPV` (0 / 1: those blocks read
/// their staged words by 16-byte loads never / wherever that fits, [`sep_staged_vector`]),
/// `CONVFLOW_FAST_SEPK` (0 / 1: that kernel keeps sums for an unfiltered alpha / none
/// wherever that fits, [`sep_compact_sums`]),
/// `CONVFLOW_FAST_SEPI` (0: its row pass never in
/// exact integers, which it is by default wherever proven), `CONVFLOW_FAST_SEP_TILED_MIN`
/// (least side of the separable plans the tiled kernel takes first, on every plane),
/// `CONVFLOW_FAST_SEP_MINB` (blocks of 128 threads of the tiled separable kernel resident per
/// multiprocessor at least, [`sep_min_blocks`]; 0: no bound), `CONVFLOW_FAST_SEP_HPX`
/// (threads' outputs per row-pass item of that kernel, 1, 2 or 4, [`sep_row_threads`]; for
/// threads owning other than 4 pixels' samples, up to as many samples as that many 4-pixel
/// threads own), `CONVFLOW_FAST_SEP_PX` (samples a thread of that kernel owns in a row on
/// planes whose channels are all filtered: 4, 8, 12 or 16, [`sep_px`]),
/// `CONVFLOW_FAST_HS_PAD` (1 / 0: its rows of horizontal sums padded everywhere / nowhere,
/// [`sums_padded`]),
/// `CONVFLOW_FAST_SAT_FREE` (0: the f32 kernels keep the output rule's clamp where the plan
/// proves it idle; 1: they leave it out on planes of any channel count and kernel,
/// [`sat_free`]), `CONVFLOW_FAST_SIDE_STREAMS` (0: a frame's launches one after the
/// other on the backend's stream, not side by side), `CONVFLOW_FAST_SEP_BLOCK` (WxH: the block
/// of `fast_sep` in place of [`SEP_BLOCK`] and of [`SEP_BLOCK_SQUARE16`] where no other rule
/// sets it), `CONVFLOW_FAST_SEPD`
/// (0 / 1: `fast_sep`'s integer row pass on 2–4 channels never / always regroups its windows
/// per channel, [`sep_int_channels`]), `CONVFLOW_FAST_SEPC` and `CONVFLOW_FAST_CROLL` (0 / 1:
/// `fast_sep`'s row pass one channel at a time, its column pass rolled, never / wherever it
/// fits, [`sep_rolled`]), `CONVFLOW_FAST_SPILL` (0: launch bounds kept where they spill
/// registers; 2: eased as by default, and each easing said on stderr; `kernel::unspilled`),
/// `CONVFLOW_FAST_FOLLOW` (0: launches queued plainly, not as programmatic dependents of the
/// kernel before them), `CONVFLOW_FAST_PAIR` (0: a frame's two planes of two specializations,
/// NV12's and P010's, in two launches side by side, never in one `fast_pair` launch; 1: in one
/// wherever their kernels took the same block shape, [`paired`] aside), `CONVFLOW_FAST_SEP_FIXED`
/// (0 / 1: `fast_sep`'s block compiled in never / on every plane, [`sep_fixed_block`]),
/// `CONVFLOW_FAST_SEP_ZOFF` (0 / 1: `fast_sep` with its block compiled in adds a zero offset /
/// leaves it out on planes of any channel count, [`sep_zero_offset`]), `CONVFLOW_FAST_XU` (0:
/// samples converted by `byte_perm` and an FADD, never by the conversion unit: neither 16-bit
/// ones nor 8-bit bytes 0 and 3 in `fast_reg`, [`conversion_unit`]), `CONVFLOW_FAST_MEMORY`
/// (0 / 1: the device taken as one of standard / fast memory, [`fast_memory`]). Read once per
/// process;
/// `CONVFLOW_FAST_SPILL=0` also keeps a pair whose kernel spills.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tuning {
    pub(super) reg_max: Option<usize>,
    pub(super) py: Option<usize>,
    pub(super) reg_px: Option<usize>,
    pub(super) reg_bx: Option<usize>,
    pub(super) min_blocks: Option<usize>,
    pub(super) tiled_py: Option<usize>,
    pub(super) tiled_px: Option<usize>,
    pub(super) int_max: Option<usize>,
    pub(super) int_ch: Option<usize>,
    pub(super) deil_width: Option<usize>,
    pub(super) int_pixels: Option<usize>,
    pub(super) int_sep_min: Option<usize>,
    pub(super) int16_max: Option<usize>,
    pub(super) int_ffin: Option<bool>,
    pub(super) int_ffin8: Option<bool>,
    pub(super) sep_global: Option<bool>,
    pub(super) sep_staged: Option<bool>,
    pub(super) sep_int: Option<bool>,
    pub(super) sums_pad: Option<bool>,
    pub(super) sep_tiled_min: Option<usize>,
    pub(super) sep_minb: Option<usize>,
    pub(super) sep_hpx: Option<usize>,
    pub(super) sep_px: Option<usize>,
    pub(super) sat_free: Option<bool>,
    pub(super) side_streams: Option<bool>,
    pub(super) pair: Option<bool>,
    pub(super) sep_block: Option<(u32, u32)>,
    pub(super) sep_deil: Option<bool>,
    pub(super) sums_planar: Option<bool>,
    pub(super) col_rolled: Option<bool>,
    pub(super) spill_guard: Option<usize>,
    pub(super) follow: Option<bool>,
    pub(super) sep_fixed: Option<bool>,
    pub(super) sep_zoff: Option<bool>,
    pub(super) conv_unit: Option<bool>,
    pub(super) fast_memory: Option<bool>,
    pub(super) sep_vector: Option<bool>,
    pub(super) sep_compact: Option<bool>,
}

pub(super) fn tuning() -> Tuning {
    static T: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
        Tuning {
            reg_max: var("CONVFLOW_FAST_REG_MAX"),
            py: var("CONVFLOW_FAST_PY").filter(|py| (1..=8).contains(py)),
            reg_px: var("CONVFLOW_FAST_REG_PX").filter(|px| [4, 8, 16].contains(px)),
            reg_bx: var("CONVFLOW_FAST_REG_BX")
                .filter(|bx| *bx == 0 || REG_BLOCK_WIDTHS.contains(bx)),
            min_blocks: var("CONVFLOW_FAST_MINB").filter(|b| (1..=16).contains(b)),
            tiled_py: var("CONVFLOW_FAST_TILED_PY").filter(|py| (1..=8).contains(py)),
            tiled_px: var("CONVFLOW_FAST_TILED_PX").filter(|px| [4, 8, 12, 16].contains(px)),
            int_max: var("CONVFLOW_FAST_INT_MAX"),
            int_ch: var("CONVFLOW_FAST_INT_CH"),
            deil_width: var("CONVFLOW_FAST_DEIL_WIDTH"),
            int_pixels: var("CONVFLOW_FAST_INT_PIXELS").filter(|n| [4, 8].contains(n)),
            int_sep_min: var("CONVFLOW_FAST_INT_SEP_MIN"),
            int16_max: var("CONVFLOW_FAST_INT16"),
            int_ffin: var("CONVFLOW_FAST_INT_FFIN").map(|v: usize| v != 0),
            int_ffin8: var("CONVFLOW_FAST_INT_FFIN8").map(|v: usize| v != 0),
            sep_global: var("CONVFLOW_FAST_SEPG").map(|v: usize| v != 0),
            sep_staged: var("CONVFLOW_FAST_SEPA").map(|v: usize| v != 0),
            sep_int: var("CONVFLOW_FAST_SEPI").map(|v: usize| v != 0),
            sums_pad: var("CONVFLOW_FAST_HS_PAD").map(|v: usize| v != 0),
            sep_tiled_min: var("CONVFLOW_FAST_SEP_TILED_MIN"),
            sep_minb: var("CONVFLOW_FAST_SEP_MINB").filter(|b| (0..=16).contains(b)),
            sep_hpx: var("CONVFLOW_FAST_SEP_HPX").filter(|m| [1, 2, 4].contains(m)),
            sep_px: var("CONVFLOW_FAST_SEP_PX").filter(|px| [4, 8, 12, 16].contains(px)),
            sat_free: var("CONVFLOW_FAST_SAT_FREE").map(|v: usize| v != 0),
            side_streams: var("CONVFLOW_FAST_SIDE_STREAMS").map(|v: usize| v != 0),
            pair: var("CONVFLOW_FAST_PAIR").map(|v: usize| v != 0),
            sep_block: std::env::var("CONVFLOW_FAST_SEP_BLOCK")
                .ok()
                .and_then(|v| crate::backend::parse_block(&v).ok()),
            sep_deil: var("CONVFLOW_FAST_SEPD").map(|v: usize| v != 0),
            sums_planar: var("CONVFLOW_FAST_SEPC").map(|v: usize| v != 0),
            col_rolled: var("CONVFLOW_FAST_CROLL").map(|v: usize| v != 0),
            spill_guard: var("CONVFLOW_FAST_SPILL").filter(|v| *v <= 2),
            follow: var("CONVFLOW_FAST_FOLLOW").map(|v: usize| v != 0),
            sep_fixed: var("CONVFLOW_FAST_SEP_FIXED").map(|v: usize| v != 0),
            sep_zoff: var("CONVFLOW_FAST_SEP_ZOFF").map(|v: usize| v != 0),
            conv_unit: var("CONVFLOW_FAST_XU").map(|v: usize| v != 0),
            fast_memory: var("CONVFLOW_FAST_MEMORY").map(|v: usize| v != 0),
            sep_vector: var("CONVFLOW_FAST_SEPV").map(|v: usize| v != 0),
            sep_compact: var("CONVFLOW_FAST_SEPK").map(|v: usize| v != 0),
        }
    })
}

/// Threads of a tiled launch of `samples` samples whose threads take `px` samples of `py` rows
/// (what [`tiled_rows`] and [`sep_rows_rgb_small`] compare with [`TILED_FEW_THREADS`]).
pub fn tiled_threads(samples: usize, (px, py): (usize, usize)) -> usize {
    samples / (px * py).max(1)
}

/// Threads of a tiled launch (its planes with as many channels) below which each thread takes
/// fewer rows ([`tiled_rows`]): few threads leave the multiprocessors idle …
pub const TILED_FEW_THREADS: usize = 64 * 1024;
/// … and below which separable kernels up to 9 taps high take one row, not two.
pub const TILED_VERY_FEW_THREADS: usize = 32 * 1024;

/// Separable tiled kernels of 16-bit samples up to this many taps high take one row per
/// thread on small launches ([`tiled_rows`]), taller ones two.
pub const TILED_SEP16_ONE_ROW_MAX: usize = 15;

/// Rows per thread of a tiled kernel (`fast_full`, `fast_sep`; not with `--block`) over planes
/// of `sb`-byte samples, `samples` samples in all, whose rule gives `px` samples and `py` rows
/// per thread, when fewer than [`TILED_FEW_THREADS`] threads would run: one row for full
/// kernels but 4 channels taller than 7 (853×480 RGBA 9×9: 14.7 µs with 2 rows, 16.4 with 1);
/// for separable 8-bit kernels two rows (one up to 9 taps high below
/// [`TILED_VERY_FEW_THREADS`]), 4 channels keeping theirs; for separable 16-bit kernels one
/// row up to [`TILED_SEP16_ONE_ROW_MAX`] taps high, two beyond, 4 channels too.
///
/// H100, gaussian:7…25, 640×360 to 1080p, µs, the rule before / 1 row / 2 rows
/// (docs/PERFORMANCE.md, "eighteenth round"): full 853×480 gray 7×7 9.8 / 7.1 / 7.7, NV12 22.5 /
/// 13.5 / 16.1, 640×360 RGB 9.7 / 8.3 / 9.5, 720p gray 10.6 / 9.6 / 9.7; separable 853×480 RGB 7
/// 11.0 / 7.2 / 8.6, RGB 25 25.8 / 23.0 / 19.4, 720p RGB 15 18.6 / 19.0 / 14.7, NV12 9 14.0 / 10.7
/// / 11.6. From 64 K threads the rule before stays (720p YUV 4:2:0 15×15 full 25.7 / 28.3 / 27.8,
/// 1080p gray 15×15 separable 9.6 / 12.6 / 10.2). 16-bit samples ("nineteenth round"): full 640×360
/// gray16 7×7 9.6 / 5.8 / 7.0, 853×480 YUV 4:2:0 10-bit 15×15 19.1 / 14.8 / 15.8; separable 853×480
/// rgb48 9 14.0 / 9.4 / 11.2, RGBA64 7 13.1 / 10.7 / 13.2, 640×360 gray16 15 6.9 / 5.1 / 6.0,
/// 853×480 gray16 25 8.8 / 8.5 / 7.5, rgb48 25 27.6 / 27.0 / 23.7. This rule and the 16-bit
/// register rule ([`register_thread_shape`]) together ran 16-bit launches of sides 3–25 from
/// 640×360 to 1080p 1.13× faster geomean than before (0.95–1.84×).
pub fn tiled_rows(
    samples: usize,
    (px, py): (usize, usize),
    sep: bool,
    (ch, sb): (usize, usize),
    kh: usize,
) -> usize {
    let threads = tiled_threads(samples, (px, py));
    if threads >= TILED_FEW_THREADS || py <= 1 {
        py
    } else if !sep {
        if ch < 4 || kh <= 7 {
            1
        } else {
            py
        }
    } else if sb >= 2 {
        if kh <= TILED_SEP16_ONE_ROW_MAX {
            1
        } else {
            py.min(2)
        }
    } else if ch >= 4 {
        py
    } else if threads < TILED_VERY_FEW_THREADS && kh <= 9 {
        1
    } else {
        py.min(2)
    }
}

/// Shared memory a tiled block may take before a smaller block is preferred: 48 KB, and 80 KB
/// for separable kernels taller than 9, where the 16×8 blocks at 50–74 KB beat the 48 KB ones
/// on 4K RGB k = 15/25 by 1.8× / 1.2× (at k = 7 they lost 9 %; docs/PERFORMANCE.md).
pub(super) const FULL_TILE_PREFERRED: usize = 48 * 1024;
pub(super) const SEP_TILE_PREFERRED: usize = 80 * 1024;
/// … and for `FastSpec::first_block`'s blocks (16 × 16 for RGB 25: 102 KB, two blocks per
/// multiprocessor).
pub(super) const TALL_TILE_PREFERRED: usize = 112 * 1024;

/// Block shapes tried, largest first, when none was asked for.
pub(super) const BLOCKS: [(u32, u32); 11] = [
    (32, 8),
    (16, 8),
    (32, 4),
    (16, 4),
    (8, 8),
    (8, 4),
    (16, 2),
    (8, 2),
    (8, 1),
    (4, 1),
    (1, 1),
];
