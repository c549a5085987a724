//! `fast`, our variant: which specialization of kernels/fast.cu runs a plan, with which block
//! and shared-memory tile, and when no specialization fits.
//!
//! A [`FastSpec`] fixes kernel size, anchor, channels, border and register blocking at NVRTC
//! compile time (weights become constant operands). Small kernels take the register kernel
//! `fast_reg` (no shared memory, 16 bytes of outputs per thread, fewer on small launches; where
//! it measured faster, see [`FastSpec::register`]); 8-bit plans with a proven integer form the
//! exact integer kernel `fast_int` (the same thread shapes, `dp4a` on
//! the bytes as loaded, channels regrouped for
//! wider kernels, two integer factors for separable one-channel 7×7; [`FastSpec::integer`]);
//! others the tiled kernels, whose block shrinks (unless given) until
//! the tile fits 48 KB (80 KB for separable kernels taller than 9, 112 KB for the taller blocks
//! of RGB ones; never more than the device allows); the separable one takes its row pass in
//! exact integers where the row factor allows it on 8-bit samples ([`FastSpec::row_int`]). A
//! kernel beyond constant memory or any tile is handed to the baseline kernels of the same
//! decomposition — same results, slower — and the backend's name says so. What a plane
//! compiles in besides: the channels it filters (RGBA's alpha under `--alpha keep` is neither
//! computed nor converted), how its samples are stored, and for register kernels `--abs` and a
//! zero offset. The planes of a frame that choose the same specialization (a YUV frame's three)
//! run in one launch (`run`: the choice per plane and the launch; `rules`: the measured
//! constants; `separable`: what plane and block change in `fast_sep`'s specialization).

mod kernel;
mod rules;
mod run;
mod separable;

pub(super) use run::run_planes as launch;
pub(super) use run::Prepared;

use rules::tuning;
pub use rules::*;

use super::abi::{PlaneParams, FAST_TILE_PAD_FLOATS, FAST_TILE_PAD_PERIOD};
use crate::border::Border;
use crate::filter::IntegerForm;

