//! The benchmark suite: the classic experiments of the parallel-convolution literature in one
//! command (`convflow bench <experiment>`, `convflow bench all`), as rows with one schema,
//! markdown tables, CSV/JSON with the machine's metadata, and charts.
//!
//! Method (also printed with every run): random 8-bit input (never zeros), buffers allocated
//! once, `warmup` untimed passes, then timed passes until `runs` are done or the point's time
//! budget is spent (at least one); the median is reported with min and max. GPU kernel times come
//! from CUDA events around the kernels only; "total" rows time a whole `filter_frame` (upload,
//! kernels, download) with the wall clock, and carry the per-frame device split from events.
//! cpu-seq on large frames is sampled: a strip of rows costing about 5·10⁷ multiply-adds is timed
//! and the time scaled by the row count (clock `wall-sampled`). `bench all` gives each experiment
//! an even share of the budget left; points past an experiment's share are skipped and listed. Speedups divide the cpu-seq (or cpu-par) time of the same frame and kernel by the row's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{fill_random, parse_size, plot, time_filter, BenchError};
use crate::backend::{self, Backend, BackendKind, Schedule, Support};
use crate::filter::{library, Filter, Mode};
use crate::frame::{Frame, PixelFormat};

/// Experiment names, in the order `bench all` runs them.
pub const EXPERIMENTS: [&str; 8] = [
    "separable",
    "threads",
    "memory",
    "blocks",
    "resolution",
    "big-kernels",
    "pinned",
    "pipeline",
];

#[derive(Clone, Debug)]
pub struct SuiteConfig {
    /// Parallel backends to measure (cpu-par, cuda); cpu-seq is always the baseline.
    pub backends: Vec<BackendKind>,
    pub quick: bool,
    /// Time budget of the whole run (split evenly over the experiments run).
    pub budget: Duration,
    pub warmup: usize,
    pub runs: usize,
    /// cpu-par threads for the experiments other than `threads` (0 = one per logical CPU).
    pub threads: usize,
    pub device: usize,
}

/// One measured point. Times are per frame.
#[derive(Clone, Debug)]
pub struct Row {
    pub experiment: &'static str,
    /// cpu-seq, cpu-par or cuda.
    pub backend: String,
    /// CUDA variant, "-" for CPU backends.
    pub variant: String,
    /// cpu-par worker threads (1 for cpu-seq, 0 for cuda).
    pub threads: usize,
    /// CUDA block shape, or "default".
    pub block: String,
    /// What is timed: "kernel" (device events), "compute" (CPU wall), "total" (upload + kernels
    /// + download, wall), or a pipeline schedule ("overlap", "sync", "host").
    pub measure: String,
    /// "pinned", "pageable" or "-".
    pub memory: String,
    pub clock: String,
    pub size: String,
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    pub kernel: String,
    pub path: String,
    pub k: usize,
    pub runs: usize,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Device split of a total: upload, kernels, download (µs per frame).
    pub split: Option<(f64, f64, f64)>,
    pub speedup_seq: Option<f64>,
    pub speedup_par: Option<f64>,
    /// Parallel efficiency (threads experiment): speedup over 1 thread / threads.
    pub efficiency: Option<f64>,
}

impl Row {
    pub fn mpix_per_s(&self) -> f64 {
        (self.width * self.height) as f64 / self.median_us.max(1e-9)
    }
    pub fn fps(&self) -> f64 {
        1e6 / self.median_us.max(1e-9)
    }
    fn label(&self) -> String {
        match self.backend.as_str() {
            "cuda" => format!("cuda {}", self.variant),
            "cpu-par" => format!("cpu-par {}t", self.threads),
            b => b.to_string(),
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Default)]
pub struct SuiteResult {
    pub rows: Vec<Row>,
    /// Points left out, with why (no GPU, budget spent).
    pub skipped: Vec<String>,
    pub charts: Vec<PathBuf>,
}

pub const CSV_HEADER: &str = "experiment,backend,variant,threads,block,measure,memory,clock,size,width,height,format,kernel,path,k,runs,median_us,min_us,max_us,upload_us,kernel_us,download_us,mpix_per_s,fps,speedup_vs_cpu_seq,speedup_vs_cpu_par,efficiency";

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x:.4}"))
}

pub fn csv_row(r: &Row) -> String {
    let sp = |i: usize| r.split.map(|s| [s.0, s.1, s.2][i]);
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{:.3},{:.3},{},{},{}",
        r.experiment,
        r.backend,
        r.variant,
        r.threads,
        r.block,
        r.measure,
        r.memory,
        r.clock,
        r.size,
        r.width,
        r.height,
        r.format,
        r.kernel,
        r.path,
        r.k,
        r.runs,
        r.median_us,
        r.min_us,
        r.max_us,
        opt(sp(0)),
        opt(sp(1)),
        opt(sp(2)),
        r.mpix_per_s(),
        r.fps(),
        opt(r.speedup_seq),
        opt(r.speedup_par),
        opt(r.efficiency)
    )
}

