//! The suite's charts: which rows each chart draws and how (series, axes, titles); the drawing
//! itself is [`crate::bench::plot`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::resolve_threads;
use super::rows::{Experiment, Row, Timed};
use crate::backend::BackendKind;
use crate::bench::{plot, BenchError};
use crate::io::atomic::PendingDir;

/// Draws every chart the rows allow into `dir` (created with its parents when missing);
/// returns the files written. The charts are drawn into a staging directory and moved into
/// `dir` together, so a failure leaves `dir` as it was.
pub fn charts(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let err = |e: std::io::Error| {
        BenchError::Run(format!("chart directory {}: {e}", crate::quote::path(dir)))
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let stage = PendingDir::create(dir).map_err(err)?;
    // Errors name the chart's real path, not the staging directory's.
    let real = |e: BenchError| match e {
        BenchError::Run(m) => {
            let staged = stage.path().display().to_string();
            BenchError::Run(m.replace(&staged, &dir.display().to_string()))
        }
        other => other,
    };
    let names: Vec<OsString> = draw(rows, stage.path())
        .map_err(real)?
        .iter()
        .filter_map(|p| p.file_name().map(OsStr::to_os_string))
        .collect();
    stage.commit(&names).map_err(err)?;
    Ok(names.iter().map(|n| dir.join(n)).collect())
}

/// What a speedup chart divides by: the deliberately naive cpu-seq (the literature's
/// baseline), or cpu-par with the run's thread count (the honest one for a GPU row).
#[derive(Clone, Copy)]
enum Baseline {
    CpuSeq,
    CpuPar,
}

impl Baseline {
    const ALL: [Baseline; 2] = [Baseline::CpuSeq, Baseline::CpuPar];

    /// The baseline's name in titles: `cpu-seq`, `cpu-par (8 threads)`.
    fn name(self, threads: usize) -> String {
        match self {
            Baseline::CpuSeq => "cpu-seq".into(),
            Baseline::CpuPar => format!("cpu-par ({threads} threads)"),
        }
    }

    /// The chart file's suffix after its stem.
    fn suffix(self) -> &'static str {
        match self {
            Baseline::CpuSeq => "",
            Baseline::CpuPar => "-vs-cpu-par",
        }
    }

    /// The rows a chart over this baseline draws: not the baseline itself.
    fn rows<'a>(self, rows: &[&'a Row]) -> Vec<&'a Row> {
        let own = match self {
            Baseline::CpuSeq => BackendKind::CpuSeq,
            Baseline::CpuPar => BackendKind::CpuPar,
        };
        rows.iter().copied().filter(|r| r.backend != own).collect()
    }

    fn speedup(self, r: &Row) -> Option<f64> {
        match self {
            Baseline::CpuSeq => r.speedup_vs_cpu_seq,
            Baseline::CpuPar => r.speedup_vs_cpu_par,
        }
    }
}

/// Rows grouped into named series of (x, y) points, each sorted by x; rows without a y are
/// left out.
fn series(
    rows: Vec<&Row>,
    name: &dyn Fn(&Row) -> String,
    x: &dyn Fn(&Row) -> f64,
    y: &dyn Fn(&Row) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let Some(v) = y(r) {
            m.entry(name(r)).or_default().push((x(r), v));
        }
    }
    let mut v: Vec<(String, Vec<(f64, f64)>)> = m.into_iter().collect();
    for s in &mut v {
        s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    v
}

/// One speedup chart per [`Baseline`] over kernel size k (log y): `stem.svg` over cpu-seq,
/// `stem-vs-cpu-par.svg` over cpu-par; `title` gets the baseline's name.
fn speedup_charts(
    dir: &Path,
    stem: &str,
    title: &dyn Fn(&str) -> String,
    x_label: &str,
    rows: &[&Row],
    name: &dyn Fn(&Row) -> String,
    threads: usize,
) -> Result<Vec<PathBuf>, plot::PlotError> {
    let mut files = Vec::new();
    for base in Baseline::ALL {
        let base_name = base.name(threads);
        files.extend(plot::lines(
            dir,
            &format!("{stem}{}", base.suffix()),
            &plot::Lines {
                title: &title(&base_name),
                x_label,
                y_label: &format!("speedup over {base_name} (×)"),
                log_x: false,
                log_y: true,
                series: series(base.rows(rows), name, &|r| r.k as f64, &|r| base.speedup(r)),
                reference: None,
            },
        )?);
    }
    Ok(files)
}

