//! Frames in a device's own memory and the interface that moves them: what the pipeline's
//! upload and download stages drive, what a source that decodes on the GPU hands over, and
//! what a device backend filters. Plain data and traits, below both [`crate::io`] and
//! [`crate::backend`], so neither has to import the other.

use std::any::Any;
use std::time::Duration;

use crate::frame::{Frame, PixelFormat, PlaneLayout, Shape};

/// An error of device memory or copies, as the backend that owns the memory reports it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DeviceError(pub Box<dyn std::error::Error + Send + Sync>);

/// Where each row of a frame in device memory starts: at a multiple of this many bytes from
/// the buffer's start (itself aligned further), so that the kernels read and write every row in
/// aligned 16-byte words whatever the frame's width. Rows packed as the host holds them start
/// wherever the previous one ended, and on widths whose rows are not a multiple of 4 bytes
/// (1921×1081 gray, 854×480 RGB) the kernels had to build their words byte by byte: measured on
/// an H100, 1921×1081 RGB 3×3 took 43.7 µs against 9.9 µs at 1920×1080 (docs/PERFORMANCE.md,
/// seventeenth round).
pub const DEVICE_ROW_ALIGN: usize = 16;

/// The device layout of frames held on the host as `host`: the same planes, each row starting
/// at a multiple of [`DEVICE_ROW_ALIGN`] bytes (`host` itself when its strides already are).
/// `CONVFLOW_DEVICE_ROW_ALIGN` (a power of two up to 4096; 1: the host's layout) overrides it,
/// for measurements.
pub fn device_shape(host: &Shape) -> Shape {
    static ALIGN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let align = *ALIGN.get_or_init(|| {
        std::env::var("CONVFLOW_DEVICE_ROW_ALIGN")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|a| a.is_power_of_two() && *a <= 4096)
            .unwrap_or(DEVICE_ROW_ALIGN)
    });
    host.with_row_align(align)
}

/// How one frame moves between a host layout and a device layout of the same image: one copy
/// of `len` bytes when the layouts are the same, else one 2D copy per plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CopyPlan {
    /// The layouts are the same: the whole buffer in one piece.
    Whole {
        /// Bytes of the buffer.
        len: usize,
    },
    /// One entry per plane.
    Planes(Vec<PlaneCopy>),
}

/// One plane's rows between two layouts (byte offsets from each buffer's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneCopy {
    /// Where the plane starts in the host buffer.
    pub host_offset: usize,
    /// Bytes between the starts of its rows there.
    pub host_stride: usize,
    /// Where the plane starts in the device buffer.
    pub device_offset: usize,
    /// Bytes between the starts of its rows there.
    pub device_stride: usize,
    /// Bytes of each row (padding excluded).
    pub row_bytes: usize,
    /// Rows of the plane.
    pub rows: usize,
}

impl CopyPlan {
    /// The copies between a host frame of layout `host` and a device frame of layout `device`;
    /// an error when they are not the same image.
    pub fn between(host: &Shape, device: &Shape) -> Result<CopyPlan, DeviceError> {
        // The planes must hold the same samples, each inside its own buffer.
        let inside = |l: &PlaneLayout, len: usize| {
            l.stride >= l.row_bytes() && l.offset.checked_add(l.span()).is_some_and(|e| e <= len)
        };
        let planes_match = host.planes.len() == device.planes.len()
            && host.planes.iter().zip(&device.planes).all(|(h, d)| {
                (h.width, h.height, h.channels, h.depth) == (d.width, d.height, d.channels, d.depth)
                    && inside(h, host.len)
                    && inside(d, device.len)
            });
        if !host.same_image(device) || !planes_match {
            return Err(DeviceError(
                format!(
                    "host frame {} does not match device frame {}",
                    host.describe(),
                    device.describe()
                )
                .into(),
            ));
        }
        if host.planes == device.planes && host.len == device.len {
            return Ok(CopyPlan::Whole { len: host.len });
        }
        let planes = host.planes.iter().zip(&device.planes);
        Ok(CopyPlan::Planes(
            planes
                .map(|(h, d)| PlaneCopy {
                    host_offset: h.offset,
                    host_stride: h.stride,
                    device_offset: d.offset,
                    device_stride: d.stride,
                    row_bytes: h.row_bytes(),
                    rows: h.height,
                })
                .collect(),
        ))
    }
}

/// A frame in a device's memory: the image of a host frame, each row starting at a multiple of
/// [`DEVICE_ROW_ALIGN`] bytes ([`device_shape`]).
pub struct DeviceFrame {
    /// Format, size and plane layout in device memory.
    pub shape: Shape,
    /// The owner's buffer (e.g. a CUDA allocation); only that backend looks inside.
    pub mem: Box<dyn Any + Send>,
}

/// Device-clock times of one frame's steps (CUDA events), for the transfer-vs-kernel split.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceTimes {
    /// Host-to-device copy of the source frame.
    pub h2d: Duration,
    /// The filter kernels over every plane.
    pub kernel: Duration,
    /// Device-to-host copy of the result.
    pub d2h: Duration,
}

/// What the pipeline's transfer stages need from a backend that computes in its own memory.
/// Shared by the upload and download threads; each takes its own [`CopyQueue`].
pub trait Offload: Send + Sync {
    /// A tightly packed host frame in memory the copy engines reach directly (page-locked).
    /// `cpu_reads`: the CPU will read it (download targets, `--check` inputs), so it must not
    /// be write-combined.
    fn host_frame(
        &self,
        format: PixelFormat,
        width: usize,
        height: usize,
        cpu_reads: bool,
    ) -> Result<Frame, DeviceError>;
    /// A device buffer for frames held on the host as `shape` (or already on the device so),
    /// laid out as [`device_shape`] says.
    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, DeviceError>;
    /// A copy queue of its own (a CUDA stream), for one stage thread.
    fn queue(&self) -> Result<Box<dyn CopyQueue>, DeviceError>;
}

