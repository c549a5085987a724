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

/// Copies on one queue; each call returns once its copy is complete, with its device time.
pub trait CopyQueue: Send {
    /// Copies host frame `src` into `dst` (same shape); returns the copy's device time.
    fn upload(&mut self, src: &Frame, dst: &mut DeviceFrame) -> Result<Duration, DeviceError>;
    /// Copies device frame `src` into host frame `dst` (same shape); returns the device time.
    fn download(&mut self, src: &DeviceFrame, dst: &mut Frame) -> Result<Duration, DeviceError>;
}
