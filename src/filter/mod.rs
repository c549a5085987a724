//! What is computed: the filter as data (kernel, border, decomposition, output rule) and the
//! arithmetic contract every backend implements bit for bit.
//!
//! A [`Filter`] is what the user asked for; [`Filter::plan`] resolves it into a [`Plan`] (the
//! decomposition, the weights every backend sums) from the filter and `--mode` alone: the
//! decomposition is what the algorithm asks for, never what a backend happens to run, so the
//! same input and plan give the same bytes on every backend and variant. How it runs (backend,
//! threads, CUDA variant, block shape) is a schedule chosen elsewhere and never stored here; a
//! backend that cannot run a plan refuses it.
//!
//! # Arithmetic contract
//! * Full path: `acc = 0f32; for ky { for kx { acc = fma(w[ky][kx], src(x+kx−ax, y+ky−ay),
//!   acc) } }` (row-major tap order, one fused multiply-add per tap).
//! * Separable path: horizontal pass with the row factor into an f32 intermediate (same rule over
//!   kx), then vertical pass with the column factor over ky.
//! * Taps that read the zero border contribute nothing (an FMA with 0 leaves `acc` unchanged).
//! * Samples enter as their values (a 10-bit sample is 0…1023, whatever its storage; see
//!   [`crate::frame::Depth`]) converted to f32.
//! * Output: `v = acc + offset`; with `--abs`, `v = |v|`; then round half to even, saturate to
//!   0…2^bits − 1 of the format's depth (see [`finish`]).

pub mod exact;
pub mod kernel;
pub mod library;
pub mod spec;

use std::fmt;

pub use exact::IntegerForm;
pub use kernel::Kernel;

use crate::border::Border;
use crate::frame::{Family, PixelFormat};

