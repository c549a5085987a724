//! The measured rules of `fast`: which kernel, thread shape and block each plan gets, as named
//! constants with the measurements behind them (docs/PERFORMANCE.md), and the environment
//! overrides that measure the alternatives. [`FastSpec`](super::FastSpec)'s constructors and
//! the launch read them; nothing else decides.

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
/// (H100, held clock, gaussian:7 full, µs, against the tiled kernel: gray16 1080p / 4K / 8K 15.6
/// / 37.7 / 108.5 against 16.9 / 48.9 / 161.5, YUV 4:2:0 10-bit 720p / 1080p / 4K / 8K 13.5 /
/// 21.0 / 58.7 / 176.3 against 15.7 / 27.7 / 71.0 / 249.8; at 9 the tiled kernel won, 4K gray16
/// 56.3 against 65.5, and on 3–4 channels at 7, rgb48 1080p 38.2 against 43.9;
/// docs/PERFORMANCE.md, "twenty-fourth round").
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
/// For 16-bit samples (8 a row, 16 bytes), one row per thread below this many samples in the
/// launch …
pub const REG16_ONE_ROW_BELOW: usize = 1_000_000;
/// … and at most two below this many (full kernels of sides 4–5, which take
/// [`REG_ROWS_16BIT_5`] on larger launches, too).
/// H100, `fast_reg`, gaussian:3 / 5 full, µs, the rule before (2 rows at 3, 4 at 5) / 1 row /
/// 2 rows (docs/PERFORMANCE.md, "nineteenth round"): 640×360 rgb48 6.4 / 5.4 / 6.5 and 13.2 /
/// 9.8 / 10.8, 853×480 gray16 5×5 8.6 / 5.6 / 6.0, 720p gray16 (0.9 M) 5.1 / 4.7 / 5.3 and 9.1 /
/// 6.6 / 6.9, 720p rgb48 (2.8 M) 5×5 17.0 / 17.9 / 15.5, 1080p gray16 5×5 10.6 / 9.0 / 8.5,
/// YUV 4:2:0 10-bit (3.1 M) 12.0 / 12.8 / 11.5; the rule before at 6.2 M samples (1080p rgb48
/// 5×5 22.7 / 26.3 / 23.6): the cut lies between the two.
pub const REG16_TWO_ROWS_BELOW: usize = 4_000_000;