pub fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "experiment": r.experiment,
        "backend": r.backend,
        "variant": r.variant,
        "threads": r.threads,
        "block": r.block,
        "measure": r.measure,
        "memory": r.memory,
        "clock": r.clock,
        "size": r.size,
        "width": r.width,
        "height": r.height,
        "format": r.format.name(),
        "kernel": r.kernel,
        "path": r.path,
        "k": r.k,
        "runs": r.runs,
        "median_us": r.median_us,
        "min_us": r.min_us,
        "max_us": r.max_us,
        "split_us": r.split.map(|s| serde_json::json!({"upload": s.0, "kernel": s.1, "download": s.2})),
        "mpix_per_s": r.mpix_per_s(),
        "fps": r.fps(),
        "speedup_vs_cpu_seq": r.speedup_seq,
        "speedup_vs_cpu_par": r.speedup_par,
        "efficiency": r.efficiency,
    })
}

/// A row back from [`row_json`] (to draw charts from a saved run).
pub fn row_from_json(v: &serde_json::Value) -> Option<Row> {
    let st = |k: &str| v[k].as_str().map(str::to_string);
    let num = |k: &str| v[k].as_f64();
    let split = v["split_us"].as_object().and_then(|o| {
        Some((
            o.get("upload")?.as_f64()?,
            o.get("kernel")?.as_f64()?,
            o.get("download")?.as_f64()?,
        ))
    });
    let experiment = EXPERIMENTS.into_iter().find(|e| v["experiment"] == *e)?;
    Some(Row {
        experiment,
        backend: st("backend")?,
        variant: st("variant")?,
        threads: v["threads"].as_u64()? as usize,
        block: st("block")?,
        measure: st("measure")?,
        memory: st("memory")?,
        clock: st("clock")?,
        size: st("size")?,
        width: v["width"].as_u64()? as usize,
        height: v["height"].as_u64()? as usize,
        format: st("format")?.parse().ok()?,
        kernel: st("kernel")?,
        path: st("path")?,
        k: v["k"].as_u64()? as usize,
        runs: v["runs"].as_u64()? as usize,
        median_us: num("median_us")?,
        min_us: num("min_us")?,
        max_us: num("max_us")?,
        split,
        speedup_seq: num("speedup_vs_cpu_seq"),
        speedup_par: num("speedup_vs_cpu_par"),
        efficiency: num("efficiency"),
    })
}

pub const TABLE_HEADER: &str = "| backend | threads | block | measure | memory | size | format | kernel | path | k | runs | median µs | min µs | max µs | MPix/s | × cpu-seq | × cpu-par | efficiency |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

pub fn table_row(r: &Row) -> String {
    let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let name = if r.backend == "cuda" {
        format!("cuda {}", r.variant)
    } else {
        r.backend.clone()
    };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
        r.threads,
        r.block,
        r.measure,
        r.memory,
        r.size,
        r.format,
        r.kernel,
        r.path,
        r.k,
        r.runs,
        r.median_us,
        r.min_us,
        r.max_us,
        r.mpix_per_s(),
        x(r.speedup_seq),
        x(r.speedup_par),
        x(r.efficiency)
    )
}

/// The methodology paragraph printed with every run.
pub const METHOD: &str = "Method: random 8-bit frames; warm-up passes, then the median of N timed passes (min and max \
kept) within a per-point time budget (at least one pass). cuda 'kernel' rows: CUDA events around the kernels only \
(frame uploaded once); 'total' rows: wall clock around upload + kernels + download, with the device split from events; \
CPU rows: wall clock. cpu-seq on large frames is sampled (a strip of rows timed and scaled by the row count; clock \
'wall-sampled'). Pipeline rows: sustained time per frame after the warm-up through synthetic source -> null sink.";

/// Grids per experiment, full or quick.
struct Grid {
    sizes: Vec<&'static str>,
    ks: Vec<usize>,
}

