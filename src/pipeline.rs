//! Runs a filter over a stream as a staged pipeline, each stage on its own thread, joined by
//! bounded crossbeam channels:
//!
//! * host backends (cpu-seq, cpu-par, cuda `--sync`): read → filter → write;
//! * device backends (cuda): read → upload → filter → download → write, where upload and
//!   download drive their own copy queues (CUDA streams) from the backend's [`Offload`], so the
//!   copy of frame n+1, the kernels of frame n and the copy back of frame n−1 run at once.
//!
//! Buffers come from fixed pools of `inflight` frames each (host input, device input, device
//! output, host output), recycled from the stage that finishes with a buffer to the stage that
//! fills it: steady state allocates nothing, and a stage waiting for a free buffer is the
//! backpressure. Host buffers of a device backend are page-locked (write-combined on the way
//! up). One worker per stage and FIFO channels keep frame order.
//!
//! Any error stops every stage (channels disconnect), the sink is aborted so nothing that looks
//! finished remains, and a successful run has written exactly as many frames as it read. A frame
//! the source reports as bad ([`IoError::BadFrame`]) fails the run, or with `skip_bad` is counted
//! and skipped. Raising `stop` (the CLI does on Ctrl-C) ends reading; the frames already read
//! drain through and the output is finalized.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use hdrhistogram::Histogram;

use crate::backend::{Backend, BackendError, DeviceFrame, DeviceTimes, Offload};
use crate::filter::Plan;
use crate::frame::{Frame, PixelFormat};
use crate::io::{FrameMeta, FrameSlots, IoError, Payload, Sink, Source};

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("frame {index}: {source}")]
    Backend { index: usize, source: BackendError },
    #[error("{0}")]
    Setup(BackendError),
    #[error("frame {index}: --check found {count} samples that differ from cpu-seq (first at plane {plane}, row {row}, byte {col}: {got} vs {want})")]
    CheckMismatch {
        index: usize,
        count: usize,
        plane: usize,
        row: usize,
        col: usize,
        got: u8,
        want: u8,
    },
    #[error("{read} frames read but {written} written")]
    FrameCount { read: usize, written: usize },
    #[error("a pipeline stage panicked")]
    Panicked,
}

/// How to run, besides what to run.
pub struct Options<'a> {
    /// Frames per buffer pool and per channel (≥ 1).
    pub inflight: usize,
    /// Also filter every frame with this backend (cpu-seq) and fail on any differing byte.
    pub check: Option<&'a mut dyn Backend>,
    /// Raised to stop reading (Ctrl-C).
    pub stop: &'a AtomicBool,
    /// Count and skip frames the source reports as bad instead of failing.
    pub skip_bad: bool,
    /// Called by the write stage with the number of frames written so far.
    pub progress: Option<&'a dyn Fn(usize)>,
    /// Hand frames from the source to the sink unfiltered (measures I/O alone).
    pub passthrough: bool,
}

impl<'a> Options<'a> {
    pub fn new(inflight: usize, stop: &'a AtomicBool) -> Self {
        Options {
            inflight,
            check: None,
            stop,
            skip_bad: false,
            progress: None,
            passthrough: false,
        }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 24 * 3600 * 1_000_000, 3).expect("valid bounds")
}

/// One stage's totals.
#[derive(Clone, Debug)]
pub struct StageStats {
    pub name: &'static str,
    pub frames: usize,
    /// Time spent working (not waiting on channels or for free buffers).
    pub busy: Duration,
    /// Bytes of frame data handled.
    pub bytes: u64,
    /// Device time of this stage's work (CUDA events): copies for upload/download, kernels for
    /// filter. Zero where not measured.
    pub device: Duration,
    /// Per-frame busy time in µs.
    pub per_frame: Histogram<u64>,
    /// Upload / kernel / download device times inside this stage (a filter stage that runs the
    /// transfers itself: `--sync`), when `measured`.
    pub split: DeviceTimes,
    pub measured: bool,
}

impl StageStats {
    fn new(name: &'static str) -> Self {
        StageStats {
            name,
            frames: 0,
            busy: Duration::ZERO,
            bytes: 0,
            device: Duration::ZERO,
            per_frame: histogram(),
            split: DeviceTimes::default(),
            measured: false,
        }
    }

    fn add(&mut self, busy: Duration, bytes: usize) {
        self.frames += 1;
        self.busy += busy;
        self.bytes += bytes as u64;
        let _ = self.per_frame.record(busy.as_micros().max(1) as u64);
    }
}

/// What a run did, for the report.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// Frames read and written.
    pub frames: usize,
    /// Frames the source reported bad and `skip_bad` skipped, with the first few messages.
    pub skipped: usize,
    pub skip_messages: Vec<String>,
    pub megapixels: f64,
    pub wall: Duration,
    /// read, [upload,] filter, [download,] write.
    pub stages: Vec<StageStats>,
    /// Per-frame latency from the start of its read to the end of its write, in µs.
    pub latency: Histogram<u64>,
    pub checked: bool,
    /// Reading stopped early because `stop` was raised (Ctrl-C).
    pub interrupted: bool,
    /// Device times summed over all frames, when the backend measures them.
    pub device: Option<DeviceTimes>,
    /// Transfers ran in their own stages (overlapped), not inside the filter stage.
    pub overlapped: bool,
    /// Frames written after the warm-up (the first `4·inflight + 4` writes, which include
    /// allocating the buffer pools) and the time they took: the sustained rate.
    pub steady: Option<(usize, Duration)>,
}

