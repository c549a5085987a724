//! `fast`, our variant: which specialization of kernels/fast.cu runs a plan, with which block
//! and shared-memory tile, and when no specialization fits.
//!
//! A [`FastSpec`] fixes kernel size, anchor, channels, border and register blocking at NVRTC
//! compile time (weights become constant operands). Kernels up to 3×3 take the streaming
//! kernel (no shared memory); others the tiled kernels, whose block shrinks (unless given)
//! until the tile fits 48 KB. A kernel beyond constant memory or any tile is handed to the
//! baseline kernels of the same decomposition — same results, slower — and the backend's name
//! says so.

use super::abi::{launch, PlaneParams, MAX_CONST_TAPS};
use super::registry::ModuleKey;
use super::{variants, CudaBackend, CudaError};
use crate::border::Border;
use crate::filter::Plan;
use crate::frame::PlaneLayout;

/// A compile-time specialization of the `fast` family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastSpec {
    pub kw: usize,
    pub kh: usize,
    pub ch: usize,
    pub border: Border,
    /// Bytes per stored sample: 1, or 2 for 16-bit words.
    pub sb: usize,
    /// Output samples per thread along a row (a multiple of 4 and of `ch`).
    pub px: usize,
    /// Output rows per thread in the tiled kernels.
    pub py: usize,
    /// Unroll factor of the kernel-row loop of `fast_full`.
    pub ky_unroll: usize,
    /// Build `fast_sep` (weights: column then row) instead of `fast_full`.
    pub separable: bool,
    /// Output rows per thread of `fast_stream`; 0 builds the shared-memory kernels instead.
    pub stream_rows: usize,
}

impl FastSpec {
    /// The specialization for a full kernel; [`FastSpec::separable`] for the fused two-pass one.
    pub fn new(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        let px = 4 * ch;
        // Several rows per thread, fully unrolled, while the straight-line code stays small
        // (≤ 4096 FMAs); else one row per thread with the kernel rows in a loop.
        let py = if kw * kh * px <= 1024 { 4 } else { 1 };
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
            stream_rows: 0,
        }
    }

    /// The streaming specialization (`fast_stream`) where it measured faster than the tiled
    /// kernels on an H200 (docs/PERFORMANCE.md): kernels up to 3×3, and separable ones only
    /// for 1–2 channels; else None (from k = 5 on, the tiled kernels were as fast or faster).
    ///
    /// `threads_per_row × height` sizes the grid: each thread takes 16, 8 or 4 rows, the most
    /// that still gives about 2^18 threads (the chip's resident threads many times over).
    pub fn stream(
        kw: usize,
        kh: usize,
        ch: usize,
        border: Border,
        separable: bool,
        (width, height): (usize, usize),
    ) -> Option<FastSpec> {
        let fits = kw <= 3 && kh <= 3 && (!separable || ch <= 2);
        let per_row = width.div_ceil(4);
        let rows = [16, 8, 4]
            .into_iter()
            .find(|&r| per_row * height.div_ceil(r) >= 1 << 18)
            .unwrap_or(4);
        fits.then(|| FastSpec {
            separable,
            stream_rows: rows,
            ..FastSpec::new(kw, kh, ch, border)
        })
    }

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
            format!("-DSTREAM={}", (self.stream_rows > 0) as u8),
            format!("-DROWS={}", self.stream_rows.max(1)),
        ]
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

/// Block shapes tried, largest first, when none was asked for.
const BLOCKS: [(u32, u32); 11] = [
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

/// Launches `fast` on one plane (the variant table's launch function for `fast` and `auto`).
pub(super) fn launch(
    b: &mut CudaBackend,
    plan: &Plan,
    p: &PlaneParams,
    l: PlaneLayout,
) -> Result<(), CudaError> {
    let (kw, kh, ch) = (plan.kernel.width(), plan.kernel.height(), l.channels);
    let separable = plan.is_separable();
    // Small kernels: the streaming kernel (1D blocks of 128 threads), unless a block shape was
    // asked for, which only the tiled kernels take.
    let sb = l.depth.bytes();
    let stream = FastSpec::stream(kw, kh, ch, plan.border, separable, (l.width, l.height))
        .map(|s| s.with_sample_bytes(sb));
    if let Some(spec) = stream.filter(|_| b.block_override().is_none()) {
        let key = ModuleKey::Fast(spec.clone());
        b.constant_weights(&key, "c_w", plan)?;
        let f = b.function(&key, "fast_stream")?;
        let threads = 128u32;
        let grid = (
            (l.width * ch).div_ceil(spec.px).div_ceil(threads as usize) as u32,
            l.height.div_ceil(spec.stream_rows) as u32,
        );
        let cfg = b.config(&f, grid, (threads, 1), 0)?;
        return launch::plane(b.stream(), &f, cfg, p);
    }
    let spec = if separable {
        FastSpec::separable(kw, kh, ch, plan.border)
    } else {
        FastSpec::new(kw, kh, ch, plan.border)
    }
    .with_sample_bytes(sb);
    let candidates: Vec<(u32, u32)> = match b.block_override() {
        Some(block) => vec![block],
        None => BLOCKS.to_vec(),
    };
    let fits_constant = plan.weights().len() <= MAX_CONST_TAPS;
    // Prefer a block whose tile fits 48 KB (several blocks per multiprocessor), else the
    // largest that fits at all.
    let chosen = candidates
        .iter()
        .copied()
        .find(|&c| spec.tile(c).1 <= 48 * 1024)
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
