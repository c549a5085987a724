//! Benchmarks run from the CLI (`convflow bench kernels`): filter-only time per backend, frame
//! size, format, kernel size and decomposition.
//!
//! Method: random input (never zeros), the output buffer allocated once, `warmup` untimed runs,
//! then timed runs until `runs` are done or the per-point time budget is spent (at least one);
//! the median is reported with the min and max. CPU backends are synchronous, so a wall clock
//! around `filter_frame` measures them exactly.

use std::time::{Duration, Instant};

use crate::backend::{self, Backend, BackendError, BackendKind, Schedule};
use crate::border::Border;
use crate::filter::{library, Decomposition, Filter, FilterError, Mode};
use crate::frame::{Frame, PixelFormat};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Filter(#[from] FilterError),
    #[error("bad frame size '{0}' (use 720p, 1080p, 1440p, 4k, 8k or WxH)")]
    Size(String),
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
}

/// Parses `720p`, `1080p`, `1440p`, `4k`, `8k`, `10k` or `WxH`.
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
    pub backends: Vec<BackendKind>,
    pub schedule: Schedule,
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
    pub runs: usize,
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
}

impl Sample {
    /// Megapixels per second at the median.
    pub fn mpix_per_s(&self) -> f64 {
        (self.width * self.height) as f64 / self.median.as_secs_f64() / 1e6
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

/// Times `backend` filtering `src` with `filter` and returns (runs, median, min, max).
pub fn time_filter(
    backend: &mut dyn Backend,
    filter: &Filter,
    src: &Frame,
    warmup: usize,
    runs: usize,
    budget: Duration,
) -> Result<(usize, Duration, Duration, Duration), BenchError> {
    let plan = filter.plan()?;
    let mut dst = Frame::like(src);
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
    Ok((times.len(), times[times.len() / 2], times[0], *times.last().unwrap()))
}

/// Runs every configured point, calling `report` as each finishes.
pub fn run_kernels(cfg: &KernelBench, mut report: impl FnMut(&Sample)) -> Result<Vec<Sample>, BenchError> {
    let mut out = Vec::new();
    for &kind in &cfg.backends {
        let mut backend = backend::create(kind, &cfg.schedule)?;
        for size in &cfg.sizes {
            let (w, h) = parse_size(size)?;
            for &format in &cfg.formats {
                let mut src = Frame::new(format, w, h)?;
                fill_random(&mut src, (w * 31 + h) as u64);
                for &k in &cfg.ks {
                    for &mode in &cfg.modes {
                        let mut filter = Filter::new(library::gaussian(k, k, None, format!("gaussian:{k}"))?);
                        filter.border = cfg.border;
                        filter.mode = mode;
                        let decomposition = match filter.plan()?.decomposition {
                            Decomposition::Full => "full",
                            Decomposition::Separable { .. } => "separable",
                        };
                        let (runs, median, min, max) =
                            time_filter(backend.as_mut(), &filter, &src, cfg.warmup, cfg.runs, cfg.budget)?;
                        let s = Sample {
                            backend: backend.name(),
                            size: size.clone(),
                            width: w,
                            height: h,
                            format,
                            k,
                            decomposition: decomposition.into(),
                            runs,
                            median,
                            min,
                            max,
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

pub const TABLE_HEADER: &str = "| backend | size | format | k | path | runs | median ms | min ms | max ms | MPix/s |\n|---|---|---|---|---|---|---|---|---|---|";

pub fn table_row(s: &Sample) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.1} |",
        s.backend,
        s.size,
        s.format,
        s.k,
        s.decomposition,
        s.runs,
        ms(s.median),
        ms(s.min),
        ms(s.max),
        s.mpix_per_s()
    )
}

pub const CSV_HEADER: &str = "backend,size,width,height,format,k,path,runs,median_s,min_s,max_s,mpix_per_s";

pub fn csv_row(s: &Sample) -> String {
    format!(
        "\"{}\",{},{},{},{},{},{},{},{:.9},{:.9},{:.9},{:.3}",
        s.backend,
        s.size,
        s.width,
        s.height,
        s.format,
        s.k,
        s.decomposition,
        s.runs,
        s.median.as_secs_f64(),
        s.min.as_secs_f64(),
        s.max.as_secs_f64(),
        s.mpix_per_s()
    )
}
