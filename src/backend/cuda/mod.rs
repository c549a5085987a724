//! `cuda`: the GPU backend (cudarc with dynamic loading: the binary builds and runs without
//! CUDA; the driver and NVRTC are loaded when a CUDA backend is created).
//!
//! A frame is uploaded into a device buffer laid out as the host frame with every row starting
//! at a 16-byte boundary ([`crate::device::device_shape`]: one copy when the host's rows
//! already do, one 2D copy per plane when not), every plane is filtered by the chosen
//! [`Variant`] (planes the plan leaves alone are copied on the device), and the result comes
//! back the same way. Device buffers grow as needed and are reused across frames; weights are
//! re-uploaded only when the plan changes. Every variant implements the arithmetic contract,
//! so all of them equal `cpu-seq` bit for bit.
//!
//! By concern: [`variants`] (the table of variants and the literature's launches), [`fast`]
//! (our specialized kernels and their fallback), [`abi`] (what host and kernels share, typed
//! launches), [`registry`] (NVRTC and the module cache), `attributes` (what it reads of its
//! device once), `memory` (buffers, the synchronous
//! path's staged copies), `timing` (events, benchmark measurements), `offload` (the
//! pipeline's transfer stages), `lanes` (side streams for a frame's independent launches),
//! `raw` (the few driver calls cudarc has no safe API for).

pub mod abi;
mod attributes;
pub mod fast;
mod lanes;
mod memory;
mod offload;
mod operands;
mod raw;
pub mod registry;
mod timing;
pub mod variants;

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::CUfunction_attribute_enum as FnAttr;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig};

use super::{check_shapes, Backend, BackendError, Measure, Support};
use crate::device::{DeviceFrame, DeviceTimes, Offload};
use crate::filter::Plan;
use crate::frame::{Frame, Shape};
use abi::PlaneParams;
use memory::ptr;
use offload::CudaOffload;
use raw::PinnedBuf;
use registry::{ModuleKey, Registry};
pub use variants::Variant;

/// Errors of the CUDA backend: libraries or device missing, driver calls, memory, NVRTC.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// libcuda could not be loaded.
    #[error("no NVIDIA driver: libcuda could not be loaded")]
    NoDriver,
    /// libnvrtc could not be loaded, so no kernel can be compiled.
    #[error(
        "NVRTC could not be loaded (libnvrtc.so from the CUDA toolkit or the \
        nvidia-cuda-nvrtc wheel must be on LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    /// No device at the requested ordinal, or its context could not be created.
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    /// A driver call failed.
    #[error("{what}: {err}")]
    Driver {
        /// What was being done, e.g. "creating a stream".
        what: String,
        /// The driver's error, debug-formatted.
        err: String,
    },
    /// A device allocation failed with `CUDA_ERROR_OUT_OF_MEMORY`.
    #[error("GPU out of memory: {bytes} bytes needed for a {frame} frame")]
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
        /// The frame the buffer was for, described.
        frame: String,
    },
    /// NVRTC could not create or compile a kernel module.
    #[error("NVRTC failed to compile {module}: {log}")]
    Compile {
        /// The module's name (with the compile options when compiling failed).
        module: String,
        /// NVRTC's log, or its error when the log is empty.
        log: String,
    },
    /// A plan, shape or device frame this backend or variant cannot handle.
    #[error("{0}")]
    Unsupported(String),
}

impl CudaError {
    /// True for the errors that mean "no GPU to use here": no driver, no NVRTC, no device.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            CudaError::NoDriver | CudaError::NoNvrtc | CudaError::NoDevice(_)
        )
    }

    fn driver(what: &str, e: DriverError) -> Self {
        CudaError::Driver {
            what: what.to_string(),
            err: format!("{e:?}"),
        }
    }
}

impl From<CudaError> for crate::device::DeviceError {
    fn from(e: CudaError) -> Self {
        crate::device::DeviceError(Box::new(e))
    }
}

const DEFAULT_BLOCK: (u32, u32) = (32, 8);

