//! The suite's one row schema: every experiment's measurements are [`Row`]s, typed fields that
//! serde writes as CSV and JSON and reads back (`bench plot --from`), and that the markdown
//! table prints.

use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;
use crate::bench::Clock;
use crate::frame::PixelFormat;

/// The experiments, in the order `bench all` runs them.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Experiment {
    /// Separable Gaussian (two passes) against the full 2D LoG, over kernel sizes.
    Separable,
    /// cpu-par scaling over thread counts, with parallel efficiency.
    Threads,
    /// The CUDA memory variants (global, constant, shared, texture, …), and pageable against
    /// page-locked copies.
    Memory,
    /// CUDA block shapes, square and one-row, per variant.
    Blocks,
    /// Frame sizes at a 3×3 kernel, then kernel sizes at one resolution.
    Resolution,
    /// Large full kernels on the global, shared and fast variants.
    BigKernels,
    /// Upload + kernels + download from pageable against page-locked memory.
    Pinned,
    /// Sustained fps through the whole pipeline: overlapped, synchronous and host schedules.
    Pipeline,
}

impl Experiment {
    /// Every experiment, in run order.
    pub const ALL: &'static [Experiment] = <Self as strum::VariantArray>::VARIANTS;

    /// The kebab-case name `convflow bench` takes (`big-kernels`).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What a row times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Timed {
    /// Device kernels only (CUDA events).
    Kernel,
    /// A CPU backend's filter_frame (wall clock).
    Compute,
    /// Upload + kernels + download on one stream (wall clock, device split from events).
    Total,
    /// The pipeline with transfers on their own streams.
    Overlap,
    /// The pipeline with the synchronous loop (`--sync`).
    Sync,
    /// The pipeline of a host backend.
    Host,
}

/// The host memory a row's copies used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Memory {
    /// Page-locked host buffers.
    Pinned,
    /// Ordinary (pageable) host memory.
    Pageable,
    /// No copies (CPU rows, kernel-only rows).
    #[serde(rename = "-")]
    #[strum(serialize = "-")]
    None,
}

/// One measured point. Times are per frame.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The experiment the point belongs to.
    pub experiment: Experiment,
    /// The backend measured.
    pub backend: BackendKind,
    /// CUDA variant, "-" for CPU backends.
    pub variant: String,
    /// cpu-par worker threads (1 for cpu-seq, 0 for cuda).
    pub threads: usize,
    /// CUDA block shape, or "default".
    pub block: String,
    /// What the time covers.
    pub measure: Timed,
    /// The host memory the copies used.
    pub memory: Memory,
    /// How the time was taken.
    pub clock: Clock,
    /// The size as given (`1080p`, `WxH`).
    pub size: String,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Pixel format of the frames.
    pub format: PixelFormat,
    /// The kernel family (`gaussian`, `log`).
    pub kernel: String,
    /// "full" or "separable".
    pub path: String,
    /// Kernel side: a k×k kernel.
    pub k: usize,
    /// Timed runs taken.
    pub runs: usize,
    /// Median time per frame, µs.
    pub median_us: f64,
    /// Fastest run, µs per frame.
    pub min_us: f64,
    /// Slowest run, µs per frame.
    pub max_us: f64,
    /// Device split of a total: upload, kernels, download (µs per frame).
    pub upload_us: Option<f64>,
    /// Kernel part of the device split, µs per frame.
    pub kernel_us: Option<f64>,
    /// Download part of the device split, µs per frame.
    pub download_us: Option<f64>,
    /// Megapixels per second at the median.
    pub mpix_per_s: f64,
    /// Frames per second at the median.
    pub fps: f64,
    /// cpu-seq's median on the same size, format and kernel over this row's.
    pub speedup_vs_cpu_seq: Option<f64>,
    /// The widest cpu-par's median over this row's (for the threads experiment: cpu-par on
    /// one thread's); not set on other cpu-par rows.
    pub speedup_vs_cpu_par: Option<f64>,
    /// Parallel efficiency (threads experiment): speedup over 1 thread / threads.
    pub efficiency: Option<f64>,
}

impl Row {
    /// A row for `experiment` on a frame of `size` (`width × height`); the caller fills the
    /// measurement and calls [`Row::with_times`].
    pub fn new(
        experiment: Experiment,
        size: &str,
        (width, height): (usize, usize),
        format: PixelFormat,
    ) -> Row {
        Row {
            experiment,
            backend: BackendKind::CpuSeq,
            variant: "-".into(),
            threads: 0,
            block: "default".into(),
            measure: Timed::Compute,
            memory: Memory::None,
            clock: Clock::Wall,
            size: size.to_string(),
            width,
            height,
            format,
            kernel: String::new(),
            path: String::new(),
            k: 0,
            runs: 0,
            median_us: 0.0,
            min_us: 0.0,
            max_us: 0.0,
            upload_us: None,
            kernel_us: None,
            download_us: None,
            mpix_per_s: 0.0,
            fps: 0.0,
            speedup_vs_cpu_seq: None,
            speedup_vs_cpu_par: None,
            efficiency: None,
        }
    }