fn grid(experiment: &str, quick: bool) -> Grid {
    let g = |sizes: Vec<&'static str>, ks: Vec<usize>| Grid { sizes, ks };
    match (experiment, quick) {
        ("separable", false) => g(vec!["300x200", "2048x1080", "8k"], vec![3, 5, 7, 9, 11, 13, 15]),
        ("separable", true) => g(vec!["300x200", "320x240"], vec![3, 7]),
        ("threads", false) => g(vec!["720p", "1080p", "1440p", "4k"], vec![3, 5, 7]),
        ("threads", true) => g(vec!["320x240"], vec![3]),
        ("memory", false) => g(vec!["1080p", "4k"], vec![3, 7, 15]),
        ("memory", true) => g(vec!["320x240"], vec![3]),
        ("blocks", false) => g(vec!["4k"], vec![7]),
        ("blocks", true) => g(vec!["320x240"], vec![3]),
        ("resolution", false) => g(
            vec!["vga", "800x600", "1024x768", "1080p", "1440p", "4k", "8k", "10k"],
            (1..=32).collect(),
        ),
        ("resolution", true) => g(vec!["vga", "800x600"], vec![1, 2, 3, 5]),
        ("big-kernels", false) => g(vec!["4000x2000", "6000x4000", "8000x6000"], vec![7, 13, 19, 25]),
        ("big-kernels", true) => g(vec!["400x200"], vec![7, 13]),
        ("pinned", false) => g(vec!["720p", "1080p", "4k", "8k"], vec![5]),
        ("pinned", true) => g(vec!["320x240"], vec![5]),
        ("pipeline", false) => g(vec!["1080p", "4k"], vec![3, 15]),
        (_, _) => g(vec!["320x240"], vec![3]),
    }
}

/// The CUDA variants and the path each runs (direct variants: the full 2D kernel).
const VARIANTS: [(&str, Mode); 8] = [
    ("global", Mode::Full),
    ("constant", Mode::Full),
    ("shared", Mode::Full),
    ("shared-constant", Mode::Full),
    ("texture", Mode::Full),
    ("separable-global", Mode::Separable),
    ("separable-shared", Mode::Separable),
    ("fast", Mode::Auto),
];

/// Creates backends on demand and keeps them (CUDA modules stay compiled across points).
struct Runner {
    cfg: SuiteConfig,
    cache: BTreeMap<String, Box<dyn Backend>>,
    cuda: bool,
    started: Instant,
    share: Duration,
    result: SuiteResult,
}

struct Point<'a> {
    experiment: &'static str,
    size: &'a str,
    format: PixelFormat,
    kernel: &'a str,
    mode: Mode,
    k: usize,
}

impl<'a> Point<'a> {
    /// A gray-frame point (most experiments use gray frames).
    fn gray(experiment: &'static str, size: &'a str, kernel: &'a str, mode: Mode, k: usize) -> Self {
        Point {
            experiment,
            size,
            format: PixelFormat::Gray8,
            kernel,
            mode,
            k,
        }
    }
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

    fn filter(p: &Point<'_>) -> Result<Filter, BenchError> {
        let kernel = match p.kernel {
            "log" => library::log(p.k, None, format!("log:{}", p.k))?,
            _ => library::gaussian(p.k, p.k, None, format!("gaussian:{}", p.k))?,
        };
        let mut f = Filter::new(kernel);
        f.mode = p.mode;
        Ok(f)
    }

    fn frame(p: &Point<'_>) -> Result<Frame, BenchError> {
        let (w, h) = parse_size(p.size)?;
        let mut f = Frame::new(p.format, w, h)?;
        fill_random(&mut f, (w * 131 + h * 7 + p.k) as u64);
        Ok(f)
    }

    fn base_row(p: &Point<'_>, f: &Frame, path: &str) -> Row {
        Row {
            experiment: p.experiment,
            backend: String::new(),
            variant: "-".into(),
            threads: 0,
            block: "default".into(),
            measure: String::new(),
            memory: "-".into(),
            clock: String::new(),
            size: p.size.to_string(),
            width: f.width(),
            height: f.height(),
            format: p.format,
            kernel: p.kernel.to_string(),
            path: path.to_string(),
            k: p.k,
            runs: 0,
            median_us: 0.0,
            min_us: 0.0,
            max_us: 0.0,
            split: None,
            speedup_seq: None,
            speedup_par: None,
            efficiency: None,
        }
    }

