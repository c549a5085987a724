//! Frames: pixel formats (8 to 16 bits per sample), their plane layouts with explicit row
//! strides, and plane views.
//!
//! A frame is one byte buffer holding one to three planes. Each plane is a grid of
//! `width × height` pixels of `channels` interleaved samples — one byte each, or a little-endian
//! 16-bit word for deeper formats ([`Depth`]) — rows `stride` bytes apart (stride may exceed the
//! row's bytes, as decoders pad rows). Every backend filters planes, so every format
//! (packed RGB as well as planar YUV and NV12) reduces to a list of planes.
//!
//! The pixel-format table is its own module ([`format`]); the frame and its plane views share
//! one invariant — offsets and strides that fit the buffer, in whole samples — checked in one
//! place (`Frame::layout`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

mod format;
pub use format::{Depth, Family, PixelFormat};

/// Why a frame could not be built: a bad size, a stride or buffer that does not fit the
/// format's layout, or a failed allocation.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Width or height (in that order) is zero.
    #[error("frame size {0}x{1} is empty")]
    Empty(usize, usize),
    /// A side exceeds [`MAX_SIDE`].
    #[error("frame size {w}x{h} is too large")]
    TooLarge {
        /// Requested width in pixels.
        w: usize,
        /// Requested height in pixels.
        h: usize,
    },
    /// A plane's stride is shorter than one row of its pixels.
    #[error("plane {plane}: stride {stride} is smaller than a row of {row} bytes")]
    Stride {
        /// Index of the offending plane.
        plane: usize,
        /// The stride given, in bytes.
        stride: usize,
        /// Bytes of pixels in one row of that plane (the least stride allowed).
        row: usize,
    },
    /// Samples of more than one byte sit at addresses that are multiples of their size (as
    /// FFmpeg's, image decoders' and GPU loads need).
    #[error("plane {plane}: stride {stride} is not a multiple of the {bytes}-byte sample size")]
    Unaligned {
        /// Index of the offending plane.
        plane: usize,
        /// The stride given, in bytes.
        stride: usize,
        /// Bytes per sample of the format (2 for 16-bit depths).
        bytes: usize,
    },
    /// The buffer is shorter than the layout needs, or the number of strides given differs
    /// from the format's plane count.
    #[error("{format} frame {w}x{h} needs {need} bytes, the buffer has {have}")]
    Buffer {
        /// The frame's pixel format.
        format: PixelFormat,
        /// Width in pixels.
        w: usize,
        /// Height in pixels.
        h: usize,
        /// Bytes the planes span with the given strides.
        need: usize,
        /// Bytes the buffer holds.
        have: usize,
    },
    /// Two frames expected to match do not; holds both descriptions (format and size).
    #[error("frames differ: {0} vs {1}")]
    Mismatch(String, String),
    /// The pixel buffer could not be allocated (sizes from input files may be huge).
    #[error("cannot allocate {bytes} bytes for a {format} {w}x{h} frame (out of memory)")]
    Alloc {
        /// The frame's pixel format.
        format: PixelFormat,
        /// Width in pixels.
        w: usize,
        /// Height in pixels.
        h: usize,
        /// Bytes requested.
        bytes: usize,
    },
}

/// Where a plane lives inside a frame's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Byte offset of the plane's first row from the start of the buffer.
    pub offset: usize,
    /// Width in pixels (chroma planes of subsampled formats are narrower than the frame).
    pub width: usize,
    /// Height in rows.
    pub height: usize,
    /// Bytes between the starts of consecutive rows.
    pub stride: usize,
    /// Interleaved samples per pixel (1 for a planar plane, 2 for NV12's UV, 3 or 4 for RGB).
    pub channels: usize,
    /// How each sample is stored.
    pub depth: Depth,
}

impl PlaneLayout {
    /// Samples in a row (pixels × channels).
    pub fn row_samples(&self) -> usize {
        self.width * self.channels
    }
    /// Bytes of pixels in a row (padding excluded).
    pub fn row_bytes(&self) -> usize {
        self.row_samples() * self.depth.bytes()
    }
    /// Bytes from the plane's start to the end of its last row.
    pub fn span(&self) -> usize {
        self.stride * (self.height - 1) + self.row_bytes()
    }
}