/// Samples and rows per thread of a register kernel (`fast_int` but its deinterleaving and
/// two-factor forms, `fast_reg`) of `sb`-byte samples for a launch of `samples` samples (`px`,
/// `py` the rule would give otherwise, returned unchanged on large launches). The environment's
/// overrides (`CONVFLOW_FAST_PY`, `CONVFLOW_FAST_REG_PX`) keep theirs.
pub fn register_thread_shape(
    samples: usize,
    sb: usize,
    (px, py): (usize, usize),
) -> (usize, usize) {
    let t = tuning();
    let py = match t.py {
        Some(_) => py,
        None if sb == 1 && samples < INT_ONE_ROW_BELOW => 1,
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

/// `fast_reg`'s output rows per thread (measured).
pub const REG_ROWS: usize = 2;
/// `fast_reg`'s resident blocks per multiprocessor (measured: 8 caps registers at 64, spills
/// and loses, except for 16-bit RGB/RGBA).
pub const REG_MIN_BLOCKS: usize = 4;
/// … for 16-bit samples of 3–4 channels (measured: 49 µs vs 57 µs on 4K rgb48 3×3).
pub const REG_MIN_BLOCKS_WIDE16: usize = 8;
/// `fast_reg`'s rows per thread for full 16-bit kernels of side 4–5 (H100, gaussian:5 on 4K /
/// 8K, against 2 rows: rgb48 68.2 / 219.8 µs against 81.4 / 291.6, RGBA64 79.6 / 263.4 against
/// 117.1 / 432.6, gray16 67.3 on 8K against 68.9, yuv420p10 101.0 against 107.3; 3×3 is as
/// fast with 2, which it keeps) …
pub const REG_ROWS_16BIT_5: usize = 4;
/// … with these blocks resident per multiprocessor for one channel (gray16 4K / 8K 23.5 / 67.3
/// µs against 22.0 / 70.8 with 4; at side 7, 4K / 8K 37.7 / 108.7 against 37.4 / 111.2), and
/// [`REG_MIN_BLOCKS`] for 3–4 (with 8, rgb48 171.5 µs on 8K: spills).
pub const REG_MIN_BLOCKS_GRAY16_5: usize = 8;

/// Most interleaved channels of the planes whose f32 kernels leave the output rule's clamp out
/// where the plan proves it idle ([`Plan::saturation_free`](crate::filter::Plan::saturation_free);
/// fast.cu's `SAT_FREE`). H100, held clock, gaussian:3…25, full and separable, kept against left
/// out (docs/PERFORMANCE.md, "twenty-third round"): 1080p gray 5 / 7 7.1 / 7.3 µs against 6.8 /
/// 7.0, gray16 25 14.1 against 13.4, NV12 5 12.6 against 12.1, 4K gray 25 30.5 against 30.0; on
/// 3–4 channels it won or lost a few per cent (4K RGBA 9 separable 76.4 against 74.6, rgb48 7
/// separable 59.4 against 62.5, rgb48 5×5 67.3 against 69.4), so those keep the clamp.
pub const SAT_FREE_MAX_CHANNELS: usize = 2;

/// Overrides of the measured rules, for measuring the alternatives (docs/PERFORMANCE.md):
/// `CONVFLOW_FAST_REG_MAX` (largest kernel side for `fast_reg`; 0: never) and
/// `CONVFLOW_FAST_PY` (its rows per thread, 1–8), `CONVFLOW_FAST_REG_PX` (8-bit samples per
/// thread of the register and integer kernels but the deinterleaving one: 4, 8 or 16),
/// `CONVFLOW_FAST_MINB` (its resident blocks per multiprocessor, 1–16),
/// `CONVFLOW_FAST_TILED_PY` (rows per thread of the tiled kernels, 1–8; unset, small launches
/// take fewer, [`tiled_rows`]), `CONVFLOW_FAST_INT_MAX` (largest kernel side for `fast_int`; 0:
/// never), `CONVFLOW_FAST_INT_CH` (most channels `fast_int` takes), `CONVFLOW_FAST_DEIL_WIDTH`
/// (least kernel width it deinterleaves), `CONVFLOW_FAST_INT_PIXELS` (pixels per deinterleaving
/// thread: 4 or 8), `CONVFLOW_FAST_INT_SEP_MIN` (least side of its two-factor kernel),
/// `CONVFLOW_FAST_SEPG` (1: the tiled separable kernel's row pass reads global memory; 0: an
/// input tile), `CONVFLOW_FAST_SEPA` (1 / 0: inner blocks of that kernel stage their input
/// rows everywhere / nowhere, [`sep_staged`]), `CONVFLOW_FAST_SEPI` (1 / 0: its row pass in
/// exact integers wherever proven / nowhere, [`sep_int_rows`]), `CONVFLOW_FAST_SEP_TILED_MIN`
/// (least side of the separable plans the tiled kernel takes first, on every plane),
/// `CONVFLOW_FAST_SEP_MINB` (blocks of 128 threads of the tiled separable kernel resident per
/// multiprocessor at least, [`sep_min_blocks`]; 0: no bound), `CONVFLOW_FAST_SEP_HPX`
/// (threads' outputs per row-pass item of that kernel, 1, 2 or 4, [`sep_row_threads`]),
/// `CONVFLOW_FAST_HS_PAD` (1 / 0: its rows of horizontal sums padded everywhere / nowhere,
/// [`sums_padded`]),
/// `CONVFLOW_FAST_SAT_FREE` (0: the f32 kernels keep the output rule's clamp where the plan
/// proves it idle; 1: they leave it out on planes of any channel count,
/// [`SAT_FREE_MAX_CHANNELS`]). Read once per process.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tuning {
    pub(super) reg_max: Option<usize>,
    pub(super) py: Option<usize>,
    pub(super) reg_px: Option<usize>,
    pub(super) min_blocks: Option<usize>,
    pub(super) tiled_py: Option<usize>,
    pub(super) int_max: Option<usize>,
    pub(super) int_ch: Option<usize>,
    pub(super) deil_width: Option<usize>,
    pub(super) int_pixels: Option<usize>,
    pub(super) int_sep_min: Option<usize>,
    pub(super) sep_global: Option<bool>,
    pub(super) sep_staged: Option<bool>,
    pub(super) sep_int: Option<bool>,
    pub(super) sums_pad: Option<bool>,
    pub(super) sep_tiled_min: Option<usize>,
    pub(super) sep_minb: Option<usize>,
    pub(super) sep_hpx: Option<usize>,
    pub(super) sat_free: Option<bool>,
}

pub(super) fn tuning() -> Tuning {
    static T: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
        Tuning {
            reg_max: var("CONVFLOW_FAST_REG_MAX"),
            py: var("CONVFLOW_FAST_PY").filter(|py| (1..=8).contains(py)),
            reg_px: var("CONVFLOW_FAST_REG_PX").filter(|px| [4, 8, 16].contains(px)),
            min_blocks: var("CONVFLOW_FAST_MINB").filter(|b| (1..=16).contains(b)),
            tiled_py: var("CONVFLOW_FAST_TILED_PY").filter(|py| (1..=8).contains(py)),
            int_max: var("CONVFLOW_FAST_INT_MAX"),
            int_ch: var("CONVFLOW_FAST_INT_CH"),
            deil_width: var("CONVFLOW_FAST_DEIL_WIDTH"),
            int_pixels: var("CONVFLOW_FAST_INT_PIXELS").filter(|n| [4, 8].contains(n)),
            int_sep_min: var("CONVFLOW_FAST_INT_SEP_MIN"),
            sep_global: var("CONVFLOW_FAST_SEPG").map(|v: usize| v != 0),
            sep_staged: var("CONVFLOW_FAST_SEPA").map(|v: usize| v != 0),
            sep_int: var("CONVFLOW_FAST_SEPI").map(|v: usize| v != 0),
            sums_pad: var("CONVFLOW_FAST_HS_PAD").map(|v: usize| v != 0),
            sep_tiled_min: var("CONVFLOW_FAST_SEP_TILED_MIN"),
            sep_minb: var("CONVFLOW_FAST_SEP_MINB").filter(|b| (0..=16).contains(b)),
            sep_hpx: var("CONVFLOW_FAST_SEP_HPX").filter(|m| [1, 2, 4].contains(m)),
            sat_free: var("CONVFLOW_FAST_SAT_FREE").map(|v: usize| v != 0),
        }
    })
}

