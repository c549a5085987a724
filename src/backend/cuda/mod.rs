//! `cuda`: the GPU backend (cudarc with dynamic loading: the binary builds and runs without
//! CUDA; the driver and NVRTC are loaded when a CUDA backend is created).
//!
//! A frame is uploaded in one copy into a device buffer that mirrors the host layout (same
//! plane offsets and strides), every plane is filtered by the chosen [`Variant`], and the result
//! comes back in one copy. Device buffers grow as needed and are reused across frames; weights
//! are re-uploaded only when the plan changes. Launch geometry and shared-memory sizes are
//! computed here; the kernels read `blockDim`. Every variant implements the arithmetic contract,
//! so all of them equal `cpu-seq` bit for bit.

mod offload;
mod raw;
pub mod registry;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{self, CUfunction_attribute_enum as FnAttr};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};

use super::{check_shapes, Backend, BackendError, DeviceFrame, DeviceTimes, Offload, Support};
use crate::border::Border;
use crate::filter::{Decomposition, Plan};
use crate::frame::{Frame, PlaneLayout, Shape};
use offload::CudaOffload;
use registry::{entry_name, FastSpec, ModuleKey, Registry};

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("no NVIDIA driver: libcuda could not be loaded")]
    NoDriver,
    #[error("NVRTC could not be loaded (libnvrtc.so from the CUDA toolkit or the nvidia-cuda-nvrtc wheel must be on LD_LIBRARY_PATH)")]
    NoNvrtc,
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    #[error("{what}: {err}")]
    Driver { what: String, err: String },
    #[error("GPU out of memory: {bytes} bytes needed for a {frame} frame")]
    OutOfMemory { bytes: usize, frame: String },
    #[error("NVRTC failed to compile {module}: {log}")]
    Compile { module: String, log: String },
    #[error("{0}")]
    Unsupported(String),
}

impl CudaError {
    fn driver(what: &str, e: DriverError) -> Self {
        CudaError::Driver {
            what: what.to_string(),
            err: format!("{e:?}"),
        }
    }
}

/// The memory variants (`--variant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Variant {
    /// `fast` for every plan (it was the fastest at every measured point: docs/PERFORMANCE.md).
    #[default]
    Auto,
    Global,
    Constant,
    Shared,
    SharedConstant,
    Texture,
    SeparableGlobal,
    SeparableShared,
    Fast,
}

impl Variant {
    pub const ALL: [Variant; 9] = [
        Variant::Auto,
        Variant::Global,
        Variant::Constant,
        Variant::Shared,
        Variant::SharedConstant,
        Variant::Texture,
        Variant::SeparableGlobal,
        Variant::SeparableShared,
        Variant::Fast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Auto => "auto",
            Variant::Global => "global",
            Variant::Constant => "constant",
            Variant::Shared => "shared",
            Variant::SharedConstant => "shared-constant",
            Variant::Texture => "texture",
            Variant::SeparableGlobal => "separable-global",
            Variant::SeparableShared => "separable-shared",
            Variant::Fast => "fast",
        }
    }

    /// Which decompositions the variant runs.
    pub fn support(self) -> Support {
        match self {
            Variant::Global | Variant::Constant | Variant::Shared | Variant::SharedConstant | Variant::Texture => {
                Support::FullOnly
            }
            Variant::SeparableGlobal | Variant::SeparableShared => Support::SeparableOnly,
            Variant::Fast | Variant::Auto => Support::Both,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Variant::ALL.into_iter().find(|v| v.name() == s).ok_or_else(|| {
            let names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
            format!("unknown variant '{s}' (expected {})", names.join(", "))
        })
    }
}

/// The parameter block every kernel takes first (`PlaneParams` in kernels/common.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct PlaneParams {
    src: u64,
    dst: u64,
    width: i32,
    height: i32,
    src_stride: i32,
    dst_stride: i32,
    channels: i32,
    mask: i32,
    kw: i32,
    kh: i32,
    ax: i32,
    ay: i32,
    abs_out: i32,
    offset: f32,
}

// SAFETY: plain-old-data with the exact #[repr(C)] layout of the CUDA struct.
unsafe impl DeviceRepr for PlaneParams {}

