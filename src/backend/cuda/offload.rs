//! The CUDA side of the pipeline's transfer stages: page-locked host frames, device frame
//! buffers, and copy queues that each own a non-blocking stream and events per copy slot.
//!
//! A queue keeps a few submissions running on its stream, each followed by an event (one in
//! `COPY_TIME_EVERY` between a pair of timing events, for the report's device times). A
//! submission is one frame's copy, or, when frames reach the queue while two submissions still
//! run, the copies of up to `COPY_BATCH` of them in one call (`cuMemcpyBatchAsync`: small
//! frames' copies one to a call cost the link a fixed share each). A stage hands a frame on
//! only once its copy has finished (its event has fired), so the
//! next stage always gets a ready frame and no cross-stream ordering is needed: the overlap
//! comes from the upload, filter and download stages each driving their own stream at once.
//! Upload sources are write-combined page-locked memory (fast for the CPU to fill and for the
//! copy engine to read); download targets are plain page-locked memory, which the CPU reads at
//! full speed. With `--pageable`, host frames are ordinary heap memory and the driver stages
//! each copy itself (slower, kept for comparison).

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr};

use super::abi::DEVICE_SLACK;
use super::memory::oom_or;
use super::raw::{self, PinnedBuf};
use super::timing::{env_count, event, Sampler};
use super::CudaError;
use crate::backend::LinkBandwidth;
use crate::device::{device_shape, CopyPlan, CopyQueue, DeviceError, DeviceFrame, Offload};
use crate::frame::{Frame, PixelFormat, Shape};
use crate::stats::median;

pub struct CudaOffload {
    ctx: Arc<CudaContext>,
    pageable: bool,
}

impl CudaOffload {
    pub fn new(ctx: Arc<CudaContext>, pageable: bool) -> Self {
        CudaOffload { ctx, pageable }
    }
}

