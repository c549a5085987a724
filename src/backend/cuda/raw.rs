//! The few driver calls cudarc has no safe API for: texture objects over pitched memory, 2D
//! copies (device to device, and a frame's planes between its host layout and its row-aligned
//! device layout), page-locked buffers a frame can own (the pipeline's pools and the
//! synchronous path's staging alike), host words mapped into the device's address space,
//! raw asynchronous copies, launches as programmatic dependents (`launch_ex`), and the driver
//! and NVRTC versions. Every `unsafe` block carries a
//! `// SAFETY:` line; the copy functions that are themselves `unsafe` state the caller's
//! obligations.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use crate::device::{CopyPlan, PlaneCopy};

/// A texture object over a pitched 2D region of 8-bit elements; destroyed on drop.
pub struct Texture(sys::CUtexObject);

impl Texture {
    /// Creates an unnormalized, point-sampled texture reading one unsigned element of
    /// `bytes` (1 or 2) per texel (`read as integer`) from `width × height` elements, rows
    /// `pitch` bytes apart at `ptr`. `address` resolves out-of-range coordinates; with BORDER
    /// the border colour is 0.
    pub fn pitch2d(
        ptr: sys::CUdeviceptr,
        bytes: usize,
        width: usize,
        height: usize,
        pitch: usize,
        address: sys::CUaddress_mode,
    ) -> Result<Texture, DriverError> {
        // SAFETY: all-zero bytes are valid for this descriptor (its enum CUresourcetype has a
        // 0 variant, the union holds plain data); the fields that matter are set below.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_PITCH2D;
        res.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
            devPtr: ptr,
            format: if bytes == 2 {
                sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16
            } else {
                sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8
            },
            numChannels: 1,
            width,
            height,
            pitchInBytes: pitch,
        };
        // SAFETY: all-zero bytes are valid here too (CUaddress_mode and CUfilter_mode have 0
        // variants: WRAP and POINT); address and filter modes are set explicitly below.
        let mut tex: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        tex.addressMode = [address; 3];
        tex.filterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT;
        tex.flags = sys::CU_TRSF_READ_AS_INTEGER;
        let mut obj: sys::CUtexObject = 0;
        // SAFETY: the descriptors live for the call; `ptr` is a live device allocation the
        // caller keeps alive (and unmodified by other streams) while the texture is used.
        unsafe { sys::cuTexObjectCreate(&mut obj, &res, &tex, std::ptr::null()) }.result()?;
        Ok(Texture(obj))
    }

    pub fn handle(&self) -> sys::CUtexObject {
        self.0
    }
}

impl Drop for Texture {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuTexObjectCreate and is destroyed exactly once; callers
        // drop textures only after the stream that used them has synchronized.
        let _ = unsafe { sys::cuTexObjectDestroy(self.0) }.result();
    }
}

/// One end of a 2D copy: device memory, or host memory (page-locked or not).
#[derive(Clone, Copy)]
pub enum End {
    Device(sys::CUdeviceptr),
    Host(*mut u8),
}

/// Copies `height` rows of `width_bytes` from `src` (rows `src_pitch` bytes apart) to `dst`
/// (rows `dst_pitch` apart) on `stream`.
///
/// # Safety
/// Both regions must be live allocations holding `height` rows at their pitches; a host source
/// must stay unmodified, and a host destination unread, until the stream has passed the copy.
pub unsafe fn copy_2d(
    (src, src_pitch): (End, usize),
    (dst, dst_pitch): (End, usize),
    width_bytes: usize,
    height: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let side = |e: End| match e {
        End::Device(d) => (CU_MEMORYTYPE_DEVICE, d, std::ptr::null_mut()),
        End::Host(h) => (CU_MEMORYTYPE_HOST, 0, h.cast::<std::ffi::c_void>()),
    };
    let (src_type, src_device, src_host) = side(src);
    let (dst_type, dst_device, dst_host) = side(dst);
    // Built field by field: all-zero bytes are not a valid CUDA_MEMCPY2D (its memory-type
    // enums start at 1).
    let c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host.cast_const(),
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width_bytes,
        Height: height,
    };
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuMemcpy2DAsync_v2(&c, stream) }.result()
}

/// Copies `height` rows of `width_bytes` between pitched device regions on `stream`.
///
/// # Safety
/// Both regions must be live device allocations holding `height` rows at their pitches until
/// the stream has passed the copy.
pub unsafe fn copy_2d_d2d(
    src: sys::CUdeviceptr,
    src_pitch: usize,
    dst: sys::CUdeviceptr,
    dst_pitch: usize,
    width_bytes: usize,
    height: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller; device-to-device copies touch no host memory.
    unsafe {
        copy_2d(
            (End::Device(src), src_pitch),
            (End::Device(dst), dst_pitch),
            width_bytes,
            height,
            stream,
        )
    }
}

