//! Device and page-locked memory of the CUDA backend: buffers that grow to the largest frame
//! seen and are reused after (every device allocation carries [`DEVICE_SLACK`] bytes for the
//! kernels' word reads), out-of-memory turned into a clear error naming the frame, and the
//! page-locked staging of the synchronous path (the same [`PinnedBuf`] the pipeline's pools
//! hold).

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError, ValidAsZeroBits,
};

use super::abi::DEVICE_SLACK;
use super::raw::PinnedBuf;
use super::CudaError;

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
