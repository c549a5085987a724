//! The arguments of `convflow bench` (clap derive): which backends, variants, sizes, formats
//! and kernels each benchmark measures, and how many runs. What they measure is in
//! `convflow::bench`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use convflow::backend::{parse_block, BackendKind, Devices};
use convflow::bench::kernels::Family;
use convflow::bench::pipeline::Copies;
use convflow::filter::{AlphaMode, Mode};
use convflow::frame::PixelFormat;
use convflow::Border;

use super::{choice, measured_variants, variant, VariantArg};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Filter-only time per backend × size × format × kernel size × path (gaussian:k).
    Kernels(BenchKernelsArgs),
    /// Sustained fps through the whole pipeline (synthetic frames → null), overlapped vs --sync,
    /// next to the measured host↔device bandwidth.
    Pipeline(BenchPipelineArgs),
    /// Separable vs non-separable (Gaussian vs LoG), k = 3…15, three sizes: cpu-seq, then every
    /// parallel backend and GPU variant with speedups.
    Separable(SuiteArgs),
    /// cpu-par scaling over 1, 2, 4, … threads up to the core count and twice it.
    Threads(SuiteArgs),
    /// Every CUDA memory variant × kernel size × resolution, kernel-only and with transfers
    /// (pinned and pageable), against cpu-seq and cpu-par.
    Memory(SuiteArgs),
    /// Block-shape sweep (2D 8…32, 1D 32…1024) per CUDA variant.
    Blocks(SuiteArgs),
    /// VGA … 10K with a 3×3 Gaussian, and kernels 1…32 at FHD.
    Resolution(SuiteArgs),
    /// Kernels 7, 13, 19, 25 on 4000×2000 … 8000×6000.
    #[command(name = "big-kernels")]
    BigKernels(SuiteArgs),
    /// Pageable vs page-locked host memory for the copies.
    Pinned(SuiteArgs),
    /// Every experiment above plus the pipeline one, within a time budget.
    All(SuiteArgs),
    /// Draw the charts of a saved run (`--json` output), e.g. one made on a host without fonts.
    Plot {
        /// The run's JSON file.
        #[arg(long)]
        from: PathBuf,
        /// Directory for the charts.
        #[arg(long)]
        plot: PathBuf,
    },
}

/// The experiments' arguments (`bench separable`, `threads`, `memory`, …, `all`).
#[derive(Args)]
pub struct SuiteArgs {
    /// Parallel backends to compare with cpu-seq (cuda rows are left out without a GPU).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpu-par,cuda",
        value_parser = choice::<BackendKind>(),
    )]
    pub backend: Vec<BackendKind>,
    /// A small version of every grid (seconds, not minutes): what CI runs.
    #[arg(long)]
    pub quick: bool,
    /// Time budget in seconds for the whole run (split evenly over the experiments).
    #[arg(long, default_value_t = 480.0)]
    pub budget: f64,
    /// Timed passes per point (default 5; 2 with --quick, their median is their mean).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Untimed passes first (default 1; 0 with --quick).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// cpu-par threads outside the threads experiment (0 = one per logical CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// CUDA device ordinal (`convflow info` lists them).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Write every row as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Write metadata, method, every row and the chart list as JSON.
    #[arg(long, value_name = "FILE.json")]
    pub json: Option<PathBuf>,
    /// Draw the charts (SVG, and PNG where a font is available) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// `convflow bench pipeline`'s arguments.
