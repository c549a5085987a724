//! `fast_sep`'s specialization: the separable [`FastSpec`] and what the plane and the block
//! change in it (rows per thread, launch bounds, row-pass items, its staged rows' stride),
//! and which of its rolled passes, 16-byte staged loads and alpha-free sums fit (fast_sep.cuh's
//! `SEPC`, `CROLL`, `SEPV`, `SEPK`).

use super::rules::{narrow_sums_stride, tuning};
use super::*;

impl FastSpec {
    /// The specialization of `fast_sep` (fused two-pass) for a separable kernel: as
    /// [`FastSpec::new`], its row pass reading global memory ([`FastSpec::row_global`];
    /// `CONVFLOW_FAST_SEPG=0`: an input tile) with [`SEP_ROWS`] rows per thread
    /// ([`SEP_ROWS_RGBA`] for 4 channels; with an input tile, 2 from 3 channels, else 4).
    pub fn separable(kw: usize, kh: usize, ch: usize, border: Border) -> FastSpec {
        let row_global = tuning().sep_global.unwrap_or(true);
        let py = match (row_global, ch) {
            (true, 4) => SEP_ROWS_RGBA,
            (true, _) => SEP_ROWS,
            // Fewer rows per thread for wide pixels keeps the two shared-memory stages small.
            (false, 3..) => 2,
            (false, _) => 4,
        };
        FastSpec {
            py,
            separable: true,
            row_global,
            ..FastSpec::new(kw, kh, ch, border)
        }
    }

    /// The tiled specialization of a `kw` × `kh` kernel, separable or full, for plane `p` of
    /// `pixels` pixels, `ch` channels of `sb`-byte samples: what it compiles in of the plane
    /// first ([`FastSpec::for_plane`]), then the rows the plane's size gives
    /// ([`FastSpec::for_pixels`], which reads the plane's mask).
    pub fn tiled_for_plane(
        separable: bool,
        (kw, kh): (usize, usize),
        (ch, sb): (usize, usize),
        border: Border,
        p: &PlaneParams,
        pixels: usize,
    ) -> FastSpec {
        if separable {
            FastSpec::separable(kw, kh, ch, border)
        } else {
            FastSpec::new(kw, kh, ch, border)
        }
        .with_sample_bytes(sb)
        .for_plane(p)
        .for_pixels(pixels)
    }

    /// The same separable specialization for a plane of `pixels` pixels: the rows of
    /// [`sep_small_shape`] where it has a shape; 8-bit RGBA taller than 9 on large planes takes
    /// [`sep_rows_rgba_large`]'s ([`sep_rgba_large`]; by its mask, set first), 16-bit RGBA and
    /// rgb48 there [`sep_large16_shape`]'s where it has a shape.
    pub fn for_pixels(self, pixels: usize) -> FastSpec {
        let global = self.separable && self.row_global;
        let py = match self.small_shape(pixels) {
            Some(shape) => shape.rows,
            None if global && self.rgba_large(pixels) => {
                sep_rows_rgba_large(self.kh, self.all_filtered())
            }
            None => match self.large16_shape(pixels) {
                Some((_, rows)) => rows,
                None => self.py,
            },
        };
        FastSpec { py, ..self }
    }

    /// [`sep_large16_shape`]'s block and rows for this separable specialization with its row
    /// pass from global memory on a plane of `pixels` pixels.
    pub(super) fn large16_shape(&self, pixels: usize) -> Option<((u32, u32), usize)> {
        if !self.separable || !self.row_global {
            return None;
        }
        sep_large16_shape((self.ch, self.sb), self.kh, pixels, !self.all_filtered())
    }

    /// Whether the plane's every channel is filtered (else RGBA's alpha is kept, `--alpha
    /// keep`: the mask the rules read it by).
    pub(super) fn all_filtered(&self) -> bool {
        self.mask == all_channels(self.ch)
    }

    /// [`sep_small_shape`]'s shape for this separable specialization with its row pass from
    /// global memory on a plane of `pixels` pixels.
    pub fn small_shape(&self, pixels: usize) -> Option<SepShape> {
        if !self.separable || !self.row_global {
            return None;
        }
        sep_small_shape(self.ch, self.sb, self.kh, pixels)
    }