/// Host memory that is not a plain `Vec`: page-locked buffers a backend's copy engines read and
/// write directly (see `Backend::offload`).
pub trait HostMemory: Send + Sync {
    /// The whole buffer, read-only.
    fn bytes(&self) -> &[u8];
    /// The whole buffer, writable.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// Short description for reports, e.g. "pinned".
    fn kind(&self) -> &'static str;
}

enum Storage {
    Heap(Vec<u8>),
    Foreign(Box<dyn HostMemory>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Foreign(m) => m.bytes(),
        }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Foreign(m) => m.bytes_mut(),
        }
    }
}

/// The size and plane layout of a frame, without its pixels (device frames carry one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The frame's pixel format.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// One layout per plane, in the format's plane order.
    pub planes: Vec<PlaneLayout>,
    /// Bytes the planes span.
    pub len: usize,
}

impl Shape {
    /// "format WxH", e.g. "yuv420p 1920x1080", for messages.
    pub fn describe(&self) -> String {
        format!("{} {}x{}", self.format, self.width, self.height)
    }

    /// The same image with every plane's stride rounded up to a multiple of `align` bytes, the
    /// planes following each other as in [`Frame::from_parts`]; the shape itself when its
    /// strides are already multiples.
    pub fn with_row_align(&self, align: usize) -> Shape {
        let align = align.max(1);
        if self.planes.iter().all(|l| l.stride.is_multiple_of(align)) {
            return self.clone();
        }
        let strides: Vec<usize> = self
            .planes
            .iter()
            .map(|l| l.stride.next_multiple_of(align))
            .collect();
        // Wider strides of a frame's own layout: a layout whatever the alignment.
        let (planes, len) = Frame::layout(self.format, self.width, self.height, &strides)
            .expect("a frame's layout with wider strides is a layout");
        Shape {
            planes,
            len,
            ..*self
        }
    }

    /// Bytes of samples in the planes' rows, padding excluded (the same in every layout).
    pub fn image_bytes(&self) -> usize {
        self.planes.iter().map(|l| l.row_bytes() * l.height).sum()
    }

    /// Same format and size (the layouts may differ).
    pub fn same_image(&self, other: &Shape) -> bool {
        (self.format, self.width, self.height) == (other.format, other.width, other.height)
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An image in one buffer: format, size and plane layouts.
pub struct Frame {
    format: PixelFormat,
    width: usize,
    height: usize,
    planes: Vec<PlaneLayout>,
    data: Storage,
    /// Identifies this buffer (not its contents): sources use it to tell recycled slots apart.
    id: u64,
}

impl Clone for Frame {
    /// A copy in ordinary heap memory.
    fn clone(&self) -> Self {
        Frame {
            format: self.format,
            width: self.width,
            height: self.height,
            planes: self.planes.clone(),
            data: Storage::Heap(self.data().to_vec()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        self.same_shape(other) && self.data() == other.data()
    }
}
impl Eq for Frame {}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Frame({}, {} bytes, id {})",
            self.describe(),
            self.data().len(),
            self.id
        )
    }
}

/// `len` zero bytes, allocated fallibly: a failed allocation is an error, never an abort.
fn zeroed(len: usize, format: PixelFormat, w: usize, h: usize) -> Result<Vec<u8>, FrameError> {
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| FrameError::Alloc {
        format,
        w,
        h,
        bytes: len,
    })?;
    data.resize(len, 0);
    Ok(data)
}

/// Largest accepted frame side; keeps size arithmetic far from overflow.
pub const MAX_SIDE: usize = 1 << 16;

impl Frame {
    /// A zero-filled frame with tightly packed rows.
    pub fn new(format: PixelFormat, width: usize, height: usize) -> Result<Self, FrameError> {
        Self::with_row_align(format, width, height, 1)
    }

