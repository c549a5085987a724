//! The command line's arguments (clap derive): what each command and option is, with its
//! help text. Values are parsed into typed values here; turning them into a configuration (a
//! filter, a schedule, sources and sinks) is each command's job.

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{bail, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use convflow::backend::{parse_block, BackendKind, Devices, Schedule};
use convflow::filter::{spec, AlphaMode, Kernel, Mode, PlaneSel};
use convflow::frame::PixelFormat;
use convflow::io::segment::Segment;
use convflow::Border;

mod bench;
pub use bench::*;

/// A clap parser for a named choice of the library (border, mode, backend, pixel format, …):
/// its names and their aliases come from the enum itself, so a bad value is a usage error
/// listing the valid ones.
fn choice<T>() -> impl TypedValueParser<Value = T>
where
    T: strum::VariantArray
        + strum::EnumMessage
        + Into<&'static str>
        + FromStr
        + Copy
        + Send
        + Sync
        + 'static,
{
    let values = T::VARIANTS.iter().map(|&v| {
        let name: &'static str = v.into();
        let aliases = v
            .get_serializations()
            .iter()
            .copied()
            .filter(move |a| *a != name);
        PossibleValue::new(name).aliases(aliases)
    });
    PossibleValuesParser::new(values)
        .map(|s| s.parse::<T>().ok().expect("clap only passes listed names"))
}

/// `--variant`: a row of the CUDA variant table.
#[cfg(feature = "cuda")]
pub type VariantArg = convflow::backend::cuda::Variant;

/// `--variant` without the cuda feature: only `auto` exists.
#[cfg(not(feature = "cuda"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VariantArg;

#[cfg(not(feature = "cuda"))]
impl std::fmt::Display for VariantArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("auto")
    }
}

/// The parser of `--variant` values, over the variant table.
fn variant() -> impl TypedValueParser<Value = VariantArg> {
    #[cfg(feature = "cuda")]
    let names: Vec<&'static str> = VariantArg::all().map(|v| v.name()).collect();
    #[cfg(not(feature = "cuda"))]
    let names = vec!["auto"];
    PossibleValuesParser::new(names).map(|s| {
        #[cfg(feature = "cuda")]
        return s
            .parse::<VariantArg>()
            .expect("clap only passes listed names");
        #[cfg(not(feature = "cuda"))]
        {
            let _ = s;
            VariantArg
        }
    })
}

/// Every CUDA variant but `auto`: what `bench kernels` measures by default.
fn measured_variants() -> Vec<VariantArg> {
    #[cfg(feature = "cuda")]
    return VariantArg::all().filter(|v| v.name() != "auto").collect();
    #[cfg(not(feature = "cuda"))]
    Vec::new()
}

/// One example per kind of input, shown by `convflow filter --help` and `convflow --help`.
pub const FILTER_EXAMPLES: &str = "\
Examples:
  Video file (other streams, timing and colour metadata are kept):
    convflow filter clip.mp4 -o blurred.mkv --kernel gaussian:9
  y4m pipe, from and to ffmpeg:
    ffmpeg -i clip.mp4 -f yuv4mpegpipe - | convflow filter - -o - -k box:5 | ffplay -
  Directory of frames, on the CPU:
    convflow filter frames/ -o out/ --kernel sobel-x --abs --backend cpu-par --threads 4
  One image, a kernel from a file, checked against cpu-seq:
    convflow filter photo.jpg -o edges.png --kernel-file my_kernel.txt --border reflect --check
  Synthetic frames, to measure throughput (nothing is written):
    convflow filter synthetic:3840x2160:rgb:600 -o null --kernel gaussian:15 -v";