/// A compile-time specialization of the `fast` family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastSpec {
    /// Kernel width in taps.
    pub kw: usize,
    /// Kernel height in taps.
    pub kh: usize,
    /// Interleaved channels per pixel of the plane.
    pub ch: usize,
    /// Border rule, compiled in.
    pub border: Border,
    /// Bytes per stored sample: 1, or 2 for 16-bit words.
    pub sb: usize,
    /// Output samples per thread along a row: a multiple of 4, and of `ch` for the
    /// deinterleaving integer kernels and wherever a channel is unfiltered (the tiled kernels'
    /// rules give whole pixels but [`sep_px`]'s).
    pub px: usize,
    /// Output rows per thread.
    pub py: usize,
    /// Unroll factor of the kernel-row loop of `fast_full`.
    pub ky_unroll: usize,
    /// Build `fast_sep` (weights: column then row) instead of `fast_full`.
    pub separable: bool,
    /// Build the register kernel `fast_reg` instead of the tiled ones.
    pub reg: bool,
    /// `fast_reg`/`fast_int`: blocks of 128 threads resident per multiprocessor at least (caps
    /// registers).
    pub min_blocks: usize,
    /// Build `fast_int`, the exact integer register kernel, for this divisor and offset
    /// numerator ([`IntegerForm`]); weights go to `c_wp` packed by [`pack_int_weights`].
    pub int: Option<(u32, i32)>,
    /// The integer dot products read each window row with its channels regrouped first
    /// (fast.cu's `DEIL`, fast_words.cuh's `channel_word`; weights packed by
    /// [`FastSpec::tap_stride`]): `fast_int`'s, whose threads then own `px / ch` whole pixels,
    /// and with [`FastSpec::row_int`] `fast_sep`'s row pass, where a sum then reads the words of
    /// its own channel only (RGB 9 taps: 3 `__dp4a` a sum, not 7), set where the launch is
    /// chosen by [`sep_int_channels`] (`CONVFLOW_FAST_SEPD=0` / `1`: never / wherever it can).
    pub deinterleave: bool,
    /// `fast_sep` reads its row pass's windows from global memory (the register kernel's
    /// loads) instead of an input tile in shared memory, which then holds only the horizontal
    /// sums.
    pub row_global: bool,
    /// With [`FastSpec::row_global`]: blocks whose windows lie inside the plane first copy
    /// their input rows' bytes to shared memory (fast_sep.cuh's `SEPA`, `raw_rows`: asynchronous
    /// copies that hold no registers) and read their windows there. Set where the launch is
    /// chosen, by [`sep_staged`] (`CONVFLOW_FAST_SEPA=0` / `1`: never / always).
    pub row_staged: bool,
    /// `fast_sep`'s rows of horizontal sums lie an odd number of float4s apart (fast.cu's
    /// `HS_PAD`, [`FastSpec::sums_row`]; with [`FastSpec::compact_sums`] in blocks 4 wide
    /// another stride, [`FastSpec::sep_sums_row`]). Set where the launch is chosen, by
    /// [`sums_padded`] (again once [`FastSpec::compact_sums`] is known;
    /// `CONVFLOW_FAST_HS_PAD=0` / `1`: never / always).
    pub sums_pad: bool,
    /// `fast_sep`'s f32 row pass on 2–4 channels takes one channel at a time in a loop that is
    /// not unrolled, and stores each group of 4 pixels' sums channel after channel in the
    /// group's columns (fast_sep.cuh's `SEPC`: a third of the unrolled code for RGB; the same
    /// sums, each column-pass thread reading the columns it reads unrolled). Only where
    /// threads own groups of 4 pixels ([`FastSpec::sums_planar_fits`]). Set where the launch
    /// is chosen (`CONVFLOW_FAST_SEPC=0` / `1`: never / wherever it fits).
    pub sums_planar: bool,
    /// `fast_sep`'s column pass runs the kernel rows that feed all of a thread's output rows
    /// in a loop that is not unrolled (fast_sep.cuh's `CROLL`; the same sums in the same order),
    /// where the kernel is at least as tall as a thread's rows. Set where the launch is chosen
    /// (`CONVFLOW_FAST_CROLL=0` / `1`: never / wherever it fits).
    pub col_rolled: bool,
    /// With [`FastSpec::row_global`] on 8-bit samples: `fast_sep`'s row pass takes its sums in
    /// exact integers (fast_sep.cuh's `SEPI`: `__dp4a` on the window bytes as loaded, no sample
    /// converted) over this power-of-two divisor of the row factor, whose weights go to `c_wr`
    /// packed by [`pack_int_weights`], where [`IntegerForm::row_pass`] proves the f32 row
    /// pass exact, so the horizontal sums are its bits. Set where the launch is chosen,
    /// wherever proven ([`sep_int_channels`] has the measurements; `CONVFLOW_FAST_SEPI=0`:
    /// never).
    pub row_int: Option<u32>,
    /// Samples of one of `fast_sep`'s row-pass items with [`FastSpec::row_global`] (fast.cu's
    /// `PXH`): a multiple of `px` that divides the block's row, `px` unless
    /// [`FastSpec::for_block`] widens it.
    pub row_px: usize,
    /// Bit c set: channel c is filtered. The others (RGBA's alpha under `--alpha keep`) are
    /// neither computed nor converted, and take the source's samples ([`FastSpec::for_plane`]).
    pub mask: u8,
    /// A sample's value is its stored word shifted right by this (MSB-aligned formats).
    pub shift: u32,
    /// Samples become floats by the conversion unit (16-bit ones by `I2F.U16`; of 8-bit words
    /// bytes 0 and 3 by `I2F.U8`), not by their bits in a float's mantissa; set by
    /// [`FastSpec::for_plane`] as [`conversion_unit`] rules.
    pub conv_unit: bool,
    /// `--abs`, compiled into the register kernels, and into `fast_sep` with the zero offset
    /// (`run::choose`; the other tiled kernels read it, fast.cu's `finish_bits` says why;
    /// false for them).
    pub abs: bool,
    /// The kernel's offset is 0, nothing to add to the sums (register kernels, as `abs`; and
    /// `fast_sep` where [`FastSpec::fixed_block`] is set, on one channel and on more from
    /// [`SEP_ZERO_OFFSET_MIN_HEIGHT`] taps high, `run::choose`, [`sep_zero_offset`]).
    pub zero_offset: bool,
    /// `fast_sep`'s block compiled in (fast_sep.cuh's `SEP_BX` × `SEP_BY`), so that its row
    /// width, rows, rows of sums, staged copies and, where the row pass is staged, the staged
    /// rows' stride (`SEP_TS`, `FastSpec::tile`'s) fold to constants; the module is launched
    /// with this block only. Set where the block is chosen (`run::choose`,
    /// [`sep_fixed_block`]); None: read from `blockDim`.
    pub fixed_block: Option<(u32, u32)>,
    /// `fast_sep` reads an item's staged words by 16-byte shared loads (fast_sep.cuh's `SEPV`),
    /// its staged rows [`FastSpec::staged_units`] apart, where that fits
    /// ([`FastSpec::staged_vector_fits`]: the block compiled in, the rows staged, the block's
    /// row and the row-pass items whole 16-byte units; elsewhere word loads). Set where the
    /// launch is chosen, by [`sep_staged_vector`].
    pub staged_vector: bool,
    /// `fast_sep` keeps no horizontal sums for an unfiltered alpha (fast_sep.cuh's `SEPK`):
    /// each group of 4 pixels holds its 12 filtered sums only, so that the row pass stores and
    /// the column pass loads a quarter fewer floats, where that fits
    /// ([`FastSpec::compact_sums_fits`]). Set where the launch is chosen, by
    /// [`sep_compact_sums`].
    pub compact_sums: bool,
    /// The output rule's clamp never acts for the plan on this plane's samples
    /// ([`Plan::saturation_free`](crate::filter::Plan::saturation_free)): left out (the f32
    /// kernels), or, on integer specializations under a power-of-two divisor up to
    /// [`int_ffin_max_divisor`](super::abi::int_ffin_max_divisor) without `--abs`, the output
    /// finished in floating point (fast_int.cuh's `INT_FFIN`).
    pub saturation_free: bool,
    /// The tiled kernels' `__launch_bounds__`: threads per block and blocks resident per
    /// multiprocessor at least (caps their registers), or None.
    pub tiled_bounds: Option<(u32, usize)>,
    /// Planes one launch takes (1 to [`MAX_PLANES`](super::abi::MAX_PLANES)): the planes of
    /// a frame that share the rest of the specialization.
    pub planes: usize,
}

