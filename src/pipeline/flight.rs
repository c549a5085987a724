//! Asynchronous device work in a stage: a stage starts a frame's copy or kernels and finishes
//! them apart ([`Runs`]: a copy queue or a device backend), a [`Flight`] holds each frame's
//! buffers until its work is over, and [`async_stage`] is the loop the upload, filter and
//! download stages share — it starts the next frame while the last one's work still runs and
//! hands frames on, in order, as soon as their work is done.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

use super::stages::{backend_err, Job, Stage};
use super::stats::StageStats;
use super::PipelineError;
use crate::backend::{Backend, BackendError};
use crate::device::CopyQueue;

/// What a stage's asynchronous work runs on: a copy queue, or a device backend's stream.
/// Work finishes in the order it was started.
pub(super) trait Runs {
    /// Waits for the oldest work started and not finished; its device time when it was timed.
    /// Failed or not, that work is over.
    fn finish(&mut self) -> Result<Option<Duration>, BackendError>;
    /// How much work may be in flight at once.
    fn depth(&self) -> usize;
    /// The oldest work is over: `finish` would not wait.
    fn done(&mut self) -> bool;
}

/// A copy stage's queue.
pub(super) type Queue = Box<dyn CopyQueue>;

impl Runs for Queue {
    fn finish(&mut self) -> Result<Option<Duration>, BackendError> {
        Ok(CopyQueue::finish(&mut **self)?)
    }
    fn depth(&self) -> usize {
        CopyQueue::depth(&**self)
    }
    fn done(&mut self) -> bool {
        CopyQueue::done(&mut **self)
    }
}

impl Runs for &mut dyn Backend {
    fn finish(&mut self) -> Result<Option<Duration>, BackendError> {
        self.finish_device()
    }
    fn depth(&self) -> usize {
        self.device_depth()
    }
    fn done(&mut self) -> bool {
        self.device_done()
    }
}

/// What a stage has started and not yet handed on, oldest first: each job with the buffers
/// its work (a copy, the kernels) reads and writes. A job stays here until its work has
/// finished, which is what makes starting the work sound ([`CopyQueue`]'s and
/// [`Backend::start_device`]'s contract); a flight dropped early (its stage failed) waits for
/// its work before it lets the buffers go.
pub(super) struct Flight<C, Q: Runs> {
    // Declared first: dropped (a copy queue synchronizes its streams) before the buffers.
    queue: Q,
    jobs: VecDeque<Flown<C>>,
    failed: Vec<Flown<C>>,
}

/// A job in flight, with its frame's index, its bytes and its host time so far (taking a
/// buffer, starting the work).
struct Flown<C> {
    job: C,
    index: usize,
    bytes: usize,
    busy: Duration,
}

impl<C, Q: Runs> Flight<C, Q> {
    fn new(queue: Q) -> Self {
        Flight {
            queue,
            jobs: VecDeque::new(),
            failed: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// No other work may start before the oldest has finished.
    fn full(&self) -> bool {
        self.jobs.len() >= self.queue.depth().max(1)
    }

    /// Starts the work on frame `index` (`bytes`, `busy`: host time already spent on it) with
    /// `start`, which may touch only buffers `job` owns: they stay here until
    /// [`Flight::land`].
    pub fn start(
        &mut self,
        mut job: C,
        (index, bytes, busy): (usize, usize, Duration),
        start: impl FnOnce(&mut Q, &mut C) -> Result<(), BackendError>,
    ) -> Result<(), PipelineError> {
        let t = Instant::now();
        start(&mut self.queue, &mut job).map_err(backend_err(index))?;
        self.jobs.push_back(Flown {
            job,
            index,
            bytes,
            busy: busy + t.elapsed(),
        });
        Ok(())
    }

    /// Waits for the oldest job's work and hands the job out, recording its host time (this
    /// wait included), bytes and device time in `stats`. A failed job is kept until the flight
    /// is dropped: its buffers may be in use until the queue goes.
    fn land(&mut self, stats: &mut StageStats) -> Option<Result<C, PipelineError>> {
        let t = Instant::now();
        let f = self.jobs.pop_front()?;
        match self.queue.finish() {
            Ok(device) => stats.timed(device),
            Err(e) => {
                let index = f.index;
                self.failed.push(f);
                return Some(Err(backend_err(index)(e)));
            }
        }
        stats.add(f.busy + t.elapsed(), f.bytes);
        Some(Ok(f.job))
    }
}

impl<C, Q: Runs> Drop for Flight<C, Q> {
    fn drop(&mut self) {
        for _ in 0..self.jobs.len() {
            // While the stage unwinds from a panic of the queue, the queue may panic again: a
            // second panic escaping a destructor would abort the process before its clean-up
            // (temporary outputs) runs, so it is caught here; the stage's panic goes on.
            let queue = &mut self.queue;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| queue.finish()));
        }
    }
}