/// NVRTC's version as (major, minor).
pub fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters; the library was checked present before any NVRTC call.
    let _ = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (major, minor)
}

/// Page-locked host memory owned outside cudarc, so a [`crate::frame::Frame`] can hold it and
/// travel between pipeline threads. Freed (with its context current) on drop.
pub struct PinnedBuf {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<CudaContext>,
    write_combined: bool,
}

// SAFETY: the buffer is plain host memory owned exclusively by this value; the context handle
// is thread-safe. Access goes through &self / &mut self, so Rust's aliasing rules hold.
unsafe impl Send for PinnedBuf {}
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    /// The frames' memory kinds ([`crate::frame::Frame::memory_kind`]) of page-locked buffers:
    /// plain, and write-combined.
    pub const KIND: &'static str = "pinned";
    pub const KIND_WC: &'static str = "pinned-wc";

    /// True when `frame`'s pixels are in a page-locked buffer of this kind.
    pub fn holds(frame: &crate::frame::Frame) -> bool {
        matches!(frame.memory_kind(), Self::KIND | Self::KIND_WC)
    }

    /// `len` zeroed bytes; `write_combined` memory is fast for the CPU to write and the GPU to
    /// read but very slow for the CPU to read.
    pub fn new(
        ctx: &Arc<CudaContext>,
        len: usize,
        write_combined: bool,
    ) -> Result<Self, DriverError> {
        ctx.bind_to_thread()?;
        let flags = if write_combined {
            sys::CU_MEMHOSTALLOC_WRITECOMBINED
        } else {
            0
        };
        // SAFETY: plain allocation; the pointer is owned by the returned value and freed once.
        let ptr = unsafe { cudarc::driver::result::malloc_host(len.max(1), flags) }? as *mut u8;
        // SAFETY: `ptr` points to at least `len` writable bytes just allocated.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(PinnedBuf {
            ptr,
            len,
            ctx: ctx.clone(),
            write_combined,
        })
    }
}

impl PinnedBuf {
    pub fn len(&self) -> usize {
        self.len
    }
}

