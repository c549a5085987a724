//! `fast`, our variant: which specialization of kernels/fast.cu runs a plan, with which block
//! and shared-memory tile, and when no specialization fits.
//!
//! A [`FastSpec`] fixes kernel size, anchor, channels, border and register blocking at NVRTC
//! compile time (weights become constant operands). Small kernels take the register kernel
//! `fast_reg` (no shared memory, 16 bytes of outputs per thread; where it measured faster, see
//! [`FastSpec::register`]); 8-bit plans with a proven integer form the exact integer kernel
//! `fast_int` (the same thread shape, `dp4a` on the bytes as loaded, channels regrouped for
//! wider kernels, two integer factors for separable one-channel 7×7; [`FastSpec::integer`]);
//! others the tiled kernels, whose block shrinks (unless given) until
//! the tile fits 48 KB (80 KB for separable kernels taller than 9, 112 KB for the taller blocks
//! of RGB ones; never more than the device allows). A kernel beyond constant
//! memory or any tile is handed to the baseline kernels of the same decomposition — same
//! results, slower — and the backend's name says so.

mod rules;

pub use rules::*;
use rules::{tuning, BLOCKS, FULL_TILE_PREFERRED, SEP_TILE_PREFERRED, TALL_TILE_PREFERRED};

use super::abi::{launch, PlaneParams, MAX_CONST_TAPS};
use super::registry::ModuleKey;
use super::{variants, CudaBackend, CudaError};
use crate::border::Border;
use crate::filter::{IntegerForm, Plan};
use crate::frame::{Depth, PlaneLayout};

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
    /// Output samples per thread along a row (a multiple of 4 and of `ch`).
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
    /// `fast_int` regroups each window row by channel before its dot products (threads own
    /// `px / ch` whole pixels); see [`FastSpec::tap_stride`].
    pub deinterleave: bool,
}

impl FastSpec {
    /// The specialization for a full kernel; [`FastSpec::separable`] for the fused two-pass one.
    pub fn new(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        let px = 4 * ch;
        // Several rows per thread, fully unrolled, while the straight-line code stays small
        // (≤ 4096 FMAs); else one row per thread with the kernel rows in a loop. Two rows for
        // the sizes between (RGBA 9×9: one row per thread left it reading shared memory for
        // every 16 outputs, 6× the floor).
        let py = match kw * kh * px {
            0..=1024 => 4,
            1025..=2048 => 2,
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
        }
    }

