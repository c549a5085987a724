//! Benchmarks (`convflow bench …`): [`kernels`] (filter-only time per backend, CUDA variant,
//! frame size, format, kernel size and decomposition), [`pipeline`] (sustained fps through the
//! whole pipeline next to the measured host↔device bandwidth) and [`suite`] (the classic
//! experiments of the literature, their rows and [`plot`] charts).
//!
//! The runner pieces they share live here. Method: random input (never zeros), buffers
//! allocated once, `warmup` untimed runs, then timed runs until `runs` are done or the point's
//! time budget is spent (at least one); the median is reported with min and max. Backends that
//! measure themselves ([`crate::backend::Measure`], CUDA events) report kernel-only time (the
//! frame is uploaded once, outside the timed region); CPU backends are synchronous, so a wall
//! clock around `filter_frame` measures them. Rows are written as CSV through `serde`.

pub mod kernels;
pub mod pipeline;
#[cfg(feature = "cli")]
pub mod plot;
pub mod suite;

use std::time::{Duration, Instant};

use crate::backend::{Backend, BackendError, DeviceClock};
use crate::filter::{FilterError, Plan};
use crate::frame::Frame;

pub use kernels::{run_kernels, KernelBench, Sample};
pub use pipeline::{measure_links, run_pipeline, PipelineBench, PipelineSample};

/// Why a benchmark could not run or record its rows.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A backend could not be created or failed while filtering.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A kernel spec or plan was refused.
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// A frame size that [`parse_size`] does not accept (holds it, quoted).
    #[error("bad frame size '{0}' (use vga, 720p, 1080p, 1440p, 4k, 8k, 10k or WxH)")]
    Size(String),
    /// A test frame could not be built.
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    /// Writing a CSV row failed.
    #[error("writing CSV: {0}")]
    Csv(#[from] csv::Error),
    /// Anything else, as a message: a pipeline run, a chart directory, a bad variant name.
    #[error("{0}")]
    Run(String),
}

/// Parses `vga`, `720p`, `1080p`, `1440p`, `4k`, `8k`, `10k` or `WxH`.
pub fn parse_size(s: &str) -> Result<(usize, usize), BenchError> {
    let bad = || BenchError::Size(crate::quote::quote(s));
    Ok(match s.to_ascii_lowercase().as_str() {
        "vga" => (640, 480),
        "720p" => (1280, 720),
        "1080p" | "fhd" => (1920, 1080),
        "1440p" | "qhd" => (2560, 1440),
        "4k" => (3840, 2160),
        "8k" => (7680, 4320),
        "10k" => (10240, 4320),
        other => {
            let (w, h) = other.split_once('x').ok_or_else(bad)?;
            let w: usize = w.parse().map_err(|_| bad())?;
            let h: usize = h.parse().map_err(|_| bad())?;
            if w == 0 || h == 0 || w > crate::frame::MAX_SIDE || h > crate::frame::MAX_SIDE {
                return Err(bad());
            }
            (w, h)
        }
    })
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

/// How a time was taken.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Clock {
    /// Device kernel time from CUDA events, each batch of passes queued whole before it ran
    /// (back to back on the device, inputs not in the cache).
    Events,
    /// Device kernel time from CUDA events, where the device may have waited for the host
    /// between passes (a path that waits for its own kernels, as the texture variant).
    EventsHostPaced,
    /// Host wall clock around a synchronous call.
    Wall,
    /// Wall clock on a strip of rows, scaled to the frame (cpu-seq on big frames).
    WallSampled,
    /// Sustained time per frame through the pipeline after its warm-up.
    WallSteady,
}

/// Times `backend` running `plan` on `src`: device events when the backend measures itself,
/// else the wall clock. Returns the clock and the sorted times.
pub fn time_filter(
    backend: &mut dyn Backend,
    plan: &Plan,
    src: &Frame,
    warmup: usize,
    runs: usize,
    budget: Duration,
) -> Result<(Clock, Vec<Duration>), BenchError> {
    let mut dst = Frame::like(src);
    if let Some(m) = backend.measure() {
        let mut t = m.kernel_times(
            plan,
            src,
            &mut dst,
            warmup,
            runs.max(1),
            budget.as_secs_f64(),
        )?;
        t.times.sort_by(|a, b| a.total_cmp(b));
        let clock = match t.clock {
            DeviceClock::Held => Clock::Events,
            DeviceClock::HostPaced => Clock::EventsHostPaced,
        };
        return Ok((
            clock,
            t.times.into_iter().map(Duration::from_secs_f64).collect(),
        ));
    }
    for _ in 0..warmup {
        backend.filter_frame(plan, src, &mut dst)?;
    }
    let start = Instant::now();
    let mut times = Vec::with_capacity(runs);
    while times.len() < runs.max(1) && (times.is_empty() || start.elapsed() < budget) {
        let t = Instant::now();
        backend.filter_frame(plan, src, &mut dst)?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok((Clock::Wall, times))
}

pub use crate::stats::{median_duration, median_of_sorted};

/// Rows as CSV text: a header from the row type's field names, then one line per row.
pub fn csv_bytes<T: serde::Serialize>(rows: &[T]) -> Result<Vec<u8>, BenchError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    w.into_inner().map_err(|e| BenchError::Run(e.to_string()))
}
