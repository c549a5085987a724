//! Benchmarks run from the CLI: `convflow bench kernels` (filter time per backend and CUDA
//! variant, frame size, format, kernel size and decomposition) and `convflow bench pipeline`
//! (sustained fps through the whole pipeline next to the measured host↔device bandwidth).
//!
//! Method: random input (never zeros), buffers allocated once, `warmup` untimed runs, then
//! timed runs until `runs` are done or the per-point time budget is spent (at least one); the
//! median is reported with the min and max. GPU backends report kernel-only time from CUDA
//! events (the frame is uploaded once, outside the timed region); CPU backends are synchronous,
//! so a wall clock around `filter_frame` measures them. Where a backend reports its measured
//! ceilings, each point also gets its floor, max(bytes / copy bandwidth, FMAs / FMA rate), and
//! the ratio time / floor.

pub mod plot;
pub mod suite;

use std::time::{Duration, Instant};

use crate::backend::{self, Backend, BackendError, BackendKind, Schedule, Support};
use crate::border::Border;
use crate::filter::{library, Decomposition, Filter, FilterError, Mode};
use crate::frame::{Frame, PixelFormat};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Filter(#[from] FilterError),
    #[error("bad frame size '{0}' (use vga, 720p, 1080p, 1440p, 4k, 8k, 10k or WxH)")]
    Size(String),
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    #[error("{0}")]
    Run(String),
}

/// Parses `vga`, `720p`, `1080p`, `1440p`, `4k`, `8k`, `10k` or `WxH`.
pub fn parse_size(s: &str) -> Result<(usize, usize), BenchError> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "vga" => (640, 480),
        "720p" => (1280, 720),
        "1080p" | "fhd" => (1920, 1080),
        "1440p" | "qhd" => (2560, 1440),
        "4k" => (3840, 2160),
        "8k" => (7680, 4320),
        "10k" => (10240, 4320),
        other => {
            let (w, h) = other.split_once('x').ok_or_else(|| BenchError::Size(s.into()))?;
            let w: usize = w.parse().map_err(|_| BenchError::Size(s.into()))?;
            let h: usize = h.parse().map_err(|_| BenchError::Size(s.into()))?;
            if w == 0 || h == 0 {
                return Err(BenchError::Size(s.into()));
            }
            (w, h)
        }
    })
}

#[derive(Clone, Debug)]
pub struct KernelBench {
    /// Backends to measure, each with its schedule (CUDA variants are separate entries).
    pub backends: Vec<(BackendKind, Schedule)>,
    pub sizes: Vec<String>,
    pub formats: Vec<PixelFormat>,
    pub ks: Vec<usize>,
    /// `Full` and/or `Separable` (the kernel is `gaussian:k`, which is rank 1).
    pub modes: Vec<Mode>,
    pub border: Border,
    pub warmup: usize,
    pub runs: usize,
    pub budget: Duration,
}

/// One measured point.
#[derive(Clone, Debug)]
pub struct Sample {
    pub backend: String,
    pub size: String,
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    pub k: usize,
    pub decomposition: String,
    /// "events" (device kernel time) or "wall".
    pub clock: &'static str,
    pub runs: usize,
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
    /// Bytes read + written (input and output frames once each).
    pub bytes: f64,
    pub fmas: f64,
    /// Floor from the backend's measured ceilings, if any.
    pub floor: Option<Duration>,
}

impl Sample {
    /// Megapixels per second at the median.
    pub fn mpix_per_s(&self) -> f64 {
        (self.width * self.height) as f64 / self.median.as_secs_f64() / 1e6
    }
    pub fn gb_per_s(&self) -> f64 {
        self.bytes / self.median.as_secs_f64() / 1e9
    }
    pub fn gflop_per_s(&self) -> f64 {
        2.0 * self.fmas / self.median.as_secs_f64() / 1e9
    }
    pub fn floor_ratio(&self) -> Option<f64> {
        self.floor.map(|f| self.median.as_secs_f64() / f.as_secs_f64())
    }
}

/// A deterministic non-constant fill (xorshift), so no benchmark runs on zeros.
pub fn fill_random(frame: &mut Frame, seed: u64) {
    let mut s = seed | 1;
    for b in frame.data_mut() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = (s >> 32) as u8;
    }
}

