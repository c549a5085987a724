//! The `convflow` command line: parses arguments into a validated configuration, builds the
//! filter, backend, source and sink from it, runs, and reports. Errors from the library layers
//! arrive here as typed errors; this is the only place that uses `anyhow` and maps failures to
//! exit codes (1 for a failed run, 2 for bad usage from clap; a closed stdout is not an error).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use convflow::backend::{self, cpu_par, parse_block, BackendKind, Schedule};
use convflow::bench::{self, KernelBench};
use convflow::filter::{library, spec, AlphaMode, Filter, Kernel, Mode, PlaneSel};
use convflow::frame::PixelFormat;
use convflow::{io, pipeline, Border};

const FILTER_EXAMPLES: &str = "\
Examples:
  convflow filter samples/testsrc2.png -o blurred.png --kernel gaussian:9
  convflow filter frames/ -o out/ --kernel sobel-x --abs --backend cpu-par --threads 4
  convflow filter photo.jpg -o edges.png --kernel-file my_kernel.txt --border reflect
  convflow filter photo.png -o sharp.png --kernel unsharp:5:1.5:0.8 --check
  ffmpeg -i clip.mp4 -f yuv4mpegpipe - | convflow filter - -o - --kernel gaussian:5 | ffplay -";

#[derive(Parser)]
#[command(
    name = "convflow",
    version,
    about = "2D convolution of video and image frames on GPUs and CPUs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Filter an image file or a directory of frames.
    #[command(after_help = FILTER_EXAMPLES)]
    Filter(FilterArgs),
    /// List the kernel library, or print the weights of one kernel.
    #[command(
        after_help = "Examples:\n  convflow kernels\n  convflow kernels gaussian:5\n  convflow kernels --kernel-file k.txt"
    )]
    Kernels {
        /// Kernel spec to print, e.g. gaussian:7:1.5.
        spec: Option<String>,
        /// Print a kernel file instead.
        #[arg(long, conflicts_with = "spec")]
        kernel_file: Option<PathBuf>,
    },
    /// Show the backends this build has and what they would run on.
    Info,
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Args)]
struct KernelChoice {
    /// Kernel spec, e.g. gaussian:9, box:5x3, sobel-x, custom:3x3:0,1,0,1,-4,1,0,1,0
    /// (`convflow kernels` lists the grammar).
    #[arg(short, long, value_name = "SPEC", required_unless_present_any = ["kernel_file", "passthrough"])]
    kernel: Option<String>,
    /// Kernel file: rows of numbers, optional `divisor D` and `offset O` lines, `#` comments.
    #[arg(long, value_name = "PATH", conflicts_with = "kernel")]
    kernel_file: Option<PathBuf>,
}

impl KernelChoice {
    fn load(&self) -> Result<Kernel> {
        Ok(match (&self.kernel, &self.kernel_file) {
            (_, Some(path)) => spec::parse_kernel_file(path)?,
            (Some(s), None) => spec::parse_spec(s)?,
            (None, None) => bail!("no kernel given (use --kernel SPEC or --kernel-file PATH)"),
        })
    }
}

#[derive(Args)]
struct FilterArgs {
    /// Input: an image file, a directory of frames, a .y4m file, - for y4m on stdin, or
    /// synthetic:WIDTHxHEIGHT:FORMAT:FRAMES (generated frames, FORMAT gray, rgb, rgba,
    /// yuv420p, yuv422p, yuv444p or nv12).
    input: PathBuf,
    /// Output: an image file (format from its extension), a directory, a .y4m file, - for y4m
    /// on stdout (y4m inputs give y4m outputs), or null to discard the frames.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    kernel: KernelChoice,
    /// Border mode: clamp (replicate), zero, reflect (reflect-101) or wrap.
    #[arg(long, default_value = "clamp")]
    border: Border,
    /// auto (cuda if a GPU is usable, else cpu-par), cpu-seq, cpu-par or cuda.
    #[arg(long, default_value = "auto")]
    backend: BackendKind,
    /// auto (separable when the kernel is rank 1), full or separable.
    #[arg(long, default_value = "auto")]
    mode: Mode,
    /// Worker threads for cpu-par (0 = one per logical CPU).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    gpu: GpuArgs,
    /// Planes of YUV frames to filter: luma or all.
    #[arg(long, default_value = "all")]
    planes: PlaneSel,
    /// Alpha channel: keep (pass through) or filter.
    #[arg(long, default_value = "keep")]
    alpha: AlphaMode,
    /// Output |sum + offset| (for edge and derivative kernels).
    #[arg(long)]
    abs: bool,
    /// Also run cpu-seq on every frame and fail on any differing byte.
    #[arg(long)]
    check: bool,
    /// Also write the run report as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,
    /// Frame buffers per pipeline pool and frames queued between stages (read → upload →
    /// filter → download → write): the depth of the overlap.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    inflight: u64,
    /// Copy frames from the input to the output without filtering (to measure decode + encode
    /// alone; no kernel needed).
    #[arg(long, conflicts_with = "check")]
    passthrough: bool,
    /// Skip frames the input reports as corrupt or truncated (counted in the report) instead of
    /// failing.
    #[arg(long)]
    skip_bad: bool,
    #[command(flatten)]
    video: VideoArgs,
    /// Print nothing on success (no report, no progress bar).
    #[arg(short, long)]
    quiet: bool,
}