/// Separable plans from this side on take the tiled kernel `fast_sep`, its row pass from
/// global memory, before the register and integer kernels (H100, gaussian:7 on 1080p / 4K /
/// 8K: gray 7.9 / 17.4 / 66.2 µs against 10.9 / 21.3 / 68.1 for the two-factor integer kernel,
/// NV12 15.6 / 29.6 / 97.8 against 18.2 / 33.3 / 100.0, box:7 gray 7.9 / 17.5 / 66.2 against
/// 11.2 / 21.3 / 68.9 for the integer kernels; RGB, RGBA and 16-bit tie) …
pub const SEP_TILED_MIN_SIDE: usize = 6;
/// … and from this side for 16-bit samples, or on planes under [`SEP_SMALL_PLANE`] pixels
/// (gaussian:5 on 1080p: gray 7.5 against 8.9 µs, RGB 14.2 against 17.9, RGBA 17.1 against 23.6,
/// NV12 13.8 against 14.8; rgb48 20.0 / 67.4 / 227.7 against 31.2 / 86.9 / 303.5 on 1080p / 4K /
/// 8K; on 4K and 8K the 8-bit integer kernels tie or win, gray 8K 42.1 against 61.5). At side 3
/// the register and integer kernels win everywhere (4K gray 10.5 against 14.0 µs).
pub const SEP_TILED_MIN_SIDE_SMALL: usize = 4;
/// See [`SEP_TILED_MIN_SIDE_SMALL`] (a 1080p plane has 2.1 M pixels, a 4K one 8.3 M).
pub const SEP_SMALL_PLANE: usize = 4_000_000;
/// … and, with padded rows of sums, for 8-bit RGB on every plane and for one and two 8-bit
/// channels on planes under this many pixels (4K but not 8K); measured with both row passes
/// (`gaussian:4`'s factor is irrational and takes the f32 one, `gaussian:5`'s the integer
/// one). H100, held clock, gaussian:4 / :5, µs, the integer and register kernels against `fast_sep`
/// (docs/PERFORMANCE.md, "twenty-seventh round"): 4K RGB 43.5 / 42.4 against 35.7 / 35.3, 8K RGB
/// 143.6 / 128.9 against 111.4 / 111.2, 4K gray 17.6 / 15.6 against 15.5 / 15.0, 4K YUV 4:2:0
/// 27.7 / 25.7 against 21.5 / 20.7, 4K NV12 26.9 / 26.4 against 24.6 / 25.7; on 8K the integer
/// kernel keeps one channel (gray :5 41.3 against 47.9, YUV 4:2:0 64.2 against 70.3), and RGBA
/// keeps it everywhere (4K :5 51.2 against 56.5). The rule goes by the frame's largest plane
/// of as many channels, so that YUV's three planes stay in one launch (8K YUV 4:2:0 :5 with
/// its 8.3 M-pixel chroma planes alone on `fast_sep`: 67.8 µs against 64.0).
pub const SEP_SMALL_SIDE_MAX_PLANE: usize = 16_000_000;
/// Output rows per thread of the separable tiled kernel `fast_sep` with its row pass from global
/// memory ([`FastSpec::row_global`](super::FastSpec::row_global)) … (H100, 1080p and 4K,
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

