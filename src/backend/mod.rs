//! Backends: one trait, several implementations (cpu-seq, cpu-par, and cuda when built in).
//!
//! A backend filters frames according to a [`Plan`]; *how* it does so (threads, CUDA variant,
//! block shape) comes from a [`Schedule`] chosen when the backend is created. Every backend must
//! produce exactly the bytes `cpu-seq` produces for the same plan (the arithmetic contract in
//! [`crate::filter`]).

pub mod cpu_par;
pub mod cpu_seq;
#[cfg(feature = "cuda")]
pub mod cuda;

use std::any::Any;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::filter::Plan;
use crate::frame::{Frame, PixelFormat, PlaneMut, PlaneRef, Shape};

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
    #[error("{0}")]
    Unsupported(String),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] cuda::CudaError),
}

/// Which decompositions a backend (or CUDA variant) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Both,
    /// The direct variants of the literature: they sum the full 2D kernel.
    FullOnly,
    /// The two-pass variants: they need a rank-1 kernel.
    SeparableOnly,
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

/// Parses a CUDA block shape `WxH` (or `N` for Nx1); W·H must be 1…1024.
pub fn parse_block(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("bad block shape '{s}' (write WxH with W·H between 1 and 1024, e.g. 32x8)");
    let (w, h) = match s.split_once('x') {
        Some((w, h)) => (
            w.parse::<u32>().map_err(|_| bad())?,
            h.parse::<u32>().map_err(|_| bad())?,
        ),
        None => (s.parse::<u32>().map_err(|_| bad())?, 1),
    };
    if w == 0 || h == 0 || w.saturating_mul(h) > 1024 {
        return Err(bad());
    }
    Ok((w, h))
}

/// How to run, chosen apart from what to compute.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// Worker threads for cpu-par; 0 means one per logical CPU.
    pub threads: usize,
    /// CUDA memory variant.
    #[cfg(feature = "cuda")]
    pub variant: cuda::Variant,
    /// CUDA block shape (width, height); None for each variant's default.
    pub block: Option<(u32, u32)>,
    /// CUDA device ordinal.
    pub device: usize,
    /// CUDA: copy frames from/to pageable memory instead of page-locked staging buffers.
    pub pageable: bool,
    /// CUDA: the literature's loop (`--sync`): synchronous copies and kernels on one stream
    /// inside the filter stage, no transfer stages (the CLI also makes memory pageable).
    pub sync: bool,
}

/// A frame in a backend's own (device) memory, laid out as the host frame it mirrors.
pub struct DeviceFrame {
    pub shape: Shape,
    /// The backend's buffer (e.g. a CUDA allocation); only that backend looks inside.
    pub mem: Box<dyn Any + Send>,
}

/// Device-clock times of one frame's steps (CUDA events), for the transfer-vs-kernel split.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceTimes {
    pub h2d: Duration,
    pub kernel: Duration,
    pub d2h: Duration,
}

/// What the pipeline's transfer stages need from a backend that computes in its own memory.
/// Shared by the upload and download threads; each takes its own [`CopyQueue`].
pub trait Offload: Send + Sync {
    /// A tightly packed host frame in memory the copy engines reach directly (page-locked).
    /// `cpu_reads`: the CPU will read it (download targets, `--check` inputs), so it must not be
    /// write-combined.
    fn host_frame(
        &self,
        format: PixelFormat,
        width: usize,
        height: usize,
        cpu_reads: bool,
    ) -> Result<Frame, BackendError>;
    /// A device buffer for frames of `shape`.
    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, BackendError>;
    /// A copy queue of its own (a CUDA stream), for one stage thread.
    fn queue(&self) -> Result<Box<dyn CopyQueue>, BackendError>;
    /// Measured host↔device bandwidth with this offload's kind of host memory (median of
    /// `reps` copies of `bytes` each way).
    fn bandwidth(&self, bytes: usize, reps: usize) -> Result<LinkBandwidth, BackendError>;
}

/// Host↔device copy rates in bytes/s: each direction alone, and both at once (sum of bytes
/// over the time both take together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkBandwidth {
    pub h2d: f64,
    pub d2h: f64,
    pub duplex: f64,
}

/// Copies on one queue; each call returns once its copy is complete, with its device time.
pub trait CopyQueue: Send {
    fn upload(&mut self, src: &Frame, dst: &mut DeviceFrame) -> Result<Duration, BackendError>;
    fn download(&mut self, src: &DeviceFrame, dst: &mut Frame) -> Result<Duration, BackendError>;
}

/// The one interface every backend implements.
pub trait Backend: Send {
    /// Name as shown in reports, e.g. `cpu-par (2 threads, avx2+fma)`.
    fn name(&self) -> String;

    /// Filters one plane. Channels whose bit is clear in `mask` are copied from `src`.
    /// `src` and `dst` have the same width, height and channels (strides may differ).
    fn filter_plane(&mut self, plan: &Plan, src: PlaneRef<'_>, dst: PlaneMut<'_>, mask: u8)
        -> Result<(), BackendError>;

    /// Which decompositions this backend runs (`--mode auto` adapts to it).
    fn support(&self) -> Support {
        Support::Both
    }

    /// Device-side times in seconds of up to `runs` filter passes after `warmup` (fewer once
    /// `budget` seconds are spent, at least one), excluding transfers, for backends that can
    /// measure them (CUDA events); None for the CPU.
    fn kernel_times(
        &mut self,
        _plan: &Plan,
        _src: &Frame,
        _dst: &mut Frame,
        _warmup: usize,
        _runs: usize,
        _budget: f64,
    ) -> Result<Option<Vec<f64>>, BackendError> {
        Ok(None)
    }

    /// Measured ceilings (bytes/s of a device-to-device copy counting read + written bytes,
    /// fp32 FMA/s) for roofline ratios; None where not measured.
    fn ceilings(&mut self) -> Option<(f64, f64)> {
        None
    }

    /// For backends that compute in device memory (CUDA, unless `--sync`): the transfer side
    /// the pipeline drives from its upload and download stages. None: frames are filtered in
    /// host memory with [`Backend::filter_frame`].
    fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
        Ok(None)
    }

    /// Filters a device-resident frame into `dst` (both from this backend's [`Offload`]);
    /// returns once done, with the device time of the kernels.
    fn filter_device(
        &mut self,
        _plan: &Plan,
        _src: &DeviceFrame,
        _dst: &mut DeviceFrame,
    ) -> Result<Duration, BackendError> {
        Err(BackendError::Unsupported(format!(
            "{} has no device memory",
            self.name()
        )))
    }

    /// Device times of the last [`Backend::filter_frame`] call, for backends that measure them.
    fn last_times(&self) -> Option<DeviceTimes> {
        None
    }

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
        BackendKind::CpuPar => Ok(Box::new(CpuPar::new(schedule.threads)?)),
        BackendKind::Auto => match create(BackendKind::Cuda, schedule) {
            Ok(b) => Ok(b),
            Err(_) => Ok(Box::new(CpuPar::new(schedule.threads)?)),
        },
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            let mut b = cuda::CudaBackend::new(schedule.device, schedule.variant, schedule.block)?;
            b.set_pageable(schedule.pageable);
            b.set_offload(!schedule.sync);
            Ok(Box::new(b))
        }
        #[cfg(not(feature = "cuda"))]
        BackendKind::Cuda => Err(BackendError::Unavailable(
            "cuda",
            "this convflow was built without the 'cuda' feature".into(),
        )),
    }
}