/// Video output options.
#[derive(Args, Clone)]
struct VideoArgs {
    /// Encoder for video outputs, e.g. libx264, ffv1, mpeg4 (default: libx264 when this FFmpeg
    /// has it, else mpeg4).
    #[arg(long)]
    codec: Option<String>,
    /// Encoder option KEY=VALUE (repeatable), e.g. --codec-opt crf=18, --codec-opt qp=0 for
    /// lossless x264, --codec-opt preset=veryfast.
    #[arg(long = "codec-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    codec_opts: Vec<(String, String)>,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}': expected KEY=VALUE")),
    }
}

/// CUDA schedule options.
#[derive(Args, Clone)]
struct GpuArgs {
    /// CUDA memory variant: auto, global, constant, shared, shared-constant, texture,
    /// separable-global, separable-shared or fast.
    #[arg(long, default_value = "auto")]
    variant: String,
    /// CUDA block shape WxH (default 32x8; `fast` shrinks it to fit shared memory).
    #[arg(long, value_parser = parse_block)]
    block: Option<(u32, u32)>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// CUDA: keep frames in pageable (ordinary) host memory instead of page-locked buffers.
    #[arg(long)]
    pageable: bool,
    /// CUDA: the classic loop for comparison: pageable memory, synchronous copies and kernels
    /// on one stream inside the filter stage (no upload/download stages, no overlap).
    #[arg(long)]
    sync: bool,
}

impl GpuArgs {
    fn schedule(&self, threads: usize, variant: &str) -> Result<Schedule> {
        #[cfg(feature = "cuda")]
        let v: convflow::backend::cuda::Variant = variant.parse().map_err(anyhow::Error::msg)?;
        #[cfg(not(feature = "cuda"))]
        if variant != "auto" {
            bail!("--variant {variant}: this convflow was built without the 'cuda' feature");
        }
        Ok(Schedule {
            threads,
            #[cfg(feature = "cuda")]
            variant: v,
            block: self.block,
            device: self.device,
            // --sync is the classic loop: pageable memory too.
            pageable: self.pageable || self.sync,
            sync: self.sync,
        })
    }
}

#[derive(Subcommand)]
enum BenchCommand {
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

#[derive(Args)]
struct SuiteArgs {
    /// Parallel backends to compare with cpu-seq (cuda rows are left out without a GPU).
    #[arg(long, value_delimiter = ',', default_value = "cpu-par,cuda")]
    backend: Vec<BackendKind>,
    /// A small version of every grid (seconds, not minutes): what CI runs.
    #[arg(long)]
    quick: bool,
    /// Time budget in seconds for the whole run (split evenly over the experiments).
    #[arg(long, default_value_t = 480.0)]
    budget: f64,
    /// Timed passes per point (default 5; 2 with --quick).
    #[arg(long)]
    runs: Option<usize>,
    /// Untimed passes first (default 1; 0 with --quick).
    #[arg(long)]
    warmup: Option<usize>,
    /// cpu-par threads outside the threads experiment (0 = one per logical CPU).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Write every row as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write metadata, method, every row and the chart list as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the charts (SVG, and PNG where a font is available) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(Args)]
struct BenchPipelineArgs {
    /// Backends: cuda runs once per --schedules entry; cpu-seq and cpu-par run once.
    #[arg(long, value_delimiter = ',', default_value = "cuda")]
    backend: Vec<BackendKind>,
    /// CUDA schedules: overlap (pinned buffers, copies on their own streams), sync (pageable
    /// memory, copies and kernels on one stream), pinned-sync (pinned staging, one stream).
    #[arg(long, value_delimiter = ',', default_value = "overlap,sync")]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value = "auto")]
    variant: String,
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long, value_delimiter = ',', default_value = "1080p,4k")]
    sizes: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "gray,rgb")]
    formats: Vec<PixelFormat>,
    #[arg(long, value_delimiter = ',', default_value = "3,15")]
    ks: Vec<usize>,
    /// Frames per run (the first 4·inflight+4 are warm-up).
    #[arg(long, default_value_t = 600)]
    frames: usize,
    /// Runs per point (median reported with min and max).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[arg(long, default_value_t = 3)]
    inflight: usize,
    /// Also write every point as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
}

