//! The benchmark suite: the classic experiments of the parallel-convolution literature in one
//! command (`convflow bench <experiment>`, `convflow bench all`), as rows of one schema
//! ([`rows`]), markdown tables, CSV/JSON with the machine's metadata, and charts
//! ([`charts`](mod@charts)).
//!
//! This module is the runner: backends created on demand and kept (CUDA modules stay compiled
//! across points), each point timed within its share of the budget. The experiments themselves
//! and their grids are in `experiments`. Method (also printed with every run): see
//! [`rows::METHOD`]. cpu-seq on large frames is sampled: a strip of rows costing about 5·10⁷
//! multiply-adds is timed and the time scaled by the row count (clock `wall-sampled`).
//! `bench all` gives each experiment an even share of the budget left; points past an
//! experiment's share are skipped and listed. Speedups divide the cpu-seq (or cpu-par) time of
//! the same frame and kernel by the row's.

#[cfg(feature = "cli")]
pub mod charts;
mod experiments;
pub mod rows;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{fill_random, median_duration, parse_size, time_filter, BenchError, Clock};
use crate::backend::{self, Backend, BackendKind, Schedule, Support};
use crate::filter::{library, Filter, Mode, Plan};
use crate::frame::{Frame, PixelFormat};
#[cfg(feature = "cli")]
pub use charts::charts;
pub use rows::{table_row, Experiment, Memory, Meta, Row, SuiteRun, Timed, METHOD, TABLE_HEADER};

/// How to run the suite: which backends, how long, how many runs per point.
#[derive(Clone, Debug)]
pub struct SuiteConfig {
    /// Parallel backends to measure (cpu-par, cuda); cpu-seq is always the baseline.
    pub backends: Vec<BackendKind>,
    /// Smaller grids (fewer sizes, kernels, block shapes, thread counts) for a fast pass.
    pub quick: bool,
    /// Time budget of the whole run (split evenly over the experiments run).
    pub budget: Duration,
    /// Untimed runs before each point.
    pub warmup: usize,
    /// Timed runs per point, at most (fewer once the point's share of the budget is spent).
    pub runs: usize,
    /// cpu-par threads for the experiments other than `threads` (0 = one per logical CPU).
    pub threads: usize,
    /// CUDA device ordinal.
    pub device: usize,
}

/// Everything a run produced.
#[derive(Debug, Default)]
pub struct SuiteResult {
    /// Every measured point.
    pub rows: Vec<Row>,
    /// Points left out, with why (no GPU, budget spent).
    pub skipped: Vec<String>,
    /// Chart files written (SVG and PNG); filled in by the caller from [`charts()`].
    pub charts: Vec<PathBuf>,
}

/// The CUDA variants of this build with what each runs (none without the cuda feature).
fn cuda_variants() -> Vec<(&'static str, Support)> {
    #[cfg(feature = "cuda")]
    return backend::cuda::Variant::all()
        .filter(|v| v.name() != "auto")
        .map(|v| (v.name(), v.runs()))
        .collect();
    #[cfg(not(feature = "cuda"))]
    Vec::new()
}

/// The mode a variant that runs `support` takes on a point whose own mode is `mode`: the
/// direct variants sum the full kernel, the two-pass ones the separable decomposition.
fn mode_for(support: Support, mode: Mode) -> Mode {
    match support {
        Support::FullOnly => Mode::Full,
        Support::SeparableOnly => Mode::Separable,
        Support::Both => mode,
    }
}

/// Creates backends on demand and keeps them.
struct Runner {
    cfg: SuiteConfig,
    cache: BTreeMap<String, Box<dyn Backend>>,
    cuda: bool,
    started: Instant,
    share: Duration,
    result: SuiteResult,
}

/// One point of an experiment.
#[derive(Clone, Copy)]
struct Point<'a> {
    experiment: Experiment,
    size: &'a str,
    format: PixelFormat,
    kernel: &'a str,
    mode: Mode,
    k: usize,
}

