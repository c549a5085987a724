//! Backends: one trait, several implementations — `cpu-seq` (the reference), `cpu-par`, and
//! `cuda` when built in.
//!
//! A backend filters frames according to a [`Plan`]; the plan (what is computed, including its
//! decomposition) is fixed by the filter alone, and a backend that cannot run it refuses it at
//! start-up ([`Backend::check_plan`]) rather than choosing another. *How* it runs (threads,
//! CUDA variant, block shape, staging) comes from a [`Schedule`] chosen when the backend is
//! created. Every backend produces exactly the bytes `cpu-seq` produces for the same plan (the
//! arithmetic contract in [`crate::filter`]). Measurement for benchmarks is a separate trait,
//! [`Measure`], that only the backends able to time themselves on a device implement.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

use std::sync::Arc;
use std::time::Duration;

use crate::device::{DeviceError, DeviceFrame, DeviceTimes, Offload};
use crate::filter::{Decomposition, Plan};
use crate::frame::{Frame, PlaneMut, PlaneRef};

pub use cpu::{CpuPar, CpuSeq};

/// Why a backend could not be created or could not filter.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Source and destination frames differ in format or size.
    #[error("source is {src} but destination is {dst}")]
    Shape {
        /// The source frame, described ("format WxH").
        src: String,
        /// The destination frame, described.
        dst: String,
    },
    /// The backend named (first field) cannot be used here, and why.
    #[error("backend '{0}' is not available: {1}")]
    Unavailable(&'static str, String),
    /// cpu-par's rayon pool could not be built.
    #[error("could not start the CPU thread pool: {0}")]
    ThreadPool(String),
    /// The backend cannot run this plan or operation (the message says what to use instead).
    #[error("{0}")]
    Unsupported(String),
    /// Device memory or a copy failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A CUDA driver, NVRTC or launch error.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] cuda::CudaError),
}

impl BackendError {
    /// True when the backend cannot run on this machine at all (no NVIDIA driver, no CUDA
    /// device, no NVRTC, or a build without it), as opposed to a failure while running.
    pub fn is_unavailable(&self) -> bool {
        match self {
            BackendError::Unavailable(..) => true,
            #[cfg(feature = "cuda")]
            BackendError::Cuda(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// Which decompositions a backend (or CUDA variant) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Full and separable plans alike.
    Both,
    /// The direct variants of the literature: they sum the full 2D kernel.
    FullOnly,
    /// The two-pass variants: they need a separable plan.
    SeparableOnly,
}

impl Support {
    /// True when a plan of `d` can run.
    pub fn runs(self, d: &Decomposition) -> bool {
        matches!(
            (self, d),
            (Support::Both, _)
                | (Support::FullOnly, Decomposition::Full)
                | (Support::SeparableOnly, Decomposition::Separable { .. })
        )
    }
}

/// Backend names accepted by `--backend`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
    strum::VariantArray,
    strum::EnumMessage,
    serde::Serialize,
    serde::Deserialize,
)]
#[strum(serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// cuda when a GPU is usable, else cpu-par.
    #[default]
    Auto,
    /// `cpu-seq`: the single-threaded reference.
    CpuSeq,
    /// `cpu-par`: rows split over a thread pool, SIMD inner loops.
    CpuPar,
    /// `cuda`: an NVIDIA GPU (an error when none is usable or the feature is off).
    Cuda,
}

impl BackendKind {
    /// The kebab-case name `--backend` takes (`auto`, `cpu-seq`, `cpu-par`, `cuda`).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a CUDA block shape `WxH` (or `N` for Nx1); W·H must be 1…1024.
pub fn parse_block(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "bad block shape '{}' (write WxH with W·H between 1 and 1024, e.g. 32x8)",
            crate::quote::quote(s)
        )
    };
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
    /// inside the filter stage (a frame's independent `fast` launches on side streams joined
    /// back to it), no transfer stages (the CLI also makes memory pageable).
    pub sync: bool,
}

/// The one interface every backend implements.
pub trait Backend: Send {
    /// Name as shown in reports, e.g. `cpu-par (2 threads, avx2+fma)`; says what actually
    /// ran (a CUDA variant that handed a plan to other kernels says so).
    fn name(&self) -> String;

    /// Lines about the device that shape what this backend runs (`convflow info` prints them);
    /// none for the CPU backends.
    fn device_details(&self) -> Vec<String> {
        Vec::new()
    }

    /// Which decompositions this backend runs.
    fn runs(&self) -> Support {
        Support::Both
    }

    /// Refuses, before any frame is read, a plan this backend cannot run.
    fn check_plan(&self, plan: &Plan) -> Result<(), BackendError> {
        if self.runs().runs(&plan.decomposition) {
            return Ok(());
        }
        let (only, other) = match self.runs() {
            Support::SeparableOnly => {
                ("separable", "a rank-1 kernel with --mode separable or auto")
            }
            _ => ("full", "--mode full"),
        };
        Err(BackendError::Unsupported(format!(
            "{} runs {only} kernels only, but the plan for {} is {}; use {other}, or another \
            variant",
            self.name(),
            plan.kernel.name,
            plan.decomposition
        )))
    }