#[derive(Args)]
struct BenchKernelsArgs {
    #[arg(long, value_delimiter = ',', default_value = "cpu-par")]
    backend: Vec<BackendKind>,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// CUDA variants to measure (each a separate row).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "global,constant,shared,shared-constant,texture,separable-global,separable-shared,fast"
    )]
    variants: Vec<String>,
    /// CUDA block shape WxH.
    #[arg(long, value_parser = parse_block)]
    block: Option<(u32, u32)>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long, value_delimiter = ',', default_value = "1080p,4k")]
    sizes: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "gray,rgb")]
    formats: Vec<PixelFormat>,
    #[arg(long, value_delimiter = ',', default_value = "3,5,7,9,15,25")]
    ks: Vec<usize>,
    #[arg(long, value_delimiter = ',', default_value = "full,separable")]
    modes: Vec<Mode>,
    #[arg(long, default_value = "clamp")]
    border: Border,
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Seconds of timed runs per point at most (at least one run is always made).
    #[arg(long, default_value_t = 10.0)]
    budget: f64,
    /// Also write every point as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if STOP.load(Ordering::SeqCst) => {
            eprintln!("convflow: {e:#}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("convflow: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<io::IoError>(), Some(io::IoError::ClosedPipe))
            || matches!(
                c.downcast_ref::<pipeline::PipelineError>(),
                Some(pipeline::PipelineError::Io(io::IoError::ClosedPipe))
            )
    })
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Filter(args) => filter(args),
        Command::Kernels { spec, kernel_file } => kernels(spec.as_deref(), kernel_file.as_deref()),
        Command::Info => info(),
        Command::Bench {
            which: BenchCommand::Kernels(args),
        } => bench_kernels(args),
        Command::Bench {
            which: BenchCommand::Pipeline(args),
        } => bench_pipeline(args),
        Command::Bench {
            which: BenchCommand::Plot { from, plot },
        } => bench_plot(&from, &plot),
        Command::Bench { which } => {
            let (name, args) = match which {
                BenchCommand::Separable(a) => ("separable", a),
                BenchCommand::Threads(a) => ("threads", a),
                BenchCommand::Memory(a) => ("memory", a),
                BenchCommand::Blocks(a) => ("blocks", a),
                BenchCommand::Resolution(a) => ("resolution", a),
                BenchCommand::BigKernels(a) => ("big-kernels", a),
                BenchCommand::Pinned(a) => ("pinned", a),
                BenchCommand::All(a) => ("all", a),
                BenchCommand::Kernels(_) | BenchCommand::Pipeline(_) | BenchCommand::Plot { .. } => {
                    unreachable!("handled above")
                }
            };
            bench_suite(name, args)
        }
    }
}