/// A device buffer for one frame, with the stream it was allocated on (cudarc frees it there).
struct DeviceBuf {
    buf: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

/// The device address of a frame made by [`CudaOffload::device_frame`], whose buffer holds its
/// layout (`shape.len` bytes).
pub fn device_ptr(f: &DeviceFrame) -> Result<u64, CudaError> {
    let d = f.mem.downcast_ref::<DeviceBuf>().ok_or_else(|| {
        CudaError::Unsupported("device frame was not made by the CUDA backend".into())
    })?;
    if d.buf.len() < f.shape.len {
        return Err(CudaError::Unsupported(format!(
            "device frame {} does not fit its buffer",
            f.shape.describe()
        )));
    }
    Ok(d.buf.device_ptr(&d.stream).0)
}

/// Host↔device bandwidth with `off`'s kind of host memory: `bytes` each way, alone and both at
/// once, median of `reps` rounds after one warm-up round.
pub fn link_bandwidth(
    off: &CudaOffload,
    bytes: usize,
    reps: usize,
) -> Result<LinkBandwidth, DeviceError> {
    // Gray frames 16384 bytes wide hold the buffers.
    let rows = bytes.div_ceil(16384).max(1);
    let bytes = rows * 16384;
    let up_host = off.host_frame(PixelFormat::Gray8, 16384, rows, false)?;
    let mut down_host = off.host_frame(PixelFormat::Gray8, 16384, rows, true)?;
    let shape = up_host.shape();
    let up_dev = off.device_frame(&shape)?;
    let down_dev = off.device_frame(&shape)?;
    let (d_up, d_down) = (device_ptr(&up_dev)?, device_ptr(&down_dev)?);
    let err = |e| CudaError::driver("measuring copy bandwidth", e);
    let (a, b) = (
        off.ctx.new_stream().map_err(err)?,
        off.ctx.new_stream().map_err(err)?,
    );
    let ev = || event(&off.ctx, true);
    let (start, end_a, end_b) = (ev()?, ev()?, ev()?);
    let (mut up, mut down, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps.max(1) + 1 {
        // 0: up alone, 1: down alone, 2: both at once (b waits for a's start event).
        let mut times = [0.0f64; 3];
        for (which, t) in times.iter_mut().enumerate() {
            start.record(&a).map_err(err)?;
            b.wait(&start).map_err(err)?;
            if which != 1 {
                // SAFETY: live allocations of `bytes` bytes; the host buffers outlive the
                // synchronizations below.
                unsafe { raw::copy_htod(d_up, up_host.data(), a.cu_stream()) }.map_err(err)?;
            }
            if which != 0 {
                // SAFETY: as above.
                unsafe { raw::copy_dtoh(down_host.data_mut(), d_down, b.cu_stream()) }
                    .map_err(err)?;
            }
            end_a.record(&a).map_err(err)?;
            end_b.record(&b).map_err(err)?;
            end_a.synchronize().map_err(err)?;
            end_b.synchronize().map_err(err)?;
            let ta = start.elapsed_ms(&end_a).map_err(err)? as f64;
            let tb = start.elapsed_ms(&end_b).map_err(err)? as f64;
            *t = ta.max(tb) / 1e3;
        }
        if rep > 0 {
            // The first round warms up.
            up.push(times[0]);
            down.push(times[1]);
            both.push(times[2]);
        }
    }
    let n = bytes as f64;
    Ok(LinkBandwidth {
        h2d: n / median(up),
        d2h: n / median(down),
        duplex: 2.0 * n / median(both),
    })
}

impl Offload for CudaOffload {
    fn host_frame(
        &self,
        format: PixelFormat,
        width: usize,
        height: usize,
        cpu_reads: bool,
    ) -> Result<Frame, DeviceError> {
        let frame_err = |e: crate::frame::FrameError| DeviceError(Box::new(e));
        if self.pageable {
            return Frame::new(format, width, height).map_err(frame_err);
        }
        let strides = Frame::packed_strides(format, width);
        let len = Frame::packed_len(format, width, height).map_err(frame_err)?;
        let what = format!("{format} {width}x{height}");
        let mem = PinnedBuf::new(&self.ctx, len, !cpu_reads).map_err(oom_or(
            "allocating page-locked host memory",
            len,
            what,
        ))?;
        Frame::from_memory(format, width, height, &strides, Box::new(mem)).map_err(frame_err)
    }

    fn device_frame(&self, shape: &Shape) -> Result<DeviceFrame, DeviceError> {
        let shape = &device_shape(shape);
        let stream = self.ctx.default_stream();
        let buf = stream
            .alloc_zeros::<u8>(shape.len + DEVICE_SLACK)
            .map_err(oom_or(
                "allocating device memory",
                shape.len,
                shape.describe(),
            ))?;
        // The zero fill runs on the legacy stream, which the copy streams do not wait for.
        stream
            .synchronize()
            .map_err(|e| CudaError::driver("allocating device memory", e))?;
        Ok(DeviceFrame {
            shape: shape.clone(),
            mem: Box::new(DeviceBuf { buf, stream }),
        })
    }

    fn queue(&self) -> Result<Box<dyn CopyQueue>, DeviceError> {
        let shape = copy_shape(self.pageable);
        let err = |what| move |e| CudaError::driver(what, e);
        let streams = (0..shape.streams)
            .map(|_| self.ctx.new_stream().map_err(err("creating a copy stream")))
            .collect::<Result<Vec<_>, _>>()?;
        let ev = |timing| event(&self.ctx, timing);
        let slots = (0..shape.slots())
            .map(|i| {
                Ok(Slot {
                    stream: streams[i % streams.len()].clone(),
                    start: ev(true)?,
                    end: ev(true)?,
                    done: ev(false)?,
                    last: i,
                    count: 1,
                    timed: false,
                    what: "",
                    failed: None,
                    over: false,
                })
            })
            .collect::<Result<Vec<_>, CudaError>>()?;
        Ok(Box::new(CudaQueue {
            slots,
            next: 0,
            pending: 0,
            held: Vec::new(),
            held_what: "",
            shape,
            sample: Sampler::from_env("CONVFLOW_COPY_TIME_EVERY", COPY_TIME_EVERY),
            batched: 0,
        }))
    }
}

/// Submissions a queue keeps running at once, and how many streams they take turns on.
/// Measured on an H100 (docs/PERFORMANCE.md, "Small frames"): one copy at a time leaves the
/// copy engine idle while the host learns it has finished and starts the next — a fixed ~20 µs
/// a frame that cost 1080p gray 40 % of the bus; two in flight on one stream keep it busy.
/// `CONVFLOW_COPY_DEPTH` and `CONVFLOW_COPY_STREAMS` override them (sweeps).
const COPY_DEPTH: usize = 2;
const COPY_STREAMS: usize = 1;

/// Most frames one submission copies ([`raw::copy_batch`]). Each copy call costs the link a
/// fixed share: on an H200 two 0.9 MB copies in flight, one frame each, sustained 83–89 % of
/// the duplex bound; two frames a call 93–99 %, four 96–102 % (`scripts/copy_bench.cu`,
/// docs/PERFORMANCE.md, fifty-fifth round). A queue holds a frame's copy back only while
/// [`COPY_DEPTH`] submissions are already running, so a frame that finds the link free goes at
/// once and batches form only where frames wait for the link. `CONVFLOW_COPY_BATCH`
/// overrides it (1: every frame alone); drivers before CUDA 13.0, host frames not in
/// page-locked memory and frames whose device rows are padded are copied one at a time.
const COPY_BATCH: usize = 4;

/// One submission in this many is timed ([`Sampler`]). Measured on an H100
/// (docs/PERFORMANCE.md, "tenth round"): a timing event pair around every copy took a 0.9 MB
/// copy from ~20 to 26 µs of copy-engine time and held 720p gray at 30k frames/s against 42k
/// with copies untimed (1080p gray 17.2k against 19.7k; 720p RGB 13.3k against 14.8k).
/// `CONVFLOW_COPY_TIME_EVERY` overrides it (1: every submission).
const COPY_TIME_EVERY: usize = 16;

/// A queue's shape: submissions running at once, streams, frames per submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CopyShape {
    depth: usize,
    streams: usize,
    batch: usize,
}

impl CopyShape {
    /// Copy slots: `depth` running submissions and one more being gathered, of `batch` copies
    /// each (`depth` alone when copies are not gathered).
    fn slots(self) -> usize {
        if self.batch > 1 {
            (self.depth + 1) * self.batch
        } else {
            self.depth
        }
    }
}

/// The copy queues' shape (the constants, or their overrides); one frame per submission for
/// pageable memory (`--pageable`) and drivers without batched copies.
fn copy_shape(pageable: bool) -> CopyShape {
    let depth = env_count("CONVFLOW_COPY_DEPTH", COPY_DEPTH, 8);
    let batches = !pageable && raw::batch_copies();
    CopyShape {
        depth,
        streams: env_count("CONVFLOW_COPY_STREAMS", COPY_STREAMS, 8).min(depth),
        batch: if batches {
            env_count("CONVFLOW_COPY_BATCH", COPY_BATCH, raw::BATCH_MOST)
        } else {
            1
        },
    }
}

/// One copy's place in a queue: its stream, and the events that end a submission (held by
/// its last copy's slot): `start` and `end` (timing) when the submission is timed, else
/// `done` alone.
struct Slot {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
    done: CudaEvent,
    /// The slot of the last copy of this copy's submission (whose events end it), and how many
    /// copies the submission holds (its device time is shared among them).
    last: usize,
    count: usize,
    timed: bool,
    /// What the copy does, for its errors.
    what: &'static str,
    /// The submission could not start (its copies are not running): finishing says so.
    failed: Option<cudarc::driver::DriverError>,
    /// In the last slot of a submission: its event was seen reached ([`CudaQueue::running`]).
    over: bool,
}

/// A ring of copy slots: copies start in slot `next`, `pending` of them (the ones before it)
/// are started and not finished, and they finish oldest first. The newest `held.len()` of
/// them are held back, to be submitted together ([`CudaQueue::submit`]); `sample` picks the
/// timed submissions.
struct CudaQueue {
    slots: Vec<Slot>,
    next: usize,
    pending: usize,
    held: Vec<raw::Copy1d>,
    held_what: &'static str,
    shape: CopyShape,
    sample: Sampler,
    /// Copies submitted in calls with others so far ([`CopyQueue::batched`]).
    batched: usize,
}

impl CudaQueue {
    /// Whether a copy to or from `host` may be held back and batched: batching is on and the
    /// frame is page-locked (what [`raw::copy_batch`] requires; the pipeline's pools always
    /// are, a frame from elsewhere need not be).
    fn batches(&self, host: &Frame) -> bool {
        self.shape.batch > 1 && PinnedBuf::holds(host)
    }

