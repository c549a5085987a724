//! The kernel ABI: everything host and device code must agree on, defined here once.
//!
//! * [`PlaneParams`], the parameter block every kernel takes first: its size is asserted on
//!   both sides (a Rust const assertion here, a `static_assert` on the size [`prelude`] passes
//!   to the device), and every field offset is compared on the GPU ([`PLANE_PARAMS_FIELDS`]
//!   against the `convflow_plane_params_layout` kernel of common.cuh; NVRTC has no `offsetof`).
//!   `fast`'s kernels take [`FastPlanes`] instead: up to [`MAX_PLANES`] of them, one launch.
//! * The constants the device code needs ([`MAX_CONST_TAPS`], [`DEVICE_SLACK`],
//!   [`FAST_MAX_SEG`]) and the border ids, which [`prelude`] turns into `#define`s prepended to
//!   every kernel source: no number is written twice.
//! * One typed launch function per kernel signature ([`launch`]), each with the argument list
//!   of the `extern "C"` entry points it launches (`fast`'s, which may be queued as
//!   programmatic dependents of the kernel before them, apart: `fast_plane` beside `plane`).
//!
//! Launch geometry and shared-memory sizes are computed on the host only; the kernels read
//! `blockDim` and the arguments they are given.

use std::mem::{offset_of, size_of};
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use super::{raw, CudaError};
use crate::border::Border;

/// One plane to filter (`PlaneParams` in kernels/common.cuh). Pointers are device addresses,
/// strides in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaneParams {
    /// Device address of the source plane's first row.
    pub src: u64,
    /// Device address of the destination plane's first row.
    pub dst: u64,
    /// Pixels.
    pub width: i32,
    /// Rows.
    pub height: i32,
    /// Bytes between source rows.
    pub src_stride: i32,
    /// Bytes between destination rows.
    pub dst_stride: i32,
    /// Interleaved samples per pixel.
    pub channels: i32,
    /// Bit c set: channel c is filtered, else copied.
    pub mask: i32,
    /// Kernel width in taps.
    pub kw: i32,
    /// Kernel height in taps.
    pub kh: i32,
    /// Anchor (kw/2, kh/2).
    pub ax: i32,
    /// Anchor row, kh/2.
    pub ay: i32,
    /// `--abs`.
    pub abs_out: i32,
    /// Added to every sum.
    pub offset: f32,
    /// The largest sample value (2^bits − 1): where outputs saturate.
    pub maxval: i32,
    /// A sample's value is its stored word shifted right by this (MSB-aligned formats).
    pub shift: i32,
}

const _: () = assert!(
    size_of::<PlaneParams>() == 72,
    "PlaneParams is 72 bytes on both sides"
);

// SAFETY: plain-old-data with the #[repr(C)] layout of the CUDA struct, which the prelude's
// static_asserts check field by field when the kernels compile.
unsafe impl DeviceRepr for PlaneParams {}

impl PlaneParams {
    /// The same plane geometry and arithmetic, wherever its pixels are: equal but for the
    /// two device addresses.
    pub fn same_but_addresses(&self, other: &PlaneParams) -> bool {
        PlaneParams {
            src: other.src,
            dst: other.dst,
            ..*self
        } == *other
    }
}

/// Most planes a frame has (planar YUV: 3), so most planes one `fast` launch takes.
pub const MAX_PLANES: usize = 3;

/// The planes of one `fast` launch (`FastPlanes` in kernels/fast.cu): the planes of a frame
/// that share a specialization run in one launch (no launch gap or tail between the planes of
/// a YUV frame), over a one-dimensional grid, plane `k`'s blocks numbered from `first[k]`,
/// `gx[k]` to a row of blocks. (A launch of one plane takes its [`PlaneParams`] and a
/// two-dimensional grid instead.)
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FastPlanes {
    /// The planes; entries past the launch's planes repeat the first.
    pub p: [PlaneParams; MAX_PLANES],
    /// Index of each plane's first block in the grid (0 for the first).
    pub first: [i32; MAX_PLANES],
    /// Blocks per row of blocks of each plane.
    pub gx: [i32; MAX_PLANES],
}

const _: () = assert!(
    size_of::<FastPlanes>() == 240,
    "FastPlanes is 240 bytes on both sides"
);