impl<'a> Point<'a> {
    /// A gray-frame point (most experiments use gray frames).
    fn gray(experiment: Experiment, size: &'a str, kernel: &'a str, mode: Mode, k: usize) -> Self {
        Point {
            experiment,
            size,
            format: PixelFormat::Gray8,
            kernel,
            mode,
            k,
        }
    }

    fn plan(&self) -> Result<Plan, BenchError> {
        let kernel = match self.kernel {
            "log" => library::log(self.k, None, format!("log:{}", self.k))?,
            _ => library::gaussian(self.k, self.k, None, format!("gaussian:{}", self.k))?,
        };
        let mut f = Filter::new(kernel);
        f.mode = self.mode;
        Ok(f.plan()?)
    }

    fn frame(&self) -> Result<Frame, BenchError> {
        let (w, h) = parse_size(self.size)?;
        let mut f = Frame::new(self.format, w, h)?;
        fill_random(&mut f, (w * 131 + h * 7 + self.k) as u64);
        Ok(f)
    }

    fn row(&self, f: &Frame, plan: &Plan) -> Row {
        let mut r = Row::new(
            self.experiment,
            self.size,
            (f.width(), f.height()),
            self.format,
        );
        r.kernel = self.kernel.to_string();
        r.path = plan.decomposition.to_string();
        r.k = self.k;
        r
    }
}

fn resolve_threads(t: usize) -> usize {
    if t == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        t
    }
}

fn us(d: Duration, scale: f64) -> f64 {
    d.as_secs_f64() * 1e6 * scale
}

impl Runner {
    /// cpu-seq, and cpu-par when asked for: the CPU rows every comparison needs.
    fn cpu_rows(&mut self, p: &Point<'_>) -> Result<(), BenchError> {
        self.cpu_seq(p)?;
        if self.wants(BackendKind::CpuPar) {
            self.cpu_par(p)?;
        }
        Ok(())
    }

    fn backend(
        &mut self,
        key: &str,
        kind: BackendKind,
        schedule: Schedule,
    ) -> Result<&mut Box<dyn Backend>, BenchError> {
        if !self.cache.contains_key(key) {
            let b = backend::create(kind, &schedule)?;
            self.cache.insert(key.to_string(), b);
        }
        Ok(self.cache.get_mut(key).expect("inserted"))
    }

    fn schedule(&self, threads: usize) -> Schedule {
        Schedule {
            threads,
            device: self.cfg.device,
            ..Schedule::default()
        }
    }

    /// A CUDA schedule for `variant` (by name, from the variant table).
    fn cuda_schedule(&self, variant: &str) -> Result<Schedule, BenchError> {
        #[cfg(feature = "cuda")]
        let s = Schedule {
            variant: variant.parse().map_err(BenchError::Run)?,
            ..self.schedule(0)
        };
        #[cfg(not(feature = "cuda"))]
        let s = {
            let _ = variant;
            self.schedule(0)
        };
        Ok(s)
    }

    /// The per-point budget, or None when the experiment's share is spent.
    fn point_budget(&self) -> Option<Duration> {
        let left = self.share.saturating_sub(self.started.elapsed());
        if left.is_zero() {
            return None;
        }
        Some(if self.cfg.quick {
            Duration::from_millis(200)
        } else {
            left.min(Duration::from_millis(1500))
        })
    }

    fn skip(&mut self, experiment: &str, what: String) {
        self.result.skipped.push(format!("{experiment}: {what}"));
    }