fn filter(a: FilterArgs) -> Result<()> {
    install_interrupt_handler();
    let kernel = if a.passthrough && a.kernel.kernel.is_none() && a.kernel.kernel_file.is_none() {
        spec::parse_spec("box:1")?
    } else {
        a.kernel.load()?
    };
    let filter = Filter {
        kernel,
        border: a.border,
        mode: a.mode,
        abs: a.abs,
        planes: a.planes,
        alpha: a.alpha,
    };
    filter.plan()?; // kernel and mode errors first, before any device is opened
    let schedule = a.gpu.schedule(a.threads, &a.gpu.variant)?;
    let mut backend = backend::create(a.backend, &schedule).with_context(|| format!("backend {}", a.backend))?;
    let plan = filter.plan_for(backend.support())?;
    let mut check = if a.check {
        Some(backend::create(BackendKind::CpuSeq, &schedule)?)
    } else {
        None
    };

    let mut source = io::open_source(&a.input)?;
    let stream = source.stream_info();
    // A report that could not be written would fail the run after the output is complete:
    // check its directory before any work.
    check_output_dirs("report", [&a.report])?;
    let many = a.input.is_dir() || io::synthetic::is_synthetic(&a.input);
    let video = io::VideoOptions {
        codec: a.video.codec.clone(),
        codec_opts: a.video.codec_opts.clone(),
    };
    let sink = io::open_sink(&a.output, &a.input, many, stream.as_ref(), &video)?;
    let sink_name = sink.describe();
    let bar = (!a.quiet).then(|| progress_bar(source.len_hint())).flatten();
    let tick = |n: usize| {
        if let Some(b) = &bar {
            b.set_position(n as u64);
        }
    };
    let mut opts = pipeline::Options::new(a.inflight as usize, &STOP);
    opts.check = check.as_mut().map(|b| b.as_mut() as &mut dyn convflow::Backend);
    opts.skip_bad = a.skip_bad;
    opts.passthrough = a.passthrough;
    opts.progress = Some(&tick);
    let stats = pipeline::run(source.as_mut(), sink, backend.as_mut(), &plan, opts);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let stats = stats.with_context(|| format!("filtering {}", source.describe()))?;
    if !a.quiet {
        let what = if a.passthrough {
            "passthrough (no filter)".to_string()
        } else {
            format!(
                "{} {} {}x{} border={} | {}",
                plan.kernel.name,
                plan.decomposition,
                plan.kernel.width(),
                plan.kernel.height(),
                plan.border,
                backend.name()
            )
        };
        report(&stats, &a.input, &sink_name, &what);
    }
    if let Some(path) = &a.report {
        let mut json = stats.to_json();
        json["input"] = a.input.display().to_string().into();
        json["output"] = sink_name.clone().into();
        json["backend"] = backend.name().into();
        json["kernel"] = plan.kernel.name.clone().into();
        json["decomposition"] = plan.decomposition.to_string().into();
        json["border"] = plan.border.name().into();
        json["inflight"] = a.inflight.into();
        let text = serde_json::to_string_pretty(&json).expect("JSON values serialize");
        std::fs::write(path, text + "\n").with_context(|| format!("writing report {}", path.display()))?;
    }
    if stats.interrupted {
        bail!(
            "interrupted: stopped reading after {} frame(s); all of them were written to {sink_name}",
            stats.frames
        );
    }
    Ok(())
}

/// A progress bar on stderr with fps and ETA, only when stderr is a terminal.
fn progress_bar(len: Option<usize>) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (bar, template) = match len {
        Some(n) => (
            indicatif::ProgressBar::new(n as u64),
            "{bar:40} {pos}/{len} frames  {per_sec}  ETA {eta}",
        ),
        None => (
            indicatif::ProgressBar::no_length(),
            "{pos} frames  {per_sec}  {elapsed}",
        ),
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
    Some(bar)
}

/// Raised by the first Ctrl-C: the pipeline stops reading, drains and finalizes the output.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, and _exit on a second Ctrl-C.
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe; the user asked twice to stop now.
        unsafe { libc::_exit(130) };
    }
}

fn install_interrupt_handler() {
    // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe.
    unsafe { libc::signal(libc::SIGINT, on_interrupt as *const () as libc::sighandler_t) };
}