    /// The register specialization (`fast_reg`) where it measured faster than the tiled
    /// kernels (docs/PERFORMANCE.md, "Small kernels" and "sixth round"): full kernels up to
    /// [`REG_MAX_FULL`] ([`REG_MAX_FULL_8BIT`] for 8-bit gray, RGB and RGBA) and separable ones
    /// up to [`REG_MAX_SEP`] ([`REG_MAX_SEP_RGBA`] for 8-bit RGBA) on a side; else None. `sb`
    /// is the bytes per sample (a thread's outputs are 16 bytes); each thread takes
    /// [`REG_ROWS`] rows.
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
            (true, 1, 4) => REG_MAX_SEP_RGBA,
            (true, ..) => REG_MAX_SEP,
            (false, 1, 1 | 3 | 4) => REG_MAX_FULL_8BIT,
            (false, ..) => REG_MAX_FULL,
        };
        if kw > tune.reg_max.unwrap_or(max) || kh > tune.reg_max.unwrap_or(max) {
            return None;
        }
        let px = 16 / sb;
        let py = tune.py.unwrap_or(REG_ROWS);
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
            min_blocks: tune.min_blocks.unwrap_or(if sb == 2 && ch >= 3 {
                REG_MIN_BLOCKS_WIDE16
            } else {
                REG_MIN_BLOCKS
            }),
            int: None,
            deinterleave: false,
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
    /// height.
    pub fn integer(
        form: &IntegerForm,
        ch: usize,
        border: Border,
        separable: bool,
        samples: usize,
    ) -> Option<FastSpec> {
        let tune = tuning();
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
            16
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

    /// Bytes between a kernel row's taps in the words `fast_int`'s dot products read: the
    /// channel count, or 1 in deinterleaved channel words ([`pack_int_weights`]' `stride`).
    pub fn tap_stride(&self) -> usize {
        if self.deinterleave {
            1
        } else {
            self.ch
        }
    }

    /// Words a register-kernel thread holds for its window (fast.cu's RIN × NWR).
    fn window_words(&self) -> usize {
        let spw = 4 / self.sb;
        let ax = self.kw / 2;
        let left = (ax * self.ch).div_ceil(spw);
        let right = ((self.kw - 1 - ax) * self.ch).div_ceil(spw);
        (self.py + self.kh - 1) * (left + self.px / spw + right)
    }

    /// The launch shape of `fast_reg` for a plane of `samples_per_row` (width × channels):
    /// 128 threads, the block's width the one of 32, 16, 8 that leaves the fewest idle
    /// threads at the end of a row.
    pub fn register_block(&self, samples_per_row: usize) -> (u32, u32) {
        let per_row = samples_per_row.div_ceil(self.px);
        let bx = [32usize, 16, 8]
            .into_iter()
            .min_by_key(|&bx| per_row.next_multiple_of(bx) - per_row)
            .expect("three candidates");
        (bx as u32, (128 / bx) as u32)
    }

    /// The specialization of `fast_sep` (fused two-pass) for a separable kernel: as
    /// [`FastSpec::new`], with 2 rows per thread for 3 or more channels, else 4.
    pub fn separable(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        // Fewer rows per thread for wide pixels keeps the two shared-memory stages small.
        let py = if ch >= 3 { 2 } else { 4 };
        FastSpec {
            py,
            separable: true,
            ..FastSpec::new(kw, kh, ch, border)
        }
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
        ]
    }

    /// The block tried first for the tiled separable kernel of an 8-bit RGB plan taller than
    /// 9: 16 × 16 threads from 17 rows, 8 × 16 below (measured on H100, gaussian:15 / :25 on
    /// 1080p and 4K: 43.1 / 62.5 and 127.2 / 202.3 µs against 50.6 / 83.4 and 162.4 / 266.9
    /// for the 16 × 8 blocks; the taller tile loads the 2 × (k − 1) halo rows for more output
    /// rows). Other formats were not measured: None.
    fn tall_block(&self) -> Option<(u32, u32)> {
        let rgb = self.ch == 3 && self.sb == 1;
        (self.separable && !self.reg && rgb && self.kh > 9).then_some(if self.kh > 16 {
            (16, 16)
        } else {
            (8, 16)
        })
    }

    /// The tiled kernels' shared tile for `block`: (row stride in floats, bytes). The stride is
    /// a multiple of 4 (float4 reads) with room for the last thread's over-read; the separable
    /// kernel keeps its horizontal sums after the tile.
    fn tile(&self, (bx, by): (u32, u32)) -> (usize, usize) {
        let bw = bx as usize * self.px;
        let tw = bw + (self.kw - 1) * self.ch;
        let ts = (tw + 3 + 3) & !3;
        let th = by as usize * self.py + self.kh - 1;
        let floats = if self.separable {
            ts * th + th * bw
        } else {
            ts * th
        };
        (ts, floats * 4)
    }
}

