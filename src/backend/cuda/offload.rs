//! The CUDA side of the pipeline's transfer stages: page-locked host frames, device frame
//! buffers, and copy queues that each own a non-blocking stream and events per copy slot.
//!
//! A queue keeps a few copies in flight on its stream, each followed by an event (one copy in
//! `COPY_TIME_EVERY` between a pair of timing events, for the report's device times), and
//! a stage hands a frame on only once its copy has finished (its event has fired), so the
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
        let (depth, streams) = copy_shape();
        let err = |what| move |e| CudaError::driver(what, e);
        let streams = (0..streams)
            .map(|_| self.ctx.new_stream().map_err(err("creating a copy stream")))
            .collect::<Result<Vec<_>, _>>()?;
        let ev = |timing| event(&self.ctx, timing);
        let slots = (0..depth)
            .map(|i| {
                Ok(Slot {
                    stream: streams[i % streams.len()].clone(),
                    start: ev(true)?,
                    end: ev(true)?,
                    done: ev(false)?,
                    timed: false,
                    what: "",
                })
            })
            .collect::<Result<Vec<_>, CudaError>>()?;
        Ok(Box::new(CudaQueue {
            slots,
            next: 0,
            pending: 0,
            sample: Sampler::from_env("CONVFLOW_COPY_TIME_EVERY", COPY_TIME_EVERY),
        }))
    }
}

/// Copies a queue keeps in flight, and how many streams they take turns on. Measured on an
/// H100 (docs/PERFORMANCE.md, "Small frames"): one copy at a time leaves the copy engine idle
/// while the host learns it has finished and starts the next — a fixed ~20 µs a frame that cost
/// 1080p gray 40 % of the bus; two in flight on one stream keep it busy.
/// `CONVFLOW_COPY_DEPTH` and `CONVFLOW_COPY_STREAMS` override them (sweeps).
const COPY_DEPTH: usize = 2;
const COPY_STREAMS: usize = 1;

/// One copy in this many is timed ([`Sampler`]). Measured on an H100 (docs/PERFORMANCE.md,
/// "tenth round"): a timing event pair around every copy took a 0.9 MB copy from ~20 to 26 µs of
/// copy-engine time and held 720p gray at 30k frames/s against 42k with copies untimed (1080p
/// gray 17.2k against 19.7k; 720p RGB 13.3k against 14.8k). `CONVFLOW_COPY_TIME_EVERY`
/// overrides it (1: every copy).
const COPY_TIME_EVERY: usize = 16;

/// The copy queues' shape: copies in flight and streams (the constants, or their overrides).
fn copy_shape() -> (usize, usize) {
    let depth = env_count("CONVFLOW_COPY_DEPTH", COPY_DEPTH, 8);
    (
        depth,
        env_count("CONVFLOW_COPY_STREAMS", COPY_STREAMS, 8).min(depth),
    )
}

/// One copy's place in a queue: its stream and the events around it: `start` and `end` (timing)
/// when the copy is timed, else `done` alone.
struct Slot {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
    done: CudaEvent,
    timed: bool,
    /// What the copy does, for its errors.
    what: &'static str,
}

/// A ring of copy slots: copies start in slot `next`, `pending` of them (the ones before it)
/// are in flight, and they finish oldest first; `sample` picks the timed copies.
struct CudaQueue {
    slots: Vec<Slot>,
    next: usize,
    pending: usize,
    sample: Sampler,
}

impl CudaQueue {
    /// Starts `copy` in the next slot, followed by its event (between its timing events when
    /// it is one of the timed copies).
    fn start(
        &mut self,
        what: &'static str,
        copy: impl FnOnce(sys::CUstream) -> Result<(), cudarc::driver::DriverError>,
    ) -> Result<(), CudaError> {
        if self.pending == self.slots.len() {
            return Err(CudaError::Unsupported(format!(
                "{what}: {} copies already in flight",
                self.pending
            )));
        }
        let err = |e| CudaError::driver(what, e);
        let slot = &mut self.slots[self.next];
        slot.stream.context().bind_to_thread().map_err(err)?;
        let timed = self.sample.next();
        if timed {
            slot.start.record(&slot.stream).map_err(err)?;
        }
        copy(slot.stream.cu_stream()).map_err(err)?;
        let end = if timed { &slot.end } else { &slot.done };
        end.record(&slot.stream).map_err(err)?;
        slot.timed = timed;
        slot.what = what;
        self.next = (self.next + 1) % self.slots.len();
        self.pending += 1;
        Ok(())
    }
}

impl CopyQueue for CudaQueue {
    unsafe fn start_upload(
        &mut self,
        src: &Frame,
        dst: &mut DeviceFrame,
    ) -> Result<(), DeviceError> {
        let plan = CopyPlan::between(&src.shape(), &dst.shape)?;
        let d = device_ptr(dst)?;
        let bytes = src.data();
        // SAFETY: `d` is a live allocation holding the device layout the plan was made for;
        // the caller keeps both frames until `finish` (the trait's contract).
        Ok(self.start("uploading a frame", |s| unsafe {
            raw::copy_frame_htod(&plan, bytes, d, s)
        })?)
    }

    unsafe fn start_download(
        &mut self,
        src: &DeviceFrame,
        dst: &mut Frame,
    ) -> Result<(), DeviceError> {
        let plan = CopyPlan::between(&dst.shape(), &src.shape)?;
        let d = device_ptr(src)?;
        let bytes = dst.data_mut();
        // SAFETY: as for the upload.
        Ok(self.start("downloading a frame", |s| unsafe {
            raw::copy_frame_dtoh(&plan, d, bytes, s)
        })?)
    }

    fn finish(&mut self) -> Result<Option<Duration>, DeviceError> {
        let n = self.slots.len();
        if self.pending == 0 {
            return Err(CudaError::Unsupported("no copy in flight to finish".into()).into());
        }
        let slot = &self.slots[(self.next + n - self.pending) % n];
        self.pending -= 1;
        let err = |e| CudaError::driver(slot.what, e);
        if !slot.timed {
            slot.done.synchronize().map_err(err)?;
            return Ok(None);
        }
        slot.end.synchronize().map_err(err)?;
        let ms = slot.start.elapsed_ms(&slot.end).map_err(err)?.max(0.0) as f64;
        Ok(Some(Duration::from_secs_f64(ms / 1e3)))
    }

    fn depth(&self) -> usize {
        self.slots.len()
    }

    fn done(&mut self) -> bool {
        let n = self.slots.len();
        let slot = &self.slots[(self.next + n - self.pending) % n];
        let end = if slot.timed { &slot.end } else { &slot.done };
        self.pending == 0 || end.try_is_complete().unwrap_or(true)
    }
}

/// Copies still in flight when a queue goes (a stage that failed) complete before the streams
/// do, so the buffers they touch may be freed afterwards.
impl Drop for CudaQueue {
    fn drop(&mut self) {
        for slot in &self.slots {
            let _ = slot.stream.synchronize();
        }
    }
}