    /// Sets the times (µs per frame) and what follows from them.
    pub fn with_times(mut self, runs: usize, median_us: f64, min_us: f64, max_us: f64) -> Row {
        self.runs = runs;
        self.median_us = median_us;
        self.min_us = min_us;
        self.max_us = max_us;
        self.mpix_per_s = (self.width * self.height) as f64 / median_us.max(1e-9);
        self.fps = 1e6 / median_us.max(1e-9);
        self
    }

    /// The device split (µs per frame), if measured.
    pub fn split(&self) -> Option<(f64, f64, f64)> {
        Some((self.upload_us?, self.kernel_us?, self.download_us?))
    }

    /// `cuda VARIANT`, `cpu-par Nt` or `cpu-seq`: the series name in charts.
    pub fn label(&self) -> String {
        match self.backend {
            BackendKind::Cuda => format!("cuda {}", self.variant),
            BackendKind::CpuPar => format!("cpu-par {}t", self.threads),
            b => b.name().to_string(),
        }
    }
}

/// Header and separator lines of the markdown table whose rows [`table_row`] writes.
pub const TABLE_HEADER: &str =
    "| backend | threads | block | measure | memory | size | format | kernel | path | k \
| runs | median µs | min µs | max µs | MPix/s | × cpu-seq | × cpu-par | efficiency |\n\
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// One markdown table row.
pub fn table_row(r: &Row) -> String {
    let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let name = match r.backend {
        BackendKind::Cuda => format!("cuda {}", r.variant),
        b => b.name().to_string(),
    };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | \
        {:.1} | {} | {} | {} |",
        r.threads,
        r.block,
        <&str>::from(r.measure),
        <&str>::from(r.memory),
        r.size,
        r.format,
        r.kernel,
        r.path,
        r.k,
        r.runs,
        r.median_us,
        r.min_us,
        r.max_us,
        r.mpix_per_s,
        x(r.speedup_vs_cpu_seq),
        x(r.speedup_vs_cpu_par),
        x(r.efficiency)
    )
}

/// The methodology paragraph printed with every run.
pub const METHOD: &str =
    "Method: random 8-bit frames; warm-up passes, then the median of N timed passes (min and max \
kept; the mean of the two middle values for an even N) within a per-point time budget (at \
least one pass). cuda 'kernel' rows: CUDA events around the kernels only (frame uploaded \
once); 'total' rows: wall clock around upload + kernels + download, with the device split \
from events; CPU rows: wall clock. cpu-seq on large frames is sampled (a strip of rows timed \
and scaled by the row count; clock 'wall-sampled'). Pipeline rows: sustained time per frame \
after the warm-up through synthetic source -> null sink.";

/// The machine and build a run was made on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// When the run started, RFC 3339 to the second, UTC.
    pub date_utc: String,
    /// convflow's version.
    pub convflow: String,
    /// The git revision convflow was built from.
    pub git_revision: String,
    /// The command line, arguments joined by spaces.
    pub command: String,
    /// CPU model name from /proc/cpuinfo ("unknown" if unread).
    pub cpu: String,
    /// Logical CPUs available to the process.
    pub logical_cpus: usize,
    /// The instruction set cpu-par's loops ran with (`avx2+fma`, `baseline`).
    pub cpu_par: String,
    /// The GPU measured, or why there was none.
    pub gpu: String,
    /// "CUDA major.minor", or "none (why)".
    pub driver: String,
}

impl Meta {
    /// Collects the metadata now; `gpu` names the device measured (or why none was).
    pub fn collect(gpu: String) -> Meta {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let info = crate::backend::build_info();
        Meta {
            date_utc: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            convflow: env!("CARGO_PKG_VERSION").into(),
            git_revision: env!("CONVFLOW_GIT_REV").into(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            cpu,
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_par: info.simd.into(),
            gpu,
            driver: info
                .driver
                .map_or_else(|e| format!("none ({e})"), |v| format!("CUDA {v}")),
        }
    }
}

/// A whole run as `--json` writes it (and `bench plot --from` reads it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteRun {
    /// The machine and build.
    pub meta: Meta,
    /// The methodology paragraph ([`METHOD`]).
    pub method: String,
    /// The experiments run, in order.
    pub experiments: Vec<Experiment>,
    /// Every measured point.
    pub rows: Vec<Row>,
    /// Points left out, with why.
    pub skipped: Vec<String>,
    /// Paths of the chart files written.
    pub charts: Vec<String>,
}