    /// `fast_sep`'s launch bounds in `block` on a plane of `pixels` pixels with its row pass
    /// from global memory ([`sep_min_blocks`], scaled to the block's threads); else None.
    pub(super) fn sep_bounds(&self, (bx, by): (u32, u32), pixels: usize) -> Option<(u32, usize)> {
        if !self.separable || !self.row_global {
            return None;
        }
        let large = self.rgba_large(pixels);
        let m = tuning()
            .sep_minb
            .unwrap_or_else(|| match self.small_shape(pixels) {
                Some(shape) => shape.min_blocks,
                None => sep_min_blocks(self.ch, self.sb, self.kw.max(self.kh), large),
            });
        let threads = bx * by;
        (m > 0).then(|| (threads, (m * 128 / threads as usize).max(1)))
    }

    /// The same specialization launched in `block` on a plane of `pixels` pixels, in a launch of
    /// `launch_samples` samples: `fast_sep`'s row-pass items (with [`FastSpec::row_global`])
    /// widened to [`sep_small_shape`]'s or else [`sep_row_threads`] threads' outputs, or as many as
    /// the block's row holds a whole number of (`CONVFLOW_FAST_SEP_HPX`: that many). Threads owning
    /// other than 4 pixels' samples ([`sep_px`]) take items of the most whole threads' outputs, up
    /// to as many samples as that many 4-pixel threads own (or one thread's), and their integer row
    /// pass reads its windows as loaded, not regrouped per channel (fast.cu's DEIL): measured with
    /// neither.
    pub fn for_block(self, (bx, _): (u32, u32), pixels: usize, launch_samples: usize) -> FastSpec {
        if !self.separable || !self.row_global {
            return self;
        }
        let want = tuning()
            .sep_hpx
            .unwrap_or_else(|| match self.small_shape(pixels) {
                Some(shape) => shape.row_threads,
                None => sep_row_threads(self.ch, self.sb, self.kw, launch_samples),
            });
        let full_px = 4 * self.ch;
        let m = if self.px == full_px {
            [4, 2, 1]
                .into_iter()
                .find(|&m| m <= want && (bx as usize).is_multiple_of(m))
        } else {
            [12, 8, 6, 4, 3, 2, 1]
                .into_iter()
                .find(|&m| m * self.px <= want * full_px && (bx as usize).is_multiple_of(m))
        }
        .unwrap_or(1);
        let row_px = m * self.px;
        FastSpec {
            row_px,
            deinterleave: self.deinterleave && self.px == full_px,
            ..self
        }
    }

    /// Whether `fast_sep` can read its staged words by 16-byte loads
    /// ([`FastSpec::staged_vector`]): its block is compiled in ([`FastSpec::fixed_block`]),
    /// its rows are staged, and the block's row and the row-pass items are whole 16-byte units
    /// (fast_sep.cuh's `SEPV` checks the same).
    pub fn staged_vector_fits(&self) -> bool {
        let units = |n: usize| (n * self.sb).is_multiple_of(16);
        self.row_staged
            && units(self.row_px)
            && self
                .fixed_block
                .is_some_and(|(bx, _)| units(bx as usize * self.px))
    }

    /// Whether `fast_sep` reads its staged words by 16-byte loads: asked for
    /// ([`FastSpec::staged_vector`]) where it fits ([`FastSpec::staged_vector_fits`]).
    pub fn staged_vector_on(&self) -> bool {
        self.staged_vector && self.staged_vector_fits()
    }

    /// The 16-byte units between `fast_sep`'s staged rows ([`FastSpec::row_staged`]) for
    /// `bx` × `by` threads whose rows need `need` units. With word loads, an odd number. With
    /// 16-byte loads ([`FastSpec::staged_vector_on`]) the
    /// smallest stride from `need` that gives each 8 threads of a 16-byte load the fewest
    /// shared-memory wavefronts: thread (x, y)'s first item column and row as fast_sep.cuh
    /// deals them (one channel: column x / m, row y·m + x % m, m threads to an item column;
    /// more: item i of the block's first round, row i / items a row), a unit's bank group its
    /// index mod 8.
    pub fn staged_units(&self, bx: u32, by: u32, need: usize) -> usize {
        if !self.staged_vector_on() {
            return need | 1;
        }
        let (bx, by) = (bx as usize, by as usize);
        let m = self.row_px / self.px;
        let items_row = bx * self.px / self.row_px;
        let item_units = self.row_px * self.sb / 16;
        let place = |t: usize| -> (usize, usize) {
            let (x, y) = (t % bx, t / bx);
            if self.ch == 1 {
                (x / m, y * m + x % m)
            } else {
                (t % items_row, t / items_row)
            }
        };
        // A quarter warp's wavefronts: the most of its threads on one bank group.
        let wavefronts = |units: usize| -> usize {
            (0..bx * by)
                .step_by(8)
                .map(|q| {
                    let mut on = [0usize; 8];
                    for t in q..(q + 8).min(bx * by) {
                        let (item, row) = place(t);
                        on[(row * units + item * item_units) % 8] += 1;
                    }
                    on.into_iter().max().unwrap_or(0)
                })
                .sum()
        };
        (need..need + 8)
            .min_by_key(|&u| (wavefronts(u), u))
            .unwrap_or(need)
    }