// SAFETY: plain-old-data with the #[repr(C)] layout of the CUDA struct, whose size the
// prelude's static_assert checks (its fields are PlaneParams, checked above, and ints).
unsafe impl DeviceRepr for FastPlanes {}

impl FastPlanes {
    /// The planes of one launch, each with its grid of blocks (columns, rows); returns them
    /// with the launch's grid, all blocks in a row.
    pub fn new(planes: &[(PlaneParams, (u32, u32))]) -> (FastPlanes, (u32, u32)) {
        assert!(
            (2..=MAX_PLANES).contains(&planes.len()),
            "2 to {MAX_PLANES} planes a launch"
        );
        let mut s = FastPlanes {
            p: [planes[0].0; MAX_PLANES],
            first: [0; MAX_PLANES],
            gx: [1; MAX_PLANES],
        };
        s.set_params(planes.iter().map(|&(p, _)| p));
        let mut blocks = 0u32;
        for (k, &(_, (gx, gy))) in planes.iter().enumerate() {
            s.first[k] = blocks as i32;
            s.gx[k] = gx as i32;
            blocks += gx * gy;
        }
        (s, (blocks, 1))
    }

    /// Puts in the launch's planes (the same geometry, other addresses, for a launch replayed
    /// on another frame); entries past them repeat the first.
    pub fn set_params(&mut self, mut planes: impl Iterator<Item = PlaneParams>) {
        let first = planes.next().expect("a plane");
        self.p[0] = first;
        for p in &mut self.p[1..] {
            *p = planes.next().unwrap_or(first);
        }
    }
}

/// The two planes of one `fast_pair` launch (`FastPair` in kernels/fast_pair.cuh): a frame
/// whose two planes take different `fast` specializations (NV12's luma and interleaved chroma)
/// in one launch, over a one-dimensional grid, plane 0's blocks first, row by row, then plane
/// 1's from `first_b`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FastPair {
    /// The two planes.
    pub p: [PlaneParams; 2],
    /// Index of plane 1's first block in the grid (plane 0's count).
    pub first_b: i32,
    /// Blocks per row of blocks of each plane.
    pub gx: [i32; 2],
    /// Each plane's tile stride (the tiled kernels' `ts`; 0 for the register kernels).
    pub ts: [i32; 2],
}

const _: () = assert!(
    size_of::<FastPair>() == 2 * size_of::<PlaneParams>() + 24,
    "FastPair is two PlaneParams and five ints, padded to 8 bytes, on both sides"
);

// SAFETY: plain-old-data with the #[repr(C)] layout of the CUDA struct, whose size the
// prelude's static_assert checks (its fields are PlaneParams, checked above, and ints).
unsafe impl DeviceRepr for FastPair {}

impl FastPair {
    /// The launch over planes `a` and `b`, each with its grid of blocks (columns, rows) and its
    /// tile stride; returns it with the launch's grid, all blocks in a row.
    pub fn new(
        (a, (gxa, gya), tsa): (PlaneParams, (u32, u32), i32),
        (b, (gxb, gyb), tsb): (PlaneParams, (u32, u32), i32),
    ) -> (FastPair, (u32, u32)) {
        let first_b = gxa * gya;
        let pair = FastPair {
            p: [a, b],
            first_b: first_b as i32,
            gx: [gxa as i32, gxb as i32],
            ts: [tsa, tsb],
        };
        (pair, (first_b + gxb * gyb, 1))
    }
}

/// Every field of [`PlaneParams`] with its byte offset, in declaration order.
pub const PLANE_PARAMS_FIELDS: [(&str, usize); 16] = [
    ("src", offset_of!(PlaneParams, src)),
    ("dst", offset_of!(PlaneParams, dst)),
    ("width", offset_of!(PlaneParams, width)),
    ("height", offset_of!(PlaneParams, height)),
    ("src_stride", offset_of!(PlaneParams, src_stride)),
    ("dst_stride", offset_of!(PlaneParams, dst_stride)),
    ("channels", offset_of!(PlaneParams, channels)),
    ("mask", offset_of!(PlaneParams, mask)),
    ("kw", offset_of!(PlaneParams, kw)),
    ("kh", offset_of!(PlaneParams, kh)),
    ("ax", offset_of!(PlaneParams, ax)),
    ("ay", offset_of!(PlaneParams, ay)),
    ("abs_out", offset_of!(PlaneParams, abs_out)),
    ("offset", offset_of!(PlaneParams, offset)),
    ("maxval", offset_of!(PlaneParams, maxval)),
    ("shift", offset_of!(PlaneParams, shift)),
];

