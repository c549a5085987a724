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
//! With several backends ([`run_on`], one per GPU) each gets its own stages, pools and copy
//! queues — a lane; the read stage numbers the frames and hands each to the next lane in turn
//! that has a free host buffer, and the write stage puts them back in that order, holding the
//! few that arrive early from a faster lane (never more than the lanes' output buffers).
//!
//! A run can also begin on an *opening* lane ([`open`]: the CLI's cpu-par while a CUDA context
//! comes up) that stops reading once the run's own lanes are made; [`run_after`] then goes on
//! from the next frame into the same output, and its statistics cover both parts.
//!
//! The topology is here; `stages` holds what each stage does and their shared bookkeeping
//! (timing net of buffer waits), `pool` the recycled buffers, `check` the `--check`
//! comparison, `stats` what a run did and its JSON report ([`RunStats`], [`Report`]).
//!
//! Any error stops every stage (channels disconnect), the sink is aborted so nothing that looks
//! finished remains, and a successful run has written exactly as many frames as it read. A frame
//! the source reports as bad ([`IoError::BadFrame`]) fails the run, or with `skip_bad` is counted
//! and skipped. Raising `stop` (the CLI does on Ctrl-C) ends reading; the frames already read
//! drain through and the output is finalized.

mod check;
mod flight;
mod pool;
mod stages;
mod stats;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::ScopedJoinHandle;
use std::time::Instant;

use crossbeam_channel::{bounded, unbounded, Sender};

use crate::backend::{Backend, BackendError};
use crate::device::{CopyQueue, DeviceFrame, DeviceTimes, Offload};
use crate::filter::Plan;
use crate::frame::Frame;
use crate::io::{IoError, Payload, Sink, Source};
use check::Checker;
pub use pool::{auto_inflight, AUTO_POOL_BYTES, AUTO_POOL_MOST};
use pool::{HostSlots, Pool};
use stages::{
    download_stage, filter_device_stage, filter_host_stage, passthrough_stage, read_stage,
    upload_stage, write_stage, Feed, Job, ReadTotals, Stage, StageResult, Written,
};
pub use stats::{LaneReport, LaneStats, Percentiles, Report, RunStats, StageReport, StageStats};

/// Why a pipeline run failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Reading, writing or allocating a frame failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The backend (or a device copy) failed on a frame.
    #[error("frame {index}: {source}")]
    Backend {
        /// 0-based index of the frame in the stream.
        index: usize,
        /// What the backend reported.
        source: BackendError,
    },
    /// Before any frame: the backend refused the plan, or its transfer side or copy queues
    /// could not be set up.
    #[error("{0}")]
    Setup(BackendError),
    /// `--check`: the backend's output differs from cpu-seq's.
    #[error(
        "frame {index}: --check found {count} samples that differ from cpu-seq (first at \
        plane {plane}, row {row}, sample {col}: {got} vs {want})"
    )]
    CheckMismatch {
        /// 0-based index of the frame.
        index: usize,
        /// Samples that differ in the whole frame.
        count: usize,
        /// Plane of the first difference.
        plane: usize,
        /// Row of the first difference.
        row: usize,
        /// Sample (pixel × channels + channel) of the first difference within its row.
        col: usize,
        /// The backend's value there.
        got: u16,
        /// cpu-seq's value there.
        want: u16,
    },
    /// The write stage wrote fewer or more frames than were read.
    #[error("{read} frames read but {written} written")]
    FrameCount {
        /// Frames read.
        read: usize,
        /// Frames written.
        written: usize,
    },
    #[error(
        "{}; nothing was written",
        if *interrupted {
            "interrupted before the first frame was read".to_string()
        } else if *skipped > 0 {
            format!("every frame of the input was bad ({skipped} skipped)")
        } else {
            "the input holds no frames".to_string()
        }
    )]
    /// No frame was read, so no output is left (an empty video cannot even be read back).
    NoFrames {
        /// A stop request came before the first frame.
        interrupted: bool,
        /// Bad frames skipped (all of the input, when nonzero).
        skipped: usize,
    },
    /// A stage thread panicked.
    #[error("a pipeline stage panicked")]
    Panicked,
    /// A stage thread could not be started (names the stage and the system's error).
    #[error("could not start a thread for {0}")]
    Spawn(String),
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
    /// Called once every frame is written and before the sink is finished (its output made
    /// visible): where a caller prepares what it writes about the run (a report), so that a
    /// failure there still aborts the sink and leaves nothing.
    pub on_complete: Option<&'a mut OnComplete<'a>>,
}