/// Output rows per thread of `fast_sep` on one-channel planes (gray, the planes of YUV, P016's
/// luma) from [`SEP_ROWS_TALL_MIN_SIDE`] taps high on launches of at least
/// [`SEP_ROWS_TALL_MIN_SAMPLES`] samples: 8 for 8-bit samples …
pub const SEP_ROWS_TALL: usize = 8;
/// … 6 for 16-bit ones. H100, held clock, gaussian:11 / :15 / :25 separable against 4 rows, µs
/// (docs/PERFORMANCE.md, "twenty-seventh round"): 8K gray 57.5 / 66.0 / 101.4 → 52.5 / 60.2 /
/// 89.3, 8K YUV 4:2:0 88.1 / 101.2 / 152.6 → 81.3 / 91.3 / 134.5, 4K gray 1.03–1.05×, 4K YUV
/// 4:2:0 1.05–1.07×; 16-bit with 6 rows: 8K gray16 1.05–1.09×, YUV 4:2:0 10-bit 1.06–1.08×, 4K
/// 1.00–1.03×. Below 7–9 taps, and at 1080p (gray 0.86–0.91× with 8 rows), 4 rows stay; NV12
/// lost with either count on its two-channel plane, which keeps 4.
pub const SEP_ROWS_TALL_16: usize = 6;
/// See [`SEP_ROWS_TALL`].
pub const SEP_ROWS_TALL_MIN_SIDE: usize = 11;
/// See [`SEP_ROWS_TALL`] (a 4K one-channel plane has 8.3 M samples, 4K YUV 4:2:0 12.4 M, 1080p
/// YUV 4:2:0 3.1 M).
pub const SEP_ROWS_TALL_MIN_SAMPLES: usize = 4_000_000;