    /// Times one CPU or CUDA (kernel-only) point; cpu-seq large frames are sampled.
    fn measure(&mut self, p: &Point<'_>, key: &str, kind: BackendKind, schedule: Schedule) -> Result<(), BenchError> {
        let Some(budget) = self.point_budget() else {
            self.skip(
                p.experiment,
                format!("{key} {} {}:{}: budget spent", p.size, p.kernel, p.k),
            );
            return Ok(());
        };
        let (warmup, runs) = (self.cfg.warmup, self.cfg.runs);
        let threads = schedule.threads;
        let variant = schedule.variant_name();
        let block = schedule.block;
        let filter = Self::filter(p)?;
        let full = Self::frame(p)?;
        let b = self.backend(key, kind, schedule)?;
        let support = b.support();
        if matches!(
            (support, p.mode),
            (Support::FullOnly, Mode::Separable) | (Support::SeparableOnly, Mode::Full)
        ) {
            return Ok(());
        }
        let plan = filter.plan_for(support)?;
        let path = plan.decomposition.to_string();
        // cpu-seq: time a strip of rows when the whole frame would take long.
        let taps = match plan.decomposition {
            crate::filter::Decomposition::Full => p.k * p.k,
            crate::filter::Decomposition::Separable { .. } => 2 * p.k,
        };
        let cost = (full.width() * full.height() * taps) as f64;
        let strip = if kind == BackendKind::CpuSeq && cost > 5e7 {
            Some(((5e7 / (full.width() * taps) as f64) as usize).clamp(16, full.height()))
        } else {
            None
        };
        let src = match strip {
            Some(rows) => {
                let mut f = Frame::new(p.format, full.width(), rows)?;
                fill_random(&mut f, 7);
                f
            }
            None => full.clone(),
        };
        let (clock, times) = time_filter(b.as_mut(), &filter, &src, warmup, runs, budget)?;
        let scale = strip.map_or(1.0, |rows| full.height() as f64 / rows as f64);
        let us = |d: Duration| d.as_secs_f64() * 1e6 * scale;
        let mut row = Self::base_row(p, &full, &path);
        row.backend = kind.name().to_string();
        row.threads = match kind {
            BackendKind::CpuSeq => 1,
            BackendKind::CpuPar => resolve_threads(threads),
            _ => 0,
        };
        if kind == BackendKind::Cuda {
            row.variant = variant;
            row.block = block.map_or("default".into(), |(w, h)| format!("{w}x{h}"));
        }
        row.measure = if clock == "events" { "kernel" } else { "compute" }.into();
        row.clock = if strip.is_some() {
            "wall-sampled".into()
        } else {
            clock.into()
        };
        row.runs = times.len();
        row.median_us = us(times[times.len() / 2]);
        row.min_us = us(times[0]);
        row.max_us = us(*times.last().expect("one run at least"));
        self.result.rows.push(row);
        Ok(())
    }

    /// Times whole `filter_frame` calls (upload + kernels + download) on a CUDA backend with
    /// `pageable` or page-locked staging.
    fn measure_total(&mut self, p: &Point<'_>, variant: &str, pageable: bool) -> Result<(), BenchError> {
        let key = format!("cuda:{variant}:sync:{pageable}");
        let Some(budget) = self.point_budget() else {
            self.skip(p.experiment, format!("{key} {}: budget spent", p.size));
            return Ok(());
        };
        let (warmup, runs) = (self.cfg.warmup, self.cfg.runs.max(1));
        let mut schedule = self.schedule(0);
        schedule.set_variant(variant)?;
        schedule.sync = true;
        schedule.pageable = pageable;
        let filter = Self::filter(p)?;
        let src = Self::frame(p)?;
        let b = self.backend(&key, BackendKind::Cuda, schedule)?;
        let plan = filter.plan_for(b.support())?;
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
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut row = Self::base_row(p, &src, &plan.decomposition.to_string());
        row.backend = "cuda".into();
        row.variant = variant.into();
        row.measure = "total".into();
        row.memory = if pageable { "pageable" } else { "pinned" }.into();
        row.clock = "wall".into();
        row.runs = times.len();
        row.median_us = us(times[times.len() / 2]);
        row.min_us = us(times[0]);
        row.max_us = us(*times.last().expect("one run at least"));
        row.split = Some((split.0 / n, split.1 / n, split.2 / n));
        self.result.rows.push(row);
        Ok(())
    }

    fn cpu_par(&mut self, p: &Point<'_>) -> Result<(), BenchError> {
        let t = self.cfg.threads;
        self.measure(p, &format!("cpu-par:{t}"), BackendKind::CpuPar, self.schedule(t))
    }

    fn cpu_seq(&mut self, p: &Point<'_>) -> Result<(), BenchError> {
        self.measure(p, "cpu-seq", BackendKind::CpuSeq, self.schedule(1))
    }

    fn cuda_variant(&mut self, p: &Point<'_>, variant: &str, block: Option<(u32, u32)>) -> Result<(), BenchError> {
        let mut s = self.schedule(0);
        s.set_variant(variant)?;
        s.block = block;
        let key = format!("cuda:{variant}:{block:?}");
        match self.measure(p, &key, BackendKind::Cuda, s) {
            // A shape a variant cannot launch (too much shared memory, say) is a result of the
            // sweep, not a failure of the run.
            Err(e) if block.is_some() => {
                let (w, h) = block.unwrap_or_default();
                self.skip(p.experiment, format!("{variant} {w}x{h} at {} k={}: {e}", p.size, p.k));
                Ok(())
            }
            r => r,
        }
    }

    /// True when cuda runs; else records why `experiment` is left out.
    fn gpu_or_skip(&mut self, experiment: &str, why: &str) -> bool {
        let ok = self.wants(BackendKind::Cuda);
        if !ok {
            self.skip(experiment, format!("needs cuda ({why})"));
        }
        ok
    }

