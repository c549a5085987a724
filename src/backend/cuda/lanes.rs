//! Side streams for the independent launches of one frame. `fast` runs a frame's planes in one
//! launch per specialization, and some frames need two (NV12 and P010: the luma plane and the
//! interleaved two-channel chroma plane). Queued on one stream, the second launch waits for the
//! last block of the first, so the device idles through the first one's tail and the second
//! one's ramp. [`Lanes`] forks side streams off the backend's stream (after everything queued on
//! it) and joins them back (before anything queued after), so that the launches run side by side
//! and the frame's events, copies and next frame see them as one piece of work.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use super::{timing, CudaError};

/// The backend's side streams and their events, created when first needed and kept.
#[derive(Default)]
pub(super) struct Lanes {
    streams: Vec<Arc<CudaStream>>,
    /// Recorded on the main stream at a fork; every side stream waits on it.
    fork: Option<CudaEvent>,
    /// One for each side stream, recorded on it at a join; the main stream waits on them.
    joins: Vec<CudaEvent>,
}

fn err(e: cudarc::driver::DriverError) -> CudaError {
    CudaError::driver("running launches side by side", e)
}

impl Lanes {
    /// `n` side streams, each made to wait for the work queued on `main` so far.
    pub(super) fn fork(
        &mut self,
        ctx: &Arc<CudaContext>,
        main: &CudaStream,
        n: usize,
    ) -> Result<Vec<Arc<CudaStream>>, CudaError> {
        while self.streams.len() < n {
            // The join event first: a stream is kept only with its event.
            let join = timing::event(ctx, false)?;
            self.streams.push(ctx.new_stream().map_err(err)?);
            self.joins.push(join);
        }
        let fork = match self.fork.take() {
            Some(e) => e,
            None => timing::event(ctx, false)?,
        };
        let waited = fork
            .record(main)
            .and_then(|()| self.streams[..n].iter().try_for_each(|s| s.wait(&fork)));
        self.fork = Some(fork);
        waited.map_err(err)?;
        Ok(self.streams[..n].to_vec())
    }

    /// Makes `main` wait for the work queued on the first `n` side streams so far.
    pub(super) fn join(&self, main: &CudaStream, n: usize) -> Result<(), CudaError> {
        self.streams[..n]
            .iter()
            .zip(&self.joins)
            .try_for_each(|(s, e)| e.record(s).and_then(|()| main.wait(e)))
            .map_err(err)
    }
}