const DEFAULT_BLOCK: (u32, u32) = (32, 8);
/// Passes per timed event pair in [`CudaBackend::kernel_times`].
const TIMED_BATCH: usize = 10;

/// Launches `$f` on the backend's stream with `$cfg` and the given kernel arguments.
macro_rules! launch {
    ($self:expr, $f:expr, $cfg:expr $(, $arg:expr)*) => {{
        let mut b = $self.stream.launch_builder(&$f);
        $( b.arg(&$arg); )*
        // SAFETY: the arguments match the kernel's parameter list (PlaneParams, then device
        // pointers / scalars, as declared in kernels/*.cu); the buffers PlaneParams points into
        // are live and sized for the plane layouts (grown before any launch).
        unsafe { b.launch($cfg) }.map(|_| ()).map_err(|e| CudaError::driver("launching a kernel", e))
    }};
}
/// Taps that fit the `__constant__` arrays of direct.cu (CONVFLOW_MAX_CONST_TAPS) and fast.cu.
const MAX_CONST_TAPS: usize = 16000;

/// True when the CUDA driver library can be loaded (no panic, no GPU needed).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
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

pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    registry: Registry,
    variant: Variant,
    block: Option<(u32, u32)>,
    device: String,
    max_smem: usize,
    tex_align: u64,
    tex_pitch_align: usize,
    d_src: Option<CudaSlice<u8>>,
    d_dst: Option<CudaSlice<u8>>,
    d_tmp: Option<CudaSlice<f32>>,
    d_scratch: Option<CudaSlice<u8>>,
    d_w: Option<CudaSlice<f32>>,
    /// What `d_w` holds.
    w_host: Vec<f32>,
    /// What each module's `__constant__` weights hold.
    const_host: std::collections::HashMap<ModuleKey, Vec<f32>>,
    ceilings: Option<(f64, f64)>,
    /// Copy frames straight from/to pageable memory (`--pageable`) instead of staging them
    /// through page-locked buffers.
    pageable: bool,
    /// Let the pipeline drive uploads and downloads on their own streams ([`Backend::offload`]).
    offload: bool,
    /// Events around the last frame's upload, kernels and download.
    events: Option<[cudarc::driver::CudaEvent; 4]>,
    last: Option<DeviceTimes>,
    /// Upload staging: page-locked and write-combined (fast for the CPU to write and for the
    /// GPU to read; never read on the CPU).
    pin_up: Option<PinnedHostSlice<u8>>,
    /// Download staging: plain page-locked memory, which the CPU reads back at full speed.
    pin_down: Option<PinnedHostSlice<u8>>,
}

/// A page-locked buffer of exactly `len` bytes in `slot` (reallocated when the size changes).
fn pinned(
    ctx: &Arc<CudaContext>,
    slot: &mut Option<PinnedHostSlice<u8>>,
    len: usize,
    write_combined: bool,
) -> Result<(), CudaError> {
    if slot.as_ref().is_some_and(|b| b.len() == len) {
        return Ok(());
    }
    *slot = None;
    let flags = if write_combined {
        sys::CU_MEMHOSTALLOC_WRITECOMBINED
    } else {
        0
    };
    // SAFETY: the buffer is fully written (upload: the frame is copied in; download: the copy
    // from the device fills it) before anything reads it.
    let buf = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, flags) }
        .map_err(|e| CudaError::driver("allocating page-locked host memory", e))?;
    *slot = Some(buf);
    Ok(())
}

fn grow<T: DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    slot: &mut Option<CudaSlice<T>>,
    len: usize,
    stream: &Arc<CudaStream>,
    frame: &str,
) -> Result<(), CudaError> {
    if slot.as_ref().is_some_and(|s| s.len() >= len) {
        return Ok(());
    }
    *slot = None; // free first, so a larger buffer can take its place
                  // 64 bytes of slack: kernels may read whole aligned words that end past the last row.
    let buf = stream.alloc_zeros::<T>(len + 64).map_err(|e| {
        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            CudaError::OutOfMemory {
                bytes: len * std::mem::size_of::<T>(),
                frame: frame.to_string(),
            }
        } else {
            CudaError::driver("allocating device memory", e)
        }
    })?;
    *slot = Some(buf);
    Ok(())
}

fn ptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    s.device_ptr(stream).0
}