    /// The slot of the oldest copy not finished.
    fn oldest(&self) -> usize {
        let n = self.slots.len();
        (self.next + n - self.pending) % n
    }

    /// An error when no slot is free for another copy.
    fn room(&self, what: &'static str) -> Result<(), CudaError> {
        if self.pending == self.slots.len() {
            return Err(CudaError::Unsupported(format!(
                "{what}: {} copies already in flight",
                self.pending
            )));
        }
        Ok(())
    }

    /// Takes the next slot (`next`) for a new copy, or says the queue is full.
    fn take_slot(&mut self, what: &'static str) -> Result<(), CudaError> {
        self.room(what)?;
        self.next = (self.next + 1) % self.slots.len();
        self.pending += 1;
        Ok(())
    }

    /// Submissions whose copies still run (submitted, their events not yet reached). Each
    /// submission's event is asked once it is the oldest not yet seen over, and no further
    /// once it is: submissions on one stream end in order, so the first still running is the
    /// last asked (with several streams, `CONVFLOW_COPY_STREAMS`, the later ones count as
    /// running).
    fn running(&mut self) -> usize {
        let n = self.slots.len();
        let mut left = self.pending - self.held.len();
        let (mut i, mut running, mut asked) = (self.oldest(), 0, false);
        while left > 0 {
            let last = self.slots[i].last;
            let s = &self.slots[last];
            if !s.over && self.slots[i].failed.is_none() {
                let end = if s.timed { &s.end } else { &s.done };
                if !asked && end.try_is_complete().unwrap_or(true) {
                    self.slots[last].over = true;
                } else {
                    asked = true;
                    running += 1;
                }
            }
            left = left.saturating_sub((last + n - i) % n + 1);
            i = (last + 1) % n;
        }
        running
    }