/// Taps the `__constant__` weight array of the direct kernels holds.
pub const MAX_CONST_TAPS: usize = 16000;

/// Bytes allocated after every device frame: kernels may read whole aligned 4-byte words that
/// end past the last row (the device code asserts it needs no more than this).
pub const DEVICE_SLACK: usize = 64;

/// Samples of one `fast` row segment that are still kept in registers.
pub const FAST_MAX_SEG: usize = 128;

/// `fast`'s full tiled kernel fills the interior of its input tile by groups of 4 columns, each
/// converted and stored as one float4 (fast.cu's `load_tile`), but on planes of three channels
/// from this kernel width it keeps 4-byte words stored a sample at a time, which measured
/// faster there (the separable kernel's tile: 16-byte loads, 4-byte words for 3 channels).
/// H100, held clock, gaussian, µs, groups against words (docs/PERFORMANCE.md, "twenty-eighth
/// round"): 4K RGB 11 / 15 / 19 154.8 / 261.3 / 401.0 against 168.6 / 278.3 / 424.9, rgb48
/// 164.1 / 279.2 / 404.1 against 187.7 / 304.7 / 439.7; at 21 / 23 / 25 rgb48 635.2 / 726.1 /
/// 784.5 against 535.8 / 630.2 / 721.9, RGB from 23 likewise (8K alike).
pub const FAST_TILE_RGB_WORD_LOADS_FROM: usize = 21;

/// Padded rows of `fast`'s shared tiles ([`FastSpec::tile_pad`](super::fast::FastSpec::tile_pad)):
/// [`FAST_TILE_PAD_FLOATS`] floats (one float4) after every [`FAST_TILE_PAD_PERIOD`] (a power
/// of two, a multiple of 4), fast.cu's `tcol`.
pub const FAST_TILE_PAD_PERIOD: usize = 32;
/// See [`FAST_TILE_PAD_PERIOD`].
pub const FAST_TILE_PAD_FLOATS: usize = 4;

/// `fast_int` finishes outputs in floating point (fast_int.cuh's `INT_FFIN`) only where every
/// integer sum lies within ±2^this, where the float 1.5·2^23 + sum is exact …
pub const INT_FFIN_SUM_BITS: u32 = 22;

/// … so, with the clamp proven idle (every sum / divisor below 2^(8·`sb`) − 0.5), under a
/// power-of-two divisor up to this for `sb`-byte samples: 16384 for 8-bit, 64 for 16-bit.
pub const fn int_ffin_max_divisor(sb: usize) -> u32 {
    1 << (INT_FFIN_SUM_BITS - 8 * sb as u32)
}

/// Whether a divisor allows the float finish on `sb`-byte samples (the plan must also prove
/// the clamp idle and have no `--abs`): a power of two up to [`int_ffin_max_divisor`].
pub const fn float_finish_divisor(d: u32, sb: usize) -> bool {
    d.is_power_of_two() && d <= int_ffin_max_divisor(sb)
}

/// The id a border has in kernel code (`BORDER_CLAMP`, …): its position in [`Border::ALL`].
pub fn border_id(b: Border) -> usize {
    Border::ALL
        .iter()
        .position(|&x| x == b)
        .expect("every border is listed")
}

