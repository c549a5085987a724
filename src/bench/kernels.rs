//! `convflow bench kernels`: filter-only time per backend (and CUDA variant) × frame size ×
//! format × kernel size × decomposition, on `gaussian:k` (or `box:k`, `binomial:k`, or `log:k`,
//! which is not separable and has float weights: the full f32 path). Where a backend reports its
//! measured ceilings, each point also gets its floor, max(bytes / copy bandwidth, FMAs / FMA
//! rate), and the ratio time / floor.

use std::time::Duration;

use serde::Serialize;

use super::{fill_random, median_duration, parse_size, time_filter, BenchError, Clock};
use crate::backend::{self, BackendKind, Schedule};
use crate::border::Border;
use crate::filter::{library, AlphaMode, Decomposition, Filter, Mode};
use crate::frame::{Frame, PixelFormat};

/// What `bench kernels` measures: every backend × size × format × k × mode.
#[derive(Clone, Debug)]
pub struct KernelBench {
    /// Backends to measure, each with its schedule (CUDA variants are separate entries).
    pub backends: Vec<(BackendKind, Schedule)>,
    /// Frame sizes as [`parse_size`] reads them (`1080p`, `4k`, `640x480`, …).
    pub sizes: Vec<String>,
    /// Pixel formats of the input frames.
    pub formats: Vec<PixelFormat>,
    /// Kernel sizes: each k measures a k×k kernel of `family`.
    pub ks: Vec<usize>,
    /// Which named kernel is measured.
    pub family: Family,
    /// `Full` and/or `Separable` (`Separable` is left out for a kernel that is not rank 1).
    pub modes: Vec<Mode>,
    /// Border rule of every plan.
    pub border: Border,
    /// Alpha rule of every plan (RGBA formats: alpha kept or filtered).
    pub alpha: AlphaMode,
    /// Untimed runs before each point.
    pub warmup: usize,
    /// Timed runs per point (at least one is always taken).
    pub runs: usize,
    /// Time after which a point stops taking more runs.
    pub budget: Duration,
}

/// The kernel measured at each size. Gaussian, box and binomial kernels are rank 1, and the
/// default Gaussians up to 9 taps, boxes and binomials have exact integer forms (see
/// [`crate::filter::IntegerForm`]); `log` is neither.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    strum::Display,
    strum::EnumString,
    strum::EnumMessage,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Family {
    /// `gaussian:k` with OpenCV's default σ for k.
    #[default]
    Gaussian,
    /// `box:k`, the k×k mean.
    Box,
    /// `binomial:k`, Pascal's row k−1 in both directions.
    Binomial,
    /// `log:k`, the k×k Laplacian of Gaussian (OpenCV's default σ for k): not rank 1, with float
    /// weights, so from k = 3 every plan of it is full and runs in f32, as custom kernels of
    /// real weights do (`log:1` and `log:2` are all zeros).
    Log,
}

impl Family {
    /// The k×k kernel of this family, named as its spec (`gaussian:5`).
    pub fn kernel(self, k: usize) -> Result<crate::filter::Kernel, crate::filter::FilterError> {
        match self {
            Family::Gaussian => library::gaussian(k, k, None, format!("gaussian:{k}")),
            Family::Box => library::box_filter(k, k, format!("box:{k}")),
            Family::Binomial => library::binomial(k, k, format!("binomial:{k}")),
            Family::Log => library::log(k, None, format!("log:{k}")),
        }
    }
}

/// One measured point.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The backend's report name (CUDA variant included).
    pub backend: String,
    /// The size as configured (`1080p`, `WxH`).
    pub size: String,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Input pixel format.
    pub format: PixelFormat,
    /// The alpha rule, for formats with alpha.
    pub alpha: Option<AlphaMode>,
    /// Kernel side: a k×k kernel.
    pub k: usize,
    /// The kernel's name (`gaussian:5`).
    pub kernel: String,
    /// `full` or `separable`.
    pub decomposition: String,
    /// How the times were taken.
    pub clock: Clock,
    /// Timed runs taken.
    pub runs: usize,
    /// Median time per frame.
    pub median: Duration,
    /// Fastest run.
    pub min: Duration,
    /// Slowest run.
    pub max: Duration,
    /// Bytes read + written (input and output frames once each).
    pub bytes: f64,
    /// Fused multiply-adds per frame: samples × taps (k² full, 2k separable).
    pub fmas: f64,
    /// Floor from the backend's measured ceilings, if any.
    pub floor: Option<Duration>,
}

impl Sample {
    /// Megapixels per second at the median.
    pub fn mpix_per_s(&self) -> f64 {
        (self.width * self.height) as f64 / self.median.as_secs_f64() / 1e6
    }
    /// Gigabytes (10⁹) read and written per second at the median.
    pub fn gb_per_s(&self) -> f64 {
        self.bytes / self.median.as_secs_f64() / 1e9
    }
    /// GFLOP/s at the median, counting an FMA as two operations.
    pub fn gflop_per_s(&self) -> f64 {
        2.0 * self.fmas / self.median.as_secs_f64() / 1e9
    }
    /// Median time over the floor (≥ 1 when the ceilings hold), when a floor is known.
    pub fn floor_ratio(&self) -> Option<f64> {
        self.floor
            .map(|f| self.median.as_secs_f64() / f.as_secs_f64())
    }