#[derive(Parser)]
#[command(
    name = "convflow",
    version,
    about = "2D convolution of video and image frames on GPUs and CPUs",
    long_about = "2D convolution of video and image frames on NVIDIA GPUs (CUDA) and CPUs, \
        as a streaming pipeline: video files (through FFmpeg), y4m pipes, frame directories, \
        images and synthetic frames in; the same kinds out, with every other stream, timing and \
        colour metadata kept.",
    after_help = FILTER_EXAMPLES,
    after_long_help = FILTER_EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Filter a video file, a y4m stream, a frame directory, an image or synthetic frames.
    #[command(after_help = FILTER_EXAMPLES)]
    Filter(FilterArgs),
    /// Join the outputs of `filter --segment` runs (video files, y4m files or frame
    /// directories) into one, without re-encoding.
    #[command(
        after_help = "Examples:\n  convflow concat part0.mkv part1.mkv part2.mkv -o \
            whole.mkv\n  convflow concat out-*.y4m -o whole.y4m   (parts in order: 0, 1, … 9, \
            10 sort right only with the same number of digits)\n  convflow concat frames0/ \
            frames1/ -o frames/"
    )]
    Concat {
        /// The parts, in order: video files with the same streams and codec settings, y4m
        /// files with the same header, or frame directories.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// The joined output: a video file (container from its extension), a .y4m file, or a
        /// directory for frame directories.
        #[arg(short, long)]
        output: PathBuf,
        /// Print nothing on success (as `filter -q`).
        #[arg(short, long)]
        quiet: bool,
    },
    /// List the kernel library, or print the weights of one kernel.
    #[command(
        after_help = "Examples:\n  convflow kernels\n  convflow kernels gaussian:5\n  convflow \
            kernels --kernel-file k.txt"
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
    /// Benchmarks: kernels, the pipeline, and the classic experiments with charts.
    #[command(
        after_help = "Examples:\n  convflow bench kernels --quick\n  convflow bench kernels \
            --backend cuda --sizes 4k --ks 3,5 --formats gray,rgb --csv k.csv\n  convflow bench \
            pipeline --backend cpu-par --quick\n  convflow bench all --quick --plot charts/"
    )]
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) on stdout.
    #[command(after_help = "Install, e.g.:\n  convflow completions bash > \
            ~/.local/share/bash-completion/completions/convflow\n  convflow completions zsh > \
            ~/.zfunc/_convflow   (with fpath+=~/.zfunc in .zshrc)\n  convflow completions fish \
            > ~/.config/fish/completions/convflow.fish")]
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout.
    #[command(
        after_help = "Read it:\n  convflow man | man -l -\nInstall it:\n  convflow man > \
            ~/.local/share/man/man1/convflow.1"
    )]
    Man,
}

/// The kernel: a spec or a file (exactly one, unless `--passthrough`).
#[derive(Args)]
#[command(next_help_heading = "Filter")]
pub struct KernelChoice {
    /// Kernel spec, e.g. gaussian:9, box:5x3, sobel-x, custom:3x3:0,1,0,1,-4,1,0,1,0
    /// (`convflow kernels` lists the grammar).
    #[arg(
        short,
        long,
        value_name = "SPEC",
        required_unless_present_any = ["kernel_file", "passthrough"],
    )]
    pub kernel: Option<String>,
    /// Kernel file: rows of numbers, optional `divisor D` and `offset O` lines, `#` comments.
    #[arg(long, value_name = "PATH", conflicts_with = "kernel")]
    pub kernel_file: Option<PathBuf>,
}

impl KernelChoice {
    pub fn load(&self) -> Result<Kernel> {
        Ok(match (&self.kernel, &self.kernel_file) {
            (_, Some(path)) => spec::parse_kernel_file(path)?,
            // A spec on the command line is a usage error (exit 2); a kernel file is an input.
            (Some(s), None) => spec::parse_spec(s).map_err(super::usage)?,
            (None, None) => bail!("no kernel given (use --kernel SPEC or --kernel-file PATH)"),
        })
    }
}