/// The end-of-run report on stderr: one line per stage, then totals and latency.
fn report(stats: &pipeline::RunStats, input: &Path, sink: &str, what: &str) {
    let wall = stats.wall.as_secs_f64().max(1e-9);
    eprintln!(
        "convflow: {} frame(s) {} -> {} | {what}{}",
        stats.frames,
        input.display(),
        sink,
        if stats.checked {
            " | --check: identical to cpu-seq"
        } else {
            ""
        }
    );
    if stats.skipped > 0 {
        eprintln!("  skipped {} bad frame(s) (--skip-bad):", stats.skipped);
        for m in &stats.skip_messages {
            eprintln!("    {m}");
        }
    }
    if stats.frames == 0 {
        return;
    }
    eprintln!("  stage     frames   busy ms      fps     MB/s  util  frame µs p50/p99/max");
    for s in &stats.stages {
        let busy = s.busy.as_secs_f64();
        let h = &s.per_frame;
        eprintln!(
            "  {:<8} {:>7} {:>9.1} {:>8.1} {:>8.1} {:>4.0}%  {}/{}/{}",
            s.name,
            s.frames,
            busy * 1e3,
            s.frames as f64 / busy.max(1e-9),
            s.bytes as f64 / busy.max(1e-9) / 1e6,
            100.0 * busy / wall,
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.max()
        );
    }
    if let Some(d) = stats.device {
        let n = stats.frames as f64;
        let us = |t: Duration| t.as_secs_f64() * 1e6 / n;
        let total = (d.h2d + d.kernel + d.d2h).as_secs_f64().max(1e-12);
        eprintln!(
            "  device time per frame ({}): upload {:.1} µs, kernels {:.1} µs, download {:.1} µs; transfers {:.0}% / kernels {:.0}%",
            if stats.overlapped { "overlapped on separate streams" } else { "one stream, no overlap" },
            us(d.h2d),
            us(d.kernel),
            us(d.d2h),
            100.0 * (d.h2d + d.d2h).as_secs_f64() / total,
            100.0 * d.kernel.as_secs_f64() / total
        );
    }
    let l = &stats.latency;
    if let Some(fps) = stats.steady_fps() {
        eprintln!("  sustained after warm-up: {fps:.1} fps");
    }
    eprintln!(
        "  end to end: {:.1} ms, {:.1} fps ({:.1} MPix/s); overlap {:.2} (stage busy / wall); latency µs p50 {} p90 {} p99 {} max {}; bottleneck: {}",
        wall * 1e3,
        stats.frames as f64 / wall,
        stats.megapixels / wall,
        stats.overlap(),
        l.value_at_quantile(0.5),
        l.value_at_quantile(0.9),
        l.value_at_quantile(0.99),
        l.max(),
        stats.bottleneck().name
    );
}

fn kernels(spec_text: Option<&str>, file: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let kernel = match (spec_text, file) {
        (Some(s), _) => spec::parse_spec(s)?,
        (None, Some(f)) => spec::parse_kernel_file(f)?,
        (None, None) => {
            writeln!(
                out,
                "Kernel specs (sizes N or WxH; anchor at (W/2, H/2); numbers may be fractions):"
            )?;
            for (form, what) in library::CATALOGUE {
                writeln!(out, "  {form:<42} {what}")?;
            }
            writeln!(
                out,
                "\nKernel files: rows of numbers (blank or comma separated), optional 'divisor D' and"
            )?;
            writeln!(
                out,
                "'offset O' lines, '#' comments. Run 'convflow kernels SPEC' to print the weights."
            )?;
            return Ok(());
        }
    };
    let (ax, ay) = kernel.anchor();
    writeln!(
        out,
        "{}: {}x{}, anchor ({ax}, {ay}), offset {}, sum {:.9}",
        kernel.name,
        kernel.width(),
        kernel.height(),
        kernel.offset(),
        kernel.sum()
    )?;
    for row in kernel.weights().chunks(kernel.width()) {
        let cells: Vec<String> = row.iter().map(|w| format!("{w:>12.8}")).collect();
        writeln!(out, "  {}", cells.join(" "))?;
    }
    match kernel.factors() {
        Some((col, row)) => {
            writeln!(out, "separable (rank 1):")?;
            writeln!(out, "  column {:?}", col)?;
            writeln!(out, "  row    {:?}", row)?;
        }
        None => writeln!(out, "not separable")?,
    }
    Ok(())
}

fn info() -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "convflow {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "logical CPUs: {}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    )?;
    writeln!(out, "backends:")?;
    writeln!(out, "  cpu-seq  sequential reference")?;
    writeln!(
        out,
        "  cpu-par  rayon row bands, default {} threads, {}",
        rayon::current_num_threads(),
        cpu_par::simd_level()
    )?;
    match backend::create(BackendKind::Cuda, &Schedule::default()) {
        Ok(b) => writeln!(out, "  cuda     {}", b.name())?,
        Err(e) => writeln!(out, "  cuda     unavailable: {e}")?,
    }
    #[cfg(feature = "cuda")]
    {
        let names: Vec<_> = convflow::backend::cuda::Variant::ALL.iter().map(|v| v.name()).collect();
        writeln!(out, "cuda variants: {}", names.join(", "))?;
    }
    writeln!(
        out,
        "default (--backend auto): {}",
        backend::create(BackendKind::Auto, &Schedule::default())?.name()
    )?;
    Ok(())
}