/// Draws every chart the rows allow into the existing directory `dir`.
fn draw(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    // The cpu-par thread count of the rows outside the threads experiment.
    let threads = rows
        .iter()
        .filter(|r| r.backend == BackendKind::CpuPar && r.experiment != Experiment::Threads)
        .map(|r| r.threads)
        .max()
        .unwrap_or_else(|| resolve_threads(0));
    let mut add = |files: Result<Vec<PathBuf>, plot::PlotError>| -> Result<(), BenchError> {
        out.extend(files.map_err(|e| BenchError::Run(e.to_string()))?);
        Ok(())
    };
    let of = |e: Experiment| rows.iter().filter(move |r| r.experiment == e);
    let largest = |e: Experiment| {
        of(e)
            .map(|r| (r.width * r.height, r.size.clone()))
            .max()
            .map(|m| m.1)
    };

    if let Some(size) = largest(Experiment::Separable) {
        let rows: Vec<&Row> = of(Experiment::Separable)
            .filter(|r| r.size == size && r.backend != BackendKind::CpuSeq)
            .collect();
        add(speedup_charts(
            dir,
            "separable-speedup",
            &|base| {
                format!(
                    "Speedup over {base} vs kernel size, {size} gray (gaussian: separable, log: \
                     full 2D)"
                )
            },
            "kernel size k (k×k)",
            &rows,
            &|r| format!("{} ({})", r.label(), r.kernel),
            threads,
        ))?;
    }
    if of(Experiment::Threads).next().is_some() {
        let k = of(Experiment::Threads).map(|r| r.k).max().unwrap_or(3);
        let rows: Vec<&Row> = of(Experiment::Threads)
            .filter(|r| r.backend == BackendKind::CpuPar && r.k == k)
            .collect();
        let s = series(rows, &|r| r.size.clone(), &|r| r.threads as f64, &|r| {
            r.speedup_vs_cpu_par
        });
        let max_t = of(Experiment::Threads)
            .map(|r| r.threads)
            .max()
            .unwrap_or(1) as f64;
        // The experiment runs up to twice the core count of the host that measured it (which
        // need not be the one drawing the chart from its JSON).
        let cores = (max_t / 2.0).max(1.0);
        let ideal = vec![(1.0, 1.0), (cores, cores), (max_t.max(cores), cores)];
        let title =
            format!("cpu-par thread scaling, {k}×{k} Gaussian (full 2D), speedup over 1 thread");
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
    if let Some(size) = largest(Experiment::Memory) {
        let rows: Vec<&Row> = of(Experiment::Memory)
            .filter(|r| {
                r.size == size && r.backend != BackendKind::CpuSeq && r.measure != Timed::Total
            })
            .collect();
        add(speedup_charts(
            dir,
            "memory-speedup",
            &|base| {
                format!("Memory variants: speedup over {base} (kernel only), {size} gray Gaussian")
            },
            "kernel size k",
            &rows,
            &|r| r.label(),
            threads,
        ))?;
        let totals: Vec<&Row> = of(Experiment::Memory)
            .chain(of(Experiment::Pinned))
            .filter(|r| r.split().is_some() && r.measure == Timed::Total)
            .collect();
        if !totals.is_empty() {
            let cats: Vec<String> = totals
                .iter()
                .map(|r| {
                    format!(
                        "{} {} k{} {}",
                        r.size,
                        r.format,
                        r.k,
                        <&str>::from(r.memory)
                    )
                })
                .collect();
            let pick = |i: usize| {
                totals
                    .iter()
                    .map(|r| r.split().map_or(0.0, |s| [s.0, s.1, s.2][i] / 1e3))
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
    if of(Experiment::Blocks).next().is_some() {
        let rows: Vec<&Row> = of(Experiment::Blocks).collect();
        let s = series(
            rows,
            &|r| {
                format!(
                    "{} {}",
                    r.variant,
                    if r.block.ends_with("x1") { "1D" } else { "2D" }
                )
            },
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
    if of(Experiment::Resolution).next().is_some() {
        let rows: Vec<&Row> = of(Experiment::Resolution).filter(|r| r.k == 3).collect();
        let s = series(
            rows,
            &|r| r.label(),
            &|r| (r.width * r.height) as f64 / 1e6,
            &|r| Some(r.median_us / 1e3),
        );
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
        let at = of(Experiment::Resolution)
            .filter(|r| r.k != 3)
            .map(|r| r.size.clone())
            .next();
        if let Some(at) = at {
            let rows: Vec<&Row> = of(Experiment::Resolution)
                .filter(|r| r.size == at)
                .collect();
            let s = series(rows, &|r| r.label(), &|r| r.k as f64, &|r| {
                Some(r.median_us / 1e3)
            });
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
    if of(Experiment::BigKernels).next().is_some() {
        let rows: Vec<&Row> = of(Experiment::BigKernels)
            .filter(|r| r.backend != BackendKind::CpuSeq)
            .collect();
        add(speedup_charts(
            dir,
            "big-kernels",
            &|base| format!("Big kernels (full 2D Gaussian): speedup over {base}"),
            "kernel size k",
            &rows,
            &|r| format!("{} {}", r.label(), r.size),
            threads,
        ))?;
    }
    if of(Experiment::Pipeline).next().is_some() {
        let rows: Vec<&Row> = of(Experiment::Pipeline).collect();
        let cats: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{} {} k{} {}",
                    r.size,
                    r.format,
                    r.k,
                    <&str>::from(r.measure)
                )
            })
            .collect();
        let fps: Vec<f64> = rows.iter().map(|r| r.fps).collect();
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