/// Launches `fast` on one plane (the variant table's launch function for `fast` and `auto`).
pub(super) fn launch(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let (kw, kh, ch) = (plan.kernel.width(), plan.kernel.height(), l.channels);
    let separable = plan.is_separable();
    // Small kernels: the register kernel, unless a block shape was asked for, which only the
    // tiled kernels take.
    let sb = l.depth.bytes();
    if b.block_override().is_none() && l.depth == Depth::U8 {
        let int = IntegerForm::of(plan, l.depth.max()).and_then(|form| {
            // Tests may ask for the large planes' rules on every plane.
            let samples = if b.large_rules {
                usize::MAX
            } else {
                l.width * ch * l.height
            };
            Some((
                FastSpec::integer(&form, ch, plan.border, separable, samples)?,
                form,
            ))
        });
        if let Some((spec, form)) = int {
            let key = ModuleKey::Fast(spec.clone());
            // Only the two-factor kernel needs the factors (not worked out for every frame of
            // the others).
            let packed = match spec.separable.then(|| form.factors()).flatten() {
                Some((col, row)) => {
                    let col: Vec<u32> = col.iter().map(|&n| n as u32).collect();
                    b.constant_words(&key, "c_wc", &col)?;
                    let row = IntegerForm {
                        height: 1,
                        weights: row,
                        ..form
                    };
                    pack_int_weights(&row, spec.tap_stride())
                }
                None => pack_int_weights(&form, spec.tap_stride()),
            };
            b.constant_words(&key, "c_wp", &packed)?;
            return launch_register(b, &spec, &key, "fast_int", p, l);
        }
    }
    let reg = FastSpec::register(kw, kh, ch, plan.border, separable, sb);
    if let Some(spec) = reg.filter(|_| b.block_override().is_none()) {
        let key = ModuleKey::Fast(spec.clone());
        b.constant_weights(&key, "c_w", plan)?;
        return launch_register(b, &spec, &key, "fast_reg", p, l);
    }
    let mut spec = if separable {
        FastSpec::separable(kw, kh, ch, plan.border)
    } else {
        FastSpec::new(kw, kh, ch, plan.border)
    }
    .with_sample_bytes(sb);
    if let (true, Some(py)) = (separable, tuning().tiled_py) {
        spec.py = py;
    }
    let tall = spec.tall_block();
    let candidates: Vec<(u32, u32)> = match b.block_override() {
        Some(block) => vec![block],
        None => tall.into_iter().chain(BLOCKS).collect(),
    };
    let fits_constant = plan.weights().len() <= MAX_CONST_TAPS;
    // Prefer a block whose tile fits the preferred size (several blocks per multiprocessor),
    // else the largest that fits at all.
    let preferred = match (separable && kh > 9, tall) {
        (true, Some(_)) => TALL_TILE_PREFERRED,
        (true, None) => SEP_TILE_PREFERRED,
        _ => FULL_TILE_PREFERRED,
    }
    .min(b.max_shared());
    let chosen = candidates
        .iter()
        .copied()
        .find(|&c| spec.tile(c).1 <= preferred)
        .or_else(|| {
            candidates
                .iter()
                .copied()
                .find(|&c| spec.tile(c).1 <= b.max_shared())
        });
    let Some(block) = chosen.filter(|_| fits_constant) else {
        if let (Some(block), true) = (b.block_override(), fits_constant) {
            return Err(CudaError::Unsupported(format!(
                "variant 'fast' with block {}x{} needs {} bytes of shared memory for this \
                kernel, the device allows {}",
                block.0,
                block.1,
                spec.tile(block).1,
                b.max_shared()
            )));
        }
        let ran = variants::baseline(b, plan, p, l)?;
        b.note_fallback(ran);
        return Ok(());
    };
    let key = ModuleKey::Fast(spec.clone());
    b.constant_weights(&key, "c_w", plan)?;
    let f = b.function(&key, if separable { "fast_sep" } else { "fast_full" })?;
    let rows = block.1 as usize * spec.py;
    let grid = (
        (l.width * ch).div_ceil(block.0 as usize * spec.px) as u32,
        l.height.div_ceil(rows) as u32,
    );
    let (ts, smem) = spec.tile(block);
    let cfg = b.config(&f, grid, block, smem)?;
    launch::plane_stride(b.stream(), &f, cfg, p, ts as i32)
}