fn bench_kernels(a: BenchKernelsArgs) -> Result<()> {
    check_output_dirs("csv", [&a.csv])?;
    for s in &a.sizes {
        bench::parse_size(s)?;
    }
    if a.ks.contains(&0) {
        bail!("kernel size 0 in --ks");
    }
    let gpu = GpuArgs {
        variant: "auto".into(),
        block: a.block,
        device: a.device,
        pageable: false,
        sync: false,
    };
    let mut backends = Vec::new();
    for kind in &a.backend {
        if *kind == BackendKind::Cuda {
            for v in &a.variants {
                backends.push((*kind, gpu.schedule(a.threads, v)?));
            }
        } else {
            backends.push((*kind, gpu.schedule(a.threads, "auto")?));
        }
    }
    let cfg = KernelBench {
        backends,
        sizes: a.sizes,
        formats: a.formats,
        ks: a.ks,
        modes: a.modes,
        border: a.border,
        warmup: a.warmup,
        runs: a.runs,
        budget: Duration::from_secs_f64(a.budget.max(0.0)),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", bench::TABLE_HEADER)?;
    let mut write_err = None;
    let samples = bench::run_kernels(&cfg, |s| {
        if let Err(e) = writeln!(out, "{}", bench::table_row(s)).and_then(|()| out.flush()) {
            write_err.get_or_insert(e);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if let Some(path) = a.csv {
        write_csv(&path, bench::CSV_HEADER, samples.iter().map(bench::csv_row))?;
    }
    Ok(())
}

fn bench_pipeline(a: BenchPipelineArgs) -> Result<()> {
    check_output_dirs("csv", [&a.csv])?;
    for s in &a.sizes {
        bench::parse_size(s)?;
    }
    if a.ks.contains(&0) || a.frames == 0 {
        bail!("kernel sizes and --frames must be positive");
    }
    let mut backends = Vec::new();
    for kind in &a.backend {
        let mut gpu = GpuArgs {
            variant: a.variant.clone(),
            block: None,
            device: a.device,
            pageable: false,
            sync: false,
        };
        if *kind != BackendKind::Cuda {
            backends.push((*kind, gpu.schedule(a.threads, "auto")?, "host".to_string()));
            continue;
        }
        for label in &a.schedules {
            match label.as_str() {
                "overlap" => {}
                "sync" => gpu.sync = true,
                "pinned-sync" => gpu.sync = true,
                other => bail!("unknown schedule '{other}' (expected overlap, sync or pinned-sync)"),
            }
            let mut schedule = gpu.schedule(a.threads, &a.variant)?;
            if label == "pinned-sync" {
                schedule.pageable = false;
            }
            backends.push((*kind, schedule, label.clone()));
            gpu.sync = false;
        }
    }
    let cfg = bench::PipelineBench {
        backends,
        sizes: a.sizes,
        formats: a.formats,
        ks: a.ks,
        frames: a.frames,
        runs: a.runs,
        inflight: a.inflight.max(1),
    };
    let link = bench::measure_link(&cfg)?;
    let mut out = std::io::stdout().lock();
    if let Some(l) = &link {
        writeln!(
            out,
            "host<->device bandwidth (page-locked, 256 MiB, median of 5): H2D {:.1} GB/s, D2H {:.1} GB/s, both at once {:.1} GB/s\n",
            l.h2d / 1e9,
            l.d2h / 1e9,
            l.duplex / 1e9
        )?;
    }
    writeln!(out, "{}", bench::PIPELINE_TABLE_HEADER)?;
    let mut write_err = None;
    let samples = bench::run_pipeline(&cfg, |s| {
        if let Err(e) = writeln!(out, "{}", bench::pipeline_row(s, link.as_ref())).and_then(|()| out.flush()) {
            write_err.get_or_insert(e);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if let Some(path) = a.csv {
        let rows = samples.iter().map(|s| bench::pipeline_csv_row(s, link.as_ref()));
        write_csv(&path, bench::PIPELINE_CSV_HEADER, rows)?;
    }
    Ok(())
}

/// Refuses output files whose directory is missing, before any work is done.
fn check_output_dirs<const N: usize>(what: &str, paths: [&Option<PathBuf>; N]) -> Result<()> {
    for path in paths.into_iter().flatten() {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            bail!(
                "{what} '{}': directory '{}' does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// Writes a CSV file: the header line, then one line per row.
fn write_csv(path: &Path, header: &str, rows: impl Iterator<Item = String>) -> Result<()> {
    let mut text = String::from(header);
    for r in rows {
        text.push('\n');
        text.push_str(&r);
    }
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn bench_suite(name: &str, a: SuiteArgs) -> Result<()> {
    use convflow::bench::suite;
    let experiments: Vec<&str> = if name == "all" {
        suite::EXPERIMENTS.to_vec()
    } else {
        vec![name]
    };
    // Check output paths before spending minutes measuring.
    check_output_dirs("output", [&a.csv, &a.json])?;
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir).with_context(|| format!("chart directory '{}'", dir.display()))?;
    }
    let cfg = suite::SuiteConfig {
        backends: a.backend.clone(),
        quick: a.quick,
        budget: Duration::from_secs_f64(a.budget.max(0.1)),
        warmup: a.warmup.unwrap_or(if a.quick { 0 } else { 1 }),
        runs: a.runs.unwrap_or(if a.quick { 2 } else { 5 }).max(1),
        threads: a.threads,
        device: a.device,
    };
    let meta = bench_metadata(&cfg);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# convflow bench {name}{}\n",
        if a.quick { " --quick" } else { "" }
    )?;
    for (k, v) in meta.as_object().into_iter().flatten() {
        writeln!(out, "- {k}: {}", v.as_str().map_or(v.to_string(), str::to_string))?;
    }
    writeln!(out, "\n{}\n", suite::METHOD)?;
    let mut write_err = None;
    let mut result = suite::run(&cfg, &experiments, |e, rows| {
        let mut w = || -> std::io::Result<()> {
            writeln!(out, "## {e}\n\n{}", suite::TABLE_HEADER)?;
            for r in rows {
                writeln!(out, "{}", suite::table_row(r))?;
            }
            writeln!(out)?;
            out.flush()
        };
        if let Err(err) = w() {
            write_err.get_or_insert(err);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if !result.skipped.is_empty() {
        writeln!(out, "Left out:")?;
        for s in &result.skipped {
            writeln!(out, "- {s}")?;
        }
    }
    if let Some(dir) = &a.plot {
        result.charts = suite::charts(&result.rows, dir)?;
        writeln!(out, "\nCharts:")?;
        for c in &result.charts {
            writeln!(out, "- {}", c.display())?;
        }
    }
    if let Some(path) = &a.csv {
        write_csv(path, suite::CSV_HEADER, result.rows.iter().map(suite::csv_row))?;
    }
    if let Some(path) = &a.json {
        let json = serde_json::json!({
            "meta": meta,
            "method": suite::METHOD,
            "experiments": experiments,
            "rows": result.rows.iter().map(suite::row_json).collect::<Vec<_>>(),
            "skipped": result.skipped,
            "charts": result.charts.iter().map(|c| c.display().to_string()).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&json).expect("JSON values serialize");
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Device, driver, CPU, threads, date, git revision and command line of a benchmark run.
fn bench_metadata(cfg: &convflow::bench::suite::SuiteConfig) -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let gpu = if cfg.backends.contains(&BackendKind::Cuda) {
        match backend::create(BackendKind::Cuda, &Schedule::default()) {
            Ok(b) => b.name(),
            Err(e) => format!("none ({e})"),
        }
    } else {
        "not measured".into()
    };
    #[cfg(feature = "cuda")]
    let driver = convflow::backend::cuda::driver_version().map_or("none".into(), |v| format!("CUDA {v}"));
    #[cfg(not(feature = "cuda"))]
    let driver = "not built in".to_string();
    let git = env!("CONVFLOW_GIT_REV");
    serde_json::json!({
        "date_utc": utc_now(),
        "convflow": env!("CARGO_PKG_VERSION"),
        "git_revision": git,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "cpu": cpu,
        "logical_cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu_par": cpu_par::simd_level(),
        "gpu": gpu,
        "driver": driver,
    })
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn bench_plot(from: &Path, dir: &Path) -> Result<()> {
    use convflow::bench::suite;
    let text = std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not a bench JSON file", from.display()))?;
    let rows: Vec<suite::Row> = v["rows"]
        .as_array()
        .with_context(|| format!("{}: no rows", from.display()))?
        .iter()
        .enumerate()
        .map(|(i, r)| suite::row_from_json(r).with_context(|| format!("{}: row {i} is malformed", from.display())))
        .collect::<Result<_>>()?;
    for c in suite::charts(&rows, dir)? {
        println!("{}", c.display());
    }
    Ok(())
}