    /// Filters a whole frame into `dst`, which must have the same format and size (strides
    /// may differ).
    fn filter_frame(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
    ) -> Result<(), BackendError>;

    /// For backends that compute in device memory (CUDA, unless `--sync`): the transfer side
    /// the pipeline drives from its upload and download stages. None: frames are filtered in
    /// host memory with [`Backend::filter_frame`].
    fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
        Ok(None)
    }

    /// Starts filtering a device-resident frame into `dst` (both from this backend's
    /// [`Offload`]) and returns at once; [`Backend::finish_device`] waits for it. Up to
    /// [`Backend::device_depth`] frames may be in flight, finishing in the order started.
    ///
    /// # Safety
    /// Until `finish_device` has returned for this frame, neither frame's memory may be
    /// touched or freed (moving the `DeviceFrame` values is fine).
    unsafe fn start_device(
        &mut self,
        _plan: &Plan,
        _src: &DeviceFrame,
        _dst: &mut DeviceFrame,
    ) -> Result<(), BackendError> {
        Err(BackendError::Unsupported(format!(
            "{} has no device memory",
            self.name()
        )))
    }

    /// Waits for the oldest frame started by [`Backend::start_device`]; returns the device
    /// time of its kernels where they were timed (a backend may time only some frames). An
    /// error ends that frame too.
    fn finish_device(&mut self) -> Result<Option<Duration>, BackendError> {
        Err(BackendError::Unsupported(format!(
            "{} has no frame in flight",
            self.name()
        )))
    }

    /// How many frames [`Backend::start_device`] may have in flight at once (≥ 1).
    fn device_depth(&self) -> usize {
        1
    }

    /// True when the oldest frame in flight is done (or failed), so
    /// [`Backend::finish_device`] would not wait.
    fn device_done(&mut self) -> bool {
        true
    }

    /// Device times of the last [`Backend::filter_frame`] call, for backends that measure
    /// them (the pipeline's transfer-vs-kernel split with `--sync`).
    fn last_times(&self) -> Option<DeviceTimes> {
        None
    }

    /// Host memory this backend allocates while filtering a frame of `plan`, per byte of the
    /// frame (cpu-seq's f32 intermediate, CUDA's page-locked staging): what the pipeline adds
    /// to its buffers when it checks the memory budget.
    fn host_scratch(&self, _plan: &Plan) -> usize {
        0
    }

    /// The benchmark interface, for backends that can time their own work on a device.
    fn measure(&mut self) -> Option<&mut dyn Measure> {
        None
    }
}

/// Host↔device copy rates in bytes/s: each direction alone, and both at once (sum of bytes
/// over the time both take together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkBandwidth {
    /// Host to device, alone.
    pub h2d: f64,
    /// Device to host, alone.
    pub d2h: f64,
    /// Both directions at once on two streams: bytes of both over the longer time.
    pub duplex: f64,
}

/// How a backend's device times were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceClock {
    /// Each timed batch was queued whole before the device started it: the passes ran back to
    /// back, whatever the host's launch cost.
    Held,
    /// Some batch started before it was queued whole, so the device may have waited for the
    /// host between passes.
    HostPaced,
}

/// Device-side times in seconds of filter passes, and how they were taken.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTimes {
    /// One time per timed run (a run's mean pass).
    pub times: Vec<f64>,
    /// How they were taken.
    pub clock: DeviceClock,
}

/// What benchmarks ask of a backend that measures itself (CUDA events).
pub trait Measure {
    /// Device-side times of up to `runs` filter passes after `warmup` (fewer once `budget`
    /// seconds are spent, at least one), excluding transfers.
    fn kernel_times(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
        warmup: usize,
        runs: usize,
        budget: f64,
    ) -> Result<KernelTimes, BackendError>;

    /// Measured ceilings (bytes/s of a device-to-device copy counting read + written bytes,
    /// fp32 FMA/s) for roofline ratios.
    fn ceilings(&mut self) -> Result<(f64, f64), BackendError>;

    /// Host↔device bandwidth with the backend's kind of host memory (median of `reps` copies
    /// of `bytes` each way).
    fn link_bandwidth(&mut self, bytes: usize, reps: usize) -> Result<LinkBandwidth, BackendError>;
}

/// Backends that filter one plane at a time in host memory (the CPU ones).
pub trait PlaneFilter {
    /// Filters one plane. Channels whose bit is clear in `mask` are copied from `src`.
    /// `src` and `dst` have the same width, height and channels (strides may differ).
    fn filter_plane(
        &mut self,
        plan: &Plan,
        src: PlaneRef<'_>,
        dst: PlaneMut<'_>,
        mask: u8,
    ) -> Result<(), BackendError>;
}

