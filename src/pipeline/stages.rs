//! The stages: what each thread of the pipeline does with one frame after another — read,
//! upload, filter (on the device or in host memory), download, write — and the bookkeeping
//! they share: the frame travelling between stages ([`Job`]) and [`Stage`], which takes an
//! output buffer from the stage's pool, times the work on it net of the wait for that buffer,
//! and records the stage's statistics, so each loop says only what its stage does. The device
//! stages share one loop ([`async_stage`]): their work (a copy, a frame's kernels) is started
//! and finished apart (`flight`), so a stage can start the next frame while the last one still
//! runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender};

use super::check::Checker;
use super::flight::{async_stage, Begun, Flight, Queue};
use super::pool::{HostSlots, Pool};
use super::stats::{self, StageStats};
use super::PipelineError;
use crate::backend::{Backend, BackendError};
use crate::device::{device_shape, CopyQueue, DeviceError, DeviceFrame, Offload};
use crate::filter::Plan;
use crate::frame::Frame;
use crate::io::{FrameMeta, IoError, Payload, Sink, Source};

/// A frame between stages: the payload, its metadata, when its read started, its place in the
/// stream and the lane (device) it went to, and (with `--check` on a device backend) the host
/// input kept for the comparison.
pub(super) struct Job<T> {
    pub item: T,
    pub meta: FrameMeta,
    pub t0: Instant,
    /// 0, 1, 2, … in the order the read stage sent the frames: the write stage's order.
    pub seq: usize,
    /// The lane that filters it, whose pools its buffers return to.
    pub lane: usize,
    pub input: Option<Frame>,
    /// The item came from the source, not from a pool: dropped (back to its owner) when done.
    pub foreign: bool,
}

impl<T> Job<T> {
    /// The same frame, now held in `item` (pool-owned, the `--check` input kept): the old
    /// item comes back to be returned to its pool.
    fn swap<U>(self, item: U) -> (T, Job<U>) {
        let Job {
            item: old,
            meta,
            t0,
            seq,
            lane,
            input,
            ..
        } = self;
        let job = Job {
            item,
            meta,
            t0,
            seq,
            lane,
            input,
            foreign: false,
        };
        (old, job)
    }
}

/// A stage's statistics and the pool its output buffers come from.
pub(super) struct Stage<T> {
    pub stats: StageStats,
    pool: Pool<T>,
}

impl<T> Stage<T> {
    pub fn new(name: &'static str, pool: Pool<T>) -> Self {
        Stage {
            stats: StageStats::new(name),
            pool,
        }
    }

    /// Runs one frame's work: takes an output buffer (made by `make` while the pool has room,
    /// else waiting for one to come back), runs `work` on it, and records the time the work
    /// took net of that wait, with `bytes` and the device time `work` returns. None when the
    /// run is stopping (the stage that returns buffers has gone).
    pub fn run<E>(
        &mut self,
        bytes: usize,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
        work: impl FnOnce(&mut T) -> Result<Duration, E>,
    ) -> Result<Option<T>, E> {
        let t = Instant::now();
        let Some((mut out, waited)) = self.buffer(fits, make)? else {
            return Ok(None);
        };
        let device = work(&mut out)?;
        self.stats.timed(Some(device));
        self.stats.add(t.elapsed().saturating_sub(waited), bytes);
        Ok(Some(out))
    }

    /// True when taking an output buffer would not wait ([`Pool::has_free`]).
    pub fn has_free(&mut self) -> bool {
        self.pool.has_free()
    }

    /// An output buffer, as for [`Stage::run`], with the time spent waiting for it.
    fn buffer<E>(
        &mut self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Option<(T, Duration)>, E> {
        let before = self.pool.waited;
        let out = self.pool.get(fits, make)?;
        Ok(out.map(|o| (o, self.pool.waited - before)))
    }
}

pub(super) type StageResult = Result<StageStats, PipelineError>;

pub(super) fn backend_err(index: usize) -> impl FnOnce(BackendError) -> PipelineError {
    move |source| PipelineError::Backend { index, source }
}

pub(super) fn device_err(index: usize) -> impl FnOnce(DeviceError) -> PipelineError {
    move |e| PipelineError::Backend {
        index,
        source: e.into(),
    }
}

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

/// What the read stage reports besides its statistics.
#[derive(Default)]
pub(super) struct ReadTotals {
    pub skipped: usize,
    pub skip_messages: Vec<String>,
    pub interrupted: bool,
    pub megapixels: f64,
    /// The source said it has no more frames.
    pub ended: bool,
}

/// Where the read stage sends frames for one lane: the lane's host buffers (page-locked for
/// its device) and the channel to its first stage.
pub(super) struct Feed<'a> {
    pub slots: HostSlots<'a>,
    pub tx: Sender<Job<Payload>>,
}