impl FastSpec {
    /// The specialization for a full kernel; [`FastSpec::separable`] for the fused two-pass one.
    pub fn new(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        let px = 4 * ch;
        // Several rows per thread, fully unrolled, while the straight-line code stays small
        // (≤ 4096 FMAs); else one row per thread with the kernel rows in a loop. Rows per
        // thread: [`FULL_ROWS`]. Where the launch is chosen, some sides take other rows (more,
        // unrolled past 4096 FMAs) and 16-bit launches of the middle range fewer
        // (`rules::full_rows`).
        let py = match (px, kw * kh * px) {
            (..=8, 0..=1024) => FULL_ROWS,
            (_, 0..=2048) => FULL_ROWS_WIDE,
            _ => 1,
        };
        let ky_unroll = if kw * kh * px <= 4096 { kh } else { 1 };
        FastSpec {
            kw,
            kh,
            ch,
            border,
            sb: 1,
            px,
            py,
            ky_unroll,
            separable: false,
            reg: false,
            min_blocks: 1,
            int: None,
            deinterleave: false,
            row_global: false,
            row_staged: false,
            sums_pad: false,
            sums_planar: false,
            col_rolled: false,
            row_int: None,
            row_px: px,
            mask: all_channels(ch),
            shift: 0,
            conv_unit: false,
            abs: false,
            zero_offset: false,
            fixed_block: None,
            staged_vector: false,
            compact_sums: false,
            saturation_free: false,
            tiled_bounds: None,
            planes: 1,
        }
    }

    /// The same specialization with what it compiles in of plane `p`: the channels it
    /// filters, how its samples are stored, and for register kernels `--abs` and whether the
    /// offset is 0. A partial mask needs threads that own whole pixels (fast.cu checks), which
    /// every specialization of 4-channel planes, the only ones with unfiltered channels, has.
    pub fn for_plane(self, p: &PlaneParams) -> FastSpec {
        FastSpec {
            mask: p.mask as u8 & all_channels(self.ch),
            shift: p.shift as u32,
            conv_unit: conversion_unit(
                self.sb,
                p.shift as u32,
                self.ch,
                (self.reg && self.int.is_none() && !self.separable).then_some(self.kw.max(self.kh)),
            ),
            abs: self.reg && p.abs_out != 0,
            zero_offset: self.reg && p.offset == 0.0,
            ..self
        }
    }

