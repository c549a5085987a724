//! Recycled frame buffers. A [`Pool`] holds at most `inflight` buffers of one kind, returned
//! through a channel by the stage that is done with them; a stage that finds them all in use
//! waits, which is the pipeline's backpressure (and the time it waits is kept apart from its
//! work). [`HostSlots`] are the read stage's pool as sources see it ([`FrameSlots`]), checked
//! against the memory budget before the first buffer of a size is allocated.
//! [`auto_inflight`] sizes the pools when the user does not (`--inflight`).

use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender, TryRecvError};

use crate::device::Offload;
use crate::frame::{Frame, PixelFormat};
use crate::io::{FrameSlots, IoError};

/// Frames per pool when none is asked for (`--inflight` left out), for frames of
/// `frame_bytes` (None: not known before the first frame): pools of about
/// [`AUTO_POOL_BYTES`], at least 3 and at most [`AUTO_POOL_MOST`] frames. A small frame's copies
/// are short beside the host's round trip per frame (a channel hop, a wake-up, a poll), so more
/// frames must be in flight to keep the copy engines busy: on an H100, 720p gray went from 55 %
/// of the duplex bound with 3 to 72 % with 8, 1080p gray from 80–87 % to 88–90 % with 4, while
/// 720p RGB and larger frames gained nothing then (docs/PERFORMANCE.md, "Pool depth"). Since a
/// CUDA copy queue submits waiting frames' copies together (up to 4 a call, two calls running),
/// a stage gathers full batches only with about a dozen frames in hand: on an H200, 720p gray
/// with batched copies sustained 45.7k frames/s with pools of 7 and 48.2–49.0k with 8–16, 1080p
/// gray 22.0k with 4 and 22.8–23.2k with 8–16, 720p RGB 16.8k with 3 and 17.0–17.5k with 8–12
/// (docs/PERFORMANCE.md, fifty-fifth round).
pub fn auto_inflight(frame_bytes: Option<usize>) -> usize {
    frame_bytes.map_or(3, |b| {
        AUTO_POOL_BYTES.div_ceil(b.max(1)).clamp(3, AUTO_POOL_MOST)
    })
}

/// The pool size [`auto_inflight`] aims at.
pub const AUTO_POOL_BYTES: usize = 16 << 20;

/// The most frames [`auto_inflight`] gives a pool.
pub const AUTO_POOL_MOST: usize = 12;

/// Free buffers of one kind, recycled from the stage that is done with them to the stage that
/// fills them. At most `cap` exist; once all are out, `get` waits for one to come back.
pub(super) struct Pool<T> {
    rx: Receiver<T>,
    /// A returned buffer [`Pool::has_free`] took off the channel, handed out next.
    spare: Option<T>,
    made: usize,
    cap: usize,
    /// Time spent waiting for a buffer to come back.
    pub waited: Duration,
}

impl<T> Pool<T> {
    /// The pool, and the sender its buffers return through.
    pub fn new(cap: usize) -> (Self, Sender<T>) {
        let (tx, rx) = unbounded();
        (
            Pool {
                rx,
                spare: None,
                made: 0,
                cap: cap.max(1),
                waited: Duration::ZERO,
            },
            tx,
        )
    }

    /// A free buffer that `fits` (others are dropped and replaced), or a new one from `make`
    /// while fewer than `cap` exist. None when the returning stage has gone (the run stops).
    pub fn get<E>(
        &mut self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Option<T>, E> {
        loop {
            let item = if let Some(x) = self.spare.take() {
                Some(x)
            } else if self.made < self.cap {
                self.rx.try_recv().ok()
            } else {
                let t = Instant::now();
                let r = self.rx.recv();
                self.waited += t.elapsed();
                match r {
                    Ok(x) => Some(x),
                    Err(_) => return Ok(None),
                }
            };
            match item {
                Some(x) if fits(&x) => return Ok(Some(x)),
                Some(_) => self.made -= 1,
                None => {
                    let x = make()?;
                    self.made += 1;
                    return Ok(Some(x));
                }
            }
        }
    }

    /// True when [`Pool::get`] would not wait: a buffer may still be made, one has come back,
    /// or the returning stage has gone (then `get` says the run stops).
    pub fn has_free(&mut self) -> bool {
        if self.spare.is_some() || self.made < self.cap {
            return true;
        }
        match self.rx.try_recv() {
            Ok(x) => {
                self.spare = Some(x);
                true
            }
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => true,
        }
    }

    /// The channel buffers come back through, to wait on several pools at once.
    pub fn returns(&self) -> &Receiver<T> {
        &self.rx
    }

    /// Counts a buffer made elsewhere as one of this pool's (waiting for room first).
    pub fn admit(&mut self) -> bool {
        if self.spare.take().is_some() {
            return true; // the returned buffer is dropped; the adopted one takes its place
        }
        if self.made < self.cap {
            self.made += 1;
            return true;
        }
        let t = Instant::now();
        let r = self.rx.recv();
        self.waited += t.elapsed();
        r.is_ok()
    }
}

/// The read stage's frame buffers: heap frames, or page-locked ones from the backend.
pub(super) struct HostSlots<'a> {
    pub pool: Pool<Frame>,
    pub offload: Option<&'a dyn Offload>,
    /// The CPU reads these frames back (`--check`), so they must not be write-combined.
    pub cpu_reads: bool,
    /// Host frame buffers the run holds per frame size (pools, --check reference).
    pub buffers: usize,
    /// The frame size last checked against the memory budget.
    budgeted: Option<(PixelFormat, usize, usize)>,
}