/// The rows per thread [`SEP_ROWS_TALL`] gives a separable launch of `samples` samples on
/// planes of `ch` channels of `sb`-byte samples, `kh` taps high; None where the rule before
/// stays.
pub fn sep_rows_tall(ch: usize, sb: usize, kh: usize, samples: usize) -> Option<usize> {
    (ch == 1 && kh >= SEP_ROWS_TALL_MIN_SIDE && samples >= SEP_ROWS_TALL_MIN_SAMPLES).then_some(
        if sb == 1 {
            SEP_ROWS_TALL
        } else {
            SEP_ROWS_TALL_16
        },
    )
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

/// Launches of one-channel planes from this many samples stage their input rows
/// ([`sep_staged`]; a 1080p plane has 2.1 M, a 1080p YUV 4:2:0 frame's three 3.1 M).
pub const SEP_STAGED_MIN_SAMPLES: usize = 3_000_000;

/// Whether `fast_sep` (row pass from global memory) on `ch` channels of `sb`-byte samples,
/// `kh` taps high, in a launch of `launch_samples` samples, its row pass in exact integers
/// (`int`, [`sep_int_rows`]) or not, first copies each inner block's input rows to shared
/// memory ([`FastSpec::row_staged`](super::FastSpec::row_staged)):
/// - 8-bit RGB to 9 taps high;
/// - one channel of 8-bit samples to 7 (to 9 with the integer row pass) and of 16-bit samples
///   to 9, on launches of [`SEP_STAGED_MIN_SAMPLES`] and more.
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
pub fn sep_staged(ch: usize, sb: usize, kh: usize, launch_samples: usize, int: bool) -> bool {
    let large = launch_samples >= SEP_STAGED_MIN_SAMPLES;
    match (ch, sb) {
        (3, 1) => kh <= 9,
        (1, 1) => kh <= if int { 9 } else { 7 } && large,
        (1, 2) => kh <= 9 && large,
        _ => false,
    }
}

/// Whether `fast_sep`'s rows of horizontal sums lie an odd number of float4s apart
/// ([`FastSpec::sums_pad`](super::FastSpec::sums_pad)) for a plane of `ch` channels of `sb`-byte
/// samples and a kernel `kh` taps high: one or two channels always, 8-bit RGB and RGBA from 11
/// taps. ncu on 4K gray `gaussian:7` counted 8.5 shared-memory wavefronts per row-pass store
/// where 4 carry the bytes: the rows were a multiple of 32 floats apart, and a warp's items in 8
/// consecutive rows stored to the same four-bank groups. Padded against unpadded (H100, held
/// clock, gaussian separable 5–25 on gray, gray16, NV12, YUV 4:2:0, RGB and RGBA, two passes
/// alternating, best of each; docs/PERFORMANCE.md, "twenty-seventh round"): geomean 1.022 /
/// 1.018 / 1.011× on 1080p / 4K / 8K, 1.05–1.14× at 15 taps on one-channel planes (4K gray
/// 23.1 → 20.3 µs, 4K YUV 4:2:0 33.7 → 29.5), RGB and RGBA at 15 1.02–1.04×. Where the
/// padding did not pay it is left out: 8-bit RGB at 7 taps lost 2–3 % on 4K and 8K (39.3 →
/// 40.2 µs, 124.1 → 128.1), RGBA at 4–9 taps tied but for 1080p `gaussian:4` (16.9 → 18.2),
/// and rgb48 lost 1–3 % at 7–25 (4K 25: 127.5 → 131.0).
pub fn sums_padded(ch: usize, sb: usize, kh: usize) -> bool {
    ch <= 2 || sb == 1 && kh >= 11
}

/// Whether `fast_sep` (row pass from global memory) on `ch` channels of 8-bit samples, a
/// plane of `pixels` pixels, takes its row pass in exact integers where the row factor allows
/// it ([`FastSpec::row_int`](super::FastSpec::row_int)): one to three channels everywhere,
/// four on planes under [`SEP_SMALL_PLANE`] pixels. H100, held clock, gaussian:5–9 separable,
/// against the f32 row pass in the same build (`CONVFLOW_FAST_SEPI=0`), best of two passes
/// alternating (docs/PERFORMANCE.md, "twenty-sixth round"), 1080p / 4K / 8K: gaussian:7 gray
/// 0.98 / 1.08 / 1.09×, NV12 0.99 / 1.06 / 1.07×, YUV 4:2:0 1.08 / 1.12 / 1.15×, RGB 1.05 /
/// 1.06 / 1.06×; gaussian:9 1.00–1.06×; box:4–16 on 1080p and 4K 0.97–1.09×; RGBA 1.02–1.05×
/// on 1080p, 0.98–1.00× on 4K and 8K (one useful byte in four of each dot product).
pub fn sep_int_rows(ch: usize, pixels: usize) -> bool {
    ch <= 3 || ch == 4 && pixels < SEP_SMALL_PLANE
}

/// Output rows per thread of `fast_sep` for 8-bit RGB with the integer row pass on planes
/// under [`SEP_SMALL_PLANE`] pixels, taps up to 9 high: with the row pass cheaper, more threads
/// beat fewer halo rows (H100, gaussian:7 / 9 on 1080p: 15.9 / 17.6 µs against 17.6 / 19.5
/// with [`SEP_ROWS`]; on 4K they lost 5–7 %; docs/PERFORMANCE.md, "twenty-sixth round").
pub const SEP_ROWS_RGB_INT_SMALL: usize = 2;

/// Planes under this many pixels take the smallest planes' separable shapes of 16-bit RGB and
/// RGBA ([`sep_small_shape`]; a 720p plane has 0.92 M pixels, a 1080p one 2.1 M) …
pub const SEP_SMALLER_PLANE: usize = 1_000_000;
/// … and RGBA64 kernels taller than 15 take one row per thread below this many (640×360 and
/// 853×480, 0.23 M and 0.41 M pixels, gaussian:19 15.6 / 20.5 µs against 18.2 / 21.5 with two
/// rows; on 720p two, 31.1 against 35.6).
pub const SEP_RGBA64_ONE_ROW_BELOW: usize = 500_000;

/// A launch shape of `fast_sep` with its row pass from global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SepShape {
    /// The block tried first.
    pub block: (u32, u32),
    /// Output rows per thread.
    pub rows: usize,
    /// Blocks of 128 threads resident per multiprocessor at least (as [`sep_min_blocks`]).
    pub min_blocks: usize,
    /// Threads' outputs per row-pass item (as [`sep_row_threads`]).
    pub row_threads: usize,
}