impl CudaBackend {
    /// Opens device `ordinal` with `variant` and an optional block shape.
    pub fn new(ordinal: usize, variant: Variant, block: Option<(u32, u32)>) -> Result<Self, CudaError> {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        if !nvrtc_present() {
            return Err(CudaError::NoNvrtc);
        }
        let count = CudaContext::device_count().map_err(|e| CudaError::NoDevice(format!("{e:?}")))?;
        if count <= ordinal as i32 {
            return Err(CudaError::NoDevice(format!(
                "{count} CUDA device(s) found, asked for device {ordinal}"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| CudaError::NoDevice(format!("{e:?}")))?;
        // SAFETY: this backend uses a single stream for every buffer it owns, so cudarc's
        // cross-stream event tracking has nothing to order.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| CudaError::driver("reading compute capability", e))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| CudaError::driver("reading device attributes", e))
        };
        use sys::CUdevice_attribute_enum as A;
        let max_smem = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize;
        let tex_align = attr(A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?.max(1) as u64;
        let tex_pitch_align = attr(A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)?.max(1) as usize;
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
            variant,
            block,
            device: format!("{device} (sm_{arch})"),
            max_smem,
            tex_align,
            tex_pitch_align,
            d_src: None,
            d_dst: None,
            d_tmp: None,
            d_scratch: None,
            d_w: None,
            w_host: Vec::new(),
            const_host: Default::default(),
            ceilings: None,
            pageable: false,
            offload: true,
            events: None,
            last: None,
            pin_up: None,
            pin_down: None,
        })
    }

    /// Device copy bandwidth (median of 10 copies of 1 GiB, read + written bytes counted) and
    /// the fp32 FMA rate from SM count × 128 lanes × clock.
    fn measure_ceilings(&mut self) -> Result<(f64, f64), CudaError> {
        let n = 1usize << 30;
        let a = self
            .stream
            .alloc_zeros::<u8>(n)
            .map_err(|e| CudaError::driver("allocating", e))?;
        let mut b = self
            .stream
            .alloc_zeros::<u8>(n)
            .map_err(|e| CudaError::driver("allocating", e))?;
        let ev = || {
            self.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| CudaError::driver("events", e))
        };
        let (start, end) = (ev()?, ev()?);
        let mut times = Vec::new();
        for i in 0..12 {
            start.record(&self.stream).map_err(|e| CudaError::driver("events", e))?;
            self.stream
                .memcpy_dtod(&a, &mut b)
                .map_err(|e| CudaError::driver("copying", e))?;
            end.record(&self.stream).map_err(|e| CudaError::driver("events", e))?;
            end.synchronize().map_err(|e| CudaError::driver("copying", e))?;
            if i >= 2 {
                times.push(start.elapsed_ms(&end).map_err(|e| CudaError::driver("events", e))? as f64 / 1e3);
            }
        }
        times.sort_by(|x, y| x.total_cmp(y));
        let bw = 2.0 * n as f64 / times[times.len() / 2];
        use sys::CUdevice_attribute_enum as A;
        let attr = |a| {
            self.ctx
                .attribute(a)
                .map_err(|e| CudaError::driver("reading device attributes", e))
        };
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as f64;
        let khz = attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64;
        Ok((bw, sms * 128.0 * khz * 1e3))
    }

    /// `true`: copy frames directly from/to their pageable memory (the literature's loop, kept
    /// for comparison); `false` (default): stage through page-locked buffers.
    pub fn set_pageable(&mut self, pageable: bool) {
        self.pageable = pageable;
    }

    /// `false`: [`Backend::offload`] returns None, so the pipeline filters frames synchronously
    /// in its filter stage (`--sync`).
    pub fn set_offload(&mut self, offload: bool) {
        self.offload = offload;
    }

    pub fn device_name(&self) -> &str {
        &self.device
    }

    fn block(&self) -> (u32, u32) {
        self.block.unwrap_or(DEFAULT_BLOCK)
    }

    /// Uploads `w` into the global weight buffer unless it already holds it.
    fn upload_weights(&mut self, w: &[f32]) -> Result<(), CudaError> {
        if self.w_host == w && self.d_w.is_some() {
            return Ok(());
        }
        grow(&mut self.d_w, w.len(), &self.stream, "weights")?;
        let d = self.d_w.as_mut().unwrap();
        self.stream
            .memcpy_htod(w, &mut d.slice_mut(..w.len()))
            .map_err(|e| CudaError::driver("uploading weights", e))?;
        self.w_host = w.to_vec();
        Ok(())
    }