#[derive(Args)]
pub struct BenchPipelineArgs {
    /// Backends: cuda runs once per --schedules entry; cpu-seq and cpu-par run once.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cuda",
        value_parser = choice::<BackendKind>(),
    )]
    pub backend: Vec<BackendKind>,
    /// CUDA schedules: overlap (pinned buffers, copies on their own streams), sync (pageable
    /// memory, copies and kernels on one stream), pinned-sync (pinned staging, one stream).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "overlap,sync",
        value_parser = choice::<Copies>(),
    )]
    pub schedules: Vec<Copies>,
    /// A small run in seconds: 720p gray and RGB, k = 3, 120 frames, 3 runs (options given
    /// explicitly still win).
    #[arg(long)]
    pub quick: bool,
    /// cpu-par worker threads (0 = one per logical CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// CUDA variant of the filter stage (auto: the fastest for each point).
    #[arg(long, default_value = "auto", value_parser = variant())]
    pub variant: VariantArg,
    /// CUDA device ordinal (`convflow info` lists them).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// CUDA: scaling over several GPUs, `all` or ordinals (`0,1,2`): the overlap schedule runs
    /// on the first 1, 2, … of them, each row with its speedup over one GPU.
    #[arg(long, value_name = "LIST|all", value_parser = Devices::parse, conflicts_with = "device")]
    pub devices: Option<Devices>,
    /// Frame sizes, comma-separated: vga, 720p, 1080p, 1440p, 4k, 8k, 10k or WxH.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1080p,4k",
        default_value_if("quick", "true", Some("720p"))
    )]
    pub sizes: Vec<String>,
    /// Pixel formats (gray, rgb, rgba, yuv420p, nv12, and deeper ones: gray16, rgb48,
    /// yuv420p10, p010, …)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "gray,rgb",
        value_parser = PixelFormat::parse,
    )]
    pub formats: Vec<PixelFormat>,
    /// Kernel sizes k of the gaussian:k filter, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "3,15",
        default_value_if("quick", "true", Some("3"))
    )]
    pub ks: Vec<usize>,
    /// Frames per run (the first 4·inflight+4 are warm-up).
    #[arg(
        long,
        default_value = "600",
        default_value_if("quick", "true", Some("120"))
    )]
    pub frames: usize,
    /// Runs per point (the median is reported with min and max).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Frame buffers per pool and frames queued between stages (as `filter --inflight`)
    /// [default: 3, more for frames under 5.3 MiB, as `filter`].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub inflight: Option<u64>,
    /// Also write every point as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
}

/// `convflow bench kernels`'s arguments.
#[derive(Args)]
pub struct BenchKernelsArgs {
    /// Backends to measure, comma-separated: cpu-seq, cpu-par, cuda (one row per CUDA variant).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpu-par",
        value_parser = choice::<BackendKind>(),
    )]
    pub backend: Vec<BackendKind>,
    /// A small grid in seconds: VGA gray and RGB, k = 3 and 5, 5 runs after 1 warm-up
    /// (options given explicitly still win).
    #[arg(long)]
    pub quick: bool,
    /// cpu-par worker threads (0 = one per logical CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// CUDA variants to measure (each a separate row; default: every variant but auto).
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = variant(),
        default_values_t = measured_variants(),
    )]
    pub variants: Vec<VariantArg>,
    /// CUDA block shape WxH.
    #[arg(long, value_parser = parse_block)]
    pub block: Option<(u32, u32)>,
    /// CUDA device ordinal (`convflow info` lists them).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Frame sizes, comma-separated: vga, 720p, 1080p, 1440p, 4k, 8k, 10k or WxH.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1080p,4k",
        default_value_if("quick", "true", Some("vga"))
    )]
    pub sizes: Vec<String>,
    /// Pixel formats (gray, rgb, rgba, yuv420p, nv12, and deeper ones: gray16, rgb48,
    /// yuv420p10, p010, …)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "gray,rgb",
        value_parser = PixelFormat::parse,
    )]
    pub formats: Vec<PixelFormat>,
    /// Kernel sizes k, comma-separated (each measured as --family:k).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "3,5,7,9,15,25",
        default_value_if("quick", "true", Some("3,5"))
    )]
    pub ks: Vec<usize>,
    /// Kernel measured at each size k: `gaussian:k` (default σ), `box:k`, `binomial:k`, or
    /// `log:k` (not separable, float weights: full plans only).
    #[arg(long, default_value = "gaussian", value_parser = choice::<Family>())]
    pub family: Family,
    /// Decompositions, comma-separated: full (every tap) and/or separable (row then column).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "full,separable",
        value_parser = choice::<Mode>(),
    )]
    pub modes: Vec<Mode>,
    /// Border mode of the measured filter.
    #[arg(long, default_value = "clamp", value_parser = choice::<Border>())]
    pub border: Border,
    /// Alpha channel of RGBA formats: keep (passed through, not computed) or filter (as the
    /// colour channels), as `filter --alpha`.
    #[arg(long, default_value = "keep", value_parser = choice::<AlphaMode>())]
    pub alpha: AlphaMode,
    /// Untimed runs per point before the timed ones.
    #[arg(
        long,
        default_value = "2",
        default_value_if("quick", "true", Some("1"))
    )]
    pub warmup: usize,
    /// Timed runs per point (the median is reported with min and max).
    #[arg(
        long,
        default_value = "20",
        default_value_if("quick", "true", Some("5"))
    )]
    pub runs: usize,
    /// Seconds of timed runs per point at most (at least one run is always made).
    #[arg(
        long,
        default_value = "10",
        default_value_if("quick", "true", Some("1"))
    )]
    pub budget: f64,
    /// Also write every point as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
}