impl RunStats {
    /// Frames per second after the warm-up, when the run was long enough to have one.
    pub fn steady_fps(&self) -> Option<f64> {
        self.steady.map(|(n, t)| n as f64 / t.as_secs_f64().max(1e-9))
    }

    pub fn stage(&self, name: &str) -> Option<&StageStats> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The stage with the most busy time.
    pub fn bottleneck(&self) -> &StageStats {
        self.stages
            .iter()
            .max_by_key(|s| s.busy)
            .expect("at least three stages")
    }

    /// Sum of stage busy times over wall time: 1 when nothing overlaps, up to the number of
    /// stages when all of them are busy all the time.
    pub fn overlap(&self) -> f64 {
        let busy: f64 = self.stages.iter().map(|s| s.busy.as_secs_f64()).sum();
        busy / self.wall.as_secs_f64().max(1e-9)
    }

    /// The report as JSON (for `--report FILE.json`): totals, each stage, latency percentiles,
    /// the transfer-vs-kernel split.
    pub fn to_json(&self) -> serde_json::Value {
        let wall = self.wall.as_secs_f64();
        let pct = |h: &Histogram<u64>| {
            serde_json::json!({
                "p50": h.value_at_quantile(0.5),
                "p90": h.value_at_quantile(0.9),
                "p99": h.value_at_quantile(0.99),
                "max": h.max(),
            })
        };
        let stage = |s: &StageStats| {
            let busy = s.busy.as_secs_f64();
            serde_json::json!({
                "name": s.name,
                "frames": s.frames,
                "busy_s": busy,
                "fps": s.frames as f64 / busy.max(1e-9),
                "mb_per_s": s.bytes as f64 / busy.max(1e-9) / 1e6,
                "utilisation": busy / wall.max(1e-9),
                "device_s": s.device.as_secs_f64(),
                "latency_us": pct(&s.per_frame),
            })
        };
        let n = self.frames.max(1) as f64;
        let device = self.device.map(|d| {
            serde_json::json!({
                "h2d_s": d.h2d.as_secs_f64(),
                "kernel_s": d.kernel.as_secs_f64(),
                "d2h_s": d.d2h.as_secs_f64(),
                "per_frame_us": {
                    "h2d": d.h2d.as_secs_f64() * 1e6 / n,
                    "kernel": d.kernel.as_secs_f64() * 1e6 / n,
                    "d2h": d.d2h.as_secs_f64() * 1e6 / n,
                },
            })
        });
        serde_json::json!({
            "frames": self.frames,
            "skipped": self.skipped,
            "skip_messages": self.skip_messages,
            "megapixels": self.megapixels,
            "wall_s": wall,
            "fps": self.frames as f64 / wall.max(1e-9),
            "steady_fps": self.steady_fps(),
            "interrupted": self.interrupted,
            "checked_against_cpu_seq": self.checked,
            "bottleneck": self.bottleneck().name,
            "overlapped_transfers": self.overlapped,
            "overlap_efficiency": self.overlap(),
            "stages": self.stages.iter().map(stage).collect::<Vec<_>>(),
            "latency_us": pct(&self.latency),
            "device": device,
        })
    }
}

/// Free buffers of one kind, recycled from the stage that is done with them to the stage that
/// fills them. At most `cap` exist; once all are out, `get` waits for one to come back.
struct Pool<T> {
    rx: Receiver<T>,
    made: usize,
    cap: usize,
    waited: Duration,
}

impl<T> Pool<T> {
    /// The pool, and the sender its buffers return through.
    fn new(cap: usize) -> (Self, Sender<T>) {
        let (tx, rx) = unbounded();
        (
            Pool {
                rx,
                made: 0,
                cap: cap.max(1),
                waited: Duration::ZERO,
            },
            tx,
        )
    }