    /// The sample as a CSV row.
    pub fn row(&self) -> SampleRow {
        SampleRow {
            backend: self.backend.clone(),
            size: self.size.clone(),
            width: self.width,
            height: self.height,
            format: self.format,
            k: self.k,
            path: self.decomposition.clone(),
            clock: self.clock,
            runs: self.runs,
            median_s: self.median.as_secs_f64(),
            min_s: self.min.as_secs_f64(),
            max_s: self.max.as_secs_f64(),
            mpix_per_s: self.mpix_per_s(),
            gb_per_s: self.gb_per_s(),
            gflop_per_s: self.gflop_per_s(),
            floor_s: self.floor.map(|f| f.as_secs_f64()),
            floor_ratio: self.floor_ratio(),
            alpha: self.alpha.map(<&str>::from),
            kernel: self.kernel.clone(),
        }
    }
}

/// A [`Sample`] as written to CSV.
#[derive(Clone, Debug, Serialize)]
pub struct SampleRow {
    /// The backend's report name.
    pub backend: String,
    /// The size as configured.
    pub size: String,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Input pixel format (its name).
    pub format: PixelFormat,
    /// Kernel side.
    pub k: usize,
    /// The decomposition: `full` or `separable`.
    pub path: String,
    /// How the times were taken.
    pub clock: Clock,
    /// Timed runs taken.
    pub runs: usize,
    /// Median time per frame, seconds.
    pub median_s: f64,
    /// Fastest run, seconds.
    pub min_s: f64,
    /// Slowest run, seconds.
    pub max_s: f64,
    /// [`Sample::mpix_per_s`].
    pub mpix_per_s: f64,
    /// [`Sample::gb_per_s`].
    pub gb_per_s: f64,
    /// [`Sample::gflop_per_s`].
    pub gflop_per_s: f64,
    /// The floor in seconds, when the backend measured its ceilings.
    pub floor_s: Option<f64>,
    /// [`Sample::floor_ratio`].
    pub floor_ratio: Option<f64>,
    /// `keep` or `filter` for formats with alpha; empty for the others.
    pub alpha: Option<&'static str>,
    /// The kernel's name (`gaussian:5`).
    pub kernel: String,
}

/// Runs every configured point, calling `report` as each finishes. A decomposition a backend
/// does not run is left out for it.
pub fn run_kernels(
    cfg: &KernelBench,
    mut report: impl FnMut(&Sample),
) -> Result<Vec<Sample>, BenchError> {
    let mut out = Vec::new();
    for (kind, schedule) in &cfg.backends {
        let mut backend = backend::create(*kind, schedule)?;
        let ceilings = match backend.measure() {
            Some(m) => m.ceilings().ok(),
            None => None,
        };
        for size in &cfg.sizes {
            let (w, h) = parse_size(size)?;
            for &format in &cfg.formats {
                let mut src = Frame::new(format, w, h)?;
                fill_random(&mut src, (w * 31 + h) as u64);
                let samples: usize = src
                    .planes()
                    .iter()
                    .map(|l| l.width * l.height * l.channels)
                    .sum();
                for &k in &cfg.ks {
                    for &mode in &cfg.modes {
                        let kernel = cfg.family.kernel(k)?;
                        if mode == Mode::Separable && !kernel.is_separable() {
                            continue;
                        }
                        let mut filter = Filter::new(kernel);
                        filter.border = cfg.border;
                        filter.alpha = cfg.alpha;
                        filter.mode = mode;
                        let plan = filter.plan()?;
                        if backend.check_plan(&plan).is_err() {
                            continue;
                        }
                        let (decomposition, taps) = match plan.decomposition {
                            Decomposition::Full => ("full", k * k),
                            Decomposition::Separable { .. } => ("separable", 2 * k),
                        };
                        let (clock, times) = time_filter(
                            backend.as_mut(),
                            &plan,
                            &src,
                            cfg.warmup,
                            cfg.runs,
                            cfg.budget,
                        )?;
                        let bytes = 2.0 * src.data().len() as f64;
                        let fmas = (samples * taps) as f64;
                        let floor = ceilings
                            .map(|(bw, fma)| Duration::from_secs_f64((bytes / bw).max(fmas / fma)));
                        let s = Sample {
                            backend: backend.name(),
                            size: size.clone(),
                            width: w,
                            height: h,
                            format,
                            alpha: (format.family() == crate::frame::Family::Rgba)
                                .then_some(filter.alpha),
                            k,
                            kernel: filter.kernel.name.clone(),
                            decomposition: decomposition.into(),
                            clock,
                            runs: times.len(),
                            median: median_duration(&times),
                            min: times[0],
                            max: *times.last().expect("at least one run"),
                            bytes,
                            fmas,
                            floor,
                        };
                        report(&s);
                        out.push(s);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Header and separator lines of the markdown table whose rows [`table_row`] writes.
pub const TABLE_HEADER: &str =
    "| backend | size | format | k | path | clock | runs | median µs | min µs | max µs | MPix/s | \
GB/s | GFLOP/s | floor µs | ×floor \
|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// One markdown table row.
pub fn table_row(s: &Sample) -> String {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let r = s.row();
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} \
        | {} |",
        r.backend,
        r.size,
        match s.alpha {
            Some(AlphaMode::Filter) => format!("{} (alpha filtered)", r.format),
            _ => r.format.to_string(),
        },
        r.k,
        r.path,
        <&str>::from(r.clock),
        r.runs,
        us(s.median),
        us(s.min),
        us(s.max),
        r.mpix_per_s,
        r.gb_per_s,
        r.gflop_per_s,
        s.floor
            .map(|f| format!("{:.1}", us(f)))
            .unwrap_or_else(|| "-".into()),
        r.floor_ratio
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "-".into()),
    )
}
