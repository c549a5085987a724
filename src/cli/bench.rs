//! `convflow bench …`: filter-only kernel times, the pipeline's sustained rate, the experiment
//! suite and its charts. Output files (CSV, JSON, charts) are checked before anything is
//! measured and written atomically; tables go to stdout as points finish.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use convflow::backend::{self, BackendKind, Schedule};
use convflow::bench::{self, kernels, pipeline, suite, KernelBench};
use convflow::filter::Mode;
use convflow::io::{atomic, guard};

use super::args::{BenchKernelsArgs, BenchPipelineArgs, GpuArgs, SuiteArgs, VariantArg};
use super::filter::check_file_output;
use super::usage;

/// The schedule of `a`'s CUDA options for `variant`.
fn gpu(block: Option<(u32, u32)>, device: usize) -> GpuArgs {
    GpuArgs {
        variant: VariantArg::default(),
        block,
        device,
        devices: None,
        pageable: false,
        sync: false,
    }
}

pub fn kernels(a: BenchKernelsArgs) -> Result<()> {
    check_outputs(&[("csv", &a.csv)])?;
    for s in &a.sizes {
        bench::parse_size(s)?;
    }
    if a.ks.contains(&0) {
        bail!("kernel size 0 in --ks");
    }
    // A family that is not rank 1 (`log`) has no separable plan to measure.
    let rank_one = |k| a.family.kernel(k).is_ok_and(|k| k.is_separable());
    if a.modes.iter().all(|&m| m == Mode::Separable) && !a.ks.iter().any(|&k| rank_one(k)) {
        return Err(usage(format!(
            "--family {} has no separable kernels at these sizes: use --modes full or auto",
            a.family
        )));
    }
    let g = gpu(a.block, a.device);
    let mut backends = Vec::new();
    for &kind in &a.backend {
        if kind == BackendKind::Cuda {
            backends.extend(a.variants.iter().map(|&v| (kind, g.schedule(a.threads, v))));
        } else {
            backends.push((kind, g.schedule(a.threads, VariantArg::default())));
        }
    }
    let cfg = KernelBench {
        backends,
        sizes: a.sizes,
        formats: a.formats,
        ks: a.ks,
        family: a.family,
        modes: a.modes,
        border: a.border,
        alpha: a.alpha,
        warmup: a.warmup,
        runs: a.runs,
        budget: Duration::from_secs_f64(a.budget.max(0.0)),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", kernels::TABLE_HEADER)?;
    let mut write_err = None;
    let samples = bench::run_kernels(&cfg, |s| {
        if let Err(e) = writeln!(out, "{}", kernels::table_row(s)).and_then(|()| out.flush()) {
            write_err.get_or_insert(e);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if let Some(path) = a.csv {
        let rows: Vec<_> = samples.iter().map(|s| s.row()).collect();
        write_file(&path, &bench::csv_bytes(&rows)?)?;
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
    let g = gpu(None, a.device);
    let mut backends = Vec::new();
    for &kind in &a.backend {
        if kind != BackendKind::Cuda {
            backends.push((
                kind,
                g.schedule(a.threads, VariantArg::default()),
                "host".to_string(),
            ));
            continue;
        }
        for &copies in &a.schedules {
            let schedule = copies.apply(g.schedule(a.threads, a.variant));
            backends.push((kind, schedule, <&str>::from(copies).to_string()));
        }
    }
    let cfg = bench::PipelineBench {
        backends,
        sizes: a.sizes,
        formats: a.formats,
        ks: a.ks,
        frames: a.frames,
        runs: a.runs,
        inflight: a.inflight.map(|n| n as usize),
        devices: match &a.devices {
            // The first 1, 2, … of the GPUs, for the scaling.
            Some(d) => {
                let list = d.resolve()?;
                (1..=list.len()).map(|n| list[..n].to_vec()).collect()
            }
            None => Vec::new(),
        },
    };
    let links = bench::measure_links(&cfg)?;
    let link = |gpus: usize| links.iter().find(|l| l.0 == gpus).map(|l| &l.1);
    let mut out = std::io::stdout().lock();
    for (gpus, l) in &links {
        let which = match gpus {
            1 => "host<->device bandwidth".to_string(),
            n => format!("with {n} GPUs copying at once, in all"),
        };
        writeln!(
            out,
            "{which} (page-locked, 256 MiB, median of 5): H2D {:.1} GB/s, D2H {:.1} GB/s, both \
             at once {:.1} GB/s",
            l.h2d / 1e9,
            l.d2h / 1e9,
            l.duplex / 1e9
        )?;
    }
    writeln!(out)?;
    writeln!(out, "{}", pipeline::TABLE_HEADER)?;
    let mut write_err = None;
    let samples = bench::run_pipeline(&cfg, |s| {
        if let Err(e) =
            writeln!(out, "{}", pipeline::table_row(s, link(s.gpus))).and_then(|()| out.flush())
        {
            write_err.get_or_insert(e);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    if let Some(path) = a.csv {
        let rows: Vec<_> = samples.iter().map(|s| s.row(link(s.gpus))).collect();
        write_file(&path, &bench::csv_bytes(&rows)?)?;
    }
    Ok(())
}

/// Checks the files a benchmark will write before it measures anything: each one's directory
/// exists, none is a directory, and no two are the same file.
fn check_outputs(files: &[(&str, &Option<PathBuf>)]) -> Result<()> {
    check_outputs_and_charts(files, None)
}

/// The names of the chart files a chart directory receives.
fn is_chart(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.ends_with(".svg") || n.ends_with(".png"))
}

/// [`check_outputs`], and a chart directory that holds none of those files and can be made.
fn check_outputs_and_charts(
    files: &[(&str, &Option<PathBuf>)],
    charts: Option<&Path>,
) -> Result<()> {
    let mut outputs = Vec::new();
    for (what, path) in files {
        if let Some(p) = path {
            check_file_output(what, p)?;
            outputs.push(guard::Output::File { what, path: p });
        }
    }
    if let Some(dir) = charts {
        check_chart_dir(dir)?;
        outputs.push(guard::Output::Dir {
            what: "chart",
            dir,
            writes: &is_chart,
        });
    }
    guard::check(&guard::Inputs::new(), &outputs).map_err(usage)
}

/// Checks before measuring that the chart directory can be made: it is a directory, or the
/// nearest of its ancestors that exists is one.
fn check_chart_dir(dir: &Path) -> Result<()> {
    let mut p = dir;
    loop {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(usage(format!(
                    "chart directory '{}': '{}' is not a directory",
                    convflow::quote::path(dir),
                    convflow::quote::path(p)
                )))
            }
            Err(_) => match p.parent() {
                Some(up) if !up.as_os_str().is_empty() => p = up,
                _ => return Ok(()),
            },
        }
    }
}

/// Writes a result file atomically.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic::write_file(path, bytes)
        .with_context(|| format!("writing {}", convflow::quote::path(path)))
}

pub fn suite(name: &str, a: SuiteArgs) -> Result<()> {
    let experiments: Vec<suite::Experiment> = if name == "all" {
        suite::Experiment::ALL.to_vec()
    } else {
        vec![name
            .parse()
            .map_err(|_| usage(format!("unknown experiment '{name}'")))?]
    };
    // Check output paths before spending minutes measuring.
    check_outputs_and_charts(&[("csv", &a.csv), ("json", &a.json)], a.plot.as_deref())?;
    let cfg = suite::SuiteConfig {
        backends: a.backend.clone(),
        quick: a.quick,
        budget: Duration::from_secs_f64(a.budget.max(0.1)),
        warmup: a.warmup.unwrap_or(if a.quick { 0 } else { 1 }),
        runs: a.runs.unwrap_or(if a.quick { 2 } else { 5 }).max(1),
        threads: a.threads,
        device: a.device,
    };
    let gpu = if cfg.backends.contains(&BackendKind::Cuda) {
        match backend::create(BackendKind::Cuda, &Schedule::default()) {
            Ok(b) => b.name(),
            Err(e) => format!("none ({e})"),
        }
    } else {
        "not measured".into()
    };
    let meta = suite::Meta::collect(gpu.clone());
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# convflow bench {name}{}\n",
        if a.quick { " --quick" } else { "" }
    )?;
    if let serde_json::Value::Object(fields) = serde_json::to_value(&meta)? {
        for (k, v) in fields {
            writeln!(
                out,
                "- {k}: {}",
                v.as_str().map_or(v.to_string(), str::to_string)
            )?;
        }
    }
    writeln!(out, "\n{}\n", suite::METHOD)?;
    let mut write_err = None;
    let mut result = suite::run(&cfg, &experiments, |e, rows| {
        let mut w = || -> std::io::Result<()> {
            if rows.is_empty() {
                // No empty tables: say why there is nothing (the GPU rows of a host without one,
                // or a budget spent before the experiment's first point).
                writeln!(
                    out,
                    "## {}\n\nNothing measured: every point needs a backend not available here \
                     (gpu: {gpu}) or was left out for the time budget.\n",
                    e.name()
                )?;
                return out.flush();
            }
            writeln!(out, "## {}\n\n{}", e.name(), suite::TABLE_HEADER)?;
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
            writeln!(out, "- {}", convflow::quote::path(c))?;
        }
    }
    if let Some(path) = &a.csv {
        write_file(path, &bench::csv_bytes(&result.rows)?)?;
    }
    if let Some(path) = &a.json {
        let run = suite::SuiteRun {
            meta,
            method: suite::METHOD.into(),
            experiments,
            rows: result.rows,
            skipped: result.skipped,
            charts: result
                .charts
                .iter()
                .map(|c| c.display().to_string())
                .collect(),
        };
        let text = serde_json::to_string_pretty(&run)? + "\n";
        write_file(path, text.as_bytes())?;
    }
    Ok(())
}

pub fn plot(from: &Path, dir: &Path) -> Result<()> {
    let mut inputs = guard::Inputs::new();
    inputs.add(from);
    check_chart_dir(dir)?;
    let out = guard::Output::Dir {
        what: "chart",
        dir,
        writes: &is_chart,
    };
    guard::check(&inputs, &[out]).map_err(usage)?;
    let text = std::fs::read_to_string(from)
        .with_context(|| format!("reading {}", convflow::quote::path(from)))?;
    let run: suite::SuiteRun = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a bench JSON file", convflow::quote::path(from)))?;
    for c in suite::charts(&run.rows, dir)? {
        println!("{}", convflow::quote::path(&c));
    }
    Ok(())
}