    /// Times one CPU or CUDA (kernel-only) point; cpu-seq large frames are sampled. A point
    /// whose plan the backend does not run is left out.
    fn measure(
        &mut self,
        p: &Point<'_>,
        key: &str,
        kind: BackendKind,
        schedule: Schedule,
    ) -> Result<(), BenchError> {
        let Some(budget) = self.point_budget() else {
            let what = format!("{key} {} {}:{}: budget spent", p.size, p.kernel, p.k);
            self.skip(p.experiment.name(), what);
            return Ok(());
        };
        let (warmup, runs) = (self.cfg.warmup, self.cfg.runs);
        let threads = schedule.threads;
        let block = schedule.block;
        let plan = p.plan()?;
        let full = p.frame()?;
        let b = self.backend(key, kind, schedule)?;
        if b.check_plan(&plan).is_err() {
            return Ok(());
        }
        // cpu-seq: time a strip of rows when the whole frame would take long.
        let taps = if plan.is_separable() {
            2 * p.k
        } else {
            p.k * p.k
        };
        let cost = (full.width() * full.height() * taps) as f64;
        let strip = (kind == BackendKind::CpuSeq && cost > 5e7)
            .then(|| ((5e7 / (full.width() * taps) as f64) as usize).clamp(16, full.height()));
        let src = match strip {
            Some(rows) => {
                let mut f = Frame::new(p.format, full.width(), rows)?;
                fill_random(&mut f, 7);
                f
            }
            None => full.clone(),
        };
        let (clock, times) = time_filter(b.as_mut(), &plan, &src, warmup, runs, budget)?;
        let scale = strip.map_or(1.0, |rows| full.height() as f64 / rows as f64);
        let mut row = p.row(&full, &plan);
        row.backend = kind;
        row.threads = match kind {
            BackendKind::CpuSeq => 1,
            BackendKind::CpuPar => resolve_threads(threads),
            _ => 0,
        };
        if kind == BackendKind::Cuda {
            row.variant = key.split(':').nth(1).unwrap_or("-").to_string();
            row.block = block.map_or("default".into(), |(w, h)| format!("{w}x{h}"));
        }
        row.measure = if matches!(clock, Clock::Events | Clock::EventsHostPaced) {
            Timed::Kernel
        } else {
            Timed::Compute
        };
        row.clock = if strip.is_some() {
            Clock::WallSampled
        } else {
            clock
        };
        let row = row.with_times(
            times.len(),
            us(median_duration(&times), scale),
            us(times[0], scale),
            us(*times.last().expect("one run at least"), scale),
        );
        self.result.rows.push(row);
        Ok(())
    }

    /// Times whole `filter_frame` calls (upload + kernels + download) on a CUDA backend with
    /// `pageable` or page-locked staging.
    fn measure_total(
        &mut self,
        p: &Point<'_>,
        variant: &str,
        pageable: bool,
    ) -> Result<(), BenchError> {
        let key = format!("cuda:{variant}:sync:{pageable}");
        let Some(budget) = self.point_budget() else {
            self.skip(
                p.experiment.name(),
                format!("{key} {}: budget spent", p.size),
            );
            return Ok(());
        };
        let (warmup, runs) = (self.cfg.warmup, self.cfg.runs.max(1));
        let mut schedule = self.cuda_schedule(variant)?;
        schedule.sync = true;
        schedule.pageable = pageable;
        let plan = p.plan()?;
        let src = p.frame()?;
        let b = self.backend(&key, BackendKind::Cuda, schedule)?;
        let mut dst = Frame::like(&src);
        for _ in 0..warmup {
            b.filter_frame(&plan, &src, &mut dst)?;
        }
        let start = Instant::now();
        let mut times = Vec::new();
        let mut split = (0.0, 0.0, 0.0);
        while times.len() < runs && (times.is_empty() || start.elapsed() < budget) {
            let t = Instant::now();
            b.filter_frame(&plan, &src, &mut dst)?;
            times.push(t.elapsed());
            if let Some(d) = b.last_times() {
                split.0 += d.h2d.as_secs_f64() * 1e6;
                split.1 += d.kernel.as_secs_f64() * 1e6;
                split.2 += d.d2h.as_secs_f64() * 1e6;
            }
        }
        let n = times.len() as f64;
        times.sort();
        let mut row = p.row(&src, &plan);
        row.backend = BackendKind::Cuda;
        row.variant = variant.into();
        row.measure = Timed::Total;
        row.memory = if pageable {
            Memory::Pageable
        } else {
            Memory::Pinned
        };
        row.clock = Clock::Wall;
        (row.upload_us, row.kernel_us, row.download_us) =
            (Some(split.0 / n), Some(split.1 / n), Some(split.2 / n));
        let row = row.with_times(
            times.len(),
            us(median_duration(&times), 1.0),
            us(times[0], 1.0),
            us(*times.last().expect("one run at least"), 1.0),
        );
        self.result.rows.push(row);
        Ok(())
    }