/// Why a kernel could not be built or planned.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A `--kernel` spec does not parse or names an unknown kernel.
    #[error("kernel spec '{spec}': {msg}")]
    Spec {
        /// The spec as given, quoted for printing.
        spec: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A kernel file could not be read or parsed.
    #[error("kernel file {path}{}: {msg}", if *line > 0 { format!(" line \
        {line}") } else { String::new() })]
    File {
        /// The file's name (quoted for printing) or the origin given to the text parser.
        path: String,
        /// 1-based line of the problem; 0 when it concerns the whole file.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Weights, size or offset out of range (empty, over the limits, not finite).
    #[error("{0}")]
    Invalid(String),
    /// `--mode separable` was forced on a kernel of rank > 1 (holds the kernel's name).
    #[error("kernel '{0}' is not separable (rank > 1); use --mode full or auto")]
    NotSeparable(String),
}

/// Which decomposition to run (`--mode`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
    strum::VariantArray,
    strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Mode {
    /// Separable when the kernel is rank 1 and larger than 1 in both directions, else full.
    #[default]
    Auto,
    /// Always the full 2D sum, one FMA per tap.
    Full,
    /// Row pass then column pass; refused ([`FilterError::NotSeparable`]) for rank > 1.
    Separable,
}

/// Which planes of a planar YUV frame are filtered (`--planes`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
    strum::VariantArray,
    strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PlaneSel {
    /// Only Y; chroma is copied through.
    Luma,
    /// Every plane, chroma included.
    #[default]
    All,
}

/// What happens to an alpha channel (`--alpha`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
    strum::VariantArray,
    strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum AlphaMode {
    /// Alpha passes through unfiltered.
    #[default]
    Keep,
    /// Alpha is filtered like the color channels.
    Filter,
}

/// The user's filter: plain data.
#[derive(Clone, Debug)]
pub struct Filter {
    /// The weights and offset.
    pub kernel: Kernel,
    /// How samples outside the frame are read (`--border`).
    pub border: Border,
    /// Which decomposition to run (`--mode`).
    pub mode: Mode,
    /// Take `|acc + offset|` before rounding (`--abs`), e.g. for edge magnitudes.
    pub abs: bool,
    /// Which planes of a YUV frame are filtered (`--planes`).
    pub planes: PlaneSel,
    /// What happens to an alpha channel (`--alpha`).
    pub alpha: AlphaMode,
}

impl Filter {
    /// `kernel` with the defaults: clamp border, auto mode, no abs, all planes, alpha kept.
    pub fn new(kernel: Kernel) -> Self {
        Filter {
            kernel,
            border: Border::Clamp,
            mode: Mode::Auto,
            abs: false,
            planes: PlaneSel::All,
            alpha: AlphaMode::Keep,
        }
    }

    /// Resolves the decomposition from the kernel and the mode alone: `auto` takes the
    /// separable path for rank-1 kernels larger than 1 in both directions. Forcing `separable`
    /// on a rank > 1 kernel is an error.
    pub fn plan(&self) -> Result<Plan, FilterError> {
        let k = &self.kernel;
        let decomposition = match (self.mode, k.factors()) {
            (Mode::Full, _) | (Mode::Auto, None) => Decomposition::Full,
            (Mode::Separable, None) => return Err(FilterError::NotSeparable(k.name.clone())),
            (Mode::Auto, Some(_)) if k.width() == 1 || k.height() == 1 => Decomposition::Full,
            (Mode::Auto | Mode::Separable, Some((col, row))) => Decomposition::Separable {
                col: col.to_vec(),
                row: row.to_vec(),
            },
        };
        let mut plan = self.plan_as(decomposition);
        if plan.decomposition == Decomposition::Full && k.width() > 1 && k.height() > 1 {
            if let Some((col, row)) = k.factors() {
                let separable = self.plan_as(Decomposition::Separable {
                    col: col.to_vec(),
                    row: row.to_vec(),
                });
                plan.same_separable = exact::same_bytes_up_to(&plan, &separable)
                    .map(|max| (Box::new(separable), max, k.offset()));
            }
        }
        Ok(plan)
    }

    /// This filter planned with `decomposition`.
    fn plan_as(&self, decomposition: Decomposition) -> Plan {
        let taps = match &decomposition {
            Decomposition::Full => self.kernel.weights().to_vec(),
            Decomposition::Separable { col, row } => col.iter().chain(row).copied().collect(),
        };
        let ratios = exact::Ratios::of(&decomposition, &taps);
        Plan {
            kernel: self.kernel.clone(),
            decomposition,
            border: self.border,
            abs: self.abs,
            planes: self.planes,
            alpha: self.alpha,
            taps,
            ratios,
            same_separable: None,
        }
    }
}

/// How a plan sums: the whole 2D kernel, or its rank-1 factors in two passes.
#[derive(Clone, Debug, PartialEq)]
pub enum Decomposition {
    /// One 2D pass over every tap, row-major.
    Full,
    /// `col` is applied vertically (length = kernel height), `row` horizontally (= width).
    Separable {
        /// Vertical factor, one weight per kernel row.
        col: Vec<f32>,
        /// Horizontal factor, one weight per kernel column.
        row: Vec<f32>,
    },
}

impl fmt::Display for Decomposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Decomposition::Full => "full",
            Decomposition::Separable { .. } => "separable",
        })
    }
}

/// A resolved filter, ready for any backend.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The filter's kernel (its offset is the contract's `offset`).
    pub kernel: Kernel,
    /// The decomposition resolved from the kernel and the mode.
    pub decomposition: Decomposition,
    /// How samples outside the frame are read.
    pub border: Border,
    /// Take `|acc + offset|` before rounding.
    pub abs: bool,
    /// Which planes of a YUV frame are filtered.
    pub planes: PlaneSel,
    /// Whether an alpha channel is filtered or kept.
    pub alpha: AlphaMode,
    /// The weights as kernels read them: full, row-major; separable, column then row factor.
    taps: Vec<f32>,
    /// The taps as integers over divisors, when they are (see [`IntegerForm`]).
    ratios: Option<exact::Ratios>,
    /// A full plan's separable plan, with the largest sample value up to which both give the
    /// same bytes for every input and the kernel offset that was proven with
    /// ([`Plan::same_separable`]).
    same_separable: Option<(Box<Plan>, u16, f32)>,
}