/// The shape of a separable plan `kh` taps high over `ch` channels of `sb`-byte samples on a
/// plane of `pixels` pixels under [`SEP_SMALL_PLANE`], where the measured shape differs from
/// the rules made on 1080p and 4K: few threads per launch want more resident blocks (fewer
/// registers) and wider row-pass items. None elsewhere (the rules of [`sep_min_blocks`],
/// [`sep_row_threads`] and the blocks and rows of `FastSpec` apply).
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
    if pixels >= SEP_SMALL_PLANE || kh < SEP_TILED_MIN_SIDE {
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
/// Where [`sep_small_shape`] has a shape, its blocks.
pub fn sep_min_blocks(ch: usize, sb: usize, side: usize, large: bool) -> usize {
    let by_side = match (ch, sb) {
        (1, _) => [6, 6, 6, 6],
        (2, _) => [6, 6, 5, 3],
        (3, _) => [6, 5, 4, 3],
        (_, 1) if large => [4, 4, 3, 3],
        (_, 1) => [4, 4, 3, 2],
        _ => [5, 5, 4, 3],
    };
    by_side[match side {
        0..=7 => 0,
        8..=9 => 1,
        10..=15 => 2,
        _ => 3,
    }]
}

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
pub fn sep_row_threads(ch: usize, sb: usize, kw: usize) -> usize {
    match (sb, ch) {
        (1, 1 | 3) if kw > 9 => 4,
        (1, 2) if kw > 15 => 4,
        (1, 4) if kw <= 9 => 4,
        (2, 4) => 1,
        _ => 2,
    }
}

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
/// ([`FastSpec::new`](super::FastSpec::new): one row at these sides) faster on 720p to 8K; other
/// sides keep the rule. The best rows move with the block the tile allows and with the unrolled
/// code, not smoothly with the side: RGB 23 and 19, and RGBA 25, lost with 2 rows (RGB 23 by
/// 1.3–1.5×). H100, gaussian, µs, the rule / these rows (docs/PERFORMANCE.md, "nineteenth round"):
/// NV12's chroma 17 / 19 / 21 / 25 on 4K 203.8 / 274.0 / 320.7 / 439.8 against 185.5 / 248.7 /
/// 284.8 / 427.2 (the whole frame; 8K 1.07–1.12×; on 1080p the chroma launch is small and keeps the
/// rule's row); RGB 15 on 1080p / 4K / 8K 81.2 / 298.4 / 1152.1 against 76.8 / 280.7 / 1054.9 (2
/// rows: 84.2 / 318.9 / 1253.5), RGB 17 1.01–1.04×, RGB 21 157.4 / 582.7 against 134.6 / 499.8 on
/// 1080p / 4K (720p and 1440p 1.18–1.20×); RGBA 13 97.6 / 364.4 / 1438.1 against 69.9 / 269.4 /
/// 1120.1, RGBA 15 121.2 / 452.9 / 1788.6 against 106.8 / 407.2 / 1569.6, RGBA 17 1.16–1.20×, RGBA
/// 19 1.02–1.12×.
pub const FULL_ROWS_BY_SIDE: [(usize, usize, usize); 11] = [
    (2, 17, 2),
    (2, 19, 2),
    (2, 21, 2),
    (2, 25, 2),
    (3, 15, 4),
    (3, 17, 2),
    (3, 21, 2),
    (4, 13, 2),
    (4, 15, 4),
    (4, 17, 2),
    (4, 19, 2),
];
/// RGB 25×25 takes 2 rows (as [`FULL_ROWS_BY_SIDE`]) on planes under this many pixels: 720p /
/// 1080p / 1440p 104.4 / 222.1 / 376.8 µs against 94.5 / 192.9 / 337.1; on 4K 771.5 against
/// 778.4, on 8K (1 row against 2) 3105 against 3224.
pub const FULL_RGB25_TWO_ROWS_BELOW: usize = 4_000_000;

/// Rows per thread of the full tiled kernel for an 8-bit `side` × `side` kernel on planes of
/// `ch` channels and `pixels` pixels, `samples` samples in the launch and `px` samples a
/// thread, where measured better than the rule's; else None. Not where those rows would leave
/// fewer than [`TILED_FEW_THREADS`] threads ([`tiled_rows`]' small launches; 720p RGBA 15:
/// 69.6 µs with 4 rows against 57.3 with the rule's one).
pub fn full_rows_by_side(
    ch: usize,
    side: usize,
    pixels: usize,
    (samples, px): (usize, usize),
) -> Option<usize> {
    let rows = if (ch, side) == (3, 25) {
        (pixels < FULL_RGB25_TWO_ROWS_BELOW).then_some(2)
    } else {
        FULL_ROWS_BY_SIDE
            .iter()
            .find(|&&(c, s, _)| (c, s) == (ch, side))
            .map(|&(.., rows)| rows)
    };
    rows.filter(|&rows| samples / (px * rows).max(1) >= TILED_FEW_THREADS)
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
    let threads = samples / (px * py).max(1);
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

/// The block the full tiled kernel `fast_full` tries first for 4 channels from a side of 9, tall
/// and narrow (H100, gaussian:9 / 15 / 25, RGBA on 4K: 192.5 / 482.5 / 1104 µs against 202.4 /
/// 542.5 / 1476 for the 16 × 4 and 16 × 8 blocks chosen by size; RGBA64 236.4 / 516.4 / 1124
/// against 238.9 / 587.1 / 2049; within 5 % of the best of 11 shapes but for 1080p RGBA 9, 9 %).
pub const FULL_BLOCK_RGBA: (u32, u32) = (8, 32);

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