    /// The register specialization (`fast_reg`) where it measured faster than the tiled
    /// kernels (docs/PERFORMANCE.md, "Small kernels" and "sixth round"): full kernels up to
    /// [`REG_MAX_FULL`] ([`REG_MAX_FULL_8BIT`] for 8-bit gray, RGB and RGBA,
    /// [`REG_MAX_FULL_GRAY16`] for one channel of 16-bit samples) and separable ones
    /// up to [`REG_MAX_SEP`] on a side; else None. `sb`
    /// is the bytes per sample (a thread's outputs are 16 bytes, or `CONVFLOW_FAST_REG_PX`
    /// 8-bit samples); each thread takes [`REG_ROWS`] rows ([`REG_ROWS_16BIT_5`] for full 16-bit
    /// kernels of sides 4–5, [`REG_ROWS_16BIT_7`] for one channel's at 6–7). Small launches take
    /// fewer of both
    /// (`rules::register_thread_shape`, applied where the launch is chosen), and 8-bit ones
    /// under 1 M samples keep [`REG_MIN_BLOCKS`] resident blocks (`rules::register_min_blocks`).
    pub fn register(
        kw: usize,
        kh: usize,
        ch: usize,
        border: Border,
        separable: bool,
        sb: usize,
    ) -> Option<FastSpec> {
        let tune = tuning();
        let max = match (separable, sb, ch) {
            (true, ..) => REG_MAX_SEP,
            (false, 1, 1 | 3 | 4) => REG_MAX_FULL_8BIT,
            (false, 2, 1) => REG_MAX_FULL_GRAY16,
            (false, ..) => REG_MAX_FULL,
        };
        if kw > tune.reg_max.unwrap_or(max) || kh > tune.reg_max.unwrap_or(max) {
            return None;
        }
        let px = match sb {
            1 => tune.reg_px.unwrap_or(16),
            _ => 16 / sb,
        };
        // Full 16-bit kernels from side 4: for one channel more blocks, and more rows per
        // thread at sides 4-5 and, for one channel, 6-7.
        let wide16 = sb == 2 && !separable && kw.max(kh) >= 4;
        let py = tune.py.unwrap_or(match kw.max(kh) {
            4..=5 if wide16 => REG_ROWS_16BIT_5,
            6..=7 if wide16 && ch == 1 => REG_ROWS_16BIT_7,
            _ => REG_ROWS,
        });
        let min_blocks = match (sb, ch) {
            (2, 1) if wide16 => REG_MIN_BLOCKS_GRAY16_5,
            _ if wide16 => REG_MIN_BLOCKS,
            (2, 3..) => REG_MIN_BLOCKS_WIDE16,
            (1, _) if !separable && kw.max(kh) <= REG8_FULL_BLOCKS_MAX_SIDE => {
                REG_MIN_BLOCKS_8BIT_FULL
            }
            _ => REG_MIN_BLOCKS,
        };
        Some(FastSpec {
            kw,
            kh,
            ch,
            border,
            sb,
            px,
            py,
            ky_unroll: kh,
            separable,
            reg: true,
            min_blocks: tune.min_blocks.unwrap_or(min_blocks),
            int: None,
            deinterleave: false,
            row_global: false,
            row_staged: false,
            sums_pad: false,
            sums_planar: false,
            col_rolled: false,
            row_int: None,
            row_px: px,
            mask: all_channels(ch),
            shift: 0,
            conv_unit: false,
            abs: false,
            zero_offset: true,
            fixed_block: None,
            staged_vector: false,
            compact_sums: false,
            saturation_free: false,
            tiled_bounds: None,
            planes: 1,
        })
    }