    fn wants(&self, kind: BackendKind) -> bool {
        self.cfg.backends.contains(&kind) && (kind != BackendKind::Cuda || self.cuda)
    }
}

fn resolve_threads(t: usize) -> usize {
    if t == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        t
    }
}

impl Schedule {
    fn variant_name(&self) -> String {
        #[cfg(feature = "cuda")]
        return self.variant.name().to_string();
        #[cfg(not(feature = "cuda"))]
        "-".to_string()
    }

    fn set_variant(&mut self, v: &str) -> Result<(), BenchError> {
        #[cfg(feature = "cuda")]
        {
            self.variant = v.parse().map_err(BenchError::Run)?;
        }
        let _ = v;
        Ok(())
    }
}

/// Runs `experiments` (names from [`EXPERIMENTS`]); rows are reported as they finish.
pub fn run(
    cfg: &SuiteConfig,
    experiments: &[&str],
    mut report: impl FnMut(&str, &[Row]),
) -> Result<SuiteResult, BenchError> {
    let cuda =
        cfg.backends.contains(&BackendKind::Cuda) && backend::create(BackendKind::Cuda, &Schedule::default()).is_ok();
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
        match e {
            "separable" => separable(&mut r)?,
            "threads" => threads(&mut r)?,
            "memory" => memory(&mut r)?,
            "blocks" => blocks(&mut r)?,
            "resolution" => resolution(&mut r)?,
            "big-kernels" => big_kernels(&mut r)?,
            "pinned" => pinned(&mut r)?,
            "pipeline" => pipeline(&mut r)?,
            other => {
                return Err(BenchError::Run(format!(
                    "unknown experiment '{other}' (expected all or one of {})",
                    EXPERIMENTS.join(", ")
                )))
            }
        }
        speedups(&mut r.result.rows[first..]);
        report(e, &r.result.rows[first..]);
    }
    Ok(r.result)
}

