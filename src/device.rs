//! Frames in a device's own memory and the interface that moves them: what the pipeline's
//! upload and download stages drive, what a source that decodes on the GPU hands over, and
//! what a device backend filters. Plain data and traits, below both [`crate::io`] and
//! [`crate::backend`], so neither has to import the other.

use std::any::Any;
use std::time::Duration;

use crate::frame::{Frame, PixelFormat, Shape};

/// An error of device memory or copies, as the backend that owns the memory reports it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DeviceError(pub Box<dyn std::error::Error + Send + Sync>);

/// A frame in a device's memory, laid out as the host frame it mirrors.
pub struct DeviceFrame {
    /// Format, size and plane layout, the same as the host frame's.
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
    /// A device buffer for frames of `shape`.
    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, DeviceError>;
    /// A copy queue of its own (a CUDA stream), for one stage thread.
    fn queue(&self) -> Result<Box<dyn CopyQueue>, DeviceError>;
}

/// Copies on one queue, run in the order they were started. A stage keeps up to
/// [`CopyQueue::depth`] copies in flight, so the copy engine goes from one frame's copy to the
/// next without waiting for the host to notice the first has finished; a copy is complete (its
/// buffers free to read, reuse or drop) once [`CopyQueue::finish`] has returned for it.
pub trait CopyQueue: Send {
    /// Starts copying host frame `src` into `dst` (same shape).
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
    /// Starts copying device frame `src` into host frame `dst` (same shape).
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
    /// small copy a quarter of its speed). An error ends that copy too: the next call is about
    /// the copy after it.
    fn finish(&mut self) -> Result<Option<Duration>, DeviceError>;
    /// How many copies may be in flight at once (started, not finished); at least 1.
    fn depth(&self) -> usize;
    /// True when the oldest copy in flight is over (or failed), so [`CopyQueue::finish`] would
    /// not wait: a stage polls it while it also watches for its next frame.
    fn done(&mut self) -> bool {
        true
    }
}