    /// The exact integer specialization (`fast_int`) for 8-bit samples of `ch` channels where
    /// it measured faster than the f32 kernels (docs/PERFORMANCE.md, "Exact integer path" and
    /// "Deinterleaved windows"): the plan has an integer form ([`IntegerForm::of`]) whose
    /// weights fit a signed byte (`__dp4a`), `ch` ≤ [`INT_MAX_CHANNELS`], no side over
    /// [`INT_MAX_FULL`] ([`INT_MAX_SEP`] when the plan is separable, whose f32 kernel is faster
    /// beyond; [`INT_MAX_SEP_LARGE`] on planes of [`INT_LARGE_PLANE`] samples) and a register
    /// window of at most [`INT_MAX_WORDS`] words; else None. Interleaved channels are
    /// deinterleaved from a kernel width of [`INT_DEINTERLEAVE_WIDTH`]. Separable one-channel
    /// plans of the sides from [`INT_SEP_MIN_SIDE`] to [`INT_SEP_MAX_SIDE`] whose integer form
    /// is an outer product with a row factor within a signed byte take the two-factor kernel
    /// instead (`separable` set in the result). `samples` is the plane's width × channels ×
    /// height. 16-bit samples (`sb` 2) take the full kernel (`dp2a`, the register kernel's
    /// thread shape) up to the side [`INT16_MAX_SIDE`], separable plans as their outer
    /// product, but on [`INT16_SKIP_CHANNELS`].
    pub fn integer(
        form: &IntegerForm,
        ch: usize,
        sb: usize,
        border: Border,
        separable: bool,
        samples: usize,
    ) -> Option<FastSpec> {
        let tune = tuning();
        if sb == 2 {
            let side = form.width.max(form.height);
            let skip = tune.int16_max.is_none() && ch == INT16_SKIP_CHANNELS;
            if skip || side > tune.int16_max.unwrap_or(INT16_MAX_SIDE) || form.max_weight() > 127 {
                return None;
            }
            let reg = FastSpec::register(form.width, form.height, ch, border, false, sb)?;
            return Some(FastSpec {
                int: Some((form.divisor, form.offset)),
                ..reg
            });
        }
        let max_side = match (separable, samples >= INT_LARGE_PLANE) {
            (false, _) => INT_MAX_FULL,
            (true, false) => INT_MAX_SEP,
            (true, true) => INT_MAX_SEP_LARGE,
        };
        let max_side = tune.int_max.unwrap_or(max_side);
        let (kw, kh) = (form.width, form.height);
        let side = kw.max(kh);
        // The two-factor kernel: one channel, a row factor within a signed byte.
        let two_factor = separable
            && ch == 1
            && ch <= tune.int_ch.unwrap_or(INT_MAX_CHANNELS)
            && (tune.int_sep_min.unwrap_or(INT_SEP_MIN_SIDE)..=INT_SEP_MAX_SIDE).contains(&side)
            && side <= tune.int_max.unwrap_or(side)
            && form
                .factors()
                .is_some_and(|(_, row)| row.iter().all(|n| n.abs() <= 127));
        if !two_factor
            && (side > max_side
                || form.max_weight() > 127
                || ch > tune.int_ch.unwrap_or(INT_MAX_CHANNELS))
        {
            return None;
        }
        // The two-factor kernel's PY × 16 sums need more than 64 registers.
        let min_blocks = if side <= 7 && !two_factor {
            INT_MIN_BLOCKS_SMALL
        } else {
            REG_MIN_BLOCKS
        };
        let deinterleave = ch >= 2 && kw >= tune.deil_width.unwrap_or(INT_DEINTERLEAVE_WIDTH);
        let px = if deinterleave {
            ch * tune.int_pixels.unwrap_or(INT_PIXELS)
        } else {
            tune.reg_px.unwrap_or(16)
        };
        let spec = FastSpec {
            int: Some((form.divisor, form.offset)),
            deinterleave,
            min_blocks: tune.min_blocks.unwrap_or(min_blocks),
            reg: true,
            px,
            py: tune
                .py
                .unwrap_or(if two_factor { INT_SEP_ROWS } else { REG_ROWS }),
            separable: two_factor,
            ..FastSpec::new(kw, kh, ch, border)
        };
        (spec.window_words() <= INT_MAX_WORDS).then_some(spec)
    }

    /// Whether a separable plan whose larger side is `side`, of `ch` channels of `sb`-byte
    /// samples on planes whose largest (of the frame's with `ch` channels) has `pixels`, takes
    /// the tiled kernel before the register and integer kernels: from [`SEP_TILED_MIN_SIDE`],
    /// and from [`SEP_TILED_MIN_SIDE_SMALL`] but for 8-bit RGBA on planes of
    /// [`SEP_SMALL_PLANE`] pixels ([`sep_rgba_large`]) (`CONVFLOW_FAST_SEP_TILED_MIN`: from
    /// that side, whatever the plane). Side-4 integer plans on large one- and two-channel 8-bit
    /// planes try the integer kernel first all the same ([`sep_int_first`]).
    pub fn tiled_first(side: usize, ch: usize, sb: usize, pixels: usize) -> bool {
        match tuning().sep_tiled_min {
            Some(min) => side >= min,
            None => {
                side >= SEP_TILED_MIN_SIDE
                    || side >= SEP_TILED_MIN_SIDE_SMALL && !sep_rgba_large(ch, sb, pixels)
            }
        }
    }

    /// Bytes between a kernel row's taps in the words the integer dot products read (`fast_int`'s,
    /// `fast_sep`'s row pass): the channel count, or 1 in deinterleaved channel words
    /// ([`pack_int_weights`]' `stride`).
    pub fn tap_stride(&self) -> usize {
        if self.deinterleave {
            1
        } else {
            self.ch
        }
    }