/// The lane the next frame goes to: the first from `from` on (round-robin) with a free host
/// buffer, waiting for one when none has. One lane's read waits in the source's `take` instead,
/// unless `wait` (an opening lane, which asks whether to stop only once it has a buffer).
fn pick_lane(feeds: &mut [Feed<'_>], from: usize, wait: bool) -> usize {
    let n = feeds.len();
    if n == 1 && !wait {
        return 0;
    }
    loop {
        if let Some(i) = (0..n)
            .map(|k| (from + k) % n)
            .find(|&i| feeds[i].slots.pool.has_free())
        {
            return i;
        }
        let t = Instant::now();
        let mut sel = Select::new();
        for f in feeds.iter() {
            sel.recv(f.slots.pool.returns());
        }
        let i = sel.ready();
        feeds[i].slots.pool.waited += t.elapsed();
    }
}

/// The read stage: pulls frames from the source into the host buffers of the lane whose turn
/// it is (or the next with a free buffer), numbers them and sends them to that lane. It ends
/// with the source, on `stop`, or once `ready` (an opening lane's run: the rest of the source
/// is left for the run's own lanes).
pub(super) fn read_stage(
    source: &mut dyn Source,
    mut feeds: Vec<Feed<'_>>,
    ends: (&AtomicBool, Option<&(dyn Fn() -> bool + Sync)>, bool),
    totals: &mut ReadTotals,
) -> StageResult {
    let (stop, ready, skip_bad) = ends;
    let mut st = StageStats::new("read");
    let waited = |feeds: &[Feed<'_>]| feeds.iter().map(|f| f.slots.pool.waited).sum::<Duration>();
    let (mut seq, mut next_lane) = (0, 0);
    loop {
        if stop.load(Ordering::Relaxed) {
            totals.interrupted = true;
            break; // stop requested: read no more; frames in flight still drain to the sink
        }
        let t = Instant::now();
        let waited_before = waited(&feeds);
        let lane = pick_lane(&mut feeds, next_lane, ready.is_some());
        // Asked with a buffer in hand: once the other lanes are made, only the frame the
        // opening lane is filtering is left to it.
        if ready.is_some_and(|ready| ready()) {
            break;
        }
        let feed = &mut feeds[lane];
        let device = feed.slots.offload;
        let (payload, meta) = match source.next_payload(&mut feed.slots, device) {
            Ok(Some(x)) => x,
            Ok(None) => {
                totals.ended = true;
                break;
            }
            Err(IoError::Stopped) => break,
            // After a stop request a failed read — typically a short last frame, the upstream
            // of a pipe having died of the same Ctrl-C — ends the stream: the frames read
            // before it are kept.
            Err(_) if stop_requested(stop, !skip_bad) => {
                totals.interrupted = true;
                break;
            }
            Err(e @ IoError::BadFrame { .. }) if skip_bad => {
                totals.skipped += 1;
                if totals.skip_messages.len() < 10 {
                    totals.skip_messages.push(e.to_string());
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let (len, pixels) = match &payload {
            Payload::Host(f) => (f.data().len(), f.width() * f.height()),
            Payload::Device(d) => (d.shape.image_bytes(), d.shape.width * d.shape.height),
        };
        st.add(
            t.elapsed().saturating_sub(waited(&feeds) - waited_before),
            len,
        );
        totals.megapixels += pixels as f64 / 1e6;
        let job = Job {
            item: payload,
            meta,
            t0: t,
            seq,
            lane,
            input: None,
            foreign: false,
        };
        if feeds[lane].tx.send(job).is_err() {
            break; // a later stage stopped; its error is reported
        }
        seq += 1;
        next_lane = (lane + 1) % feeds.len();
    }
    Ok(st)
}

/// A payload the host path can take (a host frame), or the error for one in device memory.
fn host_only(job: Job<Payload>) -> Result<Job<Frame>, PipelineError> {
    let index = job.meta.index;
    match job.swap(()) {
        (Payload::Host(item), job) => Ok(job.swap(item).1),
        (Payload::Device(_), _) => Err(PipelineError::Io(IoError::Read {
            path: "<source>".into(),
            msg: format!(
                "frame {index}: the source delivered device memory but this run filters in host \
                memory"
            ),
        })),
    }
}

/// Upload: host frame → device buffer on the upload queue. The host frame goes back to the
/// read stage's pool through `in_ret`, or, without it (`--check`), travels on to the download
/// stage, which alone returns it: should that stage fail, the read stage then sees its pool's
/// returns end instead of waiting for frames this one would never send back. Frames already on
/// the device pass through.
pub(super) fn upload_stage(
    rx: Receiver<Job<Payload>>,
    tx: Sender<Job<DeviceFrame>>,
    mut stage: Stage<DeviceFrame>,
    off: &dyn Offload,
    queue: Box<dyn CopyQueue>,
    in_ret: Option<Sender<Frame>>,
) -> StageResult {
    let checked = in_ret.is_none();
    let begin = |stage: &mut Stage<DeviceFrame>, flight: &mut Flight<_, _>, job: Job<Payload>| {
        let t = Instant::now();
        let index = job.meta.index;
        let (payload, job) = job.swap(());
        let host = match payload {
            Payload::Host(f) => f,
            Payload::Device(dev) => {
                if checked {
                    return Err(PipelineError::Io(IoError::Read {
                        path: "<source>".into(),
                        msg: format!("frame {index}: --check needs frames in host memory"),
                    }));
                }
                // Already on the device: nothing to copy; it goes back to its owner when done.
                let mut next = job.swap(dev).1;
                next.foreign = true;
                return Ok(Begun::Ready((next, None)));
            }
        };
        let shape = host.shape();
        let want = device_shape(&shape);
        let dev = stage.buffer(|d| d.shape == want, || off.device_frame(&shape));
        let Some((dev, waited)) = dev.map_err(device_err(index))? else {
            return Ok(Begun::Stop);
        };
        let work = (index, host.data().len(), t.elapsed().saturating_sub(waited));
        flight.start(
            (job.swap(dev).1, Some(host)),
            work,
            |q: &mut Queue, (next, host)| match host {
                // SAFETY: the flight keeps the job (its device buffer) and the host frame until
                // the copy has finished.
                Some(host) => Ok(unsafe { q.start_upload(host, &mut next.item) }?),
                None => Ok(()),
            },
        )?;
        Ok(Begun::Started)
    };
    let hand_on = |(mut next, host): (Job<DeviceFrame>, Option<Frame>)| {
        match (host, &in_ret) {
            (Some(host), Some(ret)) => drop(ret.send(host)),
            (Some(host), None) => next.input = Some(host),
            (None, _) => {}
        }
        Ok(tx.send(next).is_ok())
    };
    async_stage(rx, &mut stage, queue, begin, hand_on)?;
    Ok(stage.stats)
}

/// Filter on the device: device input → device output; the input buffer goes back to the
/// upload stage's pool (unless the source owns it).
pub(super) fn filter_device_stage(
    rx: Receiver<Job<DeviceFrame>>,
    tx: Sender<Job<DeviceFrame>>,
    mut stage: Stage<DeviceFrame>,
    off: &dyn Offload,
    backend: &mut dyn Backend,
    plan: &Plan,
    dev_in_ret: Sender<DeviceFrame>,
) -> StageResult {
    let begin =
        |stage: &mut Stage<DeviceFrame>, flight: &mut Flight<_, _>, job: Job<DeviceFrame>| {
            let t = Instant::now();
            let index = job.meta.index;
            let shape = &job.item.shape;
            let want = device_shape(shape);
            let out = stage.buffer(|d| d.shape == want, || off.device_frame(shape));
            let Some((out, waited)) = out.map_err(device_err(index))? else {
                return Ok(Begun::Stop);
            };
            let work = (
                index,
                shape.image_bytes(),
                t.elapsed().saturating_sub(waited),
            );
            let (input, next) = job.swap(out);
            let foreign = next.foreign;
            flight.start(
                (next, input, foreign),
                work,
                |b: &mut &mut dyn Backend, (next, input, _)| {
                    // SAFETY: the flight keeps the input and the job (its output buffer) until the
                    // kernels have finished.
                    unsafe { b.start_device(plan, input, &mut next.item) }
                },
            )?;
            Ok(Begun::Started)
        };
    let hand_on = |(next, input, foreign): (Job<DeviceFrame>, DeviceFrame, bool)| {
        if !foreign {
            let _ = dev_in_ret.send(input);
        }
        Ok(tx.send(next).is_ok())
    };
    async_stage(rx, &mut stage, backend, begin, hand_on)?;
    Ok(stage.stats)
}

/// Download: device output → host frame on the download queue, then `--check` against the
/// host input it carried.
#[allow(clippy::too_many_arguments)] // the stage's channels, pools and queue, each one thing
pub(super) fn download_stage(
    rx: Receiver<Job<DeviceFrame>>,
    tx: Sender<Job<Frame>>,
    mut stage: Stage<Frame>,
    off: &dyn Offload,
    queue: Box<dyn CopyQueue>,
    dev_out_ret: Sender<DeviceFrame>,
    mut check: Option<(Checker<'_, '_>, Sender<Frame>)>,
    plan: &Plan,
) -> StageResult {
    let begin = |stage: &mut Stage<Frame>, flight: &mut Flight<_, _>, job: Job<DeviceFrame>| {
        let t = Instant::now();
        let index = job.meta.index;
        let s = &job.item.shape;
        // Any host frame of the same image: the copy plan maps one layout onto the other.
        let host = stage.buffer(
            |f: &Frame| (f.format(), f.width(), f.height()) == (s.format, s.width, s.height),
            || off.host_frame(s.format, s.width, s.height, true),
        );
        let Some((host, waited)) = host.map_err(device_err(index))? else {
            return Ok(Begun::Stop);
        };
        let work = (index, host.data().len(), t.elapsed().saturating_sub(waited));
        let (dev, next) = job.swap(host);
        flight.start((next, dev), work, |q: &mut Queue, (next, dev)| {
            // SAFETY: the flight keeps the device frame and the job (its host buffer) until the
            // copy has finished.
            Ok(unsafe { q.start_download(dev, &mut next.item) }?)
        })?;
        Ok(Begun::Started)
    };
    let hand_on = |(mut next, dev): (Job<Frame>, DeviceFrame)| {
        let _ = dev_out_ret.send(dev);
        if let (Some((checker, in_ret)), Some(input)) = (check.as_mut(), next.input.take()) {
            checker.verify(plan, next.meta.index, &input, &next.item)?;
            let _ = in_ret.send(input);
        }
        Ok(tx.send(next).is_ok())
    };
    async_stage(rx, &mut stage, queue, begin, hand_on)?;
    Ok(stage.stats)
}

/// Filter in host memory (CPU backends, CUDA `--sync`): input frame → output frame, `--check`,
/// the input back to the read stage's pool.
pub(super) fn filter_host_stage(
    rx: Receiver<Job<Payload>>,
    tx: Sender<Job<Frame>>,
    mut stage: Stage<Frame>,
    backend: &mut dyn Backend,
    plan: &Plan,
    mut checker: Option<Checker<'_, '_>>,
    in_ret: Sender<Frame>,
) -> StageResult {
    for job in rx {
        let job = host_only(job)?;
        let index = job.meta.index;
        let frame = &job.item;
        let out = stage.run(
            frame.data().len(),
            |f: &Frame| f.same_shape(frame),
            || Frame::try_like(frame).map_err(|e| PipelineError::Io(e.into())),
            |dst| {
                backend
                    .filter_frame(plan, frame, dst)
                    .map_err(backend_err(index))?;
                if let Some(checker) = checker.as_mut() {
                    checker.verify(plan, index, frame, dst)?;
                }
                Ok(Duration::ZERO)
            },
        )?;
        let Some(out) = out else { break };
        if let Some(d) = backend.last_times() {
            stage.stats.device += d.h2d + d.kernel + d.d2h;
            stage.stats.split.h2d += d.h2d;
            stage.stats.split.kernel += d.kernel;
            stage.stats.split.d2h += d.d2h;
            stage.stats.measured = true;
        }
        let (item, next) = job.swap(out);
        let _ = in_ret.send(item);
        if tx.send(next).is_err() {
            break;
        }
    }
    Ok(stage.stats)
}

/// `--passthrough`: input frames go straight to the write stage, which returns them to the
/// read stage's pool.
pub(super) fn passthrough_stage(rx: Receiver<Job<Payload>>, tx: Sender<Job<Frame>>) -> StageResult {
    let mut st = StageStats::new("filter");
    for job in rx {
        let job = host_only(job)?;
        st.add(Duration::ZERO, job.item.data().len());
        if tx.send(job).is_err() {
            break;
        }
    }
    Ok(st)
}

/// What the write stage measured.
pub(super) struct Written {
    pub count: Result<usize, PipelineError>,
    pub stats: StageStats,
    pub latency: hdrhistogram::Histogram<u64>,
    pub steady: Option<(usize, Duration)>,
    /// When the first frame was written.
    pub first_at: Option<Instant>,
    /// The most frames held at once waiting for an earlier one from another lane.
    pub held_max: usize,
}

impl Written {
    /// Nothing written, because of `e`.
    pub fn failed(e: PipelineError) -> Self {
        Written {
            count: Err(e),
            stats: StageStats::new("write"),
            latency: stats::histogram(),
            steady: None,
            first_at: None,
            held_max: 0,
        }
    }
}

/// The write stage, on the caller's thread (which owns the sink): frames to the sink in the
/// order they were read — those that arrive early from a faster lane wait in a reorder buffer
/// (at most the lanes' output buffers) — and their buffers back to their lane's pool (`ret`).
/// It ends when the stages feeding it have, or at once when one of them reports a failure on
/// `failed`.
pub(super) fn write_stage(
    sink: &mut dyn Sink,
    (rx, failed, ret): (Receiver<Job<Frame>>, &Receiver<()>, &[Sender<Frame>]),
    progress: Option<&dyn Fn(usize)>,
    warm: usize,
) -> Written {
    let mut stats = StageStats::new("write");
    let mut latency = stats::histogram();
    let (mut warm_at, mut last_at, mut first_at) = (None, None, None);
    let mut count = 0;
    let mut held = std::collections::BTreeMap::new();
    let mut held_max = 0;
    let result = (|| -> Result<(), PipelineError> {
        loop {
            let job = crossbeam_channel::select! {
                recv(rx) -> job => match job {
                    Ok(job) => job,
                    Err(_) => break,
                },
                recv(failed) -> _ => break,
            };
            held.insert(job.seq, job);
            held_max = held_max.max(held.len());
            while let Some(job) = held.remove(&count) {
                let t = Instant::now();
                let written = sink.write_frame(&job.item, &job.meta);
                stats.add(t.elapsed(), job.item.data().len());
                let _ = latency.record(job.t0.elapsed().as_micros().max(1) as u64);
                let _ = ret[job.lane].send(job.item);
                written?;
                count += 1;
                let now = Instant::now();
                first_at.get_or_insert(now);
                if count == warm {
                    warm_at = Some(now);
                }
                last_at = Some(now);
                if let Some(p) = progress {
                    p(count);
                }
            }
        }
        Ok(())
    })();
    // Frames still held (a lane failed before an earlier frame) go back unwritten.
    for job in std::mem::take(&mut held).into_values() {
        let _ = ret[job.lane].send(job.item);
    }
    let steady = match (warm_at, last_at) {
        (Some(a), Some(b)) if count > warm + 1 => Some((count - warm, b - a)),
        _ => None,
    };
    Written {
        count: result.map(|()| count),
        stats,
        latency,
        steady,
        first_at,
        held_max,
    }
}