    /// A free buffer that `fits` (others are dropped and replaced), or a new one from `make`
    /// while fewer than `cap` exist. None when the returning stage has gone (the run stops).
    fn get<E>(&mut self, fits: impl Fn(&T) -> bool, make: impl FnOnce() -> Result<T, E>) -> Result<Option<T>, E> {
        loop {
            let item = if self.made < self.cap {
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

    /// Counts a buffer made elsewhere as one of this pool's (waiting for room first).
    fn admit(&mut self) -> bool {
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
struct HostSlots<'a> {
    pool: Pool<Frame>,
    offload: Option<&'a dyn Offload>,
    cpu_reads: bool,
    /// Host frame buffers the run holds per frame size (pools, --check reference).
    buffers: usize,
    /// The frame size last checked against the memory budget.
    budgeted: Option<(PixelFormat, usize, usize)>,
}

impl HostSlots<'_> {
    /// Refuses a frame size whose buffers would not fit the memory budget, before the first
    /// one is allocated.
    fn check_budget(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<(), IoError> {
        if self.budgeted == Some((format, width, height)) {
            return Ok(());
        }
        let bad = |e: crate::frame::FrameError| IoError::Read {
            path: "<frame buffer>".into(),
            msg: e.to_string(),
        };
        let len = Frame::packed_len(format, width, height).map_err(bad)? as u64;
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

impl FrameSlots for HostSlots<'_> {
    fn take(&mut self, format: PixelFormat, width: usize, height: usize) -> Result<Frame, IoError> {
        let strides = Frame::packed_strides(format, width);
        let fits = |f: &Frame| {
            f.format() == format
                && f.width() == width
                && f.height() == height
                && f.planes().iter().zip(&strides).all(|(l, s)| l.stride == *s)
        };
        let bad = |e: String| IoError::Read {
            path: "<frame buffer>".into(),
            msg: e,
        };
        self.check_budget(format, width, height)?;
        let make = || match self.offload {
            Some(off) => off
                .host_frame(format, width, height, self.cpu_reads)
                .map_err(|e| bad(e.to_string())),
            None => Frame::new(format, width, height).map_err(|e| bad(e.to_string())),
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

/// A frame between stages: the payload, its metadata, when its read started, and (with
/// `--check` on a device backend) the host input kept for the comparison.
struct Job<T> {
    item: T,
    meta: FrameMeta,
    t0: Instant,
    input: Option<Frame>,
    /// The item came from the source, not from a pool: dropped (back to its owner) when done.
    foreign: bool,
}

/// The job for the next stage: a pool's `item` for the same frame.
fn next_job<U>(meta: FrameMeta, t0: Instant, item: U, input: Option<Frame>) -> Job<U> {
    Job {
        item,
        meta,
        t0,
        input,
        foreign: false,
    }
}

/// A payload the host path can take (a host frame), or the error for one in device memory.
fn host_only(job: Job<Payload>) -> Result<Job<Frame>, PipelineError> {
    match job.item {
        Payload::Host(item) => Ok(Job {
            item,
            meta: job.meta,
            t0: job.t0,
            input: job.input,
            foreign: job.foreign,
        }),
        Payload::Device(_) => Err(PipelineError::Io(IoError::Read {
            path: "<source>".into(),
            msg: format!(
                "frame {}: the source delivered device memory but this run filters in host memory",
                job.meta.index
            ),
        })),
    }
}

fn backend_err(index: usize) -> impl FnOnce(BackendError) -> PipelineError {
    move |source| PipelineError::Backend { index, source }
}

/// Filters every frame of `source` into `sink`. On any error the sink is aborted.
pub fn run(
    source: &mut dyn Source,
    sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    opts: Options<'_>,
) -> Result<RunStats, PipelineError> {
    let offload = match if opts.passthrough { Ok(None) } else { backend.offload() } {
        Ok(o) => o,
        Err(e) => {
            sink.abort();
            return Err(PipelineError::Setup(e));
        }
    };
    match offload {
        Some(off) => run_stages(source, sink, backend, plan, opts, Some(off)),
        None => run_stages(source, sink, backend, plan, opts, None),
    }
}

type StageResult = Result<StageStats, PipelineError>;

/// True when a stop was requested; with `wait`, also when one arrives within 100 ms. A signal
/// sent to a whole pipeline (Ctrl-C in a terminal) ends convflow's upstream at the same moment,
/// and the read can see the end of its input just before the stop request is raised.
fn stop_requested(stop: &AtomicBool, wait: bool) -> bool {
    let deadline = Instant::now() + Duration::from_millis(if wait { 100 } else { 0 });
    loop {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn run_stages(
    source: &mut dyn Source,
    sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    opts: Options<'_>,
    offload: Option<Arc<dyn Offload>>,
) -> Result<RunStats, PipelineError> {
    let n = opts.inflight.max(1);
    let start = Instant::now();
    let stop = opts.stop;
    let skip_bad = opts.skip_bad;
    let progress = opts.progress;
    let passthrough = opts.passthrough;
    let check = opts.check.filter(|_| !passthrough);
    let checked = check.is_some();
    let mut sink = sink;

    // Queues are made here so a failure to create one stops the run before any frame moves.
    let queues = match &offload {
        Some(off) => match (off.queue(), off.queue()) {
            (Ok(up), Ok(down)) => Some((up, down)),
            (Err(e), _) | (_, Err(e)) => {
                sink.abort();
                return Err(PipelineError::Setup(e));
            }
        },
        None => None,
    };

    // Pools: host input (read ← upload/filter, or ← download with --check on a device),
    // device input (upload ← filter), device output (filter ← download), host output
    // (filter/download ← write).
    let (in_pool, in_ret) = Pool::<Frame>::new(n);
    let (dev_in_pool, dev_in_ret) = Pool::<DeviceFrame>::new(n);
    let (dev_out_pool, dev_out_ret) = Pool::<DeviceFrame>::new(n);
    let (out_pool, out_ret) = Pool::<Frame>::new(n);

    let mut latency = histogram();
    let mut write = StageStats::new("write");
    let mut skipped = 0usize;
    let mut skip_messages = Vec::new();
    let mut interrupted = false;
    let mut megapixels = 0.0;

    let (results, written, steady) = std::thread::scope(|scope| {
        let (tx_read, rx_read) = bounded::<Job<Payload>>(n);
        let (tx_out, rx_out) = bounded::<Job<Frame>>(n);
        let off_ref = offload.as_deref();
        let skipped = &mut skipped;
        let skip_messages = &mut skip_messages;
        let interrupted = &mut interrupted;
        let megapixels = &mut megapixels;

        let reader = scope.spawn(move || -> StageResult {
            let mut st = StageStats::new("read");
            let mut slots = HostSlots {
                pool: in_pool,
                offload: off_ref,
                cpu_reads: checked,
                // Host input and output pools, plus --check's reference frame.
                buffers: 2 * n + usize::from(checked),
                budgeted: None,
            };
            loop {
                if stop.load(Ordering::Relaxed) {
                    *interrupted = true;
                    break; // Ctrl-C: read no more; frames in flight still drain to the sink
                }
                let t = Instant::now();
                let waited = slots.pool.waited;
                let (payload, meta) = match source.next_payload(&mut slots, off_ref) {
                    Ok(Some(x)) => x,
                    Ok(None) | Err(IoError::Stopped) => break,
                    // After a stop request a failed read — typically a short last frame, the
                    // upstream of a pipe having died of the same Ctrl-C — ends the stream: the
                    // frames read before it are kept.
                    Err(_) if stop_requested(stop, !skip_bad) => {
                        *interrupted = true;
                        break;
                    }
                    Err(e @ IoError::BadFrame { .. }) if skip_bad => {
                        *skipped += 1;
                        if skip_messages.len() < 10 {
                            skip_messages.push(e.to_string());
                        }
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                let (len, pixels) = match &payload {
                    Payload::Host(f) => (f.data().len(), f.width() * f.height()),
                    Payload::Device(d) => (d.shape.len, d.shape.width * d.shape.height),
                };
                st.add(t.elapsed().saturating_sub(slots.pool.waited - waited), len);
                *megapixels += pixels as f64 / 1e6;
                let job = Job {
                    item: payload,
                    meta,
                    t0: t,
                    input: None,
                    foreign: false,
                };
                if tx_read.send(job).is_err() {
                    break; // a later stage stopped; its error is reported
                }
            }
            Ok(st)
        });

        let mut handles = vec![reader];
        let mut write_ret = out_ret;
        match (off_ref, queues) {
            (Some(off), Some((mut up_q, mut down_q))) => {
                let (tx_dev, rx_dev) = bounded::<Job<DeviceFrame>>(n);
                let (tx_done, rx_done) = bounded::<Job<DeviceFrame>>(n);
                // The host input goes back to the read stage after its upload, or after the
                // comparison in the download stage with --check.
                let in_ret_down = checked.then(|| in_ret.clone());
                handles.push(scope.spawn(move || -> StageResult {
                    let mut st = StageStats::new("upload");
                    let mut pool = dev_in_pool;
                    for job in rx_read {
                        let t = Instant::now();
                        let index = job.meta.index;
                        let host = match job.item {
                            Payload::Host(f) => f,
                            Payload::Device(dev) => {
                                // Already on the device: nothing to copy.
                                if checked {
                                    return Err(PipelineError::Io(IoError::Read {
                                        path: "<source>".into(),
                                        msg: format!("frame {index}: --check needs frames in host memory"),
                                    }));
                                }
                                st.add(t.elapsed(), 0);
                                let next = Job {
                                    item: dev,
                                    meta: job.meta,
                                    t0: job.t0,
                                    input: None,
                                    foreign: true,
                                };
                                if tx_dev.send(next).is_err() {
                                    break;
                                }
                                continue;
                            }
                        };
                        let waited = pool.waited;
                        let Some(mut dev) = pool
                            .get(|d| host.has_shape(&d.shape), || off.device_frame(&host.shape()))
                            .map_err(backend_err(index))?
                        else {
                            break;
                        };
                        let dt = up_q.upload(&host, &mut dev).map_err(backend_err(index))?;
                        st.device += dt;
                        st.add(t.elapsed().saturating_sub(pool.waited - waited), dev.shape.len);
                        let input = if checked {
                            Some(host)
                        } else {
                            let _ = in_ret.send(host);
                            None
                        };
                        let next = next_job(job.meta, job.t0, dev, input);
                        if tx_dev.send(next).is_err() {
                            break;
                        }
                    }
                    Ok(st)
                }));
                let backend = &mut *backend;
                handles.push(scope.spawn(move || -> StageResult {
                    let mut st = StageStats::new("filter");
                    let mut pool = dev_out_pool;
                    for job in rx_dev {
                        let t = Instant::now();
                        let index = job.meta.index;
                        let waited = pool.waited;
                        let shape = &job.item.shape;
                        let Some(mut out) = pool
                            .get(|d| d.shape == *shape, || off.device_frame(shape))
                            .map_err(backend_err(index))?
                        else {
                            break;
                        };
                        let dt = backend
                            .filter_device(plan, &job.item, &mut out)
                            .map_err(backend_err(index))?;
                        st.device += dt;
                        st.add(t.elapsed().saturating_sub(pool.waited - waited), shape.len);
                        if !job.foreign {
                            let _ = dev_in_ret.send(job.item);
                        }
                        let next = next_job(job.meta, job.t0, out, job.input);
                        if tx_done.send(next).is_err() {
                            break;
                        }
                    }
                    Ok(st)
                }));
                handles.push(scope.spawn(move || -> StageResult {
                    let mut st = StageStats::new("download");
                    let mut pool = out_pool;
                    let mut check = check;
                    let mut reference: Option<Frame> = None;
                    for job in rx_done {
                        let t = Instant::now();
                        let index = job.meta.index;
                        let waited = pool.waited;
                        let s = &job.item.shape;
                        let Some(mut host) = pool
                            .get(
                                |f: &Frame| f.has_shape(s),
                                || off.host_frame(s.format, s.width, s.height, true),
                            )
                            .map_err(backend_err(index))?
                        else {
                            break;
                        };
                        let dt = down_q.download(&job.item, &mut host).map_err(backend_err(index))?;
                        st.device += dt;
                        st.add(t.elapsed().saturating_sub(pool.waited - waited), s.len);
                        let _ = dev_out_ret.send(job.item);
                        if let (Some(check), Some(input)) = (check.as_deref_mut(), job.input) {
                            verify(check, plan, index, &input, &host, &mut reference)?;
                            if let Some(ret) = &in_ret_down {
                                let _ = ret.send(input);
                            }
                        }
                        let next = next_job(job.meta, job.t0, host, None);
                        if tx_out.send(next).is_err() {
                            break;
                        }
                    }
                    Ok(st)
                }));
            }
            _ if passthrough => {
                // Input frames go straight to the write stage, which returns them to the read
                // stage's pool.
                write_ret = in_ret;
                handles.push(scope.spawn(move || -> StageResult {
                    let mut st = StageStats::new("filter");
                    for job in rx_read {
                        let job = host_only(job)?;
                        st.add(Duration::ZERO, job.item.data().len());
                        if tx_out.send(job).is_err() {
                            break;
                        }
                    }
                    Ok(st)
                }));
            }
            _ => {
                let backend = &mut *backend;
                handles.push(scope.spawn(move || -> StageResult {
                    let mut st = StageStats::new("filter");
                    let mut pool = out_pool;
                    let mut check = check;
                    let mut reference: Option<Frame> = None;
                    for job in rx_read {
                        let job = host_only(job)?;
                        let t = Instant::now();
                        let index = job.meta.index;
                        let waited = pool.waited;
                        let frame = &job.item;
                        let Some(mut dst) = pool.get(
                            |f: &Frame| f.same_shape(frame),
                            || Ok::<_, PipelineError>(Frame::like(frame)),
                        )?
                        else {
                            break;
                        };
                        backend
                            .filter_frame(plan, frame, &mut dst)
                            .map_err(backend_err(index))?;
                        if let Some(d) = backend.last_times() {
                            st.device += d.h2d + d.kernel + d.d2h;
                            st.split.h2d += d.h2d;
                            st.split.kernel += d.kernel;
                            st.split.d2h += d.d2h;
                            st.measured = true;
                        }
                        if let Some(check) = check.as_deref_mut() {
                            verify(check, plan, index, frame, &dst, &mut reference)?;
                        }
                        st.add(t.elapsed().saturating_sub(pool.waited - waited), frame.data().len());
                        let _ = in_ret.send(job.item);
                        let next = next_job(job.meta, job.t0, dst, None);
                        if tx_out.send(next).is_err() {
                            break;
                        }
                    }
                    Ok(st)
                }));
            }
        }

        // The write stage runs here, on the caller's thread, which owns the sink.
        let out_ret = write_ret;
        let warm = 4 * n + 4;
        let mut warm_at = None;
        let mut last_at = None;
        let written = (|| -> Result<usize, PipelineError> {
            let mut count = 0;
            for job in rx_out.iter() {
                let t = Instant::now();
                sink.write_frame(&job.item, &job.meta)?;
                write.add(t.elapsed(), job.item.data().len());
                let _ = latency.record(job.t0.elapsed().as_micros().max(1) as u64);
                let _ = out_ret.send(job.item);
                count += 1;
                let now = Instant::now();
                if count == warm {
                    warm_at = Some(now);
                }
                last_at = Some(now);
                if let Some(p) = progress {
                    p(count);
                }
            }
            Ok(count)
        })();
        drop(rx_out); // unblocks the stage before if the write stage stopped early
        drop(out_ret);
        let steady = match (warm_at, last_at, &written) {
            (Some(a), Some(b), Ok(count)) if *count > warm + 1 => Some((count - warm, b - a)),
            _ => None,
        };
        let results: Vec<StageResult> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(PipelineError::Panicked)))
            .collect();
        (results, written, steady)
    });

    let outcome = (|| {
        let mut stages = Vec::new();
        for r in results {
            stages.push(r?);
        }
        let written = written?;
        let read = stages[0].frames;
        if written != read {
            return Err(PipelineError::FrameCount { read, written });
        }
        Ok(stages)
    })();
    match outcome {
        Ok(mut stages) => {
            sink.finish()?;
            stages.push(write);
            let device = device_totals(&stages, offload.is_some());
            Ok(RunStats {
                frames: stages[0].frames,
                skipped,
                skip_messages,
                megapixels,
                wall: start.elapsed(),
                stages,
                latency,
                checked,
                interrupted,
                device,
                overlapped: offload.is_some(),
                steady,
            })
        }
        Err(e) => {
            sink.abort();
            Err(e)
        }
    }
}

/// The transfer-vs-kernel totals: from the transfer stages when they ran, else from the
/// filter stage's own measurements (None for CPU backends).
fn device_totals(stages: &[StageStats], overlapped: bool) -> Option<DeviceTimes> {
    let get = |name: &str| stages.iter().find(|s| s.name == name);
    if overlapped {
        return Some(DeviceTimes {
            h2d: get("upload")?.device,
            kernel: get("filter")?.device,
            d2h: get("download")?.device,
        });
    }
    get("filter").filter(|s| s.measured).map(|s| s.split)
}

/// Runs the check backend on `input` and compares with `got`.
fn verify(
    check: &mut dyn Backend,
    plan: &Plan,
    index: usize,
    input: &Frame,
    got: &Frame,
    reference: &mut Option<Frame>,
) -> Result<(), PipelineError> {
    let want = match reference.take() {
        Some(f) if f.same_shape(input) => reference.insert(f),
        _ => reference.insert(Frame::like(input)),
    };
    check.filter_frame(plan, input, want).map_err(backend_err(index))?;
    compare(index, got, want)
}

fn compare(index: usize, got: &Frame, want: &Frame) -> Result<(), PipelineError> {
    let mut first = None;
    let mut count = 0;
    for (p, l) in got.planes().iter().enumerate() {
        for row in 0..l.height {
            for (col, (&g, &w)) in got.row(p, row).iter().zip(want.row(p, row)).enumerate() {
                if g != w {
                    count += 1;
                    first.get_or_insert((p, row, col, g, w));
                }
            }
        }
    }
    match first {
        None => Ok(()),
        Some((plane, row, col, got, want)) => Err(PipelineError::CheckMismatch {
            index,
            count,
            plane,
            row,
            col,
            got,
            want,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CpuSeq;
    use crate::filter::{spec::parse_spec, Filter};
    use crate::io::synthetic::SyntheticSource;
    use std::sync::{Arc, Mutex};

    /// Records frame indices and the first byte of each frame; `fail_at` makes a write fail.
    struct Recorder {
        seen: Arc<Mutex<Vec<(usize, u8)>>>,
        fail_at: Option<usize>,
        finished: Arc<Mutex<Option<bool>>>,
    }

    impl Sink for Recorder {
        fn describe(&self) -> String {
            "recorder".into()
        }
        fn write_frame(&mut self, frame: &Frame, meta: &FrameMeta) -> Result<(), IoError> {
            if Some(meta.index) == self.fail_at {
                return Err(IoError::Write {
                    path: "recorder".into(),
                    msg: "planned failure".into(),
                });
            }
            self.seen.lock().unwrap().push((meta.index, frame.data()[0]));
            Ok(())
        }
        fn finish(self: Box<Self>) -> Result<(), IoError> {
            *self.finished.lock().unwrap() = Some(true);
            Ok(())
        }
        fn abort(self: Box<Self>) {
            *self.finished.lock().unwrap() = Some(false);
        }
    }

    fn plan() -> Plan {
        Filter::new(parse_spec("box:3").unwrap()).plan().unwrap()
    }

    #[test]
    fn keeps_order_and_counts_with_any_depth() {
        for inflight in [1, 2, 5] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let finished = Arc::new(Mutex::new(None));
            let sink = Recorder {
                seen: seen.clone(),
                fail_at: None,
                finished: finished.clone(),
            };
            let mut src = SyntheticSource::parse("synthetic:40x10:rgb:25").unwrap();
            let stop = AtomicBool::new(false);
            let stats = run(
                &mut src,
                Box::new(sink),
                &mut CpuSeq::new(),
                &plan(),
                Options::new(inflight, &stop),
            )
            .unwrap();
            let seen = seen.lock().unwrap();
            assert_eq!(
                seen.iter().map(|s| s.0).collect::<Vec<_>>(),
                (0..25).collect::<Vec<_>>()
            );
            let written = stats.stage("write").unwrap().frames;
            assert_eq!((stats.frames, written, stats.latency.len()), (25, 25, 25));
            assert_eq!(*finished.lock().unwrap(), Some(true));
        }
    }

    #[test]
    fn a_failing_stage_stops_the_run_and_aborts_the_sink() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let finished = Arc::new(Mutex::new(None));
        let sink = Recorder {
            seen: seen.clone(),
            fail_at: Some(7),
            finished: finished.clone(),
        };
        let mut src = SyntheticSource::parse("synthetic:40x10:gray:1000").unwrap();
        let stop = AtomicBool::new(false);
        let err = run(
            &mut src,
            Box::new(sink),
            &mut CpuSeq::new(),
            &plan(),
            Options::new(2, &stop),
        )
        .unwrap_err();
        assert!(err.to_string().contains("planned failure"), "{err}");
        assert_eq!(*finished.lock().unwrap(), Some(false), "sink aborted, not finished");
        assert_eq!(seen.lock().unwrap().len(), 7);
    }

    /// A device backend whose "device memory" is host vectors: drives the five-stage path
    /// (pools, queues, recycling) without a GPU.
    struct MockDevice(CpuSeq);
    struct MockOffload;
    struct MockQueue;

    fn host_view(shape: &crate::frame::Shape, bytes: &[u8]) -> Frame {
        let strides: Vec<usize> = shape.planes.iter().map(|l| l.stride).collect();
        Frame::from_parts(shape.format, shape.width, shape.height, &strides, bytes.to_vec()).unwrap()
    }

    impl Offload for MockOffload {
        fn host_frame(&self, f: PixelFormat, w: usize, h: usize, _: bool) -> Result<Frame, BackendError> {
            Ok(Frame::new(f, w, h).unwrap())
        }
        fn device_frame(&self, shape: &crate::frame::Shape) -> Result<DeviceFrame, BackendError> {
            Ok(DeviceFrame {
                shape: shape.clone(),
                mem: Box::new(vec![0u8; shape.len]),
            })
        }
        fn queue(&self) -> Result<Box<dyn crate::backend::CopyQueue>, BackendError> {
            Ok(Box::new(MockQueue))
        }
        fn bandwidth(&self, _: usize, _: usize) -> Result<crate::backend::LinkBandwidth, BackendError> {
            Ok(crate::backend::LinkBandwidth::default())
        }
    }

    impl crate::backend::CopyQueue for MockQueue {
        fn upload(&mut self, src: &Frame, dst: &mut DeviceFrame) -> Result<Duration, BackendError> {
            dst.mem.downcast_mut::<Vec<u8>>().unwrap().copy_from_slice(src.data());
            Ok(Duration::from_micros(3))
        }
        fn download(&mut self, src: &DeviceFrame, dst: &mut Frame) -> Result<Duration, BackendError> {
            dst.data_mut()
                .copy_from_slice(src.mem.downcast_ref::<Vec<u8>>().unwrap());
            Ok(Duration::from_micros(5))
        }
    }

    impl Backend for MockDevice {
        fn name(&self) -> String {
            "mock device".into()
        }
        fn filter_plane(
            &mut self,
            plan: &Plan,
            src: crate::frame::PlaneRef<'_>,
            dst: crate::frame::PlaneMut<'_>,
            mask: u8,
        ) -> Result<(), BackendError> {
            self.0.filter_plane(plan, src, dst, mask)
        }
        fn offload(&mut self) -> Result<Option<Arc<dyn Offload>>, BackendError> {
            Ok(Some(Arc::new(MockOffload)))
        }
        fn filter_device(
            &mut self,
            plan: &Plan,
            src: &DeviceFrame,
            dst: &mut DeviceFrame,
        ) -> Result<Duration, BackendError> {
            let input = host_view(&src.shape, src.mem.downcast_ref::<Vec<u8>>().unwrap());
            let mut out = Frame::like(&input);
            self.0.filter_frame(plan, &input, &mut out)?;
            dst.mem.downcast_mut::<Vec<u8>>().unwrap().copy_from_slice(out.data());
            Ok(Duration::from_micros(7))
        }
    }

    /// Collects whole frames.
    struct Collect(Arc<Mutex<Vec<Frame>>>);
    impl Sink for Collect {
        fn describe(&self) -> String {
            "collect".into()
        }
        fn write_frame(&mut self, frame: &Frame, _: &FrameMeta) -> Result<(), IoError> {
            self.0.lock().unwrap().push(frame.clone());
            Ok(())
        }
        fn finish(self: Box<Self>) -> Result<(), IoError> {
            Ok(())
        }
        fn abort(self: Box<Self>) {}
    }

    /// Frames 0..n with a distinct first byte, reporting the frames in `bad` as bad.
    struct Numbered {
        n: usize,
        next: usize,
        bad: Vec<usize>,
    }
    impl Numbered {
        fn new(n: usize, bad: Vec<usize>) -> Self {
            Numbered { n, next: 0, bad }
        }
    }

    impl Source for Numbered {
        fn describe(&self) -> String {
            "numbered".into()
        }
        fn len_hint(&self) -> Option<usize> {
            Some(self.n)
        }
        fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError> {
            if self.next == self.n {
                return Ok(None);
            }
            let i = self.next;
            self.next += 1;
            if self.bad.contains(&i) {
                return Err(IoError::BadFrame {
                    input: "numbered".into(),
                    index: i,
                    msg: "planned".into(),
                });
            }
            let mut f = slots.take(PixelFormat::Yuv420p, 21, 9)?;
            for (k, b) in f.data_mut().iter_mut().enumerate() {
                *b = (k * 7 + i * 31) as u8;
            }
            let meta = FrameMeta {
                index: i,
                ..FrameMeta::default()
            };
            Ok(Some((f, meta)))
        }
    }

    #[test]
    fn device_stages_keep_order_recycle_buffers_and_match_the_host_path() {
        for inflight in [1, 2, 4] {
            let got = Arc::new(Mutex::new(Vec::new()));
            let want = Arc::new(Mutex::new(Vec::new()));
            let stop = AtomicBool::new(false);
            let mut check = CpuSeq::new();
            let mut opts = Options::new(inflight, &stop);
            opts.check = Some(&mut check);
            let mut src = Numbered::new(30, vec![]);
            let stats = run(
                &mut src,
                Box::new(Collect(got.clone())),
                &mut MockDevice(CpuSeq::new()),
                &plan(),
                opts,
            )
            .unwrap();
            let names: Vec<_> = stats.stages.iter().map(|s| s.name).collect();
            assert_eq!(names, ["read", "upload", "filter", "download", "write"]);
            assert!(stats.overlapped && stats.checked);
            let d = stats.device.unwrap();
            assert_eq!(
                (d.h2d, d.kernel, d.d2h),
                (
                    Duration::from_micros(90),
                    Duration::from_micros(210),
                    Duration::from_micros(150)
                )
            );
            let mut src = Numbered::new(30, vec![]);
            run(
                &mut src,
                Box::new(Collect(want.clone())),
                &mut CpuSeq::new(),
                &plan(),
                Options::new(inflight, &stop),
            )
            .unwrap();
            assert_eq!(*got.lock().unwrap(), *want.lock().unwrap(), "inflight {inflight}");
            assert_eq!(got.lock().unwrap().len(), 30);
        }
    }

    #[test]
    fn bad_frames_fail_the_run_or_are_skipped_and_counted() {
        let stop = AtomicBool::new(false);
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut src = Numbered::new(10, vec![3, 7]);
        let err = run(
            &mut src,
            Box::new(Collect(got.clone())),
            &mut CpuSeq::new(),
            &plan(),
            Options::new(2, &stop),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "numbered: frame 3: planned");
        for backend in [&mut CpuSeq::new() as &mut dyn Backend, &mut MockDevice(CpuSeq::new())] {
            let got = Arc::new(Mutex::new(Vec::new()));
            let mut opts = Options::new(2, &stop);
            opts.skip_bad = true;
            let mut src = Numbered::new(10, vec![3, 7]);
            let stats = run(&mut src, Box::new(Collect(got.clone())), backend, &plan(), opts).unwrap();
            assert_eq!((stats.frames, stats.skipped, got.lock().unwrap().len()), (8, 2, 8));
            assert_eq!(
                stats.skip_messages,
                ["numbered: frame 3: planned", "numbered: frame 7: planned"]
            );
        }
    }

    /// Delivers `Numbered`'s frames already in device memory when the run has one.
    struct OnDevice(Numbered);
    impl Source for OnDevice {
        fn describe(&self) -> String {
            "on-device".into()
        }
        fn len_hint(&self) -> Option<usize> {
            Some(self.0.n)
        }
        fn next_frame(&mut self, slots: &mut dyn FrameSlots) -> Result<Option<(Frame, FrameMeta)>, IoError> {
            self.0.next_frame(slots)
        }
        fn next_payload(
            &mut self,
            slots: &mut dyn FrameSlots,
            device: Option<&dyn Offload>,
        ) -> Result<Option<(Payload, FrameMeta)>, IoError> {
            let Some((f, meta)) = self.0.next_frame(&mut crate::io::HeapSlots)? else {
                return Ok(None);
            };
            let Some(device) = device else {
                return Ok(Some((Payload::Host(slots.adopt(f)?), meta)));
            };
            let mut d = device.device_frame(&f.shape()).unwrap();
            d.mem.downcast_mut::<Vec<u8>>().unwrap().copy_from_slice(f.data());
            Ok(Some((Payload::Device(d), meta)))
        }
    }

    #[test]
    fn device_resident_source_frames_skip_the_upload() {
        let stop = AtomicBool::new(false);
        let got = Arc::new(Mutex::new(Vec::new()));
        let want = Arc::new(Mutex::new(Vec::new()));
        let mut src = OnDevice(Numbered::new(12, vec![]));
        let stats = run(
            &mut src,
            Box::new(Collect(got.clone())),
            &mut MockDevice(CpuSeq::new()),
            &plan(),
            Options::new(2, &stop),
        )
        .unwrap();
        assert_eq!(stats.stage("upload").unwrap().bytes, 0, "nothing uploaded");
        assert_eq!(stats.device.unwrap().h2d, Duration::ZERO);
        let mut src = Numbered::new(12, vec![]);
        run(
            &mut src,
            Box::new(Collect(want.clone())),
            &mut CpuSeq::new(),
            &plan(),
            Options::new(2, &stop),
        )
        .unwrap();
        assert_eq!(*got.lock().unwrap(), *want.lock().unwrap());
        // --check needs the host input, which a device-resident frame does not have.
        let mut check = CpuSeq::new();
        let mut opts = Options::new(2, &stop);
        opts.check = Some(&mut check);
        let mut src = OnDevice(Numbered::new(3, vec![]));
        let err = run(
            &mut src,
            Box::new(Collect(Default::default())),
            &mut MockDevice(CpuSeq::new()),
            &plan(),
            opts,
        )
        .unwrap_err();
        assert!(err.to_string().contains("--check needs frames in host memory"), "{err}");
    }
}