    /// Whether `fast_sep` can keep no horizontal sums for an unfiltered alpha
    /// ([`FastSpec::compact_sums`]): its row pass from global memory on 4 channels whose
    /// fourth is not filtered (`--alpha keep`), threads and row-pass items of whole groups of 4
    /// pixels (fast_sep.cuh's `SEPK` checks the same).
    pub fn compact_sums_fits(&self) -> bool {
        self.separable
            && !self.reg
            && self.row_global
            && self.ch == 4
            && self.mask == 0b0111
            && self.px.is_multiple_of(16)
            && self.row_px.is_multiple_of(16)
    }

    /// Floats between `fast_sep`'s rows of horizontal sums in blocks `bx` threads wide
    /// (fast_sep.cuh's `sep_sums_row`): [`FastSpec::sums_row`] of the block row's sums, but
    /// with no sums for alpha ([`FastSpec::compact_sums`]) in blocks 4 threads wide of 4-pixel
    /// threads the fewest float4s `u` from there with `py · u ≡ 4 (mod 8)`, so that a quarter
    /// warp's two rows of threads load from disjoint bank groups.
    pub fn sep_sums_row(&self, bx: u32) -> usize {
        let cols = self.sums_cols(bx as usize * self.px);
        if self.compact_sums_on() && narrow_sums_stride(bx, self.px, self.py) {
            let mut u = cols / 4;
            while self.py * u % 8 != 4 {
                u += 1;
            }
            return 4 * u;
        }
        self.sums_row(cols)
    }

    /// Whether `fast_sep` keeps no sums for alpha: asked for ([`FastSpec::compact_sums`])
    /// where it fits ([`FastSpec::compact_sums_fits`]).
    pub fn compact_sums_on(&self) -> bool {
        self.compact_sums && self.compact_sums_fits()
    }

    /// Whether `fast_sep`'s row pass can take its items one channel at a time
    /// ([`FastSpec::sums_planar`]): the f32 row pass from global memory on 2–4 channels, its
    /// threads owning groups of 4 pixels (each group's sums are stored channel after channel
    /// in the group's own columns, so a thread's PX columns hold exactly its own groups).
    pub fn sums_planar_fits(&self) -> bool {
        self.separable
            && !self.reg
            && self.row_global
            && self.row_int.is_none()
            && self.ch >= 2
            && self.px.is_multiple_of(4 * self.ch)
    }

    /// The same specialization with `fast_sep`'s passes rolled where [`sep_rolled`] measured
    /// that faster on a plane of `pixels` pixels, the column pass only with the row pass from
    /// global memory (`CONVFLOW_FAST_SEPC` / `CONVFLOW_FAST_CROLL` override the rule), each
    /// only where it fits ([`FastSpec::sums_planar_fits`], [`FastSpec::col_rolled_fits`]).
    pub(super) fn with_rolled(self, pixels: usize) -> FastSpec {
        if !self.separable {
            return self;
        }
        let filtered = self.mask.count_ones() as usize;
        let (planar, col) = sep_rolled((self.ch, filtered), self.sb, self.kw, self.kh, pixels);
        FastSpec {
            sums_planar: self.sums_planar_fits() && tuning().sums_planar.unwrap_or(planar),
            col_rolled: self.col_rolled_fits()
                && tuning().col_rolled.unwrap_or(col && self.row_global),
            ..self
        }
    }

    /// Whether `fast_sep`'s column pass can roll its middle rows ([`FastSpec::col_rolled`]):
    /// the kernel is at least as tall as a thread's rows.
    pub fn col_rolled_fits(&self) -> bool {
        self.separable && !self.reg && self.kh >= self.py
    }

    /// The large planes' RGBA rules apply: 8-bit RGBA taller than 9 on a large plane
    /// ([`sep_rgba_large`]; the height decides, as for the block).
    pub(super) fn rgba_large(&self, pixels: usize) -> bool {
        self.kh > 9 && sep_rgba_large(self.ch, self.sb, pixels)
    }
}
