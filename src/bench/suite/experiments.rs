//! The experiments, each a grid of points over the runner: separable vs full kernels, cpu-par
//! thread scaling, the CUDA memory variants, block shapes, resolution and kernel size, big
//! kernels, pinned vs pageable copies, the pipeline; and the speedups filled in after each.

use std::collections::BTreeMap;

use super::rows::{Experiment, Memory, Row, Timed};
use super::{cuda_variants, resolve_threads, Point, Runner};
use crate::backend::{BackendKind, Support};
use crate::bench::pipeline::{run_pipeline, PipelineBench};
use crate::bench::{BenchError, Clock};
use crate::filter::Mode;
use crate::frame::PixelFormat;

/// Grids per experiment, full or quick.
struct Grid {
    sizes: Vec<&'static str>,
    ks: Vec<usize>,
}

fn grid(experiment: Experiment, quick: bool) -> Grid {
    use Experiment as E;
    let g = |sizes: Vec<&'static str>, ks: Vec<usize>| Grid { sizes, ks };
    match (experiment, quick) {
        (E::Separable, false) => g(
            vec!["300x200", "2048x1080", "8k"],
            vec![3, 5, 7, 9, 11, 13, 15],
        ),
        (E::Separable, true) => g(vec!["300x200", "320x240"], vec![3, 7]),
        (E::Threads, false) => g(vec!["720p", "1080p", "1440p", "4k"], vec![3, 5, 7]),
        (E::Threads, true) => g(vec!["320x240"], vec![3]),
        (E::Memory, false) => g(vec!["1080p", "4k"], vec![3, 7, 15]),
        (E::Memory, true) => g(vec!["320x240"], vec![3]),
        (E::Blocks, false) => g(vec!["4k"], vec![7]),
        (E::Blocks, true) => g(vec!["320x240"], vec![3]),
        (E::Resolution, false) => g(
            vec![
                "vga", "800x600", "1024x768", "1080p", "1440p", "4k", "8k", "10k",
            ],
            (1..=32).collect(),
        ),
        (E::Resolution, true) => g(vec!["vga", "800x600"], vec![1, 2, 3, 5]),
        (E::BigKernels, false) => g(
            vec!["4000x2000", "6000x4000", "8000x6000"],
            vec![7, 13, 19, 25],
        ),
        (E::BigKernels, true) => g(vec!["400x200"], vec![7, 13]),
        (E::Pinned, false) => g(vec!["720p", "1080p", "4k", "8k"], vec![5]),
        (E::Pinned, true) => g(vec!["320x240"], vec![5]),
        (E::Pipeline, false) => g(vec!["1080p", "4k"], vec![3, 15]),
        (E::Pipeline, true) => g(vec!["320x240"], vec![3]),
    }
}

/// Runs one experiment.
pub(super) fn run(r: &mut Runner, e: Experiment) -> Result<(), BenchError> {
    match e {
        Experiment::Separable => separable(r),
        Experiment::Threads => threads(r),
        Experiment::Memory => memory(r),
        Experiment::Blocks => blocks(r),
        Experiment::Resolution => resolution(r),
        Experiment::BigKernels => big_kernels(r),
        Experiment::Pinned => pinned(r),
        Experiment::Pipeline => pipeline(r),
    }
}

/// The variants named `names`, with what each runs.
fn some_variants(names: &[&str]) -> Vec<(&'static str, Support)> {
    cuda_variants()
        .into_iter()
        .filter(|(n, _)| names.contains(n))
        .collect()
}

fn separable(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid(Experiment::Separable, r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            // Gaussian (rank 1, two passes) vs LoG (not separable, the full 2D kernel).
            for (kernel, mode) in [("gaussian", Mode::Separable), ("log", Mode::Full)] {
                let p = Point::gray(Experiment::Separable, size, kernel, mode, k);
                r.cpu_rows(&p)?;
                if r.wants(BackendKind::Cuda) {
                    // Each variant that runs this point's decomposition.
                    for (v, support) in cuda_variants() {
                        let runs = match mode {
                            Mode::Full => support != Support::SeparableOnly,
                            _ => support != Support::FullOnly,
                        };
                        if runs {
                            r.cuda_variant(&p, v, support, None)?;
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
    let g = grid(Experiment::Threads, r.cfg.quick);
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
            let p = Point::gray(Experiment::Threads, size, "gaussian", Mode::Full, k);
            r.cpu_seq(&p)?;
            for &t in &counts {
                r.measure(
                    &p,
                    &format!("cpu-par:{t}"),
                    BackendKind::CpuPar,
                    r.schedule(t),
                )?;
            }
        }
    }
    Ok(())
}

fn memory(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid(Experiment::Memory, r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            let p = Point::gray(Experiment::Memory, size, "gaussian", Mode::Full, k);
            r.cpu_rows(&p)?;
            if r.wants(BackendKind::Cuda) {
                // Every variant in its own decomposition (fast: the kernel's, separable).
                let auto = Point {
                    mode: Mode::Auto,
                    ..p
                };
                for (v, support) in cuda_variants() {
                    r.cuda_variant(&auto, v, support, None)?;
                }
                for pageable in [false, true] {
                    r.measure_total(&auto, "fast", pageable)?;
                }
            }
        }
    }
    Ok(())
}

fn blocks(r: &mut Runner) -> Result<(), BenchError> {
    if !r.gpu_or_skip(
        Experiment::Blocks,
        "the block shape is a GPU launch parameter",
    ) {
        return Ok(());
    }
    let g = grid(Experiment::Blocks, r.cfg.quick);
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
            for (v, support) in cuda_variants() {
                let p = Point::gray(Experiment::Blocks, size, "gaussian", Mode::Auto, k);
                for &s in &square {
                    r.cuda_variant(&p, v, support, Some((s, s)))?;
                }
                for &n in &linear {
                    r.cuda_variant(&p, v, support, Some((n, 1)))?;
                }
            }
        }
    }
    Ok(())
}