/// Copies on one queue, finished in the order they were started. A stage keeps up to
/// [`CopyQueue::depth`] copies in flight, so the copy engine goes from one frame's copy to the
/// next without waiting for the host to notice the first has finished; a copy is complete (its
/// buffers free to read, reuse or drop) once [`CopyQueue::finish`] has returned for it. A
/// queue may hold a started copy back, to submit it with the next ones as one batch while the
/// copies before it still run; [`CopyQueue::finish`] and [`CopyQueue::done`] submit what is held
/// once fewer copies run than the queue keeps going (always when the oldest copy is held), so
/// `finish` never waits on a copy that was not submitted, and a stage that polls `done` while
/// it waits for input submits its held copies as soon as the link can take them.
pub trait CopyQueue: Send {
    /// Starts copying host frame `src` into `dst` (the same image; [`CopyPlan::between`]
    /// their layouts).
    ///
    /// # Safety
    /// Until [`CopyQueue::finish`] has returned for this copy, `src`'s memory must not be
    /// written or freed and `dst`'s must not be touched or freed (moving the `Frame` and
    /// `DeviceFrame` values is fine: their memory does not move with them).
    unsafe fn start_upload(
        &mut self,
        src: &Frame,
        dst: &mut DeviceFrame,
    ) -> Result<(), DeviceError>;
    /// Starts copying device frame `src` into host frame `dst` (the same image).
    ///
    /// # Safety
    /// As for [`CopyQueue::start_upload`], with the roles of the two frames swapped.
    unsafe fn start_download(
        &mut self,
        src: &DeviceFrame,
        dst: &mut Frame,
    ) -> Result<(), DeviceError>;
    /// Waits for the oldest copy started and not yet finished; returns its device time when
    /// that copy was timed (a queue may time only a sample of its copies: timing events cost a
    /// small copy a quarter of its speed; copies submitted together share their batch's time).
    /// An error ends that copy too: the next call is about the copy after it.
    fn finish(&mut self) -> Result<Option<Duration>, DeviceError>;
    /// How many copies may be in flight at once (started, not finished); at least 1.
    fn depth(&self) -> usize;
    /// The most copies this queue submits in one call (1: it never holds copies back).
    fn batch_most(&self) -> usize {
        1
    }
    /// How many of the copies submitted so far went in a call with others (a diagnostic).
    fn batched(&self) -> usize {
        0
    }
    /// True when the oldest copy in flight is over (or failed), so [`CopyQueue::finish`] would
    /// not wait: a stage polls it while it also watches for its next frame (and a queue that
    /// holds copies back submits them here once the link could take them).
    fn done(&mut self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(format: PixelFormat, w: usize, h: usize) -> Shape {
        Frame::new(format, w, h).unwrap().shape()
    }

    #[test]
    fn device_rows_start_at_aligned_offsets_and_keep_the_image() {
        for (format, w, h) in [
            (PixelFormat::Yuv420p, 21, 9),
            (PixelFormat::Rgb8, 1921, 3),
            (PixelFormat::Gray16, 853, 5),
            (PixelFormat::Nv12, 1919, 7),
        ] {
            let host = shape(format, w, h);
            let dev = device_shape(&host);
            assert!(dev.same_image(&host));
            assert_eq!(device_shape(&dev), dev, "already aligned: unchanged");
            let mut end = 0;
            for (d, h) in dev.planes.iter().zip(&host.planes) {
                assert_eq!(d.stride % DEVICE_ROW_ALIGN, 0);
                assert!(d.stride >= h.stride && d.stride < h.stride + DEVICE_ROW_ALIGN);
                assert_eq!((d.offset, d.width, d.height), (end, h.width, h.height));
                end += d.stride * d.height;
            }
            assert_eq!(dev.len, end);
            let CopyPlan::Planes(planes) = CopyPlan::between(&host, &dev).unwrap() else {
                panic!("{format} {w}x{h}: rows move plane by plane");
            };
            for ((c, d), h) in planes.iter().zip(&dev.planes).zip(&host.planes) {
                assert_eq!((c.host_offset, c.host_stride), (h.offset, h.stride));
                assert_eq!((c.device_offset, c.device_stride), (d.offset, d.stride));
                assert_eq!((c.row_bytes, c.rows), (h.row_bytes(), h.height));
            }
        }
        // Rows already aligned: one copy of the whole frame.
        let host = shape(PixelFormat::Yuv420p, 1920, 1080);
        assert_eq!(device_shape(&host), host);
        let whole = CopyPlan::between(&host, &host).unwrap();
        assert_eq!(whole, CopyPlan::Whole { len: host.len });
        // Another image is refused, as is a layout whose planes leave its buffer.
        let other = device_shape(&shape(PixelFormat::Yuv420p, 1920, 1082));
        assert!(CopyPlan::between(&host, &other).is_err());
        let mut short = device_shape(&shape(PixelFormat::Rgb8, 1921, 3));
        short.len = short.planes[0].offset + short.planes[0].span() - 1;
        assert!(CopyPlan::between(&shape(PixelFormat::Rgb8, 1921, 3), &short).is_err());
    }
}