/// `convflow filter`'s arguments, grouped under the help's headings.
#[derive(Args)]
pub struct FilterArgs {
    /// Input: a video file, an image file, a directory of frames, a .y4m file, - for y4m on
    /// stdin, or synthetic:WIDTHxHEIGHT:FORMAT:FRAMES (generated frames; FORMAT gray, rgb,
    /// rgba, yuv420p, yuv422p, yuv444p, nv12 or a deeper one: gray16, rgb48, yuv420p10, p010…).
    #[arg(help_heading = "Input and output")]
    pub input: PathBuf,
    /// Output: a video file (.mp4, .mkv, .mov, .avi, .ts, .nut), an image file (format from its
    /// extension), a directory (of frames), a .y4m file, - for y4m on stdout, or null to
    /// discard the frames.
    #[arg(short, long, help_heading = "Input and output")]
    pub output: PathBuf,
    /// Filter part I of N equal parts of the input, counted from 0 (0/4 … 3/4): a video by
    /// time, frames (a directory, a .y4m file, synthetic) by index; `convflow concat` joins
    /// the parts' outputs. For job arrays: --segment $SLURM_ARRAY_TASK_ID/4.
    #[arg(
        long,
        value_name = "I/N",
        value_parser = Segment::parse,
        help_heading = "Input and output"
    )]
    pub segment: Option<Segment>,
    #[command(flatten)]
    pub kernel: KernelChoice,
    /// Border mode: clamp (replicate), zero, reflect (reflect-101) or wrap.
    #[arg(
        long,
        default_value = "clamp",
        value_parser = choice::<Border>(),
        help_heading = "Filter"
    )]
    pub border: Border,
    /// auto (separable when the kernel is rank 1), full or separable.
    #[arg(
        long,
        default_value = "auto",
        value_parser = choice::<Mode>(),
        help_heading = "Filter"
    )]
    pub mode: Mode,
    /// Planes of YUV frames to filter: luma or all.
    #[arg(
        long,
        default_value = "all",
        value_parser = choice::<PlaneSel>(),
        help_heading = "Filter"
    )]
    pub planes: PlaneSel,
    /// Alpha channel: keep (pass through) or filter.
    #[arg(
        long,
        default_value = "keep",
        value_parser = choice::<AlphaMode>(),
        help_heading = "Filter"
    )]
    pub alpha: AlphaMode,
    /// Output |sum + offset| (for edge and derivative kernels).
    #[arg(long, help_heading = "Filter")]
    pub abs: bool,
    /// Copy frames from the input to the output without filtering (to measure decode + encode
    /// alone; no kernel needed).
    #[arg(long, conflicts_with = "check", help_heading = "Filter")]
    pub passthrough: bool,
    /// auto (cuda if a GPU is usable, else cpu-par; one image that cpu-par filters sooner
    /// than a CUDA context comes up runs on cpu-par), cpu-seq, cpu-par or cuda.
    #[arg(
        long,
        default_value = "auto",
        value_parser = choice::<BackendKind>(),
        help_heading = "Backend"
    )]
    pub backend: BackendKind,
    /// Worker threads for cpu-par (0 = one per logical CPU).
    #[arg(long, default_value_t = 0, help_heading = "Backend")]
    pub threads: usize,
    /// Also run cpu-seq on every frame and fail on any differing byte.
    #[arg(long, help_heading = "Backend")]
    pub check: bool,
    /// CUDA: every frame on the GPU. Without it, `auto` and `cuda` (with `--variant auto`) let
    /// cpu-par filter the first frames while the CUDA context comes up (~0.2 s), with the same
    /// bits; the report counts them apart. With `auto`, it also keeps one image on the GPU.
    #[arg(long, help_heading = "Backend")]
    pub gpu_only: bool,
    /// Frame buffers per pipeline pool and frames queued between stages (read → upload →
    /// filter → download → write): the depth of the overlap [default: 3, more for frames under
    /// 5.3 MiB (pools of ~16 MiB, at most 12)].
    #[arg(
        long,
        value_parser = clap::value_parser!(u64).range(1..=64),
        help_heading = "Backend"
    )]
    pub inflight: Option<u64>,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Skip frames the input reports as corrupt or truncated (counted in the report) instead of
    /// failing.
    #[arg(long, help_heading = "Input and output")]
    pub skip_bad: bool,
    #[command(flatten)]
    pub video: VideoArgs,
    /// Also write the full run report as JSON to this file (and print the stage report).
    #[arg(long, value_name = "FILE.json", help_heading = "Report")]
    pub report: Option<PathBuf>,
    /// Print nothing on success (no summary, no progress bar).
    #[arg(short, long, help_heading = "Report")]
    pub quiet: bool,
    /// Print more: the full stage report (a short run otherwise gets one summary line) and
    /// FFmpeg's own messages (errors and warnings) as FFmpeg logs them.
    #[arg(short, long, conflicts_with = "quiet", help_heading = "Report")]
    pub verbose: bool,
}