/// The `#define`s and checks prepended to every kernel source.
pub fn prelude() -> String {
    let mut s = String::from("// Generated from src/backend/cuda/abi.rs: the host-device ABI.\n");
    s += &format!("#define CONVFLOW_MAX_CONST_TAPS {MAX_CONST_TAPS}\n");
    s += &format!("#define CONVFLOW_DEVICE_SLACK {DEVICE_SLACK}\n");
    s += &format!("#define CONVFLOW_FAST_MAX_SEG {FAST_MAX_SEG}\n");
    s += &format!("#define CONVFLOW_TILE_RGB_WORD_LOADS_FROM {FAST_TILE_RGB_WORD_LOADS_FROM}\n");
    s += &format!("#define CONVFLOW_TILE_PAD_PERIOD {FAST_TILE_PAD_PERIOD}\n");
    s += &format!("#define CONVFLOW_TILE_PAD_FLOATS {FAST_TILE_PAD_FLOATS}\n");
    s += &format!("#define CONVFLOW_MAX_PLANES {MAX_PLANES}\n");
    s += &format!("#define CONVFLOW_INT_FFIN_SUM_BITS {INT_FFIN_SUM_BITS}\n");
    let mut each = String::new();
    for &b in Border::ALL {
        let upper = b.name().to_ascii_uppercase();
        s += &format!("#define BORDER_{upper} {}\n", border_id(b));
        each += &format!(" M({}, BORDER_{upper})", b.name());
    }
    // Entry points NAME_clamp, NAME_zero, …: Rust builds the same names in `entry_name`.
    s += &format!("#define CONVFLOW_FOR_BORDERS(M){each}\n");
    s += &format!(
        "#define CONVFLOW_PLANE_PARAMS_SIZE {}\n",
        size_of::<PlaneParams>()
    );
    s += &format!(
        "#define CONVFLOW_FAST_PLANES_SIZE {}\n",
        size_of::<FastPlanes>()
    );
    s += &format!(
        "#define CONVFLOW_FAST_PAIR_SIZE {}\n",
        size_of::<FastPair>()
    );
    s += "\n";
    s
}

/// Name of a border-templated entry point for samples of `bytes` (1 or 2): `FAMILY_BORDER`,
/// or `FAMILY_u16_BORDER` for 16-bit samples (see CONVFLOW_FOR_BORDERS).
pub fn entry_name(family: &str, border: Border, bytes: usize) -> String {
    let depth = if bytes == 2 { "_u16" } else { "" };
    format!("{family}{depth}_{}", border.name())
}

/// Typed launches, one per kernel signature of kernels/*.cu (and `fast_plane` for `fast`'s of
/// `plane`'s signature). Each returns once the launch is queued on `stream`.
pub mod launch {
    use super::*;

    fn err(e: cudarc::driver::DriverError) -> CudaError {
        CudaError::driver("launching a kernel", e)
    }

    /// Queues `f` on `s` with the argument pointers `args`, with `follow` as a programmatic
    /// dependent of the kernel queued before it (`raw::launch_ex`).
    ///
    /// # Safety
    /// As for `raw::launch_ex`: `args` points to a live value of each argument of `f`, valid
    /// for `cfg`'s grid, and with `follow` every block of `f` waits for the kernel before it
    /// before it touches memory or exits (`fast`'s entry points: fast.cu's `fast_follow`,
    /// first in `FAST_PLANE`).
    unsafe fn queue_ex(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        args: &mut [*mut std::ffi::c_void],
        follow: bool,
    ) -> Result<(), CudaError> {
        s.context().bind_to_thread().map_err(err)?;
        // SAFETY: as the caller promises; `s` is a live stream of the context bound above.
        unsafe { raw::launch_ex(s.cu_stream(), f.cu_function(), cfg, args, follow) }.map_err(err)
    }

    /// A pointer to a kernel argument, as `cuLaunchKernelEx` takes it (only types with a
    /// device layout, as cudarc's launch builder takes them).
    fn arg<T: DeviceRepr>(v: &T) -> *mut std::ffi::c_void {
        v as *const T as *mut std::ffi::c_void
    }

    /// `(PlaneParams p)`: fast_reg and fast_int of one plane, `follow` as for `queue_ex` (only
    /// `fast`'s entry points may be launched with it).
    pub fn fast_plane(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
        follow: bool,
    ) -> Result<(), CudaError> {
        // SAFETY: the entry points of this signature take exactly (PlaneParams); `p` points
        // into live device buffers sized for its planes (plus DEVICE_SLACK); `f` is fast_reg
        // or fast_int, whose blocks wait first (`follow`).
        unsafe { queue_ex(s, f, cfg, &mut [arg(p)], follow) }
    }