/// The hook of [`Options::on_complete`].
pub type OnComplete<'a> = dyn FnMut(&RunStats) -> Result<(), PipelineError> + 'a;

impl<'a> Options<'a> {
    /// `inflight` frames per pool, stopped by `stop`; no check, no progress, no hook, no
    /// skipping, filtering on.
    pub fn new(inflight: usize, stop: &'a AtomicBool) -> Self {
        Options {
            inflight,
            check: None,
            stop,
            skip_bad: false,
            progress: None,
            passthrough: false,
            on_complete: None,
        }
    }
}

/// Filters every frame of `source` into `sink`. The plan is checked against the backend
/// before anything runs; on any error the sink is aborted.
pub fn run(
    source: &mut dyn Source,
    sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    opts: Options<'_>,
) -> Result<RunStats, PipelineError> {
    run_on(source, sink, &mut [backend], plan, opts)
}

/// [`run`] over several backends at once (one per GPU: `--devices`), each with its own stages
/// and buffers — a *lane*. The read stage hands each frame to the next lane in turn that has a
/// free buffer, so a faster device takes more frames; the write stage puts them back in read
/// order, holding at most the lanes' output buffers. With `passthrough` only the first lane
/// runs (nothing is filtered).
pub fn run_on(
    source: &mut dyn Source,
    mut sink: Box<dyn Sink>,
    backends: &mut [&mut dyn Backend],
    plan: &Plan,
    mut opts: Options<'_>,
) -> Result<RunStats, PipelineError> {
    let on_complete = opts.on_complete.take();
    let stats = leg(source, sink.as_mut(), backends, plan, opts, Leg::default());
    complete(sink, stats.map(|(stats, _)| stats), on_complete)
}

/// The first frames of a run, filtered by an opening lane while the run's own lanes were
/// still being made ([`open`]), its output still open: [`run_after`] goes on from them.
pub struct Opened {
    sink: Box<dyn Sink>,
    stats: RunStats,
    /// The source ended during the opening: nothing is left to read.
    ended: bool,
    /// When the opening lane's run ended.
    at: Instant,
}

impl Opened {
    /// Frames the opening lane filtered (and wrote).
    pub fn frames(&self) -> usize {
        self.stats.frames
    }

    /// Gives up the run: removes what the opening lane wrote.
    pub fn abort(self) {
        self.sink.abort();
    }
}

/// Starts a run on `backend` alone — an *opening* lane, typically the CPU's while a GPU's
/// context comes up — and stops reading once `ready` says the run's own lanes are made (it is
/// asked before each frame is read, with a buffer for it in hand) or the source ends; the frames
/// read drain through. The output stays open for [`run_after`]; on an error it is aborted.
/// `opts.on_complete` is not called here: give it to [`run_after`].
pub fn open(
    source: &mut dyn Source,
    mut sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    ready: &(dyn Fn() -> bool + Sync),
    plan: &Plan,
    opts: Options<'_>,
) -> Result<Opened, PipelineError> {
    let at = Leg {
        ready: Some(ready),
        ..Leg::default()
    };
    match leg(source, sink.as_mut(), &mut [backend], plan, opts, at) {
        Ok((mut stats, ended)) => {
            for l in &mut stats.lanes {
                l.opening = true;
            }
            Ok(Opened {
                sink,
                stats,
                ended,
                at: Instant::now(),
            })
        }
        Err(e) => {
            sink.abort();
            Err(e)
        }
    }
}

/// [`run_on`] going on from an [`open`]ed run: the rest of `source` on `backends`, into the
/// same output. The statistics cover both parts, the opening lane first among the lanes; the
/// sustained rate and the device times are those of `backends`.
pub fn run_after(
    opened: Opened,
    source: &mut dyn Source,
    backends: &mut [&mut dyn Backend],
    plan: &Plan,
    mut opts: Options<'_>,
) -> Result<RunStats, PipelineError> {
    let Opened {
        mut sink,
        stats: first,
        ended,
        at,
    } = opened;
    let on_complete = opts.on_complete.take();
    if first.interrupted || ended {
        // A stop request or the source's end ended the opening: nothing more is read (a
        // source is not asked again after its end).
        return complete(sink, Ok(first), on_complete);
    }
    let part = Leg {
        written_before: first.frames,
        ..Leg::default()
    };
    let between = at.elapsed();
    let stats = leg(source, sink.as_mut(), backends, plan, opts, part)
        .map(|(s, _)| s.after(first, between));
    complete(sink, stats, on_complete)
}