    /// A zero-filled frame whose strides are rounded up to a multiple of `align` bytes.
    pub fn with_row_align(
        format: PixelFormat,
        width: usize,
        height: usize,
        align: usize,
    ) -> Result<Self, FrameError> {
        let strides: Vec<usize> = Self::packed_strides(format, width)
            .into_iter()
            .map(|row| row.next_multiple_of(align.max(1)))
            .collect();
        let len = Self::layout(format, width, height, &strides)?.1;
        let data = zeroed(len, format, width, height)?;
        Self::from_parts(format, width, height, &strides, data)
    }

    /// Computes plane layouts for the given strides and the buffer length they need.
    fn layout(
        format: PixelFormat,
        w: usize,
        h: usize,
        strides: &[usize],
    ) -> Result<(Vec<PlaneLayout>, usize), FrameError> {
        if w == 0 || h == 0 {
            return Err(FrameError::Empty(w, h));
        }
        if w > MAX_SIDE || h > MAX_SIDE {
            return Err(FrameError::TooLarge { w, h });
        }
        let mut offset = 0;
        let mut planes = Vec::with_capacity(format.plane_count());
        for (p, &stride) in strides.iter().enumerate().take(format.plane_count()) {
            let (pw, ph) = format.plane_size(p, w, h);
            let channels = format.plane_channels(p);
            let row = pw * channels * format.depth().bytes();
            let bytes = format.depth().bytes();
            if stride % bytes != 0 {
                return Err(FrameError::Unaligned {
                    plane: p,
                    stride,
                    bytes,
                });
            }
            if stride < row {
                return Err(FrameError::Stride {
                    plane: p,
                    stride,
                    row,
                });
            }
            planes.push(PlaneLayout {
                offset,
                width: pw,
                height: ph,
                stride,
                channels,
                depth: format.depth(),
            });
            offset += stride * ph;
        }
        Ok((planes, offset))
    }

    /// Wraps an existing buffer: planes follow each other, plane `p` having `strides[p]`.
    pub fn from_parts(
        format: PixelFormat,
        width: usize,
        height: usize,
        strides: &[usize],
        data: Vec<u8>,
    ) -> Result<Self, FrameError> {
        Self::with_storage(format, width, height, strides, Storage::Heap(data))
    }

    /// Wraps foreign host memory (e.g. page-locked), planes laid out as in [`Frame::from_parts`].
    pub fn from_memory(
        format: PixelFormat,
        width: usize,
        height: usize,
        strides: &[usize],
        memory: Box<dyn HostMemory>,
    ) -> Result<Self, FrameError> {
        Self::with_storage(format, width, height, strides, Storage::Foreign(memory))
    }