impl Plan {
    /// The weights as kernels read them (full: the kernel row-major; separable: the column
    /// factor, then the row factor).
    pub fn weights(&self) -> &[f32] {
        &self.taps
    }

    /// The taps as integers over divisors, found when the plan was made.
    pub(crate) fn ratios(&self) -> Option<&exact::Ratios> {
        self.ratios.as_ref()
    }

    /// For a full plan of a rank-1 kernel: the separable plan of the same kernel when it gives
    /// this plan's bytes for every input of samples in `0…max`. That holds where both plans are
    /// proven to equal the same exact integer form ([`IntegerForm::of`]: the dyadic Gaussians
    /// up to 9, binomial, box and Sobel kernels on 8-bit samples; fewer on deeper ones), so a
    /// backend may run the separable plan's 2k taps in place of the k² of the full one, and
    /// the bytes stay those of the full contract (`fast` and `cpu-par` do; the literature's
    /// variants and `cpu-seq` run the plan as it is). `max` is the largest value a sample can
    /// take as stored ([`crate::frame::Depth::largest_stored`]). The plan returned takes this
    /// plan's border, `--abs`, planes and alpha as they are now; none if the kernel's offset
    /// changed since the proof.
    pub fn same_separable(&self, max: u16) -> Option<Plan> {
        match &self.same_separable {
            Some((plan, up_to, offset))
                if max <= *up_to && offset.to_bits() == self.kernel.offset().to_bits() =>
            {
                Some(Plan {
                    kernel: self.kernel.clone(),
                    border: self.border,
                    abs: self.abs,
                    planes: self.planes,
                    alpha: self.alpha,
                    same_separable: None,
                    ..Plan::clone(plan)
                })
            }
            _ => None,
        }
    }

    /// Whether the output rule's saturation never acts on this plan's outputs for samples in
    /// `0…largest` (the largest value a stored sample can take,
    /// [`crate::frame::Depth::largest_stored`]) saturated to `0…max`: every `v` (`acc + offset`,
    /// `|v|` with `--abs`) lies in `[-0.5, max + 0.5)`, so rounding alone puts it in `0…max`
    /// and a kernel may leave the clamp out. The bounds come from the plan's own f32 steps in
    /// contract order, run on extreme inputs tap by tap: each fused multiply-add `w · x + acc`
    /// rounds an exact value that grows with `acc` and moves with `x` in the direction of
    /// `w`'s sign, so the rounded step is monotone in both, and taking for every tap the sample
    /// (0 or `largest`) that pushes the sum up, or down, bounds it from above, or below (a
    /// zero-border tap reads 0, within the range). A separable plan bounds its row pass that
    /// way and runs the column pass on those bounds. Nonnegative kernels whose f32 sums stay
    /// under `max + 0.5` at the brightest input (most blurs) qualify; kernels with negative
    /// taps qualify only with an offset or `--abs` that keeps every sum in range.
    pub fn saturation_free(&self, largest: u16, max: u16) -> bool {
        fn bounds(w: &[f32], (lo, hi): (f32, f32)) -> (f32, f32) {
            w.iter().fold((0.0, 0.0), |(a, b), &w| {
                let (down, up) = if w >= 0.0 { (lo, hi) } else { (hi, lo) };
                (w.mul_add(down, a), w.mul_add(up, b))
            })
        }
        let inputs = (0.0, f32::from(largest));
        let (lo, hi) = match &self.decomposition {
            Decomposition::Full => bounds(&self.taps, inputs),
            Decomposition::Separable { col, row } => bounds(col, bounds(row, inputs)),
        };
        let offset = self.kernel.offset();
        let (lo, hi) = (lo + offset, hi + offset);
        let (lo, hi) = match self.abs {
            false => (lo, hi),
            true if lo >= 0.0 => (lo, hi),
            true if hi <= 0.0 => (-hi, -lo),
            true => (0.0, hi.max(-lo)),
        };
        // NaN (an overflowing sum) fails both comparisons.
        lo >= -0.5 && hi < f32::from(max) + 0.5
    }