    /// Words a register-kernel thread holds for its window (fast_words.cuh's RIN × NWR).
    fn window_words(&self) -> usize {
        let spw = 4 / self.sb;
        let ax = self.kw / 2;
        let left = (ax * self.ch).div_ceil(spw);
        let right = ((self.kw - 1 - ax) * self.ch).div_ceil(spw);
        (self.py + self.kh - 1) * (left + self.px / spw + right)
    }

    /// The launch shape of the register kernels (`fast_reg`, `fast_int`) for a plane of
    /// `samples_per_row` (width × channels): [`REG_THREADS`] threads, [`REG_BLOCK_WIDTH`] wide for
    /// 8-bit planes of 1–2 channels, from a side of [`REG_NARROW_MIN_SIDE`] for planes of 3–4
    /// channels and from [`REG16_NARROW_MIN_SIDE`] for one channel of 16-bit samples; elsewhere the
    /// width of [`REG_BLOCK_WIDTHS`] that leaves the fewest idle threads at the end of a row, the
    /// widest where they tie. `CONVFLOW_FAST_REG_BX` sets the width (one of those), or 0 takes the
    /// fewest-idle rule for every plane (to compare).
    pub fn register_block(&self, samples_per_row: usize) -> (u32, u32) {
        let fewest_idle = || {
            let per_row = samples_per_row.div_ceil(self.px);
            REG_BLOCK_WIDTHS
                .into_iter()
                .min_by_key(|&bx| per_row.next_multiple_of(bx) - per_row)
                .expect("three candidates")
        };
        let narrow = match (self.sb, self.ch) {
            (1, 1 | 2) => true,
            (_, 3 | 4) => self.kw.max(self.kh) >= REG_NARROW_MIN_SIDE,
            (2, 1) => self.kw.max(self.kh) >= REG16_NARROW_MIN_SIDE,
            _ => false,
        };
        let bx = match tuning().reg_bx {
            Some(0) => fewest_idle(),
            Some(bx) => bx,
            None if narrow => REG_BLOCK_WIDTH,
            None => fewest_idle(),
        };
        (bx as u32, REG_THREADS / bx as u32)
    }

    /// The same specialization for samples of `sb` bytes.
    pub fn with_sample_bytes(self, sb: usize) -> FastSpec {
        FastSpec { sb, ..self }
    }

    /// NVRTC defines of this specialization (fast.cu's header lists them).
    pub fn defines(&self) -> Vec<String> {
        vec![
            format!("-DSB={}", self.sb),
            format!("-DKW={}", self.kw),
            format!("-DKH={}", self.kh),
            format!("-DAX={}", self.kw / 2),
            format!("-DAY={}", self.kh / 2),
            format!("-DCH={}", self.ch),
            format!("-DBORDER={}", super::abi::border_id(self.border)),
            format!("-DPX={}", self.px),
            format!("-DPY={}", self.py),
            format!("-DKY_UNROLL={}", self.ky_unroll),
            format!("-DSEPARABLE={}", self.separable as u8),
            format!("-DREG={}", self.reg as u8),
            format!("-DREG_MINB={}", self.min_blocks),
            format!("-DINT={}", self.int.is_some() as u8),
            format!("-DIDIV={}u", self.int.map_or(1, |(d, _)| d)),
            format!("-DIOFF={}", self.int.map_or(0, |(_, o)| o)),
            format!("-DDEIL={}", self.deinterleave as u8),
            format!("-DSEPG={}", self.row_global as u8),
            format!("-DPXH={}", self.row_px),
            format!("-DSEPA={}", self.row_staged as u8),
            format!("-DHS_PAD={}", self.sums_pad as u8),
            format!("-DSEPC={}", self.sums_planar as u8),
            format!("-DCROLL={}", self.col_rolled as u8),
            format!("-DSEPI={}", self.row_int.is_some() as u8),
            format!("-DRDIV={}", self.row_int.unwrap_or(1)),
            format!("-DTILE_PAD={}", self.tile_pad() as u8),
            format!("-DCMASK={}", self.mask),
            format!("-DSHIFT={}", self.shift),
            format!("-DABS={}", self.abs as u8),
            format!("-DZERO_OFFSET={}", self.zero_offset as u8),
            format!("-DSEP_BX={}", self.fixed_block.map_or(0, |b| b.0)),
            format!("-DSEP_BY={}", self.fixed_block.map_or(0, |b| b.1)),
            format!(
                "-DSEP_TS={}",
                self.fixed_block
                    .filter(|_| self.row_staged)
                    .map_or(0, |b| self.tile(b).0)
            ),
            format!("-DSEPV={}", self.staged_vector_on() as u8),
            format!("-DSEPK={}", self.compact_sums_on() as u8),
            format!("-DCONV_UNIT={}", self.conv_unit as u8),
            format!("-DSAT_FREE={}", self.saturation_free as u8),
            format!("-DPLANES={}", self.planes),
            format!("-DTILED_TB={}", self.tiled_bounds.map_or(0, |b| b.0)),
            format!("-DTILED_MINB={}", self.tiled_bounds.map_or(0, |b| b.1)),
        ]
    }