impl<'a> HostSlots<'a> {
    pub fn new(
        pool: Pool<Frame>,
        offload: Option<&'a dyn Offload>,
        cpu_reads: bool,
        buffers: usize,
    ) -> Self {
        HostSlots {
            pool,
            offload,
            cpu_reads,
            buffers,
            budgeted: None,
        }
    }

    /// Refuses a frame size whose buffers would not fit the memory budget, before the first
    /// one is allocated.
    fn check_budget(
        &mut self,
        format: PixelFormat,
        width: usize,
        height: usize,
    ) -> Result<(), IoError> {
        if self.budgeted == Some((format, width, height)) {
            return Ok(());
        }
        let len =
            Frame::packed_len(format, width, height).map_err(|e| buffer_err(e.to_string()))? as u64;
        let what = format!(
            "{} buffers of {format} {width}x{height} frames ({} each)",
            self.buffers,
            crate::memory::human(len)
        );
        crate::memory::check(&what, len.saturating_mul(self.buffers as u64))?;
        self.budgeted = Some((format, width, height));
        Ok(())
    }
}

fn buffer_err(msg: String) -> IoError {
    IoError::Read {
        path: "<frame buffer>".into(),
        msg,
    }
}

impl FrameSlots for HostSlots<'_> {
    fn take(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<Frame, IoError> {
        let strides = Frame::packed_strides(format, width);
        let fits = |f: &Frame| {
            f.format() == format
                && f.width() == width
                && f.height() == height
                && f.planes().iter().zip(&strides).all(|(l, s)| l.stride == *s)
        };
        self.check_budget(format, width, height)?;
        let make = || match self.offload {
            Some(off) => off
                .host_frame(format, width, height, self.cpu_reads)
                .map_err(|e| buffer_err(e.to_string())),
            None => Frame::new(format, width, height).map_err(|e| buffer_err(e.to_string())),
        };
        self.pool.get(fits, make)?.ok_or(IoError::Stopped)
    }

    fn adopt(&mut self, frame: Frame) -> Result<Frame, IoError> {
        if self.offload.is_some() {
            let mut slot = self.take(frame.format(), frame.width(), frame.height())?;
            for p in 0..frame.planes().len() {
                slot.plane_mut(p).copy_from(&frame.plane(p));
            }
            return Ok(slot);
        }
        // Heap frames go on as they are, in place of a pool buffer.
        if self.pool.admit() {
            Ok(frame)
        } else {
            Err(IoError::Stopped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Frame, PixelFormat};

    #[test]
    fn auto_inflight_deepens_pools_for_small_frames_only() {
        let bytes = |f: PixelFormat, w, h| Some(Frame::packed_len(f, w, h).unwrap());
        assert_eq!(auto_inflight(None), 3);
        assert_eq!(auto_inflight(bytes(PixelFormat::Gray8, 64, 48)), 12);
        assert_eq!(auto_inflight(bytes(PixelFormat::Gray8, 1280, 720)), 12);
        assert_eq!(auto_inflight(bytes(PixelFormat::Gray8, 1920, 1080)), 9);
        assert_eq!(auto_inflight(bytes(PixelFormat::Rgb8, 1280, 720)), 7);
        assert_eq!(auto_inflight(bytes(PixelFormat::Rgb8, 1920, 1080)), 3);
        assert_eq!(auto_inflight(bytes(PixelFormat::Rgb8, 3840, 2160)), 3);
        assert_eq!(auto_inflight(Some(0)), 12);
    }
}