fn separable(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid("separable", r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            // Gaussian (rank 1, two passes) vs LoG (not separable, the full 2D kernel).
            for (kernel, mode) in [("gaussian", Mode::Separable), ("log", Mode::Full)] {
                let p = Point::gray("separable", size, kernel, mode, k);
                r.cpu_rows(&p)?;
                if r.wants(BackendKind::Cuda) {
                    for (v, m) in VARIANTS {
                        // Each variant runs the path it implements for this kernel.
                        let fits = !matches!((mode, m), (Mode::Separable, Mode::Full) | (Mode::Full, Mode::Separable));
                        if fits {
                            let p = Point {
                                mode: if m == Mode::Auto { mode } else { m },
                                ..p
                            };
                            r.cuda_variant(&p, v, None)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn threads(r: &mut Runner) -> Result<(), BenchError> {
    if !r.cfg.backends.contains(&BackendKind::CpuPar) {
        r.skip("threads", "needs cpu-par".into());
        return Ok(());
    }
    let g = grid("threads", r.cfg.quick);
    let cores = resolve_threads(0);
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t < cores)
        .collect();
    counts.push(cores);
    counts.push(2 * cores);
    if r.cfg.quick {
        counts = vec![1, 2];
    }
    counts.dedup();
    for size in &g.sizes {
        for &k in &g.ks {
            let p = Point::gray("threads", size, "gaussian", Mode::Full, k);
            r.cpu_seq(&p)?;
            for &t in &counts {
                r.measure(&p, &format!("cpu-par:{t}"), BackendKind::CpuPar, r.schedule(t))?;
            }
        }
    }
    Ok(())
}

fn memory(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid("memory", r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            let p = Point::gray("memory", size, "gaussian", Mode::Full, k);
            r.cpu_rows(&p)?;
            if r.wants(BackendKind::Cuda) {
                for (v, m) in VARIANTS {
                    let p = Point { mode: m, ..p };
                    r.cuda_variant(&p, v, None)?;
                }
                for pageable in [false, true] {
                    r.measure_total(&Point { mode: Mode::Auto, ..p }, "fast", pageable)?;
                }
            }
        }
    }
    Ok(())
}

fn blocks(r: &mut Runner) -> Result<(), BenchError> {
    if !r.gpu_or_skip("blocks", "the block shape is a GPU launch parameter") {
        return Ok(());
    }
    let g = grid("blocks", r.cfg.quick);
    let square: Vec<u32> = if r.cfg.quick {
        vec![8, 16]
    } else {
        vec![8, 12, 16, 20, 24, 28, 32]
    };
    let linear: Vec<u32> = if r.cfg.quick {
        vec![64, 256]
    } else {
        vec![32, 64, 128, 256, 512, 1024]
    };
    for size in &g.sizes {
        for &k in &g.ks {
            for (v, m) in VARIANTS {
                let p = Point::gray("blocks", size, "gaussian", m, k);
                for &s in &square {
                    r.cuda_variant(&p, v, Some((s, s)))?;
                }
                for &n in &linear {
                    r.cuda_variant(&p, v, Some((n, 1)))?;
                }
            }
        }
    }
    Ok(())
}

fn resolution(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid("resolution", r.cfg.quick);
    let mut points = Vec::new();
    for size in &g.sizes {
        points.push((*size, 3usize));
    }
    // Kernel sizes 1…32 at one resolution (FHD; the first size in quick mode).
    let at = if r.cfg.quick { g.sizes[0] } else { "1080p" };
    for &k in &g.ks {
        if k != 3 || !g.sizes.contains(&at) {
            points.push((at, k));
        }
    }
    for (size, k) in points {
        let p = Point::gray("resolution", size, "gaussian", Mode::Full, k);
        r.cpu_rows(&p)?;
        if r.wants(BackendKind::Cuda) {
            r.cuda_variant(&p, "fast", None)?;
        }
    }
    Ok(())
}

fn big_kernels(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid("big-kernels", r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            let p = Point::gray("big-kernels", size, "gaussian", Mode::Full, k);
            r.cpu_rows(&p)?;
            if r.wants(BackendKind::Cuda) {
                for v in ["global", "shared", "fast"] {
                    r.cuda_variant(&p, v, None)?;
                }
            }
        }
    }
    Ok(())
}

fn pinned(r: &mut Runner) -> Result<(), BenchError> {
    if !r.gpu_or_skip("pinned", "host memory kinds matter for device copies") {
        return Ok(());
    }
    let g = grid("pinned", r.cfg.quick);
    for size in &g.sizes {
        for format in [PixelFormat::Gray8, PixelFormat::Rgb8] {
            for &k in &g.ks {
                let p = Point {
                    experiment: "pinned",
                    size,
                    format,
                    kernel: "gaussian",
                    mode: Mode::Auto,
                    k,
                };
                for pageable in [true, false] {
                    r.measure_total(&p, "fast", pageable)?;
                }
            }
        }
    }
    Ok(())
}

fn pipeline(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid("pipeline", r.cfg.quick);
    let mut backends = Vec::new();
    if r.wants(BackendKind::Cuda) {
        let mut overlap = r.schedule(0);
        overlap.pageable = false;
        let mut sync = overlap.clone();
        sync.sync = true;
        sync.pageable = true;
        backends.push((BackendKind::Cuda, overlap, "overlap".to_string()));
        backends.push((BackendKind::Cuda, sync, "sync".to_string()));
    }
    if r.wants(BackendKind::CpuPar) {
        backends.push((BackendKind::CpuPar, r.schedule(r.cfg.threads), "host".to_string()));
    }
    if backends.is_empty() {
        r.skip("pipeline", "needs cpu-par or cuda".into());
        return Ok(());
    }
    if r.point_budget().is_none() {
        r.skip("pipeline", "budget spent".into());
        return Ok(());
    }
    let cfg = super::PipelineBench {
        backends,
        sizes: g.sizes.iter().map(|s| s.to_string()).collect(),
        formats: vec![PixelFormat::Gray8, PixelFormat::Rgb8],
        ks: g.ks.clone(),
        frames: if r.cfg.quick { 40 } else { 300 },
        runs: if r.cfg.quick { 1 } else { 2 },
        inflight: 3,
    };
    for s in super::run_pipeline(&cfg, |_| {})? {
        let mut row = Row {
            experiment: "pipeline",
            backend: if s.schedule == "host" {
                "cpu-par".into()
            } else {
                "cuda".into()
            },
            variant: if s.schedule == "host" {
                "-".into()
            } else {
                "fast".into()
            },
            threads: if s.schedule == "host" {
                resolve_threads(r.cfg.threads)
            } else {
                0
            },
            block: "default".into(),
            measure: s.schedule.clone(),
            memory: match s.schedule.as_str() {
                "overlap" => "pinned".into(),
                "sync" => "pageable".into(),
                _ => "-".into(),
            },
            clock: "wall-steady".into(),
            size: s.size.clone(),
            width: s.width,
            height: s.height,
            format: s.format,
            kernel: "gaussian".into(),
            path: "auto".into(),
            k: s.k,
            runs: s.fps.len(),
            median_us: 1e6 / s.median(),
            min_us: 1e6 / s.max(),
            max_us: 1e6 / s.min(),
            split: s.device_us,
            speedup_seq: None,
            speedup_par: None,
            efficiency: None,
        };
        row.path = "separable".into();
        r.result.rows.push(row);
    }
    Ok(())
}

/// Fills speedups: against cpu-seq and the widest cpu-par of the same frame and kernel, and for
/// the threads experiment the efficiency against cpu-par on one thread. Pipeline rows compare
/// against the `sync` schedule of the same point instead (stored as speedup over cpu-seq: none).
fn speedups(rows: &mut [Row]) {
    type Key = (String, &'static str, String, usize);
    let key = |r: &Row| -> Key { (r.size.clone(), r.format.name(), r.kernel.clone(), r.k) };
    let mut seq: BTreeMap<Key, f64> = BTreeMap::new();
    let mut par: BTreeMap<Key, (usize, f64)> = BTreeMap::new();
    let mut one: BTreeMap<Key, f64> = BTreeMap::new();
    for r in rows.iter() {
        match r.backend.as_str() {
            "cpu-seq" => {
                seq.insert(key(r), r.median_us);
            }
            "cpu-par" if r.experiment != "pipeline" => {
                let e = par.entry(key(r)).or_insert((0, r.median_us));
                if r.threads >= e.0 {
                    *e = (r.threads, r.median_us);
                }
                if r.threads == 1 {
                    one.insert(key(r), r.median_us);
                }
            }
            _ => {}
        }
    }
    for r in rows.iter_mut() {
        let k = key(r);
        r.speedup_seq = seq.get(&k).map(|s| s / r.median_us);
        if r.backend != "cpu-par" {
            r.speedup_par = par.get(&k).map(|p| p.1 / r.median_us);
        }
        if r.experiment == "threads" && r.backend == "cpu-par" {
            r.efficiency = one.get(&k).map(|o| o / r.median_us / r.threads as f64);
            r.speedup_par = one.get(&k).map(|o| o / r.median_us);
        }
    }
}

/// Draws every chart the rows allow into `dir`; returns the files written.
pub fn charts(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::Run(format!("{}: {e}", dir.display())))?;
    let mut out = Vec::new();
    let mut add = |files: Result<Vec<PathBuf>, plot::PlotError>| -> Result<(), BenchError> {
        out.extend(files.map_err(|e| BenchError::Run(e.to_string()))?);
        Ok(())
    };
    let of = |e: &'static str| rows.iter().filter(move |r| r.experiment == e);
    let largest = |e: &'static str| of(e).map(|r| (r.width * r.height, r.size.clone())).max().map(|m| m.1);
    // Group rows into named series of (x, y) points.
    let series =
        |it: Vec<&Row>, name: &dyn Fn(&Row) -> String, x: &dyn Fn(&Row) -> f64, y: &dyn Fn(&Row) -> Option<f64>| {
            let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            for r in it {
                if let Some(v) = y(r) {
                    m.entry(name(r)).or_default().push((x(r), v));
                }
            }
            let mut v: Vec<(String, Vec<(f64, f64)>)> = m.into_iter().collect();
            for s in &mut v {
                s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            v
        };

    if let Some(size) = largest("separable") {
        let rows: Vec<&Row> = of("separable")
            .filter(|r| r.size == size && r.backend != "cpu-seq")
            .collect();
        let s = series(
            rows,
            &|r| format!("{} ({})", r.label(), r.kernel),
            &|r| r.k as f64,
            &|r| r.speedup_seq,
        );
        let title = format!("Speedup over cpu-seq vs kernel size, {size} gray (gaussian: separable, log: full 2D)");
        add(plot::lines(
            dir,
            "separable-speedup",
            &plot::Lines {
                title: &title,
                x_label: "kernel size k (k×k)",
                y_label: "speedup over cpu-seq (×)",
                log_x: false,
                log_y: true,
                series: s,
                reference: None,
            },
        ))?;
    }
    if of("threads").next().is_some() {
        let k = of("threads").map(|r| r.k).max().unwrap_or(3);
        let rows: Vec<&Row> = of("threads").filter(|r| r.backend == "cpu-par" && r.k == k).collect();
        let s = series(rows, &|r| r.size.clone(), &|r| r.threads as f64, &|r| r.speedup_par);
        let max_t = of("threads").map(|r| r.threads).max().unwrap_or(1) as f64;
        let cores = resolve_threads(0) as f64;
        let ideal = vec![(1.0, 1.0), (cores, cores), (max_t.max(cores), cores)];
        let title = format!("cpu-par thread scaling, {k}×{k} Gaussian (full 2D), speedup over 1 thread");
        add(plot::lines(
            dir,
            "threads-scaling",
            &plot::Lines {
                title: &title,
                x_label: "threads",
                y_label: "speedup over 1 thread (×)",
                log_x: false,
                log_y: false,
                series: s,
                reference: Some(("ideal (up to the core count)".into(), ideal)),
            },
        ))?;
    }
    if let Some(size) = largest("memory") {
        let rows: Vec<&Row> = of("memory")
            .filter(|r| r.size == size && r.backend != "cpu-seq" && r.measure != "total")
            .collect();
        let s = series(rows, &|r| r.label(), &|r| r.k as f64, &|r| r.speedup_seq);
        let title = format!("Memory variants: speedup over cpu-seq (kernel only), {size} gray Gaussian");
        add(plot::lines(
            dir,
            "memory-speedup",
            &plot::Lines {
                title: &title,
                x_label: "kernel size k",
                y_label: "speedup over cpu-seq (×)",
                log_x: false,
                log_y: true,
                series: s,
                reference: None,
            },
        ))?;
        let totals: Vec<&Row> = of("memory")
            .chain(of("pinned"))
            .filter(|r| r.split.is_some() && r.measure == "total")
            .collect();
        if !totals.is_empty() {
            let cats: Vec<String> = totals
                .iter()
                .map(|r| format!("{} {} k{} {}", r.size, r.format, r.k, r.memory))
                .collect();
            let pick = |i: usize| {
                totals
                    .iter()
                    .map(|r| r.split.map_or(0.0, |s| [s.0, s.1, s.2][i] / 1e3))
                    .collect::<Vec<f64>>()
            };
            add(plot::bars(
                dir,
                "transfer-vs-kernel",
                &plot::Bars {
                    title: "Time per frame: upload, kernels, download (CUDA events, one stream)",
                    y_label: "ms per frame",
                    categories: cats,
                    stacks: vec![
                        ("upload (H2D)".into(), pick(0)),
                        ("kernels".into(), pick(1)),
                        ("download (D2H)".into(), pick(2)),
                    ],
                },
            ))?;
        }
    }
    if of("blocks").next().is_some() {
        let rows: Vec<&Row> = of("blocks").collect();
        let s = series(
            rows,
            &|r| format!("{} {}", r.variant, if r.block.ends_with("x1") { "1D" } else { "2D" }),
            &|r| block_threads(&r.block),
            &|r| Some(r.median_us),
        );
        add(plot::lines(
            dir,
            "blocks",
            &plot::Lines {
                title: "Block-size sweep: kernel time vs threads per block (2D: s×s, 1D: n×1)",
                x_label: "threads per block",
                y_label: "kernel time µs",
                log_x: true,
                log_y: true,
                series: s,
                reference: None,
            },
        ))?;
    }
    if of("resolution").next().is_some() {
        let rows: Vec<&Row> = of("resolution").filter(|r| r.k == 3).collect();
        let s = series(rows, &|r| r.label(), &|r| (r.width * r.height) as f64 / 1e6, &|r| {
            Some(r.median_us / 1e3)
        });
        add(plot::lines(
            dir,
            "resolution",
            &plot::Lines {
                title: "Time vs resolution, 3×3 Gaussian (full 2D), gray",
                x_label: "megapixels",
                y_label: "ms per frame",
                log_x: true,
                log_y: true,
                series: s,
                reference: None,
            },
        ))?;
        let at = of("resolution").filter(|r| r.k != 3).map(|r| r.size.clone()).next();
        if let Some(at) = at {
            let rows: Vec<&Row> = of("resolution").filter(|r| r.size == at).collect();
            let s = series(rows, &|r| r.label(), &|r| r.k as f64, &|r| Some(r.median_us / 1e3));
            let title = format!("Time vs kernel size at {at} (full 2D Gaussian), gray");
            add(plot::lines(
                dir,
                "resolution-kernels",
                &plot::Lines {
                    title: &title,
                    x_label: "kernel size k",
                    y_label: "ms per frame",
                    log_x: false,
                    log_y: true,
                    series: s,
                    reference: None,
                },
            ))?;
        }
    }
    if of("big-kernels").next().is_some() {
        let rows: Vec<&Row> = of("big-kernels").filter(|r| r.backend != "cpu-seq").collect();
        let s = series(rows, &|r| format!("{} {}", r.label(), r.size), &|r| r.k as f64, &|r| {
            r.speedup_seq
        });
        add(plot::lines(
            dir,
            "big-kernels",
            &plot::Lines {
                title: "Big kernels (full 2D Gaussian): speedup over cpu-seq",
                x_label: "kernel size k",
                y_label: "speedup over cpu-seq (×)",
                log_x: false,
                log_y: true,
                series: s,
                reference: None,
            },
        ))?;
    }
    if of("pipeline").next().is_some() {
        let rows: Vec<&Row> = of("pipeline").collect();
        let cats: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {} k{} {}", r.size, r.format, r.k, r.measure))
            .collect();
        let fps: Vec<f64> = rows.iter().map(|r| r.fps()).collect();
        add(plot::bars(
            dir,
            "pipeline",
            &plot::Bars {
                title: "Sustained pipeline throughput (synthetic → null)",
                y_label: "frames per second",
                categories: cats,
                stacks: vec![("fps".into(), fps)],
            },
        ))?;
    }
    Ok(out)
}

fn block_threads(b: &str) -> f64 {
    b.split_once('x')
        .and_then(|(w, h)| Some(w.parse::<f64>().ok()? * h.parse::<f64>().ok()?))
        .unwrap_or(0.0)
}