    /// The block tried first for the tiled kernels on a plane of `pixels` pixels. Separable:
    /// with the row pass from global memory [`sep_small_shape`]'s or [`sep_large16_shape`]'s
    /// where it has a shape, else [`SEP_BLOCK`] ([`SEP_BLOCK_TALL_RGBA`] for 4 channels taller
    /// than 9, [`sep_rgba_large_block`]'s where the large planes' RGBA rules apply,
    /// [`SEP_BLOCK_WIDE_RGB48`] where [`sep_rgb48_wide`] says, [`SEP_BLOCK_WIDE_GRAY`] where
    /// [`sep_wide`] says; the launch puts [`SEP_BLOCK_SHORT16`] and [`SEP_BLOCK_SQUARE16`] first
    /// where [`sep_short16`] and [`sep_square16`] say, which need the frame's planes); with an
    /// input tile, for 8-bit RGB
    /// taller than 9, 16 × 16 threads from 17 rows and 8 × 16 below (measured on H100 with the
    /// tile, gaussian:15 / :25 on 1080p and 4K: 43.1 / 62.5 and 127.2 / 202.3 µs against 50.6 /
    /// 83.4 and 162.4 / 266.9 for 16 × 8 blocks). Else None. For full kernels:
    /// [`FULL_BLOCK_RGBA`] for 4 channels from a side of 9, [`FULL_BLOCK_RGB48`] for 3 channels
    /// of 16-bit samples at [`FULL_RGB48_BLOCK_SIDES`] (the launch puts [`FULL_BLOCK_ONE16`]
    /// first where [`full_one16_block`] says).
    fn first_block(&self, pixels: usize) -> Option<(u32, u32)> {
        if self.reg {
            return None;
        }
        if !self.separable {
            let side = self.kw.max(self.kh);
            if (self.ch, self.sb) == (3, 2) && FULL_RGB48_BLOCK_SIDES.contains(&side) {
                return Some(FULL_BLOCK_RGB48);
            }
            return (self.ch == 4 && side >= 9).then_some(FULL_BLOCK_RGBA);
        }
        if let Some(shape) = self.small_shape(pixels) {
            return Some(shape.block);
        }
        if let Some((block, _)) = self.large16_shape(pixels) {
            return Some(block);
        }
        if self.row_global {
            return Some(match self.ch {
                4 if self.rgba_large(pixels) => sep_rgba_large_block(self.kh, !self.all_filtered()),
                4 if self.kh > 9 => SEP_BLOCK_TALL_RGBA,
                _ if sep_rgb48_wide(self.ch, self.sb, self.kh) => SEP_BLOCK_WIDE_RGB48,
                _ => tuning().sep_block.unwrap_or(
                    if sep_wide(self.ch, self.sb, (self.kw, self.kh), pixels) {
                        SEP_BLOCK_WIDE_GRAY
                    } else {
                        SEP_BLOCK
                    },
                ),
            });
        }
        let rgb = self.ch == 3 && self.sb == 1;
        (rgb && self.kh > 9).then_some(if self.kh > 16 { (16, 16) } else { (8, 16) })
    }

    /// Whether the tiled kernels pad their shared rows ([`FAST_TILE_PAD_FLOATS`] after every
    /// [`FAST_TILE_PAD_PERIOD`] floats, fast.cu's `tcol`): for 2 and 4 channels, whose threads
    /// own 8 or 16 floats, so that neighbours' float4 reads start 32 or 64 bytes apart and the 8
    /// threads of a shared-memory wavefront would hit only 4 or 2 of the 8 four-bank groups
    /// (4K RGBA gaussian:15 took 3.7× RGB's time). 1 and 3 channels (16 and 48 bytes apart) are
    /// conflict-free as they are, and so are 4 channels' sums without alpha's
    /// ([`FastSpec::compact_sums`]: 12 floats a thread's 4 pixels).
    pub fn tile_pad(&self) -> bool {
        self.ch == 2 || self.ch == 4 && !self.compact_sums_on()
    }

