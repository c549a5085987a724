//! `convflow bench …`: filter-only kernel times, the pipeline's sustained rate, the experiment
//! suite and its charts. Output files (CSV, JSON, charts) are checked before anything is
//! measured and written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use convflow::backend::{self, cpu_par, BackendKind, Schedule};
use convflow::bench::{self, KernelBench};
use convflow::io::guard;

use super::args::{BenchKernelsArgs, BenchPipelineArgs, GpuArgs, SuiteArgs};
use super::filter::check_file_output;
use super::usage;

pub fn kernels(a: BenchKernelsArgs) -> Result<()> {
    check_outputs(&[("csv", &a.csv)])?;
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

pub fn pipeline(a: BenchPipelineArgs) -> Result<()> {
    check_outputs(&[("csv", &a.csv)])?;
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

/// Checks the files a benchmark will write before it measures anything: each one's directory
/// exists, none is a directory, and no two are the same file.
fn check_outputs(files: &[(&str, &Option<PathBuf>)]) -> Result<()> {
    let mut outputs = Vec::new();
    for (what, path) in files {
        if let Some(p) = path {
            check_file_output(what, p)?;
            outputs.push(guard::Output::File { what, path: p });
        }
    }
    guard::check(&guard::Inputs::new(), &outputs).map_err(usage)
}

/// Writes a CSV file: the header line, then one line per row.
fn write_csv(path: &Path, header: &str, rows: impl Iterator<Item = String>) -> Result<()> {
    let mut text = String::from(header);
    for r in rows {
        text.push('\n');
        text.push_str(&r);
    }
    text.push('\n');
    convflow::io::atomic::write_file(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

pub fn suite(name: &str, a: SuiteArgs) -> Result<()> {
    use convflow::bench::suite;
    let experiments: Vec<&str> = if name == "all" {
        suite::EXPERIMENTS.to_vec()
    } else {
        vec![name]
    };
    // Check output paths before spending minutes measuring.
    check_outputs(&[("csv", &a.csv), ("json", &a.json)])?;
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
        let text = text + "\n";
        convflow::io::atomic::write_file(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
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
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

pub fn plot(from: &Path, dir: &Path) -> Result<()> {
    use convflow::bench::suite;
    let mut inputs = guard::Inputs::new();
    inputs.add(from);
    let charts = |n: &std::ffi::OsStr| n.to_str().is_some_and(|n| n.ends_with(".svg") || n.ends_with(".png"));
    let out = guard::Output::Dir {
        what: "chart",
        dir,
        writes: &charts,
    };
    guard::check(&inputs, &[out]).map_err(usage)?;
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