/// Where a part of a run starts and when it ends.
#[derive(Default)]
struct Leg<'a> {
    /// Frames an opening lane wrote to the same output before (progress counts on).
    written_before: usize,
    /// Ends reading once true (an opening lane's run).
    ready: Option<&'a (dyn Fn() -> bool + Sync)>,
}

/// Ends a run: a run without a frame fails; `on_complete` runs, then the output is finished,
/// or on any error aborted.
fn complete(
    sink: Box<dyn Sink>,
    stats: Result<RunStats, PipelineError>,
    on_complete: Option<&mut OnComplete<'_>>,
) -> Result<RunStats, PipelineError> {
    let prepared = stats
        .and_then(|stats| match stats.frames {
            // An output without a frame is no output (a video container with no frame cannot
            // even be read back).
            0 => Err(PipelineError::NoFrames {
                interrupted: stats.interrupted,
                skipped: stats.skipped,
            }),
            _ => Ok(stats),
        })
        .and_then(|stats| match on_complete {
            Some(f) => f(&stats).map(|()| stats),
            None => Ok(stats),
        });
    match prepared {
        Ok(stats) => {
            sink.finish()?;
            Ok(stats)
        }
        Err(e) => {
            sink.abort();
            Err(e)
        }
    }
}

/// One part of a run (all of it but after an opening lane): the output neither finished nor
/// aborted, and a part without a frame is no error here. With whether the source ended.
fn leg(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    backends: &mut [&mut dyn Backend],
    plan: &Plan,
    opts: Options<'_>,
    at: Leg<'_>,
) -> Result<(RunStats, bool), PipelineError> {
    let lanes = if opts.passthrough {
        backends.len().min(1)
    } else {
        backends.len()
    };
    let setup = (|| {
        let mut offloads = Vec::new();
        for b in backends.iter_mut().take(lanes) {
            if opts.passthrough {
                offloads.push(None);
                continue;
            }
            b.check_plan(plan)?;
            offloads.push(b.offload()?);
        }
        if offloads.is_empty() {
            return Err(BackendError::Unsupported("no backend to run".into()));
        }
        Ok(offloads)
    })();
    let offloads = setup.map_err(PipelineError::Setup)?;
    run_stages(
        source,
        sink,
        &mut backends[..lanes],
        plan,
        opts,
        (offloads, at),
    )
}

/// Starts stage threads in a scope and keeps their handles, with the lane each belongs to
/// (None: read). A stage that fails or panics says so on `failing`, which ends the write stage
/// at once
/// (frames it holds for a lane that will never deliver the next one would otherwise keep the
/// other lanes waiting for buffers). A thread the system cannot start is an error of the run,
/// not a panic.
struct Spawner<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    handles: Vec<(Option<usize>, ScopedJoinHandle<'scope, StageResult>)>,
    failed: Option<PipelineError>,
    failing: Sender<()>,
}

impl<'scope> Spawner<'scope, '_> {
    fn push(
        &mut self,
        name: &str,
        lane: Option<usize>,
        f: impl FnOnce() -> StageResult + Send + 'scope,
    ) {
        let thread = match lane {
            Some(l) if l > 0 => format!("convflow-{name}{l}"),
            _ => format!("convflow-{name}"),
        };
        let mut failing = Failing(Some(self.failing.clone()));
        let started =
            std::thread::Builder::new()
                .name(thread)
                .spawn_scoped(self.scope, move || {
                    let r = f();
                    if r.is_ok() {
                        failing.disarm();
                    }
                    r
                });
        match started {
            Ok(h) => self.handles.push((lane, h)),
            Err(e) => {
                self.failed
                    .get_or_insert(PipelineError::Spawn(format!("the {name} stage: {e}")));
            }
        }
    }
}

/// Says a stage failed when dropped armed: on an error, and on a panic unwinding the stage.
struct Failing(Option<Sender<()>>);