/// What a stage's `begin` returns.
pub(super) type Begins<C> = Result<Begun<C>, PipelineError>;

/// What a stage's `begin` did with a job.
pub(super) enum Begun<C> {
    /// Its work is in flight.
    Started,
    /// Nothing to copy: hand it on after the ones in flight.
    Ready(C),
    /// The run is stopping (a pool's returning stage has gone).
    Stop,
}

/// The loop of a stage that works asynchronously (upload, filter, download on a device):
/// `begin` takes each job from `rx` and starts its work in the flight; `hand_on` passes on a
/// job whose work has finished, oldest first (false: the next stage has gone). Work stays in
/// flight only while more input is waiting: the stage never waits for input, nor for a buffer
/// of its pool that only its own work holds, with a finished frame still in hand; it starts a
/// frame that arrives while the last one's work runs at once.
pub(super) fn async_stage<I, O, C, Q: Runs>(
    rx: Receiver<Job<I>>,
    stage: &mut Stage<O>,
    queue: Q,
    mut begin: impl FnMut(&mut Stage<O>, &mut Flight<C, Q>, Job<I>) -> Begins<C>,
    mut hand_on: impl FnMut(C) -> Result<bool, PipelineError>,
) -> Result<(), PipelineError> {
    let mut flight = Flight::new(queue);
    let mut land = |flight: &mut Flight<C, Q>, stage: &mut Stage<O>, job: Option<C>| match job
        .map(Ok)
        .or_else(|| flight.land(&mut stage.stats))
    {
        Some(job) => hand_on(job?),
        None => Ok(true),
    };
    loop {
        let job = if flight.is_empty() {
            match rx.recv() {
                Ok(job) => job,
                Err(_) => break,
            }
        } else {
            // Work in flight: start the next frame the moment it arrives, and hand on the
            // oldest the moment it is done (the driver's own wait would spin the same way).
            match rx.try_recv() {
                Ok(job) => job,
                Err(TryRecvError::Empty) => {
                    if !flight.queue.done() {
                        std::thread::yield_now();
                    } else if !land(&mut flight, stage, None)? {
                        return Ok(());
                    }
                    continue;
                }
                Err(TryRecvError::Disconnected) => break,
            }
        };
        while !flight.is_empty() && (flight.full() || !stage.has_free()) {
            if !land(&mut flight, stage, None)? {
                return Ok(());
            }
        }
        match begin(stage, &mut flight, job)? {
            Begun::Started => {}
            Begun::Ready(job) => {
                while !flight.is_empty() {
                    if !land(&mut flight, stage, None)? {
                        return Ok(());
                    }
                }
                stage.stats.add(Duration::ZERO, 0);
                if !land(&mut flight, stage, Some(job))? {
                    return Ok(());
                }
            }
            Begun::Stop => return Ok(()),
        }
    }
    while !flight.is_empty() {
        if !land(&mut flight, stage, None)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue whose every `finish` panics.
    struct Panicking;

    impl Runs for Panicking {
        fn finish(&mut self) -> Result<Option<Duration>, BackendError> {
            panic!("planned queue panic");
        }
        fn depth(&self) -> usize {
            4
        }
        fn done(&mut self) -> bool {
            true
        }
    }

    #[test]
    fn a_queue_panicking_again_while_its_flight_unwinds_does_not_abort() {
        let unwound = std::panic::catch_unwind(|| {
            let mut flight = Flight::new(Panicking);
            for i in 0..3 {
                flight
                    .start(i, (i, 0, Duration::ZERO), |_, _| Ok(()))
                    .unwrap();
            }
            // Panics; the flight's drop then finishes the two jobs left, panicking again.
            flight.land(&mut StageStats::new("filter"));
        });
        assert!(unwound.is_err(), "the first panic reaches the caller");
    }
}