/// Launches a register kernel (`fast_reg` or `fast_int`) of `spec` over the plane: one thread
/// per `px` samples × `py` rows, in [`FastSpec::register_block`]'s blocks.
fn launch_register(
    b: &mut CudaBackend,
    spec: &FastSpec,
    key: &ModuleKey,
    name: &str,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let f = b.function(key, name)?;
    let samples = l.width * l.channels;
    let block = spec.register_block(samples);
    let grid = (
        samples.div_ceil(spec.px).div_ceil(block.0 as usize) as u32,
        l.height.div_ceil(spec.py * block.1 as usize) as u32,
    );
    let cfg = b.config(&f, grid, block, 0)?;
    launch::plane(b.stream(), &f, cfg, p)
}

/// `fast_int`'s `c_wp`: for kernel row ky, byte offset b (0–3) of an output's first tap in its
/// first word, and word t of its window, the weights of the taps in that word's four byte
/// lanes as signed bytes: lane l holds tap kx where 4t + l − b = kx·stride, else 0. `stride`
/// is [`FastSpec::tap_stride`].
pub fn pack_int_weights(form: &IntegerForm, stride: usize) -> Vec<u32> {
    let (kw, kh, ch) = (form.width, form.height, stride);
    let span = (kw - 1) * ch + 1;
    let win = (3 + span).div_ceil(4);
    let mut out = Vec::with_capacity(kh * 4 * win);
    for ky in 0..kh {
        for b in 0..4 {
            for t in 0..win {
                let lanes = (0..4).map(|l| {
                    let pos = (4 * t + l) as isize - b as isize;
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
mod tests {
    use super::*;

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
                    assert!(spec.reg && spec.px * sb == 16 && spec.py == REG_ROWS);
                    // 7 wide for 8-bit gray, RGB and RGBA (full) and RGBA (separable).
                    let wide = sb == 1 && if separable { ch == 4 } else { ch != 2 };
                    for (kw, kh) in [(7, 3), (3, 7)] {
                        let reg = FastSpec::register(kw, kh, ch, Border::Zero, separable, sb);
                        assert_eq!(reg.is_some(), wide, "{kw}x{kh} ch {ch} sb {sb}");
                    }
                    assert!(FastSpec::register(9, 9, ch, Border::Zero, separable, sb).is_none());
                }
            }
        }
        let wide16 = FastSpec::register(3, 3, 3, Border::Clamp, false, 2).unwrap();
        assert_eq!(wide16.min_blocks, REG_MIN_BLOCKS_WIDE16);
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

    #[test]
    fn tall_blocks_for_rgb_separable_kernels_taller_than_9() {
        let tall = |k, ch, sb| {
            FastSpec::separable(k, k, ch, Border::Clamp)
                .with_sample_bytes(sb)
                .tall_block()
        };
        assert_eq!(tall(25, 3, 1), Some((16, 16)));
        assert_eq!(tall(15, 3, 1), Some((8, 16)));
        assert_eq!(tall(9, 3, 1), None);
        assert_eq!(tall(25, 1, 1), None);
        assert_eq!(tall(25, 3, 2), None);
        assert_eq!(FastSpec::new(25, 25, 3, Border::Clamp).tall_block(), None);
        // The 16 × 16 tile of RGB 25 fits the preferred size.
        let spec = FastSpec::separable(25, 25, 3, Border::Clamp);
        assert!(spec.tile((16, 16)).1 <= TALL_TILE_PREFERRED);
    }

    #[test]
    fn tiled_rows_per_thread_follow_the_unrolled_size() {
        assert_eq!(FastSpec::new(9, 9, 1, Border::Clamp).py, 4);
        assert_eq!(FastSpec::new(9, 9, 3, Border::Clamp).py, 4);
        assert_eq!(FastSpec::new(9, 9, 4, Border::Clamp).py, 2);
        assert_eq!(FastSpec::new(25, 25, 1, Border::Clamp).py, 1);
    }
}