impl Failing {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for Failing {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Joins a stage thread; a panic is an error of the run.
fn join(h: ScopedJoinHandle<'_, StageResult>) -> StageResult {
    h.join().unwrap_or(Err(PipelineError::Panicked))
}

/// The copy queues (upload, download) of a lane with an offload.
type Queues = (Box<dyn CopyQueue>, Box<dyn CopyQueue>);

fn run_stages(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    backends: &mut [&mut dyn Backend],
    plan: &Plan,
    opts: Options<'_>,
    (offloads, at): (Vec<Option<Arc<dyn Offload>>>, Leg<'_>),
) -> Result<(RunStats, bool), PipelineError> {
    let n = opts.inflight.max(1);
    let start = Instant::now();
    let passthrough = opts.passthrough;
    let check = opts.check.filter(|_| !passthrough);
    let progress = opts.progress;
    let before = at.written_before;
    let shifted = move |written: usize| {
        if let Some(p) = progress {
            p(before + written);
        }
    };
    let checked = check.is_some();
    // Host memory per frame size, in frames: every lane's input and output pools and what its
    // backend allocates while it filters, --check's reference frames.
    let host_frames = backends
        .iter()
        .map(|b| 2 * n + usize::from(checked) + b.host_scratch(plan))
        .sum::<usize>()
        + check.as_ref().map_or(0, |c| c.host_scratch(plan));

    // Queues are made here so a failure to create one stops the run before any frame moves.
    let mut queues: Vec<Option<Queues>> = Vec::new();
    for off in &offloads {
        let q = match off.as_deref().map(|off| (off.queue(), off.queue())) {
            Some((Ok(up), Ok(down))) => Some((up, down)),
            Some((Err(e), _) | (_, Err(e))) => return Err(PipelineError::Setup(e.into())),
            None => None,
        };
        queues.push(q);
    }
    let mut totals = ReadTotals::default();
    let reference = check.map(Mutex::new);

    let (failing, failed) = unbounded();
    let (results, written) = std::thread::scope(|scope| {
        let (tx_out, rx_out) = bounded::<Job<Frame>>(n * offloads.len());
        let mut handles = Spawner {
            scope,
            handles: Vec::new(),
            failed: None,
            failing,
        };
        let mut feeds = Vec::new();
        let mut rets = Vec::new();
        let lanes = backends.iter_mut().zip(&offloads).zip(queues);
        for (lane, ((backend, off), queues)) in lanes.enumerate() {
            let (tx_read, rx_read) = bounded::<Job<Payload>>(n);
            let tx_out = tx_out.clone();
            // Pools: host input (read ← upload/filter, or ← download with --check on a
            // device), device input (upload ← filter), device output (filter ← download), host
            // output (filter/download ← write).
            let (in_pool, in_ret) = Pool::<Frame>::new(n);
            let (out_pool, out_ret) = Pool::<Frame>::new(n);
            let off = off.as_deref();
            feeds.push(Feed {
                slots: HostSlots::new(in_pool, off, checked, host_frames),
                tx: tx_read,
            });
            let checker = reference.as_ref().map(Checker::new);
            let backend = &mut **backend;
            let at = Some(lane);
            match (off, queues) {
                (Some(off), Some((up_q, down_q))) => {
                    let (dev_in_pool, dev_in_ret) = Pool::<DeviceFrame>::new(n);
                    let (dev_out_pool, dev_out_ret) = Pool::<DeviceFrame>::new(n);
                    let (tx_dev, rx_dev) = bounded::<Job<DeviceFrame>>(n);
                    let (tx_done, rx_done) = bounded::<Job<DeviceFrame>>(n);
                    // With --check the host input goes back after the comparison in download,
                    // which alone holds the way back.
                    let (check, up_ret) = match checker {
                        Some(c) => (Some((c, in_ret)), None),
                        None => (None, Some(in_ret)),
                    };
                    let up = Stage::new("upload", dev_in_pool);
                    handles.push("upload", at, move || {
                        upload_stage(rx_read, tx_dev, up, off, up_q, up_ret)
                    });
                    let filter = Stage::new("filter", dev_out_pool);
                    handles.push("filter", at, move || {
                        filter_device_stage(rx_dev, tx_done, filter, off, backend, plan, dev_in_ret)
                    });
                    let down = Stage::new("download", out_pool);
                    handles.push("download", at, move || {
                        download_stage(rx_done, tx_out, down, off, down_q, dev_out_ret, check, plan)
                    });
                    rets.push(out_ret);
                }
                _ if passthrough => {
                    handles.push("filter", at, move || passthrough_stage(rx_read, tx_out));
                    rets.push(in_ret);
                }
                _ => {
                    let filter = Stage::new("filter", out_pool);
                    handles.push("filter", at, move || {
                        filter_host_stage(rx_read, tx_out, filter, backend, plan, checker, in_ret)
                    });
                    rets.push(out_ret);
                }
            }
        }
        // Only the lanes' stages hold the write stage's channel now: it ends when they do.
        drop(tx_out);
        let ends = (opts.stop, at.ready, opts.skip_bad);
        let totals = &mut totals;
        handles.push("read", None, move || {
            read_stage(source, feeds, ends, totals)
        });
        let written = match handles.failed.take() {
            // A stage thread did not start: its closure (and the channel ends it held) is gone,
            // so the stages that did start end; nothing is written.
            Some(e) => Written::failed(e),
            None => {
                let to = (rx_out, &failed, &rets[..]);
                write_stage(sink, to, Some(&shifted), 4 * n + 4)
            }
        };
        // Dropping the write stage's receiver (done) unblocks a stage that is still sending,
        // and dropping the return channels one that waits for a buffer.
        drop(rets);
        let results: Vec<(Option<usize>, StageResult)> = handles
            .handles
            .into_iter()
            .map(|(lane, h)| (lane, join(h)))
            .collect();
        (results, written)
    });

    let names: Vec<String> = backends.iter().map(|b| b.name()).collect();
    let overlapped = offloads.iter().any(Option::is_some);
    let outcome = (|| {
        let mut read = None;
        let mut lanes: Vec<LaneStats> = names
            .iter()
            .map(|name| LaneStats {
                backend: name.clone(),
                frames: 0,
                stages: Vec::new(),
                device: None,
                opening: false,
            })
            .collect();
        for (lane, r) in results {
            let st = r?;
            match lane {
                Some(l) => lanes[l].stages.push(st),
                None => read = Some(st),
            }
        }
        let read = read.ok_or(PipelineError::Panicked)?;
        let count = written.count?;
        if count != read.frames {
            return Err(PipelineError::FrameCount {
                read: read.frames,
                written: count,
            });
        }
        for l in &mut lanes {
            l.frames = l.stages.last().map_or(0, |s| s.frames);
            l.device = device_totals(&l.stages, overlapped);
        }
        Ok((read, lanes))
    })();
    let backend_name = match &names[..] {
        [one] => one.clone(),
        [first, ..] if names.iter().all(|n| n == first) => format!("{} × {first}", names.len()),
        _ => names.join(" + "),
    };
    let ended = totals.ended;
    outcome.map(|(read, lanes)| {
        // The lanes' stages of one name, summed.
        let mut stages = vec![read];
        for (k, st) in lanes[0].stages.iter().enumerate() {
            let mut sum = st.clone();
            for l in &lanes[1..] {
                if let Some(other) = l.stages.get(k) {
                    sum.merge(other);
                }
            }
            stages.push(sum);
        }
        stages.push(written.stats);
        let device = lanes
            .iter()
            .filter_map(|l| l.device)
            .reduce(|a, b| DeviceTimes {
                h2d: a.h2d + b.h2d,
                kernel: a.kernel + b.kernel,
                d2h: a.d2h + b.d2h,
            });
        let stats = RunStats {
            backend: backend_name,
            frames: stages[0].frames,
            skipped: totals.skipped,
            skip_messages: totals.skip_messages,
            megapixels: totals.megapixels,
            wall: start.elapsed(),
            stages,
            latency: written.latency,
            checked,
            interrupted: totals.interrupted,
            device,
            overlapped,
            steady: written.steady,
            first_frame: written.first_at.map(|t| t - start),
            lanes,
            held_max: written.held_max,
        };
        (stats, ended)
    })
}

/// A lane's transfer-vs-kernel totals: from the transfer stages when they ran, else from the
/// filter stage's own measurements (None for CPU backends).
fn device_totals(stages: &[StageStats], overlapped: bool) -> Option<DeviceTimes> {
    let get = |name: &str| stages.iter().find(|s| s.name == name);
    if overlapped {
        return Some(DeviceTimes {
            h2d: get("upload")?.device_total(),
            kernel: get("filter")?.device_total(),
            d2h: get("download")?.device_total(),
        });
    }
    get("filter").filter(|s| s.measured).map(|s| s.split)
}