/// Frames the pipeline's filter stage may have in flight on the backend's stream: launching
/// the next frame's kernels while the last ones run hides the host's launch and wake-up time
/// (measured on an H100: ~20 µs a frame, the filter stage's whole cost at 720p gray).
const DEVICE_DEPTH: usize = 2;
/// Where the in-flight frames' events begin among the backend's events.
const SLOT_EVENTS: usize = 5;
/// Events per in-flight frame: its kernels' start and end (timing events), and the end of an
/// untimed frame (an event without timing).
const EVENTS_PER_SLOT: usize = 3;

/// In-flight slot `slot`'s event `which` (0 start, 1 end, 2 untimed end).
fn slot_event(slot: usize, which: usize) -> usize {
    SLOT_EVENTS + EVENTS_PER_SLOT * slot + which
}

/// One frame in this many that the pipeline's filter stage runs has its kernels timed
/// ([`timing::Sampler`]), as one copy in `offload::COPY_TIME_EVERY` is.
/// `CONVFLOW_KERNEL_TIME_EVERY` overrides it (1: every frame).
const KERNEL_TIME_EVERY: usize = 16;

/// True when the CUDA driver library can be loaded (no panic, no GPU needed).
pub fn driver_present() -> bool {
    // Asked once: each try loads and unloads the library.
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to dlopen the library.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// CUDA devices the driver reports (0 without a driver).
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// The driver's CUDA version as "major.minor", when a driver is present.
pub fn driver_version() -> Option<String> {
    if !driver_present() {
        return None;
    }
    raw::driver_version().map(|v| format!("{}.{}", v / 1000, v % 1000 / 10))
}

/// True when NVRTC can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The `cuda` backend: one device, one stream (and side streams forked from it and joined back
/// for a frame's independent `fast` launches, `lanes`), the chosen [`Variant`], its
/// device buffers, staging and compiled modules, reused across frames.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Side streams for the independent launches of one frame ([`lanes::Lanes`]).
    lanes: lanes::Lanes,
    registry: Registry,
    variant: Variant,
    block: Option<(u32, u32)>,
    device: String,
    /// Whether the device runs programmatic dependent launches (compute capability 9.0 and
    /// later), which `fast` queues its launches as.
    dependent_launches: bool,
    /// What the backend read of its device once ([`attributes::Attributes`]).
    attrs: attributes::Attributes,
    d_src: Option<CudaSlice<u8>>,
    d_dst: Option<CudaSlice<u8>>,
    d_tmp: Option<CudaSlice<f32>>,
    d_scratch: Option<CudaSlice<u8>>,
    d_w: Option<CudaSlice<f32>>,
    /// What `d_w` holds.
    w_host: Vec<f32>,
    /// What each module's `__constant__` arrays hold, by symbol (their bits: f32 weights or
    /// packed integer ones).
    const_host: std::collections::HashMap<(ModuleKey, &'static str), Vec<u32>>,
    /// Uploads into `__constant__` arrays so far: launches prepared before the last one may
    /// read weights since replaced.
    const_uploads: u64,
    /// `fast`'s launches of the last frame, replayed while they fit ([`fast::Prepared`]).
    fast_launches: Option<fast::Prepared>,
    ceilings: Option<(f64, f64)>,
    /// Copy frames straight from/to pageable memory (`--pageable`) instead of staging them
    /// through page-locked buffers.
    pageable: bool,
    /// Let the pipeline drive uploads and downloads on their own streams ([`Backend::offload`]).
    offload: bool,
    /// `fast` picks its kernels as for planes of any size ([`CudaBackend::set_large_rules`]).
    large_rules: bool,
    /// Events around the last frame's upload, kernels and download: upload start, upload
    /// end, kernels end, download end, kernels start; then three per frame the pipeline may
    /// have in flight ([`SLOT_EVENTS`], [`slot_event`]).
    events: Option<Vec<cudarc::driver::CudaEvent>>,
    /// Frames started by `start_device` and not finished: the oldest's slot, and how many.
    in_flight: (usize, usize),
    /// Which frames `start_device` starts have their kernels timed.
    sampler: timing::Sampler,
    /// Whether each in-flight frame's kernels are timed.
    slot_timed: [bool; DEVICE_DEPTH],
    /// The module loading each in-flight frame's launch spent (taken off its device time).
    slot_loaded: [Duration; DEVICE_DEPTH],
    /// The event to record as the kernels' start once the frame's first kernel module is
    /// loaded (so that compiling or loading a module is not counted as device time), and the
    /// registry's loading time when it was recorded: modules loaded later in the frame (a
    /// second plane's) are taken off the kernels' time (the stream idles while they load).
    start_pending: Option<usize>,
    loading_at_start: Duration,
    last: Option<DeviceTimes>,
    /// Upload staging: page-locked and write-combined.
    pin_up: Option<PinnedBuf>,
    /// Download staging: plain page-locked memory, which the CPU reads back at full speed.
    pin_down: Option<PinnedBuf>,
    /// The kernels `fast` handed the last plan to when no specialization fitted it.
    fallback: Option<&'static str>,
}

impl CudaBackend {
    /// Opens device `ordinal` with `variant` and an optional block shape.
    pub fn new(
        ordinal: usize,
        variant: Variant,
        block: Option<(u32, u32)>,
    ) -> Result<Self, CudaError> {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        if !nvrtc_present() {
            return Err(CudaError::NoNvrtc);
        }
        let count =
            CudaContext::device_count().map_err(|e| CudaError::NoDevice(format!("{e:?}")))?;
        if count <= ordinal as i32 {
            return Err(CudaError::NoDevice(format!(
                "{count} CUDA device(s) found, asked for device {ordinal}"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| CudaError::NoDevice(format!("{e:?}")))?;
        // SAFETY: this backend orders all work on its buffers on one stream (side streams start
        // from an event on it and are joined back before anything queued after them, lanes.rs),
        // so cudarc's cross-stream event tracking has nothing to order.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| CudaError::driver("reading compute capability", e))?;
        let attrs = attributes::Attributes::read(&ctx)?;
        let device = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        // A stream of its own (non-blocking): the pipeline's copy streams run beside it.
        let stream = ctx
            .new_stream()
            .map_err(|e| CudaError::driver("creating a stream", e))?;
        let arch = (major * 10 + minor) as u32;
        Ok(CudaBackend {
            registry: Registry::new(ctx.clone(), arch),
            ctx,
            stream,
            lanes: lanes::Lanes::default(),
            variant,
            block,
            device: format!("{device} (sm_{arch})"),
            dependent_launches: major >= 9,
            attrs,
            d_src: None,
            d_dst: None,
            d_tmp: None,
            d_scratch: None,
            d_w: None,
            w_host: Vec::new(),
            const_host: Default::default(),
            const_uploads: 0,
            fast_launches: None,
            ceilings: None,
            pageable: false,
            offload: true,
            large_rules: false,
            events: None,
            in_flight: (0, 0),
            sampler: timing::Sampler::from_env("CONVFLOW_KERNEL_TIME_EVERY", KERNEL_TIME_EVERY),
            slot_timed: [true; DEVICE_DEPTH],
            slot_loaded: [Duration::ZERO; DEVICE_DEPTH],
            start_pending: None,
            loading_at_start: Duration::ZERO,
            last: None,
            pin_up: None,
            pin_down: None,
            fallback: None,
        })
    }

    /// `true`: copy frames directly from/to their pageable memory (the literature's loop, kept
    /// for comparison); `false` (default): stage through page-locked buffers.
    pub fn set_pageable(&mut self, pageable: bool) {
        self.pageable = pageable;
    }

    /// `true`: `fast` chooses its kernels for every plane as for the largest (the kernels its
    /// size rules keep for 4K and 8K planes then run on small frames too: for the tests).
    pub fn set_large_rules(&mut self, large: bool) {
        self.large_rules = large;
    }

    /// `false`: [`Backend::offload`] returns None, so the pipeline filters frames synchronously
    /// in its filter stage (`--sync`).
    pub fn set_offload(&mut self, offload: bool) {
        self.offload = offload;
    }

    /// Whether the device runs programmatic dependent launches (compute capability 9.0 and
    /// later).
    pub(in crate::backend::cuda) fn dependent_launches(&self) -> bool {
        self.dependent_launches
    }

    /// The device's name and architecture, e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
    pub fn device_name(&self) -> &str {
        &self.device
    }

    /// The device's peak DRAM bytes per multiprocessor per SM clock cycle (H100 SXM about 12.8,
    /// H200 18.4), where its attributes give it: `fast` takes the rules measured on fast
    /// memory from [`fast::FAST_MEMORY_MIN_BYTES_PER_SM_CYCLE`].
    pub fn memory_rate(&self) -> Option<f64> {
        self.attrs.memory_rate
    }

    /// The variant this backend was created with.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The byte offsets of [`PlaneParams`]' fields as the compiled kernels see them, in
    /// declaration order (the ABI test compares them with [`abi::PLANE_PARAMS_FIELDS`]).
    pub fn device_plane_params_layout(&mut self) -> Result<Vec<i64>, CudaError> {
        let f = self
            .registry
            .function(&ModuleKey::Direct, "convflow_plane_params_layout")?;
        let err = |e| CudaError::driver("reading the kernels' PlaneParams layout", e);
        let mut out = self
            .stream
            .alloc_zeros::<i64>(abi::PLANE_PARAMS_FIELDS.len())
            .map_err(err)?;
        abi::launch::layout(&self.stream, &f, &mut out)?;
        self.stream.clone_dtoh(&out).map_err(err)
    }

    // --- What the variants' launch functions use. ---

    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// `n` side streams that start after the work queued so far ([`lanes::Lanes::fork`]).
    fn fork(&mut self, n: usize) -> Result<Vec<Arc<CudaStream>>, CudaError> {
        self.lanes.fork(&self.ctx, &self.stream, n)
    }

    /// The stream waits for the first `n` side streams' work ([`lanes::Lanes::join`]).
    fn join(&self, n: usize) -> Result<(), CudaError> {
        self.lanes.join(&self.stream, n)
    }

    /// The launch block: `--block` or the default.
    fn block(&self) -> (u32, u32) {
        self.block.unwrap_or(DEFAULT_BLOCK)
    }

    /// The block shape asked for with `--block`, if any.
    fn block_override(&self) -> Option<(u32, u32)> {
        self.block
    }

    /// Uploads into `__constant__` arrays so far ([`CudaBackend::constant_words`]).
    fn constant_uploads(&self) -> u64 {
        self.const_uploads
    }

    /// The device's shared memory per block (opt-in maximum).
    fn max_shared(&self) -> usize {
        self.attrs.max_smem
    }

    fn function(&mut self, key: &ModuleKey, name: &str) -> Result<CudaFunction, CudaError> {
        let f = self.registry.function(key, name)?;
        self.start_kernels()?;
        Ok(f)
    }

    /// Records the pending kernels-start event, if any (the first launch or copy of a frame).
    fn start_kernels(&mut self) -> Result<(), CudaError> {
        match self.start_pending.take() {
            Some(i) => {
                self.loading_at_start = self.registry.loading();
                self.record(i)
            }
            None => Ok(()),
        }
    }

    /// The event that ends in-flight slot `slot`'s kernels: a timing event when they are timed.
    fn slot_end(&self, slot: usize) -> usize {
        slot_event(slot, if self.slot_timed[slot] { 1 } else { 2 })
    }

    /// Device time between the kernels' events `a` and `b`, less the modules loaded between.
    fn kernel_time(&self, a: usize, b: usize) -> Duration {
        let loaded = self.registry.loading() - self.loading_at_start;
        self.between(a, b).saturating_sub(loaded)
    }

    /// Records that `fast` ran the plan with the baseline kernels `ran`.
    fn note_fallback(&mut self, ran: &'static str) {
        self.fallback = Some(ran);
    }

    /// Checks `smem` against the device, raises the function's dynamic shared-memory limit when
    /// needed, and returns the launch configuration.
    fn config(
        &self,
        f: &CudaFunction,
        grid: (u32, u32),
        block: (u32, u32),
        smem: usize,
    ) -> Result<LaunchConfig, CudaError> {
        if smem > self.attrs.max_smem {
            return Err(CudaError::Unsupported(format!(
                "this kernel and block {}x{} need {smem} bytes of shared memory, the device \
                allows {}: \
                 use a smaller --block or another --variant",
                block.0, block.1, self.attrs.max_smem
            )));
        }
        if smem > 48 * 1024 {
            f.set_attribute(
                FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
            )
            .map_err(|e| CudaError::driver("raising the shared-memory limit", e))?;
        }
        Ok(LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (block.0, block.1, 1),
            shared_mem_bytes: smem as u32,
        })
    }

    // --- Frames. ---

    /// Filters every plane of a frame of shape `src` at device address `d_src` into `d_dst`:
    /// planes with channels to filter run the variant, the others are copied on the device.
    fn run_planes_at(
        &mut self,
        plan: &Plan,
        src: &Shape,
        dst: &Shape,
        d_src: u64,
        d_dst: u64,
    ) -> Result<(), CudaError> {
        if plan.kernel.width() > i32::MAX as usize / 8 || src.len > i32::MAX as usize {
            return Err(CudaError::Unsupported(
                "frame or kernel too large for 32-bit indexing".into(),
            ));
        }
        self.fallback = None;
        let mut filtered = Vec::with_capacity(src.planes.len());
        for i in 0..src.planes.len() {
            let (s, d) = (src.planes[i], dst.planes[i]);
            let mask = plan.channel_mask(src.format, i);
            let (src_ptr, dst_ptr) = (d_src + s.offset as u64, d_dst + d.offset as u64);
            if mask == 0 {
                self.start_kernels()?;
                // SAFETY: both planes lie in the frames' device buffers (the callers' shapes
                // describe them), which outlive the stream's work on this frame.
                unsafe {
                    raw::copy_2d_d2d(
                        src_ptr,
                        s.stride,
                        dst_ptr,
                        d.stride,
                        s.row_bytes(),
                        s.height,
                        self.stream.cu_stream(),
                    )
                }
                .map_err(|e| CudaError::driver("copying a plane", e))?;
                continue;
            }
            let k = &plan.kernel;
            let p = PlaneParams {
                src: src_ptr,
                dst: dst_ptr,
                width: s.width as i32,
                height: s.height as i32,
                src_stride: s.stride as i32,
                dst_stride: d.stride as i32,
                channels: s.channels as i32,
                mask: mask as i32,
                kw: k.width() as i32,
                kh: k.height() as i32,
                ax: k.anchor().0 as i32,
                ay: k.anchor().1 as i32,
                abs_out: plan.abs as i32,
                offset: k.offset(),
                maxval: s.depth.max() as i32,
                shift: s.depth.shift() as i32,
            };
            filtered.push((p, s));
        }
        let variant = self.variant;
        variant.launch(self, plan, &filtered)?;
        self.start_kernels()
    }
}

impl Backend for CudaBackend {
    fn device_details(&self) -> Vec<String> {
        self.attrs.details()
    }

    fn name(&self) -> String {
        let copies = match (self.offload, self.pageable) {
            (true, false) => "pinned buffers, copies on their own streams",
            (true, true) => "pageable buffers, copies on their own streams",
            (false, true) => "pageable, copies and kernels on one stream",
            (false, false) => "pinned staging, copies and kernels on one stream",
        };
        let ran = self.fallback.map_or(String::new(), |k| {
            format!("ran as {k}: no fast specialization fits this kernel; ")
        });
        format!("cuda {} on {} ({ran}{copies})", self.variant, self.device)
    }

    fn runs(&self) -> Support {
        self.variant.runs()
    }

    fn host_scratch(&self, _plan: &Plan) -> usize {
        // The synchronous path stages each frame through two page-locked buffers.
        if self.offload || self.pageable {
            0
        } else {
            2
        }
    }

    fn filter_frame(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
    ) -> Result<(), BackendError> {
        check_shapes(src, dst)?;
        self.check_plan(plan)?;
        self.last = None;
        self.record(0)?;
        let (s_dev, d_dev) = self.upload(src, dst)?;
        self.record(1)?;
        let d_src = ptr(self.d_src.as_ref().expect("uploaded"), &self.stream);
        let d_dst = ptr(self.d_dst.as_ref().expect("uploaded"), &self.stream);
        self.start_pending = Some(4);
        self.run_planes_at(plan, &s_dev, &d_dev, d_src, d_dst)?;
        self.record(2)?;
        self.download_then(dst, &d_dev, |b| b.record(3))?;
        self.last = Some(DeviceTimes {
            h2d: self.between(0, 1),
            kernel: self.kernel_time(4, 2),
            d2h: self.between(2, 3),
        });
        Ok(())
    }

    fn last_times(&self) -> Option<DeviceTimes> {
        self.last
    }

    fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
        if !self.offload {
            return Ok(None);
        }
        Ok(Some(Arc::new(CudaOffload::new(
            self.ctx.clone(),
            self.pageable,
        ))))
    }

    unsafe fn start_device(
        &mut self,
        plan: &Plan,
        src: &DeviceFrame,
        dst: &mut DeviceFrame,
    ) -> Result<(), BackendError> {
        if src.shape.format != dst.shape.format
            || src.shape.width != dst.shape.width
            || src.shape.height != dst.shape.height
        {
            return Err(BackendError::Shape {
                src: src.shape.describe(),
                dst: dst.shape.describe(),
            });
        }
        self.check_plan(plan)?;
        let (oldest, pending) = self.in_flight;
        if pending == DEVICE_DEPTH {
            return Err(
                CudaError::Unsupported(format!("{pending} frames already in flight")).into(),
            );
        }
        let slot = (oldest + pending) % DEVICE_DEPTH;
        let d_src = offload::device_ptr(src)?;
        let d_dst = offload::device_ptr(dst)?;
        // The kernels run in stream order after the frames before them, so they may share
        // the intermediate and weight buffers.
        let timed = self.sampler.next();
        self.slot_timed[slot] = timed;
        self.start_pending = timed.then_some(slot_event(slot, 0));
        self.run_planes_at(plan, &src.shape, &dst.shape, d_src, d_dst)?;
        self.record(self.slot_end(slot))?;
        if timed {
            self.slot_loaded[slot] = self.registry.loading() - self.loading_at_start;
        }
        self.in_flight.1 += 1;
        Ok(())
    }

    fn finish_device(&mut self) -> Result<Option<Duration>, BackendError> {
        let (slot, pending) = self.in_flight;
        if pending == 0 {
            return Err(CudaError::Unsupported("no frame in flight to finish".into()).into());
        }
        let end = self.slot_end(slot);
        self.in_flight = ((slot + 1) % DEVICE_DEPTH, pending - 1);
        self.events()?[end]
            .synchronize()
            .map_err(|e| CudaError::driver("running the filter", e))?;
        Ok(self.slot_timed[slot].then(|| {
            self.between(slot_event(slot, 0), end)
                .saturating_sub(self.slot_loaded[slot])
        }))
    }

    fn device_depth(&self) -> usize {
        DEVICE_DEPTH
    }

    fn device_done(&mut self) -> bool {
        let (slot, pending) = self.in_flight;
        let end = self.slot_end(slot);
        match &self.events {
            Some(e) if pending > 0 => e[end].try_is_complete().unwrap_or(true),
            _ => true,
        }
    }

    fn measure(&mut self) -> Option<&mut dyn Measure> {
        Some(self)
    }
}
