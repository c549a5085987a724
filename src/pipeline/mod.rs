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
mod pool;
mod stages;
mod stats;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::ScopedJoinHandle;
use std::time::Instant;

use crossbeam_channel::bounded;

use crate::backend::{Backend, BackendError};
use crate::device::{DeviceFrame, DeviceTimes, Offload};
use crate::filter::Plan;
use crate::frame::Frame;
use crate::io::{IoError, Payload, Sink, Source};
use check::Checker;
use pool::{HostSlots, Pool};
use stages::{
    download_stage, filter_device_stage, filter_host_stage, passthrough_stage, read_stage,
    upload_stage, write_stage, Job, ReadTotals, Stage, StageResult, Written,
};
pub use stats::{Percentiles, Report, RunStats, StageReport, StageStats};

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
    let setup = (|| {
        if opts.passthrough {
            return Ok(None);
        }
        backend.check_plan(plan)?;
        backend.offload()
    })();
    match setup {
        Ok(offload) => run_stages(source, sink, backend, plan, opts, offload),
        Err(e) => {
            sink.abort();
            Err(PipelineError::Setup(e))
        }
    }
}

/// Starts stage threads in a scope and keeps their handles. A thread the system cannot start
/// is an error of the run, not a panic.
struct Spawner<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    handles: Vec<ScopedJoinHandle<'scope, StageResult>>,
    failed: Option<PipelineError>,
}

impl<'scope> Spawner<'scope, '_> {
    fn push(&mut self, name: &str, f: impl FnOnce() -> StageResult + Send + 'scope) {
        let started = std::thread::Builder::new()
            .name(format!("convflow-{name}"))
            .spawn_scoped(self.scope, f);
        match started {
            Ok(h) => self.handles.push(h),
            Err(e) => {
                self.failed
                    .get_or_insert(PipelineError::Spawn(format!("the {name} stage: {e}")));
            }
        }
    }
}

/// Joins a stage thread; a panic is an error of the run.
fn join(h: ScopedJoinHandle<'_, StageResult>) -> StageResult {
    h.join().unwrap_or(Err(PipelineError::Panicked))
}

fn run_stages(
    source: &mut dyn Source,
    mut sink: Box<dyn Sink>,
    backend: &mut dyn Backend,
    plan: &Plan,
    opts: Options<'_>,
    offload: Option<Arc<dyn Offload>>,
) -> Result<RunStats, PipelineError> {
    let n = opts.inflight.max(1);
    let start = Instant::now();
    let passthrough = opts.passthrough;
    let check = opts.check.filter(|_| !passthrough);
    let on_complete = opts.on_complete;
    let checked = check.is_some();
    // Host memory per frame size, in frames: the input and output pools, --check's reference
    // frame, and what the backends allocate while they filter.
    let host_frames = 2 * n
        + usize::from(checked)
        + backend.host_scratch(plan)
        + check.as_ref().map_or(0, |c| c.host_scratch(plan));

    // Queues are made here so a failure to create one stops the run before any frame moves.
    let queues = match offload.as_deref() {
        Some(off) => match (off.queue(), off.queue()) {
            (Ok(up), Ok(down)) => Some((up, down)),
            (Err(e), _) | (_, Err(e)) => {
                sink.abort();
                return Err(PipelineError::Setup(e.into()));
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
    let mut totals = ReadTotals::default();

    let (results, written) = std::thread::scope(|scope| {
        let (tx_read, rx_read) = bounded::<Job<Payload>>(n);
        let (tx_out, rx_out) = bounded::<Job<Frame>>(n);
        let off = offload.as_deref();
        let slots = HostSlots::new(in_pool, off, checked, host_frames);
        let stop_skip = (opts.stop, opts.skip_bad);
        let totals = &mut totals;
        let mut handles = Spawner {
            scope,
            handles: Vec::new(),
            failed: None,
        };
        handles.push("read", move || {
            read_stage(source, slots, off, stop_skip, tx_read, totals)
        });
        let checker = check.map(Checker::new);
        let write_ret = match (off, queues) {
            (Some(off), Some((up_q, down_q))) => {
                let (tx_dev, rx_dev) = bounded::<Job<DeviceFrame>>(n);
                let (tx_done, rx_done) = bounded::<Job<DeviceFrame>>(n);
                // With --check the host input goes back after the comparison in download.
                let check = checker.map(|c| (c, in_ret.clone()));
                let up = Stage::new("upload", dev_in_pool);
                handles.push("upload", move || {
                    upload_stage(rx_read, tx_dev, up, off, up_q, in_ret, checked)
                });
                let filter = Stage::new("filter", dev_out_pool);
                let backend = &mut *backend;
                handles.push("filter", move || {
                    filter_device_stage(rx_dev, tx_done, filter, off, backend, plan, dev_in_ret)
                });
                let down = Stage::new("download", out_pool);
                handles.push("download", move || {
                    download_stage(rx_done, tx_out, down, off, down_q, dev_out_ret, check, plan)
                });
                out_ret
            }
            _ if passthrough => {
                handles.push("filter", move || passthrough_stage(rx_read, tx_out));
                in_ret
            }
            _ => {
                let filter = Stage::new("filter", out_pool);
                let backend = &mut *backend;
                handles.push("filter", move || {
                    filter_host_stage(rx_read, tx_out, filter, backend, plan, checker, in_ret)
                });
                out_ret
            }
        };
        let written = match handles.failed.take() {
            // A stage thread did not start: its closure (and the channel ends it held) is gone,
            // so the stages that did start end; nothing is written.
            Some(e) => Written::failed(e),
            None => write_stage(sink.as_mut(), rx_out, write_ret, opts.progress, 4 * n + 4),
        };
        // Dropping the write stage's receiver (done) unblocks a stage that is still sending.
        let results: Vec<StageResult> = handles.handles.into_iter().map(join).collect();
        (results, written)
    });

    let outcome = (|| {
        let mut stages = Vec::new();
        for r in results {
            stages.push(r?);
        }
        let count = written.count?;
        let read = stages[0].frames;
        if count != read {
            return Err(PipelineError::FrameCount {
                read,
                written: count,
            });
        }
        // An output without a frame is no output (a video container with no frame cannot
        // even be read back).
        if read == 0 {
            return Err(PipelineError::NoFrames {
                interrupted: totals.interrupted,
                skipped: totals.skipped,
            });
        }
        Ok(stages)
    })();
    let backend_name = backend.name();
    let stats = outcome.map(|mut stages| {
        stages.push(written.stats);
        let device = device_totals(&stages, offload.is_some());
        RunStats {
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
            overlapped: offload.is_some(),
            steady: written.steady,
            first_frame: written.first_at.map(|t| t - start),
        }
    });
    let prepared = stats.and_then(|stats| match on_complete {
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