/// [`Backend::filter_frame`] for a [`PlaneFilter`]: every plane filtered or copied per the plan.
pub fn filter_planes(
    b: &mut impl PlaneFilter,
    plan: &Plan,
    src: &Frame,
    dst: &mut Frame,
) -> Result<(), BackendError> {
    check_shapes(src, dst)?;
    for p in 0..src.planes().len() {
        let mask = plan.channel_mask(src.format(), p);
        if mask == 0 {
            dst.plane_mut(p).copy_from(&src.plane(p));
        } else {
            b.filter_plane(plan, src.plane(p), dst.plane_mut(p), mask)?;
        }
    }
    Ok(())
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

/// `--devices`: the GPUs one run uses, each with its own stages (see [`crate::pipeline::run_on`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// Every CUDA device of the machine.
    All,
    /// These ordinals, in this order.
    List(Vec<usize>),
}

impl Devices {
    /// Parses `all` or a comma-separated list of distinct ordinals (`0,1,3`).
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Devices::All);
        }
        let bad = || {
            format!(
                "bad device list '{}' (write all, or ordinals such as 0,1)",
                crate::quote::quote(s)
            )
        };
        let mut list = Vec::new();
        for part in s.split(',') {
            let d: usize = part.trim().parse().map_err(|_| bad())?;
            if list.contains(&d) {
                return Err(format!(
                    "device {d} is listed twice in '{}'",
                    crate::quote::quote(s)
                ));
            }
            list.push(d);
        }
        Ok(Devices::List(list))
    }

    /// The ordinals: for `All`, every CUDA device found (an error when there is none).
    pub fn resolve(&self) -> Result<Vec<usize>, BackendError> {
        match self {
            Devices::List(l) => Ok(l.clone()),
            Devices::All => match device_count() {
                0 => Err(BackendError::Unavailable(
                    "cuda",
                    "--devices all found no CUDA device".into(),
                )),
                n => Ok((0..n).collect()),
            },
        }
    }
}

/// Whether a CUDA driver library is installed (found and loadable): no device may be usable
/// even then, but without one none is. Quick: nothing is initialised.
pub fn driver_present() -> bool {
    #[cfg(feature = "cuda")]
    return cuda::driver_present();
    #[cfg(not(feature = "cuda"))]
    false
}

/// CUDA devices usable here (0 without a driver or without the `cuda` feature).
pub fn device_count() -> usize {
    #[cfg(feature = "cuda")]
    return cuda::device_count();
    #[cfg(not(feature = "cuda"))]
    0
}

/// One backend per device in `devices` for `kind` (CUDA), else the one CPU backend (they have
/// no devices): what [`crate::pipeline::run_on`] takes. `Auto` without a usable GPU is cpu-par.
pub fn create_on(
    kind: BackendKind,
    schedule: &Schedule,
    devices: &[usize],
) -> Result<Vec<Box<dyn Backend>>, BackendError> {
    let on = |d: usize| Schedule {
        device: d,
        ..schedule.clone()
    };
    let Some((&first, rest)) = devices.split_first() else {
        return Ok(vec![create(kind, schedule)?]);
    };
    let lead = match kind {
        BackendKind::CpuSeq | BackendKind::CpuPar => return Ok(vec![create(kind, schedule)?]),
        BackendKind::Auto => match create(BackendKind::Cuda, &on(first)) {
            Ok(b) => b,
            Err(_) => return Ok(vec![Box::new(CpuPar::new(schedule.threads)?)]),
        },
        BackendKind::Cuda => create(BackendKind::Cuda, &on(first))?,
    };
    let mut all = vec![lead];
    for &d in rest {
        all.push(create(BackendKind::Cuda, &on(d))?);
    }
    Ok(all)
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

/// What this build and machine offer, for `convflow info`.
pub struct BuildInfo {
    /// The instruction set cpu-par's loops run with here.
    pub simd: &'static str,
    /// CUDA variants with one line each (empty without the cuda feature).
    pub variants: Vec<(&'static str, &'static str)>,
    /// The CUDA driver's version ("13.0"), or why there is none.
    pub driver: Result<String, String>,
}

/// Describes this build: SIMD level, CUDA variants, driver.
pub fn build_info() -> BuildInfo {
    #[cfg(feature = "cuda")]
    let (variants, driver) = (
        cuda::Variant::all()
            .map(|v| (v.name(), v.about()))
            .collect(),
        cuda::driver_version().ok_or_else(|| "no NVIDIA driver".to_string()),
    );
    #[cfg(not(feature = "cuda"))]
    let (variants, driver) = (
        Vec::new(),
        Err("built without the 'cuda' feature".to_string()),
    );
    BuildInfo {
        simd: cpu::simd_level(),
        variants,
        driver,
    }
}