    fn cpu_par(&mut self, p: &Point<'_>) -> Result<(), BenchError> {
        let t = self.cfg.threads;
        self.measure(
            p,
            &format!("cpu-par:{t}"),
            BackendKind::CpuPar,
            self.schedule(t),
        )
    }

    fn cpu_seq(&mut self, p: &Point<'_>) -> Result<(), BenchError> {
        self.measure(p, "cpu-seq", BackendKind::CpuSeq, self.schedule(1))
    }

    /// A CUDA variant on `p` (in the mode it runs), with an optional block shape.
    fn cuda_variant(
        &mut self,
        p: &Point<'_>,
        variant: &str,
        support: Support,
        block: Option<(u32, u32)>,
    ) -> Result<(), BenchError> {
        let mut s = self.cuda_schedule(variant)?;
        s.block = block;
        let key = format!("cuda:{variant}:{block:?}");
        let p = Point {
            mode: mode_for(support, p.mode),
            ..*p
        };
        match self.measure(&p, &key, BackendKind::Cuda, s) {
            // A shape a variant cannot launch (too much shared memory, say) is a result of the
            // sweep, not a failure of the run.
            Err(e) if block.is_some() => {
                let (w, h) = block.unwrap_or_default();
                let what = format!("{variant} {w}x{h} at {} k={}: {e}", p.size, p.k);
                self.skip(p.experiment.name(), what);
                Ok(())
            }
            r => r,
        }
    }

    /// True when cuda runs; else records why `experiment` is left out.
    fn gpu_or_skip(&mut self, experiment: Experiment, why: &str) -> bool {
        let ok = self.wants(BackendKind::Cuda);
        if !ok {
            self.skip(experiment.name(), format!("needs cuda ({why})"));
        }
        ok
    }

    fn wants(&self, kind: BackendKind) -> bool {
        self.cfg.backends.contains(&kind) && (kind != BackendKind::Cuda || self.cuda)
    }
}

/// Runs `experiments`; rows are reported as each experiment finishes.
pub fn run(
    cfg: &SuiteConfig,
    experiments: &[Experiment],
    mut report: impl FnMut(Experiment, &[Row]),
) -> Result<SuiteResult, BenchError> {
    let cuda = cfg.backends.contains(&BackendKind::Cuda)
        && backend::create(BackendKind::Cuda, &Schedule::default()).is_ok();
    let mut r = Runner {
        cfg: cfg.clone(),
        cache: BTreeMap::new(),
        cuda,
        started: Instant::now(),
        share: Duration::ZERO,
        result: SuiteResult::default(),
    };
    if cfg.backends.contains(&BackendKind::Cuda) && !cuda {
        r.skip("all", "cuda: no usable GPU; GPU rows left out".into());
    }
    let begin = Instant::now();
    for (i, &e) in experiments.iter().enumerate() {
        // Time an experiment does not use passes to the ones after it.
        r.share = cfg.budget.saturating_sub(begin.elapsed()) / (experiments.len() - i) as u32;
        r.started = Instant::now();
        let first = r.result.rows.len();
        experiments::run(&mut r, e)?;
        experiments::speedups(&mut r.result.rows[first..]);
        report(e, &r.result.rows[first..]);
    }
    Ok(r.result)
}