    fn with_storage(
        format: PixelFormat,
        width: usize,
        height: usize,
        strides: &[usize],
        data: Storage,
    ) -> Result<Self, FrameError> {
        let (planes, need) = Self::layout(format, width, height, strides)?;
        let have = data.bytes().len();
        if strides.len() != format.plane_count() || have < need {
            return Err(FrameError::Buffer {
                format,
                w: width,
                h: height,
                need,
                have,
            });
        }
        Ok(Frame {
            format,
            width,
            height,
            planes,
            data,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Tightly packed row strides for `format` at `width` (what [`Frame::new`] uses).
    pub fn packed_strides(format: PixelFormat, width: usize) -> Vec<usize> {
        (0..format.plane_count())
            .map(|p| {
                format.plane_size(p, width.max(1), 1).0
                    * format.plane_channels(p)
                    * format.depth().bytes()
            })
            .collect()
    }

    /// Bytes a tightly packed `format` frame of `width × height` needs.
    pub fn packed_len(
        format: PixelFormat,
        width: usize,
        height: usize,
    ) -> Result<usize, FrameError> {
        Ok(Self::layout(format, width, height, &Self::packed_strides(format, width))?.1)
    }

    /// [`Frame::like`] (same format, size and strides, zero-filled, in heap memory) that reports
    /// a failed allocation instead of aborting (for frame sizes that come from input files).
    pub fn try_like(other: &Frame) -> Result<Frame, FrameError> {
        Ok(Frame {
            format: other.format,
            width: other.width,
            height: other.height,
            planes: other.planes.clone(),
            data: Storage::Heap(zeroed(
                other.data().len(),
                other.format,
                other.width,
                other.height,
            )?),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// A frame of the same format, size and strides as `other`, zero-filled, in heap memory
    /// (a new id). Aborts if the allocation fails; see [`Frame::try_like`].
    pub fn like(other: &Frame) -> Frame {
        Frame {
            format: other.format,
            width: other.width,
            height: other.height,
            planes: other.planes.clone(),
            data: Storage::Heap(vec![0; other.data().len()]),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Format, size and plane layout.
    pub fn shape(&self) -> Shape {
        Shape {
            format: self.format,
            width: self.width,
            height: self.height,
            planes: self.planes.clone(),
            len: self.data().len(),
        }
    }

    /// True when this frame has exactly `shape` (format, size, plane layout, length), without
    /// building a [`Shape`].
    pub fn has_shape(&self, shape: &Shape) -> bool {
        self.format == shape.format
            && self.width == shape.width
            && self.height == shape.height
            && self.planes == shape.planes
            && self.data().len() == shape.len
    }

    /// Identifies the buffer (a clone gets a new id).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What memory holds the pixels: "heap" or the foreign memory's kind (e.g. "pinned").
    pub fn memory_kind(&self) -> &'static str {
        match &self.data {
            Storage::Heap(_) => "heap",
            Storage::Foreign(m) => m.kind(),
        }
    }

    /// The pixel format.
    pub fn format(&self) -> PixelFormat {
        self.format
    }
    /// Width in pixels (of plane 0; chroma planes may be smaller).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Height in pixels (of plane 0).
    pub fn height(&self) -> usize {
        self.height
    }
    /// The plane layouts, in the format's plane order.
    pub fn planes(&self) -> &[PlaneLayout] {
        &self.planes
    }
    /// The whole buffer, stride padding included (it may run past the last plane).
    pub fn data(&self) -> &[u8] {
        self.data.bytes()
    }
    /// The whole buffer, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.data.bytes_mut()
    }
    /// The buffer as a `Vec`: heap storage is returned as is, foreign memory is copied.
    pub fn into_data(self) -> Vec<u8> {
        match self.data {
            Storage::Heap(v) => v,
            Storage::Foreign(m) => m.bytes().to_vec(),
        }
    }

    /// True when `other` has the same format, size and plane layout.
    pub fn same_shape(&self, other: &Frame) -> bool {
        self.format == other.format
            && self.width == other.width
            && self.height == other.height
            && self.planes == other.planes
    }

    /// "format WxH", e.g. "yuv420p 1920x1080", for messages.
    pub fn describe(&self) -> String {
        format!("{} {}x{}", self.format, self.width, self.height)
    }

    /// A read-only view of plane `p`. Panics if `p` is not below the plane count.
    pub fn plane(&self, p: usize) -> PlaneRef<'_> {
        let l = self.planes[p];
        PlaneRef {
            data: &self.data()[l.offset..l.offset + l.span()],
            layout: l,
        }
    }

    /// A writable view of plane `p`. Panics if `p` is not below the plane count.
    pub fn plane_mut(&mut self, p: usize) -> PlaneMut<'_> {
        let l = self.planes[p];
        PlaneMut {
            data: &mut self.data_mut()[l.offset..l.offset + l.span()],
            layout: l,
        }
    }

    /// Row `y` of plane `p`, without the stride padding.
    pub fn row(&self, p: usize, y: usize) -> &[u8] {
        let l = self.planes[p];
        &self.data()[l.offset + y * l.stride..][..l.row_bytes()]
    }

    /// Row `y` of plane `p`, writable, without the stride padding.
    pub fn row_mut(&mut self, p: usize, y: usize) -> &mut [u8] {
        let l = self.planes[p];
        &mut self.data_mut()[l.offset + y * l.stride..][..l.row_bytes()]
    }

    /// The pixel bytes only (padding dropped), planes in order: what a file stores.
    pub fn to_packed(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in 0..self.planes.len() {
            for y in 0..self.planes[p].height {
                out.extend_from_slice(self.row(p, y));
            }
        }
        out
    }

    /// True when both frames hold the same pixels (strides may differ).
    pub fn same_pixels(&self, other: &Frame) -> bool {
        self.format == other.format
            && self.width == other.width
            && self.height == other.height
            && (0..self.planes.len())
                .all(|p| (0..self.planes[p].height).all(|y| self.row(p, y) == other.row(p, y)))
    }
}

/// A read-only view of one plane. `data` starts at the plane's first byte and ends at the end
/// of its last row.
#[derive(Clone, Copy, Debug)]
pub struct PlaneRef<'a> {
    /// The plane's bytes, from its first row to the end of its last row's pixels.
    pub data: &'a [u8],
    /// The plane's layout (its `offset` is relative to the frame, not to `data`).
    pub layout: PlaneLayout,
}

impl PlaneRef<'_> {
    /// Row `y`, without the stride padding.
    pub fn row(&self, y: usize) -> &[u8] {
        &self.data[y * self.layout.stride..][..self.layout.row_bytes()]
    }
}

/// A writable view of one plane.
#[derive(Debug)]
pub struct PlaneMut<'a> {
    /// The plane's bytes, from its first row to the end of its last row's pixels.
    pub data: &'a mut [u8],
    /// The plane's layout (its `offset` is relative to the frame, not to `data`).
    pub layout: PlaneLayout,
}

impl PlaneMut<'_> {
    /// Row `y`, writable, without the stride padding.
    pub fn row_mut(&mut self, y: usize) -> &mut [u8] {
        let rb = self.layout.row_bytes();
        &mut self.data[y * self.layout.stride..][..rb]
    }