    /// True when the plan runs the two-pass separable path.
    pub fn is_separable(&self) -> bool {
        matches!(self.decomposition, Decomposition::Separable { .. })
    }

    /// One line for reports and `convflow kernels`: kernel, size, decomposition, border.
    pub fn describe(&self) -> String {
        format!(
            "{} {}x{} {} border={}",
            self.kernel.name,
            self.kernel.width(),
            self.kernel.height(),
            self.decomposition,
            self.border
        )
    }

    /// Bit mask of the channels of `plane` that are filtered (bit c = channel c); 0 means the
    /// plane is copied through unchanged.
    pub fn channel_mask(&self, format: PixelFormat, plane: usize) -> u8 {
        match format.family() {
            Family::Gray => 0b1,
            Family::Rgb => 0b111,
            Family::Rgba => match self.alpha {
                AlphaMode::Keep => 0b0111,
                AlphaMode::Filter => 0b1111,
            },
            Family::Yuv420 | Family::Yuv422 | Family::Yuv444 | Family::Nv12 => {
                match (plane, self.planes) {
                    (0, _) | (_, PlaneSel::All) => (1u8 << format.plane_channels(plane)) - 1,
                    _ => 0,
                }
            }
        }
    }
}

/// The output rule of the contract: `v = acc + offset`, `|v|` if `abs`, round half to even,
/// saturate to 0…`max` (2^bits − 1 of the format's real depth: 255, 1023, 65535, …).
/// `kernels/common.cuh` implements the same steps with `rintf`.
#[inline(always)]
#[allow(clippy::manual_clamp)] // clamp() would keep a NaN; max() maps it to 0 (see below)
pub fn finish(acc: f32, offset: f32, abs: bool, max: u16) -> u16 {
    let mut v = acc + offset;
    if abs {
        v = v.abs();
    }
    // `max` before `min` also maps a NaN (possible only through overflow with absurd weights)
    // to 0, so the value is always in 0…max and the unchecked conversion is exact.
    let r = v.round_ties_even().max(0.0).min(max as f32);
    // SAFETY: `r` is finite and within 0…65535, representable in i32.
    unsafe { r.to_int_unchecked::<i32>() as u16 }
}

/// The contract's sum `acc` on one window of samples (row-major, kernel-sized), as cpu-seq
/// computes it: every fused multiply-add in contract order (for unit tests).
#[cfg(test)]
pub(crate) fn test_window_sum(plan: &Plan, s: &[u16]) -> f32 {
    let k = &plan.kernel;
    let (w, h) = (k.width(), k.height());
    match &plan.decomposition {
        Decomposition::Full => k
            .weights()
            .iter()
            .zip(s)
            .fold(0f32, |a, (&w, &s)| w.mul_add(f32::from(s), a)),
        Decomposition::Separable { col, row } => (0..h).fold(0f32, |a, y| {
            let hs = (0..w).fold(0f32, |b, x| row[x].mul_add(f32::from(s[y * w + x]), b));
            col[y].mul_add(hs, a)
        }),
    }
}

/// A deterministic xorshift generator from `seed` (nonzero), for unit tests.
#[cfg(test)]
pub(crate) fn test_rng(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// The plan of kernel spec `spec` in `mode`, other settings default (for unit tests).
#[cfg(test)]
pub(crate) fn test_plan(spec: &str, mode: Mode) -> Plan {
    let mut f = Filter::new(spec::parse_spec(spec).unwrap());
    f.mode = mode;
    f.plan().unwrap()
}

#[cfg(test)]
mod tests;