fn resolution(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid(Experiment::Resolution, r.cfg.quick);
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
        let p = Point::gray(Experiment::Resolution, size, "gaussian", Mode::Full, k);
        r.cpu_rows(&p)?;
        if r.wants(BackendKind::Cuda) {
            for (v, support) in some_variants(&["fast"]) {
                r.cuda_variant(&p, v, support, None)?;
            }
        }
    }
    Ok(())
}

fn big_kernels(r: &mut Runner) -> Result<(), BenchError> {
    let g = grid(Experiment::BigKernels, r.cfg.quick);
    for size in &g.sizes {
        for &k in &g.ks {
            let p = Point::gray(Experiment::BigKernels, size, "gaussian", Mode::Full, k);
            r.cpu_rows(&p)?;
            if r.wants(BackendKind::Cuda) {
                for (v, support) in some_variants(&["global", "shared", "fast"]) {
                    r.cuda_variant(&p, v, support, None)?;
                }
            }
        }
    }
    Ok(())
}

fn pinned(r: &mut Runner) -> Result<(), BenchError> {
    if !r.gpu_or_skip(
        Experiment::Pinned,
        "host memory kinds matter for device copies",
    ) {
        return Ok(());
    }
    let g = grid(Experiment::Pinned, r.cfg.quick);
    for size in &g.sizes {
        for format in [PixelFormat::Gray8, PixelFormat::Rgb8] {
            for &k in &g.ks {
                let p = Point {
                    experiment: Experiment::Pinned,
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
    let g = grid(Experiment::Pipeline, r.cfg.quick);
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
        backends.push((
            BackendKind::CpuPar,
            r.schedule(r.cfg.threads),
            "host".to_string(),
        ));
    }
    if backends.is_empty() {
        r.skip("pipeline", "needs cpu-par or cuda".into());
        return Ok(());
    }
    if r.point_budget().is_none() {
        r.skip("pipeline", "budget spent".into());
        return Ok(());
    }
    let cfg = PipelineBench {
        backends,
        sizes: g.sizes.iter().map(|s| s.to_string()).collect(),
        formats: vec![PixelFormat::Gray8, PixelFormat::Rgb8],
        ks: g.ks.clone(),
        frames: if r.cfg.quick { 40 } else { 300 },
        runs: if r.cfg.quick { 1 } else { 2 },
        inflight: None,
        devices: Vec::new(),
    };
    for s in run_pipeline(&cfg, |_| {})? {
        let host = s.schedule == "host";
        let mut row = Row::new(Experiment::Pipeline, &s.size, (s.width, s.height), s.format);
        row.backend = if host {
            BackendKind::CpuPar
        } else {
            BackendKind::Cuda
        };
        row.variant = if host { "-" } else { "fast" }.into();
        row.threads = if host {
            resolve_threads(r.cfg.threads)
        } else {
            0
        };
        row.measure = match s.schedule.as_str() {
            "overlap" => Timed::Overlap,
            "sync" => Timed::Sync,
            _ => Timed::Host,
        };
        row.memory = match row.measure {
            Timed::Overlap => Memory::Pinned,
            Timed::Sync => Memory::Pageable,
            _ => Memory::None,
        };
        row.clock = Clock::WallSteady;
        row.kernel = "gaussian".into();
        row.path = "separable".into();
        row.k = s.k;
        if let Some(d) = s.device_us {
            (row.upload_us, row.kernel_us, row.download_us) = (Some(d.0), Some(d.1), Some(d.2));
        }
        let row = row.with_times(s.fps.len(), 1e6 / s.median(), 1e6 / s.max(), 1e6 / s.min());
        r.result.rows.push(row);
    }
    Ok(())
}

/// Fills speedups: against cpu-seq and the widest cpu-par of the same frame and kernel, and for
/// the threads experiment the efficiency against cpu-par on one thread.
pub(super) fn speedups(rows: &mut [Row]) {
    type Key = (String, String, String, usize);
    let key = |r: &Row| -> Key { (r.size.clone(), r.format.name(), r.kernel.clone(), r.k) };
    let mut seq: BTreeMap<Key, f64> = BTreeMap::new();
    let mut par: BTreeMap<Key, (usize, f64)> = BTreeMap::new();
    let mut one: BTreeMap<Key, f64> = BTreeMap::new();
    for r in rows.iter() {
        match r.backend {
            BackendKind::CpuSeq => {
                seq.insert(key(r), r.median_us);
            }
            BackendKind::CpuPar if r.experiment != Experiment::Pipeline => {
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
        r.speedup_vs_cpu_seq = seq.get(&k).map(|s| s / r.median_us);
        if r.backend != BackendKind::CpuPar {
            r.speedup_vs_cpu_par = par.get(&k).map(|p| p.1 / r.median_us);
        }
        if r.experiment == Experiment::Threads && r.backend == BackendKind::CpuPar {
            r.efficiency = one.get(&k).map(|o| o / r.median_us / r.threads as f64);
            r.speedup_vs_cpu_par = one.get(&k).map(|o| o / r.median_us);
        }
    }
}