    /// Submits the held copies when fewer than `depth` submissions still run (the link would
    /// otherwise soon run dry).
    fn pump(&mut self) {
        if !self.held.is_empty() && self.running() < self.shape.depth {
            self.submit();
        }
    }

    /// Submits the held copies as one batch on their last slot's stream, followed by that
    /// slot's event (between its timing events when the submission is timed). A submission
    /// that cannot start marks its copies failed, once whatever did start has finished.
    fn submit(&mut self) {
        let count = self.held.len();
        if count == 0 {
            return;
        }
        let n = self.slots.len();
        let last = (self.next + n - 1) % n;
        let timed = self.sample.next();
        let slot = &self.slots[last];
        let stream = &slot.stream;
        let held = &self.held;
        let result = (|| {
            stream.context().bind_to_thread()?;
            if timed {
                slot.start.record(stream)?;
            }
            // SAFETY: each held copy was started by `start_upload` / `start_download`, whose
            // callers keep both frames until `finish` has returned for it.
            let copied = unsafe { raw::copy_batch(held, stream.cu_stream()) }
                .and_then(|()| (if timed { &slot.end } else { &slot.done }).record(stream));
            if copied.is_err() {
                // Whatever started must be over before the frames may go.
                let _ = stream.synchronize();
            }
            copied
        })();
        for k in 0..count {
            let s = &mut self.slots[(last + n + 1 - count + k) % n];
            s.last = last;
            s.count = count;
            s.timed = timed;
            s.what = self.held_what;
            s.failed = result.err();
            s.over = false;
        }
        if count > 1 {
            self.batched += count;
        }
        self.held.clear();
    }

    /// Starts a frame's copy as one piece of memory: held back to go with the next ones
    /// while `depth` submissions run, else submitted with those held before it.
    fn start_held(&mut self, what: &'static str, copy: raw::Copy1d) -> Result<(), CudaError> {
        self.take_slot(what)?;
        self.held.push(copy);
        self.held_what = what;
        if self.held.len() >= self.shape.batch || self.running() < self.shape.depth {
            self.submit();
        }
        Ok(())
    }