    /// Copies every row of `src` (same size and channels) into this plane.
    pub fn copy_from(&mut self, src: &PlaneRef<'_>) {
        for y in 0..self.layout.height {
            self.row_mut(y).copy_from_slice(src.row(y));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_samples_need_strides_in_whole_samples() {
        let f = |fmt, stride: usize| Frame::from_parts(fmt, 3, 2, &[stride], vec![0; 64]);
        assert!(f(PixelFormat::Gray8, 5).is_ok(), "bytes sit anywhere");
        assert!(f(PixelFormat::Gray16, 8).is_ok());
        assert!(matches!(
            f(PixelFormat::Gray16, 7),
            Err(FrameError::Unaligned {
                plane: 0,
                stride: 7,
                bytes: 2
            })
        ));
    }

    #[test]
    fn planar_layouts_round_chroma_up() {
        let f = Frame::new(PixelFormat::Yuv420p, 5, 3).unwrap();
        let p: Vec<_> = f
            .planes()
            .iter()
            .map(|l| (l.width, l.height, l.offset))
            .collect();
        assert_eq!(p, vec![(5, 3, 0), (3, 2, 15), (3, 2, 21)]);
        assert_eq!(f.data().len(), 27);
        let n = Frame::new(PixelFormat::Nv12, 5, 3).unwrap();
        assert_eq!(n.planes()[1].channels, 2);
        assert_eq!(n.planes()[1].row_bytes(), 6);
    }

    #[test]
    fn aligned_strides_and_packing() {
        let mut f = Frame::with_row_align(PixelFormat::Rgb8, 3, 2, 16).unwrap();
        assert_eq!(f.planes()[0].stride, 16);
        f.row_mut(0, 1)
            .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(f.to_packed()[9..], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let g = Frame::from_parts(PixelFormat::Rgb8, 3, 2, &[9], f.to_packed()).unwrap();
        assert!(f.same_pixels(&g));
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(Frame::new(PixelFormat::Gray8, 0, 4).is_err());
        assert!(Frame::from_parts(PixelFormat::Gray8, 4, 4, &[3], vec![0; 16]).is_err());
        assert!(Frame::from_parts(PixelFormat::Gray8, 4, 4, &[4], vec![0; 15]).is_err());
    }
}