    /// `(PlaneParams p)`: conv_constant_*, conv_shared_constant_* of one plane.
    pub fn plane(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(p);
        // SAFETY: the entry points of this signature take exactly (PlaneParams); `p` points
        // into live device buffers sized for its planes (plus DEVICE_SLACK).
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(PlaneParams p, const float* w)`: conv_global_*, conv_shared_*, sep_fused_*.
    pub fn plane_weights(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
        w: u64,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(p).arg(&w);
        // SAFETY: (PlaneParams, const float*); `w` is a live device buffer holding the plan's
        // weights (full: kw·kh, separable: kh + kw).
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(PlaneParams p, const float* f, float* tmp)`: sep_row_*, sep_col_*.
    pub fn plane_weights_tmp(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
        w: u64,
        tmp: u64,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(p).arg(&w).arg(&tmp);
        // SAFETY: (PlaneParams, const float*, float*); `tmp` holds width·height·channels f32.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(PlaneParams p, const float* w, cudaTextureObject_t t, int hw)`: conv_texture_*.
    pub fn plane_texture(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
        w: u64,
        tex: u64,
        hw: i32,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(p).arg(&w).arg(&tex).arg(&hw);
        // SAFETY: (PlaneParams, const float*, cudaTextureObject_t (a u64), int); the texture
        // stays alive until the stream has run this kernel (the caller synchronizes).
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(long long* out)`: convflow_plane_params_layout (one thread).
    pub fn layout(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        out: &mut cudarc::driver::CudaSlice<i64>,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(out);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (long long*); `out` holds one i64 per PlaneParams field.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(unsigned* gate, unsigned ticket, unsigned long long timeout_ns)`: convflow_hold (one
    /// thread).
    pub fn hold(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        gate: u64,
        ticket: u32,
        timeout_ns: u64,
    ) -> Result<(), CudaError> {
        let mut b = s.launch_builder(f);
        b.arg(&gate).arg(&ticket).arg(&timeout_ns);
        // SAFETY: (volatile unsigned*, unsigned, unsigned long long); `gate` is the device
        // address of two words of mapped host memory that outlive the stream's work.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    /// `(FastPlanes planes)`: fast_reg, fast_int of several planes, `follow` as for
    /// `queue_ex`.
    pub fn planes(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        planes: &FastPlanes,
        follow: bool,
    ) -> Result<(), CudaError> {
        // SAFETY: the entry points of this signature take exactly (FastPlanes); every plane in
        // use points into live device buffers sized for it (plus DEVICE_SLACK), and the grid
        // has the blocks `FastPlanes::new` counted; `f` is one of `fast`'s, whose blocks wait
        // first (`follow`).
        unsafe { queue_ex(s, f, cfg, &mut [arg(planes)], follow) }
    }

    /// `(FastPair pair)`: fast_pair (kernels/fast_pair.cuh), `follow` as for `queue_ex`.
    pub fn pair(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        pair: &FastPair,
        follow: bool,
    ) -> Result<(), CudaError> {
        // SAFETY: fast_pair takes exactly (FastPair); both planes point into live device
        // buffers sized for them (plus DEVICE_SLACK), the grid has the blocks `FastPair::new`
        // counted, and the dynamic shared memory in `cfg` was sized on the host for the larger
        // of the two planes' tiles; its blocks wait first (`follow`).
        unsafe { queue_ex(s, f, cfg, &mut [arg(pair)], follow) }
    }

    /// `(PlaneParams p, int ts)`: fast_full, fast_sep of one plane (ts: the shared tile's row
    /// stride in floats; for fast_sep with its row pass from global memory, the staged input
    /// rows' stride in 4-byte words, or 0), `follow` as for `queue_ex`.
    pub fn plane_stride(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        p: &PlaneParams,
        ts: i32,
        follow: bool,
    ) -> Result<(), CudaError> {
        // SAFETY: (PlaneParams, int); the dynamic shared memory in `cfg` was sized on the host
        // for this tile stride; fast_full and fast_sep's blocks wait first (`follow`).
        unsafe { queue_ex(s, f, cfg, &mut [arg(p), arg(&ts)], follow) }
    }

    /// `(FastPlanes planes, int ts)`: fast_full, fast_sep of several planes (ts and `follow` as
    /// for [`plane_stride`]).
    pub fn planes_stride(
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        cfg: LaunchConfig,
        planes: &FastPlanes,
        ts: i32,
        follow: bool,
    ) -> Result<(), CudaError> {
        // SAFETY: (FastPlanes, int); as `planes`, and the dynamic shared memory in `cfg` was
        // sized on the host for this tile stride.
        unsafe { queue_ex(s, f, cfg, &mut [arg(planes), arg(&ts)], follow) }
    }
}