    /// Writes `w` into the module's `__constant__` array `symbol` unless it already holds it.
    fn upload_constant(&mut self, key: &ModuleKey, symbol: &str, w: &[f32]) -> Result<(), CudaError> {
        if self.const_host.get(key).is_some_and(|h| h == w) {
            return Ok(());
        }
        let module = self.registry.module(key)?;
        let mut global = module
            .get_global(symbol, &self.stream)
            .map_err(|e| CudaError::driver("finding constant memory", e))?;
        // SAFETY: the symbol is a float array of at least `w.len()` elements (checked against
        // MAX_CONST_TAPS / the specialization's size before calling).
        let mut view = unsafe { global.transmute_mut::<f32>(w.len()) }
            .ok_or_else(|| CudaError::Unsupported(format!("{} weights do not fit constant memory", w.len())))?;
        self.stream
            .memcpy_htod(w, &mut view)
            .map_err(|e| CudaError::driver("uploading constant weights", e))?;
        self.const_host.insert(key.clone(), w.to_vec());
        Ok(())
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
        if smem > self.max_smem {
            return Err(CudaError::Unsupported(format!(
                "this kernel and block {}x{} need {smem} bytes of shared memory, the device allows {}: \
                 use a smaller --block or another --variant",
                block.0, block.1, self.max_smem
            )));
        }
        if smem > 48 * 1024 {
            f.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(|e| CudaError::driver("raising the shared-memory limit", e))?;
        }
        Ok(LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (block.0, block.1, 1),
            shared_mem_bytes: smem as u32,
        })
    }

    /// Filters (or copies, mask 0) one plane already on the device.
    fn plane(&mut self, plan: &Plan, p: PlaneParams, sl: PlaneLayout) -> Result<(), CudaError> {
        let border = plan.border;
        let (bx, by) = self.block();
        let grid2 = |gx: usize, gy: usize| ((gx as u32).div_ceil(bx), (gy as u32).div_ceil(by));
        let (w, h, ch) = (sl.width, sl.height, sl.channels);
        let weights: Vec<f32> = match &plan.decomposition {
            Decomposition::Full => plan.kernel.weights().to_vec(),
            Decomposition::Separable { col, row } => col.iter().chain(row).copied().collect(),
        };
        self.upload_weights(&weights)?;
        let dw = ptr(self.d_w.as_ref().unwrap(), &self.stream);
        let variant = if p.mask == 0 { Variant::Global } else { self.variant };
        let support = variant.support();
        let separable = matches!(plan.decomposition, Decomposition::Separable { .. });
        if (support == Support::FullOnly && separable && p.mask != 0)
            || (support == Support::SeparableOnly && !separable)
        {
            return Err(CudaError::Unsupported(format!(
                "variant '{}' runs {} kernels only, but the plan is {} (choose --mode accordingly)",
                variant,
                if support == Support::FullOnly {
                    "full"
                } else {
                    "separable"
                },
                plan.decomposition
            )));
        }
        match variant {
            Variant::Global => {
                let f = self
                    .registry
                    .function(&ModuleKey::Direct, &entry_name("conv_global", border))?;
                {
                    let cfg = self.config(&f, grid2(w, h), (bx, by), 0)?;
                    launch!(self, f, cfg, p, dw)
                }
            }
            Variant::Constant | Variant::SharedConstant => {
                if weights.len() > MAX_CONST_TAPS {
                    return Err(CudaError::Unsupported(format!(
                        "variant '{variant}' holds at most {MAX_CONST_TAPS} taps in constant memory, the kernel has {}",
                        weights.len()
                    )));
                }
                self.upload_constant(&ModuleKey::Direct, "c_weights", &weights)?;
                let (family, smem) = if variant == Variant::Constant {
                    ("conv_constant", 0)
                } else {
                    (
                        "conv_shared_constant",
                        (bx as usize + plan.kernel.width() - 1) * (by as usize + plan.kernel.height() - 1) * ch,
                    )
                };
                let f = self
                    .registry
                    .function(&ModuleKey::Direct, &entry_name(family, border))?;
                {
                    let cfg = self.config(&f, grid2(w, h), (bx, by), smem)?;
                    launch!(self, f, cfg, p)
                }
            }
            Variant::Shared => {
                let smem = (bx as usize + plan.kernel.width() - 1) * (by as usize + plan.kernel.height() - 1) * ch;
                let f = self
                    .registry
                    .function(&ModuleKey::Direct, &entry_name("conv_shared", border))?;
                {
                    let cfg = self.config(&f, grid2(w, h), (bx, by), smem)?;
                    launch!(self, f, cfg, p, dw)
                }
            }
            Variant::Texture => self.texture_plane(plan, p, sl, dw),
            Variant::SeparableGlobal => {
                grow(&mut self.d_tmp, w * h * ch, &self.stream, "intermediate")?;
                let tmp = ptr(self.d_tmp.as_ref().unwrap(), &self.stream);
                let row = self
                    .registry
                    .function(&ModuleKey::Separable, &entry_name("sep_row", border))?;
                let col = self
                    .registry
                    .function(&ModuleKey::Separable, &entry_name("sep_col", border))?;
                {
                    let cfg = self.config(&row, grid2(w, h), (bx, by), 0)?;
                    launch!(self, row, cfg, p, dw, tmp)
                }?;
                {
                    let cfg = self.config(&col, grid2(w, h), (bx, by), 0)?;
                    launch!(self, col, cfg, p, dw, tmp)
                }
            }
            Variant::SeparableShared => {
                let (tw, th) = (
                    bx as usize + plan.kernel.width() - 1,
                    by as usize + plan.kernel.height() - 1,
                );
                let smem = th * bx as usize * ch * 4 + tw * th * ch;
                let f = self
                    .registry
                    .function(&ModuleKey::Separable, &entry_name("sep_fused", border))?;
                {
                    let cfg = self.config(&f, grid2(w, h), (bx, by), smem)?;
                    launch!(self, f, cfg, p, dw)
                }
            }
            Variant::Fast | Variant::Auto => self.fast_plane(plan, p, sl, &weights, separable),
        }
    }

    fn texture_plane(&mut self, plan: &Plan, p: PlaneParams, sl: PlaneLayout, dw: u64) -> Result<(), CudaError> {
        let (bx, by) = self.block();
        let row_bytes = sl.row_bytes();
        // Hardware address modes exist for clamp and border-zero and apply per element, so they
        // are used for single-channel planes; other cases map coordinates in software.
        let hw = sl.channels == 1 && matches!(plan.border, Border::Clamp | Border::Zero);
        let mode = if plan.border == Border::Zero && hw {
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER
        } else {
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP
        };
        // Textures need aligned base addresses and pitches: copy the plane when it is not.
        let (base, pitch) = if p.src % self.tex_align == 0 && sl.stride % self.tex_pitch_align == 0 {
            (p.src, sl.stride)
        } else {
            let pitch = row_bytes.next_multiple_of(self.tex_pitch_align);
            grow(
                &mut self.d_scratch,
                pitch * sl.height + self.tex_align as usize,
                &self.stream,
                "texture copy",
            )?;
            let raw_base = ptr(self.d_scratch.as_ref().unwrap(), &self.stream);
            let base = raw_base.next_multiple_of(self.tex_align);
            raw::copy_2d_d2d(
                p.src,
                sl.stride,
                base,
                pitch,
                row_bytes,
                sl.height,
                self.stream.cu_stream(),
            )
            .map_err(|e| CudaError::driver("copying a plane for the texture", e))?;
            (base, pitch)
        };
        let tex = raw::Texture::pitch2d_u8(base, row_bytes, sl.height, pitch, mode)
            .map_err(|e| CudaError::driver("creating a texture object", e))?;
        let f = self
            .registry
            .function(&ModuleKey::Direct, &entry_name("conv_texture", plan.border))?;
        let handle = tex.handle();
        let hw_flag = hw as i32;
        let grid = ((sl.width as u32).div_ceil(bx), (sl.height as u32).div_ceil(by));
        {
            let cfg = self.config(&f, grid, (bx, by), 0)?;
            launch!(self, f, cfg, p, dw, handle, hw_flag)
        }?;
        // The texture must outlive the kernel that reads it.
        self.stream
            .synchronize()
            .map_err(|e| CudaError::driver("running the texture kernel", e))?;
        drop(tex);
        Ok(())
    }

    /// `fast`: the specialized kernels, with the block shrunk automatically (unless given) until
    /// the tile fits shared memory; kernels too large for constant memory or for any tile fall
    /// back to the `global` / `separable-global` kernels (same results, slower).
    fn fast_plane(
        &mut self,
        plan: &Plan,
        p: PlaneParams,
        sl: PlaneLayout,
        weights: &[f32],
        separable: bool,
    ) -> Result<(), CudaError> {
        let (kw, kh, ch) = (plan.kernel.width(), plan.kernel.height(), sl.channels);
        // Small kernels: the streaming kernel (1D blocks of 128 threads), unless a block shape
        // was asked for, which only the tiled kernels take.
        let size = (sl.width, sl.height);
        if let Some(spec) = FastSpec::stream(kw, kh, ch, plan.border, separable, size).filter(|_| self.block.is_none())
        {
            let key = ModuleKey::Fast(spec.clone());
            self.upload_constant(&key, "c_w", weights)?;
            let f = self.registry.function(&key, "fast_stream")?;
            let threads = 128u32;
            let grid = (
                (sl.width * ch).div_ceil(spec.px).div_ceil(threads as usize) as u32,
                sl.height.div_ceil(spec.stream_rows) as u32,
            );
            let cfg = self.config(&f, grid, (threads, 1), 0)?;
            return launch!(self, f, cfg, p);
        }
        let spec = if separable {
            FastSpec::separable(kw, kh, ch, plan.border)
        } else {
            FastSpec::new(kw, kh, ch, plan.border)
        };
        let candidates: Vec<(u32, u32)> = match self.block {
            Some(b) => vec![b],
            None => vec![
                (32, 8),
                (16, 8),
                (32, 4),
                (16, 4),
                (8, 8),
                (8, 4),
                (16, 2),
                (8, 2),
                (8, 1),
                (4, 1),
                (1, 1),
            ],
        };
        let smem_for = |(bx, by): (u32, u32)| {
            let bw = bx as usize * spec.px;
            let tw = bw + (kw - 1) * ch;
            let ts = (tw + 6) & !3; // tile_stride() in fast.cu
            let th = by as usize * spec.py + kh - 1;
            if separable {
                (ts * th + th * bw) * 4
            } else {
                ts * th * 4
            }
        };
        let fits = weights.len() <= MAX_CONST_TAPS;
        // Prefer a block whose tile fits 48 KB (several blocks per multiprocessor), else the
        // largest that fits at all.
        let chosen = candidates
            .iter()
            .copied()
            .find(|&b| smem_for(b) <= 48 * 1024)
            .or_else(|| candidates.iter().copied().find(|&b| smem_for(b) <= self.max_smem));
        let Some(block) = chosen.filter(|_| fits) else {
            if self.block.is_some() && fits {
                let b = candidates[0];
                return Err(CudaError::Unsupported(format!(
                    "variant 'fast' with block {}x{} needs {} bytes of shared memory for this kernel, the device allows {}",
                    b.0,
                    b.1,
                    smem_for(b),
                    self.max_smem
                )));
            }
            let fallback = if separable {
                Variant::SeparableGlobal
            } else {
                Variant::Global
            };
            let saved = std::mem::replace(&mut self.variant, fallback);
            let r = self.plane(plan, p, sl);
            self.variant = saved;
            return r;
        };
        let key = ModuleKey::Fast(spec.clone());
        self.upload_constant(&key, "c_w", weights)?;
        let name = if separable { "fast_sep" } else { "fast_full" };
        let f = self.registry.function(&key, name)?;
        let rows = block.1 as usize * spec.py;
        let grid = (
            (sl.width * ch).div_ceil(block.0 as usize * spec.px) as u32,
            sl.height.div_ceil(rows) as u32,
        );
        {
            let cfg = self.config(&f, grid, block, smem_for(block))?;
            launch!(self, f, cfg, p)
        }
    }

    fn params(plan: &Plan, src: &Shape, dst: &Shape, i: usize, d_src: u64, d_dst: u64, mask: u8) -> PlaneParams {
        let (s, d) = (src.planes[i], dst.planes[i]);
        let k = &plan.kernel;
        PlaneParams {
            src: d_src + s.offset as u64,
            dst: d_dst + d.offset as u64,
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
        }
    }

    /// Grows device buffers for `src`/`dst` and uploads `src`.
    fn upload(&mut self, src: &Frame, dst: &Frame) -> Result<(), CudaError> {
        let what = src.describe();
        grow(&mut self.d_src, src.data().len(), &self.stream, &what)?;
        grow(&mut self.d_dst, dst.data().len(), &self.stream, &what)?;
        let n = src.data().len();
        let d = self.d_src.as_mut().unwrap();
        let up = |e| CudaError::driver("uploading a frame", e);
        if self.pageable {
            return self.stream.memcpy_htod(src.data(), &mut d.slice_mut(..n)).map_err(up);
        }
        pinned(&self.ctx, &mut self.pin_up, n, true)?;
        let pin = self.pin_up.as_mut().unwrap();
        pin.as_mut_slice().map_err(up)?.copy_from_slice(src.data());
        self.stream.memcpy_htod(pin, &mut d.slice_mut(..n)).map_err(up)
    }

    /// Launches every plane of an uploaded frame (in the backend's own buffers).
    fn run_planes(&mut self, plan: &Plan, src: &Frame, dst: &Frame) -> Result<(), CudaError> {
        let d_src = ptr(self.d_src.as_ref().unwrap(), &self.stream);
        let d_dst = ptr(self.d_dst.as_ref().unwrap(), &self.stream);
        self.run_planes_at(plan, &src.shape(), &dst.shape(), d_src, d_dst)
    }

    /// Launches every plane of a frame of shape `src` at device address `d_src` into `d_dst`.
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
        for i in 0..src.planes.len() {
            let mask = plan.channel_mask(src.format, i);
            let p = Self::params(plan, src, dst, i, d_src, d_dst, mask);
            self.plane(plan, p, src.planes[i])?;
        }
        Ok(())
    }

    /// Four timing events on the backend's stream (created once).
    fn events(&mut self) -> Result<&[cudarc::driver::CudaEvent; 4], CudaError> {
        if self.events.is_none() {
            let ev = || {
                self.ctx
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| CudaError::driver("creating events", e))
            };
            self.events = Some([ev()?, ev()?, ev()?, ev()?]);
        }
        Ok(self.events.as_ref().unwrap())
    }

    fn record(&mut self, i: usize) -> Result<(), CudaError> {
        let stream = self.stream.clone();
        self.events()?[i]
            .record(&stream)
            .map_err(|e| CudaError::driver("recording an event", e))
    }

    /// Device time between events `a` and `b` (both complete).
    fn between(&self, a: usize, b: usize) -> Duration {
        let ev = self.events.as_ref().expect("events recorded");
        let ms = ev[a].elapsed_ms(&ev[b]).unwrap_or(0.0).max(0.0) as f64;
        Duration::from_secs_f64(ms / 1e3)
    }

    fn download(&mut self, dst: &mut Frame) -> Result<(), CudaError> {
        self.download_then(dst, |_| Ok(()))
    }

    /// Downloads the result; `after` runs once the copy is queued, before the wait.
    fn download_then(
        &mut self,
        dst: &mut Frame,
        after: impl FnOnce(&mut Self) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        let n = dst.data().len();
        let down = |e| CudaError::driver("downloading a frame", e);
        let done = |e| CudaError::driver("running the filter", e);
        if self.pageable {
            let d = self.d_dst.as_ref().unwrap();
            self.stream.memcpy_dtoh(&d.slice(..n), dst.data_mut()).map_err(down)?;
            after(self)?;
            return self.stream.synchronize().map_err(done);
        }
        pinned(&self.ctx, &mut self.pin_down, n, false)?;
        let d = self.d_dst.as_ref().unwrap();
        let pin = self.pin_down.as_mut().unwrap();
        self.stream.memcpy_dtoh(&d.slice(..n), pin).map_err(down)?;
        after(self)?;
        self.stream.synchronize().map_err(done)?;
        let pin = self.pin_down.as_mut().unwrap();
        dst.data_mut().copy_from_slice(pin.as_slice().map_err(down)?);
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        let copies = match (self.offload, self.pageable) {
            (true, false) => "pinned buffers, copies on their own streams",
            (true, true) => "pageable buffers, copies on their own streams",
            (false, true) => "pageable, copies and kernels on one stream",
            (false, false) => "pinned staging, copies and kernels on one stream",
        };
        format!("cuda {} on {} ({copies})", self.variant, self.device)
    }

    fn support(&self) -> Support {
        self.variant.support()
    }

    fn filter_plane(
        &mut self,
        _plan: &Plan,
        _src: crate::frame::PlaneRef<'_>,
        _dst: crate::frame::PlaneMut<'_>,
        _mask: u8,
    ) -> Result<(), BackendError> {
        // Planes are filtered on the device as part of a whole-frame upload (filter_frame).
        Err(BackendError::Cuda(CudaError::Unsupported(
            "the cuda backend filters whole frames".into(),
        )))
    }

    fn filter_frame(&mut self, plan: &Plan, src: &Frame, dst: &mut Frame) -> Result<(), BackendError> {
        check_shapes(src, dst)?;
        self.last = None;
        self.record(0)?;
        self.upload(src, dst)?;
        self.record(1)?;
        self.run_planes(plan, src, dst)?;
        self.record(2)?;
        self.download_then(dst, |b| b.record(3))?;
        self.last = Some(DeviceTimes {
            h2d: self.between(0, 1),
            kernel: self.between(1, 2),
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
        Ok(Some(Arc::new(CudaOffload::new(self.ctx.clone(), self.pageable))))
    }

    fn filter_device(
        &mut self,
        plan: &Plan,
        src: &DeviceFrame,
        dst: &mut DeviceFrame,
    ) -> Result<Duration, BackendError> {
        if src.shape.format != dst.shape.format
            || src.shape.width != dst.shape.width
            || src.shape.height != dst.shape.height
        {
            return Err(BackendError::Shape {
                src: src.shape.describe(),
                dst: dst.shape.describe(),
            });
        }
        let d_src = offload::device_ptr(src)?;
        let d_dst = offload::device_ptr(dst)?;
        self.record(0)?;
        self.run_planes_at(plan, &src.shape, &dst.shape, d_src, d_dst)?;
        self.record(1)?;
        self.events()?[1]
            .synchronize()
            .map_err(|e| CudaError::driver("running the filter", e))?;
        Ok(self.between(0, 1))
    }

    fn ceilings(&mut self) -> Option<(f64, f64)> {
        if self.ceilings.is_none() {
            self.ceilings = self.measure_ceilings().ok();
        }
        self.ceilings
    }

    /// Kernel-only times: the frame is uploaded once, then each run brackets [`TIMED_BATCH`]
    /// (1 once a pass takes over a millisecond) back-to-back passes over every plane with CUDA events (timing enabled) and reports the
    /// mean pass. Batching keeps the GPU busy while the host enqueues the next launches, so
    /// host-side launch overhead does not show up as idle GPU time inside the events.
    fn kernel_times(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
        warmup: usize,
        runs: usize,
        budget: f64,
    ) -> Result<Option<Vec<f64>>, BackendError> {
        check_shapes(src, dst)?;
        self.upload(src, dst)?;
        for _ in 0..warmup {
            self.run_planes(plan, src, dst)?;
        }
        let ev = |s: &Self| {
            s.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| CudaError::driver("creating events", e))
        };
        let (start, end) = (ev(self)?, ev(self)?);
        let mut times = Vec::with_capacity(runs);
        let mut spent = 0.0;
        let mut batch = TIMED_BATCH;
        while times.len() < runs.max(1) && (times.is_empty() || spent < budget) {
            start
                .record(&self.stream)
                .map_err(|e| CudaError::driver("recording an event", e))?;
            for _ in 0..batch {
                self.run_planes(plan, src, dst)?;
            }
            end.record(&self.stream)
                .map_err(|e| CudaError::driver("recording an event", e))?;
            end.synchronize()
                .map_err(|e| CudaError::driver("running the filter", e))?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(|e| CudaError::driver("reading an event", e))? as f64;
            times.push(ms / 1e3 / batch as f64);
            spent += ms / 1e3;
            // Passes long enough to hide launch overhead on their own need no batching.
            if ms / batch as f64 > 1.0 {
                batch = 1;
            }
        }
        self.download(dst)?;
        Ok(Some(times))
    }
}
