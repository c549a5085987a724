//! Benchmarks run from the CLI (`convflow bench kernels`): filter time per backend (and CUDA
//! variant), frame size, format, kernel size and decomposition.
//!
//! Method: random input (never zeros), buffers allocated once, `warmup` untimed runs, then
//! timed runs until `runs` are done or the per-point time budget is spent (at least one); the
//! median is reported with the min and max. GPU backends report kernel-only time from CUDA
//! events (the frame is uploaded once, outside the timed region); CPU backends are synchronous,
//! so a wall clock around `filter_frame` measures them. Where a backend reports its measured
//! ceilings, each point also gets its floor, max(bytes / copy bandwidth, FMAs / FMA rate), and
//! the ratio time / floor.

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