/// Times `backend` filtering `src`: device events when the backend has them, else wall clock.
/// Returns (clock, sorted times).
pub fn time_filter(
    backend: &mut dyn Backend,
    filter: &Filter,
    src: &Frame,
    warmup: usize,
    runs: usize,
    budget: Duration,
) -> Result<(&'static str, Vec<Duration>), BenchError> {
    let plan = filter.plan_for(backend.support())?;
    let mut dst = Frame::like(src);
    if let Some(mut t) = backend.kernel_times(&plan, src, &mut dst, warmup, runs.max(1), budget.as_secs_f64())? {
        t.sort_by(|a, b| a.total_cmp(b));
        return Ok(("events", t.into_iter().map(Duration::from_secs_f64).collect()));
    }
    for _ in 0..warmup {
        backend.filter_frame(&plan, src, &mut dst)?;
    }
    let start = Instant::now();
    let mut times = Vec::with_capacity(runs);
    while times.len() < runs.max(1) && (times.is_empty() || start.elapsed() < budget) {
        let t = Instant::now();
        backend.filter_frame(&plan, src, &mut dst)?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(("wall", times))
}

/// Runs every configured point, calling `report` as each finishes.
pub fn run_kernels(cfg: &KernelBench, mut report: impl FnMut(&Sample)) -> Result<Vec<Sample>, BenchError> {
    let mut out = Vec::new();
    for (kind, schedule) in &cfg.backends {
        let mut backend = backend::create(*kind, schedule)?;
        let ceilings = backend.ceilings();
        for size in &cfg.sizes {
            let (w, h) = parse_size(size)?;
            for &format in &cfg.formats {
                let mut src = Frame::new(format, w, h)?;
                fill_random(&mut src, (w * 31 + h) as u64);
                let samples: usize = src.planes().iter().map(|l| l.width * l.height * l.channels).sum();
                for &k in &cfg.ks {
                    for &mode in &cfg.modes {
                        let skip = matches!(
                            (backend.support(), mode),
                            (Support::FullOnly, Mode::Separable) | (Support::SeparableOnly, Mode::Full)
                        );
                        if skip {
                            continue;
                        }
                        let mut filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}"))?);
                        filter.border = cfg.border;
                        filter.mode = mode;
                        let plan = filter.plan_for(backend.support())?;
                        let (decomposition, taps) = match plan.decomposition {
                            Decomposition::Full => ("full", k * k),
                            Decomposition::Separable { .. } => ("separable", 2 * k),
                        };
                        let (clock, times) =
                            time_filter(backend.as_mut(), &filter, &src, cfg.warmup, cfg.runs, cfg.budget)?;
                        let bytes = 2.0 * src.data().len() as f64;
                        let fmas = (samples * taps) as f64;
                        let floor = ceilings.map(|(bw, fma)| Duration::from_secs_f64((bytes / bw).max(fmas / fma)));
                        let s = Sample {
                            backend: backend.name(),
                            size: size.clone(),
                            width: w,
                            height: h,
                            format,
                            k,
                            decomposition: decomposition.into(),
                            clock,
                            runs: times.len(),
                            median: times[times.len() / 2],
                            min: times[0],
                            max: *times.last().unwrap(),
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

pub const TABLE_HEADER: &str = "| backend | size | format | k | path | clock | runs | median µs | min µs | max µs | MPix/s | GB/s | GFLOP/s | floor µs | ×floor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

pub fn table_row(s: &Sample) -> String {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
        s.backend,
        s.size,
        s.format,
        s.k,
        s.decomposition,
        s.clock,
        s.runs,
        us(s.median),
        us(s.min),
        us(s.max),
        s.mpix_per_s(),
        s.gb_per_s(),
        s.gflop_per_s(),
        s.floor.map(|f| format!("{:.1}", us(f))).unwrap_or_else(|| "-".into()),
        s.floor_ratio().map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into()),
    )
}

pub const CSV_HEADER: &str =
    "backend,size,width,height,format,k,path,clock,runs,median_s,min_s,max_s,mpix_per_s,gb_per_s,gflop_per_s,floor_s,floor_ratio";

pub fn csv_row(s: &Sample) -> String {
    format!(
        "\"{}\",{},{},{},{},{},{},{},{},{:.9},{:.9},{:.9},{:.3},{:.3},{:.3},{},{}",
        s.backend,
        s.size,
        s.width,
        s.height,
        s.format,
        s.k,
        s.decomposition,
        s.clock,
        s.runs,
        s.median.as_secs_f64(),
        s.min.as_secs_f64(),
        s.max.as_secs_f64(),
        s.mpix_per_s(),
        s.gb_per_s(),
        s.gflop_per_s(),
        s.floor.map(|f| format!("{:.9}", f.as_secs_f64())).unwrap_or_default(),
        s.floor_ratio().map(|r| format!("{r:.4}")).unwrap_or_default(),
    )
}

/// `convflow bench pipeline`: sustained frames per second through the whole pipeline
/// (synthetic source → [upload →] filter → [download →] null sink), per size × format × kernel
/// size × schedule, next to the measured host↔device bandwidth.
#[derive(Clone, Debug)]
pub struct PipelineBench {
    /// Backends with their schedules and a label (e.g. "overlap", "sync").
    pub backends: Vec<(BackendKind, Schedule, String)>,
    pub sizes: Vec<String>,
    pub formats: Vec<PixelFormat>,
    pub ks: Vec<usize>,
    /// Frames per run (the first `4·inflight + 4` are warm-up, not counted in the steady rate).
    pub frames: usize,
    pub runs: usize,
    pub inflight: usize,
}

/// One measured pipeline point.
#[derive(Clone, Debug)]
pub struct PipelineSample {
    pub backend: String,
    pub schedule: String,
    pub size: String,
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    pub k: usize,
    pub frames: usize,
    /// Steady-state fps of each run.
    pub fps: Vec<f64>,
    /// Per-frame device times (µs) of the median run: upload, kernels, download.
    pub device_us: Option<(f64, f64, f64)>,
    pub bottleneck: String,
    pub overlap: f64,
    /// Bytes of one frame (each way).
    pub frame_bytes: usize,
}

impl PipelineSample {
    pub fn median(&self) -> f64 {
        let mut v = self.fps.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    pub fn min(&self) -> f64 {
        self.fps.iter().copied().fold(f64::INFINITY, f64::min)
    }
    pub fn max(&self) -> f64 {
        self.fps.iter().copied().fold(0.0, f64::max)
    }
    /// The frame rate the measured duplex bandwidth allows (each frame crosses both ways).
    pub fn duplex_bound(&self, link: &crate::backend::LinkBandwidth) -> f64 {
        link.duplex / (2.0 * self.frame_bytes as f64)
    }
}

/// The bandwidth of the first offloading backend in `cfg` (pinned memory unless it is pageable),
/// 256 MiB each way, median of 5.
pub fn measure_link(cfg: &PipelineBench) -> Result<Option<crate::backend::LinkBandwidth>, BenchError> {
    for (kind, schedule, _) in &cfg.backends {
        let mut s = schedule.clone();
        s.sync = false;
        let mut b = backend::create(*kind, &s)?;
        if let Some(off) = b.offload()? {
            return Ok(Some(off.bandwidth(256 << 20, 5)?));
        }
    }
    Ok(None)
}

pub fn run_pipeline(
    cfg: &PipelineBench,
    mut report: impl FnMut(&PipelineSample),
) -> Result<Vec<PipelineSample>, BenchError> {
    use crate::io::synthetic::{NullSink, SyntheticSource};
    use crate::pipeline::{self, Options};
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut out = Vec::new();
    for (kind, schedule, label) in &cfg.backends {
        let mut b = backend::create(*kind, schedule)?;
        for size in &cfg.sizes {
            let (w, h) = parse_size(size)?;
            for &format in &cfg.formats {
                for &k in &cfg.ks {
                    let filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}"))?);
                    let plan = filter.plan_for(b.support())?;
                    let mut sample = PipelineSample {
                        backend: b.name(),
                        schedule: label.clone(),
                        size: size.clone(),
                        width: w,
                        height: h,
                        format,
                        k,
                        frames: cfg.frames,
                        fps: Vec::new(),
                        device_us: None,
                        bottleneck: String::new(),
                        overlap: 0.0,
                        frame_bytes: Frame::packed_len(format, w, h)?,
                    };
                    let mut runs = Vec::new();
                    for _ in 0..cfg.runs.max(1) {
                        let spec = format!("synthetic:{w}x{h}:{format}:{}", cfg.frames);
                        let mut src =
                            SyntheticSource::parse(&spec).map_err(|e| BenchError::Run(format!("pipeline run: {e}")))?;
                        let stats = pipeline::run(
                            &mut src,
                            Box::<NullSink>::default(),
                            b.as_mut(),
                            &plan,
                            Options::new(cfg.inflight, &stop),
                        )
                        .map_err(|e| BenchError::Run(format!("pipeline run: {e}")))?;
                        let fps = stats
                            .steady_fps()
                            .unwrap_or(stats.frames as f64 / stats.wall.as_secs_f64().max(1e-9));
                        runs.push((fps, stats));
                    }
                    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
                    sample.fps = runs.iter().map(|r| r.0).collect();
                    let mid = &runs[runs.len() / 2].1;
                    let n = mid.frames.max(1) as f64;
                    sample.device_us = mid.device.map(|d| {
                        (
                            d.h2d.as_secs_f64() * 1e6 / n,
                            d.kernel.as_secs_f64() * 1e6 / n,
                            d.d2h.as_secs_f64() * 1e6 / n,
                        )
                    });
                    sample.bottleneck = mid.bottleneck().name.to_string();
                    sample.overlap = mid.overlap();
                    report(&sample);
                    out.push(sample);
                }
            }
        }
    }
    Ok(out)
}

pub const PIPELINE_TABLE_HEADER: &str = "| backend | schedule | size | format | k | frames | fps median | fps min | fps max | GB/s each way | upload µs | kernels µs | download µs | overlap | bottleneck | % of duplex bound |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

pub fn pipeline_row(s: &PipelineSample, link: Option<&crate::backend::LinkBandwidth>) -> String {
    let dev = |f: fn(&(f64, f64, f64)) -> f64| s.device_us.as_ref().map_or("-".into(), |d| format!("{:.1}", f(d)));
    format!(
        "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {} | {} | {} | {:.2} | {} | {} |",
        s.backend,
        s.schedule,
        s.size,
        s.format,
        s.k,
        s.frames,
        s.median(),
        s.min(),
        s.max(),
        s.median() * s.frame_bytes as f64 / 1e9,
        dev(|d| d.0),
        dev(|d| d.1),
        dev(|d| d.2),
        s.overlap,
        s.bottleneck,
        link.map_or("-".into(), |l| format!(
            "{:.0}%",
            100.0 * s.median() / s.duplex_bound(l)
        ))
    )
}

pub const PIPELINE_CSV_HEADER: &str =
    "backend,schedule,size,width,height,format,k,frames,runs,fps_median,fps_min,fps_max,frame_bytes,upload_us,kernel_us,download_us,overlap,bottleneck,link_h2d_gbs,link_d2h_gbs,link_duplex_gbs";

pub fn pipeline_csv_row(s: &PipelineSample, link: Option<&crate::backend::LinkBandwidth>) -> String {
    let dev = |f: fn(&(f64, f64, f64)) -> f64| s.device_us.as_ref().map_or(String::new(), |d| format!("{:.3}", f(d)));
    let l = |f: fn(&crate::backend::LinkBandwidth) -> f64| link.map_or(String::new(), |l| format!("{:.3}", f(l) / 1e9));
    format!(
        "\"{}\",{},{},{},{},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{:.3},{},{},{},{}",
        s.backend.replace('"', "'"),
        s.schedule,
        s.size,
        s.width,
        s.height,
        s.format,
        s.k,
        s.frames,
        s.fps.len(),
        s.median(),
        s.min(),
        s.max(),
        s.frame_bytes,
        dev(|d| d.0),
        dev(|d| d.1),
        dev(|d| d.2),
        s.overlap,
        s.bottleneck,
        l(|l| l.h2d),
        l(|l| l.d2h),
        l(|l| l.duplex)
    )
}
