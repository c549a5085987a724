//! `convflow kernels` (the kernel library, or one kernel's weights and factors) and
//! `convflow info` (what this build and machine can run).

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use convflow::backend::{self, BackendKind, Schedule};
use convflow::filter::{library, spec, Filter, Mode};

pub fn kernels(spec_text: Option<&str>, file: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let kernel = match (spec_text, file) {
        (Some(s), _) => spec::parse_spec(s)?,
        (None, Some(f)) => spec::parse_kernel_file(f)?,
        (None, None) => {
            writeln!(
                out,
                "Kernel specs (sizes N or WxH; anchor at (W/2, H/2); numbers may be fractions):"
            )?;
            for (form, what) in library::CATALOGUE {
                writeln!(out, "  {form:<42} {what}")?;
            }
            writeln!(
                out,
                "\nKernel files: rows of numbers (blank or comma separated), optional 'divisor \
                D' and"
            )?;
            writeln!(
                out,
                "'offset O' lines, '#' comments. Run 'convflow kernels SPEC' to print the weights."
            )?;
            return Ok(());
        }
    };
    let (ax, ay) = kernel.anchor();
    writeln!(
        out,
        "{}: {}x{}, anchor ({ax}, {ay}), offset {}, sum {:.9}",
        kernel.name,
        kernel.width(),
        kernel.height(),
        kernel.offset(),
        kernel.sum()
    )?;
    for row in kernel.weights().chunks(kernel.width()) {
        let cells: Vec<String> = row.iter().map(|w| format!("{w:>12.8}")).collect();
        writeln!(out, "  {}", cells.join(" "))?;
    }
    match kernel.factors() {
        Some((col, row)) => {
            writeln!(out, "separable (rank 1):")?;
            writeln!(out, "  column {:?}", col)?;
            writeln!(out, "  row    {:?}", row)?;
        }
        None => writeln!(out, "not separable")?,
    }
    // What every backend runs for this kernel in each mode (the plan depends on the filter
    // and --mode only, never on the backend).
    for mode in [Mode::Auto, Mode::Full, Mode::Separable] {
        let mut f = Filter::new(kernel.clone());
        f.mode = mode;
        let name: &str = mode.into();
        match f.plan() {
            Ok(plan) => writeln!(out, "plan with --mode {name}: {}", plan.decomposition)?,
            Err(_) => writeln!(out, "plan with --mode {name}: refused (rank > 1)")?,
        }
    }
    Ok(())
}

pub fn info() -> Result<()> {
    let mut out = std::io::stdout().lock();
    let build = backend::build_info();
    writeln!(out, "convflow {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "logical CPUs: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    )?;
    writeln!(out, "backends:")?;
    writeln!(out, "  cpu-seq  sequential reference")?;
    writeln!(
        out,
        "  cpu-par  rayon row bands, default {} threads, {}",
        rayon::current_num_threads(),
        build.simd
    )?;
    match backend::create(BackendKind::Cuda, &Schedule::default()) {
        Ok(b) => writeln!(out, "  cuda     {}", b.name())?,
        Err(e) => writeln!(out, "  cuda     unavailable: {e}")?,
    }
    match &build.driver {
        Ok(v) => writeln!(out, "CUDA driver: {v}")?,
        Err(e) => writeln!(out, "CUDA driver: {e}")?,
    }
    if !build.variants.is_empty() {
        writeln!(out, "cuda variants (--variant):")?;
        for (name, about) in &build.variants {
            writeln!(out, "  {name:<17} {about}")?;
        }
    }
    writeln!(
        out,
        "default (--backend auto): {}",
        backend::create(BackendKind::Auto, &Schedule::default())?.name()
    )?;
    Ok(())
}