/// Video output options.
#[derive(Args, Clone)]
#[command(next_help_heading = "Video and format")]
pub struct VideoArgs {
    /// Encoder for video outputs, e.g. libx264, ffv1, mpeg4 (default: the first of libx264,
    /// libx265, ffv1, mpeg4 that keeps the frames' pixel format and bit depth).
    #[arg(long)]
    pub codec: Option<String>,
    /// Encoder option KEY=VALUE (repeatable), e.g. --codec-opt crf=18, --codec-opt qp=0 for
    /// lossless x264, --codec-opt preset=veryfast.
    #[arg(long = "codec-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub codec_opts: Vec<(String, String)>,
    /// The other streams of a video input (audio, subtitles, data, attachments), its chapters
    /// and tags: copy (packet for packet into a video output; those its container cannot hold
    /// are left out, with a note) or video-only.
    #[arg(long, value_enum, default_value_t = Streams::Copy)]
    pub streams: Streams,
    /// Convert frames to this pixel format (swscale) before filtering, e.g. yuv420p, yuv444p10,
    /// rgb48, gray16. Without it frames keep the input's format (images outputs of YUV video
    /// get RGB, said in a note).
    #[arg(long, value_name = "FMT")]
    pub pix_fmt: Option<PixelFormat>,
    /// Frame rate of a video or y4m output made from images (a frame directory): 25, 30000/1001,
    /// 29.97. Default 25. Video and y4m inputs keep their own timing.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub fps: Option<(i32, i32)>,
    /// Frames written to a directory from a video, y4m or synthetic input are TIFF files
    /// (`frame_000001.tif`, …) instead of PNG.
    #[arg(long)]
    pub tiff: bool,
}

/// A frame rate: `25`, `30000/1001` or `29.97`.
pub fn parse_rate(s: &str) -> Result<(i32, i32), String> {
    let bad = || format!("'{s}': expected a frame rate such as 25, 30000/1001 or 29.97");
    let (n, d) = match s.split_once('/') {
        Some((n, d)) => (n.trim().parse::<i32>(), d.trim().parse::<i32>()),
        None => match s.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1e6 => {
                // Exact for whole rates and for 1/1000ths (29.97 = 29970/1000).
                let d = if r.fract() == 0.0 { 1 } else { 1000 };
                (Ok((r * f64::from(d)).round() as i32), Ok(d))
            }
            _ => return Err(bad()),
        },
    };
    match (n, d) {
        (Ok(n), Ok(d)) if n > 0 && d > 0 && n / d <= 1_000_000 => Ok((n, d)),
        _ => Err(bad()),
    }
}

/// `--streams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Streams {
    Copy,
    VideoOnly,
}

pub fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}': expected KEY=VALUE")),
    }
}

/// CUDA schedule options: how the filter runs on the GPU, never what it computes.
#[derive(Args, Clone)]
#[command(next_help_heading = "CUDA schedule")]
pub struct GpuArgs {
    /// CUDA memory variant: auto, global, constant, shared, shared-constant, texture,
    /// separable-global, separable-shared or fast.
    #[arg(long, default_value = "auto", value_parser = variant())]
    pub variant: VariantArg,
    /// CUDA block shape WxH (default 32x8; `fast` shrinks it to fit shared memory).
    #[arg(long, value_parser = parse_block)]
    pub block: Option<(u32, u32)>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// CUDA: several GPUs in one run, `all` or ordinals (`0,1`): each gets its own upload,
    /// filter and download stages, and frames are written in order (CPU backends ignore it).
    #[arg(long, value_name = "LIST|all", value_parser = Devices::parse, conflicts_with = "device")]
    pub devices: Option<Devices>,
    /// CUDA: keep frames in pageable (ordinary) host memory instead of page-locked buffers.
    #[arg(long)]
    pub pageable: bool,
    /// CUDA: the classic loop for comparison: pageable memory, synchronous copies and kernels
    /// on one stream inside the filter stage (no upload/download stages, no overlap).
    #[arg(long)]
    pub sync: bool,
}

impl GpuArgs {
    /// `--variant auto` (the table's first row, the default): the fastest kernel for each plan.
    pub fn variant_is_auto(&self) -> bool {
        self.variant == VariantArg::default()
    }

    /// The device ordinals of the run: `--devices` resolved, else `--device`.
    pub fn device_list(&self) -> Result<Vec<usize>, convflow::backend::BackendError> {
        match &self.devices {
            Some(d) => d.resolve(),
            None => Ok(vec![self.device]),
        }
    }

    pub fn schedule(&self, threads: usize, variant: VariantArg) -> Schedule {
        #[cfg(not(feature = "cuda"))]
        let _ = variant;
        Schedule {
            threads,
            #[cfg(feature = "cuda")]
            variant,
            block: self.block,
            device: self.device,
            // --sync is the classic loop: pageable memory too.
            pageable: self.pageable || self.sync,
            sync: self.sync,
        }
    }
}

#[cfg(test)]
mod tests;
