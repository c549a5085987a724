//! Backends: one trait, several implementations (cpu-seq, cpu-par, and cuda when built in).
//!
//! A backend filters frames according to a [`Plan`]; *how* it does so (threads, CUDA variant,
//! block shape) comes from a [`Schedule`] chosen when the backend is created. Every backend must
//! produce exactly the bytes `cpu-seq` produces for the same plan (the arithmetic contract in
//! [`crate::filter`]).

pub mod cpu_par;
pub mod cpu_seq;

use std::fmt;
use std::str::FromStr;

use crate::filter::Plan;
use crate::frame::{Frame, PlaneMut, PlaneRef};

pub use cpu_par::CpuPar;
pub use cpu_seq::CpuSeq;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("source is {src} but destination is {dst}")]
    Shape { src: String, dst: String },
    #[error("backend '{0}' is not available: {1}")]
    Unavailable(&'static str, String),
    #[error("could not start the CPU thread pool: {0}")]
    ThreadPool(String),
}

/// Backend names accepted by `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// cuda when a GPU is usable, else cpu-par.
    #[default]
    Auto,
    CpuSeq,
    CpuPar,
    Cuda,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Auto => "auto",
            BackendKind::CpuSeq => "cpu-seq",
            BackendKind::CpuPar => "cpu-par",
            BackendKind::Cuda => "cuda",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendKind::Auto),
            "cpu-seq" => Ok(BackendKind::CpuSeq),
            "cpu-par" => Ok(BackendKind::CpuPar),
            "cuda" => Ok(BackendKind::Cuda),
            _ => Err(format!(
                "unknown backend '{s}' (expected auto, cpu-seq, cpu-par or cuda)"
            )),
        }
    }
}

/// How to run, chosen apart from what to compute.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// Worker threads for cpu-par; 0 means one per logical CPU.
    pub threads: usize,
}

/// The one interface every backend implements.
pub trait Backend: Send {
    /// Name as shown in reports, e.g. `cpu-par (2 threads, avx2+fma)`.
    fn name(&self) -> String;

    /// Filters one plane. Channels whose bit is clear in `mask` are copied from `src`.
    /// `src` and `dst` have the same width, height and channels (strides may differ).
    fn filter_plane(&mut self, plan: &Plan, src: PlaneRef<'_>, dst: PlaneMut<'_>, mask: u8)
        -> Result<(), BackendError>;

    /// Filters a whole frame into `dst`, which must have the same format and size.
    fn filter_frame(&mut self, plan: &Plan, src: &Frame, dst: &mut Frame) -> Result<(), BackendError> {
        check_shapes(src, dst)?;
        for p in 0..src.planes().len() {
            let mask = plan.channel_mask(src.format(), p);
            if mask == 0 {
                dst.plane_mut(p).copy_from(&src.plane(p));
            } else {
                self.filter_plane(plan, src.plane(p), dst.plane_mut(p), mask)?;
            }
        }
        Ok(())
    }
}

/// Same format and size; strides may differ.
pub fn check_shapes(src: &Frame, dst: &Frame) -> Result<(), BackendError> {
    if src.format() != dst.format() || src.width() != dst.width() || src.height() != dst.height() {
        return Err(BackendError::Shape {
            src: src.describe(),
            dst: dst.describe(),
        });
    }
    Ok(())
}

/// Creates the backend `kind` with `schedule`. `Auto` falls back to cpu-par when no GPU is
/// usable (or CUDA support is not built in).
pub fn create(kind: BackendKind, schedule: &Schedule) -> Result<Box<dyn Backend>, BackendError> {
    match kind {
        BackendKind::CpuSeq => Ok(Box::new(CpuSeq::new())),
        BackendKind::CpuPar | BackendKind::Auto => Ok(Box::new(CpuPar::new(schedule.threads)?)),
        BackendKind::Cuda => Err(BackendError::Unavailable(
            "cuda",
            "this convflow was built without the 'cuda' feature".into(),
        )),
    }
}
