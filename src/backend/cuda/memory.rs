//! Device and page-locked memory of the CUDA backend: buffers that grow to the largest frame
//! seen and are reused after (every device allocation carries [`DEVICE_SLACK`] bytes for the
//! kernels' word reads), out-of-memory turned into a clear error naming the frame, and the
//! synchronous path's copies, staged through page-locked buffers (the same [`PinnedBuf`] the
//! pipeline's pools hold) into and out of device buffers in the row-aligned device layout.

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError, ValidAsZeroBits,
};

use super::abi::DEVICE_SLACK;
use super::raw::{self, PinnedBuf};
use super::CudaError;
use crate::device::{device_shape, CopyPlan};
use crate::frame::{Frame, Shape};

/// Maps a failed allocation of `bytes` for `frame` to [`CudaError::OutOfMemory`] when the
/// device is out of memory, else to a driver error about `what`.
pub fn oom_or(
    what: &'static str,
    bytes: usize,
    frame: String,
) -> impl FnOnce(DriverError) -> CudaError {
    move |e| {
        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            CudaError::OutOfMemory { bytes, frame }
        } else {
            CudaError::driver(what, e)
        }
    }
}

/// Makes `slot` hold at least `len` elements (plus the slack), reallocating only to grow.
pub fn grow<T: DeviceRepr + ValidAsZeroBits>(
    slot: &mut Option<CudaSlice<T>>,
    len: usize,
    stream: &Arc<CudaStream>,
    frame: &str,
) -> Result<(), CudaError> {
    if slot.as_ref().is_some_and(|s| s.len() >= len) {
        return Ok(());
    }
    *slot = None; // free first, so a larger buffer can take its place
    let slack = DEVICE_SLACK.div_ceil(std::mem::size_of::<T>().max(1));
    let buf = stream.alloc_zeros::<T>(len + slack).map_err(oom_or(
        "allocating device memory",
        len * std::mem::size_of::<T>(),
        frame.to_string(),
    ))?;
    *slot = Some(buf);
    Ok(())
}

/// The device address of a buffer.
pub fn ptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    s.device_ptr(stream).0
}

/// A page-locked buffer of exactly `len` bytes in `slot` (reallocated when the size changes).
/// Write-combined memory is for uploads (fast for the CPU to write and the GPU to read, very
/// slow for the CPU to read); plain page-locked memory for downloads.
pub fn pinned<'a>(
    ctx: &Arc<CudaContext>,
    slot: &'a mut Option<PinnedBuf>,
    len: usize,
    write_combined: bool,
    frame: &str,
) -> Result<&'a mut PinnedBuf, CudaError> {
    if slot.as_ref().is_none_or(|b| b.len() != len) {
        *slot = None;
        let buf = PinnedBuf::new(ctx, len, write_combined).map_err(oom_or(
            "allocating page-locked host memory",
            len,
            frame.to_string(),
        ))?;
        *slot = Some(buf);
    }
    Ok(slot.as_mut().expect("filled above"))
}

/// The synchronous path's copies: each frame staged through page-locked buffers (unless
/// pageable) into and out of the backend's device buffers, laid out as `device_shape` says.
impl super::CudaBackend {
    /// Grows device buffers for `src`/`dst` in their device layouts ([`device_shape`]) and
    /// uploads `src` (staged through page-locked memory unless pageable); returns the two
    /// device layouts.
    pub(super) fn upload(&mut self, src: &Frame, dst: &Frame) -> Result<(Shape, Shape), CudaError> {
        let what = src.describe();
        let (s_host, s_dev, d_dev) = (
            src.shape(),
            device_shape(&src.shape()),
            device_shape(&dst.shape()),
        );
        let plan = copy_plan(&s_host, &s_dev)?;
        // The raw copies below need this thread to have the context current.
        self.ctx
            .bind_to_thread()
            .map_err(|e| CudaError::driver("binding the CUDA context", e))?;
        grow(&mut self.d_src, s_dev.len, &self.stream, &what)?;
        grow(&mut self.d_dst, d_dev.len, &self.stream, &what)?;
        let n = src.data().len();
        let d = ptr(self.d_src.as_ref().expect("grown"), &self.stream);
        let up = |e| CudaError::driver("uploading a frame", e);
        let stream = self.stream.cu_stream();
        if self.pageable {
            // SAFETY: `d` holds the device layout; `src` outlives the synchronization that
            // ends this frame (download_then waits for the stream).
            unsafe { raw::copy_frame_htod(&plan, src.data(), d, stream) }.map_err(up)?;
            return Ok((s_dev, d_dev));
        }
        let pin = pinned(&self.ctx, &mut self.pin_up, n, true, &what)?;
        use crate::frame::HostMemory;
        pin.bytes_mut().copy_from_slice(src.data());
        // SAFETY: as above; the staging buffer lives in `self` until the next frame, after
        // the stream was synchronized.
        unsafe { raw::copy_frame_htod(&plan, pin.bytes(), d, stream) }.map_err(up)?;
        Ok((s_dev, d_dev))
    }

    /// Downloads the result, laid out on the device as `dev`, into `dst`; `after` runs once
    /// the copy is queued, before the wait.
    pub(super) fn download_then(
        &mut self,
        dst: &mut Frame,
        dev: &Shape,
        after: impl FnOnce(&mut Self) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        use crate::frame::HostMemory;
        let plan = copy_plan(&dst.shape(), dev)?;
        let n = dst.data().len();
        let d = ptr(self.d_dst.as_ref().expect("uploaded first"), &self.stream);
        let down = |e| CudaError::driver("downloading a frame", e);
        let done = |e| CudaError::driver("running the filter", e);
        let stream = self.stream.cu_stream();
        if self.pageable {
            // SAFETY: `d` holds the device layout; `dst` stays borrowed until the synchronize.
            unsafe { raw::copy_frame_dtoh(&plan, d, dst.data_mut(), stream) }.map_err(down)?;
            after(self)?;
            return self.stream.synchronize().map_err(done);
        }
        let what = dst.describe();
        let pin = pinned(&self.ctx, &mut self.pin_down, n, false, &what)?;
        // SAFETY: as above, into the staging buffer, read only after the synchronize.
        unsafe { raw::copy_frame_dtoh(&plan, d, pin.bytes_mut(), stream) }.map_err(down)?;
        after(self)?;
        self.stream.synchronize().map_err(done)?;
        let pin = self.pin_down.as_ref().expect("allocated above");
        dst.data_mut().copy_from_slice(pin.bytes());
        Ok(())
    }
}

/// The copies between a host layout and a device layout of the same image.
fn copy_plan(host: &Shape, dev: &Shape) -> Result<CopyPlan, CudaError> {
    CopyPlan::between(host, dev).map_err(|e| CudaError::Unsupported(e.to_string()))
}