impl crate::frame::HostMemory for PinnedBuf {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` initialized bytes for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn kind(&self) -> &'static str {
        if self.write_combined {
            Self::KIND_WC
        } else {
            Self::KIND
        }
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_host in `new` and freed exactly once; no copy is in flight
        // (every transfer stage synchronizes its copy before handing the frame on).
        let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut _) };
    }
}

/// 32-bit words of page-locked host memory that kernels read and write through their device
/// address (mapped memory) while the host reads and writes them directly, with no stream in
/// between: the benchmark's stream hold (a kernel spins on a word until the host sets it).
pub struct MappedWords {
    ptr: *mut u32,
    len: usize,
    device: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
}

// SAFETY: the words are plain host memory owned by this value and only accessed atomically.
unsafe impl Send for MappedWords {}
unsafe impl Sync for MappedWords {}

impl MappedWords {
    /// `len` words, zeroed.
    pub fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        ctx.bind_to_thread()?;
        let bytes = len.max(1) * 4;
        // SAFETY: plain allocation; the pointer is owned by the returned value and freed once.
        let ptr =
            unsafe { cudarc::driver::result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }?
                as *mut u32;
        // SAFETY: `ptr` points to `bytes` writable bytes just allocated.
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        // Owned from here, so an error below frees it.
        let mut words = MappedWords {
            ptr,
            len,
            device: 0,
            ctx: ctx.clone(),
        };
        // SAFETY: `ptr` came from cuMemHostAlloc with DEVICEMAP; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut words.device, ptr as *mut _, 0) }
            .result()?;
        Ok(words)
    }

    /// The words' device address.
    pub fn device(&self) -> sys::CUdeviceptr {
        self.device
    }

    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        assert!(i < self.len, "word {i} of {}", self.len);
        // SAFETY: `ptr` holds `len` aligned u32 words for the life of `self`; the device's
        // accesses are word-sized too.
        unsafe { &*(self.ptr.add(i) as *const std::sync::atomic::AtomicU32) }
    }

    /// Word `i` as the host sees it now.
    pub fn get(&self, i: usize) -> u32 {
        self.word(i).load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sets word `i`; a kernel polling it sees the value.
    pub fn set(&self, i: usize, v: u32) {
        self.word(i).store(v, std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_host in `new` and freed exactly once; owners drop it only
        // once no kernel reading it is in flight (the stream hold's `Drop` synchronizes first).
        let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut _) };
    }
}

/// Asynchronous host → device copy of `src` to `dst` on `stream`.
///
/// # Safety
/// `dst` must be a live device allocation of at least `src.len()` bytes, and `src` must stay
/// alive and unmodified until the stream has passed this copy.
pub unsafe fn copy_htod(
    dst: sys::CUdeviceptr,
    src: &[u8],
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller.
    unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, stream) }
}

/// Asynchronous device → host copy into `dst` from `src` on `stream`.
///
/// # Safety
/// `src` must be a live device allocation of at least `dst.len()` bytes, and `dst` must stay
/// alive and unread until the stream has passed this copy.
pub unsafe fn copy_dtoh(
    dst: &mut [u8],
    src: sys::CUdeviceptr,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller.
    unsafe { cudarc::driver::result::memcpy_dtoh_async(dst, src, stream) }
}

/// One copy of a batch ([`copy_batch`]): `len` bytes from `src` to `dst`, each a device address
/// or the address of page-locked host memory (unified addressing tells the driver which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy1d {
    pub dst: sys::CUdeviceptr,
    pub src: sys::CUdeviceptr,
    pub len: usize,
}

/// The driver version from which [`copy_batch`] submits several copies at once
/// (`cuMemcpyBatchAsync_v2`, CUDA 13.0).
pub const BATCH_COPY_DRIVER: i32 = 13000;

/// Starts `copies` on `stream` as one submission: a `cuMemcpyBatchAsync_v2` call per
/// [`BATCH_MOST`] copies (each copy reads its source in stream order), or a plain
/// `cuMemcpyAsync` for a lone copy. Frames apart in memory go as fast in one call as one copy
/// of their total length: on an H200, four 720p gray frames 4 KiB apart a call sustained 99.5 and
/// 101.9 % of the duplex bound, four back to back in one plain copy 96–102 %, one frame a call
/// 83–89 % (docs/PERFORMANCE.md, fifty-fifth round). The copies of a batch may run in any
/// order.
///
/// # Safety
/// Every `src` and `dst` must be a live device allocation or page-locked host memory (made by
/// the driver) of at least `len` bytes, no two copies may overlap, and the memory must stay
/// alive (sources unmodified, destinations untouched) until the stream has passed the copies.
/// With more than one copy, the driver must have `cuMemcpyBatchAsync_v2` ([`batch_copies`]).
pub unsafe fn copy_batch(copies: &[Copy1d], stream: sys::CUstream) -> Result<(), DriverError> {
    if let [c] = copies {
        // SAFETY: forwarded to the caller.
        return unsafe { sys::cuMemcpyAsync(c.dst, c.src, c.len, stream) }.result();
    }
    for chunk in copies.chunks(BATCH_MOST) {
        let (mut dsts, mut srcs, mut lens) = ([0; BATCH_MOST], [0; BATCH_MOST], [0; BATCH_MOST]);
        for (i, c) in chunk.iter().enumerate() {
            (dsts[i], srcs[i], lens[i]) = (c.dst, c.src, c.len);
        }
        // SAFETY: all-zero bytes are a valid attribute set (no location hints, no flags); the
        // access order is set below.
        let mut attr: sys::CUmemcpyAttributes = unsafe { std::mem::zeroed() };
        attr.srcAccessOrder = sys::CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        let mut first = [0usize];
        // SAFETY: the three arrays hold the chunk's copies first and one attribute set applies
        // from its first copy on; the memory as the caller guarantees (the driver reads the
        // arrays during the call).
        unsafe {
            sys::cuMemcpyBatchAsync_v2(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                lens.as_mut_ptr(),
                chunk.len(),
                &mut attr,
                first.as_mut_ptr(),
                1,
                stream,
            )
        }
        .result()?;
    }
    Ok(())
}

/// The most copies [`copy_batch`] passes to one driver call.
pub const BATCH_MOST: usize = 8;

/// True when the driver can batch copies: it reports CUDA 13.0 or later
/// ([`BATCH_COPY_DRIVER`]) and has the entry point (a shim that reports the version without it
/// would otherwise abort the first batch: cudarc panics on a missing symbol).
pub fn batch_copies() -> bool {
    if driver_version().is_none_or(|v| v < BATCH_COPY_DRIVER) {
        return false;
    }
    // SAFETY: the driver library is loaded (a version was read from it); looking a symbol up
    // has no other effect.
    unsafe { sys::culib().get::<unsafe extern "C" fn()>(b"cuMemcpyBatchAsync_v2\0") }.is_ok()
}

/// Asynchronous host → device copy of a frame: `src`, the host frame's bytes, into the device
/// frame at `dst`, the layouts as `plan` says (one copy, or one 2D copy per plane).
///
/// # Safety
/// `dst` must be a live device allocation holding the plan's device layout, and `src` must stay
/// alive and unmodified until the stream has passed the copies.
pub unsafe fn copy_frame_htod(
    plan: &CopyPlan,
    src: &[u8],
    dst: sys::CUdeviceptr,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    match plan {
        // SAFETY: forwarded to the caller.
        CopyPlan::Whole { len } => unsafe { copy_htod(dst, &src[..*len], stream) },
        CopyPlan::Planes(planes) => all_or_wait(planes, stream, |p| {
            let host = &src[p.host_offset..][..p.host_stride * (p.rows - 1) + p.row_bytes];
            // SAFETY: `host` holds the plane's rows (sliced above); the device side as the
            // caller guarantees.
            unsafe {
                copy_2d(
                    (End::Host(host.as_ptr().cast_mut()), p.host_stride),
                    (End::Device(dst + p.device_offset as u64), p.device_stride),
                    p.row_bytes,
                    p.rows,
                    stream,
                )
            }
        }),
    }
}

/// Asynchronous device → host copy of a frame: the device frame at `src` into `dst`, the host
/// frame's bytes, the layouts as `plan` says.
///
/// # Safety
/// `src` must be a live device allocation holding the plan's device layout, and `dst` must stay
/// alive and unread until the stream has passed the copies.
pub unsafe fn copy_frame_dtoh(
    plan: &CopyPlan,
    src: sys::CUdeviceptr,
    dst: &mut [u8],
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    match plan {
        // SAFETY: forwarded to the caller.
        CopyPlan::Whole { len } => unsafe { copy_dtoh(&mut dst[..*len], src, stream) },
        CopyPlan::Planes(planes) => all_or_wait(planes, stream, |p| {
            let span = p.host_stride * (p.rows - 1) + p.row_bytes;
            let host = &mut dst[p.host_offset..][..span];
            // SAFETY: as for the upload, with the roles swapped.
            unsafe {
                copy_2d(
                    (End::Device(src + p.device_offset as u64), p.device_stride),
                    (End::Host(host.as_mut_ptr()), p.host_stride),
                    p.row_bytes,
                    p.rows,
                    stream,
                )
            }
        }),
    }
}

/// Starts one copy per plane on `stream`. When one cannot start, the copies started before it
/// are waited for before the error returns: the caller then lets the frames go at once, and a
/// frame's copy is otherwise only over once its event has fired.
fn all_or_wait(
    planes: &[PlaneCopy],
    stream: sys::CUstream,
    mut start: impl FnMut(&PlaneCopy) -> Result<(), DriverError>,
) -> Result<(), DriverError> {
    for (i, p) in planes.iter().enumerate() {
        if let Err(e) = start(p) {
            if i > 0 {
                // SAFETY: a live stream handle of the caller's; waiting has no other effect.
                let _ = unsafe { sys::cuStreamSynchronize(stream) };
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Queues kernel `f` on stream `stream` with the argument pointers `args` through
/// `cuLaunchKernelEx`; with `follow` as a programmatic dependent of the kernel queued before it
/// on the stream (compute capability 9.0 and later): the driver prepares the launch while that
/// kernel runs and starts its blocks as that kernel's last blocks exit, not a launch latency
/// after the whole kernel has finished.
///
/// # Safety
/// `stream` is a live stream of the context current on this thread, and `f` a function of it;
/// `args` holds one pointer to a live value of each argument of `f`'s signature, in order, and
/// those arguments (device addresses, sizes) are valid for `cfg`'s grid. With `follow`, every
/// block of `f` waits for the kernel before it (`griddepcontrol.wait`) before it reads or
/// writes memory or exits, so the launch's reads and writes keep the stream's order.
pub unsafe fn launch_ex(
    stream: sys::CUstream,
    f: sys::CUfunction,
    cfg: cudarc::driver::LaunchConfig,
    args: &mut [*mut std::ffi::c_void],
    follow: bool,
) -> Result<(), DriverError> {
    // SAFETY: an all-zero launch attribute is a valid (ignored) one; its id and value are set
    // below.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: u32::from(follow),
    };
    // SAFETY: `stream`, `f` and `args` as the caller promises (the driver copies the argument
    // values during the call); `attr` outlives the call.
    unsafe { sys::cuLaunchKernelEx(&config, f, args.as_mut_ptr(), std::ptr::null_mut()) }.result()
}

/// The CUDA version the installed driver supports, e.g. 13000 for 13.0 (None without a driver).
pub fn driver_version() -> Option<i32> {
    let mut v = 0;
    // SAFETY: a plain out-parameter; callers check that libcuda is present first.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    (r == sys::CUresult::CUDA_SUCCESS).then_some(v)
}