    /// Logical columns of `fast_sep`'s horizontal sums for a block row of `bw` samples: 3 of
    /// each 4 without alpha's ([`FastSpec::compact_sums`], fast_sep.cuh's `SUMS_COL`).
    fn sums_cols(&self, bw: usize) -> usize {
        if self.compact_sums_on() {
            bw / 4 * 3
        } else {
            bw
        }
    }

    /// Floats between `fast_sep`'s rows of `bw` horizontal sums (fast.cu's `sums_row`): the
    /// padded row ([`FastSpec::tile_pad`]), with [`FastSpec::sums_pad`] one float4 more where
    /// that is an even number of float4s.
    pub fn sums_row(&self, bw: usize) -> usize {
        let n = self.padded_row(bw);
        if self.sums_pad && (n / 4).is_multiple_of(2) {
            n + 4
        } else {
            n
        }
    }

    /// Floats of a logical shared row of `n` columns (fast.cu's `padded_row`).
    fn padded_row(&self, n: usize) -> usize {
        if self.tile_pad() {
            n + (n - 1) / FAST_TILE_PAD_PERIOD * FAST_TILE_PAD_FLOATS
        } else {
            n
        }
    }

    /// The tiled kernels' shared tile for `block`: (row stride, bytes). The stride is in floats
    /// for an input tile; `fast_sep` with its row pass from global memory has none (0), or
    /// with [`FastSpec::row_staged`] the staged input rows' stride in 4-byte words. A row holds
    /// a multiple of 4 columns (float4 reads) with room for the last thread's over-read,
    /// padded where [`FastSpec::tile_pad`] says; the separable kernel keeps its horizontal sums
    /// after the tile.
    fn tile(&self, (bx, by): (u32, u32)) -> (usize, usize) {
        let bw = bx as usize * self.px;
        let tw = bw + (self.kw - 1) * self.ch;
        let ts = self.padded_row((tw + 3 + 3) & !3);
        let sums = self.sep_sums_row(bx);
        let th = by as usize * self.py + self.kh - 1;
        let floats = match (self.separable, self.row_global) {
            (true, true) if self.row_staged => {
                // fast_sep.cuh's raw_rows: from the first window word rounded down to 16 bytes to
                // past the last, in whole 16-byte units, `staged_units` apart.
                let spw = 4 / self.sb;
                let ax = self.kw / 2;
                let halo =
                    (ax * self.ch).div_ceil(spw) + ((self.kw - 1 - ax) * self.ch).div_ceil(spw);
                let per_q = 16 / self.sb;
                let units = (per_q - 1 + bw + halo * spw).div_ceil(per_q);
                let words = 4 * self.staged_units(bx, by, units);
                return (words, th * sums * 4 + th * words * 4);
            }
            (true, true) => return (0, th * sums * 4),
            (true, false) => ts * th + th * sums,
            (false, _) => ts * th,
        };
        (ts, floats * 4)
    }
}

/// Every channel of a `ch`-channel pixel filtered.
fn all_channels(ch: usize) -> u8 {
    ((1u32 << ch) - 1) as u8
}

/// `fast_int`'s `c_wp` for `sb`-byte samples (`spw = 4 / sb` samples a word): for kernel row
/// ky, sample offset b (0…spw − 1) of an output's first tap in its first word, and word t of its
/// window, the weights of the taps in that word's lanes as signed bytes: byte l < spw holds
/// tap kx where spw·t + l − b = kx·stride, else 0 (8-bit: the four bytes `__dp4a` multiplies
/// with the word's four samples; 16-bit: the two low bytes `dp2a.lo` multiplies with its two).
/// `stride` is [`FastSpec::tap_stride`].
pub fn pack_int_weights(form: &IntegerForm, stride: usize, sb: usize) -> Vec<u32> {
    let (kw, kh, ch) = (form.width, form.height, stride);
    let spw = 4 / sb;
    let span = (kw - 1) * ch + 1;
    let win = (spw - 1 + span).div_ceil(spw);
    let mut out = Vec::with_capacity(kh * spw * win);
    for ky in 0..kh {
        for b in 0..spw {
            for t in 0..win {
                let lanes = (0..spw).map(|l| {
                    let pos = (spw * t + l) as isize - b as isize;
                    let kx = pos / ch as isize;
                    let tap = pos >= 0 && pos % ch as isize == 0 && (kx as usize) < kw;
                    let n = if tap {
                        form.weights[ky * kw + kx as usize]
                    } else {
                        0
                    };
                    (n as i8 as u8 as u32) << (8 * l)
                });
                out.push(lanes.fold(0, |a, v| a | v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