    /// Starts `copy` alone in the next slot (after the held copies, submitted first), followed
    /// by its event (between its timing events when it is timed).
    fn start_alone(
        &mut self,
        what: &'static str,
        copy: impl FnOnce(sys::CUstream) -> Result<(), cudarc::driver::DriverError>,
    ) -> Result<(), CudaError> {
        self.room(what)?;
        self.submit();
        let err = |e| CudaError::driver(what, e);
        let i = self.next;
        let slot = &self.slots[i];
        slot.stream.context().bind_to_thread().map_err(err)?;
        let timed = self.sample.next();
        if timed {
            slot.start.record(&slot.stream).map_err(err)?;
        }
        copy(slot.stream.cu_stream()).map_err(err)?;
        let end = if timed { &slot.end } else { &slot.done };
        if let Err(e) = end.record(&slot.stream) {
            // The copy started: it must be over before the caller lets the frames go.
            let _ = slot.stream.synchronize();
            return Err(err(e));
        }
        self.take_slot(what)?;
        let slot = &mut self.slots[i];
        (slot.last, slot.count, slot.timed, slot.what) = (i, 1, timed, what);
        (slot.failed, slot.over) = (None, false);
        Ok(())
    }
}

impl CopyQueue for CudaQueue {
    unsafe fn start_upload(
        &mut self,
        src: &Frame,
        dst: &mut DeviceFrame,
    ) -> Result<(), DeviceError> {
        const WHAT: &str = "uploading a frame";
        let plan = CopyPlan::between(&src.shape(), &dst.shape)?;
        let d = device_ptr(dst)?;
        let batch = self.batches(src);
        let bytes = src.data();
        if let (CopyPlan::Whole { len }, true) = (&plan, batch) {
            let src = bytes[..*len].as_ptr() as sys::CUdeviceptr;
            let copy = raw::Copy1d {
                dst: d,
                src,
                len: *len,
            };
            return Ok(self.start_held(WHAT, copy)?);
        }
        // SAFETY: `d` is a live allocation holding the device layout the plan was made for;
        // the caller keeps both frames until `finish` (the trait's contract).
        Ok(self.start_alone(WHAT, |s| unsafe {
            raw::copy_frame_htod(&plan, bytes, d, s)
        })?)
    }

    unsafe fn start_download(
        &mut self,
        src: &DeviceFrame,
        dst: &mut Frame,
    ) -> Result<(), DeviceError> {
        const WHAT: &str = "downloading a frame";
        let plan = CopyPlan::between(&dst.shape(), &src.shape)?;
        let d = device_ptr(src)?;
        let batch = self.batches(dst);
        let bytes = dst.data_mut();
        if let (CopyPlan::Whole { len }, true) = (&plan, batch) {
            let dst = bytes[..*len].as_mut_ptr() as sys::CUdeviceptr;
            let copy = raw::Copy1d {
                dst,
                src: d,
                len: *len,
            };
            return Ok(self.start_held(WHAT, copy)?);
        }
        // SAFETY: as for the upload.
        Ok(self.start_alone(WHAT, |s| unsafe {
            raw::copy_frame_dtoh(&plan, d, bytes, s)
        })?)
    }

    fn finish(&mut self) -> Result<Option<Duration>, DeviceError> {
        if self.pending == 0 {
            return Err(CudaError::Unsupported("no copy in flight to finish".into()).into());
        }
        // Held copies go before this wait when the link could take them (always when the
        // oldest copy is one of them: nothing else runs), and again after it, before the
        // stage hands the frame on (which may wait on the next stage).
        self.pump();
        let i = self.oldest();
        self.pending -= 1;
        let slot = &self.slots[i];
        let err = |e| CudaError::driver(slot.what, e);
        if let Some(e) = slot.failed {
            return Err(err(e).into());
        }
        let (last, count) = (&self.slots[slot.last], slot.count);
        let device = if slot.timed {
            last.end.synchronize().map_err(err)?;
            let ms = last.start.elapsed_ms(&last.end).map_err(err)?.max(0.0) as f64;
            Some(Duration::from_secs_f64(ms / 1e3 / count as f64))
        } else {
            last.done.synchronize().map_err(err)?;
            None
        };
        self.pump();
        Ok(device)
    }

    fn depth(&self) -> usize {
        self.slots.len()
    }

    fn batch_most(&self) -> usize {
        self.shape.batch
    }

    fn batched(&self) -> usize {
        self.batched
    }

    fn done(&mut self) -> bool {
        if self.pending == 0 {
            return true;
        }
        self.pump();
        let slot = &self.slots[self.oldest()];
        let last = &self.slots[slot.last];
        let end = if slot.timed { &last.end } else { &last.done };
        slot.failed.is_some() || end.try_is_complete().unwrap_or(true)
    }
}

/// Copies still in flight when a queue goes (a stage that failed) complete before the streams
/// do, so the buffers they touch may be freed afterwards; held copies were never submitted.
impl Drop for CudaQueue {
    fn drop(&mut self) {
        for slot in &self.slots {
            let _ = slot.stream.synchronize();
        }
    }
}
